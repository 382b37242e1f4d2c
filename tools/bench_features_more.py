"""Throughput of the LBP, HOG, histogram, Fourier/wavelet and pixel families; HOG vs scikit-image.

For each family the benchmark prepares ``S`` random windows (gray, or RGB for colour families) and
evaluates ``Q`` random features on all of them with 1 and 2 numba threads, reporting

* ``evals_per_s``: feature evaluations per second of ``evaluate`` (``Q * S / t``),
* ``prepare_windows_per_s``: windows per second of ``prepare`` (channels/integrals),

best of ``--repeats``. Then the full HOG descriptor (prepare + every feature) of the same
``64 x 128`` windows against ``skimage.feature.hog`` with the same parameters (9 orientations,
8x8 cells, 2x2 blocks, L2-Hys) in the same run; the maximum difference is checked, and the
speed ratio printed. Also per-pixel LBP codes against ``skimage.feature.local_binary_pattern``,
and the integral gradient planes of one image (the ``channels`` family's detection levels)
against the same planes built with OpenCV.

Ends with one line ``RESULT {json}``.

Usage::

    python tools/bench_features_more.py            # full run (a few minutes)
    python tools/bench_features_more.py --quick    # under a minute
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path
from typing import Any

import numba
import numpy as np
from skimage.feature import hog as sk_hog
from skimage.feature import local_binary_pattern as sk_lbp

from vjboost._threads import n_threads
from vjboost.features.channels import ChannelSet
from vjboost.features.fourier import FourierFamily, HaarWaveletFamily
from vjboost.features.histogram import ColorHistogramFamily, IntensityHistogramFamily
from vjboost.features.hog import HOGFamily
from vjboost.features.lbp import LBPCodeFamily, LBPHistogramFamily, local_binary_pattern
from vjboost.features.pixel import (
    GradientMagnitudeFamily,
    PatchSumFamily,
    PixelFamily,
    PixelRGBFamily,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import description  # noqa: E402
from bench_features import best_time  # noqa: E402


def _families(win: tuple[int, int]) -> list[Any]:
    return [
        LBPHistogramFamily(win, P=8, R=1, method="uniform"),
        LBPCodeFamily(win, P=8, R=1, method="uniform"),
        HOGFamily(win, orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2)),
        HOGFamily(win, orientations=18, pixels_per_cell=(8, 8), cells_per_block=(2, 2),
                  signed=True),
        IntensityHistogramFamily(win, bins=16, grids=((1, 1), (2, 2), (3, 3))),
        ColorHistogramFamily(win, space="hsv", bins=8, joint=False, grids=((1, 1), (2, 2))),
        ColorHistogramFamily(win, space="luv", bins=3, joint=True, grids=((1, 1), (2, 2))),
        FourierFamily(win, size=6),
        HaarWaveletFamily(win, levels=3),
        PixelFamily(win),
        PixelRGBFamily(win),
        GradientMagnitudeFamily(win),
        PatchSumFamily(win, n_patches=2000, seed=0),
    ]


def bench_family(fam: Any, n_samples: int, n_query: int, repeats: int,
                 rng: np.random.Generator) -> dict[str, Any]:
    h, w = fam.window_shape
    shape = (n_samples, h, w, 3) if fam.color else (n_samples, h, w)
    wins = rng.integers(0, 256, shape, dtype=np.uint8)
    q = min(n_query, fam.n_features)
    fids = rng.choice(fam.n_features, q, replace=False)
    fam.evaluate(fam.prepare(wins[:4]), fids[:4])  # compile
    row: dict[str, Any] = {"family": fam.name, "n_features": fam.n_features, "Q": q,
                           "S": n_samples, "label": _label(fam)}
    for threads in (1, 2):
        with n_threads(threads):
            t_prep = best_time(lambda: fam.prepare(wins), repeats)
            ch = fam.prepare(wins)
            t_eval = best_time(lambda ch=ch: fam.evaluate(ch, fids), repeats)
        row[f"evals_per_s_{threads}t"] = q * n_samples / t_eval
        row[f"prepare_windows_per_s_{threads}t"] = n_samples / t_prep
    return row


def _label(fam: Any) -> str:
    cfg = fam.get_config()
    keys = [k for k in ("method", "orientations", "signed", "space", "bins", "joint", "size",
                        "levels") if k in cfg]
    return fam.name + "(" + ", ".join(f"{k}={cfg[k]}" for k in keys) + ")"


def bench_hog_vs_skimage(n_windows: int, repeats: int, rng: np.random.Generator) -> dict:
    """The full descriptor of 128x64 windows, vjboost vs scikit-image (timed on the same
    windows). vjboost's cells tile the window's interior (15x7 cells where scikit-image has
    16x8): the values are compared with scikit-image on the interior, on the blocks that do not
    touch its border (where scikit-image zeroes the gradient)."""
    wins = rng.integers(0, 256, (n_windows, 128, 64), dtype=np.uint8)
    params = {"orientations": 9, "pixels_per_cell": (8, 8), "cells_per_block": (2, 2),
              "block_norm": "L2-Hys"}
    fam = HOGFamily((128, 64), **params)
    fam.compute(wins[:2])

    def ours():
        return fam.compute(wins)

    def theirs():
        return np.stack([sk_hog(x, **params) for x in wins], axis=1)

    interior = np.stack([sk_hog(x[1:-1, 1:-1], **params) for x in wins[:20]], axis=1)
    blocks = np.array([fam.describe(i)["block"] for i in range(fam.n_features)])
    inner = ((blocks > 0).all(1) & (blocks[:, 0] + 2 < fam.n_cells[0])
             & (blocks[:, 1] + 2 < fam.n_cells[1]))
    diff = float(np.abs(ours()[inner, :20] - interior[inner]).max())
    res = {"windows": n_windows, "window": "128x64", "n_features": fam.n_features,
           "max_abs_diff_inner_blocks": diff}
    t_sk = best_time(theirs, repeats)
    res["skimage_windows_per_s"] = n_windows / t_sk
    for threads in (1, 2):
        with n_threads(threads):
            t = best_time(ours, repeats)
        res[f"vjboost_windows_per_s_{threads}t"] = n_windows / t
        res[f"speedup_{threads}t"] = t_sk / t
    return res


def bench_lbp_vs_skimage(n_windows: int, repeats: int, rng: np.random.Generator) -> dict:
    wins = rng.integers(0, 256, (n_windows, 24, 24), dtype=np.uint8)
    local_binary_pattern(wins[:2], 8, 1, "uniform")

    def theirs():
        return np.stack([sk_lbp(x, 8, 1, "uniform") for x in wins])

    same = bool(np.array_equal(local_binary_pattern(wins, 8, 1, "uniform"), theirs()))
    t_sk = best_time(theirs, repeats)
    res = {"windows": n_windows, "window": "24x24", "P": 8, "R": 1, "method": "uniform",
           "identical": same, "skimage_windows_per_s": n_windows / t_sk}
    for threads in (1, 2):
        with n_threads(threads):
            t = best_time(lambda: local_binary_pattern(wins, 8, 1, "uniform"), repeats)
        res[f"vjboost_windows_per_s_{threads}t"] = n_windows / t
        res[f"speedup_{threads}t"] = t_sk / t
    return res


def bench_gradient_planes_vs_opencv(shape: tuple[int, int], repeats: int,
                                    rng: np.random.Generator) -> dict:
    """The integral gradient planes of one image (magnitude and 6 unsigned orientation bins,
    what the ``channels`` family reads at every detection level), vjboost vs the same planes
    built with OpenCV (``Sobel`` with ``ksize=1``, ``cartToPolar``, one masked ``integral`` per
    plane), one thread each. OpenCV's float32 angles put a few pixels near a bin edge in the
    neighbouring bin: the share of pixels whose (magnitude, bin) agree is reported."""
    import cv2

    h, w = shape
    img = cv2.GaussianBlur(rng.integers(0, 256, (h, w), dtype=np.uint8), (5, 5), 1.5)
    keys = ["gradmag"] + [f"orient(6,u)#{b}" for b in range(6)]
    cs = ChannelSet(keys)
    out = np.empty((cs.n_planes, h + 1, w + 1), np.int32)

    def ours():
        cs.fill(img, out)

    def theirs():
        gx = cv2.Sobel(img, cv2.CV_32F, 1, 0, ksize=1)
        gy = cv2.Sobel(img, cv2.CV_32F, 0, 1, ksize=1)
        mag, ang = cv2.cartToPolar(gx, gy, angleInDegrees=True)
        m = np.rint(8 * mag)
        b = (np.mod(ang, 180.0) // 30.0).astype(np.int32)
        planes = [cv2.integral(m, sdepth=cv2.CV_64F)] + [
            cv2.integral(np.where(b == k, m, np.float32(0)), sdepth=cv2.CV_64F)
            for k in range(6)]
        return m, b, planes

    with n_threads(1):
        ours()
        cv2.setNumThreads(1)
        try:
            m, b, _ = theirs()
            t_cv = best_time(theirs, repeats)
        finally:
            cv2.setNumThreads(-1)
        t = best_time(ours, repeats)
    inner = (slice(1, -1), slice(1, -1))
    ours_m = np.diff(np.diff(out[0], axis=0), axis=1)  # the magnitude plane back from its integral
    ours_b = np.argmax(np.stack([np.diff(np.diff(out[1 + k], axis=0), axis=1) for k in range(6)]),
                       axis=0)
    agree = (ours_m[inner] == m[inner]) & ((ours_b[inner] == b[inner]) | (m[inner] == 0))
    return {"image": f"{w}x{h}", "planes": len(keys), "opencv_ms": 1000 * t_cv,
            "vjboost_ms": 1000 * t, "speedup": t_cv / t, "ns_per_pixel": 1e9 * t / (h * w),
            "agreeing_pixels": float(agree.mean())}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="small sizes (under a minute)")
    ap.add_argument("--samples", type=int, default=None, help="windows per family (S)")
    ap.add_argument("--features", type=int, default=None, help="features per family (Q)")
    ap.add_argument("--hog-windows", type=int, default=None, help="64x128 windows for HOG")
    ap.add_argument("--window", type=int, nargs=2, default=(24, 24), metavar=("H", "W"))
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    s = args.samples or (1000 if args.quick else 4000)
    q = args.features or (500 if args.quick else 2000)
    n_hog = args.hog_windows or (100 if args.quick else 500)
    repeats = args.repeats or (2 if args.quick else 3)
    rng = np.random.default_rng(args.seed)

    rows = []
    print(f"{'family':<52} {'Q':>5} {'S':>6} {'evals/s 1t':>12} {'evals/s 2t':>12} "
          f"{'prep win/s 1t':>14}")
    for fam in _families(tuple(args.window)):
        r = bench_family(fam, s, q, repeats, rng)
        rows.append(r)
        print(f"{r['label']:<52} {r['Q']:>5} {r['S']:>6} {r['evals_per_s_1t']:>12.3g} "
              f"{r['evals_per_s_2t']:>12.3g} {r['prepare_windows_per_s_1t']:>14.3g}")
    hog = bench_hog_vs_skimage(n_hog, repeats, rng)
    print(f"HOG 128x64 ({hog['n_features']} features), {n_hog} windows: skimage "
          f"{hog['skimage_windows_per_s']:.0f} win/s, vjboost {hog['vjboost_windows_per_s_1t']:.0f}"
          f" (1t) / {hog['vjboost_windows_per_s_2t']:.0f} (2t) win/s -> x{hog['speedup_1t']:.1f}"
          f" / x{hog['speedup_2t']:.1f}; max |diff| (inner blocks) "
          f"{hog['max_abs_diff_inner_blocks']:.2e}")
    lbp = bench_lbp_vs_skimage(n_hog * 10, repeats, rng)
    print(f"LBP codes 24x24, {lbp['windows']} windows: skimage {lbp['skimage_windows_per_s']:.0f}"
          f" win/s, vjboost {lbp['vjboost_windows_per_s_1t']:.0f} (1t) / "
          f"{lbp['vjboost_windows_per_s_2t']:.0f} (2t) -> x{lbp['speedup_1t']:.1f} / "
          f"x{lbp['speedup_2t']:.1f}; identical: {lbp['identical']}")
    grad = bench_gradient_planes_vs_opencv((240, 320) if args.quick else (480, 640), repeats,
                                           rng)
    print(f"gradient planes {grad['image']} ({grad['planes']} integral planes): OpenCV "
          f"{grad['opencv_ms']:.2f} ms, vjboost {grad['vjboost_ms']:.2f} ms "
          f"({grad['ns_per_pixel']:.1f} ns/pixel) -> x{grad['speedup']:.1f}; pixels agreeing "
          f"{grad['agreeing_pixels']:.4f}")
    result = {
        "quick": bool(args.quick),
        "window": list(args.window),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "machine": platform.machine(),
        "families": {r["label"]: {k: (round(v, 1) if isinstance(v, float) else v)
                                  for k, v in r.items() if k != "label"} for r in rows},
        "hog_vs_skimage": {k: (round(v, 3) if isinstance(v, float) and not k.startswith("max")
                               else v) for k, v in hog.items()},
        "lbp_vs_skimage": {k: (round(v, 3) if isinstance(v, float) else v)
                           for k, v in lbp.items()},
        "gradient_planes_vs_opencv": {k: (round(v, 4) if isinstance(v, float) else v)
                                      for k, v in grad.items()},
    }
    print("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    main()
