"""Multi-class boosting: J-class LogitBoost, AdaBoost.MH (shared and per-class learners), best-first
trees and margins, against plain NumPy reference boosters."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.boost import AdaBoostMH, LogitBoostClassifier, search_stumps


def make_data(seed=0, n=90, f=3, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32).astype(np.float64)
    score = X[:, :k] + 0.2 * X[:, [1, 2, 0]] ** 2 + 0.7 * rng.normal(size=(n, k))
    return X, np.argmax(score, axis=1)


def all_splits(X, ids=None):
    """Left masks (over ``ids``) of every split between distinct values, in search order."""
    ids = np.arange(X.shape[0]) if ids is None else ids
    out = []
    for f in range(X.shape[1]):
        x = X[ids, f]
        out.extend(x < t for t in np.unique(x)[1:])
    return out


def ls_score(w, r, left):
    """Weighted least-squares split score, summed over the columns of (N,) or (N, K) w, r."""
    out = 0.0
    for side in (left, ~left):
        a, b = w[side].sum(axis=0), (w * r)[side].sum(axis=0)
        out += float(np.sum(np.divide(b * b, a, out=np.zeros_like(b), where=a > 0)))
    return out


def real_score(w, y, left):
    out = 0.0
    for side in (left, ~left):
        wp = np.where(y > 0, w, 0.0)[side].sum(axis=0)
        wn = np.where(y < 0, w, 0.0)[side].sum(axis=0)
        out += float(np.sum(wp + wn - 2.0 * np.sqrt(wp * wn)))
    return out


def best_stump(score, splits):
    best = None
    for left in splits:
        s = score(left)
        if best is None or s > best[0] + 1e-12:
            best = (s, left)
    return best[1]


def softmax(F):
    e = np.exp(F - F.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------------ J-class LogitBoost
def ref_multilogit(X, lab, k, T, z_max=4.0):
    """Friedman, Hastie & Tibshirani (2000), Algorithm 6, with stumps, in plain NumPy."""
    n = lab.size
    ystar = (lab[:, None] == np.arange(k)).astype(float)
    F = np.zeros((n, k))
    splits = all_splits(X)
    losses = []
    for _ in range(T):
        p = softmax(F)
        f = np.zeros((n, k))
        for j in range(k):
            w = np.maximum(p[:, j] * (1 - p[:, j]), 1e-300)
            z = np.clip((ystar[:, j] - p[:, j]) / w, -z_max, z_max)
            left = best_stump(lambda m, w=w, z=z: ls_score(w, z, m), splits)
            for side in (left, ~left):
                f[side, j] = np.sum((w * z)[side]) / np.sum(w[side])
        F = F + (k - 1) / k * (f - f.mean(axis=1, keepdims=True))
        losses.append(np.mean(-np.log(softmax(F)[np.arange(n), lab])))
    return np.array(losses), F


def test_multiclass_logitboost_matches_reference():
    X, lab = make_data()
    ref_loss, ref_F = ref_multilogit(X, lab, 3, 12)
    m = LogitBoostClassifier(n_estimators=12, binning=False).fit(X, lab)
    np.testing.assert_allclose(m.train_loss_, ref_loss, rtol=1e-7)
    np.testing.assert_allclose(m.decision_function(X), ref_F, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(m.train_scores_.sum(axis=1), 0.0, atol=1e-9)  # centred scores
    assert m.n_trees_per_round_ == 3 and len(m.estimators_) == 36
    np.testing.assert_allclose(m.predict_proba(X), softmax(ref_F), rtol=1e-6)
    staged = list(m.staged_decision_function(X))
    assert len(staged) == 12
    np.testing.assert_allclose(staged[-1], m.decision_function(X))
    assert np.all(np.diff(m.train_loss_) < 0)


def ref_best_first_tree(w, r, X, n_leaves):
    """Best-first growth of a least-squares tree: the leaf whose best split gains most is split
    next; returns the leaf index of every example and the leaf values."""
    leaves = [np.arange(X.shape[0])]

    def best(ids):
        cands = all_splits(X, ids)
        if not cands:
            return -np.inf, None
        left = best_stump(lambda m: ls_score(w[ids], r[ids], m), cands)
        gain = ls_score(w[ids], r[ids], left) - ls_score(w[ids], r[ids], np.ones(ids.size, bool))
        return gain, left

    found = [best(leaves[0])]
    while len(leaves) < n_leaves:
        i = int(np.argmax([g for g, _ in found]))
        ids, (_, left) = leaves.pop(i), found.pop(i)
        kids = [ids[left], ids[~left]]
        leaves += kids
        found += [best(kids[0]), best(kids[1])]
    leaf = np.empty(X.shape[0], dtype=np.int64)
    values = []
    for j, ids in enumerate(leaves):
        leaf[ids] = j
        values.append(np.sum((w * r)[ids]) / np.sum(w[ids]))
    return leaf, np.array(values)


def test_best_first_trees_match_reference():
    """LogitBoost's first round with 4-leaf best-first trees, class by class."""
    X, lab = make_data(seed=3, n=60)
    m = LogitBoostClassifier(n_estimators=1, weak_learner="tree", max_leaves=4,
                             binning=False).fit(X, lab)
    p = np.full((60, 3), 1 / 3)
    for j, tree in enumerate(m.estimators_):
        assert tree.n_nodes == 3
        w = p[:, j] * (1 - p[:, j])
        z = ((lab == j) - p[:, j]) / w
        leaf, values = ref_best_first_tree(w, z, X, 4)
        got = tree.predict_matrix(X.T.astype(np.float32))[:, j]
        # leaves enter class j's score with the centring factor (J-1)/J (1 - 1/J)
        np.testing.assert_allclose(got, values[leaf] * 2 / 3 * (2 / 3), rtol=1e-9)


def test_trimmed_logitboost_refits_leaves_on_all_examples():
    from vjboost.boost import trim_weights

    X, lab = make_data(seed=4, n=120)
    m = LogitBoostClassifier(n_estimators=3, weight_trim_rate=0.6, binning=False).fit(X, lab)
    Xfm = X.T.astype(np.float32)
    F = list(m.staged_decision_function(X))[1]  # scores before the third round
    p = softmax(F)
    for j, tree in enumerate(m.estimators_[6:]):
        w = p[:, j] * (1 - p[:, j])
        z = np.clip(((lab == j) - p[:, j]) / w, -4, 4)
        assert trim_weights(w / w.sum(), 0.6).size < lab.size  # the fit saw fewer examples
        leaf = tree.apply_matrix(Xfm)
        ref = [np.sum((w * z)[leaf == i]) / np.sum(w[leaf == i]) * 4 / 9 for i in range(2)]
        np.testing.assert_allclose(tree.leaves[:, j], ref, rtol=1e-9)


# ------------------------------------------------------------------------------ AdaBoost.MH
def ref_mh(X, lab, k, T, algorithm):
    """AdaBoost.MH with one stump per round shared by the classes, K leaf values."""
    n = lab.size
    Y = np.where(lab[:, None] == np.arange(k), 1.0, -1.0)
    F = np.zeros((n, k))
    splits = all_splits(X)
    losses = []
    for _ in range(T):
        W = np.exp(-Y * F) / (n * k)
        W /= W.sum()
        crit = real_score if algorithm == "real" else ls_score
        left = best_stump(lambda m, W=W, crit=crit: crit(W, Y, m), splits)
        for side in (left, ~left):
            if algorithm == "real":
                eps = 1.0 / (2 * n * k)
                wp = np.where(Y > 0, W, 0)[side].sum(0)
                wn = np.where(Y < 0, W, 0)[side].sum(0)
                F[side] += 0.5 * np.log((wp + eps) / (wn + eps))
            else:
                F[side] += (W * Y)[side].sum(0) / W[side].sum(0)
        losses.append(np.sum(np.exp(-Y * F)) / (n * k))
    return np.array(losses)


@pytest.mark.parametrize("algorithm", ["real", "gentle"])
def test_mh_shared_partition_matches_reference(algorithm):
    X, lab = make_data(seed=1)
    m = AdaBoostMH(loss=algorithm, n_estimators=10, binning=False).fit(X, lab)
    np.testing.assert_allclose(m.train_loss_, ref_mh(X, lab, 3, 10, algorithm), rtol=1e-7)
    assert all(t.leaves.shape == (2, 3) for t in m.estimators_)


def ref_one_vs_rest_real(X, lab, k, T):
    """K two-class Real AdaBoost runs on the one-vs-rest labels, stumps."""
    n = lab.size
    F = np.zeros((n, k))
    splits = all_splits(X)
    losses = []
    for _ in range(T):
        for j in range(k):
            y = np.where(lab == j, 1.0, -1.0)
            w = np.exp(-y * F[:, j])
            w /= w.sum()
            left = best_stump(lambda m, w=w, y=y: real_score(w, y, m), splits)
            eps = 1.0 / (2 * n)
            upd = np.zeros(n)
            for side in (left, ~left):
                wp, wn = w[side & (y > 0)].sum(), w[side & (y < 0)].sum()
                upd[side] = 0.5 * np.log((wp + eps) / (wn + eps))
            F[:, j] += upd
        Y = np.where(lab[:, None] == np.arange(k), 1.0, -1.0)
        losses.append(np.mean(np.exp(-Y * F).mean(axis=0)))
    return np.array(losses), F


def test_mh_per_class_is_one_vs_rest_real_adaboost():
    X, lab = make_data(seed=2)
    ref_loss, ref_F = ref_one_vs_rest_real(X, lab, 3, 8)
    m = AdaBoostMH(loss="real", per_class=True, n_estimators=8, binning=False).fit(X, lab)
    np.testing.assert_allclose(m.train_loss_, ref_loss, rtol=1e-7)
    np.testing.assert_allclose(m.decision_function(X), ref_F, rtol=1e-7, atol=1e-12)
    # learner k of a round only moves class k's score
    for i, t in enumerate(m.estimators_):
        others = np.delete(t.leaves, i % 3, axis=1)
        assert not others.any()


# ------------------------------------------------------------------------- K-column search
def test_k_column_search_matches_brute_force(rng):
    n, k = 40, 3
    X = (rng.integers(0, 6, size=(4, n)) * 0.5).astype(np.float32)
    Y = np.where(rng.integers(0, k, n)[:, None] == np.arange(k), 1.0, -1.0)
    W = rng.random((n, k))
    W /= W.sum()
    for crit, score in (("regression", ls_score), ("real", real_score)):
        for values, edges in ((X, None), (np.round(X * 2).astype(np.uint8), None)):
            s = search_stumps(values, Y, W, criterion=crit, edges=edges)
            for q in range(4):
                u = np.unique(values[q])
                ref = max(score(W, Y, values[q] < t) for t in u[1:])
                assert s.score[q] == pytest.approx(ref, rel=1e-9)
                left = values[q] < s.threshold[q]
                assert score(W, Y, left) == pytest.approx(ref, rel=1e-9)
                if crit == "regression":
                    np.testing.assert_allclose(
                        s.left_value[q], (W * Y)[left].sum(0) / W[left].sum(0), rtol=1e-9)


# --------------------------------------------------------------------------------- margins
def test_margins_are_normalised_margins():
    X, lab = make_data(seed=5, n=150)
    m = AdaBoostMH(loss="discrete", n_estimators=30).fit(X, lab)
    F = m.decision_function(X)
    own = F[np.arange(lab.size), lab]
    other = np.where(np.arange(3) == lab[:, None], -np.inf, F).max(axis=1)
    # normaliser: the most a tree can move any F_y - F_k, max over leaves and class pairs
    norm = sum(max(abs(a - b) for row in t.leaves for a in row for b in row)
               for t in m.estimators_)
    np.testing.assert_allclose(m.margins_(X, lab), (own - other) / norm, rtol=1e-12)
    np.testing.assert_array_equal(m.margins_(X, lab) > 0, m.predict(X) == lab)
    early = m.margins_(X, lab, n_rounds=5)
    assert early.shape == (150,) and np.all(np.abs(early) <= 1 + 1e-12)
    with pytest.raises(ValueError, match="classes the model was fitted with"):
        m.margins_(X, lab + 7)


def test_binary_margins(rng):
    from vjboost.boost import BoostedClassifier

    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    m = BoostedClassifier(loss="discrete", n_estimators=20).fit(X, y)
    alpha = sum(np.abs(t.leaves).max() for t in m.estimators_)
    np.testing.assert_allclose(m.margins_(X, y), (2 * y - 1) * m.decision_function(X) / alpha)
