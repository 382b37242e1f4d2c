"""Reservoir boosting (Lefakis & Fleuret, NIPS 2013): training from a stream in bounded memory.

Modules
-------
geem
    The Gaussian model of stump responses, its sorted-order covariance, the Sherman–Morrison
    deletion and the greedy expected-edge selection (GEEM).
learner
    :class:`ReservoirBooster`: a booster that sees the data only through a stream
    (:mod:`vjboost.boost.streams`) and keeps ``r`` samples with the Max, WSam, Rand or GEEM
    strategy.
baselines
    :class:`SubsampleBooster`: WSS, MadaBoost and Fix, sub-sampling with the full set in memory.
cascade
    :func:`train_reservoir_stage`: one cascade stage trained from window streams;
    :class:`PoolFeaturizer` (a feature pool written straight into the reservoir) and
    :class:`WindowScores` (running stage scores of the stage's windows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vjboost._lazy import attach

if TYPE_CHECKING:
    from vjboost.boost.reservoir.baselines import BASELINES, SubsampleBooster
    from vjboost.boost.reservoir.cascade import (
        PoolFeaturizer,
        WindowScores,
        pool_featurizer,
        train_reservoir_stage,
    )
    from vjboost.boost.reservoir.geem import (
        expected_edge,
        geem_select,
        sherman_morrison_delete,
        stump_covariance,
    )
    from vjboost.boost.reservoir.learner import (
        STRATEGIES,
        ReservoirBooster,
        flatten_samples,
        select_reservoir,
    )

__getattr__, __dir__, __all__ = attach(__name__, __file__)
