"""Feature sources: the one bridge between feature families and boosting.

Boosting never asks *how* a feature value is computed. It sees a :class:`FeatureSource`:

``n_features``, ``n_samples``
    The size of the (possibly never materialised) feature-major matrix.
``values(feature_ids, sample_ids=None)``
    The ``(Q, S)`` block of those features on those examples (all of them by default): float32
    raw values, or uint8 bins for a binned matrix (``edges`` then maps bins back to raw
    thresholds).
``categorical``
    ``(n_features,)`` bool: features whose values are 8-bit codes (MB-LBP), split by 256-way
    subsets.
``partition``
    The :class:`Partition` of the features into families, which adaptive samplers draw from.

Implementations: :class:`MatrixSource` (a precomputed float32 matrix, or uint8 bins with their
edges, searched in place), :class:`PoolSource` (a feature pool evaluated lazily on prepared
windows, only for the features and examples asked for) and :class:`CallableSource`.
:func:`vjboost.boost.binning.precompute` turns a pool into a binned :class:`MatrixSource`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from vjboost._validation import check_array

__all__ = ["CallableSource", "FeatureSource", "MatrixSource", "Partition", "PoolSource"]


class Partition:
    """A partition of ``n_features`` feature ids into ``K`` non-empty families.

    Parameters
    ----------
    family_of : array-like of shape (n_features,), int
        Family index (0..K-1) of every feature; every family must have at least one feature.
    names : sequence of str, optional
        Family names (default ``"family0"``, ...).

    Examples
    --------
    >>> p = Partition.from_sizes([3, 2], ["haar", "lbp"])
    >>> p.members[1].tolist(), p.sizes.tolist()
    ([3, 4], [3, 2])
    """

    def __init__(self, family_of: Any, names: Sequence[str] | None = None) -> None:
        fam = check_array(family_of, "family_of", ndim=1)
        if fam.dtype.kind not in "iu":
            raise TypeError(f"family_of: expected integer family indices, got dtype {fam.dtype}")
        if fam.min() < 0:
            raise ValueError("family_of: family indices must be non-negative")
        k = int(fam.max()) + 1
        counts = np.bincount(fam, minlength=k)
        if (counts == 0).any():
            empty = np.flatnonzero(counts == 0).tolist()
            raise ValueError(f"family_of: families {empty} are empty; every family needs a feature")
        self.family_of = fam.astype(np.int64)
        order = np.argsort(self.family_of, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(counts)])
        self.members: list[np.ndarray] = [order[bounds[j] : bounds[j + 1]] for j in range(k)]
        if names is None:
            names = [f"family{j}" for j in range(k)]
        if len(names) != k:
            raise ValueError(f"names: expected {k} family names, got {len(names)}")
        self.names = [str(n) for n in names]

    @classmethod
    def from_sizes(cls, sizes: Sequence[int], names: Sequence[str] | None = None) -> Partition:
        """Consecutive families of the given sizes (features ``0..sizes[0]-1`` are family 0...).

        Parameters
        ----------
        sizes : sequence of int
            Features per family, each positive (at least one family).
        names : sequence of str, optional
            The families' names (default ``family0``, ``family1``, ...).

        Returns
        -------
        Partition
        """
        sizes = [int(s) for s in sizes]
        if not sizes:
            raise ValueError("sizes: at least one family is needed")
        if min(sizes) <= 0:
            raise ValueError(f"sizes: every family needs at least one feature, got {sizes}")
        return cls(np.repeat(np.arange(len(sizes)), sizes), names)

    @classmethod
    def single(cls, n_features: int) -> Partition:
        """The whole pool as one family."""
        if n_features <= 0:
            raise ValueError(f"n_features: must be positive, got {n_features}")
        return cls(np.zeros(n_features, dtype=np.int64), ["all"])

    @classmethod
    def of(cls, families: Any, n_features: int) -> Partition:
        """A partition from a Partition, a pool (its families), per-feature family indices
        ``(n_features,)``, family sizes, or ``None`` (one family).

        Parameters
        ----------
        families : Partition, FeaturePool, array-like of int or None
            The description of the families.
        n_features : int
            Features the partition must cover (checked).

        Returns
        -------
        Partition
        """
        if families is None:
            return cls.single(n_features)
        if isinstance(families, Partition):
            part = families
        elif hasattr(families, "family_sizes") and hasattr(families, "families"):
            part = cls.from_sizes(families.family_sizes(), [f.name for f in families.families])
        else:
            arr = np.asarray(families)
            if arr.ndim == 1 and arr.size == n_features:
                part = cls(arr)
            else:
                part = cls.from_sizes(list(arr.reshape(-1)))
        if part.n_features != n_features:
            raise ValueError(f"families: the partition covers {part.n_features} features, the "
                             f"data has {n_features}")
        return part

    @property
    def n_families(self) -> int:
        return len(self.members)

    @property
    def n_features(self) -> int:
        return int(self.family_of.size)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([m.size for m in self.members], dtype=np.int64)

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}={m.size}" for n, m in zip(self.names, self.members, strict=True))
        return f"Partition({parts})"


@runtime_checkable
class FeatureSource(Protocol):
    """Anything that computes the values of a block of features on a block of examples.

    Examples
    --------
    >>> src = MatrixSource(np.arange(6, dtype=np.float32).reshape(3, 2))
    >>> isinstance(src, FeatureSource), isinstance(np.zeros((3, 2)), FeatureSource)
    (True, False)
    >>> src.n_features, src.n_samples, src.values(np.array([2, 0])).tolist()
    (3, 2, [[4.0, 5.0], [0.0, 1.0]])
    """

    n_features: int
    n_samples: int
    categorical: np.ndarray
    partition: Partition

    def values(self, feature_ids: np.ndarray, sample_ids: np.ndarray | None = None
               ) -> np.ndarray:
        """Values ``(Q, S)`` (``sample_ids=None``: all examples): float32 raw values, or uint8
        bins/codes.

        Parameters
        ----------
        feature_ids : ndarray of shape (Q,), int64
            Global feature ids.
        sample_ids : ndarray of shape (S,), int64, optional
            Example ids, repeats allowed (default all examples, ``S = n_samples``).

        Returns
        -------
        ndarray of shape (Q, S)
            float32 raw values, or uint8 bins/codes.
        """
        ...


def _categorical(categorical: Any, n_features: int) -> np.ndarray:
    if categorical is None:
        return np.zeros(n_features, dtype=bool)
    cat = np.asarray(categorical)
    if cat.dtype != bool:
        idx = check_array(cat, "categorical", ndim=1, allow_empty=True)
        if idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= n_features):
            raise ValueError(f"categorical: expected a bool mask or feature indices in "
                             f"[0, {n_features})")
        cat = np.zeros(n_features, dtype=bool)
        cat[idx.astype(np.int64)] = True
    if cat.shape != (n_features,):
        raise ValueError(f"categorical: expected shape ({n_features},), got {cat.shape}")
    return cat.copy()


class _Source:
    def _init_meta(self, n_features: int, n_samples: int, categorical: Any, families: Any
                   ) -> None:
        if n_features <= 0 or n_samples <= 0:
            raise ValueError(f"n_features/n_samples: must be positive, got {n_features}, "
                             f"{n_samples}")
        self.n_features = int(n_features)
        self.n_samples = int(n_samples)
        self.categorical = _categorical(categorical, self.n_features)
        self._families = families
        self._partition: Partition | None = None
        if families is not None:
            self._partition = Partition.of(families, self.n_features)

    @property
    def partition(self) -> Partition:
        """The families (one family unless given); built on first use."""
        if self._partition is None:
            self._partition = Partition.of(self._families, self.n_features)
        return self._partition


class MatrixSource(_Source):
    """A precomputed feature-major matrix ``(n_features, n_samples)``: float32 or uint8 bins.

    Searches index the matrix in place (no copy of a block).

    Parameters
    ----------
    matrix : ndarray of shape (F, N), float32 or uint8
    edges : ndarray of shape (F, E), float32, optional
        Bin edges of a uint8 matrix (:func:`vjboost.boost.binning.compute_bin_edges`): learners
        then carry raw thresholds.
    categorical : bool mask (F,) or feature indices, optional
        Rows holding categorical codes (their bins are the codes themselves).
    families : Partition, sizes or per-feature family indices, optional
        Default: one family.
    feature_ids : array-like of shape (F,), optional
        The global id of each row (e.g. pool ids of a precomputed subset); default the row.

    Examples
    --------
    >>> src = MatrixSource(np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> src.values(np.array([1]), np.array([0, 2])).tolist()
    [[3.0, 5.0]]
    """

    def __init__(self, matrix: Any, *, edges: Any = None, categorical: Any = None,
                 families: Any = None, feature_ids: Any = None) -> None:
        m = np.asarray(matrix)
        if m.dtype not in (np.uint8, np.float32):
            m = check_array(m, "matrix", ndim=2, dtype=np.float32)
        m = check_array(m, "matrix", ndim=2)
        self.matrix = np.ascontiguousarray(m)
        if edges is not None:
            edges = check_array(edges, "edges", ndim=2, dtype=np.float32, finite=False)
            if self.matrix.dtype != np.uint8:
                raise ValueError("edges: only meaningful with a uint8 (binned) matrix")
            if edges.shape[0] != self.matrix.shape[0]:
                raise ValueError(f"edges: expected shape ({self.matrix.shape[0]}, E), got "
                                 f"{edges.shape}")
            if np.isnan(edges).any():
                raise ValueError("edges: contains NaN")
            edges = np.ascontiguousarray(edges)
        self.edges = edges
        self._init_meta(*self.matrix.shape, categorical, families)
        self._feature_ids = (None if feature_ids is None
                             else np.asarray(feature_ids, dtype=np.int64).reshape(-1))
        if self._feature_ids is not None and self._feature_ids.shape != (self.n_features,):
            raise ValueError(f"feature_ids: expected {self.n_features} ids (one per row)")

    @property
    def feature_ids(self) -> np.ndarray:
        """The global id of each row (the row itself unless given)."""
        if self._feature_ids is None:
            return np.arange(self.n_features, dtype=np.int64)
        return self._feature_ids

    @property
    def binned(self) -> bool:
        return self.matrix.dtype == np.uint8

    def values(self, feature_ids: np.ndarray, sample_ids: np.ndarray | None = None
               ) -> np.ndarray:
        """The matrix's rows ``feature_ids`` (a view-free copy) at the columns ``sample_ids``.

        Parameters
        ----------
        feature_ids, sample_ids
            As for :meth:`FeatureSource.values`.

        Returns
        -------
        ndarray of shape (Q, S)
            The matrix's dtype (float32 raw values or uint8 bins).
        """
        if sample_ids is None:
            return self.matrix[np.asarray(feature_ids)]
        return self.matrix[np.ix_(feature_ids, sample_ids)]


class CallableSource(_Source):
    """Values from a callable ``fn(feature_ids, sample_ids) -> (Q, S)`` array.

    Parameters
    ----------
    fn : callable
    n_features, n_samples : int
    categorical, families
        As in :class:`MatrixSource`.

    Examples
    --------
    >>> def fn(feature_ids, sample_ids):   # value = 10 * feature + example
    ...     return 10 * feature_ids[:, None] + sample_ids[None, :]
    >>> src = CallableSource(fn, n_features=3, n_samples=4, families=[2, 1])
    >>> src.values(np.array([0, 2]), np.array([1, 3])).tolist(), src.partition
    ([[1.0, 3.0], [21.0, 23.0]], Partition(family0=2, family1=1))
    """

    def __init__(self, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], *, n_features: int,
                 n_samples: int, categorical: Any = None, families: Any = None) -> None:
        if not callable(fn):
            raise TypeError("fn: expected a callable (feature_ids, sample_ids) -> values")
        self.fn = fn
        self._init_meta(n_features, n_samples, categorical, families)

    def values(self, feature_ids: np.ndarray, sample_ids: np.ndarray | None = None
               ) -> np.ndarray:
        """``fn(feature_ids, sample_ids)``, checked for its shape.

        Parameters
        ----------
        feature_ids, sample_ids
            As for :meth:`FeatureSource.values`.

        Returns
        -------
        ndarray of shape (Q, S)
            uint8 or float32 (other dtypes are converted to float32).
        """
        if sample_ids is None:
            sample_ids = np.arange(self.n_samples)
        out = np.asarray(self.fn(feature_ids, sample_ids))
        if out.shape != (feature_ids.size, sample_ids.size):
            raise ValueError(f"feature source returned shape {out.shape}, expected "
                             f"({feature_ids.size}, {sample_ids.size})")
        if out.dtype not in (np.uint8, np.float32):
            out = out.astype(np.float32)
        return out


class PoolSource(_Source):
    """Lazy values of a feature pool on windows, through the family kernels.

    Parameters
    ----------
    pool : FeaturePool (or any object with ``prepare``, ``evaluate``, ``n_features``)
    windows : raw windows (S, H, W) or what ``pool.prepare(windows)`` returned
    threads : int, optional

    The pool's families are the partition and its ``kinds()`` the categorical mask.

    Examples
    --------
    >>> from vjboost.features import FeaturePool, PixelFamily
    >>> windows = np.arange(18, dtype=np.uint8).reshape(3, 2, 3)   # 3 windows of 2 x 3 pixels
    >>> src = PoolSource(FeaturePool([PixelFamily((2, 3))]), windows)
    >>> src.n_features, src.n_samples, src.partition
    (6, 3, Partition(pixel=6))
    >>> src.values(np.array([0, 5]), np.array([2, 0, 2])).tolist()   # repeats allowed
    [[12.0, 0.0, 12.0], [17.0, 5.0, 17.0]]
    """

    def __init__(self, pool: Any, windows: Any, *, threads: int | None = None) -> None:
        if not hasattr(pool, "evaluate"):
            raise TypeError("pool: expected an object with evaluate(channels, feature_ids, "
                            "sample_ids)")
        self.pool = pool
        self.threads = threads
        self.channels = (windows if hasattr(windows, "n_samples")
                         else pool.prepare(windows, threads=threads))
        cat = np.asarray(pool.kinds(), dtype=bool) if hasattr(pool, "kinds") else None
        fams = pool if hasattr(pool, "family_sizes") else None
        self._init_meta(int(pool.n_features), int(self.channels.n_samples), cat, fams)

    def values(self, feature_ids: np.ndarray, sample_ids: np.ndarray | None = None
               ) -> np.ndarray:
        """The pool's values on the windows (each distinct window evaluated once).

        Parameters
        ----------
        feature_ids, sample_ids
            As for :meth:`FeatureSource.values`.

        Returns
        -------
        ndarray of shape (Q, S)
            float32 (codes of categorical features as whole numbers).
        """
        if sample_ids is None:
            return np.asarray(self.pool.evaluate(self.channels, feature_ids,
                                                 threads=self.threads), dtype=np.float32)
        ids = np.asarray(sample_ids)
        if ids.size < 2 or bool((ids[1:] > ids[:-1]).all()):
            # already distinct and ascending (the evaluator's distinct draws): no sort
            return np.asarray(self.pool.evaluate(self.channels, feature_ids, ids,
                                                 threads=self.threads), dtype=np.float32)
        # families evaluate each distinct window once; repeated draws are expanded afterwards
        uniq, inverse = np.unique(sample_ids, return_inverse=True)
        vals = np.asarray(self.pool.evaluate(self.channels, feature_ids, uniq,
                                             threads=self.threads), dtype=np.float32)
        return vals[:, inverse] if uniq.size != sample_ids.size else vals
