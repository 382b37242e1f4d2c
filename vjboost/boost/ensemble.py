"""Boosted classifiers with a scikit-learn-style API on a dense feature matrix.

:class:`BoostedClassifier` — two classes, Discrete/Real/Gentle AdaBoost or LogitBoost over stumps,
small trees, categorical stumps or Real AdaBoost histograms. :class:`AdaBoostMH` — K classes.

Both take ``X`` of shape (n_samples, n_features) in ``fit``/``predict`` (transposed internally to
the feature-major layout the kernels use), or a feature-major matrix in ``fit_feature_major``
(float32 raw values, or uint8 bins with their edges — no copy of a large precomputed matrix).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from vjboost._memory import check_memory
from vjboost._validation import (
    check_array,
    check_binary_labels,
    check_consistent_length,
    check_in_range,
    check_random_state,
    check_sample_weight,
)
from vjboost.boost.binning import bin_values, compute_bin_edges
from vjboost.boost.learners import MulticlassStump
from vjboost.boost.losses import LOSSES, MulticlassLoss, make_loss
from vjboost.boost.stumps import search_multiclass_stumps
from vjboost.boost.weak import WEAK_LEARNERS, fit_weak_learner

__all__ = ["AdaBoostMH", "BoostedClassifier"]


def _check_X(X: Any, name: str = "X") -> np.ndarray:
    X = check_array(X, name, ndim=2)
    if X.shape[1] == 0:
        raise ValueError(f"{name}: has no features (shape {X.shape})")
    return X


def _feature_major(X: np.ndarray) -> np.ndarray:
    check_memory(
        4 * X.size, f"feature-major copy of X ({X.shape[1]} x {X.shape[0]} float32)",
        advice="Pass fewer features or examples, or a precomputed uint8 matrix to "
        "fit_feature_major.",
    )
    return np.ascontiguousarray(X.T, dtype=np.float32)


def _check_binning(binning: Any) -> bool:
    if isinstance(binning, (bool, np.bool_)):
        return bool(binning)
    raise ValueError(f"binning: expected True or False, got {binning!r}")


def _draw_rows(rng, n_features: int, max_features: Any) -> np.ndarray | None:
    if max_features is None:
        return None
    if isinstance(max_features, float):
        m = max(1, int(round(max_features * n_features)))
    else:
        m = min(int(max_features), n_features)
    if m >= n_features:
        return None
    return np.sort(rng.choice(n_features, size=m, replace=False)).astype(np.int64)


def _check_max_features(max_features: Any) -> None:
    if max_features is None:
        return
    if isinstance(max_features, float):
        check_in_range(max_features, "max_features", low=0.0, high=1.0, low_inclusive=False)
    else:
        check_in_range(max_features, "max_features", low=1, integer=True)


class _BaseBoost:
    def _prepare_fm(self, Xfm: Any, bin_edges: Any, n_samples: int):
        """Validate a feature-major matrix; returns (values, edges or None)."""
        Xfm = np.asarray(Xfm)
        if Xfm.dtype == np.uint8:
            Xfm = check_array(Xfm, "X", ndim=2)
            if bin_edges is None:
                raise ValueError("bin_edges: required with a uint8 (binned) matrix")
            edges = check_array(bin_edges, "bin_edges", ndim=2, dtype=np.float32, finite=False)
            if edges.shape[0] != Xfm.shape[0]:
                raise ValueError(
                    f"bin_edges: has {edges.shape[0]} rows but X has {Xfm.shape[0]} features"
                )
            if np.isnan(edges).any():
                raise ValueError("bin_edges: contains NaN")
            return np.ascontiguousarray(Xfm), np.ascontiguousarray(edges)
        if bin_edges is not None:
            raise ValueError("bin_edges: only used with a uint8 (binned) matrix")
        Xfm = check_array(Xfm, "X", ndim=2, dtype=np.float32)
        return np.ascontiguousarray(Xfm), None

    def _bin(self, Xfm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        edges = compute_bin_edges(Xfm, self.n_bins, threads=self.threads)
        return bin_values(Xfm, edges, threads=self.threads), edges

    def _check_n_features(self, X: np.ndarray, feature_major: bool = False) -> None:
        if not hasattr(self, "estimators_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit first")
        n = X.shape[0] if feature_major else X.shape[1]
        if n != self.n_features_in_:
            raise ValueError(f"X: has {n} features, but the model was fitted with "
                             f"{self.n_features_in_}")


class BoostedClassifier(_BaseBoost):
    """Two-class boosting: Discrete, Real, Gentle AdaBoost or LogitBoost.

    Parameters
    ----------
    loss : {"gentle", "discrete", "real", "logit"}, default="gentle"
    weak_learner : {"stump", "tree", "histogram"}, default="stump"
        ``"histogram"`` is Real AdaBoost's domain-partitioning learner (``loss="real"`` only).
    max_depth : int, default=2
        Depth of trees (``weak_learner="tree"``), as OpenCV's ``maxDepth``.
    n_estimators : int, default=100
        Number of boosting rounds.
    binning : bool, default=True
        Quantize every feature to ``n_bins`` quantile bins and use the histogram stump search
        (``True``), or sort and search all thresholds exactly (``False``). Binning is lossless
        for features with at most ``n_bins`` distinct values (each value gets its own bin and the
        thresholds are the same midpoints as the exact search's).
    n_bins : int, default=256
        Bins per feature (2 to 256).
    n_parts : int, default=8
        Parts of the histogram learner.
    balanced_init : bool, default=False
        Positives and negatives each start with total weight 1/2 (cascade setting).
    weight_trim_rate : float, default=1.0
        Fit each weak learner on the heaviest examples carrying this fraction of the weight
        (OpenCV's ``weightTrimRate``, e.g. 0.95); coefficients are refitted on all examples.
    max_features : int or float, optional
        Features tried per round (an int, or a fraction), drawn at random with ``random_state``.
        Default: all (exhaustive).
    categorical_features : array-like of int or bool mask, optional
        Features holding categorical codes 0..255 (e.g. MB-LBP): split by 256-way subsets.
    random_state : int, numpy Generator or None
    threads : int, optional
        Numba threads (``None``: all).

    Attributes
    ----------
    estimators_ : list of weak learners
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    train_loss_ : ndarray of shape (n_rounds,)
        Training loss after each round (exponential loss; LogitBoost: logistic loss).
    edges_ : ndarray of shape (n_rounds,)
        Discrete AdaBoost: weighted edge ``gamma_t`` of each weak learner (else NaN).
    feature_importances_ : ndarray of shape (n_features,)
        Training-loss decrease attributed to each feature (split among a tree's nodes by their
        split scores), normalised to sum to one.
    bin_edges_ : ndarray or None
        Bin edges used for training.
    fit_time_ : float
        Seconds spent in ``fit``.
    """

    def __init__(
        self,
        *,
        loss: str = "gentle",
        weak_learner: str = "stump",
        max_depth: int = 2,
        n_estimators: int = 100,
        binning: bool = True,
        n_bins: int = 256,
        n_parts: int = 8,
        balanced_init: bool = False,
        weight_trim_rate: float = 1.0,
        max_features: int | float | None = None,
        categorical_features: Any = None,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self.loss = loss
        self.weak_learner = weak_learner
        self.max_depth = max_depth
        self.n_estimators = n_estimators
        self.binning = binning
        self.n_bins = n_bins
        self.n_parts = n_parts
        self.balanced_init = balanced_init
        self.weight_trim_rate = weight_trim_rate
        self.max_features = max_features
        self.categorical_features = categorical_features
        self.random_state = random_state
        self.threads = threads

    # sklearn-compatible parameter access
    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in (
            "loss", "weak_learner", "max_depth", "n_estimators", "binning", "n_bins", "n_parts",
            "balanced_init", "weight_trim_rate", "max_features", "categorical_features",
            "random_state", "threads",
        )}

    def set_params(self, **params: Any) -> BoostedClassifier:
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}")
            setattr(self, k, v)
        return self

    def _validate_params(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss: expected one of {sorted(LOSSES)}, got {self.loss!r}")
        if self.weak_learner not in WEAK_LEARNERS:
            raise ValueError(
                f"weak_learner: expected one of {WEAK_LEARNERS}, got {self.weak_learner!r}"
            )
        if self.weak_learner == "histogram" and self.loss != "real":
            raise ValueError("weak_learner: 'histogram' needs loss='real'")
        check_in_range(self.max_depth, "max_depth", low=1, high=8, integer=True)
        check_in_range(self.n_estimators, "n_estimators", low=1, integer=True)
        check_in_range(self.n_bins, "n_bins", low=2, high=256, integer=True)
        check_in_range(self.n_parts, "n_parts", low=2, high=256, integer=True)
        check_in_range(self.weight_trim_rate, "weight_trim_rate", low=0.0, high=1.0,
                       low_inclusive=False)
        if not isinstance(self.balanced_init, (bool, np.bool_)):
            raise TypeError(f"balanced_init: expected a bool, got {self.balanced_init!r}")
        _check_max_features(self.max_features)

    def _categorical_mask(self, n_features: int) -> np.ndarray | None:
        cf = self.categorical_features
        if cf is None:
            return None
        arr = np.asarray(cf)
        if arr.dtype == bool:
            if arr.shape != (n_features,):
                raise ValueError(
                    f"categorical_features: boolean mask must have {n_features} entries"
                )
            return arr.copy()
        if arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise ValueError("categorical_features: expected feature indices or a boolean mask")
        if arr.size and (arr.min() < 0 or arr.max() >= n_features):
            raise ValueError(f"categorical_features: indices must be in [0, {n_features})")
        mask = np.zeros(n_features, bool)
        mask[arr] = True
        return mask

    # ---- fitting ------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> BoostedClassifier:
        """Fit on ``X`` of shape (n_samples, n_features) and labels ``y`` (two classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite feature values.
        y : array-like of shape (n_samples,)
            Two distinct labels; the larger one is the positive class.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative, not all zero.
        """
        X = _check_X(X)
        y_arr = np.asarray(y)
        check_consistent_length(X=X, y=y_arr)
        return self._fit(_feature_major(X), None, y_arr, sample_weight, already_binned=False)

    def fit_feature_major(
        self, X: Any, y: Any, sample_weight: Any = None, *, bin_edges: Any = None
    ) -> BoostedClassifier:
        """Fit on a feature-major matrix ``X`` of shape (n_features, n_samples).

        ``X`` is float32 raw values, or uint8 bins together with their ``bin_edges``
        (n_features, E) from :func:`vjboost.boost.binning.compute_bin_edges` (then training
        uses it as is, without any copy, and the learned thresholds are raw values).
        """
        Xfm, edges = self._prepare_fm(X, bin_edges, 0)
        y_arr = np.asarray(y)
        if y_arr.ndim == 1 and y_arr.shape[0] != Xfm.shape[1]:
            raise ValueError(
                f"inconsistent numbers of samples: X has {Xfm.shape[1]} columns, "
                f"y has {y_arr.shape[0]}"
            )
        return self._fit(Xfm, edges, y_arr, sample_weight, already_binned=edges is not None)

    def _fit(self, Xfm, edges, y, sample_weight, *, already_binned: bool) -> BoostedClassifier:
        t0 = time.perf_counter()
        self._validate_params()
        y_pm, classes = check_binary_labels(y)
        n_features, n_samples = Xfm.shape
        w0 = check_sample_weight(sample_weight, n_samples)
        cat = self._categorical_mask(n_features)
        if cat is not None and cat.any():
            codes = Xfm[cat]
            if codes.dtype != np.uint8 and (
                (codes < 0).any() or (codes > 255).any() or (codes != np.round(codes)).any()
            ):
                raise ValueError("X: categorical features must hold integer codes 0..255")
        rng = check_random_state(self.random_state)
        if not already_binned and _check_binning(self.binning):
            check_memory(Xfm.size, f"binned matrix ({n_features} x {n_samples} uint8)")
            raw = Xfm
            Xb, edges = self._bin(raw)
            if cat is not None and cat.any():
                Xb[cat] = raw[cat].astype(np.uint8)
                edges[cat] = np.inf
            Xfm = Xb
        binned = Xfm.dtype == np.uint8
        step = make_loss(self.loss, y_pm, w0, balanced_init=self.balanced_init)
        self.estimators_ = []
        losses, edges_t = [], []
        importances = np.zeros(n_features)
        prev = step.loss()
        kind = self.weak_learner
        nt = self.threads  # each search picks its thread count (see stumps)
        for _ in range(self.n_estimators):
            ids = None if self.weight_trim_rate >= 1.0 else step.trim(self.weight_trim_rate)
            rows = _draw_rows(rng, n_features, self.max_features)
            learner, _search = fit_weak_learner(
                step, Xfm, kind=kind, max_depth=self.max_depth, sample_ids=ids, rows=rows,
                categorical=cat, edges=edges, n_parts=self.n_parts, threads=nt,
            )
            if learner is None:
                break
            cur = step.refit_and_update(learner, Xfm[learner.features_], binned=binned)
            self.estimators_.append(learner)
            losses.append(cur)
            edges_t.append(getattr(step, "last_edge", np.nan) if self.loss == "discrete"
                           else np.nan)
            ns = np.maximum(np.asarray(learner.node_scores, dtype=np.float64), 0.0)
            share = ns / ns.sum() if ns.sum() > 0 else np.full(ns.size, 1.0 / ns.size)
            np.add.at(importances, np.asarray(learner.node_features), (prev - cur) * share)
            prev = cur
            if self.loss == "discrete" and step.last_edge >= 1.0:
                break  # a perfect weak learner: the weights are degenerate from here on
        if not self.estimators_:
            raise ValueError("X: no feature can split the training examples (all constant?)")
        # thresholds are raw values, so the fitted model never needs the bins again
        for est in self.estimators_:
            est.split_bins = None
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.train_loss_ = np.asarray(losses)
        self.edges_ = np.asarray(edges_t)
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances
        self.bin_edges_ = edges
        self.train_scores_ = step.scores.copy()
        self.fit_time_ = time.perf_counter() - t0
        return self

    # ---- prediction ---------------------------------------------------------------------
    def _fm(self, X: Any, feature_major: bool) -> np.ndarray:
        X = _check_X(X)
        self._check_n_features(X, feature_major)
        return np.ascontiguousarray(X if feature_major else X.T, dtype=np.float32)

    def staged_decision_function(
        self, X: Any, *, feature_major: bool = False
    ) -> Iterator[np.ndarray]:
        """Scores (n_samples,) after each round."""
        Xfm = self._fm(X, feature_major)
        f = np.zeros(Xfm.shape[1])
        for est in self.estimators_:
            f = f + est.predict_matrix(Xfm)
            yield f

    def decision_function(self, X: Any, *, feature_major: bool = False) -> np.ndarray:
        """Strong-classifier score (n_samples,): positive means the positive class."""
        Xfm = self._fm(X, feature_major)
        f = np.zeros(Xfm.shape[1])
        for est in self.estimators_:
            f += est.predict_matrix(Xfm)
        return f

    def predict(self, X: Any, *, feature_major: bool = False) -> np.ndarray:
        """Class labels: ``classes_[1]`` where the score is > 0."""
        f = self.decision_function(X, feature_major=feature_major)
        return self.classes_[(f > 0).astype(np.intp)]

    def predict_proba(self, X: Any, *, feature_major: bool = False) -> np.ndarray:
        """Probabilities ``1 / (1 + exp(-2F))`` (the logistic link of all four losses)."""
        p = 1.0 / (1.0 + np.exp(-2.0 * self.decision_function(X, feature_major=feature_major)))
        return np.stack([1.0 - p, p], axis=1)

    def score(self, X: Any, y: Any) -> float:
        """Accuracy."""
        return float(np.mean(self.predict(X) == np.asarray(y)))

    # ---- saving -------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-serialisable model (weak learners and classes)."""
        self._check_n_features(np.zeros((0, self.n_features_in_)))
        return {
            "type": "BoostedClassifier",
            "params": {k: v for k, v in self.get_params().items()
                       if k not in ("random_state", "categorical_features")},
            "classes": self.classes_.tolist(),
            "n_features": self.n_features_in_,
            "estimators": [e.to_dict() for e in self.estimators_],
            "train_loss": self.train_loss_.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> BoostedClassifier:
        from vjboost.boost.learners import learner_from_dict

        if d.get("type") != "BoostedClassifier":
            raise ValueError("d: not a BoostedClassifier dict")
        model = cls(**d["params"])
        model.classes_ = np.asarray(d["classes"])
        model.n_features_in_ = int(d["n_features"])
        model.estimators_ = [learner_from_dict(e) for e in d["estimators"]]
        model.train_loss_ = np.asarray(d["train_loss"])
        return model


class AdaBoostMH(_BaseBoost):
    """Multi-class AdaBoost.MH (Schapire & Singer) with stumps and {-1, +1} vote vectors.

    Each round picks the stump ``phi`` (-1 left / +1 right) and vote vector ``v`` maximising the
    edge ``gamma = sum_ik w_ik Y_ik v_k phi(x_i)`` and adds ``alpha v phi(x)`` with
    ``alpha = 1/2 ln((1 + gamma)/(1 - gamma))``.

    Parameters
    ----------
    n_estimators : int, default=100
    binning : bool, default=True
    n_bins : int, default=256
    weight_trim_rate : float, default=1.0
    max_features : int or float, optional
    random_state : int, Generator or None
    threads : int, optional

    Attributes
    ----------
    estimators_ : list of MulticlassStump
    classes_ : ndarray of shape (K,)
    n_features_in_ : int
    train_loss_ : ndarray (n_rounds,)
        ``sum_ik w0_ik exp(-Y_ik F_ik)`` after each round.
    edges_ : ndarray (n_rounds,)
        Edge ``gamma`` of each round (on all examples).
    feature_importances_ : ndarray (n_features,)
    """

    def __init__(
        self,
        *,
        n_estimators: int = 100,
        binning: bool = True,
        n_bins: int = 256,
        weight_trim_rate: float = 1.0,
        max_features: int | float | None = None,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.binning = binning
        self.n_bins = n_bins
        self.weight_trim_rate = weight_trim_rate
        self.max_features = max_features
        self.random_state = random_state
        self.threads = threads

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in (
            "n_estimators", "binning", "n_bins", "weight_trim_rate", "max_features",
            "random_state", "threads",
        )}

    def set_params(self, **params: Any) -> AdaBoostMH:
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}")
            setattr(self, k, v)
        return self

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> AdaBoostMH:
        """Fit on ``X`` (n_samples, n_features) and ``y`` with at least two classes."""
        X = _check_X(X)
        y = np.asarray(y)
        check_consistent_length(X=X, y=y)
        if y.ndim != 1:
            raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            raise ValueError("y: labels contain NaN or infinite values")
        t0 = time.perf_counter()
        check_in_range(self.n_estimators, "n_estimators", low=1, integer=True)
        check_in_range(self.n_bins, "n_bins", low=2, high=256, integer=True)
        check_in_range(self.weight_trim_rate, "weight_trim_rate", low=0.0, high=1.0,
                       low_inclusive=False)
        _check_max_features(self.max_features)
        classes, labels = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"y: only one class present ({classes[0]!r}); need at least two")
        step = MulticlassLoss(labels.astype(np.int64), classes.size, sample_weight)
        Xfm = _feature_major(X)
        n_features, n_samples = Xfm.shape
        edges = None
        if _check_binning(self.binning):
            Xfm, edges = self._bin(Xfm)
        binned = edges is not None
        rng = check_random_state(self.random_state)
        self.estimators_, losses, gammas = [], [], []
        importances = np.zeros(n_features)
        prev = step.loss()
        nt = self.threads  # each search picks its thread count (see stumps)
        for _ in range(self.n_estimators):
            ids = None if self.weight_trim_rate >= 1.0 else step.trim(self.weight_trim_rate)
            rows = _draw_rows(rng, n_features, self.max_features)
            s = search_multiclass_stumps(
                Xfm, step.weighted_labels, edges=edges, feature_ids=rows, sample_ids=ids,
                threads=nt,
            )
            j = s.best()
            if j < 0:
                break
            f = int(s.feature_ids[j])
            sb = int(s.split_bin[j]) if binned else None
            learner = MulticlassStump(f, s.threshold[j], s.votes[j], 1.0, split_bin=sb,
                                      score=float(s.score[j]))
            phi = learner.phi(Xfm[f : f + 1], binned=binned)
            learner.alpha = step.fit_alpha(phi, learner.votes)
            cur = step.update(learner.alpha * phi[:, None] * learner.votes[None, :])
            self.estimators_.append(learner)
            losses.append(cur)
            gammas.append(step.last_edge)
            importances[f] += prev - cur
            prev = cur
            if step.last_edge >= 1.0:
                break
        if not self.estimators_:
            raise ValueError("X: no feature can split the training examples (all constant?)")
        for est in self.estimators_:
            est.split_bin = None
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.train_loss_ = np.asarray(losses)
        self.edges_ = np.asarray(gammas)
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances
        self.bin_edges_ = edges
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _fm(self, X: Any) -> np.ndarray:
        X = _check_X(X)
        self._check_n_features(X)
        return np.ascontiguousarray(X.T, dtype=np.float32)

    def staged_decision_function(self, X: Any) -> Iterator[np.ndarray]:
        """Scores (n_samples, K) after each round."""
        Xfm = self._fm(X)
        f = np.zeros((Xfm.shape[1], self.classes_.size))
        for est in self.estimators_:
            f = f + est.predict_matrix(Xfm)
            yield f

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores (n_samples, K); the predicted class has the largest score."""
        Xfm = self._fm(X)
        f = np.zeros((Xfm.shape[1], self.classes_.size))
        for est in self.estimators_:
            f += est.predict_matrix(Xfm)
        return f

    def predict(self, X: Any) -> np.ndarray:
        """Class with the largest score."""
        f = self.decision_function(X)
        return self.classes_[np.argmax(f, axis=1)]

    def score(self, X: Any, y: Any) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))
