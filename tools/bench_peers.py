"""Benchmark: every face detector on CMU-MIT in one run — dlib HOG, OpenCV's cascades, vjboost.

Detectors (all on the same decoded grey images, ``../shared/data/cmu-mit``, 107 images with 354
faces, the 13 face-free images included):

* dlib's HOG frontal-face detector (``dlib.get_frontal_face_detector()``), ``run(img,
  upsample_num_times, adjust_threshold=-1)`` at upsample 2 (finds faces down to ~20 px, like a
  20×20 cascade) and 1 (for reference); curve: its score threshold swept.
* OpenCV's ``haarcascade_frontalface_default`` and ``alt2``; timed with ``cv2.CascadeClassifier``
  (scale factor 1.1, minNeighbors 3, minSize = the window) where the installed OpenCV has it, else
  with vjboost's detector; their curves come from vjboost's detector, which returns the same
  detections (checked in the run: ``identical`` counts the images where the two agree at
  minNeighbors 3).
* vjboost models (``--model``, several allowed; default ``vjboost:frontalface``), scale factor 1.1,
  minimum size = the window, timed at minNeighbors 3, or at the operating score a model declares
  (its ``min_neighbors`` and ``score="model"``: a declared verifier's cost is in the time).

Curves (detection rate against false positives at IoU ≥ 0.3, greedy score-ordered matching of
``vjboost.eval``): for cascades ``min_neighbors`` (grouping redone at each value 0–30) and
``score`` (windows grouped at ``--score-min-neighbors``, groups ranked by the best last-stage
score, or by the operating score a model declares: the detector's ``score``); for dlib the
score. Detection rates are read at the false-positive budgets
2, 5, 10, 20, 30, 50. dlib's rates are also read on a 0.05 grid of thresholds, the sweep
``docs/anchors.md`` used, and compared with that table.

Times: the whole image set, image decode excluded, median of ``--repeats`` (wall-clock, or the
process's CPU seconds with ``--clock cpu``, steadier on a shared machine), with 1 and 2 threads
(OpenCV: ``cv2.setNumThreads``; vjboost: its ``threads``; dlib is single-threaded: timed once,
both columns). Printed as ms per megapixel, with ratios vjboost/dlib (upsample 2) and
vjboost/OpenCV default. A vjboost model's training time is read from its report
(``<model>.report.json`` or ``report.json`` beside it: ``training_seconds``, and the seconds of
a verifier fitted after the cascade, ``verifier["seconds"]``).

Prints a table; ``-o DIR`` writes ``peers.json`` and ``peers.png`` (the curves); the last line is
``RESULT {json}``. ``--quick``: a fixed subset of 20 small images (2 MP), one repeat (well under
a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.boxes import GROUP_SCORES, drop_inside  # noqa: E402
from vjboost.cascade.detector import (  # noqa: E402,F401
    DEFAULT_OPERATING,
    declared_suppression,
    default_operating,
    model_verifier,
    operating_score,
)
from vjboost.eval import DetectionEvaluation, evaluate_detections  # noqa: E402
from vjboost.io import read_annotations, read_bg_list, read_image  # noqa: E402

SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))
BUDGETS = (2, 5, 10, 20, 30, 50)
IOU = 0.3
SCALE_FACTOR = 1.1
OPERATING_NEIGHBORS = 3  # the setting cascades are timed at (OpenCV's default minNeighbors)
MAX_NEIGHBORS = 30
QUICK_MAX_PIXELS = 250_000
# docs/anchors.md §3: dlib HOG, upsample 2, threshold swept on a 0.05 grid, IoU >= 0.3
ANCHOR_DLIB = {2: 0.856, 5: 0.867, 10: 0.887, 20: 0.898, 30: 0.921, 50: 0.927}
ANCHOR_GRID = 0.05
OPENCV = {"OpenCV default": "opencv:haarcascade_frontalface_default",
          "OpenCV alt2": "opencv:haarcascade_frontalface_alt2"}
REFERENCE = "OpenCV default"


# ------------------------------------------------------------------------------------------------
# vjboost's API, in one place (load a model, raw windows, OpenCV grouping)
# ------------------------------------------------------------------------------------------------


def vj_load(spec: str):
    """(model, window (w, h), path) of a ``vjboost:``/``opencv:`` name or a model file."""
    from vjboost.cascade import load_model
    from vjboost.cascade.shipped import resolve_model

    path = resolve_model(spec)
    model = load_model(path)
    return model, (int(model.width), int(model.height)), path


def dlib_run(detector, gray: np.ndarray, upsample: int, threshold: float = -1.0):
    """``detector.run(gray, upsample, threshold)`` of a dlib detector on a C-contiguous copy
    of ``gray`` when it is a strided view (a colour plane, a flipped image): dlib reads such an
    array's memory as if it were contiguous and returns nothing, or what other memory holds."""
    return detector.run(np.ascontiguousarray(gray), upsample, threshold)


def vj_detector(model, window: tuple[int, int], *, threads: int | None, min_neighbors: int,
                score: str = "best", coarse_to_fine: int | str | None = "model"):
    """vjboost's detector at the benchmark's settings (scale 1.1, minimum size = window; the
    scan the model declares unless ``coarse_to_fine`` says otherwise)."""
    from vjboost.cascade import CascadeDetector

    return CascadeDetector(model, scale_factor=SCALE_FACTOR, min_neighbors=min_neighbors,
                           min_size=window, threads=threads, score=score,
                           grouping="opencv" if min_neighbors > 0 else "none",
                           coarse_to_fine=coarse_to_fine)


def vj_groups(boxes: np.ndarray, scores: np.ndarray):
    """The OpenCV partition of one image's raw windows (independent of ``min_neighbors``)."""
    from vjboost.boxes import WindowGroups

    return WindowGroups(boxes, scores)


def vj_group(groups, min_neighbors: int,
             size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``detectMultiScale``'s detections at one threshold, clipped to the image:
    (boxes, best window score, neighbours); ``min_neighbors`` 0 gives the raw windows."""
    b, sc, nb = groups.select(min_neighbors, size)
    return b, np.asarray(sc, np.float64), np.asarray(nb, np.int64)


#: operating scores a grouped detection can be ranked by (what a ``score`` curve sweeps;
#: :data:`vjboost.boxes.GROUP_SCORES`), and a model's declared one
#: (:func:`vjboost.cascade.detector.operating_score`)
OPERATING_SCORES = GROUP_SCORES


def ranked(groups, min_neighbors: int, size: tuple[int, int], rank: str, *,
           last_threshold: float = 0.0, image: np.ndarray | None = None,
           verifier=None, suppress: float | None = None,
           singles: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Detections at ``min_neighbors`` and their scores by ``rank``: a group score
    (:meth:`vjboost.boxes.WindowGroups.select`) or ``"verified"`` (the margin rescored by the
    model's verifier on ``image``, as the detector's ``score="verified"``); with ``suppress``,
    those inside a better one dropped as the detector drops them (its ``suppress_inside``);
    ``singles``: at minNeighbors 0 every group rather than the raw windows (``select``'s)."""
    if rank != "verified":
        b, sc, _ = groups.select(min_neighbors, size, score=rank, offset=last_threshold,
                                 singles=singles)
    else:
        b, sc, _ = groups.select(min_neighbors, size, score="margin", offset=last_threshold,
                                 singles=singles)
        sc = verifier.rescore(image, b, sc) if len(b) else sc
    b = np.asarray(b)
    return drop_inside(b, np.asarray(sc), suppress)


def score_detections(raw, images, paths, *, ranks=OPERATING_SCORES, min_neighbors=(1,),
                     last_threshold: float = 0.0, verifier=None,
                     suppress: float | None = None) -> dict[str, dict]:
    """The ranked detections behind :func:`score_curves`: for every ``rank`` at every grouping
    threshold (keys ``"<rank>@<m>"``; ``"verified"`` too with a ``verifier``), each image's
    ``(boxes, scores)`` by path; ``suppress`` as :func:`ranked`."""
    sizes = [(g.shape[1], g.shape[0]) for g in images]
    groups = [vj_groups(b, s) for b, s in raw]
    if verifier is not None:
        ranks = (*ranks, "verified")
    return {f"{rank}@{m}": {p: ranked(g, m, sz, rank, last_threshold=last_threshold, image=img,
                                      verifier=verifier, suppress=suppress)
                            for p, g, sz, img in zip(paths, groups, sizes, images, strict=True)}
            for m in min_neighbors for rank in ranks}


def curves_of(detections: dict[str, dict], gt) -> dict[str, dict]:
    """Each curve of :func:`score_detections` evaluated against ``gt`` (the images of
    ``detections``; a subset of the images scores that subset): its rates at the budgets and
    its envelope points."""
    out = {}
    for key, dets in detections.items():
        rank, m = key.rsplit("@", 1)
        ev = evaluate_detections(dets, gt, iou_threshold=IOU)
        out[key] = {"rates": rates(ev), "points": curve_points(ev), "rank": rank,
                    "min_neighbors": int(m)}
    return out


def score_curves(raw, images, gt, paths, **kw) -> dict[str, dict]:
    """``score`` curves of one cascade's raw windows (:func:`score_detections` with ``kw``,
    evaluated by :func:`curves_of`)."""
    return curves_of(score_detections(raw, images, paths, **kw), gt)


# ------------------------------------------------------------------------------------------------
# data and evaluation
# ------------------------------------------------------------------------------------------------


def load_cmu(quick: bool) -> tuple[list[str], list[np.ndarray], dict[str, np.ndarray]]:
    """Decoded grey images and ground truth of CMU-MIT (quick: a fixed 20-image subset)."""
    folder = SHARED / "data" / "cmu-mit"
    if not (folder / "images.txt").is_file():
        sys.exit(f"bench_peers: {folder}/images.txt not found (CMU-MIT lives in ../shared/data; "
                 "set VJBOOST_SHARED)")
    paths = read_bg_list(folder / "images.txt")
    images = [read_image(p) for p in paths]
    if quick:  # every 2nd image of at most 0.25 MP: 20 images, 2 MP, 41 faces, 2 face-free
        keep = [i for i, g in enumerate(images) if g.size <= QUICK_MAX_PIXELS][::2][:20]
        paths, images = [paths[i] for i in keep], [images[i] for i in keep]
    gt_all = read_annotations(folder / "faces.csv")
    gt = {p: np.asarray(gt_all.get(p, np.zeros((0, 4))), np.float64).reshape(-1, 4)
          for p in paths}
    return paths, images, gt


def rates(ev: DetectionEvaluation) -> dict[str, float]:
    return {str(b): round(ev.detection_rate_at(b), 4) for b in BUDGETS}


def rates_on_grid(ev: DetectionEvaluation, step: float) -> dict[str, float]:
    """Rates when the threshold only takes multiples of ``step`` (anchors.md's sweep)."""
    tp = np.rint(ev.curve_detection_rate * ev.n_ground_truth)
    fp = ev.curve_false_positives
    grid = np.arange(np.floor(ev.thresholds.min() / step) - 1,
                     np.ceil(ev.thresholds.max() / step) + 2) * step
    # the curve point of each grid threshold: the last distinct score >= it
    idx = np.searchsorted(-ev.thresholds, -grid + 1e-9, side="right") - 1
    ok = idx >= 0
    idx = idx[ok]
    out = {}
    for b in BUDGETS:
        sel = fp[idx] <= b
        out[str(b)] = round(float(tp[idx][sel].max() / ev.n_ground_truth) if sel.any() else 0.0,
                            4)
    return out


def point_at(ev: DetectionEvaluation, min_score: float) -> dict[str, float] | None:
    """The detection rate and false positives of the detections scored at least ``min_score``
    (None when none is)."""
    i = np.flatnonzero(np.asarray(ev.thresholds) >= min_score)
    if not i.size:
        return None
    return {"detection_rate": round(float(ev.curve_detection_rate[i[-1]]), 4),
            "false_positives": int(ev.curve_false_positives[i[-1]])}


def curve_points(ev: DetectionEvaluation, max_fp: int = 200) -> dict[str, list]:
    """The upper envelope of a score curve (best rate at each false-positive count), with the
    score threshold of each point (``min_score``: detections scored at least this)."""
    fp, dr = ev.curve_false_positives, ev.curve_detection_rate
    keep = np.flatnonzero(np.r_[fp[1:] != fp[:-1], True] & (fp <= max_fp))
    return {"false_positives": fp[keep].tolist(),
            "detection_rate": [round(float(v), 4) for v in dr[keep]],
            "min_score": [float(v) for v in np.asarray(ev.thresholds)[keep]]}


class Cascade:
    """One cascade: raw windows once for the curves, timed at minNeighbors 3 or, for a model
    that declares an operating score, as a user runs it there (its ``min_neighbors``,
    ``score="model"``, so that a declared verifier is timed too)."""

    def __init__(self, label: str, spec: str, *, kind: str) -> None:
        self.label, self.spec, self.kind = label, spec, kind
        self.model, self.window, self.path = vj_load(spec)
        self.cv = None
        if kind == "opencv" and hasattr(cv2, "CascadeClassifier"):
            self.cv = cv2.CascadeClassifier(self.path)
        self.timed_neighbors, self.timed_score = OPERATING_NEIGHBORS, "best"
        if kind == "vjboost" and "operating_score" in self.model.params:
            self.timed_neighbors = operating_score(self.model)["min_neighbors"]
            self.timed_score = "model"

    def raw(self, images: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        det = vj_detector(self.model, self.window, threads=None, min_neighbors=0)
        return [det.raw_windows(g) for g in images]

    def timer(self, threads: int, coarse_to_fine: int | str | None = "model"
              ) -> Callable[[np.ndarray], object]:
        """The timed detection of one image (a vjboost model with the scan it declares, or
        ``coarse_to_fine``: a stage count, None for every grid window)."""
        if self.cv is not None:
            cc, win = self.cv, self.window

            def run(g):
                return cc.detectMultiScale(g, SCALE_FACTOR, OPERATING_NEIGHBORS, minSize=win)
            return run
        return vj_detector(self.model, self.window, threads=threads,
                           min_neighbors=self.timed_neighbors, score=self.timed_score,
                           coarse_to_fine=coarse_to_fine).detect

    def expected(self, raw, images) -> list[np.ndarray]:
        """The boxes the timed detector should return on each image, from the raw windows of
        the curves: grouped at its ``min_neighbors``, ranked as it ranks them, and without the
        boxes inside better ones that the model declares dropping."""
        m = self.timed_neighbors
        if self.timed_score == "model":
            rank = operating_score(self.model)["rank"]
            verifier = model_verifier(self.model) if rank == "verified" else None
        else:
            rank, verifier = self.timed_score, None
        return [ranked(vj_groups(b, s), m, (g.shape[1], g.shape[0]), rank,
                       last_threshold=self.model.stages[-1].threshold, image=g,
                       verifier=verifier, suppress=declared_suppression(self.model))[0]
                for (b, s), g in zip(raw, images, strict=True)]

    def training_seconds(self) -> float | None:
        p = Path(self.path)
        for rep in (p.with_suffix(".report.json"), p.parent / "report.json"):
            if rep.is_file():
                try:
                    r = json.loads(rep.read_text())
                except (OSError, ValueError):
                    continue
                if r.get("training_seconds") is not None:
                    # a verifier fitted after the cascade (vjtrain --verifier, train_face.py
                    # --ship) is part of the training
                    ver = r.get("verifier") or {}
                    return round(float(r["training_seconds"]) + float(ver.get("seconds") or 0), 1)
        return None


def cascade_curves(raw, images, gt, paths, score_neighbors: int, *, rank: str = "best",
                   last_threshold: float = 0.0, verifier=None,
                   suppress: float | None = None,
                   min_score: float | None = None) -> tuple[dict, dict]:
    """min_neighbors and score curves of one cascade's raw windows (the score curve ranks the
    groups at ``score_neighbors`` by ``rank``, one of :data:`OPERATING_SCORES`); with
    ``suppress``, the detections inside a better one are dropped as the detector drops them
    (by the best window's score at each ``min_neighbors``, OpenCV's ``score``). With
    ``min_score``, the score curve also gives its point at that threshold
    (``at_min_score``: :func:`point_at`)."""
    sizes = [(g.shape[1], g.shape[0]) for g in images]
    groups = [vj_groups(b, s) for b, s in raw]
    by_m = {}
    for m in range(MAX_NEIGHBORS + 1):
        dets = {}
        for p, g, sz in zip(paths, groups, sizes, strict=True):
            gb, gs, gn = vj_group(g, m, sz)
            if m > 0:  # grouped detections, ranked by their neighbours
                gb, _, gn = drop_inside(gb, gs, suppress, gn)
                dets[p] = (gb, gn.astype(np.float64))
            else:  # raw windows are never dropped
                dets[p] = (gb, gs)
        by_m[m] = evaluate_detections(dets, gt, iou_threshold=IOU)
    fp = np.array([by_m[m].false_positives for m in by_m])
    dr = np.array([by_m[m].detection_rate for m in by_m])
    neigh = {"rates": {str(b): round(float(dr[fp <= b].max()) if (fp <= b).any() else 0.0, 4)
                       for b in BUDGETS},
             "points": {"min_neighbors": list(by_m), "false_positives": fp.tolist(),
                        "detection_rate": [round(float(v), 4) for v in dr]}}
    dets = {}
    for p, g, sz, img in zip(paths, groups, sizes, images, strict=True):
        dets[p] = ranked(g, score_neighbors, sz, rank, last_threshold=last_threshold,
                         image=img, verifier=verifier, suppress=suppress)
    ev = evaluate_detections(dets, gt, iou_threshold=IOU)
    score = {"rates": rates(ev), "points": curve_points(ev),
             "min_neighbors": score_neighbors, "rank": rank}
    if min_score is not None:
        score["at_min_score"] = point_at(ev, min_score)
    return neigh, score


def at_defaults(model, neigh: dict, score: dict) -> dict:
    """Where a detector with nothing set runs ``model`` on the curves of
    :func:`cascade_curves` (the score curve computed at the model's declared operating score
    and default threshold): :func:`vjboost.cascade.detector.default_operating`'s settings with
    their detection rate and false positives."""
    d = default_operating(model)
    if d["min_score"] is not None:
        point = score["at_min_score"]
    else:
        k = neigh["points"]["min_neighbors"].index(d["min_neighbors"])
        point = {"detection_rate": neigh["points"]["detection_rate"][k],
                 "false_positives": neigh["points"]["false_positives"][k]}
    return {**d, **(point or {"detection_rate": 0.0, "false_positives": 0})}


def dlib_boxes(rects) -> np.ndarray:
    return np.array([[r.left(), r.top(), r.right() - r.left() + 1, r.bottom() - r.top() + 1]
                     for r in rects], dtype=np.float64).reshape(-1, 4)


def dlib_evaluation(paths, runs, gt) -> DetectionEvaluation:
    """Score-swept evaluation of dlib's ``run(img, up, -1)`` outputs (one per image)."""
    dets = {p: (dlib_boxes(r), np.asarray(s, np.float64))
            for p, (r, s, _) in zip(paths, runs, strict=True)}
    return evaluate_detections(dets, gt, iou_threshold=IOU)


def _same(a, b) -> bool:
    return Counter(map(tuple, np.asarray(a).reshape(-1, 4).tolist())) == \
        Counter(map(tuple, np.asarray(b).reshape(-1, 4).tolist()))


# ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="20 images, 1 repeat (< 1 min)")
    ap.add_argument("--model", action="append", default=None,
                    help="vjboost model (name or path; repeatable; default vjboost:frontalface)")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats (median; 3, quick 1)")
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts")
    ap.add_argument("--primary", choices=("min_neighbors", "score"), default="min_neighbors",
                    help="the cascades' curve in the headline table and RESULT")
    ap.add_argument("--score-min-neighbors", type=int, default=1,
                    help="grouping threshold of the windows the score curve ranks")
    ap.add_argument("--no-dlib", action="store_true", help="skip dlib")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time detectors by wall-clock or by the process's CPU seconds (user + "
                         "sys: steadier on a shared machine; with 2 threads it sums both)")
    ap.add_argument("-o", "--output", default=None, help="folder for peers.json and peers.png")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    import numba

    repeats = args.repeats or (1 if args.quick else 3)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    threads = [t for t in (int(v) for v in args.threads.split(","))
               if 1 <= t <= numba.config.NUMBA_NUM_THREADS]
    paths, images, gt = load_cmu(args.quick)
    mp = sum(g.size for g in images) / 1e6
    n_faces = int(sum(len(v) for v in gt.values()))
    print(f"CMU-MIT: {len(images)} images ({sum(1 for v in gt.values() if not len(v))} face-free),"
          f" {n_faces} faces, {mp:.2f} MP; IoU >= {IOU}; repeats {repeats}; threads {threads}; "
          f"clock {args.clock}; cv2 {cv2.__version__}, numba {numba.__version__}")

    cascades = [Cascade(label, spec, kind="opencv") for label, spec in OPENCV.items()]
    for spec in args.model or ["vjboost:frontalface"]:
        label = spec if spec.startswith("vjboost:") else Path(spec).stem
        cascades.append(Cascade(label, spec, kind="vjboost"))

    results: dict[str, dict] = {}
    # curves of the cascades: raw windows once per image (identical to detectMultiScale's)
    raws = {}
    for c in cascades:
        raws[c.label] = c.raw(images)
        op = (operating_score(c.model) if c.kind == "vjboost" and "operating_score"
              in c.model.params else {"min_neighbors": args.score_min_neighbors, "rank": "best"})
        neigh, score = cascade_curves(raws[c.label], images, gt, paths, op["min_neighbors"],
                                      rank=op["rank"],
                                      last_threshold=c.model.stages[-1].threshold,
                                      verifier=(model_verifier(c.model) if op["rank"]
                                                == "verified" else None),
                                      suppress=declared_suppression(c.model),
                                      min_score=default_operating(c.model)["min_score"])
        results[c.label] = {"kind": c.kind, "model": c.spec, "window": list(c.window),
                            "curves": {"min_neighbors": neigh, "score": score},
                            "primary": args.primary,
                            "rates": (neigh if args.primary == "min_neighbors" else score)["rates"],
                            "at_defaults": at_defaults(c.model, neigh, score)}
        if c.kind == "vjboost":
            results[c.label]["training_seconds"] = c.training_seconds()

    # dlib: one untimed warm-up image, then the timed passes give the detections too
    dlib_runs = {}
    if not args.no_dlib:
        try:
            import dlib
        except ImportError:
            print("dlib not installed (pip install dlib-bin): skipped")
        else:
            hog = dlib.get_frontal_face_detector()
            dlib_run(hog, images[0], 1)
            for up in (2, 1):
                dlib_runs[f"dlib HOG up{up}"] = (
                    lambda g, up=up: dlib_run(hog, g, up), up)

    # timing: every detector on the whole set, interleaved, median of the repeats
    times: dict[str, dict[int, list[float]]] = {}
    dlib_out: dict[str, list] = {}
    identical: dict[str, int] = {}
    for th in threads:
        cv2.setNumThreads(th)
        runners = {c.label: c.timer(th) for c in cascades}
        for fn in runners.values():
            fn(images[0])  # load / compile before timing
        for rep in range(repeats):
            for label, fn in runners.items():
                t0 = clock()
                out = [fn(g) for g in images]
                times.setdefault(label, {}).setdefault(th, []).append(clock() - t0)
                if rep == 0 and th == threads[0]:
                    ref = next(c for c in cascades if c.label == label).expected(
                        raws[label], images)
                    boxes = [o.boxes if hasattr(o, "boxes") else o for o in out]
                    identical[label] = sum(_same(a, b) for a, b in zip(boxes, ref, strict=True))
            if th == threads[0]:  # dlib is single-threaded: timed once
                for label, (fn, _) in dlib_runs.items():
                    t0 = clock()
                    out = [fn(g) for g in images]
                    times.setdefault(label, {}).setdefault(th, []).append(clock() - t0)
                    dlib_out.setdefault(label, out)
    cv2.setNumThreads(-1)

    for label, (_, up) in dlib_runs.items():
        ev = dlib_evaluation(paths, dlib_out[label], gt)
        at0 = point_at(ev, 0.0)  # dlib's default threshold
        results[label] = {"kind": "dlib", "upsample": up, "rates": rates(ev),
                          "rates_grid_0.05": rates_on_grid(ev, ANCHOR_GRID),
                          "at_threshold_0": at0, "curves": {"score": {"rates": rates(ev),
                                                                      "points": curve_points(ev)}}}

    # per-detector times and ratios
    per_mp = {label: {th: 1000 * float(np.median(v)) / mp for th, v in t.items()}
              for label, t in times.items()}
    for label, t in per_mp.items():
        t = {th: t.get(th, t[threads[0]]) for th in threads}  # dlib: the same for every count
        per_mp[label] = t
        results[label]["ms_per_mp"] = {str(th): round(v, 1) for th, v in t.items()}
        timed_by = "dlib" if results[label]["kind"] == "dlib" else (
            "cv2" if label in OPENCV and next(
                c for c in cascades if c.label == label).cv is not None else "vjboost")
        results[label]["timed_with"] = timed_by
        if label in identical:
            c = next(c for c in cascades if c.label == label)
            results[label].update(identical_images_timed=identical[label],
                                  timed_min_neighbors=c.timed_neighbors,
                                  timed_score=c.timed_score)
    dl = "dlib HOG up2"
    for c in cascades:
        if c.kind != "vjboost":
            continue
        r = results[c.label]
        r["time_over_opencv_default"] = {str(th): round(per_mp[c.label][th] / per_mp[REFERENCE][th],
                                                        3) for th in threads}
        if dl in per_mp:
            r["time_over_dlib"] = {str(th): round(per_mp[c.label][th] / per_mp[dl][th], 3)
                                   for th in threads}

    # table
    cols = " ".join(f"{'@' + str(b):>6s}" for b in BUDGETS)
    tcols = " ".join(f"{str(th) + 't ms/MP':>10s}" for th in threads)
    print(f"\n{'detector':<26s} {'curve':<13s} {cols} {tcols}  {'xdlib':>6s} {'xdefault':>8s} "
          f"{'train s':>8s}")
    order = [d for d in dlib_runs] + [c.label for c in cascades]
    for label in order:
        r = results[label]
        curves = [("score", r["rates"])] if r["kind"] == "dlib" else [
            (k, r["curves"][k]["rates"]) for k in ("min_neighbors", "score")]
        if r["kind"] == "dlib":
            curves.append(("score, 0.05 grid", r["rates_grid_0.05"]))
        for i, (name, rt) in enumerate(curves):
            cells = " ".join(f"{rt[str(b)]:6.3f}" for b in BUDGETS)
            if i == 0:
                tm = " ".join(f"{per_mp[label][th]:10.0f}" for th in threads)
                xd = r.get("time_over_dlib", {}).get(str(threads[0]))
                xo = r.get("time_over_opencv_default", {}).get(str(threads[-1]))
                ts = r.get("training_seconds")
                extra = (f"  {'' if xd is None else f'{xd:.2f}':>6s} "
                         f"{'' if xo is None else f'{xo:.2f}':>8s} "
                         f"{'' if ts is None else f'{ts:.0f}':>8s}")
            else:
                tm, extra = " " * len(tcols), ""
            print(f"{label if i == 0 else '':<26s} {name:<13s} {cells} {tm}{extra}")
    print("(rates = detection rate at <= that many false positives; xdlib: vjboost time / dlib "
          f"upsample 2 at {threads[0]} thread(s); xdefault: / OpenCV default at {threads[-1]}; "
          f"cascades timed at minNeighbors {OPERATING_NEIGHBORS} or their declared operating "
          "score)")
    print("at their defaults (nothing set): " + "; ".join(
        f"{label} {a['detection_rate']:.3f} with {a['false_positives']} FP" for label, a in (
            (lb, results[lb].get("at_defaults") or results[lb].get("at_threshold_0"))
            for lb in order) if a))
    for label, n in identical.items():
        c = next(c for c in cascades if c.label == label)
        print(f"  {label}: timed at minNeighbors {c.timed_neighbors}, score {c.timed_score!r}; "
              f"its detections = the curve's grouping in {n}/{len(images)} images")
    reproduced = None
    if dl in results:
        g = results[dl]["rates_grid_0.05"]
        reproduced = None if args.quick else all(abs(g[str(b)] - v) < 5e-4
                                                 for b, v in ANCHOR_DLIB.items())
        print("dlib up2 on anchors.md's 0.05 threshold grid: "
              + ", ".join(f"{g[str(b)]:.3f}" for b in BUDGETS)
              + f" (anchors.md: {', '.join(f'{v:.3f}' for v in ANCHOR_DLIB.values())})"
              + ("" if args.quick else f" -> {'reproduced' if reproduced else 'DIFFERENT'}"))

    summary = {
        "quick": args.quick, "images": len(images), "faces": n_faces,
        "megapixels": round(mp, 2), "iou": IOU, "budgets": list(BUDGETS), "repeats": repeats,
        "threads": threads, "clock": args.clock, "primary_cascade_curve": args.primary,
        "dlib_anchor_reproduced": reproduced,
        "detectors": {label: {k: v for k, v in results[label].items() if k != "curves"}
                      for label in order},
        "wall_s": round(time.perf_counter() - t_start, 1),
    }
    if args.output:
        _write(Path(args.output), results, summary, order)
    print("RESULT " + json.dumps(summary))
    return 0


def _write(out: Path, results: dict, summary: dict, order: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vjboost._io import atomic_write, save_png

    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "peers.json", json.dumps(dict(summary, curves={
        k: results[k]["curves"] for k in order}), indent=1))
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=100)
    for label in order:
        for name, cv in results[label]["curves"].items():
            pts = cv["points"]
            fp = np.asarray(pts["false_positives"])
            dr = np.asarray(pts["detection_rate"])
            ok = (fp > 0) & (fp <= 200)
            style = "-" if name != "min_neighbors" else "--"
            ax.step(fp[ok], dr[ok], style, where="post", lw=1.2,
                    marker="o" if name == "min_neighbors" else None, ms=3,
                    label=f"{label} ({name.replace('_', ' ')})")
    for b in BUDGETS:
        ax.axvline(b, color="0.85", lw=0.6, zorder=0)
    ax.set_xscale("log")
    ax.set_xlabel("false positives (CMU-MIT, whole set)")
    ax.set_ylabel(f"detection rate (IoU ≥ {IOU})")
    ax.set_ylim(0.5, 1.0)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, out / "peers.png")
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
