"""The memory a cascade stage needs whatever the search: refused before training starts.

Every search over a feature pool (precomputed, streamed or sampled) compiles the pool's feature
program and computes the integral channels of the stage's windows; streaming only bounds the
feature-value block on top of them. :func:`check_training_memory` estimates that floor and
refuses a pool or a number of windows that cannot fit the memory budget, so that training ends
in one clear line instead of a raw ``MemoryError`` (or swapping) in the middle of stage 0.
"""

from __future__ import annotations

from typing import Any

from .._memory import check_memory, format_bytes, memory_budget

__all__ = ["PROGRAM_BYTES_PER_FEATURE", "check_training_memory"]

#: peak bytes per feature of compiling a pool's feature program and holding it with the pool's
#: tables (measured: 8.1 million Haar features of a 64x64 window peak at 8.5 GB)
PROGRAM_BYTES_PER_FEATURE = 1024


def check_training_memory(pool: Any, n_windows: int, *, budget: int | None = None) -> int:
    """Refuse a stage whose pool and windows cannot fit the memory budget; return the bytes
    left for feature values.

    Parameters
    ----------
    pool : FeaturePool or FeatureFamily
        ``n_features`` and ``channels_nbytes(n)`` are used.
    n_windows : int
        Windows of a stage (positives + negatives).
    budget : int, optional
        Bytes (default: :func:`vjboost._memory.memory_budget`).

    Returns
    -------
    int
        The budget less the program, the channels and one feature's values of every window.

    Raises
    ------
    MemoryBudgetError
        One line: what is needed, the budget, what to change.

    Examples
    --------
    >>> from vjboost.features.haar import HaarFamily
    >>> check_training_memory(HaarFamily((24, 24)), 1000, budget=2**30) > 0
    True
    """
    budget = memory_budget(budget)
    n = int(n_windows)
    program = int(pool.n_features) * PROGRAM_BYTES_PER_FEATURE
    # vjtrain's option first (the environment variable is the library's default); the
    # program's size is that of the pool alone: fewer windows would not make it fit
    fewer = "Use a smaller window or fewer features (--features, --haar-mode)"
    more = "or raise --memory (VJBOOST_MEMORY_BUDGET)."
    # the program first: measuring the channels compiles it
    check_memory(program + 8 * n, f"training over {pool.n_features} features (their feature "
                 "program)", budget=budget, advice=f"{fewer}, {more}")
    advice = f"{fewer}, lower --num-pos/--num-neg, {more}"
    fixed = program + int(pool.channels_nbytes(n))
    check_memory(fixed + 8 * n,
                 f"training over {pool.n_features} features and {n} windows (feature program "
                 f"{format_bytes(program)}, integral channels and one feature of every window)",
                 budget=budget, advice=advice)
    return budget - fixed
