"""Input limits (images): header-checked pixel cap, pyramid levels, clean one-line failures."""

from __future__ import annotations

import struct
import zlib

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vjboost._errors import LimitError
from vjboost._limits import Limits, check_pyramid_levels, limit_error, pyramid_levels
from vjboost.io import ImageTooLargeError, read_image


def _png_header_only(path, w, h):
    """A PNG whose header announces w x h (the pixel data is a stub): enough for a header check,
    and what a decompression bomb looks like."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                     + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))
    return path


def test_limits_from_env_and_message():
    assert Limits.from_env({}) == Limits()
    lim = Limits.from_env({"VJBOOST_MAX_IMAGE_PIXELS": "123", "VJBOOST_MAX_PYRAMID_LEVELS": " 7"})
    assert (lim.max_image_pixels, lim.max_pyramid_levels) == (123, 7)
    for bad in ("0", "-3", "1e9", "lots"):
        with pytest.raises(LimitError, match="VJBOOST_MAX_IMAGE_PIXELS: expected a positive"):
            Limits.from_env({"VJBOOST_MAX_IMAGE_PIXELS": bad})
    msg = str(limit_error("x.png", 5, 4, "max_image_pixels", unit=" px", option="--max-pixels"))
    assert msg == ("x.png: 5 px exceeds the limit of 4 px (raise it with "
                   "VJBOOST_MAX_IMAGE_PIXELS or --max-pixels)")


def test_pyramid_levels_match_the_scale_list():
    from vjboost.cascade.detector import opencv_scales

    for sf in (1.05, 1.1, 1.3, 2.0):
        for size in ((100, 80), (640, 480), (37, 300)):
            n = len(opencv_scales((24, 24), size, sf))
            assert n <= pyramid_levels(sf, size, (24, 24)) <= n + 1, (sf, size)
    with pytest.raises(LimitError, match=r"scale_factor: 1.0000001 gives \d+ pyramid levels"):
        check_pyramid_levels(1.0000001, (640, 480), (24, 24))
    assert check_pyramid_levels(1.0000001, (640, 480), (24, 24),
                                limits=Limits(max_pyramid_levels=10**9)) > 1000


def test_image_pixel_cap_from_the_header(tmp_path, monkeypatch):
    big = _png_header_only(tmp_path / "big.png", 50000, 50000)
    with pytest.raises(ImageTooLargeError, match=r"big.png: 2500000000 pixels exceeds the limit"):
        read_image(big)
    mid = _png_header_only(tmp_path / "mid.png", 12000, 10000)
    with pytest.raises(ImageTooLargeError, match=r"mid.png: 12000x10000 = 120000000 pixels"):
        read_image(mid)
    ok = tmp_path / "ok.png"
    cv2.imwrite(str(ok), np.zeros((20, 30), np.uint8))
    with pytest.raises(ImageTooLargeError, match="limit of 100 pixels"):
        read_image(ok, limits=Limits(max_image_pixels=100))
    monkeypatch.setenv("VJBOOST_MAX_IMAGE_PIXELS", "500")
    with pytest.raises(ImageTooLargeError, match="limit of 500 pixels"):
        read_image(ok)
    monkeypatch.setenv("VJBOOST_MAX_IMAGE_PIXELS", "600")
    assert read_image(ok).shape == (20, 30)




def _good(path):
    cv2.imwrite(str(path), np.random.default_rng(0).integers(0, 255, (60, 80), dtype=np.uint8))
    return path


def test_vjdetect_batch_skips_the_oversized_image(tmp_path, model_json):
    from vjboost.cli.detect import main

    d = tmp_path / "dir"
    d.mkdir()
    _good(d / "a.png")
    _png_header_only(d / "b.png", 50000, 50000)
    _good(d / "c.png")
    r = CliRunner().invoke(main, [str(d), "--model", model_json, "--json",
                                  str(tmp_path / "o.jsonl")])
    assert r.exit_code == 3, r.output  # some inputs skipped
    assert "2 input(s) read" in r.stderr and "1 skipped" in r.stderr
    assert "b.png: 2500000000 pixels exceeds the limit" in r.stderr
    # alone: one line, non-zero exit, no traceback
    r = CliRunner().invoke(main, [str(d / "b.png"), "--model", model_json])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stderr.strip().startswith("Error:") and len(r.stderr.strip().splitlines()) == 1
    # the cap can be raised (then the stub's data fails to decode, cleanly)
    r = CliRunner().invoke(main, [str(d / "b.png"), "--model", model_json,
                                  "--max-pixels", str(3 * 10**9)])
    assert r.exit_code == 1 and "limit" not in r.stderr and "Traceback" not in r.output


@pytest.mark.parametrize(("args", "needle", "code"), [
    (["-s", "1.0000001"], "pyramid levels", 1),
    (["99999999999999999999"], "not a camera index", 1),
    (["--json", "/nonexistent/dir/out.jsonl"], "/nonexistent/dir does not exist", 1),
    (["--format", "voc", "--save", "/nonexistent/dir/voc"], "does not exist", 1),
    (["--format", "yolo"], "give a folder", 2),
])
def test_vjdetect_bad_arguments_fail_in_one_line(tmp_path, model_json, args, needle, code):
    from vjboost.cli.detect import main

    img = _good(tmp_path / "a.png")
    argv = ([a for a in args] if args[0].isdigit() else [str(img), *args]) + ["--model",
                                                                             model_json]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == code, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_vjdetect_empty_folder_and_corrupt_image(tmp_path, model_json):
    from vjboost.cli.detect import main

    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(main, [str(tmp_path / "empty"), "--model", model_json])
    assert r.exit_code == 1 and "the folder holds no images or videos" in r.output
    (tmp_path / "bad.jpg").write_bytes(b"\xff\xd8\xff garbage")
    r = CliRunner().invoke(main, [str(tmp_path / "bad.jpg"), "--model", model_json])
    assert r.exit_code == 1 and "bad.jpg" in r.output and "Traceback" not in r.output


def test_output_checked_before_any_work(tmp_path, model_json, monkeypatch):
    from vjboost.cli import detect

    calls = []
    monkeypatch.setattr(detect, "expand_inputs", lambda *a, **k: calls.append(1))
    r = CliRunner().invoke(detect.main, [str(tmp_path), "--model", model_json, "--save",
                                         str(tmp_path / "no" / "x.jsonl")])
    assert r.exit_code == 1 and not calls


def test_backgrounds_and_positives_skip_an_oversized_image(tmp_path):
    from vjboost.cascade.positives import load_positives
    from vjboost.cli.train import _check_backgrounds

    d = tmp_path / "pos"
    d.mkdir()
    _good(d / "a.png")
    _png_header_only(d / "huge.png", 20000, 20000)
    with pytest.warns(UserWarning, match="stretched"):  # the image is 4:3, the window square
        ps = load_positives(d, (24, 24))
    assert len(ps.samples) == 1 and "huge.png: 400000000 pixels" in ps.skipped[0]
    msgs = []
    ok, _ = _check_backgrounds([str(d / "a.png"), str(d / "huge.png")], (24, 24), msgs.append)
    assert ok == [str(d / "a.png")]
    assert "1 background image(s) too large" in msgs[0] and "huge.png" in msgs[0]
