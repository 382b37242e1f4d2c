"""Reservoir boosting: GEEM's algebra against brute force, the learner, baselines, the stage."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost._memory import MemoryBudgetError
from vjboost.boost.reservoir import (
    ReservoirBooster,
    SubsampleBooster,
    expected_edge,
    geem_select,
    select_reservoir,
    sherman_morrison_delete,
    stump_covariance,
    train_reservoir_stage,
)
from vjboost.boost.streams import ArrayStream, FunctionStream

# --------------------------------------------------------------------------------------------
# references


def brute_force_covariance(values: np.ndarray, y: np.ndarray) -> np.ndarray:
    """E[v v'] over every stump (feature, threshold between distinct values, polarity)."""
    vecs = []
    for x in values:
        u = np.unique(x)
        for lo, hi in itertools.pairwise(u):
            h = np.where(x < 0.5 * (lo + hi), -1.0, 1.0)
            vecs.append(y * h)
            vecs.append(-y * h)
    v = np.array(vecs)
    return v.T @ v / v.shape[0]


def brute_force_greedy(cov, w, n_keep, ridge):
    kept = list(range(len(w)))
    while len(kept) > n_keep:
        scores = [expected_edge(cov, w, [i for i in kept if i != k], ridge=ridge) for k in kept]
        kept.pop(int(np.argmax(scores)))
    return kept


def toy_problem(rng, n=12, d=4, ties=False):
    if ties:
        x = rng.integers(0, 4, size=(d, n)).astype(np.float32)
    else:
        x = rng.normal(size=(d, n)).astype(np.float32)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return x, y


def blobs(rng, n, d=20, shift=1.0):
    """Two Gaussian classes differing in their first 5 features; labels 1 / 0."""
    y = (rng.random(n) < 0.5).astype(np.int64)
    x = rng.normal(size=(n, d)).astype(np.float32)
    x[:, :5] += shift * (2 * y[:, None] - 1)
    return x, y


# --------------------------------------------------------------------------------------------
# covariance and GEEM algebra


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sorted_order_covariance_equals_enumeration(seed, ties):
    x, y = toy_problem(np.random.default_rng(seed), ties=ties)
    np.testing.assert_allclose(stump_covariance(x, y), brute_force_covariance(x, y), atol=1e-12)


@settings(max_examples=25)
@given(
    st.integers(2, 10),
    st.integers(1, 4),
    st.integers(0, 2**31 - 1),
)
def test_covariance_property(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(d, n)).astype(np.float32)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    cov = stump_covariance(x, y)
    if any(np.unique(row).size > 1 for row in x):
        np.testing.assert_allclose(cov, brute_force_covariance(x, y), atol=1e-12)
    else:
        np.testing.assert_array_equal(cov, np.outer(y, y))
    assert np.linalg.eigvalsh(cov).min() > -1e-9  # PSD


def test_covariance_feature_subset():
    x, y = toy_problem(np.random.default_rng(3), d=6)
    np.testing.assert_allclose(
        stump_covariance(x, y, feature_ids=[1, 4]), brute_force_covariance(x[[1, 4]], y),
        atol=1e-12,
    )


def test_sherman_morrison_deletion_equals_fresh_inverse():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(9, 9))
    s = a @ a.T + 0.5 * np.eye(9)
    m = np.linalg.inv(s)
    for k in range(9):
        keep = [i for i in range(9) if i != k]
        np.testing.assert_allclose(
            sherman_morrison_delete(m, k), np.linalg.inv(s[np.ix_(keep, keep)]), atol=1e-10
        )
    # repeated deletions stay exact
    cur, idx = m, list(range(9))
    for k in (3, 0, 5):
        cur = sherman_morrison_delete(cur, idx.index(k))
        idx.remove(k)
        np.testing.assert_allclose(cur, np.linalg.inv(s[np.ix_(idx, idx)]), atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_geem_greedy_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    x, y = toy_problem(rng, n=13, ties=seed % 2 == 1)
    cov = stump_covariance(x, y)
    w = rng.random(13)
    w /= w.sum()
    keep, corrected, edge = geem_select(cov, w, 6, ridge=0.05)
    assert keep.size == 6 and np.all(np.diff(keep) > 0)
    assert keep.tolist() == brute_force_greedy(cov, w, 6, 0.05)
    # corrected weights: w_B + Sigma_BB^-1 Sigma_BBbar w_Bbar (fresh solve)
    s = cov + 0.05 * np.eye(13)
    out = np.setdiff1d(np.arange(13), keep)
    ref = w[keep] + np.linalg.solve(s[np.ix_(keep, keep)], s[np.ix_(keep, out)] @ w[out])
    np.testing.assert_allclose(corrected, ref, atol=1e-10)
    assert edge == pytest.approx(expected_edge(cov, w, keep, ridge=0.05), abs=1e-10)
    assert edge == pytest.approx(corrected.sum(), abs=1e-12)


def test_geem_with_independent_samples_keeps_heaviest():
    w = np.random.default_rng(5).random(20)
    keep, corrected, _ = geem_select(np.eye(20), w, 7, ridge=0.0)
    np.testing.assert_array_equal(keep, np.sort(np.argsort(-w)[:7]))
    np.testing.assert_allclose(corrected, w[keep])


def test_geem_errors():
    with pytest.raises(ValueError, match="n_keep"):
        geem_select(np.eye(4), np.ones(4), 0)
    with pytest.raises(ValueError, match="n_keep"):
        geem_select(np.eye(4), np.ones(4), 5)
    with pytest.raises(ValueError, match="weights"):
        geem_select(np.eye(4), -np.ones(4), 2)
    with pytest.raises(ValueError, match="weights"):
        geem_select(np.eye(4), np.ones(3), 2)
    with pytest.raises(ValueError, match="square"):
        geem_select(np.ones((3, 4)), np.ones(3), 2)
    with pytest.raises(ValueError, match="ridge"):
        geem_select(np.eye(4), np.ones(4), 2, ridge=-1.0)
    with pytest.raises(ValueError, match="labels"):
        stump_covariance(np.ones((2, 3)), [1, 0, 1])
    with pytest.raises(ValueError, match="y"):
        stump_covariance(np.ones((2, 3)), [1, -1])
    with pytest.raises(ValueError, match="k"):
        sherman_morrison_delete(np.eye(3), 3)


def test_select_reservoir_strategies():
    rng = np.random.default_rng(6)
    w = rng.random(30)
    w /= w.sum()
    x, y = toy_problem(rng, n=30, d=5)
    for strategy in ("max", "wsam", "rand", "geem"):
        keep, corrected = select_reservoir(strategy, 10, w, np.random.default_rng(0), values=x, y=y)
        assert keep.size == 10 and np.unique(keep).size == 10
        assert (corrected is not None) == (strategy == "geem")
    keep, _ = select_reservoir("max", 10, w, rng)
    np.testing.assert_array_equal(keep, np.sort(np.argsort(-w)[:10]))
    # weighted sampling favours heavy samples
    heavy = np.zeros(30)
    for s in range(200):
        k, _ = select_reservoir("wsam", 5, w, np.random.default_rng(s))
        heavy[k] += 1
    assert np.corrcoef(heavy, w)[0, 1] > 0.7
    with pytest.raises(ValueError, match="strategy"):
        select_reservoir("best", 10, w, rng)


# --------------------------------------------------------------------------------------------
# the learner


@pytest.fixture(scope="module")
def blob_data():
    rng = np.random.default_rng(7)
    return blobs(rng, 3000), blobs(rng, 1000)


@pytest.mark.parametrize("strategy", ["geem", "max", "wsam", "rand"])
def test_reservoir_learns_and_keeps_r(strategy, blob_data):
    (x, y), (xt, yt) = blob_data
    b = ReservoirBooster(30, reservoir_size=40, n_fresh=25, strategy=strategy, random_state=0)
    b.fit(ArrayStream(x, y, seed=1))
    values, labels, scores = b._res_values, b._res_y, b._res_f
    assert values.shape == (20, 40) and labels.shape == (40,) and scores.shape == (40,)
    assert len(b.estimators_) == 30
    assert b.n_seen_ == 40 + 30 * 25
    assert b.score(xt, yt) > 0.85
    # reservoir scores are the ensemble's scores of the kept samples
    np.testing.assert_allclose(scores, b.decision_function_features(values), atol=1e-9)
    if strategy == "geem":
        assert len(b.history_["expected_edge"]) == 30


def test_geem_keeps_exactly_r_every_round(blob_data):
    (x, y), _ = blob_data
    b = ReservoirBooster(1, reservoir_size=17, n_fresh=9, strategy="geem", random_state=0)
    b.fit(ArrayStream(x, y, seed=0))
    for _ in range(5):
        xb, yb = x[:9], y[:9]
        b.partial_fit(xb, yb)
        assert b._res_values.shape[1] == 17


def test_determinism(blob_data):
    (x, y), (xt, _) = blob_data

    def run(seed, stream_seed):
        b = ReservoirBooster(15, reservoir_size=30, n_fresh=30, strategy="geem", cov_features=8,
                             random_state=seed)
        return b.fit(ArrayStream(x, y, seed=stream_seed)).decision_function(xt)

    np.testing.assert_array_equal(run(3, 4), run(3, 4))
    assert not np.array_equal(run(3, 4), run(3, 5))
    for strategy in ("wsam", "rand"):
        kw = dict(reservoir_size=30, n_fresh=30, strategy=strategy, random_state=1)
        a = ReservoirBooster(10, **kw).fit(ArrayStream(x, y, seed=2))
        c = ReservoirBooster(10, **kw).fit(ArrayStream(x, y, seed=2))
        np.testing.assert_array_equal(a.decision_function(xt), c.decision_function(xt))


def test_trees_gentle_and_single_class_batches(blob_data):
    (x, y), (xt, yt) = blob_data
    b = ReservoirBooster(10, reservoir_size=30, n_fresh=30, strategy="wsam", loss="gentle",
                         weak_learner="tree", max_depth=2, random_state=0)
    b.fit(ArrayStream(x, y, seed=0))
    assert b.score(xt, yt) > 0.8
    # a batch of one class only (e.g. a stream of positives) must not break the round
    b = ReservoirBooster(strategy="max", reservoir_size=10)
    b.partial_fit(x[y == 1][:10], np.ones(10, int))
    b.partial_fit(x[:20], y[:20])
    assert b._res_values.shape[1] == 10 and len(b.estimators_) >= 1


def test_callback_stops(blob_data):
    (x, y), _ = blob_data
    b = ReservoirBooster(50, reservoir_size=20, n_fresh=20, strategy="rand", random_state=0)
    b.fit(ArrayStream(x, y, seed=0), callback=lambda booster, t: t == 4)
    assert len(b.estimators_) == 5


def test_bad_parameters(blob_data):
    (x, y), _ = blob_data
    s = ArrayStream(x[:100], y[:100], seed=0)
    with pytest.raises(ValueError, match="reservoir_size"):
        ReservoirBooster(reservoir_size=0).fit(s)
    with pytest.raises(ValueError, match="reservoir_size"):
        ReservoirBooster(reservoir_size=-3).fit(s)
    with pytest.raises(ValueError, match="n_fresh"):
        ReservoirBooster(n_fresh=0).fit(s)
    with pytest.raises(ValueError, match="n_fresh.*larger than the stream"):
        ReservoirBooster(reservoir_size=10, n_fresh=101).fit(s)
    with pytest.raises(ValueError, match="r \\+ q = 110 is larger than the stream"):
        ReservoirBooster(reservoir_size=60, n_fresh=50).fit(s)
    with pytest.raises(TypeError, match="reservoir_size"):
        ReservoirBooster(reservoir_size=2.5).fit(s)
    with pytest.raises(ValueError, match="n_estimators"):
        ReservoirBooster(n_estimators=0).fit(s)
    with pytest.raises(ValueError, match="strategy"):
        ReservoirBooster(strategy="greedy").fit(s)
    with pytest.raises(ValueError, match="loss"):
        ReservoirBooster(loss="discrete").fit(s)
    with pytest.raises(ValueError, match="ridge"):
        ReservoirBooster(ridge=-1.0).fit(s)
    with pytest.raises(ValueError, match="cov_features"):
        ReservoirBooster(cov_features=0).fit(s)
    with pytest.raises(TypeError, match="stream"):
        ReservoirBooster().fit((x, y))
    # scikit-learn's fit(X, y) (a raw "takes 2 positional arguments but 3 were given" before)
    # and arrays alone are told how to wrap the arrays
    for args in ((x, y), (x,), (x.tolist(),)):
        with pytest.raises(TypeError, match=r"fit takes a stream .*ArrayStream\(X, y, seed=0\)"):
            ReservoirBooster().fit(*args)
    with pytest.raises(TypeError, match="stream: expected a SampleStream, got dict"):
        ReservoirBooster().fit({"x": x})
    with pytest.raises(ValueError, match="labels must be 1"):
        ReservoirBooster(reservoir_size=5).partial_fit(x[:10], np.arange(10))
    with pytest.raises(ValueError, match="not fitted"):
        ReservoirBooster().decision_function(x)
    with pytest.raises(ValueError, match="featurizer"):
        ReservoirBooster(reservoir_size=5, featurizer=lambda s: np.ones((3, 2))).partial_fit(
            x[:10], y[:10])
    with pytest.raises(MemoryBudgetError, match="reservoir"):
        ReservoirBooster(reservoir_size=10, n_fresh=10, memory_budget=1000).fit(s)


def test_unbounded_stream_and_memory_estimate():
    def fn(n, rng):
        return blobs(rng, n)

    b = ReservoirBooster(8, reservoir_size=30, n_fresh=30, strategy="geem", random_state=0)
    b.fit(FunctionStream(fn, (20,), seed=0))
    assert len(b.estimators_) == 8
    assert "KiB" in b.memory_estimate(20)


# --------------------------------------------------------------------------------------------
# baselines and the cascade stage


@pytest.mark.parametrize("method", ["wss", "mada", "fix"])
def test_baselines(method, blob_data):
    (x, y), (xt, yt) = blob_data
    b = SubsampleBooster(method, n_estimators=30, sample_size=60, random_state=0).fit(x, y)
    assert len(b.estimators_) == 30
    assert b.score(xt, yt) > 0.85
    c = SubsampleBooster(method, n_estimators=30, sample_size=60, random_state=0).fit(x, y)
    np.testing.assert_array_equal(b.decision_function(xt), c.decision_function(xt))


def test_baseline_errors(blob_data):
    (x, y), _ = blob_data
    with pytest.raises(ValueError, match="method"):
        SubsampleBooster("filter").fit(x, y)
    with pytest.raises(ValueError, match="sample_size"):
        SubsampleBooster("wss", sample_size=5000).fit(x, y)
    with pytest.raises(ValueError, match="y"):
        SubsampleBooster("wss").fit(x, y[:10])


def test_train_reservoir_stage_uses_global_feature_ids():
    from vjboost.features import FeaturePool, HaarFamily

    rng = np.random.default_rng(8)
    pool = FeaturePool([HaarFamily((10, 10))])
    yy, xx = np.mgrid[0:10, 0:10]
    pos = np.clip(120 + 80 * (yy < 5) + rng.normal(0, 20, (300, 10, 10)), 0, 255).astype(np.uint8)
    neg = np.clip(120 + rng.normal(0, 40, (300, 10, 10)), 0, 255).astype(np.uint8)
    feats = np.sort(rng.choice(pool.n_features, 300, replace=False))
    learners, booster = train_reservoir_stage(
        pool, ArrayStream(pos, np.ones(300), seed=0), ArrayStream(neg, np.zeros(300), seed=1),
        n_weak=6, reservoir_size=40, feature_ids=feats, cov_features=64, random_state=0,
    )
    assert len(learners) == 6
    assert all(set(h.feature.tolist()) <= set(feats.tolist()) for h in learners)
    windows = np.concatenate([pos[:50], neg[:50]])
    vals = pool.evaluate(windows)
    score = sum(h.predict_matrix(vals) for h in learners)
    np.testing.assert_allclose(score, booster.decision_function(windows), atol=1e-9)
    labels = np.r_[np.ones(50), -np.ones(50)]
    assert np.mean(np.sign(score) == labels) > 0.9
