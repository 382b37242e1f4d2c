"""Sample streams over arrays, image folders and .vec files: lazy, exact, deterministic."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

import vjboost.boost.streams as streams_mod
from vjboost.boost.streams import (
    ArrayStream,
    FunctionStream,
    ImageFolderStream,
    MixedStream,
    VecStream,
)
from vjboost.io import ImageReadError, VecFormatError, read_vec, write_vec


def _ids_of(x_batch, x_all):
    """Row index in ``x_all`` of every row of ``x_batch`` (rows are unique)."""
    flat = x_all.reshape(len(x_all), -1)
    return np.array([int(np.flatnonzero((flat == r.ravel()).all(1))[0]) for r in x_batch])


def test_array_stream_epochs_cover_every_sample_once(rng):
    x = rng.permutation(50 * 3).reshape(50, 3).astype(np.float32)
    y = np.arange(50) % 2
    s = ArrayStream(x, y, seed=0)
    seen = []
    for n in (7, 13, 30):
        xb, yb = s.take(n)
        ids = _ids_of(xb, x)
        np.testing.assert_array_equal(yb, y[ids])
        seen.extend(ids.tolist())
    assert sorted(seen) == list(range(50))
    assert s.epochs_ == 0
    s.take(1)
    assert s.epochs_ == 1
    # determinism and order
    a = ArrayStream(x, y, seed=5).take(20)[0]
    np.testing.assert_array_equal(a, ArrayStream(x, y, seed=5).take(20)[0])
    assert not np.array_equal(a, ArrayStream(x, y, seed=6).take(20)[0])
    seq = ArrayStream(x, y, shuffle=False)
    np.testing.assert_array_equal(seq.take(60)[0], np.concatenate([x, x[:10]]))


def test_array_stream_from_npy_is_memory_mapped(tmp_path, rng):
    x = rng.integers(0, 255, size=(200, 6, 5), dtype=np.uint8)
    np.save(tmp_path / "x.npy", x)
    s = ArrayStream.from_npy(tmp_path / "x.npy", np.ones(200), seed=1)
    assert isinstance(s.X, np.memmap)
    assert s.sample_shape == (6, 5) and s.n_samples == 200
    xb, _ = s.take(30)
    assert type(xb) is np.ndarray
    np.testing.assert_array_equal(xb, x[_ids_of(xb, x)])
    with pytest.raises(ValueError, match="no such"):
        ArrayStream.from_npy(tmp_path / "missing.npy", np.ones(3))


def test_array_stream_errors(rng):
    with pytest.raises(ValueError, match="y: has 3 labels but there are 4 samples"):
        ArrayStream(np.zeros((4, 2)), np.zeros(3))
    with pytest.raises(TypeError, match="X"):
        ArrayStream([[1, 2]], [1])
    s = ArrayStream(np.zeros((4, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="n"):
        s.take(0)
    with pytest.raises(TypeError, match="shuffle"):
        ArrayStream(np.zeros((4, 2)), np.zeros(4), shuffle=1)


@pytest.fixture
def image_folders(tmp_path, rng):
    imgs = {}
    for name, label in (("pos", 1), ("neg", 0)):
        d = tmp_path / name
        d.mkdir()
        for i in range(6):
            img = rng.integers(0, 255, size=(8, 7), dtype=np.uint8)
            cv2.imwrite(str(d / f"{name}{i}.png"), img)
            imgs[img.tobytes()] = label
        (d / "notes.txt").write_text("not an image")
    return tmp_path, imgs


def test_image_folder_stream_reads_lazily(image_folders, monkeypatch):
    root, imgs = image_folders
    calls = []
    real = streams_mod.read_image
    monkeypatch.setattr(streams_mod, "read_image", lambda p, gray=True: calls.append(p) or
                        real(p, gray=gray))
    s = ImageFolderStream({root / "pos": 1, root / "neg": 0}, seed=0)
    assert s.n_samples == 12 and s.sample_shape == (8, 7)
    assert len(calls) <= 1  # only the first image, for its size
    calls.clear()
    xb, yb = s.take(5)
    assert len(calls) == 5
    for img, label in zip(xb, yb, strict=True):
        assert imgs[img.tobytes()] == label
    xb2, yb2 = s.take(7)
    got = {img.tobytes() for img in np.concatenate([xb, xb2])}
    assert got == set(imgs)
    # a root folder: sorted sub-folders are classes 0, 1
    s2 = ImageFolderStream(root, shuffle=False)
    x2, y2 = s2.take(12)
    assert y2.tolist() == [0] * 6 + [1] * 6  # "neg" < "pos"


def test_image_folder_stream_sizes_and_errors(image_folders, tmp_path):
    root, _ = image_folders
    with pytest.raises(ImageReadError, match="expected 5x5"):
        ImageFolderStream({root / "pos": 1}, window=(5, 5)).take(1)
    s = ImageFolderStream({root / "pos": 1}, window=(5, 4), resize=True)
    assert s.take(3)[0].shape == (3, 5, 4)
    with pytest.raises(ValueError, match="not a folder"):
        ImageFolderStream({tmp_path / "nope": 1})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no image files"):
        ImageFolderStream({tmp_path / "empty": 1})
    with pytest.raises(ValueError, match="resize"):
        ImageFolderStream({root / "pos": 1}, resize=True)


def test_vec_stream_matches_read_vec(tmp_path, rng):
    samples = rng.integers(0, 256, size=(40, 6, 9), dtype=np.uint8)
    write_vec(tmp_path / "p.vec", samples)
    s = VecStream(tmp_path / "p.vec", window=(6, 9), seed=3)
    assert s.n_samples == 40 and s.sample_shape == (6, 9)
    assert isinstance(s._records, np.memmap)
    xb, yb = s.take(40)
    assert (yb == 1).all()
    ids = _ids_of(xb, samples)
    assert sorted(ids.tolist()) == list(range(40))
    np.testing.assert_array_equal(xb, samples[ids])
    np.testing.assert_array_equal(VecStream(tmp_path / "p.vec", window=(6, 9),
                                            shuffle=False).take(40)[0],
                                  read_vec(tmp_path / "p.vec", window=(6, 9)))


def test_vec_stream_errors(tmp_path, rng):
    write_vec(tmp_path / "p.vec", rng.integers(0, 256, size=(5, 4, 4), dtype=np.uint8))
    with pytest.raises(VecFormatError, match="window"):
        VecStream(tmp_path / "p.vec", window=(3, 5))
    raw = (tmp_path / "p.vec").read_bytes()
    (tmp_path / "t.vec").write_bytes(raw[:-3])
    with pytest.raises(VecFormatError, match="truncated"):
        VecStream(tmp_path / "t.vec")
    with pytest.raises(VecFormatError, match="no such"):
        VecStream(tmp_path / "missing.vec")
    (tmp_path / "s.vec").write_bytes(b"abc")
    with pytest.raises(VecFormatError, match="too short"):
        VecStream(tmp_path / "s.vec")


@pytest.mark.shared_data
def test_vec_stream_on_the_anchor_positives(shared_dir):
    path = shared_dir / "data" / "traincascade-anchor" / "cbcl_pos_19x19.vec"
    ref = read_vec(path)
    s = VecStream(path, shuffle=False)
    assert s.n_samples == ref.shape[0]
    np.testing.assert_array_equal(s.take(100)[0], ref[:100])


def test_mixed_and_function_streams(rng):
    pos = ArrayStream(np.ones((30, 4)), np.ones(30), seed=0)
    neg = ArrayStream(np.zeros((90, 4)), np.zeros(90), seed=1)
    m = MixedStream([pos, neg], seed=2)
    assert m.n_samples == 120
    xb, yb = m.take(400)
    assert 0.15 < yb.mean() < 0.35  # proportional to sizes: 1/4 positives
    np.testing.assert_array_equal(xb[:, 0], yb)
    m2 = MixedStream([pos, neg], [0.5, 0.5], seed=2)
    assert 0.4 < m2.take(400)[1].mean() < 0.6
    with pytest.raises(ValueError, match="different shapes"):
        MixedStream([pos, ArrayStream(np.zeros((5, 3)), np.zeros(5))])
    with pytest.raises(ValueError, match="proportions"):
        MixedStream([pos, neg], [1.0])

    f = FunctionStream(lambda n, g: (g.normal(size=(n, 4)), np.ones(n)), (4,), seed=0)
    assert f.n_samples is None
    np.testing.assert_array_equal(
        f.take(3)[0], FunctionStream(lambda n, g: (g.normal(size=(n, 4)), np.ones(n)), (4,),
                                     seed=0).take(3)[0])
    with pytest.raises(ValueError, match="proportions: required"):
        MixedStream([pos, f])
    bad = FunctionStream(lambda n, g: (np.zeros((n, 3)), np.ones(n)), (4,))
    with pytest.raises(ValueError, match="fn: returned"):
        bad.take(2)
