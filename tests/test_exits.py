"""Early exits inside stages (cascade/exits.py, Stage.exits): the kernels against a per-window
brute force, the row pass against the window-by-window kernel, the setting of the exits, the
file format and the OpenCV export."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost._errors import InputError
from vjboost.boost.tree import Tree
from vjboost.cascade import prefilter
from vjboost.cascade.exits import early_exits
from vjboost.cascade.model import CascadeModel, ModelError, Stage
from vjboost.cascade.model_io import load_model, model_from_dict, model_to_dict, save_model
from vjboost.cascade.opencv_xml import ExportError, to_opencv_xml
from vjboost.cascade.runner import CascadeRunner
from vjboost.cascade.scan import Pyramid
from vjboost.cascade.synthetic import random_cascade


def _windows(seed: int, n: int, shape) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, *shape), dtype=np.uint8)


def random_exits(model: CascadeModel, seed: int, *, share: float = 0.5) -> CascadeModel:
    """``model`` with exits after a random ``share`` of its trees, each at a random quantile
    (5 %..40 %) of the partial sums random windows reach there, so that they bite."""
    rng = np.random.default_rng(seed)
    runner = CascadeRunner(model)
    wins = _windows(seed, 300, model.window_shape)
    ch = runner.prepare(wins)
    stages = []
    for k, s in enumerate(model.stages):
        part = np.cumsum(runner.tree_outputs(ch, k, np.arange(len(wins))), axis=0)
        exits = np.full(len(s.trees), -np.inf)
        for i in range(len(s.trees)):
            if rng.random() < share:
                exits[i] = np.quantile(part[i], rng.uniform(0.05, 0.4))
        stages.append(Stage(s.trees, threshold=s.threshold, exits=exits))
    return model.with_stages(stages)


def brute_force(model: CascadeModel, windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stages passed and score of each window, one window and one tree at a time: the tree
    outputs from the family's own evaluation, the exits and thresholds checked in Python."""
    runner = CascadeRunner(model)
    ch = runner.prepare(windows)
    outs = [runner.tree_outputs(ch, k, np.arange(len(windows))) for k in range(model.n_stages)]
    n_passed = np.full(len(windows), model.n_stages)
    score = np.zeros(len(windows))
    for j in range(len(windows)):
        for k, s in enumerate(model.stages):
            v, left = 0.0, False
            for i in range(len(s.trees)):
                v += outs[k][i, j]
                if s.exits is not None and v < float(s.exits[i]):
                    left = True
                    break
            score[j] = v
            if left or v < float(s.reject_threshold):
                n_passed[j] = k
                break
    return n_passed, score


def _cascade(kind: str, seed: int) -> CascadeModel:
    if kind == "LBP":
        return random_cascade("LBP", n_stages=3, trees_per_stage=(3, 6), balanced=True,
                              pass_rate=0.7, seed=seed)
    shape = {"balanced": True} if seed % 2 else {"max_nodes": 3}
    return random_cascade("HAAR", n_stages=3, trees_per_stage=(3, 6), pass_rate=0.7,
                          tilted_fraction=0.3, seed=seed, **shape)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["HAAR", "LBP"]))
def test_kernel_with_exits_matches_brute_force(seed, kind):
    model = random_exits(_cascade(kind, seed % 1000), seed)
    wins = _windows(seed + 1, 200, model.window_shape)
    n_passed, score = CascadeRunner(model, threads=1).run(wins)
    ref_passed, ref_score = brute_force(model, wins)
    np.testing.assert_array_equal(n_passed, ref_passed)
    np.testing.assert_array_equal(score, ref_score)


def test_exits_only_remove_windows_and_leave_the_others_unchanged():
    base = _cascade("HAAR", 1)
    model = random_exits(base, 1)
    assert model.n_exits > 0
    wins = _windows(3, 500, base.window_shape)
    n0, s0 = CascadeRunner(base).run(wins)
    n1, s1 = CascadeRunner(model).run(wins)
    assert (n1 <= n0).all() and (n1 < n0).any()
    kept = n1 == model.n_stages
    np.testing.assert_array_equal(s1[kept], s0[kept])  # the last stage's full score


def _image(seed: int, shape=(60, 80)) -> np.ndarray:
    img = np.random.default_rng(seed).integers(0, 256, size=shape).astype(np.uint8)
    img[: shape[0] // 3, : shape[1] // 3] = 128  # refused by the σ gate
    return img


def _scan(model, img, pyr, *, rows: bool, generic: bool = False, skip0: bool,
          monkeypatch) -> tuple[np.ndarray, np.ndarray]:
    runner = CascadeRunner(model, threads=1)
    if generic:
        runner.compiled = None  # the family's own evaluation, stage by stage
    if not rows:
        monkeypatch.setattr(prefilter, "suits", lambda *a: False)
    try:
        return runner.scan(img, pyr, min_std=10.0, skip0=skip0)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("mode", ["opencv", "clean"])
def test_row_pass_window_kernel_and_generic_path_agree_with_exits(seed, mode, monkeypatch):
    base = random_cascade("HAAR", n_stages=4, trees_per_stage=(3, 7), balanced=True,
                          pass_rate=0.7, tilted_fraction=0.3, seed=seed)
    # seed 3: an exit after every tree (segments of one tree, the first stage's too)
    model = random_exits(base, seed, share=1.0 if seed == 3 else 0.5)
    assert prefilter.suits(CascadeRunner(model).compiled)
    img = _image(seed)
    pyr = Pyramid(model.window_shape, (img.shape[1], img.shape[0]), scale_factor=1.15,
                  mode=mode)
    for skip0 in (False, True):
        pos_r, sc_r = _scan(model, img, pyr, rows=True, skip0=skip0, monkeypatch=monkeypatch)
        pos_w, sc_w = _scan(model, img, pyr, rows=False, skip0=skip0, monkeypatch=monkeypatch)
        pos_g, sc_g = _scan(model, img, pyr, rows=False, generic=True, skip0=skip0,
                            monkeypatch=monkeypatch)
        assert len(pos_w) > 0
        np.testing.assert_array_equal(pos_r, pos_w)
        np.testing.assert_array_equal(sc_r, sc_w)
        np.testing.assert_array_equal(pos_g, pos_w)
        np.testing.assert_array_equal(sc_g, sc_w)
    # without the skip rule every window is evaluated: the scan is the brute force of the cut
    # windows
    pos, _ = _scan(model, img, pyr, rows=True, skip0=False, monkeypatch=monkeypatch)
    every = pyr.positions(np.arange(pyr.n_windows))
    wins = pyr.windows(img, every)
    ref_passed, _ = brute_force(model, wins)
    inner = wins[:, 1:-1, 1:-1].astype(np.float64)
    open_ = inner.std(axis=(1, 2)) > 10.5  # clear of the σ gate's edge
    got = {tuple(p) for p in pos.tolist()}
    for p, n, o in zip(every.tolist(), ref_passed, open_, strict=True):
        if o:
            assert (tuple(p) in got) == (n == model.n_stages)


def test_early_exits_keep_every_accepted_positive():
    base = _cascade("HAAR", 5)
    pos = _windows(7, 600, base.window_shape)
    model = early_exits(base, pos)
    assert model.n_exits > 0
    assert model.params["early_exits"] == {"positives": 600, "accepted": int(
        CascadeRunner(base).accepts(pos).sum()), "every": 1, "loss": 0.0, "dropped": 0}
    kept = CascadeRunner(base).accepts(pos)
    assert CascadeRunner(model).accepts(pos)[kept].all()
    # every exit is the lowest partial sum of those positives (rounded down to float32)
    runner = CascadeRunner(base)
    ch = runner.prepare(pos[kept])
    for k, s in enumerate(model.stages):
        part = np.cumsum(runner.tree_outputs(ch, k, np.arange(kept.sum())), axis=0)
        for i, e in enumerate(s.exits if s.exits is not None else []):
            if np.isfinite(e):
                lo = part[i].min()
                assert e <= lo and np.nextafter(e, np.float32(np.inf)) > np.float32(lo) - 1e-6
    # the stages are the same; an exited cascade accepts a subset of the windows
    assert [s.trees for s in model.stages] == [s.trees for s in base.stages]
    other = _windows(8, 2000, base.window_shape)
    assert not (CascadeRunner(model).accepts(other) & ~CascadeRunner(base).accepts(other)).any()


@pytest.mark.parametrize("loss", [0.02, 0.1])
def test_early_exits_loss_and_spacing(loss):
    base = _cascade("HAAR", 9)
    pos = _windows(11, 1500, base.window_shape)
    kept = CascadeRunner(base).accepts(pos)
    model = early_exits(base, pos, every=2, loss=loss)
    info = model.params["early_exits"]
    lost = int((kept & ~CascadeRunner(model).accepts(pos)).sum())
    assert lost == info["dropped"] and 0 < lost <= loss * kept.sum()
    for s in model.stages:  # exits after trees 2, 4, ... and the last one only
        if s.exits is not None:
            idx = np.flatnonzero(np.isfinite(s.exits))
            assert all((i + 1) % 2 == 0 or i == len(s.trees) - 1 for i in idx)


def test_early_exits_refuse_bad_arguments():
    base = _cascade("HAAR", 2)
    flat = np.full((5, *base.window_shape), 128, np.uint8)
    with pytest.raises(InputError, match="accepts none"):
        early_exits(base, _reject_all(base))
    with pytest.raises(InputError, match="every"):
        early_exits(base, flat, every=0)
    with pytest.raises(InputError, match="loss"):
        early_exits(base, flat, loss=1.0)


def _reject_all(model: CascadeModel) -> np.ndarray:
    wins = _windows(0, 400, model.window_shape)
    return wins[~CascadeRunner(model).accepts(wins)][:20]


def test_stage_exits_validation_and_format(tmp_path):
    base = _cascade("HAAR", 4)
    model = random_exits(base, 4)
    s = model.stages[0]
    with pytest.raises(ModelError, match="one per tree"):
        Stage(s.trees, threshold=s.threshold, exits=[0.0])
    with pytest.raises(ModelError, match="float32"):
        Stage(s.trees, threshold=s.threshold, exits=[np.nan] * len(s.trees))
    assert Stage(s.trees, threshold=1.0, exits=[-np.inf] * len(s.trees)).exits is None
    # the file keeps the exits bit for bit, null where a tree has none
    d = json.loads(json.dumps(model_to_dict(model)))
    assert any(None in st_["exits"] for st_ in d["stages"] if "exits" in st_)
    assert model_from_dict(d) == model
    save_model(model, tmp_path / "m.json")
    assert load_model(tmp_path / "m.json") == model
    assert model != base and model.without_exits() == base
    bad = dict(d, stages=[dict(d["stages"][0], exits=[0.5])] + d["stages"][1:])
    with pytest.raises(Exception, match="exits"):
        model_from_dict(bad)
    assert "early exits" in model.summary()


def test_opencv_export_refuses_exits():
    base = _cascade("HAAR", 6)
    model = random_exits(base, 6)
    assert base.opencv_type == "HAAR" and model.opencv_type is None
    with pytest.raises(ExportError, match="early exits"):
        to_opencv_xml(model)
    assert to_opencv_xml(model.without_exits()) == to_opencv_xml(base)


def test_stage_rejects_matches_the_tree_by_tree_rule():
    trees = [Tree.stump(0, threshold=0.5, left_value=-1.0, right_value=1.0)] * 3
    stage = Stage(trees, threshold=0.5, exits=[-0.5, -np.inf, -np.inf])
    out = np.array([[-1.0, 1.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0]])
    rejected, score = stage.rejects(out)
    # window 0 leaves after the first tree; window 1 ends at 1 >= 0.5; window 2 at 1
    np.testing.assert_array_equal(rejected, [True, False, False])
    np.testing.assert_array_equal(score, [-1.0, 1.0, 1.0])
