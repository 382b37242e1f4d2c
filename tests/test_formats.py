"""Annotation formats (COCO, VOC, YOLO, LabelMe, CVAT), detection writers, negative regions.

Each reader is checked against hand-written files, a round trip through the writers, and
fuzzing: any input parses, or raises AnnotationError naming the file, within a time limit.
"""

from __future__ import annotations

import json
import time

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vjboost._errors import OutputError
from vjboost.io import (
    AnnotationError,
    detect_format,
    negative_mask,
    negative_regions,
    open_detection_writer,
    read_annotations,
    windows_outside,
)
from vjboost.io.formats import read_coco_results


@pytest.fixture
def images(tmp_path):
    d = tmp_path / "imgs"
    d.mkdir()
    for name, (h, w) in {"a.png": (100, 200), "b.jpg": (50, 80)}.items():
        cv2.imwrite(str(d / name), np.full((h, w), 90, np.uint8))
    return d


def _coco(tmp_path, images):
    doc = {
        "images": [{"id": 1, "file_name": "a.png", "width": 200, "height": 100},
                   {"id": 7, "file_name": "b.jpg", "width": 80, "height": 50}],
        "categories": [{"id": 1, "name": "face"}, {"id": 2, "name": "car"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10.4, 20.0, 30.2, 40.0],
             "iscrowd": 0},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [100, 10, 60, 60], "iscrowd": 1},
            {"id": 3, "image_id": 7, "category_id": 2, "bbox": [1, 2, 3, 4]},
        ],
    }
    p = images / "ann.json"
    p.write_text(json.dumps(doc))
    return p


def test_coco_category_crowd_and_errors(tmp_path, images):
    p = _coco(tmp_path, images)
    assert detect_format(p) == "coco"
    with pytest.raises(AnnotationError, match="holds 2 categories.*car.*face"):
        read_annotations(p)
    for cat in ("face", 1, "1"):
        ann = read_annotations(p, category=cat)
        a, b = str(images / "a.png"), str(images / "b.jpg")
        assert ann.format == "coco" and set(ann) == {a, b}
        # corners rounded: x 10.4 -> 10, x + w = 40.6 -> 41
        assert ann[a].tolist() == [[10, 20, 31, 40]] and ann[b].shape == (0, 4)
        assert ann.ignore_for(a).tolist() == [[100, 10, 60, 60]]
    with pytest.raises(AnnotationError, match="no category 'dog'"):
        read_annotations(p, category="dog")
    doc = json.loads(p.read_text())  # iscrowd stored as a float by some writers
    doc["annotations"][0]["iscrowd"], doc["annotations"][1]["iscrowd"] = 0.0, 1.0
    p.write_text(json.dumps(doc))
    ann = read_annotations(p, category="face")
    assert ann[a].tolist() == [[10, 20, 31, 40]]
    assert ann.ignore_for(a).tolist() == [[100, 10, 60, 60]]
    bad = json.loads(p.read_text())
    bad["annotations"][0]["bbox"] = [1, 2, -3, 4]
    p.write_text(json.dumps(bad))
    with pytest.raises(AnnotationError, match=r"ann.json: annotations\[0\].bbox.*reversed"):
        read_annotations(p, category="face")
    bad["annotations"][0]["image_id"] = 99
    p.write_text(json.dumps(bad))
    with pytest.raises(AnnotationError, match=r"annotations\[0\]: image_id 99 is not in"):
        read_annotations(p, category="face")


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["images"][0].update(width=-200), r"images\[0\].width: expected a positive "
     "integer, got -200"),
    (lambda d: d["images"][1].update(height="50"), r"images\[1\].height: expected a positive"),
    (lambda d: d["annotations"][0].update(category_id=42), r"annotations\[0\]: category_id 42 "
     "is not in 'categories'"),
    (lambda d: d["annotations"][1].update(iscrowd="yes"), r"annotations\[1\]: 'iscrowd' must be "
     "0 or 1, got 'yes'"),
    (lambda d: d["annotations"][2].update(ignore=2), r"annotations\[2\]: 'ignore' must be 0 or "
     "1, got 2"),
    (lambda d: d["images"][1].update(id=1), r"images\[1\]: id 1 is already the id of .*a.png"),
    (lambda d: d["categories"][1].update(id=1), r"categories\[1\]: id 1 is already the id of "
     "category 'face'"),
])
def test_coco_bad_values_are_refused(tmp_path, images, edit, match):
    """Values that were silently used: a negative image size, an unknown category (the box
    dropped), iscrowd "yes" (the object made an ignore region), an image or category id given
    twice (the boxes laid on the last image or named by the last category with that id)."""
    p = _coco(tmp_path, images)
    doc = json.loads(p.read_text())
    edit(doc)
    p.write_text(json.dumps(doc))
    with pytest.raises(AnnotationError, match="ann.json: " + match):
        read_annotations(p, category="face")


def test_annotations_are_checked_against_the_images_read(tmp_path, images):
    """The declared COCO size must be the image's, and a box must overlap its image: checked
    when vjeval reads the image."""
    from vjboost.eval.run import load_evaluation_set

    p = _coco(tmp_path, images)
    ann = read_annotations(p, category="face")
    es = load_evaluation_set(ann, list(ann))  # the sizes declared are right
    assert len(es.images) == 2 and es.annotations.sizes[str(images / "a.png")][:2] == (200, 100)
    doc = json.loads(p.read_text())
    # a size turned a quarter (a JPEG read upright by its EXIF orientation) is the image's
    doc["images"][1].update(width=50, height=80)
    p.write_text(json.dumps(doc))
    ann = read_annotations(p, category="face")
    assert len(load_evaluation_set(ann, list(ann)).images) == 2
    doc["images"][1].update(width=81, height=50)
    p.write_text(json.dumps(doc))
    ann = read_annotations(p, category="face")
    with pytest.raises(AnnotationError, match=r"ann.json: images\[1\]: width x height 81x50 "
                       r"contradicts the image .*b.jpg, which is 80x50"):
        load_evaluation_set(ann, list(ann))
    (tmp_path / "out.csv").write_text(f"image,x,y,w,h\n{images / 'a.png'},10,10,5,5\n"
                                      f"{images / 'b.jpg'},80,0,5,5\n")
    ann = read_annotations(tmp_path / "out.csv")
    with pytest.raises(AnnotationError, match=r"out.csv: .*b.jpg: box \[80, 0, 5, 5\] lies "
                       "entirely outside the 80x50 image"):
        load_evaluation_set(ann, list(ann))


def test_voc_folder_difficult_and_one_based_corners(tmp_path, images):
    ann_dir = tmp_path / "Annotations"
    ann_dir.mkdir()
    (ann_dir / "a.xml").write_text(
        "<annotation><filename>a.png</filename><size><width>200</width><height>100</height>"
        "</size><object><name>face</name><difficult>0</difficult><bndbox><xmin>11</xmin>"
        "<ymin>21</ymin><xmax>40</xmax><ymax>60</ymax></bndbox></object>"
        "<object><name>face</name><difficult>1</difficult><bndbox><xmin>101</xmin>"
        "<ymin>11</ymin><xmax>160</xmax><ymax>70</ymax></bndbox></object></annotation>")
    (ann_dir / "b.xml").write_text("<annotation><filename>b.jpg</filename></annotation>")
    assert detect_format(ann_dir) == "voc"
    ann = read_annotations(ann_dir, images=images)
    a = str(images / "a.png")
    assert ann[a].tolist() == [[10, 20, 30, 40]]
    assert ann.ignore_for(a).tolist() == [[100, 10, 60, 60]]
    assert ann[str(images / "b.jpg")].shape == (0, 4)
    (ann_dir / "c.xml").write_text("<annotation><filename>c.png</filename><object><name>x"
                                   "</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>q</xmax>"
                                   "<ymax>3</ymax></bndbox></object></annotation>")
    with pytest.raises(AnnotationError, match=r"c.xml: <object> #1 <xmax>: expected a number"):
        read_annotations(ann_dir, images=images)
    (ann_dir / "c.xml").write_text("<annotation><filename>c.png</filename>")
    with pytest.raises(AnnotationError, match=r"c.xml, line 1: invalid XML"):
        read_annotations(ann_dir, images=images)
    (ann_dir / "c.xml").write_text('<!DOCTYPE a [<!ENTITY x "y">]><annotation>&x;</annotation>')
    with pytest.raises(AnnotationError, match="c.xml: refused XML"):
        read_annotations(ann_dir, images=images)


def test_a_voc_datasets_root_is_read_as_its_annotations_folder(tmp_path, images):
    """A Pascal VOC dataset's root (Annotations/ and JPEGImages/) is recognised and read as
    its Annotations folder with the images of JPEGImages, as a YOLO root is read through its
    labels/ (it was 'no image files in this folder'); a folder of crops stays a folder of
    crops."""
    from vjboost.cascade.positives import load_positives

    root = tmp_path / "voc"
    (root / "Annotations").mkdir(parents=True)
    (root / "JPEGImages").symlink_to(images)
    (root / "Annotations" / "a.xml").write_text(
        "<annotation><filename>a.png</filename><object><name>face</name><bndbox><xmin>11</xmin>"
        "<ymin>21</ymin><xmax>40</xmax><ymax>60</ymax></bndbox></object></annotation>")
    assert detect_format(root) == "voc"
    ann = read_annotations(root)
    assert ann.format == "voc" and ann[str(images / "a.png")].tolist() == [
        [10, 20, 30, 40]]
    assert load_positives(root, (40, 30)).samples.shape == (1, 40, 30)
    assert detect_format(images) is None


def test_yolo_with_images_folder_and_names(tmp_path, images):
    root = tmp_path / "ds"
    (root / "labels").mkdir(parents=True)
    (root / "images").symlink_to(images)
    (root / "labels" / "a.txt").write_text("0 0.125 0.4 0.15 0.4\n1 0.5 0.5 0.1 0.1\n")
    (root / "classes.txt").write_text("face\nignore\n")
    assert detect_format(root) == "yolo"
    ann = read_annotations(root)
    a = str((images / "a.png").resolve())
    # cx 25, cy 40, w 30, h 40 in a 200x100 image -> (10, 20, 30, 40)
    assert ann[a].tolist() == [[10, 20, 30, 40]]
    assert ann.ignore_for(a).tolist() == [[90, 45, 20, 10]]
    assert ann[str((images / "b.jpg").resolve())].shape == (0, 4)  # no label file: no object
    (root / "labels" / "a.txt").write_text("0 0.5 0.5 1.5 0.1\n")
    with pytest.raises(AnnotationError, match=r"a.txt, line 1: cx, cy, w, h must be fractions"):
        read_annotations(root)
    (root / "labels" / "a.txt").write_text("0 0.5 0.5 0.2 0.2 0.9 0.1 extra\n")
    with pytest.raises(AnnotationError, match=r"a.txt, line 1: expected 'class cx cy w h' \(and "
                       "optionally a score\\), got 8 fields"):
        read_annotations(root)
    (root / "labels" / "a.txt").write_text("0 0.5 0.5 0.2 0.2 extra\n")
    with pytest.raises(AnnotationError, match=r"a.txt, line 1: score: expected a number"):
        read_annotations(root)
    (root / "labels" / "a.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    (root / "labels" / "zz.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    with pytest.raises(AnnotationError, match="zz.txt: no image named zz"):
        read_annotations(root)


def test_labelme_and_cvat(tmp_path, images):
    lm = {"imagePath": "a.png", "imageWidth": 200, "imageHeight": 100, "shapes": [
        {"label": "face", "shape_type": "rectangle", "points": [[40, 60], [10, 20]]},
        {"label": "face", "shape_type": "polygon", "points": [[0, 0], [5, 0], [5, 5]]},
        {"label": "dontcare", "shape_type": "rectangle", "points": [[100, 10], [160, 70]]},
    ]}
    p = images / "a.json"
    p.write_text(json.dumps(lm))
    assert detect_format(p) == "labelme"
    ann = read_annotations(p)
    a = str(images / "a.png")
    assert ann[a].tolist() == [[10, 20, 30, 40]]
    assert ann.ignore_for(a).tolist() == [[100, 10, 60, 60]]
    cv = images / "cvat.xml"
    cv.write_text(
        '<annotations><version>1.1</version><image id="0" name="a.png" width="200" '
        'height="100"><box label="face" occluded="0" xtl="10" ytl="20" xbr="40" ybr="60"/>'
        '<box label="face" occluded="1" xtl="100" ytl="10" xbr="160" ybr="70"/>'
        '<box label="car" occluded="0" xtl="1" ytl="1" xbr="5" ybr="5"/>'
        '<box label="face" occluded="0" xtl="50" ytl="50" xbr="60" ybr="60">'
        '<attribute name="ignore">true</attribute></box></image>'
        '<image id="1" name="b.jpg" width="80" height="50"/></annotations>')
    assert detect_format(cv) == "cvat"
    with pytest.raises(AnnotationError, match="holds 2 categories"):
        read_annotations(cv)
    ann = read_annotations(cv, category="face")
    assert ann[a].tolist() == [[10, 20, 30, 40]]
    assert sorted(ann.ignore_for(a).tolist()) == [[50, 50, 10, 10], [100, 10, 60, 60]]
    cv.write_text('<annotations><image name="a.png"><box label="face" xtl="1" ytl="2" '
                  'xbr="3"/></image></annotations>')
    with pytest.raises(AnnotationError, match=r"<image> #1 \(a.png\) <box> #1: missing the "
                                              "'ybr' attribute"):
        read_annotations(cv)


def test_writers_round_trip_and_coco_results(tmp_path, images):
    boxes = {"a.png": ([[10, 20, 30, 40], [100, 10, 50, 50]], [0.9, 0.4]), "b.jpg": ([], [])}
    sizes = {"a.png": (200, 100), "b.jpg": (80, 50)}
    for fmt, dest in (("coco", tmp_path / "d.json"), ("voc", tmp_path / "voc"),
                      ("yolo", tmp_path / "yolo" / "labels")):
        if fmt == "yolo":
            (tmp_path / "yolo").mkdir()
        with open_detection_writer(dest, format=fmt, label="face") as w:
            for n, (b, s) in boxes.items():
                w.add(str(images / n), b, s, image_size=sizes[n])
        kw = {"images": images} if fmt in ("coco", "voc", "yolo") else {}
        ann = read_annotations(dest, **kw)
        a = str((images / "a.png").resolve()) if fmt == "yolo" else str(images / "a.png")
        assert sorted(ann[a].tolist()) == sorted(boxes["a.png"][0]), fmt
    gt = read_annotations(tmp_path / "d.json", images=images)
    dets = read_coco_results(tmp_path / "d.json", gt)
    np.testing.assert_allclose(dets[str(images / "a.png")][1], [0.9, 0.4])
    results = [{"image_id": "a.png", "bbox": [10.0, 20.0, 30.0, 40.0], "score": 0.8,
                "category_id": 1}]
    (tmp_path / "r.json").write_text(json.dumps(results))
    dets = read_coco_results(tmp_path / "r.json", gt)
    assert dets[str(images / "a.png")][0].tolist() == [[10, 20, 30, 40]]
    (tmp_path / "r.json").write_text(json.dumps([{"image_id": "zz.png", "bbox": [1, 1, 1, 1]}]))
    with pytest.raises(AnnotationError, match="image_id 'zz.png' is not an image"):
        read_coco_results(tmp_path / "r.json", gt)



def test_writers_number_every_video_frame_the_first_included(tmp_path):
    """A video's frame 0 is a frame like the others: COCO gives its image "frame": 0 and VOC /
    YOLO name its file <stem>_000000 (it had neither, so it read as a still image named like
    one); a still image has no frame."""
    (tmp_path / "yolo").mkdir()
    outs = {"coco": tmp_path / "d.json", "voc": tmp_path / "voc", "yolo": tmp_path / "yolo" / "l"}
    for fmt, dest in outs.items():
        with open_detection_writer(dest, format=fmt) as w:
            for k in (0, 1):
                w.add("clip.avi", [[1, 2, 3, 4]], [0.5], frame=k, image_size=(16, 12))
            w.add("photo.png", [[1, 2, 3, 4]], [0.5], image_size=(16, 12))
    doc = json.loads(outs["coco"].read_text())
    assert [im.get("frame") for im in doc["images"]] == [0, 1, None]
    assert sorted(f.stem for f in outs["voc"].iterdir()) == ["clip_000000", "clip_000001",
                                                               "photo"]
    assert sorted(f.stem for f in outs["yolo"].glob("*.txt") if f.stem != "classes") == [
        "clip_000000", "clip_000001", "photo"]
    with open_detection_writer(tmp_path / "d.jsonl", format="jsonl") as w:
        w.add("clip.avi", [[1, 2, 3, 4]], [0.5], frame=0)
        w.add("photo.png", [[1, 2, 3, 4]], [0.5])
    rows = [json.loads(r) for r in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert [r["frame"] for r in rows] == [0, 0]


def test_writer_refuses_bad_outputs_before_work(tmp_path):
    with pytest.raises(OutputError, match="/nonexistent/dir does not exist"):
        open_detection_writer("/nonexistent/dir/out.jsonl")
    with pytest.raises(OutputError, match="is a folder"):
        open_detection_writer(tmp_path)
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match="not a folder"):
        open_detection_writer(tmp_path / "f", format="voc")
    # a failed run leaves no partial jsonl behind
    p = tmp_path / "x.jsonl"
    with pytest.raises(RuntimeError), open_detection_writer(p) as w:
        w.add("a.png", [[1, 2, 3, 4]], [1.0])
        raise RuntimeError("boom")
    assert not p.exists() and not list(tmp_path.glob(".x.jsonl*"))


def test_negative_mask_matches_brute_force():
    rng = np.random.default_rng(0)
    boxes = rng.integers(0, 60, (4, 4)) + [0, 0, 5, 5]
    ign = [[5, 50, 10, 8]]
    m = negative_mask((70, 90), boxes, ign, margin=0.2)
    wins = np.concatenate([rng.integers(-5, 90, (400, 2)), rng.integers(1, 30, (400, 2))], 1)
    got = windows_outside(m, wins)
    for (x, y, w, h), g in zip(wins.tolist(), got.tolist(), strict=True):
        ok = x >= 0 and y >= 0 and x + w <= 90 and y + h <= 70 and m[y:y + h, x:x + w].all()
        assert g == ok
    # the mask is False exactly on the grown boxes
    yy, xx = np.mgrid[:70, :90]
    want = np.ones((70, 90), bool)
    for x, y, w, h in np.concatenate([boxes, ign]).tolist():
        mx, my = 0.2 * w, 0.2 * h
        want &= ~((xx >= np.floor(x - mx)) & (xx < np.ceil(x + w + mx))
                  & (yy >= np.floor(y - my)) & (yy < np.ceil(y + h + my)))
    assert np.array_equal(m, want)


def test_negative_regions_walks_an_annotation_set(tmp_path, images):
    ann = read_annotations(_coco(tmp_path, images), category="face")
    got = dict(negative_regions(ann))
    a = str(images / "a.png")
    assert got[a].shape == (100, 200) and not got[a][30, 20] and not got[a][20, 120]
    assert got[str(images / "b.jpg")].all()


# -- fuzzing: parses, or raises AnnotationError naming the file, quickly ---------------------------

_SEEDS = {
    "coco": json.dumps({"images": [{"id": 1, "file_name": "a.png"}], "categories": [
        {"id": 1, "name": "f"}], "annotations": [{"image_id": 1, "category_id": 1,
                                                 "bbox": [1, 2, 3, 4], "iscrowd": 0}]}),
    "voc": "<annotation><filename>a.png</filename><object><name>f</name><difficult>0"
           "</difficult><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax>"
           "</bndbox></object></annotation>",
    "labelme": json.dumps({"imagePath": "a.png", "shapes": [
        {"label": "f", "shape_type": "rectangle", "points": [[1, 2], [3, 4]]}]}),
    "cvat": '<annotations><image name="a.png"><box label="f" xtl="1" ytl="2" xbr="3" ybr="4"/>'
            "</image></annotations>",
    "info": "a.png 1 1 2 3 4\n",
    "csv": "image,x,y,w,h\na.png,1,2,3,4\n",
    "json": '{"a.png": [[1, 2, 3, 4]]}',
}
_SUFFIX = {"coco": ".json", "voc": ".xml", "labelme": ".json", "cvat": ".xml", "info": ".dat",
           "csv": ".csv", "json": ".json"}


def _mutate(text: str, data) -> str:
    ops = data.draw(st.lists(st.tuples(st.integers(0, max(len(text) - 1, 0)),
                                       st.integers(0, 3),
                                       st.text(alphabet='0123456789.-e"{}[]<>/=, \nx', max_size=6)),
                             max_size=4))
    for pos, op, ins in ops:
        if op == 0:
            text = text[:pos] + ins + text[pos:]
        elif op == 1:
            text = text[:pos] + text[pos + len(ins) + 1:]
        elif op == 2:
            text = text[:pos] + ins + text[pos + len(ins):]
        else:
            text = text[:pos]
    return text


_FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@settings(max_examples=150, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(fmt=st.sampled_from(sorted(_SEEDS)), data=st.data())
def test_fuzzed_annotations_parse_or_raise_naming_the_file(tmp_path, fmt, data):
    text = _mutate(_SEEDS[fmt], data)
    p = tmp_path / f"fuzz{_SUFFIX[fmt]}"
    p.write_text(text, encoding="utf-8")
    t0 = time.perf_counter()
    try:
        ann = read_annotations(p, format=fmt)
    except AnnotationError as exc:
        assert str(p) in str(exc) and "\n" not in str(exc)
    else:
        for v in ann.values():
            assert v.dtype == np.int64 and v.shape[1] == 4
    assert time.perf_counter() - t0 < 5.0


@settings(max_examples=60, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(raw=st.binary(max_size=300), fmt=st.sampled_from(sorted(_SEEDS)))
def test_random_bytes_parse_or_raise(tmp_path, raw, fmt):
    p = tmp_path / f"bytes{_SUFFIX[fmt]}"
    p.write_bytes(raw)
    try:
        read_annotations(p, format=fmt)
    except AnnotationError as exc:
        assert str(p) in str(exc)


def test_deep_nesting_and_huge_numbers(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(AnnotationError, match="deep.json"):
        read_annotations(p, format="coco")
    p.write_text('{"a.png": [[1, 2, ' + "9" * 5000 + ", 4]]}")
    with pytest.raises(AnnotationError, match="deep.json"):
        read_annotations(p)
    p.write_text('{"a.png": [[1, 2, 99999999999, 4]]}')
    with pytest.raises(AnnotationError, match="deep.json.*out of range|must be integers"):
        read_annotations(p)


def test_positives_from_annotation_formats_exclude_ignore_regions(tmp_path, images):
    from vjboost.cascade.positives import load_positives
    from vjboost.cli.train import _load_positives

    img = np.zeros((100, 200), np.uint8)
    img[20:60, 10:41] = 200  # the object (the box rounds to x 10..40)
    img[10:70, 100:160] = 50  # the crowd
    cv2.imwrite(str(images / "a.png"), img)
    p = _coco(tmp_path, images)
    ps = load_positives(p, (8, 6), category="face")
    assert len(ps.samples) == 1 and ps.samples.min() == 200  # the crowd box is not a positive
    with pytest.raises(ValueError, match="holds 2 categories"):
        load_positives(p, (8, 6))
    got, images = _load_positives(str(p), (8, 6), False, print, annotation_format="coco",
                                  category="1")
    np.testing.assert_array_equal(got, ps.samples)
    assert images == ps.images and len(images) >= 1
