"""A stage's feature matrix as uint8 bins, computed block by block from a feature pool.

Edges come from a seeded subset of the windows; binning is :func:`vjboost.boost.binning.bin_values`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["precompute_binned"]


def precompute_binned(
    pool, windows: np.ndarray, *, n_bins: int = 256, edge_sample_size: int = 1024,
    seed: int = 0, block_features: int = 4096, threads: int | None = None,
):
    """The uint8 feature-major matrix of every feature of ``pool`` on ``windows``.

    Edges are quantiles of a seeded random subset of ``edge_sample_size`` windows
    (:func:`vjboost.boost.binning.compute_bin_edges`); categorical features keep their codes.

    Returns
    -------
    values : ndarray (n_features, N) uint8
    edges : ndarray (n_features, E) float32
    categorical : ndarray (n_features,) bool
    """
    from vjboost.boost.binning import bin_values, compute_bin_edges
    from vjboost.features.pool import categorical_edges

    n = windows.shape[0]
    prep = pool.prepare(windows, threads=threads)
    kinds = np.asarray(pool.kinds(), dtype=bool)
    q = pool.n_features
    width = 255 if kinds.any() else int(n_bins) - 1
    edges = np.full((q, width), np.inf, dtype=np.float32)
    values = np.empty((q, n), dtype=np.uint8)
    sub = None
    if edge_sample_size < n:
        rng = np.random.default_rng(seed)
        sub = np.sort(rng.choice(n, int(edge_sample_size), replace=False))
    for a in range(0, q, block_features):
        b = min(a + block_features, q)
        gids = np.arange(a, b, dtype=np.int64)
        raw = pool.evaluate(prep, gids, threads=threads)
        cat = kinds[a:b]
        ordered = np.flatnonzero(~cat)
        if ordered.size:
            src = raw[ordered] if sub is None else raw[ordered][:, sub]
            e = compute_bin_edges(np.ascontiguousarray(src), int(n_bins), threads=threads)
            edges[a + ordered, : e.shape[1]] = e
        cat_rows = np.flatnonzero(cat)
        if cat_rows.size:
            edges[a + cat_rows] = categorical_edges(cat_rows.size, width)
        values[a:b] = bin_values(raw, edges[a:b], threads=threads)
    return values, edges, kinds
