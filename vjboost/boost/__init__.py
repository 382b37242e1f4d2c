"""Boosting core: binning, stump searches, weak learners, losses and boosted classifiers.

Modules
-------
binning
    Per-feature quantile bins (uint8) whose splits are real thresholds on raw values.
stumps
    Exact, binned, categorical, histogram and multi-class stump searches (numba, parallel).
learners
    Weak learners (Stump, Tree, CategoricalStump, HistogramLearner, MulticlassStump).
losses
    Step objects of Discrete/Real/Gentle AdaBoost, LogitBoost and AdaBoost.MH (sampler interface).
weak
    ``fit_weak_learner``: the best learner of a block of (features x examples).
ensemble
    ``BoostedClassifier`` and ``AdaBoostMH`` estimators.
"""

from vjboost.boost.binning import bin_values, compute_bin_edges
from vjboost.boost.ensemble import AdaBoostMH, BoostedClassifier
from vjboost.boost.learners import (
    CategoricalStump,
    HistogramLearner,
    MulticlassStump,
    Stump,
    Tree,
    learner_from_dict,
)
from vjboost.boost.losses import (
    BoostingLoss,
    DiscreteAdaBoost,
    GentleAdaBoost,
    LogitBoost,
    MulticlassLoss,
    RealAdaBoost,
    make_loss,
    trim_weights,
)
from vjboost.boost.stumps import (
    search_categorical,
    search_histograms,
    search_multiclass_stumps,
    search_stumps,
)
from vjboost.boost.weak import fit_weak_learner

__all__ = [
    "AdaBoostMH",
    "BoostedClassifier",
    "BoostingLoss",
    "CategoricalStump",
    "DiscreteAdaBoost",
    "GentleAdaBoost",
    "HistogramLearner",
    "LogitBoost",
    "MulticlassLoss",
    "MulticlassStump",
    "RealAdaBoost",
    "Stump",
    "Tree",
    "bin_values",
    "compute_bin_edges",
    "fit_weak_learner",
    "learner_from_dict",
    "make_loss",
    "search_categorical",
    "search_histograms",
    "search_multiclass_stumps",
    "search_stumps",
    "trim_weights",
]
