"""Adaptive sampling of features and examples for boosting (Dubout & Fleuret, JMLR 2014).

Each boosting round a :class:`Sampler` chooses the weak learner given the loss's weights (through
an :class:`EdgeEvaluator` that computes edges of any block of features x examples lazily), the
partition of the pool into families, and a budget of feature evaluations; it returns the split
and the exact cost it spent. For a depth-k tree the sampler chooses every node's split on the
examples reaching that node (:class:`vjboost.boost.search.SampledSearch`).
:class:`SampledBoostedClassifier` runs the boosting loop.

Strategies (``SAMPLERS`` names):

========================= ================================================================
``full``                  all features, all examples (reference)
``uniform_naive``         Q features uniformly from the pool, S examples from the weights
``uniform_1q``            one random family, Q features of it
``uniform_q1``            Q draws of (random family, one feature)
``best_family``           Q features of one fixed family
``ucb``, ``ucb3``         UCB / UCB(k) over families (reward 1 - sqrt(1 - gamma^2))
``exp3p``                 Exp3.P over families
``epsilon_greedy``        epsilon-greedy over families
``tasting_1q``            family of best order-statistics estimate from tasted features
``tasting_q1``            per-family counts from tasted features
``mas_naive``             Gaussian-mixture model of edges, best (Q, S)
``mas_1q``, ``mas_q1``    per-family mixtures (10% of the budget), best family / counts
``laminating``            halve features, double examples
``tasting_laminating``    Laminating started from Tasting's per-family counts
``stratified_laminating`` Laminating within each family; the families' champions compete last
========================= ================================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vjboost._lazy import attach

if TYPE_CHECKING:
    from vjboost.boost.sampling.bandits import UCB, EpsilonGreedy, Exp3P
    from vjboost.boost.sampling.base import Sampler, Selection, reward
    from vjboost.boost.sampling.booster import SampledBoostedClassifier, problem_from_loss
    from vjboost.boost.sampling.evaluator import (
        BlockEdges,
        CallableSource,
        EdgeEvaluator,
        FeatureSource,
        MatrixSource,
        Partition,
        PoolSource,
        Problem,
        WeakLearner,
    )
    from vjboost.boost.sampling.examples import uniform_subset, weighted_sample
    from vjboost.boost.sampling.laminating import (
        Laminating,
        StratifiedLaminating,
        TastingLaminating,
        laminating_schedule,
        stratified_schedule,
    )
    from vjboost.boost.sampling.mas import (
        MAS1Q,
        MASQ1,
        GaussianMixture1D,
        MASNaive,
        allocate_mas,
        expected_selected_edge,
        fit_mixture,
    )
    from vjboost.boost.sampling.registry import SAMPLERS, make_sampler
    from vjboost.boost.sampling.tasting import (
        Tasting1Q,
        TastingQ1,
        allocate_tasting,
        expected_max_order_statistics,
    )
    from vjboost.boost.sampling.uniform import BestFamily, Full, Uniform1Q, UniformNaive, UniformQ1

__getattr__, __dir__, __all__ = attach(__name__, __file__)
