"""Adapting a face cascade to a scene by online re-weighting (Online Coordinate Boosting).

For each person of the NRC-IIT clips in ../shared/data/video, the first clip (``NN-1.avi``) is the
adaptation stream and the second (``NN-2.avi``) the test: frames never used for adapting. The
clips carry no annotations, so a *teacher* labels them: OpenCV's ``haarcascade_frontalface_alt2``
(minNeighbors 3, its best-supported box; one person per clip). The adapted *student* is OpenCV's
``haarcascade_frontalface_default``.

Two ways of labelling the stream are measured:

* ``teacher``: positives are the student's candidate windows (those its first 5 stages accept)
  with IoU >= 0.8 against the teacher's box, negatives those with IoU < 0.1; frames where the
  teacher finds no face are skipped;
* ``self``: no teacher at all; the student's own confident detections (>= 12 neighbours) play the
  teacher's role; frames without one are skipped.

Evaluation, on the test clip, only on the frames where the teacher finds the face: detection rate
(IoU >= 0.5 against the teacher's box) and false positives per frame, minNeighbors 3. Frames where
the teacher finds nothing are left out of the score: there the student's detections are mostly
real faces the teacher missed (checked by eye), which an FP count would penalise.

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
from _cli import description

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vjboost.cascade.adapt import StreamCollector, adapt_cascade  # noqa: E402
from vjboost.cascade.detector import CascadeDetector  # noqa: E402
from vjboost.cascade.model_io import load_model  # noqa: E402
from vjboost.eval import evaluate_detections  # noqa: E402

VIDEO = REPO.parent / "shared" / "data" / "video"


def frames(path: Path, every: int, limit: int | None) -> list[np.ndarray]:
    """Gray frames 0, every, 2·every, ... of a video (at most ``limit``)."""
    cap = cv2.VideoCapture(str(path))
    out, k = [], 0
    while limit is None or len(out) < limit:
        ok, f = cap.read()
        if not ok:
            break
        if k % every == 0:
            out.append(cv2.cvtColor(f, cv2.COLOR_BGR2GRAY))
        k += 1
    cap.release()
    return out


def teacher_boxes(teacher: CascadeDetector, grays: list[np.ndarray]) -> list[np.ndarray | None]:
    """The teacher's best-supported box per frame, None where it finds nothing."""
    out: list[np.ndarray | None] = []
    for g in grays:
        d = teacher.detect(g)
        if len(d) == 0:
            out.append(None)
            continue
        best = int(np.argmax(d.neighbors))
        out.append(d.boxes[best : best + 1].astype(np.int64))
    return out


def evaluate(model, grays, gts) -> dict:
    """Detection rate and FP/frame on the frames with a teacher box.

    Also counts the detections per frame in the frames without one (``unlabelled_dets``: mostly
    faces the teacher missed, but an adaptation that fired on background would show here).
    """
    det = CascadeDetector(model, min_neighbors=3, score="best")
    dets, gt, n_unl, n_unl_frames = {}, {}, 0, 0
    for i, (g, b) in enumerate(zip(grays, gts, strict=True)):
        d = det.detect(g)
        if b is None:
            n_unl += len(d)
            n_unl_frames += 1
            continue
        dets[str(i)] = (d.boxes, d.neighbors.astype(float))
        gt[str(i)] = b
    ev = evaluate_detections(dets, gt, iou_threshold=0.5)
    return {"detection_rate": ev.detection_rate, "fp_per_frame": ev.false_positives / len(dets),
            "frames": len(dets), "unlabelled_dets": n_unl / max(n_unl_frames, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="two people, 40 frames each (< 1 min)")
    ap.add_argument("--every", type=int, default=2, help="use every N-th frame")
    ap.add_argument("--candidate-stages", type=int, default=5)
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--pos-iou", type=float, default=0.8)
    ap.add_argument("--min-windows", type=int, default=30)
    ap.add_argument("--blend", type=float, default=1.0)
    ap.add_argument("--holdout", type=float, default=0.0)
    ap.add_argument("--confident-neighbors", type=int, default=12)
    ap.add_argument("--protocols", default="teacher,self")
    ap.add_argument("--people", help="comma-separated subset, e.g. 00,01")
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
    if args.people:
        people = [p for p in people if p in args.people.split(",")]
    limit = None
    if args.quick:
        people, limit = ["00", "02"], 40
    protocols = args.protocols.split(",")
    rows, t0 = [], time.perf_counter()
    for person in people:
        train = frames(VIDEO / f"{person}-1.avi", args.every, limit)
        test = frames(VIDEO / f"{person}-2.avi", args.every, limit)
        tb_train, tb_test = teacher_boxes(teacher, train), teacher_boxes(teacher, test)
        row = {"person": person, "frames_train": len(train), "frames_test": len(test),
               "before": evaluate(student, test, tb_test)}
        for proto in protocols:
            col = StreamCollector(student, candidate_stages=args.candidate_stages,
                                  pos_iou=args.pos_iou, seed=args.seed)
            for g, b in zip(train, tb_train, strict=True):
                if proto == "self":
                    conf = col.confident_objects(g, args.confident_neighbors)
                    b = conf if len(conf) else None
                col.add_frame(g, b)
            W, Y = col.windows_labels()
            t1 = time.perf_counter()
            adapted, rep = adapt_cascade(student, W, Y, order=args.order,
                                         first_stage=args.candidate_stages,
                                         min_windows=args.min_windows, blend=args.blend,
                                         holdout=args.holdout)
            row[proto] = {**evaluate(adapted, test, tb_test), "labelled_frames": col.n_frames,
                          "windows": int(len(Y)), "positives": int((Y > 0).sum()),
                          "adapted_stages": rep.n_adapted,
                          "adapt_seconds": round(time.perf_counter() - t1, 2)}
        rows.append(row)
        b = row["before"]
        print(f"{person}: before det.rate {b['detection_rate']:.3f} FP/frame "
              f"{b['fp_per_frame']:.3f} | " + " | ".join(
                  f"{p}: {row[p]['detection_rate']:.3f} {row[p]['fp_per_frame']:.3f} "
                  f"({row[p]['windows']} windows, {row[p]['positives']} pos, "
                  f"{row[p]['adapted_stages']} stages)" for p in protocols), flush=True)
    keys = ["before", *protocols]
    mean = {k: {m: float(np.mean([r[k][m] for r in rows]))
                for m in ("detection_rate", "fp_per_frame", "unlabelled_dets")} for k in keys}
    head = " | ".join(f"det. rate {k} | FP/frame {k}" for k in keys)
    print(f"\n| person | test frames (labelled) | {head} |\n|---|---|"
          + "---|---|" * len(keys))
    for r in rows:
        cells = " | ".join(f"{r[k]['detection_rate']:.3f} | {r[k]['fp_per_frame']:.3f}"
                           for k in keys)
        print(f"| {r['person']} | {r['frames_test']} ({r['before']['frames']}) | {cells} |")
    cells = " | ".join(f"{mean[k]['detection_rate']:.3f} | {mean[k]['fp_per_frame']:.3f}"
                       for k in keys)
    print(f"| mean | | {cells} |")
    print("\ndetections per frame in the test frames the teacher leaves unlabelled: "
          + ", ".join(f"{k} {mean[k]['unlabelled_dets']:.3f}" for k in keys))
    print("RESULT " + json.dumps({
        "people": len(rows), "mean": mean, "quick": args.quick, "order": args.order,
        "pos_iou": args.pos_iou, "candidate_stages": args.candidate_stages,
        "min_windows": args.min_windows, "blend": args.blend, "holdout": args.holdout,
        "per_person": {r["person"]: {k: [round(r[k]["detection_rate"], 4),
                                         round(r[k]["fp_per_frame"], 4)] for k in keys}
                       for r in rows},
        "seconds": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
