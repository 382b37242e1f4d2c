"""Detection-rate / false-positive curves by sweeping ``min_neighbors`` over raw windows.

A cascade's raw windows are computed once per image and partitioned once into OpenCV's classes
of similar rectangles (:class:`vjboost.boxes.WindowGroups`; the partition does not depend on the
threshold); selecting the classes at each ``min_neighbors`` gives the detections, boxes and
scores, that ``CascadeDetector(min_neighbors=t)`` returns. This is the usual way to draw a
cascade's ROC-style curve.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..boxes import WindowGroups, drop_inside
from .metrics import DetectionEvaluation, evaluate_detections

__all__ = ["NeighborsCurve", "select_detections", "sweep_min_neighbors"]


@dataclass(frozen=True)
class NeighborsCurve:
    """One point per ``min_neighbors`` value.

    Attributes
    ----------
    min_neighbors : ndarray of shape (k,), int
    false_positives : ndarray of shape (k,), int
    detection_rate : ndarray of shape (k,)
    evaluations : list of DetectionEvaluation
        Full evaluation at each threshold (detections ranked by the detector's scores: the best
        window score of each group).

    Examples
    --------
    >>> face = np.array([[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20]])
    >>> wall = np.array([[40, 40, 20, 20], [41, 40, 20, 20]])
    >>> raw = {"a.png": (face, np.ones(3)), "b.png": (wall, np.ones(2))}
    >>> curve = sweep_min_neighbors(raw, {"a.png": np.array([[10, 10, 20, 20]])},
    ...                             thresholds=[1, 2, 3])
    >>> curve.min_neighbors.tolist(), curve.false_positives.tolist(), curve.detection_rate.tolist()
    ([1, 2, 3], [1, 0, 0], [1.0, 1.0, 0.0])
    >>> curve.at(2).true_positives, curve.detection_rate_at(0)
    (1, 1.0)
    """

    min_neighbors: np.ndarray
    false_positives: np.ndarray
    detection_rate: np.ndarray
    evaluations: list[DetectionEvaluation]

    def at(self, min_neighbors: int) -> DetectionEvaluation:
        """The evaluation at one threshold."""
        idx = np.flatnonzero(self.min_neighbors == min_neighbors)
        if idx.size == 0:
            raise ValueError(f"min_neighbors: {min_neighbors} is not on the curve")
        return self.evaluations[int(idx[0])]

    def detection_rate_at(self, false_positives: int) -> float:
        """Best detection rate of any threshold with at most this many false positives."""
        ok = self.false_positives <= false_positives
        return float(self.detection_rate[ok].max()) if ok.any() else 0.0


def select_detections(
    groups: WindowGroups,
    min_neighbors: int,
    *,
    size: tuple[int, int] | None = None,
    score: str = "best",
    offset: float = 0.0,
    rescore: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    suppress_inside: float | None = None,
    min_score: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The detections of one image's window groups at one ``min_neighbors``, as
    :class:`~vjboost.cascade.detector.CascadeDetector` returns them: selected and scored
    (:meth:`WindowGroups.select`), rescored (a verified detector), those inside a better one
    dropped (above 0: never raw windows), then those scored below ``min_score``.

    Parameters
    ----------
    groups : WindowGroups
        The image's raw windows, partitioned.
    min_neighbors : int
    size : (width, height), optional
        The image's, for clipping grouped boxes as OpenCV does.
    score : {"best", "neighbors", "sum", "margin"}, default="best"
    offset : float, default=0.0
        The last stage's threshold, for ``score="margin"``.
    rescore : callable, optional
        ``rescore(boxes, scores) -> scores``.
    suppress_inside : float, optional
    min_score : float, optional

    Returns
    -------
    boxes : ndarray, shape (N, 4)
    scores : ndarray, shape (N,)

    Examples
    --------
    >>> face = np.array([[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20]])
    >>> b, s = select_detections(WindowGroups(face, np.array([1.0, 2.0, 3.0])), 2,
    ...                          min_score=2.5)
    >>> b.tolist(), s.tolist()
    ([[10, 10, 20, 20]], [3.0])
    """
    boxes, scores, _ = groups.select(min_neighbors, size, score=score, offset=offset)
    if rescore is not None:
        scores = rescore(boxes, scores)
    if min_neighbors > 0:  # never raw windows
        boxes, scores = drop_inside(boxes, scores, suppress_inside)
    if min_score is not None:
        keep = np.asarray(scores) >= min_score
        boxes, scores = np.asarray(boxes)[keep], np.asarray(scores)[keep]
    return boxes, scores


def sweep_min_neighbors(
    raw: Mapping[str, tuple[np.ndarray, np.ndarray]]
    | Iterable[tuple[str, tuple[np.ndarray, np.ndarray]]],
    ground_truth: Mapping[str, np.ndarray],
    *,
    thresholds: Iterable[int] = range(0, 11),
    image_sizes: Mapping[str, tuple[int, int]] | None = None,
    iou_threshold: float = 0.3,
    ignore: Mapping[str, np.ndarray] | None = None,
    progress: Callable[[str], None] | None = None,
    score: str = "best",
    offset: float = 0.0,
    rescore: Callable[[str, np.ndarray, np.ndarray], np.ndarray] | None = None,
    suppress_inside: float | None = None,
    min_score: float | None = None,
) -> NeighborsCurve:
    """Evaluate the grouped detections at several ``min_neighbors`` values.

    Parameters
    ----------
    raw : mapping image -> (boxes (n, 4), scores (n,)), or an iterable of such pairs
        Raw (ungrouped) windows of every image run, including images with none. An iterable
        (e.g. a generator running the detector) is consumed one image at a time, so that only
        one image's raw windows are held at once besides the selections.
    ground_truth : mapping image -> boxes (m, 4)
    thresholds : iterable of int, default=0..10
    image_sizes : mapping image -> (width, height), optional
        For clipping grouped boxes to the image, as OpenCV does.
    iou_threshold : float, default=0.3
    ignore : mapping image -> boxes (k, 4), optional
        Ignore regions (see :func:`evaluate_detections`).
    progress : callable, optional
        Called with each image's name once its windows are grouped.
    score : {"best", "neighbors", "sum", "margin"}, default="best"
        How the detections of each threshold are scored (and so ranked within its
        evaluation: its average precision and score curve), as the detector's ``score``
        (:meth:`vjboost.boxes.WindowGroups.select`).
    offset : float, default=0.0
        The last stage's threshold, for ``score="margin"``.
    rescore : callable, optional
        ``rescore(image, boxes, scores) -> scores`` applied to each image's grouped detections
        right after its windows are grouped (a verified detector's
        :meth:`~vjboost.cascade.detector.CascadeDetector.rescore`).
    suppress_inside : float, optional
        Then drop, at every threshold above 0, the detections that lie this share inside a
        better-scored one (:func:`vjboost.boxes.suppress_inside`), as the detector's own
        ``suppress_inside`` does.
    min_score : float, optional
        Then drop the detections scored below this, as the detector's ``min_score`` does.

    Returns
    -------
    NeighborsCurve

    Examples
    --------
    >>> face = np.array([[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20]])
    >>> raw = {"a.png": (face, np.ones(3)), "b.png": (np.zeros((0, 4)), np.zeros(0))}
    >>> curve = sweep_min_neighbors(raw, {"a.png": np.array([[10, 10, 20, 20]])},
    ...                             thresholds=[1, 2, 3])
    >>> curve.detection_rate.tolist(), curve.false_positives.tolist()
    ([1.0, 1.0, 0.0], [0, 0, 0])
    """
    ts = sorted({int(t) for t in thresholds})
    if not ts or ts[0] < 0:
        raise ValueError(f"thresholds: expected non-negative integers, got {ts}")
    per_t: list[dict[str, tuple[np.ndarray, np.ndarray]]] = [{} for _ in ts]
    for name, (b, s) in (raw.items() if isinstance(raw, Mapping) else raw):
        groups = WindowGroups(b, s)
        size = None if image_sizes is None else image_sizes.get(name)
        on_image = None if rescore is None else (
            lambda b, sc, name=name: rescore(name, b, sc))
        for k, t in enumerate(ts):
            per_t[k][name] = select_detections(groups, t, size=size, score=score,
                                               offset=offset, rescore=on_image,
                                               suppress_inside=suppress_inside,
                                               min_score=min_score)
        if progress is not None:
            progress(name)
    evals = [evaluate_detections(d, ground_truth, iou_threshold=iou_threshold, ignore=ignore)
             for d in per_t]
    return NeighborsCurve(
        min_neighbors=np.asarray(ts, dtype=np.int64),
        false_positives=np.asarray([e.false_positives for e in evals], dtype=np.int64),
        detection_rate=np.asarray([e.detection_rate for e in evals]),
        evaluations=evals,
    )
