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

Program: OP_MBLBP on the ``gray`` plane (categorical). :meth:`MBLBPFamily.from_blocks` builds a
family of explicitly listed grids (OpenCV LBP cascades).

Examples
--------
>>> import numpy as np
>>> fam = MBLBPFamily((24, 24))
>>> flat = np.full((1, 24, 24), 7, np.uint8)     # every block equals the centre: all bits set
>>> fam.compute(flat, [0, 1]).ravel().tolist()
[255.0, 255.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost._errors import InputError
from vjboost._limits import check_count
from vjboost.features.base import FeatureFamily, check_window_shape, register_family
from vjboost.features.program import Program

__all__ = ["MBLBPFamily", "mblbp_feature_table", "mblbp_reference"]


def _grid_description(family: FeatureFamily, i: int, grid: Any, prefix: str) -> dict[str, Any]:
    """``describe(i)`` of a feature on the 3×3 grid ``grid`` ``(x, y, w, h)``."""
    x, y, bw, bh = (int(v) for v in grid)
    return {
        "family": family.name,
        "index": i,
        "text": f"{prefix} 3x3 grid of {bw}x{bh} blocks at (x={x}, y={y})",
        "rect": (x, y, bw, bh),
        "cells": [(x + c * bw, y + r * bh, bw, bh) for r in range(3) for c in range(3)],
        "centre": 4,
        "window_shape": family.window_shape,
    }


def _grid_table(window_shape: tuple[int, int], max_block: Any) -> tuple[np.ndarray, Any]:
    """OpenCV's MB-LBP pool without blocks larger than ``max_block`` ``(height, width)`` (None:
    all), and ``max_block`` as stored in configs."""
    table = mblbp_feature_table(window_shape)
    if max_block is None:
        return table, None
    mbh, mbw = check_window_shape(max_block, "max_block")
    return table[(table[:, 2] <= mbw) & (table[:, 3] <= mbh)], [mbh, mbw]


def mblbp_feature_table(window_shape: tuple[int, int]) -> np.ndarray:
    """OpenCV's MB-LBP pool: int32 array (F, 4) of ``(x, y, block_w, block_h)``, in its order.

    Examples
    --------
    >>> mblbp_feature_table((3, 4)).tolist()     # one grid of 1x1 blocks, at x = 0 and at x = 1
    [[0, 0, 1, 1], [1, 0, 1, 1]]
    >>> mblbp_feature_table((24, 24)).shape
    (8464, 4)
    """
    H, W = check_window_shape(window_shape)  # noqa: N806
    # (W - 3 bw + 1)(H - 3 bh + 1) grids per block size, counted before enumerating them
    n = sum(W - 3 * b + 1 for b in range(1, W // 3 + 1)) * sum(
        H - 3 * b + 1 for b in range(1, H // 3 + 1))
    check_count(n, f"MB-LBP features of a {W}x{H} window", "max_features", unit=" features",
                advice="use a smaller window")
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


def mblbp_reference(window: np.ndarray, x: int, y: int, w: int, h: int) -> int:
    """MB-LBP code computed directly from pixel block sums (NumPy; for tests and docs).

    The 3 x 3 grid of ``w x h`` blocks starts at ``(x, y)``; each outer block whose pixel sum
    is at least the centre block's sets its bit (OpenCV's bit order: 128, 64, 32 along the top
    row, 16 right, 8, 4, 2 along the bottom row from the right, 1 left).

    Parameters
    ----------
    window : array-like of shape (H, W)
        Gray pixel values.
    x, y : int
        Top-left corner of the grid, in pixels.
    w, h : int
        Width and height of one block, in pixels (the grid covers ``3w x 3h``).

    Returns
    -------
    int
        The code, 0..255.

    Examples
    --------
    >>> win = np.zeros((3, 3), np.uint8)
    >>> win[0, :] = 9                      # the top row brighter than the centre
    >>> mblbp_reference(win, 0, 0, 1, 1)   # every block >= the centre: all bits set
    255
    >>> win[1, 1] = 5                      # only the top row now
    >>> mblbp_reference(win, 0, 0, 1, 1)
    224
    """
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

    Examples
    --------
    >>> fam = MBLBPFamily((6, 6))
    >>> fam.n_features, fam.describe(1)["text"]
    (25, 'mblbp 3x3 grid of 1x2 blocks at (x=0, y=0)')
    >>> win = np.full((1, 6, 6), 10, np.uint8)
    >>> win[0, :2] = 90                           # the top two rows bright
    >>> fam.compute(win, [0]).ravel().tolist()     # grid 0 (rows 0..2): bottom row below the centre
    [241.0]

    The bottom row's blocks (bits 8, 4 and 2) are darker than the centre: ``255 - 14``.
    """

    name = "mblbp"
    n_categories = 256

    def __init__(self, window_shape: tuple[int, int] = (24, 24), *,
                 max_block: Any = None) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        if h < 3 or w < 3:
            raise ValueError(f"window_shape: MB-LBP needs windows of at least 3x3, got {h}x{w}")
        table, self.max_block = _grid_table(self.window_shape, max_block)
        self._explicit = False
        self._set_table(table)

    def _set_table(self, table: np.ndarray) -> None:
        self._table = np.ascontiguousarray(table, dtype=np.int32)
        self.n_features = int(table.shape[0])

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

    def _build_program(self) -> Program:
        return Program.mblbp(self.window_shape, blocks=self._table)

    def _build_program_of(self, feature_ids: np.ndarray) -> Program:
        return Program.mblbp(self.window_shape, blocks=self._table[feature_ids])

    def kinds(self) -> np.ndarray:
        """Bool array (n_features,): all True (MB-LBP codes are categories); known without
        building the family's program."""
        return np.ones(self.n_features, dtype=bool)

    @property
    def table(self) -> np.ndarray:
        """Read-only (F, 4) int32 table of ``(x, y, block_w, block_h)``."""
        v = self._table.view()
        v.flags.writeable = False
        return v

    def describe(self, i: int) -> dict[str, Any]:
        """``rect``: OpenCV XML ``(x, y, block_w, block_h)`` of the top-left block; ``cells``:
        the 9 blocks ``(x, y, w, h)`` row by row, ``centre`` (4) the one compared with the
        others."""
        i = self._check_index(i)
        return _grid_description(self, i, self._table[i], "mblbp")

    def get_config(self) -> dict[str, Any]:
        if self._explicit:
            return {"window_shape": list(self.window_shape), "blocks": self._table.tolist()}
        return {"window_shape": list(self.window_shape), "max_block": self.max_block}

    @classmethod
    def from_config(cls, cfg: Any) -> MBLBPFamily:
        cfg = dict(cfg)
        shape = tuple(cfg.pop("window_shape", (24, 24)))
        if "blocks" in cfg:
            return cls.from_blocks(shape, **cfg)
        if cfg.get("max_block") is not None:
            cfg["max_block"] = tuple(cfg["max_block"])
        return cls(shape, **cfg)
