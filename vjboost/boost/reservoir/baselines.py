"""Sub-sampling baselines of reservoir boosting, with access to the whole training set.

:class:`SubsampleBooster` trains each weak learner on ``sample_size`` examples, like a reservoir
learner, but keeps the scores of *all* ``N`` training examples (``O(N)`` memory plus the feature
matrix), as the baselines of Lefakis & Fleuret (NIPS 2013):

``"wss"``
    Weighted sub-sampling: each round draws ``sample_size`` examples without replacement with
    probability proportional to their LogitBoost weights ``p (1 - p)`` and fits the least-squares
    weak learner on them with uniform weights (importance sampling of the weighted fit).
``"mada"``
    MadaBoost (Domingo & Watanabe 2000) by filtering: examples are visited in random order and
    accepted with probability ``min(1, exp(-y F))`` (MadaBoost's bounded weights) until
    ``sample_size`` are accepted; a discrete stump is fitted on them with uniform weights, with
    ``alpha = 1/2 ln((1 + g)/(1 - g))`` from its edge ``g`` on the accepted sample.
``"fix"``
    One uniform sub-sample drawn before training; plain LogitBoost on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost._estimator import Estimator, NotFittedError
from vjboost._memory import check_memory
from vjboost._validation import check_array, check_in_range, check_labels, check_random_state
from vjboost.boost.losses import Problem, make_loss
from vjboost.boost.reservoir.learner import _sign_accuracy, loss_terms
from vjboost.boost.rounds import run_rounds
from vjboost.boost.search import MatrixSearch

__all__ = ["BASELINES", "SubsampleBooster"]

BASELINES = ("wss", "mada", "fix")
_EPS = 1e-10


class _SubsampleStep:
    """LogitBoost scores of all N examples; each round's learner is fitted on a sub-sample
    (``"wss"``: drawn by weight, least squares with uniform weights; ``"mada"``: accepted by
    MadaBoost's filter, a discrete stump with uniform weights)."""

    done = False

    def __init__(self, method: str, y: np.ndarray, m: int, rng: np.random.Generator) -> None:
        self.method, self.y, self.m, self.rng = method, y, m, rng
        self.scores = np.zeros(y.size)
        self._problem: Problem | None = None

    def _draw(self) -> np.ndarray:
        n, m = self.y.size, self.m
        if self.method == "wss":
            w, _ = loss_terms("logit", self.y, self.scores)
            keys = np.log(self.rng.random(n)) / np.maximum(w, 1e-300)
            return np.sort(np.argpartition(-keys, m - 1)[:m])
        accept = np.minimum(1.0, np.exp(np.minimum(-self.y * self.scores, 0.0)))
        chosen: list[np.ndarray] = []
        got = 0
        while got < m:
            perm = self.rng.permutation(n)
            ok = perm[self.rng.random(n) < accept[perm]]
            chosen.append(ok[: m - got])
            got += min(ok.size, m - got)
        return np.sort(np.concatenate(chosen))

    def problems(self) -> list[Problem]:
        if self._problem is None:
            ids = self._draw()
            w = np.zeros(self.y.size)
            w[ids] = 1.0 / ids.size
            if self.method == "wss":
                _, z = loss_terms("logit", self.y, self.scores)
                self._problem = Problem(w, z, "regression", sample_ids=ids)
            else:
                self._problem = Problem(w, self.y, "discrete", sample_ids=ids)
        return [self._problem]

    def refit_leaves(self, k: int, leaf: np.ndarray, hypothesis: np.ndarray,
                     sample_ids: np.ndarray | None = None) -> np.ndarray:
        """Leaves fitted on the round's sub-sample only.

        ``"wss"``: half the mean working response per leaf; otherwise Discrete AdaBoost's
        ``½ ln((1 + g) / (1 - g))`` times the leaf signs, ``g`` the sub-sample's edge.

        Parameters
        ----------
        k : int
            The problem's index (always 0; unused).
        leaf : ndarray of shape (N,), int64
            Leaf index of every training example.
        hypothesis : ndarray of shape (L,)
            The fitted learner's leaf values (their signs for the discrete methods).
        sample_ids : ndarray of int, optional
            Unused: the round's sub-sample is used.

        Returns
        -------
        ndarray of shape (L,), float64
        """
        p = self._problem
        ids, n_leaves = p.sample_ids, len(hypothesis)
        if self.method == "wss":
            # least squares on the sample (importance sampling of the weighted fit), F += f / 2
            a = np.bincount(leaf[ids], minlength=n_leaves).astype(np.float64)
            b = np.bincount(leaf[ids], weights=p.response[ids], minlength=n_leaves)
            return 0.5 * np.divide(b, a, out=np.zeros_like(a), where=a > 0)
        signs = np.where(np.asarray(hypothesis) >= 0, 1.0, -1.0)
        g = float(np.clip(np.mean(self.y[ids] * signs[leaf[ids]]), -1 + _EPS, 1 - _EPS))
        return 0.5 * np.log((1.0 + g) / (1.0 - g)) * signs

    def update(self, predictions: np.ndarray) -> float:
        self.scores = self.scores + predictions
        self._problem = None
        return float(np.mean(np.logaddexp(0.0, -2.0 * self.y * self.scores)))


class SubsampleBooster(Estimator):
    """Boosting on a sub-sample per round, with the whole set in memory (baselines).

    Parameters
    ----------
    method : {"wss", "mada", "fix"}
    n_estimators : int, default=250
    sample_size : int, default=100
        Examples each weak learner is fitted on.
    random_state : int, Generator or None
    threads : int, optional

    Attributes
    ----------
    estimators_ : list of Tree

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4))
    >>> y = (X[:, 2] > 0).astype(int)   # feature 2 decides the class
    >>> clf = SubsampleBooster("wss", n_estimators=10, sample_size=20, random_state=0).fit(X, y)
    >>> len(clf.estimators_), sorted({int(t.feature[0]) for t in clf.estimators_})
    (10, [2])
    >>> clf.score(X, y) > 0.95
    True
    """

    def __init__(
        self,
        method: str = "wss",
        *,
        n_estimators: int = 250,
        sample_size: int = 100,
        random_state: Any = None,
        threads: int | None = None,
    ) -> None:
        self._store(locals())

    def fit(self, X: Any, y: Any) -> SubsampleBooster:
        """Train on ``X`` (n_samples, n_features) with labels 1 and 0 (or -1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature values (copied once, feature-major float32).
        y : array-like of shape (n_samples,)
            Two classes: 1 and 0, or 1 and -1.

        Returns
        -------
        self
        """
        if self.method not in BASELINES:
            raise ValueError(f"method: expected one of {BASELINES}, got {self.method!r}")
        check_in_range(self.n_estimators, "n_estimators", low=1, integer=True)
        check_in_range(self.sample_size, "sample_size", low=2, integer=True)
        X = check_array(X, "X", ndim=2)
        ypm, _ = check_labels(y, "y", n_samples=X.shape[0], signed=True)
        if self.sample_size > X.shape[0]:
            raise ValueError(
                f"sample_size: {self.sample_size} is larger than the training set ({X.shape[0]})"
            )
        check_memory(X.size * 4 + X.shape[0] * 32, f"feature-major copy of X {X.shape}",
                     advice="Use the reservoir learner for data that does not fit in memory.")
        xfm = np.ascontiguousarray(X.T, dtype=np.float32)
        rng = check_random_state(self.random_state)
        self.n_features_ = int(X.shape[1])
        if self.method == "fix":
            # one uniform sub-sample drawn before training; plain LogitBoost on it
            ids = np.sort(rng.choice(ypm.size, self.sample_size, replace=False))
            step: Any = make_loss("logit", ypm[ids])
            search = MatrixSearch(np.ascontiguousarray(xfm[:, ids]), threads=self.threads)
        else:
            step = _SubsampleStep(self.method, ypm, self.sample_size, rng)
            search = MatrixSearch(xfm, threads=self.threads)
        self.estimators_ = run_rounds(step, search, n_rounds=self.n_estimators).flat
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores (n,) of ``X`` (n_samples, n_features)."""
        if not getattr(self, "estimators_", None):
            raise NotFittedError("this SubsampleBooster is not fitted yet")
        X = check_array(X, "X", ndim=2)
        if X.shape[1] != self.n_features_:
            raise ValueError(f"X: expected {self.n_features_} features, got {X.shape[1]}")
        xfm = np.ascontiguousarray(X.T, dtype=np.float32)
        out = np.zeros(X.shape[0])
        for h in self.estimators_:
            out += h.predict_matrix(xfm)
        return out

    def score(self, X: Any, y: Any) -> float:
        """Accuracy: the fraction of examples whose predicted sign matches ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature values.
        y : array-like of shape (n_samples,)
            Two classes: 1 and 0, or 1 and -1.

        Returns
        -------
        float
            In [0, 1].
        """
        return _sign_accuracy(self.decision_function, samples=X, labels=y, name="y")
