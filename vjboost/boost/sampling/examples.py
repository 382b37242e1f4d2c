"""Example sampling: weighting-by-sampling and uniform subsets.

Weighting-by-sampling draws ``S`` examples i.i.d. from the boosting weights; a weak learner's
edge is then estimated by the plain mean of ``y h`` over the draws, an unbiased estimate of the
weighted edge whose variance is ``(1 - gamma^2) / S <= 1 / S``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from vjboost._validation import check_array, check_sample_weight

__all__ = ["distinct_draws", "uniform_subset", "weighted_draws", "weighted_sample"]


@njit(cache=True, nogil=True)
def _draw_sorted(cdf: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
    # u is sorted: one merge pass over the CDF instead of S binary searches.
    j = 0
    n = cdf.shape[0]
    for i in range(u.shape[0]):
        while j < n - 1 and cdf[j] <= u[i]:
            j += 1
        out[i] = j


def _check_count(n: Any, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer number of examples, got {n!r}")
    if n <= 0:
        raise ValueError(f"{name}: must be positive, got {n}")
    return int(n)


def weighted_sample(weights: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` example ids i.i.d. (with replacement) with probabilities ``weights / sum``.

    Parameters
    ----------
    weights : array-like of shape (N,)
        Non-negative weights with a positive sum.
    n : int
        Number of draws ``S`` (may exceed ``N``).
    rng : numpy.random.Generator

    Returns
    -------
    ids : ndarray of shape (n,), int64
        Sorted ids (sorting makes the later gathers cache-friendly).

    Examples
    --------
    >>> weighted_sample([0.0, 1.0, 3.0], 8, np.random.default_rng(0)).tolist()  # never id 0
    [1, 1, 2, 2, 2, 2, 2, 2]
    """
    return weighted_draws(weights, n, rng)[0]


def weighted_draws(weights: Any, n: int, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`weighted_sample` with its :func:`distinct_draws` (the same random numbers).

    Parameters
    ----------
    weights : array-like of shape (N,)
        Non-negative weights with a positive sum.
    n : int
        Number of draws ``S``.
    rng : numpy.random.Generator

    Returns
    -------
    ids : ndarray of shape (n,), int64
        The sorted draws, as :func:`weighted_sample` returns them.
    distinct, counts
        ``distinct_draws(ids)``; with ``n > N`` they come from the multinomial counts in
        O(N), without a pass over the ``n`` draws.

    Examples
    --------
    >>> ids, distinct, counts = weighted_draws([0.0, 1.0, 3.0], 6, np.random.default_rng(0))
    >>> int(counts.sum()), distinct.tolist() == sorted(set(ids.tolist()))
    (6, True)
    """
    n = _check_count(n)
    w = check_array(weights, "weights", ndim=1, dtype=np.float64)
    w = check_sample_weight(w, w.size, "weights", normalize=False)
    if n > w.size:
        # many draws per example: the multinomial counts are the same law as sorted i.i.d.
        # draws, in O(N) random numbers instead of sorting S of them
        p = w / w.sum()
        counts = rng.multinomial(n, p)
        ids = np.repeat(np.arange(w.size, dtype=np.int64), counts)
        distinct = np.flatnonzero(counts)
        if distinct.size == n:
            return ids, ids, None
        return ids, distinct, counts[distinct].astype(np.float64)
    cdf = np.cumsum(w)
    u = np.sort(rng.random(n)) * cdf[-1]
    out = np.empty(n, dtype=np.int64)
    _draw_sorted(cdf, u, out)
    return (out, *distinct_draws(out))


def uniform_subset(
    n_samples: int, n: int, rng: np.random.Generator, *, replace: bool = False
) -> np.ndarray:
    """``n`` example ids chosen uniformly among ``n_samples`` (sorted).

    Without replacement ``n`` must not exceed ``n_samples``.

    Parameters
    ----------
    n_samples : int
        Examples to choose from (ids ``0 .. n_samples - 1``), >= 1.
    n : int
        Ids drawn, >= 1.
    rng : numpy.random.Generator
        The source of randomness.
    replace : bool, default False
        Draw with replacement (ids may repeat).

    Returns
    -------
    ndarray of shape (n,), int64, sorted

    Examples
    --------
    >>> import numpy as np
    >>> uniform_subset(10, 4, np.random.default_rng(0)).size
    4
    """
    n = _check_count(n)
    n_samples = _check_count(n_samples, "n_samples")
    if not replace and n > n_samples:
        raise ValueError(
            f"n: cannot draw {n} examples without replacement from {n_samples}; "
            "use replace=True or a smaller n"
        )
    if replace:
        ids = rng.integers(0, n_samples, size=n)
    else:
        ids = rng.choice(n_samples, size=n, replace=False)
    return np.sort(ids).astype(np.int64)


def distinct_draws(sample_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The distinct ids of a draw and how often each was drawn.

    Parameters
    ----------
    sample_ids : ndarray of shape (S,), int64
        Example ids, repeats allowed (sorted draws are run-length encoded in one pass).

    Returns
    -------
    ids : ndarray of shape (U,), int64
        The distinct ids, ascending (``sample_ids`` itself when no id repeats).
    counts : ndarray of shape (U,), float64, or None
        Multiplicities; ``None`` when every id occurs once.

    Examples
    --------
    >>> ids, counts = distinct_draws(np.array([2, 2, 5, 7, 7, 7]))
    >>> ids.tolist(), counts.tolist()
    ([2, 5, 7], [2.0, 1.0, 3.0])
    """
    s = np.asarray(sample_ids, dtype=np.int64)
    if s.size < 2:
        return s, None
    step = np.diff(s)
    if (step > 0).all():
        return s, None
    if (step >= 0).all():
        starts = np.flatnonzero(np.concatenate(([True], step != 0)))
        counts = np.diff(np.append(starts, s.size)).astype(np.float64)
        return s[starts], counts
    ids, counts = np.unique(s, return_counts=True)
    return ids, counts.astype(np.float64)
