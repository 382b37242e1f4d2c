"""Coarse-to-fine scanning (``CascadeDetector(coarse_to_fine=K)``) against a brute-force
replay: the whole cascade on every grid window near a coarse window that passes K stages."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage import data

import vjboost
from vjboost.cascade import CascadeDetector


def _expected(model, img, k):
    kw = dict(min_neighbors=0, grouping="none", mode="clean", skip_after_stage0=False,
              threads=1, coarse_to_fine=None)
    full = CascadeDetector(model, **kw)
    _, scores, pos = full.raw_windows(img, return_positions=True)
    _, _, pk = CascadeDetector(model.truncated(k), **kw).raw_windows(img, return_positions=True)
    levels = {lv.index: lv for lv in full.pyramid((img.shape[1], img.shape[0])).levels}
    excited = {(s, x, y) for s, x, y in pk.tolist()
               if (x - levels[s].x0) % (2 * levels[s].step) == 0
               and (y - levels[s].y0) % (2 * levels[s].row_step) == 0}
    keep = [i for i, (s, x, y) in enumerate(pos.tolist())
            if any((s, x + dx * levels[s].step, y + dy * levels[s].row_step) in excited
                   for dx in (-1, 0, 1) for dy in (-1, 0, 1))]
    return pos[keep], scores[keep]


@pytest.mark.parametrize(("k", "threads", "batch", "bands"),
                         [(1, 1, None, None), (4, 1, None, None), (6, 2, None, None),
                          ("all", 1, None, None), (6, 1, 1 << 30, None), (6, 1, 100_000, None),
                          (6, 1, 100_000, 0)])
def test_coarse_to_fine_matches_brute_force(k, threads, batch, bands, monkeypatch):
    import vjboost.cascade.scan as S

    if batch is not None:  # every level in one batch of planes, or large levels in bands
        monkeypatch.setattr(S, "BATCH_BYTES", batch)
    if bands is not None:  # each band in its own level's layout (very large images)
        monkeypatch.setattr(S, "BAND_LAYOUT", bands)
    model = vjboost.load_model("vjboost:frontalface")
    k = model.n_stages if k == "all" else k
    img = data.astronaut()[::2, ::2, 0].copy()
    det = CascadeDetector(model, min_neighbors=0, grouping="none", mode="clean",
                          threads=threads, coarse_to_fine=k)
    _, scores, pos = det.raw_windows(img, return_positions=True)
    exp_pos, exp_scores = _expected(model, img, k)
    assert len(exp_pos) > 0
    np.testing.assert_array_equal(pos, exp_pos)
    np.testing.assert_array_equal(scores, exp_scores)


@pytest.mark.parametrize("name", ["vjboost:car_side_lbp", "vjboost:car_side"])
def test_coarse_to_fine_of_cascades_off_the_row_pass_matches_brute_force(name):
    # MB-LBP codes (and their mix with rectangle sums) run the window kernel, not the list
    # pass, on the neighbourhoods
    from vjboost.cascade.prefilter import suits
    from vjboost.cascade.runner import CascadeRunner

    model = vjboost.load_model(name).truncated(8)
    assert not suits(CascadeRunner(model).compiled)
    img = data.astronaut()[::2, ::2, 0].copy()
    det = CascadeDetector(model, min_neighbors=0, grouping="none", mode="clean", threads=1,
                          coarse_to_fine=3)
    _, scores, pos = det.raw_windows(img, return_positions=True)
    exp_pos, exp_scores = _expected(model, img, 3)
    assert len(exp_pos) > 0
    np.testing.assert_array_equal(pos, exp_pos)
    np.testing.assert_array_equal(scores, exp_scores)


@settings(max_examples=60, deadline=None)
@given(w=st.integers(24, 160), h=st.integers(24, 120), budget=st.sampled_from([None, 20_000]),
       share=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_fine_windows_are_the_coarse_hits_neighbourhoods(w, h, budget, share, seed):
    # the second pass's windows against a set computation over the grid: the grid windows
    # within one grid step of a coarse hit, none of the hits, each once, on the band's own rows
    from vjboost.cascade.runner import _coarse_rows, _fine_windows, _items
    from vjboost.cascade.scan import Pyramid

    pyr = Pyramid((20, 20), (w, h), scale_factor=1.2)
    rng = np.random.default_rng(seed)
    for batch in pyr.batches(3, budget, context=1):
        t = batch._table
        own = np.array([lv.ny if lv.own_ny is None else lv.own_ny for lv in batch.levels])
        lvl, xs, ys, steps = _coarse_rows(t)
        items, n_out = _items(batch, lvl, xs, ys, t[lvl, 5] - xs, 2 * steps)
        hits = np.flatnonzero(rng.random(n_out) < share)
        fk, fx, fy, fpos, ck, cx, cy, cpos, keep = _fine_windows(
            t, batch.origins, batch.cols, batch.out_offsets, batch.n_out, own, items, lvl, xs,
            ys, 2 * steps, hits)
        coarse, hit = set(), set(hits.tolist())
        for j, (_, n, step, o) in enumerate(items.tolist()):
            for i in range(o, o + (n + step - 1) // step):
                if i in hit:
                    coarse.add((int(lvl[j]), int(xs[j] + (i - o) * step), int(ys[j])))
        grid = {(k, int(t[k, 1] + c * t[k, 3]), int(t[k, 2] + r * t[k, 4]))
                for k in range(len(t)) for r in range(t[k, 7]) for c in range(t[k, 6])}
        near = {(k, x + dx * t[k, 3], y + dy * t[k, 4]) for k, x, y in coarse
                for dx in (-1, 0, 1) for dy in (-1, 0, 1)}
        expected = {(k, x, y) for k, x, y in (near & grid) - coarse if y < own[k]}
        got = list(zip(fk.tolist(), fx.tolist(), fy.tolist(), strict=True))
        assert len(got) == len(set(got)) and set(got) == expected
        kept = {(k, x, y) for k, x, y in coarse if y < own[k]}
        assert set(zip(ck.tolist(), cx.tolist(), cy.tolist(), strict=True)) == kept
        assert keep.sum() == len(kept) == len(ck)
        for k, x, y, q in [*zip(fk, fx, fy, fpos, strict=True), *zip(ck, cx, cy, cpos,
                                                                     strict=True)]:
            assert q == (batch.origins[k, 0] + y) * batch.cols + batch.origins[k, 1] + x


def test_coarse_to_fine_declared_and_checked():
    model = vjboost.load_model("vjboost:frontalface_haar")
    assert CascadeDetector(model).coarse_to_fine == 0          # declares nothing: OpenCV's scan
    model.params["coarse_to_fine"] = 3
    assert CascadeDetector(model).coarse_to_fine == 3
    assert CascadeDetector(model, coarse_to_fine=None).coarse_to_fine == 0
    for bad in (-1, 99, 2.5, True):
        with pytest.raises(ValueError, match="coarse_to_fine"):
            CascadeDetector(model, coarse_to_fine=bad)
    model.params["coarse_to_fine"] = "x"
    with pytest.raises(ValueError, match="params"):
        CascadeDetector(model)


def test_the_default_model_declares_it_and_exhaustive_scans_ignore_it():
    from vjboost.cascade.adapt import StreamCollector
    from vjboost.cascade.negatives import MiningParams, mining_detector

    model = vjboost.load_model("vjboost:frontalface")
    k = model.params["coarse_to_fine"]
    assert CascadeDetector(model).coarse_to_fine == k > 0
    # a shorter copy declares all its stages at most (it stays a valid model to scan)
    assert model.truncated(3).params["coarse_to_fine"] == 3
    assert CascadeDetector(model.truncated(3)).coarse_to_fine == 3
    assert model.truncated(k + 1).params["coarse_to_fine"] == k
    # hard-negative mining and online adaptation's candidates need every window
    assert mining_detector(model, MiningParams(window=(20, 20))).coarse_to_fine == 0
    assert StreamCollector(model)._candidates.coarse_to_fine == 0


@pytest.mark.parametrize(("size", "layouts"), [((640, 480), 2), ((1920, 1080), 2),
                                               ((8000, 6000), None)])
def test_bands_share_one_layout_within_bounds(size, layouts):
    # the batches of small levels share one layout and the bands of large ones a second (the
    # cascade's records are bound once per layout), unless that layout's planes would exceed
    # BAND_LAYOUT budgets: then each band keeps its level's row length
    from vjboost.cascade.scan import BAND_LAYOUT, BATCH_BYTES, Pyramid

    batches = Pyramid((24, 24), size, scale_factor=1.1).batches(10, context=1)
    limit = BATCH_BYTES // 40
    assert any(len(b.levels) == 1 and b.held[0, 0] > 0 for b in batches)  # bands
    shapes = {(b.rows, b.cols) for b in batches}
    if layouts is not None:
        assert len(shapes) == layouts
    else:
        assert len(shapes) > 2
    assert max(r * c for r, c in shapes) <= BAND_LAYOUT * limit
    for b in batches:  # every level (band) fits its batch's planes
        for lv, (y0, x0), (a, e) in zip(b.levels, b.origins, b.held, strict=True):
            assert 0 <= y0 + a and y0 + e + 1 <= b.rows and x0 + lv.width + 1 <= b.cols
