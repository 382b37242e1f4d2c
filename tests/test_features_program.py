"""Integral channel planes and compiled feature programs against OpenCV and NumPy references."""

from __future__ import annotations

import cv2
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.features.channels import ChannelSet, orientation_table, parse_channel_key
from vjboost.features.program import (
    NORM_GRADIENT,
    NORM_NONE,
    NORM_VARIANCE,
    OPS_HAAR,
    OPS_MIXED,
    OPS_RECTS,
    OPS_RECTS_MBLBP,
    REC,
    Program,
    evaluate_positions,
    evaluate_program,
    node_value,
    window_norms,
)


def integral(plane):
    out = np.zeros((plane.shape[0] + 1, plane.shape[1] + 1), np.int64)
    out[1:, 1:] = plane.astype(np.int64).cumsum(0).cumsum(1)
    return out


def gradient_planes(img, n_bins, signed):
    g = img.astype(np.int64)
    gr = np.zeros_like(g)
    gc = np.zeros_like(g)
    gr[1:-1, 1:-1] = g[2:, 1:-1] - g[:-2, 1:-1]
    gc[1:-1, 1:-1] = g[1:-1, 2:] - g[1:-1, :-2]
    mag = np.rint(8 * np.hypot(gr, gc)).astype(np.int64)
    period = 360.0 if signed else 180.0
    deg = np.mod(np.degrees(np.arctan2(gr, gc)), period)
    bins = np.clip(np.floor(deg / (period / n_bins)), 0, n_bins - 1)
    return mag, [np.where(bins == b, mag, 0) for b in range(n_bins)]


# ------------------------------------------------------------------------------------------
# channel planes


@settings(max_examples=25)
@given(h=st.integers(1, 14), w=st.integers(1, 14), seed=st.integers(0, 2**31))
def test_gray_planes_match_opencv(h, w, seed):
    img = np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8)
    planes = ChannelSet(["gray", "gray2", "tilted"]).image(img)
    s, q, t = cv2.integral3(img, sdepth=cv2.CV_32S, sqdepth=cv2.CV_64F)
    np.testing.assert_array_equal(planes[0], s)
    np.testing.assert_array_equal(planes[1], q.astype(np.int64).astype(np.int32))
    np.testing.assert_array_equal(planes[2], t)


@pytest.mark.parametrize(("n_bins", "signed"), [(6, False), (9, False), (8, True)])
def test_gradient_planes_match_numpy(rng, n_bins, signed):
    img = rng.integers(0, 256, (13, 17), dtype=np.uint8)
    img[:5] = (img[:5] // 80) * 80  # exact 0/45/90 degree gradients
    key = f"orient({n_bins},{'s' if signed else 'u'})"
    cs = ChannelSet(["gradmag"] + [f"{key}#{b}" for b in range(n_bins)])
    assert cs.margin == 1 and cs.n_planes == n_bins + 1
    planes = cs.image(img)
    mag, orient = gradient_planes(img, n_bins, signed)
    np.testing.assert_array_equal(planes[0], integral(mag))
    for b in range(n_bins):
        np.testing.assert_array_equal(planes[1 + b], integral(orient[b]))


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), n=st.integers(1, 3),
       n_bins=st.integers(1, 9), signed=st.booleans(), seed=st.integers(0, 2**31),
       data=st.data())
def test_gradient_plane_subsets_match_numpy(h, w, n, n_bins, signed, seed, data):
    # any subset of the planes, in any order, for window stacks (one kernel call for all
    # windows) and single images written at an offset of a larger buffer (the detector's
    # batches); with the images' own degenerate sizes (fewer than 3 rows or columns)
    key = f"orient({n_bins},{'s' if signed else 'u'})"
    every = ["gradmag"] + [f"{key}#{b}" for b in range(n_bins)]
    keys = data.draw(st.permutations(every)).copy()[:data.draw(st.integers(1, len(every)))]
    cs = ChannelSet(keys)
    imgs = np.random.default_rng(seed).integers(0, 256, (n, h, w), dtype=np.uint8)
    imgs[:, :h // 2] = (imgs[:, :h // 2] // 85) * 85  # exact 0/45/90 degree gradients
    stack = cs.windows(imgs)
    for i in range(n):
        mag, orient = gradient_planes(imgs[i], n_bins, signed)
        ref = [mag if k == "gradmag" else orient[parse_channel_key(k)[2]] for k in cs.keys]
        out = np.full((cs.n_planes, h + 4, w + 6), -7, np.int32)
        cs.fill(imgs[i], out, 2, 3)
        for j, plane in enumerate(ref):
            np.testing.assert_array_equal(stack[i, j], integral(plane))
            np.testing.assert_array_equal(out[j, 2:h + 3, 3:w + 4], integral(plane))
        assert (out[:, :2] == -7).all() and (out[:, :, :3] == -7).all()


def test_gradient_planes_split_between_threads(rng, monkeypatch):
    # a large image splits its planes between threads: the same planes as one thread
    from vjboost.features import channels

    img = rng.integers(0, 256, (40, 57), dtype=np.uint8)
    cs = ChannelSet(["orient(5,s)#3", "gradmag", "orient(5,s)#0", "orient(5,s)#4"])
    one = cs.image(img)
    monkeypatch.setattr(channels, "_SPLIT_PIXELS", 100)
    monkeypatch.setattr(channels, "_small", lambda images, n_planes: False)
    np.testing.assert_array_equal(cs.image(img), one)
    mag, orient = gradient_planes(img, 5, True)
    np.testing.assert_array_equal(one[1], integral(mag))
    np.testing.assert_array_equal(one[0], integral(orient[3]))


def test_gradient_magnitudes_wrap_like_int32(rng):
    # the integrals wrap mod 2**32 (as every int32 plane does): a tall image of maximal
    # gradients overflows int32 and must agree with the exact integral mod 2**32
    img = np.zeros((5000, 260), np.uint8)
    img[:, (np.arange(260) // 2) % 2 == 1] = 255  # columns 0 0 255 255 ...: |gx| = 255
    plane = ChannelSet(["gradmag"]).image(img)
    mag, _ = gradient_planes(img, 1, False)
    exact = integral(mag)
    assert exact.max() > 2**31
    np.testing.assert_array_equal(plane[0], exact.astype(np.int32))


def test_colour_planes_match_opencv(rng):
    rgb = rng.integers(0, 256, (3, 9, 11, 3), dtype=np.uint8)
    cs = ChannelSet(["luv#0", "luv#2", "rgb#1", "gray"])
    assert cs.color
    planes = cs.windows(rgb)
    for k in range(3):
        luv = cv2.cvtColor(rgb[k], cv2.COLOR_RGB2Luv)
        np.testing.assert_array_equal(planes[k, 0], integral(luv[..., 0]))
        np.testing.assert_array_equal(planes[k, 1], integral(luv[..., 2]))
        np.testing.assert_array_equal(planes[k, 2], integral(rgb[k, ..., 1]))
        np.testing.assert_array_equal(planes[k, 3],
                                      integral(cv2.cvtColor(rgb[k], cv2.COLOR_RGB2GRAY)))
    with pytest.raises(ValueError, match="need RGB input"):
        cs.windows(rgb[..., 0])


def test_indicator_planes_count_labels(rng):
    img = rng.integers(0, 256, (2, 8, 9), dtype=np.uint8)
    cs = ChannelSet([f"ghist(4)#{b}" for b in range(4)])
    planes = cs.windows(img)
    for b in range(4):
        np.testing.assert_array_equal(planes[1, b], integral(img[1] // 64 == b))
    assert planes[:, :, -1, -1].sum(axis=1).tolist() == [72, 72]  # every pixel in one bin


def test_keys_and_sets():
    assert parse_channel_key("orient(6,u)#2") == ("orient", (6, "u"), 2)
    cs = ChannelSet(["gray", "orient(4,s)#1", "gray"])
    assert cs.keys == ("gray", "orient(4,s)#1") and "gray" in cs and "gray2" not in cs
    assert cs.union(ChannelSet(["gray2", "gray"])).keys == ("gray", "orient(4,s)#1", "gray2")
    for bad in ("nope", "orient(4,x)#1", "orient(4,u)#4", "gray(3)", "orient"):
        with pytest.raises(ValueError, match="channel key|orient|gray"):
            ChannelSet([bad])
    t = orientation_table(4, True)
    assert t[255 - 1, 255] == 3 * 0 + 3  # gy = -1, gx = 0: 270 degrees, signed bin 3


# ------------------------------------------------------------------------------------------
# programs


def random_rect_program(rng, h, w, q):
    """Up to 3 weighted upright or tilted rectangles per feature on gray/tilted planes."""
    rects = np.zeros((q, 3, 4), np.int64)
    tilted = np.zeros(q, bool)
    for i in range(q):
        tilted[i] = rng.random() < 0.4 and min(h, w) >= 3
        for k in range(3):
            while True:
                rw, rh = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
                if tilted[i]:
                    if rh > w - 1 or rw + rh > h or rw + rh > w:
                        continue
                    rects[i, k] = (rng.integers(rh, w - rw + 1), rng.integers(0, h - rw - rh + 1),
                                   rw, rh)
                else:
                    rects[i, k] = (rng.integers(0, w - rw + 1), rng.integers(0, h - rh + 1),
                                   rw, rh)
                break
    weights = rng.normal(size=(q, 3)).round(2)
    weights[::3, 2] = 0.0
    return rects, weights, tilted


def brute_tilted(img, x, y, w, h):
    a = img.astype(np.int64)
    ih, iw = a.shape
    yy, xx = np.mgrid[0:ih, 0:iw]

    def t(ty, tx):
        return a[(yy < ty) & (np.abs(xx - tx + 1) <= ty - yy - 1)].sum()

    return t(y, x) - t(y + h, x - h) - t(y + w, x + w) + t(y + w + h, x + w - h)


@pytest.mark.parametrize("norm", [NORM_NONE, NORM_VARIANCE])
def test_rect_program_matches_brute_force(rng, norm):
    h, w = 9, 11
    rects, weights, tilted = random_rect_program(rng, h, w, 30)
    prog = Program.rects((h, w), ChannelSet(["gray", "tilted"]), rects=rects, weights=weights,
                         planes=tilted.astype(int)[:, None], tilted=tilted[:, None], norm=norm)
    assert prog.ops_mask == (OPS_HAAR if norm == NORM_VARIANCE else OPS_RECTS)
    wins = rng.integers(0, 256, (5, h, w), dtype=np.uint8)
    got = evaluate_program(prog, wins)
    for i in range(30):
        for s in range(5):
            v = 0.0
            for k in range(3):
                if weights[i, k] == 0:
                    break
                x, y, rw, rh = rects[i, k]
                r = (brute_tilted(wins[s], x, y, rw, rh) if tilted[i]
                     else wins[s, y:y + rh, x:x + rw].astype(np.int64).sum())
                v += weights[i, k] * r
            if norm == NORM_VARIANCE:
                inner = wins[s, 1:-1, 1:-1].astype(np.int64)
                v /= np.sqrt(inner.size * (inner**2).sum() - inner.sum() ** 2)
            np.testing.assert_allclose(got[i, s], v, rtol=1e-5, atol=1e-3)


@given(st.integers(1, 5), st.integers(1, 5))
def test_tilted_rect_footprint_is_2wh(rw, rh):
    # a 45-degree rectangle with sides w, h covers 2 w h pixels of its bounding square
    n = rw + rh
    prog = Program.rects((n, n), ChannelSet(["tilted"]), rects=[[[rh, 0, rw, rh]]],
                         weights=[[1.0]], tilted=[True])
    assert evaluate_program(prog, np.ones((1, n, n), np.uint8))[0, 0] == 2 * rw * rh
    img = np.zeros((n + 3, n + 4), np.uint8)
    img[2:2 + n, 3:3 + n] = 1
    at = evaluate_positions(prog, prog.channels.image(img), [[2, 3]])
    assert at[0, 0] == 2 * rw * rh


def test_gradient_normalisation(rng):
    h, w = 10, 12
    prog = Program.rects((h, w), ChannelSet(["gradmag"]), rects=[[[2, 3, 5, 4]]],
                         weights=[[1.0]], norm=NORM_GRADIENT)
    assert "gradmag" in prog.channels.keys
    wins = rng.integers(0, 256, (4, h, w), dtype=np.uint8)
    got = evaluate_program(prog, wins)[0]
    for s in range(4):
        mag, _ = gradient_planes(wins[s], 1, False)
        inner = mag[1:-1, 1:-1]
        expect = mag[3:7, 2:7].sum() * inner.size / (inner.sum() + 8 * inner.size)
        np.testing.assert_allclose(got[s], expect, rtol=1e-6)


def test_concat_take_on_and_compact(rng):
    h, w = 12, 12
    haar = Program.rects((h, w), ChannelSet(["gray"]), rects=[[[0, 0, 4, 4], [1, 1, 2, 2]]],
                         weights=[[-1.0, 4.0]], norm=NORM_VARIANCE)
    lbp = Program.mblbp((h, w), blocks=[[0, 0, 2, 2], [3, 3, 3, 3]])
    grad = Program.rects((h, w), ChannelSet(["orient(4,u)#2", "gradmag"]),
                         rects=[[[1, 1, 5, 5]]], weights=[[1.0]], norm=NORM_GRADIENT)
    both = Program.concat([haar, lbp, grad])
    assert both.n_features == 4 and both.ops_mask == OPS_RECTS_MBLBP
    assert set(both.channels.keys) == {"gray", "gray2", "orient(4,u)#2", "gradmag"}
    wins = rng.integers(0, 256, (6, h, w), dtype=np.uint8)
    full = evaluate_program(both, wins)
    np.testing.assert_array_equal(full[0:1], evaluate_program(haar, wins))
    np.testing.assert_array_equal(full[1:3], evaluate_program(lbp, wins))
    np.testing.assert_array_equal(full[3:], evaluate_program(grad, wins))
    assert both.categorical.tolist() == [False, True, True, False]
    sub = both.take([2, 1]).compact()
    assert sub.channels.keys == ("gray",)
    np.testing.assert_array_equal(evaluate_program(sub, wins), full[[2, 1]])
    wide = ChannelSet(["luv#0", "gradmag", "gray", "orient(4,u)#2", "gray2"])
    np.testing.assert_array_equal(evaluate_program(both.on(wide), wins[..., None].repeat(3, -1)),
                                  full)
    with pytest.raises(ValueError, match="channels: channel 'gray2' is not in the set"):
        both.on(ChannelSet(["gray", "gradmag", "orient(4,u)#2"]))


def test_hog_entries_share_block_norms_exactly(rng):
    # the evaluator computes a block's normalisers once for consecutive entries of the block;
    # any other order (each entry its own normalisers) gives the same float32 values
    n, h, w = 5, 14, 14
    keys = [f"orient({n},u)#{b}" for b in range(n)]
    cells = np.array([[[1, 1, 4, 4], [5, 1, 4, 4], [1, 5, 4, 4], [5, 5, 4, 4]]] * (4 * n))
    prog = Program.hog((h, w), ChannelSet(keys), first_plane=0, n_bins=n, cells=cells,
                       target=np.arange(4 * n), block_norm="L2-Hys", eps=0.1)
    wins = rng.integers(0, 256, (9, h, w), dtype=np.uint8)
    ordered = evaluate_program(prog, wins)
    perm = rng.permutation(4 * n)
    np.testing.assert_array_equal(evaluate_program(prog, wins, feature_ids=perm), ordered[perm])
    single = np.stack([evaluate_program(prog, wins, feature_ids=[i])[0] for i in range(4 * n)])
    np.testing.assert_array_equal(single, ordered)


def test_range_checks(rng):
    # a 300x300 window's squared sums overflow 32 bits; one-pixel reads of 24-bit codes do not
    with pytest.raises(ValueError, match="too large for channel 'gray2'"):
        Program.rects((300, 300), ChannelSet(["gray"]), rects=[[[0, 0, 2, 2]]], weights=[[1.0]],
                      norm=NORM_VARIANCE)
    with pytest.raises(ValueError, match="too large for channel 'gray'"):
        Program.rects((3000, 3000), ChannelSet(["gray"]), rects=[[[0, 0, 3000, 3000]]],
                      weights=[[1.0]])
    codes = ChannelSet(["lbp(24,3.0,default)"])
    Program.rects((40, 40), codes, rects=[[[5, 5, 1, 1]]], weights=[[1.0]])
    with pytest.raises(ValueError, match="too large"):
        Program.rects((40, 40), codes, rects=[[[5, 5, 30, 30]]], weights=[[1.0]])
    with pytest.raises(ValueError, match="outside the 10x10 window"):
        Program.rects((10, 10), ChannelSet(["gradmag"]), rects=[[[0, 1, 3, 3]]],
                      weights=[[1.0]])  # gradients need a one-pixel margin


@numba.njit(cache=True)
def _node_values(tab, tabf, buf, bases, pro, prof, out):  # pragma: no cover - numba
    for q in range(out.shape[0]):
        for j in range(bases.shape[0]):
            iv, ig, _ = window_norms(buf, bases[j], pro, prof)
            out[q, j] = node_value(tab, tabf, q * REC, buf, bases[j], iv, ig, OPS_MIXED)


def test_evaluator_equals_node_value(rng):
    # evaluate_program (blocks of windows, shared HOG block sums) and node_value (what the
    # cascade kernels call per node) give the same float32 values
    from vjboost.features import ChannelFamily, HaarFamily, HOGFamily, MBLBPFamily

    shape = (16, 18)
    prog = Program.concat([f.program() for f in (
        HaarFamily(shape, mode="ALL"), MBLBPFamily(shape),
        HOGFamily(shape, orientations=5, pixels_per_cell=(4, 4), block_norm="L2-Hys"),
        HOGFamily(shape, orientations=4, pixels_per_cell=(7, 8), cells_per_block=(1, 2),
                  block_norm="L1-sqrt", signed=True),
        ChannelFamily(shape, stride=4))])
    assert prog.ops_mask == OPS_MIXED  # HOG blocks: the linked node test
    ids = np.concatenate([rng.choice(prog.n_features, 400, replace=False),
                          np.arange(prog.n_features - 300, prog.n_features)])
    sub = prog.take(ids)
    wins = rng.integers(0, 256, (70, *shape), dtype=np.uint8)
    wins[:10] = (wins[:10] // 100) * 100
    planes = sub.channels.windows(wins)
    h, w = shape
    bound = sub.bind(w + 1, (h + 1) * (w + 1))
    out = np.empty((sub.n_features, 70), np.float32)
    _node_values(bound.tab, bound.tabf, planes.reshape(-1),
                 np.arange(70, dtype=np.int64) * planes[0].size, bound.pro, bound.prof, out)
    np.testing.assert_array_equal(evaluate_program(sub, planes=planes), out)


def test_subsets_share_one_bound_program(rng):
    # lazy training evaluates small subsets of a large program tens of times per tree: every
    # subset reads the records bound once for the layout, with the values of a program taken,
    # compacted onto its own channels and bound apart
    from vjboost.features import HaarFamily, HOGFamily, MBLBPFamily

    shape = (14, 14)
    prog = Program.concat([f.program() for f in (
        HaarFamily(shape, mode="ALL"), MBLBPFamily(shape),
        HOGFamily(shape, orientations=4, pixels_per_cell=(4, 4), block_norm="L2-Hys"))])
    wins = rng.integers(0, 256, (40, *shape), dtype=np.uint8)
    planes = prog.channels.windows(wins)
    q = prog.n_features
    hog = np.arange(q - 64, q - 40)
    for ids in (rng.choice(q, 300), hog, np.r_[hog[::-1], -1, 0, 0], np.arange(7)):
        sids = rng.choice(40, 25)
        got = evaluate_program(prog, planes=planes, feature_ids=ids, sample_ids=sids)
        ref = evaluate_program(prog.take(ids).compact(), wins[sids])
        np.testing.assert_array_equal(got, ref)
    h, w = shape
    assert prog.bound(w + 1, (h + 1) * (w + 1)) is prog.bound(w + 1, (h + 1) * (w + 1))
    with pytest.raises(IndexError, match="feature_ids"):
        evaluate_program(prog, planes=planes, feature_ids=[q])


@numba.njit(cache=True)
def _row_values(tab, tabf, buf, bases, pro, prof, rows, out):  # pragma: no cover - numba
    for q in range(rows.shape[0]):
        for j in range(bases.shape[0]):
            iv, ig, _ = window_norms(buf, bases[j], pro, prof)
            out[q, j] = node_value(tab, tabf, rows[q] * REC, buf, bases[j], iv, ig, OPS_MIXED)


@pytest.mark.parametrize("n_windows", [3, 70, 200])
def test_many_features_in_random_order_equal_node_values(rng, n_windows):
    # a sampler asks for thousands of features in random order (repeats allowed) on a few
    # windows: the kernel visits the records in ascending order and splits the features
    # between threads when the windows are few; every value lands in its own row
    from vjboost.features import ChannelFamily, HaarFamily, HOGFamily, MBLBPFamily

    shape = (16, 18)
    prog = Program.concat([f.program() for f in (
        HaarFamily(shape, mode="ALL"), MBLBPFamily(shape),
        HOGFamily(shape, orientations=5, pixels_per_cell=(4, 4), block_norm="L2-Hys"),
        ChannelFamily(shape, stride=4))])
    ids = rng.choice(prog.n_features, 5000)  # with repeats
    ids[:50] = prog.n_features - 1 - np.arange(50)  # HOG entries among them
    wins = rng.integers(0, 256, (n_windows, *shape), dtype=np.uint8)
    planes = prog.channels.windows(wins)
    h, w = shape
    bound = prog.bind(w + 1, (h + 1) * (w + 1))
    ref = np.empty((ids.size, n_windows), np.float32)
    _row_values(bound.tab, bound.tabf, planes.reshape(-1),
                np.arange(n_windows, dtype=np.int64) * planes[0].size, bound.pro, bound.prof,
                ids, ref)
    got = evaluate_program(prog, planes=planes, feature_ids=ids)
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))


@settings(max_examples=50)
@given(n=st.integers(0, 6000), n_records=st.integers(1, 400_000), seed=st.integers(0, 2**31))
def test_visit_order_is_a_stable_ascending_permutation(n, n_records, seed):
    from vjboost.features.program import _visit_order

    rows = np.random.default_rng(seed).integers(0, n_records, n).astype(np.int64)
    order = _visit_order(rows, n_records)
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    if n >= 2048:  # below that the records fit in cache and are visited as given
        np.testing.assert_array_equal(order, np.argsort(rows, kind="stable"))


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_split_planes_keep_the_callers_thread_count(rng, monkeypatch, thread_counts):
    # a large image's planes are split between threads, but never more than the caller set
    # (a detector or trainer with threads=1 stays on one thread)
    from vjboost._threads import n_threads
    from vjboost.features import channels

    monkeypatch.setattr(channels, "_SPLIT_PIXELS", 100)
    monkeypatch.setattr(channels, "_small", lambda images, n_planes: False)
    seen = thread_counts(channels, "_integrate_gradient")
    img = rng.integers(0, 256, (40, 57), dtype=np.uint8)
    cs = ChannelSet(["orient(5,s)#3", "gradmag"])
    with n_threads(1):
        one = cs.image(img)
    with n_threads(2):
        two = cs.image(img)
    assert seen == [1, 2]
    np.testing.assert_array_equal(one, two)
