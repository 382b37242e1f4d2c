"""Where the CMU-MIT box convention lies inside the Caltech WebFaces crops (for ``--pos-crop``).

A cascade reports its training window, so the framing of the positives decides the boxes it
returns. CMU-MIT's ground truth boxes run from the brows to below the mouth (built from eye,
nose and mouth landmarks); the 36×36 WebFaces crops carry no landmarks. OpenCV's frontal-face
cascade serves as a common ruler: on CMU-MIT we measure where the ground-truth box lies inside
OpenCV's box (faces it finds, median over faces), on the WebFaces crops (upscaled 3×, padded) where
OpenCV's box lies inside the crop; composing the two gives the ground-truth convention in crop
fractions. The shipped model's ``--pos-crop`` is this box enlarged about its centre so that the
window keeps a little margin around the brows and the chin (``--margin``, default 1.25).

Only the box *convention* is measured on CMU-MIT (the boxes of faces OpenCV finds), never a
detection result. The last line is ``RESULT {json}``; ``--quick`` uses 500 crops.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.eval import iou_matrix  # noqa: E402
from vjboost.io import read_annotations, read_bg_list, read_image  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def gt_inside_opencv_box(cc: cv2.CascadeClassifier) -> np.ndarray:
    """(n, 4): each found face's ground-truth box in fractions of OpenCV's box (x, y, w, h)."""
    cmu = SHARED / "cmu-mit"
    gt = read_annotations(cmu / "faces.csv")
    rel = []
    for path in read_bg_list(cmu / "images.txt"):
        boxes = gt.get(path)
        if boxes is None or not len(boxes):
            continue
        found = np.asarray(cc.detectMultiScale(read_image(path), 1.1, 3)).reshape(-1, 4)
        if not len(found):
            continue
        iou = iou_matrix(boxes, found)
        for i, (x, y, w, h) in enumerate(boxes.tolist()):
            j = int(np.argmax(iou[i]))
            if iou[i, j] < 0.2:  # OpenCV's boxes are ~1.6x wider: IoU <= 0.42 when perfect
                continue
            X, Y, W, H = found[j].tolist()
            rel.append([(x - X) / W, (y - Y) / H, w / W, h / H])
    return np.asarray(rel)


def opencv_box_inside_crops(cc: cv2.CascadeClassifier, crops: np.ndarray) -> np.ndarray:
    """(n, 4): OpenCV's box in each crop where it finds exactly one face, in crop fractions."""
    side = crops.shape[1]
    up, pad = 3, side
    out = []
    for c in crops:
        big = cv2.copyMakeBorder(cv2.resize(c, (side * up, side * up)), pad, pad, pad, pad,
                                 cv2.BORDER_REPLICATE)
        d = cc.detectMultiScale(big, 1.05, 3, minSize=(side, side))
        if len(d) == 1:
            X, Y, W, H = d[0].tolist()
            out.append([(X - pad) / (up * side), (Y - pad) / (up * side), W / (up * side),
                        H / (up * side)])
    return np.asarray(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="500 crops")
    ap.add_argument("--margin", type=float, default=1.25,
                    help="window side over the ground-truth box side (square window)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    cc = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
    crops = np.load(SHARED / "faces" / "caltech_webfaces_36x36.npz")["images"]
    crops = crops[:500] if args.quick else crops
    g = np.median(gt_inside_opencv_box(cc), axis=0)
    o = np.median(opencv_box_inside_crops(cc, crops), axis=0)
    gx, gy = o[0] + g[0] * o[2], o[1] + g[1] * o[3]
    gw, gh = g[2] * o[2], g[3] * o[3]
    cx, cy = gx + gw / 2, gy + gh / 2
    side = args.margin * max(gw, gh)
    crop = [cx - side / 2, cy - side / 2, side, side]
    print(f"ground truth inside OpenCV's box (x, y, w, h): {np.round(g, 3).tolist()}")
    print(f"OpenCV's box inside a WebFaces crop: {np.round(o, 3).tolist()}")
    print(f"ground-truth convention inside a crop: {np.round([gx, gy, gw, gh], 3).tolist()}")
    print(f"--pos-crop for a window {args.margin:g}x the ground truth: "
          + ",".join(f"{v:.3f}" for v in crop))
    print("RESULT " + json.dumps({
        "quick": args.quick, "gt_in_opencv_box": np.round(g, 4).tolist(),
        "opencv_box_in_crop": np.round(o, 4).tolist(),
        "gt_in_crop": np.round([gx, gy, gw, gh], 4).tolist(), "margin": args.margin,
        "pos_crop": np.round(crop, 3).tolist(), "seconds": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
