"""Plots of detection-rate / false-positive curves (matplotlib, drawn onto a given axis)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .sweep import NeighborsCurve

__all__ = ["curve_figure", "plot_neighbors_curves"]


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
    for label, c in curves.items():
        keep = c.min_neighbors >= 1
        (line,) = ax.plot(c.false_positives[keep], c.detection_rate[keep], marker=".",
                          label=label)
        at = mark.get(label) if isinstance(mark, Mapping) else mark
        k = np.flatnonzero(c.min_neighbors == at) if at is not None else []
        if len(k):
            ax.plot([c.false_positives[k[0]]], [c.detection_rate[k[0]]], "o", mfc="none", ms=9,
                    color=line.get_color())
    ax.set_xscale("symlog", linthresh=10)
    where = f" ({n_images} images)" if n_images else ""
    ax.set_xlabel(f"false positives{where}")
    ax.set_ylabel(f"detection rate (IoU ≥ {iou:g})")
    ax.set_ylim(0, 1)
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
