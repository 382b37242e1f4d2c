"""Boosted classifiers with a scikit-learn-style API on a dense feature matrix.

* :class:`BoostedClassifier` — two classes: Discrete, Real, Gentle AdaBoost or LogitBoost.
* :class:`AdaBoostMH` — K classes, AdaBoost.MH in its discrete (vote vectors), real and gentle
  forms (Schapire & Singer; the multi-class versions compared by Friedman, Hastie & Tibshirani).
* :class:`LogitBoostClassifier` — K classes, the J-class LogitBoost of Friedman, Hastie &
  Tibshirani (2000): one least-squares learner per class and round, centred, softmax.

Weak learners are stumps, depth-k trees (``weak_learner="tree", max_depth=k``), best-first trees
with ``max_leaves`` terminal nodes, or Real AdaBoost's domain partitions (``"histogram"``); all
are :class:`~vjboost.boost.tree.Tree` objects in ``estimators_`` and the score is the plain sum
of their outputs. Every estimator runs the one round loop (:func:`vjboost.boost.rounds.
run_rounds`) over a :class:`~vjboost.boost.search.MatrixSearch`.

``fit`` takes ``X`` of shape (n_samples, n_features) (transposed once to the feature-major layout
the kernels use); ``fit_feature_major`` takes a feature-major matrix (float32 raw values, or uint8
bins with their edges — no copy of a large precomputed matrix).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from vjboost._estimator import ClassifierMixin, Estimator
from vjboost._memory import check_memory
from vjboost._validation import (
    check_array,
    check_in_range,
    check_labels,
    check_random_state,
)
from vjboost.boost.binning import bin_values, compute_bin_edges
from vjboost.boost.losses import (
    LOSSES,
    MulticlassLoss,
    MultiLogitLoss,
    OneVsRestLoss,
    make_loss,
    softmax,
)
from vjboost.boost.rounds import RoundResult, run_rounds
from vjboost.boost.search import MatrixSearch
from vjboost.boost.tree import Tree
from vjboost.boost.weak import WEAK_LEARNERS, TreeShape

__all__ = ["AdaBoostMH", "BoostedClassifier", "LogitBoostClassifier"]


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


def _draw_rows(rng: np.random.Generator, n_features: int, max_features: Any) -> np.ndarray | None:
    if max_features is None:
        return None
    if isinstance(max_features, float):
        m = max(1, int(round(max_features * n_features)))
    else:
        m = min(int(max_features), n_features)
    if m >= n_features:
        return None
    return np.sort(rng.choice(n_features, size=m, replace=False)).astype(np.int64)


def _tree_output(tree: Tree, Xfm: np.ndarray) -> np.ndarray:
    """``tree``'s output on a validated feature-major float32 matrix (no re-validation)."""
    return tree.leaves[tree._apply(Xfm, tree.feature, False)]


class _TreeSum(ClassifierMixin, Estimator):
    """Prediction of a classifier whose score is the sum of its trees' outputs, one place for
    every boosted classifier (the matrix-fitted ones below and the sampled one of
    :mod:`vjboost.boost.sampling.booster`).

    A subclass sets ``classes_``, ``n_features_in_``, ``estimators_`` (trees, vote-vector leaves
    when ``_multiclass``) and ``n_trees_per_round_`` when it fits, and ``_multiclass``.
    """

    _multiclass = False

    def _fm(self, X: Any, feature_major: bool) -> np.ndarray:
        self.check_fitted()
        X = _check_X(X)
        n = X.shape[0] if feature_major else X.shape[1]
        if n != self.n_features_in_:
            raise ValueError(f"X: has {n} features, but the model was fitted with "
                             f"{self.n_features_in_}")
        return np.ascontiguousarray(X if feature_major else X.T, dtype=np.float32)

    def _zeros(self, n: int) -> np.ndarray:
        return np.zeros((n, self.classes_.size)) if self._multiclass else np.zeros(n)

    def _summed(self, Xfm: np.ndarray, trees: list[Tree]) -> np.ndarray:
        """The summed outputs of ``trees`` on the feature-major ``Xfm``."""
        f = self._zeros(Xfm.shape[1])
        for est in trees:
            f += _tree_output(est, Xfm)
        return f

    def staged_decision_function(self, X: Any, *, feature_major: bool = False
                                 ) -> Iterator[np.ndarray]:
        """Scores after each round: (n_samples,) for two classes, (n_samples, K) otherwise.

        Parameters
        ----------
        X, feature_major
            As for :meth:`decision_function`.

        Yields
        ------
        ndarray of float64
            The summed outputs of the first ``t`` rounds' trees, for ``t = 1 ... n_rounds``.
        """
        Xfm = self._fm(X, feature_major)
        f = self._zeros(Xfm.shape[1])
        per = self.n_trees_per_round_
        for i, est in enumerate(self.estimators_):
            f = f + _tree_output(est, Xfm)
            if (i + 1) % per == 0:
                yield f

    def decision_function(self, X: Any, *, feature_major: bool = False) -> np.ndarray:
        """Sum of the learners' outputs: (n_samples,) (> 0: ``classes_[1]``) or (n_samples, K).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite feature values (shape (n_features, n_samples) with ``feature_major``).
        feature_major : bool, default False
            ``X`` is transposed: one row per feature.

        Returns
        -------
        ndarray of float64, shape (n_samples,) or (n_samples, n_classes)
        """
        return self._summed(self._fm(X, feature_major), self.estimators_)

    def _classes_of(self, f: np.ndarray) -> np.ndarray:
        if self._multiclass:
            return self.classes_[np.argmax(f, axis=1)]
        return self.classes_[(f > 0).astype(np.intp)]

    def _proba(self, f: np.ndarray) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-2.0 * f))
        if not self._multiclass:
            return np.stack([1.0 - p, p], axis=1)
        # one-vs-rest logistic link of AdaBoost.MH's F_k = 1/2 log(p_k / (1 - p_k)), normalised
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X: Any, *, feature_major: bool = False) -> np.ndarray:
        """Class labels (two classes: ``classes_[1]`` where the score is > 0; else argmax).

        Parameters
        ----------
        X, feature_major
            As for :meth:`decision_function`.

        Returns
        -------
        ndarray of shape (n_samples,)
            Entries of ``classes_``.
        """
        return self._classes_of(self.decision_function(X, feature_major=feature_major))

    def predict_proba(self, X: Any, *, feature_major: bool = False) -> np.ndarray:
        """Class probabilities (n_samples, n_classes).

        The logistic link ``1 / (1 + exp(-2 F))`` of the scores (normalised over the classes
        when there are more than two).

        Parameters
        ----------
        X, feature_major
            As for :meth:`decision_function`.

        Returns
        -------
        ndarray of float64, shape (n_samples, n_classes)
            Rows sum to 1; columns in the order of ``classes_``.
        """
        return self._proba(self.decision_function(X, feature_major=feature_major))

    def staged_predict(self, X: Any, *, feature_major: bool = False) -> Iterator[np.ndarray]:
        """Class labels after each round.

        Parameters
        ----------
        X, feature_major
            As for :meth:`decision_function`.

        Yields
        ------
        ndarray of shape (n_samples,)
            :meth:`predict` of the first ``t`` rounds, for ``t = 1 ... n_rounds``.
        """
        for f in self.staged_decision_function(X, feature_major=feature_major):
            yield self._classes_of(f)

    def staged_predict_proba(self, X: Any, *, feature_major: bool = False
                             ) -> Iterator[np.ndarray]:
        """Class probabilities after each round.

        Parameters
        ----------
        X, feature_major
            As for :meth:`decision_function`.

        Yields
        ------
        ndarray of float64, shape (n_samples, n_classes)
            :meth:`predict_proba` of the first ``t`` rounds, for ``t = 1 ... n_rounds``.
        """
        for f in self.staged_decision_function(X, feature_major=feature_major):
            yield self._proba(f)

    def staged_score(self, X: Any, y: Any) -> Iterator[float]:
        """Accuracy after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite feature values.
        y : array-like of shape (n_samples,)
            True labels.

        Yields
        ------
        float
            :meth:`score` of the first ``t`` rounds, in [0, 1], for ``t = 1 ... n_rounds``.
        """
        y = np.asarray(y)
        for pred in self.staged_predict(X):
            yield float(np.mean(pred == y))

    def margins_(self, X: Any, y: Any, *, n_rounds: int | None = None) -> np.ndarray:
        """Normalised margins of labelled examples after ``n_rounds`` rounds (default all).

        Two classes: ``y F(x) / sum_t max_leaf |h_t|`` with ``y`` in {-1, +1}. K classes:
        ``(F_y(x) - max_{k != y} F_k(x)) / sum_t max_leaf (max_k h_tk - min_k h_tk)``. Both lie in
        [-1, 1]; a positive margin is a correct classification, its size the confidence
        (Schapire, Freund, Bartlett & Lee 1998).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels among ``classes_``.
        n_rounds : int, optional

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        self.check_fitted()
        n_all = len(self.estimators_) // self.n_trees_per_round_
        t = n_all if n_rounds is None else check_in_range(n_rounds, "n_rounds", low=1,
                                                          high=n_all, integer=True)
        y = np.asarray(y)
        idx = np.searchsorted(self.classes_, y)
        if y.ndim != 1 or (idx >= self.classes_.size).any() or (self.classes_[
                np.minimum(idx, self.classes_.size - 1)] != y).any():
            raise ValueError("y: labels must be classes the model was fitted with")
        Xfm = self._fm(X, False)
        if y.size != Xfm.shape[1]:
            raise ValueError(f"y: has {y.size} labels for {Xfm.shape[1]} samples")
        trees = self.estimators_[: t * self.n_trees_per_round_]
        f = self._summed(Xfm, trees)
        if not self._multiclass:
            norm = sum(float(np.abs(est.leaves).max()) for est in trees)
            return (2.0 * idx - 1.0) * f / max(norm, 1e-300)
        norm = sum(float((est.leaves.max(axis=1) - est.leaves.min(axis=1)).max())
                   for est in trees)
        rows = np.arange(y.size)
        own = f[rows, idx]
        other = f.copy()
        other[rows, idx] = -np.inf
        return (own - other.max(axis=1)) / max(norm, 1e-300)



class _Booster(_TreeSum):
    """Shared fitting of the boosted classifiers (subclasses set the step)."""

    # -- parameters ------------------------------------------------------------------------------
    def _validate_common(self) -> None:
        if self.weak_learner not in WEAK_LEARNERS:
            raise ValueError(f"weak_learner: expected one of {WEAK_LEARNERS}, got "
                             f"{self.weak_learner!r}")
        check_in_range(self.max_depth, "max_depth", low=1, high=8, integer=True)
        if self.max_leaves is not None:
            check_in_range(self.max_leaves, "max_leaves", low=2, high=4096, integer=True)
        check_in_range(self.n_estimators, "n_estimators", low=1, integer=True)
        check_in_range(self.n_bins, "n_bins", low=2, high=256, integer=True)
        check_in_range(self.weight_trim_rate, "weight_trim_rate", low=0.0, high=1.0,
                       low_inclusive=False)
        if self.leaf_refit not in ("all", "fitted"):
            raise ValueError(f"leaf_refit: expected 'all' or 'fitted', got {self.leaf_refit!r}")
        if not isinstance(self.binning, (bool, np.bool_)):
            raise ValueError(f"binning: expected True or False, got {self.binning!r}")
        mf = self.max_features
        if mf is not None:
            if isinstance(mf, float):
                check_in_range(mf, "max_features", low=0.0, high=1.0, low_inclusive=False)
            else:
                check_in_range(mf, "max_features", low=1, integer=True)

    def _shape(self) -> TreeShape:
        return TreeShape.of(self.weak_learner, max_depth=self.max_depth,
                            max_leaves=self.max_leaves, n_parts=getattr(self, "n_parts", 8))

    def _categorical_mask(self, n_features: int) -> np.ndarray | None:
        cf = getattr(self, "categorical_features", None)
        if cf is None:
            return None
        arr = np.asarray(cf)
        if arr.dtype == bool:
            if arr.shape != (n_features,):
                raise ValueError(f"categorical_features: boolean mask must have {n_features} "
                                 "entries")
            return arr.copy()
        if arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise ValueError("categorical_features: expected feature indices or a boolean mask")
        if arr.size and (arr.min() < 0 or arr.max() >= n_features):
            raise ValueError(f"categorical_features: indices must be in [0, {n_features})")
        mask = np.zeros(n_features, bool)
        mask[arr] = True
        return mask

    @staticmethod
    def _prepare_fm(Xfm: Any, bin_edges: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """Validate a feature-major matrix; returns (values, edges or None)."""
        Xfm = np.asarray(Xfm)
        if Xfm.dtype == np.uint8:
            Xfm = check_array(Xfm, "X", ndim=2)
            if bin_edges is None:
                raise ValueError("bin_edges: required with a uint8 (binned) matrix")
            edges = check_array(bin_edges, "bin_edges", ndim=2, dtype=np.float32, finite=False)
            if edges.shape[0] != Xfm.shape[0]:
                raise ValueError(f"bin_edges: has {edges.shape[0]} rows but X has "
                                 f"{Xfm.shape[0]} features")
            if np.isnan(edges).any():
                raise ValueError("bin_edges: contains NaN")
            return np.ascontiguousarray(Xfm), np.ascontiguousarray(edges)
        if bin_edges is not None:
            raise ValueError("bin_edges: only used with a uint8 (binned) matrix")
        Xfm = check_array(Xfm, "X", ndim=2, dtype=np.float32)
        return np.ascontiguousarray(Xfm), None

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> _Booster:
        """Fit on ``X`` of shape (n_samples, n_features) and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite feature values.
        y : array-like of shape (n_samples,)
            Class labels (two for :class:`BoostedClassifier`, where the larger is positive).
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative, not all zero.

        Returns
        -------
        self
        """
        X = _check_X(X)
        codes, classes = self._labels(y, X.shape[0])
        return self._fit(_feature_major(X), None, codes, classes, sample_weight,
                         already_binned=False)

    def fit_feature_major(self, X: Any, y: Any, sample_weight: Any = None, *,
                          bin_edges: Any = None) -> _Booster:
        """Fit on a feature-major matrix ``X`` of shape (n_features, n_samples).

        ``X`` is float32 raw values, or uint8 bins together with their ``bin_edges``
        (n_features, E) from :func:`vjboost.boost.binning.compute_bin_edges` (then training
        uses it as is, without any copy, and the learned thresholds are raw values).

        Parameters
        ----------
        X : ndarray of shape (n_features, n_samples), float32 or uint8
            Feature values, one row per feature (a float32 matrix is used without a copy when
            C-contiguous).
        y : array-like of shape (n_samples,)
            Class labels, as for :meth:`fit`.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative, not all zero; uniform when omitted.
        bin_edges : ndarray of shape (n_features, E), float32, optional
            Upper bin edges of a uint8 ``X`` (required with it, refused with a float ``X``).

        Returns
        -------
        self
        """
        Xfm, edges = self._prepare_fm(X, bin_edges)
        codes, classes = self._labels(y, Xfm.shape[1])
        return self._fit(Xfm, edges, codes, classes, sample_weight,
                         already_binned=edges is not None)

    def _labels(self, y: Any, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.asarray(y)
        if y.ndim == 1 and y.shape[0] != n_samples:
            raise ValueError(f"inconsistent numbers of samples: X has {n_samples}, y has "
                             f"{y.shape[0]}")
        return check_labels(y, "y", n_classes=None if self._multiclass else 2)

    def _make_step(self, codes: np.ndarray, classes: np.ndarray, sample_weight: Any) -> Any:
        raise NotImplementedError

    def _fit(self, Xfm: np.ndarray, edges: np.ndarray | None, codes: np.ndarray,
             classes: np.ndarray, sample_weight: Any, *, already_binned: bool) -> _Booster:
        t0 = time.perf_counter()
        self._validate()
        n_features, n_samples = Xfm.shape
        step = self._make_step(codes, classes, sample_weight)
        cat = self._categorical_mask(n_features)
        if cat is not None and cat.any():
            codes_ = Xfm[cat]
            if codes_.dtype != np.uint8 and ((codes_ < 0).any() or (codes_ > 255).any()
                                             or (codes_ != np.round(codes_)).any()):
                raise ValueError("X: categorical features must hold integer codes 0..255")
        if not already_binned and self.binning:
            check_memory(Xfm.size, f"binned matrix ({n_features} x {n_samples} uint8)")
            raw = Xfm
            edges = compute_bin_edges(raw, self.n_bins, threads=self.threads)
            Xfm = bin_values(raw, edges, threads=self.threads)
            if cat is not None and cat.any():
                Xfm[cat] = raw[cat].astype(np.uint8)
                edges[cat] = np.inf
        search = MatrixSearch(Xfm, edges=edges if Xfm.dtype == np.uint8 else None,
                              categorical=cat, threads=self.threads)
        rng = check_random_state(self.random_state)
        importances = np.zeros(n_features)
        record = {"prev": step.loss(), "edges": []}

        def before_round(t: int) -> None:
            search.row_subset = _draw_rows(rng, n_features, self.max_features)

        def after_round(r: RoundResult) -> bool:
            dec = (record["prev"] - r.loss) / len(r.trees)
            for tree in r.trees:
                ns = np.maximum(tree.node_scores, 0.0)
                share = ns / ns.sum() if ns.sum() > 0 else np.full(ns.size, 1.0 / ns.size)
                np.add.at(importances, tree.feature, dec * share)
            record["prev"] = r.loss
            record["edges"].append(getattr(r.step, "last_edge", np.nan)
                                   if getattr(r.step, "name", "") == "discrete" else np.nan)
            return False

        res = run_rounds(step, search, n_rounds=self.n_estimators, shape=self._shape(),
                         weight_trim_rate=float(self.weight_trim_rate),
                         leaf_refit=self.leaf_refit, before_round=before_round,
                         callback=after_round)
        if not res.trees:
            raise ValueError("X: no feature can split the training examples (all constant?)")
        self.estimators_ = res.flat
        self.n_trees_per_round_ = len(res.trees[0])
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.train_loss_ = np.asarray(res.losses)
        self.edges_ = np.asarray(record["edges"])
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances
        self.bin_edges_ = edges
        self.train_scores_ = step.scores.copy()
        self.fit_time_ = time.perf_counter() - t0
        return self

    # -- saving ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable model (weak learners and classes)."""
        self.check_fitted()
        return {
            "type": type(self).__name__,
            "params": {k: v for k, v in self.get_params().items()
                       if k not in ("random_state", "categorical_features")},
            "classes": self.classes_.tolist(),
            "n_features": self.n_features_in_,
            "trees_per_round": self.n_trees_per_round_,
            "estimators": [e.to_dict() for e in self.estimators_],
            "train_loss": self.train_loss_.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> _Booster:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(d, dict) or d.get("type") != cls.__name__:
            raise ValueError(f"d: not a {cls.__name__} dict")
        model = cls(**d["params"])
        model.classes_ = np.asarray(d["classes"])
        model.n_features_in_ = int(d["n_features"])
        model.n_trees_per_round_ = int(d.get("trees_per_round", 1))
        model.estimators_ = [Tree.from_dict(e, f"estimators[{i}]")
                             for i, e in enumerate(d["estimators"])]
        model.train_loss_ = np.asarray(d["train_loss"])
        return model


class BoostedClassifier(_Booster):
    """Two-class boosting: Discrete, Real, Gentle AdaBoost or LogitBoost.

    Parameters
    ----------
    loss : {"gentle", "discrete", "real", "logit"}, default="gentle"
    weak_learner : {"stump", "tree", "histogram"}, default="stump"
        ``"histogram"`` is Real AdaBoost's domain-partitioning learner (``loss="real"`` only).
    max_depth : int, default=2
        Depth of trees (``weak_learner="tree"``), as OpenCV's ``maxDepth``.
    max_leaves : int, optional
        Best-first trees with this many leaves instead of complete ``max_depth`` trees.
    n_estimators : int, default=100
        Number of boosting rounds.
    binning : bool, default=True
        Quantize every feature to ``n_bins`` quantile bins and use the histogram split search
        (``True``), or sort and search all thresholds exactly (``False``). Binning is lossless
        for features with at most ``n_bins`` distinct values.
    n_bins : int, default=256
        Bins per feature (2 to 256).
    n_parts : int, default=8
        Parts of the histogram learner.
    balanced_init : bool, default=False
        Positives and negatives each start with total weight 1/2 (cascade setting).
    weight_trim_rate : float, default=1.0
        Fit each weak learner on the heaviest examples carrying this fraction of the weight
        (OpenCV's ``weightTrimRate``, e.g. 0.95).
    leaf_refit : {"all", "fitted"}, default="all"
        Refit the leaves on all examples (OpenCV) or on the examples the learner was fitted on
        (the weight trimming of Friedman, Hastie & Tibshirani).
    max_features : int or float, optional
        Features tried per round (an int, or a fraction), drawn with ``random_state``.
    categorical_features : array-like of int or bool mask, optional
        Features holding categorical codes 0..255 (e.g. MB-LBP): split by 256-way subsets.
    random_state : int, numpy Generator or None
    threads : int, optional
        Numba threads (``None``: all).

    Attributes
    ----------
    estimators_ : list of Tree
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
    fit_time_ : float

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> clf = BoostedClassifier(n_estimators=30).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    def __init__(
        self,
        *,
        loss: str = "gentle",
        weak_learner: str = "stump",
        max_depth: int = 2,
        max_leaves: int | None = None,
        n_estimators: int = 100,
        binning: bool = True,
        n_bins: int = 256,
        n_parts: int = 8,
        balanced_init: bool = False,
        weight_trim_rate: float = 1.0,
        leaf_refit: str = "all",
        max_features: int | float | None = None,
        categorical_features: Any = None,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self._store(locals())

    def _validate(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss: expected one of {sorted(LOSSES)}, got {self.loss!r}")
        self._validate_common()
        if self.weak_learner == "histogram" and self.loss != "real":
            raise ValueError("weak_learner: 'histogram' needs loss='real'")
        check_in_range(self.n_parts, "n_parts", low=2, high=256, integer=True)
        if not isinstance(self.balanced_init, (bool, np.bool_)):
            raise TypeError(f"balanced_init: expected a bool, got {self.balanced_init!r}")

    def _make_step(self, codes: np.ndarray, classes: np.ndarray, sample_weight: Any) -> Any:
        return make_loss(self.loss, 2.0 * codes - 1.0, sample_weight,
                         balanced_init=bool(self.balanced_init))


class AdaBoostMH(_Booster):
    """Multi-class AdaBoost.MH (Schapire & Singer): discrete, real or gentle.

    AdaBoost.MH minimises ``sum_ik w0_i exp(-Y_ik F_ik)`` over the K one-vs-rest problems
    ``Y_ik`` in {-1, +1}. Two kinds of weak learner:

    * ``per_class=False`` (default): one learner per round whose partition of the examples (a
      stump or tree on the features) is shared by the classes, each leaf holding one value per
      class. ``loss="discrete"``: vote vectors, outputs ``alpha v_k phi(x)`` with ``phi`` in
      {-1, +1} per leaf, ``v`` in {-1, +1}^K and ``alpha = 1/2 ln((1 + gamma)/(1 - gamma))``
      from the edge ``gamma`` on all examples; ``"real"``: ``1/2 ln((W+ + eps)/(W- + eps))`` per
      leaf and class; ``"gentle"``: weighted mean of the one-vs-rest labels per leaf and class.
    * ``per_class=True``: one learner per class and round (``K`` trees per round, like
      :class:`LogitBoostClassifier`). The loss separates over the classes, so this is ``K``
      two-class Discrete / Real / Gentle AdaBoost runs on the one-vs-rest labels — the
      multi-class versions that Friedman, Hastie & Tibshirani (2000) compare with LogitBoost.

    Parameters
    ----------
    loss : {"discrete", "real", "gentle"}, default="discrete"
    weak_learner : {"stump", "tree"}, default="stump"
    max_depth : int, default=2
    max_leaves : int, optional
        Best-first trees with this many leaves.
    per_class : bool, default=False
        One learner per class and round (see above).
    n_estimators : int, default=100
        Rounds.
    binning : bool, default=True
    n_bins : int, default=256
    weight_trim_rate : float, default=1.0
        Trimming on the per-example total weight (per class with ``per_class``).
    leaf_refit : {"all", "fitted"}, default="all"
        As in :class:`BoostedClassifier`.
    max_features : int or float, optional
    random_state : int, Generator or None
    threads : int, optional

    Attributes
    ----------
    estimators_ : list of Tree
        Leaves of shape (n_leaves, K).
    n_trees_per_round_ : int
        1, or K with ``per_class``.
    classes_ : ndarray of shape (K,)
    n_features_in_ : int
    train_loss_ : ndarray (n_rounds,)
        ``sum_ik w0_ik exp(-Y_ik F_ik)`` after each round (``per_class``: its mean over the
        classes of the two-class losses).
    edges_ : ndarray (n_rounds,)
        Discrete: edge ``gamma`` of each round (on all examples); else NaN.
    feature_importances_ : ndarray (n_features,)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.digitize(X[:, 0], [-0.5, 0.5])          # three classes
    >>> AdaBoostMH(loss="real", n_estimators=20).fit(X, y).score(X, y) > 0.95
    True
    """

    _multiclass = True

    def __init__(
        self,
        *,
        loss: str = "discrete",
        weak_learner: str = "stump",
        max_depth: int = 2,
        max_leaves: int | None = None,
        per_class: bool = False,
        n_estimators: int = 100,
        binning: bool = True,
        n_bins: int = 256,
        weight_trim_rate: float = 1.0,
        leaf_refit: str = "all",
        max_features: int | float | None = None,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self._store(locals())

    def _validate(self) -> None:
        if self.loss not in ("discrete", "real", "gentle"):
            raise ValueError(f"loss: expected one of ['discrete', 'gentle', 'real'], got "
                             f"{self.loss!r}")
        self._validate_common()
        if self.weak_learner == "histogram":
            raise ValueError("weak_learner: expected 'stump' or 'tree' for AdaBoost.MH")
        if not isinstance(self.per_class, (bool, np.bool_)):
            raise TypeError(f"per_class: expected a bool, got {self.per_class!r}")

    def _make_step(self, codes: np.ndarray, classes: np.ndarray, sample_weight: Any) -> Any:
        if self.per_class:
            return OneVsRestLoss(codes, n_classes=classes.size, sample_weight=sample_weight,
                                 algorithm=self.loss)
        return MulticlassLoss(codes, n_classes=classes.size, sample_weight=sample_weight,
                              algorithm=self.loss)


class LogitBoostClassifier(_Booster):
    """J-class LogitBoost (Friedman, Hastie & Tibshirani 2000, Algorithm 6).

    Each round fits one least-squares learner ``f_j`` per class to the working response
    ``z_j = (y*_j - p_j) / (p_j (1 - p_j))`` with weights ``p_j (1 - p_j)``, adds the centred
    ``(J-1)/J (f_j - 1/J sum_k f_k)`` to the scores and ``p = softmax(F)``. ``estimators_`` holds
    ``J`` trees per round (leaves of shape (n_leaves, J)); ``n_estimators`` counts rounds.

    Parameters
    ----------
    weak_learner : {"stump", "tree"}, default="stump"
    max_depth : int, default=2
    max_leaves : int, optional
        Best-first trees with this many leaves (the paper's "J terminal nodes").
    n_estimators : int, default=100
        Rounds.
    binning : bool, default=True
    n_bins : int, default=256
    weight_trim_rate : float, default=1.0
        Per class, fit on the heaviest examples carrying this share of that class's weight.
    leaf_refit : {"all", "fitted"}, default="all"
        As in :class:`BoostedClassifier`.
    z_max : float, default=4
        Clip of the working response.
    max_features : int or float, optional
    random_state : int, Generator or None
    threads : int, optional

    Attributes
    ----------
    estimators_ : list of Tree
    n_trees_per_round_ : int
        ``J``.
    classes_ : ndarray of shape (J,)
    train_loss_ : ndarray (n_rounds,)
        Multinomial deviance ``-sum_i w0_i log p_{i, y_i}`` after each round.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.digitize(X[:, 0], [-0.5, 0.5])
    >>> m = LogitBoostClassifier(n_estimators=20).fit(X, y)
    >>> m.predict_proba(X[:2]).shape, m.score(X, y) > 0.95
    ((2, 3), True)
    """

    _multiclass = True

    def __init__(
        self,
        *,
        weak_learner: str = "stump",
        max_depth: int = 2,
        max_leaves: int | None = None,
        n_estimators: int = 100,
        binning: bool = True,
        n_bins: int = 256,
        weight_trim_rate: float = 1.0,
        leaf_refit: str = "all",
        z_max: float = 4.0,
        max_features: int | float | None = None,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self._store(locals())

    def _validate(self) -> None:
        self._validate_common()
        if self.weak_learner == "histogram":
            raise ValueError("weak_learner: expected 'stump' or 'tree' for LogitBoost")
        check_in_range(self.z_max, "z_max", low=0.0, low_inclusive=False)

    def _make_step(self, codes: np.ndarray, classes: np.ndarray, sample_weight: Any) -> Any:
        return MultiLogitLoss(codes, n_classes=classes.size, sample_weight=sample_weight,
                              z_max=float(self.z_max))

    def _proba(self, f: np.ndarray) -> np.ndarray:
        return softmax(f)
