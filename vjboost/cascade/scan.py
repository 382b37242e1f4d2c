"""Scan geometry: the windows a detector looks at, where they lie, and how to cut them out.

The image is scaled, never the features. For every scale ``s`` of a scale list the image is
resized to ``round(W / s) × round(H / s)`` (OpenCV's bit-exact ``INTER_LINEAR_EXACT``) — a
*level* — and the cascade's base window slides over the level on a grid of ``step`` pixels. A
window at ``(x, y)`` of level ``s`` is the box ``round(x·s), round(y·s), round(W₀·s),
round(H₀·s)`` of the image (float32 products, round half to even, as OpenCV).

:class:`Pyramid` holds those rules once, for everything that scans images: the detector, hard
negative mining and adaptation (which all cut "the windows as the detector sees them" with
:meth:`Pyramid.windows`), and the runner, which packs levels into batches (:class:`Batch`): one
int32 buffer of integral planes per batch, levels side by side with one row stride (as OpenCV
packs them), whose rows become the work items of :func:`vjboost.cascade.kernels.scan`.

``mode="opencv"`` reproduces ``cv2.CascadeClassifier.detectMultiScale``: OpenCV's scale list with
``minSize``/``maxSize`` (and its nearest-scale fallback), a step of 2 pixels below scale 2 and 1
above, and the *stripe cut-off* — OpenCV splits the rows of every level into ``ceil(nx₀ / 32)``
stripes sized from the first level, so when a level's row count is not a multiple of its step the
last row may fall outside every stripe and is never scanned. ``mode="clean"`` scans every row and
takes any ``step``.

``border`` lets windows extend past the image, for objects cut by its edge: every level is
padded by ``border_margin`` of the window on each side (``"replicate"`` repeats the edge pixels,
``"reflect"`` mirrors the image without repeating them, as ``cv2.BORDER_REFLECT_101``), so a
window may leave the image by that share of its size at every scale; boxes are still in image
coordinates (they may start at negative coordinates). The default, no border, is OpenCV's
geometry.

Examples
--------
>>> import numpy as np
>>> pyr = Pyramid((24, 24), (100, 80), scale_factor=1.25)
>>> [(lv.width, lv.height, lv.step) for lv in pyr.levels][:2]
[(100, 80, 2), (80, 64, 2)]
>>> pos = np.array([[1, 10, 4]])            # level 1, window at x=10, y=4
>>> pyr.boxes(pos).tolist()
[[12, 5, 30, 30]]
>>> pyr.windows(np.zeros((80, 100), np.uint8), pos).shape
(1, 24, 24)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from .._limits import MAX_SCALE_FACTOR, check_pyramid_levels

__all__ = ["BAND_LAYOUT", "BATCH_BYTES", "BORDERS", "KEEP_BYTES", "MAX_MIN_STD", "OPENCV_MIN_STD",
           "Batch", "Level", "Pyramid", "check_border", "check_min_std", "check_mode",
           "check_scale_factor", "opencv_scales"]

#: integral planes per batch (bytes): the levels of a pyramid are packed into batches this
#: large, filled and scanned one after the other, so that a batch's planes are still in the
#: last-level cache when the scan reads them (and the next batch's fill overwrites the same
#: memory). With 192 MiB batches, one per image, every plane went out to memory and back:
#: CMU-MIT took 217 ms/MP with the default face model, 199–203 with 4 MiB (1 thread). A
#: level larger than this is cut into bands of rows (:meth:`Pyramid.batches`).
BATCH_BYTES = 4 * 1024**2
#: a detector keeps its per-thread buffer of integral planes for the next images up to this
#: size (bytes): writing a fresh buffer costs a page fault per 4 KiB page
KEEP_BYTES = 384 * 1024**2
#: the bands of a pyramid's large levels share one layout (the widest level's row length, the
#: tallest band's rows) while its planes hold at most this many batch budgets
BAND_LAYOUT = 8

MODES = ("opencv", "clean")

#: image borders a pyramid can pad its levels with (``cv2.copyMakeBorder`` types)
BORDERS = {"replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT_101}


#: OpenCV's σ gate in grey levels: a scan's, unless a model declares its own
OPENCV_MIN_STD = 10.0


#: the largest standard deviation of 8-bit grey levels (half the pixels 0, half 255): a σ gate
#: at or above it refuses every window
MAX_MIN_STD = 127.5


def check_min_std(value: object, name: str = "min_std") -> float:
    """A σ gate in grey levels, checked: a number in ``[0, MAX_MIN_STD)`` (0: no gate; at
    :data:`MAX_MIN_STD`, 127.5, no 8-bit window would pass).

    Parameters
    ----------
    value : float
        The gate asked for.
    name : str, default="min_std"
        What the message calls it.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Naming ``name`` and the value.

    Examples
    --------
    >>> check_min_std(6)
    6.0
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0 <= value < MAX_MIN_STD):
        raise ValueError(f"{name}: expected a number of grey levels in [0, {MAX_MIN_STD:g}) "
                         f"(no 8-bit window has a larger standard deviation), got {value!r}")
    return float(value)


def check_scale_factor(value: object, name: str = "scale_factor") -> float:
    """A scan's ratio between successive scales, checked: a number in
    ``(1, MAX_SCALE_FACTOR]`` (:data:`vjboost._limits.MAX_SCALE_FACTOR`, 100).

    Parameters
    ----------
    value : float
        The factor asked for.
    name : str, default="scale_factor"
        What the message calls it.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Naming ``name``, the value and the range.

    Examples
    --------
    >>> check_scale_factor(1.1)
    1.1
    >>> check_scale_factor(1e308)
    Traceback (most recent call last):
    ...
    ValueError: scale_factor: expected a number in (1, 100], got 1e+308
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            1.0 < value <= MAX_SCALE_FACTOR):
        raise ValueError(f"{name}: expected a number in (1, {MAX_SCALE_FACTOR:g}], got {value!r}")
    return float(value)


#: the share of a window that may lie past the image's edge when a border is asked for without
#: a margin
DEFAULT_BORDER_MARGIN = 0.25


def check_border(border: str | None, margin: float) -> None:
    """Refuse an unknown border type or a margin outside ``[0, 1]``.

    Parameters
    ----------
    border : {None, "replicate", "reflect"}
    margin : float
        Share of the window on each side.

    Raises
    ------
    ValueError
        Naming ``border`` or ``border_margin``.

    Examples
    --------
    >>> check_border("reflect", 0.25)
    """
    if border is not None and border not in BORDERS:
        raise ValueError(f"border: expected None, 'replicate' or 'reflect', got {border!r}")
    if not (isinstance(margin, int | float) and 0.0 <= margin <= 1.0):
        raise ValueError(f"border_margin: expected a share of the window in [0, 1], got "
                         f"{margin!r}")


def check_mode(mode: str, step: int | None) -> None:
    """Refuse an unknown scan mode, or a step with ``mode="opencv"`` (OpenCV's step is fixed).

    Parameters
    ----------
    mode : {"opencv", "clean"}
        The scan mode.
    step : int or None
        The window step asked for (only ``mode="clean"`` takes one).

    Raises
    ------
    ValueError
        Naming ``mode`` or ``step``.
    """
    if mode not in MODES:
        raise ValueError(f"mode: expected 'opencv' or 'clean', got {mode!r}")
    if mode == "opencv" and step is not None:
        raise ValueError("step: only configurable with mode='clean' (OpenCV's step is 2 "
                         "below scale 2, else 1)")


def _win(n: int, s: np.float32) -> int:
    """``cvRound(n * s)`` with the product in float32."""
    return int(np.rint(np.float32(n) * np.float32(s)))


def opencv_scales(
    window: tuple[int, int],
    image_size: tuple[int, int],
    scale_factor: float,
    min_size: tuple[int, int] = (0, 0),
    max_size: tuple[int, int] = (0, 0),
) -> list[np.float32]:
    """The scales ``detectMultiScale`` scans, as float32 values.

    Parameters
    ----------
    window : (width, height)
        Base window of the cascade.
    image_size : (width, height)
    scale_factor : float
        > 1.
    min_size, max_size : (width, height)
        Object size limits; a zero component in ``max_size`` means the image size.

    Returns
    -------
    list of numpy.float32

    Examples
    --------
    >>> [float(s) for s in opencv_scales((24, 24), (40, 40), 1.25)]
    [1.0, 1.25, 1.5625]
    """
    W, H = window  # noqa: N806
    img_w, img_h = image_size
    if max_size[0] == 0 or max_size[1] == 0:
        max_size = (img_w, img_h)
    if img_w < W or img_h < H:
        return []
    all_scales: list[np.float32] = []
    factor = 1.0
    # compared as floats: a huge factor makes the window infinite, which fits no image (an int
    # of infinity would raise)
    while np.rint(W * factor) <= img_w and np.rint(H * factor) <= img_h:
        all_scales.append(np.float32(factor))
        factor *= scale_factor
    scales = []
    for s in all_scales:
        ww, wh = _win(W, s), _win(H, s)
        if ww > max_size[0] or wh > max_size[1]:
            break
        if ww < min_size[0] or wh < min_size[1]:
            continue
        scales.append(s)
    if not scales and all_scales:
        d = [(min_size[0] - _win(W, s)) ** 2 + (min_size[1] - _win(H, s)) ** 2 for s in all_scales]
        scales.append(all_scales[int(np.argmin(d))])
    return scales


@dataclass(frozen=True)
class Level:
    """One scanned level of a pyramid.

    Attributes
    ----------
    index : int
        Position of the level's scale in the scale list (:func:`opencv_scales`).
    scale : numpy.float32
    width, height : int
        Size of the resized image, borders included.
    step : int
        Grid step in pixels of the level along a row.
    nx, ny : int
        Window positions ``x = x0, x0 + step, ... < nx`` and ``y = y0, y0 + ystep, ... < ny``
        (``ny`` after the stripe cut-off of ``mode="opencv"``).
    x0, y0 : int, default=0
        First column and row of the grid (a grid offset, see :class:`Pyramid`).
    ystep : int, optional
        Grid step between rows (default ``step``).
    pad_x, pad_y : int, default=0
        Border added on each side of the resized image (0 without ``border``): level position
        ``x`` lies at ``x - pad_x`` of the resized image.
    own_ny : int, optional
        A band of a level (:meth:`Pyramid.batches`): its windows at rows ``>= own_ny`` belong to
        the next band and are scanned only as context (coarse-to-fine scans); ``None``: all.
    """

    index: int
    scale: np.float32
    width: int
    height: int
    step: int
    nx: int
    ny: int
    x0: int = 0
    y0: int = 0
    ystep: int | None = None
    pad_x: int = 0
    pad_y: int = 0
    own_ny: int | None = None

    @property
    def row_step(self) -> int:
        return self.step if self.ystep is None else int(self.ystep)

    @property
    def n_cols(self) -> int:
        return max(0, -(-(self.nx - self.x0) // self.step))

    @property
    def n_rows(self) -> int:
        return max(0, -(-(self.ny - self.y0) // self.row_step))

    @property
    def n_windows(self) -> int:
        return self.n_cols * self.n_rows


def _table(levels: Sequence[Level]) -> np.ndarray:
    """Per level ``(index, x0, y0, step, row_step, nx, n_cols, n_rows)``, int64 (L, 8)."""
    return np.array([(lv.index, lv.x0, lv.y0, lv.step, lv.row_step, lv.nx, lv.n_cols, lv.n_rows)
                     for lv in levels], dtype=np.int64).reshape(-1, 8)


def _slots(table: np.ndarray, offsets: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """``(level index, x, y)`` of result slots numbered level by level, row by row
    (``table`` of the levels: :func:`_table`)."""
    slots = np.asarray(slots, dtype=np.int64)
    k = np.searchsorted(offsets, slots, side="right") - 1
    t = table[k]
    row, col = np.divmod(slots - offsets[k], t[:, 6])
    out = np.empty((len(slots), 3), dtype=np.int64)
    out[:, 0] = t[:, 0]
    out[:, 1] = t[:, 1] + col * t[:, 3]
    out[:, 2] = t[:, 2] + row * t[:, 4]
    return out


@dataclass(frozen=True)
class Batch:
    """Levels packed into one buffer of integral planes (one row stride for all of them).

    Level ``k`` occupies rows ``origins[k, 0] ..`` and columns ``origins[k, 1] ..`` of every
    ``(rows, cols)`` plane (its integral is one row and column larger than the level); its
    windows' results occupy slots ``out_offsets[k] ..`` (row by row). A band of a level
    (:meth:`Pyramid.batches`) holds only its image rows ``held[k, 0] .. held[k, 1] - 1``,
    integrated from the first: level row ``y`` still lies at row ``origins[k, 0] + y``.
    """

    levels: tuple[Level, ...]
    origins: np.ndarray
    rows: int
    cols: int
    out_offsets: np.ndarray
    n_out: int
    held: np.ndarray | None = None

    def items(self) -> np.ndarray:
        """Work items of :func:`vjboost.cascade.kernels.scan`: one per scanned row of a level.

        Returns
        -------
        ndarray of int64, shape (I, 4)
            ``(row_offset, nx, step, out_offset)`` relative to a plane's first entry.
        """
        t = self._table
        nrow = t[:, 7]
        k = np.repeat(np.arange(len(self.levels)), nrow)
        r = np.arange(k.size, dtype=np.int64) - np.repeat(np.cumsum(nrow) - nrow, nrow)
        tk = t[k]
        y = tk[:, 2] + r * tk[:, 4]
        items = np.empty((k.size, 4), dtype=np.int64)
        # a row's windows start at column x0 of the level: the item's positions count from
        # there (x = 0, step, ... < nx - x0)
        items[:, 0] = (self.origins[k, 0] + y) * self.cols + self.origins[k, 1] + tk[:, 1]
        items[:, 1] = tk[:, 5] - tk[:, 1]
        items[:, 2] = tk[:, 3]
        items[:, 3] = self.out_offsets[k] + r * tk[:, 6]
        return items

    def positions(self, slots: Any) -> np.ndarray:
        """``(level index, x, y)`` of result slots, shape (N, 3) int64."""
        return _slots(self._table, self.out_offsets, slots)

    @functools.cached_property
    def _table(self) -> np.ndarray:
        return _table(self.levels)


class Pyramid:
    """The levels and windows a detector scans in one image.

    Parameters
    ----------
    window_shape : (height, width)
        The cascade's base window.
    image_size : (width, height)
    scale_factor : float
        Ratio between successive scales (> 1).
    min_size, max_size : (width, height), optional
        Object size limits (OpenCV's ``minSize``/``maxSize``; 0: none).
    mode : {"opencv", "clean"}, default="opencv"
        ``"opencv"``: OpenCV's step rule and stripe cut-off; ``"clean"``: every row, ``step``.
    step : int, optional
        Grid step (``"clean"`` only; default OpenCV's: 2 below scale 2, else 1).
    offset : (x0, y0), default=(0, 0)
        ``"clean"`` only: the grid starts at column ``x0`` and row ``y0`` of every level (grids
        of different offsets cover disjoint windows: hard-negative mining scans an image's
        windows offset by offset).
    row_step : int, optional
        ``"clean"`` only: step between grid rows (default ``step``).
    border : {None, "replicate", "reflect"}, default=None
        Pad every level so that windows may extend past the image (objects cut by its edge);
        None: windows lie inside the image (OpenCV).
    border_margin : float, default=0.25
        With ``border``: how far (share of the window's width and height, per side) a window
        may extend past the image.

    Attributes
    ----------
    scales : list of numpy.float32
        The scale list (levels index it).
    levels : list of Level
        The levels with at least one window.
    n_windows : int
        Windows of all levels.

    Examples
    --------
    >>> pyr = Pyramid((20, 20), (64, 48), scale_factor=1.5)
    >>> [float(s) for s in pyr.scales], [(lv.width, lv.height, lv.step) for lv in pyr.levels]
    ([1.0, 1.5, 2.25], [(64, 48, 2), (43, 32, 2), (28, 21, 1)])
    >>> pyr.n_windows
    412
    >>> last = pyr.positions([pyr.n_windows - 1])     # (level index, x, y)
    >>> last.tolist(), pyr.boxes(last).tolist()
    ([[2, 8, 1]], [[18, 2, 45, 45]])

    With a border, windows may start outside the image:

    >>> padded = Pyramid((20, 20), (64, 48), scale_factor=1.5, border="replicate")
    >>> padded.boxes([[0, 0, 0]]).tolist()
    [[-5, -5, 20, 20]]
    """

    def __init__(self, window_shape: Sequence[int], image_size: Sequence[int], *,
                 scale_factor: float, min_size: Sequence[int] = (0, 0),
                 max_size: Sequence[int] = (0, 0), mode: str = "opencv",
                 step: int | None = None, offset: Sequence[int] = (0, 0),
                 row_step: int | None = None, border: str | None = None,
                 border_margin: float = 0.25) -> None:
        check_mode(mode, step)
        check_border(border, border_margin)
        x0, y0 = (int(v) for v in offset)
        if mode == "opencv" and (x0, y0, row_step) != (0, 0, None):
            raise ValueError("offset, row_step: only configurable with mode='clean'")
        if x0 < 0 or y0 < 0 or (row_step is not None and int(row_step) < 1):
            raise ValueError(f"offset, row_step: expected offsets >= 0 and a step >= 1, got "
                             f"{(x0, y0)}, {row_step}")
        H, W = (int(v) for v in window_shape)  # noqa: N806
        img_w, img_h = (int(v) for v in image_size)
        self.window_shape = (H, W)
        self.image_size = (img_w, img_h)
        self.border = border
        px = int(round(border_margin * W)) if border else 0
        py = int(round(border_margin * H)) if border else 0
        check_pyramid_levels(scale_factor, (img_w, img_h), (W, H))
        self.scales = opencv_scales((W, H), (img_w, img_h), scale_factor,
                                    tuple(min_size), tuple(max_size))
        self.levels: list[Level] = []
        # OpenCV's stripes: sized from the first scale, the same count for every level
        nx0 = int(np.rint(np.float32(img_w) / self.scales[0])) + 1 - W if self.scales else 0
        n_stripes = max(1, math.ceil(nx0 / 32.0))
        for i, s in enumerate(self.scales):
            sw = int(np.rint(np.float32(img_w) / s))
            sh = int(np.rint(np.float32(img_h) / s))
            st = (1 if s >= 2 else 2) if step is None else int(step)
            # reflection cannot reach further than the level itself
            lx, ly = (min(px, sw - 1), min(py, sh - 1)) if border == "reflect" else (px, py)
            sw, sh = sw + 2 * lx, sh + 2 * ly
            nx, ny = sw + 1 - W, sh + 1 - H
            if nx <= x0 or ny <= y0:
                continue
            if mode == "opencv":
                stripe = max((ny // st + n_stripes - 1) // n_stripes, 1) * st
                ny = min(ny, n_stripes * stripe)
            self.levels.append(Level(i, s, sw, sh, st, nx, ny, x0, y0,
                                     None if row_step is None else int(row_step), lx, ly))
        self._by_index = {lv.index: lv for lv in self.levels}
        self._table = _table(self.levels)
        counts = self._table[:, 6] * self._table[:, 7]
        self._offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.n_windows = int(counts.sum())

    def level(self, index: int) -> Level:
        """The level of scale ``index``."""
        return self._by_index[int(index)]

    # -- windows ---------------------------------------------------------------------------------

    def positions(self, slots: Any) -> np.ndarray:
        """``(level index, x, y)`` of windows numbered ``0 .. n_windows - 1`` over all levels
        (level by level, row by row), shape (N, 3) int64."""
        return _slots(self._table, self._offsets, slots)

    def boxes(self, positions: Any) -> np.ndarray:
        """Image boxes ``(x, y, w, h)`` int32 (N, 4) of windows ``(level index, x, y)``."""
        pos = np.asarray(positions, dtype=np.int64).reshape(-1, 3)
        s = np.asarray(self.scales, dtype=np.float32)[pos[:, 0]] if len(pos) else \
            np.zeros(0, np.float32)
        H, W = self.window_shape  # noqa: N806
        x, y = pos[:, 1], pos[:, 2]
        if self.border and len(pos):
            pad = np.zeros((len(self.scales), 2), dtype=np.int64)
            for lv in self.levels:
                pad[lv.index] = (lv.pad_x, lv.pad_y)
            x, y = x - pad[pos[:, 0], 0], y - pad[pos[:, 0], 1]
        boxes = np.empty((len(pos), 4), dtype=np.int32)
        boxes[:, 0] = np.rint(x.astype(np.float32) * s)
        boxes[:, 1] = np.rint(y.astype(np.float32) * s)
        boxes[:, 2] = np.rint(np.float32(W) * s)
        boxes[:, 3] = np.rint(np.float32(H) * s)
        return boxes

    def level_image(self, image: np.ndarray, level: Level) -> np.ndarray:
        """The image resized to ``level`` (``INTER_LINEAR_EXACT``, bit-exact as OpenCV).

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3)
            The image the pyramid was made for.
        level : Level
            One of :attr:`levels`.

        Returns
        -------
        ndarray of uint8, shape (level.height, level.width[, 3])
            ``image`` itself (no copy) when the level has its size; with a border, the resized
            image padded by ``level.pad_y`` rows and ``level.pad_x`` columns on each side.
        """
        size = (level.width - 2 * level.pad_x, level.height - 2 * level.pad_y)
        if size != (image.shape[1], image.shape[0]):
            image = cv2.resize(image, size, interpolation=cv2.INTER_LINEAR_EXACT)
        if level.pad_x or level.pad_y:
            image = cv2.copyMakeBorder(image, level.pad_y, level.pad_y, level.pad_x,
                                       level.pad_x, BORDERS[self.border])
        return image

    def windows(self, image: np.ndarray, positions: Any) -> np.ndarray:
        """The windows at ``positions`` ``(level index, x, y)``, cut from the resized levels.

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3)
            The image the pyramid was made for.
        positions : array-like of int, shape (N, 3)

        Returns
        -------
        ndarray of uint8, shape (N, height, width) or (N, height, width, 3)
        """
        pos = np.asarray(positions, dtype=np.int64).reshape(-1, 3)
        H, W = self.window_shape  # noqa: N806
        out = np.empty((len(pos), H, W, *image.shape[2:]), dtype=image.dtype)
        for li in np.unique(pos[:, 0]):
            img = self.level_image(image, self.level(li))
            view = np.lib.stride_tricks.sliding_window_view(img, (H, W), axis=(0, 1))
            sel = np.flatnonzero(pos[:, 0] == li)
            win = view[pos[sel, 2], pos[sel, 1]]
            out[sel] = np.moveaxis(win, -3, -1) if image.ndim == 3 else win
        return out

    # -- batches ---------------------------------------------------------------------------------

    def batches(self, n_planes: int, budget: int | None = None, *, context: int = 0
                ) -> list[Batch]:
        """The levels packed into buffers of ``n_planes`` int32 planes of at most ``budget``
        bytes each (default :data:`BATCH_BYTES`).

        Consecutive levels of the same step share a batch while their
        ``(width + 1) (height + 1)`` planes fit. A level larger than that is cut into bands of
        grid rows, a batch each (:class:`Level` copies with their own ``y0`` and ``ny``;
        ``Batch.held`` says which image rows each holds): a band holds at least four window
        heights of rows, so a band may exceed a small budget.

        Parameters
        ----------
        n_planes : int
            Integral planes per level (the compiled features' channel count).
        budget : int, optional
            Bytes of one batch's int32 buffer (default :data:`BATCH_BYTES`, 4 MiB).
        context : int, default=0
            Rows of the next band each band also holds and scans (coarse-to-fine scans: 1,
            and each band but the last owns an even number of rows, ``Level.own_ny``); 0:
            the bands' rows partition the level's.

        Returns
        -------
        list of Batch
            Covering :attr:`levels` in order (a level's bands in row order).

        Examples
        --------
        >>> pyr = Pyramid((20, 20), (400, 300), scale_factor=1.1)
        >>> first = [b for b in pyr.batches(10) if b.levels[0].index == 0]
        >>> len(first) > 1, first[1].levels[0].y0 == first[0].levels[0].ny
        (True, True)
        """
        budget = BATCH_BYTES if budget is None else int(budget)
        limit = budget // (4 * max(int(n_planes), 1))
        groups: list[list[Level]] = []
        size = 0
        for lv in (b for level in self.levels for b in self._bands(level, limit, context)):
            n = (lv.width + 1) * (lv.height + 1)
            # levels of one step per batch: the runner stores the planes of a step-2 batch
            # with the even and the odd columns apart (consecutive windows for its row pass)
            if groups and size + n <= limit and lv.step == groups[-1][-1].step:
                groups[-1].append(lv)
                size += n
            else:
                groups.append([lv])
                size = n
        # the batches within the budget share one layout (row length and plane size): the
        # runner binds the cascade's records to a layout once, not once per batch (with small
        # batches, about 15 ms/MP on CMU-MIT); the bands of the levels larger than the budget
        # share a second one, as long as its planes stay within BAND_LAYOUT budgets (about 9 %
        # of a detection's time on photographs of 0.3 MP went to binding each band's layout)
        small = [sum((lv.width + 1) * (lv.height + 1) for lv in g) <= limit for g in groups]
        cols = max((g[0].width + 1 for g, sm in zip(groups, small, strict=True) if sm),
                   default=None)
        # a level larger than the budget, or a band of one, is a batch of its own
        large = [g[0] for g, sm in zip(groups, small, strict=True) if not sm]
        wide = max((lv.width + 1 for lv in large), default=None)
        tall = max((b - a + 1 for a, b in map(self._held, large)), default=None)
        if large and wide * tall > BAND_LAYOUT * limit:
            wide = tall = None  # a very large image: each band keeps its level's row length
        batches = [self._pack(g, [self._held(lv) for lv in g], cols if sm else wide)
                   for g, sm in zip(groups, small, strict=True)]
        rows = max((b.rows for b, sm in zip(batches, small, strict=True) if sm), default=0)
        return [dataclasses.replace(b, rows=rows if sm else tall) if sm or tall else b
                for b, sm in zip(batches, small, strict=True)]

    def _bands(self, lv: Level, limit: int, context: int) -> list[Level]:
        """``lv`` as bands of grid rows whose integral planes hold at most ``limit`` entries
        (at least four window heights of rows each, so that the rows two bands both hold stay
        a small part), or ``[lv]`` when it fits. With ``context`` rows, each band but the last
        holds an even count of rows of its own (coarse-to-fine scans: the coarse grid's rows
        stay every second row of the level) and the next band's first ``context`` rows after
        them (``own_ny``)."""
        if (lv.width + 1) * (lv.height + 1) <= limit:
            return [lv]
        rs, win_h = lv.row_step, self.window_shape[0]
        image_rows = max(limit // (lv.width + 1) - 1, 4 * win_h)
        own = max((image_rows - win_h) // rs + 1 - context, 1)
        if context:
            own = max(own - own % 2, 2)
        if own >= lv.n_rows:
            return [lv]
        bands = []
        for r0 in range(0, lv.n_rows, own):
            y0 = lv.y0 + r0 * rs
            own_ny = lv.y0 + min(r0 + own, lv.n_rows) * rs
            last = r0 + own >= lv.n_rows
            ny = lv.ny if last else min(own_ny + context * rs, lv.ny)
            bands.append(dataclasses.replace(lv, y0=y0, ny=ny,
                                             own_ny=None if last else own_ny))
        return bands

    def _held(self, lv: Level) -> tuple[int, int]:
        """The rows ``[a, b)`` of ``lv``'s image that a batch holds: all of them, or a band's
        (from its first window's top to its last window's bottom)."""
        if self._by_index.get(lv.index) is lv:
            return 0, lv.height
        return lv.y0, min(lv.ny - 1 + self.window_shape[0], lv.height)

    @staticmethod
    def _pack(levels: list[Level], held: list[tuple[int, int]], cols: int | None = None
              ) -> Batch:
        # rows as long as the first (largest) level's, or ``cols``; smaller levels side by
        # side in bands
        cols = levels[0].width + 1 if cols is None else int(cols)
        ox = oy = band = 0
        origins = np.zeros((len(levels), 2), dtype=np.int64)
        for k, (lv, (a, b)) in enumerate(zip(levels, held, strict=True)):
            if ox + lv.width + 1 > cols:
                ox, oy, band = 0, oy + band, 0
            # a band's first held row at row oy: level row y lies at oy - a + y
            origins[k] = (oy - a, ox)
            # levels start on even columns: their grids of step 2 then share one column
            # parity (the runner may store even and odd columns apart)
            ox += lv.width + 1 + (lv.width + 1) % 2
            band = max(band, b - a + 1)
        t = _table(levels)
        counts = t[:, 6] * t[:, 7]
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        return Batch(tuple(levels), origins, oy + band, cols, offsets, int(counts.sum()),
                     np.asarray(held, dtype=np.int64).reshape(-1, 2))
