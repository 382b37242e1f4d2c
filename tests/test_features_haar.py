"""Haar family: OpenCV pool order and sizes, OpenCV's value formula, scikit-image and cv2.

(Values against a brute-force reference, windows vs image positions, subsets, configs and
generic errors: tests/test_features_conformance.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.features.haar import HAAR_TYPES, HaarFamily, haar_feature_table, haar_pool_size

# ------------------------------------------------------------------------------------------
# pool


def test_pool_sizes():
    assert haar_pool_size((24, 24), "BASIC") == 162_336  # Viola-Jones' five types
    assert haar_pool_size((19, 19), "BASIC") == 63_960  # traincascade anchor, 19x19 BASIC
    assert HaarFamily((24, 24), mode="viola-jones").n_features == 162_336
    # five VJ types, closed form: sum over unit sizes of the number of positions
    def count(h, w, bw, bh):
        return sum((w - bw * i + 1) for i in range(1, w // bw + 1)) * sum(
            (h - bh * j + 1) for j in range(1, h // bh + 1)
        )

    for h, w in [(24, 24), (19, 19), (20, 31)]:
        expect = (count(h, w, 2, 1) + count(h, w, 1, 2) + count(h, w, 3, 1) + count(h, w, 1, 3)
                  + count(h, w, 2, 2))
        assert haar_pool_size((h, w), "BASIC") == expect
    basic, core, alls = (HaarFamily((19, 19), mode=m, normalize=False)
                         for m in ("BASIC", "CORE", "ALL"))
    assert basic.n_features < core.n_features < alls.n_features


def test_opencv_order_and_weights():
    fam = HaarFamily((24, 24), mode="ALL")
    # the generator's first anchor (x=0, y=0, dx=1, dy=1) emits every upright type that fits
    first = [fam.describe(i) for i in range(6)]
    assert [d["type"] for d in first] == ["x2", "y2", "x3", "y3", "x4", "y4"]
    assert first[0]["rects"] == [(0, 0, 2, 1, -1.0), (1, 0, 1, 1, 2.0)]
    assert first[2]["rects"] == [(0, 0, 3, 1, -1.0), (1, 0, 1, 1, 2.0)]
    assert fam.describe(6)["rects"] == [(0, 0, 2, 2, -1.0), (0, 0, 1, 1, 2.0), (1, 1, 1, 1, 2.0)]
    assert fam.describe(7)["rects"] == [(0, 0, 3, 3, -1.0), (1, 1, 1, 1, 9.0)]
    assert not any(d["tilted"] for d in first)  # tilted need x - dy >= 0: not at x = 0
    table = haar_feature_table((24, 24), "ALL")
    anchors = table["anchor"]
    # anchors are non-decreasing in (x, y, dx, dy) lexicographic order
    key = ((anchors[:, 0] * 24 + anchors[:, 1]) * 25 + anchors[:, 2]) * 25 + anchors[:, 3]
    assert (np.diff(key) >= 0).all()
    same = np.diff(key) == 0
    assert (np.diff(table["type"].astype(int))[same] > 0).all()  # type order within an anchor
    tilted = fam.rects[:, 0, 5] == 1
    assert tilted.any()
    assert set(HAAR_TYPES[t] for t in table["type"][tilted]) == set(HAAR_TYPES[8:])
    fam.program()  # checks every rectangle (incl. the 45-degree footprints) is inside the window
    # OpenCV XML load checks on rects as written
    for i in np.flatnonzero(tilted)[::997]:
        for x, y, w, h, _ in fam.describe(int(i))["rects"]:
            assert 0 <= x < 24 and 0 <= y < 24 and x + w <= 24 and y + h <= 24
    # the older traincascade weight for 3-rect types
    fam3 = HaarFamily((24, 24), mode="ALL", x3_weight=3.0, normalize=False)
    assert fam3.describe(2)["rects"][1][4] == 3.0
    t3 = [i for i in np.flatnonzero(tilted)[:400] if fam3.feature_type(int(i)) in ("tx3", "ty3")]
    assert t3 and all(fam3.describe(int(i))["rects"][1][4] == 3.0 for i in t3)


def test_types_subset_keeps_order():
    full = HaarFamily((12, 12), mode="CORE", normalize=False)
    sub = HaarFamily((12, 12), mode="CORE", normalize=False, types=["y4", "x2"])
    names = [full.feature_type(i) for i in range(full.n_features)]
    keep = [i for i, t in enumerate(names) if t in ("x2", "y4")]
    assert sub.n_features == len(keep)
    for j in (0, 5, sub.n_features - 1):
        assert sub.describe(j)["rects"] == full.describe(keep[j])["rects"]
    assert sub.get_config()["types"] == ["x2", "y4"]
    assert HaarFamily.from_config(sub.get_config()) == sub


# ------------------------------------------------------------------------------------------
# values


def test_value_is_opencv_detector_formula(rng):
    # OpenCV's detector: float32 weighted sum times float32(1 / sqrt(A q - s^2)), 0 when flat
    fam = HaarFamily((24, 24), mode="BASIC")
    wins = rng.integers(0, 256, (5, 24, 24), dtype=np.uint8)
    wins[4] = 31
    ids = np.arange(0, fam.n_features, 4099)
    vals = fam.evaluate(fam.prepare(wins), ids)
    raw = HaarFamily((24, 24), mode="BASIC", normalize=False).compute(wins, ids)
    inner = wins[:, 1:23, 1:23].astype(np.int64)
    nf = 484 * (inner**2).sum(axis=(1, 2)) - inner.sum(axis=(1, 2)) ** 2
    inv = np.where(nf > 0, 1.0 / np.sqrt(np.maximum(nf, 1)), 0.0).astype(np.float32)
    np.testing.assert_array_equal(vals, raw * inv[None, :])
    assert not vals[:, 4].any()


def test_values_against_skimage(rng):
    skf = pytest.importorskip("skimage.feature")
    from skimage.transform import integral_image

    h, w = 8, 9
    win = rng.integers(0, 256, (h, w), dtype=np.uint8)
    ii = integral_image(win.astype(np.float64))
    fam = HaarFamily((h, w), mode="BASIC", x3_weight=2.0, normalize=False)
    ours = fam.compute(win)[:, 0]
    index = {}
    for i in range(fam.n_features):
        d = fam.describe(i)
        x, y, rw, rh, _ = d["rects"][1 if d["type"] != "x2y2" else 1]
        x0, y0, w0, h0, _ = d["rects"][0]
        unit = {"x2": (w0 // 2, h0), "y2": (w0, h0 // 2), "x3": (w0 // 3, h0),
                "y3": (w0, h0 // 3), "x2y2": (w0 // 2, h0 // 2)}[d["type"]]
        index[(d["type"], x0, y0) + unit] = i
    sk_type = {"type-2-x": "x2", "type-2-y": "y2", "type-3-x": "x3", "type-3-y": "y3",
               "type-4": "x2y2"}
    n_checked = 0
    for sk_name, ours_name in sk_type.items():
        coords, _ = skf.haar_like_feature_coord(w, h, sk_name)
        vals = skf.haar_like_feature(ii, 0, 0, w, h, feature_type=sk_name)
        for c, v in zip(coords, vals, strict=True):
            (r0, c0), (r1, c1) = c[0]
            key = (ours_name, c0, r0, c1 - c0 + 1, r1 - r0 + 1)
            sign = -1.0 if ours_name == "x2y2" else 1.0  # scikit-image's type-4 is TR+BL-TL-BR
            assert ours[index.pop(key)] == sign * v
            n_checked += 1
    assert not index  # one-to-one
    assert n_checked == fam.n_features
    # with OpenCV 3.4's +3 weight, the three-rect value is scikit-image's plus the middle sum
    fam3 = HaarFamily((h, w), mode="BASIC", x3_weight=3.0, normalize=False)
    i = next(i for i in range(fam3.n_features) if fam3.feature_type(i) == "x3")
    mx, my, mw, mh, _ = fam3.describe(i)["rects"][1]
    assert fam3.compute(win, [i])[0, 0] == ours[i] + win[my : my + mh, mx : mx + mw].sum()


@pytest.mark.shared_data
def test_pool_order_matches_traincascade_anchor(shared_dir):
    # opencv_traincascade 3.4.18 writes the features it used renumbered in increasing order of
    # their index in its generated pool: all of them must be in our pool, in the same order.
    import defusedxml.ElementTree as ET

    root = ET.parse(shared_dir / "data" / "traincascade-anchor" / "cbcl_haar.xml").getroot()
    fam = HaarFamily((19, 19), mode="BASIC")
    index = {}
    for i in range(fam.n_features):
        d = fam.describe(i)
        index[(tuple(d["rects"]), d["tilted"])] = i
    ids = []
    for f in root.find(".//features"):
        rects = tuple(
            tuple(int(v) for v in r.text.split()[:4]) + (float(r.text.split()[4]),)
            for r in f.find("rects")
        )
        ids.append(index[(rects, bool(int(f.find("tilted").text)))])
    assert len(ids) == 84
    assert (np.diff(ids) > 0).all()
    assert {fam.feature_type(i) for i in ids} >= {"x2", "y2", "x3", "x2y2"}


# ------------------------------------------------------------------------------------------
# against OpenCV's own detector


def _one_stump_cascade(path, h, w, d, threshold):
    rects = "".join(f"<_>{x} {y} {rw} {rh} {wt:.1f}</_>" for x, y, rw, rh, wt in d["rects"])
    path.write_text(
        f"""<?xml version="1.0"?>
<opencv_storage><cascade>
<stageType>BOOST</stageType><featureType>HAAR</featureType><height>{h}</height><width>{w}</width>
<stageParams><maxWeakCount>1</maxWeakCount></stageParams>
<featureParams><maxCatCount>0</maxCatCount><featSize>1</featSize><mode>ALL</mode></featureParams>
<stageNum>1</stageNum>
<stages><_><maxWeakCount>1</maxWeakCount><stageThreshold>0.</stageThreshold><weakClassifiers>
<_><internalNodes>0 -1 0 {threshold:.9e}</internalNodes><leafValues>-1. 1.</leafValues></_>
</weakClassifiers></_></stages>
<features><_><rects>{rects}</rects><tilted>{int(d["tilted"])}</tilted></_></features>
</cascade></opencv_storage>
"""
    )


def test_describe_semantics_match_cv2_detector(tmp_path, rng):
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "CascadeClassifier"):
        pytest.skip("cv2 has no CascadeClassifier (OpenCV 5 without contrib)")
    h = w = 16
    fam = HaarFamily((h, w), mode="ALL")
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)  # sigma >> 10: passes OpenCV's gate
    tilted = np.flatnonzero(fam.rects[:, 0, 5] == 1)
    ids = np.concatenate([rng.choice(fam.n_features, 6, replace=False), rng.choice(tilted, 6)])
    vals = fam.evaluate(fam.prepare(img), ids)[:, 0]
    path = tmp_path / "c.xml"
    for i, v in zip(ids, vals, strict=True):
        margin = 1e-4 * max(1.0, abs(float(v)))
        for thr, expect in ((v - margin, 1), (v + margin, 0)):
            _one_stump_cascade(path, h, w, fam.describe(int(i)), thr)
            cc = cv2.CascadeClassifier(str(path))
            assert not cc.empty()
            found = cc.detectMultiScale(img, scaleFactor=1.5, minNeighbors=0)
            assert len(found) == expect, (fam.describe(int(i)), float(v), thr)


# ------------------------------------------------------------------------------------------
# bad input


def test_bad_input():
    fam = HaarFamily((8, 8), mode="BASIC")
    with pytest.raises(ValueError, match="prepared by family 'mblbp'"):
        from vjboost.features.mblbp import MBLBPFamily

        fam.evaluate(MBLBPFamily((8, 8)).prepare(np.zeros((1, 8, 8), np.uint8)))
    with pytest.raises(ValueError, match="mode"):
        HaarFamily((8, 8), mode="FULL")
    with pytest.raises(ValueError, match="normalize=True needs"):
        HaarFamily((2, 8))
    with pytest.raises(ValueError, match="types"):
        HaarFamily((8, 8), mode="BASIC", types=["tx2"])
    with pytest.raises(TypeError, match="positional"):
        HaarFamily((8, 8), "BASIC")  # keyword-only after the window


def test_config_round_trip():
    fam = HaarFamily((19, 19), mode="core", x3_weight=2.0, normalize=False)
    cfg = fam.get_config()
    assert cfg == {"window_shape": [19, 19], "mode": "CORE", "x3_weight": 2.0,
                   "normalize": False, "types": None}
    assert HaarFamily.from_config(cfg) == fam


# ------------------------------------------------------------------------------------------
# explicit tables (OpenCV HAAR cascades)


def test_from_rects_reproduces_generated_features(rng):
    gen = HaarFamily((12, 14), mode="ALL")
    ids = np.concatenate([rng.choice(gen.n_features, 40, replace=False),
                          np.flatnonzero(gen.rects[:, 0, 5] == 1)[:5]])
    descs = [gen.describe(int(i)) for i in ids]
    rects = np.zeros((len(ids), 3, 4), np.int64)
    weights = np.zeros((len(ids), 3))
    for k, d in enumerate(descs):
        for j, (x, y, w, h, wt) in enumerate(d["rects"]):
            rects[k, j] = (x, y, w, h)
            weights[k, j] = wt
    fam = HaarFamily.from_rects((12, 14), rects=rects, weights=weights,
                                tilted=[d["tilted"] for d in descs])
    assert fam.n_features == len(ids) and fam.opencv_type == "HAAR"
    for k, d in enumerate(descs):
        got = fam.describe(k)
        assert got["rects"] == d["rects"] and got["tilted"] == d["tilted"]
    wins = rng.integers(0, 256, (6, 12, 14), dtype=np.uint8)
    np.testing.assert_array_equal(fam.compute(wins), gen.compute(wins, ids))
    np.testing.assert_array_equal(fam.program().corners, gen.program(ids).corners)
    cfg = fam.get_config()
    assert set(cfg) == {"window_shape", "rects", "weights", "tilted", "normalize"}
    again = HaarFamily.from_config(cfg)
    assert again == fam and again.get_config() == cfg
    np.testing.assert_array_equal(again.compute(wins), fam.compute(wins))
    raw = HaarFamily.from_rects((12, 14), rects=rects[:, :2], weights=weights[:, :2],
                                tilted=np.zeros(len(ids), bool), normalize=False)
    assert raw.opencv_type is None and HaarFamily.from_config(raw.get_config()) == raw


def test_from_rects_errors_name_the_argument():
    ok = {"rects": [[[0, 0, 2, 2], [0, 0, 1, 1]]], "weights": [[-1.0, 2.0]], "tilted": [False]}
    HaarFamily.from_rects((8, 8), **ok)
    with pytest.raises(ValueError, match="rects: expected a non-empty"):
        HaarFamily.from_rects((8, 8), **{**ok, "rects": [[0, 0, 2, 2]]})
    with pytest.raises(ValueError, match="weights: expected shape"):
        HaarFamily.from_rects((8, 8), **{**ok, "weights": [[1.0]]})
    with pytest.raises(ValueError, match="tilted: expected"):
        HaarFamily.from_rects((8, 8), **{**ok, "tilted": [False, True]})
    with pytest.raises(ValueError, match="rects: rectangle 0 of feature 0"):
        HaarFamily.from_rects((8, 8), **{**ok, "rects": [[[5, 0, 4, 2], [0, 0, 1, 1]]]})
    with pytest.raises(ValueError, match=r"rects: rectangle 0 of feature 0 .* \(tilted\)"):
        HaarFamily.from_rects((8, 8), **{**ok, "tilted": [True]})
    with pytest.raises(ValueError, match="weights: feature 0 has no rectangle"):
        HaarFamily.from_rects((8, 8), **{**ok, "weights": [[0.0, 2.0]]})
