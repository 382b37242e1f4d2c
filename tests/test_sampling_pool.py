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
    src = PoolSource(pool, ch, 50)
    fids = np.array([0, 200, pool.offsets[2] + 3])
    sids = np.array([4, 4, 7, 0, 49, 7])  # repeated draws, unsorted
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
    src = PoolSource(pool, pool.prepare(wt), 300)
    acc = np.mean(np.where(m.decision_function_source(src) > 0, 1, -1) == yt)
    assert acc > 0.9


def test_categorical_family_gets_categorical_splits(pool):
    w, y = _windows(300, 3)
    ch = pool.prepare(w)
    src = PoolSource(pool, ch, 300)
    part = Partition.from_sizes(pool.family_sizes())
    ev = EdgeEvaluator(src, part, categorical=pool.kinds())
    ev.set_problem(problem_from_loss(make_loss("gentle", y.astype(float))))
    fids = part.members[2][:20]
    b = ev.block(fids, np.arange(300), weighted=True)
    assert b.search.subset is not None and np.any(b.search.subset)
    assert np.all((b.edges >= 0) & (b.edges <= 1))
