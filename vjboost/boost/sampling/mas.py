"""M.A.S. (Maximum Adaptive Sampling): choose ``(Q, S)`` maximizing the expected true edge.

Model. True edges of the features of a family follow a 1-D Gaussian mixture
``sum_c pi_c N(mu_c, v_c)``; the edge measured on ``S`` examples drawn from the weights is the true
edge plus noise ``N(0, sigma^2)`` with ``sigma^2 = 1 / S``. With ``Q_k`` features drawn from family
``k`` and the learner of largest *measured* edge kept, the expected *true* edge of the kept learner
is (``X_k``: measured edge of a family-``k`` feature, density ``f_k``, CDF ``F_k``)

    E = int sum_k Q_k g_k(x) F_k(x)^(Q_k - 1) prod_{j != k} F_j(x)^Q_j dx,
    g_k(x) = f_k(x) E[edge | X_k = x] = sum_c pi_c N(x; mu_c, v_c + sigma^2)
             (mu_c + v_c / (v_c + sigma^2) (x - mu_c)),

computed by quadrature on a grid (:func:`expected_selected_edge`). Each round the strategies pick,
among ``S`` on a geometric grid and ``Q = budget // S``, the choice of largest ``E``:

* :class:`MASNaive` -- one mixture for the whole pool, fitted on the edges measured at the
  previous round (deconvolved by that round's ``1 / S``); ``Q`` features uniformly from the pool.
* :class:`MAS1Q` -- one mixture per family, fitted each round on a fresh probe that spends
  ``fit_fraction`` (10%) of the budget; the best (family, ``Q``, ``S``).
* :class:`MASQ1` -- the same per-family fits; for each ``S`` the ``Q_k`` are allocated greedily.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from vjboost.boost.sampling.base import (
    Sampler,
    _default_examples,
    _draw_per_family,
    check_count,
    draw_features,
)
from vjboost.boost.sampling.evaluator import BlockEdges, EdgeEvaluator

__all__ = [
    "MAS1Q",
    "MASNaive",
    "MASQ1",
    "GaussianMixture1D",
    "allocate_mas",
    "expected_selected_edge",
    "fit_mixture",
]

_VAR_FLOOR = 1e-6


@dataclass
class GaussianMixture1D:
    """``sum_c weights[c] N(means[c], variances[c])``.

    Parameters
    ----------
    weights : array-like of shape (C,)
        Non-negative component weights with a positive sum (normalised to sum 1).
    means : array-like of shape (C,)
        Component means.
    variances : array-like of shape (C,)
        Non-negative component variances (floored at 1e-6).

    Examples
    --------
    >>> mix = GaussianMixture1D([1, 3], [0.1, 0.3], [1e-4, 4e-4])
    >>> mix.weights.tolist()
    [0.25, 0.75]
    >>> draws = mix.sample(1000, np.random.default_rng(0))
    >>> draws.shape, round(float(draws.mean()), 2)  # 0.25 * 0.1 + 0.75 * 0.3
    ((1000,), 0.25)
    """

    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray

    def __post_init__(self) -> None:
        self.weights = np.asarray(self.weights, dtype=np.float64).reshape(-1)
        self.means = np.asarray(self.means, dtype=np.float64).reshape(-1)
        self.variances = np.asarray(self.variances, dtype=np.float64).reshape(-1)
        sizes = {self.weights.size, self.means.size, self.variances.size}
        if len(sizes) != 1 or not self.weights.size:
            raise ValueError("mixture: weights, means and variances need the same (non-zero) size")
        if (self.weights < 0).any() or not self.weights.sum() > 0:
            raise ValueError("mixture: weights must be non-negative with a positive sum")
        if (self.variances < 0).any():
            raise ValueError("mixture: variances must be non-negative")
        self.weights = self.weights / self.weights.sum()
        self.variances = np.maximum(self.variances, _VAR_FLOOR)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` i.i.d. draws from the mixture.

        Parameters
        ----------
        n : int
            Number of draws.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of shape (n,), float64
        """
        comp = rng.choice(self.weights.size, size=n, p=self.weights)
        return rng.normal(self.means[comp], np.sqrt(self.variances[comp]))


def fit_mixture(
    x: Any, n_components: int = 2, noise_var: float = 0.0, n_iter: int = 50
) -> GaussianMixture1D:
    """Fit a 1-D Gaussian mixture to noisy edges by EM and remove the noise variance.

    Deterministic: components start at quantiles of ``x``. The fitted variances minus
    ``noise_var`` (floored) are the variances of the true edges.

    Parameters
    ----------
    x : array-like
        Measured edges (non-finite entries are ignored; at least one must be finite).
    n_components : int, default 2
        Components, at most ``len(x) // 2`` (one below 4 edges).
    noise_var : float, default 0.0
        Variance of the measurement noise (``1 / S`` for edges measured on ``S`` examples).
    n_iter : int, default 50
        Most EM iterations (fewer when the log-likelihood stops improving).

    Returns
    -------
    GaussianMixture1D
        The mixture of the true edges.

    Examples
    --------
    True edges from two groups (sd 0.01 and 0.02), measured with noise of sd 0.05:

    >>> rng = np.random.default_rng(0)
    >>> true = np.concatenate([rng.normal(0.1, 0.01, 300), rng.normal(0.4, 0.02, 100)])
    >>> measured = true + rng.normal(0.0, 0.05, true.size)
    >>> mix = fit_mixture(measured, 2, noise_var=0.05**2)
    >>> np.round(mix.weights, 2).tolist(), np.round(mix.means, 2).tolist()
    ([0.75, 0.25], [0.1, 0.39])
    >>> np.round(np.sqrt(mix.variances), 3).tolist()  # the noise variance is taken out
    [0.011, 0.033]
    >>> np.round(np.sqrt(fit_mixture(measured, 2).variances), 3).tolist()  # noise left in
    [0.051, 0.06]
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise ValueError("x: no finite edge to fit a mixture on")
    c = max(1, min(int(n_components), x.size // 2 if x.size >= 4 else 1))
    spread = float(x.var())
    floor = max(noise_var, _VAR_FLOOR) * 1e-2 + 1e-8
    means = np.quantile(x, (np.arange(c) + 0.5) / c)
    variances = np.full(c, max(spread / c, floor))
    weights = np.full(c, 1.0 / c)
    prev_ll = -np.inf
    for _ in range(n_iter):
        d = x[:, None] - means[None, :]
        logp = -0.5 * d * d / variances - 0.5 * np.log(2 * np.pi * variances) + np.log(weights)
        m = logp.max(axis=1, keepdims=True)
        resp = np.exp(logp - m)
        tot = resp.sum(axis=1, keepdims=True)
        ll = float(np.sum(np.log(tot) + m))
        resp /= tot
        if ll - prev_ll < 1e-6 * x.size:
            break
        prev_ll = ll
        nk = resp.sum(axis=0) + 1e-12
        weights = nk / x.size
        means = (resp * x[:, None]).sum(axis=0) / nk
        d = x[:, None] - means[None, :]
        variances = np.maximum((resp * d * d).sum(axis=0) / nk, floor)
    return GaussianMixture1D(weights, means, np.maximum(variances - noise_var, _VAR_FLOOR))


@njit(cache=True, nogil=True)
def _family_terms(grid, w, mu, var, noise, log_cdf, g):
    """log F(x) and g(x) of one mixture plus noise on the grid."""
    for i in range(grid.shape[0]):
        x = grid[i]
        cdf = 0.0
        gi = 0.0
        for c in range(w.shape[0]):
            s2 = var[c] + noise
            s = math.sqrt(s2)
            z = (x - mu[c]) / s
            cdf += w[c] * 0.5 * math.erfc(-z / math.sqrt(2.0))
            dens = w[c] * math.exp(-0.5 * z * z) / (s * math.sqrt(2.0 * math.pi))
            gi += dens * (mu[c] + var[c] / s2 * (x - mu[c]))
        log_cdf[i] = math.log(max(cdf, 1e-300))
        g[i] = gi


def _grid(mixtures: list[GaussianMixture1D], noise: float, n: int = 512) -> np.ndarray:
    lo = min(float(np.min(m.means - 8 * np.sqrt(m.variances + noise))) for m in mixtures)
    hi = max(float(np.max(m.means + 8 * np.sqrt(m.variances + noise))) for m in mixtures)
    return np.linspace(lo, hi, n)


def _terms(mixtures, noise, grid):
    k = len(mixtures)
    log_cdf = np.empty((k, grid.size))
    g = np.empty((k, grid.size))
    for j, m in enumerate(mixtures):
        _family_terms(grid, m.weights, m.means, m.variances, float(noise), log_cdf[j], g[j])
    return log_cdf, g


def _expected(grid, log_cdf, g, counts: np.ndarray) -> np.ndarray:
    """E for allocations ``counts`` (C, K) -> (C,)."""
    log_all = counts @ log_cdf  # (C, G)
    # term_k = Q_k g_k F_k^(Q_k - 1) prod_{j != k} F_j^Q_j = Q_k g_k exp(log_all - log F_k);
    # the exponent is <= 0 whenever Q_k >= 1 (clipping only touches terms multiplied by Q_k = 0)
    expo = np.minimum(log_all[:, None, :] - log_cdf[None, :, :], 0.0)
    vals = np.einsum("ck,kg,ckg->cg", counts, g, np.exp(expo))
    dx = grid[1] - grid[0]
    return vals.sum(axis=1) * dx


def expected_selected_edge(
    mixtures: GaussianMixture1D | list[GaussianMixture1D], counts: Any, noise_var: float,
    n_grid: int = 512,
) -> float:
    """Expected true edge of the learner of largest measured edge (see the module docstring).

    Parameters
    ----------
    mixtures : GaussianMixture1D or list of K of them
        True-edge distributions of the families.
    counts : int or array-like of shape (K,)
        Features drawn from each family (``Q_k``).
    noise_var : float
        ``sigma^2`` of the measurement noise (``1 / S``).

    Examples
    --------
    True edges ~ N(0.1, 0.05^2): the best of 10 features is better than one, unless the
    measurement noise hides which one is best.

    >>> mix = GaussianMixture1D([1.0], [0.1], [0.05**2])
    >>> round(expected_selected_edge(mix, 1, 0.0), 4)
    0.1
    >>> round(expected_selected_edge(mix, 10, 0.0), 4)
    0.1769
    >>> round(expected_selected_edge(mix, 10, 1 / 100), 4)  # edges measured on S = 100
    0.1344
    """
    if isinstance(mixtures, GaussianMixture1D):
        mixtures = [mixtures]
    q = np.atleast_1d(np.asarray(counts, dtype=np.float64))
    if q.size != len(mixtures):
        raise ValueError(f"counts: expected {len(mixtures)} entries, got {q.size}")
    if (q < 0).any() or q.sum() <= 0:
        raise ValueError("counts: need non-negative counts with at least one feature")
    grid = _grid(mixtures, noise_var, n_grid)
    log_cdf, g = _terms(mixtures, noise_var, grid)
    return float(_expected(grid, log_cdf, g, q[None, :])[0])


def allocate_mas(
    mixtures: list[GaussianMixture1D], q: int, sizes: np.ndarray, noise_var: float,
    n_steps: int = 16, n_grid: int = 192,
) -> tuple[np.ndarray, float]:
    """Greedy ``Q_k`` (sum ``<= q``, ``Q_k <= sizes[k]``) maximizing the expected selected edge.

    ``q`` is handed out in ``n_steps`` chunks, each to the family that raises
    :func:`expected_selected_edge` most.

    Parameters
    ----------
    mixtures : list of K GaussianMixture1D
        True-edge distributions of the families.
    q : int
        Features to draw in all.
    sizes : ndarray of shape (K,), int
        Features in each family (upper bounds of ``Q_k``).
    noise_var : float
        Variance of the measurement noise (``1 / S``).
    n_steps : int, default 16
        Chunks ``q`` is divided into.
    n_grid : int, default 192
        Points of the integration grid.

    Returns
    -------
    counts : ndarray of shape (K,), int64
    expected : float
        The expected selected edge of ``counts`` (0.0 when ``q`` is 0).

    Examples
    --------
    A steady family (edges near 0.2) and a spread one (mean 0.1, sd 0.1): with exact
    measurements most draws go to the spread family, whose best edges are larger; with noisy
    ones (``S = 10``) its lucky measurements mislead, and all go to the steady family.

    >>> steady = GaussianMixture1D([1.0], [0.2], [0.01**2])
    >>> spread = GaussianMixture1D([1.0], [0.1], [0.1**2])
    >>> counts, edge = allocate_mas([steady, spread], 32, np.array([100, 100]), 0.0)
    >>> counts.tolist(), round(edge, 3)
    ([2, 30], 0.304)
    >>> counts, edge = allocate_mas([steady, spread], 32, np.array([100, 100]), 1 / 10)
    >>> counts.tolist(), round(edge, 3)
    ([32, 0], 0.201)
    """
    k = len(mixtures)
    grid = _grid(mixtures, noise_var, n_grid)
    log_cdf, g = _terms(mixtures, noise_var, grid)
    counts = np.zeros(k)
    chunk = max(1, -(-q // n_steps))
    left = min(q, int(sizes.sum()))
    best_val = 0.0
    while left > 0:
        step = min(chunk, left)
        room = sizes - counts
        cand = np.tile(counts, (k, 1)) + np.diag(np.minimum(step, room))
        value = _expected(grid, log_cdf, g, cand)
        value[room <= 0] = -np.inf
        j = int(np.argmax(value))
        add = min(step, room[j])
        counts[j] += add
        left -= int(add)
        best_val = float(value[j])
    return counts.astype(np.int64), best_val


def _s_grid(n_samples: int, budget: int, s_min: int) -> np.ndarray:
    top = max(s_min, min(budget, 4 * n_samples))
    out = []
    s = s_min
    while s <= top:
        out.append(s)
        s *= 2
    return np.array(out or [s_min], dtype=np.int64)


class _MAS(Sampler):
    def __init__(
        self, n_components: int = 2, *, s_min: int = 16, random_state: Any = None
    ) -> None:
        super().__init__(random_state)
        self.n_components = check_count(n_components, "n_components")
        self.s_min = check_count(s_min, "s_min")


class MASNaive(_MAS):
    """M.A.S. Naive: one mixture for the pool, from the previous round's measured edges.

    Parameters
    ----------
    n_components : int, default=2
        Mixture components.
    s_min : int, default=16
        Smallest ``S`` considered (``S`` takes the values ``s_min * 2^j``).

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sampler = MASNaive(random_state=0)
    >>> first, second = sampler.select(ev, 400), sampler.select(ev, 400)
    >>> first.info["S"], second.info["S"]  # sqrt(budget) first, then the model's choice
    (20, 64)
    >>> second.info["Q"], second.cost, second.learner.feature
    (6, 384, 4)
    """

    name = "mas_naive"

    def _setup(self, evaluator, budget):
        self.prev_: BlockEdges | None = None

    def _select(self, evaluator, budget):
        f = evaluator.n_features
        if self.prev_ is None:
            s = _default_examples(evaluator, budget=budget)
            q = min(f, max(1, budget // s))
            expected = float("nan")
        else:
            e = self.prev_.edges
            noise = 1.0 / self.prev_.sample_ids.size
            mix = fit_mixture(e[np.isfinite(e)], self.n_components, noise)
            best = (-np.inf, 1, 1)
            for s in _s_grid(evaluator.n_samples, budget, self.s_min):
                q = int(min(f, budget // s))
                if q < 1:
                    continue
                val = expected_selected_edge(mix, [q], 1.0 / s, n_grid=256)
                if val > best[0]:
                    best = (val, q, int(s))
            expected, q, s = best
        fids = draw_features(np.arange(f), q, self.rng_)
        learner, b = self._best_on_sample(evaluator, fids=fids, s=s)
        self.prev_ = b
        return learner, {"Q": int(fids.size), "S": s, "expected": expected}


class _MASFamilies(_MAS):
    def __init__(
        self, n_components: int = 2, *, s_min: int = 16, fit_fraction: float = 0.1,
        fit_examples: int | None = None, random_state: Any = None,
    ) -> None:
        super().__init__(n_components, s_min=s_min, random_state=random_state)
        if not 0.0 < float(fit_fraction) < 1.0:
            raise ValueError(f"fit_fraction: must be in (0, 1), got {fit_fraction}")
        self.fit_fraction = float(fit_fraction)
        if fit_examples is not None:
            check_count(fit_examples, "fit_examples")
        self.fit_examples = fit_examples

    def _fit_families(self, evaluator: EdgeEvaluator, budget: int):
        """Fresh probe of every family (``fit_fraction`` of the budget) -> mixtures, cost."""
        part = evaluator.partition
        k = part.n_families
        fit_budget = max(k, int(self.fit_fraction * budget))
        s_fit = self.fit_examples or int(max(1, min(evaluator.n_samples,
                                                    np.sqrt(fit_budget / k) * 2)))
        per_family = max(1, fit_budget // (k * s_fit))
        draws = evaluator.sample_examples(s_fit, self.rng_)
        mixtures, spent = [], 0
        for j in range(k):
            fids = draw_features(part.members[j], per_family, self.rng_)
            b = evaluator.block(fids, draws)
            spent += fids.size * s_fit
            e = b.edges[np.isfinite(b.edges)]
            if e.size == 0:
                e = np.zeros(1)
            mixtures.append(fit_mixture(e, self.n_components, 1.0 / s_fit))
        return mixtures, spent


class MAS1Q(_MASFamilies):
    """M.A.S. 1.Q: per-family mixtures from a fresh probe; the best (family, Q, S).

    Parameters
    ----------
    n_components, s_min
        As in :class:`MASNaive`.
    fit_fraction : float, default=0.1
        Share of the budget spent on the per-family probe each round.
    fit_examples : int, optional
        ``S`` of the probe (default ``2 sqrt(fit_budget / K)``).
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
    >>> sel = MAS1Q(random_state=0).select(ev, 2000)
    >>> {k: sel.info[k] for k in ("family", "Q", "S")}
    {'family': 1, 'Q': 2, 'S': 512}
    >>> sel.cost, sel.learner.feature  # the probe and the chosen block
    (1144, 4)
    """

    name = "mas_1q"

    def _select(self, evaluator, budget):
        mixtures, spent = self._fit_families(evaluator, budget)
        rest = max(1, budget - spent)
        sizes = evaluator.partition.sizes
        best = (-np.inf, 0, 1, 1)
        for s in _s_grid(evaluator.n_samples, rest, self.s_min):
            q = np.minimum(sizes, rest // s).astype(np.float64)
            if q.max() < 1:
                continue
            grid = _grid(mixtures, 1.0 / s, 256)
            log_cdf, g = _terms(mixtures, 1.0 / s, grid)
            vals = _expected(grid, log_cdf, g, np.diag(q))  # family j alone, Q_j features
            vals[q < 1] = -np.inf
            j = int(np.argmax(vals))
            if vals[j] > best[0]:
                best = (float(vals[j]), j, int(q[j]), int(s))
        expected, fam, q, s = best
        if not np.isfinite(expected):
            fam, s = 0, 1
            q = int(min(sizes[0], rest))
        learner, info = self._best_in_family(evaluator, family=fam, q=q, s=s)
        return learner, {**info, "expected": expected}


class MASQ1(_MASFamilies):
    """M.A.S. Q.1: per-family mixtures; for each ``S`` a greedy allocation of the ``Q_k``.

    Parameters
    ----------
    n_components, s_min, fit_fraction, fit_examples, random_state
        As in :class:`MAS1Q`.

    Examples
    --------
    >>> from vjboost.boost.sampling import EdgeEvaluator, MatrixSource, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 200)).astype(np.float32)
    >>> y = np.where(X[4] > 0, 1.0, -1.0)  # feature 4, of family 1, decides
    >>> ev = EdgeEvaluator(MatrixSource(X, families=[4, 2]))
    >>> ev.set_problem(Problem(np.full(200, 1 / 200), y, "discrete"))
    >>> sel = MASQ1(random_state=0).select(ev, 2000)
    >>> {k: sel.info[k] for k in ("counts", "Q", "S")}
    {'counts': [1, 2], 'Q': 3, 'S': 512}
    >>> sel.cost, sel.learner.feature  # the probe and the chosen block
    (1656, 4)
    """

    name = "mas_q1"

    def _select(self, evaluator, budget):
        mixtures, spent = self._fit_families(evaluator, budget)
        rest = max(1, budget - spent)
        part = evaluator.partition
        best = (-np.inf, None, 1)
        for s in _s_grid(evaluator.n_samples, rest, self.s_min):
            q = int(rest // s)
            if q < 1:
                continue
            counts, val = allocate_mas(mixtures, q, part.sizes, 1.0 / s)
            if val > best[0]:
                best = (val, counts, int(s))
        expected, counts, s = best
        if counts is None:
            counts = np.zeros(part.n_families, dtype=np.int64)
            counts[0] = min(part.sizes[0], rest)
            s = 1
        fids = _draw_per_family(part, counts=counts, rng=self.rng_)
        learner, _ = self._best_on_sample(evaluator, fids=fids, s=s)
        return learner, {"Q": int(fids.size), "S": s, "counts": counts.tolist(),
                         "expected": expected}
