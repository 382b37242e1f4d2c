"""Reproduce the digit experiment of Dubout & Fleuret (JMLR 2014, Table 1) with vjboost's samplers.

AdaBoost.MH with stumps on MNIST (a subsample; scikit-learn's 8x8 digits when ../shared is absent)
over a pool made of every gray feature family of vjboost (large families subsampled), with a
budget of ``10 N`` feature evaluations per round. For every strategy: log10 training loss and test
error after T rounds (mean over seeds), the wall time, and the wall time needed to reach the
training loss Full reaches after 100 rounds. Writes a markdown table and two plots to docs/ and
ends with one line ``RESULT {json}``.

    .venv/bin/python tools/reproduce_sampling.py            # the documented run
    .venv/bin/python tools/reproduce_sampling.py --quick    # under a minute
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.boost.binning import precompute  # noqa: E402
from vjboost.boost.sampling import (  # noqa: E402
    SAMPLERS,
    MatrixSource,
    Partition,
    SampledBoostedClassifier,
    make_sampler,
)

ADAPTIVE = ["tasting_1q", "tasting_q1", "mas_naive", "mas_1q", "mas_q1", "laminating",
            "tasting_laminating"]
BASELINES = ["uniform_naive", "uniform_1q", "uniform_q1", "best_family", "ucb", "ucb3", "exp3p",
             "epsilon_greedy"]
LABELS = {
    "full": "Full", "uniform_naive": "Uniform Naive", "uniform_1q": "Uniform 1.Q",
    "uniform_q1": "Uniform Q.1", "best_family": "Best family", "ucb": "UCB", "ucb3": "UCB(3)",
    "exp3p": "Exp3.P", "epsilon_greedy": "ε-greedy", "tasting_1q": "Tasting 1.Q",
    "tasting_q1": "Tasting Q.1", "mas_naive": "M.A.S. Naive", "mas_1q": "M.A.S. 1.Q",
    "mas_q1": "M.A.S. Q.1", "laminating": "Laminating",
    "tasting_laminating": "Tasting + Laminating",
}


# --------------------------------------------------------------------------------------------
# data and features


def load_digits_data(n_train: int, n_test: int, seed: int, shared: Path):
    """(train windows, train labels, test windows, test labels, description)."""
    mn = shared / "data" / "mnist"
    rng = np.random.default_rng(seed)
    if (mn / "mnist_train.npz").is_file():
        tr, te = np.load(mn / "mnist_train.npz"), np.load(mn / "mnist_test.npz")
        i = np.sort(rng.choice(tr["labels"].size, size=min(n_train, tr["labels"].size),
                               replace=False))
        j = np.sort(rng.choice(te["labels"].size, size=min(n_test, te["labels"].size),
                               replace=False))
        return (tr["images"][i], tr["labels"][i].astype(np.int64), te["images"][j],
                te["labels"][j].astype(np.int64), "MNIST")
    from sklearn.datasets import load_digits

    d = load_digits()
    imgs = (d.images * (255.0 / 16.0)).astype(np.uint8)
    # 8x8 is too small for the window families: upscale to 16x16
    imgs = np.repeat(np.repeat(imgs, 2, axis=1), 2, axis=2)
    order = rng.permutation(imgs.shape[0])
    n_tr = min(n_train, int(0.7 * imgs.shape[0]))
    a, b = order[:n_tr], order[n_tr : n_tr + n_test]
    return imgs[a], d.target[a].astype(np.int64), imgs[b], d.target[b].astype(np.int64), \
        "scikit-learn digits (16x16 upscaled)"


def build_pool(window_shape, max_per_family: int, seed: int):
    """Every registered gray family that builds with default parameters; (pool, selected ids)."""
    from vjboost.features import registered_families
    from vjboost.features.pool import FeaturePool

    fams = []
    for _name, cls in sorted(registered_families().items()):
        try:
            f = cls(window_shape=window_shape)
        except Exception:  # noqa: BLE001 - families needing extra arguments are skipped
            continue
        if getattr(f, "color", False):
            continue
        fams.append(f)
    pool = FeaturePool(fams)
    rng = np.random.default_rng(seed)
    ids = []
    for sl in pool.partition():
        g = np.arange(sl.start, sl.stop)
        if g.size > max_per_family:
            g = np.sort(rng.choice(g, size=max_per_family, replace=False))
        ids.append(g)
    return pool, np.concatenate(ids)


# --------------------------------------------------------------------------------------------
# one run


def run_strategy(name, seed, source, part, y, Xte, yte, n_rounds, budget, checkpoints,
                 **params):
    sampler = make_sampler(name, random_state=seed, **params)
    n_classes = int(y.max()) + 1
    f_test = np.zeros((Xte.shape[1], n_classes))
    test_err = {}

    def callback(t, model):
        f_test[:] += model.estimators_[-1].predict_matrix(Xte)  # (n_test, K) vote-vector stump
        if t + 1 in checkpoints:
            test_err[t + 1] = float(np.mean(np.argmax(f_test, axis=1) != yte))

    model = SampledBoostedClassifier(sampler=sampler, loss="mh", n_estimators=n_rounds,
                                     budget=budget)
    model.fit_source(source, y, callback=callback)
    return {
        "loss": model.train_loss_, "time": model.times_, "cost": np.cumsum(model.cost_),
        "test_err": test_err, "features": [int(e.feature[0]) for e in model.estimators_],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="small run (< 1 minute)")
    ap.add_argument("--n-train", type=int, default=3000)
    ap.add_argument("--n-test", type=int, default=2000)
    ap.add_argument("--max-per-family", type=int, default=600,
                    help="features kept per family (random subset of larger families)")
    ap.add_argument("--rounds", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--strategies", nargs="+", default=list(SAMPLERS))
    ap.add_argument("--shared",
                    default=os.environ.get("VJBOOST_SHARED", str(REPO.parent / "shared")))
    ap.add_argument("--out", default=str(REPO / "docs"), help="folder of the table and plots")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.n_train, args.n_test, args.max_per_family = 1000, 500, 150
        args.rounds, args.seeds = [10, 50], 2
        args.no_plots = True
    checkpoints = sorted(set(args.rounds))
    n_rounds = checkpoints[-1]

    t_start = time.perf_counter()
    Xtr_w, ytr, Xte_w, yte, data_name = load_digits_data(args.n_train, args.n_test, 0,
                                                         Path(args.shared))
    pool, gids = build_pool(Xtr_w.shape[1:], args.max_per_family, 0)
    fam_of, _ = pool.locate(gids)
    names = [f.name for f in pool.families]
    keep = np.unique(fam_of)
    remap = np.full(pool.n_families, -1)
    remap[keep] = np.arange(keep.size)
    part = Partition(remap[fam_of], [names[k] for k in keep])
    t0 = time.perf_counter()
    pre = precompute(pool, Xtr_w, "uint8", feature_ids=gids)
    source = MatrixSource(pre.matrix, edges=pre.edges, families=part)
    Xte = pool.evaluate(Xte_w, gids)  # raw float32 (F, n_test): thresholds are raw values
    t_pre = time.perf_counter() - t0
    n, f = Xtr_w.shape[0], gids.size
    budget = 10 * n
    print(f"data: {data_name}, N={n} train / {Xte_w.shape[0]} test, window {Xtr_w.shape[1:]}; "
          f"pool: {f} features in {part.n_families} families ({part}); precompute {t_pre:.1f}s; "
          f"budget {budget} evaluations/round; T={checkpoints}, {args.seeds} seeds", flush=True)

    results: dict[str, list[dict]] = {}
    oracle = None
    # Full first: its choices give Best family's a-posteriori family
    order = sorted(args.strategies, key=lambda s: s != "full")
    for name in order:
        seeds = [0] if name == "full" else list(range(args.seeds))  # Full has no randomness
        params = {}
        if name == "best_family" and oracle is not None:
            params["family"] = oracle
        runs = []
        for s in seeds:
            t = time.perf_counter()
            runs.append(run_strategy(name, s, source, part, ytr, Xte, yte, n_rounds, budget,
                                     checkpoints, **params))
            print(f"  {name:20s} seed {s}: log10 loss {np.log10(runs[-1]['loss'][-1]):+.3f}, "
                  f"test err {runs[-1]['test_err'][n_rounds]:.3f}, {time.perf_counter() - t:.1f}s",
                  flush=True)
        results[name] = runs
        if name == "full":
            first = np.asarray(runs[0]["features"][:100])
            oracle = int(np.argmax(np.bincount(part.family_of[first],
                                               minlength=part.n_families)))
            print(f"  best family a posteriori (most used by Full in its first 100 rounds): "
                  f"{part.names[oracle]}", flush=True)

    # ---- summary ------------------------------------------------------------------------
    summary = {}
    for name, runs in results.items():
        row = {}
        for T in checkpoints:
            row[T] = {
                "log10_loss": float(np.mean([np.log10(r["loss"][T - 1]) for r in runs])),
                "test_error": float(np.mean([r["test_err"][T] for r in runs])),
                "time_s": float(np.mean([r["time"][T - 1] for r in runs])),
                "cost": float(np.mean([r["cost"][T - 1] for r in runs])),
            }
        summary[name] = row
    target_T = 100 if 100 in checkpoints else checkpoints[-1]
    time_to_full = {}
    if "full" in results:
        target = float(results["full"][0]["loss"][target_T - 1])
        for name, runs in results.items():
            ts = []
            for r in runs:
                hit = np.flatnonzero(r["loss"] <= target)
                ts.append(float(r["time"][hit[0]]) if hit.size else float("nan"))
            time_to_full[name] = float(np.mean(ts)) if not np.isnan(ts).any() else None

    lines = [
        "| Strategy | " + " | ".join(f"T = {T}" for T in checkpoints) + " |",
        "|---|" + "---|" * len(checkpoints),
    ]
    for name in results:
        cells = [f"{summary[name][T]['log10_loss']:+.3f} "
                 f"({100 * summary[name][T]['test_error']:.1f}%)" for T in checkpoints]
        lines.append(f"| {LABELS.get(name, name)} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    time_lines = [f"| Strategy | wall time to Full's loss at T = {target_T} (s) "
                  f"| time of T = {checkpoints[-1]} rounds (s) |", "|---|---|---|"]
    for name in results:
        tt = time_to_full.get(name)
        reached = "not reached" if tt is None else f"{tt:.2f}"
        time_lines.append(f"| {LABELS.get(name, name)} | {reached}"
                          f" | {summary[name][checkpoints[-1]]['time_s']:.1f} |")
    time_table = "\n".join(time_lines)
    print("\nlog10 training loss (test error), mean over seeds\n" + table)
    print("\n" + time_table)

    findings = {}
    for T in (10, 100):
        if T not in checkpoints:
            continue
        ad = [summary[n][T]["log10_loss"] for n in ADAPTIVE if n in summary]
        bl = [summary[n][T]["log10_loss"] for n in BASELINES if n in summary]
        if ad and bl:
            findings[f"T{T}"] = {
                "best_adaptive": float(min(ad)), "best_baseline": float(min(bl)),
                "mean_adaptive": float(np.mean(ad)), "mean_baseline": float(np.mean(bl)),
                "best_adaptive_beats_best_baseline": bool(min(ad) < min(bl)),
                "mean_adaptive_beats_mean_baseline": bool(np.mean(ad) < np.mean(bl)),
            }
    speedup = None
    if "full" in time_to_full and "laminating" in time_to_full and time_to_full["laminating"]:
        speedup = time_to_full["full"] / time_to_full["laminating"]
    out = Path(args.out)
    if not args.quick:
        out.mkdir(parents=True, exist_ok=True)
        (out / "sampling_table.md").write_text(
            f"Data: {data_name}, N = {n} training / {Xte_w.shape[0]} test examples, "
            f"{f} features in {part.n_families} families, budget {budget} evaluations per round, "
            f"{args.seeds} seeds.\n\nlog10 training loss (test error)\n\n{table}\n\n{time_table}\n"
        )
    if not args.no_plots:
        _plots(results, out)
    res = {
        "data": data_name, "n_train": n, "n_test": int(Xte_w.shape[0]), "n_features": int(f),
        "n_families": part.n_families, "budget": budget, "seeds": args.seeds,
        "best_family": None if oracle is None else part.names[oracle],
        "rounds": checkpoints,
        "summary": {k: {str(T): v for T, v in row.items()} for k, row in summary.items()},
        f"time_to_full_loss_at_T{target_T}": time_to_full,
        "laminating_speedup_to_full_loss": speedup, "findings": findings,
        "wall_s": time.perf_counter() - t_start,
    }
    print("RESULT " + json.dumps(res, separators=(",", ":")))
    return 0


def _plots(results, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {n: ("-" if n in ADAPTIVE else ("--" if n in BASELINES else ":")) for n in results}
    for kind in ("rounds", "time"):
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=90)
        for name, runs in results.items():
            loss = np.mean([np.log10(r["loss"]) for r in runs], axis=0)
            x = (np.arange(1, loss.size + 1) if kind == "rounds"
                 else np.mean([r["time"] for r in runs], axis=0))
            ax.plot(x, loss, styles[name], lw=1.6 if name in ("laminating", "full") else 1.0,
                    label=LABELS.get(name, name))
        ax.set_xscale("log")
        ax.set_xlabel("boosting rounds" if kind == "rounds" else "wall time (s)")
        ax.set_ylabel("log10 training loss")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        fig.savefig(out / f"sampling_loss_{kind}.png")
        plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
