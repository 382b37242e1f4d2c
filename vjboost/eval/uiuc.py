"""The evaluation protocol of the UIUC car benchmark (Agarwal, Awan & Roth, PAMI 2004).

A detection is the top-left corner ``(i, j)`` (row, column) of a 100×40 window. It is correct when
it lies in the ellipse centred on a true corner whose semi-axes are 25 % of the object's height
(10 rows) and width (25 columns), boundary included::

    (di / (0.25 h))² + (dj / (0.25 w))² <= 1

The dataset's README says "axes 25% of the object dimensions in each direction": *in each
direction* of the centre, i.e. semi-axes, so a detection may be off by up to 25 columns left or
right. At most one detection counts per car; the others that fall in its ellipse are false
positives. The multi-scale files give ``(i, j, w)`` and the region becomes an ellipsoid with the
third semi-axis 25 % of the true width on the width axis (the dataset's ``Evaluator_Scale``).

Detections are matched greedily by decreasing confidence, each to the closest (in the ellipse's
normalised distance) still unmatched true location whose region contains it, so the matching at
any confidence cut-off is a prefix of this one and one pass gives the whole curve.

**Recall at the equal-error rate.** Precision equals recall exactly when the detections kept
number as many as the objects (``TP / (TP + FP) = TP / N`` ⇔ ``TP + FP = N``, i.e. false
positives = missed objects). The equal-error recall is therefore ``TP(N) / N`` where ``TP(N)``
counts the correct detections among the ``N`` most confident. When the ``N``-th place falls
inside a run of equal confidences, ``TP(N)`` is interpolated linearly along the run (the expected
count under a random order of the tied detections); with fewer than ``N`` detections it is the
count of all correct ones (recall can rise no further, and padding with misses brings precision
down to it).

Boxes from a detector map to corners by keeping their centre: a box ``(x, y, w, h)`` becomes the
100×40 window with the same centre (single scale), or the window of width ``w`` and the object's
aspect ratio with the same centre (multi-scale). For boxes framed like the training windows at
scale 1 this is the box's own corner.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_array
from ..boxes import group_rectangles
from ..io.uiuc import OBJECT_SHAPE, location_window

__all__ = [
    "AXIS_FRACTION",
    "OBJECT_SHAPE",
    "UIUCEvaluation",
    "box_locations",
    "cascade_detections",
    "ellipse_distance",
    "eer_recall",
    "evaluate_uiuc",
    "match_locations",
    "plot_uiuc_curves",
    "run_uiuc",
]

#: semi-axes of the acceptance ellipse as a fraction of the object's height and width
AXIS_FRACTION = 0.25


def _locations(a: Any, name: str) -> np.ndarray:
    arr = check_array(a, name, dtype=np.float64, allow_empty=True)
    if arr.size == 0:
        return arr.reshape(0, arr.shape[-1] if arr.ndim == 2 and arr.shape[-1] in (2, 3) else 2)
    if arr.ndim != 2 or arr.shape[1] not in (2, 3):
        raise ValueError(f"{name}: expected locations of shape (n, 2) as (row, column) or (n, 3) "
                         f"as (row, column, width), got {arr.shape}")
    return arr


def box_locations(boxes: Any, *, object_shape: tuple[int, int] = OBJECT_SHAPE,
                  multiscale: bool = False) -> np.ndarray:
    """Corners of the object windows that detection boxes stand for.

    Parameters
    ----------
    boxes : array-like of shape (n, 4)
        ``(x, y, w, h)`` in pixels.
    object_shape : (height, width), default=(40, 100)
        The benchmark's object window.
    multiscale : bool, default=False
        False: the ``object_shape`` window with the box's centre, as ``(row, column)``. True:
        the window of the box's width and the object's aspect ratio with the box's centre, as
        ``(row, column, width)``.

    Returns
    -------
    ndarray of float64, shape (n, 2) or (n, 3)

    Examples
    --------
    >>> box_locations([[26, 48, 100, 40], [10, 20, 50, 20]]).tolist()
    [[48.0, 26.0], [10.0, -15.0]]
    >>> box_locations([[10, 20, 50, 20]], multiscale=True).tolist()
    [[20.0, 10.0, 50.0]]
    """
    b = check_array(boxes, "boxes", dtype=np.float64, allow_empty=True)
    if b.size == 0:
        return np.zeros((0, 3 if multiscale else 2))
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"boxes: expected shape (n, 4) as (x, y, w, h), got {b.shape}")
    oh, ow = (float(v) for v in object_shape)
    cx, cy = b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2
    if multiscale:
        w = b[:, 2]
        return np.stack([cy - w * (oh / ow) / 2, cx - w / 2, w], axis=1)
    return np.stack([cy - oh / 2, cx - ow / 2], axis=1)


def ellipse_distance(found: Any, true: Any, *, object_shape: tuple[int, int] = OBJECT_SHAPE,
                     axis_fraction: float = AXIS_FRACTION) -> np.ndarray:
    """Normalised squared distance of every found location to every true one (<= 1: inside).

    Parameters
    ----------
    found : array-like of shape (n, 2) or (n, 3)
    true : array-like of shape (m, 2) or (m, 3)
        ``(row, column)``, or ``(row, column, width)`` for the multi-scale protocol (then the
        semi-axes scale with the true width: ``f h_t``, ``f w_t``, ``f w_t`` where
        ``h_t = w_t · height / width`` of ``object_shape``).
    object_shape : (height, width), default=(40, 100)
    axis_fraction : float, default=0.25
        Semi-axes as a fraction of the object's dimensions.

    Returns
    -------
    ndarray of float64, shape (n, m)

    Examples
    --------
    >>> ellipse_distance([[58, 26], [48, 51], [58, 51]], [[48, 26]]).ravel().tolist()
    [1.0, 1.0, 2.0]
    """
    f = _locations(found, "found")
    t = _locations(true, "true")
    if f.shape[1] != t.shape[1] and f.size and t.size:
        raise ValueError(f"found has {f.shape[1]} values per location, true {t.shape[1]}: give "
                         "both as (row, column) or both as (row, column, width)")
    if not axis_fraction > 0:
        raise ValueError(f"axis_fraction: must be > 0, got {axis_fraction!r}")
    oh, ow = (float(v) for v in object_shape)
    if t.shape[1] == 3:
        wt = t[:, 2]
        ax = np.stack([axis_fraction * wt * oh / ow, axis_fraction * wt, axis_fraction * wt],
                      axis=1)
    else:
        ax = np.broadcast_to(np.array([axis_fraction * oh, axis_fraction * ow]), t.shape)
    d = (f[:, None, :] - t[None, :, :]) / ax[None]
    return (d * d).sum(axis=2)


def match_locations(found: Any, scores: Any, true: Any, *,
                    object_shape: tuple[int, int] = OBJECT_SHAPE,
                    axis_fraction: float = AXIS_FRACTION) -> tuple[np.ndarray, np.ndarray]:
    """Greedy matching of one image's detections to its true locations, by decreasing score.

    Each detection takes the unmatched true location whose ellipse contains it (boundary
    included) with the smallest normalised distance; one detection per object at most.

    Parameters
    ----------
    found : array-like of shape (n, 2) or (n, 3)
    scores : array-like of shape (n,)
        Higher is more confident; ties keep the input order.
    true : array-like of shape (m, 2) or (m, 3)
    object_shape, axis_fraction
        See :func:`ellipse_distance`.

    Returns
    -------
    matched : ndarray of int64, shape (n,)
        Index of the true location each detection matched, or -1 (a false positive).
    order : ndarray of int64, shape (n,)
        The score order used, most confident first.

    Examples
    --------
    >>> m, order = match_locations([[48, 30], [50, 26], [90, 90]], [0.2, 0.9, 0.5], [[48, 26]])
    >>> m.tolist(), order.tolist()
    ([-1, 0, -1], [1, 2, 0])
    """
    f = _locations(found, "found")
    sc = check_array(scores, "scores", ndim=1, dtype=np.float64, allow_empty=True)
    if sc.shape[0] != f.shape[0]:
        raise ValueError(f"scores: has {sc.shape[0]} entries for {f.shape[0]} detections")
    t = _locations(true, "true")
    order = np.argsort(-sc, kind="stable")
    matched = np.full(f.shape[0], -1, dtype=np.int64)
    if f.shape[0] == 0 or t.shape[0] == 0:
        return matched, order
    d = ellipse_distance(f, t, object_shape=object_shape, axis_fraction=axis_fraction)
    taken = np.zeros(t.shape[0], dtype=bool)
    for i in order:  # detections of one image: a handful; the loop is over matches, not pixels
        cand = np.where(taken, np.inf, d[i])
        j = int(np.argmin(cand))
        if cand[j] <= 1.0:
            matched[i] = j
            taken[j] = True
    return matched, order


def eer_recall(correct: Any, scores: Any, n_objects: int) -> float:
    """Recall at the equal-error rate (precision = recall) of scored detections.

    Parameters
    ----------
    correct : array-like of bool, shape (n,)
        Whether each detection is a true positive.
    scores : array-like of shape (n,)
    n_objects : int
        Objects to find (> 0).

    Returns
    -------
    float
        ``TP(N) / N`` with ``N = n_objects``, interpolated along a run of tied scores that
        straddles place ``N`` (see the module docstring).

    Examples
    --------
    >>> eer_recall([True, True, False, True], [4, 3, 2, 1], 3)   # top 3 hold 2 cars
    0.6666666666666666
    >>> round(eer_recall([True, False, True, True], [4, 2, 2, 2], 2), 4)  # 1 + 2/3 car at place 2
    0.8333
    """
    c = np.asarray(correct, dtype=bool).ravel()
    s = check_array(scores, "scores", ndim=1, dtype=np.float64, allow_empty=True)
    if c.shape[0] != s.shape[0]:
        raise ValueError(f"scores: has {s.shape[0]} entries for {c.shape[0]} detections")
    if n_objects <= 0:
        raise ValueError(f"n_objects: must be positive, got {n_objects}")
    n = int(n_objects)
    order = np.argsort(-s, kind="stable")
    c, s = c[order], s[order]
    if c.shape[0] <= n:
        return float(c.sum()) / n
    # the run of scores equal to the N-th one: [a, b)
    a = int(np.searchsorted(-s, -s[n - 1], side="left"))
    b = int(np.searchsorted(-s, -s[n - 1], side="right"))
    tp = c[:a].sum() + c[a:b].sum() * (n - a) / (b - a)
    return float(tp) / n


@dataclass(frozen=True)
class UIUCEvaluation:
    """Result of :func:`evaluate_uiuc`.

    Attributes
    ----------
    n_images, n_objects, n_detections : int
    true_positives, false_positives : int
        With every detection kept.
    recall, precision, f_measure : float
        With every detection kept (the dataset's evaluator's figures for a fixed output).
    eer_recall : float
        Recall at the equal-error rate as the confidence threshold varies.
    eer_threshold : float
        Confidence of the ``n_objects``-th most confident detection (``-inf`` with fewer).
    thresholds : ndarray of shape (k,)
        Distinct confidences, decreasing; entry ``t`` keeps detections scoring ``>= thresholds[t]``.
    curve_true_positives, curve_false_positives : ndarray of int64, shape (k,)
    multiscale : bool
        Locations carried a width (ellipsoid criterion).
    per_image : dict
        Image -> (true positives, false positives, objects) with every detection kept.
    """

    n_images: int
    n_objects: int
    n_detections: int
    true_positives: int
    false_positives: int
    recall: float
    precision: float
    f_measure: float
    eer_recall: float
    eer_threshold: float
    thresholds: np.ndarray
    curve_true_positives: np.ndarray
    curve_false_positives: np.ndarray
    multiscale: bool = False
    per_image: dict = field(default_factory=dict)

    @property
    def curve_recall(self) -> np.ndarray:
        """Recall at each threshold."""
        return self.curve_true_positives / max(self.n_objects, 1)

    @property
    def curve_precision(self) -> np.ndarray:
        """Precision at each threshold."""
        n = self.curve_true_positives + self.curve_false_positives
        return self.curve_true_positives / np.maximum(n, 1)

    def at_threshold(self, threshold: float) -> dict[str, float]:
        """Recall, precision, F-measure and counts keeping detections scoring ``>= threshold``."""
        k = np.flatnonzero(self.thresholds >= threshold)
        tp = int(self.curve_true_positives[k[-1]]) if k.size else 0
        fp = int(self.curve_false_positives[k[-1]]) if k.size else 0
        return _prf(tp, fp, self.n_objects)

    def recall_at(self, false_positives: int) -> float:
        """Best recall reachable with at most ``false_positives`` false positives."""
        ok = self.curve_false_positives <= false_positives
        return float(self.curve_recall[ok].max()) if ok.any() else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (with the curve as lists)."""
        return {
            "n_images": self.n_images, "n_objects": self.n_objects,
            "n_detections": self.n_detections, "true_positives": self.true_positives,
            "false_positives": self.false_positives, "recall": self.recall,
            "precision": self.precision, "f_measure": self.f_measure,
            "eer_recall": self.eer_recall, "eer_threshold": self.eer_threshold,
            "multiscale": self.multiscale,
            "curve": {"threshold": self.thresholds.tolist(),
                      "true_positives": self.curve_true_positives.tolist(),
                      "false_positives": self.curve_false_positives.tolist()},
        }


def _prf(tp: int, fp: int, n: int) -> dict[str, float]:
    r = tp / n if n else 0.0
    p = tp / (tp + fp) if tp + fp else 0.0
    f = 2 * r * p / (r + p) if r + p else 0.0
    return {"true_positives": tp, "false_positives": fp, "recall": r, "precision": p,
            "f_measure": f}


def evaluate_uiuc(detections: Mapping[Any, tuple[Any, Any]], truth: Mapping[Any, Any], *,
                  object_shape: tuple[int, int] = OBJECT_SHAPE,
                  axis_fraction: float = AXIS_FRACTION) -> UIUCEvaluation:
    """Evaluate scored detections with the UIUC protocol.

    Parameters
    ----------
    detections : mapping image -> (locations (n, 2|3), scores (n,))
        One entry per image that was run, also those without detections. Locations are corners
        (:func:`box_locations` turns boxes into them).
    truth : mapping image -> locations (m, 2|3)
        Images missing here have no object. Annotated images missing from ``detections`` are
        refused (they were not run).
    object_shape, axis_fraction
        See :func:`ellipse_distance`.

    Returns
    -------
    UIUCEvaluation

    Examples
    --------
    >>> truth = {0: [[48, 26]], 1: [[61, 20], [63, 140]]}
    >>> dets = {0: ([[50, 30], [10, 10]], [0.9, 0.8]), 1: ([[60, 22], [64, 150]], [0.7, 0.6])}
    >>> ev = evaluate_uiuc(dets, truth)
    >>> ev.true_positives, ev.false_positives, round(ev.eer_recall, 3)
    (3, 1, 0.667)
    """
    missing = [k for k in truth if k not in detections]
    if missing:
        raise ValueError(f"detections: {len(missing)} annotated image(s) have no entry (not "
                         f"run?), e.g. {missing[0]!r}; give an empty result for images with no "
                         "detection")
    all_s, all_c = [], []
    n_obj = 0
    per_image = {}
    widths = set()
    for key, (locs, scores) in detections.items():
        t = _locations(truth.get(key, np.zeros((0, 2))), f"truth[{key!r}]")
        f = _locations(locs, f"detections[{key!r}]")
        if t.size:
            widths.add(t.shape[1])
        if f.size:
            widths.add(f.shape[1])
        n_obj += t.shape[0]
        matched, _ = match_locations(f, scores, t, object_shape=object_shape,
                                     axis_fraction=axis_fraction)
        ok = matched >= 0
        per_image[key] = (int(ok.sum()), int((~ok).sum()), int(t.shape[0]))
        all_s.append(np.asarray(scores, dtype=np.float64).ravel())
        all_c.append(ok)
    if len(widths) > 1:
        raise ValueError("detections and truth mix (row, column) and (row, column, width) "
                         "locations; use one protocol for both")
    scores = np.concatenate(all_s) if all_s else np.zeros(0)
    correct = np.concatenate(all_c) if all_c else np.zeros(0, dtype=bool)
    order = np.argsort(-scores, kind="stable")
    s, c = scores[order], correct[order]
    ctp, cfp = np.cumsum(c), np.cumsum(~c)
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True]) if s.size else np.zeros(0, np.int64)
    n_det, n_tp = int(s.size), int(c.sum())
    base = _prf(n_tp, n_det - n_tp, n_obj)
    return UIUCEvaluation(
        n_images=len(detections), n_objects=n_obj, n_detections=n_det,
        true_positives=n_tp, false_positives=n_det - n_tp, recall=base["recall"],
        precision=base["precision"], f_measure=base["f_measure"],
        eer_recall=eer_recall(c, s, n_obj) if n_obj else 0.0,
        eer_threshold=float(s[n_obj - 1]) if 0 < n_obj <= n_det else float("-inf"),
        thresholds=s[last], curve_true_positives=ctp[last].astype(np.int64),
        curve_false_positives=cfp[last].astype(np.int64), multiscale=3 in widths,
        per_image=per_image,
    )


def cascade_detections(boxes: Any, scores: Any, *, min_neighbors: int = 1,
                       confidence: str = "neighbors") -> tuple[np.ndarray, np.ndarray]:
    """Group a cascade's raw windows and give each group a confidence.

    Parameters
    ----------
    boxes : array-like of int, shape (n, 4)
        Raw windows ``(x, y, w, h)`` (``CascadeDetector.raw_windows``).
    scores : array-like of shape (n,)
        Their last-stage scores.
    min_neighbors : int, default=1
        OpenCV's grouping threshold: groups of at most this many windows are dropped.
    confidence : {"neighbors", "score"}, default="neighbors"
        ``"neighbors"``: the group's size, ties broken by its best last-stage score (the size
        plus a logistic squashing of the score into (0, 1)); ``"score"``: the best last-stage
        score alone.

    Returns
    -------
    boxes : ndarray of int32, shape (k, 4)
    confidences : ndarray of float64, shape (k,)

    Examples
    --------
    >>> b = [[0, 0, 50, 20], [1, 0, 50, 20], [0, 1, 50, 20], [200, 0, 50, 20]]
    >>> g, c = cascade_detections(b, [0.5, 1.0, 0.2, 3.0])
    >>> g.tolist(), c.round(3).tolist()
    ([[0, 0, 50, 20]], [3.731])
    """
    if confidence not in ("neighbors", "score"):
        raise ValueError(f"confidence: expected 'neighbors' or 'score', got {confidence!r}")
    g, counts, best = group_rectangles(boxes, max(int(min_neighbors), 0), 0.2, scores)
    if confidence == "score":
        return g, best
    return g, counts + 1.0 / (1.0 + np.exp(-np.clip(best, -50, 50)))


def run_uiuc(
    model: Any,
    truth_path: str | os.PathLike[str],
    images: Sequence[str | os.PathLike[str]],
    *,
    scale_factor: float = 1.1,
    min_neighbors: int = 1,
    confidence: str = "neighbors",
    score: str | None = None,
    min_size: Any = None,
    max_size: Any = None,
    border: str | None = "model",
    border_margin: float | str = "model",
    threads: int | None = None,
) -> tuple[UIUCEvaluation, dict[str, Any]]:
    """Run a cascade over UIUC test images and evaluate it with the benchmark's protocol.

    Parameters
    ----------
    model : CascadeModel
    truth_path : path-like
        ``trueLocations.txt`` (single scale) or ``trueLocations_Scale.txt`` (multi-scale).
    images : sequence of path-like
        The test images; their number is the trailing integer of the file name
        (``test-17.pgm`` → 17). Images without an entry in the truth have no car.
    scale_factor, min_size, max_size, border, border_margin, threads
        Of the :class:`~vjboost.cascade.detector.CascadeDetector` (``border``: windows may
        extend past the image, for the cars its edge cuts; by default what the model declares,
        :func:`~vjboost.cascade.detector.declared_border`).
    min_neighbors, confidence
        See :func:`cascade_detections`.
    score : str, optional
        Rank the detector's own detections (grouped at ``min_neighbors``, as
        :class:`~vjboost.cascade.detector.CascadeDetector` with ``score`` returns them; e.g.
        ``"verified"`` or ``"model"``) instead of ``confidence``.

    Returns
    -------
    evaluation : UIUCEvaluation
    info : dict
        ``n_images``, ``detect_seconds`` (all images), ``unreadable`` (list of messages),
        ``locations`` (image number -> found locations, for :func:`write_uiuc_locations`).
    """
    from ..cascade.detector import CascadeDetector, to_gray
    from ..io import AnnotationError, ImageReadError, read_image
    from ..io.uiuc import read_uiuc_locations, uiuc_image_number

    truth = read_uiuc_locations(truth_path)
    multiscale = next(iter(truth.values())).shape[1] == 3
    # the raw windows, grouped here by size; or with a score the detector's own groups
    grouping = ({"min_neighbors": 0, "grouping": "none"} if score is None
                else {"min_neighbors": min_neighbors, "score": score, "min_score": None})
    det = CascadeDetector(model, scale_factor=scale_factor, min_size=min_size,
                          max_size=max_size, border=border, border_margin=border_margin,
                          threads=threads, **grouping)
    numbered: dict[int, str] = {}
    for p in images:
        n = uiuc_image_number(p)
        if n is None:
            raise ValueError(f"{p}: no image number in the file name (expected e.g. test-17.pgm)")
        if n in numbered:
            raise ValueError(f"{p}: image number {n} also belongs to {numbered[n]}")
        numbered[n] = str(p)
    not_run = sorted(set(truth) - set(numbered))
    if not_run:
        raise ValueError(f"{truth_path}: {len(not_run)} annotated image(s) are not among the "
                         f"{len(numbered)} images given, e.g. test-{not_run[0]}")
    dets: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    locations: dict[int, np.ndarray] = {}
    unreadable: list[str] = []
    seconds = 0.0
    for n, p in sorted(numbered.items()):
        try:
            gray = to_gray(read_image(p))
        except ImageReadError as exc:
            unreadable.append(str(exc))
            continue
        for loc in truth.get(n, np.zeros((0, 2), np.int64)).tolist():
            if loc[0] >= gray.shape[0] or loc[1] >= gray.shape[1]:
                h, w = location_window(loc)
                raise AnnotationError(
                    f"{truth_path}: image {n}: ({','.join(map(str, loc))}) puts the {w}x{h} "
                    f"window entirely outside the {gray.shape[1]}x{gray.shape[0]} image {p}")
        t0 = time.perf_counter()
        if score is None:
            raw_b, raw_s = det.raw_windows(gray)
            boxes, conf = cascade_detections(raw_b, raw_s, min_neighbors=min_neighbors,
                                             confidence=confidence)
        else:
            found = det.detect(gray)
            boxes, conf = found.boxes, found.scores
        seconds += time.perf_counter() - t0
        locs = box_locations(boxes, object_shape=OBJECT_SHAPE, multiscale=multiscale)
        dets[n] = (locs, conf)
        locations[n] = locs
    if unreadable and set(truth) - set(dets):
        raise ValueError(f"{len(unreadable)} annotated image(s) could not be read: "
                         f"{unreadable[0]}")
    ev = evaluate_uiuc(dets, truth)
    return ev, {"n_images": len(dets), "detect_seconds": seconds, "unreadable": unreadable,
                "locations": locations, "truth": str(Path(truth_path))}


def plot_uiuc_curves(ax: Any, evaluations: Mapping[str, UIUCEvaluation], *,
                     title: str | None = None) -> None:
    """Draw recall against false positives for each evaluation (matplotlib ``ax``).

    The legend gives each curve's recall at the equal-error rate; a cross marks that point.

    Parameters
    ----------
    ax : matplotlib Axes
        Drawn into (false positives from 0: linear up to 10, logarithmic beyond).
    evaluations : mapping label -> UIUCEvaluation
        One curve per entry, in order.
    title : str, optional
        The axes' title.
    """
    from .plot import false_positive_axis

    largest = 0.0
    for label, ev in evaluations.items():
        fp = np.r_[0, ev.curve_false_positives]
        rc = np.r_[0.0, ev.curve_recall]
        (line,) = ax.plot(fp, rc, label=f"{label} (EER recall {ev.eer_recall:.3f})")
        # at the equal-error point false positives = missed cars
        miss = ev.n_objects * (1 - ev.eer_recall)
        ax.plot([miss], [ev.eer_recall], "x", color=line.get_color(), ms=8)
        largest = max(largest, float(fp.max()), miss)
    false_positive_axis(ax, largest)
    n = next(iter(evaluations.values())).n_images if evaluations else 0
    ax.set_xlabel(f"false positives ({n} images)")
    ax.set_ylabel("recall (UIUC ellipse criterion)")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    if title:
        ax.set_title(title)
