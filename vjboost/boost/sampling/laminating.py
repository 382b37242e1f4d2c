"""Laminating: successive halving of features while the number of examples doubles.

Start with ``Q0`` features and ``S0`` examples drawn from the weights; evaluate the block, keep the
better half of the features (by measured edge), draw ``2 S`` fresh examples, and repeat until one
feature remains; its stump on the last, largest sample is the chosen learner. Every step's block
is paid in full, so a run costs ``sum_t Q_t S_t``; with ``Q0 = 2^L`` that is ``(L + 1) Q0 S0``.

By default ``Q0`` is the largest power of two (at most the pool size) for which
``S0 = budget // ((L + 1) Q0)`` is at least ``s_min``; either can be fixed instead.

:class:`TastingLaminating` draws the ``Q0`` initial features family by family, with the counts of
Tasting Q.1 (:func:`vjboost.boost.sampling.tasting.allocate_tasting`) instead of uniformly.

:class:`StratifiedLaminating` halves within each family of the partition, so that every family
keeps a champion until the last, largest sample, where the champions compete (a 256-way
categorical split fits a sample of a few dozen draws almost perfectly, so in plain Laminating
code families survive the small early samples on inflated edges, see ``docs/sampling.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost.boost.sampling.base import Sampler, _draw_per_family, check_count, draw_features
from vjboost.boost.sampling.evaluator import EdgeEvaluator
from vjboost.boost.sampling.tasting import TastingQ1, allocate_tasting

__all__ = [
    "Laminating",
    "StratifiedLaminating",
    "TastingLaminating",
    "better_half",
    "laminating_schedule",
    "proportional_counts",
    "stratified_schedule",
]


def laminating_schedule(
    budget: int, n_features: int, *, q0: int | None = None, s0: int | None = None,
    s_min: int = 8,
) -> list[tuple[int, int]]:
    """The ``(Q_t, S_t)`` of every step (``Q_{t+1} = ceil(Q_t / 2)``, ``S_{t+1} = 2 S_t``).

    Raises ``ValueError`` when no schedule fits ``budget``.

    Without ``q0``, the largest power of two ``Q0 <= n_features`` whose schedule pays
    ``S0 >= s_min`` (or the given ``s0``) within ``budget`` is chosen; without ``s0``, ``S0`` is
    the largest the budget pays.

    Parameters
    ----------
    budget : int
        Feature evaluations of all the steps together, ``sum_t Q_t S_t <= budget``.
    n_features : int
        Features of the pool (``Q0`` is capped by it).
    q0 : int, optional
        Features of the first step.
    s0 : int, optional
        Examples of the first step.
    s_min : int, default 8
        Smallest ``S0`` when ``s0`` is not given.

    Returns
    -------
    list of (int, int)
        ``(Q_t, S_t)`` from the first step to the last (``Q = 1``).

    Examples
    --------
    >>> laminating_schedule(1000, 64, q0=4, s0=16)
    [(4, 16), (2, 32), (1, 64)]
    """
    n_features = check_count(n_features, "n_features")
    return [(int(q[0]), s) for q, s in stratified_schedule(budget, [n_features], q0=q0, s0=s0,
                                                           s_min=s_min)]


def better_half(edges: np.ndarray) -> np.ndarray:
    """The positions kept by a Laminating step: the ``ceil(Q / 2)`` largest edges, ties going
    to the earlier position (non-finite edges count as ``-inf``), as a boolean mask.

    The same set as the first ``ceil(Q / 2)`` entries of a stable descending sort, found by a
    selection in O(Q) instead of a sort.

    Parameters
    ----------
    edges : ndarray of shape (Q,), float64
        The block's edges.

    Returns
    -------
    ndarray of bool, shape (Q,)

    Examples
    --------
    >>> better_half(np.array([0.1, 0.5, 0.5, np.nan, 0.5])).tolist()
    [False, True, True, False, True]
    """
    neg = -np.where(np.isfinite(edges), edges, -np.inf)
    keep = -(-neg.size // 2)
    kth = np.partition(neg, keep - 1)[keep - 1]
    mask = neg < kth
    ties = np.flatnonzero(neg == kth)
    mask[ties[: keep - int(np.count_nonzero(mask))]] = True
    return mask


class Laminating(Sampler):
    """Laminating (Dubout & Fleuret): halve features, double examples, until one remains.

    Parameters
    ----------
    n_features : int, optional
        ``Q0`` (default: see the module docstring).
    n_examples : int, optional
        ``S0``.
    s_min : int, default=8
        Smallest ``S0`` of the automatic schedule.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sel = Laminating(random_state=0).select(ev, 400)
    >>> sel.info, sel.cost  # (Q, S) = (4, 33), (2, 66), (1, 132): 3 x 132 evaluations
    ({'Q0': 4, 'S0': 33, 'steps': 3}, 396)
    >>> sel.learner.feature
    4
    """

    name = "laminating"

    def __init__(
        self, n_features: int | None = None, *, n_examples: int | None = None, s_min: int = 8,
        random_state: Any = None,
    ) -> None:
        super().__init__(random_state)
        self.n_features = None if n_features is None else check_count(n_features, "n_features")
        self.n_examples = None if n_examples is None else check_count(n_examples, "n_examples")
        self.s_min = check_count(s_min, "s_min")

    def _initial(self, evaluator: EdgeEvaluator, q0: int) -> np.ndarray:
        return draw_features(np.arange(evaluator.n_features), q0, self.rng_)

    def _select(self, evaluator, budget):
        sched = laminating_schedule(
            budget, evaluator.n_features, q0=self.n_features, s0=self.n_examples,
            s_min=self.s_min,
        )
        fids = self._initial(evaluator, sched[0][0])
        b = None
        for _q, s in sched:
            b = evaluator.block(fids, evaluator.sample_examples(s, self.rng_))
            if fids.size == 1:
                break
            fids = fids[better_half(b.edges)]
        assert b is not None
        learner, _, _ = self._best_of([b])
        return learner, {"Q0": sched[0][0], "S0": sched[0][1], "steps": len(sched)}


class TastingLaminating(Laminating):
    """Laminating whose initial ``Q0`` features follow Tasting Q.1's per-family counts.

    Parameters
    ----------
    n_tasted, n_taste_examples
        As in :class:`vjboost.boost.sampling.tasting.TastingQ1`.
    n_features, n_examples, s_min
        As in :class:`Laminating`.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sampler = TastingLaminating(n_tasted=2, n_taste_examples=50, random_state=0)
    >>> first, second = sampler.select(ev, 400), sampler.select(ev, 400)
    >>> first.info, first.cost  # the 4 tasted features on all 200 examples, paid once
    ({'Q0': 4, 'S0': 33, 'steps': 3}, 1196)
    >>> second.cost, second.learner.feature
    (396, 4)
    """

    name = "tasting_laminating"

    def __init__(
        self, n_tasted: int = 32, *, n_taste_examples: int = 1000,
        n_features: int | None = None, n_examples: int | None = None, s_min: int = 8,
        random_state: Any = None,
    ) -> None:
        super().__init__(n_features, n_examples=n_examples, s_min=s_min,
                         random_state=random_state)
        self.n_tasted = check_count(n_tasted, "n_tasted")
        self.n_taste_examples = check_count(n_taste_examples, "n_taste_examples")

    def _setup(self, evaluator, budget):
        self._taster = TastingQ1(self.n_tasted, n_taste_examples=self.n_taste_examples,
                                 random_state=self.rng_)
        self._taster.start(evaluator, budget)

    def _initial(self, evaluator, q0):
        tasted = self._taster._taste(evaluator)
        part = evaluator.partition
        counts = allocate_tasting(tasted, q0, part.sizes)
        return _draw_per_family(part, counts=counts, rng=self.rng_)


# --------------------------------------------------------------------------------------------
# family-stratified Laminating


def proportional_counts(q0: int, sizes: Any) -> np.ndarray:
    """``q0`` initial features shared out over families in proportion to their sizes.

    Largest remainders; every family gets at least one feature and at most its size (so the
    total is ``max(q0, K)`` capped by the pool size).

    Parameters
    ----------
    q0 : int
        Features wanted in all.
    sizes : array-like of shape (K,), int
        Features of each family (each >= 1).

    Returns
    -------
    ndarray of shape (K,), int64

    Examples
    --------
    >>> proportional_counts(8, [90, 10]).tolist()
    [7, 1]
    >>> proportional_counts(1, [5, 5, 5]).tolist()
    [1, 1, 1]
    """
    q0 = check_count(q0, "q0")
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.ndim != 1 or sizes.size == 0 or sizes.min() < 1:
        raise ValueError("sizes: expected a non-empty 1-D array of family sizes >= 1")
    q0 = min(q0, int(sizes.sum()))
    share = q0 * sizes / sizes.sum()
    counts = np.floor(share).astype(np.int64)
    # largest remainders first, ties to the earlier family (a stable sort)
    order = np.argsort(-(share - counts), kind="stable")
    counts[order[: q0 - int(counts.sum())]] += 1
    return np.clip(counts, 1, sizes)


def stratified_schedule(
    budget: int, sizes: Any, *, q0: int | None = None, s0: int | None = None, s_min: int = 8,
) -> list[tuple[np.ndarray, int]]:
    """The steps of :class:`StratifiedLaminating`: per-family features and the sample size.

    Family ``k`` starts with ``proportional_counts(Q0, sizes)[k]`` features and halves them
    (rounded up) at every step while it has more than one; a family down to its champion waits
    (is not evaluated) until the last step, where the ``K`` champions are evaluated together.
    Step ``t`` draws ``S_t = S0 * 2^t`` examples; the cost is ``sum_t (sum_k Q_{k,t}) S_t``.
    With one family this is :func:`laminating_schedule`'s schedule.

    ``Q0``/``S0`` are chosen as in :func:`laminating_schedule`: without ``q0``, the largest
    power of two (at most the pool size) whose schedule pays ``S0 >= s_min`` (or the given
    ``s0``) within ``budget``; without ``s0``, the largest ``S0`` the budget pays.

    Parameters
    ----------
    sizes : array-like of shape (K,), int
        Features of each family.
    budget, q0, s0, s_min
        As for :func:`laminating_schedule` (``q0`` counts all the families together).

    Returns
    -------
    list of (ndarray of shape (K,), int)
        ``(Q_t, S_t)`` per step, ``Q_t[k]`` the features of family ``k`` evaluated at step
        ``t`` (0 while it waits); the last step has ``Q_t = 1`` for every family.

    Examples
    --------
    >>> [(q.tolist(), s) for q, s in stratified_schedule(1000, [48, 16], q0=8, s0=4)]
    [([6, 2], 4), ([3, 0], 8), ([2, 0], 16), ([1, 1], 32)]
    """
    budget = check_count(budget, "budget")
    s_min = check_count(s_min, "s_min")
    sizes = np.asarray(sizes, dtype=np.int64)
    n_features = int(sizes.sum())

    def steps(q: int) -> list[np.ndarray]:
        cur = proportional_counts(q, sizes)
        out = []
        while (cur > 1).any():
            out.append(np.where(cur > 1, cur, 0))
            cur = np.where(cur > 1, -(-cur // 2), cur)
        out.append(np.ones_like(cur))
        return out

    def unit(qs: list[np.ndarray]) -> int:
        return sum(int(q.sum()) << t for t, q in enumerate(qs))

    def with_s(qs: list[np.ndarray], s: int) -> list[tuple[np.ndarray, int]]:
        return [(q, s << t) for t, q in enumerate(qs)]

    if q0 is not None:
        qs = steps(check_count(q0, "q0"))
        if s0 is not None:
            s0 = check_count(s0, "s0")
            if unit(qs) * s0 > budget:
                raise ValueError(f"budget: Q0={q0}, S0={s0} costs {unit(qs) * s0} evaluations "
                                 f"> {budget}")
            return with_s(qs, s0)
        if budget // unit(qs) < 1:
            raise ValueError(f"budget: {budget} cannot pay Laminating with Q0={q0} "
                             f"({unit(qs)} per S0)")
        return with_s(qs, budget // unit(qs))
    if s0 is not None:
        s0 = check_count(s0, "s0")
    best = None
    q = 1
    while q <= n_features:
        qs = steps(q)
        s = s0 if s0 is not None else budget // unit(qs)
        if s >= (1 if s0 is not None else s_min) and unit(qs) * s <= budget:
            best = with_s(qs, s)
        elif best is not None:
            break
        q *= 2
    if best is None:
        qs = steps(1)
        if s0 is None and budget >= unit(qs):
            return with_s(qs, budget // unit(qs))  # one feature per family, every draw paid
        raise ValueError(f"budget: {budget} evaluations cannot pay Laminating with S0={s0} over "
                         f"{sizes.size} famil{'y' if sizes.size == 1 else 'ies'}")
    return best


class StratifiedLaminating(Laminating):
    """Laminating within each family: every family's champion reaches the last, largest sample.

    The ``Q0`` initial features are shared out over the families of the evaluator's partition
    in proportion to their sizes (:func:`proportional_counts`, at least one each). Every step
    draws one fresh sample for all the families (twice the previous one) and keeps the better
    half of each family that still has more than one feature; at the last step the champions
    of all the families are evaluated on the largest sample, a sample none of them was chosen
    on, and the best one's split is the learner. Budget, determinism and use per tree node as
    :class:`Laminating` (:func:`stratified_schedule`).

    Parameters
    ----------
    n_features : int, optional
        ``Q0`` (all families together).
    n_examples : int, optional
        ``S0``.
    s_min : int, default=8
        Smallest ``S0`` of the automatic schedule.
    random_state : None, int or Generator

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sel = StratifiedLaminating(random_state=0).select(ev, 2000)
    >>> sel.learner.feature, sel.info["family"], sel.cost <= 2000
    (4, 1, True)
    """

    name = "stratified_laminating"

    def _select(self, evaluator, budget):
        part = evaluator.partition
        sched = stratified_schedule(
            budget, part.sizes, q0=self.n_features, s0=self.n_examples, s_min=self.s_min,
        )
        # a family starting with one feature waits from the first step on (its count shows 0)
        alive = [draw_features(part.members[k], int(q), self.rng_)
                 for k, q in enumerate(np.maximum(sched[0][0], 1))]
        b = None
        for t, (q, s) in enumerate(sched):
            active = np.flatnonzero(q)
            fids = np.concatenate([alive[k] for k in active])
            b = evaluator.block(fids, evaluator.sample_examples(s, self.rng_))
            if t == len(sched) - 1:
                break  # the champions' step: every family's, on the largest sample
            start = 0
            for k in active:
                n = alive[k].size
                alive[k] = alive[k][better_half(b.edges[start:start + n])]
                start += n
        assert b is not None
        learner, _, pos = self._best_of([b])
        champions = {part.names[k]: float(e) for k, e in enumerate(b.edges)}
        q0 = int(np.maximum(sched[0][0], 1).sum())
        return learner, {"Q0": q0, "S0": sched[0][1], "steps": len(sched),
                         "family": int(pos), "champions": champions}
