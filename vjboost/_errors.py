"""The error classes of vjboost: one base class, a few kinds.

Every error that vjboost raises on purpose is a :class:`VJBoostError`; its message is one line
that names the file or argument at fault and, where a limit was hit, the limit and how to raise
it. The command-line tools print that line and exit non-zero instead of showing a traceback;
anything else that escapes them is a bug.

The kinds also derive from the built-in class a caller would expect (``ValueError`` for bad
input, ``MemoryError`` for a refused allocation, ``OSError`` for a failed write), so code that
catches those keeps working.
"""

from __future__ import annotations

__all__ = ["InputError", "LimitError", "OutputError", "VJBoostError"]


class VJBoostError(Exception):
    """Base class of every error vjboost raises on purpose (one-line, actionable message)."""


class InputError(VJBoostError, ValueError):
    """Bad input: a file's content, an argument's value, data that cannot be used."""


class LimitError(InputError):
    """An input exceeds a configured limit (file size, pixels, window size, feature count...).

    The message names the input, the limit and the setting that raises it.
    """


class OutputError(VJBoostError, OSError):
    """An output cannot be written (full disk, no permission, a folder where a file goes, an
    output folder held by another run...)."""
