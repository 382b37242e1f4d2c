"""Multi-armed bandits over the families of the pool.

Each family is an arm. Pulling arm ``k`` evaluates ``Q = budget // S`` features of family ``k``
on ``S`` examples drawn from the weights and returns the reward ``1 - sqrt(1 - gamma^2)`` of the
best stump found (``gamma`` its edge on the sample): the reduction of the exponential loss that
stump would bring.

* :class:`UCB` -- index ``mean_k + sqrt(2 ln n / n_k)`` (unplayed arms first).
* :class:`UCB` with ``k > 1`` -- UCB(k): the ``k`` arms of largest index are pulled, the ``Q``
  features split evenly among them; each receives its own reward.
* :class:`Exp3P` -- Exp3.P with exploration ``lam`` (gamma in Auer et al.) and confidence
  ``eta`` (alpha there), horizon ``n_rounds``.
* :class:`EpsilonGreedy` -- best empirical mean, or a uniform arm with probability
  ``eps_n = min(1, c K / (d^2 n))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost.boost.sampling.base import _FixedSize, check_count, draw_features, reward
from vjboost.boost.sampling.evaluator import EdgeEvaluator

__all__ = ["UCB", "EpsilonGreedy", "Exp3P"]


class _Bandit(_FixedSize):
    def _setup(self, evaluator, budget):
        k = evaluator.partition.n_families
        self.pulls_ = np.zeros(k, dtype=np.int64)
        self.sums_ = np.zeros(k)

    def _pull(self, evaluator: EdgeEvaluator, arms: list[int], budget: int):
        """Evaluate ``Q`` features split over ``arms`` on one sample; per-arm best rewards."""
        q, s = self._qs(evaluator, budget, arms=len(arms))
        part = evaluator.partition
        draws = evaluator.sample_examples(s, self.rng_)
        share = [q // len(arms) + (1 if j < q % len(arms) else 0) for j in range(len(arms))]
        blocks, rewards = [], []
        for arm, qa in zip(arms, share, strict=True):
            b = evaluator.block(draw_features(part.members[arm], qa, self.rng_), draws)
            pos = b.best()
            rewards.append(reward(b.edges[pos]) if pos >= 0 else 0.0)
            blocks.append(b)
        learner, _, _ = self._best_of(blocks)
        for arm, r in zip(arms, rewards, strict=True):
            self.pulls_[arm] += 1
            self.sums_[arm] += r
        return learner, rewards, {"Q": q, "S": s, "arms": list(arms)}

    def _means(self) -> np.ndarray:
        return self.sums_ / np.maximum(self.pulls_, 1)


class UCB(_Bandit):
    """UCB over families; ``k > 1`` gives UCB(k), pulling the ``k`` best arms each round.

    Parameters
    ----------
    k : int, default=1
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
    >>> ucb = UCB(random_state=0)
    >>> [ucb.select(ev, 400).info["arms"] for _ in range(4)]
    [[1], [0], [1], [1]]
    >>> ucb.pulls_.tolist(), np.round(ucb.sums_, 3).tolist()  # family 1 earns reward 1 per pull
    ([1, 3], [0.134, 3.0])
    >>> UCB(k=2, random_state=0).select(ev, 400).info["arms"]  # UCB(2) pulls both families
    [1, 0]
    """

    name = "ucb"

    def __init__(self, k: int = 1, *, n_examples: int | None = None, random_state: Any = None):
        super().__init__(n_examples, random_state=random_state)
        self.k = check_count(k, "k")

    def _select(self, evaluator, budget):
        n_arms = evaluator.partition.n_families
        k = min(self.k, n_arms)
        n = max(int(self.pulls_.sum()), 1)
        bonus = np.sqrt(2.0 * np.log(max(n, 2)) / np.maximum(self.pulls_, 1))
        index = np.where(self.pulls_ == 0, np.inf, self._means() + bonus)
        # ties (e.g. unplayed arms) broken at random so that no family is favoured by its index
        order = np.lexsort((self.rng_.random(n_arms), -index))
        arms = [int(a) for a in order[:k]]
        learner, _, info = self._pull(evaluator, arms, budget)
        return learner, info


class Exp3P(_Bandit):
    """Exp3.P over families.

    Parameters
    ----------
    eta : float, default=0.3
        Confidence term (``alpha`` in Auer et al. 2002).
    lam : float, default=0.15
        Exploration probability mixed into the arm distribution (``gamma`` there).
    n_rounds : int, default=1000
        Horizon ``T`` of the bound.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> exp3 = Exp3P(n_rounds=20, random_state=0)
    >>> rounds = [exp3.select(ev, 400) for _ in range(20)]
    >>> rounds[0].info["p"], np.round(rounds[-1].info["p"], 3).tolist()
    ([0.5, 0.5], [0.37, 0.63])
    >>> exp3.pulls_.tolist()  # family 1, whose rewards are larger, is drawn more often
    [4, 16]
    """

    name = "exp3p"

    def __init__(
        self, eta: float = 0.3, *, lam: float = 0.15, n_rounds: int = 1000,
        n_examples: int | None = None, random_state: Any = None,
    ) -> None:
        super().__init__(n_examples, random_state=random_state)
        if not 0.0 < float(lam) <= 1.0:
            raise ValueError(f"lam: must be in (0, 1], got {lam}")
        if float(eta) < 0.0:
            raise ValueError(f"eta: must be non-negative, got {eta}")
        self.eta = float(eta)
        self.lam = float(lam)
        self.n_rounds = check_count(n_rounds, "n_rounds")

    def _setup(self, evaluator, budget):
        super()._setup(evaluator, budget)
        k = evaluator.partition.n_families
        self.log_w_ = np.full(k, self.eta * self.lam / 3.0 * np.sqrt(self.n_rounds / k))

    def _probs(self) -> np.ndarray:
        k = self.log_w_.size
        w = np.exp(self.log_w_ - self.log_w_.max())
        return (1.0 - self.lam) * w / w.sum() + self.lam / k

    def _select(self, evaluator, budget):
        k = self.log_w_.size
        p = self._probs()
        arm = int(self.rng_.choice(k, p=p))
        learner, rewards, info = self._pull(evaluator, [arm], budget)
        x_hat = np.zeros(k)
        x_hat[arm] = rewards[0] / p[arm]
        self.log_w_ += self.lam / (3.0 * k) * (
            x_hat + self.eta / (p * np.sqrt(k * self.n_rounds))
        )
        info["p"] = p.tolist()
        return learner, info


class EpsilonGreedy(_Bandit):
    """epsilon-greedy with ``eps_n = min(1, c K / (d^2 n))`` at round ``n`` (1-based).

    Parameters
    ----------
    c : float, default=1.0
    d : float, default=0.3
        Assumed gap between the best and the second-best arm's mean reward.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> greedy = EpsilonGreedy(c=0.01, random_state=0)
    >>> round(greedy.epsilon(1, 2), 4), round(greedy.epsilon(10, 2), 4)  # exploration decays
    (0.2222, 0.0222)
    >>> [greedy.select(ev, 400).info["arms"] for _ in range(5)]
    [[1], [1], [1], [1], [1]]
    >>> greedy.pulls_.tolist()
    [0, 5]
    """

    name = "epsilon_greedy"

    def __init__(
        self, c: float = 1.0, *, d: float = 0.3, n_examples: int | None = None,
        random_state: Any = None,
    ) -> None:
        super().__init__(n_examples, random_state=random_state)
        if not float(c) > 0 or not float(d) > 0:
            raise ValueError(f"c and d: must be positive, got c={c}, d={d}")
        self.c = float(c)
        self.d = float(d)

    def epsilon(self, n: int, n_arms: int) -> float:
        """Exploration probability at round ``n`` (1-based): ``min(1, c K / (d^2 n))``.

        Parameters
        ----------
        n : int
            The round, from 1.
        n_arms : int
            The number of arms ``K`` (feature families).

        Returns
        -------
        float
            In (0, 1].
        """
        return min(1.0, self.c * n_arms / (self.d * self.d * n))

    def _select(self, evaluator, budget):
        k = evaluator.partition.n_families
        eps = self.epsilon(self.round_ + 1, k)
        if self.rng_.random() < eps or self.pulls_.sum() == 0:
            arm = int(self.rng_.integers(k))
        else:
            means = np.where(self.pulls_ > 0, self._means(), -np.inf)
            arm = int(np.argmax(means))
        learner, _, info = self._pull(evaluator, [arm], budget)
        info["epsilon"] = eps
        return learner, info
