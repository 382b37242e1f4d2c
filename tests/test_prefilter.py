"""The row pass (cascade/prefilter.py) against the window-by-window kernel and against a
brute-force replay of OpenCV's scan (every grid window evaluated alone, then the skip rule)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vjboost.boost.tree import Tree
from vjboost.cascade import kernels, prefilter, runner
from vjboost.cascade.model import CascadeModel, Stage
from vjboost.cascade.runner import CascadeRunner, _opencv_skip, sigma_gate
from vjboost.cascade.scan import Pyramid
from vjboost.cascade.synthetic import random_cascade, random_tree_layout
from vjboost.features import ChannelFamily, FeaturePool, HaarFamily
from vjboost.features.program import NORM_GRADIENT, NORM_NONE, NORM_VARIANCE, OPS_RECTS


def _image(seed: int, shape=(70, 90)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, size=shape).astype(np.uint8)
    h, w = shape
    img[:h // 3, :w // 3] = 128  # a flat patch: the σ gate refuses its windows
    img[h - h // 3:, w - w // 3:] = rng.integers(122, 134, size=(h // 3, w // 3))  # low σ
    return img


_POOLS: dict = {}


def _pool(window):
    """Haar features and rectangle sums of gradient channels (magnitude and 6 orientations):
    records of the three norm kinds, with scales."""
    if window not in _POOLS:
        _POOLS[window] = FeaturePool([
            HaarFamily(window, mode="ALL"),
            ChannelFamily(window, orientations=6, stride=2, min_size=2)])
    return _POOLS[window]


def rects_cascade(seed: int, *, window=(14, 14), n_stages=3, balanced=True, max_nodes=2,
                  pass_rate=0.6, trees_per_stage=(2, 5)) -> CascadeModel:
    """A random cascade of trees of depth <= 2 over Haar features and gradient-channel
    rectangles (its program's operations: ``OPS_RECTS``). Split thresholds are quantiles of
    each feature's values on windows of a random image, so that both sides are taken."""
    rng = np.random.default_rng(seed)
    pool = _pool(window)
    h, w = window
    img = _image(seed + 1, shape=(60, 60))
    ys, xs = rng.integers(0, 60 - h, 256), rng.integers(0, 60 - w, 256)
    wins = np.stack([img[y:y + h, x:x + w] for y, x in zip(ys, xs, strict=True)])
    n_haar = pool.family_sizes()[0]
    ids: list[int] = []
    stages = []
    for _ in range(n_stages):
        trees, total = [], 0.0
        for _ in range(int(rng.integers(trees_per_stage[0], trees_per_stage[1] + 1))):
            if balanced:
                n = 3
                left, right = random_tree_layout(3, rng)
                while int(left[0]) <= 0 or int(right[0]) <= 0:  # a root with two node children
                    left, right = random_tree_layout(3, rng)
            else:
                n = int(rng.integers(1, max_nodes + 1))
                left, right = random_tree_layout(n, rng) if n > 1 else (np.array([0]),
                                                                        np.array([-1]))
            # a Haar feature or a channel rectangle for each node, by a fair coin
            new = [int(rng.integers(0, n_haar)) if rng.random() < 0.5
                   else int(rng.integers(n_haar, pool.n_features)) for _ in range(n)]
            vals = pool.evaluate(pool.prepare(wins), new)
            thr = [float(np.quantile(v, rng.uniform(0.2, 0.8))) for v in vals]
            feat = list(range(len(ids), len(ids) + n))
            ids.extend(new)
            u = rng.uniform(0.2, 1.0, size=n + 1) * rng.choice([-1.0, 1.0], size=n + 1)
            total += float(np.abs(u).max())
            trees.append(Tree(feat, threshold=np.array(thr), left=left, right=right,
                              leaves=u))
        stages.append(Stage(trees, threshold=(1.0 - 2.0 * pass_rate) * total))
    return CascadeModel(window, stages=stages, family=pool, feature_ids=np.array(ids),
                        params={"stageParams": {"boostType": "GAB"}})


def test_rects_cascades_read_every_norm_kind():
    model = rects_cascade(0)
    cc = CascadeRunner(model).compiled
    assert cc.ops == OPS_RECTS and cc.shape == 2 and prefilter.suits(cc)
    norms = set(cc.program.norm.tolist())
    assert {NORM_VARIANCE, NORM_GRADIENT} <= norms <= {NORM_NONE, NORM_VARIANCE, NORM_GRADIENT}
    shallow = CascadeRunner(rects_cascade(1, balanced=False)).compiled
    assert shallow.ops == OPS_RECTS and shallow.shape == 3 and prefilter.suits(shallow)


def _scan(model, img, pyr, *, rows: bool | str, min_std, skip0, monkeypatch, first_stage=0):
    """``CascadeRunner.scan`` with the row pass (``rows="list"``: the list pass for every
    scan without the skip rule), or with the window-by-window kernel only; also how many
    times the pass ran."""
    runner = CascadeRunner(model, first_stage=first_stage, threads=1)
    calls = []
    if rows:
        name = "scan_list" if rows == "list" else "scan_rows"
        real = getattr(prefilter, name)

        def counted(*a, **k):
            calls.append(1)
            return real(*a, **k)

        monkeypatch.setattr(prefilter, name, counted)
        monkeypatch.setattr(prefilter, "LIST_ROW", 10**9 if rows == "list" else 0)
    else:
        monkeypatch.setattr(prefilter, "suits", lambda *a: False)
    try:
        pos, score = runner.scan(img, pyr, min_std=min_std, skip0=skip0)
    finally:
        monkeypatch.undo()
    return pos, score, len(calls)


GRIDS = {
    "opencv": {"mode": "opencv"},                       # step 2 below scale 2, skip rule
    "step1": {"mode": "clean", "step": 1},
    "step2-odd": {"mode": "clean", "step": 2, "offset": (1, 1)},
    "step3": {"mode": "clean", "step": 3},              # a strided row pass
    "unit": {"mode": "clean", "step": 5, "offset": (2, 1), "row_step": 5},  # one mining pass
}


@pytest.mark.parametrize("kind", ["HAAR", "RECTS"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("min_std", [None, 10.0])
@pytest.mark.parametrize("grid", list(GRIDS))
def test_rows_match_window_by_window(kind, seed, min_std, grid, monkeypatch):
    # seed 2: trees of one and two nodes (the kernel's shape 3); else three nodes
    shape = {"max_nodes": 2} if seed == 2 else {"balanced": True}
    if kind == "HAAR":
        model = random_cascade("HAAR", n_stages=4, pass_rate=0.6, tilted_fraction=0.3,
                               seed=seed, **shape)
    else:
        model = rects_cascade(seed, window=(20, 20), n_stages=4, **shape)
    assert prefilter.suits(CascadeRunner(model).compiled)
    img = _image(seed)
    pyr = Pyramid(model.window_shape, (img.shape[1], img.shape[0]), scale_factor=1.2,
                  **GRIDS[grid])
    for skip0 in (False, True):
        pos_r, sc_r, calls = _scan(model, img, pyr, rows=True, min_std=min_std, skip0=skip0,
                                   monkeypatch=monkeypatch)
        pos_w, sc_w, _ = _scan(model, img, pyr, rows=False, min_std=min_std, skip0=skip0,
                               monkeypatch=monkeypatch)
        assert calls > 0  # the row pass is the path tested
        assert len(pos_w) > 0  # some windows pass every stage
        np.testing.assert_array_equal(pos_r, pos_w)
        np.testing.assert_array_equal(sc_r, sc_w)
        if not skip0:  # the list pass (it has no skip rule)
            pos_l, sc_l, calls = _scan(model, img, pyr, rows="list", min_std=min_std,
                                       skip0=skip0, monkeypatch=monkeypatch)
            assert calls > 0
            np.testing.assert_array_equal(pos_l, pos_w)
            np.testing.assert_array_equal(sc_l, sc_w)


def test_one_stage_and_later_first_stage(monkeypatch):
    model = random_cascade("HAAR", n_stages=3, balanced=True, pass_rate=0.7, seed=5)
    img = _image(5)
    pyr = Pyramid(model.window_shape, (img.shape[1], img.shape[0]), scale_factor=1.2)
    for first in (0, 2):  # first=2: a runner of one stage
        pos_r, sc_r, calls = _scan(model, img, pyr, rows=True, min_std=10.0, skip0=True,
                                   first_stage=first, monkeypatch=monkeypatch)
        pos_w, sc_w, _ = _scan(model, img, pyr, rows=False, min_std=10.0, skip0=True,
                               first_stage=first, monkeypatch=monkeypatch)
        assert calls > 0 and len(pos_w) > 0
        np.testing.assert_array_equal(pos_r, pos_w)
        np.testing.assert_array_equal(sc_r, sc_w)


def _brute_force(model, img, pyr, min_std):
    """Accepted ``(level, x, y)`` and scores: every grid window cut out and run alone
    (:meth:`CascadeRunner.run`), its σ gate computed in NumPy, then OpenCV's rule replayed
    along each grid row (the position after a first-stage rejection is not evaluated)."""
    pos = pyr.positions(np.arange(pyr.n_windows))
    wins = pyr.windows(img, pos)
    n_passed, score = CascadeRunner(model, threads=1).run(wins)
    h, w = model.window_shape
    inner = wins[:, 1:h - 1, 1:w - 1].astype(np.float64)
    area = float((h - 2) * (w - 2))
    nf = area * (inner**2).sum(axis=(1, 2)) - inner.sum(axis=(1, 2)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(nf > 0, (1.0 / np.sqrt(nf)).astype(np.float32), np.float32(0))
    gate = sigma_gate(min_std)
    gated = ~((nf > 0) & (area * inv.astype(np.float64) < gate)) if gate < np.inf else \
        np.zeros(len(pos), bool)
    keep = np.zeros(len(pos), bool)
    start = 0
    for lv in pyr.levels:
        sl = slice(start, start + lv.n_windows)
        rejected0 = (~gated[sl] & (n_passed[sl] == 0)).reshape(lv.n_rows, lv.n_cols)
        visited = _opencv_skip(rejected0).ravel()
        keep[sl] = visited & ~gated[sl] & (n_passed[sl] == model.n_stages)
        start += lv.n_windows
    return pos[keep], score[keep]


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([1.1, 1.25]), st.sampled_from([None, 10.0]),
       st.sampled_from(["HAAR", "RECTS"]))
def test_opencv_grid_and_skip_match_brute_force(seed, scale_factor, min_std, kind):
    rng = np.random.default_rng(seed)
    shape = {"balanced": True} if seed % 2 else {"max_nodes": 2}
    if kind == "HAAR":
        model = random_cascade("HAAR", window=(12, 10), n_stages=3,
                               pass_rate=float(rng.uniform(0.4, 0.8)), tilted_fraction=0.3,
                               seed=seed, **shape)
    else:
        model = rects_cascade(seed % 1000, window=(10, 12), n_stages=3,
                              pass_rate=float(rng.uniform(0.4, 0.8)), **shape)
    img = _image(seed, shape=(int(rng.integers(20, 45)), int(rng.integers(20, 60))))
    pyr = Pyramid(model.window_shape, (img.shape[1], img.shape[0]), scale_factor=scale_factor)
    pos, score = CascadeRunner(model, threads=1).scan(img, pyr, min_std=min_std, skip0=True)
    ref_pos, ref_score = _brute_force(model, img, pyr, min_std)
    np.testing.assert_array_equal(pos, ref_pos)
    np.testing.assert_array_equal(score, ref_score)


@pytest.mark.parametrize("kind", ["HAAR", "RECTS"])
def test_a_runner_reusing_its_planes_scans_as_brute_force(kind, monkeypatch):
    # every buffer is the runner's own: scans of smaller images read a buffer that still
    # holds a larger image's planes beyond their own
    monkeypatch.setattr(runner, "_SHARED_BYTES", 0)
    monkeypatch.setattr(runner, "_SCRATCH", threading.local())
    if kind == "HAAR":
        model = random_cascade("HAAR", window=(12, 10), n_stages=3, pass_rate=0.7,
                               tilted_fraction=0.3, seed=5, balanced=True)
    else:
        model = rects_cascade(5, window=(10, 12), n_stages=3, pass_rate=0.7)
    kept = CascadeRunner(model, threads=1)
    held = []
    for seed, shape in enumerate([(60, 80), (30, 40), (70, 95), (25, 70)]):
        img = _image(seed, shape=shape)
        pyr = Pyramid(model.window_shape, (img.shape[1], img.shape[0]), scale_factor=1.1)
        pos, score = kept.scan(img, pyr, min_std=10.0, skip0=True)
        ref_pos, ref_score = _brute_force(model, img, pyr, 10.0)
        np.testing.assert_array_equal(pos, ref_pos)
        np.testing.assert_array_equal(score, ref_score)
        held.append(kept._scratch.planes)
    assert len(ref_pos) > 0
    # the first (largest) image's buffer served the smaller ones; a larger one replaced it
    assert held[1] is held[0] and held[2] is not held[0] and held[3] is held[2]


def _random_scan(seed: int, kind: str):
    """A random cascade of trees of depth <= 2 (``kind``: HAAR or RECTS records; odd seeds
    balanced trees, even ones of one and two nodes), its compiled stages and the integral
    planes of a random 80x60 image. A draw whose trees are all stumps (the passes do not run
    such cascades: :func:`prefilter.suits`) is left out."""
    shape = {"balanced": True} if seed % 2 else {"max_nodes": 2}
    if kind == "HAAR":
        model = random_cascade("HAAR", n_stages=3, pass_rate=0.6, tilted_fraction=0.3,
                               seed=seed, **shape)
    else:
        model = rects_cascade(seed % 1000, window=(20, 20), **shape)
    cc = CascadeRunner(model).compiled
    assume(prefilter.suits(cc))
    return model, cc, cc.program.channels.image(_image(seed, shape=(60, 80)))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.booleans(), st.sampled_from([0.0, 0.5, 2.0]),
       st.sampled_from(["HAAR", "RECTS"]))
def test_scan_rows_on_mixed_rows_equals_the_kernel(seed, skip0, sparse0, kind):
    # items of every length (1 window .. a whole row) anywhere in the planes of one image; the
    # first stage over the list of open windows below a share sparse0 of them (2: always)
    rng = np.random.default_rng(seed)
    model, cc, planes = _random_scan(seed, kind)
    _, rows, cols = planes.shape
    h, w = model.window_shape
    n = int(rng.integers(1, 12))
    y = rng.integers(0, rows - h, n)
    x0 = rng.integers(0, cols - w, n)
    nx = np.minimum(rng.integers(1, 40, n), cols - w - x0)
    step = rng.choice([1, 1, 2, 5], n)  # strided rows too (a mining pass: step 5)
    nw = (nx + step - 1) // step
    items = np.stack([y * cols + x0, nx, step, np.concatenate([[0], np.cumsum(nw)[:-1]])],
                     axis=1).astype(np.int64)
    buf = planes.reshape(-1)
    gate = sigma_gate(10.0)
    passed, ref = kernels.scan(cc, buf, items, row_stride=cols, plane_stride=rows * cols,
                               n_out=int(nw.sum()), gate=gate, skip0=skip0)
    bound = cc.bind(cols, rows * cols)
    slot, score = np.empty(int(nw.sum()), np.int64), np.empty(int(nw.sum()))
    k = prefilter.scan_rows(buf, items, bound.tab, bound.tabf, bound.pro, bound.prof, gate,
                            skip0, cc.stage_first, cc.stage_thr, cc.stage_carry,
                            cc.tree_node0, cc.leaves, sparse0, slot, score, ops=cc.ops)
    hits = np.flatnonzero(passed == cc.n_stages)
    np.testing.assert_array_equal(slot[:k], hits)
    np.testing.assert_array_equal(score[:k], ref[hits])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([1, 7, 512]), st.sampled_from(["HAAR", "RECTS"]))
def test_scan_list_equals_the_kernel(seed, block, kind):
    # scattered windows in any order (repeats too), in blocks of 1 .. all of them
    rng = np.random.default_rng(seed)
    model, cc, planes = _random_scan(seed, kind)
    _, rows, cols = planes.shape
    h, w = model.window_shape
    n = int(rng.integers(1, 300))
    pos = rng.integers(0, rows - h, n) * cols + rng.integers(0, cols - w, n)
    items = np.stack([pos, np.ones(n, np.int64), np.ones(n, np.int64), np.arange(n)], axis=1)
    buf = planes.reshape(-1)
    gate = sigma_gate(10.0)
    passed, ref = kernels.scan(cc, buf, items, row_stride=cols, plane_stride=rows * cols,
                               n_out=n, gate=gate, skip0=False)
    bound = cc.bind(cols, rows * cols)
    slot, score = np.empty(n, np.int64), np.empty(n)
    k = prefilter.scan_list(buf, pos, bound.tab, bound.tabf, bound.pro, bound.prof, gate,
                            cc.stage_first, cc.stage_thr, cc.stage_carry, cc.tree_node0,
                            cc.leaves, block, slot, score, ops=cc.ops)
    hits = np.flatnonzero(passed == cc.n_stages)
    np.testing.assert_array_equal(slot[:k], hits)
    np.testing.assert_array_equal(score[:k], ref[hits])


def test_scan_list_checks_its_arguments():
    cc = CascadeRunner(random_cascade("HAAR", n_stages=2, balanced=True, seed=3)).compiled
    bound = cc.bind(30, 900)
    args = (np.zeros(900, np.int32), np.zeros(1, np.int64), bound.tab, bound.tabf, bound.pro,
            bound.prof, np.inf, cc.stage_first, cc.stage_thr, cc.stage_carry, cc.tree_node0,
            cc.leaves)
    out = (np.empty(1, np.int64), np.empty(1))
    with pytest.raises(ValueError, match="block"):
        prefilter.scan_list(*args, 0, *out, ops=cc.ops)
    with pytest.raises(ValueError, match="ops"):
        prefilter.scan_list(*args, 512, *out, ops=-1)
    # a cascade of stumps keeps two leaves a tree: the passes (four, unchecked reads) refuse it
    stumps = CascadeRunner(random_cascade("HAAR", n_stages=2, max_nodes=1, seed=3)).compiled
    assert not prefilter.suits(stumps)
    bad = (*args[:10], stumps.tree_node0, stumps.leaves)
    with pytest.raises(ValueError, match="four leaves per tree"):
        prefilter.scan_list(*bad, 512, *out, ops=stumps.ops)
    with pytest.raises(ValueError, match="four leaves per tree"):
        prefilter.scan_rows(bad[0], np.zeros((1, 4), np.int64), *bad[2:6], np.inf, False,
                            *bad[7:], 0.5, *out, ops=stumps.ops)


def test_applies_only_to_depth2_haar_and_rects_rows():
    model = random_cascade("HAAR", n_stages=2, balanced=True, seed=3)
    cc = CascadeRunner(model, threads=1).compiled
    rows = np.array([[0, 5, 1, 0]], dtype=np.int64)
    assert prefilter.suits(cc) and prefilter.applies(cc, rows)
    assert prefilter.applies(cc, np.array([[0, 5, 2, 0]], dtype=np.int64))  # strided rows
    stumps = CascadeRunner(random_cascade("HAAR", n_stages=2, seed=3), threads=1).compiled
    assert not prefilter.suits(stumps)
    shallow = CascadeRunner(random_cascade("HAAR", max_nodes=2, n_stages=2, seed=3)).compiled
    assert shallow.shape == 3 and prefilter.suits(shallow)  # trees of one and two nodes
    deep = CascadeRunner(random_cascade("HAAR", max_nodes=4, n_stages=3, seed=1)).compiled
    assert deep.shape == 0 and not prefilter.suits(deep)
    lbp = CascadeRunner(random_cascade("LBP", n_stages=2, balanced=True, seed=3)).compiled
    assert not prefilter.suits(lbp)


def test_training_mines_the_same_negatives_with_and_without_the_row_pass(
        faces12, backgrounds, monkeypatch):
    # one-pass mining units (every fifth column of every fifth row) go through the strided row
    # pass; training must mine the same windows and end with the same cascade as window by
    # window
    from vjboost.cascade import negatives
    from vjboost.cascade.trainer import CascadeTrainer, stages_digest

    kw = dict(window_shape=(12, 12), features="haar", weak_learner="tree", max_depth=2,
              num_stages=3, num_pos=100, num_neg=200, min_hit_rate=0.99, seed=4,
              max_weak_count=5, mining={"scale_factor": 1.3, "batch": 4})
    steps = []
    real = prefilter.scan_rows

    def counted(buf, items, *a, **k):
        steps.extend(np.unique(items[:, 2]).tolist())
        return real(buf, items, *a, **k)

    mined: list[list] = []
    scan_unit = negatives.scan_unit

    def recorded(*a, **k):
        u = scan_unit(*a, **k)
        mined[-1].append((u.n_scanned, u.n_accepted, u.windows.tobytes()))
        return u

    monkeypatch.setattr(prefilter, "scan_rows", counted)
    monkeypatch.setattr(negatives, "scan_unit", recorded)
    mined.append([])
    rows = CascadeTrainer(**kw).fit(faces12, backgrounds)
    monkeypatch.setattr(prefilter, "applies", lambda *a: False)
    mined.append([])
    window = CascadeTrainer(**kw).fit(faces12, backgrounds)
    # unit by unit the same windows (units may run on threads, in any order)
    assert len(mined[-1]) > 0 and sorted(mined[-1]) == sorted(mined[-2])
    assert 3 in steps  # the mining grid step (a quarter of the window side): strided rows
    assert len(rows.stages_) >= 2
    assert [(m["n_scanned"], m["n_accepted"]) for m in rows.mining_] == \
        [(m["n_scanned"], m["n_accepted"]) for m in window.mining_]
    assert stages_digest(rows.stages_) == stages_digest(window.stages_)


def test_trained_haar_and_channels_cascade_detects_the_same_with_and_without_the_row_pass(
        faces12, backgrounds, monkeypatch):
    # a small cascade trained over Haar features and gradient-channel rectangles (OPS_RECTS,
    # depth-2 trees, records of both normalisations): the detector's raw windows and grouped
    # detections are the window-by-window kernel's, on OpenCV's grid (step 2 below scale 2)
    import cv2

    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.trainer import CascadeTrainer

    trainer = CascadeTrainer(window_shape=(12, 12), features="haar,channels",
                             weak_learner="tree", max_depth=2, num_stages=3, num_pos=100,
                             num_neg=200, min_hit_rate=0.99, seed=3, max_weak_count=5,
                             mining={"scale_factor": 1.3, "batch": 4}).fit(faces12, backgrounds)
    model = trainer.model_
    cc = CascadeRunner(model).compiled
    assert cc.ops == OPS_RECTS and prefilter.suits(cc)
    assert NORM_GRADIENT in set(cc.program.norm.tolist())
    det = CascadeDetector(model, scale_factor=1.15, min_neighbors=1, threads=1)
    img = cv2.imread(backgrounds[0], cv2.IMREAD_GRAYSCALE)
    calls = []
    real = prefilter.scan_rows

    def counted(*a, **k):
        calls.append(k.get("ops"))
        return real(*a, **k)

    monkeypatch.setattr(prefilter, "scan_rows", counted)
    boxes_r, scores_r = det.raw_windows(img)
    found_r = det.detect(img)
    assert calls and set(calls) == {OPS_RECTS}  # the row pass is the path tested
    monkeypatch.setattr(prefilter, "suits", lambda *a: False)
    boxes_w, scores_w = det.raw_windows(img)
    found_w = det.detect(img)
    assert len(boxes_w) > 0
    np.testing.assert_array_equal(boxes_r, boxes_w)
    np.testing.assert_array_equal(scores_r, scores_w)
    np.testing.assert_array_equal(found_r.boxes, found_w.boxes)


@given(st.integers(30, 400), st.integers(30, 400), st.sampled_from([(20, 20), (24, 16)]),
       st.sampled_from([1.1, 1.25]), st.integers(20_000, 400_000), st.integers(1, 10),
       st.sampled_from([0, 1]), st.sampled_from(["opencv", "clean", "grid"]),
       st.integers(0, 4), st.integers(0, 4), st.integers(1, 5))
@settings(max_examples=80, deadline=None)
def test_bands_cover_each_window_once(w, h, window, sf, budget, n_planes, context, mode, x0,
                                      y0, row_step):
    # levels larger than a batch are cut into bands of rows: each window of a level is owned
    # by exactly one band, every band holds the image rows of all its windows (its context
    # rows too), and with context the coarse grid's rows stay every second row of the level
    # ("grid": hard-negative mining's grid offsets and row steps)
    kw = ({"mode": "clean", "offset": (x0, y0), "row_step": row_step} if mode == "grid"
          else {"mode": mode})
    pyr = Pyramid(window, (w, h), scale_factor=sf, **kw)
    owned: dict[int, list] = {}
    for b in pyr.batches(n_planes, budget, context=context):
        for k, lv in enumerate(b.levels):
            whole = pyr.level(lv.index)
            a, e = b.held[k]
            ys = np.arange(lv.y0, lv.ny, lv.row_step)
            assert a <= ys[0] and ys[-1] + window[0] <= e <= whole.height
            own = lv.ny if lv.own_ny is None else lv.own_ny
            if lv.own_ny is not None:
                assert len(ys[ys >= own]) == context
                assert ((lv.y0 - whole.y0) // whole.row_step) % 2 == 0 or not context
            owned.setdefault(lv.index, []).extend(ys[ys < own].tolist())
            # the planes of a band start at its first held row: level row y at origin + y
            assert b.origins[k, 0] + a >= 0 and b.origins[k, 0] + e + 1 <= b.rows
    for lv in pyr.levels:
        assert sorted(owned[lv.index]) == list(range(lv.y0, lv.ny, lv.row_step))


def test_large_levels_are_cut_into_bands():
    pyr = Pyramid((20, 20), (400, 400), scale_factor=1.1)
    for context in (0, 1):
        batches = pyr.batches(10, 50_000, context=context)
        bands = [lv for b in batches for lv in b.levels if lv is not pyr.level(lv.index)]
        assert len(bands) > 10
        assert sum(lv.own_ny is not None for lv in bands) > 5
        # a band's planes: about the budget (at least four window heights of rows)
        first = [b for b in batches if b.levels[0].index == pyr.levels[0].index]
        assert len(first) > 3
        assert all(b.rows <= 4 * 20 + 2 + 2 for b in first)


# One tree of three nodes over random rectangles, every node gradient-normalised with a scale,
# run by the dense tree pass of each kind named in argv[1], in that order, each called from a
# cached kernel of this module; prints the scores. A Haar pass ignores the norm kind and the
# scale, so the two kinds' scores differ.
_TREE_PASS_RUN = """
import json, sys
import numpy as np
from numba import njit
from vjboost.cascade import prefilter
from vjboost.features.program import _NORM, _SCALE, _THR_R, _W, NORM_GRADIENT, REC

@njit(cache=True)
def call_haar(buf, xs, m, iv, ig, score, tab, tabf, tree_node0, leaves):
    prefilter._tree_dense(buf, 0, xs, m, iv, ig, score, tab, tabf, tree_node0, leaves, 0)

@njit(cache=True)
def call_rects(buf, xs, m, iv, ig, score, tab, tabf, tree_node0, leaves):
    prefilter._tree_dense_r(buf, 0, xs, m, iv, ig, score, tab, tabf, tree_node0, leaves, 0)

if __name__ == "__main__":
    rng = np.random.default_rng(7)
    tab = np.zeros(3 * REC, np.int32)
    tabf = tab.view(np.float32)
    for n in range(3):
        o = n * REC
        tab[o:o + 12] = rng.integers(0, 30, 12)
        tabf[o + _W:o + _W + 3] = rng.normal(size=3)
        tabf[o + _THR_R] = rng.normal() * 20.0
        tab[o + _NORM] = NORM_GRADIENT
        tabf[o + _SCALE] = 0.37
    buf = rng.integers(0, 500, 400).astype(np.int32)
    m = 200
    iv = rng.uniform(0.5, 2.0, m).astype(np.float32)
    ig = rng.uniform(0.01, 0.1, m).astype(np.float32)
    xs = np.zeros(m, np.int64)
    tree_node0 = np.array([0, 3], np.int64)
    leaves = np.array([1.0, 2.0, 3.0, 4.0])
    out = {}
    for kind in sys.argv[1].split(","):
        score = np.zeros(m)
        (call_haar if kind == "haar" else call_rects)(buf, xs, m, iv, ig, score, tab, tabf,
                                                      tree_node0, leaves)
        out[kind] = score.tolist()
    print(json.dumps(out))
"""


@pytest.mark.slow
def test_variants_cached_by_two_processes_keep_their_own_code(tmp_path):
    # numba names a kernel's machine code after its qualified name and a counter of the
    # process that compiled it, and a cached caller carries its callees' code under those
    # names: two variants of one factory, each compiled first thing by its own process, would
    # carry one name, and a process loading both callers from the cache would run the first
    # variant's code for both (vjboost._jit.variant names them apart)
    script = tmp_path / "tree_pass_run.py"
    script.write_text(_TREE_PASS_RUN)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(kinds: str) -> dict:
        done = subprocess.run([sys.executable, str(script), kinds], env=env,
                              capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    alone = {**run("haar"), **run("rects")}  # each compiled, then cached, by its own process
    assert alone["haar"] != alone["rects"]
    assert run("haar,rects") == alone  # both loaded from the cache by one process
    assert run("rects,haar") == alone
