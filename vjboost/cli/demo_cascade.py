"""Demo: train a small face detector on scikit-image's data and run it on ``astronaut()``.

``vjdemo cascade [OUT]`` (part of ``vjdemo`` and ``make demo``; re-runnable: a second run in
the same folder continues the first one's training):

1. positives: the 100 faces of ``skimage.data.lfw_subset()`` (25×25, resized to the 24×24 window),
   mirrored;
2. backgrounds: scikit-image's sample images that show no face (written as PNG files under
   ``OUT/backgrounds``, since the trainer mines negatives from image files);
3. :class:`~vjboost.cascade.trainer.CascadeTrainer` (Haar BASIC features, Gentle AdaBoost stumps,
   hard-negative mining before each stage) writes ``OUT/model.json`` and the OpenCV XML
   ``OUT/cascade.xml``;
4. the detector runs on ``astronaut()``; the detections are printed as JSON lines and drawn in
   ``OUT/astronaut.png``, and compared with OpenCV's own frontal-face cascade when it is there;
5. the frontal-face cascade vjboost ships (``vjboost:frontalface``, trained by ``vjtrain`` on
   public data) runs on the same image, drawn in ``OUT/astronaut_shipped.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import click
import cv2
import numpy as np

from ._command import SEED, STAGES, argparse_type, run_argparse_command

__all__ = ["BACKGROUNDS", "MAX_DEMO_NEG", "main"]

#: most negatives per stage of the demo (``--num-neg``): it trains on 190 positives with 600
#: negatives a stage; 10,000 is far beyond its use, while 10**9 overran the memory budget
MAX_DEMO_NEG = 10_000

#: scikit-image sample images without faces (``camera`` and ``astronaut`` show people).
BACKGROUNDS = (
    "coffee",
    "chelsea",
    "rocket",
    "coins",
    "moon",
    "page",
    "horse",
    "text",
    "brick",
    "grass",
    "gravel",
    "hubble_deep_field",
    "immunohistochemistry",
    "clock",
    "cell",
    "retina",
    "colorwheel",
    "logo",
    "motorcycle_left",
    "stereo_motorcycle",
)


def _to_gray_u8(im) -> np.ndarray | None:
    if isinstance(im, tuple):
        im = im[0]
    im = np.asarray(im)
    if im.dtype == bool:
        im = im.astype(np.uint8) * 255
    elif im.dtype != np.uint8:
        im = np.clip(im * (255.0 if im.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
    if im.ndim == 3:
        im = cv2.cvtColor(im[..., :3], cv2.COLOR_RGB2GRAY)
    return im if im.ndim == 2 and min(im.shape) >= 48 else None


def write_backgrounds(folder: Path) -> list[str]:
    """Save the face-free sample images as PNG files; returns their paths."""
    from skimage import data

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in BACKGROUNDS:
        loader = getattr(data, name, None)
        if loader is None:
            continue
        try:
            im = _to_gray_u8(loader())
        except Exception:  # noqa: BLE001 - a sample that needs an optional download is skipped
            continue
        if im is None:
            continue
        p = folder / f"{name}.png"
        if not p.exists():
            cv2.imwrite(str(p), im)
        paths.append(str(p))
    return paths


def _face_found(face: np.ndarray, boxes: np.ndarray, neighbors: np.ndarray) -> str:
    """One line on whether the small cascade found the face that OpenCV's frontal-face cascade
    puts at ``face`` (IoU >= 0.5), how well supported its detection is, and how many other
    detections it made (false positives: a cascade trained on 100 faces makes some).

    Examples
    --------
    >>> msg = _face_found(np.array([10, 10, 50, 50]),
    ...                   np.array([[12, 11, 50, 50], [90, 90, 30, 30]]), np.array([7, 9]))
    >>> msg[msg.index("found"):msg.index(" windows")]
    'found: [12, 11, 50, 50], IoU 0.89, 7'
    >>> msg[msg.index("the 2nd"):]
    'the 2nd best supported of 2 detections; 1 other detection(s): false positives'
    """
    from vjboost.eval import iou_matrix

    where = f"the face (OpenCV's frontal-face cascade: {np.asarray(face).tolist()})"
    if len(boxes) == 0:
        return f"{where} is not found: no detection"
    ious = iou_matrix(np.asarray(face)[None], boxes)[0]
    j = int(np.argmax(ious))
    if ious[j] < 0.5:
        return (f"{where} is not found (best IoU {ious[j]:.2f}); {len(boxes)} detection(s), all "
                "false positives")
    rank = 1 + int(np.sum(neighbors > neighbors[j]))
    nth = {1: "the best", 2: "the 2nd best", 3: "the 3rd best"}.get(rank, f"the {rank}th best")
    return (f"{where} is found: {boxes[j].tolist()}, IoU {ious[j]:.2f}, {int(neighbors[j])} "
            f"windows, {nth} supported of {len(boxes)} detections; {len(boxes) - 1} other "
            "detection(s): false positives")


def main(argv: list[str] | None = None, *, prog: str = "vjdemo cascade") -> int:
    """Train the small face cascade and run it and the shipped one on ``astronaut()``.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``): ``[OUT] [--stages N] [--num-neg N]
        [--seed N]``.
    prog : str, default "vjdemo cascade"
        The program name shown in usage messages.

    Returns
    -------
    int
        The exit status (0).
    """
    ap = argparse.ArgumentParser(
        prog=prog, description="Train a small face detector on scikit-image's data and run it "
        "and the shipped face cascade on astronaut().")
    ap.add_argument("out", nargs="?", default="demo-out",
                    help="output folder: model.json, cascade.xml, report, drawn detections "
                         "(default: demo-out)")
    ap.add_argument("--stages", type=argparse_type(STAGES), default=12,
                    help="stages to train at most; fewer when the false-alarm target is met "
                         "earlier (default: 12)")
    ap.add_argument("--num-neg", type=argparse_type(click.IntRange(1, MAX_DEMO_NEG)),
                    default=600,
                    help=f"negative windows mined per stage, at most {MAX_DEMO_NEG} "
                         "(default: 600)")
    ap.add_argument("--seed", type=argparse_type(SEED), default=0,
                    help="training seed (default: 0)")
    args = ap.parse_args(argv)
    return run_argparse_command(lambda: _train_and_detect(Path(args.out), args), prog="vjdemo")


def _output_folder(out: Path, positives: np.ndarray) -> bool:
    """Check the demo's output folder before anything is written there; ``True`` when it holds
    a demo run to continue.

    Parameters
    ----------
    out : Path
    positives : ndarray of uint8, shape (n, 24, 24)
        The demo's positives (before mirroring): a checkpoint of other positives is not the
        demo's.

    Raises
    ------
    OutputError
        ``out`` is not a folder or cannot be written, or holds another training's checkpoint
        (a ``vjtrain`` run: the demo would write its backgrounds into it, then find other
        settings).
    """
    from vjboost._errors import OutputError
    from vjboost._io import check_output_path
    from vjboost.cascade.checkpoint import array_digest, load_checkpoint

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"OUT: cannot create {out}: {exc.strerror}") from None
    check_output_path(out, "folder", what="OUT")
    ck = load_checkpoint(out)
    if ck is None:
        return False
    mirrored = np.concatenate([positives, positives[:, :, ::-1]])
    if ck.get("config", {}).get("positives") != array_digest(mirrored):
        raise OutputError(f"OUT: {out} holds the checkpoint of another training (other "
                          "positives than the demo's); choose another output folder")
    return True


def _train_and_detect(out: Path, args: argparse.Namespace) -> int:
    """The demo's work, once its options are checked."""
    from skimage import data

    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.model_io import save_model
    from vjboost.cascade.opencv_xml import ExportError
    from vjboost.cascade.positives import resize_to_window
    from vjboost.cascade.trainer import CascadeTrainer

    t0 = time.perf_counter()
    faces = (data.lfw_subset()[:100] * 255).round().astype(np.uint8)
    pos = np.stack([resize_to_window(f, (24, 24)) for f in faces])
    resume = _output_folder(out, pos)
    bgs = write_backgrounds(out / "backgrounds")
    print(
        f"vjboost cascade demo: {len(pos)} LFW faces (mirrored: {2 * len(pos)}), "
        f"{len(bgs)} face-free background images from scikit-image"
    )
    trainer = CascadeTrainer(
        window_shape=(24, 24),
        features="haar",
        num_stages=args.stages,
        num_pos=190,
        num_neg=args.num_neg,
        max_weak_count=60,
        min_hit_rate=0.995,
        max_false_alarm=0.5,
        mirror=True,
        seed=args.seed,
    )
    # a second run in the same folder continues (or just reloads) the first one's training
    # instead of refusing the folder: the demo is deterministic, so its settings and data match
    if resume:
        print(f"{out}: continuing the training found there (delete the folder to start over)")
    trainer.fit(pos, bgs, output_dir=out, log=print, resume=resume)
    model = trainer.model_
    save_model(model, out / "model.json")
    try:
        save_model(model, out / "cascade.xml")
    except ExportError as exc:
        print(f"not exported to OpenCV XML: {exc}")
    t_train = time.perf_counter() - t0
    print(
        f"trained {model.n_stages} stages, {model.n_trees} weak classifiers in {t_train:.1f} s "
        f"({trainer.stop_reason_})"
    )

    rgb = data.astronaut()
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    det = CascadeDetector(model, scale_factor=1.1, min_neighbors=5, min_size=(48, 48))
    t1 = time.perf_counter()
    found = det.detect(gray)
    t_det = time.perf_counter() - t1
    for rec in found.records(source="astronaut"):
        print(json.dumps(rec))
    canvas = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    best = int(np.argmax(found.neighbors)) if len(found) else -1
    for i, (x, y, w, h) in enumerate(found.boxes.tolist()):
        colour = (0, 0, 255) if i == best else (0, 200, 0)
        cv2.rectangle(canvas, (x, y), (x + w, y + h), colour, 3 if i == best else 1)
    cv2.imwrite(str(out / "astronaut.png"), canvas)
    print(
        f"astronaut(): {len(found)} detection(s) in {1000 * t_det:.0f} ms, drawn in "
        f"{out / 'astronaut.png'} (red: the best supported one)"
    )
    ref_path = Path(getattr(getattr(cv2, "data", None), "haarcascades", "") or ".")
    ref_path = ref_path / "haarcascade_frontalface_default.xml"
    if best >= 0 and hasattr(cv2, "CascadeClassifier") and ref_path.is_file():
        ref = cv2.CascadeClassifier(str(ref_path)).detectMultiScale(gray, 1.1, 5, minSize=(48, 48))
        if len(ref):
            print(_face_found(ref[0], found.boxes, found.neighbors))
    _shipped_model_demo(gray, rgb, out)
    return 0


def _shipped_model_demo(gray: np.ndarray, rgb: np.ndarray, out: Path) -> None:
    """Run the shipped frontal-face cascade (``vjdetect``'s default model) on the image."""
    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.model_io import load_model
    from vjboost.cascade.shipped import DEFAULT_MODEL, ModelNotFound, resolve_model

    try:
        path = resolve_model(DEFAULT_MODEL)
    except ModelNotFound as exc:
        print(f"shipped model not available: {exc}")
        return
    # the settings left unset: the model's default operating point
    det = CascadeDetector(load_model(path), scale_factor=1.1)
    # the first call of a fresh install compiles the model's kernels (seconds, once per
    # machine: they are cached); the second is the detection time a user will see
    t = time.perf_counter()
    det.detect(gray)
    first = time.perf_counter() - t
    t = time.perf_counter()
    found = det.detect(gray)
    ms = 1000 * (time.perf_counter() - t)
    canvas = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    for x, y, w, h in found.boxes.tolist():
        cv2.rectangle(canvas, (x, y), (x + w, y + h), (0, 0, 255), 2)
    cv2.imwrite(str(out / "astronaut_shipped.png"), canvas)
    boxes = ", ".join(str(b) for b in found.boxes.tolist()) or "none"
    print(f"shipped cascade {DEFAULT_MODEL} ({path}) on astronaut(): {len(found)} detection(s) "
          f"in {ms:.0f} ms{_first_call(first, ms)}: {boxes}; drawn in "
          f"{out / 'astronaut_shipped.png'}")


def _first_call(first_s: float, ms: float) -> str:
    """A note on the first call's time when compiling the kernels made it much slower.

    >>> _first_call(18.0, 120.0)
    ' (the first call, which compiled its kernels, 18.0 s)'
    >>> _first_call(0.13, 120.0)
    ''
    """
    if 1000 * first_s < 2 * ms + 500:
        return ""
    return f" (the first call, which compiled its kernels, {first_s:.1f} s)"


if __name__ == "__main__":
    sys.exit(main())
