"""File access in one place: atomic writes (a crash never leaves a half-written model or
checkpoint behind) and reads that fail with a one-line message naming the file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_open", "atomic_write", "read_bytes", "save_png"]


def read_bytes(path: str | os.PathLike[str], *, what: str, error: type[Exception]) -> bytes:
    """The content of a file, or ``error`` with a one-line message that names it.

    Parameters
    ----------
    path : path-like
    what : str
        What the file should be, for messages (``"model file"``).
    error : exception class
        Raised (with the message) when the file is missing, a folder or unreadable.

    Returns
    -------
    bytes

    Examples
    --------
    >>> read_bytes("/no/such/model.json", what="model file", error=ValueError)
    Traceback (most recent call last):
    ...
    ValueError: /no/such/model.json: no such file
    """
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it over ``path`` only on success.

    Parameters
    ----------
    path : path-like
        Final destination. Its folder is created if missing.
    mode : {"wb", "w"}
        Binary or text mode.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode: expected 'wb' or 'w', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates the file readable by its owner only; give it the permissions a plain
        # open() would have given (0o666 less the umask), so that others can read models
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically (temporary file + rename)."""
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


def save_png(fig: Any, path: str | os.PathLike[str], dpi: int = 100) -> None:
    """Save a matplotlib figure as a PNG atomically (temporary file + rename)."""
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=dpi)
