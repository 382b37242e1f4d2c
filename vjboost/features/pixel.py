"""Pixel-level feature families: raw pixels, gradient magnitudes and random patch sums.

Families
--------
``pixel``
    The gray value ``I[y, x]`` of every pixel of a gray window (``H * W`` features, feature
    ``y * W + x``).
``pixel_rgb``
    The ``R``, ``G``, ``B`` values and the gray value of every pixel of an RGB window
    (``4 * H * W`` features, feature ``(y * W + x) * 4 + c`` with ``c`` in R, G, B, gray). Gray is
    OpenCV's ``cv2.COLOR_RGB2GRAY`` (``0.299 R + 0.587 G + 0.114 B``, rounded).
``gradient_magnitude``
    ``hypot(g_row, g_col)`` at every pixel, with central differences
    ``g_row[y, x] = I[y + 1, x] - I[y - 1, x]`` and ``g_col[y, x] = I[y, x + 1] - I[y, x - 1]``
    computed *on the window* and set to 0 on the window's first/last row (``g_row``) and first/last
    column (``g_col``) — the convention of ``skimage.feature.hog``. On the detection path the
    same values are computed from the image with the window border of each position.
``patch_sum``
    Sums of the gray values over ``n_patches`` random rectangles (seeded), evaluated with integral
    images and the generic rectangle-sum kernel of :mod:`vjboost.features.integral`.

The gather kernels defined here (:func:`gather_columns`, :func:`gather_offsets`) also serve the
other families whose prepared channels already hold one value per feature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numba
import numpy as np
from numba import prange

from vjboost._memory import check_memory
from vjboost._validation import check_random_state
from vjboost.features.base import (
    Channels,
    FeatureFamily,
    check_channels,
    check_feature_ids,
    check_image,
    check_positions,
    check_sample_ids,
    check_window_shape,
    check_windows,
    register_family,
)
from vjboost.features.rectsum import GrayRectSumFamily

__all__ = [
    "GradientMagnitudeFamily",
    "PatchSumFamily",
    "PixelFamily",
    "PixelRGBFamily",
    "gather_columns",
    "gather_offsets",
    "gradient_magnitude",
    "rgb_to_gray",
]

_JIT = {"cache": True, "nogil": True}


# --------------------------------------------------------------------------------------------
# Gather kernels
# --------------------------------------------------------------------------------------------


@numba.njit(parallel=True, **_JIT)
def _gather_columns_kernel(table, cols, sids, out):  # pragma: no cover - numba
    n_q = cols.shape[0]
    for j in prange(sids.shape[0]):
        row = table[sids[j]]
        for q in range(n_q):
            out[q, j] = np.float32(row[cols[q]])


def gather_columns(table: np.ndarray, cols: np.ndarray, sids: np.ndarray) -> np.ndarray:
    """``out[q, j] = float32(table[sids[j], cols[q]])`` (numba, parallel over samples).

    Parameters
    ----------
    table : ndarray (S, F), any numeric dtype, C-contiguous
    cols : int64 (Q,)
    sids : int64 (S',)

    Returns
    -------
    ndarray of float32, shape (Q, S')
    """
    out = np.empty((cols.shape[0], sids.shape[0]), dtype=np.float32)
    _gather_columns_kernel(table, cols, sids, out)
    return out


@numba.njit(parallel=True, **_JIT)
def _gather_offsets_kernel(flat, offsets, bases, out):  # pragma: no cover - numba
    n_q = offsets.shape[0]
    for p in prange(bases.shape[0]):
        b = bases[p]
        for q in range(n_q):
            out[q, p] = np.float32(flat[b + offsets[q]])


def gather_offsets(flat: np.ndarray, offsets: np.ndarray, bases: np.ndarray) -> np.ndarray:
    """``out[q, p] = float32(flat[bases[p] + offsets[q]])`` (numba, parallel over positions)."""
    out = np.empty((offsets.shape[0], bases.shape[0]), dtype=np.float32)
    _gather_offsets_kernel(flat, offsets, bases, out)
    return out


# --------------------------------------------------------------------------------------------
# Gradient magnitude with the window-border convention
# --------------------------------------------------------------------------------------------


@numba.njit(**_JIT)
def _window_grad(img, y0, x0, h, w, y, x):  # pragma: no cover - numba
    """(g_row, g_col) of window pixel (y, x) for a window at (y0, x0) of ``img``."""
    if y == 0 or y == h - 1:
        gr = 0.0
    else:
        gr = np.float64(img[y0 + y + 1, x0 + x]) - np.float64(img[y0 + y - 1, x0 + x])
    if x == 0 or x == w - 1:
        gc = 0.0
    else:
        gc = np.float64(img[y0 + y, x0 + x + 1]) - np.float64(img[y0 + y, x0 + x - 1])
    return gr, gc


@numba.njit(parallel=True, **_JIT)
def _grad_mag_batch(windows, out):  # pragma: no cover - numba
    n, h, w = windows.shape
    for s in prange(n):
        img = windows[s]
        for y in range(h):
            for x in range(w):
                gr, gc = _window_grad(img, 0, 0, h, w, y, x)
                out[s, y, x] = np.sqrt(gr * gr + gc * gc)


@numba.njit(parallel=True, **_JIT)
def _grad_mag_at(img, ys, xs, pos, h, w, out):  # pragma: no cover - numba
    n_q = ys.shape[0]
    for p in prange(pos.shape[0]):
        y0 = pos[p, 0]
        x0 = pos[p, 1]
        for q in range(n_q):
            gr, gc = _window_grad(img, y0, x0, h, w, ys[q], xs[q])
            out[q, p] = np.float32(np.sqrt(gr * gr + gc * gc))


def gradient_magnitude(windows: Any) -> np.ndarray:
    """Gradient magnitude of each window, with the window-border convention.

    Parameters
    ----------
    windows : array-like (S, H, W) or (H, W), uint8

    Returns
    -------
    ndarray of float64, same shape as ``windows``
        ``hypot(g_row, g_col)`` with central differences, ``g_row = 0`` on the first/last row and
        ``g_col = 0`` on the first/last column (``skimage.feature.hog``'s gradient).
    """
    arr = np.asarray(windows)
    single = arr.ndim == 2
    if single:
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(f"windows: expected (S, H, W) or (H, W), got shape {arr.shape}")
    arr = check_windows(arr, arr.shape[1:3])
    out = np.empty(arr.shape, dtype=np.float64)
    _grad_mag_batch(arr, out)
    return out[0] if single else out


def rgb_to_gray(rgb: np.ndarray) -> np.ndarray:
    """``cv2.COLOR_RGB2GRAY`` of a stack ``(..., H, W, 3)`` uint8 → ``(..., H, W)`` uint8."""
    lead = rgb.shape[:-3]
    h, w = rgb.shape[-3], rgb.shape[-2]
    flat = np.ascontiguousarray(rgb.reshape(-1, w, 3))
    gray = cv2.cvtColor(flat, cv2.COLOR_RGB2GRAY)
    return gray.reshape(lead + (h, w))


# --------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------


class _PerPixelFamily(FeatureFamily):
    """Common plumbing: one value per (pixel, plane); features read a prepared table."""

    n_planes: int = 1

    def __init__(self, window_shape: Sequence[int] = (24, 24)) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        self.n_features = h * w * self.n_planes

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape)}

    def _pixel(self, i: int) -> tuple[int, int, int]:
        p, c = divmod(i, self.n_planes)
        y, x = divmod(p, self.window_shape[1])
        return y, x, c

    def _table(self, windows: np.ndarray) -> np.ndarray:
        """(S, H * W * n_planes) table of feature values."""
        raise NotImplementedError

    def prepare(self, windows: Any) -> Channels:
        win = check_windows(windows, self.window_shape, color=self.color)
        table = self._table(win)
        return Channels(self.name, "windows", self.window_shape, win.shape[0], {"values": table})

    def evaluate(self, channels: Channels, feature_ids: Any = None,
                 sample_ids: Any = None) -> np.ndarray:
        ch = check_channels(channels, self, "windows")
        fids = check_feature_ids(feature_ids, self.n_features)
        sids = check_sample_ids(sample_ids, ch.n_samples)
        return gather_columns(ch["values"], fids, sids)

    def channels_nbytes(self, n_samples: int) -> int:
        return int(n_samples) * self.n_features * 4


@register_family
class PixelFamily(_PerPixelFamily):
    """Gray value of each pixel of a gray window.

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)`` in pixels.

    Features: ``H * W``; feature ``i = y * W + x`` is ``window[y, x]`` (0..255 as float32).
    """

    name = "pixel"

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        y, x, _ = self._pixel(i)
        return {"family": self.name, "index": i, "text": f"gray pixel at (x={x}, y={y})",
                "x": x, "y": y}

    def _table(self, windows: np.ndarray) -> np.ndarray:
        # a copy: prepared channels must not change when the caller reuses its window buffer
        return windows.reshape(windows.shape[0], -1).copy()

    def prepare_image(self, image: Any) -> Channels:
        img = check_image(image, self.window_shape)
        return Channels(self.name, "image", img.shape[:2], 1, {"image": img})

    def evaluate_at(self, channels: Channels, feature_ids: Any, positions: Any) -> np.ndarray:
        ch = check_channels(channels, self, "image")
        fids = check_feature_ids(feature_ids, self.n_features)
        pos = check_positions(positions, ch.shape, self.window_shape)
        img = ch["image"]
        iw = img.shape[1]
        y, x = np.divmod(fids, self.window_shape[1])
        return gather_offsets(img.reshape(-1), y * iw + x, pos[:, 0] * iw + pos[:, 1])


_PLANES_RGB = ("R", "G", "B", "gray")


@register_family
class PixelRGBFamily(_PerPixelFamily):
    """Red, green, blue and gray values of each pixel of an RGB window.

    Parameters
    ----------
    window_shape : (int, int)

    Features: ``4 * H * W``; feature ``i = (y * W + x) * 4 + c`` with plane ``c`` in
    ``(R, G, B, gray)``; gray is ``cv2.cvtColor(..., cv2.COLOR_RGB2GRAY)``.
    """

    name = "pixel_rgb"
    color = True
    n_planes = 4

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        y, x, c = self._pixel(i)
        return {"family": self.name, "index": i,
                "text": f"{_PLANES_RGB[c]} value at (x={x}, y={y})",
                "x": x, "y": y, "plane": _PLANES_RGB[c]}

    @staticmethod
    def _planes(rgb: np.ndarray) -> np.ndarray:
        out = np.empty(rgb.shape[:-1] + (4,), dtype=np.uint8)
        out[..., :3] = rgb
        out[..., 3] = rgb_to_gray(rgb)
        return out

    def _table(self, windows: np.ndarray) -> np.ndarray:
        return self._planes(windows).reshape(windows.shape[0], -1)

    def prepare_image(self, image: Any) -> Channels:
        img = check_image(image, self.window_shape, color=True)
        planes = self._planes(img[None])[0]
        return Channels(self.name, "image", img.shape[:2], 1, {"planes": planes})

    def evaluate_at(self, channels: Channels, feature_ids: Any, positions: Any) -> np.ndarray:
        ch = check_channels(channels, self, "image")
        fids = check_feature_ids(feature_ids, self.n_features)
        pos = check_positions(positions, ch.shape, self.window_shape)
        planes = ch["planes"]
        iw = planes.shape[1]
        p, c = np.divmod(fids, 4)
        y, x = np.divmod(p, self.window_shape[1])
        return gather_offsets(planes.reshape(-1), (y * iw + x) * 4 + c,
                              (pos[:, 0] * iw + pos[:, 1]) * 4)


@register_family
class GradientMagnitudeFamily(_PerPixelFamily):
    """Gradient magnitude at each pixel of a gray window (see :func:`gradient_magnitude`).

    Parameters
    ----------
    window_shape : (int, int)

    Features: ``H * W``; feature ``i = y * W + x``.
    """

    name = "gradient_magnitude"

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        y, x, _ = self._pixel(i)
        return {"family": self.name, "index": i,
                "text": f"gradient magnitude at (x={x}, y={y})", "x": x, "y": y}

    def _table(self, windows: np.ndarray) -> np.ndarray:
        check_memory(windows.shape[0] * self.n_features * 12, "gradient-magnitude channels")
        out = np.empty(windows.shape, dtype=np.float64)
        _grad_mag_batch(windows, out)
        return out.astype(np.float32).reshape(windows.shape[0], -1)

    def prepare_image(self, image: Any) -> Channels:
        img = check_image(image, self.window_shape)
        return Channels(self.name, "image", img.shape[:2], 1, {"image": img})

    def evaluate_at(self, channels: Channels, feature_ids: Any, positions: Any) -> np.ndarray:
        ch = check_channels(channels, self, "image")
        fids = check_feature_ids(feature_ids, self.n_features)
        pos = check_positions(positions, ch.shape, self.window_shape)
        h, w = self.window_shape
        ys, xs = np.divmod(fids, w)
        out = np.empty((fids.shape[0], pos.shape[0]), dtype=np.float32)
        _grad_mag_at(ch["image"], ys, xs, pos, h, w, out)
        return out


def _random_patches(window_shape: tuple[int, int], n: int, min_size: int,
                    seed: Any) -> np.ndarray:
    rng = check_random_state(seed)
    h, w = window_shape
    ph = rng.integers(min_size, h + 1, size=n)
    pw = rng.integers(min_size, w + 1, size=n)
    py = (rng.random(n) * (h - ph + 1)).astype(np.int64)
    px = (rng.random(n) * (w - pw + 1)).astype(np.int64)
    return np.stack([px, py, pw, ph], axis=1).astype(np.int64)


@register_family
class PatchSumFamily(GrayRectSumFamily):
    """Sums of gray values over random rectangular patches, via integral images.

    Parameters
    ----------
    window_shape : (int, int)
    n_patches : int, default=1000
        Number of random patches (features).
    min_size : int, default=2
        Smallest patch side in pixels.
    seed : int or None, default=0
        Seed of the patch draw (sides uniform in ``min_size..H`` / ``min_size..W``, then a
        uniform position).
    patches : sequence of (x, y, w, h), optional
        Explicit patches; when given, ``n_patches``, ``min_size`` and ``seed`` are ignored.
        :meth:`get_config` always stores the drawn patches here so that a saved family never
        depends on the random generator's stream.

    Feature ``i`` is ``window[y:y+h, x:x+w].sum()`` for patch ``i``.
    """

    name = "patch_sum"

    def __init__(self, window_shape: Sequence[int] = (24, 24), n_patches: int = 1000,
                 min_size: int = 2, seed: Any = 0,
                 patches: Sequence[Sequence[int]] | None = None) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        if patches is None:
            if isinstance(n_patches, bool) or not isinstance(n_patches, int | np.integer) \
                    or n_patches < 1:
                raise ValueError(f"n_patches: expected a positive integer, got {n_patches!r}")
            if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer) \
                    or not 1 <= min_size <= min(h, w):
                raise ValueError(
                    f"min_size: expected an integer in 1..{min(h, w)}, got {min_size!r}")
            pt = _random_patches(self.window_shape, int(n_patches), int(min_size), seed)
        else:
            pt = np.asarray(patches)
            if pt.ndim != 2 or pt.shape[1] != 4 or pt.shape[0] == 0 or pt.dtype.kind not in "iu":
                raise ValueError(
                    f"patches: expected a non-empty integer (n, 4) array of (x, y, w, h), got "
                    f"shape {pt.shape} dtype {pt.dtype}")
            pt = pt.astype(np.int64)
            x, y, pw, ph = pt.T
            bad = (x < 0) | (y < 0) | (pw < 1) | (ph < 1) | (x + pw > w) | (y + ph > h)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise ValueError(f"patches: patch {k} {tuple(pt[k])} does not fit a {h}x{w} "
                                 "window")
        self.patches = pt
        self.n_features = int(pt.shape[0])
        self.n_patches, self.min_size, self.seed = int(pt.shape[0]), min_size, seed
        rects = np.zeros((self.n_features, 1, 6), dtype=np.int64)
        rects[:, 0, 1:5] = pt
        self._rects = rects
        self._weights = np.ones((self.n_features, 1))

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape),
                "patches": self.patches.tolist()}

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        x, y, w, h = (int(v) for v in self.patches[i])
        return {"family": self.name, "index": i, "rect": (x, y, w, h),
                "text": f"sum of gray values over x={x}..{x + w - 1}, y={y}..{y + h - 1}"}

