"""Binning: the one pool-to-matrix path (``precompute``), categorical codes kept as bins."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost._memory import MemoryBudgetError
from vjboost.boost.binning import (
    bin_values,
    categorical_edges,
    compute_bin_edges,
    precompute,
    precompute_nbytes,
)
from vjboost.features import FeaturePool, HaarFamily, MBLBPFamily


@pytest.fixture(name="pool")
def _pool():
    families = [HaarFamily((10, 10), mode="BASIC"), MBLBPFamily((10, 10)),
                HaarFamily((10, 10), mode="ALL", types=["tx2"], normalize=False)]
    return FeaturePool(families)


@pytest.fixture(name="windows")
def _windows():
    return np.random.default_rng(5).integers(0, 256, (40, 10, 10), dtype=np.uint8)


def test_categorical_edges_map_codes_to_themselves():
    codes = np.arange(256, dtype=np.float32)[None, :]
    np.testing.assert_array_equal(bin_values(codes, categorical_edges(1)), codes)
    e = compute_bin_edges(np.array([[0.0, 0.0, 1.0, 2.0]], dtype=np.float32))
    assert np.isfinite(e).sum() == 2


def test_precompute_float32_and_uint8(pool, windows):
    raw = precompute(pool, windows, "float32")
    assert raw.matrix.shape == (pool.n_features, 40) and raw.matrix.dtype == np.float32
    assert raw.edges is None and not raw.binned and raw.matrix.flags.c_contiguous
    np.testing.assert_array_equal(raw.matrix, pool.evaluate(windows))
    # the pool's families are the partition, its kinds the categorical mask
    assert raw.partition.names == ["haar", "mblbp", "haar"]
    np.testing.assert_array_equal(raw.categorical, pool.kinds())
    binned = precompute(pool, windows, "uint8", n_bins=16, block_features=500)
    assert binned.binned and binned.matrix.shape == raw.matrix.shape
    e = binned.edges
    # bin = number of edges <= value, for every feature
    expect = (e[:, None, :] <= raw.matrix[:, :, None]).sum(axis=2)
    np.testing.assert_array_equal(binned.matrix, expect)
    cat = pool.kinds()
    assert cat.sum() == pool.families[1].n_features
    np.testing.assert_array_equal(binned.matrix[cat], raw.matrix[cat])  # codes kept as codes
    assert (binned.matrix[~cat] < 16).all()
    # reuse of edges on another set
    again = precompute(pool, windows[:10], "uint8", edges=e)
    np.testing.assert_array_equal(again.matrix, binned.matrix[:, :10])
    # a subset of features, edges from a subsample
    sub = precompute(pool, windows, "uint8", feature_ids=[3, 1], edge_sample_size=20, seed=1)
    assert sub.matrix.shape == (2, 40) and list(sub.feature_ids) == [3, 1]
    np.testing.assert_array_equal(sub.matrix, bin_values(raw.matrix[[3, 1]], sub.edges))
    assert sub.partition.n_families == 1


def test_precompute_refuses_over_budget(pool, windows):
    with pytest.raises(ValueError, match="dtype"):
        precompute(pool, windows, "float16")
    with pytest.raises(MemoryBudgetError, match=r"needs .*(KiB|MiB).*over the memory budget.*"
                       r"dtype='uint8'"):
        precompute(pool, windows, "float32", budget=1000)
    with pytest.raises(MemoryBudgetError, match="fewer windows"):
        precompute(pool, windows, "uint8", budget=1000)
    need = precompute_nbytes(pool, 40)
    assert need >= pool.n_features * 40 * 4
