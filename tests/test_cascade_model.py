"""Cascade model, OpenCV XML import/export and vjboost's own format."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.boost.tree import Tree
from vjboost.cascade import (
    CascadeFormatError,
    CascadeModel,
    ExportError,
    ModelError,
    Stage,
    cascade_accepts,
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
    from vjboost.cascade.opencv_xml import opencv_family

    fam = opencv_family((10, 12), "HAAR", [
        (((0, 0, 4, 4, -1.0), (0, 0, 2, 4, 2.0)), False),
        (((4, 1, 3, 2, -1.0), (4, 1, 1, 2, 2.0)), True)])
    trees = [Tree.stump(0, threshold=0.01, left_value=-1.0, right_value=1.0),
             Tree.stump(1, threshold=-0.2, left_value=0.5, right_value=-0.5)]
    return CascadeModel((10, 12), stages=[Stage(trees, threshold=-0.5)], family=fam,
                        feature_ids=[0, 1])


def _lbp_family(window=(9, 9)):
    from vjboost.features import get_family_class

    return get_family_class("mblbp")(window)


# ------------------------------------------------------------------------------------------------
# Model
# ------------------------------------------------------------------------------------------------


def test_stage_rounds_to_float32_and_uses_float32_epsilon():
    st_ = Stage([Tree.stump(0, threshold=0.0, left_value=1.0, right_value=1.0)], threshold=1.0)
    assert st_.reject_threshold == np.float32(np.float32(1.0) - np.float32(1e-5))
    st2 = Stage([Tree.stump(0, threshold=0.0, left_value=0.1, right_value=0.2)], threshold=0.3)
    assert st2.threshold == float(np.float32(0.3))
    assert st2.trees[0].leaves.tolist() == [float(np.float32(0.1)), float(np.float32(0.2))]
    # a stage scoring exactly its threshold passes (score >= float32(t) - 1e-5)
    from vjboost.features.haar import HaarFamily

    fam = HaarFamily.from_rects((6, 6), rects=[[[0, 0, 2, 2], [2, 2, 2, 2], [0, 0, 0, 0]]],
                                weights=[[1.0, -1.0, 0.0]], tilted=[False])
    m = CascadeModel((6, 6), stages=[st_], family=fam, feature_ids=[0])
    acc, n_passed = cascade_accepts(m, np.zeros((3, 6, 6), np.uint8))
    assert acc.all() and (n_passed == 1).all()


def test_model_validation_messages():
    fam = _haar_model().family
    stump = Tree.stump(0, threshold=0.0, left_value=1.0, right_value=-1.0)
    with pytest.raises(ModelError, match="family window"):
        CascadeModel((8, 8), stages=[Stage([stump], threshold=0)], family=fam, feature_ids=[0])
    with pytest.raises(ModelError, match="feature index 3 out of range"):
        CascadeModel((10, 12), stages=[Stage([Tree.stump(3, threshold=0, left_value=1,
                                                         right_value=-1)], threshold=0)],
                     family=fam, feature_ids=[0])
    with pytest.raises(ModelError, match="feature_ids: ids must lie in 0..1"):
        CascadeModel((10, 12), stages=[Stage([stump], threshold=0)], family=fam,
                     feature_ids=[7])
    with pytest.raises(ModelError, match="by threshold, but the family's feature 0 is "
                                         "categorical"):
        CascadeModel((9, 9), stages=[Stage([stump], threshold=0)], family=_lbp_family(),
                     feature_ids=[0])
    cat = Tree.categorical_stump(0, subset=np.ones(8, np.uint32), left_value=1.0,
                                 right_value=-1.0)
    with pytest.raises(ModelError, match="categorically, but the family's feature 0 is ordered"):
        CascadeModel((10, 12), stages=[Stage([cat], threshold=0)], family=fam, feature_ids=[0])
    with pytest.raises(ModelError, match="scalar leaves"):
        Stage([Tree.stump(0, threshold=0, left_value=[1, 2], right_value=[3, 4])], threshold=0)
    with pytest.raises(ModelError, match="at least one tree"):
        Stage([], threshold=0)
    with pytest.raises(ModelError, match="finite"):
        Stage([stump], threshold=float("nan"))


def test_mixed_tree_nodes_follow_the_family_kinds():
    """One tree may split a categorical and an ordered feature of a pool."""
    from vjboost.features import FeaturePool, get_family_class

    pool = FeaturePool([get_family_class("haar")((9, 9)), _lbp_family()])
    n_haar = pool.families[0].n_features
    sub = np.zeros((2, 8), np.uint32)
    sub[1] = 0xF0F0F0F0
    tree = Tree([0, 1], threshold=[0.1, 0.0], left=[-0, -1], right=[1, -2],
                leaves=[1.0, -1.0, 0.5], categorical=[False, True], subsets=sub)
    m = CascadeModel((9, 9), stages=[Stage([tree], threshold=0.0)], family=pool,
                     feature_ids=[3, n_haar + 5])
    assert m.n_features == 2 and "pool of haar+mblbp" in m.summary()
    bad = Tree([0, 1], threshold=[0.1, 0.0], left=[-0, -1], right=[1, -2],
               leaves=[1.0, -1.0, 0.5], categorical=[False, True], subsets=sub)
    with pytest.raises(ModelError, match="node 1"):
        CascadeModel((9, 9), stages=[Stage([bad], threshold=0.0)], family=pool,
                     feature_ids=[3, 4])


def test_random_tree_layout_is_bfs_full_tree():
    rng = np.random.default_rng(0)
    for n in range(1, 12):
        left, right = random_tree_layout(n, rng)
        t = Tree(np.zeros(n, int), threshold=np.zeros(n), left=left, right=right,
                 leaves=np.arange(n + 1))
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
    assert m.n_features == 3  # one feature per node, no de-duplication
    f1 = m.family.describe(1)
    assert f1["tilted"] and len(f1["rects"]) == 2  # tiny third rect dropped
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


@pytest.mark.slow
def test_shipped_cascades_parse():
    cv2 = pytest.importorskip("cv2")
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    import pathlib

    files = sorted(pathlib.Path(base).glob("*.xml")) if base else []
    if not files:
        pytest.skip("cv2.data ships no cascades")
    for f in files:
        m = read_opencv_xml(f)
        assert m.n_stages > 0 and m.opencv_type == "HAAR"
    d = read_opencv_xml(pathlib.Path(base) / "haarcascade_frontalface_default.xml")
    assert (d.window_shape, d.n_stages, d.n_trees) == ((24, 24), 25, 2913)


def test_skimage_lbp_cascade_misspelled_tag():
    skd = pytest.importorskip("skimage.data")
    path = skd.lbp_frontal_face_cascade_filename()
    with pytest.warns(UserWarning, match="featureParams"):
        m = read_opencv_xml(path)
    assert m.opencv_type == "LBP" and m.n_stages == 20
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
    n = m.n_features
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
    m.stages[0].trees[0] = Tree([0], threshold=[0.01], left=[-1], right=[0], leaves=[1.0, -1.0])
    p = tmp_path / "c.xml"
    write_opencv_xml(m, p)
    text = p.read_text()
    assert "0 -1 0 0.00999999978" in text and "-1. 1." in text
    for key in ("boostType", "minHitRate", "maxFalseAlarm", "weightTrimRate", "maxDepth",
                "maxWeakCount", "maxCatCount", "featSize", "<mode>ALL</mode>"):
        assert key in text
    back = read_opencv_xml(p)
    vals = np.array([[0.0, 0.02], [0.0, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(back.stages[0].trees[0].predict_matrix(vals),
                                  m.stages[0].trees[0].predict_matrix(vals))


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
    trees = [Tree.stump(0, threshold=0.1, left_value=-1.0, right_value=1.0),
             Tree.stump(1, threshold=0.2, left_value=1.0, right_value=-0.5)]
    m = CascadeModel((16, 16), stages=[Stage(trees, threshold=-0.1)], family=hog,
                     feature_ids=[3, 7], params={"note": "x"})
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
    trees = [Tree.stump(k, threshold=0.01 * k, left_value=-1.0, right_value=1.0)
             for k in range(3)]
    m = CascadeModel((12, 12), stages=[Stage(trees, threshold=-0.5)], family=fam,
                     feature_ids=ids)
    back = read_opencv_xml(to_opencv_xml(m).encode())
    assert back.stages == m.stages
    for k, i in enumerate(ids):
        d, b = fam.describe(i), back.family.describe(k)
        assert [tuple(r) for r in b["rects"]] == [tuple(r) for r in d["rects"]]
        assert b["tilted"] == bool(d["tilted"])
    # the same features through a pool of one OpenCV family, and a pool mixing two refused
    from vjboost.features import FeaturePool

    pool = FeaturePool([fam, get_family_class("mblbp")((12, 12))])
    m2 = CascadeModel((12, 12), stages=m.stages, family=pool, feature_ids=ids)
    assert read_opencv_xml(to_opencv_xml(m2).encode()) == back
    tree = Tree.categorical_stump(1, subset=np.ones(8, np.uint32), left_value=1.0,
                                  right_value=-1.0)
    m3 = CascadeModel((12, 12), stages=[Stage([trees[0], tree], threshold=0.0)], family=pool,
                      feature_ids=[0, fam.n_features])
    with pytest.raises(ExportError, match="mixes HAAR and LBP"):
        to_opencv_xml(m3)


def test_own_format_roundtrip_exact(tmp_path):
    for kw in ({"kind": "HAAR", "max_nodes": 3, "tilted_fraction": 0.5},
               {"kind": "LBP", "max_nodes": 2}):
        m = random_cascade(seed=11, **kw)
        m.params["trainer"] = {"rounds": 3}
        p = tmp_path / "m.json"
        save_model(m, p)
        doc = json.loads(p.read_text())
        assert doc["format"] == "vjboost-cascade" and doc["version"] == 2
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
    with pytest.raises(CascadeFormatError, match=r"d.json: stages\[0\]\.trees\[0\]"):
        model_from_dict(doc2, "d.json")
    doc3 = model_to_dict(random_cascade(seed=1))
    doc3["feature_ids"] = doc3["feature_ids"][:1]
    with pytest.raises(CascadeFormatError, match="d.json: invalid cascade.*out of range"):
        model_from_dict(doc3, "d.json")


def _v1(model):
    """The version-1 document of an OpenCV-type cascade (as vjboost wrote them before)."""
    feats = [model.family.describe(int(i)) for i in model.feature_ids]
    lbp = model.opencv_type == "LBP"
    return {"format": "vjboost-cascade", "version": 1, "window_shape": list(model.window_shape),
            "feature_type": model.opencv_type,
            "features": [{"rect": list(f["rect"])} if lbp else
                         {"rects": [list(r) for r in f["rects"]], "tilted": f["tilted"]}
                         for f in feats],
            "stages": [{"threshold": s.threshold, "trees": [
                {"left": t.left.tolist(), "right": t.right.tolist(),
                 "feature": t.feature.tolist(), "threshold": t.threshold.tolist(),
                 "leaves": t.leaves.tolist(),
                 **({"subsets": t.subsets.astype(np.int64).tolist()} if lbp else {})}
                for t in s.trees]} for s in model.stages],
            "params": {"note": 1}}


@pytest.mark.parametrize("kind", ["HAAR", "LBP"])
def test_version_1_files_still_load(kind):
    m = random_cascade(kind, seed=3, max_nodes=3, tilted_fraction=0.5)
    back = model_from_dict(json.loads(json.dumps(_v1(m))), "old.json")
    assert back == m and back.params == {"note": 1}
    from vjboost.features import get_family_class

    hog = get_family_class("hog")(window_shape=(16, 16), pixels_per_cell=(7, 7))
    v1 = {"format": "vjboost-cascade", "version": 1, "window_shape": [16, 16],
          "feature_type": "family", "family": {"family": "hog", "config": hog.get_config()},
          "features": [4, 9],
          "stages": [{"threshold": -0.25, "trees": [
              {"left": [0], "right": [-1], "feature": [1], "threshold": [0.125],
               "leaves": [-1.0, 1.0]}]}]}
    old = model_from_dict(v1)
    assert old.family == hog and old.feature_ids.tolist() == [4, 9]
    assert old.stages[0].trees[0] == Tree.stump(1, threshold=0.125, left_value=-1.0,
                                                right_value=1.0)


def test_shipped_haar_model_equals_its_xml():
    # the XML numbers the features of its trees in its own order: the same cascade means the
    # same stages (thresholds, tree counts, features) and the same raw windows and scores
    import skimage.data

    from vjboost.cascade import CascadeDetector
    from vjboost.cascade.shipped import MODELS_DIR

    astronaut_gray = np.ascontiguousarray(skimage.data.astronaut()[..., 1])
    js = load_model(MODELS_DIR / "frontalface_haar.json")
    xml = load_model(MODELS_DIR / "frontalface_haar.xml")
    assert js.opencv_type == xml.opencv_type == "HAAR"
    assert [s.threshold for s in js.stages] == [s.threshold for s in xml.stages]
    assert [len(s.trees) for s in js.stages] == [len(s.trees) for s in xml.stages]
    a = js.stages[0].trees[0]
    b = xml.stages[0].trees[0]
    assert js.family.describe(int(js.feature_ids[a.feature[0]]))["rects"] == \
        xml.family.describe(int(xml.feature_ids[b.feature[0]]))["rects"]
    ra = CascadeDetector(js, min_neighbors=0, grouping="none").raw_windows(astronaut_gray)
    rb = CascadeDetector(xml, min_neighbors=0, grouping="none").raw_windows(astronaut_gray)
    assert len(ra[0]) > 0
    np.testing.assert_array_equal(ra[0], rb[0])
    np.testing.assert_array_equal(ra[1], rb[1])


def test_pool_cascade_saved_and_loaded(tmp_path):
    from vjboost.features import FeaturePool, get_family_class

    pool = FeaturePool([get_family_class("haar")((12, 12)), _lbp_family((12, 12))])
    n_haar = pool.families[0].n_features
    sub = np.zeros((2, 8), np.uint32)
    sub[1, 3] = 0xFFFF
    tree = Tree([0, 1], threshold=[0.25, 0.0], left=[1, -1], right=[-0, -2],
                leaves=[0.5, -1.0, 1.0], categorical=[False, True], subsets=sub)
    m = CascadeModel((12, 12), stages=[Stage([tree], threshold=0.1)], family=pool,
                     feature_ids=[7, n_haar + 2], params={"x": [1, 2]})
    save_model(m, tmp_path / "pool.json")
    back = load_model(tmp_path / "pool.json")
    assert back == m and back.params == m.params
    assert json.loads((tmp_path / "pool.json").read_text())["family"]["pool"]


def test_no_warning_for_valid_files():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_opencv_xml(to_opencv_xml(random_cascade("LBP", seed=0)).encode())


def test_tree_apply_keeps_the_callers_thread_count(thread_counts):
    # many examples are split between threads, never more than the caller set
    import numba

    from vjboost._threads import n_threads
    from vjboost.boost import tree as tree_mod

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two numba threads")
    seen = thread_counts(tree_mod, "_apply_kernel")
    t = Tree.stump(1, threshold=0.5, left_value=-1.0, right_value=2.0)
    X = np.random.default_rng(0).random((2, tree_mod._PARALLEL_MIN), dtype=np.float32)
    with n_threads(1):
        one = t.predict_matrix(X)
    with n_threads(2):
        two = t.predict_matrix(X)
    assert seen == [1, 2]
    np.testing.assert_array_equal(one, np.where(X[1] < 0.5, -1.0, 2.0))
    np.testing.assert_array_equal(two, one)


@pytest.mark.parametrize("name,k", [("vjboost:frontalface", 4), ("vjboost:frontalface_haar", 7),
                                    ("vjboost:car_side", 3)])
def test_truncated_keeps_the_features_its_stages_read(name, k):
    """A cut of a model reads exactly the features of its stages, in increasing id order (as a
    training run of that many stages writes them), and scores every window as the first ``k``
    stages of the whole model do."""
    import cv2
    from skimage import data

    from vjboost.cascade import load_model
    from vjboost.cascade.runner import CascadeRunner

    model = load_model(name)
    cut = model.truncated(k)
    ids = np.asarray(model.feature_ids)
    read = sorted({int(ids[f]) for s in model.stages[:k] for t in s.trees for f in t.feature})
    assert list(cut.feature_ids) == read and len(read) < len(ids)
    for a, b in zip(cut.stages, model.stages[:k], strict=True):
        assert a.threshold == b.threshold
        for ta, tb in zip(a.trees, b.trees, strict=True):
            np.testing.assert_array_equal(np.asarray(cut.feature_ids)[ta.feature], ids[tb.feature])
            np.testing.assert_array_equal(ta.leaves, tb.leaves)
            np.testing.assert_array_equal(ta.threshold, tb.threshold)
    h, w = model.window_shape
    rng = np.random.default_rng(k)
    wins = rng.integers(0, 256, (300, h, w), dtype=np.uint8)
    wins[:100] = np.linspace(0, 255, w, dtype=np.uint8)[None, None, :]  # smooth ones pass more
    photo = data.astronaut()[..., 1]  # and the astronaut's face, framed a little differently
    for i in range(100):
        x, y, s = 160 + i % 10 * 3, 60 + i // 10 * 3, 120 + i % 7 * 4
        wins[200 + i] = cv2.resize(photo[y:y + s * h // w, x:x + s], (w, h),
                                   interpolation=cv2.INTER_AREA)
    depth, score = CascadeRunner(cut).run(wins)
    assert depth.max() == k  # some windows pass every stage of the cut
    want_depth, want_score = CascadeRunner(model, last_stage=k).run(wins)
    np.testing.assert_array_equal(depth, want_depth)
    np.testing.assert_array_equal(score, want_score)
