"""Multi-block local ternary patterns (MB-LTP): MB-LBP's 3×3 grids compared with a tolerance.

MB-LBP (:mod:`vjboost.features.mblbp`) sets a bit when an outer block's sum is at least the
centre's. On smooth regions (skin) the nine block means are nearly equal, so small noise (film
grain, halftone, JPEG blocks) flips those bits. A local ternary pattern (Tan & Triggs 2010)
instead calls a block *brighter* or *darker* than the centre only when it differs by more than
a tolerance, and *similar* otherwise; the ternary code is split into two binary codes:

* the **upper** half sets bit ``k`` when ``b_k − b_4 > τ·R``,
* the **lower** half sets bit ``k`` when ``b_4 − b_k > τ·R``,

with ``b_k`` the block sums (OpenCV's MB-LBP grid, bit order and weights) and ``R`` the
tolerance's *reference* (``reference=``):

* ``"window"`` (family ``mbltp``): ``σ·a``, ``a`` the block area and ``σ`` the window's
  grey-level standard deviation over its inner area — the normalisation of OpenCV's Haar
  features, one multiplication by the normaliser the detector computes for every window anyway;
* ``"mean"``: the mean of the nine block sums (a Weber fraction: free, the grid's 16 corners are
  read anyway; a local gain leaves the code unchanged);
* ``"local"``: ``σ_g·a``, ``σ_g`` the standard deviation of the grid's own pixels (four more
  reads, of the squared integral).

``detrend=True`` compares the blocks after removing the grid's own brightness ramp: the
least-squares plane through the nine block sums (``6·(b_k − b_4) − Gx·dx_k − Gy·dy_k``, ``Gx``
and ``Gy`` the right-minus-left column and bottom-minus-top row sums, ``(dx, dy)`` the block's
offset from the centre; integers, from the same 16 corners) against six times the tolerance.

Why the detrended, mean-referenced family (``mbltpd``, :class:`MBLTPDFamily`). Cascades of
window-referenced MB-LTP collapse on faces lit from one side. ``tools/ltp_stability.py --n 1000``
(2,000 *training* face windows, 20×20) measures the share of bits a transform flips relative to
how much the bit varies between faces (``2p(1−p)``; MB-LBP's ratios in brackets): a side light
(``face_data.relight``) flips 0.56 (0.57) of that variability for the window reference, 0.55–0.56
for the grid-mean and grid-σ references alone — a tolerance that follows the local light does
not help, because a light *gradient* adds a ramp to the block differences, and a ramp is not a
gain. Removing the grid's ramp does: 0.21–0.35 (window reference), 0.20–0.26 (grid σ),
**0.14–0.18 (grid mean)**. Detrending costs some scan stability (scan flips 0.24–0.30 against
MB-LBP's 0.18: the residual differences are second differences, noisier) and turns stay about as
bad as for MB-LBP (0.58–0.68 against 0.61; no grid code survives a rotation). ``mbltpd`` takes
the grid mean, the best under side light and free, with τ = 0.02, 0.05, 0.1, 0.2 of the mean
block (bits set on 41, 31, 19 and 8 % of faces: the same spread as ``mbltp``'s ladder).

Tolerances of ``mbltp``: :data:`DEFAULT_TOLERANCES` = 0.1, 0.2, 0.4 and 0.8 of σ. Measured on
training face windows degraded as scans (``tools/ltp_stability.py``, docs/features.md), the
share of bits a scan flips, relative to how much the bit varies between faces, falls steadily
with τ (0.99 of MB-LBP's at τ = 0.05, 0.95 at 0.2, 0.89 at 0.4, 0.82 at 0.8) while the bits
carry less (fewer are set); no single τ is best, so a factor-2 ladder lets boosting choose per
grid. Each (grid, τ, half) is one feature: 8 × MB-LBP's pool (31,752 features in 20×20).
A flat window has code 0 in both halves under every reference; the detector's σ gate applies
to all these cascades as it does to Haar ones.

Values are categorical codes 0..255 returned as float32; boosting uses 256-way subset splits as
for MB-LBP. Program: OP_MBLTP on ``gray`` (and ``gray2`` for σ); the reference and the
detrending are fields of each record, so every variant runs in the one node test. OpenCV has
no such feature, so these cascades are saved in vjboost's own format only.

Examples
--------
>>> import numpy as np
>>> fam = MBLTPFamily((9, 9), tolerances=(0.1,))
>>> win = np.full((1, 9, 9), 100, np.uint8)
>>> win[0, 0:3, :] = 180                       # a bright top row of blocks
>>> win[0, 3:6, 3:6] = 98                      # the centre slightly darker than the middle row
>>> fam.describe(17)["text"]                   # grid 8: 3x3 blocks; odd ids: lower halves
'mbltp lower τ=0.1 3x3 grid of 3x3 blocks at (x=0, y=0)'
>>> fam.compute(win, [16, 17]).ravel().tolist()  # upper: the top row; lower: nothing
[224.0, 0.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost._errors import InputError
from vjboost.features.base import FeatureFamily, check_window_shape, register_family
from vjboost.features.mblbp import _grid_description, _grid_table
from vjboost.features.program import LTP_REFERENCES, Program

__all__ = ["DEFAULT_TOLERANCES", "DETRENDED_TOLERANCES", "MBLTPDFamily", "MBLTPFamily",
           "mbltp_reference"]

#: τ in units of the window's σ (see the module docstring for the choice)
DEFAULT_TOLERANCES = (0.1, 0.2, 0.4, 0.8)

#: τ of :class:`MBLTPDFamily`, in units of the grid's mean block (see the module docstring)
DETRENDED_TOLERANCES = (0.02, 0.05, 0.1, 0.2)

# Bit weight of each block b0..b8 (b4, the centre, has none): OpenCV's MB-LBP order.
_BIT = (128, 64, 32, 1, 0, 16, 2, 4, 8)


def mbltp_reference(window: np.ndarray, x: int, y: int, w: int, h: int, *, tolerance: float,
                    upper: bool, reference: str = "window", detrend: bool = False) -> int:
    """One half of the MB-LTP code computed directly from pixels (NumPy; for tests and docs).

    The arithmetic is the kernel's: block differences as integers, the window's normaliser
    ``inv_var`` and the tolerance ``τ·a / inner area`` in float32, then
    ``float32(±difference) · inv_var > tolerance``.

    Parameters
    ----------
    window : array-like of shape (H, W)
        Gray pixel values (the whole detection window: σ is its inner area's).
    x, y : int
        Top-left corner of the 3×3 grid, in pixels.
    w, h : int
        Width and height of one block, in pixels.
    tolerance : float
        τ, in units of the reference.
    upper : bool
        The upper half (blocks brighter than the centre) or the lower one.
    reference : {"window", "mean", "local"}, default="window"
        The window's σ (per pixel), the mean of the nine blocks, or the grid's own σ (per
        pixel): for the last two a bit is set where ``float32(±difference) > float32(τ/9)·
        float32(X)``, ``X`` the nine blocks' sum or ``sqrt(A·Σv² − (Σv)²)`` over the grid.
    detrend : bool, default=False
        Compare ``6·(b_k − b_4) − Gx·dx_k − Gy·dy_k`` (the differences left by the least-squares
        plane through the nine block sums, times six; ``Gx``, ``Gy`` the right-minus-left and
        bottom-minus-top column/row sums, ``(dx, dy)`` the block's offset from the centre)
        against six times the tolerance.

    Returns
    -------
    int
        The half's code.

    Examples
    --------
    >>> win = np.full((5, 5), 50, np.uint8)
    >>> win[1, 1:4] = 90                   # top row of a 1x1-block grid at (1, 1)
    >>> win[3, 1:4] = 10                   # bottom row
    >>> mbltp_reference(win, 1, 1, 1, 1, tolerance=0.1, upper=True)
    224
    >>> mbltp_reference(win, 1, 1, 1, 1, tolerance=0.1, upper=False)
    14
    >>> mbltp_reference(win, 1, 1, 1, 1, tolerance=0.5, upper=True, reference="mean")
    224
    """
    win = np.asarray(window, dtype=np.int64)
    H, W = win.shape  # noqa: N806
    b = [int(win[y + j * h: y + (j + 1) * h, x + i * w: x + (i + 1) * w].sum())
         for j in range(3) for i in range(3)]
    d = [bk - b[4] for bk in b]
    f = 1.0
    if detrend:
        gx = (b[2] + b[5] + b[8]) - (b[0] + b[3] + b[6])
        gy = (b[6] + b[7] + b[8]) - (b[0] + b[1] + b[2])
        d = [6 * d[k] - gx * (k % 3 - 1) - gy * (k // 3 - 1) for k in range(9)]
        f = 6.0
    if reference == "window":
        inner = win[1:H - 1, 1:W - 1]
        nf = inner.size * int((inner * inner).sum()) - int(inner.sum()) ** 2  # exact integers
        m = np.float32(1.0 / np.sqrt(float(nf))) if nf > 0 else np.float32(0.0)
        s = np.float32(float(tolerance) * (w * h) / ((H - 2) * (W - 2)) * f)
    elif reference in ("mean", "local"):
        grid = win[y:y + 3 * h, x:x + 3 * w]
        if reference == "mean":
            xv = np.float32(sum(b))
        else:
            nf = grid.size * int((grid * grid).sum()) - int(grid.sum()) ** 2
            xv = np.float32(np.sqrt(float(nf)))
        m = np.float32(1.0)
        s = np.float32(np.float32(float(tolerance) / 9.0 * f) * xv)
    else:
        raise InputError(f"reference: expected 'window', 'mean' or 'local', got {reference!r}")
    sign = 1 if upper else -1
    return int(sum(_BIT[k] for k in range(9)
                   if k != 4 and np.float32(sign * d[k]) * m > s))


@register_family
class MBLTPFamily(FeatureFamily):
    """Multi-block local ternary patterns: the two halves of each grid's ternary code at each
    tolerance; categorical values 0..255.

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)``; at least 3×3.
    tolerances : sequence of float, default=DEFAULT_TOLERANCES
        τ values in units of the window's grey-level σ (each ≥ 0, at most 8 distinct values).
    max_block : (int, int), optional
        Largest block ``(height, width)`` to include (as :class:`MBLBPFamily`).
    reference : {"window", "mean", "local"}, default="window"
        What τ is a share of: the window's σ, the mean of the grid's nine blocks, or the σ of
        the grid's own pixels (see the module docstring).
    detrend : bool, default=False
        Compare the blocks after removing the grid's own brightness ramp (the least-squares
        plane through the nine block sums; see the module docstring).

    Notes
    -----
    Feature ``i`` is grid ``i // (2·T)`` of :func:`mblbp_feature_table` (OpenCV's order),
    tolerance ``(i // 2) % T`` and the upper half when ``i`` is even, the lower when odd.

    Examples
    --------
    >>> fam = MBLTPFamily((6, 6), tolerances=(0.1,))     # 25 grids, 1 tolerance, 2 halves
    >>> fam.n_features, fam.describe(1)["text"]
    (50, 'mbltp lower τ=0.1 3x3 grid of 1x1 blocks at (x=0, y=0)')
    >>> win = np.full((1, 6, 6), 50, np.uint8)
    >>> win[0, 0] = 90                                   # the first grid's top row brighter
    >>> win[0, 2] = 10                                   # and its bottom row darker
    >>> fam.compute(win, [0, 1]).ravel().tolist()        # upper: 128 + 64 + 32; lower: 8 + 4 + 2
    [224.0, 14.0]
    """

    name = "mbltp"
    n_categories = 256

    def __init__(self, window_shape: tuple[int, int] = (24, 24), *,
                 tolerances: Any = DEFAULT_TOLERANCES, max_block: Any = None,
                 reference: str = "window", detrend: bool = False) -> None:
        self.window_shape = check_window_shape(window_shape)
        h, w = self.window_shape
        if h < 3 or w < 3:
            raise InputError(f"window_shape: MB-LTP needs windows of at least 3x3, got {h}x{w}")
        tau = np.asarray(tolerances, dtype=np.float64).reshape(-1)
        if (tau.size == 0 or tau.size > 8 or not np.isfinite(tau).all() or tau.min() < 0
                or np.unique(tau).size != tau.size):
            raise InputError(f"tolerances: expected 1 to 8 distinct finite values >= 0 (in "
                             f"units of the window's sigma), got {list(tau)}")
        self.tolerances = [float(t) for t in tau]
        if reference not in LTP_REFERENCES:
            raise InputError(f"reference: expected one of {LTP_REFERENCES}, got {reference!r}")
        self.reference = str(reference)
        self.detrend = bool(detrend)
        table, self.max_block = _grid_table(self.window_shape, max_block)
        self._grids = np.ascontiguousarray(table, dtype=np.int32)
        self.n_features = int(table.shape[0]) * 2 * len(self.tolerances)

    def _split(self, feature_ids: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(grid rows (F, 4), τ (F,), upper (F,))`` of feature ids."""
        ids = np.asarray(feature_ids, dtype=np.int64)
        n_t = len(self.tolerances)
        return (self._grids[ids // (2 * n_t)], np.asarray(self.tolerances)[(ids // 2) % n_t],
                ids % 2 == 0)

    def _build_program_of(self, feature_ids: np.ndarray) -> Program:
        blocks, tau, upper = self._split(feature_ids)
        return Program.mbltp(self.window_shape, blocks=blocks, tolerance=tau, upper=upper,
                             reference=self.reference, detrend=self.detrend)

    def _build_program(self) -> Program:
        return self._build_program_of(np.arange(self.n_features))

    def kinds(self) -> np.ndarray:
        """Bool array (n_features,): all True (codes are categories)."""
        return np.ones(self.n_features, dtype=bool)

    def describe(self, i: int) -> dict[str, Any]:
        """``rect``: ``(x, y, block_w, block_h)`` of the top-left block (MB-LBP's); ``cells``:
        the 9 blocks; ``tolerance``: τ in units of σ; ``half``: ``"upper"`` or ``"lower"``."""
        i = self._check_index(i)
        blocks, tau, upper = self._split([i])
        half, t = ("upper" if upper[0] else "lower"), float(tau[0])
        return _grid_description(self, i, blocks[0], f"{self.name} {half} τ={t:g}") | {
            "tolerance": t, "half": half}

    def get_config(self) -> dict[str, Any]:
        cfg = {"window_shape": list(self.window_shape), "tolerances": list(self.tolerances),
               "max_block": self.max_block}
        if self.reference != "window" or self.detrend:  # older models load unchanged
            cfg["reference"], cfg["detrend"] = self.reference, self.detrend
        return cfg

    @classmethod
    def from_config(cls, cfg: Any) -> MBLTPFamily:
        cfg = dict(cfg)
        shape = tuple(cfg.pop("window_shape", (24, 24)))
        if cfg.get("max_block") is not None:
            cfg["max_block"] = tuple(cfg["max_block"])
        return cls(shape, **cfg)


@register_family
class MBLTPDFamily(MBLTPFamily):
    """MB-LTP that survives side lighting: :class:`MBLTPFamily` with ``reference="mean"``,
    ``detrend=True`` and :data:`DETRENDED_TOLERANCES` by default (pool name ``mbltpd``, e.g.
    ``--features haar,mbltpd``). The same op and kernel; only the defaults differ.

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)``; at least 3×3.
    tolerances : sequence of float, default=DETRENDED_TOLERANCES
        τ values in units of the grid's mean block (each ≥ 0, at most 8 distinct values).
    max_block : (int, int), optional
        Largest block ``(height, width)`` to include.
    reference : {"window", "mean", "local"}, default="mean"
        What τ is a share of (as :class:`MBLTPFamily`).
    detrend : bool, default=True
        Remove the grid's brightness ramp before comparing.

    Examples
    --------
    >>> import numpy as np
    >>> fam = MBLTPDFamily((9, 9), tolerances=(0.05,))
    >>> ramp = (60 + 12 * np.arange(9))[None, None, :].repeat(9, axis=1).astype(np.uint8)
    >>> int(fam.compute(ramp).max())                # a brightness ramp sets no bit
    0
    """

    name = "mbltpd"

    def __init__(self, window_shape: tuple[int, int] = (24, 24), *,
                 tolerances: Any = DETRENDED_TOLERANCES, max_block: Any = None,
                 reference: str = "mean", detrend: bool = True) -> None:
        super().__init__(window_shape, tolerances=tolerances, max_block=max_block,
                         reference=reference, detrend=detrend)
