"""User-defined families: per-window numba functions, named families, end-to-end training."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from vjboost.boost.binning import precompute
from vjboost.features import (
    FeaturePool,
    HaarFamily,
    WindowFunctionFamily,
    function_family,
    get_family_class,
)


@numba.njit
def row_variance(window, out):
    """Feature y = variance of the pixels of row y."""
    h, w = window.shape
    for y in range(h):
        s = 0.0
        s2 = 0.0
        for x in range(w):
            v = np.float64(window[y, x])
            s += v
            s2 += v * v
        m = s / w
        out[y] = s2 / w - m * m


@numba.njit
def channel_means(window, out):
    """Mean of each colour channel of an RGB window."""
    h, w, c = window.shape
    for k in range(c):
        s = 0.0
        for y in range(h):
            for x in range(w):
                s += window[y, x, k]
        out[k] = s / (h * w)


@numba.njit
def corner_code(window, out):
    """A categorical feature: the top-left pixel's top 8 bits (a code 0..255)."""
    out[0] = window[0, 0]


RowVarianceFamily = function_family(
    row_variance, name="test_row_variance", n_features=lambda ws: ws[0],
    describe=lambda i, ws: f"variance of row {i}",
)


def test_window_function_family_values(rng):
    fam = WindowFunctionFamily(row_variance, n_features=12, window_shape=(12, 9))
    wins = rng.integers(0, 256, (7, 12, 9), dtype=np.uint8)
    vals = fam.compute(wins)
    np.testing.assert_allclose(vals, wins.astype(np.float64).var(axis=2).T, rtol=1e-5)
    assert fam.describe(2)["text"].startswith("window_function[2]")


def test_color_and_categorical_functions(rng):
    fam = WindowFunctionFamily(channel_means, n_features=3, window_shape=(6, 5), color=True)
    rgb = rng.integers(0, 256, (4, 6, 5, 3), dtype=np.uint8)
    np.testing.assert_allclose(fam.compute(rgb), rgb.mean(axis=(1, 2)).T, rtol=1e-5)
    with pytest.raises(ValueError, match="RGB"):
        fam.prepare(rgb[..., 0])
    cat = WindowFunctionFamily(corner_code, n_features=1, window_shape=(6, 5), categorical=True)
    assert cat.kind(0) == "categorical" and cat.kinds().all()
    np.testing.assert_array_equal(cat.compute(rgb[..., 0])[0], rgb[:, 0, 0, 0])


def test_saving_and_loading_custom_families():
    fam = WindowFunctionFamily(row_variance, n_features=8, window_shape=(8, 8),
                               descriptions=[f"r{i}" for i in range(8)])
    cfg = fam.get_config()
    assert cfg["func"].endswith(":row_variance")
    assert WindowFunctionFamily.from_config(cfg) == fam
    named = RowVarianceFamily((10, 7))
    assert named.n_features == 10 and named.describe(4)["text"] == "variance of row 4"
    assert get_family_class("test_row_variance") is RowVarianceFamily
    pool = FeaturePool([HaarFamily((10, 7), mode="BASIC"), named])
    again = FeaturePool.from_config(pool.get_config())
    assert again == pool and isinstance(again.families[1], RowVarianceFamily)
    # re-running the definition (module reload) is accepted
    function_family(row_variance, name="test_row_variance", n_features=lambda ws: ws[0])



def test_function_families_pickle(rng):
    """A family made by function_family pickles (multiprocessing, joblib, a pickled pool or
    model): its class, bound here to another name than its own, is found again by its registry
    name; before, pickle failed on "attribute lookup TestRowVarianceFamily"."""
    import pickle

    named = RowVarianceFamily((10, 7))
    assert type(named).__name__ != "RowVarianceFamily"  # not importable by its own name
    again = pickle.loads(pickle.dumps(named))
    # the registered class (another test re-registers the name, as a module reload does)
    assert type(again) is get_family_class("test_row_variance")
    assert again.get_config() == named.get_config() == {"window_shape": [10, 7]}
    pool = FeaturePool([HaarFamily((10, 7), mode="BASIC"), named])
    back = pickle.loads(pickle.dumps(pool))
    wins = rng.integers(0, 256, (5, 10, 7), dtype=np.uint8)
    np.testing.assert_array_equal(back.evaluate(back.prepare(wins)),
                                  pool.evaluate(pool.prepare(wins)))


def test_bad_custom_families():
    with pytest.raises(TypeError, match="numba-compiled"):
        WindowFunctionFamily(lambda w, o: None, n_features=3)
    with pytest.raises(ValueError, match="n_features"):
        WindowFunctionFamily(row_variance, n_features=0)
    with pytest.raises(ValueError, match="descriptions"):
        WindowFunctionFamily(row_variance, n_features=8, descriptions=["a"])
    with pytest.raises(ValueError, match="cannot import"):
        WindowFunctionFamily("no_such_module_xyz:f", n_features=3)
    with pytest.raises(ValueError, match="already used"):
        function_family(channel_means, name="haar", n_features=3)


def _make_data(rng, n):
    """Noise windows; in positives row 4 is binary (0/255): same mean, 3x the variance."""
    x = rng.integers(0, 256, (n, 12, 12), dtype=np.uint8)
    y = np.where(np.arange(n) % 2 == 0, 1, -1)
    pos = y == 1
    x[pos, 4, :] = rng.integers(0, 2, (int(pos.sum()), 12), dtype=np.uint8) * 255
    return x, y


def _train_and_predict(train, y, test, categorical):
    """Boost 10 stumps with vjboost.boost when available, else a minimal AdaBoost here."""
    try:
        from vjboost.boost.ensemble import BoostedClassifier
    except ImportError:  # pragma: no cover - boosting package not present
        BoostedClassifier = None  # noqa: N806
    if BoostedClassifier is not None:
        clf = BoostedClassifier(
            loss="discrete", n_estimators=10, categorical_features=categorical, random_state=0
        )
        clf.fit_feature_major(train.matrix, y, bin_edges=train.edges)
        first = int(clf.estimators_[0].features_[0])
        return clf.predict(test, feature_major=True), first
    # minimal discrete AdaBoost on bins (ordered stumps)
    bins, w, f_score = train.matrix, np.full(y.size, 1.0 / y.size), np.zeros(test.shape[1])
    first = None
    for _ in range(10):
        best = (np.inf, 0, 0, 1)
        for q in range(bins.shape[0]):
            for b in range(1, 256):
                pred = np.where(bins[q] < b, -1, 1)
                for s in (1, -1):
                    err = w[pred * s != y].sum()
                    if err < best[0]:
                        best = (err, q, b, s)
        err, q, b, s = best
        first = q if first is None else first
        alpha = 0.5 * np.log((1 - err + 1e-12) / (err + 1e-12))
        thr = train.edges[q, b - 1]
        w *= np.exp(-alpha * y * s * np.where(bins[q] < b, -1, 1))
        w /= w.sum()
        f_score += alpha * s * np.where(test[q] < thr, -1, 1)
    return np.where(f_score > 0, 1, -1), first


def test_custom_family_end_to_end(rng):
    pool = FeaturePool([HaarFamily((12, 12), mode="BASIC", types=["x2"]),
                        RowVarianceFamily((12, 12))])
    x_train, y_train = _make_data(rng, 300)
    x_test, y_test = _make_data(rng, 200)
    train = precompute(pool, x_train, "uint8")
    test = precompute(pool, x_test, "float32")
    pred, first = _train_and_predict(train, y_train, test.matrix, pool.kinds())
    # the informative feature is the custom family's row-4 variance
    assert first == pool.global_ids("test_row_variance", [4])[0]
    assert np.mean(pred == y_test) >= 0.95
