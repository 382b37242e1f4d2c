"""Detection metrics over an image set: detection rate, false positives, precision, AP, curves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .matching import IGNORED, match_detections

__all__ = ["DetectionEvaluation", "evaluate_detections"]


@dataclass(frozen=True)
class DetectionEvaluation:
    """Result of :func:`evaluate_detections`.

    Attributes
    ----------
    n_images, n_ground_truth, n_detections : int
    true_positives, false_positives : int
        At the lowest score (every detection kept).
    detection_rate : float
        ``true_positives / n_ground_truth`` (recall).
    precision : float
    average_precision : float
        Area under the precision/recall curve with precision made monotone (all-point
        interpolation, as in PASCAL VOC 2010+).
    thresholds : ndarray of shape (k,)
        Distinct scores in decreasing order; entry i keeps detections with score >= thresholds[i].
    curve_false_positives : ndarray of shape (k,), int64
    curve_detection_rate : ndarray of shape (k,)
        The ROC-style curve: detection rate against the number of false positives as the score
        threshold is lowered. Both are non-decreasing.
    iou_threshold : float

    Examples
    --------
    >>> gt = {"a.png": np.array([[0, 0, 10, 10], [50, 50, 10, 10]])}
    >>> dets = {"a.png": (np.array([[0, 0, 10, 10], [30, 30, 9, 9], [50, 50, 10, 10]]),
    ...                   np.array([3.0, 2.0, 1.0])),
    ...         "b.png": (np.array([[5, 5, 9, 9]]), np.array([2.5]))}
    >>> ev = evaluate_detections(dets, gt)
    >>> ev.thresholds.tolist(), ev.curve_false_positives.tolist(), ev.curve_detection_rate.tolist()
    ([3.0, 2.5, 2.0, 1.0], [0, 1, 2, 2], [0.5, 0.5, 0.5, 1.0])
    >>> ev.detection_rate_at(1), ev.precision, ev.average_precision
    (0.5, 0.5, 0.75)
    >>> ev.as_dict()["true_positives"], ev.as_dict()["false_positives"]
    (2, 2)
    """

    n_images: int
    n_ground_truth: int
    n_detections: int
    true_positives: int
    false_positives: int
    detection_rate: float
    precision: float
    average_precision: float
    thresholds: np.ndarray
    curve_false_positives: np.ndarray
    curve_detection_rate: np.ndarray
    iou_threshold: float

    def detection_rate_at(self, false_positives: int) -> float:
        """Best detection rate reachable with at most ``false_positives`` false positives."""
        ok = self.curve_false_positives <= false_positives
        return float(self.curve_detection_rate[ok].max()) if ok.any() else 0.0

    def as_dict(self) -> dict:
        """JSON-friendly summary (without the curve arrays)."""
        return {
            "n_images": self.n_images,
            "n_ground_truth": self.n_ground_truth,
            "n_detections": self.n_detections,
            "true_positives": self.true_positives,
            "false_positives": self.false_positives,
            "detection_rate": self.detection_rate,
            "precision": self.precision,
            "average_precision": self.average_precision,
            "iou_threshold": self.iou_threshold,
        }


def evaluate_detections(
    detections: Mapping[str, tuple[np.ndarray, np.ndarray]],
    ground_truth: Mapping[str, np.ndarray],
    *,
    iou_threshold: float = 0.3,
    ignore: Mapping[str, np.ndarray] | None = None,
) -> DetectionEvaluation:
    """Evaluate detections on an image set.

    Parameters
    ----------
    detections : mapping image -> (boxes (n, 4), scores (n,))
        One entry per image that was run, also those with no detection (so that images without
        faces count).
    ground_truth : mapping image -> boxes (m, 4)
        Images missing here have no object: all their detections are false positives. Images
        present here but missing from ``detections`` are refused (they were not run).
    iou_threshold : float, default=0.3
        Minimum IoU for a match (0.3 suits detectors whose boxes are framed differently from
        the annotation; 0.5 is the PASCAL criterion).
    ignore : mapping image -> boxes (k, 4), optional
        Ignore regions (crowds, ``difficult`` objects): detections there that match no
        ground-truth box count neither as true nor as false positives.

    Returns
    -------
    DetectionEvaluation

    Examples
    --------
    >>> gt = {"a.png": np.array([[0, 0, 10, 10]])}
    >>> dets = {"a.png": (np.array([[0, 0, 10, 10], [40, 40, 9, 9]]), np.array([2.0, 1.0])),
    ...         "b.png": (np.array([[5, 5, 9, 9]]), np.array([0.5]))}
    >>> ev = evaluate_detections(dets, gt)
    >>> ev.true_positives, ev.false_positives, ev.detection_rate
    (1, 2, 1.0)
    """
    missing = [k for k in ground_truth if k not in detections]
    if missing:
        raise ValueError(
            f"detections: {len(missing)} annotated image(s) have no entry (not run?), "
            f"e.g. {missing[0]!r}; give an empty result for images with no detection"
        )
    all_scores, all_tp = [], []
    n_gt = 0
    for name, (boxes, scores) in detections.items():
        gt = ground_truth.get(name, np.zeros((0, 4)))
        n_gt += len(gt)
        ign = None if ignore is None else ignore.get(name)
        matched, order = match_detections(boxes, scores, gt, iou_threshold=iou_threshold,
                                          ignore=ign)
        m = matched[order]
        keep = m != IGNORED
        all_scores.append(np.asarray(scores, dtype=np.float64)[order][keep])
        all_tp.append(m[keep] >= 0)
    scores = np.concatenate(all_scores) if all_scores else np.zeros(0)
    tp = np.concatenate(all_tp) if all_tp else np.zeros(0, dtype=bool)
    order = np.argsort(-scores, kind="stable")
    scores, tp = scores[order], tp[order]
    ctp = np.cumsum(tp)
    cfp = np.cumsum(~tp)
    # one curve point per distinct score: the last index of each run of equal scores
    last = np.flatnonzero(np.r_[scores[1:] != scores[:-1], True]) if scores.size else scores
    last = last.astype(np.int64)
    rate = ctp / n_gt if n_gt else np.zeros_like(ctp, dtype=np.float64)
    n_det = int(scores.size)
    n_tp = int(ctp[-1]) if n_det else 0
    return DetectionEvaluation(
        n_images=len(detections),
        n_ground_truth=n_gt,
        n_detections=n_det,
        true_positives=n_tp,
        false_positives=n_det - n_tp,
        detection_rate=n_tp / n_gt if n_gt else 0.0,
        precision=n_tp / n_det if n_det else 0.0,
        average_precision=_average_precision(ctp, cfp, n_gt),
        thresholds=scores[last],
        curve_false_positives=cfp[last].astype(np.int64),
        curve_detection_rate=np.asarray(rate, dtype=np.float64)[last],
        iou_threshold=iou_threshold,
    )


def _average_precision(ctp: np.ndarray, cfp: np.ndarray, n_gt: int) -> float:
    if n_gt == 0 or ctp.size == 0:
        return 0.0
    recall = np.r_[0.0, ctp / n_gt]
    precision = np.r_[1.0, ctp / (ctp + cfp)]
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    return float(np.sum(np.diff(recall) * precision[1:]))
