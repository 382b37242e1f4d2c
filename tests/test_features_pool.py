"""FeaturePool: numbering, partition, lazy evaluation, memory checks, saving."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vjboost.features import FeaturePool, HaarFamily, MBLBPFamily
from vjboost.features.fourier import FourierFamily
from vjboost.features.hog import HOGFamily
from vjboost.features.pixel import PixelRGBFamily
from vjboost.features.pool import PoolChannels
from vjboost.features.program import evaluate_program


@pytest.fixture
def pool():
    return FeaturePool([HaarFamily((10, 10), mode="BASIC"), MBLBPFamily((10, 10)),
                        HaarFamily((10, 10), mode="ALL", types=["tx2"], normalize=False)])


@pytest.fixture
def windows(rng):
    return rng.integers(0, 256, (40, 10, 10), dtype=np.uint8)


def test_numbering_and_partition(pool):
    sizes = [f.n_features for f in pool.families]
    assert pool.n_features == sum(sizes) == len(pool)
    np.testing.assert_array_equal(pool.offsets, np.concatenate([[0], np.cumsum(sizes)]))
    parts = pool.partition()
    assert [p.stop - p.start for p in parts] == sizes and parts[-1].stop == pool.n_features
    fam, loc = pool.locate([0, sizes[0] - 1, sizes[0], pool.n_features - 1])
    np.testing.assert_array_equal(fam, [0, 0, 1, 2])
    np.testing.assert_array_equal(loc, [0, sizes[0] - 1, 0, sizes[2] - 1])
    np.testing.assert_array_equal(pool.global_ids("mblbp", [0, 3]), [sizes[0], sizes[0] + 3])
    start2 = sizes[0] + sizes[1]
    np.testing.assert_array_equal(pool.global_ids(2)[:2], [start2, start2 + 1])
    d = pool.describe(sizes[0] + 2)
    assert d["family"] == "mblbp" and d["local_index"] == 2 and d["global_index"] == sizes[0] + 2
    assert d["rect"] == pool.families[1].describe(2)["rect"]
    kinds = pool.kinds()
    assert kinds[parts[1]].all() and not kinds[parts[0]].any() and not kinds[parts[2]].any()
    with pytest.raises(ValueError, match="names 2 families"):
        pool.global_ids("haar")
    with pytest.raises(ValueError, match="out of range"):
        pool.locate([pool.n_features])


def test_lazy_evaluation_matches_families(pool, windows, rng):
    prep = pool.prepare(windows)
    assert isinstance(prep, PoolChannels) and prep.n_samples == 40
    gids = rng.choice(pool.n_features, 300, replace=False)  # mixed families, any order
    sids = np.array([39, 0, 7, 7])
    vals = pool.evaluate(prep, gids, sids)
    assert vals.shape == (300, 4) and vals.dtype == np.float32
    fam, loc = pool.locate(gids)
    for k, f in enumerate(pool.families):
        rows = np.flatnonzero(fam == k)
        np.testing.assert_array_equal(vals[rows], f.compute(windows[sids], loc[rows]))
    # raw windows are prepared on the fly (only the families and windows asked for)
    np.testing.assert_array_equal(pool.evaluate(windows, gids[:5]), pool.evaluate(prep, gids[:5]))
    np.testing.assert_array_equal(pool.evaluate(windows, gids, sids), vals)
    other = FeaturePool([MBLBPFamily((10, 10))])
    with pytest.raises(ValueError, match="different pool"):
        other.evaluate(prep, [0])


def test_evaluate_at(pool, rng):
    img = rng.integers(0, 256, (25, 31), dtype=np.uint8)
    pos = np.array([[0, 0], [15, 21], [8, 3]])
    gids = np.arange(0, pool.n_features, 7)
    at = pool.evaluate_at(pool.prepare_image(img), gids, pos)
    wins = np.stack([img[y : y + 10, x : x + 10] for y, x in pos])
    np.testing.assert_array_equal(at, pool.evaluate(wins, gids))


def test_config_save_load(pool, tmp_path):
    cfg = pool.get_config()
    assert [d["family"] for d in cfg["families"]] == ["haar", "mblbp", "haar"]
    assert FeaturePool.from_config(cfg) == pool
    pool.save(tmp_path / "pool.json")
    assert FeaturePool.load(tmp_path / "pool.json") == pool
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ValueError, match="not a valid pool JSON"):
        FeaturePool.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="unknown feature family"):
        FeaturePool.from_config({"families": [{"family": "zzz", "config": {}}]})


def test_bad_pools_and_inputs(pool, windows):
    with pytest.raises(ValueError, match="same window_shape"):
        FeaturePool([HaarFamily((10, 10)), MBLBPFamily((12, 12))])
    with pytest.raises(ValueError, match="at least one family"):
        FeaturePool([])
    with pytest.raises(TypeError, match="FeatureFamily"):
        FeaturePool([HaarFamily((10, 10)), "mblbp"])
    with pytest.raises(ValueError, match="windows are 10x11"):
        pool.evaluate(np.zeros((3, 10, 11), np.uint8), [0])
    with pytest.raises(ValueError, match="empty set of feature ids"):
        pool.evaluate(windows, [])
    with pytest.raises(TypeError, match="prepare_image"):
        pool.evaluate_at(pool.prepare(windows[:2]), [0], [[0, 0]])


def test_rgb_windows_feed_gray_families(rng):
    pool = FeaturePool([HaarFamily((8, 8)), MBLBPFamily((8, 8))])
    rgb = rng.integers(0, 256, (5, 8, 8, 3), dtype=np.uint8)
    gray = np.stack([cv2.cvtColor(w, cv2.COLOR_RGB2GRAY) for w in rgb])
    np.testing.assert_array_equal(pool.evaluate(rgb), pool.evaluate(gray))


def test_program_pool_computes_the_union_of_channels_once(pool, windows, rng):
    prep = pool.prepare(windows)
    # one set of integral planes for all three families (gray, gray2, tilted), no per-family data
    assert prep.channels == (None, None, None) and prep.planes.shape == (40, 3, 11, 11)
    assert pool.channels_nbytes(40) >= prep.nbytes
    prog = pool.program()
    assert prog.n_features == pool.n_features
    assert set(prog.channels.keys) == {"gray", "gray2", "tilted"}
    gids = rng.choice(pool.n_features, 200, replace=False)
    sub = pool.program(gids)
    np.testing.assert_array_equal(evaluate_program(sub, windows), pool.evaluate(prep, gids))
    # a subset that reads no tilted feature needs no tilted plane
    assert "tilted" not in pool.program(pool.global_ids(1, [0, 1])).channels.keys
    assert pool.opencv_type is None
    assert FeaturePool([MBLBPFamily((10, 10))]).opencv_type == "LBP"
    assert FeaturePool([HaarFamily((10, 10))]).opencv_type == "HAAR"


def test_program_of_features_of_some_families_only(windows, rng):
    """A model may use no feature of a family of its pool (a fresh pool, as loaded from a model
    file, builds each family's part alone)."""
    def fresh():
        return FeaturePool([HaarFamily((10, 10), mode="BASIC"), MBLBPFamily((10, 10)),
                            HOGFamily((10, 10), pixels_per_cell=(4, 4))])

    ref = fresh()
    prep = ref.prepare(windows)
    for fam in range(3):
        gids = ref.global_ids(fam, rng.choice(ref.families[fam].n_features, 5, replace=False))
        sub = fresh().program(gids)
        assert sub is not None and sub.n_features == 5
        np.testing.assert_array_equal(evaluate_program(sub, windows), ref.evaluate(prep, gids))
    # a family without a program still makes the pool's program None, used or not
    mixed = FeaturePool([HaarFamily((10, 10), mode="BASIC"), FourierFamily((10, 10), size=3)])
    assert mixed.program([0, 1]) is None


def test_mixed_pool_program_and_generic_families(rng):
    pool = FeaturePool([HaarFamily((10, 12), mode="BASIC"), FourierFamily((10, 12), size=3),
                        PixelRGBFamily((10, 12)), HOGFamily((10, 12), pixels_per_cell=(4, 5))])
    assert pool.program() is None and pool.program([0]) is None
    img = rng.integers(0, 256, (25, 31, 3), dtype=np.uint8)
    pos = np.array([[0, 0], [15, 19], [7, 4]])
    wins = np.stack([img[y:y + 10, x:x + 12] for y, x in pos])
    prep = pool.prepare(wins)
    assert prep.channels[1] is not None and prep.channels[0] is None
    gids = np.concatenate([rng.choice(pool.n_features, 300, replace=False),
                           [pool.n_features - 1, 0]])
    vals = pool.evaluate(prep, gids)
    fam, loc = pool.locate(gids)
    for k, f in enumerate(pool.families):
        rows = np.flatnonzero(fam == k)
        data = wins if f.color else np.stack([cv2.cvtColor(w, cv2.COLOR_RGB2GRAY) for w in wins])
        np.testing.assert_array_equal(vals[rows], f.compute(data, loc[rows]))
    np.testing.assert_array_equal(pool.evaluate(wins, gids, [2, 0]), vals[:, [2, 0]])
    at = pool.evaluate_at(pool.prepare_image(img), gids, pos)
    np.testing.assert_array_equal(at, vals)
