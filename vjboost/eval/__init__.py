"""Detection evaluation: matching to ground truth, detection rate, false positives, AP, curves."""

from __future__ import annotations

from ..boxes import iou_matrix
from .matching import IGNORED, match_detections
from .metrics import DetectionEvaluation, evaluate_detections
from .sweep import NeighborsCurve, sweep_min_neighbors

__all__ = [
    "IGNORED",
    "DetectionEvaluation",
    "NeighborsCurve",
    "evaluate_detections",
    "iou_matrix",
    "match_detections",
    "sweep_min_neighbors",
]
