"""Multi-block LBP (MB-LBP) features as in OpenCV's LBP cascades.

A feature is a 3×3 grid of ``w × h`` blocks whose top-left block starts at ``(x, y)``; its value is
the 8-bit code comparing the eight outer block sums ``b0 … b8`` (row-major, ``b4`` the centre)
with the centre, clockwise from the top-left block, most significant bit first, comparison ``≥``::

    code = 128·[b0 ≥ b4] + 64·[b1 ≥ b4] + 32·[b2 ≥ b4] + 16·[b5 ≥ b4]
         +   8·[b8 ≥ b4] +  4·[b7 ≥ b4] +  2·[b6 ≥ b4] +  1·[b3 ≥ b4]

(OpenCV ``LBPEvaluator::OptFeature::calc``). Values are categorical codes 0..255 returned as
float32; boosting uses 256-way subset splits on them. No normalisation.

The pool is OpenCV traincascade's (``CvLBPEvaluator::generateFeatures``): ``x`` outermost,
then ``y``, block width ``w`` in ``1 .. W // 3``, block height ``h`` in ``1 .. H // 3``, keeping the
grids inside the window — 3,249 features in 19×19, 8,464 in 24×24. ``describe(i)["rect"]`` is the
OpenCV XML ``rect`` ``(x, y, w, h)``.

Relation to ``skimage.feature.multiblock_lbp(int_image, r, c, width, height)``: it returns the
same code for the grid at row ``r = y``, column ``c = x`` with block ``width = w`` and
``height = h`` (same neighbour order, bit weights and ``≥`` comparison; the tests check it).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import prange

from vjboost._errors import InputError
from vjboost._memory import check_memory
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
from vjboost.features.integral import _integral_into, integral_dtype
from vjboost.features.program import Program

__all__ = ["MBLBPFamily", "mblbp_feature_table", "mblbp_reference"]


def mblbp_feature_table(window_shape: tuple[int, int]) -> np.ndarray:
    """OpenCV's MB-LBP pool: int32 array (F, 4) of ``(x, y, block_w, block_h)``, in its order."""
    H, W = check_window_shape(window_shape)  # noqa: N806
    x, y, bw, bh = (
        a.ravel()
        for a in np.meshgrid(
            np.arange(W), np.arange(H), np.arange(1, W // 3 + 1), np.arange(1, H // 3 + 1),
            indexing="ij",
        )
    )
    keep = (x + 3 * bw <= W) & (y + 3 * bh <= H)
    return np.stack([x[keep], y[keep], bw[keep], bh[keep]], axis=1).astype(np.int32)


# Bit weight of each block b0..b8 (b4, the centre, has none).
_BIT = np.array([128, 64, 32, 1, 0, 16, 2, 4, 8], dtype=np.int64)


def _grid_offsets(table: np.ndarray, row_stride: int) -> np.ndarray:
    """Flat offsets (F, 16) of the 4×4 grid points of each feature's block grid."""
    x, y, bw, bh = (table[:, k].astype(np.int64) for k in range(4))
    out = np.empty((table.shape[0], 16), dtype=np.int64)
    for j in range(4):
        for i in range(4):
            out[:, 4 * j + i] = (y + j * bh) * row_stride + (x + i * bw)
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _prepare_kernel(windows, out):  # pragma: no cover - numba
    for s in prange(windows.shape[0]):
        _integral_into(windows[s], out[s])


@numba.njit(parallel=True, cache=True, nogil=True)
def _mblbp_kernel(flat, bases, grid, out):  # pragma: no cover - numba
    """``out[q, p]`` = MB-LBP code of feature ``q`` (grid offsets ``grid[q]``) at ``bases[p]``.

    ``grid[q]`` holds the 16 flat offsets of the 4x4 grid points ``g[j, i]`` (row ``j``, column
    ``i``); block ``(j, i)`` sums to ``g[j,i] - g[j,i+1] - g[j+1,i] + g[j+1,i+1]``. Scalars only,
    so that everything stays in registers.
    """
    n_q = grid.shape[0]
    n_p = bases.shape[0]
    block = 64
    n_blocks = (n_p + block - 1) // block
    for blk in prange(n_blocks):
        p0 = blk * block
        p1 = min(p0 + block, n_p)
        for q in range(n_q):
            g = grid[q]
            for p in range(p0, p1):
                a = flat[bases[p]:]
                g00 = np.int64(a[g[0]])
                g01 = np.int64(a[g[1]])
                g02 = np.int64(a[g[2]])
                g03 = np.int64(a[g[3]])
                g10 = np.int64(a[g[4]])
                g11 = np.int64(a[g[5]])
                g12 = np.int64(a[g[6]])
                g13 = np.int64(a[g[7]])
                g20 = np.int64(a[g[8]])
                g21 = np.int64(a[g[9]])
                g22 = np.int64(a[g[10]])
                g23 = np.int64(a[g[11]])
                g30 = np.int64(a[g[12]])
                g31 = np.int64(a[g[13]])
                g32 = np.int64(a[g[14]])
                g33 = np.int64(a[g[15]])
                c = g11 - g12 - g21 + g22
                code = 0
                if g00 - g01 - g10 + g11 >= c:
                    code |= 128
                if g01 - g02 - g11 + g12 >= c:
                    code |= 64
                if g02 - g03 - g12 + g13 >= c:
                    code |= 32
                if g12 - g13 - g22 + g23 >= c:
                    code |= 16
                if g22 - g23 - g32 + g33 >= c:
                    code |= 8
                if g21 - g22 - g31 + g32 >= c:
                    code |= 4
                if g20 - g21 - g30 + g31 >= c:
                    code |= 2
                if g10 - g11 - g20 + g21 >= c:
                    code |= 1
                out[q, p] = np.float32(code)


def mblbp_reference(window: np.ndarray, x: int, y: int, w: int, h: int) -> int:
    """MB-LBP code computed directly from pixel block sums (NumPy; for tests and docs)."""
    win = np.asarray(window, dtype=np.int64)
    b = [win[y + j * h : y + (j + 1) * h, x + i * w : x + (i + 1) * w].sum()
         for j in range(3) for i in range(3)]
    return int(sum(int(_BIT[k]) for k in range(9) if k != 4 and b[k] >= b[4]))


@register_family
class MBLBPFamily(FeatureFamily):
    """MB-LBP features (OpenCV LBP cascades); categorical values 0..255.

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)``; at least 3×3.
    max_block : (int, int), optional
        Largest block ``(height, width)`` to include (default: no limit beyond the window, as
        OpenCV). Order is OpenCV's restricted to the kept features.
    """

    name = "mblbp"
    n_categories = 256

    def __init__(
        self, window_shape: tuple[int, int] = (24, 24), max_block: Any = None
    ) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        if h < 3 or w < 3:
            raise ValueError(f"window_shape: MB-LBP needs windows of at least 3x3, got {h}x{w}")
        table = mblbp_feature_table(self.window_shape)
        if max_block is not None:
            mbh, mbw = check_window_shape(max_block, "max_block")
            table = table[(table[:, 2] <= mbw) & (table[:, 3] <= mbh)]
            max_block = [mbh, mbw]
        self.max_block = max_block
        self._explicit = False
        self._set_table(table)

    def _set_table(self, table: np.ndarray) -> None:
        self._table = np.ascontiguousarray(table, dtype=np.int32)
        self.n_features = int(table.shape[0])
        self._win_grid = _grid_offsets(self._table, self.window_shape[1] + 1)
        self._program: Program | None = None

    @classmethod
    def from_blocks(cls, window_shape: tuple[int, int], *, blocks: Any) -> MBLBPFamily:
        """A family of explicitly listed MB-LBP features (e.g. those of an OpenCV LBP cascade).

        Parameters
        ----------
        window_shape : (int, int)
            ``(height, width)``.
        blocks : array-like of int, shape (F, 4)
            ``(x, y, w, h)`` of the top-left block of each 3×3 grid (OpenCV XML ``rect``).

        Returns
        -------
        MBLBPFamily
            Feature ``i`` is row ``i``; :meth:`get_config` stores the table.

        Examples
        --------
        >>> fam = MBLBPFamily.from_blocks((24, 24), blocks=[[0, 0, 2, 3], [5, 4, 6, 6]])
        >>> fam.n_features, fam.describe(1)["rect"]
        (2, (5, 4, 6, 6))
        """
        self = cls.__new__(cls)
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        b = np.asarray(blocks)
        if b.ndim != 2 or b.shape[1] != 4 or b.shape[0] == 0:
            raise InputError(f"blocks: expected a non-empty (F, 4) table of (x, y, w, h), got "
                             f"shape {b.shape}")
        if b.dtype.kind not in "iu":
            raise InputError(f"blocks: expected integers, got dtype {b.dtype}")
        b = b.astype(np.int64)
        x, y, bw, bh = b.T
        bad = (x < 0) | (y < 0) | (bw < 1) | (bh < 1) | (x + 3 * bw > w) | (y + 3 * bh > h)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise InputError(f"blocks: the 3x3 grid of feature {k} {tuple(int(v) for v in b[k])} "
                             f"does not fit the {w}x{h} window")
        self.max_block = None
        self._explicit = True
        self._set_table(b)
        return self

    @property
    def opencv_type(self) -> str:
        """``"LBP"``: MB-LBP features are OpenCV's LBP cascade features."""
        return "LBP"

    def program(self, feature_ids: Any = None) -> Program:
        """The features as a :class:`~vjboost.features.program.Program` (OP_MBLBP, gray)."""
        if self._program is None:
            self._program = Program.mblbp(self.window_shape, blocks=self._table)
        if feature_ids is None:
            return self._program
        return self._program.take(check_feature_ids(feature_ids, self.n_features))

    @property
    def table(self) -> np.ndarray:
        """Read-only (F, 4) int32 table of ``(x, y, block_w, block_h)``."""
        v = self._table.view()
        v.flags.writeable = False
        return v

    def describe(self, i: int) -> dict[str, Any]:
        """``rect``: OpenCV XML ``(x, y, block_w, block_h)`` of the top-left block."""
        i = self._check_index(i)
        x, y, bw, bh = (int(v) for v in self._table[i])
        return {
            "family": self.name,
            "index": i,
            "text": f"mblbp 3x3 grid of {bw}x{bh} blocks at (x={x}, y={y})",
            "rect": (x, y, bw, bh),
            "window_shape": self.window_shape,
        }

    def get_config(self) -> dict[str, Any]:
        if self._explicit:
            return {"window_shape": list(self.window_shape), "blocks": self._table.tolist()}
        return {"window_shape": list(self.window_shape), "max_block": self.max_block}

    @classmethod
    def from_config(cls, cfg: Any) -> MBLBPFamily:
        cfg = dict(cfg)
        cfg["window_shape"] = tuple(cfg.get("window_shape", (24, 24)))
        if "blocks" in cfg:
            return cls.from_blocks(cfg.pop("window_shape"), **cfg)
        if cfg.get("max_block") is not None:
            cfg["max_block"] = tuple(cfg["max_block"])
        return cls(**cfg)

    def kind(self, i: int) -> str:
        self._check_index(i)
        return "categorical"

    def kinds(self) -> np.ndarray:
        return np.ones(self.n_features, dtype=bool)

    def channels_nbytes(self, n_samples: int) -> int:
        h, w = self.window_shape
        return int(n_samples) * (h + 1) * (w + 1) * np.dtype(integral_dtype(h, w)).itemsize

    def prepare(self, windows: Any) -> Channels:
        """Upright integral images ``"ii"`` (S, H + 1, W + 1) (int32 while exact)."""
        arr = check_windows(windows, self.window_shape)
        check_memory(
            self.channels_nbytes(arr.shape[0]),
            f"MB-LBP integral images of {arr.shape[0]} windows",
            advice="Prepare the windows in smaller batches.",
        )
        h, w = self.window_shape
        ii = np.empty((arr.shape[0], h + 1, w + 1), dtype=integral_dtype(h, w))
        _prepare_kernel(arr, ii)
        return Channels(self.name, "windows", self.window_shape, arr.shape[0], {"ii": ii})

    def prepare_image(self, image: Any) -> Channels:
        """Upright integral ``"ii"`` (1, Hi + 1, Wi + 1) int64 of a whole gray image."""
        img = check_image(image, self.window_shape)
        ii = np.empty((1, img.shape[0] + 1, img.shape[1] + 1), dtype=np.int64)
        _prepare_kernel(img[None], ii)
        return Channels(self.name, "image", img.shape, 1, {"ii": ii})

    def evaluate(self, channels: Channels, feature_ids: Any = None, sample_ids: Any = None):
        """Codes 0..255 as float32, shape (len(feature_ids), len(sample_ids))."""
        ch = check_channels(channels, self, "windows")
        fids = check_feature_ids(feature_ids, self.n_features)
        sids = check_sample_ids(sample_ids, ch.n_samples)
        ii = ch["ii"]
        step = ii.shape[1] * ii.shape[2]
        out = np.empty((fids.shape[0], sids.shape[0]), dtype=np.float32)
        _mblbp_kernel(ii.reshape(-1), sids * step, self._win_grid[fids], out)
        return out

    def evaluate_at(self, channels: Channels, feature_ids: Any, positions: Any) -> np.ndarray:
        """Codes for the windows at ``positions`` (P, 2) ``(y, x)`` of a prepared image."""
        ch = check_channels(channels, self, "image")
        fids = check_feature_ids(feature_ids, self.n_features)
        pos = check_positions(positions, ch.shape, self.window_shape)
        ii = ch["ii"]
        wp = ii.shape[2]
        grid = _grid_offsets(self._table[fids], wp)
        out = np.empty((fids.shape[0], pos.shape[0]), dtype=np.float32)
        _mblbp_kernel(ii.reshape(-1), pos[:, 0] * wp + pos[:, 1], grid, out)
        return out
