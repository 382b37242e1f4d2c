"""Adapting a trained cascade to new data by re-weighting its weak classifiers online.

The structure of the cascade (stages, trees, features, splits) is kept; only the weight of each
weak classifier changes. Stage by stage, each tree's vote ``sign(leaf value)`` is a fixed weak
hypothesis; :class:`~vjboost.boost.online.OnlineCoordinateBoost` learns its coefficient ``α`` from
the labelled windows that reach the stage, in stream order (started from batch AdaBoost on the
first ``n_init`` of them). The tree's leaves become ``α·sign(leaf)`` and the stage threshold is
re-calibrated on the stream's positives so that the stage keeps ``min_hit_rate`` of them, with
OpenCV's rule (the threshold is the positive score at the ``1 − min_hit_rate`` quantile).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_in_range
from ..boost.online import OnlineCoordinateBoost
from ..eval.matching import iou_matrix
from .model import CascadeModel, Stage, Tree
from .positives import resize_to_window
from .trainer import stage_false_alarm, stage_threshold
from .window_eval import model_feature_values

__all__ = ["AdaptationReport", "adapt_cascade", "collect_windows"]


@dataclass
class AdaptationReport:
    """What :func:`adapt_cascade` did, per stage.

    Attributes
    ----------
    stages : list of dict
        ``n_pos``, ``n_neg`` (windows reaching the stage), ``alpha`` (new coefficients),
        ``threshold_before``/``threshold_after``, ``hit_rate_before``/``after`` and
        ``false_alarm_before``/``after`` on the reaching windows.
    """

    stages: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"stages": self.stages}


def _stage_rates(scores: np.ndarray, y: np.ndarray, stage: Stage) -> tuple[float, float]:
    pos, neg = scores[y > 0], scores[y < 0]
    hit = float(np.mean(pos >= stage.reject_threshold)) if pos.size else 0.0
    return hit, stage_false_alarm(neg, stage.threshold)


def adapt_cascade(
    model: CascadeModel,
    windows: np.ndarray,
    labels: Any,
    *,
    order: int | None = 5,
    smoothing: float = 0.5,
    n_init: int | None = None,
    min_hit_rate: float | None = None,
    balanced: bool = True,
) -> tuple[CascadeModel, AdaptationReport]:
    """Re-weight every stage of ``model`` from a labelled stream of windows.

    Parameters
    ----------
    model : CascadeModel
    windows : ndarray of shape (S, H, W), uint8
        Windows of the model's size, in stream order (e.g. frame by frame).
    labels : array-like of shape (S,)
        +1 (object) or -1 (background).
    order : int or None, default=5
        Order ``K`` of Online Coordinate Boosting (``None``: all preceding coordinates). Stages
        have hundreds of weak classifiers, many nearly always right on the windows that reach
        them; corrections chained over that many coordinates compound their approximation error
        and the coefficients diverge, so a short order is the default.
    smoothing : float, default=0.5
    n_init : int, optional
        Windows (reaching a stage) used to start that stage from batch AdaBoost. Default:
        ``max(20, 10%)`` of them.
    min_hit_rate : float, optional
        Fraction of the stream's positives reaching a stage that the adapted stage must keep.
        Default: the fraction the original stage keeps (adaptation keeps the hit rate and spends
        the better weights on rejecting more negatives).
    balanced : bool, default=True
        Positives and negatives start with half of the total weight each, as in cascade
        training (streams are usually unbalanced).

    Returns
    -------
    adapted : CascadeModel
        Same structure, new leaf values and stage thresholds; ``params["adapted"]`` records it.
    report : AdaptationReport

    Raises
    ------
    ValueError
        Labels not ±1, length mismatch, no positive or no negative in the stream, or a stage
        that no positive reaches.
    """
    y = np.asarray(labels)
    if y.ndim != 1 or not np.isin(y, (-1, 1)).all():
        raise ValueError("labels: expected a 1-D array of -1/+1")
    if len(y) != len(windows):
        raise ValueError(f"labels: {len(y)} labels for {len(windows)} windows")
    if not (y > 0).any() or not (y < 0).any():
        raise ValueError("labels: the stream needs both positives (+1) and negatives (-1)")
    if min_hit_rate is not None:
        check_in_range(min_hit_rate, "min_hit_rate", low=0, high=1, low_inclusive=False)
    values = model_feature_values(model, windows)
    reach = np.ones(len(y), dtype=bool)
    stages, report = [], AdaptationReport()
    for k, stage in enumerate(model.stages):
        idx = np.flatnonzero(reach)
        yk = y[idx]
        if not (yk > 0).any():
            raise ValueError(f"stage {k}: no positive window reaches it; nothing to adapt on")
        v = values[:, idx]
        outputs = np.stack([t.predict(v).astype(np.float64) for t in stage.trees])
        votes = np.where(outputs >= 0, 1, -1)
        margins = (votes * yk[None, :]).T
        n0 = n_init if n_init is not None else max(20, len(idx) // 10)
        n0 = min(max(int(n0), 1), len(idx))
        w0 = np.ones(len(idx))
        if balanced and (yk < 0).any():
            n_pos, n_neg = (yk > 0).sum(), (yk < 0).sum()
            w0 = np.where(yk > 0, len(idx) / (2.0 * n_pos), len(idx) / (2.0 * n_neg))
        ocb = OnlineCoordinateBoost(n_hypotheses=len(stage.trees), order=order,
                                    smoothing=smoothing)
        ocb.init_from_margins(margins[:n0], sample_weight=w0[:n0])
        if n0 < len(idx):
            ocb.learn_margins(margins[n0:], sample_weight=w0[n0:])
        trees = []
        for t, a in zip(stage.trees, ocb.alpha_, strict=True):
            # keep the shape of the leaves (Gentle AdaBoost's are asymmetric), re-scale them so
            # that their mean magnitude is the learnt coefficient
            scale = float(np.mean(np.abs(t.leaves)))
            leaves = (t.leaves.astype(np.float64) * (a / scale if scale > 0 else 0.0))
            trees.append(Tree(t.left, t.right, t.feature, t.threshold,
                              leaves.astype(np.float32), t.subsets))
        scores_new = np.zeros(len(idx))
        for t in trees:
            scores_new += t.predict(v).astype(np.float64)
        before = _stage_rates(outputs.sum(0), yk, stage)
        target = before[0] if min_hit_rate is None else min_hit_rate
        thr, _ = stage_threshold(scores_new[yk > 0], max(target, 1e-6))
        new_stage = Stage(trees, thr)
        after = _stage_rates(scores_new, yk, new_stage)
        report.stages.append({
            "stage": k, "n_pos": int((yk > 0).sum()), "n_neg": int((yk < 0).sum()),
            "alpha": ocb.alpha_.round(6).tolist(),
            "threshold_before": stage.threshold, "threshold_after": new_stage.threshold,
            "hit_rate_before": before[0], "hit_rate_after": after[0],
            "false_alarm_before": before[1], "false_alarm_after": after[1],
        })
        stages.append(new_stage)
        reach[idx] = new_stage.score(v) >= new_stage.reject_threshold
    params = dict(model.params)
    params["adapted"] = {"windows": int(len(y)), "positives": int((y > 0).sum()),
                         "order": order, "smoothing": smoothing, "min_hit_rate": min_hit_rate}
    adapted = CascadeModel(model.window_shape, stages, model.features, model.feature_type,
                           model.family, params)
    return adapted, report


def collect_windows(
    candidates: np.ndarray,
    gray: np.ndarray,
    objects: np.ndarray,
    window_shape: tuple[int, int],
    *,
    pos_iou: float = 0.5,
    neg_iou: float = 0.1,
    max_negatives: int | None = 30,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Labelled windows of one frame from candidate boxes and the frame's object boxes.

    Candidates overlapping an object box by ``IoU >= pos_iou`` become positives, those overlapping
    every object by less than ``neg_iou`` negatives (at most ``max_negatives``, drawn with
    ``rng``); the ones in between are ambiguous and left out. Each is cut from ``gray`` and
    resized to the window.

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
