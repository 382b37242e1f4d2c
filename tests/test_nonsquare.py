"""Non-square windows end to end: training, our model format, OpenCV XML, identical detections."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vjboost.cascade.detector import CascadeDetector
from vjboost.cascade.model_io import load_model, save_model
from vjboost.cascade.opencv_xml import write_opencv_xml
from vjboost.cascade.trainer import CascadeTrainer

WIN = (12, 30)  # (height, width): a 2.5:1 window, as the UIUC cars'


def _car(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A crude side-view 'car': a light body, a darker cabin band, two dark wheels."""
    img = np.full((h, w), rng.uniform(90, 170), np.float32)
    img += rng.normal(0, 6, (h, w))
    body = (int(0.35 * h), int(0.8 * h), int(0.05 * w), int(0.95 * w))
    img[body[0]:body[1], body[2]:body[3]] += rng.uniform(50, 80)
    img[int(0.15 * h):int(0.4 * h), int(0.3 * w):int(0.7 * w)] -= rng.uniform(40, 70)
    for cx in (0.22, 0.78):
        cv2.circle(img, (int(cx * w), int(0.8 * h)), max(1, int(0.17 * h)), 20.0, -1)
    return np.clip(img, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def cars() -> np.ndarray:
    rng = np.random.default_rng(0)
    out = np.stack([_car(rng, *WIN) for _ in range(160)])
    return np.concatenate([out, out[:, :, ::-1]])


def _scene(seed: int) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """A scene (scikit-image's camera) with three cars at three scales, and their boxes."""
    import skimage.data as d

    rng = np.random.default_rng(seed)
    img = cv2.resize(d.camera(), (260, 150), interpolation=cv2.INTER_AREA)
    boxes = []
    for x, y, s in ((10, 10, 1.0), (60, 50, 2.0), (150, 100, 3.0)):
        h, w = round(WIN[0] * s), round(WIN[1] * s)
        img[y:y + h, x:x + w] = _car(rng, h, w)
        boxes.append((x, y, w, h))
    return img, boxes


@pytest.mark.slow
@pytest.mark.parametrize("features", ["haar", "lbp"])
def test_nonsquare_cascade_trains_saves_exports_and_detects_like_cv2(cars, backgrounds, features,
                                                                     tmp_path):
    tr = CascadeTrainer(window_shape=WIN, features=features, num_stages=3, num_pos=250,
                        num_neg=500, min_hit_rate=0.99, max_false_alarm=0.5, seed=0,
                        max_weak_count=15)
    tr.fit(cars, backgrounds)
    model = tr.model_
    assert model.window_shape == WIN and model.width == 30 and model.height == 12
    assert model.feature_type == ("HAAR" if features == "haar" else "LBP")
    # every feature lies inside the 30x12 window (none is clipped to a square)
    save_model(model, tmp_path / "m.json")
    write_opencv_xml(model, tmp_path / "m.xml")
    back = load_model(tmp_path / "m.json")
    assert back == model
    from_xml = load_model(tmp_path / "m.xml")
    assert from_xml.window_shape == WIN
    cc = cv2.CascadeClassifier(str(tmp_path / "m.xml"))
    assert not cc.empty()
    found = 0
    for seed in range(3):
        img, truth = _scene(seed)
        for sf, mn in ((1.1, 0), (1.2, 2)):
            ours = CascadeDetector(back, scale_factor=sf, min_neighbors=mn).detect(img)
            xml = CascadeDetector(from_xml, scale_factor=sf, min_neighbors=mn).detect(img)
            ref = np.asarray(cc.detectMultiScale(img, scaleFactor=sf, minNeighbors=mn)
                             ).reshape(-1, 4)
            key = sorted(map(tuple, ours.boxes.tolist()))
            assert key == sorted(map(tuple, ref.tolist()))
            assert key == sorted(map(tuple, xml.boxes.tolist()))
            # non-square boxes: the aspect of the window at every scale
            if len(ours):
                assert np.all(np.abs(ours.boxes[:, 2] / ours.boxes[:, 3] - 2.5) < 0.2)
        # the cars are accepted where they are, at their scale: the window maps back to
        # non-square boxes correctly at every scale
        raw, _ = CascadeDetector(back, scale_factor=1.1, min_neighbors=0).raw_windows(img)
        for x, y, w, h in truth:
            found += bool(np.any((np.abs(raw[:, 0] - x) <= 0.15 * w)
                                 & (np.abs(raw[:, 1] - y) <= 0.15 * h)
                                 & (np.abs(raw[:, 2] / w - 1) <= 0.12)))
    assert found >= 8  # of 9 cars at scales 1, 2 and 3


def test_vjtrain_nonsquare_window_option():
    from vjboost.cli.train import _parse_window

    assert _parse_window("50x20") == (20, 50)   # WIDTHxHEIGHT -> (height, width)
    assert _parse_window("60x24") == (24, 60)
