"""Online re-weighting of fixed weak hypotheses: Online Coordinate Boosting and Oza–Russell.

The weak hypotheses ``h_1 … h_J`` are chosen beforehand (e.g. by a batch booster) and kept in that
order; only their coefficients ``α_j`` change as labelled examples stream in. Everything here works
on *margins* ``m_j = y·h_j(x) ∈ {−1, +1}``; :class:`OnlineCoordinateBoost` and
:class:`OzaBoostWeights` compute the margins from feature vectors when given hypotheses.

Online Coordinate Boosting (Pelossof, Jones, Vovsha & Rudin, "Online Coordinate Boosting", 2008)
keeps, for every pair ``k ≤ j``, the cumulative weight ``W⁺_jk`` of past examples that ``h_j`` and
``h_k`` both classify correctly (weights as seen by coordinate ``j``), and ``W⁻_jk`` for both wrong.
Batch AdaBoost run over the same examples in the same coordinate order would set
``α_j = ½ ln(W⁺_jj / W⁻_jj)`` with every past example re-weighted by the *current* ``α_1…α_{j−1}``.
When ``α_k`` moves by ``Δ_k``, the weight of an example changes by ``e^{−Δ_k m_k}``, so the share
``f = W⁺_jk / W⁺_jj`` of correct-on-``j`` weight that is also correct on ``k`` tells how
``W⁺_jj`` moves: it is multiplied by ``f·e^{−Δ_k} + (1 − f)·e^{Δ_k}``; likewise ``W⁻_jj`` by
``g·e^{Δ_k} + (1 − g)·e^{−Δ_k}`` with ``g = W⁻_jk / W⁻_jj`` (both wrong). The order-``K``
algorithm applies this product correction for the last ``K`` coordinates ``k = j−K … j−1`` (the
pairwise sums of row ``j`` are scaled by the same factor), adds the new example with its current
weight ``d``, re-computes ``α_j`` and re-weights the example by ``e^{−α_j m_j}`` before moving on to
coordinate ``j + 1``. ``K = 0`` applies no correction: then ``α_j`` is the log-ratio of the weights
the examples had when they arrived, the update of Oza & Russell's online boosting up to the
normalisation of the example weight. All sums start at the smoothing value ``ε``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

from .._estimator import Estimator
from .._validation import check_array, check_in_range, check_labels, check_sample_weight

__all__ = [
    "OnlineCoordinateBoost",
    "OzaBoostWeights",
    "alpha_approximation_error",
    "batch_coordinate_alpha",
    "margins_from_hypotheses",
]


# ------------------------------------------------------------------------------------------------
# kernels (sequential over examples by nature; per example O(J·(K + J)))
# ------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _log_mix(f, a, b):
    """log(f·e^a + (1 − f)·e^b) without overflow."""
    if f <= 0.0:
        return b
    if f >= 1.0:
        return a
    u = np.log(f) + a
    v = np.log(1.0 - f) + b
    m = max(u, v)
    return m + np.log(np.exp(u - m) + np.exp(v - m))


@njit(cache=True, nogil=True)
def _ocb_learn(margins, log_w0, alpha, alpha_inc, w_pos, w_neg, log_scale, order):
    # Row j of the sums is stored divided by exp(log_scale[j]); the example weight and the
    # corrections are kept as logarithms. Long stages (hundreds of hypotheses) overflow float64
    # otherwise; a common factor on a row changes neither alpha_j nor the correction fractions.
    n, J = margins.shape
    for t in range(n):
        log_d = log_w0[t]
        for j in range(J):
            j0 = max(0, j - order)
            lp = 0.0
            ln = 0.0
            for k in range(j0, j):
                fp = w_pos[j, k] / w_pos[j, j] if w_pos[j, j] > 0.0 else 0.5
                fn = w_neg[j, k] / w_neg[j, j] if w_neg[j, j] > 0.0 else 0.5
                lp += _log_mix(fp, -alpha_inc[k], alpha_inc[k])
                ln += _log_mix(fn, alpha_inc[k], -alpha_inc[k])
            ldp = np.log(w_pos[j, j]) + lp if w_pos[j, j] > 0.0 else -np.inf
            ldn = np.log(w_neg[j, j]) + ln if w_neg[j, j] > 0.0 else -np.inf
            shift = max(max(ldp, ldn), log_d - log_scale[j])
            if shift > 300.0 or shift < -300.0:
                log_scale[j] += shift
                lp -= shift
                ln -= shift
            pi_pos = np.exp(lp)
            pi_neg = np.exp(ln)
            d = np.exp(log_d - log_scale[j])
            mj = margins[t, j]
            # only the band k = j0..j is ever read again (the corrections of row j use the
            # last K coordinates): updating it alone is exact and costs O(K) instead of O(J)
            for k in range(j0, j + 1):
                mk = margins[t, k]
                w_pos[j, k] = w_pos[j, k] * pi_pos + (d if (mk > 0 and mj > 0) else 0.0)
                w_neg[j, k] = w_neg[j, k] * pi_neg + (d if (mk < 0 and mj < 0) else 0.0)
            new_alpha = 0.5 * (np.log(max(w_pos[j, j], 1e-300)) - np.log(max(w_neg[j, j], 1e-300)))
            alpha_inc[j] = new_alpha - alpha[j]
            alpha[j] = new_alpha
            log_d -= new_alpha * mj


@njit(cache=True, nogil=True)
def _oza_learn(margins, w0, lam_correct, lam_wrong):
    n, J = margins.shape
    for t in range(n):
        lam = w0[t]
        for j in range(J):
            if margins[t, j] > 0:
                lam_correct[j] += lam
                eps = lam_wrong[j] / (lam_correct[j] + lam_wrong[j])
                lam *= 1.0 / (2.0 * (1.0 - eps))
            else:
                lam_wrong[j] += lam
                eps = lam_wrong[j] / (lam_correct[j] + lam_wrong[j])
                lam *= 1.0 / (2.0 * eps)


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def _check_margins(margins: Any, n_hypotheses: int | None, name: str = "margins") -> np.ndarray:
    m = check_array(margins, name, ndim=(1, 2), dtype=np.float64)
    if m.ndim == 1:
        m = m[None, :]
    if n_hypotheses is not None and m.shape[1] != n_hypotheses:
        raise ValueError(
            f"{name}: expected {n_hypotheses} columns (one per hypothesis), got {m.shape[1]}"
        )
    if not np.isin(m, (-1.0, 1.0)).all():
        raise ValueError(f"{name}: margins y*h(x) must be -1 or +1")
    return np.ascontiguousarray(m, dtype=np.int8)


def _check_weights(sample_weight: Any, n: int) -> np.ndarray:
    return check_sample_weight(sample_weight, n, normalize=False, positive=True)


def margins_from_hypotheses(hypotheses: Sequence[Any], X: Any, y: Any) -> np.ndarray:
    """Margins ``y·sign(h_j(x))`` of every example on every hypothesis.

    Parameters
    ----------
    hypotheses : sequence of weak learners
        Objects with ``predict_matrix(X_fm)`` (:class:`~vjboost.boost.tree.Tree` learners) or
        plain callables mapping an (n_samples, n_features) array to (n_samples,) outputs. The sign
        of the output is the vote; 0 counts as +1.
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), values in {-1, +1}

    Returns
    -------
    ndarray of shape (n_samples, n_hypotheses), int8
    """
    X = check_array(X, "X", ndim=2, dtype=np.float32)
    y, _ = check_labels(y, "y", n_samples=X.shape[0], signed=True, negative=(-1,))
    Xfm = np.ascontiguousarray(X.T)
    out = np.empty((X.shape[0], len(hypotheses)), dtype=np.int8)
    for j, h in enumerate(hypotheses):
        reads = np.asarray(getattr(h, "features_", ()), dtype=np.int64)
        if reads.size and reads.max() >= X.shape[1]:
            # said in the caller's terms (features of an example), not the tree's feature-major
            # "X has N rows"
            raise ValueError(f"X: examples have {X.shape[1]} feature(s), but hypothesis {j} "
                             f"reads feature {int(reads.max())}")
        raw = h.predict_matrix(Xfm) if hasattr(h, "predict_matrix") else h(X)
        vote = np.where(np.asarray(raw, dtype=np.float64) >= 0, 1, -1)
        out[:, j] = (vote * y).astype(np.int8)
    return out


def batch_coordinate_alpha(margins: Any, smoothing: float = 0.0) -> np.ndarray:
    """AdaBoost's coefficients for fixed, ordered hypotheses on a batch (the online target).

    One coordinate pass: ``α_j = ½ ln((ε + Σ d_i [m_ij = 1]) / (ε + Σ d_i [m_ij = −1]))`` with
    ``d_i = exp(−Σ_{k<j} α_k m_ik)``.

    Parameters
    ----------
    margins : array-like of shape (n_samples, n_hypotheses), values ±1
    smoothing : float, default=0
        ``ε`` added to both sums (needed when a hypothesis is never wrong).
    """
    m = _check_margins(margins, None).astype(np.float64)
    log_d = np.zeros(m.shape[0])
    alpha = np.empty(m.shape[1])
    for j in range(m.shape[1]):  # J coordinates, vectorised over examples; log domain
        shift = float(log_d.max())
        d = np.exp(log_d - shift)
        eps = smoothing * np.exp(-shift)
        wp = eps + d[m[:, j] > 0].sum()
        wn = eps + d[m[:, j] < 0].sum()
        if wp <= 0 or wn <= 0:
            raise ValueError(
                f"hypothesis {j} is always {'right' if wn <= 0 else 'wrong'}; use smoothing > 0"
            )
        alpha[j] = 0.5 * np.log(wp / wn)
        log_d -= alpha[j] * m[:, j]
    return alpha


def alpha_approximation_error(alpha_reference: Any, alpha: Any) -> float:
    """Normalised distance ``½‖a/‖a‖₁ − b/‖b‖₁‖₁`` between two coefficient vectors (in [0, 1]).

    Parameters
    ----------
    alpha_reference : array-like of shape (J,)
        The reference coefficients ``a`` (e.g. batch AdaBoost's), not all zero.
    alpha : array-like of shape (J,)
        The coefficients ``b`` compared with them, not all zero.

    Returns
    -------
    float
        0 when ``b`` is a positive multiple of ``a``.

    Examples
    --------
    >>> alpha_approximation_error([1.0, 1.0], [2.0, 2.0])
    0.0
    >>> alpha_approximation_error([1.0, 0.0], [0.0, 1.0])
    1.0
    """
    a = check_array(alpha_reference, "alpha_reference", ndim=1, dtype=np.float64)
    b = check_array(alpha, "alpha", ndim=1, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"alpha: shape {b.shape} differs from alpha_reference {a.shape}")
    na, nb = np.abs(a).sum(), np.abs(b).sum()
    if na == 0 or nb == 0:
        raise ValueError("alpha: coefficient vectors must not be all zero")
    return float(0.5 * np.abs(a / na - b / nb).sum())


# ------------------------------------------------------------------------------------------------
# learners
# ------------------------------------------------------------------------------------------------


class _OnlineWeights(Estimator):
    """Shared River-style surface: ``learn_one``/``learn_many``/``predict_one``/``predict_many``."""

    _fitted_attribute = "alpha_"

    def __init__(self, hypotheses: Sequence[Any] | None, n_hypotheses: int | None) -> None:
        if hypotheses is None and n_hypotheses is None:
            raise ValueError("give the weak hypotheses or n_hypotheses (to learn from margins)")
        if hypotheses is not None:
            hypotheses = list(hypotheses)
            if not hypotheses:
                raise ValueError("hypotheses: empty sequence")
            if n_hypotheses is not None and n_hypotheses != len(hypotheses):
                raise ValueError(
                    f"n_hypotheses: {n_hypotheses} disagrees with {len(hypotheses)} hypotheses"
                )
            n_hypotheses = len(hypotheses)
        check_in_range(n_hypotheses, "n_hypotheses", low=1, integer=True)
        self.hypotheses = hypotheses
        self.n_hypotheses = int(n_hypotheses)
        self.n_seen_ = 0

    def _need_hypotheses(self) -> list[Any]:
        if self.hypotheses is None:
            raise ValueError("this learner has no hypotheses: use learn_margins")
        return self.hypotheses

    def learn_margins(self, margins: Any, sample_weight: Any = None) -> None:
        """Update from margins ``y·h_j(x)``, shape (n_samples, n_hypotheses) or (n_hypotheses,).

        ``sample_weight`` (n_samples,), positive, gives each example its starting weight
        (default 1), e.g. to balance positives and negatives as cascade training does.

        Parameters
        ----------
        margins : array-like of shape (n_samples, n_hypotheses) or (n_hypotheses,)
            ``y h_j(x)`` in {-1, +1}, examples in arrival order.
        sample_weight : array-like of shape (n_samples,), optional
            Positive starting weights (default 1).
        """
        m = _check_margins(margins, self.n_hypotheses)
        self._learn(m, _check_weights(sample_weight, m.shape[0]))
        self.n_seen_ += m.shape[0]

    def learn_many(self, X: Any, y: Any) -> None:
        """Update from examples X (n_samples, n_features) with labels y in {-1, +1}, in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature values the hypotheses read.
        y : array-like of shape (n_samples,)
            Labels in {-1, +1}.
        """
        self.learn_margins(margins_from_hypotheses(self._need_hypotheses(), X, y))

    def learn_one(self, x: Any, y: float) -> None:
        """Update from one example ``x`` (n_features,) with label ``y`` in {-1, +1}.

        Parameters
        ----------
        x : array-like of shape (n_features,)
            Feature values the hypotheses read.
        y : float
            Label, -1 or +1.
        """
        x = check_array(x, "x", ndim=1, dtype=np.float32)
        self.learn_many(x[None, :], [y])

    def decision_many(self, X: Any) -> np.ndarray:
        """Scores ``Σ α_j sign(h_j(x))`` of shape (n_samples,)."""
        X = check_array(X, "X", ndim=2, dtype=np.float32)
        votes = margins_from_hypotheses(self._need_hypotheses(), X, np.ones(X.shape[0]))
        return votes.astype(np.float64) @ self.alpha_

    def predict_many(self, X: Any) -> np.ndarray:
        """Labels in {-1, +1} of shape (n_samples,)."""
        return np.where(self.decision_many(X) >= 0, 1, -1)

    def predict_one(self, x: Any) -> int:
        """Label in {-1, +1} of one example."""
        x = check_array(x, "x", ndim=1, dtype=np.float32)
        return int(self.predict_many(x[None, :])[0])


class OnlineCoordinateBoost(_OnlineWeights):
    """K-order Online Coordinate Boosting of fixed, ordered weak hypotheses.

    Parameters
    ----------
    hypotheses : sequence of weak learners, optional
        Trees (:class:`~vjboost.boost.tree.Tree`; their output's sign is the vote) or callables
        on (n_samples, n_features) arrays. Without them, feed margins with :meth:`learn_margins`.
    n_hypotheses : int, optional
        Number of hypotheses when ``hypotheses`` is not given.
    order : int, optional
        ``K``: how many preceding coordinates' changes correct each cumulative sum. ``None`` (the
        default) uses all of them (``K = J − 1``); ``0`` applies no correction.
    smoothing : float, default=0.5
        Initial value ``ε`` of every cumulative sum (keeps the log-ratios finite).

    Attributes
    ----------
    alpha_ : ndarray of shape (n_hypotheses,)
        Current coefficients.
    w_pos_, w_neg_ : ndarray of shape (n_hypotheses, n_hypotheses)
        Cumulative pairwise weights. Only the band ``j − K ≤ k ≤ j`` of row ``j`` is kept up to
        date by :meth:`learn_margins` (the rest is never read with order ``K``); the diagonal
        holds ``W⁺_jj``/``W⁻_jj``. Row ``j`` is stored divided by a running scale factor.
    n_seen_ : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> margins = np.where(rng.random((2000, 5)) < [0.7, 0.65, 0.6, 0.6, 0.55], 1, -1)
    >>> ocb = OnlineCoordinateBoost(n_hypotheses=5)
    >>> ocb.learn_margins(margins)
    >>> err = alpha_approximation_error(batch_coordinate_alpha(margins, 0.5), ocb.alpha_)
    >>> bool(err < 0.05)
    True
    """

    def __init__(
        self,
        hypotheses: Sequence[Any] | None = None,
        *,
        n_hypotheses: int | None = None,
        order: int | None = None,
        smoothing: float = 0.5,
    ) -> None:
        super().__init__(hypotheses, n_hypotheses)
        if order is not None:
            check_in_range(order, "order", low=0, integer=True)
        check_in_range(smoothing, "smoothing", low=0, low_inclusive=False)
        self.order = order
        self.smoothing = float(smoothing)
        J = self.n_hypotheses
        self.alpha_ = np.zeros(J)
        self._alpha_inc = np.zeros(J)
        self.w_pos_ = np.full((J, J), self.smoothing)
        self.w_neg_ = np.full((J, J), self.smoothing)
        self._log_scale = np.zeros(J)

    @property
    def _k(self) -> int:
        return (
            self.n_hypotheses - 1 if self.order is None else min(self.order, self.n_hypotheses - 1)
        )

    def _learn(self, m: np.ndarray, w0: np.ndarray) -> None:
        _ocb_learn(
            m,
            np.log(w0),
            self.alpha_,
            self._alpha_inc,
            self.w_pos_,
            self.w_neg_,
            self._log_scale,
            self._k,
        )

    def init_from_margins(self, margins: Any, sample_weight: Any = None) -> OnlineCoordinateBoost:
        """Start from batch AdaBoost on an initial set (exact sums, no approximation).

        The cumulative sums are those of the batch coordinate pass over ``margins`` (plus the
        smoothing), and ``α`` the batch coefficients. ``sample_weight`` as :meth:`learn_margins`.

        Parameters
        ----------
        margins : array-like of shape (n_samples, n_hypotheses)
            ``y h_j(x)`` in {-1, +1} of the initial set.
        sample_weight : array-like of shape (n_samples,), optional
            Positive starting weights (default 1).

        Returns
        -------
        self
        """
        m = _check_margins(margins, self.n_hypotheses).astype(np.float64)
        J = self.n_hypotheses
        log_d = np.log(_check_weights(sample_weight, m.shape[0]))
        pos, neg = (m > 0).astype(np.float64), (m < 0).astype(np.float64)
        for j in range(J):  # exact pairwise sums with the weights coordinate j sees
            shift = max(float(log_d.max()), np.log(self.smoothing))
            d = np.exp(log_d - shift)
            eps = self.smoothing * np.exp(-shift)
            self._log_scale[j] = shift
            self.w_pos_[j, : j + 1] = eps + (d * pos[:, j]) @ pos[:, : j + 1]
            self.w_neg_[j, : j + 1] = eps + (d * neg[:, j]) @ neg[:, : j + 1]
            self.alpha_[j] = 0.5 * np.log(self.w_pos_[j, j] / self.w_neg_[j, j])
            log_d -= self.alpha_[j] * m[:, j]
        self._alpha_inc[:] = 0.0
        self.n_seen_ = int(m.shape[0])
        return self

    def init_from_sums(self, w_pos: Any, w_neg: Any) -> OnlineCoordinateBoost:
        """Start from given cumulative sums (J, J) (e.g. saved from an earlier run).

        Parameters
        ----------
        w_pos, w_neg : array-like of shape (n_hypotheses, n_hypotheses), float64
            The sums ``w_pos_`` and ``w_neg_`` of correct and wrong weights (unscaled); their
            diagonals must be positive. They are copied; ``α_j = ½ ln(w_pos[j, j] /
            w_neg[j, j])``.

        Returns
        -------
        self
        """
        J = self.n_hypotheses
        wp = check_array(w_pos, "w_pos", ndim=2, dtype=np.float64)
        wn = check_array(w_neg, "w_neg", ndim=2, dtype=np.float64)
        for name, w in (("w_pos", wp), ("w_neg", wn)):
            if w.shape != (J, J):
                raise ValueError(f"{name}: expected shape {(J, J)}, got {w.shape}")
            if (np.diag(w) <= 0).any():
                raise ValueError(f"{name}: diagonal sums must be positive")
        self.w_pos_, self.w_neg_ = wp.copy(), wn.copy()
        self._log_scale[:] = 0.0
        self.alpha_ = 0.5 * np.log(np.diag(wp) / np.diag(wn))
        self._alpha_inc[:] = 0.0
        return self


class OzaBoostWeights(_OnlineWeights):
    """Oza & Russell's online boosting weight update for fixed hypotheses (no learner training).

    Each example starts with weight ``λ = 1``; hypothesis ``j`` adds ``λ`` to its correct (or
    wrong) sum, ``ε_j`` = wrong / total, and ``λ`` is scaled by ``1/(2(1−ε_j))`` if correct, else by
    ``1/(2ε_j)``. ``α_j = ½ ln((1−ε_j)/ε_j)``.

    Parameters
    ----------
    hypotheses, n_hypotheses
        As :class:`OnlineCoordinateBoost`.
    smoothing : float, default=0.5
        Initial value of both sums.
    """

    def __init__(
        self,
        hypotheses: Sequence[Any] | None = None,
        *,
        n_hypotheses: int | None = None,
        smoothing: float = 0.5,
    ) -> None:
        super().__init__(hypotheses, n_hypotheses)
        check_in_range(smoothing, "smoothing", low=0, low_inclusive=False)
        self.smoothing = float(smoothing)
        self.lambda_correct_ = np.full(self.n_hypotheses, self.smoothing)
        self.lambda_wrong_ = np.full(self.n_hypotheses, self.smoothing)

    def _learn(self, m: np.ndarray, w0: np.ndarray) -> None:
        _oza_learn(m, w0, self.lambda_correct_, self.lambda_wrong_)

    @property
    def alpha_(self) -> np.ndarray:
        return 0.5 * np.log(self.lambda_correct_ / self.lambda_wrong_)
