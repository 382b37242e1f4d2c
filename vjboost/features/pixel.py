"""Pixel-level feature families: raw pixels, gradient magnitudes and random patch sums.

Every family here is a set of one-pixel or rectangle reads of integral channel planes (a
compiled :class:`~vjboost.features.program.Program`, OP_RECTS, NORM_NONE):

``pixel``
    The gray value ``I[y, x]`` of every pixel of a gray window (``H * W`` features, feature
    ``y * W + x``); plane ``gray``.
``pixel_rgb``
    The ``R``, ``G``, ``B`` values and the gray value of every pixel of an RGB window
    (``4 * H * W`` features, feature ``(y * W + x) * 4 + c`` with ``c`` in R, G, B, gray); planes
    ``rgb#0..2`` and ``gray`` (OpenCV's ``cv2.COLOR_RGB2GRAY``, ``0.299 R + 0.587 G + 0.114 B``,
    rounded).
``gradient_magnitude``
    The gradient magnitude at every pixel of the window's *interior* (one pixel from the border:
    ``(H - 2) * (W - 2)`` features, feature ``(y - 1) * (W - 2) + (x - 1)``), read from plane
    ``gradmag``: ``round(MAG_SCALE * hypot(g_row, g_col)) / MAG_SCALE`` with central differences
    ``g_row[y, x] = I[y + 1, x] - I[y - 1, x]``, ``g_col[y, x] = I[y, x + 1] - I[y, x - 1]`` —
    the exact magnitude quantised to 1/8 grey level. Interior pixels have all four neighbours
    inside the window, so a window cut out of an image and the image agree.
``patch_sum``
    Sums of the gray values over ``n_patches`` random rectangles (seeded).

:func:`pixel_program` builds the one-pixel reads for any planes (also used by the LBP code
family); :func:`gradient_magnitude` is the window-border gradient of scikit-image's HOG, kept
for the Fourier family's gradient source.

Examples
--------
>>> import numpy as np
>>> w = np.arange(12, dtype=np.uint8).reshape(1, 3, 4)
>>> PixelFamily((3, 4)).compute(w, [0, 5, 11]).ravel().tolist()
[0.0, 5.0, 11.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba import prange

from vjboost._validation import check_random_state
from vjboost.features.base import (
    FeatureFamily,
    check_window_shape,
    check_windows,
    register_family,
    window_stack,
)
from vjboost.features.channels import MAG_SCALE, ChannelSet
from vjboost.features.program import NORM_NONE, Program

__all__ = [
    "GradientMagnitudeFamily",
    "PatchSumFamily",
    "PixelFamily",
    "PixelRGBFamily",
    "gather_columns",
    "gradient_magnitude",
    "pixel_program",
]

_JIT = {"cache": True, "nogil": True}


# --------------------------------------------------------------------------------------------
# Gather kernel (families whose prepared channels hold one value per feature)
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

    Examples
    --------
    >>> table = np.arange(6, dtype=np.uint8).reshape(2, 3)    # 2 samples x 3 features
    >>> gather_columns(table, np.array([2, 0]), np.array([1, 0, 1])).tolist()
    [[5.0, 2.0, 5.0], [3.0, 0.0, 3.0]]
    """
    out = np.empty((cols.shape[0], sids.shape[0]), dtype=np.float32)
    _gather_columns_kernel(table, cols, sids, out)
    return out


# --------------------------------------------------------------------------------------------
# Gradient magnitude with the window-border convention (Fourier's gradient source)
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

    Examples
    --------
    >>> w = np.zeros((3, 4), np.uint8)
    >>> w[:, 2:] = 40
    >>> gradient_magnitude(w).tolist()         # 0 on the first and last columns (g_col = 0 there)
    [[0.0, 40.0, 40.0, 0.0], [0.0, 40.0, 40.0, 0.0], [0.0, 40.0, 40.0, 0.0]]
    """
    arr, single = window_stack(windows)
    arr = check_windows(arr, arr.shape[1:3])
    out = np.empty(arr.shape, dtype=np.float64)
    _grad_mag_batch(arr, out)
    return out[0] if single else out


# --------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------


def pixel_program(window_shape: Sequence[int], keys: Sequence[str], *, margin: int = 0,
                  scale: float = 1.0, categorical: bool = False) -> Program:
    """One-pixel reads of the planes ``keys`` at every pixel ``margin`` pixels inside the window.

    Feature ``(yi * Wi + xi) * len(keys) + c`` reads plane ``keys[c]`` at pixel
    ``(margin + yi, margin + xi)`` of the ``Hi x Wi`` region (OP_RECTS, one 1x1 rectangle,
    NORM_NONE, times ``scale``).

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)`` of the window in pixels.
    keys : sequence of str
        Channel planes read (keys of :mod:`vjboost.features.channels`, e.g. ``"gray"``).
    margin : int, default 0
        Pixels left out along every border (``Hi = H - 2 margin``, ``Wi = W - 2 margin``).
    scale : float, default 1.0
        Factor applied to every read.
    categorical : bool, default False
        The values are codes (categorical splits).

    Returns
    -------
    Program
        ``Hi * Wi * len(keys)`` features.

    Examples
    --------
    >>> pixel_program((4, 5), ["gradmag"], margin=1).n_features
    6
    """
    h, w = (int(v) for v in window_shape)
    ys, xs = np.mgrid[margin:h - margin, margin:w - margin]
    n_k = len(keys)
    n = ys.size * n_k
    rects = np.ones((n, 1, 4), dtype=np.int64)
    rects[:, 0, 0] = np.repeat(xs.ravel(), n_k)
    rects[:, 0, 1] = np.repeat(ys.ravel(), n_k)
    return Program.rects((h, w), ChannelSet(keys), rects=rects, weights=np.ones((n, 1)),
                         planes=np.tile(np.arange(n_k), ys.size)[:, None], norm=NORM_NONE,
                         scale=scale, categorical=categorical)


class _PerPixelFamily(FeatureFamily):
    """One feature per (pixel, plane) of the window (or of its interior for gradients)."""

    keys: tuple[str, ...] = ("gray",)
    margin: int = 0
    scale: float = 1.0

    def __init__(self, window_shape: Sequence[int] = (24, 24)) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        m = self.margin
        if h <= 2 * m or w <= 2 * m:
            raise ValueError(f"window_shape: a {h}x{w} window has no pixel {m} pixel(s) from "
                             f"its border")
        self.n_features = (h - 2 * m) * (w - 2 * m) * len(self.keys)

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape)}

    def _pixel(self, i: int) -> tuple[int, int, int]:
        p, c = divmod(self._check_index(i), len(self.keys))
        y, x = divmod(p, self.window_shape[1] - 2 * self.margin)
        return y + self.margin, x + self.margin, c

    def _build_program(self) -> Program:
        return pixel_program(self.window_shape, self.keys, margin=self.margin, scale=self.scale)


@register_family
class PixelFamily(_PerPixelFamily):
    """Gray value of each pixel of a gray window.

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)`` in pixels.

    Features: ``H * W``; feature ``i = y * W + x`` is ``window[y, x]`` (0..255 as float32).

    Examples
    --------
    >>> fam = PixelFamily((3, 4))
    >>> fam.n_features, fam.describe(5)["text"]
    (12, 'gray pixel at (x=1, y=1)')
    >>> win = np.arange(12, dtype=np.uint8).reshape(1, 3, 4)
    >>> fam.compute(win, [0, 5, 11]).ravel().tolist()
    [0.0, 5.0, 11.0]
    """

    name = "pixel"

    def describe(self, i: int) -> dict[str, Any]:
        y, x, _ = self._pixel(i)
        return {"family": self.name, "index": int(i), "text": f"gray pixel at (x={x}, y={y})",
                "x": x, "y": y}


_PLANES_RGB = ("R", "G", "B", "gray")


@register_family
class PixelRGBFamily(_PerPixelFamily):
    """Red, green, blue and gray values of each pixel of an RGB window.

    Parameters
    ----------
    window_shape : (int, int)

    Features: ``4 * H * W``; feature ``i = (y * W + x) * 4 + c`` with plane ``c`` in
    ``(R, G, B, gray)``; gray is ``cv2.cvtColor(..., cv2.COLOR_RGB2GRAY)``.

    Examples
    --------
    >>> fam = PixelRGBFamily((2, 2))
    >>> fam.n_features, fam.describe(3)["text"]
    (16, 'gray value at (x=0, y=0)')
    >>> red = np.zeros((1, 2, 2, 3), np.uint8)
    >>> red[..., 0] = 255
    >>> fam.compute(red, [0, 1, 2, 3]).ravel().tolist()   # R, G, B and gray (0.299 * 255, rounded)
    [255.0, 0.0, 0.0, 76.0]
    """

    name = "pixel_rgb"
    color = True
    keys = ("rgb#0", "rgb#1", "rgb#2", "gray")

    def describe(self, i: int) -> dict[str, Any]:
        y, x, c = self._pixel(i)
        return {"family": self.name, "index": int(i),
                "text": f"{_PLANES_RGB[c]} value at (x={x}, y={y})",
                "x": x, "y": y, "plane": _PLANES_RGB[c]}


@register_family
class GradientMagnitudeFamily(_PerPixelFamily):
    """Gradient magnitude at each interior pixel of a gray window (see the module docstring).

    Parameters
    ----------
    window_shape : (int, int)
        At least 3x3.

    Features: ``(H - 2) * (W - 2)``; feature ``i = (y - 1) * (W - 2) + (x - 1)``, value
    ``round(8 * hypot(g_row, g_col)) / 8``.

    Examples
    --------
    >>> fam = GradientMagnitudeFamily((5, 5))
    >>> step = np.zeros((1, 5, 5), np.uint8)
    >>> step[0, :, 3:] = 40                        # an edge between columns 2 and 3
    >>> fam.n_features, fam.compute(step).reshape(3, 3).tolist()   # interior columns 1, 2, 3
    (9, [[0.0, 40.0, 40.0], [0.0, 40.0, 40.0], [0.0, 40.0, 40.0]])
    """

    name = "gradient_magnitude"
    keys = ("gradmag",)
    margin = 1
    scale = 1.0 / MAG_SCALE

    def describe(self, i: int) -> dict[str, Any]:
        y, x, _ = self._pixel(i)
        return {"family": self.name, "index": int(i),
                "text": f"gradient magnitude at (x={x}, y={y})", "x": x, "y": y}


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
class PatchSumFamily(FeatureFamily):
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

    Feature ``i`` is ``window[y:y+h, x:x+w].sum()`` for patch ``i`` (OP_RECTS on ``gray``).

    Examples
    --------
    >>> fam = PatchSumFamily((4, 4), patches=[(0, 0, 2, 2), (0, 0, 4, 4)])
    >>> fam.n_features, fam.describe(0)["text"]
    (2, 'sum of gray values over x=0..1, y=0..1')
    >>> fam.compute(np.ones((1, 4, 4), np.uint8)).ravel().tolist()   # on ones: the patch areas
    [4.0, 16.0]
    >>> PatchSumFamily((8, 8), n_patches=3, seed=0).patches.tolist()   # drawn (x, y, w, h)
    [[3, 0, 3, 7], [3, 2, 4, 6], [3, 3, 2, 5]]
    """

    name = "patch_sum"

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, n_patches: int = 1000,
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

    def _build_program(self) -> Program:
        return Program.rects(self.window_shape, ChannelSet(["gray"]), rects=self.patches[:, None],
                             weights=np.ones((self.n_features, 1)))

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape),
                "patches": self.patches.tolist()}

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        x, y, w, h = (int(v) for v in self.patches[i])
        return {"family": self.name, "index": i, "rect": (x, y, w, h),
                "text": f"sum of gray values over x={x}..{x + w - 1}, y={y}..{y + h - 1}"}

