"""Readers of images, .vec files, background lists and box annotations."""

from __future__ import annotations

import json
import struct

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vjboost._errors import InputError
from vjboost.io import (
    AnnotationError,
    ImageReadError,
    VecFormatError,
    read_annotations,
    read_bg_list,
    read_image,
    read_images,
    read_info_dat,
    read_vec,
    write_vec,
)


def _vec_bytes_by_hand(samples: np.ndarray, count: int | None = None) -> bytes:
    """Independent writer following the byte layout directly."""
    n, h, w = samples.shape
    out = struct.pack("<iihh", n if count is None else count, h * w, 0, 0)
    for s in samples:
        out += b"\x00" + struct.pack(f"<{h * w}h", *s.ravel().tolist())
    return out


@given(arrays(np.uint8, st.tuples(st.integers(1, 5), st.integers(1, 6), st.integers(1, 6))))
def test_vec_roundtrip_and_layout(tmp_path_factory, samples):
    d = tmp_path_factory.mktemp("vec")
    write_vec(d / "a.vec", samples)
    assert (d / "a.vec").read_bytes() == _vec_bytes_by_hand(samples)
    np.testing.assert_array_equal(read_vec(d / "a.vec", samples.shape[1:]), samples)


def test_vec_errors(tmp_path):
    s = np.arange(2 * 4 * 5, dtype=np.uint8).reshape(2, 4, 5)
    p = tmp_path / "p.vec"
    p.write_bytes(_vec_bytes_by_hand(s))
    with pytest.raises(VecFormatError, match="not a square"):
        read_vec(p)
    with pytest.raises(VecFormatError, match="window 6x3 has 18"):
        read_vec(p, (3, 6))
    p.write_bytes(_vec_bytes_by_hand(s)[:-3])
    with pytest.raises(VecFormatError, match="truncated"):
        read_vec(p, (4, 5))
    p.write_bytes(_vec_bytes_by_hand(s, count=100))
    with pytest.warns(UserWarning, match="header says 100 samples, the file holds 2"):
        assert read_vec(p, (4, 5)).shape == (2, 4, 5)
    with pytest.raises(VecFormatError, match="no such"):
        read_vec(tmp_path / "missing.vec")


def test_read_image_errors(tmp_path):
    img = (np.arange(12 * 10) % 256).astype(np.uint8).reshape(12, 10)
    cv2.imwrite(str(tmp_path / "ok.png"), img)
    np.testing.assert_array_equal(read_image(tmp_path / "ok.png"), img)
    assert read_image(tmp_path / "ok.png", gray=False).shape == (12, 10, 3)
    (tmp_path / "bad.jpg").write_bytes(b"not an image")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(ImageReadError, match="bad.jpg: not a readable image"):
        read_image(tmp_path / "bad.jpg")
    with pytest.raises(ImageReadError, match="empty.png: empty file"):
        read_image(tmp_path / "empty.png")
    with pytest.raises(ImageReadError, match="nope.png: no such file"):
        read_image(tmp_path / "nope.png")
    imgs, names, report = read_images([tmp_path / n for n in ("ok.png", "bad.jpg", "nope.png")])
    assert len(imgs) == 1 and names == [str(tmp_path / "ok.png")]
    assert report.n_read == 1 and len(report.failed) == 2
    assert "2 skipped" in report.summary()


def test_a_video_as_an_image_source_says_what_to_give(tmp_path):
    # backgrounds (vjtrain NEG, vjboost.train) and vjeval --images take a folder, a list or an
    # image; a video named there is refused as such, not read as a list ("not a text file")
    from vjboost.io import list_images

    clip = tmp_path / "clip.avi"
    clip.write_bytes(b"RIFF\x00\x00\x00\x00AVI LIST\xff\xfe")
    with pytest.raises(InputError, match=r"clip.avi: a video is not a background source; give "
                                         r"a folder of images, a list of image paths \(bg.txt\) "
                                         r"or one image"):
        list_images(clip, what="background source")


def test_bg_list_resolves_against_its_folder(tmp_path, monkeypatch):
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "bg.txt").write_text("# comment\nimgs/a.jpg\n\n../b.png\r\n/abs/c.jpg\n")
    monkeypatch.chdir("/")
    got = read_bg_list(tmp_path / "lists" / "bg.txt")
    assert got == [
        str(tmp_path / "lists" / "imgs" / "a.jpg"),
        str(tmp_path / "b.png"),
        "/abs/c.jpg",
    ]
    (tmp_path / "empty.txt").write_text("\n# nothing\n")
    with pytest.raises(AnnotationError, match="empty"):
        read_bg_list(tmp_path / "empty.txt")


def test_info_dat(tmp_path):
    (tmp_path / "info.dat").write_text(
        "img/a.png 2 1 2 10 12  30 40 5 6\nimg/b.png 0\nimg/c.png 1\n 3 4 20 20\n"
    )
    ann = read_info_dat(tmp_path / "info.dat")
    assert list(ann) == [str(tmp_path / "img" / n) for n in ("a.png", "b.png", "c.png")]
    a_boxes = ann[str(tmp_path / "img/a.png")]
    np.testing.assert_array_equal(a_boxes, [[1, 2, 10, 12], [30, 40, 5, 6]])
    assert ann[str(tmp_path / "img/b.png")].shape == (0, 4)
    np.testing.assert_array_equal(ann[str(tmp_path / "img/c.png")], [[3, 4, 20, 20]])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a.png x 1 2 3 4\n", "line 1: expected the number of boxes"),
        ("a.png 1 1 2 3 4\nb.png 2 1 1 5 5\n", "line 2: 'b.png' announces 2 boxes but only 1"),
        ("a.png 1 1 2 0 4\n", r"line 1: invalid box \[1, 2, 0, 4\]"),
        ("a.png 1 -1 2 5 4\n", r"line 1: invalid box \[-1, 2, 5, 4\] \(x, y must be >= 0 in "
                               r"this format\)"),
        ("a.png 1 1 2 3.5 4\n", "line 1: box values must be integers"),
        ("a.png\n", "line 1: 'a.png' has no box count"),
    ],
)
def test_info_dat_errors_name_the_line(tmp_path, text, match):
    (tmp_path / "info.dat").write_text(text)
    with pytest.raises(AnnotationError, match=match):
        read_info_dat(tmp_path / "info.dat")


def test_csv_and_json_boxes_may_start_outside_the_image(tmp_path):
    """An object cut by the image's left or top border (the UIUC cars' truth) has a box that
    starts outside it: CSV and JSON boxes read it as COCO's and VOC's do (info.dat, OpenCV's,
    does not); a box of no size is refused in every format."""
    (tmp_path / "b.csv").write_text("image,x,y,w,h\na.png,-10,56,100,40\n")
    np.testing.assert_array_equal(read_annotations(tmp_path / "b.csv")[str(tmp_path / "a.png")],
                                  [[-10, 56, 100, 40]])
    (tmp_path / "b.json").write_text('{"a.png": [[3, -4, 20, 20]]}')
    np.testing.assert_array_equal(read_annotations(tmp_path / "b.json")[str(tmp_path / "a.png")],
                                  [[3, -4, 20, 20]])
    (tmp_path / "z.csv").write_text("image,x,y,w,h\na.png,-10,56,0,40\n")
    with pytest.raises(AnnotationError, match=r"line 2: invalid box \[-10, 56, 0, 40\] "
                                              r"\(w, h must be > 0\)"):
        read_annotations(tmp_path / "z.csv")


def test_csv_and_json(tmp_path):
    (tmp_path / "b.csv").write_text("image,x,y,w,h\nq/a.png,1,2,3,4\nq/a.png,5,6,7,8\n")
    ann = read_annotations(tmp_path / "b.csv")
    np.testing.assert_array_equal(ann[str(tmp_path / "q/a.png")], [[1, 2, 3, 4], [5, 6, 7, 8]])
    (tmp_path / "bad.csv").write_text("image,x,y,w,h\na.png,1,2,3\n")
    with pytest.raises(AnnotationError, match="line 2: expected 5 columns"):
        read_annotations(tmp_path / "bad.csv")
    # a trailing comma (empty cells after the last column) is no misalignment
    (tmp_path / "trail.csv").write_text("image,x,y,w,h\nq/a.png,1,2,3,4,\nq/a.png,5,6,7,8, ,\n")
    np.testing.assert_array_equal(read_annotations(tmp_path / "trail.csv")[
        str(tmp_path / "q/a.png")], [[1, 2, 3, 4], [5, 6, 7, 8]])
    (tmp_path / "long.csv").write_text("image,x,y,w,h\na.png,1,2,3,4\na.png,1,2,3,4,5,6,7\n")
    with pytest.raises(AnnotationError, match="long.csv, line 3: expected 5 columns, got 8"):
        read_annotations(tmp_path / "long.csv")
    # image names relative to images=, which must exist
    (tmp_path / "q").mkdir()
    assert list(read_annotations(tmp_path / "b.csv", images=tmp_path / "q")) == [
        str(tmp_path / "q" / "q" / "a.png")]
    with pytest.raises(AnnotationError, match="nope: the image folder does not exist"):
        read_annotations(tmp_path / "b.csv", images=tmp_path / "nope")
    (tmp_path / "hdr.csv").write_text("file,x,y\n")
    with pytest.raises(AnnotationError, match=r"line 1: header must name.*'image'"):
        read_annotations(tmp_path / "hdr.csv")
    (tmp_path / "a.json").write_text(json.dumps([{"image": "a.png", "boxes": [[1, 2, 3, 4]]}]))
    (tmp_path / "b.json").write_text(json.dumps({"a.png": [[1, 2, 3, 4]]}))
    assert {k: v.tolist() for k, v in read_annotations(tmp_path / "a.json").items()} == {
        k: v.tolist() for k, v in read_annotations(tmp_path / "b.json").items()
    }
    (tmp_path / "c.json").write_text('{"a.png": [[1, 2, 3]]}')
    with pytest.raises(AnnotationError, match=r"box \[1, 2, 3\] is not"):
        read_annotations(tmp_path / "c.json")
    (tmp_path / "d.json").write_text('{"a.png": \n [[1, 2, 3, 4]')
    with pytest.raises(AnnotationError, match="line 2: invalid JSON"):
        read_annotations(tmp_path / "d.json")


@pytest.mark.shared_data
def test_shared_anchor_files(shared_dir):
    anchor = shared_dir / "data" / "traincascade-anchor"
    pos = read_vec(anchor / "cbcl_pos_19x19.vec", (19, 19))
    assert pos.shape == (2428, 19, 19) and pos.std() > 10
    bg = read_bg_list(anchor / "bg.txt")
    assert len(bg) == 3019
    assert all(p.startswith(str((shared_dir / "data" / "negatives").resolve())) for p in bg)
    faces = read_annotations(shared_dir / "data" / "cmu-mit" / "faces.csv")
    assert sum(len(b) for b in faces.values()) == 354
    first = next(iter(faces))
    assert read_image(first).ndim == 2
