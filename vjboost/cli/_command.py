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

import argparse
import contextlib
import errno
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import click

from .._errors import VJBoostError
from .._limits import MAX_SCALE_FACTOR, MAX_STAGES

__all__ = ["EXIT_SOME_SKIPPED", "MAX_SKIPPED_SHOWN", "SCALE_FACTOR", "SEED", "STAGES", "Command",
           "CommandError", "FiniteRange", "argparse_type", "one_line", "parse_size",
           "run_argparse_command"]

#: exit status of vjdetect and vjeval when some inputs were skipped (unreadable, oversized) and
#: the others processed: the outputs are written, but do not cover every input
EXIT_SOME_SKIPPED = 3
#: skipped inputs named one line each on stderr before the rest are counted (a folder of
#: broken files would otherwise flood the terminal)
MAX_SKIPPED_SHOWN = 5


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
    # FFmpeg logs through its own av_log, errors included ("moov atom not found", "Corrupted
    # tile data"): OpenCV sets its level from this variable when it first opens a video, and
    # the tools report an unreadable or cut-short video themselves (-8: AV_LOG_QUIET)
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")


def _warning_line(prog: str) -> Callable[..., None]:
    """A :func:`warnings.showwarning` that prints ``PROG: warning: MESSAGE`` on one line, as
    the tools' own warnings (Python's adds the source file and line of the call)."""
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        click.echo(f"{prog}: warning: {one_line(message)}", err=True)
    return show


#: errors of a path itself, whatever is done with it: a name longer than the file system's
#: NAME_MAX (or PATH_MAX), a loop of symbolic links
_PATH_ERRNOS = (errno.ENAMETOOLONG, errno.ELOOP)


@contextlib.contextmanager
def _tool_context(prog: str) -> Iterator[None]:
    """What every tool runs in: OpenCV's and FFmpeg's logs quiet, and library warnings shown
    as one ``PROG: warning: ...`` line each (Python's showwarning restored afterwards)."""
    _quiet_opencv()
    with warnings.catch_warnings():
        warnings.showwarning = _warning_line(prog)
        yield


def _bad_input_line(exc: BaseException) -> str | None:
    """The one line a tool reports for ``exc`` when it is bad input rather than a bug: a
    :class:`~vjboost._errors.VJBoostError`, or a path argument the system cannot even look up
    (any file argument of any tool: a name too long, a loop of links); None for anything
    else, which keeps its traceback."""
    if isinstance(exc, VJBoostError):
        return one_line(exc)
    if isinstance(exc, OSError) and exc.errno in _PATH_ERRNOS and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror}"
    return None


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
        with _tool_context(ctx.info_name or "vjboost"):
            try:
                return super().invoke(ctx)
            except (VJBoostError, OSError) as exc:
                line = _bad_input_line(exc)
                if line is None:
                    raise
                raise CommandError(line, self.error_exit_code) from None


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


#: a seed of a run's random choices: NumPy's generators take integers >= 0
SEED = click.IntRange(min=0)

#: stages of a cascade to train: the trainer's own range (``CascadeTrainer(num_stages=...)``)
STAGES = click.IntRange(1, MAX_STAGES)


def argparse_type(param_type: click.ParamType) -> Callable[[str], Any]:
    """A shared option type (:data:`SEED`, :data:`STAGES`...) for an :mod:`argparse` option:
    the same conversion and range, refused as argparse's usage error (``vjdemo``).

    Parameters
    ----------
    param_type : click.ParamType
        The option type the click tools use.

    Returns
    -------
    callable
        ``str -> value``, raising :class:`argparse.ArgumentTypeError` on a bad value.

    Examples
    --------
    >>> argparse_type(SEED)("7")
    7
    >>> argparse_type(SEED)("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: -1 is not in the range x>=0.
    """

    def convert(text: str) -> Any:
        try:
            return param_type.convert(text, None, None)
        except click.BadParameter as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = param_type.name  # argparse names the type in some messages
    return convert


def run_argparse_command(main: Callable[[], int], *, exit_code: int = 2,
                         prog: str = "vjboost") -> int:
    """Run the body of an :mod:`argparse` command as :class:`Command` runs a click command:
    bad input (:func:`_bad_input_line`) ends in one ``Error: ...`` line on stderr and
    ``exit_code`` (other exceptions keep their traceback), and library warnings are one
    ``PROG: warning: ...`` line each.

    Parameters
    ----------
    main : callable
        The command's body, returning its exit status.
    exit_code : int, default=2
        The exit status of bad input.
    prog : str, default="vjboost"
        The tool's name, which its warnings begin with.

    Returns
    -------
    int
        ``main()``'s exit status, or ``exit_code``.

    Examples
    --------
    >>> from vjboost._errors import InputError
    >>> def body():
    ...     raise InputError("out: not a folder")
    >>> import contextlib, io
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     code = run_argparse_command(body)
    >>> code, err.getvalue()
    (2, 'Error: out: not a folder\\n')
    """
    with _tool_context(prog):
        try:
            return main()
        except (VJBoostError, OSError) as exc:
            line = _bad_input_line(exc)
            if line is None:
                raise
            print(f"Error: {line}", file=sys.stderr)
            return exit_code


#: ``N`` or ``WxH`` (``W*H``, ``W,H``): one or two integers, nothing missing around the separator
_SIZE = re.compile(r"\s*(\d+)\s*(?:[x*,]\s*(\d+)\s*)?", re.IGNORECASE)


def parse_size(value: str, name: str, *, minimum: int = 0, maximum: int | None = None,
               what: str = "WxH") -> tuple[int, int]:
    """The one parser of sizes on the command line (``vjdetect --min-size``, ``vjtrain
    --window``...): ``N`` (a square) or ``WxH``, strictly (``20x`` and ``x20`` are refused).

    Parameters
    ----------
    value : str
    name : str
        The option, named in errors.
    minimum : int, default=0
        Smallest side.
    maximum : int, optional
        Largest side (default: int32's largest; a limit checked elsewhere, such as the
        window's, names its own cap).
    what : str
        How the expected form is called in errors.

    Returns
    -------
    (width, height)

    Raises
    ------
    click.BadParameter
        Naming the option and the value.

    Examples
    --------
    >>> parse_size("24", "--window"), parse_size("50x20", "--window")
    ((24, 24), (50, 20))
    >>> parse_size("20x", "--min-size")
    Traceback (most recent call last):
    ...
    click.exceptions.BadParameter: expected N or WxH, got '20x'
    """
    m = _SIZE.fullmatch(value)
    if m is None:
        raise click.BadParameter(f"expected N or {what}, got {value!r}", param_hint=name)
    w = int(m.group(1))
    h = w if m.group(2) is None else int(m.group(2))
    top = 2**31 - 1 if maximum is None else maximum
    if not (minimum <= w <= top and minimum <= h <= top):
        sides = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise click.BadParameter(f"expected N or {what} with sides {sides}, got {value!r}",
                                 param_hint=name)
    return w, h
