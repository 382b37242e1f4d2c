"""Where numba keeps vjboost's compiled kernels, and the note shown while it compiles them.

numba compiles a kernel the first time it is called and, with ``cache=True``, keeps the machine
code on disk. By default it writes beside the sources — inside ``site-packages`` for an
installed vjboost — so vjboost chooses a folder the user owns instead:
``$NUMBA_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/vjboost/numba`` (``~/.cache/vjboost/numba``).
This module imports nothing heavy; numba is imported only by :func:`compile_notice`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["cache_dir", "compile_notice", "use_user_cache"]

NOTE = "vjboost: compiling kernels (first run only; cached in {dir})"


def cache_dir() -> Path:
    """The folder numba caches vjboost's kernels in (see the module docstring).

    Examples
    --------
    >>> cache_dir().is_absolute()
    True
    """
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return (Path(base) / "vjboost" / "numba").resolve()


def use_user_cache() -> None:
    """Point numba's cache at :func:`cache_dir` unless ``NUMBA_CACHE_DIR`` is set already
    (or the folder cannot be created or written: numba then keeps its default).

    Sets ``NUMBA_CACHE_DIR`` for this process (numba reads it when it is imported, and reads
    its config again when it was imported before). Other numba code of the process then
    caches there too, which only moves its cache files.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # e.g. a read-only home: numba's own choice then (it refuses nothing)
    if not os.access(folder, os.W_OK):
        return
    path = str(folder)
    os.environ["NUMBA_CACHE_DIR"] = path
    config = getattr(sys.modules.get("numba"), "config", None)
    if config is not None:
        config.CACHE_DIR = path


@contextlib.contextmanager
def compile_notice(stream: TextIO | None = None) -> Iterator[None]:
    """Print one line to ``stream`` (stderr) when numba starts compiling inside the block.

    Nothing is printed when every kernel the block needs comes from the cache.

    Examples
    --------
    >>> with compile_notice():
    ...     pass
    """
    from numba.core import event

    shown = False
    out = sys.stderr if stream is None else stream

    class _Listener(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            nonlocal shown
            if not shown:
                shown = True
                print(NOTE.format(dir=cache_dir()), file=out, flush=True)

        def on_end(self, ev: event.Event) -> None:
            pass

    with event.install_listener("numba:compile", _Listener()):
        yield
