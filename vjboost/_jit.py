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

Loading a kernel from the cache, numba first refreshes its CPU target: it imports and installs
all its typing and lowering registries (strings, lists, dicts, random numbers, datetimes...,
about 70 modules and a tenth of a CPU second), which only a compilation reads. A cached kernel
needs numba's runtime only, so :func:`light_cache_loads` makes the loads of vjboost's own kernels
start just that; every compilation still refreshes the target itself, and a load that fails
that way is retried as numba does it.

A factory that makes several variants of one kernel (a closure per set of compile-time
constants) gives each its own name with :func:`variant`: numba names a compiled function's
machine code after the function's qualified name and a counter of the process that compiled it,
so two variants cached by two processes can carry the same symbol, and a process that loads
both from the cache then runs the first one's code for both.

numba compiles one function at a time in a process, but its disk cache is shared between
processes: :func:`compile_ahead` starts, when a block starts compiling, a second process that
compiles kernels the block will need later (with the argument types it will pass them) and
caches them; the block then loads them instead of compiling them, the two compilations running
on two cores. A load of one of those kernels that finds nothing in the cache while the second
process runs waits for it (polling the cache) rather than compile the kernel a second time; a
kernel the second process does not compile, or not with those types, or once it has exited, the
block compiles itself, as it would have: results never depend on it.

This module imports nothing heavy; numba is imported only by :func:`compile_notice`,
:func:`compile_ahead` and when numba itself loads its array maths or its cache.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TextIO, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["AHEAD_ENV", "cache_dir", "compile_ahead", "compile_notice", "defer_blas_probe",
           "light_cache_loads", "use_user_cache", "variant"]

NOTE = "vjboost: compiling kernels (first run only; cached in {dir})"

#: set to ``0`` to keep :func:`compile_ahead` from starting second processes
AHEAD_ENV = "VJBOOST_COMPILE_AHEAD"


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


def variant(tag: str) -> Callable[[_F], _F]:
    """Name a kernel after its variant: ``tag`` is appended to the function's ``__name__`` and
    ``__qualname__``, which numba's symbols and cache files carry (see the module docstring).
    Apply it below numba's decorator, in a factory that builds one kernel per ``tag``.

    Examples
    --------
    >>> def make(dense):
    ...     @variant("dense" if dense else "sparse")
    ...     def kernel(x):
    ...         return x
    ...     return kernel
    >>> make(True).__qualname__, make(False).__name__
    ('make.<locals>.kernel_dense', 'kernel_sparse')
    """
    if not (tag.isascii() and f"_{tag}".isidentifier()):
        raise ValueError(f"tag: expected letters, digits and underscores, got {tag!r}")

    def rename(func: _F) -> _F:
        func.__name__ = f"{func.__name__}_{tag}"
        func.__qualname__ = f"{func.__qualname__}_{tag}"
        return func

    return rename


@contextlib.contextmanager
def compile_notice(stream: TextIO | None = None) -> Iterator[None]:
    """Print one line to ``stream`` (stderr) when numba starts compiling inside the block.

    Nothing is printed when every kernel the block needs comes from the cache.

    Examples
    --------
    >>> with compile_notice():
    ...     pass
    """
    shown = False
    out = sys.stderr if stream is None else stream

    def note() -> None:
        nonlocal shown
        if not shown:
            shown = True
            print(NOTE.format(dir=cache_dir()), file=out, flush=True)

    with _on_compile(note):
        yield


@contextlib.contextmanager
def _on_compile(start: Callable[[], None]) -> Iterator[None]:
    """Call ``start()`` each time numba starts compiling inside the block."""
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            start()

        def on_end(self, ev: event.Event) -> None:
            pass

    with event.install_listener("numba:compile", _Listener()):
        yield


#: the second processes started by :func:`compile_ahead`, by command (one each per process)
_AHEAD: dict[tuple[str, ...], subprocess.Popen] = {}
#: the kernels a running second process compiles: (module, qualified name, argument types) →
#: the process
_PENDING: dict[tuple[str, str, tuple], subprocess.Popen] = {}
_AHEAD_LOCK = threading.Lock()
#: the longest a load waits for a second process (seconds; then the kernel is compiled here)
AHEAD_WAIT = 30.0
#: how often a waiting load looks in the cache again (seconds)
_POLL = 0.01

#: a job's kernel: a numba dispatcher (or its Python function) and its argument types
Kernel = tuple[Any, tuple]


def _kernel_key(py_func: Any, types: Any) -> tuple[str, str, tuple]:
    return (getattr(py_func, "__module__", ""), getattr(py_func, "__qualname__", ""),
            tuple(getattr(types, "args", types)))


def _ahead_place(module: str) -> tuple[str | None, dict[str, str]]:
    """Where a second process running ``python -m module`` starts, and its environment: in
    the folder that holds this process's package of ``module`` (``-m`` imports from the
    working folder first, which could hold another copy of the package), with the cache
    folder as an absolute path (a relative one would name another folder there)."""
    env = dict(os.environ)
    if env.get("NUMBA_CACHE_DIR"):
        env["NUMBA_CACHE_DIR"] = str(Path(env["NUMBA_CACHE_DIR"]).expanduser().resolve())
    top = sys.modules.get(module.partition(".")[0])
    where = getattr(top, "__file__", None)
    return (str(Path(where).resolve().parent.parent) if where else None), env


def _start_ahead(module: str, jobs: Sequence[str],
                 resolve: Callable[[str], Kernel] | None) -> None:
    if not jobs:
        return
    command = (sys.executable, "-m", module, *jobs)
    with _AHEAD_LOCK:
        if command in _AHEAD:
            return
        cwd, env = _ahead_place(module)
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError:  # no interpreter to start (an embedded Python...): compile here
            return
        if not _AHEAD:
            atexit.register(_stop_ahead)
        _AHEAD[command] = proc
        for kernel, types in (map(resolve, jobs) if resolve is not None else ()):
            _PENDING[_kernel_key(getattr(kernel, "py_func", kernel), types)] = proc


def _await_ahead(key: tuple[str, str, tuple], load: Callable[[], Any]) -> Any:
    """``load()`` again and again while the second process compiling ``key`` runs (at most
    :data:`AHEAD_WAIT` seconds), until it finds the kernel; None when it never does, or when no
    running second process compiles ``key``. A process waited for in vain that long is waited
    for no more (a stopped or stuck process delays one load, not every one)."""
    proc = _PENDING.get(key)
    if proc is None or proc.poll() is not None:
        return None
    deadline = time.monotonic() + AHEAD_WAIT
    while time.monotonic() < deadline:
        done = proc.poll() is not None
        got = load()
        if got is not None or done:  # found, or what the process has written is all there is
            return got
        time.sleep(_POLL)
    with _AHEAD_LOCK:
        for k in [k for k, p in _PENDING.items() if p is proc]:
            del _PENDING[k]
    return None


def _stop_ahead() -> None:
    """At exit, stop a second process still compiling: this process has compiled what it
    needed by then, and numba writes each cache file whole, then renames it (a stopped process
    leaves no half-written entry)."""
    for proc in _AHEAD.values():
        if proc.poll() is None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(2.0)


@contextlib.contextmanager
def compile_ahead(module: str, jobs: Callable[[], Sequence[str]], *, cpus: int = 2,
                  resolve: Callable[[str], Kernel] | None = None) -> Iterator[None]:
    """When numba starts compiling inside the block, run ``python -m module *jobs()`` once (in
    the background, with this process's environment and so its cache folder), a process that
    compiles and caches the kernels the jobs name (see the module docstring). ``jobs`` is
    called only then; ``resolve(job)`` gives a job's kernel and argument types: while the
    process runs, a load of one of them that misses the cache waits for it.

    Nothing starts when every kernel the block needs comes from the cache, without jobs, when
    the block may use fewer than two CPUs (``cpus``: the second process would take the block's
    own), when ``sys.executable`` is not a Python interpreter, or when the environment sets
    ``VJBOOST_COMPILE_AHEAD=0``; the same command runs once per process. A second process still
    running when this one exits is stopped.

    Examples
    --------
    >>> with compile_ahead("vjboost.cascade.ahead", lambda: []):
    ...     pass
    """
    # an embedding program's sys.executable may be no Python at all (a server binary)
    python = Path(sys.executable or "").name.lower()
    if cpus < 2 or os.environ.get(AHEAD_ENV, "1").strip() == "0" \
            or not python.startswith("python"):
        yield
        return
    with _on_compile(lambda: _start_ahead(module, jobs(), resolve)):
        yield


#: the numba module whose import probes for a BLAS (``_HAVE_BLAS = _check_blas()``)
_ARRAYMATH = "numba.np.arraymath"
#: the numba module whose ``Cache.load_overload`` loads a cached kernel
_CACHING = "numba.core.caching"


def _scipy_present() -> None:
    """numba's import-time BLAS probe, answered without importing ``scipy.linalg``: SciPy's
    ``cython_blas`` exists wherever SciPy is installed. numba checks the BLAS itself (its
    integer width included) when it compiles a kernel that calls one."""
    if importlib.util.find_spec("scipy") is None:
        raise ImportError("scipy 0.16+ is required for linear algebra")


class _ImportHook:
    """A meta-path finder that sees one numba module being imported, once, and runs its
    module code inside ``around(module)`` (a context manager): the hook can change what the
    module sees while it runs, or patch it once it has run. Without a loader that takes
    attributes (another Python), the module is imported as it is."""

    def __init__(self, fullname: str, around: Callable[[Any], AbstractContextManager[Any]]
                 ) -> None:
        self.fullname = fullname
        self.around = around

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname != self.fullname:
            return None
        _remove_hook(fullname)
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
        around = self.around

        def exec_around(module: object) -> None:
            del loader.exec_module  # one use: a reload runs numba's module as it is
            with around(module):
                exec_module(module)

        try:
            loader.exec_module = exec_around  # this loader instance only
        except (AttributeError, TypeError):  # a loader that takes no attributes: numba as is
            pass
        return spec


def _remove_hook(fullname: str) -> None:
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not (isinstance(f, _ImportHook) and f.fullname == fullname)]


def _install_hook(fullname: str, around: Callable[[Any], AbstractContextManager[Any]],
                  loaded: Callable[[Any], None]) -> None:
    """Run ``around`` on ``fullname``'s import, or ``loaded(module)`` now when numba has
    imported it already (nothing when the hook is installed)."""
    if fullname in sys.modules:
        loaded(sys.modules[fullname])
    elif not any(isinstance(f, _ImportHook) and f.fullname == fullname for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportHook(fullname, around))


@contextlib.contextmanager
def _quick_blas_probe(module: object) -> Iterator[None]:
    """numba's array maths run with ``numba.np.linalg.ensure_blas`` (which imports
    ``scipy.linalg``) replaced by :func:`_scipy_present`; the real one is put back as soon as
    the module has run (or failed), so every later BLAS use goes through numba's own check."""
    from numba.np import linalg

    real = getattr(linalg, "ensure_blas", None)
    if real is None:  # another numba: nothing to defer
        yield
        return
    linalg.ensure_blas = _scipy_present
    try:
        yield
    finally:
        # the array maths keep the quick probe under their own name, which numba calls only
        # at import
        linalg.ensure_blas = real


def defer_blas_probe() -> None:
    """Spare numba's first compile or cache load the import of ``scipy.linalg`` (see the
    module docstring): installs a one-shot import hook; nothing when numba has loaded its
    array maths already, or when the hook is installed.

    Examples
    --------
    >>> defer_blas_probe()
    """
    _install_hook(_ARRAYMATH, _quick_blas_probe, lambda module: None)


def _light_load(cache: Any, sig: Any, target_context: Any, *, real: Callable[..., Any]) -> Any:
    """``Cache.load_overload`` for vjboost's kernels: the target context's refresh during the
    load only starts numba's runtime (the rest of it loads the typing and lowering registries,
    which only a compilation uses, and every compilation refreshes the context itself). Any
    failure of that load is retried as numba does it. A miss of a kernel that a running second
    process compiles (:func:`compile_ahead`) waits for it."""
    py_func = getattr(cache, "_py_func", None)
    if not getattr(py_func, "__module__", "").startswith("vjboost."):
        return real(cache, sig, target_context)
    try:
        from numba.core.runtime.nrt import rtsys
    except ImportError:  # another numba
        return real(cache, sig, target_context)

    def load() -> Any:
        target_context.refresh = lambda: rtsys.initialize(target_context)
        try:
            return real(cache, sig, target_context)
        except Exception:  # noqa: BLE001 - whatever the light load lacked, numba's own has
            pass
        finally:
            del target_context.refresh
        return real(cache, sig, target_context)

    got = load()
    if got is None and _PENDING:  # a second process may be compiling it (compile_ahead)
        got = _await_ahead(_kernel_key(py_func, sig), load)
    return got


def _patch_cache_loads(module: Any) -> None:
    cache = getattr(module, "Cache", None)
    real = getattr(cache, "load_overload", None)
    if real is None or getattr(real, "_vjboost_light", False):
        return  # another numba, or patched already

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        return _light_load(self, sig, target_context, real=real)

    load_overload._vjboost_light = True  # type: ignore[attr-defined]
    cache.load_overload = load_overload


@contextlib.contextmanager
def _then_patch_cache_loads(module: Any) -> Iterator[None]:
    yield
    _patch_cache_loads(module)


def light_cache_loads() -> None:
    """Make loading vjboost's kernels from numba's disk cache skip what only compiling needs
    (see the module docstring): ``numba.core.caching.Cache.load_overload`` is wrapped once
    numba has imported it (now, or by a one-shot import hook). Other code's kernels load as
    numba loads them.

    Examples
    --------
    >>> light_cache_loads()
    """
    _install_hook(_CACHING, _then_patch_cache_loads, _patch_cache_loads)
