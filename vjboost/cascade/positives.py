"""Positive training samples for a detector, from every input users have.

Sources: a folder of crops (each resized to the window), images with boxes (OpenCV ``info.dat``,
CSV or JSON annotations; each box is cut out and resized), an OpenCV ``.vec`` file, or an ``.npz``
with an ``images`` array. Resizing follows ``opencv_createsamples``: ``INTER_AREA`` when the crop
is at least the window size in both dimensions, ``INTER_LINEAR_EXACT`` otherwise.

:class:`Jitter` adds randomly distorted copies of every positive (small rotations, scale changes
and shifts, as ``opencv_createsamples`` distorts its samples): a detector scans at discrete scales
and positions, and objects are never framed exactly like the training crops, so training on
slightly misaligned copies makes the cascade accept what the scan will show it.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from .._io import read_npz
from .._limits import MAX_JITTER_COPIES
from .._memory import check_memory
from ..io import (
    IMAGE_SUFFIXES,
    ImageReadError,
    detect_format,
    image_files,
    read_annotations,
    read_image,
    read_vec,
)

__all__ = [
    "Jitter", "PositiveSet", "crop_fraction", "jittered_cut", "load_positives",
    "resize_to_window",
]

_ANNOTATION_SUFFIXES = (".dat", ".txt", ".csv", ".json", ".info", ".lst", ".xml")


#: how far (as a ratio) the positives' width:height may be from the window's before
#: :func:`load_positives` warns that every positive is stretched
ASPECT_TOLERANCE = 1.2

@dataclass
class PositiveSet:
    """Loaded positives and what could not be used.

    Attributes
    ----------
    samples : ndarray of shape (n, height, width), uint8
    skipped : list of str
        One message per image or box that was skipped (unreadable, box outside the image...).
    source : str
    aspect : float or None
        Median width / height of the crops or boxes as cut, before they were resized to the
        window (None when nothing was cut): far from the window's own, every positive was
        stretched.
    images : tuple of str
        The annotated images object boxes were cut from (absolute paths; empty for crops,
        ``.vec`` and ``.npz`` sources): such images hold the object, so they are no backgrounds.
    """

    samples: np.ndarray
    skipped: list[str] = field(default_factory=list)
    source: str = ""
    aspect: float | None = None
    images: tuple[str, ...] = ()

    def summary(self, max_names: int = 3) -> str:
        """One line: counts and the first few reasons for skipping."""
        line = f"{len(self.samples)} positive(s) from {self.source}"
        if self.skipped:
            first = "; ".join(self.skipped[:max_names])
            more = (
                f" (and {len(self.skipped) - max_names} more)"
                if len(self.skipped) > max_names
                else ""
            )
            line += f", {len(self.skipped)} skipped: {first}{more}"
        return line


@dataclass(frozen=True)
class Jitter:
    """Randomly distorted copies of every positive.

    Each copy is cut from its source sample (or, for annotated boxes, from the whole image, so
    that the surroundings are real) after a rotation by an angle drawn uniformly in
    ``[-max_angle, max_angle]`` degrees, a scale change drawn log-uniformly in
    ``[1 / (1 + max_scale), 1 + max_scale]`` and a shift drawn uniformly in
    ``[-max_shift, max_shift]`` of the box's width and height, all about the box's centre.
    Pixels outside the source are mirrored in (``BORDER_REFLECT_101``). With ``max_gamma > 0``
    the copy's grey levels also go through a gamma curve ``255 (v / 255) ** g``, ``g`` drawn
    log-uniformly in ``[1 / (1 + max_gamma), 1 + max_gamma]``: the cascade's variance
    normalisation already makes it blind to linear brightness and contrast changes, not to
    non-linear ones (dark, under-exposed faces).

    Attributes
    ----------
    copies : int
        Distorted copies per positive (the positive itself is kept too), at most
        :data:`vjboost._limits.MAX_JITTER_COPIES` (10,000).
    max_angle : float, default=10
        Degrees.
    max_scale : float, default=0.06
        Relative scale change.
    max_shift : float, default=0.04
        Fraction of the box side.
    max_gamma : float, default=0
        Relative gamma change (0: grey levels unchanged).
    seed : int, default=0
        Copies are a pure function of the positives and the seed.
    """

    copies: int
    max_angle: float = 10.0
    max_scale: float = 0.06
    max_shift: float = 0.04
    max_gamma: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.copies, int | np.integer) or isinstance(self.copies, bool) \
                or not 1 <= self.copies <= MAX_JITTER_COPIES:
            raise ValueError(f"copies: expected an integer in [1, {MAX_JITTER_COPIES}], got "
                             f"{self.copies!r}")
        for name, hi in (("max_angle", 90.0), ("max_scale", 1.0), ("max_shift", 0.5),
                         ("max_gamma", 3.0)):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not np.isfinite(v) or not 0 <= v <= hi:
                raise ValueError(f"{name}: expected a number in [0, {hi:g}], got {v!r}")

    def rng(self) -> np.random.Generator:
        """The generator every distortion of one run is drawn from, in sample order."""
        return np.random.default_rng([int(self.seed), 0x6A177E5])

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Distortions of ``n`` copies: (n, 5) float64 angle (degrees), scale, shift x, shift y,
        gamma.

        Parameters
        ----------
        n : int
            Copies.
        rng : numpy.random.Generator
            The run's generator (:meth:`rng`); gamma is drawn only when ``max_gamma > 0``.

        Returns
        -------
        ndarray of float64, shape (n, 5)
            Shifts in fractions of the box's width and height.
        """
        angle = rng.uniform(-self.max_angle, self.max_angle, n)
        scale = np.exp(rng.uniform(-1.0, 1.0, n) * np.log1p(self.max_scale))
        shift = rng.uniform(-self.max_shift, self.max_shift, (n, 2))
        # drawn only when asked for, so that geometric-only runs keep their random stream
        gamma = (np.exp(rng.uniform(-1.0, 1.0, n) * np.log1p(self.max_gamma))
                 if self.max_gamma > 0 else np.ones(n))
        return np.column_stack([angle, scale, shift, gamma])


def jittered_cut(img: np.ndarray, rect: tuple[float, float, float, float],
                 window: tuple[int, int], distortion: np.ndarray | None = None) -> np.ndarray:
    """Cut ``rect = (x, y, w, h)`` (pixels, may be fractional) out of ``img``, distorted.

    Parameters
    ----------
    img : ndarray of shape (H, W), uint8
    rect : (x, y, w, h)
        The box in ``img``'s pixels.
    window : (height, width)
        Output size.
    distortion : (angle_degrees, scale, shift_x, shift_y[, gamma]), optional
        As drawn by :meth:`Jitter.draw`; ``None`` is the identity.

    Returns
    -------
    ndarray of shape window, uint8
        The rotated/scaled/shifted box, cut at its own resolution (bilinear) and then resized to
        the window as every positive is (:func:`resize_to_window`).
    """
    x, y, w, h = (float(v) for v in rect)
    d = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
    if distortion is not None:
        d[: len(distortion)] = distortion
    angle, scale, sx, sy, gamma = d
    pw, ph = max(int(round(w)), 1), max(int(round(h)), 1)
    t = np.deg2rad(angle)
    a, b = scale * np.cos(t), scale * np.sin(t)
    # patch pixel (u, v) samples the image at centre + scale * R(angle) * ((u, v) - patch centre)
    cx, cy = x + (w - 1) / 2 + sx * w, y + (h - 1) / 2 + sy * h
    ux, uy = (pw - 1) / 2, (ph - 1) / 2
    m = np.array([[a, -b, cx - a * ux + b * uy], [b, a, cy - b * ux - a * uy]])
    patch = cv2.warpAffine(img, m, (pw, ph), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                           borderMode=cv2.BORDER_REFLECT_101)
    out = resize_to_window(patch, window)
    if gamma != 1.0:
        lut = np.round(255.0 * (np.arange(256) / 255.0) ** gamma).astype(np.uint8)
        out = lut[out]
    return out


def resize_to_window(img: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    """Resize a crop (h, w) uint8 to the window (height, width) as ``opencv_createsamples`` does.

    Area interpolation when shrinking both sides, else OpenCV's exact bilinear.

    Parameters
    ----------
    img : ndarray of uint8, shape (h, w) or (h, w, 3)
        The crop.
    window : (int, int)
        ``(height, width)`` in pixels.

    Returns
    -------
    ndarray of uint8, shape (height, width[, 3])
        ``img`` itself when it has the window's size.
    """
    h, w = window
    if img.shape[:2] == (h, w):
        return img
    interp = cv2.INTER_AREA if img.shape[0] >= h and img.shape[1] >= w else cv2.INTER_LINEAR_EXACT
    return cv2.resize(img, (w, h), interpolation=interp)


def crop_fraction(img: np.ndarray, crop: tuple[float, float, float, float] | None) -> np.ndarray:
    """Cut the sub-rectangle ``crop = (x, y, w, h)``, in fractions of the image's width/height.

    Positives often come framed more loosely than the box the detector should report (a face
    crop with hair and chin, where the wanted box runs from the brows to below the mouth); the
    crop states the wanted framing once for every sample, whatever its pixel size. Corners are
    rounded to the nearest pixel; ``None`` returns the image unchanged.

    Parameters
    ----------
    img : ndarray, shape (H, W[, C])
        The sample.
    crop : (float, float, float, float) or None
        ``(x, y, w, h)`` as fractions of the width and height.

    Returns
    -------
    ndarray
        A view of ``img``, at least 1 x 1 pixel.

    Examples
    --------
    >>> crop_fraction(np.zeros((10, 20), np.uint8), (0.25, 0.1, 0.5, 0.8)).shape
    (8, 10)
    """
    if crop is None:
        return img
    ih, iw = img.shape[:2]
    x, y, w, h = crop
    x0, y0 = int(round(x * iw)), int(round(y * ih))
    # at least one pixel, so that tiny samples still give a (coarse) crop
    x1, y1 = max(int(round((x + w) * iw)), x0 + 1), max(int(round((y + h) * ih)), y0 + 1)
    return img[y0:y1, x0:x1]


def _check_crop(crop: tuple[float, float, float, float] | None) -> None:
    if crop is None:
        return
    if len(crop) != 4 or not all(np.isfinite(v) for v in crop):
        raise ValueError(f"crop: expected four finite fractions (x, y, w, h), got {crop}")
    x, y, w, h = crop
    if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > 1 + 1e-9 or y + h > 1 + 1e-9:
        raise ValueError(
            f"crop: (x, y, w, h) = {tuple(crop)} must lie inside the sample: x, y >= 0, "
            "w, h > 0, x + w <= 1 and y + h <= 1 (fractions of the sample's width and height)"
        )


def _crop_rect(shape: tuple[int, ...], crop: tuple[float, float, float, float] | None,
               box: tuple[float, float, float, float] | None = None
               ) -> tuple[float, float, float, float]:
    """The wanted box in image pixels: ``crop`` (fractions) of ``box`` (default: the image)."""
    bx, by, bw, bh = box if box is not None else (0.0, 0.0, float(shape[1]), float(shape[0]))
    if crop is None:
        return bx, by, bw, bh
    x, y, w, h = crop
    return bx + x * bw, by + y * bh, w * bw, h * bh


#: bytes a cut window holds beside its pixels until the windows are stacked (its ndarray object
#: and list slot)
_WINDOW_OVERHEAD = 128


class _Cutter:
    """Turns sources into windows: the plain cut, then the jittered copies of each."""

    def __init__(self, window: tuple[int, int], crop: tuple[float, float, float, float] | None,
                 jitter: Jitter | None) -> None:
        self.window, self.crop, self.jitter = window, crop, jitter
        self.plain: list[np.ndarray] = []
        self.copies: list[np.ndarray] = []
        self.aspects: list[float] = []
        self.images: list[str] = []  # annotated images the boxes come from
        self._rng = None if jitter is None else jitter.rng()

    def add(self, img: np.ndarray, box: tuple[int, int, int, int] | None = None) -> None:
        """Cut the window of one source (and its jittered copies, if any).

        Parameters
        ----------
        img : ndarray of uint8, shape (H, W[, 3])
            The source image.
        box : (int, int, int, int), optional
            ``(x, y, w, h)`` of the object in pixels (default the whole image).
        """
        if box is None:
            sample = img
        else:
            x, y, w, h = box
            sample = img[y : y + h, x : x + w]
        cropped = crop_fraction(sample, self.crop)
        self.aspects.append(cropped.shape[1] / cropped.shape[0])
        self.plain.append(resize_to_window(cropped, self.window))
        if self.jitter is not None:
            # checked source by source, against what is left: the copies of the sources so far
            # are already held
            n = self.jitter.copies
            check_memory(n * (self.window[0] * self.window[1] + _WINDOW_OVERHEAD),
                         f"jitter: {n} copies of positive {len(self.plain)} "
                         f"({self.window[1]}x{self.window[0]})",
                         advice="Use fewer copies (--jitter) or fewer positives.")
            rect = _crop_rect(img.shape, self.crop, None if box is None else
                              tuple(float(v) for v in box))
            for d in self.jitter.draw(self.jitter.copies, self._rng):
                self.copies.append(jittered_cut(img, rect, self.window, d))

    def samples(self) -> np.ndarray:
        h, w = self.window
        allw = self.plain + self.copies
        check_memory(len(allw) * h * w, f"{len(allw)} positive windows of {w}x{h}",
                     advice="Use fewer copies (--jitter) or fewer positives.")
        return np.stack(allw) if allw else np.zeros((0, h, w), np.uint8)


def _from_folder(folder: Path, cut: _Cutter) -> list[str]:
    files = image_files(folder)
    if not files:
        raise ValueError(
            f"{folder}: no image files in this folder (looked for {', '.join(IMAGE_SUFFIXES)})"
        )
    skipped = []
    for p in files:
        try:
            img = read_image(p)
        except ImageReadError as exc:
            skipped.append(str(exc))
            continue
        cut.add(img)
    return skipped


def _from_annotations(path: Path, cut: _Cutter, fmt: str | None = None,
                      category: str | int | None = None) -> list[str]:
    # object boxes only: ignore regions (crowds, difficult objects) are never positives
    ann = read_annotations(path, format=fmt, category=category)
    skipped = []
    for image_path, boxes in ann.items():
        if len(boxes) == 0:
            continue
        try:
            img = read_image(image_path)
        except ImageReadError as exc:
            skipped.append(str(exc))
            continue
        cut.images.append(str(image_path))
        ih, iw = img.shape
        for x, y, w, h in boxes.tolist():
            # COCO, VOC, YOLO, LabelMe and CVAT boxes may start left of or above the image (an
            # object cut by the border); a slice from a negative corner would wrap around
            if x < 0 or y < 0 or x + w > iw or y + h > ih:
                skipped.append(f"{image_path}: box {[x, y, w, h]} outside the {iw}x{ih} image")
                continue
            cut.add(img, (x, y, w, h))
    return skipped


def load_positives(
    source: str | os.PathLike[str],
    window: tuple[int, int],
    *,
    mirror: bool = False,
    max_count: int | None = None,
    crop: tuple[float, float, float, float] | None = None,
    jitter: Jitter | None = None,
    annotation_format: str | None = None,
    category: str | int | None = None,
) -> PositiveSet:
    """Load positive samples of size ``window``.

    Parameters
    ----------
    source : path-like
        A folder of crops, annotations in any format :func:`vjboost.io.read_annotations`
        reads (``info.dat``, CSV, JSON, COCO, a Pascal VOC / YOLO / LabelMe folder, CVAT XML:
        every object box is cut out, ignore regions are not), a ``.vec`` file or an ``.npz``
        holding ``images`` (n, h, w) uint8, or (n, h, w, 3|4) uint8 RGB(A) crops, read as grey
        (OpenCV's weights, as the detector reads a colour image).
    window : (height, width)
        Sample size in pixels.
    mirror : bool, default=False
        Also add the horizontally mirrored copy of each sample (doubles the count).
    max_count : int, optional
        Keep at most this many (before mirroring), in source order.
    crop : (x, y, w, h) fractions, optional
        Cut this sub-rectangle of every crop, box or sample (fractions of its width and height)
        before resizing to ``window``: how to train on a tighter framing than the source's.
    jitter : Jitter, optional
        Also add ``jitter.copies`` distorted copies of every positive (after all the plain
        positives, the copies of a positive next to each other; mirroring applies to all).
    annotation_format : str, optional
        Format of an annotation source (default: detected; see
        :data:`vjboost.io.FORMATS`).
    category : str or int, optional
        Object class to take from annotations that hold several.

    Returns
    -------
    PositiveSet

    Raises
    ------
    ValueError
        When the source is missing, empty, of another window size (``.vec``) or yields no sample.

    Warns
    -----
    UserWarning
        When the positives' median width:height (as cut, before resizing) differs from the
        window's by more than :data:`ASPECT_TOLERANCE`: each would be stretched to the window.
    """
    path = Path(source)
    h, w = (int(v) for v in window)
    if h <= 0 or w <= 0:
        raise ValueError(f"window: height and width must be positive, got {window}")
    _check_crop(crop)
    if jitter is not None and not isinstance(jitter, Jitter):
        raise ValueError(f"jitter: expected a Jitter or None, got {type(jitter).__name__}")
    if not path.exists():
        raise ValueError(f"{path}: positives source does not exist")
    cut = _Cutter((h, w), crop, jitter)
    skipped: list[str] = []
    suffix = path.suffix.lower()
    if path.is_dir():
        fmt = annotation_format or detect_format(path)
        skipped = (_from_annotations(path, cut, fmt, category) if fmt is not None
                   else _from_folder(path, cut))
    elif suffix in (".vec", ".npz"):
        if suffix == ".vec":
            # without a crop or jitter the samples must have the window's size (read_vec checks
            # it); with one they are read at the file's own (square) size, then cut
            imgs = read_vec(path, (h, w) if crop is None and jitter is None else None)
        else:
            # not a zip, a pickle, a damaged member, over the memory budget: one line
            imgs = read_npz(path, ["images"], what="positives file")["images"]
            colour = imgs.ndim == 4 and imgs.shape[3] in (3, 4)
            if not (imgs.ndim == 3 or colour) or imgs.dtype != np.uint8:
                raise ValueError(
                    f"{path}: 'images' must be (n, h, w) uint8 grey or (n, h, w, 3|4) uint8 "
                    f"RGB(A), got {imgs.shape} {imgs.dtype}"
                )
            if colour:
                from .detector import to_gray

                # NumPy arrays of colour images are RGB (PIL, scikit-image); grey by OpenCV's
                # weights, as the detector reads a colour image
                imgs = imgs[:max_count]
                imgs = [to_gray(im, channel_order="rgb", name=f"{path}: images[{i}]")
                        for i, im in enumerate(imgs)]
        for im in imgs[:max_count]:
            cut.add(im)
    elif suffix in _ANNOTATION_SUFFIXES or annotation_format is not None:
        skipped = _from_annotations(path, cut, annotation_format, category)
    else:
        raise ValueError(
            f"{path}: unknown positives source; give a folder of crops, an annotation file "
            f"({', '.join(_ANNOTATION_SUFFIXES)}), a .vec or an .npz"
        )
    if max_count is not None and len(cut.plain) > max_count:
        n_copies = 0 if jitter is None else jitter.copies
        cut.plain = cut.plain[:max_count]
        cut.copies = cut.copies[: max_count * n_copies]
    samples = cut.samples()
    if len(samples) == 0:
        raise ValueError(
            f"{path}: no usable positive sample" + (f" ({skipped[0]})" if skipped else "")
        )
    if mirror:
        samples = np.concatenate([samples, samples[:, :, ::-1]])
    aspect = float(np.median(cut.aspects[: len(cut.plain)])) if cut.aspects else None
    if aspect is not None and max(aspect * h / w, w / (aspect * h)) > ASPECT_TOLERANCE:
        # resizing a 100x40 car to 24x24 trains a detector of squashed cars that finds none at
        # the scan's true proportions: legal, but never what was meant
        what = "the positives, as cut by crop," if crop is not None else "the positives"
        warnings.warn(f"{path}: {what} are {aspect:.2f}:1 (width:height, median) but the "
                      f"{w}x{h} window is {w / h:.2f}:1: every positive is stretched to the "
                      "window; give a window of their proportions, e.g. "
                      f"{max(3, round(h * aspect))}x{h} (width x height)", stacklevel=2)
    return PositiveSet(np.ascontiguousarray(samples, dtype=np.uint8), skipped, str(path),
                       aspect, tuple(cut.images))
