"""The LFW face / non-face demo runs end to end and learns something real."""

from __future__ import annotations

import re

import numpy as np
import pytest

from vjboost.cli import demo


def test_pixel_features_reference():
    rng = np.random.default_rng(0)
    w = rng.random((3, 5, 4))
    X, names = demo.pixel_features(w, n_pairs=7, seed=1)
    assert X.shape == (3, 20 + 5 * 3 + 4 * 4 + 7) == (3, len(names))
    x = w.reshape(3, -1)
    x = (x - x.mean(1, keepdims=True)) / (x.std(1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(X[:, :20], x, rtol=1e-5)
    img = x.reshape(3, 5, 4)
    np.testing.assert_allclose(X[:, 20 + 5 * 3 - 1], img[:, 4, 3] - img[:, 4, 2], rtol=1e-5)


def test_demo_runs_and_beats_chance(capsys):
    assert demo.main(["classifier", "--n-estimators", "40"]) == 0
    out = capsys.readouterr().out
    m = re.search(r"held-out accuracy (\d\.\d+)\n", out)
    assert m, out
    assert float(m.group(1)) >= 0.85
    assert "time: features" in out


@pytest.mark.slow
def test_cascade_demo_trains_and_detects(tmp_path, capsys):
    from vjboost.cascade.model_io import load_model
    from vjboost.cli import demo_cascade

    assert demo_cascade.main([str(tmp_path), "--stages", "2", "--num-neg", "100"]) == 0
    out = capsys.readouterr().out
    model = load_model(tmp_path / "model.json")
    assert 1 <= model.n_stages <= 2
    assert load_model(tmp_path / "cascade.xml").n_stages == model.n_stages
    assert (tmp_path / "astronaut.png").stat().st_size > 10_000
    assert "astronaut(): " in out and len(list((tmp_path / "backgrounds").glob("*.png"))) >= 10
    # whether the face OpenCV's own cascade finds is among the detections, said in one line
    if "astronaut(): 0 detection(s)" not in out:
        assert re.search(r"the face \(OpenCV's frontal-face cascade: \[.*\]\) is (not )?found",
                         out), out
    # the demo also runs the shipped cascade (what it finds is tested in test_shipped.py)
    m = re.search(r"shipped cascade vjboost:frontalface .* (\d+) detection\(s\)", out)
    assert m, out
    assert (tmp_path / "astronaut_shipped.png").is_file()
    # ``make demo`` twice in one clone: the second run reuses the first one's training
    assert demo_cascade.main([str(tmp_path), "--stages", "2", "--num-neg", "100"]) == 0
    out = capsys.readouterr().out
    assert "continuing the training" in out
    assert load_model(tmp_path / "model.json") == model


def test_vjdemo_usage(capsys):
    assert demo.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: vjdemo") and "vjdemo cascade" in out
    assert demo.main(["nonsense"]) == 2


@pytest.mark.parametrize("args, message", [
    (["classifier", "--seed", "-1"], "argument --seed: -1 is not in the range x>=0"),
    (["classifier", "--n-estimators", "0"], "argument --n-estimators: 0 is not in the range"),
    (["cascade", "--seed", "-1"], "argument --seed: -1 is not in the range x>=0"),
    (["cascade", "--stages", "0"], "argument --stages: 0 is not in the range 1<=x<=1000"),
    (["cascade", "--stages", "-1"], "argument --stages: -1 is not in the range"),
    (["cascade", "--num-neg", "0"], "argument --num-neg: 0 is not in the range"),
    (["cascade", "--num-neg", "1000000000"], "argument --num-neg: 1000000000 is not in the"),
])
def test_vjdemo_bad_options_are_usage_errors(capsys, tmp_path, args, message):
    with pytest.raises(SystemExit) as exc:
        demo.main([*args, *(["OUT"] if args[0] == "cascade" else [])])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "OUT").exists()


def test_vjdemo_cascade_output_folder_is_checked_before_writing(capsys, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    assert demo.main(["cascade", str(afile)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"Error: OUT: {afile} exists and is not a folder"
    assert afile.read_text() == "mine"
    # a vjtrain run's folder: refused before the demo writes its backgrounds into it
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.json").write_text('{"version": 1}')  # damaged, or another training's
    assert demo.main(["cascade", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("Error: ") and str(run) in err[0]
    assert not (run / "backgrounds").exists()
