"""Intensity and colour histograms over sub-rectangles of the window (integral histograms).

Every pixel gets one *label* per histogram plane (its bin); each label value is an indicator
channel plane (channel kinds registered here: ``ghist(bins)`` for gray levels,
``chist(space,bins,joint)`` for colours), and the integral of each indicator plane turns "how
many pixels of the rectangle fall into bin ``b``" into one rectangle sum. A feature is the
*fraction* of the rectangle's pixels in a bin (OP_RECTS: the count times ``float32(1 / area)``),
so features over rectangles of different sizes are comparable.

Families
--------
``intensity_hist`` (gray windows)
    Histogram of gray values with ``bins`` equal bins over 0..255.
``color_hist`` (RGB windows)
    Colour space ``"rgb"``, ``"hsv"``, ``"luv"`` (8-bit OpenCV conversions,
    ``cv2.cvtColor(..., COLOR_RGB2HSV / COLOR_RGB2Luv)``: H in 0..179, the other channels in 0..255)
    or ``"gray"`` (``COLOR_RGB2GRAY``); *per-channel* histograms (``joint=False``: ``bins`` bins for
    each channel) or one *joint* histogram (``joint=True``: ``bins ** 3`` cells).

A value ``v`` of a channel with range ``n`` (256, or 180 for hue) falls into bin
``v * bins // n``.

Rectangles: ``grids`` lists ``(rows, cols)`` divisions of the window; grid ``(r, c)`` cuts it into
``r x c`` cells with boundaries ``round(k * H / r)`` (``(1, 1)`` is the whole window). Feature
``i = rect * n_channels + channel``, rectangles in grid order then row-major.

The label-histogram base (:class:`LabelHistogramFamily`, :func:`grid_rects`) is shared with the
LBP-code histograms of :mod:`vjboost.features.lbp`.

Examples
--------
>>> import numpy as np
>>> fam = IntensityHistogramFamily((8, 8), bins=4, grids=[(1, 1)])
>>> half = np.zeros((1, 8, 8), np.uint8)
>>> half[0, :, 4:] = 255
>>> fam.compute(half).ravel().tolist()
[0.5, 0.0, 0.0, 0.5]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numba
import numpy as np
from numba import prange

from vjboost._errors import InputError
from vjboost.features.base import FeatureFamily, check_window_shape, register_family
from vjboost.features.channels import ChannelKind, ChannelSet, gray_of, register_channel_kind
from vjboost.features.program import Program

__all__ = [
    "COLOR_SPACES",
    "ColorHistogramFamily",
    "IntensityHistogramFamily",
    "LabelHistogramFamily",
    "color_labels",
    "convert_color",
    "grid_rects",
]

_JIT = {"cache": True, "nogil": True}

#: colour spaces of ``color_hist``: name → (cv2 code or None, channel names, channel ranges)
COLOR_SPACES: dict[str, tuple[int | None, tuple[str, ...], tuple[int, ...]]] = {
    "rgb": (None, ("R", "G", "B"), (256, 256, 256)),
    "hsv": (cv2.COLOR_RGB2HSV, ("H", "S", "V"), (180, 256, 256)),
    "luv": (cv2.COLOR_RGB2Luv, ("L", "u", "v"), (256, 256, 256)),
    "gray": (cv2.COLOR_RGB2GRAY, ("gray",), (256,)),
}


# --------------------------------------------------------------------------------------------
# Shared machinery
# --------------------------------------------------------------------------------------------


def grid_rects(
    window_shape: tuple[int, int], grids: Any, margin: int = 0
) -> np.ndarray:
    """Rectangles ``(x, y, w, h)`` of grid divisions of a window's inner region.

    Parameters
    ----------
    window_shape : (H, W)
    grids : sequence of (rows, cols)
        Each grid cuts the region ``[margin, H - margin) x [margin, W - margin)`` into
        ``rows x cols`` cells with boundaries ``margin + round(k * h / rows)``.
    margin : int
        Border excluded from every rectangle (pixels).

    Returns
    -------
    ndarray of int64, shape (n_rects, 4)

    Examples
    --------
    >>> grid_rects((8, 8), [(1, 1), (2, 2)]).tolist()   # the whole window, then its quarters
    [[0, 0, 8, 8], [0, 0, 4, 4], [4, 0, 4, 4], [0, 4, 4, 4], [4, 4, 4, 4]]
    >>> grid_rects((8, 8), [(1, 2)], margin=1).tolist()
    [[1, 1, 3, 6], [4, 1, 3, 6]]
    """
    h, w = window_shape
    ih, iw = h - 2 * margin, w - 2 * margin
    try:
        grid_list = [tuple(int(v) for v in g) for g in grids]
    except (TypeError, ValueError):
        raise ValueError(f"grids: expected a sequence of (rows, cols) pairs, got {grids!r}") \
            from None
    if not grid_list:
        raise ValueError("grids: empty list of grids")
    out = []
    for g in grid_list:
        if len(g) != 2 or g[0] < 1 or g[1] < 1:
            raise ValueError(f"grids: each grid must be a (rows, cols) pair >= 1, got {g}")
        r, c = g
        if r > ih or c > iw:
            raise ValueError(
                f"grids: a {r}x{c} grid does not fit the {ih}x{iw} region of the window")
        yb = [margin + int(round(k * ih / r)) for k in range(r + 1)]
        xb = [margin + int(round(k * iw / c)) for k in range(c + 1)]
        for i in range(r):
            for j in range(c):
                out.append((xb[j], yb[i], xb[j + 1] - xb[j], yb[i + 1] - yb[i]))
    return np.asarray(out, dtype=np.int64)




class LabelHistogramFamily(FeatureFamily):
    """Base of histogram families: features = fraction of a rectangle's pixels with a label.

    Subclasses call :meth:`_setup` in ``__init__`` with the rectangles and the channel keys of
    the label indicator planes (one plane per label), and implement :meth:`_channel_text`.

    Examples
    --------
    A family of the dark and bright shares of the left and right halves of the window, on the
    gray-level indicator planes ``ghist(2)#0`` and ``ghist(2)#1``:

    >>> class Halves(LabelHistogramFamily):
    ...     name = "halves"
    ...     def __init__(self, window_shape=(8, 8)):
    ...         self.window_shape = window_shape
    ...         self._setup(grid_rects(window_shape, [(1, 2)]), ["ghist(2)#0", "ghist(2)#1"])
    ...     def get_config(self):
    ...         return {"window_shape": list(self.window_shape)}
    ...     def _channel_text(self, c):
    ...         return "gray in 128..255" if c else "gray in 0..127"
    >>> fam = Halves()
    >>> fam.n_features, fam.describe(3)["text"]
    (4, 'fraction of pixels with gray in 128..255 in x=4..7, y=0..7')
    >>> half = np.zeros((1, 8, 8), np.uint8)
    >>> half[0, :, 4:] = 255
    >>> fam.compute(half).ravel().tolist()
    [1.0, 0.0, 0.0, 1.0]
    """

    def _setup(self, rects: np.ndarray, keys: Sequence[str]) -> None:
        self._rect_list = np.asarray(rects, dtype=np.int64)
        self._keys = tuple(keys)
        self.n_channels = len(self._keys)
        self.n_rects = int(self._rect_list.shape[0])
        self.n_features = self.n_rects * self.n_channels

    def _channel_text(self, c: int) -> str:
        raise NotImplementedError

    def _build_program(self) -> Program:
        r, c = np.divmod(np.arange(self.n_features), self.n_channels)
        rects = self._rect_list[r]
        return Program.rects(self.window_shape, ChannelSet(self._keys), rects=rects[:, None],
                             weights=np.ones((self.n_features, 1)), planes=c[:, None],
                             scale=1.0 / (rects[:, 2] * rects[:, 3]))

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        r, c = divmod(i, self.n_channels)
        x, y, w, h = (int(v) for v in self._rect_list[r])
        return {"family": self.name, "index": i, "rect": (x, y, w, h), "channel": c,
                "text": f"fraction of pixels with {self._channel_text(c)} in "
                        f"x={x}..{x + w - 1}, y={y}..{y + h - 1}"}


@numba.njit(parallel=True, **_JIT)
def _quantize(planes, bins, ranges, joint, out):  # pragma: no cover - numba
    # planes (N, H, W, K) uint8 → out (N, K or 1, H, W) labels
    n, h, w, k_planes = planes.shape
    for s in prange(n):
        for y in range(h):
            for x in range(w):
                if joint:
                    lab = 0
                    for k in range(k_planes):
                        lab = lab * bins + (np.int64(planes[s, y, x, k]) * bins) // ranges[k]
                    out[s, 0, y, x] = lab
                else:
                    for k in range(k_planes):
                        out[s, k, y, x] = (np.int64(planes[s, y, x, k]) * bins) // ranges[k]


def convert_color(rgb: np.ndarray, space: str) -> np.ndarray:
    """Convert uint8 RGB ``(..., H, W, 3)`` to ``space`` with OpenCV's 8-bit conversions.

    Parameters
    ----------
    rgb : ndarray of uint8, shape (..., H, W, 3)
        RGB images or windows (any leading dimensions).
    space : {"rgb", "hsv", "luv", "gray"}
        Target space (8-bit hue in 0..179, the others in 0..255).

    Returns
    -------
    ndarray of uint8, shape ``(..., H, W, K)`` with ``K = 3`` (or 1 for ``"gray"``)

    Examples
    --------
    >>> rgb = np.array([[[255, 0, 0], [0, 0, 255]]], np.uint8)   # a red and a blue pixel
    >>> convert_color(rgb, "hsv").tolist()        # 8-bit hue is degrees / 2: blue is 120
    [[[0, 255, 255], [120, 255, 255]]]
    >>> convert_color(rgb, "gray").tolist()
    [[[76], [29]]]
    """
    if space not in COLOR_SPACES:
        raise ValueError(f"space: expected one of {sorted(COLOR_SPACES)}, got {space!r}")
    code = COLOR_SPACES[space][0]
    lead, (h, w) = rgb.shape[:-3], rgb.shape[-3:-1]
    if code is None:
        return np.ascontiguousarray(rgb)
    # one tall image: cvtColor converts pixel by pixel, so stacking windows is exact
    flat = np.ascontiguousarray(rgb.reshape(-1, w, 3))
    conv = cv2.cvtColor(flat, code)
    return conv.reshape(lead + (h, w, -1))


def color_labels(planes: np.ndarray, bins: int, ranges: Sequence[int],
                 joint: bool) -> np.ndarray:
    """Bin labels of ``(N, H, W, K)`` uint8 planes → int32 ``(N, K, H, W)`` (joint: ``K = 1``).

    Plane ``k``'s label is ``v * bins // ranges[k]``; a joint label combines the planes' labels
    as the digits of a base-``bins`` number (plane 0 most significant).

    Parameters
    ----------
    planes : ndarray of uint8, shape (N, H, W, K)
        Colour planes (:func:`convert_color`).
    bins : int
        Bins per plane.
    ranges : sequence of K int
        Value range of each plane (180 for 8-bit hue, else 256).
    joint : bool
        One label over all the planes (``bins ** K`` values) instead of one per plane.

    Returns
    -------
    ndarray of int32, shape (N, K, H, W) or (N, 1, H, W)

    Examples
    --------
    >>> planes = np.array([[[[0, 255], [128, 64]]]], dtype=np.uint8)   # N=1, H=1, W=2, K=2
    >>> color_labels(planes, 4, [256, 256], joint=False)[0, :, 0].tolist()
    [[0, 2], [3, 1]]
    >>> color_labels(planes, 4, [256, 256], joint=True)[0, 0, 0].tolist()
    [3, 9]
    """
    n, h, w, k = planes.shape
    out = np.empty((n, 1 if joint else k, h, w), dtype=np.int32)
    _quantize(np.ascontiguousarray(planes), int(bins), np.asarray(ranges, dtype=np.int64),
              bool(joint), out)
    return out


def _check_bins(bins: Any, cap: int) -> int:
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or not 1 <= bins <= cap:
        raise ValueError(f"bins: expected an integer in 1..{cap}, got {bins!r}")
    return int(bins)


def _grids_config(grids: Any) -> list[list[int]]:
    return [[int(v) for v in g] for g in grids]



def _hist_params(params: tuple) -> tuple[str, int, bool]:
    if len(params) != 3 or params[0] not in COLOR_SPACES or params[0] == "gray" \
            or params[2] not in (0, 1):
        raise InputError(f"chist: expected (rgb|hsv|luv, bins, 0|1), got {params}")
    joint = bool(params[2])
    return params[0], _check_bins(params[1], 16 if joint else 256), joint


def _chist_planes(params: tuple) -> int:
    _, bins, joint = _hist_params(params)
    return bins**3 if joint else 3 * bins


def _chist_labels(images: np.ndarray, params: tuple) -> np.ndarray:
    space, bins, joint = _hist_params(params)
    return color_labels(convert_color(images, space), bins, COLOR_SPACES[space][2], joint)


def _ghist_planes(params: tuple) -> int:
    if len(params) != 1:
        raise InputError(f"ghist: expected (bins,), got {params}")
    return _check_bins(params[0], 256)


def _ghist_labels(images: np.ndarray, params: tuple) -> np.ndarray:
    return color_labels(gray_of(images)[..., None], int(params[0]), (256,), False)


register_channel_kind(ChannelKind.from_labels("ghist", _ghist_planes, _ghist_labels))
register_channel_kind(ChannelKind.from_labels("chist", _chist_planes, _chist_labels, color=True))


@register_family
class IntensityHistogramFamily(LabelHistogramFamily):
    """Gray-level histograms over grid cells of a gray window.

    Parameters
    ----------
    window_shape : (int, int)
    bins : int, default=16
        Equal bins over 0..255 (gray ``v`` → bin ``v * bins // 256``).
    grids : sequence of (rows, cols), default=((1, 1), (2, 2))
        Grid divisions of the window (see :func:`grid_rects`).

    Features: ``n_rects * bins``; feature ``rect * bins + b`` is the fraction of the rectangle's
    pixels in bin ``b``.

    Examples
    --------
    >>> fam = IntensityHistogramFamily((8, 8), bins=2, grids=[(1, 2)])   # left and right halves
    >>> fam.n_features, fam.describe(1)["text"]
    (4, 'fraction of pixels with gray in 128..255 in x=0..3, y=0..7')
    >>> half = np.zeros((1, 8, 8), np.uint8)
    >>> half[0, :, 4:] = 255
    >>> fam.compute(half).ravel().tolist()
    [1.0, 0.0, 0.0, 1.0]
    """

    name = "intensity_hist"

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, bins: int = 16,
                 grids: Sequence[Sequence[int]] = ((1, 1), (2, 2))) -> None:
        self.window_shape = check_window_shape(window_shape)
        self.bins = _check_bins(bins, 256)
        self.grids = _grids_config(grids)
        self._setup(grid_rects(self.window_shape, self.grids),
                    [f"ghist({self.bins})#{b}" for b in range(self.bins)])

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape), "bins": self.bins, "grids": self.grids}

    def _channel_text(self, c: int) -> str:
        lo = -(-c * 256 // self.bins)
        hi = -(-(c + 1) * 256 // self.bins) - 1
        return f"gray in {lo}..{hi}"



@register_family
class ColorHistogramFamily(LabelHistogramFamily):
    """Colour histograms (per channel or joint) over grid cells of an RGB window.

    Parameters
    ----------
    window_shape : (int, int)
    space : {"rgb", "hsv", "luv", "gray"}, default="hsv"
        Colour space, converted with OpenCV's 8-bit ``cv2.cvtColor`` (H in 0..179).
    bins : int, default=8
        Bins per channel (channel value ``v`` of range ``n`` → bin ``v * bins // n``).
    joint : bool, default=False
        ``False``: one histogram per channel (``K * bins`` channels); ``True``: one joint
        histogram with ``bins ** K`` cells, cell ``(b0 * bins + b1) * bins + b2``.
    grids : sequence of (rows, cols), default=((1, 1), (2, 2))

    Features: ``n_rects * n_channels``; feature ``rect * n_channels + c``.

    Examples
    --------
    >>> fam = ColorHistogramFamily((8, 8), space="rgb", bins=2, grids=[(1, 1)])
    >>> fam.n_features, fam.describe(1)["text"]
    (6, 'fraction of pixels with R in 128..255 in x=0..7, y=0..7')
    >>> red = np.zeros((1, 8, 8, 3), np.uint8)
    >>> red[..., 0] = 255
    >>> fam.compute(red).ravel().tolist()          # R high, G and B low everywhere
    [0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    """

    name = "color_hist"
    color = True

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, space: str = "hsv",
                 bins: int = 8, joint: bool = False,
                 grids: Sequence[Sequence[int]] = ((1, 1), (2, 2))) -> None:
        self.window_shape = check_window_shape(window_shape)
        if space not in COLOR_SPACES:
            raise ValueError(f"space: expected one of {sorted(COLOR_SPACES)}, got {space!r}")
        self.space = space
        self.joint = bool(joint)
        _, names, ranges = COLOR_SPACES[space]
        self._names, self._ranges = names, ranges
        k = len(names)
        self.bins = _check_bins(bins, 16 if self.joint and k > 1 else 256)
        self.grids = _grids_config(grids)
        if space == "gray":
            keys = [f"ghist({self.bins})#{b}" for b in range(self.bins)]
        else:
            n = self.bins**k if self.joint else self.bins * k
            keys = [f"chist({space},{self.bins},{int(self.joint)})#{j}" for j in range(n)]
        self._setup(grid_rects(self.window_shape, self.grids), keys)

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape), "space": self.space,
                "bins": self.bins, "joint": self.joint, "grids": self.grids}

    def _bin_text(self, k: int, b: int) -> str:
        n = self._ranges[k]
        lo = -(-b * n // self.bins)
        hi = -(-(b + 1) * n // self.bins) - 1
        return f"{self._names[k]} in {lo}..{hi}"

    def _channel_text(self, c: int) -> str:
        k = len(self._names)
        if self.joint:
            parts, rest = [], c
            for kk in reversed(range(k)):
                rest, b = divmod(rest, self.bins)
                parts.append(self._bin_text(kk, b))
            return " and ".join(reversed(parts))
        kk, b = divmod(c, self.bins)
        return self._bin_text(kk, b)
