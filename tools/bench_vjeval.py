"""Benchmark: ``vjeval`` on CMU-MIT with a cascade that fires a lot (about 1.9 M raw windows).

A home-trained cascade with few stages accepts millions of windows; grouping them is what made
``vjeval`` slow (OpenCV's partition compares every pair of windows, and the sweep redid it for
each of 10 thresholds). A random 3-stage Haar cascade (``random_cascade``, ``--pass-rate``)
stands in for such a cascade. Measured in the same run:

* the whole ``vjeval`` command (a subprocess, process start included);
* inside it: the raw windows, and the sweep (partition once, select 11 thresholds, match);
* the previous way: the all-pairs partition, once per threshold (measured for one threshold on
  every image and multiplied by the 10 thresholds it was redone for; ``--old-all`` runs them);
* OpenCV's ``cv2.groupRectangles`` against :func:`vjboost.boxes.group_rectangles` on the image
  with the most windows (one threshold), with the check that both give the same boxes;
* that the near-linear partition equals the all-pairs one on every image.

Prints a table and ends with one line ``RESULT {json}``. ``--quick`` uses every 8th image.
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

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(REPO))

from vjboost.boxes import (  # noqa: E402
    WindowGroups,
    _class_stats,
    _classes,
    _classes_quadratic,
    _select,
    group_rectangles,
)
from vjboost.cascade.detector import CascadeDetector  # noqa: E402
from vjboost.cascade.model_io import save_model  # noqa: E402
from vjboost.cascade.synthetic import random_cascade  # noqa: E402
from vjboost.eval import sweep_min_neighbors  # noqa: E402
from vjboost.io import read_annotations, read_image  # noqa: E402


def old_select(r: np.ndarray, s: np.ndarray, thr: int) -> np.ndarray:
    """The previous grouping at one threshold: all-pairs partition, averages, selection.

    Returns the partition's labels."""
    labels, k = _classes_quadratic(r, 0.2)
    avg, cnt, _ = _class_stats(r, labels, k, s)
    _select(avg, cnt, thr, 0.2)
    return labels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="every 8th image (under a minute)")
    ap.add_argument("--pass-rate", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--old-all", action="store_true",
                    help="run the previous grouping at all 10 thresholds (slow)")
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

    # the previous way, and the check that the partitions agree
    identical = True
    old_one_s = 0.0
    for b, s in raw.values():
        r = np.ascontiguousarray(b, dtype=np.int64)
        if len(r):
            t0 = time.perf_counter()
            slow = old_select(r, s, 1)
            old_one_s += time.perf_counter() - t0
            identical &= bool(np.array_equal(_classes(r, 0.2)[0], slow))
    old_all_s = None
    if args.old_all:
        t0 = time.perf_counter()
        for thr in range(1, 11):
            for b, s in raw.values():
                if len(b):
                    old_select(np.ascontiguousarray(b, dtype=np.int64), s, thr)
        old_all_s = time.perf_counter() - t0

    # OpenCV's groupRectangles on the heaviest image, one threshold
    heavy = max(raw, key=lambda p: len(raw[p][0]))
    hb, hs = raw[heavy]
    t0 = time.perf_counter()
    ref, _ = cv2.groupRectangles(hb.tolist(), 3, 0.2)
    cv2_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours, _, _ = group_rectangles(hb, 3, 0.2, hs)
    ours_s = time.perf_counter() - t0
    same_cv2 = Counter(map(tuple, np.asarray(ref).reshape(-1, 4).tolist())) == Counter(
        map(tuple, ours.tolist()))

    old_sweep = old_all_s if old_all_s is not None else 10 * old_one_s
    how = "measured" if old_all_s is not None else "10 x one threshold"
    rows = [
        ("images / raw windows / most in one image", f"{len(paths)} / {sum(n_raw)} / {max(n_raw)}"),
        ("vjeval command, wall (process start included)", f"{cli_s:.1f} s"),
        ("  raw windows (detector)", f"{detect_s:.1f} s"),
        ("  sweep: partition once, 11 thresholds, matching", f"{sweep_s:.2f} s"),
        ("    of which partitions", f"{partition_s:.2f} s"),
        (f"previous grouping, 10 thresholds ({how})", f"{old_sweep:.1f} s"),
        ("grouping speed-up over the previous sweep", f"{old_sweep / max(sweep_s, 1e-9):.0f}x"),
        (f"heaviest image ({len(hb)} windows): cv2.groupRectangles",
         f"{cv2_s:.2f} s vs ours {ours_s:.3f} s ({ours_s / max(cv2_s, 1e-9):.4f}x)"),
        ("same boxes as cv2 / same partition as all-pairs", f"{same_cv2} / {identical}"),
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
        "previous_sweep_seconds": round(old_sweep, 1), "previous_measured": how,
        "speedup": round(old_sweep / max(sweep_s, 1e-9), 1),
        "cv2_group_seconds": round(cv2_s, 3), "ours_group_seconds": round(ours_s, 4),
        "ratio_vs_cv2": round(ours_s / max(cv2_s, 1e-9), 5), "same_as_cv2": same_cv2,
        "same_partition": identical}))


if __name__ == "__main__":
    main()
