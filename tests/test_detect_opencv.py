"""The detector against cv2.CascadeClassifier.detectMultiScale and brute-force references."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from vjboost.boost.tree import Tree
from vjboost.cascade import (
    CascadeDetector,
    CascadeModel,
    CascadeRunner,
    Stage,
    detect,
    opencv_scales,
    read_opencv_xml,
    write_opencv_xml,
)
from vjboost.cascade.synthetic import random_cascade

cv2 = pytest.importorskip("cv2")
HAS_CC = hasattr(cv2, "CascadeClassifier")
needs_cc = pytest.mark.skipif(not HAS_CC, reason="cv2 lacks CascadeClassifier (OpenCV 5 main)")


def _shipped(name: str) -> Path:
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    p = Path(base) / name if base else None
    if not HAS_CC or p is None or not p.is_file():
        pytest.skip(f"cv2 lacks CascadeClassifier or {name}")
    return p


def _ms(boxes) -> Counter:
    return Counter(map(tuple, np.asarray(boxes).reshape(-1, 4).tolist()))


def _iou(a, b):
    ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def _matched_fraction(a, b, thr=0.9):
    """Share of boxes of ``a`` with a box of ``b`` at IoU >= thr (1.0 if ``a`` is empty)."""
    a = np.asarray(a).reshape(-1, 4).tolist()
    b = np.asarray(b).reshape(-1, 4).tolist()
    if not a:
        return 1.0
    return sum(any(_iou(x, y) >= thr for y in b) for x in a) / len(a)


def _compare(model, cc, img, **kw):
    sf = kw.get("scale_factor", 1.1)
    mn = kw.get("min_neighbors", 3)
    mins = kw.get("min_size") or (0, 0)
    maxs = kw.get("max_size") or (0, 0)
    ours = CascadeDetector(model, **kw).detect(img)
    ref = cc.detectMultiScale(img, scaleFactor=sf, minNeighbors=mn, minSize=mins, maxSize=maxs)
    return ours, np.asarray(ref).reshape(-1, 4)


@pytest.fixture(scope="module")
def astronaut_gray():
    skd = pytest.importorskip("skimage.data")
    return cv2.cvtColor(skd.astronaut(), cv2.COLOR_RGB2GRAY)


@pytest.fixture(scope="module")
def lbp_face(tmp_path_factory):
    """scikit-image's LBP face cascade, with its misspelled tag fixed for cv2."""
    skd = pytest.importorskip("skimage.data")
    src = Path(skd.lbp_frontal_face_cascade_filename()).read_text()
    p = tmp_path_factory.mktemp("lbp") / "lbpcascade_frontalface.xml"
    p.write_text(src.replace("featuhreParams", "featureParams"))
    return p


# ------------------------------------------------------------------------------------------------
# Shipped cascades on astronaut (always available)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["haarcascade_frontalface_default.xml",
                                  "haarcascade_frontalface_alt.xml",
                                  "haarcascade_frontalface_alt2.xml"])
@pytest.mark.parametrize(("sf", "mn", "mins"), [(1.1, 3, None), (1.2, 0, None),
                                                (1.25, 1, (40, 40))])
def test_shipped_haar_identical_on_astronaut(astronaut_gray, name, sf, mn, mins):
    p = _shipped(name)
    model = read_opencv_xml(p)
    ours, ref = _compare(model, cv2.CascadeClassifier(str(p)), astronaut_gray,
                         scale_factor=sf, min_neighbors=mn, min_size=mins)
    assert len(ref) > 0
    assert _ms(ours.boxes) == _ms(ref)


@needs_cc
@pytest.mark.parametrize(("sf", "mn"), [(1.1, 3), (1.1, 0), (1.2, 2)])
def test_skimage_lbp_cascade_identical_on_astronaut(astronaut_gray, lbp_face, sf, mn):
    model = read_opencv_xml(lbp_face)
    ours, ref = _compare(model, cv2.CascadeClassifier(str(lbp_face)), astronaut_gray,
                         scale_factor=sf, min_neighbors=mn)
    assert len(ref) > 0
    assert _ms(ours.boxes) == _ms(ref)


def test_colour_input_threads_and_scores(astronaut_gray):
    p = _shipped("haarcascade_frontalface_alt2.xml")
    skd = pytest.importorskip("skimage.data")
    model = read_opencv_xml(p)
    rgb = skd.astronaut()
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    cc = cv2.CascadeClassifier(str(p))
    ref = cc.detectMultiScale(bgr, 1.15, 2)
    d1 = CascadeDetector(model, scale_factor=1.15, min_neighbors=2, threads=1).detect(bgr)
    d2 = CascadeDetector(model, scale_factor=1.15, min_neighbors=2, threads=2).detect(bgr)
    d3 = CascadeDetector(model, scale_factor=1.15, min_neighbors=2,
                         channel_order="rgb").detect(rgb)
    assert _ms(d1.boxes) == _ms(ref) == _ms(d2.boxes) == _ms(d3.boxes)
    # detectMultiScale3: per group the best last-stage score; detectMultiScale2: group sizes
    boxes3, levels, weights = cc.detectMultiScale3(bgr, 1.15, 2, outputRejectLevels=True)
    ref3 = {tuple(b): w for b, w in zip(np.asarray(boxes3).tolist(), np.ravel(weights),
                                        strict=True)}
    for b, s in zip(d1.boxes.tolist(), d1.scores, strict=True):
        assert s == pytest.approx(ref3[tuple(b)], rel=1e-6, abs=1e-6)
    assert (d1.stages == model.n_stages).all()
    boxes2, nums = cc.detectMultiScale2(bgr, 1.15, 2)
    ref2 = {tuple(b): n for b, n in zip(np.asarray(boxes2).tolist(), np.ravel(nums),
                                        strict=True)}
    assert {tuple(b): n for b, n in zip(d1.boxes.tolist(), d1.neighbors, strict=True)} == ref2


def test_roi_equals_crop(astronaut_gray):
    p = _shipped("haarcascade_frontalface_default.xml")
    model = read_opencv_xml(p)
    det = CascadeDetector(model, scale_factor=1.1, min_neighbors=1)
    roi = (100, 20, 300, 260)
    a = det.detect(astronaut_gray, roi=roi)
    crop = astronaut_gray[20:280, 100:400]
    b = det.detect(crop)
    assert len(b) > 0
    np.testing.assert_array_equal(a.boxes, b.boxes + np.array([100, 20, 0, 0]))
    with pytest.raises(ValueError, match="roi"):
        det.detect(astronaut_gray, roi=(1000, 1000, 5, 5))


# ------------------------------------------------------------------------------------------------
# Stripe cut-off, scale list, max/min size
# ------------------------------------------------------------------------------------------------


def _always_firing(window=(24, 24)):
    fam = random_cascade("HAAR", window=window, seed=0).family
    st = Stage([Tree.stump(0, threshold=0.0, left_value=1.0, right_value=1.0)], threshold=0.5)
    return CascadeModel((window[1], window[0]), stages=[st], family=fam, feature_ids=[0])


def test_stripe_cutoff_like_opencv():
    # 160x160 image, 24x24 window, scaleFactor 1.25, minSize 30: OpenCV never scans row y=104
    # of the first scale (rects at y=130), see the spec's example.
    img = (np.random.default_rng(3).random((160, 160)) * 255).astype(np.uint8)
    model = _always_firing()
    opencv = CascadeDetector(model, scale_factor=1.25, min_neighbors=0, min_size=30).detect(img)
    clean = CascadeDetector(model, scale_factor=1.25, min_neighbors=0, min_size=30,
                            mode="clean").detect(img)
    ys_o = set(opencv.boxes[opencv.boxes[:, 2] == 30][:, 1].tolist())
    ys_c = set(clean.boxes[clean.boxes[:, 2] == 30][:, 1].tolist())
    assert 130 in ys_c and 130 not in ys_o
    if HAS_CC:
        p = Path(pytest.importorskip("tempfile").mkdtemp()) / "always.xml"
        write_opencv_xml(model, p)
        ref = cv2.CascadeClassifier(str(p)).detectMultiScale(img, 1.25, 0, minSize=(30, 30))
        assert _ms(ref) == _ms(opencv.boxes)


def test_opencv_scales_rules():
    s = opencv_scales((24, 24), (100, 80), 1.25)
    assert s[0] == np.float32(1.0) and all(int(np.rint(24 * x)) <= 80 for x in s)
    # minSize == maxSize between two scales: nearest scale is used
    one = opencv_scales((24, 24), (200, 200), 1.25, (33, 33), (33, 33))
    assert len(one) == 1 and int(np.rint(np.float32(24) * one[0])) == 30
    assert opencv_scales((24, 24), (20, 100), 1.1) == []


@needs_cc
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_sizes_and_factors_raw_identical(seed, tmp_path):
    rng = np.random.default_rng(seed)
    model = random_cascade("HAAR", window=(18, 22), max_nodes=2, tilted_fraction=0.3,
                           pass_rate=0.6, seed=seed)
    p = tmp_path / "r.xml"
    write_opencv_xml(model, p)
    cc = cv2.CascadeClassifier(str(p))
    for _ in range(4):
        h, w = rng.integers(30, 150, size=2)
        img = cv2.GaussianBlur((rng.random((h, w)) * 255).astype(np.uint8), (3, 3), 1)
        sf = float(rng.uniform(1.03, 1.5))
        mins = tuple(int(v) for v in rng.integers(0, 40, size=2))
        maxs = tuple(int(v) for v in rng.integers(0, 120, size=2))
        mn = int(rng.integers(0, 3))
        ours, ref = _compare(model, cc, img, scale_factor=sf, min_neighbors=mn, min_size=mins,
                             max_size=maxs)
        assert _ms(ours.boxes) == _ms(ref)


# ------------------------------------------------------------------------------------------------
# Export round trip: our cascade -> XML -> cv2 gives our detections
# ------------------------------------------------------------------------------------------------


def _depth(tree, node: int = 0) -> int:
    kids = [int(c) for c in (tree.left[node], tree.right[node]) if c > 0]
    return 1 + max((_depth(tree, c) for c in kids), default=0)


@needs_cc
@pytest.mark.parametrize(
    "kw",
    [
        {"kind": "HAAR"},
        {"kind": "HAAR", "max_nodes": 3, "tilted_fraction": 0.5},
        {"kind": "LBP"},
        {"kind": "LBP", "max_nodes": 3, "window": (24, 18)},
        {"kind": "HAAR", "balanced": True, "tilted_fraction": 0.3, "shape": 2},
        {"kind": "LBP", "balanced": True, "shape": 2},
        {"kind": "HAAR", "max_nodes": 2, "shape": 3},
        {"kind": "LBP", "max_nodes": 2, "shape": 3},
    ],
    ids=["haar-stumps", "haar-trees-tilted", "lbp-stumps", "lbp-trees", "haar-depth2",
         "lbp-depth2", "haar-shallow", "lbp-shallow"],
)
def test_export_roundtrip_cv2_detections_equal(kw, tmp_path, astronaut_gray):
    img = cv2.resize(astronaut_gray, (220, 200), interpolation=cv2.INTER_AREA)
    for seed in (0, 1):
        model = random_cascade(seed=seed, **{k: v for k, v in kw.items() if k != "shape"})
        # the detector's kernel for the cascade's tree shapes: stumps (1), three-node depth-2
        # trees (2), other trees of depth <= 2 (3, branch-free like 2), anything else (0)
        trees = [t for st in model.stages for t in st.trees]
        depth, sizes = max(_depth(t) for t in trees), {t.n_nodes for t in trees}
        want = 1 if sizes == {1} else 2 if sizes == {3} and depth == 2 else 3 if depth <= 2 else 0
        assert CascadeRunner(model).compiled.shape == want
        assert want == kw.get("shape", want)
        p = tmp_path / f"m{seed}.xml"
        write_opencv_xml(model, p)
        cc = cv2.CascadeClassifier(str(p))
        assert not cc.empty()
        for sf, mn in ((1.1, 0), (1.2, 2)):
            ours, ref = _compare(model, cc, img, scale_factor=sf, min_neighbors=mn)
            if mn == 0:
                assert len(ref) > 50  # the cascade really fires: a meaningful comparison
            assert _ms(ours.boxes) == _ms(ref)


# ------------------------------------------------------------------------------------------------
# Brute-force reference (no OpenCV involved): one scale, every window
# ------------------------------------------------------------------------------------------------


def _tilted_integral(img):
    """T[y][x] = sum of I(x', y') over y' < y and |x' - x + 1| <= y - y' - 1 (by definition)."""
    h, w = img.shape
    T = np.zeros((h + 1, w + 1), dtype=np.int64)
    xs = np.arange(w)
    for y in range(h + 1):
        for x in range(w + 1):
            tot = 0
            for yp in range(y):
                m = np.abs(xs - x + 1) <= y - yp - 1
                tot += int(img[yp, m].sum())
            T[y, x] = tot
    return T


def _decide(model, vals, return_score=False):
    """Accepted windows from feature values (F, n) of ``model.feature_ids``: every stage's
    float64 sum of tree outputs against float32(threshold) - 1e-5 (and the last stage's sum)."""
    ok = np.ones(vals.shape[1], dtype=bool)
    for st in model.stages:
        s = np.zeros(vals.shape[1])
        for t in st.trees:
            s += t.predict_matrix(vals)
        ok &= s >= np.float32(np.float32(st.threshold) - np.float32(1e-5))
    return (ok, s) if return_score else ok


def _brute_force(model, img):
    H, W = model.window_shape
    h, w = img.shape
    I = img.astype(np.int64)
    feats = [model.family.describe(int(i)) for i in model.feature_ids]
    haar = model.opencv_type == "HAAR"
    T = _tilted_integral(img) if any(f.get("tilted") for f in feats) else None
    accepted = []
    for y in range(h - H + 1):
        for x in range(w - W + 1):
            win = I[y:y + H, x:x + W]
            vals = np.zeros((len(feats), 1), dtype=np.float32)
            inv = np.float32(1.0)
            if haar:
                inner = win[1:-1, 1:-1]
                area = inner.size
                nf = area * float((inner ** 2).sum()) - float(inner.sum()) ** 2
                if nf <= 0:
                    continue
                inv = np.float32(1.0 / np.sqrt(nf))
                if not area * float(inv) < 0.1:
                    continue
            for k, f in enumerate(feats):
                if haar:
                    v = np.float32(0.0)
                    for (rx, ry, rw, rh, wt) in f["rects"]:
                        if f["tilted"]:
                            X, Y = x + rx, y + ry
                            r = (T[Y, X] - T[Y + rh, X - rh] - T[Y + rw, X + rw]
                                 + T[Y + rw + rh, X + rw - rh])
                        else:
                            r = win[ry:ry + rh, rx:rx + rw].sum()
                        v = np.float32(v + np.float32(wt) * np.float32(r))
                    vals[k, 0] = np.float32(v * inv)
                else:
                    rx, ry, bw, bh = f["rect"]
                    b = [win[ry + j * bh:ry + (j + 1) * bh, rx + i * bw:rx + (i + 1) * bw].sum()
                         for j in range(3) for i in range(3)]
                    order = [0, 1, 2, 5, 8, 7, 6, 3]
                    vals[k, 0] = sum((b[o] >= b[4]) << (7 - n) for n, o in enumerate(order))
            if _decide(model, vals)[0]:
                accepted.append((x, y, W, H))
    return Counter(accepted)


@pytest.mark.parametrize(
    "kw",
    [{"kind": "HAAR", "max_nodes": 2, "tilted_fraction": 0.5},
     {"kind": "LBP", "max_nodes": 2}],
    ids=["haar", "lbp"],
)
def test_kernel_matches_brute_force(kw, astronaut_gray):
    model = random_cascade(window=(12, 10), n_stages=2, seed=4, **kw)
    img = np.ascontiguousarray(astronaut_gray[180:214, 200:240])
    det = CascadeDetector(model, mode="clean", step=1, skip_after_stage0=False,
                          min_neighbors=0, max_size=(12, 10))
    ours = det.detect(img)
    ref = _brute_force(model, img)
    assert sum(ref.values()) > 5
    assert _ms(ours.boxes) == ref


def test_hog_cascade_matches_window_evaluation():
    from vjboost.features import get_family_class

    fam = get_family_class("hog")(window_shape=(16, 16), pixels_per_cell=(4, 4))
    rng = np.random.default_rng(0)
    stages = []
    for _ in range(2):
        trees = [Tree.stump(int(k), threshold=float(rng.uniform(0.0, 0.3)),
                            left_value=float(rng.uniform(-1, 0)),
                            right_value=float(rng.uniform(0, 1)))
                 for k in rng.integers(0, 6, size=3)]
        stages.append(Stage(trees, threshold=-0.3))
    ids = [int(i) for i in rng.choice(fam.n_features, size=6, replace=False)]
    model = CascadeModel((16, 16), stages=stages, family=fam, feature_ids=ids)
    img = cv2.GaussianBlur((rng.random((40, 44)) * 255).astype(np.uint8), (3, 3), 1)
    det = CascadeDetector(model, mode="clean", step=2, min_neighbors=0, max_size=(16, 16),
                          skip_after_stage0=False)
    ours = det.detect(img)
    # reference: cut every window and use the training-path evaluate()
    pos = [(y, x) for y in range(0, 40 - 16 + 1, 2) for x in range(0, 44 - 16 + 1, 2)]
    wins = np.stack([img[y:y + 16, x:x + 16] for y, x in pos])
    vals = fam.evaluate(fam.prepare(wins), ids)
    ref = Counter((x, y, 16, 16) for (y, x), ok in zip(pos, _decide(model, vals), strict=True)
                  if ok)
    assert sum(ref.values()) > 0
    assert _ms(ours.boxes) == ref


def _random_mixed_cascade(pool, ids, windows, rng, n_stages=3, n_trees=4, pass_rate=0.45):
    """Depth-2 trees over ``ids`` of ``pool`` (nodes ordered or categorical as their feature),
    thresholds and stage thresholds set from the values on ``windows`` so that stages really
    decide."""
    vals = pool.evaluate(windows, ids)
    kinds = pool.kinds()[ids]
    stages = []
    for _ in range(n_stages):
        trees = []
        for _ in range(n_trees):
            feat = rng.choice(len(ids), size=3, replace=False)
            cat = kinds[feat]
            thr = np.where(cat, 0.0, vals[feat, rng.integers(0, vals.shape[1], 3)])
            sub = rng.integers(0, 2**32, size=(3, 8), dtype=np.uint64).astype(np.uint32)
            trees.append(Tree(feat, threshold=thr, left=[1, -0, -2], right=[2, -1, -3],
                              leaves=rng.uniform(-1, 1, 4), categorical=cat, subsets=sub))
        score = sum(t.predict_matrix(vals) for t in trees)
        stages.append(Stage(trees, threshold=float(np.quantile(score, 1 - pass_rate))))
    return CascadeModel(pool.window_shape, stages=stages, family=pool, feature_ids=ids)


@pytest.mark.parametrize("names", [("haar", "mblbp", "hog"), ("haar", "mblbp", "channels"),
                                   ("haar", "mbltp"), ("haar", "mblbp", "mbltp", "hog"),
                                   ("haar", "mbltp", "mbltpd"), ("haar", "mbltp:local"),
                                   ("haar", "fourier")],
                         ids=["haar+mblbp+hog", "haar+mblbp+channels", "haar+mbltp",
                              "haar+mblbp+mbltp+hog", "haar+mbltp+mbltpd", "haar+mbltp(local)",
                              "haar+fourier(generic)"])
def test_mixed_cascade_equals_brute_force_at_every_scale(astronaut_gray, names):
    """Haar + MB-LBP / MB-LTP (+ HOG) features in one cascade of depth-2 trees mixing ordered and
    categorical nodes: the detector (one kernel pass when every family compiles its features)
    finds exactly the windows that the families' own evaluation of every cut-out window
    accepts, at every scale, with the same scores."""
    from vjboost.cascade import CascadeRunner
    from vjboost.features import FeaturePool, get_family_class

    win = (16, 16)
    kw = {"hog": {"pixels_per_cell": (7, 7)},  # the 16x16 window's interior cells
          "fourier": {"size": 4}, "mbltp:local": {"reference": "local", "detrend": True}}
    pool = FeaturePool([get_family_class(n.split(":")[0])(win, **kw.get(n, {})) for n in names])
    rng = np.random.default_rng(7)
    ids = np.sort(np.concatenate([rng.choice(np.arange(a, b), 6, replace=False)
                                  for a, b in zip(pool.offsets[:-1], pool.offsets[1:],
                                                  strict=True)]))
    img = np.ascontiguousarray(astronaut_gray[60:150, 150:250])
    sample = np.lib.stride_tricks.sliding_window_view(img, win)[::5, ::5].reshape(-1, *win)
    model = _random_mixed_cascade(pool, ids, sample, rng)
    # one kernel pass when every family compiles its features, else the generic family path
    compiled = all(f.program([0]) is not None for f in pool.families)
    assert (CascadeRunner(model).compiled is not None) == compiled
    assert compiled == ("fourier" not in names)
    det = CascadeDetector(model, scale_factor=1.2, min_neighbors=0, mode="clean", step=1,
                          skip_after_stage0=False, min_std=0)
    boxes, scores = det.raw_windows(img)
    # brute force: every window of every level, cut out and evaluated by the families
    ref_boxes, ref_scores = [], []
    for s in opencv_scales(win[::-1], img.shape[::-1], 1.2):
        sw, sh = (int(np.rint(np.float32(n) / s)) for n in img.shape[::-1])
        level = img if (sw, sh) == img.shape[::-1] else cv2.resize(
            img, (sw, sh), interpolation=cv2.INTER_LINEAR_EXACT)
        cut = np.lib.stride_tricks.sliding_window_view(level, win)
        ys, xs = np.mgrid[:cut.shape[0], :cut.shape[1]]
        alive, score = _decide(model, pool.evaluate(cut.reshape(-1, *win), ids), True)
        for x, y, sc in zip(xs.ravel()[alive], ys.ravel()[alive], score[alive], strict=True):
            ref_boxes.append((int(np.rint(np.float32(x) * s)), int(np.rint(np.float32(y) * s)),
                              int(np.rint(np.float32(16) * s)), int(np.rint(np.float32(16) * s))))
            ref_scores.append(sc)
    assert len(ref_boxes) > 20
    assert _ms(boxes) == Counter(ref_boxes)
    order = np.lexsort(np.asarray(ref_boxes).T[::-1])
    got = np.lexsort(boxes.T[::-1])
    np.testing.assert_array_equal(scores[got], np.asarray(ref_scores)[order])


def test_parameter_errors():
    model = random_cascade(seed=0)
    with pytest.raises(ValueError, match="scale_factor"):
        CascadeDetector(model, scale_factor=1.0)
    with pytest.raises(ValueError, match="min_neighbors"):
        CascadeDetector(model, min_neighbors=-1)
    with pytest.raises(ValueError, match="step: only configurable"):
        CascadeDetector(model, step=3)
    with pytest.raises(ValueError, match="grouping"):
        CascadeDetector(model, grouping="mean")
    with pytest.raises(TypeError, match="8-bit.*got dtype float32; convert e.g. with "
                                        "skimage.util.img_as_ubyte"):
        CascadeDetector(model).detect(np.zeros((50, 50), dtype=np.float32))
    # several images: named as what they are, not as the 4-D stack or float array NumPy makes
    img = np.zeros((50, 50, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"expected one image \(an ndarray\), got a list of 2; "
                                         "detect each image in turn"):
        CascadeDetector(model).detect([img, img])
    with pytest.raises(ValueError, match="got a list of 0"):
        CascadeDetector(model).detect([])
    with pytest.raises(ValueError, match=r"got \(2, 50, 50, 3\); a stack of images\?"):
        CascadeDetector(model).detect(np.stack([img, img]))
    det = CascadeDetector(model).detect(np.zeros((10, 10), dtype=np.uint8))
    assert len(det) == 0


def test_sizes_iou_and_channel_order_are_checked_when_the_detector_is_made():
    """A size given as a string was unpacked into its characters (``"30"`` became 3x0), a
    fraction of a pixel cut off and an infinite one raised OverflowError; a non-number IoU
    raised a bare comparison TypeError; a wrong channel order passed until a colour image."""
    model = random_cascade(seed=0)
    for bad in ("30", "30x30", b"30", (30.5, 30), (float("inf"), 30), (True, 30)):
        with pytest.raises(ValueError, match=r"min_size: expected \(width, height\) or an int, "
                                             "in whole pixels"):
            CascadeDetector(model, min_size=bad)
    assert CascadeDetector(model, min_size=(30.0, np.int64(40)), max_size=np.int32(80)
                           ).min_size == (30, 40)
    for bad in ("0.5", None, True):
        with pytest.raises(ValueError, match=r"nms_iou: expected a value in \[0, 1\]"):
            CascadeDetector(model, grouping="nms", nms_iou=bad)
    assert CascadeDetector(model, nms_iou=np.float32(0.5)).nms_iou == 0.5
    with pytest.raises(ValueError, match="channel_order: expected 'bgr' or 'rgb', got 'RGB'"):
        CascadeDetector(model, channel_order="RGB")


def test_nms_grouping_and_functional_api(astronaut_gray, tmp_path):
    p = _shipped("haarcascade_frontalface_default.xml")
    d = detect(astronaut_gray, p, scale_factor=1.2, min_neighbors=3,
                          grouping="nms", nms_iou=0.3)
    ref = cv2.CascadeClassifier(str(p)).detectMultiScale(astronaut_gray, 1.2, 3)
    assert len(d) >= 1
    assert _matched_fraction(np.asarray(ref), d.boxes, 0.5) == 1.0


# ------------------------------------------------------------------------------------------------
# Real data from ../shared
# ------------------------------------------------------------------------------------------------


CMU_IMAGES = ["newtest/addams-family.png", "test/baseball.png", "test/kaari1.png",
              "test/mom-baby.png", "test/ds9.png", "newtest/audrey1.png"]


def _cmu(shared_dir):
    out = []
    for rel in CMU_IMAGES:
        f = shared_dir / "data" / "cmu-mit" / rel
        if f.is_file():
            out.append(cv2.imread(str(f), cv2.IMREAD_GRAYSCALE))
    if not out:
        files = sorted((shared_dir / "data" / "cmu-mit" / "test").glob("*.png"))[:4]
        out = [cv2.imread(str(f), cv2.IMREAD_GRAYSCALE) for f in files]
    return [im for im in out if im is not None]


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["haarcascade_frontalface_default.xml",
                                  "haarcascade_frontalface_alt.xml",
                                  "haarcascade_frontalface_alt2.xml", "lbp"])
@pytest.mark.slow
def test_cmu_mit_agreement(shared_dir, name, lbp_face):
    p = lbp_face if name == "lbp" else _shipped(name)
    if not HAS_CC:
        pytest.skip("cv2 lacks CascadeClassifier")
    model = read_opencv_xml(p)
    cc = cv2.CascadeClassifier(str(p))
    n_ref = 0
    for img in _cmu(shared_dir):
        for sf, mn in ((1.1, 3), (1.2, 0)):
            ours, ref = _compare(model, cc, img, scale_factor=sf, min_neighbors=mn,
                                 min_size=(model.width, model.height))
            n_ref += len(ref)
            assert _matched_fraction(ref, ours.boxes) >= 0.99
            assert _matched_fraction(ours.boxes, ref) >= 0.99
            assert _ms(ours.boxes) == _ms(ref)
    assert n_ref > 0


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["cbcl_haar.xml", "cbcl_lbp.xml"])
def test_traincascade_outputs_load_and_match(shared_dir, name):
    if not HAS_CC:
        pytest.skip("cv2 lacks CascadeClassifier")
    p = shared_dir / "data" / "traincascade-anchor" / name
    model = read_opencv_xml(p)
    assert model.window_shape == (19, 19)
    assert model.n_stages == (13 if "haar" in name else 12)
    cc = cv2.CascadeClassifier(str(p))
    for img in _cmu(shared_dir)[:3]:
        for mn in (0, 3):
            ours, ref = _compare(model, cc, img, scale_factor=1.1, min_neighbors=mn)
            assert _ms(ours.boxes) == _ms(ref)


def test_detect_images_batch(tmp_path, astronaut_gray):
    import pickle

    from vjboost.cascade import detect_images

    model = random_cascade("LBP", seed=2)
    cv2.imwrite(str(tmp_path / "a.png"), astronaut_gray[:200, :200])
    (tmp_path / "b.png").write_bytes(b"broken")
    paths = [tmp_path / "a.png", tmp_path / "b.png"]
    res = detect_images(pickle.loads(pickle.dumps(model)), paths, scale_factor=1.2,
                        min_neighbors=1)
    assert res[0][1] is not None and res[0][2] == ""
    det = CascadeDetector(model, scale_factor=1.2, min_neighbors=1)
    ref = det.detect(astronaut_gray[:200, :200])
    np.testing.assert_array_equal(res[0][1].boxes, ref.boxes)
    assert res[1][1] is None and "b.png" in res[1][2]


def test_scale_batches_give_same_windows(astronaut_gray, monkeypatch):
    import vjboost.cascade.scan as S

    model = random_cascade("HAAR", max_nodes=2, tilted_fraction=0.5, seed=6)
    det = CascadeDetector(model, scale_factor=1.1, min_neighbors=0)
    monkeypatch.setattr(S, "BATCH_BYTES", 1 << 30)  # every level in one batch
    whole = det.detect(astronaut_gray)
    monkeypatch.setattr(S, "BATCH_BYTES", 400_000)  # several kernel calls per image
    parts = det.detect(astronaut_gray)
    assert len(whole) > 100
    assert _ms(whole.boxes) == _ms(parts.boxes)


@pytest.mark.parametrize("batch", [None, 400_000, "most", 1 << 30])
@pytest.mark.parametrize("spec", ["vjboost:frontalface_haar", "vjboost:frontalface"])
def test_batches_on_threads_give_same_windows(astronaut_gray, monkeypatch, batch, spec):
    # with two threads, batches run side by side (or, when one holds more than a thread's
    # share of the planes, split between the threads): the windows and scores of one thread
    import vjboost.cascade.scan as S
    from vjboost.cascade.model_io import load_model

    model = load_model(spec)
    det = CascadeDetector(model, scale_factor=1.1, threads=1)
    if batch == "most":  # a first batch with most of the planes: it splits its rows
        n_planes = det._runner.compiled.program.channels.n_planes
        pyr = det.pyramid(astronaut_gray.shape[::-1])
        batch = int(0.7 * 4 * n_planes * sum((lv.width + 1) * (lv.height + 1)
                                             for lv in pyr.levels))
        monkeypatch.setattr(S, "BATCH_BYTES", batch)
        area = [sum(lv.width * lv.height for lv in b.levels) for b in pyr.batches(n_planes)]
        assert len(area) > 1 and 2 * area[0] > sum(area)
    elif batch is not None:
        monkeypatch.setattr(S, "BATCH_BYTES", batch)
    got = [CascadeDetector(model, scale_factor=1.1, threads=t).raw_windows(astronaut_gray)
           for t in (1, 2)]
    assert len(got[0][0]) > 20
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])


def test_raw_window_positions(astronaut_gray):
    model = random_cascade("LBP", seed=1)
    det = CascadeDetector(model, scale_factor=1.15, min_neighbors=0)
    img = astronaut_gray[:150, :170]
    boxes, scores, pos = det.raw_windows(img, return_positions=True)
    scales = opencv_scales((model.width, model.height), (170, 150), 1.15)
    assert len(boxes) > 20 and len(pos) == len(boxes) == len(scores)
    s = np.array(scales, dtype=np.float32)[pos[:, 0]]
    np.testing.assert_array_equal(boxes[:, 0], np.rint(pos[:, 1].astype(np.float32) * s))
    np.testing.assert_array_equal(boxes[:, 1], np.rint(pos[:, 2].astype(np.float32) * s))
    np.testing.assert_array_equal(boxes[:, 2], np.rint(np.float32(model.width) * s))
