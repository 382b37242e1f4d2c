"""One conformance suite for every registered feature family.

For each family (built on small windows) it checks, against the family's own paths and against
brute-force NumPy references of each documented definition:

* ``evaluate`` on windows equals ``evaluate_at`` on the same windows cut out of an image;
* the compiled program (``family.program()``, and ``program(ids)`` on its compacted channels)
  gives exactly ``evaluate``'s values; non-program families return None;
* the values equal a brute-force reference computed pixel by pixel from the definition;
* feature and sample id subsets (any order, repeats) are rows/columns of the full matrix;
* the configuration survives JSON and pickling;
* bad input raises errors that name the argument.

Family-specific properties and comparisons with independent libraries (scikit-image, OpenCV,
numpy.fft) stay in the ``test_features_<family>.py`` files.
"""

from __future__ import annotations

import json
import math
import pickle

import cv2
import numba
import numpy as np
import pytest
from skimage.feature import local_binary_pattern as sk_lbp

from vjboost.features import (
    FeatureFamily,
    family_from_dict,
    family_to_dict,
    registered_families,
)
from vjboost.features.acf import ChannelFamily
from vjboost.features.custom import WindowFunctionFamily
from vjboost.features.fourier import FourierFamily, HaarWaveletFamily
from vjboost.features.haar import HaarFamily
from vjboost.features.histogram import ColorHistogramFamily, IntensityHistogramFamily
from vjboost.features.hog import HOGFamily
from vjboost.features.lbp import LBPCodeFamily, LBPHistogramFamily
from vjboost.features.mblbp import MBLBPFamily, mblbp_reference
from vjboost.features.mbltp import MBLTPDFamily, MBLTPFamily, mbltp_reference
from vjboost.features.pixel import (
    GradientMagnitudeFamily,
    PatchSumFamily,
    PixelFamily,
    PixelRGBFamily,
    gradient_magnitude,
)
from vjboost.features.program import evaluate_program


@numba.njit(nogil=True, cache=True)
def row_stats(window, out):  # pragma: no cover - numba
    """Mean of every row and of every column (a user-written family)."""
    h, w = window.shape
    for y in range(h):
        out[y] = window[y].astype(np.float64).mean()
    for x in range(w):
        out[h + x] = window[:, x].astype(np.float64).mean()


# ------------------------------------------------------------------------------------------
# brute-force planes and references (straight from the documented definitions)


def gray_of(win):
    return cv2.cvtColor(win, cv2.COLOR_RGB2GRAY) if win.ndim == 3 else win


def gradients(win):
    """Interior central differences (0 on the border), as int64."""
    g = gray_of(win).astype(np.int64)
    gr = np.zeros_like(g)
    gc = np.zeros_like(g)
    gr[1:-1, 1:-1] = g[2:, 1:-1] - g[:-2, 1:-1]
    gc[1:-1, 1:-1] = g[1:-1, 2:] - g[1:-1, :-2]
    return gr, gc


def gradmag_plane(win):
    gr, gc = gradients(win)
    return np.rint(8 * np.hypot(gr, gc))


def orient_plane(win, n_bins, signed, b):
    gr, gc = gradients(win)
    period = 360.0 if signed else 180.0
    deg = np.mod(np.degrees(np.arctan2(gr, gc)), period)
    bins = np.clip(np.floor(deg / (period / n_bins)), 0, n_bins - 1)
    return np.where(bins == b, gradmag_plane(win), 0.0)


def tilted_rect_sum(img, x, y, w, h):
    """OpenCV's 45-degree rectangle by the definition of the tilted integral."""
    ih, iw = img.shape

    def t(yy, xx):
        total = 0
        for yp in range(min(yy, ih)):
            half = yy - yp - 1
            lo, hi = max(xx - 1 - half, 0), min(xx - 1 + half, iw - 1)
            if lo <= hi:
                total += int(img[yp, lo:hi + 1].sum())
        return total

    return float(t(y, x) - t(y + h, x - h) - t(y + w, x + w) + t(y + w + h, x + w - h))


def inv_std(win):
    """OpenCV's 1 / sqrt(A q - s^2) over the inner window (0 when not positive)."""
    inner = gray_of(win)[1:-1, 1:-1].astype(np.int64)
    nf = inner.size * (inner**2).sum() - inner.sum() ** 2
    return 1.0 / math.sqrt(nf) if nf > 0 else 0.0


def ref_haar(fam, win, i):
    d = fam.describe(i)
    g = gray_of(win).astype(np.int64)
    v = sum(wt * (tilted_rect_sum(g, x, y, w, h) if d["tilted"] else g[y:y + h, x:x + w].sum())
            for x, y, w, h, wt in d["rects"])
    return v * inv_std(win) if fam.normalize else v


def ref_hog(fam, win, i):
    d = fam.describe(i)
    ch, cw = fam.pixels_per_cell
    br, bc = fam.cells_per_block
    n = fam.orientations
    bi, bj = d["block"]
    planes = [orient_plane(win, n, fam.signed, b) for b in range(n)]
    v = np.array([planes[b][1 + (bi + ci) * ch:1 + (bi + ci + 1) * ch,
                            1 + (bj + cj) * cw:1 + (bj + cj + 1) * cw].sum()
                  for ci in range(br) for cj in range(bc) for b in range(n)])
    eps = 1e-5 * 8 * ch * cw
    k = (d["cell"][0] * bc + d["cell"][1]) * n + d["orientation_bin"]
    if fam.block_norm == "L1":
        return v[k] / (v.sum() + eps)
    if fam.block_norm == "L1-sqrt":
        return math.sqrt(v[k] / (v.sum() + eps))
    u = v / math.sqrt((v**2).sum() + eps**2)
    if fam.block_norm == "L2":
        return u[k]
    u = np.minimum(u, 0.2)
    return u[k] / math.sqrt((u**2).sum() + eps**2)


def _rect_mean(plane, rect):
    x, y, w, h = rect
    return plane[y:y + h, x:x + w].mean()


def ref_hist(fam, win, i):
    d = fam.describe(i)
    if isinstance(fam, LBPHistogramFamily):
        codes = sk_lbp(gray_of(win), fam.P, fam.R, fam.method).astype(np.int64)
        return _rect_mean(codes == fam.bin_codes[d["channel"]], d["rect"])
    space = "gray" if isinstance(fam, IntensityHistogramFamily) else fam.space
    conv = {"gray": None, "rgb": None, "hsv": cv2.COLOR_RGB2HSV, "luv": cv2.COLOR_RGB2Luv}
    if space == "gray":
        lab = gray_of(win).astype(np.int64)[..., None] * fam.bins // 256
    else:
        planes = win if conv[space] is None else cv2.cvtColor(win, conv[space])
        ranges = (180, 256, 256) if space == "hsv" else (256, 256, 256)
        lab = np.stack([planes[..., k].astype(np.int64) * fam.bins // ranges[k]
                        for k in range(3)], axis=-1)
        if fam.joint:
            lab = ((lab[..., 0] * fam.bins + lab[..., 1]) * fam.bins + lab[..., 2])[..., None]
    per = fam.n_channels // lab.shape[-1]
    k, b = divmod(d["channel"], per)
    return _rect_mean(lab[..., k] == b, d["rect"])


def ref_lbp_code(fam, win, i):
    d = fam.describe(i)
    return sk_lbp(gray_of(win), fam.P, fam.R, fam.method)[d["y"], d["x"]]


def ref_channels(fam, win, i):
    d = fam.describe(i)
    key = d["channel"]
    if key.startswith("luv"):
        return _rect_mean(cv2.cvtColor(win, cv2.COLOR_RGB2Luv)[..., int(key[-1])], d["rect"])
    plane = (gradmag_plane(win) if key == "gradmag"
             else orient_plane(win, fam.orientations, fam.signed, int(key.split("#")[1])))
    m = gradmag_plane(win)[1:-1, 1:-1]
    return _rect_mean(plane, d["rect"]) / (m.mean() + 8)


def ref_wavelet(fam, win, i):
    return sum(wt * win[y:y + h, x:x + w].astype(np.int64).sum()
               for x, y, w, h, wt in fam.describe(i)["rects"])


def ref_fourier(fam, win, i):
    d = fam.describe(i)
    data = win.astype(np.float64) if d["source"] == "intensity" else gradient_magnitude(win)
    return np.abs(np.fft.fft2(data))[d["u"], d["v"] % fam.window_shape[1]]


def ref_pixel(fam, win, i):
    d = fam.describe(i)
    if isinstance(fam, GradientMagnitudeFamily):
        return gradmag_plane(win)[d["y"], d["x"]] / 8
    if isinstance(fam, PixelRGBFamily):
        planes = np.dstack([win, gray_of(win)])
        return planes[d["y"], d["x"], "RGBgray".index(d["plane"][0]) if d["plane"] != "gray"
                      else 3]
    return win[d["y"], d["x"]]


def ref_patch(fam, win, i):
    x, y, w, h = fam.describe(i)["rect"]
    return win[y:y + h, x:x + w].astype(np.int64).sum()


def ref_mblbp(fam, win, i):
    return mblbp_reference(win, *fam.describe(i)["rect"])


def ref_mbltp(fam, win, i):
    d = fam.describe(i)
    return mbltp_reference(win, *d["rect"], tolerance=d["tolerance"], upper=d["half"] == "upper",
                           reference=fam.reference, detrend=fam.detrend)


def ref_function(fam, win, i):
    out = np.zeros(fam.n_features, np.float32)
    fam.func.py_func(win, out)
    return out[i]


def _explicit_haar():
    gen = HaarFamily((10, 12), mode="ALL")
    ids = np.concatenate([np.arange(0, gen.n_features, 97),
                          np.flatnonzero(gen.rects[:, 0, 5])[::9]])
    rects = np.zeros((len(ids), 3, 4), np.int64)
    weights = np.zeros((len(ids), 3))
    for k, i in enumerate(ids):
        for j, (x, y, w, h, wt) in enumerate(gen.describe(int(i))["rects"]):
            rects[k, j], weights[k, j] = (x, y, w, h), wt
    return HaarFamily.from_rects((10, 12), rects=rects, weights=weights,
                                 tilted=gen.rects[ids, 0, 5] == 1)


#: (id, factory, reference, reference needs tie-free windows)
CASES = [
    ("haar", lambda: HaarFamily((10, 12), mode="ALL"), ref_haar, False),
    ("haar_raw", lambda: HaarFamily((10, 12), mode="CORE", normalize=False), ref_haar, False),
    ("haar_table", _explicit_haar, ref_haar, False),
    ("mblbp", lambda: MBLBPFamily((10, 12)), ref_mblbp, False),
    ("mblbp_table", lambda: MBLBPFamily.from_blocks((10, 12), blocks=[[0, 0, 1, 2], [3, 1, 3, 3]]),
     ref_mblbp, False),
    ("mbltp", lambda: MBLTPFamily((10, 12), tolerances=(0.0, 0.1, 0.3)), ref_mbltp, False),
    ("mbltpd", lambda: MBLTPDFamily((10, 12), tolerances=(0.0, 0.05, 0.3)), ref_mbltp, False),
    ("mbltp_local", lambda: MBLTPFamily((10, 12), tolerances=(0.1, 0.4), reference="local"),
     ref_mbltp, False),
    ("hog", lambda: HOGFamily((18, 22), orientations=6, pixels_per_cell=(4, 5)), ref_hog, False),
    ("hog_l1_signed", lambda: HOGFamily((14, 14), orientations=5, pixels_per_cell=(3, 3),
                                        cells_per_block=(1, 3), block_norm="L1", signed=True),
     ref_hog, False),
    ("hog_l1sqrt", lambda: HOGFamily((14, 14), orientations=4, pixels_per_cell=(4, 4),
                                     cells_per_block=(1, 1), block_norm="L1-sqrt"), ref_hog, False),
    ("hog_l2", lambda: HOGFamily((14, 14), orientations=7, pixels_per_cell=(3, 4),
                                 block_norm="L2"), ref_hog, False),
    ("channels", lambda: ChannelFamily((12, 11), stride=3), ref_channels, False),
    ("channels_color", lambda: ChannelFamily((10, 9), orientations=4, signed=True, color=True,
                                             stride=3), ref_channels, False),
    ("gradient_magnitude", lambda: GradientMagnitudeFamily((9, 11)), ref_pixel, False),
    ("pixel", lambda: PixelFamily((9, 11)), ref_pixel, False),
    ("pixel_rgb", lambda: PixelRGBFamily((6, 7)), ref_pixel, False),
    ("patch_sum", lambda: PatchSumFamily((9, 11), n_patches=60, seed=3), ref_patch, False),
    ("intensity_hist", lambda: IntensityHistogramFamily((10, 12), bins=8,
                                                        grids=[(1, 1), (2, 3)]), ref_hist, False),
    ("color_hist", lambda: ColorHistogramFamily((10, 12), space="hsv", bins=5), ref_hist, False),
    ("color_hist_joint", lambda: ColorHistogramFamily((10, 12), space="luv", bins=3, joint=True),
     ref_hist, False),
    ("color_hist_gray", lambda: ColorHistogramFamily((10, 12), space="gray", bins=6), ref_hist,
     False),
    ("lbp_code", lambda: LBPCodeFamily((10, 12), P=8, R=1.0), ref_lbp_code, True),
    ("lbp_code_wide", lambda: LBPCodeFamily((12, 12), P=12, R=2.5, method="default"),
     ref_lbp_code, True),
    ("lbp_hist", lambda: LBPHistogramFamily((12, 12), P=8, R=1.0, method="ror",
                                            grids=[(1, 1), (2, 2)]), ref_hist, True),
    ("fourier", lambda: FourierFamily((10, 12), size=3), ref_fourier, False),
    ("haar_wavelet", lambda: HaarWaveletFamily((12, 12), levels=2), ref_wavelet, False),
    ("window_function", lambda: WindowFunctionFamily(row_stats, n_features=22,
                                                     window_shape=(10, 12)), ref_function, False),
]
IDS = [c[0] for c in CASES]
NON_PROGRAM = {"fourier", "window_function"}


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def case(request):
    name, make, ref, tie_free = request.param
    return name, make(), ref, tie_free


def _image(fam, rng, extra=(9, 7)):
    h, w = fam.window_shape
    shape = (h + extra[0], w + extra[1]) + ((3,) if fam.color else ())
    img = rng.integers(0, 256, shape, dtype=np.uint8)
    # a band of few grey levels: exact 0/45/90 degree gradients, ties, flat areas
    img[: h // 2] = (img[: h // 2] // 96) * 96
    return img


POS = np.array([[0, 0], [9, 7], [0, 7], [9, 0], [4, 3], [1, 1]])


def _windows(fam, img):
    h, w = fam.window_shape
    return np.stack([img[y:y + h, x:x + w] for y, x in POS])


def test_every_registered_family_is_covered():
    covered = {type(make()).name for _, make, _, _ in CASES}
    builtin = {n for n, c in registered_families().items() if c.__module__.startswith("vjboost.")}
    assert builtin <= covered, sorted(builtin - covered)


def test_windows_equal_image_positions(case, rng):
    _, fam, _, _ = case
    img = _image(fam, rng)
    wins = _windows(fam, img)
    fids = np.unique(np.concatenate([rng.integers(0, fam.n_features, 300),
                                     [0, fam.n_features - 1]]))
    at = fam.evaluate_at(fam.prepare_image(img), fids, POS)
    np.testing.assert_array_equal(at, fam.evaluate(fam.prepare(wins), fids))
    assert at.dtype == np.float32 and at.shape == (fids.size, len(POS))


def test_program_path_equals_evaluate(case, rng):
    name, fam, _, _ = case
    img = _image(fam, rng)
    wins = _windows(fam, img)
    prog = fam.program()
    if name in NON_PROGRAM:
        assert prog is None and fam.program([0]) is None and fam.opencv_type is None
        return
    assert prog.n_features == fam.n_features
    full = fam.compute(wins)
    np.testing.assert_array_equal(evaluate_program(prog, wins), full)
    fids = rng.integers(0, fam.n_features, 40)
    sub = fam.program(fids)
    assert set(sub.channels.keys) <= set(prog.channels.keys)
    np.testing.assert_array_equal(evaluate_program(sub, wins), full[fids])
    np.testing.assert_array_equal(sub.categorical, fam.kinds()[fids])


def test_values_equal_brute_force_reference(case, rng):
    _, fam, ref, tie_free = case
    h, w = fam.window_shape
    shape = (4, h, w) + ((3,) if fam.color else ())
    wins = rng.integers(0, 256, shape, dtype=np.uint8)
    if not tie_free:
        wins[1] = (wins[1] // 128) * 128  # exact angles, ties
        wins[2] = 77  # flat
    fids = np.unique(np.concatenate([rng.integers(0, fam.n_features, 60),
                                     [0, fam.n_features - 1]]))
    got = fam.compute(wins, fids)
    expect = np.array([[ref(fam, wi, int(i)) for wi in wins] for i in fids], dtype=np.float64)
    np.testing.assert_allclose(got, expect, rtol=2e-5, atol=2e-5)
    cat = fam.kinds()[fids]
    if cat.any():
        assert fam.n_categories == 256 and (got[cat] == np.round(got[cat])).all()
        assert got[cat].min() >= 0 and got[cat].max() < 256


def test_id_subsets_are_rows_and_columns(case, rng):
    _, fam, _, _ = case
    h, w = fam.window_shape
    wins = rng.integers(0, 256, (7, h, w) + ((3,) if fam.color else ()), dtype=np.uint8)
    ch = fam.prepare(wins)
    full = fam.evaluate(ch)
    assert full.shape == (fam.n_features, 7) and full.dtype == np.float32
    fids = np.array([fam.n_features - 1, 0, 0, fam.n_features // 2])
    sids = np.array([6, 0, 6])
    np.testing.assert_array_equal(fam.evaluate(ch, fids, sids), full[fids][:, sids])
    np.testing.assert_array_equal(fam.evaluate(ch, np.int64(0)), full[:1])
    assert fam.channels_nbytes(7) >= ch.nbytes > 0
    assert len(fam.kinds()) == fam.n_features
    assert fam.kind(0) in ("ordered", "categorical")


def test_config_round_trip(case, rng):
    _, fam, _, _ = case
    again = family_from_dict(json.loads(json.dumps(family_to_dict(fam))))
    assert again == fam and again.get_config() == fam.get_config()
    clone = pickle.loads(pickle.dumps(fam))
    assert clone == fam
    h, w = fam.window_shape
    wins = rng.integers(0, 256, (3, h, w) + ((3,) if fam.color else ()), dtype=np.uint8)
    np.testing.assert_array_equal(again.compute(wins), fam.compute(wins))
    np.testing.assert_array_equal(clone.compute(wins), fam.compute(wins))
    d = fam.describe(fam.n_features - 1)
    assert d["family"] == fam.name and d["index"] == fam.n_features - 1 and d["text"]


def test_errors_name_the_argument(case, rng):
    _, fam, _, _ = case
    h, w = fam.window_shape
    extra = (3,) if fam.color else ()
    wins = rng.integers(0, 256, (2, h, w) + extra, dtype=np.uint8)
    ch = fam.prepare(wins)
    with pytest.raises(ValueError, match="windows"):
        fam.prepare(np.zeros((2, h, w + 1) + extra, np.uint8))
    with pytest.raises(ValueError, match="windows: empty"):
        fam.prepare(np.zeros((0, h, w) + extra, np.uint8))
    with pytest.raises(TypeError, match="windows: .*uint8"):
        fam.prepare(np.zeros((2, h, w) + extra, np.float32))
    with pytest.raises(ValueError, match=f"feature_ids: feature id {fam.n_features} out of range"):
        fam.evaluate(ch, [0, fam.n_features])
    with pytest.raises(ValueError, match="sample_ids: sample id 2 out of range"):
        fam.evaluate(ch, [0], [2])
    with pytest.raises(ValueError, match="channels: these are 'windows' channels"):
        fam.evaluate_at(ch, [0], [[0, 0]])
    with pytest.raises(TypeError, match="channels: expected Channels"):
        fam.evaluate(wins)
    img = fam.prepare_image(np.zeros((h + 1, w) + extra, np.uint8))
    with pytest.raises(ValueError, match="positions: window at"):
        fam.evaluate_at(img, [0], [[2, 0]])
    with pytest.raises(ValueError, match="image: image of"):
        fam.prepare_image(np.zeros((h - 1, w) + extra, np.uint8))
    with pytest.raises(ValueError, match="i: feature index"):
        fam.describe(fam.n_features)


def test_user_family_without_program_must_implement_the_generic_path():
    class Half(FeatureFamily):
        name = "test_half"

        def __init__(self, window_shape=(4, 4)):
            self.window_shape = window_shape
            self.n_features = 1

        def describe(self, i):
            return {}

        def get_config(self):
            return {}

    fam = Half()
    assert fam.program() is None and not fam.kinds().any()
    with pytest.raises(NotImplementedError, match="_build_program"):
        fam.prepare(np.zeros((1, 4, 4), np.uint8))
