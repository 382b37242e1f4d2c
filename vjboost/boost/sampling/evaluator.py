"""Lazy edge evaluation of (feature ids x example ids) blocks, with exact cost accounting.

A sampler never sees feature values. It asks an :class:`EdgeEvaluator` for the *edges* of the best
weak learner (stump) of each feature of a block ``(feature_ids, sample_ids)``; the evaluator gets
the values of the block from a :class:`FeatureSource` (a precomputed matrix, a callable, or a
feature pool evaluated lazily through the family kernels), runs the weak-learner search of
:mod:`vjboost.boost.stumps` on it and adds ``Q * S`` to its cost counter: the *cost* of a sampler
is the number of feature evaluations it requested.

Two ways of using examples
--------------------------
``weighting-by-sampling`` (``weighted=False``, the default)
    ``sample_ids`` were drawn i.i.d. from the boosting weights (with repetitions, see
    :func:`vjboost.boost.sampling.examples.weighted_sample`); every draw has the same weight and
    the edge is the plain mean of ``y h`` over the draws, whose noise variance is about ``1 / S``.
``weighted`` (``weighted=True``)
    ``sample_ids`` is a plain subset (e.g. uniform); the boosting weights restricted to it,
    renormalised, are used.

Edges of the losses
-------------------
Every criterion is mapped to an edge ``gamma`` in [0, 1] such that the loss reduction factor of
the exponential losses is ``sqrt(1 - gamma^2)`` (so the bandit reward ``1 - sqrt(1 - gamma^2)`` is
meaningful for every loss), with ``W`` the total weight of the used examples:

* discrete AdaBoost / AdaBoost.MH: ``gamma = score / W`` (the weighted correlation ``sum w y h``);
* Real AdaBoost: ``score = W - Z``; ``gamma = sqrt(1 - (Z / W)^2)``;
* regression (Gentle AdaBoost, LogitBoost): ``gamma = sqrt(score / sum w r^2)``, the correlation
  between the response and the fitted stump.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from vjboost._validation import check_array
from vjboost.boost.stumps import (
    MulticlassStumpSearch,
    StumpSearch,
    search_categorical,
    search_multiclass_stumps,
    search_stumps,
)

__all__ = [
    "BlockEdges",
    "CallableSource",
    "EdgeEvaluator",
    "FeatureSource",
    "MatrixSource",
    "Partition",
    "PoolSource",
    "RoundProblem",
    "WeakLearner",
]

_PARALLEL_MIN = 1 << 20


# --------------------------------------------------------------------------------------------
# partition of the pool into families


class Partition:
    """A partition of ``n_features`` feature ids into ``K`` non-empty families.

    Parameters
    ----------
    family_of : array-like of shape (n_features,), int
        Family index (0..K-1) of every feature; every family must have at least one feature.
    names : sequence of str, optional
        Family names (default ``"family0"``, ...).
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
        """Consecutive families of the given sizes (features ``0..sizes[0]-1`` are family 0...)."""
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


# --------------------------------------------------------------------------------------------
# feature sources


@runtime_checkable
class FeatureSource(Protocol):
    """Anything that computes the values of a block of features on a block of examples."""

    n_features: int
    n_samples: int

    def values(self, feature_ids: np.ndarray, sample_ids: np.ndarray) -> np.ndarray:
        """Values ``(Q, S)``: float32 raw values, or uint8 bins/codes."""
        ...


class MatrixSource:
    """A precomputed feature-major matrix ``(n_features, n_samples)`` (float32 or uint8 bins).

    Searches index the matrix in place (no copy of the block).

    Parameters
    ----------
    matrix : ndarray of shape (F, N), float32 or uint8
    edges : ndarray of shape (F, E), float32, optional
        Bin edges of a uint8 matrix (thresholds are then reported as raw values).
    """

    def __init__(self, matrix: np.ndarray, edges: np.ndarray | None = None) -> None:
        m = np.asarray(matrix)
        if m.dtype not in (np.uint8, np.float32):
            m = check_array(m, "matrix", ndim=2, dtype=np.float32)
        m = check_array(m, "matrix", ndim=2)
        self.matrix = np.ascontiguousarray(m)
        if edges is not None:
            edges = np.asarray(edges, dtype=np.float32)
            if self.matrix.dtype != np.uint8:
                raise ValueError("edges: only meaningful with a uint8 (binned) matrix")
            if edges.ndim != 2 or edges.shape[0] != self.matrix.shape[0]:
                raise ValueError(
                    f"edges: expected shape ({self.matrix.shape[0]}, E), got {edges.shape}"
                )
        self.edges = edges
        self.n_features, self.n_samples = self.matrix.shape

    def values(self, feature_ids: np.ndarray, sample_ids: np.ndarray) -> np.ndarray:
        return self.matrix[np.ix_(feature_ids, sample_ids)]


class CallableSource:
    """Values from a callable ``fn(feature_ids, sample_ids) -> (Q, S)`` array."""

    def __init__(
        self, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], n_features: int, n_samples: int
    ) -> None:
        if not callable(fn):
            raise TypeError("fn: expected a callable (feature_ids, sample_ids) -> values")
        if n_features <= 0 or n_samples <= 0:
            raise ValueError(
                f"n_features/n_samples: must be positive, got {n_features}, {n_samples}"
            )
        self.fn = fn
        self.n_features = int(n_features)
        self.n_samples = int(n_samples)

    def values(self, feature_ids: np.ndarray, sample_ids: np.ndarray) -> np.ndarray:
        out = np.asarray(self.fn(feature_ids, sample_ids))
        if out.shape != (feature_ids.size, sample_ids.size):
            raise ValueError(
                f"feature source returned shape {out.shape}, expected "
                f"({feature_ids.size}, {sample_ids.size})"
            )
        if out.dtype not in (np.uint8, np.float32):
            out = out.astype(np.float32)
        return out


class PoolSource:
    """Lazy values of a feature pool on prepared windows, through the family kernels.

    Parameters
    ----------
    pool : object
        Anything with ``evaluate(channels, feature_ids, sample_ids) -> (Q, S) float32`` and
        ``n_features`` (e.g. :class:`vjboost.features.pool.FeaturePool`).
    channels : object
        What ``pool.prepare(windows)`` returned.
    n_samples : int
        Number of prepared windows.
    """

    def __init__(self, pool: Any, channels: Any, n_samples: int) -> None:
        if not hasattr(pool, "evaluate"):
            raise TypeError(
                "pool: expected an object with evaluate(channels, feature_ids, sample_ids)"
            )
        self.pool = pool
        self.channels = channels
        self.n_features = int(pool.n_features)
        self.n_samples = int(n_samples)

    def values(self, feature_ids: np.ndarray, sample_ids: np.ndarray) -> np.ndarray:
        # Families evaluate each distinct window once; repeated draws are expanded afterwards.
        uniq, inverse = np.unique(sample_ids, return_inverse=True)
        vals = np.asarray(self.pool.evaluate(self.channels, feature_ids, uniq), dtype=np.float32)
        return vals[:, inverse] if uniq.size != sample_ids.size else vals


# --------------------------------------------------------------------------------------------
# the round problem given by the loss


@dataclass
class RoundProblem:
    """What a loss exposes to a sampler at one boosting round.

    Attributes
    ----------
    weights : ndarray of shape (N,) or (N, K), float64
        Current boosting weights (normalised internally).
    response : ndarray of shape (N,) or (N, K), float64
        Labels in {-1, +1} / working response (binary) or ``Y_ik`` in {-1, +1} (AdaBoost.MH).
    criterion : {"discrete", "real", "regression", "multiclass"}
        The weak-learner criterion (see :mod:`vjboost.boost.stumps`).
    """

    weights: np.ndarray
    response: np.ndarray
    criterion: str

    def __post_init__(self) -> None:
        if self.criterion not in ("discrete", "real", "regression", "multiclass"):
            raise ValueError(
                "criterion: expected 'discrete', 'real', 'regression' or 'multiclass', "
                f"got {self.criterion!r}"
            )
        w = check_array(self.weights, "weights", ndim=(1, 2), dtype=np.float64)
        r = check_array(self.response, "response", ndim=(1, 2), dtype=np.float64)
        if w.shape != r.shape:
            raise ValueError(f"weights {w.shape} and response {r.shape} must have the same shape")
        if (self.criterion == "multiclass") != (w.ndim == 2):
            raise ValueError("the 'multiclass' criterion needs (N, K) weights; others (N,)")
        if (w < 0).any():
            raise ValueError("weights: negative weights are not allowed")
        total = w.sum()
        if not total > 0:
            raise ValueError("weights: all weights are zero")
        self.weights = w / total
        self.response = r

    @property
    def n_samples(self) -> int:
        return int(self.weights.shape[0])

    @property
    def example_weights(self) -> np.ndarray:
        """Per-example weight ``(N,)`` (summed over classes for AdaBoost.MH), sums to one."""
        w = self.weights
        return w if w.ndim == 1 else w.sum(axis=1)


# --------------------------------------------------------------------------------------------
# results


@dataclass
class WeakLearner:
    """A stump found on a block, before its leaves are refitted on all examples.

    ``feature`` is a global feature id; an example goes LEFT iff ``value < threshold`` (or, on a
    binned matrix, ``bin < split_bin``; categorical: bit ``code`` of ``subset`` set).
    ``votes`` (AdaBoost.MH) is the vote vector in {-1, +1}^K; ``left_value``/``right_value`` are
    the leaves estimated on the block.
    """

    feature: int
    threshold: float
    edge: float
    split_bin: int | None = None
    subset: np.ndarray | None = None
    votes: np.ndarray | None = None
    left_value: float = -1.0
    right_value: float = 1.0


@dataclass
class BlockEdges:
    """Edges of the best stump of each feature of a block."""

    feature_ids: np.ndarray
    sample_ids: np.ndarray
    edges: np.ndarray
    search: Any = field(repr=False)

    def best(self) -> int:
        """Position of the feature with the largest edge (``-1`` if none can split)."""
        if self.edges.size == 0 or not np.isfinite(self.edges).any():
            return -1
        return int(np.nanargmax(np.where(np.isfinite(self.edges), self.edges, -np.inf)))

    def learner(self, pos: int) -> WeakLearner:
        """The stump of the feature at position ``pos`` of the block."""
        s = self.search
        split = None if getattr(s, "split_bin", None) is None else int(s.split_bin[pos])
        if isinstance(s, MulticlassStumpSearch):
            return WeakLearner(
                int(self.feature_ids[pos]), float(s.threshold[pos]), float(self.edges[pos]),
                split_bin=split, votes=s.votes[pos].copy(),
            )
        subset = None if s.subset is None else s.subset[pos].copy()
        return WeakLearner(
            int(self.feature_ids[pos]), float(s.threshold[pos]), float(self.edges[pos]),
            split_bin=split, subset=subset,
            left_value=float(s.left_value[pos]), right_value=float(s.right_value[pos]),
        )


# --------------------------------------------------------------------------------------------
# evaluator


class EdgeEvaluator:
    """Computes edges of blocks of a partitioned pool under the current boosting weights.

    Parameters
    ----------
    source : FeatureSource
        Where feature values come from.
    partition : Partition, optional
        Families of the pool (default: one family).
    categorical : array-like of bool, shape (n_features,), optional
        Features whose values are 8-bit codes (MB-LBP) searched with a 256-way categorical split
        (binary criteria only; AdaBoost.MH treats codes as ordered values).
    threads : int, optional
        Threads of the search kernels.

    Attributes
    ----------
    cost : int
        Number of feature evaluations requested so far (``sum Q * S`` over blocks).
    n_blocks : int
        Number of blocks evaluated.
    """

    def __init__(
        self,
        source: FeatureSource,
        partition: Partition | None = None,
        *,
        categorical: Any = None,
        threads: int | None = None,
    ) -> None:
        if not isinstance(source, FeatureSource):
            raise TypeError("source: expected a FeatureSource (n_features, n_samples, values())")
        self.source = source
        self.partition = Partition.single(source.n_features) if partition is None else partition
        if self.partition.n_features != source.n_features:
            raise ValueError(
                f"partition: covers {self.partition.n_features} features but the source has "
                f"{source.n_features}"
            )
        if categorical is None:
            self.categorical = np.zeros(source.n_features, dtype=bool)
        else:
            self.categorical = np.asarray(categorical, dtype=bool)
            if self.categorical.shape != (source.n_features,):
                raise ValueError(f"categorical: expected shape ({source.n_features},)")
        self.threads = threads
        self.cost = 0
        self.n_blocks = 0
        self.problem: RoundProblem | None = None

    # -- problem ---------------------------------------------------------------------------

    @property
    def n_features(self) -> int:
        return self.source.n_features

    @property
    def n_samples(self) -> int:
        return self.source.n_samples

    def set_problem(self, problem: RoundProblem) -> None:
        """Install the weights/response of the current round."""
        if problem.n_samples != self.n_samples:
            raise ValueError(
                f"problem: has {problem.n_samples} examples but the source has {self.n_samples}"
            )
        self.problem = problem
        w, r = problem.weights, problem.response
        if problem.criterion == "multiclass":
            wi = w.sum(axis=1)
            safe = np.where(wi > 0, wi, 1.0)
            self._wy_draw = np.ascontiguousarray(w / safe[:, None] * r)  # per-draw weight 1
            self._wy = np.ascontiguousarray(w * r)
            self._ex_w = wi
        else:
            self._ones = np.ones(self.n_samples)
            self._ex_w = w

    def _need_problem(self) -> RoundProblem:
        if self.problem is None:
            raise RuntimeError("EdgeEvaluator: call set_problem() before evaluating blocks")
        return self.problem

    # -- blocks ----------------------------------------------------------------------------

    def check_features(self, feature_ids: Any, name: str = "feature_ids") -> np.ndarray:
        ids = np.asarray(feature_ids)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError(f"{name}: expected a non-empty 1-D array of feature ids")
        if ids.dtype.kind not in "iu":
            raise TypeError(f"{name}: expected integer ids, got dtype {ids.dtype}")
        ids = ids.astype(np.int64)
        if ids.min() < 0 or ids.max() >= self.n_features:
            raise ValueError(f"{name}: ids must be in [0, {self.n_features})")
        return ids

    def check_samples(self, sample_ids: Any, name: str = "sample_ids") -> np.ndarray:
        ids = np.asarray(sample_ids)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError(f"{name}: expected a non-empty 1-D array of example ids")
        if ids.dtype.kind not in "iu":
            raise TypeError(f"{name}: expected integer ids, got dtype {ids.dtype}")
        ids = ids.astype(np.int64)
        if ids.min() < 0 or ids.max() >= self.n_samples:
            raise ValueError(f"{name}: ids must be in [0, {self.n_samples})")
        return ids

    def block(self, feature_ids: Any, sample_ids: Any, *, weighted: bool = False) -> BlockEdges:
        """Evaluate ``Q`` features on ``S`` examples and return every feature's best edge.

        Adds ``Q * S`` to :attr:`cost`.

        Parameters
        ----------
        feature_ids : array-like of shape (Q,), int
        sample_ids : array-like of shape (S,), int
            Draws from the weights (``weighted=False``) or a plain subset (``weighted=True``).
        weighted : bool
            See the module docstring.
        """
        fids = self.check_features(feature_ids)
        sids = self.check_samples(sample_ids)
        self.cost += int(fids.size) * int(sids.size)
        self.n_blocks += 1
        src = self.source
        if isinstance(src, MatrixSource):
            return self._search(src.matrix, fids, sids, fids, src.edges, weighted)
        vals = src.values(fids, sids)
        return self._search(vals, None, None, fids, None, weighted, sids)

    def cached_block(
        self, values: np.ndarray, feature_ids: np.ndarray, sample_ids: np.ndarray,
        *, weighted: bool = False,
    ) -> BlockEdges:
        """Edges of a block whose values ``(Q, S)`` were computed earlier (no cost is added)."""
        fids = self.check_features(feature_ids)
        sids = self.check_samples(sample_ids)
        if values.shape != (fids.size, sids.size):
            raise ValueError(
                f"values: expected shape ({fids.size}, {sids.size}), got {values.shape}"
            )
        return self._search(values, None, None, fids, None, weighted, sids)

    def _threads_for(self, n_values: int) -> int | None:
        # Small blocks run on one thread: starting a parallel region costs more than the block
        # itself, and far more on a loaded machine.
        if self.threads is not None:
            return self.threads
        return 1 if n_values < _PARALLEL_MIN else None

    def _search(self, values, rows, cols, fids, edges, weighted, sids=None) -> BlockEdges:
        """Run the stump search; ``rows``/``cols`` index ``values`` (None: the block itself)."""
        p = self._need_problem()
        ids = cols if cols is not None else sids
        threads = self._threads_for(fids.size * ids.size)
        if p.criterion == "multiclass":
            wy_all = self._wy if weighted else self._wy_draw
            total = float(self._ex_w[ids].sum()) if weighted else float(ids.size)
            if cols is None:
                s = search_multiclass_stumps(values, wy_all[ids], threads=threads)
            else:
                s = search_multiclass_stumps(
                    values, wy_all, edges=edges, feature_ids=rows, sample_ids=cols,
                    threads=threads,
                )
            edge = np.where(np.isfinite(s.score), s.score / max(total, 1e-300), -np.inf)
            return BlockEdges(fids, ids, np.clip(edge, -np.inf, 1.0), s)
        w_all = p.weights if weighted else self._ones
        r_all = p.response
        total = float(w_all[ids].sum())
        cat = self.categorical[fids]
        if cols is None:
            w_b, r_b = w_all[ids], r_all[ids]
            s = self._binary_search(values, w_b, r_b, p.criterion, None, None, None, cat, threads)
        else:
            s = self._binary_search(values, w_all, r_all, p.criterion, edges, rows, cols, cat,
                                    threads)
        sc = s.score
        if p.criterion == "discrete":
            edge = sc / max(total, 1e-300)
        elif p.criterion == "real":
            z = 1.0 - sc / max(total, 1e-300)
            edge = np.sqrt(np.clip(1.0 - z * z, 0.0, 1.0))
        else:
            denom = float((w_all[ids] * r_all[ids] ** 2).sum())
            edge = np.sqrt(np.clip(sc / max(denom, 1e-300), 0.0, 1.0))
        edge = np.where(np.isfinite(sc), np.clip(edge, 0.0, 1.0), -np.inf)
        return BlockEdges(fids, ids, edge, s)

    def _binary_search(self, values, w, r, criterion, edges, rows, cols, cat, threads):
        kw = dict(criterion=criterion, feature_ids=rows, sample_ids=cols, threads=threads)
        if not cat.any():
            return search_stumps(values, r, w, edges=edges, **kw)
        # Mixed block: ordered and categorical features are searched separately and merged.
        n = cat.size
        out = None
        for is_cat in (False, True):
            pos = np.flatnonzero(cat == is_cat)
            if pos.size == 0:
                continue
            sub_rows = pos if rows is None else rows[pos]
            kw2 = dict(kw, feature_ids=sub_rows)
            if is_cat:
                if values.dtype == np.uint8:
                    res = search_categorical(values, r, w, **kw2)
                else:  # codes delivered as float32 by the family kernels
                    codes = np.ascontiguousarray(values[sub_rows]).astype(np.uint8)
                    res = search_categorical(codes, r, w, **dict(kw2, feature_ids=None))
            else:
                res = search_stumps(values, r, w, edges=edges, **kw2)
            if out is None:
                out = StumpSearch(
                    np.empty(n, dtype=np.int64), np.empty(n), np.full(n, np.inf, np.float32),
                    np.empty(n), np.empty(n), criterion,
                    None if res.split_bin is None else np.full(n, 256, np.int32),
                    np.zeros((n, 8), np.uint32),
                )
            out.feature_ids[pos] = res.feature_ids
            out.score[pos] = res.score
            out.threshold[pos] = res.threshold
            out.left_value[pos] = res.left_value
            out.right_value[pos] = res.right_value
            if res.subset is not None:
                out.subset[pos] = res.subset
            if res.split_bin is not None and out.split_bin is not None:
                out.split_bin[pos] = res.split_bin
        assert out is not None
        return out

    # -- examples --------------------------------------------------------------------------

    def sample_examples(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` examples drawn i.i.d. from the current weights (weighting-by-sampling)."""
        from vjboost.boost.sampling.examples import weighted_sample

        return weighted_sample(self._need_problem().example_weights, n, rng)

    def column(self, feature: int) -> np.ndarray:
        """Values of one feature on all examples (for refitting; adds nothing to :attr:`cost`)."""
        all_ids = np.arange(self.n_samples)
        src = self.source
        if isinstance(src, MatrixSource):
            return src.matrix[feature]
        return np.asarray(src.values(np.array([feature], dtype=np.int64), all_ids))[0]
