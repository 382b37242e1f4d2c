"""The vjdetect command line (click's CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vjboost.cascade import CascadeDetector, load_model, save_model, write_opencv_xml
from vjboost.cascade.synthetic import random_cascade
from vjboost.cli.detect import default_model_path, main


@pytest.fixture(scope="module")
def face_png(tmp_path_factory):
    skd = pytest.importorskip("skimage.data")
    d = tmp_path_factory.mktemp("imgs")
    bgr = cv2.cvtColor(skd.astronaut(), cv2.COLOR_RGB2BGR)
    cv2.imwrite(str(d / "astronaut.png"), bgr)
    cv2.imwrite(str(d / "small.jpg"), cv2.resize(bgr, (256, 256)))
    return d


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def model_xml(tmp_path_factory):
    p = default_model_path()
    if p is not None:
        return p
    out = tmp_path_factory.mktemp("m") / "m.xml"
    write_opencv_xml(random_cascade(seed=0), out)
    return str(out)


def test_image_json_and_annotation(face_png, model_xml, tmp_path):
    out = tmp_path / "ann"
    r = CliRunner().invoke(main, [str(face_png / "astronaut.png"), "--model", model_xml,
                                  "-o", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    recs = _lines(r.stdout)
    img = cv2.imread(str(face_png / "astronaut.png"))
    ref = CascadeDetector(load_model(model_xml)).detect(img)
    assert [(d["x"], d["y"], d["w"], d["h"]) for d in recs] == [tuple(b) for b in
                                                                ref.boxes.tolist()]
    assert all(set(d) >= {"source", "frame", "x", "y", "w", "h", "score"} for d in recs)
    assert (out / "astronaut_det.png").is_file()
    assert "1 input(s) read" in r.stderr


def test_annotated_copies_never_replace_an_input(face_png, model_xml, tmp_path):
    """``-o`` the input folder: a.png's copy takes another name than the input a_det.png."""
    src = (face_png / "small.jpg").read_bytes()
    for name in ("a.jpg", "a_det.jpg"):
        (tmp_path / name).write_bytes(src)
    r = CliRunner().invoke(main, [str(tmp_path), "--model", model_xml, "-o", str(tmp_path),
                                  "--no-progress"])
    assert r.exit_code == 0, r.output
    assert len(_lines(r.stdout)) > 0 and "2 input(s) read" in r.stderr
    assert (tmp_path / "a.jpg").read_bytes() == src == (tmp_path / "a_det.jpg").read_bytes()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["a.jpg", "a_det.jpg", "a_det_1.jpg",
                                                          "a_det_det.jpg"]


def test_folder_glob_missing_and_json_file(face_png, model_xml, tmp_path):
    (face_png / "notes.txt").write_text("not an image")
    bad = face_png / "broken.png"
    bad.write_bytes(b"\x89PNG garbage")
    js = tmp_path / "d.jsonl"
    r = CliRunner().invoke(main, [str(face_png), str(face_png / "*.jpg"), "missing.png",
                                  "--model", model_xml, "--json", str(js), "--progress"])
    assert r.exit_code == 3, r.output  # some inputs skipped, the others processed
    recs = _lines(js.read_text())
    assert {Path(d["source"]).name for d in recs} <= {"astronaut.png", "small.jpg"}
    assert "skipped missing.png" in r.stderr and "broken.png" in r.stderr
    assert "3 input(s) read" in r.stderr  # astronaut, small (folder) and small (glob)
    bad.unlink()


def test_nothing_readable_exits_nonzero(tmp_path, model_xml):
    (tmp_path / "x.png").write_bytes(b"nope")
    r = CliRunner().invoke(main, [str(tmp_path / "x.png"), "nothing*.png", "--model", model_xml])
    assert r.exit_code == 1
    assert "0 input(s) read" in r.stderr and "2 skipped" in r.stderr


def test_bad_model_and_options(tmp_path, face_png):
    (tmp_path / "m.xml").write_text("<?xml version='1.0'?><opencv_storage><c>")
    r = CliRunner().invoke(main, [str(face_png / "small.jpg"), "--model", str(tmp_path / "m.xml")])
    assert r.exit_code == 2 and "m.xml: malformed or truncated XML" in r.output
    r = CliRunner().invoke(main, [str(face_png / "small.jpg"), "--scale-factor", "0.9",
                                  "--model", str(tmp_path / "m.xml")])
    assert r.exit_code == 2
    m = tmp_path / "ok.json"
    save_model(random_cascade(seed=1), m)
    r = CliRunner().invoke(main, [str(face_png / "small.jpg"), "--model", str(m),
                                  "--min-size", "axb"])
    assert r.exit_code == 2 and "--min-size" in r.output


def test_default_model_is_the_shipped_cascade_and_names_resolve(face_png):
    from vjboost.cascade.shipped import MODELS_DIR

    img = cv2.imread(str(face_png / "astronaut.png"))
    want = CascadeDetector(load_model(MODELS_DIR / "frontalface.json")).detect(img)
    for extra in ([], ["--model", "vjboost:frontalface"]):
        r = CliRunner().invoke(main, [str(face_png / "astronaut.png"), *extra, "--no-progress"])
        assert r.exit_code == 0, r.output
        got = [(d["x"], d["y"], d["w"], d["h"]) for d in _lines(r.stdout)]
        assert got == [tuple(b) for b in want.boxes.tolist()] and got
    r = CliRunner().invoke(main, [str(face_png / "small.jpg"), "--model", "vjboost:nope"])
    assert r.exit_code == 2 and "no such shipped model" in r.output
    assert "vjboost:frontalface" in r.output  # the message lists what is shipped


def test_own_model_format_and_params(face_png, tmp_path):
    m = random_cascade("LBP", seed=3)
    p = tmp_path / "m.json"
    save_model(m, p)
    r = CliRunner().invoke(main, [str(face_png / "small.jpg"), "--model", str(p), "-n", "0",
                                  "--min-size", "30x30", "--scale-factor", "1.3"])
    assert r.exit_code == 0, r.output
    img = cv2.imread(str(face_png / "small.jpg"))
    ref = CascadeDetector(m, min_neighbors=0, min_size=(30, 30), scale_factor=1.3).detect(img)
    assert len(_lines(r.stdout)) == len(ref) > 0


def test_score_kinds_operating_point_and_stages(face_png):
    """--score / --min-score / --stages: the detector's scores, computed here from its raw
    windows by hand (margin: the group's windows' last-stage scores less the threshold), with
    the Haar face model, which declares the margin (the default one's verified score:
    tests/test_verifier.py)."""
    from vjboost.boxes import WindowGroups
    from vjboost.cascade import operating_score

    model = load_model("vjboost:frontalface_haar")
    assert operating_score(model) == {"min_neighbors": 1, "rank": "margin"}
    img = cv2.imread(str(face_png / "astronaut.png"))
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    for stages in (None, 12):
        det = CascadeDetector(model, min_neighbors=1, score="model", n_stages=stages)
        assert det.score == "margin"
        got = det.detect(img)
        raw_b, raw_s = det.raw_windows(gray)
        g = WindowGroups(raw_b, raw_s)
        thr = model.stages[(stages or model.n_stages) - 1].threshold
        kept = set(map(tuple, got.boxes.tolist()))
        for c in range(len(g.counts_)):
            if tuple(g.averages_[c]) in kept:
                i = got.boxes.tolist().index(list(g.averages_[c]))
                assert got.scores[i] == pytest.approx((raw_s[g.labels_ == c] - thr).sum())
                assert got.neighbors[i] == g.counts_[c]
        assert len(got) > 0
    full = CascadeDetector(model, min_neighbors=1, score="margin").detect(img)
    cut = float(np.median(full.scores))
    args = [str(face_png / "astronaut.png"), "-m", "vjboost:frontalface_haar", "-n", "1",
            "--score", "model", "--no-progress"]
    r = CliRunner().invoke(main, [*args, "--min-score", str(cut)])
    assert r.exit_code == 0, r.output
    recs = _lines(r.stdout)
    want = full.scores[full.scores >= cut]
    assert sorted(d["score"] for d in recs) == pytest.approx(sorted(want.tolist())) and recs
    r = CliRunner().invoke(main, [*args, "--stages", "12"])
    assert r.exit_code == 0, r.output
    want12 = CascadeDetector(model, min_neighbors=1, score="margin", n_stages=12).detect(img)
    assert len(_lines(r.stdout)) == len(want12) >= len(full)
    for bad, hint in ((["--score", "mean"], "--score"), (["--stages", "0"], "--stages"),
                      (["--stages", "99"], "n_stages")):
        r = CliRunner().invoke(main, [*args, *bad])
        assert r.exit_code == 2 and hint in r.output, r.output
    with pytest.raises(ValueError, match="min_score"):
        CascadeDetector(model, min_score=float("nan"))
    with pytest.raises(ValueError, match="score"):
        CascadeDetector(model, score="mean")
    for bad in ({"rank": "mean"}, {"min_neighbors": -1}, {"min_neighbors": True}):
        odd = model.with_stages(model.stages, params={**model.params, "operating_score": bad})
        with pytest.raises(ValueError, match="operating_score"):
            CascadeDetector(odd, score="model")


def test_video_file(tmp_path, model_xml):
    skd = pytest.importorskip("skimage.data")
    frame = cv2.resize(cv2.cvtColor(skd.astronaut(), cv2.COLOR_RGB2BGR), (160, 160))
    vid = tmp_path / "clip.avi"
    w = cv2.VideoWriter(str(vid), cv2.VideoWriter_fourcc(*"MJPG"), 10, (160, 160))
    if not w.isOpened():
        pytest.skip("no MJPG video writer in this OpenCV build")
    for k in range(6):
        w.write(np.roll(frame, 3 * k, axis=1))
    w.release()
    out = tmp_path / "o"
    r = CliRunner().invoke(main, [str(vid), "--model", model_xml, "-o", str(out),
                                  "--every", "2", "--min-neighbors", "0"])
    assert r.exit_code == 0, r.output
    frames = {d["frame"] for d in _lines(r.stdout)}
    assert frames <= {0, 2, 4}
    assert "6 frame(s)" in r.stderr
    cap = cv2.VideoCapture(str(out / "clip_det.avi"))
    assert cap.isOpened() and int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 6
    cap.release()
    assert sorted(p.name for p in out.iterdir()) == ["clip_det.avi"]  # no temporary file left
    assert "warning" not in r.stderr
    # a video refused part-way (its frames over --max-pixels) leaves no annotated video behind
    out2 = tmp_path / "o2"
    r = CliRunner().invoke(main, [str(vid), "--model", model_xml, "-o", str(out2),
                                  "--max-pixels", "1000"])
    assert r.exit_code == 1 and "max-pixels" in r.stderr, r.output
    assert not out2.exists() or not any(out2.iterdir())


@pytest.mark.shared_data
def test_a_video_cut_short_is_read_as_far_as_it_goes_and_said(shared_dir, model_xml, tmp_path):
    vid = sorted((shared_dir / "data" / "video").glob("*.avi"))[0]
    cut = tmp_path / "cut.avi"
    cut.write_bytes(vid.read_bytes()[:20000])  # the header announces every frame
    out = tmp_path / "o"
    r = CliRunner().invoke(main, [str(cut), "--model", model_xml, "-o", str(out)])
    assert r.exit_code == 3, r.output  # as a skipped input: the detections do not cover it all
    frames = {d["frame"] for d in _lines(r.stdout)}
    note = [ln for ln in r.stderr.splitlines() if ln.startswith("vjdetect: warning:")]
    assert len(note) == 1 and "cut short or damaged" in note[0], r.stderr
    n = int(note[0].split(": ")[3].split()[0])
    assert 0 < n < 100 and frames <= set(range(n)) and f"({n} frame(s))" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["cut_det.avi"]


def test_unopenable_camera_is_counted(model_xml, tmp_path):
    # alone: one line and a non-zero exit; in a batch: skipped and counted
    r = CliRunner().invoke(main, ["97", "--model", model_xml, "--max-frames", "1"])
    assert r.exit_code == 1
    assert "Error: camera 97: cannot open the camera" in r.stderr and "Traceback" not in r.output
    (tmp_path / "x.png").write_bytes(cv2.imencode(".png", np.zeros((40, 40), np.uint8))[1])
    r = CliRunner().invoke(main, ["97", str(tmp_path / "x.png"), "--model", model_xml,
                                  "--max-frames", "1"])
    assert r.exit_code == 3  # the camera skipped, the image processed
    assert "skipped camera 97: cannot open the camera" in r.stderr


@pytest.mark.shared_data
def test_shared_video(shared_dir, model_xml):
    vid = sorted((shared_dir / "data" / "video").glob("*.avi"))[0]
    r = CliRunner().invoke(main, [str(vid), "--model", model_xml, "--max-frames", "10"])
    assert r.exit_code == 0, r.output
    assert "10 frame(s)" in r.stderr


def test_module_entry_point():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "vjboost.cli.detect", "--help"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "camera" in r.stdout


def test_a_damaged_image_ends_in_one_line(tmp_path, model_xml):
    # OpenCV's decoder warns on its own about a truncated PNG; the tool's line is the only one
    import subprocess
    import sys

    ok, png = cv2.imencode(".png", np.arange(64 * 64, dtype=np.uint8).reshape(64, 64))
    (tmp_path / "cut.png").write_bytes(png.tobytes()[: png.size // 2])
    r = subprocess.run([sys.executable, "-m", "vjboost.cli.detect", str(tmp_path / "cut.png"),
                        "--model", model_xml], capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 1
    assert len(lines) == 1 and "cut.png" in lines[0] and "not a readable image" in lines[0]


def test_a_damaged_video_ends_in_one_line(tmp_path, model_xml):
    # FFmpeg logs "moov atom not found" through its own logger; the tool's line is the only one
    import subprocess
    import sys

    (tmp_path / "text.mp4").write_text("not a video at all\n" * 50)
    r = subprocess.run([sys.executable, "-m", "vjboost.cli.detect", str(tmp_path / "text.mp4"),
                        "--model", model_xml], capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 1
    assert len(lines) == 1 and "text.mp4: cannot open the video" in lines[0], r.stderr


def test_wrong_messages_fixed(tmp_path, model_xml):
    """An empty argument is not the current folder; an empty list is an image list; a BMP with
    a negative width is damaged (its width was read as 4294967291 columns)."""
    (tmp_path / "list.txt").write_text("# nothing\n")
    bmp = bytearray(cv2.imencode(".bmp", np.zeros((4, 4), np.uint8))[1].tobytes())
    bmp[18:22] = (-5).to_bytes(4, "little", signed=True)
    (tmp_path / "neg.bmp").write_bytes(bytes(bmp))
    for arg, message in (("", "Error: '': an empty argument names no file"),
                         (str(tmp_path / "list.txt"), "list.txt: the image list is empty"),
                         (str(tmp_path / "neg.bmp"), "neg.bmp: damaged BMP file")):
        r = CliRunner().invoke(main, [arg, "--model", model_xml])
        assert r.exit_code == 1 and "Traceback" not in r.output, r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], r.stderr


def _check_option(face_png, option: str, good, bad, message: str,
                  extra: tuple[str, ...] | list[str] = ()) -> None:
    """``vjdetect OPTION value`` detects what ``CascadeDetector(**kw)`` does, for every
    ``(value, kw)`` of ``good``, on the default model; every value of ``bad`` is a usage error
    (exit 2) whose message holds ``message``. ``extra``: further arguments of every run (their
    settings in ``kw`` too)."""
    model = load_model("vjboost:frontalface")
    gray = cv2.cvtColor(cv2.imread(str(face_png / "astronaut.png")), cv2.COLOR_BGR2GRAY)
    args = [str(face_png / "astronaut.png"), "-m", "vjboost:frontalface", "-n", "1",
            "--no-progress", *extra]
    for value, kw in good(model):
        r = CliRunner().invoke(main, [*args, option, value])
        assert r.exit_code == 0, r.output
        want = CascadeDetector(model, min_neighbors=1, **kw).detect(gray)
        assert sorted((d["x"], d["y"], d["w"], d["h"]) for d in _lines(r.stdout)) == sorted(
            map(tuple, want.boxes.tolist())) and len(want)
    for value in bad:
        r = CliRunner().invoke(main, [*args, option, value])
        assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output


def test_nms_iou_option(face_png):
    """--nms-iou sets the NMS grouping's overlap (vjdetect had no way to set it); with another
    grouping, which never reads it, it is a usage error."""
    _check_option(face_png, "--nms-iou", lambda m: [
        ("0.3", {"grouping": "nms", "nms_iou": 0.3}),
        ("0.05", {"grouping": "nms", "nms_iou": 0.05}),
        ("0.8", {"grouping": "nms", "nms_iou": 0.8})], ("x", "-0.1", "1.5"), "--nms-iou",
        extra=["--grouping", "nms"])
    r = CliRunner().invoke(main, [str(face_png / "small.jpg"), "--nms-iou", "0.5"])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "--nms-iou applies to --grouping nms, not --grouping opencv" in r.output


@pytest.mark.slow
def test_coarse_to_fine_option(face_png):
    _check_option(face_png, "--coarse-to-fine", lambda m: [
        ("model", {"coarse_to_fine": m.params["coarse_to_fine"]}),
        ("off", {"coarse_to_fine": None}), ("0", {"coarse_to_fine": 0}),
        ("3", {"coarse_to_fine": 3})], ("x", "-1", "99"), "coarse")


def test_min_std_option(face_png):
    _check_option(face_png, "--min-std", lambda m: [
        ("model", {"min_std": m.params["min_std"]}), ("10", {"min_std": 10.0}),
        ("0", {"min_std": 0.0})], ("x", "-1", "nan"), "min")


def test_help_states_what_the_default_model_declares():
    # the help names the default model's declared scan, σ gate, share and default operating
    # point; a new model must not leave them stale
    import re

    params = load_model("vjboost:frontalface").params
    helps = {o: " ".join((p.help or "").split()) for p in main.params for o in p.opts}
    for option, value in (("--coarse-to-fine", params["coarse_to_fine"]),
                          ("--min-std", params["min_std"]),
                          ("--suppress-inside", params["suppress_inside"]),
                          ("--min-score", params["operating_score"]["min_score"]),
                          ("--min-neighbors", params["operating_score"]["min_neighbors"]),
                          ("--min-size", params["object_box"][2])):
        stated = re.search(r"\((\S+) for vjboost:frontalface", helps[option])
        assert stated is not None, option
        assert float(stated.group(1)) == float(value), option


@pytest.mark.slow
def test_unset_settings_run_the_models_default_operating_point(face_png):
    img = cv2.imread(str(face_png / "astronaut.png"))
    model = load_model("vjboost:frontalface")
    t = model.params["operating_score"]["min_score"]
    args = [str(face_png / "astronaut.png"), "--no-progress"]

    def boxes(extra):
        r = CliRunner().invoke(main, [*args, *extra])
        assert r.exit_code == 0, r.output
        return [(d["x"], d["y"], d["w"], d["h"], d["score"]) for d in _lines(r.stdout)]

    default = boxes([])
    assert default == boxes(["-n", "1", "--score", "verified", "--min-score", str(t)])
    assert default == boxes(["-n", "auto", "--score", "auto", "--min-score", "auto"]) and default
    curve = CascadeDetector(model, min_neighbors=1, score="model", min_score=None).detect(img)
    whole = boxes(["--min-score", "none"])
    assert [b[:4] for b in whole] == [tuple(b) for b in curve.boxes.tolist()]
    assert len(whole) > len(default) and all(b[4] >= t for b in default)
    # the Haar twin declares no threshold: OpenCV's minNeighbors 3 and best-window scores
    haar = boxes(["-m", "vjboost:frontalface_haar"])
    want = CascadeDetector(load_model("vjboost:frontalface_haar"), min_neighbors=3,
                           score="best", min_score=None).detect(img)
    assert [b[:4] for b in haar] == [tuple(b) for b in want.boxes.tolist()]
    for bad, hint in ((["-n", "x"], "--min-neighbors"), (["-n", "-1"], "--min-neighbors"),
                      (["--min-score", "x"], "--min-score"),
                      (["--min-score", "nan"], "--min-score"),
                      (["--min-score", "inf"], "--min-score")):
        r = CliRunner().invoke(main, [*args, *bad])
        assert r.exit_code == 2 and hint in r.output, r.output


def test_a_name_longer_than_name_max_is_one_line(tmp_path, model_xml):
    cv2.imwrite(str(tmp_path / "ok.png"), np.full((40, 40), 128, np.uint8))
    long = str(tmp_path / ("L" * 300 + ".png"))
    r = CliRunner().invoke(main, [long, "--model", model_xml])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "File name too long" in r.stderr
    # in a batch it is one skipped input, the others are read
    r = CliRunner().invoke(main, [long, str(tmp_path / "ok.png"), "--model", model_xml])
    assert r.exit_code == 3 and "1 input(s) read" in r.stderr and "1 skipped" in r.stderr
    # any other path argument: one line naming it
    r = CliRunner().invoke(main, [str(tmp_path / "ok.png"), "--model", model_xml, "--json",
                                  str(tmp_path / ("J" * 300))])
    assert r.exit_code != 0 and "Traceback" not in r.output and r.exception is not None
    assert isinstance(r.exception, SystemExit), r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("Error")]
    assert len(lines) == 1 and "J" * 300 in lines[0], r.output


def test_voc_output_of_a_file_name_that_is_not_utf8(tmp_path, model_xml):
    name = tmp_path / ("bad" + b"\xff".decode("utf-8", "surrogateescape") + ".png")
    cv2.imwrite(str(tmp_path / "x.png"), np.full((40, 40), 128, np.uint8))
    (tmp_path / "x.png").rename(name)
    r = CliRunner().invoke(main, [str(name), "--model", model_xml, "--format", "voc",
                                  "--save", str(tmp_path / "voc")])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    xml = (tmp_path / "voc").glob("*.xml")
    (only,) = list(xml)
    assert only.name == name.stem + ".xml"  # the file keeps the image's own name
    assert "<filename>bad\\xff.png</filename>" in only.read_text(encoding="utf-8")


def test_closed_stdout_is_one_output_error(monkeypatch):
    import sys

    from vjboost._errors import OutputError
    from vjboost.io import open_detection_writer

    monkeypatch.setattr(sys, "stdout", None)  # what Python makes of a closed descriptor 1
    for fmt in ("jsonl", "coco"):
        with pytest.raises(OutputError, match="--save: standard output is closed"):
            open_detection_writer("-", format=fmt, what="--save")


@pytest.mark.parametrize("args, message", [
    (["--min-size", "20x"], "expected N or WxH, got '20x'"),
    (["--min-size", "x20"], "expected N or WxH, got 'x20'"),
    (["--max-size", "20x20x20"], "expected N or WxH"),
    (["--min-size", "100", "--max-size", "50"], "100 is larger than --max-size 50"),
    (["--min-size", "30x60", "--max-size", "40x40"], "30x60 is larger than --max-size 40x40"),
])
def test_sizes_are_parsed_strictly(tmp_path, model_xml, args, message):
    cv2.imwrite(str(tmp_path / "a.png"), np.full((40, 40), 128, np.uint8))
    r = CliRunner().invoke(main, [str(tmp_path / "a.png"), "--model", model_xml, *args])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert message in r.output and args[0] in r.output


def test_one_size_parser():
    import click

    from vjboost.cli._command import parse_size
    from vjboost.cli.train import _parse_window

    assert parse_size("20", "--min-size") == (20, 20)
    assert parse_size(" 30X40 ", "--min-size") == parse_size("30*40", "--min-size") == (30, 40)
    for bad in ("20x", "x20", "", "a", "-5", "2x3x4", "1e3"):
        with pytest.raises(click.BadParameter):
            parse_size(bad, "--min-size")
        with pytest.raises(click.BadParameter):
            _parse_window(bad)
    assert _parse_window("19x24") == (24, 19)
    with pytest.raises(click.BadParameter, match="sides >= 3, got .2x24."):
        _parse_window("2x24")
