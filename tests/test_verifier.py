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
    fit_verifier,
    jittered_windows,
    verified_scores,
)


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


@pytest.fixture(scope="module")
def face_model():
    return load_model("vjboost:frontalface")


def test_detector_verified_is_the_rescored_margin(face_model):
    from skimage import data

    img = data.astronaut()[..., 1]
    assert operating_score(face_model)["rank"] == "verified"
    ver = model_verifier(face_model)
    margin = CascadeDetector(face_model, min_neighbors=1, score="margin").detect(img)
    verified = CascadeDetector(face_model, min_neighbors=1, score="verified").detect(img)
    model = CascadeDetector(face_model, min_neighbors=1, score="model").detect(img)
    assert len(margin) > 0
    np.testing.assert_array_equal(verified.boxes, margin.boxes)
    want = np.log(np.maximum(margin.scores, 1e-6)) + ver.weight * ver.decision_function(
        ver.crops(img, margin.boxes))
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
    assert CascadeDetector(face_model, min_neighbors=4).min_neighbors == 4
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
def test_detector_threads_cover_the_verifier(face_model, thread_counts, descriptor):
    # threads=1 is one thread for the whole detection, the verifier's descriptor included (the
    # benchmarks time a detector against single-threaded peers by CPU seconds); the shipped
    # model's verifier reads Felzenszwalb's HOG, a copy of it is given an unsigned-HOG one
    import copy

    from skimage import data

    import vjboost.features.hog as hog_mod

    model = face_model
    if descriptor == "hog":
        model = copy.deepcopy(face_model)
        ver = dict(model.params["verifier"])
        ver.pop("descriptor")
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
    from vjboost.cascade.verifier import crop_boxes, part_windows

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

    from vjboost.cascade.verifier import part_windows

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
