"""Input limits: the caps that keep a hostile or unlucky input from exhausting memory or time.

Every cap has a default that fits ordinary use and can be raised: through an environment
variable (read by :meth:`Limits.from_env`), per call (the ``limits=`` argument of the functions
that read inputs, or :func:`use_limits` around any code) or per command (CLI options).
A cap that is hit raises :class:`vjboost._errors.LimitError` with one message format (see
:func:`limit_error`): the input, its value, the limit, and how to raise it.

Besides the caps, model files must hold *strict* numbers: an integer field holds a JSON/XML
integer within its range (no ``1.5``, ``1e300``, ``inf``, ``true``, ``1_9``, no wrap-around of
``4294967315`` to 19) and a float32 field a finite number within float32's range (no NaN, no
``-1e39`` that would become ``-inf``). :func:`check_int` and :func:`check_float32` are these
checks, shared by the JSON and XML readers.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

from ._errors import InputError, LimitError

__all__ = ["ENV_PREFIX", "FLOAT32_OVERFLOW", "MAX_JITTER_COPIES", "MAX_SCALE_FACTOR",
           "MAX_STAGES", "MAX_SWEEP_NEIGHBORS", "Limits",
           "check_count", "check_float32", "check_int", "check_pyramid_levels", "get_limits",
           "limit_error", "pyramid_levels", "use_limits"]

ENV_PREFIX = "VJBOOST_"

#: float32 rounds numbers of this magnitude and above to infinity (thresholds, leaf values and
#: weights are float32 in the kernels): (2 - 2**-24) * 2**127
FLOAT32_OVERFLOW = 3.4028235677973366e38

#: largest ratio between successive scales of a scan (``scale_factor``, ``--scale-factor``,
#: ``--mining-scale-factor``): detectors scan with 1.05 to 1.5, and at 100 a scan already sees
#: only the base window and one 100 times larger, so a larger value is a typo; near 1e308 the
#: window sizes would overflow to infinity
MAX_SCALE_FACTOR = 100.0

#: largest ``min_neighbors`` a curve sweeps (``vjeval --max-neighbors``): every value is one more
#: grouping and evaluation of every image, held until the end; a face gathers tens of raw
#: windows, so the curve is flat long before 1000 (which costs no more time than 10 on a few
#: images, where 10**6 took 88 s and 10**9 over 20 GB)
MAX_SWEEP_NEIGHBORS = 1000

#: most stages a cascade is trained to (``CascadeTrainer(num_stages=...)``, ``vjtrain
#: --stages``): deep face cascades have 20 to 40 stages, so a thousand is a typo
MAX_STAGES = 1000

#: most jittered copies of one positive (``Jitter.copies``, ``vjtrain --jitter``): a few to a few
#: dozen copies are the use, and OpenCV's createsamples makes about a thousand samples of a single
#: image; 10,000 copies of a 24x24 positive already hold 5.8 MB and take a second to cut
MAX_JITTER_COPIES = 10_000


@dataclass(frozen=True)
class Limits:
    """The caps in force.

    Attributes
    ----------
    max_image_pixels : int
        Largest image (width x height) decoded, checked from the file header before decoding
        (environment: ``VJBOOST_MAX_IMAGE_PIXELS``). 100 megapixels: any camera photo; a
        detection pyramid over it already needs several GiB.
    max_pyramid_levels : int
        Most scales a detection scan may visit in one image (``VJBOOST_MAX_PYRAMID_LEVELS``);
        a scale factor barely above 1 would otherwise scan for hours.
    max_model_bytes : int
        Largest model file read (``VJBOOST_MAX_MODEL_BYTES``), checked before parsing (at most
        this many bytes are read, also of a file whose size the file system does not tell;
        a device such as ``/dev/zero`` is refused as not a regular file). 32 MiB: ten times
        OpenCV's largest cascade; parsing takes about 30 times the file size in memory.
    max_json_depth : int
        Deepest nesting of arrays and objects in a JSON model or checkpoint
        (``VJBOOST_MAX_JSON_DEPTH``); vjboost's own files nest less than 10 deep.
    max_window_side : int
        Largest window height or width of a model or feature family
        (``VJBOOST_MAX_WINDOW_SIDE``); detectors are trained on windows of 19 to 128 pixels.
    max_features : int
        Most features a feature family may enumerate (``VJBOOST_MAX_FEATURES``), checked before
        its tables are built: 10 million (Haar BASIC of a 64x64 window: 8.1 million) is about
        1 GB of tables. Also caps explicit feature tables and ``feature_ids`` of model files.
    max_model_nodes : int
        Most decision nodes (all trees of all stages) in a model file
        (``VJBOOST_MAX_MODEL_NODES``); trained cascades have thousands.

    Examples
    --------
    >>> Limits().max_image_pixels
    100000000
    >>> Limits(max_image_pixels=10).max_image_pixels
    10
    """

    max_image_pixels: int = 100_000_000
    max_pyramid_levels: int = 1000
    max_model_bytes: int = 32 * 2**20
    max_json_depth: int = 64
    max_window_side: int = 1024
    max_features: int = 10_000_000
    max_model_nodes: int = 1_000_000

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Limits:
        """The defaults, overridden by ``VJBOOST_<FIELD>`` environment variables.

        Parameters
        ----------
        environ : mapping, optional
            Instead of ``os.environ``.

        Raises
        ------
        LimitError
            When a variable is not a positive integer (the message names it).
        """
        env = os.environ if environ is None else environ
        values = {}
        for f in dataclasses.fields(cls):
            name = ENV_PREFIX + f.name.upper()
            raw = env.get(name)
            if raw is None or not raw.strip():
                continue
            text = raw.strip()
            if not text.isascii() or not text.isdigit() or len(text) > 19 or int(text) <= 0:
                raise LimitError(f"{name}: expected a positive integer, got {raw!r}")
            values[f.name] = int(text)
        return cls(**values)

    def replace(self, **changes: int | None) -> Limits:
        """A copy with some caps changed (``None`` values are ignored: unset options).

        Examples
        --------
        >>> Limits().replace(max_features=5, max_window_side=None).max_features
        5
        """
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @staticmethod
    def env_name(field: str) -> str:
        """The environment variable of a field (``max_image_pixels`` ->
        ``VJBOOST_MAX_IMAGE_PIXELS``)."""
        return ENV_PREFIX + field.upper()


_CURRENT: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("vjboost_limits",
                                                                          default=None)


def get_limits(limits: Limits | None = None) -> Limits:
    """``limits`` if given, else those of the enclosing :func:`use_limits`, else the defaults
    with the environment's overrides."""
    if limits is not None:
        return limits
    current = _CURRENT.get()
    return current if current is not None else Limits.from_env()


@contextlib.contextmanager
def use_limits(limits: Limits | None) -> Iterator[Limits]:
    """Make ``limits`` the caps of every check run inside the block (``None``: no change).

    The readers pass their ``limits=`` argument down this way, so that the checks deep inside
    (a feature family enumerating its features while a model loads) apply the caller's caps.

    Examples
    --------
    >>> with use_limits(Limits(max_features=7)):
    ...     get_limits().max_features
    7
    """
    if limits is None:
        yield get_limits()
        return
    token = _CURRENT.set(limits)
    try:
        yield limits
    finally:
        _CURRENT.reset(token)


def limit_error(what: str, value: object, limit: object, field: str, *,
                unit: str = "", option: str | None = None, advice: str = "") -> LimitError:
    """The one message format of a limit that was hit.

    Parameters
    ----------
    what : str
        The input at fault (a file name, an argument).
    value, limit : object
        What the input has and what is allowed.
    field : str
        The :class:`Limits` field (its environment variable is named in the message).
    unit : str
        Unit appended to both numbers (e.g. ``" pixels"``).
    option : str, optional
        A command-line option that raises the limit too.
    advice : str
        Another way out (e.g. "use a larger --scale-factor").

    Examples
    --------
    >>> str(limit_error("big.png", "50000x50000 = 2500000000", 100000000, "max_image_pixels",
    ...                 unit=" pixels"))  # doctest: +NORMALIZE_WHITESPACE
    'big.png: 50000x50000 = 2500000000 pixels exceeds the limit of 100000000 pixels
     (raise it with VJBOOST_MAX_IMAGE_PIXELS)'
    """
    how = Limits.env_name(field) + (f" or {option}" if option else "")
    tail = f"; or {advice}" if advice else ""
    return LimitError(f"{what}: {value}{unit} exceeds the limit of {limit}{unit} "
                      f"(raise it with {how}{tail})")


def check_count(n: int, what: str, field: str, *, unit: str = "", limits: Limits | None = None,
                advice: str = "") -> int:
    """Refuse a count over the cap ``field`` of :class:`Limits`; return it.

    Examples
    --------
    >>> check_count(5, "haar family of a 64x64 window", "max_features", unit=" features")
    5
    >>> check_count(5, "w", "max_features", limits=Limits(max_features=4))
    Traceback (most recent call last):
    ...
    vjboost._errors.LimitError: w: 5 exceeds the limit of 4 (raise it with VJBOOST_MAX_FEATURES)
    """
    cap = getattr(get_limits(limits), field)
    if n > cap:
        raise limit_error(what, n, cap, field, unit=unit, advice=advice)
    return n


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:30] + f"... ({len(text)} characters)"


def check_int(value: Any, where: str, *, lo: int | None = None, hi: int | None = None,
              error: type[Exception] = InputError) -> int:
    """A strict integer: an ``int`` (not a bool, not a float, however integral) within
    ``lo..hi``; ``error`` naming ``where`` otherwise.

    Examples
    --------
    >>> check_int(7, "f.json: feature_ids[0]", lo=0)
    7
    >>> check_int(1.5, "f.json: feature_ids[0]", lo=0)
    Traceback (most recent call last):
    ...
    vjboost._errors.InputError: f.json: feature_ids[0]: expected an integer, got 1.5
    >>> check_int(4294967315, "m.xml: <rect>", lo=0, hi=2**31 - 1)
    Traceback (most recent call last):
    ...
    vjboost._errors.InputError: m.xml: <rect>: 4294967315 is outside 0..2147483647
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise error(f"{where}: expected an integer, got {_show(value)}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"{'' if lo is None else lo}..{'' if hi is None else hi}"
        raise error(f"{where}: {_show(v)} is outside {rng}")
    return v


def check_float32(value: Any, where: str, *, error: type[Exception] = InputError) -> float:
    """A strict float32 value: a finite number (not a bool) that float32 holds without
    becoming infinite; ``error`` naming ``where`` otherwise.

    Examples
    --------
    >>> check_float32(-1.5, "m.json: stages[0].threshold")
    -1.5
    >>> check_float32(-1e39, "m.json: stages[0].threshold")
    Traceback (most recent call last):
    ...
    vjboost._errors.InputError: m.json: stages[0].threshold: -1e+39 is beyond float32's range \
(|x| < 3.4028236e+38)
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise error(f"{where}: expected a number, got {_show(value)}")
    v = float(value)
    if not math.isfinite(v):
        raise error(f"{where}: non-finite value {v}")
    if abs(v) >= FLOAT32_OVERFLOW:
        raise error(f"{where}: {v:g} is beyond float32's range (|x| < 3.4028236e+38)")
    return v


def pyramid_levels(scale_factor: float, image_size: tuple[int, int],
                   window: tuple[int, int]) -> int:
    """Scales a pyramid scan visits, ``1 + floor(log(min((W + ½)/w, (H + ½)/h)) / log(sf))``:
    the scaled image ``round(W / s)`` still holds the window (exact but for float32 ties, where
    it may count one more).

    Parameters
    ----------
    scale_factor : float > 1
    image_size : (width, height)
    window : (width, height)

    Examples
    --------
    >>> pyramid_levels(2.0, (100, 100), (25, 25))
    3
    """
    ratio = min((image_size[0] + 0.5) / window[0], (image_size[1] + 0.5) / window[1])
    if ratio < 1:
        return 0
    if not scale_factor > 1:
        return math.inf  # type: ignore[return-value]
    return 1 + int(math.floor(math.log(ratio) / math.log(scale_factor) + 1e-9))


def check_pyramid_levels(scale_factor: float, image_size: tuple[int, int],
                         window: tuple[int, int], *, limits: Limits | None = None,
                         what: str = "scale_factor") -> int:
    """Refuse a scan with more pyramid levels than ``max_pyramid_levels``; return the count.

    Examples
    --------
    >>> check_pyramid_levels(1.1, (640, 480), (24, 24))
    32
    """
    lim = get_limits(limits)
    n = pyramid_levels(scale_factor, image_size, window)
    if n > lim.max_pyramid_levels:
        raise limit_error(
            what, f"{scale_factor!r} gives {n} pyramid levels on a {image_size[0]}x"
            f"{image_size[1]} image, which", lim.max_pyramid_levels, "max_pyramid_levels",
            advice="use a larger scale factor such as 1.05")
    return n
