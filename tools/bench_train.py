"""Train the frontal-face cascade of the opencv_traincascade reference run and evaluate it.

Same inputs and parameters as the reference run recorded in ../shared/docs/anchors.md:
``cbcl_pos_19x19.vec`` (2,428 CBCL faces) and ``bg.txt`` (3,019 background images), numPos 2000,
numNeg 4000, 15 stages, 19×19, HAAR BASIC, Gentle AdaBoost stumps, minHitRate 0.995,
maxFalseAlarmRate 0.5, weight trimming 0.95, 2 threads. opencv_traincascade cannot run here (no
pip wheel builds it), so its figures are the recorded ones: 893 s wall time, CMU-MIT recall 0.466
with 50 false positives (IoU ≥ 0.5) and 0.480 / 45 (IoU ≥ 0.3) at scaleFactor 1.1, minNeighbors 3.

Prints per-stage times, the wall-time ratio and the evaluation; the last line is
``RESULT {json}``. ``--quick``: 3 stages, 500/1000 samples, 20 test images.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.cascade.detector import CascadeDetector  # noqa: E402
from vjboost.cascade.model_io import save_model  # noqa: E402
from vjboost.cascade.trainer import CascadeTrainer  # noqa: E402
from vjboost.eval import evaluate_detections  # noqa: E402
from vjboost.io import read_annotations, read_bg_list, read_image, read_vec  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
ANCHOR = {"seconds": 893.0, "recall_iou50": 0.466, "fp_iou50": 50, "recall_iou30": 0.480,
          "fp_iou30": 45, "stages": 13, "weak": 90}


def evaluate(model, n_images: int | None) -> dict:
    cmu = SHARED / "cmu-mit"
    gt = read_annotations(cmu / "faces.csv")
    paths = read_bg_list(cmu / "images.txt")[:n_images]
    det = CascadeDetector(model, scale_factor=1.1, min_neighbors=3)
    dets, t = {}, time.perf_counter()
    for p in paths:
        d = det.detect(read_image(p))
        dets[p] = (d.boxes, d.neighbors.astype(float))
    seconds = time.perf_counter() - t
    gt = {k: v for k, v in gt.items() if k in dets}
    out = {"images": len(paths), "faces": int(sum(len(v) for v in gt.values())),
           "detect_seconds": round(seconds, 1)}
    for iou in (0.5, 0.3):
        ev = evaluate_detections(dets, gt, iou_threshold=iou)
        out[f"recall_iou{int(iou * 100)}"] = round(ev.detection_rate, 3)
        out[f"fp_iou{int(iou * 100)}"] = ev.false_positives
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--output", default="runs/bench_train", help="checkpoint/model folder")
    ap.add_argument("--sampler", default=None, help="e.g. laminating (default: exhaustive)")
    ap.add_argument("--resume", action="store_true", help="continue from --output's checkpoint")
    args = ap.parse_args()
    anchor = SHARED / "traincascade-anchor"
    if not anchor.is_dir():
        print(f"needs {anchor}")
        print("RESULT " + json.dumps({"skipped": True}))
        return
    pos = read_vec(anchor / "cbcl_pos_19x19.vec", (19, 19))
    bg = read_bg_list(anchor / "bg.txt")
    stages, num_pos, num_neg = (3, 500, 1000) if args.quick else (15, 2000, 4000)
    trainer = CascadeTrainer(window_shape=(19, 19), features="haar", haar_mode="BASIC",
                             num_stages=stages, num_pos=num_pos, num_neg=num_neg,
                             min_hit_rate=0.995, max_false_alarm=0.5, loss="gentle",
                             weak_learner="stump", weight_trim_rate=0.95, max_weak_count=100,
                             sampler=args.sampler, seed=0, threads=args.threads)
    out = Path(args.output) / ("quick" if args.quick else "full")
    t0 = time.perf_counter()
    trainer.fit(pos, bg, output_dir=out, resume=args.resume, log=lambda m: print(m, flush=True))
    wall = time.perf_counter() - t0
    model = trainer.model_
    save_model(model, out / "model.json")
    print(f"\ntrained {model.n_stages} stages, {model.n_trees} weak classifiers in {wall:.0f} s "
          f"({trainer.stop_reason_})")
    print("| stage | weak | hit rate | false alarm | seconds (neg. mining / features / boosting) |")
    print("|---|---|---|---|---|")
    per_stage = []
    for k, st in enumerate(trainer.stages_):
        sec = st.seconds
        total = sec.get("total", sum(sec.values()))
        per_stage.append({"weak": len(st.learners), "seconds": round(total, 1)})
        print(f"| {k} | {len(st.learners)} | {st.hit_rate:.4f} | {st.false_alarm:.3f} | "
              f"{total:.1f} ({sec.get('negatives', 0):.1f} / "
              f"{sec.get('features', 0):.1f} / {sec.get('boosting', 0):.1f}) |")
    ev = evaluate(model, 20 if args.quick else None)
    print(f"\nCMU-MIT ({ev['images']} images, {ev['faces']} faces), scale 1.1, minNeighbors 3: "
          f"recall {ev['recall_iou50']} at {ev['fp_iou50']} FP (IoU >= 0.5), "
          f"{ev['recall_iou30']} at {ev['fp_iou30']} FP (IoU >= 0.3); "
          f"traincascade: {ANCHOR['recall_iou50']} / {ANCHOR['fp_iou50']} and "
          f"{ANCHOR['recall_iou30']} / {ANCHOR['fp_iou30']}")
    if not args.quick:
        print(f"wall time {wall:.0f} s vs traincascade {ANCHOR['seconds']:.0f} s: "
              f"{wall / ANCHOR['seconds']:.3f} of its time (target <= 0.2)")
    print("RESULT " + json.dumps({
        "quick": args.quick, "sampler": args.sampler or "full", "wall_s": round(wall, 1),
        "ratio_vs_traincascade": round(wall / ANCHOR["seconds"], 3),
        "stages": model.n_stages, "weak": model.n_trees, "per_stage": per_stage,
        "stop": trainer.stop_reason_, "eval": ev, "traincascade": ANCHOR}))


if __name__ == "__main__":
    main()
