"""Image reading with clear errors and a pixel cap checked before decoding."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from .._errors import InputError, LimitError
from .._io import check_regular
from .._limits import Limits, get_limits, limit_error

__all__ = ["ImageReadError", "ImageTooLargeError", "ReadReport", "check_image_size",
           "image_size", "read_image", "read_images"]


class ImageReadError(InputError):
    """An image file is missing, unreadable or not an image."""


class ImageTooLargeError(ImageReadError, LimitError):
    """An image has more pixels than ``Limits.max_image_pixels`` (found from its header)."""


def _probe(path) -> tuple[tuple[int, int] | None, int | None]:
    """``(size, pixels)`` from the header: size None when unknown; pixels also known for the
    images Pillow refuses to open as decompression bombs (from its message)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                w, h = int(im.size[0]), int(im.size[1])
                return (w, h), w * h
    except Image.DecompressionBombError as exc:
        if _bad_bmp_width(path):  # a negative width read as billions of columns: damaged
            return None, None
        m = re.search(r"\((\d+) pixels\)", str(exc))
        return None, int(m.group(1)) if m else 2 * int(Image.MAX_IMAGE_PIXELS or 0) + 1
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError):
        return None, None


def _bad_bmp_width(path) -> bool:
    """A BMP whose width is not positive. Pillow reads the signed field as unsigned, so a width
    of -5 passed for 4294967291 columns (a size that was then reported); such a header is
    damaged. (A negative height is legal: the rows are stored top-down.)"""
    try:
        with open(path, "rb") as fh:
            head = fh.read(26)
    except OSError:
        return False
    if len(head) < 26 or not head.startswith(b"BM") or int.from_bytes(head[14:18], "little") < 40:
        return False  # not a BMP, or an OS/2 header (unsigned 16-bit sides)
    return int.from_bytes(head[18:22], "little", signed=True) <= 0


def image_size(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(width, height)`` read from the file header without decoding the pixels.

    Returns None when Pillow cannot tell (an unknown header; a decompression bomb Pillow
    refuses to open).

    Examples
    --------
    >>> import tempfile, cv2, numpy as np
    >>> p = tempfile.mkdtemp() + "/a.png"
    >>> _ = cv2.imwrite(p, np.zeros((30, 40), np.uint8))
    >>> image_size(p)
    (40, 30)
    """
    return _probe(path)[0]


def check_image_size(path: str | os.PathLike[str], *, limits: Limits | None = None
                     ) -> tuple[int, int] | None:
    """Refuse an image over ``max_image_pixels`` from its header; return its size if known.

    Parameters
    ----------
    path : path-like
        The image file (only its header is read).
    limits : Limits, optional
        Caps in force (default: :meth:`Limits.from_env`).

    Returns
    -------
    (int, int) or None
        ``(width, height)``, or None when the header cannot tell.

    Raises
    ------
    ImageTooLargeError
        With the file, its size and the limit.

    Examples
    --------
    >>> import tempfile, cv2, numpy as np
    >>> from vjboost._limits import Limits
    >>> p = tempfile.mkdtemp() + "/a.png"
    >>> _ = cv2.imwrite(p, np.zeros((30, 40), np.uint8))
    >>> check_image_size(p)
    (40, 30)
    >>> check_image_size(p, limits=Limits(max_image_pixels=1000))
    Traceback (most recent call last):
    ...
    vjboost.io.images.ImageTooLargeError: .../a.png: 40x30 = 1200 pixels exceeds the limit ...
    """
    return _checked_probe(path, limits)[0]


def _checked_probe(path, limits: Limits | None) -> tuple[tuple[int, int] | None, int | None]:
    lim = get_limits(limits)
    size, pixels = _probe(path)
    if pixels is not None and pixels > lim.max_image_pixels:
        value = f"{size[0]}x{size[1]} = {pixels}" if size is not None else str(pixels)
        raise _too_large(limit_error(str(path), value, lim.max_image_pixels, "max_image_pixels",
                                     unit=" pixels"))
    return size, pixels


# signatures of formats Pillow reads headers of: when it cannot, the file is damaged, and
# OpenCV's decoders are not given it (a PNG with a bad IHDR made libpng run for 10 s and 4 GB)
_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"GIF8", "GIF"),
               (b"BM", "BMP"), (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"))


def _known_format(head: bytes) -> str | None:
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP"
    return next((name for sig, name in _SIGNATURES if head.startswith(sig)), None)


def _too_large(exc: LimitError) -> ImageTooLargeError:
    return ImageTooLargeError(str(exc))


def read_image(path: str | os.PathLike[str], *, gray: bool = True,
               limits: Limits | None = None) -> np.ndarray:
    """Read an image file.

    Parameters
    ----------
    path : path-like
        Any format OpenCV decodes (PNG, JPEG, BMP, PGM, TIFF, WebP...).
    gray : bool, default=True
        Return an (H, W) uint8 grayscale image; otherwise (H, W, 3) uint8 **RGB**.
    limits : Limits, optional
        Caps in force (default: :meth:`Limits.from_env`); the pixel count is checked from the
        header before the pixels are decoded.

    Raises
    ------
    ImageReadError
        If the file is missing, empty or cannot be decoded; the message names the file.
    ImageTooLargeError
        If the image has more pixels than allowed (a kind of ImageReadError).

    Examples
    --------
    >>> import tempfile, cv2, numpy as np
    >>> p = tempfile.mkdtemp() + "/a.png"
    >>> _ = cv2.imwrite(p, np.full((3, 4), 7, np.uint8))
    >>> read_image(p).shape
    (3, 4)
    """
    path = Path(path)
    pixels = 0
    if path.is_file():
        pixels = _checked_probe(path, limits)[1]
    else:  # a FIFO would block the read
        check_regular(path, what="image file", error=ImageReadError)
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
    fmt = _known_format(data[:12].tobytes()) if pixels is None else None
    if fmt is not None:
        raise ImageReadError(f"{path}: damaged {fmt} file (its header cannot be read)")
    flag = cv2.IMREAD_GRAYSCALE if gray else cv2.IMREAD_COLOR
    try:
        img = cv2.imdecode(data, flag)
    except cv2.error as exc:  # OpenCV's own size cap, out of memory, codec failures
        msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else "decoder error"
        raise ImageReadError(f"{path}: cannot be decoded ({msg})") from None
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
    paths: Iterable[str | os.PathLike[str]], *, gray: bool = True, limits: Limits | None = None
) -> tuple[list[np.ndarray], list[str], ReadReport]:
    """Read several images, skipping (and counting) the unreadable and the oversized ones.

    Parameters
    ----------
    paths : iterable of path-like
        Image files, read in order.
    gray : bool, default True
        (H, W) uint8 grayscale images; otherwise (H, W, 3) uint8 RGB.
    limits : Limits, optional
        Caps in force (default: :meth:`Limits.from_env`).

    Returns
    -------
    images : list of ndarray
    names : list of str
        The paths that were read, in input order.
    report : ReadReport

    Examples
    --------
    >>> import tempfile, cv2, numpy as np
    >>> d = tempfile.mkdtemp()
    >>> _ = cv2.imwrite(d + "/a.png", np.full((3, 4), 7, np.uint8))
    >>> _ = open(d + "/b.png", "wb").write(b"not an image")
    >>> images, names, report = read_images([d + "/a.png", d + "/b.png"])
    >>> [im.shape for im in images], [n.rsplit("/", 1)[-1] for n in names]
    ([(3, 4)], ['a.png'])
    >>> report.n_read, len(report.failed), report.summary()
    (1, 1, '1 image(s) read, 1 skipped: .../b.png: not a readable image (corrupt or ...)')
    """
    limits = get_limits(limits)
    images, names, report = [], [], ReadReport()
    for p in paths:
        try:
            images.append(read_image(p, gray=gray, limits=limits))
        except ImageReadError as exc:
            report.failed.append((str(p), str(exc)))
            continue
        names.append(str(p))
        report.n_read += 1
    return images, names, report
