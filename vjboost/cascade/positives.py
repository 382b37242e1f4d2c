"""Positive training samples for a detector, from every input users have.

Sources: a folder of crops (each resized to the window), images with boxes (OpenCV ``info.dat``,
CSV or JSON annotations; each box is cut out and resized), an OpenCV ``.vec`` file, or an ``.npz``
with an ``images`` array. Resizing follows ``opencv_createsamples``: ``INTER_AREA`` when the crop
is at least the window size in both dimensions, ``INTER_LINEAR_EXACT`` otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from ..io import ImageReadError, read_annotations, read_image, read_vec

__all__ = [
    "PositiveSet", "IMAGE_SUFFIXES", "crop_fraction", "load_positives", "resize_to_window",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm", ".tif", ".tiff", ".webp")
_ANNOTATION_SUFFIXES = (".dat", ".txt", ".csv", ".json", ".info", ".lst")


@dataclass
class PositiveSet:
    """Loaded positives and what could not be used.

    Attributes
    ----------
    samples : ndarray of shape (n, height, width), uint8
    skipped : list of str
        One message per image or box that was skipped (unreadable, box outside the image...).
    source : str
    """

    samples: np.ndarray
    skipped: list[str] = field(default_factory=list)
    source: str = ""

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


def resize_to_window(img: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    """Resize a crop (h, w) uint8 to the window (height, width) as ``opencv_createsamples`` does."""
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


def _prepare(img: np.ndarray, window: tuple[int, int],
             crop: tuple[float, float, float, float] | None) -> np.ndarray:
    return resize_to_window(crop_fraction(img, crop), window)


def _from_folder(folder: Path, window: tuple[int, int],
                 crop: tuple[float, float, float, float] | None
                 ) -> tuple[list[np.ndarray], list[str]]:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(
            f"{folder}: no image files in this folder (looked for {', '.join(IMAGE_SUFFIXES)})"
        )
    out, skipped = [], []
    for p in files:
        try:
            out.append(_prepare(read_image(p), window, crop))
        except ImageReadError as exc:
            skipped.append(str(exc))
    return out, skipped


def _from_annotations(path: Path, window: tuple[int, int],
                      crop: tuple[float, float, float, float] | None
                      ) -> tuple[list[np.ndarray], list[str]]:
    ann = read_annotations(path)
    out, skipped = [], []
    for image_path, boxes in ann.items():
        if len(boxes) == 0:
            continue
        try:
            img = read_image(image_path)
        except ImageReadError as exc:
            skipped.append(str(exc))
            continue
        ih, iw = img.shape
        for x, y, w, h in boxes.tolist():
            if x + w > iw or y + h > ih:
                skipped.append(f"{image_path}: box {[x, y, w, h]} outside the {iw}x{ih} image")
                continue
            out.append(_prepare(img[y : y + h, x : x + w], window, crop))
    return out, skipped


def load_positives(
    source: str | os.PathLike[str],
    window: tuple[int, int],
    *,
    mirror: bool = False,
    max_count: int | None = None,
    crop: tuple[float, float, float, float] | None = None,
) -> PositiveSet:
    """Load positive samples of size ``window``.

    Parameters
    ----------
    source : path-like
        A folder of crops, an annotation file (``info.dat``/``.txt``/``.dat``, ``.csv``,
        ``.json``), a ``.vec`` file or an ``.npz`` holding ``images`` (n, h, w) uint8.
    window : (height, width)
        Sample size in pixels.
    mirror : bool, default=False
        Also add the horizontally mirrored copy of each sample (doubles the count).
    max_count : int, optional
        Keep at most this many (before mirroring), in source order.
    crop : (x, y, w, h) fractions, optional
        Cut this sub-rectangle of every crop, box or sample (fractions of its width and height)
        before resizing to ``window``: how to train on a tighter framing than the source's.

    Returns
    -------
    PositiveSet

    Raises
    ------
    ValueError
        When the source is missing, empty, of another window size (``.vec``) or yields no sample.
    """
    path = Path(source)
    h, w = (int(v) for v in window)
    if h <= 0 or w <= 0:
        raise ValueError(f"window: height and width must be positive, got {window}")
    _check_crop(crop)
    if not path.exists():
        raise ValueError(f"{path}: positives source does not exist")
    skipped: list[str] = []
    if path.is_dir():
        crops, skipped = _from_folder(path, (h, w), crop)
        samples = np.stack(crops) if crops else np.zeros((0, h, w), np.uint8)
    elif path.suffix.lower() == ".vec":
        if crop is None:
            samples = read_vec(path, (h, w))
        else:  # the file's own (square) sample size, then cut and resized
            samples = np.stack([_prepare(im, (h, w), crop) for im in read_vec(path)])
    elif path.suffix.lower() == ".npz":
        with np.load(path, allow_pickle=False) as data:
            if "images" not in data.files:
                raise ValueError(f"{path}: the .npz has no 'images' array (has {data.files})")
            imgs = data["images"]
        if imgs.ndim != 3 or imgs.dtype != np.uint8:
            raise ValueError(
                f"{path}: 'images' must be (n, h, w) uint8, got {imgs.shape} {imgs.dtype}"
            )
        samples = (np.stack([_prepare(im, (h, w), crop) for im in imgs]) if len(imgs)
                   else np.zeros((0, h, w), np.uint8))
    elif path.suffix.lower() in _ANNOTATION_SUFFIXES:
        crops, skipped = _from_annotations(path, (h, w), crop)
        samples = np.stack(crops) if crops else np.zeros((0, h, w), np.uint8)
    else:
        raise ValueError(
            f"{path}: unknown positives source; give a folder of crops, an annotation file "
            f"({', '.join(_ANNOTATION_SUFFIXES)}), a .vec or an .npz"
        )
    if len(samples) == 0:
        raise ValueError(
            f"{path}: no usable positive sample" + (f" ({skipped[0]})" if skipped else "")
        )
    if max_count is not None:
        samples = samples[:max_count]
    if mirror:
        samples = np.concatenate([samples, samples[:, :, ::-1]])
    return PositiveSet(np.ascontiguousarray(samples, dtype=np.uint8), skipped, str(path))
