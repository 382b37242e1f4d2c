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


def test_the_unchanged_variants_score_what_the_detector_finds(vv, tmp_path, face_views,
                                                              capsys):
    _, gt = face_views(tmp_path, ("det", "det_scan"))
    argv = ["--data", str(tmp_path), "--views", "det,det_scan"]
    assert vv.main(argv + ["smooth", "--sigma", "0,1.5"]) == 0
    smooth = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
    assert vv.main(argv + ["groups"]) == 0
    groups = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])

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
        assert 0 <= groups["scores"][view]["every_group"] <= 1
    assert smooth["mean"]["sigma=0"] == want and smooth["views"] == ["det", "det_scan"]
    # smoothing changes what the scan sees: the smoothed image's windows, not the original's
    blurred = vv.smoothed(np.asarray(Image.open(paths[0])), 1.5)
    assert blurred.dtype == np.uint8 and not np.array_equal(blurred, images[0])
    assert vv.smoothed(images[0], 0.0) is images[0]
