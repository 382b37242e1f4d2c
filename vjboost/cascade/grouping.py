"""Grouping of raw detection windows: OpenCV's ``groupRectangles`` and non-maximum suppression.

:func:`group_rectangles` reproduces ``cv::groupRectangles(rects, groupThreshold, eps)`` of
OpenCV 4.x exactly: equivalence classes of the "similar rectangles" relation (transitive
closure), class averages rounded half-to-even after multiplying the integer sums by the float32
``1/n``, classes with ``n <= min_neighbors`` dropped, and small classes lying inside a
well-supported bigger one removed. With per-window scores it also returns, per group, the best
score (as ``detectMultiScale3`` does with ``outputRejectLevels``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._validation import check_array

__all__ = ["clip_boxes", "group_rectangles", "nms", "similar_classes"]


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
def _classes(rects: np.ndarray, eps: float) -> tuple[np.ndarray, int]:
    """Class label per rectangle (0..n_classes-1, in order of first appearance)."""
    n = rects.shape[0]
    parent = np.arange(n)
    for i in range(n):
        xi, yi, wi, hi = rects[i, 0], rects[i, 1], rects[i, 2], rects[i, 3]
        for j in range(i + 1, n):
            xj, yj, wj, hj = rects[j, 0], rects[j, 1], rects[j, 2], rects[j, 3]
            delta = eps * (min(wi, wj) + min(hi, hj)) * 0.5
            if (abs(xi - xj) <= delta and abs(yi - yj) <= delta
                    and abs(xi + wi - xj - wj) <= delta and abs(yi + hi - yj - hj) <= delta):
                a = _find(parent, i)
                b = _find(parent, j)
                if a != b:
                    parent[b] = a
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


def similar_classes(rects: np.ndarray, eps: float = 0.2) -> np.ndarray:
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
    """
    r = _as_rects(rects)
    if r.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return _classes(r, float(eps))[0]


def _as_rects(rects) -> np.ndarray:
    r = check_array(rects, "rects", allow_empty=True)
    if r.size == 0:
        return np.zeros((0, 4), dtype=np.int64)
    if r.ndim != 2 or r.shape[1] != 4:
        raise ValueError(f"rects: expected an (N, 4) array of (x, y, w, h), got {r.shape}")
    if r.dtype.kind == "f" and (r != np.round(r)).any():
        raise ValueError("rects: expected integer coordinates")
    return np.ascontiguousarray(r, dtype=np.int64)


def group_rectangles(
    rects,
    min_neighbors: int,
    eps: float = 0.2,
    scores=None,
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
    """
    r = _as_rects(rects)
    n = r.shape[0]
    sc = (np.zeros(n) if scores is None
          else check_array(scores, "scores", ndim=1, dtype=np.float64, allow_empty=True))
    if sc.shape[0] != n:
        raise ValueError(f"scores: {sc.shape[0]} values for {n} rectangles")
    if min_neighbors <= 0 or n == 0:
        return r.astype(np.int32), np.ones(n, dtype=np.int32), sc.copy()
    labels, k = _classes(r, float(eps))
    boxes, counts, best = _group(r, labels, k, sc, int(min_neighbors), float(eps))
    return boxes, counts, best


@njit(cache=True, nogil=True)
def _group(r, labels, k, sc, thr, eps):
    sums = np.zeros((k, 4), dtype=np.int64)
    cnt = np.zeros(k, dtype=np.int64)
    best = np.full(k, -np.inf)
    for i in range(r.shape[0]):
        c = labels[i]
        for d in range(4):
            sums[c, d] += r[i, d]
        cnt[c] += 1
        if sc[i] > best[c]:
            best[c] = sc[i]
    avg = np.empty((k, 4), dtype=np.int64)
    for c in range(k):
        s = np.float32(1.0) / np.float32(cnt[c])
        for d in range(4):
            avg[c, d] = np.int64(np.rint(np.float32(sums[c, d]) * s))
    keep = np.zeros(k, dtype=np.bool_)
    for i in range(k):
        n1 = cnt[i]
        if n1 <= thr:
            continue
        x1, y1, w1, h1 = avg[i, 0], avg[i, 1], avg[i, 2], avg[i, 3]
        inside = False
        for j in range(k):
            n2 = cnt[j]
            if j == i or n2 <= thr:
                continue
            dx = np.int64(np.rint(avg[j, 2] * eps))
            dy = np.int64(np.rint(avg[j, 3] * eps))
            if (x1 >= avg[j, 0] - dx and y1 >= avg[j, 1] - dy
                    and x1 + w1 <= avg[j, 0] + avg[j, 2] + dx
                    and y1 + h1 <= avg[j, 1] + avg[j, 3] + dy
                    and (n2 > max(3, n1) or n1 < 3)):
                inside = True
                break
        keep[i] = not inside
    m = int(keep.sum())
    out = np.empty((m, 4), dtype=np.int32)
    oc = np.empty(m, dtype=np.int32)
    ob = np.empty(m, dtype=np.float64)
    t = 0
    for i in range(k):
        if keep[i]:
            for d in range(4):
                out[t, d] = avg[i, d]
            oc[t] = cnt[i]
            ob[t] = best[i]
            t += 1
    return out, oc, ob


def nms(boxes, scores, iou_threshold: float = 0.3) -> np.ndarray:
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
    """
    b = check_array(boxes, "boxes", allow_empty=True, dtype=np.float64).reshape(-1, 4)
    s = check_array(scores, "scores", allow_empty=True, dtype=np.float64).reshape(-1)
    if b.shape[0] != s.shape[0]:
        raise ValueError(f"scores: {s.shape[0]} values for {b.shape[0]} boxes")
    if not 0.0 <= iou_threshold <= 1.0:
        raise ValueError(f"iou_threshold: expected a value in [0, 1], got {iou_threshold}")
    order = np.argsort(-s, kind="stable")
    return _nms(b, order, float(iou_threshold))


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


def clip_boxes(boxes: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Intersect ``(x, y, w, h)`` boxes with the image rectangle; drop empty ones.

    Returns
    -------
    clipped : ndarray of int32, shape (M, 4)
    kept : ndarray of int64, shape (M,)
        Indices of the input boxes kept.
    """
    b = np.asarray(boxes, dtype=np.int64).reshape(-1, 4)
    x0 = np.maximum(b[:, 0], 0)
    y0 = np.maximum(b[:, 1], 0)
    x1 = np.minimum(b[:, 0] + b[:, 2], width)
    y1 = np.minimum(b[:, 1] + b[:, 3], height)
    ok = (x1 > x0) & (y1 > y0)
    out = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)[ok]
    return out.astype(np.int32), np.flatnonzero(ok)
