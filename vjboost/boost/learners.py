"""Weak learners: stumps, small trees, categorical stumps, Real AdaBoost histograms, MH stumps.

All learners work on raw feature values (float32) with the OpenCV split convention: an ordered
node sends a value LEFT iff ``value < threshold``; a categorical node sends code ``c`` LEFT iff bit
``c`` of its 256-bit subset (8 uint32 words, ``(w[c >> 5] >> (c & 31)) & 1``) is set. Leaf values
have the boosting coefficient folded in: a strong classifier's score is the sum of its learners'
outputs.

Common interface
----------------
``features_``
    Sorted unique feature ids the learner reads (global ids of the feature pool / matrix rows).
``predict(values)``
    ``values`` has shape ``(len(features_), S)``: the rows of ``features_``, in that order.
``predict_matrix(X)``
    Same on a whole feature-major matrix ``X`` of shape ``(n_features, S)``.
``apply(values, binned=False)``
    Leaf (part) index of every example; ``binned=True`` compares uint8 bins with the split bins
    the learner was trained with.
``to_dict()`` / :func:`learner_from_dict`
    JSON-serialisable round trip.

:class:`Tree` uses OpenCV's tree layout (see the cascade format spec, section 2.1): internal
nodes in breadth-first order, child codes ``c > 0`` = internal node ``c``, ``c <= 0`` = leaf
``-c``, leaves numbered in the order met breadth-first, left before right,
``len(leaf_values) == n_nodes + 1``.
:class:`Stump` and :class:`CategoricalStump` are one-node trees (``left = 0``, ``right = -1``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from vjboost._threads import n_threads
from vjboost._validation import check_array

__all__ = [
    "CategoricalStump",
    "HistogramLearner",
    "MulticlassStump",
    "Stump",
    "Tree",
    "learner_from_dict",
]


@njit(cache=True, nogil=True, parallel=True)
def _tree_apply(values, rows, thr, left, right, is_cat, subset, out):
    for i in prange(values.shape[1]):
        idx = 0
        while True:
            v = values[rows[idx], i]
            if is_cat[idx]:
                c = np.intp(v)
                go_left = (subset[idx, c >> 5] >> np.uint32(c & 31)) & np.uint32(1)
                idx = left[idx] if go_left else right[idx]
            else:
                idx = left[idx] if v < thr[idx] else right[idx]
            if idx <= 0:
                break
        out[i] = -idx


def _check_values(values: Any, n_rows: int, name: str = "values") -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype != np.uint8:
        arr = check_array(arr, name, ndim=2, dtype=np.float32, allow_empty=True)
    elif arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array, got shape {arr.shape}")
    if arr.shape[0] != n_rows:
        raise ValueError(
            f"{name}: expected {n_rows} row(s) (one per feature in features_), got {arr.shape[0]}"
        )
    return np.ascontiguousarray(arr)


def _check_matrix(X: Any, features: np.ndarray) -> np.ndarray:
    arr = np.asarray(X)
    if arr.dtype != np.uint8:
        arr = check_array(arr, "X", ndim=2, dtype=np.float32, allow_empty=True)
    if arr.ndim != 2:
        raise ValueError(f"X: expected a 2-D feature-major array, got shape {arr.shape}")
    if features.size and features.max() >= arr.shape[0]:
        raise ValueError(
            f"X: the learner reads feature {features.max()} but X has {arr.shape[0]} rows"
        )
    return np.ascontiguousarray(arr)


class Tree:
    """A small binary tree (depth 1-3) in OpenCV's layout.

    Parameters
    ----------
    features : array-like of shape (M,), int
        Feature id tested by each internal node (breadth-first order).
    thresholds : array-like of shape (M,), float32
        Ordered nodes: go left iff ``value < threshold``. Ignored for categorical nodes.
    left, right : array-like of shape (M,), int
        OpenCV child codes (``> 0``: internal node index; ``<= 0``: leaf ``-code``).
    leaf_values : array-like of shape (M + 1,), float
        Output of each leaf (boosting coefficient included).
    subsets : array-like of shape (M, 8), uint32, optional
        Categorical nodes' subsets (code goes left iff its bit is set).
    categorical : array-like of shape (M,), bool, optional
        Which nodes are categorical (default: none).
    split_bins : array-like of shape (M,), int, optional
        Bin form of ordered thresholds (training on binned data: go left iff ``bin < split_bin``).
    node_scores : array-like of shape (M,), float, optional
        Split scores, used for feature importances.
    """

    kind = "tree"

    def __init__(
        self,
        features: Any,
        thresholds: Any,
        left: Any,
        right: Any,
        leaf_values: Any,
        *,
        subsets: Any = None,
        categorical: Any = None,
        split_bins: Any = None,
        node_scores: Any = None,
    ) -> None:
        self.node_features = np.asarray(features, dtype=np.int64).reshape(-1)
        m = self.node_features.size
        if m == 0:
            raise ValueError("features: a tree needs at least one internal node")
        self.node_thresholds = np.asarray(thresholds, dtype=np.float32).reshape(-1)
        self.left_children = np.asarray(left, dtype=np.int32).reshape(-1)
        self.right_children = np.asarray(right, dtype=np.int32).reshape(-1)
        self.leaf_values = np.asarray(leaf_values, dtype=np.float64).reshape(-1)
        self.node_subsets = (
            np.zeros((m, 8), dtype=np.uint32)
            if subsets is None
            else np.asarray(subsets, dtype=np.uint32).reshape(m, 8)
        )
        self.node_categorical = (
            np.zeros(m, dtype=np.bool_)
            if categorical is None
            else np.asarray(categorical, dtype=np.bool_).reshape(-1)
        )
        self.split_bins = None if split_bins is None else np.asarray(split_bins, np.int32)
        self.node_scores = (
            np.zeros(m) if node_scores is None else np.asarray(node_scores, dtype=np.float64)
        )
        for name, arr in (
            ("thresholds", self.node_thresholds),
            ("left", self.left_children),
            ("right", self.right_children),
            ("categorical", self.node_categorical),
        ):
            if arr.size != m:
                raise ValueError(f"{name}: expected {m} entries (one per node), got {arr.size}")
        if self.leaf_values.size != m + 1:
            raise ValueError(
                f"leaf_values: a full binary tree with {m} nodes has {m + 1} leaves, "
                f"got {self.leaf_values.size}"
            )
        kids = np.concatenate([self.left_children, self.right_children])
        if (kids >= m).any() or (-kids > m).any():
            raise ValueError("left/right: child codes out of range")
        self.features_ = np.unique(self.node_features)
        self._rows = np.searchsorted(self.features_, self.node_features).astype(np.int64)

    # ---- evaluation ---------------------------------------------------------------------
    def _apply(self, values: np.ndarray, rows: np.ndarray, binned: bool) -> np.ndarray:
        if binned and not self.node_categorical.all():
            if self.split_bins is None:
                raise ValueError("binned=True needs a tree trained on bins (split_bins unset)")
            thr = self.split_bins.astype(np.float32)
        else:
            thr = self.node_thresholds
        out = np.empty(values.shape[1], dtype=np.int64)
        with n_threads(None if values.shape[1] >= 200_000 else 1):
            _tree_apply(
                values, rows, thr, self.left_children, self.right_children,
                self.node_categorical, self.node_subsets, out,
            )
        return out

    def apply(self, values: Any, *, binned: bool = False) -> np.ndarray:
        """Leaf index (S,) of each example; ``values`` is (len(features_), S)."""
        values = _check_values(values, self.features_.size)
        return self._apply(values, self._rows, binned)

    def predict(self, values: Any) -> np.ndarray:
        """Output (S,) float64 for ``values`` of shape (len(features_), S)."""
        return self.leaf_values[self.apply(values)]

    def predict_matrix(self, X: Any) -> np.ndarray:
        """Output (S,) for a feature-major matrix ``X`` of shape (n_features, S)."""
        X = _check_matrix(X, self.features_)
        return self.leaf_values[self._apply(X, self.node_features, False)]

    # ---- properties ---------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return int(self.node_features.size)

    @property
    def depth(self) -> int:
        def rec(i: int) -> int:
            d = 1
            for c in (self.left_children[i], self.right_children[i]):
                if c > 0:
                    d = max(d, 1 + rec(int(c)))
            return d

        return rec(0)

    # ---- serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = {
            "type": self.kind,
            "features": self.node_features.tolist(),
            "thresholds": [float(t) for t in self.node_thresholds],
            "left": self.left_children.tolist(),
            "right": self.right_children.tolist(),
            "leaf_values": self.leaf_values.tolist(),
            "node_scores": self.node_scores.tolist(),
        }
        if self.node_categorical.any():
            d["categorical"] = self.node_categorical.tolist()
            d["subsets"] = self.node_subsets.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Tree:
        return Tree(
            d["features"], d["thresholds"], d["left"], d["right"], d["leaf_values"],
            subsets=d.get("subsets"), categorical=d.get("categorical"),
            node_scores=d.get("node_scores"),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_nodes={self.n_nodes}, features={self.features_.tolist()})"


class Stump(Tree):
    """One ordered split: ``left_value`` if ``value < threshold`` else ``right_value``."""

    kind = "stump"

    def __init__(
        self,
        feature: int,
        threshold: float,
        left_value: float,
        right_value: float,
        *,
        split_bin: int | None = None,
        score: float = 0.0,
    ) -> None:
        super().__init__(
            [feature], [threshold], [0], [-1], [left_value, right_value],
            split_bins=None if split_bin is None else [split_bin], node_scores=[score],
        )

    feature = property(lambda self: int(self.node_features[0]))
    threshold = property(lambda self: float(self.node_thresholds[0]))
    left_value = property(lambda self: float(self.leaf_values[0]))
    right_value = property(lambda self: float(self.leaf_values[1]))

    def to_dict(self) -> dict:
        return {
            "type": "stump", "feature": self.feature, "threshold": self.threshold,
            "left_value": self.left_value, "right_value": self.right_value,
            "score": float(self.node_scores[0]),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Stump:
        return Stump(d["feature"], d["threshold"], d["left_value"], d["right_value"],
                     score=d.get("score", 0.0))


class CategoricalStump(Tree):
    """One categorical split on codes 0..255: ``left_value`` iff bit ``code`` of ``subset``."""

    kind = "categorical_stump"

    def __init__(
        self, feature: int, subset: Any, left_value: float, right_value: float, *,
        score: float = 0.0,
    ) -> None:
        sub = np.asarray(subset, dtype=np.uint32).reshape(1, 8)
        super().__init__(
            [feature], [np.inf], [0], [-1], [left_value, right_value],
            subsets=sub, categorical=[True], node_scores=[score],
        )

    feature = property(lambda self: int(self.node_features[0]))
    subset = property(lambda self: self.node_subsets[0].copy())
    left_value = property(lambda self: float(self.leaf_values[0]))
    right_value = property(lambda self: float(self.leaf_values[1]))

    def to_dict(self) -> dict:
        return {
            "type": self.kind, "feature": self.feature,
            "subset": [int(x) for x in self.node_subsets[0]],
            "left_value": self.left_value, "right_value": self.right_value,
            "score": float(self.node_scores[0]),
        }

    @classmethod
    def from_dict(cls, d: dict) -> CategoricalStump:
        return CategoricalStump(d["feature"], d["subset"], d["left_value"], d["right_value"],
                                score=d.get("score", 0.0))


class HistogramLearner:
    """Real AdaBoost domain-partitioning learner on one feature.

    Part ``j`` = number of ``thresholds`` that are ``<= value`` (so ``value < thresholds[0]`` is
    part 0, consistent with the left-iff-less convention); output ``values[j]``.
    """

    kind = "histogram"

    def __init__(
        self, feature: int, thresholds: Any, values: Any, *, split_bins: Any = None,
        score: float = 0.0,
    ) -> None:
        self.feature = int(feature)
        self.thresholds = np.asarray(thresholds, dtype=np.float32).reshape(-1)
        self.values = np.asarray(values, dtype=np.float64).reshape(-1)
        if self.values.size != self.thresholds.size + 1:
            raise ValueError(
                f"values: expected {self.thresholds.size + 1} part values, got {self.values.size}"
            )
        if self.thresholds.size > 1 and not (np.diff(self.thresholds) > 0).all():
            raise ValueError("thresholds: must be strictly increasing")
        self.split_bins = None if split_bins is None else np.asarray(split_bins, np.int32)
        self.score = float(score)
        self.features_ = np.array([self.feature], dtype=np.int64)

    @property
    def leaf_values(self) -> np.ndarray:
        return self.values

    @leaf_values.setter
    def leaf_values(self, v: np.ndarray) -> None:
        self.values = np.asarray(v, dtype=np.float64)

    @property
    def node_scores(self) -> np.ndarray:
        return np.array([self.score])

    @property
    def node_features(self) -> np.ndarray:
        return self.features_

    def apply(self, values: Any, *, binned: bool = False) -> np.ndarray:
        values = _check_values(values, 1)
        if binned:
            if self.split_bins is None:
                raise ValueError("binned=True needs a learner trained on bins")
            return np.searchsorted(self.split_bins, values[0], side="right").astype(np.int64)
        return np.searchsorted(self.thresholds, values[0], side="right").astype(np.int64)

    def predict(self, values: Any) -> np.ndarray:
        return self.values[self.apply(values)]

    def predict_matrix(self, X: Any) -> np.ndarray:
        X = _check_matrix(X, self.features_)
        return self.values[np.searchsorted(self.thresholds, X[self.feature], side="right")]

    def to_tree(self) -> Tree:
        """The same function as a balanced binary :class:`Tree` (for OpenCV-style export)."""
        t = self.thresholds
        nodes: list[list] = []  # [threshold, left, right] with children as ('n', i) / ('l', j)

        def build(lo: int, hi: int):
            # parts lo..hi (inclusive) -> subtree
            if lo == hi:
                return ("l", lo)
            mid = (lo + hi + 1) // 2
            node = [float(t[mid - 1]), None, None]
            nodes.append(node)
            node[1] = build(lo, mid - 1)
            node[2] = build(mid, hi)
            return ("n", node)

        root = build(0, t.size)
        if root[0] == "l":
            raise ValueError("a histogram learner with one part is a constant, not a tree")
        # breadth-first renumbering in OpenCV's layout
        order, queue = [], [root[1]]
        while queue:
            nd = queue.pop(0)
            order.append(nd)
            queue.extend(c[1] for c in (nd[1], nd[2]) if c[0] == "n")
        index = {id(nd): i for i, nd in enumerate(order)}
        thr, left, right, leaves = [], [], [], []
        for nd in order:
            thr.append(nd[0])
            codes = []
            for c in (nd[1], nd[2]):
                if c[0] == "n":
                    codes.append(index[id(c[1])])
                else:
                    codes.append(-len(leaves))
                    leaves.append(self.values[c[1]])
            left.append(codes[0])
            right.append(codes[1])
        return Tree([self.feature] * len(order), thr, left, right, leaves)

    def to_dict(self) -> dict:
        return {
            "type": self.kind, "feature": self.feature,
            "thresholds": [float(x) for x in self.thresholds],
            "values": self.values.tolist(), "score": self.score,
        }

    @classmethod
    def from_dict(cls, d: dict) -> HistogramLearner:
        return HistogramLearner(d["feature"], d["thresholds"], d["values"], score=d.get("score", 0))

    def __repr__(self) -> str:
        return f"HistogramLearner(feature={self.feature}, n_parts={self.values.size})"


class MulticlassStump:
    """AdaBoost.MH stump: output ``alpha * votes * phi`` with ``phi = -1`` if ``value < threshold``
    else ``+1``; ``votes`` (K,) in {-1, +1}."""

    kind = "multiclass_stump"

    def __init__(
        self, feature: int, threshold: float, votes: Any, alpha: float, *,
        split_bin: int | None = None, score: float = 0.0,
    ) -> None:
        self.feature = int(feature)
        self.threshold = float(np.float32(threshold))
        self.votes = np.asarray(votes, dtype=np.float64).reshape(-1)
        self.alpha = float(alpha)
        self.split_bin = split_bin
        self.score = float(score)
        self.features_ = np.array([self.feature], dtype=np.int64)

    def phi(self, values: Any, *, binned: bool = False) -> np.ndarray:
        """+-1 side of each example (-1 = left); ``values`` is (1, S)."""
        values = _check_values(values, 1)
        t = np.float32(self.split_bin if binned else self.threshold)
        return np.where(values[0] < t, -1.0, 1.0)

    def predict(self, values: Any) -> np.ndarray:
        """Scores (S, K)."""
        return self.alpha * self.phi(values)[:, None] * self.votes[None, :]

    def predict_matrix(self, X: Any) -> np.ndarray:
        X = _check_matrix(X, self.features_)
        return self.predict(X[self.feature : self.feature + 1])

    def to_dict(self) -> dict:
        return {
            "type": self.kind, "feature": self.feature, "threshold": self.threshold,
            "votes": self.votes.tolist(), "alpha": self.alpha, "score": self.score,
        }

    @classmethod
    def from_dict(cls, d: dict) -> MulticlassStump:
        return MulticlassStump(d["feature"], d["threshold"], d["votes"], d["alpha"],
                               score=d.get("score", 0.0))


_KINDS = {
    "tree": Tree,
    "stump": Stump,
    "categorical_stump": CategoricalStump,
    "histogram": HistogramLearner,
    "multiclass_stump": MulticlassStump,
}


def learner_from_dict(d: dict):
    """Rebuild any weak learner from its ``to_dict()`` output."""
    if not isinstance(d, dict) or d.get("type") not in _KINDS:
        raise ValueError(f"d: expected a dict with 'type' in {sorted(_KINDS)}, got {d!r:.80}")
    return _KINDS[d["type"]].from_dict(d)
