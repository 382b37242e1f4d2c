"""Running a cascade detector over an annotated image set: the evaluation loop of ``vjeval``.

:func:`load_evaluation_set` reads the images of an annotation set (skipping, and counting, those
that cannot be read); :func:`sweep_detector` runs a detector's raw windows over them one image at
a time into :func:`~vjboost.eval.sweep.sweep_min_neighbors` and keeps the raw windows of a few
chosen images, so that their detections can be drawn. ``vjeval`` and ``vjtrain --eval`` both
evaluate through these two functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..boxes import WindowGroups
from ..io import AnnotationSet, ImageReadError, list_images, read_image
from .sweep import NeighborsCurve, select_detections, sweep_min_neighbors

#: false-positive counts at which an evaluation's detection rate is reported (``vjeval``)
RATE_AT_FP = (0, 10, 50, 100)

__all__ = [
    "RATE_AT_FP",
    "DetectorRun",
    "EvaluationSet",
    "evaluation_paths",
    "load_evaluation_set",
    "sample_images",
    "sweep_detector",
]


@dataclass
class EvaluationSet:
    """Gray images of an annotation set, and their annotations.

    Attributes
    ----------
    annotations : AnnotationSet
        Restricted to the images that were read.
    images : dict of str to ndarray (H, W) uint8
    sizes : dict of str to (width, height)
    failed : list of str
        One message per image that could not be read.
    """

    annotations: AnnotationSet
    images: dict[str, np.ndarray]
    sizes: dict[str, tuple[int, int]]
    failed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Images, objects and ignore regions evaluated (JSON-friendly)."""
        ann = self.annotations
        return {"annotations": ann.source, "format": ann.format, "n_images": len(self.images),
                "n_objects": ann.n_objects,
                "n_ignore_regions": int(sum(len(v) for v in ann.ignore.values()))}


def evaluation_paths(annotations: AnnotationSet, images: str | None = None, *,
                     what: str = "image source") -> list[str]:
    """The images to evaluate: ``images`` (a folder, searched recursively, or a list file; the
    paths resolved) or else the annotated images. Raises InputError naming ``what``.

    Parameters
    ----------
    annotations : AnnotationSet
        The ground truth; its images are the default.
    images : str, optional
        A folder of images (searched recursively) or a text file listing image paths.
    what : str, default "image source"
        What ``images`` is, for errors.

    Returns
    -------
    list of str
        Image paths (absolute when listed from ``images``).
    """
    if images is None:
        return list(annotations)
    return [str(Path(p).resolve()) for p in list_images(images, recursive=True, what=what)]


def load_evaluation_set(annotations: AnnotationSet, paths: Iterable[str], *,
                        limits: Any = None,
                        progress: Callable[[str], None] | None = None) -> EvaluationSet:
    """Read the images ``paths`` in gray; unreadable or oversized ones are skipped and listed.

    Parameters
    ----------
    annotations : AnnotationSet
        Boxes of the images (images missing from it have no object).
    paths : iterable of str
        The images evaluated, e.g. ``list(annotations)``.
    limits : Limits, optional
        Caps on image size (see :func:`vjboost.io.read_image`).
    progress : callable, optional
        Called with each image path once it is read (or skipped).

    Returns
    -------
    EvaluationSet

    Raises
    ------
    AnnotationError
        An image's annotations do not fit it (a box entirely outside, a declared size that is
        not the image's): see :meth:`~vjboost.io.AnnotationSet.check_image`.

    Examples
    --------
    >>> import tempfile, cv2
    >>> p = tempfile.mkdtemp() + "/a.png"
    >>> _ = cv2.imwrite(p, np.zeros((30, 40), np.uint8))
    >>> es = load_evaluation_set(AnnotationSet({p: [[1, 2, 10, 10]]}), [p, p + ".missing"])
    >>> es.sizes[p], len(es.failed), es.annotations.n_objects
    ((40, 30), 1, 1)
    """
    images, sizes, failed = {}, {}, []
    for p in paths:
        try:
            img = read_image(p, limits=limits)
        except ImageReadError as exc:
            failed.append(str(exc))
        else:
            annotations.check_image(p, img.shape[1], img.shape[0])
            images[p] = img
            sizes[p] = (img.shape[1], img.shape[0])
        if progress is not None:
            progress(p)
    return EvaluationSet(annotations.restrict(images), images, sizes, failed)


@dataclass
class DetectorRun:
    """Result of :func:`sweep_detector`.

    Attributes
    ----------
    curve : NeighborsCurve
    detect_seconds : float
        Time in the detector (raw windows of every image).
    sweep_seconds : float
        Time grouping and matching.
    raw_windows : int
        Raw windows over all images.
    kept : dict of str to (boxes (n, 4), scores (n,))
        Raw windows of the images asked for with ``keep``.
    select : callable
        ``select(image, min_neighbors) -> (boxes, scores)``: a kept image's detections at a
        threshold, scored and pruned as the curve's.
    """

    curve: NeighborsCurve
    detect_seconds: float
    sweep_seconds: float
    raw_windows: int
    kept: dict[str, tuple[np.ndarray, np.ndarray]]
    select: Callable[[str, int], tuple[np.ndarray, np.ndarray]]

    def as_dict(self, min_neighbors: int) -> dict[str, Any]:
        """JSON-friendly summary: times, raw windows, the evaluation at ``min_neighbors`` and
        the curve."""
        c = self.curve
        ev = c.at(min_neighbors)
        return {
            "detect_seconds": round(self.detect_seconds, 3),
            "sweep_seconds": round(self.sweep_seconds, 3),
            "raw_windows": self.raw_windows,
            "at_min_neighbors": {"min_neighbors": int(min_neighbors), **ev.as_dict()},
            # the score curve at that grouping threshold (detections ranked by their score)
            "detection_rate_at_fp": {str(f): ev.detection_rate_at(f) for f in RATE_AT_FP},
            "curve": {"min_neighbors": c.min_neighbors.tolist(),
                      "false_positives": c.false_positives.tolist(),
                      "detection_rate": c.detection_rate.tolist()},
        }


def sweep_detector(
    detector: Any,
    eval_set: EvaluationSet,
    *,
    thresholds: Sequence[int] = range(0, 11),
    iou_threshold: float = 0.3,
    keep: Collection[str] = (),
    progress: Callable[[int], None] | None = None,
) -> DetectorRun:
    """Run ``detector.raw_windows`` on every image and sweep ``min_neighbors`` over them.

    Only one image's raw windows are held at a time, besides those of the ``keep`` images.

    Parameters
    ----------
    detector : CascadeDetector
        Anything with ``raw_windows(gray) -> (boxes (n, 4), scores (n,))``.
    eval_set : EvaluationSet
    thresholds : sequence of int
        ``min_neighbors`` values of the curve.
    iou_threshold : float, default=0.3
    keep : collection of str
        Images whose raw windows are returned (e.g. to draw their detections).
    progress : callable, optional
        Called with the number of raw windows so far after each image.

    Returns
    -------
    DetectorRun

    Examples
    --------
    >>> class Fixed:  # a stand-in detector: the same three windows on every image
    ...     def raw_windows(self, gray):
    ...         return np.array([[10, 10, 20, 20]] * 3), np.ones(3)
    >>> es = EvaluationSet(AnnotationSet({"a": [[10, 10, 20, 20]]}), {"a": None, "b": None},
    ...                    {"a": (64, 64), "b": (64, 64)})
    >>> run = sweep_detector(Fixed(), es, thresholds=[1, 3], keep={"a"})
    >>> run.curve.detection_rate.tolist(), run.curve.false_positives.tolist(), run.raw_windows
    ([1.0, 0.0], [1, 0], 6)
    >>> run.kept["a"][0].shape
    (3, 4)
    """
    keep = set(keep)
    timing = {"detect": 0.0, "raw": 0}
    kept: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def windows() -> Iterable[tuple[str, tuple[np.ndarray, np.ndarray]]]:
        for p, g in eval_set.images.items():
            t0 = time.perf_counter()
            boxes, scores = detector.raw_windows(g)
            timing["detect"] += time.perf_counter() - t0
            timing["raw"] += len(boxes)
            if p in keep:
                kept[p] = (np.asarray(boxes), np.asarray(scores))
            if progress is not None:
                progress(int(timing["raw"]))
            yield p, (boxes, scores)

    # a CascadeDetector scores its detections as its ``score`` says (the margin over its last
    # stage's threshold, for instance); a stand-in without one keeps the best window's score
    score = getattr(detector, "score", "best")
    model = getattr(detector, "model", None)
    rescore = None
    if score == "verified":  # the margin, rescored on the image just scanned
        score = "margin"
        rescore = lambda name, b, s: detector.rescore(eval_set.images[name], b, s)  # noqa: E731
    offset = model.stages[-1].threshold if model is not None and score == "margin" else 0.0
    # the detector's own pruning: boxes inside better ones, and its threshold
    pruning = {"suppress_inside": getattr(detector, "suppress_inside", None),
               "min_score": getattr(detector, "min_score", None)}
    t1 = time.perf_counter()
    curve = sweep_min_neighbors(windows(), eval_set.annotations, thresholds=thresholds,
                                image_sizes=eval_set.sizes, iou_threshold=iou_threshold,
                                ignore=eval_set.annotations.ignore, score=score, offset=offset,
                                rescore=rescore, **pruning)
    total = time.perf_counter() - t1

    def select(name: str, min_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        b, s = kept[name]
        return select_detections(
            WindowGroups(b, s), min_neighbors, size=eval_set.sizes.get(name), score=score,
            offset=offset, rescore=None if rescore is None else (
                lambda bb, ss: rescore(name, bb, ss)), **pruning)

    return DetectorRun(curve, timing["detect"], total - timing["detect"], int(timing["raw"]),
                       kept, select)


def sample_images(annotations: Mapping[str, np.ndarray], names: Sequence[str], n: int
                  ) -> list[str]:
    """``n`` images to draw: spread evenly over those with objects, then over the others.

    Parameters
    ----------
    annotations : mapping name -> ndarray of shape (k, 4)
        The annotated boxes of each image (absent: none).
    names : sequence of str
        The candidate images, in order.
    n : int
        Most images returned.

    Returns
    -------
    list of str
        At most ``n`` names, those with objects first, each group in ``names`` order.

    Examples
    --------
    >>> sample_images({"a": np.zeros((1, 4)), "c": np.zeros((0, 4))}, ["a", "b", "c"], 2)
    ['a', 'b']
    """
    with_obj = [p for p in names if len(annotations.get(p, ())) > 0]
    without = [p for p in names if len(annotations.get(p, ())) == 0]
    out: list[str] = []
    for group in (with_obj, without):
        m = min(len(group), n - len(out))
        if m > 0:
            idx = np.unique(np.linspace(0, len(group) - 1, m).round().astype(int))
            out += [group[i] for i in idx]
    return out
