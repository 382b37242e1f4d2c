"""Thread-count control for the numba kernels, and tasks of ``nogil`` kernels on threads."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numba

__all__ = ["chunks", "n_threads", "resolve_threads", "run_tasks", "serial_if"]

T = TypeVar("T")

_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def resolve_threads(threads: int | None) -> int:
    """``None`` or ``0`` → all numba threads; a positive count is capped at what numba has."""
    cap = numba.config.NUMBA_NUM_THREADS
    if threads is None or threads == 0:
        return cap
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"threads: expected a non-negative integer, got {threads!r}")
    return min(threads, cap)


def chunks(n_items: int) -> int:
    """How many chunks a parallel kernel splits ``n_items`` items of equal cost into, each with
    a scratch array of its own (no two threads ever share one): a few per numba thread, never
    more than the items, at least one.

    Examples
    --------
    >>> with n_threads(1):
    ...     chunks(1000), chunks(3), chunks(0)
    (4, 3, 1)
    """
    return max(1, min(n_items, 4 * numba.get_num_threads()))


@contextlib.contextmanager
def n_threads(threads: int | None) -> Iterator[int]:
    """Run the enclosed numba parallel kernels with ``threads`` threads."""
    old = numba.get_num_threads()
    n = resolve_threads(threads)
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(old)


@contextlib.contextmanager
def serial_if(small: bool) -> Iterator[int]:
    """Run the enclosed numba parallel kernels on one thread when ``small`` (a parallel region
    would cost more than it saves), else on the threads the caller set.

    The caller's count (:func:`n_threads` of a detector or trainer, ``threads=1`` included) is
    kept: work that is large enough to be split never takes more threads than the user gave.

    Examples
    --------
    >>> with n_threads(1):
    ...     with serial_if(False) as n:
    ...         n
    1
    """
    with n_threads(1 if small else numba.get_num_threads()) as n:
        yield n


def _pool(size: int) -> ThreadPoolExecutor:
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < size:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(size, thread_name_prefix="vjboost")
            _POOL_SIZE = size
        return _POOL


def run_tasks(tasks: Sequence[T], func: Callable[[T], object], *, threads: int | None) -> None:
    """Run ``func(task)`` for every task on up to ``threads`` threads (results are dropped).

    For kernels compiled with ``nogil=True`` that write disjoint parts of their outputs: the
    threads pull tasks in order until none is left, so uneven tasks balance out, and the
    result does not depend on the number of threads. The first task runs in the calling
    thread (a kernel that still has to compile does so once, there). Unlike numba's
    ``parallel=True``, nothing extra is compiled, and no threading layer is started.

    Parameters
    ----------
    tasks : sequence
        One item per task, passed to ``func``.
    func : callable
    threads : int or None
        As in :func:`resolve_threads`.

    Examples
    --------
    >>> out = [0] * 4
    >>> run_tasks(range(4), lambda i: out.__setitem__(i, i * i), threads=2)
    >>> out
    [0, 1, 4, 9]
    """
    if len(tasks) == 0:
        return
    func(tasks[0])
    rest = tasks[1:]
    nt = min(resolve_threads(threads), len(rest))
    if nt <= 1:
        for t in rest:
            func(t)
        return
    for f in [_pool(nt).submit(func, t) for t in rest]:
        f.result()
