"""Model names (vjboost:NAME, opencv:NAME) and the frontal-face cascades vjboost ships: the
default model ``vjboost:frontalface`` and ``vjboost:frontalface_haar``, the Haar-only cascade that
OpenCV runs from its XML twin."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from vjboost.cascade.detector import CascadeDetector, declared_suppression
from vjboost.cascade.model_io import load_model
from vjboost.cascade.shipped import (
    DEFAULT_MODEL,
    MODELS_DIR,
    ModelNotFound,
    default_model,
    resolve_model,
)
from vjboost.eval import iou_matrix

FACE = MODELS_DIR / "frontalface.json"
#: the OpenCV-exportable face cascade: Haar only, shipped with its XML twin
HAAR = MODELS_DIR / "frontalface_haar.json"


def test_vjboost_names_resolve_to_the_models_folder():
    assert Path(resolve_model(DEFAULT_MODEL)) == FACE
    assert Path(resolve_model("vjboost:frontalface_haar")) == HAAR
    assert Path(resolve_model("vjboost:frontalface_haar.xml")) == HAAR.with_suffix(".xml")
    assert default_model() == str(FACE)
    with pytest.raises(ModelNotFound, match="vjboost:frontalface") as e:  # it lists them
        resolve_model("vjboost:no_such_model")
    assert ".report" not in str(e.value)  # the models' training reports are not models


def test_opencv_names_and_paths():
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if base and (Path(base) / "haarcascade_frontalface_alt2.xml").is_file():
        assert resolve_model("opencv:haarcascade_frontalface_alt2") == str(
            Path(base) / "haarcascade_frontalface_alt2.xml")
    with pytest.raises(ModelNotFound, match="ships no"):
        resolve_model("opencv:no_such_cascade")
    assert resolve_model("some/where/cascade.xml") == "some/where/cascade.xml"


def _astronaut_face() -> tuple[np.ndarray, np.ndarray]:
    """The astronaut image (grey) and her face where OpenCV's own cascade puts it (its boxes
    are wider than vjboost's shipped ones)."""
    img = cv2.cvtColor(__import__("skimage.data").data.astronaut(), cv2.COLOR_RGB2GRAY)
    ocv = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
    face = ocv.detectMultiScale(img, 1.1, 5, minSize=(48, 48))
    assert len(face) == 1
    return img, face


def test_default_model_finds_the_astronauts_face():
    img, face = _astronaut_face()
    got = CascadeDetector(load_model(DEFAULT_MODEL), min_neighbors=3).detect(img).boxes
    assert len(got) >= 1 and iou_matrix(np.asarray(got), face).max() >= 0.3


def test_haar_json_and_xml_are_the_same_cascade_small_and_equal_to_opencv():
    js, xml = load_model(HAAR), load_model(HAAR.with_suffix(".xml"))
    assert js.opencv_type == "HAAR"
    assert js.window_shape == xml.window_shape and js.n_stages == xml.n_stages
    for a, b in zip(js.stages, xml.stages, strict=True):
        assert np.float32(a.threshold) == np.float32(b.threshold) and len(a.trees) == len(b.trees)
    for p in (HAAR, HAAR.with_suffix(".xml")):
        assert p.stat().st_size < 1_000_000
    img, face = _astronaut_face()
    got = [CascadeDetector(m, min_neighbors=3).detect(img).boxes.tolist() for m in (js, xml)]
    assert got[0] == got[1] and len(got[0]) >= 1
    assert iou_matrix(np.asarray(got[0]), face).max() >= 0.3
    ref = cv2.CascadeClassifier(str(HAAR.with_suffix(".xml")))  # OpenCV loads it as is
    assert not ref.empty()
    want = ref.detectMultiScale(img, 1.1, 3, minSize=js.window_shape[::-1])
    assert sorted(map(tuple, got[1])) == sorted(map(tuple, np.asarray(want).tolist()))


@pytest.mark.parametrize("model", [FACE, HAAR])
def test_model_card_states_how_it_was_trained(model):
    card = (MODELS_DIR / "README.md").read_text(encoding="utf-8")
    report = json.loads(model.with_suffix(".report.json").read_text(encoding="utf-8"))
    assert "vjtrain" in card and "--seed" in card and f"## `{model.stem}`" in card
    # a shipped model is its training run's cascade, or the first stages of it (cut on
    # validation, which its card says): the report's stages are the model's, in order
    m = load_model(model)
    assert report["stages"] and len(report["stages"]) >= m.n_stages
    assert [r["threshold"] for r in report["stages"][:m.n_stages]] == pytest.approx(
        [st.threshold for st in m.stages])
    assert [r["n_weak"] for r in report["stages"][:m.n_stages]] == [len(st.trees)
                                                                     for st in m.stages]
    if len(report["stages"]) > m.n_stages:
        assert f"first {m.n_stages} of its {len(report['stages'])} trained stages" in card


@pytest.mark.shared_data
@pytest.mark.slow
def test_shipped_face_model_on_cmu_mit_as_its_card_reports(shared_dir):
    """The CMU-MIT figures the model cards report (evaluated once, after each model was chosen
    on the validation split), next to OpenCV's default cascade in the same code."""
    from vjboost.eval.metrics import evaluate_detections
    from vjboost.eval.sweep import sweep_min_neighbors
    from vjboost.io import read_annotations, read_bg_list, read_image

    cmu = shared_dir / "data" / "cmu-mit"
    gt = read_annotations(cmu / "faces.csv")
    grays = {p: read_image(p) for p in read_bg_list(cmu / "images.txt")}
    sizes = {p: (g.shape[1], g.shape[0]) for p, g in grays.items()}
    gt = {p: gt.get(p, np.zeros((0, 4), np.int64)) for p in grays}
    curves = {}
    for spec in ("vjboost:frontalface", "vjboost:frontalface_haar",
                 "opencv:haarcascade_frontalface_default"):
        model = load_model(resolve_model(spec))
        det = CascadeDetector(model, scale_factor=1.1, min_neighbors=0, grouping="none")
        raw = {p: det.raw_windows(g) for p, g in grays.items()}
        # with the detections inside better ones dropped as the detector drops them
        curves[spec] = sweep_min_neighbors(raw, gt, thresholds=range(1, 31), image_sizes=sizes,
                                           iou_threshold=0.3,
                                           suppress_inside=declared_suppression(model))
    ref = curves["opencv:haarcascade_frontalface_default"]
    assert (ref.at(3).detection_rate, ref.at(3).false_positives) == (
        pytest.approx(309 / 354), 52)  # anchor
    # the cards' figures: (faces found, false positives) at minNeighbors 1..4
    # (the default model with its declared coarse-to-fine scan)
    cards = {"vjboost:frontalface": [(298, 115), (288, 61), (279, 45), (276, 29)],
             "vjboost:frontalface_haar": [(274, 32), (261, 12), (249, 3), (242, 3)]}
    for spec, want in cards.items():
        ours = curves[spec]
        got = [(round(ours.at(m).detection_rate * 354), ours.at(m).false_positives)
               for m in range(1, 5)]
        assert got == want, spec
    # each model's own curve at few false positives: far more faces than OpenCV's default
    # cascade. The Haar cascade is read by minNeighbors; the default declares its operating
    # score (minNeighbors 1, the verified margin), whose curve its card reports at 2 ... 50
    default = CascadeDetector(load_model(resolve_model("vjboost:frontalface")),
                              scale_factor=1.1, min_neighbors=1, score="model")
    dets = {p: (d.boxes, d.scores) for p, d in ((p, default.detect(g)) for p, g in grays.items())}
    scored = evaluate_detections(dets, gt, iou_threshold=0.3)
    # faces found at 2 ... 50 false positives (the card's 0.774 / 0.785 / 0.822 / 0.822 / 0.828
    # / 0.839, as bench_peers prints its rates rounded to three places)
    assert [round(scored.detection_rate_at(b) * 354) for b in (2, 5, 10, 20, 30, 50)] == [
        274, 278, 291, 291, 293, 297]
    for fp in (2, 5, 10):
        assert curves["vjboost:frontalface_haar"].detection_rate_at(fp) > \
            ref.detection_rate_at(fp) + 0.25
        assert scored.detection_rate_at(fp) > ref.detection_rate_at(fp) + 0.25


def test_no_cascade_classifier_needed_and_clear_error_without_opencv_cascades(monkeypatch):
    """vjboost's own detector and names work on an OpenCV without CascadeClassifier/cv2.data
    (OpenCV 5's wheels); opencv: names then fail with one clear line."""
    import types

    monkeypatch.delattr(cv2, "CascadeClassifier", raising=False)
    monkeypatch.setattr(cv2, "data", types.SimpleNamespace(), raising=False)
    img = cv2.cvtColor(__import__("skimage.data").data.astronaut(), cv2.COLOR_RGB2GRAY)
    assert len(CascadeDetector(load_model(DEFAULT_MODEL)).detect(img)) >= 1
    with pytest.raises(ModelNotFound, match=r"ships no cascades \(no cv2.data.haarcascades"):
        load_model("opencv:haarcascade_frontalface_default")


def test_opencv_names_on_a_build_whose_cascade_folder_is_empty(monkeypatch, tmp_path):
    """OpenCV 5's wheels keep ``cv2.data.haarcascades`` but its folder holds no cascade: an
    ``opencv:`` name says the build ships none, not that this one name is missing."""
    import types

    (tmp_path / "__init__.py").write_text("")
    monkeypatch.setattr(cv2, "data", types.SimpleNamespace(haarcascades=f"{tmp_path}/"),
                        raising=False)
    with pytest.raises(ModelNotFound, match=r"opencv:haarcascade_frontalface_default: this "
                       r"OpenCV build \(cv2 .*\) ships no cascades .* give the cascade's file"):
        resolve_model("opencv:haarcascade_frontalface_default")
    # with cascades there, a mistyped name lists the ones there are
    (tmp_path / "haarcascade_eye.xml").write_text("<opencv_storage/>")
    with pytest.raises(ModelNotFound, match=r"ships no haarcascade_ey.xml \(have: "
                                            r"opencv:haarcascade_eye\)"):
        resolve_model("opencv:haarcascade_ey")


@pytest.mark.slow
def test_vjadapt_accepts_model_names(tmp_path):
    from click.testing import CliRunner

    from vjboost.cli.adapt import vjadapt

    ast = cv2.cvtColor(__import__("skimage.data").data.astronaut(), cv2.COLOR_RGB2GRAY)
    coffee = cv2.cvtColor(__import__("skimage.data").data.coffee(), cv2.COLOR_RGB2GRAY)
    patch = cv2.resize(ast[40:190, 150:300], (60, 60), interpolation=cv2.INTER_AREA)
    bg = cv2.resize(coffee, (160, 120), interpolation=cv2.INTER_AREA)
    info = []
    for k in range(6):
        x, y = 10 + 12 * k, 20 + (k % 3) * 10
        f = bg.copy()
        f[y:y + 60, x:x + 60] = patch
        cv2.imwrite(str(tmp_path / f"f{k}.png"), f)
        info.append(f"f{k}.png 1 {x + 10} {y + 9} 40 40")
    (tmp_path / "info.dat").write_text("\n".join(info) + "\n")
    args = [str(tmp_path), "--boxes", str(tmp_path / "info.dat"), "--min-windows", "3"]
    r = CliRunner().invoke(vjadapt, [DEFAULT_MODEL, *args, "-o", str(tmp_path / "a.json")])
    assert r.exit_code == 0, r.output
    assert load_model(tmp_path / "a.json").n_stages == load_model(DEFAULT_MODEL).n_stages
    r = CliRunner().invoke(vjadapt, ["vjboost:no_such_model", *args, "-o",
                                     str(tmp_path / "b.json")])
    assert r.exit_code == 2 and "no such shipped model" in r.output
