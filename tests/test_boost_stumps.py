"""Binning and stump searches against brute-force NumPy references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjboost.boost.binning import bin_values, compute_bin_edges, n_bins_per_feature
from vjboost.boost.stumps import (
    search_categorical,
    search_histograms,
    search_multiclass_stumps,
    search_stumps,
)

CRITS = ["discrete", "regression", "real"]


# ------------------------------------------------------------------ brute-force references
def side_score(crit, al, bl, ar, br):
    if crit == "discrete":
        return abs(br - bl)
    if crit == "regression":
        return (bl * bl / al if al > 0 else 0.0) + (br * br / ar if ar > 0 else 0.0)
    pl, nl = max((al + bl) / 2, 0), max((al - bl) / 2, 0)
    pr, nr = max((ar + br) / 2, 0), max((ar - br) / 2, 0)
    return (al + ar) - 2 * (np.sqrt(pl * nl) + np.sqrt(pr * nr))


def mask_score(crit, left, r, w):
    return side_score(
        crit, w[left].sum(), (w * r)[left].sum(), w[~left].sum(), (w * r)[~left].sum()
    )


def brute_best(crit, x, r, w):
    """Max score over all thresholds between distinct values (None if constant)."""
    u = np.unique(x)
    if u.size < 2:
        return None
    return max(mask_score(crit, x < t, r, w) for t in u[1:])


def check_search(res, X, r, w, crit, values_for_threshold=None):
    for q in range(X.shape[0]):
        ref = brute_best(crit, X[q], r, w)
        if ref is None:
            assert res.score[q] == -np.inf
            continue
        assert res.score[q] == pytest.approx(ref, rel=1e-9, abs=1e-9)
        x = X[q] if values_for_threshold is None else values_for_threshold[q]
        left = x < res.threshold[q]
        assert 0 < left.sum() < x.size
        assert mask_score(crit, left, r, w) == pytest.approx(res.score[q], rel=1e-9, abs=1e-9)
        if crit == "regression":
            a = w[left].sum()
            if a > 0:
                assert res.left_value[q] == pytest.approx((w * r)[left].sum() / a)
        elif crit == "discrete":
            p = 1.0 if (w * r)[~left].sum() - (w * r)[left].sum() >= 0 else -1.0
            assert (res.left_value[q], res.right_value[q]) == (-p, p)


@st.composite
def problems(draw, max_q=4, max_s=40, levels=None):
    q = draw(st.integers(1, max_q))
    s = draw(st.integers(2, max_s))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n_levels = levels if levels is not None else draw(st.sampled_from([2, 3, 5, 1000]))
    X = (rng.integers(0, n_levels, size=(q, s)) * 0.37 - 1.0).astype(np.float32)
    if draw(st.booleans()):
        X[0] = X[0, 0]  # a constant feature
    y = np.where(rng.random(s) < 0.5, 1.0, -1.0)
    w = rng.random(s)
    if draw(st.booleans()):
        w[rng.random(s) < 0.2] = 0.0
    if w.sum() == 0:
        w[0] = 1.0
    return X, y, w, rng


# ------------------------------------------------------------------------------ binning
def test_binning_few_values_exact_and_thresholds():
    x = np.array([[3.0, 1.0, 1.0, 2.0, 3.0, 1.0]], dtype=np.float32)
    e = compute_bin_edges(x)
    assert n_bins_per_feature(e).tolist() == [3]
    b = bin_values(x, e)
    assert b.tolist() == [[2, 0, 0, 1, 2, 0]]
    # a split "bin < k" is exactly "value < edges[k-1]"
    for k in (1, 2):
        np.testing.assert_array_equal(b[0] < k, x[0] < e[0, k - 1])


def test_binning_constant_and_adjacent_floats():
    a = np.float32(1.0)
    nxt = np.nextafter(a, np.float32(2.0))
    x = np.array([[5.0] * 4, [a, nxt, a, nxt]], dtype=np.float32)
    e = compute_bin_edges(x)
    assert n_bins_per_feature(e).tolist() == [1, 2]
    b = bin_values(x, e)
    assert b[0].tolist() == [0, 0, 0, 0]
    assert b[1].tolist() == [0, 1, 0, 1]


@given(problems(levels=None))
def test_binning_properties(prob):
    X, _, _, rng = prob
    X = np.concatenate([X, rng.normal(size=(1, X.shape[1])).astype(np.float32)])
    nb = int(rng.integers(2, 9))
    e = compute_bin_edges(X, nb)
    b = bin_values(X, e)
    assert b.max() < nb
    for q in range(X.shape[0]):
        fin = e[q][np.isfinite(e[q])]
        assert (np.diff(fin) > 0).all()
        # bins are monotone in the values and equal values share a bin
        order = np.argsort(X[q], kind="stable")
        assert (np.diff(b[q][order].astype(int)) >= 0).all()
        for v in np.unique(X[q]):
            assert np.unique(b[q][X[q] == v]).size == 1
        # every bin split is a raw threshold split
        for k in range(1, fin.size + 1):
            np.testing.assert_array_equal(b[q] < k, X[q] < fin[k - 1])
        if np.unique(X[q]).size <= nb:
            assert fin.size == np.unique(X[q]).size - 1


def test_binning_quantiles_balanced(rng):
    x = rng.normal(size=(2, 10000)).astype(np.float32)
    b = bin_values(x, compute_bin_edges(x, 16))
    counts = np.bincount(b[0], minlength=16)
    assert counts.min() > 500 and counts.max() < 750


def test_binning_bad_input():
    with pytest.raises(ValueError, match="values: contains 1 NaN"):
        compute_bin_edges(np.array([[1.0, np.nan]], dtype=np.float32))
    with pytest.raises(ValueError, match="n_bins: must be in the range"):
        compute_bin_edges(np.zeros((1, 3), np.float32), n_bins=300)
    with pytest.raises(ValueError, match="edges: has 2 rows"):
        bin_values(np.zeros((1, 3), np.float32), np.zeros((2, 3), np.float32))


# ------------------------------------------------------------------------ exact stumps
@pytest.mark.parametrize("crit", CRITS)
@given(prob=problems())
def test_exact_search_matches_brute_force(crit, prob):
    X, y, w, rng = prob
    r = y if crit != "regression" else y * rng.random(y.size) * 3
    res = search_stumps(X, r, w, criterion=crit)
    check_search(res, X, r, w, crit)


@pytest.mark.parametrize("crit", CRITS)
@given(seed=st.integers(0, 2**31 - 1), s=st.sampled_from([47, 48, 49, 300, 1023, 1024, 2500]),
       scale=st.sampled_from([1.0, 1e-20, 1e15]))
def test_exact_search_wide_values_match_brute_force(crit, seed, s, scale):
    # rows longer than a few values are radix-sorted on the float bits: signs, ±0, ties and
    # magnitudes spanning every exponent byte must order as the values do
    rng = np.random.default_rng(seed)
    X = (rng.integers(-40, 41, size=(2, s)) * rng.choice([1.0, 2.0**-60, 2.0**60], (2, s))
         * scale).astype(np.float32)
    X[:, rng.random(s) < 0.1] = -0.0
    r = np.where(rng.random(s) < 0.5, 1.0, -1.0)
    if crit == "regression":
        r = r * rng.random(s) * 3
    w = rng.random(s)
    check_search(search_stumps(X, r, w, criterion=crit), X, r, w, crit)


def stable_order_reference(crit, x, r, w, eps):
    """The exact search of one row, step by step in Python: the stable (merge) sort of the
    values, suffix sums accumulated from the right, prefix sums from the left."""
    x = x.astype(np.float32) + np.float32(0.0)
    u, v = (np.where(r > 0, w, 0.0), np.where(r < 0, w, 0.0)) if crit == "real" else (w, w * r)
    order = np.argsort(x, kind="stable")
    xs, us, vs = x[order], u[order], v[order]
    n = x.size
    su, sv = np.empty(n), np.empty(n)
    acc_u = acc_v = 0.0
    for k in range(n - 1, -1, -1):
        su[k], sv[k] = acc_u, acc_v
        acc_u += us[k]
        acc_v += vs[k]

    def score(ul, vl, ur, vr):
        if crit == "discrete":
            return abs(vr - vl)
        if crit == "regression":
            return (vl * vl / ul if ul > 0.0 else 0.0) + (vr * vr / ur if ur > 0.0 else 0.0)
        return (ul + vl + ur + vr) - 2.0 * (np.sqrt(ul * vl) + np.sqrt(ur * vr))

    best, best_t, sides = -np.inf, np.float32(np.inf), (acc_u, acc_v, 0.0, 0.0)
    ul = vl = 0.0
    for k in range(n - 1):
        ul += us[k]
        vl += vs[k]
        if xs[k + 1] > xs[k]:
            sc = score(ul, vl, su[k], sv[k])
            if sc > best:
                t = np.float32(0.5 * (np.float64(xs[k]) + np.float64(xs[k + 1])))
                best, best_t = sc, t if xs[k] < t <= xs[k + 1] else xs[k + 1]
                sides = (ul, vl, su[k], sv[k])

    def leaf(a, b):
        if crit == "regression":
            return b / a if a > 0.0 else 0.0
        return 0.5 * np.log((a + eps) / (b + eps))

    if crit == "discrete":
        p = 1.0 if sides[3] - sides[1] >= 0.0 else -1.0
        return best, best_t, -p, p
    return best, best_t, leaf(sides[0], sides[1]), leaf(sides[2], sides[3])


@pytest.mark.parametrize("crit", CRITS)
@given(seed=st.integers(0, 2**31 - 1),
       s=st.sampled_from([2, 3, 22, 44, 63, 64, 65, 200, 1023, 1024, 2500]))
def test_exact_search_bit_identical_to_stable_sort(crit, seed, s):
    # short rows are ranked by counting, longer ones radix-sorted: either way the order is the
    # stable sort's, so every score, threshold and leaf is bit for bit the reference's
    rng = np.random.default_rng(seed)
    X = (rng.integers(-6, 7, size=(3, s)) * rng.choice([1.0, 0.37, 2.0**-30], (3, s))
         ).astype(np.float32)
    X[:, rng.random(s) < 0.1] = -0.0
    r = np.where(rng.random(s) < 0.5, 1.0, -1.0)
    if crit == "regression":
        r = r * rng.random(s) * 3
    w = rng.random(s)
    eps = 0.01
    res = search_stumps(X, r, w, criterion=crit, smoothing=eps)
    for q in range(X.shape[0]):
        sc, t, lv, rv = stable_order_reference(crit, X[q], r, w, eps)
        assert (res.score[q], res.threshold[q]) == (sc, t)
        if crit == "real":  # the leaves' logarithm: numba's and NumPy's may differ in the last bit
            assert (res.left_value[q], res.right_value[q]) == pytest.approx((lv, rv), rel=1e-14)
        else:
            assert (res.left_value[q], res.right_value[q]) == (lv, rv)


@pytest.mark.parametrize("crit", CRITS)
@given(prob=problems())
def test_binned_search_matches_brute_force(crit, prob):
    """On bins the search equals brute force over bin values; with edges, thresholds are raw."""
    X, y, w, rng = prob
    r = y if crit != "regression" else y * rng.random(y.size) * 3
    e = compute_bin_edges(X, int(rng.integers(2, 257)))
    B = bin_values(X, e)
    res = search_stumps(B, r, w, criterion=crit, edges=e)
    # candidate splits of the binned search are between bins that carry weight
    for q in range(X.shape[0]):
        pos = B[q][w > 0]
        ref = None if np.unique(pos).size < 2 else max(
            mask_score(crit, B[q] < t, r, w) for t in np.unique(pos)[1:]
        )
        if ref is None:
            assert res.score[q] == -np.inf
            continue
        assert res.score[q] == pytest.approx(ref, rel=1e-9, abs=1e-9)
        left_raw = X[q] < res.threshold[q]
        np.testing.assert_array_equal(left_raw, B[q] < res.split_bin[q])
        assert mask_score(crit, left_raw, r, w) == pytest.approx(res.score[q], rel=1e-9, abs=1e-9)


def test_binned_equals_exact_when_few_values(rng):
    X = rng.integers(0, 40, size=(30, 500)).astype(np.float32)
    y = np.where(rng.random(500) < 0.4, 1.0, -1.0)
    w = rng.random(500)
    e = compute_bin_edges(X)
    B = bin_values(X, e)
    for crit in CRITS:
        a = search_stumps(X, y, w, criterion=crit)
        b = search_stumps(B, y, w, criterion=crit, edges=e)
        np.testing.assert_allclose(a.score, b.score, rtol=1e-10)
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_allclose(a.left_value, b.left_value)
        assert a.best() == b.best()


def test_subsets_equal_block_copies_and_threads(rng):
    X = rng.normal(size=(40, 300)).astype(np.float32)
    e = compute_bin_edges(X)
    B = bin_values(X, e)
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    z = y * rng.random(300)
    w = rng.random(300)
    rows = np.array([3, 7, 7, 21, 39])
    cols = np.sort(rng.choice(300, 120, replace=False))
    for vals, kw in ((X, {}), (B, {"edges": e})):
        for crit, r in (("discrete", y), ("regression", z), ("real", y)):
            full = search_stumps(
                vals, r, w, criterion=crit, feature_ids=rows, sample_ids=cols, **kw
            )
            kw2 = {"edges": e[rows]} if kw else {}
            blk = search_stumps(
                np.ascontiguousarray(vals[rows][:, cols]), r[cols], w[cols], criterion=crit, **kw2
            )
            np.testing.assert_allclose(full.score, blk.score, rtol=1e-12)
            np.testing.assert_array_equal(full.threshold, blk.threshold)
            one = search_stumps(vals, r, w, criterion=crit, threads=1, **kw)
            two = search_stumps(vals, r, w, criterion=crit, threads=2, **kw)
            np.testing.assert_array_equal(one.score, two.score)
            np.testing.assert_array_equal(one.threshold, two.threshold)
            assert full.feature_ids.tolist() == rows.tolist()


def test_search_bad_input(rng):
    X = rng.normal(size=(3, 10)).astype(np.float32)
    y = np.ones(10)
    y[0] = -1
    w = np.ones(10)
    with pytest.raises(ValueError, match="criterion: expected one of"):
        search_stumps(X, y, w, criterion="gini")
    with pytest.raises(ValueError, match="needs labels in"):
        search_stumps(X, y * 0.5, w, criterion="discrete")
    with pytest.raises(ValueError, match="weights: has 9 entries"):
        search_stumps(X, y, w[:9])
    with pytest.raises(ValueError, match="weights: negative"):
        search_stumps(X, y, -w)
    with pytest.raises(ValueError, match=r"feature_ids: ids must be in \[0, 3\)"):
        search_stumps(X, y, w, feature_ids=[5])
    with pytest.raises(ValueError, match="values: contains 1 NaN"):
        X[0, 0] = np.nan
        search_stumps(X, y, w)


# ------------------------------------------------------------------------- categorical
@pytest.mark.parametrize("crit", CRITS)
@given(prob=problems(max_q=3, max_s=30, levels=1))
def test_categorical_matches_subset_enumeration(crit, prob):
    _, y, w, rng = prob
    q, s = 3, y.size
    n_cat = 6
    codes = rng.choice([0, 5, 31, 32, 200, 255], size=(q, s)).astype(np.uint8)
    r = y if crit != "regression" else y * rng.random(s) * 2
    res = search_categorical(codes, r, w, criterion=crit)
    cats = [0, 5, 31, 32, 200, 255]
    for f in range(q):
        present = [c for c in cats if w[codes[f] == c].sum() > 0]
        best = -np.inf
        for k in range(1, len(present)):
            for sub in itertools.combinations(present, k):
                left = np.isin(codes[f], sub)
                best = max(best, mask_score(crit, left, r, w))
        if crit == "discrete":
            # the sign rule may put everything on one side; then no split is reported
            if np.isfinite(res.score[f]):
                assert res.score[f] == pytest.approx(best, rel=1e-9, abs=1e-12)
        else:
            if best == -np.inf:
                assert res.score[f] == -np.inf
                continue
            assert res.score[f] == pytest.approx(best, rel=1e-9, abs=1e-12)
        if np.isfinite(res.score[f]):
            sub = res.subset[f]
            c = codes[f].astype(np.int64)
            left = ((sub[c >> 5] >> (c & 31).astype(np.uint32)) & 1).astype(bool)
            assert mask_score(crit, left, r, w) == pytest.approx(res.score[f], rel=1e-9,
                                                                 abs=1e-12)
    assert n_cat == len(cats)


# --------------------------------------------------------------------------- histograms
def test_histogram_learner_reference(rng):
    X = rng.normal(size=(5, 400)).astype(np.float32)
    y = np.where(X[2] + 0.5 * rng.normal(size=400) > 0, 1.0, -1.0)
    w = rng.random(400)
    w /= w.sum()
    e = compute_bin_edges(X)
    B = bin_values(X, e)
    res = search_histograms(B, y, w, n_parts=6, edges=e)
    eps = 1.0 / 800
    for q in range(5):
        t = res.thresholds[q, : res.n_bounds[q]]
        assert res.n_bounds[q] == 5
        part = np.searchsorted(t, X[q], side="right")
        wp = np.bincount(part, w * (y > 0), minlength=6)
        wn = np.bincount(part, w * (y < 0), minlength=6)
        z = 2 * np.sqrt(wp * wn).sum()
        assert res.score[q] == pytest.approx(1 - z, rel=1e-9)
        np.testing.assert_allclose(res.values[q, :6], 0.5 * np.log((wp + eps) / (wn + eps)))
        counts = np.bincount(part, minlength=6)
        assert counts.min() > 50  # quantile parts
    assert res.best() == 2


# --------------------------------------------------------------------------- multiclass
@given(prob=problems(max_q=3, max_s=30))
def test_multiclass_stumps_match_brute_force(prob):
    X, _, w, rng = prob
    s, k = X.shape[1], 3
    lab = rng.integers(0, k, size=s)
    Y = np.where(lab[:, None] == np.arange(k), 1.0, -1.0)
    W = w[:, None] * rng.random((s, k))
    res = search_multiclass_stumps(X, W * Y)
    for q in range(X.shape[0]):
        u = np.unique(X[q])
        if u.size < 2:
            assert res.score[q] == -np.inf
            continue
        phis = [np.where(X[q] < t, -1.0, 1.0) for t in u[1:]]
        best = max(np.abs((W * Y * p[:, None]).sum(0)).sum() for p in phis)
        assert res.score[q] == pytest.approx(best, rel=1e-9, abs=1e-12)
        phi = np.where(X[q] < res.threshold[q], -1.0, 1.0)
        edge = ((W * Y) * phi[:, None] * res.votes[q][None, :]).sum()
        assert edge == pytest.approx(best, rel=1e-9, abs=1e-12)
    e = compute_bin_edges(X)
    rb = search_multiclass_stumps(bin_values(X, e), W * Y, edges=e)
    np.testing.assert_allclose(rb.score, res.score, rtol=1e-9)
