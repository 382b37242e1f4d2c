"""Dropping detections that lie inside better ones: the kernel against a brute-force reference,
and the detector, the sweep, the benchmark and ``vjdetect`` applying what a model declares."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.boxes import WindowGroups, coverage_matrix, drop_inside, suppress_inside
from vjboost.cascade import CascadeDetector, declared_suppression, load_model
from vjboost.cascade.detector import check_suppress_inside
from vjboost.eval import sweep_min_neighbors

REPO = Path(__file__).resolve().parents[1]

boxes_and_scores = st.integers(0, 12).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(1, 40),
                       st.integers(1, 40)), min_size=n, max_size=n),
    # few distinct values, so that ties occur
    st.lists(st.sampled_from([-1.0, 0.0, 0.5, 2.0, 3.0]), min_size=n, max_size=n)))


def _reference(boxes, scores, share):
    """A box is dropped when ``share`` of its area lies inside any box scoring higher."""
    b, s = np.asarray(boxes, float).reshape(-1, 4), np.asarray(scores, float)
    keep = np.ones(len(b), bool)
    for i in range(len(b)):
        for j in range(len(b)):
            if s[j] > s[i] and coverage_matrix(b[i:i + 1], b[j:j + 1])[0, 0] >= share:
                keep[i] = False
    return keep


@settings(max_examples=120, deadline=None)
@given(bs=boxes_and_scores, share=st.sampled_from([0.3, 0.5, 0.7, 1.0]), data=st.data())
def test_matches_reference_in_any_order(bs, share, data):
    boxes, scores = bs
    want = _reference(boxes, scores, share)
    got = suppress_inside(np.asarray(boxes, float).reshape(-1, 4), scores, share)
    assert got.dtype == bool and got.tolist() == want.tolist()
    perm = np.asarray(data.draw(st.permutations(range(len(boxes)))), int)
    if len(perm):
        again = suppress_inside(np.asarray(boxes, float)[perm], np.asarray(scores)[perm], share)
        assert again.tolist() == want[perm].tolist()


def test_nested_faces_and_refusals():
    big, part, elsewhere = [0, 0, 40, 40], [10, 10, 20, 20], [50, 0, 20, 20]
    assert suppress_inside([big, part, elsewhere], [2.0, 1.0, 0.5]).tolist() == [True, False, True]
    # the part scoring higher stays, and so does the face around it (it is not inside the part)
    assert suppress_inside([big, part], [1.0, 2.0]).tolist() == [True, True]
    # a quarter inside: kept at 0.5, dropped at 0.25
    corner = [30, 30, 20, 20]
    assert suppress_inside([big, corner], [2.0, 1.0], 0.5).tolist() == [True, True]
    assert suppress_inside([big, corner], [2.0, 1.0], 0.25).tolist() == [True, False]
    assert suppress_inside(np.zeros((0, 4)), []).shape == (0,)
    for bad in (0.0, 1.5, -0.1, "half"):
        with pytest.raises(ValueError, match="coverage"):
            suppress_inside([big], [1.0], bad)
    with pytest.raises(ValueError, match="scores"):
        suppress_inside([big, part], [1.0])
    with pytest.raises(ValueError, match="finite"):
        suppress_inside([big, part], [1.0, np.nan])
    with pytest.raises(ValueError, match="boxes"):
        suppress_inside(np.zeros((2, 3)), [1.0, 2.0])


def _nested_windows():
    """Raw windows of a face (3 around (100, 100, 80, 80)), of a part of it (3 around
    (120, 120, 40, 40)) and of clutter elsewhere (2): OpenCV's grouping keeps a group of 3
    inside another of 3 (it drops one only inside a group of more than 3, or of fewer than 3
    windows itself)."""
    face = np.array([[100, 100, 80, 80], [101, 100, 80, 80], [100, 101, 80, 80]])
    part = np.array([[120, 120, 40, 40], [121, 120, 40, 40], [120, 121, 40, 40]])
    other = np.array([[300, 50, 30, 30], [301, 50, 30, 30]])
    boxes = np.vstack([face, part, other]).astype(np.int32)
    scores = np.r_[np.full(3, 3.0), np.full(3, 2.0), np.full(2, 1.0)]
    return boxes, scores


def test_detector_applies_the_declared_share_to_grouped_detections(monkeypatch):
    model = load_model("vjboost:frontalface_haar")
    assert declared_suppression(model) is None  # nothing declared: OpenCV's detections
    assert declared_suppression(load_model("vjboost:frontalface")) == 0.3
    boxes, scores = _nested_windows()
    img = np.zeros((400, 400), np.uint8)
    out = {}
    for value in (None, "model", 0.5, 0):
        det = CascadeDetector(model, min_neighbors=1, score="best", suppress_inside=value)
        monkeypatch.setattr(det, "raw_windows", lambda g: (boxes, scores))
        out[value] = det.detect(img)
    plain = out[None]
    assert len(plain) == 3  # the face, its part and the clutter, each a group
    keep = _reference(plain.boxes, plain.scores, 0.5)
    assert keep.tolist().count(False) == 1
    got = out[0.5]
    assert got.boxes.tolist() == plain.boxes[keep].tolist()
    assert got.scores.tolist() == plain.scores[keep].tolist()
    assert got.neighbors.tolist() == plain.neighbors[keep].tolist()
    assert out["model"].boxes.tolist() == out[0].boxes.tolist() == plain.boxes.tolist()
    # raw windows are raw
    det = CascadeDetector(model, min_neighbors=0, suppress_inside=0.5)
    monkeypatch.setattr(det, "raw_windows", lambda g: (boxes, scores))
    assert len(det.detect(img)) == len(boxes)
    for bad in (1.5, -0.2, True, "half"):
        with pytest.raises(ValueError, match="suppress_inside"):
            CascadeDetector(model, suppress_inside=bad)
    assert check_suppress_inside(0) is None and check_suppress_inside(1) == 1.0


def test_sweep_drops_them_as_the_detector_does():
    boxes, scores = _nested_windows()
    gt = {"a": np.array([[100, 100, 80, 80]])}
    raw = {"a": (boxes, scores)}
    plain = sweep_min_neighbors(raw, gt, thresholds=[0, 1])
    kept = sweep_min_neighbors(raw, gt, thresholds=[0, 1], suppress_inside=0.5)
    # the part of the face was a false positive at minNeighbors 1; raw windows stay
    assert plain.false_positives[1] == 2 and kept.false_positives[1] == 1
    assert kept.false_positives[0] == plain.false_positives[0]
    assert kept.detection_rate.tolist() == plain.detection_rate.tolist()


def test_benchmark_ranks_what_the_detector_returns():
    sys.path.insert(0, str(REPO / "tools"))
    import bench_peers as bp

    boxes, scores = _nested_windows()
    groups = WindowGroups(boxes, scores)
    b0, s0 = bp.ranked(groups, 1, (400, 400), "best")
    b1, s1 = bp.ranked(groups, 1, (400, 400), "best", suppress=0.5)
    keep = _reference(b0, s0, 0.5)
    assert b1.tolist() == b0[keep].tolist() and s1.tolist() == s0[keep].tolist()
    assert len(b1) == len(b0) - 1


def test_benchmark_neighbour_curve_drops_what_the_detector_drops():
    sys.path.insert(0, str(REPO / "tools"))
    import bench_peers as bp

    boxes, scores = _nested_windows()
    gt = {"a": np.array([[100.0, 100.0, 80.0, 80.0]])}
    img = np.zeros((400, 400), np.uint8)
    curves = {share: bp.cascade_curves([(boxes, scores)], [img], gt, ["a"], 1, suppress=share)
              for share in (None, 0.5)}
    fp = {share: c[0]["points"]["false_positives"] for share, c in curves.items()}
    # the part of the face (a group of 3) is dropped at minNeighbors 1 and 2 (the clutter's
    # group of 2 is a false positive at 1 only); the raw windows (minNeighbors 0) stay
    assert fp[None][:3] == [7, 2, 1] and fp[0.5][:3] == [7, 1, 0]
    assert fp[None][3:] == fp[0.5][3:]
    assert curves[0.5][0]["points"]["detection_rate"] == curves[None][0]["points"]["detection_rate"]
    # extra arrays follow the boxes they belong to
    b, s, n = drop_inside(boxes[[0, 3]], scores[[0, 3]], 0.5, np.array([10, 20]))
    assert b.tolist() == boxes[[0]].tolist() and s.tolist() == [3.0] and n.tolist() == [10]
    b, s, n = drop_inside(boxes[[0, 3]], scores[[0, 3]], None, np.array([10, 20]))
    assert n.tolist() == [10, 20]


def test_vjdetect_option(tmp_path):
    from PIL import Image

    from vjboost.cli.detect import main

    p = tmp_path / "a.png"
    Image.fromarray(np.zeros((60, 60), np.uint8)).save(p)
    for bad in ("2", "half", "-1"):
        r = CliRunner().invoke(main, [str(p), "--suppress-inside", bad, "--no-progress"])
        assert r.exit_code == 2 and "--suppress-inside" in r.output, r.output
        assert "Traceback" not in r.output
    for ok in ("off", "0.5", "model"):
        r = CliRunner().invoke(main, [str(p), "--suppress-inside", ok, "--no-progress"])
        assert r.exit_code == 0, r.output
