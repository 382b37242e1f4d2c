"""Hostile and unlucky inputs end in vjboost's own one-line errors, never a raw exception.

Model files (JSON and OpenCV XML: crafted cases and hypothesis fuzzing), output folders held by
one run, write failures (a full disk simulated by ``ENOSPC``), damaged checkpoints, oversized
images in batches, and the training memory budget.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_limits import _good, _png_header_only

import vjboost._io as vio
from vjboost._errors import InputError, LimitError, OutputError, VJBoostError
from vjboost._io import LOCK_NAME, OutputFolder, atomic_write, check_output_path
from vjboost._limits import Limits
from vjboost.cascade.model import CascadeModel
from vjboost.cascade.model_io import load_model, model_from_bytes, model_to_dict, save_model
from vjboost.cascade.opencv_xml import to_opencv_xml
from vjboost.cascade.synthetic import random_cascade

# ------------------------------------------------------------------------------------------------
# Model files
# ------------------------------------------------------------------------------------------------


def _haar_doc() -> dict:
    m = random_cascade(seed=1, window=(12, 12), n_stages=2, trees_per_stage=(1, 2), max_nodes=2)
    return model_to_dict(m)


def _xml(kind: str = "HAAR") -> str:
    return to_opencv_xml(random_cascade(kind, seed=2, window=(12, 12), n_stages=2,
                                        trees_per_stage=(1, 2), tilted_fraction=0.0))


def _json_bytes(doc) -> bytes:
    return json.dumps(doc).encode()


def _set(path, value):
    def mutate(doc):
        d = copy.deepcopy(doc)
        node = d
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        return d
    return mutate


TREE = ("stages", 0, "trees", 0)

JSON_CASES = {
    "feature index over int32": (_set((*TREE, "feature", 0), 2**40), "outside 0..2147483647"),
    "feature index 1.5": (_set((*TREE, "feature", 0), 1.5), "expected an integer, got 1.5"),
    "feature index true": (_set((*TREE, "feature", 0), True), "expected an integer"),
    "child code 2^32": (_set((*TREE, "left", 0), 2**32), "outside"),
    "leaf 1e39": (_set((*TREE, "leaves", 0), 1e39), "float32"),
    "stage threshold -1e39": (_set(("stages", 0, "threshold"), -1e39), "float32"),
    "threshold a string": (_set((*TREE, "threshold", 0), "0.5"), "expected a number"),
    "version true": (_set(("version",), True), "unsupported format version"),
    "window 1e12": (_set(("window_shape",), [10**12, 10**12]), "VJBOOST_MAX_WINDOW_SIDE"),
    "window 1.5": (_set(("window_shape",), [12.5, 12]), "expected an integer"),
    "haar weight 1e39": (_set(("family", "config", "weights", 0, 0), 1e39), "float32"),
    "rect of 3 values": (_set(("family", "config", "rects", 0, 0), [1, 2, 3]), "invalid cascade"),
    "rect over int64": (_set(("family", "config", "rects", 0, 0), [2**70, 0, 1, 1]), "cascade"),
    "haar family 120x120": (_set(("family",), {"family": "haar",
                                              "config": {"window_shape": [120, 120]}}),
                            "VJBOOST_MAX_FEATURES"),
    "hog family 20000x20000": (_set(("family",), {"family": "hog",
                                                 "config": {"window_shape": [20000, 20000]}}),
                               "VJBOOST_MAX_WINDOW_SIDE"),
    "haar family 2000": (_set(("family",), {"family": "haar",
                                           "config": {"window_shape": [2000, 2000]}}),
                         "VJBOOST_MAX_WINDOW_SIDE"),
    "haar family 400": (_set(("family",), {"family": "haar",
                                          "config": {"window_shape": [400, 400]}}),
                        "VJBOOST_MAX_FEATURES"),
    "stages not a list": (_set(("stages",), {"a": 1}), "expected a list"),
    "tree not a mapping": (_set((*TREE[:-1], 0), 7), "expected a mapping"),
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
def test_json_model_cases_give_one_clean_error_naming_the_file(tmp_path, case):
    mutate, needle = JSON_CASES[case]
    p = tmp_path / "m.json"
    p.write_bytes(_json_bytes(mutate(_haar_doc())))
    with pytest.raises(VJBoostError) as info:
        load_model(p)
    msg = str(info.value)
    assert str(p) in msg and needle in msg and "\n" not in msg, msg


@pytest.mark.parametrize(("text", "needle"), [
    ("{\"a\": " + "[" * 5000 + "]" * 5000 + "}", "VJBOOST_MAX_JSON_DEPTH"),
    ('{"format": "vjboost-cascade", "version": ' + "9" * 4300 + "}", "digits"),
    ('{"format": "vjboost-cascade", "version": 2, "window_shape": [NaN, 1]}', "NaN"),
    ('{"format": "vjboost-cascade", "version": 2, "window_shape": [1e999, 1]}', "overflows"),
    ('{"format": "vjboost-cascade"', "truncated"),
    ('{"format": "vjboost-cascade", "version": 2, "window_shape": [1_9, 19]}', "malformed"),
])
def test_json_text_cases(tmp_path, text, needle):
    p = tmp_path / "m.json"
    p.write_text(text)
    with pytest.raises(VJBoostError, match=needle) as info:
        load_model(p)
    assert str(p) in str(info.value)


def _nesting(doc) -> int:
    """Depth of a parsed JSON value: the number of containers on its deepest path."""
    if isinstance(doc, dict):
        return 1 + max(map(_nesting, doc.values()), default=0)
    if isinstance(doc, list):
        return 1 + max(map(_nesting, doc), default=0)
    return 0


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab[]{}"\\ \n'),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet='a[{"\\}]', max_size=4), inner, max_size=4),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(doc=_JSON_VALUES, chunk=st.sampled_from([1, 2, 3, 7, 1 << 23]))
def test_json_depth_is_the_nesting_of_the_parsed_value(doc, chunk):
    """The text scan (strings with brackets, quotes and backslash runs; any chunking) finds
    the depth the parser builds."""
    import unittest.mock

    text = json.dumps(doc, indent=None if chunk % 2 else 1).encode()
    with unittest.mock.patch.object(vio, "_DEPTH_CHUNK", chunk):
        assert vio._json_depth(text) == _nesting(json.loads(text))


def test_v1_model_rect_of_four_values(tmp_path):
    from test_cascade_model import _v1

    import vjboost

    # a version-1 file (explicit feature table) of the shipped Haar cascade
    models = Path(vjboost.__file__).parent / "models"
    doc = _v1(load_model(models / "frontalface_haar.xml"))
    doc["features"][0]["rects"][0] = [0, 0, 2, 1]
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"features\[0\]\.rects\[0\]: expected \[x, y, w, h, "):
        load_model(p)


def _xml_replace(old: str, new: str, kind: str = "HAAR", count: int = 1):
    def mutate():
        text = _xml(kind)
        assert old in text, old
        return text.replace(old, new, count)
    return mutate


def _xml_sub(pattern: str, new: str):
    return lambda: re.sub(pattern, new, _xml("HAAR"), count=1)


XML_CASES = {
    "width inf": (_xml_replace("<width>12</width>", "<width>inf</width>"), "not a number"),
    "height nan": (_xml_replace("<height>12</height>", "<height>nan</height>"), "not a number"),
    "width 1e300": (_xml_replace("<width>12</width>", "<width>1e300</width>"), "integer"),
    "window 100000": (_xml_replace("<width>12</width>", "<width>100000</width>"),
                      "VJBOOST_MAX_WINDOW_SIDE"),
    "feature index 4294967315": (_xml_replace("<internalNodes>\n            0 -1 0 ",
                                              "<internalNodes>\n            0 -1 4294967315 "),
                                 "4294967315 is outside"),
    "feature index 1e300": (_xml_replace("<internalNodes>\n            0 -1 0 ",
                                         "<internalNodes>\n            0 -1 1e300 "), "integer"),
    "feature index inf": (_xml_replace("<internalNodes>\n            0 -1 0 ",
                                       "<internalNodes>\n            0 -1 inf "), "not a number"),
    "feature index 1_9": (_xml_replace("<internalNodes>\n            0 -1 0 ",
                                       "<internalNodes>\n            0 -1 1_9 "), "not a number"),
    "child code 2^32": (_xml_replace("<internalNodes>\n            0 -1 ",
                                     "<internalNodes>\n            4294967296 -1 "), "outside"),
    "stage threshold -1e39": (_xml_sub(r"<stageThreshold>[^<]*<", "<stageThreshold>-1e39<"),
                              "float32"),
    "stage threshold nan": (_xml_sub(r"<stageThreshold>[^<]*<", "<stageThreshold>nan<"),
                            "not a number"),
    "haar weight nan": (_xml_replace("</rects>", "</rects>", count=0), "rects"),
    "lbp subset word over 32 bits": (_xml_replace("<internalNodes>\n            0 -1 0 ",
                                                  "<internalNodes>\n            0 -1 0 "
                                                  "99999999999 ", "LBP"), ""),
    "lbp rect inf": (_xml_replace("<rect>", "<rect>inf ", "LBP"), "not a number"),
}


def _weight_nan():
    text = _xml("HAAR")
    i = text.index("<rects>")
    j = text.index("</_>", i)
    head, item = text[:j], text[j:]
    k = head.rindex(" ")
    return head[:k] + " nan" + item


XML_CASES["haar weight nan"] = (_weight_nan, "not a number")


@pytest.mark.parametrize("case", sorted(XML_CASES))
def test_xml_model_cases_give_one_clean_error_naming_the_file(tmp_path, case):
    make, needle = XML_CASES[case]
    p = tmp_path / "m.xml"
    p.write_text(make())
    with pytest.raises(VJBoostError) as info:
        load_model(p)
    msg = str(info.value)
    assert str(p) in msg and needle in msg and "\n" not in msg, msg


def test_model_size_cap_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "big.xml"
    p.write_text(_xml() + " " * 5000)
    with pytest.raises(LimitError, match="VJBOOST_MAX_MODEL_BYTES"):
        load_model(p, limits=Limits(max_model_bytes=4000))
    monkeypatch.setenv("VJBOOST_MAX_MODEL_BYTES", "4000")
    with pytest.raises(LimitError, match=r"big.xml: model file of \d+ bytes exceeds"):
        load_model(p)
    # a size the file system does not tell (procfs reports 0): at most the cap is read
    fstat = os.fstat
    monkeypatch.setattr(vio.os, "fstat", lambda fd: os.stat_result(
        (*fstat(fd)[:6], 0, *fstat(fd)[7:10])))
    with pytest.raises(LimitError, match=r"big.xml: model file of more than 4000 bytes"):
        load_model(p)
    monkeypatch.setattr(vio.os, "fstat", fstat)
    if os.path.exists("/dev/zero"):  # endless: not read at all
        with pytest.raises(InputError, match="/dev/zero: is a device, not a regular file"):
            load_model("/dev/zero")


def test_inputs_that_are_fifos_are_refused_not_read(tmp_path):
    from vjboost.cli.detect import main
    from vjboost.io import read_annotations, read_image

    fifo = tmp_path / "model.json"
    os.mkfifo(fifo)
    for read, what in ((load_model, "model file"), (read_annotations, "annotation file"),
                       (lambda f: read_annotations(f, format="csv"), "CSV file"),
                       (vio.read_npz, "array file"), (read_image, "image file")):
        with pytest.raises(InputError, match=f"model.json: is a FIFO, not a regular file; it "
                                             f"cannot be read as the {what}"):
            read(fifo)
    r = CliRunner().invoke(main, [str(_good(tmp_path / "a.png")), "--model", str(fifo)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.strip().splitlines()[-1] == (
        f"Error: Invalid value for --model: {fifo}: is a FIFO, not a regular file; it cannot "
        "be read as the model file")


def test_an_anonymous_pipe_is_read(tmp_path):
    """A pipe made with its writer (``--model /dev/stdin``, a shell's ``<(...)``) is read, not
    refused as a named FIFO would be."""
    src = tmp_path / "m.json"
    save_model(random_cascade(seed=3, window=(12, 12), n_stages=2), src)
    r, w = os.pipe()
    os.write(w, src.read_bytes())
    os.close(w)
    try:
        back = load_model(f"/dev/fd/{r}")
    finally:
        os.close(r)
    assert back.n_stages == 2 and back == load_model(src)


def test_node_and_feature_caps(tmp_path):
    p = tmp_path / "m.json"
    save_model(random_cascade(seed=3, window=(12, 12), n_stages=3), p)
    with pytest.raises(LimitError, match="VJBOOST_MAX_MODEL_NODES"):
        load_model(p, limits=Limits(max_model_nodes=2))
    with pytest.raises(LimitError, match="VJBOOST_MAX_FEATURES"):
        load_model(p, limits=Limits(max_features=1))
    q = tmp_path / "m.xml"
    q.write_text(_xml())
    with pytest.raises(LimitError, match="VJBOOST_MAX_MODEL_NODES"):
        load_model(q, limits=Limits(max_model_nodes=1))
    with pytest.raises(LimitError, match="VJBOOST_MAX_FEATURES"):
        load_model(q, limits=Limits(max_features=1))


def test_valid_models_still_load_bit_for_bit(tmp_path):
    for kind in ("HAAR", "LBP"):
        m = random_cascade(kind, seed=5, window=(14, 12), n_stages=3, max_nodes=3)
        for suffix in (".json", ".xml"):
            p = tmp_path / f"m{suffix}"
            save_model(m, p)
            back = load_model(p)
            assert [s.threshold for s in back.stages] == [s.threshold for s in m.stages]
            assert all(a == b for s, t in zip(back.stages, m.stages, strict=True)
                       for a, b in zip(s.trees, t.trees, strict=True))


def _loads_or_clean(data: bytes) -> None:
    try:
        m = model_from_bytes(data, "fuzz.bin", limits=Limits(max_window_side=64,
                                                             max_features=200_000))
    except VJBoostError as exc:
        assert "fuzz.bin" in str(exc) or "window_shape" in str(exc), str(exc)
        return
    assert isinstance(m, CascadeModel)


FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _mutations(base: bytes):
    """Byte strings near a valid model: truncated, bytes replaced, tokens swapped."""
    tokens = [b"0", b"-1", b"1e39", b"nan", b"inf", b"4294967315", b"1.5", b"true", b"null",
              b"[]", b"{}", b'"x"', b"-0", b"1_9", b"9" * 50, b"<_>", b"</_>", b"]", b"}"]
    pos = st.integers(0, len(base))
    return st.one_of(
        pos.map(lambda i: base[:i]),
        st.tuples(pos, st.binary(max_size=8)).map(lambda t: base[:t[0]] + t[1] + base[t[0] + 1:]),
        st.tuples(pos, st.sampled_from(tokens), st.integers(0, 6)).map(
            lambda t: base[:t[0]] + t[1] + base[t[0] + t[2]:]),
    )


@FUZZ
@given(st.data())
def test_fuzzed_json_models_load_or_fail_cleanly(data):
    base = _json_bytes(_haar_doc())
    _loads_or_clean(data.draw(_mutations(base)))


@FUZZ
@given(st.data())
def test_fuzzed_xml_models_load_or_fail_cleanly(data):
    base = _xml(data.draw(st.sampled_from(["HAAR", "LBP"]))).encode()
    _loads_or_clean(data.draw(_mutations(base)))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.binary(max_size=300))
def test_random_bytes_fail_cleanly(data):
    _loads_or_clean(data)
    _loads_or_clean(b"{" + data)
    _loads_or_clean(b"<" + data)


# ------------------------------------------------------------------------------------------------
# Output folders, write failures
# ------------------------------------------------------------------------------------------------


def test_output_folder_lock_refuses_a_second_run_and_takes_over_a_stale_one(tmp_path):
    out = tmp_path / "o"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        rec = {"pid": holder.pid, "host": vio.socket.gethostname(),
               "process_start": vio._process_start(holder.pid), "started": "then",
               "what": "training", "command": "vjtrain ..."}
        out.mkdir()
        (out / LOCK_NAME).write_text(json.dumps(rec))
        with pytest.raises(OutputError, match=f"in use by another training \\(pid {holder.pid}"):
            OutputFolder(out).acquire()
    finally:
        holder.kill()
        holder.wait()
    (out / ".model.json.abcd1234.tmp").write_text("half")  # left by a killed atomic write
    notes = []
    with OutputFolder(out, log=notes.append) as folder:
        assert folder.took_over["pid"] == holder.pid
        assert not (out / ".model.json.abcd1234.tmp").exists()
        assert json.loads((out / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert not (out / LOCK_NAME).exists()
    assert any("no longer running" in n for n in notes)


@pytest.mark.slow
def test_two_processes_one_folder(tmp_path):
    """A real race: two processes take the same folder at once; exactly one wins."""
    code = ("import sys, time; from vjboost._io import OutputFolder\n"
            "try:\n"
            "    f = OutputFolder(sys.argv[1]).acquire()\n"
            "except OSError as e:\n"
            "    print('refused', e); sys.exit(3)\n"
            "print('held'); sys.stdout.flush(); time.sleep(2); f.release()\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "o")],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 3], outs
    assert any("refused" in o and "pid" in o for o in outs)


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_keeps_the_previous_file(tmp_path, monkeypatch):
    p = tmp_path / "model.json"
    atomic_write(p, "old")
    monkeypatch.setattr(vio.os, "fsync", _enospc)
    with pytest.raises(OutputError, match=r"model.json: cannot be written: the disk is full"):
        atomic_write(p, "new")
    assert p.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["model.json"]  # no temporary file left


def test_atomic_path_keeps_the_previous_file_and_its_temporary_name_is_cleaned_up(tmp_path):
    p = tmp_path / "clip.avi"
    p.write_bytes(b"old")
    with pytest.raises(RuntimeError), vio.atomic_path(p) as tmp:
        tmp.write_bytes(b"half a video")
        raise RuntimeError("the writer failed")
    assert p.read_bytes() == b"old" and [f.name for f in tmp_path.iterdir()] == ["clip.avi"]
    with vio.atomic_path(p) as tmp:  # a killed run's temporary file: removed as stale
        tmp.write_bytes(b"new")
        stale = tmp_path / tmp.name
        (tmp_path / "keep.tmp.avi").write_bytes(b"not ours")
        assert vio.remove_stale_temps(tmp_path) == [stale]
        tmp.write_bytes(b"new")
    assert p.read_bytes() == b"new"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["clip.avi", "keep.tmp.avi"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_dev_full_gives_the_disk_full_message():
    with pytest.raises(OutputError, match="the disk is full"):
        with open("/dev/full", "w") as fh:
            try:
                fh.write("x" * 10000)
                fh.flush()
            except OSError as exc:
                raise vio.output_error("/dev/full", exc) from None


def _char_device(path: Path, minor: int) -> Path:
    """A memory character device (1, ``minor``: 3 null, 7 full) made in ``path`` with mknod;
    skipped where that needs privileges or the file system refuses devices (``nodev``)."""
    import stat

    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        open(path, "wb").close()
    except (OSError, AttributeError) as exc:
        pytest.skip(f"cannot make a character device in {path.parent} ({exc})")
    return path


def test_a_fifo_is_written_in_place_not_replaced(tmp_path):
    import stat
    import threading

    fifo = tmp_path / "ff"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    check_output_path(fifo)
    atomic_write(fifo, b"detections")
    reader.join(10)
    assert got == [b"detections"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [f.name for f in tmp_path.iterdir()] == ["ff"]


def test_the_own_redirected_stdout_is_written_after_what_is_there(tmp_path):
    """``--json /dev/stdout >> log`` (or ``(echo a; vjdetect ...; echo b) > log``): written
    through the descriptor, after the log's content, not over it from its first byte."""
    log = tmp_path / "log.txt"
    log.write_text("header\n")
    code = ("import sys; from vjboost._io import atomic_write; sys.stdout.write('before\\n'); "
            "sys.stdout.flush(); atomic_write('/dev/stdout', 'detections\\n'); print('after')")
    with open(log, "a") as fh:
        subprocess.run([sys.executable, "-c", code], stdout=fh, check=True)
    assert log.read_text() == "header\nbefore\ndetections\nafter\n"
    assert [f.name for f in tmp_path.iterdir()] == ["log.txt"]


def test_a_symlink_stays_a_link_and_its_target_is_written(tmp_path):
    (tmp_path / "target.txt").write_text("old")
    link = tmp_path / "link.jsonl"
    link.symlink_to("target.txt")
    check_output_path(link)
    atomic_write(link, "new")
    assert link.is_symlink() and (tmp_path / "target.txt").read_text() == "new"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["link.jsonl", "target.txt"]
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to("made.json")
    atomic_write(dangling, "{}")
    assert dangling.is_symlink() and (tmp_path / "made.json").read_text() == "{}"
    loop = tmp_path / "loop.json"
    loop.symlink_to("loop.json")
    with pytest.raises(OutputError, match=r"loop.json: cannot be written"):
        atomic_write(loop, "{}")


def test_a_device_is_written_in_place_and_a_full_one_reported(tmp_path):
    import stat

    null = _char_device(tmp_path / "mynull", 3)
    check_output_path(null)
    atomic_write(null, "x" * 100)
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    full = _char_device(tmp_path / "myfull", 7)
    with pytest.raises(OutputError, match=r"myfull: cannot be written: the disk is full"):
        atomic_write(full, "x" * 100)
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_vjdetect_json_to_a_full_device_fails_in_one_line(tmp_path, model_json):
    import stat

    from vjboost.cli.detect import main

    full = _char_device(tmp_path / "myfull", 7)
    r = CliRunner().invoke(main, [str(_good(tmp_path / "a.png")), "--model", model_json,
                                  "--json", str(full)])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("Error:")] == [
        f"Error: {full}: cannot be written: the disk is full (No space left on device)"]
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_output_path_checks(tmp_path):
    (tmp_path / "model.json").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        check_output_path(tmp_path / "model.json")
    with pytest.raises(OutputError, match="does not exist"):
        check_output_path(tmp_path / "no" / "where.json")
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match="exists and is not a folder"):
        check_output_path(tmp_path / "f", "folder")


def test_vjdetect_json_on_a_full_disk_leaves_no_file(tmp_path, model_json, monkeypatch):
    from vjboost.cli.detect import main

    img = _good(tmp_path / "a.png")
    monkeypatch.setattr(vio.os, "fsync", _enospc)
    out = tmp_path / "dets.jsonl"
    r = CliRunner().invoke(main, [str(img), "--model", model_json, "--json", str(out)])
    assert r.exit_code == 1 and "the disk is full" in r.output and "Traceback" not in r.output
    assert not out.exists() and not list(tmp_path.glob(".dets*"))


def test_vjdetect_never_writes_over_an_input_image_list_or_model(tmp_path, model_json):
    from vjboost.cli.detect import main

    img = _good(tmp_path / "x.png")
    (tmp_path / "link.png").symlink_to("x.png")
    (tmp_path / "list.txt").write_text("x.png\n")
    before = img.read_bytes(), Path(model_json).read_bytes()
    cases = [
        ([img, "--json", img], f"--json: {img} is the input image;"),
        ([img, "--json", tmp_path / "link.png"], f"is the input image {img};"),
        ([tmp_path, "--format", "coco", "--save", img], f"--save: {img} is the input image"),
        ([tmp_path / "list.txt", "--json", tmp_path / "list.txt"], "is the input file;"),
        ([img, "--json", model_json], f"--json: {model_json} is the --model file;"),
    ]
    for args, message in cases:
        r = CliRunner().invoke(main, [*map(str, args), "--model", model_json])
        assert r.exit_code == 1 and message in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert (img.read_bytes(), Path(model_json).read_bytes()) == before
    assert (tmp_path / "list.txt").read_text() == "x.png\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["link.png", "list.txt", "m.json",
                                                          "x.png"]


def test_vjdetect_model_dev_zero_and_partial_batch(tmp_path, model_json):
    from vjboost.cli.detect import main

    if os.path.exists("/dev/zero"):
        r = CliRunner().invoke(main, [str(_good(tmp_path / "a.png")), "--model", "/dev/zero"])
        assert r.exit_code != 0 and "/dev/zero: is a device, not a regular file" in r.output
        assert "Traceback" not in r.output
    d = tmp_path / "dir"
    d.mkdir()
    _good(d / "a.png")
    _png_header_only(d / "b.png", 50000, 50000)
    (d / "c.png").write_bytes(b"not an image")
    _good(d / "d.png")
    r = CliRunner().invoke(main, [str(d), "--model", model_json])
    assert r.exit_code == 3, r.output
    assert "2 input(s) read" in r.stderr and "2 skipped" in r.stderr


# ------------------------------------------------------------------------------------------------
# vjtrain: lock, outputs checked first, damaged checkpoint, memory budget, bad backgrounds
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def train_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[:16, :16]
    pos = ((np.hypot(yy - 7.5, xx - 7.5) < 5) * 150 + 50).astype(np.uint8)
    noise = rng.integers(-20, 20, (120, 16, 16))
    np.savez(root / "pos.npz", images=np.clip(pos + noise, 0, 255).astype(np.uint8))
    (root / "bg").mkdir()
    for i in range(3):
        cv2.imwrite(str(root / "bg" / f"b{i}.png"),
                    rng.integers(0, 255, (120, 160), dtype=np.uint8))
    return root


def _train_args(root, out, *extra):
    return [str(root / "pos.npz"), str(root / "bg"), "-o", str(out), "--window", "16x16",
            "--stages", "1", "--num-pos", "40", "--num-neg", "60", "--max-weak-count", "3",
            "--threads", "1", "-q", *extra]


def test_vjtrain_refuses_a_held_folder_and_an_output_that_is_a_folder(train_data, tmp_path):
    from vjboost.cli.train import vjtrain

    out = tmp_path / "o"
    with OutputFolder(out, what="training"):
        r = CliRunner().invoke(vjtrain, _train_args(train_data, out))
        assert r.exit_code == 2 and f"pid {os.getpid()}" in r.output, r.output
    (out / "model.json").mkdir()
    r = CliRunner().invoke(vjtrain, _train_args(train_data, out))  # refused before training
    assert r.exit_code == 2 and "model.json is a folder" in r.output, r.output
    assert not (out / LOCK_NAME).exists() and not (out / "checkpoint.json").exists()


def test_vjtrain_output_is_never_an_input_folder_nor_a_foreign_folder(train_data, tmp_path):
    import shutil

    from vjboost.cli.train import vjtrain

    bg = tmp_path / "bg"
    shutil.copytree(train_data / "bg", bg)
    before = sorted(f.name for f in bg.iterdir())

    def run(out, *extra):
        args = _train_args(train_data, out, *extra)
        args[1] = str(bg)
        return CliRunner().invoke(vjtrain, args)

    r = run(bg)
    assert r.exit_code == 2 and r.output.strip() == (
        f"Error: -o/--output: {bg} is the NEG folder; what is written there would be read as "
        "input: choose another output folder")
    assert sorted(f.name for f in bg.iterdir()) == before
    # a folder inside it is not read (input folders are read without their subfolders)
    vio.check_folder_apart("-o", bg / "runs", inputs=[("NEG", bg)])
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "model.json").write_text("important")
    (foreign / "stages.png").write_text("a plot of mine")
    for extra in ((), ("--resume",)):
        r = run(foreign, *extra)
        assert r.exit_code == 2 and "Traceback" not in r.output
        assert r.output.strip().splitlines()[-1] == (
            f"Error: {foreign}: holds model.json, stages.png, which training would overwrite, but "
            "no training checkpoint: it is not a training to continue; choose a new or empty "
            "output folder, or move those files away")
    assert (foreign / "model.json").read_text() == "important"
    assert not (foreign / LOCK_NAME).exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run(empty)
    assert r.exit_code == 0, r.output
    r = run(empty, "--resume", "--stages", "2")  # its own folder: resumed
    assert r.exit_code == 0 and "resuming after stage 0" in r.output, r.output


def test_vjtrain_full_disk_and_damaged_checkpoint(train_data, tmp_path, monkeypatch):
    """The disk fills up at the second checkpoint: one line, the first checkpoint intact, no
    temporary file, no lock; --resume then continues. A truncated checkpoint says what to do."""
    from vjboost.cascade.checkpoint import load_checkpoint
    from vjboost.cli.train import vjtrain

    out = tmp_path / "o"
    args = _train_args(train_data, out, "--max-false-alarm", "0.9")
    args[args.index("--stages") + 1] = "3"
    real_fsync, writes = os.fsync, []

    def fsync(fd):
        frame = sys._getframe(1)
        if frame.f_code.co_name == "atomic_open" and frame.f_locals["path"].name == \
                "checkpoint.json":
            writes.append(1)
            if len(writes) == 2:
                _enospc()
        real_fsync(fd)

    with monkeypatch.context() as m:
        m.setattr(vio.os, "fsync", fsync)
        r = CliRunner().invoke(vjtrain, args)
    assert r.exit_code == 2 and "checkpoint.json: cannot be written: the disk is full" in \
        r.output, r.output
    assert "Traceback" not in r.output and not (out / LOCK_NAME).exists()
    assert not [f for f in out.iterdir() if f.name.endswith(".tmp")]
    assert len(load_checkpoint(out)["stages"]) == 1  # the last good checkpoint
    r = CliRunner().invoke(vjtrain, [*args, "--resume"])
    assert r.exit_code == 0 and "resuming after stage 0" in r.output, r.output
    (out / "checkpoint.json").write_text('{"version": 1, "config": {}, "stag')
    r = CliRunner().invoke(vjtrain, [*args, "--resume"])
    assert r.exit_code == 2 and "damaged training checkpoint" in r.output, r.output
    assert "delete" in r.output and len(r.output.strip().splitlines()) == 1


def test_python_warnings_reach_the_user_as_one_line():
    """A library warning (e.g. read_vec's header count) is one ``PROG: warning:`` line, not
    Python's two lines with the source file and the calling line."""
    import warnings

    import click

    from vjboost.cli._command import Command

    @click.command(cls=Command)
    def tool():
        warnings.warn("a.vec: header says 9 samples,\n the file holds 2; using 2",
                      UserWarning, stacklevel=1)

    r = CliRunner().invoke(tool, [], prog_name="vjtool")
    assert r.exit_code == 0 and r.stderr == ("vjtool: warning: a.vec: header says 9 samples, "
                                             "the file holds 2; using 2\n"), r.stderr


def test_vjtrain_says_why_no_stage_could_be_trained(train_data, tmp_path):
    """Backgrounds whose header reads but whose pixels do not: no window to mine, and the last
    line says so (it said only "no stage could be trained")."""
    from vjboost.cli.train import vjtrain

    bg = tmp_path / "bg"
    bg.mkdir()
    ok, jpg = cv2.imencode(".jpg", np.random.default_rng(0).integers(0, 255, (120, 160),
                                                                     dtype=np.uint8))
    (bg / "cut.jpg").write_bytes(jpg.tobytes()[:400])  # the header, not the scan data
    args = _train_args(train_data, tmp_path / "o")
    args[1] = str(bg)
    r = CliRunner().invoke(vjtrain, args)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: no stage could be trained: negatives exhausted") and \
        "none of the background images could be read" in last, r.output


@pytest.fixture(scope="module")
def one_stage_run(train_data, tmp_path_factory):
    """A vjtrain run folder holding the checkpoint of one stage (``--stages 2`` resumes it)."""
    from vjboost.cli.train import vjtrain

    out = tmp_path_factory.mktemp("ck") / "run"
    r = CliRunner().invoke(vjtrain, _train_args(train_data, out))
    assert r.exit_code == 0, r.output
    return out


def _negatives_file(ck):
    return ck["negatives"]["file"]


# how a checkpoint is damaged -> the file the message names, and what it says
DAMAGED_CHECKPOINTS = {
    "cursor a string": (lambda out, ck: ck["negatives"].update(cursor="abc"),
                        "checkpoint.json", "'negatives.cursor'"),
    "negatives null": (lambda out, ck: ck.update(negatives=None), "checkpoint.json",
                       "'negatives' is not a mapping"),
    "cursor negative": (lambda out, ck: ck["negatives"]["cursor"].update(
        {k: -5 for k in ck["negatives"]["cursor"]}), "checkpoint.json", "non-negative"),
    "pool file outside the folder": (lambda out, ck: ck["negatives"].update(
        file="../negatives.npy"), "checkpoint.json", "'negatives.file'"),
    "empty pool file": (lambda out, ck: (out / _negatives_file(ck)).write_bytes(b""),
                        "negatives-", "EOF"),
    "float pool file": (lambda out, ck: np.save(out / _negatives_file(ck), np.zeros(
        (3, 16, 16))), "negatives-", "float64 windows"),
    "feature id out of range": (lambda out, ck: ck["stages"][0]["learners"][0].update(
        feature=[10**9] * len(ck["stages"][0]["learners"][0]["feature"])),
        "checkpoint.json", "stage 0: learners[0]: feature id 1000000000 out of range"),
}


@pytest.mark.parametrize("case", DAMAGED_CHECKPOINTS)
def test_vjtrain_damaged_checkpoint_ends_in_one_line(case, one_stage_run, train_data, tmp_path):
    """Wrong types in the checkpoint's state, an empty or wrong .npy pool, a feature id outside
    the pool: the one "damaged training checkpoint" line naming the file, exit 2."""
    import shutil

    from vjboost.cli.train import vjtrain

    damage, name, needle = DAMAGED_CHECKPOINTS[case]
    out = tmp_path / "run"
    shutil.copytree(one_stage_run, out)
    ck = json.loads((out / "checkpoint.json").read_text())
    damage(out, ck)
    (out / "checkpoint.json").write_text(json.dumps(ck))
    args = _train_args(train_data, out, "--resume")
    args[args.index("--stages") + 1] = "2"
    r = CliRunner().invoke(vjtrain, args)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    line = r.stderr.strip().splitlines()
    assert len(line) == 1 and "damaged training checkpoint" in line[0], r.output
    assert f"{out}/{name}" in line[0] and needle in line[0], r.output


def test_vjtrain_memory_budget_refuses_big_windows_quickly(train_data, tmp_path, monkeypatch):
    from vjboost.cli.train import vjtrain

    monkeypatch.setenv("VJBOOST_MEMORY_BUDGET", str(256 * 2**20))
    for window, needle in (("64x64", "memory budget"), ("128x128", "VJBOOST_MAX_FEATURES"),
                           ("1000x1000", "VJBOOST_MAX_FEATURES")):
        args = _train_args(train_data, tmp_path / window)
        args[args.index("16x16")] = window
        pos = np.zeros((120, *map(int, window.split("x"))), np.uint8)
        np.savez(tmp_path / "pos.npz", images=pos)
        args[0] = str(tmp_path / "pos.npz")
        r = CliRunner().invoke(vjtrain, args)
        assert r.exit_code == 2 and needle in r.output, (window, r.output)
        assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_check_training_memory():
    from vjboost._memory import MemoryBudgetError
    from vjboost.cascade.budget import check_training_memory
    from vjboost.features.haar import HaarFamily

    fam = HaarFamily((16, 16))
    left = check_training_memory(fam, 100, budget=2**30)
    assert 0 < left < 2**30
    with pytest.raises(MemoryBudgetError, match="memory budget") as err:
        check_training_memory(fam, 100, budget=fam.n_features * 100)
    # the pool's program alone is over: vjtrain's --memory is named, fewer windows are not
    assert "(their feature program)" in str(err.value)
    assert "raise --memory (VJBOOST_MEMORY_BUDGET)" in str(err.value)
    assert "--num-pos" not in str(err.value)
    # the program fits, the windows' channels do not: fewer windows would help, and are named
    with pytest.raises(MemoryBudgetError, match="--num-pos/--num-neg, or raise --memory"):
        check_training_memory(fam, 10**7, budget=2**30)


def test_haar_pool_size_is_counted_without_enumerating():
    from vjboost.features.haar import haar_feature_table, haar_pool_size

    for mode in ("BASIC", "CORE", "ALL"):
        for shape in ((5, 7), (12, 9), (16, 16)):
            assert haar_pool_size(shape, mode) == len(haar_feature_table(shape, mode)["type"])
    assert haar_pool_size((1000, 1000)) > 10**11  # instant: nothing is enumerated


def test_bad_backgrounds_and_positives_are_skipped(train_data, tmp_path):
    from vjboost.cascade.positives import load_positives
    from vjboost.cli.train import vjtrain

    bg = tmp_path / "bg"
    bg.mkdir()
    for f in (train_data / "bg").iterdir():
        (bg / f.name).write_bytes(f.read_bytes())
    _png_header_only(bg / "huge.png", 20000, 20000)
    (bg / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnothing")
    lst = tmp_path / "bg.txt"
    lst.write_text("\n".join(f"bg/{f.name}" for f in sorted(bg.iterdir())))
    args = _train_args(train_data, tmp_path / "o")
    args[1] = str(lst)
    r = CliRunner().invoke(vjtrain, args)
    assert r.exit_code == 0, r.output
    assert "too large" in r.output and "unreadable" in r.output
    crops = tmp_path / "crops"
    crops.mkdir()
    for i in range(3):
        _good(crops / f"c{i}.png")
    _png_header_only(crops / "huge.png", 50000, 50000)
    with pytest.warns(UserWarning, match="stretched"):  # the crops are 4:3, the window square
        ps = load_positives(str(crops), (16, 16))
    assert len(ps.samples) == 3 and ps.skipped


def test_npz_positives_fail_in_one_line_naming_the_file(tmp_path):
    from vjboost.cascade.positives import load_positives

    (tmp_path / "bad.npz").write_bytes(b"garbage")
    np.savez(tmp_path / "obj.npz", images=np.array([object()], dtype=object))
    np.savez(tmp_path / "noimg.npz", x=np.zeros(3))
    for name, needle in (("bad.npz", "not a zip archive"), ("obj.npz", "Python objects"),
                         ("noimg.npz", "no array 'images'")):
        with pytest.raises(InputError, match=needle) as info:
            load_positives(str(tmp_path / name), (16, 16))
        assert str(tmp_path / name) in str(info.value)


# found by tools/fuzz_inputs.py (--seed 1, case 2864): a PNG whose IHDR Pillow cannot read
# (interlace method 0xaf); OpenCV's libpng decoder spent 10 s and 3.7 GB on its 272 bytes
_BAD_IHDR_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000100000000c08000000af5f5c9cb3e3dadfd749444154081d01cc0033ff"
    "01eff0a914c8b57f2a707e872ab8db0977017ca923b640864ebb88b012e33244b73901f2bad2308f8873bad3b9052216"
    "e979b9017f8b3372ffbad07b089e36d35781cfd6013d71e68df3ef2f6125bc3e05832f076701f0addf099236cd45950d"
    "6ae3c9f53a2501c0f3ab1dc77051b4cef33c2eaf14066601d1a7a4d2ad84e682c42b21c376d49374016a5c88435bf14f"
    "140bbc5eec51335b8701f8121974aa528d601dbb28d566d62808018e951d23865fba51c6ebe4fac017d6b30102241382"
    "46d2e29fdc5816509be39f850b8660def27e29980000000049454e44ae426082")


def test_png_with_a_damaged_header_is_not_decoded(tmp_path):
    from vjboost.io import ImageReadError, read_image

    p = tmp_path / "bad.png"
    p.write_bytes(_BAD_IHDR_PNG)
    with pytest.raises(ImageReadError, match="bad.png: damaged PNG file"):
        read_image(p)  # at once: the decoder is not given the file


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 64 KiB tmpfs (needs root and a mount-capable system; skipped otherwise)."""
    import shutil

    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_real_full_disk_on_a_tiny_tmpfs(tiny_tmpfs):
    atomic_write(tiny_tmpfs / "model.json", "old")
    with pytest.raises(OutputError, match="model.json: cannot be written: the disk is full"):
        atomic_write(tiny_tmpfs / "model.json", b"x" * 200_000)
    assert (tiny_tmpfs / "model.json").read_text() == "old"
    assert [p.name for p in tiny_tmpfs.iterdir()] == ["model.json"]
    with open(tiny_tmpfs / "filler", "wb") as fh:  # fill it up
        with pytest.raises(OSError):
            fh.write(b"x" * 200_000)
            fh.flush()
    with pytest.raises(OutputError, match="disk is full|No space left"):
        check_output_path(tiny_tmpfs / "out", "folder")


@pytest.mark.slow
def test_two_vjtrain_runs_on_one_folder(train_data, tmp_path):
    """A real second vjtrain is refused while the first trains; the first then finishes and
    --resume takes the folder again."""
    from vjboost.cli.train import vjtrain

    out = tmp_path / "o"
    args = _train_args(train_data, out, "--max-false-alarm", "0.9")
    args[args.index("--stages") + 1] = "2"
    args[args.index("--max-weak-count") + 1] = "20"
    code = "import sys; from vjboost.cli.train import main; main(sys.argv[1:])"
    first = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(600):
            if (out / LOCK_NAME).exists() or first.poll() is not None:
                break
            time.sleep(0.05)
        assert first.poll() is None, "the first run ended before the second started"
        r = CliRunner().invoke(vjtrain, args)
        assert r.exit_code == 2 and f"pid {first.pid}" in r.output, r.output
        log = first.communicate(timeout=600)[0]
    finally:
        first.kill()
    assert first.returncode == 0, log
    assert (out / "model.json").exists() and not (out / LOCK_NAME).exists()
    args[args.index("--stages") + 1] = "3"
    r = CliRunner().invoke(vjtrain, [*args, "--resume"])
    assert r.exit_code == 0 and "resuming after stage" in r.output, r.output


def _vec_bytes() -> bytes:
    import tempfile

    from vjboost.io import write_vec

    with tempfile.TemporaryDirectory() as d:
        write_vec(Path(d) / "a.vec", np.arange(3 * 8 * 8, dtype=np.uint8).reshape(3, 8, 8) % 251)
        return (Path(d) / "a.vec").read_bytes()


_SAMPLE_FILES = {
    "vec": (".vec", _vec_bytes),
    "coco": (".json", lambda: json.dumps({
        "images": [{"id": 1, "file_name": "a.png", "width": 16, "height": 12}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 5, 6]}],
        "categories": [{"id": 1, "name": "face"}]}).encode()),
    "info": (".dat", lambda: b"a.png 2 1 2 5 6 3 3 4 4\n"),
    "csv": (".csv", lambda: b"image,x,y,w,h\na.png,1,2,5,6\n"),
}


@FUZZ
@given(st.data())
def test_fuzzed_vec_and_annotation_files_load_or_fail_cleanly(tmp_path_factory, data):
    from vjboost.io import read_annotations, read_vec

    kind = data.draw(st.sampled_from(sorted(_SAMPLE_FILES)))
    suffix, make = _SAMPLE_FILES[kind]
    raw = data.draw(_mutations(make()))
    p = tmp_path_factory.mktemp("fz") / f"input{suffix}"
    p.write_bytes(raw)
    try:
        if kind == "vec":
            read_vec(p)
        else:
            read_annotations(p, format=kind)
    except VJBoostError as exc:
        assert str(p) in str(exc) or p.name in str(exc), str(exc)


def test_vjtrain_records_its_options_and_version(train_data, tmp_path):
    import vjboost
    from vjboost.cli.train import vjtrain

    out = tmp_path / "o"
    r = CliRunner().invoke(vjtrain, _train_args(train_data, out, "--mirror"))
    assert r.exit_code == 0, r.output
    for name in ("model.json", "report.json"):
        doc = json.loads((out / name).read_text())
        run = (doc["params"] if name == "model.json" else doc)["run"]
        assert run["options"]["mirror"] is True and run["options"]["window"] == "16x16"
        assert run["vjboost"] == vjboost.__version__ and run["command"]
    # the checkpoint too, so that a folder left by a killed run says how it was started
    ck = json.loads((out / "checkpoint.json").read_text())
    assert ck["run"]["options"]["mirror"] is True and ck["run"]["vjboost"] == vjboost.__version__


# ------------------------------------------------------------------------------------------------
# every numeric option of every command: nan and inf end in one line naming the option
# ------------------------------------------------------------------------------------------------

#: options typed as text that hold numbers (or lists of them), beside those click types as numbers
NUMERIC_TEXT = {"window", "mining_budget", "pos_crop", "object_box", "jitter_range", "memory",
                "min_neighbors", "min_size", "max_size", "min_score", "coarse_to_fine", "min_std",
                "suppress_inside", "border_margin"}


def _numeric_options(cmd):
    import click

    for p in cmd.params:
        if not isinstance(p, click.Option) or p.is_flag:
            continue
        if isinstance(p.type, (click.types.FloatParamType, click.types.IntParamType)) \
                or p.name in NUMERIC_TEXT:
            yield p


def _commands():
    from vjboost.cli.adapt import vjadapt
    from vjboost.cli.detect import main as vjdetect
    from vjboost.cli.evaluate import main as vjeval
    from vjboost.cli.train import vjtrain

    return {"vjtrain": vjtrain, "vjdetect": vjdetect, "vjeval": vjeval, "vjadapt": vjadapt}


def _tool_args(name: str, train_data, model_json, tmp_path) -> list[str]:
    """Arguments on which tool ``name`` runs (a grey image and its box file in ``tmp_path``),
    for a test to add the option it tries."""
    cv2.imwrite(str(tmp_path / "img.png"), np.full((60, 80), 128, np.uint8))
    (tmp_path / "boxes.csv").write_text("image,x,y,w,h\nimg.png,10,10,30,30\n")
    return {"vjtrain": _train_args(train_data, tmp_path / "out"),
            "vjdetect": [str(tmp_path / "img.png"), "-m", model_json, "--threads", "1"],
            "vjeval": [str(tmp_path / "boxes.csv"), "-m", model_json, "-o",
                       str(tmp_path / "out"), "--threads", "1", "--no-report"],
            "vjadapt": [model_json, str(tmp_path / "img.png"), "--boxes",
                        str(tmp_path / "boxes.csv"), "-o", str(tmp_path / "a.json"), "-q"]}[name]


@pytest.mark.parametrize("name", ["vjtrain", "vjdetect", "vjeval", "vjadapt"])
def test_every_numeric_option_refuses_nan_and_inf_in_one_line(train_data, model_json, tmp_path,
                                                               name):
    base = _tool_args(name, train_data, model_json, tmp_path)
    cmd = _commands()[name]
    options = list(_numeric_options(cmd))
    assert len(options) >= 4
    for p in options:
        flag = max(p.opts, key=len)
        for value in ("nan", "inf"):
            res = CliRunner().invoke(cmd, [*base, flag, value])
            where = f"{name} {flag} {value}: {res.output!r}"
            assert res.exception is None or isinstance(res.exception, SystemExit), where
            assert res.exit_code != 0, where
            lines = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
            assert len(lines) == 1 and "Traceback" not in res.output, where
            assert flag in lines[0] or flag.replace("--", "").replace("-", "_") in lines[0], where


# ------------------------------------------------------------------------------------------------
# hostile option values: huge, negative, malformed ones end in one line naming the option
# ------------------------------------------------------------------------------------------------


def _one_error_line(res, *needles):
    """``res`` failed with one ``Error`` line holding every needle, and no traceback."""
    where = repr(res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit), where
    assert res.exit_code != 0, where
    lines = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
    assert len(lines) == 1 and "Traceback" not in res.output, where
    for needle in needles:
        assert needle in lines[0], where
    return lines[0]


@pytest.mark.parametrize("name,flag", [("vjdetect", "--scale-factor"),
                                       ("vjeval", "--scale-factor"),
                                       ("vjadapt", "--scale-factor"),
                                       ("vjtrain", "--mining-scale-factor")])
def test_a_huge_finite_scale_factor_is_refused_in_one_line(train_data, model_json, tmp_path,
                                                           name, flag):
    base = _tool_args(name, train_data, model_json, tmp_path)
    res = CliRunner().invoke(_commands()[name], [*base, flag, "1e308"])
    _one_error_line(res, flag, "100")


def test_scale_factor_limit_in_the_api_and_a_scan_that_cannot_overflow():
    from vjboost._limits import MAX_SCALE_FACTOR
    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.negatives import MiningParams
    from vjboost.cascade.scan import opencv_scales

    model = random_cascade(seed=1, window=(20, 20))
    for bad in (1e308, MAX_SCALE_FACTOR * 1.01):
        with pytest.raises(ValueError, match=r"scale_factor: expected a number in \(1, 100\]"):
            CascadeDetector(model, scale_factor=bad)
        with pytest.raises(ValueError, match="scale_factor"):
            MiningParams((20, 20), scale_factor=bad)
    CascadeDetector(model, scale_factor=MAX_SCALE_FACTOR)
    # the scale list itself: the window overflows to infinity, which fits no image
    assert [float(s) for s in opencv_scales((24, 24), (100, 100), 1e308)] == [1.0]


def test_vjtrain_jitter_and_sampler_budget_are_bounded(train_data, tmp_path, monkeypatch):
    from vjboost._limits import MAX_JITTER_COPIES
    from vjboost.cascade.positives import Jitter, load_positives
    from vjboost.cli.train import vjtrain

    res = CliRunner().invoke(vjtrain, _train_args(train_data, tmp_path / "j", "--jitter",
                                                  "1000000000"))
    _one_error_line(res, "--jitter", str(MAX_JITTER_COPIES))
    with pytest.raises(ValueError, match="copies: expected an integer in"):
        Jitter(MAX_JITTER_COPIES + 1)
    # copies that fit the cap but not the memory: refused before they are drawn, in one line
    monkeypatch.setenv("VJBOOST_MEMORY_BUDGET", str(100_000))
    with pytest.raises(MemoryError, match=r"jitter: 1000 copies of positive 1 \(16x16\)"):
        load_positives(train_data / "pos.npz", (16, 16), jitter=Jitter(1000))
    monkeypatch.delenv("VJBOOST_MEMORY_BUDGET")
    res = CliRunner().invoke(vjtrain, _train_args(train_data, tmp_path / "s", "--sampler-budget",
                                                  "99999999999999"))
    _one_error_line(res, "sampler_budget", "--sampler-budget", "memory budget")
    assert res.exit_code == 2


def test_seeds_are_non_negative_in_every_tool(train_data, model_json, tmp_path):
    from vjboost.cli.adapt import vjadapt
    from vjboost.cli.train import vjtrain

    res = CliRunner().invoke(vjtrain, _train_args(train_data, tmp_path / "o", "--seed", "-5"))
    _one_error_line(res, "--seed", "-5")
    (tmp_path / "boxes.csv").write_text("image,x,y,w,h\nimg.png,10,10,30,30\n")
    res = CliRunner().invoke(vjadapt, [model_json, str(tmp_path), "--boxes",
                                       str(tmp_path / "boxes.csv"), "-o",
                                       str(tmp_path / "a.json"), "--seed", "-5"])
    _one_error_line(res, "--seed", "-5")


def test_too_few_positives_suggests_a_valid_num_pos(train_data, tmp_path):
    from vjboost.cli.train import vjtrain

    np.savez(tmp_path / "one.npz", images=np.load(train_data / "pos.npz")["images"][:1])
    args = _train_args(train_data, tmp_path / "o", "--stages", "2")
    args[0] = str(tmp_path / "one.npz")
    line = _one_error_line(CliRunner().invoke(vjtrain, args), "too few positives")
    assert "--num-pos 0" not in line and "even --num-pos 1 needs more" in line
    # enough for some: the largest --num-pos that fits, which does fit
    args = _train_args(train_data, tmp_path / "p", "--stages", "20", "--num-pos", "120")
    line = _one_error_line(CliRunner().invoke(vjtrain, args), "too few positives")
    most = int(re.search(r"use --num-pos (\d+) or fewer", line).group(1))
    from vjboost.cascade.trainer import positives_needed

    assert positives_needed(most, 20, 0.995) <= 120 < positives_needed(most + 1, 20, 0.995)


def test_min_std_is_capped_and_flat_backgrounds_are_refused(train_data, tmp_path):
    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cli.train import vjtrain

    res = CliRunner().invoke(vjtrain, _train_args(train_data, tmp_path / "o", "--min-std",
                                                  "1e308"))
    _one_error_line(res, "--min-std", "127.5")
    with pytest.raises(ValueError, match=r"min_std: expected .* \[0, 127.5\)"):
        CascadeDetector(random_cascade(seed=1, window=(20, 20)), min_std=127.5)
    flat = tmp_path / "flat"
    flat.mkdir()
    cv2.imwrite(str(flat / "grey.png"), np.full((120, 160), 128, np.uint8))
    args = _train_args(train_data, tmp_path / "f", "--stages", "2")
    args[1] = str(flat)
    res = CliRunner().invoke(vjtrain, args)
    _one_error_line(res, "σ gate of 10", "--min-std")
    assert res.exit_code == 2 and not (tmp_path / "f" / "model.json").exists()


@pytest.mark.parametrize("box", ["0,0,2,2", "-0.1,0,0.5,0.5", "0.5,0.5,0.6,0.2", "0,0,0,1"])
def test_object_box_must_lie_inside_the_window(train_data, tmp_path, box):
    from vjboost.cascade.trainer import CascadeTrainer, TrainingError
    from vjboost.cli.train import vjtrain

    res = CliRunner().invoke(vjtrain, _train_args(train_data, tmp_path / "o", "--object-box",
                                                  box))
    _one_error_line(res, "--object-box")
    assert not (tmp_path / "o" / "model.json").exists()
    with pytest.raises(TrainingError, match="object_box"):
        CascadeTrainer(window_shape=(16, 16), object_box=[float(v) for v in box.split(",")],
                       num_stages=1)._check_params()
