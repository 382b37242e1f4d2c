"""Window-level evaluation of cascade models agrees with the image detector."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data

from vjboost.cascade.detector import CascadeDetector
from vjboost.cascade.model_io import load_model
from vjboost.cascade.window_eval import cascade_accepts, model_feature_values, stage_scores


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


@pytest.mark.parametrize("n_stages", [2, 5])
def test_haar_decisions_match_detector(rng, n_stages):
    model = _cascade("haarcascade_frontalface_default.xml").truncated(n_stages)
    wins = _windows(rng, model.width, 120)
    acc, n_passed = cascade_accepts(model, wins)
    ref = _detector_accepts(model, wins)
    assert acc.sum() > 5  # the test means something
    # float rounding of v/sqrt(nf) vs v*float32(1/sqrt(nf)) may flip a borderline window
    assert np.mean(acc == ref) >= 0.98
    assert np.all(n_passed[acc] == n_stages)


def test_lbp_decisions_match_detector_exactly(rng):
    from skimage.data import lbp_frontal_face_cascade_filename

    with pytest.warns(UserWarning):
        model = load_model(lbp_frontal_face_cascade_filename()).truncated(3)
    wins = _windows(rng, model.width, 80)
    acc, _ = cascade_accepts(model, wins)
    np.testing.assert_array_equal(acc, _detector_accepts(model, wins))
    v = model_feature_values(model, wins)
    assert v.shape == (len(model.features), 80) and v.max() <= 255 and v.min() >= 0
    assert stage_scores(model, wins).shape == (3, 80)
