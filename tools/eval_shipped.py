"""Evaluate the shipped frontal-face cascade on CMU-MIT next to OpenCV's default and alt2.

All three cascades run through the same code (vjboost's detector, which returns what
``cv2.CascadeClassifier.detectMultiScale`` returns) at scaleFactor 1.1 with minSize the cascade's
window; raw windows are grouped at every ``min_neighbors`` from 0 to 30 and matched to the
ground truth greedily (IoU ≥ 0.3 and ≥ 0.5; the ground-truth boxes are tight, OpenCV's cascades
return boxes about 1.6× wider, so IoU 0.3 is the fair comparison for them).

The goal of the shipped model: at the false-positive count of OpenCV's default cascade with
minNeighbors 3, a detection rate at least as high. Also timed: ``cv2.CascadeClassifier`` running
the shipped XML against OpenCV's default cascade, in the same run.

Writes ``curve.png`` and ``eval.json`` into ``--output``; the last line is ``RESULT {json}``.
``--quick``: the first 20 images of the list.
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

from vjboost._io import atomic_write, save_png  # noqa: E402
from vjboost.cascade.detector import CascadeDetector  # noqa: E402
from vjboost.cascade.model_io import load_model  # noqa: E402
from vjboost.cascade.shipped import resolve_model  # noqa: E402
from vjboost.eval.plot import plot_neighbors_curves  # noqa: E402
from vjboost.eval.sweep import sweep_min_neighbors  # noqa: E402
from vjboost.io import read_annotations, read_bg_list, read_image  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
MODELS = {
    "vjboost frontalface": "vjboost:frontalface",
    "OpenCV default": "opencv:haarcascade_frontalface_default",
    "OpenCV alt2": "opencv:haarcascade_frontalface_alt2",
}
REFERENCE = "OpenCV default"


def _opencv_seconds(xml: str, grays: list[np.ndarray], window: tuple[int, int],
                    repeats: int) -> float:
    cc = cv2.CascadeClassifier(xml)
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        for g in grays:
            cc.detectMultiScale(g, 1.1, 3, minSize=window[::-1])
        best = min(best, time.perf_counter() - t)
    return float(best)


def _plot(curves: dict, path: Path, ious: tuple[float, ...], n_images: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ious), figsize=(6.0 * len(ious), 4.3), dpi=100)
    for ax, iou in zip(np.atleast_1d(axes), ious, strict=True):
        plot_neighbors_curves(ax, curves[iou], iou=iou, mark=3, n_images=n_images)
        ax.set_title(f"CMU-MIT, min_neighbors sweep, IoU ≥ {iou:g} (circle: 3)", fontsize=10)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="first 20 images only")
    ap.add_argument("--model", default=MODELS["vjboost frontalface"],
                    help="the cascade to compare (default: the shipped one)")
    ap.add_argument("--output", default="runs/eval_shipped", help="folder for curve.png/eval.json")
    ap.add_argument("--max-neighbors", type=int, default=30)
    args = ap.parse_args()
    t_start = time.perf_counter()
    cmu = SHARED / "cmu-mit"
    if not cmu.is_dir():
        sys.exit(f"eval_shipped: {cmu} not found (the CMU-MIT set lives in ../shared/data)")
    gt = read_annotations(cmu / "faces.csv")
    paths = read_bg_list(cmu / "images.txt")[: 20 if args.quick else None]
    grays = {p: read_image(p) for p in paths}
    sizes = {p: (g.shape[1], g.shape[0]) for p, g in grays.items()}
    gt = {p: gt.get(p, np.zeros((0, 4), np.int64)) for p in paths}
    models = dict(MODELS, **{"vjboost frontalface": args.model})
    ious = (0.3, 0.5)
    curves: dict[float, dict] = {iou: {} for iou in ious}
    seconds, windows = {}, {}
    for label, spec in models.items():
        model = load_model(resolve_model(spec))
        windows[label] = model.window_shape
        det = CascadeDetector(model, scale_factor=1.1, min_neighbors=0, grouping="none")
        t = time.perf_counter()
        raw = {p: det.raw_windows(g) for p, g in grays.items()}
        seconds[label] = time.perf_counter() - t
        for iou in ious:
            curves[iou][label] = sweep_min_neighbors(
                raw, gt, thresholds=range(args.max_neighbors + 1), image_sizes=sizes,
                iou_threshold=iou)
    ours = "vjboost frontalface"
    result: dict = {"quick": args.quick, "images": len(paths),
                    "faces": int(sum(len(v) for v in gt.values())), "models": models}
    for iou in ious:
        key = f"iou{int(round(iou * 100))}"
        ref = curves[iou][REFERENCE].at(3)
        ref_fp = int(ref.false_positives)
        c = curves[iou][ours]
        ok = np.flatnonzero(c.false_positives <= ref_fp)
        best = ok[np.argmax(c.detection_rate[ok])] if ok.size else None
        result[key] = {
            "reference_at_3": {"detection_rate": round(ref.detection_rate, 4),
                               "false_positives": ref_fp},
            "ours_at_reference_fp": None if best is None else {
                "min_neighbors": int(c.min_neighbors[best]),
                "detection_rate": round(float(c.detection_rate[best]), 4),
                "false_positives": int(c.false_positives[best])},
            "at_3": {label: {"detection_rate": round(cv.at(3).detection_rate, 4),
                             "false_positives": int(cv.at(3).false_positives),
                             "average_precision": round(cv.at(3).average_precision, 4)}
                     for label, cv in curves[iou].items()},
            "curves": {label: {"min_neighbors": cv.min_neighbors.tolist(),
                               "false_positives": cv.false_positives.tolist(),
                               "detection_rate": [round(float(v), 4)
                                                  for v in cv.detection_rate]}
                       for label, cv in curves[iou].items()},
        }
        goal = best is not None and c.detection_rate[best] >= ref.detection_rate
        result[key]["goal_met"] = bool(goal)
        print(f"IoU >= {iou:g}: OpenCV default at minNeighbors 3: {ref.detection_rate:.3f} with "
              f"{ref_fp} FP; ours with at most {ref_fp} FP: "
              + ("none" if best is None else
                 f"{c.detection_rate[best]:.3f} with {c.false_positives[best]} FP at "
                 f"minNeighbors {c.min_neighbors[best]}")
              + f" -> goal {'met' if goal else 'NOT met'}")
        for label, cv in curves[iou].items():
            pts = ", ".join(f"{m}: {d:.3f}/{f}" for m, d, f in zip(
                cv.min_neighbors, cv.detection_rate, cv.false_positives, strict=True)
                if m in (1, 2, 3, 4, 6, 8, 12, 16, 20, 30))
            print(f"  {label:<20} (min_neighbors: rate/FP) {pts}")
    # speed: OpenCV itself on the shipped XML vs on its default cascade, same images, same run
    ours_xml = resolve_model(args.model)
    if ours_xml.endswith(".json"):
        xml_sibling = Path(ours_xml).with_suffix(".xml")
        ours_xml = str(xml_sibling) if xml_sibling.is_file() else None
    glist = list(grays.values())
    speed = {"vjboost_detector_seconds": {k: round(v, 2) for k, v in seconds.items()}}
    if ours_xml is not None:
        t_ours = _opencv_seconds(ours_xml, glist, windows[ours], 3)
        t_ref = _opencv_seconds(resolve_model(MODELS[REFERENCE]), glist, windows[REFERENCE], 3)
        speed.update(opencv_seconds_ours=round(t_ours, 2), opencv_seconds_default=round(t_ref, 2),
                     ours_over_default=round(t_ours / t_ref, 3))
        print(f"cv2.CascadeClassifier, scale 1.1, minNeighbors 3: shipped cascade {t_ours:.2f} s, "
              f"default {t_ref:.2f} s (ratio {t_ours / t_ref:.2f})")
    result["speed"] = speed
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    _plot(curves, out / "curve.png", ious, len(paths))
    atomic_write(out / "eval.json", json.dumps(result, indent=1))
    result["wall_s"] = round(time.perf_counter() - t_start, 1)
    summary = {k: v for k, v in result.items() if k not in ("iou30", "iou50")}
    for iou in ious:
        key = f"iou{int(round(iou * 100))}"
        summary[key] = {k: v for k, v in result[key].items() if k != "curves"}
    print("RESULT " + json.dumps(summary))


if __name__ == "__main__":
    main()
