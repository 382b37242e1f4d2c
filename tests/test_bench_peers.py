"""tools/bench_peers.py: each detector is timed as it is run."""

from __future__ import annotations

import importlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from skimage import data

from vjboost.cascade import CascadeDetector, load_model

TOOLS = Path(__file__).resolve().parents[1] / "tools"


@pytest.fixture
def bp(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("bench_peers")


@pytest.mark.slow
def test_a_model_is_timed_at_its_declared_operating_score(bp):
    """The default face model declares verified@1: the timed detector groups at minNeighbors 1
    and ranks by the verified score, the verifier included, exactly as the library does."""
    face = bp.Cascade("face", "vjboost:frontalface", kind="vjboost")
    assert (face.timed_neighbors, face.timed_score) == (1, "model")
    img = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)
    got = face.timer(1)(img)
    want = CascadeDetector(load_model("vjboost:frontalface"), scale_factor=bp.SCALE_FACTOR,
                           min_size=(20, 20), min_neighbors=1, score="verified").detect(img)
    assert len(want.boxes) >= 1
    assert np.array_equal(got.boxes, want.boxes)
    assert np.allclose(got.scores, want.scores)
    # OpenCV's cascades declare nothing: OpenCV's default minNeighbors and the best score
    ref = bp.Cascade("ref", "opencv:haarcascade_frontalface_default", kind="opencv")
    assert (ref.timed_neighbors, ref.timed_score) == (bp.OPERATING_NEIGHBORS, "best")


def test_dlib_runs_on_a_strided_view_as_on_its_copy(bp):
    """dlib reads a strided array's memory as if it were contiguous (a colour plane of an RGB
    image gives no face, or what other memory holds); ``dlib_run`` hands it a contiguous copy."""
    dlib = pytest.importorskip("dlib")
    hog = dlib.get_frontal_face_detector()
    plane = data.astronaut()[..., 1]
    assert not plane.flags.c_contiguous
    view = bp.dlib_run(hog, plane, 1)
    copy = hog.run(np.ascontiguousarray(plane), 1, -1)
    box = lambda rects: [(r.left(), r.top(), r.right(), r.bottom()) for r in rects]  # noqa: E731
    assert len(copy[0]) >= 1 and box(view[0]) == box(copy[0])
    assert list(view[1]) == list(copy[1]) and list(view[2]) == list(copy[2])


def test_a_detector_with_nothing_set_is_read_where_it_runs(bp):
    from vjboost.eval import evaluate_detections

    gt = {"a": np.array([[0, 0, 10, 10], [50, 50, 10, 10]])}
    dets = {"a": (np.array([[0, 0, 10, 10], [90, 90, 10, 10], [50, 50, 10, 10]]),
                  np.array([3.0, 2.0, 1.0]))}
    ev = evaluate_detections(dets, gt)
    assert bp.point_at(ev, 2.5) == {"detection_rate": 0.5, "false_positives": 0}
    assert bp.point_at(ev, 2.0) == {"detection_rate": 0.5, "false_positives": 1}
    assert bp.point_at(ev, -1.0) == {"detection_rate": 1.0, "false_positives": 1}
    assert bp.point_at(ev, 9.0) is None
    neigh = {"points": {"min_neighbors": [0, 1, 2, 3, 4], "false_positives": [9, 7, 5, 3, 1],
                        "detection_rate": [1.0, 0.9, 0.8, 0.7, 0.6]}}
    score = {"at_min_score": {"detection_rate": 0.85, "false_positives": 2}}
    # a model without a default threshold: OpenCV's minNeighbors 3 on the neighbours curve
    got = bp.at_defaults(load_model("vjboost:frontalface_haar"), neigh, score)
    assert got == {"min_neighbors": 3, "score": "best", "min_score": None,
                   "detection_rate": 0.7, "false_positives": 3}
    # the default face model: its declared threshold on its score curve
    face = load_model("vjboost:frontalface")
    got = bp.at_defaults(face, neigh, score)
    assert got == {"min_neighbors": 1, "score": "verified",
                   "min_score": face.params["operating_score"]["min_score"],
                   "detection_rate": 0.85, "false_positives": 2}
