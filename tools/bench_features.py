"""Feature-evaluation throughput of every registered family, and Haar against scikit-image.

For each family in the registry (built with its default parameters on a ``--window`` window; the
generic per-window-function family runs a demo function), the benchmark prepares ``S`` random
windows and evaluates ``Q`` random features on all of them with 1 and 2 numba threads, and
reports feature evaluations per second (``Q * S / t``, best of ``--repeats``).

Then Haar against ``skimage.feature.haar_like_feature`` on the same windows and the same
features (scikit-image's five types; vjboost with ``x3_weight=2``, ``normalize=False`` so that the
values are identical up to type-4's sign, which the run checks), and prints the speed ratio.

Last, the whole Haar pool of a 20x20 window (mode ALL, 125,199 features) on ``--pool-windows``
windows (10,000; quick 2,000), evaluated in blocks of 8,192 features as a precomputation does
(prepare included): feature evaluations per second with all threads.

Ends with one line ``RESULT {json}``.

Usage::

    python tools/bench_features.py            # full run (a few minutes)
    python tools/bench_features.py --quick    # under a minute
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

import numba
import numpy as np
from _cli import description

from vjboost._threads import n_threads
from vjboost.features import registered_families
from vjboost.features.custom import WindowFunctionFamily
from vjboost.features.haar import HaarFamily


@numba.njit(nogil=True, cache=True)
def _demo_row_stats(window, out):  # pragma: no cover - numba
    """Demo per-window function: mean and variance of every row."""
    h, w = window.shape
    for y in range(h):
        s = 0.0
        s2 = 0.0
        for x in range(w):
            v = np.float64(window[y, x])
            s += v
            s2 += v * v
        out[2 * y] = s / w
        out[2 * y + 1] = s2 / w - (s / w) ** 2


def best_time(fn, repeats: int) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn``."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _make_family(name: str, cls: type, window: tuple[int, int]) -> Any:
    if cls is WindowFunctionFamily:
        return WindowFunctionFamily(_demo_row_stats, n_features=2 * window[0],
                                    window_shape=window)
    return cls(window_shape=window)


def bench_families(
    windows: np.ndarray, n_query: int, threads: list[int], repeats: int, rng: np.random.Generator
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    h, w = windows.shape[1:3]
    rgb = np.ascontiguousarray(np.repeat(windows[..., None], 3, axis=3))
    rgb[..., 0] = np.roll(windows, 1, axis=0)  # colour that is not gray
    for name, cls in sorted(registered_families().items()):
        if name.startswith("test_"):
            continue
        try:
            fam = _make_family(name, cls, (h, w))
        except Exception as exc:  # a family whose defaults do not fit this window
            out[name] = {"skipped": f"{type(exc).__name__}: {exc}"}
            continue
        data = rgb if fam.color else windows
        t_prep = best_time(lambda f=fam, d=data: f.prepare(d), 1)  # includes JIT on first use
        ch = fam.prepare(data)
        t_prep = best_time(lambda f=fam, d=data: f.prepare(d), repeats)
        q = min(n_query, fam.n_features)
        ids = np.sort(rng.choice(fam.n_features, q, replace=False))
        fam.evaluate(ch, ids[:2])  # compile
        row: dict[str, Any] = {
            "n_features": int(fam.n_features),
            "Q": int(q),
            "S": int(windows.shape[0]),
            "prepare_windows_per_s": round(windows.shape[0] / t_prep),
        }
        for t in threads:
            with n_threads(t):
                sec = best_time(lambda f=fam, c=ch, i=ids: f.evaluate(c, i), repeats)
            row[f"evals_per_s_{t}t"] = round(q * windows.shape[0] / sec)
        out[name] = row
    return out


def _skimage_coords(fam: HaarFamily, ids: np.ndarray):
    """scikit-image feature_coord / feature_type arrays for our (BASIC) feature ids."""
    sk_name = {"x2": "type-2-x", "y2": "type-2-y", "x3": "type-3-x", "y3": "type-3-y",
               "x2y2": "type-4"}
    coords, types = [], []
    for i in ids:
        d = fam.describe(int(i))
        x0, y0, w0, h0, _ = d["rects"][0]
        t = d["type"]
        nx, ny = {"x2": (2, 1), "y2": (1, 2), "x3": (3, 1), "y3": (1, 3), "x2y2": (2, 2)}[t]
        uw, uh = w0 // nx, h0 // ny
        if t == "x2y2":  # scikit-image order: TL, TR, BR, BL
            cells = [(0, 0), (1, 0), (1, 1), (0, 1)]
        else:
            cells = [(k, 0) for k in range(nx)] if ny == 1 else [(0, k) for k in range(ny)]
        rects = []
        for cx, cy in cells:
            r0, c0 = y0 + cy * uh, x0 + cx * uw
            rects.append([(r0, c0), (r0 + uh - 1, c0 + uw - 1)])
        coords.append(rects)
        types.append(sk_name[t])
    coord_arr = np.empty(len(coords), dtype=object)
    coord_arr[:] = coords
    return coord_arr, np.array(types, dtype=object)


def bench_haar_vs_skimage(
    windows: np.ndarray, n_query: int, n_sk_windows: int, threads: list[int], repeats: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    from skimage.feature import haar_like_feature
    from skimage.transform import integral_image

    h, w = windows.shape[1:3]
    fam = HaarFamily((h, w), mode="BASIC", x3_weight=2.0, normalize=False)
    ids = np.sort(rng.choice(fam.n_features, min(n_query, fam.n_features), replace=False))
    coord, ftype = _skimage_coords(fam, ids)
    sign = np.where(ftype == "type-4", -1.0, 1.0)
    sk_w = windows[:n_sk_windows]

    def run_skimage():
        vals = np.empty((ids.size, sk_w.shape[0]))
        for j, win in enumerate(sk_w):
            ii = integral_image(win)  # included: it is part of scikit-image's per-window work
            vals[:, j] = haar_like_feature(ii, 0, 0, w, h, feature_type=ftype, feature_coord=coord)
        return vals

    t_sk = best_time(run_skimage, max(1, repeats // 2))
    sk_vals = run_skimage()
    ours = fam.evaluate(fam.prepare(sk_w), ids)
    max_diff = float(np.abs(ours - sign[:, None] * sk_vals).max())
    sk_rate = ids.size * sk_w.shape[0] / t_sk
    res: dict[str, Any] = {
        "Q": int(ids.size),
        "S_ours": int(windows.shape[0]),
        "S_skimage": int(sk_w.shape[0]),
        "skimage_evals_per_s": round(sk_rate),
        "max_abs_diff_vs_skimage": max_diff,
    }
    for t in threads:
        with n_threads(t):
            # vjboost timed end to end as well: integral images + evaluation
            sec = best_time(lambda: fam.evaluate(fam.prepare(windows), ids), repeats)
        rate = ids.size * windows.shape[0] / sec
        res[f"vjboost_evals_per_s_{t}t"] = round(rate)
        res[f"ratio_{t}t"] = round(rate / sk_rate, 1)
    return res


def bench_haar_pool(n_windows: int, rng: np.random.Generator, block: int = 8192
                    ) -> dict[str, Any]:
    """Every feature of the 20x20 ALL Haar pool on ``n_windows`` windows, block by block."""
    fam = HaarFamily((20, 20), mode="ALL")
    windows = rng.integers(0, 256, (n_windows, 20, 20), dtype=np.uint8)
    fam.evaluate(fam.prepare(windows[:64]), np.arange(64))  # compile
    t0 = time.perf_counter()
    ch = fam.prepare(windows)
    checksum = 0.0
    for a in range(0, fam.n_features, block):
        vals = fam.evaluate(ch, np.arange(a, min(a + block, fam.n_features)))
        checksum += float(vals[:, ::97].sum(dtype=np.float64))
    sec = time.perf_counter() - t0
    return {"n_features": int(fam.n_features), "S": int(n_windows), "seconds": round(sec, 2),
            "evals_per_s": round(fam.n_features * n_windows / sec), "checksum": checksum}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=description(__doc__))
    p.add_argument("--quick", action="store_true", help="small sizes, runs in under a minute")
    p.add_argument("--window", type=int, default=24, help="square window size (default 24)")
    p.add_argument("--n-windows", type=int, default=None, help="S (default 4000, quick 1000)")
    p.add_argument("--n-features", type=int, default=None, help="Q (default 20000, quick 2000)")
    p.add_argument("--sk-windows", type=int, default=None,
                   help="windows for scikit-image (default 40, quick 10)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--repeats", type=int, default=None, help="best of N (default 3, quick 2)")
    p.add_argument("--pool-windows", type=int, default=None,
                   help="windows for the whole 20x20 Haar pool (default 10000, quick 2000)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    s = args.n_windows or (1000 if args.quick else 4000)
    q = args.n_features or (2000 if args.quick else 20000)
    s_sk = args.sk_windows or (10 if args.quick else 40)
    repeats = args.repeats or (2 if args.quick else 3)
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    cap = numba.config.NUMBA_NUM_THREADS
    threads = [t for t in threads if 1 <= t <= cap] or [1]
    rng = np.random.default_rng(args.seed)
    windows = rng.integers(0, 256, (s, args.window, args.window), dtype=np.uint8)

    t0 = time.perf_counter()
    fams = bench_families(windows, q, threads, repeats, rng)
    haar = bench_haar_vs_skimage(windows, q, s_sk, threads, repeats, rng)
    pool = bench_haar_pool(args.pool_windows or (2000 if args.quick else 10000), rng)
    elapsed = time.perf_counter() - t0

    tcols = [f"evals_per_s_{t}t" for t in threads]
    print(f"Feature evaluation, {args.window}x{args.window} windows, S={s}, Q<={q} "
          f"(best of {repeats}); cpu={os.cpu_count()}, numba threads={cap}")
    print(f"{'family':<20}{'n_features':>12}{'Q':>8}" + "".join(f"{c:>22}" for c in tcols)
          + f"{'prepare win/s':>16}")
    for name, row in fams.items():
        if "skipped" in row:
            print(f"{name:<20} skipped: {row['skipped']}")
            continue
        print(f"{name:<20}{row['n_features']:>12}{row['Q']:>8}"
              + "".join(f"{row[c]:>22,}" for c in tcols) + f"{row['prepare_windows_per_s']:>16,}")
    print()
    print(f"Haar vs skimage.feature.haar_like_feature: Q={haar['Q']}, scikit-image on "
          f"{haar['S_skimage']} windows, vjboost on {haar['S_ours']} (integral images included)")
    print(f"  scikit-image: {haar['skimage_evals_per_s']:,} evals/s")
    for t in threads:
        print(f"  vjboost {t} thread(s): {haar[f'vjboost_evals_per_s_{t}t']:,} evals/s  "
              f"-> {haar[f'ratio_{t}t']}x")
    print(f"  max |difference| of values: {haar['max_abs_diff_vs_skimage']}")
    print(f"Whole 20x20 ALL Haar pool ({pool['n_features']:,} features) on {pool['S']:,} "
          f"windows: {pool['seconds']} s, {pool['evals_per_s']:,} evals/s")
    result = {
        "window": args.window,
        "S": s,
        "Q": q,
        "threads": threads,
        "families": {k: v for k, v in fams.items()},
        "haar_vs_skimage": haar,
        "haar_pool_20x20_all": pool,
        "seconds": round(elapsed, 1),
        "python": platform.python_version(),
        "numba": numba.__version__,
    }
    print("RESULT " + json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
