"""Matching detections to ground-truth boxes.

Boxes are ``(x, y, w, h)`` rows. Matching is greedy by decreasing score: each detection takes the
still-unmatched ground-truth box it overlaps most, if that overlap reaches the IoU threshold; a
detection that finds none is a false positive. Because detections are processed in score order,
the matching at any score cut-off is the prefix of this one, so one pass gives the whole curve.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array

__all__ = ["iou_matrix", "match_detections"]


def _boxes(b, name: str) -> np.ndarray:
    arr = check_array(b, name, dtype=np.float64, allow_empty=True)
    if arr.size == 0:
        return arr.reshape(0, 4)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{name}: expected boxes of shape (n, 4) as (x, y, w, h), got {arr.shape}")
    if (arr[:, 2:] <= 0).any():
        raise ValueError(f"{name}: boxes must have positive width and height")
    return arr


def iou_matrix(a, b) -> np.ndarray:
    """Intersection over union of every box of ``a`` with every box of ``b``.

    Parameters
    ----------
    a : array-like of shape (n, 4)
    b : array-like of shape (m, 4)
        Boxes as (x, y, w, h) in pixels.

    Returns
    -------
    ndarray of shape (n, m), float64 in [0, 1]
    """
    a, b = _boxes(a, "a"), _boxes(b, "b")
    ax2, ay2 = a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx2, by2 = b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    iw = np.minimum(ax2[:, None], bx2[None]) - np.maximum(a[:, 0][:, None], b[:, 0][None])
    ih = np.minimum(ay2[:, None], by2[None]) - np.maximum(a[:, 1][:, None], b[:, 1][None])
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    union = (a[:, 2] * a[:, 3])[:, None] + (b[:, 2] * b[:, 3])[None] - inter
    return inter / union


def match_detections(
    detections, scores, ground_truth, *, iou_threshold: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy score-ordered matching of one image's detections to its ground truth.

    Parameters
    ----------
    detections : array-like of shape (n, 4)
    scores : array-like of shape (n,)
        Higher is more confident. Ties keep the input order.
    ground_truth : array-like of shape (m, 4)
    iou_threshold : float, default=0.5
        Minimum IoU for a match, in (0, 1].

    Returns
    -------
    matched : ndarray of shape (n,), int64
        Index of the ground-truth box each detection matched, or -1 (a false positive).
    order : ndarray of shape (n,), int64
        The score order used (indices into ``detections``, most confident first).
    """
    if not 0 < iou_threshold <= 1:
        raise ValueError(f"iou_threshold: must be in (0, 1], got {iou_threshold!r}")
    det = _boxes(detections, "detections")
    gt = _boxes(ground_truth, "ground_truth")
    sc = check_array(scores, "scores", ndim=1, dtype=np.float64, allow_empty=True)
    if sc.shape[0] != det.shape[0]:
        raise ValueError(f"scores: has {sc.shape[0]} entries for {det.shape[0]} detections")
    order = np.argsort(-sc, kind="stable")
    matched = np.full(det.shape[0], -1, dtype=np.int64)
    if det.shape[0] == 0 or gt.shape[0] == 0:
        return matched, order
    iou = iou_matrix(det, gt)
    taken = np.zeros(gt.shape[0], dtype=bool)
    for i in order:  # n detections per image: tens at most, the loop is over matches not pixels
        cand = np.where(taken, -1.0, iou[i])
        j = int(np.argmax(cand))
        if cand[j] >= iou_threshold:
            matched[i] = j
            taken[j] = True
    return matched, order
