"""A boosted classifier whose weak learners are chosen by a sampler under a cost budget.

Each round runs the one loop of :mod:`vjboost.boost.rounds` over a
:class:`~vjboost.boost.search.SampledSearch`: at every node of the round's learner (one node for
a stump, ``2^k - 1`` for a depth-``k`` tree) the sampler spends at most ``budget`` feature
evaluations through the :class:`EdgeEvaluator` on the examples reaching the node and returns the
split of its best sampled feature; the chosen features are evaluated on all ``N`` examples
(recorded separately as ``refit_cost_``) to route the examples and refit the leaves (binary
losses) or vote vector and coefficient (AdaBoost.MH) before the scores are updated.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vjboost._memory import check_memory
from vjboost._threads import n_threads
from vjboost._validation import check_array, check_consistent_length, check_in_range, check_labels
from vjboost.boost.binning import bin_values, compute_bin_edges
from vjboost.boost.ensemble import _TreeSum
from vjboost.boost.losses import LOSSES, MulticlassLoss, Problem, make_loss
from vjboost.boost.rounds import RoundResult, run_rounds
from vjboost.boost.sampling.base import Sampler
from vjboost.boost.search import SampledSearch
from vjboost.boost.source import FeatureSource, MatrixSource, Partition, PoolSource
from vjboost.boost.weak import TreeShape

__all__ = ["SampledBoostedClassifier", "problem_from_loss"]

_LOSS_NAMES = (*LOSSES, "mh")


def problem_from_loss(step: Any) -> Problem:
    """The :class:`~vjboost.boost.losses.Problem` of a one-problem loss at its current scores.

    Examples
    --------
    >>> from vjboost.boost.losses import make_loss
    >>> p = problem_from_loss(make_loss("discrete", [1, -1, 1, 1]))
    >>> p.criterion, p.weights.tolist(), p.response.tolist()
    ('discrete', [0.25, 0.25, 0.25, 0.25], [1.0, -1.0, 1.0, 1.0])
    >>> p = problem_from_loss(make_loss("logit", [1, -1, 1, 1]))
    >>> p.criterion, p.response.tolist()  # LogitBoost fits its working response
    ('regression', [2.0, -2.0, 2.0, 2.0])
    """
    return step.problems()[0]


class SampledBoostedClassifier(_TreeSum):
    """Boosting with adaptive sampling of features and examples.

    Parameters
    ----------
    sampler : str or Sampler, default="laminating"
        A :class:`~vjboost.boost.sampling.base.Sampler` or a name from
        :data:`vjboost.boost.sampling.SAMPLERS` (built with ``random_state``).
    loss : {"mh", "discrete", "real", "gentle", "logit"}, default="mh"
        ``"mh"``: AdaBoost.MH with vote vectors (any number of classes); the others need two
        classes.
    weak_learner : {"stump", "tree"}, default="stump"
        Trees have their features chosen node by node (each node spends ``budget``).
    max_depth : int, default=2
        Depth of trees.
    n_estimators : int, default=100
        Boosting rounds.
    budget : int, optional
        Feature evaluations per round and node (default ``10 * n_samples``, as in Dubout &
        Fleuret).
    n_bins : int, default=256
        Bins used by :meth:`fit` (raw features are quantized once; thresholds stay raw values).
    random_state : int, Generator or None
        Seed of the sampler when ``sampler`` is a name.
    threads : int, optional

    Attributes
    ----------
    estimators_ : list of Tree
        One per round.
    n_trees_per_round_ : int
        1 (AdaBoost.MH's trees carry a vote vector per leaf).
    classes_ : ndarray
    partition_ : Partition
    train_loss_ : ndarray (n_rounds,)
    cost_ : ndarray (n_rounds,), int64
        Feature evaluations spent by the sampler at each round.
    refit_cost_ : int
        Evaluations of the chosen features on all examples (``N`` per distinct chosen feature
        and round).
    times_ : ndarray (n_rounds,)
        Seconds since the start of training after each round.
    selections_ : list of dict
        The sampler's details of each round (of its first node).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 20))
    >>> y = (X[:, 3] > 0).astype(int)
    >>> clf = SampledBoostedClassifier(n_estimators=20, random_state=0)
    >>> clf.fit(X, y, families=[10, 10]).score(X, y) > 0.95    # two families of 10 features
    True
    >>> bool(clf.cost_.max() <= clf.budget_)                  # evaluations per round
    True
    """

    def __init__(
        self,
        *,
        sampler: str | Sampler = "laminating",
        loss: str = "mh",
        weak_learner: str = "stump",
        max_depth: int = 2,
        n_estimators: int = 100,
        budget: int | None = None,
        n_bins: int = 256,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self._store(locals())

    # -- fitting --------------------------------------------------------------------------

    def _make_sampler(self) -> Sampler:
        from vjboost.boost.sampling import make_sampler

        if isinstance(self.sampler, Sampler):
            return self.sampler
        if isinstance(self.sampler, str):
            return make_sampler(self.sampler, random_state=self.random_state)
        raise TypeError(f"sampler: expected a Sampler or a name, got {self.sampler!r}")

    def fit(self, X: Any, y: Any, *, families: Any = None) -> SampledBoostedClassifier:
        """Fit on ``X`` (n_samples, n_features).

        ``families``: a :class:`Partition`, per-feature family indices (n_features,), or family
        sizes (consecutive features); default one family.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature values, quantized once into ``n_bins`` bins (thresholds stay raw values).
        y : array-like of shape (n_samples,)
            Class labels (two classes unless ``loss="mh"``).
        families : Partition or array-like of int, optional
            The features' families, which the samplers choose among.

        Returns
        -------
        self
        """
        X = check_array(X, "X", ndim=2)
        y = np.asarray(y)
        check_consistent_length(X=X, y=y)
        check_memory(5 * X.size, f"feature-major copy and bins of X {X.shape}")
        raw = np.ascontiguousarray(X.T, dtype=np.float32)
        with n_threads(self.threads) as nt:
            edges = compute_bin_edges(raw, self.n_bins, threads=nt)
            bins = bin_values(raw, edges, threads=nt)
        return self.fit_source(MatrixSource(bins, edges=edges, families=families), y)

    def fit_feature_major(
        self, X: Any, y: Any, *, bin_edges: Any = None, families: Any = None
    ) -> SampledBoostedClassifier:
        """Fit on a feature-major matrix (float32 raw values, or uint8 bins with ``bin_edges``).

        Parameters
        ----------
        X : ndarray of shape (n_features, n_samples), float32 or uint8
            Feature values, one row per feature.
        y : array-like of shape (n_samples,)
            Class labels (two classes unless ``loss="mh"``).
        bin_edges : ndarray of shape (n_features, E), float32, optional
            Upper bin edges of a uint8 ``X``
            (:func:`vjboost.boost.binning.compute_bin_edges`).
        families : Partition or array-like of int, optional
            As for :meth:`fit`.

        Returns
        -------
        self
        """
        return self.fit_source(MatrixSource(np.asarray(X), edges=bin_edges, families=families), y)

    def fit_pool(self, pool: Any, windows: Any, y: Any) -> SampledBoostedClassifier:
        """Fit with features of a :class:`vjboost.features.pool.FeaturePool` evaluated lazily.

        ``windows``: raw windows or the pool's prepared channels. The pool's families are the
        partition; categorical (MB-LBP) features get categorical splits with the binary losses.

        Parameters
        ----------
        pool : FeaturePool
            The features, evaluated on demand for the sampled examples.
        windows : ndarray of shape (n_samples, H, W), uint8, or the pool's prepared channels
            The training windows (``H, W`` the pool's window shape).
        y : array-like of shape (n_samples,)
            Class labels (two classes unless ``loss="mh"``).

        Returns
        -------
        self
        """
        return self.fit_source(PoolSource(pool, windows, threads=self.threads), y)

    def fit_source(
        self, source: FeatureSource, y: Any, *, callback: Any = None,
    ) -> SampledBoostedClassifier:
        """Fit with any :class:`~vjboost.boost.source.FeatureSource` (the general entry point).

        ``callback(round, model)`` is called after every round (e.g. to record test error).

        Parameters
        ----------
        source : FeatureSource
            Feature values on demand, and the features' partition into families.
        y : array-like of shape (source.n_samples,)
            Class labels (two classes unless ``loss="mh"``).
        callback : callable, optional
            ``callback(t, self)`` after round ``t`` (0-based); its return value is ignored.

        Returns
        -------
        self
        """
        check_in_range(self.n_estimators, "n_estimators", low=1, integer=True)
        if self.loss not in _LOSS_NAMES:
            raise ValueError(f"loss: expected one of {sorted(_LOSS_NAMES)}, got {self.loss!r}")
        if self.weak_learner not in ("stump", "tree"):
            raise ValueError(f"weak_learner: expected 'stump' or 'tree', got "
                             f"{self.weak_learner!r}")
        if not isinstance(source, FeatureSource):
            raise TypeError("source: expected a FeatureSource")
        n = source.n_samples
        budget = 10 * n if self.budget is None else check_in_range(
            self.budget, "budget", low=1, integer=True)
        if self.loss == "mh":
            codes, classes = check_labels(y, "y", n_samples=n)
            step = MulticlassLoss(codes, n_classes=classes.size)
        else:
            codes, classes = check_labels(y, "y", n_samples=n, n_classes=2)
            step = make_loss(self.loss, 2.0 * codes - 1.0)
        shape = TreeShape.of(self.weak_learner, max_depth=self.max_depth)
        sampler = self._make_sampler()
        search = SampledSearch(sampler, source, budget, threads=self.threads)
        self.classes_ = classes
        # windows of a pool have no feature matrix to predict on: predict() says what does
        self._fitted_on_windows = isinstance(source, PoolSource)
        self.partition_: Partition = source.partition
        self.n_features_in_ = source.n_features
        self.sampler_ = sampler
        costs, times = [], []
        self.selections_: list[dict] = []
        t0 = time.perf_counter()

        def after_round(r: RoundResult) -> bool:
            costs.append(search.cost_)
            times.append(time.perf_counter() - t0)
            self.selections_.append(search.selections_[0] if search.selections_ else {})
            self.estimators_ = self.estimators_ + r.trees
            if callback is not None:
                callback(r.t, self)
            return False

        self.estimators_ = []
        with n_threads(self.threads):
            res = run_rounds(step, search, n_rounds=self.n_estimators, shape=shape,
                             callback=after_round)
        self.estimators_ = res.flat
        self.n_trees_per_round_ = 1
        self.refit_cost_ = search.refit_cost_
        self.train_loss_ = np.asarray(res.losses)
        self.cost_ = np.asarray(costs, dtype=np.int64)
        self.times_ = np.asarray(times)
        self.budget_ = budget
        self.fit_time_ = time.perf_counter() - t0
        return self

    # -- prediction (vjboost.boost.ensemble._TreeSum) ---------------------------------------

    @property
    def _multiclass(self) -> bool:
        return self.loss == "mh"

    def _fm(self, X: Any, feature_major: bool) -> np.ndarray:
        if getattr(self, "_fitted_on_windows", False) and np.ndim(X) != 2:
            # windows (or a pool's channels) given to predict / decision_function after
            # fit_pool: the generic "expected a 2-D array" does not say what to call instead
            raise ValueError(
                "X: this model was fitted on the windows of a feature pool (fit_pool); score "
                "new windows with predict_source(PoolSource(pool, windows)) or "
                "decision_function_source(...) (vjboost.boost.source.PoolSource), or pass "
                "a feature matrix (n_samples, n_features)")
        return super()._fm(X, feature_major)

    def decision_function_source(self, source: FeatureSource) -> np.ndarray:
        """Final scores on the examples of a :class:`FeatureSource` (e.g. a :class:`PoolSource`
        over new windows); only the features the model uses are evaluated.

        Parameters
        ----------
        source : FeatureSource
            The examples, with the features the model was fitted on (raw values, not bins).

        Returns
        -------
        ndarray of float64, shape (n_samples,) or (n_samples, n_classes)
            As :meth:`decision_function`.

        Examples
        --------
        >>> from vjboost.boost.source import PoolSource
        >>> from vjboost.features import FeaturePool, HaarFamily
        >>> rng = np.random.default_rng(0)
        >>> pool = FeaturePool([HaarFamily((8, 8))])
        >>> windows = rng.integers(0, 100, size=(200, 8, 8)).astype(np.uint8)
        >>> y = np.where(rng.random(200) < 0.5, 1, -1)
        >>> windows[y > 0, :4] += 100                             # positives: a brighter top
        >>> clf = SampledBoostedClassifier(loss="gentle", n_estimators=5, random_state=0)
        >>> clf = clf.fit_pool(pool, windows, y)
        >>> clf.decision_function_source(PoolSource(pool, windows)).shape
        (200,)
        """
        self.check_fitted()
        if source.n_features != self.n_features_in_:
            raise ValueError(
                f"source: has {source.n_features} features, the model was fitted with "
                f"{self.n_features_in_}"
            )
        if isinstance(source, MatrixSource) and source.edges is not None:
            raise ValueError("source: holds bins; the model's thresholds apply to raw values")
        used = np.unique([int(f) for e in self.estimators_ for f in e.features_])
        vals = np.asarray(source.values(used, np.arange(source.n_samples)))
        vals = vals.astype(np.float32, copy=False)
        f = self._zeros(source.n_samples)
        for est in self.estimators_:
            f += est.predict(vals[np.searchsorted(used, est.features_)])
        return f

    def predict_source(self, source: FeatureSource) -> np.ndarray:
        """Class labels of the examples of a :class:`FeatureSource` (e.g. a :class:`PoolSource`
        over new windows, for a model fitted with :meth:`fit_pool`).

        Parameters
        ----------
        source : FeatureSource
            The examples, with the features the model was fitted on (raw values, not bins).

        Returns
        -------
        ndarray of shape (n_samples,)
            Entries of ``classes_``, as :meth:`predict`.

        Examples
        --------
        >>> from vjboost.boost.source import PoolSource
        >>> from vjboost.features import FeaturePool, HaarFamily
        >>> rng = np.random.default_rng(0)
        >>> pool = FeaturePool([HaarFamily((8, 8))])
        >>> windows = rng.integers(0, 100, size=(200, 8, 8)).astype(np.uint8)
        >>> y = np.where(rng.random(200) < 0.5, "face", "background")
        >>> windows[y == "face", :4] += 100                       # faces: a brighter top
        >>> clf = SampledBoostedClassifier(loss="gentle", n_estimators=5, random_state=0)
        >>> clf = clf.fit_pool(pool, windows, y)
        >>> bool((clf.predict_source(PoolSource(pool, windows)) == y).mean() > 0.95)
        True
        """
        return self._classes_of(self.decision_function_source(source))
