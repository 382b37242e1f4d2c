"""HOG family: scikit-image agreement, a brute-force NumPy reference, detection path, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.feature import hog as sk_hog

from vjboost.features import family_from_dict, family_to_dict
from vjboost.features.hog import HOGFamily, hog_descriptor

CASES = [
    ((24, 24), 9, (8, 8), (2, 2), "L2-Hys"),
    ((32, 40), 4, (4, 5), (3, 2), "L2-Hys"),
    ((30, 30), 8, (5, 5), (1, 1), "L1"),
    ((17, 23), 7, (3, 4), (2, 3), "L2"),
    ((16, 16), 6, (4, 4), (2, 2), "L1-sqrt"),
]


def _windows(rng, n, h, w):
    wins = rng.integers(0, 256, (n, h, w), dtype=np.uint8)
    wins[: n // 3] = (wins[: n // 3] // 64) * 64  # few levels: exact 0/45/90 degree gradients
    wins[n // 3] = 9  # flat window: all-zero blocks
    return wins


def hog_reference(win, n, ppc, cpb, norm, signed):
    """Brute-force HOG following the documented definition (float64 throughout)."""
    img = win.astype(np.float64)
    gr = np.zeros_like(img)
    gc = np.zeros_like(img)
    gr[1:-1] = img[2:] - img[:-2]
    gc[:, 1:-1] = img[:, 2:] - img[:, :-2]
    mag = np.hypot(gr, gc)
    period = 360.0 if signed else 180.0
    deg = np.rad2deg(np.arctan2(gr, gc)) % period
    span = period / n
    ch, cw = ppc
    ncr, ncc = img.shape[0] // ch, img.shape[1] // cw
    cells = np.zeros((ncr, ncc, n))
    for b in range(n):
        m = np.where((deg >= span * b) & (deg < span * (b + 1)), mag, 0.0)
        m = m[: ncr * ch, : ncc * cw].reshape(ncr, ch, ncc, cw)
        cells[:, :, b] = m.sum(axis=(1, 3)) / (ch * cw)
    br, bc = cpb
    eps = 1e-5
    out = []
    for i in range(ncr - br + 1):
        for j in range(ncc - bc + 1):
            v = cells[i:i + br, j:j + bc].ravel()
            if norm == "L2-Hys":
                v = v / np.sqrt((v**2).sum() + eps**2)
                v = np.minimum(v, 0.2)
                v = v / np.sqrt((v**2).sum() + eps**2)
            elif norm == "L2":
                v = v / np.sqrt((v**2).sum() + eps**2)
            elif norm == "L1":
                v = v / (np.abs(v).sum() + eps)
            else:
                v = np.sqrt(v / (np.abs(v).sum() + eps))
            out.append(v)
    return np.concatenate(out)


@pytest.mark.parametrize(("shape", "n", "ppc", "cpb", "norm"), CASES)
def test_matches_skimage(rng, shape, n, ppc, cpb, norm):
    wins = _windows(rng, 9, *shape)
    fam = HOGFamily(shape, n, ppc, cpb, norm)
    ours = fam.compute(wins)
    ref = np.stack([sk_hog(w, orientations=n, pixels_per_cell=ppc, cells_per_block=cpb,
                           block_norm=norm) for w in wins], axis=1)
    assert ours.shape == ref.shape == (fam.n_features, 9)
    # scikit-image accumulates cell sums in float32
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=2e-6)


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize(("shape", "n", "ppc", "cpb", "norm"), CASES)
def test_matches_numpy_reference(rng, shape, n, ppc, cpb, norm, signed):
    wins = _windows(rng, 6, *shape)
    fam = HOGFamily(shape, n, ppc, cpb, norm, signed=signed)
    ref = np.stack([hog_reference(w, n, ppc, cpb, norm, signed) for w in wins], axis=1)
    np.testing.assert_allclose(fam.compute(wins), ref, rtol=1e-5, atol=1e-6)


@settings(max_examples=15)
@given(h=st.integers(6, 20), w=st.integers(8, 20), n=st.integers(1, 12),
       signed=st.booleans(), cell=st.integers(2, 4), seed=st.integers(0, 2**31))
def test_matches_reference_property(h, w, n, signed, cell, seed):
    rng = np.random.default_rng(seed)
    wins = _windows(rng, 3, h, w)
    fam = HOGFamily((h, w), n, (cell, cell), (1, 2), "L2-Hys", signed=signed)
    ref = np.stack([hog_reference(x, n, (cell, cell), (1, 2), "L2-Hys", signed)
                    for x in wins], axis=1)
    np.testing.assert_allclose(fam.compute(wins), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize(("shape", "ppc", "cpb"), [((24, 24), (8, 8), (2, 2)),
                                                    ((20, 17), (5, 4), (2, 2)),
                                                    ((12, 12), (12, 12), (1, 1))])
def test_evaluate_at_equals_cropped_windows(rng, shape, ppc, cpb, signed):
    h, w = shape
    fam = HOGFamily(shape, 9, ppc, cpb, signed=signed)
    img = rng.integers(0, 256, (h + 15, w + 12), dtype=np.uint8)
    img[:6] = (img[:6] // 128) * 128
    pos = np.array([[0, 0], [15, 12], [0, 12], [15, 0], [6, 5], [1, 1]])
    crops = np.stack([img[y:y + h, x:x + w] for y, x in pos])
    fids = np.concatenate([rng.integers(0, fam.n_features, 40), [0, fam.n_features - 1]])
    got = fam.evaluate_at(fam.prepare_image(img), fids, pos)
    np.testing.assert_allclose(got, fam.evaluate(fam.prepare(crops), fids), rtol=1e-5,
                               atol=1e-6)


def test_counts_subsets_and_describe(rng):
    fam = HOGFamily((64, 32), 9, (8, 8), (2, 2))
    assert fam.n_features == 7 * 3 * 2 * 2 * 9
    wins = rng.integers(0, 256, (5, 64, 32), dtype=np.uint8)
    ch = fam.prepare(wins)
    full = fam.evaluate(ch)
    fids = np.array([100, 3, 3, fam.n_features - 1, 0])
    sids = np.array([4, 1])
    np.testing.assert_array_equal(fam.evaluate(ch, fids, sids), full[fids][:, sids])
    d = fam.describe(fam.n_features - 1)
    assert d["block"] == (6, 2) and d["cell"] == (1, 1) and d["orientation_bin"] == 8
    assert d["rect"] == (24, 56, 8, 8)
    np.testing.assert_array_equal(hog_descriptor(wins[0]), full[:, 0])
    assert HOGFamily((24, 24), 8, signed=True).describe(7)["degrees"] == (315.0, 360.0)


def test_config_roundtrip():
    fam = HOGFamily((32, 24), 12, (4, 6), (3, 2), "L1", signed=True, storage="integral")
    assert family_from_dict(json.loads(json.dumps(family_to_dict(fam)))) == fam


def test_bad_input(rng):
    fam = HOGFamily((24, 24))
    with pytest.raises(ValueError, match="windows"):
        fam.prepare(np.zeros((2, 24, 23), np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        fam.prepare(np.zeros((2, 24, 24), np.float64))
    with pytest.raises(ValueError, match="empty"):
        fam.prepare(np.zeros((0, 24, 24), np.uint8))
    ch = fam.prepare(rng.integers(0, 256, (2, 24, 24), dtype=np.uint8))
    with pytest.raises(ValueError, match="out of range"):
        fam.evaluate(ch, [-1])
    with pytest.raises(ValueError, match="empty"):
        fam.evaluate(ch, np.array([], dtype=int))
    with pytest.raises(ValueError, match="too small"):
        HOGFamily((12, 12), 9, (8, 8), (2, 2))
    with pytest.raises(ValueError, match="block_norm"):
        HOGFamily(block_norm="L3")
    with pytest.raises(ValueError, match="orientations"):
        HOGFamily(orientations=0)
    with pytest.raises(ValueError, match="windows"):
        fam.evaluate_at(ch, [0], [[0, 0]])


@pytest.mark.parametrize("signed", [False, True])
def test_storage_modes_agree(rng, signed):
    wins = _windows(rng, 7, 20, 28)
    cells = HOGFamily((20, 28), 7, (4, 6), (2, 2), signed=signed)
    integ = HOGFamily((20, 28), 7, (4, 6), (2, 2), signed=signed, storage="integral")
    assert integ.channels_nbytes(10) > 10 * cells.channels_nbytes(10)
    np.testing.assert_allclose(cells.compute(wins), integ.compute(wins), rtol=1e-5, atol=1e-6)
    fids = rng.integers(0, cells.n_features, 25)
    ch = integ.prepare(wins)
    np.testing.assert_allclose(integ.evaluate(ch, fids, [6, 0]),
                               cells.evaluate(cells.prepare(wins), fids, [6, 0]),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="storage"):
        HOGFamily((20, 28), storage="dense")


def test_pickle_rebuilds_from_config(rng):
    import pickle

    fam = HOGFamily((16, 24), 6, (4, 4), (2, 3), "L2", signed=True)
    blob = pickle.dumps(fam)
    assert len(blob) < 2000  # derived tables are not shipped
    back = pickle.loads(blob)
    wins = rng.integers(0, 256, (3, 16, 24), dtype=np.uint8)
    assert back == fam
    np.testing.assert_array_equal(back.compute(wins), fam.compute(wins))
