"""The cascade runner: window stacks, tree outputs and image scans agree with the detector."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data

from vjboost.cascade.detector import CascadeDetector
from vjboost.cascade.model_io import load_model
from vjboost.cascade.runner import CascadeRunner, cascade_accepts, stage_sum
from vjboost.cascade.synthetic import random_cascade


def _cascade(name):
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if not base:
        pytest.skip("this OpenCV build ships no cascades")
    return load_model(f"{base}/{name}")


def _windows(rng, size, n):
    faces = data.lfw_subset()[:100]
    faces = (faces * 255).astype(np.uint8)
    out = [cv2.resize(f, (size, size), interpolation=cv2.INTER_AREA) for f in faces[: n // 2]]
    out += list(rng.integers(0, 256, (n - len(out), size, size), dtype=np.uint8))
    return np.stack(out)


def _detector_accepts(model, windows):
    det = CascadeDetector(model, min_neighbors=0, grouping="none", scale_factor=1.5)
    return np.array([len(det.raw_windows(w)[0]) == 1 for w in windows])


def _generic(runner):
    """The same runner on the generic family path (family.evaluate, Tree.predict)."""
    runner.compiled = None
    return runner


@pytest.mark.parametrize("n_stages", [2, 5])
def test_haar_decisions_match_detector_exactly(rng, n_stages):
    model = _cascade("haarcascade_frontalface_default.xml").truncated(n_stages)
    wins = _windows(rng, model.width, 120)
    acc, n_passed = cascade_accepts(model, wins, min_std=10.0)
    assert acc.sum() > 5  # the test means something
    np.testing.assert_array_equal(acc, _detector_accepts(model, wins))
    assert np.all(n_passed[acc] == n_stages)


def test_lbp_decisions_match_detector_exactly(rng):
    from skimage.data import lbp_frontal_face_cascade_filename

    with pytest.warns(UserWarning):
        model = load_model(lbp_frontal_face_cascade_filename()).truncated(3)
    wins = _windows(rng, model.width, 80)
    acc, _ = cascade_accepts(model, wins)
    assert 0 < acc.sum() < len(acc)
    np.testing.assert_array_equal(acc, _detector_accepts(model, wins))


@pytest.mark.parametrize("kw", [{"kind": "HAAR", "max_nodes": 3, "tilted_fraction": 0.4},
                                {"kind": "LBP", "balanced": True}], ids=["haar", "lbp"])
def test_generic_path_equals_kernels_on_windows(rng, kw):
    model = random_cascade(window=(14, 12), n_stages=4, pass_rate=0.7, seed=5, **kw)
    wins = rng.integers(0, 256, (300, 12, 14), dtype=np.uint8)  # window (W, H) = (14, 12)
    fast = CascadeRunner(model, first_stage=1).run(wins, chunk=70)
    slow = _generic(CascadeRunner(model, first_stage=1)).run(wins, chunk=70)
    assert 0 < (fast[0] == model.n_stages).sum() < len(wins)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    # per-tree outputs summed by stage_sum give the stage score the kernels compute
    runner = CascadeRunner(model)
    n_passed, score = runner.run(wins)
    ch = runner.prepare(wins)
    for k in range(model.n_stages):
        ids = np.flatnonzero(n_passed == k)  # rejected by stage k: its score is the last one
        np.testing.assert_array_equal(stage_sum(runner.tree_outputs(ch, k, ids)), score[ids])


@pytest.mark.parametrize(("mode", "kw"), [("opencv", {}), ("clean", {"step": 3})])
def test_generic_path_equals_kernels_on_images(mode, kw):
    model = random_cascade("LBP", window=(16, 16), n_stages=3, max_nodes=2, pass_rate=0.75,
                           seed=2)
    img = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)[100:260, 120:300].copy()
    det = CascadeDetector(model, min_neighbors=0, mode=mode, **kw)
    pyr = det.pyramid(img.shape[::-1])
    fast = CascadeRunner(model).scan(img, pyr, skip0=True)
    slow = _generic(CascadeRunner(model)).scan(img, pyr, skip0=True)
    assert len(fast[0]) > 50
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    # the windows cut by the pyramid are accepted one by one
    assert cascade_accepts(model, pyr.windows(img, fast[0]))[0].all()


def test_runner_errors():
    model = random_cascade(seed=0)
    with pytest.raises(ValueError, match="first_stage/last_stage"):
        CascadeRunner(model, first_stage=2, last_stage=1)
    with pytest.raises(ValueError, match="windows"):
        CascadeRunner(model).run(np.zeros((3, 5, 5), np.uint8))
    n, s = CascadeRunner(model).run(np.zeros((0, 20, 20), np.uint8))
    assert n.shape == s.shape == (0,)
