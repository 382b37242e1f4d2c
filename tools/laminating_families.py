"""Which family survives each Laminating step, and are its edges honest?

One cascade stage's data (face windows of ``tools/face_data.py`` against background windows), a
few rounds of Gentle AdaBoost whose stumps a sampler chooses with the trainer's budget
(``max(10 N, 0.01 F N)`` evaluations per round). For each round and each sampler it records

* the family mix of every Laminating step's block (``Q_t`` per family) and the family chosen;
* per step and family, the family's best feature on the step's sample: its in-sample edge (what
  the halving compares) and the edge of the *same fitted split* on a fresh, independent sample
  drawn from the same weights (``max(S_t, --fresh)`` draws) -- the edge it really has.

The edge of a fixed split ``f`` (leaves fitted in-sample) on draws with responses ``r`` is
``sqrt(max(0, 1 - sum (r - f)^2 / sum r^2))``, the regression edge of
:mod:`vjboost.boost.sampling.evaluator` (equal to the evaluator's on the split's own sample).

Usage::

    python tools/laminating_families.py --rounds 8
    python tools/laminating_families.py --negatives runs/e1/negatives-*.npy   # hard negatives
    python tools/laminating_families.py --quick

Ends with one line ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))
os.environ.setdefault("NUMBA_CACHE_DIR", str(REPO / ".numba_cache"))

import face_data as fd  # noqa: E402
from _cli import description  # noqa: E402

from vjboost.boost.sampling.examples import weighted_draws  # noqa: E402
from vjboost.boost.weak import Split, go_left  # noqa: E402
from vjboost.cascade.positives import crop_fraction, resize_to_window  # noqa: E402

WINDOW = (20, 20)
#: the face recipes' ``--pos-crop`` of the 32×32 training windows
POS_CROP = (0.125, 0.125, 0.75, 0.75)


def face_windows(path: Path, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` training face windows at 20×20 (the recipes' crop of the 32×32 windows)."""
    with np.load(path) as z:
        images = z["images"]
    pick = rng.choice(len(images), size=min(n, len(images)), replace=False)
    return np.stack([resize_to_window(crop_fraction(images[i], POS_CROP), WINDOW)
                     for i in np.sort(pick)]).astype(np.uint8)


def background_windows(listing: Path, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` windows cut at random places and sizes (20 to 120 px) from the background images."""
    paths = [p for p in listing.read_text().split() if p]
    per = -(-n // min(len(paths), 200))
    out: list[np.ndarray] = []
    for p in rng.choice(paths, size=min(len(paths), 200), replace=False):
        img = cv2.imread(str(p), cv2.IMREAD_GRAYSCALE)
        if img is None or min(img.shape) < 20:
            continue
        for _ in range(per):
            s = int(rng.integers(20, min(120, *img.shape) + 1))
            y = int(rng.integers(0, img.shape[0] - s + 1))
            x = int(rng.integers(0, img.shape[1] - s + 1))
            out.append(resize_to_window(img[y:y + s, x:x + s], WINDOW))
    return np.stack(out[:n]).astype(np.uint8)


def fixed_split_edge(split: Split, values: np.ndarray, r: np.ndarray) -> float:
    """Regression edge of a split whose leaves are fixed, on draws with responses ``r``."""
    f = np.where(go_left(split, values, False), split.left_value, split.right_value)
    den = float(np.sum(r * r))
    return float(np.sqrt(max(0.0, 1.0 - float(np.sum((r - f) ** 2)) / max(den, 1e-300))))


class Recorder:
    """An evaluator proxy that keeps every block a sampler asks for."""

    def __init__(self, evaluator) -> None:
        self._ev = evaluator
        self.blocks: list = []

    def __getattr__(self, name):
        return getattr(self._ev, name)

    def block(self, feature_ids, sample_ids, **kw):
        b = self._ev.block(feature_ids, sample_ids, **kw)
        self.blocks.append(b)
        return b


def exhaustive_best(evaluator, chunk: int = 4096) -> list[float]:
    """Each family's best edge over all its features on all the examples (weighted)."""
    part = evaluator.partition
    ids = np.arange(evaluator.n_samples, dtype=np.int64)
    out = []
    for members in part.members:
        best = -np.inf
        for i in range(0, members.size, chunk):
            b = evaluator.block(members[i:i + chunk], ids, weighted=True)
            e = b.edges[np.isfinite(b.edges)]
            if e.size:
                best = max(best, float(e.max()))
        out.append(round(best, 4))
    return out


def analyse(sampler_name: str, *, pool, windows, y, rounds: int, fresh: int, seed: int,
            exhaustive: bool = False) -> dict:
    """Run ``rounds`` rounds with a recording sampler; per-step family mix and edges."""
    from vjboost.boost.sampling import SampledBoostedClassifier
    from vjboost.boost.sampling.registry import SAMPLERS

    base = SAMPLERS[sampler_name][0]
    rng_fresh = np.random.default_rng([seed, 7])
    names = [f.name for f in pool.families]
    steps_log: list[list[dict]] = []
    chosen: list[str] = []
    full_best: list[list[float]] = []

    class Recording(base):  # type: ignore[misc, valid-type]
        def _select(self, evaluator, budget):
            rec = Recorder(evaluator)
            learner, info = super()._select(rec, budget)
            part = evaluator.partition
            fam = part.family_of
            fam_names = names
            resp = evaluator.problem.response
            per_step = []
            for b in rec.blocks:
                row = {"S": int(b.sample_ids.size), "Q": {}, "best": {}}
                fb = fam[b.feature_ids]
                for k, nm in enumerate(fam_names):
                    pos = np.flatnonzero(fb == k)
                    row["Q"][nm] = int(pos.size)
                    if pos.size == 0:
                        continue
                    e = np.where(np.isfinite(b.edges[pos]), b.edges[pos], -np.inf)
                    p = int(pos[int(np.argmax(e))])
                    wl = b.learner(p)
                    sub = wl.subset if wl.subset is not None and np.any(wl.subset) else None
                    split = Split(wl.feature, wl.feature, wl.edge, wl.left_value,
                                  wl.right_value, wl.threshold, None, sub)
                    ids, _, _ = weighted_draws(evaluator._ex_w, max(fresh, row["S"]), rng_fresh)
                    vals = evaluator.source.values(np.array([wl.feature]), ids)[0]
                    row["best"][nm] = {"in_sample": round(float(b.edges[p]), 4),
                                       "fresh": round(fixed_split_edge(split, vals, resp[ids]),
                                                      4)}
                per_step.append(row)
            steps_log.append(per_step)
            if exhaustive:
                full_best.append(exhaustive_best(evaluator))
            chosen.append(fam_names[int(fam[learner.feature])])
            return learner, info

    n, nf = windows.shape[0], pool.n_features
    budget = max(10 * n, int(0.01 * nf * n))
    model = SampledBoostedClassifier(sampler=Recording(random_state=seed), loss="gentle",
                                     weak_learner="stump", n_estimators=rounds, budget=budget,
                                     random_state=seed)
    t0 = time.perf_counter()
    model.fit_pool(pool, windows, y)
    return {"sampler": sampler_name, "budget": budget, "chosen": chosen, "steps": steps_log,
            "exhaustive": full_best, "seconds": round(time.perf_counter() - t0, 1)}


def summarise(res: dict, names: list[str]) -> dict:
    """Survivor shares per step and mean in-sample / fresh edges of each family's best."""
    steps = res["steps"]
    n_steps = max(len(s) for s in steps)
    out = {"chosen": {nm: res["chosen"].count(nm) for nm in names}, "per_step": [],
           "rounds": []}
    for r, s in enumerate(steps):
        last = s[-1]["best"]  # the last step: the chosen feature (per family, stratified)
        row = {"chosen": res["chosen"][r],
               "last_step": {nm: last[nm]["fresh"] for nm in names if nm in last}}
        if res["exhaustive"]:
            row["exhaustive"] = dict(zip(names, res["exhaustive"][r], strict=True))
        out["rounds"].append(row)
    for t in range(n_steps):
        rows = [s[t] for s in steps if len(s) > t]
        q = {nm: int(np.sum([r["Q"][nm] for r in rows])) for nm in names}
        tot = max(1, sum(q.values()))
        best = {}
        for nm in names:
            pairs = [r["best"][nm] for r in rows if nm in r["best"]]
            if pairs:
                best[nm] = {"in_sample": round(float(np.mean([p["in_sample"] for p in pairs])), 3),
                            "fresh": round(float(np.mean([p["fresh"] for p in pairs])), 3)}
        out["per_step"].append({"step": t, "S": int(np.median([r["S"] for r in rows])),
                                "share": {nm: round(q[nm] / tot, 3) for nm in names},
                                "best": best})
    return out


def print_summary(name: str, summ: dict, names: list[str]) -> None:
    print(f"\n{name}: chosen families {summ['chosen']}")
    head = "step      S  " + "  ".join(f"{nm + ' share':>12}" for nm in names)
    head += "  " + "  ".join(f"{nm + ' in/fresh':>18}" for nm in names)
    print(head)
    for row in summ["per_step"]:
        line = f"{row['step']:>4} {row['S']:>8}  "
        line += "  ".join(f"{row['share'][nm]:>12.3f}" for nm in names)
        cells = []
        for nm in names:
            b = row["best"].get(nm)
            cell = "-" if b is None else f"{b['in_sample']:.3f} / {b['fresh']:.3f}"
            cells.append(f"{cell:>18}")
        print(line + "  " + "  ".join(cells))
    print("round  chosen   last step (fresh edge)        "
          "exhaustive best per family (all examples)")
    for r, row in enumerate(summ["rounds"]):
        last = "  ".join(f"{nm} {e:.3f}" for nm, e in row["last_step"].items())
        ex = "  ".join(f"{nm} {e:.3f}" for nm, e in row.get("exhaustive", {}).items())
        print(f"{r:>5}  {row['chosen']:<8} {last:<28}  {ex}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--features", default="haar,mbltpd")
    ap.add_argument("--haar-mode", default="ALL")
    ap.add_argument("--samplers", default="laminating,stratified_laminating")
    ap.add_argument("--n", type=int, default=5000, help="windows per class")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--fresh", type=int, default=8192,
                    help="smallest fresh sample for the honest edge")
    ap.add_argument("--negatives", type=Path, default=None,
                    help="a .npy of (N, 20, 20) uint8 negative windows (default: random windows "
                         "of the training backgrounds)")
    ap.add_argument("--exhaustive", action="store_true",
                    help="also each family's best edge over all its features and examples")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=fd.DEFAULT_DATA,
                    help="tools/face_data.py's output")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    data = fd.require_build(args.data, "train/positives.npz")
    if args.quick:
        args.n, args.rounds, args.features = 1000, 2, "haar,mbltpd"
        args.haar_mode = "BASIC"
    from vjboost.cascade.trainer import make_pool

    rng = np.random.default_rng(args.seed)
    pos = face_windows(data / "train" / "positives.npz", args.n, rng)
    if args.negatives is not None:
        neg = np.load(args.negatives)
        neg = neg[rng.choice(len(neg), size=min(args.n, len(neg)), replace=False)]
    else:
        neg = background_windows(data / "backgrounds_train.txt", args.n, rng)
    windows = np.concatenate([pos, neg])
    y = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))]).astype(np.int64)
    pool = make_pool(args.features, WINDOW, haar_mode=args.haar_mode)
    names = [f.name for f in pool.families]
    print(f"windows: {len(pos)} faces, {len(neg)} negatives; pool {pool}")
    result = {"quick": args.quick, "features": args.features, "n": int(len(y)),
              "rounds": args.rounds, "negatives": str(args.negatives or "random"),
              "samplers": {}}
    for s in args.samplers.split(","):
        res = analyse(s, pool=pool, windows=windows, y=y, rounds=args.rounds, fresh=args.fresh,
                      seed=args.seed, exhaustive=args.exhaustive)
        summ = summarise(res, names)
        summ["seconds"], summ["budget"] = res["seconds"], res["budget"]
        print_summary(s, summ, names)
        result["samplers"][s] = summ
    print("RESULT " + json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
