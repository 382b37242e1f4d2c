"""The vjtrain command: input validation, resume after a kill, OpenCV export of what it trains."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vjboost.cascade.detector import CascadeDetector
from vjboost.cascade.model_io import load_model, model_to_dict
from vjboost.cli.train import vjtrain as main
from vjboost.io import write_vec

WIN = 16


@pytest.fixture(scope="module")
def data_dir(small_face_set) -> Path:
    root = small_face_set
    write_vec(root / "pos.vec", np.load(root / "pos.npz")["images"])
    (root / "bg.txt").write_text("\n".join(f"bg/{p.name}" for p in (root / "bg").iterdir()))
    return root


def _args(root: Path, out: Path, stages: int = 3) -> list[str]:
    return [
        str(root / "pos.npz"),
        str(root / "bg"),
        "-o",
        str(out),
        "--window",
        f"{WIN}x{WIN}",
        "--stages",
        str(stages),
        "--num-pos",
        "90",
        "--num-neg",
        "150",
        "--seed",
        "3",
        "--threads",
        "1",
        "-q",
    ]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda a, r: a.__setitem__(0, str(r / "missing")), "missing"),
        (lambda a, r: a.__setitem__(1, str(r / "empty")), "empty"),
        (lambda a, r: a.__setitem__(slice(0, 1), [a[0], "--vec", str(r / "pos.vec")]),
         "not both"),
        (lambda a, r: a.__setitem__(slice(1, 2), [a[1], "--bg", str(r / "bg.txt")]),
         "not both"),
        (lambda a, r: a.__setitem__(slice(0, 2), ["--vec", str(r / "pos.vec")]), "missing input"),
        (lambda a, r: a.extend(["--window", "24x24"]) or a.__setitem__(
            slice(0, 1), ["--vec", str(r / "pos.vec")]), "vec"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--min-hit-rate", "1.5", a[1]]), "hit"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--features", "haar,pixel_rgb", a[1]]),
         "colour windows"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--pos-crop", "0.1,0.1", a[1]]), "pos-crop"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--pos-crop", "0.5,0,0.9,1", a[1]]), "crop"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--jitter", "0", a[1]]), "jitter"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--jitter", "2", "--jitter-range", "10,0.1",
                                                  a[1]]), "jitter-range"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--jitter", "2", "--jitter-range",
                                                  "10,0.1,0.9", a[1]]), "max_shift"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--memory", "4X", a[1]]), "--memory"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--memory", "600M", a[1]]), "memory budget"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--mining-budget", "lots", a[1]]),
         "--mining-budget"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--mining-budget", "0.5", a[1]]),
         "--mining-budget"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--min-neg", "151", a[1]]), "--min-neg"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--min-std", "-1", a[1]]), "--min-std"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--object-box", "0.1,0.1,0", a[1]]),
         "--object-box"),
        (lambda a, r: a.__setitem__(slice(1, 2), ["--object-box", "0.1,0.1,0,0.8", a[1]]),
         "--object-box"),
    ],
)
def test_bad_input_is_a_message_not_a_traceback(data_dir, tmp_path, mutate, message):
    (data_dir / "empty").mkdir(exist_ok=True)
    args = _args(data_dir, tmp_path / "out")
    mutate(args, data_dir)
    res = CliRunner().invoke(main, args)
    assert res.exit_code != 0
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert message in res.output.lower(), res.output
    assert "Traceback" not in res.output


@pytest.mark.slow  # two vjtrain runs
def test_backgrounds_that_hold_the_annotated_objects_are_warned_about(tmp_path, rng):
    """POS as annotations, NEG the annotated images themselves: mining would take the objects
    as negatives; vjtrain says so before training. Other backgrounds warn of nothing. (The
    backgrounds are small: both runs end within a second, out of negatives.)"""
    scenes = tmp_path / "scenes"
    scenes.mkdir()
    for k in range(3):
        cv2.imwrite(str(scenes / f"s{k}.png"), rng.integers(0, 256, (60, 60), dtype=np.uint8))
    (scenes / "boxes.csv").write_text("image,x,y,w,h\n" + "".join(
        f"s{k}.png,10,10,24,24\n" for k in range(2)))
    other = tmp_path / "other"
    other.mkdir()
    cv2.imwrite(str(other / "o.png"), rng.integers(0, 256, (60, 60), dtype=np.uint8))
    opts = ["--window", "24x24", "--num-pos", "2", "--num-neg", "100", "--stages", "1", "-q"]
    res = CliRunner().invoke(main, [str(scenes / "boxes.csv"), str(scenes), "-o",
                                    str(tmp_path / "out1"), *opts])
    assert "Traceback" not in res.output
    assert (f"vjtrain: warning: 2 of the 3 background image(s) of {scenes} hold the objects POS "
            f"was cut from (e.g. {(scenes / 's0.png').resolve()}): mining takes their windows, "
            "objects included, as negatives") in res.output, res.output
    res = CliRunner().invoke(main, [str(scenes / "boxes.csv"), str(other), "-o",
                                    str(tmp_path / "out2"), *opts])
    assert "Traceback" not in res.output and "hold the objects" not in res.output, res.output


def test_a_window_of_other_proportions_than_the_positives_is_warned_about(tmp_path, rng):
    """100x40 crops (UIUC cars) and a square --window: every positive would be squashed; the
    warning names both proportions and a window of the crops' own. Matching proportions, or a
    --pos-crop that gives them, warn of nothing. (No background can be read: the run stops
    with its own message right after loading the positives.)"""
    crops = tmp_path / "cars"
    crops.mkdir()
    for k in range(4):
        cv2.imwrite(str(crops / f"pos-{k}.png"), rng.integers(0, 256, (40, 100), dtype=np.uint8))
    (tmp_path / "bg.txt").write_text("missing.png\n")
    base = [str(crops), str(tmp_path / "bg.txt"), "-o", str(tmp_path / "out"), "--stages", "1",
            "--num-pos", "4", "-q"]
    res = CliRunner().invoke(main, [*base, "--window", "24x24"])
    assert res.exit_code == 2 and "no usable background image" in res.output, res.output
    assert (f"vjtrain: warning: {crops}: the positives are 2.50:1 (width:height, median) but "
            "the 24x24 window is 1.00:1: every positive is stretched to the window; give a "
            "window of their proportions, e.g. 60x24 (width x height)") in res.output
    for extra in (["--window", "50x20"], ["--window", "45x20"],
                  ["--window", "24x24", "--pos-crop", "0.3,0,0.4,1"]):
        res = CliRunner().invoke(main, [*base, *extra])
        assert res.exit_code == 2 and "stretched" not in res.output, (extra, res.output)


def test_an_option_without_the_one_it_acts_with_is_said_unused(tmp_path, rng):
    """``--max-depth 3`` alone trains stumps: said on stderr, as for the other options that act
    with another one; given with it, or not given at all, nothing is said. (No background can
    be read: the run stops with its own message right after the options are checked.)"""
    crops = tmp_path / "crops"
    crops.mkdir()
    for k in range(4):
        cv2.imwrite(str(crops / f"pos-{k}.png"), rng.integers(0, 256, (16, 16), dtype=np.uint8))
    (tmp_path / "bg.txt").write_text("missing.png\n")
    base = [str(crops), str(tmp_path / "bg.txt"), "-o", str(tmp_path / "out"), "--window",
            "16x16", "--stages", "1", "--num-pos", "4", "-q"]
    res = CliRunner().invoke(main, [*base, "--max-depth", "3", "--reservoir-strategy", "wsam",
                                    "--exit-every", "3", "--sampler-budget", "50",
                                    "--sampler", "full"])
    assert res.exit_code == 2 and "no usable background image" in res.output, res.output
    assert ("vjtrain: warning: --max-depth 3 is not used: it acts with --weak-learner tree (the "
            "weak learners are stumps); add --weak-learner tree") in res.output
    assert "--reservoir-strategy wsam is not used: it acts with --reservoir" in res.output
    assert "--exit-every 3 is not used: it acts with --early-exits" in res.output
    assert "--sampler-budget 50 is not used" in res.output
    for extra in ([], ["--weak-learner", "tree", "--max-depth", "3"],
                  ["--early-exits", "--exit-every", "3"], ["--sampler-budget", "50"]):
        res = CliRunner().invoke(main, [*base, *extra])
        assert res.exit_code == 2 and "is not used" not in res.output, (extra, res.output)


def test_eval_images_apart_from_the_annotations_are_found_or_refused(tmp_path, rng):
    """COCO names its images relative to its own folder; --eval-images naming the folder that
    holds them is used as their folder (it evaluated 0 objects and counted every detection as
    a false positive), and a folder with none of them is refused before training starts. (No
    background can be read: the run stops with its own message after the --eval check.)"""
    crops, imgs, other = tmp_path / "crops", tmp_path / "imgs", tmp_path / "other"
    for d in (crops, imgs, other):
        d.mkdir()
    for k in range(4):
        cv2.imwrite(str(crops / f"pos-{k}.png"), rng.integers(0, 256, (16, 16), dtype=np.uint8))
    cv2.imwrite(str(imgs / "a.png"), rng.integers(0, 256, (60, 80), dtype=np.uint8))
    cv2.imwrite(str(other / "b.png"), rng.integers(0, 256, (60, 80), dtype=np.uint8))
    coco = {"images": [{"id": 1, "file_name": "a.png", "width": 80, "height": 60}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [5, 5, 20, 20],
                             "iscrowd": 0}],
            "categories": [{"id": 1, "name": "face"}]}
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "coco.json").write_text(json.dumps(coco))
    (tmp_path / "bg.txt").write_text("missing.png\n")
    base = [str(crops), str(tmp_path / "bg.txt"), "-o", str(tmp_path / "out"), "--window",
            "16x16", "--stages", "1", "--num-pos", "4", "-q", "--eval",
            str(tmp_path / "ann" / "coco.json")]
    res = CliRunner().invoke(main, [*base, "--eval-images", str(imgs)])
    assert res.exit_code == 2 and "no usable background image" in res.output, res.output
    from vjboost.cli.train import _eval_inputs

    gt, paths = _eval_inputs(str(tmp_path / "ann" / "coco.json"), str(imgs), None)
    assert paths == [str((imgs / "a.png").resolve())] and gt.n_objects == 1
    assert [str(Path(p).resolve()) for p in gt if len(gt[p])] == paths
    res = CliRunner().invoke(main, [*base, "--eval-images", str(other)])
    assert res.exit_code == 2, res.output
    assert (f"--eval-images {other}: none of its 1 image(s) is an annotated image of "
            f"{tmp_path / 'ann' / 'coco.json'}") in res.output, res.output
    assert "no usable background image" not in res.output


@pytest.mark.slow
def test_vec_and_bg_forms_train_the_same_cascade(data_dir, tmp_path):
    """``--vec`` with one argument takes it as the backgrounds, as ``--bg`` does."""
    vec, bg_list = str(data_dir / "pos.vec"), str(data_dir / "bg.txt")
    forms = [["--vec", vec, str(data_dir / "bg")], ["--vec", vec, "--bg", bg_list],
             [vec, "--bg", bg_list]]
    models = []
    for k, inputs in enumerate(forms):
        out = tmp_path / f"out{k}"
        res = CliRunner().invoke(main, [*inputs, *_args(data_dir, out, stages=1)[2:]])
        assert res.exit_code == 0, res.output
        models.append(load_model(out / "model.json"))
    assert models[0].n_stages == 1 and models[0].window_shape == (WIN, WIN)
    stages = [model_to_dict(m)["stages"] for m in models]
    assert stages[0] == stages[1] == stages[2]


def _run(args: list[str], **kw) -> subprocess.Popen:
    code = "import sys; from vjboost.cli.train import main; main(sys.argv[1:])"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw
    )


@pytest.mark.slow
def test_resume_after_kill_gives_the_same_cascade(data_dir, tmp_path):
    whole = _run(_args(data_dir, tmp_path / "whole"))
    assert whole.wait(timeout=600) == 0, whole.stdout.read().decode()
    # a second run, killed as soon as its first stage is checkpointed
    out = tmp_path / "killed"
    proc = _run(_args(data_dir, out))
    ckpt = out / "checkpoint.json"
    t0 = time.time()
    while time.time() - t0 < 600 and proc.poll() is None:
        try:
            if len(json.loads(ckpt.read_text()).get("stages", [])) >= 1:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.skip("training finished before it could be killed")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "model.json").exists() or ckpt.exists()
    resumed = _run([*_args(data_dir, out), "--resume"])
    log = resumed.stdout.read().decode()
    assert resumed.wait(timeout=600) == 0, log
    a = json.loads((tmp_path / "whole" / "model.json").read_text())
    b = json.loads((out / "model.json").read_text())
    assert a["stages"] == b["stages"] and a["feature_ids"] == b["feature_ids"]
    assert a["family"] == b["family"]
    # the report of a resumed run still accounts for the stages trained before the kill
    rep = json.loads((out / "report.json").read_text())
    assert len(rep["stage_seconds"]) == rep["n_stages"]
    assert rep["training_seconds"] == pytest.approx(sum(rep["stage_seconds"]))
    assert min(rep["stage_seconds"]) > 0  # checkpointed stages keep their times


def test_min_std_is_the_mining_gate_and_the_models(data_dir, tmp_path):
    res = CliRunner().invoke(main, [*_args(data_dir, tmp_path / "out", stages=1),
                                    "--min-std", "4.5"])
    assert res.exit_code == 0, res.output
    model = load_model(tmp_path / "out" / "model.json")
    assert model.params["min_std"] == 4.5 and CascadeDetector(model).min_std == 4.5
    cfg = json.loads((tmp_path / "out" / "report.json").read_text())["config"]
    assert cfg["mining"]["min_std"] == 4.5
    assert "σ gate of 10" in res.output  # its OpenCV XML twin cannot keep the lower gate


def test_object_box_is_declared_and_the_detector_reports_it(data_dir, tmp_path):
    res = CliRunner().invoke(main, [*_args(data_dir, tmp_path / "out", stages=1),
                                    "--object-box", "0.125,0.125,0.75,0.75"])
    assert res.exit_code == 0, res.output
    model = load_model(tmp_path / "out" / "model.json")
    assert model.params["object_box"] == [0.125, 0.125, 0.75, 0.75]
    assert CascadeDetector(model).object_box == (0.125, 0.125, 0.75, 0.75)
    assert "not this model's --object-box" in res.output  # its OpenCV XML twin reports windows


def test_mining_budget_and_min_neg_reach_the_trainer(data_dir, tmp_path):
    """The options' wiring (what the budget does is tested on the trainer, test_negatives.py:
    a stage here fills from one batch of units, whatever the budget)."""
    res = CliRunner().invoke(main, [*_args(data_dir, tmp_path / "out", stages=2),
                                    "--mining-budget", "1.5K", "--min-neg", "10"])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert rep["config"]["mining_budget"] == 1500 and rep["config"]["min_neg"] == 10
    assert [m["budget_reached"] for m in rep["mining"]] == [False, False]


def test_exported_cascade_matches_opencv(data_dir, tmp_path):
    if not hasattr(cv2, "CascadeClassifier"):
        pytest.skip("this OpenCV build has no CascadeClassifier")
    res = CliRunner().invoke(main, _args(data_dir, tmp_path / "out", stages=2))
    assert res.exit_code == 0, res.output
    xml = tmp_path / "out" / "cascade.xml"
    ours = CascadeDetector(load_model(tmp_path / "out" / "model.json"), min_neighbors=0)
    cv = cv2.CascadeClassifier(str(xml))
    assert not cv.empty()
    from skimage import data

    gray = cv2.resize(cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY), (200, 200))
    got = sorted(map(tuple, ours.detect(gray).boxes.tolist()))
    ref = sorted(map(tuple, np.asarray(cv.detectMultiScale(gray, 1.1, 0)).reshape(-1, 4).tolist()))
    assert len(ref) > 0 and got == ref


def test_jitter_and_shuffle_grow_and_reorder_the_pool(data_dir, tmp_path):
    """--jitter N adds N copies per positive, --mirror doubles, --shuffle-positives permutes."""
    from vjboost.cascade.positives import Jitter, load_positives
    from vjboost.cli.train import _load_positives

    src = str(data_dir / "pos.npz")
    jit = Jitter(2, seed=3)
    plain, images = _load_positives(src, (WIN, WIN), True, print, None, jit)
    assert images == ()  # an .npz: no annotated image
    want = load_positives(src, (WIN, WIN), jitter=jit, mirror=True).samples
    np.testing.assert_array_equal(plain, want)
    shuffled, _ = _load_positives(src, (WIN, WIN), True, print, None, jit, shuffle_seed=3)
    assert shuffled.shape == (100 * 3 * 2, WIN, WIN)
    assert not np.array_equal(shuffled, plain)
    key = lambda a: np.sort(a.reshape(len(a), -1).view(f"V{WIN * WIN}").ravel())  # noqa: E731
    np.testing.assert_array_equal(key(shuffled), key(plain))  # the same windows, reordered
    res = CliRunner().invoke(main, [*_args(data_dir, tmp_path / "out", stages=1), "--jitter", "2",
                                    "--mirror", "--shuffle-positives"])
    assert res.exit_code == 0, res.output
    assert "positives: 600 " in res.output


@pytest.mark.slow
def test_early_exits_from_the_centred_positives(data_dir, tmp_path):
    """--early-exits: the same stages as without, exits set from the positives without their
    jittered copies (none of them lost at --exit-loss 0), and no OpenCV XML."""
    from vjboost.cascade.exits import early_exits
    from vjboost.cascade.positives import Jitter
    from vjboost.cascade.runner import CascadeRunner
    from vjboost.cli.train import _load_positives

    plain = [*_args(data_dir, tmp_path / "plain", stages=2), "--jitter", "1", "--mirror"]
    res = CliRunner().invoke(main, plain)
    assert res.exit_code == 0, res.output
    fast = [*_args(data_dir, tmp_path / "fast", stages=2), "--jitter", "1", "--mirror",
            "--early-exits", "--exit-every", "1", "--exit-loss", "0"]
    res = CliRunner().invoke(main, fast)
    assert res.exit_code == 0, res.output
    assert "OpenCV cannot run early exits" in res.output
    assert not (tmp_path / "fast" / "cascade.xml").exists()
    base = load_model(tmp_path / "plain" / "model.json")
    model = load_model(tmp_path / "fast" / "model.json")
    assert model.n_exits > 0 and model.without_exits() == base
    centred, _ = _load_positives(str(data_dir / "pos.npz"), (WIN, WIN), True, print)
    assert model.params["early_exits"]["positives"] == len(centred)
    kept = CascadeRunner(base).accepts(centred)
    assert CascadeRunner(model).accepts(centred)[kept].all()
    assert model.stages == early_exits(base, centred).stages
    jittered, _ = _load_positives(str(data_dir / "pos.npz"), (WIN, WIN), True, print, None,
                                  Jitter(1, seed=3))
    assert len(jittered) == 2 * len(centred)


def test_verifier_over_the_memory_budget_says_what_vjtrain_can_change(data_dir, tmp_path,
                                                                      monkeypatch):
    # the verifier's negatives are the cascade's false alarms: over the budget, the line names
    # vjtrain's options (not fit_verifier's parameters); the stages stay in the checkpoint
    import vjboost._memory as M

    real = M.check_memory

    def tight(nbytes, what, **kw):
        if "verifier" in what:
            kw["budget"] = 1000
        return real(nbytes, what, **kw)

    monkeypatch.setattr(M, "check_memory", tight)
    monkeypatch.setattr("vjboost.cascade.verifier.check_memory", tight)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, [*_args(data_dir, out, stages=2), "--verifier"])
    assert res.exit_code != 0
    line = res.output.strip().splitlines()[-1]
    assert "--verifier:" in line and "over the memory budget of 1000 B" in line, line
    assert "--stages" in line and "--resume" in line and "hard_per_image" not in line
    assert "Traceback" not in res.output
    assert (out / "checkpoint.json").is_file()


@pytest.mark.slow
def test_verifier_is_fitted_declared_and_changes_only_the_ranking(data_dir, tmp_path):
    import cv2 as _cv2

    out = tmp_path / "out"
    res = CliRunner().invoke(main, [*_args(data_dir, out, stages=3), "--verifier"])
    assert res.exit_code == 0, res.output
    assert "verifier:" in res.output and "OpenCV's XML holds no verifier" in res.output
    model = load_model(out / "model.json")
    assert model.params["verifier"]["descriptor"] == "fhog"
    assert model.params["operating_score"] == {"min_neighbors": 1, "rank": "verified"}
    info = json.loads((out / "report.json").read_text())["verifier"]
    assert info["positives"] > 0 and info["negatives"] > 0
    # the same cascade without it: nothing set, both return the same detections
    plain = model.with_stages(model.stages, params={
        k: v for k, v in model.params.items() if k not in ("verifier", "operating_score")})
    image = _cv2.imread(str(sorted((data_dir / "bg").iterdir())[0]), _cv2.IMREAD_GRAYSCALE)
    a, b = CascadeDetector(model, threads=1).detect(image), CascadeDetector(plain, threads=1)\
        .detect(image)
    np.testing.assert_array_equal(a.boxes, b.boxes)
    np.testing.assert_array_equal(a.scores, b.scores)
    # ranked by the model: every group, rescored by the verifier it declares
    ranked = CascadeDetector(model, score="model", min_neighbors=1, threads=1)
    margins = CascadeDetector(plain, score="margin", min_neighbors=1, threads=1).detect(image)
    got = ranked.detect(image)
    np.testing.assert_array_equal(got.boxes, margins.boxes)
    np.testing.assert_allclose(got.scores,
                               ranked.verifier.rescore(image, margins.boxes, margins.scores))
    assert cv2.CascadeClassifier(str(out / "cascade.xml")).empty() is False
