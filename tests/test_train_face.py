"""tools/train_face.py: shipping a trained face model under its name."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from vjboost.cascade import load_model, save_model
from vjboost.cascade.shipped import MODELS_DIR

TOOLS = Path(__file__).resolve().parents[1] / "tools"


@pytest.fixture
def shipping(tmp_path, monkeypatch):
    """``train_face`` with its shipped models' folder (and the repository it reports paths
    against) moved under ``tmp_path``: the module and that folder."""
    import vjboost.cascade.shipped as shipped

    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setattr(shipped, "MODELS_DIR", models)
    monkeypatch.setattr(tf, "REPO", tmp_path)
    return tf, models


def test_ship_model_replaces_every_file_of_the_name(tmp_path, shipping):
    """A model without an XML twin (a multi-family cascade) must not leave the previous model's
    XML behind under its name."""
    tf, models = shipping
    (models / "face.xml").write_text("<opencv_storage/>")  # a previous model's twin
    run = tmp_path / "run"
    run.mkdir()
    model = load_model(MODELS_DIR / "frontalface_haar.json")
    save_model(model, run / "model.json")
    (run / "report.json").write_text("{}")
    got = tf.ship_model("face", run)
    assert got == ["models/face.json", "models/face.report.json"]
    assert not (models / "face.xml").exists()
    shipped_model = load_model(models / "face.json")
    assert shipped_model.params["operating_score"] == tf.bp.DEFAULT_OPERATING
    assert shipped_model.stages == model.stages


def test_ship_model_keeps_the_shipped_stages(tmp_path, monkeypatch, shipping):
    """A recipe with a shipped stage count ships the first stages of its training run, and
    the shipped default model is exactly that cut of its report's cascade."""
    import json

    tf, models = shipping
    monkeypatch.setitem(tf.SHIPPED_STAGES, "face", 5)
    run = tmp_path / "run"
    run.mkdir()
    model = load_model(MODELS_DIR / "frontalface_haar.json")
    save_model(model, run / "model.json")
    tf.ship_model("face", run)
    got = load_model(models / "face.json")
    cut = model.truncated(5)  # the first stages, and the features they read
    assert got.n_stages == 5 and got.stages == cut.stages
    np.testing.assert_array_equal(got.feature_ids, cut.feature_ids)
    # the shipped default: the first SHIPPED_STAGES of the stages its report records
    face = load_model(MODELS_DIR / "frontalface.json")
    report = json.loads((MODELS_DIR / "frontalface.report.json").read_text(encoding="utf-8"))
    assert face.n_stages == tf.SHIPPED_STAGES["frontalface"] <= len(report["stages"])
    assert [len(s.trees) for s in face.stages] == [
        s["n_weak"] for s in report["stages"]][:face.n_stages]
    # and it declares what --ship declares for its recipe
    assert face.params["coarse_to_fine"] == tf.COARSE_TO_FINE["frontalface"]
    assert face.params["min_std"] == tf.MIN_STD["frontalface"]
    assert face.params["suppress_inside"] == tf.SUPPRESS_INSIDE["frontalface"]
    assert face.params["operating_score"] == tf.OPERATING["frontalface"]
    monkeypatch.setitem(tf.SUPPRESS_INSIDE, "face", 0.5)
    tf.ship_model("face", run)
    assert load_model(models / "face.json").params["suppress_inside"] == 0.5


def test_declare_writes_the_model_as_ship_would(tmp_path, monkeypatch, shipping, capsys):
    """``declare`` writes what ``ship_model`` ships (stages and declarations), to any path;
    a folder without a model is a one-line error."""
    import json

    tf, models = shipping
    for table, value in ((tf.SHIPPED_STAGES, 4), (tf.COARSE_TO_FINE, 2), (tf.MIN_STD, 7.0),
                         (tf.SUPPRESS_INSIDE, 0.4)):
        monkeypatch.setitem(table, "face", value)
    monkeypatch.setitem(tf.RECIPES, "face", tf.RECIPES["frontalface_haar"])
    run = tmp_path / "run"
    run.mkdir()
    save_model(load_model(MODELS_DIR / "frontalface_haar.json"), run / "model.json")
    tf.ship_model("face", run)
    argv = ["--log", str(tmp_path / "log.jsonl"), "declare", "face", str(run), "--to",
            str(tmp_path / "cand.json")]
    assert tf.main(argv) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
    assert res["stages"] == 4
    got, want = load_model(tmp_path / "cand.json"), load_model(models / "face.json")
    assert got.stages == want.stages and got.params == want.params
    assert got.params["coarse_to_fine"] == 2 and got.params["min_std"] == 7.0
    assert tf.main(argv[:4] + [str(tmp_path), "--to", str(tmp_path / "x.json")]) == 2
    assert "no model.json" in capsys.readouterr().err


def test_degrade_is_seeded_keeps_shape_and_lowers_detail(monkeypatch):
    import numpy as np

    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    rng = np.random.default_rng(0)
    windows = rng.integers(0, 256, (200, 32, 32)).astype(np.uint8)  # all detail, no structure
    a = tf.degrade(windows, 2, seed=5)
    assert a.shape == (400, 32, 32) and a.dtype == np.uint8
    assert np.array_equal(a, tf.degrade(windows, 2, seed=5))
    assert not np.array_equal(a, tf.degrade(windows, 2, seed=6))
    # each operation (resampling, blur, contrast, JPEG) smooths white noise; added noise alone
    # does not, so the median copy has less pixel-to-pixel variation than its original
    def tv(x):
        return np.abs(np.diff(x.astype(np.int32), axis=2)).mean(axis=(1, 2))

    assert np.median(tv(a[:200]) / tv(windows)) < 0.9
    assert tf.degrade(windows, 0, seed=5).shape == (0, 32, 32)


def test_robustness_counts_accepted_windows_per_source(tmp_path, monkeypatch):
    import numpy as np

    from vjboost.cascade.runner import cascade_accepts

    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    (tmp_path / "val").mkdir()
    rng = np.random.default_rng(0)
    model = load_model("vjboost:frontalface")
    windows = {"webfaces": np.full((5, 32, 32), 128, np.uint8),  # featureless: always rejected
               "cbcl": rng.integers(0, 256, (7, 32, 32)).astype(np.uint8),
               "nrc": rng.integers(0, 256, (3, 32, 32)).astype(np.uint8)}
    for src, w in windows.items():
        np.savez(tmp_path / "val" / f"{src}.npz", images=w, box=np.array([4, 4, 24, 24.0]))
    got = tf.robustness(["vjboost:frontalface"], tmp_path)["vjboost:frontalface"]
    assert {k: v["n"] for k, v in got.items()} == {"webfaces": 5, "cbcl": 7, "nrc": 3}
    assert set(got["webfaces"]) == {"clean", "scan", "relit", "turned", "n"}
    # a featureless window stays featureless when turned; grain alone does not make it a face
    assert got["webfaces"]["clean"] == got["webfaces"]["turned"] == got["webfaces"]["scan"] == 0.0
    # the clean share is the cascade's own verdict on the region it reads, resized to its
    # window: the target box and, for the default model, the context its object box declares
    # (a sixth of the box on every side: the whole 32-px window here)
    import cv2

    crop = np.stack([cv2.resize(x, (24, 24), interpolation=cv2.INTER_AREA)
                     for x in windows["cbcl"]])
    assert got["cbcl"]["clean"] == round(float(cascade_accepts(model, crop)[0].mean()), 3)
    haar = load_model("vjboost:frontalface_haar")
    got = tf.robustness(["vjboost:frontalface_haar"], tmp_path)["vjboost:frontalface_haar"]
    crop = np.stack([cv2.resize(x[4:28, 4:28], (20, 20), interpolation=cv2.INTER_AREA)
                     for x in windows["cbcl"]])
    assert got["cbcl"]["clean"] == round(float(cascade_accepts(haar, crop)[0].mean()), 3)


def test_scaled_budgets_and_rates_at_match_the_evaluation(monkeypatch):
    """Budgets scaled per megapixel, and rates read off a curve's envelope points, equal the
    evaluation's own ``detection_rate_at`` at those budgets."""
    import numpy as np
    import pytest

    from vjboost.eval.metrics import evaluate_detections

    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    assert tf.scaled_budgets(80.1, None) == tuple(tf.bp.BUDGETS)
    assert tf.scaled_budgets(25.64, 25.64) == tuple(tf.bp.BUDGETS)
    got = tf.scaled_budgets(80.1, 25.64)
    assert got == tuple(int(round(b * 80.1 / 25.64)) for b in tf.bp.BUDGETS)
    with pytest.raises(ValueError, match="budget-mp"):
        tf.scaled_budgets(80.1, 0.0)
    with pytest.raises(ValueError, match="kept up to"):
        tf.scaled_budgets(80.1, 5.0)

    rng = np.random.default_rng(3)
    gt, dets = {}, {}
    for i in range(40):  # faces in a row; detections on about 70 % of them, plus clutter
        n = int(rng.integers(0, 4))
        faces = np.array([[40.0 * j, 10.0, 24.0, 24.0] for j in range(n)]).reshape(-1, 4)
        gt[f"im{i}"] = faces
        hits = faces[rng.random(n) < 0.7] + rng.normal(0.0, 2.0, (1, 4)) * [1, 1, 0, 0]
        m = int(rng.integers(0, 6))
        clutter = np.c_[rng.uniform(0, 300, (m, 1)), rng.uniform(60, 200, (m, 1)),
                        np.full((m, 2), 24.0)]
        boxes = np.vstack([hits, clutter])
        dets[f"im{i}"] = (boxes, rng.random(len(boxes)))
    ev = evaluate_detections(dets, gt, iou_threshold=0.3)
    pts = tf.bp.curve_points(ev)
    budgets = (0, 1, 3, 7, 20, 60)
    assert tf.rates_at(pts["false_positives"], pts["detection_rate"], budgets) == {
        str(b): round(ev.detection_rate_at(b), 4) for b in budgets}
    # each budget's min_score, applied to the detections as the detector applies it, gives
    # that budget's rate within the budget
    ops = tf.operating_points(pts, budgets, 2.0)
    assert [p["budget"] for p in ops] == [b for b in budgets if ev.curve_false_positives[0] <= b]
    for p in ops:
        kept = {k: (b[s >= p["min_score"]], s[s >= p["min_score"]]) for k, (b, s) in dets.items()}
        ev_p = evaluate_detections(kept, gt, iou_threshold=0.3)
        assert ev_p.false_positives == p["false_positives"] <= p["budget"]
        assert round(ev_p.detection_rate, 4) == p["detection_rate"] == round(
            ev.detection_rate_at(p["budget"]), 4)
        assert p["fp_per_mp"] == round(p["false_positives"] / 2.0, 3)


def test_prefix_spec(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    assert tf._prefix("runs/e1/model.json:17") == 17
    assert tf._prefix("vjboost:frontalface:3") == 3
    assert tf._prefix("vjboost:frontalface") is None
    assert tf._prefix("runs/e1/model.json") is None


@pytest.mark.slow
def test_verify_fits_before_the_sigma_gate_with_the_recipe_options(tmp_path, monkeypatch):
    """``verify`` fits the recipe's verifier (its :data:`VERIFIER` options) on the model as
    ``--ship`` does — negatives mined without the declared σ gate — and keeps the gate."""
    import cv2
    import numpy as np
    from skimage import data

    from vjboost.cascade.verifier_fit import DEFAULT_VERIFIER, fit_verifier

    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    monkeypatch.setitem(tf.RECIPES, "face", {"sources": "webfaces"})
    opts = {"size": 24, "pixels_per_cell": 6, "weight": 0.5, "hard_per_image": 3,
            "hard_stages": 15, "per_image": 4, "copies": 1}
    monkeypatch.setitem(tf.VERIFIER, "face", opts)
    opts = {**DEFAULT_VERIFIER, **opts}  # what the recipe's options leave out is the default
    rng = np.random.default_rng(0)
    (tmp_path / "train").mkdir()
    images = rng.integers(0, 256, (12, 36, 36), dtype=np.uint8)
    box = np.array([6.0, 6.0, 24.0, 24.0])
    source = np.array(["webfaces"] * 10 + ["cbcl"] * 2)
    np.savez(tmp_path / "train" / "positives.npz", images=images, box=box, source=source)
    # low-contrast copies have windows between the declared gate (8) and OpenCV's (10)
    def low(g):
        g = g.astype(float)
        return np.clip(np.rint(120 + 0.14 * (g - g.mean())), 0, 255).astype(np.uint8)

    bgs = [data.camera(), low(data.astronaut()[..., 1]), low(data.camera())]
    for i, g in enumerate(bgs):
        cv2.imwrite(str(tmp_path / f"bg{i}.png"), g)
    (tmp_path / "backgrounds_train.txt").write_text(
        "".join(f"{tmp_path / f'bg{i}.png'}\n" for i in range(len(bgs))))
    model = load_model("vjboost:frontalface")
    assert model.params["min_std"] == 8.0
    save_model(model, tmp_path / "in.json")
    got = tf.verify(str(tmp_path / "in.json"), "face", tmp_path / "out.json", tmp_path)
    out = load_model(tmp_path / "out.json")
    assert out.params["min_std"] == 8.0 and out.stages == model.stages
    ver = out.params["verifier"]
    assert (ver["size"], ver["pixels_per_cell"], ver["weight"]) == (24, 6, 0.5)
    ungated = load_model(tmp_path / "in.json")
    del ungated.params["min_std"]
    ref = fit_verifier(ungated, images[:10], box, bgs, seed=0, **opts)
    np.testing.assert_allclose(ver["coef"], ref.coef_)
    gated = fit_verifier(model, images[:10], box, bgs, seed=0, **opts)
    assert not np.allclose(gated.coef_, ref.coef_)
    # a cascade shorter than the recipe's hard_stages (a --quick run) mines with all of it
    short = ungated.truncated(10)
    save_model(short, tmp_path / "short.json")
    tf.verify(str(tmp_path / "short.json"), "face", tmp_path / "short_out.json", tmp_path)
    whole = fit_verifier(short, images[:10], box, bgs, seed=0,
                         **dict(opts, hard_stages=None))
    np.testing.assert_allclose(load_model(tmp_path / "short_out.json").params["verifier"]["coef"],
                               whole.coef_)
    assert got["negatives"] == ref.n_negatives_ and got["hard_negatives"] == ref.n_hard_negatives_
    # people=1: the training bodies, tiled as val/det_people tiles its own, join the backgrounds
    bodies = np.stack([data.astronaut()[..., 1][r:r + 92, c:c + 64]
                       for r in (200, 300) for c in (100, 200, 300)])
    np.savez(tmp_path / "train" / "people.npz", images=bodies, group=np.arange(6))
    m2 = load_model(tmp_path / "in.json")
    with_people = tf.declare_verifier(m2, "face", tmp_path, options={"people": 1})
    tiles = tf.fd.people_tiles(bodies, np.random.default_rng([0, 13]))
    ref2 = fit_verifier(ungated, images[:10], box, bgs + tiles, seed=0, **opts)
    np.testing.assert_allclose(with_people.coef_, ref2.coef_)
    assert m2.params["min_std"] == 8.0


@pytest.mark.slow
def test_validation_by_image_kind_is_each_kinds_own_validation(monkeypatch):
    """``validate_one`` and ``validate_dlib`` report their curve on each kind of image (the
    folder: whole frames, pasted scenes): the same rates as validating that kind alone at
    its share of the budgets."""
    import numpy as np
    import pytest
    from skimage import data, transform

    from vjboost.cascade.detector import CascadeDetector

    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    astro = data.astronaut()[..., 1]
    small = (transform.rescale(astro, 0.5) * 255).astype(np.uint8)
    images = [astro, data.camera(), small, data.coins(), astro[::-1].copy()]
    paths = ["v/frames/a.png", "v/scenes/b.png", "v/scenes/c.png", "v/frames/d.png",
             "v/scenes/e.png"]
    det = CascadeDetector(load_model("vjboost:frontalface"), min_neighbors=3)
    # the faces the model finds, and one box it cannot: rates strictly between 0 and 1
    gt = {p: det.detect(g).boxes.reshape(-1, 4).astype(float)
          for p, g in zip(paths, images, strict=True)}
    gt["v/scenes/b.png"] = np.array([[10.0, 10.0, 60.0, 60.0]])
    assert sum(len(v) for v in gt.values()) >= 3
    budgets = (1, 2, 5)
    mp = sum(g.size for g in images) / 1e6

    def alone(fn, kind, **kw):
        idx = tf.image_parts(paths)[kind]
        sub = [paths[i] for i in idx]
        b = tf.part_budgets(budgets, sum(images[i].size for i in idx) / 1e6, mp, None)
        return fn(sub, [images[i] for i in idx], {p: gt[p] for p in sub}, budgets=b, **kw)

    res = tf.validate_one("vjboost:frontalface", paths, images, gt, budgets=budgets)
    assert res["parts"]["curve"] == "verified@1"  # the model's declared curve
    assert set(res["parts"]) == {"curve", "frames", "scenes"}
    assert (res["parts"]["frames"]["images"], res["parts"]["scenes"]["images"]) == (2, 3)
    for kind in ("frames", "scenes"):
        own = alone(lambda *a, **k: tf.validate_one("vjboost:frontalface", *a, **k), kind)
        assert res["parts"][kind]["rates"] == own["scores"]["verified@1"]
    rates = [r for k in ("frames", "scenes") for r in res["parts"][k]["rates"].values()]
    assert 0 < max(rates) and min(rates) < 1
    one_kind = tf.validate_one("vjboost:frontalface", paths[1:3], images[1:3],
                               {p: gt[p] for p in paths[1:3]}, budgets=budgets)
    assert "parts" not in one_kind
    pytest.importorskip("dlib")
    res = tf.validate_dlib(paths, images, gt, budgets=budgets)
    for kind in ("frames", "scenes"):
        assert res["parts"][kind]["rates"] == alone(tf.validate_dlib, kind)["min_neighbors"]


def test_validate_names_a_missing_view_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    for split in tf.SPLITS:
        argv = ["--data", str(tmp_path), "--log", str(tmp_path / "log.jsonl"), "validate",
                "vjboost:frontalface", "--split", split]
        assert tf.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"error: --data {tmp_path}: no validation view val/{split}/images.txt "
                       "(build it with tools/face_data.py)")
    assert not (tmp_path / "log.jsonl").exists()


def test_by_kind_readout_skips_face_free_kinds(monkeypatch):
    import numpy as np

    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    paths = ["v/crowds/a.png", "v/scenes/b.png", "v/nrc/c.png", "v/scenes/d.png"]
    images = [np.zeros((100, 100), np.uint8)] * 4
    face = np.array([[10.0, 10.0, 20.0, 20.0]])
    gt = {"v/crowds/a.png": face, "v/scenes/b.png": np.zeros((0, 4)),
          "v/nrc/c.png": face, "v/scenes/d.png": np.zeros((0, 4))}
    parts = tf._by_part(paths, images, gt, (2, 4), None, lambda idx, b: list(idx))
    assert set(parts) == {"crowds", "nrc"}  # the face-free scenes are no kind to read
    assert parts["crowds"]["rates"] == [0] and parts["nrc"]["rates"] == [2]
    gt["v/nrc/c.png"] = np.zeros((0, 4))
    assert tf._by_part(paths, images, gt, (2, 4), None, lambda idx, b: 0) is None


def test_hard_without_a_build_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    argv = ["--data", str(tmp_path / "none"), "--log", str(tmp_path / "log.jsonl"), "hard",
            "vjboost:frontalface"]
    assert tf.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: hard:") and "manifest.json" in err and "\n" not in err


def test_check_data_names_the_build_options_a_recipe_needs(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    want = tf.DATA_BUILDS["frontalface"]
    params = dict(want, seed=0, frame_step=2)
    (tmp_path / "manifest.json").write_text(json.dumps({"params": params}))
    tf.check_data("frontalface", tmp_path)  # built as the recipe needs: no exit
    params["nrc_extra"] = []  # a build without the frames of one teacher
    (tmp_path / "manifest.json").write_text(json.dumps({"params": params}))
    with pytest.raises(SystemExit) as e:
        tf.check_data("frontalface", tmp_path)
    msg = str(e.value)
    assert "--nrc-extra low_score,dlib_only" in msg and "nrc_extra=[]" in msg
    assert "\n" not in msg
    with pytest.raises(SystemExit, match="manifest.json not found"):
        tf.check_data("frontalface", tmp_path / "none")
