"""Fourier magnitudes (vs numpy.fft) and Haar wavelet coefficients (vs a NumPy pyramid).

(Windows vs image positions, subsets, configs and generic errors:
tests/test_features_conformance.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.features.fourier import FourierFamily, HaarWaveletFamily
from vjboost.features.pixel import gradient_magnitude


def fourier_reference(wins, fam):
    h, w = fam.window_shape
    out = []
    for src in fam.sources:
        data = wins.astype(np.float64) if src == "intensity" else gradient_magnitude(wins)
        mag = np.abs(np.fft.fft2(data))
        out.append(mag[:, fam.freqs[:, 0], fam.freqs[:, 1] % w].T)
    return np.concatenate(out, axis=0)


def gradient_reference(win):
    img = win.astype(np.float64)
    gr = np.zeros_like(img)
    gc = np.zeros_like(img)
    gr[1:-1] = img[2:] - img[:-2]
    gc[:, 1:-1] = img[:, 2:] - img[:, :-2]
    return np.hypot(gr, gc)


def haar_reference(win, levels):
    """Orthonormal Haar pyramid by repeated 2x2 butterflies (float64)."""
    s = 2**levels
    a = win[: win.shape[0] - win.shape[0] % s, : win.shape[1] - win.shape[1] % s]
    a = a.astype(np.float64)
    details = []
    for _ in range(levels):
        tl, tr, bl, br = a[0::2, 0::2], a[0::2, 1::2], a[1::2, 0::2], a[1::2, 1::2]
        details.append(((tl + tr - bl - br) / 2, (tl - tr + bl - br) / 2,
                        (tl - tr - bl + br) / 2))
        a = (tl + tr + bl + br) / 2
    parts = [a.ravel()]
    for hz, vt, dg in reversed(details):
        parts += [hz.ravel(), vt.ravel(), dg.ravel()]
    return np.concatenate(parts)


@pytest.mark.parametrize(("shape", "size", "sources"), [((24, 24), 6, ("intensity", "gradient")),
                                                         ((17, 20), 9, ("gradient",)),
                                                         ((10, 13), 1, ("intensity",))])
def test_fourier_matches_numpy_fft(rng, shape, size, sources):
    wins = rng.integers(0, 256, (5,) + shape, dtype=np.uint8)
    fam = FourierFamily(shape, size=size, sources=sources)
    assert fam.n_features == len(sources) * (size * (2 * size - 1) - (size - 1))
    ref = fourier_reference(wins, fam)
    np.testing.assert_allclose(fam.compute(wins), ref, rtol=2e-6, atol=1e-3)


def test_gradient_source_uses_border_convention(rng):
    wins = rng.integers(0, 256, (3, 9, 7), dtype=np.uint8)
    for w in wins:
        np.testing.assert_allclose(gradient_magnitude(w), gradient_reference(w))


def test_fourier_describe_and_redundancy(rng):
    fam = FourierFamily((16, 16), size=4)
    freqs = [tuple(f) for f in fam.freqs]
    assert (0, 0) in freqs and (0, -1) not in freqs and (3, -3) in freqs
    d = fam.describe(fam.n_features - 1)
    assert d["source"] == "gradient" and (d["u"], d["v"]) == (3, 3)
    wins = rng.integers(0, 256, (2, 16, 16), dtype=np.uint8)
    # DC term is the window sum
    np.testing.assert_allclose(fam.compute(wins)[0], wins.reshape(2, -1).sum(1), rtol=1e-6)


@pytest.mark.parametrize(("shape", "levels"), [((24, 24), 3), ((17, 21), 2), ((8, 12), 1)])
def test_haar_wavelet_matches_reference(rng, shape, levels):
    wins = rng.integers(0, 256, (4,) + shape, dtype=np.uint8)
    fam = HaarWaveletFamily(shape, levels=levels)
    ref = np.stack([haar_reference(w, levels) for w in wins], axis=1)
    assert fam.n_features == ref.shape[0]
    np.testing.assert_allclose(fam.compute(wins), ref, rtol=1e-6, atol=1e-4)


@settings(max_examples=20)
@given(h=st.integers(2, 24), w=st.integers(2, 24), levels=st.integers(1, 4),
       seed=st.integers(0, 2**31))
def test_haar_wavelet_is_orthonormal(h, w, levels, seed):
    if 2**levels > min(h, w):
        return
    rng = np.random.default_rng(seed)
    wins = rng.integers(0, 256, (2, h, w), dtype=np.uint8)
    fam = HaarWaveletFamily((h, w), levels=levels)
    coef = fam.compute(wins).astype(np.float64)
    s = 2**levels
    crop = wins[:, : h - h % s, : w - w % s].astype(np.float64)
    # an orthonormal transform preserves energy
    np.testing.assert_allclose((coef**2).sum(0), (crop**2).sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(coef, np.stack([haar_reference(x, levels) for x in wins], 1),
                               rtol=1e-6, atol=1e-4)


def test_bad_input():
    with pytest.raises(ValueError, match="size"):
        FourierFamily((10, 10), size=6)
    with pytest.raises(ValueError, match="sources"):
        FourierFamily((10, 10), size=3, sources=["phase"])
    with pytest.raises(ValueError, match="levels"):
        HaarWaveletFamily((10, 10), levels=4)
