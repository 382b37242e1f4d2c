"""Fitting a detection verifier for a cascade: its training sets found by the cascade itself.

A :class:`~vjboost.cascade.verifier.DetectionVerifier` learns faces from clutter; which clutter
matters is what the cascade lets through. :func:`fit_verifier` scans the training backgrounds
with the cascade (cut after its first stages, and optionally whole or a few stages short) and
keeps a seeded sample of the windows it accepts as negatives, adds the parts of training faces
that the cascade accepts as smaller faces (:func:`part_windows`), and jitters the training faces
as the detector's boxes frame faces (:func:`jittered_windows`). :func:`declare_verifier` fits
one with the default face model's options (:data:`DEFAULT_VERIFIER`) and declares it in the
model, so that its detector ranks by the verified score.

The detector uses the verifier (:mod:`vjboost.cascade.verifier`); this module uses the detector
to scan, so the two stay one-way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from .._limits import check_int
from .._parallel import make_executor
from .._threads import resolve_threads
from ..boxes import coverage_matrix, inner_boxes, iou_matrix
from ..io import read_image
from .detector import CascadeDetector
from .model import object_box
from .runner import CascadeRunner
from .verifier import DetectionVerifier, crop_boxes

__all__ = ["DEFAULT_VERIFIER", "declare_verifier", "fit_verifier", "jittered_windows",
           "part_windows"]


def jittered_windows(windows: Any, box: Sequence[float], *, size: int, context: float,
                     copies: int = 3, shift: float = 0.1, scale: float = 0.12,
                     rotate: float = 0.0, seed: int = 0) -> np.ndarray:
    """Training faces framed as the detector's boxes frame faces: each window's face box
    moved by up to ``shift`` of its side, scaled by up to ``exp(±scale)``, turned by up to
    ``±rotate`` degrees, half of them mirrored, cut as detections are (:func:`crop_boxes`).

    Parameters
    ----------
    windows : array-like of uint8, shape (N, H, W)
        Training windows with the face box at ``box``.
    box : (x, y, w, h)
        The face box in each window (pixels).
    size, context : int, float
        As :class:`DetectionVerifier`.
    copies : int, default=3
        Jittered copies per window.
    shift, scale : float
        Jitter ranges (shares of the box side; log-scale).
    rotate : float, default=0
        Largest turn in the image plane (degrees, uniform in ``±rotate``; 0: upright, and the
        same draws as without it).
    seed : int

    Returns
    -------
    ndarray of uint8, shape (N * copies, size, size)
    """
    w = np.asarray(windows)
    if w.ndim != 3 or w.dtype != np.uint8:
        raise ValueError(f"windows: expected (N, H, W) uint8, got {w.dtype} {w.shape}")
    if not (isinstance(rotate, int | float) and 0 <= rotate <= 90):
        raise ValueError(f"rotate: expected degrees in [0, 90], got {rotate!r}")
    rng = np.random.default_rng(seed)
    x, y, bw, bh = (float(v) for v in box)
    n = len(w)
    out = np.empty((n * copies, size, size), np.uint8)
    for r in range(copies):
        d = rng.uniform(-shift, shift, (n, 2)) * bw
        s = np.exp(rng.uniform(-scale, scale, n))
        flip = rng.random(n) < 0.5
        # drawn after the others, so that no rotation leaves the other draws as they were
        turn = rng.uniform(-rotate, rotate, n) if rotate else np.zeros(n)
        for i in range(n):
            sw = bw * s[i]
            b = [x + bw / 2 + d[i, 0] - sw / 2, y + bh / 2 + d[i, 1] - sw / 2, sw, sw]
            c = crop_boxes(w[i], [b], size=size, context=context, angles=turn[i:i + 1])[0]
            out[r * n + i] = c[:, ::-1] if flip[i] else c
    return out


def fit_verifier(model: Any, windows: Any, box: Sequence[float], backgrounds: Sequence[Any], *,
                 negative_stages: int = 12, per_image: int = 30, hard_per_image: int = 0,
                 hard_stages: int | None = None, part_per_face: int = 0,
                 part_upscale: Sequence[int] = (3, 4), copies: int = 3, rotate: float = 0.0,
                 scale_factor: float = 1.1, seed: int = 0, threads: int | None = None,
                 **params: Any) -> DetectionVerifier:
    """Fit a :class:`DetectionVerifier` for a cascade.

    Negatives: up to ``per_image`` windows (a seeded choice) that the cascade's first
    ``negative_stages`` stages accept in each background image, the clutter that reaches the
    later stages and sometimes passes them; and, with ``hard_per_image``, up to that many
    windows per image that the *whole* cascade accepts (or its first ``hard_stages``) — its
    false alarms, the very windows the verifier will have to rank below faces, of which a
    sample from the first stages holds few; and, with ``part_per_face``, the whole cascade's
    false alarms on the training faces themselves (:func:`part_windows`): parts of a face that
    pass for a smaller face, which no face-free background can show. Positives: the training
    faces, jittered (:func:`jittered_windows`).

    Parameters
    ----------
    model : CascadeModel
    windows : array-like of uint8, shape (N, H, W)
        Training faces with the face box at ``box`` (the cascade's positives).
    box : (x, y, w, h)
        The face box in each window, in the detector's box convention.
    backgrounds : sequence of (H, W) uint8 arrays or image paths
        Face-free training images (never the test images).
    negative_stages : int, default=12
        Stages of the cascade whose accepted windows are the negatives (at most all).
    per_image, copies : int
        Negatives kept per background image; jittered copies per face.
    rotate : float, default=0
        Largest turn of a jittered face in the image plane (degrees; :func:`jittered_windows`).
    hard_per_image : int, default=0
        Windows accepted by every stage (of the first ``hard_stages``) kept per background
        image, besides those (0: none).
    hard_stages : int, optional
        Stages whose accepted windows are those hard negatives (default: all). A cut of a few
        stages less yields more of them, the near misses around the cascade's false alarms too.
    part_per_face : int, default=0
        Windows inside each training face that the whole cascade accepts, kept per face and
        per factor of ``part_upscale`` (:func:`part_windows`; 0: none).
    part_upscale : sequence of int, default=(3, 4)
        Factors the training windows are enlarged by before they are scanned for those parts,
        so that parts a third to a half of the face's size are at least the cascade's window.
    scale_factor : float, default=1.1
    seed : int, default=0
    threads : int, optional
        Images scanned at once, one per thread (default: every numba thread); the result does
        not depend on it.
    **params
        :class:`DetectionVerifier` parameters.

    Returns
    -------
    DetectionVerifier
        Fitted; ``n_positives_``, ``n_negatives_``, ``n_hard_negatives_`` (those of
        ``hard_per_image``) and ``n_part_negatives_`` (those of ``part_per_face``; both counted
        in ``n_negatives_``) record the sample sizes.

    Examples
    --------
    >>> import numpy as np
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> model = random_cascade(seed=0, window=(20, 20), pass_rate=0.9)
    >>> rng = np.random.default_rng(0)
    >>> faces = rng.integers(100, 160, (10, 20, 20), dtype=np.uint8)
    >>> backgrounds = [rng.integers(0, 256, (60, 80), dtype=np.uint8) for _ in range(2)]
    >>> v = fit_verifier(model, faces, (2, 2, 16, 16), backgrounds, negative_stages=2,
    ...                  per_image=10, copies=2, size=16, pixels_per_cell=4)
    >>> v.n_positives_, v.n_negatives_, v.n_hard_negatives_, v.coef_.shape
    (20, 20, 0, (144,))
    """
    check_int(negative_stages, "negative_stages", lo=1, error=ValueError)
    check_int(per_image, "per_image", lo=1, error=ValueError)
    check_int(hard_per_image, "hard_per_image", lo=0, error=ValueError)
    if hard_stages is not None:
        check_int(hard_stages, "hard_stages", lo=1, hi=model.n_stages, error=ValueError)
    check_int(part_per_face, "part_per_face", lo=0, error=ValueError)
    ver = DetectionVerifier(**params)
    pos = jittered_windows(windows, box, size=ver.size, context=ver.context, copies=copies,
                           rotate=rotate, seed=seed)
    # the cuts whose accepted windows are drawn from: the first ``negative_stages`` stages, and
    # with hard negatives the first ``hard_stages`` (default all)
    cuts = [min(negative_stages, model.n_stages)]
    if hard_per_image:
        cuts.append(model.n_stages if hard_stages is None else hard_stages)
    draws = [(per_image, np.random.default_rng([seed, 1])),
             (hard_per_image, np.random.default_rng([seed, 2]))]
    # one scan by the shorter cut; the longer cut's windows are those of its windows that the
    # further stages accept, kept in the scan's order, found by whichever costs less: the
    # further stages run on each window cut out (integrated whole), or a second scan by the
    # longer cut on the same pyramid (each level integrated once, rejecting early). Both find
    # the same windows.
    short, long = min(cuts), max(cuts)
    det = _scanner(model.truncated(short), scale_factor)
    det_long = further = None
    if long != short:
        det_long = _scanner(model.truncated(long), scale_factor)
        further = CascadeRunner(model.truncated(long), first_stage=short, threads=1)

    def scan(bg: Any) -> tuple[np.ndarray, list[np.ndarray]]:
        img = bg if isinstance(bg, np.ndarray) else read_image(bg)
        pyr = det.pyramid((img.shape[1], img.shape[0]))
        boxes, _, at = det.raw_windows(img, return_positions=True, pyramid=pyr)
        found = {short: boxes}
        if further is None:
            pass
        elif len(at) * _WINDOW_COST < sum(lv.n_windows for lv in pyr.levels):
            found[long] = boxes[further.accepts(pyr.windows(img, at), min_std=det.min_std)]
        else:
            _, _, at_long = det_long.raw_windows(img, return_positions=True, pyramid=pyr)
            found[long] = boxes[_rows_in(at, at_long)]
        return img, [found[n] for n in cuts]

    neg, n_hard = [], 0
    with _image_executor(threads) as ex:
        # the seeded choices are drawn here, image by image in order, as the images come back
        for img, found in ex.imap(scan, backgrounds):
            for k, (boxes, (keep, rng)) in enumerate(zip(found, draws[:len(cuts)], strict=True)):
                if len(boxes) > keep:
                    boxes = boxes[np.sort(rng.choice(len(boxes), keep, replace=False))]
                if len(boxes):
                    neg.append(ver.crops(img, boxes))
                    n_hard += len(boxes) if k else 0
    if not neg:
        raise ValueError(f"backgrounds: the cascade's first {cuts[0]} stages accept no "
                         "window in any of them; nothing to learn the clutter from")
    n_part = 0
    if part_per_face:
        parts = part_windows(model, windows, box, per_face=part_per_face, upscale=part_upscale,
                             size=ver.size, context=ver.context, scale_factor=scale_factor,
                             seed=seed, threads=threads)
        neg.append(parts)
        n_part = len(parts)
    neg_w = np.concatenate(neg)
    ver.fit(pos, neg_w, seed=seed)
    ver.n_positives_, ver.n_negatives_ = len(pos), len(neg_w)
    ver.n_hard_negatives_, ver.n_part_negatives_ = n_hard, n_part
    return ver


#: the verifier of the default face model (``vjboost:frontalface``), chosen on its validation
#: views: Felzenszwalb's HOG of a 40-px crop in 5-px cells (round 36), two linear components
#: read on the crop and its mirror (round 43), the verdict weighing half the margin's log, and
#: among its negatives up to 300 of the cascade's own false alarms per background image
#: (of the cascade cut two stages short: :func:`declare_verifier`)
DEFAULT_VERIFIER: dict[str, Any] = {"size": 40, "pixels_per_cell": 5, "weight": 0.5,
                                    "descriptor": "fhog", "components": 2, "mirror": True,
                                    "hard_per_image": 300}


def declare_verifier(model: Any, windows: Any, backgrounds: Sequence[Any], *,
                     box: Sequence[float] | None = None, seed: int = 0,
                     threads: int | None = None, **options: Any) -> DetectionVerifier:
    """Fit a verifier for ``model`` (:func:`fit_verifier`) and declare it in the model.

    Sets ``model.params["verifier"]`` and ranks the model's detections by the verified score
    (``params["operating_score"]``: every group, ``rank="verified"``), the score ``vjdetect
    --score model`` and ``vjeval`` read its curve on. A default threshold the model declares
    (``min_score``) is kept; without one, a detector left at ``"auto"`` still runs OpenCV's
    settings (:func:`~vjboost.cascade.detector.default_operating`), so a verifier never changes
    what a model returns with nothing set, only how its detections are ranked.

    Parameters
    ----------
    model : CascadeModel
        Changed in place.
    windows : array-like of uint8, shape (N, H, W)
        The cascade's training positives.
    backgrounds : sequence of (H, W) uint8 arrays or image paths
        Object-free training images (never test images).
    box : (x, y, w, h), optional
        The object's box in each window, in pixels (default: the box the model declares,
        ``params["object_box"]``, else the whole window).
    seed : int, default=0
    threads : int, optional
        Images scanned at once, one per thread (default: every numba thread); the result does
        not depend on it.
    **options
        :func:`fit_verifier` and :class:`DetectionVerifier` options, over
        :data:`DEFAULT_VERIFIER`; ``hard_stages`` defaults to two stages fewer than the model
        has (at least one), and is at most the model's stages.

    Returns
    -------
    DetectionVerifier
        Fitted (its sample sizes in ``n_positives_`` and ``n_negatives_``).

    Examples
    --------
    >>> import numpy as np
    >>> from vjboost.cascade.detector import CascadeDetector, operating_score
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> model = random_cascade(seed=0, window=(20, 20), pass_rate=0.9)
    >>> rng = np.random.default_rng(0)
    >>> faces = rng.integers(100, 160, (10, 20, 20), dtype=np.uint8)
    >>> backgrounds = [rng.integers(0, 256, (60, 80), dtype=np.uint8) for _ in range(2)]
    >>> v = declare_verifier(model, faces, backgrounds, size=16, pixels_per_cell=4,
    ...                      per_image=10, hard_per_image=10, copies=2)
    >>> operating_score(model), v.n_positives_, v.descriptor
    ({'min_neighbors': 1, 'rank': 'verified'}, 20, 'fhog')
    >>> det = CascadeDetector(model, score="model", threads=1)
    >>> det.verifier is not None
    True
    """
    if box is None:
        h, w = model.window_shape
        frame = object_box(model)
        box = ((0, 0, w, h) if frame is None
               else tuple(int(v) for v in inner_boxes(np.array([[0, 0, w, h]]), frame)[0]))
    opts = {**DEFAULT_VERIFIER, **options}
    hard = opts.get("hard_stages", max(1, model.n_stages - 2))
    opts["hard_stages"] = None if hard is None else min(hard, model.n_stages)  # None: all
    ver = fit_verifier(model, windows, box, backgrounds, seed=seed, threads=threads, **opts)
    model.params["verifier"] = ver.to_dict()
    model.params["operating_score"] = {**model.params.get("operating_score", {}),
                                       "min_neighbors": 1, "rank": "verified"}
    return ver


def _scanner(model: Any, scale_factor: float) -> Any:
    """A detector returning every window the cascade accepts, on the full grid (the windows a
    verifier's negatives are drawn from), on the thread that calls it (:func:`_image_executor`
    spreads the images). Its score is set, not the model's: raw windows are not ranked, and a
    model may declare a verified operating score before its verifier is fitted."""
    return CascadeDetector(model, scale_factor=scale_factor, min_neighbors=0, grouping="none",
                           score="best", min_score=None, threads=1, coarse_to_fine=None)


#: grid windows a scan visits for the cost of one window cut out and evaluated alone (every
#: plane of the window integrated before its first stage): 100 to 330 on the default face
#: model's training backgrounds. :func:`fit_verifier` evaluates a cut's accepted windows alone
#: when they are fewer than the grid's windows over this (the recipe's 12-stage cut: a few dozen
#: a background, 0.3 s against 4 s for 64 backgrounds), else scans again (a 2-stage cut: tens
#: of thousands, 8 s against 150 s)
_WINDOW_COST = 300


def _rows_in(rows: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Which rows of ``rows`` (N, K) int64 are rows of ``among`` (M, K), shape (N,) bool.

    >>> _rows_in(np.array([[0, 1], [2, 3], [0, 2]]), np.array([[0, 2], [5, 5]])).tolist()
    [False, False, True]
    """
    rows, among = np.asarray(rows, np.int64), np.asarray(among, np.int64)
    if len(among) == 0 or len(rows) == 0:
        return np.zeros(len(rows), dtype=bool)
    # one integer per row: mixed-radix over the columns' joint range (scan positions are small)
    lo = np.minimum(rows.min(axis=0), among.min(axis=0))
    span = np.maximum(rows.max(axis=0), among.max(axis=0)) - lo + 1
    radix = np.concatenate([np.cumprod(span[::-1])[::-1][1:], [1]])
    return np.isin((rows - lo) @ radix, (among - lo) @ radix)


def _image_executor(threads: int | None) -> Any:
    """The executor of a verifier's scans: an image per thread (the scans of a background or
    of a training face are small, and split within one image their threads mostly wait; the
    detector keeps its buffers per thread), the results in image order whatever the count."""
    return make_executor(threads=resolve_threads(threads))


def part_windows(model: Any, windows: Any, box: Sequence[float], *, per_face: int,
                 upscale: Sequence[int] = (3, 4), size: int = 40, context: float = 1 / 6,
                 scale_factor: float = 1.1, seed: int = 0,
                 threads: int | None = None) -> np.ndarray:
    """Parts of training faces that the cascade accepts as faces, cut as detections are.

    Each window is enlarged by every factor of ``upscale`` (cubic) and scanned by the whole
    cascade; its accepted windows that lie at least half inside the face box and overlap it at
    IoU < 0.3 — an eye and the nose, the lower half of the face, found as a smaller face — are
    false alarms no face-free background shows. Up to ``per_face`` of them (a seeded choice) are
    kept per window and factor.

    Parameters
    ----------
    model : CascadeModel
    windows : array-like of uint8, shape (N, H, W)
        Training faces with the face box at ``box``.
    box : (x, y, w, h)
        The face box in each window, in the detector's box convention.
    per_face : int
        Parts kept per window and factor (>= 1).
    upscale : sequence of int
        Enlargement factors (>= 1).
    size, context : int, float
        As :class:`DetectionVerifier`.
    scale_factor : float, default=1.1
    seed : int, default=0
    threads : int, optional
        Windows scanned at once, one per thread (default: every numba thread); the result does
        not depend on it.

    Returns
    -------
    ndarray of uint8, shape (M, size, size)

    Examples
    --------
    >>> from vjboost.cascade.model_io import load_model
    >>> from skimage import data
    >>> face = cv2.resize(data.astronaut()[60:240, 150:330, 1], (36, 36))
    >>> parts = part_windows(load_model("vjboost:frontalface"), face[None],
    ...                      (6, 6, 24, 24), per_face=2)
    >>> parts.shape[1:], parts.dtype
    ((40, 40), dtype('uint8'))
    """
    w = np.asarray(windows)
    if w.ndim != 3 or w.dtype != np.uint8:
        raise ValueError(f"windows: expected (N, H, W) uint8, got {w.dtype} {w.shape}")
    check_int(per_face, "per_face", lo=1, error=ValueError)
    factors = [check_int(f, "upscale", lo=1, error=ValueError) for f in upscale]
    if not factors:
        raise ValueError("upscale: expected at least one enlargement factor")
    det = _scanner(model, scale_factor)
    rng = np.random.default_rng([seed, 3])
    face = np.asarray(box, np.float64).reshape(1, 4)

    def scan(unit: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        f, i = unit
        big = w[i] if f == 1 else cv2.resize(w[i], (w.shape[2] * f, w.shape[1] * f),
                                             interpolation=cv2.INTER_CUBIC)
        return big, det.raw_windows(big)[0]

    units = [(f, i) for f in factors for i in range(len(w))]
    out = []
    with _image_executor(threads) as ex:
        # the seeded choices are drawn here, window by window in order
        for (f, _), (big, boxes) in zip(units, ex.imap(scan, units), strict=True):
            if len(boxes) == 0:
                continue
            part = ((coverage_matrix(boxes, face * f)[:, 0] >= 0.5)
                    & (iou_matrix(boxes, face * f)[:, 0] < 0.3))
            sel = np.flatnonzero(part)
            if len(sel):
                sel = np.sort(rng.permutation(sel)[:per_face])
                out.append(crop_boxes(big, boxes[sel], size=size, context=context))
    return np.concatenate(out) if out else np.zeros((0, size, size), np.uint8)
