"""How stable MB-LBP and MB-LTP bits are when face windows are degraded as scans.

For training face windows (``/work/data/faces/train``: WebFaces and NRC-IIT, never validation
or test data) cropped to their target box at the face recipes' 20×20 window, every MB-LBP code
and every MB-LTP half at each tolerance τ is computed on the clean window and on a copy degraded
by ``face_data.scan_like`` (seeded per window). Per family / τ it prints:

* ``flip``: the share of bits that differ between clean and scanned windows (noise);
* ``var``: ``2·p·(1 − p)`` averaged over bits, ``p`` the share of clean faces with the bit set —
  the flip rate two unrelated faces would show (how much a bit varies between faces at all);
* ``ratio = flip / var``: noise relative to signal (lower: a bit that boosting can rely on).

Peer in the same run: MB-LBP (the ratios are printed relative to it). The last line is
``RESULT {json}``; ``--quick`` uses 300 windows.

Example::

    python tools/ltp_stability.py --n 3000
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import face_data as fd  # noqa: E402

from vjboost.features import MBLBPFamily, MBLTPFamily  # noqa: E402

TAUS = (0.05, 0.1, 0.2, 0.4, 0.8)


def bits(codes: np.ndarray) -> np.ndarray:
    """(F, S) codes 0..255 → (F, S, 8) bool bits."""
    return np.unpackbits(codes.astype(np.uint8)[..., None], axis=-1).astype(bool)


def stability(clean: np.ndarray, scan: np.ndarray, small: np.ndarray) -> dict:
    """Figures over all grids, and ``small_ratio`` over the grids of ``small`` (bool (F,))."""
    bc, bs = bits(clean), bits(scan)
    p = bc.mean(axis=1)
    fl = (bc != bs).mean(axis=1)
    var = 2 * p * (1 - p)
    return {"flip": round(float(fl.mean()), 4), "var": round(float(var.mean()), 4),
            "ratio": round(float(fl.mean() / var.mean()), 4),
            "small_ratio": round(float(fl[small].mean() / var[small].mean()), 4),
            "set": round(float(bc.mean()), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/data/faces"))
    ap.add_argument("--n", type=int, default=3000, help="face windows per source")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n = 300 if args.quick else args.n
    win = (20, 20)
    clean, scan = [], []
    for src in ("webfaces", "nrc"):
        with np.load(args.data / "train" / f"{src}.npz") as z:
            imgs, box = z["images"], z["box"]
        rng = np.random.default_rng([args.seed, 1])
        pick = np.sort(rng.choice(len(imgs), min(n, len(imgs)), replace=False))
        x, y, w, h = (int(round(v)) for v in box)
        for i in pick:
            sc = fd.scan_like(imgs[i], np.random.default_rng([args.seed, 2, int(i)]))
            for out, g in ((clean, imgs[i]), (scan, sc)):
                out.append(cv2.resize(g[y:y + h, x:x + w], win, interpolation=cv2.INTER_AREA))
    clean, scan = np.stack(clean), np.stack(scan)
    res = {"n_windows": len(clean)}
    lbp = MBLBPFamily(win)
    small = lbp.table[:, 2] * lbp.table[:, 3] <= 4  # blocks of at most 4 pixels
    res["mblbp"] = stability(lbp.compute(clean), lbp.compute(scan), small)
    for tau in TAUS:
        fam = MBLTPFamily(win, tolerances=(tau,))
        # both halves of each grid (features 2g, 2g + 1)
        res[f"mbltp_{tau:g}"] = stability(fam.compute(clean), fam.compute(scan),
                                          np.repeat(small, 2))
    base, base_s = res["mblbp"]["ratio"], res["mblbp"]["small_ratio"]
    print(f"{'family':<14s} {'flip':>7s} {'var':>7s} {'ratio':>7s} {'vs mblbp':>9s} "
          f"{'small blocks vs mblbp':>22s} {'set':>6s}")
    for k, v in res.items():
        if isinstance(v, dict):
            v["ratio_vs_mblbp"] = round(v["ratio"] / base, 3)
            v["small_ratio_vs_mblbp"] = round(v["small_ratio"] / base_s, 3)
            print(f"{k:<14s} {v['flip']:>7.4f} {v['var']:>7.4f} {v['ratio']:>7.4f} "
                  f"{v['ratio_vs_mblbp']:>9.3f} {v['small_ratio_vs_mblbp']:>22.3f} "
                  f"{v['set']:>6.3f}")
    print("RESULT " + json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
