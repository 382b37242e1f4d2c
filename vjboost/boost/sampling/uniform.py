"""Full search and the uniform baselines.

``Q.S <= budget`` with ``S`` fixed (``n_examples``, default ``sqrt(budget)``) and
``Q = budget // S``; examples are drawn from the weights (weighting-by-sampling).

* :class:`Full` -- every feature on every example (of the node) with the exact weights (ignores
  the budget; costs ``F * N`` per round).
* :class:`UniformNaive` -- ``Q`` features uniformly from the whole pool (partition ignored).
* :class:`Uniform1Q` -- one family uniformly at random, then ``Q`` features of it.
* :class:`UniformQ1` -- ``Q`` draws, each of a family uniformly at random then a feature of it.
* :class:`BestFamily` -- ``Q`` features of one fixed family (given, or chosen once at the first
  round as the family whose probe of ``n_probe`` features has the best edge).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost.boost.sampling.base import (
    Sampler,
    _draw_per_family,
    _FixedSize,
    check_count,
    draw_features,
)
from vjboost.boost.sampling.evaluator import EdgeEvaluator, WeakLearner

__all__ = ["BestFamily", "Full", "Uniform1Q", "UniformNaive", "UniformQ1"]


class Full(Sampler):
    """All features, all examples, exact weights: the reference (cost ``F * N`` per round).

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sel = Full().select(ev, 1)  # the budget is ignored: all 6 x 200 are paid
    >>> sel.learner.feature, sel.cost, sel.info
    (4, 1200, {'Q': 6, 'S': 200})
    """

    name = "full"

    def _select(self, evaluator: EdgeEvaluator, budget: int) -> tuple[WeakLearner, dict]:
        b = evaluator.block(np.arange(evaluator.n_features), evaluator.node_ids, weighted=True)
        learner, _, _ = self._best_of([b])
        return learner, {"Q": evaluator.n_features, "S": int(evaluator.node_ids.size)}


class UniformNaive(_FixedSize):
    """``Q`` features uniformly from the whole pool, ``S`` examples from the weights.

    Parameters
    ----------
    n_examples : int, optional
        ``S``, examples drawn from the weights each round (default ``sqrt(budget)``, within
        [1, N]); ``Q = budget // S``.
    random_state : None, int or Generator
        Seed of every random choice of the sampler.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sel = UniformNaive(n_examples=20, random_state=0).select(ev, 60)
    >>> sel.learner.feature, sel.cost, sel.info  # Q = 60 // 20 features of the six
    (4, 60, {'Q': 3, 'S': 20})
    """

    name = "uniform_naive"

    def _select(self, evaluator, budget):
        q, s = self._qs(evaluator, budget)
        fids = draw_features(np.arange(evaluator.n_features), q, self.rng_)
        learner, _ = self._best_on_sample(evaluator, fids=fids, s=s)
        return learner, {"Q": int(fids.size), "S": s}


class Uniform1Q(_FixedSize):
    """One family uniformly at random, then ``Q`` of its features.

    Parameters
    ----------
    n_examples : int, optional
        ``S``, examples drawn from the weights each round (default ``sqrt(budget)``, within
        [1, N]); ``Q = budget // S``.
    random_state : None, int or Generator
        Seed of every random choice of the sampler.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sel = Uniform1Q(n_examples=20, random_state=0).select(ev, 60)
    >>> sel.learner.feature, sel.cost, sel.info  # family 1 has only 2 features to give
    (4, 40, {'Q': 2, 'S': 20, 'family': 1})
    """

    name = "uniform_1q"

    def _select(self, evaluator, budget):
        q, s = self._qs(evaluator, budget)
        part = evaluator.partition
        k = int(self.rng_.integers(part.n_families))
        return self._best_in_family(evaluator, family=k, q=q, s=s)


class UniformQ1(_FixedSize):
    """``Q`` draws, each of a uniformly chosen family and then one of its features.

    Parameters
    ----------
    n_examples : int, optional
        ``S``, examples drawn from the weights each round (default ``sqrt(budget)``, within
        [1, N]); ``Q = budget // S``.
    random_state : None, int or Generator
        Seed of every random choice of the sampler.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sel = UniformQ1(n_examples=20, random_state=0).select(ev, 60)
    >>> sel.learner.feature, sel.cost, sel.info
    (4, 60, {'Q': 3, 'S': 20})
    """

    name = "uniform_q1"

    def _select(self, evaluator, budget):
        q, s = self._qs(evaluator, budget)
        part = evaluator.partition
        counts = self.rng_.multinomial(q, np.full(part.n_families, 1.0 / part.n_families))
        fids = _draw_per_family(part, counts=counts, rng=self.rng_)
        learner, _ = self._best_on_sample(evaluator, fids=fids, s=s)
        return learner, {"Q": int(fids.size), "S": s}


class BestFamily(_FixedSize):
    """Uniform sampling restricted to one fixed family.

    Parameters
    ----------
    family : int or str, optional
        The family (index or name). ``None``: at the first round, ``n_probe`` features of every
        family are evaluated on ``S`` examples (cost counted in that round) and the family with
        the best edge is kept for the whole run.
    n_probe : int, default=32
    n_examples : int, optional
        ``S`` (default ``sqrt(budget)``).

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sampler = BestFamily(n_probe=2, n_examples=20, random_state=0)
    >>> first, second = sampler.select(ev, 40), sampler.select(ev, 40)
    >>> sampler.family_, first.cost, second.cost  # the probe is paid in the first round only
    (1, 120, 40)
    >>> second.learner.feature
    4
    """

    name = "best_family"

    def __init__(
        self, family: int | str | None = None, *, n_probe: int = 32,
        n_examples: int | None = None, random_state: Any = None,
    ) -> None:
        super().__init__(n_examples, random_state=random_state)
        self.family = family
        self.n_probe = check_count(n_probe, "n_probe")

    def _setup(self, evaluator, budget):
        part = evaluator.partition
        if self.family is None:
            self.family_ = None
        elif isinstance(self.family, str):
            if self.family not in part.names:
                raise ValueError(f"family: {self.family!r} is not one of {part.names}")
            self.family_ = part.names.index(self.family)
        else:
            k = check_count(self.family, "family", minimum=0)
            if k >= part.n_families:
                raise ValueError(f"family: index {k} but the pool has {part.n_families} families")
            self.family_ = k

    def _select(self, evaluator, budget):
        q, s = self._qs(evaluator, budget)
        part = evaluator.partition
        if self.family_ is None:
            draws = evaluator.sample_examples(s, self.rng_)
            best = []
            for k in range(part.n_families):
                b = evaluator.block(draw_features(part.members[k], self.n_probe, self.rng_), draws)
                pos = b.best()
                best.append(b.edges[pos] if pos >= 0 else -np.inf)
            self.family_ = int(np.argmax(best))
        return self._best_in_family(evaluator, family=self.family_, q=q, s=s)
