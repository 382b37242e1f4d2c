"""Haar-like features on integral images, enumerated exactly as OpenCV's traincascade does.

A Haar feature is a weighted sum of 2 or 3 rectangles (upright, or rotated by 45° on the tilted
integral image). The pool is OpenCV's ``CvHaarEvaluator::generateFeatures`` (traincascade, OpenCV
3.4.18): loops over the anchor ``x``, then ``y``, then the unit sizes ``dx``, ``dy`` (1 up to the
window size), and for each ``(x, y, dx, dy)`` emits, in this order, every *type* of the chosen
mode that fits:

========  ====  =========================================================  =======
type      mode  rectangles ``(x, y, w, h, weight)``                        tilted
========  ====  =========================================================  =======
x2        all   ``(x, y, 2dx, dy, -1)``, ``(x+dx, y, dx, dy, +2)``          no
y2        all   ``(x, y, dx, 2dy, -1)``, ``(x, y+dy, dx, dy, +2)``          no
x3        all   ``(x, y, 3dx, dy, -1)``, ``(x+dx, y, dx, dy, +k3)``         no
y3        all   ``(x, y, dx, 3dy, -1)``, ``(x, y+dy, dx, dy, +k3)``         no
x4        CORE  ``(x, y, 4dx, dy, -1)``, ``(x+dx, y, 2dx, dy, +2)``         no
y4        CORE  ``(x, y, dx, 4dy, -1)``, ``(x, y+dy, dx, 2dy, +2)``         no
x2y2      all   ``(x, y, 2dx, 2dy, -1)``, ``(x, y, dx, dy, +2)``,            no
                ``(x+dx, y+dy, dx, dy, +2)``
centre    CORE  ``(x, y, 3dx, 3dy, -1)``, ``(x+dx, y+dy, dx, dy, +9)``      no
tx2       ALL   ``(x, y, 2dx, dy, -1)``, ``(x, y, dx, dy, +2)``             yes
ty2       ALL   ``(x, y, dx, 2dy, -1)``, ``(x, y, dx, dy, +2)``             yes
tx3       ALL   ``(x, y, 3dx, dy, -1)``, ``(x+dx, y+dx, dx, dy, +k3)``      yes
ty3       ALL   ``(x, y, dx, 3dy, -1)``, ``(x-dy, y+dy, dx, dy, +k3)``      yes
tx4       ALL   ``(x, y, 4dx, dy, -1)``, ``(x+dx, y+dx, 2dx, dy, +2)``      yes
ty4       ALL   ``(x, y, dx, 4dy, -1)``, ``(x-dy, y+dy, dx, 2dy, +2)``      yes
========  ====  =========================================================  =======

("CORE" = modes CORE and ALL; "ALL" = mode ALL only.) Mode ``BASIC`` (x2, y2, x3, y3, x2y2) is
exactly the five Viola–Jones feature types: 162,336 features in a 24×24 window, 63,960 in 19×19.

**Weight of the three-rectangle types (``k3``).** OpenCV 3.4.18's traincascade (the build that
produced the reference cascade ``traincascade-anchor/cbcl_haar.xml``) and the copy in
opencv_contrib put **+2** on the middle third (value = middle − sides, Viola–Jones' definition
and scikit-image's ``type-3-*``); older traincascade sources put +3 there (value = 2·middle −
sides, zero on a flat patch — issue #14128 of opencv/opencv discusses the generator). vjboost
defaults to ``x3_weight=2.0``, so that its pool and its XML are feature-for-feature those of
``opencv_traincascade`` 3.4.18 (checked on the reference cascade: its 84 features are all in our
19×19 BASIC pool, in increasing pool order); ``x3_weight=3.0`` gives the older convention. Both
export exactly, since OpenCV's detector uses the weights as written.

Sign conventions w.r.t. scikit-image's ``haar_like_feature``: ``type-2-x``/``type-2-y`` equal
x2/y2 (second minus first rectangle), ``type-3-*`` equal x3/y3 with ``x3_weight=2``, and
``type-4`` is the negative of x2y2.

**Values.** Features are OP_RECTS records of a compiled program
(:mod:`vjboost.features.program`), computed by the same node evaluator as OpenCV-exact
detection. With ``normalize=True`` (default) a feature value is OpenCV's detector value
``v · float32(1 / sqrt(A·q − s²))`` in float32, where ``v = w0·R0 + w1·R1 (+ w2·R2)`` (float32,
in that order) is the weighted rectangle sum and ``s``, ``q`` are the sum and squared sum of the
window's inner rectangle ``(1, 1, W−2, H−2)`` of area ``A``; the value is 0 where ``A·q − s²``
is 0 (a flat inner area). ``√(A·q − s²) = A·σ``, so thresholds learnt on these values export
unchanged to OpenCV XML. ``normalize=False`` gives the raw weighted sums ``v``.

Examples
--------
>>> import numpy as np
>>> fam = HaarFamily((24, 24), mode="BASIC")
>>> fam.n_features
162336
>>> windows = np.random.default_rng(0).integers(0, 256, (5, 24, 24), dtype=np.uint8)
>>> fam.evaluate(fam.prepare(windows), [0, 100]).shape
(2, 5)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost._errors import InputError
from vjboost._limits import FLOAT32_OVERFLOW, check_count
from vjboost._memory import check_memory
from vjboost.features.base import (
    FeatureFamily,
    check_feature_ids,
    check_window_shape,
    register_family,
)
from vjboost.features.channels import ChannelSet
from vjboost.features.program import NORM_NONE, NORM_VARIANCE, Program

__all__ = ["HAAR_TYPES", "HaarFamily", "haar_feature_table", "haar_pool_size"]

#: feature types in OpenCV's emission order
HAAR_TYPES = (
    "x2", "y2", "x3", "y3", "x4", "y4", "x2y2", "centre",
    "tx2", "ty2", "tx3", "ty3", "tx4", "ty4",
)  # fmt: skip
_MODE_TYPES = {
    "BASIC": ("x2", "y2", "x3", "y3", "x2y2"),
    "CORE": ("x2", "y2", "x3", "y3", "x4", "y4", "x2y2", "centre"),
    "ALL": HAAR_TYPES,
}
_MODE_ALIASES = {"VIOLA-JONES": "BASIC", "VIOLA_JONES": "BASIC", "VJ": "BASIC"}

# rectangle table column 0: the plane a rectangle reads (upright sum or tilted sum)
_CH_SUM, _CH_TILT = 0, 2


def _type_geometry(t: str, x, y, dx, dy, k3: float):
    """Rectangles ``[(x, y, w, h, weight), ...]`` of type ``t`` at anchors ``(x, y)`` and units
    ``(dx, dy)`` (vectorised; the anchors that fit a window are :data:`_EXTENTS`' concern)."""
    if t == "x2":
        rects = [(x, y, 2 * dx, dy, -1.0), (x + dx, y, dx, dy, 2.0)]
    elif t == "y2":
        rects = [(x, y, dx, 2 * dy, -1.0), (x, y + dy, dx, dy, 2.0)]
    elif t == "x3":
        rects = [(x, y, 3 * dx, dy, -1.0), (x + dx, y, dx, dy, k3)]
    elif t == "y3":
        rects = [(x, y, dx, 3 * dy, -1.0), (x, y + dy, dx, dy, k3)]
    elif t == "x4":
        rects = [(x, y, 4 * dx, dy, -1.0), (x + dx, y, 2 * dx, dy, 2.0)]
    elif t == "y4":
        rects = [(x, y, dx, 4 * dy, -1.0), (x, y + dy, dx, 2 * dy, 2.0)]
    elif t == "x2y2":
        rects = [(x, y, 2 * dx, 2 * dy, -1.0), (x, y, dx, dy, 2.0), (x + dx, y + dy, dx, dy, 2.0)]
    elif t == "centre":
        rects = [(x, y, 3 * dx, 3 * dy, -1.0), (x + dx, y + dy, dx, dy, 9.0)]
    elif t == "tx2":
        rects = [(x, y, 2 * dx, dy, -1.0), (x, y, dx, dy, 2.0)]
    elif t == "ty2":
        rects = [(x, y, dx, 2 * dy, -1.0), (x, y, dx, dy, 2.0)]
    elif t == "tx3":
        rects = [(x, y, 3 * dx, dy, -1.0), (x + dx, y + dx, dx, dy, k3)]
    elif t == "ty3":
        rects = [(x, y, dx, 3 * dy, -1.0), (x - dy, y + dy, dx, dy, k3)]
    elif t == "tx4":
        rects = [(x, y, 4 * dx, dy, -1.0), (x + dx, y + dx, 2 * dx, dy, 2.0)]
    elif t == "ty4":
        rects = [(x, y, dx, 4 * dy, -1.0), (x - dy, y + dy, dx, 2 * dy, 2.0)]
    else:  # pragma: no cover - guarded by the caller
        raise ValueError(t)
    return rects


def _resolve_mode(mode: str) -> str:
    if not isinstance(mode, str):
        raise TypeError(f"mode: expected 'BASIC', 'CORE' or 'ALL', got {mode!r}")
    m = mode.strip().upper()
    m = _MODE_ALIASES.get(m, m)
    if m not in _MODE_TYPES:
        raise ValueError(
            f"mode: expected 'BASIC', 'CORE' or 'ALL' (or 'viola-jones'), got {mode!r}"
        )
    return m


def _resolve_types(mode: str, types: Any) -> tuple[str, ...]:
    allowed = _MODE_TYPES[mode]
    if types is None:
        return allowed
    if isinstance(types, str):
        types = [types]
    types = list(types)
    if not types:
        raise ValueError("types: empty list of Haar feature types")
    bad = [t for t in types if t not in allowed]
    if bad:
        raise ValueError(f"types: {bad} not in mode {mode}'s types {list(allowed)}")
    # keep OpenCV's emission order whatever order the user listed them in
    return tuple(t for t in allowed if t in types)


def haar_feature_table(
    window_shape: tuple[int, int],
    mode: str = "BASIC",
    x3_weight: float = 2.0,
    types: Any = None,
    *,
    feature_ids: Any = None,
) -> dict[str, np.ndarray]:
    """Enumerate the Haar pool in OpenCV traincascade order (or only some of its features).

    Parameters
    ----------
    window_shape : (H, W)
    mode : {"BASIC", "CORE", "ALL"}
    x3_weight : float
        Weight of the middle rectangle of the three-rectangle types (see module docs).
    types : list of str, optional
        Restrict to these types (order stays OpenCV's).
    feature_ids : array-like of int, shape (Q,), optional
        Only these features of the pool, in that order (their rows of the whole table).

    Returns
    -------
    dict with
        ``rects`` int32 (F, 3, 6) ``(channel, x, y, w, h, tilted)`` (channel 0 = upright sum,
        2 = tilted sum), ``weights`` float64 (F, 3) (0 = unused third rect), ``type`` int8 (F,)
        index into :data:`HAAR_TYPES`, ``anchor`` int32 (F, 4) ``(x, y, dx, dy)``
        (F = Q with ``feature_ids``).

    Examples
    --------
    >>> table = haar_feature_table((24, 24))
    >>> table["type"].shape
    (162336,)
    >>> part = haar_feature_table((24, 24), feature_ids=[5, 0])
    >>> bool((part["rects"] == table["rects"][[5, 0]]).all())
    True
    """
    H, W = check_window_shape(window_shape)  # noqa: N806
    mode = _resolve_mode(mode)
    types = _resolve_types(mode, types)
    n_feat = _check_pool((H, W), mode, types)
    # which types fit at each (x, y, dx, dy), in the generator's loop order (x outermost, then
    # y, dx, dy; types in emission order innermost): the x and y conditions of _EXTENTS
    # broadcast over (x, 1, dx, dy, type) and (1, y, dx, dy, type)
    ext = np.array([_EXTENTS[t] for t in types], dtype=np.int64)  # (T, 5)
    xs, ys = np.arange(W)[:, None, None, None], np.arange(H)[:, None, None, None]
    dxs, dys = np.arange(1, W + 1)[:, None, None], np.arange(1, H + 1)[None, :, None]
    ax, bx, lo, ay, by = (ext[:, k] for k in range(5))
    fit_x = (xs >= lo * dys) & (xs + ax * dxs + bx * dys <= W)  # (W, W, H, T)
    fit_y = ys + ay * dxs + by * dys <= H  # (H, W, H, T)
    flat = np.flatnonzero(fit_x[:, None] & fit_y[None])  # features of the pool, in order
    if feature_ids is not None:
        flat = flat[check_feature_ids(feature_ids, n_feat)]
    combo, tj = np.divmod(flat, len(types))
    x, y, dx, dy = np.unravel_index(combo, (W, H, W, H))
    dx, dy = dx + 1, dy + 1
    n = flat.shape[0]
    rect_arr = np.zeros((n, 3, 6), dtype=np.int32)
    weights = np.zeros((n, 3), dtype=np.float64)
    type_idx = np.empty(n, dtype=np.int8)
    for j, t in enumerate(types):
        sel = np.flatnonzero(tj == j)
        if sel.size == 0:
            continue
        tilted = t.startswith("t")
        type_idx[sel] = HAAR_TYPES.index(t)
        rects = _type_geometry(t, x[sel], y[sel], dx[sel], dy[sel], float(x3_weight))
        for k, (rx, ry, rw, rh, wt) in enumerate(rects):
            rect_arr[sel, k, 0] = _CH_TILT if tilted else _CH_SUM
            rect_arr[sel, k, 1] = rx
            rect_arr[sel, k, 2] = ry
            rect_arr[sel, k, 3] = rw
            rect_arr[sel, k, 4] = rh
            rect_arr[sel, k, 5] = int(tilted)
            weights[sel, k] = wt
    anchor = np.stack([x, y, dx, dy], axis=1).astype(np.int32)
    return {"rects": rect_arr, "weights": weights, "type": type_idx, "anchor": anchor}


def _check_pool(window_shape: tuple[int, int], mode: str, types: tuple[str, ...]) -> int:
    """The pool's size, refused over the feature-count limit or the memory its table needs."""
    H, W = window_shape  # noqa: N806
    n_feat = check_count(haar_pool_size((H, W), mode, types),
                         f"Haar {mode} features of a {W}x{H} window", "max_features",
                         unit=" features",
                         advice="use a smaller window or fewer Haar types")
    # the enumeration holds a fit mask of all W*H*W*H placements and types, about ten index
    # arrays of the features, then the table (~250 bytes a feature in all)
    check_memory(W * H * W * H * len(types) + 250 * n_feat,
                 f"Haar feature table of a {W}x{H} window ({n_feat} features)",
                 advice="Use a smaller window or fewer Haar types.")
    return n_feat


def _explicit_table(window_shape: tuple[int, int], rects: Any, weights: Any,
                    tilted: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate an explicit feature table; returns the internal (F, 3, 6) rects and weights."""
    h, w = window_shape
    r = np.asarray(rects)
    if r.ndim != 3 or r.shape[2] != 4 or not 1 <= r.shape[1] <= 3 or r.shape[0] == 0:
        raise InputError(f"rects: expected a non-empty (F, R<=3, 4) table of (x, y, w, h), got "
                         f"shape {r.shape}")
    if r.dtype.kind not in "iu":
        raise InputError(f"rects: expected integers, got dtype {r.dtype}")
    f, n_r = r.shape[:2]
    wt = np.asarray(weights, dtype=np.float64)
    if wt.shape != (f, n_r):
        raise InputError(f"weights: expected shape {(f, n_r)} to match rects, got {wt.shape}")
    if not np.isfinite(wt).all():
        raise InputError("weights: contains NaN or infinite values")
    if wt.size and np.abs(wt).max() >= FLOAT32_OVERFLOW:  # the programs hold float32 weights
        raise InputError(f"weights: {np.abs(wt).max():g} is beyond float32's range")
    tl = np.asarray(tilted)
    if tl.shape != (f,) or tl.dtype.kind not in "biu":
        raise InputError(f"tilted: expected ({f},) booleans, got shape {tl.shape} dtype "
                         f"{tl.dtype}")
    tl = tl.astype(bool)
    used = wt != 0
    if not used[:, 0].all():
        k = int(np.flatnonzero(~used[:, 0])[0])
        raise InputError(f"weights: feature {k} has no rectangle (its first weight is 0)")
    if (used & ~np.cumprod(used, axis=1).astype(bool)).any():
        k = int(np.flatnonzero((used & ~np.cumprod(used, axis=1).astype(bool)).any(1))[0])
        raise InputError(f"weights: feature {k} has a used rectangle after an unused one "
                         "(weight 0 must end the list)")
    x, y, rw, rh = (r[..., k].astype(np.int64) for k in range(4))
    t = tl[:, None]
    upright_ok = (x >= 0) & (y >= 0) & (x + rw <= w) & (y + rh <= h)
    tilted_ok = (x - rh >= 0) & (y >= 0) & (x + rw <= w) & (y + rw + rh <= h)
    ok = (rw >= 1) & (rh >= 1) & np.where(t, tilted_ok, upright_ok)
    bad = used & ~ok
    if bad.any():
        k, j = (int(v[0]) for v in np.nonzero(bad))
        raise InputError(f"rects: rectangle {j} of feature {k} {tuple(int(v) for v in r[k, j])}"
                         f"{' (tilted)' if tl[k] else ''} does not fit the {w}x{h} window")
    table = np.zeros((f, 3, 6), dtype=np.int32)
    weights3 = np.zeros((f, 3), dtype=np.float64)
    table[:, :n_r, 0] = np.where(t, _CH_TILT, _CH_SUM)
    table[:, :n_r, 1:5] = r
    table[:, :n_r, 5] = t
    table[:, :, 3:5] = np.where(table[:, :, 3:5] == 0, 1, table[:, :, 3:5])
    table[~np.pad(used, ((0, 0), (0, 3 - n_r)))] = (0, 0, 0, 1, 1, 0)
    weights3[:, :n_r] = np.where(used, wt, 0.0)
    return table, weights3


# per type: the x extent in units of (dx, dy), the smallest x in units of dy (tilted types
# reach left of their anchor) and the y extent in units of (dx, dy); see _type_geometry
_EXTENTS = {
    "x2": (2, 0, 0, 0, 1), "y2": (1, 0, 0, 0, 2), "x3": (3, 0, 0, 0, 1), "y3": (1, 0, 0, 0, 3),
    "x4": (4, 0, 0, 0, 1), "y4": (1, 0, 0, 0, 4), "x2y2": (2, 0, 0, 0, 2),
    "centre": (3, 0, 0, 0, 3), "tx2": (2, 0, 1, 2, 1), "ty2": (1, 0, 2, 1, 2),
    "tx3": (3, 0, 1, 3, 1), "ty3": (1, 0, 3, 1, 3), "tx4": (4, 0, 1, 4, 1),
    "ty4": (1, 0, 4, 1, 4),
}  # fmt: skip


def haar_pool_size(window_shape: tuple[int, int], mode: str = "BASIC",
                   types: Any = None) -> int:
    """Number of Haar features of ``mode`` in a window (OpenCV's pool size), counted without
    enumerating them (so that a huge window is refused before its table is built).

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)`` in pixels.
    mode : {"BASIC", "CORE", "ALL"}, default "BASIC"
        OpenCV's feature set (case-insensitive; ``"viola-jones"`` is accepted too).
    types : str or list of str, optional
        Only these Haar types of ``mode`` (e.g. ``["x2", "y2"]``; default all of them).

    Returns
    -------
    int

    Examples
    --------
    >>> haar_pool_size((24, 24))
    162336
    """
    H, W = check_window_shape(window_shape)  # noqa: N806
    dx = np.arange(1, W + 1, dtype=np.int64)[:, None]
    dy = np.arange(1, H + 1, dtype=np.int64)[None, :]
    total = 0
    for t in _resolve_types(_resolve_mode(mode), types):
        ax, bx, lo, ay, by = _EXTENTS[t]
        nx = np.maximum(0, W - ax * dx - bx * dy - lo * dy + 1)
        ny = np.maximum(0, H - ay * dx - by * dy + 1)
        total += int((nx * ny).sum())
    return total


# --------------------------------------------------------------------------------------------
# The family
# --------------------------------------------------------------------------------------------


@register_family
class HaarFamily(FeatureFamily):
    """Haar-like features (upright and 45° tilted) in OpenCV traincascade's order.

    Parameters
    ----------
    window_shape : (int, int)
        ``(height, width)`` of the training window, e.g. ``(24, 24)``.
    mode : {"BASIC", "CORE", "ALL"}, default "BASIC"
        OpenCV's feature set; ``"viola-jones"`` is an alias of ``"BASIC"`` (the five VJ types).
    x3_weight : float, default 2.0
        Weight of the middle rectangle of three-rectangle types (2.0: OpenCV 3.4.18
        traincascade, opencv_contrib, Viola–Jones, scikit-image; 3.0: older traincascade
        sources, zero sum on flat patches).
    normalize : bool, default True
        Multiply by ``1 / sqrt(A q - s**2)`` of the inner window as OpenCV (training and
        detection).
    types : list of str, optional
        Keep only these types (see :data:`HAAR_TYPES`); a sub-family of the mode's pool.

    Notes
    -----
    Program: OP_RECTS on channels ``gray`` (upright rectangles) and ``tilted`` (45°, mode ALL),
    NORM_VARIANCE (planes ``gray``, ``gray2``) when ``normalize``, else NORM_NONE.
    :meth:`from_rects` builds a family of explicitly listed features (OpenCV HAAR cascades).

    Examples
    --------
    >>> fam = HaarFamily((24, 24))
    >>> fam.n_features                                  # OpenCV's BASIC pool at 24x24
    162336
    >>> fam.describe(0)["text"]
    'haar x2 at (x=0, y=0) unit 1x1'
    >>> windows = np.random.default_rng(0).integers(0, 256, (5, 24, 24), dtype=np.uint8)
    >>> fam.evaluate(fam.prepare(windows), [0, 100]).shape   # (features, windows) float32
    (2, 5)
    """

    name = "haar"

    def __init__(
        self,
        window_shape: tuple[int, int] = (24, 24),
        *,
        mode: str = "BASIC",
        x3_weight: float = 2.0,
        normalize: bool = True,
        types: Any = None,
    ) -> None:
        self.window_shape = check_window_shape(window_shape)
        self.mode = _resolve_mode(mode)
        if isinstance(x3_weight, bool) or not isinstance(x3_weight, int | float):
            raise TypeError(f"x3_weight: expected a number, got {x3_weight!r}")
        if not np.isfinite(x3_weight) or x3_weight == 0:
            raise ValueError(f"x3_weight: expected a finite non-zero number, got {x3_weight!r}")
        self.x3_weight = float(x3_weight)
        self.normalize = bool(normalize)
        self.types = _resolve_types(self.mode, types)
        self._check_normalize()
        self.n_features = _check_pool(self.window_shape, self.mode, self.types)
        if self.n_features == 0:
            raise ValueError(
                f"window_shape {self.window_shape} holds no Haar feature of types {self.types}"
            )
        self._explicit = False
        # the table is built on first use: a model reads a few thousand features of the pool,
        # and builds only their rows (see _build_program_of)
        self._table: dict[str, Any] | None = None

    def _check_normalize(self) -> None:
        h, w = self.window_shape
        if self.normalize and (h < 3 or w < 3):
            raise ValueError(
                f"window_shape: normalize=True needs windows of at least 3x3 (the normalisation "
                f"uses the inner (W-2)x(H-2) area), got {h}x{w}; use normalize=False"
            )

    def _set_table(self, rects: np.ndarray, weights: np.ndarray, type_idx: np.ndarray | None,
                   anchor: np.ndarray | None) -> None:
        self._table = {"rects": rects, "weights": weights, "type": type_idx, "anchor": anchor}
        self.n_features = int(rects.shape[0])

    def _full_table(self) -> dict[str, Any]:
        if self._table is None:
            self._table = haar_feature_table(self.window_shape, self.mode, self.x3_weight,
                                             self.types)
        return self._table

    # the table's columns (see haar_feature_table); the type and anchor are None for an
    # explicit table
    _rects = property(lambda self: self._full_table()["rects"])
    _weights = property(lambda self: self._full_table()["weights"])
    _type = property(lambda self: self._full_table()["type"])
    _anchor = property(lambda self: self._full_table()["anchor"])

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        if not self._explicit:  # derived from the config: rebuilt where it is used
            state["_table"] = None
        return state

    @classmethod
    def from_rects(cls, window_shape: tuple[int, int], *, rects: Any, weights: Any, tilted: Any,
                   normalize: bool = True) -> HaarFamily:
        """A family of explicitly listed Haar features (e.g. those of an OpenCV HAAR cascade).

        Parameters
        ----------
        window_shape : (int, int)
            ``(height, width)``.
        rects : array-like of int, shape (F, R, 4), R <= 3
            ``(x, y, w, h)`` of each rectangle in OpenCV XML semantics (tilted rectangles hang
            from corner ``(x, y)``, ``w`` along the down-right and ``h`` along the down-left
            diagonal).
        weights : array-like of float, shape (F, R)
            Rectangle weights; 0 marks an unused rectangle (only after the used ones).
        tilted : array-like of bool, shape (F,)
            45° features (all rectangles of a feature share the flag, as in OpenCV).
        normalize : bool, default True
            OpenCV's variance normalisation (a HAAR cascade's features are normalised).

        Returns
        -------
        HaarFamily
            Feature ``i`` is row ``i`` of the table; :meth:`get_config` stores the table.

        Examples
        --------
        >>> fam = HaarFamily.from_rects((24, 24), rects=[[[0, 0, 4, 2], [0, 1, 4, 1]]],
        ...                             weights=[[-1.0, 2.0]], tilted=[False])
        >>> fam.n_features, fam.describe(0)["rects"]
        (1, [(0, 0, 4, 2, -1.0), (0, 1, 4, 1, 2.0)])
        """
        self = cls.__new__(cls)
        self.window_shape = check_window_shape(window_shape)
        self.mode = None
        self.x3_weight = None
        self.types = None
        self.normalize = bool(normalize)
        self._check_normalize()
        table, wts = _explicit_table(self.window_shape, rects, weights, tilted)
        self._explicit = True
        self._set_table(table, wts, None, None)
        return self

    # -- description ---------------------------------------------------------------------------

    @property
    def rects(self) -> np.ndarray:
        """Rectangle table (F, 3, 6) ``(plane, x, y, w, h, tilted)``; read-only view."""
        v = self._rects.view()
        v.flags.writeable = False
        return v

    @property
    def weights(self) -> np.ndarray:
        """Rectangle weights (F, 3); 0 marks an unused third rectangle. Read-only view."""
        v = self._weights.view()
        v.flags.writeable = False
        return v

    def feature_type(self, i: int) -> str | None:
        """Type name of feature ``i`` (see :data:`HAAR_TYPES`; None in an explicit table)."""
        i = self._check_index(i)
        return None if self._type is None else HAAR_TYPES[self._type[i]]

    @property
    def opencv_type(self) -> str | None:
        """``"HAAR"`` when the features are OpenCV's (normalised), else None."""
        return "HAAR" if self.normalize else None

    def _build_program(self) -> Program:
        return self._rects_program(self._rects, self._weights)

    def _build_program_of(self, feature_ids: np.ndarray) -> Program:
        if self._table is None:
            rows = haar_feature_table(self.window_shape, self.mode, self.x3_weight, self.types,
                                      feature_ids=feature_ids)
            return self._rects_program(rows["rects"], rows["weights"])
        return self._rects_program(self._rects[feature_ids], self._weights[feature_ids])

    def _rects_program(self, rects: np.ndarray, weights: np.ndarray) -> Program:
        tilted = rects[:, 0, 5] != 0
        chans = ChannelSet(["gray", "tilted"] if tilted.any() else ["gray"])
        return Program.rects(
            self.window_shape, chans, rects=rects[:, :, 1:5], weights=weights,
            planes=np.where(tilted, 1, 0)[:, None], tilted=tilted[:, None],
            norm=NORM_VARIANCE if self.normalize else NORM_NONE)

    def kinds(self) -> np.ndarray:
        """Bool array (n_features,): all False (Haar features are ordered values); known
        without building the family's program."""
        return np.zeros(self.n_features, dtype=bool)

    def describe(self, i: int) -> dict[str, Any]:
        """Geometry of feature ``i`` in OpenCV XML semantics.

        Returns
        -------
        dict
            ``family``, ``index``, ``type``, ``text``, ``rects`` (list of ``(x, y, w, h, weight)``,
            2 or 3 entries, window coordinates), ``tilted`` (bool), ``window_shape``,
            ``normalized`` (bool).
        """
        i = self._check_index(i)
        t = self.feature_type(i)
        n_r = int(np.count_nonzero(self._weights[i]))
        rects = [
            (int(r[1]), int(r[2]), int(r[3]), int(r[4]), float(wt))
            for r, wt in zip(self._rects[i, :n_r], self._weights[i, :n_r], strict=True)
        ]
        tilted = bool(self._rects[i, 0, 5])
        if self._anchor is None:
            text = "haar " + " + ".join(f"{wt:g}*[{x},{y},{w},{h}]" for x, y, w, h, wt in rects)
        else:
            x, y, dx, dy = (int(v) for v in self._anchor[i])
            text = f"haar {t} at (x={x}, y={y}) unit {dx}x{dy}"
        text += " tilted 45deg" if tilted else ""
        return {
            "family": self.name,
            "index": i,
            "type": t,
            "text": text,
            "rects": rects,
            "tilted": tilted,
            "window_shape": self.window_shape,
            "normalized": self.normalize,
        }

    def get_config(self) -> dict[str, Any]:
        if self._explicit:
            n_r = int(np.count_nonzero(self._weights.any(axis=0)))
            return {
                "window_shape": list(self.window_shape),
                "rects": self._rects[:, :n_r, 1:5].tolist(),
                "weights": self._weights[:, :n_r].tolist(),
                "tilted": (self._rects[:, 0, 5] != 0).tolist(),
                "normalize": self.normalize,
            }
        all_types = self.types == _MODE_TYPES[self.mode]
        return {
            "window_shape": list(self.window_shape),
            "mode": self.mode,
            "x3_weight": self.x3_weight,
            "normalize": self.normalize,
            "types": None if all_types else list(self.types),
        }

    @classmethod
    def from_config(cls, cfg: Any) -> HaarFamily:
        cfg = dict(cfg)
        shape = tuple(cfg.pop("window_shape", (24, 24)))
        if "rects" in cfg:
            return cls.from_rects(shape, **cfg)
        return cls(shape, **cfg)
