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

:func:`precompute` is the one path from a feature pool to a binned matrix: it evaluates the pool
block by block (bounded float32 scratch), places edges on a seeded subset of the windows if
asked, keeps categorical codes as their own bins (:func:`categorical_edges`) and returns a
:class:`~vjboost.boost.source.MatrixSource` that the searches use in place. Each block is a pure
function of its features and the windows (:func:`binned_block`), so the blocks may run as tasks
on an executor (threads or Dask workers) with the same result.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np
from numba import njit, prange

from vjboost._memory import check_memory, format_bytes
from vjboost._threads import n_threads
from vjboost._validation import check_array, check_in_range, check_random_state
from vjboost.boost.source import MatrixSource, Partition

__all__ = [
    "bin_values",
    "carry_columns",
    "categorical_edges",
    "compute_bin_edges",
    "edge_sample",
    "n_bins_per_feature",
    "precompute",
    "precompute_nbytes",
]

#: edges mapping integer codes 0..255 onto bins 0..255
_CODE_EDGES = (np.arange(255, dtype=np.float32) + np.float32(0.5)).astype(np.float32)


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

    Examples
    --------
    >>> values = np.array([[0, 1, 2, 3, 4, 5]], dtype=np.float32)
    >>> edges = compute_bin_edges(values, 4)
    >>> edges.tolist()
    [[1.0, 3.0, 4.0]]
    >>> bin_values(values, edges).tolist()                  # edges <= value
    [[0, 1, 1, 2, 3, 3]]
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

    Examples
    --------
    >>> values = np.array([[0.0, 1.5, 2.0, 3.0, 7.0], [9.0, 0.0, 0.0, 1.0, 9.0]], dtype=np.float32)
    >>> edges = np.array([[1.5, 3.0], [1.0, np.inf]], dtype=np.float32)   # +inf: padding
    >>> bin_values(values, edges).tolist()   # a value equal to an edge goes above it
    [[0, 1, 1, 2, 2], [1, 0, 0, 1, 1]]
    """
    values = check_array(values, "values", ndim=2, dtype=np.float32)
    edges = _check_edges(edges, values.shape[0])
    check_memory(values.size, f"binned matrix ({values.shape[0]} x {values.shape[1]} uint8)")
    return _bin(values, edges, threads)


def _bin(values: np.ndarray, edges: np.ndarray, threads: int | None) -> np.ndarray:
    """:func:`bin_values` without its checks (``values`` float32, ``edges`` increasing)."""
    out = np.empty(values.shape, dtype=np.uint8)
    padded = np.full((edges.shape[0], 256), np.inf, dtype=np.float32)
    padded[:, : edges.shape[1]] = edges
    with n_threads(threads):
        _bin_kernel(np.ascontiguousarray(values), padded, out)
    return out


def n_bins_per_feature(edges: np.ndarray) -> np.ndarray:
    """Number of bins of each feature, ``(Q,)`` int64 (finite edges + 1)."""
    return np.isfinite(edges).sum(axis=1).astype(np.int64) + 1



def categorical_edges(n_rows: int, n_edges: int = 255) -> np.ndarray:
    """Edges (n_rows, n_edges) under which code ``c`` falls in bin ``c`` (padded with +inf).

    Parameters
    ----------
    n_rows : int
        Features (rows of the edge table).
    n_edges : int, default 255
        Columns; codes ``0 .. min(n_edges, 255) - 1`` get their own bin, larger codes share
        the last one.

    Returns
    -------
    ndarray of float32, shape (n_rows, n_edges)

    Examples
    --------
    >>> e = categorical_edges(1, 4)
    >>> bin_values(np.array([[0.0, 3.0, 200.0]], dtype=np.float32), e).tolist()
    [[0, 3, 4]]
    """
    out = np.full((n_rows, n_edges), np.inf, dtype=np.float32)
    m = min(n_edges, 255)
    out[:, :m] = _CODE_EDGES[:m]
    return out


def edge_sample(n: int, size: int | None, seed: Any = 0) -> np.ndarray | None:
    """The windows :func:`precompute` places bin edges on: ``size`` of ``n``, drawn with
    ``seed`` and sorted, or ``None`` (all of them) when ``size`` is ``None`` or ``>= n``.

    Examples
    --------
    >>> edge_sample(10, 3, seed=0).shape, edge_sample(10, 20) is None
    ((3,), True)
    """
    if size is None or int(size) >= n:
        return None
    if int(size) < 2:
        raise ValueError(f"edge_sample_size: expected >= 2, got {size}")
    return np.sort(check_random_state(seed).choice(n, int(size), replace=False))


@njit(cache=True, nogil=True, parallel=True)
def _carry_kernel(old: np.ndarray, src: np.ndarray, fresh: np.ndarray, fresh_at: np.ndarray,
                  out: np.ndarray) -> None:
    # each row is assembled in its own scratch first, so that ``out`` may be ``old`` itself
    n = out.shape[1]
    for q in prange(out.shape[0]):
        row = np.empty(n, dtype=out.dtype)
        for j in range(n):
            s = src[j]
            if s >= 0:
                row[j] = old[q, s]
        for k in range(fresh_at.shape[0]):
            row[fresh_at[k]] = fresh[q, k]
        out[q, :] = row


def carry_columns(old: np.ndarray, src: np.ndarray, fresh: np.ndarray, *,
                  out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
    """A feature-major matrix whose columns are kept from ``old`` or taken from ``fresh``.

    Column ``j`` of the result is ``old[:, src[j]]`` when ``src[j] >= 0``; the columns with
    ``src[j] < 0`` are ``fresh``'s, in order.

    Parameters
    ----------
    old : ndarray of shape (Q, M)
    src : int array of shape (N,)
        Column of ``old`` for each result column, or -1.
    fresh : ndarray of shape (Q, K), same dtype as ``old``
        ``K`` = number of negative ``src`` entries.
    out : ndarray of shape (Q, N), optional
        Where to write; may be ``old`` itself (updated in place, no second matrix).
    threads : int, optional

    Returns
    -------
    ndarray of shape (Q, N)

    Examples
    --------
    >>> old = np.array([[1, 2, 3]], dtype=np.uint8)
    >>> carry_columns(old, np.array([2, -1, 0]), np.array([[9]], dtype=np.uint8)).tolist()
    [[3, 9, 1]]
    """
    src = np.asarray(src, dtype=np.int64)
    fresh_at = np.flatnonzero(src < 0)
    if fresh.shape != (old.shape[0], fresh_at.size) or fresh.dtype != old.dtype:
        raise ValueError(f"fresh: expected {old.dtype} of shape ({old.shape[0]}, "
                         f"{fresh_at.size}), got {fresh.dtype} {fresh.shape}")
    if src.size and src.max() >= old.shape[1]:
        raise ValueError(f"src: columns must be < {old.shape[1]}")
    if out is None:
        out = np.empty((old.shape[0], src.size), dtype=old.dtype)
    elif out.shape != (old.shape[0], src.size) or out.dtype != old.dtype:
        raise ValueError(f"out: expected {old.dtype} of shape ({old.shape[0]}, {src.size})")
    with n_threads(threads):
        _carry_kernel(old, src, np.ascontiguousarray(fresh), fresh_at, out)
    return out


def precompute_nbytes(pool: Any, n_samples: int, n_features: int | None = None,
                      dtype: str = "float32", block_features: int = 4096) -> int:
    """Peak bytes of :func:`precompute` (matrix + channels + one float32 block if binned).

    Parameters
    ----------
    pool : FeaturePool or FeatureFamily
        Its ``n_features`` and ``channels_nbytes`` are read.
    n_samples : int
        Windows.
    n_features : int, optional
        Features precomputed (default all of the pool's).
    dtype : {"float32", "uint8"}, default "float32"
        The matrix's dtype (uint8: bins, plus the edge table and a float32 block).
    block_features : int, default 4096
        Features per block of the uint8 path.

    Returns
    -------
    int
    """
    q = pool.n_features if n_features is None else int(n_features)
    item = 1 if dtype == "uint8" else 4
    total = q * n_samples * item + pool.channels_nbytes(n_samples)
    if dtype == "uint8":
        total += min(q, block_features) * n_samples * 4 + q * 255 * 4
    return int(total)


def precompute(
    pool: Any,
    windows: Any,
    dtype: str = "uint8",
    *,
    feature_ids: Any = None,
    n_bins: int = 256,
    edges: np.ndarray | None = None,
    edge_sample_size: int | None = None,
    seed: Any = 0,
    block_features: int = 4096,
    budget: int | None = None,
    threads: int | None = None,
    executor: Any = None,
) -> MatrixSource:
    """The feature-major matrix of a pool's ``feature_ids`` (default all) on all windows.

    Parameters
    ----------
    pool : FeaturePool
    windows : raw windows (S, H, W) or the pool's prepared channels
    dtype : {"uint8", "float32"}
        Per-feature quantile bins (:func:`compute_bin_edges`; categorical codes are stored as
        themselves) or raw values.
    feature_ids : int array, optional
        Global ids (default all); row ``k`` of the result is ``feature_ids[k]``.
    n_bins : int, default=256
        Bins per ordered feature (2..256) for ``"uint8"``.
    edges : float32 (Q, E), optional
        Reuse edges (e.g. from the training set when binning a validation set).
    edge_sample_size : int, optional
        Place edges on a random subset of this many windows (faster on large sets).
    seed : int or Generator, default=0
        For that subset.
    block_features : int, default=4096
        Features evaluated per block in the uint8 path (bounds the float32 scratch).
    budget : int, optional
        Memory budget in bytes (default: see :func:`vjboost._memory.check_memory`).
    threads : int, optional
    executor : vjboost._parallel.Executor, optional
        Evaluate and bin the blocks of ``block_features`` features as tasks on this executor
        (uint8 path with raw windows): the pool and the windows are sent once, each block's
        uint8 rows come back. Same matrix as without it.

    Returns
    -------
    MatrixSource
        ``matrix`` (Q, S), ``edges`` (uint8 only), ``categorical`` and ``feature_ids``; the
        pool's family partition restricted to ``feature_ids``.

    Examples
    --------
    >>> from vjboost.features import FeaturePool, PixelFamily
    >>> pool = FeaturePool([PixelFamily((2, 2))])
    >>> windows = np.arange(24, dtype=np.uint8).reshape(6, 2, 2)   # 6 windows of 2 x 2 pixels
    >>> precompute(pool, windows, "float32", feature_ids=[0, 3]).matrix.tolist()
    [[0.0, 4.0, 8.0, 12.0, 16.0, 20.0], [3.0, 7.0, 11.0, 15.0, 19.0, 23.0]]
    >>> src = precompute(pool, windows, feature_ids=[0, 3], n_bins=4)
    >>> src.matrix.dtype, src.matrix.tolist(), src.feature_ids.tolist()
    (dtype('uint8'), [[0, 1, 1, 2, 3, 3], [0, 1, 1, 2, 3, 3]], [0, 3])
    >>> src.edges[:, :3].tolist()   # quantile edges on the raw values
    [[4.0, 12.0, 16.0], [7.0, 15.0, 19.0]]
    """
    if dtype not in ("float32", "uint8"):
        raise ValueError(f"dtype: expected 'float32' or 'uint8', got {dtype!r}")
    if feature_ids is None:
        gids = np.arange(pool.n_features, dtype=np.int64)
    else:
        gids = check_array(feature_ids, "feature_ids", ndim=1).astype(np.int64)
        if gids.min() < 0 or gids.max() >= pool.n_features:
            raise ValueError(f"feature_ids: ids must be in [0, {pool.n_features})")
    prepared = hasattr(windows, "n_samples")
    n = int(windows.n_samples) if prepared else int(np.asarray(windows).shape[0])
    q = gids.shape[0]
    need = precompute_nbytes(pool, n, q, dtype, block_features)
    if prepared:
        need -= pool.channels_nbytes(n)
    advice = (f"Use dtype='uint8' ({format_bytes(q * n)} for the matrix), " if dtype == "float32"
              else "") + ("fewer windows, fewer features (feature_ids, or a pool of smaller "
                          "families), or lazy evaluation with a feature sampler.")
    check_memory(need, f"precomputed feature matrix ({q} features x {n} windows {dtype})",
                 budget=budget, advice=advice)
    prep = windows if prepared else pool.prepare(windows, threads=threads)
    kinds = np.asarray(pool.kinds(), dtype=bool)[gids]
    family_of = np.searchsorted(np.cumsum(pool.family_sizes()), gids, side="right")
    used, family_of = np.unique(family_of, return_inverse=True)
    names = [pool.families[int(k)].name for k in used]
    meta = dict(categorical=kinds, families=Partition(family_of.astype(np.int64), names),
                feature_ids=gids)
    if dtype == "float32":
        return MatrixSource(pool.evaluate(prep, gids, threads=threads), **meta)
    if edges is not None:
        edges = np.ascontiguousarray(edges, dtype=np.float32)
        if edges.ndim != 2 or edges.shape[0] != q or edges.shape[1] > 255:
            raise ValueError(f"edges: expected shape ({q}, E<=255), got {edges.shape}")
        with np.errstate(invalid="ignore"):  # inf - inf in the +inf padding checks
            out_edges = _check_edges(edges, q)  # once: the blocks bin unchecked
    else:
        n_bins = check_in_range(n_bins, "n_bins", low=2, high=256, integer=True)
        # categorical rows need all 255 code edges whatever n_bins is
        width = 255 if kinds.any() else int(n_bins) - 1
        out_edges = np.full((q, width), np.inf, dtype=np.float32)
    sub = None if edges is not None else edge_sample(n, edge_sample_size, seed)
    values = np.empty((q, n), dtype=np.uint8)
    block = max(1, int(block_features))
    units = [(gids[a:a + block], kinds[a:a + block], out_edges[a:a + block],
              edges is None) for a in range(0, q, block)]
    if executor is None or prepared:
        results: Any = (binned_block(u, pool, prep, int(n_bins), sub, threads) for u in units)
    else:
        results = executor.imap(_binned_block_task, units, executor.share(pool),
                                executor.share(np.ascontiguousarray(windows)), int(n_bins),
                                sub)
    for a, (vals, e) in zip(range(0, q, block), results, strict=True):
        values[a:a + len(vals)] = vals
        out_edges[a:a + len(vals)] = e
    return MatrixSource(values, edges=out_edges, **meta)


def binned_block(unit: tuple[np.ndarray, np.ndarray, np.ndarray, bool], pool: Any,
                 prep: Any, n_bins: int, sub: np.ndarray | None, threads: int | None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """One block of :func:`precompute`'s uint8 path: evaluate features, place edges, bin.

    Parameters
    ----------
    unit : (feature_ids, categorical, edges, place_edges)
        Global ids (B,), their categorical flags (B,), float32 edges (B, E) (used as they are
        unless ``place_edges``).
    pool, prep
        The pool and its prepared windows.
    n_bins : int
    sub : int array, optional
        Windows the edges are placed on (default all).
    threads : int, optional

    Returns
    -------
    values : ndarray of uint8, shape (B, S)
    edges : ndarray of float32, shape (B, E)
    """
    ids, cat, edges, place = unit
    raw = pool.evaluate(prep, ids, threads=threads)
    edges = np.array(edges, dtype=np.float32)
    if place:
        ordered = np.flatnonzero(~cat)
        if ordered.size:
            # the block itself when every row is ordered (no copy of the whole block)
            src = raw if ordered.size == cat.size else raw[ordered]
            if sub is not None:
                src = src[:, sub]
            e = compute_bin_edges(np.ascontiguousarray(src), int(n_bins), threads=threads)
            edges[ordered, : e.shape[1]] = e
        cat_rows = np.flatnonzero(cat)
        if cat_rows.size:
            edges[cat_rows] = categorical_edges(cat_rows.size, edges.shape[1])
    # the values come from the pool's kernels and the edges from above: binned unchecked
    return _bin(raw, edges, threads), edges


_PREPARED: dict[str, Any] = {}
_PREPARED_LOCK = threading.Lock()


def _binned_block_task(unit, pool, windows: np.ndarray, n_bins: int, sub):
    """:func:`binned_block` on a worker: the windows are prepared once per worker process."""
    key = f"{hashlib.sha1(windows.data).hexdigest()} {id(pool)} {pool!r}"
    with _PREPARED_LOCK:
        prep = _PREPARED.get(key)
        if prep is None:
            _PREPARED.clear()  # one stage's windows at a time
            prep = _PREPARED[key] = pool.prepare(windows, threads=1)
    return binned_block(unit, pool, prep, n_bins, sub, 1)

