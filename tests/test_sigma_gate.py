"""The detector's σ gate: OpenCV's 10 grey levels unless the model declares its own
(``params["min_std"]``), checked against the windows' standard deviation computed directly."""

from __future__ import annotations

import numpy as np
import pytest

import vjboost
from vjboost.cascade import CascadeDetector


def test_the_gate_is_opencvs_unless_the_model_declares_one():
    model = vjboost.load_model("vjboost:frontalface_haar")
    assert "min_std" not in model.params
    assert CascadeDetector(model).min_std == 10.0
    model.params["min_std"] = 4
    assert CascadeDetector(model).min_std == 4.0
    assert CascadeDetector(model, min_std=0).min_std == 0.0  # an argument overrides it
    for bad in (-1, float("nan"), float("inf"), "x", True, None):
        with pytest.raises(ValueError, match="min_std"):
            CascadeDetector(model, min_std=bad)
    model.params["min_std"] = -3
    with pytest.raises(ValueError, match=r"params\['min_std'\]"):
        CascadeDetector(model)


def test_the_default_model_declares_a_lower_gate_and_copies_keep_it():
    model = vjboost.load_model("vjboost:frontalface")
    assert model.params["min_std"] == 8.0
    assert CascadeDetector(model).min_std == 8.0
    assert CascadeDetector(model.truncated(4)).min_std == 8.0


def test_a_lower_gate_adds_exactly_the_windows_between_the_two_gates():
    """Every window that a gate of 6 adds to a gate of 10 has an inner-area σ in (6, 10]
    (OpenCV's inner area: the window less a one-pixel border), and no other window changes."""
    from skimage.data import astronaut

    model = vjboost.load_model("vjboost:frontalface_haar").truncated(3)
    # a low-contrast copy: a fifth of the contrast, as a faded scan
    gray = astronaut()[:200, :200].mean(axis=2)
    img = np.ascontiguousarray((gray / 5 + 100).astype(np.uint8))
    kw = dict(min_neighbors=0, grouping="none", mode="clean", step=1,
              skip_after_stage0=False, min_size=(20, 20), max_size=(20, 20))
    hi, _ = CascadeDetector(model, min_std=10, **kw).raw_windows(img)
    lo, _ = CascadeDetector(model, min_std=6, **kw).raw_windows(img)
    a, b = {tuple(r) for r in hi.tolist()}, {tuple(r) for r in lo.tolist()}
    assert a < b
    added = sorted(b - a)
    assert len(added) > 10
    for x, y, w, h in added:
        inner = img[y + 1:y + h - 1, x + 1:x + w - 1].astype(np.float64)
        assert 6 - 1e-3 < inner.std() <= 10 + 1e-3
