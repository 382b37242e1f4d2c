"""The progress line of the command-line tools (rich): one line on stderr, as wide as the
terminal (120 columns when stderr is not one), never cut at 80 columns."""

from __future__ import annotations

import shutil
import sys
from typing import Any

__all__ = ["progress_line"]


def progress_line(enabled: bool | None = None) -> Any:
    """A started-on-enter ``rich.progress.Progress`` (or None when disabled).

    Parameters
    ----------
    enabled : bool, optional
        Default: when stderr is a terminal.
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    width = shutil.get_terminal_size((120, 24)).columns if sys.stderr.isatty() else 120
    return Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True, width=max(width, 100)), transient=True)
