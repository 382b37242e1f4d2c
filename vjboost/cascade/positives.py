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

__all__ = ["PositiveSet", "IMAGE_SUFFIXES", "load_positives", "resize_to_window"]

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


def _from_folder(folder: Path, window: tuple[int, int]) -> tuple[list[np.ndarray], list[str]]:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(
            f"{folder}: no image files in this folder (looked for {', '.join(IMAGE_SUFFIXES)})"
        )
    out, skipped = [], []
    for p in files:
        try:
            out.append(resize_to_window(read_image(p), window))
        except ImageReadError as exc:
            skipped.append(str(exc))
    return out, skipped


def _from_annotations(path: Path, window: tuple[int, int]) -> tuple[list[np.ndarray], list[str]]:
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
            out.append(resize_to_window(img[y : y + h, x : x + w], window))
    return out, skipped


def load_positives(
    source: str | os.PathLike[str],
    window: tuple[int, int],
    *,
    mirror: bool = False,
    max_count: int | None = None,
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
    if not path.exists():
        raise ValueError(f"{path}: positives source does not exist")
    skipped: list[str] = []
    if path.is_dir():
        crops, skipped = _from_folder(path, (h, w))
        samples = np.stack(crops) if crops else np.zeros((0, h, w), np.uint8)
    elif path.suffix.lower() == ".vec":
        samples = read_vec(path, (h, w))
    elif path.suffix.lower() == ".npz":
        with np.load(path, allow_pickle=False) as data:
            if "images" not in data.files:
                raise ValueError(f"{path}: the .npz has no 'images' array (has {data.files})")
            imgs = data["images"]
        if imgs.ndim != 3 or imgs.dtype != np.uint8:
            raise ValueError(
                f"{path}: 'images' must be (n, h, w) uint8, got {imgs.shape} {imgs.dtype}"
            )
        samples = np.stack([resize_to_window(im, (h, w)) for im in imgs]) if len(imgs) else imgs
    elif path.suffix.lower() in _ANNOTATION_SUFFIXES:
        crops, skipped = _from_annotations(path, (h, w))
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
