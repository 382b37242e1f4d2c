"""Atomic file writes: a crash never leaves a half-written model or checkpoint behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_open", "atomic_write", "save_png"]


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
