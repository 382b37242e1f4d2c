"""A model's object box (``params["object_box"]``): a cascade trained with context around its
objects reports the object inside each window, checked against the windows it scans."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vjboost
from vjboost.boxes import inner_boxes
from vjboost.cascade import CascadeDetector
from vjboost.cascade.model import check_object_box, object_box


@pytest.fixture(scope="module")
def scene():
    from skimage.data import astronaut

    return np.ascontiguousarray(astronaut()[:220, 60:300].mean(axis=2).astype(np.uint8))


def test_windows_are_reported_as_their_object_boxes(scene):
    plain = vjboost.load_model("vjboost:frontalface_haar").truncated(4)
    framed = vjboost.load_model("vjboost:frontalface_haar").truncated(4)
    framed.params["object_box"] = [0.1, 0.2, 0.8, 0.6]
    kw = dict(min_neighbors=0, grouping="none")
    wb, ws, wp = CascadeDetector(plain, **kw).raw_windows(scene, return_positions=True)
    ob, os_, op = CascadeDetector(framed, **kw).raw_windows(scene, return_positions=True)
    assert len(wb) > 20
    # the same windows, scores and positions; each box is the window's sub-rectangle
    assert np.array_equal(wp, op) and np.array_equal(ws, os_)
    for (x, y, w, h), got in zip(wb.tolist(), ob.tolist(), strict=True):
        assert got == [round(x + 0.1 * w), round(y + 0.2 * h), round(0.8 * w), round(0.6 * h)]
    # grouped detections are object boxes too: 0.8 by 0.6 of a square window (to rounding)
    det = CascadeDetector(framed, min_neighbors=1).detect(scene)
    w, h = det.boxes[:, 2].astype(float), det.boxes[:, 3].astype(float)
    assert len(w) and (np.abs(w - h * 0.8 / 0.6) <= 2).all()


def test_the_default_face_model_reports_the_face_inside_its_window():
    """The default face model's 24×24 window keeps a sixth of the face box of context on every
    side and reports the middle 18×18; the other shipped models report their windows."""
    model = vjboost.load_model("vjboost:frontalface")
    assert model.window_shape == (24, 24)
    assert object_box(model) == (0.125, 0.125, 0.75, 0.75)
    assert "reports the object box (0.125, 0.125, 0.75, 0.75)" in model.summary()
    for name in ("vjboost:frontalface_haar", "vjboost:car_side", "vjboost:car_side_lbp"):
        assert object_box(vjboost.load_model(name)) is None


@pytest.mark.parametrize("bad", [[0, 0, 1], [0, 0, 0, 1], [0, 0, 1, -1], [0, 0, 5, 1],
                                 [3, 0, 1, 1], [0, float("nan"), 1, 1], "abcd", None, 7])
def test_a_bad_object_box_is_refused_by_name(bad):
    model = vjboost.load_model("vjboost:frontalface_haar").truncated(2)
    model.params["object_box"] = bad
    if bad is None:  # no box declared: the windows
        assert CascadeDetector(model).object_box is None
        return
    with pytest.raises(ValueError, match=r"params\['object_box'\]"):
        CascadeDetector(model)
    assert check_object_box([0, 0, 1, 1]) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 500), st.integers(-50, 500), st.integers(1, 400),
                          st.integers(1, 400)), max_size=20),
       st.tuples(st.floats(-0.5, 0.5), st.floats(-0.5, 0.5), st.floats(0.05, 2),
                 st.floats(0.05, 2)))
def test_inner_boxes_is_the_sub_rectangle(boxes, frame):
    out = inner_boxes(np.array(boxes, dtype=np.int64).reshape(-1, 4), frame)
    assert out.dtype == np.int32 and out.shape == (len(boxes), 4)
    for (x, y, w, h), got in zip(boxes, out.tolist(), strict=True):
        want = (x + frame[0] * w, y + frame[1] * h, frame[2] * w, frame[3] * h)
        assert all(abs(g - v) <= 0.5 for g, v in zip(got, want, strict=True))
