"""Lazy edge evaluation of (feature ids x example ids) blocks, with exact cost accounting.

A sampler never sees feature values. It asks an :class:`EdgeEvaluator` for the *edges* of the best
split (a stump) of each feature of a block ``(feature_ids, sample_ids)``; the evaluator gets
the values of the block from a :class:`~vjboost.boost.source.FeatureSource` (a precomputed
matrix, a callable, or a feature pool evaluated lazily through the family kernels), runs the split
search of :func:`vjboost.boost.stumps.search_splits` on it and adds ``Q * S`` to its cost counter:
the *cost* of a sampler is the number of feature evaluations it requested.

The evaluator may be restricted to the examples reaching one node of a tree
(``set_problem(problem, node_ids=ids)``): weights outside the node are zero, so draws and edges
concern that node only, and samplers choose the features of depth-k trees node by node.

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
  the multi-class real and gentle criteria use the same formulas summed over the classes;
* Real AdaBoost: ``score = W - Z``; ``gamma = sqrt(1 - (Z / W)^2)``;
* regression (Gentle AdaBoost, LogitBoost): ``gamma = sqrt(score / sum w r^2)``, the correlation
  between the response and the fitted stump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vjboost.boost.losses import Problem
from vjboost.boost.sampling.examples import distinct_draws
from vjboost.boost.source import (
    CallableSource,
    FeatureSource,
    MatrixSource,
    Partition,
    PoolSource,
)
from vjboost.boost.stumps import search_splits

__all__ = [
    "BlockEdges",
    "CallableSource",
    "EdgeEvaluator",
    "FeatureSource",
    "MatrixSource",
    "Partition",
    "PoolSource",
    "Problem",
    "WeakLearner",
]

_PARALLEL_MIN = 1 << 20


# --------------------------------------------------------------------------------------------
# results


@dataclass
class WeakLearner:
    """A split found on a block, before its leaves are refitted on all examples.

    ``feature`` is a global feature id; an example goes LEFT iff ``value < threshold`` (or, on a
    binned matrix, ``bin < split_bin``; categorical: bit ``code`` of ``subset`` set).
    ``left_value``/``right_value`` are the leaves estimated on the block (K-vectors for
    multi-class problems; ``-votes``/``+votes`` for AdaBoost.MH's vote vectors).

    Parameters
    ----------
    feature : int
        Global feature id.
    threshold : float
        Raw-value threshold (``value < threshold`` goes left).
    edge : float
        The split's edge on the block, in [0, 1].
    split_bin : int, optional
        The threshold as a bin index, on a binned matrix.
    subset : ndarray of shape (8,), uint32, optional
        The 256-bit set of codes going left, for a categorical split.
    votes : ndarray of shape (K,), optional
        AdaBoost.MH's vote vector.
    left_value, right_value : float or ndarray of shape (K,)
        The leaves estimated on the block.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> X = np.array([[0, 1, 2, 3], [3, 1, 0, 2], [5, 5, 5, 5]], dtype=np.float32)
    >>> ev = EdgeEvaluator(MatrixSource(X))
    >>> ev.set_problem(Problem(np.full(4, 0.25), np.array([-1.0, -1.0, 1.0, 1.0]), "discrete"))
    >>> wl = ev.block([0, 1], np.arange(4), weighted=True).learner(0)
    >>> wl.feature, wl.threshold, wl.edge, float(wl.left_value), float(wl.right_value)
    (0, 1.5, 1.0, -1.0, 1.0)
    >>> np.where(X[wl.feature] < wl.threshold, wl.left_value, wl.right_value).tolist()
    [-1.0, -1.0, 1.0, 1.0]
    """

    feature: int
    threshold: float
    edge: float
    split_bin: int | None = None
    subset: np.ndarray | None = None
    votes: np.ndarray | None = None
    left_value: Any = -1.0
    right_value: Any = 1.0


@dataclass
class BlockEdges:
    """Edges of the best split of each feature of a block.

    Parameters
    ----------
    feature_ids : ndarray of shape (Q,), int64
        The block's global feature ids.
    sample_ids : ndarray of shape (S,), int64
        The block's examples.
    edges : ndarray of shape (Q,), float64
        Each feature's best edge in [0, 1] (``-inf`` where the feature cannot split).
    search : object
        The split search's result per feature (thresholds, bins, subsets, leaves).

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> X = np.array([[0, 1, 2, 3], [3, 1, 0, 2], [5, 5, 5, 5]], dtype=np.float32)
    >>> ev = EdgeEvaluator(MatrixSource(X))
    >>> ev.set_problem(Problem(np.full(4, 0.25), np.array([-1.0, -1.0, 1.0, 1.0]), "discrete"))
    >>> b = ev.block([0, 1, 2], np.arange(4), weighted=True)
    >>> b.edges.tolist()  # feature 2 is constant: it cannot split
    [1.0, 0.5, -inf]
    >>> b.best(), b.learner(b.best()).threshold
    (0, 1.5)
    """

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
        """The split of the feature at position ``pos`` of the block."""
        s = self.search
        split = None if s.split_bin is None else int(s.split_bin[pos])
        subset = None if s.subset is None else s.subset[pos].copy()
        votes = np.copy(s.right_value[pos]) if s.criterion == "vote" else None
        return WeakLearner(
            int(self.feature_ids[pos]), float(s.threshold[pos]), float(self.edges[pos]),
            split_bin=split, subset=subset, votes=votes,
            left_value=np.copy(s.left_value[pos]), right_value=np.copy(s.right_value[pos]),
        )


# --------------------------------------------------------------------------------------------
# evaluator


def _check_ids(ids: Any, name: str, *, of: str, n: int) -> np.ndarray:
    """Validated int64 ids of ``of`` s (non-empty, 1-D, each in ``[0, n)``), or a clear error
    naming ``name``."""
    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of {of} ids")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer ids, got dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    if ids.min() < 0 or ids.max() >= n:
        raise ValueError(f"{name}: ids must be in [0, {n})")
    return ids


class EdgeEvaluator:
    """Computes edges of blocks of a partitioned pool under the current boosting weights.

    Parameters
    ----------
    source : FeatureSource
        Where feature values come from.
    partition : Partition, optional
        Families of the pool (default: the source's).
    categorical : array-like of bool, shape (n_features,), optional
        Features whose values are 8-bit codes (MB-LBP) searched with a 256-way categorical split
        (two-class criteria only; multi-class criteria treat codes as ordered values). Default:
        the source's.
    threads : int, optional
        Threads of the search kernels.

    Attributes
    ----------
    cost : int
        Number of feature evaluations requested so far (``sum Q * S`` over blocks).
    n_blocks : int
        Number of blocks evaluated.
    node_ids : ndarray
        The examples the current problem is restricted to (all by default).

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> X = np.array([[0, 1, 2, 3], [3, 1, 0, 2], [5, 5, 5, 5]], dtype=np.float32)
    >>> ev = EdgeEvaluator(MatrixSource(X))
    >>> ev.set_problem(Problem(np.full(4, 0.25), np.array([-1.0, -1.0, 1.0, 1.0]), "discrete"))
    >>> ev.block([0, 1, 2], np.arange(4), weighted=True).edges.tolist()
    [1.0, 0.5, -inf]
    >>> ev.cost  # 3 features x 4 examples
    12
    >>> draws = ev.sample_examples(10, np.random.default_rng(0))  # from the weights
    >>> draws.tolist()
    [0, 0, 0, 1, 1, 2, 3, 3, 3, 3]
    >>> ev.block([1], draws).edges.tolist(), ev.cost  # 12 + 1 feature x 10 draws
    ([0.6], 22)
    """

    def __init__(
        self,
        source: FeatureSource,
        *,
        partition: Partition | None = None,
        categorical: Any = None,
        threads: int | None = None,
    ) -> None:
        if not isinstance(source, FeatureSource):
            raise TypeError("source: expected a FeatureSource (n_features, n_samples, values(), "
                            "categorical, partition)")
        self.source = source
        self.partition = source.partition if partition is None else partition
        if self.partition.n_features != source.n_features:
            raise ValueError(
                f"partition: covers {self.partition.n_features} features but the source has "
                f"{source.n_features}"
            )
        if categorical is None:
            self.categorical = np.asarray(source.categorical, dtype=bool)
        else:
            self.categorical = np.asarray(categorical, dtype=bool)
            if self.categorical.shape != (source.n_features,):
                raise ValueError(f"categorical: expected shape ({source.n_features},)")
        self._any_cat = bool(self.categorical.any())
        self.threads = threads
        self.cost = 0
        self.n_blocks = 0
        self.problem: Problem | None = None
        self.node_ids = np.arange(source.n_samples, dtype=np.int64)
        self._draws: tuple | None = None  # the last sample_examples(): (ids, distinct, counts)

    # -- problem ---------------------------------------------------------------------------

    @property
    def n_features(self) -> int:
        return self.source.n_features

    @property
    def n_samples(self) -> int:
        return self.source.n_samples

    def set_problem(self, problem: Problem, *, node_ids: Any = None) -> None:
        """Install the weights/response of the current round (of one node's examples).

        Parameters
        ----------
        problem : Problem
            Weights (N,) or (N, K) and response of the round, for all N examples.
        node_ids : array-like of int, optional
            The examples of the node being split: the weights of the others are set to zero and
            the rest renormalised (default all examples).
        """
        if problem.n_samples != self.n_samples:
            raise ValueError(
                f"problem: has {problem.n_samples} examples but the source has {self.n_samples}"
            )
        w = problem.weights
        if node_ids is None:
            self.node_ids = np.arange(self.n_samples, dtype=np.int64)
        else:
            self.node_ids = self.check_samples(node_ids, "node_ids")
            mask = np.zeros(self.n_samples, dtype=bool)
            mask[self.node_ids] = True
            w = np.where(mask[:, None] if w.ndim == 2 else mask, w, 0.0)
            total = w.sum()
            w = w / total if total > 0 else w
        self.problem = problem
        self._w = w
        self._ex_w = w if w.ndim == 1 else w.sum(axis=1)
        if w.ndim == 2:
            safe = np.where(self._ex_w > 0, self._ex_w, 1.0)
            self._w_draw = np.ascontiguousarray(w / safe[:, None])  # per-draw weight 1
        else:
            self._w_draw = np.ones(self.n_samples)

    def _need_problem(self) -> Problem:
        if self.problem is None:
            raise RuntimeError("EdgeEvaluator: call set_problem() before evaluating blocks")
        return self.problem

    # -- blocks ----------------------------------------------------------------------------

    def check_features(self, feature_ids: Any, name: str = "feature_ids") -> np.ndarray:
        """Validated feature ids, or a clear error naming ``name``.

        Parameters
        ----------
        feature_ids : array-like of int
            Non-empty, 1-D, each in [0, n_features).
        name : str, default "feature_ids"
            The argument named in errors.

        Returns
        -------
        ndarray of int64
        """
        return _check_ids(feature_ids, name, of="feature", n=self.n_features)

    def check_samples(self, sample_ids: Any, name: str = "sample_ids") -> np.ndarray:
        """Validated example ids, or a clear error naming ``name``.

        Parameters
        ----------
        sample_ids : array-like of int
            Non-empty, 1-D, each in [0, n_samples).
        name : str, default "sample_ids"
            The argument named in errors.

        Returns
        -------
        ndarray of int64
        """
        return _check_ids(sample_ids, name, of="example", n=self.n_samples)

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
        # the draws of sample_examples() were checked, and their distinct ids counted, when
        # they were drawn (a pass over up to S >> N ids less per block)
        drawn = self._draws is not None and sample_ids is self._draws[0]
        sids = self._draws[0] if drawn else self.check_samples(sample_ids)
        self.cost += int(fids.size) * int(sids.size)
        self.n_blocks += 1
        # Repeated draws (weighting-by-sampling draws S >> N examples in its late steps) are
        # searched once each with their multiplicity as weight: the same sums, and the sort and
        # the feature evaluation cost min(S, distinct) instead of S. (Not for the real
        # criterion, whose smoothing depends on S.)
        if self._need_problem().criterion == "real":
            uniq, counts = sids, None
        else:
            uniq, counts = self._draws[1:] if drawn else distinct_draws(sids)
        src = self.source
        if isinstance(src, MatrixSource):
            return self._search(src.matrix, fids, sids, fids, src.edges, weighted,
                                uniq=uniq, counts=counts)
        vals = src.values(fids, uniq)
        return self._search(vals, None, None, fids, None, weighted, sids, uniq=uniq,
                            counts=counts)

    def cached_block(
        self, values: np.ndarray, feature_ids: np.ndarray, sample_ids: np.ndarray,
        *, weighted: bool = False,
    ) -> BlockEdges:
        """Edges of a block whose values ``(Q, S)`` were computed earlier (no cost is added).

        Parameters
        ----------
        values : ndarray of shape (Q, S)
            Raw values of the features on the examples.
        feature_ids : ndarray of shape (Q,), int
        sample_ids : ndarray of shape (S,), int
        weighted : bool, default False
            As for :meth:`block`.

        Returns
        -------
        BlockEdges
        """
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

    def _search(self, values, rows, cols, fids, edges, weighted, sids=None, *,
                uniq=None, counts=None) -> BlockEdges:
        """Run the split search; ``rows``/``cols`` index ``values`` (None: the block itself).

        ``uniq``/``counts``: the distinct examples of the block and their multiplicities (the
        values' columns are then ``uniq``; ``None``: every column once).
        """
        p = self._need_problem()
        ids = drawn = cols if cols is not None else sids
        w_all = self._w if weighted else self._w_draw
        r_all = p.response
        if counts is not None:
            w_all = w_all.copy()
            w_all[uniq] *= counts if w_all.ndim == 1 else counts[:, None]
            cols = uniq if cols is not None else None
            ids = uniq
        threads = self._threads_for(fids.size * ids.size)
        if cols is None:
            cat = self.categorical[fids] if self._any_cat else None
            s = search_splits(values, r_all[ids], w_all[ids], criterion=p.criterion,
                              categorical=cat, threads=threads)
        else:
            s = search_splits(values, r_all, w_all, criterion=p.criterion,
                              categorical=self.categorical if self._any_cat else None,
                              edges=edges, feature_ids=rows, sample_ids=cols, threads=threads)
        sc = s.score
        total = float(w_all[ids].sum())
        if p.criterion in ("discrete", "vote"):
            edge = sc / max(total, 1e-300)
        elif p.criterion == "real":
            z = 1.0 - sc / max(total, 1e-300)
            edge = np.sqrt(np.clip(1.0 - z * z, 0.0, 1.0))
        else:
            denom = float((w_all[ids] * r_all[ids] ** 2).sum())
            edge = np.sqrt(np.clip(sc / max(denom, 1e-300), 0.0, 1.0))
        edge = np.where(np.isfinite(sc), np.clip(edge, 0.0, 1.0), -np.inf)
        return BlockEdges(fids, drawn, edge, s)

    # -- examples --------------------------------------------------------------------------

    def sample_examples(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` examples drawn i.i.d. from the current weights (weighting-by-sampling).

        Parameters
        ----------
        n : int
            Number of draws (with replacement).
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of shape (n,), int64
            Example ids.
        """
        from vjboost.boost.sampling.examples import weighted_draws

        self._need_problem()
        self._draws = weighted_draws(self._ex_w, n, rng)
        return self._draws[0]

    def column(self, feature: int) -> np.ndarray:
        """Values of one feature on all examples (for refitting; adds nothing to :attr:`cost`)."""
        return np.asarray(self.source.values(np.array([feature], dtype=np.int64)))[0]
