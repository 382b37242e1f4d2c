"""Boosting losses as step objects: what a weak learner is fitted to, and how its leaves are set.

One object per algorithm holds the labels, the initial weights and the current scores ``F`` of
all ``N`` training examples. Every boosting loop of vjboost (:func:`vjboost.boost.rounds.
run_rounds`) asks it the same four things each round:

``problems()``
    The :class:`Problem` (s) of the round: weights, working response and split criterion of
    each weak learner to fit (one for the two-class losses and AdaBoost.MH, ``J`` for the
    ``J``-class LogitBoost, one regression per class).
``refit_leaves(k, leaf, hypothesis, sample_ids=None)``
    The final leaf values (coefficient included) of the learner fitted to problem ``k``,
    refitted on **all** examples from their leaf indices (or on ``sample_ids`` only: the
    weight trimming of Friedman, Hastie & Tibshirani, where trimmed examples take no part in
    the learner).
``update(predictions)``
    ``F += predictions``; returns the training loss.
``done``
    True when the weights have become degenerate (a perfect discrete weak learner).

The same calls by hand, for a caller that evaluates feature blocks itself::

    step = make_loss("gentle", y_pm)
    learner, search = fit_weak_learner(step, block, sample_ids=ids, block=True,
                                       feature_ids=feature_ids)   # vjboost.boost.search
    loss = step.refit_and_update(learner, rows)   # rows: learner.features_ on all N examples

Binary algorithms (``y`` in {-1, +1}; leaves include the coefficient, so ``F`` is a plain sum):

* ``discrete`` — criterion ``"discrete"``; leaves ``alpha * h`` with ``alpha = 1/2 ln((1-e)/e)``;
  loss ``sum w0 exp(-y F)``.
* ``real`` — criterion ``"real"``; leaves ``1/2 ln((W+ + eps)/(W- + eps))``, ``eps = W / 2N``;
  loss ``sum w0 exp(-y F)``.
* ``gentle`` — criterion ``"regression"``; leaves: weighted mean of ``y``; loss
  ``sum w0 exp(-y F)``.
* ``logit`` — criterion ``"regression"``; leaves: half the weighted mean of ``z``; loss
  ``sum w0 log(1 + exp(-2 y F))``. LogitBoost (Friedman, Hastie & Tibshirani 2000) uses
  ``p = 1 / (1 + exp(-2F))``, weights ``w0 p (1 - p)`` and the working response
  ``z = (y* - p) / (p (1 - p))`` (``y*`` in {0, 1}) clipped to ``[-z_max, z_max]``
  (``z_max = 4``, as the paper recommends); ``F += f / 2``.

Multi-class algorithms (``K`` classes; learners have ``(L, K)`` leaves):

* :class:`MulticlassLoss` — AdaBoost.MH (Schapire & Singer) on the ``N x K`` one-vs-rest
  problems ``Y_ik`` in {-1, +1}, weights ``w0_ik exp(-Y_ik F_ik)``, one partition of the examples
  shared by the classes with one leaf value per class: ``"discrete"`` (vote vectors: outputs
  ``alpha v_k phi(x)``, criterion ``"vote"``), ``"real"`` (``1/2 ln((W+ + eps)/(W- + eps))`` per
  leaf and class) and ``"gentle"`` (weighted mean of ``Y`` per leaf and class).
* :class:`OneVsRestLoss` — AdaBoost.MH with class-specific learners, the multi-class Discrete,
  Real and Gentle AdaBoost that Friedman, Hastie & Tibshirani compare with LogitBoost: the MH loss
  ``sum_ik w0_i exp(-Y_ik F_ik)`` separates over the classes, so with one learner per class and
  round it is ``K`` two-class boosters (one-vs-rest) run side by side; learner ``k`` has leaves
  only in column ``k``.
* :class:`MultiLogitLoss` — the J-class LogitBoost of Friedman, Hastie & Tibshirani (2000,
  Algorithm 6): per class ``j`` the weights ``w0 p_j (1 - p_j)`` and working response
  ``z_j = (y*_j - p_j) / (p_j (1 - p_j))`` (clipped), one least-squares learner ``f_j`` per class,
  centred scores ``F_j += (J-1)/J (f_j - 1/J sum_k f_k)``, ``p = softmax(F)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from vjboost._validation import check_array, check_in_range, check_labels, check_sample_weight

__all__ = [
    "CRITERIA",
    "LOSSES",
    "BoostingLoss",
    "DiscreteAdaBoost",
    "GentleAdaBoost",
    "LogitBoost",
    "MultiLogitLoss",
    "MulticlassLoss",
    "OneVsRestLoss",
    "Problem",
    "RealAdaBoost",
    "make_loss",
    "trim_weights",
]

_EPS_ERR = 1e-10
#: split criteria of the weak-learner searches (see :mod:`vjboost.boost.stumps`)
CRITERIA = ("discrete", "real", "regression", "vote")


def trim_weights(weights: np.ndarray, rate: float) -> np.ndarray:
    """Ids of the heaviest examples carrying at least ``rate`` of the total weight.

    As OpenCV's ``weightTrimRate``: the examples whose weights, summed from the lightest up, stay
    within the lightest ``1 - rate`` of the total are dropped; examples tied with the lightest kept
    weight are all kept. ``rate = 1`` keeps every example with positive weight.

    Parameters
    ----------
    weights : ndarray of shape (N,)
        Non-negative example weights (any scale).
    rate : float
        Share of the total weight to keep, in (0, 1].

    Returns
    -------
    ids : ndarray of shape (S,), int64, sorted

    Examples
    --------
    >>> trim_weights(np.array([0.5, 0.3, 0.1, 0.05, 0.05]), 0.85).tolist()
    [0, 1, 2]
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


@dataclass
class Problem:
    """What one weak learner of a round is fitted to.

    Attributes
    ----------
    weights : ndarray of shape (N,) or (N, K), float64
        Current boosting weights (normalised to sum to one).
    response : ndarray of shape (N,) or (N, K), float64
        Labels in {-1, +1} or a working response (LogitBoost, Gentle AdaBoost).
    criterion : {"discrete", "real", "regression", "vote"}
        The split criterion (:mod:`vjboost.boost.stumps`). With ``(N, K)`` weights,
        ``"real"``/``"regression"`` score a split summed over the ``K`` columns and give one leaf
        value per column; ``"vote"`` is AdaBoost.MH's vote-vector stump.
    sample_ids : ndarray of int, optional
        The examples to fit the learner on (sub-sampling boosters); default: all, or those
        kept by weight trimming.

    Examples
    --------
    >>> p = Problem(np.ones(4), np.array([1.0, -1.0, 1.0, 1.0]), "discrete")
    >>> p.weights.tolist()
    [0.25, 0.25, 0.25, 0.25]
    """

    weights: np.ndarray
    response: np.ndarray
    criterion: str
    sample_ids: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion: expected one of {CRITERIA}, got {self.criterion!r}")
        w = check_array(self.weights, "weights", ndim=(1, 2), dtype=np.float64)
        r = check_array(self.response, "response", ndim=(1, 2), dtype=np.float64)
        if w.shape != r.shape:
            raise ValueError(f"weights {w.shape} and response {r.shape} must have the same shape")
        if self.criterion == "vote" and w.ndim != 2:
            raise ValueError("the 'vote' criterion needs (N, K) weights")
        if (w < 0).any():
            raise ValueError("weights: negative weights are not allowed")
        total = w.sum()
        if not total > 0:
            raise ValueError("weights: all weights are zero")
        # weights that already sum to one are kept bit for bit (a second division would move
        # them by an ulp and could flip ties between equally good splits)
        self.weights = w if abs(total - 1.0) <= 1e-12 else w / total
        self.response = r

    @property
    def n_samples(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_outputs(self) -> int:
        """1 for scalar leaves, K for multi-class problems."""
        return 1 if self.weights.ndim == 1 else int(self.weights.shape[1])

    @property
    def example_weights(self) -> np.ndarray:
        """Per-example weight ``(N,)`` (summed over the K columns), sums to one."""
        w = self.weights
        return w if w.ndim == 1 else w.sum(axis=1)


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

    Examples
    --------
    >>> step = make_loss("discrete", [1, 1, -1, -1])
    >>> isinstance(step, BoostingLoss), step.problems()[0].criterion
    (True, 'discrete')
    >>> round(step.update([0.5, 0.5, 0.5, -0.5]), 4)   # example 2 is now on the wrong side
    0.8671
    >>> np.round(step.weights, 3).tolist()             # and carries the most weight
    [0.175, 0.175, 0.475, 0.175]
    """

    name: ClassVar[str]
    criterion: ClassVar[str]
    n_outputs: ClassVar[int] = 1

    def __init__(self, y: Any, sample_weight: Any = None, *, balanced_init: bool = False) -> None:
        self.y, _ = check_labels(y, "y", signed=True, negative=(-1,))
        check_labels(self.y, "y", n_classes=2)  # both classes present
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
        self.last_edge = 0.0

    @property
    def n_samples(self) -> int:
        return int(self.y.size)

    # -- weights and response ------------------------------------------------------------------
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

    def problems(self) -> list[Problem]:
        """The one problem of the round."""
        w, r = self._current()
        return [Problem(w, r, self.criterion)]

    def trim(self, rate: float = 1.0) -> np.ndarray:
        """Example ids kept by weight trimming at ``rate`` (see :func:`trim_weights`)."""
        return trim_weights(self.weights, rate)

    @property
    def done(self) -> bool:
        """True after a perfect discrete weak learner (the weights are degenerate from there)."""
        return False

    # -- leaves ----------------------------------------------------------------------------------
    def fit_leaves(self, leaf: Any, hypothesis: Any, *, sample_ids: Any = None) -> np.ndarray:
        """Leaf values (coefficient included) refitted on all examples.

        Parameters
        ----------
        leaf : ndarray of shape (N,), int
            Leaf index of every training example.
        hypothesis : ndarray of shape (L,)
            The fitted learner's leaf values (signs for Discrete AdaBoost).
        sample_ids : ndarray of int, optional
            Refit on these examples only (default all).

        Returns
        -------
        ndarray of shape (L,), float64
        """
        leaf = np.asarray(leaf, dtype=np.int64)
        hyp = np.asarray(hypothesis, dtype=np.float64)
        if leaf.shape != (self.n_samples,):
            raise ValueError(f"leaf: expected shape ({self.n_samples},), got {leaf.shape}")
        if leaf.size and (leaf.min() < 0 or leaf.max() >= hyp.shape[0]):
            raise ValueError("leaf: indices out of range of the hypothesis' leaves")
        return self._fit_leaves(leaf, hyp, _restrict(self.weights, sample_ids),
                                self.n_samples if sample_ids is None else len(sample_ids))

    def refit_leaves(self, k: int, leaf: np.ndarray, hypothesis: np.ndarray,
                     sample_ids: np.ndarray | None = None) -> np.ndarray:
        """Final leaves of the learner fitted to problem ``k`` (the loop's call).

        Parameters
        ----------
        k : int
            The problem's index in :meth:`problems` (a two-class loss has one: 0, unused).
        leaf : ndarray of shape (N,), int64
            Leaf index of every training example.
        hypothesis : ndarray of shape (L,)
            The fitted learner's leaf values (signs for Discrete AdaBoost).
        sample_ids : ndarray of int, optional
            Refit on these examples only (default all).

        Returns
        -------
        ndarray of shape (L,), float64
            Leaf values, coefficient included.
        """
        return self._fit_leaves(leaf, np.asarray(hypothesis, dtype=np.float64),
                                _restrict(self.weights, sample_ids),
                                self.n_samples if sample_ids is None else len(sample_ids))

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray, w: np.ndarray, n_used: int
                    ) -> np.ndarray:
        """Leaves from the weights ``w`` (zero for the examples outside the ``n_used`` fitted)."""
        raise NotImplementedError

    # -- scores ----------------------------------------------------------------------------------
    def update(self, predictions: Any) -> float:
        """``F += predictions`` (N,); returns the new training loss."""
        p = _predictions(predictions, shape=(self.n_samples,))
        self.scores = self.scores + p
        self._cache = None
        return self.loss()

    def refit_and_update(self, learner: Any, rows: Any, *, binned: bool = False) -> float:
        """Refit ``learner``'s leaves on all examples (in place) and add it to the scores.

        ``rows`` holds the values of ``learner.features_`` for all N examples, shape
        ``(len(features_), N)`` (uint8 bins with ``binned=True``).

        Parameters
        ----------
        learner : Tree-like
            Has ``apply(rows, binned=...)`` and ``leaves``; its ``leaves`` are replaced.
        rows : ndarray of shape (len(learner.features_), N)
            The learner's feature values on all examples.
        binned : bool, default False
            ``rows`` holds uint8 bins rather than raw values.

        Returns
        -------
        float
            The training loss after the update.
        """
        leaf = learner.apply(rows, binned=binned)
        learner.leaves = self.fit_leaves(leaf, learner.leaves)
        return self.update(learner.leaves[leaf])

    def loss(self) -> float:
        """Training loss at the current scores."""
        return float(np.sum(self.initial_weights * np.exp(-self.y * self.scores)))


def _predictions(predictions: Any, *, shape: tuple[int, ...]) -> np.ndarray:
    """The learner's outputs added to the scores, as float64 of the scores' ``shape``."""
    p = np.asarray(predictions, dtype=np.float64)
    if p.shape != shape:
        raise ValueError(f"predictions: expected shape {shape}, got {p.shape}")
    return p


def _restrict(w: np.ndarray, sample_ids: np.ndarray | None) -> np.ndarray:
    """Weights with the examples outside ``sample_ids`` set to zero (rows for (N, K))."""
    if sample_ids is None:
        return w
    out = np.zeros_like(w)
    out[sample_ids] = w[sample_ids]
    return out


def _leaf_sums(leaf: np.ndarray, n: int, w: np.ndarray, v: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per leaf ``sum w`` and ``sum w v`` (``w``, ``v``: (N,) or (N, K) -> (n,) or (n, K))."""
    if w.ndim == 1:
        return (np.bincount(leaf, weights=w, minlength=n),
                np.bincount(leaf, weights=w * v, minlength=n))
    a = np.zeros((n, w.shape[1]))
    b = np.zeros((n, w.shape[1]))
    np.add.at(a, leaf, w)
    np.add.at(b, leaf, w * v)
    return a, b


def _mean_leaves(leaf: np.ndarray, n: int, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    a, b = _leaf_sums(leaf, n, w, v)
    return np.divide(b, a, out=np.zeros_like(a), where=a > 0)


def _real_leaves(leaf: np.ndarray, n: int, w: np.ndarray, y: np.ndarray, eps: float
                 ) -> np.ndarray:
    a, b = _leaf_sums(leaf, n, w, y)
    wp = np.maximum(0.5 * (a + b), 0.0)
    wn = np.maximum(0.5 * (a - b), 0.0)
    return 0.5 * np.log((wp + eps) / (wn + eps))


def _alpha(edge: float) -> float:
    """``1/2 ln((1 + edge) / (1 - edge))``, the coefficient of a discrete learner of that edge."""
    g = min(max(edge, -1.0 + _EPS_ERR), 1.0 - _EPS_ERR)
    return 0.5 * float(np.log((1.0 + g) / (1.0 - g)))


class DiscreteAdaBoost(BoostingLoss):
    """Discrete AdaBoost (Freund & Schapire): ``h`` in {-1, +1}, ``alpha`` from the error.

    Parameters
    ----------
    y, sample_weight, balanced_init
        As :class:`BoostingLoss`.

    Examples
    --------
    >>> step = DiscreteAdaBoost([1, 1, -1, -1])
    >>> leaf = np.array([1, 1, 0, 1])   # a stump sending example 3 to the positive leaf
    >>> np.round(step.fit_leaves(leaf, [-1.0, 1.0]), 4).tolist(), step.last_edge
    ([-0.5493, 0.5493], 0.5)
    >>> perfect = np.array([1, 1, 0, 0])   # edge 1: alpha is capped and the loss is done
    >>> round(float(step.fit_leaves(perfect, [-1.0, 1.0])[1]), 2), step.done
    (11.86, True)
    """

    name = "discrete"
    criterion = "discrete"

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray, w: np.ndarray, n_used: int
                    ) -> np.ndarray:
        signs = np.where(hyp >= 0, 1.0, -1.0)
        self.last_edge = float(np.sum(w * self.y * signs[leaf]) / w.sum())
        return _alpha(self.last_edge) * signs

    @property
    def done(self) -> bool:
        return self.last_edge >= 1.0


class RealAdaBoost(BoostingLoss):
    """Real AdaBoost (Schapire & Singer): ``h = 1/2 ln((W+ + eps)/(W- + eps))`` per leaf.

    ``eps = W / (2 N)`` (smoothing of Schapire & Singer, with ``W`` the total weight).

    Parameters
    ----------
    y, sample_weight, balanced_init
        As :class:`BoostingLoss`.

    Examples
    --------
    >>> step = RealAdaBoost([1, 1, -1, -1])
    >>> leaf = np.array([1, 1, 0, 1])   # leaf 1: two positives and a negative
    >>> np.round(step.fit_leaves(leaf, [0.0, 0.0]), 4).tolist()
    [-0.5493, 0.2554]
    """

    name = "real"
    criterion = "real"

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray, w: np.ndarray, n_used: int
                    ) -> np.ndarray:
        return _real_leaves(leaf, hyp.shape[0], w, self.y, w.sum() / (2.0 * n_used))


class GentleAdaBoost(BoostingLoss):
    """Gentle AdaBoost (Friedman, Hastie & Tibshirani): weighted least-squares leaves.

    Parameters
    ----------
    y, sample_weight, balanced_init
        As :class:`BoostingLoss`.

    Examples
    --------
    >>> step = GentleAdaBoost([1, 1, -1, -1])
    >>> leaf = np.array([1, 1, 0, 1])
    >>> np.round(step.fit_leaves(leaf, [0.0, 0.0]), 4).tolist()   # weighted mean label per leaf
    [-1.0, 0.3333]
    >>> round(step.update(step.fit_leaves(leaf, [0.0, 0.0])[leaf]), 4)
    0.7991
    """

    name = "gentle"
    criterion = "regression"

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray, w: np.ndarray, n_used: int
                    ) -> np.ndarray:
        return _mean_leaves(leaf, hyp.shape[0], w, self.response)


def _logit_terms(p: np.ndarray, ystar: np.ndarray, z_max: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """LogitBoost's weights ``p (1 - p)`` (floored) and clipped working response ``z``."""
    q = p * (1.0 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (ystar - p) / q
    z = np.where(q > 0, z, np.where(ystar > 0, z_max, -z_max))
    return np.maximum(q, 1e-300), np.clip(z, -z_max, z_max)


class LogitBoost(GentleAdaBoost):
    """LogitBoost (Friedman, Hastie & Tibshirani), two classes.

    Parameters
    ----------
    z_max : float, default=4
        Clip of the working response.

    Examples
    --------
    >>> step = LogitBoost([1, 1, -1, -1])
    >>> step.response.tolist(), round(step.loss(), 4)   # at F = 0: z = 2 y and the loss is log 2
    ([2.0, 2.0, -2.0, -2.0], 0.6931)
    >>> leaf = np.array([1, 1, 0, 1])
    >>> np.round(step.fit_leaves(leaf, [0.0, 0.0]), 4).tolist()   # half the mean of z per leaf
    [-1.0, 0.3333]
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
        q, z = _logit_terms(p, (self.y > 0).astype(np.float64), self.z_max)
        w = self.initial_weights * q
        return w / w.sum(), z

    def _fit_leaves(self, leaf: np.ndarray, hyp: np.ndarray, w: np.ndarray, n_used: int
                    ) -> np.ndarray:
        return 0.5 * super()._fit_leaves(leaf, hyp, w, n_used)

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

    Examples
    --------
    >>> step = make_loss("gentle", [1, -1, 1, 1])
    >>> step.weights.tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    if name not in LOSSES:
        raise ValueError(f"loss: expected one of {sorted(LOSSES)}, got {name!r}")
    return LOSSES[name](y, sample_weight, balanced_init=balanced_init)


def _class_indices(labels: Any, n_classes: Any) -> tuple[np.ndarray, int]:
    labels = check_array(labels, "y", ndim=1)
    if labels.dtype.kind not in "iu":
        raise TypeError("y: class indices must be integers")
    n_classes = check_in_range(n_classes, "n_classes", low=2, integer=True)
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(f"y: class indices must be in [0, {n_classes})")
    return labels.astype(np.int64), int(n_classes)


class MulticlassLoss:
    """AdaBoost.MH (Schapire & Singer) for K classes: discrete, real or gentle.

    Parameters
    ----------
    labels : array-like of shape (N,), int
        Class index in ``0..K-1`` of every example.
    n_classes : int
    sample_weight : array-like of shape (N,), optional
    algorithm : {"discrete", "real", "gentle"}, default="discrete"
        ``"discrete"``: vote vectors, outputs ``alpha v_k phi(x)`` with ``phi`` in {-1, +1} per
        leaf and ``v`` in {-1, +1}^K, both refitted on all examples, ``alpha`` from the edge
        ``gamma = sum_ik w_ik Y_ik v_k phi(x_i)``. ``"real"``: per leaf and class
        ``1/2 ln((W+ + eps)/(W- + eps))``, ``eps = W / (2 N K)``. ``"gentle"``: per leaf and class
        the weighted mean of ``Y``.

    Attributes
    ----------
    Y : ndarray (N, K)
        +1 for the true class, -1 otherwise.
    initial_weights : ndarray (N, K), ``sample_weight_i / K``, sums to one
    scores : ndarray (N, K)

    Examples
    --------
    >>> step = MulticlassLoss([0, 0, 1, 1, 2, 2], n_classes=3)
    >>> step.weights.shape, step.problems()[0].criterion
    ((6, 3), 'vote')
    >>> leaf = np.array([0, 0, 1, 1, 1, 1])   # a stump isolating class 0
    >>> hyp = np.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]])
    >>> np.round(step.fit_leaves(leaf, hyp), 3).tolist()   # leaf 0 votes for class 0
    [[0.626, -0.626, -0.626], [-0.626, 0.626, 0.626]]
    """

    n_outputs: int
    _CRITERIA: ClassVar[dict[str, str]] = {"discrete": "vote", "real": "real",
                                           "gentle": "regression"}

    def __init__(self, labels: Any, *, n_classes: int, sample_weight: Any = None,
                 algorithm: str = "discrete") -> None:
        labels, n_classes = _class_indices(labels, n_classes)
        if algorithm not in self._CRITERIA:
            raise ValueError(f"algorithm: expected one of {sorted(self._CRITERIA)}, got "
                             f"{algorithm!r}")
        self.algorithm = algorithm
        self.name = algorithm
        self.criterion = self._CRITERIA[algorithm]
        n = labels.size
        self.n_outputs = n_classes
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
    def response(self) -> np.ndarray:
        return self.Y

    def problems(self) -> list[Problem]:
        return [Problem(self.weights, self.Y, self.criterion)]

    def trim(self, rate: float = 1.0) -> np.ndarray:
        """Example ids kept by weight trimming on the per-example total weight."""
        return trim_weights(self.weights.sum(axis=1), rate)

    @property
    def done(self) -> bool:
        return self.algorithm == "discrete" and self.last_edge >= 1.0

    def fit_leaves(self, leaf: Any, hypothesis: Any, *, sample_ids: Any = None) -> np.ndarray:
        """Leaf values ``(L, K)`` refitted on all examples (or ``sample_ids``).

        Parameters
        ----------
        leaf : ndarray of shape (N,), int
            Leaf index of every training example.
        hypothesis : ndarray of shape (L, K)
            The fitted learner's leaf vectors (for discrete votes only their signs in column 0
            matter).
        sample_ids : ndarray of int, optional
            Refit on these examples only (default all).

        Returns
        -------
        ndarray of shape (L, K), float64
        """
        leaf = np.asarray(leaf, dtype=np.int64)
        hyp = np.asarray(hypothesis, dtype=np.float64)
        if hyp.ndim != 2 or hyp.shape[1] != self.n_outputs:
            raise ValueError(f"hypothesis: expected shape (L, {self.n_outputs}), got {hyp.shape}")
        w, n = _restrict(self.weights, sample_ids), hyp.shape[0]
        if self.algorithm == "gentle":
            return _mean_leaves(leaf, n, w, self.Y)
        if self.algorithm == "real":
            n_used = self.n_samples if sample_ids is None else len(sample_ids)
            return _real_leaves(leaf, n, w, self.Y, w.sum() / (2.0 * n_used * self.n_outputs))
        # vote vectors: phi per leaf from the hypothesis (up to a global sign, which cancels),
        # v per class refitted on all examples, alpha from the edge on all examples
        phi = np.where(hyp[:, 0] >= 0, 1.0, -1.0)
        corr = (w * self.Y * phi[leaf][:, None]).sum(axis=0)
        votes = np.where(corr >= 0, 1.0, -1.0)
        self.last_edge = float(corr @ votes)
        return _alpha(self.last_edge) * phi[:, None] * votes[None, :]

    def refit_leaves(self, k: int, leaf: np.ndarray, hypothesis: np.ndarray,
                     sample_ids: np.ndarray | None = None) -> np.ndarray:
        """Final leaves of the learner fitted to the single problem (the loop's call).

        Parameters
        ----------
        k : int
            The problem's index (always 0: one problem over all classes; unused).
        leaf, hypothesis, sample_ids
            As for :meth:`fit_leaves`.

        Returns
        -------
        ndarray of shape (L, K), float64
        """
        return self.fit_leaves(leaf, hypothesis, sample_ids=sample_ids)

    def update(self, predictions: Any) -> float:
        """``F += predictions`` (N, K); returns the new training loss."""
        p = _predictions(predictions, shape=self.scores.shape)
        self.scores = self.scores + p
        return self.loss()

    def loss(self) -> float:
        """``sum_ik w0_ik exp(-Y_ik F_ik)`` (upper bound of the Hamming loss)."""
        return float(np.sum(self.initial_weights * np.exp(-self.Y * self.scores)))


class OneVsRestLoss:
    """AdaBoost.MH with class-specific learners: ``K`` two-class boosters, one per class.

    Each round has one problem per class ``k``: the two-class algorithm's weights and response
    on the labels ``Y_k`` (+1 for class ``k``, -1 otherwise). Learner ``k`` is refitted with that
    algorithm's rule and enters column ``k`` of the scores only.

    Parameters
    ----------
    labels : array-like of shape (N,), int
        Class index in ``0..K-1``.
    n_classes : int
    sample_weight : array-like of shape (N,), optional
    algorithm : {"discrete", "real", "gentle", "logit"}, default="real"

    Attributes
    ----------
    steps : list of BoostingLoss
        The K two-class steps.
    scores : ndarray (N, K)

    Examples
    --------
    >>> step = OneVsRestLoss([0, 0, 1, 1, 2, 2], n_classes=3, algorithm="gentle")
    >>> [p.response.tolist() for p in step.problems()][0]   # class 0 against the rest
    [1.0, 1.0, -1.0, -1.0, -1.0, -1.0]
    >>> leaf = np.array([0, 0, 1, 1, 1, 1])
    >>> step.refit_leaves(0, leaf, np.zeros(2)).tolist()     # only column 0 is set
    [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]
    """

    def __init__(self, labels: Any, *, n_classes: int, sample_weight: Any = None,
                 algorithm: str = "real") -> None:
        labels, k = _class_indices(labels, n_classes)
        if algorithm not in LOSSES:
            raise ValueError(f"algorithm: expected one of {sorted(LOSSES)}, got {algorithm!r}")
        if np.bincount(labels, minlength=k).min() == 0:
            raise ValueError(f"y: every one of the {k} classes needs an example")
        self.name = self.algorithm = algorithm
        self.n_outputs = k
        self.steps = [make_loss(algorithm, np.where(labels == j, 1.0, -1.0), sample_weight)
                      for j in range(k)]
        self.scores = np.zeros((labels.size, k))

    @property
    def n_samples(self) -> int:
        return int(self.scores.shape[0])

    @property
    def done(self) -> bool:
        return all(s.done for s in self.steps)

    @property
    def last_edge(self) -> float:
        return float(np.mean([s.last_edge for s in self.steps]))

    def problems(self) -> list[Problem]:
        return [s.problems()[0] for s in self.steps]

    def refit_leaves(self, k: int, leaf: np.ndarray, hypothesis: np.ndarray,
                     sample_ids: np.ndarray | None = None) -> np.ndarray:
        """Leaves of class ``k``'s learner, refitted by its two-class rule, in column ``k``.

        Parameters
        ----------
        k : int
            The class (and problem) index, in [0, K).
        leaf : ndarray of shape (N,), int64
            Leaf index of every training example.
        hypothesis : ndarray of shape (L,)
            The fitted learner's leaf values.
        sample_ids : ndarray of int, optional
            Refit on these examples only (default all).

        Returns
        -------
        ndarray of shape (L, K), float64
            Zero outside column ``k``.
        """
        v = self.steps[k].refit_leaves(0, leaf, hypothesis, sample_ids)
        out = np.zeros((v.shape[0], self.n_outputs))
        out[:, k] = v
        return out

    def update(self, predictions: Any) -> float:
        """``F += predictions`` (N, K); returns the mean of the K two-class losses."""
        p = _predictions(predictions, shape=self.scores.shape)
        for k, s in enumerate(self.steps):
            s.update(p[:, k])
        self.scores = self.scores + p
        return self.loss()

    def loss(self) -> float:
        return float(np.mean([s.loss() for s in self.steps]))


def softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise ``exp(F_j) / sum_k exp(F_k)`` without overflow."""
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class MultiLogitLoss:
    """J-class LogitBoost (Friedman, Hastie & Tibshirani 2000, Algorithm 6).

    Each round has one regression problem per class ``j``: weights ``w0 p_j (1 - p_j)`` and
    working response ``z_j = (y*_j - p_j) / (p_j (1 - p_j))`` clipped to ``[-z_max, z_max]``.
    The learner ``f_j`` fitted to it (leaves: weighted means of ``z_j``, refitted on all
    examples) enters the scores centred, ``F_k += (J-1)/J (f_k - 1/J sum_j f_j)``, which is the
    sum over ``j`` of ``(J-1)/J (delta_jk - 1/J) f_j``: learner ``j``'s ``(L, J)`` leaves.

    Parameters
    ----------
    labels : array-like of shape (N,), int
        Class index in ``0..J-1``.
    n_classes : int
    sample_weight : array-like of shape (N,), optional
    z_max : float, default=4

    Attributes
    ----------
    initial_weights : ndarray (N,), sums to one
    scores : ndarray (N, J), centred (rows sum to zero)

    Examples
    --------
    >>> step = MultiLogitLoss([0, 0, 1, 1, 2, 2], n_classes=3)
    >>> len(step.problems()), np.round(step.problems()[0].response, 3).tolist()   # p = 1/3
    (3, [3.0, 3.0, -1.5, -1.5, -1.5, -1.5])
    >>> leaf = np.array([0, 0, 1, 1, 1, 1])
    >>> leaves = step.refit_leaves(0, leaf, np.zeros(2))
    >>> np.round(leaves, 3).tolist()
    [[1.333, -0.667, -0.667], [-0.667, 0.333, 0.333]]
    >>> round(step.loss(), 4), round(step.update(leaves[leaf]), 4)   # log 3 at F = 0
    (1.0986, 0.6545)
    >>> np.round(step.probabilities()[0], 3).tolist()
    [0.787, 0.107, 0.107]
    """

    name = "logit"
    criterion = "regression"

    def __init__(self, labels: Any, *, n_classes: int, sample_weight: Any = None,
                 z_max: float = 4.0) -> None:
        labels, j = _class_indices(labels, n_classes)
        self.labels = labels
        self.n_outputs = j
        self.ystar = (labels[:, None] == np.arange(j)[None, :]).astype(np.float64)
        self.initial_weights = check_sample_weight(sample_weight, labels.size)
        self.z_max = float(check_in_range(z_max, "z_max", low=0.0, low_inclusive=False))
        self.scores = np.zeros((labels.size, j))
        self._cache: list[Problem] | None = None

    @property
    def n_samples(self) -> int:
        return int(self.labels.size)

    @property
    def done(self) -> bool:
        return False

    def probabilities(self) -> np.ndarray:
        """``p = softmax(F)``, shape (N, J)."""
        return softmax(self.scores)

    def problems(self) -> list[Problem]:
        """One regression problem per class, at the scores of the start of the round."""
        if self._cache is None:
            q, z = _logit_terms(self.probabilities(), self.ystar, self.z_max)
            w = self.initial_weights[:, None] * q
            self._cache = [Problem(w[:, j], z[:, j], "regression")
                           for j in range(self.n_outputs)]
        return self._cache

    def refit_leaves(self, k: int, leaf: np.ndarray, hypothesis: np.ndarray,
                     sample_ids: np.ndarray | None = None) -> np.ndarray:
        """Leaves ``(L, J)`` of class ``k``'s learner: its least-squares values, centred.

        Parameters
        ----------
        k : int
            The class (and problem) index, in [0, J).
        leaf : ndarray of shape (N,), int64
            Leaf index of every training example.
        hypothesis : ndarray of shape (L,)
            The fitted learner's leaf values (only their count ``L`` is used).
        sample_ids : ndarray of int, optional
            Refit on these examples only (default all).

        Returns
        -------
        ndarray of shape (L, J), float64
            ``f_l (J - 1) / J (1[j = k] - 1 / J)`` for the weighted mean response ``f_l``.
        """
        p = self.problems()[k]
        f = _mean_leaves(leaf, np.asarray(hypothesis).shape[0],
                         _restrict(p.weights, sample_ids), p.response)
        j = self.n_outputs
        mix = (j - 1.0) / j * ((np.arange(j) == k) - 1.0 / j)
        return f[:, None] * mix[None, :]

    def update(self, predictions: Any) -> float:
        """``F += predictions`` (N, J); returns the new training loss."""
        p = _predictions(predictions, shape=self.scores.shape)
        self.scores = self.scores + p
        self._cache = None
        return self.loss()

    def loss(self) -> float:
        """Multinomial deviance ``-sum_i w0_i log p_{i, y_i}``."""
        f = self.scores
        m = f.max(axis=1)
        lse = m + np.log(np.exp(f - m[:, None]).sum(axis=1))
        return float(np.sum(self.initial_weights * (lse - f[np.arange(f.shape[0]), self.labels])))
