"""Integral images and weighted rectangle sums over integral channels.

Integral images (summed-area tables) use OpenCV's layout: one row and one column larger than the
input, with a zero first row and column.

* upright sum ``S[y, x] = sum(I[:y, :x])``, shape ``(H + 1, W + 1)``;
* squared sum ``Q[y, x] = sum(I[:y, :x] ** 2)``;
* tilted (45°) sum, as ``cv2.integral3`` defines it:
  ``T[y, x] = sum(I[y', x'] for y' < y if |x' - x + 1| <= y - y' - 1)`` — the triangle with apex at
  pixel ``(x - 1, y - 1)`` that widens upward. Pixels outside the image count as zero, so
  ``T[y, 0]`` is generally non-zero.

Rectangle sums (``CV_SUM_OFS`` / ``CV_TILTED_OFS`` in OpenCV):

* upright ``R(x, y, w, h) = S[y, x] - S[y, x+w] - S[y+h, x] + S[y+h, x+w]``;
* tilted ``R45(x, y, w, h) = T[y, x] - T[y+h, x-h] - T[y+w, x+w] + T[y+w+h, x+w-h]``: the 45°
  rectangle hanging from corner ``(x, y)`` with side ``w`` along the down-right diagonal and
  side ``h`` along the down-left diagonal; it needs ``x - h >= 0``, ``x + w <= W`` and
  ``y + w + h <= H``.

Both have the form ``+A[p0] - A[p1] - A[p2] + A[p3]``, so a feature made of weighted rectangles is
compiled once into four flat *corner offsets* per rectangle (:func:`rect_corner_offsets`), and
one kernel evaluates every such family: Haar (upright and tilted, on gray integrals), HOG cells
(on one integral per orientation bin), histograms over sub-rectangles (on one integral per
indicator channel) and patch sums.

Layout of integral channel stacks: ``(N, C, H + 1, W + 1)`` C-contiguous — ``N`` windows (or
``N = 1`` image), ``C`` channels. A rectangle table row is ``(channel, x, y, w, h, tilted)``
(int32) with a float64 weight; weight 0 marks an unused slot (features with fewer rectangles).

All kernels are numba, parallel over windows/positions; the public wrappers validate their input.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import prange

__all__ = [
    "RECT_COLUMNS",
    "check_rects_fit",
    "integral_channels",
    "integral_dtype",
    "integral_image",
    "integral_images",
    "rect_corner_offsets",
    "rect_sum_reference",
    "rect_sums",
    "squared_integral_image",
    "squared_integral_images",
    "tilted_integral_image",
    "tilted_integral_images",
    "weighted_rect_sums",
    "weighted_rect_sums_at",
    "weighted_rect_sums_kernel",
]

#: column names of a rectangle table row
RECT_COLUMNS = ("channel", "x", "y", "w", "h", "tilted")

_JIT = {"cache": True, "nogil": True}


# --------------------------------------------------------------------------------------------
# 2-D kernels (write into preallocated outputs)
# --------------------------------------------------------------------------------------------


@numba.njit(**_JIT)
def _integral_into(img, out):  # pragma: no cover - numba
    h, w = img.shape
    for x in range(w + 1):
        out[0, x] = 0
    for y in range(h):
        out[y + 1, 0] = 0
        acc = 0
        for x in range(w):
            acc += img[y, x]
            out[y + 1, x + 1] = out[y, x + 1] + acc


@numba.njit(**_JIT)
def _sq_integral_into(img, out):  # pragma: no cover - numba
    h, w = img.shape
    for x in range(w + 1):
        out[0, x] = 0
    for y in range(h):
        out[y + 1, 0] = 0
        acc = 0
        for x in range(w):
            v = np.int64(img[y, x])
            acc += v * v
            out[y + 1, x + 1] = out[y, x + 1] + acc


@numba.njit(**_JIT)
def _tilted_into(img, out, diag):  # pragma: no cover - numba
    # diag[r % 2, x] = sum of I along the anti-diagonal going up-right from (x, r), i.e.
    # I[r, x] + I[r-1, x+1] + ...  Recurrence (derived from the definition):
    #   T[y, 0] = T[y-1, 0] + diag[y-2, 0]
    #   T[y, x] = T[y-1, x-1] + diag[y-1, x-1] + diag[y-2, x-1]      (x >= 1)
    h, w = img.shape
    for x in range(w + 1):
        out[0, x] = 0
    for x in range(w):
        diag[0, x] = 0
        diag[1, x] = 0
    for y in range(1, h + 1):
        r = y - 1  # newest image row
        cur = r & 1
        prev = cur ^ 1
        # diag row r from row r - 1 (held in `prev` slot, zero when r == 0)
        for x in range(w):
            v = img[r, x]
            if r > 0 and x + 1 < w:
                diag[cur, x] = v + diag[prev, x + 1]
            else:
                diag[cur, x] = v
        # diag[prev] still holds row r - 1 (= y - 2) for the recurrence
        if y >= 2:
            out[y, 0] = out[y - 1, 0] + diag[prev, 0]
            for x in range(1, w + 1):
                out[y, x] = out[y - 1, x - 1] + diag[cur, x - 1] + diag[prev, x - 1]
        else:
            out[y, 0] = 0
            for x in range(1, w + 1):
                out[y, x] = diag[cur, x - 1]


@numba.njit(parallel=True, **_JIT)
def _integral_batch(imgs, out):  # pragma: no cover - numba
    for s in prange(imgs.shape[0]):
        _integral_into(imgs[s], out[s])


@numba.njit(parallel=True, **_JIT)
def _sq_integral_batch(imgs, out):  # pragma: no cover - numba
    for s in prange(imgs.shape[0]):
        _sq_integral_into(imgs[s], out[s])


@numba.njit(parallel=True, **_JIT)
def _tilted_batch(imgs, out):  # pragma: no cover - numba
    w = imgs.shape[2]
    for s in prange(imgs.shape[0]):
        diag = np.empty((2, max(w, 1)), dtype=out.dtype)
        _tilted_into(imgs[s], out[s], diag)


@numba.njit(parallel=True, **_JIT)
def _channels_batch(chans, out):  # pragma: no cover - numba
    n, c = chans.shape[0], chans.shape[1]
    for k in prange(n * c):
        i = k // c
        j = k - i * c
        _integral_into(chans[i, j], out[i, j])


# --------------------------------------------------------------------------------------------
# dtype policy
# --------------------------------------------------------------------------------------------


def integral_dtype(height: int, width: int, max_value: float = 255.0, squared: bool = False):
    """Smallest exact integer dtype (int32 or int64) for an integral of an ``H x W`` input.

    int32 is used while ``H * W * max_value (** 2 if squared)`` stays below 2**31, which covers
    the squared integral of 8-bit windows up to about 181 x 181 pixels.
    """
    peak = float(height) * float(width) * (max_value**2 if squared else max_value)
    return np.int32 if peak < 2**31 - 1 else np.int64


def _check_2d(image: Any, name: str) -> np.ndarray:
    arr = np.asarray(image)
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D (H, W) array, got shape {arr.shape}")
    if arr.dtype.kind not in "biu":
        raise TypeError(f"{name}: expected an integer (uint8) image, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{name}: empty image (shape {arr.shape})")
    return np.ascontiguousarray(arr)


def _check_3d(windows: Any, name: str) -> np.ndarray:
    arr = np.asarray(windows)
    if arr.ndim != 3:
        raise ValueError(f"{name}: expected a 3-D (S, H, W) stack, got shape {arr.shape}")
    if arr.dtype.kind not in "biu":
        raise TypeError(f"{name}: expected integer (uint8) windows, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{name}: empty stack (shape {arr.shape})")
    return np.ascontiguousarray(arr)


def _resolve_dtype(dtype: Any, h: int, w: int, max_value: float, squared: bool) -> np.dtype:
    if dtype is None:
        return np.dtype(integral_dtype(h, w, max_value, squared))
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float64)):
        raise ValueError(f"dtype: expected int32, int64 or float64, got {dt}")
    return dt


def _max_value(arr: np.ndarray) -> float:
    return 255.0 if arr.dtype == np.uint8 else float(np.abs(arr).max())


# --------------------------------------------------------------------------------------------
# Public integral images
# --------------------------------------------------------------------------------------------


def integral_image(image: Any, dtype: Any = np.int64) -> np.ndarray:
    """Upright integral image ``S`` of a 2-D integer image.

    Parameters
    ----------
    image : array-like of shape (H, W), integer (uint8)
    dtype : {int64, int32, float64, None}
        Output dtype; ``None`` picks the smallest exact integer type.

    Returns
    -------
    ndarray of shape (H + 1, W + 1)
        ``S[y, x] = image[:y, :x].sum()``; equals ``cv2.integral(image)``.
    """
    img = _check_2d(image, "image")
    dt = _resolve_dtype(dtype, *img.shape, _max_value(img), False)
    out = np.empty((img.shape[0] + 1, img.shape[1] + 1), dtype=dt)
    _integral_into(img, out)
    return out


def squared_integral_image(image: Any, dtype: Any = np.int64) -> np.ndarray:
    """Integral of squared pixels ``Q[y, x] = (image[:y, :x] ** 2).sum()``, shape (H+1, W+1)."""
    img = _check_2d(image, "image")
    dt = _resolve_dtype(dtype, *img.shape, _max_value(img), True)
    out = np.empty((img.shape[0] + 1, img.shape[1] + 1), dtype=dt)
    _sq_integral_into(img, out)
    return out


def tilted_integral_image(image: Any, dtype: Any = np.int64) -> np.ndarray:
    """OpenCV's 45° tilted integral image, shape (H + 1, W + 1).

    ``T[y, x] = sum(image[y', x'] for y' < y, |x' - x + 1| <= y - y' - 1)``; equals the third
    output of ``cv2.integral3``. Computed in O(H W) with anti-diagonal running sums.
    """
    img = _check_2d(image, "image")
    dt = _resolve_dtype(dtype, *img.shape, _max_value(img), False)
    out = np.empty((img.shape[0] + 1, img.shape[1] + 1), dtype=dt)
    diag = np.empty((2, img.shape[1]), dtype=dt)
    _tilted_into(img, out, diag)
    return out


def integral_images(windows: Any, dtype: Any = None) -> np.ndarray:
    """Upright integral images of a stack of windows, parallel over windows.

    Parameters
    ----------
    windows : array-like of shape (S, H, W), integer (uint8)
    dtype : {None, int32, int64, float64}
        ``None``: int32 when exact (see :func:`integral_dtype`), else int64.

    Returns
    -------
    ndarray of shape (S, H + 1, W + 1)
    """
    w = _check_3d(windows, "windows")
    dt = _resolve_dtype(dtype, w.shape[1], w.shape[2], _max_value(w), False)
    out = np.empty((w.shape[0], w.shape[1] + 1, w.shape[2] + 1), dtype=dt)
    _integral_batch(w, out)
    return out


def squared_integral_images(windows: Any, dtype: Any = None) -> np.ndarray:
    """Squared-pixel integral images of a stack, shape (S, H + 1, W + 1)."""
    w = _check_3d(windows, "windows")
    dt = _resolve_dtype(dtype, w.shape[1], w.shape[2], _max_value(w), True)
    out = np.empty((w.shape[0], w.shape[1] + 1, w.shape[2] + 1), dtype=dt)
    _sq_integral_batch(w, out)
    return out


def tilted_integral_images(windows: Any, dtype: Any = None) -> np.ndarray:
    """Tilted integral images of a stack, shape (S, H + 1, W + 1)."""
    w = _check_3d(windows, "windows")
    dt = _resolve_dtype(dtype, w.shape[1], w.shape[2], _max_value(w), False)
    out = np.empty((w.shape[0], w.shape[1] + 1, w.shape[2] + 1), dtype=dt)
    _tilted_batch(w, out)
    return out


def integral_channels(channels: Any, dtype: Any = None) -> np.ndarray:
    """Upright integral images of a stack of multi-channel inputs.

    Parameters
    ----------
    channels : array-like of shape (N, C, H, W)
        Integer channels (e.g. 0/1 bin indicators) or float channels (e.g. gradient magnitude per
        orientation bin).
    dtype : {None, int32, int64, float64}
        ``None``: float64 for float input, else the smallest exact integer type.

    Returns
    -------
    ndarray of shape (N, C, H + 1, W + 1)
        The layout :func:`weighted_rect_sums` reads.
    """
    arr = np.asarray(channels)
    if arr.ndim != 4:
        raise ValueError(f"channels: expected a 4-D (N, C, H, W) array, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"channels: expected a numeric array, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"channels: empty array (shape {arr.shape})")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("channels: contains NaN or infinite values")
        dt = np.dtype(np.float64) if dtype is None else np.dtype(dtype)
        if dt != np.float64:
            raise ValueError(f"dtype: float channels need float64 integrals, got {dt}")
        arr = np.ascontiguousarray(arr, dtype=np.float64)
    else:
        if arr.dtype.kind == "b":
            arr = arr.view(np.uint8)
        dt = _resolve_dtype(dtype, arr.shape[2], arr.shape[3], _max_value(arr), False)
        arr = np.ascontiguousarray(arr)
    out = np.empty(arr.shape[:2] + (arr.shape[2] + 1, arr.shape[3] + 1), dtype=dt)
    _channels_batch(arr, out)
    return out


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


def _check_stack(integrals: Any, name: str) -> np.ndarray:
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
        Integral channels of ``S`` windows (:func:`integral_channels`, or a family's stack of
        upright/tilted/squared integrals).
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
    from vjboost.features.base import check_sample_ids

    ii = _check_stack(integrals, "integrals")
    r, wt = _check_rects(rects, weights)
    n, c, hp, wp = ii.shape
    check_rects_fit(r, wt, c, hp - 1, wp - 1)
    sids = check_sample_ids(sample_ids, n)
    offs = rect_corner_offsets(r, wp, hp * wp)
    bases = sids * (c * hp * wp)
    return _run(ii.reshape(-1), bases, offs, wt, _check_divisor(divisor, sids.shape[0]))


def weighted_rect_sums_at(
    integral: Any,
    rects: Any,
    weights: Any,
    positions: Any,
    window_shape: tuple[int, int],
    divisor: Any = None,
) -> np.ndarray:
    """Weighted rectangle sums for windows at ``positions`` of one integral-channel image.

    Parameters
    ----------
    integral : ndarray (C, Hi + 1, Wi + 1) or (1, C, Hi + 1, Wi + 1)
        Integral channels of a whole image.
    rects, weights : see :func:`weighted_rect_sums` (window coordinates).
    positions : int array (P, 2)
        ``(y, x)`` of the windows' top-left corners in the image.
    window_shape : (H, W)
        Window size; windows must fit in the image.
    divisor : float array (P,), optional

    Returns
    -------
    ndarray of float32, shape (Q, P)
    """
    from vjboost.features.base import check_positions

    arr = np.asarray(integral)
    if arr.ndim == 3:
        arr = arr[None]
    ii = _check_stack(arr, "integral")
    if ii.shape[0] != 1:
        raise ValueError(f"integral: expected one image's channels, got {ii.shape[0]}")
    _, c, hp, wp = ii.shape
    h, w = window_shape
    r, wt = _check_rects(rects, weights)
    check_rects_fit(r, wt, c, h, w)
    pos = check_positions(positions, (hp - 1, wp - 1), (h, w))
    offs = rect_corner_offsets(r, wp, hp * wp)
    bases = pos[:, 0] * wp + pos[:, 1]
    return _run(ii.reshape(-1), bases, offs, wt, _check_divisor(divisor, pos.shape[0]))


def rect_sums(integrals: Any, rects: Any, sample_ids: Any = None) -> np.ndarray:
    """Plain (unit-weight) rectangle sums: ``rects`` (Q, 6) → float32 (Q, S')."""
    r = np.asarray(rects)
    if r.ndim != 2:
        raise ValueError(f"rects: expected shape (Q, 6), got {r.shape}")
    return weighted_rect_sums(integrals, r[:, None, :], np.ones((r.shape[0], 1)), sample_ids)


def rect_sum_reference(image: np.ndarray, x: int, y: int, w: int, h: int, tilted: bool) -> float:
    """Brute-force rectangle sum on the image itself (for tests and documentation).

    Upright: ``image[y:y+h, x:x+w].sum()``. Tilted: the pixels of the 45° rectangle that
    ``R45(x, y, w, h)`` sums, enumerated from the tilted-integral definition.
    """
    img = np.asarray(image, dtype=np.int64)
    if not tilted:
        return float(img[y : y + h, x : x + w].sum())
    ih, iw = img.shape

    def t(yy: int, xx: int) -> int:
        total = 0
        for yp in range(min(yy, ih)):
            half = yy - yp - 1
            lo, hi = max(xx - 1 - half, 0), min(xx - 1 + half, iw - 1)
            if lo <= hi:
                total += int(img[yp, lo : hi + 1].sum())
        return total

    return float(t(y, x) - t(y + h, x - h) - t(y + w, x + w) + t(y + w + h, x + w - h))
