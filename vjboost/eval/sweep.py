"""Detection-rate / false-positive curves by sweeping ``min_neighbors`` over raw windows.

A cascade's raw windows are computed once per image; grouping them with OpenCV's
``groupRectangles`` at each threshold gives the detections that ``detectMultiScale`` would return
with that ``minNeighbors``. This is the usual way to draw a cascade's ROC-style curve.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..cascade.grouping import clip_boxes, group_rectangles
from .metrics import DetectionEvaluation, evaluate_detections

__all__ = ["NeighborsCurve", "group_at", "sweep_min_neighbors"]


@dataclass(frozen=True)
class NeighborsCurve:
    """One point per ``min_neighbors`` value.

    Attributes
    ----------
    min_neighbors : ndarray of shape (k,), int
    false_positives : ndarray of shape (k,), int
    detection_rate : ndarray of shape (k,)
    evaluations : list of DetectionEvaluation
        Full evaluation at each threshold (scores = group sizes).
    """

    min_neighbors: np.ndarray
    false_positives: np.ndarray
    detection_rate: np.ndarray
    evaluations: list[DetectionEvaluation]

    def at(self, min_neighbors: int) -> DetectionEvaluation:
        """The evaluation at one threshold."""
        idx = np.flatnonzero(self.min_neighbors == min_neighbors)
        if idx.size == 0:
            raise ValueError(f"min_neighbors: {min_neighbors} is not on the curve")
        return self.evaluations[int(idx[0])]

    def detection_rate_at(self, false_positives: int) -> float:
        """Best detection rate of any threshold with at most this many false positives."""
        ok = self.false_positives <= false_positives
        return float(self.detection_rate[ok].max()) if ok.any() else 0.0


def group_at(
    boxes: np.ndarray, scores: np.ndarray, min_neighbors: int, image_size: tuple[int, int] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Group raw windows like ``detectMultiScale`` (then clip to the image when its size is known).

    Returns the grouped boxes and their group sizes as scores (raw windows: their own scores).
    """
    grouped, counts, _ = group_rectangles(boxes, min_neighbors, 0.2, scores)
    sc = counts.astype(np.float64) if min_neighbors > 0 else np.asarray(scores, np.float64)
    if image_size is not None and len(grouped):
        grouped, keep = clip_boxes(grouped, image_size[0], image_size[1])
        sc = sc[keep]
    return grouped, sc


def sweep_min_neighbors(
    raw: Mapping[str, tuple[np.ndarray, np.ndarray]],
    ground_truth: Mapping[str, np.ndarray],
    *,
    thresholds: Iterable[int] = range(0, 11),
    image_sizes: Mapping[str, tuple[int, int]] | None = None,
    iou_threshold: float = 0.5,
) -> NeighborsCurve:
    """Evaluate the grouped detections at several ``min_neighbors`` values.

    Parameters
    ----------
    raw : mapping image -> (boxes (n, 4), scores (n,))
        Raw (ungrouped) windows of every image run, including images with none.
    ground_truth : mapping image -> boxes (m, 4)
    thresholds : iterable of int, default=0..10
    image_sizes : mapping image -> (width, height), optional
        For clipping grouped boxes to the image, as OpenCV does.
    iou_threshold : float, default=0.5

    Returns
    -------
    NeighborsCurve
    """
    ts = sorted({int(t) for t in thresholds})
    if not ts or ts[0] < 0:
        raise ValueError(f"thresholds: expected non-negative integers, got {ts}")
    evals = []
    for t in ts:
        dets = {
            name: group_at(b, s, t, None if image_sizes is None else image_sizes.get(name))
            for name, (b, s) in raw.items()
        }
        evals.append(evaluate_detections(dets, ground_truth, iou_threshold=iou_threshold))
    return NeighborsCurve(
        min_neighbors=np.asarray(ts, dtype=np.int64),
        false_positives=np.asarray([e.false_positives for e in evals], dtype=np.int64),
        detection_rate=np.asarray([e.detection_rate for e in evals]),
        evaluations=evals,
    )
