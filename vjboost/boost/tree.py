"""The one decision-tree class of vjboost: weak learners of boosting and trees of cascades.

A :class:`Tree` is a full binary tree in OpenCV's breadth-first layout (the cascade format spec,
section 2.1), so that boosting output, vjboost's model files and OpenCV XML are copies of each
other:

* internal nodes ``0 .. n - 1`` in breadth-first order, root ``0``;
* child codes ``left[i]`` / ``right[i]``: ``c > 0`` is internal node ``c``, ``c <= 0`` is leaf
  ``-c``; leaves are numbered as met breadth-first, left before right (``n + 1`` leaves);
* an *ordered* node sends a value left iff ``value < threshold`` (float32 comparison);
* a *categorical* node (codes ``0 .. 255``, e.g. MB-LBP) sends code ``c`` left iff bit ``c`` of
  its 256-bit subset is set: ``(subsets[i, c >> 5] >> (c & 31)) & 1``;
* ``leaves`` hold the output with the boosting coefficient folded in, so a strong classifier's
  score is the plain sum of its trees' outputs. ``leaves`` is ``(n + 1,)`` for binary boosting
  and ``(n + 1, K)`` for K-class learners (AdaBoost.MH, multi-class LogitBoost).

A stump is a one-node tree with ``left = [0]``, ``right = [-1]`` (leaf 0 left, leaf 1 right).

Feature ids in ``feature`` are whatever index space the owner uses: global ids of a feature pool
or rows of a feature matrix during boosting, positions in a cascade's ``feature_ids`` inside a
:class:`~vjboost.cascade.model.CascadeModel` (:meth:`Tree.remap` converts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numba import njit, prange

from vjboost._errors import InputError
from vjboost._threads import serial_if
from vjboost._validation import check_array

__all__ = ["Tree", "TreeError", "subset_from_codes"]

#: below this many examples ``apply`` runs on one thread (thread start-up costs more)
_PARALLEL_MIN = 200_000


class TreeError(InputError):
    """A tree's arrays do not form a valid tree (layout, lengths, codes, values)."""


@njit(cache=True, nogil=True, parallel=True)
def _apply_kernel(values, rows, thr, left, right, is_cat, subsets, out):  # pragma: no cover
    for i in prange(values.shape[1]):
        idx = 0
        while True:
            v = values[rows[idx], i]
            if is_cat[idx]:
                c = np.intp(v)
                go_left = (subsets[idx, c >> 5] >> np.uint32(c & 31)) & np.uint32(1)
            else:
                go_left = v < thr[idx]
            idx = left[idx] if go_left else right[idx]
            if idx <= 0:
                break
        out[i] = -idx


def subset_from_codes(codes: Sequence[int] | np.ndarray) -> np.ndarray:
    """256-bit category subset (8 uint32 words) with the bits of ``codes`` set.

    Parameters
    ----------
    codes : sequence of int
        Categories in ``0 .. 255`` that go left.

    Returns
    -------
    ndarray of uint32, shape (8,)

    Examples
    --------
    >>> subset_from_codes([0, 33]).tolist()
    [1, 2, 0, 0, 0, 0, 0, 0]
    """
    words = np.zeros(8, dtype=np.uint32)
    for c in np.asarray(codes, dtype=np.int64).reshape(-1):
        if not 0 <= c < 256:
            raise ValueError(f"codes: category {int(c)} outside 0..255")
        words[c >> 5] |= np.uint32(1 << (int(c) & 31))
    return words


#: (min, max) of the integer dtypes trees store (np.iinfo is slow next to a small array's checks)
_INT_RANGE = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
              for t in (np.int32, np.int64)}


def _int_array(v: Any, name: str, where: str, dtype: Any) -> np.ndarray:
    a = np.asarray(v)
    if a.dtype.kind == "b" or (a.dtype.kind not in "iu" and a.size):
        if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
            a = a.astype(np.int64)
        else:
            raise TreeError(f"{where}: '{name}' must hold integers, got {a.dtype}")
    a = a.reshape(-1)
    lo, hi = _INT_RANGE[np.dtype(dtype)]
    # values are checked only when the dtype could hold some out of range (a list of Python
    # ints becomes int64: nothing to check for an int64 field)
    if a.size and not np.can_cast(a.dtype, dtype) and (a.min() < lo or a.max() > hi):
        raise TreeError(f"{where}: '{name}' value outside the {np.dtype(dtype).name} range")
    return np.array(a, dtype=dtype)  # a copy the tree owns, C-contiguous


class Tree:
    """A full binary decision tree in OpenCV's breadth-first layout.

    Parameters
    ----------
    feature : array-like of int, shape (n,)
        Feature tested by each internal node.
    threshold : array-like of float, shape (n,)
        Ordered nodes go left iff ``value < threshold`` (stored as float32). Ignored (0) for
        categorical nodes.
    left, right : array-like of int, shape (n,)
        Child codes: ``> 0`` internal node, ``<= 0`` leaf ``-code``.
    leaves : array-like of float, shape (n + 1,) or (n + 1, K)
        Output of each leaf (boosting coefficient included).
    categorical : array-like of bool, shape (n,), optional
        Which nodes split categorical codes (default: none, or those with a subset when only
        ``subsets`` is given).
    subsets : array-like of uint32, shape (n, 8), optional
        Category subsets of categorical nodes (rows of ordered nodes are ignored and stored as
        zeros). Signed 32-bit words (as OpenCV writes them) are accepted.
    split_bins : array-like of int, shape (n,), optional
        Training only: ordered splits in bin form (go left iff ``bin < split_bin``) for trees
        grown on uint8-binned values.
    node_scores : array-like of float, shape (n,), optional
        Split gains, for feature importances.

    Attributes
    ----------
    features_ : ndarray of int64
        Sorted unique feature ids the tree reads.

    Examples
    --------
    >>> import numpy as np
    >>> t = Tree.stump(3, threshold=0.5, left_value=-1.0, right_value=2.0)
    >>> X = np.array([[0.0, 1.0]] * 4, dtype=np.float32)   # 4 features x 2 examples
    >>> t.predict_matrix(X).tolist()
    [-1.0, 2.0]
    """

    def __init__(
        self,
        feature: Any,
        *,
        threshold: Any,
        left: Any,
        right: Any,
        leaves: Any,
        categorical: Any = None,
        subsets: Any = None,
        split_bins: Any = None,
        node_scores: Any = None,
    ) -> None:
        where = "tree"
        self.feature = _int_array(feature, "feature", where, np.int64)
        n = self.feature.size
        self.left = _int_array(left, "left", where, np.int32)
        self.right = _int_array(right, "right", where, np.int32)
        thr = np.asarray(threshold, dtype=np.float64).reshape(-1)
        self.threshold = np.ascontiguousarray(thr.astype(np.float32))
        leaves_arr = np.asarray(leaves, dtype=np.float64)
        if leaves_arr.ndim not in (1, 2):
            raise TreeError(f"{where}: 'leaves' must be 1-D or 2-D, got shape {leaves_arr.shape}")
        self.leaves = np.ascontiguousarray(leaves_arr)
        if subsets is not None:
            sub = np.asarray(subsets)
            if sub.dtype.kind == "i":
                sub = sub.astype(np.int64) & 0xFFFFFFFF  # signed words as OpenCV writes them
            elif sub.dtype.kind not in "u":
                sub = _int_array(sub, "subsets", where, np.int64) & 0xFFFFFFFF
            if sub.size != 8 * n:
                raise TreeError(f"{where}: 'subsets' needs 8 words per node ({8 * n}), got "
                                f"{sub.size}")
            self.subsets = np.ascontiguousarray(sub.reshape(n, 8).astype(np.uint32))
        else:
            self.subsets = np.zeros((n, 8), dtype=np.uint32)
        if categorical is None:
            cat = (np.ones(n, dtype=bool) if subsets is not None else np.zeros(n, dtype=bool))
        else:
            cat = np.asarray(categorical, dtype=bool).reshape(-1)
        self.categorical = np.ascontiguousarray(cat)
        if self.categorical.size == n and (subsets is not None or categorical is not None):
            self.threshold[self.categorical] = 0.0
            self.subsets[~self.categorical] = 0
        self.split_bins = (None if split_bins is None
                           else _int_array(split_bins, "split_bins", where, np.int32))
        self.node_scores = (np.zeros(n) if node_scores is None
                            else np.asarray(node_scores, dtype=np.float64).reshape(-1))
        self.validate()
        self.features_ = np.unique(self.feature)
        self._rows = np.searchsorted(self.features_, self.feature).astype(np.int64)

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def stump(cls, feature: int, *, threshold: float, left_value: Any, right_value: Any,
              split_bin: int | None = None, score: float = 0.0) -> Tree:
        """Ordered stump: ``left_value`` if ``value < threshold`` else ``right_value``.

        Values may be scalars or length-K vectors (K-class learners).

        Parameters
        ----------
        feature : int
            Global feature id.
        threshold : float
            Raw-value threshold (stored as float32).
        left_value, right_value : float or array-like of shape (K,)
            The two leaves.
        split_bin : int, optional
            The threshold as a bin, for uint8-binned values.
        score : float, default 0.0
            The split's criterion value (``node_scores``).

        Returns
        -------
        Tree
            One node, two leaves.

        Examples
        --------
        >>> t = Tree.stump(0, threshold=0.5, left_value=-1.0, right_value=1.0)
        >>> t.predict_matrix(np.array([[0.0, 0.5, 2.0]], dtype=np.float32)).tolist()
        [-1.0, 1.0, 1.0]
        """
        return cls([feature], threshold=[threshold], left=[0], right=[-1],
                   leaves=np.stack([np.asarray(left_value, np.float64),
                                    np.asarray(right_value, np.float64)]),
                   split_bins=None if split_bin is None else [split_bin], node_scores=[score])

    @classmethod
    def categorical_stump(cls, feature: int, *, subset: Any, left_value: Any, right_value: Any,
                          score: float = 0.0) -> Tree:
        """Categorical stump: ``left_value`` iff bit ``code`` of ``subset`` (8 words) is set.

        Parameters
        ----------
        feature : int
            Global feature id (its values are codes 0..255).
        subset : array-like of 8 uint32
            Bit ``c & 31`` of word ``c >> 5`` set: code ``c`` goes left.
        left_value, right_value : float or array-like of shape (K,)
            The two leaves.
        score : float, default 0.0
            The split's criterion value (``node_scores``).

        Returns
        -------
        Tree
        """
        return cls([feature], threshold=[0.0], left=[0], right=[-1],
                   leaves=np.stack([np.asarray(left_value, np.float64),
                                    np.asarray(right_value, np.float64)]),
                   categorical=[True], subsets=np.asarray(subset).reshape(1, 8),
                   node_scores=[score])

    def remap(self, mapping: Mapping[int, int] | np.ndarray) -> Tree:
        """The same tree with feature ids translated by ``mapping`` (dict or lookup array)."""
        if isinstance(mapping, Mapping):
            feat = [int(mapping[int(f)]) for f in self.feature]
        else:
            feat = np.asarray(mapping)[self.feature]
        return Tree(feat, threshold=self.threshold, left=self.left, right=self.right,
                    leaves=self.leaves, categorical=self.categorical, subsets=self.subsets,
                    split_bins=self.split_bins, node_scores=self.node_scores)

    def with_leaves(self, leaves: Any) -> Tree:
        """A copy with other leaf values (same structure)."""
        return Tree(self.feature, threshold=self.threshold, left=self.left, right=self.right,
                    leaves=leaves, categorical=self.categorical, subsets=self.subsets,
                    split_bins=self.split_bins, node_scores=self.node_scores)

    # -- properties -----------------------------------------------------------------------------

    @property
    def n_nodes(self) -> int:
        """Internal nodes."""
        return int(self.feature.size)

    @property
    def n_outputs(self) -> int:
        """1 for scalar leaves, K for ``(n + 1, K)`` leaves."""
        return 1 if self.leaves.ndim == 1 else int(self.leaves.shape[1])

    @property
    def is_stump(self) -> bool:
        return self.n_nodes == 1

    @property
    def depth(self) -> int:
        """Longest root-to-leaf path counted in internal nodes (a stump has depth 1)."""
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        depth[0] = 1
        for i in range(self.n_nodes):  # breadth-first: parents come before children
            for c in (self.left[i], self.right[i]):
                if c > 0:
                    depth[c] = depth[i] + 1
        return int(depth.max())

    # -- validation -----------------------------------------------------------------------------

    def validate(self, where: str = "tree") -> None:
        """Raise :class:`TreeError` unless the arrays form one full binary tree.

        Checks equal lengths, that every node and leaf is reached exactly once, non-negative
        feature ids, finite thresholds and leaf values.
        """
        n = self.n_nodes
        if n < 1:
            raise TreeError(f"{where}: a tree needs at least one internal node")
        for name in ("left", "right", "threshold", "categorical", "node_scores"):
            size = getattr(self, name).shape[0]
            if size != n:
                raise TreeError(f"{where}: '{name}' has {size} entries, expected {n} (one per "
                                "internal node)")
        if self.split_bins is not None and self.split_bins.size != n:
            raise TreeError(f"{where}: 'split_bins' has {self.split_bins.size} entries, "
                            f"expected {n}")
        if self.leaves.shape[0] != n + 1:
            raise TreeError(f"{where}: {n} internal node(s) need {n + 1} leaf values, got "
                            f"{self.leaves.shape[0]} (trees must be full binary trees)")
        # in Python: trees are small, and NumPy's per-call cost dominates for them
        left, right = self.left.tolist(), self.right.tolist()
        codes = left + right
        if (sorted(c for c in codes if c > 0) != list(range(1, n))
                or sorted(-c for c in codes if c <= 0) != list(range(n + 1))):
            raise TreeError(f"{where}: child codes {left} / {right} do not form a tree (every "
                            "node and leaf must be reached once)")
        if any(0 < c <= i for kids in (left, right) for i, c in enumerate(kids)):
            raise TreeError(f"{where}: child codes must point forward (breadth-first layout)")
        if self.feature.min() < 0:
            raise TreeError(f"{where}: negative feature id {int(self.feature.min())}")
        if not np.isfinite(self.threshold).all():
            raise TreeError(f"{where}: non-finite threshold")
        if not np.isfinite(self.leaves).all():
            raise TreeError(f"{where}: non-finite leaf value")

    # -- evaluation -----------------------------------------------------------------------------

    def _apply(self, values: np.ndarray, rows: np.ndarray, binned: bool) -> np.ndarray:
        if binned and not self.categorical.all():
            if self.split_bins is None:
                raise ValueError("binned=True needs a tree grown on bins (split_bins unset)")
            thr = self.split_bins.astype(np.float32)
        else:
            thr = self.threshold
        out = np.empty(values.shape[1], dtype=np.int64)
        with serial_if(values.shape[1] < _PARALLEL_MIN):
            _apply_kernel(values, rows, thr, self.left, self.right, self.categorical,
                          self.subsets, out)
        return out

    @staticmethod
    def _as_values(values: Any, n_rows: int | None, name: str) -> np.ndarray:
        arr = np.asarray(values)
        if arr.dtype != np.uint8:
            arr = check_array(arr, name, ndim=2, dtype=np.float32, allow_empty=True)
        elif arr.ndim != 2:
            raise ValueError(f"{name}: expected a 2-D array, got shape {arr.shape}")
        if n_rows is not None and arr.shape[0] != n_rows:
            raise ValueError(f"{name}: expected {n_rows} row(s) (one per feature in features_), "
                             f"got {arr.shape[0]}")
        return np.ascontiguousarray(arr)

    def apply(self, values: Any, *, binned: bool = False) -> np.ndarray:
        """Leaf index of every example.

        Parameters
        ----------
        values : ndarray, shape (len(features_), S)
            Values of ``features_`` (in that order): float32 raw values, or uint8 bins with
            ``binned=True`` (ordered nodes then compare with ``split_bins``). Categorical rows
            hold codes.
        binned : bool, default=False

        Returns
        -------
        ndarray of int64, shape (S,)
        """
        vals = self._as_values(values, self.features_.size, "values")
        return self._apply(vals, self._rows, binned)

    def apply_matrix(self, X: Any, *, binned: bool = False) -> np.ndarray:
        """Leaf index of every example of a feature-major matrix ``X`` ``(n_features, S)``.

        Parameters
        ----------
        X : ndarray of shape (n_features, S)
            Row ``f`` holds global feature ``f``: float32 raw values, or uint8 bins with
            ``binned=True``; it needs more rows than the largest feature id the tree reads.
        binned : bool, default False
            Ordered nodes compare bins with ``split_bins``.

        Returns
        -------
        ndarray of int64, shape (S,)
        """
        X = self._as_values(X, None, "X")
        if self.feature.max() >= X.shape[0]:
            raise ValueError(f"X: the tree reads feature {int(self.feature.max())} but X has "
                             f"{X.shape[0]} rows")
        return self._apply(X, self.feature, binned)

    def predict(self, values: Any) -> np.ndarray:
        """Output of every example, shape (S,) or (S, K); ``values`` as in :meth:`apply`."""
        return self.leaves[self.apply(values)]

    def predict_matrix(self, X: Any) -> np.ndarray:
        """Output of every example of a feature-major matrix ``X`` ``(n_features, S)``."""
        return self.leaves[self.apply_matrix(X)]

    # -- persistence ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (subsets and categorical flags only when a node is categorical)."""
        d: dict[str, Any] = {
            "feature": self.feature.tolist(),
            "threshold": [float(t) for t in self.threshold],
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "leaves": self.leaves.tolist(),
        }
        if self.categorical.any():
            d["categorical"] = self.categorical.tolist()
            d["subsets"] = self.subsets.astype(np.int64).tolist()
        if self.node_scores.any():
            d["node_scores"] = self.node_scores.tolist()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "tree") -> Tree:
        """Inverse of :meth:`to_dict`; raises :class:`TreeError` naming ``where``.

        Parameters
        ----------
        d : mapping
            With ``feature``, ``threshold``, ``left``, ``right``, ``leaves`` and optionally
            ``categorical``, ``subsets``, ``node_scores``.
        where : str, default "tree"
            Names the tree in errors (e.g. ``"stage 3, tree 7"``).

        Returns
        -------
        Tree
        """
        if not isinstance(d, Mapping):
            raise TreeError(f"{where}: expected a mapping, got {type(d).__name__}")
        missing = [k for k in ("feature", "threshold", "left", "right", "leaves") if k not in d]
        if missing:
            raise TreeError(f"{where}: missing key(s) {missing}")
        try:
            return cls(d["feature"], threshold=d["threshold"], left=d["left"], right=d["right"],
                       leaves=d["leaves"], categorical=d.get("categorical"),
                       subsets=d.get("subsets"), node_scores=d.get("node_scores"))
        except TreeError as exc:
            raise TreeError(f"{where}: {exc}".replace(": tree:", ":")) from None
        except (TypeError, ValueError) as exc:
            raise TreeError(f"{where}: {exc}") from None

    # -- comparison -----------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return all(np.array_equal(getattr(self, k), getattr(other, k))
                   for k in ("feature", "threshold", "left", "right", "leaves", "categorical",
                             "subsets"))

    __hash__ = None  # mutable arrays

    def __repr__(self) -> str:
        kind = "stump" if self.is_stump else f"tree of {self.n_nodes} nodes"
        return f"Tree({kind}, features={self.features_.tolist()})"
