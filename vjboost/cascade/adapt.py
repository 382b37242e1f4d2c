"""Adapting a trained cascade to a new scene by re-weighting its weak classifiers online.

The structure of the cascade (stages, trees, features, splits) is kept; only the weight of each
weak classifier and the stage thresholds change. Stage by stage, on the labelled windows of a
stream that reach the stage:

1. each tree's vote ``sign(leaf value)`` is a fixed weak hypothesis, and
   :class:`~vjboost.boost.online.OnlineCoordinateBoost` learns its coefficient ``α`` from the
   windows in stream order (positives and negatives with half of the weight each, started from
   batch AdaBoost on the first windows);
2. the tree's leaves are multiplied by ``α / mean|leaves|`` (normalised to a mean factor of 1;
   ``blend`` < 1 mixes this factor with 1, the original tree), which keeps the asymmetric leaf
   shapes of Gentle AdaBoost;
3. the threshold is re-calibrated to trade hits against false alarms as cascade training does:
   the adapted stage must accept no more of the stream's negatives than the original stage
   accepted, and keep at least the hit rate the original stage had on the stream's positives
   (or ``min_hit_rate``); when both cannot hold, the hit rate wins.

A stage that fewer than ``min_windows`` positives or negatives reach is kept as it is: on a short
stream the deep stages see almost no background, and a coefficient estimated from a handful of
windows would only add noise.

Labels matter. A cascade accepts windows *aligned* with the object the way its training crops
were; windows that overlap an object by IoU 0.5–0.7 are mostly rejected by design. Positives must
therefore be tight (``collect_windows(pos_iou=0.8)`` against boxes framed like the cascade's own
detections); with loose positives the adapted stages learn to accept misaligned windows, and
detection collapses (measured in ``docs/online.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_in_range
from ..boost.online import OnlineCoordinateBoost
from ..boxes import iou_matrix
from .detector import CascadeDetector
from .kernels import THRESHOLD_EPS
from .model import CascadeModel, Stage
from .positives import resize_to_window
from .runner import CascadeRunner, stage_sum
from .trainer import stage_false_alarm, stage_threshold

__all__ = [
    "AdaptationReport",
    "StreamCollector",
    "adapt_cascade",
    "collect_windows",
    "scan_windows",
]


@dataclass
class AdaptationReport:
    """What :func:`adapt_cascade` did, per stage.

    Attributes
    ----------
    stages : list of dict
        ``stage``, ``adapted`` (False: kept as it was, with ``reason``), ``n_pos``/``n_neg``
        (stream windows reaching the stage), ``threshold_before``/``threshold_after``,
        ``hit_rate_before``/``hit_rate_after`` and ``false_alarm_before``/``false_alarm_after``
        (original and adapted stage on the windows reaching it), and for adapted stages
        ``factor_min``/``factor_max`` (range of the leaf multipliers).
    n_windows, n_positives : int
        Size of the stream.
    """

    stages: list[dict[str, Any]] = field(default_factory=list)
    n_windows: int = 0
    n_positives: int = 0

    @property
    def n_adapted(self) -> int:
        """Number of stages that were re-weighted."""
        return sum(1 for s in self.stages if s["adapted"])

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {"n_windows": self.n_windows, "n_positives": self.n_positives,
                "n_adapted_stages": self.n_adapted, "stages": self.stages}


def _false_alarm_threshold(neg_scores: np.ndarray, n_allowed: int) -> float:
    """A float32 threshold that lets at most ``n_allowed`` of ``neg_scores`` pass."""
    s = np.sort(np.asarray(neg_scores, dtype=np.float64))[::-1]
    if n_allowed >= s.size:
        return float(np.float32(s[-1]) - np.float32(1.0)) if s.size else float("-inf")
    v = s[n_allowed]  # the largest score that must be rejected
    t = np.float32(v) + THRESHOLD_EPS
    while np.float32(t - THRESHOLD_EPS) <= v:  # a few float32 steps at most
        t = np.nextafter(t, np.float32(np.inf))
    return float(t)


def _rates(scores: np.ndarray, y: np.ndarray, threshold: float) -> tuple[float, float]:
    """Shares of the positives (hit rate) and negatives (false alarm) one stage accepts."""
    pos, neg = scores[y > 0], scores[y < 0]
    hit = stage_false_alarm(pos, threshold) if pos.size else 0.0  # the accepted share
    return hit, stage_false_alarm(neg, threshold)


def adapt_cascade(
    model: CascadeModel,
    windows: np.ndarray,
    labels: Any,
    *,
    order: int | None = 5,
    smoothing: float = 0.5,
    n_init: int | None = None,
    min_hit_rate: float | None = None,
    first_stage: int = 0,
    min_windows: int = 30,
    blend: float = 1.0,
    balanced: bool = True,
    holdout: float = 0.0,
) -> tuple[CascadeModel, AdaptationReport]:
    """Re-weight the stages of ``model`` from a labelled stream of windows.

    Parameters
    ----------
    model : CascadeModel
    windows : ndarray of shape (S, H, W), uint8
        Windows of the model's size, in stream order (e.g. frame by frame): typically
        :class:`StreamCollector`'s, i.e. windows the first stages accept, cut exactly as the
        detector sees them.
    labels : array-like of shape (S,)
        +1 (object, tightly aligned) or -1 (background).
    order : int or None, default=5
        Order ``K`` of Online Coordinate Boosting (``None``: all preceding coordinates). Stages
        have hundreds of weak classifiers; corrections chained over that many coordinates
        compound their approximation error, so a short order is the default.
    smoothing : float, default=0.5
        Initial value of OCB's cumulative sums.
    n_init : int, optional
        Windows (reaching a stage) that start that stage's OCB from batch AdaBoost. Default:
        ``max(20, 10%)`` of them.
    min_hit_rate : float, optional
        Hit rate on the stream's positives reaching a stage that the adapted stage must keep.
        Default: the rate the original stage has on them.
    first_stage : int, default=0
        Stages before this one are kept as they are.
    min_windows : int, default=30
        A stage is re-weighted only when at least this many positives *and* negatives reach it.
    blend : float in [0, 1], default=1
        Weight of the learnt leaf multipliers against the original trees (0: thresholds only).
    balanced : bool, default=True
        Positives and negatives start with half of the total weight each, as in cascade
        training (streams are usually unbalanced).
    holdout : float in [0, 1), default=0
        Safeguard: when > 0, each stage is first adapted on the earlier ``1 − holdout`` of the
        windows reaching it (stream order) and compared with the original stage on the later
        ones; it is adapted (on all windows) only if neither its held-out hit rate is lower nor
        its held-out false-alarm rate higher than the original's by more than two standard
        errors (binomial, of the original's rates). Otherwise the original stage is kept.

    Returns
    -------
    adapted : CascadeModel
        Same structure, new leaf values and stage thresholds; ``params["adapted"]`` records the
        settings.
    report : AdaptationReport

    Raises
    ------
    ValueError
        Labels not ±1, length mismatch, windows of the wrong size, no positive or no negative
        in the stream, or a bad option.
    """
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0 or not np.isin(y, (-1, 1)).all():
        raise ValueError("labels: expected a non-empty 1-D array of -1/+1")
    if len(y) != len(windows):
        raise ValueError(f"labels: {len(y)} labels for {len(windows)} windows")
    if not (y > 0).any() or not (y < 0).any():
        raise ValueError("labels: the stream needs both positives (+1) and negatives (-1)")
    if min_hit_rate is not None:
        check_in_range(min_hit_rate, "min_hit_rate", low=0, high=1, low_inclusive=False)
    check_in_range(first_stage, "first_stage", low=0, high=model.n_stages, integer=True)
    check_in_range(min_windows, "min_windows", low=1, integer=True)
    check_in_range(blend, "blend", low=0, high=1)
    check_in_range(holdout, "holdout", low=0, high=1, high_inclusive=False)
    y = y.astype(np.int64)
    runner = CascadeRunner(model)
    channels = runner.prepare(windows)
    reach = np.arange(len(y))
    stages: list[Stage] = []
    report = AdaptationReport(n_windows=int(len(y)), n_positives=int((y > 0).sum()))
    for k, stage in enumerate(model.stages):
        out = runner.tree_outputs(channels, k, reach)
        yk = y[reach]
        n_pos, n_neg = int((yk > 0).sum()), int((yk < 0).sum())
        s0 = stage_sum(out)
        hit0, fa0 = _rates(s0, yk, stage.threshold)
        row: dict[str, Any] = {"stage": k, "n_pos": n_pos, "n_neg": n_neg,
                               "threshold_before": stage.threshold,
                               "hit_rate_before": hit0, "false_alarm_before": fa0}
        reason = None
        if k < first_stage:
            reason = "before first_stage"
        elif n_pos < min_windows or n_neg < min_windows:
            reason = f"fewer than {min_windows} positives or negatives reach it"
        if reason is not None:
            new_stage, s1 = stage, s0
            row.update(adapted=False, reason=reason)
        else:
            kw = {"order": order, "smoothing": smoothing, "n_init": n_init,
                  "balanced": balanced, "blend": blend, "min_hit_rate": min_hit_rate}
            check = _holdout_check(stage, out, yk, s0, holdout, kw) if holdout > 0 else None
            if check is not None and not check["passed"]:
                new_stage, s1 = stage, s0
                row.update(adapted=False, reason="held-out check", holdout=check)
            else:
                new_stage, s1, factors = _fit_stage(stage, out, yk, s0, **kw)
                row.update(adapted=True, factor_min=float(factors.min()),
                           factor_max=float(factors.max()))
                if check is not None:
                    row["holdout"] = check
        hit1, fa1 = _rates(s1, yk, new_stage.threshold)
        row.update(threshold_after=new_stage.threshold, hit_rate_after=hit1,
                   false_alarm_after=fa1)
        report.stages.append(row)
        stages.append(new_stage)
        reach = reach[s1 >= new_stage.reject_threshold]
    params = dict(model.params)
    params["adapted"] = {"windows": int(len(y)), "positives": int((y > 0).sum()),
                         "order": order, "smoothing": smoothing, "min_hit_rate": min_hit_rate,
                         "first_stage": first_stage, "min_windows": min_windows, "blend": blend,
                         "holdout": holdout, "adapted_stages": report.n_adapted}
    return model.with_stages(stages, params), report


def _fit_stage(stage: Stage, out: np.ndarray, y: np.ndarray, s0: np.ndarray, *,
               min_hit_rate: float | None, **kw: Any) -> tuple[Stage, np.ndarray, np.ndarray]:
    """Re-weighted trees and re-calibrated threshold of one stage; its scores; the factors."""
    hit0, fa0 = _rates(s0, y, stage.threshold)
    factors = _leaf_factors(stage, out, y, **kw)
    trees = [t.with_leaves((t.leaves * f).astype(np.float32))
             for t, f in zip(stage.trees, factors, strict=True)]
    # the new trees' outputs are the old ones times their factor, rounded to float32 leaves
    s1 = stage_sum((out * factors[:, None]).astype(np.float32).astype(np.float64))
    target = hit0 if min_hit_rate is None else min_hit_rate
    t_hit, _ = stage_threshold(s1[y > 0], max(target, 1e-6))
    t_fa = _false_alarm_threshold(s1[y < 0], int(np.floor(fa0 * (y < 0).sum() + 1e-9)))
    return Stage(trees, threshold=min(t_hit, t_fa)), s1, factors


def _holdout_check(stage: Stage, out: np.ndarray, y: np.ndarray, s0: np.ndarray,
                   holdout: float, kw: dict[str, Any]) -> dict[str, Any] | None:
    """Fit on the stream's first windows, compare with the original on the last ones."""
    n_val = int(round(holdout * len(y)))
    fit, val = slice(0, len(y) - n_val), slice(len(y) - n_val, len(y))
    yf, yv = y[fit], y[val]
    if not ((yf > 0).any() and (yf < 0).any() and (yv > 0).any() and (yv < 0).any()):
        return None
    new, _, factors = _fit_stage(stage, out[:, fit], yf, s0[fit], **kw)
    sv = stage_sum((out[:, val] * factors[:, None]).astype(np.float32).astype(np.float64))
    hit0, fa0 = _rates(s0[val], yv, stage.threshold)
    hit1, fa1 = _rates(sv, yv, new.threshold)
    # "clearly worse": by more than two standard errors of the original's held-out rates
    tol_hit = 2.0 * np.sqrt(hit0 * (1.0 - hit0) / (yv > 0).sum())
    tol_fa = 2.0 * np.sqrt(fa0 * (1.0 - fa0) / (yv < 0).sum())
    return {"hit_rate_before": hit0, "hit_rate_after": hit1, "false_alarm_before": fa0,
            "false_alarm_after": fa1,
            "passed": bool(hit1 >= hit0 - tol_hit and fa1 <= fa0 + tol_fa)}


def _leaf_factors(stage: Stage, outputs: np.ndarray, y: np.ndarray, *, order: int | None,
                  smoothing: float, n_init: int | None, balanced: bool,
                  blend: float) -> np.ndarray:
    """Per-tree multipliers of the leaves: OCB coefficients over the original magnitudes."""
    n = len(y)
    votes = np.where(outputs >= 0, 1, -1).astype(np.int8)
    margins = np.ascontiguousarray((votes * y[None, :].astype(np.int8)).T)
    n0 = n_init if n_init is not None else max(20, n // 10)
    n0 = min(max(int(n0), 1), n)
    w0 = np.ones(n)
    if balanced:
        n_pos, n_neg = (y > 0).sum(), (y < 0).sum()
        w0 = np.where(y > 0, n / (2.0 * n_pos), n / (2.0 * n_neg))
    ocb = OnlineCoordinateBoost(n_hypotheses=len(stage.trees), order=order, smoothing=smoothing)
    ocb.init_from_margins(margins[:n0], sample_weight=w0[:n0])
    if n0 < n:
        ocb.learn_margins(margins[n0:], sample_weight=w0[n0:])
    scale = np.array([float(np.mean(np.abs(t.leaves))) for t in stage.trees])
    f = np.divide(ocb.alpha_, scale, out=np.zeros_like(scale), where=scale > 0)
    norm = float(np.mean(np.abs(f)))
    f = f / norm if norm > 0 else np.ones_like(f)
    return (1.0 - blend) + blend * f


def collect_windows(
    candidates: np.ndarray,
    gray: np.ndarray,
    objects: np.ndarray,
    window_shape: tuple[int, int],
    *,
    pos_iou: float = 0.8,
    neg_iou: float = 0.1,
    max_negatives: int | None = 30,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Labelled windows of one frame from candidate boxes and the frame's object boxes.

    Candidates overlapping an object box by ``IoU >= pos_iou`` become positives, those overlapping
    every object by less than ``neg_iou`` negatives (at most ``max_negatives``, drawn with
    ``rng``); the ones in between are ambiguous and left out. Each is cut from ``gray`` and
    resized to the window. :class:`StreamCollector` does the same with the windows cut exactly as
    the detector sees them, and keeps the negatives that reach deep stages.

    Parameters
    ----------
    candidates : ndarray of shape (n, 4)
        Boxes ``(x, y, w, h)`` to label, typically the raw windows of the first stages of the
        cascade being adapted (the windows it actually has to decide on).
    gray : ndarray of shape (H, W), uint8
    objects : ndarray of shape (m, 4)
        Object boxes in this frame (annotations, a teacher detector, or the cascade's own
        confident detections).
    window_shape : (height, width)

    Returns
    -------
    windows : ndarray of shape (k, height, width), uint8
    labels : ndarray of shape (k,), int8 in {-1, +1}
    """
    h_img, w_img = gray.shape
    cand = np.asarray(candidates, dtype=np.int64).reshape(-1, 4)
    x0, y0 = np.clip(cand[:, 0], 0, w_img), np.clip(cand[:, 1], 0, h_img)
    x1 = np.clip(cand[:, 0] + cand[:, 2], 0, w_img)
    y1 = np.clip(cand[:, 1] + cand[:, 3], 0, h_img)
    inside = (x1 - x0 >= 2) & (y1 - y0 >= 2)
    cand = np.stack([x0, y0, x1 - x0, y1 - y0], 1)[inside]
    objs = np.asarray(objects, dtype=np.int64).reshape(-1, 4)
    best = iou_matrix(cand, objs).max(1) if len(objs) and len(cand) else np.zeros(len(cand))
    pos = np.flatnonzero(best >= pos_iou)
    neg = np.flatnonzero(best < neg_iou)
    if max_negatives is not None and len(neg) > max_negatives:
        rng = rng if rng is not None else np.random.default_rng(0)
        neg = np.sort(rng.choice(neg, size=max_negatives, replace=False))
    keep = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(len(pos), np.int8), -np.ones(len(neg), np.int8)])
    crops = [resize_to_window(gray[y : y + h, x : x + w], window_shape)
             for x, y, w, h in cand[keep].tolist()]
    if not crops:
        return np.zeros((0, *window_shape), np.uint8), labels
    return np.stack(crops), labels


def scan_windows(detector: CascadeDetector, gray: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The windows a detector accepts in one image, cut exactly as the detector sees them.

    Each accepted window is taken from its level of the detector's
    :class:`~vjboost.cascade.scan.Pyramid` (the image resized as the detector resizes it), so
    that :class:`~vjboost.cascade.runner.CascadeRunner` on these windows reproduces the
    detector's stage scores.

    Parameters
    ----------
    detector : CascadeDetector
        Typically the first stages of the cascade being adapted with ``min_neighbors=0`` and
        ``grouping="none"`` (its grouping is not used here).
    gray : ndarray of shape (H, W), uint8

    Returns
    -------
    boxes : ndarray of shape (n, 4), int32
        ``(x, y, w, h)`` in image pixels.
    windows : ndarray of shape (n, height, width), uint8
    """
    boxes, _, pos = detector.raw_windows(gray, return_positions=True)
    return boxes, detector.pyramid((gray.shape[1], gray.shape[0])).windows(gray, pos)


class StreamCollector:
    """Labelled windows of a stream of frames, ready for :func:`adapt_cascade`.

    For each frame, the candidates are the windows that the first ``candidate_stages`` stages of
    the cascade accept (cut exactly as the detector sees them, :func:`scan_windows`): those are
    the windows the adapted stages have to decide on. Candidates overlapping an object box by
    ``IoU >= pos_iou`` are positives; those overlapping every object by less than ``neg_iou`` are
    negatives. Negatives that reach stage ``hard_stage`` of the original cascade (the false
    alarms the deep stages must reject) are all kept; of the others, at most
    ``max_easy_negatives`` per frame are drawn at random.

    Parameters
    ----------
    model : CascadeModel
    candidate_stages : int, default=5
    scale_factor : float, default=1.1
    min_size, max_size : (width, height) or int, optional
        As :class:`~vjboost.cascade.detector.CascadeDetector`.
    pos_iou : float, default=0.8
        Positives must be tight: the cascade rejects loosely aligned windows by design.
    neg_iou : float, default=0.1
    hard_stage : int, optional
        Default: ``candidate_stages + 5`` (capped at the number of stages).
    max_easy_negatives : int, default=100
    seed : int, default=0
        Seed of the negative sampling.

    Attributes
    ----------
    n_frames : int
        Frames that contributed windows (frames given no object box and not self-labelled are
        counted in ``n_skipped``).
    """

    def __init__(
        self,
        model: CascadeModel,
        *,
        candidate_stages: int = 5,
        scale_factor: float = 1.1,
        min_size: Any = None,
        max_size: Any = None,
        pos_iou: float = 0.8,
        neg_iou: float = 0.1,
        hard_stage: int | None = None,
        max_easy_negatives: int = 100,
        seed: int = 0,
    ) -> None:
        check_in_range(candidate_stages, "candidate_stages", low=1, high=model.n_stages,
                       integer=True)
        check_in_range(pos_iou, "pos_iou", low=0, high=1, low_inclusive=False)
        check_in_range(neg_iou, "neg_iou", low=0, high=pos_iou)
        check_in_range(max_easy_negatives, "max_easy_negatives", low=0, integer=True)
        if hard_stage is None:
            hard_stage = min(candidate_stages + 5, model.n_stages)
        check_in_range(hard_stage, "hard_stage", low=candidate_stages, high=model.n_stages,
                       integer=True)
        self.model = model
        self.candidate_stages = int(candidate_stages)
        self.pos_iou, self.neg_iou = float(pos_iou), float(neg_iou)
        self.hard_stage = int(hard_stage)
        self.max_easy_negatives = int(max_easy_negatives)
        self._candidates = CascadeDetector(model.truncated(self.candidate_stages),
                                           scale_factor=scale_factor, min_size=min_size,
                                           max_size=max_size, min_neighbors=0, grouping="none",
                                           coarse_to_fine=None)  # every candidate window
        self._full = CascadeDetector(model, scale_factor=scale_factor, min_size=min_size,
                                     max_size=max_size, min_neighbors=3, score="best")
        self._depth = (CascadeRunner(model, first_stage=self.candidate_stages,
                                     last_stage=self.hard_stage)
                       if self.hard_stage > self.candidate_stages else None)
        self._rng = np.random.default_rng(seed)
        self._windows: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []
        self.n_frames = 0
        self.n_skipped = 0

    def confident_objects(self, gray: np.ndarray, min_neighbors: int = 12) -> np.ndarray:
        """The cascade's own confident detections in a frame (self-labelling).

        Parameters
        ----------
        gray : ndarray of shape (H, W), uint8
        min_neighbors : int, default=12
            Raw windows a grouped detection needs to count as confident (on the NRC-IIT clips,
            12 keeps two thirds of the true detections and none of the false ones).

        Returns
        -------
        ndarray of shape (m, 4), int64
        """
        det = self._full.detect(gray)
        return det.boxes[det.neighbors >= min_neighbors].astype(np.int64).reshape(-1, 4)

    def add_frame(self, gray: np.ndarray, objects: Any) -> tuple[int, int]:
        """Label the candidate windows of one frame against its object boxes.

        Parameters
        ----------
        gray : ndarray of shape (H, W), uint8
        objects : array-like of shape (m, 4), or None
            Object boxes ``(x, y, w, h)``; ``None`` means the frame is unlabelled and skipped
            (an empty array means a labelled frame with no object: all its candidates far from
            nothing are negatives).

        Returns
        -------
        (n_positives, n_negatives) added
        """
        if objects is None:
            self.n_skipped += 1
            return 0, 0
        objs = np.asarray(objects, dtype=np.int64).reshape(-1, 4)
        boxes, wins = scan_windows(self._candidates, gray)
        if len(boxes) and len(objs):
            best = iou_matrix(boxes.astype(np.int64), objs).max(1)
        else:
            best = np.zeros(len(boxes))
        pos = np.flatnonzero(best >= self.pos_iou)
        neg = np.flatnonzero(best < self.neg_iou)
        if neg.size and self._depth is not None:
            n_passed, _ = self._depth.run(wins[neg])
            hard = n_passed >= self.hard_stage
            easy = neg[~hard]
            if easy.size > self.max_easy_negatives:
                easy = self._rng.choice(easy, size=self.max_easy_negatives, replace=False)
            neg = np.concatenate([neg[hard], easy])
        elif neg.size > self.max_easy_negatives:
            neg = self._rng.choice(neg, size=self.max_easy_negatives, replace=False)
        keep = np.sort(np.concatenate([pos, neg]))
        self._windows.append(wins[keep])
        self._labels.append(np.where(best[keep] >= self.pos_iou, 1, -1).astype(np.int8))
        self.n_frames += 1
        return int(pos.size), int(neg.size)

    @property
    def n_positives(self) -> int:
        return int(sum(int((y > 0).sum()) for y in self._labels))

    @property
    def n_negatives(self) -> int:
        return int(sum(int((y < 0).sum()) for y in self._labels))

    def windows_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """All windows collected so far, in stream order, and their labels (±1, int8)."""
        H, W = self.model.window_shape
        if not self._windows:
            return np.zeros((0, H, W), np.uint8), np.zeros(0, np.int8)
        return np.concatenate(self._windows), np.concatenate(self._labels)
