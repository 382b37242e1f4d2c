"""The samplers by name: :data:`SAMPLERS` and :func:`make_sampler` (``vjtrain --sampler``)."""

from __future__ import annotations

from typing import Any

from vjboost.boost.sampling.bandits import UCB, EpsilonGreedy, Exp3P
from vjboost.boost.sampling.base import Sampler
from vjboost.boost.sampling.laminating import Laminating, StratifiedLaminating, TastingLaminating
from vjboost.boost.sampling.mas import MAS1Q, MASQ1, MASNaive
from vjboost.boost.sampling.tasting import Tasting1Q, TastingQ1
from vjboost.boost.sampling.uniform import BestFamily, Full, Uniform1Q, UniformNaive, UniformQ1

__all__ = ["SAMPLERS", "make_sampler"]

#: name -> (class, default parameters)
SAMPLERS: dict[str, tuple[type[Sampler], dict[str, Any]]] = {
    "full": (Full, {}),
    "uniform_naive": (UniformNaive, {}),
    "uniform_1q": (Uniform1Q, {}),
    "uniform_q1": (UniformQ1, {}),
    "best_family": (BestFamily, {}),
    "ucb": (UCB, {}),
    "ucb3": (UCB, {"k": 3}),
    "exp3p": (Exp3P, {}),
    "epsilon_greedy": (EpsilonGreedy, {}),
    "tasting_1q": (Tasting1Q, {}),
    "tasting_q1": (TastingQ1, {}),
    "mas_naive": (MASNaive, {}),
    "mas_1q": (MAS1Q, {}),
    "mas_q1": (MASQ1, {}),
    "laminating": (Laminating, {}),
    "tasting_laminating": (TastingLaminating, {}),
    "stratified_laminating": (StratifiedLaminating, {}),
}


def make_sampler(name: str, **params: Any) -> Sampler:
    """Build a sampler by name (see :data:`SAMPLERS`) with extra constructor parameters.

    Parameters
    ----------
    name : str
        A key of :data:`SAMPLERS` (``"laminating"``, ``"ucb"``, ``"mas_1q"``...).
    **params
        Constructor parameters, over the name's defaults.

    Returns
    -------
    Sampler

    Examples
    --------
    >>> type(make_sampler("ucb3")).__name__, make_sampler("ucb3").k
    ('UCB', 3)
    """
    if name not in SAMPLERS:
        raise ValueError(f"sampler: expected one of {sorted(SAMPLERS)}, got {name!r}")
    cls, defaults = SAMPLERS[name]
    return cls(**{**defaults, **params})
