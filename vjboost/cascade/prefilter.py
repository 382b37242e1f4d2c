"""The first stage of a Haar cascade over whole rows of windows at once.

Most windows of a scan (more than 99 % of background windows late in training) are rejected by
the first stages, and the first stage alone costs more than half of a late-stage mining scan
when it runs window by window (:func:`vjboost.cascade.kernels.scan`). Along one row of a level
the windows' integral corners are consecutive entries of the buffer, so a loop over the row with
the node's corner offsets fixed reads memory in sequence and the compiler can vectorise it. For
depth-2 trees (three nodes each) both children are computed for every window and the leaf is
chosen by the decisions, so the loop has no branch on the data.

:func:`stage0_rows` computes, for every window of ``items`` (rows of consecutive windows), the
σ gate, the window's variance normaliser and the first stage's score with the very float32 and
float64 operations of the window-by-window kernel (same order, no fused multiply-add), so its
decisions are those of :func:`vjboost.cascade.kernels.scan`, bit for bit.
:class:`~vjboost.cascade.runner.CascadeRunner` then runs the other stages on the survivors only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..features.program import _THR_R, _W, OPS_HAAR, REC, variance_norm
from .kernels import CompiledCascade

__all__ = ["BYTES_PER_WINDOW", "MAX_BYTES", "applies", "stage0_rows"]

_U = np.uint64

#: scratch bytes per scanned window at most (survivors' slots, offsets, scores and items)
BYTES_PER_WINDOW = 56
#: batches whose scratch would exceed this run window by window instead (huge images)
MAX_BYTES = 256 << 20


def applies(cascade: CompiledCascade, items: np.ndarray, skip0: bool) -> bool:
    """Whether :func:`stage0_rows` can run the first stage of ``cascade`` on ``items``.

    Haar features only (OpenCV's variance normalisation), every tree of the first stage with
    three nodes (depth 2), rows of consecutive windows (step 1), and no skipping after a
    first-stage rejection.

    Parameters
    ----------
    cascade : CompiledCascade
    items : ndarray of int64, shape (I, 4)
        ``(row_offset, n_x, step, out_offset)`` as for :func:`vjboost.cascade.kernels.scan`.
    skip0 : bool
        OpenCV's skip of the position after a first-stage rejection.

    Returns
    -------
    bool
    """
    if skip0 or cascade.ops != OPS_HAAR or cascade.shape not in (2, 3) or len(items) == 0:
        return False
    n0 = int(cascade.stage_first[1])
    nodes = np.diff(cascade.tree_node0[:n0 + 1])
    return bool((nodes == 3).all() and (items[:, 2] == 1).all())


@njit(cache=True, nogil=True)
def stage0_rows(buf, items, tab, tabf, pro, prof, gate, n_trees, tree_node0, leaves, thr,
                out_slot, out_pos, out_score):  # pragma: no cover - numba
    """First-stage decisions of the windows of ``items`` (rows of consecutive windows).

    Parameters
    ----------
    buf : ndarray of int32, 1-D
        Integral planes (as for :func:`vjboost.cascade.kernels.scan`).
    items : ndarray of int64, shape (I, 4)
        ``(row_offset, n_x, 1, out_offset)``: windows at ``row_offset + x``, ``x < n_x``.
    tab, tabf, pro, prof
        The bound records of the cascade (:meth:`CompiledCascade.bind`).
    gate : float
        OpenCV's σ gate on ``area · inv_var`` (``inf``: none).
    n_trees : int
        Trees of the first stage (three nodes each, laid out root, left, right).
    tree_node0 : ndarray of int64
        First node of each tree.
    leaves : ndarray of float64
        Four leaves per tree (left-left, left-right, right-left, right-right).
    thr : float32
        The first stage's reject threshold.
    out_slot, out_pos : ndarray of int64, shape (>= windows of items,)
        The output slot (``out_offset + x``) and buffer offset (``row_offset + x``) of every
        window that passes the σ gate and the first stage, in item order.
    out_score : ndarray of float64, shape (>= windows of items,)
        Their first stage's scores.

    Returns
    -------
    int
        How many windows passed (the filled length of the outputs).
    """
    width = 0
    for it in range(items.shape[0]):
        width = max(width, items[it, 1])
    iv = np.empty(width, np.float32)
    score = np.empty(width)
    gated = np.empty(width, np.bool_)
    area = prof[0]
    n = 0
    for it in range(items.shape[0]):
        row = items[it, 0]
        nx = items[it, 1]
        obase = items[it, 3]
        # the variance normaliser of window_norms() for the whole row (Haar features use no
        # other one: leaving the gradient normaliser out keeps this loop simple and fast)
        for x in range(nx):
            inv, nf = variance_norm(buf, row + x, pro, area)
            iv[x] = inv
            score[x] = 0.0
            gated[x] = gate < np.inf and not (nf > 0.0 and area * np.float64(inv) < gate)
        for t in range(n_trees):
            o0 = tree_node0[t] * REC
            _tree_row(buf, row, nx, iv, score, tab, tabf, o0, o0 + REC, o0 + 2 * REC,
                      leaves[4 * t], leaves[4 * t + 1], leaves[4 * t + 2], leaves[4 * t + 3])
        for x in range(nx):
            if not gated[x] and not (score[x] < thr):
                out_slot[n] = obase + x
                out_pos[n] = row + x
                out_score[n] = score[x]
                n += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _rect(buf, p, k0, k1, k2, k3):  # pragma: no cover - numba
    """float32 of the int32 sum of a rectangle with corner offsets ``k*`` at window ``p``."""
    return np.float32(np.int32(buf[_U(p + k0)] - buf[_U(p + k1)] - buf[_U(p + k2)]
                               + buf[_U(p + k3)]))


@njit(cache=True, nogil=True)
def _tree_row(buf, row, nx, iv, score, tab, tabf, o0, o1, o2, l0, l1, l2, l3
              ):  # pragma: no cover - numba
    """Add one depth-2 tree's leaf to ``score`` for the ``nx`` windows of a row: the root and
    both children are computed for every window (no branch on the data in the loop). Each
    value is rects_value()'s: the same float32 operations in the same order. The record
    fields are read into scalars first: the loop then keeps them in registers."""
    a0, a1, a2, a3 = tab[_U(o0)], tab[_U(o0 + 1)], tab[_U(o0 + 2)], tab[_U(o0 + 3)]
    a4, a5, a6, a7 = tab[_U(o0 + 4)], tab[_U(o0 + 5)], tab[_U(o0 + 6)], tab[_U(o0 + 7)]
    a8, a9, a10, a11 = tab[_U(o0 + 8)], tab[_U(o0 + 9)], tab[_U(o0 + 10)], tab[_U(o0 + 11)]
    b0, b1, b2, b3 = tab[_U(o1)], tab[_U(o1 + 1)], tab[_U(o1 + 2)], tab[_U(o1 + 3)]
    b4, b5, b6, b7 = tab[_U(o1 + 4)], tab[_U(o1 + 5)], tab[_U(o1 + 6)], tab[_U(o1 + 7)]
    b8, b9, b10, b11 = tab[_U(o1 + 8)], tab[_U(o1 + 9)], tab[_U(o1 + 10)], tab[_U(o1 + 11)]
    d0, d1, d2, d3 = tab[_U(o2)], tab[_U(o2 + 1)], tab[_U(o2 + 2)], tab[_U(o2 + 3)]
    d4, d5, d6, d7 = tab[_U(o2 + 4)], tab[_U(o2 + 5)], tab[_U(o2 + 6)], tab[_U(o2 + 7)]
    d8, d9, d10, d11 = tab[_U(o2 + 8)], tab[_U(o2 + 9)], tab[_U(o2 + 10)], tab[_U(o2 + 11)]
    wa0, wa1, wa2 = tabf[_U(o0 + _W)], tabf[_U(o0 + _W + 1)], tabf[_U(o0 + _W + 2)]
    wb0, wb1, wb2 = tabf[_U(o1 + _W)], tabf[_U(o1 + _W + 1)], tabf[_U(o1 + _W + 2)]
    wd0, wd1, wd2 = tabf[_U(o2 + _W)], tabf[_U(o2 + _W + 1)], tabf[_U(o2 + _W + 2)]
    t0, t1, t2 = tabf[_U(o0 + _THR_R)], tabf[_U(o1 + _THR_R)], tabf[_U(o2 + _THR_R)]
    for x in range(nx):
        p = row + x
        s = iv[x]
        v = wa0 * _rect(buf, p, a0, a1, a2, a3)
        v += wa1 * _rect(buf, p, a4, a5, a6, a7)
        if wa2 != 0.0:
            v += wa2 * _rect(buf, p, a8, a9, a10, a11)
        u = wb0 * _rect(buf, p, b0, b1, b2, b3)
        u += wb1 * _rect(buf, p, b4, b5, b6, b7)
        if wb2 != 0.0:
            u += wb2 * _rect(buf, p, b8, b9, b10, b11)
        w = wd0 * _rect(buf, p, d0, d1, d2, d3)
        w += wd1 * _rect(buf, p, d4, d5, d6, d7)
        if wd2 != 0.0:
            w += wd2 * _rect(buf, p, d8, d9, d10, d11)
        if v * s < t0:
            score[x] += l0 if u * s < t1 else l1
        else:
            score[x] += l2 if w * s < t2 else l3
