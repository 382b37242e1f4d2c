"""Benchmark: ``vjeval`` on CMU-MIT with a cascade that fires a lot (about 1.9 M raw windows).

A home-trained cascade with few stages accepts millions of windows; grouping them is what made
``vjeval`` slow (OpenCV's partition compares every pair of windows, and the sweep redid it for
each of 10 thresholds). A random 3-stage Haar cascade (``random_cascade``, ``--pass-rate``)
stands in for such a cascade. Measured in the same run:

* the whole ``vjeval`` command (a subprocess, process start included);
* inside it: the raw windows, and the sweep (partition once, select 11 thresholds, match);
* OpenCV's ``cv2.groupRectangles`` (its all-pairs partition, which the sweep's previous
  grouping reproduced and redid for each of 10 thresholds) against vjboost's grouping
  (:class:`vjboost.boxes.WindowGroups`) on the same images at one threshold, box for box, and a
  sweep of 10 thresholds: 10 times OpenCV's call against one partition and 10 selections;
* that the near-linear partition equals the all-pairs one (``_classes_all_pairs``, OpenCV's
  partition in NumPy) on every image of at most ``--all-pairs-max`` windows.

Prints a table and ends with one line ``RESULT {json}``. ``--quick`` uses every 8th image, and
OpenCV only on its images of at most 20,000 windows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(REPO))

from vjboost.boxes import (  # noqa: E402
    WindowGroups,
    _classes,
    _classes_all_pairs,
    group_rectangles,
)
from vjboost.cascade.detector import CascadeDetector  # noqa: E402
from vjboost.cascade.model_io import save_model  # noqa: E402
from vjboost.cascade.synthetic import random_cascade  # noqa: E402
from vjboost.eval import sweep_min_neighbors  # noqa: E402
from vjboost.io import read_annotations, read_image  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="every 8th image (under a minute)")
    ap.add_argument("--pass-rate", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--all-pairs-max", type=int, default=6000,
                    help="check the partition against all pairs on images of at most this many "
                         "windows (memory: 10 bytes a pair)")
    ap.add_argument("--cv2-max", type=int, default=None,
                    help="run OpenCV's grouping on images of at most this many windows "
                         "(default: every image; --quick: 20,000)")
    args = ap.parse_args()
    root = SHARED / "data" / "cmu-mit"
    if not (root / "faces.csv").is_file():
        print(f"CMU-MIT not found in {root}; set VJBOOST_SHARED")
        print("RESULT " + json.dumps({"skipped": "no CMU-MIT data"}))
        return
    names = (root / "images.txt").read_text().split()
    if args.quick:
        names = names[::8]
    paths = [str((root / n).resolve()) for n in names]
    gt = read_annotations(root / "faces.csv").restrict(paths)
    model = random_cascade("HAAR", window=(24, 24), n_stages=3, pass_rate=args.pass_rate,
                           seed=args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench_vjeval_"))
    save_model(model, tmp / "cascade.xml")
    (tmp / "images.txt").write_text("\n".join(paths) + "\n")

    # the command as a user runs it
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "vjboost.cli.evaluate", str(root / "faces.csv"), "-m",
           str(tmp / "cascade.xml"), "--images", str(tmp / "images.txt"), "-o", str(tmp / "out"),
           "--no-progress"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    cli_s = time.perf_counter() - t0
    if run.returncode != 0:
        print(run.stdout, run.stderr)
        raise SystemExit("vjeval failed")
    doc = json.loads((tmp / "out" / "eval.json").read_text())["models"][0]

    # in process: raw windows and the sweep
    det = CascadeDetector(model, min_neighbors=0, grouping="none")
    grays = {p: read_image(p) for p in paths}
    t0 = time.perf_counter()
    raw = {p: det.raw_windows(g) for p, g in grays.items()}
    detect_s = time.perf_counter() - t0
    sizes = {p: (g.shape[1], g.shape[0]) for p, g in grays.items()}
    n_raw = [len(b) for b, _ in raw.values()]
    t0 = time.perf_counter()
    sweep_min_neighbors(raw, gt, thresholds=range(0, 11), image_sizes=sizes)
    sweep_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for b, s in raw.values():
        WindowGroups(b, s)
    partition_s = time.perf_counter() - t0

    # the partition against all pairs, where the pairs fit in memory
    identical, n_checked = True, 0
    for b, _ in raw.values():
        if 0 < len(b) <= args.all_pairs_max:
            r = np.ascontiguousarray(b, dtype=np.int64)
            identical &= bool(np.array_equal(_classes(r, 0.2)[0], _classes_all_pairs(r, 0.2)[0]))
            n_checked += 1

    # OpenCV's grouping against vjboost's on the same images: one threshold (3) each, checked
    # box for box; a sweep of 10 thresholds is 10 of OpenCV's calls (each redoes the partition)
    # and one partition with 10 selections of vjboost's
    cv2_max = args.cv2_max if args.cv2_max is not None else (20000 if args.quick else None)
    compared = [p for p in raw
                if len(raw[p][0]) and (cv2_max is None or len(raw[p][0]) <= cv2_max)]
    cv2_s = ours_s = ours_ten_s = 0.0
    same_cv2 = True
    for p in compared:
        b, s = raw[p]
        t0 = time.perf_counter()
        ours = group_rectangles(b, 3, 0.2, s)[0]  # cv2.groupRectangles' own call
        ours_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        groups = WindowGroups(b, s)
        for thr in range(1, 11):
            groups.select(thr)
        ours_ten_s += time.perf_counter() - t0
        rects = b.tolist()
        t0 = time.perf_counter()
        ref, _ = cv2.groupRectangles(rects, 3, 0.2)
        cv2_s += time.perf_counter() - t0
        same_cv2 &= Counter(map(tuple, np.asarray(ref).reshape(-1, 4).tolist())) == Counter(
            map(tuple, np.asarray(ours).reshape(-1, 4).tolist()))
    heaviest = max((len(raw[p][0]) for p in compared), default=0)

    rows = [
        ("images / raw windows / most in one image", f"{len(paths)} / {sum(n_raw)} / {max(n_raw)}"),
        ("vjeval command, wall (process start included)", f"{cli_s:.1f} s"),
        ("  raw windows (detector)", f"{detect_s:.1f} s"),
        ("  sweep: partition once, 11 thresholds, matching", f"{sweep_s:.2f} s"),
        ("    of which partitions", f"{partition_s:.2f} s"),
        (f"grouping, {len(compared)} images (most {heaviest} windows), one threshold: "
         "cv2.groupRectangles", f"{cv2_s:.2f} s vs ours {ours_s:.3f} s "
                                f"({ours_s / max(cv2_s, 1e-9):.4f}x)"),
        ("  10 thresholds: cv2 10 x one, ours one partition", f"{10 * cv2_s:.1f} s vs "
         f"{ours_ten_s:.3f} s ({10 * cv2_s / max(ours_ten_s, 1e-9):.0f}x faster)"),
        (f"same boxes as cv2 / same partition as all-pairs ({n_checked} images)",
         f"{same_cv2} / {identical}"),
    ]
    for k, v in rows:
        print(f"{k:<58} {v}")
    at3 = doc["at_min_neighbors"]
    print(f"(vjeval at min_neighbors 3: detection rate {at3['detection_rate']:.3f}, "
          f"{at3['false_positives']} FP)")
    print("RESULT " + json.dumps({
        "images": len(paths), "raw_windows": int(sum(n_raw)), "max_windows": int(max(n_raw)),
        "vjeval_seconds": round(cli_s, 2), "detect_seconds": round(detect_s, 2),
        "sweep_seconds": round(sweep_s, 3), "partition_seconds": round(partition_s, 3),
        "cv2_images": len(compared), "cv2_max_windows": heaviest,
        "cv2_group_seconds": round(cv2_s, 3), "ours_group_seconds": round(ours_s, 4),
        "ratio_vs_cv2": round(ours_s / max(cv2_s, 1e-9), 5), "same_as_cv2": same_cv2,
        "sweep10_cv2_seconds": round(10 * cv2_s, 2), "sweep10_ours_seconds": round(ours_ten_s, 3),
        "all_pairs_images": n_checked,
        "same_partition": identical}))


if __name__ == "__main__":
    main()
