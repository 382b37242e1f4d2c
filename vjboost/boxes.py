"""Box maths in one place: IoU, non-maximum suppression (by IoU, and of boxes inside better
ones), OpenCV's grouping, clipping.

Boxes are ``(x, y, w, h)`` rows: top-left corner and size, in pixels.

:func:`group_rectangles` reproduces ``cv::groupRectangles(rects, groupThreshold, eps)`` of
OpenCV 4.x exactly: equivalence classes of the "similar rectangles" relation (transitive
closure), class averages rounded half-to-even after multiplying the integer sums by the float32
``1/n``, classes with ``n <= min_neighbors`` dropped, and small classes lying inside a
well-supported bigger one removed. OpenCV's partition compares every pair of rectangles; here
rectangles are binned by size level and sorted by (row, x), and each one is compared only with
those of its own or smaller levels whose corner lies within the largest tolerance of the pair
(one binary search per row), so that an image with 114,000 raw windows groups in about half a
second with the same classes, where ``cv2.groupRectangles`` takes 85 s (``tools/bench_vjeval.py``,
same run, loaded machine).

:class:`WindowGroups` keeps that partition of one image's raw windows: the partition does not
depend on ``min_neighbors``, so a sweep over thresholds partitions once and only re-selects.
:func:`group_detections` is the grouping behind the detector's output and the evaluation sweep:
both return the same boxes, scores and neighbour counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, DTypeLike

from ._memory import check_memory
from ._validation import check_array

#: Up to this many rectangles (or groups), grouping compares every pair in NumPy: a photo's
#: few hundred raw windows group in milliseconds with nothing to compile; the near-linear
#: search below (numba) pays for its compilation on the many windows of an evaluation sweep.
_FEW_RECTS = 1024

#: what a detection's score can be (:meth:`WindowGroups.select`): ``"best"`` the best window's
#: score; ``"neighbors"`` the group's window count, the best score breaking ties; ``"sum"`` the
#: sum of the group's window scores; ``"margin"`` the sum of their margins over an offset (a
#: cascade's last-stage threshold: a window count weighted by confidence)
GROUP_SCORES = ("best", "neighbors", "sum", "margin")

#: what a detector's detection score can be: a group score, or ``"verified"``, the margin
#: rescored by the model's verifier (:mod:`vjboost.cascade.verifier`, which needs the image)
DETECTION_SCORES = (*GROUP_SCORES, "verified")


def _check_score(score: str) -> None:
    if score not in GROUP_SCORES:
        raise ValueError(f"score: expected one of {GROUP_SCORES}, got {score!r}")


def _group_score(score: str, best: np.ndarray, cnt: np.ndarray, scores: np.ndarray,
                 offset: float = 0.0, labels=None, n_classes: int = 0) -> np.ndarray:
    """Each detection's ``score`` (:data:`GROUP_SCORES`) from its best window score ``best``
    and window count ``cnt``; for ``"sum"`` and ``"margin"``, the window scores ``scores``
    less ``offset`` summed per class of ``labels`` (None: single windows, their own score;
    never ``scores`` itself when ``offset`` is 0: the caller passes a copy)."""
    if score == "best":
        return best
    if score == "neighbors":
        return cnt.astype(np.float64) + 1e-6 * np.tanh(best)
    weights = scores - offset if offset else scores
    if labels is None:
        return weights
    return np.bincount(labels, weights=weights, minlength=n_classes)

__all__ = [
    "DETECTION_SCORES",
    "GROUP_SCORES",
    "WindowGroups",
    "check_boxes",
    "clip_boxes",
    "coverage_matrix",
    "group_detections",
    "group_rectangles",
    "inner_boxes",
    "iou_matrix",
    "nms",
    "overlap_counts",
    "similar_classes",
    "drop_inside",
    "suppress_inside",
]


# ------------------------------------------------------------------------------------------------
# Validation and IoU
# ------------------------------------------------------------------------------------------------


def check_boxes(boxes: ArrayLike, name: str = "boxes", *, dtype: DTypeLike = np.float64,
                positive: bool = True) -> np.ndarray:
    """Validate an ``(n, 4)`` array of ``(x, y, w, h)`` boxes.

    Parameters
    ----------
    boxes : array-like of shape (n, 4)
    name : str
        Argument name used in error messages.
    dtype : numpy dtype, default=float64
    positive : bool, default=True
        Refuse boxes whose width or height is not positive.

    Returns
    -------
    ndarray of shape (n, 4)

    Examples
    --------
    >>> check_boxes([[0, 0, 2, 3]]).shape
    (1, 4)
    """
    arr = check_array(boxes, name, dtype=dtype, allow_empty=True)
    if arr.size == 0:
        return arr.reshape(0, 4)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{name}: expected boxes of shape (n, 4) as (x, y, w, h), got {arr.shape}")
    if positive and (arr[:, 2:] <= 0).any():
        raise ValueError(f"{name}: boxes must have positive width and height")
    return arr


def iou_matrix(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Intersection over union of every box of ``a`` with every box of ``b``.

    Parameters
    ----------
    a : array-like of shape (n, 4)
    b : array-like of shape (m, 4)
        Boxes as (x, y, w, h) in pixels, positive width and height.

    Returns
    -------
    ndarray of shape (n, m), float64 in [0, 1]

    Examples
    --------
    >>> iou_matrix([[0, 0, 10, 10]], [[5, 0, 10, 10], [20, 20, 5, 5]]).round(3).tolist()
    [[0.333, 0.0]]
    """
    a, b = check_boxes(a, "a"), check_boxes(b, "b")
    inter = _intersections(a, b)
    union = (a[:, 2] * a[:, 3])[:, None] + (b[:, 2] * b[:, 3])[None] - inter
    return inter / union


def _intersections(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax2, ay2 = a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx2, by2 = b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    iw = np.minimum(ax2[:, None], bx2[None]) - np.maximum(a[:, 0][:, None], b[:, 0][None])
    ih = np.minimum(ay2[:, None], by2[None]) - np.maximum(a[:, 1][:, None], b[:, 1][None])
    return np.clip(iw, 0, None) * np.clip(ih, 0, None)


def coverage_matrix(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Fraction of each box of ``a`` covered by each box of ``b`` (intersection / area of a).

    How COCO decides that a detection falls in a crowd region.

    Parameters
    ----------
    a : array-like of shape (n, 4)
    b : array-like of shape (m, 4)
        Boxes as (x, y, w, h), positive width and height.

    Returns
    -------
    ndarray of shape (n, m), float64 in [0, 1]

    Examples
    --------
    >>> coverage_matrix([[0, 0, 10, 10]], [[5, 0, 20, 20]]).tolist()
    [[0.5]]
    """
    a, b = check_boxes(a, "a"), check_boxes(b, "b")
    return _intersections(a, b) / (a[:, 2] * a[:, 3])[:, None]


def clip_boxes(boxes: ArrayLike, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Intersect ``(x, y, w, h)`` boxes with the image rectangle; drop empty ones.

    Parameters
    ----------
    boxes : array-like of int, shape (N, 4)
    width, height : int
        Image size in pixels.

    Returns
    -------
    clipped : ndarray of int32, shape (M, 4)
    kept : ndarray of int64, shape (M,)
        Indices of the input boxes kept.

    Examples
    --------
    >>> clip_boxes([[-5, -5, 10, 10], [200, 0, 5, 5]], 100, 50)[0].tolist()
    [[0, 0, 5, 5]]
    """
    b = np.asarray(boxes, dtype=np.int64).reshape(-1, 4)
    x0 = np.maximum(b[:, 0], 0)
    y0 = np.maximum(b[:, 1], 0)
    x1 = np.minimum(b[:, 0] + b[:, 2], width)
    y1 = np.minimum(b[:, 1] + b[:, 3], height)
    ok = (x1 > x0) & (y1 > y0)
    out = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)[ok]
    return out.astype(np.int32), np.flatnonzero(ok)


def inner_boxes(boxes: ArrayLike, frame: ArrayLike) -> np.ndarray:
    """The sub-rectangle ``frame`` of every box, in pixels, rounded to integers.

    A detector trained with context around its objects scans windows larger than the objects;
    ``frame`` says where the object lies in its window (a model's ``params["object_box"]``), so that
    it reports object boxes.

    Parameters
    ----------
    boxes : array-like, shape (N, 4)
        ``(x, y, w, h)`` windows in pixels.
    frame : (fx, fy, fw, fh)
        The object's box as fractions of a window's width and height (``(0, 0, 1, 1)``: the
        window itself).

    Returns
    -------
    ndarray of int32, shape (N, 4)
        ``(x + fx·w, y + fy·h, fw·w, fh·h)``, each rounded half to even.

    Examples
    --------
    >>> inner_boxes([[10, 20, 40, 40]], (0.125, 0.125, 0.75, 0.75)).tolist()
    [[15, 25, 30, 30]]
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    fx, fy, fw, fh = (float(v) for v in frame)
    out = np.stack([b[:, 0] + fx * b[:, 2], b[:, 1] + fy * b[:, 3], fw * b[:, 2], fh * b[:, 3]],
                   axis=1)
    return np.rint(out).astype(np.int32)


# ------------------------------------------------------------------------------------------------
# Non-maximum suppression and overlap counts
# ------------------------------------------------------------------------------------------------


def _iou_threshold(value: Any, name: str = "iou_threshold") -> float:
    """An IoU threshold: a number (not a bool) in ``[0, 1]``, else a ``ValueError`` naming
    ``name``."""
    if isinstance(value, bool) or not isinstance(
            value, int | float | np.integer | np.floating) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: expected a value in [0, 1], got {value!r}")
    return float(value)


def nms(boxes: ArrayLike, scores: ArrayLike, iou_threshold: float = 0.3) -> np.ndarray:
    """Greedy non-maximum suppression.

    Parameters
    ----------
    boxes : array-like, shape (N, 4)
        ``(x, y, w, h)``.
    scores : array-like, shape (N,)
        Higher is better; ties keep the earlier box.
    iou_threshold : float
        A box is suppressed when its IoU with an already kept box exceeds this.

    Returns
    -------
    ndarray of int64
        Indices of kept boxes, best score first.

    Examples
    --------
    >>> nms([[0, 0, 10, 10], [1, 1, 10, 10], [50, 50, 10, 10]], [0.5, 0.9, 0.1]).tolist()
    [1, 2]
    """
    b = check_array(boxes, "boxes", allow_empty=True, dtype=np.float64).reshape(-1, 4)
    s = check_array(scores, "scores", allow_empty=True, dtype=np.float64).reshape(-1)
    if b.shape[0] != s.shape[0]:
        raise ValueError(f"scores: {s.shape[0]} values for {b.shape[0]} boxes")
    thr = _iou_threshold(iou_threshold)
    order = np.argsort(-s, kind="stable")
    return _nms(b, order, thr)


@njit(cache=True, nogil=True)
def _nms(b, order, thr):
    n = order.shape[0]
    dead = np.zeros(n, dtype=np.bool_)
    keep = np.empty(n, dtype=np.int64)
    m = 0
    for a in range(n):
        i = order[a]
        if dead[i]:
            continue
        keep[m] = i
        m += 1
        ax1, ay1 = b[i, 0], b[i, 1]
        ax2, ay2 = ax1 + b[i, 2], ay1 + b[i, 3]
        area_a = b[i, 2] * b[i, 3]
        for c in range(a + 1, n):
            j = order[c]
            if dead[j]:
                continue
            iw = min(ax2, b[j, 0] + b[j, 2]) - max(ax1, b[j, 0])
            ih = min(ay2, b[j, 1] + b[j, 3]) - max(ay1, b[j, 1])
            if iw <= 0 or ih <= 0:
                continue
            inter = iw * ih
            union = area_a + b[j, 2] * b[j, 3] - inter
            if union > 0 and inter / union > thr:
                dead[j] = True
    return keep[:m]


def suppress_inside(boxes: ArrayLike, scores: ArrayLike, coverage: float = 0.5) -> np.ndarray:
    """Which boxes lie outside every better-scored box: the mask of those to keep.

    A box is dropped when at least ``coverage`` of its area lies inside another box that scores
    higher (ties drop nothing). Objects such as faces do not nest, so a detection mostly inside
    a better one is a part of the object passing for a whole one, or a duplicate that IoU-based
    grouping kept because the two differ in size. Every box is compared with every better box,
    dropped or not, so the result does not depend on the boxes' order.

    Parameters
    ----------
    boxes : array-like, shape (N, 4)
        ``(x, y, w, h)``, positive width and height.
    scores : array-like, shape (N,)
        Higher is better.
    coverage : float in (0, 1], default=0.5
        Share of a box's area (intersection / its own area) inside a better box that drops it.

    Returns
    -------
    ndarray of bool, shape (N,)
        True for the boxes kept, in the input order.

    Examples
    --------
    >>> suppress_inside([[0, 0, 40, 40], [10, 10, 20, 20], [30, 30, 20, 20]],
    ...                 [2.0, 3.0, 1.0]).tolist()
    [True, True, True]
    >>> suppress_inside([[0, 0, 40, 40], [10, 10, 20, 20], [30, 30, 20, 20]],
    ...                 [4.0, 3.0, 1.0]).tolist()
    [True, False, True]
    """
    b = check_boxes(boxes, "boxes")
    s = check_array(scores, "scores", allow_empty=True, dtype=np.float64).reshape(-1)
    if b.shape[0] != s.shape[0]:
        raise ValueError(f"scores: {s.shape[0]} values for {b.shape[0]} boxes")
    if not (isinstance(coverage, int | float) and 0.0 < coverage <= 1.0):
        raise ValueError(f"coverage: expected a share in (0, 1], got {coverage!r}")
    if not np.isfinite(s).all():
        raise ValueError("scores: expected finite values")
    # the mask comes from here, not from the kernel: each array numba allocates in a kernel is
    # one more function to compile on a first detection
    keep = np.ones(b.shape[0], dtype=np.bool_)
    _suppress_inside(b, s, np.argsort(-s, kind="stable"), float(coverage), keep)
    return keep


def drop_inside(boxes: np.ndarray, scores: np.ndarray, coverage: float | None,
                *others: np.ndarray) -> tuple[np.ndarray, ...]:
    """``boxes``, ``scores`` and any ``others`` (arrays with a row per box) without the boxes
    :func:`suppress_inside` drops: the one way the detector and every evaluation apply it.

    Parameters
    ----------
    boxes : ndarray, shape (N, 4)
    scores : ndarray, shape (N,)
    coverage : float in (0, 1] or None
        As :func:`suppress_inside`; None keeps every box.
    *others : ndarray, shape (N, ...)

    Returns
    -------
    tuple of ndarray
        ``(boxes, scores, *others)``, filtered alike.

    Examples
    --------
    >>> b = np.array([[0, 0, 40, 40], [10, 10, 20, 20]])
    >>> kept, sc, n = drop_inside(b, np.array([2.0, 1.0]), 0.5, np.array([5, 3]))
    >>> kept.tolist(), sc.tolist(), n.tolist()
    ([[0, 0, 40, 40]], [2.0], [5])
    """
    if coverage is None or len(boxes) < 2:
        return (boxes, scores, *others)
    keep = suppress_inside(boxes, scores, coverage)
    return tuple(a[keep] for a in (boxes, scores, *others))


@njit(cache=True, nogil=True)
def _suppress_inside(b, s, order, cov, keep):
    # clears keep[i] for every box i inside a better-scored one
    n = order.shape[0]
    for a in range(1, n):
        i = order[a]
        x1, y1 = b[i, 0], b[i, 1]
        x2, y2 = x1 + b[i, 2], y1 + b[i, 3]
        need = cov * b[i, 2] * b[i, 3]
        for c in range(a):
            j = order[c]
            if s[j] <= s[i]:
                break  # sorted: no better box follows
            iw = min(x2, b[j, 0] + b[j, 2]) - max(x1, b[j, 0])
            ih = min(y2, b[j, 1] + b[j, 3]) - max(y1, b[j, 1])
            if iw > 0 and ih > 0 and iw * ih >= need:
                keep[i] = False
                break


def overlap_counts(boxes: ArrayLike, iou_threshold: float) -> np.ndarray:
    """Per box, the number of boxes (itself included) overlapping it at IoU > ``iou_threshold``.

    Memory is linear in the number of boxes (boxes sorted by ``x`` are compared only while their
    ``x`` ranges overlap).

    Parameters
    ----------
    boxes : array-like, shape (N, 4)
        ``(x, y, w, h)`` with positive sizes.
    iou_threshold : float in [0, 1]

    Returns
    -------
    ndarray of int32, shape (N,)

    Examples
    --------
    >>> overlap_counts([[0, 0, 10, 10], [1, 0, 10, 10], [50, 0, 10, 10]], 0.5).tolist()
    [2, 2, 1]
    """
    b = check_array(boxes, "boxes", allow_empty=True, dtype=np.float64).reshape(-1, 4)
    thr = _iou_threshold(iou_threshold)
    order = np.argsort(b[:, 0], kind="stable")
    return _overlap_counts(b, order, thr)


@njit(cache=True, nogil=True)
def _overlap_counts(b, order, thr):
    n = b.shape[0]
    out = np.zeros(n, dtype=np.int32)
    for a in range(n):
        i = order[a]
        xi2 = b[i, 0] + b[i, 2]
        area_i = b[i, 2] * b[i, 3]
        # itself: IoU 1 > thr unless thr is 1 (then nothing counts, as in the dense formula)
        if 1.0 > thr and area_i > 0:
            out[i] += 1
        for c in range(a + 1, n):
            j = order[c]
            if b[j, 0] >= xi2:
                break
            iw = min(xi2, b[j, 0] + b[j, 2]) - max(b[i, 0], b[j, 0])
            ih = min(b[i, 1] + b[i, 3], b[j, 1] + b[j, 3]) - max(b[i, 1], b[j, 1])
            if iw <= 0 or ih <= 0:
                continue
            inter = iw * ih
            union = area_i + b[j, 2] * b[j, 3] - inter
            if inter / max(union, 1e-12) > thr:
                out[i] += 1
                out[j] += 1
    return out


# ------------------------------------------------------------------------------------------------
# Grid over size levels (the near-linear neighbour search)
# ------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _bit_length(v: int) -> int:
    n = 0
    while v > 0:
        v >>= 1
        n += 1
    return n


@njit(cache=True, nogil=True)
def _grid(level, gx, gy, active):
    """Sort the active items by (level, cell x, cell y); return the order and level bounds.

    ``gx``/``gy`` are the cell coordinates of each item at its own level. Returns ``order``
    (active items sorted), the sorted keys, and ``lvl_lo``/``lvl_hi`` (64 levels) delimiting
    each level's run in ``order``.
    """
    n = level.shape[0]
    m = 0
    for i in range(n):
        if active[i]:
            m += 1
    idx = np.empty(m, dtype=np.int64)
    t = 0
    for i in range(n):
        if active[i]:
            idx[t] = i
            t += 1
    # lexicographic sort with three stable argsorts (last key first)
    o = idx[np.argsort(gy[idx], kind="mergesort")]
    o = o[np.argsort(gx[o], kind="mergesort")]
    o = o[np.argsort(level[o], kind="mergesort")]
    kl = level[o]
    kx = gx[o]
    ky = gy[o]
    lvl_lo = np.zeros(65, dtype=np.int64)
    lvl_hi = np.zeros(65, dtype=np.int64)
    for a in range(m):
        L = kl[a]
        if a == 0 or kl[a - 1] != L:
            lvl_lo[L] = a
        lvl_hi[L] = a + 1
    return o, kx, ky, lvl_lo, lvl_hi


@njit(cache=True, nogil=True)
def _lower(kx, ky, lo, hi, x, y):
    """First position in [lo, hi) whose key (kx, ky) is >= (x, y)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if kx[mid] < x or (kx[mid] == x and ky[mid] < y):
            lo = mid + 1
        else:
            hi = mid
    return lo


# ------------------------------------------------------------------------------------------------
# OpenCV's partition of similar rectangles
# ------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _find(parent: np.ndarray, i: int) -> int:
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:  # path compression
        nxt = parent[i]
        parent[i] = root
        i = nxt
    return root


@njit(cache=True, nogil=True)
def _similar(r, i, j, eps):
    # OpenCV's SimilarRects, with its order of operations
    delta = eps * (min(r[i, 2], r[j, 2]) + min(r[i, 3], r[j, 3])) * 0.5
    return (abs(r[i, 0] - r[j, 0]) <= delta and abs(r[i, 1] - r[j, 1]) <= delta
            and abs(r[i, 0] + r[i, 2] - r[j, 0] - r[j, 2]) <= delta
            and abs(r[i, 1] + r[i, 3] - r[j, 1] - r[j, 3]) <= delta)


@njit(cache=True, nogil=True)
def _labels_from_parent(parent):
    n = parent.shape[0]
    labels = np.empty(n, dtype=np.int64)
    remap = np.full(n, -1, dtype=np.int64)
    k = 0
    for i in range(n):
        r = _find(parent, i)
        if remap[r] < 0:
            remap[r] = k
            k += 1
        labels[i] = remap[r]
    return labels, k


def _classes_all_pairs(r: np.ndarray, eps: float) -> tuple[np.ndarray, int]:
    """OpenCV's partition as written (every pair compared), in NumPy: the path for a few
    hundred windows (a photo's detections), where compiling the near-linear search would cost
    more than it saves, and for sizes beyond that search's range.

    Components of the similarity graph by minimum-label propagation with pointer jumping; the
    label of a class is its first member, so numbering the labels in order gives the classes in
    order of first appearance, as OpenCV numbers them.
    """
    n = r.shape[0]
    check_memory(10 * n * n, f"the pairwise similarity of {n} rectangles",
                 advice="Group fewer rectangles at a time.")
    x, y, w, h = (r[:, d] for d in range(4))
    # OpenCV's SimilarRects, with its order of operations
    delta = eps * (np.minimum(w[:, None], w[None, :]) + np.minimum(h[:, None], h[None, :])) * 0.5
    adj = np.abs(x[:, None] - x[None, :]) <= delta
    adj &= np.abs(y[:, None] - y[None, :]) <= delta
    adj &= np.abs((x + w)[:, None] - (x + w)[None, :]) <= delta
    adj &= np.abs((y + h)[:, None] - (y + h)[None, :]) <= delta
    del delta
    lab = np.arange(n)
    while True:
        new = np.minimum(lab, np.where(adj, lab[None, :], n).min(axis=1, initial=n))
        new = new[new]
        if np.array_equal(new, lab):
            break
        lab = new
    first, labels = np.unique(lab, return_inverse=True)
    return labels.astype(np.int64).reshape(-1), int(first.shape[0])


def _classes(r: np.ndarray, eps: float) -> tuple[np.ndarray, int]:
    """Class label per rectangle (0..n_classes-1, in order of first appearance).

    Every delta of a pair involving rectangle i is at most ``D_i = eps·(w_i + h_i)/2``, and the
    coordinates are integers, so similar rectangles differ by at most ``K = floor(min(D_i, D_j))``
    in x and in y. Rectangles are binned by level ``L = bit_length(K)`` and, within a level, by
    rows of ``2^(L-1)`` pixels of y, sorted by x: the rectangles of level ``L <= L_i`` that can
    be similar to i are found by one binary search per row over ``|x - x_i| <= K``, so the pairs
    compared are few more than the similar ones (OpenCV compares all ``n²/2`` pairs).
    """
    if r.shape[0] <= _FEW_RECTS:
        return _classes_all_pairs(r, eps)
    level, kb, row, active, kmax, ok = _partition_keys(r, eps)
    if not ok:  # sizes beyond the grid's range
        return _classes_all_pairs(r, eps)
    idx = np.flatnonzero(active)
    order = idx[np.lexsort((r[idx, 0], row[idx], level[idx]))]
    return _partition_run(r, eps, order, level, kb, row, kmax)


@njit(cache=True, nogil=True)
def _partition_keys(r, eps):
    n = r.shape[0]
    level = np.zeros(n, dtype=np.int64)
    kb = np.zeros(n, dtype=np.int64)
    row = np.zeros(n, dtype=np.int64)
    active = np.zeros(n, dtype=np.bool_)
    kmax = np.full(65, -1, dtype=np.int64)
    for i in range(n):
        d = eps * (r[i, 2] + r[i, 3]) * 0.5
        if not d >= 0.0:  # negative (or NaN) bound: similar to nothing
            continue
        if d >= 4.0e18:
            return level, kb, row, active, kmax, False
        k = np.int64(d)
        L = _bit_length(k)
        level[i] = L
        kb[i] = k
        row[i] = r[i, 1] >> max(L - 1, 0)
        active[i] = True
        if k > kmax[L]:
            kmax[L] = k
    return level, kb, row, active, kmax, True


@njit(cache=True, nogil=True)
def _partition_run(r, eps, o, level, kb, row, kmax):
    n = r.shape[0]
    parent = np.arange(n)
    # work in sorted order: the candidates of a query are contiguous in memory
    m = o.shape[0]
    rs = np.empty((m, 4), dtype=np.int64)
    lv = np.empty(m, dtype=np.int64)
    kk = np.empty(m, dtype=np.int64)
    krow = np.empty(m, dtype=np.int64)
    lvl_lo = np.zeros(65, dtype=np.int64)
    lvl_hi = np.zeros(65, dtype=np.int64)
    for a in range(m):
        for d in range(4):
            rs[a, d] = r[o[a], d]
        lv[a] = level[o[a]]
        kk[a] = kb[o[a]]
        krow[a] = row[o[a]]
        if a == 0 or lv[a - 1] != lv[a]:
            lvl_lo[lv[a]] = a
        lvl_hi[lv[a]] = a + 1
    kx = rs[:, 0].copy()
    sparent = np.arange(m)
    for p in range(m):
        Li = lv[p]
        xi, yi = rs[p, 0], rs[p, 1]
        for L in range(Li + 1):
            lo, hi = lvl_lo[L], lvl_hi[L]
            if lo >= hi:
                continue
            b = min(kk[p], kmax[L])
            sh = max(L - 1, 0)
            for rw in range((yi - b) >> sh, ((yi + b) >> sh) + 1):
                a = _lower(krow, kx, lo, hi, rw, xi - b)
                if L == Li and a <= p:
                    a = p + 1  # same level: each pair once
                while a < hi and krow[a] == rw and kx[a] <= xi + b:
                    q = a
                    a += 1
                    if _similar(rs, p, q, eps):
                        ra = _find(sparent, p)
                        rb = _find(sparent, q)
                        if ra != rb:
                            if ra < rb:
                                sparent[rb] = ra
                            else:
                                sparent[ra] = rb
    # back to input order: the parent of each rectangle is the input index of its root
    for a in range(m):
        parent[o[a]] = o[_find(sparent, a)]
    return _labels_from_parent(parent)


def _as_rects(rects, name: str = "rects") -> np.ndarray:
    r = check_array(rects, name, allow_empty=True)
    if r.size == 0:
        return np.zeros((0, 4), dtype=np.int64)
    if r.ndim != 2 or r.shape[1] != 4:
        raise ValueError(f"{name}: expected an (N, 4) array of (x, y, w, h), got {r.shape}")
    if r.dtype.kind == "f" and (r != np.round(r)).any():
        raise ValueError(f"{name}: expected integer coordinates")
    return np.ascontiguousarray(r, dtype=np.int64)


def similar_classes(rects: ArrayLike, eps: float = 0.2) -> np.ndarray:
    """Equivalence-class label per rectangle under OpenCV's ``SimilarRects(eps)`` predicate.

    Parameters
    ----------
    rects : array-like of int, shape (N, 4)
        ``(x, y, w, h)``.
    eps : float
        Relative tolerance.

    Returns
    -------
    ndarray of int64, shape (N,)
        Labels ``0..k-1`` in order of first appearance.

    Examples
    --------
    >>> similar_classes([[0, 0, 20, 20], [3, 0, 20, 20], [6, 0, 20, 20], [60, 60, 20, 20]])
    array([0, 0, 0, 1])
    """
    r = _as_rects(rects)
    if r.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return _classes(r, float(eps))[0]


# ------------------------------------------------------------------------------------------------
# Class averages and the selection at one threshold
# ------------------------------------------------------------------------------------------------


def _class_stats(r, labels, k, sc):
    """Per class: OpenCV's rounded average (integer sums times the float32 ``1/n``, rounded
    half to even), the size and the best score (NaN scores ignored)."""
    cnt = np.bincount(labels, minlength=k).astype(np.int64)
    # float64 sums of integer coordinates are exact far beyond any image size
    sums = np.stack([np.bincount(labels, weights=r[:, d], minlength=k) for d in range(4)], axis=1)
    best = np.full(k, -np.inf)
    np.fmax.at(best, labels, sc)
    inv = np.float32(1.0) / cnt.astype(np.float32)
    avg = np.rint(sums.astype(np.int64).astype(np.float32) * inv[:, None]).astype(np.int64)
    return avg, cnt, best


@njit(cache=True, nogil=True)
def _inside(avg, cnt, i, j, eps):
    # OpenCV drops class i when it lies in the eps-expanded class j and j is better supported
    n1, n2 = cnt[i], cnt[j]
    dx = np.int64(np.rint(avg[j, 2] * eps))
    dy = np.int64(np.rint(avg[j, 3] * eps))
    return (avg[i, 0] >= avg[j, 0] - dx and avg[i, 1] >= avg[j, 1] - dy
            and avg[i, 0] + avg[i, 2] <= avg[j, 0] + avg[j, 2] + dx
            and avg[i, 1] + avg[i, 3] <= avg[j, 1] + avg[j, 3] + dy
            and (n2 > max(3, n1) or n1 < 3))


def _keep_classes(avg, cnt, thr: int, eps: float) -> np.ndarray:
    """Classes kept at ``min_neighbors = thr`` (OpenCV's filter): more than ``thr`` windows and
    not inside a better supported class. A few hundred classes, or degenerate sizes, compare
    every pair in NumPy; more use the near-linear grid search (compiled)."""
    alive = cnt > thr
    degenerate = not eps >= 0.0 or bool(((avg[:, 2] <= 0) | (avg[:, 3] <= 0))[alive].any())
    if degenerate or int(alive.sum()) <= _FEW_RECTS:
        idx = np.flatnonzero(alive)
        a, c = avg[idx], cnt[idx]
        check_memory(8 * len(idx) ** 2, f"the pairwise containment of {len(idx)} groups",
                     advice="Use a larger min_neighbors.")
        # OpenCV drops class i when it lies in the eps-expanded class j and j is better
        # supported
        dx = np.rint(a[:, 2] * eps).astype(np.int64)
        dy = np.rint(a[:, 3] * eps).astype(np.int64)
        inside = ((a[:, None, 0] >= (a[:, 0] - dx)[None, :])
                  & (a[:, None, 1] >= (a[:, 1] - dy)[None, :])
                  & ((a[:, 0] + a[:, 2])[:, None] <= (a[:, 0] + a[:, 2] + dx)[None, :])
                  & ((a[:, 1] + a[:, 3])[:, None] <= (a[:, 1] + a[:, 3] + dy)[None, :])
                  & ((c[None, :] > np.maximum(3, c)[:, None]) | (c < 3)[:, None]))
        np.fill_diagonal(inside, False)
        keep = np.zeros(len(cnt), dtype=bool)
        keep[idx] = ~inside.any(axis=1)
        return keep
    return _select(avg, cnt, thr, eps)


@njit(cache=True, nogil=True)
def _select(avg, cnt, thr, eps):
    """:func:`_keep_classes` for many classes of positive sizes, near-linear in their number.

    Class i can only lie inside class j when i's top-left corner is in j's expanded box, whose
    side is ``E_j = max(w_j + 2dx_j, h_j + 2dy_j)``; j sits at level ``bit_length(E_j)`` in the
    cell of its expanded corner, so i's corner falls in that cell or the next one.
    """
    k = cnt.shape[0]
    alive = cnt > thr
    keep = np.zeros(k, dtype=np.bool_)
    level = np.zeros(k, dtype=np.int64)
    gx = np.zeros(k, dtype=np.int64)
    gy = np.zeros(k, dtype=np.int64)
    for j in range(k):
        if not alive[j]:
            continue
        dx = np.int64(np.rint(avg[j, 2] * eps))
        dy = np.int64(np.rint(avg[j, 3] * eps))
        e = max(avg[j, 2] + 2 * dx, avg[j, 3] + 2 * dy)
        L = _bit_length(e)
        level[j] = L
        gx[j] = (avg[j, 0] - dx) >> L
        gy[j] = (avg[j, 1] - dy) >> L
    o, kx, ky, lvl_lo, lvl_hi = _grid(level, gx, gy, alive)
    for i in range(k):
        if not alive[i]:
            continue
        inside = False
        for L in range(65):
            lo, hi = lvl_lo[L], lvl_hi[L]
            if lo >= hi:
                continue
            qx = avg[i, 0] >> L
            qy = avg[i, 1] >> L
            for cx in range(qx - 1, qx + 1):
                a = _lower(kx, ky, lo, hi, cx, qy - 1)
                while a < hi and kx[a] == cx and ky[a] <= qy:
                    j = o[a]
                    a += 1
                    if j != i and _inside(avg, cnt, i, j, eps):
                        inside = True
                        break
                if inside:
                    break
            if inside:
                break
        keep[i] = not inside
    return keep


class WindowGroups:
    """The partition of one image's raw windows into OpenCV's classes of similar rectangles.

    The partition, the class averages, sizes and best scores do not depend on
    ``min_neighbors``; :meth:`select` applies a threshold. Partitioning once and selecting at
    every threshold is how a ``min_neighbors`` sweep stays fast.

    Parameters
    ----------
    boxes : array-like of int, shape (N, 4)
        Raw windows ``(x, y, w, h)``.
    scores : array-like of float, shape (N,), optional
        Per-window confidence (zeros when omitted).
    eps : float, default=0.2
        Similarity tolerance (OpenCV's detector uses 0.2).

    Attributes
    ----------
    labels_ : ndarray of int64, shape (N,)
        Class of each window (in order of first appearance).
    averages_ : ndarray of int64, shape (K, 4)
        OpenCV's rounded class averages.
    counts_ : ndarray of int64, shape (K,)
        Windows per class.
    best_ : ndarray of float64, shape (K,)
        Best window score per class.

    Examples
    --------
    >>> g = WindowGroups([[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20]])
    >>> boxes, scores, neighbors = g.select(2)
    >>> boxes.tolist(), neighbors.tolist()
    ([[10, 10, 20, 20]], [3])
    """

    def __init__(self, boxes, scores=None, *, eps: float = 0.2) -> None:
        r = _as_rects(boxes, "boxes")
        n = r.shape[0]
        sc = (np.zeros(n) if scores is None
              else check_array(scores, "scores", ndim=1, dtype=np.float64, allow_empty=True))
        if sc.shape[0] != n:
            raise ValueError(f"scores: {sc.shape[0]} values for {n} rectangles")
        self.eps = float(eps)
        self.rects = r
        self.scores = sc
        self._keep: dict[int, np.ndarray] = {}
        if n:
            self.labels_, k = _classes(r, self.eps)
            self.averages_, self.counts_, self.best_ = _class_stats(r, self.labels_, k, sc)
        else:
            self.labels_ = np.zeros(0, dtype=np.int64)
            self.averages_ = np.zeros((0, 4), dtype=np.int64)
            self.counts_ = np.zeros(0, dtype=np.int64)
            self.best_ = np.zeros(0)

    def _kept(self, thr: int) -> np.ndarray:
        """The classes kept at ``min_neighbors = thr`` (computed once per threshold: a
        detection's scores of every kind select the same classes)."""
        if thr not in self._keep:
            self._keep[thr] = (_keep_classes(self.averages_, self.counts_, thr, self.eps)
                               if len(self.counts_) else np.zeros(0, dtype=bool))
        return self._keep[thr]

    def select(self, min_neighbors: int, image_size: tuple[int, int] | None = None, *,
               score: str = "best", offset: float = 0.0, singles: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The detections at one threshold, as ``detectMultiScale`` returns them.

        Parameters
        ----------
        min_neighbors : int
            Classes with ``<= min_neighbors`` windows are dropped; ``<= 0`` returns the raw
            windows (each its own detection).
        image_size : (width, height), optional
            Clip the boxes to the image (and drop empty ones), as OpenCV does.
        score : {"best", "neighbors", "sum", "margin"}, default="best"
            What each detection's score is (:data:`GROUP_SCORES`).
        offset : float, default=0.0
            Subtracted from every window score for ``score="margin"`` (a cascade's last-stage
            threshold, so that each window counts by how far it passed).
        singles : bool, default=False
            With ``min_neighbors <= 0``: every group instead of the raw windows, groups of a
            single window included (OpenCV's averaged boxes and containment filter, at
            threshold 0; ``groupRectangles`` itself has no such threshold).

        Returns
        -------
        boxes : ndarray of int32, shape (M, 4)
        scores : ndarray of float64, shape (M,)
            Per detection, the ``score`` of its windows (of the window itself for raw windows).
        neighbors : ndarray of int32, shape (M,)
            Windows per group (1 for raw windows).

        Examples
        --------
        >>> g = WindowGroups([[10, 10, 20, 20], [11, 10, 20, 20], [30, 30, 20, 20]],
        ...                  [2.0, 3.0, 0.5])
        >>> g.select(1, score="margin", offset=1.0)[1].tolist()   # (2 - 1) + (3 - 1)
        [3.0]
        """
        _check_score(score)
        off = float(offset) if score == "margin" else 0.0
        thr = max(int(min_neighbors), 0) if singles else int(min_neighbors)
        if thr <= 0 and not singles:
            b = self.rects.astype(np.int32)
            best = self.scores.copy()
            cnt = np.ones(len(b), dtype=np.int32)
            sc = _group_score(score, best, cnt, best, off)  # best: a copy
        else:
            keep = self._kept(thr)
            b = self.averages_[keep].astype(np.int32)
            best = self.best_[keep].astype(np.float64)
            cnt = self.counts_[keep].astype(np.int32)
            sc = _group_score(score, best, cnt, self.scores, off, self.labels_,
                              len(self.counts_))
            if score in ("sum", "margin"):
                sc = sc[keep]
        if image_size is not None and len(b):
            b, kept = clip_boxes(b, int(image_size[0]), int(image_size[1]))
            sc, cnt = sc[kept], cnt[kept]
        return b, np.asarray(sc, np.float64), cnt


def group_rectangles(
    rects: ArrayLike,
    min_neighbors: int,
    eps: float = 0.2,
    scores: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """OpenCV's ``groupRectangles``: cluster similar rectangles and average each cluster.

    Parameters
    ----------
    rects : array-like of int, shape (N, 4)
        Raw windows ``(x, y, w, h)``.
    min_neighbors : int
        ``groupThreshold``: clusters with ``<= min_neighbors`` members are dropped. ``<= 0``
        returns the input unchanged (every count 1).
    eps : float, default=0.2
        Similarity tolerance (OpenCV's detector uses 0.2).
    scores : array-like of float, shape (N,), optional
        Per-window confidence; each output gets the maximum score of its cluster.

    Returns
    -------
    boxes : ndarray of int32, shape (M, 4)
    counts : ndarray of int32, shape (M,)
        Cluster sizes (OpenCV's ``numDetections``/``weights``).
    best : ndarray of float64, shape (M,)
        Maximum score per cluster (zeros when ``scores`` is None).

    Examples
    --------
    >>> r = [[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [100, 100, 20, 20]]
    >>> boxes, counts, best = group_rectangles(r, 2, scores=[0.5, 2.0, 1.0, 9.0])
    >>> boxes.tolist(), counts.tolist(), best.tolist()
    ([[10, 10, 20, 20]], [3], [2.0])
    """
    b, sc, cnt = WindowGroups(_as_rects(rects), scores, eps=eps).select(min_neighbors)
    return b, cnt, sc


def group_detections(boxes: ArrayLike, scores: ArrayLike, *, method: str = "opencv",
                     min_neighbors: int = 3, image_size: tuple[int, int] | None = None,
                     nms_iou: float = 0.3, groups: WindowGroups | None = None, score: str = "best",
                     offset: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Turn raw windows into detections: the grouping of the detector and of the evaluation.

    Parameters
    ----------
    boxes : array-like of int, shape (N, 4)
        Raw windows ``(x, y, w, h)``.
    scores : array-like of float, shape (N,)
        Per-window confidence.
    method : {"opencv", "nms", "none"}, default="opencv"
        ``"opencv"``: :class:`WindowGroups` (``groupRectangles`` with eps 0.2); ``"nms"``:
        windows that more than ``min_neighbors`` windows (themselves included) overlap at
        IoU > ``nms_iou``, then non-maximum suppression by score; ``"none"``: raw windows.
    min_neighbors : int, default=3
    image_size : (width, height), optional
        Clip the output to the image.
    nms_iou : float, default=0.3
    groups : WindowGroups, optional
        The partition of these windows when already computed (``method="opencv"``).
    score : {"best", "neighbors", "sum", "margin"}, default="best"
        Each detection's score (:meth:`WindowGroups.select`). ``"nms"`` and ``"none"`` keep
        single windows: their score is the window's (less ``offset`` for ``"margin"``;
        ``"neighbors"`` counts the overlapping windows).
    offset : float, default=0.0
        Subtracted from each window score for ``score="margin"``.

    Returns
    -------
    boxes : ndarray of int32, shape (M, 4)
    scores : ndarray of float64, shape (M,)
    neighbors : ndarray of int32, shape (M,)

    Examples
    --------
    >>> raw = [[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [90, 0, 20, 20]]
    >>> b, s, n = group_detections(raw, [1.0, 3.0, 2.0, 5.0], min_neighbors=2,
    ...                            image_size=(100, 100))
    >>> b.tolist(), s.tolist(), n.tolist()
    ([[10, 10, 20, 20]], [3.0], [3])
    """
    if method == "opencv":
        g = groups if groups is not None else WindowGroups(boxes, scores)
        return g.select(min_neighbors, image_size, score=score, offset=offset)
    _check_score(score)
    b = _as_rects(boxes, "boxes")
    sc = check_array(scores, "scores", ndim=1, dtype=np.float64, allow_empty=True)
    if sc.shape[0] != b.shape[0]:
        raise ValueError(f"scores: {sc.shape[0]} values for {b.shape[0]} boxes")
    if method == "nms":
        # counted at every min_neighbors: a kept window's neighbors (and its "neighbors"
        # score) are the windows overlapping it, also when none is dropped for too few
        c0 = overlap_counts(b, nms_iou)
        if min_neighbors > 0:
            ok = c0 > min_neighbors
            b, sc, c0 = b[ok], sc[ok], c0[ok]
        keep = nms(b, sc, nms_iou)
        b, sc, cnt = b[keep], sc[keep], c0[keep]
    elif method == "none":
        cnt = np.ones(len(b), dtype=np.int32)
    else:
        raise ValueError(f"method: expected 'opencv', 'nms' or 'none', got {method!r}")
    sc = _group_score(score, sc, cnt, sc, float(offset) if score == "margin" else 0.0)
    b = b.astype(np.int32)
    if image_size is not None and len(b):
        b, kept = clip_boxes(b, int(image_size[0]), int(image_size[1]))
        sc, cnt = sc[kept], cnt[kept]
    return b, np.asarray(sc, dtype=np.float64), np.asarray(cnt, dtype=np.int32)
