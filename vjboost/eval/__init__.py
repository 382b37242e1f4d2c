"""Detection evaluation: matching to ground truth, detection rate, false positives, AP, curves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vjboost._lazy import attach

if TYPE_CHECKING:
    from ..boxes import iou_matrix
    from .matching import IGNORED, match_detections
    from .metrics import DetectionEvaluation, evaluate_detections
    from .sweep import NeighborsCurve, select_detections, sweep_min_neighbors

__getattr__, __dir__, __all__ = attach(__name__, __file__)
