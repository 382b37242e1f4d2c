"""The UIUC car benchmark: location files, the ellipse protocol, equal-error recall, vjeval."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjboost.eval.uiuc import (
    box_locations,
    cascade_detections,
    eer_recall,
    ellipse_distance,
    evaluate_uiuc,
    match_locations,
)
from vjboost.io import AnnotationError
from vjboost.io.uiuc import read_uiuc_locations, uiuc_image_number, write_uiuc_locations

# ------------------------------------------------------------------------------------------------
# Location files
# ------------------------------------------------------------------------------------------------


def test_read_locations_formats(tmp_path):
    p = tmp_path / "trueLocations.txt"
    p.write_text("0: (48,26)\n1: (61,20) (63,140)\n\n6: (56,-10) (60,92)\n7:\n")
    locs = read_uiuc_locations(p)
    assert sorted(locs) == [0, 1, 6, 7]
    assert locs[6].tolist() == [[56, -10], [60, 92]]
    assert locs[7].shape == (0, 2)
    p.write_text("0: (48,26,100)\n1: (1,2,50) (3,4,120)\n")
    assert read_uiuc_locations(p)[1].tolist() == [[1, 2, 50], [3, 4, 120]]


@pytest.mark.parametrize("text, match", [
    ("0: (48,26)\nx: (1,2)\n", r"trueLocations.txt:2: expected 'N: \(i,j\)"),
    ("0: (48,26)\n0: (1,2)\n", "image 0 is listed twice"),
    ("0: (48,26)\n1: (1,2,3)\n", "has 3 values"),
    ("0: (4.5,26)\n", "expected integers"),
    ("0: (1)\n", r"expected \(i,j\) or \(i,j,w\)"),
    ("0: (1,2) junk\n", "unexpected text 'junk'"),
    ("0: (1,2,0)\n", "width must be positive"),
    ("0: (56,-10)\n1: (-48,-26)\n", r"trueLocations.txt:2: \(-48,-26\) puts the 100x40 window "
     "entirely outside the image"),
    ("0: (1,-50,50)\n", r"\(1,-50,50\) puts the 50x20 window entirely outside"),
    ("\n\n", "lists no image"),
])
def test_read_locations_errors_name_file_and_line(tmp_path, text, match):
    p = tmp_path / "trueLocations.txt"
    p.write_text(text)
    with pytest.raises(AnnotationError, match=match):
        read_uiuc_locations(p)


def test_read_locations_missing_file(tmp_path):
    with pytest.raises(AnnotationError, match="no such location file"):
        read_uiuc_locations(tmp_path / "nope.txt")


@given(st.dictionaries(st.integers(0, 300), st.lists(
    # corners may lie a little outside the image, but the window overlaps it (or it is refused)
    st.tuples(st.integers(-10, 500), st.integers(-10, 500), st.integers(30, 400)), max_size=4),
    min_size=1))
def test_write_read_round_trip(tmp_path_factory, locs):
    p = tmp_path_factory.mktemp("uiuc") / "found.txt"
    # a file is single-scale or multi-scale throughout
    for width in (2, 3):
        data = {k: np.asarray(v, dtype=np.int64).reshape(-1, 3)[:, :width] for k, v in
                locs.items()}
        write_uiuc_locations(p, data)
        back = read_uiuc_locations(p)
        assert sorted(back) == sorted(data)
        for k in data:
            np.testing.assert_array_equal(back[k].reshape(-1, width), data[k])


def test_image_number():
    assert uiuc_image_number("TestImages/test-107.pgm") == 107
    assert uiuc_image_number("a/b/scene_3_v2.png") == 2
    assert uiuc_image_number("street.jpg") is None


# ------------------------------------------------------------------------------------------------
# The ellipse criterion and the matching (hand-made cases)
# ------------------------------------------------------------------------------------------------


def test_ellipse_semi_axes_are_a_quarter_of_height_and_width_boundary_included():
    true = [[48, 26]]
    inside = [[58, 26], [38, 26], [48, 51], [48, 1], [56, 41]]   # (8/10)^2 + (15/25)^2 = 1
    outside = [[59, 26], [48, 52], [57, 41], [48 + 7.1, 26 + 18]]
    assert (ellipse_distance(inside, true) <= 1).all()
    assert (ellipse_distance(outside, true) > 1).all()
    m, _ = match_locations(inside, np.arange(5.0), true)
    assert (m >= 0).sum() == 1          # one detection per car, the others are false


def test_ellipsoid_of_the_multiscale_protocol_scales_with_the_true_width():
    true = [[100, 100, 200]]            # a 200x80 car: semi-axes 20 rows, 50 columns, 50 width
    d = ellipse_distance([[120, 100, 200], [100, 150, 200], [100, 100, 250],
                          [100, 100, 251], [121, 100, 200]], true)
    np.testing.assert_allclose(d.ravel(), [1, 1, 1, 1.0404, 1.1025])
    with pytest.raises(ValueError, match="both as"):
        ellipse_distance([[1, 2]], true)


def test_matching_is_greedy_by_score_and_prefers_the_nearest_free_car():
    true = [[50, 0], [50, 40]]          # two cars whose ellipses overlap around column 20
    found = [[50, 21], [50, 19], [50, 45]]
    m, order = match_locations(found, [3.0, 2.0, 1.0], true)
    # the best detection takes the nearer car (column 40), the second the other one, the third
    # lies only in car 1's ellipse, taken already: a false positive
    assert order.tolist() == [0, 1, 2]
    assert m.tolist() == [1, 0, -1]
    m, _ = match_locations(found, [1.0, 2.0, 3.0], true)
    assert m.tolist() == [-1, 0, 1]


def test_box_locations_keep_the_centre():
    boxes = [[26, 48, 100, 40], [30, 50, 110, 44], [0, 0, 50, 20]]
    np.testing.assert_allclose(box_locations(boxes), [[48, 26], [52, 35], [-10, -25]])
    np.testing.assert_allclose(box_locations(boxes, multiscale=True),
                               [[48, 26, 100], [50, 30, 110], [0, 0, 50]])


# ------------------------------------------------------------------------------------------------
# Recall at the equal-error rate: against brute force
# ------------------------------------------------------------------------------------------------


def _brute_eer(correct, scores, n):
    """Recall where the precision and recall curves meet, by walking every cut-off."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    c = np.r_[np.asarray(correct, dtype=bool)[order], np.zeros(n, dtype=bool)]  # pad: misses
    best = 0.0
    for k in range(1, len(c) + 1):
        tp = c[:k].sum()
        if np.isclose(tp / k, tp / n):
            best = max(best, tp / n)
    return best


@given(st.lists(st.tuples(st.booleans(), st.floats(-5, 5)), min_size=1, max_size=40,
                unique_by=lambda t: t[1]), st.integers(1, 30))
def test_eer_recall_matches_brute_force_without_ties(dets, n):
    correct = [c for c, _ in dets]
    n = max(n, sum(correct))
    scores = [s for _, s in dets]
    assert eer_recall(correct, scores, n) == pytest.approx(_brute_eer(correct, scores, n))


def test_eer_recall_interpolates_ties_as_the_mean_over_orders():
    rng = np.random.default_rng(3)
    for _ in range(20):
        k = int(rng.integers(2, 7))
        correct = rng.random(k) < 0.5
        scores = rng.integers(0, 3, k).astype(float)
        n = int(rng.integers(max(correct.sum(), 1), k + 2))
        # the reference: every order of the tied detections is equally likely
        groups = [np.flatnonzero(scores == v) for v in np.unique(scores)[::-1]]
        vals = []
        for perms in itertools.product(*[itertools.permutations(g) for g in groups]):
            idx = np.concatenate([np.asarray(p, dtype=int) for p in perms])
            vals.append(correct[idx][:n].sum() / n)
        assert eer_recall(correct, scores, n) == pytest.approx(np.mean(vals))


def test_evaluate_counts_and_curve():
    truth = {0: [[48, 26]], 1: [[61, 20], [63, 140]], 2: np.zeros((0, 2))}
    dets = {0: ([[50, 30], [10, 10]], [0.9, 0.8]),
            1: ([[60, 22], [64, 150], [61, 21]], [0.7, 0.6, 0.95]),
            2: ([[5, 5]], [0.85])}
    ev = evaluate_uiuc(dets, truth)
    assert (ev.n_objects, ev.n_detections, ev.true_positives, ev.false_positives) == (3, 6, 3, 3)
    assert ev.recall == 1 and ev.precision == 0.5
    assert ev.f_measure == pytest.approx(2 / 3)
    # by score: .95 T, .9 T, .85 F | .8 F, .7 F (car 1 of image 1 is taken), .6 T
    assert ev.curve_true_positives.tolist() == [1, 2, 2, 2, 2, 3]
    assert ev.eer_recall == pytest.approx(2 / 3)
    assert ev.eer_threshold == 0.85
    assert ev.recall_at(0) == pytest.approx(2 / 3) and ev.recall_at(3) == 1
    assert ev.at_threshold(0.9)["precision"] == 1.0
    assert ev.per_image[1] == (2, 1, 2)
    with pytest.raises(ValueError, match="not run"):
        evaluate_uiuc({0: dets[0]}, truth)


def test_cascade_detections_confidence_orders_by_group_size_then_score():
    b = [[0, 0, 50, 20], [1, 0, 50, 20], [100, 0, 50, 20], [101, 0, 50, 20],
         [100, 1, 50, 20], [300, 0, 50, 20]]
    s = [5.0, 4.0, -1.0, 0.0, -2.0, 9.0]
    g, c = cascade_detections(b, s, min_neighbors=1)
    assert g[:, 0].tolist() == [0, 100]            # the lone window is dropped
    assert c[1] > c[0] > 2                           # 3 windows beat 2, however they score
    g, c = cascade_detections(b, s, min_neighbors=0, confidence="score")
    assert len(g) == 6 and c.tolist() == s


# ------------------------------------------------------------------------------------------------
# The dataset's own description
# ------------------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_true_locations_file_as_described(shared_dir):
    data = shared_dir / "data" / "uiuc-cars"
    truth = read_uiuc_locations(data / "trueLocations.txt")
    assert sorted(truth) == list(range(170))          # 170 test images ...
    assert sum(len(v) for v in truth.values()) == 200  # ... with 200 cars
    assert truth[1].tolist() == [[61, 20], [63, 140]]
    for n in (0, 57, 169):
        assert (data / "TestImages" / f"test-{n}.pgm").is_file()
    # the truth as found locations: every car found, nothing else
    ev = evaluate_uiuc({k: (v, np.ones(len(v))) for k, v in truth.items()}, truth)
    assert (ev.recall, ev.precision, ev.eer_recall) == (1.0, 1.0, 1.0)
    # windows 25 % of the height / width off (in each direction) still count; one more pixel not
    for shift, ok in (((10, 0), 1.0), ((-10, 0), 1.0), ((0, 25), 1.0), ((0, -25), 1.0),
                      ((11, 0), 0.0), ((0, 26), 0.0)):
        dets = {k: (v + np.array(shift), np.ones(len(v))) for k, v in truth.items()}
        ev = evaluate_uiuc(dets, truth)
        # cars side by side may catch a neighbour's shifted window: allow a few
        assert abs(ev.recall - ok) <= 0.03, (shift, ev.recall)
    # two detections on every car: half of them are false (one detection per car)
    dets = {k: (np.concatenate([v, v + 1]), np.ones(2 * len(v))) for k, v in truth.items()}
    ev = evaluate_uiuc(dets, truth)
    assert (ev.true_positives, ev.false_positives) == (200, 200)


# ------------------------------------------------------------------------------------------------
# vjeval --protocol uiuc
# ------------------------------------------------------------------------------------------------


def test_vjeval_uiuc_protocol_wiring(tmp_path):
    import json

    import cv2
    from click.testing import CliRunner

    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.opencv_xml import write_opencv_xml
    from vjboost.cascade.synthetic import random_cascade
    from vjboost.cli.evaluate import main
    from vjboost.io.uiuc import read_uiuc_locations

    model = random_cascade("HAAR", window=(50, 20), pass_rate=0.7, seed=4)  # (width, height)
    write_opencv_xml(model, tmp_path / "cars.xml")
    rng = np.random.default_rng(0)
    imgs = tmp_path / "TestImages"
    imgs.mkdir()
    for n in range(3):
        img = cv2.GaussianBlur((rng.random((90, 160)) * 255).astype(np.uint8), (5, 5), 2)
        cv2.imwrite(str(imgs / f"test-{n}.pgm"), img)
    (tmp_path / "trueLocations.txt").write_text("0: (20,30)\n1: (5,5) (40,60)\n2:\n")
    res = CliRunner().invoke(main, [str(tmp_path / "trueLocations.txt"), "--protocol", "uiuc",
                                    "--images", str(imgs), "-m", str(tmp_path / "cars.xml"),
                                    "-o", str(tmp_path / "out"), "--min-neighbors", "1"])
    assert res.exit_code == 0, res.output
    assert "EER recall" in res.output and "3 cars" in res.output
    doc = json.loads((tmp_path / "out" / "eval.json").read_text())
    row = doc["models"][0]
    assert doc["protocol"] == "uiuc" and row["n_objects"] == 3 and row["n_images"] == 3
    bad = CliRunner().invoke(main, [str(tmp_path / "trueLocations.txt"), "--protocol", "uiuc",
                                    "--images", str(imgs), "-m", str(tmp_path / "cars.xml"),
                                    "--min-score", "1"])
    assert bad.exit_code == 2 and "--min-score" in bad.output
    # --score ranks the detector's own groups at --min-neighbors by that score
    res = CliRunner().invoke(main, [str(tmp_path / "trueLocations.txt"), "--protocol", "uiuc",
                                    "--images", str(imgs), "-m", str(tmp_path / "cars.xml"),
                                    "-o", str(tmp_path / "out_margin"), "--min-neighbors", "1",
                                    "--score", "margin"])
    assert res.exit_code == 0, res.output
    assert "over the margin score of the groups at min_neighbors 1" in res.output
    by_margin = json.loads((tmp_path / "out_margin" / "eval.json").read_text())["models"][0]
    grouped = CascadeDetector(model, scale_factor=1.1, min_neighbors=1, score="margin",
                              min_score=None)
    ranked = {}
    for n in range(3):
        d = grouped.detect(cv2.imread(str(imgs / f"test-{n}.pgm"), 0))
        ranked[n] = (box_locations(d.boxes), d.scores)
    ev_m = evaluate_uiuc(ranked, read_uiuc_locations(tmp_path / "trueLocations.txt"))
    assert by_margin["eer_recall"] == pytest.approx(ev_m.eer_recall)
    assert by_margin["curve"] == ev_m.as_dict()["curve"] and by_margin["n_detections"] > 0
    assert by_margin["at_min_neighbors"]["true_positives"] == ev_m.true_positives
    assert (tmp_path / "out" / "curve.png").stat().st_size > 1000
    # the same figures from the detector's raw windows, grouped and scored here
    found = read_uiuc_locations(tmp_path / "out" / "foundLocations-cars.txt")
    det = CascadeDetector(model, scale_factor=1.1, min_neighbors=0, grouping="none")
    dets = {}
    for n in range(3):
        b, s = det.raw_windows(cv2.imread(str(imgs / f"test-{n}.pgm"), 0))
        g, c = cascade_detections(b, s, min_neighbors=1)
        dets[n] = (box_locations(g), c)
        np.testing.assert_array_equal(found.get(n, np.zeros((0, 2))),
                                      np.rint(dets[n][0]).astype(int).reshape(-1, 2))
    ev = evaluate_uiuc(dets, read_uiuc_locations(tmp_path / "trueLocations.txt"))
    assert row["eer_recall"] == pytest.approx(ev.eer_recall)
    assert row["n_detections"] == ev.n_detections
    # the table's operating point: groups of more than --min-neighbors windows
    assert row["at_min_neighbors"]["false_positives"] == ev.at_threshold(2)["false_positives"]
    bad = CliRunner().invoke(main, [str(tmp_path / "trueLocations.txt"), "--protocol", "uiuc",
                                    "-m", str(tmp_path / "cars.xml")])
    assert bad.exit_code != 0 and "needs the test images" in bad.output


def test_shipped_lbp_car_cascade_resolves_and_cv2_detects_identically():
    import cv2
    from skimage import data

    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.model_io import load_model
    from vjboost.cascade.shipped import resolve_model

    path = resolve_model("vjboost:car_side_lbp")
    model = load_model(path)
    assert model.window_shape == (20, 50) and model.opencv_type == "LBP"
    xml = path.replace(".json", ".xml")
    # the XML numbers the features of its trees in its own order: the same cascade, not the same
    # object (stage thresholds, tree counts and every window's score agree)
    from_xml = load_model(xml)
    assert from_xml.window_shape == model.window_shape and from_xml.n_stages == model.n_stages
    for a, b in zip(model.stages, from_xml.stages, strict=True):
        assert np.float32(a.threshold) == np.float32(b.threshold) and len(a.trees) == len(b.trees)
    street = cv2.resize(data.camera(), (320, 240), interpolation=cv2.INTER_AREA)
    for n in (4, model.n_stages):
        raw = [CascadeDetector(m, min_neighbors=0, n_stages=n).raw_windows(street)
               for m in (model, from_xml)]
        np.testing.assert_array_equal(raw[0][0], raw[1][0])
        np.testing.assert_allclose(raw[0][1], raw[1][1], rtol=1e-6)
    assert len(CascadeDetector(model, min_neighbors=0, n_stages=4).raw_windows(street)[0]) > 0
    if not hasattr(cv2, "CascadeClassifier"):
        pytest.skip("this OpenCV build has no CascadeClassifier")
    cc = cv2.CascadeClassifier(xml)
    img = cv2.resize(data.camera(), (320, 240), interpolation=cv2.INTER_AREA)
    for sf, mn in ((1.1, 0), (1.1, 2), (1.25, 1)):
        ours = CascadeDetector(model, scale_factor=sf, min_neighbors=mn).detect(img)
        ref = np.asarray(cc.detectMultiScale(img, scaleFactor=sf, minNeighbors=mn)).reshape(-1, 4)
        assert sorted(map(tuple, ours.boxes.tolist())) == sorted(map(tuple, ref.tolist()))


def test_shipped_car_cascade_computes_only_the_planes_it_reads_and_equals_brute_force():
    """``vjboost:car_side`` (MB-LBP and gradient channels): its compiled features read the grey
    plane, the gradient magnitude (their normaliser) and the orientation bins its nodes use,
    nothing else (a subset's selection: ``test_features_program``); its detector accepts exactly
    the windows that the cascade accepts when each window of every level is cut out and run
    alone."""
    import cv2
    from skimage import data

    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.model_io import load_model
    from vjboost.cascade.runner import CascadeRunner
    from vjboost.cascade.scan import opencv_scales

    model = load_model("vjboost:car_side")
    assert model.window_shape == (20, 50) and model.opencv_type is None
    assert [f.name for f in model.family.families] == ["mblbp", "channels"]
    runner = CascadeRunner(model)
    keys = runner.compiled.program.channels.keys
    read = {model.family.describe(int(f)).get("channel") for f in model.feature_ids} - {None}
    assert set(keys) == {"gray", "gradmag"} | read and len(keys) == len(set(keys))

    img = cv2.resize(data.camera(), (150, 60), interpolation=cv2.INTER_AREA)
    for n in (4, model.n_stages):  # the first stages accept hundreds of windows, all none here
        cut_model = model.truncated(n)
        # windows inside the image, as the brute force cuts them (the model declares a border)
        det = CascadeDetector(cut_model, scale_factor=1.25, min_neighbors=0, mode="clean",
                              step=1, skip_after_stage0=False, border=None)
        boxes, _ = det.raw_windows(img)
        ref = []
        for s in opencv_scales((50, 20), (150, 60), 1.25):
            sw, sh = (int(np.rint(np.float32(v) / s)) for v in (150, 60))
            level = img if (sw, sh) == (150, 60) else cv2.resize(
                img, (sw, sh), interpolation=cv2.INTER_LINEAR_EXACT)
            cut = np.lib.stride_tricks.sliding_window_view(level, (20, 50))
            ok = CascadeRunner(cut_model).accepts(cut.reshape(-1, 20, 50))
            ys, xs = np.divmod(np.flatnonzero(ok), cut.shape[1])
            ref += [(int(np.rint(np.float32(x) * s)), int(np.rint(np.float32(y) * s)),
                     int(np.rint(np.float32(50) * s)), int(np.rint(np.float32(20) * s)))
                    for x, y in zip(xs, ys, strict=True)]
        assert sorted(map(tuple, boxes.tolist())) == sorted(ref)
        if n == 4:
            assert len(ref) > 100


def test_bench_cars_recall_by_scale_counts_each_bin_alone():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "bench_cars.py"
    spec = importlib.util.spec_from_file_location("bench_cars", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # cars of 60, 120 and 250 px (bins 0.5-0.7, 1.0-1.4 and the last, closed one), each
    # detected exactly; the 120-px car's detection scores under the threshold
    truth = {"a": np.array([[10, 10, 60], [100, 200, 120], [300, 10, 250]])}
    dets = {"a": (truth["a"].astype(np.float64), np.array([5.0, 1.0, 3.0]))}
    got = bench.recall_by_scale(dets, truth, 2.0)
    assert got == {"0.5-0.7": "1/1", "0.7-1.0": "0/0", "1.0-1.4": "0/1", "1.4-2.0": "0/0",
                   "2.0-2.5": "1/1"}
    # every detection kept: the 120-px car is found too
    assert bench.recall_by_scale(dets, truth, 0.0)["1.0-1.4"] == "1/1"


def test_shipped_car_cascade_runs_its_declared_operating_point():
    """``vjboost:car_side`` left unset scans with its validated border and keeps groups of at
    least two windows ranked by window count: the same detections as those settings by hand."""
    import cv2
    from skimage import data

    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.model_io import load_model

    model = load_model("vjboost:car_side")
    auto = CascadeDetector(model, n_stages=6)
    assert (auto.border, auto.border_margin, auto.min_neighbors, auto.score,
            auto.min_score) == ("reflect", 0.3, 1, "neighbors", 1.5)
    img = cv2.resize(data.camera(), (300, 120), interpolation=cv2.INTER_AREA)
    hand = CascadeDetector(model, n_stages=6, border="reflect", border_margin=0.3,
                           min_neighbors=1, score="neighbors", min_score=1.5)
    got, want = auto.detect(img), hand.detect(img)
    assert len(got) > 0
    np.testing.assert_array_equal(got.boxes, want.boxes)
    np.testing.assert_array_equal(got.scores, want.scores)
    assert (np.rint(got.scores) >= 2).all()  # window counts (the best score breaks ties)
    # raw windows asked for by hand take no default threshold (it belongs to the grouping)
    raw_det = CascadeDetector(model, n_stages=6, min_neighbors=0)
    raw = raw_det.detect(img)
    assert raw_det.min_score is None and len(raw) == raw.raw_count > len(got)
