"""The cascade kernel: run the stages of a cascade at many window positions, rejecting early.

A cascade is compiled once (:func:`compile_cascade`) into flat arrays: per *segment* (a stage,
or the part of a stage up to one of its early exits, see :class:`vjboost.cascade.model.Stage`)
its first tree, float32 reject threshold, whether it carries on the previous segment's sum and
the stage it belongs to; per tree its first node and leaves; per *tree node* one record of
:mod:`vjboost.features.program` (the node's feature, bound to the buffer layout, with the split
threshold and the category subset row written into the record's free words). The kernel then
walks work items — runs of window positions along one row of a buffer of integral planes — and,
for every window, computes the normalisers once, sums the trees of each segment and stops at
the first segment whose score is below its threshold.

The same kernel serves detection (items are the rows of every pyramid level of a batch),
hard-negative mining (the same, on background images) and window stacks (each window its own
item, see :func:`run_stack`): a window is accepted by training code exactly when the detector
would accept it.

Specialisations. The kernel is built per (operations, tree shape) pair, both compile-time
constants of a closure (numba then compiles and caches each pair separately, and only the pairs
a run meets): operations as :data:`vjboost.features.program.OPS_HAAR` (OpenCV's Haar features),
``OPS_RECTS``, ``OPS_MBLBP``, ``OPS_RECTS_MBLBP`` or ``OPS_MIXED`` (the last two read the
operation per node); tree shape 1 = stumps, 2 = depth-2 trees of three nodes, 3 = other trees
of depth <= 2 (root and at most two children; both laid out so that the second node and the
leaf are picked by arithmetic on the decisions instead of branches), 0 = any tree. The
branches on the tree shape are in the kernel's own body, where numba prunes them before
inlining (one tree walk per kernel); the node tests are small and inlined, except the one of
``OPS_MIXED`` (with HOG blocks), compiled once and linked. That keeps a kernel's compilation to
a few seconds.

OpenCV's σ gate: when the cascade uses the variance normalisation and ``gate`` is finite, a
window whose inner-area σ is too small (``area · inv_var >= gate``, OpenCV: ``gate = 0.1``, i.e.
σ <= 10 grey levels) is rejected before the first stage, as ``cv2.CascadeClassifier`` does.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit
from numba.core.errors import NumbaPerformanceWarning

from vjboost._jit import variant
from vjboost._threads import resolve_threads, run_tasks
from vjboost.boost.tree import Tree
from vjboost.features.program import (
    _CAT,
    _OP,
    _SUB,
    _THR,
    _THR_R,
    _U,
    NORM_VARIANCE,
    OP_MBLBP,
    OP_MBLTP,
    OP_RECTS,
    OPS_MIXED,
    REC,
    Program,
    _kept_binding,
    mblbp_code,
    mbltp_code,
    node_value,
    rects_value,
    window_norms,
)

__all__ = ["CompiledCascade", "compile_cascade", "run_stack", "scan"]

#: OpenCV's stage-threshold tolerance: reject iff ``score < float32(threshold) - THRESHOLD_EPS``.
THRESHOLD_EPS = np.float32(1e-5)

#: Tasks per thread when a scan is split between threads (load balance: rows of a pyramid
#: level cost very different amounts, so threads pull small runs of items until none is left).
_TASKS_PER_THREAD = 16


def reject_threshold(threshold: float) -> np.float32:
    """``float32(threshold) - 1e-5`` in float32: stage scores below it are rejected (OpenCV)."""
    return np.float32(np.float32(threshold) - THRESHOLD_EPS)


@dataclass(frozen=True, eq=False)
class CompiledCascade:
    """A cascade as flat arrays for the kernel (see :func:`compile_cascade`)."""

    program: Program            # the features of every tree node, node order
    stage_first: np.ndarray     # int64 (n_segments + 1,): first tree of each segment
    stage_thr: np.ndarray       # float32 (n_segments,): reject thresholds
    stage_carry: np.ndarray     # bool (n_segments,): the sum goes on from the previous segment
    stage_of: np.ndarray        # int64 (n_segments + 1,): stage of each segment, then n_stages
    tree_node0: np.ndarray      # int64 (n_trees + 1,): first node of each tree
    tree_leaf0: np.ndarray      # int64 (n_trees,): first leaf of each tree
    node_left: np.ndarray       # int64 (n_nodes,): child codes (shape 0)
    node_right: np.ndarray
    node_thr: np.ndarray        # float32 (n_nodes,)
    node_cat: np.ndarray        # bool (n_nodes,)
    subsets: np.ndarray         # uint32 (n_nodes * 8,)
    leaves: np.ndarray          # float64: per tree 2 (shape 1), 4 (shapes 2, 3) or n + 1
    shape: int
    ops: int
    variance: bool              # some node uses the variance normalisation (σ gate applies)

    @property
    def n_stages(self) -> int:
        return int(self.stage_of[-1])

    @property
    def n_segments(self) -> int:
        """Stages and the parts early exits cut them into (the kernels' units)."""
        return int(self.stage_thr.shape[0])

    def bind(self, row_stride: int, plane_stride: int, *, split: int = 0, phase: int = 0):
        """Node records for a buffer layout, with thresholds and subset rows written in.

        Parameters
        ----------
        row_stride : int
            int32 entries between two rows of an integral plane.
        plane_stride : int
            int32 entries between two planes.
        split, phase : int, default=0
            Even and odd columns stored apart (:meth:`Program.bind`).

        Returns
        -------
        BoundProgram
            One record per node: its feature, split threshold, categorical flag and (in the
            free word) its row of ``subsets``.
        """
        key = (int(row_stride), int(plane_stride), int(split), int(phase))
        # images of one size (video frames) bind the same layouts again and again
        return _kept_binding(self, key, lambda: self.program.bind_records(
            self._records(), row_stride, plane_stride, split=split, phase=phase), keep=8)

    def _records(self) -> np.ndarray:
        """The program's layout-free records with the split thresholds, categorical flags and
        subset rows written in, int32 (n_nodes, REC) (cached: only offsets depend on the
        layout)."""
        tab = self.__dict__.get("_records_tab")
        if tab is None:
            tab = self.program.layout_free().copy()
            rect = self.program.op == OP_RECTS
            tab.view(np.float32)[rect, _THR_R] = self.node_thr[rect]
            tab.view(np.float32)[~rect, _THR] = self.node_thr[~rect]
            tab[:, _CAT] = self.node_cat
            tab[:, _SUB] = np.arange(tab.shape[0], dtype=np.int32)
            tab.setflags(write=False)
            object.__setattr__(self, "_records_tab", tab)  # frozen: a cache, not a field
        return tab


def _root_kids(t: Tree) -> list[int]:
    """The root's children that are nodes (not leaves), left first."""
    return [int(c) for c in (t.left[0], t.right[0]) if c > 0]


def _depth2(t: Tree) -> bool:
    """At most two levels of nodes: the root's children are leaves or nodes with two leaves."""
    return all(int(t.left[c]) <= 0 and int(t.right[c]) <= 0 for c in _root_kids(t))


def _segments(stages: Sequence[tuple]) -> tuple[np.ndarray, ...]:
    """``stage_first``, ``stage_thr``, ``stage_carry`` and ``stage_of`` of the segments that
    the early exits cut the stages into: a segment ends after every tree with an exit and at
    the end of its stage, whose threshold combines with an exit on its last tree (both compare
    the same sum with a float32 value: the larger one decides)."""
    first, thr, carry, of = [0], [], [], []
    n = 0
    for si, st in enumerate(stages):
        trees, threshold = st[0], st[1]
        exits = st[2] if len(st) > 2 else None
        ends = [] if exits is None else [i for i in range(len(trees) - 1)
                                          if np.isfinite(exits[i])]
        cut = 0
        for i in ends:
            first.append(n + i + 1)
            thr.append(np.float32(exits[i]))
            carry.append(cut > 0)
            of.append(si)
            cut = i + 1
        n += len(trees)
        last = reject_threshold(threshold)
        if exits is not None and np.isfinite(exits[len(trees) - 1]):
            last = max(last, np.float32(exits[len(trees) - 1]))
        first.append(n)
        thr.append(last)
        carry.append(cut > 0)
        of.append(si)
    of.append(len(stages))
    return (np.array(first, np.int64), np.array(thr, np.float32), np.array(carry, np.bool_),
            np.array(of, np.int64))


def compile_cascade(stages: Sequence[tuple], program: Program) -> CompiledCascade:
    """Flatten a cascade for the kernel.

    Parameters
    ----------
    stages : sequence of (trees, threshold) or (trees, threshold, exits)
        Per stage its trees (``Tree.feature`` indexes ``program``'s features), its threshold
        (a stage passes iff its summed leaf values are ``>= float32(threshold) - 1e-5``) and,
        optionally, its early exits (:class:`vjboost.cascade.model.Stage`; None: none).
    program : Program
        The cascade's features.

    Returns
    -------
    CompiledCascade
    """
    trees = [t for st in stages for t in st[0]]
    if not trees:
        raise ValueError("stages: a cascade needs at least one tree")
    stage_first, stage_thr, stage_carry, stage_of = _segments(stages)
    n_nodes = np.array([t.n_nodes for t in trees])
    tree_node0 = np.zeros(len(trees) + 1, dtype=np.int64)
    tree_node0[1:] = np.cumsum(n_nodes)
    tree_leaf0 = np.zeros(len(trees), dtype=np.int64)
    tree_leaf0[1:] = np.cumsum(n_nodes + 1)[:-1]
    if n_nodes.max() == 1:
        shape = 1
    elif all(_depth2(t) for t in trees):
        shape = 2 if n_nodes.min() == 3 else 3
    else:
        shape = 0
    feat = np.concatenate([t.feature for t in trees])
    thr = np.concatenate([t.threshold for t in trees]).astype(np.float32)
    cat = np.concatenate([t.categorical for t in trees])
    sub = np.concatenate([t.subsets for t in trees]).astype(np.uint32)
    left = np.concatenate([t.left for t in trees]).astype(np.int64)
    right = np.concatenate([t.right for t in trees]).astype(np.int64)
    # leaves are float32 in models (OpenCV): sum them as float64 of the float32 values
    leaves32 = [t.leaves.astype(np.float32).astype(np.float64) for t in trees]
    if any(t.leaves.ndim != 1 for t in trees):
        raise ValueError("stages: cascade trees need scalar leaves")
    if shape == 1:
        # OpenCV's stump path reads leaf 0 on the left whatever the child codes say
        leaves = np.concatenate(leaves32)
        left = np.zeros(len(trees), dtype=np.int64)
        right = np.full(len(trees), -1, dtype=np.int64)
    elif shape >= 2:
        # root, then the root's children that are nodes; four leaves per tree by path
        # (LL, LR, RL, RR; a leaf met at the root fills both entries of its side)
        perm = np.empty(len(feat), dtype=np.int64)
        leaves = np.empty(4 * len(trees), dtype=np.float64)
        for i, (t, lv) in enumerate(zip(trees, leaves32, strict=True)):
            b = int(tree_node0[i])
            kids = _root_kids(t)
            perm[b:b + 1 + len(kids)] = [b] + [b + c for c in kids]
            for side, code in enumerate((int(t.left[0]), int(t.right[0]))):
                pair = ((lv[-int(t.left[code])], lv[-int(t.right[code])])
                        if code > 0 else (lv[-code], lv[-code]))
                leaves[4 * i + 2 * side:4 * i + 2 * side + 2] = pair
        feat, thr, cat, sub = feat[perm], thr[perm], cat[perm], sub[perm]
        left, right = left[perm], right[perm]
    else:
        leaves = np.concatenate(leaves32)
    if feat.max() >= program.n_features:
        raise ValueError(f"stages: a tree reads feature {int(feat.max())}, the program has "
                         f"{program.n_features}")
    node_prog = program.take(feat)
    kinds = node_prog.categorical
    if (kinds != cat).any():
        n = int(np.argmax(kinds != cat))
        raise ValueError(f"stages: node {n} splits feature {int(feat[n])} "
                         f"{'categorically' if cat[n] else 'by threshold'}, but the feature is "
                         f"{'categorical' if kinds[n] else 'ordered'}")
    return CompiledCascade(
        program=node_prog, stage_first=stage_first, stage_thr=stage_thr,
        stage_carry=stage_carry, stage_of=stage_of,
        tree_node0=tree_node0, tree_leaf0=tree_leaf0, node_left=left, node_right=right,
        node_thr=thr, node_cat=cat, subsets=np.ascontiguousarray(sub.reshape(-1)),
        leaves=leaves, shape=shape, ops=node_prog.ops_mask,
        variance=bool((node_prog.norm == NORM_VARIANCE).any()))


# ------------------------------------------------------------------------------------------------
# Kernel
# ------------------------------------------------------------------------------------------------


# Node tests, one per ``OPS_*`` constant: each reads only its operation's part of the record,
# so a kernel specialised for one operation compiles (and runs) only that code.


@njit(inline="always", cache=True, nogil=True)
def _left_haar(tab, tabf, nd, buf, p, iv, ig, subsets):  # pragma: no cover - numba
    o = nd * REC
    return rects_value(tab, tabf, o, buf, p, iv, ig, True) < tabf[_U(o + _THR_R)]


@njit(inline="always", cache=True, nogil=True)
def _left_rects(tab, tabf, nd, buf, p, iv, ig, subsets):  # pragma: no cover - numba
    o = nd * REC
    return rects_value(tab, tabf, o, buf, p, iv, ig, False) < tabf[_U(o + _THR_R)]


@njit(inline="always", cache=True, nogil=True)
def _in_subset(subsets, nd, c):  # pragma: no cover - numba
    return ((subsets[_U(nd * 8 + (c >> 5))] >> np.uint32(c & 31)) & np.uint32(1)) != 0


@njit(inline="always", cache=True, nogil=True)
def _left_mblbp(tab, tabf, nd, buf, p, iv, ig, subsets):  # pragma: no cover - numba
    # the integer code, no float round trip
    return _in_subset(subsets, nd, mblbp_code(tab, nd * REC, buf, p))


@njit(inline="always", cache=True, nogil=True)
def _left_rects_mblbp(tab, tabf, nd, buf, p, iv, ig, subsets):  # pragma: no cover - numba
    # the usual mixed pool (rectangle sums, MB-LBP and MB-LTP codes, no HOG): small enough to
    # inline, which makes such cascades about as fast per node as single-operation ones. Not written
    # over node_value like _left_mixed: that inlines the HOG code as well, and the kernel then
    # compiled 15 % longer and ran 10 % slower on a multi-family face cascade
    o = nd * REC
    op = tab[_U(o + _OP)]
    if op == OP_MBLBP:
        return _in_subset(subsets, nd, mblbp_code(tab, o, buf, p))
    if op == OP_MBLTP:
        return _in_subset(subsets, nd, mbltp_code(tab, tabf, o, buf, p, iv))
    v = rects_value(tab, tabf, o, buf, p, iv, ig, False)
    if tab[_U(o + _CAT)] != 0:
        return _in_subset(subsets, nd, np.int64(v))
    return v < tabf[_U(o + _THR_R)]


@njit(cache=True, nogil=True)
def _left_mixed(tab, tabf, nd, buf, p, iv, ig, subsets):  # pragma: no cover - numba
    # any operation, read from the record; not inlined, so that kernels for one operation
    # only link it (compiled once) instead of compiling every operation's code again
    o = nd * REC
    v = node_value(tab, tabf, o, buf, p, iv, ig, OPS_MIXED)
    if tab[_U(o + _CAT)] != 0:
        return _in_subset(subsets, nd, np.int64(v))
    thr = tabf[_U(o + _THR_R)] if tab[_U(o + _OP)] == 0 else tabf[_U(o + _THR)]
    return v < thr


def _make_scan(ops: int, shape: int):
    """The kernel over work items for one (operations, tree shape) pair.

    Both are closure constants: numba prunes the branches on ``shape`` in this body before it
    inlines anything (one tree walk per kernel), and ``ops`` selects one small node test
    per call site, written out in this body so that numba prunes the other tests before it
    inlines (compiling only one test, and no dispatcher in the closure: a dispatcher would
    change the cache key in every process); each pair is cached under its own key.
    """

    # A serial loop, nogil: :func:`scan` splits the items between Python threads. A prange
    # loop would make numba compile (and cache) a second, gufunc-wrapped copy of this body,
    # which more than doubled the compilation a first detection waits for. ``parallel=True``
    # stays all the same: numba's parallel pipeline turns this loop nest into code about five
    # times faster than its plain pipeline does (0.16 against 0.83 CPU seconds for the shipped
    # face cascade on astronaut()); it then warns that it parallelised no loop, as intended
    # (:func:`scan` silences that warning).
    @njit(cache=True, nogil=True, parallel=True)
    @variant(f"{ops}_{shape}")
    def scan_items(buf, items, tab, tabf, pro, prof, gate, skip0, stage_first, stage_thr,
                   stage_carry, stage_of, tree_node0, tree_leaf0, node_left, node_right,
                   subsets, leaves, out_passed, out_score):  # pragma: no cover - numba
        """Run the cascade on the windows of ``items`` into ``out_passed``/``out_score``.

        Parameters
        ----------
        buf : ndarray of int32, 1-D
            Integral planes.
        items : ndarray of int64, shape (I, 4)
            ``(row_offset, n_x, step, out_offset)`` as for :func:`scan`.
        tab, tabf, pro, prof
            The bound node records (:meth:`CompiledCascade.bind`).
        gate : float
            OpenCV's σ gate on ``area · inv_var`` (``inf``: none).
        skip0 : bool
            Skip the position after a stage-0 rejection.
        stage_first, stage_thr, stage_carry, stage_of, tree_node0, tree_leaf0, node_left, \
        node_right, subsets, leaves
            The :class:`CompiledCascade`'s arrays (per segment: a stage, or its part up to an
            early exit).
        out_passed : ndarray of int16
            Stages passed per output slot (``stage_of[-1]``: accepted, -1: σ gate); skipped
            slots are left as they are.
        out_score : ndarray of float64
            Score of the last segment evaluated per output slot (summed from its stage's
            first tree).
        """
        n_stages = stage_thr.shape[0]
        for it in range(items.shape[0]):
            row = items[it, 0]
            nx = items[it, 1]
            step = items[it, 2]
            obase = items[it, 3]
            x = 0
            while x < nx:
                p = row + x
                # the window's normalisers and OpenCV's σ gate (MB-LBP codes need neither)
                k = n_stages
                iv = np.float32(1.0)
                ig = np.float32(1.0)
                if ops != 2:
                    iv, ig, nf = window_norms(buf, p, pro, prof)
                    if gate < np.inf and not (nf > 0.0 and prof[0] * np.float64(iv) < gate):
                        k = -1
                score = 0.0
                si = 0
                while k == n_stages and si < n_stages:
                    if not stage_carry[si]:
                        score = 0.0
                    for t in range(stage_first[si], stage_first[si + 1]):
                        nd = tree_node0[t]
                        if shape == 2 or shape == 3:
                            # depth <= 2, laid out by compile_cascade: the second node and the
                            # leaf by arithmetic on the decisions (a branch on them is
                            # mispredicted about every other tree)
                            g0 = np.int64(0)
                            for level in range(2):
                                if ops == 3:
                                    go = _left_haar(tab, tabf, nd, buf, p, iv, ig, subsets)
                                elif ops == 1:
                                    go = _left_rects(tab, tabf, nd, buf, p, iv, ig, subsets)
                                elif ops == 2:
                                    go = _left_mblbp(tab, tabf, nd, buf, p, iv, ig, subsets)
                                elif ops == 4:
                                    go = _left_rects_mblbp(tab, tabf, nd, buf, p, iv, ig,
                                                           subsets)
                                else:
                                    go = _left_mixed(tab, tabf, nd, buf, p, iv, ig, subsets)
                                g = np.int64(go)
                                if level == 1:
                                    score += leaves[_U(4 * t + 3 - 2 * g0 - g)]
                                elif shape == 2:  # three nodes: left child nd+1, right nd+2
                                    g0 = g
                                    nd = nd + 2 - g0
                                else:
                                    # n nodes: 3 as above; 2 -> the child, nd+1 (evaluated in
                                    # vain on the leaf side); 1 -> the root again
                                    g0 = g
                                    n = np.int64(tree_node0[t + 1] - nd)
                                    nd = nd + min(n - 1, 1 + (1 - g0) * (n - 2))
                            continue
                        while True:
                            if ops == 3:
                                go = _left_haar(tab, tabf, nd, buf, p, iv, ig, subsets)
                            elif ops == 1:
                                go = _left_rects(tab, tabf, nd, buf, p, iv, ig, subsets)
                            elif ops == 2:
                                go = _left_mblbp(tab, tabf, nd, buf, p, iv, ig, subsets)
                            elif ops == 4:
                                go = _left_rects_mblbp(tab, tabf, nd, buf, p, iv, ig, subsets)
                            else:
                                go = _left_mixed(tab, tabf, nd, buf, p, iv, ig, subsets)
                            if shape == 1:
                                # OpenCV's stump path: leaf 0 left
                                score += leaves[_U(2 * t)] if go else leaves[_U(2 * t + 1)]
                                break
                            code = node_left[nd] if go else node_right[nd]
                            if code <= 0:
                                score += leaves[_U(tree_leaf0[t] - code)]
                                break
                            nd = tree_node0[t] + code
                    if score < stage_thr[si]:
                        k = si
                    si += 1
                j = obase + x // step
                out_passed[j] = stage_of[k] if k >= 0 else k
                out_score[j] = score
                if k == 0 and skip0:
                    # OpenCV skips the next position after a stage-0 rejection (its output
                    # keeps the initial "skipped" mark); with early exits, a rejection by the
                    # first segment
                    x += step
                x += step

    return scan_items


_KERNELS: dict[tuple[int, int], Any] = {}


def _kernel(ops: int, shape: int):
    key = (ops, shape)
    if key not in _KERNELS:
        _KERNELS[key] = _make_scan(ops, shape)
    return _KERNELS[key]


def scan(cascade: CompiledCascade, buf: np.ndarray, items: np.ndarray, *, row_stride: int,
         plane_stride: int, n_out: int, gate: float = np.inf, skip0: bool = False,
         threads: int | None = None, split: int = 0, phase: int = 0
         ) -> tuple[np.ndarray, np.ndarray]:
    """Run the cascade on the windows of ``items``.

    Parameters
    ----------
    cascade : CompiledCascade
    buf : ndarray of int32, 1-D
        Integral planes (``cascade.program.channels`` order), rows ``row_stride`` and planes
        ``plane_stride`` entries apart.
    items : ndarray of int64, shape (I, 4)
        ``(row_offset, n_x, step, out_offset)``: windows at ``row_offset + x`` for
        ``x = 0, step, 2·step, ... < n_x``; results at ``out_offset + x // step``.
    n_out : int
        Length of the outputs.
    gate : float, default=inf
        OpenCV's σ gate on ``area · inv_var`` (0.1 for σ > 10); only used when the cascade has
        variance-normalised features.
    skip0 : bool, default=False
        Skip the position after a stage-0 rejection (OpenCV's detector; with early exits, a
        rejection by the first segment); skipped windows get ``passed = -2``.
    threads : int, optional
    split, phase : int, default=0
        Even and odd columns of the planes stored apart (:meth:`CompiledCascade.bind`).

    Returns
    -------
    passed : ndarray of int16, shape (n_out,)
        Stages passed (``n_stages`` = accepted, -1 σ gate, -2 skipped).
    score : ndarray of float64, shape (n_out,)
        Score of the last stage evaluated (the accepting stage's score for accepted windows;
        0 for windows refused by the σ gate, undefined for skipped ones).
    """
    bound = cascade.bind(row_stride, plane_stride, split=split, phase=phase)
    gate = float(gate) if cascade.variance else np.inf
    out_passed = np.full(n_out, -2, dtype=np.int16)
    out_score = np.empty(n_out, dtype=np.float64)
    if len(items) == 0:
        return out_passed, out_score
    kernel = _kernel(cascade.ops, cascade.shape)
    items = np.ascontiguousarray(items, dtype=np.int64)
    rest = (bound.tab, bound.tabf, bound.pro, bound.prof, gate, bool(skip0),
            cascade.stage_first, cascade.stage_thr, cascade.stage_carry, cascade.stage_of,
            cascade.tree_node0, cascade.tree_leaf0,
            cascade.node_left, cascade.node_right, cascade.subsets, cascade.leaves, out_passed,
            out_score)
    # every item writes its own outputs, so runs of items are independent tasks
    nt = resolve_threads(threads)
    if nt == 1:
        tasks = [(0, len(items))]  # one thread needs no load balance: one kernel call
    else:
        edges = np.linspace(0, len(items), min(len(items), nt * _TASKS_PER_THREAD) + 1)
        tasks = [(int(a), int(b)) for a, b in zip(edges[:-1].astype(int),
                                                   edges[1:].astype(int), strict=True)]
    with warnings.catch_warnings():
        if not kernel.overloads:  # compiled by the first task, in this thread
            warnings.simplefilter("ignore", NumbaPerformanceWarning)
        run_tasks(tasks, lambda ab: kernel(buf, items[ab[0]:ab[1]], *rest), threads=nt)
    return out_passed, out_score


def run_stack(cascade: CompiledCascade, windows: Any = None, *, planes: np.ndarray | None = None,
              gate: float = np.inf, chunk: int = 4096, threads: int | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Run the cascade on a stack of windows (each window its own work item).

    Parameters
    ----------
    cascade : CompiledCascade
    windows : ndarray of uint8, shape (S, H, W) or (S, H, W, 3), optional
        Windows of the cascade's size (their planes are computed chunk by chunk, so memory
        stays bounded); or give ``planes``.
    planes : ndarray of int32, shape (S, P, H + 1, W + 1), optional
    gate : float, default=inf
        As in :func:`scan` (the detector's σ gate, for "would the detector accept it").
    chunk : int, default=4096
        Windows per batch when ``windows`` are given.
    threads : int, optional

    Returns
    -------
    passed : ndarray of int16, shape (S,)
    score : ndarray of float64, shape (S,)
    """
    prog = cascade.program
    h, w = prog.window_shape
    plane_stride = (h + 1) * (w + 1)
    win_stride = prog.channels.n_planes * plane_stride
    if planes is not None:
        n = planes.shape[0]
        items = np.zeros((n, 4), dtype=np.int64)
        items[:, 0] = np.arange(n) * win_stride
        items[:, 1] = 1
        items[:, 2] = 1
        items[:, 3] = np.arange(n)
        return scan(cascade, np.ascontiguousarray(planes).reshape(-1), items,
                    row_stride=w + 1, plane_stride=plane_stride, n_out=n, gate=gate,
                    threads=threads)
    if windows is None:
        raise ValueError("run_stack: give windows or planes")
    n = len(windows)
    passed = np.empty(n, dtype=np.int16)
    score = np.empty(n, dtype=np.float64)
    for a in range(0, n, chunk):
        pl = prog.channels.windows(windows[a:a + chunk])
        passed[a:a + len(pl)], score[a:a + len(pl)] = run_stack(
            cascade, planes=pl, gate=gate, threads=threads)
    return passed, score
