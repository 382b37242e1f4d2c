"""Matching detections to ground-truth boxes.

Boxes are ``(x, y, w, h)`` rows. Matching is greedy by decreasing score: each detection takes the
still-unmatched ground-truth box it overlaps most, if that overlap reaches the IoU threshold; a
detection that finds none is a false positive, unless it lies in an *ignore region* (a crowd, a
``difficult`` or an "ignore" box of the annotation), then it counts neither way. Because
detections are processed in score order, the matching at any score cut-off is the prefix of this
one, so one pass gives the whole curve.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from .._validation import check_array
from ..boxes import check_boxes, coverage_matrix, iou_matrix

__all__ = ["IGNORED", "iou_matrix", "match_detections"]

IGNORED = -2
"""``matched`` value of a detection that fell in an ignore region (neither TP nor FP)."""


@njit(cache=True, nogil=True)
def _greedy(iou, order, thr):
    n, m = iou.shape
    matched = np.full(n, -1, dtype=np.int64)
    taken = np.zeros(m, dtype=np.bool_)
    for a in range(n):
        i = order[a]
        best, jbest = -1.0, -1
        for j in range(m):  # first maximum, as np.argmax
            v = -1.0 if taken[j] else iou[i, j]
            if v > best:
                best, jbest = v, j
        if jbest >= 0 and best >= thr:
            matched[i] = jbest
            taken[jbest] = True
    return matched


def match_detections(
    detections: ArrayLike, scores: ArrayLike, ground_truth: ArrayLike, *,
    iou_threshold: float = 0.3, ignore: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy score-ordered matching of one image's detections to its ground truth.

    Parameters
    ----------
    detections : array-like of shape (n, 4)
    scores : array-like of shape (n,)
        Higher is more confident. Ties keep the input order.
    ground_truth : array-like of shape (m, 4)
    iou_threshold : float, default=0.3
        Minimum IoU for a match, in (0, 1].
    ignore : array-like of shape (k, 4), optional
        Ignore regions: a detection left unmatched whose area lies in one of them by at least
        ``iou_threshold`` (intersection over the detection's area, as COCO treats crowds) is
        neither a true nor a false positive.

    Returns
    -------
    matched : ndarray of shape (n,), int64
        Index of the ground-truth box each detection matched, -1 (a false positive) or
        :data:`IGNORED` (-2).
    order : ndarray of shape (n,), int64
        The score order used (indices into ``detections``, most confident first).

    Examples
    --------
    >>> matched, order = match_detections([[0, 0, 10, 10], [50, 50, 9, 9]], [0.5, 0.9],
    ...                                   [[1, 0, 10, 10]], ignore=[[45, 45, 20, 20]])
    >>> matched.tolist(), order.tolist()
    ([0, -2], [1, 0])
    """
    if not 0 < iou_threshold <= 1:
        raise ValueError(f"iou_threshold: must be in (0, 1], got {iou_threshold!r}")
    det = check_boxes(detections, "detections")
    gt = check_boxes(ground_truth, "ground_truth")
    sc = check_array(scores, "scores", ndim=1, dtype=np.float64, allow_empty=True)
    if sc.shape[0] != det.shape[0]:
        raise ValueError(f"scores: has {sc.shape[0]} entries for {det.shape[0]} detections")
    order = np.argsort(-sc, kind="stable")
    if det.shape[0] == 0 or gt.shape[0] == 0:
        matched = np.full(det.shape[0], -1, dtype=np.int64)
    else:
        matched = _greedy(iou_matrix(det, gt), order, float(iou_threshold))
    if ignore is not None:
        ign = check_boxes(ignore, "ignore")
        free = matched < 0
        if len(ign) and free.any():
            frac = coverage_matrix(det[free], ign).max(axis=1)
            idx = np.flatnonzero(free)[frac >= iou_threshold]
            matched[idx] = IGNORED
    return matched, order
