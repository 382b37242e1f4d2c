"""Reservoir boosting in cascades: the in-place buffer, the pool featurizer, running stage scores,
and ``CascadeTrainer(reservoir=R)`` / ``vjtrain --reservoir R``."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.boost.reservoir import (
    PoolFeaturizer,
    ReservoirBooster,
    WindowScores,
    train_reservoir_stage,
)
from vjboost.boost.reservoir.learner import _gather_columns, _spread_rows
from vjboost.boost.streams import ArrayStream
from vjboost.boost.tree import Tree

# --------------------------------------------------------------------------------------------
# the in-place buffer kernels


@pytest.mark.parametrize(("d", "r", "q"), [(1, 1, 1), (3, 4, 2), (7, 5, 9), (20, 13, 13)])
def test_spread_then_gather_equal_numpy(d, r, q):
    rng = np.random.default_rng(d * 100 + r)
    res = rng.random((d, r)).astype(np.float32)
    fresh = rng.random((d, q)).astype(np.float32)
    flat = np.full(d * (r + q), np.nan, dtype=np.float32)
    flat[: d * r] = res.ravel()
    _spread_rows(flat, d, r, r + q)
    pool = flat.reshape(d, r + q)
    np.testing.assert_array_equal(pool[:, :r], res)
    pool[:, r:] = fresh
    ref = np.concatenate([res, fresh], axis=1)
    keep = np.sort(rng.choice(r + q, size=r, replace=False)).astype(np.int64)
    _gather_columns(flat, d, r + q, keep)
    np.testing.assert_array_equal(flat[: d * r].reshape(d, r), ref[:, keep])


def _blobs(n=2000, d=30, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    x = rng.normal(size=(n, d)) + 0.8 * y[:, None] * (np.arange(d) < 5)
    return x.astype(np.float32), y


class _CountingFeaturizer:
    """flatten_samples with an ``into`` method: fills the buffer directly."""

    def __init__(self, d):
        self.n_features = d
        self.calls = 0

    def __call__(self, samples):
        return np.ascontiguousarray(samples.T, dtype=np.float32)

    def into(self, samples, out):
        self.calls += 1
        out[...] = samples.T


@pytest.mark.parametrize("strategy", ["geem", "wsam", "max", "rand"])
def test_fit_with_an_into_featurizer_equals_plain(strategy):
    x, y = _blobs()
    kw = dict(strategy=strategy, cov_features=10, random_state=4, threads=1)
    a = ReservoirBooster(15, reservoir_size=40, n_fresh=30, **kw).fit(ArrayStream(x, y, seed=2))
    f = _CountingFeaturizer(x.shape[1])
    b = ReservoirBooster(15, reservoir_size=40, n_fresh=30, featurizer=f, **kw).fit(
        ArrayStream(x, y, seed=2))
    assert f.calls == 16  # the fill and one batch per round, all written into the buffer
    assert [h.to_dict() for h in a.estimators_] == [h.to_dict() for h in b.estimators_]
    va, ya, fa = a.reservoir_
    vb, yb, fb = b.reservoir_
    assert va.shape == (x.shape[1], 40) and va.flags.c_contiguous
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(fa, fb)
    # the reservoir's values are the samples it says it holds: every column is a training row
    rows = {tuple(r) for r in x}
    assert all(tuple(c) in rows for c in va.T)


def test_float32_leaves_and_partial_fit_after_fit():
    x, y = _blobs(seed=1)
    b = ReservoirBooster(10, reservoir_size=30, n_fresh=30, float32_leaves=True,
                         random_state=0).fit(ArrayStream(x, y, seed=0))
    for h in b.estimators_:
        np.testing.assert_array_equal(h.leaves, h.leaves.astype(np.float32))
    b.partial_fit(x[:7], y[:7])  # any batch size after fit
    assert len(b.estimators_) == 11 and b.reservoir_[0].shape == (x.shape[1], 30)
    with pytest.raises(TypeError, match="float32_leaves"):
        ReservoirBooster(float32_leaves="yes").fit(ArrayStream(x, y))
    with pytest.raises(ValueError, match="categorical"):
        ReservoirBooster(5, reservoir_size=10, n_fresh=10, categorical=np.zeros(3, bool)).fit(
            ArrayStream(x, y))


# --------------------------------------------------------------------------------------------
# pool featurizer and window scores


@pytest.fixture(scope="module")
def windows():
    rng = np.random.default_rng(8)
    yy, _ = np.mgrid[0:10, 0:10]
    pos = np.clip(120 + 80 * (yy < 5) + rng.normal(0, 20, (300, 10, 10)), 0, 255).astype(np.uint8)
    neg = np.clip(120 + rng.normal(0, 40, (300, 10, 10)), 0, 255).astype(np.uint8)
    return pos, neg


def test_pool_featurizer_into_equals_evaluate(windows):
    from vjboost.features import FeaturePool, HaarFamily

    pool = FeaturePool([HaarFamily((10, 10))])
    ids = np.sort(np.random.default_rng(0).choice(pool.n_features, 700, replace=False))
    f = PoolFeaturizer(pool, ids, block=64)
    assert f.n_features == 700
    ref = pool.evaluate(windows[0][:50], ids)
    np.testing.assert_array_equal(f(windows[0][:50]), ref)
    out = np.zeros((700, 80), np.float32)
    f.into(windows[0][:50], out[:, 30:])
    np.testing.assert_array_equal(out[:, 30:], ref)
    assert not out[:, :30].any()
    with pytest.raises(ValueError, match="out"):
        f.into(windows[0][:5], out)


def test_window_scores_equal_direct_evaluation(windows):
    from vjboost.features import FeaturePool, HaarFamily

    pool = FeaturePool([HaarFamily((10, 10))])
    pos, neg = windows
    learners, _ = train_reservoir_stage(
        pool, ArrayStream(pos, np.ones(300), seed=0), ArrayStream(neg, np.zeros(300), seed=1),
        n_weak=5, reservoir_size=40, cov_features=64, random_state=0, loss="gentle",
        float32_leaves=True,
    )
    ws = WindowScores(pool, neg, chunk=37)
    for h in learners:
        ws.add(h)
    vals = pool.evaluate(neg)
    np.testing.assert_allclose(ws.scores, sum(h.predict_matrix(vals) for h in learners),
                               atol=1e-12)


def test_categorical_features_get_categorical_stumps(windows):
    from vjboost.cascade.trainer import make_pool

    pool = make_pool("lbp", (10, 10))
    pos, neg = windows
    learners, booster = train_reservoir_stage(
        pool, ArrayStream(pos, np.ones(300), seed=0), ArrayStream(neg, np.zeros(300), seed=1),
        n_weak=4, reservoir_size=40, strategy="wsam", random_state=0,
    )
    assert learners and all(h.is_stump and h.categorical.all() for h in learners)
    vals = pool.evaluate(np.concatenate([pos[:40], neg[:40]]))
    score = sum(h.predict_matrix(vals) for h in learners)
    assert np.mean((score > 0) == np.r_[np.ones(40), np.zeros(40)].astype(bool)) > 0.7


# --------------------------------------------------------------------------------------------
# CascadeTrainer(reservoir=R) and vjtrain --reservoir R

WIN = 16


@pytest.fixture(scope="module")
def cascade_data(tmp_path_factory):
    """lfw faces (16x16, mirrored) and scikit-image backgrounds written as PNG files."""
    import cv2
    import skimage.data as d

    root = tmp_path_factory.mktemp("reservoir_cascade")
    faces = (d.lfw_subset()[:100] * 255).round().astype(np.uint8)
    faces = np.stack([cv2.resize(f, (WIN, WIN), interpolation=cv2.INTER_AREA) for f in faces])
    faces = np.concatenate([faces, faces[:, :, ::-1]])
    np.savez(root / "pos.npz", images=faces)
    (root / "bg").mkdir()
    paths = []
    for name in ("coins", "moon", "page", "text", "brick", "grass", "clock", "coffee"):
        im = getattr(d, name)()
        if im.ndim == 3:
            im = cv2.cvtColor(im, cv2.COLOR_RGB2GRAY)
        im = cv2.resize(im, (im.shape[1] // 2, im.shape[0] // 2), interpolation=cv2.INTER_AREA)
        p = root / "bg" / f"{name}.png"
        cv2.imwrite(str(p), im)
        paths.append(str(p))
    return root, faces, paths


def _trainer(**kw):
    from vjboost.cascade.trainer import CascadeTrainer

    args = dict(window_shape=(WIN, WIN), num_stages=3, num_pos=150, num_neg=300,
                min_hit_rate=0.99, max_false_alarm=0.4, max_weak_count=15, seed=5, threads=1,
                reservoir=60)
    args.update(kw)
    return CascadeTrainer(**args)


def test_reservoir_trainer_never_builds_the_feature_matrix(cascade_data, monkeypatch):
    import vjboost.cascade.trainer as trainer_mod
    from vjboost.features.pool import FeaturePool

    _, faces, bgs = cascade_data

    def forbidden(*a, **k):
        raise AssertionError("the stage's feature matrix was precomputed")

    monkeypatch.setattr(trainer_mod, "precompute", forbidden)
    cells = []
    evaluate = FeaturePool.evaluate

    def spy(self, windows, feature_ids=None, sample_ids=None, **k):
        out = evaluate(self, windows, feature_ids, sample_ids, **k)
        cells.append(out.size)
        return out

    monkeypatch.setattr(FeaturePool, "evaluate", spy)
    tr = _trainer().fit(faces, bgs)
    pool = tr.pool_
    assert tr.stages_ and tr.model_ is not None and tr.model_.opencv_type == "HAAR"
    # no call evaluates more than a block of features on a batch of R windows, or a stage's
    # few features on the stage's windows
    assert max(cells) <= max(4096 * 60, 450 * 60)
    assert max(cells) < pool.n_features * 450 / 20
    for st in tr.stages_:
        # the stage semantics of the full trainer: hit rate kept, false alarm target or cap
        assert st.hit_rate >= 0.99
        assert st.false_alarm <= 0.4 or len(st.learners) == 15
        assert st.info["mode"] == "reservoir 60 (geem)"
        assert st.info["cache_bytes"] == pool.n_features * 120 * 4
        assert st.info["reservoir"]["windows_drawn"] == 60 * (1 + st.info["reservoir"]["rounds"])
        assert all(np.array_equal(h.leaves, h.leaves.astype(np.float32))
                   for h in st.learners)
    assert tr.report_["stages"][0]["feature_mode"] == "reservoir 60 (geem)"
    # the recorded hit rate and false alarm are those of the model on the stage's windows
    from vjboost.cascade.runner import cascade_accepts
    from vjboost.cascade.trainer import build_cascade_model

    passed, _ = cascade_accepts(build_cascade_model(pool, tr.stages_[:1]), faces[:150])
    assert np.mean(passed) == pytest.approx(tr.stages_[0].hit_rate)


@pytest.mark.slow
def test_reservoir_same_seed_same_model_and_resume(cascade_data, tmp_path):
    from vjboost.cascade.trainer import stages_digest

    _, faces, bgs = cascade_data
    a = _trainer(reservoir_strategy="wsam").fit(faces, bgs)
    b = _trainer(reservoir_strategy="wsam").fit(faces, bgs, output_dir=tmp_path / "b",
                                                 max_new_stages=1)
    assert len(b.stages_) == 1
    b = _trainer(reservoir_strategy="wsam").fit(faces, bgs, output_dir=tmp_path / "b",
                                                 resume=True)
    assert stages_digest(a.stages_) == stages_digest(b.stages_)
    c = _trainer(reservoir_strategy="wsam", seed=6).fit(faces, bgs)
    assert stages_digest(a.stages_) != stages_digest(c.stages_)
    # a checkpoint made with another reservoir cannot be resumed
    from vjboost.cascade.trainer import TrainingError

    with pytest.raises(TrainingError, match="reservoir"):
        _trainer(reservoir=50, reservoir_strategy="wsam").fit(
            faces, bgs, output_dir=tmp_path / "b", resume=True)


@pytest.mark.parametrize(("features", "kind"), [("lbp", "LBP"), ("haar", "HAAR")])
def test_reservoir_trees_and_lbp(cascade_data, features, kind):
    _, faces, bgs = cascade_data
    tr = _trainer(features=features, weak_learner="tree", max_depth=2, num_stages=2,
                  max_weak_count=6,
                  loss="logit", reservoir_strategy="rand").fit(faces, bgs)
    assert tr.model_.opencv_type == kind
    learners = [h for st in tr.stages_ for h in st.learners]
    assert any(isinstance(h, Tree) and not h.is_stump for h in learners)
    if features == "lbp":
        assert all(h.categorical.all() for h in learners)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(reservoir=0), "reservoir"),
        (dict(reservoir=-3), "reservoir"),
        (dict(reservoir=2.5), "reservoir"),
        (dict(reservoir=226), r"num_pos \+ num_neg = 450"),
        (dict(reservoir_strategy="best"), "reservoir_strategy"),
        (dict(sampler="laminating"), "sampler"),
        (dict(loss="discrete"), "loss"),
    ],
)
def test_reservoir_trainer_bad_parameters(cascade_data, kw, message):
    from vjboost.cascade.trainer import TrainingError

    _, faces, bgs = cascade_data
    with pytest.raises(TrainingError, match=message):
        _trainer(**kw).fit(faces, bgs)


def _cli_args(root, out, *extra):
    return [str(root / "pos.npz"), str(root / "bg"), "-o", str(out), "--window",
            f"{WIN}x{WIN}", "--stages", "3", "--num-pos", "150", "--num-neg", "300",
            "--min-hit-rate", "0.99", "--max-false-alarm", "0.4", "--max-weak-count", "15",
            "--seed", "2", "--threads", "1", "-q", *extra]


def test_vjtrain_reservoir_trains_a_cascade_that_loads_and_detects(cascade_data, tmp_path):
    import json

    import cv2
    from click.testing import CliRunner

    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.model_io import load_model
    from vjboost.cli.train import vjtrain

    root, faces, bgs = cascade_data
    out = tmp_path / "out"
    res = CliRunner().invoke(vjtrain, _cli_args(root, out, "--reservoir", "50"))
    assert res.exit_code == 0, res.output
    for name in ("model.json", "cascade.xml", "checkpoint.json", "report.json"):
        assert (out / name).exists(), name
    report = json.loads((out / "report.json").read_text())
    assert report["config"]["reservoir"] == 50
    assert report["config"]["reservoir_strategy"] == "geem"
    assert all(r["feature_mode"] == "reservoir 50 (geem)" for r in report["stages"])
    model = load_model(out / "model.json")
    assert model.n_stages == report["n_stages"] >= 1
    # OpenCV's XML holds the same cascade
    cv = cv2.CascadeClassifier(str(out / "cascade.xml"))
    assert not cv.empty()
    # faces pasted into a background are found
    scene = cv2.imread(bgs[1], cv2.IMREAD_GRAYSCALE)[:96, :160].copy()
    for k, x in enumerate((8, 60, 112)):
        scene[30:30 + 2 * WIN, x:x + 2 * WIN] = cv2.resize(faces[k], (2 * WIN, 2 * WIN))
    det = CascadeDetector(model, min_neighbors=0)
    boxes = det.detect(scene).boxes
    centers = boxes[:, :2] + boxes[:, 2:] / 2
    found = [np.any(np.hypot(centers[:, 0] - (x + WIN), centers[:, 1] - (30 + WIN)) < WIN / 2)
             for x in (8, 60, 112)]
    assert sum(found) >= 2, boxes


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--reservoir", "0"], "--reservoir"),
        (["--reservoir", "-4"], "--reservoir"),
        (["--reservoir", "abc"], "--reservoir"),
        (["--reservoir", "400"], "--num-pos + --num-neg"),
        (["--reservoir", "20", "--sampler", "laminating"], "--sampler"),
        (["--reservoir", "20", "--loss", "real"], "--loss"),
        (["--reservoir", "20", "--reservoir-strategy", "best"], "--reservoir-strategy"),
    ],
)
def test_vjtrain_reservoir_bad_input_is_one_line(cascade_data, tmp_path, extra, message):
    from click.testing import CliRunner

    from vjboost.cli.train import vjtrain

    root, _, _ = cascade_data
    res = CliRunner().invoke(vjtrain, _cli_args(root, tmp_path / "out", *extra))
    assert res.exit_code == 2, res.output
    assert message in res.output, res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "out" / "checkpoint.json").exists()
