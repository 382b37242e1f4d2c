"""Histograms of oriented gradients (HOG) over cells and blocks, every descriptor entry a feature.

Definition (identical to ``skimage.feature.hog(window, orientations, pixels_per_cell,
cells_per_block, block_norm)`` for unsigned orientations):

1. Gradient on the window: ``g_row[y, x] = I[y + 1, x] - I[y - 1, x]`` and
   ``g_col[y, x] = I[y, x + 1] - I[y, x - 1]``, with ``g_row = 0`` on the first and last rows and
   ``g_col = 0`` on the first and last columns; magnitude ``hypot(g_row, g_col)``.
2. Orientation ``deg = degrees(atan2(g_row, g_col)) mod 180`` (``mod 360`` when ``signed``);
   *hard* binning, no interpolation: bin ``b`` holds ``b * span <= deg < (b + 1) * span`` with
   ``span = 180 / orientations`` (360 when signed), the edges computed as ``span * b`` in float64
   exactly as scikit-image does.
3. Cells of ``pixels_per_cell = (ch, cw)`` pixels tile the window from the top-left corner
   (``H // ch`` by ``W // cw`` cells; leftover rows/columns are unused); a cell's histogram is the
   *mean* gradient magnitude per bin (sum / (ch * cw)).
4. Blocks of ``cells_per_block = (br, bc)`` cells at every cell position (stride one cell); each
   block's ``br * bc * orientations`` values are normalized (``"L2-Hys"``:
   ``v / sqrt(|v|^2 + eps^2)``, clip at 0.2, renormalize; also ``"L2"``, ``"L1"``, ``"L1-sqrt"``;
   ``eps = 1e-5``).
5. Feature ``i`` indexes the flattened ``(n_blocks_row, n_blocks_col, br, bc, orientations)``
   descriptor (scikit-image's ``feature_vector=True`` order).

Implementation. Gradients of 8-bit images are integers in -255..255, so the orientation bin of
every possible gradient is tabulated once (same atan2 arithmetic as the definition) and looked up
per pixel. Detection (``prepare_image``/``evaluate_at``) keeps one integral image per orientation
bin of the whole image, so every cell value of a window at any position is a rectangle sum
evaluated by the generic kernel of :mod:`vjboost.features.integral`; window borders (where the
window gradient differs from the image gradient) are handled exactly with a few extra integrals
(gradients with only the column / only the row component, which fall in at most two bins each)
and a few one-pixel-wide correction rectangles per border cell. For stacks of windows
(``prepare``) the default ``storage="cells"`` keeps only the cell histograms (about 60 times less
memory than per-bin integrals for 8x8 cells); ``storage="integral"`` keeps per-bin integral images
and uses the rectangle-sum kernel as detection does. A small numba kernel then normalizes the
blocks that the queried features need.

scikit-image's cell sums accumulate in float32; ours are float64 sums rounded to float32, so
values agree to about 1e-6.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba import prange

from vjboost._memory import check_memory
from vjboost.features.base import (
    Channels,
    FeatureFamily,
    check_channels,
    check_feature_ids,
    check_image,
    check_sample_ids,
    check_window_shape,
    check_windows,
    register_family,
)
from vjboost.features.integral import (
    integral_channels,
    weighted_rect_sums,
    weighted_rect_sums_at,
)
from vjboost.features.pixel import gather_columns

__all__ = ["HOG_NORMS", "HOGFamily", "hog_descriptor"]

_JIT = {"cache": True, "nogil": True}

HOG_NORMS = {"L2-Hys": 0, "L2": 1, "L1": 2, "L1-sqrt": 3}
_EPS = 1e-5
_DEG = 180.0 / math.pi


@numba.njit(**_JIT)
def _orientation_bin(gr, gc, n_bins, period, span):  # pragma: no cover - numba
    """Bin of the gradient (g_row, g_col), or -1 when its orientation lies in no bin."""
    deg = math.atan2(gr, gc) * _DEG
    deg = deg % period
    b = int(deg / span)
    if b > n_bins - 1:
        b = n_bins - 1
    # the edges are span * b exactly as the reference computes them; fix any rounding drift
    while b > 0 and deg < span * b:
        b -= 1
    while b < n_bins and deg >= span * (b + 1):
        b += 1
    return b if b < n_bins else -1


@numba.njit(**_JIT)
def _bin_table_kernel(n_bins, period, span, out):  # pragma: no cover - numba
    # out[(gr + 255) * 511 + (gc + 255)] = bin of the integer gradient (gr, gc)
    for i in range(511):
        for j in range(511):
            gr = np.float64(i - 255)
            gc = np.float64(j - 255)
            if gr == 0.0 and gc == 0.0:
                out[i * 511 + j] = -1
            else:
                out[i * 511 + j] = _orientation_bin(gr, gc, n_bins, period, span)


_BIN_TABLES: dict[tuple[int, bool], np.ndarray] = {}


def _bin_table(n_bins: int, signed: bool) -> np.ndarray:
    """Orientation bin of every 8-bit gradient (an int16 table of 511 x 511 entries).

    Gradients of 8-bit images are integers in -255..255, so the bins (computed once with the
    same atan2 arithmetic) can be looked up instead of calling atan2 for every pixel.
    """
    key = (int(n_bins), bool(signed))
    table = _BIN_TABLES.get(key)
    if table is None:
        period = 360.0 if signed else 180.0
        table = np.empty(511 * 511, dtype=np.int16)
        _bin_table_kernel(n_bins, period, period / n_bins, table)
        _BIN_TABLES[key] = table
    return table


@numba.njit(**_JIT)
def _pixel_bin_mag(img, y, x, h, w, table):  # pragma: no cover - numba
    """(bin, magnitude) of the window gradient at (y, x) of an (h, w) image or window."""
    if y == 0 or y == h - 1:
        gr = 0
    else:
        gr = np.int64(img[y + 1, x]) - np.int64(img[y - 1, x])
    if x == 0 or x == w - 1:
        gc = 0
    else:
        gc = np.int64(img[y, x + 1]) - np.int64(img[y, x - 1])
    b = table[(gr + 255) * 511 + gc + 255]
    return b, math.sqrt(np.float64(gr * gr + gc * gc)), gr, gc


@numba.njit(parallel=True, **_JIT)
def _window_bin_integrals(windows, n_bins, table, out):  # pragma: no cover - numba
    # out (S, n_bins, H + 1, W + 1) float64: integral of the magnitude of each bin
    n, h, w = windows.shape
    for s in prange(n):
        img = windows[s]
        o = out[s]
        row = np.zeros((n_bins, w))
        for b in range(n_bins):
            for x in range(w + 1):
                o[b, 0, x] = 0.0
        for y in range(h):
            for x in range(w):
                bb, m, _, _ = _pixel_bin_mag(img, y, x, h, w, table)
                if bb >= 0:
                    row[bb, x] = m
            for b in range(n_bins):
                rb = row[b]
                prev = o[b, y]
                cur = o[b, y + 1]
                cur[0] = 0.0
                acc = 0.0
                for x in range(w):
                    acc += rb[x]
                    rb[x] = 0.0
                    cur[x + 1] = prev[x + 1] + acc


@numba.njit(parallel=True, **_JIT)
def _window_cell_hists(windows, n_bins, table, ch, cw, ncr, ncc, out):  # pragma: no cover
    # out (S, ncr * ncc * n_bins) float64: per-cell sums of the magnitude of each bin
    n, h, w = windows.shape
    for s in prange(n):
        img = windows[s]
        o = out[s]
        o[:] = 0.0
        for y in range(ncr * ch):
            base = (y // ch) * ncc
            for x in range(ncc * cw):
                b, m, _, _ = _pixel_bin_mag(img, y, x, h, w, table)
                if b >= 0:
                    o[(base + x // cw) * n_bins + b] += m


@numba.njit(parallel=True, **_JIT)
def _image_bin_channels(img, n_bins, table, axis_channel, out):  # pragma: no cover - numba
    # out (C, H, W): channels 0..n_bins-1 hold the full gradient magnitude of each bin; the
    # column-only gradient (0, g_col) of bin b goes to channel axis_channel[0, b], the row-only
    # gradient (g_row, 0) to axis_channel[1, b] (only the few bins that axis gradients can hit)
    h, w = img.shape
    for y in prange(h):
        for c in range(out.shape[0]):
            for x in range(w):
                out[c, y, x] = 0.0
        for x in range(w):
            b, m, gr, gc = _pixel_bin_mag(img, y, x, h, w, table)
            if b >= 0:
                out[b, y, x] = m
            if gc != 0:
                b = table[255 * 511 + gc + 255]
                if b >= 0:
                    out[axis_channel[0, b], y, x] = abs(gc)
            if gr != 0:
                b = table[(gr + 255) * 511 + 255]
                if b >= 0:
                    out[axis_channel[1, b], y, x] = abs(gr)


@numba.njit(parallel=True, **_JIT)
def _normalize_blocks(cs, blk_cells, inv, ent, n_bins, norm, out):  # pragma: no cover - numba
    """out[q, s] = entry ent[q] of normalized block inv[q]; cs (n_cells * n_bins, S)."""
    n_blk, n_cb = blk_cells.shape
    length = n_cb * n_bins
    n_s = cs.shape[1]
    n_q = inv.shape[0]
    chunk = 32
    n_chunks = (n_s + chunk - 1) // chunk
    eps2 = _EPS * _EPS
    for k in prange(n_chunks):
        buf = np.empty((n_blk, length))
        for s in range(k * chunk, min(n_s, (k + 1) * chunk)):
            for bk in range(n_blk):
                v = buf[bk]
                for c in range(n_cb):
                    row = blk_cells[bk, c] * n_bins
                    for b in range(n_bins):
                        # cell sums are non-negative; clip rounding residue of the rect sums
                        v[c * n_bins + b] = max(np.float64(cs[row + b, s]), 0.0)
                if norm == 0 or norm == 1:
                    ss = 0.0
                    for i in range(length):
                        ss += v[i] * v[i]
                    d = math.sqrt(ss + eps2)
                    for i in range(length):
                        v[i] = v[i] / d
                    if norm == 0:
                        ss = 0.0
                        for i in range(length):
                            if v[i] > 0.2:
                                v[i] = 0.2
                            ss += v[i] * v[i]
                        d = math.sqrt(ss + eps2)
                        for i in range(length):
                            v[i] = v[i] / d
                else:
                    sa = 0.0
                    for i in range(length):
                        sa += abs(v[i])
                    d = sa + _EPS
                    for i in range(length):
                        v[i] = v[i] / d
                        if norm == 3:
                            v[i] = math.sqrt(v[i])
            for q in range(n_q):
                out[q, s] = np.float32(buf[inv[q], ent[q]])


def _cell_terms(x: int, y: int, w: int, h: int, height: int, width: int) -> list[tuple]:
    """Rectangles ``(group, x, y, w, h, sign)`` summing a cell with the window-border gradient.

    Group 0: full image gradient; 1: column component only; 2: row component only.
    """
    terms = [(0, x, y, w, h, 1.0)]
    rows = sorted({r for r in (0, height - 1) if y <= r < y + h})
    cols = sorted({c for c in (0, width - 1) if x <= c < x + w})
    terms += [(0, x, r, w, 1, -1.0) for r in rows]
    terms += [(0, c, y, 1, h, -1.0) for c in cols]
    terms += [(0, c, r, 1, 1, 1.0) for r in rows for c in cols]
    x0, x1 = max(x, 1), min(x + w, width - 1)
    if x1 > x0:
        terms += [(1, x0, r, x1 - x0, 1, 1.0) for r in rows]
    y0, y1 = max(y, 1), min(y + h, height - 1)
    if y1 > y0:
        terms += [(2, c, y0, 1, y1 - y0, 1.0) for c in cols]
    return terms


@register_family
class HOGFamily(FeatureFamily):
    """HOG descriptor entries of a gray window (see the module docstring for the definition).

    Parameters
    ----------
    window_shape : (int, int)
    orientations : int, default=9
        Number of orientation bins.
    pixels_per_cell : (int, int), default=(8, 8)
        Cell size ``(rows, cols)``.
    cells_per_block : (int, int), default=(2, 2)
        Block size in cells ``(rows, cols)``.
    block_norm : {"L2-Hys", "L2", "L1", "L1-sqrt"}, default="L2-Hys"
    signed : bool, default=False
        False: unoriented gradients (0-180 degrees, scikit-image's HOG); True: oriented
        gradients (0-360 degrees).
    storage : {"cells", "integral"}, default="cells"
        What ``prepare`` keeps per window. ``"cells"``: the cell histograms
        (``n_cells * orientations`` float64 values, computed in one pass over the pixels);
        ``"integral"``: one integral image per orientation bin (``orientations * (H+1) * (W+1)``
        float64 values, about 60x more for 8x8 cells), whose cell sums are evaluated with the
        generic rectangle-sum kernel. Both give the same values up to float rounding (the cell
        sums are rounded to float32 before block normalization in both cases). Detection
        (``prepare_image``) always uses per-bin integral images of the whole image, since
        windows sit at arbitrary positions there.

    Features: ``n_blocks_row * n_blocks_col * br * bc * orientations``.
    """

    name = "hog"

    def __init__(self, window_shape: Sequence[int] = (24, 24), orientations: int = 9,
                 pixels_per_cell: Sequence[int] = (8, 8),
                 cells_per_block: Sequence[int] = (2, 2), block_norm: str = "L2-Hys",
                 signed: bool = False, storage: str = "cells") -> None:
        self.window_shape = check_window_shape(window_shape)
        if storage not in ("cells", "integral"):
            raise ValueError(f"storage: expected 'cells' or 'integral', got {storage!r}")
        self.storage = storage
        if isinstance(orientations, bool) or not isinstance(orientations, int | np.integer) \
                or not 1 <= orientations <= 360:
            raise ValueError(f"orientations: expected an integer in 1..360, got {orientations!r}")
        self.orientations = int(orientations)
        self.pixels_per_cell = check_window_shape(pixels_per_cell, "pixels_per_cell")
        self.cells_per_block = check_window_shape(cells_per_block, "cells_per_block")
        if block_norm not in HOG_NORMS:
            raise ValueError(f"block_norm: expected one of {sorted(HOG_NORMS)}, got {block_norm!r}")
        self.block_norm = block_norm
        self.signed = bool(signed)
        h, w = self.window_shape
        ch, cw = self.pixels_per_cell
        br, bc = self.cells_per_block
        self.n_cells = (h // ch, w // cw)
        self.n_blocks = (self.n_cells[0] - br + 1, self.n_cells[1] - bc + 1)
        if self.n_blocks[0] < 1 or self.n_blocks[1] < 1:
            raise ValueError(
                f"window_shape: a {h}x{w} window is too small for blocks of {br}x{bc} cells of "
                f"{ch}x{cw} pixels (needs at least {br * ch}x{bc * cw})")
        self._block_len = br * bc * self.orientations
        self.n_features = self.n_blocks[0] * self.n_blocks[1] * self._block_len
        self._period = 360.0 if self.signed else 180.0
        self._span = self._period / self.orientations
        self._table = _bin_table(self.orientations, self.signed)
        self._tables = {"windows": self._cell_tables(False), "image": self._cell_tables(True)}

    def _axis_channels(self) -> np.ndarray:
        """(2, n_bins) image channel of the column-only / row-only gradient of each bin (-1: none).

        Gradients along one axis point at 0/180 degrees (column-only) or 90/270 degrees
        (row-only), so they fall in at most two bins each; only those get a channel.
        """
        n = self.orientations
        t = self._table
        axis = np.full((2, n), -1, dtype=np.int64)
        nxt = n
        for a, idx in enumerate(((255 * 511 + 256, 255 * 511 + 254),
                                 (256 * 511 + 255, 254 * 511 + 255))):
            for k in idx:
                b = int(t[k])
                if b >= 0 and axis[a, b] < 0:
                    axis[a, b] = nxt
                    nxt += 1
        return axis

    def _cell_tables(self, borders: bool) -> tuple[np.ndarray, np.ndarray]:
        """Rect tables (n_cells, n_bins, R, 6) and weights (n_cells, n_bins, R)."""
        h, w = self.window_shape
        ch, cw = self.pixels_per_cell
        ncr, ncc = self.n_cells
        n = self.orientations
        axis = self._axis_channels()
        inv_area = 1.0 / (ch * cw)
        terms: list[list[list[tuple]]] = []
        for i in range(ncr):
            for j in range(ncc):
                x, y = j * cw, i * ch
                cell = _cell_terms(x, y, cw, ch, h, w) if borders else [(0, x, y, cw, ch, 1.0)]
                per_bin = []
                for b in range(n):
                    rows = []
                    for g, tx, ty, tw, th, sign in cell:
                        c = b if g == 0 else int(axis[g - 1, b])
                        if c >= 0:
                            rows.append((c, tx, ty, tw, th, sign * inv_area))
                    per_bin.append(rows)
                terms.append(per_bin)
        n_r = max(len(rows) for per_bin in terms for rows in per_bin)
        rects = np.zeros((len(terms), n, n_r, 6), dtype=np.int64)
        rects[..., 3:5] = 1
        weights = np.zeros((len(terms), n, n_r))
        for k, per_bin in enumerate(terms):
            for b, rows in enumerate(per_bin):
                for r, (c, tx, ty, tw, th, wt) in enumerate(rows):
                    rects[k, b, r] = (c, tx, ty, tw, th, 0)
                    weights[k, b, r] = wt
        return rects, weights

    def __reduce__(self) -> tuple:
        # rebuilt from the configuration: the bin table and rectangle tables are derived data
        return (_rebuild_hog, (self.get_config(),))

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape), "orientations": self.orientations,
                "pixels_per_cell": list(self.pixels_per_cell),
                "cells_per_block": list(self.cells_per_block),
                "block_norm": self.block_norm, "signed": self.signed, "storage": self.storage}

    def _entry(self, i: int) -> tuple[int, int, int, int, int]:
        br, bc = self.cells_per_block
        blk, e = divmod(i, self._block_len)
        bi, bj = divmod(blk, self.n_blocks[1])
        c, o = divmod(e, self.orientations)
        ci, cj = divmod(c, bc)
        return bi, bj, ci, cj, o

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        bi, bj, ci, cj, o = self._entry(i)
        ch, cw = self.pixels_per_cell
        cy, cx = (bi + ci) * ch, (bj + cj) * cw
        lo, hi = o * self._span, (o + 1) * self._span
        return {"family": self.name, "index": i, "block": (bi, bj), "cell": (ci, cj),
                "orientation_bin": o, "degrees": (lo, hi), "rect": (cx, cy, cw, ch),
                "text": f"HOG block ({bi}, {bj}) cell ({ci}, {cj}) at x={cx}, y={cy}: "
                        f"{self.block_norm}-normalized gradient energy in {lo:.1f}..{hi:.1f} deg"}

    def channels_nbytes(self, n_samples: int) -> int:
        h, w = self.window_shape
        if self.storage == "cells":
            return int(n_samples) * self.n_cells[0] * self.n_cells[1] * self.orientations * 8
        return int(n_samples) * self.orientations * (h + 1) * (w + 1) * 8

    def prepare(self, windows: Any) -> Channels:
        win = check_windows(windows, self.window_shape)
        check_memory(self.channels_nbytes(win.shape[0]), f"HOG {self.storage} channels",
                     advice="prepare fewer windows at a time or use fewer orientations")
        h, w = self.window_shape
        n = self.orientations
        if self.storage == "cells":
            ch, cw = self.pixels_per_cell
            ncr, ncc = self.n_cells
            cells = np.empty((win.shape[0], ncr * ncc * n))
            _window_cell_hists(win, n, self._table, ch, cw, ncr, ncc, cells)
            cells *= 1.0 / (ch * cw)
            arrays = {"cells": cells}
        else:
            ii = np.empty((win.shape[0], n, h + 1, w + 1))
            _window_bin_integrals(win, n, self._table, ii)
            arrays = {"ii": ii}
        return Channels(self.name, "windows", self.window_shape, win.shape[0], arrays,
                        {"storage": self.storage})

    def _plan(self, fids: np.ndarray, kind: str):
        """Cells and blocks the queried features need, and their rectangle tables."""
        br, bc = self.cells_per_block
        ncc = self.n_cells[1]
        blk, ent = np.divmod(fids, self._block_len)
        ub, inv = np.unique(blk, return_inverse=True)
        bi, bj = np.divmod(ub, self.n_blocks[1])
        ci, cj = np.divmod(np.arange(br * bc), bc)
        cells = (bi[:, None] + ci[None]) * ncc + (bj[:, None] + cj[None])
        uc, cidx = np.unique(cells, return_inverse=True)
        rects, weights = self._tables[kind]
        n_r = rects.shape[2]
        return (uc, rects[uc].reshape(-1, n_r, 6), weights[uc].reshape(-1, n_r),
                np.ascontiguousarray(cidx.reshape(cells.shape), dtype=np.int64),
                np.ascontiguousarray(inv.reshape(-1), dtype=np.int64),
                np.ascontiguousarray(ent, dtype=np.int64))

    def _finish(self, cs, blk_cells, inv, ent) -> np.ndarray:
        out = np.empty((inv.shape[0], cs.shape[1]), dtype=np.float32)
        _normalize_blocks(cs, blk_cells, inv, ent, self.orientations,
                          HOG_NORMS[self.block_norm], out)
        return out

    def evaluate(self, channels: Channels, feature_ids: Any = None,
                 sample_ids: Any = None) -> np.ndarray:
        ch = check_channels(channels, self, "windows")
        fids = check_feature_ids(feature_ids, self.n_features)
        sids = check_sample_ids(sample_ids, ch.n_samples)
        uc, rects, weights, blk_cells, inv, ent = self._plan(fids, "windows")
        if "cells" in ch.arrays:
            n = self.orientations
            cols = (uc[:, None] * n + np.arange(n)[None]).reshape(-1)
            cs = gather_columns(ch["cells"], cols, sids)
        else:
            cs = weighted_rect_sums(ch["ii"], rects, weights, sids)
        return self._finish(cs, blk_cells, inv, ent)

    def prepare_image(self, image: Any) -> Channels:
        img = check_image(image, self.window_shape)
        ih, iw = img.shape
        n = self.orientations
        axis = self._axis_channels()
        n_ch = int(axis.max()) + 1 if (axis >= 0).any() else n
        check_memory(2 * n_ch * (ih + 1) * (iw + 1) * 8, "HOG image orientation integrals",
                     advice="detect on a smaller image or use fewer orientations")
        dense = np.empty((n_ch, ih, iw))
        _image_bin_channels(img, n, self._table, axis, dense)
        ii = integral_channels(dense[None])
        return Channels(self.name, "image", (ih, iw), 1, {"ii": ii})

    def evaluate_at(self, channels: Channels, feature_ids: Any, positions: Any) -> np.ndarray:
        ch = check_channels(channels, self, "image")
        fids = check_feature_ids(feature_ids, self.n_features)
        _, rects, weights, blk_cells, inv, ent = self._plan(fids, "image")
        cs = weighted_rect_sums_at(ch["ii"], rects, weights, positions, self.window_shape)
        return self._finish(cs, blk_cells, inv, ent)


def _rebuild_hog(cfg: dict[str, Any]) -> HOGFamily:
    return HOGFamily(**cfg)


def hog_descriptor(window: Any, orientations: int = 9, pixels_per_cell: Sequence[int] = (8, 8),
                   cells_per_block: Sequence[int] = (2, 2), block_norm: str = "L2-Hys",
                   signed: bool = False) -> np.ndarray:
    """HOG descriptor of one gray window (or of each window of a stack).

    Functional counterpart of ``skimage.feature.hog(window, ..., feature_vector=True)``.

    Parameters
    ----------
    window : array-like (H, W) or (S, H, W), uint8

    Returns
    -------
    ndarray of float32, shape (n_features,) or (S, n_features)
    """
    arr = np.asarray(window)
    single = arr.ndim == 2
    if single:
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(f"window: expected (H, W) or (S, H, W), got shape {arr.shape}")
    fam = HOGFamily(arr.shape[1:3], orientations, pixels_per_cell, cells_per_block,
                    block_norm, signed)
    out = fam.compute(arr).T
    return out[0] if single else np.ascontiguousarray(out)
