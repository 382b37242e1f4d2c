"""Reproduce the comparison of "Reservoir Boosting" (Lefakis & Fleuret, NIPS 2013).

Two binary tasks on pixel features (one stump per pixel threshold):

* ``mnist``: MNIST digits, even vs odd (60,000 train / 10,000 test, 28x28); falls back to
  scikit-learn's 8x8 digits when ../shared is absent;
* ``faces``: MIT CBCL faces vs non-faces (6,977 train / 24,044 test, 19x19).

For every reservoir size ``r = q`` and seed, T boosting rounds (LogitBoost stumps) with the
reservoir strategies Max, Rand, WSam and GEEM (the learner sees the training set only through a
shuffled :class:`~vjboost.boost.streams.ArrayStream`), and the full-set sub-sampling baselines
WSS, Mada and Fix (``sample_size = r``). Reports test accuracy mean and std over seeds (and
balanced accuracy: the CBCL test set is 98% non-faces), fit wall time and peak traced memory
(tracemalloc, data loading excluded), as tables in the paper's shape, plus a plot; then a memory
benchmark: peak memory of GEEM (r = q = 100) streaming from a memory-mapped file of N windows
against WSS, which holds the N examples.

Last line: ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.boost.reservoir import ReservoirBooster, SubsampleBooster  # noqa: E402
from vjboost.boost.streams import ArrayStream  # noqa: E402

SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))
METHODS = ("Max", "Rand", "WSam", "GEEM", "WSS", "Mada", "Fix")
_STRATEGY = {"Max": "max", "Rand": "rand", "WSam": "wsam", "GEEM": "geem"}
_BASELINE = {"WSS": "wss", "Mada": "mada", "Fix": "fix"}


def load_task(name: str, n_train: int | None) -> dict:
    """Train/test images (uint8) and labels (1 / 0) of a task."""
    if name == "mnist":
        tr, te = SHARED / "data/mnist/mnist_train.npz", SHARED / "data/mnist/mnist_test.npz"
        if tr.exists():
            a, b = np.load(tr), np.load(te)
            xtr, ytr, xte, yte = a["images"], a["labels"], b["images"], b["labels"]
            src = "MNIST (even vs odd)"
        else:
            from sklearn.datasets import load_digits

            d = load_digits()
            x = (d.images * 16).clip(0, 255).astype(np.uint8)
            xtr, ytr, xte, yte = x[:1200], d.target[:1200], x[1200:], d.target[1200:]
            src = "scikit-learn digits (even vs odd)"
        ytr, yte = (ytr % 2 == 0).astype(np.int64), (yte % 2 == 0).astype(np.int64)
    elif name == "faces":
        a = np.load(SHARED / "data/faces/cbcl_train.npz")
        b = np.load(SHARED / "data/faces/cbcl_test.npz")
        xtr, ytr, xte, yte = a["images"], a["labels"], b["images"], b["labels"]
        src = "MIT CBCL faces vs non-faces"
    else:
        raise ValueError(f"unknown task {name!r}")
    if n_train is not None and n_train < len(xtr):
        keep = np.random.default_rng(0).permutation(len(xtr))[:n_train]
        xtr, ytr = xtr[keep], ytr[keep]
    return {"name": name, "source": src, "xtr": xtr, "ytr": ytr, "xte": xte, "yte": yte}


def run_one(task: dict, method: str, r: int, T: int, seed: int, args) -> dict:
    tracemalloc.start()
    t0 = time.perf_counter()
    if method in _STRATEGY:
        model = ReservoirBooster(
            T, reservoir_size=r, n_fresh=r, strategy=_STRATEGY[method],
            cov_features=args.cov_features, random_state=seed, threads=args.threads,
        )
        model.fit(ArrayStream(task["xtr"], task["ytr"], seed=seed))
        fit_time = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        scores = model.decision_function(task["xte"])
    else:
        xtr = task["xtr"].reshape(len(task["xtr"]), -1)
        model = SubsampleBooster(_BASELINE[method], n_estimators=T, sample_size=r,
                                 random_state=seed, threads=args.threads)
        model.fit(xtr, task["ytr"])
        fit_time = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        scores = model.decision_function(task["xte"].reshape(len(task["xte"]), -1))
    pred = scores >= 0
    y = task["yte"] > 0
    acc = float(np.mean(pred == y))
    bacc = float(0.5 * (np.mean(pred[y]) + np.mean(~pred[~y])))
    return {"acc": acc, "bacc": bacc, "time": fit_time, "peak": peak / 2**20}


def memory_benchmark(sizes, args) -> list[dict]:
    """Peak traced memory against the number of windows behind the stream."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            rng = np.random.default_rng(n)
            path = Path(tmp) / f"win{n}.npy"
            y = (rng.random(n) < 0.5).astype(np.int64)
            mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8, shape=(n, 20, 20))
            for a in range(0, n, 10000):  # written in chunks: the set never sits in memory
                b = min(n, a + 10000)
                blk = rng.integers(0, 200, size=(b - a, 20, 20))
                blk[:, :10] += 50 * y[a:b, None, None]
                mm[a:b] = blk.astype(np.uint8)
            mm.flush()
            del mm
            row = {"n": n}
            tracemalloc.start()
            t0 = time.perf_counter()
            ReservoirBooster(args.mem_rounds, reservoir_size=100, n_fresh=100, strategy="geem",
                             random_state=0, threads=args.threads).fit(
                ArrayStream.from_npy(path, y, seed=0))
            row["geem_time"] = time.perf_counter() - t0
            row["geem_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            tracemalloc.start()
            t0 = time.perf_counter()
            x = np.load(path, mmap_mode="r")
            SubsampleBooster("wss", n_estimators=args.mem_rounds, sample_size=100, random_state=0,
                             threads=args.threads).fit(x.reshape(n, -1), y)
            row["wss_time"] = time.perf_counter() - t0
            row["wss_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            rows.append(row)
            print(f"  N={n:>7}: GEEM peak {row['geem_peak_mib']:.1f} MiB "
                  f"({row['geem_time']:.1f} s), WSS peak {row['wss_peak_mib']:.1f} MiB "
                  f"({row['wss_time']:.1f} s)", flush=True)
    return rows


def table(results, tasks, rs, key, fmt) -> str:
    lines = []
    for r in rs:
        lines.append(f"\n**r = q = {r}** ({key})\n")
        lines.append("| data set | " + " | ".join(METHODS) + " |")
        lines.append("|---" * (len(METHODS) + 1) + "|")
        for t in tasks:
            cells = []
            for m in METHODS:
                v = np.array([x[key] for x in results[t][r][m]])
                cells.append(fmt(v))
            lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results, tasks, rs, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.0), dpi=80,
                             squeeze=False)
    width = 0.8 / len(rs)
    for ax, t in zip(axes[0], tasks, strict=True):
        for k, r in enumerate(rs):
            key = "acc" if t == "mnist" else "bacc"
            mean = [np.mean([x[key] for x in results[t][r][m]]) for m in METHODS]
            std = [np.std([x[key] for x in results[t][r][m]]) for m in METHODS]
            xs = np.arange(len(METHODS)) + (k - (len(rs) - 1) / 2) * width
            ax.bar(xs, mean, width, yerr=std, label=f"r = q = {r}", capsize=2)
        lo = min(np.mean([x["acc" if t == "mnist" else "bacc"] for x in results[t][r][m]])
                 for r in rs for m in METHODS)
        ax.set_ylim(max(0.0, lo - 0.03), 1.0)
        ax.set_xticks(np.arange(len(METHODS)), METHODS, fontsize=8)
        ax.set_title(f"{t}: test {'accuracy' if t == 'mnist' else 'balanced accuracy'}",
                     fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="T=40, r=q=100, 2 seeds, small sets")
    p.add_argument("--tasks", default="mnist,faces")
    p.add_argument("--rounds", type=int, default=250, help="T, weak learners")
    p.add_argument("--sizes", default="100,250", help="r = q values")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--n-train", type=int, default=None, help="sub-sample the training sets")
    p.add_argument("--cov-features", type=int, default=None,
                   help="GEEM covariance over this many random pixels per round (default all)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--mem-sizes", default="10000,40000,160000")
    p.add_argument("--mem-rounds", type=int, default=30)
    p.add_argument("--plot", default=str(REPO / "docs/img/reservoir.png"))
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.sizes, args.seeds = 40, "100", 2
        args.n_train = args.n_train or 20000
        args.mem_sizes, args.mem_rounds = "5000,20000", 10
    tasks = [t for t in args.tasks.split(",") if t]
    rs = [int(v) for v in args.sizes.split(",")]
    t_start = time.perf_counter()
    results: dict = {}
    sources = {}
    for tname in tasks:
        task = load_task(tname, args.n_train)
        sources[tname] = task["source"]
        print(f"{tname}: {task['source']}, train {task['xtr'].shape}, test {task['xte'].shape}",
              flush=True)
        results[tname] = {}
        for r in rs:
            results[tname][r] = {m: [] for m in METHODS}
            for seed in range(args.seeds):
                for m in METHODS:
                    res = run_one(task, m, r, args.rounds, seed, args)
                    results[tname][r][m].append(res)
                print(f"  r={r} seed={seed}: " + ", ".join(
                    f"{m} {results[tname][r][m][-1]['acc']:.4f}" for m in METHODS), flush=True)
    print(f"\nT = {args.rounds} LogitBoost stumps, {args.seeds} seeds; test accuracy mean ± std")

    def pm(v):
        return f"{100 * v.mean():.2f} ± {100 * v.std():.2f}"

    print(table(results, tasks, rs, "acc", pm))
    print(table(results, tasks, rs, "bacc", pm))
    print(table(results, tasks, rs, "time", lambda v: f"{v.mean():.1f} s"))
    print(table(results, tasks, rs, "peak", lambda v: f"{v.mean():.1f} MiB"))
    plot(results, tasks, rs, Path(args.plot))
    print(f"\nplot: {args.plot}")
    print("\nmemory benchmark (GEEM r = q = 100 streaming a memory-mapped file vs WSS):")
    mem = memory_benchmark([int(v) for v in args.mem_sizes.split(",")], args)
    summary = {
        "quick": args.quick, "rounds": args.rounds, "seeds": args.seeds, "sizes": rs,
        "n_train": args.n_train, "cov_features": args.cov_features, "sources": sources,
        "accuracy": {
            t: {str(r): {m: [round(float(np.mean([x["acc"] for x in results[t][r][m]])), 4),
                             round(float(np.std([x["acc"] for x in results[t][r][m]])), 4)]
                         for m in METHODS} for r in rs} for t in tasks},
        "balanced_accuracy": {
            t: {str(r): {m: round(float(np.mean([x["bacc"] for x in results[t][r][m]])), 4)
                         for m in METHODS} for r in rs} for t in tasks},
        "fit_time_s": {
            t: {str(r): {m: round(float(np.mean([x["time"] for x in results[t][r][m]])), 2)
                         for m in METHODS} for r in rs} for t in tasks},
        "peak_mib": {
            t: {str(r): {m: round(float(np.mean([x["peak"] for x in results[t][r][m]])), 1)
                         for m in METHODS} for r in rs} for t in tasks},
        "memory_vs_n": [{k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()}
                        for row in mem],
        "wall_s": round(time.perf_counter() - t_start, 1),
    }
    print("RESULT " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
