"""Samplers on a real partitioned FeaturePool evaluated lazily through the family kernels."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.boost.losses import make_loss
from vjboost.boost.sampling import (
    EdgeEvaluator,
    Partition,
    PoolSource,
    SampledBoostedClassifier,
    problem_from_loss,
)
from vjboost.features.haar import HaarFamily
from vjboost.features.mblbp import MBLBPFamily
from vjboost.features.pixel import PixelFamily
from vjboost.features.pool import FeaturePool


def _windows(n, seed):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 120, size=(n, 12, 12)).astype(np.uint8)
    y = rng.random(n) < 0.5
    w[y, 2:10, 1:6] += 100  # positives: a bright block on the left
    return w, np.where(y, 1, -1)


@pytest.fixture(scope="module")
def pool():
    return FeaturePool(
        [PixelFamily((12, 12)), HaarFamily((12, 12)), MBLBPFamily((12, 12))]
    )


def test_pool_source_matches_pool_evaluate(pool):
    w, _ = _windows(50, 0)
    ch = pool.prepare(w)
    src = PoolSource(pool, ch)
    fids = np.array([0, 200, pool.offsets[2] + 3])
    sids = np.array([4, 4, 7, 0, 49, 7])  # repeated draws, unsorted
    np.testing.assert_array_equal(src.values(fids, sids), pool.evaluate(ch, fids)[:, sids])
    sids = np.array([0, 4, 7, 49])  # distinct and ascending (no np.unique on that path)
    np.testing.assert_array_equal(src.values(fids, sids), pool.evaluate(ch, fids)[:, sids])


@pytest.mark.parametrize("sampler", ["laminating", "tasting_q1", "mas_q1", "ucb"])
def test_fit_pool_learns_and_uses_families(pool, sampler):
    w, y = _windows(400, 1)
    m = SampledBoostedClassifier(sampler=sampler, loss="real", n_estimators=15, budget=4000,
                                 random_state=0).fit_pool(pool, w, y)
    assert m.partition_.n_families == 3
    assert m.partition_.names == ["pixel", "haar", "mblbp"]
    assert np.all(m.cost_[1:] <= 4000)
    wt, yt = _windows(300, 2)
    src = PoolSource(pool, pool.prepare(wt))
    acc = np.mean(np.where(m.decision_function_source(src) > 0, 1, -1) == yt)
    assert acc > 0.9



def test_model_fitted_on_windows_predicts_new_windows(pool):
    """After fit_pool, predict_source gives labels of new windows (as the scores'
    signs say), and predict(windows) says what to call instead of "expected a 2-D array"."""
    w, y = _windows(300, 4)
    labels = np.where(y > 0, "object", "background")
    m = SampledBoostedClassifier(loss="gentle", n_estimators=10, budget=3000,
                                 random_state=0).fit_pool(pool, w, labels)
    wt, yt = _windows(200, 5)
    src = PoolSource(pool, wt)
    got = m.predict_source(src)
    f = m.decision_function_source(src)
    np.testing.assert_array_equal(got, np.where(f > 0, "object", "background"))
    assert np.mean(got == np.where(yt > 0, "object", "background")) > 0.9
    for call in (m.predict, m.decision_function, m.predict_proba):
        with pytest.raises(ValueError, match=r"fit_pool.*predict_source\(PoolSource"):
            call(wt)
    # a matrix of all the pool's features still goes through predict
    X = pool.evaluate(pool.prepare(wt)).T
    np.testing.assert_array_equal(m.predict(X), got)


def test_categorical_family_gets_categorical_splits(pool):
    w, y = _windows(300, 3)
    ch = pool.prepare(w)
    src = PoolSource(pool, ch)
    part = Partition.from_sizes(pool.family_sizes())
    ev = EdgeEvaluator(src, partition=part, categorical=pool.kinds())
    ev.set_problem(problem_from_loss(make_loss("gentle", y.astype(float))))
    fids = part.members[2][:20]
    b = ev.block(fids, np.arange(300), weighted=True)
    assert b.search.subset is not None and np.any(b.search.subset)
    assert np.all((b.edges >= 0) & (b.edges <= 1))


# --------------------------------------------------------------------------------------------
# samplers choose the features of trees, node by node


def test_full_sampler_trees_equal_exhaustive_trees(rng):
    """Node by node on the examples reaching each node, the Full sampler finds the exhaustive
    search's trees."""
    from vjboost.boost import BoostedClassifier

    X = rng.normal(size=(300, 8))
    y = np.where(X[:, 0] * X[:, 1] + 0.2 * rng.normal(size=300) > 0, 1, -1)
    kw = dict(loss="gentle", n_estimators=6)
    ref = BoostedClassifier(weak_learner="tree", max_depth=2, binning=False, **kw).fit(X, y)
    m = SampledBoostedClassifier(sampler="full", weak_learner="tree", max_depth=2, **kw)
    m.fit_feature_major(np.ascontiguousarray(X.T, dtype=np.float32), y)
    assert len(m.estimators_) == len(ref.estimators_) == 6
    for a, b in zip(m.estimators_, ref.estimators_, strict=True):
        assert a.n_nodes == b.n_nodes == 3
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_allclose(a.leaves, b.leaves, rtol=1e-9)
    np.testing.assert_allclose(m.train_loss_, ref.train_loss_, rtol=1e-9)
    # each node pays for all features on its examples: sum over nodes = depth * F * N
    np.testing.assert_array_equal(m.cost_, 2 * 8 * 300)


def test_sampled_trees_on_a_lazy_pool(pool, monkeypatch):
    """Laminating picks every node's feature from blocks evaluated lazily: no call evaluates
    the whole pool, the cost stays within a budget per node, trees mix node kinds."""
    calls = []
    values = PoolSource.values
    monkeypatch.setattr(PoolSource, "values", lambda self, f, s=None: (
        calls.append((f.size, self.n_samples if s is None else s.size)) or values(self, f, s)))
    w, y = _windows(300, 5)
    m = SampledBoostedClassifier(sampler="laminating", loss="gentle", weak_learner="tree",
                                 max_depth=2, n_estimators=6, budget=3000,
                                 random_state=0).fit_pool(pool, w, y)
    assert all(q * s < pool.n_features * 300 / 4 for q, s in calls)
    assert np.all(m.cost_ <= 3 * 3000)
    assert all(t.depth <= 2 for t in m.estimators_) and any(t.depth == 2 for t in m.estimators_)
    kinds = [bool(c) for t in m.estimators_ for c in t.categorical]
    assert any(kinds) and not all(kinds)  # MB-LBP and ordered nodes
    wt, yt = _windows(300, 6)
    acc = np.mean(np.where(m.decision_function_source(PoolSource(pool, wt)) > 0, 1, -1) == yt)
    assert acc > 0.9


def test_cascade_trainer_samples_trees(tmp_path):
    import cv2
    import skimage.data as d

    from vjboost.cascade.trainer import CascadeTrainer

    faces = (d.lfw_subset()[:100] * 255).round().astype(np.uint8)
    faces = np.stack([cv2.resize(f, (12, 12), interpolation=cv2.INTER_AREA) for f in faces])
    bgs = []
    for name in ("coins", "moon", "page", "text", "brick", "grass"):
        p = tmp_path / f"{name}.png"
        cv2.imwrite(str(p), getattr(d, name)()[::3, ::3])
        bgs.append(str(p))
    tr = CascadeTrainer(window_shape=(12, 12), features="haar,lbp", sampler="laminating",
                        weak_learner="tree", max_depth=2, num_stages=2, num_pos=80, num_neg=160,
                        max_weak_count=8, max_false_alarm=0.5, min_hit_rate=0.98, seed=2,
                        threads=1).fit(faces, bgs)
    assert tr.stages_ and tr.model_ is not None
    trees = [t for st in tr.stages_ for t in st.learners]
    assert any(t.n_nodes > 1 for t in trees)
    assert tr.stages_[0].info["mode"] == "sampler laminating"


def test_lazy_pool_trees_equal_matrix_trees(pool):
    """Lazily evaluated blocks (one bound program for every block) and the precomputed float32
    matrix of the same pool give the same sampled trees."""
    from vjboost.boost.source import MatrixSource

    w, y = _windows(300, 7)
    kw = dict(sampler="laminating", loss="gentle", weak_learner="tree", max_depth=2,
              n_estimators=5, budget=3000, random_state=3)
    lazy = SampledBoostedClassifier(**kw).fit_pool(pool, w, y)
    mat = MatrixSource(pool.evaluate(w), categorical=pool.kinds(), families=pool)
    ref = SampledBoostedClassifier(**kw).fit_source(mat, y)
    assert len(lazy.estimators_) == len(ref.estimators_) == 5
    for a, b in zip(lazy.estimators_, ref.estimators_, strict=True):
        assert a.to_dict() == b.to_dict()
