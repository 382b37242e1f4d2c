"""Laminating: successive halving of features while the number of examples doubles.

Start with ``Q0`` features and ``S0`` examples drawn from the weights; evaluate the block, keep the
better half of the features (by measured edge), draw ``2 S`` fresh examples, and repeat until one
feature remains; its stump on the last, largest sample is the chosen learner. Every step's block
is paid in full, so a run costs ``sum_t Q_t S_t``; with ``Q0 = 2^L`` that is ``(L + 1) Q0 S0``.

By default ``Q0`` is the largest power of two (at most the pool size) for which
``S0 = budget // ((L + 1) Q0)`` is at least ``s_min``; either can be fixed instead.

:class:`TastingLaminating` draws the ``Q0`` initial features family by family, with the counts of
Tasting Q.1 (:func:`vjboost.boost.sampling.tasting.allocate_tasting`) instead of uniformly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost.boost.sampling.base import Sampler, check_count, draw_features
from vjboost.boost.sampling.evaluator import EdgeEvaluator
from vjboost.boost.sampling.tasting import TastingQ1, allocate_tasting

__all__ = ["Laminating", "TastingLaminating", "better_half", "laminating_schedule"]


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
    budget = check_count(budget, "budget")
    n_features = check_count(n_features, "n_features")
    s_min = check_count(s_min, "s_min")

    def steps(q: int, s: int) -> list[tuple[int, int]]:
        """The schedule from ``(Q0, S0) = (q, s)``: halve ``Q`` (rounded up), double ``S``.

        Parameters
        ----------
        q, s : int
            Features and examples of the first step.

        Returns
        -------
        list of (int, int)
            Down to ``Q = 1``.
        """
        out = [(q, s)]
        while q > 1:
            q = -(-q // 2)
            s *= 2
            out.append((q, s))
        return out

    def cost(sched):
        return sum(q * s for q, s in sched)

    if q0 is not None:
        q0 = min(check_count(q0, "q0"), n_features)
        if s0 is not None:
            sched = steps(q0, check_count(s0, "s0"))
            if cost(sched) > budget:
                raise ValueError(
                    f"budget: Q0={q0}, S0={s0} costs {cost(sched)} evaluations > {budget}"
                )
            return sched
        unit = cost(steps(q0, 1))
        s0 = budget // unit
        if s0 < 1:
            raise ValueError(f"budget: {budget} cannot pay Laminating with Q0={q0} ({unit} per S0)")
        return steps(q0, s0)
    if s0 is not None:
        s0 = check_count(s0, "s0")
    best = None
    q = 1
    while q <= n_features:
        unit = cost(steps(q, 1))
        s = s0 if s0 is not None else budget // unit
        if s >= (1 if s0 is not None else s_min) and unit * s <= budget:
            best = steps(q, s)
        elif best is not None:
            break
        q *= 2
    if best is None:
        if s0 is None and budget >= 1:
            return steps(1, budget)  # a single feature on every affordable draw
        raise ValueError(f"budget: {budget} evaluations cannot pay Laminating with S0={s0}")
    return best


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
        return np.concatenate(
            [draw_features(part.members[k], c, self.rng_) for k, c in enumerate(counts) if c > 0]
        )
