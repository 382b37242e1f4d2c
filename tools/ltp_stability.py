"""How stable MB-LBP and MB-LTP bits are when face windows are scanned, lit from one side or
turned.

For training face windows (``../data/faces/train``: WebFaces and NRC-IIT, never validation
or test data) cropped to their target box at the face recipes' 20×20 window, every MB-LBP code
and every MB-LTP half (each tolerance reference of :class:`MBLTPFamily` — the window's σ, the
grid's mean block, the grid's own σ — with and without detrending, at several τ) is computed on
the clean window and on copies transformed as the validation views transform faces, each
seeded per window:

* ``scan``: ``face_data.scan_like`` (resolution, halftone, contrast, grain, JPEG);
* ``lit``: ``face_data.relight`` (one side of the face up to 2.2× brighter, the other 0.45×);
* ``turn``: ``face_data.turn`` by 15° either way about the target box's centre
  (as ``train_face.py robust``).

Per family / reference / τ and transform it prints:

* ``flip``: the share of bits that differ between clean and transformed windows (noise);
* ``var``: ``2·p·(1 − p)`` averaged over bits, ``p`` the share of clean faces with the bit set —
  the flip rate two unrelated faces would show (how much a bit varies between faces at all);
* ``ratio = flip / var``: noise relative to signal (lower: a bit that boosting can rely on).

Peer in the same run: MB-LBP (the ratios are printed relative to it). The last line is
``RESULT {json}``; ``--quick`` uses 300 windows per source.

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
from _cli import description  # noqa: E402

from vjboost.features import MBLBPFamily, MBLTPFamily  # noqa: E402

TAUS = (0.05, 0.1, 0.2, 0.4, 0.8)
#: (reference, detrend) → τ ladder: shares of the window's σ, of the mean block ("mean") or of
#: the grid's σ ("local"), each on its own scale
CONFIGS = {("window", False): TAUS, ("mean", False): (0.02, 0.05, 0.1, 0.2),
           ("local", False): (0.1, 0.2, 0.4), ("window", True): (0.05, 0.1, 0.2, 0.4),
           ("mean", True): (0.02, 0.05, 0.1, 0.2), ("local", True): (0.1, 0.2, 0.4)}
TRANSFORMS = ("scan", "lit", "turn")


def bits(codes: np.ndarray) -> np.ndarray:
    """(F, S) codes 0..255 → (F, S, 8) bool bits."""
    return np.unpackbits(codes.astype(np.uint8)[..., None], axis=-1).astype(bool)


def stability(clean: np.ndarray, moved: dict[str, np.ndarray], small: np.ndarray) -> dict:
    """Per transform, the figures over all grids and ``small_ratio`` over the grids of
    ``small`` (bool (F,)); ``set``: the share of bits set on clean windows."""
    bc = bits(clean)
    p = bc.mean(axis=1)
    var = 2 * p * (1 - p)
    out: dict = {"set": round(float(bc.mean()), 4), "var": round(float(var.mean()), 4)}
    for name, codes in moved.items():
        fl = (bc != bits(codes)).mean(axis=1)
        out[name] = {"flip": round(float(fl.mean()), 4),
                     "ratio": round(float(fl.mean() / var.mean()), 4),
                     "small_ratio": round(float(fl[small].mean() / var[small].mean()), 4)}
    return out


def windows(data: Path, n: int, seed: int, win: tuple[int, int]
            ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Clean windows (N, h, w) and their transformed copies, by transform name."""
    clean: list = []
    moved: dict[str, list] = {t: [] for t in TRANSFORMS}
    for src in ("webfaces", "nrc"):
        with np.load(data / "train" / f"{src}.npz") as z:
            imgs, box = z["images"], z["box"]
        rng = np.random.default_rng([seed, 1])
        pick = np.sort(rng.choice(len(imgs), min(n, len(imgs)), replace=False))
        x, y, w, h = (int(round(v)) for v in box)
        centre = (float(box[0] + box[2] / 2), float(box[1] + box[3] / 2))

        def crop(g: np.ndarray, x=x, y=y, w=w, h=h) -> np.ndarray:
            return cv2.resize(g[y:y + h, x:x + w], win[::-1], interpolation=cv2.INTER_AREA)

        for k, i in enumerate(pick):
            g = imgs[i]
            clean.append(crop(g))
            moved["scan"].append(crop(fd.scan_like(g, np.random.default_rng([seed, 2, int(i)]))))
            moved["lit"].append(crop(fd.relight(g, box, np.random.default_rng([seed, 3, int(i)]))))
            moved["turn"].append(crop(fd.turn(g, centre, 15.0 * (1 - 2 * (k % 2)))))
    return np.stack(clean), {t: np.stack(v) for t, v in moved.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--data", type=Path, default=fd.DEFAULT_DATA,
                    help="tools/face_data.py's output")
    ap.add_argument("--n", type=int, default=3000, help="face windows per source")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    fd.require_build(args.data, "train/webfaces.npz")
    n = 300 if args.quick else args.n
    win = (20, 20)
    clean, moved = windows(args.data, n, args.seed, win)
    res: dict = {"n_windows": len(clean)}
    lbp = MBLBPFamily(win)
    small = lbp.table[:, 2] * lbp.table[:, 3] <= 4  # blocks of at most 4 pixels
    res["mblbp"] = stability(lbp.compute(clean), {t: lbp.compute(v) for t, v in moved.items()},
                             small)
    for (ref, trend), taus in CONFIGS.items():
        for tau in taus:
            fam = MBLTPFamily(win, tolerances=(tau,), reference=ref, detrend=trend)
            # both halves of each grid (features 2g, 2g + 1)
            res[f"mbltp_{ref}{'_detrend' if trend else ''}_{tau:g}"] = stability(
                fam.compute(clean), {t: fam.compute(v) for t, v in moved.items()},
                np.repeat(small, 2))
    base = res["mblbp"]
    head = " ".join(f"{t + ' ratio':>11s} {'vs lbp':>7s}" for t in TRANSFORMS)
    print(f"{'family':<26s} {'set':>6s} {'var':>6s} {head} {'mean vs lbp':>11s}")
    for k, v in res.items():
        if not isinstance(v, dict):
            continue
        cells = []
        for t in TRANSFORMS:
            v[t]["ratio_vs_mblbp"] = round(v[t]["ratio"] / base[t]["ratio"], 3)
            v[t]["small_ratio_vs_mblbp"] = round(v[t]["small_ratio"] / base[t]["small_ratio"], 3)
            cells.append(f"{v[t]['ratio']:>11.4f} {v[t]['ratio_vs_mblbp']:>7.3f}")
        v["mean_vs_mblbp"] = round(float(np.mean([v[t]["ratio_vs_mblbp"]
                                                  for t in TRANSFORMS])), 3)
        print(f"{k:<26s} {v['set']:>6.3f} {v['var']:>6.3f} {' '.join(cells)} "
              f"{v['mean_vs_mblbp']:>11.3f}")
    print("RESULT " + json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
