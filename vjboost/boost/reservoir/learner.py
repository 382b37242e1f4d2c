"""Reservoir boosting: a booster that sees the data only through a stream and a bounded reservoir.

:class:`ReservoirBooster` follows Lefakis & Fleuret (NIPS 2013). The reservoir ``R`` holds ``r``
samples (their feature values, labels and current scores ``F``). Each round::

    Q      <- stream.take(q)                      # q fresh samples (the Filter())
    F_Q    <- current strong classifier on Q
    R      <- select r of the r + q samples of R u Q (the strategy)
    h_t    <- weak learner fitted on R alone      # LogitBoost by default
    F_R    += h_t(R)

so memory is ``O((r + q) D)`` whatever the size of the data behind the stream. :meth:`fit` keeps
``R u Q`` in one preallocated float32 buffer of ``D (r + q)`` values: the fresh batch is written
into it (block by block when the featurizer has an ``into`` method, as
:class:`~vjboost.boost.reservoir.cascade.PoolFeaturizer` does) and the kept columns are compacted
in place, so the reservoir never exists twice. Strategies:

``"max"``
    Keep the ``r`` heaviest samples.
``"wsam"``
    Weighted sampling without replacement, probability proportional to the weights
    (Efraimidis–Spirakis keys, ``O(r + q)``).
``"rand"``
    Uniform sampling without replacement.
``"geem"``
    Greedy Edge Expectation Maximization (:mod:`vjboost.boost.reservoir.geem`): remove ``q``
    samples greedily, maximizing the expected edge on ``R u Q`` of a weak learner that fits the
    kept set, and fit the weak learner with the corrected weights ``w~``.

Weights: LogitBoost fits its weak learner by weighted least squares on the working response
``z`` with weights ``w = p (1 - p)``; the *edge* weights used to rank samples are ``w |z|`` (the
magnitude of the gradient of the logistic loss), normalised over ``R u Q``. GEEM's correction
rescales each kept sample's least-squares weight by ``max(w~_i, 0) / (w_i |z_i|)``, so the
weighted sum of the response moves exactly as the corrected edge does (negative corrected weights
are clipped: a least-squares fit cannot use them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit, prange

from vjboost._estimator import Estimator, NotFittedError
from vjboost._memory import check_memory, format_bytes
from vjboost._threads import n_threads
from vjboost._validation import check_array, check_in_range, check_labels, check_random_state
from vjboost.boost.losses import LOSSES, BoostingLoss, Problem
from vjboost.boost.reservoir.geem import geem_select, stump_covariance
from vjboost.boost.rounds import RoundResult, run_rounds
from vjboost.boost.search import MatrixSearch
from vjboost.boost.streams import SampleStream
from vjboost.boost.tree import Tree
from vjboost.boost.weak import TreeShape

__all__ = [
    "STRATEGIES",
    "ReservoirBooster",
    "flatten_samples",
    "select_reservoir",
]

STRATEGIES = ("geem", "max", "wsam", "rand")
#: losses whose weak learner is a weighted least-squares fit (the leaf scale folds the coefficient)
_LEAF_SCALE = {"logit": 0.5, "gentle": 1.0}


def flatten_samples(samples: np.ndarray) -> np.ndarray:
    """Default featurizer: samples (n, ...) -> feature-major float32 (prod(...), n).

    Examples
    --------
    >>> values = flatten_samples(np.arange(12).reshape(3, 2, 2))   # 3 samples of 2 x 2
    >>> values.shape, values.dtype, values[:, 1].tolist()          # column 1: sample 1
    ((4, 3), dtype('float32'), [4.0, 5.0, 6.0, 7.0])
    """
    s = np.asarray(samples)
    if s.ndim < 2:
        raise ValueError(f"samples: expected (n, ...) with at least one feature, got {s.shape}")
    return np.ascontiguousarray(s.reshape(s.shape[0], -1).T, dtype=np.float32)


def loss_terms(loss: str, y: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares weights ``w`` and response ``z`` of a loss at scores ``F``, via its step.

    A set holding a single class gets them through an extra zero-weight sample of the other
    class (the step objects refuse single-class sets).

    Parameters
    ----------
    loss : str
        A two-class loss name of :data:`vjboost.boost.losses.LOSSES` (``"logit"``, ...).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    scores : ndarray of shape (n,)
        Current scores ``F``.

    Returns
    -------
    w : ndarray of shape (n,), float64
        The loss's weights at ``F`` (normalised over the set).
    z : ndarray of shape (n,), float64
        Its response (the labels for the AdaBoost losses, the working response for
        LogitBoost).
    """
    y = np.asarray(y, dtype=np.float64)
    single = np.all(y == y[0])
    yy = np.append(y, -y[0]) if single else y
    w0 = np.ones(yy.size)
    if single:
        w0[-1] = 0.0
    step: BoostingLoss = LOSSES[loss](yy, w0)
    step.update(np.append(scores, 0.0) if single else scores)
    w, z = step.weights, step.response
    if single:
        w, z = w[:-1], z[:-1]
    return np.asarray(w, dtype=np.float64), np.asarray(z, dtype=np.float64)


def _sign_accuracy(decision_function: Callable[[Any], np.ndarray], *, samples: Any,
                   labels: Any, name: str) -> float:
    """The fraction of ``labels`` (1 and 0, or 1 and -1; checked first, ``name`` in messages)
    matched by the sign of ``decision_function(samples)``: a two-class booster's ``score``."""
    y, _ = check_labels(labels, name, signed=True)
    return float(np.mean(np.where(decision_function(samples) >= 0, 1.0, -1.0) == y))


def select_reservoir(
    strategy: str,
    r: int,
    edge_weights: np.ndarray,
    rng: np.random.Generator,
    *,
    values: np.ndarray | None = None,
    y: np.ndarray | None = None,
    ridge: float = 1.0,
    cov_features: np.ndarray | None = None,
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Indices of the ``r`` samples kept by a strategy (and GEEM's corrected edge weights).

    Parameters
    ----------
    strategy : {"geem", "max", "wsam", "rand"}
    r : int
        Number kept.
    edge_weights : ndarray of shape (n,)
        Non-negative edge weights of the candidates.
    rng : numpy Generator
    values, y : feature-major values (D, n) and ±1 labels (n,), needed by ``"geem"``.
    ridge : float
        GEEM's ridge.
    cov_features : ndarray of int, optional
        Rows of ``values`` used for GEEM's covariance (default all).

    Returns
    -------
    keep : ndarray of shape (r,), int64, increasing
    corrected : ndarray of shape (r,) or None
        GEEM's corrected weights of the kept samples.

    Examples
    --------
    >>> w = np.array([0.1, 0.4, 0.05, 0.3, 0.15])
    >>> rng = np.random.default_rng(0)
    >>> keep, corrected = select_reservoir("max", 2, w, rng)   # the two heaviest
    >>> keep.tolist(), corrected
    ([1, 3], None)
    >>> keep, _ = select_reservoir("wsam", 2, w, rng)   # random, drawn by weight
    >>> keep.shape
    (2,)
    >>> values = np.array([[0, 1, 2, 3, 4]], dtype=np.float32)
    >>> keep, corrected = select_reservoir("geem", 2, w, rng, values=values,
    ...                                    y=np.array([-1, -1, 1, 1, 1]))
    >>> keep.tolist(), np.round(corrected, 4).tolist()
    ([1, 3], [0.45, 0.375])
    """
    n = edge_weights.shape[0]
    if r >= n:
        return np.arange(n, dtype=np.int64), (edge_weights.copy() if strategy == "geem" else None)
    if strategy == "max":
        keep = np.argsort(-edge_weights, kind="stable")[:r]
        return np.sort(keep).astype(np.int64), None
    if strategy == "rand":
        return np.sort(rng.choice(n, size=r, replace=False)).astype(np.int64), None
    if strategy == "wsam":
        # Efraimidis–Spirakis: the r largest u^(1/w) are a weighted sample without replacement
        u = rng.random(n)
        w = np.maximum(edge_weights, 1e-300)
        keys = np.log(u) / w
        keep = np.argpartition(-keys, r - 1)[:r]
        return np.sort(keep).astype(np.int64), None
    if strategy == "geem":
        if values is None or y is None:
            raise ValueError("values, y: GEEM needs the feature values and labels")
        cov = stump_covariance(values, y, feature_ids=cov_features, threads=threads)
        keep, corrected, _ = geem_select(cov, edge_weights, r, ridge=ridge, threads=threads)
        return keep, corrected
    raise ValueError(f"strategy: expected one of {STRATEGIES}, got {strategy!r}")


@njit(cache=True, nogil=True, parallel=True)
def _stump_scores_from(values, start, feat, thr, left, right, out):
    """Scores of columns ``start:`` of ``values`` (``out`` has ``n - start`` entries)."""
    n = values.shape[1]
    for i in prange(start, n):
        acc = 0.0
        for t in range(feat.shape[0]):
            if values[feat[t], i] < thr[t]:
                acc += left[t]
            else:
                acc += right[t]
        out[i - start] = acc


@njit(cache=True, nogil=True)
def _spread_rows(flat, d, r, n):
    """In place: the C-ordered (d, r) block at the start of ``flat`` becomes the first ``r``
    columns of a C-ordered (d, n) block (n >= r); rows move last to first, so no source is
    overwritten before it is read."""
    for k in range(d - 1, 0, -1):
        src = k * r
        dst = k * n
        for j in range(r - 1, -1, -1):
            flat[dst + j] = flat[src + j]


@njit(cache=True, nogil=True)
def _gather_columns(flat, d, n, keep):
    """In place: columns ``keep`` (increasing) of the C-ordered (d, n) block at the start of
    ``flat`` become a C-ordered (d, len(keep)) block; every write lands at or before the place it
    reads from and after everything still to be read."""
    r = keep.shape[0]
    for k in range(d):
        src = k * n
        dst = k * r
        for j in range(r):
            flat[dst + j] = flat[src + keep[j]]


class _KeptStep:
    """The loss of one reservoir round: the kept samples, their (GEEM-corrected) least-squares
    weights and response; leaves are the weighted means scaled by the loss's leaf scale."""

    name = "reservoir"
    criterion = "regression"
    done = False

    def __init__(self, weights: np.ndarray, response: np.ndarray, scale: float,
                 y: np.ndarray, scores: np.ndarray) -> None:
        self.weights = weights
        self.response = response
        self.scale = scale
        self.y = y
        self.scores = scores

    def problems(self) -> list[Problem]:
        return [Problem(self.weights, self.response, "regression")]

    def refit_leaves(self, k: int, leaf: np.ndarray, hypothesis: np.ndarray,
                     sample_ids: np.ndarray | None = None) -> np.ndarray:
        """Weighted least-squares leaves on the kept samples, times the loss's leaf scale.

        Parameters
        ----------
        k : int
            The problem's index (always 0; unused).
        leaf : ndarray of shape (r,), int64
            Leaf index of every kept sample.
        hypothesis : ndarray of shape (L,)
            The fitted learner's leaves (only their count is used).
        sample_ids : ndarray of int, optional
            Unused.

        Returns
        -------
        ndarray of shape (L,), float64
        """
        a = np.bincount(leaf, weights=self.weights, minlength=len(hypothesis))
        b = np.bincount(leaf, weights=self.weights * self.response, minlength=len(hypothesis))
        return self.scale * np.divide(b, a, out=np.zeros_like(a), where=a > 0)

    def update(self, predictions: np.ndarray) -> float:
        self.scores = self.scores + predictions
        return float(np.mean(np.logaddexp(0.0, -2.0 * self.y * self.scores)))


class ReservoirBooster(Estimator):
    """Boosting from a stream with a bounded reservoir of samples.

    Parameters
    ----------
    n_estimators : int, default=250
        Rounds ``T`` (one weak learner each).
    reservoir_size : int, default=100
        ``r``, samples kept between rounds.
    n_fresh : int, default=100
        ``q``, fresh samples drawn from the stream each round.
    strategy : {"geem", "max", "wsam", "rand"}, default="geem"
        How the ``r`` kept samples are chosen among the ``r + q`` (see the module docstring).
    loss : {"logit", "gentle"}, default="logit"
        LogitBoost (as in the paper) or Gentle AdaBoost.
    weak_learner : {"stump", "tree"}, default="stump"
    max_depth : int, default=2
        Depth of trees.
    featurizer : callable, optional
        ``featurizer(samples) -> (D, n) float32`` feature-major values of a batch of stream
        samples (e.g. a feature pool on windows, :class:`PoolFeaturizer`). Default
        :func:`flatten_samples` (the samples' pixels / entries are the features). A featurizer
        with attributes ``n_features`` and ``into(samples, out)`` (writing the (D, n) values into
        ``out``) fills the reservoir's buffer directly, without a temporary (D, q) array.
    categorical : array-like of bool, shape (D,), optional
        Features holding categorical codes 0..255 (MB-LBP): their nodes split on code subsets.
    float32_leaves : bool, default=False
        Round every leaf value to float32 before it is used (cascade models store float32
        leaves: training then scores with exactly the values detection will use).
    ridge : float, default=1.0
        GEEM: ridge on the covariance's diagonal (which is 1); see
        :func:`~vjboost.boost.reservoir.geem.geem_select`.
    cov_features : int, optional
        GEEM: number of features, drawn at random each round, over whose stumps the covariance
        is computed (``O((r + q)^2 cov_features)``); default all features.
    memory_budget : int, optional
        Bytes allowed for the reservoir and GEEM's matrices (default: see
        :func:`vjboost._memory.check_memory`).
    random_state : int, Generator or None
    threads : int, optional

    Attributes
    ----------
    estimators_ : list of Tree
        Weak learners (leaf values include the coefficient; the score is their sum).
    n_features_ : int
    classes_ : ndarray, ``[negative label, 1]``
    history_ : dict of lists
        Per round: ``"loss"`` (mean loss on the reservoir), ``"n_pos"`` (positives kept),
        ``"expected_edge"`` (GEEM).
    reservoir_ : tuple (values (D, r), labels (r,) ±1, scores (r,))
    n_seen_ : int
        Samples drawn from the stream.

    Examples
    --------
    >>> from vjboost.boost.streams import ArrayStream
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4))
    >>> y = (X[:, 2] > 0).astype(int)   # feature 2 decides the class
    >>> clf = ReservoirBooster(10, reservoir_size=20, n_fresh=20, random_state=0)
    >>> clf = clf.fit(ArrayStream(X, y, seed=0))
    >>> len(clf.estimators_), clf.reservoir_[0].shape, clf.n_seen_   # 20 + 10 rounds x 20
    (10, (4, 20), 220)
    >>> sorted({int(t.feature[0]) for t in clf.estimators_}), clf.score(X, y) > 0.95
    ([2], True)
    """

    def __init__(
        self,
        n_estimators: int = 250,
        *,
        reservoir_size: int = 100,
        n_fresh: int = 100,
        strategy: str = "geem",
        loss: str = "logit",
        weak_learner: str = "stump",
        max_depth: int = 2,
        featurizer: Callable[[np.ndarray], np.ndarray] | None = None,
        categorical: Any = None,
        float32_leaves: bool = False,
        ridge: float = 1.0,
        cov_features: int | None = None,
        memory_budget: int | None = None,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self._store(locals())

    # ---- parameters ---------------------------------------------------------------------
    def _validate_params(self) -> None:
        check_in_range(self.n_estimators, "n_estimators", low=1, integer=True)
        check_in_range(self.reservoir_size, "reservoir_size", low=1, integer=True)
        check_in_range(self.n_fresh, "n_fresh", low=1, integer=True)
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy: expected one of {STRATEGIES}, got {self.strategy!r}")
        if self.loss not in _LEAF_SCALE:
            raise ValueError(f"loss: expected one of {sorted(_LEAF_SCALE)}, got {self.loss!r}")
        if self.weak_learner not in ("stump", "tree"):
            raise ValueError(f"weak_learner: expected 'stump' or 'tree', got {self.weak_learner!r}")
        check_in_range(self.max_depth, "max_depth", low=1, high=8, integer=True)
        if self.featurizer is not None and not callable(self.featurizer):
            raise TypeError("featurizer: expected a callable samples -> (D, n) float32")
        if not isinstance(self.float32_leaves, bool | np.bool_):
            raise TypeError(f"float32_leaves: expected a bool, got {self.float32_leaves!r}")
        check_in_range(self.ridge, "ridge", low=0.0)
        if self.cov_features is not None:
            check_in_range(self.cov_features, "cov_features", low=1, integer=True)

    def _check_categorical(self, n_features: int) -> np.ndarray | None:
        if self.categorical is None:
            return None
        cat = np.asarray(self.categorical)
        if cat.dtype != np.bool_ or cat.shape != (n_features,):
            raise ValueError(
                f"categorical: expected a bool array of shape ({n_features},) (one entry per "
                f"feature), got {cat.dtype} {cat.shape}"
            )
        return cat if cat.any() else None

    def _featurize(self, samples: np.ndarray) -> np.ndarray:
        f = self.featurizer or flatten_samples
        vals = f(samples)
        vals = check_array(vals, "featurizer output", ndim=2, dtype=np.float32)
        if vals.shape[1] != len(samples):
            raise ValueError(
                f"featurizer: returned {vals.shape[1]} columns for {len(samples)} samples "
                "(expected feature-major (D, n))"
            )
        return np.ascontiguousarray(vals)

    def _featurize_into(self, samples: np.ndarray, out: np.ndarray) -> None:
        """Write the (D, n) values of ``samples`` into ``out`` (a view of the buffer)."""
        f = self.featurizer
        if f is not None and hasattr(f, "into"):
            f.into(samples, out)
            return
        vals = self._featurize(samples)
        if vals.shape[0] != out.shape[0]:
            raise ValueError(
                f"featurizer: returned {vals.shape[0]} features, earlier batches had "
                f"{out.shape[0]}"
            )
        out[...] = vals

    def _estimate_nbytes(self, n_features: int) -> int:
        n = self.reservoir_size + self.n_fresh
        total = n_features * n * 4  # the buffer holding the reservoir and the fresh batch
        if not hasattr(self.featurizer, "into"):
            total += n_features * max(self.reservoir_size, self.n_fresh) * 4  # one batch
        if self.strategy == "geem":
            dc = n_features if self.cov_features is None else min(self.cov_features, n_features)
            total += 4 * n * n * 8 + n * dc * 4
        return total

    # ---- training -----------------------------------------------------------------------
    def _reset(self) -> None:
        self._validate_params()
        self.estimators_: list[Tree] = []
        self.history_: dict[str, list] = {"loss": [], "n_pos": [], "expected_edge": []}
        self.n_seen_ = 0
        self.n_features_ = None
        self.classes_ = np.array([0, 1])
        self._rng = check_random_state(self.random_state)
        self._res_values = None
        self._res_y = np.zeros(0)
        self._res_f = np.zeros(0)
        self._cat = None
        self._flat = None
        self._stumps = (np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0), np.zeros(0))

    def _labels(self, samples: np.ndarray, labels: Any) -> np.ndarray:
        y, classes = check_labels(labels, "labels", n_samples=samples.shape[0], signed=True)
        if classes[0] < 0:
            self.classes_ = np.array([-1, 1])
        self.n_seen_ += int(y.size)
        return y

    def _set_n_features(self, n_features: int) -> None:
        self.n_features_ = int(n_features)
        self._cat = self._check_categorical(self.n_features_)
        check_memory(
            self._estimate_nbytes(self.n_features_),
            f"reservoir of {self.reservoir_size} + {self.n_fresh} samples x "
            f"{self.n_features_} features",
            budget=self.memory_budget,
            advice="Use a smaller reservoir_size / n_fresh, fewer features, or "
            "cov_features for GEEM.",
        )

    def _ingest(self, samples: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        samples = np.asarray(samples)
        y = self._labels(samples, labels)
        vals = self._featurize(samples)
        if self.n_features_ is None:
            self._set_n_features(vals.shape[0])
        elif vals.shape[0] != self.n_features_:
            raise ValueError(
                f"featurizer: returned {vals.shape[0]} features, earlier batches had "
                f"{self.n_features_}"
            )
        return vals, y

    def fit(
        self,
        stream: SampleStream,
        y: None = None,
        *,
        callback: Callable[[ReservoirBooster, int], bool] | None = None,
    ) -> ReservoirBooster:
        """Train ``n_estimators`` rounds from a stream.

        The reservoir is first filled with ``r`` samples, then each round draws ``q``.

        Parameters
        ----------
        stream : SampleStream
            Gives ``take(n) -> (samples, labels)``; labels 1 (positive) and 0 or -1. Arrays in
            memory are read through ``ArrayStream(X, y, seed=...)``.
        y : None
            Not used: the labels come with the stream. Present so that scikit-learn's habit
            ``fit(X, y)`` gets a one-line error saying how to wrap the arrays.
        callback : callable, optional
            ``callback(self, t)`` after round ``t`` (0-based); returning ``True`` stops training
            (a cascade stage stops when its targets are met).

        Returns
        -------
        self

        Examples
        --------
        >>> from vjboost.boost.streams import ArrayStream
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(400, 5))
        >>> y = (X[:, 1] > 0).astype(int)
        >>> clf = ReservoirBooster(20, reservoir_size=50, n_fresh=50, random_state=0)
        >>> clf.fit(ArrayStream(X, y, seed=0)).score(X, y) > 0.9
        True
        >>> clf.fit(X, y)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: fit takes a stream (the labels come with it): fit(ArrayStream(X, y, seed=0))...
        """
        if y is not None or isinstance(stream, np.ndarray | list | tuple):
            # a scikit-learn user's first try is fit(X, y): say how to give arrays
            raise TypeError("fit takes a stream (the labels come with it): fit(ArrayStream(X, y, "
                            "seed=0)) for arrays in memory (vjboost.boost.streams)")
        if not isinstance(stream, SampleStream):
            raise TypeError(f"stream: expected a SampleStream, got {type(stream).__name__}")
        self._reset()
        r, q = self.reservoir_size, self.n_fresh
        n = stream.n_samples
        if n is not None and q > n:
            raise ValueError(f"n_fresh: q = {q} is larger than the stream ({n} samples)")
        if n is not None and r + q > n:
            raise ValueError(
                f"reservoir_size + n_fresh: r + q = {r + q} is larger than the stream "
                f"({n} samples); the reservoir would hold the same sample twice"
            )
        samples, labels = stream.take(r)
        samples = np.asarray(samples)
        y = self._labels(samples, labels)
        first = None
        d = getattr(self.featurizer, "n_features", None) if hasattr(
            self.featurizer, "into") else None
        if d is None:
            first = self._featurize(samples)
            d = first.shape[0]
        self._set_n_features(int(d))
        # one buffer for the reservoir (C-ordered (D, r)) and, during a round, R u Q ((D, r+q))
        self._flat = np.empty(self.n_features_ * (r + q), dtype=np.float32)
        res = self._flat[: self.n_features_ * r].reshape(self.n_features_, r)
        if first is not None:
            res[...] = first
            del first
        else:
            self._featurize_into(samples, res)
        self._res_values, self._res_y, self._res_f = res, y, np.zeros(y.size)

        def before_round(t: int) -> tuple[_KeptStep, MatrixSearch]:
            batch, batch_labels = stream.take(q)
            batch = np.asarray(batch)
            yb = self._labels(batch, batch_labels)
            d = self.n_features_
            _spread_rows(self._flat, d, r, r + q)
            pool_v = self._flat[: d * (r + q)].reshape(d, r + q)
            self._res_values = None  # its view is no longer laid out as (D, r)
            self._featurize_into(batch, pool_v[:, r:])
            pool_y = np.concatenate([self._res_y, yb])
            pool_f = np.concatenate([self._res_f, self._scores_fm(pool_v, start=r)])
            keep, fw, kz = self._select(pool_v, pool_y, pool_f)
            del pool_v
            _gather_columns(self._flat, d, r + q, keep)
            kv = self._flat[: d * keep.size].reshape(d, keep.size)
            return self._kept(kv, pool_y[keep], pool_f[keep], fw, kz)

        self._run(before_round, self.n_estimators, callback)
        return self

    def partial_fit(self, samples: Any, labels: Any) -> ReservoirBooster:
        """One round with a batch of fresh samples (the caller is the stream).

        The batch joins the reservoir, ``reservoir_size`` samples are kept, and one weak learner
        is fitted on them.

        Parameters
        ----------
        samples : array-like of shape (n, ...)
            A batch in the stream's form (what ``featurizer`` reads; by default rows whose
            entries are the features).
        labels : array-like of shape (n,)
            Two classes: 1 and 0, or 1 and -1.

        Returns
        -------
        self
        """
        if not hasattr(self, "estimators_"):
            self._reset()
        if self._flat is not None:
            # after fit(): continue from a copy of the reservoir (batches may have any size)
            self._res_values = np.array(self._res_values)
            self._flat = None
        vals, y = self._ingest(samples, labels)

        def before_round(t: int) -> tuple[_KeptStep, MatrixSearch]:
            f_new = self._scores_fm(vals)
            if self._res_values is None:
                pool_v, pool_y, pool_f = vals, y, f_new
            else:
                pool_v = np.concatenate([self._res_values, vals], axis=1)
                pool_y = np.concatenate([self._res_y, y])
                pool_f = np.concatenate([self._res_f, f_new])
            keep, fw, kz = self._select(pool_v, pool_y, pool_f)
            kv = np.ascontiguousarray(pool_v[:, keep])
            return self._kept(kv, pool_y[keep], pool_f[keep], fw, kz)

        self._run(before_round, 1, None)
        return self

    def _kept(self, kv: np.ndarray, ky: np.ndarray, kf: np.ndarray, fw: np.ndarray,
              kz: np.ndarray) -> tuple[_KeptStep, MatrixSearch]:
        """The round's step and search over the kept samples (the new reservoir)."""
        self._res_values, self._res_y, self._res_f = kv, ky, kf
        step = _KeptStep(fw, kz, _LEAF_SCALE[self.loss], ky, kf)
        return step, MatrixSearch(kv, categorical=self._cat, threads=self.threads)

    def _run(self, before_round: Callable[[int], Any], n_rounds: int,
             callback: Callable[[ReservoirBooster, int], bool] | None) -> None:
        def after_round(res: RoundResult) -> bool:
            self._res_f = res.step.scores
            self.history_["loss"].append(res.loss)
            self.history_["n_pos"].append(int((self._res_y > 0).sum()))
            for tree in res.trees:
                self._add(tree)
            return bool(callback is not None and callback(self, res.t))

        shape = TreeShape.of(self.weak_learner, max_depth=self.max_depth)
        run_rounds(None, None, n_rounds=n_rounds, shape=shape, before_round=before_round,
                   leaf_dtype=np.float32 if self.float32_leaves else None, callback=after_round)

    def _select(
        self, pool_v: np.ndarray, pool_y: np.ndarray, pool_f: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kept indices and their least-squares weights (GEEM-corrected) and response."""
        w, z = loss_terms(self.loss, pool_y, pool_f)
        omega = w * np.abs(z)
        omega = omega / omega.sum() if omega.sum() > 0 else np.full(omega.size, 1.0 / omega.size)
        cov_rows = None
        if (self.strategy == "geem" and self.cov_features is not None
                and self.cov_features < pool_v.shape[0]):
            cov_rows = np.sort(self._rng.choice(pool_v.shape[0], self.cov_features,
                                                replace=False))
        keep, corrected = select_reservoir(
            self.strategy, self.reservoir_size, omega, self._rng, values=pool_v, y=pool_y,
            ridge=self.ridge, cov_features=cov_rows, threads=self.threads,
        )
        fw = w[keep]
        if corrected is not None:
            scale = np.maximum(corrected, 0.0) / np.maximum(omega[keep], 1e-300)
            fw = fw * scale
            self.history_["expected_edge"].append(float(corrected.sum()))
        if not fw.sum() > 0:
            fw = w[keep]
        return keep, fw / fw.sum(), z[keep]

    def _add(self, tree: Tree) -> None:
        self.estimators_.append(tree)
        if tree.is_stump and not tree.categorical[0]:
            feat, thr, left, right = self._stumps
            self._stumps = (
                np.append(feat, tree.feature[0]),
                np.append(thr, tree.threshold[0]).astype(np.float32),
                np.append(left, tree.leaves[0]),
                np.append(right, tree.leaves[1]),
            )

    @property
    def reservoir_(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The samples kept: feature values (D, r), labels (r,) ±1 and current scores (r,)."""
        if getattr(self, "_res_values", None) is None:
            raise NotFittedError("this ReservoirBooster holds no reservoir (not fitted yet)")
        return self._res_values, self._res_y, self._res_f

    # ---- prediction ---------------------------------------------------------------------
    def _scores_fm(self, values: np.ndarray, start: int = 0) -> np.ndarray:
        """Scores of the columns ``start:`` of feature-major values (D, n)."""
        out = np.zeros(values.shape[1] - start)
        feat, thr, left, right = self._stumps
        if feat.size:
            with n_threads(self.threads):
                _stump_scores_from(values, start, feat, thr, left, right, out)
        for h in self.estimators_:
            if not (h.is_stump and not h.categorical[0]):
                out += (h.predict_matrix(values) if start == 0
                        else h.predict(np.ascontiguousarray(values[h.features_, start:])))
        return out

    def check_fitted(self) -> None:
        if not getattr(self, "estimators_", None):
            raise NotFittedError("this ReservoirBooster is not fitted yet (no weak learner)")

    def decision_function_features(self, values: Any) -> np.ndarray:
        """Scores (n,) of feature-major values (D, n) (already featurized)."""
        self.check_fitted()
        v = check_array(values, "values", ndim=2, dtype=np.float32)
        if v.shape[0] != self.n_features_:
            raise ValueError(f"values: expected {self.n_features_} feature rows, got {v.shape[0]}")
        return self._scores_fm(np.ascontiguousarray(v))

    def decision_function(self, samples: Any, *, batch_size: int = 4096) -> np.ndarray:
        """Scores (n,) of samples in the stream's form (featurized in batches).

        Parameters
        ----------
        samples : array-like of shape (n, ...)
            Samples in the stream's form (what ``featurizer`` reads).
        batch_size : int, default 4096
            Samples featurized at a time (bounds the temporary (D, batch_size) values).

        Returns
        -------
        ndarray of shape (n,), float64
            Summed weak-learner outputs; >= 0 predicts ``classes_[1]``.
        """
        self.check_fitted()
        samples = np.asarray(samples)
        out = np.empty(samples.shape[0])
        for a in range(0, samples.shape[0], batch_size):
            out[a : a + batch_size] = self._scores_fm(self._featurize(samples[a : a + batch_size]))
        return out

    def predict(self, samples: Any) -> np.ndarray:
        """Labels (``classes_[1]`` where the score is >= 0)."""
        return np.where(self.decision_function(samples) >= 0, self.classes_[1], self.classes_[0])

    def score(self, samples: Any, labels: Any) -> float:
        """Accuracy: the fraction of samples whose predicted sign matches ``labels``.

        Parameters
        ----------
        samples : array-like of shape (n, ...)
            Samples in the stream's form.
        labels : array-like of shape (n,)
            Two classes: 1 and 0, or 1 and -1.

        Returns
        -------
        float
            In [0, 1].
        """
        return _sign_accuracy(self.decision_function, samples=samples, labels=labels,
                              name="labels")

    def memory_estimate(self, n_features: int) -> str:
        """Human-readable estimate of the training memory for ``n_features`` features."""
        self._validate_params()
        return format_bytes(self._estimate_nbytes(int(n_features)))
