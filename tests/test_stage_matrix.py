"""The feature matrix carried from stage to stage: every carried matrix equals a fresh
precompute with the run's edges, and a cascade trained with it equals one whose every stage
matrix was computed afresh (and its resumed run)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.boost.binning import carry_columns, precompute
from vjboost.cascade import trainer as trainer_mod
from vjboost.cascade.stage_matrix import StageMatrix
from vjboost.cascade.trainer import CascadeTrainer, make_pool, stages_digest

WIN = (10, 10)


@pytest.fixture(scope="module")
def pool():
    # an ordered family and a categorical one (MB-LBP codes keep their own bins)
    return make_pool(["haar", "mblbp"], WIN, haar_mode="BASIC")


@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**31 - 1))
@settings(max_examples=40, deadline=None)
def test_carry_columns_matches_fancy_indexing(m, n, seed):
    rng = np.random.default_rng(seed)
    old = rng.integers(0, 256, (3, m), dtype=np.uint8)
    src = rng.integers(-1, m, n)
    fresh = rng.integers(0, 256, (3, int((src < 0).sum())), dtype=np.uint8)
    want = np.empty((3, n), np.uint8)
    want[:, src >= 0] = old[:, src[src >= 0]]
    want[:, src < 0] = fresh
    assert (carry_columns(old, src, fresh) == want).all()
    if m == n:  # in place
        got = carry_columns(old, src, fresh, out=old)
        assert got is old and (old == want).all()


def test_carried_matrices_equal_fresh_precompute(pool):
    rng = np.random.default_rng(3)
    seen = rng.integers(0, 256, (300, *WIN), dtype=np.uint8)
    sm = StageMatrix(pool, edge_sample_size=64, threads=2)
    first, how = sm.matrix(seen[:120], seed=11)
    # the first stage's matrix and edges are the per-stage path's (same seed)
    ref = precompute(pool, seen[:120], "uint8", edge_sample_size=64, seed=11, threads=2)
    assert how == "edges placed"
    assert (first.matrix == ref.matrix).all() and (sm.edges_ == ref.edges).all()
    assert sm.sample_.shape == (64, *WIN)
    for k, (keep, new) in enumerate([(80, 40), (120, 0), (10, 110), (60, 90), (0, 30)]):
        old = sm._windows
        idx = rng.permutation(len(old))[:keep]
        # kept windows in a new order, new windows, a duplicate of a kept one
        w = np.concatenate([old[idx], rng.integers(0, 256, (new, *WIN), dtype=np.uint8)])
        if keep:
            w[-1] = w[0]
        w = w[rng.permutation(len(w))]
        got, how = sm.matrix(w, seed=k)
        assert how.startswith("carried")
        fresh = precompute(pool, w, "uint8", edges=sm.edges_, threads=2)
        assert (got.matrix == fresh.matrix).all()
        assert (got.categorical == fresh.categorical).all()
        assert (got.feature_ids == fresh.feature_ids).all()


def test_edges_restored_from_the_saved_sample(pool, tmp_path):
    w = np.random.default_rng(5).integers(0, 256, (90, *WIN), dtype=np.uint8)
    sm = StageMatrix(pool, edge_sample_size=40)
    sm.matrix(w, seed=3)
    state = sm.save(tmp_path)
    again = StageMatrix(pool, edge_sample_size=40)
    again.load(tmp_path, state)
    m, how = again.matrix(w[::-1], seed=99)  # the stage seed no longer matters
    assert how == "computed" and (again.edges_ == sm.edges_).all()
    assert (m.matrix == precompute(pool, w[::-1], edges=sm.edges_).matrix).all()
    np.save(tmp_path / state["file"], np.zeros((3, *WIN), np.uint8))
    with pytest.raises(ValueError, match="does not match"):
        again.load(tmp_path, state)


KW = dict(window_shape=(12, 12), features="haar", num_stages=3, num_pos=100, num_neg=200,
          min_hit_rate=0.99, max_false_alarm=0.5, seed=7, max_weak_count=6,
          mining={"scale_factor": 1.5, "batch": 4}, threads=2)


@pytest.fixture(scope="module")
def carried(faces12, backgrounds):
    return CascadeTrainer(**KW).fit(faces12, backgrounds)


def test_carried_cascade_equals_fresh_matrices(carried, faces12, backgrounds, monkeypatch):
    modes = [s.info["mode"] for s in carried.stages_]
    assert modes[0].endswith("edges placed") and all("carried" in m for m in modes[1:])
    assert len(carried.stages_) == 3
    monkeypatch.setattr(trainer_mod, "StageMatrix",
                        functools.partial(StageMatrix, carry=False))
    fresh = CascadeTrainer(**KW).fit(faces12, backgrounds)
    assert all(s.info["mode"].endswith("computed") for s in fresh.stages_[1:])
    assert stages_digest(fresh.stages_) == stages_digest(carried.stages_)


def test_over_budget_carry_falls_back_to_fresh_matrix(carried, faces12, backgrounds,
                                                      monkeypatch):
    needed = StageMatrix.nbytes_needed

    def carry_too_big(self, windows):
        return 2**60 if self._source is not None else needed(self, windows)

    monkeypatch.setattr(StageMatrix, "nbytes_needed", carry_too_big)
    fell_back = CascadeTrainer(**KW).fit(faces12, backgrounds)
    assert all(s.info["mode"].endswith("computed") for s in fell_back.stages_[1:])
    assert stages_digest(fell_back.stages_) == stages_digest(carried.stages_)


def test_per_stage_edges_share_the_first_stage(carried, faces12, backgrounds):
    per_stage = CascadeTrainer(**{**KW, "num_stages": 1, "bin_edges": "stage"}).fit(
        faces12, backgrounds)
    assert per_stage.stages_[0].info["mode"] == "precomputed uint8"
    assert stages_digest(per_stage.stages_) == stages_digest(carried.stages_[:1])
    with pytest.raises(ValueError, match="bin_edges"):
        CascadeTrainer(**{**KW, "bin_edges": "never"}).fit(faces12, backgrounds)


def test_resume_of_a_checkpoint_with_per_stage_edges(faces12, backgrounds, tmp_path):
    # a checkpoint whose settings have no bin_edges (an earlier version) placed edges per
    # stage: resumed as such, refused with the option to give otherwise
    import json

    kw = {**KW, "num_stages": 2}
    CascadeTrainer(**{**kw, "bin_edges": "stage"}).fit(faces12, backgrounds, output_dir=tmp_path,
                                                      max_new_stages=1)
    path = tmp_path / "checkpoint.json"
    ck = json.loads(path.read_text())
    del ck["config"]["bin_edges"]
    path.write_text(json.dumps(ck))
    with pytest.raises(ValueError, match="bin_edges: checkpoint 'stage' vs now 'run'"):
        CascadeTrainer(**kw).fit(faces12, backgrounds, output_dir=tmp_path, resume=True)
    done = CascadeTrainer(**{**kw, "bin_edges": "stage"}).fit(faces12, backgrounds,
                                                             output_dir=tmp_path, resume=True)
    assert len(done.stages_) == 2
