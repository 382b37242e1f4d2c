"""The first stage over whole rows (cascade/prefilter.py) against the window-by-window kernel."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.cascade import prefilter
from vjboost.cascade.runner import CascadeRunner
from vjboost.cascade.scan import Pyramid
from vjboost.cascade.synthetic import random_cascade


def _image(seed: int, shape=(70, 90)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, size=shape).astype(np.uint8)
    img[:20, :30] = 128  # a flat patch: the σ gate refuses its windows
    return img


def _scan(model, img, *, rows: bool, min_std, first_stage=0, monkeypatch=None):
    runner = CascadeRunner(model, first_stage=first_stage, threads=1)
    pyr = Pyramid(model.window_shape, (img.shape[1], img.shape[0]), scale_factor=1.2,
                  mode="clean", step=1)
    if not rows:
        monkeypatch.setattr(prefilter, "applies", lambda *a: False)
    try:
        return runner.scan(img, pyr, min_std=min_std)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("min_std", [None, 10.0])
def test_rows_match_window_by_window(seed, min_std, monkeypatch):
    model = random_cascade("HAAR", n_stages=4, balanced=True, pass_rate=0.6, seed=seed)
    runner = CascadeRunner(model, threads=1)
    items = np.array([[0, 5, 1, 0]], dtype=np.int64)
    assert prefilter.applies(runner.compiled, items, False)  # the row path is the one tested
    img = _image(seed)
    pos_r, sc_r = _scan(model, img, rows=True, min_std=min_std, monkeypatch=monkeypatch)
    pos_w, sc_w = _scan(model, img, rows=False, min_std=min_std, monkeypatch=monkeypatch)
    assert len(pos_w) > 0  # some windows pass every stage
    np.testing.assert_array_equal(pos_r, pos_w)
    np.testing.assert_array_equal(sc_r, sc_w)


def test_one_stage_and_later_first_stage(monkeypatch):
    model = random_cascade("HAAR", n_stages=3, balanced=True, pass_rate=0.7, seed=5)
    img = _image(5)
    for first in (0, 2):  # first=2: a runner of one stage (no stage after the row pass)
        pos_r, sc_r = _scan(model, img, rows=True, min_std=None, first_stage=first,
                            monkeypatch=monkeypatch)
        pos_w, sc_w = _scan(model, img, rows=False, min_std=None, first_stage=first,
                            monkeypatch=monkeypatch)
        assert len(pos_w) > 0
        np.testing.assert_array_equal(pos_r, pos_w)
        np.testing.assert_array_equal(sc_r, sc_w)


def test_applies_only_to_depth2_haar_rows():
    model = random_cascade("HAAR", n_stages=2, balanced=True, seed=3)
    cc = CascadeRunner(model, threads=1).compiled
    rows = np.array([[0, 5, 1, 0]], dtype=np.int64)
    assert prefilter.applies(cc, rows, False)
    assert not prefilter.applies(cc, rows, True)  # OpenCV's skip after a stage-0 rejection
    assert not prefilter.applies(cc, np.array([[0, 5, 2, 0]], dtype=np.int64), False)
    stumps = CascadeRunner(random_cascade("HAAR", n_stages=2, seed=3), threads=1).compiled
    assert not prefilter.applies(stumps, rows, False)
    lbp = CascadeRunner(random_cascade("LBP", n_stages=2, seed=3), threads=1).compiled
    assert not prefilter.applies(lbp, rows, False)
