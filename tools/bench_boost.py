"""Benchmark: time per boosting round of exhaustive stump selection on a dense uint8 matrix.

Compares, in the same run, vjboost's ``BoostedClassifier`` (stumps, binned histogram search over
every feature each round) with scikit-learn's ``AdaBoostClassifier`` over depth-1 trees and
LightGBM with ``num_leaves=2, max_bin=255``, at 1 and 2 threads, and prints the ratios.

The matrix is N examples x F features of uint8 bins (values 0..255; raw value = bin, so every
library sees the same 256 distinct values per feature). 1% of the features are shifted with the
label so that boosting has something to find.

Full size (default): N = 20,000, F = 50,000 (1 GB of bins). ``--quick``: N = 5,000, F = 2,000.
scikit-learn sorts every feature at every node and has no threading for a single tree; at full
size it is timed on fewer rounds (``--sklearn-rounds``) and its per-round time is reported.

Ends with one line ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time

import numpy as np
from _cli import description

from vjboost._memory import check_memory, format_bytes


def make_data(n_samples: int, n_features: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature-major uint8 bins (F, N) and labels in {-1, +1}."""
    check_memory(
        n_samples * n_features, f"benchmark matrix ({n_features} x {n_samples} uint8)",
        advice="Use --quick or smaller --n-samples/--n-features.",
    )
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n_samples) < 0.5, 1.0, -1.0)
    B = np.empty((n_features, n_samples), dtype=np.uint8)
    chunk = max(1, (1 << 26) // n_samples)
    for start in range(0, n_features, chunk):
        stop = min(start + chunk, n_features)
        B[start:stop] = rng.integers(0, 256, size=(stop - start, n_samples), dtype=np.uint8)
    n_inf = max(1, n_features // 100)
    inf = rng.choice(n_features, n_inf, replace=False)
    shift = rng.uniform(5, 40, size=n_inf)
    for j, f in enumerate(inf):
        v = B[f].astype(np.float64) * 0.7 + 38 + shift[j] * y
        B[f] = np.clip(np.round(v), 0, 255).astype(np.uint8)
    return B, y


def make_real_data(n_samples: int, n_features: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature-major uint8 bins (F, N) of real Haar features and labels in {-1, +1}.

    Half the windows are face crops (Caltech WebFaces in ../shared, 36x36 resized to 24x24), half
    random 24x24 windows cut at random scales from the background images there; the features are
    a seeded random subset of the 162,336 Haar features (BASIC, OpenCV's normalisation), binned
    by vjboost's quantile binning.
    """
    import cv2

    from vjboost.boost.binning import precompute
    from vjboost.features import FeaturePool, HaarFamily
    from vjboost.io import read_image

    shared = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    faces_npz = os.path.join(shared, "faces", "caltech_webfaces_36x36.npz")
    neg_dir = os.path.join(shared, "negatives")
    if not (os.path.exists(faces_npz) and os.path.isdir(neg_dir)):
        raise SystemExit("--data real needs ../shared/data (faces/ and negatives/)")
    rng = np.random.default_rng(seed)
    n_pos = n_samples // 2
    faces = np.load(faces_npz)["images"]
    idx = rng.choice(len(faces), n_pos, replace=n_pos > len(faces))
    pos = np.stack([cv2.resize(faces[i], (24, 24), interpolation=cv2.INTER_AREA) for i in idx])
    files = sorted(os.listdir(neg_dir))
    negs = []
    while len(negs) < n_samples - n_pos:
        img = read_image(os.path.join(neg_dir, files[rng.integers(len(files))]))
        for _ in range(50):
            side = int(rng.integers(24, max(25, min(img.shape) // 2)))
            y0 = int(rng.integers(0, img.shape[0] - side + 1))
            x0 = int(rng.integers(0, img.shape[1] - side + 1))
            crop = img[y0 : y0 + side, x0 : x0 + side]
            negs.append(cv2.resize(crop, (24, 24), interpolation=cv2.INTER_AREA))
    windows = np.concatenate([pos, np.stack(negs[: n_samples - n_pos])])
    y = np.r_[np.ones(n_pos), -np.ones(n_samples - n_pos)]
    order = rng.permutation(n_samples)
    windows, y = windows[order], y[order]
    pool = FeaturePool([HaarFamily((24, 24))])
    fids = np.sort(rng.choice(pool.n_features, min(n_features, pool.n_features), replace=False))
    pre = precompute(pool, windows, "uint8", feature_ids=fids, seed=seed)
    return np.ascontiguousarray(pre.matrix), y


def bench_vjboost(B, y, rounds, threads, losses):
    """Seconds per round (median, min) of each loss: a whole round of ``BoostedClassifier``
    (weights, exhaustive stump search, refit on all examples, score update), timed one by one
    with the round loop the estimator runs over the same in-place search."""
    from vjboost.boost import BoostedClassifier, MatrixSearch, make_loss, run_rounds

    n_features = B.shape[0]
    # raw value of bin k is k: edges k + 0.5 keep bin(k) == k
    edges = np.broadcast_to(np.arange(255, dtype=np.float32) + 0.5, (n_features, 255))
    edges = np.ascontiguousarray(edges)
    # compile once on a tiny problem so that the timings below are pure run time
    for loss in losses:
        BoostedClassifier(loss=loss, n_estimators=2, threads=threads).fit_feature_major(
            B[:8, :500], y[:500], bin_edges=edges[:8]
        )
    search = MatrixSearch(B, edges=edges, threads=threads)
    out = {}
    for loss in losses:
        step = make_loss(loss, y)
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            run_rounds(step, search, n_rounds=1)
            times.append(time.perf_counter() - t)
        out[loss] = (float(np.median(times)), float(np.min(times)))
    return out


def sample_major_float32(B: np.ndarray) -> np.ndarray:
    """(N, F) float32 copy of the feature-major bins, the input both peers take."""
    check_memory(4 * B.size, f"float32 (n_samples, n_features) copy for the peers "
                 f"({format_bytes(4 * B.size)})", advice="Use --quick or a smaller problem.")
    X = np.empty((B.shape[1], B.shape[0]), dtype=np.float32)
    step = max(1, (1 << 24) // B.shape[0])
    for a in range(0, B.shape[1], step):
        X[a : a + step] = B[:, a : a + step].T
    return X


def bench_lightgbm(X, y, rounds, threads_list):
    """Seconds per ``Booster.update()`` (median, min) per thread count, and construction time."""
    import lightgbm as lgb

    label = (y > 0).astype(np.float64)
    # LightGBM keeps its bin-construction sample as float64 per feature (8 GB for all 20,000
    # rows at full size); 2,000 rows of 0..255 values find (nearly) all 256 bins
    sample_cnt = min(X.shape[0], 2000)
    check_memory(8 * sample_cnt * X.shape[1] + X.shape[0] * X.shape[1],
                 "LightGBM bin-construction sample and binned Dataset")
    base = {
        "objective": "binary", "num_leaves": 2, "max_bin": 255, "min_data_in_bin": 1,
        "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 0.0, "lambda_l2": 0.0,
        "learning_rate": 1.0, "feature_pre_filter": False, "verbose": -1,
        "bin_construct_sample_cnt": sample_cnt,
        # dense features never bundle; the bundling search alone takes many minutes at F = 50k
        "enable_bundle": False,
    }
    t0 = time.perf_counter()
    ds = lgb.Dataset(X, label=label, params=base, free_raw_data=True)
    ds.construct()
    t_construct = time.perf_counter() - t0
    out = {}
    for th in threads_list:
        booster = lgb.Booster({**base, "num_threads": th}, train_set=ds)
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            booster.update()
            times.append(time.perf_counter() - t)
        out[th] = (float(np.median(times)), float(np.min(times)))
        del booster
    del ds
    gc.collect()
    return out, t_construct


def bench_sklearn(X, y, rounds):
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    clf = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1), n_estimators=rounds)
    t = time.perf_counter()
    clf.fit(X, y)
    dt = time.perf_counter() - t
    n = len(clf.estimators_)
    del clf
    gc.collect()
    return dt / max(n, 1), n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--quick", action="store_true", help="small problem, under a minute")
    parser.add_argument("--n-samples", type=int, default=None)
    parser.add_argument("--n-features", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None, help="boosting rounds timed")
    parser.add_argument("--sklearn-rounds", type=int, default=None)
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--losses", default="discrete,gentle,logit")
    parser.add_argument("--skip-sklearn", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", choices=["synthetic", "real"], default="synthetic",
                        help="synthetic bins, or real Haar features of faces/backgrounds "
                             "(needs ../shared)")
    args = parser.parse_args(argv)

    n = args.n_samples or (5_000 if args.quick else 20_000)
    f = args.n_features or (2_000 if args.quick else 50_000)
    rounds = args.rounds or (5 if args.quick else 7)
    sk_rounds = args.sklearn_rounds or (2 if args.quick else 1)
    threads_list = [int(t) for t in args.threads.split(",")]
    losses = args.losses.split(",")
    for v, name in ((n, "--n-samples"), (f, "--n-features"), (rounds, "--rounds")):
        if v < 1:
            parser.error(f"{name}: must be >= 1")

    print(f"bench_boost: N = {n:,} examples x F = {f:,} features (uint8, 256 bins), "
          f"{rounds} rounds; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs visible, load average {os.getloadavg()[0]:.1f}")
    t0 = time.perf_counter()
    B, y = (make_real_data if args.data == "real" else make_data)(n, f, args.seed)
    print(f"data: {format_bytes(B.nbytes)} generated in {time.perf_counter() - t0:.1f} s")

    vj = {}
    for th in threads_list:
        vj[th] = bench_vjboost(B, y, rounds, th, losses)
        for loss, (med, mn) in vj[th].items():
            print(f"vjboost  {loss:8s} threads={th}: {med:8.3f} s/round (median; min {mn:.3f})")

    X = sample_major_float32(B)
    lgb_t, t_construct = bench_lightgbm(X, y, rounds, threads_list)
    for th, (med, mn) in lgb_t.items():
        print(f"lightgbm binary   threads={th}: {med:8.3f} s/round (median; min {mn:.3f}; "
              f"Dataset construction {t_construct:.1f} s, not counted)")

    sk = sk_n = None
    if not args.skip_sklearn:
        sk, sk_n = bench_sklearn(X, y, sk_rounds)
        note = "" if sk_n == rounds else f" (timed on {sk_n} round(s) only: it is slow)"
        print(f"sklearn  AdaBoost(depth-1 trees), single-threaded: {sk:8.3f} s/round{note}")

    print("ratios per round (median times; min-time ratios in brackets):")
    ratios_sk, ratios_lgb, ratios_lgb_min = {}, {}, {}
    for th in threads_list:
        if sk is not None and "discrete" in vj[th]:
            ratios_sk[th] = sk / vj[th]["discrete"][0]
            print(f"  threads={th}: vjboost discrete is {ratios_sk[th]:7.1f}x faster than "
                  "scikit-learn AdaBoost (target >= 10x)")
        ratios_lgb[th] = {loss: v[0] / lgb_t[th][0] for loss, v in vj[th].items()}
        ratios_lgb_min[th] = {loss: v[1] / lgb_t[th][1] for loss, v in vj[th].items()}
        for loss, r in ratios_lgb[th].items():
            print(f"  threads={th}: vjboost {loss:8s} / LightGBM time = {r:5.2f} "
                  f"[{ratios_lgb_min[th][loss]:5.2f}] (target <= 1.5)")
    result = {
        "n_samples": n, "n_features": f, "rounds": rounds, "quick": bool(args.quick),
        "data": args.data,
        "vjboost_s_per_round": {str(k): {loss: v[0] for loss, v in d.items()}
                                for k, d in vj.items()},
        "vjboost_min_s_per_round": {str(k): {loss: v[1] for loss, v in d.items()}
                                    for k, d in vj.items()},
        "lightgbm_s_per_round": {str(k): v[0] for k, v in lgb_t.items()},
        "lightgbm_min_s_per_round": {str(k): v[1] for k, v in lgb_t.items()},
        "lightgbm_construct_s": t_construct,
        "sklearn_s_per_round": sk,
        "sklearn_rounds_timed": sk_n,
        "speedup_vs_sklearn": {str(k): v for k, v in ratios_sk.items()},
        "ratio_vs_lightgbm": {str(k): v for k, v in ratios_lgb.items()},
        "ratio_vs_lightgbm_min": {str(k): v for k, v in ratios_lgb_min.items()},
        "load_average": os.getloadavg()[0],
    }
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
