"""A boosted classifier whose weak learners are chosen by a sampler under a cost budget.

Each round: the loss step (:mod:`vjboost.boost.losses`) gives the weights; the sampler spends at
most ``budget`` feature evaluations through the :class:`EdgeEvaluator` and returns a stump found
on sampled examples; the stump's feature is evaluated on all ``N`` examples (``N`` evaluations,
recorded separately as ``refit_cost_``) and its leaves (binary losses) or vote vector and
coefficient (AdaBoost.MH) are refitted on all examples before the scores are updated.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from vjboost._memory import check_memory
from vjboost._threads import n_threads
from vjboost._validation import (
    check_array,
    check_binary_labels,
    check_consistent_length,
    check_in_range,
)
from vjboost.boost.binning import bin_values, compute_bin_edges
from vjboost.boost.learners import CategoricalStump, MulticlassStump, Stump
from vjboost.boost.losses import LOSSES, MulticlassLoss, make_loss
from vjboost.boost.sampling.base import Sampler
from vjboost.boost.sampling.evaluator import (
    EdgeEvaluator,
    FeatureSource,
    MatrixSource,
    Partition,
    RoundProblem,
    WeakLearner,
)

__all__ = ["SampledBoostedClassifier", "problem_from_loss"]

_LOSS_NAMES = (*LOSSES, "mh")


def problem_from_loss(step: Any) -> RoundProblem:
    """The :class:`RoundProblem` of a loss step object at its current scores."""
    if isinstance(step, MulticlassLoss):
        return RoundProblem(step.weights, step.Y, "multiclass")
    return RoundProblem(step.weights, step.response, step.criterion)


def _as_partition(families: Any, n_features: int) -> Partition:
    if families is None:
        return Partition.single(n_features)
    if isinstance(families, Partition):
        part = families
    elif hasattr(families, "family_sizes") and hasattr(families, "families"):
        part = Partition.from_sizes(families.family_sizes(), [f.name for f in families.families])
    else:
        arr = np.asarray(families)
        if arr.ndim == 1 and arr.size == n_features:
            part = Partition(arr)
        else:
            part = Partition.from_sizes(list(arr.reshape(-1)))
    if part.n_features != n_features:
        raise ValueError(
            f"families: the partition covers {part.n_features} features, the data has {n_features}"
        )
    return part


class SampledBoostedClassifier:
    """Boosting with adaptive sampling of features and examples.

    Parameters
    ----------
    sampler : str or Sampler, default="laminating"
        A :class:`~vjboost.boost.sampling.base.Sampler` or a name from
        :data:`vjboost.boost.sampling.SAMPLERS` (built with ``random_state``).
    loss : {"mh", "discrete", "real", "gentle", "logit"}, default="mh"
        ``"mh"``: AdaBoost.MH (any number of classes); the others need two classes.
    n_estimators : int, default=100
        Boosting rounds.
    budget : int, optional
        Feature evaluations per round (default ``10 * n_samples``, as in Dubout & Fleuret).
    n_bins : int, default=256
        Bins used by :meth:`fit` (raw features are quantized once; thresholds stay raw values).
    random_state : int, Generator or None
        Seed of the sampler when ``sampler`` is a name.
    threads : int, optional

    Attributes
    ----------
    estimators_ : list of Stump / CategoricalStump / MulticlassStump
    classes_ : ndarray
    partition_ : Partition
    train_loss_ : ndarray (n_rounds,)
    cost_ : ndarray (n_rounds,), int64
        Feature evaluations spent by the sampler at each round.
    refit_cost_ : int
        Evaluations of the chosen features on all examples (``N`` per round).
    times_ : ndarray (n_rounds,)
        Seconds since the start of training after each round.
    selections_ : list of dict
        The sampler's details of each round.
    """

    def __init__(
        self,
        *,
        sampler: str | Sampler = "laminating",
        loss: str = "mh",
        n_estimators: int = 100,
        budget: int | None = None,
        n_bins: int = 256,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self.sampler = sampler
        self.loss = loss
        self.n_estimators = n_estimators
        self.budget = budget
        self.n_bins = n_bins
        self.random_state = random_state
        self.threads = threads

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in (
            "sampler", "loss", "n_estimators", "budget", "n_bins", "random_state", "threads")}

    def set_params(self, **params: Any) -> SampledBoostedClassifier:
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}")
            setattr(self, k, v)
        return self

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
        """
        X = check_array(X, "X", ndim=2)
        y = np.asarray(y)
        check_consistent_length(X=X, y=y)
        check_memory(5 * X.size, f"feature-major copy and bins of X {X.shape}")
        raw = np.ascontiguousarray(X.T, dtype=np.float32)
        with n_threads(self.threads) as nt:
            edges = compute_bin_edges(raw, self.n_bins, threads=nt)
            bins = bin_values(raw, edges, threads=nt)
        return self.fit_source(MatrixSource(bins, edges), y, families=families)

    def fit_feature_major(
        self, X: Any, y: Any, *, bin_edges: Any = None, families: Any = None
    ) -> SampledBoostedClassifier:
        """Fit on a feature-major matrix (float32 raw values, or uint8 bins with ``bin_edges``)."""
        return self.fit_source(MatrixSource(np.asarray(X), bin_edges), y, families=families)

    def fit_pool(
        self, pool: Any, windows: Any, y: Any, *, channels: Any = None
    ) -> SampledBoostedClassifier:
        """Fit with features of a :class:`vjboost.features.pool.FeaturePool` evaluated lazily.

        The pool's families are the partition; categorical (MB-LBP) features get categorical
        splits with the binary losses.
        """
        from vjboost.boost.sampling.evaluator import PoolSource

        if channels is None:
            channels = pool.prepare(windows, threads=self.threads)
        n = int(channels.n_samples)
        source = PoolSource(pool, channels, n)
        cat = np.asarray(pool.kinds(), dtype=bool) if hasattr(pool, "kinds") else None
        return self.fit_source(source, y, families=pool, categorical=cat)

    def fit_source(
        self, source: FeatureSource, y: Any, *, families: Any = None, categorical: Any = None,
        callback: Any = None,
    ) -> SampledBoostedClassifier:
        """Fit with any :class:`FeatureSource` (the general entry point).

        ``callback(round, model)`` is called after every round (e.g. to record test error).
        """
        check_in_range(self.n_estimators, "n_estimators", low=1, integer=True)
        if self.loss not in _LOSS_NAMES:
            raise ValueError(f"loss: expected one of {sorted(_LOSS_NAMES)}, got {self.loss!r}")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != source.n_samples:
            raise ValueError(
                f"y: expected {source.n_samples} labels (one per example), got shape {y.shape}"
            )
        n = source.n_samples
        budget = 10 * n if self.budget is None else check_in_range(
            self.budget, "budget", low=1, integer=True)
        part = _as_partition(families, source.n_features)
        if self.loss == "mh":
            classes, labels = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise ValueError(f"y: only one class present ({classes[0]!r}); need at least two")
            step = MulticlassLoss(labels.astype(np.int64), classes.size)
        else:
            y_pm, classes = check_binary_labels(y)
            step = make_loss(self.loss, y_pm)
        evaluator = EdgeEvaluator(source, part, categorical=categorical, threads=self.threads)
        sampler = self._make_sampler()
        binned = isinstance(source, MatrixSource) and source.matrix.dtype == np.uint8
        if binned and source.edges is None:
            raise ValueError("X: a uint8 matrix needs its bin_edges (thresholds are raw values)")
        self.classes_ = classes
        self.partition_ = part
        self.n_features_in_ = source.n_features
        self.estimators_: list = []
        losses, costs, times = [], [], []
        self.selections_: list[dict] = []
        self.refit_cost_ = 0
        self.sampler_ = sampler
        t0 = time.perf_counter()
        with n_threads(self.threads):
            sampler.start(evaluator, budget)
            for t in range(self.n_estimators):
                evaluator.set_problem(problem_from_loss(step))
                sel = sampler.select(evaluator, budget)
                column = evaluator.column(sel.learner.feature)[None, :]
                self.refit_cost_ += n
                est, cur = self._refit(step, sel.learner, column, binned)
                self.estimators_.append(est)
                losses.append(cur)
                costs.append(sel.cost)
                times.append(time.perf_counter() - t0)
                self.selections_.append(sel.info)
                if callback is not None:
                    callback(t, self)
        for est in self.estimators_:
            if isinstance(est, MulticlassStump):
                est.split_bin = None
            else:
                est.split_bins = None
        self.train_loss_ = np.asarray(losses)
        self.cost_ = np.asarray(costs, dtype=np.int64)
        self.times_ = np.asarray(times)
        self.budget_ = budget
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _refit(self, step, wl: WeakLearner, column: np.ndarray, binned: bool):
        if isinstance(step, MulticlassLoss):
            est = MulticlassStump(wl.feature, wl.threshold, wl.votes, 1.0, split_bin=wl.split_bin,
                                  score=wl.edge)
            phi = est.phi(column, binned=binned)
            # votes refitted on all examples: the sign of each class's weighted correlation
            corr = (step.weights * step.Y * phi[:, None]).sum(axis=0)
            est.votes = np.where(corr >= 0, 1.0, -1.0)
            est.alpha = step.fit_alpha(phi, est.votes)
            cur = step.update(est.alpha * phi[:, None] * est.votes[None, :])
            return est, cur
        if wl.subset is not None and np.any(wl.subset):
            est = CategoricalStump(wl.feature, wl.subset, wl.left_value, wl.right_value,
                                   score=wl.edge)
            codes = column.astype(np.uint8) if column.dtype != np.uint8 else column
            cur = step.refit_and_update(est, codes)
            return est, cur
        est = Stump(wl.feature, wl.threshold, wl.left_value, wl.right_value,
                    split_bin=wl.split_bin if binned else None, score=wl.edge)
        cur = step.refit_and_update(est, column, binned=binned)
        return est, cur

    # -- prediction -----------------------------------------------------------------------

    def _fm(self, X: Any, feature_major: bool) -> np.ndarray:
        X = check_array(X, "X", ndim=2)
        nf = X.shape[0] if feature_major else X.shape[1]
        if nf != self.n_features_in_:
            raise ValueError(
                f"X: has {nf} features, the model was fitted with {self.n_features_in_}"
            )
        return np.ascontiguousarray(X if feature_major else X.T, dtype=np.float32)

    def _zeros(self, n: int) -> np.ndarray:
        return np.zeros((n, self.classes_.size)) if self.loss == "mh" else np.zeros(n)

    def staged_decision_function(
        self, X: Any, *, feature_major: bool = False
    ) -> Iterator[np.ndarray]:
        """Scores after each round: (n_samples, K) for AdaBoost.MH, (n_samples,) otherwise."""
        Xfm = self._fm(X, feature_major)
        f = self._zeros(Xfm.shape[1])
        for est in self.estimators_:
            f = f + est.predict_matrix(Xfm)
            yield f

    def decision_function(self, X: Any, *, feature_major: bool = False) -> np.ndarray:
        """Final scores: (n_samples, K) for AdaBoost.MH, (n_samples,) otherwise."""
        Xfm = self._fm(X, feature_major)
        f = self._zeros(Xfm.shape[1])
        for est in self.estimators_:
            f += est.predict_matrix(Xfm)
        return f

    def decision_function_source(self, source: FeatureSource) -> np.ndarray:
        """Final scores on the examples of a :class:`FeatureSource` (e.g. a :class:`PoolSource`
        over new windows); only the features the model uses are evaluated."""
        if source.n_features != self.n_features_in_:
            raise ValueError(
                f"source: has {source.n_features} features, the model was fitted with "
                f"{self.n_features_in_}"
            )
        used = np.unique([int(f) for e in self.estimators_ for f in e.features_])
        vals = np.asarray(source.values(used, np.arange(source.n_samples)))
        if isinstance(source, MatrixSource) and source.edges is not None:
            raise ValueError("source: holds bins; the model's thresholds apply to raw values")
        vals = vals.astype(np.float32, copy=False)
        f = self._zeros(source.n_samples)
        for est in self.estimators_:
            rows = vals[np.searchsorted(used, est.features_)]
            f += est.predict(rows)
        return f

    def predict(self, X: Any, *, feature_major: bool = False) -> np.ndarray:
        f = self.decision_function(X, feature_major=feature_major)
        if self.loss == "mh":
            return self.classes_[np.argmax(f, axis=1)]
        return self.classes_[(f > 0).astype(np.intp)]

    def score(self, X: Any, y: Any) -> float:
        """Accuracy."""
        return float(np.mean(self.predict(X) == np.asarray(y)))
