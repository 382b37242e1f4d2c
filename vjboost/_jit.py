"""Where numba keeps vjboost's compiled kernels, and the note shown while it compiles them.

numba compiles a kernel the first time it is called and, with ``cache=True``, keeps the machine
code on disk. By default it writes beside the sources — inside ``site-packages`` for an
installed vjboost — so vjboost chooses a folder the user owns instead:
``$NUMBA_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/vjboost/numba`` (``~/.cache/vjboost/numba``).

numba's CPU target imports SciPy's linear algebra (``scipy.linalg``, a fifth of a second and
more, pulling in much of NumPy's and SciPy's Python code) the first time it compiles or loads
any kernel, only to learn whether a BLAS exists for ``np.dot`` of 1-D arrays. vjboost's kernels
use no BLAS, so :func:`defer_blas_probe` makes numba answer that from whether SciPy is
installed, and numba imports SciPy when a kernel that uses BLAS is compiled, as it does for
every other BLAS/LAPACK function.

This module imports nothing heavy; numba is imported only by :func:`compile_notice` and when
numba itself loads its array maths.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["cache_dir", "compile_notice", "defer_blas_probe", "use_user_cache"]

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


#: the numba module whose import probes for a BLAS (``_HAVE_BLAS = _check_blas()``)
_ARRAYMATH = "numba.np.arraymath"


def _scipy_present() -> None:
    """numba's import-time BLAS probe, answered without importing ``scipy.linalg``: SciPy's
    ``cython_blas`` exists wherever SciPy is installed. numba checks the BLAS itself (its
    integer width included) when it compiles a kernel that calls one."""
    if importlib.util.find_spec("scipy") is None:
        raise ImportError("scipy 0.16+ is required for linear algebra")


class _DeferBlasProbe:
    """A meta-path finder that sees numba's array maths being imported, once: for the time of
    that import, ``numba.np.linalg.ensure_blas`` (which imports ``scipy.linalg``) is replaced by
    :func:`_scipy_present`; the real one is put back as soon as the module has run (or failed),
    so every later BLAS use goes through numba's own check."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname != _ARRAYMATH:
            return None
        _remove_probe()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_deferring(module: object) -> None:
            del loader.exec_module  # one use: a reload runs numba's module as it is
            from numba.np import linalg

            real = getattr(linalg, "ensure_blas", None)
            if real is None:  # another numba: nothing to defer
                exec_module(module)
                return
            linalg.ensure_blas = _scipy_present
            try:
                exec_module(module)
            finally:
                # every later BLAS use goes through numba's own check; the array maths keep
                # the quick probe under their own name, which numba calls only at import
                linalg.ensure_blas = real

        try:
            loader.exec_module = exec_deferring  # this loader instance only
        except (AttributeError, TypeError):  # a loader that takes no attributes: numba as is
            pass
        return spec


def _remove_probe() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _DeferBlasProbe)]


def defer_blas_probe() -> None:
    """Spare numba's first compile or cache load the import of ``scipy.linalg`` (see the
    module docstring): installs a one-shot import hook; nothing when numba has loaded its
    array maths already, or when the hook is installed.

    Examples
    --------
    >>> defer_blas_probe()
    """
    if _ARRAYMATH in sys.modules or any(isinstance(f, _DeferBlasProbe) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _DeferBlasProbe())
