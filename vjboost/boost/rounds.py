"""The boosting round loop: one implementation behind every booster of vjboost.

Each round of :func:`run_rounds`:

1. ``before_round(t)`` (optional) may hand over a new ``(step, search)`` pair (reservoir
   boosting draws fresh examples and keeps a reservoir; estimators redraw their feature subset);
2. for every problem of the round (``step.problems()``: one, or one per class for J-class
   LogitBoost) the examples to fit on are the problem's ``sample_ids`` or, with weight trimming,
   the heaviest ones carrying ``weight_trim_rate`` of the weight (OpenCV's ``weightTrimRate``);
   a learner is grown on them (:meth:`TreeShape.grow` over the split ``search``);
3. every learner's leaves are refitted on **all** examples of the step (``step.refit_leaves``;
   ``leaf_refit="fitted"``: on the examples it was fitted on, the weight trimming of Friedman,
   Hastie & Tibshirani), optionally rounded to ``leaf_dtype`` (cascades store float32
   leaves, so training scores with exactly the values detection uses), and the step's scores
   are updated once with the sum of the round's outputs;
4. ``callback(RoundResult)`` (optional) returns True to stop (a cascade stage meeting its
   targets); the loop also stops when no feature splits the examples or the step is ``done``.

The search (:mod:`vjboost.boost.search`) decides where the learner comes from: a precomputed
matrix, feature blocks evaluated every round, an adaptive sampler, a reservoir buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vjboost._validation import check_in_range
from vjboost.boost.losses import trim_weights
from vjboost.boost.tree import Tree
from vjboost.boost.weak import TreeShape

__all__ = ["RoundResult", "Rounds", "run_rounds"]


@dataclass
class RoundResult:
    """What one round produced (handed to the callback).

    Attributes
    ----------
    t : int
        Round index (0-based).
    trees : list of Tree
        The round's learners with final leaves (one, or one per class).
    loss : float
        The step's training loss after the round.
    step : object
        The loss step (scores, weights) after the round.

    Examples
    --------
    >>> from vjboost.boost.losses import make_loss
    >>> from vjboost.boost.search import MatrixSearch
    >>> X = np.array([[0, 1, 2, 3], [1, 0, 3, 2]], dtype=np.float32)
    >>> seen = []
    >>> def stop(result):   # stop once the training loss is below 0.5
    ...     seen.append((result.t, len(result.trees), round(result.loss, 4)))
    ...     return result.loss < 0.5
    >>> out = run_rounds(make_loss("gentle", [-1, -1, 1, 1]), MatrixSearch(X), n_rounds=5,
    ...                  callback=stop)
    >>> seen, out.stopped
    ([(0, 1, 0.3679)], 'callback')
    """

    t: int
    trees: list[Tree]
    loss: float
    step: Any


@dataclass
class Rounds:
    """The output of :func:`run_rounds`.

    Attributes
    ----------
    trees : list of list of Tree
        Learners of every round.
    losses : list of float
        Training loss after every round.
    stopped : str
        Why the loop ended: ``"n_rounds"``, ``"callback"``, ``"no_split"`` or ``"done"``.

    Examples
    --------
    >>> from vjboost.boost.losses import make_loss
    >>> from vjboost.boost.search import MatrixSearch
    >>> X = np.array([[0, 1, 2, 3], [1, 0, 3, 2]], dtype=np.float32)
    >>> out = run_rounds(make_loss("gentle", [-1, -1, 1, 1]), MatrixSearch(X), n_rounds=3)
    >>> [round(v, 4) for v in out.losses], len(out.trees), len(out.flat), out.stopped
    ([0.3679, 0.1353, 0.0498], 3, 3, 'n_rounds')
    >>> # a perfect discrete stump leaves degenerate weights: the loop ends after it
    >>> run_rounds(make_loss("discrete", [-1, -1, 1, 1]), MatrixSearch(X), n_rounds=3).stopped
    'done'
    """

    trees: list[list[Tree]] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    stopped: str = "n_rounds"

    @property
    def flat(self) -> list[Tree]:
        """All learners in order."""
        return [t for r in self.trees for t in r]


def run_rounds(
    step: Any,
    search: Any,
    *,
    n_rounds: int,
    shape: TreeShape | None = None,
    weight_trim_rate: float = 1.0,
    leaf_refit: str = "all",
    leaf_dtype: Any = None,
    before_round: Callable[[int], tuple[Any, Any] | None] | None = None,
    callback: Callable[[RoundResult], bool | None] | None = None,
) -> Rounds:
    """Boost ``n_rounds`` rounds of ``step`` with learners found by ``search``.

    Parameters
    ----------
    step : loss object
        ``problems()``, ``refit_leaves(k, leaf, hypothesis)``, ``update(predictions)``, ``done``
        (see :mod:`vjboost.boost.losses`).
    search : split search
        ``best_splits``, ``go_left``, ``rows`` (see :mod:`vjboost.boost.search`).
    n_rounds : int
    shape : TreeShape, optional
        The learner grown each round (default a stump).
    weight_trim_rate : float, default=1.0
        Fit each learner on the heaviest examples carrying this share of its problem's weight.
    leaf_refit : {"all", "fitted"}, default="all"
        Refit the leaves on all examples (OpenCV's weight trimming) or on the examples the
        learner was fitted on (trimmed examples take no part in the learner).
    leaf_dtype : numpy dtype, optional
        Round the final leaves to this type (e.g. ``np.float32`` for cascades).
    before_round : callable, optional
        ``before_round(t) -> (step, search) or None``, called at the start of round ``t``.
    callback : callable, optional
        ``callback(result) -> bool``; True stops after that round.

    Returns
    -------
    Rounds

    Examples
    --------
    >>> from vjboost.boost.losses import make_loss
    >>> from vjboost.boost.search import MatrixSearch
    >>> X = np.array([[0, 1, 2, 3], [1, 0, 3, 2]], dtype=np.float32)
    >>> out = run_rounds(make_loss("gentle", [-1, -1, 1, 1]), MatrixSearch(X), n_rounds=3)
    >>> len(out.flat), out.stopped
    (3, 'n_rounds')
    """
    check_in_range(n_rounds, "n_rounds", low=0, integer=True)
    check_in_range(weight_trim_rate, "weight_trim_rate", low=0.0, high=1.0, low_inclusive=False)
    if leaf_refit not in ("all", "fitted"):
        raise ValueError(f"leaf_refit: expected 'all' or 'fitted', got {leaf_refit!r}")
    shape = TreeShape() if shape is None else shape
    out = Rounds()
    for t in range(int(n_rounds)):
        if before_round is not None:
            swap = before_round(t)
            if swap is not None:
                step, search = swap
        if hasattr(search, "new_round"):
            search.new_round()
        trees: list[Tree] = []
        total = None
        problems = step.problems()
        for k, problem in enumerate(problems):
            ids = problem.sample_ids
            if ids is None and weight_trim_rate < 1.0:
                ids = trim_weights(problem.example_weights, weight_trim_rate)
            tree, _ = shape.grow(search, problem, ids)
            if tree is None:
                break
            values, binned = search.rows(tree)
            leaf = tree.apply(values, binned=binned)
            leaves = step.refit_leaves(k, leaf, tree.leaves,
                                       ids if leaf_refit == "fitted" else None)
            if leaf_dtype is not None:
                leaves = np.asarray(leaves).astype(leaf_dtype).astype(np.float64)
            tree.leaves = np.ascontiguousarray(leaves, dtype=np.float64)
            tree.split_bins = None  # thresholds are raw values: the model never needs the bins
            trees.append(tree)
            pred = tree.leaves[leaf]
            total = pred if total is None else total + pred
        if len(trees) < len(problems) or total is None:
            out.stopped = "no_split"
            break
        cur = float(step.update(total))
        out.trees.append(trees)
        out.losses.append(cur)
        if callback is not None and callback(RoundResult(t, trees, cur, step)):
            out.stopped = "callback"
            break
        if step.done:
            out.stopped = "done"
            break
    return out
