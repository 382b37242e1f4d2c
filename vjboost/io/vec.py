"""OpenCV ``.vec`` files of positive samples (``opencv_createsamples`` output).

Layout (little-endian): int32 count, int32 vecSize (= w·h), int16 min, int16 max (both ignored),
then per sample one zero byte and w·h int16 pixel values, row-major. The header count is what was
*requested* and may overstate what the file holds, so the count is derived from the file size.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._errors import InputError
from .._io import atomic_open, check_regular

__all__ = ["VecFormatError", "VecLayout", "decode_vec_pixels", "read_vec", "vec_layout",
           "write_vec"]

_HEADER = np.dtype([("count", "<i4"), ("vec_size", "<i4"), ("min", "<i2"), ("max", "<i2")])


class VecFormatError(InputError):
    """A ``.vec`` file is malformed or does not match the requested window size."""


@dataclass(frozen=True)
class VecLayout:
    """Where the samples of a ``.vec`` file are (from its header and size, nothing decoded).

    Attributes
    ----------
    path : Path
    n_samples : int
        Complete records in the file.
    window : (height, width)
    header_count : int
        The count the header announces (may overstate ``n_samples``).
    offset : int
        Byte offset of the first record.
    record_dtype : numpy dtype
        One record: a gap byte and ``h*w`` little-endian int16 pixels.
    """

    path: Path
    n_samples: int
    window: tuple[int, int]
    header_count: int
    offset: int = _HEADER.itemsize

    @property
    def record_dtype(self) -> np.dtype:
        h, w = self.window
        return np.dtype([("gap", "u1"), ("px", "<i2", (h * w,))])


def vec_layout(path: str | os.PathLike[str], window: tuple[int, int] | None = None) -> VecLayout:
    """Check a ``.vec`` file's header and size against ``window``; locate its samples.

    Parameters
    ----------
    path : path-like
    window : (height, width), optional
        Sample size. The file stores only ``w·h``; without ``window`` a square size is assumed
        and an error asks for the size when ``w·h`` is not a perfect square.

    Returns
    -------
    VecLayout

    Raises
    ------
    VecFormatError
        Missing, unreadable, truncated or empty file, or a window that does not match.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> p = tempfile.mkdtemp() + "/a.vec"
    >>> write_vec(p, np.zeros((3, 6, 4), np.uint8))
    >>> lay = vec_layout(p, (6, 4))
    >>> lay.n_samples, lay.window, lay.header_count, lay.offset, lay.record_dtype.itemsize
    (3, (6, 4), 3, 12, 49)
    """
    path = Path(path)
    check_regular(path, what=".vec file", error=VecFormatError)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(_HEADER.itemsize)
    except FileNotFoundError:
        raise VecFormatError(f"{path}: no such .vec file") from None
    except IsADirectoryError:
        raise VecFormatError(f"{path}: is a folder, not a .vec file") from None
    except OSError as exc:
        raise VecFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(head) < _HEADER.itemsize:
        raise VecFormatError(f"{path}: too short for a .vec header ({len(head)} bytes)")
    header = np.frombuffer(head, dtype=_HEADER)[0]
    vec_size = int(header["vec_size"])
    if vec_size <= 0:
        raise VecFormatError(f"{path}: invalid sample size {vec_size} in the header")
    if window is None:
        side = int(round(vec_size**0.5))
        if side * side != vec_size:
            raise VecFormatError(
                f"{path}: samples have {vec_size} pixels, not a square; give the window "
                "size (height, width) explicitly"
            )
        window = (side, side)
    h, w = (int(v) for v in window)
    if h * w != vec_size:
        raise VecFormatError(
            f"{path}: samples have {vec_size} pixels but the window {w}x{h} has {w * h}; "
            "use the window size the file was created with"
        )
    rec = 1 + 2 * vec_size
    body = size - _HEADER.itemsize
    n = body // rec
    if body % rec:
        raise VecFormatError(
            f"{path}: truncated: {body % rec} trailing bytes after {n} complete samples"
        )
    if n == 0:
        raise VecFormatError(f"{path}: holds no samples")
    return VecLayout(path, int(n), (h, w), int(header["count"]))


def decode_vec_pixels(px: np.ndarray, layout: VecLayout) -> np.ndarray:
    """int16 pixel records (k, h*w) -> uint8 samples (k, h, w); refuses values outside 0..255.

    Parameters
    ----------
    px : ndarray of int16, shape (k, h * w)
        The pixel fields of ``k`` records.
    layout : VecLayout
        The file's layout (its ``window`` ``(h, w)``; its ``path`` names the file in errors).

    Returns
    -------
    ndarray of uint8, shape (k, h, w)
    """
    if px.size and (px.min() < 0 or px.max() > 255):
        raise VecFormatError(f"{layout.path}: pixel values outside 0..255")
    return px.reshape(-1, *layout.window).astype(np.uint8)


def read_vec(path: str | os.PathLike[str], window: tuple[int, int] | None = None) -> np.ndarray:
    """Read the samples of a ``.vec`` file.

    Parameters
    ----------
    path : path-like
        The ``.vec`` file.
    window : (height, width), optional
        Sample size. The file stores only ``w·h``; without ``window`` a square size is assumed
        and an error asks for the size when ``w·h`` is not a perfect square.

    Returns
    -------
    samples : ndarray of shape (n_samples, height, width), uint8

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> p = tempfile.mkdtemp() + "/a.vec"
    >>> write_vec(p, np.full((2, 3, 4), 9, np.uint8))
    >>> read_vec(p, (3, 4)).shape
    (2, 3, 4)
    """
    layout = vec_layout(path, window)
    if layout.header_count != layout.n_samples:
        warnings.warn(
            f"{layout.path}: header says {layout.header_count} samples, the file holds "
            f"{layout.n_samples}; using {layout.n_samples}", stacklevel=2
        )
    try:
        records = np.fromfile(layout.path, dtype=layout.record_dtype, count=layout.n_samples,
                              offset=layout.offset)
    except OSError as exc:
        raise VecFormatError(f"{layout.path}: cannot be read ({exc.strerror or exc})") from None
    if len(records) != layout.n_samples:
        raise VecFormatError(f"{layout.path}: changed while being read")
    return decode_vec_pixels(records["px"], layout)


def write_vec(path: str | os.PathLike[str], samples: np.ndarray) -> None:
    """Write samples (n, h, w) uint8 to a ``.vec`` file (atomically).

    The format of OpenCV's ``opencv_createsamples``: a 12-byte header (count, ``h * w``), then
    per sample one zero byte and ``h * w`` little-endian int16 pixels. The window's height and
    width are not stored (give them to :func:`read_vec` when it cannot infer them).

    Parameters
    ----------
    path : path-like
        The file written (replaced whole, never left half-written).
    samples : ndarray of uint8, shape (n, h, w)
        At least one sample.

    Examples
    --------
    >>> import tempfile
    >>> p = tempfile.mkdtemp() + "/s.vec"
    >>> write_vec(p, np.arange(2 * 24 * 24, dtype=np.uint16).reshape(2, 24, 24).astype(np.uint8))
    >>> read_vec(p, (24, 24)).shape
    (2, 24, 24)
    """
    samples = np.asarray(samples)
    if samples.ndim != 3 or samples.shape[0] == 0:
        raise ValueError(f"samples: expected a non-empty (n, h, w) array, got {samples.shape}")
    if samples.dtype != np.uint8:
        raise ValueError(f"samples: expected uint8, got {samples.dtype}")
    n, h, w = samples.shape
    header = np.zeros(1, dtype=_HEADER)
    header["count"], header["vec_size"] = n, h * w
    rec = np.zeros((n, 1 + 2 * h * w), dtype=np.uint8)
    rec[:, 1:] = samples.reshape(n, -1).astype("<i2").view(np.uint8).reshape(n, -1)
    with atomic_open(path, "wb") as fh:
        fh.write(header.tobytes())
        fh.write(rec.tobytes())
