"""Per-pixel local binary pattern (LBP) codes and LBP-code histograms.

:func:`local_binary_pattern` computes the codes of every pixel exactly as
``skimage.feature.local_binary_pattern(image, P, R, method)`` does for the methods ``"default"``,
``"ror"``, ``"uniform"`` and ``"nri_uniform"``: ``P`` neighbours on a circle of radius ``R`` at
angles ``2 pi p / P`` (row offset ``-R sin``, column offset ``R cos``, both rounded to 5 decimals),
sampled by bilinear interpolation with zero outside the image; neighbour ``p`` sets bit ``p`` when
its value is ``>=`` the centre.

* ``default``: ``sum_p bit_p 2^p`` (``2^P`` codes);
* ``ror``: the smallest value over the ``P`` circular rotations of the default code;
* ``uniform``: number of set bits if the pattern has at most two 0/1 transitions, else ``P + 1``
  (``P + 2`` codes, rotation invariant);
* ``nri_uniform``: ``P (P - 1) + 3`` codes, one per uniform pattern (not rotation invariant)
  and one for all non-uniform patterns.

Feature families
----------------
Codes near the window border depend on pixels outside the window (zero there inside a window,
the real neighbours inside an image). Both families therefore only use the *inner region* of the
window, ``margin = ceil(R)`` pixels away from its border: there a code depends on window pixels
only, so a window cut out of an image and the same window evaluated in place
(``evaluate_at``) give identical values.

The families interpolate as ``a + d (b - a)`` with fractions ``d`` that do not depend on the pixel
position. scikit-image's arithmetic (``(1 - d) a + d b`` with ``d`` taken from the rounded sum
``position + offset``) differs only in the last bits, which matters only for exact ties on flat
neighbourhoods: there it may set a bit at some image positions and not at others, while ours
always sets it (a flat neighbourhood equals its centre). Elsewhere the codes are identical (tested
on random windows); :func:`local_binary_pattern` keeps scikit-image's arithmetic bit for bit.

``lbp_code``
    The code at each pixel of the inner region (categorical when codes fit in 0..255).
``lbp_hist``
    The fraction of the pixels of a rectangle whose code falls into each histogram bin, for
    rectangles of grid divisions of the inner region, evaluated with one integral image per bin
    and the generic rectangle-sum kernel (see :mod:`vjboost.features.histogram`). Bins: the
    codes themselves for ``uniform`` and ``nri_uniform``, the distinct rotation-invariant codes
    (in increasing order) for ``ror``, all ``2^P`` codes for ``default`` (``P <= 8``).

This is the texture descriptor of Ahonen et al.: local histograms of uniform LBP codes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba import prange

from vjboost._errors import InputError
from vjboost.features.base import (
    FeatureFamily,
    check_window_shape,
    check_windows,
    register_family,
    window_stack,
)
from vjboost.features.channels import ChannelKind, gray_of, register_channel_kind
from vjboost.features.histogram import LabelHistogramFamily, grid_rects
from vjboost.features.pixel import pixel_program
from vjboost.features.program import Program

__all__ = [
    "LBP_METHODS",
    "LBPCodeFamily",
    "LBPHistogramFamily",
    "lbp_code_count",
    "lbp_offsets",
    "local_binary_pattern",
]

_JIT = {"cache": True, "nogil": True}

LBP_METHODS = {"default": 0, "ror": 1, "uniform": 2, "nri_uniform": 3}


def _check_params(P: Any, R: Any, method: Any) -> tuple[int, float, str]:
    if isinstance(P, bool) or not isinstance(P, int | np.integer) or not 1 <= P <= 24:
        raise ValueError(f"P: expected an integer number of neighbours in 1..24, got {P!r}")
    try:
        r = float(R)
    except (TypeError, ValueError):
        raise ValueError(f"R: expected a positive radius, got {R!r}") from None
    if not (math.isfinite(r) and r > 0):
        raise ValueError(f"R: expected a positive finite radius, got {R!r}")
    if method not in LBP_METHODS:
        raise ValueError(f"method: expected one of {sorted(LBP_METHODS)}, got {method!r}")
    return int(P), r, method


def lbp_offsets(P: int, R: float) -> tuple[np.ndarray, np.ndarray]:
    """Row and column offsets of the ``P`` sampling points (rounded to 5 decimals), float64.

    Point ``p`` is at angle ``2 pi p / P``: row ``-R sin``, column ``R cos`` (scikit-image's
    ``local_binary_pattern`` layout).

    Parameters
    ----------
    P : int
        Sampling points on the circle.
    R : float
        Radius in pixels.

    Returns
    -------
    rows, cols : ndarray of shape (P,), float64

    Examples
    --------
    >>> [r.tolist() for r in lbp_offsets(4, 1.0)]
    [[-0.0, -1.0, -0.0, 1.0], [1.0, 0.0, -1.0, -0.0]]
    """
    angles = 2 * np.pi * np.arange(P, dtype=np.float64) / P
    return np.round(-R * np.sin(angles), 5), np.round(R * np.cos(angles), 5)


def lbp_code_count(P: int, method: str) -> int:
    """Number of distinct code values (``max code + 1`` for ``ror``).

    Parameters
    ----------
    P : int
        Sampling points on the circle.
    method : {"default", "ror", "uniform", "nri_uniform"}
        The code (scikit-image's ``local_binary_pattern`` methods).

    Returns
    -------
    int
        ``P + 2`` (uniform), ``P (P - 1) + 3`` (nri_uniform), else ``2**P``.

    Examples
    --------
    >>> [lbp_code_count(8, m) for m in ("default", "ror", "uniform", "nri_uniform")]
    [256, 256, 10, 59]
    """
    if method == "uniform":
        return P + 2
    if method == "nri_uniform":
        return P * (P - 1) + 3
    return 2**P


@numba.njit(**_JIT)
def _pixel(img, r, c):  # pragma: no cover - numba
    if r < 0 or c < 0 or r >= img.shape[0] or c >= img.shape[1]:
        return 0.0
    return np.float64(img[r, c])


@numba.njit(**_JIT)
def _sample_tables(offsets, n, reference):  # pragma: no cover - numba
    """floor, ceil and fraction of ``k + offsets[i]`` for k in 0..n-1.

    ``reference``: the fraction is computed from the rounded sum ``k + offset`` as
    scikit-image does, so interpolated values are bit-identical to it (but depend, in their last
    bits, on the absolute position ``k``). Otherwise the fraction is ``offset - floor(offset)``
    for every ``k``: the codes then do not depend on where the window lies in the image.
    """
    n_p = offsets.shape[0]
    lo = np.empty((n_p, n), dtype=np.int64)
    hi = np.empty((n_p, n), dtype=np.int64)
    frac = np.empty((n_p, n))
    for i in range(n_p):
        off = offsets[i]
        f0 = math.floor(off)
        c0 = math.ceil(off)
        for k in range(n):
            if reference:
                pos = k + off
                f = math.floor(pos)
                lo[i, k] = np.int64(f)
                hi[i, k] = np.int64(math.ceil(pos))
                frac[i, k] = pos - f
            else:
                lo[i, k] = k + np.int64(f0)
                hi[i, k] = k + np.int64(c0)
                frac[i, k] = off - f0
    return lo, hi, frac


@numba.njit(**_JIT)
def _finish_code(code, n_p, method):  # pragma: no cover - numba
    """Map the raw bit pattern (bit p = neighbour p >= centre) to the code of ``method``."""
    if method == 0:
        return code
    if method == 1:
        best = code
        v = code
        for _ in range(n_p - 1):
            v = (v >> 1) | ((v & 1) << (n_p - 1))
            if v < best:
                best = v
        return best
    # transitions between neighbours p and p + 1 for p < P - 1 (not circular, as the reference)
    t = (code ^ (code >> 1)) & ((1 << (n_p - 1)) - 1)
    changes = 0
    while t:
        t &= t - 1
        changes += 1
    n_ones = 0
    t = code
    while t:
        t &= t - 1
        n_ones += 1
    if method == 2:
        return n_ones if changes <= 2 else n_p + 1
    if changes > 2:
        return n_p * (n_p - 1) + 2
    if n_ones == 0:
        return 0
    if n_ones == n_p:
        return n_p * (n_p - 1) + 1
    first_one = 0
    while not (code >> first_one) & 1:
        first_one += 1
    first_zero = 0
    while (code >> first_zero) & 1:
        first_zero += 1
    rot = n_ones - first_zero if first_one == 0 else n_p - first_one
    return 1 + (n_ones - 1) * n_p + rot


@numba.njit(**_JIT)
def _pattern(img, y, x, r0t, r1t, drt, c0t, c1t, dct, inside,
             reference):  # pragma: no cover - numba
    """Raw bit pattern of pixel (y, x): bit p set when neighbour p is >= the centre.

    ``reference``: scikit-image's bilinear arithmetic ``(1 - d) a + d b``; otherwise
    ``a + d (b - a)``, which is exact on flat neighbourhoods (``a == b``), so a flat region gives
    the same bits wherever it lies.
    """
    centre = np.float64(img[y, x])
    code = 0
    for i in range(r0t.shape[0]):
        r0 = r0t[i, y]
        r1 = r1t[i, y]
        c0 = c0t[i, x]
        c1 = c1t[i, x]
        dr = drt[i, y]
        dc = dct[i, x]
        if inside and dr == 0.0 and dc == 0.0:
            # bilinear weights of exactly 1 and 0 leave the pixel value unchanged
            value = np.float64(img[r0, c0])
        else:
            if inside:
                a = np.float64(img[r0, c0])
                b = np.float64(img[r0, c1])
                c = np.float64(img[r1, c0])
                d = np.float64(img[r1, c1])
            else:
                a = _pixel(img, r0, c0)
                b = _pixel(img, r0, c1)
                c = _pixel(img, r1, c0)
                d = _pixel(img, r1, c1)
            if reference:
                top = (1 - dc) * a + dc * b
                bottom = (1 - dc) * c + dc * d
                value = (1 - dr) * top + dr * bottom
            else:
                top = a + dc * (b - a)
                bottom = c + dc * (d - c)
                value = top + dr * (bottom - top)
        if value - centre >= 0:
            code |= np.int64(1) << i
    return code


@numba.njit(parallel=True, **_JIT)
def _lbp_batch(imgs, rp, cp, method, lut, reference, out):  # pragma: no cover - numba
    # out[s, 0, y, x] = lut[code] (lut of length 0 → the code itself)
    n, h, w = imgs.shape
    n_p = rp.shape[0]
    use_lut = lut.shape[0] > 0
    r0t, r1t, drt = _sample_tables(rp, h, reference)
    c0t, c1t, dct = _sample_tables(cp, w, reference)
    # pixels whose sampling points all lie inside the image need no bounds checks
    m = 0
    for i in range(n_p):
        m = max(m, -r0t[i, 0], -c0t[i, 0], r1t[i, 0], c1t[i, 0])
    for s in prange(n):
        img = imgs[s]
        for y in range(h):
            y_in = m <= y < h - m
            for x in range(w):
                inside = y_in and m <= x < w - m
                bits = _pattern(img, y, x, r0t, r1t, drt, c0t, c1t, dct, inside, reference)
                code = _finish_code(bits, n_p, method)
                out[s, 0, y, x] = lut[code] if use_lut else code


def _codes(stack: np.ndarray, P: int, R: float, method: str,
           lut: np.ndarray | None = None, reference: bool = False) -> np.ndarray:
    """int32 codes (N, 1, H, W) of a uint8 stack (N, H, W); see :func:`_pattern`."""
    rp, cp = lbp_offsets(P, R)
    out = np.empty((stack.shape[0], 1) + stack.shape[1:], dtype=np.int32)
    lut_arr = np.zeros(0, dtype=np.int32) if lut is None else lut
    _lbp_batch(np.ascontiguousarray(stack), rp, cp, LBP_METHODS[method], lut_arr,
               bool(reference), out)
    return out


def local_binary_pattern(image: Any, P: int = 8, R: float = 1.0,
                         method: str = "default") -> np.ndarray:
    """LBP codes of every pixel of a gray image (or of each image of a stack).

    Parameters
    ----------
    image : array-like (H, W) or (N, H, W), uint8
    P : int, default=8
        Number of circular neighbours (1..24).
    R : float, default=1.0
        Radius in pixels.
    method : {"default", "ror", "uniform", "nri_uniform"}

    Returns
    -------
    ndarray of int32, same shape as ``image``
        Equal to ``skimage.feature.local_binary_pattern(image, P, R, method)`` (which returns
        float64).

    Examples
    --------
    >>> img = np.full((3, 3), 50, np.uint8)
    >>> img[1, 1] = 40                    # a dark centre: every neighbour is >= it
    >>> int(local_binary_pattern(img)[1, 1]), int(local_binary_pattern(img, method="uniform")[1, 1])
    (255, 8)
    >>> img[1, 1] = 60                    # a bright centre: none is
    >>> int(local_binary_pattern(img)[1, 1])
    0
    >>> local_binary_pattern(np.zeros((2, 5, 5), np.uint8)).shape   # a stack: codes per image
    (2, 5, 5)
    """
    P, R, method = _check_params(P, R, method)
    arr, single = window_stack(image, name="image")
    arr = check_windows(arr, arr.shape[1:3], name="image")
    out = _codes(arr, P, R, method, reference=True)[:, 0]
    return out[0] if single else out


def _margin(rp: np.ndarray, cp: np.ndarray) -> int:
    return int(math.ceil(max(np.abs(rp).max(), np.abs(cp).max())))


def _ror_codes(P: int) -> np.ndarray:
    codes = np.arange(2**P, dtype=np.int64)
    best = codes.copy()
    v = codes.copy()
    for _ in range(P - 1):
        v = (v >> 1) | ((v & 1) << (P - 1))
        best = np.minimum(best, v)
    return best


def _histogram_bins(P: int, method: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The code(s) of each histogram bin and the code → bin table (None: bin = code)."""
    if method == "ror":
        ror = _ror_codes(P)
        bins = np.unique(ror)
        return bins, np.searchsorted(bins, ror).astype(np.int32)
    return np.arange(lbp_code_count(P, method)), None


# -- channel kinds: ``lbp(P,R,method)`` (the code plane) and ``lbphist(P,R,method)`` (one
# indicator plane per histogram bin); both valid ``ceil(R)`` pixels inside a window

def _kind_params(params: tuple) -> tuple[int, float, str]:
    if len(params) != 3:
        raise InputError(f"lbp: expected (P, R, method), got {params}")
    try:
        return _check_params(*params)
    except ValueError as exc:
        raise InputError(f"lbp channel {params}: {exc}") from None


def _kind_margin(params: tuple) -> int:
    return _margin(*lbp_offsets(*_kind_params(params)[:2]))


def _code_plane(images: np.ndarray, params: tuple) -> np.ndarray:
    return _codes(gray_of(images), *_kind_params(params))


def _hist_planes(params: tuple) -> int:
    P, _, method = _kind_params(params)
    if method in ("default", "ror") and P > 8:
        raise InputError(f"lbphist: histograms of {method!r} codes need P <= 8 (at most 256 "
                         f"bins), got {P}; use method='uniform' or 'nri_uniform'")
    return len(_histogram_bins(P, method)[0])


def _hist_labels(images: np.ndarray, params: tuple) -> np.ndarray:
    P, R, method = _kind_params(params)
    return _codes(gray_of(images), P, R, method, _histogram_bins(P, method)[1])


register_channel_kind(ChannelKind.from_planes(
    "lbp", lambda p: 1, _code_plane, margin=_kind_margin,
    max_value=lambda p: lbp_code_count(*_kind_params(p)[::2]) - 1))
register_channel_kind(ChannelKind.from_labels("lbphist", _hist_planes, _hist_labels,
                                              margin=_kind_margin))


class _LBPBase:
    """Parameter handling shared by both LBP families."""

    def _init_lbp(self, window_shape: Any, P: Any, R: Any, method: Any) -> None:
        self.window_shape = check_window_shape(window_shape)
        self.P, self.R, self.method = _check_params(P, R, method)
        rp, cp = lbp_offsets(self.P, self.R)
        self.margin = _margin(rp, cp)
        h, w = self.window_shape
        if h <= 2 * self.margin or w <= 2 * self.margin:
            raise ValueError(
                f"window_shape: a {h}x{w} window has no pixel at distance >= {self.margin} "
                f"from its border (needed by radius R={self.R})")

    def _params(self) -> str:
        return f"{self.P},{self.R!r},{self.method}"

    def get_config(self) -> dict[str, Any]:
        cfg = {"window_shape": list(self.window_shape), "P": self.P, "R": self.R,
               "method": self.method}
        grids = getattr(self, "grids", None)
        return cfg if grids is None else {**cfg, "grids": grids}


@register_family
class LBPCodeFamily(_LBPBase, FeatureFamily):
    """LBP code at each pixel of the window's inner region.

    Parameters
    ----------
    window_shape : (int, int)
    P : int, default=8
    R : float, default=1.0
    method : {"default", "ror", "uniform", "nri_uniform"}, default="uniform"

    Features: ``(H - 2m) * (W - 2m)`` with ``m = ceil(R)``; feature ``i = yi * (W - 2m) + xi`` is
    the code of window pixel ``(m + yi, m + xi)`` (a one-pixel read of the code plane
    ``lbp(P,R,method)``). Categorical (``kind == "categorical"``) when every code is below 256,
    else ordered.

    Examples
    --------
    >>> fam = LBPCodeFamily((5, 5))              # the 3x3 inner region: 9 codes
    >>> fam.n_features, fam.kind(0), fam.describe(0)["text"]
    (9, 'categorical', 'LBP code (uniform, P=8, R=1.0) at (x=1, y=1)')
    >>> dot = np.full((1, 5, 5), 50, np.uint8)
    >>> dot[0, 2, 2] = 200                       # no neighbour of this pixel is >= it: code 0
    >>> fam.compute(dot).reshape(3, 3).tolist()  # every neighbour of the others is: code 8
    [[8.0, 8.0, 8.0], [8.0, 0.0, 8.0], [8.0, 8.0, 8.0]]
    """

    name = "lbp_code"
    n_categories = 256

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, P: int = 8, R: float = 1.0,
                 method: str = "uniform") -> None:
        self._init_lbp(window_shape, P, R, method)
        h, w = self.window_shape
        self._iw = w - 2 * self.margin
        self.n_features = (h - 2 * self.margin) * self._iw

    def _build_program(self) -> Program:
        return pixel_program(self.window_shape, [f"lbp({self._params()})"], margin=self.margin,
                             categorical=lbp_code_count(self.P, self.method) <= 256)

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        yi, xi = divmod(i, self._iw)
        y, x = yi + self.margin, xi + self.margin
        return {"family": self.name, "index": i, "x": x, "y": y,
                "text": f"LBP code ({self.method}, P={self.P}, R={self.R}) at (x={x}, y={y})"}


@register_family
class LBPHistogramFamily(_LBPBase, LabelHistogramFamily):
    """Histograms of LBP codes over grid cells of the window's inner region.

    Parameters
    ----------
    window_shape : (int, int)
    P : int, default=8
    R : float, default=1.0
    method : {"default", "ror", "uniform", "nri_uniform"}, default="uniform"
        At most 256 histogram bins: ``default`` and ``ror`` need ``P <= 8``.
    grids : sequence of (rows, cols), default=((1, 1), (2, 2), (3, 3))
        Grid divisions of the inner region (see :func:`~vjboost.features.histogram.grid_rects`).

    Features: ``n_rects * n_bins``; feature ``rect * n_bins + b`` is the fraction of the
    rectangle's pixels whose code falls into bin ``b`` (``bin_codes[b]`` lists the code(s));
    indicator planes ``lbphist(P,R,method)#b``.

    Examples
    --------
    >>> fam = LBPHistogramFamily((6, 6), grids=[(1, 1)])   # one histogram of the 4x4 inner region
    >>> fam.n_features, fam.bin_codes.tolist()
    (10, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    >>> flat = np.full((1, 6, 6), 50, np.uint8)            # flat: every uniform code is 8
    >>> fam.compute(flat).ravel().tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    """

    name = "lbp_hist"

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, P: int = 8, R: float = 1.0,
                 method: str = "uniform",
                 grids: Sequence[Sequence[int]] = ((1, 1), (2, 2), (3, 3))) -> None:
        self._init_lbp(window_shape, P, R, method)
        if self.method in ("default", "ror") and self.P > 8:
            raise ValueError(
                f"P: histograms of {self.method!r} codes need P <= 8 (at most 256 bins), got "
                f"{self.P}; use method='uniform' or 'nri_uniform'")
        self.bin_codes = _histogram_bins(self.P, self.method)[0]
        self.grids = [[int(v) for v in g] for g in grids]
        rects = grid_rects(self.window_shape, self.grids, margin=self.margin)
        self._setup(rects, [f"lbphist({self._params()})#{b}" for b in range(len(self.bin_codes))])

    def _channel_text(self, c: int) -> str:
        return f"LBP code ({self.method}, P={self.P}, R={self.R}) {int(self.bin_codes[c])}"
