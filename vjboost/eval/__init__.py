"""Detection evaluation: matching to ground truth, detection rate, false positives, AP, curves."""

from __future__ import annotations

from .matching import iou_matrix, match_detections
from .metrics import DetectionEvaluation, evaluate_detections

__all__ = ["DetectionEvaluation", "evaluate_detections", "iou_matrix", "match_detections"]
