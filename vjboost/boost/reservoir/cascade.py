"""One cascade stage trained with a bounded reservoir of windows (``vjtrain --reservoir R``).

The stage sees positives and negatives only through streams of windows (a :class:`VecStream` of
positives, a stream of mined negatives...), evaluates the feature pool on each batch of ``q``
fresh windows only, and keeps ``r`` windows' feature values: memory stays
``O((r + q) * n_features)`` however many positives and negatives lie behind the streams.

:class:`PoolFeaturizer` evaluates a feature pool block by block straight into the reservoir's
buffer; :class:`WindowScores` keeps the running stage scores of a fixed set of windows (the
stage's positives and negatives, for its threshold and false alarm), evaluating only the features
of each new weak learner, a chunk of windows at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vjboost._validation import check_in_range
from vjboost.boost.reservoir.learner import ReservoirBooster
from vjboost.boost.streams import MixedStream, SampleStream

__all__ = ["PoolFeaturizer", "WindowScores", "pool_featurizer", "train_reservoir_stage"]


class PoolFeaturizer:
    """Features ``feature_ids`` of a :class:`~vjboost.features.FeaturePool` on windows.

    ``f(windows)`` returns the (len(feature_ids), n) float32 values; row ``k`` is the global
    feature ``feature_ids[k]`` (all features of the pool when ``None``). ``f.into(windows, out)``
    writes them into ``out`` (e.g. a view of :class:`ReservoirBooster`'s buffer) ``block``
    features at a time, so no temporary array of all the features is made.

    Parameters
    ----------
    pool : FeaturePool
    feature_ids : array-like of int, optional
    block : int, default=4096
        Features evaluated per call of the pool.
    threads : int, optional

    Examples
    --------
    >>> from vjboost.features import FeaturePool, PixelFamily
    >>> windows = np.arange(12, dtype=np.uint8).reshape(3, 2, 2)   # 3 windows of 2 x 2 pixels
    >>> f = PoolFeaturizer(FeaturePool([PixelFamily((2, 2))]), [3, 0], block=1)
    >>> f(windows).tolist()   # row k: feature feature_ids[k] on every window
    [[3.0, 7.0, 11.0], [0.0, 4.0, 8.0]]
    >>> out = np.zeros((2, 3), dtype=np.float32)
    >>> f.into(windows, out)   # the same values written in place, one feature at a time
    >>> out.tolist()
    [[3.0, 7.0, 11.0], [0.0, 4.0, 8.0]]
    """

    def __init__(self, pool: Any, feature_ids: Any = None, *, block: int = 4096,
                 threads: int | None = None) -> None:
        self.pool = pool
        self.feature_ids = (np.arange(pool.n_features, dtype=np.int64) if feature_ids is None
                            else np.asarray(feature_ids, dtype=np.int64))
        self.n_features = int(self.feature_ids.size)
        self.block = int(check_in_range(block, "block", low=1, integer=True))
        self.threads = threads

    def __call__(self, windows: np.ndarray) -> np.ndarray:
        out = np.empty((self.n_features, len(windows)), dtype=np.float32)
        self.into(windows, out)
        return out

    def into(self, windows: np.ndarray, out: np.ndarray) -> None:
        """Write the values of ``windows`` into ``out`` of shape (n_features, len(windows)).

        Parameters
        ----------
        windows : ndarray of shape (n, H, W), uint8
            Windows of the pool's window shape.
        out : ndarray of shape (n_features, n), float32
            Filled in place, row ``k`` with feature ``feature_ids[k]``, ``block`` rows at a time.
        """
        if out.shape != (self.n_features, len(windows)):
            raise ValueError(f"out: expected shape {(self.n_features, len(windows))}, got "
                             f"{out.shape}")
        channels = self.pool.prepare(windows, threads=self.threads)
        for a in range(0, self.n_features, self.block):
            b = min(a + self.block, self.n_features)
            out[a:b] = self.pool.evaluate(channels, self.feature_ids[a:b], threads=self.threads)


def pool_featurizer(
    pool: Any, feature_ids: Any = None, *, threads: int | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """A featurizer evaluating ``feature_ids`` of a :class:`~vjboost.features.FeaturePool`.

    Returns a :class:`PoolFeaturizer`: ``f(windows (n, H, W) uint8) -> (len(feature_ids), n)
    float32``; row ``k`` is the global feature ``feature_ids[k]`` (all features when ``None``).

    Parameters
    ----------
    pool : FeaturePool
        The pool the features come from.
    feature_ids : array-like of int, optional
        Global feature ids of the pool (default all, in order).
    threads : int, optional
        Threads of the pool's evaluation (default all).

    Returns
    -------
    PoolFeaturizer

    Examples
    --------
    >>> from vjboost.features import FeaturePool, PixelFamily
    >>> windows = np.arange(12, dtype=np.uint8).reshape(3, 2, 2)   # 3 windows of 2 x 2 pixels
    >>> f = pool_featurizer(FeaturePool([PixelFamily((2, 2))]), [1])
    >>> type(f).__name__, f(windows).tolist()
    ('PoolFeaturizer', [[1.0, 5.0, 9.0]])
    """
    return PoolFeaturizer(pool, feature_ids, threads=threads)


class WindowScores:
    """Running stage scores of a fixed set of windows, one weak learner at a time.

    Only the features a new learner reads are evaluated, ``chunk`` windows at a time, so the
    memory is the windows themselves plus 8 bytes of score per window whatever the pool size.

    Parameters
    ----------
    pool : FeaturePool
    windows : ndarray of uint8, shape (n, H, W)
    chunk : int, default=4096
        Windows prepared and evaluated per call of the pool.
    threads : int, optional

    Attributes
    ----------
    scores : ndarray of float64, shape (n,)
        Sum of the outputs of the learners added so far.

    Examples
    --------
    >>> from vjboost.boost.tree import Tree
    >>> from vjboost.features import FeaturePool, PixelFamily
    >>> windows = np.arange(12, dtype=np.uint8).reshape(3, 2, 2)   # pixel 3: 3, 7, 11
    >>> ws = WindowScores(FeaturePool([PixelFamily((2, 2))]), windows)
    >>> ws.add(Tree.stump(3, threshold=5.0, left_value=-1.0, right_value=1.0)).tolist()
    [-1.0, 1.0, 1.0]
    >>> ws.add(Tree.stump(0, threshold=6.0, left_value=0.5, right_value=-0.5)).tolist()
    [-0.5, 1.5, 0.5]
    """

    def __init__(self, pool: Any, windows: np.ndarray, *, chunk: int = 4096,
                 threads: int | None = None) -> None:
        self.pool = pool
        self.windows = windows
        self.chunk = int(check_in_range(chunk, "chunk", low=1, integer=True))
        self.threads = threads
        self.scores = np.zeros(len(windows))

    def add(self, learner: Any) -> np.ndarray:
        """Add ``learner``'s outputs (global feature ids of the pool); returns :attr:`scores`."""
        feats = np.asarray(learner.features_, dtype=np.int64)
        for a in range(0, len(self.windows), self.chunk):
            b = min(a + self.chunk, len(self.windows))
            vals = self.pool.evaluate(self.windows[a:b], feats, threads=self.threads)
            self.scores[a:b] += learner.predict(vals)
        return self.scores


def train_reservoir_stage(
    pool: Any,
    positives: SampleStream,
    negatives: SampleStream,
    *,
    n_weak: int,
    reservoir_size: int,
    n_fresh: int | None = None,
    strategy: str = "geem",
    pos_fraction: float = 0.5,
    feature_ids: Any = None,
    weak_learner: str = "stump",
    max_depth: int = 2,
    loss: str = "logit",
    float32_leaves: bool = False,
    cov_features: int | None = 512,
    stop: Callable[[ReservoirBooster, int], bool] | None = None,
    memory_budget: int | None = None,
    random_state: Any = None,
    threads: int | None = None,
) -> tuple[list[Any], ReservoirBooster]:
    """Train the weak learners of one stage from streams of positive and negative windows.

    Parameters
    ----------
    pool : FeaturePool
        Features evaluated on the windows.
    positives, negatives : SampleStream
        Windows (n, H, W) uint8 of the pool's window shape. Their labels are ignored: every
        positive is labelled 1 and every negative 0.
    n_weak : int
        Maximum number of weak learners.
    reservoir_size : int
        ``r`` windows kept between rounds (``R`` of ``vjtrain --reservoir R``).
    n_fresh : int, optional
        ``q`` fresh windows per round (default ``r``).
    strategy : {"geem", "max", "wsam", "rand"}, default="geem"
    pos_fraction : float, default=0.5
        Share of positives among the drawn windows.
    feature_ids : array-like of int, optional
        Global ids of the pool features to use (default all).
    weak_learner, max_depth, loss, float32_leaves
        See :class:`ReservoirBooster` (``loss`` "logit" or "gentle"). Categorical features of
        the pool (MB-LBP) get categorical splits.
    cov_features : int, optional, default=512
        GEEM's covariance over this many random features per round.
    stop : callable, optional
        ``stop(booster, t) -> bool`` after each weak learner, e.g. the stage's hit-rate and
        false-alarm check on held-out windows with ``booster.decision_function(windows)``.
    memory_budget : int, optional
    random_state : int, Generator or None
    threads : int, optional

    Returns
    -------
    learners : list of Tree
        The stage's weak learners with *global* pool feature ids (leaf values include the
        coefficients; the stage score is their sum).
    booster : ReservoirBooster
        The fitted booster (its ``decision_function(windows)`` gives stage scores).

    Examples
    --------
    >>> from vjboost.boost.streams import ArrayStream
    >>> from vjboost.features import FeaturePool, PixelFamily
    >>> rng = np.random.default_rng(0)
    >>> pos = rng.integers(0, 256, (40, 2, 2), dtype=np.uint8)
    >>> neg = rng.integers(0, 256, (40, 2, 2), dtype=np.uint8)
    >>> pos[:, 0, 1] = rng.integers(150, 256, 40)   # pixel 1 is bright in the positives
    >>> neg[:, 0, 1] = rng.integers(0, 100, 40)     # and dark in the negatives
    >>> learners, booster = train_reservoir_stage(
    ...     FeaturePool([PixelFamily((2, 2))]), ArrayStream(pos, np.ones(40), seed=0),
    ...     ArrayStream(neg, np.zeros(40), seed=0), n_weak=3, reservoir_size=10, random_state=0)
    >>> [int(t.feature[0]) for t in learners]
    [1, 1, 1]
    >>> scores_pos, scores_neg = booster.decision_function(pos), booster.decision_function(neg)
    >>> bool((scores_pos > 0).all()), bool((scores_neg < 0).all())
    (True, True)
    """
    pos_fraction = check_in_range(pos_fraction, "pos_fraction", low=0.0, high=1.0,
                                  low_inclusive=False, high_inclusive=False)
    q = reservoir_size if n_fresh is None else n_fresh
    gids = (np.arange(pool.n_features, dtype=np.int64) if feature_ids is None
            else np.asarray(feature_ids, dtype=np.int64))
    pos = _Relabel(positives, 1)
    neg = _Relabel(negatives, 0)
    stream = MixedStream([pos, neg], [pos_fraction, 1.0 - pos_fraction], seed=random_state)
    cat = np.asarray(pool.kinds(), dtype=bool)[gids]
    booster = ReservoirBooster(
        n_estimators=n_weak, reservoir_size=reservoir_size, n_fresh=q, strategy=strategy,
        loss=loss, weak_learner=weak_learner, max_depth=max_depth,
        featurizer=PoolFeaturizer(pool, gids, threads=threads),
        categorical=cat if cat.any() else None, float32_leaves=float32_leaves,
        cov_features=cov_features, memory_budget=memory_budget, random_state=random_state,
        threads=threads,
    )
    booster.fit(stream, callback=stop)
    return [h.remap(gids) for h in booster.estimators_], booster


class _Relabel(SampleStream):
    """A stream whose labels are replaced by a constant."""

    def __init__(self, stream: SampleStream, label: int) -> None:
        if not isinstance(stream, SampleStream):
            raise TypeError(f"expected a SampleStream, got {type(stream).__name__}")
        self.stream = stream
        self.label = label
        self.n_samples = stream.n_samples
        self.sample_shape = stream.sample_shape

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        X, _ = self.stream.take(n)
        return X, np.full(len(X), self.label)
