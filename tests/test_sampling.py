"""Adaptive samplers: cost accounting, decision logic, estimates against simulation, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjboost.boost.losses import MulticlassLoss, make_loss
from vjboost.boost.sampling import (
    MAS1Q,
    MASQ1,
    SAMPLERS,
    UCB,
    CallableSource,
    EdgeEvaluator,
    EpsilonGreedy,
    Exp3P,
    Full,
    GaussianMixture1D,
    Laminating,
    MatrixSource,
    Partition,
    SampledBoostedClassifier,
    Tasting1Q,
    UniformNaive,
    UniformQ1,
    allocate_mas,
    expected_max_order_statistics,
    expected_selected_edge,
    fit_mixture,
    laminating_schedule,
    make_sampler,
    problem_from_loss,
    reward,
    uniform_subset,
    weighted_sample,
)
from vjboost.boost.sampling.laminating import better_half

# --------------------------------------------------------------------------------------------
# fixtures


def _binary_problem(n=400, f=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((f, n)).astype(np.float32)
    y = np.where(X[3] + 0.5 * X[17] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _counting_source(X, **kwargs):
    """A CallableSource of the values of ``X`` and the list of the evaluations of each call."""
    calls = []

    def fn(fids, sids):
        calls.append(fids.size * sids.size)
        return X[np.ix_(fids, sids)]

    return CallableSource(fn, n_features=X.shape[0], n_samples=X.shape[1], **kwargs), calls


def _evaluator(X, y, sizes, loss="discrete"):
    ev = EdgeEvaluator(MatrixSource(X), partition=Partition.from_sizes(sizes))
    step = make_loss(loss, y)
    ev.set_problem(problem_from_loss(step))
    return ev, step


# --------------------------------------------------------------------------------------------
# example sampling


def test_weighted_sample_frequencies(rng):
    w = np.array([0.5, 0.0, 0.2, 0.3])
    ids = weighted_sample(w, 200_000, rng)
    freq = np.bincount(ids, minlength=4) / ids.size
    np.testing.assert_allclose(freq, w, atol=0.005)
    assert np.all(np.diff(ids) >= 0)


def test_uniform_subset_and_errors(rng):
    ids = uniform_subset(10, 10, rng)
    np.testing.assert_array_equal(ids, np.arange(10))
    with pytest.raises(ValueError, match="without replacement"):
        uniform_subset(10, 11, rng)
    assert uniform_subset(10, 25, rng, replace=True).size == 25
    with pytest.raises(ValueError, match="positive"):
        weighted_sample(np.ones(3), 0, rng)
    with pytest.raises(ValueError, match="negative"):
        weighted_sample(np.array([1.0, -1.0]), 3, rng)
    with pytest.raises(ValueError, match="all weights are zero"):
        weighted_sample(np.zeros(3), 3, rng)


def test_sampled_edge_is_unbiased_estimate_of_weighted_edge(rng):
    """Weighting-by-sampling: the mean of y h over draws estimates sum w y h."""
    X, y = _binary_problem()
    ev, step = _evaluator(X, y, [60])
    w = rng.random(y.size) ** 4
    ev.set_problem(problem_from_loss(make_loss("discrete", y, w)))
    exact = ev.block([3, 17, 40], np.arange(y.size), weighted=True)
    # with the stump found on all examples fixed, its edge on many draws matches
    thr = exact.search.threshold
    pol = exact.search.right_value
    ids = ev.sample_examples(400_000, rng)
    for j, f in enumerate([3, 17, 40]):
        h = np.where(X[f] < thr[j], -pol[j], pol[j])
        brute = np.sum(step.weights * 0 + w / w.sum() * y * h)
        assert abs(np.mean((y * h)[ids]) - brute) < 0.01
        assert abs(exact.edges[j] - abs(brute)) < 1e-9


def test_multiclass_edges_match_brute_force(rng):
    n, f, k = 300, 8, 4
    X = rng.standard_normal((f, n)).astype(np.float32)
    labels = rng.integers(0, k, n)
    step = MulticlassLoss(labels, n_classes=k)
    step.update(rng.standard_normal((n, k)) * 0.3)
    ev = EdgeEvaluator(MatrixSource(X))
    ev.set_problem(problem_from_loss(step))
    b = ev.block(np.arange(f), np.arange(n), weighted=True)
    w, Y = step.weights, step.Y
    for q in range(f):
        best = 0.0
        for t in np.unique(X[q])[1:]:
            phi = np.where(X[q] < t, -1.0, 1.0)
            best = max(best, np.abs((w * Y * phi[:, None]).sum(axis=0)).sum())
        assert b.edges[q] == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("loss", ["discrete", "real", "gentle", "logit"])
def test_edges_in_unit_interval_and_rank_informative_feature(loss):
    X, y = _binary_problem()
    ev, _ = _evaluator(X, y, [60], loss)
    b = ev.block(np.arange(60), np.arange(y.size), weighted=True)
    assert np.all((b.edges >= 0) & (b.edges <= 1))
    assert b.feature_ids[b.best()] == 3


# --------------------------------------------------------------------------------------------
# partition / parameters


def test_partition_and_bad_parameters():
    p = Partition.from_sizes([3, 2], ["a", "b"])
    assert p.n_families == 2 and p.sizes.tolist() == [3, 2]
    np.testing.assert_array_equal(p.members[1], [3, 4])
    with pytest.raises(ValueError, match="empty"):
        Partition(np.array([0, 0, 2]))
    with pytest.raises(ValueError, match="at least one feature"):
        Partition.from_sizes([3, 0])
    with pytest.raises(ValueError, match="must be >= 1"):
        UniformNaive(n_examples=0)
    with pytest.raises(ValueError, match="must be >= 1"):
        Laminating(n_features=0)
    with pytest.raises(ValueError, match="must be >= 1"):
        Laminating(n_features=-3)
    with pytest.raises(ValueError, match="must be >= 1"):
        UCB(k=0)
    with pytest.raises(ValueError, match="lam"):
        Exp3P(lam=0.0)
    with pytest.raises(ValueError, match="fit_fraction"):
        MAS1Q(fit_fraction=1.5)
    with pytest.raises(ValueError, match="sampler"):
        make_sampler("nope")
    with pytest.raises(ValueError, match="q"):
        expected_max_order_statistics([0.1, 0.2], 0)
    X, y = _binary_problem()
    ev, _ = _evaluator(X, y, [60])
    with pytest.raises(ValueError, match="budget"):
        UniformNaive().select(ev, 0)
    # every fixed-size strategy refuses a budget that cannot pay for S examples of one
    # feature (of one feature per arm, for a bandit pulling several)
    with pytest.raises(ValueError, match="cannot cover S=50 examples"):
        Tasting1Q(n_examples=50, random_state=0).select(ev, 49)
    with pytest.raises(ValueError, match="cannot cover S=50 examples"):
        UniformQ1(n_examples=50, random_state=0).select(ev, 49)
    ev2, _ = _evaluator(X, y, [30, 30])
    with pytest.raises(ValueError, match="cannot cover 2 arms x S=50"):
        UCB(k=2, n_examples=50, random_state=0).select(ev2, 99)
    assert UCB(k=2, n_examples=50, random_state=0).select(ev2, 100).info["Q"] == 2
    with pytest.raises(ValueError, match="feature_ids"):
        ev.block([60], [0])
    with pytest.raises(ValueError, match="sample_ids"):
        ev.block([0], [-1])
    with pytest.raises(ValueError, match="partition"):
        EdgeEvaluator(MatrixSource(X), partition=Partition.from_sizes([10]))
    with pytest.raises(ValueError, match="budget"):
        laminating_schedule(10, 64, q0=64, s0=1)
    with pytest.raises(ValueError, match="families"):
        SampledBoostedClassifier(loss="discrete", n_estimators=2).fit(X.T, y, families=[30, 31])


# --------------------------------------------------------------------------------------------
# cost accounting


def test_cost_accounting_exact():
    X, y = _binary_problem(n=400, f=60)
    ev, _ = _evaluator(X, y, [20, 20, 20])
    budget = 5000

    sel = Full().select(ev, budget)
    assert sel.cost == 60 * 400 == ev.cost

    s = UniformNaive(n_examples=100, random_state=0)
    c0 = ev.cost
    sel = s.select(ev, budget)
    assert sel.cost == (budget // 100) * 100 == ev.cost - c0

    lam = Laminating(random_state=0)
    sched = laminating_schedule(budget, 60)
    sel = lam.select(ev, budget)
    assert sel.cost == sum(q * s for q, s in sched) <= budget
    assert [q for q, _ in sched] == [32, 16, 8, 4, 2, 1]
    assert all(s2 == 2 * s1 for (_, s1), (_, s2) in zip(sched, sched[1:], strict=False))

    ucb = UCB(k=3, n_examples=50, random_state=0)
    sel = ucb.select(ev, 1500)  # Q = 30 split 10/10/10
    assert sel.cost == 30 * 50

    tasting = Tasting1Q(n_tasted=5, n_taste_examples=50, n_examples=50, random_state=0)
    first = tasting.select(ev, 500)
    second = tasting.select(ev, 500)
    assert first.cost == 3 * 5 * 400 + 10 * 50  # one-off tasting of R K features on N examples
    assert second.cost == 10 * 50

    for cls in (MAS1Q, MASQ1):
        m = cls(random_state=0)
        for _ in range(3):
            c0 = ev.cost
            sel = m.select(ev, budget)
            assert sel.cost == ev.cost - c0
            assert sel.cost <= budget
            assert sel.info["Q"] * sel.info["S"] <= budget - int(0.1 * budget) + budget // 100


def test_cached_block_costs_nothing():
    X, y = _binary_problem()
    ev, _ = _evaluator(X, y, [60])
    ids = np.arange(50)
    b = ev.cached_block(X[:5][:, ids], np.arange(5), ids)
    assert ev.cost == 0 and b.edges.shape == (5,)


@pytest.mark.parametrize("loss", ["discrete", "gentle", "real"])
def test_repeated_draws_are_evaluated_once_with_the_edges_of_every_draw(loss):
    X, y = _binary_problem(n=300, f=40)
    src, calls = _counting_source(X)
    ev = EdgeEvaluator(src)
    ev.set_problem(problem_from_loss(make_loss(loss, y)))
    draws = ev.sample_examples(3000, np.random.default_rng(0))
    fids = np.arange(40)
    b = ev.block(fids, draws)
    assert ev.cost == 40 * 3000
    if loss != "real":  # the real criterion's smoothing depends on S: every draw is searched
        assert calls[-1] == 40 * np.unique(draws).size
    # reference: the block expanded draw by draw (no aggregation)
    ref = ev.cached_block(X[:, draws], fids, draws)
    np.testing.assert_allclose(b.edges, ref.edges, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.search.threshold, ref.search.threshold)
    np.testing.assert_allclose(b.search.left_value, ref.search.left_value, rtol=1e-9)
    assert b.sample_ids.size == 3000


def test_booster_cost_matches_evaluator_and_callable_source():
    X, y = _binary_problem(n=300, f=40)
    src, calls = _counting_source(X, families=[20, 20])
    m = SampledBoostedClassifier(sampler="laminating", loss="gentle", n_estimators=6, budget=2000,
                                 random_state=1).fit_source(src, y)
    # the booster also evaluates the chosen feature on all N examples for the refit; repeated
    # draws are evaluated once (the cost counts every draw)
    assert sum(calls) <= int(m.cost_.sum()) + m.refit_cost_
    assert m.refit_cost_ == 6 * 300
    assert np.all(m.cost_ <= 2000)


# --------------------------------------------------------------------------------------------
# decision logic


def test_laminating_finds_the_far_better_feature():
    rng = np.random.default_rng(3)
    n, f = 2000, 256
    X = rng.standard_normal((f, n)).astype(np.float32)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    good = 137
    flip = rng.random(n) < 0.1
    X[good] = np.where(flip, -y, y) + 0.1 * rng.standard_normal(n)  # edge ~0.8, others ~0.05
    ev, _ = _evaluator(X, y, [f])
    hits = 0
    for seed in range(20):
        lam = Laminating(n_features=f, random_state=seed)
        hits += lam.select(ev, 20_000).learner.feature == good
    assert hits >= 19


def test_tasting_estimate_matches_monte_carlo():
    rng = np.random.default_rng(0)
    edges = rng.beta(2, 8, size=25)
    for q in (1, 3, 10, 40):
        draws = rng.choice(edges, size=(100_000, q), replace=True)
        mc = draws.max(axis=1).mean()
        assert expected_max_order_statistics(edges, q) == pytest.approx(mc, abs=2e-3)
    assert expected_max_order_statistics(edges, 1) == pytest.approx(edges.mean())


@pytest.mark.slow
def test_mas_expectation_matches_simulation():
    rng = np.random.default_rng(1)
    mix = GaussianMixture1D([0.8, 0.2], [0.05, 0.2], [0.02**2, 0.05**2])
    for q, s in ((1, 100), (20, 100), (50, 400), (8, 16)):
        sigma2 = 1.0 / s
        true = mix.sample(200_000 * q, rng).reshape(-1, q)
        noisy = true + rng.normal(0.0, np.sqrt(sigma2), size=true.shape)
        mc = true[np.arange(true.shape[0]), np.argmax(noisy, axis=1)].mean()
        assert expected_selected_edge(mix, [q], sigma2) == pytest.approx(mc, abs=1.5e-3)
    # two families, Q.1 allocation
    m2 = GaussianMixture1D([1.0], [0.15], [0.03**2])
    counts, sigma2 = np.array([6, 3]), 1.0 / 50
    t1 = mix.sample(100_000 * 6, rng).reshape(-1, 6)
    t2 = m2.sample(100_000 * 3, rng).reshape(-1, 3)
    true = np.hstack([t1, t2])
    noisy = true + rng.normal(0.0, np.sqrt(sigma2), size=true.shape)
    mc = true[np.arange(true.shape[0]), np.argmax(noisy, axis=1)].mean()
    assert expected_selected_edge([mix, m2], counts, sigma2) == pytest.approx(mc, abs=1.5e-3)


def test_mas_tradeoff_and_allocation_prefer_the_better_family():
    weak = GaussianMixture1D([1.0], [0.05], [0.01**2])
    strong = GaussianMixture1D([1.0], [0.10], [0.04**2])
    counts, _ = allocate_mas([weak, strong], 40, np.array([100, 100]), 1.0 / 1000)
    assert counts.sum() == 40 and counts[1] > counts[0]
    # more examples beat more features when the edges are close together and noise is large
    narrow = GaussianMixture1D([1.0], [0.1], [0.001**2])
    assert expected_selected_edge(narrow, [10], 1 / 1000) > expected_selected_edge(
        narrow, [1000], 1 / 10)


def test_fit_mixture_recovers_parameters_after_deconvolution():
    rng = np.random.default_rng(2)
    true = GaussianMixture1D([0.7, 0.3], [0.05, 0.3], [0.02**2, 0.03**2])
    x = true.sample(20_000, rng) + rng.normal(0, 0.05, 20_000)
    fit = fit_mixture(x, 2, noise_var=0.05**2)
    order = np.argsort(fit.means)
    np.testing.assert_allclose(fit.means[order], [0.05, 0.3], atol=0.01)
    np.testing.assert_allclose(fit.weights[order], [0.7, 0.3], atol=0.03)
    np.testing.assert_allclose(np.sqrt(fit.variances[order]), [0.02, 0.03], atol=0.01)


def test_bandit_rules():
    assert reward(0.0) == 0.0
    assert reward(0.6) == pytest.approx(1 - np.sqrt(1 - 0.36))
    eg = EpsilonGreedy(c=2.0, d=0.5)
    assert eg.epsilon(1, 4) == 1.0
    assert eg.epsilon(1000, 4) == pytest.approx(2 * 4 / (0.25 * 1000))
    X, y = _binary_problem(n=300, f=60)
    ev, _ = _evaluator(X, y, [10, 10, 10, 30])
    ucb = UCB(n_examples=30, random_state=0)
    arms = [ucb.select(ev, 300).info["arms"][0] for _ in range(4)]
    assert sorted(arms) == [0, 1, 2, 3]  # every arm once before exploiting
    # the family holding features 3 and 17 (the informative ones) is pulled most afterwards
    for _ in range(30):
        ucb.select(ev, 300)
    assert int(np.argmax(ucb.pulls_)) == 0
    ex = Exp3P(random_state=0)
    ex.start(ev, 300)
    p = ex._probs()
    assert p.sum() == pytest.approx(1.0) and np.all(p >= ex.lam / 4 - 1e-12)


# --------------------------------------------------------------------------------------------
# every sampler x every loss, determinism


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_every_loss_deterministic(name):
    rng = np.random.default_rng(5)
    n, f = 240, 48
    X = rng.standard_normal((n, f)).astype(np.float32)
    labels = (X[:, 3] > 0).astype(int) + 2 * (X[:, 20] > 0.5)
    fam = [8, 16, 24]
    for loss in ("mh", "discrete", "real", "gentle", "logit"):
        yy = labels if loss == "mh" else np.where(labels % 2 == 1, 1, -1)
        kw = dict(sampler=name, loss=loss, n_estimators=4, budget=1500)
        a = SampledBoostedClassifier(**kw, random_state=7).fit(X, yy, families=fam)
        b = SampledBoostedClassifier(**kw, random_state=7).fit(X, yy, families=fam)
        assert [e.to_dict() for e in a.estimators_] == [e.to_dict() for e in b.estimators_]
        np.testing.assert_array_equal(a.cost_, b.cost_)
        assert np.all(np.diff(a.train_loss_) <= 1e-12)  # refitted leaves never increase the loss
        assert a.decision_function(X).shape[0] == n


def test_sampled_booster_learns():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 200)).astype(np.float32)
    y = (X[:, 5] + X[:, 50] > 0).astype(int)
    m = SampledBoostedClassifier(sampler="laminating", loss="discrete", n_estimators=40,
                                 random_state=0).fit(X, y, families=[100, 100])
    assert m.score(X, y) > 0.9
    assert m.train_loss_[-1] < 0.5


@pytest.mark.parametrize("loss", ["discrete", "mh"])
def test_sampled_booster_predicts_as_every_boosted_classifier(loss):
    """The sampled booster shares the matrix-fitted boosters' prediction: probabilities,
    staged scores and margins agree with its decision function, and the same trees summed by
    hand give the same scores."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 40)).astype(np.float32)
    noisy = X[:, 5] + X[:, 9] + 0.5 * rng.standard_normal(300)  # no single stump separates it
    y = (noisy > 0).astype(int) + (loss == "mh") * (X[:, 7] > 0.5).astype(int)
    m = SampledBoostedClassifier(sampler="laminating", loss=loss, n_estimators=8,
                                 random_state=0).fit(X, y, families=[20, 20])
    f = m.decision_function(X)
    by_hand = sum(t.leaves[t.apply_matrix(X.T)] for t in m.estimators_)
    np.testing.assert_allclose(f, by_hand, rtol=1e-12)
    staged = list(m.staged_decision_function(X))
    assert len(staged) == len(m.estimators_) == 8 == len(list(m.staged_predict(X)))
    np.testing.assert_array_equal(staged[-1], f)
    p = m.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_array_equal(m.classes_[p.argmax(axis=1)], m.predict(X))
    assert list(m.staged_score(X, y))[-1] == m.score(X, y) > 0.7
    margins = m.margins_(X, y)
    assert margins.shape == (300,) and np.all(np.abs(margins) <= 1 + 1e-12)
    assert np.array_equal(margins > 0, m.predict(X) == y)


@pytest.mark.parametrize("n", [1, 7, 40, 41, 500])
def test_weighted_draws_are_the_sample_and_its_distinct_draws(n):
    from vjboost.boost.sampling.examples import distinct_draws, weighted_draws

    w = np.random.default_rng(1).random(40) ** 3
    w[::7] = 0.0
    ids, distinct, counts = weighted_draws(w, n, np.random.default_rng(2))
    # the same random numbers as weighted_sample, and distinct_draws of its result
    np.testing.assert_array_equal(ids, weighted_sample(w, n, np.random.default_rng(2)))
    ref_ids, ref_counts = distinct_draws(ids)
    np.testing.assert_array_equal(distinct, ref_ids)
    if ref_counts is None:
        assert counts is None
    else:
        np.testing.assert_array_equal(counts, ref_counts)
        assert counts.dtype == np.float64 and counts.sum() == n


@given(edges=st.lists(st.sampled_from([0.0, -0.0, 0.1, 0.25, 0.5, 1.0, np.nan, -np.inf, np.inf]),
                      min_size=1, max_size=40))
def test_better_half_is_the_stable_sort_prefix(edges):
    # Laminating keeps the first ceil(Q/2) positions of a stable descending sort of the edges
    # (non-finite ones last); the selection must pick exactly that set
    e = np.asarray(edges, dtype=np.float64)
    ref = np.zeros(e.size, dtype=bool)
    ref[np.argsort(-np.where(np.isfinite(e), e, -np.inf), kind="stable")[:-(-e.size // 2)]] = True
    assert better_half(e).tolist() == ref.tolist()
