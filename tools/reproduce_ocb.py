"""Reproduce the experiments of "Online Coordinate Boosting" (Pelossof, Jones, Vovsha & Rudin).

1. Synthetic: 20 fixed weak hypotheses, three margin matrices of 10,000 × 20 (a drift every
   10,000 examples), several repetitions. After each block of examples, the normalised
   approximation error ``½‖α_ada/‖α_ada‖₁ − α/‖α‖₁‖₁`` to batch AdaBoost on the same prefix, for
   OCB of orders K ∈ {1, 5, 20} and for Oza–Russell's update. Hypotheses err together through a
   shared per-example difficulty (independent hypotheses make every method exact-ish), and each
   matrix draws new accuracies in [0.55, 0.75]. OCB starts from batch AdaBoost on the first 100
   examples, as in the paper.
2. Digits, one-vs-all: weak hypotheses (Discrete AdaBoost stumps on pixels) chosen by a batch run
   on an initial set; their coefficients are then learnt online over the rest of the training
   stream by OCB and Oza; test error per class against batch AdaBoost's coefficients on the
   whole training set (same hypotheses).

Writes ``docs/img/ocb_synthetic.png`` and prints markdown tables; the last line is
``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.boost import BoostedClassifier  # noqa: E402
from vjboost.boost.online import (  # noqa: E402
    OnlineCoordinateBoost,
    OzaBoostWeights,
    alpha_approximation_error,
    batch_coordinate_alpha,
    margins_from_hypotheses,
)


def synthetic_stream(rng: np.random.Generator, n_per: int, J: int, n_drifts: int) -> np.ndarray:
    blocks = []
    for _ in range(n_drifts):
        p = rng.uniform(0.55, 0.75, J)
        latent = rng.random((n_per, 1))
        blocks.append(np.where(0.5 * latent + 0.5 * rng.random((n_per, J)) < p, 1, -1))
    return np.concatenate(blocks).astype(np.int8)


def run_synthetic(n_per: int, n_rep: int, block: int, seed: int) -> dict:
    J, n_init = 20, 100
    methods = {"OCB K=1": 1, "OCB K=5": 5, "OCB K=20": 20, "Oza": None}
    checkpoints = np.arange(block, 3 * n_per + 1, block)
    errs = {m: np.zeros((n_rep, len(checkpoints))) for m in methods}
    times = dict.fromkeys(methods, 0.0)
    for rep in range(n_rep):
        M = synthetic_stream(np.random.default_rng(seed + rep), n_per, J, 3)
        learners = {}
        for name, k in methods.items():
            if k is None:
                learners[name] = OzaBoostWeights(n_hypotheses=J)
                learners[name].learn_margins(M[:n_init])
            else:
                learners[name] = OnlineCoordinateBoost(n_hypotheses=J, order=k).init_from_margins(
                    M[:n_init]
                )
        start = n_init
        for c, stop in enumerate(checkpoints):
            target = batch_coordinate_alpha(M[:stop], 0.5)
            for name, learner in learners.items():
                t0 = time.perf_counter()
                learner.learn_margins(M[start:stop])
                times[name] += time.perf_counter() - t0
                errs[name][rep, c] = alpha_approximation_error(target, learner.alpha_)
            start = stop
    return {"checkpoints": checkpoints, "errors": errs, "times": times}


def load_digits_task(quick: bool):
    mnist = REPO.parent / "shared" / "data" / "mnist"
    if (mnist / "mnist_train.npz").exists():
        tr, te = np.load(mnist / "mnist_train.npz"), np.load(mnist / "mnist_test.npz")
        n_tr, n_te = (6000, 2000) if quick else (30000, 10000)
        Xtr = tr["images"][:n_tr].reshape(n_tr, -1).astype(np.float32)
        Xte = te["images"][:n_te].reshape(n_te, -1).astype(np.float32)
        return Xtr, tr["labels"][:n_tr], Xte, te["labels"][:n_te], "MNIST"
    from sklearn.datasets import load_digits

    d = load_digits()
    X, y = d.data.astype(np.float32), d.target
    return X[:1200], y[:1200], X[1200:], y[1200:], "sklearn digits"


def run_digits(quick: bool, seed: int) -> tuple[list[dict], str]:
    Xtr, ytr, Xte, yte, name = load_digits_task(quick)
    n_init = len(Xtr) // 10
    T = 30 if quick else 60
    rows = []
    for c in range(10):
        yb_tr = np.where(ytr == c, 1, -1)
        yb_te = np.where(yte == c, 1, -1)
        clf = BoostedClassifier(loss="discrete", n_estimators=T, binning=True, random_state=seed)
        clf.fit(Xtr[:n_init], yb_tr[:n_init])
        hyps = clf.estimators_
        M = margins_from_hypotheses(hyps, Xtr, yb_tr)
        votes_te = margins_from_hypotheses(hyps, Xte, np.ones(len(Xte))).astype(np.float64)
        ada = batch_coordinate_alpha(M, 0.5)
        ocb = OnlineCoordinateBoost(hyps, order=None).init_from_margins(M[:n_init])
        ocb.learn_margins(M[n_init:])
        oza = OzaBoostWeights(hyps)
        oza.learn_margins(M)

        def err(alpha, votes=votes_te, yb=yb_te):
            return float(np.mean(np.where(votes @ alpha >= 0, 1, -1) != yb))

        rows.append(
            {
                "class": c,
                "adaboost": err(ada),
                "ocb": err(ocb.alpha_),
                "oza": err(oza.alpha_),
                "ocb_alpha_error": alpha_approximation_error(ada, ocb.alpha_),
                "oza_alpha_error": alpha_approximation_error(ada, oza.alpha_),
            }
        )
    return rows, f"{name}: {len(Xtr)} train ({n_init} initial), {len(Xte)} test, T = {T} stumps"


def plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=100)
    for name, e in res["errors"].items():
        ax.plot(res["checkpoints"], e.mean(0), label=name)
    for x in (10000, 20000):
        ax.axvline(x, color="grey", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_xlabel("examples seen")
    ax.set_ylabel("normalised error to batch AdaBoost")
    ax.set_title("Online Coordinate Boosting vs Oza (synthetic, drift every 10k)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="small run (< 1 minute)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()
    n_per, n_rep = (3000, 2) if args.quick else (10000, 5)
    t0 = time.perf_counter()
    res = run_synthetic(n_per, n_rep, block=500, seed=args.seed)
    print(f"## Synthetic: 20 hypotheses, 3 x {n_per} examples, {n_rep} repetitions\n")
    cps = res["checkpoints"]
    cols = [i for i, c in enumerate(cps) if c in (n_per, 2 * n_per, 3 * n_per) or i == 0]
    print("| method | " + " | ".join(f"after {cps[i]:,}" for i in cols) + " | mean over stream |")
    print("|---" * (len(cols) + 2) + "|")
    summary = {}
    for name, e in res["errors"].items():
        m = e.mean(0)
        summary[name] = float(m.mean())
        cells = " | ".join(f"{m[i]:.4f}" for i in cols)
        print(f"| {name} | {cells} | {m.mean():.4f} |")
    if not args.no_plot:
        out = REPO / "docs" / "img" / "ocb_synthetic.png"
        plot(res, out)
        print(f"\nplot: {out.relative_to(REPO)}")
    rows, desc = run_digits(args.quick, args.seed)
    print(f"\n## One-vs-all digits ({desc}): test error per class\n")
    print("| class | AdaBoost | OCB | Oza | OCB α error | Oza α error |\n|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['class']} | {r['adaboost']:.4f} | {r['ocb']:.4f} | {r['oza']:.4f} | "
            f"{r['ocb_alpha_error']:.4f} | {r['oza_alpha_error']:.4f} |"
        )
    mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k != "class"}
    print(
        f"| mean | {mean['adaboost']:.4f} | {mean['ocb']:.4f} | {mean['oza']:.4f} | "
        f"{mean['ocb_alpha_error']:.4f} | {mean['oza_alpha_error']:.4f} |"
    )
    result = {
        "synthetic_mean_error": summary,
        "ocb20_over_oza": summary["OCB K=20"] / summary["Oza"],
        "digits_test_error": {k: mean[k] for k in ("adaboost", "ocb", "oza")},
        "digits_alpha_error": {"ocb": mean["ocb_alpha_error"], "oza": mean["oza_alpha_error"]},
        "quick": args.quick,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
