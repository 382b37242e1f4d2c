"""Estimator API, weak-learner layouts, bad input, determinism, AdaBoost.MH on digits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vjboost.boost import AdaBoostMH, BoostedClassifier, Tree, partition_tree


@pytest.fixture
def data(rng):
    n = 400
    X = rng.normal(size=(n, 8))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * X[:, 2] + 0.1 * rng.normal(size=n) > 0, "face", "bg")
    return X, y


# ---------------------------------------------------------------------------- estimator API
@pytest.mark.parametrize(
    "params",
    [
        {"loss": "discrete", "weak_learner": "tree", "max_depth": 2},
        {"loss": "real", "weak_learner": "stump"},
        {"loss": "real", "weak_learner": "histogram", "n_parts": 6},
        {"loss": "gentle", "weak_learner": "tree", "max_depth": 3, "weight_trim_rate": 0.95},
        {"loss": "logit", "weak_learner": "tree", "max_depth": 2, "balanced_init": True},
    ],
)
@pytest.mark.parametrize("binning", [False, True])
def test_fit_predict_api(data, params, binning):
    X, y = data
    m = BoostedClassifier(n_estimators=40, binning=binning, random_state=0, **params)
    assert m.fit(X[:300], y[:300]) is m
    assert m.classes_.tolist() == ["bg", "face"]
    assert m.n_features_in_ == 8
    assert len(m.estimators_) == m.train_loss_.size <= 40
    assert m.feature_importances_.shape == (8,)
    assert m.feature_importances_.sum() == pytest.approx(1.0)
    # the interaction x0*x1 needs trees; with them both features beat the pure-noise ones
    if params.get("weak_learner") == "tree":
        imp = m.feature_importances_
        assert min(imp[0], imp[1]) > imp[3:].max(), imp
        assert m.score(X[300:], y[300:]) > 0.8
    # thresholds are raw values: the model reproduces its training scores on raw X
    np.testing.assert_allclose(m.decision_function(X[:300]), m.train_scores_, atol=1e-9)
    staged = list(m.staged_decision_function(X[300:]))
    assert len(staged) == len(m.estimators_)
    np.testing.assert_allclose(staged[-1], m.decision_function(X[300:]))
    pred = m.predict(X[300:])
    np.testing.assert_array_equal(pred == "face", m.decision_function(X[300:]) > 0)
    proba = m.predict_proba(X[300:])
    np.testing.assert_allclose(proba.sum(1), 1.0)
    # feature-major prediction path
    np.testing.assert_allclose(
        m.decision_function(X[300:].T, feature_major=True), m.decision_function(X[300:])
    )


def test_model_dict_round_trip(data):
    X, y = data
    m = BoostedClassifier(loss="gentle", weak_learner="tree", n_estimators=10).fit(X, y)
    d = json.loads(json.dumps(m.to_dict()))
    m2 = BoostedClassifier.from_dict(d)
    np.testing.assert_allclose(m2.decision_function(X), m.decision_function(X))
    for est in m.estimators_:
        back = Tree.from_dict(json.loads(json.dumps(est.to_dict())))
        np.testing.assert_array_equal(back.predict_matrix(X.T), est.predict_matrix(X.T))


def test_fit_feature_major_with_precomputed_bins(data):
    from vjboost.boost import bin_values, compute_bin_edges

    X, y = data
    Xfm = np.ascontiguousarray(X.T, dtype=np.float32)
    e = compute_bin_edges(Xfm)
    B = bin_values(Xfm, e)
    a = BoostedClassifier(n_estimators=15, binning=True).fit(X, y)
    b = BoostedClassifier(n_estimators=15).fit_feature_major(B, y, bin_edges=e)
    np.testing.assert_allclose(a.train_loss_, b.train_loss_)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X))
    with pytest.raises(ValueError, match="bin_edges: required"):
        BoostedClassifier().fit_feature_major(B, y)


def test_determinism_and_threads(data):
    X, y = data
    kw = {"loss": "real", "n_estimators": 25, "max_features": 0.5, "weak_learner": "tree"}
    a = BoostedClassifier(random_state=3, threads=1, **kw).fit(X, y)
    b = BoostedClassifier(random_state=3, threads=2, **kw).fit(X, y)
    c = BoostedClassifier(random_state=4, **kw).fit(X, y)
    np.testing.assert_array_equal(a.train_loss_, b.train_loss_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert not np.array_equal(a.train_loss_, c.train_loss_)


def test_categorical_features(rng):
    n = 600
    codes = rng.integers(0, 256, size=n)
    good = np.isin(codes, rng.choice(256, 60, replace=False))
    y = np.where(good ^ (rng.random(n) < 0.05), 1, 0)
    X = np.stack([codes, rng.normal(size=n)], axis=1).astype(np.float64)
    for binning in (False, True):
        m = BoostedClassifier(
            loss="gentle", n_estimators=5, categorical_features=[0], binning=binning
        ).fit(X, y)
        first = m.estimators_[0]
        assert first.categorical.all() and first.feature.tolist() == [0]
        assert m.score(X, y) > 0.9
        w = first.subsets[0]
        c = codes.astype(np.int64)
        left = ((w[c >> 5] >> (c & 31).astype(np.uint32)) & 1).astype(bool)
        np.testing.assert_array_equal(first.predict(X[:, :1].T) == first.leaves[0], left)
    with pytest.raises(ValueError, match="categorical features must hold integer codes"):
        BoostedClassifier(categorical_features=[1]).fit(X, y)


# ---------------------------------------------------------------------- learner layouts
def test_tree_layout_is_opencv_bfs(data):
    X, y = data
    m = BoostedClassifier(loss="gentle", weak_learner="tree", max_depth=3, n_estimators=5,
                          binning=False).fit(X, y)
    for t in m.estimators_:
        assert isinstance(t, Tree)
        n = t.n_nodes
        assert t.leaves.size == n + 1
        kids = np.concatenate([t.left, t.right])
        internal = sorted(int(k) for k in kids if k > 0)
        assert internal == list(range(1, n))  # every non-root node is some node's child
        leaves = sorted(-int(k) for k in kids if k <= 0)
        assert leaves == list(range(n + 1))
        # BFS: children of node i have larger indices, leaves numbered in BFS order
        seen_leaves = []
        for i in range(n):
            for k in (t.left[i], t.right[i]):
                if k > 0:
                    assert k > i
                else:
                    seen_leaves.append(-int(k))
        assert seen_leaves == list(range(n + 1))
        assert t.depth <= 3
        # reference traversal in plain Python
        Xfm = X.T.astype(np.float32)
        ref = []
        for i in range(20):
            idx = 0
            while True:
                go = Xfm[t.feature[idx], i] < t.threshold[idx]
                idx = int(t.left[idx] if go else t.right[idx])
                if idx <= 0:
                    break
            ref.append(t.leaves[-idx])
        np.testing.assert_array_equal(t.predict_matrix(Xfm[:, :20]), ref)


def test_stump_convention_and_partition_tree():
    s = Tree.stump(2, threshold=0.5, left_value=-1.0, right_value=2.0)
    v = np.array([[0.4, 0.5, 0.6]], dtype=np.float32)
    np.testing.assert_array_equal(s.predict(v), [-1.0, 2.0, 2.0])
    assert s.left.tolist() == [0] and s.right.tolist() == [-1]
    # Real AdaBoost's domain partition: part j = number of thresholds <= value
    thr, vals = [-1.0, 0.0, 1.0, 2.0], np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    t = partition_tree(1, thr, vals)
    x = np.linspace(-3, 3, 61, dtype=np.float32)[None, :]
    assert t.n_nodes == 4 and t.leaves.size == 5 and set(t.feature.tolist()) == {1}
    np.testing.assert_array_equal(t.predict(x), vals[np.searchsorted(thr, x[0], side="right")])
    np.testing.assert_array_equal(t.predict(np.array([[-1.0, 2.0]], np.float32)), [0.2, 0.5])
    with pytest.raises(ValueError, match="1 internal node.*need 2 leaf values"):
        Tree([0], threshold=[0.0], left=[0], right=[-1], leaves=[1.0])
    with pytest.raises(ValueError, match="values: expected 1 row"):
        s.predict(np.zeros((2, 3), np.float32))


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("X", "y", "kw", "exc", "match"),
    [
        ([[1.0, np.nan], [2.0, 3.0]], [0, 1], {}, ValueError, "X: contains 1 NaN"),
        ([[1.0, np.inf], [2.0, 3.0]], [0, 1], {}, ValueError, "X: contains 1 NaN or infinite"),
        ([[1.0], [2.0]], [1, 1], {}, ValueError, "y: only one class"),
        ([[1.0], [2.0], [3.0]], [0, 1, 2], {}, ValueError, "y: expected two classes"),
        ([[1.0], [2.0]], [0, 1, 1], {}, ValueError, "inconsistent numbers of samples"),
        (np.zeros((0, 3)), [], {}, ValueError, "X: empty array"),
        ([1.0, 2.0], [0, 1], {}, ValueError, "X: expected a 2-D array"),
        ([[1.0], [2.0]], [0, 1], {"sample_weight": [0, 0]}, ValueError,
         "sample_weight: all weights are zero"),
        ([[1.0], [2.0]], [0, 1], {"sample_weight": [1, -1]}, ValueError,
         "sample_weight: negative"),
        ([[1.0], [2.0]], [0, 1], {"sample_weight": [1]}, ValueError, "sample_weight: has 1"),
        ([[1.0], [2.0]], [0, np.nan], {}, ValueError, "y: labels contain NaN"),
    ],
)
def test_bad_input(X, y, kw, exc, match):
    with pytest.raises(exc, match=match):
        BoostedClassifier(n_estimators=2).fit(X, y, **kw)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"loss": "hinge"}, "loss: expected one of"),
        ({"weak_learner": "forest"}, "weak_learner: expected one of"),
        ({"weak_learner": "histogram", "loss": "gentle"}, "needs loss='real'"),
        ({"n_estimators": 0}, "n_estimators: must be in the range"),
        ({"n_bins": 1000}, "n_bins: must be in the range"),
        ({"weight_trim_rate": 0.0}, "weight_trim_rate: must be in the range"),
        ({"max_depth": 0}, "max_depth: must be in the range"),
        ({"max_features": 0}, "max_features: must be in the range"),
        ({"binning": "yes"}, "binning: expected True or False"),
    ],
)
def test_bad_params(data, params, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        BoostedClassifier(**params).fit(X, y)


def test_predict_errors(data):
    X, y = data
    with pytest.raises(ValueError, match="not fitted yet"):
        BoostedClassifier().predict(X)
    m = BoostedClassifier(n_estimators=3).fit(X, y)
    with pytest.raises(ValueError, match="X: has 3 features, but the model was fitted with 8"):
        m.predict(X[:, :3])
    with pytest.raises(ValueError, match="X: contains"):
        m.predict(np.full((2, 8), np.nan))
    with pytest.raises(ValueError, match="no feature can split"):
        BoostedClassifier().fit(np.ones((10, 3)), np.arange(10) % 2)


def test_mh_bad_input():
    with pytest.raises(ValueError, match="y: only one class"):
        AdaBoostMH().fit([[1.0], [2.0]], [3, 3])
    with pytest.raises(ValueError, match="X: contains 1 NaN"):
        AdaBoostMH().fit([[1.0], [np.nan]], [0, 1])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        AdaBoostMH().fit([[1.0], [2.0]], [0, 1, 2])


# ----------------------------------------------------------------------- AdaBoost.MH digits
@pytest.mark.slow
def test_adaboost_mh_digits_beats_nearest_class_mean():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    means = np.stack([Xtr[ytr == k].mean(0) for k in range(10)])
    ncm = np.argmin(((Xte[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    ncm_err = np.mean(ncm != yte)
    m = AdaBoostMH(n_estimators=500, random_state=0).fit(Xtr, ytr)
    err = 1.0 - m.score(Xte, yte)
    assert err < ncm_err - 0.04, (err, ncm_err)
    assert (np.diff(m.train_loss_) <= 1e-12).all()
    assert m.decision_function(Xte).shape == (Xte.shape[0], 10)
    staged = list(m.staged_decision_function(Xte[:5]))
    np.testing.assert_allclose(staged[-1], m.decision_function(Xte[:5]))


def test_fit_weak_learner_validates_blocks():
    from vjboost.boost import fit_weak_learner, make_loss

    step = make_loss("gentle", np.array([1.0, -1.0, 1.0, -1.0]))
    vals = np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 300.0, 2.0, 2.0]], dtype=np.float32)
    with pytest.raises(ValueError, match="categorical rows must hold integer codes"):
        fit_weak_learner(step, vals, categorical=[False, True])
    with pytest.raises(ValueError, match="sample_ids: required with block=True"):
        fit_weak_learner(step, vals[:, :2], block=True)
    with pytest.raises(ValueError, match="values: has 2 columns but the loss has 4"):
        fit_weak_learner(step, vals[:, :2])
    with pytest.raises(ValueError, match="kind: expected one of"):
        fit_weak_learner(step, vals, kind="forest")
    # alternating labels on 4 ordered values: depth 2 leaves two examples together, depth 3 fits
    learner, search = fit_weak_learner(step, vals[:1], kind="tree", max_depth=2)
    assert search.score.shape == (1,)
    np.testing.assert_allclose(learner.predict(vals[:1]), [1.0, -1.0, 0.0, 0.0])
    learner, _ = fit_weak_learner(step, vals[:1], kind="tree", max_depth=3)
    assert learner.depth == 3 and learner.n_nodes == 3
    np.testing.assert_allclose(learner.predict(vals[:1]), step.response)


# ---------------------------------------------------------------------------- scikit-learn
@pytest.mark.slow  # three folds and a search, twice
@pytest.mark.parametrize("make", [
    lambda: BoostedClassifier(loss="gentle", weak_learner="tree", max_depth=2, n_estimators=15),
    lambda: AdaBoostMH(n_estimators=15),
])
def test_scikit_learn_model_selection_sees_a_classifier(data, make):
    """cross_val_score, clone and GridSearchCV take the estimators as classifiers (stratified
    folds, accuracy): each fold's score is that of the estimator fitted by hand on the same
    split, and the search's best setting is the one with the best mean of those scores."""
    from sklearn.base import clone, is_classifier
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

    X, y = data
    est = make()
    assert is_classifier(est)
    assert clone(est).get_params() == est.get_params()
    folds = StratifiedKFold(3)
    got = cross_val_score(est, X, y, cv=3)
    want = [make().fit(X[tr], y[tr]).score(X[te], y[te]) for tr, te in folds.split(X, y)]
    np.testing.assert_allclose(got, want)
    assert 0.6 < got.mean() < 1.0

    grid = {"n_estimators": [1, 15]}
    search = GridSearchCV(make(), grid, cv=3).fit(X, y)
    means = [np.mean([make().set_params(n_estimators=n).fit(X[tr], y[tr]).score(X[te], y[te])
                      for tr, te in folds.split(X, y)]) for n in grid["n_estimators"]]
    assert search.best_params_ == {"n_estimators": grid["n_estimators"][int(np.argmax(means))]}
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], means)
