"""OpenCV ``.vec`` files of positive samples (``opencv_createsamples`` output).

Layout (little-endian): int32 count, int32 vecSize (= w·h), int16 min, int16 max (both ignored),
then per sample one zero byte and w·h int16 pixel values, row-major. The header count is what was
*requested* and may overstate what the file holds, so the count is derived from the file size.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

from .._io import atomic_open

__all__ = ["VecFormatError", "read_vec", "write_vec"]

_HEADER = np.dtype([("count", "<i4"), ("vec_size", "<i4"), ("min", "<i2"), ("max", "<i2")])


class VecFormatError(ValueError):
    """A ``.vec`` file is malformed or does not match the requested window size."""


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
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise VecFormatError(f"{path}: no such .vec file") from None
    except OSError as exc:
        raise VecFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) < _HEADER.itemsize:
        raise VecFormatError(f"{path}: too short for a .vec header ({len(raw)} bytes)")
    header = np.frombuffer(raw[: _HEADER.itemsize], dtype=_HEADER)[0]
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
    body = len(raw) - _HEADER.itemsize
    n = body // rec
    if body % rec:
        raise VecFormatError(
            f"{path}: truncated: {body % rec} trailing bytes after {n} complete samples"
        )
    if n == 0:
        raise VecFormatError(f"{path}: holds no samples")
    count = int(header["count"])
    if count != n:
        warnings.warn(
            f"{path}: header says {count} samples, the file holds {n}; using {n}", stacklevel=2
        )
    records = np.frombuffer(raw, dtype=np.uint8, offset=_HEADER.itemsize).reshape(n, rec)
    pixels = records[:, 1:].copy().view("<i2").reshape(n, h, w)
    if pixels.min() < 0 or pixels.max() > 255:
        raise VecFormatError(f"{path}: pixel values outside 0..255")
    return pixels.astype(np.uint8)


def write_vec(path: str | os.PathLike[str], samples: np.ndarray) -> None:
    """Write samples (n, h, w) uint8 to a ``.vec`` file (atomically)."""
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
