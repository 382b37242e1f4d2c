"""The evaluation part of the HTML reports: results table, curves and detections drawn on images.

``vjeval`` writes :func:`write_evaluation_report` (``report.html``); ``vjtrain --eval`` adds the
same sections to its training report with :func:`add_evaluation`. Detections are drawn at the
reported ``min_neighbors``: green boxes match an annotated object, red boxes are false positives,
orange boxes are annotated objects no detection matched, grey boxes are ignore regions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._html import Page
from .matching import IGNORED, match_detections
from .run import DetectorRun, EvaluationSet
from .sweep import NeighborsCurve

__all__ = [
    "COLOURS",
    "add_evaluation",
    "detection_samples",
    "draw_detections",
    "operating_points",
    "write_evaluation_report",
]

#: RGB colours of the drawn boxes
COLOURS = {
    "true positive": (26, 150, 65),
    "false positive": (215, 25, 28),
    "missed": (253, 141, 60),
    "ignored": (150, 150, 150),
}
LEGEND = ("Green: detections matching an annotated object; red: false positives; orange: "
          "annotated objects no detection matched; grey: ignore regions.")


def draw_detections(gray: np.ndarray, boxes: Any, matched: Any, ground_truth: Any,
                    ignore: Any = None, *, max_side: int = 420) -> np.ndarray:
    """The image in RGB, scaled to at most ``max_side`` pixels, with its boxes drawn.

    Parameters
    ----------
    gray : ndarray (H, W) uint8
    boxes : array-like (n, 4)
        Detections ``(x, y, w, h)``.
    matched : array-like (n,)
        From :func:`~vjboost.eval.matching.match_detections`: the ground-truth index, -1 (false
        positive) or ``IGNORED``.
    ground_truth, ignore : array-like (m, 4), (k, 4)

    Returns
    -------
    ndarray (h, w, 3) uint8

    Examples
    --------
    >>> img = draw_detections(np.zeros((100, 200), np.uint8), [[10, 10, 30, 30]], [-1],
    ...                       [[100, 20, 30, 30]], max_side=100)
    >>> img.shape, img[5, 5].tolist(), img[10, 50].tolist()
    ((50, 100, 3), [215, 25, 28], [253, 141, 60])
    """
    from PIL import Image, ImageDraw

    h, w = gray.shape[:2]
    f = min(1.0, max_side / max(h, w))
    im = Image.fromarray(np.asarray(gray, dtype=np.uint8)).convert("RGB")
    if f < 1.0:
        im = im.resize((max(1, round(w * f)), max(1, round(h * f))), Image.Resampling.BILINEAR)
    draw = ImageDraw.Draw(im)
    lw = 2 if max(im.size) >= 160 else 1

    def rect(b, colour):
        """Outline one box on the drawing.

        Parameters
        ----------
        b : sequence of 4 numbers
            ``(x, y, w, h)`` in pixels of the input image (scaled by ``f``).
        colour : str
            A Pillow colour (one of :data:`COLOURS`).
        """
        x, y, bw, bh = (float(v) * f for v in b)
        draw.rectangle([round(x), round(y), round(x + bw) - 1, round(y + bh) - 1],
                       outline=colour, width=lw)

    matched = np.asarray(matched, dtype=np.int64).reshape(-1)
    gt = np.asarray(ground_truth, dtype=np.float64).reshape(-1, 4)
    for b in np.asarray(ignore if ignore is not None else [], dtype=np.float64).reshape(-1, 4):
        rect(b, COLOURS["ignored"])
    hit = np.zeros(len(gt), dtype=bool)
    hit[matched[matched >= 0]] = True
    for b in gt[~hit]:
        rect(b, COLOURS["missed"])
    for b, m in zip(np.asarray(boxes, dtype=np.float64).reshape(-1, 4), matched, strict=True):
        rect(b, COLOURS["true positive"] if m >= 0 else COLOURS["ignored"] if m == IGNORED
             else COLOURS["false positive"])
    return np.asarray(im)


def detection_samples(run: DetectorRun, eval_set: EvaluationSet, *, min_neighbors: int,
                      iou_threshold: float) -> list[tuple[np.ndarray, str]]:
    """The kept images of ``run`` with their detections at ``min_neighbors`` drawn.

    Parameters
    ----------
    run : DetectorRun
        A detector's raw windows on the evaluation images (its ``kept`` images are drawn).
    eval_set : EvaluationSet
        The images, their sizes and their annotations.
    min_neighbors : int
        The grouping threshold the detections are drawn at.
    iou_threshold : float
        IoU at which a detection matches an annotated object.

    Returns
    -------
    list of (RGB image, caption)
        In ``eval_set`` order; the caption names the image and counts true positives, false
        positives and missed objects.
    """
    out = []
    ann = eval_set.annotations
    for name in eval_set.images:
        if name not in run.kept:
            continue
        det, sc = run.select(name, min_neighbors)  # as the curve's detections
        gt = ann.get(name, np.zeros((0, 4), np.int64))
        ign = ann.ignore_for(name)
        matched, _ = match_detections(det, sc, gt, iou_threshold=iou_threshold,
                                      ignore=ign if len(ign) else None)
        tp = int(np.count_nonzero(matched >= 0))
        fp = int(np.count_nonzero(matched == -1))
        img = draw_detections(eval_set.images[name], det, matched, gt, ign)
        out.append((img, f"{Path(name).name}: {tp} found, {fp} false, {len(gt) - tp} missed"))
    return out


def operating_points(results: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The ``min_neighbors`` each model's evaluation reports (``vjeval``'s results, by label),
    for the plot to circle.

    >>> operating_points([{"label": "a", "at_min_neighbors": {"min_neighbors": 1}},
    ...                   {"label": "file", "all_detections": {}}])
    {'a': 1}
    """
    return {r["label"]: int(r["at_min_neighbors"]["min_neighbors"]) for r in results
            if "at_min_neighbors" in r}


def _results_rows(results: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    rows = []
    for r in results:
        a = r.get("at_min_neighbors") or r.get("all_detections") or {}
        sec = (r["detect_seconds"] + r["sweep_seconds"]) if "detect_seconds" in r else None
        rows.append([r["label"], a.get("detection_rate"), a.get("false_positives"),
                     a.get("precision"), a.get("average_precision"), r.get("raw_windows"), sec])
    return rows


def add_evaluation(page: Page, summary: Mapping[str, Any],
                   curves: Mapping[str, NeighborsCurve],
                   samples: Mapping[str, Sequence[tuple[np.ndarray, str]]], *,
                   curve_png: bytes | None = None, title: str = "Evaluation") -> None:
    """Append the evaluation sections to ``page``.

    Parameters
    ----------
    page : Page
    summary : mapping
        ``vjeval``'s ``eval.json`` content: ``annotations``, ``n_images``, ``n_objects``,
        ``iou_threshold``, ``models`` (one result dict per model or detection file) and
        ``min_neighbors``.
    curves : mapping label -> NeighborsCurve
    samples : mapping label -> list of (RGB image, caption)
        From :func:`detection_samples`.
    curve_png : bytes, optional
        The curve plot already rendered (else drawn here when there are curves).
    """
    from .plot import curve_figure

    marks = operating_points(summary.get("models", []))
    mn = summary.get("min_neighbors", 3)
    where = ("each at its default operating point" if mn == "auto"
             else f"at min_neighbors {mn}")
    iou = float(summary.get("iou_threshold", 0.3))
    s = page.section(title, intro=(
        f"Detections on {summary.get('n_images')} image(s) of {summary.get('annotations')} "
        f"({summary.get('n_objects')} annotated objects, "
        f"{summary.get('n_ignore_regions', 0)} ignore regions), matched at IoU >= {iou:g}. "
        f"Models are scored {where}; detection files with every detection."))
    s.table(["model", "detection rate", "false positives", "precision", "AP", "raw windows",
             "seconds"], _results_rows(summary.get("models", [])),
            caption="AP: area under the precision/recall curve of the detections ranked by "
                    "score. Seconds: detection and grouping over the whole set.")
    if curves:
        if curve_png is None:
            import matplotlib.pyplot as plt

            fig = curve_figure(curves, iou=iou, mark=marks, n_images=summary.get("n_images"))
            s.figure(fig, _CURVE_CAPTION)
            plt.close(fig)
        else:
            s.figure(curve_png, _CURVE_CAPTION)
    for label, items in samples.items():
        if not items:
            continue
        d = page.section(f"Detections: {label}", intro=f"Detections at min_neighbors "
                         f"{marks.get(label, mn)} on {len(items)} image(s) of the set. {LEGEND}")
        for img, cap in items:
            d.figure(img, cap)


_CURVE_CAPTION = ("Detection rate against false positives as min_neighbors goes from 1 to its "
                  "largest value (fewer detections to the left); the circle marks the reported "
                  "operating point.")


def write_evaluation_report(folder: str | os.PathLike[str], summary: Mapping[str, Any],
                            curves: Mapping[str, NeighborsCurve],
                            samples: Mapping[str, Sequence[tuple[np.ndarray, str]]], *,
                            curve_png: bytes | None = None) -> Path:
    """Write ``report.html`` (self-contained) into ``folder``; returns its path.

    Parameters
    ----------
    folder : path-like
        An existing folder; ``report.html`` in it is replaced atomically.
    summary, curves, samples, curve_png
        As for :func:`add_evaluation`.

    Returns
    -------
    Path
        The page written.
    """
    page = Page("vjboost evaluation report", subtitle=[
        f"{len(summary.get('models', []))} model(s) on {summary.get('annotations')}"])
    add_evaluation(page, summary, curves, samples, curve_png=curve_png, title="Results")
    return page.write(Path(folder) / "report.html")

