"""tools/train_face.py: shipping a trained face model under its name."""

from __future__ import annotations

import importlib
from pathlib import Path

from vjboost.cascade import load_model, save_model
from vjboost.cascade.shipped import MODELS_DIR

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def test_ship_model_replaces_every_file_of_the_name(tmp_path, monkeypatch):
    """A model without an XML twin (a multi-family cascade) must not leave the previous model's
    XML behind under its name."""
    import vjboost.cascade.shipped as shipped

    monkeypatch.syspath_prepend(str(TOOLS))
    tf = importlib.import_module("train_face")
    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setattr(shipped, "MODELS_DIR", models)
    monkeypatch.setattr(tf, "REPO", tmp_path)
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
