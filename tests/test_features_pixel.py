"""Pixel, RGB pixel, gradient-magnitude and random patch-sum families.

(Windows vs image positions, subsets, configs and generic errors:
tests/test_features_conformance.py.)"""

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
@given(h=st.integers(3, 16), w=st.integers(3, 16), seed=st.integers(0, 2**31))
def test_gradient_magnitude_property(h, w, seed):
    # interior pixels, magnitude quantised to 1/8 grey level; np.gradient's central
    # differences are half ours
    rng = np.random.default_rng(seed)
    wins = rng.integers(0, 256, (3, h, w), dtype=np.uint8)
    fam = GradientMagnitudeFamily((h, w))
    assert fam.n_features == (h - 2) * (w - 2)
    ref = np.stack([np.hypot(*np.gradient(x.astype(np.float64)))[1:-1, 1:-1].ravel() * 2
                    for x in wins], axis=1)
    got = fam.compute(wins)
    np.testing.assert_allclose(got, ref, atol=1 / 16 + 1e-6)
    np.testing.assert_array_equal(got * 8, np.round(got * 8))
    assert fam.describe(0)["x"] == 1 and fam.describe(0)["y"] == 1


@settings(max_examples=20)
@given(h=st.integers(2, 20), w=st.integers(2, 20), n=st.integers(1, 50),
       seed=st.integers(0, 2**31))
def test_patch_sums_property(h, w, n, seed):
    rng = np.random.default_rng(seed)
    wins = rng.integers(0, 256, (4, h, w), dtype=np.uint8)
    fam = PatchSumFamily((h, w), n_patches=n, min_size=1, seed=seed)
    ref = np.array([[x[py:py + ph, px:px + pw].sum() for x in wins]
                    for px, py, pw, ph in fam.patches])
    np.testing.assert_array_equal(fam.compute(wins), ref.astype(np.float32))


def test_patches_seeded_and_saved():
    a = PatchSumFamily((24, 24), n_patches=200, min_size=3, seed=7)
    b = PatchSumFamily((24, 24), n_patches=200, min_size=3, seed=7)
    c = PatchSumFamily((24, 24), n_patches=200, min_size=3, seed=8)
    np.testing.assert_array_equal(a.patches, b.patches)
    assert not np.array_equal(a.patches, c.patches)
    assert (a.patches[:, 2:] >= 3).all()
    assert (a.patches[:, 0] + a.patches[:, 2] <= 24).all()
    assert (a.patches[:, 1] + a.patches[:, 3] <= 24).all()
    restored = family_from_dict(json.loads(json.dumps(family_to_dict(a))))
    np.testing.assert_array_equal(restored.patches, a.patches)
    assert restored == a
    assert a.describe(0)["rect"] == tuple(int(v) for v in a.patches[0])


def test_bad_input():
    with pytest.raises(ValueError, match="RGB"):
        PixelRGBFamily((8, 8)).prepare(np.zeros((2, 8, 8), np.uint8))
    with pytest.raises(ValueError, match="n_patches"):
        PatchSumFamily((8, 8), n_patches=0)
    with pytest.raises(ValueError, match="min_size"):
        PatchSumFamily((8, 8), n_patches=5, min_size=9)
    with pytest.raises(ValueError, match="patches"):
        PatchSumFamily((8, 8), patches=[[0, 0, 9, 1]])
    with pytest.raises(ValueError, match="window_shape"):
        GradientMagnitudeFamily((2, 8))
