"""Detection-time variants of a face model scored on the validation views, the trained model
unchanged (rounds 26, 27, 30, 31 and 35 of docs/ablation.md).

* ``smooth``: the grey image smoothed by a Gaussian of ``--sigma`` px (``cv2.GaussianBlur``,
  kernel from σ, border reflected) before the scan; the verifier reads the image as it is
  (as it was fitted). ``0`` is the model as shipped.
* ``groups``: the declared ranking over OpenCV's groups at minNeighbors 1 (as shipped) and
  over every group, single windows included (``WindowGroups.select(0, singles=True)``: OpenCV's
  partition and its containment filter at threshold 0, where ``groupRectangles`` would return
  the raw windows).
* ``relax``: the thresholds of stages ``--stages A-B`` (default all but the last, whose
  threshold the verified score reads) lowered by each ``--delta`` (rounds 26 and 27).
* ``threshold``: the model read at ``min_score`` t (each of ``--min-score``; ``none``: no
  threshold) in the two ways an evaluation reads a cascade (round 35): its declared curve
  (minNeighbors 1, its declared ranking) cut at t (``score``), and the curve of a grouping
  threshold swept over minNeighbors 1 to 11 with every detection scored below t dropped
  (``sweep``: what ``CascadeDetector(min_neighbors=n, score="model", min_score=t)`` returns for
  each n, all of it kept), and the mean of the two (``both``).
* ``facefree``: the false alarms on each view's face-free images (``--views``, default
  ``det,det_people``: the held-out backgrounds, and those with the tiles of people's bodies) of
  the model with nothing set (its default operating point) and at OpenCV's settings
  (minNeighbors 3, the best window's score, no threshold), beside OpenCV's default and alt2
  cascades (minNeighbors 3) and dlib's HOG detector at its threshold 0 (upsample 2), each as
  ``tools/bench_peers.py`` runs it.

Each variant is scored as the rounds score a candidate: on each view of ``tools/face_data.py``
(``--views``, default the five of ``train_face.FIVE_VIEWS``; ``det_heads`` by name), the
declared curve's mean detection rate at the benchmark's six false-positive budgets counted at
CMU-MIT's density (``train_face.scaled_budgets``), and the mean over the views. The scan, the
σ gate, the verifier and the share of a detection inside a better one that drops it are the
model's. ``--quick`` takes every tenth image of
each view (under a minute with ``--views det``).

::

    python tools/view_variants.py --data ../data/faces_ctx smooth --sigma 0,0.5,0.7,1
    python tools/view_variants.py --data ../data/faces_ctx groups
    python tools/view_variants.py --data ../data/faces_ctx --quick --views det groups
    python tools/view_variants.py --data ../data/faces_ctx relax --delta 0,0.2 --stages 6-16
    python tools/view_variants.py --data ../data/faces_ctx threshold --min-score none,2.14
    python tools/view_variants.py --data ../data/faces_ctx facefree

The last line is ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np

from vjboost.eval import evaluate_detections

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_peers as bp  # noqa: E402
import train_face as tf  # noqa: E402
from _cli import description  # noqa: E402

#: the grouping thresholds of ``threshold``'s sweep (minNeighbors 1 to 11: vjeval's default
#: curve without its raw windows)
SWEEP_NEIGHBORS = tuple(range(1, 12))

#: the largest σ (px) or δ accepted: a 20-px face blurred by 4 px is a blur, and stage sums
#: lowered by 4 no longer reject
MAX_SIGMA = 4.0


def parse_sigmas(text: str, *, what: str = "--sigma") -> list[float]:
    """Distinct numbers in ``[0, MAX_SIGMA]``: ``--sigma``'s σ in px (0: no smoothing), or
    ``--delta``'s amounts (``what``)."""
    out: list[float] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            v = float(part)
        except ValueError:
            v = float("nan")
        if not 0.0 <= v <= MAX_SIGMA:
            raise ValueError(f"{what}: expected numbers in [0, {MAX_SIGMA}], got {part!r}")
        out.append(v)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: expected distinct values, got {text!r}")
    return out


def parse_views(text: str) -> list[str]:
    """``--views``: distinct names of ``train_face.SPLITS``."""
    out = [p.strip() for p in text.split(",")]
    bad = [v for v in out if v not in tf.SPLITS]
    if bad or not out or len(set(out)) != len(out):
        raise ValueError(f"--views: expected distinct names of {', '.join(tf.SPLITS)}, "
                         f"got {text!r}")
    return out


def smoothed(image: np.ndarray, sigma: float) -> np.ndarray:
    """``image`` (H, W) uint8 smoothed by a Gaussian of ``sigma`` px (itself for 0)."""
    return image if sigma == 0 else cv2.GaussianBlur(image, (0, 0), sigma)


def _score(detections: dict, gt, budgets) -> float:
    pts = bp.curves_of({"v@1": detections}, gt)["v@1"]["points"]
    return round(tf.budget_mean(pts, budgets)[1], 4)


def relaxed(model, delta: float, stages: tuple[int, int]):
    """A copy of ``model`` with the thresholds of stages ``stages[0] .. stages[1]`` (counted
    from 1, inclusive) lowered by ``delta`` (round 26: every stage but the last)."""
    from vjboost.cascade.model import Stage

    a, b = stages
    return model.with_stages([
        Stage(st.trees, threshold=st.threshold - delta * (a <= i <= b), exits=st.exits)
        for i, st in enumerate(model.stages, start=1)])


def parse_stages(text: str, n_stages: int) -> tuple[int, int]:
    """``--stages A-B``: a range of stage numbers in ``1..n_stages``."""
    a, sep, b = text.partition("-")
    if not (sep and a.strip().isdigit() and b.strip().isdigit()
            and 1 <= int(a) <= int(b) <= n_stages):
        raise ValueError(f"--stages: expected A-B with 1 <= A <= B <= {n_stages}, got {text!r}")
    return int(a), int(b)


def parse_thresholds(text: str) -> list[float]:
    """``--min-score``: distinct finite numbers, or ``none`` (no threshold: ``-inf``)."""
    out: list[float] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            v = -np.inf if part == "none" else float(part)
        except ValueError:
            v = float("nan")
        if np.isnan(v) or v == np.inf:
            raise ValueError(f"--min-score: expected numbers or 'none', got {part!r}")
        out.append(v)
    if not out or len(set(out)) != len(out):
        raise ValueError(f"--min-score: expected distinct values, got {text!r}")
    return out


def declared_ranking(model) -> tuple[str, dict]:
    """How the rounds rank a model's groups (:func:`bench_peers.ranked`'s ``rank`` and keyword
    arguments): its verifier's score (the margin without one), over its last stage's
    threshold, those inside a better one dropped at its declared share."""
    verifier = bp.model_verifier(model) if "verifier" in model.params else None
    return ("verified" if verifier is not None else "margin",
            {"last_threshold": model.stages[-1].threshold, "verifier": verifier,
             "suppress": bp.declared_suppression(model)})


def threshold_view(model, window, data: Path, view: str, quick: bool,
                   thresholds: list[float]) -> dict[str, dict[str, float]]:
    """Round 35's three scores of each ``min_score`` on one view: ``score`` (the declared
    curve cut at it), ``sweep`` (minNeighbors :data:`SWEEP_NEIGHBORS` under it) and ``both``
    (their mean)."""
    paths, images, gt = tf.load_validation(data, quick, view)
    budgets = tf.scaled_budgets(sum(g.size for g in images) / 1e6, tf.CMU_MIT_MP)
    det = bp.vj_detector(model, window, threads=1, min_neighbors=0)
    groups = [bp.vj_groups(*det.raw_windows(g)) for g in images]
    rank, kw = declared_ranking(model)
    # each grouping threshold's detections, scored and pruned as the detector does them
    by_n = {n: {p: bp.ranked(gr, n, (g.shape[1], g.shape[0]), rank, image=g, **kw)
                for p, g, gr in zip(paths, images, groups, strict=True)}
            for n in SWEEP_NEIGHBORS}
    out = {}
    for t in thresholds:
        kept = {n: {p: (b[s >= t], s[s >= t]) for p, (b, s) in d.items()}
                for n, d in by_n.items()}
        score = _score(kept[1], gt, budgets)
        evs = [evaluate_detections(kept[n], gt, iou_threshold=bp.IOU) for n in SWEEP_NEIGHBORS]
        _, sweep = tf.budget_mean({"false_positives": [e.false_positives for e in evs],
                                   "detection_rate": [e.detection_rate for e in evs]}, budgets)
        out[_t_name(t)] = {"score": score, "sweep": round(sweep, 4),
                           "both": round((score + sweep) / 2, 4)}
    return out


def face_free_alarms(model, window, data: Path, view: str, quick: bool) -> dict:
    """The false alarms of the model (nothing set, and OpenCV's settings) and of the peers on
    the face-free images of one view (those with no box): ``{"images", "megapixels",
    "false_alarms": {detector: count}}``; dlib is left out when it is not installed."""
    from vjboost.cascade import CascadeDetector

    paths, images, gt = tf.load_validation(data, quick, view)
    free = [g for p, g in zip(paths, images, strict=True) if not len(gt[p])]
    kw = {"scale_factor": bp.SCALE_FACTOR, "min_size": window}
    runs = {"nothing set": CascadeDetector(model, **kw).detect,
            "OpenCV's settings": CascadeDetector(model, min_neighbors=bp.OPERATING_NEIGHBORS,
                                                 score="best", min_score=None, **kw).detect}
    for label, spec in bp.OPENCV.items():
        runs[label] = bp.Cascade(label, spec, kind="opencv").timer(1)
    try:
        import dlib
    except ImportError:
        pass
    else:
        hog = dlib.get_frontal_face_detector()
        runs["dlib HOG up2"] = lambda g: bp.dlib_run(hog, g, 2, 0.0)[0]
    return {"images": len(free), "megapixels": round(sum(g.size for g in free) / 1e6, 2),
            "false_alarms": {k: int(sum(len(run(g)) for g in free)) for k, run in runs.items()}}


def _print_facefree(args, views: list[str], per_view: dict) -> None:
    names = list(next(iter(per_view.values()))["false_alarms"])
    print(f"{args.model}: false alarms on the face-free images of each view" +
          (" (quick: every tenth image)" if args.quick else ""))
    print(f"  {'detector':<22s}" + "".join(
        f"{v + ' (' + str(per_view[v]['images']) + ')':>22s}" for v in views))
    for n in names:
        print(f"  {n:<22s}" + "".join(f"{per_view[v]['false_alarms'][n]:22d}" for v in views))
    print("RESULT " + json.dumps({"quick": args.quick, "model": args.model,
                                  "variants": "facefree", "views": per_view}))


def _t_name(t: float) -> str:
    return "none" if t == -np.inf else f"min_score={t:g}"


def score_view(variants: dict, window, data: Path, view: str, quick: bool) -> dict[str, float]:
    """Each variant's score on one view. ``variants`` maps a name to ``(model, sigma,
    singles)``: the model scanned (its declared scan, gate, verifier and share), the σ of the
    smoothing before the scan (0: none) and whether every group is ranked (``singles``) or the
    groups of minNeighbors 1."""
    paths, images, gt = tf.load_validation(data, quick, view)
    budgets = tf.scaled_budgets(sum(g.size for g in images) / 1e6, tf.CMU_MIT_MP)
    raw: dict[tuple, list] = {}
    out = {}
    for name, (model, sigma, singles) in variants.items():
        key = (id(model), sigma)
        if key not in raw:
            det = bp.vj_detector(model, window, threads=1, min_neighbors=0)
            raw[key] = [det.raw_windows(smoothed(g, sigma)) for g in images]
        rank, kw = declared_ranking(model)
        # the model's own ranking (on the image as it is) of its groups at minNeighbors 1,
        # or of every group
        dets = {p: bp.ranked(bp.vj_groups(b, s), 0 if singles else 1, (g.shape[1], g.shape[0]),
                             rank, image=g, singles=singles, **kw)
                for p, g, (b, s) in zip(paths, images, raw[key], strict=True)}
        out[name] = _score(dets, gt, budgets)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--data", type=Path, default=tf.DATA, help="tools/face_data.py's output")
    ap.add_argument("--model", default="vjboost:frontalface", help="name or model file")
    ap.add_argument("--views", default=None,
                    help="comma list of views (default: the five of rounds 25-54; facefree: "
                         "det,det_people)")
    ap.add_argument("--quick", action="store_true", help="every tenth image of each view")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sm = sub.add_parser("smooth", help="the image smoothed before the scan")
    sm.add_argument("--sigma", default="0,0.5,0.7,1", help="comma list of σ in px (0: none)")
    sub.add_parser("groups", help="minNeighbors 1 against every group")
    rl = sub.add_parser("relax", help="stage thresholds lowered at detection time")
    rl.add_argument("--delta", default="0,0.1,0.2,0.4",
                    help="comma list of amounts the thresholds are lowered by (0: as shipped)")
    rl.add_argument("--stages", default=None,
                    help="A-B: the stages lowered, counted from 1 (default: all but the last)")
    th = sub.add_parser("threshold", help="the declared curve and a minNeighbors sweep under "
                        "a min_score")
    th.add_argument("--min-score", default="none,3.43,2.73,1.99,1.35,0.98,0.27",
                    help="comma list of thresholds on the declared score ('none': no threshold;"
                         " default: the card's operating points)")
    sub.add_parser("facefree", help="false alarms on the views' face-free images, beside the "
                   "peers")
    args = ap.parse_args(argv)
    try:
        # the face-free images are those of val/det and val/det_people
        views = parse_views(args.views or ("det,det_people" if args.cmd == "facefree"
                                           else ",".join(tf.FIVE_VIEWS)))
        model, window = tf.load_spec(args.model)
        if args.cmd == "facefree":
            per_view = {v: face_free_alarms(model, window, args.data, v, args.quick)
                        for v in views}
        elif args.cmd == "threshold":
            ts = parse_thresholds(args.min_score)
            per_view = {v: threshold_view(model, window, args.data, v, args.quick, ts)
                        for v in views}
        else:
            if args.cmd == "smooth":
                variants = {f"sigma={s:g}": (model, s, False) for s in parse_sigmas(args.sigma)}
            elif args.cmd == "groups":
                variants = {"min_neighbors=1": (model, 0.0, False),
                            "every_group": (model, 0.0, True)}
            else:
                n = model.n_stages
                stages = parse_stages(args.stages or f"1-{max(n - 1, 1)}", n)
                variants = {f"delta={d:g}": (relaxed(model, d, stages) if d else model, 0.0,
                                             False)
                            for d in parse_sigmas(args.delta, what="--delta")}
            per_view = {v: score_view(variants, window, args.data, v, args.quick)
                        for v in views}
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.cmd == "facefree":
        _print_facefree(args, views, per_view)
        return 0
    if args.cmd == "threshold":
        _print_threshold(args, views, per_view, [_t_name(t) for t in ts])
        return 0
    mean = {n: round(float(np.mean([per_view[v][n] for v in views])), 4) for n in variants}
    print(f"{args.model}: {args.cmd}, mean of the six budgets per view" +
          (" (quick: every tenth image)" if args.quick else ""))
    print(f"  {'variant':<16s}" + "".join(f"{v:>11s}" for v in views) + f"{'mean':>9s}")
    for n in variants:
        print(f"  {n:<16s}" + "".join(f"{per_view[v][n]:11.4f}" for v in views)
              + f"{mean[n]:9.4f}")
    result = {"quick": args.quick, "model": args.model, "variants": args.cmd, "views": views,
              "scores": per_view, "mean": mean}
    print("RESULT " + json.dumps(result))
    return 0


def _print_threshold(args, views: list[str], per_view: dict, names: list[str]) -> None:
    mean = {n: {k: round(float(np.mean([per_view[v][n][k] for v in views])), 4)
                for k in ("score", "sweep", "both")} for n in names}
    print(f"{args.model}: threshold, mean of the six budgets per view (score / sweep)" +
          (" (quick: every tenth image)" if args.quick else ""))
    print(f"  {'variant':<16s}" + "".join(f"{v:>16s}" for v in views)
          + f"{'score':>8s}{'sweep':>8s}{'both':>8s}")
    for n in names:
        print(f"  {n:<16s}" + "".join(f"{per_view[v][n]['score']:8.4f}"
                                      f"{per_view[v][n]['sweep']:8.4f}" for v in views)
              + "".join(f"{mean[n][k]:8.4f}" for k in ("score", "sweep", "both")))
    result = {"quick": args.quick, "model": args.model, "variants": "threshold", "views": views,
              "scores": per_view, "mean": mean}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    raise SystemExit(main())
