"""Loading positives from folders, annotations, .vec and .npz."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from vjboost.cascade.positives import Jitter, jittered_cut, load_positives, resize_to_window
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


def test_colour_npz_reads_as_a_folder_of_the_same_crops(tmp_path, rng):
    # RGB crops (as PIL and scikit-image give them): grey by OpenCV's weights, then resized;
    # the same crops as PNG files (grey decoded by libpng's own fixed-point weights) agree
    # within one grey level
    rgb = rng.integers(0, 256, (4, 30, 20, 3), dtype=np.uint8)
    folder = tmp_path / "crops"
    folder.mkdir()
    for i, im in enumerate(rgb):
        Image.fromarray(im).save(folder / f"{i}.png")
    np.savez(tmp_path / "rgb.npz", images=rgb)
    want = np.stack([resize_to_window(cv2.cvtColor(im, cv2.COLOR_RGB2GRAY), (24, 16))
                     for im in rgb])
    got = load_positives(tmp_path / "rgb.npz", (24, 16))
    np.testing.assert_array_equal(got.samples, want)
    from_png = load_positives(folder, (24, 16)).samples.astype(int)
    assert np.abs(from_png - want).max() <= 1
    # RGBA too, and max_count before the conversion
    rgba = np.concatenate([rgb, np.full((4, 30, 20, 1), 255, np.uint8)], axis=3)
    np.savez(tmp_path / "rgba.npz", images=rgba)
    np.testing.assert_array_equal(
        load_positives(tmp_path / "rgba.npz", (24, 16), max_count=2).samples, want[:2])
    for bad in (rng.integers(0, 256, (2, 8, 8, 2), dtype=np.uint8),
                rng.random((2, 8, 8, 3)).astype(np.float32)):
        np.savez(tmp_path / "bad.npz", images=bad)
        with pytest.raises(ValueError, match=r"bad.npz: 'images' must be .* RGB\(A\)"):
            load_positives(tmp_path / "bad.npz", (8, 8))


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


# ---- jittered copies ----------------------------------------------------------------------------


def _bilinear_reflect(img: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Brute-force bilinear sampling with mirrored borders (BORDER_REFLECT_101)."""
    h, w = img.shape

    def refl(i, n):
        i = np.abs(i)
        return np.where(i > n - 1, 2 * (n - 1) - i, i)

    x0, y0 = np.floor(xs).astype(int), np.floor(ys).astype(int)
    fx, fy = xs - x0, ys - y0
    f = img.astype(np.float64)
    v00 = f[refl(y0, h), refl(x0, w)]
    v01 = f[refl(y0, h), refl(x0 + 1, w)]
    v10 = f[refl(y0 + 1, h), refl(x0, w)]
    v11 = f[refl(y0 + 1, h), refl(x0 + 1, w)]
    return (v00 * (1 - fx) * (1 - fy) + v01 * fx * (1 - fy) + v10 * (1 - fx) * fy
            + v11 * fx * fy)


@settings(max_examples=40, deadline=None)
@given(angle=st.floats(-20, 20), scale=st.floats(0.8, 1.25), sx=st.floats(-0.1, 0.1),
       sy=st.floats(-0.1, 0.1), seed=st.integers(0, 2**16))
def test_jittered_cut_equals_brute_force_sampling(angle, scale, sx, sy, seed):
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.integers(0, 256, (30, 34), dtype=np.uint8), (5, 5), 1.5)
    rect = (7.0, 5.0, 16.0, 18.0)  # patch of the rect's own size: no resize after the warp
    got = jittered_cut(img, rect, (18, 16), np.array([angle, scale, sx, sy]))
    u, v = np.meshgrid(np.arange(16.0), np.arange(18.0))
    t = np.deg2rad(angle)
    cx, cy = 7 + 7.5 + sx * 16, 5 + 8.5 + sy * 18
    du, dv = u - 7.5, v - 8.5
    xs = cx + scale * (np.cos(t) * du - np.sin(t) * dv)
    ys = cy + scale * (np.sin(t) * du + np.cos(t) * dv)
    want = _bilinear_reflect(img, xs, ys)
    # OpenCV interpolates with weights quantised to 1/32 (INTER_BITS = 5) and rounds: a little
    # over one grey level off at most on this blurred image (1.016 seen)
    assert np.abs(got.astype(np.float64) - want).max() <= 1.25


def test_jittered_cut_exact_cases(rng):
    img = rng.integers(0, 256, (21, 21), dtype=np.uint8)
    whole = (0.0, 0.0, 21.0, 21.0)
    np.testing.assert_array_equal(jittered_cut(img, whole, (21, 21)), img)
    np.testing.assert_array_equal(jittered_cut(img, whole, (21, 21), np.array([90.0, 1, 0, 0])),
                                  np.rot90(img))
    shifted = jittered_cut(img, (4.0, 4.0, 10.0, 10.0), (10, 10), np.array([0, 1, 0.2, -0.3]))
    np.testing.assert_array_equal(shifted, img[1:11, 6:16])  # +2 px in x, -3 px in y


def test_jitter_copies_order_determinism_and_mirror(tmp_path, rng):
    s = rng.integers(0, 256, (5, 36, 36), dtype=np.uint8)
    np.savez(tmp_path / "p.npz", images=s)
    crop = (6 / 36, 7 / 36, 24 / 36, 24 / 36)
    plain = load_positives(tmp_path / "p.npz", (24, 24), crop=crop).samples
    j = Jitter(3, seed=4)
    got = load_positives(tmp_path / "p.npz", (24, 24), crop=crop, jitter=j).samples
    assert got.shape == (5 * 4, 24, 24)
    np.testing.assert_array_equal(got[:5], plain)  # the plain positives first, unchanged
    again = load_positives(tmp_path / "p.npz", (24, 24), crop=crop, jitter=j).samples
    np.testing.assert_array_equal(got, again)
    other = load_positives(tmp_path / "p.npz", (24, 24), crop=crop,
                           jitter=Jitter(3, seed=5)).samples
    assert not np.array_equal(got[5:], other[5:])
    # copies of positive k are got[5 + 3k : 8 + 3k], drawn from the seed's stream in order
    r = j.rng()
    d = [j.draw(3, r) for _ in range(5)]
    np.testing.assert_array_equal(got[5 + 3 * 2 + 1],
                                  jittered_cut(s[2], (6.0, 7.0, 24.0, 24.0), (24, 24), d[2][1]))
    m = load_positives(tmp_path / "p.npz", (24, 24), crop=crop, jitter=j, mirror=True).samples
    np.testing.assert_array_equal(m[20:], got[:, :, ::-1])
    few = load_positives(tmp_path / "p.npz", (24, 24), crop=crop, jitter=j, max_count=2).samples
    np.testing.assert_array_equal(few, np.concatenate([got[:2], got[5:11]]))


def test_jitter_of_annotated_boxes_sees_the_surroundings(tmp_path):
    img = np.full((60, 60), 200, np.uint8)
    img[20:40, 20:40] = 50  # the object; the rest of the image is bright
    cv2.imwrite(str(tmp_path / "scene.png"), img)
    (tmp_path / "info.dat").write_text("scene.png 1 20 20 20 20\n")
    j = Jitter(1, max_angle=0, max_scale=0, max_shift=0.25, seed=1)
    got = load_positives(tmp_path / "info.dat", (20, 20), jitter=j).samples
    assert (got[0] == 50).all()
    assert (got[1] == 200).any()  # a shifted copy shows the bright surroundings, not a mirror


@pytest.mark.parametrize("kw", [{"copies": 0}, {"copies": 1.5}, {"copies": 1, "max_angle": -1},
                                {"copies": 1, "max_scale": float("nan")},
                                {"copies": 1, "max_shift": 0.7}])
def test_jitter_rejects_bad_settings(kw):
    with pytest.raises(ValueError, match=next(k for k in ("copies", "max_angle", "max_scale",
                                                          "max_shift") if k in kw and (
            k != "copies" or len(kw) == 1))):
        Jitter(**kw)


def test_gamma_jitter_is_a_grey_level_curve(rng):
    img = rng.integers(0, 256, (12, 12), dtype=np.uint8)
    rect = (0.0, 0.0, 12.0, 12.0)
    got = jittered_cut(img, rect, (12, 12), np.array([0, 1, 0, 0, 2.0]))
    want = np.round(255 * (img / 255.0) ** 2.0).astype(np.uint8)
    np.testing.assert_array_equal(got, want)
    geo = Jitter(2, seed=1)
    gam = Jitter(2, seed=1, max_gamma=0.5)
    a, b = geo.draw(4, geo.rng()), gam.draw(4, gam.rng())
    np.testing.assert_array_equal(a[:, :4], b[:, :4])  # same geometry for the same seed
    assert (a[:, 4] == 1).all() and (b[:, 4] != 1).all()
    assert ((b[:, 4] >= 1 / 1.5) & (b[:, 4] <= 1.5)).all()


def test_boxes_cut_by_the_left_or_top_border_are_skipped(tmp_path, rng):
    # COCO (like VOC, YOLO, LabelMe, CVAT) keeps boxes that start left of or above the image,
    # objects cut by its border: they are skipped as those past the right or bottom edge are,
    # never sliced from a negative corner
    img = rng.integers(0, 256, (50, 60), dtype=np.uint8)
    cv2.imwrite(str(tmp_path / "scene.png"), img)
    coco = {"images": [{"id": 1, "file_name": "scene.png"}],
            "categories": [{"id": 1, "name": "car"}],
            "annotations": [
                {"id": k + 1, "image_id": 1, "category_id": 1, "bbox": b, "iscrowd": 0}
                for k, b in enumerate([[-10, 5, 30, 12], [5, -4, 30, 12], [10, 5, 30, 12]])]}
    (tmp_path / "ann.json").write_text(json.dumps(coco))
    ps = load_positives(tmp_path / "ann.json", (12, 30))
    assert ps.samples.shape == (1, 12, 30)
    np.testing.assert_array_equal(ps.samples[0], img[5:17, 10:40])
    assert len(ps.skipped) == 2
    assert "box [-10, 5, 30, 12] outside the 60x50 image" in ps.skipped[0]
    assert "box [5, -4, 30, 12] outside the 60x50 image" in ps.skipped[1]


def test_aspect_is_the_median_proportion_of_the_sources_as_cut(tmp_path, rng):
    for k, (h, w) in enumerate([(40, 100), (40, 100), (30, 90)]):
        cv2.imwrite(str(tmp_path / f"c{k}.png"), rng.integers(0, 256, (h, w), dtype=np.uint8))
    assert load_positives(tmp_path, (20, 50)).aspect == 2.5
    with pytest.warns(UserWarning, match="as cut by crop, are 1.00:1"):
        assert load_positives(tmp_path, (20, 50), crop=(0.3, 0, 0.4, 1)).aspect == 1.0
    s = rng.integers(0, 256, (3, 19, 19), dtype=np.uint8)
    np.savez(tmp_path / "p.npz", images=s)
    assert load_positives(tmp_path / "p.npz", (19, 19), mirror=True).aspect == 1.0


def test_positives_of_other_proportions_than_the_window_are_warned_about(tmp_path, rng):
    """load_positives (and so vjboost.train) warns when every positive would be stretched to
    the window: the crops' median width:height, the window's, and a window of theirs; a window
    within ASPECT_TOLERANCE of them, or a crop that gives its proportions, warns of nothing."""
    import warnings

    import vjboost

    for k in range(4):
        cv2.imwrite(str(tmp_path / f"p{k}.png"), rng.integers(0, 256, (40, 100), dtype=np.uint8))
    with pytest.warns(UserWarning, match=r"are 2\.50:1 .* the 24x24 window is 1\.00:1: .* "
                                         r"e\.g\. 60x24 \(width x height\)"):
        load_positives(tmp_path, (24, 24))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_positives(tmp_path, (20, 50))
        load_positives(tmp_path, (20, 45))   # 2.25:1, within the tolerance
        load_positives(tmp_path, (24, 24), crop=(0.3, 0, 0.4, 1))
    from vjboost.cascade.trainer import TrainingError

    with pytest.warns(UserWarning, match="stretched"), pytest.raises(TrainingError):
        vjboost.train(tmp_path, [str(tmp_path / "missing.png")], window_shape=(24, 24),
                      num_stages=1)
