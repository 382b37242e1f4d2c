"""Online adaptation of a cascade keeps its structure and re-calibrates its stages."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost.cascade.adapt import adapt_cascade, collect_windows
from vjboost.cascade.model import CascadeModel, HaarFeature, Stage, Tree
from vjboost.cascade.window_eval import cascade_accepts, stage_scores


def _model():
    # left/right halves and top/bottom halves of a 12x12 window
    feats = [
        HaarFeature(((0, 0, 12, 12, -1.0), (0, 0, 6, 12, 2.0))),
        HaarFeature(((0, 0, 12, 12, -1.0), (0, 0, 12, 6, 2.0))),
        HaarFeature(((0, 0, 12, 12, -1.0), (3, 3, 6, 6, 4.0))),
    ]
    stumps = [Tree([0], [-1], [f], [0.0], [-1.0, 1.0]) for f in range(3)]
    stages = [Stage(stumps[:2], -0.5), Stage([stumps[2], stumps[0]], -0.5)]
    return CascadeModel((12, 12), stages, feats)


def _stream(rng, n):
    wins = rng.integers(0, 120, (n, 12, 12)).astype(np.uint8)
    y = np.where(rng.random(n) < 0.5, 1, -1)
    wins[y > 0, :, :6] += 100  # objects: a bright left half
    return wins, y


def test_adaptation_keeps_structure_and_hit_rate(rng):
    model = _model()
    wins, y = _stream(rng, 600)
    adapted, report = adapt_cascade(model, wins, y, order=1, min_hit_rate=0.99)
    assert adapted.n_stages == 2 and adapted.features == model.features
    for s0, s1 in zip(model.stages, adapted.stages, strict=True):
        for t0, t1 in zip(s0.trees, s1.trees, strict=True):
            np.testing.assert_array_equal(t0.feature, t1.feature)
            np.testing.assert_array_equal(t0.threshold, t1.threshold)
    acc, _ = cascade_accepts(adapted, wins)
    assert acc[y > 0].mean() >= 0.98  # two stages of 0.99 each on the stream's positives
    assert report.stages[0]["hit_rate_after"] >= 0.99
    # the informative stump (left half) gets the largest weight in stage 0
    a = report.stages[0]["alpha"]
    assert a[0] > abs(a[1])
    # same input, same model
    again, _ = adapt_cascade(model, wins, y, order=1, min_hit_rate=0.99)
    np.testing.assert_array_equal(stage_scores(again, wins), stage_scores(adapted, wins))


def test_collect_windows_labels_by_overlap(rng):
    gray = rng.integers(0, 255, (60, 80)).astype(np.uint8)
    cands = np.array([[10, 10, 20, 20], [12, 10, 20, 20], [50, 30, 20, 20], [18, 14, 20, 20]])
    w, y = collect_windows(cands, gray, np.array([[10, 10, 20, 20]]), (12, 12))
    np.testing.assert_array_equal(y, [1, 1, -1])  # the third overlaps ambiguously: left out
    assert w.shape == (3, 12, 12)


def test_bad_input(rng):
    wins, y = _stream(rng, 50)
    with pytest.raises(ValueError, match="-1/\\+1"):
        adapt_cascade(_model(), wins, np.zeros(50))
    with pytest.raises(ValueError, match="both positives"):
        adapt_cascade(_model(), wins, np.ones(50))
    with pytest.raises(ValueError, match="labels: 49 labels for 50"):
        adapt_cascade(_model(), wins, y[:49])
