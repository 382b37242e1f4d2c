"""Reservoir boosting in cascades: the in-place buffer, the pool featurizer, running stage scores,
and ``CascadeTrainer(reservoir=R)`` / ``vjtrain --reservoir R``."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.boost.learners import CategoricalStump, Stump
from vjboost.boost.reservoir import (
    PoolFeaturizer,
    ReservoirBooster,
    WindowScores,
    train_reservoir_stage,
)
from vjboost.boost.reservoir.learner import _gather_columns, _spread_rows
from vjboost.boost.streams import ArrayStream

# --------------------------------------------------------------------------------------------
# the in-place buffer kernels


@pytest.mark.parametrize(("d", "r", "q"), [(1, 1, 1), (3, 4, 2), (7, 5, 9), (20, 13, 13)])
def test_spread_then_gather_equal_numpy(d, r, q):
    rng = np.random.default_rng(d * 100 + r)
    res = rng.random((d, r)).astype(np.float32)
    fresh = rng.random((d, q)).astype(np.float32)
    flat = np.full(d * (r + q), np.nan, dtype=np.float32)
    flat[: d * r] = res.ravel()
    _spread_rows(flat, d, r, r + q)
    pool = flat.reshape(d, r + q)
    np.testing.assert_array_equal(pool[:, :r], res)
    pool[:, r:] = fresh
    ref = np.concatenate([res, fresh], axis=1)
    keep = np.sort(rng.choice(r + q, size=r, replace=False)).astype(np.int64)
    _gather_columns(flat, d, r + q, keep)
    np.testing.assert_array_equal(flat[: d * r].reshape(d, r), ref[:, keep])


def _blobs(n=2000, d=30, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    x = rng.normal(size=(n, d)) + 0.8 * y[:, None] * (np.arange(d) < 5)
    return x.astype(np.float32), y


class _CountingFeaturizer:
    """flatten_samples with an ``into`` method: fills the buffer directly."""

    def __init__(self, d):
        self.n_features = d
        self.calls = 0

    def __call__(self, samples):
        return np.ascontiguousarray(samples.T, dtype=np.float32)

    def into(self, samples, out):
        self.calls += 1
        out[...] = samples.T


@pytest.mark.parametrize("strategy", ["geem", "wsam", "max", "rand"])
def test_fit_with_an_into_featurizer_equals_plain(strategy):
    x, y = _blobs()
    kw = dict(strategy=strategy, cov_features=10, seed=4, threads=1)
    a = ReservoirBooster(15, 40, 30, **kw).fit(ArrayStream(x, y, seed=2))
    f = _CountingFeaturizer(x.shape[1])
    b = ReservoirBooster(15, 40, 30, featurizer=f, **kw).fit(ArrayStream(x, y, seed=2))
    assert f.calls == 16  # the fill and one batch per round, all written into the buffer
    assert [h.to_dict() for h in a.learners_] == [h.to_dict() for h in b.learners_]
    va, ya, fa = a.reservoir_
    vb, yb, fb = b.reservoir_
    assert va.shape == (x.shape[1], 40) and va.flags.c_contiguous
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(fa, fb)
    # the reservoir's values are the samples it says it holds: every column is a training row
    rows = {tuple(r) for r in x}
    assert all(tuple(c) in rows for c in va.T)


def test_float32_leaves_and_partial_fit_after_fit():
    x, y = _blobs(seed=1)
    b = ReservoirBooster(10, 30, 30, float32_leaves=True, seed=0).fit(ArrayStream(x, y, seed=0))
    for h in b.learners_:
        np.testing.assert_array_equal(h.leaf_values, h.leaf_values.astype(np.float32))
    b.partial_fit(x[:7], y[:7])  # any batch size after fit
    assert len(b.learners_) == 11 and b.reservoir_[0].shape == (x.shape[1], 30)
    with pytest.raises(TypeError, match="float32_leaves"):
        ReservoirBooster(float32_leaves="yes").fit(ArrayStream(x, y))
    with pytest.raises(ValueError, match="categorical"):
        ReservoirBooster(5, 10, 10, categorical=np.zeros(3, bool)).fit(ArrayStream(x, y))


# --------------------------------------------------------------------------------------------
# pool featurizer and window scores


@pytest.fixture(scope="module")
def windows():
    rng = np.random.default_rng(8)
    yy, _ = np.mgrid[0:10, 0:10]
    pos = np.clip(120 + 80 * (yy < 5) + rng.normal(0, 20, (300, 10, 10)), 0, 255).astype(np.uint8)
    neg = np.clip(120 + rng.normal(0, 40, (300, 10, 10)), 0, 255).astype(np.uint8)
    return pos, neg


def test_pool_featurizer_into_equals_evaluate(windows):
    from vjboost.features import FeaturePool, HaarFamily

    pool = FeaturePool([HaarFamily((10, 10))])
    ids = np.sort(np.random.default_rng(0).choice(pool.n_features, 700, replace=False))
    f = PoolFeaturizer(pool, ids, block=64)
    assert f.n_features == 700
    ref = pool.evaluate(windows[0][:50], ids)
    np.testing.assert_array_equal(f(windows[0][:50]), ref)
    out = np.zeros((700, 80), np.float32)
    f.into(windows[0][:50], out[:, 30:])
    np.testing.assert_array_equal(out[:, 30:], ref)
    assert not out[:, :30].any()
    with pytest.raises(ValueError, match="out"):
        f.into(windows[0][:5], out)


def test_window_scores_equal_direct_evaluation(windows):
    from vjboost.features import FeaturePool, HaarFamily

    pool = FeaturePool([HaarFamily((10, 10))])
    pos, neg = windows
    learners, _ = train_reservoir_stage(
        pool, ArrayStream(pos, np.ones(300), seed=0), ArrayStream(neg, np.zeros(300), seed=1),
        n_weak=5, reservoir_size=40, cov_features=64, seed=0, loss="gentle",
        float32_leaves=True,
    )
    ws = WindowScores(pool, neg, chunk=37)
    for h in learners:
        ws.add(h)
    vals = pool.evaluate(neg)
    np.testing.assert_allclose(ws.scores, sum(h.predict_matrix(vals) for h in learners),
                               atol=1e-12)


def test_categorical_features_get_categorical_stumps(windows):
    from vjboost.cascade.trainer import make_pool

    pool = make_pool("lbp", (10, 10))
    pos, neg = windows
    learners, booster = train_reservoir_stage(
        pool, ArrayStream(pos, np.ones(300), seed=0), ArrayStream(neg, np.zeros(300), seed=1),
        n_weak=4, reservoir_size=40, strategy="wsam", seed=0,
    )
    assert learners and all(isinstance(h, CategoricalStump) for h in learners)
    assert not any(isinstance(h, Stump) for h in learners)
    vals = pool.evaluate(np.concatenate([pos[:40], neg[:40]]))
    score = sum(h.predict_matrix(vals) for h in learners)
    assert np.mean((score > 0) == np.r_[np.ones(40), np.zeros(40)].astype(bool)) > 0.7
