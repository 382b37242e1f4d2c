"""Online adaptation of a cascade: structure kept, leaves re-weighted, thresholds re-calibrated."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data

from vjboost.boost.tree import Tree
from vjboost.cascade.adapt import (
    StreamCollector,
    _false_alarm_threshold,
    adapt_cascade,
    collect_windows,
    scan_windows,
)
from vjboost.cascade.detector import CascadeDetector
from vjboost.cascade.model import CascadeModel, Stage
from vjboost.cascade.model_io import model_to_dict
from vjboost.cascade.opencv_xml import opencv_family
from vjboost.cascade.runner import CascadeRunner, cascade_accepts
from vjboost.cascade.trainer import stage_false_alarm


def _model():
    # left/right halves, top/bottom halves and centre of a 12x12 window
    fam = opencv_family((12, 12), "HAAR", [
        (((0, 0, 12, 12, -1.0), (0, 0, 6, 12, 2.0)), False),
        (((0, 0, 12, 12, -1.0), (0, 0, 12, 6, 2.0)), False),
        (((0, 0, 12, 12, -1.0), (3, 3, 6, 6, 4.0)), False),
    ])
    stumps = [Tree.stump(f, threshold=0.0, left_value=-1.0, right_value=1.0) for f in range(3)]
    # the informative stump (feature 0) starts with a small weight: adaptation must raise it
    weak0 = Tree.stump(0, threshold=0.0, left_value=-0.2, right_value=0.2)
    stages = [Stage([stumps[1], weak0, stumps[2]], threshold=-1.5),
              Stage([stumps[2], stumps[0]], threshold=-0.5)]
    return CascadeModel((12, 12), stages=stages, family=fam, feature_ids=[0, 1, 2])


def _stream(rng, n):
    wins = rng.integers(0, 120, (n, 12, 12)).astype(np.uint8)
    y = np.where(rng.random(n) < 0.5, 1, -1)
    wins[y > 0, :, :6] += 100  # objects: a bright left half
    return wins, y


def test_adaptation_keeps_structure_and_reweights(rng):
    model = _model()
    wins, y = _stream(rng, 800)
    adapted, report = adapt_cascade(model, wins, y, order=1, min_windows=10)
    assert adapted.n_stages == 2 and adapted.family == model.family
    np.testing.assert_array_equal(adapted.feature_ids, model.feature_ids)
    assert report.n_adapted == 2 and adapted.params["adapted"]["adapted_stages"] == 2
    factors = []
    for s0, s1 in zip(model.stages, adapted.stages, strict=True):
        fs = []
        for t0, t1 in zip(s0.trees, s1.trees, strict=True):
            np.testing.assert_array_equal(t0.feature, t1.feature)
            np.testing.assert_array_equal(t0.threshold, t1.threshold)
            # one multiplier per tree: the leaf shape is kept
            f = t1.leaves.astype(np.float64) / t0.leaves
            np.testing.assert_allclose(f, f[0], rtol=1e-6)
            fs.append(f[0])
        factors.append(fs)
    # the informative stump gets the largest multiplier, the uninformative ones small ones
    assert factors[0][1] > 2 * max(abs(factors[0][0]), abs(factors[0][2]))
    # adapted stage 0 keeps the original hit rate and rejects more background
    row = report.stages[0]
    assert row["adapted"] and row["hit_rate_after"] >= row["hit_rate_before"]
    assert row["false_alarm_after"] < row["false_alarm_before"]
    # the report's rates are those of the adapted model on the stream
    sc = CascadeRunner(adapted, last_stage=1).run(wins)[1]
    assert row["hit_rate_after"] == stage_false_alarm(sc[y > 0], adapted.stages[0].threshold)
    assert row["false_alarm_after"] == stage_false_alarm(sc[y < 0], adapted.stages[0].threshold)
    acc0, _ = cascade_accepts(model, wins)
    acc1, _ = cascade_accepts(adapted, wins)
    assert acc1[y > 0].mean() >= acc0[y > 0].mean() and acc1[y < 0].mean() < acc0[y < 0].mean()


def test_adaptation_is_deterministic(rng):
    wins, y = _stream(rng, 400)
    a, _ = adapt_cascade(_model(), wins, y, min_windows=10)
    b, _ = adapt_cascade(_model(), wins, y, min_windows=10)
    assert model_to_dict(a) == model_to_dict(b)


def test_min_hit_rate_first_stage_blend_and_min_windows(rng):
    model = _model()
    wins, y = _stream(rng, 600)
    adapted, report = adapt_cascade(model, wins, y, min_hit_rate=0.99, min_windows=10)
    assert all(r["hit_rate_after"] >= 0.99 for r in report.stages)
    # stages before first_stage are kept as they are
    adapted, report = adapt_cascade(model, wins, y, first_stage=1, min_windows=10)
    assert adapted.stages[0].trees == model.stages[0].trees
    assert adapted.stages[0].threshold == model.stages[0].threshold
    assert report.stages[0]["reason"] == "before first_stage" and report.stages[1]["adapted"]
    # blend 0: leaves unchanged, only the thresholds move
    adapted, _ = adapt_cascade(model, wins, y, blend=0.0, min_windows=10)
    for s0, s1 in zip(model.stages, adapted.stages, strict=True):
        assert s0.trees == s1.trees
    # too few windows reach a stage: it is kept
    adapted, report = adapt_cascade(model, wins, y, min_windows=10_000)
    assert report.n_adapted == 0
    assert model_to_dict(adapted)["stages"] == model_to_dict(model)["stages"]


def test_holdout_keeps_stages_that_do_not_generalise(rng):
    model = _model()
    wins, y = _stream(rng, 800)
    # drift: in the later half of the stream the object is a bright top half, not the left
    late = np.arange(len(y)) >= 400
    wins[late] = rng.integers(0, 120, (late.sum(), 12, 12)).astype(np.uint8)
    wins[late & (y > 0), :6, :] += 100
    _, report = adapt_cascade(model, wins, y, min_windows=10, holdout=0.5)
    row = report.stages[0]
    assert not row["adapted"] and row["reason"] == "held-out check"
    assert row["holdout"]["passed"] is False
    # without drift the same check passes
    wins2, y2 = _stream(rng, 800)
    _, report2 = adapt_cascade(model, wins2, y2, min_windows=10, holdout=0.5)
    assert report2.stages[0]["adapted"] and report2.stages[0]["holdout"]["passed"]


def test_false_alarm_threshold_lets_the_allowed_number_pass(rng):
    for _ in range(20):
        s = rng.normal(size=int(rng.integers(1, 60))).round(int(rng.integers(1, 6)))
        n = int(rng.integers(0, len(s) + 2))
        t = _false_alarm_threshold(s, n)
        passed = round(stage_false_alarm(s, t) * len(s))
        assert passed <= n
        # tight: fewer pass only when the next score is tied with the first one to reject
        desc = np.sort(s)[::-1]
        assert passed == min(n, len(s)) or desc[passed] == desc[n]


def test_collect_windows_labels_by_overlap(rng):
    gray = rng.integers(0, 255, (60, 80)).astype(np.uint8)
    cands = np.array([[10, 10, 20, 20], [12, 10, 20, 20], [50, 30, 20, 20], [18, 14, 20, 20]])
    w, y = collect_windows(cands, gray, np.array([[10, 10, 20, 20]]), (12, 12))
    np.testing.assert_array_equal(y, [1, 1, -1])  # the fourth overlaps ambiguously: left out
    assert w.shape == (3, 12, 12)


def _face_cascade():
    from vjboost.cascade.model_io import load_model

    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if not base:
        pytest.skip("this OpenCV build ships no cascades")
    return load_model(f"{base}/haarcascade_frontalface_default.xml")


def _frames(n):
    """A face (from astronaut()) moving over a background, and its box in each frame."""
    ast = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)
    patch = cv2.resize(ast[40:190, 150:300], (60, 60), interpolation=cv2.INTER_AREA)
    bg = cv2.resize(cv2.cvtColor(data.coffee(), cv2.COLOR_RGB2GRAY), (160, 120),
                    interpolation=cv2.INTER_AREA)
    frames, boxes = [], []
    for k in range(n):
        x, y = 10 + 7 * k, 20 + (k % 4) * 8
        f = bg.copy()
        f[y : y + 60, x : x + 60] = patch
        frames.append(f)
        boxes.append(np.array([[x + 10, y + 9, 40, 40]]))
    return frames, boxes


def test_scan_windows_are_the_detectors_windows():
    model = _face_cascade()
    gray = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)[::2, ::2].copy()
    det = CascadeDetector(model.truncated(3), min_neighbors=0, grouping="none")
    boxes, wins = scan_windows(det, gray)
    assert len(boxes) == len(det.raw_windows(gray)[0]) > 100
    acc, _ = cascade_accepts(model.truncated(3), wins, min_std=10.0)
    assert acc.all()
    # the later stages, run on these windows, agree with the whole cascade
    n_passed, _ = CascadeRunner(model, first_stage=3).run(wins, chunk=97)
    _, ref = cascade_accepts(model, wins)
    np.testing.assert_array_equal(n_passed, ref)
    runner = CascadeRunner(model, first_stage=3, last_stage=8)
    np.testing.assert_array_equal(runner.run(wins)[0], np.minimum(ref, 8))
    # the full cascade's raw windows are among the candidates
    full_boxes = CascadeDetector(model, min_neighbors=0, grouping="none").raw_windows(gray)[0]
    assert (n_passed == model.n_stages).sum() == len(full_boxes)


def test_stream_collector_labels_and_adapts():
    model = _face_cascade()
    frames, boxes = _frames(8)
    col = StreamCollector(model, candidate_stages=5, seed=3)
    counts = [col.add_frame(f, b) for f, b in zip(frames, boxes, strict=True)]
    assert col.add_frame(frames[0], None) == (0, 0) and col.n_skipped == 1
    assert col.n_frames == 8 and all(p > 0 and n > 0 for p, n in counts)
    wins, y = col.windows_labels()
    assert wins.shape[1:] == model.window_shape and len(y) == col.n_positives + col.n_negatives
    # positives are tight windows on the face: the full cascade accepts many of them
    acc, _ = cascade_accepts(model, wins)
    assert acc[y > 0].mean() > 0.3 and acc[y < 0].mean() < 0.05
    # self-labelling finds the face
    conf = col.confident_objects(frames[2], min_neighbors=5)
    assert len(conf) == 1
    adapted, report = adapt_cascade(model, wins, y, first_stage=5, min_windows=5)
    assert report.n_adapted >= 1
    # same seed, same windows
    col2 = StreamCollector(model, candidate_stages=5, seed=3)
    for f, b in zip(frames, boxes, strict=True):
        col2.add_frame(f, b)
    w2, y2 = col2.windows_labels()
    np.testing.assert_array_equal(w2, wins)
    np.testing.assert_array_equal(y2, y)


def test_bad_input(rng):
    wins, y = _stream(rng, 50)
    with pytest.raises(ValueError, match="-1/\\+1"):
        adapt_cascade(_model(), wins, np.zeros(50))
    with pytest.raises(ValueError, match="both positives"):
        adapt_cascade(_model(), wins, np.ones(50))
    with pytest.raises(ValueError, match="labels: 49 labels for 50"):
        adapt_cascade(_model(), wins, y[:49])
    with pytest.raises(ValueError, match="blend"):
        adapt_cascade(_model(), wins, y, blend=2.0)
    with pytest.raises(ValueError, match="holdout"):
        adapt_cascade(_model(), wins, y, holdout=1.0)
    with pytest.raises(ValueError, match="first_stage"):
        adapt_cascade(_model(), wins, y, first_stage=3)
    with pytest.raises(ValueError, match="12x12|window"):
        adapt_cascade(_model(), wins[:, :10], y)
    with pytest.raises(ValueError, match="first_stage/last_stage"):
        CascadeRunner(_model(), first_stage=2, last_stage=1)
