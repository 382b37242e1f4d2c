"""The vjeval command: curves and figures agree with OpenCV's own detections."""

from __future__ import annotations

import json
from pathlib import Path

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
    (tmp_path / "list.txt").write_text("astro.png\nflat.png\n")
    (tmp_path / "list_broken.txt").write_text("astro.png\nflat.png\nbroken.png\n")
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
            str(tmp / "list_broken.txt"),
            "-o",
            str(tmp / "out"),
            "--iou",
            "0.3",
        ],
    )
    assert res.exit_code == 3, res.output  # broken.png was skipped, the others scored
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
    # two runs of one name (one's results would hide the other's): each needs a --label
    res = runner.invoke(main, [str(tmp / "gt.csv"), "-m", _cascade_path(), "-m",
                               _cascade_path(), "-o", str(tmp / "o4")])
    name = Path(_cascade_path()).stem
    assert res.exit_code == 2 and res.output.strip().splitlines()[-1] == (
        f"Error: Invalid value for --label: two runs are named {name!r} (their results would "
        "be one): give each a --label")
    assert not (tmp / "o4").exists()
    res = runner.invoke(main, [str(tmp / "gt.csv"), "-m", _cascade_path(), "--label", "a",
                               "--label", "b", "-o", str(tmp / "o5")])
    assert res.exit_code == 2 and "2 labels for 1 models" in res.output


def test_vjeval_output_files_never_overwrite_its_inputs(scene):
    tmp, _ = scene
    gt = (tmp / "gt.csv").read_text()
    (tmp / "eval.json").write_text(gt)
    r = CliRunner().invoke(main, [str(tmp / "eval.json"), "--format", "csv", "-m",
                                  _cascade_path(), "--images", str(tmp / "list.txt"), "-o",
                                  str(tmp)])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.output.strip() == (f"Error: -o/--output-dir: {tmp / 'eval.json'} is the "
                                "ANNOTATIONS file; writing it would destroy that input: give "
                                "another output path")
    assert (tmp / "eval.json").read_text() == gt
    (tmp / "report.html").write_text('[{"image_id": "astro.png"}]')
    r = CliRunner().invoke(main, [str(tmp / "gt.csv"), "--detections", str(tmp / "report.html"),
                                  "-o", str(tmp)])
    assert r.exit_code == 1 and "report.html is the --detections file" in r.output
    assert (tmp / "report.html").read_text() == '[{"image_id": "astro.png"}]'


def test_vjeval_skipped_annotated_images_exit_3(scene):
    """An annotated image that is missing or unreadable: the rest is scored and written, and
    the exit status (3, as vjdetect's) and a last line say the score lacks its objects."""
    tmp, _ = scene
    (tmp / "gt2.csv").write_text("image,x,y,w,h\nastro.png,86,36,56,56\nbroken.png,1,1,9,9\n"
                                 "gone.png,1,1,9,9\ngone.png,20,20,9,9\n")
    res = CliRunner().invoke(main, [str(tmp / "gt2.csv"), "-m", _cascade_path(), "-o",
                                    str(tmp / "o3"), "--no-report", "--max-neighbors", "2"])
    assert res.exit_code == 3 and "Traceback" not in res.output, res.output
    err = res.stderr.strip().splitlines()
    assert [ln for ln in err if ln.startswith("vjeval: skipped")] == [
        f"vjeval: skipped {tmp / 'broken.png'}: not a readable image (corrupt or unsupported "
        "format)", f"vjeval: skipped {tmp / 'gone.png'}: no such file"], err
    assert err[-1].startswith("vjeval: 2 image(s) skipped, their 3 annotated object(s) left "
                              "out of the score"), err
    doc = json.loads((tmp / "o3" / "eval.json").read_text())
    assert doc["n_objects"] == 1 and len(doc["skipped"]) == 2


@pytest.mark.parametrize("name, text", [("h.csv", "image,x,y,w,h\n"), ("l.json", "[]"),
                                        ("d.json", "{}")])
def test_vjeval_no_annotations_is_said(scene, tmp_path, name, text):
    """A file listing no image says so (it used to say that no image could be read)."""
    (tmp_path / name).write_text(text)
    res = CliRunner().invoke(main, [str(tmp_path / name), "-m", _cascade_path(), "-o",
                                    str(tmp_path / "o")])
    assert res.exit_code == 2 and f"{name}: no annotations (the file lists no image)" in \
        res.output, res.output


def test_vjeval_image_root(scene, tmp_path):
    """--image-root is honoured for a CSV, and a missing folder is refused (it used to fall back
    silently to the annotation's folder)."""
    tmp, _ = scene
    (tmp_path / "gt.csv").write_text("image,x,y,w,h\nastro.png,86,36,56,56\n")
    args = [str(tmp_path / "gt.csv"), "-m", _cascade_path(), "--no-report",
            "--max-neighbors", "2"]
    res = CliRunner().invoke(main, [*args, "--image-root", str(tmp_path / "nope"), "-o",
                                    str(tmp_path / "o1")])
    assert res.exit_code == 2 and "--image-root" in res.output, res.output
    res = CliRunner().invoke(main, [*args, "--image-root", str(tmp), "-o", str(tmp_path / "o2")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "o2" / "eval.json").read_text())["n_objects"] == 1


def test_sweep_reports_the_detectors_boxes_and_scores(scene):
    # one grouping: the sweep's detections at every threshold are CascadeDetector's
    from vjboost.cascade import CascadeDetector, load_model
    from vjboost.eval import sweep_min_neighbors

    tmp, small = scene
    model = load_model(_cascade_path())
    raw = CascadeDetector(model, min_neighbors=0, grouping="none").raw_windows(small)
    name = str(tmp / "astro.png")
    gt = {name: np.array([[86, 36, 56, 56]])}
    curve = sweep_min_neighbors({name: raw}, gt, thresholds=range(0, 6),
                                image_sizes={name: (small.shape[1], small.shape[0])})
    for t in range(0, 6):
        det = CascadeDetector(model, min_neighbors=t).detect(small)
        ref = evaluate_detections({name: (det.boxes, det.scores)}, gt)
        got = curve.at(t)
        assert (got.n_detections, got.true_positives) == (len(det), ref.true_positives)
        np.testing.assert_array_equal(got.thresholds, ref.thresholds)


def test_vjeval_scores_saved_detections_and_voc_ignore(scene, tmp_path):
    from vjboost.cli.detect import main as vjdetect

    tmp, small = scene
    path = _cascade_path()
    res = CliRunner().invoke(vjdetect, [str(tmp / "astro.png"), str(tmp / "flat.png"), "-m",
                                        path, "--format", "coco", "--save",
                                        str(tmp_path / "d.json"), "--label", "face"])
    assert res.exit_code == 0, res.output
    voc = tmp_path / "voc"
    voc.mkdir()
    (voc / "astro.xml").write_text(
        "<annotation><filename>astro.png</filename><object><name>face</name><bndbox>"
        "<xmin>87</xmin><ymin>37</ymin><xmax>142</xmax><ymax>92</ymax></bndbox></object>"
        "</annotation>")
    (voc / "flat.xml").write_text("<annotation><filename>flat.png</filename></annotation>")
    out = tmp_path / "ev"
    res = CliRunner().invoke(main, [str(voc), "--image-root", str(tmp), "--detections",
                                    str(tmp_path / "d.json"), "-m", path, "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "eval.json").read_text())
    assert doc["format"] == "voc" and doc["n_objects"] == 1
    by_model, by_file = doc["models"]
    # the saved detections are vjdetect's at min_neighbors 3: the same figures as the model's
    assert by_file["all_detections"]["true_positives"] == \
        by_model["at_min_neighbors"]["true_positives"]
    assert by_file["all_detections"]["false_positives"] == \
        by_model["at_min_neighbors"]["false_positives"]
    # marking the face difficult makes it an ignore region: no object left, no false positive
    (voc / "astro.xml").write_text((voc / "astro.xml").read_text().replace(
        "<name>face</name>", "<name>face</name><difficult>1</difficult>"))
    res = CliRunner().invoke(main, [str(voc), "--image-root", str(tmp), "--detections",
                                    str(tmp_path / "d.json"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "eval.json").read_text())
    assert doc["n_objects"] == 0 and doc["n_ignore_regions"] == 1
    assert by_file["all_detections"]["true_positives"] == 1
    ev = doc["models"][0]["all_detections"]
    assert ev["true_positives"] == 0  # the hit on the face is neither a hit nor a false alarm
    assert ev["false_positives"] == by_file["all_detections"]["false_positives"]
    assert ev["n_detections"] == by_file["all_detections"]["n_detections"] - 1
    # detection files alone: the summary speaks of them only, and a model's setting given
    # without a model is said to be unused rather than dropped without a word
    assert "(detection files with every detection; IoU >= 0.3)" in res.output
    assert "apply to models" not in res.output
    res = CliRunner().invoke(main, [str(voc), "--image-root", str(tmp), "--detections",
                                    str(tmp_path / "d.json"), "-o", str(tmp_path / "ev2"),
                                    "--score", "margin"])
    assert res.exit_code == 0, res.output
    assert ("vjeval: warning: --score, --min-score and -n apply to models (-m); detection "
            "files are ranked by their own scores, every detection kept") in res.output


def test_vjeval_help_explains_framing():
    res = CliRunner().invoke(main, ["--help"])
    assert res.exit_code == 0 and "--pos-crop" in res.output and "0.3" in res.output


@pytest.mark.parametrize("score", ["margin", "sum", "neighbors", "model"])
def test_sweep_scores_detections_as_the_detector_does(scene, score):
    """vjeval's sweep with a detector's ``score``: at every threshold, the detections and their
    scores (hence the ranking behind AP and the score curve) are the detector's own."""
    from vjboost.cascade import CascadeDetector, load_model
    from vjboost.eval.run import EvaluationSet, sweep_detector
    from vjboost.io import AnnotationSet

    tmp, small = scene
    model = load_model("vjboost:frontalface")
    name = str(tmp / "astro.png")
    es = EvaluationSet(AnnotationSet({name: [[86, 36, 56, 56]]}), {name: small},
                       {name: (small.shape[1], small.shape[0])})
    det = CascadeDetector(model, min_neighbors=0, grouping="none", score=score)
    run = sweep_detector(det, es, thresholds=range(0, 4))
    for t in range(0, 4):
        ref = CascadeDetector(model, min_neighbors=t, score=score).detect(small)
        got = run.curve.at(t)
        ev = evaluate_detections({name: (ref.boxes, ref.scores)}, {name: np.array([[86, 36, 56,
                                                                                   56]])})
        assert got.n_detections == len(ref)
        np.testing.assert_array_equal(got.thresholds, ev.thresholds)
    doc = run.as_dict(1)
    assert set(doc["detection_rate_at_fp"]) == {"0", "10", "50", "100"}


def test_vjeval_score_option(scene):
    tmp, _ = scene
    res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", "vjboost:frontalface", "--images",
                                    str(tmp / "list.txt"), "-o", str(tmp / "o3"), "-n", "1",
                                    "--score", "model", "--no-report"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp / "o3" / "eval.json").read_text())
    assert doc["score"] == "model"
    m = doc["models"][0]
    assert m["detection_rate_at_fp"]["100"] == m["at_min_neighbors"]["detection_rate"]
    res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", "vjboost:frontalface",
                                    "--score", "mean"])
    assert res.exit_code == 2 and "--score" in res.output


@pytest.mark.slow
def test_vjeval_reads_each_model_where_it_runs_with_nothing_set(scene):
    from vjboost.cascade import CascadeDetector, load_model

    tmp, small = scene
    images = {str(tmp / "astro.png"): small,
              str(tmp / "flat.png"): np.full((80, 80), 128, np.uint8)}
    truth = {str(tmp / "astro.png"): np.array([[86, 36, 56, 56]])}
    face = load_model("vjboost:frontalface")

    def reference(**kw):  # the detector as a user runs it
        det = CascadeDetector(face, **kw)
        found = {p: det.detect(g) for p, g in images.items()}
        return evaluate_detections({p: (d.boxes.reshape(-1, 4), d.scores)
                                    for p, d in found.items()}, truth, iou_threshold=0.3)

    def run(out, *extra):
        res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", "vjboost:frontalface",
                                        "--images", str(tmp / "list.txt"), "-o", str(tmp / out),
                                        "--report-samples", "2", *extra])
        assert res.exit_code == 0, res.output
        return json.loads((tmp / out / "eval.json").read_text())

    declared = face.params["operating_score"]
    auto = run("auto")
    m = auto["models"][0]
    assert (auto["min_neighbors"], auto["score"], auto["min_score"]) == ("auto", "auto", "auto")
    assert (m["score"], m["min_score"]) == (declared["rank"], declared["min_score"])
    got, want = m["at_min_neighbors"], reference()
    assert got["min_neighbors"] == declared["min_neighbors"]
    assert (got["true_positives"], got["false_positives"]) == (want.true_positives,
                                                               want.false_positives)
    assert (tmp / "auto" / "report.html").stat().st_size > 1000
    # OpenCV's settings, given: the evaluation of vjboost before the default threshold
    cv = run("cv", "-n", "3", "--score", "best", "--min-score", "none")
    got, want = cv["models"][0]["at_min_neighbors"], reference(min_neighbors=3, score="best",
                                                               min_score=None)
    assert got["min_neighbors"] == 3 and cv["models"][0]["min_score"] is None
    assert (got["true_positives"], got["false_positives"]) == (want.true_positives,
                                                               want.false_positives)
    # the threshold drops detections at every point of the curve: never more false positives
    fp_auto = auto["models"][0]["curve"]["false_positives"]
    fp_all = run("all", "--min-score", "none", "--score", "verified")["models"][0]["curve"][
        "false_positives"]
    assert all(a <= b for a, b in zip(fp_auto, fp_all, strict=True)) and fp_auto != fp_all
    # a model without a default threshold keeps OpenCV's minNeighbors 3
    res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", _cascade_path(), "--images",
                                    str(tmp / "list.txt"), "-o", str(tmp / "ocv"),
                                    "--no-report"])
    assert res.exit_code == 0, res.output
    ocv = json.loads((tmp / "ocv" / "eval.json").read_text())["models"][0]
    assert ocv["at_min_neighbors"]["min_neighbors"] == 3 and ocv["score"] == "best"
    for bad, hint in ((["-n", "x"], "--min-neighbors"), (["--min-score", "y"], "--min-score")):
        res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", "vjboost:frontalface", *bad])
        assert res.exit_code == 2 and hint in res.output, res.output


def test_vjeval_help_states_the_default_models_operating_point():
    import re

    from vjboost.cascade import load_model

    declared = load_model("vjboost:frontalface").params["operating_score"]
    helps = {o: " ".join((p.help or "").split()) for p in main.params for o in p.opts}
    for option, value in (("--min-score", declared["min_score"]),
                          ("--min-neighbors", declared["min_neighbors"])):
        stated = re.search(r"\((?:as vjdetect runs it with nothing set: )?(\S+) for "
                           r"vjboost:frontalface", helps[option])
        assert stated is not None and float(stated.group(1)) == float(value), option


def test_max_neighbors_is_capped(scene):
    """--max-neighbors above MAX_SWEEP_NEIGHBORS is a usage error (10**9 took over 20 GB)."""
    from vjboost._limits import MAX_SWEEP_NEIGHBORS

    tmp, _ = scene
    res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", "vjboost:frontalface",
                                    "--max-neighbors", str(MAX_SWEEP_NEIGHBORS + 1)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "--max-neighbors" in res.output and str(MAX_SWEEP_NEIGHBORS) in res.output
    res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", "vjboost:frontalface",
                                    "--max-neighbors", "1000000000"])
    assert res.exit_code == 2 and "--max-neighbors" in res.output


def test_operating_point_past_the_sweep_is_plotted(scene, monkeypatch):
    """-n above --max-neighbors: the plot gets the operating point (it circles what the table
    reports) as eval.json's curve does; the sweep was cut at --max-neighbors before it."""
    import vjboost.eval.plot as plot

    tmp, _ = scene
    drawn = {}
    real = plot.curve_figure

    def spy(curves, **kw):
        drawn.update(curves=curves, mark=kw["mark"])
        return real(curves, **kw)

    monkeypatch.setattr(plot, "curve_figure", spy)
    res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", _cascade_path(), "--label",
                                    "alt2", "-n", "4", "--max-neighbors", "2", "--no-report",
                                    "-o", str(tmp / "out")])
    assert res.exit_code == 0, res.output
    assert drawn["mark"] == {"alt2": 4}
    assert drawn["curves"]["alt2"].min_neighbors.tolist() == [0, 1, 2, 4]
    doc = json.loads((tmp / "out" / "eval.json").read_text())
    assert doc["models"][0]["curve"]["min_neighbors"] == [0, 1, 2, 4]


def test_model_settings_error_names_the_model(scene):
    """Of several models, the error says which one a setting does not fit."""
    tmp, _ = scene
    path = _cascade_path()
    res = CliRunner().invoke(main, [str(tmp / "gt.csv"), "-m", "vjboost:frontalface", "-m",
                                    path, "--score", "verified", "-o", str(tmp / "out")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"{path}: score 'verified'" in " ".join(res.output.split())


@pytest.mark.parametrize("largest", [0, 3, 9, 40, 900, 30000])
def test_false_positive_axis_counts_from_zero(largest):
    """The curve's x axis shows whole, non-negative counts: matplotlib's symmetric-log axis
    alone labelled a set with 5 false positives -2.5×10⁻¹ and 5.25×10⁰, nothing between."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vjboost.eval.plot import plot_neighbors_curves
    from vjboost.eval.sweep import NeighborsCurve

    fp = np.array([largest * 3, largest, largest // 2, 0])
    curve = NeighborsCurve(np.arange(4), fp, np.array([1.0, 0.9, 0.8, 0.5]), [None] * 4)
    fig, ax = plt.subplots()
    try:
        plot_neighbors_curves(ax, {"m": curve}, iou=0.3, mark=1)
        fig.canvas.draw()
        lo, hi = ax.get_xlim()
        shown = [(t, lab.get_text()) for t, lab in zip(ax.get_xticks(), ax.get_xticklabels(),
                                                      strict=True) if lo <= t <= hi]
    finally:
        plt.close(fig)
    assert -1 < lo <= 0 and hi >= largest  # the operating point (largest) is in view
    assert len(shown) >= 2 and shown[0][0] == 0
    for t, text in shown:
        assert t >= 0 and t == int(t) and text == f"{int(t):,}"
