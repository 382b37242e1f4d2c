"""Compiled features: every integral-channel feature as a fixed-size record, one evaluator.

A :class:`Program` describes ``Q`` features of one window size as reads of integral channel
planes (:mod:`vjboost.features.channels`): which planes, which rectangle corners, which weights,
which per-window normalisation. Binding it to a memory layout (:meth:`Program.bind`: the row and
plane strides of the int32 buffer that holds the planes) turns every feature into a record of
``REC`` int32 words (float32 fields viewed in place), and :func:`node_value` computes a feature
from its record at a window whose top-left integral entry is at offset ``p``.

That one function serves every place a feature is computed: the families' ``evaluate`` on
training windows (:func:`evaluate_program`), the cascade runner on window stacks, hard-negative
mining and detection over image pyramids (``vjboost.cascade.kernels``). A feature therefore has
exactly the same float32 value wherever it is computed.

Operations (``op``):

``OP_RECTS``
    ``(w0·R0 + w1·R1 + w2·R2) · norm · scale`` in float32, ``R_r`` the int32 sum of rectangle
    ``r`` (upright or 45° tilted corners; weight 0 ends the list), summed in that order as
    OpenCV's Haar evaluator does.
``OP_MBLBP``
    OpenCV's multi-block LBP code (0..255) of a 3×3 grid of blocks (categorical).
``OP_MBLTP``
    One half of a multi-block local ternary pattern (categorical, 0..255): the bits of
    OP_MBLBP's grid and order, set where ``s·(block − centre)·inv_var > scale`` (``s`` = +1 for
    the upper half, −1 for the lower; ``scale`` = τ·(block area)/(inner window area), so the
    test is "differs by more than τ window σ per pixel"); variance-normalised. Two more
    tolerance references (``LTP_MEAN``, ``LTP_LOCAL``) measure the tolerance on the grid itself:
    a bit is set where ``float32(s·(block − centre)) > scale·X``, ``scale`` = τ/9 and ``X`` the
    sum of the nine blocks (τ times the mean block) or ``sqrt(A·Σv² − (Σv)²)`` over the grid's
    ``A`` pixels (τ times the grid's grey-level σ, times the block area). *Detrended* records
    compare six times the differences left after removing the plane fitted to the nine block
    sums (a brightness ramp across the grid cancels), with six times the scale.
``OP_HOG``
    One entry of a block-normalised histogram of oriented gradients: the sum of orientation
    plane ``b`` over cell ``c`` of a block of up to 4 cells, normalised over all the block's
    ``n_cells × n_bins`` sums (L1, L1-sqrt, L2 or L2-Hys).

Per-window normalisations (``norm``):

``NORM_NONE``
    1.
``NORM_VARIANCE``
    OpenCV's ``1 / sqrt(A·Σv² − (Σv)²)`` over the inner window ``(1, 1, W − 2, H − 2)`` (planes
    ``gray`` and ``gray2``), 0 where that is not positive; the detector also rejects windows
    whose grey-level σ is at most ``min_std`` (OpenCV's gate) when a cascade uses it.
``NORM_GRADIENT``
    ``A / (Σ m + MAG_SCALE·A)`` over the inner window of the ``gradmag`` plane: the inverse of
    (mean quantised gradient magnitude + one grey level), a contrast normalisation.

Examples
--------
>>> import numpy as np
>>> from vjboost.features.channels import ChannelSet
>>> prog = Program.rects((4, 4), ChannelSet(["gray"]), rects=[[[0, 0, 2, 4], [2, 0, 2, 4]]],
...                      weights=[[1.0, -1.0]])
>>> w = np.array([[[9, 9, 1, 1]] * 4], np.uint8)      # one 4x4 window: bright left half
>>> evaluate_program(prog, w).tolist()
[[64.0]]
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
from numba import prange

from vjboost._errors import InputError
from vjboost._jit import variant
from vjboost.features.channels import MAG_SCALE, ChannelSet

__all__ = [
    "HOG_NORMS",
    "OPS_HAAR",
    "OPS_MBLBP",
    "OPS_MIXED",
    "OPS_RECTS",
    "NORM_GRADIENT",
    "NORM_NONE",
    "NORM_VARIANCE",
    "OP_HOG",
    "OP_MBLBP",
    "OP_MBLTP",
    "OP_RECTS",
    "LTP_LOCAL",
    "LTP_MEAN",
    "LTP_REFERENCES",
    "LTP_WINDOW",
    "REC",
    "BoundProgram",
    "Program",
    "evaluate_positions",
    "evaluate_program",
    "hog_block_norms",
    "hog_block_sums",
    "hog_entry",
    "mblbp_code",
    "mbltp_code",
    "node_value",
    "rects_value",
    "window_norms",
]

_JIT = {"cache": True, "nogil": True}

#: Unsigned indices (``buf[_U(i)]``): numba then skips the negative-index wrap-around check. A
#: plain global rather than an inlined helper function: numba inlines such a helper call by
#: call site, which made up most of a cascade kernel's compilation.
_U = np.uint64

OP_RECTS, OP_MBLBP, OP_HOG, OP_MBLTP = 0, 1, 2, 3
NORM_NONE, NORM_VARIANCE, NORM_GRADIENT = 0, 1, 2
#: block normalisations of OP_HOG, by code
HOG_NORMS = ("L1", "L1-sqrt", "L2", "L2-Hys")

#: int32 words per bound record (two 64-byte cache lines; a Haar node's data fills the first)
REC = 32
# word offsets inside a record
_OFS = 0                            # 16 corner offsets at 0..15 (OP_MBLBP grid, OP_HOG cells)
_W = 12                             # OP_RECTS: 12 offsets at 0..11, 3 float32 weights at 12..14
_THR_R = 15                         # OP_RECTS: float32 split threshold (set by cascade compilers)
_OP, _NORM, _SCALE = 16, 17, 18     # op code, normalisation, float32 scale
_THR = 19                           # other ordered ops: float32 split threshold
_CAT = 20                           # 1 for categorical features
_SUB = 21                           # free for compilers (e.g. a subset row)
_HNB, _HNC, _HTGT, _HNORM, _HPS = 22, 23, 24, 25, 26
_HEPS, _HCLIP = 27, 28              # float32
_HCELL = 29                         # OP_HOG: cell of the target entry (target // n_bins)
_LTP = 22                           # OP_MBLTP: +1 upper half, -1 lower (a HOG word: unused)
_LTPR = 23                          # OP_MBLTP: tolerance reference LTP_* (a HOG word: unused)
_LTPQ = 24                          # OP_MBLTP, LTP_LOCAL: offset of gray2 from the grid's plane
_LTPA = 25                          # OP_MBLTP, LTP_LOCAL: the grid's area in pixels
_LTPD = 30                          # OP_MBLTP: 1 to compare after removing the grid's trend

#: OP_MBLTP tolerance references, by code: the window's σ, the mean of the grid's nine blocks,
#: the grid's own σ
LTP_WINDOW, LTP_MEAN, LTP_LOCAL = 0, 1, 2
LTP_REFERENCES = ("window", "mean", "local")

#: per-feature arrays of a Program
_FIELDS = ("op", "norm", "plane", "corners", "weights", "scale", "hogi", "hogf", "categorical")

#: ``ops`` constants of :func:`node_value` (and of the cascade kernels built on it);
#: ``OPS_RECTS_MBLBP``: OP_RECTS, OP_MBLBP and OP_MBLTP records, no OP_HOG (the usual mixed
#: pool), read per node like ``OPS_MIXED`` but small enough for kernels to inline
OPS_MIXED, OPS_RECTS, OPS_MBLBP, OPS_HAAR, OPS_RECTS_MBLBP = 0, 1, 2, 3, 4


# --------------------------------------------------------------------------------------------
# The node evaluator (shared by every kernel that computes features)
# --------------------------------------------------------------------------------------------


@numba.njit(inline="always", **_JIT)
def _rsum(buf, p, tab, o):  # pragma: no cover - numba
    """int32 sum of the rectangle whose 4 corner offsets start at ``tab[o]``."""
    return np.int32(buf[_U(p + tab[_U(o)])] - buf[_U(p + tab[_U(o + 1)])]
                    - buf[_U(p + tab[_U(o + 2)])] + buf[_U(p + tab[_U(o + 3)])])


@numba.njit(inline="always", **_JIT)
def _grid_diffs(tab, o, buf, p):  # pragma: no cover - numba
    """``block − centre`` (int32) of the 3×3 grid of record ``o``, in bit order: the bit 128
    block first, clockwise from the top-left block (OpenCV's LBPEvaluator)."""
    q = o + _OFS
    a0 = buf[_U(p + tab[_U(q)])]
    a1 = buf[_U(p + tab[_U(q + 1)])]
    a2 = buf[_U(p + tab[_U(q + 2)])]
    a3 = buf[_U(p + tab[_U(q + 3)])]
    a4 = buf[_U(p + tab[_U(q + 4)])]
    a5 = buf[_U(p + tab[_U(q + 5)])]
    a6 = buf[_U(p + tab[_U(q + 6)])]
    a7 = buf[_U(p + tab[_U(q + 7)])]
    a8 = buf[_U(p + tab[_U(q + 8)])]
    a9 = buf[_U(p + tab[_U(q + 9)])]
    a10 = buf[_U(p + tab[_U(q + 10)])]
    a11 = buf[_U(p + tab[_U(q + 11)])]
    a12 = buf[_U(p + tab[_U(q + 12)])]
    a13 = buf[_U(p + tab[_U(q + 13)])]
    a14 = buf[_U(p + tab[_U(q + 14)])]
    a15 = buf[_U(p + tab[_U(q + 15)])]
    # corner grid c[j*4+i]; block (i, j) = c0 - c1 - c4 + c5
    cv = np.int32(a5 - a6 - a9 + a10)
    return (np.int32(np.int32(a0 - a1 - a4 + a5) - cv),
            np.int32(np.int32(a1 - a2 - a5 + a6) - cv),
            np.int32(np.int32(a2 - a3 - a6 + a7) - cv),
            np.int32(np.int32(a6 - a7 - a10 + a11) - cv),
            np.int32(np.int32(a10 - a11 - a14 + a15) - cv),
            np.int32(np.int32(a9 - a10 - a13 + a14) - cv),
            np.int32(np.int32(a8 - a9 - a12 + a13) - cv),
            np.int32(np.int32(a4 - a5 - a8 + a9) - cv))


@numba.njit(inline="always", **_JIT)
def _pack(b7, b6, b5, b4, b3, b2, b1, b0):  # pragma: no cover - numba
    """Eight bools, most significant first, as an int code."""
    return (np.int64(b7) << 7 | np.int64(b6) << 6 | np.int64(b5) << 5 | np.int64(b4) << 4
            | np.int64(b3) << 3 | np.int64(b2) << 2 | np.int64(b1) << 1 | np.int64(b0))


@numba.njit(inline="always", **_JIT)
def mblbp_code(tab, o, buf, p):  # pragma: no cover - numba
    """OpenCV's multi-block LBP code (int, 0..255) of the OP_MBLBP record at word ``o``.

    Parameters
    ----------
    tab : ndarray of int32, shape (Q * REC,)
        The bound records (:attr:`BoundProgram.tab`).
    o : int
        Word offset of the record in ``tab`` (``q * REC`` for feature ``q``).
    buf : ndarray of int32
        The flat buffer of integral channel planes.
    p : int
        Offset in ``buf`` of the window's top-left integral entry.

    Returns
    -------
    int
        Bits set clockwise from the top-left block (128) for each outer block whose sum is at
        least the centre block's.
    """
    d7, d6, d5, d4, d3, d2, d1, d0 = _grid_diffs(tab, o, buf, p)
    return _pack(d7 >= 0, d6 >= 0, d5 >= 0, d4 >= 0, d3 >= 0, d2 >= 0, d1 >= 0, d0 >= 0)


@numba.njit(inline="always", **_JIT)
def _ltp_bit(d, sign, iv, s):  # pragma: no cover - numba
    """One ternary comparison: ``sign·d`` (an int32 block − centre) over the tolerance."""
    return np.float32(sign * d) * iv > s


@numba.njit(inline="always", **_JIT)
def _detrend(e0, e1, e2, e3, e4, e5, e6, e7):  # pragma: no cover - numba
    """Six times the ``block − centre`` differences (in :func:`_grid_diffs`' order, clockwise
    from the top-left block) of the grid's nine block sums after removing their least-squares
    plane: ``6·e − Gx·dx − Gy·dy``, ``Gx``/``Gy`` the right-minus-left column and
    bottom-minus-top row sums (in differences: the centre cancels), ``(dx, dy)`` the block's
    position from the centre. int64; a brightness ramp across the grid cancels exactly."""
    e0, e1, e2, e3 = np.int64(e0), np.int64(e1), np.int64(e2), np.int64(e3)
    e4, e5, e6, e7 = np.int64(e4), np.int64(e5), np.int64(e6), np.int64(e7)
    gx = e2 + e3 + e4 - e0 - e7 - e6
    gy = e6 + e5 + e4 - e0 - e1 - e2
    return (6 * e0 + gx + gy, 6 * e1 + gy, 6 * e2 - gx + gy, 6 * e3 - gx,
            6 * e4 - gx - gy, 6 * e5 - gy, 6 * e6 + gx - gy, 6 * e7 + gx)


@numba.njit(inline="always", **_JIT)
def _ltp_tolerance(tab, tabf, o, buf, p, inv_var):  # pragma: no cover - numba
    """``(m, t)`` of the OP_MBLTP record at ``o``: a bit is set where ``float32(s·d)·m > t``.

    ``LTP_WINDOW``: ``(inv_var, scale)``. ``LTP_MEAN``: ``(1, scale·float32(S))``, ``S`` the sum
    of the grid's nine blocks (the corners 0, 3, 12, 15 of its 4×4 grid, read anyway).
    ``LTP_LOCAL``: ``(1, scale·float32(sqrt(nf)))``, ``nf = A·Σv² − (Σv)²`` over the grid's
    ``A`` pixels (four more reads, of ``gray2``; ``Σv²`` modulo 2³² as OpenCV reads it).
    """
    ref = tab[_U(o + _LTPR)]
    s = tabf[_U(o + _SCALE)]
    if ref == 0:
        return inv_var, s
    q = o + _OFS
    c0 = tab[_U(q)]
    c3 = tab[_U(q + 3)]
    c12 = tab[_U(q + 12)]
    c15 = tab[_U(q + 15)]
    tot = np.int32(buf[_U(p + c0)] - buf[_U(p + c3)] - buf[_U(p + c12)] + buf[_U(p + c15)])
    if ref == 1:
        return np.float32(1.0), s * np.float32(tot)
    g = p + tab[_U(o + _LTPQ)]
    sq = (np.int64(buf[_U(g + c0)]) - np.int64(buf[_U(g + c3)]) - np.int64(buf[_U(g + c12)])
          + np.int64(buf[_U(g + c15)])) & 0xFFFFFFFF
    area = np.float64(tab[_U(o + _LTPA)])
    nf = area * np.float64(sq) - np.float64(tot) * np.float64(tot)
    return np.float32(1.0), s * np.float32(math.sqrt(nf) if nf > 0.0 else 0.0)


@numba.njit(inline="always", **_JIT)
def mbltp_code(tab, tabf, o, buf, p, inv_var):  # pragma: no cover - numba
    """One half of the multi-block local ternary pattern (int, 0..255) of the OP_MBLTP record
    at word ``o`` of ``tab`` (``tabf``: the same memory as float32), for the window at offset
    ``p`` of ``buf``, whose variance normaliser is ``inv_var`` (:func:`window_norms`; 0 for a
    flat window, whose code is then 0): OP_MBLBP's bit order, a bit set where
    ``float32(s·(block − centre))·inv_var > scale`` in float32, ``s`` the record's half (+1
    upper, −1 lower), for the window-σ reference; for the grid's own references (``LTP_MEAN``,
    ``LTP_LOCAL``) where ``float32(s·(block − centre)) > scale·X`` (:func:`_ltp_tolerance`).
    """
    d7, d6, d5, d4, d3, d2, d1, d0 = _grid_diffs(tab, o, buf, p)
    if tab[_U(o + _LTPD)] != 0:
        d7, d6, d5, d4, d3, d2, d1, d0 = _detrend(d7, d6, d5, d4, d3, d2, d1, d0)
    sign = np.int32(tab[_U(o + _LTP)])
    inv_var, s = _ltp_tolerance(tab, tabf, o, buf, p, inv_var)
    return _pack(_ltp_bit(d7, sign, inv_var, s), _ltp_bit(d6, sign, inv_var, s),
                 _ltp_bit(d5, sign, inv_var, s), _ltp_bit(d4, sign, inv_var, s),
                 _ltp_bit(d3, sign, inv_var, s), _ltp_bit(d2, sign, inv_var, s),
                 _ltp_bit(d1, sign, inv_var, s), _ltp_bit(d0, sign, inv_var, s))


@numba.njit(inline="always", **_JIT)
def rects_value(tab, tabf, o, buf, p, inv_var, inv_grad, haar):  # pragma: no cover - numba
    """Value of the OP_RECTS record at word ``o``: ``(w0·R0 + w1·R1 + w2·R2) · norm · scale``;
    ``haar``: OpenCV's Haar features (variance normalisation, unit scale: the record's first
    cache line is all it reads).

    Parameters
    ----------
    tab : ndarray of int32, shape (Q * REC,)
        The bound records (:attr:`BoundProgram.tab`).
    tabf : ndarray of float32
        ``tab`` viewed as float32 (the same memory).
    o : int
        Word offset of the record in ``tab``.
    buf : ndarray of int32
        The flat buffer of integral channel planes.
    p : int
        Offset in ``buf`` of the window's top-left integral entry.
    inv_var, inv_grad : float32
        The window's normalisers (:func:`window_norms`).
    haar : bool
        Compile-time constant: the record is one of OpenCV's Haar features.

    Returns
    -------
    float32
    """
    v = tabf[_U(o + _W)] * np.float32(_rsum(buf, p, tab, o + _OFS))
    v += tabf[_U(o + _W + 1)] * np.float32(_rsum(buf, p, tab, o + _OFS + 4))
    w2 = tabf[_U(o + _W + 2)]
    if w2 != 0.0:
        v += w2 * np.float32(_rsum(buf, p, tab, o + _OFS + 8))
    if haar:
        return v * inv_var
    nk = tab[_U(o + _NORM)]
    if nk == 1:
        v = v * inv_var
    elif nk == 2:
        v = v * inv_grad
    return v * tabf[_U(o + _SCALE)]


@numba.njit(inline="always", **_JIT)
def node_value(tab, tabf, o, buf, p, inv_var, inv_grad, ops):  # pragma: no cover - numba
    """Value of the feature whose record starts at word ``o`` of ``tab`` (``tabf``: the same
    memory as float32), for the window at offset ``p`` of ``buf`` (int32 integral planes).

    ``inv_var``/``inv_grad`` are the window's normalisers (:func:`window_norms`). ``ops`` is a
    compile-time constant when the caller knows the features' operations (``OPS_*``):
    ``OPS_RECTS`` only OP_RECTS, ``OPS_MBLBP`` only OP_MBLBP, ``OPS_HAAR`` only OP_RECTS with
    the variance normalisation and unit scale (OpenCV's Haar features: the record's first
    cache line is all it reads); ``OPS_MIXED`` reads ``op`` from the record, and so does
    ``OPS_RECTS_MBLBP`` (OP_RECTS, OP_MBLBP or OP_MBLTP records only). Returns float32
    (MB-LBP codes as float32 integers). Kernels specialised for one operation may call
    :func:`rects_value` or :func:`mblbp_code` directly (smaller code, integer codes).

    Parameters
    ----------
    tab : ndarray of int32, shape (Q * REC,)
        The bound records (:attr:`BoundProgram.tab`).
    tabf : ndarray of float32
        ``tab`` viewed as float32 (the same memory).
    o : int
        Word offset of the record in ``tab`` (``q * REC`` for feature ``q``).
    buf : ndarray of int32
        The flat buffer of integral channel planes.
    p : int
        Offset in ``buf`` of the window's top-left integral entry.
    inv_var, inv_grad : float32
        The window's normalisers (:func:`window_norms`).
    ops : int
        One of ``OPS_MIXED``, ``OPS_RECTS``, ``OPS_MBLBP``, ``OPS_HAAR``.

    Returns
    -------
    float32
    """
    if ops == 1 or ops == 3:
        op = 0
    elif ops == 2:
        op = 1
    else:
        op = tab[_U(o + _OP)]
    if op == 0:
        return rects_value(tab, tabf, o, buf, p, inv_var, inv_grad, ops == 3)
    if op == 3:
        return np.float32(mbltp_code(tab, tabf, o, buf, p, inv_var))
    if op == 1 or ops == 4:
        return np.float32(mblbp_code(tab, o, buf, p))
    # OP_HOG: the block's normalisers, then the entry
    a, b = hog_block_norms(tab, tabf, o, buf, p, _NO_SUMS)
    return hog_entry(tab, tabf, o, buf, p, a, b, _NO_SUMS)


#: "no block sums at hand": the OP_HOG helpers then read the block's rectangle sums themselves
_NO_SUMS = np.zeros(0, dtype=np.float64)


@numba.njit(inline="always", **_JIT)
def _hog_sum(tab, o, buf, p, sums, c, b, nb):  # pragma: no cover - numba
    """Sum of bin ``b`` over cell ``c`` of the OP_HOG block of record ``o`` at window ``p``:
    from ``sums`` when given, else read from the planes (the same integer either way)."""
    if sums.shape[0] > 0:
        return sums[c * nb + b]
    return np.float64(_rsum(buf, p + b * tab[_U(o + _HPS)], tab, o + _OFS + 4 * c))


@numba.njit(inline="always", **_JIT)
def hog_block_sums(tab, o, buf, p, out):  # pragma: no cover - numba
    """The ``n_cells × n_bins`` rectangle sums of the OP_HOG block of record ``o`` at window
    ``p`` into ``out`` (float64, cell-major), for :func:`hog_block_norms`/:func:`hog_entry`.

    Parameters
    ----------
    tab : ndarray of int32, shape (Q * REC,)
        The bound records (an OP_HOG record at ``o``; :attr:`BoundProgram.tab`).
    o : int
        Word offset of the record in ``tab`` (``q * REC`` for feature ``q``).
    buf : ndarray of int32
        The flat buffer of integral channel planes.
    p : int
        Offset in ``buf`` of the window's top-left integral entry.
    out : ndarray of float64, shape (>= n_cells * n_bins,)
        Receives sum ``(c, b)`` at ``c * n_bins + b``.
    """
    nb = tab[_U(o + _HNB)]
    for c in range(tab[_U(o + _HNC)]):
        for b in range(nb):
            out[c * nb + b] = _hog_sum(tab, o, buf, p, _NO_SUMS, c, b, nb)


@numba.njit(inline="always", **_JIT)
def hog_block_norms(tab, tabf, o, buf, p, sums):  # pragma: no cover - numba
    """The normalisers ``(a, b)`` of the OP_HOG block of record ``o`` at window ``p``.

    Two passes over the block's ``n_cells × n_bins`` sums (``sums`` from
    :func:`hog_block_sums`, or ``_NO_SUMS`` to read them from the planes without scratch
    memory). They depend on the block only, so the entries of a block may share them
    (:func:`hog_entry`).

    Parameters
    ----------
    tab, tabf, o, buf, p
        As for :func:`node_value` (an OP_HOG record at ``o``).
    sums : ndarray of float64
        The block's sums (:func:`hog_block_sums`) or ``_NO_SUMS`` (empty).

    Returns
    -------
    a, b : float
        L1 and L1-sqrt: ``(Σ x + eps, 0)``; L2: ``(sqrt(Σ x² + eps²), 0)``; L2-Hys: that norm
        and the norm of the clipped, normalised sums.
    """
    nb = tab[_U(o + _HNB)]
    nc = tab[_U(o + _HNC)]
    kind = tab[_U(o + _HNORM)]
    eps = np.float64(tabf[_U(o + _HEPS)])
    clip = np.float64(tabf[_U(o + _HCLIP)])
    tot = 0.0
    for c in range(nc):
        for b in range(nb):
            x = _hog_sum(tab, o, buf, p, sums, c, b, nb)
            tot += x if kind <= 1 else x * x
    if kind <= 1:
        return tot + eps, 0.0
    n1 = math.sqrt(tot + eps * eps)
    if kind == 2:
        return n1, 0.0
    tot2 = 0.0
    for c in range(nc):
        for b in range(nb):
            x = min(_hog_sum(tab, o, buf, p, sums, c, b, nb) / n1, clip)
            tot2 += x * x
    return n1, math.sqrt(tot2 + eps * eps)


@numba.njit(inline="always", **_JIT)
def hog_entry(tab, tabf, o, buf, p, a, b, sums):  # pragma: no cover - numba
    """Value of OP_HOG record ``o`` at window ``p`` given its block's normalisers ``(a, b)``
    (and its sums, or ``_NO_SUMS``).

    Parameters
    ----------
    tab, tabf, o, buf, p
        As for :func:`node_value` (an OP_HOG record at ``o``).
    a, b : float
        The block's normalisers (:func:`hog_block_norms`).
    sums : ndarray of float64
        The block's sums (:func:`hog_block_sums`) or ``_NO_SUMS`` (empty).

    Returns
    -------
    float32
        The normalised entry times the record's scale.
    """
    nb = tab[_U(o + _HNB)]
    c = tab[_U(o + _HCELL)]
    target = _hog_sum(tab, o, buf, p, sums, c, tab[_U(o + _HTGT)] - c * nb, nb)
    kind = tab[_U(o + _HNORM)]
    if kind == 1:
        v = math.sqrt(target / a)
    elif kind == 3:
        v = min(target / a, np.float64(tabf[_U(o + _HCLIP)])) / b
    else:
        v = target / a
    return np.float32(v) * tabf[_U(o + _SCALE)]


@numba.njit(inline="always", **_JIT)
def _same_block(tab, o, q):  # pragma: no cover - numba
    """Records ``o`` and ``q`` are entries of the same OP_HOG block (same normalisers)."""
    for k in range(16):
        if tab[_U(o + _OFS + k)] != tab[_U(q + _OFS + k)]:
            return False
    for k in (_HNB, _HNC, _HNORM, _HPS, _HEPS, _HCLIP):
        if tab[_U(o + k)] != tab[_U(q + k)]:
            return False
    return True


@numba.njit(inline="always", **_JIT)
def variance_norm(buf, p, pro, area):  # pragma: no cover - numba
    """OpenCV's variance normaliser of the window at ``p``: ``(inv_var, nf)`` with
    ``nf = A·Σv² − (Σv)²`` and ``inv_var = 1 / sqrt(nf)`` (0 where ``nf <= 0``); ``area`` is the
    inner area ``A`` (``prof[0]`` of :func:`window_norms`)."""
    vs = np.int32(buf[_U(p + pro[0])] - buf[_U(p + pro[1])] - buf[_U(p + pro[2])]
                  + buf[_U(p + pro[3])])
    vq = (np.int64(buf[_U(p + pro[4])]) - np.int64(buf[_U(p + pro[5])])
          - np.int64(buf[_U(p + pro[6])]) + np.int64(buf[_U(p + pro[7])])) & 0xFFFFFFFF
    nf = area * np.float64(vq) - np.float64(vs) * np.float64(vs)
    return (np.float32(1.0 / math.sqrt(nf)) if nf > 0.0 else np.float32(0.0)), nf


@numba.njit(inline="always", **_JIT)
def window_norms(buf, p, pro, prof):  # pragma: no cover - numba
    """The window's normalisers and its variance term: ``(inv_var, inv_grad, nf)``.

    ``pro`` (int64, 12): corner offsets of the inner window in the ``gray``, ``gray2`` and
    ``gradmag`` planes; ``prof`` (float64, 2): the inner area when the variance / gradient
    normalisation is used, else 0. ``nf = A·Σv² − (Σv)²`` (0 when unused) feeds the detector's
    σ gate.

    Parameters
    ----------
    buf : ndarray of int32
        The flat buffer of integral channel planes.
    p : int
        Offset in ``buf`` of the window's top-left integral entry.
    pro : ndarray of int64, shape (12,)
        :attr:`BoundProgram.pro`.
    prof : ndarray of float64, shape (2,)
        :attr:`BoundProgram.prof`.

    Returns
    -------
    inv_var : float32
        ``1 / sqrt(nf)`` (0 where ``nf <= 0``; 1 without the variance normalisation).
    inv_grad : float32
        ``A / (Σ m + MAG_SCALE·A)`` (1 without the gradient normalisation).
    nf : float
    """
    inv_var = np.float32(1.0)
    inv_grad = np.float32(1.0)
    nf = 0.0
    area = prof[0]
    if area > 0.0:
        inv_var, nf = variance_norm(buf, p, pro, area)
    area_g = prof[1]
    if area_g > 0.0:
        tot = np.int32(buf[_U(p + pro[8])] - buf[_U(p + pro[9])] - buf[_U(p + pro[10])]
                       + buf[_U(p + pro[11])])
        inv_grad = np.float32(area_g / (np.float64(tot) + MAG_SCALE * area_g))
    return inv_var, inv_grad, nf


def _make_evaluate(ops: int):
    """The kernel ``out[q, j]`` = feature ``q`` at window offset ``bases[j]`` for one ``OPS_*``
    constant (a compile-time constant of the closure, so Haar-only programs skip the dispatch).

    Windows go in blocks of 64 (one task; the block's integrals stay in cache while the loop
    runs over the features); with fewer than 16 blocks the features of a block are cut into
    chunks too, so that a sampler's first steps (many features, a few windows) use every thread.
    The features are visited in the order ``order`` (ascending records, :func:`_visit_order`).
    Consecutive OP_HOG features of one block share the block's sums and normalisers (the
    values are those of :func:`node_value`, which computes the same integers and the same
    float64 arithmetic per feature).
    """

    @numba.njit(parallel=True, **_JIT)
    @variant(str(ops))
    def evaluate(buf, bases, tab, tabf, pro, prof, hog_len, rows, order, out
                 ):  # pragma: no cover - numba
        """``out[q, j]``: feature ``rows[q]`` at the window of offset ``bases[j]``.

        Parameters
        ----------
        buf : ndarray of int32
            The flat buffer of integral channel planes.
        bases : ndarray of int64, shape (P,)
            Offsets of the windows' top-left integral entries.
        tab, tabf, pro, prof
            The bound program (:class:`BoundProgram`).
        hog_len : int
            Largest ``n_cells * n_bins`` of the program's OP_HOG blocks (scratch per window).
        rows : ndarray of int64, shape (Q,)
            The records evaluated (a bound program serves any subset of its features).
        order : ndarray of int64, shape (Q,)
            The order in which the rows are visited (:func:`_visit_order`: ascending records).
        out : ndarray of float32, shape (Q, P)
            Filled in place.
        """
        n_q = out.shape[0]
        n_p = bases.shape[0]
        n_blk = (n_p + 63) // 64
        # few windows (the first steps of a sampler: many features on a few draws): the
        # features are split into chunks too, so that every thread has a share
        n_qc = max(1, min(n_q // 512, (16 + n_blk - 1) // n_blk))
        for tile in prange(n_blk * n_qc):
            blk = tile // n_qc
            qc = tile - blk * n_qc
            q0 = qc * n_q // n_qc
            q1 = (qc + 1) * n_q // n_qc
            j0 = blk * 64
            j1 = min(n_p, j0 + 64)
            iv = np.empty(j1 - j0, dtype=np.float32)
            ig = np.empty(j1 - j0, dtype=np.float32)
            ha = np.empty(j1 - j0, dtype=np.float64)
            hb = np.empty(j1 - j0, dtype=np.float64)
            hs = np.empty((j1 - j0, max(hog_len, 1)), dtype=np.float64)
            for j in range(j0, j1):
                a, b, _ = window_norms(buf, bases[j], pro, prof)
                iv[j - j0] = a
                ig[j - j0] = b
            last = -1
            for qi in range(q0, q1):
                q = order[qi]
                o = rows[q] * REC
                if ops == OPS_MIXED and tab[_U(o + _OP)] == OP_HOG:
                    if last < 0 or not _same_block(tab, o, last):
                        for j in range(j0, j1):
                            sums = hs[j - j0]
                            hog_block_sums(tab, o, buf, bases[j], sums)
                            ha[j - j0], hb[j - j0] = hog_block_norms(tab, tabf, o, buf,
                                                                     bases[j], sums)
                        last = o
                    for j in range(j0, j1):
                        out[q, j] = hog_entry(tab, tabf, o, buf, bases[j], ha[j - j0],
                                              hb[j - j0], hs[j - j0])
                    continue
                for j in range(j0, j1):
                    out[q, j] = node_value(tab, tabf, o, buf, bases[j], iv[j - j0],
                                           ig[j - j0], ops)

    return evaluate


_EVALUATORS: dict[int, Any] = {}

#: below this many features the records are visited in the order given (they fit in cache)
_ORDER_MIN = 2048


@numba.njit(**_JIT)
def _counting_order(rows, n_records):  # pragma: no cover - numba
    """Positions of ``rows`` by ascending record (stable counting sort, O(Q + n_records))."""
    start = np.zeros(n_records + 1, dtype=np.int64)
    for r in rows:
        start[r + 1] += 1
    for i in range(n_records):
        start[i + 1] += start[i]
    order = np.empty(rows.shape[0], dtype=np.int64)
    for q in range(rows.shape[0]):
        r = rows[q]
        order[start[r]] = q
        start[r] += 1
    return order


def _visit_order(rows: np.ndarray, n_records: int) -> np.ndarray:
    """The order in which the evaluation kernel visits ``rows``: ascending records.

    A sampler asks for thousands of features in random order on a few windows; each feature's
    record (32 int32 plus floats) is then a cache miss, which cost more than the feature itself.
    Visited in ascending order the records stream from memory (3.5x faster on 131,072 of the
    139,374 features of ``haar,channels`` at 20x20 on 12 windows); the values are the same,
    each written to its own row.
    """
    q = rows.shape[0]
    if q < _ORDER_MIN or bool((rows[1:] >= rows[:-1]).all()):
        return np.arange(q, dtype=np.int64)
    if 64 * q < n_records:  # sparse: a comparison sort costs less than the counting array
        return np.argsort(rows, kind="stable").astype(np.int64, copy=False)
    return _counting_order(rows, n_records)


def _evaluate_kernel(ops: int):
    if ops not in _EVALUATORS:
        _EVALUATORS[ops] = _make_evaluate(ops)
    return _EVALUATORS[ops]


# --------------------------------------------------------------------------------------------
# Programs
# --------------------------------------------------------------------------------------------


def _f32(v: Any) -> np.ndarray:
    return np.asarray(v, dtype=np.float64).astype(np.float32)


def _rect_corners(x, y, w, h, tilted) -> list[tuple[int, int]]:
    """Corners ``(dx, dy)`` of a rectangle, in the order ``+p0 − p1 − p2 + p3``."""
    if tilted:
        return [(x, y), (x - h, y + h), (x + w, y + w), (x + w - h, y + w + h)]
    return [(x, y), (x + w, y), (x, y + h), (x + w, y + h)]


@dataclass(frozen=True, eq=False)
class BoundProgram:
    """A program bound to a buffer layout: what the kernels read.

    Attributes
    ----------
    tab : ndarray of int32, shape (Q * REC,)
        The records (``tabf`` is the same memory as float32).
    pro : ndarray of int64, shape (12,)
    prof : ndarray of float64, shape (2,)
        Normaliser corners and areas (:func:`window_norms`).
    """

    tab: np.ndarray
    pro: np.ndarray
    prof: np.ndarray

    @property
    def tabf(self) -> np.ndarray:
        return self.tab.view(np.float32)


@dataclass(frozen=True, eq=False)
class Program:
    """``Q`` features as reads of integral channel planes (see the module docstring).

    Build programs with :meth:`rects`, :meth:`mblbp`, :meth:`mbltp`, :meth:`hog` and combine
    them with :meth:`concat`; :meth:`take` selects features. Arrays are indexed by feature.

    Attributes
    ----------
    window_shape : (height, width)
    channels : ChannelSet
    op, norm : ndarray of int8, shape (Q,)
    plane : ndarray of int32, shape (Q, 4)
        Plane (index into ``channels``) of each rectangle group (OP_RECTS: rectangle r;
        OP_MBLBP / OP_HOG: entry 0, for HOG the first orientation plane).
    corners : ndarray of int32, shape (Q, 16, 2)
        ``(dx, dy)`` corners in window coordinates: 4 per rectangle (OP_RECTS, OP_HOG cells) or
        the 4×4 grid (OP_MBLBP, OP_MBLTP).
    weights : ndarray of float32, shape (Q, 3)
        OP_RECTS: the rectangles' weights; OP_MBLTP: ``weights[:, 0]`` is the half (+1 upper,
        −1 lower).
    scale : ndarray of float32, shape (Q,)
    hogi : ndarray of int32, shape (Q, 4)
        ``(n_bins, n_cells, target, norm code)`` of OP_HOG features; OP_MBLTP: ``hogi[:, 1]``
        is the tolerance reference (``LTP_*``).
    hogf : ndarray of float32, shape (Q, 2)
        ``(eps, clip)`` of OP_HOG features.
    categorical : ndarray of bool, shape (Q,)
    """

    window_shape: tuple[int, int]
    channels: ChannelSet
    op: np.ndarray
    norm: np.ndarray
    plane: np.ndarray
    corners: np.ndarray
    weights: np.ndarray
    scale: np.ndarray
    hogi: np.ndarray
    hogf: np.ndarray
    categorical: np.ndarray
    _checked: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        q = self.op.shape[0]
        for name, shape in (("norm", (q,)), ("plane", (q, 4)), ("corners", (q, 16, 2)),
                            ("weights", (q, 3)), ("scale", (q,)), ("hogi", (q, 4)),
                            ("hogf", (q, 2)), ("categorical", (q,))):
            if getattr(self, name).shape != shape:
                raise ValueError(f"Program.{name}: expected shape {shape}, got "
                                 f"{getattr(self, name).shape}")
        if not self._checked:
            self._check()

    # -- construction ---------------------------------------------------------------------------

    @staticmethod
    def _empty(q: int) -> dict[str, np.ndarray]:
        return {
            "op": np.zeros(q, np.int8), "norm": np.zeros(q, np.int8),
            "plane": np.zeros((q, 4), np.int32), "corners": np.zeros((q, 16, 2), np.int32),
            "weights": np.zeros((q, 3), np.float32), "scale": np.ones(q, np.float32),
            "hogi": np.zeros((q, 4), np.int32), "hogf": np.zeros((q, 2), np.float32),
            "categorical": np.zeros(q, bool),
        }

    @classmethod
    def _with_norm_planes(cls, channels: ChannelSet, norm: np.ndarray) -> ChannelSet:
        extra = (["gray", "gray2"] if (norm == NORM_VARIANCE).any() else []) + (
            ["gradmag"] if (norm == NORM_GRADIENT).any() else [])
        return channels.union(ChannelSet(extra)) if extra else channels

    @classmethod
    def rects(cls, window_shape: Sequence[int], channels: ChannelSet, *, rects: Any,
              weights: Any, planes: Any = None, tilted: Any = None, norm: Any = NORM_NONE,
              scale: Any = 1.0, categorical: Any = False) -> Program:
        """Weighted sums of up to 3 rectangles per feature (OP_RECTS).

        Parameters
        ----------
        window_shape : (height, width)
        channels : ChannelSet
            Planes the rectangles read (normalisation planes are added as needed).
        rects : array-like of int, shape (Q, R, 4), R <= 3
            ``(x, y, w, h)`` per rectangle (tilted: OpenCV's 45° rectangle hanging from
            corner ``(x, y)``, ``w`` along the down-right diagonal, ``h`` along the down-left).
        weights : array-like of float, shape (Q, R)
            A zero weight ends a feature's list (its later rectangles are ignored).
        planes : array-like of int, shape (Q, R) or (Q,), optional
            Plane of each rectangle (index into ``channels``; default 0).
        tilted : array-like of bool, shape (Q, R) or (Q,), optional
            45° rectangles (their plane should be the ``tilted`` integral).
        norm : int or array-like of int, shape (Q,)
        scale : float or array-like, shape (Q,)
        categorical : bool or array-like of bool, shape (Q,)
            Features whose values are category codes (e.g. one-pixel reads of a code plane).
        """
        r = np.asarray(rects, dtype=np.int64)
        if r.ndim != 3 or r.shape[2] != 4 or not 1 <= r.shape[1] <= 3:
            raise ValueError(f"rects: expected (Q, R<=3, 4) (x, y, w, h), got {r.shape}")
        q, n_r = r.shape[:2]
        wts = np.asarray(weights, dtype=np.float64).reshape(q, n_r)
        pl = (np.zeros((q, n_r), np.int64) if planes is None
              else np.broadcast_to(np.asarray(planes, np.int64).reshape(q, -1), (q, n_r)))
        tl = (np.zeros((q, n_r), bool) if tilted is None
              else np.broadcast_to(np.asarray(tilted, bool).reshape(q, -1), (q, n_r)))
        d = cls._empty(q)
        d["op"][:] = OP_RECTS
        d["categorical"][:] = np.broadcast_to(np.asarray(categorical, bool), (q,))
        d["norm"][:] = np.broadcast_to(np.asarray(norm, np.int8), (q,))
        d["scale"][:] = _f32(np.broadcast_to(np.asarray(scale, np.float64), (q,)))
        d["weights"][:, :n_r] = _f32(wts)
        for k in range(n_r):
            d["plane"][:, k] = pl[:, k]
            x, y, w, h = (r[:, k, j] for j in range(4))
            t = tl[:, k]
            cx = np.stack([x, np.where(t, x - h, x + w), np.where(t, x + w, x),
                           np.where(t, x + w - h, x + w)], axis=1)
            cy = np.stack([y, np.where(t, y + h, y), np.where(t, y + w, y + h),
                           np.where(t, y + w + h, y + h)], axis=1)
            d["corners"][:, 4 * k:4 * k + 4, 0] = cx
            d["corners"][:, 4 * k:4 * k + 4, 1] = cy
        used = np.cumprod(d["weights"] != 0, axis=1).astype(bool)  # a zero weight ends the list
        d["weights"][~used] = 0
        for k in range(3):
            d["corners"][~used[:, k], 4 * k:4 * k + 4] = 0
            d["plane"][~used[:, k], k] = 0
        chans = cls._with_norm_planes(channels, d["norm"])
        return cls(tuple(int(v) for v in window_shape), chans, **d)

    @classmethod
    def mblbp(cls, window_shape: Sequence[int], *, blocks: Any,
              channels: ChannelSet | None = None, plane: int = 0) -> Program:
        """Multi-block LBP codes (OP_MBLBP, categorical) of 3×3 grids of ``w×h`` blocks.

        Parameters
        ----------
        window_shape : (height, width)
        blocks : array-like of int, shape (Q, 4)
            ``(x, y, w, h)``: the top-left block of each grid.
        channels : ChannelSet, optional
            Default ``ChannelSet(["gray"])``; ``plane`` is the plane the grid reads.
        """
        b = np.asarray(blocks, dtype=np.int64).reshape(-1, 4)
        q = b.shape[0]
        d = cls._empty(q)
        d["op"][:] = OP_MBLBP
        d["categorical"][:] = True
        d["plane"][:, 0] = plane
        j, i = np.divmod(np.arange(16), 4)
        d["corners"][:, :, 0] = b[:, 0:1] + i[None] * b[:, 2:3]
        d["corners"][:, :, 1] = b[:, 1:2] + j[None] * b[:, 3:4]
        chans = channels if channels is not None else ChannelSet(["gray"])
        return cls(tuple(int(v) for v in window_shape), chans, **d)

    @classmethod
    def mbltp(cls, window_shape: Sequence[int], *, blocks: Any, tolerance: Any, upper: Any,
              channels: ChannelSet | None = None, plane: int = 0,
              reference: Any = "window", detrend: Any = False) -> Program:
        """Halves of multi-block local ternary patterns (OP_MBLTP, categorical) of 3×3 grids of
        ``w×h`` blocks, with tolerances in units of the window's grey-level σ.

        Parameters
        ----------
        window_shape : (height, width)
        blocks : array-like of int, shape (Q, 4)
            ``(x, y, w, h)``: the top-left block of each grid.
        tolerance : float or array-like of float, shape (Q,)
            τ ≥ 0: a bit is set where a block's mean differs from the centre's by more than
            τ·σ, σ the window's standard deviation over its inner area (as Haar features are
            normalised).
        upper : bool or array-like of bool, shape (Q,)
            The upper half (block brighter than the centre by more than τσ) or the lower one
            (darker).
        channels : ChannelSet, optional
            Default ``ChannelSet(["gray"])`` (``gray2`` is added for σ); ``plane`` is the plane
            the grid reads.
        reference : {"window", "mean", "local"} or array-like of them, shape (Q,)
            What τ is a share of (:data:`LTP_REFERENCES`): the window's σ, the mean of the
            grid's nine blocks, or the σ of the grid's pixels (``"local"`` reads ``gray2``, so
            the grid must read the ``gray`` plane). All three keep the variance normalisation,
            so the detector's σ gate applies alike.
        detrend : bool or array-like of bool, shape (Q,)
            Compare the blocks after removing the plane that fits the nine block sums best
            (least squares): a brightness ramp across the grid then changes no bit. The test
            is then on six times the residual differences (``scale`` six times as large).
        """
        b = np.asarray(blocks, dtype=np.int64).reshape(-1, 4)
        q = b.shape[0]
        tau = np.broadcast_to(np.asarray(tolerance, np.float64), (q,))
        if q and not (np.isfinite(tau).all() and tau.min() >= 0):
            raise InputError(f"tolerance: expected finite values >= 0, got {tau.min()}")
        refs = np.broadcast_to(np.asarray(reference, dtype=object), (q,))
        bad = [r for r in set(refs.tolist()) if r not in LTP_REFERENCES]
        if bad:
            raise InputError(f"reference: expected one of {LTP_REFERENCES}, got {bad[0]!r}")
        code = np.array([LTP_REFERENCES.index(r) for r in refs.tolist()], np.int32)
        h, w = (int(v) for v in window_shape)
        chans = cls._with_norm_planes(channels if channels is not None else ChannelSet(["gray"]),
                                      np.array([NORM_VARIANCE]))
        if (code == LTP_LOCAL).any() and chans.keys[plane] != "gray":
            raise InputError(f"reference: 'local' needs grids on the 'gray' plane, not "
                             f"{chans.keys[plane]!r}")
        d = cls._empty(q)
        d["op"][:] = OP_MBLTP
        d["norm"][:] = NORM_VARIANCE
        d["categorical"][:] = True
        d["plane"][:, 0] = plane
        d["weights"][:, 0] = np.where(np.broadcast_to(np.asarray(upper, bool), (q,)), 1, -1)
        d["hogi"][:, 1] = code
        trend = np.broadcast_to(np.asarray(detrend, bool), (q,))
        d["hogi"][:, 2] = trend
        # the σ of window_norms is sqrt(nf) / inner area, and inv_var = 1 / sqrt(nf): a block
        # of area a differs by more than τ·σ·a iff |difference|·inv_var > τ·a / inner area.
        # On the grid itself (area A = 9a): τ·(mean block) = τ/9·(nine blocks' sum), and
        # τ·σ·a = τ/9·sqrt(A·Σv² − (Σv)²), so both compare with τ/9 times one number
        inner = max(h - 2, 1) * max(w - 2, 1)
        f = np.where(trend, 6.0, 1.0)
        d["scale"][:] = np.where(code == LTP_WINDOW, _f32(tau * (b[:, 2] * b[:, 3]) / inner * f),
                                 _f32(tau / 9.0 * f))
        j, i = np.divmod(np.arange(16), 4)
        d["corners"][:, :, 0] = b[:, 0:1] + i[None] * b[:, 2:3]
        d["corners"][:, :, 1] = b[:, 1:2] + j[None] * b[:, 3:4]
        return cls((h, w), chans, **d)

    @classmethod
    def hog(cls, window_shape: Sequence[int], channels: ChannelSet, *, first_plane: Any,
            n_bins: int, cells: Any, target: Any, block_norm: str = "L2-Hys",
            eps: float = 1.0, clip: float = 0.2, scale: Any = 1.0) -> Program:
        """Block-normalised orientation histogram entries (OP_HOG).

        Parameters
        ----------
        window_shape : (height, width)
        channels : ChannelSet
            Holds the orientation planes; bin ``b`` of a feature is plane
            ``first_plane + b`` (consecutive planes).
        first_plane : int or array-like, shape (Q,)
        n_bins : int
        cells : array-like of int, shape (Q, C, 4), C <= 4
            ``(x, y, w, h)`` of the block's cells.
        target : array-like of int, shape (Q,)
            ``cell * n_bins + bin`` of the entry.
        block_norm : {"L1", "L1-sqrt", "L2", "L2-Hys"}
        eps : float
            Regulariser, in units of the summed plane values.
        clip : float
            L2-Hys clipping level.
        """
        if block_norm not in HOG_NORMS:
            raise InputError(f"block_norm: expected one of {HOG_NORMS}, got {block_norm!r}")
        c = np.asarray(cells, dtype=np.int64)
        if c.ndim != 3 or c.shape[2] != 4 or not 1 <= c.shape[1] <= 4:
            raise ValueError(f"cells: expected (Q, C<=4, 4), got {c.shape}")
        q, n_c = c.shape[:2]
        d = cls._empty(q)
        d["op"][:] = OP_HOG
        d["plane"][:, 0] = np.broadcast_to(np.asarray(first_plane, np.int64), (q,))
        d["scale"][:] = _f32(np.broadcast_to(np.asarray(scale, np.float64), (q,)))
        tgt = np.broadcast_to(np.asarray(target, np.int64), (q,))
        d["hogi"][:] = np.stack([np.full(q, n_bins), np.full(q, n_c), tgt,
                                np.full(q, HOG_NORMS.index(block_norm))], axis=1)
        d["hogf"][:] = _f32([eps, clip])
        for k in range(n_c):
            x, y, w, h = (c[:, k, j] for j in range(4))
            d["corners"][:, 4 * k:4 * k + 4, 0] = np.stack([x, x + w, x, x + w], axis=1)
            d["corners"][:, 4 * k:4 * k + 4, 1] = np.stack([y, y, y + h, y + h], axis=1)
        return cls(tuple(int(v) for v in window_shape), channels, **d)

    @classmethod
    def concat(cls, programs: Sequence[Program]) -> Program:
        """One program with the features of ``programs`` in order (channels united)."""
        programs = list(programs)
        if not programs:
            raise ValueError("programs: nothing to concatenate")
        shape = programs[0].window_shape
        if any(p.window_shape != shape for p in programs):
            raise ValueError(f"programs: window shapes differ "
                             f"{sorted({p.window_shape for p in programs})}")
        if len(programs) == 1:
            return programs[0]
        chans = programs[0].channels.union(*(p.channels for p in programs[1:]))
        progs = [p.on(chans) for p in programs]
        d = {k: np.concatenate([getattr(p, k) for p in progs]) for k in _FIELDS}
        return cls(shape, chans, _checked=True, **d)

    def take(self, ids: Any) -> Program:
        """The features ``ids`` (in that order)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        d = {k: getattr(self, k)[ids] for k in _FIELDS}
        return Program(self.window_shape, self.channels, _checked=True, **d)

    def on(self, channels: ChannelSet) -> Program:
        """The same features reading the planes of ``channels`` (a superset of this program's
        channels, e.g. the union prepared for several programs)."""
        if channels == self.channels:
            return self
        mask, planes = self._reads()
        needed = np.zeros(self.channels.n_planes, bool)
        needed[planes[mask]] = True
        for f in np.flatnonzero(self.op == OP_HOG):
            needed[self.plane[f, 0]:self.plane[f, 0] + self.hogi[f, 0]] = True
        needed[[self.channels.keys.index(k) for k in self._norm_keys()]] = True
        remap = np.zeros(self.channels.n_planes, dtype=np.int32)
        for i, key in enumerate(self.channels.keys):
            if key in channels:
                remap[i] = channels.index(key)
            elif needed[i]:
                raise InputError(f"channels: channel {key!r} is not in the set {channels.keys}")
        d = {k: getattr(self, k) for k in _FIELDS}
        d["plane"] = remap[self.plane] if remap.size else self.plane
        if (d["op"] == OP_HOG).any():  # consecutive orientation planes must stay consecutive
            hog = d["op"] == OP_HOG
            first = d["plane"][hog, 0]
            for b in range(1, int(d["hogi"][hog, 0].max())):
                ok = (d["hogi"][hog, 0] <= b) | (remap[self.plane[hog, 0] + b] == first + b)
                if not ok.all():
                    raise InputError("channels: orientation planes of a HOG feature are not "
                                     "consecutive in the target set")
        return Program(self.window_shape, channels, _checked=True, **d)

    def _norm_keys(self) -> list[str]:
        keys = []
        if (self.norm == NORM_VARIANCE).any():
            keys += ["gray", "gray2"]
        if (self.norm == NORM_GRADIENT).any():
            keys += ["gradmag"]
        return keys

    def compact(self) -> Program:
        """The same features on the smallest channel set: the planes they read (and their
        normalisations), in this program's plane order."""
        mask, planes = self._reads()
        used = np.zeros(self.channels.n_planes, bool)
        used[planes[mask]] = True
        for f in np.flatnonzero(self.op == OP_HOG):
            used[self.plane[f, 0]:self.plane[f, 0] + self.hogi[f, 0]] = True
        norm = set(self._norm_keys())
        keys = [k for k, u in zip(self.channels.keys, used, strict=True) if u or k in norm]
        return self.on(ChannelSet(keys)) if len(keys) < self.channels.n_planes else self

    # -- properties -----------------------------------------------------------------------------

    @property
    def n_features(self) -> int:
        return int(self.op.shape[0])

    def __len__(self) -> int:
        return self.n_features

    @property
    def ops_mask(self) -> int:
        """The ``OPS_*`` constant of these features (see :func:`node_value`)."""
        return self._ops_of(slice(None))

    def _ops_of(self, rows: Any) -> int:
        """The ``OPS_*`` constant of the features ``rows``."""
        whole = getattr(self, "_whole_ops", None)
        if whole is None and not isinstance(rows, slice):
            whole = self._ops_of(slice(None))
            object.__setattr__(self, "_whole_ops", whole)  # frozen: a cache, not a field
        if whole in (OPS_HAAR, OPS_MBLBP):
            return whole  # every subset of a one-operation program is of that operation
        kinds = set(self.op[rows].tolist())
        if kinds == {OP_RECTS} and not self.categorical[rows].any():
            haar = (self.norm[rows] == NORM_VARIANCE).all() and (self.scale[rows] == 1).all()
            return OPS_HAAR if haar else OPS_RECTS
        if kinds == {OP_MBLBP}:
            return OPS_MBLBP
        return OPS_RECTS_MBLBP if OP_HOG not in kinds else OPS_MIXED

    # -- checks ---------------------------------------------------------------------------------

    def _reads(self) -> tuple[np.ndarray, np.ndarray]:
        """Per feature, the corners actually read (mask (Q, 16)) and their planes (Q, 16)."""
        q = self.n_features
        mask = np.zeros((q, 16), bool)
        planes = np.zeros((q, 16), np.int64)
        rect = self.op == OP_RECTS
        for k in range(3):
            used = rect & (self.weights[:, k] != 0)
            mask[used, 4 * k:4 * k + 4] = True
            planes[used, 4 * k:4 * k + 4] = self.plane[used, k:k + 1]
        lbp = (self.op == OP_MBLBP) | (self.op == OP_MBLTP)
        mask[lbp] = True
        planes[lbp] = self.plane[lbp, 0:1]
        for k in range(4):
            used = (self.op == OP_HOG) & (self.hogi[:, 1] > k)
            mask[used, 4 * k:4 * k + 4] = True
            planes[used, 4 * k:4 * k + 4] = self.plane[used, 0:1]
        return mask, planes

    def _check_range(self, mask: np.ndarray, planes: np.ndarray) -> None:
        """Refuse reads whose true rectangle sums could overflow 32 bits.

        Integrals wrap around, so a rectangle sum is exact while its true value fits in int32
        (unsigned for ``gray2``, as OpenCV's detector reads it). Bound: the plane's largest
        pixel value times the area of the rectangle's bounding box (MB-LBP: the whole grid).
        """
        h, w = self.window_shape
        q = self.n_features
        maxv = np.array([self.channels.max_value(i) for i in range(self.channels.n_planes)],
                        dtype=np.float64)
        limit = np.where(np.array([k == "gray2" for k in self.channels.keys], bool),
                         2.0**32 - 1, 2.0**31 - 1)
        cx = self.corners[..., 0].reshape(q, 4, 4).astype(np.float64)
        cy = self.corners[..., 1].reshape(q, 4, 4).astype(np.float64)
        area = (cx.max(2) - cx.min(2)) * (cy.max(2) - cy.min(2))
        lbp = (self.op == OP_MBLBP) | (self.op == OP_MBLTP)
        area[lbp, 0] = ((cx[lbp].max((1, 2)) - cx[lbp].min((1, 2)))
                        * (cy[lbp].max((1, 2)) - cy[lbp].min((1, 2))))
        group = mask.reshape(q, 4, 4).any(2)
        group[lbp, 1:] = False
        gplane = planes.reshape(q, 4, 4)[:, :, 0]
        reads = [(gplane[group], area[group])]
        inner = float(max(h - 2, 0) * max(w - 2, 0))
        for norm, keys in ((NORM_VARIANCE, ("gray", "gray2")), (NORM_GRADIENT, ("gradmag",))):
            if (self.norm == norm).any():
                idx = np.array([self.channels.index(k) for k in keys])
                reads.append((idx, np.full(len(idx), inner)))
        local = (self.op == OP_MBLTP) & (self.hogi[:, 1] == LTP_LOCAL)
        if local.any():
            reads.append((np.full(int(local.sum()), self.channels.index("gray2")),
                          area[local, 0]))
        for pl, ar in reads:
            peak = maxv[pl] * ar
            bad = peak > limit[pl]
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise InputError(
                    f"window_shape: a {w}x{h} window is too large for channel "
                    f"{self.channels.keys[int(pl[k])]!r} (rectangle sums could reach "
                    f"{int(peak[k])}, over the 32-bit range); use a smaller window")

    def _check(self) -> None:
        """Every corner inside the window (and its margin), every plane in the set."""
        h, w = self.window_shape
        if h < 1 or w < 1:
            raise InputError(f"window_shape: expected positive (height, width), got "
                             f"{self.window_shape}")
        p = self.channels.n_planes
        mask, planes = self._reads()
        hog = self.op == OP_HOG
        last = planes + np.where(hog[:, None], self.hogi[:, 0:1] - 1, 0)
        if mask.any() and (planes[mask].min() < 0 or last[mask].max() >= p):
            raise InputError(f"program: a feature reads a plane outside 0..{p - 1}")
        self._check_range(mask, last)
        if ((self.norm == NORM_VARIANCE) & (h < 3 or w < 3)).any():
            raise InputError(f"window_shape: the variance normalisation needs windows of at "
                             f"least 3x3 pixels, got {w}x{h}")
        # margins: a plane with margin m may only be read m pixels inside the window
        margins = np.array([ChannelSet([k]).margin for k in self.channels.keys], np.int64)
        m = np.zeros_like(planes)
        if mask.any():
            m[mask] = margins[np.minimum(last[mask], p - 1)]
        cx, cy = self.corners[..., 0], self.corners[..., 1]
        # corner (dx, dy) reads integral entry (dy, dx): pixels [m, W - m) need m <= d <= W - m
        bad = mask & ((cx < m) | (cy < m) | (cx > w - m) | (cy > h - m))
        if bad.any():
            f = int(np.nonzero(bad.any(axis=1))[0][0])
            raise InputError(f"program: feature {f} reads corners "
                             f"{self.corners[f][mask[f]].tolist()} outside the {w}x{h} window "
                             f"(or its margin)")

    # -- binding and evaluation -----------------------------------------------------------------

    def bind(self, row_stride: int, plane_stride: int, *, split: int = 0,
             phase: int = 0) -> BoundProgram:
        """Records for a buffer whose rows are ``row_stride`` and planes ``plane_stride``
        entries apart (offsets relative to a window's top-left integral entry).

        Parameters
        ----------
        row_stride : int
            int32 entries between two rows of an integral plane.
        plane_stride : int
            int32 entries between two planes.
        split : int, default=0
            0: columns in order. Else every row holds its even columns first and its odd
            columns from entry ``split`` on (column ``c`` at ``(c % 2) · split + c // 2``): the
            windows of a grid of step 2 are then consecutive entries.
        phase : int, default=0
            With ``split``: the parity of the windows' columns.

        Returns
        -------
        BoundProgram
            Raises :class:`~vjboost.InputError` when an offset does not fit in 32 bits.
        """
        return self.bind_records(self.layout_free(), row_stride, plane_stride, split=split,
                                 phase=phase)

    def layout_free(self) -> np.ndarray:
        """The record words that do not depend on the buffer layout, int32 (Q, REC) (cached).

        Offsets (and the words derived from the plane stride) are zero; :meth:`bind_records`
        writes them. Cascade compilers copy this table, write their own words (split
        thresholds, subset rows) and bind their copy to each layout.

        Examples
        --------
        >>> prog = Program.rects((4, 4), ChannelSet(["gray"]), rects=[[[0, 0, 2, 2]]],
        ...                      weights=[[1.0]])
        >>> prog.layout_free().shape
        (1, 32)
        """
        got = self.__dict__.get("_layout_free")
        if got is not None:
            return got
        q = self.n_features
        tab = np.zeros((q, REC), dtype=np.int32)
        tabf = tab.view(np.float32)
        tab[:, _OP] = self.op
        tab[:, _NORM] = self.norm
        rect = self.op == OP_RECTS
        tabf[rect, _W:_W + 3] = self.weights[rect]
        tabf[:, _SCALE] = self.scale
        tab[:, _CAT] = self.categorical
        tab[:, _HNB:_HNB + 4] = self.hogi
        ltp = self.op == OP_MBLTP
        tab[ltp, _LTP] = self.weights[ltp, 0].astype(np.int32)
        tab[ltp, _LTPR:_LTPA + 1] = 0
        tab[ltp, _LTPR] = self.hogi[ltp, 1]
        tab[ltp, _LTPD] = self.hogi[ltp, 2] != 0
        local = ltp & (self.hogi[:, 1] == LTP_LOCAL)
        if local.any():
            c = self.corners[local].astype(np.int64)
            tab[local, _LTPA] = ((c[:, 15, 0] - c[:, 0, 0]) * (c[:, 15, 1] - c[:, 0, 1]))
        tab[:, _HCELL] = self.hogi[:, 2] // np.maximum(self.hogi[:, 0], 1)
        tabf[:, _HEPS:_HEPS + 2] = self.hogf
        tab.setflags(write=False)
        mask, planes = self._reads()
        # the words a rectangle record keeps for its weights and threshold (not offsets)
        keep = np.zeros((q, 16), bool)
        keep[rect, 12:] = True
        layout = {
            "planes": np.where(mask, planes, 0), "keep": keep,
            "cx": np.where(mask, self.corners[..., 0].astype(np.int64), 0),
            "cy": np.where(mask, self.corners[..., 1].astype(np.int64), 0),
            "local": np.flatnonzero(local),
            "variance": bool((self.norm == NORM_VARIANCE).any()),
            "gradient": bool((self.norm == NORM_GRADIENT).any()),
        }
        object.__setattr__(self, "_layout", layout)  # frozen: a cache, not a field
        object.__setattr__(self, "_layout_free", tab)
        return tab

    def bind_records(self, template: np.ndarray, row_stride: int, plane_stride: int, *,
                     split: int = 0, phase: int = 0) -> BoundProgram:
        """:meth:`bind` starting from ``template`` (a copy of :meth:`layout_free`, possibly
        with compiler words written in): a fresh aligned copy with the layout's words written.

        Parameters
        ----------
        template : ndarray of int32, shape (Q, REC)
        row_stride, plane_stride, split, phase : int
            As in :meth:`bind`.

        Returns
        -------
        BoundProgram

        Examples
        --------
        >>> prog = Program.rects((4, 4), ChannelSet(["gray"]), rects=[[[0, 0, 2, 2]]],
        ...                      weights=[[1.0]])
        >>> bound = prog.bind_records(prog.layout_free(), 5, 25)
        >>> bound.tab[:4].tolist()
        [0, 2, 10, 12]
        """
        self.layout_free()
        lay = self.__dict__["_layout"]
        q = self.n_features
        # 64-byte aligned records: a Haar node's data is one cache line
        raw = np.empty(q * REC + 16, dtype=np.int32)
        start = (-raw.ctypes.data % 64) // 4
        tab = raw[start:start + q * REC].reshape(q, REC)

        # corners not read are (0, 0) of plane 0: offset 0 in every layout. One compiled
        # pass: a detection binds its cascade to each buffer layout of every image (two to
        # three dozen a photograph), and the array expressions took about 4 % of it
        big = _bind_offsets(tab, np.ascontiguousarray(template, dtype=np.int32),
                            lay["planes"], lay["cy"], lay["cx"], lay["keep"],
                            int(plane_stride), int(row_stride), int(split), int(phase))
        if q and (big >= 2**31 or plane_stride * self.channels.n_planes >= 2**31):
            raise InputError("program: the buffer is too large for 32-bit record offsets; "
                             "process the image in smaller parts")
        local = lay["local"]
        if len(local):
            g2 = self.channels.index("gray2")
            tab[local, _LTPQ] = (g2 - self.plane[local, 0]) * plane_stride
        tab[:, _HPS] = plane_stride
        h, w = self.window_shape
        pro = np.zeros(12, dtype=np.int64)
        prof = np.zeros(2, dtype=np.float64)
        inner = (np.array([1, 1, h - 1, h - 1], np.int64) * row_stride
                 + np.array([_split_column(x, split, phase) for x in (1, w - 1, 1, w - 1)],
                            np.int64))
        if lay["variance"]:
            pro[0:4] = self.channels.index("gray") * plane_stride + inner
            pro[4:8] = self.channels.index("gray2") * plane_stride + inner
            prof[0] = float((w - 2) * (h - 2))
        if lay["gradient"]:
            pro[8:12] = self.channels.index("gradmag") * plane_stride + inner
            prof[1] = float((w - 2) * (h - 2))
        return BoundProgram(tab.reshape(-1), pro, prof)

    def bound(self, row_stride: int, plane_stride: int) -> BoundProgram:
        """:meth:`bind`, kept for the last two layouts: the records of all features are built
        once and serve every subset evaluated on that layout (lazy training evaluates small
        blocks of a large pool tens of times per tree)."""
        key = (int(row_stride), int(plane_stride))
        return _kept_binding(self, key, lambda: self.bind(*key), keep=2)

    def features_nbytes(self, n_windows: int) -> int:
        """Bytes of the integral planes of ``n_windows`` windows."""
        h, w = self.window_shape
        return self.channels.nbytes(n_windows, h, w)


#: guards the kept bindings: mining scans units on several threads, and two threads evicting
#: the same oldest layout, or iterating while the other inserts, would fail
_KEPT_LOCK = threading.Lock()


@numba.njit(cache=True, nogil=True)
def _split_column(x, split, phase):  # pragma: no cover - numba
    """The offset of column ``x`` of a window (from its left edge) in a row stored with its
    even columns first and its odd ones ``split`` entries after them, for windows starting on
    columns of parity ``phase`` (``split`` 0: the usual layout, ``x`` itself)."""
    if not split:
        return x
    c = phase + x
    return (c % 2) * split + c // 2 - (phase % 2) * split - phase // 2


@numba.njit(cache=True, nogil=True)
def _bind_offsets(tab, template, planes, cy, cx, keep, plane_stride, row_stride, split,
                  phase):  # pragma: no cover - numba
    """``template`` copied into ``tab`` (Q, REC) with the 16 corner offsets of each record
    for the layout written in (the words ``keep`` marks stay the template's); returns the
    largest absolute offset (refused by the caller when it needs more than 32 bits, before
    the table is used). Columns by :func:`_split_column`."""
    big = 0
    for i in range(tab.shape[0]):
        for j in range(REC):
            tab[i, j] = template[i, j]
        for j in range(16):
            x = _split_column(cx[i, j], split, phase)
            o = planes[i, j] * plane_stride + cy[i, j] * row_stride + x
            big = max(big, abs(o))
            if not keep[i, j]:
                tab[i, _OFS + j] = o
    return big


def _kept_binding(owner: Any, key: tuple, bind: Any, *, keep: int) -> BoundProgram:
    """``bind()`` for layout ``key``, kept on the (frozen) ``owner`` for its last ``keep``
    layouts (a cache, not a field: repeated scans of one layout bind once). Thread-safe; the
    binding itself is computed outside the lock."""
    with _KEPT_LOCK:
        cache = owner.__dict__.get("_kept_bindings")
        if cache is None:
            cache = {}
            object.__setattr__(owner, "_kept_bindings", cache)
        got = cache.get(key)
    if got is None:
        got = bind()
        with _KEPT_LOCK:
            if key not in cache and len(cache) >= keep:
                cache.pop(next(iter(cache)))
            cache[key] = got
    return got


def _rows(program: Program, feature_ids: Any) -> np.ndarray | None:
    """``feature_ids`` as int64 rows of ``program`` (negative ids count from the end, as in
    :meth:`Program.take`), or None for all features."""
    if feature_ids is None:
        return None
    q = program.n_features
    rows = np.asarray(feature_ids, dtype=np.int64).reshape(-1)
    rows = np.where(rows < 0, rows + q, rows)
    if rows.size and (rows.min() < 0 or rows.max() >= q):
        raise IndexError(f"feature_ids: ids must be in [-{q}, {q})")
    return rows


def _run(program: Program, flat: np.ndarray, bases: np.ndarray, row_stride: int,
         plane_stride: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Values of the features ``rows`` (default all) of ``program`` at window offsets ``bases``
    of ``flat``."""
    sel = slice(None) if rows is None else rows
    out = np.empty((program.n_features if rows is None else rows.shape[0], bases.shape[0]),
                   dtype=np.float32)
    if out.size:
        bound = program.bound(row_stride, plane_stride)
        ops = program._ops_of(sel)
        hog_len = 0
        if ops == OPS_MIXED:  # only mixed programs hold HOG blocks (lazy training: skip this)
            hogi = program.hogi[sel]
            hog = program.op[sel] == OP_HOG
            hog_len = int((hogi[hog, 0] * hogi[hog, 1]).max()) if hog.any() else 0
        ids = np.arange(out.shape[0], dtype=np.int64) if rows is None else rows
        _evaluate_kernel(ops)(
            flat, np.ascontiguousarray(bases, dtype=np.int64), bound.tab, bound.tabf,
            bound.pro, bound.prof, hog_len, ids, _visit_order(ids, program.n_features), out)
    return out


def evaluate_program(program: Program, windows: Any = None, *, planes: np.ndarray | None = None,
                     feature_ids: Any = None, sample_ids: Any = None) -> np.ndarray:
    """Values of a program's features on windows.

    Parameters
    ----------
    program : Program
    windows : ndarray of uint8, shape (S, H, W) or (S, H, W, 3), optional
        The windows (their planes are computed); or give ``planes``.
    planes : ndarray of int32, shape (S, P, H + 1, W + 1), optional
        Planes from ``program.channels.windows(windows)`` (prepared once, evaluated often).
    feature_ids, sample_ids : array-like of int, optional
        Subsets (default all).

    Returns
    -------
    ndarray of float32, shape (len(feature_ids), len(sample_ids))
    """
    if planes is None:
        if windows is None:
            raise ValueError("evaluate_program: give windows or planes")
        planes = program.channels.windows(windows)
    h, w = program.window_shape
    if planes.ndim != 4 or planes.shape[1:] != (program.channels.n_planes, h + 1, w + 1):
        raise InputError(f"planes: expected (S, {program.channels.n_planes}, {h + 1}, {w + 1}), "
                         f"got {planes.shape}")
    sids = (np.arange(planes.shape[0], dtype=np.int64) if sample_ids is None
            else np.asarray(sample_ids, dtype=np.int64).reshape(-1))
    return _run(program, np.ascontiguousarray(planes).reshape(-1),
                sids * (planes.shape[1] * (h + 1) * (w + 1)), w + 1, (h + 1) * (w + 1),
                _rows(program, feature_ids))


def evaluate_positions(program: Program, planes: np.ndarray, positions: Any, *,
                       feature_ids: Any = None) -> np.ndarray:
    """Values of a program's features for windows at ``positions`` of one image.

    Parameters
    ----------
    program : Program
    planes : ndarray of int32, shape (P, H + 1, W + 1)
        ``program.channels.image(image)``.
    positions : array-like of int, shape (N, 2)
        ``(y, x)`` of the windows' top-left corners (inside the image: not checked here).
    feature_ids : array-like of int, optional

    Returns
    -------
    ndarray of float32, shape (len(feature_ids), N)
    """
    pos = np.asarray(positions, dtype=np.int64).reshape(-1, 2)
    _, rows, cols = planes.shape
    return _run(program, np.ascontiguousarray(planes).reshape(-1), pos[:, 0] * cols + pos[:, 1],
                cols, rows * cols, _rows(program, feature_ids))
