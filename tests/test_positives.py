"""Loading positives from folders, annotations, .vec and .npz."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vjboost.cascade.positives import load_positives, resize_to_window
from vjboost.io import write_vec


def test_folder_resizes_and_counts_unreadable(tmp_path, rng):
    for k in range(3):
        cv2.imwrite(str(tmp_path / f"f{k}.png"), rng.integers(0, 256, (40, 30), dtype=np.uint8))
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8 garbage")
    (tmp_path / "notes.txt").write_text("not an image")
    ps = load_positives(tmp_path, (24, 20))
    assert ps.samples.shape == (3, 24, 20) and ps.samples.dtype == np.uint8
    assert len(ps.skipped) == 1 and "broken.jpg" in ps.skipped[0]
    assert "3 positive(s)" in ps.summary() and "1 skipped" in ps.summary()
    big = cv2.imread(str(tmp_path / "f0.png"), cv2.IMREAD_GRAYSCALE)
    np.testing.assert_array_equal(
        ps.samples[0], cv2.resize(big, (20, 24), interpolation=cv2.INTER_AREA)
    )


def test_annotations_crop_boxes(tmp_path, rng):
    img = rng.integers(0, 256, (50, 60), dtype=np.uint8)
    cv2.imwrite(str(tmp_path / "scene.png"), img)
    (tmp_path / "info.dat").write_text("scene.png 3 0 0 12 12 10 5 24 24 50 40 20 20\n")
    ps = load_positives(tmp_path / "info.dat", (12, 12), mirror=True)
    assert ps.samples.shape == (4, 12, 12)  # third box is outside the image, then mirrored
    np.testing.assert_array_equal(ps.samples[0], img[:12, :12])
    np.testing.assert_array_equal(ps.samples[2], img[:12, :12][:, ::-1])
    np.testing.assert_array_equal(ps.samples[1], resize_to_window(img[5:29, 10:34], (12, 12)))
    assert "outside the 60x50 image" in ps.skipped[0]


def test_vec_and_npz(tmp_path, rng):
    s = rng.integers(0, 256, (5, 19, 19), dtype=np.uint8)
    write_vec(tmp_path / "p.vec", s)
    np.testing.assert_array_equal(load_positives(tmp_path / "p.vec", (19, 19)).samples, s)
    with pytest.raises(ValueError, match="window 24x24 has 576"):
        load_positives(tmp_path / "p.vec", (24, 24))
    np.savez(tmp_path / "p.npz", images=s)
    assert load_positives(tmp_path / "p.npz", (19, 19), max_count=2).samples.shape == (2, 19, 19)


def test_bad_sources(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_positives(tmp_path / "missing", (24, 24))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no image files"):
        load_positives(tmp_path / "empty", (24, 24))
    (tmp_path / "x.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="unknown positives source"):
        load_positives(tmp_path / "x.bin", (24, 24))
    with pytest.raises(ValueError, match="window"):
        load_positives(tmp_path, (0, 24))


@pytest.mark.shared_data
def test_shared_sources(shared_dir):
    d = shared_dir / "data"
    vec = load_positives(d / "traincascade-anchor" / "cbcl_pos_19x19.vec", (19, 19))
    assert vec.samples.shape == (2428, 19, 19)
    web = load_positives(d / "faces" / "caltech_webfaces_36x36.npz", (24, 24), max_count=100)
    assert web.samples.shape == (100, 24, 24)
    cmu = load_positives(d / "cmu-mit" / "faces.csv", (24, 24))
    assert len(cmu.samples) + len(cmu.skipped) == 354


def test_crop_fraction_before_resize(tmp_path, rng):
    s = rng.integers(0, 256, (4, 36, 36), dtype=np.uint8)
    np.savez(tmp_path / "p.npz", images=s)
    crop = (6 / 36, 7 / 36, 24 / 36, 24 / 36)
    got = load_positives(tmp_path / "p.npz", (24, 24), crop=crop).samples
    np.testing.assert_array_equal(got, s[:, 7:31, 6:30])  # same size: cut only, no resampling
    half = load_positives(tmp_path / "p.npz", (12, 12), crop=crop).samples
    np.testing.assert_array_equal(half[1], resize_to_window(s[1, 7:31, 6:30], (12, 12)))
    write_vec(tmp_path / "p.vec", s)  # a .vec with a crop is read at its own size, then cut
    np.testing.assert_array_equal(load_positives(tmp_path / "p.vec", (24, 24), crop=crop).samples,
                                  got)
    img = rng.integers(0, 256, (50, 60), dtype=np.uint8)  # boxes of an annotation file
    cv2.imwrite(str(tmp_path / "scene.png"), img)
    (tmp_path / "info.dat").write_text("scene.png 1 10 5 20 20\n")
    box = load_positives(tmp_path / "info.dat", (10, 10), crop=(0.25, 0.25, 0.5, 0.5)).samples
    np.testing.assert_array_equal(box[0], img[10:20, 15:25])


@pytest.mark.parametrize("crop", [(0.5, 0, 0.6, 1), (-0.1, 0, 0.5, 0.5), (0, 0, 0, 1),
                                  (0, 0, float("nan"), 1), (0, 0, 1)])
def test_crop_must_lie_inside(tmp_path, rng, crop):
    np.savez(tmp_path / "p.npz", images=rng.integers(0, 256, (2, 20, 20), dtype=np.uint8))
    with pytest.raises(ValueError, match="crop"):
        load_positives(tmp_path / "p.npz", (10, 10), crop=crop)
