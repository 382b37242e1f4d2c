"""MB-LBP family: OpenCV pool, codes against NumPy, scikit-image and cv2's LBP detector.

(Windows vs image positions, subsets, configs, generic errors and the program path:
tests/test_features_conformance.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.features.mblbp import MBLBPFamily, mblbp_feature_table, mblbp_reference


def brute_code(win: np.ndarray, x: int, y: int, w: int, h: int) -> int:
    """Independent formulation: neighbours clockwise from top-left, MSB first, compare >=."""
    b = np.array([[win[y + j * h : y + (j + 1) * h, x + i * w : x + (i + 1) * w].astype(int).sum()
                   for i in range(3)] for j in range(3)])
    ring = [b[0, 0], b[0, 1], b[0, 2], b[1, 2], b[2, 2], b[2, 1], b[2, 0], b[1, 0]]
    code = 0
    for v in ring:
        code = (code << 1) | int(v >= b[1, 1])
    return code


def test_pool_sizes_and_order():
    assert MBLBPFamily((19, 19)).n_features == 3_249  # traincascade anchor, 19x19 LBP
    assert MBLBPFamily((24, 24)).n_features == 8_464
    t = mblbp_feature_table((19, 19))
    # OpenCV loop order: x, y, block w, block h
    expect = [(x, y, w, h) for x in range(19) for y in range(19) for w in range(1, 7)
              for h in range(1, 7) if x + 3 * w <= 19 and y + 3 * h <= 19]
    assert [tuple(r) for r in t] == expect
    fam = MBLBPFamily((19, 19))
    d = fam.describe(5)
    assert d["rect"] == expect[5] and d["family"] == "mblbp"
    assert fam.kind(0) == "categorical" and fam.kinds().all() and fam.n_categories == 256
    small = MBLBPFamily((19, 19), max_block=(2, 3))
    assert small.n_features == sum(1 for e in expect if e[2] <= 3 and e[3] <= 2)
    assert MBLBPFamily.from_config(small.get_config()) == small


@pytest.mark.shared_data
def test_pool_order_matches_traincascade_anchor(shared_dir):
    # traincascade writes used features in increasing order of their index in its pool
    import defusedxml.ElementTree as ET

    root = ET.parse(shared_dir / "data" / "traincascade-anchor" / "cbcl_lbp.xml").getroot()
    fam = MBLBPFamily((19, 19))
    index = {fam.describe(i)["rect"]: i for i in range(fam.n_features)}
    ids = [index[tuple(int(v) for v in f.find("rect").text.split())]
           for f in root.find(".//features")]
    assert len(ids) == 48 and (np.diff(ids) > 0).all()


def test_codes_against_numpy_and_reference(rng):
    fam = MBLBPFamily((13, 11))
    wins = rng.integers(0, 256, (5, 13, 11), dtype=np.uint8)
    wins[4] = 9  # flat: every comparison is equal -> code 255
    vals = fam.evaluate(fam.prepare(wins))
    assert vals.dtype == np.float32 and vals.shape == (fam.n_features, 5)
    for i in range(0, fam.n_features, 3):
        x, y, w, h = fam.describe(i)["rect"]
        for s in range(5):
            assert vals[i, s] == brute_code(wins[s], x, y, w, h) == mblbp_reference(
                wins[s], x, y, w, h
            )
    assert (vals[:, 4] == 255).all()


def test_codes_against_skimage(rng):
    skf = pytest.importorskip("skimage.feature")
    from skimage.transform import integral_image

    fam = MBLBPFamily((15, 16))
    win = rng.integers(0, 256, (15, 16), dtype=np.uint8)
    vals = fam.compute(win)[:, 0]
    ii = integral_image(win.astype(np.float64))
    for i in range(0, fam.n_features, 2):
        x, y, w, h = fam.describe(i)["rect"]
        assert vals[i] == skf.multiblock_lbp(ii, y, x, w, h)


def test_codes_match_cv2_lbp_detector(tmp_path, rng):
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "CascadeClassifier"):
        pytest.skip("cv2 has no CascadeClassifier (OpenCV 5 without contrib)")
    h = w = 12
    fam = MBLBPFamily((h, w))
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)
    codes = fam.compute(img)[:, 0].astype(int)
    path = tmp_path / "lbp.xml"
    for i in rng.choice(fam.n_features, 8, replace=False):
        x, y, bw, bh = fam.describe(int(i))["rect"]
        for probe, expect in ((codes[i], 1), ((codes[i] + 1) % 256, 0)):
            words = np.zeros(8, np.uint32)
            words[probe >> 5] |= np.uint32(1 << (probe & 31))
            subset = " ".join(str(int(v)) for v in words.view(np.int32))
            path.write_text(f"""<?xml version="1.0"?>
<opencv_storage><cascade>
<stageType>BOOST</stageType><featureType>LBP</featureType><height>{h}</height><width>{w}</width>
<stageParams><maxWeakCount>1</maxWeakCount></stageParams>
<featureParams><maxCatCount>256</maxCatCount><featSize>1</featSize></featureParams>
<stageNum>1</stageNum>
<stages><_><maxWeakCount>1</maxWeakCount><stageThreshold>0.</stageThreshold><weakClassifiers>
<_><internalNodes>0 -1 0 {subset}</internalNodes><leafValues>1. -1.</leafValues></_>
</weakClassifiers></_></stages>
<features><_><rect>{x} {y} {bw} {bh}</rect></_></features>
</cascade></opencv_storage>
""")
            cc = cv2.CascadeClassifier(str(path))
            assert not cc.empty()
            found = cc.detectMultiScale(img, scaleFactor=1.5, minNeighbors=0)
            assert len(found) == expect, (i, probe)


def test_bad_input():
    with pytest.raises(ValueError, match="at least 3x3"):
        MBLBPFamily((2, 9))
    with pytest.raises(TypeError, match="positional"):
        MBLBPFamily((9, 9), (2, 2))  # keyword-only after the window


def test_from_blocks_reproduces_generated_features(rng):
    gen = MBLBPFamily((13, 11))
    ids = rng.choice(gen.n_features, 30, replace=False)
    blocks = np.array([gen.describe(int(i))["rect"] for i in ids])
    fam = MBLBPFamily.from_blocks((13, 11), blocks=blocks)
    assert fam.n_features == 30 and fam.opencv_type == "LBP"
    assert [fam.describe(k)["rect"] for k in range(30)] == [tuple(b) for b in blocks.tolist()]
    wins = rng.integers(0, 256, (5, 13, 11), dtype=np.uint8)
    np.testing.assert_array_equal(fam.compute(wins), gen.compute(wins, ids))
    cfg = fam.get_config()
    assert cfg == {"window_shape": [13, 11], "blocks": blocks.tolist()}
    assert MBLBPFamily.from_config(cfg) == fam
    with pytest.raises(ValueError, match="blocks: the 3x3 grid of feature 1"):
        MBLBPFamily.from_blocks((13, 11), blocks=[[0, 0, 1, 1], [9, 0, 1, 1]])
    with pytest.raises(ValueError, match="blocks: expected a non-empty"):
        MBLBPFamily.from_blocks((13, 11), blocks=[0, 0, 1, 1])
