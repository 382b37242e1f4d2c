"""MB-LTP family: codes against NumPy references (hypothesis), MB-LBP at τ = 0, the pool,
training, save/load and OpenCV export.

(Windows vs image positions, subsets, configs and the program path:
tests/test_features_conformance.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost._errors import InputError
from vjboost.features.mblbp import MBLBPFamily, mblbp_feature_table
from vjboost.features.mbltp import (
    DEFAULT_TOLERANCES,
    DETRENDED_TOLERANCES,
    MBLTPDFamily,
    MBLTPFamily,
    mbltp_reference,
)


def float64_code(win: np.ndarray, x: int, y: int, w: int, h: int, tau: float, upper: bool,
                 reference: str = "window", detrend: bool = False) -> tuple[int, float]:
    """Independent formulation in float64 from the definition: block means (their
    least-squares plane, np.linalg.lstsq, removed when detrending) compared with τ times the
    reference — np.std of the inner window, the grid's mean or the grid's np.std; the code, and
    the smallest distance of a block difference to the tolerance (relative), below which
    float32 rounding may decide differently."""
    win = win.astype(np.float64)
    grid = win[y:y + 3 * h, x:x + 3 * w]
    means = grid.reshape(3, h, 3, w).mean(axis=(1, 3))
    if detrend:
        jj, ii = np.mgrid[0:3, 0:3]
        a = np.stack([np.ones(9), ii.ravel(), jj.ravel()], 1)
        coef = np.linalg.lstsq(a, means.ravel(), rcond=None)[0]
        means = means - (a @ coef).reshape(3, 3)
    ref = {"window": win[1:-1, 1:-1].std(), "mean": grid.mean(), "local": grid.std()}[reference]
    ring = [means[0, 0], means[0, 1], means[0, 2], means[1, 2], means[2, 2], means[2, 1],
            means[2, 0], means[1, 0]]
    code, margin = 0, np.inf
    for m in ring:
        d = (m - means[1, 1]) if upper else (means[1, 1] - m)
        code = (code << 1) | int(d > tau * ref)
        margin = min(margin, abs(d - tau * ref) / max(ref, 1e-9))
    return code, margin


@st.composite
def window_and_feature(draw):
    h = draw(st.integers(3, 14))
    w = draw(st.integers(3, 14))
    base = draw(st.integers(0, 255))
    spread = draw(st.sampled_from([0, 2, 8, 40, 255]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    win = np.clip(base + rng.integers(-spread, spread + 1, (h, w)), 0, 255).astype(np.uint8)
    bw = draw(st.integers(1, w // 3))
    bh = draw(st.integers(1, h // 3))
    x = draw(st.integers(0, w - 3 * bw))
    y = draw(st.integers(0, h - 3 * bh))
    tau = draw(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.5, 1.5]))
    return win, (x, y, bw, bh), tau


@settings(max_examples=150, deadline=None)
@given(window_and_feature())
def test_codes_equal_the_numpy_references(case):
    """The family's kernel code of a random grid equals the float32 reference exactly, and the
    float64 definition wherever no block difference is within float32 rounding of τσ."""
    win, (x, y, bw, bh), tau = case
    h, w = win.shape
    fam = MBLTPFamily((h, w), tolerances=(tau,))
    grid = np.flatnonzero((mblbp_feature_table((h, w)) == (x, y, bw, bh)).all(1))[0]
    got = fam.compute(win[None], [2 * grid, 2 * grid + 1]).ravel()
    for k, upper in enumerate((True, False)):
        assert got[k] == mbltp_reference(win, x, y, bw, bh, tolerance=tau, upper=upper)
        ref, margin = float64_code(win, x, y, bw, bh, tau, upper)
        if win[1:-1, 1:-1].std() > 0 and margin > 1e-4:
            assert got[k] == ref


@settings(max_examples=150, deadline=None)
@given(window_and_feature(), st.sampled_from(["window", "mean", "local"]), st.booleans())
def test_grid_references_and_detrending_equal_the_numpy_references(case, reference, detrend):
    """Every tolerance reference, with and without detrending: the kernel's code equals the
    float32 reference exactly, and the float64 definition (np.linalg.lstsq plane, np.std)
    wherever no comparison is within rounding of its tolerance (a flat window has code 0 under
    the window reference)."""
    win, (x, y, bw, bh), tau = case
    h, w = win.shape
    fam = MBLTPFamily((h, w), tolerances=(tau,), reference=reference, detrend=detrend)
    grid = np.flatnonzero((mblbp_feature_table((h, w)) == (x, y, bw, bh)).all(1))[0]
    got = fam.compute(win[None], [2 * grid, 2 * grid + 1]).ravel()
    for k, upper in enumerate((True, False)):
        assert got[k] == mbltp_reference(win, x, y, bw, bh, tolerance=tau, upper=upper,
                                         reference=reference, detrend=detrend)
        ref, margin = float64_code(win, x, y, bw, bh, tau, upper, reference, detrend)
        if margin > 1e-4 and (reference != "window" or win[1:-1, 1:-1].std() > 0):
            assert got[k] == ref


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(-4, 4), st.integers(-4, 4))
def test_detrended_codes_ignore_a_brightness_ramp(seed, ax, ay):
    """Adding a linear ramp ``ax·x + ay·y`` to a window changes no detrended code at τ = 0
    (the ramp's block sums lie on a plane, removed exactly)."""
    rng = np.random.default_rng(seed)
    win = rng.integers(100, 150, (1, 12, 12))  # the ramp keeps it in 12..237
    yy, xx = np.mgrid[0:12, 0:12]
    ramp = win + ax * xx + ay * yy
    fam = MBLTPFamily((12, 12), tolerances=(0.0,), reference="mean", detrend=True)
    a = fam.compute(win.astype(np.uint8))
    b = fam.compute(ramp.astype(np.uint8))
    np.testing.assert_array_equal(a, b)


def test_detrended_family_defaults_and_old_configs():
    fam = MBLTPDFamily((20, 20))
    assert fam.name == "mbltpd" and fam.reference == "mean" and fam.detrend
    assert fam.tolerances == list(DETRENDED_TOLERANCES)
    assert fam.n_features == MBLTPFamily((20, 20), tolerances=DETRENDED_TOLERANCES).n_features
    assert fam.describe(0)["family"] == "mbltpd"
    assert MBLTPDFamily.from_config(fam.get_config()) == fam
    # a model saved before the option: no reference keys, the window reference
    old = {"window_shape": [20, 20], "tolerances": [0.1], "max_block": None}
    assert MBLTPFamily.from_config(old).get_config() == old
    with pytest.raises(InputError, match="reference"):
        MBLTPFamily((9, 9), reference="block")
    from vjboost.features.channels import ChannelSet
    from vjboost.features.program import Program

    with pytest.raises(InputError, match="'local' needs grids on the 'gray' plane"):
        Program.mbltp((9, 9), blocks=[[0, 0, 3, 3]], tolerance=0.1, upper=True,
                      channels=ChannelSet(["gray", "gradmag"]), plane=1, reference="local")


def test_zero_tolerance_lower_half_is_mblbp_complement(rng):
    """At τ = 0 the lower half sets bit k iff centre > block: the complement of MB-LBP's
    ``block >= centre`` (windows with σ > 0)."""
    wins = rng.integers(0, 256, (40, 12, 15), dtype=np.uint8)
    wins[20:] = wins[20:] // 64 * 64  # many equal blocks
    ltp = MBLTPFamily((12, 15), tolerances=(0.0,))
    lbp = MBLBPFamily((12, 15))
    lower = ltp.compute(wins, np.arange(1, ltp.n_features, 2))
    upper = ltp.compute(wins, np.arange(0, ltp.n_features, 2))
    codes = lbp.compute(wins)
    np.testing.assert_array_equal(255 - lower, codes)
    assert (upper.astype(int) & lower.astype(int) == 0).all()  # a block is not both


def test_flat_window_and_contrast_invariance(rng):
    fam = MBLTPFamily((9, 9))
    assert (fam.compute(np.full((1, 9, 9), 77, np.uint8)) == 0).all()
    # a window and the same pattern at a quarter of its contrast: same codes where the
    # float64 definition is far from every tolerance
    a = rng.integers(0, 64, (30, 9, 9)).astype(np.uint8) * 4
    b = (a // 4 + 100).astype(np.uint8)
    va, vb = fam.compute(a), fam.compute(b)
    keep = np.ones_like(va, bool)
    for i in range(fam.n_features):
        d = fam.describe(i)
        for s in range(30):
            keep[i, s] = float64_code(a[s], *d["rect"], d["tolerance"],
                                      d["half"] == "upper")[1] > 1e-3
    assert keep.mean() > 0.5
    np.testing.assert_array_equal(va[keep], vb[keep])


def test_pool_order_config_and_errors():
    fam = MBLTPFamily((20, 20))
    grids = mblbp_feature_table((20, 20))
    assert fam.n_features == 2 * len(DEFAULT_TOLERANCES) * len(grids) == 31_752
    d = fam.describe(2 * 4 * 5 + 2 * 2 + 1)  # grid 5, third tolerance, lower half
    assert d["rect"] == tuple(int(v) for v in grids[5]) and d["half"] == "lower"
    assert d["tolerance"] == DEFAULT_TOLERANCES[2] and d["family"] == "mbltp"
    assert fam.kinds().all() and fam.n_categories == 256 and fam.opencv_type is None
    small = MBLTPFamily((20, 20), tolerances=[0.3], max_block=(2, 3))
    assert small.n_features == 2 * int(((grids[:, 2] <= 3) & (grids[:, 3] <= 2)).sum())
    assert MBLTPFamily.from_config(small.get_config()) == small
    # a model's few features build their program without the whole pool, identically
    ids = np.array([7, 3, 31_000])
    part, whole = fam.program(ids), MBLTPFamily((20, 20))._full_program().take(ids)
    for k in ("corners", "scale", "weights", "op", "norm"):
        np.testing.assert_array_equal(getattr(part, k), getattr(whole, k))
    for bad in ([], [-0.1], [0.1, 0.1], [float("nan")]):
        with pytest.raises(InputError, match="tolerances"):
            MBLTPFamily((9, 9), tolerances=bad)
    with pytest.raises(InputError, match="3x3"):
        MBLTPFamily((2, 9))


def test_mixed_pool_program_uses_the_inlined_rects_lbp_kernel():
    from vjboost.features import FeaturePool, HaarFamily
    from vjboost.features.program import OPS_MIXED, OPS_RECTS_MBLBP

    pool = FeaturePool([HaarFamily((10, 10)), MBLBPFamily((10, 10)), MBLTPFamily((10, 10))])
    assert pool.program().ops_mask == OPS_RECTS_MBLBP
    assert MBLTPFamily((10, 10)).program().ops_mask == OPS_RECTS_MBLBP
    assert OPS_RECTS_MBLBP != OPS_MIXED


@pytest.mark.slow
def test_vjtrain_mbltp_end_to_end(small_face_set, tmp_path):
    """``vjtrain --features mbltp`` (and haar,mbltp) trains, saves, reloads and detects the
    same; the OpenCV XML export refuses with one line naming the family."""
    import cv2
    from click.testing import CliRunner

    from vjboost.cascade import CascadeDetector, load_model, save_model
    from vjboost.cascade.opencv_xml import ExportError, to_opencv_xml
    from vjboost.cascade.runner import cascade_accepts
    from vjboost.cli.train import vjtrain

    root = small_face_set
    with np.load(root / "pos.npz") as z:
        faces = z["images"]
    bg = np.concatenate([
        np.lib.stride_tricks.sliding_window_view(cv2.imread(str(p), 0), (16, 16))[::9, ::9]
        .reshape(-1, 16, 16) for p in sorted((root / "bg").glob("*.png"))])
    for features in ("mbltp", "haar,mbltp", "haar,mbltpd"):
        out = tmp_path / features.replace(",", "_")
        res = CliRunner().invoke(vjtrain, [
            str(root / "pos.npz"), str(root / "bg"), "-o", str(out), "--window", "16x16",
            "--stages", "3", "--num-pos", "60", "--num-neg", "100", "--min-hit-rate", "0.95",
            "--seed", "1", "--threads", "1", "-q", "--features", features])
        assert res.exit_code == 0, res.output
        assert "no OpenCV XML" in res.output
        model = load_model(out / "model.json")
        names = {model.family.describe(int(i))["family"] for i in model.feature_ids}
        assert features.split(",")[-1] in names
        # it separates: faces accepted far more often than background windows
        face_rate = cascade_accepts(model, faces)[0].mean()
        assert face_rate > 0.6 and cascade_accepts(model, bg)[0].mean() < face_rate / 3
        # save/load round trip: same model, same detections
        save_model(model, tmp_path / "again.json")
        again = load_model(tmp_path / "again.json")
        assert again.family == model.family
        np.testing.assert_array_equal(again.feature_ids, model.feature_ids)
        img = np.load(root / "pos.npz")["images"][:12].reshape(-1, 16)  # a 192x16 strip
        img = np.ascontiguousarray(np.tile(img, (1, 4)))
        a = CascadeDetector(model, min_neighbors=0).raw_windows(img)
        b = CascadeDetector(again, min_neighbors=0).raw_windows(img)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        with pytest.raises(ExportError) as err:
            to_opencv_xml(model)
        msg = str(err.value)
        assert f"'{features.split(',')[-1]}'" in msg and "OpenCV has no such feature type" in msg
        assert "\n" not in msg
