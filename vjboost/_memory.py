"""Memory budgets: estimate before allocating, refuse with an actionable message."""

from __future__ import annotations

import os

from ._errors import VJBoostError

__all__ = [
    "MemoryBudgetError",
    "available_memory",
    "check_memory",
    "format_bytes",
    "memory_budget",
    "parse_bytes",
    "parse_count",
]


class MemoryBudgetError(VJBoostError, MemoryError, ValueError):
    """An allocation would exceed the memory budget.

    ``what``, ``needed`` and ``budget`` (bytes) are those :func:`check_memory` was given, so a
    caller can word its own advice (0 and empty where the budget itself is at fault)."""

    def __init__(self, message: str, *, what: str = "", needed: int = 0, budget: int = 0
                 ) -> None:
        super().__init__(message)
        self.what, self.needed, self.budget = what, needed, budget


def _proc_bytes(path: str, *, field: str) -> int | None:
    """The ``field:`` line of a Linux ``/proc`` file (``/proc/meminfo``, ``/proc/self/status``:
    a size in kB) in bytes; None where the file cannot be read or has no such line."""
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def available_memory() -> int:
    """Bytes of physical memory currently available (MemAvailable), or total RAM as a fallback."""
    available = _proc_bytes("/proc/meminfo", field="MemAvailable")
    if available is not None:
        return available
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 1024**3


def _scaled(s: str, units: str, base: int) -> float:
    """``s`` (upper case) as a number with an optional unit suffix, one of ``units``, each
    ``base`` times the one before; ValueError when it is not a number."""
    unit = s[-1] if s and s[-1] in units else ""
    value = float(s[:-1] if unit else s)
    return value * (base ** (units.index(unit) + 1) if unit else 1)


def parse_bytes(text: str | int | float) -> int:
    """Bytes from ``"4G"``, ``"512M"``, ``"2.5GiB"``, ``"1e9"`` or a number (binary units).

    >>> parse_bytes("4G"), parse_bytes("512MiB"), parse_bytes(1000)
    (4294967296, 536870912, 1000)
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        s = str(text).strip().upper().removesuffix("IB").removesuffix("B")
        try:
            value = _scaled(s, "KMGT", 1024)
        except ValueError:
            raise ValueError(f"expected a size such as 4G, 512M or a number of bytes, got "
                             f"{text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"expected a positive size, got {text!r}")
    return int(value)


def parse_count(text: str) -> float:
    """A count such as ``"800M"``, ``"1.5G"``, ``"2e9"`` (decimal units: K, M, G), unchecked
    (NaN when it is not a number; the caller checks the range it needs).

    >>> parse_count("800M"), parse_count("1.5k"), parse_count("2e9")
    (800000000.0, 1500.0, 2000000000.0)
    """
    try:
        return _scaled(str(text).strip().upper(), "KMG", 1000)
    except ValueError:
        return float("nan")


def format_bytes(n: float) -> str:
    """Human-readable size (binary units)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def memory_budget(budget: int | None = None) -> int:
    """Bytes an operation may allocate: ``budget`` if given, else the ``VJBOOST_MEMORY_BUDGET``
    environment variable (bytes), else 75% of the memory available now.

    Raises
    ------
    MemoryBudgetError
        When ``VJBOOST_MEMORY_BUDGET`` is not a positive number (the message names it).

    Examples
    --------
    >>> memory_budget(2**30)
    1073741824
    """
    if budget is not None:
        return int(budget)
    env = os.environ.get("VJBOOST_MEMORY_BUDGET", "").strip()
    if env:
        try:
            value = int(float(env))
        except (ValueError, OverflowError):
            value = 0
        if value <= 0:
            raise MemoryBudgetError(f"VJBOOST_MEMORY_BUDGET: expected a positive number of "
                                    f"bytes, got {env!r}")
        return value
    return int(0.75 * available_memory())


def check_memory(nbytes: int, what: str, *, budget: int | None = None, advice: str = "") -> None:
    """Refuse an allocation of ``nbytes`` over the budget.

    Parameters
    ----------
    nbytes : int
        Estimated size of the allocation in bytes.
    what : str
        What is being allocated, e.g. ``"precomputed feature matrix (50000 x 20000 uint8)"``.
    budget : int, optional
        Bytes allowed. Default: 75% of currently available memory, or the ``VJBOOST_MEMORY_BUDGET``
        environment variable (bytes) when set.
    advice : str
        What the user can change (fewer features, sampling, a lower ``num_neg``...).

    Raises
    ------
    MemoryBudgetError
        If ``nbytes > budget``.
    """
    budget = memory_budget(budget)
    if nbytes > budget:
        msg = (
            f"{what} needs {format_bytes(nbytes)}, over the memory budget of "
            f"{format_bytes(budget)}."
        )
        if advice:
            msg += f" {advice}"
        raise MemoryBudgetError(msg, what=what, needed=nbytes, budget=budget)
