"""Fourier magnitudes and Haar wavelet coefficients of the window.

``fourier``
    Magnitudes ``|F(u, v)|`` of the 2-D DFT (unnormalized, numpy's convention
    ``F(u, v) = sum_{y, x} I[y, x] exp(-2 pi i (u y / H + v x / W))``) of the window intensities
    and/or of its gradient-magnitude image (:func:`vjboost.features.pixel.gradient_magnitude`),
    for the low-frequency block ``0 <= u < K``, ``-K < v < K`` without the redundant half-row
    ``u = 0, v < 0`` (``|F(-u, -v)| = |F(u, v)|`` for real input): ``K (2K - 1) - (K - 1)``
    features per source. Computed directly (separable DFT restricted to these frequencies, a few
    thousand multiply-adds per window) in numba, parallel over windows.
``haar_wavelet``
    Coefficients of the orthonormal 2-D Haar wavelet transform with ``levels`` levels of the
    top-left ``H' x W'`` part of the window (``H'``, ``W'`` the largest multiples of
    ``2 ** levels``). At level ``l`` (block side ``s = 2 ** l``) the coefficients of block
    ``(i, j)`` are ``2 ** -l`` times: the block sum (approximation, last level only), top half
    minus bottom half (``horizontal`` detail), left half minus right half (``vertical``), and
    top-left + bottom-right - top-right - bottom-left quadrants (``diagonal``, written as the
    block minus twice the top-right and bottom-left quadrants). Each coefficient is a weighted
    sum of at most three rectangles of the ``gray`` plane (a compiled program, OP_RECTS; exact:
    the weights are powers of two). Order: the approximation band, then for
    ``l = levels .. 1`` the horizontal, vertical and diagonal bands, each row-major.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba import prange

from vjboost._memory import check_memory
from vjboost.features.base import Channels, FeatureFamily, check_window_shape, register_family
from vjboost.features.channels import ChannelSet
from vjboost.features.pixel import _window_grad, gather_columns
from vjboost.features.program import Program

__all__ = ["FOURIER_SOURCES", "FourierFamily", "HaarWaveletFamily", "haar_wavelet_bands"]

_JIT = {"cache": True, "nogil": True}

FOURIER_SOURCES = ("intensity", "gradient")


@numba.njit(parallel=True, **_JIT)
def _dft_kernel(stack, sidx, pos, h, w, src_grad, us, vs, fu, fv, cos_h, sin_h, cos_w, sin_w,
                out):  # pragma: no cover - numba
    """out[p, k] = |F(us[fu[k]], vs[fv[k]])| of the source window p.

    Window p is ``stack[sidx[p], y0:y0 + h, x0:x0 + w]``; the source is the intensity or (when
    ``src_grad``) the window gradient magnitude. Twiddles: cos_h[(u * y) % h] etc.
    """
    n_u = us.shape[0]
    n_v = vs.shape[0]
    n_f = fu.shape[0]
    for p in prange(sidx.shape[0]):
        img = stack[sidx[p]]
        y0 = pos[p, 0]
        x0 = pos[p, 1]
        src = np.empty((h, w))
        for y in range(h):
            for x in range(w):
                if src_grad:
                    gr, gc = _window_grad(img, y0, x0, h, w, y, x)
                    src[y, x] = math.sqrt(gr * gr + gc * gc)
                else:
                    src[y, x] = np.float64(img[y0 + y, x0 + x])
        re = np.zeros((h, n_v))
        im = np.zeros((h, n_v))
        for y in range(h):
            for j in range(n_v):
                v = vs[j]
                sr = 0.0
                si = 0.0
                for x in range(w):
                    t = (v * x) % w
                    sr += src[y, x] * cos_w[t]
                    si -= src[y, x] * sin_w[t]
                re[y, j] = sr
                im[y, j] = si
        fre = np.zeros((n_u, n_v))
        fim = np.zeros((n_u, n_v))
        for i in range(n_u):
            u = us[i]
            for y in range(h):
                t = (u * y) % h
                c = cos_h[t]
                s = sin_h[t]
                for j in range(n_v):
                    # (re + i im) * (c - i s)
                    fre[i, j] += re[y, j] * c + im[y, j] * s
                    fim[i, j] += im[y, j] * c - re[y, j] * s
        for k in range(n_f):
            a = fre[fu[k], fv[k]]
            b = fim[fu[k], fv[k]]
            out[p, k] = np.float32(math.sqrt(a * a + b * b))


@register_family
class FourierFamily(FeatureFamily):
    """Low-frequency DFT magnitudes of the window intensities and/or gradient magnitudes.

    Parameters
    ----------
    window_shape : (int, int)
    size : int, default=6
        ``K``: frequencies ``0 <= u < K``, ``|v| < K`` (``K <= (min(H, W) + 1) // 2``).
    sources : sequence of {"intensity", "gradient"}, default=("intensity", "gradient")

    Features: ``len(sources) * (K (2K - 1) - (K - 1))``; feature ``i`` is source
    ``i // n_per_source``, frequency ``freqs[i % n_per_source]`` (``(u, v)`` pairs, ``u`` major,
    ``v`` increasing).

    Examples
    --------
    >>> fam = FourierFamily((8, 8), size=2, sources="intensity")
    >>> fam.n_features, fam.freqs.tolist()
    (5, [[0, 0], [0, 1], [1, -1], [1, 0], [1, 1]])
    >>> half = np.zeros((1, 8, 8), np.uint8)
    >>> half[0, :, 4:] = 10                  # a vertical edge: nothing varies down the columns
    >>> [round(float(v), 2) for v in fam.compute(half).ravel()]   # |F(0, 0)|: the pixel sum
    [320.0, 209.05, 0.0, 0.0, 0.0]
    """

    name = "fourier"

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, size: int = 6,
                 sources: Sequence[str] = FOURIER_SOURCES) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        k_max = (min(h, w) + 1) // 2
        if isinstance(size, bool) or not isinstance(size, int | np.integer) \
                or not 1 <= size <= k_max:
            raise ValueError(f"size: expected an integer in 1..{k_max} for a {h}x{w} window, "
                             f"got {size!r}")
        self.size = int(size)
        if isinstance(sources, str):
            sources = (sources,)
        src = list(dict.fromkeys(sources))
        if not src or any(s not in FOURIER_SOURCES for s in src):
            raise ValueError(f"sources: expected a non-empty subset of {FOURIER_SOURCES}, got "
                             f"{sources!r}")
        self.sources = src
        k = self.size
        self.freqs = np.array([(u, v) for u in range(k) for v in range(-k + 1, k)
                               if not (u == 0 and v < 0)], dtype=np.int64)
        self._per_source = int(self.freqs.shape[0])
        self.n_features = self._per_source * len(self.sources)
        self._us = np.arange(k, dtype=np.int64)
        self._vs = np.arange(-k + 1, k, dtype=np.int64) % w
        self._fu = np.ascontiguousarray(self.freqs[:, 0])
        self._fv = np.ascontiguousarray(self.freqs[:, 1] + k - 1)
        self._cos_h = np.cos(2 * np.pi * np.arange(h) / h)
        self._sin_h = np.sin(2 * np.pi * np.arange(h) / h)
        self._cos_w = np.cos(2 * np.pi * np.arange(w) / w)
        self._sin_w = np.sin(2 * np.pi * np.arange(w) / w)

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape), "size": self.size,
                "sources": list(self.sources)}

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        s, k = divmod(i, self._per_source)
        u, v = (int(t) for t in self.freqs[k])
        return {"family": self.name, "index": i, "source": self.sources[s], "u": u, "v": v,
                "text": f"|DFT| of the window {self.sources[s]} at frequency (u={u}, v={v})"}

    def channels_nbytes(self, n_samples: int) -> int:
        return int(n_samples) * self.n_features * 4

    def _compute(self, stack: np.ndarray, sidx: np.ndarray, pos: np.ndarray) -> np.ndarray:
        h, w = self.window_shape
        out = np.empty((sidx.shape[0], self.n_features), dtype=np.float32)
        for s, name in enumerate(self.sources):
            part = np.empty((sidx.shape[0], self._per_source), dtype=np.float32)
            _dft_kernel(stack, sidx, pos, h, w, name == "gradient", self._us, self._vs,
                        self._fu, self._fv, self._cos_h, self._sin_h, self._cos_w, self._sin_w,
                        part)
            out[:, s * self._per_source:(s + 1) * self._per_source] = part
        return out

    # the generic (non-program) path: a table of every feature per window

    def _prepare(self, windows: np.ndarray) -> Channels:
        n = windows.shape[0]
        table = self._compute(windows, np.arange(n, dtype=np.int64), np.zeros((n, 2), np.int64))
        return Channels(self.name, "windows", self.window_shape, n, {"values": table})

    def _evaluate(self, channels: Channels, feature_ids: np.ndarray,
                  sample_ids: np.ndarray) -> np.ndarray:
        return gather_columns(channels["values"], feature_ids, sample_ids)

    def _prepare_image(self, image: np.ndarray) -> Channels:
        return Channels(self.name, "image", image.shape[:2], 1, {"image": image[None]})

    def _evaluate_at(self, channels: Channels, feature_ids: np.ndarray,
                     positions: np.ndarray) -> np.ndarray:
        check_memory(positions.shape[0] * self.n_features * 4, "Fourier features at positions")
        table = self._compute(channels["image"], np.zeros(positions.shape[0], np.int64),
                              positions)
        return gather_columns(table, feature_ids, np.arange(positions.shape[0], dtype=np.int64))


_BANDS = ("approximation", "horizontal", "vertical", "diagonal")


def haar_wavelet_bands(
    window_shape: tuple[int, int], levels: int
) -> list[tuple[str, int, int, int]]:
    """Band layout ``(band, level, rows, cols)`` in feature order.

    The window is cropped to a multiple of ``2**levels``; the approximation of the coarsest
    level comes first, then the horizontal, vertical and diagonal details from the coarsest
    level to the finest.

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)`` in pixels.
    levels : int
        Decomposition levels.

    Returns
    -------
    list of (str, int, int, int)
        ``1 + 3 levels`` bands, each ``rows x cols`` coefficients.

    Examples
    --------
    >>> haar_wavelet_bands((8, 8), 2)[:2]
    [('approximation', 2, 2, 2), ('horizontal', 2, 2, 2)]
    >>> len(haar_wavelet_bands((8, 8), 2))
    7
    """
    h, w = window_shape
    s = 2**levels
    hh, ww = h - h % s, w - w % s
    out = [("approximation", levels, hh // s, ww // s)]
    for lev in range(levels, 0, -1):
        for band in _BANDS[1:]:
            out.append((band, lev, hh >> lev, ww >> lev))
    return out


@register_family
class HaarWaveletFamily(FeatureFamily):
    """Orthonormal 2-D Haar wavelet coefficients of the window (see the module docstring).

    Parameters
    ----------
    window_shape : (int, int)
    levels : int, default=3
        Decomposition depth; the window must be at least ``2 ** levels`` pixels on each side.

    Features: ``H' * W'`` (the coefficients of an orthonormal transform of the ``H' x W'`` part).

    Examples
    --------
    >>> fam = HaarWaveletFamily((4, 4), levels=1)
    >>> fam.n_features, [band for band, *_ in fam.bands]
    (16, ['approximation', 'horizontal', 'vertical', 'diagonal'])
    >>> stripes = np.tile(np.array([0, 8, 0, 8], np.uint8), (4, 1))[None]   # vertical stripes
    >>> fam.compute(stripes).reshape(4, 4).tolist()   # one row per band: 2x2 blocks, times 1/2
    [[8.0, 8.0, 8.0, 8.0], [0.0, 0.0, 0.0, 0.0], [-8.0, -8.0, -8.0, -8.0], [0.0, 0.0, 0.0, 0.0]]
    """

    name = "haar_wavelet"

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, levels: int = 3) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        if isinstance(levels, bool) or not isinstance(levels, int | np.integer) or levels < 1 \
                or 2**levels > min(h, w):
            raise ValueError(f"levels: expected an integer >= 1 with 2**levels <= {min(h, w)}, "
                             f"got {levels!r}")
        self.levels = int(levels)
        self.bands = haar_wavelet_bands(self.window_shape, self.levels)
        rects, info = [], []
        for band, lev, nr, nc in self.bands:
            s = 2**lev
            half = s // 2
            wt = 2.0**-lev
            for i in range(nr):
                for j in range(nc):
                    x, y = j * s, i * s
                    if band == "approximation":
                        rr = [(x, y, s, s, wt)]
                    elif band == "horizontal":
                        rr = [(x, y, s, half, wt), (x, y + half, s, half, -wt)]
                    elif band == "vertical":
                        rr = [(x, y, half, s, wt), (x + half, y, half, s, -wt)]
                    else:
                        # TL + BR - TR - BL = block - 2 TR - 2 BL (three rectangles)
                        rr = [(x, y, s, s, wt), (x + half, y, half, half, -2 * wt),
                              (x, y + half, half, half, -2 * wt)]
                    rects.append(rr)
                    info.append((band, lev, i, j))
        n = len(rects)
        self._rects = np.ones((n, 3, 4), dtype=np.int64)
        self._weights = np.zeros((n, 3))
        for k, rr in enumerate(rects):
            for r, (x, y, rw, rh, wt) in enumerate(rr):
                self._rects[k, r] = (x, y, rw, rh)
                self._weights[k, r] = wt
        self._info = info
        self.n_features = n

    def _build_program(self) -> Program:
        return Program.rects(self.window_shape, ChannelSet(["gray"]), rects=self._rects,
                             weights=self._weights)

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape), "levels": self.levels}

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        band, lev, bi, bj = self._info[i]
        s = 2**lev
        rects = [(int(r[0]), int(r[1]), int(r[2]), int(r[3]), float(wt))
                 for r, wt in zip(self._rects[i], self._weights[i], strict=True) if wt != 0]
        return {"family": self.name, "index": i, "band": band, "level": lev,
                "block": (bi, bj), "rects": rects,
                "text": f"Haar wavelet {band} coefficient, level {lev}, block ({bi}, {bj}) at "
                        f"x={bj * s}, y={bi * s} ({s}x{s} pixels)"}
