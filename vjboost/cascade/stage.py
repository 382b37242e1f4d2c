"""One boosted cascade stage: its threshold and false alarm (OpenCV's ``isErrDesired``) and the
boosting loop that trains it until it reaches its hit-rate / false-alarm goal.

:func:`train_stage` runs :func:`vjboost.boost.rounds.run_rounds` on a split search; after every
round the stage threshold is set from the positives' scores (:func:`stage_threshold`) and the
stage ends once its false alarm on the negatives (:func:`stage_false_alarm`) is at most
``max_false_alarm`` or it has ``max_weak_count`` learners.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..boost.losses import make_loss
from ..boost.rounds import RoundResult, run_rounds
from ..boost.tree import Tree
from ..boost.weak import TreeShape
from .kernels import reject_threshold

__all__ = ["StageResult", "stage_false_alarm", "stage_threshold", "train_stage"]


# ------------------------------------------------------------------------------------------------
# Stage threshold and false alarm (OpenCV's isErrDesired)
# ------------------------------------------------------------------------------------------------


def stage_threshold(pos_scores: Any, min_hit_rate: float) -> tuple[float, float]:
    """Stage threshold keeping ``min_hit_rate`` of the positives, as OpenCV's ``isErrDesired``.

    The positives' scores are rounded to float32 and sorted ascending; the threshold is the score
    at index ``int(float32(1 - min_hit_rate) * n)`` (float32 arithmetic, as OpenCV). The hit rate
    counts the positives from that index up plus those below it within ``FLT_EPSILON`` of it.

    Parameters
    ----------
    pos_scores : array-like of shape (n,)
        Stage scores (sums of leaf values) of the positives.
    min_hit_rate : float
        In (0, 1].

    Returns
    -------
    threshold : float
        A float32 value.
    hit_rate : float
    """
    s = np.sort(np.asarray(pos_scores, dtype=np.float64).astype(np.float32))
    n = s.size
    if n == 0:
        raise ValueError("pos_scores: no positive")
    idx = int(np.float32(np.float32(1.0) - np.float32(min_hit_rate)) * np.float32(n))
    idx = min(max(idx, 0), n - 1)
    thr = s[idx]
    eps = np.finfo(np.float32).eps
    n_true = n - idx + int(np.count_nonzero(np.abs(s[:idx] - thr) < eps))
    return float(thr), n_true / n


def stage_false_alarm(neg_scores: Any, threshold: float) -> float:
    """Fraction of ``neg_scores`` the stage accepts: ``score >= float32(threshold) - 1e-5``.

    Parameters
    ----------
    neg_scores : array-like of float, shape (n,)
        The stage's scores of its negatives.
    threshold : float
        The stage threshold (compared as the detector compares it, in float32 with OpenCV's
        1e-5 tolerance).

    Returns
    -------
    float
        Accepted share in [0, 1]; 0.0 for no negatives.

    Examples
    --------
    >>> stage_false_alarm([-1.0, 0.0, 0.5, 2.0], 0.5)
    0.5
    """
    s = np.asarray(neg_scores, dtype=np.float64)
    if s.size == 0:
        return 0.0
    return float(np.count_nonzero(s >= reject_threshold(threshold))) / s.size


# ------------------------------------------------------------------------------------------------
# One stage
# ------------------------------------------------------------------------------------------------


@dataclass
class StageResult:
    """A trained stage.

    Attributes
    ----------
    learners : list of vjboost.boost.tree.Tree
        Weak learners with global feature ids of the pool; leaf values (float32-representable)
        include the boosting coefficient.
    threshold : float
        float32 stage threshold.
    hit_rate, false_alarm : float
        On the stage's training positives and negatives.
    losses, hit_rates, false_alarms : list of float
        After every round.
    seconds : dict
        Time spent in ``positives``, ``negatives``, ``features`` and ``boosting``.
    scores : ndarray of shape (N,), optional
        Stage sums of the stage's training windows (positives, then negatives) after the last
        round, for the run's report samples; dropped once they are taken, never saved.
    """

    learners: list[Any]
    threshold: float
    hit_rate: float
    false_alarm: float
    losses: list[float] = field(default_factory=list)
    hit_rates: list[float] = field(default_factory=list)
    false_alarms: list[float] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    scores: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "learners": [lr.to_dict() for lr in self.learners],
            "threshold": float(self.threshold),
            "hit_rate": float(self.hit_rate),
            "false_alarm": float(self.false_alarm),
            "losses": [float(v) for v in self.losses],
            "hit_rates": [float(v) for v in self.hit_rates],
            "false_alarms": [float(v) for v in self.false_alarms],
            "seconds": {k: float(v) for k, v in self.seconds.items()},
            "info": self.info,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StageResult:
        return cls([Tree.from_dict(x, f"learners[{i}]") for i, x in enumerate(d["learners"])],
                   float(d["threshold"]),
                   float(d["hit_rate"]), float(d["false_alarm"]), list(d.get("losses", [])),
                   list(d.get("hit_rates", [])), list(d.get("false_alarms", [])),
                   dict(d.get("seconds", {})), dict(d.get("info", {})))


def train_stage(
    search: Any,
    y: np.ndarray,
    *,
    loss: str = "gentle",
    shape: TreeShape | None = None,
    min_hit_rate: float = 0.995,
    max_false_alarm: float = 0.5,
    max_weak_count: int = 100,
    weight_trim_rate: float = 0.95,
    balanced_init: bool = False,
    callback: Callable[[int, float, float, float], None] | None = None,
) -> StageResult:
    """Boost one stage until it reaches its hit-rate / false-alarm goal.

    Runs the boosting loop of :func:`vjboost.boost.rounds.run_rounds`; after every round the
    stage threshold is set from the positives' scores (:func:`stage_threshold`) and the stage
    ends once its false alarm on the negatives is at most ``max_false_alarm``
    (:func:`stage_false_alarm`).

    Parameters
    ----------
    search : split search
        A :class:`~vjboost.boost.search.MatrixSearch`, :class:`~vjboost.boost.search.
        StreamedSearch` or :class:`~vjboost.boost.search.SampledSearch` over the stage's windows.
    y : ndarray of shape (N,)
        +1 for positives, -1 for negatives.
    loss : {"gentle", "discrete", "real", "logit"}
    shape : TreeShape, optional
        The weak learner (default a stump).
    min_hit_rate, max_false_alarm : float
    max_weak_count : int
    weight_trim_rate : float
        OpenCV's weight trimming: learners are searched on the examples holding this share of
        the weight (1 = all); leaves are refitted on all examples.
    balanced_init : bool
        Start with half of the weight on each class (OpenCV: uniform weights).
    callback : callable, optional
        ``callback(round, loss, hit_rate, false_alarm)`` after every round.

    Returns
    -------
    StageResult
    """
    y = np.asarray(y, dtype=np.float64)
    pos = y > 0
    step = make_loss(loss, y, balanced_init=balanced_init)
    res = StageResult([], 0.0, 1.0, 1.0)

    def after_round(r: RoundResult) -> bool:
        res.learners.extend(r.trees)
        thr, hit = stage_threshold(r.step.scores[pos], min_hit_rate)
        fa = stage_false_alarm(r.step.scores[~pos], thr)
        res.threshold, res.hit_rate, res.false_alarm = thr, hit, fa
        res.losses.append(r.loss)
        res.hit_rates.append(hit)
        res.false_alarms.append(fa)
        if callback is not None:
            callback(r.t, r.loss, hit, fa)
        return fa <= max_false_alarm

    # leaves are stored as float32 in models: train with the values the detector will use
    out = run_rounds(step, search, n_rounds=int(max_weak_count), shape=shape,
                     weight_trim_rate=float(weight_trim_rate), leaf_dtype=np.float32,
                     callback=after_round)
    if out.stopped == "no_split":
        res.info["stopped"] = "no feature separates the examples any more"
    res.scores = np.array(step.scores, dtype=np.float64)  # for the report's samples
    return res
