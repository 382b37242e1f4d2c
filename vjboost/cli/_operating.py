"""The operating-point options ``vjdetect`` and ``vjeval`` share (``--min-neighbors``,
``--min-score``, ``--border``, ``--border-margin``): parsed once, here, into
:class:`~vjboost.cascade.detector.CascadeDetector`'s arguments, ``auto`` and ``model`` left for
the detector to resolve from the model (:func:`~vjboost.cascade.detector.default_operating`,
:func:`~vjboost.cascade.detector.declared_border`)."""

from __future__ import annotations

import math
from typing import Any

import click


def parse_min_neighbors(value: str) -> int | str:
    """``--min-neighbors``: an integer >= 0, or ``auto``.

    >>> parse_min_neighbors("2"), parse_min_neighbors("auto")
    (2, 'auto')
    """
    if value == "auto":
        return value
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise click.BadParameter(f"expected an integer >= 0 or auto, got {value!r}",
                                 param_hint="--min-neighbors")
    return n


def parse_min_score(value: str) -> float | str | None:
    """``--min-score``: a finite number, ``none`` (no threshold) or ``auto``.

    >>> parse_min_score("1.5"), parse_min_score("none"), parse_min_score("auto")
    (1.5, None, 'auto')
    """
    if value in ("auto", "none"):
        return None if value == "none" else value
    try:
        t = float(value)
    except ValueError:
        t = float("nan")
    if not math.isfinite(t):
        raise click.BadParameter(f"expected a finite number, none or auto, got {value!r}",
                                 param_hint="--min-score")
    return t


#: ``--border``'s choices (``vjdetect``, ``vjeval``)
BORDER_CHOICES = ("none", "replicate", "reflect", "model")


def parse_border(value: str) -> str | None:
    """``--border`` (a ``click.Choice`` of ``none``, ``replicate``, ``reflect`` and ``model``,
    what the model declares) as the detector's argument: ``none`` is None.

    >>> parse_border("none"), parse_border("reflect"), parse_border("model")
    (None, 'reflect', 'model')
    """
    return None if value == "none" else value


def parse_border_margin(value: str) -> float | str:
    """``--border-margin``: a share of the window in [0, 1], or ``model`` (what the model
    declares, else 0.25).

    >>> parse_border_margin("0.3"), parse_border_margin("model")
    (0.3, 'model')
    """
    if value == "model":
        return value
    try:
        m = float(value)
    except ValueError:
        m = float("nan")
    if not 0.0 <= m <= 1.0:  # NaN fails too
        raise click.BadParameter(f"expected a share of the window in [0, 1] or model, got "
                                 f"{value!r}", param_hint="--border-margin")
    return m


def operating_neighbors(model: Any, min_neighbors: int | str) -> int:
    """The ``min_neighbors`` an evaluation reports ``model`` at: the one given, or with
    ``auto`` the model's default (where a detector with nothing set runs it)."""
    from ..cascade.detector import default_operating

    if min_neighbors == "auto":
        return int(default_operating(model)["min_neighbors"])
    return int(min_neighbors)
