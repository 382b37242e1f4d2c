"""Scanning past the image border (``border="replicate" | "reflect"``): windows that extend past
the edge, against padding the image by hand, and objects cut by the edge."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data

from vjboost.boxes import iou_matrix
from vjboost.cascade.detector import CascadeDetector
from vjboost.cascade.model_io import load_model
from vjboost.cascade.scan import BORDERS, Pyramid

#: the Haar face cascade: it finds astronaut()'s face when the image edge cuts it (the figures
#: below were read with it)
FACE = "vjboost:frontalface_haar"


@pytest.fixture(scope="module")
def face_model():
    return load_model(FACE)


@pytest.mark.parametrize("border", ["replicate", "reflect"])
def test_level_is_resized_then_padded(border):
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (37, 53), dtype=np.uint8)
    pyr = Pyramid((10, 20), (53, 37), scale_factor=1.3, mode="clean", step=1, border=border,
                  border_margin=0.3)
    assert len(pyr.levels) > 1
    for lv in pyr.levels:
        assert (lv.pad_x, lv.pad_y) == (6, 3)
        size = (lv.width - 12, lv.height - 6)
        ref = cv2.resize(img, size, interpolation=cv2.INTER_LINEAR_EXACT) \
            if size != (53, 37) else img
        ref = cv2.copyMakeBorder(ref, 3, 3, 6, 6, BORDERS[border])
        np.testing.assert_array_equal(pyr.level_image(img, lv), ref)
        # the first window starts pad pixels (times the scale) before the image
        box = pyr.boxes([[lv.index, 0, 0]])[0]
        assert box[0] == int(np.rint(np.float32(-6) * lv.scale))
        assert box[1] == int(np.rint(np.float32(-3) * lv.scale))
        # the last window ends as far past the right and bottom edges
        last = pyr.boxes([[lv.index, lv.nx - 1, lv.ny - 1]])[0]
        assert abs(last[0] + last[2] - (size[0] + 6) * lv.scale) <= 1.5
        assert abs(last[1] + last[3] - (size[1] + 3) * lv.scale) <= 1.5


@pytest.mark.slow
@pytest.mark.parametrize("border", ["replicate", "reflect"])
def test_detection_equals_scanning_the_padded_image(face_model, border):
    """At scale 1 the border is the hand-padded image: the same windows, shifted."""
    img = np.ascontiguousarray(data.astronaut()[:200, 150:330, 1])
    px, py = 5, 5  # 0.25 of the 20x20 window
    kw = dict(min_neighbors=0, grouping="none", mode="clean", step=1, max_size=20, n_stages=4)
    det = CascadeDetector(face_model, border=border, **kw)
    boxes, scores = det.raw_windows(img)
    ref_img = cv2.copyMakeBorder(img, py, py, px, px, BORDERS[border])
    ref_boxes, ref_scores = CascadeDetector(face_model, **kw).raw_windows(ref_img)
    assert len(ref_boxes) > 0
    np.testing.assert_array_equal(boxes, ref_boxes - np.array([px, py, 0, 0], np.int32))
    np.testing.assert_allclose(scores, ref_scores)
    assert (boxes[:, :2] < 0).any()              # windows past the edge were accepted too


def test_default_geometry_is_unchanged(face_model):
    img = data.astronaut()[..., 1]
    pyr = CascadeDetector(face_model).pyramid((img.shape[1], img.shape[0]))
    assert all(lv.pad_x == lv.pad_y == 0 for lv in pyr.levels)
    assert all((lv.width, lv.height) == (int(np.rint(np.float32(512) / lv.scale)),) * 2
               for lv in pyr.levels)


@pytest.mark.parametrize("border", ["replicate", "reflect"])
def test_face_cut_by_the_edge_is_found(face_model, border):
    img = data.astronaut()[..., 1]
    full = CascadeDetector(face_model, min_neighbors=3).detect(img).boxes
    face = full[np.argmax(full[:, 2])]           # the astronaut's face, about 82 px
    cut = int(0.25 * face[2])
    crop = np.ascontiguousarray(img[:, face[0] + cut:])
    truth = face - np.array([face[0] + cut, 0, 0, 0])
    inside = CascadeDetector(face_model, min_neighbors=3).detect(crop).boxes
    past = CascadeDetector(face_model, min_neighbors=3, border=border,
                           border_margin=0.3).detect(crop).boxes
    assert max((float(iou_matrix([b], [truth])[0, 0]) for b in inside), default=0.0) < 0.6
    best = max(past, key=lambda b: float(iou_matrix([b], [truth])[0, 0]))
    # found by the usual criterion (IoU >= 0.5), where no window inside the image is
    assert float(iou_matrix([best], [truth])[0, 0]) >= 0.5
    assert best[0] < 0                           # the box leaves the image, unclipped


@pytest.mark.parametrize("kw, match", [({"border": "wrap"}, "border"),
                                       ({"border": "reflect", "border_margin": 1.5},
                                        "border_margin")])
def test_bad_border_arguments(face_model, kw, match):
    with pytest.raises(ValueError, match=match):
        CascadeDetector(face_model, **kw)


def test_vjdetect_border_option(tmp_path):
    import json

    from click.testing import CliRunner

    from vjboost.cli.detect import main

    img = data.astronaut()[..., 1]
    cv2.imwrite(str(tmp_path / "cut.png"), np.ascontiguousarray(img[:, 205:]))
    runs = {}
    for border in ("none", "reflect"):
        r = CliRunner().invoke(main, [str(tmp_path / "cut.png"), "--model", FACE, "--border",
                                      border, "--border-margin", "0.3", "--no-progress"])
        assert r.exit_code == 0, r.output
        runs[border] = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    assert min(d["x"] for d in runs["none"]) >= 0
    assert min(d["x"] for d in runs["reflect"]) < 0
    r = CliRunner().invoke(main, [str(tmp_path / "cut.png"), "--border", "wrap"])
    assert r.exit_code != 0 and "--border" in r.output


def _declaring(model, **params):
    """``model`` with ``params`` added to its declarations (a copy)."""
    return model.with_stages(model.stages, {**model.params, **params})


def test_a_declared_border_is_the_default(face_model):
    img = np.ascontiguousarray(data.astronaut()[..., 1][:, 205:])
    declaring = _declaring(face_model, border="reflect", border_margin=0.3)
    det = CascadeDetector(declaring, min_neighbors=3)
    assert (det.border, det.border_margin) == ("reflect", 0.3)
    by_hand = CascadeDetector(face_model, min_neighbors=3, border="reflect", border_margin=0.3)
    got, ref = det.detect(img), by_hand.detect(img)
    np.testing.assert_array_equal(got.boxes, ref.boxes)
    np.testing.assert_array_equal(got.scores, ref.scores)
    assert got.boxes[:, 0].min() < 0  # the face the edge cuts, found past it
    # set by hand, either overrides the declaration; a declared border alone takes 0.25
    assert CascadeDetector(declaring, border=None).border is None
    assert CascadeDetector(declaring, border_margin=0.1).border_margin == 0.1
    assert CascadeDetector(declaring, border="replicate").border_margin == 0.3
    alone = CascadeDetector(_declaring(face_model, border="replicate"))
    assert (alone.border, alone.border_margin) == ("replicate", 0.25)
    # a model that declares nothing keeps OpenCV's windows, a margin asked for or not
    assert CascadeDetector(face_model, border_margin=0.4).border is None


@pytest.mark.parametrize("params, match", [({"border": "wrap"}, r"params: border"),
                                           ({"border": "reflect", "border_margin": "wide"},
                                            r"params: border_margin"),
                                           ({"border": "reflect", "border_margin": 2.0},
                                            r"params: border_margin")])
def test_a_bad_declared_border_is_named(face_model, params, match):
    with pytest.raises(ValueError, match=match):
        CascadeDetector(_declaring(face_model, **params))
    # a border set by hand never reads the declaration
    assert CascadeDetector(_declaring(face_model, **params), border=None,
                           border_margin=0.25).border is None


def test_vjdetect_reads_a_declared_border(tmp_path):
    import json

    from click.testing import CliRunner

    from vjboost.cascade.model_io import save_model
    from vjboost.cli.detect import main

    img = data.astronaut()[..., 1]
    cv2.imwrite(str(tmp_path / "cut.png"), np.ascontiguousarray(img[:, 205:]))
    save_model(_declaring(load_model(FACE), border="reflect", border_margin=0.3),
               tmp_path / "m.json")
    runs = {}
    for extra in ([], ["--border", "none"], ["--border-margin", "0.05"]):
        r = CliRunner().invoke(main, [str(tmp_path / "cut.png"), "--model",
                                      str(tmp_path / "m.json"), "--no-progress", *extra])
        assert r.exit_code == 0, r.output
        runs[len(runs)] = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    assert min(d["x"] for d in runs[0]) < 0       # the declared border
    assert min(d["x"] for d in runs[1]) >= 0      # turned off
    assert runs[2] != runs[0]                     # the declared border, a narrower margin
    for bad, opt in ((["--border-margin", "1.5"], "--border-margin"),
                     (["--border-margin", "nan"], "--border-margin"),
                     (["--border", "wrap"], "--border")):
        r = CliRunner().invoke(main, [str(tmp_path / "cut.png"), *bad])
        assert r.exit_code != 0 and opt in r.output and "Traceback" not in r.output
