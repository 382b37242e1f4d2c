"""The sampler interface.

At every boosting round (for a tree: at every node, the evaluator restricted to the node's
examples) the booster installs the loss's weights in an
:class:`~vjboost.boost.sampling.evaluator.EdgeEvaluator` and calls
``sampler.select(evaluator, budget)``. The sampler decides which blocks ``(feature ids x example
ids)`` to evaluate, within ``budget`` feature evaluations, and returns a :class:`Selection`: the
chosen weak learner (whose leaves the booster then refits on all examples) and the cost it spent,
read from the evaluator's counter, so it is exact by construction.

Samplers are stateful across rounds (bandit statistics, tasted features, mixture models): the
booster calls ``sampler.start(evaluator, budget)`` once before the first round, which also seeds
the sampler's generator from ``random_state`` -- the whole run is a deterministic function of
the seed.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from vjboost._estimator import Estimator
from vjboost._validation import check_random_state
from vjboost.boost.sampling.evaluator import BlockEdges, EdgeEvaluator, WeakLearner

__all__ = ["Sampler", "Selection", "check_count", "draw_features", "reward"]


@dataclass
class Selection:
    """What a sampler returns for one round.

    Attributes
    ----------
    learner : WeakLearner
        The chosen split (leaves/votes estimated on the sample; refitted by the booster), of
        a stump or of one node of a tree.
    cost : int
        Feature evaluations spent this round (including one-off set-up costs paid this round).
    info : dict
        Strategy-specific details (``Q``, ``S``, chosen family, ...).

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem, UniformNaive
    >>> X = np.array([[0, 1, 2, 3], [3, 1, 0, 2], [5, 5, 5, 5]], dtype=np.float32)
    >>> ev = EdgeEvaluator(MatrixSource(X))
    >>> ev.set_problem(Problem(np.full(4, 0.25), np.array([-1.0, -1.0, 1.0, 1.0]), "discrete"))
    >>> sel = UniformNaive(n_examples=4, random_state=0).select(ev, 8)
    >>> type(sel).__name__, sel.learner.feature, sel.cost, sel.info
    ('Selection', 1, 8, {'Q': 2, 'S': 4})
    """

    learner: WeakLearner
    cost: int
    info: dict[str, Any] = field(default_factory=dict)


def check_count(value: Any, name: str, *, minimum: int = 1) -> int:
    """A positive integer parameter (``Q``, ``S``, ``R``...) or a clear error.

    Parameters
    ----------
    value : int
        The value (bools and non-integers raise ``TypeError``).
    name : str
        The parameter named in errors.
    minimum : int, default 1
        Smallest value accepted (``ValueError`` below it).

    Returns
    -------
    int
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return int(value)


def check_budget(budget: Any) -> int:
    return check_count(budget, "budget")


def reward(edge: float) -> float:
    """Bandit reward ``1 - sqrt(1 - gamma^2)`` of an edge (the exponential-loss reduction).

    Examples
    --------
    >>> round(reward(0.6), 4), reward(0.0), reward(1.0), reward(-0.3)
    (0.2, 0.0, 1.0, 0.0)
    """
    g = min(max(float(edge), 0.0), 1.0)
    return 1.0 - float(np.sqrt(1.0 - g * g))


def draw_features(members: np.ndarray, q: int, rng: np.random.Generator) -> np.ndarray:
    """``min(q, len(members))`` distinct features drawn uniformly from ``members``.

    Parameters
    ----------
    members : ndarray of int64
        The candidate feature ids (e.g. one family's).
    q : int
        Features wanted.
    rng : numpy.random.Generator
        The source of randomness (not used when all members are taken).

    Returns
    -------
    ndarray of int64
        All of ``members`` (a copy, in order) when ``q >= len(members)``, else ``q`` of them in
        draw order.
    """
    q = min(int(q), members.size)
    if q == members.size:
        return members.copy()
    return members[rng.choice(members.size, size=q, replace=False)]


def _draw_per_family(part: Any, *, counts: np.ndarray, rng: np.random.Generator
                     ) -> np.ndarray:
    """``counts[k]`` distinct features of each family ``k`` of the partition ``part`` (capped
    by its size; at least one count positive), family after family."""
    return np.concatenate(
        [draw_features(part.members[k], c, rng) for k, c in enumerate(counts) if c > 0])


def _default_examples(evaluator: EdgeEvaluator, *, budget: int) -> int:
    """``S`` when none is given: ``sqrt(budget)`` within ``[1, N]``."""
    return int(max(1, min(evaluator.n_samples, int(np.sqrt(budget)))))


class Sampler(Estimator, abc.ABC):
    """Base class of the strategies choosing one weak learner per round under a cost budget.

    Parameters
    ----------
    random_state : None, int or Generator
        Seed of every random choice of the sampler.

    Examples
    --------
    A strategy implements ``_select``; :meth:`select` seeds it on first use and measures the
    cost. This one always takes the first feature, on ``budget`` draws from the weights:

    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> X = np.array([[0, 1, 2, 3], [3, 1, 0, 2], [5, 5, 5, 5]], dtype=np.float32)
    >>> ev = EdgeEvaluator(MatrixSource(X))
    >>> ev.set_problem(Problem(np.full(4, 0.25), np.array([-1.0, -1.0, 1.0, 1.0]), "discrete"))
    >>> class FirstFeature(Sampler):
    ...     def _select(self, evaluator, budget):
    ...         draws = evaluator.sample_examples(budget, self.rng_)
    ...         return evaluator.block([0], draws).learner(0), {"S": budget}
    >>> sel = FirstFeature(random_state=0).select(ev, 6)
    >>> sel.learner.feature, sel.learner.threshold, sel.cost, sel.info
    (0, 2.0, 6, {'S': 6})
    """

    name: ClassVar[str] = ""
    _fitted_attribute: ClassVar[str] = "rng_"

    def __init__(self, random_state: Any = None) -> None:
        self.random_state = random_state

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, evaluator: EdgeEvaluator, budget: int) -> None:
        """Prepare for a new training run (seeds the generator, resets statistics).

        Parameters
        ----------
        evaluator : EdgeEvaluator
            The edges of the run's weak learners on demand (and their cost).
        budget : int
            Feature evaluations per round, >= 1.
        """
        check_budget(budget)
        self.rng_ = check_random_state(self.random_state)
        if isinstance(self.random_state, np.random.Generator):
            # a shared Generator would make two samplers depend on each other's draws
            self.rng_ = np.random.default_rng(self.random_state.integers(2**63))
        self.round_ = 0
        self._setup(evaluator, budget)

    def _setup(self, evaluator: EdgeEvaluator, budget: int) -> None:  # noqa: B027
        """Strategy-specific initialisation (override)."""

    def select(self, evaluator: EdgeEvaluator, budget: int) -> Selection:
        """Choose the weak learner of this round spending at most about ``budget`` evaluations.

        Calls :meth:`start` first when the sampler has not started.

        Parameters
        ----------
        evaluator : EdgeEvaluator
            The edges of candidate weak learners on demand; its ``cost`` counts the spending.
        budget : int
            Feature evaluations this round, >= 1.

        Returns
        -------
        Selection
            The learner, the evaluations spent and the strategy's details.
        """
        budget = check_budget(budget)
        if not hasattr(self, "rng_"):
            self.start(evaluator, budget)
        before = evaluator.cost
        learner, info = self._select(evaluator, budget)
        self.round_ += 1
        return Selection(learner, evaluator.cost - before, info)

    @abc.abstractmethod
    def _select(self, evaluator: EdgeEvaluator, budget: int) -> tuple[WeakLearner, dict]:
        """Evaluate blocks through ``evaluator`` and return the chosen learner and details."""

    # -- helpers ---------------------------------------------------------------------------

    def _best_on_sample(self, evaluator: EdgeEvaluator, *, fids: np.ndarray, s: int
                        ) -> tuple[WeakLearner, BlockEdges]:
        """The best of the features ``fids`` on ``s`` examples drawn from the weights, and
        their block."""
        b = evaluator.block(fids, evaluator.sample_examples(s, self.rng_))
        learner, _, _ = self._best_of([b])
        return learner, b

    def _best_in_family(self, evaluator: EdgeEvaluator, *, family: int, q: int, s: int
                        ) -> tuple[WeakLearner, dict[str, Any]]:
        """The best of ``q`` features drawn from one family, on ``s`` draws, and the round's
        details ``{"Q", "S", "family"}``."""
        fids = draw_features(evaluator.partition.members[family], q, self.rng_)
        learner, _ = self._best_on_sample(evaluator, fids=fids, s=s)
        return learner, {"Q": int(fids.size), "S": s, "family": family}

    def _best_of(self, blocks: list[BlockEdges]) -> tuple[WeakLearner, BlockEdges, int]:
        best_block, best_pos, best_edge = None, -1, -np.inf
        for b in blocks:
            pos = b.best()
            if pos >= 0 and b.edges[pos] > best_edge:
                best_block, best_pos, best_edge = b, pos, b.edges[pos]
        if best_block is None:
            # every sampled feature is constant on the sample: fall back to the first feature
            b = blocks[0]
            return b.learner(0), b, 0
        return best_block.learner(best_pos), best_block, best_pos


class _FixedSize(Sampler):
    """Strategies that draw ``S`` examples and spend the round's budget on the ``Q = budget //
    S`` features it pays for (the uniform baselines, Tasting, the bandits)."""

    def __init__(self, n_examples: int | None = None, *, random_state: Any = None) -> None:
        super().__init__(random_state)
        if n_examples is not None:
            check_count(n_examples, "n_examples")
        self.n_examples = n_examples

    def _qs(self, evaluator: EdgeEvaluator, budget: int, *, arms: int = 1) -> tuple[int, int]:
        """``(Q, S)``: ``S`` given, else ``sqrt(budget)`` within ``[1, N]``; ``Q = budget // S``,
        enough for one feature of each of ``arms`` families."""
        s = self.n_examples
        if s is None:
            s = _default_examples(evaluator, budget=budget)
        q = budget // s
        if q < arms:
            what = f"{arms} arms x S={s}" if arms > 1 else f"S={s} examples"
            raise ValueError(f"budget: {budget} evaluations cannot cover {what}")
        return q, s
