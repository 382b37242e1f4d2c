"""Coarse-to-fine scanning (``CascadeDetector(coarse_to_fine=K)``) against a brute-force
replay: the whole cascade on every grid window near a coarse window that passes K stages."""

import numpy as np
import pytest
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


@pytest.mark.parametrize(("k", "threads", "batch"), [(1, 1, None), (4, 1, None), (6, 2, None),
                                                     ("all", 1, None), (6, 1, 1 << 30),
                                                     (6, 1, 100_000)])
def test_coarse_to_fine_matches_brute_force(k, threads, batch, monkeypatch):
    import vjboost.cascade.scan as S

    if batch is not None:  # every level in one batch of planes, or each level alone
        monkeypatch.setattr(S, "BATCH_BYTES", batch)
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
