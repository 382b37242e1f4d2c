"""Training-loss trajectories of every algorithm against plain NumPy reference boosters."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.boost import (
    AdaBoostMH,
    BoostedClassifier,
    fit_weak_learner,
    make_loss,
    trim_weights,
)
from vjboost.boost.losses import MulticlassLoss


def make_data(seed=0, n=70, f=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    y = np.where(X[:, 0] + 0.8 * X[:, 1] ** 2 - 0.5 + 0.7 * rng.normal(size=n) > 0, 1, -1)
    return X.astype(np.float32).astype(np.float64), y


def all_splits(X):
    """(feature, threshold, left mask) of every split between distinct values, in search order."""
    out = []
    for f in range(X.shape[1]):
        u = np.unique(X[:, f])
        for t in u[1:]:
            out.append((f, X[:, f] < t))
    return out


# ---------------------------------------------------------------- NumPy reference boosters
def ref_discrete(X, y, T, w0):
    F = np.zeros(y.size)
    losses, gammas = [], []
    splits = all_splits(X)
    for _ in range(T):
        w = w0 * np.exp(-y * F)
        w /= w.sum()
        best = None
        for _f, left in splits:
            for p in (1.0, -1.0):
                h = np.where(left, -p, p)
                err = w[h != y].sum()
                if best is None or err < best[0] - 1e-15:
                    best = (err, h)
        err, h = best
        alpha = 0.5 * np.log((1 - err) / err)
        F = F + alpha * h
        gammas.append(1 - 2 * err)
        losses.append(np.sum(w0 * np.exp(-y * F)))
    return np.array(losses), np.array(gammas), F


def ref_real(X, y, T, w0):
    F = np.zeros(y.size)
    losses = []
    eps = 1.0 / (2 * y.size)
    for _ in range(T):
        w = w0 * np.exp(-y * F)
        w /= w.sum()
        best = None
        for _f, left in all_splits(X):
            z = 0.0
            for side in (left, ~left):
                z += 2 * np.sqrt(w[side & (y > 0)].sum() * w[side & (y < 0)].sum())
            if best is None or z < best[0] - 1e-15:
                best = (z, left)
        left = best[1]
        h = np.zeros(y.size)
        for side in (left, ~left):
            wp, wn = w[side & (y > 0)].sum(), w[side & (y < 0)].sum()
            h[side] = 0.5 * np.log((wp + eps) / (wn + eps))
        F = F + h
        losses.append(np.sum(w0 * np.exp(-y * F)))
    return np.array(losses)


def wls_best(X, z, w):
    best = None
    for _f, left in all_splits(X):
        h = np.zeros(z.size)
        for side in (left, ~left):
            h[side] = np.sum(w[side] * z[side]) / w[side].sum()
        sse = np.sum(w * (z - h) ** 2)
        if best is None or sse < best[0] - 1e-15:
            best = (sse, h)
    return best[1]


def ref_gentle(X, y, T, w0):
    F = np.zeros(y.size)
    losses = []
    for _ in range(T):
        w = w0 * np.exp(-y * F)
        w /= w.sum()
        F = F + wls_best(X, y.astype(float), w)
        losses.append(np.sum(w0 * np.exp(-y * F)))
    return np.array(losses)


def ref_logit(X, y, T, w0):
    F = np.zeros(y.size)
    ystar = (y > 0).astype(float)
    losses = []
    for _ in range(T):
        p = 1 / (1 + np.exp(-2 * F))
        w = w0 * p * (1 - p)
        z = np.clip((ystar - p) / (p * (1 - p)), -4, 4)
        F = F + 0.5 * wls_best(X, z, w / w.sum())
        losses.append(np.sum(w0 * np.log1p(np.exp(-2 * y * F))))
    return np.array(losses)


REFS = {"discrete": ref_discrete, "real": ref_real, "gentle": ref_gentle, "logit": ref_logit}


@pytest.mark.parametrize("loss", ["discrete", "real", "gentle", "logit"])
@pytest.mark.parametrize("balanced", [False, True])
def test_loss_trajectory_matches_reference(loss, balanced):
    X, y = make_data(seed=1 + balanced)
    T = 12
    w0 = np.ones(y.size)
    if balanced:
        pos = y > 0
        w0 = np.where(pos, 0.5 / pos.sum(), 0.5 / (~pos).sum())
    w0 = w0 / w0.sum()
    ref = REFS[loss](X, y, T, w0)
    ref_losses = ref[0] if loss == "discrete" else ref
    model = BoostedClassifier(
        loss=loss, n_estimators=T, binning=False, balanced_init=balanced
    ).fit(X, y)
    np.testing.assert_allclose(model.train_loss_, ref_losses, rtol=1e-7)
    assert (np.diff(model.train_loss_) <= 1e-12).all()  # boosting never increases its loss
    # scores on the training set are the sum of the learners
    np.testing.assert_allclose(model.decision_function(X), model.train_scores_, atol=1e-9)


def test_discrete_training_error_bound():
    X, y = make_data(seed=3, n=120, f=5)
    T = 40
    model = BoostedClassifier(loss="discrete", n_estimators=T, binning=False).fit(X, y)
    _, gammas, _ = ref_discrete(X, y, T, np.full(y.size, 1 / y.size))
    np.testing.assert_allclose(model.edges_, gammas, rtol=1e-7)
    for t, f in enumerate(model.staged_decision_function(X)):
        err = np.mean(np.where(f > 0, 1, -1) != y)
        # edges_ holds 1 - 2 e_t; the bound's gamma_t = 1/2 - e_t is half of it:
        # error <= prod 2 sqrt(e_t (1 - e_t)) <= exp(-2 sum gamma_t^2)
        gamma = model.edges_[: t + 1] / 2
        bound = np.exp(-2 * np.sum(gamma**2))
        assert err <= np.prod(np.sqrt(1 - model.edges_[: t + 1] ** 2)) + 1e-12
        assert err <= bound + 1e-12
        assert np.isclose(model.train_loss_[t], np.prod(np.sqrt(1 - model.edges_[: t + 1] ** 2)))


def test_mh_trajectory_matches_reference():
    rng = np.random.default_rng(5)
    n, k = 60, 3
    X = rng.normal(size=(n, 3)).astype(np.float32).astype(np.float64)
    lab = np.argmax(X[:, :3] + 0.6 * rng.normal(size=(n, 3)), axis=1)
    Y = np.where(lab[:, None] == np.arange(k), 1.0, -1.0)
    W0 = np.full((n, k), 1.0 / (n * k))
    F = np.zeros((n, k))
    ref = []
    splits = all_splits(X)
    for _ in range(10):
        W = W0 * np.exp(-Y * F)
        W /= W.sum()
        best = None
        for _f, left in splits:
            phi = np.where(left, -1.0, 1.0)
            per_class = (W * Y * phi[:, None]).sum(0)
            g = np.abs(per_class).sum()
            if best is None or g > best[0] + 1e-15:
                best = (g, phi, np.where(per_class >= 0, 1.0, -1.0))
        g, phi, v = best
        alpha = 0.5 * np.log((1 + g) / (1 - g))
        F = F + alpha * phi[:, None] * v[None, :]
        ref.append(np.sum(W0 * np.exp(-Y * F)))
    model = AdaBoostMH(n_estimators=10, binning=False).fit(X, lab)
    np.testing.assert_allclose(model.train_loss_, ref, rtol=1e-7)


def test_weight_trimming_matches_opencv_rule():
    w = np.array([0.5, 0.3, 0.1, 0.05, 0.05])
    assert trim_weights(w, 0.95).tolist() == [0, 1, 2, 3, 4]  # 0.05 ties kept
    assert trim_weights(w, 0.85).tolist() == [0, 1, 2]
    assert trim_weights(w, 0.5).tolist() == [0]
    assert trim_weights(np.array([0.0, 1.0, 2.0]), 1.0).tolist() == [1, 2]
    with pytest.raises(ValueError, match="rate: must be in the range"):
        trim_weights(w, 0.0)


def test_trimmed_fit_refits_on_all_examples():
    X, y = make_data(seed=7, n=200)
    m = BoostedClassifier(loss="gentle", n_estimators=15, weight_trim_rate=0.8, binning=False)
    m.fit(X, y)
    # leaf values are weighted means over ALL examples reaching the leaf, at that round's weights
    step = make_loss("gentle", np.where(y > 0, 1.0, -1.0))
    for est in m.estimators_:
        leaf = est.apply(X.T[est.features_].astype(np.float32))
        w = step.weights
        ref = np.array([np.sum((w * step.y)[leaf == j]) / w[leaf == j].sum() for j in range(2)])
        np.testing.assert_allclose(est.leaves, ref, rtol=1e-9, atol=1e-12)
        step.update(est.leaves[leaf])
    np.testing.assert_allclose(step.loss(), m.train_loss_[-1], rtol=1e-12)


def test_trimmed_examples_take_no_part_with_fitted_leaves():
    """leaf_refit="fitted" (Friedman, Hastie & Tibshirani's trimming): leaves from the kept
    examples only."""
    X, y = make_data(seed=8, n=200)
    y_pm = np.where(y > 0, 1.0, -1.0)
    for loss in ("gentle", "real"):
        m = BoostedClassifier(loss=loss, n_estimators=12, weight_trim_rate=0.8,
                              leaf_refit="fitted", binning=False).fit(X, y)
        step = make_loss(loss, y_pm)
        for est in m.estimators_:
            leaf = est.apply(X.T[est.features_].astype(np.float32))
            w = step.weights
            keep = np.zeros(y.size, bool)
            keep[trim_weights(w, 0.8)] = True
            ref = []
            for j in range(2):
                side = (leaf == j) & keep
                if loss == "gentle":
                    ref.append(np.sum((w * y_pm)[side]) / w[side].sum())
                else:
                    eps = w[keep].sum() / (2 * keep.sum())
                    wp, wn = w[side & (y_pm > 0)].sum(), w[side & (y_pm < 0)].sum()
                    ref.append(0.5 * np.log((wp + eps) / (wn + eps)))
            np.testing.assert_allclose(est.leaves, ref, rtol=1e-9, atol=1e-12)
            step.update(est.leaves[leaf])
        np.testing.assert_allclose(step.loss(), m.train_loss_[-1], rtol=1e-12)


def test_step_interface_on_blocks_equals_full_matrix():
    """A sampler-style loop over (features x examples) blocks reproduces the estimator."""
    X, y = make_data(seed=11, n=150, f=6)
    Xfm = np.ascontiguousarray(X.T, dtype=np.float32)
    y_pm = np.where(y > 0, 1.0, -1.0)
    for loss in ("discrete", "real", "gentle", "logit"):
        model = BoostedClassifier(loss=loss, n_estimators=8, binning=False,
                                  weight_trim_rate=0.9).fit(X, y)
        step = make_loss(loss, y_pm)
        for t in range(8):
            ids = step.trim(0.9)
            fids = np.array([5, 0, 3, 1, 2, 4])
            block = Xfm[fids][:, ids]  # what a feature family would evaluate
            learner, search = fit_weak_learner(
                step, block, sample_ids=ids, block=True, feature_ids=fids, kind="stump"
            )
            assert search.score.shape == (6,)
            rows = Xfm[learner.features_]
            cur = step.refit_and_update(learner, rows)
            ref = model.estimators_[t]
            np.testing.assert_array_equal(learner.feature, ref.feature)
            np.testing.assert_array_equal(learner.threshold, ref.threshold)
            np.testing.assert_allclose(learner.leaves, ref.leaves, rtol=1e-10)
            np.testing.assert_allclose(cur, model.train_loss_[t], rtol=1e-10)


def test_multiclass_loss_validation():
    with pytest.raises(ValueError, match=r"y: class indices must be in \[0, 3\)"):
        MulticlassLoss(np.array([0, 1, 3]), n_classes=3)
    with pytest.raises(ValueError, match="y: labels must be 1 \\(positive\\) and -1"):
        make_loss("gentle", np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="y: only one class"):
        make_loss("gentle", np.array([1, 1, 1]))
    with pytest.raises(ValueError, match="loss: expected one of"):
        make_loss("hinge", np.array([1, -1]))
