"""tools/rank_rounds.py: the ranking rounds' cached windows and score, against the detector."""

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
def rr(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("rank_rounds")


@pytest.mark.slow
def test_cache_holds_the_detectors_raw_windows_and_score_ranks_as_the_detector(tmp_path, rr,
                                                                               face_views,
                                                                               capsys):
    images, gt = face_views(tmp_path, rr.VIEWS)
    out = tmp_path / "cache"
    assert rr.main(["--data", str(tmp_path), "cache", "vjboost:frontalface:15",
                    "--out", str(out)]) == 0
    model = load_model("vjboost:frontalface").truncated(15)
    scan = CascadeDetector(model, min_neighbors=0, grouping="none", coarse_to_fine=None,
                           min_std=10.0)
    for view in rr.VIEWS:
        paths, _, _ = rr._views(tmp_path, False, view)
        cached = rr.load_cache(out, view, paths)
        for p, (b, s) in zip(paths, cached, strict=True):
            rb, rs = scan.raw_windows(np.asarray(Image.open(p)))
            assert b.tolist() == rb.tolist() and s.tolist() == rs.tolist()
    assert json.loads((out / "manifest.json").read_text())["stages"] == 15
    capsys.readouterr()

    # the score: the detector's own verified detections, what it drops included, evaluated
    for share, declared in ((None, 0.3), ("off", None), ("0.5", 0.5)):
        argv = ["--data", str(tmp_path), "score", str(out)]
        assert rr.main(argv + ([] if share is None else ["--share", share])) == 0
        res = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
        assert res["share"] == declared
        det = CascadeDetector(model, min_neighbors=1, score="verified", coarse_to_fine=None,
                              min_std=10.0, suppress_inside=declared)
        paths, _, _ = rr._views(tmp_path, False, "det")
        dets = {}
        for p in paths:
            d = det.detect(np.asarray(Image.open(p)))
            dets[p] = (d.boxes.reshape(-1, 4), d.scores)
        truth = {p: gt[Path(p).relative_to(tmp_path / "val" / "det").as_posix()]
                 for p in paths}
        ev = evaluate_detections(dets, truth, iou_threshold=0.3)
        for view in rr.VIEWS:
            rates = res["views"][view]["rates"]
            assert rates == {b: round(ev.detection_rate_at(int(b)), 4) for b in rates}
        assert 0 < res["mean"] < 1

    # the verifier reading each detection and its mirror: the detector with that verifier
    assert rr.main(["--data", str(tmp_path), "score", str(out), "--mirror"]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
    assert res["mirror"] is True
    mirrored = load_model("vjboost:frontalface").truncated(15)
    mirrored.params["verifier"] = dict(mirrored.params["verifier"], mirror=True)
    det = CascadeDetector(mirrored, min_neighbors=1, score="verified", coarse_to_fine=None,
                          min_std=10.0)
    paths, _, _ = rr._views(tmp_path, False, "det")
    dets = {}
    for p in paths:
        d = det.detect(np.asarray(Image.open(p)))
        dets[p] = (d.boxes.reshape(-1, 4), d.scores)
    truth = {p: gt[Path(p).relative_to(tmp_path / "val" / "det").as_posix()] for p in paths}
    ev = evaluate_detections(dets, truth, iou_threshold=0.3)
    rates = res["views"]["det"]["rates"]
    assert rates == {b: round(ev.detection_rate_at(int(b)), 4) for b in rates}


@pytest.mark.slow
def test_refused_inputs_are_one_line_errors(tmp_path, rr, face_views, capsys):
    face_views(tmp_path, rr.VIEWS)
    out = tmp_path / "cache"
    assert rr.main(["--data", str(tmp_path), "cache", "vjboost:frontalface",
                    "--out", str(out)]) == 0
    capsys.readouterr()
    cases = [
        (["cache", "vjboost:frontalface", "--out", str(out)], "already holds a cache"),
        (["cache", "vjboost:frontalface:99", "--out", str(tmp_path / "x")], "has 17 stages"),
        (["cache", "vjboost:frontalface", "--out", str(tmp_path / "y"), "--views", "det,no"],
         "--views"),
        (["score", str(tmp_path)], "not a complete cache"),
        (["score", str(out), "--share", "2"], "--share"),
        (["score", str(out), "--weight", "-1"], "--weight"),
        (["score", str(out), "--refit", "nokey"], "KEY=VALUE"),
    ]
    for argv, message in cases:
        assert rr.main(["--data", str(tmp_path)] + argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and message in err and "\n" not in err
    assert rr.main(["--data", str(tmp_path / "none"), "score", str(out)]) == 2
    assert "val/det/images.txt" in capsys.readouterr().err


def test_a_cache_of_some_views_is_scored_on_those(tmp_path, rr, face_views, capsys):
    face_views(tmp_path, rr.VIEWS)
    out = tmp_path / "cache"
    argv = ["--data", str(tmp_path)]
    assert rr.main(argv + ["cache", "vjboost:frontalface", "--out", str(out),
                           "--views", "det_scan,det"]) == 0
    assert list(json.loads((out / "manifest.json").read_text())["views"]) == ["det_scan", "det"]
    capsys.readouterr()
    assert rr.main(argv + ["score", str(out)]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
    assert list(res["views"]) == ["det_scan", "det"]
    assert res["mean"] == round((res["views"]["det"]["mean"]
                                 + res["views"]["det_scan"]["mean"]) / 2, 5)
