"""Multi-scale sliding-window detection with a boosted cascade.

The image is scaled, never the features: for every scale ``s`` the gray image is resized to
``round(W / s) × round(H / s)`` (OpenCV's bit-exact ``INTER_LINEAR_EXACT``), integral images are
built on it, and the cascade's base window slides over it. Every accepted window maps back to the
original image as ``round(x·s), round(y·s), round(W₀·s), round(H₀·s)``.

HAAR and LBP cascades run in one numba kernel over all (scale, row) pairs of a batch of scales,
multi-threaded, with per-scale tables of integral-image offsets for every tree node (rectangle
corners become flat array offsets once per scale, so the inner loop is loads, multiply-adds and a
compare). Cascades over other feature families run the generic path: per scale,
``family.prepare_image`` then stage-by-stage ``family.evaluate_at`` on the windows still alive.

``mode="opencv"`` (the default) reproduces ``cv2.CascadeClassifier.detectMultiScale`` of OpenCV 4.x
window for window: the scale list with ``minSize``/``maxSize`` (and the nearest-scale fallback), the
float32 and round-half-to-even arithmetic, the σ > 10 gate of Haar windows, the step of 2 pixels
below scale 2, the skip of the next position after a stage-0 rejection, the row cut-off caused by
OpenCV's stripe split, ``groupRectangles`` and the clipping of output boxes. ``mode="clean"`` drops
the stripe cut-off (every row is scanned) and lets ``step``/``skip_after_stage0`` be chosen freely.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numba
import numpy as np
from numba import njit, prange

from .._limits import check_pyramid_levels
from .._memory import check_memory
from .._threads import n_threads
from ..boxes import group_detections
from .model import CascadeModel

__all__ = [
    "CascadeDetector",
    "Detections",
    "detect_images",
    "detect_multiscale",
    "opencv_scales",
    "to_gray",
]

_CHUNK = 2  # rows per dynamically scheduled chunk (load balance between threads)
_BATCH_BYTES = 192 * 1024**2  # integral buffers per kernel call; larger images run in batches


# ------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------


@dataclass
class Detections:
    """Detections in one image.

    Attributes
    ----------
    boxes : ndarray of int32, shape (N, 4)
        ``(x, y, w, h)`` in pixels of the input image.
    scores : ndarray of float64, shape (N,)
        Confidence: the last stage's score (sum of leaf values) of the window, the maximum over
        the group for grouped output (like ``detectMultiScale3``'s ``levelWeights``).
    neighbors : ndarray of int32, shape (N,)
        Raw windows merged into each box (1 for raw output; ``detectMultiScale2``'s numbers).
    stages : ndarray of int32, shape (N,)
        Stages passed (always the cascade's stage count for accepted windows).
    """

    boxes: np.ndarray
    scores: np.ndarray
    neighbors: np.ndarray
    stages: np.ndarray
    raw_count: int = 0
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.boxes.shape[0])

    def records(self, source: str = "", frame: int = 0) -> list[dict[str, Any]]:
        """One dict per box: ``source, frame, x, y, w, h, score, neighbors``."""
        return [
            {"source": source, "frame": int(frame), "x": int(b[0]), "y": int(b[1]),
             "w": int(b[2]), "h": int(b[3]), "score": float(s), "neighbors": int(n)}
            for b, s, n in zip(self.boxes, self.scores, self.neighbors, strict=True)
        ]


# ------------------------------------------------------------------------------------------------
# Scale list (OpenCV's rules)
# ------------------------------------------------------------------------------------------------


def opencv_scales(
    window: tuple[int, int],
    image_size: tuple[int, int],
    scale_factor: float,
    min_size: tuple[int, int] = (0, 0),
    max_size: tuple[int, int] = (0, 0),
) -> list[np.float32]:
    """The scales ``detectMultiScale`` scans, as float32 values.

    Parameters
    ----------
    window : (width, height)
        Base window of the cascade.
    image_size : (width, height)
        Image size.
    scale_factor : float
        > 1.
    min_size, max_size : (width, height)
        Object size limits; a zero component in ``max_size`` means the image size.
    """
    W, H = window
    img_w, img_h = image_size
    if max_size[0] == 0 or max_size[1] == 0:
        max_size = (img_w, img_h)
    if img_w < W or img_h < H:
        return []
    all_scales: list[np.float32] = []
    factor = 1.0
    while True:
        if _rint(W * factor) > img_w or _rint(H * factor) > img_h:
            break
        all_scales.append(np.float32(factor))
        factor *= scale_factor
    scales = []
    for s in all_scales:
        ww, wh = _win(W, s), _win(H, s)
        if ww > max_size[0] or wh > max_size[1]:
            break
        if ww < min_size[0] or wh < min_size[1]:
            continue
        scales.append(s)
    if not scales and all_scales:
        d = [(min_size[0] - _win(W, s)) ** 2 + (min_size[1] - _win(H, s)) ** 2 for s in all_scales]
        scales.append(all_scales[int(np.argmin(d))])
    return scales


def _rint(v: float) -> int:
    return int(np.rint(v))


def _win(n: int, s: np.float32) -> int:
    """``cvRound(n * s)`` with the product in float32."""
    return int(np.rint(np.float32(n) * np.float32(s)))


# ------------------------------------------------------------------------------------------------
# Compiled cascade (flat arrays)
# ------------------------------------------------------------------------------------------------


@dataclass
class _Flat:
    kind: int  # 0 HAAR, 1 LBP
    window: tuple[int, int]  # (W, H)
    stage_first: np.ndarray
    stage_thr: np.ndarray
    tree_node0: np.ndarray
    tree_leaf0: np.ndarray
    node_left: np.ndarray
    node_right: np.ndarray
    node_thr: np.ndarray
    node_subset: np.ndarray
    leaves: np.ndarray
    # per node geometry: corner (dx, dy) pairs and plane (0 = sum, 1 = tilted)
    node_dx: np.ndarray
    node_dy: np.ndarray
    node_plane: np.ndarray
    node_w: np.ndarray
    tilted: bool
    shape: int  # 1 stumps, 2 three-node depth-2 trees, 3 other trees of depth <= 2, 0 any


def _root_kids(t) -> list[int]:
    """The root's children that are nodes (not leaves), left first."""
    return [int(c) for c in (t.left[0], t.right[0]) if c > 0]


def _depth2(t) -> bool:
    """At most two levels of nodes: the root's children are leaves or nodes with two leaves."""
    return all(int(t.left[c]) <= 0 and int(t.right[c]) <= 0 for c in _root_kids(t))


def _compile(model: CascadeModel) -> _Flat:
    model.validate()
    stages = model.stages
    trees = [t for s in stages for t in s.trees]
    stage_first = np.zeros(len(stages) + 1, dtype=np.int32)
    stage_first[1:] = np.cumsum([len(s.trees) for s in stages])
    stage_thr = np.array([s.reject_threshold for s in stages], dtype=np.float32)
    n_nodes = np.array([t.n_nodes for t in trees])
    # one entry past the last tree: tree t has tree_node0[t + 1] - tree_node0[t] nodes
    tree_node0 = np.zeros(len(trees) + 1, dtype=np.int32)
    tree_node0[1:] = np.cumsum(n_nodes)
    tree_leaf0 = np.zeros(len(trees), dtype=np.int32)
    tree_leaf0[1:] = np.cumsum(n_nodes + 1)[:-1]
    stumps_only = bool(n_nodes.max() == 1)
    if stumps_only:
        # OpenCV's stump path reads leaf 0 on the left whatever the child codes say.
        left = np.zeros(len(trees), dtype=np.int32)
        right = np.full(len(trees), -1, dtype=np.int32)
    else:
        left = np.concatenate([t.left for t in trees]).astype(np.int32)
        right = np.concatenate([t.right for t in trees]).astype(np.int32)
    if stumps_only:
        shape = 1
    elif all(_depth2(t) for t in trees):
        shape = 2 if n_nodes.min() == 3 else 3
    else:
        shape = 0
    feat = np.concatenate([t.feature for t in trees])
    thr = np.concatenate([t.threshold for t in trees]).astype(np.float32)
    leaves = np.concatenate([t.leaves for t in trees]).astype(np.float64)
    perm = None
    if shape >= 2:
        # Trees of depth <= 2 (OpenCV's alt2 has a root and one child, vjtrain's depth-2 trees a
        # root and two) are laid out root, left child, right child (those that are nodes), with
        # their four leaves by path (LL, LR, RL, RR; a leaf met at the root fills both of its
        # side's entries). The kernel then picks the second node and the leaf by arithmetic on
        # the two decisions instead of following child codes through branches.
        perm = np.empty(len(feat), dtype=np.int64)
        leaves = np.empty(4 * len(trees), dtype=np.float64)
        for i, t in enumerate(trees):
            b = int(tree_node0[i])
            kids = _root_kids(t)
            perm[b:b + 1 + len(kids)] = [b] + [b + c for c in kids]
            for side, code in enumerate((int(t.left[0]), int(t.right[0]))):
                pair = ((t.leaves[-int(t.left[code])], t.leaves[-int(t.right[code])])
                        if code > 0 else (t.leaves[-code], t.leaves[-code]))
                leaves[4 * i + 2 * side:4 * i + 2 * side + 2] = pair
        feat, thr = feat[perm], thr[perm]
    lbp = model.feature_type == "LBP"
    if lbp:
        subset = np.concatenate([t.subsets for t in trees]).astype(np.uint32)
        if perm is not None:
            subset = subset[perm]
        ng = 16
        dx = np.zeros((len(feat), ng), dtype=np.int64)
        dy = np.zeros((len(feat), ng), dtype=np.int64)
        for k, f in enumerate(feat):
            x, y, w, h = model.features[f].rect
            j, i = np.divmod(np.arange(16), 4)
            dx[k] = x + i * w
            dy[k] = y + j * h
        plane = np.zeros(len(feat), dtype=np.int64)
        weights = np.zeros((len(feat), 3), dtype=np.float32)
    else:
        subset = np.zeros((1, 8), dtype=np.uint32)
        dx = np.zeros((len(feat), 12), dtype=np.int64)
        dy = np.zeros((len(feat), 12), dtype=np.int64)
        weights = np.zeros((len(feat), 3), dtype=np.float32)
        plane = np.zeros(len(feat), dtype=np.int64)
        for k, fi in enumerate(feat):
            f = model.features[fi]
            plane[k] = int(f.tilted)
            for r, (x, y, w, h, wt) in enumerate(f.rects):
                weights[k, r] = wt
                if f.tilted:
                    dx[k, 4 * r:4 * r + 4] = (x, x - h, x + w, x + w - h)
                    dy[k, 4 * r:4 * r + 4] = (y, y + h, y + w, y + w + h)
                else:
                    dx[k, 4 * r:4 * r + 4] = (x, x + w, x, x + w)
                    dy[k, 4 * r:4 * r + 4] = (y, y, y + h, y + h)
            # unused rects keep weight 0 and point at corner (0, 0)
    return _Flat(
        kind=1 if lbp else 0, window=(model.width, model.height), stage_first=stage_first,
        stage_thr=stage_thr, tree_node0=tree_node0, tree_leaf0=tree_leaf0, node_left=left,
        node_right=right, node_thr=thr, node_subset=np.ascontiguousarray(subset.reshape(-1)),
        leaves=leaves, node_dx=dx, node_dy=dy, node_plane=plane, node_w=weights,
        tilted=model.has_tilted, shape=shape,
    )


# ------------------------------------------------------------------------------------------------
# Kernel
# ------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _u(i):
    # unsigned index: numba then skips the negative-index wrap-around check
    return np.uint64(i)


# The detection kernels. ``tab`` holds one 16-word record per tree node (``tabf`` is the same
# memory seen as float32). Haar: 12 flat offsets relative to the window's top-left corner in
# ``sbuf`` (3 rectangles x 4 corners; tilted ones point into the tilted plane), then the 3 weights
# and the threshold as float32. LBP: the 16 offsets of the 4x4 corner grid of the 3x3 blocks.
# Work items are (scale, row) pairs; results go to ``out_hit``/``out_score`` at
# ``sc_obase[k] + row * sc_ncol[k] + x // step``. The kernels made by ``_make_scan`` differ only
# in the feature kind and tree shape, compile-time constants in each (a third faster than testing
# them per node).


@njit(nogil=True, inline="always")
def _go_left(kind, nd, tab0, p, inv, sbuf, tab, tabf, node_subset):
    """Whether the window at ``p`` goes left at node ``nd`` (``kind`` is a constant)."""
    ncorner = 16
    o = tab0 + nd * ncorner
    if kind == 0:
        v = tabf[_u(o + 12)] * np.float32(np.int32(
            sbuf[_u(p + tab[_u(o)])] - sbuf[_u(p + tab[_u(o + 1)])]
            - sbuf[_u(p + tab[_u(o + 2)])] + sbuf[_u(p + tab[_u(o + 3)])]))
        v += tabf[_u(o + 13)] * np.float32(np.int32(
            sbuf[_u(p + tab[_u(o + 4)])] - sbuf[_u(p + tab[_u(o + 5)])]
            - sbuf[_u(p + tab[_u(o + 6)])] + sbuf[_u(p + tab[_u(o + 7)])]))
        w2 = tabf[_u(o + 14)]
        if w2 != 0.0:
            v += w2 * np.float32(np.int32(
                sbuf[_u(p + tab[_u(o + 8)])] - sbuf[_u(p + tab[_u(o + 9)])]
                - sbuf[_u(p + tab[_u(o + 10)])]
                + sbuf[_u(p + tab[_u(o + 11)])]))
        go_left = (v * inv) < tabf[_u(o + 15)]
    else:
        # corner grid values c[j*4+i]; block (i,j) = c0 - c1 - c4 + c5
        a0 = sbuf[_u(p + tab[_u(o)])]
        a1 = sbuf[_u(p + tab[_u(o + 1)])]
        a2 = sbuf[_u(p + tab[_u(o + 2)])]
        a3 = sbuf[_u(p + tab[_u(o + 3)])]
        a4 = sbuf[_u(p + tab[_u(o + 4)])]
        a5 = sbuf[_u(p + tab[_u(o + 5)])]
        a6 = sbuf[_u(p + tab[_u(o + 6)])]
        a7 = sbuf[_u(p + tab[_u(o + 7)])]
        a8 = sbuf[_u(p + tab[_u(o + 8)])]
        a9 = sbuf[_u(p + tab[_u(o + 9)])]
        a10 = sbuf[_u(p + tab[_u(o + 10)])]
        a11 = sbuf[_u(p + tab[_u(o + 11)])]
        a12 = sbuf[_u(p + tab[_u(o + 12)])]
        a13 = sbuf[_u(p + tab[_u(o + 13)])]
        a14 = sbuf[_u(p + tab[_u(o + 14)])]
        a15 = sbuf[_u(p + tab[_u(o + 15)])]
        cv = np.int32(a5 - a6 - a9 + a10)
        c = 0
        if np.int32(a0 - a1 - a4 + a5) >= cv:
            c |= 128
        if np.int32(a1 - a2 - a5 + a6) >= cv:
            c |= 64
        if np.int32(a2 - a3 - a6 + a7) >= cv:
            c |= 32
        if np.int32(a6 - a7 - a10 + a11) >= cv:
            c |= 16
        if np.int32(a10 - a11 - a14 + a15) >= cv:
            c |= 8
        if np.int32(a9 - a10 - a13 + a14) >= cv:
            c |= 4
        if np.int32(a8 - a9 - a12 + a13) >= cv:
            c |= 2
        if np.int32(a4 - a5 - a8 + a9) >= cv:
            c |= 1
        go_left = ((node_subset[nd * 8 + (c >> 5)] >> np.uint32(c & 31))
                   & np.uint32(1)) != 0
    return go_left


@njit(nogil=True, inline="always")
def _scan_row(it, sbuf, qbuf, items, sc_base, sc_qbase, sc_stride, sc_nx, sc_step, sc_ncol,
              sc_obase, tab, tabf, kind, norm_ofs, area, normalize, gate, skip0, shape,
              stage_first, stage_thr, tree_node0, tree_leaf0, node_left, node_right, node_subset,
              leaves, out_hit, out_score):
    """One work item (scale, row) of a :func:`_make_scan` kernel (``kind``/``shape`` constant).

    ``shape``: 1 stumps, 2 depth-2 trees of three nodes, 3 other trees of depth <= 2 (both
    laid out by :func:`_compile`), 0 any trees.
    """
    n_stages = stage_thr.shape[0]
    n_nodes = node_left.shape[0]
    ncorner = 16
    k = items[it, 0]
    r = items[it, 1]
    step = sc_step[k]
    y = r * step
    stride = sc_stride[k]
    nx = sc_nx[k]
    tab0 = k * n_nodes * ncorner if tab.shape[0] > n_nodes * ncorner else 0
    n0o, n1o, n2o, n3o = norm_ofs[k, 0], norm_ofs[k, 1], norm_ofs[k, 2], norm_ofs[k, 3]
    rowp = sc_base[k] + y * stride
    rowq = sc_qbase[k] + y * stride
    obase = sc_obase[k] + r * sc_ncol[k]
    x = 0
    while x < nx:
        p = rowp + x
        res = 1
        inv = np.float32(1.0)
        if kind == 0 and normalize:
            pq = rowq + x
            vs = np.int32(sbuf[_u(p + n0o)] - sbuf[_u(p + n1o)] - sbuf[_u(p + n2o)]
                          + sbuf[_u(p + n3o)])
            vq = (np.int64(qbuf[_u(pq + n0o)]) - np.int64(qbuf[_u(pq + n1o)])
                  - np.int64(qbuf[_u(pq + n2o)]) + np.int64(qbuf[_u(pq + n3o)])) & 0xFFFFFFFF
            nf = area * np.float64(vq) - np.float64(vs) * np.float64(vs)
            if nf > 0.0:
                inv = np.float32(1.0 / math.sqrt(nf))
                if not (area * np.float64(inv) < gate):
                    res = -1
            else:
                res = -1
        score = 0.0
        if res == 1:
            for si in range(n_stages):
                score = 0.0
                for t in range(stage_first[si], stage_first[si + 1]):
                    nd = tree_node0[t]
                    if shape >= 2:
                        # second node and leaf by arithmetic on the decisions (layout in
                        # _compile): a branch on them is mispredicted about every other tree
                        g0 = np.int64(_go_left(kind, nd, tab0, p, inv, sbuf, tab, tabf,
                                               node_subset))
                        if shape == 2:  # all trees have 3 nodes: left child nd+1, right nd+2
                            c = nd + 2 - g0
                        else:
                            # n nodes: 3 as above; 2 -> the child, nd+1 (evaluated in vain on
                            # the leaf side); 1 -> the root again
                            n = np.int64(tree_node0[t + 1] - nd)
                            c = nd + min(n - 1, 1 + (1 - g0) * (n - 2))
                        g1 = np.int64(_go_left(kind, c, tab0, p, inv, sbuf, tab, tabf,
                                               node_subset))
                        score += leaves[_u(4 * t + 3 - 2 * g0 - g1)]
                        continue
                    while True:
                        go_left = _go_left(kind, nd, tab0, p, inv, sbuf, tab, tabf,
                                           node_subset)
                        if shape == 1:
                            score += leaves[2 * t] if go_left else leaves[2 * t + 1]
                            break
                        code = node_left[nd] if go_left else node_right[nd]
                        if code <= 0:
                            score += leaves[tree_leaf0[t] - code]
                            break
                        nd = tree_node0[t] + code
                if score < stage_thr[si]:
                    res = -si
                    break
        if res == 1:
            out_hit[obase + x // step] = 1
            out_score[obase + x // step] = score
        if res == 0 and skip0:
            x += step
        x += step


def _make_scan(kind: int, shape: int):
    """The parallel kernel over all work items for one feature kind and tree shape.

    Both are closure constants, so numba compiles each pair as its own specialised kernel (and
    caches each under its own key).
    """

    @njit(cache=True, nogil=True, parallel=True)
    def scan(sbuf, qbuf, items, sc_base, sc_qbase, sc_stride, sc_nx, sc_step, sc_ncol, sc_obase,
             tab, tabf, norm_ofs, area, normalize, gate, skip0, stage_first, stage_thr,
             tree_node0, tree_leaf0, node_left, node_right, node_subset, leaves, out_hit,
             out_score):
        for it in prange(items.shape[0]):
            _scan_row(it, sbuf, qbuf, items, sc_base, sc_qbase, sc_stride, sc_nx, sc_step,
                      sc_ncol, sc_obase, tab, tabf, kind, norm_ofs, area, normalize, gate, skip0,
                      shape, stage_first, stage_thr, tree_node0, tree_leaf0, node_left,
                      node_right, node_subset, leaves, out_hit, out_score)

    return scan


# (feature kind: 0 HAAR / 1 LBP, tree shape as in _Flat.shape) -> kernel
_KERNELS = {(kind, shape): _make_scan(kind, shape) for kind in (0, 1) for shape in (0, 1, 2, 3)}


# ------------------------------------------------------------------------------------------------
# Detector
# ------------------------------------------------------------------------------------------------


def to_gray(image: np.ndarray, *, channel_order: str = "bgr", name: str = "image") -> np.ndarray:
    """8-bit gray image from a gray, BGR(A) or RGB(A) array (OpenCV's BGR2GRAY weights).

    Parameters
    ----------
    image : ndarray, shape (H, W) or (H, W, 3|4), dtype uint8
    channel_order : {"bgr", "rgb"}
        Order of colour channels. ``cv2.imread`` gives BGR; scikit-image and PIL give RGB.
    """
    if not isinstance(image, np.ndarray):
        image = np.asarray(image)
    if image.dtype != np.uint8:
        raise TypeError(f"{name}: expected an 8-bit image (dtype uint8), got dtype {image.dtype}")
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim == 2:
        return np.ascontiguousarray(image)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise ValueError(f"{name}: expected (H, W), (H, W, 3) or (H, W, 4), got {image.shape}")
    if channel_order not in ("bgr", "rgb"):
        raise ValueError(f"channel_order: expected 'bgr' or 'rgb', got {channel_order!r}")
    code = {("bgr", 3): cv2.COLOR_BGR2GRAY, ("bgr", 4): cv2.COLOR_BGRA2GRAY,
            ("rgb", 3): cv2.COLOR_RGB2GRAY, ("rgb", 4): cv2.COLOR_RGBA2GRAY}
    return cv2.cvtColor(np.ascontiguousarray(image), code[(channel_order, image.shape[2])])


def _size_pair(v: Any, name: str) -> tuple[int, int]:
    if v is None:
        return (0, 0)
    if isinstance(v, int | np.integer) and not isinstance(v, bool):
        v = (int(v), int(v))
    try:
        a, b = v
        a, b = int(a), int(b)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected (width, height) or an int, got {v!r}") from None
    if a < 0 or b < 0:
        raise ValueError(f"{name}: sizes must be >= 0, got {v!r}")
    return a, b


class CascadeDetector:
    """Multi-scale detector for a :class:`~vjboost.cascade.model.CascadeModel`.

    Parameters
    ----------
    model : CascadeModel
    scale_factor : float, default=1.1
        Ratio between successive scales (> 1).
    min_neighbors : int, default=3
        Grouping threshold: a group needs more than ``min_neighbors`` raw windows. ``0`` returns
        the raw windows.
    min_size, max_size : (width, height) or int, optional
        Object size limits in pixels (``None``/0: no limit), OpenCV's ``minSize``/``maxSize``.
    mode : {"opencv", "clean"}, default="opencv"
        ``"opencv"``: identical windows to ``cv2.CascadeClassifier.detectMultiScale``.
        ``"clean"``: every row scanned (no stripe cut-off); ``step`` and ``skip_after_stage0``
        apply.
    step : int, optional
        Window step in pixels of the scaled image (``"clean"`` mode). Default: OpenCV's rule,
        2 below scale 2, else 1.
    skip_after_stage0 : bool, default=True
        Skip the next position after a window rejected by the first stage (OpenCV's heuristic;
        always on in ``"opencv"`` mode).
    grouping : {"opencv", "nms", "none"}, default="opencv"
        ``"opencv"``: ``groupRectangles(min_neighbors, eps=0.2)``; ``"nms"``: greedy
        non-maximum suppression by score at ``nms_iou``, keeping only windows that more than
        ``min_neighbors`` raw windows (themselves included) overlap at IoU > ``nms_iou``;
        ``"none"``: raw windows.
    nms_iou : float, default=0.3
    variance_normalization : bool, default=True
        HAAR: divide feature values by ``A·σ`` of the window's inner area and skip windows with
        ``σ <= min_std`` (OpenCV). Off: raw rectangle sums, no gate.
    min_std : float, default=10.0
        The σ gate in grey levels (OpenCV: 10).
    n_stages : int, optional
        Use only the first ``n_stages`` stages (more, weaker detections).
    threads : int, optional
        numba threads (``None``: all).
    channel_order : {"bgr", "rgb"}, default="bgr"
        Colour order of 3-channel input (OpenCV convention is BGR).
    """

    def __init__(
        self,
        model: CascadeModel,
        *,
        scale_factor: float = 1.1,
        min_neighbors: int = 3,
        min_size: Any = None,
        max_size: Any = None,
        mode: str = "opencv",
        step: int | None = None,
        skip_after_stage0: bool = True,
        grouping: str = "opencv",
        nms_iou: float = 0.3,
        variance_normalization: bool = True,
        min_std: float = 10.0,
        n_stages: int | None = None,
        threads: int | None = None,
        channel_order: str = "bgr",
    ) -> None:
        if not isinstance(model, CascadeModel):
            raise TypeError(f"model: expected a CascadeModel, got {type(model).__name__}")
        if not (isinstance(scale_factor, int | float) and scale_factor > 1.0
                and math.isfinite(scale_factor)):
            raise ValueError(f"scale_factor: must be a number > 1, got {scale_factor!r}")
        if isinstance(min_neighbors, bool) or not isinstance(min_neighbors, int | np.integer) \
                or min_neighbors < 0:
            raise ValueError(f"min_neighbors: expected an integer >= 0, got {min_neighbors!r}")
        if mode not in ("opencv", "clean"):
            raise ValueError(f"mode: expected 'opencv' or 'clean', got {mode!r}")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int | np.integer)
                                 or step < 1):
            raise ValueError(f"step: expected a positive integer or None, got {step!r}")
        if mode == "opencv" and step is not None:
            raise ValueError("step: only configurable with mode='clean' (OpenCV's step is 2 "
                             "below scale 2, else 1)")
        if grouping not in ("opencv", "nms", "none"):
            raise ValueError(f"grouping: expected 'opencv', 'nms' or 'none', got {grouping!r}")
        if not 0.0 <= nms_iou <= 1.0:
            raise ValueError(f"nms_iou: expected a value in [0, 1], got {nms_iou!r}")
        if not (min_std >= 0 and math.isfinite(min_std)):
            raise ValueError(f"min_std: expected a finite value >= 0, got {min_std!r}")
        if n_stages is not None:
            model = model.truncated(int(n_stages))
        self.model = model
        self.scale_factor = float(scale_factor)
        self.min_neighbors = int(min_neighbors)
        self.min_size = _size_pair(min_size, "min_size")
        self.max_size = _size_pair(max_size, "max_size")
        self.mode = mode
        self.step = None if step is None else int(step)
        self.skip_after_stage0 = bool(skip_after_stage0) or mode == "opencv"
        self.grouping = grouping
        self.nms_iou = float(nms_iou)
        self.variance_normalization = bool(variance_normalization)
        self.min_std = float(min_std)
        self.threads = threads
        self.channel_order = channel_order
        # Haar (normalised) and MB-LBP family cascades run on the fast kernel too.
        fast = model.opencv_equivalent()
        self._flat = _compile(fast) if fast is not None else None

    # -- public API -----------------------------------------------------------------------------

    def detect(self, image: np.ndarray, roi: Sequence[int] | None = None) -> Detections:
        """Detect objects in one image.

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3|4)
            Gray or colour (``channel_order``) image. Cascades over colour families get the
            colour image as RGB.
        roi : (x, y, w, h), optional
            Search only this region (results are in full-image coordinates; equivalent to
            detecting on the crop).

        Returns
        -------
        Detections
        """
        color_family = self.model.feature_type == "family" and getattr(
            self.model.family, "color", False)
        if not isinstance(image, np.ndarray):
            image = np.asarray(image)
        if color_family:
            if image.ndim != 3 or image.shape[2] < 3:
                raise ValueError(f"image: this cascade's family needs a colour image, got "
                                 f"shape {image.shape}")
            img = image[:, :, :3] if self.channel_order == "rgb" else image[:, :, 2::-1]
            img = np.ascontiguousarray(img)
            if img.dtype != np.uint8:
                raise TypeError(f"image: expected dtype uint8, got {img.dtype}")
        else:
            img = to_gray(image, channel_order=self.channel_order)
        ox = oy = 0
        if roi is not None:
            try:
                rx, ry, rw, rh = (int(v) for v in roi)
            except (TypeError, ValueError):
                raise ValueError(f"roi: expected (x, y, w, h), got {roi!r}") from None
            x0, y0 = max(rx, 0), max(ry, 0)
            x1, y1 = min(rx + rw, img.shape[1]), min(ry + rh, img.shape[0])
            if x1 <= x0 or y1 <= y0:
                raise ValueError(f"roi: {tuple(roi)} does not overlap the "
                                 f"{img.shape[1]}x{img.shape[0]} image")
            img = np.ascontiguousarray(img[y0:y1, x0:x1])
            ox, oy = x0, y0
        boxes, scores = self.raw_windows(img)
        det = self._group(boxes, scores, img.shape[1], img.shape[0])
        if ox or oy:
            det.boxes[:, 0] += ox
            det.boxes[:, 1] += oy
        return det

    __call__ = detect

    def raw_windows(self, gray: np.ndarray, *, return_positions: bool = False):
        """All accepted windows (before grouping) of a prepared gray image.

        Parameters
        ----------
        gray : ndarray of uint8, shape (H, W)
            (or ``(H, W, 3)`` RGB for colour families).
        return_positions : bool, default=False
            Also return where each window lies in its scaled image.

        Returns
        -------
        boxes : ndarray of int32, shape (N, 4)
            ``(x, y, w, h)`` in image pixels (not clipped), ordered by scale, row, column.
        scores : ndarray of float64, shape (N,)
            Last stage score of each window.
        positions : ndarray of int64, shape (N, 3)
            Only with ``return_positions``: ``(scale_index, x, y)`` — the index into
            :func:`opencv_scales` (same image size and parameters) and the window's top-left
            corner in the image resized to ``round(W / s) × round(H / s)``.
        """
        W, H = self.model.width, self.model.height
        img_h, img_w = gray.shape[:2]
        check_pyramid_levels(self.scale_factor, (img_w, img_h), (W, H))
        scales = opencv_scales((W, H), (img_w, img_h), self.scale_factor, self.min_size,
                               self.max_size)
        if not scales:
            out = (np.zeros((0, 4), dtype=np.int32), np.zeros(0), np.zeros((0, 3), np.int64))
            return out if return_positions else out[:2]
        geo = []
        nx0 = int(np.rint(np.float32(img_w) / scales[0])) + 1 - W
        nstripes = max(1, math.ceil(nx0 / 32.0))
        for s in scales:
            sw = int(np.rint(np.float32(img_w) / s))
            sh = int(np.rint(np.float32(img_h) / s))
            step = (1 if s >= 2 else 2) if (self.mode == "opencv" or self.step is None) \
                else self.step
            nx, ny = sw + 1 - W, sh + 1 - H
            if nx <= 0 or ny <= 0:
                continue
            if self.mode == "opencv":
                stripe = max((ny // step + nstripes - 1) // nstripes, 1) * step
                ymax = min(ny, nstripes * stripe)
            else:
                ymax = ny
            geo.append((s, sw, sh, step, nx, ymax))
        index = {float(s): i for i, s in enumerate(scales)}
        if self._flat is None:
            out = self._generic_windows(gray, geo, index)
        else:
            out = self._fast_windows(gray, geo, index)
        return out if return_positions else out[:2]

    # -- fast path ------------------------------------------------------------------------------

    def _fast_windows(self, gray: np.ndarray, geo: list, index: dict) -> tuple:
        flat = self._flat
        planes = 2 if flat.tilted else 1
        haar = flat.kind == 0
        out_boxes, out_scores, out_pos = [], [], []
        # batches of scales whose integral buffers stay under the budget
        batch: list = []
        size = 0
        batches = []
        for g in geo:
            n = (g[1] + 1) * (g[2] + 1)
            if batch and size + n > _BATCH_BYTES // (4 * (planes + int(haar))):
                batches.append(batch)
                batch, size = [], 0
            batch.append(g)
            size += n
        if batch:
            batches.append(batch)
        for batch in batches:
            b, s, pos = self._run_batch(gray, batch, planes, haar, index)
            out_boxes.append(b)
            out_scores.append(s)
            out_pos.append(pos)
        return np.concatenate(out_boxes), np.concatenate(out_scores), np.concatenate(out_pos)

    def _run_batch(self, gray, batch, planes, haar, index):
        flat = self._flat
        W, H = flat.window
        ns = len(batch)
        # Layout (as OpenCV's): every scale's integral image is a block of one 2-D buffer whose
        # row length is that of the largest scale; smaller scales sit side by side in bands.
        # One row stride for all scales means one table of node offsets for the whole image.
        bw = batch[0][1] + 1
        ox = oy = band = 0
        place = []
        for _, sw, sh, *_ in batch:
            if ox + sw + 1 > bw:
                ox, oy, band = 0, oy + band, 0
            place.append((oy, ox))
            ox += sw + 1
            band = max(band, sh + 1)
        rows = oy + band
        plane = rows * bw
        check_memory(plane * 4 * (planes + int(haar)), "integral images for detection",
                     advice="Use a larger min_size or a smaller image.")
        sbuf = np.empty(plane * planes, dtype=np.int32)
        qbuf = np.empty(plane if haar else 1, dtype=np.int32)
        s2d = sbuf[:plane].reshape(rows, bw)
        t2d = sbuf[plane:].reshape(rows, bw) if planes == 2 else None
        q2d = qbuf.reshape(rows, bw) if haar else None
        sc_base = np.zeros(ns, dtype=np.int64)
        sc_stride = np.full(ns, bw, dtype=np.int64)
        sc_nx = np.zeros(ns, dtype=np.int64)
        sc_step = np.zeros(ns, dtype=np.int64)
        sc_ncol = np.zeros(ns, dtype=np.int64)
        sc_obase = np.zeros(ns, dtype=np.int64)
        ncorner = flat.node_dx.shape[1]
        tab = np.empty((1, flat.node_dx.shape[0], 16), dtype=np.int32)
        if haar:
            tab[0, :, 12:15] = flat.node_w.view(np.int32)
            tab[0, :, 15] = flat.node_thr.view(np.int32)
        tab[0, :, :ncorner] = flat.node_dx + flat.node_dy * bw + flat.node_plane[:, None] * plane
        norm_ofs = np.empty((ns, 4), dtype=np.int64)
        norm_ofs[:] = (bw + 1, bw + W - 1, (H - 1) * bw + 1, (H - 1) * bw + W - 1)
        items = []
        op = 0
        for k, (_, sw, sh, step, nx, ymax) in enumerate(batch):
            if (sw, sh) == gray.shape[::-1]:
                scaled = gray
            else:
                scaled = cv2.resize(gray, (sw, sh), interpolation=cv2.INTER_LINEAR_EXACT)
            y0, x0 = place[k]
            blk = np.s_[y0:y0 + sh + 1, x0:x0 + sw + 1]
            if haar:
                if t2d is not None:
                    si, qi, ti = cv2.integral3(scaled, sdepth=cv2.CV_32S, sqdepth=cv2.CV_32S)
                    t2d[blk] = ti
                else:
                    si, qi = cv2.integral2(scaled, sdepth=cv2.CV_32S, sqdepth=cv2.CV_32S)
                q2d[blk] = qi
            else:
                si = cv2.integral(scaled, sdepth=cv2.CV_32S)
            s2d[blk] = si
            sc_base[k] = y0 * bw + x0
            sc_nx[k], sc_step[k] = nx, step
            ncol = (nx + step - 1) // step
            nrow = (ymax + step - 1) // step
            sc_ncol[k], sc_obase[k] = ncol, op
            items.append(nrow)
            op += ncol * nrow
        sc_qbase = sc_base
        nrows = np.array(items, dtype=np.int64)
        items_arr = np.empty((int(nrows.sum()), 2), dtype=np.int64)
        items_arr[:, 0] = np.repeat(np.arange(ns), nrows)
        items_arr[:, 1] = np.arange(len(items_arr)) - np.repeat(np.cumsum(nrows) - nrows, nrows)
        out_hit = np.zeros(op, dtype=np.uint8)
        out_score = np.empty(op, dtype=np.float64)
        area = float((W - 2) * (H - 2))
        gate = 0.1 if self.min_std == 10.0 else (1.0 / self.min_std if self.min_std > 0
                                                  else np.inf)
        with n_threads(self.threads) as nt:
            old_chunk = numba.get_parallel_chunksize()
            if nt > 1:
                numba.set_parallel_chunksize(_CHUNK)
            try:
                kernel = _KERNELS[(flat.kind, flat.shape)]
                kernel(sbuf, qbuf, items_arr, sc_base, sc_qbase, sc_stride, sc_nx, sc_step,
                       sc_ncol, sc_obase, tab.reshape(-1), tab.reshape(-1).view(np.float32),
                       norm_ofs, area, self.variance_normalization, gate,
                       self.skip_after_stage0, flat.stage_first, flat.stage_thr,
                       flat.tree_node0, flat.tree_leaf0, flat.node_left, flat.node_right,
                       flat.node_subset, flat.leaves, out_hit, out_score)
            finally:
                if nt > 1:
                    numba.set_parallel_chunksize(old_chunk)
        hits = np.flatnonzero(out_hit)
        if hits.size == 0:
            return np.zeros((0, 4), dtype=np.int32), np.zeros(0), np.zeros((0, 3), np.int64)
        k_of = np.searchsorted(sc_obase, hits, side="right") - 1
        rel = hits - sc_obase[k_of]
        row, col = np.divmod(rel, sc_ncol[k_of])
        step = sc_step[k_of]
        scale = np.array([g[0] for g in batch], dtype=np.float32)[k_of]
        sidx = np.array([index[float(g[0])] for g in batch], dtype=np.int64)[k_of]
        pos = np.stack([sidx, col * step, row * step], axis=1)
        return self._to_boxes(col * step, row * step, scale), out_score[hits], pos

    def _to_boxes(self, x, y, scale):
        W, H = self.model.width, self.model.height
        boxes = np.empty((len(x), 4), dtype=np.int32)
        boxes[:, 0] = np.rint(x.astype(np.float32) * scale)
        boxes[:, 1] = np.rint(y.astype(np.float32) * scale)
        boxes[:, 2] = np.rint(np.float32(W) * scale)
        boxes[:, 3] = np.rint(np.float32(H) * scale)
        return boxes

    # -- generic path ---------------------------------------------------------------------------

    def _generic_windows(self, image: np.ndarray, geo: list, index: dict) -> tuple:
        model = self.model
        fam = model.family
        feat_ids = np.asarray(model.features, dtype=np.int64)
        out_b, out_s, out_p = [], [], []
        for s, sw, sh, step, nx, ymax in geo:
            if (sw, sh) == (image.shape[1], image.shape[0]):
                scaled = image
            else:
                scaled = cv2.resize(image, (sw, sh), interpolation=cv2.INTER_LINEAR_EXACT)
            ch = fam.prepare_image(scaled)
            ys, xs = np.meshgrid(np.arange(0, ymax, step), np.arange(0, nx, step), indexing="ij")
            pos = np.stack([ys.ravel(), xs.ravel()], axis=1).astype(np.int64)
            score = np.zeros(len(pos))
            for st in model.stages:
                if len(pos) == 0:
                    break
                used = np.unique(np.concatenate([t.feature for t in st.trees]))
                vals = np.zeros((len(feat_ids), len(pos)), dtype=np.float32)
                with n_threads(self.threads):
                    vals[used] = fam.evaluate_at(ch, feat_ids[used], pos)
                score = st.score(vals)
                keep = score >= st.reject_threshold
                pos, score = pos[keep], score[keep]
            if len(pos):
                out_b.append(self._to_boxes(pos[:, 1], pos[:, 0], np.full(len(pos), s,
                                                                           np.float32)))
                out_s.append(score)
                out_p.append(np.stack([np.full(len(pos), index[float(s)]), pos[:, 1],
                                       pos[:, 0]], axis=1).astype(np.int64))
        if not out_b:
            return np.zeros((0, 4), dtype=np.int32), np.zeros(0), np.zeros((0, 3), np.int64)
        return np.concatenate(out_b), np.concatenate(out_s), np.concatenate(out_p)

    # -- grouping -------------------------------------------------------------------------------

    def _group(self, boxes, scores, img_w, img_h) -> Detections:
        b, best, cnt = group_detections(boxes, scores, method=self.grouping,
                                        min_neighbors=self.min_neighbors,
                                        image_size=(img_w, img_h), nms_iou=self.nms_iou)
        return Detections(b, best, cnt, np.full(len(b), self.model.n_stages, dtype=np.int32),
                          raw_count=len(boxes))


def detect_multiscale(
    image: np.ndarray,
    model: CascadeModel | str | os.PathLike[str],
    **params: Any,
) -> Detections:
    """Functional form: ``CascadeDetector(model, **params).detect(image)``.

    ``model`` may be a :class:`CascadeModel` or a path to an OpenCV XML or vjboost model file.
    ``roi`` may be passed among ``params``.
    """
    roi = params.pop("roi", None)
    if not isinstance(model, CascadeModel):
        from .model_io import load_model

        model = load_model(model)
    return CascadeDetector(model, **params).detect(image, roi=roi)


def detect_images(
    model: CascadeModel,
    paths: Sequence[str | os.PathLike[str]],
    **params: Any,
) -> list[tuple[str, Detections | None, str]]:
    """Batch detection over image files: a pure function of (model, paths, params).

    Picklable inputs and outputs, so that batches can be spread over processes or machines.

    Returns
    -------
    list of (path, detections, error)
        ``detections`` is None and ``error`` the reason when an image could not be read.
    """
    from ..io.images import ImageReadError, read_image

    det = CascadeDetector(model, **params)
    out: list[tuple[str, Detections | None, str]] = []
    for p in paths:
        try:
            img = read_image(p, gray=True)
        except ImageReadError as exc:
            out.append((str(p), None, str(exc)))
            continue
        out.append((str(p), det.detect(img), ""))
    return out
