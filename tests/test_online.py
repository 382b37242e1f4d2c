"""Online Coordinate Boosting and the Oza–Russell update against plain reference implementations."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.boost import BoostedClassifier
from vjboost.boost.online import (
    OnlineCoordinateBoost,
    OzaBoostWeights,
    alpha_approximation_error,
    batch_coordinate_alpha,
    margins_from_hypotheses,
)


def _correlated_margins(rng, n, J):
    p = rng.uniform(0.55, 0.75, J)
    latent = rng.random((n, 1))  # shared example difficulty: hypotheses err together
    return np.where(0.5 * latent + 0.5 * rng.random((n, J)) < p, 1, -1).astype(np.int8)


def _order0_reference(M, eps):
    """No corrections: α_j is the log-ratio of the weights examples had when they arrived."""
    J = M.shape[1]
    wp, wn, alpha = np.full(J, eps), np.full(J, eps), np.zeros(J)
    for m in M:
        d = 1.0
        for j in range(J):
            if m[j] > 0:
                wp[j] += d
            else:
                wn[j] += d
            alpha[j] = 0.5 * np.log(wp[j] / wn[j])
            d *= np.exp(-alpha[j] * m[j])
    return alpha


def _oza_reference(M, eps):
    J = M.shape[1]
    sc, sw = np.full(J, eps), np.full(J, eps)
    for m in M:
        lam = 1.0
        for j in range(J):
            if m[j] > 0:
                sc[j] += lam
                lam /= 2 * (1 - sw[j] / (sc[j] + sw[j]))
            else:
                sw[j] += lam
                lam /= 2 * (sw[j] / (sc[j] + sw[j]))
    return 0.5 * np.log(sc / sw)


def test_order_zero_is_the_uncorrected_update(rng):
    M = _correlated_margins(rng, 300, 6)
    ocb = OnlineCoordinateBoost(n_hypotheses=6, order=0, smoothing=0.3)
    ocb.learn_margins(M)
    np.testing.assert_allclose(ocb.alpha_, _order0_reference(M, 0.3), rtol=1e-12)


def _ocb_reference(M, K, eps):
    """The paper's K-order update with every pairwise sum kept, in plain Python."""
    J = M.shape[1]
    wp, wn = np.full((J, J), eps), np.full((J, J), eps)
    alpha, inc = np.zeros(J), np.zeros(J)
    for m in M:
        d = 1.0
        for j in range(J):
            pp = pn = 1.0
            for k in range(max(0, j - K), j):
                f, g = wp[j, k] / wp[j, j], wn[j, k] / wn[j, j]
                pp *= f * np.exp(-inc[k]) + (1 - f) * np.exp(inc[k])
                pn *= g * np.exp(inc[k]) + (1 - g) * np.exp(-inc[k])
            for k in range(j + 1):
                wp[j, k] = wp[j, k] * pp + (d if m[k] > 0 and m[j] > 0 else 0.0)
                wn[j, k] = wn[j, k] * pn + (d if m[k] < 0 and m[j] < 0 else 0.0)
            a = 0.5 * np.log(wp[j, j] / wn[j, j])
            inc[j], alpha[j] = a - alpha[j], a
            d *= np.exp(-a * m[j])
    return alpha


@pytest.mark.parametrize("order", [1, 3, 7])
def test_k_order_matches_full_pairwise_reference(rng, order):
    # the kernel keeps only the band of pairwise sums that order K reads: must be exact
    M = _correlated_margins(rng, 250, 8)
    ocb = OnlineCoordinateBoost(n_hypotheses=8, order=order, smoothing=0.4)
    ocb.learn_margins(M)
    np.testing.assert_allclose(ocb.alpha_, _ocb_reference(M, order, 0.4), rtol=1e-9)


def test_oza_matches_reference(rng):
    M = _correlated_margins(rng, 300, 6)
    oza = OzaBoostWeights(n_hypotheses=6, smoothing=0.3)
    oza.learn_margins(M)
    np.testing.assert_allclose(oza.alpha_, _oza_reference(M, 0.3), rtol=1e-12)


def test_batch_alpha_matches_explicit_reweighting(rng):
    M = _correlated_margins(rng, 200, 5).astype(float)
    alpha = batch_coordinate_alpha(M, 0.1)
    d = np.ones(len(M))
    for j in range(5):
        a = 0.5 * np.log((0.1 + d @ (M[:, j] > 0)) / (0.1 + d @ (M[:, j] < 0)))
        assert alpha[j] == pytest.approx(a)
        d = d * np.exp(-a * M[:, j])


def test_init_from_margins_is_batch_adaboost(rng):
    M = _correlated_margins(rng, 150, 7)
    ocb = OnlineCoordinateBoost(n_hypotheses=7, smoothing=0.5).init_from_margins(M)
    np.testing.assert_allclose(ocb.alpha_, batch_coordinate_alpha(M, 0.5))
    assert ocb.n_seen_ == 150


def test_repeated_training_set_approaches_batch(rng):
    M = _correlated_margins(rng, 400, 10)
    target = batch_coordinate_alpha(M, 1e-9)
    ocb = OnlineCoordinateBoost(n_hypotheses=10, order=3, smoothing=0.01)
    errors = []
    for _ in range(30):
        ocb.learn_margins(M)
        errors.append(alpha_approximation_error(target, ocb.alpha_))
    assert errors[-1] < errors[0] / 5
    assert errors[-1] < 0.005


def test_higher_order_tracks_batch_better_than_oza(rng):
    M = _correlated_margins(rng, 20000, 20)
    target = batch_coordinate_alpha(M, 0.5)
    errs = {}
    for k in (0, 19):
        ocb = OnlineCoordinateBoost(n_hypotheses=20, order=k).init_from_margins(M[:100])
        ocb.learn_margins(M[100:])
        errs[k] = alpha_approximation_error(target, ocb.alpha_)
    oza = OzaBoostWeights(n_hypotheses=20)
    oza.learn_margins(M)
    errs["oza"] = alpha_approximation_error(target, oza.alpha_)
    assert errs[19] < errs[0] and errs[19] < errs["oza"]


def test_river_api_with_boosted_stumps(rng):
    X = rng.normal(size=(400, 6)).astype(np.float32)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] - 0.3 * X[:, 2] > 0, 1, -1)
    clf = BoostedClassifier(loss="discrete", n_estimators=8, random_state=0).fit(X[:200], y[:200])
    hyps = clf.estimators_
    a = OnlineCoordinateBoost(hyps, order=2)
    b = OnlineCoordinateBoost(hyps, order=2)
    for xi, yi in zip(X[200:260], y[200:260], strict=True):
        a.learn_one(xi, yi)
    b.learn_many(X[200:260], y[200:260])
    np.testing.assert_array_equal(a.alpha_, b.alpha_)
    M = margins_from_hypotheses(hyps, X, y)
    want = np.stack(
        [np.where(h.predict_matrix(np.ascontiguousarray(X.T)) >= 0, 1, -1) for h in hyps], 1
    )
    np.testing.assert_array_equal(M, want * y[:, None])
    b.learn_many(X[260:], y[260:])
    assert np.mean(b.predict_many(X) == y) > 0.8
    assert b.predict_one(X[0]) in (-1, 1)


def test_bad_input():
    with pytest.raises(ValueError, match="hypotheses or n_hypotheses"):
        OnlineCoordinateBoost()
    ocb = OnlineCoordinateBoost(n_hypotheses=3)
    with pytest.raises(ValueError, match="expected 3 columns"):
        ocb.learn_margins(np.ones((2, 4)))
    with pytest.raises(ValueError, match="must be -1 or \\+1"):
        ocb.learn_margins([[1, 0, 1]])
    with pytest.raises(ValueError, match="NaN"):
        ocb.learn_margins([[1, np.nan, 1]])
    with pytest.raises(ValueError, match="no hypotheses"):
        ocb.learn_one([0.0, 1.0], 1)
    with pytest.raises(ValueError, match="order"):
        OnlineCoordinateBoost(n_hypotheses=3, order=-1)
    with pytest.raises(ValueError, match="smoothing"):
        OzaBoostWeights(n_hypotheses=3, smoothing=0)
    with pytest.raises(ValueError, match="labels must be 1 \\(positive\\) and -1"):
        margins_from_hypotheses([lambda X: X[:, 0]], np.zeros((2, 1)), [0, 1])



def test_examples_with_too_few_features_are_said_in_features(rng):
    """An example shorter than the features the hypotheses read is refused in the caller's
    terms (its features), not the trees' feature-major "X has 1 rows"."""
    X = rng.normal(size=(200, 8)).astype(np.float32)
    y = np.where(X[:, 7] > 0, 1, -1)  # every stump reads feature 7
    hyps = BoostedClassifier(loss="discrete", n_estimators=3, random_state=0).fit(X, y).estimators_
    assert max(int(h.features_.max()) for h in hyps) == 7
    for learner in (OnlineCoordinateBoost(hyps), OzaBoostWeights(hyps)):
        for method, arg in ((learner.learn_one, (X[0, :1], 1)), (learner.predict_one, (X[0, :7],)),
                            (learner.predict_many, (X[:3, :2],))):
            with pytest.raises(ValueError, match=r"examples have \d feature\(s\), but "
                                                 r"hypothesis 0 reads feature 7"):
                method(*arg)
        assert learner.n_seen_ == 0
        learner.learn_one(X[0], y[0])  # eight features are enough
        assert learner.n_seen_ == 1


def test_long_stages_stay_finite(rng):
    # 300 accurate hypotheses: exp(sum of alphas) overflows float64 without rescaling
    J = 300
    M = np.where(rng.random((400, J)) < 0.9, 1, -1).astype(np.int8)
    M[:50] = -1  # hard examples everyone gets wrong
    target = batch_coordinate_alpha(M, 0.5)
    assert np.isfinite(target).all()
    ocb = OnlineCoordinateBoost(n_hypotheses=J, order=10).init_from_margins(M[:100])
    np.testing.assert_allclose(ocb.alpha_, batch_coordinate_alpha(M[:100], 0.5), rtol=1e-9)
    ocb.learn_margins(M[100:])
    assert np.isfinite(ocb.alpha_).all()
    assert np.isfinite(ocb.w_pos_).all() and np.isfinite(ocb.w_neg_).all()


def test_sample_weight_is_duplication_in_batch_init(rng):
    M = _correlated_margins(rng, 60, 5)
    w = rng.integers(1, 4, 60)
    a = OnlineCoordinateBoost(n_hypotheses=5).init_from_margins(M, sample_weight=w.astype(float))
    b = OnlineCoordinateBoost(n_hypotheses=5).init_from_margins(np.repeat(M, w, axis=0))
    np.testing.assert_allclose(a.alpha_, b.alpha_)
    with pytest.raises(ValueError, match="sample_weight: weights must be positive"):
        a.learn_margins(M[:2], sample_weight=[1.0, 0.0])
