"""Plots of detection-rate / false-positive curves (matplotlib, drawn onto a given axis)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .sweep import NeighborsCurve

__all__ = ["curve_figure", "false_positive_axis", "plot_neighbors_curves"]

# below this many false positives the axis is linear, above it logarithmic
_LINEAR_FP = 10


def false_positive_axis(ax: Any, largest: float) -> None:
    """Scale a false-positive axis (x) from 0: linear up to 10, logarithmic beyond.

    Matplotlib's own symmetric-log axis puts its ticks at powers of ten only, so a set with fewer
    than ten false positives got two ticks at the padded data limits, one of them a negative
    count (``-2.5×10⁻¹`` and ``5.25×10⁰``). Counts are never negative: the ticks are whole
    counts from 0, and the axis starts a hair left of 0 so that points at 0 are drawn whole.

    Parameters
    ----------
    ax : matplotlib Axes
        Its x axis is set.
    largest : float
        The largest false-positive count drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 2, 5], [0.5, 0.6, 0.7])
    >>> false_positive_axis(ax, 5)
    >>> [float(t) for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= 5][:3]
    [0.0, 1.0, 2.0]
    >>> plt.close(fig)
    """
    from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator, StrMethodFormatter

    largest = max(float(largest), 0.0)
    if largest <= _LINEAR_FP:
        ax.set_xscale("linear")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=2))
        right = max(largest, 1.0) * 1.05
        ax.set_xlim(-0.02 * right, right)
    else:
        ax.set_xscale("symlog", linthresh=_LINEAR_FP)
        # 1-2-5 per decade while they fit, powers of ten alone over more than two decades
        steps = (1, 2, 5) if largest <= 1000 else (1,)
        ticks = [0, *(m for m in steps if m > 1)] + [m * 10 ** k for k in range(1, 9)
                                                     for m in steps]
        ax.xaxis.set_major_locator(FixedLocator([t for t in ticks if t <= largest * 1.5]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlim(-0.2, largest * 1.2)
    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))


def plot_neighbors_curves(ax: Any, curves: Mapping[str, NeighborsCurve], *, iou: float,
                          mark: int | Mapping[str, int] | None = 3,
                          n_images: int | None = None) -> None:
    """Draw one ``min_neighbors`` sweep per model: detection rate against false positives.

    Parameters
    ----------
    ax : matplotlib Axes
    curves : mapping label -> NeighborsCurve
        ``min_neighbors = 0`` (ungrouped windows) is left out of the line.
    iou : float
        The matching threshold the curves were computed with (axis label).
    mark : int or mapping label -> int, optional
        ``min_neighbors`` value circled on every curve (the usual operating point), or on each
        curve its own.
    n_images : int, optional
        Shown in the x label.
    """
    largest = 0.0
    for label, c in curves.items():
        keep = c.min_neighbors >= 1
        (line,) = ax.plot(c.false_positives[keep], c.detection_rate[keep], marker=".",
                          label=label)
        largest = max(largest, float(np.max(c.false_positives[keep], initial=0)))
        at = mark.get(label) if isinstance(mark, Mapping) else mark
        k = np.flatnonzero(c.min_neighbors == at) if at is not None else []
        if len(k):
            ax.plot([c.false_positives[k[0]]], [c.detection_rate[k[0]]], "o", mfc="none", ms=9,
                    color=line.get_color())
            largest = max(largest, float(c.false_positives[k[0]]))
    false_positive_axis(ax, largest)
    where = f" ({n_images} images)" if n_images else ""
    ax.set_xlabel(f"false positives{where}")
    ax.set_ylabel(f"detection rate (IoU ≥ {iou:g})")
    ax.set_ylim(0, 1.02)  # a circle at rate 1 stays whole
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)


def curve_figure(curves: Mapping[str, NeighborsCurve], *, iou: float,
                 mark: int | Mapping[str, int] | None = 3,
                 n_images: int | None = None) -> Any:
    """A matplotlib figure (Agg) of :func:`plot_neighbors_curves`, titled with the circled
    operating point; the caller closes it.

    Parameters
    ----------
    curves : mapping label -> NeighborsCurve
        One sweep per model.
    iou : float
        The matching threshold the curves were computed with (axis label).
    mark : int or mapping label -> int, default 3
        ``min_neighbors`` value circled on every curve, or on each curve its own.
    n_images : int, optional
        Shown in the x label.

    Returns
    -------
    matplotlib.figure.Figure
        6.4 x 4.2 inches at 100 dpi.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    plot_neighbors_curves(ax, curves, iou=iou, mark=mark, n_images=n_images)
    circled = ("each model's operating point" if isinstance(mark, Mapping)
               else f"min_neighbors {mark}")
    ax.set_title(f"min_neighbors sweep (circle: {circled})")
    fig.tight_layout()
    return fig
