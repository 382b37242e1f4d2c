"""What every command-line tool shares: its errors end in one line and an exit status.

An error vjboost raises on purpose (:class:`~vjboost._errors.VJBoostError`: bad input, a limit,
the memory budget, an output that cannot be written) is a message for the user: the tools print
it as one line (``Error: ...``) on stderr and exit non-zero, without a traceback. Any other
exception is a bug and keeps its traceback, so that it gets reported.

Use :class:`Command` as the ``cls`` of ``click.command``::

    @click.command(cls=Command, error_exit_code=2)
    def vjtool(...): ...
"""

from __future__ import annotations

import errno
import math
from typing import Any

import click

from .._errors import VJBoostError
from .._limits import MAX_SCALE_FACTOR

__all__ = ["SCALE_FACTOR", "Command", "CommandError", "FiniteRange", "one_line"]


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (an error message must not spread over several).

    Examples
    --------
    >>> one_line(ValueError("model.json: bad\\n  at line 3"))
    'model.json: bad at line 3'
    """
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    return text or type(exc).__name__


def _quiet_opencv() -> None:
    """Leave only OpenCV's errors on stderr. Its decoders print warnings of their own (``PNG
    input buffer is incomplete``) before the tool's one line names the damaged file and what
    happened to it; the tools report every input they skip, so the warning only adds a second,
    less clear line. The library itself leaves OpenCV's settings alone."""
    import cv2

    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)


#: errors of a path itself, whatever is done with it: a name longer than the file system's
#: NAME_MAX (or PATH_MAX), a loop of symbolic links
_PATH_ERRNOS = (errno.ENAMETOOLONG, errno.ELOOP)


class CommandError(click.ClickException):
    """A :class:`~vjboost._errors.VJBoostError` turned into click's one-line ``Error: ...``
    with the command's exit status."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Command(click.Command):
    """A click command whose :class:`~vjboost._errors.VJBoostError` end in one line on stderr
    and exit status ``error_exit_code`` (other exceptions keep their traceback).

    Parameters
    ----------
    *args, **kwargs
        Those of :class:`click.Command`.
    error_exit_code : int, default=1
        Exit status of a :class:`~vjboost._errors.VJBoostError`.

    Examples
    --------
    >>> from click.testing import CliRunner
    >>> from vjboost._errors import InputError
    >>> @click.command(cls=Command, error_exit_code=2)
    ... def tool():
    ...     raise InputError("data.txt: line 3: expected 4 numbers")
    >>> r = CliRunner().invoke(tool, [])
    >>> r.exit_code, r.output.strip()
    (2, 'Error: data.txt: line 3: expected 4 numbers')
    """

    def __init__(self, *args: Any, error_exit_code: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.error_exit_code = int(error_exit_code)

    def invoke(self, ctx: click.Context) -> Any:
        _quiet_opencv()
        try:
            return super().invoke(ctx)
        except VJBoostError as exc:
            raise CommandError(one_line(exc), self.error_exit_code) from None
        except OSError as exc:
            # a path argument the system cannot even look up (any file argument of any tool):
            # bad input, not a bug
            if exc.errno not in _PATH_ERRNOS or exc.filename is None:
                raise
            raise CommandError(f"{exc.filename}: {exc.strerror}", self.error_exit_code) from None


class FiniteRange(click.FloatRange):
    """:class:`click.FloatRange` that also refuses ``nan`` and ``inf`` (``nan`` compares false
    with both bounds, so click's own range lets it through to the library).

    Examples
    --------
    >>> @click.command()
    ... @click.option("--iou", type=FiniteRange(0, 1, min_open=True), default=0.5)
    ... def tool(iou):
    ...     click.echo(iou)
    >>> from click.testing import CliRunner
    >>> CliRunner().invoke(tool, ["--iou", "0.3"]).output.strip()
    '0.3'
    >>> r = CliRunner().invoke(tool, ["--iou", "nan"])
    >>> r.exit_code, r.output.strip().splitlines()[-1]
    (2, "Error: Invalid value for '--iou': nan is not a finite number.")
    """

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{number} is not a finite number.", param, ctx)
        return number


#: a scan's ratio between successive scales: a number above 1, at most
#: :data:`vjboost._limits.MAX_SCALE_FACTOR` (the library's own check,
#: :func:`vjboost.cascade.scan.check_scale_factor`, with click's message)
SCALE_FACTOR = FiniteRange(1.0, MAX_SCALE_FACTOR, min_open=True)
