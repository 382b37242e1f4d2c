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

from vjboost._memory import check_memory
from vjboost._validation import check_array, check_in_range, check_random_state
from vjboost.boost.learners import Stump
from vjboost.boost.losses import LOSSES
from vjboost.boost.reservoir.learner import _FitStep, _labels_pm, loss_terms
from vjboost.boost.stumps import search_stumps
from vjboost.boost.weak import fit_weak_learner

__all__ = ["BASELINES", "SubsampleBooster"]

BASELINES = ("wss", "mada", "fix")
_EPS = 1e-10


class SubsampleBooster:
    """Boosting on a sub-sample per round, with the whole set in memory (baselines).

    Parameters
    ----------
    method : {"wss", "mada", "fix"}
    n_estimators : int, default=250
    sample_size : int, default=100
        Examples each weak learner is fitted on.
    seed : int, Generator or None
    threads : int, optional

    Attributes
    ----------
    learners_ : list of Stump
    """

    def __init__(
        self,
        method: str = "wss",
        n_estimators: int = 250,
        sample_size: int = 100,
        *,
        seed: Any = None,
        threads: int | None = None,
    ) -> None:
        self.method = method
        self.n_estimators = n_estimators
        self.sample_size = sample_size
        self.seed = seed
        self.threads = threads

    def fit(self, X: Any, y: Any) -> SubsampleBooster:
        """Train on ``X`` (n_samples, n_features) with labels 1 and 0 (or -1)."""
        if self.method not in BASELINES:
            raise ValueError(f"method: expected one of {BASELINES}, got {self.method!r}")
        check_in_range(self.n_estimators, "n_estimators", low=1, integer=True)
        check_in_range(self.sample_size, "sample_size", low=2, integer=True)
        X = check_array(X, "X", ndim=2)
        ypm = _labels_pm(y, "y")
        if ypm.size != X.shape[0]:
            raise ValueError(f"y: has {ypm.size} entries but X has {X.shape[0]} rows")
        if self.sample_size > X.shape[0]:
            raise ValueError(
                f"sample_size: {self.sample_size} is larger than the training set ({X.shape[0]})"
            )
        check_memory(X.size * 4 + X.shape[0] * 32, f"feature-major copy of X {X.shape}",
                     advice="Use the reservoir learner for data that does not fit in memory.")
        xfm = np.ascontiguousarray(X.T, dtype=np.float32)
        rng = check_random_state(self.seed)
        self.learners_: list[Stump] = []
        self.n_features_ = int(X.shape[1])
        getattr(self, f"_fit_{self.method}")(xfm, ypm, rng)
        return self

    def _fit_lsq(self, xfm, ypm, ids, weights, response) -> Stump | None:
        step = _FitStep(weights, response, LOSSES["logit"].criterion)
        h, _ = fit_weak_learner(step, np.ascontiguousarray(xfm[:, ids]), threads=self.threads)
        if h is not None:
            h.leaf_values = 0.5 * h.leaf_values
            self.learners_.append(h)
        return h

    def _fit_fix(self, xfm, ypm, rng) -> None:
        ids = np.sort(rng.choice(ypm.size, self.sample_size, replace=False))
        ys, fs = ypm[ids], np.zeros(ids.size)
        sub = np.ascontiguousarray(xfm[:, ids])
        for _ in range(self.n_estimators):
            w, z = loss_terms("logit", ys, fs)
            step = _FitStep(w, z, "regression")
            h, _ = fit_weak_learner(step, sub, threads=self.threads)
            if h is None:
                break
            h.leaf_values = 0.5 * h.leaf_values
            self.learners_.append(h)
            fs = fs + h.predict_matrix(sub)

    def _fit_wss(self, xfm, ypm, rng) -> None:
        f = np.zeros(ypm.size)
        m = self.sample_size
        for _ in range(self.n_estimators):
            w, z = loss_terms("logit", ypm, f)
            keys = np.log(rng.random(ypm.size)) / np.maximum(w, 1e-300)
            ids = np.sort(np.argpartition(-keys, m - 1)[:m])
            h = self._fit_lsq(xfm, ypm, ids, np.full(m, 1.0 / m), z[ids])
            if h is not None:
                f = f + h.predict_matrix(xfm)

    def _fit_mada(self, xfm, ypm, rng) -> None:
        f = np.zeros(ypm.size)
        m = self.sample_size
        n = ypm.size
        for _ in range(self.n_estimators):
            accept = np.minimum(1.0, np.exp(np.minimum(-ypm * f, 0.0)))
            chosen: list[np.ndarray] = []
            got = 0
            while got < m:
                perm = rng.permutation(n)
                ok = perm[rng.random(n) < accept[perm]]
                chosen.append(ok[: m - got])
                got += min(ok.size, m - got)
            ids = np.sort(np.concatenate(chosen))
            ys = ypm[ids]
            sub = np.ascontiguousarray(xfm[:, ids])
            s = search_stumps(sub, ys, np.full(ids.size, 1.0 / ids.size), criterion="discrete",
                              threads=self.threads)
            j = s.best()
            if j < 0:
                break
            g = float(np.clip(s.score[j], -1 + _EPS, 1 - _EPS))
            alpha = 0.5 * np.log((1.0 + g) / (1.0 - g))
            h = Stump(int(s.feature_ids[j]), s.threshold[j], alpha * s.left_value[j],
                      alpha * s.right_value[j], score=float(s.score[j]))
            self.learners_.append(h)
            f = f + h.predict_matrix(xfm)

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores (n,) of ``X`` (n_samples, n_features)."""
        if not getattr(self, "learners_", None):
            raise ValueError("this SubsampleBooster is not fitted yet")
        X = check_array(X, "X", ndim=2)
        if X.shape[1] != self.n_features_:
            raise ValueError(f"X: expected {self.n_features_} features, got {X.shape[1]}")
        xfm = np.ascontiguousarray(X.T, dtype=np.float32)
        out = np.zeros(X.shape[0])
        for h in self.learners_:
            out += h.predict_matrix(xfm)
        return out

    def score(self, X: Any, y: Any) -> float:
        """Accuracy."""
        ypm = _labels_pm(y, "y")
        return float(np.mean(np.where(self.decision_function(X) >= 0, 1.0, -1.0) == ypm))
