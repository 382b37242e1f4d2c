"""Weak learners: trees grown node by node from any split search.

Every weak learner of vjboost is a :class:`~vjboost.boost.tree.Tree`. :class:`TreeShape` says
which tree to grow and :meth:`TreeShape.grow` grows it from a *split search* (the protocol of
:mod:`vjboost.boost.search`: the best split of each of a list of nodes, the side an example of a
node goes to, the values of a tree's features on all examples):

* ``max_depth=k`` (default 1, a stump): every node is split down to depth ``k``, as OpenCV's
  ``maxDepth`` (a node stops early when no feature separates its examples);
* ``max_leaves=J``: best-first growth (Friedman, Hastie & Tibshirani 2000) — the leaf whose best
  split gains the most is split next, until ``J`` leaves ("J terminal nodes");
* ``n_parts=P``: Real AdaBoost's domain partitioning — one feature cut into ``P`` quantile parts
  (built as a balanced tree on that feature).

Nodes are searched on the examples that reach them (a node's search sees only its examples'
weights and response), and a tree may mix ordered and categorical nodes. For AdaBoost.MH's vote
vectors (criterion ``"vote"``) the root chooses the vote vector ``v``; the nodes below it split
the collapsed two-class problem ``r_i = sum_k v_k w_ik Y_ik`` (Discrete AdaBoost on ``|r|`` and
``sign(r)``), so a deeper tree outputs ``phi(x) v`` with ``phi`` in {-1, +1} per leaf.

:func:`vjboost.boost.search.fit_weak_learner` fits one learner on a block of values (a
:class:`~vjboost.boost.search.MatrixSearch` over the block, grown by :class:`TreeShape`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vjboost._validation import check_in_range
from vjboost.boost.binning import bin_values, compute_bin_edges
from vjboost.boost.losses import Problem
from vjboost.boost.stumps import StumpSearch, search_histograms
from vjboost.boost.tree import Tree

__all__ = ["WEAK_LEARNERS", "Split", "TreeShape", "partition_tree"]

WEAK_LEARNERS = ("stump", "tree", "histogram")


@dataclass
class Split:
    """The best split of one node.

    ``feature`` is the global feature id, ``row`` the search's own index of it (for routing).
    An ordered split sends an example left iff ``value < threshold`` (``bin < split_bin`` on
    bins); a categorical one iff bit ``code`` of ``subset`` is set. ``left_value`` and
    ``right_value`` (scalars, or K-vectors for multi-class problems) are the hypothesis leaves
    estimated on the node's examples; ``score`` the criterion value.

    Parameters
    ----------
    feature : int
        Global feature id.
    row : int
        The search's own index of the feature.
    score : float
        Criterion value (larger is better).
    left_value, right_value : float or ndarray of shape (K,)
        Hypothesis leaves on the node's examples.
    threshold : float, default inf
        Raw-value threshold of an ordered split.
    split_bin : int, optional
        The threshold as a bin, for searches on uint8 bins.
    subset : ndarray of shape (8,), uint32, optional
        Codes going left (bit ``c``), for a categorical split.
    info : dict
        Search-specific details.

    Examples
    --------
    >>> from vjboost.boost.stumps import search_stumps
    >>> X = np.array([[0, 1, 2, 3]], dtype=np.float32)
    >>> s = search_stumps(X, np.array([-1.0, -1.0, 1.0, 1.0]), np.full(4, 0.25))
    >>> split = Split.from_search(s, 0, feature=7)   # row 0 of X is the global feature 7
    >>> split.feature, split.row, split.threshold, split.categorical
    (7, 0, 1.5, False)
    >>> float(split.left_value), float(split.right_value)
    (-1.0, 1.0)
    >>> go_left(split, X[0], binned=False).tolist()
    [True, True, False, False]
    """

    feature: int
    row: int
    score: float
    left_value: Any
    right_value: Any
    threshold: float = float("inf")
    split_bin: int | None = None
    subset: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def categorical(self) -> bool:
        return self.subset is not None

    @classmethod
    def from_search(cls, s: StumpSearch, pos: int, feature: int) -> Split:
        """Split of position ``pos`` of a per-feature search result.

        Parameters
        ----------
        s : StumpSearch
            The per-feature result.
        pos : int
            Position in ``s`` (its ``feature_ids[pos]`` becomes the ``row``).
        feature : int
            Global feature id of that row.

        Returns
        -------
        Split
        """
        sub = None
        if s.subset is not None and np.any(s.subset[pos]):
            sub = s.subset[pos].copy()
        sb = None if s.split_bin is None else int(s.split_bin[pos])
        return cls(int(feature), int(s.feature_ids[pos]), float(s.score[pos]),
                   np.copy(s.left_value[pos]), np.copy(s.right_value[pos]),
                   float(s.threshold[pos]), sb, sub)


def go_left(split: Split, x: np.ndarray, binned: bool) -> np.ndarray:
    """Side of each value ``x`` (S,) at ``split`` (True = left).

    Parameters
    ----------
    split : Split
        The node's split.
    x : ndarray of shape (S,)
        The split feature's values: raw float32, uint8 bins (``binned``), or codes for a
        categorical split.
    binned : bool
        Compare bins with ``split.split_bin`` rather than values with ``split.threshold``.

    Returns
    -------
    ndarray of bool, shape (S,)
    """
    if split.categorical:
        c = x.astype(np.int64)
        return ((split.subset[c >> 5] >> (c & 31).astype(np.uint32)) & 1).astype(bool)
    if binned:
        return x < split.split_bin
    return x < np.float32(split.threshold)


def _node_score(p: Problem, ids: np.ndarray | None) -> float:
    """Criterion value of a node left unsplit (for best-first gains)."""
    w = p.weights if ids is None else p.weights[ids]
    r = p.response if ids is None else p.response[ids]
    if p.criterion == "regression":
        a, b = w.sum(axis=0), (w * r).sum(axis=0)
        return float(np.sum(np.divide(b * b, a, out=np.zeros_like(b), where=a > 0)))
    if p.criterion == "real":
        wp, wn = np.where(r > 0, w, 0.0).sum(axis=0), np.where(r < 0, w, 0.0).sum(axis=0)
        return float(np.sum(wp + wn - 2.0 * np.sqrt(wp * wn)))
    return float(np.sum(np.abs((w * r).sum(axis=0))))


def _collapse(p: Problem, votes: np.ndarray) -> Problem:
    """The two-class problem below a vote-vector root: ``r = sum_k v_k w_k Y_k``."""
    r = (p.weights * p.response) @ votes
    w = np.abs(r)
    if not w.sum() > 0:
        w = np.full(w.size, 1.0)
    return Problem(w, np.where(r >= 0, 1.0, -1.0), "discrete")


@dataclass
class _Node:
    ids: np.ndarray | None  # examples reaching the node (None: all)
    depth: int
    value: Any  # hypothesis leaf value (scalar or K-vector)
    problem: Problem
    scale: np.ndarray | None = None  # vote vector below a vote root: leaves are value * scale
    split: Split | None = None
    gain: float = -np.inf
    kids: list[_Node] = field(default_factory=list)


@dataclass(frozen=True)
class TreeShape:
    """Which weak learner to grow.

    Parameters
    ----------
    max_depth : int, default=1
        Depth of complete trees (1 = stump); with ``max_leaves``, an optional depth limit.
    max_leaves : int, optional
        Best-first growth to this many leaves (terminal nodes), at least 2.
    n_parts : int, optional
        Real AdaBoost's domain partitioning into this many parts of one feature (criterion
        ``"real"`` and a :class:`~vjboost.boost.search.MatrixSearch` only).
    min_samples_split : int, default=2
        Nodes with fewer examples are not split.

    Examples
    --------
    >>> TreeShape(max_leaves=8).n_leaves_max
    8
    >>> TreeShape(max_depth=2).n_leaves_max
    4
    """

    max_depth: int | None = 1
    max_leaves: int | None = None
    n_parts: int | None = None
    min_samples_split: int = 2

    def __post_init__(self) -> None:
        if self.max_depth is not None:
            check_in_range(self.max_depth, "max_depth", low=1, high=16, integer=True)
        if self.max_leaves is not None:
            check_in_range(self.max_leaves, "max_leaves", low=2, high=4096, integer=True)
        if self.max_depth is None and self.max_leaves is None and self.n_parts is None:
            raise ValueError("max_depth / max_leaves: give at least one")
        if self.n_parts is not None:
            check_in_range(self.n_parts, "n_parts", low=2, high=256, integer=True)
        check_in_range(self.min_samples_split, "min_samples_split", low=2, integer=True)

    @classmethod
    def of(cls, weak_learner: str = "stump", *, max_depth: int = 2,
           max_leaves: int | None = None, n_parts: int = 8) -> TreeShape:
        """The shape of an estimator's ``weak_learner`` setting.

        ``"stump"``; ``"tree"`` with ``max_depth`` (complete) or ``max_leaves`` (best-first);
        ``"histogram"`` with ``n_parts``.

        Parameters
        ----------
        weak_learner : {"stump", "tree", "histogram"}, default "stump"
        max_depth : int, default 2
            Depth of a complete tree (``"tree"`` without ``max_leaves``).
        max_leaves : int, optional
            Leaves of a best-first tree (``"tree"``), in [2, 4096].
        n_parts : int, default 8
            Parts of the histogram learner, in [2, 256].

        Returns
        -------
        TreeShape
        """
        if weak_learner not in WEAK_LEARNERS:
            raise ValueError(f"weak_learner: expected one of {WEAK_LEARNERS}, got "
                             f"{weak_learner!r}")
        if weak_learner == "stump":
            return cls()
        if weak_learner == "histogram":
            return cls(max_depth=None, n_parts=n_parts)
        if max_leaves is not None:
            return cls(max_depth=None, max_leaves=max_leaves)
        return cls(max_depth=max_depth)

    @property
    def n_leaves_max(self) -> int:
        if self.n_parts is not None:
            return self.n_parts
        if self.max_leaves is not None:
            return self.max_leaves
        return 2 ** int(self.max_depth)

    # -- growth ----------------------------------------------------------------------------------

    def grow(self, search: Any, problem: Problem, sample_ids: np.ndarray | None = None
             ) -> tuple[Tree | None, Any]:
        """Grow one learner on the examples ``sample_ids`` (default all).

        Parameters
        ----------
        search : MatrixSearch, StreamedSearch or SampledSearch
            Finds the nodes' splits and routes their examples.
        problem : Problem
            Weights and response of the round, for all N examples.
        sample_ids : ndarray of int, optional
            The examples the learner is grown on (default all).

        Returns
        -------
        tree : Tree or None
            With hypothesis leaves (refit them on all examples) and ``split_bins`` when the
            search works on bins; ``None`` when no feature can split the examples.
        root : StumpSearch or None
            The per-feature result of the root, when the search provides one.
        """
        if self.n_parts is not None:
            return search.fit_partition(problem, sample_ids, self.n_parts)
        ids = None if sample_ids is None else np.asarray(sample_ids, dtype=np.int64)
        root = _Node(ids, 0, _zero(problem), problem)
        (split, root_search), = search.best_splits(problem, [ids])
        if split is None:
            return None, root_search
        self._set_split(root, split)
        if self.max_leaves is None:
            self._grow_levels(search, root)
        else:
            self._grow_best_first(search, root)
        return self._build(root, search.binned), root_search

    def _can_split(self, node: _Node, n_total: int) -> bool:
        n = n_total if node.ids is None else node.ids.size
        depth_ok = self.max_depth is None or node.depth < self.max_depth
        return depth_ok and n >= self.min_samples_split

    def _set_split(self, node: _Node, split: Split) -> None:
        node.split = split
        if self.max_leaves is not None:  # gains only order best-first growth
            node.gain = split.score - _node_score(node.problem, node.ids)

    def _children(self, search: Any, node: _Node) -> list[_Node]:
        """Route the node's examples and make its two (unsearched) children."""
        s = node.split
        left = search.go_left(s, node.ids)
        all_ids = (np.arange(node.problem.n_samples, dtype=np.int64) if node.ids is None
                   else node.ids)
        prob, scale = node.problem, node.scale
        lv, rv = s.left_value, s.right_value
        if prob.criterion == "vote":
            scale = np.asarray(s.right_value, dtype=np.float64)  # the vote vector v
            prob = _collapse(prob, scale)
            lv, rv = -1.0, 1.0
        node.kids = [_Node(all_ids[left], node.depth + 1, lv, prob, scale),
                     _Node(all_ids[~left], node.depth + 1, rv, prob, scale)]
        return node.kids

    def _search_all(self, search: Any, nodes: list[_Node]) -> None:
        todo = [nd for nd in nodes if self._can_split(nd, nd.problem.n_samples)]
        # nodes of one call share a problem (a vote root's children share the collapsed one)
        groups: dict[int, list[_Node]] = {}
        for nd in todo:
            groups.setdefault(id(nd.problem), []).append(nd)
        for group in groups.values():
            found = search.best_splits(group[0].problem, [nd.ids for nd in group])
            for nd, (split, _) in zip(group, found, strict=True):
                if split is not None:
                    self._set_split(nd, split)

    def _grow_levels(self, search: Any, root: _Node) -> None:
        level = [root]
        while level:
            kids = [k for nd in level if nd.split is not None for k in self._children(search, nd)]
            self._search_all(search, kids)
            level = [k for k in kids if k.split is not None]

    def _grow_best_first(self, search: Any, root: _Node) -> None:
        frontier = [root]  # split candidates: leaves with a split found
        n_leaves = 1
        while frontier and n_leaves < self.max_leaves:
            best = max(range(len(frontier)), key=lambda i: frontier[i].gain)
            node = frontier.pop(best)
            kids = self._children(search, node)
            n_leaves += 1
            if n_leaves < self.max_leaves:
                self._search_all(search, kids)
                frontier.extend(k for k in kids if k.split is not None)
        # splits found but not used stay leaves
        stack = [root]
        while stack:
            nd = stack.pop()
            if not nd.kids:
                nd.split = None
            stack.extend(nd.kids)

    @staticmethod
    def _build(root: _Node, binned: bool) -> Tree:
        """Breadth-first serialisation in OpenCV's layout."""
        order, queue = [], [root]
        while queue:
            nd = queue.pop(0)
            order.append(nd)
            queue.extend(k for k in nd.kids if k.split is not None)
        index = {id(nd): i for i, nd in enumerate(order)}
        left, right, leaves = [], [], []
        for nd in order:
            codes = []
            for k in nd.kids:
                if k.split is not None:
                    codes.append(index[id(k)])
                else:
                    codes.append(-len(leaves))
                    v = np.asarray(k.value, dtype=np.float64)
                    leaves.append(v * k.scale if k.scale is not None else v)
            left.append(codes[0])
            right.append(codes[1])
        splits = [nd.split for nd in order]
        cat = [s.categorical for s in splits]
        return Tree(
            [s.feature for s in splits],
            threshold=[0.0 if s.categorical else s.threshold for s in splits],
            left=left, right=right, leaves=np.stack(leaves),
            categorical=cat,
            subsets=np.stack([s.subset if s.categorical else np.zeros(8, np.uint32)
                              for s in splits]),
            split_bins=([0 if s.categorical else s.split_bin for s in splits]
                        if binned else None),
            node_scores=[s.score for s in splits],
        )


def _zero(problem: Problem) -> Any:
    return 0.0 if problem.n_outputs == 1 else np.zeros(problem.n_outputs)


def partition_tree(feature: int, thresholds: Any, values: Any, *, split_bins: Any = None,
                   score: float = 0.0) -> Tree:
    """Real AdaBoost's domain-partitioning learner as a balanced :class:`Tree` on one feature.

    Part ``j`` (value ``values[j]``) holds the values ``v`` with exactly ``j`` of the strictly
    increasing ``thresholds`` ``<= v`` (left iff ``v < threshold`` at every node).

    Parameters
    ----------
    feature : int
        Global feature id of every node.
    thresholds : array-like of shape (P - 1,)
        Strictly increasing raw-value thresholds (at least one; stored as float32).
    values : array-like of shape (P,)
        The parts' leaf values.
    split_bins : array-like of shape (P - 1,), int, optional
        The thresholds as bins (the tree then carries ``split_bins``).
    score : float, default 0.0
        Criterion value, stored as the root's node score.

    Returns
    -------
    Tree
        Balanced, depth ``ceil(log2 P)``, ``P`` leaves.

    Examples
    --------
    >>> t = partition_tree(0, [1.0, 2.0], [-1.0, 0.0, 1.0])
    >>> t.predict_matrix(np.array([[0.5, 1.0, 1.5, 2.5]], dtype=np.float32)).tolist()
    [-1.0, 0.0, 0.0, 1.0]
    """
    t = np.asarray(thresholds, dtype=np.float32).reshape(-1)
    vals = np.asarray(values, dtype=np.float64).reshape(-1)
    if vals.size != t.size + 1 or t.size == 0:
        raise ValueError(f"values: expected {t.size + 1} part values for {t.size} thresholds "
                         "(at least one)")
    if t.size > 1 and not (np.diff(t) > 0).all():
        raise ValueError("thresholds: must be strictly increasing")
    sb = None if split_bins is None else np.asarray(split_bins, dtype=np.int64).reshape(-1)

    def build(lo: int, hi: int, depth: int) -> _Node:
        """The balanced subtree of parts ``lo .. hi`` (inclusive); one part is a leaf.

        Parameters
        ----------
        lo, hi : int
            First and last part.
        depth : int
            Depth of the subtree's root.

        Returns
        -------
        _Node
        """
        if lo == hi:
            return _Node(None, depth, vals[lo], None)  # type: ignore[arg-type]
        mid = (lo + hi + 1) // 2
        node = _Node(None, depth, 0.0, None)  # type: ignore[arg-type]
        node.split = Split(int(feature), 0, float(score) if depth == 0 else 0.0, 0.0, 0.0,
                           float(t[mid - 1]), None if sb is None else int(sb[mid - 1]))
        node.kids = [build(lo, mid - 1, depth + 1), build(mid, hi, depth + 1)]
        return node

    return TreeShape._build(build(0, t.size, 0), sb is not None)


def fit_partition(values: np.ndarray, problem: Problem, cols: np.ndarray | None,
                  n_parts: int, *, rows: Any, feature_ids: np.ndarray, edges: Any,
                  threads: int | None) -> tuple[Tree | None, Any]:
    """Real AdaBoost's domain-partitioning learner on a block (``values`` binned if float).

    Parameters
    ----------
    values : ndarray of shape (F, N), float32 or uint8
        Feature-major values; float values are binned on the examples ``cols`` first.
    problem : Problem
        A two-class problem with the ``"real"`` criterion.
    cols : ndarray of int64 or None
        The examples fitted (``None``: all).
    n_parts : int
        Parts of the feature's domain.
    rows : array-like of int or None
        Rows searched (``None``: all).
    feature_ids : ndarray of int64, shape (F,)
        Global id of each row.
    edges : ndarray of shape (F, E) or None
        Bin edges of uint8 ``values``.
    threads : int or None
        numba threads.

    Returns
    -------
    tree : Tree or None
        A balanced tree on the best feature (``None`` when no feature splits).
    search : object
        The per-feature histogram search result.
    """
    if problem.criterion != "real" or problem.n_outputs != 1:
        raise ValueError("weak_learner: the histogram learner needs the two-class 'real' loss")
    if values.dtype != np.uint8:
        # bin the block on the examples used, so parts are quantiles of the fitted examples
        vals = np.ascontiguousarray(values, dtype=np.float32)
        used = vals if cols is None else vals[:, cols]
        edges = compute_bin_edges(np.ascontiguousarray(used), threads=threads)
        values = bin_values(vals, edges, threads=threads)
    s = search_histograms(values, problem.response, problem.weights, n_parts=n_parts,
                          edges=edges, feature_ids=rows, sample_ids=cols, threads=threads)
    j = s.best()
    if j < 0:
        return None, s
    nbd = int(s.n_bounds[j])
    tree = partition_tree(int(feature_ids[int(s.feature_ids[j])]), s.thresholds[j, :nbd],
                          s.values[j, : nbd + 1], split_bins=s.split_bins[j, :nbd],
                          score=float(s.score[j]))
    return tree, s
