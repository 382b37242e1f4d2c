"""Split searches: where a boosting round finds its weak learner.

The round loop (:mod:`vjboost.boost.rounds`) and the tree grower (:class:`~vjboost.boost.weak.
TreeShape`) never touch feature values; they talk to a *split search*:

``best_splits(problem, node_ids)``
    For each node (the example ids reaching it; ``None`` = all examples), the best
    :class:`~vjboost.boost.weak.Split` under the problem's weights and response (``None`` when
    no feature separates the node's examples), with the per-feature result when there is one.
``go_left(split, ids)``
    The side of each example ``ids`` (``None`` = all) at a split.
``rows(tree)``
    The values of ``tree.features_`` on all examples and whether they are bins (for the leaf
    refit on all examples).
``binned``
    Whether trees are grown on uint8 bins (they then carry ``split_bins``).

Implementations:

:class:`MatrixSearch`
    A precomputed matrix (float32 values or uint8 bins, any :class:`~vjboost.boost.source.
    MatrixSource`), searched in place: exhaustive over its rows (or a subset drawn per round).
:class:`StreamedSearch`
    A feature pool evaluated in blocks of features at every search (memory bounded by a block):
    each block is evaluated once for all the nodes searched together.
:class:`SampledSearch`
    An adaptive sampler of :mod:`vjboost.boost.sampling` chooses each node's split under a
    budget of feature evaluations, on the examples reaching the node; features are evaluated
    lazily through the source, for the sampled blocks only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost.boost.losses import Problem
from vjboost.boost.source import FeatureSource, MatrixSource
from vjboost.boost.stumps import search_splits
from vjboost.boost.tree import Tree
from vjboost.boost.weak import WEAK_LEARNERS, Split, TreeShape, fit_partition, go_left

__all__ = ["MatrixSearch", "SampledSearch", "StreamedSearch", "fit_weak_learner"]


def _best(s: Any, feature_of: Any) -> Split | None:
    j = s.best()
    if j < 0:
        return None
    return Split.from_search(s, j, int(feature_of(int(s.feature_ids[j]))))


class _NodeByNode:
    """Searches that handle the nodes of one call one after the other."""

    def best_splits(self, problem: Problem, node_ids: list[np.ndarray | None]
                    ) -> list[tuple[Split | None, Any]]:
        """The best split of each node (nodes of fewer than two examples are not split).

        Parameters
        ----------
        problem : Problem
            Weights and response of the round, for all N examples.
        node_ids : list of (ndarray of int64 or None)
            The examples of each node (``None``: all examples).

        Returns
        -------
        list of (Split or None, object)
            Per node: its best split (``None`` when no feature splits it) and the search's
            per-feature result (``None`` when not kept).
        """
        # a node of fewer than two examples cannot be split
        return [(None, None) if ids is not None and ids.size < 2 else self._node(problem, ids)
                for ids in node_ids]

    def _node(self, problem: Problem, ids: np.ndarray | None) -> tuple[Split | None, Any]:
        raise NotImplementedError


class MatrixSearch(_NodeByNode):
    """Exhaustive search over a precomputed feature-major matrix (searched in place).

    Parameters
    ----------
    values : ndarray (F, N) float32 or uint8, or a MatrixSource
    edges : ndarray (F, E), optional
        Bin edges of uint8 values (thresholds are then raw values).
    categorical : bool mask (F,), optional
    feature_ids : array-like (F,), optional
        Global id of each row (stored in the trees); default the row.
    rows : array-like of int, optional
        Rows searched (default all); ``row_subset`` may be changed between rounds
        (``max_features``).
    threads : int, optional

    Examples
    --------
    >>> from vjboost.boost.losses import make_loss
    >>> from vjboost.boost.weak import TreeShape
    >>> X = np.array([[0, 1, 2, 3], [0, 3, 1, 2]], dtype=np.float32)
    >>> tree, _ = TreeShape(max_depth=2).grow(MatrixSearch(X),
    ...                                       make_loss("gentle", [1, -1, -1, 1]).problems()[0])
    >>> tree.predict_matrix(X).tolist()
    [1.0, -1.0, -1.0, 1.0]
    """

    def __init__(self, values: Any, *, edges: Any = None, categorical: Any = None,
                 feature_ids: Any = None, rows: Any = None, threads: int | None = None) -> None:
        if not isinstance(values, MatrixSource):
            values = MatrixSource(values, edges=edges, categorical=categorical,
                                  feature_ids=feature_ids)
        self.source = values
        self.values = values.matrix
        self.edges = values.edges
        self.binned = values.binned
        self.categorical = values.categorical if values.categorical.any() else None
        self._identity = values._feature_ids is None or bool(np.array_equal(
            values._feature_ids, np.arange(values.n_features)))
        self._lookup: dict[int, int] | None = None
        self.feature_ids = values.feature_ids
        self.row_subset = None if rows is None else np.asarray(rows, dtype=np.int64)
        self.threads = threads

    def _row_of(self, features: np.ndarray) -> np.ndarray:
        if self._identity:
            return np.asarray(features, dtype=np.int64)
        if self._lookup is None:  # once: a round asks for a tree's few features
            self._lookup = {int(g): i for i, g in enumerate(self.feature_ids)}
        return np.array([self._lookup[int(g)] for g in features], dtype=np.int64)

    def search(self, problem: Problem, ids: np.ndarray | None) -> Any:
        """Per-feature best splits of the rows on the examples ``ids``.

        Parameters
        ----------
        problem : Problem
            Weights and response of the round, for all N examples.
        ids : ndarray of int64 or None
            The examples (``None``: all).

        Returns
        -------
        StumpSearch
            One entry per searched row (all rows, or ``row_subset``).
        """
        return search_splits(self.values, problem.response, problem.weights,
                             criterion=problem.criterion, categorical=self.categorical,
                             edges=self.edges, feature_ids=self.row_subset, sample_ids=ids,
                             threads=self.threads)

    def _node(self, problem: Problem, ids: np.ndarray | None) -> tuple[Split | None, Any]:
        s = self.search(problem, ids)
        return _best(s, lambda r: self.feature_ids[r]), s

    def go_left(self, split: Split, ids: np.ndarray | None) -> np.ndarray:
        """Side of each example at ``split`` (True = left).

        Parameters
        ----------
        split : Split
            A split found by this search (``split.row`` indexes the matrix).
        ids : ndarray of int64 or None
            The examples (``None``: all).

        Returns
        -------
        ndarray of bool, shape (len(ids),) or (N,)
        """
        x = self.values[split.row] if ids is None else self.values[split.row, ids]
        return go_left(split, x, self.binned)

    def rows_of(self, tree: Tree) -> np.ndarray:
        return np.ascontiguousarray(self.values[self._row_of(tree.features_)])

    def rows(self, tree: Tree) -> tuple[np.ndarray, bool]:
        return self.rows_of(tree), self.binned

    def fit_partition(self, problem: Problem, ids: np.ndarray | None, n_parts: int
                      ) -> tuple[Tree | None, Any]:
        """Real AdaBoost's domain-partitioning learner (``weak_learner="histogram"``).

        Parameters
        ----------
        problem : Problem
            A two-class problem with the ``"real"`` criterion.
        ids : ndarray of int64 or None
            The examples fitted (``None``: all).
        n_parts : int
            Parts of the feature's domain, in [2, 256].

        Returns
        -------
        tree : Tree or None
            A balanced tree on the best feature (``None`` when no feature splits).
        search : object
            The per-feature histogram search result.
        """
        return fit_partition(self.values, problem, ids, n_parts, rows=self.row_subset,
                             feature_ids=self.feature_ids, edges=self.edges,
                             threads=self.threads)


class _NoPartition:
    """Searches without a precomputed matrix, which the histogram learner needs."""

    def fit_partition(self, problem: Problem, ids: Any, n_parts: int) -> Any:
        """Not available: always raises ``ValueError`` (the histogram learner needs a matrix).

        Parameters
        ----------
        problem, ids, n_parts
            As for :meth:`MatrixSearch.fit_partition`.
        """
        raise ValueError("weak_learner: the histogram learner needs a precomputed matrix")


class StreamedSearch(_NoPartition):
    """Exhaustive search over a feature pool evaluated block by block (low memory).

    Every call of :meth:`best_splits` evaluates the pool's features ``block`` at a time on all
    examples and searches every node in each block, so a depth-``k`` tree costs ``k`` passes.

    Parameters
    ----------
    source : PoolSource (or any FeatureSource)
    block : int
        Features per block.
    threads : int, optional

    Examples
    --------
    >>> from vjboost.boost.losses import make_loss
    >>> from vjboost.boost.source import PoolSource
    >>> from vjboost.features import FeaturePool, PixelFamily
    >>> # 4 windows of 2 x 2 pixels; pixel 2 (bottom left) separates the classes
    >>> windows = np.array([[[4, 7], [0, 2]], [[1, 7], [3, 8]],
    ...                     [[4, 7], [5, 1]], [[1, 7], [9, 9]]], dtype=np.uint8)
    >>> search = StreamedSearch(PoolSource(FeaturePool([PixelFamily((2, 2))]), windows), block=2)
    >>> problem = make_loss("gentle", [-1, -1, 1, 1]).problems()[0]
    >>> [(split, _)] = search.best_splits(problem, [None])   # one node: all examples
    >>> split.feature, split.threshold, float(split.left_value), float(split.right_value)
    (2, 4.0, -1.0, 1.0)
    >>> search.go_left(split, None).tolist()
    [True, True, False, False]
    """

    binned = False

    def __init__(self, source: FeatureSource, *, block: int, threads: int | None = None
                 ) -> None:
        self.source = source
        self.block = max(1, int(block))
        self.threads = threads
        self.categorical = source.categorical if source.categorical.any() else None

    def best_splits(self, problem: Problem, node_ids: list[np.ndarray | None]
                    ) -> list[tuple[Split | None, Any]]:
        """The best split of each node, in one pass over the pool's blocks.

        Parameters
        ----------
        problem : Problem
            Weights and response of the round, for all N examples.
        node_ids : list of (ndarray of int64 or None)
            The examples of each node (``None``: all examples).

        Returns
        -------
        list of (Split or None, None)
            Per node: its best split (``None`` when no feature splits it or it has fewer than
            two examples).
        """
        best: list[Split | None] = [None] * len(node_ids)
        n = self.source.n_features
        for a in range(0, n, self.block):
            gids = np.arange(a, min(a + self.block, n), dtype=np.int64)
            vals = self.source.values(gids)
            cat = None if self.categorical is None else self.categorical[gids]
            for k, ids in enumerate(node_ids):
                if ids is not None and ids.size < 2:
                    continue
                s = search_splits(vals, problem.response, problem.weights,
                                  criterion=problem.criterion, categorical=cat, sample_ids=ids,
                                  threads=self.threads)
                cand = _best(s, lambda r, g=gids: g[r])
                if cand is not None and (best[k] is None or cand.score > best[k].score):
                    best[k] = cand
        return [(b, None) for b in best]

    def go_left(self, split: Split, ids: np.ndarray | None) -> np.ndarray:
        """Side of each example at ``split`` (True = left); evaluates the split's feature.

        Parameters
        ----------
        split : Split
            A split found by this search.
        ids : ndarray of int64 or None
            The examples (``None``: all).

        Returns
        -------
        ndarray of bool, shape (len(ids),) or (N,)
        """
        x = self.source.values(np.array([split.feature], dtype=np.int64), ids)[0]
        return go_left(split, x, False)

    def rows(self, tree: Tree) -> tuple[np.ndarray, bool]:
        return self.source.values(tree.features_), False


class SampledSearch(_NoPartition, _NodeByNode):
    """Each node's split chosen by an adaptive sampler under a budget of feature evaluations.

    The sampler sees the node's examples only (the evaluator's weights are restricted to them),
    draws blocks of (features x examples) and pays ``Q * S`` per block (``cost_``). Routing a
    node's examples and refitting the leaves need the chosen features on all examples; those
    columns are evaluated once per round and counted in ``refit_cost_``.

    Parameters
    ----------
    sampler : Sampler
    source : FeatureSource
        Features evaluated lazily (a :class:`~vjboost.boost.source.PoolSource`), or a matrix.
    budget : int
        Feature evaluations per node.
    threads : int, optional

    Attributes
    ----------
    cost_ : int
        Evaluations spent by the sampler since the last :meth:`new_round`.
    refit_cost_ : int
        Evaluations of chosen features on all examples (routing and refit), all rounds.
    selections_ : list of dict
        The sampler's details of every node of the round.

    Examples
    --------
    >>> from vjboost.boost.losses import make_loss
    >>> from vjboost.boost.sampling import Full
    >>> from vjboost.boost.source import MatrixSource
    >>> from vjboost.boost.weak import TreeShape
    >>> X = np.array([[0, 1, 2, 3], [3, 1, 2, 0]], dtype=np.float32)
    >>> search = SampledSearch(Full(), MatrixSource(X), budget=8)
    >>> problem = make_loss("gentle", [-1, -1, 1, 1]).problems()[0]
    >>> tree, _ = TreeShape().grow(search, problem)
    >>> int(tree.feature[0]), float(tree.threshold[0]), tree.leaves.tolist()
    (0, 1.5, [-1.0, 1.0])
    >>> # the sampler paid 2 features x 4 examples; the chosen feature's column, 4 more
    >>> search.cost_, search.refit_cost_, search.selections_
    (8, 4, [{'Q': 2, 'S': 4}])
    """

    def __init__(self, sampler: Any, source: FeatureSource, budget: int, *,
                 threads: int | None = None) -> None:
        from vjboost.boost.sampling.evaluator import EdgeEvaluator

        self.sampler = sampler
        self.source = source
        self.budget = int(budget)
        self.evaluator = EdgeEvaluator(source, threads=threads)
        self.binned = isinstance(source, MatrixSource) and source.binned
        if self.binned and source.edges is None:
            raise ValueError("X: a uint8 matrix needs its bin_edges (thresholds are raw values)")
        self.started = False
        self.cost_ = 0
        self.refit_cost_ = 0
        self.selections_: list[dict] = []
        self._columns: dict[int, np.ndarray] = {}
        self._root = True

    def new_round(self) -> None:
        """Forget the round's columns and counters (the loop calls this before each round)."""
        self._columns = {}
        self.cost_ = 0
        self.selections_ = []
        self._root = True

    def column(self, feature: int) -> np.ndarray:
        if feature not in self._columns:
            self._columns[feature] = self.evaluator.column(feature)
            self.refit_cost_ += self.source.n_samples
        return self._columns[feature]

    def _node(self, problem: Problem, ids: np.ndarray | None) -> tuple[Split | None, Any]:
        self.evaluator.set_problem(problem, node_ids=ids)
        if not self.started:
            self.sampler.start(self.evaluator, self.budget)
            self.started = True
        sel = self.sampler.select(self.evaluator, self.budget)
        self.cost_ += sel.cost
        self.selections_.append(sel.info)
        wl = sel.learner
        root, self._root = self._root, False
        if not np.isfinite(wl.edge):
            if not root:
                return None, None
            # every sampled feature was constant on the sample: a round is not lost, its
            # learner is a constant (everything left), refitted on all examples
            wl.threshold, wl.subset = float(np.finfo(np.float32).max), None
            wl.split_bin = 256 if self.binned else None
        sub = wl.subset if wl.subset is not None and np.any(wl.subset) else None
        return Split(int(wl.feature), int(wl.feature), float(wl.edge), np.copy(wl.left_value),
                     np.copy(wl.right_value), float(wl.threshold), wl.split_bin, sub), None

    def go_left(self, split: Split, ids: np.ndarray | None) -> np.ndarray:
        """Side of each example at ``split`` (True = left), from the round's cached column.

        Parameters
        ----------
        split : Split
            A split chosen by the sampler.
        ids : ndarray of int64 or None
            The examples (``None``: all).

        Returns
        -------
        ndarray of bool, shape (len(ids),) or (N,)
        """
        col = self.column(split.feature)
        return go_left(split, col if ids is None else col[ids], self.binned)

    def rows(self, tree: Tree) -> tuple[np.ndarray, bool]:
        vals = np.stack([self.column(int(f)) for f in tree.features_])
        if not self.binned and tree.categorical.any() and vals.dtype != np.uint8:
            # codes delivered as float32: apply() reads them as integers either way
            vals = np.ascontiguousarray(vals)
        return np.ascontiguousarray(vals), self.binned


def fit_weak_learner(
    step: Any,
    values: np.ndarray,
    *,
    kind: str = "stump",
    max_depth: int = 2,
    max_leaves: int | None = None,
    sample_ids: Any = None,
    block: bool = False,
    rows: Any = None,
    feature_ids: Any = None,
    categorical: Any = None,
    edges: np.ndarray | None = None,
    n_parts: int = 8,
    threads: int | None = None,
) -> tuple[Tree | None, Any]:
    """Fit the best weak learner of a block with the step's current weights and response.

    Parameters
    ----------
    step : loss object or Problem
        Gives ``weights``, ``response`` and ``criterion`` (a loss of
        :mod:`vjboost.boost.losses` with one problem per round, or a :class:`Problem`).
    values : ndarray of shape (Q_all, S_all)
        float32 raw values or uint8 bins (categorical rows: codes 0..255).
    kind : {"stump", "tree", "histogram"}
        ``"histogram"`` (Real AdaBoost's domain partitioning) needs the ``"real"`` criterion.
    max_depth : int, default=2
        Depth of trees (``kind="tree"``).
    max_leaves : int, optional
        Best-first trees of this many leaves instead (``kind="tree"``).
    sample_ids : array-like of int, optional
        ``block=False``: ``values`` has all N examples as columns and ``sample_ids`` selects the
        ones to fit on (default all). ``block=True``: the columns of ``values`` are the examples
        ``sample_ids`` (required, length S_all), in that order.
    rows : array-like of int, optional
        Rows of ``values`` to consider (default all).
    feature_ids : array-like of shape (Q_all,), optional
        Global feature id of each row of ``values`` (default: the row index); learners store
        global ids.
    categorical : array-like of shape (Q_all,), bool, optional
        Rows holding categorical codes (MB-LBP).
    edges : ndarray of shape (Q_all, E), float32, optional
        Bin edges of uint8 ``values``.
    n_parts : int, default=8
        Parts of the histogram learner.
    threads : int, optional

    Returns
    -------
    learner : Tree or None
        With the *hypothesis* leaf values fitted on the block (refit them on all examples with
        ``step.fit_leaves``). ``None`` if no feature can split the examples.
    search : StumpSearch or HistogramSearch
        Per-feature result of the root split over ``rows``.

    Examples
    --------
    >>> from vjboost.boost.losses import make_loss
    >>> X = np.array([[0, 1, 2, 3], [3, 1, 2, 0]], dtype=np.float32)
    >>> tree, search = fit_weak_learner(make_loss("gentle", [-1, -1, 1, 1]), X)
    >>> int(tree.feature[0]), float(tree.threshold[0]), tree.leaves.tolist()
    (0, 1.5, [-1.0, 1.0])
    """
    if kind not in WEAK_LEARNERS:
        raise ValueError(f"kind: expected one of {WEAK_LEARNERS}, got {kind!r}")
    shape = TreeShape.of(kind, max_depth=max_depth, max_leaves=max_leaves, n_parts=n_parts)
    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"values: expected a 2-D feature-major block, got shape {values.shape}")
    problem = step if isinstance(step, Problem) else step.problems()[0]
    if block:
        if sample_ids is None:
            raise ValueError("sample_ids: required with block=True (the examples of the columns)")
        sid = np.asarray(sample_ids, dtype=np.int64)
        if sid.shape != (values.shape[1],):
            raise ValueError(f"sample_ids: expected {values.shape[1]} ids (one per column), got "
                             f"{sid.shape}")
        if sid.size and (sid.min() < 0 or sid.max() >= problem.n_samples):
            raise ValueError(f"sample_ids: ids must be in [0, {problem.n_samples})")
        problem = Problem(problem.weights[sid], problem.response[sid], problem.criterion)
        cols = None
    else:
        if values.shape[1] != problem.n_samples:
            raise ValueError(f"values: has {values.shape[1]} columns but the loss has "
                             f"{problem.n_samples} examples (pass block=True for a block of "
                             "sampled examples)")
        cols = None if sample_ids is None else np.asarray(sample_ids, dtype=np.int64)
    if kind == "histogram" and problem.criterion != "real":
        raise ValueError("kind: the histogram learner needs the 'real' loss")
    search = MatrixSearch(values, edges=edges, categorical=categorical, feature_ids=feature_ids,
                          rows=rows, threads=threads)
    return shape.grow(search, problem, cols)
