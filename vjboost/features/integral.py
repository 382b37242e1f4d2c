"""Integral images of 8-bit images, and the float64 weighted rectangle sums of OpenCV cascades
on window stacks.

Integral images (summed-area tables) use OpenCV's layout: one row and one column larger than the
input, with a zero first row and column.

* upright sum ``S[y, x] = sum(I[:y, :x])``, shape ``(H + 1, W + 1)``;
* squared sum ``Q[y, x] = sum(I[:y, :x] ** 2)``;
* tilted (45°) sum, as ``cv2.integral3`` defines it:
  ``T[y, x] = sum(I[y', x'] for y' < y if |x' - x + 1| <= y - y' - 1)`` — the triangle with apex at
  pixel ``(x - 1, y - 1)`` that widens upward. Pixels outside the image count as zero, so
  ``T[y, 0]`` is generally non-zero.

They are computed by the integral kernel of :mod:`vjboost.features.channels` (the one that fills
the int32 planes of every compiled feature), here into exact int32/int64 arrays.

Rectangle sums (``CV_SUM_OFS`` / ``CV_TILTED_OFS`` in OpenCV):

* upright ``R(x, y, w, h) = S[y, x] - S[y, x+w] - S[y+h, x] + S[y+h, x+w]``;
* tilted ``R45(x, y, w, h) = T[y, x] - T[y+h, x-h] - T[y+w, x+w] + T[y+w+h, x+w-h]``: the 45°
  rectangle hanging from corner ``(x, y)`` with side ``w`` along the down-right diagonal and
  side ``h`` along the down-left diagonal; it needs ``x - h >= 0``, ``x + w <= W`` and
  ``y + w + h <= H``.

:func:`weighted_rect_sums` evaluates rectangle tables on stacks of such integrals in float64
with a per-window float32 divisor (OpenCV's training arithmetic); it serves the cascade's window
evaluation. Feature families use compiled programs (:mod:`vjboost.features.program`) instead.

Examples
--------
>>> import numpy as np
>>> integral_image(np.ones((2, 3), np.uint8)).tolist()
[[0, 0, 0, 0], [0, 1, 2, 3], [0, 2, 4, 6]]
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import prange

from vjboost.features.base import check_sample_ids
from vjboost.features.channels import _by_code, _gray_scratch, _integrate_gray

__all__ = [
    "RECT_COLUMNS",
    "check_rects_fit",
    "integral_dtype",
    "integral_image",
    "integral_images",
    "rect_corner_offsets",
    "squared_integral_image",
    "squared_integral_images",
    "tilted_integral_image",
    "tilted_integral_images",
    "weighted_rect_sums",
]

#: column names of a rectangle table row
RECT_COLUMNS = ("channel", "x", "y", "w", "h", "tilted")

_JIT = {"cache": True, "nogil": True}

_UPRIGHT, _SQUARED, _TILTED = 0, 1, 2


# --------------------------------------------------------------------------------------------
# dtype policy
# --------------------------------------------------------------------------------------------


def integral_dtype(height: int, width: int, max_value: float = 255.0,
                   squared: bool = False) -> type[np.signedinteger]:
    """Smallest exact integer dtype (int32 or int64) for an integral of an ``H x W`` input.

    int32 is used while ``H * W * max_value (** 2 if squared)`` stays below 2**31, which covers
    the squared integral of 8-bit windows up to about 181 x 181 pixels.

    Parameters
    ----------
    height, width : int
        Size of the input in pixels.
    max_value : float, default 255.0
        Largest input value.
    squared : bool, default False
        The integral of squared values.

    Returns
    -------
    numpy.int32 or numpy.int64

    Examples
    --------
    >>> integral_dtype(24, 24, squared=True).__name__
    'int32'
    >>> integral_dtype(200, 200, squared=True).__name__
    'int64'
    """
    peak = float(height) * float(width) * (max_value**2 if squared else max_value)
    return np.int32 if peak < 2**31 - 1 else np.int64


def _check_stack(images: Any, ndim: int, name: str) -> np.ndarray:
    arr = np.asarray(images)
    what = "a 2-D (H, W) array" if ndim == 2 else "a 3-D (S, H, W) stack"
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected {what}, got shape {arr.shape}")
    if arr.dtype.kind not in "biu":
        raise TypeError(f"{name}: expected an integer (uint8) image, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{name}: empty image (shape {arr.shape})")
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise ValueError(f"{name}: expected 8-bit values 0..255, got range "
                         f"[{arr.min()}, {arr.max()}]")
    return np.ascontiguousarray(arr, dtype=np.uint8)


def _integrals(images: Any, dtype: Any, mode: int, ndim: int, name: str) -> np.ndarray:
    arr = _check_stack(images, ndim, name)
    stack = arr if ndim == 3 else arr[None]
    n, h, w = stack.shape
    if dtype is None:
        dtype = integral_dtype(h, w, squared=mode == _SQUARED)
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float64)):
        raise ValueError(f"dtype: expected int32, int64 or float64, got {dt}")
    out = np.empty((n, h + 1, w + 1), dtype=dt)
    bases = (np.arange(n, dtype=np.int64) * ((h + 1) * (w + 1)))[:, None]
    _integrate_gray(stack, out.reshape(-1), _by_code([mode], bases, n), w + 1,
                    _gray_scratch(n, w))
    return out if ndim == 3 else out[0]


# --------------------------------------------------------------------------------------------
# Public integral images
# --------------------------------------------------------------------------------------------


def integral_image(image: Any, dtype: Any = np.int64) -> np.ndarray:
    """Upright integral image ``S`` of a 2-D 8-bit image.

    Parameters
    ----------
    image : array-like of shape (H, W), integer values 0..255
    dtype : {int64, int32, float64, None}
        Output dtype; ``None`` picks the smallest exact integer type.

    Returns
    -------
    ndarray of shape (H + 1, W + 1)
        ``S[y, x] = image[:y, :x].sum()``; equals ``cv2.integral(image)``.
    """
    return _integrals(image, dtype, _UPRIGHT, 2, "image")


def squared_integral_image(image: Any, dtype: Any = np.int64) -> np.ndarray:
    """Integral of squared pixels ``Q[y, x] = (image[:y, :x] ** 2).sum()``, shape (H+1, W+1).

    Parameters
    ----------
    image : array-like of shape (H, W), integer values 0..255
    dtype : {int64, int32, float64, None}, default int64
        Output dtype; ``None`` picks the smallest exact integer type.

    Returns
    -------
    ndarray of shape (H + 1, W + 1)
    """
    return _integrals(image, dtype, _SQUARED, 2, "image")


def tilted_integral_image(image: Any, dtype: Any = np.int64) -> np.ndarray:
    """OpenCV's 45° tilted integral image, shape (H + 1, W + 1).

    ``T[y, x] = sum(image[y', x'] for y' < y, |x' - x + 1| <= y - y' - 1)``; equals the third
    output of ``cv2.integral3``. Computed in O(H W) with anti-diagonal running sums.

    Parameters
    ----------
    image : array-like of shape (H, W), integer values 0..255
    dtype : {int64, int32, float64, None}, default int64
        Output dtype; ``None`` picks the smallest exact integer type.

    Returns
    -------
    ndarray of shape (H + 1, W + 1)
    """
    return _integrals(image, dtype, _TILTED, 2, "image")


def integral_images(windows: Any, dtype: Any = None) -> np.ndarray:
    """Upright integral images of a stack of windows, parallel over windows.

    Parameters
    ----------
    windows : array-like of shape (S, H, W), integer values 0..255
    dtype : {None, int32, int64, float64}
        ``None``: int32 when exact (see :func:`integral_dtype`), else int64.

    Returns
    -------
    ndarray of shape (S, H + 1, W + 1)
    """
    return _integrals(windows, dtype, _UPRIGHT, 3, "windows")


def squared_integral_images(windows: Any, dtype: Any = None) -> np.ndarray:
    """Squared-pixel integral images of a stack, shape (S, H + 1, W + 1).

    Parameters
    ----------
    windows : array-like of shape (S, H, W), integer values 0..255
    dtype : {None, int32, int64, float64}
        ``None``: int32 when exact (see :func:`integral_dtype`), else int64.

    Returns
    -------
    ndarray of shape (S, H + 1, W + 1)
    """
    return _integrals(windows, dtype, _SQUARED, 3, "windows")


def tilted_integral_images(windows: Any, dtype: Any = None) -> np.ndarray:
    """Tilted integral images of a stack, shape (S, H + 1, W + 1).

    Parameters
    ----------
    windows : array-like of shape (S, H, W), integer values 0..255
    dtype : {None, int32, int64, float64}
        ``None``: int32 when exact (see :func:`integral_dtype`), else int64.

    Returns
    -------
    ndarray of shape (S, H + 1, W + 1)
    """
    return _integrals(windows, dtype, _TILTED, 3, "windows")


# --------------------------------------------------------------------------------------------
# Rectangle tables and corner offsets
# --------------------------------------------------------------------------------------------


def _check_rects(rects: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
    r = np.asarray(rects)
    if r.ndim == 2:
        r = r[:, None, :]
    if r.ndim != 3 or r.shape[2] != 6:
        raise ValueError(
            "rects: expected shape (F, R, 6) with columns (channel, x, y, w, h, tilted), got "
            f"{r.shape}"
        )
    if r.dtype.kind not in "biu":
        raise TypeError(f"rects: expected integers, got dtype {r.dtype}")
    wt = np.asarray(weights, dtype=np.float64)
    if wt.ndim == 1 and r.shape[1] == 1:
        wt = wt[:, None]
    if wt.shape != r.shape[:2]:
        raise ValueError(f"weights: expected shape {r.shape[:2]} (F, R), got {wt.shape}")
    if not np.isfinite(wt).all():
        raise ValueError("weights: contains NaN or infinite values")
    return np.ascontiguousarray(r, dtype=np.int64), np.ascontiguousarray(wt)


def check_rects_fit(
    rects: np.ndarray, weights: np.ndarray, n_channels: int, height: int, width: int
) -> None:
    """Raise ``ValueError`` unless every used rectangle lies inside an ``H x W`` window.

    Upright: ``x, y >= 0``, ``w, h >= 1``, ``x + w <= W``, ``y + h <= H``.
    Tilted: ``x - h >= 0``, ``x + w <= W``, ``y + w + h <= H`` (its true 45° footprint).

    Parameters
    ----------
    rects : array-like of int, shape (F, R, 6) or (F, 6)
        Rows ``(channel, x, y, w, h, tilted)``.
    weights : array-like of shape (F, R) or (F,)
        Rectangles of weight 0 are unused and not checked.
    n_channels : int
        Channels the ``channel`` column may name (``0 .. n_channels - 1``).
    height, width : int
        The window in pixels.
    """
    r, wt = _check_rects(rects, weights)
    used = wt != 0
    c, x, y, w, h, t = (r[..., k] for k in range(6))
    upright_ok = (x >= 0) & (y >= 0) & (x + w <= width) & (y + h <= height)
    tilted_ok = (x - h >= 0) & (y >= 0) & (x + w <= width) & (y + w + h <= height)
    ok = (c >= 0) & (c < n_channels) & (w >= 1) & (h >= 1)
    ok &= np.where(t != 0, tilted_ok, upright_ok)
    bad = used & ~ok
    if bad.any():
        f, k = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(
            f"rects: rectangle {k} of feature {f} {tuple(int(v) for v in r[f, k])} does not fit a "
            f"{height}x{width} window with {n_channels} channel(s)"
        )


def rect_corner_offsets(
    rects: Any, row_stride: int, channel_stride: int
) -> np.ndarray:
    """Flat offsets of the four corners ``p0, p1, p2, p3`` of each rectangle.

    The rectangle sum is ``A[p0] - A[p1] - A[p2] + A[p3]`` on the flattened integral stack of one
    window (or on a flattened image stack shifted by the window origin).

    Parameters
    ----------
    rects : int array (F, R, 6)
        ``(channel, x, y, w, h, tilted)`` per rectangle.
    row_stride : int
        ``W + 1`` of the integral arrays read (image width + 1 for detection).
    channel_stride : int
        ``(H + 1) * (W + 1)`` of the integral arrays read.

    Returns
    -------
    ndarray of int64, shape (F, R, 4)
    """
    r = np.asarray(rects, dtype=np.int64)
    c, x, y, w, h, t = (r[..., k] for k in range(6))
    base = c * channel_stride
    tilted = t != 0
    # upright corners: (y, x), (y, x+w), (y+h, x), (y+h, x+w)
    # tilted corners:  (y, x), (y+h, x-h), (y+w, x+w), (y+w+h, x+w-h)
    y1 = np.where(tilted, y + h, y)
    x1 = np.where(tilted, x - h, x + w)
    y2 = np.where(tilted, y + w, y + h)
    x2 = np.where(tilted, x + w, x)
    y3 = np.where(tilted, y + w + h, y + h)
    x3 = np.where(tilted, x + w - h, x + w)
    out = np.empty(r.shape[:-1] + (4,), dtype=np.int64)
    out[..., 0] = base + y * row_stride + x
    out[..., 1] = base + y1 * row_stride + x1
    out[..., 2] = base + y2 * row_stride + x2
    out[..., 3] = base + y3 * row_stride + x3
    return out


# --------------------------------------------------------------------------------------------
# The generic rectangle-sum kernel
# --------------------------------------------------------------------------------------------


@numba.njit(parallel=True, **_JIT)
def weighted_rect_sums_kernel(flat, bases, offsets, weights, divisor, out):  # pragma: no cover
    """``out[q, p] = float32(sum_r weights[q, r] * R_r) / divisor[p]`` (the numba kernel).

    Parameters
    ----------
    flat : 1-D array (int32/int64/float64)
        Flattened integral stack.
    bases : int64 (P,)
        Flat offset of each window's origin in ``flat``.
    offsets : int64 (Q, R, 4)
        Corner offsets (:func:`rect_corner_offsets`) of the queried features.
    weights : float64 (Q, R)
        Rectangle weights; a zero weight ends a feature's rectangle list.
    divisor : float32 (P,)
        Per-window divisor (e.g. Haar's variance normalisation ``sqrt(A q - s**2)``); the value
        is 0 where the divisor is 0. Pass ones for none. The division is done in float32, as
        OpenCV's training code does.
    out : float32 (Q, P)
        Written in place.

    Windows are processed in blocks of 64 so that each thread writes contiguous output rows and
    keeps its block of integrals in cache while looping over the features.
    """
    n_q, n_r = weights.shape
    n_p = bases.shape[0]
    block = 64
    n_blocks = (n_p + block - 1) // block
    for b in prange(n_blocks):
        p0 = b * block
        p1 = min(p0 + block, n_p)
        for q in range(n_q):
            for p in range(p0, p1):
                base = bases[p]
                acc = 0.0
                for r in range(n_r):
                    wt = weights[q, r]
                    if wt == 0.0:
                        break
                    # float64 holds integral values exactly (< 2**53)
                    v = (
                        np.float64(flat[base + offsets[q, r, 0]])
                        - np.float64(flat[base + offsets[q, r, 1]])
                        - np.float64(flat[base + offsets[q, r, 2]])
                        + np.float64(flat[base + offsets[q, r, 3]])
                    )
                    acc += wt * v
                d = divisor[p]
                if d == 0:
                    out[q, p] = np.float32(0.0)
                else:
                    out[q, p] = np.float32(acc) / d


def _check_integrals(integrals: Any, name: str) -> np.ndarray:
    arr = np.asarray(integrals)
    if arr.ndim != 4:
        raise ValueError(
            f"{name}: expected integral channels of shape (N, C, H + 1, W + 1), got {arr.shape}"
        )
    if arr.dtype not in (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float64)):
        raise TypeError(f"{name}: expected int32, int64 or float64 integrals, got {arr.dtype}")
    if arr.shape[0] == 0 or arr.shape[2] < 2 or arr.shape[3] < 2:
        raise ValueError(f"{name}: empty integral stack (shape {arr.shape})")
    return np.ascontiguousarray(arr)


def _run(flat, bases, offsets, weights, divisor) -> np.ndarray:
    out = np.empty((weights.shape[0], bases.shape[0]), dtype=np.float32)
    if divisor is None:
        divisor = np.ones(bases.shape[0], dtype=np.float32)
    weighted_rect_sums_kernel(flat, bases, offsets, weights, divisor, out)
    return out


def _check_divisor(divisor: Any, n: int) -> np.ndarray | None:
    if divisor is None:
        return None
    d = np.asarray(divisor)
    if d.shape != (n,):
        raise ValueError(f"divisor: expected shape ({n},), got {d.shape}")
    if d.dtype.kind not in "iuf" or not np.isfinite(d).all():
        raise ValueError("divisor: expected finite numbers")
    return np.ascontiguousarray(d, dtype=np.float32)


def weighted_rect_sums(
    integrals: Any,
    rects: Any,
    weights: Any,
    sample_ids: Any = None,
    divisor: Any = None,
) -> np.ndarray:
    """Weighted rectangle sums of every feature on a stack of integral channels.

    Parameters
    ----------
    integrals : ndarray (S, C, H + 1, W + 1), int32/int64/float64
        Integral channels of ``S`` windows (stacked upright/tilted integrals).
    rects : int array (Q, R, 6)
        Rectangle table of the ``Q`` queried features, columns ``(channel, x, y, w, h, tilted)``
        in window coordinates (``tilted`` rects must be on a tilted-integral channel).
    weights : float array (Q, R)
        Weights; 0 marks an unused slot (only trailing slots may be unused).
    sample_ids : int array (S',), optional
        Windows to evaluate (default all).
    divisor : float array (S',), optional
        Per-window divisor of the weighted sum (default 1; 0 gives the value 0).

    Returns
    -------
    ndarray of float32, shape (Q, S')
    """
    ii = _check_integrals(integrals, "integrals")
    r, wt = _check_rects(rects, weights)
    n, c, hp, wp = ii.shape
    check_rects_fit(r, wt, c, hp - 1, wp - 1)
    sids = check_sample_ids(sample_ids, n)
    offs = rect_corner_offsets(r, wp, hp * wp)
    bases = sids * (c * hp * wp)
    return _run(ii.reshape(-1), bases, offs, wt, _check_divisor(divisor, sids.shape[0]))
