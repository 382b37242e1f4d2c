"""Family interface (validation in the base class), registry, validation helpers, integral images
and the cascade's float64 rectangle sums."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vjboost.features import integral as I
from vjboost.features.base import (
    Channels,
    FeatureFamily,
    check_feature_ids,
    check_image,
    check_positions,
    check_sample_ids,
    check_windows,
    family_from_dict,
    family_to_dict,
    get_family_class,
    register_family,
    registered_families,
)

cv2 = pytest.importorskip("cv2")

images = st.integers(1, 12).flatmap(
    lambda h: st.integers(1, 12).flatmap(
        lambda w: arrays(np.uint8, (h, w), elements=st.integers(0, 255))
    )
)


# ------------------------------------------------------------------------------------------
# brute-force references (straight from the definitions)


def brute_integral(img: np.ndarray, power: int = 1) -> np.ndarray:
    a = img.astype(np.int64) ** power
    h, w = a.shape
    out = np.zeros((h + 1, w + 1), dtype=np.int64)
    for y in range(h + 1):
        for x in range(w + 1):
            out[y, x] = a[:y, :x].sum()
    return out


def brute_tilted(img: np.ndarray) -> np.ndarray:
    a = img.astype(np.int64)
    h, w = a.shape
    out = np.zeros((h + 1, w + 1), dtype=np.int64)
    yy, xx = np.mgrid[0:h, 0:w]
    for y in range(h + 1):
        for x in range(w + 1):
            m = (yy < y) & (np.abs(xx - x + 1) <= y - yy - 1)
            out[y, x] = a[m].sum()
    return out


def rect_sum_reference(image, x, y, w, h, tilted):
    """Brute-force rectangle sum: upright slice, or the tilted integral's definition."""
    img = np.asarray(image, dtype=np.int64)
    if not tilted:
        return float(img[y:y + h, x:x + w].sum())
    t = brute_tilted(img)
    return float(t[y, x] - t[y + h, x - h] - t[y + w, x + w] + t[y + w + h, x + w - h])


# ------------------------------------------------------------------------------------------
# integral images


@given(images)
def test_integral_images_match_definitions(img):
    np.testing.assert_array_equal(I.integral_image(img), brute_integral(img))
    np.testing.assert_array_equal(I.squared_integral_image(img), brute_integral(img, 2))
    np.testing.assert_array_equal(I.tilted_integral_image(img), brute_tilted(img))


@given(images)
def test_integral_images_match_opencv(img):
    s, q, t = cv2.integral3(img, sdepth=cv2.CV_32S, sqdepth=cv2.CV_64F)
    np.testing.assert_array_equal(I.integral_image(img), s)
    np.testing.assert_array_equal(I.squared_integral_image(img), q)
    np.testing.assert_array_equal(I.tilted_integral_image(img), t)


def test_batched_integrals_equal_single(rng):
    w = rng.integers(0, 256, (7, 9, 11), dtype=np.uint8)
    for batch, single in (
        (I.integral_images, I.integral_image),
        (I.squared_integral_images, I.squared_integral_image),
        (I.tilted_integral_images, I.tilted_integral_image),
    ):
        out = batch(w)
        assert out.shape == (7, 10, 12)
        assert out.dtype == np.int32  # exact for 9x11 windows
        for s in range(7):
            np.testing.assert_array_equal(out[s], single(w[s]))
    assert I.integral_images(w, dtype=np.int64).dtype == np.int64


def test_integral_dtype_policy():
    assert I.integral_dtype(24, 24, squared=True) == np.int32
    assert I.integral_dtype(200, 200, squared=True) == np.int64
    assert I.integral_dtype(200, 200) == np.int32
    big = np.full((300, 300), 255, np.uint8)
    q = I.squared_integral_images(big[None])
    assert q.dtype == np.int64 and q[0, -1, -1] == 300 * 300 * 255**2


def test_integral_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        I.integral_image(np.zeros((2, 3, 4), np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        I.integral_image(np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="empty"):
        I.integral_images(np.zeros((0, 3, 3), np.uint8))
    with pytest.raises(ValueError, match="0..255"):
        I.integral_image(np.full((3, 3), 256))


# ------------------------------------------------------------------------------------------
# rectangle sums


def _random_rects(rng, n, h, w, n_channels=1, tilted_channel=None):
    rows = []
    while len(rows) < n:
        tilted = tilted_channel is not None and rng.random() < 0.5
        rw, rh = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
        if tilted:
            if rh > w - 1 or rw + rh > h or rw + rh > w:
                continue
            x = int(rng.integers(rh, w - rw + 1))
            y = int(rng.integers(0, h - rw - rh + 1))
            rows.append((tilted_channel, x, y, rw, rh, 1))
        else:
            x, y = int(rng.integers(0, w - rw + 1)), int(rng.integers(0, h - rh + 1))
            rows.append((int(rng.integers(0, n_channels)), x, y, rw, rh, 0))
    return np.array(rows, dtype=np.int32)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weighted_rect_sums_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    s, h, w = 5, 9, 10
    win = rng.integers(0, 256, (s, h, w), dtype=np.uint8)
    stack = np.stack([I.integral_images(win), I.tilted_integral_images(win)], axis=1)
    rects = _random_rects(rng, 60, h, w, n_channels=1, tilted_channel=1).reshape(20, 3, 6)
    weights = rng.normal(size=(20, 3)).round(2)
    weights[::4, 2] = 0.0  # some two-rect features
    out = I.weighted_rect_sums(stack, rects, weights)
    assert out.shape == (20, s) and out.dtype == np.float32
    ref = np.zeros((20, s))
    for f in range(20):
        for k in range(3):
            if weights[f, k] == 0:
                break
            _, x, y, rw, rh, t = rects[f, k]
            for j in range(s):
                ref[f, j] += weights[f, k] * rect_sum_reference(win[j], x, y, rw, rh, bool(t))
    np.testing.assert_allclose(out, ref.astype(np.float32), rtol=1e-6, atol=1e-3)
    # subsets of samples and a per-window divisor
    div = np.array([2.0, 0.0, 4.0], np.float32)
    sub = I.weighted_rect_sums(stack, rects, weights, sample_ids=[4, 0, 2], divisor=div)
    np.testing.assert_allclose(sub[:, 0], out[:, 4] / 2, rtol=1e-6)
    np.testing.assert_array_equal(sub[:, 1], 0)
    np.testing.assert_allclose(sub[:, 2], out[:, 2] / 4, rtol=1e-6)


def test_weighted_rect_sums_bad_input(rng):
    ii = I.integral_images(rng.integers(0, 256, (2, 5, 5), dtype=np.uint8))[:, None]
    with pytest.raises(ValueError, match="does not fit"):
        I.weighted_rect_sums(ii, [[[0, 3, 0, 3, 1, 0]]], [[1.0]])
    with pytest.raises(ValueError, match="does not fit"):
        I.weighted_rect_sums(ii, [[[1, 0, 0, 1, 1, 0]]], [[1.0]])  # channel 1 of 1
    with pytest.raises(ValueError, match=r"\(F, R, 6\)"):
        I.weighted_rect_sums(ii, np.zeros((2, 3, 5), int), np.ones((2, 3)))
    with pytest.raises(ValueError, match="weights"):
        I.weighted_rect_sums(ii, np.zeros((2, 1, 6), int), np.ones((3, 1)))
    with pytest.raises(ValueError, match="sample id 2 out of range"):
        I.weighted_rect_sums(ii, [[[0, 0, 0, 1, 1, 0]]], [[1.0]], sample_ids=[2])


# ------------------------------------------------------------------------------------------
# validation helpers


def test_check_windows():
    ok = check_windows(np.zeros((2, 4, 5), np.uint8), (4, 5))
    assert ok.shape == (2, 4, 5) and ok.flags.c_contiguous
    assert check_windows(np.zeros((4, 5), np.uint8), (4, 5)).shape == (1, 4, 5)
    assert check_windows(np.zeros((1, 4, 5), np.int64), (4, 5)).dtype == np.uint8
    with pytest.raises(ValueError, match="4x6 .* 4x5 windows"):
        check_windows(np.zeros((2, 4, 6), np.uint8), (4, 5))
    with pytest.raises(TypeError, match="uint8"):
        check_windows(np.zeros((2, 4, 5), np.float32), (4, 5))
    with pytest.raises(ValueError, match="0..255"):
        check_windows(np.full((2, 4, 5), 300), (4, 5))
    with pytest.raises(ValueError, match="empty"):
        check_windows(np.zeros((0, 4, 5), np.uint8), (4, 5))
    with pytest.raises(ValueError, match="RGB"):
        check_windows(np.zeros((2, 4, 5), np.uint8), (4, 5), color=True)
    with pytest.raises(TypeError, match="numeric"):
        check_windows(np.array([["a"]]), (1, 1))


def test_check_ids_and_positions():
    np.testing.assert_array_equal(check_feature_ids(None, 3), [0, 1, 2])
    np.testing.assert_array_equal(check_feature_ids(2, 3), [2])
    np.testing.assert_array_equal(check_sample_ids([1, 1, 0], 2), [1, 1, 0])
    with pytest.raises(ValueError, match="feature id 3 out of range; valid ids are 0..2"):
        check_feature_ids([0, 3], 3)
    with pytest.raises(ValueError, match="feature id -1"):
        check_feature_ids([-1], 3)
    with pytest.raises(ValueError, match="empty set of sample ids"):
        check_sample_ids([], 3)
    with pytest.raises(TypeError, match="boolean"):
        check_feature_ids(np.array([True, False]), 3)
    with pytest.raises(TypeError, match="integer"):
        check_feature_ids([0.5], 3)
    pos = check_positions([[0, 0], [6, 5]], (10, 9), (4, 4))
    assert pos.dtype == np.int64
    with pytest.raises(ValueError, match="does not fit"):
        check_positions([[7, 0]], (10, 9), (4, 4))
    with pytest.raises(ValueError, match=r"\(P, 2\)"):
        check_positions([[1, 2, 3]], (10, 9), (4, 4))
    with pytest.raises(ValueError, match="smaller than"):
        check_image(np.zeros((3, 9), np.uint8), (4, 4))


# ------------------------------------------------------------------------------------------
# interface and registry


class _Mean(FeatureFamily):
    """Minimal generic (non-program) family: feature i = mean of row i."""

    name = "test_row_mean"

    def __init__(self, window_shape=(4, 3)):
        self.window_shape = tuple(window_shape)
        self.n_features = self.window_shape[0]

    def describe(self, i):
        return {"family": self.name, "index": self._check_index(i), "text": f"row {i} mean"}

    def get_config(self):
        return {"window_shape": list(self.window_shape)}

    def _prepare(self, windows):
        return Channels(self.name, "windows", self.window_shape, windows.shape[0],
                        {"w": windows})

    def _evaluate(self, channels, feature_ids, sample_ids):
        return channels["w"].mean(axis=2).T[feature_ids][:, sample_ids].astype(np.float32)

    def _prepare_image(self, image):
        return Channels(self.name, "image", image.shape, 1, {"img": image})

    def _evaluate_at(self, channels, feature_ids, positions):
        h, w = self.window_shape
        wins = np.stack([channels["img"][y : y + h, x : x + w] for y, x in positions])
        return self._evaluate(self._prepare(wins), feature_ids, np.arange(len(wins)))


def test_registry_round_trip():
    register_family(_Mean)
    register_family(_Mean)  # idempotent
    assert get_family_class("test_row_mean") is _Mean
    assert {"haar", "mblbp", "window_function"} <= set(registered_families())
    fam = _Mean((4, 3))
    d = family_to_dict(fam)
    assert d == {"family": "test_row_mean", "config": {"window_shape": [4, 3]}}
    assert family_from_dict(d) == fam
    with pytest.raises(ValueError, match="unknown feature family 'nope'"):
        get_family_class("nope")

    class Other(_Mean):
        pass

    with pytest.raises(ValueError, match="already used"):
        register_family(Other)
    with pytest.raises(TypeError, match="FeatureFamily subclass"):
        register_family(int)


def test_interface_defaults():
    fam = _Mean((4, 3))
    w = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    np.testing.assert_allclose(fam.compute(w), w.mean(axis=2).T)
    assert fam.kind(0) == "ordered" and not fam.kinds().any()
    assert len(fam) == 4 and "window_shape" in repr(fam)
    with pytest.raises(ValueError, match="out of range"):
        fam.describe(4)
    with pytest.raises(TypeError, match="integer"):
        fam.kind(1.5)
    ch = fam.prepare(w)
    assert ch.nbytes == w.nbytes and fam.program() is None
    with pytest.raises(KeyError, match="no array 'x'"):
        ch["x"]
    # the base class validates before the family's code runs
    with pytest.raises(ValueError, match="feature_ids: feature id 4 out of range"):
        fam.evaluate(ch, [4])
    with pytest.raises(ValueError, match="positions"):
        fam.evaluate_at(fam.prepare_image(np.zeros((5, 5), np.uint8)), [0], [[2, 0]])
    img = np.arange(30, dtype=np.uint8).reshape(5, 6)
    np.testing.assert_allclose(fam.evaluate_at(fam.prepare_image(img), [1], [[1, 2]]),
                               [[img[2, 2:5].mean()]])
