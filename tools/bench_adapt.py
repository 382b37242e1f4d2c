"""Adapting a face cascade to new videos by online re-weighting (Online Coordinate Boosting).

For each person of the NRC-IIT clips in ../shared/data/video, the first clip (``NN-1.avi``) is the
adaptation stream and the second (``NN-2.avi``) the test: frames never used for adapting. Object
boxes come from a *teacher* (OpenCV's ``haarcascade_frontalface_alt2``, minNeighbors 3, at most
one face per frame: the clips show one person), since the clips carry no annotations; the adapted
*student* is OpenCV's ``haarcascade_frontalface_default``, which fires more false positives.
Labelled windows are the student's raw windows of its first stages (positives: IoU ≥ 0.5 with
the teacher's box; negatives: IoU < 0.1). Reported on the test clips, before and after
adaptation: detection rate against the teacher's boxes (IoU ≥ 0.5) and false positives per frame,
minNeighbors 3.

Ends with one line ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.cascade.adapt import adapt_cascade, collect_windows  # noqa: E402
from vjboost.cascade.detector import CascadeDetector  # noqa: E402
from vjboost.cascade.model_io import load_model  # noqa: E402
from vjboost.eval import evaluate_detections  # noqa: E402

VIDEO = REPO.parent / "shared" / "data" / "video"


def frames(path: Path, every: int, limit: int | None) -> list[np.ndarray]:
    cap = cv2.VideoCapture(str(path))
    out, k = [], 0
    while True:
        ok, f = cap.read()
        if not ok or (limit is not None and len(out) >= limit):
            break
        if k % every == 0:
            out.append(cv2.cvtColor(f, cv2.COLOR_BGR2GRAY))
        k += 1
    cap.release()
    return out


def teacher_boxes(teacher: CascadeDetector, grays: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for g in grays:
        d = teacher.detect(g)
        keep = np.argsort(-d.neighbors)[:1]  # one person per clip: the best-supported box
        out.append(d.boxes[keep].astype(np.int64).reshape(-1, 4))
    return out


def evaluate(det: CascadeDetector, grays, gts) -> dict:
    dets, gt = {}, {}
    for i, (g, b) in enumerate(zip(grays, gts, strict=True)):
        d = det.detect(g)
        dets[str(i)] = (d.boxes, d.neighbors.astype(float))
        gt[str(i)] = b
    ev = evaluate_detections(dets, gt, iou_threshold=0.5)
    return {"detection_rate": ev.detection_rate, "fp_per_frame": ev.false_positives / len(grays),
            "n_objects": ev.n_ground_truth}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two people, fewer frames (< 1 min)")
    ap.add_argument("--every", type=int, default=2, help="use every N-th frame")
    ap.add_argument("--candidate-stages", type=int, default=8)
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--min-hit-rate", default="keep",
                    help="per-stage hit rate on the stream's positives: a number, or 'keep' "
                         "(each stage keeps its original hit rate)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if not VIDEO.is_dir() or not base:
        print("needs ../shared/data/video and OpenCV's shipped cascades")
        print("RESULT " + json.dumps({"skipped": True}))
        return
    student = load_model(f"{base}/haarcascade_frontalface_default.xml")
    teacher = CascadeDetector(load_model(f"{base}/haarcascade_frontalface_alt2.xml"),
                              min_neighbors=3)
    people = sorted({p.name.split("-")[0] for p in VIDEO.glob("*-1.avi")})
    if args.quick:
        people = people[:2]
    limit = 60 if args.quick else None
    rng = np.random.default_rng(args.seed)
    rows, t0 = [], time.perf_counter()
    cand_det = CascadeDetector(student.truncated(args.candidate_stages), min_neighbors=0,
                               grouping="none")
    for person in people:
        train = frames(VIDEO / f"{person}-1.avi", args.every, limit)
        test = frames(VIDEO / f"{person}-2.avi", args.every, limit)
        tb_train, tb_test = teacher_boxes(teacher, train), teacher_boxes(teacher, test)
        wins, labels = [], []
        for g, b in zip(train, tb_train, strict=True):
            if len(b) == 0:
                continue  # no teacher label: an unlabelled frame teaches nothing
            w, y = collect_windows(cand_det.raw_windows(g)[0], g, b, student.window_shape,
                                   max_negatives=20, rng=rng)
            wins.append(w)
            labels.append(y)
        W, Y = np.concatenate(wins), np.concatenate(labels)
        hr = None if args.min_hit_rate == "keep" else float(args.min_hit_rate)
        adapted, _ = adapt_cascade(student, W, Y, order=args.order, min_hit_rate=hr)
        before = evaluate(CascadeDetector(student, min_neighbors=3), test, tb_test)
        after = evaluate(CascadeDetector(adapted, min_neighbors=3), test, tb_test)
        rows.append({"person": person, "frames_train": len(train), "frames_test": len(test),
                     "windows": int(len(Y)), "positives": int((Y > 0).sum()),
                     "before": before, "after": after})
        print(f"{person}: {len(Y)} windows ({int((Y > 0).sum())} pos) | test det.rate "
              f"{before['detection_rate']:.3f} -> {after['detection_rate']:.3f}, FP/frame "
              f"{before['fp_per_frame']:.3f} -> {after['fp_per_frame']:.3f}", flush=True)
    mean = {
        k: {m: float(np.mean([r[k][m] for r in rows])) for m in ("detection_rate", "fp_per_frame")}
        for k in ("before", "after")
    }
    print("\n| person | train frames | test frames | windows (pos) | det. rate before | after |"
          " FP/frame before | after |\n|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['person']} | {r['frames_train']} | {r['frames_test']} | {r['windows']} "
              f"({r['positives']}) | {r['before']['detection_rate']:.3f} | "
              f"{r['after']['detection_rate']:.3f} | {r['before']['fp_per_frame']:.3f} | "
              f"{r['after']['fp_per_frame']:.3f} |")
    print(f"| mean | | | | {mean['before']['detection_rate']:.3f} | "
          f"{mean['after']['detection_rate']:.3f} | {mean['before']['fp_per_frame']:.3f} | "
          f"{mean['after']['fp_per_frame']:.3f} |")
    print("RESULT " + json.dumps({"people": len(rows), "mean": mean, "quick": args.quick,
                                  "min_hit_rate": args.min_hit_rate, "order": args.order,
                                  "seconds": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
