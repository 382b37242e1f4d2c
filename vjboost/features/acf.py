"""Gradient-channel features: rectangle means of gradient and colour channels (ICF/ACF-like).

A feature is the mean of one channel plane over one rectangle of the window, the integral
channel features of Dollár et al. (*Integral Channel Features*, BMVC 2009) on vjboost's integral
planes (:mod:`vjboost.features.channels`):

* ``gradmag``: gradient magnitude (``round(8 * hypot(g_row, g_col))``, central differences);
* ``orient(n,u|s)#b``: the magnitude of the pixels whose gradient orientation falls in bin ``b``
  (``n`` bins over 180 or 360 degrees) — a HOG cell entry without block normalisation;
* ``luv#0..2`` (``color=True``): OpenCV's 8-bit L, u, v planes.

Gradient features are contrast-normalised per window (NORM_GRADIENT): the value is
``mean_rect(m) / (mean_window(m) + 8)`` with ``m`` the quantised magnitude and the window mean
over the interior, i.e. the rectangle's mean gradient magnitude over the window's mean plus one
grey level — a Haar-cost feature (one rectangle sum and a per-window normaliser) that carries
HOG-like information. Colour features are plain means (0..255, NORM_NONE): their absolute value
is what a colour cue is about.

Rectangles: every ``(x, y, w, h)`` on a grid of step ``stride`` inside the window's interior
(one pixel from the border, where the gradient is defined from window pixels alone):
``x = 1 + stride * i``, ``w = min_size + stride * j`` up to ``max_size``, the rectangle inside
``[1, W - 1)`` (same for ``y``, ``h``). With the defaults (6 unsigned orientations, magnitude,
``stride=2``, ``min_size=2``) a 24x24 window has 4,356 rectangles and 30,492 features, a 20x20
window 2,025 and 14,175; ``stride`` is the size knob (cost ~ ``1 / stride**4``).

Feature ``i = rect * n_planes + plane``; rectangles ordered by ``y``, ``x``, ``h``, ``w``.

Examples
--------
>>> import numpy as np
>>> fam = ChannelFamily((20, 20))
>>> fam.n_features, fam.planes[:3]
(14175, ('gradmag', 'orient(6,u)#0', 'orient(6,u)#1'))
>>> fam.describe(0)["rect"]
(1, 1, 2, 2)
>>> win = np.tile(np.arange(20, dtype=np.uint8) * 12, (20, 1))   # ramp: |g| = 24 at 0 degrees
>>> [round(float(v), 3) for v in fam.compute(win[None], [0, 1, 2]).ravel()]  # 24 / (24 + 1)
[0.96, 0.96, 0.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vjboost.features.base import FeatureFamily, check_window_shape, register_family
from vjboost.features.channels import ChannelSet
from vjboost.features.program import NORM_GRADIENT, NORM_NONE, Program

__all__ = ["ChannelFamily"]


def _positive(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
        raise ValueError(f"{name}: expected a positive integer, got {v!r}")
    return int(v)


@register_family
class ChannelFamily(FeatureFamily):
    """Means of gradient (and colour) channels over a grid of rectangles (module docstring).

    Parameters
    ----------
    window_shape : (int, int)
        At least 3x3.
    orientations : int, default=6
        Orientation bins (0 for none).
    signed : bool, default=False
        Orientations over 360 degrees instead of 180.
    magnitude : bool, default=True
        Include the gradient-magnitude plane.
    color : bool, default=False
        Include the L, u, v planes (RGB windows).
    stride : int, default=2
        Step of the rectangle positions and sizes (the pool-size knob).
    min_size, max_size : int, optional
        Smallest and largest rectangle side (default ``stride`` and the interior).

    Examples
    --------
    >>> fam = ChannelFamily((8, 8), orientations=2)
    >>> fam.n_features, fam.planes
    (108, ('gradmag', 'orient(2,u)#0', 'orient(2,u)#1'))
    >>> flat = np.full((1, 8, 8), 100, np.uint8)                        # no gradient anywhere
    >>> ramp = np.tile(np.arange(8, dtype=np.uint8) * 10, (8, 1))[None]   # |g| = 20 at 0 degrees
    >>> values = fam.compute(np.concatenate([flat, ramp]), [0, 1, 2])
    >>> [[round(float(v), 3) for v in row] for row in values]   # 20 / (20 + 1) on the ramp
    [[0.0, 0.952], [0.0, 0.952], [0.0, 0.0]]
    """

    name = "channels"

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, orientations: int = 6,
                 signed: bool = False, magnitude: bool = True, color: bool = False,
                 stride: int = 2, min_size: int | None = None,
                 max_size: int | None = None) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        if h < 3 or w < 3:
            raise ValueError(f"window_shape: gradient channels need windows of at least 3x3, "
                             f"got {h}x{w}")
        if isinstance(orientations, bool) or not isinstance(orientations, int | np.integer) \
                or not 0 <= orientations <= 255:
            raise ValueError(f"orientations: expected an integer in 0..255, got {orientations!r}")
        self.orientations = int(orientations)
        self.signed = bool(signed)
        self.magnitude = bool(magnitude)
        self.color = bool(color)  # type: ignore[misc]  # instance-level override of ClassVar
        self.stride = _positive(stride, "stride")
        inner = min(h, w) - 2
        self.min_size = _positive(self.stride if min_size is None else min_size, "min_size")
        self.max_size = _positive(inner if max_size is None else max_size, "max_size")
        planes = (["gradmag"] if self.magnitude else []) + [
            f"orient({self.orientations},{'s' if self.signed else 'u'})#{b}"
            for b in range(self.orientations)] + (
            ["luv#0", "luv#1", "luv#2"] if self.color else [])
        if not planes:
            raise ValueError("orientations: no channel plane (orientations=0, magnitude=False "
                             "and color=False)")
        self.planes = tuple(planes)
        self.rects = self._grid()
        if self.rects.shape[0] == 0:
            raise ValueError(f"min_size: no rectangle of {self.min_size}..{self.max_size} "
                             f"pixels fits the {w - 2}x{h - 2} interior of the window")
        self.n_features = int(self.rects.shape[0]) * len(self.planes)

    def _grid(self) -> np.ndarray:
        """``(x, y, w, h)`` of every rectangle, ordered by y, x, h, w."""
        h, w = self.window_shape
        s = self.stride
        axes = []
        for n in (h - 2, w - 2):
            sizes = np.arange(self.min_size, min(self.max_size, n) + 1, s)
            starts = np.arange(0, n, s)
            pos, size = (a.ravel() for a in np.meshgrid(starts, sizes, indexing="ij"))
            keep = pos + size <= n
            axes.append((pos[keep] + 1, size[keep]))
        (ys, hs), (xs, ws) = axes
        iy, ix = (a.ravel() for a in np.meshgrid(np.arange(ys.size), np.arange(xs.size),
                                                 indexing="ij"))
        out = np.stack([xs[ix], ys[iy], ws[ix], hs[iy]], axis=1).astype(np.int64)
        # y, x, h, w order
        order = np.lexsort((out[:, 2], out[:, 3], out[:, 0], out[:, 1]))
        return out[order]

    def _build_program(self) -> Program:
        n_p = len(self.planes)
        r, p = np.divmod(np.arange(self.n_features), n_p)
        rects = self.rects[r]
        luv = np.array([k.startswith("luv") for k in self.planes])[p]
        return Program.rects(self.window_shape, ChannelSet(self.planes), rects=rects[:, None],
                             weights=np.ones((self.n_features, 1)), planes=p[:, None],
                             norm=np.where(luv, NORM_NONE, NORM_GRADIENT),
                             scale=1.0 / (rects[:, 2] * rects[:, 3]))

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape), "orientations": self.orientations,
                "signed": self.signed, "magnitude": self.magnitude, "color": self.color,
                "stride": self.stride, "min_size": self.min_size, "max_size": self.max_size}

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        r, p = divmod(i, len(self.planes))
        x, y, w, h = (int(v) for v in self.rects[r])
        key = self.planes[p]
        norm = "" if key.startswith("luv") else ", contrast-normalised"
        return {"family": self.name, "index": i, "rect": (x, y, w, h), "channel": key,
                "text": f"mean of {key} over x={x}..{x + w - 1}, y={y}..{y + h - 1}{norm}"}
