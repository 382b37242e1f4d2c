"""Intensity and colour histogram families: OpenCV colour conversions, NumPy references.

(Windows vs image positions, subsets, configs and generic errors:
tests/test_features_conformance.py.)"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.color import rgb2hsv

from vjboost.features.histogram import (
    ColorHistogramFamily,
    IntensityHistogramFamily,
    convert_color,
    grid_rects,
)

CV2_CODES = {"hsv": cv2.COLOR_RGB2HSV, "luv": cv2.COLOR_RGB2Luv, "gray": cv2.COLOR_RGB2GRAY}


def hist_reference(planes, rect, ranges, bins, joint):
    """Fractions of a rectangle's pixels per bin (np.histogram / np.histogramdd)."""
    x, y, w, h = rect
    block = planes[y:y + h, x:x + w].reshape(-1, planes.shape[-1]).astype(np.float64)
    if joint:
        edges = [np.arange(bins + 1) * (r / bins) for r in ranges]
        counts, _ = np.histogramdd(block, bins=edges)
        return counts.ravel() / block.shape[0]
    out = [np.histogram(block[:, k], bins=np.arange(bins + 1) * (ranges[k] / bins))[0]
           for k in range(block.shape[1])]
    return np.concatenate(out) / block.shape[0]


@pytest.mark.parametrize("space", ["rgb", "hsv", "luv", "gray"])
def test_convert_color_matches_cv2(rng, space):
    rgb = rng.integers(0, 256, (4, 9, 11, 3), dtype=np.uint8)
    got = convert_color(rgb, space)
    for k in range(4):
        want = rgb[k] if space == "rgb" else cv2.cvtColor(rgb[k], CV2_CODES[space])
        np.testing.assert_array_equal(got[k].reshape(want.shape), want)


def test_hsv_meaning_matches_skimage(rng):
    # OpenCV 8-bit HSV: H in degrees / 2, S and V scaled to 0..255
    rgb = rng.integers(0, 256, (1, 30, 30, 3), dtype=np.uint8)
    ours = convert_color(rgb, "hsv")[0].astype(np.float64)
    sk = rgb2hsv(rgb[0])
    dh = np.abs(ours[..., 0] - sk[..., 0] * 180)
    dh = np.minimum(dh, 180 - dh)
    colourful = sk[..., 1] > 0.1
    assert dh[colourful].max() <= 1.0
    assert np.abs(ours[..., 1] - sk[..., 1] * 255).max() <= 1.0
    assert np.abs(ours[..., 2] - sk[..., 2] * 255).max() <= 1.0


@pytest.mark.parametrize(("space", "bins", "joint"), [("rgb", 4, False), ("hsv", 6, False),
                                                       ("luv", 5, False), ("gray", 16, False),
                                                       ("rgb", 3, True), ("hsv", 4, True)])
def test_color_hist_matches_reference(rng, space, bins, joint):
    wins = rng.integers(0, 256, (4, 15, 14, 3), dtype=np.uint8)
    fam = ColorHistogramFamily((15, 14), space=space, bins=bins, joint=joint,
                               grids=[(1, 1), (2, 3)])
    vals = fam.compute(wins)
    ranges = (180, 256, 256) if space == "hsv" else (256,) * (1 if space == "gray" else 3)
    for s in range(4):
        planes = wins[s] if space == "rgb" else cv2.cvtColor(wins[s], CV2_CODES[space])
        planes = planes.reshape(15, 14, -1)
        for r in range(fam.n_rects):
            rect = fam.describe(r * fam.n_channels)["rect"]
            want = hist_reference(planes, rect, ranges, bins, joint)
            got = vals[r * fam.n_channels:(r + 1) * fam.n_channels, s]
            np.testing.assert_allclose(got, want, atol=1e-6)


@settings(max_examples=20)
@given(h=st.integers(3, 20), w=st.integers(3, 20), bins=st.integers(1, 40),
       seed=st.integers(0, 2**31))
def test_intensity_hist_property(h, w, bins, seed):
    rng = np.random.default_rng(seed)
    wins = rng.integers(0, 256, (3, h, w), dtype=np.uint8)
    grids = [(1, 1), (min(3, h), min(2, w))]
    fam = IntensityHistogramFamily((h, w), bins=bins, grids=grids)
    assert fam.n_features == (1 + grids[1][0] * grids[1][1]) * bins
    vals = fam.compute(wins)
    for r in range(fam.n_rects):
        rect = fam.describe(r * bins)["rect"]
        for s in range(3):
            want = hist_reference(wins[s][..., None], rect, (256,), bins, False)
            np.testing.assert_allclose(vals[r * bins:(r + 1) * bins, s], want, atol=1e-6)


def test_grid_rects_tile_the_region():
    rects = grid_rects((23, 17), [(1, 1), (3, 4)], margin=2)
    assert tuple(rects[0]) == (2, 2, 13, 19)
    cover = np.zeros((23, 17), int)
    for x, y, w, h in rects[1:]:
        cover[y:y + h, x:x + w] += 1
    assert cover[2:21, 2:15].min() == 1 and cover.sum() == 13 * 19


def test_describe(rng):
    fam = ColorHistogramFamily((16, 16), space="hsv", bins=8, joint=False, grids=[(2, 2)])
    assert fam.n_features == 4 * 24
    assert "H in 0..22" in fam.describe(0)["text"]
    joint = ColorHistogramFamily((16, 16), space="rgb", bins=2, joint=True, grids=[(1, 1)])
    assert joint.n_features == 8
    assert "R in 128..255 and G in 0..127 and B in 128..255" in joint.describe(5)["text"]
    assert joint.program().channels.keys[0] == "chist(rgb,2,1)#0"


def test_bad_input():
    fam = ColorHistogramFamily((16, 16))
    with pytest.raises(ValueError, match="3 colour channels|RGB"):
        fam.prepare(np.zeros((2, 16, 16), np.uint8))
    with pytest.raises(ValueError, match="space"):
        ColorHistogramFamily(space="lab")
    with pytest.raises(ValueError, match="bins"):
        ColorHistogramFamily(bins=0)
    with pytest.raises(ValueError, match="bins"):
        ColorHistogramFamily(bins=32, joint=True)
    with pytest.raises(ValueError, match="grids"):
        IntensityHistogramFamily((8, 8), grids=[(9, 1)])
    with pytest.raises(ValueError, match="grids"):
        IntensityHistogramFamily((8, 8), grids=[])
