"""The ``--scheduler`` / ``--workers`` options shared by the command-line tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .._parallel import Executor, ExecutorError, check_scheduler_address, make_executor

__all__ = ["dask_options", "open_executor"]


def _check_scheduler(ctx: click.Context, param: click.Parameter, value: str | None
                     ) -> str | None:
    """A malformed ``--scheduler`` is refused before any work, not after Dask's timeout."""
    if value is None:
        return None
    try:
        return check_scheduler_address(value)
    except ExecutorError as exc:
        raise click.BadParameter(str(exc).removeprefix("--scheduler "),
                                 ctx, param) from None


def dask_options(what: str) -> Callable[[Any], Any]:
    """Add ``--scheduler`` and ``--workers`` to a command; ``what`` says what runs as tasks."""

    def decorate(cmd: Any) -> Any:
        cmd = click.option(
            "--workers", type=click.IntRange(min=0), default=0, show_default=True,
            help=f"{what} on a local Dask cluster of N worker processes (0: in this "
                 "process).")(cmd)
        return click.option(
            "--scheduler", metavar="tcp://HOST:PORT", callback=_check_scheduler,
            help=f"{what} as tasks on this Dask scheduler's workers (pip install "
                 "'vjboost[dask]'; every worker must read the files at the same paths). Same "
                 "results as in this process; see docs/distributed.md.")(cmd)

    return decorate


def open_executor(scheduler: str | None, workers: int) -> Executor | None:
    """The Dask executor the options ask for (``None``: none); Dask's own logs silenced, so a
    failure is the one line of :class:`~vjboost._parallel.ExecutorError`."""
    if not scheduler and not workers:
        return None
    return make_executor(scheduler=scheduler, workers=workers, quiet=True)
