"""Histograms of oriented gradients (HOG) over cells and blocks, every descriptor entry a feature.

Definition (cells on the window *interior*, so that a window cut out of an image and the same
window inside the image have the same features):

1. Gradient at every interior pixel ``1 <= y < H - 1``, ``1 <= x < W - 1`` of the window, from
   window pixels only: ``g_row = I[y + 1, x] - I[y - 1, x]``, ``g_col = I[y, x + 1] - I[y, x - 1]``;
   magnitude quantised to 1/8 grey level: ``m = round(8 * hypot(g_row, g_col))`` (integers, so
   cell sums are exact rectangle sums of integral planes).
2. Orientation ``deg = degrees(atan2(g_row, g_col)) mod 180`` (``mod 360`` when ``signed``);
   *hard* binning, bin ``b = floor(deg / span)`` with ``span = 180 / orientations`` (360 when
   signed); :func:`~vjboost.features.channels.orientation_table` tabulates it for every integer
   gradient.
3. Cells of ``pixels_per_cell = (ch, cw)`` pixels tile the interior from pixel ``(1, 1)``
   (``(H - 2) // ch`` by ``(W - 2) // cw`` cells; leftover rows/columns at the bottom/right are
   unused); a cell's histogram entry ``b`` is the sum of ``m`` over the cell's pixels of bin
   ``b`` (a rectangle sum of channel plane ``orient(n,u|s)#b``).
4. Blocks of ``cells_per_block = (br, bc)`` cells (at most 4 cells) at every cell position
   (stride one cell); each block's ``br * bc * orientations`` sums are normalised (``"L2-Hys"``:
   ``v / sqrt(|v|^2 + eps^2)``, clip at 0.2, renormalise; also ``"L2"``, ``"L1"``,
   ``"L1-sqrt"``) with ``eps = 1e-5 * 8 * ch * cw`` — scikit-image's ``eps = 1e-5`` on
   mean-per-pixel histograms, in units of our cell sums.
5. Feature ``i`` indexes the flattened ``(n_blocks_row, n_blocks_col, br, bc, orientations)``
   descriptor (scikit-image's ``feature_vector=True`` order).

Program: OP_HOG records on the orientation planes ``orient(n,u|s)#0..n-1``; evaluation shares
each block's normalisers between the entries of the block.

Relation to ``skimage.feature.hog(window[1:-1, 1:-1], ...)``: the same cells; the cells that
touch the interior's border differ (scikit-image sets the gradient to 0 on its input's border
where we use the real neighbours), the others agree up to the 1/8 magnitude quantisation (the
tests check both).

:func:`fhog_descriptor` is Felzenszwalb's HOG of a whole window (signed and unsigned
orientations and gradient energies per cell, each cell normalised by the four blocks around it),
the description dlib's detector reads; its values are not rectangle sums, so it is a descriptor
function rather than a family (a detection verifier reads it,
:class:`vjboost.cascade.verifier.DetectionVerifier`).

Examples
--------
>>> import numpy as np
>>> fam = HOGFamily((24, 24), orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2))
>>> fam.n_features                      # 2x2 cells on the 22x22 interior, one 2x2 block
36
>>> win = np.tile(np.arange(24, dtype=np.uint8) * 10, (24, 1))   # horizontal ramp: 0 degrees
>>> v = fam.compute(win[None])[:, 0]
>>> int(np.argmax(v) % 9), round(float(v.max()), 3)
(0, 0.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba import prange

from vjboost._threads import chunks
from vjboost.features.base import (
    FeatureFamily,
    check_window_shape,
    check_windows,
    register_family,
    window_stack,
)
from vjboost.features.channels import MAG_SCALE, ChannelSet
from vjboost.features.program import HOG_NORMS, Program

__all__ = ["HOG_NORMS", "HOGFamily", "fhog_descriptor", "fhog_length", "hog_descriptor"]

#: scikit-image's block-normalisation regulariser on mean-per-pixel histograms
_EPS = 1e-5
#: Felzenszwalb's HOG: the regulariser of a block's squared energy (grey levels squared), the
#: truncation of each normalised entry, and the weight of the four energy features
FHOG_EPS, FHOG_CLIP, FHOG_TEXTURE = 1e-4, 0.2, 0.2357


@register_family
class HOGFamily(FeatureFamily):
    """HOG descriptor entries of a gray window (see the module docstring for the definition).

    Parameters
    ----------
    window_shape : (int, int)
        At least 3x3.
    orientations : int, default=9
        Number of orientation bins.
    pixels_per_cell : (int, int), default=(8, 8)
        Cell size ``(rows, cols)``.
    cells_per_block : (int, int), default=(2, 2)
        Block size in cells ``(rows, cols)``, at most 4 cells.
    block_norm : {"L2-Hys", "L2", "L1", "L1-sqrt"}, default="L2-Hys"
    signed : bool, default=False
        False: unoriented gradients (0-180 degrees, scikit-image's HOG); True: oriented
        gradients (0-360 degrees).

    Features: ``n_blocks_row * n_blocks_col * br * bc * orientations``.

    Examples
    --------
    >>> fam = HOGFamily((10, 10), orientations=4, pixels_per_cell=(4, 4), cells_per_block=(1, 1))
    >>> fam.n_features                      # 2x2 one-cell blocks on the 8x8 interior, 4 bins each
    16
    >>> ramp = np.tile(np.arange(10, dtype=np.uint8) * 10, (10, 1))   # brighter to the right
    >>> v = fam.compute(np.stack([ramp, ramp.T]), [0, 1, 2, 3])   # the first cell's 4 bins
    >>> np.round(v, 3).T.tolist()           # all the energy at 0 degrees, then at 90 degrees
    [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
    """

    name = "hog"

    def __init__(self, window_shape: Sequence[int] = (24, 24), *, orientations: int = 9,
                 pixels_per_cell: Sequence[int] = (8, 8),
                 cells_per_block: Sequence[int] = (2, 2), block_norm: str = "L2-Hys",
                 signed: bool = False) -> None:
        self.window_shape = check_window_shape(window_shape)
        if isinstance(orientations, bool) or not isinstance(orientations, int | np.integer) \
                or not 1 <= orientations <= 255:
            raise ValueError(f"orientations: expected an integer in 1..255, got {orientations!r}")
        self.orientations = int(orientations)
        self.pixels_per_cell = check_window_shape(pixels_per_cell, "pixels_per_cell")
        self.cells_per_block = check_window_shape(cells_per_block, "cells_per_block")
        br, bc = self.cells_per_block
        if br * bc > 4:
            raise ValueError(f"cells_per_block: at most 4 cells per block, got {br}x{bc}")
        if block_norm not in HOG_NORMS:
            raise ValueError(f"block_norm: expected one of {sorted(HOG_NORMS)}, got {block_norm!r}")
        self.block_norm = block_norm
        self.signed = bool(signed)
        h, w = self.window_shape
        ch, cw = self.pixels_per_cell
        self.n_cells = (max(h - 2, 0) // ch, max(w - 2, 0) // cw)
        self.n_blocks = (self.n_cells[0] - br + 1, self.n_cells[1] - bc + 1)
        if self.n_blocks[0] < 1 or self.n_blocks[1] < 1:
            raise ValueError(
                # width x height, as vjtrain --window and the other families' messages
                f"window_shape: a {w}x{h} window (width x height) is too small for blocks of "
                f"{bc}x{br} cells of {cw}x{ch} pixels on its interior (needs at least "
                f"{bc * cw + 2}x{br * ch + 2})")
        self._block_len = br * bc * self.orientations
        self.n_features = self.n_blocks[0] * self.n_blocks[1] * self._block_len
        self._span = (360.0 if self.signed else 180.0) / self.orientations

    def get_config(self) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape), "orientations": self.orientations,
                "pixels_per_cell": list(self.pixels_per_cell),
                "cells_per_block": list(self.cells_per_block),
                "block_norm": self.block_norm, "signed": self.signed}

    def _entries(self, ids: np.ndarray) -> tuple[np.ndarray, ...]:
        """Block row/col, cell row/col in the block and bin of each feature id."""
        br, bc = self.cells_per_block
        blk, e = np.divmod(ids, self._block_len)
        bi, bj = np.divmod(blk, self.n_blocks[1])
        c, o = np.divmod(e, self.orientations)
        ci, cj = np.divmod(c, bc)
        return bi, bj, ci, cj, o

    def _build_program(self) -> Program:
        n = self.orientations
        chans = ChannelSet([f"orient({n},{'s' if self.signed else 'u'})#{b}" for b in range(n)])
        ch, cw = self.pixels_per_cell
        br, bc = self.cells_per_block
        ids = np.arange(self.n_features)
        bi, bj, ci, cj, o = self._entries(ids)
        ki, kj = np.divmod(np.arange(br * bc), bc)
        cells = np.empty((self.n_features, br * bc, 4), dtype=np.int64)
        cells[:, :, 0] = 1 + (bj[:, None] + kj[None]) * cw
        cells[:, :, 1] = 1 + (bi[:, None] + ki[None]) * ch
        cells[:, :, 2] = cw
        cells[:, :, 3] = ch
        return Program.hog(self.window_shape, chans, first_plane=0, n_bins=n, cells=cells,
                           target=(ci * bc + cj) * n + o, block_norm=self.block_norm,
                           eps=_EPS * MAG_SCALE * ch * cw, clip=0.2)

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        bi, bj, ci, cj, o = (int(v) for v in self._entries(np.int64(i)))
        ch, cw = self.pixels_per_cell
        cy, cx = 1 + (bi + ci) * ch, 1 + (bj + cj) * cw
        lo, hi = o * self._span, (o + 1) * self._span
        return {"family": self.name, "index": i, "block": (bi, bj), "cell": (ci, cj),
                "orientation_bin": o, "degrees": (lo, hi), "rect": (cx, cy, cw, ch),
                "text": f"HOG block ({bi}, {bj}) cell ({ci}, {cj}) at x={cx}, y={cy}: "
                        f"{self.block_norm}-normalized gradient energy in {lo:.1f}..{hi:.1f} deg"}


def hog_descriptor(window: Any, *, orientations: int = 9,
                   pixels_per_cell: Sequence[int] = (8, 8),
                   cells_per_block: Sequence[int] = (2, 2), block_norm: str = "L2-Hys",
                   signed: bool = False) -> np.ndarray:
    """HOG descriptor of one gray window (or of each window of a stack).

    The :class:`HOGFamily` definition (interior cells) with ``feature_vector=True`` order.

    Parameters
    ----------
    window : array-like (H, W) or (S, H, W), uint8

    Returns
    -------
    ndarray of float32, shape (n_features,) or (S, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> hog_descriptor(np.zeros((18, 18), np.uint8), pixels_per_cell=(4, 4)).shape
    (324,)
    """
    arr, single = window_stack(window, name="window")
    fam = HOGFamily(arr.shape[1:3], orientations=orientations, pixels_per_cell=pixels_per_cell,
                    cells_per_block=cells_per_block, block_norm=block_norm, signed=signed)
    out = fam.compute(arr).T
    return out[0] if single else np.ascontiguousarray(out)


def fhog_length(window_shape: Sequence[int], *, pixels_per_cell: int = 8,
                orientations: int = 9) -> int:
    """Length of :func:`fhog_descriptor`'s vector for one window.

    Parameters
    ----------
    window_shape : (int, int)
        ``(H, W)`` in pixels.
    pixels_per_cell : int, default=8
    orientations : int, default=9

    Returns
    -------
    int
        ``((H - 2) // p) * ((W - 2) // p) * (3 * orientations + 4)``.

    Examples
    --------
    >>> fhog_length((40, 40), pixels_per_cell=5)
    1519
    """
    h, w = check_window_shape(window_shape)
    p, n = _fhog_params(pixels_per_cell, orientations)
    cy, cx = (h - 2) // p, (w - 2) // p
    if cy < 1 or cx < 1:
        raise ValueError(f"window_shape: a {h}x{w} window holds no cell of {p}x{p} pixels on its "
                         f"interior (needs at least {p + 2}x{p + 2})")
    return cy * cx * (3 * n + 4)


def _fhog_params(pixels_per_cell: Any, orientations: Any) -> tuple[int, int]:
    for name, v, lo, hi in (("pixels_per_cell", pixels_per_cell, 1, 255),
                            ("orientations", orientations, 1, 90)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not lo <= v <= hi:
            raise ValueError(f"{name}: expected an integer in {lo}..{hi}, got {v!r}")
    return int(pixels_per_cell), int(orientations)


def fhog_descriptor(window: Any, *, pixels_per_cell: int = 8, orientations: int = 9) -> np.ndarray:
    """Felzenszwalb's HOG of one gray window (or of each window of a stack).

    The descriptor of Felzenszwalb, Girshick, McAllester and Ramanan (PAMI 2010), which dlib's
    and the deformable-parts detectors read. On the interior pixels of the window (the
    :class:`HOGFamily` gradient: central differences of window pixels only), each pixel's
    gradient magnitude goes to the nearest of ``2 n`` directions (``n = orientations``, signed,
    0-360 degrees) and is shared bilinearly between the four cells whose centres surround it;
    cells of ``p = pixels_per_cell`` pixels tile the interior from pixel ``(1, 1)``. A cell's
    four normalisers are ``1 / sqrt(E + 1e-4)`` for the 2x2-cell blocks that contain it, ``E``
    the block's sum of the cells' squared unsigned histograms (``sum_o (h_o + h_{o+n})^2``);
    blocks reaching past the grid reuse its edge cells. Per cell, ``3 n + 4`` values, each
    normalised entry truncated at 0.2: the ``2 n`` signed entries and the ``n`` unsigned ones
    (``h_o + h_{o+n}``), each half the sum of its four normalised values; then, per
    normaliser, 0.2357 times the sum of the ``2 n`` truncated signed entries (gradient energy
    around the cell). Dividing by block energies makes it invariant to contrast (up to the
    regulariser).

    Parameters
    ----------
    window : array-like (H, W) or (S, H, W), uint8
    pixels_per_cell : int, default=8
        Cell side ``p`` in pixels.
    orientations : int, default=9
        ``n``: unsigned orientation bins (``2 n`` signed ones).

    Returns
    -------
    ndarray of float32, shape (n_features,) or (S, n_features)
        Cells in row-major order, each cell's ``3 n + 4`` values together: signed, unsigned,
        energy; :func:`fhog_length` values per window.

    Examples
    --------
    >>> import numpy as np
    >>> ramp = np.tile(np.arange(20, dtype=np.uint8) * 10, (20, 1))   # gradient at 0 degrees
    >>> v = fhog_descriptor(ramp, pixels_per_cell=6).reshape(3, 3, 31)
    >>> int(np.argmax(v[1, 1, :18])), int(np.argmax(v[1, 1, 18:27]))
    (0, 0)
    """
    p, n = _fhog_params(pixels_per_cell, orientations)
    arr, single = window_stack(window, name="window")
    if arr.shape[0]:  # an empty stack has no descriptors (a verifier may read none)
        arr = check_windows(arr, arr.shape[1:3], name="window")
    q = fhog_length(arr.shape[1:3], pixels_per_cell=p, orientations=n)
    out = np.empty((arr.shape[0], q), np.float32)
    size = _fhog_work(arr.shape[1:3], p, n)
    if arr.shape[0] >= _FHOG_PARALLEL:
        _fhog(arr, p, n, out, np.empty((chunks(arr.shape[0]), size)))
    elif arr.shape[0]:
        _fhog_serial(arr, p, n, out, np.empty(size))
    return out[0] if single else out


#: stacks of at least this many windows are described by the threads (a verifier's training
#: set); fewer (a detection's few dozen groups) by one loop, whose compilation is 0.8 s shorter
#: on a first detection. Both run the same per-window function: the values are the same.
_FHOG_PARALLEL = 256


@numba.njit(cache=True, nogil=True, parallel=True)
def _fhog(windows, p, n, out, work):  # pragma: no cover - numba
    # the window's work is its own compiled function: numba's parallel pipeline then lowers a
    # loop of calls, not the whole body (3.2 s of compilation before, 1.9 s with it); one
    # scratch row of ``work`` per chunk of windows, so that a thread never shares one
    n_chunks = work.shape[0]
    n_win = windows.shape[0]
    for c in prange(n_chunks):
        for k in range(c * n_win // n_chunks, (c + 1) * n_win // n_chunks):
            _fhog_one(windows[k], p, n, out[k], work[c])


@numba.njit(cache=True, nogil=True)
def _fhog_serial(windows, p, n, out, work):  # pragma: no cover - numba
    for k in range(windows.shape[0]):
        _fhog_one(windows[k], p, n, out[k], work)


def _fhog_work(shape: tuple[int, int], p: int, n: int) -> int:
    """float64 scratch entries :func:`_fhog_one` needs for windows of ``shape`` (H, W)."""
    cells = ((shape[0] - 2) // p) * ((shape[1] - 2) // p)
    return cells * (2 * n + 1) + 8


@numba.njit(cache=True, nogil=True)
def _fhog_one(img, p, n, out, work):  # pragma: no cover - numba
    """Felzenszwalb's HOG of one window ``img`` (H, W) into ``out`` (cells · (3 n + 4),).
    ``work``: float64 scratch of :func:`_fhog_work` entries (the signed histograms, the cells'
    energies, a cell's four normalisers and four texture sums), passed in rather than allocated
    here: each array numba allocates in a kernel is one more function to compile on a first
    detection."""
    h, w = img.shape
    cy, cx = (h - 2) // p, (w - 2) // p
    nb = 2 * n
    per = 3 * n + 4
    step = 2.0 * np.pi / nb
    n_hist = cy * cx * nb
    e0 = n_hist              # energies (cy · cx)
    r0 = e0 + cy * cx        # a cell's normalisers (4), then its texture sums (4)
    for i in range(n_hist):
        work[i] = 0.0
    for u in range(cy * p):
        y = u + 1
        fy = (u + 0.5) / p - 0.5
        iy = int(np.floor(fy))
        wy1 = fy - iy
        for v in range(cx * p):
            x = v + 1
            gy = float(img[y + 1, x]) - float(img[y - 1, x])
            gx = float(img[y, x + 1]) - float(img[y, x - 1])
            m = np.sqrt(gy * gy + gx * gx)
            if m == 0.0:
                continue
            a = np.arctan2(gy, gx)
            if a < 0.0:
                a += 2.0 * np.pi
            o = int(np.floor(a / step + 0.5)) % nb
            fx = (v + 0.5) / p - 0.5
            ix = int(np.floor(fx))
            wx1 = fx - ix
            for dy in range(2):
                yy = iy + dy
                if yy < 0 or yy >= cy:
                    continue
                wy = wy1 if dy else 1.0 - wy1
                for dx in range(2):
                    xx = ix + dx
                    if xx < 0 or xx >= cx:
                        continue
                    work[(yy * cx + xx) * nb + o] += m * wy * (wx1 if dx else 1.0 - wx1)
    for i in range(cy):
        for j in range(cx):
            e = 0.0
            hb = (i * cx + j) * nb
            for o in range(n):
                t = work[hb + o] + work[hb + o + n]
                e += t * t
            work[e0 + i * cx + j] = e
    for i in range(cy):
        for j in range(cx):
            b = 0
            for a0 in range(-1, 1):
                for b0 in range(-1, 1):
                    e = 0.0
                    for di in range(2):
                        ii = min(max(i + a0 + di, 0), cy - 1)
                        for dj in range(2):
                            jj = min(max(j + b0 + dj, 0), cx - 1)
                            e += work[e0 + ii * cx + jj]
                    work[r0 + b] = 1.0 / np.sqrt(e + FHOG_EPS)
                    b += 1
            base = (i * cx + j) * per
            hb = (i * cx + j) * nb
            for r in range(4):
                work[r0 + 4 + r] = 0.0
            for o in range(nb):
                acc = 0.0
                for r in range(4):
                    t = min(work[hb + o] * work[r0 + r], FHOG_CLIP)
                    acc += t
                    work[r0 + 4 + r] += t
                out[base + o] = 0.5 * acc
            for o in range(n):
                u2 = work[hb + o] + work[hb + o + n]
                acc = 0.0
                for r in range(4):
                    acc += min(u2 * work[r0 + r], FHOG_CLIP)
                out[base + nb + o] = 0.5 * acc
            for r in range(4):
                out[base + 3 * n + r] = FHOG_TEXTURE * work[r0 + 4 + r]
