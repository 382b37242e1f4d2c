"""Detection matching and metrics against hand-computed cases and brute-force references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjboost.eval import evaluate_detections, iou_matrix, match_detections

box = st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(1, 30), st.integers(1, 30))


def _iou_pair(a, b):
    # pixel-set definition on a grid: independent of the closed-form formula
    ma = np.zeros((100, 100), bool)
    mb = np.zeros((100, 100), bool)
    ma[a[1] : a[1] + a[3], a[0] : a[0] + a[2]] = True
    mb[b[1] : b[1] + b[3], b[0] : b[0] + b[2]] = True
    return (ma & mb).sum() / (ma | mb).sum()


@given(st.lists(box, min_size=1, max_size=4), st.lists(box, min_size=1, max_size=4))
def test_iou_matches_pixel_count(a, b):
    got = iou_matrix(a, b)
    want = np.array([[_iou_pair(x, y) for y in b] for x in a])
    np.testing.assert_allclose(got, want)


def test_hand_cases_duplicates_ties_border():
    gt = np.array([[0, 0, 10, 10], [20, 0, 10, 10]])
    det = np.array(
        [
            [0, 0, 10, 10],  # exact match of gt 0
            [1, 0, 10, 10],  # duplicate of gt 0 (IoU 9/11): a false positive
            [20, 0, 10, 10],  # gt 1, same score as the first: ties keep input order
            [60, 60, 5, 5],  # nothing there
        ]
    )
    scores = np.array([0.9, 0.95, 0.9, 0.1])
    matched, order = match_detections(det, scores, gt, iou_threshold=0.5)
    np.testing.assert_array_equal(order, [1, 0, 2, 3])
    # the higher-scored duplicate takes gt 0 first; the exact box becomes the false positive
    np.testing.assert_array_equal(matched, [-1, 0, 1, -1])
    # a box cut by the image border still matches when the overlap is enough
    m2, _ = match_detections([[0, 0, 6, 10]], [1.0], [[0, 0, 10, 10]], iou_threshold=0.5)
    assert m2[0] == 0
    m3, _ = match_detections([[0, 0, 4, 10]], [1.0], [[0, 0, 10, 10]], iou_threshold=0.5)
    assert m3[0] == -1


def test_evaluate_counts_curve_and_ap():
    gt = {"a": np.array([[0, 0, 10, 10], [20, 0, 10, 10]]), "b": np.array([[0, 0, 8, 8]])}
    dets = {
        "a": (
            np.array([[0, 0, 10, 10], [40, 40, 5, 5], [20, 0, 10, 10]]),
            np.array([3.0, 2.0, 1.0]),
        ),
        "b": (np.zeros((0, 4)), np.zeros(0)),
        "empty_scene": (np.array([[5, 5, 5, 5]]), np.array([2.5])),
    }
    ev = evaluate_detections(dets, gt)
    assert (ev.n_ground_truth, ev.n_detections, ev.true_positives, ev.false_positives) == (
        3,
        4,
        2,
        2,
    )
    assert ev.detection_rate == pytest.approx(2 / 3)
    assert ev.precision == pytest.approx(0.5)
    # scores 3 (TP), 2.5 (FP), 2 (FP), 1 (TP)
    np.testing.assert_array_equal(ev.thresholds, [3.0, 2.5, 2.0, 1.0])
    np.testing.assert_array_equal(ev.curve_false_positives, [0, 1, 2, 2])
    np.testing.assert_allclose(ev.curve_detection_rate, [1 / 3, 1 / 3, 1 / 3, 2 / 3])
    # AP: recall steps 1/3 at precision 1, then 1/3 more at precision 2/4
    assert ev.average_precision == pytest.approx(1 / 3 * 1 + 1 / 3 * 0.5)
    assert ev.detection_rate_at(0) == pytest.approx(1 / 3)
    assert ev.detection_rate_at(2) == pytest.approx(2 / 3)


@given(
    st.lists(
        st.tuples(st.lists(box, max_size=4), st.lists(box, max_size=3)), min_size=1, max_size=5
    ),
    st.integers(0, 2**31 - 1),
)
def test_curve_monotone_and_consistent(images, seed):
    rng = np.random.default_rng(seed)
    dets, gts = {}, {}
    for k, (d, g) in enumerate(images):
        dets[str(k)] = (np.array(d).reshape(-1, 4), rng.integers(0, 3, len(d)).astype(float))
        gts[str(k)] = np.array(g).reshape(-1, 4)
    ev = evaluate_detections(dets, gts, iou_threshold=0.3)
    assert np.all(np.diff(ev.curve_false_positives) >= 0)
    assert np.all(np.diff(ev.curve_detection_rate) >= -1e-12)
    assert ev.true_positives <= min(ev.n_detections, ev.n_ground_truth)
    assert 0.0 <= ev.average_precision <= 1.0
    if ev.n_detections:
        assert ev.curve_false_positives[-1] == ev.false_positives


def test_bad_input():
    with pytest.raises(ValueError, match="iou_threshold"):
        match_detections([[0, 0, 1, 1]], [1.0], [[0, 0, 1, 1]], iou_threshold=0)
    with pytest.raises(ValueError, match="scores: has 2 entries for 1"):
        match_detections([[0, 0, 1, 1]], [1.0, 2.0], [[0, 0, 1, 1]])
    with pytest.raises(ValueError, match=r"detections: expected boxes of shape \(n, 4\)"):
        match_detections([[0, 0, 1]], [1.0], [[0, 0, 1, 1]])
    with pytest.raises(ValueError, match="positive width"):
        iou_matrix([[0, 0, 0, 1]], [[0, 0, 1, 1]])
    with pytest.raises(ValueError, match="annotated image"):
        evaluate_detections({}, {"a": np.array([[0, 0, 1, 1]])})


def test_sweep_min_neighbors_matches_grouping_by_hand():
    from vjboost.boxes import group_rectangles
    from vjboost.eval.sweep import sweep_min_neighbors

    # a face covered by 4 raw windows, a spurious cluster of 2 and a lone false window
    face = [[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [11, 11, 21, 21]]
    spurious = [[60, 60, 20, 20], [61, 60, 20, 20]]
    lone = [[100, 5, 20, 20]]
    boxes = np.array(face + spurious + lone)
    raw = {"img": (boxes, np.linspace(1, 2, len(boxes))), "empty": (np.zeros((0, 4)), np.zeros(0))}
    gt = {"img": np.array([[10, 10, 20, 20]])}
    curve = sweep_min_neighbors(raw, gt, thresholds=[0, 1, 2, 3, 4])
    np.testing.assert_array_equal(curve.min_neighbors, [0, 1, 2, 3, 4])
    # t=0: raw windows (4 TP candidates, 1 matches), t=1: clusters with > 1 member
    np.testing.assert_array_equal(curve.false_positives, [6, 1, 0, 0, 0])
    np.testing.assert_allclose(curve.detection_rate, [1, 1, 1, 1, 0])
    grouped, counts, _ = group_rectangles(boxes, 1)
    assert curve.at(1).n_detections == len(grouped) and sorted(counts) == [2, 4]
    assert curve.detection_rate_at(0) == 1.0
    with pytest.raises(ValueError, match="not on the curve"):
        curve.at(7)


@given(st.lists(box, min_size=1, max_size=4), st.lists(box, min_size=1, max_size=4))
def test_coverage_matches_pixel_count(a, b):
    from vjboost.boxes import coverage_matrix

    def cov(x, y):
        mx = np.zeros((100, 100), bool)
        my = np.zeros((100, 100), bool)
        mx[x[1] : x[1] + x[3], x[0] : x[0] + x[2]] = True
        my[y[1] : y[1] + y[3], y[0] : y[0] + y[2]] = True
        return (mx & my).sum() / mx.sum()

    np.testing.assert_allclose(coverage_matrix(a, b), [[cov(x, y) for y in b] for x in a])


def test_ignore_regions_count_neither_way():
    from vjboost.eval import IGNORED

    gt = np.array([[0, 0, 10, 10]])
    det = np.array([[0, 0, 10, 10], [50, 50, 10, 10], [52, 52, 10, 10], [90, 90, 5, 5]])
    scores = np.array([4.0, 3.0, 2.0, 1.0])
    crowd = np.array([[45, 45, 20, 20]])  # covers det 1 fully, det 2 by 0.81
    matched, _ = match_detections(det, scores, gt, iou_threshold=0.5, ignore=crowd)
    assert matched.tolist() == [0, IGNORED, IGNORED, -1]
    ev = evaluate_detections({"a": (det, scores)}, {"a": gt}, iou_threshold=0.5,
                             ignore={"a": crowd})
    assert (ev.n_detections, ev.true_positives, ev.false_positives) == (2, 1, 1)
    # a matched detection stays a true positive even inside an ignore region
    m2, _ = match_detections(det[:1], scores[:1], gt, ignore=[[0, 0, 10, 10]])
    assert m2.tolist() == [0]
