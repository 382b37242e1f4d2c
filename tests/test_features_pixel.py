"""Pixel, RGB pixel, gradient-magnitude and random patch-sum families."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.features import family_from_dict, family_to_dict
from vjboost.features.pixel import (
    GradientMagnitudeFamily,
    PatchSumFamily,
    PixelFamily,
    PixelRGBFamily,
)


def gradient_reference(win):
    img = win.astype(np.float64)
    gr = np.zeros_like(img)
    gc = np.zeros_like(img)
    gr[1:-1] = img[2:] - img[:-2]
    gc[:, 1:-1] = img[:, 2:] - img[:, :-2]
    return np.hypot(gr, gc)


def test_pixel_family(rng):
    wins = rng.integers(0, 256, (4, 7, 9), dtype=np.uint8)
    fam = PixelFamily((7, 9))
    assert fam.n_features == 63
    np.testing.assert_array_equal(fam.compute(wins), wins.reshape(4, -1).T)
    assert fam.describe(10)["x"] == 1 and fam.describe(10)["y"] == 1


def test_pixel_rgb_family(rng):
    wins = rng.integers(0, 256, (3, 5, 6, 3), dtype=np.uint8)
    fam = PixelRGBFamily((5, 6))
    assert fam.n_features == 4 * 30
    vals = fam.compute(wins).reshape(5, 6, 4, 3)
    for s in range(3):
        np.testing.assert_array_equal(vals[..., :3, s], wins[s])
        np.testing.assert_array_equal(vals[..., 3, s], cv2.cvtColor(wins[s], cv2.COLOR_RGB2GRAY))
    assert fam.describe(7)["plane"] == "gray"


@settings(max_examples=20)
@given(h=st.integers(1, 16), w=st.integers(1, 16), seed=st.integers(0, 2**31))
def test_gradient_magnitude_property(h, w, seed):
    rng = np.random.default_rng(seed)
    wins = rng.integers(0, 256, (3, h, w), dtype=np.uint8)
    fam = GradientMagnitudeFamily((h, w))
    ref = np.stack([gradient_reference(x).ravel() for x in wins], axis=1)
    np.testing.assert_allclose(fam.compute(wins), ref, rtol=1e-6)


@settings(max_examples=20)
@given(h=st.integers(2, 20), w=st.integers(2, 20), n=st.integers(1, 50),
       seed=st.integers(0, 2**31))
def test_patch_sums_property(h, w, n, seed):
    rng = np.random.default_rng(seed)
    wins = rng.integers(0, 256, (4, h, w), dtype=np.uint8)
    fam = PatchSumFamily((h, w), n, min_size=1, seed=seed)
    ref = np.array([[x[py:py + ph, px:px + pw].sum() for x in wins]
                    for px, py, pw, ph in fam.patches])
    np.testing.assert_array_equal(fam.compute(wins), ref.astype(np.float32))


def test_patches_seeded_and_saved():
    a = PatchSumFamily((24, 24), 200, min_size=3, seed=7)
    b = PatchSumFamily((24, 24), 200, min_size=3, seed=7)
    c = PatchSumFamily((24, 24), 200, min_size=3, seed=8)
    np.testing.assert_array_equal(a.patches, b.patches)
    assert not np.array_equal(a.patches, c.patches)
    assert (a.patches[:, 2:] >= 3).all()
    assert (a.patches[:, 0] + a.patches[:, 2] <= 24).all()
    assert (a.patches[:, 1] + a.patches[:, 3] <= 24).all()
    restored = family_from_dict(json.loads(json.dumps(family_to_dict(a))))
    np.testing.assert_array_equal(restored.patches, a.patches)
    assert restored == a
    assert a.describe(0)["rect"] == tuple(int(v) for v in a.patches[0])


@pytest.mark.parametrize("fam", [PixelFamily((9, 8)), PixelRGBFamily((9, 8)),
                                 GradientMagnitudeFamily((9, 8)), PatchSumFamily((9, 8), 40)])
def test_evaluate_at_equals_cropped_windows(rng, fam):
    h, w = fam.window_shape
    shape = (h + 6, w + 11) + ((3,) if fam.color else ())
    img = rng.integers(0, 256, shape, dtype=np.uint8)
    pos = np.array([[0, 0], [6, 11], [2, 5], [6, 0]])
    crops = np.stack([img[y:y + h, x:x + w] for y, x in pos])
    fids = np.concatenate([rng.integers(0, fam.n_features, 30), [0, fam.n_features - 1]])
    got = fam.evaluate_at(fam.prepare_image(img), fids, pos)
    np.testing.assert_array_equal(got, fam.evaluate(fam.prepare(crops), fids))
    assert family_from_dict(json.loads(json.dumps(family_to_dict(fam)))) == fam


def test_subsets(rng):
    fam = GradientMagnitudeFamily((6, 6))
    ch = fam.prepare(rng.integers(0, 256, (5, 6, 6), dtype=np.uint8))
    full = fam.evaluate(ch)
    fids, sids = np.array([35, 0, 0, 7]), np.array([3, 1, 1])
    np.testing.assert_array_equal(fam.evaluate(ch, fids, sids), full[fids][:, sids])


def test_bad_input(rng):
    fam = PixelFamily((8, 8))
    with pytest.raises(ValueError, match="windows"):
        fam.prepare(np.zeros((2, 8, 9), np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        fam.prepare(np.zeros((2, 8, 8), np.float32))
    with pytest.raises(ValueError, match="empty"):
        fam.prepare(np.zeros((0, 8, 8), np.uint8))
    ch = fam.prepare(np.zeros((2, 8, 8), np.uint8))
    with pytest.raises(ValueError, match="out of range"):
        fam.evaluate(ch, [64])
    with pytest.raises(ValueError, match="out of range"):
        fam.evaluate(ch, None, [-1])
    with pytest.raises(ValueError, match="RGB"):
        PixelRGBFamily((8, 8)).prepare(np.zeros((2, 8, 8), np.uint8))
    with pytest.raises(ValueError, match="n_patches"):
        PatchSumFamily((8, 8), 0)
    with pytest.raises(ValueError, match="min_size"):
        PatchSumFamily((8, 8), 5, min_size=9)
    with pytest.raises(ValueError, match="patches"):
        PatchSumFamily((8, 8), patches=[[0, 0, 9, 1]])
    with pytest.raises(ValueError, match="image"):
        fam.prepare_image(np.zeros((7, 20), np.uint8))
    with pytest.raises(ValueError, match="out of range"):
        fam.describe(64)
