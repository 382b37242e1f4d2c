"""Boosting losses as step objects: the interface between boosting algorithms and samplers.

One class per algorithm holds the labels, the initial weights and the current scores ``F`` of all
``N`` training examples, and knows how to turn them into the quantities a weak learner is fitted
to. Boosting a round with any loss — whether the caller holds the whole feature matrix (the
estimators in :mod:`vjboost.boost.ensemble`) or evaluates blocks of features on sampled examples
(samplers) — is these four calls::

    step = make_loss("gentle", y_pm, sample_weight, balanced_init=True)
    for t in range(T):
        # (a) current weights / working response of all N examples
        w, r = step.weights, step.response          # (N,), (N,); w sums to one
        ids = step.trim(0.95)                       # optional: OpenCV's weight trimming
        # ... choose feature ids and example ids (ids, or any subset / sample of them) ...
        block = family.evaluate(channels, feature_ids, ids)     # (Q, S) float32 (or uint8 bins)
        # (b) fit a weak learner on the block
        learner, search = fit_weak_learner(step, block, sample_ids=ids, kind="stump",
                                           feature_ids=feature_ids, block=True)
        # (c) refit its coefficient / leaf values on ALL examples
        rows = family.evaluate(channels, learner.features_, None)  # (len(features_), N)
        leaf = learner.apply(rows)                  # leaf index of every example
        learner.leaf_values = step.fit_leaves(leaf, learner.leaf_values)
        # (d) update the scores F += h(x); returns the new training loss
        loss = step.update(learner.leaf_values[leaf])

``fit_weak_learner`` lives in :mod:`vjboost.boost.weak`; ``search`` gives the per-feature scores
of the block (for samplers that rank features). Steps (c)+(d) are also available as
``step.refit_and_update(learner, rows)``. With ``block=True`` the block's columns are the examples
``sample_ids`` (in that order); with ``block=False`` ``values`` holds all ``N`` examples and
``sample_ids`` selects columns (nothing is copied).

Criteria and leaf values (all leaf values include the coefficient, so ``F`` is a plain sum):

* ``discrete`` — criterion ``"discrete"``; leaves ``alpha * h`` with ``alpha = 1/2 ln((1-e)/e)``;
  loss ``sum w0 exp(-y F)``.
* ``real`` — criterion ``"real"``; leaves ``1/2 ln((W+ + eps)/(W- + eps))``; loss
  ``sum w0 exp(-y F)``.
* ``gentle`` — criterion ``"regression"``; leaves: weighted mean of ``y``; loss
  ``sum w0 exp(-y F)``.
* ``logit`` — criterion ``"regression"``; leaves: half the weighted mean of ``z``; loss
  ``sum w0 log(1 + exp(-2 y F))``.

(``w0``: initial weights, summing to one; leaves are refitted on all examples.)
Discrete AdaBoost keeps the signs ``h`` of the fitted hypothesis and recomputes only ``alpha``
from the weighted error ``e`` on all examples. LogitBoost (Friedman, Hastie & Tibshirani 2000)
uses ``p = 1 / (1 + exp(-2F))``, weights ``w0 p (1 - p)`` and the working response
``z = (y* - p) / (p (1 - p))`` (``y*`` in {0, 1}) clipped to ``[-z_max, z_max]`` (``z_max = 4``, as
the paper recommends); ``F += f / 2``.

AdaBoost.MH (:class:`MulticlassLoss`) has weights ``(N, K)`` and works with
:func:`vjboost.boost.stumps.search_multiclass_stumps`; the vote vector's coefficient is
``alpha = 1/2 ln((1 + gamma) / (1 - gamma))`` from the edge ``gamma`` on all examples.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from vjboost._validation import check_array, check_in_range, check_sample_weight

__all__ = [
    "LOSSES",
    "BoostingLoss",
    "DiscreteAdaBoost",
    "GentleAdaBoost",
    "LogitBoost",
    "MulticlassLoss",
    "RealAdaBoost",
    "make_loss",
    "trim_weights",
]

_EPS_ERR = 1e-10


def trim_weights(weights: np.ndarray, rate: float) -> np.ndarray:
    """Ids of the heaviest examples carrying at least ``rate`` of the total weight.

    As OpenCV's ``weightTrimRate``: the examples whose weights, summed from the lightest up, stay
    within the lightest ``1 - rate`` of the total are dropped; examples tied with the lightest kept
    weight are all kept. ``rate = 1`` keeps every example with positive weight.

    Returns
    -------
    ids : ndarray of shape (S,), int64, sorted
    """
    rate = check_in_range(rate, "rate", low=0.0, high=1.0, low_inclusive=False)
    w = np.asarray(weights, dtype=np.float64)
    if rate >= 1.0:
        return np.flatnonzero(w > 0).astype(np.int64)
    order = np.argsort(w, kind="stable")
    cum = np.cumsum(w[order])
    k = int(np.searchsorted(cum, (1.0 - rate) * cum[-1], side="right"))
    k = min(k, w.size - 1)
    cut = w[order[k]]
    return np.flatnonzero((w >= cut) & (w > 0)).astype(np.int64)


def _check_pm_labels(y: Any) -> np.ndarray:
    y = check_array(y, "y", ndim=1, dtype=np.float64)
    if not np.all(np.abs(y) == 1.0):
        bad = np.unique(y[np.abs(y) != 1.0])[:5]
        raise ValueError(f"y: labels must be -1 or +1, got {bad.tolist()}")
    if np.unique(y).size < 2:
        raise ValueError(f"y: only one class present ({y[0]:+.0f}); boosting needs two classes")
    return y


class BoostingLoss:
    """Base class of the binary losses (see the module docstring for the protocol).

    Parameters
    ----------
    y : array-like of shape (N,)
        Labels in {-1, +1}.
    sample_weight : array-like of shape (N,), optional
        Non-negative initial weights (default uniform).
    balanced_init : bool, default=False
        Rescale the initial weights so positives and negatives each carry half of the total (the
        cascade setting of Viola & Jones).

    Attributes
    ----------
    y : ndarray (N,)
    initial_weights : ndarray (N,), sums to one
    scores : ndarray (N,), current strong-classifier scores ``F``
    """

    name: ClassVar[str]
    criterion: ClassVar[str]

    def __init__(self, y: Any, sample_weight: Any = None, *, balanced_init: bool = False) -> None:
        self.y = _check_pm_labels(y)
        w0 = check_sample_weight(sample_weight, self.y.size)
        if balanced_init:
            pos = self.y > 0
            wp, wn = w0[pos].sum(), w0[~pos].sum()
            if wp <= 0 or wn <= 0:
                raise ValueError("sample_weight: one class has zero total weight")
            w0 = np.where(pos, 0.5 * w0 / wp, 0.5 * w0 / wn)
        self.initial_weights = w0
        self.scores = np.zeros(self.y.size)
        self._cache: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_samples(self) -> int:
        return int(self.y.size)

    # (a) ------------------------------------------------------------------------------
    def _compute(self) -> tuple[np.ndarray, np.ndarray]:
        # w0 exp(-y F), normalised; computed in the log domain so large margins cannot overflow
        with np.errstate(divide="ignore"):
            logw = np.log(self.initial_weights) - self.y * self.scores
        logw -= logw.max()
        w = np.exp(logw)
        return w / w.sum(), self.y

    def _current(self) -> tuple[np.ndarray, np.ndarray]:
        if self._cache is None:
            self._cache = self._compute()
        return self._cache

    @property
    def weights(self) -> np.ndarray:
        """Current weights (N,) of the weak-learner fit, summing to one."""
        return self._current()[0]

    @property
    def response(self) -> np.ndarray:
        """Current response (N,) the weak learner fits (labels, or LogitBoost's ``z``)."""
        return self._current()[1]

    def trim(self, rate: float = 1.0) -> np.ndarray:
        """Example ids kept by weight trimming at ``rate`` (see :func:`trim_weights`)."""
        return trim_weights(self.weights, rate)

    # (c) ------------------------------------------------------------------------------
    def fit_leaves(self, leaf: Any, hypothesis: Any) -> np.ndarray:
        """Leaf values (coefficient included) refitted on all examples.

        Parameters
        ----------
        leaf : ndarray of shape (N,), int
            Leaf index of every training example.
        hypothesis : ndarray of shape (L,)
            The fitted learner's leaf values (signs for Discrete AdaBoost).

        Returns
        -------
        ndarray of shape (L,), float64
        """
        leaf = np.asarray(leaf, dtype=np.int64)
        hyp = np.asarray(hypothesis, dtype=np.float64)
        if leaf.shape != (self.n_samples,):
            raise ValueError(f"leaf: expected shape ({self.n_samples},), got {leaf.shape}")
        if leaf.size and (leaf.min() < 0 or leaf.max() >= hyp.size):
            raise ValueError("leaf: indices out of range of the hypothesis' leaves")
        return self._fit_leaves(leaf, hyp)

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # (d) ------------------------------------------------------------------------------
    def update(self, predictions: Any) -> float:
        """``F += predictions`` (N,); returns the new training loss."""
        p = np.asarray(predictions, dtype=np.float64)
        if p.shape != (self.n_samples,):
            raise ValueError(f"predictions: expected shape ({self.n_samples},), got {p.shape}")
        self.scores = self.scores + p
        self._cache = None
        return self.loss()

    def refit_and_update(self, learner: Any, rows: Any, *, binned: bool = False) -> float:
        """(c) + (d): refit ``learner``'s leaves on all examples and add it to the scores.

        ``rows`` holds the values of ``learner.features_`` for all N examples, shape
        ``(len(features_), N)`` (uint8 bins with ``binned=True``).
        """
        leaf = learner.apply(rows, binned=binned)
        learner.leaf_values = self.fit_leaves(leaf, learner.leaf_values)
        return self.update(learner.leaf_values[leaf])

    def loss(self) -> float:
        """Training loss at the current scores."""
        return float(np.sum(self.initial_weights * np.exp(-self.y * self.scores)))

    def _leaf_sums(self, leaf: np.ndarray, n: int, w: np.ndarray, v: np.ndarray):
        a = np.bincount(leaf, weights=w, minlength=n)
        b = np.bincount(leaf, weights=w * v, minlength=n)
        return a, b


class DiscreteAdaBoost(BoostingLoss):
    """Discrete AdaBoost (Freund & Schapire): ``h`` in {-1, +1}, ``alpha`` from the error."""

    name = "discrete"
    criterion = "discrete"
    last_edge: float = 0.0

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray) -> np.ndarray:
        signs = np.where(hyp >= 0, 1.0, -1.0)
        w = self.weights
        h = signs[leaf]
        err = float(np.sum(w[h != self.y]) / w.sum())
        self.last_edge = 1.0 - 2.0 * err
        e = min(max(err, _EPS_ERR), 1.0 - _EPS_ERR)
        alpha = 0.5 * np.log((1.0 - e) / e)
        return alpha * signs


class RealAdaBoost(BoostingLoss):
    """Real AdaBoost (Schapire & Singer): ``h = 1/2 ln((W+ + eps)/(W- + eps))`` per leaf.

    ``eps = W / (2 N)`` (smoothing of Schapire & Singer, with ``W`` the total weight).
    """

    name = "real"
    criterion = "real"

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray) -> np.ndarray:
        w = self.weights
        a, b = self._leaf_sums(leaf, hyp.size, w, self.y)
        wp = np.maximum(0.5 * (a + b), 0.0)
        wn = np.maximum(0.5 * (a - b), 0.0)
        eps = w.sum() / (2.0 * self.n_samples)
        return 0.5 * np.log((wp + eps) / (wn + eps))


class GentleAdaBoost(BoostingLoss):
    """Gentle AdaBoost (Friedman, Hastie & Tibshirani): weighted least-squares leaves."""

    name = "gentle"
    criterion = "regression"

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray) -> np.ndarray:
        a, b = self._leaf_sums(leaf, hyp.size, self.weights, self.response)
        return np.divide(b, a, out=np.zeros_like(a), where=a > 0)


class LogitBoost(GentleAdaBoost):
    """LogitBoost (Friedman, Hastie & Tibshirani), two classes.

    Parameters
    ----------
    z_max : float, default=4
        Clip of the working response.
    """

    name = "logit"
    criterion = "regression"

    def __init__(
        self, y: Any, sample_weight: Any = None, *, balanced_init: bool = False, z_max: float = 4.0
    ) -> None:
        super().__init__(y, sample_weight, balanced_init=balanced_init)
        self.z_max = float(check_in_range(z_max, "z_max", low=0.0, low_inclusive=False))

    def _compute(self) -> tuple[np.ndarray, np.ndarray]:
        p = 1.0 / (1.0 + np.exp(-2.0 * self.scores))
        q = p * (1.0 - p)
        ystar = (self.y > 0).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (ystar - p) / q
        z = np.where(q > 0, z, np.where(ystar > 0, self.z_max, -self.z_max))
        z = np.clip(z, -self.z_max, self.z_max)
        w = self.initial_weights * np.maximum(q, 1e-300)
        return w / w.sum(), z

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray) -> np.ndarray:
        return 0.5 * super()._fit_leaves(leaf, hyp)

    def loss(self) -> float:
        return float(np.sum(self.initial_weights * np.logaddexp(0.0, -2.0 * self.y * self.scores)))


LOSSES = {
    "discrete": DiscreteAdaBoost,
    "real": RealAdaBoost,
    "gentle": GentleAdaBoost,
    "logit": LogitBoost,
}


def make_loss(
    name: str, y: Any, sample_weight: Any = None, *, balanced_init: bool = False
) -> BoostingLoss:
    """Build the step object of a binary boosting algorithm.

    Parameters
    ----------
    name : {"discrete", "real", "gentle", "logit"}
    y : array-like of shape (N,)
        Labels in {-1, +1}.
    sample_weight : array-like of shape (N,), optional
    balanced_init : bool, default=False
        Positives and negatives each start with total weight 1/2.
    """
    if name not in LOSSES:
        raise ValueError(f"loss: expected one of {sorted(LOSSES)}, got {name!r}")
    return LOSSES[name](y, sample_weight, balanced_init=balanced_init)


class MulticlassLoss:
    """AdaBoost.MH (Schapire & Singer) with {-1, +1} vote vectors.

    Parameters
    ----------
    labels : array-like of shape (N,), int
        Class index in ``0..K-1`` of every example.
    n_classes : int
    sample_weight : array-like of shape (N,), optional

    Attributes
    ----------
    Y : ndarray (N, K)
        +1 for the true class, -1 otherwise.
    initial_weights : ndarray (N, K), ``sample_weight_i / K``, sums to one
    scores : ndarray (N, K)
    """

    name = "mh"

    def __init__(self, labels: Any, n_classes: int, sample_weight: Any = None) -> None:
        labels = check_array(labels, "y", ndim=1)
        if labels.dtype.kind not in "iu":
            raise TypeError("y: class indices must be integers")
        n_classes = check_in_range(n_classes, "n_classes", low=2, integer=True)
        if labels.min() < 0 or labels.max() >= n_classes:
            raise ValueError(f"y: class indices must be in [0, {n_classes})")
        n = labels.size
        self.Y = np.where(labels[:, None] == np.arange(n_classes)[None, :], 1.0, -1.0)
        w = check_sample_weight(sample_weight, n)
        self.initial_weights = np.repeat(w[:, None], n_classes, axis=1) / n_classes
        self.scores = np.zeros((n, n_classes))
        self.last_edge = 0.0

    @property
    def n_samples(self) -> int:
        return int(self.Y.shape[0])

    @property
    def weights(self) -> np.ndarray:
        """Current weights (N, K), summing to one."""
        with np.errstate(divide="ignore"):
            logw = np.log(self.initial_weights) - self.Y * self.scores
        logw -= logw.max()
        w = np.exp(logw)
        return w / w.sum()

    @property
    def weighted_labels(self) -> np.ndarray:
        """``w_ik * Y_ik`` (N, K): the input of the MH stump search."""
        return self.weights * self.Y

    def trim(self, rate: float = 1.0) -> np.ndarray:
        """Example ids kept by weight trimming on the per-example total weight."""
        return trim_weights(self.weights.sum(axis=1), rate)

    def fit_alpha(self, phi: Any, votes: Any) -> float:
        """``alpha = 1/2 ln((1 + gamma)/(1 - gamma))`` with the edge ``gamma`` on all examples.

        ``phi`` (N,) in {-1, +1} is the learner's side of each example, ``votes`` (K,) its vote.
        """
        phi = np.asarray(phi, dtype=np.float64)
        votes = np.asarray(votes, dtype=np.float64)
        gamma = float(np.sum(self.weights * self.Y * phi[:, None] * votes[None, :]))
        self.last_edge = gamma
        g = min(max(gamma, -1.0 + _EPS_ERR), 1.0 - _EPS_ERR)
        return 0.5 * np.log((1.0 + g) / (1.0 - g))

    def update(self, predictions: Any) -> float:
        p = np.asarray(predictions, dtype=np.float64)
        if p.shape != self.scores.shape:
            raise ValueError(f"predictions: expected shape {self.scores.shape}, got {p.shape}")
        self.scores = self.scores + p
        return self.loss()

    def loss(self) -> float:
        """``sum_ik w0_ik exp(-Y_ik F_ik)`` (upper bound of the Hamming loss)."""
        return float(np.sum(self.initial_weights * np.exp(-self.Y * self.scores)))
