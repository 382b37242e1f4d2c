"""Per-feature quantization of feature-major matrices to at most 256 bins.

A feature's bins are defined by a strictly increasing list of *edges*; the bin of a value ``v`` is
the number of edges ``e`` with ``e <= v``. Consequently a binned split "bin < b" is exactly the real
split ``v < edges[b - 1]`` on raw values, which is the OpenCV convention (go left iff
``value < threshold``): a model trained on bins runs unchanged on raw float32 values.

Edges are stored for all features at once in a float32 array of shape ``(Q, n_bins - 1)`` padded
with ``+inf`` (``+inf`` is never ``<=`` a finite value, so padding never changes a bin).

Edges are chosen as follows, per feature:

* at most ``n_bins`` distinct values: one edge between each pair of consecutive distinct values
  (their float32 midpoint, or the upper value when the midpoint rounds down onto the lower one), so
  every distinct value has its own bin;
* otherwise: quantiles of the sorted values; each edge is a value that occurs in the data, so equal
  values always share a bin (ties are never split);
* a constant feature has no edge (a single bin).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from vjboost._memory import check_memory
from vjboost._threads import n_threads
from vjboost._validation import check_array, check_in_range

__all__ = ["bin_values", "compute_bin_edges", "n_bins_per_feature"]


@njit(cache=True, nogil=True)
def _edges_one(x: np.ndarray, n_bins: int, out: np.ndarray) -> None:
    s = np.sort(x)
    n = s.shape[0]
    n_distinct = 1
    for i in range(1, n):
        if s[i] != s[i - 1]:
            n_distinct += 1
    k = 0
    if n_distinct <= n_bins:
        for i in range(1, n):
            if s[i] != s[i - 1]:
                lo = s[i - 1]
                hi = s[i]
                mid = np.float32(0.5 * (np.float64(lo) + np.float64(hi)))
                if not (mid > lo and mid <= hi):
                    mid = hi
                out[k] = mid
                k += 1
        return
    # Quantile cut points snapped to data values; duplicates and the minimum are skipped so that
    # every edge opens a non-empty bin and no edge sits inside a run of equal values.
    last = s[0]
    for j in range(1, n_bins):
        pos = (j * n) // n_bins
        v = s[pos]
        if v > last:
            out[k] = v
            k += 1
            last = v


@njit(cache=True, nogil=True, parallel=True)
def _edges_kernel(values: np.ndarray, n_bins: int, out: np.ndarray) -> None:
    for q in prange(values.shape[0]):
        _edges_one(values[q], n_bins, out[q])


@njit(cache=True, nogil=True, parallel=True)
def _bin_kernel(values: np.ndarray, edges: np.ndarray, out: np.ndarray) -> None:
    # edges padded with +inf to 256 columns: a fixed 8-step branchless binary search counts the
    # edges <= v (several times faster than a branching search on tens of millions of values)
    for q in prange(values.shape[0]):
        e = edges[q]
        for i in range(values.shape[1]):
            v = values[q, i]
            lo = 0
            lo += 128 * (e[lo + 127] <= v)
            lo += 64 * (e[lo + 63] <= v)
            lo += 32 * (e[lo + 31] <= v)
            lo += 16 * (e[lo + 15] <= v)
            lo += 8 * (e[lo + 7] <= v)
            lo += 4 * (e[lo + 3] <= v)
            lo += 2 * (e[lo + 1] <= v)
            lo += 1 * (e[lo] <= v)
            out[q, i] = lo


def compute_bin_edges(
    values: np.ndarray, n_bins: int = 256, *, threads: int | None = None
) -> np.ndarray:
    """Quantile bin edges for each feature (row) of a feature-major matrix.

    Parameters
    ----------
    values : ndarray of shape (Q, N), float32
        Raw feature values, one row per feature. Must be finite.
    n_bins : int, default=256
        Maximum number of bins per feature, 2 to 256.
    threads : int, optional
        Number of threads (``None``: all).

    Returns
    -------
    edges : ndarray of shape (Q, n_bins - 1), float32
        Strictly increasing edges per row, padded with ``+inf``.
    """
    values = check_array(values, "values", ndim=2, dtype=np.float32)
    n_bins = check_in_range(n_bins, "n_bins", low=2, high=256, integer=True)
    values = np.ascontiguousarray(values)
    out = np.full((values.shape[0], n_bins - 1), np.inf, dtype=np.float32)
    with n_threads(threads):
        _edges_kernel(values, int(n_bins), out)
    return out


def _check_edges(edges: np.ndarray, n_rows: int) -> np.ndarray:
    edges = check_array(edges, "edges", ndim=2, dtype=np.float32, finite=False)
    if edges.shape[0] != n_rows:
        raise ValueError(f"edges: has {edges.shape[0]} rows but values has {n_rows} features")
    if edges.shape[1] > 255:
        raise ValueError(f"edges: at most 255 edges per feature (256 bins), got {edges.shape[1]}")
    if np.isnan(edges).any():
        raise ValueError("edges: contains NaN")
    if edges.shape[1] > 1 and (edges[:, 1:] < edges[:, :-1]).any():
        raise ValueError("edges: each row must be increasing")
    return np.ascontiguousarray(edges)


def bin_values(
    values: np.ndarray, edges: np.ndarray, *, threads: int | None = None
) -> np.ndarray:
    """Map raw values to bins with existing edges.

    Parameters
    ----------
    values : ndarray of shape (Q, N), float32
        Raw values, one row per feature (finite).
    edges : ndarray of shape (Q, E), float32
        Edges from :func:`compute_bin_edges` for the same features (E <= 255).
    threads : int, optional
        Number of threads.

    Returns
    -------
    bins : ndarray of shape (Q, N), uint8
        ``bins[q, i]`` = number of edges of row ``q`` that are ``<= values[q, i]``.
    """
    values = check_array(values, "values", ndim=2, dtype=np.float32)
    edges = _check_edges(edges, values.shape[0])
    check_memory(values.size, f"binned matrix ({values.shape[0]} x {values.shape[1]} uint8)")
    out = np.empty(values.shape, dtype=np.uint8)
    padded = np.full((edges.shape[0], 256), np.inf, dtype=np.float32)
    padded[:, : edges.shape[1]] = edges
    with n_threads(threads):
        _bin_kernel(np.ascontiguousarray(values), padded, out)
    return out


def n_bins_per_feature(edges: np.ndarray) -> np.ndarray:
    """Number of bins of each feature, ``(Q,)`` int64 (finite edges + 1)."""
    return np.isfinite(edges).sum(axis=1).astype(np.int64) + 1

