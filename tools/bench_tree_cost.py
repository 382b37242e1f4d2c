"""CPU seconds per boosted depth-2 tree of the sampled search on a large pool, and its accuracy.

The stage-boosting step of ``vjtrain``'s default path (``--sampler laminating``, the trainer's
default budget ``max(10 N, 0.01 F N)`` feature evaluations per node) on the windows of a late
stage of the shipped face configuration: the 20×20 positives of ``vjboost/models/README.md``
(the Caltech Web Faces crops cut with ``--pos-crop 0.175,0.19,0.667,0.667``, mirrored) and hard
negatives (random background windows that the first 8 stages of ``vjboost:frontalface_haar``
accept), half and half. Feature pools: Haar ALL (125,199 features) and ``haar,mblbp,channels``.

For each pool and each budget fraction (``--fractions``: multiples of the default budget) it
boosts ``--trees`` Gentle AdaBoost depth-2 trees with weight trimming 0.95 on three quarters of
the windows and reports CPU seconds per tree (user + system of this process, all threads: the
figure that carries on a shared machine) and, on the held-out quarter (training windows, never a
test set), the ROC AUC of the stage score and the false alarm at a 99.5 % hit rate after the
last tree. Several ``--seeds`` give the spread due to the sampler's randomness.

``--eval-steps`` times only the lazy feature evaluation (``PoolSource.values``) at the shapes
of Laminating's steps (many features on a few distinct windows, then fewer features on more
windows), on random windows, best of ``--repeats``: the part of a tree that depends on how the
evaluation kernel reads the features' records.

The last line is ``RESULT {json}``. ``--quick`` (under a minute after numba's first
compilation): 2,000 windows with random (not mined) negatives, Haar only, 3 trees; with
``--eval-steps``, 3 repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.boost.sampling import make_sampler  # noqa: E402
from vjboost.boost.search import SampledSearch  # noqa: E402
from vjboost.boost.source import PoolSource  # noqa: E402
from vjboost.boost.weak import TreeShape  # noqa: E402
from vjboost.cascade.positives import crop_fraction, resize_to_window  # noqa: E402
from vjboost.cascade.stage import train_stage  # noqa: E402
from vjboost.cascade.trainer import make_pool  # noqa: E402
from vjboost.io import read_image  # noqa: E402

SHARED = next((p for p in (Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared")),
                           REPO.parent.parent / "shared") if p.is_dir()),
              REPO.parent / "shared") / "data"
WINDOW = (20, 20)
CROP = (0.175, 0.19, 0.667, 0.667)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def windows(n_pos: int, n_neg: int, *, hard_stages: int, seed: int = 0
            ) -> tuple[np.ndarray, np.ndarray]:
    """Face windows and background windows (accepted by ``hard_stages`` shipped stages)."""
    rng = np.random.default_rng(seed)
    faces = np.load(SHARED / "faces" / "caltech_webfaces_36x36.npz")["images"]
    pos = [resize_to_window(crop_fraction(f, CROP), WINDOW) for f in faces]
    pos = np.array(pos + [p[:, ::-1] for p in pos])
    pos = pos[rng.permutation(len(pos))[:n_pos]]
    files = sorted((SHARED / "negatives").glob("*.jpg"))
    model = None
    if hard_stages:
        from vjboost.cascade.model_io import load_model

        model = load_model("vjboost:frontalface_haar").truncated(hard_stages)
    negs: list[np.ndarray] = []
    while len(negs) < n_neg:
        img = read_image(files[rng.integers(len(files))])
        cand = []
        for _ in range(400):
            s = int(rng.integers(20, max(21, min(img.shape) // 2)))
            y0 = int(rng.integers(0, img.shape[0] - s + 1))
            x0 = int(rng.integers(0, img.shape[1] - s + 1))
            cand.append(resize_to_window(img[y0:y0 + s, x0:x0 + s], WINDOW))
        cand = np.array(cand)
        if model is not None:
            from vjboost.cascade.runner import cascade_accepts

            cand = cand[cascade_accepts(model, cand)[0]]
        negs.extend(cand[:50])
    w = np.concatenate([pos, np.array(negs[:n_neg])]).astype(np.uint8)
    return w, np.concatenate([np.ones(len(pos)), -np.ones(n_neg)])


def stage_scores(trees, source: PoolSource) -> np.ndarray:
    """Stage sums of ``trees`` on every window of ``source``."""
    sc = np.zeros(source.n_samples)
    for tr in trees:
        vals = np.ascontiguousarray(source.values(np.asarray(tr.features_, dtype=np.int64)))
        sc += np.asarray(tr.leaves)[tr.apply(vals, binned=False)].reshape(-1)
    return sc


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC AUC (ties count one half)."""
    s = np.concatenate([pos, neg])
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(s.size)
    ranks[order] = np.arange(1, s.size + 1)
    # average ranks of ties
    _, inv, counts = np.unique(s, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=ranks)
    ranks = (sums / counts)[inv]
    return float((ranks[:pos.size].sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))


def run(features: str, w: np.ndarray, y: np.ndarray, *, trees: int, fraction: float,
        seed: int) -> dict:
    """Boost ``trees`` trees on 3/4 of the windows; CPU per tree and held-out figures."""
    idx = np.random.default_rng(1).permutation(len(y))
    k = len(y) // 4
    tr_i, va_i = idx[k:], idx[:k]
    pool = make_pool(features, WINDOW, haar_mode="ALL")
    n = tr_i.size
    budget = max(10 * n, int(fraction * 0.01 * pool.n_features * n))
    source = PoolSource(pool, w[tr_i])
    search = SampledSearch(make_sampler("laminating", random_state=seed), source, budget)
    c0 = _cpu()
    st = train_stage(search, y[tr_i], loss="gentle", shape=TreeShape.of("tree", max_depth=2),
                     min_hit_rate=0.999, max_false_alarm=1e-9, max_weak_count=trees,
                     weight_trim_rate=0.95)
    cpu = (_cpu() - c0) / len(st.learners)
    sc = stage_scores(st.learners, PoolSource(pool, w[va_i]))
    yv = y[va_i]
    p = np.sort(sc[yv > 0])
    fa = float(np.mean(sc[yv < 0] >= p[int(0.005 * p.size)]))
    return {"features": features, "n_features": int(pool.n_features), "n_train": int(n),
            "budget": int(budget), "fraction": fraction, "seed": seed, "trees": len(st.learners),
            "cpu_s_per_tree": round(cpu, 3), "val_auc": round(auc(sc[yv > 0], sc[yv < 0]), 5),
            "val_fa_at_995": round(fa, 4)}


#: Laminating's steps as (features, distinct windows): the first steps of a node at the default
#: budget on the default face pool, then the middle ones
EVAL_STEPS = ((131072, 12), (65536, 24), (32768, 48), (16384, 96), (4096, 400), (1024, 1600))


def eval_steps(features: str, *, repeats: int, n_windows: int = 26000, seed: int = 0
               ) -> list[dict]:
    """Milliseconds of ``PoolSource.values`` per Laminating step shape (best of ``repeats``)."""
    rng = np.random.default_rng(seed)
    pool = make_pool(features, WINDOW, haar_mode="ALL")
    source = PoolSource(pool, rng.integers(0, 256, (n_windows, *WINDOW), dtype=np.uint8))
    source.values(np.arange(8), np.arange(8))  # numba compilation
    best: dict = {}
    for _ in range(repeats):
        for q, s in EVAL_STEPS:
            fids = rng.choice(pool.n_features, min(q, pool.n_features), replace=False)
            sids = np.sort(rng.choice(n_windows, s, replace=False))
            t = time.perf_counter()
            source.values(fids, sids)
            best[(q, s)] = min(best.get((q, s), np.inf), time.perf_counter() - t)
    return [{"features": features, "step": [q, s], "ms": round(1e3 * t, 2),
             "ns_per_value": round(1e9 * t / (min(q, pool.n_features) * s), 2)}
            for (q, s), t in best.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--features", default="haar;haar,mblbp,channels",
                    help="pools separated by ';' (family names separated by ',')")
    ap.add_argument("--windows", type=int, default=20000, help="windows, half of them faces")
    ap.add_argument("--trees", type=int, default=4)
    ap.add_argument("--fractions", default="1", help="multiples of the default budget")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--eval-steps", action="store_true",
                    help="time only the lazy feature evaluation at Laminating's step shapes")
    ap.add_argument("--repeats", type=int, default=5, help="--eval-steps: best of this many")
    a = ap.parse_args()
    if a.eval_steps:  # random windows: no data needed
        rows = [r for f in a.features.split(";")
                for r in eval_steps(f, repeats=3 if a.quick else a.repeats)]
        for r in rows:
            q, s = r["step"]
            print(f"  {r['features']:22s} {q:7d} features x {s:5d} windows: {r['ms']:7.2f} ms "
                  f"({r['ns_per_value']:.2f} ns per value)")
        print("RESULT " + json.dumps({"quick": a.quick, "eval_steps": rows}))
        return
    if not (SHARED / "faces" / "caltech_webfaces_36x36.npz").is_file():
        print(f"needs {SHARED / 'faces'} and {SHARED / 'negatives'}")
        print("RESULT " + json.dumps({"skipped": True}))
        return
    n, trees, feats = a.windows, a.trees, a.features.split(";")
    if a.quick:
        n, trees, feats = 2000, 3, ["haar"]
    t = time.perf_counter()
    w, y = windows(n // 2, n - n // 2, hard_stages=0 if a.quick else 8)
    print(f"{len(y)} windows ({time.perf_counter() - t:.0f} s to gather)")
    rows = []
    for f in feats:
        few = np.r_[0:32, len(y) - 32:len(y)]  # numba compilation, warm caches
        run(f, w[few], y[few], trees=1, fraction=1.0, seed=0)
        for seed in (int(s) for s in a.seeds.split(",")):
            for fr in (float(v) for v in a.fractions.split(",")):
                r = run(f, w, y, trees=trees, fraction=fr, seed=seed)
                rows.append(r)
                print(f"  {f:22s} budget x{fr:<6g} seed {seed}: {r['cpu_s_per_tree']:6.2f} CPU-s "
                      f"per tree, held-out AUC {r['val_auc']:.4f}, false alarm at 99.5 % hits "
                      f"{r['val_fa_at_995']:.3f} after {r['trees']} trees")
    print("RESULT " + json.dumps({"quick": a.quick, "windows": int(len(y)), "runs": rows}))


if __name__ == "__main__":
    main()
