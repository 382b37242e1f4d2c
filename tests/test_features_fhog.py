"""Felzenszwalb's HOG: a plain-Python reference of the documented definition, the invariances
that its block normalisation promises, and the verifier that reads it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.cascade.verifier import DetectionVerifier
from vjboost.features.hog import FHOG_CLIP, FHOG_EPS, FHOG_TEXTURE, fhog_descriptor, fhog_length


def fhog_reference(win, p, n):
    """The docstring's definition, pixel by pixel and cell by cell in plain Python."""
    img = win.astype(float)
    h, w = img.shape
    cy, cx = (h - 2) // p, (w - 2) // p
    hist = np.zeros((cy, cx, 2 * n))
    for u in range(cy * p):
        for v in range(cx * p):
            y, x = u + 1, v + 1
            gy, gx = img[y + 1, x] - img[y - 1, x], img[y, x + 1] - img[y, x - 1]
            m = math.hypot(gy, gx)
            if m == 0:
                continue
            a = math.atan2(gy, gx) % (2 * math.pi)
            o = int(math.floor(a / (2 * math.pi / (2 * n)) + 0.5)) % (2 * n)
            fy, fx = (u + 0.5) / p - 0.5, (v + 0.5) / p - 0.5
            for yy, wy in ((math.floor(fy), 1 - (fy - math.floor(fy))),
                           (math.floor(fy) + 1, fy - math.floor(fy))):
                for xx, wx in ((math.floor(fx), 1 - (fx - math.floor(fx))),
                               (math.floor(fx) + 1, fx - math.floor(fx))):
                    if 0 <= yy < cy and 0 <= xx < cx:
                        hist[yy, xx, o] += m * wy * wx
    unsigned = hist[..., :n] + hist[..., n:]
    energy = (unsigned ** 2).sum(-1)
    out = []
    for i in range(cy):
        for j in range(cx):
            norms = []
            for a0 in (-1, 0):
                for b0 in (-1, 0):
                    e = sum(energy[min(max(i + a0 + di, 0), cy - 1), min(max(j + b0 + dj, 0),
                                                                          cx - 1)]
                            for di in (0, 1) for dj in (0, 1))
                    norms.append(1 / math.sqrt(e + FHOG_EPS))
            sig = [0.5 * sum(min(hist[i, j, o] * r, FHOG_CLIP) for r in norms)
                   for o in range(2 * n)]
            uns = [0.5 * sum(min(unsigned[i, j, o] * r, FHOG_CLIP) for r in norms)
                   for o in range(n)]
            tex = [FHOG_TEXTURE * sum(min(hist[i, j, o] * r, FHOG_CLIP) for o in range(2 * n))
                   for r in norms]
            out += sig + uns + tex
    return np.array(out)


@pytest.mark.parametrize("shape, p, n", [((40, 40), 5, 9), ((19, 27), 4, 9), ((22, 16), 3, 6),
                                         ((12, 12), 10, 4)])
def test_matches_the_reference(shape, p, n):
    rng = np.random.default_rng(p * n)
    wins = rng.integers(0, 256, (3, *shape), dtype=np.uint8)
    wins[1] = (wins[1] // 64) * 64  # few levels: exact 0 / 45 / 90 degree gradients
    wins[2] = 77  # flat: every histogram empty, every value 0
    got = fhog_descriptor(wins, pixels_per_cell=p, orientations=n)
    assert got.dtype == np.float32 and got.shape == (3, fhog_length(shape, pixels_per_cell=p,
                                                                     orientations=n))
    for k in range(3):
        np.testing.assert_allclose(got[k], fhog_reference(wins[k], p, n), rtol=1e-5, atol=1e-6)
    assert not got[2].any()
    np.testing.assert_array_equal(fhog_descriptor(wins[0], pixels_per_cell=p, orientations=n),
                                  got[0])


def test_threads_and_one_loop_describe_alike():
    # a large stack is described by the threads, small ones by one loop: the same values
    from vjboost.features.hog import _FHOG_PARALLEL

    rng = np.random.default_rng(7)
    wins = rng.integers(0, 256, (_FHOG_PARALLEL + 9, 26, 26), dtype=np.uint8)
    whole = fhog_descriptor(wins, pixels_per_cell=4)
    parts = np.concatenate([fhog_descriptor(wins[i:i + 50], pixels_per_cell=4)
                            for i in range(0, len(wins), 50)])
    np.testing.assert_array_equal(whole, parts)
    np.testing.assert_allclose(whole[-1], fhog_reference(wins[-1], 4, 9), rtol=1e-5, atol=1e-6)


@given(st.integers(0, 2**32 - 1), st.integers(0, 128), st.integers(3, 8))
@settings(max_examples=30, deadline=None)
def test_brightness_and_contrast_invariance(seed, shift, p):
    """Adding a constant leaves every gradient as it is; doubling the contrast doubles every
    histogram and every block energy's root, so only the regulariser moves the values."""
    rng = np.random.default_rng(seed)
    win = rng.integers(0, 64, (2 * p + 4, 3 * p + 2), dtype=np.uint8)
    base = fhog_descriptor(win, pixels_per_cell=p)
    np.testing.assert_array_equal(fhog_descriptor(win + np.uint8(shift), pixels_per_cell=p), base)
    np.testing.assert_allclose(fhog_descriptor(win * np.uint8(2), pixels_per_cell=p), base,
                               atol=1e-4)


def test_ramp_reads_one_orientation():
    ramp = np.tile(np.arange(20, dtype=np.uint8) * 10, (20, 1))  # gradient along +x: 0 degrees
    v = fhog_descriptor(ramp, pixels_per_cell=6).reshape(3, 3, 31)
    assert (v[..., 0] > 0).all() and not v[..., 1:18].any() and not v[..., 19:27].any()
    down = fhog_descriptor(ramp[:, ::-1].copy(), pixels_per_cell=6).reshape(3, 3, 31)
    assert (down[..., 9] > 0).all()  # the opposite sign: 180 degrees, the same unsigned bin
    np.testing.assert_array_equal(down[..., 18:], v[..., 18:])


def test_bad_input():
    with pytest.raises(ValueError, match="pixels_per_cell"):
        fhog_descriptor(np.zeros((20, 20), np.uint8), pixels_per_cell=0)
    with pytest.raises(ValueError, match="orientations"):
        fhog_descriptor(np.zeros((20, 20), np.uint8), orientations=True)
    with pytest.raises(ValueError, match="needs at least 10x10"):
        fhog_descriptor(np.zeros((9, 30), np.uint8), pixels_per_cell=8)
    with pytest.raises(ValueError, match="window"):
        fhog_descriptor(np.zeros(5, np.uint8))
    assert fhog_descriptor(np.zeros((0, 20, 20), np.uint8), pixels_per_cell=6).shape == (0, 279)


def test_verifier_reads_fhog():
    """A verifier with ``descriptor="fhog"`` fits on the descriptor, keeps it through its dict,
    and a dict without the key is the HOG verifier it always was."""
    rng = np.random.default_rng(0)
    pos = rng.integers(60, 120, (60, 24, 24)).astype(np.uint8)
    neg = rng.integers(60, 120, (60, 24, 24)).astype(np.uint8)
    pos[:, :, 10:14] = 220
    neg[:, 10:14, :] = 220
    ver = DetectionVerifier(size=24, pixels_per_cell=6, descriptor="fhog").fit(pos, neg)
    np.testing.assert_array_equal(ver.features(pos), fhog_descriptor(pos, pixels_per_cell=6))
    assert ver.n_features_in_ == fhog_length((24, 24), pixels_per_cell=6)
    assert (ver.decision_function(pos) > 0).all() and (ver.decision_function(neg) < 0).all()
    d = ver.to_dict()
    assert d["descriptor"] == "fhog"
    back = DetectionVerifier.from_dict(d)
    np.testing.assert_array_equal(back.decision_function(neg), ver.decision_function(neg))
    hog = {k: v for k, v in d.items() if k != "descriptor"}
    with pytest.raises(ValueError, match="coefficients"):  # the HOG verifier has other lengths
        DetectionVerifier.from_dict(hog)
    with pytest.raises(ValueError, match="descriptor: expected one of hog, fhog"):
        DetectionVerifier(descriptor="sift")
    with pytest.raises(ValueError, match="descriptor"):
        DetectionVerifier.from_dict(dict(d, descriptor=3))
