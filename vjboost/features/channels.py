"""Integral channel planes: what every compiled feature reads, for windows and whole images.

A *channel* is a per-pixel function of the input (grey level, squared grey level, quantised
gradient magnitude, gradient magnitude in one orientation bin, an LUV plane, an LBP code...). The
features of the integral-channel families are weighted rectangle sums over such channels, so
each channel is stored as its integral image (OpenCV layout: one row and one column more than the
input, zero first row and column), all planes of one input in one int32 array ``(P, H + 1,
W + 1)`` (a window stack: ``(S, P, H + 1, W + 1)``).

The same code fills the planes of a stack of training windows and of a whole (scaled) image, so a
feature computed on a window cut out of an image equals the feature computed at that position of
the image, bit for bit, provided the feature's rectangles keep ``margin`` pixels away from the
window's edge: a channel with margin ``m`` (gradients: 1) reads neighbours up to ``m`` pixels
away, which a cut-out window does not have at its border. Integrals are int32 with wrap-around:
a rectangle sum is exact whenever its true value fits in 32 bits (OpenCV's convention for the
squared sums of its Haar detector), which a :class:`~vjboost.features.program.Program` verifies
for every rectangle it reads.

Channel keys are short strings, ``kind`` or ``kind(params)`` with ``#plane`` for kinds with
several planes, e.g. ``"gray"``, ``"gray2"``, ``"tilted"``, ``"gradmag"``, ``"orient(6,u)#2"``,
``"luv#0"``, ``"rgb#2"``, ``"lbp(8,1,default)"``. Families may register their own kinds
(:func:`register_channel_kind`).

Examples
--------
>>> import numpy as np
>>> cs = ChannelSet(["gray", "gradmag", "orient(4,u)#1"])
>>> cs.n_planes, cs.margin
(3, 1)
>>> windows = np.zeros((2, 8, 10), np.uint8)
>>> cs.windows(windows).shape
(2, 3, 9, 11)
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import cv2
import numba
import numpy as np
from numba import prange

from vjboost._errors import InputError
from vjboost._memory import check_memory
from vjboost._threads import chunks, serial_if

__all__ = [
    "MAG_SCALE",
    "ChannelKind",
    "ChannelSet",
    "channel_kinds",
    "gradient_table",
    "gray_of",
    "orientation_table",
    "parse_channel_key",
    "register_channel_kind",
]

_JIT = {"cache": True, "nogil": True}

#: gradient magnitudes are stored as ``round(MAG_SCALE * sqrt(gx**2 + gy**2))`` (integers, so that
#: integrals and rectangle sums are exact)
MAG_SCALE = 8


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


@numba.njit(**_JIT, inline="always")
def _u(i):  # pragma: no cover - numba
    # unsigned index: numba then skips the negative-index wrap-around check
    return np.uint64(i)


@numba.njit(inline="always", **_JIT)
def _add_row_prefix(v, flat, row, stride, w):  # pragma: no cover - numba
    """``flat[row + 1 + x] = flat[row - stride + 1 + x] + sum(v[:x + 1])``: one integral row
    from the row above. ``v`` (w,) is overwritten by its running sum (wrapping in int32 like
    int32 integrals; exact in int64)."""
    acc = np.int64(0)
    for x in range(w):
        acc += v[x]
        v[x] = acc
    dst = flat[row + 1:row + 1 + w]
    src = flat[row + 1 - stride:row + 1 - stride + w]
    for x in range(w):
        dst[x] = src[x] + v[x]


@numba.njit(**_JIT)
def _integrate_into(plane, flat, base, stride):  # pragma: no cover - numba
    """Integral of ``plane`` (H, W) into the 1-D array ``flat``: entry ``(y, x)`` of the
    integral at ``base + y * stride + x`` (int32: wrapping mod 2**32; int64: exact). Grey
    pixels' sums, squared sums and tilted sums come from :func:`_gray_image`."""
    h, w = plane.shape
    for x in range(w + 1):
        flat[_u(base + x)] = 0
    vals = np.empty(w, dtype=np.int64)
    for y in range(h):
        for x in range(w):
            vals[x] = np.int64(plane[y, x])
        flat[_u(base + (y + 1) * stride)] = 0
        _add_row_prefix(vals, flat, base + (y + 1) * stride, stride, w)


@numba.njit(**_JIT)
def _gray_image(img, flat, row0, x0, stride, split, bases, work):  # pragma: no cover - numba
    """The grey planes of one image (H, W) uint8 in one pass over its rows: integral entry
    ``(y, c)`` of plane ``k`` at ``bases[k] + (row0 + y) · stride + col(x0 + c)`` of ``flat``
    (int32, wrapping mod 2**32), ``col(C) = C``, or ``(C % 2) · split + C // 2`` with
    ``split > 0`` (even and odd columns stored apart). ``bases``: the sum, the squared sum and
    OpenCV's 45° tilted sum (codes 0, 1, 2), -1 for a plane not wanted. Rows are summed in
    int64 registers and written once: no plane is read back.

    Tilted (``cv2.integral3``'s third output): with ``diag[r % 2, x]`` the anti-diagonal running
    sum ``I[r, x] + I[r-1, x+1] + ...``, ``T[y, 0] = T[y-1, 0] + diag[y-2, 0]`` and
    ``T[y, x] = T[y-1, x-1] + diag[y-1, x-1] + diag[y-2, x-1]`` for ``x >= 1``.

    ``work``: int64 scratch (6, W + 1) (:func:`_gray_scratch`), passed in rather than allocated
    here: each array numba allocates in a kernel is one more function to compile on a first
    detection."""
    h, w = img.shape
    b_s, b_q, b_t = bases[0], bases[1], bases[2]
    col, s, q, t = work[0], work[1], work[2], work[3]
    diag = work[4:6]
    for c in range(w + 1):
        cc = x0 + c
        col[c] = cc if split == 0 else (cc & 1) * split + (cc >> 1)
        s[c] = 0
        q[c] = 0
        t[c] = 0
        diag[0, c] = 0
        diag[1, c] = 0
    for y in range(h + 1):
        row = (row0 + y) * stride
        if y > 0:
            r = y - 1
            acc = np.int64(0)
            accq = np.int64(0)
            for x in range(w):
                v = np.int64(img[r, x])
                acc += v
                accq += v * v
                s[x + 1] += acc
                q[x + 1] += accq
            if b_t >= 0:
                cur = r & 1
                prev = cur ^ 1
                for x in range(w):
                    v = np.int64(img[r, x])
                    diag[cur, x] = v + diag[prev, x + 1] if r > 0 and x + 1 < w else v
                if y >= 2:
                    # T[y, x] = T[y-1, x-1] + diag[cur, x-1] + diag[prev, x-1]: right to
                    # left, so that t[x - 1] is still the previous row's
                    for x in range(w, 0, -1):
                        t[x] = t[x - 1] + diag[cur, x - 1] + diag[prev, x - 1]
                    t[0] = t[0] + diag[prev, 0]
                else:
                    t[0] = 0
                    for x in range(1, w + 1):
                        t[x] = diag[cur, x - 1]
        if b_s >= 0:
            for c in range(w + 1):
                flat[_u(b_s + row + col[c])] = s[c]
        if b_q >= 0:
            for c in range(w + 1):
                flat[_u(b_q + row + col[c])] = q[c]
        if b_t >= 0:
            for c in range(w + 1):
                flat[_u(b_t + row + col[c])] = t[c]


@numba.njit(parallel=True, **_JIT)
def _integrate_planes(planes, flat, bases, stride):  # pragma: no cover - numba
    """Integrals of ``planes`` (N, C, H, W); plane ``(n, c)`` goes to ``bases[n, c]`` of ``flat``
    (row stride ``stride``)."""
    n, c = planes.shape[0], planes.shape[1]
    for k in prange(n * c):
        i = k // c
        j = k - i * c
        _integrate_into(planes[i, j], flat, bases[i, j], stride)


@numba.njit(parallel=True, **_JIT)
def _integrate_gray(imgs, flat, by_code, stride, work):  # pragma: no cover - numba
    """Integrals straight from grey pixels ``imgs`` (N, H, W) uint8, all of an image's planes
    in one pass (:func:`_gray_image`; ``by_code`` (N, 3) as its ``bases``); the images in
    ``work.shape[0]`` chunks, one task and one scratch ``work[c]`` each
    (:func:`_gray_scratch`)."""
    n_chunks = work.shape[0]
    n = imgs.shape[0]
    for c in prange(n_chunks):
        for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            _gray_image(imgs[i], flat, 0, 0, stride, 0, by_code[i], work[c])


def _gray_scratch(n: int, w: int) -> np.ndarray:
    """Scratch for :func:`_integrate_gray` over ``n`` images ``w`` pixels wide, one per chunk
    of images (:func:`vjboost._threads.chunks`)."""
    return np.empty((chunks(n), 6, w + 1), np.int64)


def _by_code(codes, bases, n: int) -> np.ndarray:
    """``bases`` (N, len(codes)) rearranged as :func:`_gray_image`'s (N, 3) ``bases`` (plane
    codes 0 sum, 1 squared sum, 2 tilted sum; -1 for a code not in ``codes``)."""
    by_code = np.full((n, 3), -1, dtype=np.int64)
    by_code[:, np.asarray(codes, np.int64)] = np.asarray(bases, np.int64).reshape(n, -1)
    return by_code


@numba.njit(**_JIT)
def _gradient_integrals(img, table, flat, bases, stride, which, work
                        ):  # pragma: no cover - numba
    """Integrals of gradient planes of one image ``img`` (H, W) uint8, gradients on the fly.

    Plane ``j`` (written at ``bases[j]`` of ``flat``, row stride ``stride``) is the quantised
    magnitude (``which[j] = -1``) or the magnitude of the pixels whose orientation bin is
    ``which[j]`` (0 elsewhere). Border pixels (a neighbour missing on one side) count 0:
    features keep a margin of one pixel, so a window cut out of an image and the image agree on
    every pixel read.

    Row by row: each pixel's magnitude and bin from one lookup in ``table``
    (:func:`gradient_table`); then per plane its column sums so far (a vectorised add) and the
    integral row as their running sum, which needs no read of the row above. int32 sums wrap
    mod 2**32 as every integral plane does.

    ``work``: int32 scratch (:func:`_gradient_scratch`), passed in rather than allocated here
    (each array numba allocates in a kernel is one more function to compile on a first
    detection).
    """
    h, w = img.shape
    c = which.shape[0]
    mag, bins, cols = work[0], work[1], work[2:2 + c]  # mag and bins stay 0 in border columns
    for x in range(w):
        mag[x] = 0
        bins[x] = 0
    for k in range(c):
        for x in range(w):
            cols[k, x] = 0
    for k in range(c):
        flat[bases[k]:bases[k] + w + 1] = 0
    for y in range(h):
        inner = 0 < y < h - 1 and w > 2
        if inner:
            up, mid, down = img[y - 1], img[y], img[y + 1]
            for x in range(1, w - 1):
                v = table[(np.int32(down[x]) - np.int32(up[x]) + 255) * 511
                          + np.int32(mid[x + 1]) - np.int32(mid[x - 1]) + 255]
                mag[x] = v >> 8
                bins[x] = v & 255
        for k in range(c):
            col = cols[k]
            b = which[k]
            if inner:
                if b < 0:
                    for x in range(w):
                        col[x] += mag[x]
                else:
                    for x in range(w):
                        col[x] += mag[x] if bins[x] == b else 0
            row = bases[k] + (y + 1) * stride
            flat[row] = 0
            dst = flat[row + 1:row + 1 + w]
            acc = np.int32(0)
            for x in range(w):
                acc += col[x]
                dst[x] = acc


def _gradient_scratch(planes: int, w: int) -> np.ndarray:
    """Scratch for :func:`_gradient_integrals` of ``planes`` planes of an image ``w`` pixels
    wide: each pixel's magnitude and bin, then each plane's column sums (int32)."""
    return np.empty((planes + 2, w), np.int32)


@numba.njit(parallel=True, **_JIT)
def _integrate_gradient(imgs, table, flat, bases, stride, which,
                        n_groups):  # pragma: no cover - numba
    """:func:`_gradient_integrals` of every image of ``imgs`` (N, H, W), plane ``j`` of image
    ``n`` at ``bases[n, j]``. Task ``(i, g)`` writes the share ``j = g, g + n_groups, ...`` of
    image ``i``'s planes (``n_groups`` > 1 splits one large image between threads; each task
    computes the gradients it needs)."""
    n = imgs.shape[0]
    c = bases.shape[1]
    for task in prange(n * n_groups):
        i = task // n_groups
        g = task - i * n_groups
        mine = np.arange(g, c, n_groups)
        # _gradient_scratch's layout, allocated per task (this kernel trains, it does not
        # run on a detection: its own allocation costs no first detection anything)
        _gradient_integrals(imgs[i], table, flat, bases[i][mine], stride, which[mine],
                            np.empty((mine.shape[0] + 2, imgs.shape[2]), np.int32))


@numba.njit(parallel=True, **_JIT)
def _integrate_labels(labels, ks, vs, flat, bases, stride):  # pragma: no cover - numba
    """Integrals of indicator planes: plane ``j`` of input ``n`` (at ``bases[n, j]``) counts the
    pixels whose label in plane ``ks[j]`` of ``labels`` (N, K, H, W) equals ``vs[j]``."""
    n, _, h, w = labels.shape
    c = ks.shape[0]
    for t in prange(n * c):
        i = t // c
        j = t - i * c
        lab = labels[i, ks[j]]
        v = vs[j]
        base = bases[i, j]
        vals = np.empty(w, dtype=np.int32)
        for x in range(w + 1):
            flat[_u(base + x)] = 0
        for y in range(h):
            for x in range(w):
                vals[x] = lab[y, x] == v
            flat[_u(base + (y + 1) * stride)] = 0
            _add_row_prefix(vals, flat, base + (y + 1) * stride, stride, w)


# --------------------------------------------------------------------------------------------
# Lookup tables (gradients of 8-bit images are integers in -255..255)
# --------------------------------------------------------------------------------------------

_TABLES: dict[tuple, np.ndarray] = {}


def orientation_table(n_bins: int, signed: bool) -> np.ndarray:
    """Orientation bin of every integer gradient: ``table[gy + 255, gx + 255]`` (uint8).

    The angle is ``degrees(atan2(gy, gx))`` taken modulo 180 (360 when ``signed``); bin ``b``
    holds ``b * span <= angle < (b + 1) * span`` with ``span = 180 / n_bins`` (360 / n_bins).
    ``gy`` grows downwards (image rows), as in scikit-image's HOG.

    Parameters
    ----------
    n_bins : int
        1 to 255.
    signed : bool

    Returns
    -------
    ndarray of uint8, shape (511, 511)

    Examples
    --------
    >>> t = orientation_table(4, False)
    >>> int(t[255, 256]), int(t[256, 255])   # gradient along +x (0 deg), along +y (90 deg)
    (0, 2)
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) \
            or not 1 <= int(n_bins) <= 255:
        raise InputError(f"n_bins: expected 1..255 orientation bins, got {n_bins!r}")
    key = ("orient", int(n_bins), bool(signed))
    if key not in _TABLES:
        g = np.arange(-255, 256, dtype=np.float64)
        deg = np.degrees(np.arctan2(g[:, None], g[None, :]))
        period = 360.0 if signed else 180.0
        deg = np.mod(deg, period)
        span = period / int(n_bins)
        b = np.floor(deg / span).astype(np.int64)
        _TABLES[key] = np.clip(b, 0, int(n_bins) - 1).astype(np.uint8)
    return _TABLES[key]


def gradient_table(n_bins: int, signed: bool) -> np.ndarray:
    """Quantised magnitude and orientation bin of every integer gradient, packed:
    ``table[(gy + 255) * 511 + gx + 255] = (round(MAG_SCALE * hypot(gx, gy)) << 8) | bin``.

    One lookup per pixel gives both (instead of a square root and a bin lookup); the table
    (int32, 1 MB) is built once per ``(n_bins, signed)``.

    Parameters
    ----------
    n_bins, signed
        The orientation bins, as for :func:`orientation_table`.

    Returns
    -------
    ndarray of int32, shape (511 * 511,)

    Examples
    --------
    >>> t = gradient_table(4, False)
    >>> v = int(t[(0 + 255) * 511 + 3 + 255])     # gx = 3, gy = 0: |g| = 3, 0 degrees
    >>> v >> 8, v & 255
    (24, 0)
    """
    bins = orientation_table(n_bins, signed)
    key = ("packed", int(n_bins), bool(signed))
    if key not in _TABLES:
        g = np.arange(-255, 256, dtype=np.float64)
        mag = np.rint(MAG_SCALE * np.sqrt(g[:, None] ** 2 + g[None, :] ** 2)).astype(np.int32)
        _TABLES[key] = ((mag << 8) | bins.astype(np.int32)).reshape(-1)
    return _TABLES[key]


# --------------------------------------------------------------------------------------------
# Channel kinds
# --------------------------------------------------------------------------------------------

#: ``integrate(images, params, planes, flat, bases, stride)``: write the integrals of the kind's
#: planes ``planes`` (int array, length C) of ``images`` (N, H, W[, 3]) uint8 into the int32 array
#: ``flat`` (1-D): plane ``j`` of input ``n`` starts at ``bases[n, j]`` (int64 (N, C)), rows are
#: ``stride`` entries apart (``H + 1`` rows of ``W + 1`` entries each).
Integrator = Callable[[np.ndarray, tuple, np.ndarray, np.ndarray, np.ndarray, int], None]


@dataclass(frozen=True, eq=False)
class ChannelKind:
    """A per-pixel function of the input with one or more planes.

    Attributes
    ----------
    name : str
        Key prefix (``"gray"``, ``"orient"``...).
    n_planes : callable
        ``n_planes(params) -> int``; raises :class:`~vjboost._errors.InputError` for bad params.
    integrate : callable
        Writes the integrals of some planes (see ``Integrator`` above).
    margin : callable
        ``margin(params) -> int``: pixels from the window edge at which the plane's values may
        differ between a cut-out window and the same window inside a larger image.
    max_value : callable
        ``max_value(params) -> int``: largest value of a plane pixel (for range checks).
    color : bool
        Needs RGB input.
    fuse : str
        Kinds with the same non-empty ``fuse`` name are computed in one call of the first one's
        ``integrate``, which then receives ``code(params, plane)`` of each plane instead of the
        plane index, and the non-empty ``params`` of the group (kinds without parameters join
        any group of their fuse name). Lets the grey planes (sum, squared sum, tilted sum) or
        the gradient planes (magnitude, orientation bins) share one pass over the pixels.
    code : callable
        ``code(params, plane) -> int`` (see ``fuse``; default the plane index).
    """

    name: str
    n_planes: Callable[[tuple], int]
    integrate: Integrator
    margin: Callable[[tuple], int]
    max_value: Callable[[tuple], int]
    color: bool = False
    fuse: str = ""
    code: Callable[[tuple, int], int] = lambda params, plane: plane

    @classmethod
    def from_planes(cls, name: str, n_planes: Callable[[tuple], int],
                    compute: Callable[[np.ndarray, tuple], np.ndarray], *,
                    margin: Callable[[tuple], int] = lambda p: 0,
                    max_value: Callable[[tuple], int] = lambda p: 255,
                    color: bool = False) -> ChannelKind:
        """A kind from a function computing its planes: ``compute(images, params)`` returns
        ``(N, n_planes, H, W)`` integers (values within int32) for ``images`` (N, H, W[, 3]).

        Parameters
        ----------
        name : str
            Key prefix of the kind.
        n_planes : callable
            ``n_planes(params) -> int``.
        compute : callable
            ``compute(images, params) -> (N, n_planes, H, W)`` integers.
        margin : callable, default 0
            ``margin(params) -> int`` (see the class's attributes).
        max_value : callable, default 255
            ``max_value(params) -> int``: largest plane value.
        color : bool, default False
            Needs RGB input.

        Returns
        -------
        ChannelKind
        """

        def integrate(images, params, planes, flat, bases, stride):
            """The kind's ``Integrator`` (see the module's ``Integrator`` alias).

            Parameters
            ----------
            images : ndarray of uint8, shape (N, H, W) or (N, H, W, 3)
            params : tuple
                The kind's parameters.
            planes : ndarray of int, shape (C,)
                The planes wanted.
            flat : ndarray of int32, 1-D
                The destination buffer.
            bases : ndarray of int64, shape (N, C)
                Offset in ``flat`` of plane ``planes[j]`` of input ``n``.
            stride : int
                Entries between two rows of a plane.
            """
            vals = np.ascontiguousarray(np.asarray(compute(images, params))[:, planes],
                                        dtype=np.int32)
            with serial_if(_small(images, len(planes))):
                _integrate_planes(vals, flat, bases, stride)

        return cls(name, n_planes, integrate, margin, max_value, color)

    @classmethod
    def from_labels(cls, name: str, n_planes: Callable[[tuple], int],
                    labels: Callable[[np.ndarray, tuple], np.ndarray], *,
                    margin: Callable[[tuple], int] = lambda p: 0,
                    color: bool = False) -> ChannelKind:
        """A kind of indicator planes (integral histograms) from a labelling function.

        ``labels(images, params)`` returns ``(N, K, H, W)`` integer labels in ``0 .. L - 1``
        with ``L = n_planes(params) // K``; plane ``j`` is 1 where label plane ``j // L`` equals
        ``j % L`` (its rectangle sums count those pixels). Only the indicator integrals are
        stored, never the indicator planes.

        Parameters
        ----------
        name : str
            Key prefix of the kind.
        n_planes : callable
            ``n_planes(params) -> int``: ``K * L`` indicator planes.
        labels : callable
            ``labels(images, params) -> (N, K, H, W)`` integer labels.
        margin : callable, default 0
            ``margin(params) -> int`` (see the class's attributes).
        color : bool, default False
            Needs RGB input.

        Returns
        -------
        ChannelKind
            Its planes' largest value is 1.
        """

        def integrate(images, params, planes, flat, bases, stride):
            """The kind's ``Integrator`` (see the module's ``Integrator`` alias).

            Parameters
            ----------
            images : ndarray of uint8, shape (N, H, W) or (N, H, W, 3)
            params : tuple
                The kind's parameters.
            planes : ndarray of int, shape (C,)
                The planes wanted.
            flat : ndarray of int32, 1-D
                The destination buffer.
            bases : ndarray of int64, shape (N, C)
                Offset in ``flat`` of plane ``planes[j]`` of input ``n``.
            stride : int
                Entries between two rows of a plane.
            """
            lab = np.ascontiguousarray(labels(images, params), dtype=np.int32)
            per = n_planes(params) // lab.shape[1]
            ks, vs = np.divmod(np.asarray(planes, np.int64), per)
            with serial_if(_small(images, len(planes))):
                _integrate_labels(lab, ks, vs, flat, bases, stride)

        return cls(name, n_planes, integrate, margin, lambda p: 1, color)


_KINDS: dict[str, ChannelKind] = {}

#: channel kinds that the library's families register in their own modules: a key naming one
#: imports its module, so that a saved model loads whether or not the family was imported yet
_BUILTIN_KIND_MODULES = {"ghist": "histogram", "chist": "histogram", "lbp": "lbp",
                         "lbphist": "lbp"}


def _kind(name: str) -> ChannelKind | None:
    """The registered kind ``name`` (importing the library module that registers it)."""
    if name not in _KINDS and name in _BUILTIN_KIND_MODULES:
        import importlib

        importlib.import_module(f"{__package__}.{_BUILTIN_KIND_MODULES[name]}")
    return _KINDS.get(name)


def register_channel_kind(kind: ChannelKind) -> ChannelKind:
    """Register a channel kind under ``kind.name`` (re-registering the same object is a no-op).

    Parameters
    ----------
    kind : ChannelKind

    Returns
    -------
    ChannelKind
        ``kind`` (usable as ``KIND = register_channel_kind(ChannelKind(...))``).
    """
    if not isinstance(kind, ChannelKind):
        raise TypeError(f"kind: expected a ChannelKind, got {type(kind).__name__}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", kind.name):
        raise ValueError(f"kind.name: expected lower-case letters, digits and '_', got "
                         f"{kind.name!r}")
    old = _KINDS.get(kind.name)
    if old is not None and old is not kind:
        raise ValueError(f"channel kind {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def channel_kinds() -> dict[str, ChannelKind]:
    """A copy of the registry of channel kinds: name → kind."""
    return dict(_KINDS)


def gray_of(images: np.ndarray) -> np.ndarray:
    """Grey pixels of a uint8 stack: ``(N, H, W)`` as is, ``(N, H, W, 3)`` RGB through OpenCV's
    ``COLOR_RGB2GRAY`` (``0.299 R + 0.587 G + 0.114 B``, rounded)."""
    if images.ndim == 3:
        return np.ascontiguousarray(images)
    n, h, w, _ = images.shape
    flat = np.ascontiguousarray(images.reshape(n * h, w, 3))
    return cv2.cvtColor(flat, cv2.COLOR_RGB2GRAY).reshape(n, h, w)


def _small(images: np.ndarray, n_planes: int) -> bool:
    # thread start-up costs more than it saves on small work (and waits on a busy machine)
    return images.shape[0] * images.shape[1] * images.shape[2] * n_planes < 1_000_000


def _integrate_gray_planes(images, params, codes, flat, bases, stride):
    """Grey planes: ``codes`` 0 sum, 1 squared sum, 2 tilted sum."""
    gray = gray_of(images)
    if gray.shape[0] <= _FEW_IMAGES:
        _integrate_gray_images(gray, codes, flat, bases, stride)
        return
    with serial_if(_small(images, len(codes))):
        _integrate_gray(gray, flat, _by_code(codes, bases, gray.shape[0]), stride,
                        _gray_scratch(gray.shape[0], gray.shape[2]))


#: Up to this many inputs per call, grey integrals come from :func:`_gray_image`, image by
#: image, every plane in one pass (whole images: detection levels, mining); window stacks keep
#: the parallel kernel (one call for all windows). Both give the same int32 planes.
_FEW_IMAGES = 4


def _integrate_gray_images(gray: np.ndarray, codes, flat: np.ndarray, bases: np.ndarray,
                           stride: int, split: int = 0, origin: tuple[int, int] = (0, 0)
                           ) -> None:
    """:func:`_integrate_gray` through :func:`_gray_image`, image by image: ``bases[i, j]`` is
    where plane ``codes[j]`` of image ``i`` starts (its row ``origin[0]`` and column
    ``origin[1]`` are then counted from there; with ``split``, columns stored apart)."""
    by_code = _by_code(codes, bases, gray.shape[0])
    work = _gray_scratch(1, gray.shape[2])[0]
    for i in range(gray.shape[0]):
        _gray_image(gray[i], flat, int(origin[0]), int(origin[1]), int(stride), int(split),
                    by_code[i], work)


def _orient_params(params: tuple) -> tuple[int, bool]:
    if len(params) != 2:
        raise InputError(f"orient: expected (n_bins, u|s), got {params}")
    n_bins = params[0]
    sign = str(params[1]).lower()
    if sign not in ("u", "s"):
        raise InputError(f"orient: expected 'u' (unsigned) or 's' (signed), got {params[1]!r}")
    orientation_table(n_bins, sign == "s")  # validates n_bins
    return int(n_bins), sign == "s"


@functools.lru_cache(maxsize=64)
def _gradient_table_of(params: tuple) -> np.ndarray:
    """:func:`gradient_table` of a gradient group's ``orient`` parameters (none: one bin),
    looked up once per parameters rather than once per pyramid level."""
    n_bins, signed = _orient_params(params) if params else (1, False)
    return gradient_table(n_bins, signed)


#: one image of at least this many pixels has its gradient planes split between threads
_SPLIT_PIXELS = 4_000_000


def _integrate_gradient_planes(images, params, codes, flat, bases, stride):
    """Gradient planes: ``codes`` -1 the magnitude, ``b >= 0`` orientation bin ``b`` of the
    group's ``orient`` parameters (gradients computed once per row for all planes)."""
    g = gray_of(images)
    table = _gradient_table_of(params)
    which = np.asarray(codes, np.int64)
    small = _small(g, len(codes))
    if g.shape[0] == 1 and (small or g[0].size < _SPLIT_PIXELS):
        # one image (a pyramid level, a mined image): the gradients are most of the work and
        # a split of its planes between threads computes them in every thread, which costs
        # more than it saves below a few megapixels (and waits on a busy machine)
        _gradient_integrals(g[0], table, flat, np.asarray(bases[0], np.int64), stride, which,
                            _gradient_scratch(len(which), g.shape[2]))
        return
    with serial_if(small):
        groups = 1 if (g.shape[0] > 1 or small) else max(1, min(len(codes),
                                                                numba.get_num_threads()))
        _integrate_gradient(g, table, flat, bases, stride, which, groups)


def _luv_planes(images: np.ndarray, params: tuple) -> np.ndarray:
    n, h, w, _ = images.shape
    flat = np.ascontiguousarray(images.reshape(n * h, w, 3))
    luv = cv2.cvtColor(flat, cv2.COLOR_RGB2Luv).reshape(n, h, w, 3)
    return luv.transpose(0, 3, 1, 2)


def _no_params(name: str) -> Callable[[tuple], int]:
    def n_planes(params: tuple) -> int:
        if params:
            raise InputError(f"{name}: takes no parameters, got {params}")
        return 1

    return n_planes


_GRAD_MAX = int(math.ceil(MAG_SCALE * 255 * 2**0.5))

register_channel_kind(ChannelKind("gray", _no_params("gray"), _integrate_gray_planes,
                                  lambda p: 0, lambda p: 255, fuse="gray",
                                  code=lambda p, k: 0))
register_channel_kind(ChannelKind("gray2", _no_params("gray2"), _integrate_gray_planes,
                                  lambda p: 0, lambda p: 255 * 255, fuse="gray",
                                  code=lambda p, k: 1))
register_channel_kind(ChannelKind("tilted", _no_params("tilted"), _integrate_gray_planes,
                                  lambda p: 0, lambda p: 255, fuse="gray",
                                  code=lambda p, k: 2))
register_channel_kind(ChannelKind("gradmag", _no_params("gradmag"), _integrate_gradient_planes,
                                  lambda p: 1, lambda p: _GRAD_MAX, fuse="gradient",
                                  code=lambda p, k: -1))
register_channel_kind(ChannelKind("orient", lambda p: _orient_params(p)[0],
                                  _integrate_gradient_planes, lambda p: 1, lambda p: _GRAD_MAX,
                                  fuse="gradient"))
register_channel_kind(ChannelKind.from_planes("luv", lambda p: 3, _luv_planes, color=True))
register_channel_kind(ChannelKind.from_planes(
    "rgb", lambda p: 3, lambda images, p: images.transpose(0, 3, 1, 2), color=True))


# --------------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------------

_KEY = re.compile(r"^([a-z][a-z0-9_]*)(?:\(([^()#]*)\))?(?:#(\d+))?$")


def _param(v: str) -> Any:
    v = v.strip()
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def parse_channel_key(key: str) -> tuple[str, tuple, int]:
    """Split a channel key into ``(kind, params, plane)`` and check it names a real plane.

    Parameters
    ----------
    key : str
        ``kind``, ``kind(params)`` or ``kind(params)#plane``.

    Returns
    -------
    (str, tuple, int)

    Examples
    --------
    >>> parse_channel_key("orient(6,u)#2")
    ('orient', (6, 'u'), 2)
    """
    if not isinstance(key, str):
        raise InputError(f"channel key: expected a string, got {key!r}")
    m = _KEY.match(key.strip())
    if m is None:
        raise InputError(f"channel key {key!r}: expected 'kind', 'kind(params)' or "
                         "'kind(params)#plane'")
    kind, params, plane = m.group(1), m.group(2), m.group(3)
    if _kind(kind) is None:
        raise InputError(f"channel key {key!r}: unknown channel kind {kind!r}; known: "
                         f"{sorted(_KINDS)}")
    ptuple = tuple(_param(v) for v in params.split(",")) if params else ()
    n = _KINDS[kind].n_planes(ptuple)
    k = int(plane) if plane is not None else 0
    if not 0 <= k < n:
        raise InputError(f"channel key {key!r}: plane {k} outside 0..{n - 1}")
    return kind, ptuple, k


def _canonical(kind: str, params: tuple, plane: int) -> str:
    p = f"({','.join(str(v) for v in params)})" if params else ""
    multi = _KINDS[kind].n_planes(params) > 1
    return f"{kind}{p}#{plane}" if multi else f"{kind}{p}"


# --------------------------------------------------------------------------------------------
# Channel sets
# --------------------------------------------------------------------------------------------


class ChannelSet:
    """An ordered set of channel planes, computed and integrated together.

    Parameters
    ----------
    keys : iterable of str
        Channel keys (duplicates are dropped, order kept).

    Attributes
    ----------
    keys : tuple of str
        Canonical keys, one per plane, in plane order.
    n_planes : int
    margin : int
        Largest margin of the planes.
    color : bool
        Some plane needs RGB input.
    """

    def __init__(self, keys: Iterable[str]) -> None:
        parsed: list[tuple[str, tuple, int]] = []
        seen: set[str] = set()
        for k in keys:
            pk = parse_channel_key(k)
            canon = _canonical(*pk)
            if canon not in seen:
                seen.add(canon)
                parsed.append(pk)
        self.keys = tuple(_canonical(*k) for k in parsed)
        self._index = {k: i for i, k in enumerate(self.keys)}
        self.n_planes = len(parsed)
        self.margin = max((_KINDS[k].margin(p) for k, p, _ in parsed), default=0)
        self.color = any(_KINDS[k].color for k, _, _ in parsed)
        self._max = [int(_KINDS[k].max_value(p)) for k, p, _ in parsed]
        # planes grouped by kind and parameters (or by fuse name): one call per group
        groups: dict[tuple, list] = {}
        for i, (kind, params, plane) in enumerate(parsed):
            k = _KINDS[kind]
            if k.fuse:
                key = next((g for g in groups if g[0] == k.fuse and (not params or not g[1]
                                                                      or g[1] == params)),
                           (k.fuse, params))
                if key not in groups:
                    groups[key] = [k, params, [], []]
                entry = groups.pop(key)
                if params and not entry[1]:
                    key, entry[1] = (k.fuse, params), params
                groups[key] = entry
                entry[2].append(k.code(params, plane))
            else:
                entry = groups.setdefault((kind, params), [k, params, [], []])
                entry[2].append(plane)
            entry[3].append(i)
        self._groups = [(k, params, np.asarray(codes, np.int64), np.asarray(dst, np.int64))
                        for k, params, codes, dst in groups.values()]

    @property
    def fills_split(self) -> bool:
        """Whether :meth:`fill` takes ``split`` (even and odd columns stored apart): grey
        planes only (gray, gray2, tilted), integrated straight into that layout."""
        return len(self._groups) == 1 and self._groups[0][0].fuse == "gray"

    # -- set operations -------------------------------------------------------------------------

    def index(self, key: str) -> int:
        """Plane index of ``key``."""
        canon = _canonical(*parse_channel_key(key))
        try:
            return self._index[canon]
        except KeyError:
            raise KeyError(f"channel {key!r} is not in this set {self.keys}") from None

    def union(self, *others: ChannelSet) -> ChannelSet:
        """The planes of this set followed by those of ``others`` that it lacks."""
        keys = list(self.keys)
        for o in others:
            keys.extend(o.keys)
        return ChannelSet(keys)

    def max_value(self, plane: int) -> int:
        """Largest pixel value of ``plane`` before integration."""
        return self._max[plane]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChannelSet) and self.keys == other.keys

    def __hash__(self) -> int:
        return hash(self.keys)

    def __len__(self) -> int:
        return self.n_planes

    def __contains__(self, key: object) -> bool:
        """Whether the canonical key ``key`` (as in :attr:`keys`) is one of the planes."""
        return key in self._index

    def __repr__(self) -> str:
        return f"ChannelSet({list(self.keys)!r})"

    # -- computation ----------------------------------------------------------------------------

    def _check_input(self, arr: Any, stack: bool, name: str) -> np.ndarray:
        arr = np.asarray(arr)
        if arr.dtype != np.uint8:
            raise InputError(f"{name}: expected uint8 pixels, got dtype {arr.dtype}")
        base = 3 if stack else 2
        rgb = arr.ndim == base + 1 and arr.shape[-1] == 3
        if self.color and not rgb:
            raise InputError(f"{name}: channels {list(self.keys)} need RGB input "
                             f"{'(S, H, W, 3)' if stack else '(H, W, 3)'}, got shape "
                             f"{arr.shape}")
        if not rgb and arr.ndim != base:
            raise InputError(f"{name}: expected {'(S, H, W)' if stack else '(H, W)'} pixels, "
                             f"got shape {arr.shape}")
        return np.ascontiguousarray(arr)

    def _fill(self, images: np.ndarray, out: np.ndarray, y0: int, x0: int) -> None:
        """Integrals of ``images`` (N, H, W[, 3]) into ``out`` (N, P, rows, cols) int32
        (C-contiguous) at row ``y0``, column ``x0`` of every plane."""
        n, p, rows, cols = out.shape
        flat = out.reshape(-1)
        origin = y0 * cols + x0
        for kind, params, codes, dst in self._groups:
            bases = (np.arange(n, dtype=np.int64)[:, None] * (p * rows * cols)
                     + dst[None, :] * (rows * cols) + origin)
            kind.integrate(images, params, codes, flat, bases, cols)

    def nbytes(self, n: int, height: int, width: int) -> int:
        """Bytes of the integral planes of ``n`` inputs of ``height x width`` pixels (plus the
        transient per-pixel planes of one kind).

        Parameters
        ----------
        n : int
            Inputs (windows or images).
        height, width : int
            Their size in pixels.

        Returns
        -------
        int
            ``4 n (P (height + 1)(width + 1) + 2 height width)``.
        """
        return 4 * int(n) * (self.n_planes * (height + 1) * (width + 1) + 2 * height * width)

    def windows(self, windows: Any, *, name: str = "windows") -> np.ndarray:
        """Integral planes of a window stack.

        Parameters
        ----------
        windows : ndarray of uint8, shape (S, H, W) or (S, H, W, 3)

        Returns
        -------
        ndarray of int32, shape (S, P, H + 1, W + 1)
        """
        arr = self._check_input(windows, True, name)
        s, h, w = arr.shape[:3]
        check_memory(self.nbytes(s, h, w), f"integral channels of {s} windows",
                     advice="Evaluate the windows in smaller batches.")
        out = np.empty((s, self.n_planes, h + 1, w + 1), dtype=np.int32)
        if s:
            self._fill(arr, out, 0, 0)
        return out

    def image(self, image: Any, *, name: str = "image") -> np.ndarray:
        """Integral planes of one image, shape ``(P, H + 1, W + 1)`` int32.

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3)
            RGB when the set has colour channels.
        name : str, default "image"
            The argument named in errors.

        Returns
        -------
        ndarray of int32, shape (P, H + 1, W + 1)
        """
        arr = self._check_input(image, False, name)
        h, w = arr.shape[:2]
        check_memory(self.nbytes(1, h, w), f"integral channels of a {w}x{h} image",
                     advice="Use a smaller image or a larger minimum object size.")
        out = np.empty((1, self.n_planes, h + 1, w + 1), dtype=np.int32)
        self._fill(arr[None], out, 0, 0)
        return out[0]

    def fill(self, image: Any, out: np.ndarray, y0: int = 0, x0: int = 0, *,
             split: int = 0) -> None:
        """Write the integral planes of ``image`` into ``out[:, y0:y0+H+1, x0:x0+W+1]``.

        ``out`` is a ``(P, rows, cols)`` int32 array holding several images side by side (the
        detector's batches of pyramid levels share one row stride).

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3)
            RGB when the set has colour channels.
        out : ndarray of int32, shape (P, rows, cols), C-contiguous
            Written in place; the image's integrals must fit at ``(y0, x0)``.
        y0, x0 : int, default 0
            Row and column of ``out`` where the image's integral planes start.
        split : int, default 0
            Grey planes only: ``out``'s rows hold their even columns first and their odd
            columns from entry ``split`` on (``cols = 2 · split`` or one less; column ``c`` at
            ``(c % 2) · split + c // 2``), the layout of
            :meth:`vjboost.features.program.Program.bind` with ``split``.

        Examples
        --------
        >>> import numpy as np
        >>> planes = ChannelSet(["gray"])
        >>> img = np.arange(12, dtype=np.uint8).reshape(3, 4)
        >>> out = np.zeros((1, 4, 6), np.int32)
        >>> planes.fill(img, out, 0, 1, split=3)   # at columns 1..5 of out
        >>> out[0, -1].tolist()   # integral row 3 is 0 12 27 45 66: columns 2, 4 | 1, 3, 5
        [0, 12, 45, 0, 27, 66]
        """
        arr = self._check_input(image, False, "image")
        h, w = arr.shape[:2]
        if out.dtype != np.int32 or out.ndim != 3 or out.shape[0] != self.n_planes:
            raise ValueError(f"out: expected int32 ({self.n_planes}, rows, cols), got "
                             f"{out.dtype} {out.shape}")
        if y0 + h + 1 > out.shape[1] or x0 + w + 1 > out.shape[2]:
            raise ValueError(f"out: a {w}x{h} image at ({x0}, {y0}) does not fit {out.shape}")
        if not out.flags.c_contiguous:
            raise ValueError("out: expected a C-contiguous array")
        if not split:
            self._fill(arr[None], out[None], int(y0), int(x0))
            return
        if not self.fills_split:
            raise ValueError(f"split: only for grey planes (gray, gray2, tilted), not "
                             f"{list(self.keys)}")
        if not 0 <= 2 * split - out.shape[2] <= 1:
            raise ValueError(f"split: expected half the row ({(out.shape[2] + 1) // 2}), got "
                             f"{split}")
        _, _, codes, dst = self._groups[0]
        rows, cols = out.shape[1:]
        _integrate_gray_images(arr[None], codes, out.reshape(-1), dst[None] * (rows * cols),
                               cols, split, (y0, x0))
