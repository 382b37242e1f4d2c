"""Multi-scale sliding-window detection with a boosted cascade: the detector's façade.

:class:`CascadeDetector` holds the detection parameters and handles colour, regions of interest
and grouping; the windows it scans come from :class:`~vjboost.cascade.scan.Pyramid` (OpenCV's
scale list, level sizes, steps and stripe cut-off), the cascade runs in
:class:`~vjboost.cascade.runner.CascadeRunner` (the numba kernels of
:mod:`vjboost.cascade.kernels` for every family with compiled features, pools of families in
one pass; the generic family path otherwise).

``mode="opencv"`` (the default) reproduces ``cv2.CascadeClassifier.detectMultiScale`` of OpenCV 4.x
window for window: the scale list with ``minSize``/``maxSize`` (and the nearest-scale fallback), the
float32 and round-half-to-even arithmetic, the σ > 10 gate of variance-normalised (Haar) windows,
the step of 2 pixels below scale 2, the skip of the next position after a stage-0 rejection, the
row cut-off caused by OpenCV's stripe split, ``groupRectangles`` and the clipping of output boxes.
``mode="clean"`` drops the stripe cut-off (every row is scanned) and lets
``step``/``skip_after_stage0`` be chosen freely. ``border="replicate"`` or ``"reflect"`` (either
mode) pads the image so that windows may extend past its edge by ``border_margin`` of their
size: objects cut by the border are found, with boxes that leave the image (not clipped).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from .._jit import compile_ahead
from .._threads import n_threads, resolve_threads
from ..boxes import DETECTION_SCORES, _iou_threshold, drop_inside, group_detections, inner_boxes
from . import ahead
from .model import CascadeModel, object_box
from .runner import CascadeRunner
from .scan import (
    DEFAULT_BORDER_MARGIN,
    OPENCV_MIN_STD,
    Pyramid,
    check_border,
    check_min_std,
    check_mode,
    check_scale_factor,
    opencv_scales,
)
from .verifier import DetectionVerifier

__all__ = [
    "CascadeDetector",
    "Detections",
    "check_suppress_inside",
    "declared_border",
    "declared_suppression",
    "default_operating",
    "detect_images",
    "model_verifier",
    "opencv_scales",
    "operating_score",
    "to_gray",
]


# ------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------


@dataclass
class Detections:
    """Detections in one image.

    Attributes
    ----------
    boxes : ndarray of int32, shape (N, 4)
        ``(x, y, w, h)`` in pixels of the input image.
    scores : ndarray of float64, shape (N,)
        Confidence (the detector's ``score``): by default the last stage's score (sum of leaf
        values) of the window, the maximum over the group for grouped output (like
        ``detectMultiScale3``'s ``levelWeights``).
    neighbors : ndarray of int32, shape (N,)
        Raw windows merged into each box (1 for raw output; ``detectMultiScale2``'s numbers).
    stages : ndarray of int32, shape (N,)
        Stages passed (always the cascade's stage count for accepted windows).

    Examples
    --------
    >>> import cv2
    >>> from skimage import data
    >>> from vjboost.cascade import load_model
    >>> small = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)[::2, ::2]   # 256x256
    >>> faces = CascadeDetector(load_model("vjboost:frontalface_haar")).detect(small)
    >>> len(faces), faces.raw_count, faces.boxes.tolist(), faces.scores.round(2).tolist()
    (1, 27, [[89, 40, 46, 46]], [4.2])
    >>> faces.neighbors.tolist(), faces.stages.tolist()
    ([26], [19])
    """

    boxes: np.ndarray
    scores: np.ndarray
    neighbors: np.ndarray
    stages: np.ndarray
    raw_count: int = 0
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.boxes.shape[0])

    def records(self, source: str = "", frame: int = 0) -> list[dict[str, Any]]:
        """One dict per box: ``source, frame, x, y, w, h, score, neighbors``.

        Parameters
        ----------
        source : str, default ""
            The image's name (e.g. its path), copied into every record.
        frame : int, default 0
            The frame index within a video (0 for a still image).

        Returns
        -------
        list of dict
            Pixel coordinates of the input image as int, ``score`` as float.

        Examples
        --------
        >>> d = Detections(np.array([[1, 2, 30, 30]], np.int32), np.array([0.5]),
        ...                np.array([4], np.int32), np.array([20], np.int32))
        >>> r, = d.records("a.png")
        >>> r["source"], r["x"], r["y"], r["w"], r["h"], r["score"], r["neighbors"]
        ('a.png', 1, 2, 30, 30, 0.5, 4)
        """
        return [
            {"source": source, "frame": int(frame), "x": int(b[0]), "y": int(b[1]),
             "w": int(b[2]), "h": int(b[3]), "score": float(s), "neighbors": int(n)}
            for b, s, n in zip(self.boxes, self.scores, self.neighbors, strict=True)
        ]


# ------------------------------------------------------------------------------------------------
# Detector
# ------------------------------------------------------------------------------------------------


def _one_image(image: Any, name: str) -> np.ndarray:
    """``image`` as an array, a list or tuple of images refused as such."""
    if isinstance(image, list | tuple) and (not image or isinstance(image[0], np.ndarray)):
        # np.asarray would stack the images (a 4-D shape) or make an empty float array, and
        # the error would then be about a shape or dtype the caller never passed
        raise ValueError(f"{name}: expected one image (an ndarray), got a "
                         f"{type(image).__name__} of {len(image)}; detect each image in turn")
    return image if isinstance(image, np.ndarray) else np.asarray(image)


def _check_channel_order(channel_order: Any) -> None:
    if channel_order not in ("bgr", "rgb"):
        raise ValueError(f"channel_order: expected 'bgr' or 'rgb', got {channel_order!r}")


def to_gray(image: np.ndarray, *, channel_order: str = "bgr", name: str = "image") -> np.ndarray:
    """8-bit gray image from a gray, BGR(A) or RGB(A) array (OpenCV's BGR2GRAY weights).

    Parameters
    ----------
    image : ndarray, shape (H, W) or (H, W, 3|4), dtype uint8
    channel_order : {"bgr", "rgb"}
        Order of colour channels. ``cv2.imread`` gives BGR; scikit-image and PIL give RGB.
    """
    image = _one_image(image, name)
    if image.dtype != np.uint8:
        raise TypeError(f"{name}: expected an 8-bit image (dtype uint8), got dtype {image.dtype}; "
                        "convert e.g. with skimage.util.img_as_ubyte")
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim == 2:
        return np.ascontiguousarray(image)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise ValueError(f"{name}: expected (H, W), (H, W, 3) or (H, W, 4), got {image.shape}"
                         + ("; a stack of images? detect each in turn" if image.ndim == 4
                            else ""))
    _check_channel_order(channel_order)
    code = {("bgr", 3): cv2.COLOR_BGR2GRAY, ("bgr", 4): cv2.COLOR_BGRA2GRAY,
            ("rgb", 3): cv2.COLOR_RGB2GRAY, ("rgb", 4): cv2.COLOR_RGBA2GRAY}
    return cv2.cvtColor(np.ascontiguousarray(image), code[(channel_order, image.shape[2])])


def _size_pair(v: Any, name: str) -> tuple[int, int]:
    """``min_size``/``max_size`` as ``(width, height)`` in whole pixels (None: ``(0, 0)``)."""
    if v is None:
        return (0, 0)
    if isinstance(v, int | np.integer) and not isinstance(v, bool):
        v = (int(v), int(v))

    def whole(c: Any) -> bool:
        # a string would unpack into its characters ("30" as (3, 0)), a bool pass as 0 or 1
        # and 30.5 be cut to 30: each is refused rather than read as another size
        return (isinstance(c, int | np.integer | float | np.floating)
                and not isinstance(c, bool | np.bool_) and math.isfinite(c) and c == int(c))

    try:
        a, b = v
        ok = not isinstance(v, str | bytes) and whole(a) and whole(b)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name}: expected (width, height) or an int, in whole pixels, "
                         f"got {v!r}")
    a, b = int(a), int(b)
    if a < 0 or b < 0:
        raise ValueError(f"{name}: sizes must be >= 0, got {v!r}")
    return a, b


#: a model's operating score when its ``params`` declare none: OpenCV's grouping at
#: ``min_neighbors`` 1, detections ranked by their best window
DEFAULT_OPERATING = {"min_neighbors": 1, "rank": "best"}

#: what a detector's ``min_neighbors``, ``score`` and ``min_score`` left at ``"auto"`` mean for
#: a model that declares no default threshold: ``cv2.CascadeClassifier.detectMultiScale``'s
#: defaults
OPENCV_DEFAULTS = {"min_neighbors": 3, "score": "best", "min_score": None}


def model_verifier(model: CascadeModel) -> DetectionVerifier:
    """The :class:`~vjboost.cascade.verifier.DetectionVerifier` a model declares.

    Parameters
    ----------
    model : CascadeModel
        With ``params["verifier"]`` (:meth:`DetectionVerifier.to_dict`).

    Returns
    -------
    DetectionVerifier

    Examples
    --------
    >>> from vjboost.cascade.model_io import load_model
    >>> model_verifier(load_model("vjboost:frontalface")).size
    40
    """
    d = dict(getattr(model, "params", {}) or {}).get("verifier")
    if d is None:
        raise ValueError("score 'verified': the model declares no verifier (params['verifier'])")
    return DetectionVerifier.from_dict(d, name="the model's params['verifier']")


def _min_std(value: Any, model: CascadeModel) -> float:
    """The detector's ``min_std`` in grey levels, checked (``"model"``: the model's declared
    ``params["min_std"]``, else OpenCV's 10)."""
    if isinstance(value, str) and value == "model":
        declared = dict(getattr(model, "params", {}) or {}).get("min_std", OPENCV_MIN_STD)
        return check_min_std(declared, "the model's params['min_std']")
    return check_min_std(value)


def _coarse_to_fine(value: Any, model: CascadeModel, runner: CascadeRunner) -> int:
    """The detector's ``coarse_to_fine`` as a stage count (0: off), checked."""
    if value != "model":
        return runner.check_coarse_to_fine(value)
    if runner.compiled is None:
        return 0  # an optimisation the generic path does not run: every window instead
    declared = dict(getattr(model, "params", {}) or {}).get("coarse_to_fine") or 0
    return runner.check_coarse_to_fine(declared, "the model's params['coarse_to_fine']")


def declared_border(model: CascadeModel) -> tuple[str | None, float]:
    """The scan's border a model declares (``params["border"]``: ``"replicate"`` or
    ``"reflect"``, and ``params["border_margin"]``, a share of the window, 0.25 when not
    given; chosen on validation), or ``(None, 0.25)``: OpenCV's windows, inside the image.

    Raises
    ------
    ValueError
        A declared border or margin that :func:`vjboost.cascade.scan.check_border` refuses.

    Examples
    --------
    >>> from vjboost.cascade.model_io import load_model
    >>> declared_border(load_model("vjboost:car_side"))
    ('reflect', 0.3)
    >>> declared_border(load_model("vjboost:frontalface"))
    (None, 0.25)
    """
    params = dict(getattr(model, "params", {}) or {})
    border, margin = params.get("border"), params.get("border_margin", DEFAULT_BORDER_MARGIN)
    try:
        check_border(border, margin)
    except ValueError as e:
        raise ValueError(f"the model's params: {e}") from None
    return border, float(margin)


def _border(border: Any, margin: Any, model: CascadeModel) -> tuple[str | None, float]:
    """The detector's ``border`` and ``border_margin``, checked (``"model"``: the model's
    declaration, :func:`declared_border`)."""
    declared, declared_margin = declared_border(model) if "model" in (border, margin) \
        else (None, DEFAULT_BORDER_MARGIN)
    border = declared if isinstance(border, str) and border == "model" else border
    margin = declared_margin if isinstance(margin, str) and margin == "model" else margin
    check_border(border, margin)
    return border, float(margin)


def check_suppress_inside(value: Any, name: str = "suppress_inside") -> float | None:
    """``suppress_inside`` as a share in (0, 1], or None (None or 0: off)."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)
                         and value == 0):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0.0 < float(value) <= 1.0:
        raise ValueError(f"{name}: expected a share in (0, 1], 0 or None, got {value!r}")
    return float(value)


def declared_suppression(model: CascadeModel) -> float | None:
    """The share of a detection's area inside a better one that drops it, as the model declares
    (``params["suppress_inside"]``, :func:`vjboost.boxes.suppress_inside`; chosen on
    validation), or None.

    Examples
    --------
    >>> from vjboost.cascade.model_io import load_model
    >>> declared_suppression(load_model("vjboost:frontalface"))
    0.3
    """
    declared = dict(getattr(model, "params", {}) or {}).get("suppress_inside")
    return check_suppress_inside(declared, "the model's params['suppress_inside']")


def operating_score(model: CascadeModel) -> dict[str, Any]:
    """The operating score a model declares: how its detections are best ranked.

    ``model.params["operating_score"]`` = ``{"min_neighbors": m, "rank": r}`` (``r`` one of
    :data:`DETECTION_SCORES`), chosen when the model was validated; the detection
    rate at a false-positive budget is read on the curve of that score (detections grouped at
    ``min_neighbors=m``, thresholded by ``min_score``). Models without one get
    :data:`DEFAULT_OPERATING`.

    Parameters
    ----------
    model : CascadeModel

    Returns
    -------
    dict
        ``{"min_neighbors": int, "rank": str}``.

    Examples
    --------
    >>> from vjboost.cascade.model_io import load_model
    >>> operating_score(load_model("vjboost:frontalface"))
    {'min_neighbors': 1, 'rank': 'verified'}
    """
    d = dict(DEFAULT_OPERATING)
    declared = dict(getattr(model, "params", {}) or {}).get("operating_score", {})
    if not isinstance(declared, dict):
        raise ValueError(f"operating_score: expected a mapping, got {type(declared).__name__}")
    d.update(declared)
    if d["rank"] not in DETECTION_SCORES:
        raise ValueError(f"operating_score: rank {d['rank']!r} not in {DETECTION_SCORES}")
    if isinstance(d["min_neighbors"], bool) or not isinstance(d["min_neighbors"], int) \
            or d["min_neighbors"] < 0:
        raise ValueError(f"operating_score: min_neighbors {d['min_neighbors']!r} is not an "
                         f"integer >= 0")
    return {"min_neighbors": int(d["min_neighbors"]), "rank": str(d["rank"])}


def default_operating(model: CascadeModel) -> dict[str, Any]:
    """The settings a :class:`CascadeDetector` of ``model`` uses for ``min_neighbors``,
    ``score`` and ``min_score`` left at ``"auto"``.

    A model whose ``params["operating_score"]`` declares a ``min_score`` (a threshold on its
    declared ranking, chosen on validation) is run at that operating point: its
    ``min_neighbors``, its ``rank`` as the score and the threshold. Any other model (OpenCV's
    cascades among them) gets :data:`OPENCV_DEFAULTS`, ``detectMultiScale``'s.

    Parameters
    ----------
    model : CascadeModel

    Returns
    -------
    dict
        ``{"min_neighbors": int, "score": str, "min_score": float or None}``.

    Raises
    ------
    ValueError
        A declared operating score that is not a mapping, or a ``min_score`` that is not a
        finite number.

    Examples
    --------
    >>> from vjboost.cascade.model_io import load_model
    >>> default_operating(load_model("vjboost:frontalface_haar"))
    {'min_neighbors': 3, 'score': 'best', 'min_score': None}
    """
    op = operating_score(model)  # checks the declaration
    declared = dict(getattr(model, "params", {}) or {}).get("operating_score", {})
    if "min_score" not in declared:
        return dict(OPENCV_DEFAULTS)
    t = declared["min_score"]
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
        raise ValueError(f"operating_score: min_score {t!r} is not a finite number")
    return {"min_neighbors": op["min_neighbors"], "score": op["rank"], "min_score": float(t)}


def _auto(value: Any) -> bool:
    """Whether a detector setting was left at ``"auto"`` (numbers never compare to it)."""
    return isinstance(value, str) and value == "auto"


class CascadeDetector:
    """Multi-scale detector for a :class:`~vjboost.cascade.model.CascadeModel`.

    Parameters
    ----------
    model : CascadeModel
    scale_factor : float, default=1.1
        Ratio between successive scales (> 1).
    min_neighbors : int or "auto", default="auto"
        Grouping threshold: a group needs more than ``min_neighbors`` raw windows. ``0`` returns
        the raw windows. ``"auto"``: the model's default operating point
        (:func:`default_operating`: 1 for ``vjboost:frontalface``), else OpenCV's 3.
    min_size, max_size : (width, height) or int, optional
        Object size limits in whole pixels (``None``/0: no limit), OpenCV's
        ``minSize``/``maxSize``: they bound the scanned window. A model that declares an object
        box (:func:`~vjboost.cascade.model.object_box`) reports that part of each window, so
        its boxes are smaller by that share (0.75 for ``vjboost:frontalface``).
    mode : {"opencv", "clean"}, default="opencv"
        ``"opencv"``: identical windows to ``cv2.CascadeClassifier.detectMultiScale``.
        ``"clean"``: every row scanned (no stripe cut-off); ``step`` and ``skip_after_stage0``
        apply.
    step : int, optional
        Window step in pixels of the scaled image (``"clean"`` mode). Default: OpenCV's rule,
        2 below scale 2, else 1.
    skip_after_stage0 : bool, default=True
        Skip the next position after a window rejected by the first stage (OpenCV's heuristic;
        always on in ``"opencv"`` mode).
    grouping : {"opencv", "nms", "none"}, default="opencv"
        ``"opencv"``: ``groupRectangles(min_neighbors, eps=0.2)``; ``"nms"``: greedy
        non-maximum suppression by score at ``nms_iou``, keeping only windows that more than
        ``min_neighbors`` raw windows (themselves included) overlap at IoU > ``nms_iou``;
        ``"none"``: raw windows.
    nms_iou : float, default=0.3
    border : {None, "replicate", "reflect", "model"}, default="model"
        Pad the image (edge pixels repeated, or mirrored) so that windows may extend past its
        edge, to find objects the border cuts; their boxes leave the image and are not clipped.
        None: OpenCV's geometry, windows inside the image. ``"model"``: what the model declares
        (:func:`declared_border`: ``"reflect"`` for ``vjboost:car_side``, whose cars the
        image's edge often cuts), else None.
    border_margin : float or "model", default="model"
        With ``border``: the share of a window's width and height (per side) that may lie
        outside the image. ``"model"``: what the model declares (0.3 for
        ``vjboost:car_side``), else 0.25.
    min_std : float or "model", default="model"
        The σ gate in grey levels (OpenCV: 10; 0: none): windows whose inner-area standard
        deviation is at most this are rejected before the first stage. Applies to cascades
        whose features use OpenCV's variance normalisation (Haar). ``"model"``: what the model
        declares (``params["min_std"]``; 8 for ``vjboost:frontalface``, whose low-contrast
        faces the gate of 10 turned away), else OpenCV's 10.
    n_stages : int, optional
        Use only the first ``n_stages`` stages (more, weaker detections).
    score : {"best", "sum", "margin", "neighbors", "verified", "model", "auto"}, default="auto"
        Each detection's score (:meth:`vjboost.boxes.WindowGroups.select`): the best window's
        last-stage score; the sum of the group's; the sum of their margins over the last
        stage's threshold; the window count. ``"verified"``: the margin rescored by the
        verifier the model declares (:mod:`vjboost.cascade.verifier`: ``log(margin) + weight
        * verdict``, the verdict a HOG logistic regression on the detection's crop).
        ``"model"``: the ranking the model declares (:func:`operating_score`; the default face
        model declares ``"verified"``, the Haar one ``"margin"``). ``"auto"``: the model's
        default operating point (:func:`default_operating`: ``"verified"`` for
        ``vjboost:frontalface``), else ``"best"``.
    min_score : float, None or "auto", default="auto"
        Drop detections whose score is below this (an operating point on the score's curve);
        None: keep them all. ``"auto"``: with ``score="auto"`` and ``min_neighbors`` left at
        ``"auto"`` (or set to the model's own), the threshold of the model's default operating
        point (:func:`default_operating`: ``vjboost:frontalface`` and ``vjboost:car_side``
        declare one, chosen on validation), else None. A ``score`` or another
        ``min_neighbors`` given explicitly (to read a curve) gets no threshold unless one is
        given too.
    threads : int, optional
        Threads of the whole detection (``None``: all of numba's): the pyramid's batches
        side by side, and the verifier. Results do not depend on it.
    channel_order : {"bgr", "rgb"}, default="bgr"
        Colour order of 3-channel input (OpenCV convention is BGR).
    suppress_inside : float, None or "model", default="model"
        Drop a grouped detection when at least this share of its area lies inside another
        detection that scores higher (:func:`vjboost.boxes.suppress_inside`; objects such as
        faces do not nest, so such a box is a part of one passing for a whole one); None or 0:
        off. Applies after the final scores (and the verifier), before ``min_score``; not to
        raw windows (``min_neighbors=0`` or ``grouping="none"``). ``"model"``: what the model
        declares (:func:`declared_suppression`; 0.3 for ``vjboost:frontalface``, nothing for
        OpenCV's cascades, whose detections stay OpenCV's).
    coarse_to_fine : int, None or "model", default="model"
        ``K``: scan each level's coarse grid (every second grid position, in rows and
        columns) with the first ``K`` stages, then the whole cascade on the grid positions
        within one grid step of the coarse windows that passed them
        (:meth:`~vjboost.cascade.runner.CascadeRunner.scan`); OpenCV's skip rule is not
        applied. About a third of the windows are evaluated; windows far from any promising
        coarse window are not. ``None`` or 0: every grid position (OpenCV's scan). ``"model"``:
        what the model declares (``params["coarse_to_fine"]``; OpenCV cascades declare
        nothing, so ``mode="opencv"`` stays exact for them).

    Notes
    -----
    A detector keeps, per thread, its largest buffer of integral planes so far (up to
    :data:`~vjboost.cascade.scan.KEEP_BYTES`, 384 MiB) for the next images: writing a
    fresh one costs a page fault per 4 KiB, about 15 % of a detection's time. The memory is
    released with the detector.

    Examples
    --------
    >>> from skimage import data
    >>> from vjboost.cascade.model_io import load_model
    >>> detector = CascadeDetector(load_model("vjboost:frontalface"))  # its operating point
    >>> faces = detector.detect(data.astronaut()[..., 1])   # gray (H, W) uint8
    >>> faces.boxes.dtype, faces.boxes.shape[1], detector.min_neighbors, detector.score
    (dtype('int32'), 4, 1, 'verified')
    """

    def __init__(
        self,
        model: CascadeModel,
        *,
        scale_factor: float = 1.1,
        min_neighbors: int | str = "auto",
        min_size: Any = None,
        max_size: Any = None,
        mode: str = "opencv",
        step: int | None = None,
        skip_after_stage0: bool = True,
        grouping: str = "opencv",
        nms_iou: float = 0.3,
        border: str | None = "model",
        border_margin: float | str = "model",
        min_std: float | str = "model",
        n_stages: int | None = None,
        score: str = "auto",
        min_score: float | str | None = "auto",
        threads: int | None = None,
        channel_order: str = "bgr",
        coarse_to_fine: int | str | None = "model",
        suppress_inside: float | str | None = "model",
    ) -> None:
        if not isinstance(model, CascadeModel):
            raise TypeError(f"model: expected a CascadeModel, got {type(model).__name__}")
        if _auto(min_neighbors) or _auto(score) or _auto(min_score):
            auto = default_operating(model)
            if _auto(min_score):
                # a threshold belongs to its operating point: only the default score, on the
                # groups of the default grouping, gets the default one (a window count of
                # 2 drops every raw window; a margin summed over more windows is another scale)
                same = _auto(min_neighbors) or min_neighbors == auto["min_neighbors"]
                min_score = auto["min_score"] if _auto(score) and same else None
            min_neighbors = auto["min_neighbors"] if _auto(min_neighbors) else min_neighbors
            score = auto["score"] if _auto(score) else score
        scale_factor = check_scale_factor(scale_factor)
        if isinstance(min_neighbors, bool) or not isinstance(min_neighbors, int | np.integer) \
                or min_neighbors < 0:
            raise ValueError(f"min_neighbors: expected an integer >= 0, got {min_neighbors!r}")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int | np.integer)
                                 or step < 1):
            raise ValueError(f"step: expected a positive integer or None, got {step!r}")
        if grouping not in ("opencv", "nms", "none"):
            raise ValueError(f"grouping: expected 'opencv', 'nms' or 'none', got {grouping!r}")
        _iou_threshold(nms_iou, "nms_iou")
        # checked here, not at the first colour image: a gray image never reads it
        _check_channel_order(channel_order)
        min_std = _min_std(min_std, model)
        if score not in (*DETECTION_SCORES, "model"):
            raise ValueError(f"score: expected one of {(*DETECTION_SCORES, 'model', 'auto')}, "
                             f"got {score!r}")
        if min_score is not None and not (isinstance(min_score, int | float)
                                          and math.isfinite(min_score)):
            raise ValueError(f"min_score: expected a finite number or None, got {min_score!r}")
        # the declared ranking is read (and checked) only when asked for
        self.score = operating_score(model)["rank"] if score == "model" else score
        self.verifier = model_verifier(model) if self.score == "verified" else None
        self.object_box = object_box(model)
        if n_stages is not None:
            model = model.truncated(int(n_stages))
        self.model = model
        self.min_score = None if min_score is None else float(min_score)
        self.scale_factor = float(scale_factor)
        self.min_neighbors = int(min_neighbors)
        self.min_size = _size_pair(min_size, "min_size")
        self.max_size = _size_pair(max_size, "max_size")
        self.mode = mode
        self.step = None if step is None else int(step)
        self.skip_after_stage0 = bool(skip_after_stage0) or mode == "opencv"
        self.grouping = grouping
        self.nms_iou = float(nms_iou)
        self.min_std = float(min_std)
        self.threads = threads
        self.channel_order = channel_order
        check_mode(mode, self.step)
        self.border, self.border_margin = _border(border, border_margin, model)
        self._runner = CascadeRunner(model, threads=threads)
        self.coarse_to_fine = _coarse_to_fine(coarse_to_fine, model, self._runner)
        self.suppress_inside = (declared_suppression(model) if isinstance(suppress_inside, str)
                                and suppress_inside == "model"
                                else check_suppress_inside(suppress_inside))

    # -- public API -----------------------------------------------------------------------------

    def detect(self, image: np.ndarray, roi: Sequence[int] | None = None) -> Detections:
        """Detect objects in one image.

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3|4)
            Gray or colour (``channel_order``) image. Cascades over colour families get the
            colour image as RGB.
        roi : (x, y, w, h), optional
            Search only this region (results are in full-image coordinates; equivalent to
            detecting on the crop).

        Returns
        -------
        Detections
        """
        image = _one_image(image, "image")
        if self.model.color:
            if image.ndim != 3 or image.shape[2] < 3:
                raise ValueError(f"image: this cascade's family needs a colour image, got "
                                 f"shape {image.shape}")
            img = image[:, :, :3] if self.channel_order == "rgb" else image[:, :, 2::-1]
            img = np.ascontiguousarray(img)
            if img.dtype != np.uint8:
                raise TypeError(f"image: expected dtype uint8, got {img.dtype}")
        else:
            img = to_gray(image, channel_order=self.channel_order)
        ox = oy = 0
        if roi is not None:
            try:
                rx, ry, rw, rh = (int(v) for v in roi)
            except (TypeError, ValueError):
                raise ValueError(f"roi: expected (x, y, w, h), got {roi!r}") from None
            x0, y0 = max(rx, 0), max(ry, 0)
            x1, y1 = min(rx + rw, img.shape[1]), min(ry + rh, img.shape[0])
            if x1 <= x0 or y1 <= y0:
                raise ValueError(f"roi: {tuple(roi)} does not overlap the "
                                 f"{img.shape[1]}x{img.shape[0]} image")
            img = np.ascontiguousarray(img[y0:y1, x0:x1])
            ox, oy = x0, y0
        # a first run compiles the later kernels in a second process meanwhile (vjboost._jit)
        with compile_ahead(ahead.__name__, lambda: ahead.detection_jobs(self),
                           cpus=resolve_threads(self.threads), resolve=ahead.job):
            boxes, scores = self.raw_windows(img)
            det = self._group(boxes, scores, img)
        if ox or oy:
            det.boxes[:, 0] += ox
            det.boxes[:, 1] += oy
        return det

    __call__ = detect

    def pyramid(self, image_size: Sequence[int]) -> Pyramid:
        """The levels and windows this detector scans in an image of ``(width, height)``."""
        return Pyramid(self.model.window_shape, image_size, scale_factor=self.scale_factor,
                       min_size=self.min_size, max_size=self.max_size, mode=self.mode,
                       step=self.step, border=self.border, border_margin=self.border_margin)

    def raw_windows(self, image: np.ndarray, *, return_positions: bool = False,
                    pyramid: Pyramid | None = None
                    ) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All accepted windows (before grouping) of a prepared image.

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W)
            (or ``(H, W, 3)`` RGB for colour families).
        return_positions : bool, default=False
            Also return where each window lies in its level.
        pyramid : Pyramid, optional
            The windows to scan (default :meth:`pyramid` of the image; hard-negative mining
            scans grid offsets of it).

        Returns
        -------
        boxes : ndarray of int32, shape (N, 4)
            ``(x, y, w, h)`` in image pixels (not clipped), ordered by scale, row, column: the
            windows, or the object box inside each window that the model declares
            (:func:`~vjboost.cascade.model.object_box`).
        scores : ndarray of float64, shape (N,)
            Last stage score of each window.
        positions : ndarray of int64, shape (N, 3)
            Only with ``return_positions``: ``(scale_index, x, y)`` — the index into
            :func:`opencv_scales` (same image size and parameters) and the window's top-left
            corner in its level (:meth:`pyramid`; :meth:`Pyramid.windows` cuts the windows).
        """
        pyr = self.pyramid((image.shape[1], image.shape[0])) if pyramid is None else pyramid
        pos, scores = self._runner.scan(image, pyr, min_std=self.min_std,
                                        skip0=self.skip_after_stage0,
                                        coarse_to_fine=self.coarse_to_fine)
        boxes = pyr.boxes(pos)
        if self.object_box is not None:
            # every consumer (grouping, the verifier, evaluation, adaptation) sees object boxes
            boxes = inner_boxes(boxes, self.object_box)
        return (boxes, scores, pos) if return_positions else (boxes, scores)

    # -- grouping -------------------------------------------------------------------------------

    def rescore(self, image: np.ndarray, boxes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Final scores of grouped detections: with ``score="verified"``, their margins
        rescored by the model's verifier on ``image``; otherwise ``scores`` unchanged.

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3) RGB
            The image the detections were grouped in.
        boxes : ndarray, shape (N, 4)
            Grouped detections ``(x, y, w, h)``.
        scores : ndarray of float, shape (N,)
            Their group scores (``"margin"`` for a verified detector).

        Returns
        -------
        ndarray of float64, shape (N,)
        """
        if self.verifier is None or len(boxes) == 0:
            return scores
        gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        # the verifier's kernels run on the detector's threads, as the scan does
        with n_threads(self.threads):
            return self.verifier.rescore(gray, boxes, scores)

    def _group(self, boxes, scores, img: np.ndarray) -> Detections:
        b, sc, cnt = group_detections(boxes, scores, method=self.grouping,
                                      min_neighbors=self.min_neighbors,
                                      # boxes past the edge stay whole with a border
                                      image_size=None if self.border else (img.shape[1],
                                                                           img.shape[0]),
                                      nms_iou=self.nms_iou,
                                      score="margin" if self.verifier is not None
                                      else self.score,
                                      offset=self.model.stages[-1].threshold)
        sc = self.rescore(img, b, sc)
        if self.min_neighbors > 0 and self.grouping != "none":  # never raw windows
            b, sc, cnt = drop_inside(b, sc, self.suppress_inside, cnt)
        if self.min_score is not None:
            ok = sc >= self.min_score
            b, sc, cnt = b[ok], sc[ok], cnt[ok]
        return Detections(b, sc, cnt, np.full(len(b), self.model.n_stages, dtype=np.int32),
                          raw_count=len(boxes))


def detect_images(
    model: CascadeModel,
    paths: Sequence[str | os.PathLike[str]],
    **params: Any,
) -> list[tuple[str, Detections | None, str]]:
    """Batch detection over image files: a pure function of (model, paths, params).

    Picklable inputs and outputs, so that batches can be spread over processes or machines.

    Parameters
    ----------
    model : CascadeModel
        The cascade.
    paths : sequence of str or path-like
        Image files, read as gray.
    **params
        Keyword arguments of :class:`CascadeDetector` (``scale_factor``, ``min_neighbors``, ...).

    Returns
    -------
    list of (path, detections, error)
        ``detections`` is None and ``error`` the reason when an image could not be read.

    Examples
    --------
    >>> import tempfile, cv2
    >>> from skimage import data
    >>> from vjboost.cascade import load_model
    >>> d = tempfile.mkdtemp()
    >>> _ = cv2.imwrite(d + "/a.png", cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)[::2, ::2])
    >>> _ = open(d + "/b.png", "wb").write(b"not an image")
    >>> out = detect_images(load_model("vjboost:frontalface_haar"), [d + "/a.png", d + "/b.png"],
    ...                     min_neighbors=3)
    >>> [(p.rsplit("/", 1)[-1], None if det is None else det.boxes.tolist()) for p, det, _ in out]
    [('a.png', [[89, 40, 46, 46]]), ('b.png', None)]
    >>> out[1][2]
    '.../b.png: not a readable image (corrupt or unsupported format)'
    """
    from ..io.images import ImageReadError, read_image

    det = CascadeDetector(model, **params)
    out: list[tuple[str, Detections | None, str]] = []
    for p in paths:
        try:
            img = read_image(p, gray=True)
        except ImageReadError as exc:
            out.append((str(p), None, str(exc)))
            continue
        out.append((str(p), det.detect(img), ""))
    return out
