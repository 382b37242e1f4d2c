"""Family-stratified Laminating: its schedule and its choices against brute-force references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.boost.losses import make_loss
from vjboost.boost.sampling import (
    SAMPLERS,
    EdgeEvaluator,
    MatrixSource,
    Partition,
    SampledBoostedClassifier,
    StratifiedLaminating,
    laminating_schedule,
    make_sampler,
    problem_from_loss,
    stratified_schedule,
)
from vjboost.boost.sampling.laminating import proportional_counts

# --------------------------------------------------------------------------------------------
# references


def _ref_counts(q0, sizes):
    """Largest-remainder shares written out one family at a time, then at least 1, at most size."""
    total = sum(sizes)
    q0 = min(q0, total)
    exact = [q0 * s / total for s in sizes]
    counts = [math.floor(e) for e in exact]
    left = q0 - sum(counts)
    rems = sorted(range(len(sizes)), key=lambda k: (-(exact[k] - counts[k]), k))
    for k in rems[:left]:
        counts[k] += 1
    return [min(max(c, 1), s) for c, s in zip(counts, sizes, strict=True)]


def _ref_steps(counts):
    """Per-family halving written as a plain simulation: evaluated counts per step."""
    cur = list(counts)
    steps = []
    while any(c > 1 for c in cur):
        steps.append([c if c > 1 else 0 for c in cur])
        cur = [(c + 1) // 2 if c > 1 else c for c in cur]
    steps.append([1] * len(cur))
    return steps


def _ref_schedule(budget, sizes, s_min=8):
    """The automatic schedule by trying every power of two and keeping the last that pays."""
    best = None
    q = 1
    while q <= sum(sizes):
        steps = _ref_steps(_ref_counts(q, sizes))
        unit = sum(sum(st_) * 2**t for t, st_ in enumerate(steps))
        s0 = budget // unit
        if s0 >= s_min:
            best = [(st_, s0 * 2**t) for t, st_ in enumerate(steps)]
        elif best is not None:
            break
        q *= 2
    return best


def _edge_discrete(values, y):
    """Best stump edge of one feature on equally weighted draws, by trying every threshold."""
    best = 0.0
    for thr in np.unique(values):
        h = np.where(values < thr, -1.0, 1.0)
        best = max(best, abs(float(np.mean(y * h))))
    return best


# --------------------------------------------------------------------------------------------
# schedule


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=5), st.integers(1, 2000))
def test_proportional_counts_match_reference(sizes, q0):
    got = proportional_counts(q0, sizes)
    assert got.tolist() == _ref_counts(q0, sizes)
    assert np.all(got >= 1) and np.all(got <= np.asarray(sizes))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 3000), min_size=1, max_size=5), st.integers(1_000, 3_000_000))
def test_schedule_matches_brute_force(sizes, budget):
    ref = _ref_schedule(budget, sizes)
    if ref is None:
        return  # the fallback (one feature per family) is covered below
    got = stratified_schedule(budget, sizes)
    assert [(q.tolist(), s) for q, s in got] == ref
    cost = sum(int(q.sum()) * s for q, s in got)
    assert cost <= budget
    # S0 is the largest the budget pays for this Q0
    assert cost // got[0][1] * (got[0][1] + 1) > budget


def test_schedule_one_family_is_laminating():
    for budget, n in [(10_000, 60), (123_456, 1000), (5_000_000, 70_000)]:
        strat = [(int(q[0]), s) for q, s in stratified_schedule(budget, [n])]
        assert strat == laminating_schedule(budget, n)


def test_schedule_waiting_family_and_errors():
    sched = stratified_schedule(10_000, [1, 64], q0=32, s0=10)
    # the one-feature family waits (0) until the champions' step
    assert [q.tolist() for q, _ in sched] == [[0, 32], [0, 16], [0, 8], [0, 4], [0, 2], [1, 1]]
    assert [s for _, s in sched] == [10, 20, 40, 80, 160, 320]
    with pytest.raises(ValueError, match="budget"):
        stratified_schedule(100, [10, 10], q0=8, s0=100)
    with pytest.raises(ValueError, match="sizes"):
        proportional_counts(4, [3, 0])
    # a budget too small for S0 >= s_min still pays one feature per family
    assert [(q.tolist(), s) for q, s in stratified_schedule(20, [5, 5])] == [([1, 1], 10)]


# --------------------------------------------------------------------------------------------
# choices


class _Recorder:
    """Evaluator proxy keeping every block."""

    def __init__(self, ev):
        self._ev = ev
        self.blocks = []

    def __getattr__(self, name):
        return getattr(self._ev, name)

    def block(self, feature_ids, sample_ids, **kw):
        b = self._ev.block(feature_ids, sample_ids, **kw)
        self.blocks.append((np.array(feature_ids), np.array(sample_ids), b))
        return b


def _problem(n=300, sizes=(40, 12, 1), seed=0):
    rng = np.random.default_rng(seed)
    f = sum(sizes)
    X = rng.standard_normal((f, n)).astype(np.float32)
    y = np.where(X[45] + 0.6 * X[3] + 0.4 * rng.standard_normal(n) > 0, 1.0, -1.0)
    ev = EdgeEvaluator(MatrixSource(X), partition=Partition.from_sizes(list(sizes)))
    ev.set_problem(problem_from_loss(make_loss("discrete", y)))
    return X, y, ev


@pytest.mark.parametrize("budget", [3_000, 40_000])
def test_choices_follow_the_brute_force_halving(budget):
    X, y, ev = _problem()
    part = ev.partition
    rec = _Recorder(ev)
    c0 = ev.cost
    sel = StratifiedLaminating(random_state=3).select(rec, budget)
    sched = stratified_schedule(budget, part.sizes)
    assert sel.cost == ev.cost - c0 == sum(int(q.sum()) * s for q, s in sched) <= budget
    assert len(rec.blocks) == len(sched)
    survivors: dict[int, list[int]] = {}  # per family, what its last halving kept
    for t, ((fids, sids, b), (q, s)) in enumerate(zip(rec.blocks, sched, strict=True)):
        fam = part.family_of[fids]
        assert sids.size == s
        assert np.bincount(fam, minlength=part.n_families).tolist() == q.tolist()
        # the block's edges against a brute-force stump search on its draws
        ref = np.array([_edge_discrete(X[f, sids], y[sids]) for f in fids])
        np.testing.assert_allclose(b.edges, ref, atol=1e-9)
        for k in np.flatnonzero(q):
            got = sorted(int(f) for f in fids[fam == k])
            if k in survivors:
                assert got == sorted(survivors[k])
            else:
                assert set(got) <= set(part.members[k].tolist())
        if t == len(sched) - 1:
            break
        for k in np.flatnonzero(q):
            e, ids = ref[fam == k], fids[fam == k]
            order = sorted(range(ids.size), key=lambda i: (-e[i], i))  # ties: earlier first
            survivors[k] = [int(ids[i]) for i in order[: -(-ids.size // 2)]]
    fids, sids, b = rec.blocks[-1]
    assert part.family_of[fids].tolist() == list(range(part.n_families))
    ref = [_edge_discrete(X[f, sids], y[sids]) for f in fids]
    assert sel.learner.feature == fids[int(np.argmax(ref))]
    assert sel.info["family"] == int(part.family_of[sel.learner.feature])
    assert set(sel.info["champions"]) == set(part.names)


def test_every_family_reaches_the_last_step_and_the_strong_one_wins():
    # family 2's single feature is the label itself: plain Laminating would draw it with
    # probability Q0 / 53; the stratified one always evaluates it at the end
    X, y, ev = _problem()
    X[52] = y
    ev = EdgeEvaluator(MatrixSource(X), partition=Partition.from_sizes([40, 12, 1]))
    ev.set_problem(problem_from_loss(make_loss("discrete", y)))
    for seed in range(5):
        sel = StratifiedLaminating(random_state=seed).select(ev, 2_000)
        assert sel.learner.feature == 52 and sel.learner.edge == pytest.approx(1.0)


def test_deterministic_and_registered():
    _, _, ev = _problem()
    a = [StratifiedLaminating(random_state=7).select(ev, 5_000).learner.feature for _ in range(3)]
    s = StratifiedLaminating(random_state=7)
    b = [s.select(ev, 5_000).learner.feature]
    assert a[0] == a[1] == a[2] == b[0]
    assert "stratified_laminating" in SAMPLERS
    assert isinstance(make_sampler("stratified_laminating"), StratifiedLaminating)


def test_trees_node_by_node_and_cost():
    X, y, _ = _problem(n=400)
    m = SampledBoostedClassifier(sampler="stratified_laminating", loss="gentle",
                                 weak_learner="tree", max_depth=2, n_estimators=4,
                                 budget=6_000, random_state=0)
    m.fit_feature_major(X, (y > 0).astype(int), families=[40, 12, 1])
    assert len(m.estimators_) == 4
    assert all(t.n_nodes >= 1 for t in m.estimators_)
    # each node pays at most the budget: a depth-2 tree has at most 3 nodes
    assert np.all(np.diff(np.concatenate([[0], m.cost_])) <= 3 * 6_000)
    m2 = SampledBoostedClassifier(sampler="stratified_laminating", loss="gentle",
                                  weak_learner="tree", max_depth=2, n_estimators=4,
                                  budget=6_000, random_state=0)
    m2.fit_feature_major(X, (y > 0).astype(int), families=[40, 12, 1])
    assert [t.to_dict() for t in m.estimators_] == [t.to_dict() for t in m2.estimators_]
