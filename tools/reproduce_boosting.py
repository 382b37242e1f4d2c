"""Reproduce the boosting comparisons of Friedman, Hastie & Tibshirani (2000) with vjboost.

"Additive logistic regression: a statistical view of boosting" (Annals of Statistics 28(2))
compares LogitBoost with Real, Gentle and Discrete AdaBoost. This tool runs, with vjboost's
estimators:

``satimage``
    The Statlog Landsat data (../shared/data/satimage, fixed split 4,435 / 2,000, 6 classes):
    test error after 20, 50, 100, 200 iterations with 2 and 8 terminal nodes, next to the
    paper's table. Multi-class: J-class LogitBoost (``LogitBoostClassifier``), and Real / Gentle /
    Discrete AdaBoost.MH with one learner per class and iteration (``AdaBoostMH(per_class=
    True)``), as the paper compares them; the shared-partition AdaBoost.MH is run as well.
``additive``
    Two classes separated by concentric 10-D spheres: ``x ~ N(0, I_10)``, class 1 iff
    ``sum x_j^2`` exceeds the median of chi-square(10); 1,000 training examples per class,
    10,000 test examples, averaged over replications; stumps and 8-node trees.
``nonadditive``
    ``log(p / (1 - p)) = 10 sum_{j<=6} x_j (1 + sum_{l<=6} (-1)^l x_l)``, ``x ~ N(0, I_10)``;
    2,000 training, 10,000 test examples; stumps and 8-node trees.
``overfit``
    Two isotropic 10-D Gaussians with the same mean and variances 1 and ``s^2`` chosen so that
    the Bayes error is 0.25 (``s^2 = 1.8496``); 2,000 training, 10,000 test examples; stumps,
    with and without weight trimming (``weight_trim_rate = 0.9``, the paper's beta = 0.1;
    trimmed examples take no part in the learner, ``leaf_refit="fitted"``).
``margins``
    Cumulative distributions of the normalised training margins (``margins_``) after several
    numbers of iterations: Satimage LogitBoost and Real AdaBoost (8 terminal nodes), and
    Discrete AdaBoost with stumps on the two-class additive problem.

Trees with "J terminal nodes" are grown best-first (``max_leaves=J``), as in the paper.
Writes PNG plots to ``--out`` (default docs/img) and ends with one line ``RESULT {json}``.
``--quick`` (under a minute) runs every section on a small scale.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from math import factorial
from pathlib import Path
from typing import Any

import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost._io import save_png  # noqa: E402
from vjboost.boost import AdaBoostMH, BoostedClassifier, LogitBoostClassifier  # noqa: E402

#: the paper's Satimage test errors (iterations 20, 50, 100, 200) and CART's
PAPER = {
    2: {"LogitBoost": [.140, .120, .112, .102], "Real": [.148, .126, .117, .119],
        "Gentle": [.148, .129, .119, .119], "Discrete": [.174, .156, .140, .128]},
    8: {"LogitBoost": [.096, .095, .092, .088], "Real": [.105, .102, .092, .091]},
}
PAPER_CART = .148
CHECKPOINTS = (20, 50, 100, 200)
ALGORITHMS = ("LogitBoost", "Real", "Gentle", "Discrete")
LOSS = {"LogitBoost": "logit", "Real": "real", "Gentle": "gentle", "Discrete": "discrete"}
#: Bayes error of the overfitting example (``gaussian_variance`` finds the second variance)
OVERFIT_BAYES = 0.25
SECTION_SEED = {"additive": 1, "nonadditive": 2, "overfit": 3}


# ------------------------------------------------------------------------------------- data
def load_satimage(shared: Path) -> tuple[np.ndarray, ...]:
    folder = shared / "data" / "satimage"
    if not (folder / "sat.trn").exists():
        raise SystemExit(f"satimage: {folder} not found (set --shared)")
    tr, te = np.loadtxt(folder / "sat.trn"), np.loadtxt(folder / "sat.tst")
    return tr[:, :36], tr[:, 36].astype(int), te[:, :36], te[:, 36].astype(int)


def chi2_sf_10(x: np.ndarray) -> np.ndarray:
    """P(chi-square with 10 degrees of freedom > x) (closed form for even degrees)."""
    h = np.asarray(x, dtype=np.float64) / 2
    return np.exp(-h) * sum(h**i / factorial(i) for i in range(5))


def gaussian_variance(bayes: float) -> float:
    """``s^2`` such that N(0, I_10) vs N(0, s^2 I_10) (equal priors) has that Bayes error."""
    def err(s2: float) -> float:
        t = 10 * np.log(s2) / (1 - 1 / s2)  # the Bayes boundary on the squared radius
        return float(0.5 * (chi2_sf_10(t) + 1 - chi2_sf_10(t / s2)))

    lo, hi = 1.0 + 1e-9, 50.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if err(mid) > bayes else (lo, mid)
    return 0.5 * (lo + hi)


def simulate(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """``(X, y, Bayes error of the sample's model)`` of one simulated problem."""
    if kind == "additive":
        X = rng.standard_normal((n, 10))
        y = (np.sum(X**2, axis=1) > 9.341818).astype(int)  # median of chi-square(10)
        return X, y, 0.0
    if kind == "nonadditive":
        X = rng.standard_normal((n, 10))
        sign = np.array([(-1) ** l for l in range(1, 7)])
        logodds = 10 * X[:, :6].sum(axis=1) * (1 + X[:, :6] @ sign)
        p = 1 / (1 + np.exp(-np.clip(logodds, -500, 500)))
        y = (rng.random(n) < p).astype(int)
        return X, y, float(np.mean(np.minimum(p, 1 - p)))
    if kind == "overfit":
        s2 = gaussian_variance(OVERFIT_BAYES)
        y = (rng.random(n) < 0.5).astype(int)
        X = rng.standard_normal((n, 10)) * np.where(y == 1, np.sqrt(s2), 1.0)[:, None]
        return X, y, OVERFIT_BAYES
    raise ValueError(kind)


# ---------------------------------------------------------------------------------- models
def multiclass_model(name: str, leaves: int, rounds: int, per_class: bool = True,
                     trim: float = 1.0) -> Any:
    tree = {"weak_learner": "stump"} if leaves == 2 else {"weak_learner": "tree",
                                                           "max_leaves": leaves}
    if name == "LogitBoost":
        return LogitBoostClassifier(n_estimators=rounds, weight_trim_rate=trim, **tree)
    return AdaBoostMH(loss=LOSS[name], per_class=per_class, n_estimators=rounds,
                      weight_trim_rate=trim, **tree)


def binary_model(name: str, leaves: int, rounds: int, trim: float = 1.0) -> Any:
    tree = {"weak_learner": "stump"} if leaves == 2 else {"weak_learner": "tree",
                                                           "max_leaves": leaves}
    # continuous features: the exact split search (every threshold), as CART; trimmed
    # examples take no part in the learner, leaves included (the paper's weight trimming)
    return BoostedClassifier(loss=LOSS[name], n_estimators=rounds, weight_trim_rate=trim,
                             leaf_refit="fitted", binning=False, **tree)


def test_errors(model: Any, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Test error after every iteration (padded with the last value if training stopped)."""
    err = np.array([1.0 - s for s in model.staged_score(X, y)])
    return np.pad(err, (0, model.n_estimators - err.size), mode="edge")


# -------------------------------------------------------------------------------- sections
def run_satimage(args, rounds: int, log) -> dict:
    Xtr, ytr, Xte, yte = load_satimage(Path(args.shared))
    out: dict[str, Any] = {"curves": {}, "table": {}, "seconds": {}, "shared_partition": {}}
    for leaves in (2, 8):
        for name in ALGORITHMS:
            t0 = time.perf_counter()
            err = test_errors(multiclass_model(name, leaves, rounds).fit(Xtr, ytr), Xte, yte)
            key = f"{name}/{leaves}"
            out["curves"][key] = err.tolist()
            out["table"][key] = {str(c): float(err[c - 1]) for c in CHECKPOINTS if c <= rounds}
            out["seconds"][key] = time.perf_counter() - t0
            log(f"satimage {key:14s} " + " ".join(f"{err[c - 1]:.3f}" for c in CHECKPOINTS
                                                    if c <= rounds)
                + f"  ({out['seconds'][key]:.1f} s)")
        for name in ("Real", "Gentle"):  # the shared-partition AdaBoost.MH, for comparison
            err = test_errors(multiclass_model(name, leaves, rounds, per_class=False)
                              .fit(Xtr, ytr), Xte, yte)
            out["shared_partition"][f"{name}/{leaves}"] = {
                str(c): float(err[c - 1]) for c in CHECKPOINTS if c <= rounds}
            log(f"satimage {name}/{leaves} shared partition " + " ".join(
                f"{err[c - 1]:.3f}" for c in CHECKPOINTS if c <= rounds))
    return out


def run_simulation(kind: str, args, rounds: int, reps: int, n_test: int, log,
                   configs: list[tuple[str, int, float]]) -> dict:
    n_train = 2000 if not args.quick else 1000
    curves = {f"{name}/{leaves}/{trim}": np.zeros(rounds) for name, leaves, trim in configs}
    bayes = []
    for r in range(reps):
        rng = np.random.default_rng([args.seed, r, SECTION_SEED[kind]])
        Xtr, ytr, _ = simulate(kind, n_train, rng)
        Xte, yte, b = simulate(kind, n_test, rng)
        bayes.append(b)
        for name, leaves, trim in configs:
            model = binary_model(name, leaves, rounds, trim).fit(Xtr, ytr)
            curves[f"{name}/{leaves}/{trim}"] += test_errors(model, Xte, yte) / reps
    res = {"curves": {k: v.tolist() for k, v in curves.items()}, "n_train": n_train,
           "n_test": n_test, "replications": reps, "bayes_error": float(np.mean(bayes))}
    for k, v in curves.items():
        log(f"{kind} {k:20s} error at {rounds // 4}/{rounds // 2}/{rounds} rounds: "
            f"{v[rounds // 4 - 1]:.3f} {v[rounds // 2 - 1]:.3f} {v[-1]:.3f} "
            f"(min {v.min():.3f} at {int(v.argmin()) + 1})")
    return res


def run_margins(args, rounds: int, log) -> dict:
    """Training-margin distributions: Satimage (8 terminal nodes) and the two-class additive
    problem (Discrete AdaBoost with stumps, Schapire et al.'s setting)."""
    Xtr, ytr, _, _ = load_satimage(Path(args.shared))
    stops = sorted({max(1, rounds // 40), max(2, rounds // 4), rounds})
    out = {}
    for name in ("LogitBoost", "Real"):
        m = multiclass_model(name, 8, rounds).fit(Xtr, ytr)
        out[name] = {str(t): np.sort(m.margins_(Xtr, ytr, n_rounds=t)).tolist() for t in stops}
    Xa, ya, _ = simulate("additive", 2000 if not args.quick else 1000,
                         np.random.default_rng([args.seed, 0, SECTION_SEED["additive"]]))
    two = sorted({max(1, rounds // 20), rounds, 4 * rounds})
    m = binary_model("Discrete", 2, two[-1]).fit(Xa, ya)
    out["Discrete (additive, 2 classes)"] = {
        str(t): np.sort(m.margins_(Xa, ya, n_rounds=t)).tolist() for t in two}
    for name, by in out.items():
        log(f"margins {name}: " + ", ".join(
            f"{t} it.: min {min(v):+.3f}, median {np.median(v):+.3f}, "
            f"{np.mean(np.asarray(v) <= 0):.1%} <= 0" for t, v in by.items()))
    return {"margins": out}


# ----------------------------------------------------------------------------------- plots
def plot_all(res: dict, out: Path) -> list[str]:
    """The PNG plots of the sections present in ``res``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    colors = {"LogitBoost": "C2", "Real": "C3", "Gentle": "C0", "Discrete": "k"}

    if "satimage" in res:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), dpi=90, sharey=True)
        for ax, leaves in zip(axes, (2, 8), strict=True):
            for name in ALGORITHMS:
                err = res["satimage"]["curves"][f"{name}/{leaves}"]
                ax.plot(np.arange(1, len(err) + 1), err, color=colors[name], label=name)
                if name in PAPER.get(leaves, {}):
                    ax.plot(CHECKPOINTS, PAPER[leaves][name], "o", mfc="none",
                            color=colors[name])
            ax.axhline(PAPER_CART, ls=":", color="grey", lw=1)
            ax.set_title(f"Satimage, {leaves} terminal nodes (circles: paper)")
            ax.set_xlabel("iterations")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("test error")
        axes[0].set_ylim(0.07, 0.2)
        axes[0].legend(fontsize=8)
        written.append(_save(fig, out / "boosting_satimage.png"))

    for kind, title in (("additive", "Additive: nested spheres"),
                        ("nonadditive", "Non-additive log-odds"),
                        ("overfit", "Two Gaussians, Bayes error 0.25")):
        if kind not in res:
            continue
        sim = res[kind]
        fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=90)
        for key, err in sim["curves"].items():
            name, leaves, trim = key.split("/")
            style = "-" if leaves == "2" else "--"
            if kind == "overfit":
                style = "-" if float(trim) >= 1 else ":"
            label = f"{name}, {leaves} nodes" + ("" if float(trim) >= 1 else ", trimmed 0.9")
            ax.plot(np.arange(1, len(err) + 1), err, style, color=colors[name], label=label)
        ax.axhline(sim["bayes_error"], color="grey", lw=1, ls=":")
        ax.set_title(f"{title} ({sim['replications']} replication(s))")
        ax.set_xlabel("iterations")
        ax.set_ylabel("test error")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        written.append(_save(fig, out / f"boosting_{kind}.png"))

    if "margins" in res:
        panels = res["margins"]["margins"]
        fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), dpi=90,
                                 sharey=True)
        for ax, (name, by) in zip(axes, panels.items(), strict=True):
            for t, m in by.items():
                m = np.asarray(m)
                ax.plot(m, np.arange(1, m.size + 1) / m.size, label=f"{t} iterations")
            ax.axvline(0, color="grey", lw=1)
            where = name if "additive" in name else f"Satimage, {name}, 8 nodes"
            ax.set_title(where, fontsize=10)
            ax.set_xlabel("normalised training margin")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        axes[0].set_ylabel("cumulative distribution")
        written.append(_save(fig, out / "boosting_margins.png"))
    return written


def _save(fig: Any, path: Path) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
    return str(path)


# ------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=description(__doc__))
    p.add_argument("--quick", action="store_true", help="every section on a small scale")
    p.add_argument("--shared", default=os.environ.get("VJBOOST_SHARED",
                                                      str(REPO.parent / "shared")))
    p.add_argument("--out", default=str(REPO / "docs" / "img"), help="folder of the PNG plots")
    p.add_argument("--replications", type=int, default=None,
                   help="simulated training/test sets averaged (default 10, quick 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sections", default="satimage,additive,nonadditive,overfit,margins")
    args = p.parse_args(argv)
    t_start = time.perf_counter()
    reps = args.replications or (1 if args.quick else 10)
    n_test = 2000 if args.quick else 10000
    sections = set(args.sections.split(","))

    def log(msg: str) -> None:
        print(msg, flush=True)

    res: dict[str, Any] = {"quick": bool(args.quick)}
    if "satimage" in sections:
        res["satimage"] = run_satimage(args, 50 if args.quick else 200, log)
    algos = list(ALGORITHMS)
    sim_rounds = 60 if args.quick else 400
    if "additive" in sections:
        cfg = [(a, leaves, 1.0) for leaves in (2, 8) for a in algos]
        res["additive"] = run_simulation("additive", args, sim_rounds, reps, n_test, log, cfg)
    if "nonadditive" in sections:
        cfg = [(a, leaves, 1.0) for leaves in (2, 8) for a in algos]
        res["nonadditive"] = run_simulation("nonadditive", args, sim_rounds, reps, n_test, log,
                                            cfg)
    if "overfit" in sections:
        cfg = [(a, 2, trim) for trim in (1.0, 0.9) for a in ("LogitBoost", "Real", "Gentle")]
        res["overfit"] = run_simulation("overfit", args, 80 if args.quick else 800, reps,
                                        n_test, log, cfg)
        res["overfit"]["variance"] = gaussian_variance(OVERFIT_BAYES)
    if "margins" in sections:
        res["margins"] = run_margins(args, 40 if args.quick else 200, log)
    res["plots"] = plot_all(res, Path(args.out))
    res["seconds"] = time.perf_counter() - t_start
    summary = {
        "quick": res["quick"], "seconds": round(res["seconds"], 1),
        "satimage": res.get("satimage", {}).get("table"),
        "satimage_shared_partition": res.get("satimage", {}).get("shared_partition"),
        "paper": {str(k): v for k, v in PAPER.items()},
    }
    for kind in ("additive", "nonadditive", "overfit"):
        if kind in res:
            summary[kind] = {
                "bayes_error": round(res[kind]["bayes_error"], 4),
                "replications": res[kind]["replications"],
                "final": {k: round(v[-1], 4) for k, v in res[kind]["curves"].items()},
                "best": {k: round(min(v), 4) for k, v in res[kind]["curves"].items()},
            }
    print("RESULT " + json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
