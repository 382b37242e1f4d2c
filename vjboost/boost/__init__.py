"""Boosting core: feature sources, binning, split searches, trees, losses, one round loop.

Modules
-------
source
    Feature sources (matrix, binned matrix, lazy feature pool) and their family partition.
binning
    Per-feature quantile bins (uint8) whose splits are real thresholds on raw values; the one
    pool-to-binned-matrix path (``precompute``).
stumps
    Split searches (exact, binned, categorical, multi-class, domain partitions; numba, parallel)
    and ``search_splits``, the mixed ordered/categorical search every learner uses.
tree
    ``Tree``: the one decision-tree class (boosting learners and cascade trees).
weak
    ``TreeShape``: stumps, depth-k trees, best-first J-leaf trees, domain partitions grown node by
    node from a split search.
search
    Split searches over a precomputed matrix, streamed feature blocks, or an adaptive sampler;
    ``fit_weak_learner`` for one block.
losses
    Step objects of Discrete/Real/Gentle AdaBoost, LogitBoost, AdaBoost.MH and J-class LogitBoost.
rounds
    ``run_rounds``: the boosting round loop every booster runs.
ensemble
    ``BoostedClassifier``, ``AdaBoostMH`` and ``LogitBoostClassifier`` estimators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vjboost._lazy import attach

if TYPE_CHECKING:
    from vjboost.boost.binning import bin_values, compute_bin_edges, precompute
    from vjboost.boost.ensemble import AdaBoostMH, BoostedClassifier, LogitBoostClassifier
    from vjboost.boost.losses import (
        BoostingLoss,
        DiscreteAdaBoost,
        GentleAdaBoost,
        LogitBoost,
        MulticlassLoss,
        MultiLogitLoss,
        OneVsRestLoss,
        Problem,
        RealAdaBoost,
        make_loss,
        trim_weights,
    )
    from vjboost.boost.rounds import RoundResult, Rounds, run_rounds
    from vjboost.boost.search import MatrixSearch, SampledSearch, StreamedSearch, fit_weak_learner
    from vjboost.boost.source import (
        CallableSource,
        FeatureSource,
        MatrixSource,
        Partition,
        PoolSource,
    )
    from vjboost.boost.stumps import (
        search_categorical,
        search_histograms,
        search_multiclass_stumps,
        search_splits,
        search_stumps,
    )
    from vjboost.boost.tree import Tree
    from vjboost.boost.weak import Split, TreeShape, partition_tree

__getattr__, __dir__, __all__ = attach(__name__, __file__)
