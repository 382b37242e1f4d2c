"""Image reading with clear errors."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

__all__ = ["ImageReadError", "ReadReport", "read_image", "read_images"]


class ImageReadError(ValueError):
    """An image file is missing, unreadable or not an image."""


def read_image(path: str | os.PathLike[str], *, gray: bool = True) -> np.ndarray:
    """Read an image file.

    Parameters
    ----------
    path : path-like
        Any format OpenCV decodes (PNG, JPEG, BMP, PGM, TIFF, WebP...).
    gray : bool, default=True
        Return an (H, W) uint8 grayscale image; otherwise (H, W, 3) uint8 **RGB**.

    Raises
    ------
    ImageReadError
        If the file is missing, empty or cannot be decoded; the message names the file.
    """
    path = Path(path)
    try:
        data = np.fromfile(path, dtype=np.uint8)
    except FileNotFoundError:
        raise ImageReadError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ImageReadError(f"{path}: is a folder, not an image file") from None
    except OSError as exc:
        raise ImageReadError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if data.size == 0:
        raise ImageReadError(f"{path}: empty file")
    flag = cv2.IMREAD_GRAYSCALE if gray else cv2.IMREAD_COLOR
    img = cv2.imdecode(data, flag)
    if img is None:
        raise ImageReadError(f"{path}: not a readable image (corrupt or unsupported format)")
    if not gray:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    return img


@dataclass
class ReadReport:
    """What :func:`read_images` could not read."""

    n_read: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)

    def summary(self, max_names: int = 3) -> str:
        """One line: counts, and the first few unreadable files with the reason."""
        if not self.failed:
            return f"{self.n_read} image(s) read"
        first = "; ".join(msg for _, msg in self.failed[:max_names])
        extra = len(self.failed) - max_names
        more = f" (and {extra} more)" if extra > 0 else ""
        return f"{self.n_read} image(s) read, {len(self.failed)} skipped: {first}{more}"


def read_images(
    paths: Iterable[str | os.PathLike[str]], *, gray: bool = True
) -> tuple[list[np.ndarray], list[str], ReadReport]:
    """Read several images, skipping (and counting) the unreadable ones.

    Returns
    -------
    images : list of ndarray
    names : list of str
        The paths that were read, in input order.
    report : ReadReport
    """
    images, names, report = [], [], ReadReport()
    for p in paths:
        try:
            images.append(read_image(p, gray=gray))
        except ImageReadError as exc:
            report.failed.append((str(p), str(exc)))
            continue
        names.append(str(p))
        report.n_read += 1
    return images, names, report
