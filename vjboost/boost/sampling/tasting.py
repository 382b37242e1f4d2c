"""Tasting: per-family edge distributions from a few features drawn once.

Before training, ``R`` features of every family are drawn and their values on all examples are
computed once and kept (cost ``R K N``, paid at the first round). At every round their edges under
the current weights are measured on ``n_taste`` examples drawn from the weights (cached values: no
new feature evaluations). With the tasted edges of a family sorted ``e_(1) <= ... <= e_(R)``, the
expected best edge of ``Q`` features drawn from that family (with replacement from the empirical
distribution) is the order statistic

    E[max of Q] = sum_r ((r/R)^Q - ((r-1)/R)^Q) e_(r).

* :class:`Tasting1Q` -- the family maximizing that estimate, then ``Q`` of its features.
* :class:`TastingQ1` -- ``Q_k`` features from each family, allocated greedily to maximize the
  expected maximum over all draws, ``P(max <= x) = prod_k F_k(x)^Q_k`` with ``F_k`` the empirical
  CDF of family ``k``'s tasted edges.

``S`` is fixed (``n_examples``, default ``sqrt(budget)``) and ``Q = budget // S``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vjboost._memory import check_memory
from vjboost.boost.sampling.base import _draw_per_family, _FixedSize, check_count, draw_features
from vjboost.boost.sampling.evaluator import EdgeEvaluator

__all__ = ["Tasting1Q", "TastingQ1", "allocate_tasting", "expected_max_order_statistics"]


def expected_max_order_statistics(edges: Any, q: int) -> float:
    """Expected maximum of ``q`` i.i.d. draws from the empirical distribution of ``edges``.

    Parameters
    ----------
    edges : array-like of shape (R,)
        Tasted edges of one family (any order).
    q : int
        Number of draws ``Q >= 1``.

    Returns
    -------
    float
        ``sum_r ((r/R)^Q - ((r-1)/R)^Q) e_(r)`` over the sorted edges.

    Examples
    --------
    >>> edges = [0.4, 0.1, 0.3, 0.2]
    >>> [round(expected_max_order_statistics(edges, q), 4) for q in (1, 2, 8)]
    [0.25, 0.3125, 0.3896]
    """
    q = check_count(q, "q")
    e = np.sort(np.asarray(edges, dtype=np.float64))
    if e.size == 0:
        raise ValueError("edges: a family needs at least one tasted edge")
    r = np.arange(e.size + 1) / e.size
    cdf_q = r**q
    return float(np.dot(np.diff(cdf_q), e))


def _expected_max_mixed(grid: np.ndarray, log_cdf: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """E[max] for several allocations at once.

    ``grid`` (M,) sorted distinct edges, ``log_cdf`` (K, M) log of each family's empirical CDF on
    the grid, ``counts`` (C, K) allocations -> (C,) expected maxima.
    """
    log_g = counts @ log_cdf  # (C, M): log P(max <= grid_j)
    g = np.exp(log_g)
    dg = np.diff(g, axis=1, prepend=0.0)
    return dg @ grid


def allocate_tasting(
    tasted: list[np.ndarray], q: int, sizes: np.ndarray, n_steps: int = 32
) -> np.ndarray:
    """Greedy per-family counts ``Q_k`` (sum ``<= q``, ``Q_k <= sizes[k]``) maximizing E[max].

    The ``q`` draws are handed out in ``n_steps`` chunks, each to the family that increases the
    expected maximum (product of the empirical CDFs) the most.

    Parameters
    ----------
    tasted : list of K ndarray
        The edges tasted in each family (non-empty).
    q : int
        Features to draw in all.
    sizes : ndarray of shape (K,), int
        Features in each family (upper bounds of ``Q_k``).
    n_steps : int, default 32
        Chunks ``q`` is divided into.

    Returns
    -------
    ndarray of shape (K,), int64
        ``Q_k``, summing to ``min(q, sizes.sum())``.

    Examples
    --------
    A steady family and one whose edges are mostly poor but sometimes large: a single draw
    goes to the steady one, many draws mostly to the other, whose maximum grows faster.

    >>> tasted = [np.array([0.2, 0.25, 0.3]), np.array([0.0, 0.05, 0.5])]
    >>> allocate_tasting(tasted, 1, np.array([10, 10])).tolist()
    [1, 0]
    >>> allocate_tasting(tasted, 8, np.array([10, 10])).tolist()
    [1, 7]
    """
    k = len(tasted)
    grid = np.unique(np.concatenate(tasted))
    log_cdf = np.empty((k, grid.size))
    for j, e in enumerate(tasted):
        cdf = np.searchsorted(np.sort(e), grid, side="right") / e.size
        log_cdf[j] = np.log(np.maximum(cdf, 1e-300))
    counts = np.zeros(k, dtype=np.int64)
    chunk = max(1, -(-q // n_steps))
    left = min(q, int(sizes.sum()))
    while left > 0:
        step = min(chunk, left)
        room = sizes - counts
        cand = np.tile(counts, (k, 1)) + np.diag(np.minimum(step, room))
        value = _expected_max_mixed(grid, log_cdf, cand.astype(np.float64))
        value[room <= 0] = -np.inf
        best = int(np.argmax(value))
        add = int(min(step, room[best]))
        counts[best] += add
        left -= add
    return counts


class _Tasting(_FixedSize):
    def __init__(
        self, n_tasted: int = 32, *, n_taste_examples: int = 1000,
        n_examples: int | None = None, random_state: Any = None,
    ) -> None:
        super().__init__(n_examples, random_state=random_state)
        self.n_tasted = check_count(n_tasted, "n_tasted")
        self.n_taste_examples = check_count(n_taste_examples, "n_taste_examples")

    def _setup(self, evaluator, budget):
        part = evaluator.partition
        self.tasted_ids_ = [draw_features(m, self.n_tasted, self.rng_) for m in part.members]
        self.tasted_family_ = np.concatenate(
            [np.full(t.size, k) for k, t in enumerate(self.tasted_ids_)]
        )
        self._tasted_all = np.concatenate(self.tasted_ids_)
        self._cache = None
        self._pending_cost = 0

    def _taste(self, evaluator: EdgeEvaluator) -> list[np.ndarray]:
        """Edges of the tasted features under the current weights, per family."""
        if self._cache is None:
            n = evaluator.n_samples
            nbytes = self._tasted_all.size * n * 4
            check_memory(nbytes, f"tasted feature values ({self._tasted_all.size} x {n})",
                         advice="lower n_tasted")
            all_ids = np.arange(n)
            # the one-off evaluation of the tasted features is a real cost, counted this round
            if hasattr(evaluator.source, "matrix"):
                self._cache = evaluator.source.matrix[self._tasted_all]
            else:
                self._cache = evaluator.source.values(self._tasted_all, all_ids)
            evaluator.cost += int(self._tasted_all.size) * n
        draws = evaluator.sample_examples(self.n_taste_examples, self.rng_)
        b = evaluator.cached_block(self._cache[:, draws], self._tasted_all, draws)
        e = np.where(np.isfinite(b.edges), b.edges, 0.0)
        return [e[self.tasted_family_ == k] for k in range(len(self.tasted_ids_))]


class Tasting1Q(_Tasting):
    """Tasting 1.Q: the family with the best expected max of ``Q`` edges, ``Q`` features of it.

    Parameters
    ----------
    n_tasted : int, default=32
        ``R``, features tasted per family.
    n_taste_examples : int, default=1000
        Draws used to measure the tasted edges each round.
    n_examples : int, optional
        ``S`` (default ``sqrt(budget)``).
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
    >>> sampler = Tasting1Q(n_tasted=2, n_taste_examples=50, n_examples=20, random_state=0)
    >>> first, second = sampler.select(ev, 60), sampler.select(ev, 60)
    >>> first.cost, second.cost  # the 4 tasted features on all 200 examples, paid once
    (840, 40)
    >>> second.info["family"], np.round(second.info["estimates"], 3).tolist()
    (1, [0.505, 0.84])
    >>> second.learner.feature
    4
    """

    name = "tasting_1q"

    def _select(self, evaluator, budget):
        tasted = self._taste(evaluator)
        q, s = self._qs(evaluator, budget)
        sizes = evaluator.partition.sizes
        est = [expected_max_order_statistics(t, int(min(q, sz)))
               for t, sz in zip(tasted, sizes, strict=True)]
        k = int(np.argmax(est))
        learner, info = self._best_in_family(evaluator, family=k, q=q, s=s)
        return learner, {**info, "estimates": est}


class TastingQ1(_Tasting):
    """Tasting Q.1: ``Q_k`` features per family, allocated greedily from the tasted edges.

    Parameters
    ----------
    n_tasted, n_taste_examples, n_examples, random_state
        As in :class:`Tasting1Q`.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sampler = TastingQ1(n_tasted=2, n_taste_examples=50, n_examples=20, random_state=0)
    >>> sel = sampler.select(ev, 60)
    >>> sel.info, sel.cost  # Q = 3 shared out over the families; tasting paid this round
    ({'Q': 3, 'S': 20, 'counts': [1, 2]}, 860)
    >>> sel.learner.feature
    4
    """

    name = "tasting_q1"

    def _select(self, evaluator, budget):
        tasted = self._taste(evaluator)
        q, s = self._qs(evaluator, budget)
        part = evaluator.partition
        counts = allocate_tasting(tasted, q, part.sizes)
        fids = _draw_per_family(part, counts=counts, rng=self.rng_)
        learner, _ = self._best_on_sample(evaluator, fids=fids, s=s)
        return learner, {"Q": int(fids.size), "S": s, "counts": counts.tolist()}
