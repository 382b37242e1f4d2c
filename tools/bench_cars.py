"""UIUC side-view cars: vjboost's cascade (``vjtrain``) against dlib's HOG + linear SVM.

Both detectors learn from the same data, the benchmark's training set (550 car and 500 non-car
100×40 windows) and the same car-free background images, and are scored on the benchmark's 170
test scenes (200 cars) with its protocol (:mod:`vjboost.eval.uiuc`: corner in the 25 % ellipse,
one detection per car, recall at the equal-error rate).

* vjboost: ``vjtrain`` run as a user runs it (the folder of car windows with ``--mirror``, a
  ``bg.txt`` listing the non-car windows and the backgrounds), with the configuration
  :data:`VJ_CONFIG`; detection with :data:`VJ_DETECT`.
* dlib: ``dlib.train_simple_object_detector`` (HOG + structural linear SVM) on the same car
  windows, each pasted into a car-free background (dlib mines its negatives inside its training
  images and cannot use a box that fills its image), plus the non-car windows as images without
  boxes; C, window size and number of backgrounds from :data:`DLIB_CONFIG`.

Modes:

``--validate``
    Model selection on the *training data only*: ~100 cars, 100 non-car windows and ~150
    backgrounds (5 %) are held out; validation scenes are built by pasting the held-out cars
    (and their mirror images) into held-out backgrounds, at scale 1 (``val1``, the test's scale)
    and at scales 0.5–2.5 (``valms``, scored with the multi-scale ellipsoid). Every candidate
    configuration of both detectors is trained on the rest and scored there; the test scenes are
    not read. ``--steps`` also tries scan grids other than OpenCV's (a fixed step at every
    scale); rows on ``valms`` carry the cars found per scale bin at the equal-error threshold.
default
    Train the chosen configurations on all training data, evaluate both on the 170 test scenes,
    print the table, write the curve (``--plot``) and the model (``--save-model``).
``--time-detection MODEL[@n][#step],...``
    Detection time of the given cascades (cut to ``n`` stages; scanned on a grid of ``step``
    pixels at every scale instead of OpenCV's, as ``--steps``) and of dlib trained on the
    validation split's training part, interleaved over the validation scenes (wall and CPU
    milliseconds per image, ratios).
``--quick``
    The same pipeline in about a minute: 3 stages and fewer negatives for vjboost, a quarter of
    the cars and non-car windows and 20 backgrounds for dlib, the first 30 test scenes.

The last line is ``RESULT {json}`` with ``eer_recall_vjboost``, ``eer_recall_dlib``, training and
detection seconds of both and their ratios.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import train_face as tf  # noqa: E402
from _cli import description  # noqa: E402

from vjboost.cascade.detector import CascadeDetector  # noqa: E402
from vjboost.cascade.model_io import load_model  # noqa: E402
from vjboost.eval.uiuc import (  # noqa: E402
    OBJECT_SHAPE,
    box_locations,
    cascade_detections,
    evaluate_uiuc,
)
from vjboost.io import read_image  # noqa: E402
from vjboost.io.uiuc import read_uiuc_locations, uiuc_image_number  # noqa: E402

SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data" / "uiuc-cars"
BACKGROUNDS = SHARED / "data" / "negatives"

#: background images showing cars, vans or trucks (found by running car cascades trained on the
#: validation split over all 3,019 and looking at their most confident windows, ``--screen``:
#: the first 22 with a 14-stage LBP cascade's top 120, the last 6 with a 20-stage LBP-tree
#: cascade's top 106): never used
EXCLUDED_BACKGROUNDS = tuple(f"{n}.jpg" for n in (
    "UMD_020", "neg-0094", "neg-0095", "neg-0097", "neg-0118", "neg-0157", "neg-0394",
    "neg-0459", "neg-0491", "neg-0589", "neg-0830", "neg-0832", "neg-1235", "neg-1245",
    "neg-1283", "neg-1337", "neg-1383", "neg-1395", "neg-1402", "neg-1582", "neg-1617",
    "neg-4235",
    "UMD_041", "neg-0831", "neg-1178", "neg-1410", "neg-1417", "neg-4668"))

#: ``vjtrain`` options of the shipped car cascade (chosen on the validation split)
VJ_CONFIG: dict[str, object] = {
    "window": "50x20", "features": "lbp,channels", "sampler": "stratified_laminating",
    "weak-learner": "tree", "max-depth": 2, "stages": 18, "jitter": 2,
    "jitter-range": "6,0.06,0.04", "shuffle-positives": True, "num-pos": 1500, "num-neg": 2000,
    "min-hit-rate": 0.998, "max-false-alarm": 0.5, "mining-scale-factor": 1.25, "seed": 0,
    "sampler-budget": 1800000,
}
#: detection settings of the car cascade (chosen on the validation split); ``n_stages``: the
#: stages kept of the trained cascade (None: all)
VJ_DETECT: dict[str, object] = {"scale_factor": 1.15, "min_neighbors": 1,
                                "confidence": "neighbors", "n_stages": None, "border": "reflect",
                                "border_margin": 0.3}
#: the default threshold on the window count (groups of at least two windows: the validation
#: cascade's equal-error thresholds at scale factor 1.1 were below its groups' floor on val1 and
#: valcut, 2.32 on valms; docs/cars.md)
CAR_MIN_SCORE = 1.5
#: what the shipped ``car_side`` declares (``--save-model``), so that a detector left unset runs
#: it as validated: the border of :data:`VJ_DETECT` and a default threshold on the window count
#: of detections grouped at minNeighbors 1, at the detector's default scale factor 1.1 (the
#: validation cascade's equal-error thresholds, docs/cars.md)
VJ_DECLARED: dict[str, object] = {
    "border": VJ_DETECT["border"], "border_margin": VJ_DETECT["border_margin"],
    "operating_score": {"min_neighbors": 1, "rank": "neighbors", "min_score": CAR_MIN_SCORE},
}
#: dlib settings (chosen on the validation split): SVM C, detection window (width, height),
#: number of non-car background images added as box-free training images
DLIB_CONFIG: dict[str, object] = {"C": 50.0, "window": (80, 32), "n_backgrounds": 300}
#: dlib's detection threshold offset: low enough that its curve passes the equal-error point
DLIB_THRESHOLD = -1.5
#: smallest car the detectors must find: 0.5x the 100x40 training size
MIN_CAR_WIDTH = 50


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------


def load_training(data: Path = DATA) -> tuple[list[Path], list[Path]]:
    """Paths of the 550 car and 500 non-car training windows, in numeric order."""
    pos = [data / "TrainImages" / f"pos-{i}.pgm" for i in range(550)]
    neg = [data / "TrainImages" / f"neg-{i}.pgm" for i in range(500)]
    return pos, neg


def load_test(data: Path = DATA) -> tuple[dict[int, Path], dict[int, np.ndarray]]:
    """The 170 test scenes by image number and their true locations (row, column)."""
    paths = {uiuc_image_number(p): p for p in sorted((data / "TestImages").glob("test-*.pgm"))}
    return paths, read_uiuc_locations(data / "trueLocations.txt")


def car_free_backgrounds(folder: Path = BACKGROUNDS) -> list[Path]:
    """Background images less :data:`EXCLUDED_BACKGROUNDS`, sorted."""
    return sorted(p for p in folder.iterdir()
                  if p.suffix.lower() in (".jpg", ".jpeg", ".png") and
                  p.name not in EXCLUDED_BACKGROUNDS)


def split(n: int, n_held: int, seed: int, salt: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded split of ``range(n)``: (kept, held out), both sorted."""
    perm = np.random.default_rng([seed, salt]).permutation(n)
    return np.sort(perm[n_held:]), np.sort(perm[:n_held])


def held_out_background(path: Path, seed: int) -> bool:
    """Whether a background belongs to the validation share (~5 %), by a hash of its name.

    A hash rather than a position in the sorted list: excluding an image later does not move
    any other image between the shares.
    """
    return zlib.crc32(f"{seed}:{path.name}".encode()) % 20 == 0


def gray(path: Path) -> np.ndarray:
    return read_image(path, gray=True)


def _feather(h: int, w: int) -> np.ndarray:
    """Alpha mask of a pasted window: 1 inside, a linear ramp over ~5 % of each side."""
    def ramp(n: int) -> np.ndarray:
        m = max(1, round(0.05 * n))
        r = np.minimum(np.arange(n) + 1, np.arange(n)[::-1] + 1) / (m + 1)
        return np.clip(r, 0, 1)
    return np.outer(ramp(h), ramp(w)).astype(np.float32)


def make_scenes(cars: list[np.ndarray], backgrounds: list[Path], *, scales: tuple[float, float],
                seed: int, cut: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Validation scenes: every car pasted once, alone or beside another, into a background.

    Parameters
    ----------
    cars : list of (40, 100) uint8 windows
    backgrounds : list of paths (car-free), used in turn
    scales : (low, high)
        Car scale relative to 100x40, drawn log-uniformly (both cars of a scene share it).
    seed : int
    cut : float, default 0
        Share of the cars placed across an edge of the scene (left or right, or else top or
        bottom), with 5-30 % of their width (height) outside: the truth corner then lies
        outside the image, as for cars the photograph cut.

    Returns
    -------
    list of (image, truth)
        ``truth`` holds ``(row, column, width)`` of each pasted 100x40-framed car.
    """
    rng = np.random.default_rng([seed, 0x5CE7E])
    order = rng.permutation(len(cars))
    scenes = []
    k = b = 0
    while k < len(order):
        n = 1 if rng.random() < 0.5 or k + 1 == len(order) else 2
        s = math.exp(rng.uniform(math.log(scales[0]), math.log(scales[1])))
        cw, ch = round(OBJECT_SHAPE[1] * s), round(OBJECT_SHAPE[0] * s)
        W = max(int(n * cw * rng.uniform(1.15, 1.6)), 200)
        H = max(int(W * rng.uniform(0.5, 0.75)), int(ch * 1.5))
        bg = gray(backgrounds[b % len(backgrounds)])
        b += 1
        f = rng.uniform(0.4, 1.0)
        bh, bw = bg.shape
        cwid = min(bw, int(bh * W / H)) * f
        chei = cwid * H / W
        x0 = rng.uniform(0, bw - cwid)
        y0 = rng.uniform(0, bh - chei)
        crop = bg[int(y0):int(y0 + chei), int(x0):int(x0 + cwid)]
        scene = cv2.resize(crop, (W, H), interpolation=cv2.INTER_AREA).astype(np.float32)
        truth = []
        slot = W / n
        for i in range(n):
            car = cars[order[k + i]]
            interp = cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR
            patch = cv2.resize(car, (cw, ch), interpolation=interp).astype(np.float32)
            x = int(i * slot + rng.uniform(0, max(slot - cw, 0)))
            y = int(rng.uniform(0, H - ch))
            a = _feather(ch, cw)
            # a cut car: its feathered edge lies on the side still in the image only
            if cut and rng.random() < cut:
                side = int(rng.integers(0, 4))
                out = rng.uniform(0.05, 0.3)
                if side == 0 and i == 0:
                    x = -round(out * cw)
                elif side == 1 and i == n - 1:
                    x = W - cw + round(out * cw)
                elif side == 2:
                    y = -round(out * ch)
                elif side == 3:
                    y = H - ch + round(out * ch)
            y0, y1, x0, x1 = max(y, 0), min(y + ch, H), max(x, 0), min(x + cw, W)
            sub = (slice(y0 - y, y1 - y), slice(x0 - x, x1 - x))
            scene[y0:y1, x0:x1] = a[sub] * patch[sub] + (1 - a[sub]) * scene[y0:y1, x0:x1]
            truth.append((y, x, cw))
        k += n
        scenes.append((np.clip(np.rint(scene), 0, 255).astype(np.uint8),
                       np.asarray(truth, dtype=np.int64)))
    return scenes


# ------------------------------------------------------------------------------------------------
# vjboost
# ------------------------------------------------------------------------------------------------


def workspace(work: Path, pos: list[Path], negatives: list[Path]) -> tuple[Path, Path]:
    """A positive folder (links to the car windows) and a ``bg.txt`` of absolute paths."""
    pos_dir = work / "pos"
    pos_dir.mkdir(parents=True, exist_ok=True)
    for p in pos:
        link = pos_dir / p.name
        if not link.exists():
            link.symlink_to(p.resolve())
    bg = work / "bg.txt"
    bg.write_text("\n".join(str(p.resolve()) for p in negatives) + "\n")
    return pos_dir, bg


def vjtrain_command(pos_dir: Path, bg: Path, out: Path, config: dict, threads: int) -> list[str]:
    return [sys.executable, "-m", "vjboost.cli.train", str(pos_dir), str(bg), "-o", str(out),
            "--mirror", "-q", "--threads", str(threads), *tf.vjtrain_args(config)]


def train_vjboost(pos_dir: Path, bg: Path, out: Path, config: dict, threads: int,
                  log=print) -> tuple[Path, float, float]:
    """Run ``vjtrain``: the model, the wall time (with start-up, as a user sees it) and the
    CPU seconds of the process (user + system, all threads: the figure to compare when other
    jobs share the machine)."""
    cmd = vjtrain_command(pos_dir, bg, out, config, threads)
    log("$ " + " ".join(cmd[2:]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True,
                         env={**os.environ, "NUMBA_CACHE_DIR": os.environ.get(
                             "NUMBA_CACHE_DIR", str(REPO / ".numba_cache"))})
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if res.returncode != 0:
        raise SystemExit(f"vjtrain failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    for line in res.stdout.splitlines():
        if line.startswith(("model:", "training stopped", "time ")):
            log("  " + line)
    log(f"  {seconds:.1f} s wall, {cpu:.1f} CPU s")
    return out / "model.json", seconds, cpu


def vj_detect(model, images: dict, detect: dict, threads: int, multiscale: bool
              ) -> tuple[dict, float]:
    """Corner locations and confidences per image, and the detection seconds."""
    det = CascadeDetector(model, scale_factor=float(detect["scale_factor"]), min_neighbors=0,
                          grouping="none", threads=threads, n_stages=detect.get("n_stages"),
                          border=detect.get("border"),
                          border_margin=float(detect.get("border_margin", 0.25)),
                          # a step forces the clean grid (OpenCV's: 2 px below scale 2, else 1)
                          mode="opencv" if detect.get("step") is None else "clean",
                          step=detect.get("step"))
    out, seconds = {}, 0.0
    for key, img in images.items():
        t0 = time.perf_counter()
        b, s = det.raw_windows(img)
        boxes, conf = cascade_detections(b, s, min_neighbors=int(detect["min_neighbors"]),
                                         confidence=str(detect["confidence"]))
        seconds += time.perf_counter() - t0
        out[key] = (box_locations(boxes, multiscale=multiscale), conf)
    return out, seconds


# ------------------------------------------------------------------------------------------------
# dlib
# ------------------------------------------------------------------------------------------------


def train_dlib(cars: list[np.ndarray], backgrounds: list[Path], negatives: list[np.ndarray],
               config: dict, threads: int, seed: int = 0) -> tuple[object, float]:
    """``train_simple_object_detector`` on the car windows placed in background scenes.

    dlib mines its negatives inside its training images, so a bare 100x40 car window (whose box
    would touch the border) teaches it nothing about the background: every car is pasted, at
    its size, into a car-free background (:func:`make_scenes`, ``n_backgrounds`` of them used in
    turn) and the non-car windows (doubled in size) are added as images without boxes.
    """
    import dlib

    scenes = make_scenes(cars, backgrounds, scales=(1.0, 1.0), seed=seed + 7)
    images = [im for im, _ in scenes] + [np.ascontiguousarray(n) for n in negatives]
    h_over_w = OBJECT_SHAPE[0] / OBJECT_SHAPE[1]
    boxes = [[dlib.rectangle(int(j), int(i), int(j + w - 1), int(i + round(w * h_over_w) - 1))
              for i, j, w in truth] for _, truth in scenes]
    boxes += [[] for _ in negatives]
    opt = dlib.simple_object_detector_training_options()
    opt.add_left_right_image_flips = True
    opt.C = float(config["C"])
    ww, wh = config["window"]
    opt.detection_window_size = int(ww * wh)
    opt.num_threads = threads
    opt.be_verbose = False
    t0 = time.perf_counter()
    det = dlib.train_simple_object_detector(images, boxes, opt)
    seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        # the trained object cannot score detections; its saved form loaded back can
        det.save(str(Path(tmp) / "d.svm"))
        scorer = dlib.fhog_object_detector(str(Path(tmp) / "d.svm"))
    return scorer, seconds


def dlib_upsample(det) -> int:
    """Image doublings needed for dlib's window to reach :data:`MIN_CAR_WIDTH` cars."""
    return max(0, math.ceil(math.log2(det.detection_window_width / MIN_CAR_WIDTH) - 0.05))


def dlib_detect(det, images: dict, multiscale: bool, upsample: int | None = None
                ) -> tuple[dict, float]:
    """dlib's boxes (framed like the 100x40 windows) with its SVM scores."""
    up = dlib_upsample(det) if upsample is None else upsample
    out, seconds = {}, 0.0
    for key, img in images.items():
        t0 = time.perf_counter()
        # a low threshold: the curve must reach past as many detections as cars
        # (contiguous: dlib misreads a strided view's memory, tools/bench_peers.py dlib_run)
        rects, scores, _ = det.run(np.ascontiguousarray(img), up, DLIB_THRESHOLD)
        seconds += time.perf_counter() - t0
        b = np.array([[r.left(), r.top(), r.width(), r.height()] for r in rects],
                     dtype=np.float64).reshape(-1, 4)
        out[key] = (box_locations(b, multiscale=multiscale), np.asarray(scores, float))
    return out, seconds


# ------------------------------------------------------------------------------------------------
# Runs
# ------------------------------------------------------------------------------------------------


#: car scales (relative to 100x40) of the bins of :func:`recall_by_scale`
SCALE_BINS = (0.5, 0.7, 1.0, 1.4, 2.0, 2.5)


def recall_by_scale(dets: dict, truth: dict, threshold: float) -> dict[str, str]:
    """Cars found per scale bin (:data:`SCALE_BINS`) by the detections scoring ``>= threshold``.

    ``truth`` holds ``(row, column, width)`` per car (multi-scale); each bin is scored alone
    with the UIUC matching, so a detection of a car of another bin is not a match.
    """
    kept = {k: (loc[c >= threshold], c[c >= threshold]) for k, (loc, c) in dets.items()}
    out = {}
    for lo, hi in itertools.pairwise(SCALE_BINS):
        w0, w1 = lo * OBJECT_SHAPE[1], hi * OBJECT_SHAPE[1]
        sub = {k: t[(t[:, 2] >= w0) & ((t[:, 2] < w1) | (hi == SCALE_BINS[-1]))]
               for k, t in truth.items()}
        ev = evaluate_uiuc(kept, sub)
        out[f"{lo}-{hi}"] = f"{ev.true_positives}/{ev.n_objects}"
    return out


def _pick(paths: list[Path], n: int, seed: int) -> list[Path]:
    """A seeded choice of ``n`` paths (dlib's box-free training images)."""
    idx = np.random.default_rng([seed, 4]).permutation(len(paths))[:n]
    return [paths[i] for i in sorted(idx)]


def validation_data(args) -> SimpleNamespace:
    """The validation split of the training data (never the test scenes): the training part
    (``pos``/``neg``/``bgs`` with the indices ``p_tr``, ``n_tr``, ``b_tr``) and the held-out
    scenes ``images[set]`` with their ``truths[set]``, for ``sets`` val1, valms and valcut
    (``sets[name][1]``: multi-scale truth)."""
    pos, neg = load_training(args.data)
    bgs = car_free_backgrounds(args.backgrounds)
    p_tr, p_va = split(len(pos), 100, args.seed, 1)
    n_tr, n_va = split(len(neg), 100, args.seed, 2)
    b_va = [i for i, p in enumerate(bgs) if held_out_background(p, args.seed)]
    b_tr = [i for i, p in enumerate(bgs) if not held_out_background(p, args.seed)]
    val_cars = [gray(pos[i]) for i in p_va]
    val_cars += [c[:, ::-1] for c in val_cars]
    val_bgs = [bgs[i] for i in b_va]
    sets = {
        "val1": (make_scenes(val_cars, val_bgs, scales=(1.0, 1.0), seed=args.seed), False),
        "valms": (make_scenes(val_cars, val_bgs, scales=(0.5, 2.5), seed=args.seed + 1), True),
        # every car cut by an edge of its scene (5-30 % outside): for border=...
        "valcut": (make_scenes(val_cars, val_bgs, scales=(1.0, 1.0), seed=args.seed + 2,
                               cut=1.0), False),
    }
    # the held-out non-car windows are scenes too (every detection there is a false positive)
    extra = {f"neg{i}": cv2.resize(gray(neg[i]), (200, 80)) for i in n_va}
    images, truths = {}, {}
    for name, (scenes, ms) in sets.items():
        images[name] = {f"{name}-{k}": im for k, (im, _) in enumerate(scenes)} | extra
        truths[name] = {f"{name}-{k}": (t if ms else t[:, :2]) for k, (_, t) in
                        enumerate(scenes)}
        print(f"{name}: {len(images[name])} scenes, {sum(len(t) for t in truths[name].values())}"
              f" cars")
    return SimpleNamespace(pos=pos, neg=neg, bgs=bgs, p_tr=p_tr, n_tr=n_tr, b_tr=b_tr,
                           sets=sets, images=images, truths=truths)


def validate(args) -> None:
    """Model selection on held-out training data (never the test scenes)."""
    v = validation_data(args)
    pos, neg, bgs, p_tr, n_tr, b_tr = v.pos, v.neg, v.bgs, v.p_tr, v.n_tr, v.b_tr
    sets, images, truths = v.sets, v.images, v.truths
    if args.save_scenes:
        out = Path(args.save_scenes)
        for name in sets:
            (out / name).mkdir(parents=True, exist_ok=True)
            lines = []
            for k, key in enumerate(images[name]):
                cv2.imwrite(str(out / name / f"test-{k}.pgm"), images[name][key])
                t = truths[name].get(key, np.zeros((0, 2), np.int64))
                lines.append(f"{k}: " + " ".join("(" + ",".join(map(str, r)) + ")" for r in t))
            (out / name / "trueLocations.txt").write_text("\n".join(lines) + "\n")
    results = []
    work = Path(args.work) / "validate"
    tr_pos = [pos[i] for i in p_tr]
    tr_neg = [neg[i] for i in n_tr] + [bgs[i] for i in b_tr]
    pos_dir, bg_txt = workspace(work, tr_pos, tr_neg)

    def score(name, dets_fn, train_s, train_cpu=None):
        row = {"name": name, "train_seconds": round(train_s, 1)}
        if train_cpu is not None:
            row["train_cpu_seconds"] = round(train_cpu, 1)
        for vs, (_, ms) in sets.items():
            dets, sec = dets_fn(images[vs], ms)
            ev = evaluate_uiuc(dets, truths[vs])
            row[vs] = round(ev.eer_recall, 4)
            row[f"{vs}_eer_threshold"] = round(float(ev.eer_threshold), 4)
            row[f"{vs}_ms_per_image"] = round(1000 * sec / len(images[vs]), 2)
            if ms:
                row[f"{vs}_by_scale"] = recall_by_scale(dets, truths[vs], ev.eer_threshold)
        print(json.dumps(row), flush=True)
        results.append(row)

    if "dlib" in args.which:
        tr_cars = [gray(pos[i]) for i in p_tr]
        dneg_paths = [neg[i] for i in n_tr]
        for c_val in args.dlib_c:
            for win in args.dlib_windows:
                wdt, hgt = (int(v) for v in win.split("x"))
                for nb in args.dlib_backgrounds:
                    cfg = {"C": c_val, "window": (wdt, hgt), "n_backgrounds": nb}
                    negs = [cv2.resize(gray(p), (200, 80)) for p in dneg_paths]
                    det, sec = train_dlib(tr_cars, _pick([bgs[i] for i in b_tr], nb, args.seed),
                                          negs, cfg, args.threads, args.seed)
                    score(f"dlib C={c_val} window={win} bg={nb}",
                          lambda ims, ms, d=det: dlib_detect(d, ims, ms), sec)
    if "vjboost" in args.which:
        for spec in args.vj_configs:
            cfg = dict(VJ_CONFIG)
            detect = dict(VJ_DETECT)
            # a value may hold commas (--jitter-range 6,0.06,0.04): split before "key=" only
            for kv in re.split(r",(?=[a-z][a-z-]*=)", spec):
                if not kv:
                    continue
                k, _, v = kv.partition("=")
                if k in ("scale_factor", "min_neighbors", "confidence"):
                    continue
                cfg[k] = True if v == "" else v
            out = work / ("vj_" + spec.replace(",", "_").replace("=", "-") if spec else "vj_base")
            cpu = None
            if (out / "model.json").exists():
                model_path = out / "model.json"
                sec = float(json.loads((out / "report.json").read_text())["training_seconds"])
            else:
                model_path, sec, cpu = train_vjboost(pos_dir, bg_txt, out, cfg, args.threads)
            model = load_model(model_path)
            counts = sorted({min(int(n), model.n_stages) for n in args.n_stages}
                            | {model.n_stages})
            for ns, sf, mn, conf, bd, bm, st in itertools.product(
                    counts, args.scale_factors, args.min_neighbors, args.confidences,
                    args.borders, args.border_margins, args.steps):
                d = dict(detect, scale_factor=sf, min_neighbors=mn, confidence=conf, n_stages=ns,
                         border=bd, border_margin=bm, step=st)
                score(f"vjboost {spec or 'base'} stages={ns} sf={sf} mn={mn} conf={conf} "
                      f"border={bd} margin={bm}" + (f" step={st}" if st else ""),
                      lambda ims, ms, d=d, m=model: vj_detect(m, ims, d, args.threads, ms), sec,
                      cpu)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    (Path(args.work) / "validation.json").write_text(json.dumps(results, indent=1))
    print("RESULT " + json.dumps({"validation": results}))


def time_detection(args) -> None:
    """Detection time of car cascades and of dlib, interleaved, on the validation scenes.

    dlib is trained with :data:`DLIB_CONFIG` on the training part of the validation split; each
    repeat runs every detector in turn over the val1 and valms scenes (so that the load of a
    shared machine falls on all of them alike) with :data:`VJ_DETECT`. Reports wall and CPU
    milliseconds per image (the process's CPU time: dlib runs one thread, the cascades
    ``--threads``) and the ratios to the first cascade and to dlib; the medians of the repeats.
    """
    v = validation_data(args)
    scenes = {**v.images["val1"], **{k: im for k, im in v.images["valms"].items()
                                     if not k.startswith("neg")}}
    models, detects = {}, {}
    for spec in args.time_detection.split(","):
        spec, _, step = spec.partition("#")
        path, _, n = spec.partition("@")
        m = load_model(path)
        name = f"vjboost {path}" + (f"@{n}" if n else "") + (f" step {step}" if step else "")
        models[name] = m.truncated(int(n)) if n else m
        detects[name] = dict(VJ_DETECT, step=int(step) if step else None)
    cars = [gray(v.pos[i]) for i in v.p_tr]
    negs = [cv2.resize(gray(v.neg[i]), (200, 80)) for i in v.n_tr]
    dlib_det, _ = train_dlib(cars, _pick([v.bgs[i] for i in v.b_tr],
                                         int(DLIB_CONFIG["n_backgrounds"]), args.seed),
                             negs, DLIB_CONFIG, args.threads, args.seed)
    runs = {name: (lambda ims, m=m, d=detects[name]: vj_detect(m, ims, d, args.threads, False))
            for name, m in models.items()}
    runs["dlib"] = lambda ims: dlib_detect(dlib_det, ims, False)
    first = {k: scenes[k] for k in list(scenes)[:5]}
    for fn in runs.values():  # warm-up: numba caches, dlib's first call
        fn(first)
    wall = {k: [] for k in runs}
    cpu = {k: [] for k in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            c0 = time.process_time()
            _, sec = fn(scenes)
            cpu[name].append(time.process_time() - c0)
            wall[name].append(sec)
    n = len(scenes)
    first_vj = next(iter(models))
    rows = {}
    print(f"{n} validation scenes (val1 + valms), {args.repeats} interleaved repeats, "
          f"cascades on {args.threads} thread(s)")
    for name in runs:
        w, c = float(np.median(wall[name])), float(np.median(cpu[name]))
        rows[name] = {"wall_ms_per_image": round(1000 * w / n, 2),
                      "cpu_ms_per_image": round(1000 * c / n, 2)}
    for name, r in rows.items():
        for ref, key in ((first_vj, "vs_first"), ("dlib", "vs_dlib")):
            r[f"wall_{key}"] = round(r["wall_ms_per_image"] / rows[ref]["wall_ms_per_image"], 3)
            r[f"cpu_{key}"] = round(r["cpu_ms_per_image"] / rows[ref]["cpu_ms_per_image"], 3)
        print(f"{name:<70} wall {r['wall_ms_per_image']:7.2f} ms ({r['wall_vs_dlib']:.2f}x "
              f"dlib)  CPU {r['cpu_ms_per_image']:7.2f} ms ({r['cpu_vs_dlib']:.2f}x dlib, "
              f"{r['cpu_vs_first']:.2f}x the first cascade)")
    print("RESULT " + json.dumps({"n_images": n, "threads": args.threads,
                                  "repeats": args.repeats, "detect": VJ_DETECT,
                                  "detectors": rows}))


def screen(args) -> None:
    """Run a car cascade over every background image; write its most confident windows as
    contact sheets (with file names) for a person to check for cars."""
    model = load_model(args.screen)
    det = CascadeDetector(model, scale_factor=1.1, min_neighbors=0, grouping="none",
                          threads=args.threads)
    rows = []
    for p in sorted(args.backgrounds.iterdir()):
        if p.suffix.lower() not in (".jpg", ".jpeg", ".png"):
            continue
        g = gray(p)
        b, s = det.raw_windows(g)
        boxes, conf = cascade_detections(b, s, min_neighbors=2)
        rows += [(float(c), p, bb) for bb, c in zip(boxes.tolist(), conf, strict=True)]
    rows.sort(key=lambda r: -r[0])
    out = Path(args.work) / "screen"
    out.mkdir(parents=True, exist_ok=True)
    per = 30
    for k in range(0, min(args.top, len(rows)), per):
        tiles = []
        for c, p, (x, y, w, h) in rows[k:k + per]:
            g = gray(p)
            pad = w // 2
            big = cv2.copyMakeBorder(g, pad + h, pad + h, pad + w, pad + w, cv2.BORDER_CONSTANT)
            crop = big[y + h:y + 2 * h + 2 * pad, x + w:x + 2 * w + 2 * pad]
            tile = cv2.cvtColor(cv2.resize(crop, (240, 150)), cv2.COLOR_GRAY2BGR)
            cv2.putText(tile, f"{p.name} {c:.1f}", (3, 12), cv2.FONT_HERSHEY_SIMPLEX, 0.4,
                        (0, 0, 255), 1)
            tiles.append(tile)
        while len(tiles) % 5:
            tiles.append(np.zeros_like(tiles[0]))
        sheet = np.concatenate([np.concatenate(tiles[i:i + 5], 1)
                                for i in range(0, len(tiles), 5)])
        cv2.imwrite(str(out / f"top-{k:04d}.png"), sheet)
    (out / "windows.json").write_text(json.dumps(
        [(c, p.name, bb) for c, p, bb in rows[:args.top]], indent=0))
    print(f"{len(rows)} windows in {len(list(args.backgrounds.iterdir()))} images; the "
          f"{min(args.top, len(rows))} most confident are drawn in {out}")


def plot_curves(evs: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vjboost._io import save_png
    from vjboost.eval.uiuc import plot_uiuc_curves

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    plot_uiuc_curves(ax, evs, title="UIUC single-scale test (170 scenes, 200 cars)")
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def run(args) -> None:
    pos, neg = load_training(args.data)
    bgs = car_free_backgrounds(args.backgrounds)
    test_paths, truth = load_test(args.data)
    if args.quick:
        cfg = dict(VJ_CONFIG, stages=3, **{"num-pos": 500, "num-neg": 300})
        bg_list = list(neg)
        dcfg = dict(DLIB_CONFIG, n_backgrounds=20)
    else:
        cfg, bg_list, dcfg = dict(VJ_CONFIG), list(neg) + bgs, dict(DLIB_CONFIG)
    work = Path(args.work) / ("quick" if args.quick else "full")
    pos_dir, bg_txt = workspace(work, pos, bg_list)
    out = work / "vjboost"
    if args.resume and (out / "model.json").is_file():
        # trained earlier by the same command: its own clock (vjtrain's training_seconds)
        model_path = out / "model.json"
        vj_train_s = float(json.loads((out / "report.json").read_text())["training_seconds"])
        vj_train_cpu = None
        print(f"reusing {model_path} (trained in {vj_train_s:.0f} s)")
    else:
        if out.exists():
            import shutil

            shutil.rmtree(out)
        model_path, vj_train_s, vj_train_cpu = train_vjboost(pos_dir, bg_txt, out, cfg,
                                                             args.threads)
    model = load_model(model_path)
    if VJ_DETECT.get("n_stages"):
        model = model.truncated(int(VJ_DETECT["n_stages"]))
    keys = sorted(test_paths)[:30] if args.quick else sorted(test_paths)
    images = {k: gray(test_paths[k]) for k in keys}
    truth = {k: truth[k] for k in keys if k in truth}
    step = 4 if args.quick else 1
    cars = [gray(p) for p in pos[::step]]
    negs = [cv2.resize(gray(p), (200, 80)) for p in neg[::step]]
    ddet, dl_train_s = train_dlib(cars, _pick(bgs, int(dcfg["n_backgrounds"]), args.seed), negs,
                                  dcfg, args.threads, args.seed)
    runs = {"vjboost": lambda ims: vj_detect(model, ims, VJ_DETECT, args.threads, False),
            "dlib": lambda ims: dlib_detect(ddet, ims, False)}
    # warm-up (numba loads its cached kernels on the first call; a cold start is measured in
    # docs/detection.md), then the detectors in turn, so that any load falls on both alike
    first = {k: images[k] for k in keys[:5]}
    for fn in runs.values():
        fn(first)
    dets, secs = {}, {k: [] for k in runs}
    for _ in range(max(1, args.repeats)):
        for name, fn in runs.items():
            dets[name], sec = fn(images)
            secs[name].append(sec)
    vj_dets, dl_dets = dets["vjboost"], dets["dlib"]
    vj_det_s, dl_det_s = (float(np.median(secs[k])) for k in ("vjboost", "dlib"))
    ev_vj = evaluate_uiuc(vj_dets, truth)
    ev_dl = evaluate_uiuc(dl_dets, truth)
    n = len(images)
    print(f"\nUIUC single-scale test: {n} images, {ev_vj.n_objects} cars"
          + (" (--quick: small models, first 30 scenes)" if args.quick else ""))
    print(f"{'detector':<10} {'EER recall':>10} {'recall':>7} {'prec.':>6} {'dets':>5} "
          f"{'train s':>8} {'detect ms/img':>13}")
    for name, ev, tr, de in (("vjboost", ev_vj, vj_train_s, vj_det_s),
                             ("dlib", ev_dl, dl_train_s, dl_det_s)):
        print(f"{name:<10} {ev.eer_recall:>10.4f} {ev.recall:>7.3f} {ev.precision:>6.3f} "
              f"{ev.n_detections:>5d} {tr:>8.1f} {1000 * de / n:>13.2f}")
    for fp in (0, 5, 10, 20, 50):
        print(f"recall at <= {fp} false positives: vjboost {ev_vj.recall_at(fp):.3f}, dlib "
              f"{ev_dl.recall_at(fp):.3f}")
    if args.plot:
        plot_curves({"vjboost (vjtrain)": ev_vj, "dlib HOG + SVM": ev_dl}, Path(args.plot))
    if args.save_model:
        from vjboost.cascade.model_io import save_model
        from vjboost.cascade.opencv_xml import write_opencv_xml

        model.params.update(copy.deepcopy(VJ_DECLARED))
        save_model(model, args.save_model)
        if model.opencv_type is not None:
            write_opencv_xml(model, Path(args.save_model).with_suffix(".xml"))
    result = {
        "quick": args.quick, "n_images": n, "n_cars": ev_vj.n_objects,
        "eer_recall_vjboost": round(ev_vj.eer_recall, 4),
        "eer_recall_dlib": round(ev_dl.eer_recall, 4),
        "train_seconds_vjboost": round(vj_train_s, 1), "train_seconds_dlib": round(dl_train_s, 1),
        "train_cpu_seconds_vjboost": None if vj_train_cpu is None else round(vj_train_cpu, 1),
        "detect_seconds_vjboost": round(vj_det_s, 3), "detect_seconds_dlib": round(dl_det_s, 3),
        "detect_ms_per_image_vjboost": round(1000 * vj_det_s / n, 2),
        "detect_ms_per_image_dlib": round(1000 * dl_det_s / n, 2),
        "detect_time_ratio": round(vj_det_s / max(dl_det_s, 1e-9), 3),
        "train_time_ratio": round(vj_train_s / max(dl_train_s, 1e-9), 3),
        "dlib_upsample": dlib_upsample(ddet), "vj_config": cfg, "vj_detect": VJ_DETECT,
        "dlib_config": {**dcfg, "window": list(dcfg["window"])}, "threads": args.threads,
    }
    print("RESULT " + json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="smoke run, under a minute")
    ap.add_argument("--validate", action="store_true",
                    help="model selection on held-out training data (no test image is read)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--backgrounds", type=Path, default=BACKGROUNDS)
    ap.add_argument("--work", default="runs/bench_cars", help="training outputs (not in git)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resume", action="store_true",
                    help="use the model an earlier run of the same mode trained in --work")
    ap.add_argument("--plot", help="PNG of recall against false positives of both detectors")
    ap.add_argument("--save-model", help="copy the trained model.json here (+ .xml)")
    ap.add_argument("--which", default="vjboost,dlib", help="(--validate) detectors to tune")
    ap.add_argument("--vj-configs", default="", help="(--validate) ';'-separated vjtrain option "
                    "overrides, e.g. 'features=lbp;window=60x24'")
    ap.add_argument("--dlib-c", default="1,5,20")
    ap.add_argument("--dlib-windows", default="60x24,80x32")
    ap.add_argument("--dlib-backgrounds", default="300")
    ap.add_argument("--scale-factors", default="1.1")
    ap.add_argument("--min-neighbors", default="1")
    ap.add_argument("--confidences", default="neighbors,score")
    ap.add_argument("--borders", default="none", help="(--validate) detector borders to try: "
                    "none, replicate, reflect")
    ap.add_argument("--border-margins", default="0.25", help="(--validate) shares of the window "
                    "a window may extend past the image (with a border)")
    ap.add_argument("--steps", default="opencv", help="(--validate) scan grids to try: opencv "
                    "(2 px below scale 2, 1 px above) or a step in pixels at every scale")
    ap.add_argument("--n-stages", default="", help="(--validate) also score the cascades cut "
                    "to these stage counts, e.g. 12,16")
    ap.add_argument("--screen", help="a car cascade to run over the backgrounds: contact sheets "
                    "of its most confident windows in WORK/screen/, to look for cars")
    ap.add_argument("--top", type=int, default=120, help="(--screen) windows drawn")
    ap.add_argument("--save-scenes", help="(--validate) write the validation scenes here")
    ap.add_argument("--time-detection", help="car cascades (model.json[@n_stages][#step],...) "
                    "to time against each other and dlib on the validation scenes, interleaved")
    ap.add_argument("--repeats", type=int, default=3,
                    help="detection timing rounds (median; interleaved with dlib's)")
    args = ap.parse_args()
    if not (args.data / "trueLocations.txt").is_file():
        print(f"needs the UIUC car data in {args.data}")
        print("RESULT " + json.dumps({"skipped": True}))
        return
    args.which = args.which.split(",")
    args.vj_configs = args.vj_configs.split(";")
    args.dlib_c = [float(v) for v in args.dlib_c.split(",")]
    args.dlib_windows = args.dlib_windows.split(",")
    args.dlib_backgrounds = [int(v) for v in args.dlib_backgrounds.split(",")]
    args.scale_factors = [float(v) for v in args.scale_factors.split(",")]
    args.min_neighbors = [int(v) for v in args.min_neighbors.split(",")]
    args.confidences = args.confidences.split(",")
    args.borders = [None if v == "none" else v for v in args.borders.split(",")]
    args.border_margins = [float(v) for v in args.border_margins.split(",")]
    args.n_stages = [int(v) for v in args.n_stages.split(",") if v]
    args.steps = [None if v == "opencv" else int(v) for v in args.steps.split(",")]
    if args.screen:
        screen(args)
    elif args.time_detection:
        time_detection(args)
    elif args.validate:
        validate(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
