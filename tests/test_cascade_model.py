"""Cascade model, OpenCV XML import/export and vjboost's own format."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.cascade import (
    CascadeFormatError,
    CascadeModel,
    ExportError,
    HaarFeature,
    LBPFeature,
    ModelError,
    Stage,
    Tree,
    load_model,
    read_opencv_xml,
    save_model,
    to_opencv_xml,
    write_opencv_xml,
)
from vjboost.cascade.model_io import model_from_dict, model_to_dict
from vjboost.cascade.synthetic import random_cascade, random_tree_layout

OLD_LAYOUT = b"""<?xml version="1.0"?>
<opencv_storage>
<tiny type_id="opencv-haar-classifier">
  <size>20 16</size>
  <stages>
    <_>
      <!-- stage 0 -->
      <trees>
        <_>
          <_>
            <feature>
              <rects><_>2 2 8 6 -1.</_><_>2 5 8 3 2.</_></rects>
              <tilted>0</tilted></feature>
            <threshold>0.0125</threshold>
            <left_val>-0.75</left_val>
            <right_node>1</right_node></_>
          <_>
            <feature>
              <rects><_>6 1 4 3 -1.</_><_>6 1 2 3 2.</_><_>0 0 1 1 1e-9</_></rects>
              <tilted>1</tilted></feature>
            <threshold>-0.002</threshold>
            <left_val>0.5</left_val>
            <right_val>0.25</right_val></_></_>
        <_>
          <_>
            <feature>
              <rects><_>0 0 20 16 -1.</_><_>5 4 10 8 4.</_></rects></feature>
            <threshold>0.1</threshold>
            <left_val>1.5</left_val>
            <right_val>-1.5</right_val></_></_></trees>
      <stage_threshold>-1.25</stage_threshold>
      <parent>-1</parent>
      <next>-1</next></_></stages>
</tiny>
</opencv_storage>
"""


def _haar_model() -> CascadeModel:
    feats = [HaarFeature(((0, 0, 4, 4, -1.0), (0, 0, 2, 4, 2.0))),
             HaarFeature(((4, 1, 3, 2, -1.0), (4, 1, 1, 2, 2.0)), tilted=True)]
    trees = [Tree.stump(0, 0.01, -1.0, 1.0),
             Tree([1], [0], [1], [0.5], [0.25, -0.25]) if False else Tree.stump(1, -0.2, 0.5, -0.5)]
    return CascadeModel((10, 12), [Stage(trees, -0.5)], feats, "HAAR")


# ------------------------------------------------------------------------------------------------
# Model
# ------------------------------------------------------------------------------------------------


def test_tree_layout_is_validated():
    with pytest.raises(ModelError, match="leaf values"):
        Tree([0], [-1], [0], [0.0], [1.0])
    with pytest.raises(ModelError, match="do not form a tree"):
        Tree([0, -1], [-1, -2], [0, 0], [0.0, 0.0], [1.0, 2.0, 3.0])
    with pytest.raises(ModelError, match="missing node"):
        Tree([5], [-1], [0], [0.0], [1.0, 2.0])


def test_tree_predict_follows_opencv_codes():
    # root: left -> leaf 0, right -> node 1; node 1: left leaf 1, right leaf 2
    t = Tree([0, -1], [1, -2], [0, 1], [0.5, -1.0], [10.0, 20.0, 30.0])
    vals = np.array([[0.4, 0.6, 0.6], [5.0, -2.0, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(t.predict(vals), [10.0, 20.0, 30.0])
    sub = np.zeros((1, 8), dtype=np.uint32)
    sub[0, 7] = 1 << 31  # code 255 goes left
    c = Tree.categorical_stump(0, sub[0], 1.0, -1.0)
    np.testing.assert_array_equal(c.predict(np.array([[255.0, 254.0]])), [1.0, -1.0])


def test_stage_threshold_uses_float32_epsilon():
    st_ = Stage([Tree.stump(0, 0.0, 1.0, 1.0)], 1.0)
    assert st_.reject_threshold == np.float32(np.float32(1.0) - np.float32(1e-5))
    m = CascadeModel((6, 6), [st_], [HaarFeature(((0, 0, 2, 2, 1.0), (2, 2, 2, 2, -1.0)))])
    n_passed, last = m.predict_values(np.zeros((1, 3), dtype=np.float32))
    np.testing.assert_array_equal(n_passed, 1)
    np.testing.assert_array_equal(last, 1.0)


def test_model_validation_messages():
    f = HaarFeature(((0, 0, 4, 4, -1.0), (0, 0, 2, 4, 2.0)))
    with pytest.raises(ModelError, match="outside"):
        CascadeModel((3, 3), [Stage([Tree.stump(0, 0, 1, -1)], 0)], [f])
    with pytest.raises(ModelError, match="feature index 3 out of range"):
        CascadeModel((8, 8), [Stage([Tree.stump(3, 0, 1, -1)], 0)], [f])
    with pytest.raises(ModelError, match="tilted rectangles"):
        HaarFeature(((0, 0, 2, 2, 1.0), (0, 0, 1, 1, -1.0)), tilted=True).check((8, 8))
    with pytest.raises(ModelError, match="LBP grid"):
        LBPFeature((0, 0, 3, 3)).check((8, 8))
    with pytest.raises(ModelError, match="categorical"):
        CascadeModel((9, 9), [Stage([Tree.stump(0, 0, 1, -1)], 0)], [LBPFeature((0, 0, 3, 3))],
                     "LBP")


def test_random_tree_layout_is_bfs_full_tree():
    rng = np.random.default_rng(0)
    for n in range(1, 12):
        left, right = random_tree_layout(n, rng)
        t = Tree(left, right, np.zeros(n, int), np.zeros(n), np.arange(n + 1))
        assert t.n_nodes == n
        internal = [c for pair in zip(left, right, strict=True) for c in pair if c > 0]
        assert internal == sorted(internal)  # breadth-first numbering


# ------------------------------------------------------------------------------------------------
# OpenCV XML
# ------------------------------------------------------------------------------------------------


def test_read_old_layout_like_opencv(tmp_path):
    p = tmp_path / "old.xml"
    p.write_bytes(OLD_LAYOUT)
    m = read_opencv_xml(p)
    assert m.params["format"] == "opencv-haartraining"
    assert m.window_shape == (16, 20) and m.n_stages == 1 and m.n_trees == 2
    t0, t1 = m.stages[0].trees
    # leaves numbered in file order, left before right; node children copied
    np.testing.assert_array_equal(t0.left, [0, -1])
    np.testing.assert_array_equal(t0.right, [1, -2])
    np.testing.assert_array_equal(t0.leaves, np.float32([-0.75, 0.5, 0.25]))
    assert len(m.features) == 3  # one feature per node, no de-duplication
    assert m.features[1].tilted and len(m.features[1].rects) == 2  # tiny third rect dropped
    assert m.stages[0].threshold == np.float32(-1.25)


def test_old_layout_loads_in_opencv_identically(tmp_path):
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "CascadeClassifier"):
        pytest.skip("cv2 lacks CascadeClassifier")
    from vjboost.cascade import CascadeDetector

    p = tmp_path / "old.xml"
    p.write_bytes(OLD_LAYOUT)
    m = read_opencv_xml(p)
    img = (np.random.default_rng(1).random((90, 110)) * 255).astype(np.uint8)
    img = cv2.GaussianBlur(img, (5, 5), 2)
    ours = CascadeDetector(m, scale_factor=1.15, min_neighbors=0).detect(img)
    ref = cv2.CascadeClassifier(str(p)).detectMultiScale(img, 1.15, 0)
    assert len(ours) > 0
    assert sorted(map(tuple, ours.boxes.tolist())) == sorted(
        map(tuple, np.asarray(ref).reshape(-1, 4).tolist()))


def test_shipped_cascades_parse():
    cv2 = pytest.importorskip("cv2")
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    import pathlib

    files = sorted(pathlib.Path(base).glob("*.xml")) if base else []
    if not files:
        pytest.skip("cv2.data ships no cascades")
    for f in files:
        m = read_opencv_xml(f)
        assert m.n_stages > 0 and m.feature_type == "HAAR"
    d = read_opencv_xml(pathlib.Path(base) / "haarcascade_frontalface_default.xml")
    assert (d.window_shape, d.n_stages, d.n_trees) == ((24, 24), 25, 2913)


def test_skimage_lbp_cascade_misspelled_tag():
    skd = pytest.importorskip("skimage.data")
    path = skd.lbp_frontal_face_cascade_filename()
    with pytest.warns(UserWarning, match="featureParams"):
        m = read_opencv_xml(path)
    assert m.feature_type == "LBP" and m.n_stages == 20
    with pytest.raises(CascadeFormatError, match="featureParams"):
        read_opencv_xml(path, strict=True)


def test_hog_cascade_refused():
    xml = OLD_LAYOUT.replace(b"<size>20 16</size>", b"")
    xml = b"""<?xml version="1.0"?><opencv_storage><cascade><stageType>BOOST</stageType>
      <featureType>HOG</featureType><height>8</height><width>8</width></cascade>
      </opencv_storage>"""
    with pytest.raises(CascadeFormatError, match="HOG"):
        read_opencv_xml(xml)


@pytest.mark.parametrize("cut", [0.2, 0.5, 0.8, 0.97])
def test_truncated_xml_names_file(tmp_path, cut):
    text = to_opencv_xml(random_cascade("HAAR", seed=1)).encode()
    p = tmp_path / "cut.xml"
    p.write_bytes(text[: int(len(text) * cut)])
    with pytest.raises(CascadeFormatError, match=r"cut\.xml: malformed or truncated XML at line"):
        read_opencv_xml(p)


@pytest.mark.parametrize(
    ("tag", "new_tag", "new_text", "where"),
    [
        ("stageThreshold", "stageThreshol", None,
         r"<cascade/stages/_\[0\]>: missing child <stageThreshold>"),
        ("internalNodes", None, "0 -1 x 0.5",
         r"<cascade/stages/_\[0\]/weakClassifiers/_\[0\]/internalNodes>: not a number: 'x'"),
        ("leafValues", "leafValue", None,
         r"<cascade/stages/_\[0\]/weakClassifiers/_\[0\]>: missing child <leafValues>"),
        ("height", None, "0", r"<cascade/height>: invalid window size"),
        ("featureType", None, "SIFT", r"<cascade/featureType>: unknown feature type 'SIFT'"),
        ("rects", "rect", None, r"<cascade/features/_\[0\]>: missing child <rects>"),
        ("stages", None, "", r"<cascade/stages>: no stages"),
    ],
)
def test_malformed_xml_names_element(tmp_path, tag, new_tag, new_text, where):
    import re

    text = to_opencv_xml(random_cascade("HAAR", seed=2))

    def edit(m):
        t = new_tag or tag
        body = m.group(1) if new_text is None else new_text
        return f"<{t}>{body}</{t}>"

    bad, n = re.subn(rf"<{tag}>(.*?)</{tag}>", edit, text, count=1, flags=re.S)
    assert n == 1
    p = tmp_path / "bad.xml"
    p.write_text(bad)
    with pytest.raises(CascadeFormatError, match=r"bad\.xml: element " + where):
        read_opencv_xml(p)


def test_bad_feature_index_and_leaf_count(tmp_path):
    m = random_cascade("HAAR", seed=3)
    text = to_opencv_xml(m)
    n = len(m.features)
    bad = text.replace("<internalNodes>\n            0 -1 0 ",
                       f"<internalNodes>\n            0 -1 {n + 5} ", 1)
    with pytest.raises(CascadeFormatError, match=f"feature index {n + 5}"):
        read_opencv_xml(bad.encode())
    i = text.index("<leafValues>")
    j = text.index("</leafValues>", i)
    bad2 = text[:i] + "<leafValues>1. 2. 3." + text[j:]
    with pytest.raises(CascadeFormatError, match="leaf values"):
        read_opencv_xml(bad2.encode())


def test_unsafe_xml_refused():
    bomb = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<opencv_storage><c><stageType>&lol2;</stageType></c></opencv_storage>"""
    with pytest.raises(CascadeFormatError, match="unsafe XML"):
        read_opencv_xml(bomb)
    ext = b"""<?xml version="1.0"?>
<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>
<opencv_storage><c><stageType>&e;</stageType></c></opencv_storage>"""
    with pytest.raises(CascadeFormatError, match="unsafe XML"):
        read_opencv_xml(ext)


def test_missing_file_and_not_opencv(tmp_path):
    with pytest.raises(CascadeFormatError, match="no such file"):
        read_opencv_xml(tmp_path / "nope.xml")
    (tmp_path / "x.xml").write_text("<?xml version='1.0'?><root/>")
    with pytest.raises(CascadeFormatError, match="opencv_storage"):
        read_opencv_xml(tmp_path / "x.xml")


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**31 - 1),
    ftype=st.sampled_from(["HAAR", "LBP"]),
    max_nodes=st.integers(1, 4),
    tilted=st.floats(0.0, 1.0),
    w=st.integers(9, 30),
    h=st.integers(9, 30),
)
def test_xml_roundtrip_generated_cascades(seed, ftype, max_nodes, tilted, w, h):
    m = random_cascade(ftype, window=(w, h), n_stages=3, max_nodes=max_nodes,
                       tilted_fraction=tilted, seed=seed)
    text = to_opencv_xml(m)
    back = read_opencv_xml(text.encode())
    assert back == m
    # and the own format
    assert model_from_dict(json.loads(json.dumps(model_to_dict(m)))) == m


def test_export_writes_stumps_as_0_minus1_and_full_params(tmp_path):
    m = _haar_model()
    # a stump written with swapped codes must be normalised (OpenCV's stump path ignores codes)
    m.stages[0].trees[0] = Tree([-1], [0], [0], [0.01], [1.0, -1.0])
    p = tmp_path / "c.xml"
    write_opencv_xml(m, p)
    text = p.read_text()
    assert "0 -1 0 0.00999999978" in text and "-1. 1." in text
    for key in ("boostType", "minHitRate", "maxFalseAlarm", "weightTrimRate", "maxDepth",
                "maxWeakCount", "maxCatCount", "featSize", "<mode>ALL</mode>"):
        assert key in text
    back = read_opencv_xml(p)
    vals = np.array([[0.0, 0.02], [0.0, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(back.stages[0].trees[0].predict(vals),
                                  m.stages[0].trees[0].predict(vals))


def test_export_float32_exact():
    m = random_cascade("HAAR", seed=5, max_nodes=3)
    back = read_opencv_xml(to_opencv_xml(m).encode())
    for a, b in zip(m.stages, back.stages, strict=True):
        assert np.float32(a.threshold) == np.float32(b.threshold)
        for ta, tb in zip(a.trees, b.trees, strict=True):
            assert ta.threshold.tobytes() == tb.threshold.tobytes()
            assert ta.leaves.tobytes() == tb.leaves.tobytes()


def test_family_cascades_refused_for_xml_but_saved_in_own_format(tmp_path):
    from vjboost.features import get_family_class

    hog = get_family_class("hog")(window_shape=(16, 16), pixels_per_cell=(7, 7))
    tree = Tree.stump(0, 0.1, -1.0, 1.0)
    m = CascadeModel((16, 16), [Stage([tree, Tree.stump(1, 0.2, 1.0, -0.5)], -0.1)], [3, 7],
                     "family", hog, params={"note": "x"})
    with pytest.raises(ExportError, match="'hog'.*refuses HOG"):
        to_opencv_xml(m)
    with pytest.raises(ExportError, match="own format"):
        save_model(m, tmp_path / "m.xml")
    save_model(m, tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    assert back == m and back.family.get_config() == hog.get_config()
    assert back.params == {"note": "x"}


def test_haar_family_cascade_exports_via_describe(tmp_path):
    from vjboost.features import get_family_class

    fam = get_family_class("haar")(window_shape=(12, 12), mode="ALL")
    ids = [0, 17, fam.n_features - 1]
    trees = [Tree.stump(k, 0.01 * k, -1.0, 1.0) for k in range(3)]
    m = CascadeModel((12, 12), [Stage(trees, -0.5)], ids, "family", fam)
    back = read_opencv_xml(to_opencv_xml(m).encode())
    for k, i in enumerate(ids):
        d = fam.describe(i)
        assert back.features[k].rects == HaarFeature(tuple(map(tuple, d["rects"]))).rects
        assert back.features[k].tilted == bool(d["tilted"])


def test_own_format_roundtrip_exact(tmp_path):
    for kw in ({"feature_type": "HAAR", "max_nodes": 3, "tilted_fraction": 0.5},
               {"feature_type": "LBP", "max_nodes": 2}):
        m = random_cascade(seed=11, **kw)
        m.params["trainer"] = {"rounds": 3}
        p = tmp_path / "m.json"
        save_model(m, p)
        doc = json.loads(p.read_text())
        assert doc["format"] == "vjboost-cascade" and doc["version"] == 1
        assert load_model(p) == m
        # XML through load_model too
        write_opencv_xml(m, tmp_path / "m.xml")
        assert load_model(tmp_path / "m.xml") == m


def test_own_format_errors(tmp_path):
    p = tmp_path / "m.json"
    save_model(random_cascade(seed=1), p)
    doc = json.loads(p.read_text())
    doc["version"] = 99
    p.write_text(json.dumps(doc))
    with pytest.raises(CascadeFormatError, match="unsupported format version 99"):
        load_model(p)
    p.write_text(p.read_text()[:50])
    with pytest.raises(CascadeFormatError, match="m.json: malformed or truncated JSON"):
        load_model(p)
    p.write_text('{"format": "other"}')
    with pytest.raises(CascadeFormatError, match="not a vjboost cascade"):
        load_model(p)
    doc2 = model_to_dict(random_cascade(seed=1))
    doc2["stages"][0]["trees"][0]["leaves"] = [1.0]
    with pytest.raises(CascadeFormatError, match=r"stages\[0\]\.trees\[0\]"):
        model_from_dict(doc2, "d.json")


def test_no_warning_for_valid_files():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_opencv_xml(to_opencv_xml(random_cascade("LBP", seed=0)).encode())
