"""Fit one weak learner (stump, tree, categorical stump, histogram) on a block of values.

:func:`fit_weak_learner` is the single entry point used by the estimators and by samplers: it takes
a boosting step object (:mod:`vjboost.boost.losses`) for the weights and working response, a
feature-major block of values, and returns the best learner over the block's features together
with the per-feature search result of the root split (for ranking features).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost._validation import check_in_range
from vjboost.boost.binning import bin_values, compute_bin_edges
from vjboost.boost.learners import CategoricalStump, HistogramLearner, Stump, Tree
from vjboost.boost.losses import BoostingLoss
from vjboost.boost.stumps import (
    StumpSearch,
    search_categorical,
    search_histograms,
    search_stumps,
)

__all__ = ["WEAK_LEARNERS", "fit_weak_learner", "grow_tree"]

WEAK_LEARNERS = ("stump", "tree", "histogram")


def _bit_left(codes: np.ndarray, subset: np.ndarray) -> np.ndarray:
    c = codes.astype(np.int64)
    return ((subset[c >> 5] >> (c & 31).astype(np.uint32)) & 1).astype(bool)


def _node_search(values, r, w, *, rows_ord, rows_cat, cols, criterion, edges, threads):
    """Best split at one node over ordered and categorical rows: (search, position, categorical)."""
    best = (None, -1, False, -np.inf)
    first = None
    if rows_ord.size:
        s = search_stumps(
            values, r, w, criterion=criterion, edges=edges, feature_ids=rows_ord,
            sample_ids=cols, threads=threads,
        )
        first = s
        j = s.best()
        if j >= 0:
            best = (s, j, False, s.score[j])
    if rows_cat.size:
        codes = values if values.dtype == np.uint8 else values[rows_cat].astype(np.uint8)
        fid = rows_cat if values.dtype == np.uint8 else None
        s = search_categorical(
            codes, r, w, criterion=criterion, feature_ids=fid, sample_ids=cols, threads=threads
        )
        s.feature_ids = rows_cat
        first = s if first is None else _concat(first, s)
        j = s.best()
        if j >= 0 and s.score[j] > best[3]:
            best = (s, j, True, s.score[j])
    return best[0], best[1], best[2], first


def _concat(a: StumpSearch, b: StumpSearch) -> StumpSearch:
    """Join ordered and categorical results (subset rows of ordered features are zero)."""
    sa = a.subset if a.subset is not None else np.zeros((a.score.size, 8), np.uint32)
    sb = b.subset if b.subset is not None else np.zeros((b.score.size, 8), np.uint32)
    ba = a.split_bin if a.split_bin is not None else np.full(a.score.size, -1, np.int32)
    bb = b.split_bin if b.split_bin is not None else np.full(b.score.size, -1, np.int32)
    return StumpSearch(
        np.concatenate([a.feature_ids, b.feature_ids]),
        np.concatenate([a.score, b.score]),
        np.concatenate([a.threshold, b.threshold]),
        np.concatenate([a.left_value, b.left_value]),
        np.concatenate([a.right_value, b.right_value]),
        a.criterion,
        np.concatenate([ba, bb]),
        np.concatenate([sa, sb]),
    )


def grow_tree(
    values: np.ndarray,
    response: np.ndarray,
    weights: np.ndarray,
    *,
    criterion: str,
    max_depth: int = 2,
    rows: np.ndarray | None = None,
    categorical: np.ndarray | None = None,
    sample_ids: np.ndarray | None = None,
    edges: np.ndarray | None = None,
    feature_ids: np.ndarray | None = None,
    min_samples_split: int = 2,
    threads: int | None = None,
) -> tuple[Tree | None, StumpSearch | None]:
    """Grow a tree greedily, each node being the best stump on the examples reaching it.

    Parameters
    ----------
    values : ndarray of shape (Q_all, N_all)
        float32 raw values or uint8 bins (categorical rows: codes).
    response, weights : ndarray of shape (N_all,)
    criterion : {"discrete", "regression", "real"}
    max_depth : int
        1 = stump.
    rows : ndarray, optional
        Rows of ``values`` that may be used (default all).
    categorical : ndarray of shape (Q_all,), bool, optional
        Rows holding categorical codes 0..255.
    sample_ids : ndarray, optional
        Columns to use (default all).
    edges : ndarray of shape (Q_all, E), optional
        Bin edges (uint8 values): thresholds are stored as raw values, bins in ``split_bins``.
    feature_ids : ndarray of shape (Q_all,), optional
        Global feature id of each row (default: the row index), stored in the tree.

    Returns
    -------
    tree : Tree or None
        ``None`` when no feature can split the examples. A depth-1 result is a :class:`Stump` or
        :class:`CategoricalStump`.
    root_search : StumpSearch
        Per-feature result at the root.
    """
    q_all = values.shape[0]
    rows = np.arange(q_all, dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
    cat = np.zeros(q_all, bool) if categorical is None else np.asarray(categorical, bool)
    rows_ord, rows_cat = rows[~cat[rows]], rows[cat[rows]]
    gid = np.arange(q_all) if feature_ids is None else np.asarray(feature_ids, np.int64)
    binned = values.dtype == np.uint8
    cols0 = (
        np.arange(values.shape[1], dtype=np.int64)
        if sample_ids is None
        else np.asarray(sample_ids, np.int64)
    )
    # nodes: dict(row, cat, thr, bin, subset, score, children [kind, payload] x2)
    root_search = None

    def make(cols: np.ndarray, depth: int, value: float) -> dict | float:
        nonlocal root_search
        if depth >= max_depth or cols.size < min_samples_split:
            return value
        s, j, is_cat, first = _node_search(
            values, response, weights, rows_ord=rows_ord, rows_cat=rows_cat, cols=cols,
            criterion=criterion, edges=edges, threads=threads,
        )
        if root_search is None:
            root_search = first
        if s is None:
            return value
        row = int(s.feature_ids[j])
        x = values[row, cols]
        if is_cat:
            go_left = _bit_left(x, s.subset[j])
            node = {"row": row, "cat": True, "thr": np.float32(np.inf), "bin": 256,
                    "subset": s.subset[j].copy()}
        else:
            sb = int(s.split_bin[j]) if binned else -1
            t = np.float32(s.threshold[j])
            go_left = x < (sb if binned else t)
            node = {"row": row, "cat": False, "thr": t, "bin": sb,
                    "subset": np.zeros(8, np.uint32)}
        node["score"] = float(s.score[j])
        node["kids"] = [
            make(cols[go_left], depth + 1, float(s.left_value[j])),
            make(cols[~go_left], depth + 1, float(s.right_value[j])),
        ]
        return node

    root = make(cols0, 0, 0.0)
    if not isinstance(root, dict):
        return None, root_search
    # breadth-first serialisation in OpenCV's layout
    order, queue = [], [root]
    while queue:
        nd = queue.pop(0)
        order.append(nd)
        queue.extend(k for k in nd["kids"] if isinstance(k, dict))
    index = {id(nd): i for i, nd in enumerate(order)}
    left, right, leaves = [], [], []
    for nd in order:
        codes = []
        for k in nd["kids"]:
            if isinstance(k, dict):
                codes.append(index[id(k)])
            else:
                codes.append(-len(leaves))
                leaves.append(k)
        left.append(codes[0])
        right.append(codes[1])
    feats = [int(gid[nd["row"]]) for nd in order]
    if len(order) == 1:
        nd = order[0]
        if nd["cat"]:
            return CategoricalStump(feats[0], nd["subset"], leaves[0], leaves[1],
                                    score=nd["score"]), root_search
        return Stump(feats[0], nd["thr"], leaves[0], leaves[1],
                     split_bin=nd["bin"] if binned else None, score=nd["score"]), root_search
    return Tree(
        feats, [nd["thr"] for nd in order], left, right, leaves,
        subsets=np.stack([nd["subset"] for nd in order]),
        categorical=[nd["cat"] for nd in order],
        split_bins=[nd["bin"] for nd in order] if binned else None,
        node_scores=[nd["score"] for nd in order],
    ), root_search


def fit_weak_learner(
    step: BoostingLoss,
    values: np.ndarray,
    *,
    kind: str = "stump",
    max_depth: int = 2,
    sample_ids: Any = None,
    block: bool = False,
    rows: Any = None,
    feature_ids: Any = None,
    categorical: Any = None,
    edges: np.ndarray | None = None,
    n_parts: int = 8,
    threads: int | None = None,
) -> tuple[Any, Any]:
    """Fit the best weak learner of a block with the step's current weights and response.

    Parameters
    ----------
    step : BoostingLoss
        Gives ``weights``, ``response`` and ``criterion``.
    values : ndarray of shape (Q_all, S_all)
        float32 raw values or uint8 bins (categorical rows: codes 0..255).
    kind : {"stump", "tree", "histogram"}
        ``"histogram"`` (Real AdaBoost's domain partitioning) needs the ``"real"`` loss.
    max_depth : int, default=2
        Depth of trees (``kind="tree"``).
    sample_ids : array-like of int, optional
        ``block=False``: ``values`` has all N examples as columns and ``sample_ids`` selects the
        ones to fit on (default all). ``block=True``: the columns of ``values`` are the examples
        ``sample_ids`` (required, length S_all), in that order.
    rows : array-like of int, optional
        Rows of ``values`` to consider (default all).
    feature_ids : array-like of shape (Q_all,), optional
        Global feature id of each row of ``values`` (default: the row index). Learners store global
        ids, so a learner found on a block can be evaluated with its family later.
    categorical : array-like of shape (Q_all,), bool, optional
        Rows holding categorical codes (MB-LBP).
    edges : ndarray of shape (Q_all, E), float32, optional
        Bin edges of uint8 ``values``.
    n_parts : int, default=8
        Parts of the histogram learner.
    threads : int, optional

    Returns
    -------
    learner : Stump, CategoricalStump, Tree, HistogramLearner or None
        With the *hypothesis* leaf values fitted on the block (refit them on all examples with
        ``step.fit_leaves``). ``None`` if no feature can split the examples.
    search : StumpSearch or HistogramSearch
        Per-feature result of the root split over ``rows``.
    """
    if kind not in WEAK_LEARNERS:
        raise ValueError(f"kind: expected one of {WEAK_LEARNERS}, got {kind!r}")
    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"values: expected a 2-D feature-major block, got shape {values.shape}")
    w_all, r_all = step.weights, step.response
    if block:
        if sample_ids is None:
            raise ValueError("sample_ids: required with block=True (the examples of the columns)")
        sid = np.asarray(sample_ids, dtype=np.int64)
        if sid.shape != (values.shape[1],):
            raise ValueError(
                f"sample_ids: expected {values.shape[1]} ids (one per column), got {sid.shape}"
            )
        if sid.size and (sid.min() < 0 or sid.max() >= step.n_samples):
            raise ValueError(f"sample_ids: ids must be in [0, {step.n_samples})")
        w, r, cols = w_all[sid], r_all[sid], None
    else:
        if values.shape[1] != step.n_samples:
            raise ValueError(
                f"values: has {values.shape[1]} columns but the loss has {step.n_samples} "
                "examples (pass block=True for a block of sampled examples)"
            )
        w, r, cols = w_all, r_all, sample_ids
    if feature_ids is not None:
        feature_ids = np.asarray(feature_ids, dtype=np.int64)
        if feature_ids.shape != (values.shape[0],):
            raise ValueError(
                f"feature_ids: expected {values.shape[0]} ids (one per row), got "
                f"{feature_ids.shape}"
            )
    if kind == "histogram":
        if step.criterion != "real":
            raise ValueError("kind: the histogram learner needs the 'real' loss")
        return _fit_histogram(values, r, w, rows, cols, feature_ids, edges, n_parts, threads)
    depth = 1 if kind == "stump" else check_in_range(max_depth, "max_depth", low=1, high=8,
                                                     integer=True)
    if categorical is not None:
        categorical = np.asarray(categorical, dtype=bool)
        if categorical.shape != (values.shape[0],):
            raise ValueError(f"categorical: expected shape ({values.shape[0]},)")
        if values.dtype != np.uint8 and categorical.any():
            codes = values[categorical]
            if ((codes < 0) | (codes > 255) | (codes != np.round(codes))).any():
                raise ValueError("values: categorical rows must hold integer codes 0..255")
    if values.dtype != np.uint8:
        values = np.ascontiguousarray(values, dtype=np.float32)
    return grow_tree(
        values, r, w, criterion=step.criterion, max_depth=depth, rows=rows,
        categorical=categorical, sample_ids=cols, edges=edges, feature_ids=feature_ids,
        threads=threads,
    )


def _fit_histogram(values, r, w, rows, cols, feature_ids, edges, n_parts, threads):
    if values.dtype != np.uint8:
        # bin the block on the examples used, so parts are quantiles of the fitted examples
        vals = np.ascontiguousarray(values, dtype=np.float32)
        used = vals if cols is None else vals[:, np.asarray(cols, np.int64)]
        edges = compute_bin_edges(used, threads=threads)
        values = bin_values(vals, edges, threads=threads)
    s = search_histograms(
        values, r, w, n_parts=n_parts, edges=edges, feature_ids=rows, sample_ids=cols,
        threads=threads,
    )
    j = s.best()
    if j < 0:
        return None, s
    row = int(s.feature_ids[j])
    nbd = int(s.n_bounds[j])
    gid = row if feature_ids is None else int(feature_ids[row])
    learner = HistogramLearner(
        gid, s.thresholds[j, :nbd], s.values[j, : nbd + 1],
        split_bins=s.split_bins[j, :nbd], score=float(s.score[j]),
    )
    return learner, s
