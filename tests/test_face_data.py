"""tools/face_data.py: windows, mappings, groups and splits; a tiny build on the shared data."""

from __future__ import annotations

import csv
import doctest
import importlib.util
import json
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _load():
    if str(TOOLS) not in sys.path:  # face_data imports tools/_cli.py
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location("face_data", TOOLS / "face_data.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["face_data"] = mod
    spec.loader.exec_module(mod)
    return mod


fd = _load()


def test_doctests():
    res = doctest.testmod(fd, verbose=False)
    assert res.attempted >= 6 and res.failed == 0


# ------------------------------------------------------------------------------------------------
# pure functions against independent references
# ------------------------------------------------------------------------------------------------


@given(st.lists(st.floats(-50, 50), min_size=2, max_size=2),
       st.lists(st.floats(1, 80), min_size=2, max_size=2),
       st.lists(st.floats(-50, 50), min_size=2, max_size=2),
       st.lists(st.floats(1, 80), min_size=2, max_size=2))
def test_relation_round_trip(txy, twh, rxy, rwh):
    target, ruler = np.array(txy + twh), np.array(rxy + rwh)
    back = fd.apply_relation(fd.relation(target, ruler), ruler)
    np.testing.assert_allclose(back, target, rtol=1e-9, atol=1e-9)


def test_relation_is_invariant_to_scale_and_shift():
    target, ruler = np.array([3.0, 5.0, 10.0, 12.0]), np.array([1.0, 2.0, 8.0, 8.0])
    moved = lambda b: np.array([7 + 2.5 * b[0], -4 + 2.5 * b[1], 2.5 * b[2], 2.5 * b[3]])  # noqa
    np.testing.assert_allclose(fd.relation(moved(target), moved(ruler)),
                               fd.relation(target, ruler))


def _bilinear_reference(img, rect, size):
    """Brute force: sample the continuous image at each output pixel centre (edges clamped)."""
    x, y, side = rect
    k = side / size
    out = np.zeros((size, size))
    h, w = img.shape
    for v in range(size):
        for u in range(size):
            sx = min(max(x + (u + 0.5) * k - 0.5, 0), w - 1)
            sy = min(max(y + (v + 0.5) * k - 0.5, 0), h - 1)
            x0, y0 = int(np.floor(sx)), int(np.floor(sy))
            x1, y1 = min(x0 + 1, w - 1), min(y0 + 1, h - 1)
            fx, fy = sx - x0, sy - y0
            out[v, u] = ((1 - fx) * (1 - fy) * img[y0, x0] + fx * (1 - fy) * img[y0, x1]
                         + (1 - fx) * fy * img[y1, x0] + fx * fy * img[y1, x1])
    return out


@pytest.mark.parametrize("rect", [(2.3, 1.7, 6.0), (-3.2, -2.5, 9.5), (4.0, 5.0, 10.0)])
def test_cut_window_matches_bilinear_reference_when_enlarging(rect):
    # a smooth image: OpenCV snaps positions to 1/32 px, which costs gradient/32 grey levels
    yy, xx = np.mgrid[0:12, 0:14]
    img = np.rint(128 + 100 * np.sin(0.3 * xx + 0.2) * np.cos(0.25 * yy)).astype(np.uint8)
    got = fd.cut_window(img, rect, 16).astype(float)
    ref = _bilinear_reference(img.astype(float), rect, 16)
    assert np.abs(got - ref).max() <= 1.5  # fixed-point weights and positions, rounding


def test_cut_window_shrinking_keeps_flat_images_flat_and_replicates_edges():
    flat = np.full((40, 40), 77, np.uint8)
    assert (fd.cut_window(flat, (-10, -10, 60, 60), 16) == 77).all()
    ramp = np.tile(np.arange(20, dtype=np.uint8) * 10, (20, 1))
    w = fd.cut_window(ramp, (-8, 0, 20, 20), 20)
    assert (w[:, :8] == 0).all()  # the left columns lie past the border: the edge value


def test_window_of_and_outside_share():
    np.testing.assert_allclose(fd.window_of([4, 4, 24, 24], 0.75), [0, 0, 32, 32])
    np.testing.assert_allclose(fd.window_of([0, 0, 30, 20], 0.5), [-15, -20, 60, 60])
    assert fd.outside_share([0, 0, 10, 10], (10, 10)) == 0
    assert fd.outside_share([-5, 0, 10, 10], (10, 10)) == pytest.approx(0.5)
    assert fd.outside_share([-5, -5, 20, 20], (10, 10)) == pytest.approx(0.75)


def test_paste_blends_only_the_feathered_border():
    """A pasted window is the face's own pixels inside its feathered border: with a thin
    feather a detector that reads context around the face sees the face's surroundings, not
    the scene fading in."""
    scene = np.zeros((60, 60), np.uint8)
    face = np.full((36, 36), 200, np.float32)
    for feather, inner in ((1 / 6, 6), (0.05, 2)):
        img = scene.copy()
        fd._paste(img, face, (10, 10, 36, 36), feather=feather)
        core = img[10 + inner:46 - inner, 10 + inner:46 - inner]
        assert (core == 200).all(), feather  # whole inside the border
        assert img[10, 10] < 50 and (img[:10] == 0).all()  # blended at the edge, scene outside
        ring = img[10 + inner - 1, 10 + inner:46 - inner]
        assert (ring < 200).all() and (ring > 0).all()  # the border's innermost row is blended


def test_paste_leaves_protected_boxes_as_they_are():
    scene = np.full((60, 60), 50, np.uint8)
    face = np.full((36, 36), 200, np.float32)
    fd._paste(scene, face, (10, 10, 36, 36), feather=0.05, protect=[(30.5, 4.0, 20.0, 20.0)])
    assert (scene[4:24, 30:50] == 50).all()  # the protected box, widened to whole pixels
    assert (scene[24:44, 12:44] == 200).all() and (scene[12:30, 12:30] == 200).all()


def _crowd_windows(n=5):
    """Windows whose 24×24 face box is 200 and whose context is 30."""
    w = np.full((n, 36, 36), 30, np.uint8)
    w[:, 6:30, 6:30] = 200
    return w


def test_crowd_scene_keeps_every_face_whole_apart_and_inside():
    for seed in range(10):
        bg = np.full((360, 520), 128, np.uint8)
        scene, boxes = fd.crowd_scene(bg, _crowd_windows(), (6, 6, 24, 24),
                                      np.random.default_rng(seed))
        assert (bg == 128).all() and scene.shape == bg.shape and len(boxes) >= 3
        h, w = scene.shape
        assert (boxes[:, :2] >= 0).all() and (boxes[:, 0] + boxes[:, 2] <= w).all()
        assert (boxes[:, 1] + boxes[:, 3] <= h).all()
        side = boxes[:, 2]
        assert side.min() >= 20 * 0.92 ** 3 * 0.9 - 1 and side.max() <= 56 * 1.1 + 1
        for i, (x, y, bw, bh) in enumerate(boxes):
            for q in np.delete(boxes, i, 0):  # no two face boxes share a pixel area
                assert (min(x + bw, q[0] + q[2]) <= max(x, q[0])
                        or min(y + bh, q[1] + q[3]) <= max(y, q[1]))
            # the face is whole: no later window's context (30) or the scene (128) inside it
            core = scene[int(np.ceil(y)) + 2:int(y + bh) - 2, int(np.ceil(x)) + 2:int(x + bw) - 2]
            assert core.size and (core == 200).all(), (seed, i)
        # a crowd: each face has a neighbour within 1.5 of its side, centre to centre
        c = boxes[:, :2] + boxes[:, 2:] / 2
        d = np.linalg.norm(c[:, None] - c[None], axis=2) + np.eye(len(c)) * 1e9
        assert (d.min(1) <= 1.5 * side * 1.1 / 0.9 + 1).all()


def test_people_tiles_use_every_body_once_at_one_scale_per_image():
    bodies = np.stack([np.full((92, 64), 10 + i, np.uint8) for i in range(23)])
    tiles = fd.people_tiles(bodies, np.random.default_rng(4))
    seen = []
    for t in tiles:
        assert t.shape[0] <= 480 and t.shape[1] <= 640
        # each tile's cells: one body each, resized (flat bodies stay flat)
        levels = [v for v in np.unique(t).tolist() if v > 0]
        seen += levels
        th = t.shape[0] // max(1, round(t.shape[0] / (92 * 1.5)))
        assert 92 * 1.5 - 1 <= th <= 92 * 3.5 + 1
    assert sorted(seen) == list(range(10, 33))


def _components_reference(images, min_corr):
    n = len(images)
    z = images.reshape(n, -1).astype(float)
    z = z - z.mean(1, keepdims=True)
    z /= np.linalg.norm(z, axis=1, keepdims=True) + 1e-6
    adj = (z @ z.T) >= min_corr
    label = -np.ones(n, int)
    k = 0
    for i in range(n):
        if label[i] >= 0:
            continue
        stack = [i]
        label[i] = k
        while stack:
            a = stack.pop()
            for b in np.flatnonzero(adj[a]):
                if label[b] < 0:
                    label[b] = k
                    stack.append(b)
        k += 1
    return label


def test_near_duplicate_groups_match_connected_components():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, (12, 8, 8)).astype(np.float64)
    # chains of noisy copies: 0 -> copies of 0, etc.
    imgs = np.concatenate([base, base[:5] + rng.normal(0, 12, (5, 8, 8)),
                           base[:3] * 0.5 + 40]).clip(0, 255).astype(np.uint8)
    got = fd.near_duplicate_groups(imgs, 0.9)
    ref = _components_reference(imgs, 0.9)
    # same partition (labels may differ by a permutation)
    assert len(set(zip(got.tolist(), ref.tolist(), strict=True))) == len(set(ref.tolist()))
    assert got[0] == got[12] and got[0] == got[17]  # noisy copy and contrast change linked
    assert len(set(got[:12].tolist())) == 12


@given(st.lists(st.integers(0, 30), min_size=1, max_size=200), st.floats(0.01, 0.9),
       st.integers(0, 2**31 - 1))
def test_split_groups_holds_out_whole_groups(groups, frac, seed):
    g = np.asarray(groups)
    m = fd.split_groups(g, frac, np.random.default_rng(seed))
    assert set(g[m].tolist()).isdisjoint(g[~m].tolist())
    assert m.sum() >= frac * g.size - 1e-9
    np.testing.assert_array_equal(m, fd.split_groups(g, frac, np.random.default_rng(seed)))


def test_person_of_clips():
    assert fd.person_of("05s-1.avi") == "05" == fd.person_of("05-2.avi")
    assert fd.person_of("00-1.avi") == "00"


class _FakeRulers:
    """Rulers that return fixed boxes, so that the teacher's rule is checked on its own."""

    def __init__(self, dlib_rows, alt2_rows):
        self.d = np.asarray(dlib_rows, np.float64).reshape(-1, 5)
        self.o = np.asarray(alt2_rows, np.float64).reshape(-1, 5)

    def dlib(self, gray, upsample, min_score=0.0):
        return self.d

    def opencv(self, gray, min_size, max_size=0, scale=1.05, neighbors=3):
        return self.o


@pytest.mark.parametrize("dlib_rows, alt2_rows, outcome, box", [
    ([], [], "none", None),
    ([], [[10, 10, 40, 40, 5.0]], "alt2_only", None),
    ([[10, 10, 40, 40, 0.8]], [], "dlib_only", [10, 10, 40, 40]),
    ([[10, 10, 40, 40, 0.2], [60, 60, 30, 30, 0.4]], [], "dlib_only", [60, 60, 30, 30]),
    ([[10, 10, 40, 40, 0.8]], [[14, 10, 40, 40, 5.0]], "agreed", [12, 10, 40, 40]),
    ([[10, 10, 40, 40, 0.2]], [[14, 10, 40, 40, 5.0]], "low_score", [12, 10, 40, 40]),
    ([[10, 10, 40, 40, 0.8]], [[90, 90, 40, 40, 5.0]], "disagree", None),
])
def test_teacher_outcomes_and_boxes(dlib_rows, alt2_rows, outcome, box):
    ident = np.array([0.0, 0.0, 1.0, 1.0])  # rulers' boxes are the target boxes
    t = fd.Teacher(_FakeRulers(dlib_rows, alt2_rows), {"dlib": ident, "alt2": ident}, 0.5, 0.5)
    got, b, _ = t.label(np.zeros((120, 160), np.uint8))
    assert got == outcome
    assert (b is None) if box is None else np.allclose(b, box)


def test_box_lines_round_clip_and_drop_slivers(tmp_path):
    cv2.imwrite(str(tmp_path / "a.png"), np.zeros((50, 80), np.uint8))
    rows = [["a.png", 10.4, 5.6, 20.2, 30.0],   # inside: rounded
            ["a.png", -6.0, 40.0, 20.0, 20.0],  # clipped to the image on two sides
            ["a.png", 77.0, 10.0, 20.0, 20.0]]  # 3 px left inside: dropped
    assert fd.box_lines(tmp_path, rows) == ["image,x,y,w,h", "a.png,10,6,21,30",
                                            "a.png,0,40,14,10"]


def test_heads_copy_writes_frames_boxes_and_the_face_free_images(tmp_path):
    det, out = tmp_path / "det", tmp_path / "heads_view"
    (det / "scenes").mkdir(parents=True)
    cv2.imwrite(str(det / "scenes" / "empty_0000.png"), np.full((30, 40), 7, np.uint8))
    (det / "empty.txt").write_text("scenes/empty_0000.png\n")
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (120, 160), dtype=np.uint8) for _ in range(2)]
    heads = {"frames": frames, "boxes": np.array([[10, 12, 40, 40], [150, 100, 30, 30.0]]),
             "meta": [("03-1.avi", 4, "03"), ("03-1.avi", 8, "03")]}
    h = fd.heads_copy(det, out, heads)
    assert (out / "images.txt").read_text().split() == [
        "heads/03-1_0004.png", "heads/03-1_0008.png", "scenes/empty_0000.png"]
    assert (out / "boxes.csv").read_text().split() == [
        "image,x,y,w,h", "heads/03-1_0004.png,10,12,40,40", "heads/03-1_0008.png,150,100,10,20"]
    assert (cv2.imread(str(out / "heads/03-1_0008.png"), cv2.IMREAD_GRAYSCALE) == frames[1]).all()
    assert (cv2.imread(str(out / "scenes/empty_0000.png"), cv2.IMREAD_GRAYSCALE) == 7).all()
    assert fd.heads_copy(det, tmp_path / "again", heads) == h
    heads["boxes"] = heads["boxes"] + 1
    assert fd.heads_copy(det, tmp_path / "moved", heads) != h


def test_heads_only_without_a_manifest_is_one_line(tmp_path):
    (tmp_path / "val" / "det").mkdir(parents=True)
    (tmp_path / "val" / "det" / "images.txt").write_text("")
    with pytest.raises(SystemExit) as e:
        fd.main(["--out", str(tmp_path), "--heads-only"])
    msg = str(e.value)
    assert msg.startswith("face_data: --heads-only:") and "manifest.json" in msg
    assert "\n" not in msg and not (tmp_path / "val" / "det_heads").exists()
    (tmp_path / "manifest.json").write_text('{"params": {}}')  # a build's, cut short
    with pytest.raises(SystemExit, match="missing or incomplete"):
        fd.main(["--out", str(tmp_path), "--heads-only"])


def test_unknown_extra_outcome_is_one_line(tmp_path):
    p = _tiny(tmp_path)
    p.nrc_extra = ("dlib_only", "alt2_only")
    with pytest.raises(SystemExit, match="--nrc-extra: unknown outcome 'alt2_only'"):
        fd._nrc(p, None, np.random.default_rng(0), log=lambda *a: None)
    with pytest.raises(SystemExit, match="--nrc-extra: unknown outcome 'agreed'"):
        fd.main(["--out", str(tmp_path / "x"), "--nrc-extra", "low_score,agreed"])
    assert not (tmp_path / "x").exists()  # refused before anything was built


# ------------------------------------------------------------------------------------------------
# a tiny build on the real data
# ------------------------------------------------------------------------------------------------


def _tiny(out: Path, seed: int = 0):
    return fd.Params(out=out, seed=seed, n_webfaces=160, n_cbcl=120, n_persons=2,
                     clips_per_person=1, frame_step=16, n_backgrounds=60, ruler_sample=12,
                     model_check_n=8, scenes=6, empty_scenes=3, crowd_scenes=4, val_persons=1)


@pytest.fixture(scope="module")
def tiny_build(tmp_path_factory):
    shared = fd.SHARED
    if not (shared / "data" / "faces").is_dir():
        pytest.skip(f"shared data folder not found at {shared} (set VJBOOST_SHARED)")
    out = tmp_path_factory.mktemp("faces")
    m = fd.build(_tiny(out), log=lambda *a: None)
    return out, m


@pytest.mark.shared_data
def test_no_group_in_both_splits_and_counts_add_up(tiny_build):
    out, m = tiny_build
    for src in fd.SOURCES:
        tr = np.load(out / "train" / f"{src}.npz")
        va = np.load(out / "val" / f"{src}.npz")
        assert set(tr["group"].tolist()).isdisjoint(va["group"].tolist()), src
        assert len(tr["images"]) == m["counts"][src]["train"]
        assert len(va["images"]) == m["counts"][src]["val"]
        assert tr["images"].shape[1:] == (32, 32) and tr["images"].dtype == np.uint8
        assert (tr["source"] == src).all()
    allp = np.load(out / "train" / "positives.npz")
    assert len(allp["images"]) == sum(m["counts"][s]["train"] for s in fd.SOURCES)
    assert m["counts"]["webfaces"]["val"] > 0 and m["counts"]["cbcl"]["val"] > 0
    bg_tr = (out / "backgrounds_train.txt").read_text().split()
    bg_va = (out / "backgrounds_val.txt").read_text().split()
    assert set(bg_tr).isdisjoint(bg_va) and len(bg_tr) + len(bg_va) == 60
    assert not any("cmu-mit" in b for b in bg_tr + bg_va)


@pytest.mark.shared_data
def test_validation_boxes_lie_inside_their_images(tiny_build):
    out, m = tiny_build
    det = out / "val" / "det"
    listed = (det / "images.txt").read_text().split()
    assert len(listed) == m["val_det"]["images"]
    with open(det / "boxes.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == m["val_det"]["boxes"] > 0
    for r in rows:
        assert r["image"] in listed
        h, w = cv2.imread(str(det / r["image"]), cv2.IMREAD_GRAYSCALE).shape
        x, y, bw, bh = (int(r[k]) for k in "xywh")
        assert x >= 0 and y >= 0 and x + bw <= w and y + bh <= h and bw >= 4
    empty = set((det / "empty.txt").read_text().split())
    assert empty and not empty & {r["image"] for r in rows}
    from vjboost.io import read_annotations

    ann = read_annotations(det / "boxes.csv")  # the reader vjeval uses
    assert sum(len(v) for v in ann.values()) == len(rows)


@pytest.mark.shared_data
def test_heads_view_is_rewritten_alike_and_apart_from_the_agreed_frames(tiny_build):
    out, m = tiny_build
    heads, det = out / "val" / "det_heads", out / "val" / "det"
    names = (heads / "heads.txt").read_text().split()
    assert len(names) == m["val_det"]["heads_frames"]
    empty = (det / "empty.txt").read_text().split()
    assert (heads / "images.txt").read_text().split() == names + empty
    assert not set(names) & {n.replace("nrc/", "heads/")
                             for n in (det / "nrc.txt").read_text().split()}
    held_out = {fd.person_of(n.split("/")[1]) for n in names}
    assert held_out <= set(m["nrc"]["val_persons"])
    assert fd.heads_view(out, log=lambda *a: None) == (m["hashes"]["val/det_heads"], len(names))


@pytest.mark.shared_data
def test_framing_mapping_is_sane(tiny_build):
    _, m = tiny_build
    fr = m["framing"]
    # the target box is the pos-crop of the WebFaces crop; the rulers' boxes hold most of it
    for k, r in fr["rulers"].items():
        assert r["found_webfaces"] > 0.6, k
        tx, ty, tw, th = r["target_rel_ruler"]
        assert 0.7 < tw < 1.2 and abs(tw - th) < 0.03, k  # dlib's boxes: square +- 1 px
        assert -0.1 < tx < 0.3 and -0.1 < ty < 0.3, k
    # CBCL's tight 19x19 crop: the target box is centred on it and somewhat larger
    x, y, w, h = m["target_box"]["cbcl_crop_fractions"]
    assert 1.0 < w < 1.35 and abs((x + w / 2) - 0.5) < 0.08 and abs((y + h / 2) - 0.5) < 0.08
    assert m["padded_mean"]["webfaces"] == 0.0 and m["padded_mean"]["cbcl"] > 0.3
    # the shipped model, trained on this convention, finds its box where the mapping put it
    for src in ("webfaces", "cbcl"):
        c = m["model_check"][src]
        assert c["found_iou50"] >= 0.8, src
        dx, dy, dw, _ = c["detection_rel_target"]
        assert abs(dx) < 0.12 and abs(dy) < 0.12 and 0.8 < dw < 1.15, src


@pytest.mark.shared_data
@pytest.mark.slow
def test_build_is_deterministic(tiny_build, tmp_path):
    out, m = tiny_build
    m2 = fd.build(_tiny(tmp_path), log=lambda *a: None)
    assert m2["hashes"] == m["hashes"]
    assert m2["counts"] == m["counts"]
    assert json.dumps(m2["framing"]) == json.dumps(m["framing"])
    assert (tmp_path / "val" / "det" / "boxes.csv").read_text() == \
        (out / "val" / "det" / "boxes.csv").read_text()


@pytest.mark.shared_data
def test_scanned_copy_keeps_names_boxes_and_sizes_and_degrades(tiny_build, tmp_path):
    out, _ = tiny_build
    det, scan = out / "val" / "det", out / "val" / "det_scan"
    assert (scan / "boxes.csv").read_text() == (det / "boxes.csv").read_text()
    names = (det / "images.txt").read_text().split()
    assert (scan / "images.txt").read_text().split() == names
    changed = 0
    for n in names:
        a = cv2.imread(str(det / n), cv2.IMREAD_GRAYSCALE)
        b = cv2.imread(str(scan / n), cv2.IMREAD_GRAYSCALE)
        assert a.shape == b.shape
        changed += int(np.abs(a.astype(int) - b.astype(int)).mean() > 0.5)
    assert changed == len(names)  # at least one operation on every image
    again = fd.scan_copy(det, tmp_path / "scan", seed=0)  # seeded: the same images again
    assert again == fd.scan_copy(det, tmp_path / "scan2", seed=0)
    assert again != fd.scan_copy(det, tmp_path / "scan3", seed=1)


def test_scan_like_loses_detail_but_keeps_the_mean_level_close():
    rng = np.random.default_rng(3)
    # a sharp checkerboard: every operation except the brightness shift lowers its local contrast
    g = ((np.indices((64, 96)).sum(0) // 4) % 2 * 160 + 40).astype(np.uint8)
    lap = [np.abs(cv2.Laplacian(fd.scan_like(g, np.random.default_rng(s)), cv2.CV_32F)).mean()
           for s in range(20)]
    assert np.median(lap) < np.abs(cv2.Laplacian(g, cv2.CV_32F)).mean()
    means = [fd.scan_like(g, rng).mean() for _ in range(20)]
    assert abs(np.mean(means) - g.mean()) < 20


def test_vary_like_moves_each_box_with_its_face_and_keeps_it_inside():
    # a dark image with one bright square per box: after turning, each square's centroid must be
    # the moved box's centre (boxes follow their faces), and every box stays in the image
    for seed in range(12):
        g = np.full((90, 140), 20, np.uint8)
        boxes = np.array([[10, 12, 24, 24], [90, 50, 30, 30]])
        for x, y, w, h in boxes:
            g[y + h // 2 - 3:y + h // 2 + 3, x + w // 2 - 3:x + w // 2 + 3] = 250
        out, moved = fd.vary_like(g, boxes, np.random.default_rng(seed))
        assert out.shape == g.shape and moved.shape == boxes.shape
        assert (moved[:, 2:] == boxes[:, 2:]).all()
        assert (moved[:, :2] >= 0).all() and (moved[:, 0] + moved[:, 2] <= 140).all()
        assert (moved[:, 1] + moved[:, 3] <= 90).all()
        for x, y, w, h in moved:
            win = out[max(0, y - 5):y + h + 5, max(0, x - 5):x + w + 5].astype(float)
            yy, xx = np.nonzero(win > 120)
            cy = yy.mean() + max(0, y - 5)
            cx = xx.mean() + max(0, x - 5)
            assert abs(cx - (x + w / 2 - 0.5)) < 1.5 and abs(cy - (y + h / 2 - 0.5)) < 1.5


def test_relight_darkens_one_side_of_the_face_and_leaves_the_far_scene():
    g = np.full((200, 200), 100, np.uint8)
    box = (80, 80, 40, 40)
    for seed in range(8):
        lit = fd.relight(g, box, np.random.default_rng(seed)).astype(float)
        face = lit[80:120, 80:120]
        assert face.max() - face.min() > 30  # one side brighter than the other
        assert np.abs(lit[:15, :15] - 100).max() <= 3  # 3.5 box sides away: within 3 %


@pytest.mark.shared_data
def test_varied_copy_keeps_names_sizes_and_one_box_per_face(tiny_build, tmp_path):
    out, _ = tiny_build
    det, vary = out / "val" / "det", out / "val" / "det_vary"
    names = (det / "images.txt").read_text().split()
    assert (vary / "images.txt").read_text().split() == names
    rows = (det / "boxes.csv").read_text().split()
    moved = (vary / "boxes.csv").read_text().split()
    assert len(moved) == len(rows)
    assert [r.split(",")[0] for r in moved] == [r.split(",")[0] for r in rows]
    assert [r.split(",")[3:] for r in moved] == [r.split(",")[3:] for r in rows]  # sizes kept
    for n in names:
        a = cv2.imread(str(det / n), cv2.IMREAD_GRAYSCALE)
        assert cv2.imread(str(vary / n), cv2.IMREAD_GRAYSCALE).shape == a.shape
    assert fd.vary_copy(det, tmp_path / "v", seed=0) == fd.vary_copy(det, tmp_path / "w", seed=0)


@pytest.mark.shared_data
def test_crowd_view_holds_crowds_and_the_face_free_images(tiny_build, tmp_path):
    out, m = tiny_build
    det, crowd = out / "val" / "det", out / "val" / "det_crowd"
    crowds = (crowd / "crowds.txt").read_text().split()
    empty = (crowd / "empty.txt").read_text().split()
    assert len(crowds) == 4 and empty == (det / "empty.txt").read_text().split()
    assert (crowd / "images.txt").read_text().split() == crowds + empty
    for n in empty:  # the face-free images as they are in val/det
        assert (cv2.imread(str(crowd / n)) == cv2.imread(str(det / n))).all()
    with open(crowd / "boxes.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["image"] for r in rows} == set(crowds) and len(rows) >= 3 * len(crowds)
    # blended as the build's scenes are (no --feather: the whole margin around the box)
    kw = dict(scenes=4, feather=(1 - m["params"]["box_frac"]) / 2)
    assert m["hashes"]["val/det_crowd"] == fd.crowd_copy(out, tmp_path / "c", seed=0, **kw)
    assert m["hashes"]["val/det_crowd"] != fd.crowd_copy(out, tmp_path / "d", seed=1, **kw)
    assert m["hashes"]["val/det_crowd"] != fd.crowd_copy(out, tmp_path / "e", seed=0,
                                                          scenes=4, feather=0.05)


@pytest.mark.shared_data
def test_people_split_by_photograph_and_their_view_adds_face_free_images(tiny_build):
    out, m = tiny_build
    tr, va = (np.load(out / split / "people.npz") for split in ("train", "val"))
    assert set(tr["group"].tolist()).isdisjoint(va["group"].tolist())
    assert tr["images"].shape[1:] == (fd.BODY_ROWS[1] - fd.BODY_ROWS[0], 64)
    assert len(tr["images"]) + len(va["images"]) == 2 * 1208
    assert m["counts"]["people"] == {"train": len(tr["images"]), "val": len(va["images"])}
    det, people = out / "val" / "det", out / "val" / "det_people"
    names = (det / "images.txt").read_text().split()
    added = (people / "people.txt").read_text().split()
    assert (people / "images.txt").read_text().split() == names + added
    assert (people / "boxes.csv").read_text() == (det / "boxes.csv").read_text()
    pixels = sum(cv2.imread(str(people / n), cv2.IMREAD_GRAYSCALE).size for n in added)
    assert pixels >= len(va["images"]) * 92 * 64 * 1.5 ** 2 * 0.99


@pytest.mark.shared_data
@pytest.mark.slow
def test_extra_teacher_outcomes_add_training_frames_and_leave_validation_alone(tiny_build,
                                                                              tmp_path):
    """Two builds of their own (every fourth frame, so that the extra outcomes occur); the
    tiny build's fixture only skips without the shared data."""
    p = _tiny(tmp_path)
    p.nrc_extra = ("low_score", "dlib_only")
    p.frame_step = 4
    base = _tiny(tmp_path / "base")
    base.frame_step = 4
    m0 = fd.build(base, log=lambda *a: None)
    m1 = fd.build(p, log=lambda *a: None)
    val_keys = [k for k in m0["hashes"] if k.startswith("val")]
    assert {k: m1["hashes"][k] for k in val_keys} == {k: m0["hashes"][k] for k in val_keys}
    tr0 = np.load(tmp_path / "base" / "train" / "nrc.npz")
    tr1 = np.load(tmp_path / "train" / "nrc.npz")
    assert set(tr0["teacher"].tolist()) <= {"agreed"}
    assert set(tr1["teacher"].tolist()) <= {"agreed", "low_score", "dlib_only"}
    assert (tr1["teacher"] != "agreed").any() and len(tr1["images"]) > len(tr0["images"])
    assert set(np.load(tmp_path / "val" / "nrc.npz")["teacher"].tolist()) == {"agreed"}
    assert m1["nrc"]["train_kept"]["agreed"] + sum(
        m1["nrc"]["train_kept"][k] for k in p.nrc_extra) == len(tr1["images"])
    # the held-out persons' heads of those outcomes are a view of their own, alike in both
    assert m0["val_det"]["heads_frames"] == m1["val_det"]["heads_frames"] > 0
