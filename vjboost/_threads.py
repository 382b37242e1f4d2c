"""Thread-count control for the numba kernels."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numba

__all__ = ["n_threads", "resolve_threads"]


def resolve_threads(threads: int | None) -> int:
    """``None`` or ``0`` → all numba threads; a positive count is capped at what numba has."""
    cap = numba.config.NUMBA_NUM_THREADS
    if threads is None or threads == 0:
        return cap
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"threads: expected a non-negative integer, got {threads!r}")
    return min(threads, cap)


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
