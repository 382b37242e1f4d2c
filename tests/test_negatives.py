"""Negative pool: schedule (no unit scanned twice), augmentation, pool reuse checked by brute
force, executor order independence, determinism and resume of the trainer."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from vjboost._parallel import Executor
from vjboost.cascade import CascadeDetector
from vjboost.cascade.kernels import reject_threshold
from vjboost.cascade.negatives import (
    AUGMENTATIONS,
    MiningParams,
    MiningProgress,
    NegativePool,
    augment_image,
    scan_unit,
)
from vjboost.cascade.progress import RunClock
from vjboost.cascade.scan import Pyramid
from vjboost.cascade.trainer import CascadeTrainer, build_cascade_model, stages_digest

WIN = (12, 12)


@pytest.fixture(scope="module")
def trained(faces12, backgrounds):
    tr = CascadeTrainer(window_shape=WIN, features="haar", num_stages=3, num_pos=150,
                        num_neg=300, min_hit_rate=0.99, max_false_alarm=0.5, seed=2,
                        max_weak_count=12)
    return tr.fit(faces12, backgrounds)


def _brute_accepts(pool, stages, windows) -> np.ndarray:
    """Plain evaluation: every feature of the pool by the family's own code, every tree by its
    leaves, stage sums in float64, OpenCV's rejection rule."""
    values = pool.evaluate(windows).astype(np.float32)  # (n_features, S)
    ok = np.ones(len(windows), bool)
    for st in stages:
        score = np.zeros(len(windows))
        for tree in st.learners:
            score += tree.predict_matrix(values).astype(np.float64)
        ok &= score >= reject_threshold(st.threshold)
    return ok


class _ShuffledExecutor(Executor):
    """Runs the tasks of a batch in a seeded shuffled order (as tasks completing in any order)
    and yields the results in task order; records every mining unit."""

    def __init__(self) -> None:
        self.units: list[tuple[str, int, int]] = []
        self.rng = np.random.default_rng(5)

    def imap(self, fn, units, *shared, ahead=None):
        units = list(units)
        self.units.extend(u for chunk in units for u in chunk)
        out = [None] * len(units)
        for i in self.rng.permutation(len(units)):
            out[i] = fn(units[i], *shared)
        yield from out


def test_no_unit_scanned_twice_and_executor_order_independent(backgrounds):
    params = MiningParams(WIN, scale_factor=1.5, step=3, batch=3)
    ex = _ShuffledExecutor()
    a = NegativePool(backgrounds, params, seed=1, n=40)
    b = NegativePool(backgrounds, params, seed=1, n=40)
    for _ in range(6):
        ra = a.fill(None)
        rb = b.fill(None, executor=ex)
        assert np.array_equal(ra.windows, rb.windows)
        assert ra.n_scanned == rb.n_scanned
        a.windows = a.windows[:0]  # drop the pool: every fill must scan new units
        b.windows = b.windows[:0]
    assert len(ex.units) == len(set(ex.units))
    # the cursors account for every unit, pass by pass
    assert sum(b.cursor.values()) == sum(g for _, _, g in ex.units)
    assert max(b.cursor.values()) - min(b.cursor.values()) <= 1


def test_augmented_passes_are_the_named_transforms(backgrounds):
    img = cv2.imread(backgrounds[0], cv2.IMREAD_GRAYSCALE)
    params = MiningParams(WIN, scale_factor=1.44, step=2, max_gamma=1.0)
    s2 = params.grid_step ** 2
    for v, (mirror, turns, shrink) in enumerate(AUGMENTATIONS):
        for o in range(s2):
            ref = img[:, ::-1] if mirror else img
            ref = np.rot90(ref, turns)
            if shrink:
                ref = cv2.resize(np.ascontiguousarray(ref), (round(ref.shape[1] / 1.2),
                                                            round(ref.shape[0] / 1.2)),
                                 interpolation=cv2.INTER_AREA)
            got = augment_image(img, v * s2 + o, params, 0, backgrounds[0])
            assert np.array_equal(got, ref), (v, o)
    # gamma: a seeded, monotone change of the grey levels on augmented passes only
    g = MiningParams(WIN, scale_factor=1.44, step=2, max_gamma=1.6)
    plain = augment_image(img, 0, g, 0, "x")
    assert np.array_equal(plain, img)
    aug = augment_image(img, s2 + 0, g, 0, "x")
    assert np.array_equal(aug, augment_image(img, s2 + 0, g, 0, "x"))
    order = np.argsort(np.rot90(img, 1).ravel(), kind="stable")
    assert np.all(np.diff(aug.ravel()[order].astype(int)) >= 0)


@pytest.mark.parametrize("model", [False, True], ids=["every window", "cascade"])
def test_a_unit_of_several_passes_scans_what_its_passes_scan(trained, backgrounds, model):
    # the step² grid offsets of an augmentation cover its windows once; a unit of g passes
    # accepts exactly the windows its g one-pass units accept, and the grid is the detector's
    params = MiningParams(WIN, scale_factor=1.5, step=3)
    m = trained.model_ if model else None
    img = cv2.imread(backgrounds[1], cv2.IMREAD_GRAYSCALE)
    big = 10**7

    def scan(p, g):
        return scan_unit(m, backgrounds[1], p, params=params, seed=3, per_image=big, g=g)

    for first, g in ((9, 9), (12, 3)):  # all offsets of augmentation 1; one row of offsets
        whole = scan(first, g)
        parts = [scan(p, 1) for p in range(first, first + g)]
        assert whole.n_scanned == sum(u.n_scanned for u in parts)
        assert whole.n_accepted == sum(u.n_accepted for u in parts) == len(whole.windows)
        key = sorted(w.tobytes() for u in parts for w in u.windows)
        assert sorted(w.tobytes() for w in whole.windows) == key
    # every window of the plain image's pyramid (step 1) is in exactly one pass of augmentation 0
    dense = Pyramid(WIN, img.shape[::-1], scale_factor=1.5, mode="clean", step=1)
    assert sum(scan(p, 1).n_scanned for p in range(9)) == dense.n_windows
    with pytest.raises(ValueError, match="do not form a unit"):
        scan(10, 3)


def test_units_grow_as_the_cascade_accepts_fewer_windows(backgrounds):
    params = MiningParams(WIN, scale_factor=1.5, step=3, batch=2)
    pool = NegativePool(backgrounds, params, seed=0, n=10)
    per_image = params.per_image(10, len(backgrounds))
    assert pool._group(0, 0, 0, per_image) == 1             # nothing scanned yet this stage
    assert pool._group(10**6, 10**5, 10, per_image) == 1    # many accepted per pass
    assert pool._group(10**6, 10, 100, per_image) == 9      # few: every offset at once
    units = pool._next_units(4, 9)
    assert [g for _, _, g in units] == [9] * min(4, len(backgrounds))
    assert all(pool.cursor[q] == 9 for q, _, _ in units)


def test_scan_unit_is_pure(trained, backgrounds):
    params = MiningParams(WIN, scale_factor=1.5, step=3)
    a = scan_unit(trained.model_, backgrounds[1], 11, params=params, seed=3, per_image=5)
    b = scan_unit(trained.model_, backgrounds[1], 11, params=params, seed=3, per_image=5)
    assert np.array_equal(a.windows, b.windows) and a.n_scanned == b.n_scanned > 0
    assert len(a.windows) == min(5, a.n_accepted)


def test_pool_reuse_negatives_accepted_by_previous_stages_brute_force(trained, backgrounds):
    stages = trained.stages_
    assert len(stages) >= 2
    params = MiningParams(WIN, scale_factor=1.5, step=3)
    pool = NegativePool(backgrounds, params, seed=4, n=200)
    carried = 0
    for k in range(len(stages) + 1):
        model = build_cascade_model(trained.pool_, stages[:k]) if k else None
        res = pool.fill(model, stage=k)
        assert len(res.windows) > 0
        if k:
            carried += res.n_from_pool
            # every negative of stage k passes stages 0..k-1, by plain evaluation; the flat
            # windows the detector's sigma gate refuses never enter the pool
            assert _brute_accepts(trained.pool_, stages[:k], res.windows).all()
            inner = res.windows[:, 1:-1, 1:-1].reshape(len(res.windows), -1)
            assert (inner.std(axis=1) > 9.9).all()  # the detector's gate: sigma > 10
        assert res.n_from_pool <= res.pool_checked
    assert carried > 0  # the pool was reused
    assert 0 < res.supply


def test_trainer_pool_resume_gives_identical_cascade(faces12, backgrounds, tmp_path):
    kw = dict(window_shape=WIN, features="haar", num_stages=3, num_pos=100, num_neg=200,
              min_hit_rate=0.99, max_false_alarm=0.5, seed=7, max_weak_count=6,
              mining={"scale_factor": 1.5, "batch": 4})
    full = CascadeTrainer(**kw).fit(faces12, backgrounds, output_dir=tmp_path / "a")
    events = []
    CascadeTrainer(**kw).fit(faces12, backgrounds, output_dir=tmp_path / "b", max_new_stages=1)
    assert len(list((tmp_path / "b").glob("negatives-*.npy"))) == 1
    resumed = CascadeTrainer(**kw, callback=lambda e, i: events.append(e)).fit(
        faces12, backgrounds, output_dir=tmp_path / "b", resume=True)
    assert stages_digest(full.stages_) == stages_digest(resumed.stages_)
    assert len(full.stages_) >= 2
    # pool reuse happened and is recorded; every stage reports its own peak memory
    assert any(m["n_from_pool"] > 0 for m in full.mining_[1:])
    assert all(s.info["peak_rss"] > 0 for s in full.stages_)
    assert {"stage", "mining", "round", "stage_done", "log"} <= set(events)


def test_resuming_a_run_stopped_at_its_false_alarm_target(faces12, backgrounds, tmp_path):
    # the run stops after mining a stage whose fresh windows meet the target; its checkpoint
    # keeps that stage's full pool. Resumed as it is, it stops again for the same reason (its
    # fill scans nothing new: the saved mining judges the target), not with one stage more
    kw = dict(window_shape=WIN, features="haar", num_pos=100, num_neg=200, min_hit_rate=0.99,
              max_false_alarm=0.5, seed=7, max_weak_count=6,
              mining={"scale_factor": 1.5, "batch": 4})
    first = CascadeTrainer(num_stages=4, **kw).fit(faces12, backgrounds, output_dir=tmp_path / "a")
    assert first.stop_["reason"] == "false_alarm_target" and len(first.stages_) == 3
    assert first.mining_[-1]["n_found"] == 200  # the pool was full: the case resumed below
    events = []
    again = CascadeTrainer(num_stages=4, **kw, callback=lambda e, i: events.append(e)).fit(
        faces12, backgrounds, output_dir=tmp_path / "a", resume=True)
    assert again.stop_ == first.stop_ and again.mining_ == first.mining_
    assert stages_digest(again.stages_) == stages_digest(first.stages_)
    assert "mining" not in events  # finished with the same settings: nothing scanned
    # a setting that may change on resume, and does not touch a full pool: the fill finds the
    # saved pool full and scans nothing, and the saved mining judges the target again
    other = CascadeTrainer(num_stages=4, min_neg=150, **kw).fit(
        faces12, backgrounds, output_dir=tmp_path / "a", resume=True)
    assert other.stop_["reason"] == "false_alarm_target"
    assert stages_digest(other.stages_) == stages_digest(first.stages_)
    # more stages asked for: a lower target, and the run goes on as a longer one would have
    longer = CascadeTrainer(num_stages=5, **kw).fit(faces12, backgrounds,
                                                    output_dir=tmp_path / "b")
    more = CascadeTrainer(num_stages=5, **kw).fit(faces12, backgrounds, output_dir=tmp_path / "a",
                                                  resume=True)
    assert len(longer.stages_) > 3
    assert stages_digest(more.stages_) == stages_digest(longer.stages_)


def test_false_alarm_target_of_trees_is_divided_by_their_depth_and_says_so(faces12, backgrounds):
    # traincascade's "required leaf false alarm rate": with trees of depth 2 the run stops at
    # 0.5 ** 4 / 2, and the message names that formula, not 0.5 ** 4 alone
    tr = CascadeTrainer(window_shape=WIN, features="haar", num_stages=4, num_pos=100, num_neg=200,
                        min_hit_rate=0.99, max_false_alarm=0.5, seed=7, max_weak_count=6,
                        weak_learner="tree", max_depth=2,
                        mining={"scale_factor": 1.5, "batch": 4}).fit(faces12, backgrounds)
    assert tr.stop_["reason"] == "false_alarm_target"
    assert tr.mining_[-1]["acceptance_ratio"] <= 0.5 ** 4 / 2
    assert f"<= {0.5 ** 4 / 2:.3g} (max_false_alarm^num_stages / max_depth)" in tr.stop_["message"]


def test_fewer_stages_train_the_first_stages_of_a_longer_run(faces12, backgrounds, tmp_path):
    """A stage depends only on the stages before it, so ``num_stages=k`` trains the first
    ``k`` stages of any longer run with the same settings (what validating or shipping a
    cascade's first stages relies on)."""
    kw = dict(window_shape=WIN, features="haar", num_pos=100, num_neg=200, min_hit_rate=0.99,
              max_false_alarm=0.5, seed=7, max_weak_count=6,
              mining={"scale_factor": 1.5, "batch": 4})
    full = CascadeTrainer(num_stages=3, **kw).fit(faces12, backgrounds,
                                                  output_dir=tmp_path / "a")
    short = CascadeTrainer(num_stages=2, **kw).fit(faces12, backgrounds,
                                                   output_dir=tmp_path / "b")
    assert len(full.stages_) == 3 and len(short.stages_) == 2
    assert stages_digest(short.stages_) == stages_digest(full.stages_[:2])
    # the saved models agree window for window: the faces and random patches
    from vjboost.cascade.runner import cascade_accepts

    rng = np.random.default_rng(0)
    windows = np.concatenate([faces12, rng.integers(0, 256, (200, *WIN), dtype=np.uint8)])
    a_ok, a_n = cascade_accepts(short.model_, windows)
    b_ok, b_n = cascade_accepts(full.model_.truncated(2), windows)
    np.testing.assert_array_equal(a_ok, b_ok)
    np.testing.assert_array_equal(a_n, b_n)
    assert 0 < a_ok.sum() < len(windows)


def test_trainer_refuses_a_damaged_pool(faces12, backgrounds, tmp_path):
    kw = dict(window_shape=WIN, num_stages=3, num_pos=150, num_neg=300, seed=7,
              max_weak_count=5, mining={"scale_factor": 1.5})
    CascadeTrainer(**kw).fit(faces12, backgrounds, output_dir=tmp_path, max_new_stages=1)
    f = next(tmp_path.glob("negatives-*.npy"))
    np.save(f, np.zeros((3, *WIN), np.uint8))
    with pytest.raises(ValueError, match="negative pool"):
        CascadeTrainer(**kw).fit(faces12, backgrounds, output_dir=tmp_path, resume=True)


def test_run_clock_eta():
    clock = RunClock(6, 0.5, 0.5 ** 6)
    assert math.isnan(clock.eta(0))
    clock.add(mining=2.0, other=10.0, acceptance_ratio=0.25)
    # ratio 0.25 -> target 1/64 in 4 more halvings, fewer than the 5 stages left
    assert clock.stages_left(1) == 4
    assert clock.eta(1) == pytest.approx(4 * 10 + 2 * (2 + 4 + 8 + 16))
    # a mining budget of 10x the last stage's windows caps each stage's mining at 10x its time
    capped = RunClock(6, 0.5, 0.5 ** 6, max_scanned=10_000)
    capped.add(mining=2.0, other=10.0, acceptance_ratio=0.25, scanned=1_000)
    assert capped.eta(1) == pytest.approx(4 * 10 + 4 + 8 + 16 + 20)


def test_fill_stops_at_the_mining_budget_between_batches(trained, backgrounds):
    """With ``max_scanned`` the fill stops after the batch in which the scanned windows reach
    the budget, and what it kept is what an unbudgeted fill finds first (same schedule), with
    threads or an executor alike."""
    model = build_cascade_model(trained.pool_, trained.stages_)
    params = MiningParams(WIN, scale_factor=1.5, step=3, batch=3)
    full = NegativePool(backgrounds, params, seed=4, n=400).fill(model, threads=1)
    assert full.n_scanned > 2000 and not full.budget_reached
    budget = full.n_scanned // 3
    seen: list[int] = []
    pool = NegativePool(backgrounds, params, seed=4, n=400)
    res = pool.fill(model, max_scanned=budget, threads=1,
                    progress=lambda p: seen.append(p.scanned))
    assert res.budget_reached and not res.exhausted
    assert len(res.windows) < 400 and len(res.windows) < len(full.windows)
    # the stop is at the first batch that reached the budget
    assert res.n_scanned == seen[-1] >= budget > seen[-2]
    np.testing.assert_array_equal(res.windows, full.windows[:len(res.windows)])
    other = NegativePool(backgrounds, params, seed=4, n=400).fill(
        model, max_scanned=budget, executor=_ShuffledExecutor())
    np.testing.assert_array_equal(other.windows, res.windows)
    assert other.n_scanned == res.n_scanned
    # the progress estimate never runs past the budget
    p = MiningProgress(1, 10, 400, budget - 50, 5, 1.0, 10**6, budget)
    assert p.windows_needed == 50
    # the next fill of the same pool goes on where this one stopped (nothing scanned twice)
    more = pool.fill(model, max_scanned=budget, threads=1)
    assert more.n_from_pool == len(res.windows) and more.n_scanned >= budget


@pytest.mark.slow
def test_trainer_trains_late_stages_on_fewer_negatives_within_a_mining_budget(
        faces12, backgrounds, tmp_path):
    """A stage whose budget runs out trains on the negatives found when there are at least
    ``min_neg``; without ``min_neg`` training stops there, says why, and resumes with one."""
    kw = dict(window_shape=WIN, features="haar", num_stages=8, num_pos=100, num_neg=200,
              min_hit_rate=0.99, max_false_alarm=0.5, seed=7, max_weak_count=6,
              mining={"scale_factor": 1.5, "batch": 2})
    free = CascadeTrainer(**kw).fit(faces12, backgrounds)
    scanned = [m["n_scanned"] for m in free.mining_]
    budget = max(scanned[:2]) + 1  # stages 0 and 1 never reach it; a later one does
    lean = CascadeTrainer(**kw, mining_budget=budget, min_neg=20).fit(
        faces12, backgrounds, output_dir=tmp_path / "lean")
    bound = [m["budget_reached"] for m in lean.mining_]
    assert any(bound)
    k = bound.index(True)
    assert k >= 2 and len(lean.stages_) > k
    # the stages before the budget binds are the unbudgeted run's, stage k trains on fewer
    assert stages_digest(lean.stages_[:k]) == stages_digest(free.stages_[:k])
    found = lean.mining_[k]["n_found"]
    assert 20 <= found < 200 and lean.mining_[k]["n_scanned"] >= budget
    assert lean.report_["stages"][k]["negatives"] == found
    assert lean.report_["config"]["mining_budget"] == budget
    strict = CascadeTrainer(**kw, mining_budget=budget).fit(
        faces12, backgrounds, output_dir=tmp_path / "strict")
    assert strict.stop_["reason"] == "mining_budget" and len(strict.stages_) == k
    assert "mining budget reached" in strict.stop_reason_
    # the budget and min_neg may change on resume: stage k goes on from the windows it found
    # (and the cursors where its scan stopped, so nothing is scanned twice) with the floor
    again = CascadeTrainer(**kw, mining_budget=budget, min_neg=20).fit(
        faces12, backgrounds, output_dir=tmp_path / "strict", resume=True)
    assert len(again.stages_) > k
    assert stages_digest(again.stages_[:k]) == stages_digest(lean.stages_[:k])
    assert again.mining_[k]["n_from_pool"] == strict.mining_[k]["n_found"]
    assert again.mining_[k]["n_found"] >= found
    with pytest.raises(ValueError, match="min_neg"):
        CascadeTrainer(**kw, min_neg=201).fit(faces12, backgrounds)


@pytest.mark.slow
def test_mixed_pool_trains_saves_reloads_and_detects(backgrounds, tmp_path):
    from skimage.data import lfw_subset

    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.model_io import load_model, save_model

    imgs = (lfw_subset()[:100] * 255).round().astype(np.uint8)
    faces20 = np.stack([cv2.resize(im, (20, 20), interpolation=cv2.INTER_AREA) for im in imgs])
    tr = CascadeTrainer(window_shape=(20, 20), features="haar,mblbp,hog,channels",
                        sampler="laminating", weak_learner="tree", max_depth=2, num_stages=2,
                        num_pos=90, num_neg=200, max_weak_count=4, seed=0,
                        mining={"scale_factor": 1.5})
    tr.fit(faces20, backgrounds, output_dir=tmp_path)
    save_model(tr.model_, tmp_path / "model.json")
    back = load_model(tmp_path / "model.json")
    img = cv2.imread(backgrounds[0], cv2.IMREAD_GRAYSCALE)
    a = CascadeDetector(tr.model_, min_neighbors=0, grouping="none").raw_windows(img)
    b = CascadeDetector(back, min_neighbors=0, grouping="none").raw_windows(img)
    assert np.array_equal(a[0], b[0]) and np.allclose(a[1], b[1])
    # the report counts, per stage, the features of each family the learners read
    for k, row in enumerate(tr.report_["stages"]):
        used = sum(int(c) for c in row["families"].values())
        ids = {int(g) for lr in tr.stages_[k].learners for g in lr.feature}
        assert used == len(ids)




@pytest.mark.slow
def test_trainer_with_an_executor_gives_the_same_cascade(faces12, backgrounds):
    kw = dict(window_shape=WIN, features="haar", num_stages=3, num_pos=100, num_neg=200,
              min_hit_rate=0.99, seed=3, max_weak_count=6, mining={"scale_factor": 1.5})
    a = CascadeTrainer(**kw).fit(faces12, backgrounds)
    b = CascadeTrainer(**kw).fit(faces12, backgrounds, executor=_ShuffledExecutor())
    assert stages_digest(a.stages_) == stages_digest(b.stages_)


def test_mining_uses_the_gate_it_is_given_and_the_model_declares_it(faces12, backgrounds,
                                                                    trained, tmp_path):
    """Negatives are mined behind ``MiningParams.min_std`` (OpenCV's 10 by default) and a
    cascade trained with a gate declares it, so that it detects with the gate it learnt."""
    faded = []
    for p in backgrounds:
        img = cv2.imread(p, cv2.IMREAD_GRAYSCALE)
        q = tmp_path / Path(p).name
        cv2.imwrite(str(q), (img / 4 + 90).astype(np.uint8))  # a quarter of the contrast
        faded.append(str(q))
    model = build_cascade_model(trained.pool_, trained.stages_[:1])

    def inner_std(windows):
        return windows[:, 1:-1, 1:-1].reshape(len(windows), -1).std(axis=1)

    sig = {}
    for gate in (None, 3.0):
        params = MiningParams(WIN, scale_factor=1.5, step=3, min_std=gate)
        res = NegativePool(faded, params, seed=4, n=300).fill(model, threads=1)
        sig[gate] = inner_std(res.windows)
    assert (sig[None] > 9.99).all() and (sig[3.0] > 2.99).all()
    assert ((sig[3.0] > 3) & (sig[3.0] <= 10)).sum() > 20  # windows only the lower gate mines
    with pytest.raises(ValueError, match="min_std"):
        MiningParams(WIN, min_std=-1)
    kw = dict(window_shape=WIN, features="haar", num_stages=2, num_pos=100, num_neg=150,
              seed=7, max_weak_count=4)
    tr = CascadeTrainer(**kw, mining={"scale_factor": 1.5, "min_std": 3.0}).fit(faces12, faded)
    assert tr.model_.params["min_std"] == 3.0
    assert CascadeDetector(tr.model_).min_std == 3.0
    assert "min_std" not in CascadeTrainer(**kw, mining={"scale_factor": 1.5}).fit(
        faces12, faded).model_.params
