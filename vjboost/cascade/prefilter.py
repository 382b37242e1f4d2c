"""The row pass: Haar cascades of trees of depth <= 2 over whole rows of windows.

Most windows of a scan are rejected by the first stage, and the first stage alone costs about a
third of a detection when it runs window by window (:func:`vjboost.cascade.kernels.scan`).
Along one row of a level the windows' integral corners are consecutive entries of the buffer,
so a loop over the row with the node's corner offsets fixed reads memory in sequence and the
compiler vectorises it. For trees of depth <= 2 both children are computed for every window and
the leaf is chosen by the decisions, so the loop has no branch on the data.

:func:`scan_rows` computes, row by row, the σ gate, the window's variance normaliser and the
first stage's score of every window of the row; replays OpenCV's skip of the position after a
first-stage rejection along the row (so it visits exactly the windows the window-by-window
kernel visits); and runs the other stages window by window on the first stage's survivors
right away, while the row's integral data is still in the cache (running them after the whole
batch's first stage cost about 30 % more: the data had left the cache). Every value is computed
with the very float32 and float64 operations of the window-by-window kernel (same order, no
fused multiply-add), so its decisions and scores are that kernel's, bit for bit.

OpenCV's grid has a step of 2 below scale 2: :class:`~vjboost.cascade.runner.CascadeRunner`
stores such batches with each row's even and odd columns apart
(:meth:`vjboost.features.channels.ChannelSet.fill` and
:meth:`vjboost.features.program.Program.bind` with ``split``), which makes the grid's windows
consecutive entries again.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..features.program import _THR_R, _W, OPS_HAAR, REC, rects_value, variance_norm
from .kernels import CompiledCascade

__all__ = ["BYTES_PER_WINDOW", "MAX_BYTES", "applies", "scan_rows", "suits"]

_U = np.uint64

#: scratch bytes per scanned window at most (accepted windows' slots and scores)
BYTES_PER_WINDOW = 16
#: batches whose scratch would exceed this run window by window instead (huge images)
MAX_BYTES = 256 << 20


def applies(cascade: CompiledCascade, items: np.ndarray) -> bool:
    """Whether :func:`scan_rows` can run ``cascade`` on ``items``: :func:`suits` and rows of
    consecutive windows (step 1: a grid of step 2 is made one by storing the even and the odd
    columns of the integral planes apart, see :meth:`vjboost.features.program.Program.bind`).

    Parameters
    ----------
    cascade : CompiledCascade
    items : ndarray of int64, shape (I, 4)
        ``(row_offset, n_x, step, out_offset)`` as for :func:`vjboost.cascade.kernels.scan`.

    Returns
    -------
    bool
    """
    return len(items) > 0 and suits(cascade) and bool((items[:, 2] == 1).all())


def suits(cascade: CompiledCascade) -> bool:
    """Whether :func:`scan_rows` can run ``cascade`` (on rows of consecutive windows): Haar
    features only (OpenCV's variance normalisation), trees of depth <= 2 (at most three
    nodes: the layouts of :func:`~vjboost.cascade.kernels.compile_cascade`'s shapes 2 and 3).

    Parameters
    ----------
    cascade : CompiledCascade

    Returns
    -------
    bool
    """
    return cascade.ops == OPS_HAAR and cascade.shape in (2, 3)


# ``parallel=True`` without a prange loop, as the window-by-window kernel (see
# vjboost.cascade.kernels._make_scan): numba's parallel pipeline compiles the window-by-window
# stages about five times faster than its plain pipeline; the runner silences its warning
@njit(cache=True, nogil=True, parallel=True)
def scan_rows(buf, items, tab, tabf, pro, prof, gate, skip0, stage_first, stage_thr,
              tree_node0, leaves, out_slot, out_score):  # pragma: no cover - numba
    """The windows of ``items`` (rows of consecutive windows) that every stage accepts.

    Row by row: the σ gate, the variance normaliser and the first stage's score of every
    window of the row, vectorised; then OpenCV's skip rule replayed along the row; then the
    other stages, window by window, on the windows the first stage accepts, while the row's
    integral data is still in the cache.

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
    skip0 : bool
        Skip the window after a first-stage rejection (OpenCV's detector; not after a σ gate
        refusal, as OpenCV): the first stage is computed for every window of the row, then
        the rule is replayed along the row, which visits exactly the windows the
        window-by-window kernel visits.
    stage_first, stage_thr, tree_node0, leaves
        The :class:`CompiledCascade`'s arrays: trees of depth <= 2 laid out root, then its
        children that are nodes (:func:`_children`), with four leaves (left-left, left-right,
        right-left, right-right).
    out_slot : ndarray of int64, shape (>= windows of items,)
        The output slot (``out_offset + x``) of every accepted window, in item order.
    out_score : ndarray of float64, shape (>= windows of items,)
        Their last stage's scores.

    Returns
    -------
    int
        How many windows every stage accepts (the filled length of the outputs).
    """
    width = 0
    for it in range(items.shape[0]):
        width = max(width, items[it, 1])
    iv = np.empty(width, np.float32)
    score = np.empty(width)
    gated = np.empty(width, np.bool_)
    area = prof[0]
    n_stages = stage_thr.shape[0]
    thr0 = stage_thr[0]
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
        for t in range(stage_first[0], stage_first[1]):
            nd = tree_node0[t]
            nb, ndd = _children(tree_node0, t)
            _tree_row(buf, row, nx, iv, score, tab, tabf, nd * REC, nb * REC, ndd * REC,
                      leaves[4 * t], leaves[4 * t + 1], leaves[4 * t + 2], leaves[4 * t + 3])
        x = 0
        while x < nx:
            if gated[x]:
                x += 1
                continue
            if score[x] < thr0:
                x += 2 if skip0 else 1
                continue
            p = row + x
            s = iv[x]
            sc = score[x]
            k = 1
            while k < n_stages:
                sc = 0.0
                for t in range(stage_first[k], stage_first[k + 1]):
                    sc += _tree_at(buf, p, s, tab, tabf, tree_node0, leaves, t)
                if sc < stage_thr[k]:
                    break
                k += 1
            if k == n_stages:
                out_slot[n] = obase + x
                out_score[n] = sc
                n += 1
            x += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _children(tree_node0, t):  # pragma: no cover - numba
    """The nodes that decide tree ``t``'s leaf after its root, left side then right side, as
    :func:`~vjboost.cascade.kernels.compile_cascade` lays out trees of depth <= 2: three
    nodes, the children; two, the one child on both sides (the leaf table repeats the leaf on
    the other side); one, the root again (its leaves repeated)."""
    nd = tree_node0[t]
    n = tree_node0[t + 1] - nd
    return nd + min(1, n - 1), nd + min(2, n - 1)


@njit(cache=True, nogil=True, inline="always")
def _tree_at(buf, p, s, tab, tabf, tree_node0, leaves, t):  # pragma: no cover - numba
    """The leaf of tree ``t`` (depth <= 2, see :func:`_children`) for the window at ``p``:
    the node tests are independent (none waits for the root's decision) and the leaf is
    picked by arithmetic on them, as the kernel picks it."""
    nb, nd = _children(tree_node0, t)
    o = tree_node0[t] * REC
    ga = np.int64(rects_value(tab, tabf, o, buf, p, s, s, True) < tabf[_U(o + _THR_R)])
    o = nb * REC
    gb = np.int64(rects_value(tab, tabf, o, buf, p, s, s, True) < tabf[_U(o + _THR_R)])
    o = nd * REC
    gd = np.int64(rects_value(tab, tabf, o, buf, p, s, s, True) < tabf[_U(o + _THR_R)])
    g = ga * gb + (1 - ga) * gd
    return leaves[_U(4 * t + 3 - 2 * ga - g)]


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
