"""The vjeval command: curves and figures agree with OpenCV's own detections."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
from click.testing import CliRunner
from skimage import data

from vjboost.cli.evaluate import main
from vjboost.eval import evaluate_detections

CASCADE = "haarcascade_frontalface_alt2.xml"


def _cascade_path():
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if not base or not hasattr(cv2, "CascadeClassifier"):
        pytest.skip("this OpenCV build has no CascadeClassifier or shipped cascades")
    return f"{base}/{CASCADE}"


@pytest.fixture
def scene(tmp_path):
    img = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)
    small = cv2.resize(img, (256, 256), interpolation=cv2.INTER_AREA)
    cv2.imwrite(str(tmp_path / "astro.png"), small)
    cv2.imwrite(str(tmp_path / "flat.png"), np.full((80, 80), 128, np.uint8))
    (tmp_path / "broken.png").write_bytes(b"nope")
    # ground truth: a hand-placed face box on the downscaled astronaut
    (tmp_path / "gt.csv").write_text("image,x,y,w,h\nastro.png,86,36,56,56\n")
    (tmp_path / "list.txt").write_text("astro.png\nflat.png\nbroken.png\n")
    return tmp_path, small


def test_vjeval_matches_opencv_detections(scene):
    tmp, small = scene
    path = _cascade_path()
    res = CliRunner().invoke(
        main,
        [
            str(tmp / "gt.csv"),
            "-m",
            path,
            "--images",
            str(tmp / "list.txt"),
            "-o",
            str(tmp / "out"),
            "--iou",
            "0.3",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp / "out" / "eval.json").read_text())
    assert (tmp / "out" / "curve.png").stat().st_size > 1000
    assert doc["n_images"] == 2 and doc["n_objects"] == 1
    got = doc["models"][0]["at_min_neighbors"]
    boxes = cv2.CascadeClassifier(path).detectMultiScale(small, 1.1, 3)
    boxes = np.asarray(boxes).reshape(-1, 4)
    ref = evaluate_detections(
        {
            str(tmp / "astro.png"): (boxes, np.ones(len(boxes))),
            str(tmp / "flat.png"): (np.zeros((0, 4)), np.zeros(0)),
        },
        {str(tmp / "astro.png"): np.array([[86, 36, 56, 56]])},
        iou_threshold=0.3,
    )
    assert got["true_positives"] == ref.true_positives == 1
    assert got["false_positives"] == ref.false_positives
    assert "1 unreadable" in res.output


def test_vjeval_errors(scene, tmp_path):
    tmp, _ = scene
    runner = CliRunner()
    res = runner.invoke(main, [str(tmp / "missing.csv"), "-m", "opencv:nothing"])
    assert res.exit_code == 2 and "missing.csv" in res.output
    res = runner.invoke(main, [str(tmp / "gt.csv"), "-m", "opencv:no_such_cascade"])
    assert res.exit_code == 2 and "no_such_cascade" in res.output
    (tmp / "bad.txt").write_text("broken.png\n")
    res = runner.invoke(
        main,
        [
            str(tmp / "gt.csv"),
            "-m",
            _cascade_path(),
            "--images",
            str(tmp / "bad.txt"),
            "-o",
            str(tmp / "o2"),
        ],
    )
    assert res.exit_code == 1 and "no image could be read" in res.output
