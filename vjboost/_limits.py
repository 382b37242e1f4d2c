"""Input limits: the caps that keep a hostile or unlucky input from exhausting memory or time.

Every cap has a default that fits ordinary use and can be raised: through an environment
variable (read by :meth:`Limits.from_env`), or per call/command (API arguments, CLI options).
A cap that is hit raises :class:`vjboost._errors.LimitError` with one message format (see
:func:`limit_error`): the input, its value, the limit, and how to raise it.

Model-file caps (file size, nesting depth, integer ranges, window size, feature count) belong
here too: add a field with its default and environment variable to :class:`Limits` and check it
with :func:`limit_error`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

from ._errors import LimitError

__all__ = ["ENV_PREFIX", "Limits", "check_pyramid_levels", "get_limits", "limit_error",
           "pyramid_levels"]

ENV_PREFIX = "VJBOOST_"


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

    Examples
    --------
    >>> Limits().max_image_pixels
    100000000
    >>> Limits(max_image_pixels=10).max_image_pixels
    10
    """

    max_image_pixels: int = 100_000_000
    max_pyramid_levels: int = 1000

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
            try:
                v = int(raw.strip())
            except ValueError:
                raise LimitError(f"{name}: expected a positive integer, got {raw!r}") from None
            if v <= 0:
                raise LimitError(f"{name}: expected a positive integer, got {raw!r}")
            values[f.name] = v
        return cls(**values)

    @staticmethod
    def env_name(field: str) -> str:
        """The environment variable of a field (``max_image_pixels`` ->
        ``VJBOOST_MAX_IMAGE_PIXELS``)."""
        return ENV_PREFIX + field.upper()


def get_limits(limits: Limits | None = None) -> Limits:
    """``limits`` if given, else the defaults with the environment's overrides."""
    return limits if limits is not None else Limits.from_env()


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
