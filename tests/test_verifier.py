"""The detection verifier: crops against OpenCV, the fit against scikit-learn, the detector's
``score="verified"`` against the margin it rescores."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.cascade.detector import CascadeDetector, model_verifier, operating_score
from vjboost.cascade.model_io import load_model
from vjboost.cascade.verifier import (
    DetectionVerifier,
    additive_map,
    crop_boxes,
    verified_scores,
)
from vjboost.cascade.verifier_fit import fit_verifier, jittered_windows


def _two_classes(n=120, size=24, seed=0):
    """Windows with a bright vertical bar (positives) and with a horizontal one."""
    rng = np.random.default_rng(seed)
    pos = rng.integers(60, 120, (n, size, size)).astype(np.uint8)
    neg = rng.integers(60, 120, (n, size, size)).astype(np.uint8)
    pos[:, :, size // 2 - 2:size // 2 + 2] = 220
    neg[:, size // 2 - 2:size // 2 + 2, :] = 220
    return pos, neg


def _bilinear(img, xs, ys):
    """Brute-force bilinear samples of ``img`` at (ys x xs), the edge repeated outside."""
    h, w = img.shape
    out = np.empty((len(ys), len(xs)))
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            x0, y0 = int(np.floor(x)), int(np.floor(y))
            fx, fy = x - x0, y - y0

            def px(yy, xx):
                return float(img[min(max(yy, 0), h - 1), min(max(xx, 0), w - 1)])
            out[i, j] = ((1 - fy) * ((1 - fx) * px(y0, x0) + fx * px(y0, x0 + 1))
                         + fy * ((1 - fx) * px(y0 + 1, x0) + fx * px(y0 + 1, x0 + 1)))
    return out


@given(st.integers(4, 40), st.integers(-10, 50), st.integers(-10, 50),
       st.floats(0, 0.5), st.integers(0, 3))
@settings(max_examples=40, deadline=None)
def test_crops_are_bilinear_samples(side, x, y, context, seed):
    """Each crop pixel is the bilinear sample at its centre, mapped back into the image."""
    img = np.random.default_rng(seed).integers(0, 256, (48, 56)).astype(np.uint8)
    ver = DetectionVerifier(size=16, context=context, pixels_per_cell=4)
    got = ver.crops(img, [[x, y, side, side]])[0].astype(float)
    big = side * (1 + 2 * context)
    j = (np.arange(16) + 0.5) * big / 16 - 0.5
    want = _bilinear(img, x + side / 2 - big / 2 + j, y + side / 2 - big / 2 + j)
    # OpenCV interpolates in fixed point (1/32 pixel, 15-bit weights)
    assert np.abs(got - want).max() <= 8


@given(st.integers(4, 40), st.integers(-10, 50), st.integers(-10, 50),
       st.floats(0, 0.5), st.floats(-60, 60), st.integers(0, 3))
@settings(max_examples=40, deadline=None)
def test_turned_crops_are_bilinear_samples(side, x, y, context, angle, seed):
    """A turned crop's pixel is the bilinear sample at its centre's offset from the box
    centre, turned by the angle, mapped back into the image."""
    img = np.random.default_rng(seed).integers(0, 256, (48, 56)).astype(np.uint8)
    got = crop_boxes(img, [[x, y, side, side]], size=16, context=context,
                     angles=[angle])[0].astype(float)
    big = side * (1 + 2 * context)
    t = np.radians(angle)
    want = np.empty((16, 16))
    for i in range(16):
        for j in range(16):
            u, v = (j + 0.5) * big / 16 - big / 2, (i + 0.5) * big / 16 - big / 2
            px = x + side / 2 + np.cos(t) * u + np.sin(t) * v - 0.5
            py = y + side / 2 - np.sin(t) * u + np.cos(t) * v - 0.5
            want[i, j] = _bilinear(img, [px], [py])[0, 0]
    assert np.abs(got - want).max() <= 8


def test_turned_crops_quarter_turns_and_bad_angles():
    img = np.arange(64, dtype=np.uint8).reshape(8, 8) * 3
    # a quarter turn of the box shows the content a quarter turn clockwise
    np.testing.assert_array_equal(
        crop_boxes(img, [[0, 0, 8, 8]], size=8, context=0, angles=[90])[0], np.rot90(img, -1))
    np.testing.assert_array_equal(
        crop_boxes(img, [[0, 0, 8, 8]], size=8, context=0, angles=[-90])[0], np.rot90(img, 1))
    np.testing.assert_array_equal(
        crop_boxes(img, [[1, 2, 5, 5]], size=11, context=0.1, angles=[0]),
        crop_boxes(img, [[1, 2, 5, 5]], size=11, context=0.1))
    with pytest.raises(ValueError, match="angles"):
        crop_boxes(img, [[0, 0, 8, 8]], size=8, context=0, angles=[1, 2])
    with pytest.raises(ValueError, match="angles"):
        crop_boxes(img, [[0, 0, 8, 8]], size=8, context=0, angles=[np.nan])


def test_crops_context_and_edges():
    img = np.tile(np.arange(40, dtype=np.uint8) * 5, (40, 1))
    ver = DetectionVerifier(size=20, context=0.25, pixels_per_cell=4)
    # a 10-pixel box with a quarter of context on each side covers 15 pixels, at 0.75 px/pixel
    crop = ver.crops(img, [[10, 10, 10, 10]])[0]
    assert crop[0, 0] == pytest.approx(img[0, 8], abs=3)
    assert crop[0, -1] == pytest.approx(img[0, 22], abs=3)
    # outside the image the edge repeats
    crop = ver.crops(img, [[-20, 0, 10, 10]])[0]
    assert (crop == img[0, 0]).all()
    with pytest.raises(ValueError, match="image"):
        ver.crops(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, 2]])


def test_fit_matches_scikit_learn():
    """The same objective as scikit-learn's L2 logistic regression with balanced classes."""
    sk = pytest.importorskip("sklearn.linear_model")
    pos, neg = _two_classes()
    ver = DetectionVerifier(size=24, pixels_per_cell=6, C=0.1).fit(pos, neg)
    x = np.concatenate([ver.features(pos), ver.features(neg)]).astype(np.float64)
    y = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    ref = sk.LogisticRegression(C=0.1, class_weight="balanced", tol=1e-10,
                                max_iter=10000).fit(x, y)
    np.testing.assert_allclose(ver.decision_function(np.concatenate([pos, neg])),
                               ref.decision_function(x), atol=2e-3, rtol=2e-3)
    assert (ver.decision_function(pos) > 0).mean() > 0.95
    assert (ver.decision_function(neg) < 0).mean() > 0.95


def test_features_in_batches_are_the_whole_stacks(monkeypatch):
    """Descriptors computed a few windows at a time (the memory bound) equal the family's on
    the whole stack; a stack whose descriptors exceed the budget is refused in one line."""
    import vjboost.cascade.verifier as vmod
    from vjboost._memory import MemoryBudgetError

    pos, neg = _two_classes(30)
    ver = DetectionVerifier(size=24, pixels_per_cell=6)
    stack = np.concatenate([pos, neg])
    whole = ver._hog.compute(stack).T
    monkeypatch.setattr(vmod, "FEATURE_BATCH_BYTES", 3 * ver._hog.channels_nbytes(1))
    got = ver.features(stack)
    assert got.dtype == np.float32 and got.shape == whole.shape
    np.testing.assert_array_equal(got, whole)
    assert ver.features(stack[:0]).shape == (0, whole.shape[1])
    # a stack of descriptors over one batch's bytes is checked against the budget first
    monkeypatch.setattr(vmod, "FEATURE_BATCH_BYTES", 4 * whole.shape[1])
    monkeypatch.setenv("VJBOOST_MEMORY_BUDGET", str(4 * whole.shape[1] * 10))
    with pytest.raises(MemoryBudgetError, match=r"HOG descriptors of 60 windows.*hard_per_image"):
        ver.features(stack)


def test_round_trip_and_bad_input():
    pos, neg = _two_classes(40)
    ver = DetectionVerifier(size=24, pixels_per_cell=6, weight=0.5).fit(pos, neg)
    back = DetectionVerifier.from_dict(ver.to_dict())
    np.testing.assert_array_equal(back.decision_function(pos), ver.decision_function(pos))
    assert back.weight == 0.5
    d = ver.to_dict()
    with pytest.raises(ValueError, match="coefficients"):
        DetectionVerifier.from_dict(dict(d, coef=d["coef"][:-1]))
    with pytest.raises(ValueError, match="kind"):
        DetectionVerifier.from_dict(dict(d, kind="svm"))
    with pytest.raises(ValueError, match="size"):
        DetectionVerifier.from_dict(dict(d, size="32"))
    with pytest.raises(ValueError, match="pixels_per_cell"):
        DetectionVerifier(size=16, pixels_per_cell=8)
    with pytest.raises(RuntimeError, match="not fitted"):
        DetectionVerifier().decision_function(np.zeros((1, 32, 32), np.uint8))
    with pytest.raises(ValueError, match="windows"):
        ver.features(np.zeros((2, 20, 20), np.uint8))


def test_mirror_reads_each_detection_and_its_mirror():
    pos, neg = _two_classes(40)
    ver = DetectionVerifier(size=24, pixels_per_cell=6).fit(pos, neg)
    assert "mirror" not in ver.to_dict()  # declared models without the key read as before
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (90, 120), dtype=np.uint8)
    boxes = np.array([[5, 7, 30, 30], [60, 20, 41, 41], [80, 50, 22, 22]])
    crops = ver.crops(img, boxes)
    plain = ver.verdicts(img, boxes)
    np.testing.assert_array_equal(plain, ver.decision_function(crops))
    both = DetectionVerifier.from_dict(dict(ver.to_dict(), mirror=True))
    assert both.mirror and both.to_dict()["mirror"] is True
    want = (ver.decision_function(crops)
            + ver.decision_function(np.ascontiguousarray(crops[:, :, ::-1]))) / 2
    np.testing.assert_allclose(both.verdicts(img, boxes), want, rtol=0, atol=1e-12)
    assert not np.allclose(both.verdicts(img, boxes), plain)  # the mirror was read
    with pytest.raises(ValueError, match="mirror"):
        DetectionVerifier(mirror=1)


def _two_kinds(n=60, size=24, seed=0):
    """Positives of two kinds (a vertical bar, a horizontal one) against a cross and plain
    windows: the positives' descriptors fall in two clusters."""
    rng = np.random.default_rng(seed)
    c = slice(size // 2 - 2, size // 2 + 2)
    v, h, x, z = (rng.integers(60, 120, (n, size, size)).astype(np.uint8) for _ in range(4))
    v[:, :, c] = 220
    h[:, c, :] = 220
    x[:, :, c] = 220
    x[:, c, :] = 220
    return np.concatenate([v, h]), np.concatenate([x, z])


def test_components_are_fits_of_the_positives_kmeans_clusters():
    """Each component is the balanced logistic regression (scikit-learn's) of one k-means
    cluster of the positives against every negative; the verdict is the largest log-odds."""
    sk = pytest.importorskip("sklearn.linear_model")
    from scipy.cluster.vq import kmeans2

    pos, neg = _two_kinds()
    ver = DetectionVerifier(size=24, pixels_per_cell=6, C=0.1, components=2).fit(
        pos, neg, seed=5)
    xp, xn = ver.features(pos).astype(np.float64), ver.features(neg).astype(np.float64)
    _, label = kmeans2(xp, 2, minit="++", seed=np.random.default_rng(5))
    # the clusters are the two kinds of positives
    assert sorted(np.bincount(label[:60], minlength=2)) == [0, 60]
    assert len(set(label[:60]) & set(label[60:])) == 0
    np.testing.assert_array_equal(ver.cluster_sizes_, np.bincount(label, minlength=2))
    stack = np.concatenate([pos, neg])
    x = np.concatenate([xp, xn])
    refs = []
    for k in range(2):
        xk = np.concatenate([xp[label == k], xn])
        yk = np.r_[np.ones((label == k).sum()), np.zeros(len(xn))]
        refs.append(sk.LogisticRegression(C=0.1, class_weight="balanced", tol=1e-10,
                                          max_iter=10000).fit(xk, yk).decision_function(x))
    assert ver.coef_.shape == (2, ver.n_features_in_) and ver.intercept_.shape == (2,)
    np.testing.assert_allclose(ver.decision_function(stack), np.max(refs, axis=0),
                               atol=2e-3, rtol=2e-3)
    # the same seed, the same verifier
    again = DetectionVerifier(size=24, pixels_per_cell=6, C=0.1, components=2).fit(
        pos, neg, seed=5)
    np.testing.assert_array_equal(again.coef_, ver.coef_)


def test_reassigned_components_keep_their_best_positives():
    """After the reassignment passes have settled, every positive is in the cluster of the
    component that scores it highest."""
    pos, neg = _two_kinds(seed=1)
    # a k-means start of three clusters on two kinds leaves one kind split in two
    ver = DetectionVerifier(size=24, pixels_per_cell=6, components=3, reassign=20).fit(
        pos, neg, seed=2)
    z = ver.features(pos).astype(np.float64) @ ver.coef_.T + ver.intercept_
    np.testing.assert_array_equal(ver.cluster_sizes_[:len(ver.coef_)],
                                  np.bincount(z.argmax(axis=1), minlength=len(ver.coef_)))
    assert ver.cluster_sizes_.sum() == len(pos)
    assert (ver.decision_function(pos) > 0).all() and (ver.decision_function(neg) < 0).all()


def test_components_round_trip_and_bad_input():
    pos, neg = _two_kinds(30)
    ver = DetectionVerifier(size=24, pixels_per_cell=6, components=2, reassign=1,
                            descriptor="fhog").fit(pos, neg)
    d = ver.to_dict()
    assert d["components"] == 2 and d["reassign"] == 1
    back = DetectionVerifier.from_dict(d)
    np.testing.assert_array_equal(back.decision_function(neg), ver.decision_function(neg))
    one = DetectionVerifier(size=24, pixels_per_cell=6).fit(pos, neg).to_dict()
    assert "components" not in one and "reassign" not in one  # one component reads as before
    with pytest.raises(ValueError, match="rows of"):
        DetectionVerifier.from_dict(dict(d, coef=d["coef"][0]))
    with pytest.raises(ValueError, match="rows of"):
        DetectionVerifier.from_dict(dict(d, intercept=d["intercept"][:1]))
    with pytest.raises(ValueError, match="rows of"):
        DetectionVerifier.from_dict(dict(d, coef=d["coef"] * 2, intercept=d["intercept"] * 2))
    with pytest.raises(ValueError, match="rows of equal length"):
        DetectionVerifier.from_dict(dict(d, coef=[d["coef"][0], d["coef"][1][:5]]))
    with pytest.raises(ValueError, match="components"):
        DetectionVerifier(components=0)
    with pytest.raises(ValueError, match="reassign"):
        DetectionVerifier(reassign=-1)
    with pytest.raises(ValueError, match="cannot make 3 components"):
        DetectionVerifier(size=24, pixels_per_cell=6, components=3).fit(pos[:2], neg)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_chi2_map_is_scikit_learns(n, d, seed):
    from sklearn.kernel_approximation import AdditiveChi2Sampler

    rng = np.random.default_rng(seed)
    x = rng.exponential(1.0, (n, d)).astype(np.float32)
    x[rng.random((n, d)) < 0.3] = 0  # HOG cells with no gradient
    z = additive_map(x, kind="chi2")
    ref = AdditiveChi2Sampler(sample_steps=2, sample_interval=0.5).fit_transform(x)
    # scikit-learn lays out the zero frequency of every value, then the cosines, then the sines
    order = np.r_[0:3 * d:3, 1:3 * d:3, 2:3 * d:3]
    np.testing.assert_allclose(z[:, order], ref, rtol=1e-5, atol=1e-6)


def test_additive_maps_approximate_their_kernels():
    rng = np.random.default_rng(3)
    x, y = rng.exponential(1.0, (2, 200)).astype(np.float32)
    hellinger = np.sqrt(x * y).sum()
    chi2 = (2 * x * y / (x + y)).sum()
    sx, sy = additive_map(np.stack([x, y]), kind="sqrt")
    assert sx @ sy == pytest.approx(hellinger, rel=1e-5)  # exact
    cx, cy = additive_map(np.stack([x, y]), kind="chi2")
    assert cx @ cy == pytest.approx(chi2, rel=0.1)  # one frequency: a close approximation
    np.testing.assert_array_equal(additive_map([[1.5, 0.0]], kind="none"), [[1.5, 0.0]])


def test_additive_map_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        additive_map([[0.5, -0.1]])
    with pytest.raises(ValueError, match="non-negative"):
        additive_map([[np.nan]], kind="sqrt")
    with pytest.raises(ValueError, match="kind"):
        additive_map([[1.0]], kind="rbf")
    with pytest.raises(ValueError, match=r"\(N, D\)"):
        additive_map([1.0, 2.0])


@pytest.mark.parametrize("kind", ["sqrt", "chi2"])
def test_verifier_reads_its_descriptor_through_the_map(kind):
    pos, neg = _two_classes(60)
    plain = DetectionVerifier(size=24, pixels_per_cell=6, descriptor="fhog")
    ver = DetectionVerifier(size=24, pixels_per_cell=6, descriptor="fhog",
                            feature_map=kind).fit(pos, neg)
    np.testing.assert_array_equal(ver.features(pos),
                                  additive_map(plain.features(pos), kind=kind))
    assert ver.n_features_in_ == plain.features(pos[:1]).shape[1] * (3 if kind == "chi2" else 1)
    assert ver.decision_function(pos).min() > ver.decision_function(neg).max()
    d = ver.to_dict()
    assert d["feature_map"] == kind
    back = DetectionVerifier.from_dict(d)
    np.testing.assert_array_equal(back.decision_function(neg), ver.decision_function(neg))
    assert "feature_map" not in plain.fit(pos, neg).to_dict()  # a plain verifier as before
    with pytest.raises(ValueError, match="feature_map"):
        DetectionVerifier(feature_map="rbf")
    if kind == "chi2":  # a plain model's coefficients are a third too few
        with pytest.raises(ValueError, match="finite coefficients"):
            DetectionVerifier.from_dict(dict(d, coef=plain.to_dict()["coef"]))


@given(st.lists(st.floats(-5, 50), min_size=1, max_size=20), st.floats(0, 3))
def test_verified_scores_order(margins, weight):
    m = np.asarray(margins)
    v = np.linspace(-2, 2, len(m))
    s = verified_scores(m, v, weight=weight)
    np.testing.assert_allclose(s, np.log(np.maximum(m, 1e-6)) + weight * v)
    # a larger margin never lowers the score, a larger verdict neither
    assert (verified_scores(m + 1, v, weight=weight) >= s).all()
    assert (verified_scores(m, v + 1, weight=weight) >= s).all()


def test_jittered_windows_keep_the_face_centred():
    w = np.zeros((30, 32, 32), np.uint8)
    w[:, 12:20, 12:20] = 255                                  # a bright square at the box centre
    out = jittered_windows(w, (4, 4, 24, 24), size=32, context=1 / 6, copies=2, seed=3)
    assert out.shape == (60, 32, 32)
    yy, xx = np.mgrid[:32, :32]
    for c in out.astype(float):
        cx, cy = (c * xx).sum() / c.sum(), (c * yy).sum() / c.sum()
        assert abs(cx - 15.5) < 0.15 * 32 and abs(cy - 15.5) < 0.15 * 32
    again = jittered_windows(w, (4, 4, 24, 24), size=32, context=1 / 6, copies=2, seed=3)
    np.testing.assert_array_equal(out, again)


def test_jittered_windows_turned():
    """Turned copies: a horizontal bar comes out tilted by up to the angle (its second
    moments), none past it; without a turn the draws are those of no ``rotate`` at all."""
    w = np.zeros((40, 32, 32), np.uint8)
    w[:, 14:18, 6:26] = 255                                   # a horizontal bar
    flat = jittered_windows(w, (4, 4, 24, 24), size=32, context=1 / 6, copies=1, shift=0,
                            scale=0, seed=1)
    turned = jittered_windows(w, (4, 4, 24, 24), size=32, context=1 / 6, copies=1, shift=0,
                              scale=0, rotate=20, seed=1)
    yy, xx = np.mgrid[:32, :32]

    def tilt(c):
        c = c.astype(float)
        m = c.sum()
        cx, cy = (c * xx).sum() / m, (c * yy).sum() / m
        cxx, cyy = (c * (xx - cx) ** 2).sum() / m, (c * (yy - cy) ** 2).sum() / m
        cxy = (c * (xx - cx) * (yy - cy)).sum() / m
        return abs(np.degrees(0.5 * np.arctan2(2 * cxy, cxx - cyy)))

    assert max(tilt(c) for c in flat) < 1
    tilts = np.array([tilt(c) for c in turned])
    assert tilts.max() < 21 and tilts.max() > 10 and np.median(tilts) > 3
    np.testing.assert_array_equal(
        jittered_windows(w, (4, 4, 24, 24), size=32, context=1 / 6, copies=2, seed=3),
        jittered_windows(w, (4, 4, 24, 24), size=32, context=1 / 6, copies=2, rotate=0,
                         seed=3))
    with pytest.raises(ValueError, match="rotate"):
        jittered_windows(w, (4, 4, 24, 24), size=32, context=1 / 6, rotate=-1)


@pytest.fixture(scope="module")
def face_model():
    return load_model("vjboost:frontalface")


def test_detector_verified_is_the_rescored_margin(face_model):
    from skimage import data

    img = data.astronaut()[..., 1]
    assert operating_score(face_model)["rank"] == "verified"
    ver = model_verifier(face_model)
    # the declared suppression drops detections inside better-scored ones, so under two
    # rankings it may keep different groups: compared without it, the groups are the same
    kw = dict(min_neighbors=1, suppress_inside=None)
    margin = CascadeDetector(face_model, score="margin", **kw).detect(img)
    verified = CascadeDetector(face_model, score="verified", **kw).detect(img)
    model = CascadeDetector(face_model, score="model", **kw).detect(img)
    assert len(margin) > 0
    np.testing.assert_array_equal(verified.boxes, margin.boxes)
    # the shipped verifier reads each detection and its mirror (round 43)
    crops = ver.crops(img, margin.boxes)
    assert ver.mirror and ver.components == 2
    verdict = (ver.decision_function(crops)
               + ver.decision_function(np.ascontiguousarray(crops[:, :, ::-1]))) / 2
    want = np.log(np.maximum(margin.scores, 1e-6)) + ver.weight * verdict
    np.testing.assert_allclose(verified.scores, want, rtol=1e-12)
    np.testing.assert_array_equal(model.scores, verified.scores)
    # the face is the best verified detection
    best = verified.boxes[np.argmax(verified.scores)]
    assert 150 < best[0] + best[2] / 2 < 260 and 40 < best[1] + best[3] / 2 < 160


def test_unset_settings_run_the_declared_default_operating_point(face_model):
    from skimage import data

    from vjboost.cascade.detector import OPENCV_DEFAULTS, default_operating

    img = data.astronaut()[..., 1]
    declared = face_model.params["operating_score"]
    assert default_operating(face_model) == {"min_neighbors": declared["min_neighbors"],
                                             "score": declared["rank"],
                                             "min_score": declared["min_score"]}
    auto = CascadeDetector(face_model)
    assert (auto.min_neighbors, auto.score, auto.min_score) == (1, "verified",
                                                                declared["min_score"])
    explicit = CascadeDetector(face_model, min_neighbors=1, score="verified",
                               min_score=declared["min_score"])
    got, want = auto.detect(img), explicit.detect(img)
    np.testing.assert_array_equal(got.boxes, want.boxes)
    np.testing.assert_array_equal(got.scores, want.scores)
    assert len(got) >= 1 and (got.scores >= declared["min_score"]).all()
    # the threshold is a subset of the declared curve: every detection above it, no other
    curve = CascadeDetector(face_model, min_neighbors=1, score="model").detect(img)
    assert CascadeDetector(face_model, score="model").min_score is None
    above = curve.scores >= declared["min_score"]
    np.testing.assert_array_equal(got.boxes, curve.boxes[above])
    assert len(curve) > len(got)
    # a score given explicitly (to read a curve) takes no default threshold; None keeps all
    for kw in ({"score": "margin"}, {"score": "verified"}, {"min_score": None}):
        assert CascadeDetector(face_model, **kw).min_score is None
    # the threshold belongs to the declared grouping too: another one gets none
    assert (CascadeDetector(face_model, min_neighbors=4).min_neighbors,
            CascadeDetector(face_model, min_neighbors=4).min_score) == (4, None)
    assert CascadeDetector(face_model, min_neighbors=1).min_score == declared["min_score"]
    # a model declaring no threshold (the Haar twin, OpenCV's cascades) keeps OpenCV's defaults
    for name in ("vjboost:frontalface_haar", "opencv:haarcascade_frontalface_default"):
        d = CascadeDetector(load_model(name))
        assert (d.min_neighbors, d.score, d.min_score) == tuple(OPENCV_DEFAULTS.values())
    for bad in (float("nan"), "3", True, None):
        odd = face_model.with_stages(face_model.stages, {
            **face_model.params, "operating_score": {**declared, "min_score": bad}})
        with pytest.raises(ValueError, match="min_score"):
            CascadeDetector(odd)
    for bad in ("min_score", ["min_score"], 3.07):
        odd = face_model.with_stages(face_model.stages, {**face_model.params,
                                                         "operating_score": bad})
        with pytest.raises(ValueError, match="operating_score"):
            CascadeDetector(odd)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("descriptor", ["fhog", "hog"])
def test_detector_threads_cover_the_verifier(face_model, thread_counts, monkeypatch,
                                             descriptor):
    # threads=1 is one thread for the whole detection, the verifier's descriptor included (the
    # benchmarks time a detector against single-threaded peers by CPU seconds); the shipped
    # model's verifier reads Felzenszwalb's HOG, a copy of it is given an unsigned-HOG one.
    # A detection's few windows take Felzenszwalb's HOG through one plain loop; the threaded
    # kernel is made to take them here, so that its thread count is the one checked
    import copy

    from skimage import data

    import vjboost.features.hog as hog_mod

    monkeypatch.setattr(hog_mod, "_FHOG_PARALLEL", 1)
    model = face_model
    if descriptor == "hog":
        model = copy.deepcopy(face_model)
        ver = dict(model.params["verifier"])
        ver.pop("descriptor")
        ver.pop("components")
        n = DetectionVerifier(size=ver["size"], pixels_per_cell=ver["pixels_per_cell"])._hog
        model.params["verifier"] = dict(ver, coef=[0.0] * n.n_features, intercept=0.0)
    assert DetectionVerifier.from_dict(model.params["verifier"]).descriptor == descriptor
    seen = (thread_counts(hog_mod, "_fhog") if descriptor == "fhog"
            else thread_counts(hog_mod.HOGFamily, "compute"))
    img = data.astronaut()[..., 1]
    for threads in (1, 2):
        det = CascadeDetector(model, min_neighbors=1, score="model", threads=threads)
        assert len(det.detect(img)) > 0
        assert seen and set(seen) == {threads}
        seen.clear()


def test_verified_needs_a_verifier(face_model):
    bare = face_model.with_stages(face_model.stages, {"operating_score": {
        "min_neighbors": 1, "rank": "margin"}})
    with pytest.raises(ValueError, match="declares no verifier"):
        CascadeDetector(bare, score="verified")


def test_fit_verifier_on_a_cascade(face_model):
    from skimage import data

    rng = np.random.default_rng(0)
    pos, _ = _two_classes(30, size=32)
    bgs = [data.camera()[::2, ::2], data.coins()]
    ver = fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, negative_stages=2, per_image=7,
                       copies=1, seed=1)
    assert ver.n_positives_ == 30 and 0 < ver.n_negatives_ <= 14
    again = fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, negative_stages=2, per_image=7,
                         copies=1, seed=1)
    np.testing.assert_array_equal(ver.coef_, again.coef_)
    flat = [np.full((60, 60), 128, np.uint8), rng.integers(0, 2, (40, 40)).astype(np.uint8)]
    with pytest.raises(ValueError, match="accept no window"):
        fit_verifier(face_model, pos, (4, 4, 24, 24), flat)


def test_fit_verifier_on_a_cascade_that_declares_a_verified_operating_score(face_model):
    """A model may declare its verified operating point (and a threshold on it) before its
    verifier exists, as a recipe ships it: the fit reads the raw windows, not that score,
    and fits the same verifier as for the bare cascade."""
    from skimage import data

    pos, _ = _two_classes(30, size=32)
    bgs = [data.camera()[::2, ::2], data.coins()]
    bare = {k: v for k, v in face_model.params.items()
            if k not in ("verifier", "operating_score")}
    declared = face_model.with_stages(face_model.stages, {**bare, "operating_score": {
        "min_neighbors": 1, "rank": "verified", "min_score": 3.0}})
    kw = dict(negative_stages=2, per_image=7, copies=1, seed=1, hard_per_image=3,
              part_per_face=1)
    got = fit_verifier(declared, pos, (4, 4, 24, 24), bgs, **kw)
    want = fit_verifier(face_model.with_stages(face_model.stages, bare), pos, (4, 4, 24, 24),
                        bgs, **kw)
    np.testing.assert_array_equal(got.coef_, want.coef_)
    assert got.n_hard_negatives_ == want.n_hard_negatives_


def test_fit_verifier_hard_negatives_are_the_whole_cascades_windows(face_model):
    """``hard_per_image`` adds, per background, at most that many windows that every stage
    accepts: counted against the whole cascade's own raw windows, and kept in the fit."""
    from skimage import data

    pos, _ = _two_classes(30, size=32)
    bgs = [data.camera(), data.astronaut()[..., 1], data.coins()]
    whole = CascadeDetector(face_model, scale_factor=1.1, min_neighbors=0, grouping="none",
                            coarse_to_fine=None)
    accepted = [len(whole.raw_windows(g)[0]) for g in bgs]
    assert sum(accepted) > 0
    kw = dict(negative_stages=2, per_image=5, copies=1, seed=3)
    plain = fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, **kw)
    hard = fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, hard_per_image=4, **kw)
    assert plain.n_hard_negatives_ == 0
    assert hard.n_hard_negatives_ == sum(min(4, a) for a in accepted)
    assert hard.n_negatives_ == plain.n_negatives_ + hard.n_hard_negatives_
    assert not np.array_equal(hard.coef_, plain.coef_)
    with pytest.raises(ValueError, match="hard_per_image"):
        fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, hard_per_image=-1)


@pytest.mark.slow
def test_fit_verifier_hard_stages_mines_with_a_cut_of_the_cascade(face_model):
    """``hard_stages`` takes the hard negatives from the cascade's first stages instead: their
    count is the cut's own raw windows (capped per image), at least the whole cascade's."""
    from skimage import data

    pos, _ = _two_classes(30, size=32)
    bgs = [data.camera(), data.astronaut()[..., 1], data.coins()]
    k = face_model.n_stages - 1
    cut = CascadeDetector(face_model.truncated(k), scale_factor=1.1, min_neighbors=0,
                          grouping="none", coarse_to_fine=None)
    accepted = [len(cut.raw_windows(g)[0]) for g in bgs]
    kw = dict(negative_stages=2, per_image=5, copies=1, seed=3, hard_per_image=1000)
    whole = fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, **kw)
    mined = fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, hard_stages=k, **kw)
    assert mined.n_hard_negatives_ == sum(accepted)
    assert mined.n_hard_negatives_ > whole.n_hard_negatives_
    same = fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, hard_stages=face_model.n_stages,
                        **kw)
    np.testing.assert_array_equal(same.coef_, whole.coef_)
    for bad in (0, face_model.n_stages + 1, True, 2.0):
        with pytest.raises(ValueError, match="hard_stages"):
            fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, hard_stages=bad, **kw)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 5), st.integers(0, 5)),
                max_size=30),
       st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 5), st.integers(0, 5)),
                max_size=30))
def test_rows_in_is_set_membership(rows, among):
    from vjboost.cascade.verifier_fit import _rows_in

    want = [r in set(among) for r in rows]
    got = _rows_in(np.array(rows, np.int64).reshape(-1, 3),
                   np.array(among, np.int64).reshape(-1, 3))
    assert got.tolist() == want


@pytest.mark.slow
def test_a_longer_cuts_windows_are_the_shorter_scans_windows_its_stages_accept(face_model):
    """``fit_verifier`` reads the longer cut's windows off a scan by that cut: they are the
    shorter cut's windows that the further stages accept, evaluated window by window."""
    from skimage import data

    from vjboost.cascade.runner import CascadeRunner
    from vjboost.cascade.verifier_fit import _rows_in, _scanner

    img = data.astronaut()[..., 1]
    n = face_model.n_stages
    for short, long in ((4, n - 2), (6, n)):
        det = _scanner(face_model.truncated(short), 1.1)
        pyr = det.pyramid((img.shape[1], img.shape[0]))
        _, _, at = det.raw_windows(img, return_positions=True, pyramid=pyr)
        _, _, at_long = _scanner(face_model.truncated(long), 1.1).raw_windows(
            img, return_positions=True, pyramid=pyr)
        further = CascadeRunner(face_model.truncated(long), first_stage=short, threads=1)
        want = further.accepts(pyr.windows(img, at), min_std=det.min_std)
        assert 0 < want.sum() < len(at)
        np.testing.assert_array_equal(_rows_in(at, at_long), want)


def test_fit_verifier_is_the_same_by_either_way_to_the_longer_cuts_windows(face_model,
                                                                            monkeypatch):
    """Whichever way ``fit_verifier`` finds the longer cut's windows (a second scan, or the
    further stages on each window alone), the verifier is the same."""
    from skimage import data

    import vjboost.cascade.verifier_fit as vmod

    pos, _ = _two_classes(20, size=32)
    bgs = [data.camera()[::2, ::2], data.coins()]
    kw = dict(negative_stages=4, per_image=5, copies=1, seed=3, hard_per_image=1000,
              hard_stages=face_model.n_stages - 2)
    fits = []
    for cost in (0, 10**12):  # 0: always evaluate alone; 10**12: always scan again
        monkeypatch.setattr(vmod, "_WINDOW_COST", cost)
        fits.append(fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, **kw))
    assert fits[0].n_hard_negatives_ == fits[1].n_hard_negatives_ > 0
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)


def _astronaut_faces():
    """The astronaut's face framed as the face windows of ``tools/face_data.py`` (36 px, the face
    box (6, 6, 24, 24)), shifted by a pixel or two, and mirrored."""
    import cv2
    from skimage import data

    g = data.astronaut()[..., 1]
    x, y, s = 186 - 19.5, 84 - 19.5, 117.0  # the detected face (186, 84, 78, 78), a sixth more
    out = []
    for dx, dy in ((0, 0), (2, -1), (-2, 2)):
        win = g[int(y + dy):int(y + dy + s), int(x + dx):int(x + dx + s)]
        out.append(cv2.resize(win, (36, 36), interpolation=cv2.INTER_AREA))
    out = np.stack(out)
    return np.concatenate([out, out[:, :, ::-1]])


def test_part_windows_are_the_cascades_windows_inside_each_face(face_model):
    """``part_windows``: every accepted window at least half inside the (enlarged) face box
    and at IoU < 0.3 with it, cut as detections are; ``per_face`` caps them per face and
    factor by a seeded choice."""
    import cv2

    from vjboost.boxes import coverage_matrix, iou_matrix
    from vjboost.cascade.verifier import crop_boxes
    from vjboost.cascade.verifier_fit import part_windows

    faces, box = _astronaut_faces(), np.array([6.0, 6.0, 24.0, 24.0])
    det = CascadeDetector(face_model, scale_factor=1.1, min_neighbors=0, grouping="none",
                          coarse_to_fine=None)
    want, counts = [], []
    for f in (3, 4):
        for w in faces:
            big = cv2.resize(w, (36 * f, 36 * f), interpolation=cv2.INTER_CUBIC)
            b, _ = det.raw_windows(big)
            face = box[None] * f
            keep = (coverage_matrix(b, face)[:, 0] >= 0.5) & (iou_matrix(b, face)[:, 0] < 0.3)
            want.append(crop_boxes(big, b[keep], size=40, context=1 / 6))
            counts.append(int(keep.sum()))
    assert sum(counts) > 0
    every = part_windows(face_model, faces, box, per_face=10**6, size=40)
    np.testing.assert_array_equal(every, np.concatenate(want))
    few = part_windows(face_model, faces, box, per_face=1, size=40, seed=5)
    assert len(few) == sum(min(1, c) for c in counts)
    assert all((few[i] == every).all(axis=(1, 2)).any() for i in range(len(few)))
    np.testing.assert_array_equal(few, part_windows(face_model, faces, box, per_face=1, size=40,
                                                    seed=5))
    for kw, name in (({"per_face": 0}, "per_face"), ({"per_face": 1, "upscale": ()}, "upscale"),
                     ({"per_face": 1, "upscale": (0,)}, "upscale"),
                     ({"per_face": 1, "upscale": (2.5,)}, "upscale")):
        with pytest.raises(ValueError, match=name):
            part_windows(face_model, faces, box, **kw)


def test_fit_verifier_part_negatives(face_model):
    """``part_per_face`` adds those parts to the negatives (none: the fit as before)."""
    from skimage import data

    from vjboost.cascade.verifier_fit import part_windows

    faces, box = _astronaut_faces(), (6, 6, 24, 24)
    bgs = [data.camera(), data.coins()]
    kw = dict(negative_stages=2, per_image=5, copies=1, seed=3)
    plain = fit_verifier(face_model, faces, box, bgs, **kw)
    parts = fit_verifier(face_model, faces, box, bgs, part_per_face=2, **kw)
    assert plain.n_part_negatives_ == 0
    assert parts.n_part_negatives_ == len(part_windows(face_model, faces, box, per_face=2,
                                                       seed=3)) > 0
    assert parts.n_negatives_ == plain.n_negatives_ + parts.n_part_negatives_
    assert not np.array_equal(parts.coef_, plain.coef_)
    again = fit_verifier(face_model, faces, box, bgs, part_per_face=0, **kw)
    np.testing.assert_array_equal(again.coef_, plain.coef_)
    with pytest.raises(ValueError, match="part_per_face"):
        fit_verifier(face_model, faces, box, bgs, part_per_face=-1)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.slow
def test_fit_verifier_is_the_same_for_any_thread_count(face_model):
    """The scans run an image per thread and the seeded choices are drawn in image order as
    the images come back: one thread and two fit the same verifier from the same windows, and
    the parts are a serial loop's (:func:`test_part_windows_are_the_cascades_windows_inside_
    each_face` writes that loop out)."""
    from skimage import data

    from vjboost.cascade.verifier_fit import part_windows

    faces, box = _astronaut_faces(), (6, 6, 24, 24)
    bgs = [data.camera(), data.coins(), data.astronaut()[..., 1], data.camera()[::2, ::2]]
    kw = dict(negative_stages=2, per_image=3, hard_per_image=2, part_per_face=1, copies=1,
              seed=4)
    one = fit_verifier(face_model, faces, box, bgs, threads=1, **kw)
    two = fit_verifier(face_model, faces, box, bgs, threads=2, **kw)
    assert one.n_hard_negatives_ > 0 and one.n_part_negatives_ > 0
    assert one.to_dict() == two.to_dict()
    assert (one.n_negatives_, one.n_hard_negatives_, one.n_part_negatives_) == (
        two.n_negatives_, two.n_hard_negatives_, two.n_part_negatives_)
    np.testing.assert_array_equal(
        part_windows(face_model, faces, box, per_face=2, seed=1, threads=1),
        part_windows(face_model, faces, box, per_face=2, seed=1, threads=2))


@pytest.mark.parametrize("negative_stages,hard_stages", [(2, None), (2, 4), (5, 3), (3, 3)])
def test_fit_verifier_negatives_are_each_cuts_own_windows(face_model, monkeypatch,
                                                          negative_stages, hard_stages):
    """The background negatives are, image by image, a seeded choice among the raw windows of
    the first ``negative_stages`` stages, then among those of the first ``hard_stages``: the
    same windows as two scans, each by its own cut (the fit scans once, by the shorter cut, and
    reads the longer one's further stages on the windows it found)."""
    from skimage import data

    seen = {}
    monkeypatch.setattr(DetectionVerifier, "fit",
                        lambda self, p, n, seed=0: seen.update(neg=n) or self)
    pos, _ = _two_classes(10, size=32)
    bgs = [data.camera(), data.astronaut()[..., 1], data.coins(), data.page()]
    fit_verifier(face_model, pos, (4, 4, 24, 24), bgs, negative_stages=negative_stages,
                 per_image=6, hard_per_image=4, hard_stages=hard_stages, copies=1, seed=2)
    ver = DetectionVerifier()
    cuts = [(negative_stages, 6, np.random.default_rng([2, 1])),
            (hard_stages or face_model.n_stages, 4, np.random.default_rng([2, 2]))]
    scans = [CascadeDetector(face_model.truncated(n), scale_factor=1.1, min_neighbors=0,
                             grouping="none", score="best", min_score=None,
                             coarse_to_fine=None) for n, _, _ in cuts]
    want = []
    for g in bgs:
        for det, (_, keep, rng) in zip(scans, cuts, strict=True):
            b, _ = det.raw_windows(g)
            if len(b) > keep:
                b = b[np.sort(rng.choice(len(b), keep, replace=False))]
            if len(b):
                want.append(ver.crops(g, b))
    assert sum(len(w) for w in want) > 12
    np.testing.assert_array_equal(seen["neg"], np.concatenate(want))
