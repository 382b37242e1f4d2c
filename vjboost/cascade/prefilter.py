"""The row pass: cascades of trees of depth <= 2 over rectangle sums, run over whole rows of
windows (OpenCV's Haar features, and Haar features mixed with rectangle sums of gradient
channels: the program operations ``OPS_HAAR`` and ``OPS_RECTS``).

Most windows of a scan are rejected by the first stage, and the first stage alone costs about a
third of a detection when it runs window by window (:func:`vjboost.cascade.kernels.scan`).
Along one row of a level the windows' integral corners are consecutive entries of the buffer,
so a loop over the row with the node's corner offsets fixed reads memory in sequence and the
compiler vectorises it. For trees of depth <= 2 both children are computed for every window and
the leaf is chosen by the decisions, so the loop has no branch on the data.

:func:`scan_rows` computes, row by row, the σ gate, the window's normalisers (the variance one;
for ``OPS_RECTS`` cascades with gradient-normalised records the gradient one too, by
:func:`~vjboost.features.program.window_norms` itself) and the first stage's score of every
window of the row; replays OpenCV's skip of the position after a first-stage rejection along the
row (so it visits exactly the windows the window-by-window kernel visits) and keeps the
survivors' columns in a compact list; runs the next stages over that list the same way, one pass
per tree (the loads are gathered now, but the loop still has no branch on the data: the leaf is
picked by selects, and each tree's records are read once per row), compacting the list after
each stage, until no window is left or every stage has accepted the survivors. All of it
happens right away, row by row, while the row's integral data is still in the cache (running
the later stages after the whole batch's first stage cost about 30 % more: the data had left
the cache). Every value is computed with the very float32 and float64 operations of the
window-by-window kernel (same order, no fused multiply-add), so its decisions and scores are
that kernel's, bit for bit.

OpenCV's grid has a step of 2 below scale 2: :class:`~vjboost.cascade.runner.CascadeRunner`
stores such batches with each row's even and odd columns apart
(:meth:`vjboost.features.channels.ChannelSet.fill` and
:meth:`vjboost.features.program.Program.bind` with ``split``), which makes the grid's windows
consecutive entries again (grey planes only, which are integrated straight into that layout:
cascades with gradient channels scan such grids as strided rows). Other grids (hard-negative
mining scans one grid offset at a time: every fifth column of every fifth row) run the first
stage over the list of the row's windows too, so they never go window by window from the first
stage on.

:func:`scan_list` is the same pass for scattered windows (coarse-to-fine scanning's
neighbourhoods: runs of three to five windows along a row): one list, :data:`LIST_BLOCK`
neighbours at a time, each stage over a block's survivors. The runner uses it when a scan's
rows hold fewer than :data:`LIST_ROW` windows on average.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._jit import variant
from ..features.program import (
    _NORM,
    _SCALE,
    _THR_R,
    _W,
    OPS_HAAR,
    OPS_RECTS,
    REC,
    variance_norm,
    window_norms,
)
from .kernels import CompiledCascade

__all__ = ["BYTES_PER_WINDOW", "LIST_BLOCK", "LIST_ROW", "MAX_BYTES", "applies", "item_windows",
           "scan_list", "scan_rows", "suits"]

_U = np.uint64

#: scratch bytes per scanned window at most (accepted windows' slots and scores)
BYTES_PER_WINDOW = 16
#: batches whose scratch would exceed this run window by window instead (huge images)
MAX_BYTES = 256 << 20
#: windows per block of the list pass (:func:`scan_list`)
LIST_BLOCK = 512
#: a scan whose rows hold fewer windows than this on average runs as a list
#: (:func:`scan_list`), not row by row
LIST_ROW = 16
#: a row's first stage runs over the list of the windows the σ gate lets through (gathered
#: loads) when they are fewer than this share of the row, else over the whole row
SPARSE0 = 0.5


def applies(cascade: CompiledCascade, items: np.ndarray) -> bool:
    """Whether :func:`scan_rows` can run ``cascade`` on ``items``: :func:`suits` and rows of
    any step (step 1 runs fastest: a grid of step 2 is made one by storing the even and the odd
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
    return len(items) > 0 and suits(cascade) and bool((items[:, 2] >= 1).all())


def suits(cascade: CompiledCascade) -> bool:
    """Whether :func:`scan_rows` can run ``cascade`` (on rows of consecutive windows):
    rectangle-sum features only (``OPS_HAAR``: OpenCV's Haar features; ``OPS_RECTS``: any
    norm kind and scale per record), trees of depth <= 2 (at most three nodes: the layouts of
    :func:`~vjboost.cascade.kernels.compile_cascade`'s shapes 2 and 3).

    Parameters
    ----------
    cascade : CompiledCascade

    Returns
    -------
    bool
    """
    return cascade.ops in (OPS_HAAR, OPS_RECTS) and cascade.shape in (2, 3)


def item_windows(items: np.ndarray) -> np.ndarray:
    """Windows of each work item ``(row_offset, n_x, step, out_offset)``: ``ceil(n_x / step)``.

    Examples
    --------
    >>> item_windows(np.array([[0, 5, 1, 0], [40, 5, 2, 5]])).tolist()
    [5, 3]
    """
    return (items[:, 1] + items[:, 2] - 1) // items[:, 2]


def scan_rows(buf, items, tab, tabf, pro, prof, gate, skip0, stage_first, stage_thr,
              stage_carry, tree_node0, leaves, sparse0, out_slot, out_score, *,
              ops=OPS_HAAR):
    """The windows of ``items`` (rows of windows ``step`` columns apart) that every stage
    accepts.

    Row by row: the σ gate, the window's normalisers and the first stage's score of every
    window of the row, vectorised; then OpenCV's skip rule replayed along the row; then the
    next stages over the row's survivors, tree by tree, until none is left, while the row's
    integral data is still in the cache.

    Parameters
    ----------
    buf : ndarray of int32, 1-D
        Integral planes (as for :func:`vjboost.cascade.kernels.scan`).
    items : ndarray of int64, shape (I, 4)
        ``(row_offset, n_x, step, out_offset)``: windows at ``row_offset + x`` for
        ``x = 0, step, ... < n_x``, outputs at ``out_offset + x // step``.
    tab, tabf, pro, prof
        The bound records of the cascade (:meth:`CompiledCascade.bind`).
    gate : float
        OpenCV's σ gate on ``area · inv_var`` (``inf``: none).
    skip0 : bool
        Skip the window after a first-stage rejection (OpenCV's detector; not after a σ gate
        refusal, as OpenCV): the first stage is computed for every window of the row, then
        the rule is replayed along the row, which visits exactly the windows the
        window-by-window kernel visits.
    stage_first, stage_thr, stage_carry, tree_node0, leaves
        The :class:`CompiledCascade`'s arrays (per segment: a stage, or its part up to an
        early exit, which carries on the sum of its stage's earlier segments; the skip rule
        follows the first segment): trees of depth <= 2 laid out root, then its
        children that are nodes (:func:`_children`), with four leaves (left-left, left-right,
        right-left, right-right).
    sparse0 : float
        The first stage runs over the list of the windows the σ gate lets through when they
        are fewer than this share of a row (:data:`SPARSE0`), else over the whole row; over the
        list always for rows of step > 1.
    out_slot : ndarray of int64, shape (>= windows of items,)
        The output slot (``out_offset + x // step``) of every accepted window, in item order.
    out_score : ndarray of float64, shape (>= windows of items,)
        Their last stage's scores.
    ops : int, default=OPS_HAAR
        The cascade's :attr:`CompiledCascade.ops`: ``OPS_HAAR`` (OpenCV's Haar features: the
        variance normaliser only, no per-record norm or scale) or ``OPS_RECTS`` (rectangle sums
        with each record's norm kind and scale: the gradient normaliser too, when the cascade
        has such records). Each has its own compiled pass.

    Returns
    -------
    int
        How many windows every stage accepts (the filled length of the outputs).
    """
    run = _pass(_ROW_PASSES, ops, "row", tree_node0, leaves)
    width = int(item_windows(items).max()) if len(items) else 0
    return run(buf, items, tab, tabf, pro, prof, gate, skip0, stage_first, stage_thr,
               stage_carry, tree_node0, leaves, sparse0, out_slot, out_score,
               np.empty((4, width), np.float32), np.empty((2, width)),
               np.empty(width, np.int64), np.empty(width, np.bool_))


def _pass(passes: dict, ops: int, what: str, tree_node0: np.ndarray, leaves: np.ndarray):
    """The compiled pass of ``passes`` for a cascade's ``ops`` (a ValueError naming ``what``
    pass when it has none, or when the leaves are not four per tree: the passes read them
    without bounds checks, and a cascade of stumps keeps two, :func:`suits`)."""
    if ops not in passes:
        raise ValueError(f"ops: the {what} pass runs OPS_HAAR ({OPS_HAAR}) or OPS_RECTS "
                         f"({OPS_RECTS}) cascades, got {ops}")
    n_trees = tree_node0.shape[0] - 1
    if leaves.shape[0] != 4 * n_trees:
        raise ValueError(f"leaves: the {what} pass reads four leaves per tree (trees of depth "
                         f"2, see suits()), got {leaves.shape[0]} for {n_trees} trees")
    return passes[ops]


def _make_scan_rows(haar: bool):
    """The row pass for Haar cascades (``haar``: one normaliser, records without norm kinds
    or scales: the loops stay as small as they were before rectangle records joined) or for
    ``OPS_RECTS`` cascades (both normalisers, each record's norm kind and scale), ``haar`` a
    compile-time constant of the closure (numba prunes the other side's code and caches each
    variant under its own key). The tree passes are module globals picked by branches on
    ``haar``, not dispatchers held in the closure (they would change the cache key in every
    process)."""

    # ``parallel=True`` without a prange loop, as the window-by-window kernel (see
    # vjboost.cascade.kernels._make_scan): compiled by numba's parallel pipeline the default
    # face model scans CMU-MIT about 3 % faster than by its plain one (which compiles it 0.5 s
    # faster); the runner silences its warning
    @njit(cache=True, nogil=True, parallel=True)
    @variant("haar" if haar else "rects")
    def rows_pass(buf, items, tab, tabf, pro, prof, gate, skip0, stage_first, stage_thr,
                  stage_carry, tree_node0, leaves, sparse0, out_slot, out_score, f32, f64,
                  i64, gated):  # pragma: no cover - numba
        """:func:`scan_rows` for one kind of cascade; ``f32`` (4, W), ``f64`` (2, W), ``i64``
        (W,) and ``gated`` (W,): scratch for rows of up to W windows, allocated by the caller
        (each array numba allocates in a kernel is one more function to compile on a first
        detection)."""
        iv, ivs, ig, igs = f32[0], f32[1], f32[2], f32[3]  # ig, igs: read only without haar
        score = f64[0]
        # the survivors of the row so far: columns, normalisers, scores (compacted stage by
        # stage)
        xs = i64
        sc = f64[1]
        no_ids = i64[:0]  # the row's columns identify its windows
        thr0 = stage_thr[0]
        n = 0
        for it in range(items.shape[0]):
            row = items[it, 0]
            step = items[it, 2]
            nw = (items[it, 1] + step - 1) // step  # windows of the item, step columns apart
            obase = items[it, 3]
            n_open = _norms(buf, row, step, nw, pro, prof, gate, iv, ig, score, gated, haar)
            if step == 1 and n_open >= sparse0 * nw:
                for t in range(stage_first[0], stage_first[1]):
                    if haar:
                        _tree_dense(buf, row, xs, nw, iv, ig, score, tab, tabf, tree_node0,
                                    leaves, t)
                    else:
                        _tree_dense_r(buf, row, xs, nw, iv, ig, score, tab, tabf,
                                      tree_node0, leaves, t)
                # OpenCV's skip rule replayed along the row; the survivors compacted
                m = 0
                x = 0
                while x < nw:
                    if gated[x]:
                        x += 1
                        continue
                    if score[x] < thr0:
                        x += 2 if skip0 else 1
                        continue
                    _keep(xs, ivs, igs, sc, m, x, iv, ig, score, x, haar)
                    m += 1
                    x += 1
            else:
                # a strided grid, or many windows refused by the σ gate: the first stage over
                # the list of the others (their columns; gathered loads)
                m = 0
                for i in range(nw):
                    if not gated[i]:  # _norms zeroed the score
                        _keep(xs, ivs, igs, sc, m, i * step, iv, ig, score, i, haar)
                        m += 1
                _stage_list(buf, row, xs, m, ivs, igs, sc, tab, tabf, tree_node0, leaves,
                            stage_first[0], stage_first[1], haar)
                # OpenCV's skip rule replayed along the list (a refused window sets no skip)
                j = 0
                skipped = -1
                for i in range(m):
                    x = xs[i]
                    if x == skipped:
                        continue
                    if sc[i] < thr0:
                        if skip0:
                            skipped = x + step
                        continue
                    _keep(xs, ivs, igs, sc, j, x, ivs, igs, sc, i, haar)
                    j += 1
                m = j
            # the next stages over the row's survivors, tree by tree, until none is left or
            # every stage has accepted them
            m = _stages_over_list(buf, row, xs, no_ids, m, ivs, igs, sc, 1, tab, tabf,
                                  stage_first, stage_thr, stage_carry, tree_node0, leaves,
                                  haar)
            for i in range(m):
                out_slot[n] = obase + xs[i] // step
                out_score[n] = sc[i]
                n += 1
        return n

    return rows_pass


def scan_list(buf, pos, tab, tabf, pro, prof, gate, stage_first, stage_thr, stage_carry,
              tree_node0, leaves, block, out_slot, out_score, *, ops=OPS_HAAR):
    """The windows of a list (anywhere in the planes) that every stage accepts: the row pass
    for scattered windows.

    Windows ``block`` at a time (neighbours in the list: their integral data stays in the
    cache): the σ gate and the normalisers of each, then every stage over the block's
    survivors tree by tree until none is left (gathered loads, no branch on the data). A scan
    of short rows (the neighbourhoods of coarse-to-fine scanning: three to five windows a row)
    spends most of :func:`scan_rows`'s time per row; here a block's windows share each tree's
    records whatever rows they lie on. Decisions and scores are the window-by-window kernel's,
    bit for bit (the same float32 and float64 operations).

    Parameters
    ----------
    buf : ndarray of int32, 1-D
        Integral planes (as for :func:`vjboost.cascade.kernels.scan`).
    pos : ndarray of int64, shape (N,)
        Offset of each window's top-left corner in ``buf``'s first plane; best in buffer
        order (neighbours together).
    tab, tabf, pro, prof
        The bound records of the cascade (:meth:`CompiledCascade.bind`).
    gate : float
        OpenCV's σ gate on ``area · inv_var`` (``inf``: none).
    stage_first, stage_thr, stage_carry, tree_node0, leaves
        The :class:`CompiledCascade`'s arrays (as for :func:`scan_rows`).
    block : int
        Windows per block (:data:`LIST_BLOCK`).
    out_slot : ndarray of int64, shape (>= N,)
        The index in ``pos`` of every accepted window, ascending.
    out_score : ndarray of float64, shape (>= N,)
        Their last stage's scores.
    ops : int, default=OPS_HAAR
        The cascade's :attr:`CompiledCascade.ops` (``OPS_HAAR`` or ``OPS_RECTS``).

    Returns
    -------
    int
        How many windows every stage accepts (the filled length of the outputs).
    """
    run = _pass(_LIST_PASSES, ops, "list", tree_node0, leaves)
    if block < 1:
        raise ValueError(f"block: expected >= 1 windows, got {block}")
    width = min(block, len(pos))
    return run(buf, pos, tab, tabf, pro, prof, gate, stage_first, stage_thr, stage_carry,
               tree_node0, leaves, block, out_slot, out_score, np.empty((2, width), np.int64),
               np.empty((2, width), np.float32), np.empty(width))


def _make_scan_list(haar: bool):
    """:func:`scan_list` for Haar cascades or ``OPS_RECTS`` ones (``haar`` a compile-time
    constant of the closure, as in :func:`_make_scan_rows`)."""

    @njit(cache=True, nogil=True)
    @variant("haar" if haar else "rects")
    def list_pass(buf, pos, tab, tabf, pro, prof, gate, stage_first, stage_thr, stage_carry,
                  tree_node0, leaves, block, out_slot, out_score, i64, f32, sc
                  ):  # pragma: no cover - numba
        """:func:`scan_list` for one kind of cascade; ``i64`` (2, W), ``f32`` (2, W) and ``sc``
        (W,): scratch for blocks of up to W windows, allocated by the caller (as for the row
        pass)."""
        # the block's survivors: positions, list indices, normalisers and scores (compacted
        # stage by stage; igs read only without haar)
        xs, ids = i64[0], i64[1]
        ivs, igs = f32[0], f32[1]
        area = prof[0]
        n = 0
        for b0 in range(0, pos.shape[0], block):
            m = 0
            for i in range(b0, min(b0 + block, pos.shape[0])):
                p = pos[i]
                if haar:
                    inv, nf = variance_norm(buf, p, pro, area)
                else:
                    inv, ing, nf = window_norms(buf, p, pro, prof)
                    igs[m] = ing
                if gate < np.inf and not (nf > 0.0 and area * np.float64(inv) < gate):
                    continue  # refused by the σ gate
                xs[m] = p
                ids[m] = i
                ivs[m] = inv
                sc[m] = 0.0
                m += 1
            m = _stages_over_list(buf, 0, xs, ids, m, ivs, igs, sc, 0, tab, tabf,
                                  stage_first, stage_thr, stage_carry, tree_node0, leaves,
                                  haar)
            for i in range(m):
                out_slot[n] = ids[i]
                out_score[n] = sc[i]
                n += 1
        return n

    return list_pass


@njit(cache=True, nogil=True, inline="always")
def _stages_over_list(buf, row, xs, ids, m, ivs, igs, sc, k, tab, tabf, stage_first, stage_thr,
                      stage_carry, tree_node0, leaves, haar
                      ):  # pragma: no cover - numba
    """Stages ``k, k + 1, ...`` over the ``m`` listed windows ``row + xs[i]`` (tree by tree)
    until none is left, the survivors compacted after each stage (with their ``ids`` when it
    has entries). Returns how many every stage accepts (their last stage's scores in ``sc``).

    The few windows that reach the late stages run here too: a window-by-window loop for them
    (stopping each window at its own rejection) scanned no faster and was one more large
    function to compile on a first detection."""
    n_stages = stage_thr.shape[0]
    track = ids.shape[0] > 0
    while k < n_stages and m > 0:
        if not stage_carry[k]:
            for i in range(m):
                sc[i] = 0.0
        _stage_list(buf, row, xs, m, ivs, igs, sc, tab, tabf, tree_node0, leaves,
                    stage_first[k], stage_first[k + 1], haar)
        thr = stage_thr[k]
        j = 0
        for i in range(m):
            if not sc[i] < thr:
                _keep(xs, ivs, igs, sc, j, xs[i], ivs, igs, sc, i, haar)
                if track:
                    ids[j] = ids[i]
                j += 1
        m = j
        k += 1
    return m


@njit(cache=True, nogil=True, inline="always")
def _keep(xs, ivs, igs, sc, j, x, iv, ig, score, i, haar):  # pragma: no cover - numba
    """Keep window ``x`` as survivor ``j``: its normalisers and score from entry ``i`` of
    ``iv``, ``ig`` (read and written only without ``haar``) and ``score``."""
    xs[j] = x
    ivs[j] = iv[i]
    if not haar:
        igs[j] = ig[i]
    sc[j] = score[i]


@njit(cache=True, nogil=True, inline="always")
def _stage_list(buf, row, xs, m, ivs, igs, sc, tab, tabf, tree_node0, leaves, t0, t1, haar
                ):  # pragma: no cover - numba
    """Add trees ``t0 .. t1 - 1`` to the scores ``sc`` of the ``m`` listed windows."""
    # int64 whatever the call site: where numba can prove ``row`` or ``m`` to be 0 it types
    # them as the literal 0, and each literal was one more compilation of the tree pass (four
    # of them, 0.8 s each, on a first detection with the default face model)
    row, m = np.int64(row), np.int64(m)
    for t in range(t0, t1):
        if haar:
            _tree_sparse(buf, row, xs, m, ivs, igs, sc, tab, tabf, tree_node0, leaves, t)
        else:
            _tree_sparse_r(buf, row, xs, m, ivs, igs, sc, tab, tabf, tree_node0, leaves, t)


@njit(cache=True, nogil=True, inline="always")
def _norms(buf, row, step, nw, pro, prof, gate, iv, ig, score, gated, haar
           ):  # pragma: no cover - numba
    """The normalisers and the σ gate of the ``nw`` windows ``row + i · step`` into ``iv``,
    ``ig`` and ``gated``, as the kernel computes them; zeroes ``score``. Returns how many
    windows the gate lets through. ``haar`` (a compile-time constant): the variance
    normaliser only (Haar features use no other one: leaving the gradient one out keeps this
    loop simple and fast; ``ig`` is not written); else both, by window_norms() itself (the
    gradient one only where the cascade has records that use it: ``prof[1] > 0``)."""
    area = prof[0]
    n_open = 0
    for i in range(nw):
        if haar:
            inv, nf = variance_norm(buf, row + i * step, pro, area)
        else:
            inv, ing, nf = window_norms(buf, row + i * step, pro, prof)
            ig[i] = ing
        iv[i] = inv
        score[i] = 0.0
        g = gate < np.inf and not (nf > 0.0 and area * np.float64(inv) < gate)
        gated[i] = g
        n_open += 1 - np.int64(g)
    return n_open


# _children and _rect are ordinary compiled functions, not inlined by numba: LLVM inlines them
# (no call is left in the tree passes' machine code), and numba's own inlining of _rect's nine
# uses per tree pass cost about 0.1 s of a first detection's compilation per pass
@njit(cache=True, nogil=True)
def _children(tree_node0, t):  # pragma: no cover - numba
    """The nodes that decide tree ``t``'s leaf after its root, left side then right side, as
    :func:`~vjboost.cascade.kernels.compile_cascade` lays out trees of depth <= 2: three
    nodes, the children; two, the one child on both sides (the leaf table repeats the leaf on
    the other side); one, the root again (its leaves repeated)."""
    nd = tree_node0[t]
    n = tree_node0[t + 1] - nd
    return nd + min(1, n - 1), nd + min(2, n - 1)


@njit(cache=True, nogil=True)
def _rect(buf, p, k0, k1, k2, k3):  # pragma: no cover - numba
    """float32 of the int32 sum of a rectangle with corner offsets ``k*`` at window ``p``."""
    return np.float32(np.int32(buf[_U(p + k0)] - buf[_U(p + k1)] - buf[_U(p + k2)]
                               + buf[_U(p + k3)]))


def _make_tree_pass(dense: bool, haar: bool):
    """The pass of one tree of depth <= 2 over windows of a row: ``dense``, the ``m`` windows
    ``row + x`` (``x < m``, consecutive: the loads are vector loads); else the windows
    ``row + xs[i]`` (``i < m``, the survivors of the earlier stages: gathered loads). ``haar``:
    OpenCV's Haar records (the variance normaliser, no scale); else rectangle records with
    their own norm kind (none, variance, gradient) and scale. Every variant comes from this
    one body (``dense`` and ``haar`` are compile-time constants of the closure)."""

    @njit(cache=True, nogil=True)
    @variant(f"{'dense' if dense else 'sparse'}_{'haar' if haar else 'rects'}")
    def tree_pass(buf, row, xs, m, iv, ig, score, tab, tabf, tree_node0, leaves, t
                  ):  # pragma: no cover - numba
        """Add tree ``t``'s leaf to ``score[i]`` for ``i < m`` (normalisers ``iv[i]``,
        variance, and ``ig[i]``, gradient: read only without ``haar``): the root and both
        children are computed for every window (no branch on the data in the loop). Each
        value is rects_value()'s: the same float32 operations in the same order. The record
        fields are read into scalars first: the loop then keeps them in registers."""
        nb, nd = _children(tree_node0, t)
        o0, o1, o2 = tree_node0[t] * REC, nb * REC, nd * REC
        l0, l1 = leaves[_U(4 * t)], leaves[_U(4 * t + 1)]
        l2, l3 = leaves[_U(4 * t + 2)], leaves[_U(4 * t + 3)]
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
        # rectangle records: norm kind (0 none, 1 variance, 2 gradient) and scale per node;
        # no norm is a product by 1, which leaves every float32 value as it is
        ka, kb, kd = tab[_U(o0 + _NORM)], tab[_U(o1 + _NORM)], tab[_U(o2 + _NORM)]
        sa, sb, sd = tabf[_U(o0 + _SCALE)], tabf[_U(o1 + _SCALE)], tabf[_U(o2 + _SCALE)]
        one = np.float32(1.0)
        for i in range(m):
            p = row + (i if dense else xs[i])
            s = iv[i]
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
            # the leaf by selects, not branches (either way about every other window)
            if haar:
                lo = l0 if u * s < t1 else l1
                hi = l2 if w * s < t2 else l3
                score[i] += lo if v * s < t0 else hi
            else:
                g = ig[i]
                na = s if ka == 1 else (g if ka == 2 else one)
                nb_ = s if kb == 1 else (g if kb == 2 else one)
                nd_ = s if kd == 1 else (g if kd == 2 else one)
                lo = l0 if (u * nb_) * sb < t1 else l1
                hi = l2 if (w * nd_) * sd < t2 else l3
                score[i] += lo if (v * na) * sa < t0 else hi

    return tree_pass


_tree_dense = _make_tree_pass(True, True)
_tree_sparse = _make_tree_pass(False, True)
_tree_dense_r = _make_tree_pass(True, False)
_tree_sparse_r = _make_tree_pass(False, False)

_ROW_PASSES = {OPS_HAAR: _make_scan_rows(True), OPS_RECTS: _make_scan_rows(False)}
_LIST_PASSES = {OPS_HAAR: _make_scan_list(True), OPS_RECTS: _make_scan_list(False)}
