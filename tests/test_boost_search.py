"""Split searches and the round loop: precomputed, streamed and lazy sources give the same trees."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.boost import (
    MatrixSearch,
    PoolSource,
    StreamedSearch,
    TreeShape,
    make_loss,
    precompute,
    run_rounds,
)
from vjboost.features import FeaturePool, HaarFamily, MBLBPFamily


@pytest.fixture(scope="module")
def pool_data():
    rng = np.random.default_rng(11)
    pool = FeaturePool([HaarFamily((10, 10), mode="BASIC", types=["x2", "y2"]),
                        MBLBPFamily((10, 10))])
    w = rng.integers(0, 160, size=(200, 10, 10)).astype(np.uint8)
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    w[y > 0, 1:6, 2:8] += 80
    return pool, w, y


def test_streamed_search_equals_precomputed_search(pool_data):
    """Blocks of features evaluated at every search find the precomputed matrix's trees."""
    pool, w, y = pool_data
    shape = TreeShape(max_depth=2)
    a = run_rounds(make_loss("gentle", y), MatrixSearch(precompute(pool, w, "float32")),
                   n_rounds=4, shape=shape, weight_trim_rate=0.9)
    b = run_rounds(make_loss("gentle", y), StreamedSearch(PoolSource(pool, w), block=301),
                   n_rounds=4, shape=shape, weight_trim_rate=0.9)
    assert len(a.flat) == len(b.flat) == 4
    for s, t in zip(a.flat, b.flat, strict=True):
        assert s == t
    np.testing.assert_allclose(a.losses, b.losses, rtol=1e-12)
    # the pool's MB-LBP features take part with categorical nodes
    assert any(t.categorical.any() for t in a.flat)


def test_run_rounds_callback_stops_and_float32_leaves(pool_data):
    pool, w, y = pool_data
    seen = []

    def stop(r):
        seen.append((r.t, len(r.trees), r.loss))
        return r.t == 2

    out = run_rounds(make_loss("logit", y), MatrixSearch(precompute(pool, w, "uint8")),
                     n_rounds=10, leaf_dtype=np.float32, callback=stop)
    assert out.stopped == "callback" and len(out.trees) == 3
    assert [s[0] for s in seen] == [0, 1, 2] and seen[-1][2] == out.losses[-1]
    for t in out.flat:
        np.testing.assert_array_equal(t.leaves, t.leaves.astype(np.float32))
        assert t.split_bins is None  # thresholds are raw values after training
    with pytest.raises(ValueError, match="leaf_refit"):
        run_rounds(make_loss("logit", y), MatrixSearch(np.zeros((1, 200), np.float32)),
                   n_rounds=1, leaf_refit="some")


def test_no_split_stops_the_loop():
    y = np.array([1.0, -1.0, 1.0, -1.0])
    out = run_rounds(make_loss("gentle", y), MatrixSearch(np.ones((3, 4), np.float32)),
                     n_rounds=5)
    assert out.stopped == "no_split" and out.trees == []


def test_trainer_streams_features_over_the_memory_budget(tmp_path):
    """A stage trained from feature blocks (over the memory budget) equals the precomputed one
    on its training windows: with fewer windows than bins, binning is lossless (child nodes may
    place a threshold elsewhere between the same two training values)."""
    import cv2
    import skimage.data as d

    from vjboost.cascade.budget import PROGRAM_BYTES_PER_FEATURE
    from vjboost.cascade.trainer import CascadeTrainer

    faces = (d.lfw_subset()[:60] * 255).round().astype(np.uint8)
    faces = np.stack([cv2.resize(f, (10, 10), interpolation=cv2.INTER_AREA) for f in faces])
    bgs = []
    for name in ("coins", "moon", "text", "grass"):
        p = tmp_path / f"{name}.png"
        cv2.imwrite(str(p), getattr(d, name)()[::4, ::4])
        bgs.append(str(p))
    kw = dict(window_shape=(10, 10), features="haar", num_stages=1, num_pos=50, num_neg=100,
              max_weak_count=5, weak_learner="tree", max_depth=2, weight_trim_rate=1.0,
              seed=1, threads=1)
    full = CascadeTrainer(**kw).fit(faces, bgs)
    pool = full.pool_
    # the run's budget whose feature-cache share holds the training floor (feature program,
    # channels) plus room for blocks of a few hundred features (the rest of the run's budget:
    # decoded images, the process, the positives, the negative pool)
    from vjboost.cascade.trainer import BASE_MEMORY, IMAGE_CACHE_SHARE

    features = (PROGRAM_BYTES_PER_FEATURE * pool.n_features + pool.channels_nbytes(150)
                + 8 * 150 * 300)
    held = BASE_MEMORY + 2 * faces.nbytes + 3 * 100 * 10 * 10
    budget = int((features + 600 + held) / (1 - IMAGE_CACHE_SHARE))  # 600: rounding slack
    streamed = CascadeTrainer(memory_budget=budget, **kw).fit(faces, bgs)
    assert full.stages_[0].info["mode"].startswith("precomputed uint8")
    assert streamed.stages_[0].info["mode"].startswith("streamed in blocks of")
    vals = full.pool_.evaluate(faces[:50])  # positives of the stage
    for s, t in zip(full.stages_[0].learners, streamed.stages_[0].learners, strict=True):
        np.testing.assert_array_equal(s.feature, t.feature)
        assert s.threshold[0] == t.threshold[0]
        np.testing.assert_array_equal(s.leaves, t.leaves)
        np.testing.assert_array_equal(s.predict_matrix(vals), t.predict_matrix(vals))
    assert full.stages_[0].threshold == streamed.stages_[0].threshold
