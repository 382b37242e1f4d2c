"""Cascade trainer: stage threshold logic, stage boosting, negative mining, model conversion."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vjboost.boost.search import MatrixSearch
from vjboost.boost.tree import Tree
from vjboost.boost.weak import TreeShape
from vjboost.cascade.model import CascadeModel, Stage
from vjboost.cascade.negatives import ImageCache, MiningParams, mine_negatives
from vjboost.cascade.runner import cascade_accepts
from vjboost.cascade.scan import Pyramid
from vjboost.cascade.trainer import (
    CascadeTrainer,
    StageResult,
    TrainingError,
    build_cascade_model,
    make_pool,
    stage_false_alarm,
    stage_threshold,
    stages_digest,
    train_stage,
)

WIN = (12, 12)


# ------------------------------------------------------------------------------------------------
# data: lfw faces shipped with scikit-image, background images written as PNG files
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def faces(faces12) -> np.ndarray:
    assert faces12.shape[1:] == WIN
    return faces12


# ------------------------------------------------------------------------------------------------
# stage threshold / false alarm vs plain NumPy
# ------------------------------------------------------------------------------------------------


def _ref_threshold(scores, h):
    """Plain NumPy: OpenCV's index rule, hit rate by counting scores at or above it."""
    s = np.sort(np.asarray(scores, np.float32))
    n = s.size
    # OpenCV computes (1 - h) in float32 and truncates (1 - h) * n
    k = int(np.float32(np.float32(1.0) - np.float32(h)) * np.float32(n))
    thr = s[k]
    kept = np.count_nonzero(s >= thr) + np.count_nonzero((s < thr) & (np.abs(s - thr) <
                                                                         np.finfo(np.float32).eps))
    return float(thr), kept / n


@pytest.mark.parametrize("h", [0.995, 0.99, 0.9, 0.5, 1.0])
@pytest.mark.parametrize("n", [1, 7, 200, 2000])
def test_stage_threshold_matches_reference(rng, h, n):
    scores = rng.normal(size=n)
    thr, hit = stage_threshold(scores, h)
    ref_thr, ref_hit = _ref_threshold(scores, h)
    assert thr == ref_thr
    assert hit == pytest.approx(ref_hit)
    # the threshold keeps at least the asked share of positives under the detector's rule
    kept = np.count_nonzero(scores >= np.float32(np.float32(thr) - np.float32(1e-5)))
    assert kept / n >= min(h, 1.0) - 1.0 / n


def test_stage_threshold_float32_index_quirk():
    # float32(1 - 0.995) * 2000 = 9.99999 -> index 9, as OpenCV (not round(10))
    scores = np.arange(2000, dtype=np.float64)
    thr, hit = stage_threshold(scores, 0.995)
    assert thr == 9.0
    assert hit == pytest.approx(1991 / 2000)


def test_stage_threshold_counts_ties():
    scores = np.array([1.0, 1.0, 1.0, 2.0, 3.0])
    thr, hit = stage_threshold(scores, 0.7)  # index int(0.3 * 5) = 1 -> ties at 1.0 count
    assert thr == 1.0 and hit == 1.0


def test_stage_false_alarm_matches_model(faces):
    # the trainer's acceptance rule is the model's (float32 threshold minus 1e-5)
    fam = make_pool("haar", WIN).families[0]
    vals = fam.evaluate(fam.prepare(faces), [0])
    tree = Tree.stump(0, threshold=float(np.median(vals)), left_value=-0.7, right_value=0.9)
    scores = tree.predict(vals).astype(np.float64)
    for thr in (-0.7, 0.9, 0.9 + 5e-6, 0.9 + 2e-5, 0.0):
        model = CascadeModel(WIN, stages=[Stage([tree], threshold=thr)], family=fam,
                             feature_ids=[0])
        accepted, _ = cascade_accepts(model, faces)
        assert stage_false_alarm(scores, thr) == pytest.approx(np.mean(accepted))


# ------------------------------------------------------------------------------------------------
# one stage
# ------------------------------------------------------------------------------------------------


def test_train_stage_reaches_goals(rng):
    n_pos, n_neg, q = 300, 600, 40
    x = rng.normal(size=(q, n_pos + n_neg)).astype(np.float32)
    x[3, :n_pos] += 1.5
    x[17, :n_pos] -= 1.0
    y = np.r_[np.ones(n_pos), -np.ones(n_neg)]
    search = MatrixSearch(x)
    res = train_stage(search, y, min_hit_rate=0.99, max_false_alarm=0.4, max_weak_count=50)
    assert res.false_alarm <= 0.4 and res.hit_rate >= 0.99
    assert len(res.learners) == len(res.losses) < 50
    assert {3, 17} & {int(lr.feature[0]) for lr in res.learners}
    # statistics agree with a brute-force evaluation of the learners
    scores = np.zeros(n_pos + n_neg)
    for lr in res.learners:
        scores += lr.predict_matrix(x)
        assert np.array_equal(lr.leaves, lr.leaves.astype(np.float32))
    thr, hit = stage_threshold(scores[:n_pos], 0.99)
    assert thr == res.threshold and hit == res.hit_rate
    assert stage_false_alarm(scores[n_pos:], thr) == res.false_alarm
    # losses decrease (Gentle AdaBoost's exponential loss)
    assert all(b <= a + 1e-12 for a, b in zip(res.losses, res.losses[1:], strict=False))


def test_train_stage_stops_at_max_weak_count(rng):
    x = rng.normal(size=(5, 400)).astype(np.float32)  # no signal: the goal is never met
    y = np.r_[np.ones(200), -np.ones(200)]
    res = train_stage(MatrixSearch(x), y,
                      min_hit_rate=0.999, max_false_alarm=0.05, max_weak_count=4)
    assert len(res.learners) == 4 and res.false_alarm > 0.05


def test_stage_result_round_trip(rng):
    x = rng.normal(size=(6, 200)).astype(np.float32)
    x[0, :100] += 2
    y = np.r_[np.ones(100), -np.ones(100)]
    res = train_stage(MatrixSearch(x), y, shape=TreeShape(max_depth=2), max_weak_count=3)
    back = StageResult.from_dict(res.to_dict())
    assert stages_digest([back]) == stages_digest([res])
    for a, b in zip(res.learners, back.learners, strict=True):
        assert np.array_equal(a.predict_matrix(x), b.predict_matrix(x))


# ------------------------------------------------------------------------------------------------
# negative mining
# ------------------------------------------------------------------------------------------------


def _grid_windows(path, params, offset=(0, 0)):
    """Brute force: every grid window of the detector's scales (crop, resize, slide)."""
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)[offset[1]:, offset[0]:]
    h, w = params.window
    out = []
    pyr = Pyramid((h, w), img.shape[::-1], scale_factor=params.scale_factor, mode="clean",
                  step=params.grid_step)
    for lv in pyr.levels:
        sw, sh = lv.width, lv.height
        sc = img if (sw, sh) == img.shape[::-1] else cv2.resize(
            img, (sw, sh), interpolation=cv2.INTER_LINEAR_EXACT)
        v = np.lib.stride_tricks.sliding_window_view(sc, (h, w))
        out.append(v[::params.grid_step, ::params.grid_step].reshape(-1, h, w))
    return np.concatenate(out)


def test_mining_deterministic_and_counts(backgrounds):
    params = MiningParams(WIN, scale_factor=1.5, step=4)
    a = mine_negatives(None, backgrounds, 300, params=params, seed=3)
    b = mine_negatives(None, backgrounds, 300, params=params, seed=3, cache=ImageCache(0))
    c = mine_negatives(None, backgrounds, 300, params=params, seed=4)
    assert a.windows.shape == (300, *WIN)
    assert np.array_equal(a.windows, b.windows)
    assert not np.array_equal(a.windows, c.windows)
    assert a.n_scanned == b.n_scanned and a.acceptance_ratio == 1.0
    # every window comes from the grid of some visited image
    grids = {w.tobytes() for p in backgrounds for w in _grid_windows(p, params)}
    assert all(w.tobytes() in grids for w in a.windows)


def test_mining_acceptance_matches_brute_force(faces, backgrounds):
    pool = make_pool("haar", WIN)
    x = np.concatenate([faces[:100], _grid_windows(backgrounds[0], MiningParams(WIN))[:300]])
    y = np.r_[np.ones(100), -np.ones(300)]
    values = pool.evaluate(x).astype(np.float32)
    st = train_stage(MatrixSearch(values, categorical=pool.kinds()), y,
                     max_false_alarm=0.3, max_weak_count=5)
    model = build_cascade_model(pool, [st])
    assert model.opencv_type == "HAAR"
    params = MiningParams(WIN, scale_factor=1.5, step=3, max_per_image=10**6, max_passes=1)
    res = mine_negatives(model, backgrounds[:3], 10**7, params=params, seed=0)
    assert res.exhausted and res.passes == 1
    brute = np.concatenate([_grid_windows(p, params) for p in backgrounds[:3]])
    assert res.n_scanned == len(brute)
    # reference acceptance: the cascade on the cut-out windows, with the detector's flat-window
    # gate (sigma <= 10 grey levels) — exactly; and with the gate computed in NumPy
    passed, _ = cascade_accepts(model, brute, min_std=10.0)
    assert res.n_accepted == int(passed.sum())
    inner = brute[:, 1:-1, 1:-1].reshape(len(brute), -1).astype(np.float64)
    ungated, _ = cascade_accepts(model, brute)
    ref = ungated & (inner.std(axis=1) > 10.0)
    assert abs(res.n_accepted - int(ref.sum())) <= max(2, 0.002 * len(brute))
    # the mined windows are accepted by the cascade
    assert cascade_accepts(model, res.windows)[0].all()
    assert res.acceptance_ratio == pytest.approx(res.n_accepted / res.n_scanned)


def test_mining_exhaustion_and_unreadable(tmp_path, backgrounds):
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"not an image")
    params = MiningParams(WIN, scale_factor=2.0, step=6, max_passes=2)
    res = mine_negatives(None, [backgrounds[0], str(bad)], 10**7, params=params)
    assert res.exhausted and res.passes == 2
    assert res.unreadable == [str(bad)]
    assert len(res.windows) < 10**7 and res.n_images_visited == 2


def test_mining_params_validation():
    with pytest.raises(ValueError, match="scale_factor"):
        MiningParams(WIN, scale_factor=1.01)
    with pytest.raises(ValueError, match="step"):
        MiningParams(WIN, step=0)


# ------------------------------------------------------------------------------------------------
# the trainer
# ------------------------------------------------------------------------------------------------


def test_trainer_lbp_cascade_and_positive_replacement(faces, backgrounds):
    tr = CascadeTrainer(window_shape=WIN, features="lbp", num_stages=3, num_pos=150,
                        num_neg=300, min_hit_rate=0.98, max_false_alarm=0.5, seed=1,
                        max_weak_count=20)
    tr.fit(faces, backgrounds)
    model = tr.model_
    assert model.opencv_type == "LBP" and model.n_stages == len(tr.stages_) >= 1
    # positives used by stage k: the first num_pos of the pool accepted by stages < k
    for k, st in enumerate(tr.stages_):
        assert st.info["positives_consumed"] >= 150
        if k == 0:
            assert st.info["positives_consumed"] == 150
    assert tr.report_["n_stages"] == model.n_stages
    assert tr.stop_["reason"] in ("num_stages", "false_alarm_target", "negatives_exhausted")


def test_resume_with_other_features_names_what_differs(faces, backgrounds, tmp_path):
    """The refusal names the setting that changed, not the common start of two long pool
    configurations (which read the same up to where they were cut)."""
    kw = dict(window_shape=WIN, num_stages=1, num_pos=60, num_neg=100, max_weak_count=3, seed=0)
    CascadeTrainer(features="haar", haar_mode="ALL", **kw).fit(faces, backgrounds,
                                                               output_dir=tmp_path)
    cases = [("haar,lbp", "ALL", "pool.families[1]: checkpoint family None vs now 'mblbp'"),
             ("lbp", "ALL", "pool.families[0]: checkpoint family 'haar' vs now 'mblbp'"),
             ("haar", "BASIC", "pool.families[0].config.mode: checkpoint 'ALL' vs now 'BASIC'")]
    for features, mode, said in cases:
        with pytest.raises(TrainingError) as err:
            CascadeTrainer(features=features, haar_mode=mode, **kw).fit(
                faces, backgrounds, output_dir=tmp_path, resume=True)
        assert f"other settings or data ({said}); use the same" in str(err.value)


def test_trainer_rejects_bad_settings(faces, backgrounds):
    with pytest.raises(TrainingError, match="max_false_alarm"):
        CascadeTrainer(window_shape=WIN, max_false_alarm=1.0).fit(faces, backgrounds)
    with pytest.raises(TrainingError, match="num_pos"):
        CascadeTrainer(window_shape=WIN, num_pos=5000).fit(faces, backgrounds)
    with pytest.raises(TrainingError, match="unknown feature family"):
        CascadeTrainer(window_shape=WIN, features="nope", num_pos=10).fit(faces, backgrounds)
    with pytest.raises(TrainingError, match="color_hist read colour windows"):
        CascadeTrainer(window_shape=WIN, features="haar,color_hist", num_pos=10).fit(
            faces, backgrounds)
    with pytest.raises(TrainingError, match="object_box"):
        CascadeTrainer(window_shape=WIN, object_box=(0, 0, 0, 1)).fit(faces, backgrounds)
    # backgrounds are paths (mining visits and checkpoints them by path): images in memory, or
    # one path where a list is expected, are refused in one line naming the argument
    with pytest.raises(TrainingError, match=r"backgrounds\[1\]: expected an image path, got "
                                            r"ndarray; write the background images to files"):
        CascadeTrainer(window_shape=WIN, num_pos=10).fit(
            faces, [backgrounds[0], np.zeros((50, 50), np.uint8)])
    with pytest.raises(TrainingError, match="expected a sequence of image paths, got one path"):
        CascadeTrainer(window_shape=WIN, num_pos=10).fit(faces, backgrounds[0])


def test_trainer_declares_the_object_box_and_the_detector_reports_it(faces, backgrounds):
    """The box is declared by the model, changes nothing of the training, and the detector
    reports that part of each window."""
    from vjboost.cascade import CascadeDetector

    kw = dict(window_shape=WIN, features="lbp", num_stages=1, num_pos=150, num_neg=300,
              seed=1, max_weak_count=10)
    plain = CascadeTrainer(**kw).fit(faces, backgrounds).model_
    framed = CascadeTrainer(**kw, object_box=(0.25, 0, 0.5, 1)).fit(faces, backgrounds).model_
    assert framed.stages == plain.stages and "object_box" not in plain.params
    assert framed.params["object_box"] == [0.25, 0.0, 0.5, 1.0]
    assert CascadeDetector(framed).object_box == (0.25, 0.0, 0.5, 1.0)


def test_train_raises_when_no_stage_could_be_trained(faces, tmp_path):
    """``vjboost.train`` returns a model or says why there is none, never ``None``."""
    from vjboost.cascade.api import train

    missing = [str(tmp_path / "no_such_background.png")]
    with pytest.raises(TrainingError, match="no stage could be trained: negatives exhausted.*"
                                            "none of the background images could be read"):
        train(faces, missing, window_shape=WIN, features="lbp", num_stages=2, num_pos=100,
              num_neg=200, max_weak_count=5)
