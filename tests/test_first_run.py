"""What the fast first detection relies on: the one-pass grey integrals equal the parallel
kernel's and OpenCV's (also with the even and odd columns stored apart), the
cascade kernel split between threads gives the same result for any thread count, the small
groupings done in NumPy equal the compiled ones, a Haar model builds only the features it reads,
and a warm process loads its kernel without numba's compiler registries."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjboost.features.channels import (
    ChannelSet,
    _by_code,
    _gray_scratch,
    _integrate_gray,
    _integrate_gray_images,
)


def _layout(shapes, n_codes, pad=3):
    """Bases of every (image, code) plane in one flat buffer of rows of ``stride`` entries."""
    stride = max(w for _, w in shapes) + 1 + pad
    rows, bases = 0, np.zeros((len(shapes), n_codes), dtype=np.int64)
    for i, (h, _) in enumerate(shapes):
        for j in range(n_codes):
            bases[i, j] = rows * stride + 1
            rows += h + 1 + 1
    return stride, rows * stride, bases


@given(st.integers(1, 3), st.integers(1, 40), st.integers(1, 40),
       st.sampled_from([(0,), (0, 1), (0, 1, 2), (2,), (1, 2)]), st.integers(0, 2**32 - 1))
def test_one_pass_integrals_equal_the_parallel_kernel(n, h, w, codes, seed):
    rng = np.random.default_rng(seed)
    gray = rng.integers(0, 256, (n, h, w), dtype=np.uint8)
    if seed % 3 == 0:
        gray[:] = 255  # large sums
    stride, size, bases = _layout([(h, w)] * n, len(codes))
    a = np.full(size, -7, dtype=np.int32)
    b = a.copy()
    _integrate_gray_images(gray, codes, a, bases, stride)
    _integrate_gray(gray, b, _by_code(codes, bases, n), stride, _gray_scratch(n, w))
    np.testing.assert_array_equal(a, b)
    # one chunk: every image after the first reuses a scratch the one before left full
    c = np.full(size, -7, dtype=np.int32)
    _integrate_gray(gray, c, _by_code(codes, bases, n), stride,
                    np.full((1, 6, w + 1), 12345, np.int64))
    np.testing.assert_array_equal(a, c)


def _opencv_planes(gray: np.ndarray) -> np.ndarray:
    """cv2.integral3's sum, squared sum and tilted sum, wrapped to int32 as the kernels wrap."""
    import cv2

    planes = cv2.integral3(gray, sdepth=cv2.CV_64F, sqdepth=cv2.CV_64F)
    return np.stack([p.astype(np.int64).astype(np.uint32).view(np.int32) for p in planes])


def test_one_pass_integrals_wrap_large_squared_sums_as_opencv():
    # 255² · 220 · 230 > 2**31: squared sums wrap modulo 2**32 as the int32 kernels wrap
    gray = np.full((1, 220, 230), 255, dtype=np.uint8)
    gray[0, ::7] = np.arange(230, dtype=np.uint8)
    stride, size, bases = _layout([(220, 230)], 3)
    a = np.full(size, -7, dtype=np.int32)
    _integrate_gray_images(gray, (0, 1, 2), a, bases, stride)
    ref = _opencv_planes(gray[0])
    for j in range(3):
        got = a[bases[0, j]:bases[0, j] + 221 * stride].reshape(221, stride)[:, :231]
        np.testing.assert_array_equal(got, ref[j])


@given(st.integers(1, 30), st.integers(1, 30), st.integers(0, 5), st.integers(0, 4),
       st.integers(0, 2**32 - 1))
def test_split_columns_hold_the_opencv_planes(h, w, x0, y0, seed):
    # even columns first, odd ones from entry `split` on: column c at (c % 2) * split + c // 2
    gray = np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8)
    cols = x0 + w + 1 + seed % 2
    split = (cols + 1) // 2
    out = np.full((3, y0 + h + 2, 2 * split), -7, dtype=np.int32)
    ChannelSet(["gray", "gray2", "tilted"]).fill(gray, out, y0, x0, split=split)
    c = x0 + np.arange(w + 1)
    got = out[:, y0:y0 + h + 1, (c % 2) * split + c // 2]
    np.testing.assert_array_equal(got, _opencv_planes(gray))


def test_split_columns_only_for_grey_planes():
    out = np.zeros((2, 6, 8), dtype=np.int32)
    with pytest.raises(ValueError, match="split"):
        ChannelSet(["gray", "gradmag"]).fill(np.zeros((4, 4), np.uint8), out, split=4)
    with pytest.raises(ValueError, match="split"):
        ChannelSet(["gray"]).fill(np.zeros((4, 4), np.uint8), out[:1], split=3)


@pytest.mark.parametrize("model", ["vjboost:frontalface", "vjboost:car_side"])
def test_threads_do_not_change_the_raw_windows(model):
    from skimage import data

    import vjboost

    m = vjboost.load_model(model)
    img = data.astronaut()[..., 1]
    # the car cascade accepts no window of this photograph: its first stages do
    kw = {"n_stages": 4} if model == "vjboost:car_side" else {}
    runs = [vjboost.CascadeDetector(m, min_neighbors=0, threads=t, **kw).detect(img)
            for t in (1, 2)]
    assert len(runs[0]) > 0
    np.testing.assert_array_equal(runs[0].boxes, runs[1].boxes)
    np.testing.assert_array_equal(runs[0].scores, runs[1].scores)


@given(st.integers(1, 300), st.floats(0.0, 0.5), st.integers(0, 2**32 - 1))
def test_small_groupings_in_numpy_equal_the_grid_search(n, eps, seed):
    from vjboost.boxes import _classes_all_pairs, _keep_classes, _select

    rng = np.random.default_rng(seed)
    size = rng.integers(20, 40, n)
    r = np.stack([rng.integers(0, 60, n), rng.integers(0, 60, n), size, size], axis=1)
    labels, k = _classes_all_pairs(r.astype(np.int64), eps)
    # OpenCV numbers classes in order of first appearance
    first = [int(np.flatnonzero(labels == c)[0]) for c in range(k)]
    assert first == sorted(first)
    # two rectangles in one class <=> connected by similar pairs (brute force)
    x, y, w, h = r.T
    delta = eps * (np.minimum.outer(w, w) + np.minimum.outer(h, h)) * 0.5
    adj = ((np.abs(np.subtract.outer(x, x)) <= delta) & (np.abs(np.subtract.outer(y, y)) <= delta)
           & (np.abs(np.subtract.outer(x + w, x + w)) <= delta)
           & (np.abs(np.subtract.outer(y + h, y + h)) <= delta))
    reach = adj.copy()
    for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):
        reach = reach | ((reach.astype(np.int32) @ reach.astype(np.int32)) > 0)
    np.testing.assert_array_equal(reach, labels[:, None] == labels[None, :])
    # the class filter: NumPy (few classes) and the compiled grid search agree
    avg = rng.integers(0, 100, (k, 4)).astype(np.int64)
    avg[:, 2:] = rng.integers(5, 40, (k, 2))
    cnt = rng.integers(1, 8, k).astype(np.int64)
    for thr in (0, 1, 3):
        np.testing.assert_array_equal(_keep_classes(avg, cnt, thr, eps),
                                      _select(avg, cnt, thr, eps))


@pytest.mark.parametrize("family", ["haar", "mblbp", "pool"])
def test_model_program_equals_the_whole_pools_rows(family):
    """The program a model of a large pool runs, built from its features' rows only, is the
    whole pool's program restricted to them, and the families' kinds are those of the whole
    program (a Haar family builds no table for it, a pool no union of whole programs)."""
    import dataclasses

    from vjboost.features.acf import ChannelFamily
    from vjboost.features.haar import HaarFamily
    from vjboost.features.mblbp import MBLBPFamily
    from vjboost.features.pool import FeaturePool

    def make():
        if family == "haar":
            return HaarFamily((20, 20), mode="ALL")
        if family == "mblbp":
            return MBLBPFamily((20, 50))
        return FeaturePool([HaarFamily((20, 20), mode="ALL"), MBLBPFamily((20, 20)),
                            ChannelFamily((20, 20))])

    ids = np.random.default_rng(5).choice(make().n_features, 300, replace=False)
    lazy = make()
    part = lazy.program(ids)
    if family == "pool":
        assert lazy._union is None and lazy.families[0]._table is None
    else:
        assert "_program_cache" not in vars(lazy)
    if family == "haar":
        assert lazy._table is None
    whole = make()
    full = whole.program()
    want = whole.program(ids) if family == "pool" else full.take(ids).compact()
    np.testing.assert_array_equal(lazy.kinds(), full.categorical)
    assert part.channels == want.channels
    for f in dataclasses.fields(want):
        if f.name == "_checked":  # how each was built (checked rows, or taken from checked ones)
            continue
        a, b = getattr(part, f.name), getattr(want, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f.name


_WARM_RUN = """
import json, sys
import numpy as np
from skimage import data
import vjboost
det = vjboost.CascadeDetector(vjboost.load_model("vjboost:frontalface_haar"))
found = det.detect(data.astronaut()[..., 1])
light = "numba.np.random.generator_methods" not in sys.modules
import numba
@numba.njit
def later(n):  # compiled after the light load: needs the registries it skipped
    return len(str(n)) + len([i * 2 for i in range(n)])
print(json.dumps({"boxes": found.boxes.tolist(), "light": light, "later": later(12)}))
"""


@pytest.mark.slow
def test_warm_process_loads_the_kernel_without_the_compiler_registries():
    """Two processes on one cache: the second loads the detection kernel without numba's
    typing and lowering registries, finds the same faces as this process, and still compiles
    new code afterwards."""
    from skimage import data

    import vjboost

    want = vjboost.CascadeDetector(vjboost.load_model("vjboost:frontalface_haar")).detect(
        data.astronaut()[..., 1])
    runs = [json.loads(subprocess.run([sys.executable, "-c", _WARM_RUN], env=dict(os.environ),
                                      capture_output=True, text=True, check=True).stdout)
            for _ in range(2)]
    assert len(want) >= 1
    for run in runs:
        assert run["boxes"] == want.boxes.tolist() and run["later"] == 2 + 12
    assert runs[1]["light"]  # the first run may have compiled (a cold cache); this one loaded


def test_light_load_falls_back_to_numbas_own_load():
    from vjboost._jit import _light_load

    refreshed: list[str] = []

    class Context:
        def refresh(self) -> None:
            refreshed.append("full")

    def real(cache, sig, ctx):
        ctx.refresh()
        if not refreshed:
            raise LookupError("a registry the light load skipped")
        return "loaded"

    class Cache:
        def __init__(self, module):
            self._py_func = type("F", (), {"__module__": module})

    ctx = Context()
    assert _light_load(Cache("vjboost.cascade.kernels"), (), ctx, real=real) == "loaded"
    assert refreshed == ["full"] and "refresh" not in vars(ctx)
    refreshed.clear()
    assert _light_load(Cache("elsewhere"), (), ctx, real=real) == "loaded"  # numba's own
    assert refreshed == ["full"]
