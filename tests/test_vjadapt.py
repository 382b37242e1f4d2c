"""The vjadapt command: adapts a cascade from a labelled stream, writes a loadable model."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner
from skimage import data

from vjboost.cascade.model_io import load_model
from vjboost.cli.adapt import read_frame_boxes, vjadapt

N_FRAMES = 10


@pytest.fixture(scope="module")
def stream(tmp_path_factory) -> dict[str, Path]:
    """A face (from astronaut()) moving over a background: video, image folder, box files."""
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if not base:
        pytest.skip("this OpenCV build ships no cascades")
    root = tmp_path_factory.mktemp("vjadapt")
    ast = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)
    patch = cv2.resize(ast[40:190, 150:300], (60, 60), interpolation=cv2.INTER_AREA)
    bg = cv2.resize(cv2.cvtColor(data.coffee(), cv2.COLOR_RGB2GRAY), (160, 120),
                    interpolation=cv2.INTER_AREA)
    video = root / "clip.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (160, 120))
    (root / "frames").mkdir()
    rows, info = ["frame,x,y,w,h"], []
    for k in range(N_FRAMES):
        x, y = 10 + 7 * k, 20 + (k % 4) * 8
        f = bg.copy()
        f[y : y + 60, x : x + 60] = patch
        writer.write(cv2.cvtColor(f, cv2.COLOR_GRAY2BGR))
        cv2.imwrite(str(root / "frames" / f"f{k:02d}.png"), f)
        rows.append(f"{k},{x + 10},{y + 9},40,40")
        info.append(f"f{k:02d}.png 1 {x + 10} {y + 9} 40 40")
    writer.release()
    (root / "boxes.csv").write_text("\n".join(rows) + "\n")
    (root / "frames" / "info.dat").write_text("\n".join(info) + "\n")
    (root / "broken.avi").write_text("not a video")
    return {"root": root, "video": video, "boxes": root / "boxes.csv",
            "frames": root / "frames", "info": root / "frames" / "info.dat",
            "model": Path(base) / "haarcascade_frontalface_default.xml"}


def _run(args: list[str]):
    return CliRunner().invoke(vjadapt, [str(a) for a in args])


@pytest.mark.slow
def test_adapts_from_video_boxes_deterministically(stream, tmp_path):
    out1, out2 = tmp_path / "a.json", tmp_path / "b.json"
    common = [stream["model"], stream["video"], "--boxes", stream["boxes"], "--min-windows", "5"]
    r = _run([*common, "-o", out1])
    assert r.exit_code == 0, r.output
    assert f"{N_FRAMES} labelled" in r.output
    model = load_model(out1)
    original = load_model(stream["model"])
    assert model.n_stages == original.n_stages
    assert model.params["adapted"]["adapted_stages"] >= 1
    report = json.loads((tmp_path / "a.report.json").read_text())
    assert report["frames_labelled"] == N_FRAMES and report["positives"] > 0
    assert report["n_adapted_stages"] == model.params["adapted"]["adapted_stages"]
    assert sum(s["adapted"] for s in report["stages"]) == report["n_adapted_stages"]
    # the first --candidate-stages stages are kept
    assert all(not s["adapted"] for s in report["stages"][:5])
    changed = [k for k in range(model.n_stages)
               if model.stages[k].threshold != original.stages[k].threshold]
    assert changed and min(changed) >= 5
    # same input, same seed: the same model, byte for byte
    r = _run([*common, "-o", out2])
    assert r.exit_code == 0, r.output
    assert out1.read_bytes() == out2.read_bytes()


@pytest.mark.slow
def test_self_label_and_image_folder_to_opencv_xml(stream, tmp_path):
    out = tmp_path / "self.xml"
    r = _run([stream["model"], stream["video"], "--self-label", "--confident-neighbors", "5",
              "--min-windows", "5", "-o", out, "--report", tmp_path / "rep.json", "-q"])
    assert r.exit_code == 0, r.output
    assert load_model(out).n_stages == 25
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert rep["labels"] == "self" and rep["frames_labelled"] >= N_FRAMES // 2
    # an image folder with an info.dat
    out = tmp_path / "imgs.json"
    r = _run([stream["model"], stream["frames"], "--boxes", stream["info"], "--min-windows", "5",
              "-o", out])
    assert r.exit_code == 0, r.output
    assert load_model(out).params["adapted"]["positives"] > 0


def test_read_frame_boxes(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text("source,frame,x,y,w,h\na.avi,0,1,2,3,4\na.avi,0,5,6,7,8\nb.avi,3,0,0,0,0\n")
    boxes = read_frame_boxes(p)
    np.testing.assert_array_equal(boxes["a.avi"][0], [[1, 2, 3, 4], [5, 6, 7, 8]])
    assert boxes["b.avi"][3].shape == (0, 4)  # labelled, no object
    p.write_text("frame,x,y,w\n0,1,2,3\n")
    with pytest.raises(ValueError, match="missing \\['h'\\]"):
        read_frame_boxes(p)
    p.write_text("frame,x,y,w,h\n0,1,2,-3,4\n")
    with pytest.raises(ValueError, match="line 2: invalid entry"):
        read_frame_boxes(p)
    p.write_text("frame,x,y,w,h\n0,1,2,3,4,extra\n")
    with pytest.raises(ValueError, match="b.csv, line 2: expected 5 columns, got 6"):
        read_frame_boxes(p)


@pytest.mark.parametrize("extra, message", [
    (["--self-label"], "one of them"),                       # --boxes and --self-label
    (["--pos-iou", "1.5"], "--pos-iou: must be in (0, 1]"),
    (["--holdout", "1"], "--holdout: must be in [0, 1)"),
    (["--min-hit-rate", "0"], "--min-hit-rate"),
    (["--candidate-stages", "25"], "lower than the cascade's 25 stages"),
    (["--seed", "-5"], "'--seed': -5 is not in the range x>=0"),  # a raw ValueError once
    (["--scale-factor", "1e308"], "'--scale-factor': 1e+308 is not in the range"),
])
def test_bad_options(stream, tmp_path, extra, message):
    r = _run([stream["model"], stream["video"], "--boxes", stream["boxes"], "-o",
              tmp_path / "m.json", *extra])
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert not (tmp_path / "m.json").exists()


def test_bad_inputs(stream, tmp_path):
    out = tmp_path / "m.json"
    cases = [
        ([tmp_path / "none.xml", stream["video"], "--boxes", stream["boxes"]], "no such file"),
        ([stream["model"], tmp_path / "none.avi", "--boxes", stream["boxes"]],
         "none.avi: no such file or folder"),
        ([stream["model"], stream["root"] / "broken.avi", "--boxes", stream["boxes"]],
         "broken.avi"),
        ([stream["model"], stream["video"]], "--boxes FILE or with --self-label"),
        ([stream["model"], stream["video"], "--boxes", tmp_path / "none.csv"],
         "--boxes: " + str(tmp_path / "none.csv") + ": no such file"),
        ([stream["model"], stream["video"], "--boxes", stream["info"]],
         "needs the columns frame,x,y,w,h"),
        ([stream["model"], stream["video"], stream["frames"], "--boxes", stream["boxes"]],
         "either videos or images"),
    ]
    for args, message in cases:
        r = _run([*args, "-o", out])
        assert r.exit_code == 2, (args, r.output)
        assert message in r.output, (message, r.output)
        assert "Traceback" not in r.output
    # an empty stream: no listed frame exists in the video
    csv = tmp_path / "late.csv"
    csv.write_text("frame,x,y,w,h\n500,10,10,40,40\n")
    r = _run([stream["model"], stream["video"], "--boxes", csv, "-o", out])
    assert r.exit_code == 2 and "no labelled frame" in r.output
    # boxes framed unlike the cascade's detections: no positive
    csv.write_text("frame,x,y,w,h\n0,0,0,150,110\n1,0,0,150,110\n")
    r = _run([stream["model"], stream["video"], "--boxes", csv, "-o", out])
    assert r.exit_code == 2 and "no positive window" in r.output
    r = _run([stream["model"], stream["video"], "--boxes", stream["boxes"], "-o",
              tmp_path / "m.txt"])
    assert r.exit_code == 2 and "expected a .json or .xml" in r.output
    assert not out.exists()


def test_outputs_never_overwrite_an_input_or_each_other(stream, tmp_path):
    import shutil

    video, model = tmp_path / "v.avi", tmp_path / "m.xml"
    shutil.copy(stream["video"], video)
    shutil.copy(stream["model"], model)
    before = video.read_bytes(), model.read_bytes()
    common = [model, video, "--boxes", stream["boxes"]]
    cases = [
        (["-o", model], f"-o/--output: {model} is the MODEL file;"),
        (["-o", tmp_path / "a.json", "--report", video],
         f"--report: {video} is the input video;"),
        (["-o", tmp_path / "a.json", "--report", stream["boxes"]], "is the --boxes file;"),
        (["-o", tmp_path / "a.json", "--report", tmp_path / "a.json"],
         "is the same file as -o/--output"),
    ]
    for extra, message in cases:
        r = _run([*common, *extra])
        assert r.exit_code == 2 and message in r.output, (extra, r.output)
        assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert (video.read_bytes(), model.read_bytes()) == before
    assert not (tmp_path / "a.json").exists()


@pytest.mark.shared_data
def test_a_video_cut_short_is_adapted_on_what_it_holds_and_said(shared_dir, tmp_path):
    vid = sorted((shared_dir / "data" / "video").glob("*.avi"))[0]
    cut = tmp_path / "cut.avi"
    cut.write_bytes(vid.read_bytes()[:20000])  # the header announces every frame
    res = CliRunner().invoke(vjadapt, ["vjboost:frontalface_haar", str(cut), "--self-label",
                                       "-o", str(tmp_path / "a.json")])
    assert res.exit_code == 0, res.output
    note = [ln for ln in res.stderr.splitlines() if ln.startswith("vjadapt: warning:")]
    assert len(note) == 1 and "cut short or damaged" in note[0]
    n = int(note[0].split(": ")[3].split()[0])
    assert 0 < n < 100 and f"stream: {n} frame(s) read" in res.output
    assert load_model(tmp_path / "a.json").n_stages == 19
