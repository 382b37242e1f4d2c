"""Per-pixel LBP codes and LBP families: scikit-image agreement, NumPy references.

(Windows vs image positions, subsets, configs and generic errors:
tests/test_features_conformance.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.feature import local_binary_pattern as sk_lbp

from vjboost.features.lbp import (
    LBPCodeFamily,
    LBPHistogramFamily,
    lbp_code_count,
    local_binary_pattern,
)

METHODS = ["default", "ror", "uniform", "nri_uniform"]


def _image(rng, h, w):
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)
    img[2:6, 3:9] = 17  # a flat patch: exercises ties (neighbour == centre)
    return img


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("P", "R"), [(8, 1.0), (8, 2.0), (4, 1.0), (12, 1.5), (16, 3.0)])
def test_codes_match_skimage(rng, P, R, method):
    img = _image(rng, 21, 26)
    ours = local_binary_pattern(img, P, R, method)
    assert ours.dtype == np.int32
    np.testing.assert_array_equal(ours, sk_lbp(img, P, R, method))


@settings(max_examples=25)
@given(
    P=st.integers(1, 12),
    R=st.floats(0.5, 3.0),
    method=st.sampled_from(METHODS),
    seed=st.integers(0, 2**31),
    levels=st.integers(2, 256),
)
def test_codes_match_skimage_property(P, R, method, seed, levels):
    rng = np.random.default_rng(seed)
    img = (rng.integers(0, levels, (9, 11)) * (255 // max(levels - 1, 1))).astype(np.uint8)
    np.testing.assert_array_equal(local_binary_pattern(img, P, R, method),
                                  sk_lbp(img, P, R, method))


def test_stack_of_images(rng):
    stack = rng.integers(0, 256, (3, 10, 12), dtype=np.uint8)
    out = local_binary_pattern(stack, 8, 1, "uniform")
    assert out.shape == (3, 10, 12)
    for k in range(3):
        np.testing.assert_array_equal(out[k], sk_lbp(stack[k], 8, 1, "uniform"))


def test_code_counts():
    assert lbp_code_count(8, "uniform") == 10
    assert lbp_code_count(8, "nri_uniform") == 59
    assert lbp_code_count(8, "default") == 256
    assert LBPHistogramFamily(method="ror").n_channels == 36  # rotation-invariant 8-bit codes
    assert LBPHistogramFamily(method="nri_uniform", grids=[(1, 1)]).n_features == 59
    fam = LBPHistogramFamily((24, 24))
    assert fam.n_features == (1 + 4 + 9) * 10
    assert LBPCodeFamily((24, 20), R=2).n_features == 20 * 16


@pytest.mark.parametrize(("P", "R", "method"), [(8, 1, "uniform"), (6, 2, "ror"),
                                                 (12, 2.5, "nri_uniform"), (8, 1, "default")])
def test_code_family_matches_reference(rng, P, R, method):
    wins = rng.integers(0, 256, (6, 16, 19), dtype=np.uint8)
    fam = LBPCodeFamily((16, 19), P=P, R=R, method=method)
    m = fam.margin
    ref = np.stack([sk_lbp(w, P, R, method)[m:16 - m, m:19 - m].ravel() for w in wins], axis=1)
    np.testing.assert_array_equal(fam.compute(wins), ref.astype(np.float32))
    assert fam.kind(0) == "categorical" and fam.kinds().all()
    assert not LBPCodeFamily((16, 16), P=12, R=1, method="default").kinds().any()


@pytest.mark.parametrize(("P", "R", "method"), [(8, 1, "uniform"), (8, 2, "ror"),
                                                 (8, 1, "nri_uniform"), (4, 1.5, "default")])
def test_hist_family_matches_reference(rng, P, R, method):
    wins = rng.integers(0, 256, (5, 20, 18), dtype=np.uint8)
    fam = LBPHistogramFamily((20, 18), P=P, R=R, method=method, grids=[(1, 1), (2, 3)])
    vals = fam.compute(wins)
    codes = [sk_lbp(w, P, R, method).astype(np.int64) for w in wins]
    for i in range(fam.n_features):
        d = fam.describe(i)
        x, y, w, h = d["rect"]
        target = fam.bin_codes[d["channel"]]
        for s, c in enumerate(codes):
            hit = c[y:y + h, x:x + w] == target
            assert vals[i, s] == pytest.approx(hit.mean(), abs=1e-6)
    # every rectangle's bins sum to one
    per_rect = vals.reshape(fam.n_rects, fam.n_channels, -1).sum(axis=1)
    np.testing.assert_allclose(per_rect, 1.0, atol=1e-5)
    # rectangles never touch the window border band of width margin
    assert all(fam.describe(i)["rect"][0] >= fam.margin for i in range(fam.n_features))


def test_bad_input():
    with pytest.raises(ValueError, match="P"):
        LBPHistogramFamily(P=9, method="default")
    with pytest.raises(ValueError, match="method"):
        LBPCodeFamily(method="var")
    with pytest.raises(ValueError, match="R"):
        LBPCodeFamily(R=-1)
    with pytest.raises(ValueError, match="window_shape"):
        LBPCodeFamily((4, 4), R=2)


@pytest.mark.parametrize("cls", [LBPCodeFamily, LBPHistogramFamily])
@pytest.mark.parametrize(("P", "R"), [(8, 1.0), (8, 2.5), (12, 1.7), (16, 3.0)])
def test_flat_regions_are_position_independent(rng, cls, P, R):
    # flat areas are exact ties everywhere; in-place and cut-out windows must still agree
    img = (rng.integers(0, 4, (70, 75)) * 60).astype(np.uint8)
    img = np.repeat(np.repeat(img[::5, ::5], 5, axis=0), 5, axis=1)[:70, :75]
    fam = cls((20, 18), P=P, R=R, method="default" if P == 8 else "uniform")
    pos = np.array([[y, x] for y in (0, 13, 37, 50) for x in (0, 7, 31, 57)])
    crops = np.stack([img[y:y + 20, x:x + 18] for y, x in pos])
    got = fam.evaluate_at(fam.prepare_image(img), None, pos)
    np.testing.assert_array_equal(got, fam.evaluate(fam.prepare(crops)))
    flat = np.full((1, 20, 18), 77, np.uint8)
    vals = LBPCodeFamily((20, 18), P=P, R=R, method="default").compute(flat)
    np.testing.assert_array_equal(vals, 2**P - 1)  # every neighbour >= centre
