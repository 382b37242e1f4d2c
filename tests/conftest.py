"""Shared fixtures: the ../shared data folder and deterministic RNGs."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))

settings.register_profile(
    "vjboost", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("vjboost")


@pytest.fixture
def shared_dir() -> Path:
    """The ../shared folder; the test is skipped when it is absent (a user's fresh clone)."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"shared data folder not found at {SHARED} (set VJBOOST_SHARED to point at it)")
    return SHARED


@pytest.fixture
def thread_counts(monkeypatch):
    """``watch(owner, name)`` wraps ``owner.name`` (a function, a method or a numba kernel)
    so that each call records numba's thread count at that moment; returns the list."""

    def watch(owner, name: str) -> list[int]:
        import numba

        seen: list[int] = []
        real = getattr(owner, name)

        def spy(*args, **kwargs):
            seen.append(numba.get_num_threads())
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, spy)
        return seen

    return watch


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def faces12() -> np.ndarray:
    """The 100 LFW faces of scikit-image at 12×12, and their mirror images (uint8)."""
    from skimage.data import lfw_subset

    imgs = (lfw_subset()[:100] * 255).round().astype(np.uint8)
    out = np.stack([cv2.resize(im, (12, 12), interpolation=cv2.INTER_AREA) for im in imgs])
    return np.concatenate([out, out[:, :, ::-1]])


@pytest.fixture(scope="module")
def backgrounds(tmp_path_factory) -> list[str]:
    """Eight scikit-image pictures, a third of their size, as PNG background files."""
    import skimage.data as d

    folder = tmp_path_factory.mktemp("bg")
    paths = []
    for name in ("camera", "coins", "moon", "page", "text", "brick", "grass", "clock"):
        im = getattr(d, name)()
        im = cv2.resize(im, (im.shape[1] // 3, im.shape[0] // 3), interpolation=cv2.INTER_AREA)
        p = folder / f"{name}.png"
        cv2.imwrite(str(p), im)
        paths.append(str(p))
    return paths


@pytest.fixture(scope="session")
def small_face_set(tmp_path_factory) -> Path:
    """A small training set from scikit-image's data: ``pos.npz`` (the 100 LFW faces at 16×16,
    array ``images``) and ``bg/`` (8 face-free sample images at half size, PNG). Modules add
    their own files beside them."""
    import cv2
    import skimage.data as d

    root = tmp_path_factory.mktemp("faces16")
    faces = (d.lfw_subset()[:100] * 255).round().astype(np.uint8)
    faces = np.stack([cv2.resize(f, (16, 16), interpolation=cv2.INTER_AREA) for f in faces])
    np.savez(root / "pos.npz", images=faces)
    (root / "bg").mkdir()
    for name in ("coins", "moon", "page", "text", "brick", "grass", "clock", "coffee"):
        im = getattr(d, name)()
        if im.ndim == 3:
            im = cv2.cvtColor(im, cv2.COLOR_RGB2GRAY)
        im = cv2.resize(im, (im.shape[1] // 2, im.shape[0] // 2), interpolation=cv2.INTER_AREA)
        cv2.imwrite(str(root / "bg" / f"{name}.png"), im)
    return root


@pytest.fixture
def model_json(tmp_path) -> str:
    """A small random HAAR cascade (20x20) saved as vjboost JSON."""
    from vjboost.cascade import save_model
    from vjboost.cascade.synthetic import random_cascade

    p = tmp_path / "m.json"
    save_model(random_cascade(seed=1, window=(20, 20)), p)
    return str(p)


@pytest.fixture
def face_views():
    """A function writing small validation views (``tools/face_data.py``'s layout) under a
    folder: the same four images in each named view, with boxes where the default face model
    finds faces and one box it cannot find, so that detection rates lie strictly between 0 and
    1. Returns the images and boxes by relative path."""
    from PIL import Image
    from skimage import data, transform

    from vjboost.cascade import CascadeDetector, load_model

    def write(root: Path, views) -> tuple[dict, dict]:
        astro = data.astronaut()[..., 1]
        small = (transform.rescale(astro, 0.5) * 255).astype(np.uint8)
        images = {"scenes/a.png": astro, "scenes/b.png": data.camera(), "nrc/c.png": small,
                  "nrc/d.png": data.coins()}
        det = CascadeDetector(load_model("vjboost:frontalface"), min_neighbors=3, score="best")
        gt = {p: det.detect(g).boxes.reshape(-1, 4) for p, g in images.items()}
        gt["scenes/b.png"] = np.array([[10, 10, 60, 60]])
        assert sum(len(v) for v in gt.values()) >= 3
        for view in views:
            folder = root / "val" / view
            for p, g in images.items():
                (folder / p).parent.mkdir(parents=True, exist_ok=True)
                Image.fromarray(g).save(folder / p)
            (folder / "images.txt").write_text("".join(p + "\n" for p in images))
            rows = ["image,x,y,w,h"] + [f"{p},{x},{y},{w},{h}" for p, b in gt.items()
                                        for x, y, w, h in b.tolist()]
            (folder / "boxes.csv").write_text("\n".join(rows) + "\n")
        return images, gt

    return write
