"""The feature-family interface, the family registry and input validation for families.

A *feature family* is a set of ``n_features`` scalar features defined on a fixed window of
``window_shape = (height, width)`` pixels. Every family works in two steps:

1. ``prepare(windows)`` turns a stack of windows into *channels*: whatever the family's kernels
   read (for integral-channel families the integral planes of
   :mod:`vjboost.features.channels`), stored in a :class:`Channels` container.
   ``prepare_image(image)`` does the same for a whole (already scaled) image, for detection.
2. ``evaluate(channels, feature_ids, sample_ids)`` returns the values of any subset of features on
   any subset of the prepared windows as a float32 array of shape ``(n_query, n_samples)``
   (feature-major, as everywhere in vjboost). ``evaluate_at(channels, feature_ids, positions)`` does
   the same on a prepared image for windows whose top-left corners are ``positions``.

Integral-channel families describe their features as a compiled program
(:mod:`vjboost.features.program`), and one numba node evaluator computes them for training
windows, sampled subsets, window stacks, hard-negative mining and detection alike.

Families register themselves with :func:`register_family` so that a saved pool or model can name
its families by ``name`` and rebuild them with ``get_family_class(name).from_config(cfg)``.

Validation helpers (:func:`check_windows`, :func:`check_image`, :func:`check_feature_ids`,
:func:`check_sample_ids`, :func:`check_positions`, :func:`check_channels`) raise ``ValueError`` /
``TypeError`` that name the argument; the base class's public methods call them before any
family code runs, so that numba kernels never see bad input.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, ClassVar, Literal

import numpy as np

from vjboost._limits import get_limits, limit_error
from vjboost._memory import check_memory
from vjboost.features.program import Program, evaluate_positions, evaluate_program

__all__ = [
    "Channels",
    "FeatureFamily",
    "check_channels",
    "check_feature_ids",
    "check_image",
    "check_positions",
    "check_sample_ids",
    "check_window_shape",
    "check_windows",
    "family_from_dict",
    "family_to_dict",
    "get_family_class",
    "register_family",
    "registered_families",
    "window_stack",
]

FeatureKind = Literal["ordered", "categorical"]


# --------------------------------------------------------------------------------------------
# Channels container
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Channels:
    """Prepared data of one family for a stack of windows or for one whole image.

    Attributes
    ----------
    family : str
        ``name`` of the family that prepared the data (checked by ``evaluate``).
    kind : {"windows", "image"}
        ``"windows"``: prepared by ``prepare`` from ``n_samples`` windows of ``window_shape``;
        ``"image"``: prepared by ``prepare_image`` from one image of ``shape``.
    shape : tuple of int
        ``(height, width)`` of the windows (kind ``"windows"``) or of the image (kind ``"image"``),
        in pixels — the size of the *input*, not of the arrays (integral images are one larger).
    n_samples : int
        Number of windows (kind ``"windows"``) or 1 (kind ``"image"``).
    arrays : dict of str to ndarray
        The family's arrays; their layout is private to the family. Families built on integral
        images store ``(S, C, H + 1, W + 1)`` (windows) or ``(1, C, H + 1, W + 1)`` (image) stacks,
        see :mod:`vjboost.features.integral`.
    meta : dict
        Free-form extra information (e.g. the dtype policy used).

    Examples
    --------
    >>> from vjboost.features import PixelFamily
    >>> ch = PixelFamily((2, 3)).prepare(np.zeros((4, 2, 3), np.uint8))
    >>> ch.family, ch.kind, ch.shape, ch.n_samples
    ('pixel', 'windows', (2, 3), 4)
    >>> ch["planes"].shape                   # integral planes: one row and one column larger
    (4, 1, 3, 4)
    """

    family: str
    kind: Literal["windows", "image"]
    shape: tuple[int, int]
    n_samples: int
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> np.ndarray:
        try:
            return self.arrays[key]
        except KeyError:
            raise KeyError(
                f"channels of family {self.family!r} have no array {key!r} "
                f"(available: {sorted(self.arrays)})"
            ) from None

    @property
    def nbytes(self) -> int:
        """Total size of the arrays in bytes."""
        return int(sum(a.nbytes for a in self.arrays.values()))


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def check_window_shape(window_shape: Any, name: str = "window_shape") -> tuple[int, int]:
    """Validate a ``(height, width)`` pair of positive integers.

    Parameters
    ----------
    window_shape : pair of int
        ``(height, width)`` in pixels (bools are refused).
    name : str, default "window_shape"
        The argument named in errors.

    Returns
    -------
    tuple of int
        ``(height, width)``.
    """
    try:
        h, w = window_shape
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}: expected a (height, width) pair, got {window_shape!r}"
        ) from None
    for v, what in ((h, "height"), (w, "width")):
        if isinstance(v, bool) or not isinstance(v, Integral | np.integer):
            raise TypeError(f"{name}: {what} must be an integer, got {v!r}")
        if v < 1:
            raise ValueError(f"{name}: {what} must be >= 1, got {v}")
    cap = get_limits().max_window_side
    if max(h, w) > cap:
        # before any table over the window is built: a hostile model cannot exhaust memory
        raise limit_error(f"{name} {int(w)}x{int(h)}", f"a side of {max(int(h), int(w))}", cap,
                          "max_window_side", unit=" pixels")
    return int(h), int(w)


def _as_uint8(arr: np.ndarray, name: str) -> np.ndarray:
    """Accept uint8, or integer/bool arrays whose values fit 0..255; refuse floats."""
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype.kind in "iub":
        if arr.size and (arr.min() < 0 or arr.max() > 255):
            raise ValueError(
                f"{name}: integer values must lie in 0..255 for 8-bit windows, got range "
                f"[{arr.min()}, {arr.max()}]"
            )
        return arr.astype(np.uint8)
    raise TypeError(
        f"{name}: expected 8-bit images (dtype uint8), got dtype {arr.dtype}; convert e.g. with "
        "skimage.util.img_as_ubyte"
    )


def window_stack(x: Any, *, name: str = "windows") -> tuple[np.ndarray, bool]:
    """One window ``(H, W)`` or a stack ``(S, H, W)`` as a stack, and whether it was one.

    Parameters
    ----------
    x : array-like, shape (H, W) or (S, H, W)
    name : str, default="windows"
        Argument name used in the error message.

    Returns
    -------
    stack : ndarray, shape (S, H, W)
        ``x[None]`` for one window (a view), else ``np.asarray(x)``.
    single : bool

    Examples
    --------
    >>> stack, single = window_stack(np.zeros((4, 5)))
    >>> stack.shape, single
    ((1, 4, 5), True)
    """
    arr = np.asarray(x)
    single = arr.ndim == 2
    if single:
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(f"{name}: expected (H, W) or (S, H, W), got shape {arr.shape}")
    return arr, single


def check_windows(
    windows: Any,
    window_shape: tuple[int, int],
    *,
    color: bool = False,
    name: str = "windows",
) -> np.ndarray:
    """Validate a stack of 8-bit windows.

    Parameters
    ----------
    windows : array-like
        ``(S, H, W)`` gray windows, or ``(S, H, W, 3)`` RGB windows when ``color`` is true.
        A single window ``(H, W)`` (or ``(H, W, 3)``) is accepted and treated as ``S = 1``.
        dtype uint8 (other integer dtypes with values in 0..255 are converted).
    window_shape : tuple of int
        Expected ``(H, W)``.
    color : bool
        Whether the family needs RGB windows.
    name : str
        Argument name used in error messages.

    Returns
    -------
    ndarray of uint8, C-contiguous, shape ``(S, H, W)`` or ``(S, H, W, 3)``

    Examples
    --------
    >>> arr = check_windows(np.zeros((8, 8), np.int32), (8, 8))   # one window, any integer dtype
    >>> arr.shape, arr.dtype.name
    ((1, 8, 8), 'uint8')
    >>> check_windows(np.zeros((2, 8, 6), np.uint8), (8, 8))
    Traceback (most recent call last):
    ...
    ValueError: windows: windows are 8x6 (HxW) but the family works on 8x8 windows
    """
    if isinstance(windows, Channels):
        raise TypeError(f"{name}: got prepared Channels where raw windows were expected")
    arr = np.asarray(windows)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    base_ndim = 4 if color else 3
    if arr.ndim == base_ndim - 1:
        arr = arr[None]
    if arr.ndim != base_ndim:
        want = "(S, H, W, 3) RGB" if color else "(S, H, W) gray"
        raise ValueError(f"{name}: expected {want} windows, got an array of shape {arr.shape}")
    if color and arr.shape[-1] != 3:
        raise ValueError(f"{name}: expected 3 colour channels (RGB), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: empty stack of windows (shape {arr.shape})")
    h, w = window_shape
    if arr.shape[1:3] != (h, w):
        raise ValueError(
            f"{name}: windows are {arr.shape[1]}x{arr.shape[2]} (HxW) but the family works on "
            f"{h}x{w} windows"
        )
    arr = _as_uint8(arr, name)
    return np.ascontiguousarray(arr)


def check_image(
    image: Any,
    window_shape: tuple[int, int],
    *,
    color: bool = False,
    name: str = "image",
) -> np.ndarray:
    """Validate one 8-bit image for detection (at least as large as the window).

    Parameters
    ----------
    image : array-like, shape (H, W) or (H, W, 3)
        uint8, or integers/bools within 0..255 (converted); floats are refused.
    window_shape : (int, int)
        ``(height, width)`` of the window; the image must be at least that large.
    color : bool, default False
        Expect an (H, W, 3) RGB image rather than a gray one.
    name : str, default "image"
        The argument named in errors.

    Returns
    -------
    ndarray of uint8, C-contiguous, shape ``(H, W)`` or ``(H, W, 3)``

    Examples
    --------
    >>> check_image(np.zeros((30, 40), np.int64), (24, 24)).dtype.name
    'uint8'
    >>> check_image(np.zeros((20, 40), np.uint8), (24, 24))
    Traceback (most recent call last):
    ...
    ValueError: image: image of 20x40 (HxW) is smaller than the 24x24 window
    """
    arr = np.asarray(image)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    ndim = 3 if color else 2
    if arr.ndim != ndim or (color and arr.shape[-1] != 3):
        want = "(H, W, 3) RGB" if color else "(H, W) gray"
        raise ValueError(f"{name}: expected a {want} image, got shape {arr.shape}")
    h, w = window_shape
    if arr.shape[0] < h or arr.shape[1] < w:
        raise ValueError(
            f"{name}: image of {arr.shape[0]}x{arr.shape[1]} (HxW) is smaller than the "
            f"{h}x{w} window"
        )
    arr = _as_uint8(arr, name)
    return np.ascontiguousarray(arr)


def _check_index_array(ids: Any, n: int, name: str, what: str) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of {what} ids, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: empty set of {what} ids")
    if arr.dtype.kind == "b":
        raise TypeError(
            f"{name}: boolean masks are not accepted; pass np.flatnonzero(mask) instead"
        )
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name}: expected integer {what} ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        raise ValueError(f"{name}: {what} id {bad} out of range; valid ids are 0..{n - 1}")
    return np.ascontiguousarray(arr)


def check_feature_ids(feature_ids: Any, n_features: int, name: str = "feature_ids") -> np.ndarray:
    """Validate feature ids against ``n_features``; ``None`` means all features.

    Parameters
    ----------
    feature_ids : array-like of int, int or None
        Ids in ``0 .. n_features - 1`` (whole-valued floats accepted; boolean masks refused).
    n_features : int
        Features of the family or pool.
    name : str, default "feature_ids"
        The argument named in errors.

    Returns
    -------
    ndarray of int64, shape (Q,)
        Duplicates and any order are allowed (the output rows follow the given order).

    Examples
    --------
    >>> check_feature_ids([3, 0, 3], 5).tolist(), check_feature_ids(None, 3).tolist()
    ([3, 0, 3], [0, 1, 2])
    >>> check_feature_ids([5], 5)
    Traceback (most recent call last):
    ...
    ValueError: feature_ids: feature id 5 out of range; valid ids are 0..4
    """
    if feature_ids is None:
        return np.arange(n_features, dtype=np.int64)
    return _check_index_array(feature_ids, n_features, name, "feature")


def check_sample_ids(sample_ids: Any, n_samples: int, name: str = "sample_ids") -> np.ndarray:
    """Validate sample (window) ids against ``n_samples``; ``None`` means all samples.

    Parameters
    ----------
    sample_ids : array-like of int, int or None
        Ids in ``0 .. n_samples - 1`` (whole-valued floats accepted; boolean masks refused).
    n_samples : int
        Windows of the prepared channels.
    name : str, default "sample_ids"
        The argument named in errors.

    Returns
    -------
    ndarray of int64, shape (S',)

    Examples
    --------
    >>> check_sample_ids(2.0, 3).tolist()          # one whole-valued id
    [2]
    >>> check_sample_ids(np.array([True, False, True]), 3)
    Traceback (most recent call last):
    ...
    TypeError: sample_ids: boolean masks are not accepted; pass np.flatnonzero(mask) instead
    """
    if sample_ids is None:
        return np.arange(n_samples, dtype=np.int64)
    return _check_index_array(sample_ids, n_samples, name, "sample")


def check_positions(
    positions: Any,
    image_shape: tuple[int, int],
    window_shape: tuple[int, int],
    name: str = "positions",
) -> np.ndarray:
    """Validate window top-left positions ``(y, x)`` on an image.

    Every window ``[y, y + H) x [x, x + W)`` must lie inside the image.

    Parameters
    ----------
    positions : array-like of int, shape (P, 2) or (2,)
        Top-left ``(y, x)`` of each window, in pixels; at least one.
    image_shape : (int, int)
        ``(height, width)`` of the image.
    window_shape : (int, int)
        ``(height, width)`` of the window.
    name : str, default "positions"
        The argument named in errors.

    Returns
    -------
    ndarray of int64, shape (P, 2)

    Examples
    --------
    >>> check_positions((6, 16), (30, 40), (24, 24)).tolist()   # the bottom-right window
    [[6, 16]]
    >>> check_positions([[7, 0]], (30, 40), (24, 24))
    Traceback (most recent call last):
    ...
    ValueError: positions: window at (y=7, x=0) of size 24x24 does not fit in the 30x40 image ...
    """
    arr = np.asarray(positions)
    if arr.ndim == 1 and arr.shape[0] == 2:
        arr = arr[None]
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name}: expected a (P, 2) array of (y, x) positions, got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: empty set of positions")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer positions, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    ih, iw = image_shape
    h, w = window_shape
    ys, xs = arr[:, 0], arr[:, 1]
    bad = (ys < 0) | (xs < 0) | (ys + h > ih) | (xs + w > iw)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}: window at (y={ys[k]}, x={xs[k]}) of size {h}x{w} does not fit in the "
            f"{ih}x{iw} image ({int(bad.sum())} bad position(s)); valid y: 0..{ih - h}, "
            f"x: 0..{iw - w}"
        )
    return arr


def check_channels(
    channels: Any,
    family: FeatureFamily,
    kind: Literal["windows", "image"],
    name: str = "channels",
) -> Channels:
    """Check that ``channels`` were prepared by ``family`` for the right use.

    ``kind="windows"`` channels come from ``prepare`` and must match the family's window shape;
    ``kind="image"`` channels come from ``prepare_image``.

    Parameters
    ----------
    channels : Channels
        What ``family.prepare`` or ``family.prepare_image`` returned.
    family : FeatureFamily
        The family about to read them (their family name must be its name, and for windows
        their shape its window shape).
    kind : {"windows", "image"}
        The use: a stack of windows or one whole image.
    name : str, default "channels"
        The argument named in errors.

    Returns
    -------
    Channels
        ``channels`` itself.

    Examples
    --------
    >>> from vjboost.features import GradientMagnitudeFamily, PixelFamily
    >>> fam = PixelFamily((3, 3))
    >>> ch = fam.prepare(np.zeros((2, 3, 3), np.uint8))
    >>> check_channels(ch, fam, "windows") is ch
    True
    >>> check_channels(ch, GradientMagnitudeFamily((3, 3)), "windows")
    Traceback (most recent call last):
    ...
    ValueError: channels: prepared by family 'pixel', not by 'gradient_magnitude'
    """
    if not isinstance(channels, Channels):
        how = "prepare(windows)" if kind == "windows" else "prepare_image(image)"
        raise TypeError(
            f"{name}: expected Channels from {type(family).__name__}.{how}, got "
            f"{type(channels).__name__}"
        )
    if channels.family != family.name:
        raise ValueError(
            f"{name}: prepared by family {channels.family!r}, not by {family.name!r}"
        )
    if channels.kind != kind:
        how = "prepare(windows)" if kind == "windows" else "prepare_image(image)"
        raise ValueError(
            f"{name}: these are {channels.kind!r} channels; this method needs channels from {how}"
        )
    if kind == "windows" and tuple(channels.shape) != tuple(family.window_shape):
        raise ValueError(
            f"{name}: prepared for {channels.shape} windows, the family uses "
            f"{tuple(family.window_shape)}"
        )
    return channels


# --------------------------------------------------------------------------------------------
# The interface
# --------------------------------------------------------------------------------------------


class FeatureFamily(abc.ABC):
    """A family of scalar features on fixed-size windows.

    Subclasses set the class attribute ``name`` (the registry key), and in ``__init__`` the
    instance attributes ``window_shape`` (``(height, width)``) and ``n_features``; ``color = True``
    when they need RGB windows. They implement :meth:`describe` and :meth:`get_config`, and are
    registered with :func:`register_family` (usable as a class decorator). Constructors take
    ``window_shape`` first and keyword-only arguments after it.

    Evaluation is written once, here: the public :meth:`prepare`, :meth:`evaluate`,
    :meth:`prepare_image` and :meth:`evaluate_at` validate their arguments (windows, ids,
    channels, positions, memory) and then call the family's ``_prepare``, ``_evaluate``,
    ``_prepare_image`` and ``_evaluate_at`` with clean arrays. *Integral-channel families*
    implement only ``_build_program`` (their features as a compiled
    :class:`~vjboost.features.program.Program`); the default ``_prepare``... then compute the
    program's channel planes and run the one node evaluator, exactly as the cascade kernels do.
    Other families (Fourier, user-written ones) override the four underscore methods.

    Conventions
    -----------
    * Windows are uint8, ``(S, H, W)`` gray or ``(S, H, W, 3)`` RGB.
    * ``evaluate`` returns float32 ``(Q, S')``: row ``q`` is feature ``feature_ids[q]``, column
      ``j`` is window ``sample_ids[j]``. Ids are validated in Python
      (:func:`check_feature_ids`, :func:`check_sample_ids`) before any kernel runs.
    * ``evaluate_at`` takes ``positions`` ``(P, 2)`` int ``(y, x)`` of window top-left corners in
      the prepared image and returns float32 ``(Q, P)``; its values equal those of ``evaluate``
      on the windows cut out at these positions.
    * Categorical features (``kind(i) == "categorical"``, e.g. MB-LBP codes) return integer codes
      ``0 .. n_categories - 1`` stored as float32.

    Examples
    --------
    >>> from vjboost.features import PixelFamily
    >>> fam = PixelFamily((2, 3))
    >>> isinstance(fam, FeatureFamily), fam.name, fam.n_features, fam.kind(0)
    (True, 'pixel', 6, 'ordered')
    >>> image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    >>> windows = np.stack([image[0:2, 0:3], image[1:3, 1:4]])
    >>> fam.evaluate(fam.prepare(windows), [0, 5]).tolist()    # rows: features; columns: windows
    [[0.0, 5.0], [6.0, 11.0]]
    >>> fam.evaluate_at(fam.prepare_image(image), [0, 5], [(0, 0), (1, 1)]).tolist()  # in place
    [[0.0, 5.0], [6.0, 11.0]]
    """

    name: ClassVar[str] = ""
    color: ClassVar[bool] = False
    #: number of categories of categorical features (256 for 8-bit LBP codes); 0 if none
    n_categories: ClassVar[int] = 0

    window_shape: tuple[int, int]
    n_features: int

    # -- description and persistence ---------------------------------------------------------

    @abc.abstractmethod
    def describe(self, i: int) -> dict[str, Any]:
        """Readable text and geometry of feature ``i``.

        Returns a dict with at least ``"family"`` (the family name), ``"index"`` (``i``) and
        ``"text"`` (one line for humans), plus family-specific geometry, e.g. for Haar
        ``"rects": [(x, y, w, h, weight), ...]`` and ``"tilted"`` in OpenCV XML semantics.
        """

    @abc.abstractmethod
    def get_config(self) -> dict[str, Any]:
        """JSON-serialisable constructor parameters: ``type(self)(**get_config())`` rebuilds it."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> FeatureFamily:
        """Rebuild a family from :meth:`get_config` output."""
        cfg = dict(cfg)
        shape = tuple(cfg.pop("window_shape", (24, 24)))
        return cls(shape, **cfg)

    # -- public evaluation (validation here, once) -------------------------------------------

    def prepare(self, windows: Any) -> Channels:
        """Prepare channels for a stack of windows ``(S, H, W)`` (or ``(S, H, W, 3)``) uint8."""
        arr = check_windows(windows, self.window_shape, color=self.color)
        check_memory(self.channels_nbytes(arr.shape[0]),
                     f"{self.name} channels of {arr.shape[0]} windows",
                     advice="Prepare the windows in smaller batches.")
        return self._prepare(arr)

    def evaluate(self, channels: Channels, feature_ids: Any = None,
                 sample_ids: Any = None) -> np.ndarray:
        """Values of ``feature_ids`` (default all) on ``sample_ids`` (default all).

        Parameters
        ----------
        channels : Channels
            From :meth:`prepare` of this family.
        feature_ids : array-like of int, optional
            Feature ids, any order, duplicates allowed (default all).
        sample_ids : array-like of int, optional
            Window ids of ``channels`` (default all).

        Returns
        -------
        ndarray of float32, shape (Q, S')
        """
        ch = check_channels(channels, self, "windows")
        fids = check_feature_ids(feature_ids, self.n_features)
        sids = check_sample_ids(sample_ids, ch.n_samples)
        return self._evaluate(ch, fids, sids)

    def prepare_image(self, image: Any) -> Channels:
        """Prepare channels for one whole (already scaled) image ``(H, W)`` or ``(H, W, 3)``."""
        return self._prepare_image(check_image(image, self.window_shape, color=self.color))

    def evaluate_at(self, channels: Channels, feature_ids: Any, positions: Any) -> np.ndarray:
        """Values of ``feature_ids`` for the windows at ``positions`` ``(P, 2)`` ``(y, x)``.

        Parameters
        ----------
        channels : Channels
            From :meth:`prepare_image` of this family.
        feature_ids : array-like of int or None
            Feature ids (``None``: all).
        positions : array-like of int, shape (P, 2)
            Top-left ``(y, x)`` of each window, in pixels of the prepared image; every window
            must lie inside it.

        Returns
        -------
        ndarray of float32, shape (Q, P)
        """
        ch = check_channels(channels, self, "image")
        fids = check_feature_ids(feature_ids, self.n_features)
        pos = check_positions(positions, ch.shape, self.window_shape)
        return self._evaluate_at(ch, fids, pos)

    def compute(self, windows: Any, feature_ids: Any = None) -> np.ndarray:
        """Convenience: ``evaluate(prepare(windows), feature_ids)`` → float32 ``(Q, S)``.

        Parameters
        ----------
        windows : ndarray of uint8, shape (S, H, W) or (S, H, W, 3)
            Windows of the family's window shape.
        feature_ids : array-like of int, optional
            Feature ids (default all).

        Returns
        -------
        ndarray of float32, shape (Q, S)

        Examples
        --------
        >>> from vjboost.features import HaarFamily
        >>> fam = HaarFamily((8, 8))
        >>> fam.compute(np.zeros((3, 8, 8), np.uint8), [0, 5]).shape
        (2, 3)
        """
        return self.evaluate(self.prepare(windows), feature_ids)

    # -- compiled programs and OpenCV export ---------------------------------------------------

    def _build_program(self) -> Program | None:
        """All features as a Program (integral-channel families), or None."""
        return None

    def _build_program_of(self, feature_ids: np.ndarray) -> Program | None:
        """The features ``feature_ids`` (checked ids, in that order) as a Program built without
        the whole family's, or None (the default: :meth:`program` takes them from the whole
        program). Families with large pools whose features are cheap to build one by one
        override it, so that a model reading a few thousand of them loads in milliseconds."""
        return None

    def _full_program(self) -> Program | None:
        prog = self.__dict__.get("_program_cache")
        if prog is None:
            prog = self._build_program()
            self.__dict__["_program_cache"] = prog
        return prog

    def program(self, feature_ids: Any = None) -> Program | None:
        """The features ``feature_ids`` (default all, in that order) as a compiled
        :class:`~vjboost.features.program.Program`, or None for families that are not
        integral-channel reads (their cascades run the generic path).

        With ``feature_ids`` the program reads only the channel planes those features need.
        """
        if feature_ids is not None and "_program_cache" not in self.__dict__:
            part = self._build_program_of(check_feature_ids(feature_ids, self.n_features))
            if part is not None:
                return part.compact()
        prog = self._full_program()
        if prog is None or feature_ids is None:
            return prog
        return prog.take(check_feature_ids(feature_ids, self.n_features)).compact()

    @property
    def opencv_type(self) -> str | None:
        """``"HAAR"`` or ``"LBP"`` when a cascade over this family can be written as OpenCV
        XML, else None."""
        return None

    def __getstate__(self) -> dict[str, Any]:
        # the compiled program is derived data (and its channel kinds hold functions)
        state = dict(self.__dict__)
        state.pop("_program_cache", None)
        return state

    # -- the program path (integral-channel families) ----------------------------------------

    def _require_program(self) -> Program:
        prog = self._full_program()
        if prog is None:
            raise NotImplementedError(
                f"{type(self).__name__}: implement _build_program, or _prepare, _evaluate, "
                "_prepare_image and _evaluate_at")
        return prog

    def _prepare(self, windows: np.ndarray) -> Channels:
        """Integral planes ``"planes"`` (S, P, H + 1, W + 1) int32 of the program's channels."""
        planes = self._require_program().channels.windows(windows)
        return Channels(self.name, "windows", self.window_shape, windows.shape[0],
                        {"planes": planes})

    def _evaluate(self, channels: Channels, feature_ids: np.ndarray,
                  sample_ids: np.ndarray) -> np.ndarray:
        return evaluate_program(self._require_program(), planes=channels["planes"],
                                feature_ids=feature_ids, sample_ids=sample_ids)

    def _prepare_image(self, image: np.ndarray) -> Channels:
        """Integral planes ``"planes"`` (P, H + 1, W + 1) int32 of the whole image."""
        planes = self._require_program().channels.image(image)
        return Channels(self.name, "image", image.shape[:2], 1, {"planes": planes})

    def _evaluate_at(self, channels: Channels, feature_ids: np.ndarray,
                     positions: np.ndarray) -> np.ndarray:
        return evaluate_positions(self._require_program(), channels["planes"], positions,
                                  feature_ids=feature_ids)

    # -- optional ----------------------------------------------------------------------------

    def kind(self, i: int) -> FeatureKind:
        """``"ordered"`` (threshold splits) or ``"categorical"`` (subset splits on codes)."""
        return "categorical" if self.kinds()[self._check_index(i)] else "ordered"

    def kinds(self) -> np.ndarray:
        """Bool array (n_features,): True where ``kind(i)`` is ``"categorical"``."""
        prog = self._full_program()
        if prog is not None:
            return prog.categorical.copy()
        return np.zeros(self.n_features, dtype=bool)

    def channels_nbytes(self, n_samples: int) -> int:
        """Estimated bytes of ``prepare`` output for ``n_samples`` windows (for memory checks).

        Program families: their integral planes; the default for others assumes one float64
        integral image per window (they override it).
        """
        h, w = self.window_shape
        prog = self._full_program()
        if prog is not None:
            return prog.channels.nbytes(int(n_samples), h, w)
        ch = 3 if self.color else 1
        return int(n_samples) * ch * (h + 1) * (w + 1) * 8

    # -- helpers for subclasses --------------------------------------------------------------

    def _check_index(self, i: Any, name: str = "i") -> int:
        if isinstance(i, bool) or not isinstance(i, Integral | np.integer):
            raise TypeError(f"{name}: feature index must be an integer, got {i!r}")
        if not 0 <= int(i) < self.n_features:
            raise ValueError(
                f"{name}: feature index {i} out of range for family {self.name!r} with "
                f"{self.n_features} features"
            )
        return int(i)

    def __len__(self) -> int:
        return int(self.n_features)

    def __repr__(self) -> str:
        try:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        except Exception:  # repr must never fail
            args = "..."
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.get_config() == other.get_config()

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(sorted(self.get_config().items()))))


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------

_REGISTRY: dict[str, type[FeatureFamily]] = {}


def register_family(cls: type[FeatureFamily]) -> type[FeatureFamily]:
    """Register a :class:`FeatureFamily` subclass under ``cls.name`` (usable as a decorator).

    Registering the same class again is a no-op; another class under a taken name raises
    ``ValueError`` (pick a unique ``name``; a module that is re-executed redefines its class,
    which is accepted when module and qualified name match).

    Examples
    --------
    >>> from vjboost.features import MBLBPFamily, PixelFamily
    >>> register_family(MBLBPFamily) is MBLBPFamily   # the same class again: a no-op
    True
    >>> class Clash(PixelFamily):
    ...     name = "mblbp"
    >>> register_family(Clash)
    Traceback (most recent call last):
    ...
    ValueError: register_family: name 'mblbp' is already used by vjboost.features.mblbp.MBLBPFamily
    """
    if not (isinstance(cls, type) and issubclass(cls, FeatureFamily)):
        raise TypeError(f"register_family: expected a FeatureFamily subclass, got {cls!r}")
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_family: {cls.__name__} must set a non-empty class attribute "
                         "'name'")
    old = _REGISTRY.get(name)
    if old is not None and old is not cls:
        same = (old.__module__, old.__qualname__) == (cls.__module__, cls.__qualname__)
        if not same:
            raise ValueError(
                f"register_family: name {name!r} is already used by "
                f"{old.__module__}.{old.__qualname__}"
            )
    _REGISTRY[name] = cls
    return cls


#: Modules of the built-in families: importing one registers its families.
_FAMILY_MODULES = ("haar", "mblbp", "mbltp", "custom", "pool", "lbp", "hog", "histogram", "fourier",
                   "pixel", "acf")


def _import_builtin_families(until: str | None = None) -> None:
    # on first use of the registry, not at package import: a detector needs one family module
    # (the modules are imported in order until one registers ``until``)
    for mod in _FAMILY_MODULES:
        importlib.import_module(f"vjboost.features.{mod}")
        if until is not None and until in _REGISTRY:
            return


def get_family_class(name: str) -> type[FeatureFamily]:
    """The registered family class called ``name``.

    Examples
    --------
    >>> cls = get_family_class("pixel")
    >>> cls.__name__, cls((2, 3)).n_features
    ('PixelFamily', 6)
    >>> get_family_class("no_such_family")
    Traceback (most recent call last):
    ...
    ValueError: unknown feature family 'no_such_family'; registered: [...]...
    """
    if name not in _REGISTRY:
        _import_builtin_families(until=name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown feature family {name!r}; registered: {sorted(_REGISTRY)}. User families "
            "must be registered (register_family) before a pool or model using them is loaded"
        ) from None


def registered_families() -> dict[str, type[FeatureFamily]]:
    """A copy of the registry: name → class.

    Examples
    --------
    >>> families = registered_families()
    >>> families["mblbp"].__name__, {"haar", "hog", "pixel"} <= set(families)
    ('MBLBPFamily', True)
    """
    _import_builtin_families()
    return dict(_REGISTRY)


def family_to_dict(family: FeatureFamily) -> dict[str, Any]:
    """``{"family": name, "config": get_config()}`` — the saved form of a family.

    Examples
    --------
    >>> from vjboost.features import MBLBPFamily
    >>> family_to_dict(MBLBPFamily((9, 9), max_block=(1, 1)))
    {'family': 'mblbp', 'config': {'window_shape': [9, 9], 'max_block': [1, 1]}}
    """
    return {"family": family.name, "config": family.get_config()}


def family_from_dict(d: Mapping[str, Any]) -> FeatureFamily:
    """Inverse of :func:`family_to_dict`.

    Examples
    --------
    >>> fam = family_from_dict({"family": "pixel", "config": {"window_shape": [2, 3]}})
    >>> fam, fam.n_features
    (PixelFamily(window_shape=[2, 3]), 6)
    >>> family_from_dict(family_to_dict(fam)) == fam
    True
    """
    if not isinstance(d, Mapping) or "family" not in d:
        raise ValueError(f"family description must be a mapping with a 'family' key, got {d!r}")
    cls = get_family_class(d["family"])
    return cls.from_config(d.get("config", {}))
