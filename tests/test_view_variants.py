"""tools/view_variants.py: detection-time variants scored on the validation views."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vjboost.cascade import CascadeDetector, load_model
from vjboost.eval import evaluate_detections

TOOLS = Path(__file__).resolve().parents[1] / "tools"


@pytest.fixture()
def vv(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("view_variants")


def test_arguments_are_refused_in_one_line(vv, tmp_path, capsys):
    assert vv.parse_sigmas("0, 0.7,1") == [0.0, 0.7, 1.0]
    for bad in ("-1", "9", "x", "0.5,0.5", "nan"):
        with pytest.raises(ValueError, match="--sigma"):
            vv.parse_sigmas(bad)
    for bad in ("det,det", "nope", ""):
        with pytest.raises(ValueError, match="--views"):
            vv.parse_views(bad)
    cases = [(["smooth", "--sigma", "5"], "--sigma"), (["--views", "x", "groups"], "--views"),
             (["--model", "vjboost:no_such_model", "groups"], "no_such_model"),
             (["--data", str(tmp_path / "none"), "groups"], "val/det")]
    for argv, message in cases:
        assert vv.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and message in err and "\n" not in err


@pytest.mark.slow
def test_the_unchanged_variants_score_what_the_detector_finds(vv, tmp_path, face_views,
                                                              capsys):
    _, gt = face_views(tmp_path, ("det", "det_scan"))
    argv = ["--data", str(tmp_path), "--views", "det,det_scan"]
    assert vv.main(argv + ["smooth", "--sigma", "0,1.5"]) == 0
    smooth = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
    assert vv.main(argv + ["groups"]) == 0
    groups = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
    assert vv.main(argv + ["relax", "--delta", "0,0.4"]) == 0
    relax = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])

    # the reference: the detector as a user runs it (declared scan, gate, verifier, share),
    # its detections evaluated at the view's budgets
    model = load_model("vjboost:frontalface")
    det = CascadeDetector(model, min_neighbors=1, score="model", min_size=(24, 24))
    paths, images, _ = vv.tf.load_validation(tmp_path, False, "det")
    dets = {}
    for p, g in zip(paths, images, strict=True):
        d = det.detect(g)
        dets[p] = (d.boxes.reshape(-1, 4), d.scores)
    truth = {p: gt[Path(p).relative_to(tmp_path / "val" / "det").as_posix()] for p in paths}
    ev = evaluate_detections(dets, truth, iou_threshold=0.3)
    budgets = vv.tf.scaled_budgets(sum(g.size for g in images) / 1e6, vv.tf.CMU_MIT_MP)
    want = round(float(np.mean([ev.detection_rate_at(b) for b in budgets])), 4)
    assert 0 < want < 1
    for view in ("det", "det_scan"):
        assert smooth["scores"][view]["sigma=0"] == want
        assert groups["scores"][view]["min_neighbors=1"] == want
        assert relax["scores"][view]["delta=0"] == want
        assert 0 <= relax["scores"][view]["delta=0.4"] <= 1
        assert 0 <= groups["scores"][view]["every_group"] <= 1
    assert smooth["mean"]["sigma=0"] == want and smooth["views"] == ["det", "det_scan"]
    # smoothing changes what the scan sees: the smoothed image's windows, not the original's
    blurred = vv.smoothed(np.asarray(Image.open(paths[0])), 1.5)
    assert blurred.dtype == np.uint8 and not np.array_equal(blurred, images[0])
    assert vv.smoothed(images[0], 0.0) is images[0]


def test_relaxed_stages_lower_only_their_thresholds_and_accept_more(vv, capsys):
    from skimage import data

    model = load_model("vjboost:frontalface")
    n = model.n_stages
    assert vv.parse_stages("6-16", n) == (6, 16) and vv.parse_stages("1-1", n) == (1, 1)
    for bad in ("0-3", "5-2", f"1-{n + 1}", "7", "a-b"):
        with pytest.raises(ValueError, match="--stages"):
            vv.parse_stages(bad, n)
    relaxed = vv.relaxed(model, 0.25, (2, n - 1))
    for i, (a, b) in enumerate(zip(model.stages, relaxed.stages, strict=True), start=1):
        assert b.trees is a.trees or b.trees == a.trees
        want = np.float32(a.threshold - 0.25) if 2 <= i <= n - 1 else np.float32(a.threshold)
        assert np.float32(b.threshold) == want
    assert relaxed.params == model.params and relaxed.feature_ids.tolist() == \
        model.feature_ids.tolist()
    # every window the shipped stages accept, the relaxed ones accept too (with the same last
    # stage, the same score), and they accept more
    img = data.astronaut()[..., 1]
    det = CascadeDetector(model, min_neighbors=0, grouping="none")
    rel = CascadeDetector(relaxed, min_neighbors=0, grouping="none")
    b0, s0, p0 = det.raw_windows(img, return_positions=True)
    b1, s1, p1 = rel.raw_windows(img, return_positions=True)
    got = {tuple(p): s for p, s in zip(p1.tolist(), s1, strict=True)}
    assert all(got.get(tuple(p)) == s for p, s in zip(p0.tolist(), s0, strict=True))
    assert len(p1) > len(p0)
    assert vv.main(["relax", "--delta", "0,-1"]) == 2
    assert "--delta" in capsys.readouterr().err



@pytest.mark.slow
def test_thresholds_read_the_detector_at_each_grouping_threshold(vv, tmp_path, face_views,
                                                                 capsys):
    assert vv.parse_thresholds("none, 2.5,-1") == [-np.inf, 2.5, -1.0]
    for bad in ("x", "inf", "nan", "1,1", ""):
        with pytest.raises(ValueError, match="--min-score"):
            vv.parse_thresholds(bad)
    _, gt = face_views(tmp_path, ("det",))
    assert vv.main(["--data", str(tmp_path), "--views", "det", "threshold", "--min-score",
                    "none,3"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])

    # the reference: the detector at each grouping threshold and min_score, as a user runs it
    model = load_model("vjboost:frontalface")
    paths, images, _ = vv.tf.load_validation(tmp_path, False, "det")
    truth = {p: gt[Path(p).relative_to(tmp_path / "val" / "det").as_posix()] for p in paths}
    budgets = vv.tf.scaled_budgets(sum(g.size for g in images) / 1e6, vv.tf.CMU_MIT_MP)
    for name, t in (("none", None), ("min_score=3", 3.0)):
        evs = {}
        for n in vv.SWEEP_NEIGHBORS:
            det = CascadeDetector(model, min_neighbors=n, score="model", min_score=t,
                                  min_size=(24, 24))
            dets = {p: (d.boxes.reshape(-1, 4), d.scores)
                    for p, d in ((p, det.detect(g)) for p, g in zip(paths, images,
                                                                   strict=True))}
            evs[n] = evaluate_detections(dets, truth, iou_threshold=0.3)
        score = np.mean([evs[1].detection_rate_at(b) for b in budgets])
        sweep = np.mean([max([e.detection_rate for e in evs.values() if e.false_positives <= b],
                             default=0.0) for b in budgets])
        got = out["scores"]["det"][name]
        assert got["score"] == round(float(score), 4) and got["sweep"] == round(float(sweep), 4)
        assert got["both"] == round((got["score"] + got["sweep"]) / 2, 4)
    # a threshold keeps a subset: here it drops faces the curve without it reaches
    assert 0 < out["scores"]["det"]["min_score=3"]["score"] \
        < out["scores"]["det"]["none"]["score"] < 1


@pytest.mark.slow
def test_face_free_alarms_are_the_detectors_on_images_without_faces(vv, tmp_path, face_views,
                                                                    capsys):
    from skimage import data

    _, gt = face_views(tmp_path, ("det",))
    view = tmp_path / "val" / "det"
    # two face-free images (no annotated box) where OpenCV's settings find a false alarm each:
    # the astronaut's flag and shoulder, and a clock
    free_images = {"scenes/flag.png": data.astronaut()[40:200, 320:500, 1],
                   "scenes/clock.png": data.clock()}
    for name, img in free_images.items():
        Image.fromarray(img).save(view / name)
    with open(view / "images.txt", "a") as f:
        f.write("".join(n + "\n" for n in free_images))
    assert vv.main(["--data", str(tmp_path), "--views", "det", "facefree"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
    got = out["views"]["det"]
    paths, images, truth = vv.tf.load_validation(tmp_path, False, "det")
    free = [g for p, g in zip(paths, images, strict=True) if not len(truth[p])]
    assert got["images"] == len(free) >= 2
    model = load_model("vjboost:frontalface")
    for name, det in (("nothing set", CascadeDetector(model)),
                      ("OpenCV's settings", CascadeDetector(model, min_neighbors=3,
                                                            score="best", min_score=None))):
        assert got["false_alarms"][name] == sum(len(det.detect(g)) for g in free)
    assert got["false_alarms"]["nothing set"] < got["false_alarms"]["OpenCV's settings"]
    assert {"OpenCV default", "OpenCV alt2"} <= set(got["false_alarms"])
