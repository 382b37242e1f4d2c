"""HOG family: an exact NumPy reference of the definition (interior cells), scikit-image.

(Windows vs image positions, subsets, configs and generic errors:
tests/test_features_conformance.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.feature import hog as sk_hog

from vjboost.features.hog import HOGFamily, hog_descriptor

CASES = [
    ((26, 26), 9, (8, 8), (2, 2), "L2-Hys"),
    ((34, 42), 4, (4, 5), (2, 2), "L2-Hys"),
    ((32, 32), 8, (5, 5), (1, 1), "L1"),
    ((19, 25), 7, (3, 4), (1, 3), "L2"),
    ((18, 18), 6, (4, 4), (2, 2), "L1-sqrt"),
]


def _windows(rng, n, h, w):
    wins = rng.integers(0, 256, (n, h, w), dtype=np.uint8)
    wins[: n // 3] = (wins[: n // 3] // 64) * 64  # few levels: exact 0/45/90 degree gradients
    wins[n // 3] = 9  # flat window: all-zero blocks
    return wins


def hog_reference(win, n, ppc, cpb, norm, signed):
    """The documented definition, computed with NumPy and plain loops in the kernel's order
    (integer cell sums, then float64 normalisation), so the float32 results are identical."""
    img = win.astype(np.int64)
    h, w = img.shape
    gr = img[2:, 1:-1] - img[:-2, 1:-1]            # interior pixels only
    gc = img[1:-1, 2:] - img[1:-1, :-2]
    mag = np.rint(8 * np.hypot(gr, gc)).astype(np.int64)
    period = 360.0 if signed else 180.0
    deg = np.mod(np.degrees(np.arctan2(gr, gc)), period)
    bins = np.clip(np.floor(deg / (period / n)).astype(np.int64), 0, n - 1)
    ch, cw = ppc
    ncr, ncc = (h - 2) // ch, (w - 2) // cw
    cells = np.zeros((ncr, ncc, n), np.int64)
    for i in range(ncr):
        for j in range(ncc):
            m = mag[i * ch:(i + 1) * ch, j * cw:(j + 1) * cw]
            b = bins[i * ch:(i + 1) * ch, j * cw:(j + 1) * cw]
            for k in range(n):
                cells[i, j, k] = m[b == k].sum()
    br, bc = cpb
    eps = float(np.float32(1e-5 * 8 * ch * cw))
    clip = float(np.float32(0.2))
    out = []
    for i in range(ncr - br + 1):
        for j in range(ncc - bc + 1):
            v = [float(x) for x in cells[i:i + br, j:j + bc].reshape(-1)]
            if norm in ("L1", "L1-sqrt"):
                a = 0.0
                for x in v:
                    a += x
                a += eps
                vals = [t / a for t in v] if norm == "L1" else [math.sqrt(t / a) for t in v]
            else:
                tot = 0.0
                for x in v:
                    tot += x * x
                n1 = math.sqrt(tot + eps * eps)
                if norm == "L2":
                    vals = [t / n1 for t in v]
                else:
                    tot2 = 0.0
                    for x in v:
                        c = min(x / n1, clip)
                        tot2 += c * c
                    n2 = math.sqrt(tot2 + eps * eps)
                    vals = [min(t / n1, clip) / n2 for t in v]
            out += vals
    return np.array(out, dtype=np.float32)


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize(("shape", "n", "ppc", "cpb", "norm"), CASES)
def test_equals_numpy_reference_exactly(rng, shape, n, ppc, cpb, norm, signed):
    wins = _windows(rng, 6, *shape)
    fam = HOGFamily(shape, orientations=n, pixels_per_cell=ppc, cells_per_block=cpb,
                    block_norm=norm, signed=signed)
    ref = np.stack([hog_reference(w, n, ppc, cpb, norm, signed) for w in wins], axis=1)
    np.testing.assert_array_equal(fam.compute(wins), ref)


@settings(max_examples=15)
@given(h=st.integers(8, 22), w=st.integers(10, 22), n=st.integers(1, 12),
       signed=st.booleans(), cell=st.integers(2, 4), seed=st.integers(0, 2**31))
def test_equals_reference_property(h, w, n, signed, cell, seed):
    rng = np.random.default_rng(seed)
    wins = _windows(rng, 3, h, w)
    fam = HOGFamily((h, w), orientations=n, pixels_per_cell=(cell, cell), cells_per_block=(1, 2),
                    signed=signed)
    ref = np.stack([hog_reference(x, n, (cell, cell), (1, 2), "L2-Hys", signed)
                    for x in wins], axis=1)
    np.testing.assert_array_equal(fam.compute(wins), ref)


@pytest.mark.parametrize(("shape", "n", "ppc", "cpb", "norm"), CASES)
def test_close_to_skimage_on_the_interior(rng, shape, n, ppc, cpb, norm):
    # scikit-image on the interior has the same cells; it zeroes the gradient on its input's
    # border, so only blocks away from the border agree (up to the 1/8 magnitude quantisation)
    shape = tuple(max(s, c * (b + 3) + 2) for s, c, b in zip(shape, ppc, cpb, strict=True))
    wins = rng.integers(0, 256, (6,) + shape, dtype=np.uint8)
    fam = HOGFamily(shape, orientations=n, pixels_per_cell=ppc, cells_per_block=cpb,
                    block_norm=norm)
    ours = fam.compute(wins)
    ref = np.stack([sk_hog(w[1:-1, 1:-1], orientations=n, pixels_per_cell=ppc,
                           cells_per_block=cpb, block_norm=norm) for w in wins], axis=1)
    assert ours.shape == ref.shape == (fam.n_features, 6)
    br, bc = cpb
    ncr, ncc = fam.n_cells
    blocks = np.array([fam.describe(i)["block"] for i in range(fam.n_features)])
    inner = ((blocks > 0).all(1) & (blocks[:, 0] + br < ncr) & (blocks[:, 1] + bc < ncc))
    assert inner.any()
    np.testing.assert_allclose(ours[inner], ref[inner], atol=3e-3)
    # everywhere: the same descriptor up to the border cells
    assert np.corrcoef(ours.ravel(), ref.ravel())[0, 1] > 0.8


def test_counts_and_describe(rng):
    fam = HOGFamily((66, 34), orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2))
    assert fam.n_cells == (8, 4) and fam.n_features == 7 * 3 * 2 * 2 * 9
    d = fam.describe(fam.n_features - 1)
    assert d["block"] == (6, 2) and d["cell"] == (1, 1) and d["orientation_bin"] == 8
    assert d["rect"] == (25, 57, 8, 8)  # interior cells start at pixel (1, 1)
    wins = rng.integers(0, 256, (3, 66, 34), dtype=np.uint8)
    np.testing.assert_array_equal(hog_descriptor(wins[0]), fam.compute(wins[:1])[:, 0])
    np.testing.assert_array_equal(hog_descriptor(wins), fam.compute(wins).T)
    assert HOGFamily((26, 26), orientations=8, signed=True).describe(7)["degrees"] == (315.0,
                                                                                        360.0)
    prog = fam.program()
    assert prog.channels.keys == tuple(f"orient(9,u)#{b}" for b in range(9))


def test_bad_input():
    with pytest.raises(ValueError, match="too small"):
        HOGFamily((17, 17), orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2))
    # a tall window is named width x height, as vjtrain --window 12x24 gives it
    with pytest.raises(ValueError, match=r"a 12x24 window \(width x height\) is too small "
                                         r".* \(needs at least 18x18\)"):
        HOGFamily((24, 12))
    with pytest.raises(ValueError, match=r"a 30x8 window .* blocks of 2x2 cells of 8x4 pixels "
                                         r".* \(needs at least 18x10\)"):
        HOGFamily((8, 30), pixels_per_cell=(4, 8))
    with pytest.raises(ValueError, match="block_norm"):
        HOGFamily(block_norm="L3")
    with pytest.raises(ValueError, match="orientations"):
        HOGFamily(orientations=0)
    with pytest.raises(ValueError, match="cells_per_block: at most 4"):
        HOGFamily((40, 40), cells_per_block=(3, 3))
