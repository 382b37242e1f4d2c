"""Benchmark: a cascade's detection time with several coarse-to-fine scans, against dlib's HOG
detector in the same run (the timing the scan rule reads, vjboost/models/README.md, *Its scan*).

All CMU-MIT images (``../shared/data/cmu-mit``) are used **for timing only**: no detection is
matched with the ground truth, since a scan is chosen by its time and on validation, never by the
test set's rates. Each scan is the model timed as ``tools/bench_peers.py`` times it (its declared
operating score, scale factor 1.1, minimum size = the window, the verifier included) with
``coarse_to_fine=K`` (``off``: every grid window); dlib's HOG detector at upsample 2 runs on the
same images in the same run. CPU seconds of the process (steadier than wall-clock on a shared
machine), ``--repeats`` passes interleaved (every scan, then dlib, in each pass), medians; printed
as ms per megapixel and as ratios to dlib's time. The rule asks for the fewest K within 1/3 of
dlib's time in each of three separate runs of this command.

::

    python tools/scan_time.py                        # off, 4, 5, 6, 7; 3 repeats (~3 min)
    python tools/scan_time.py --k 5,6 --model runs/x/model.json
    python tools/scan_time.py --quick                # bench_peers' 20-image subset, 1 repeat

The last line is ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_peers as bp  # noqa: E402
from _cli import description  # noqa: E402

#: the target of the scan rule: at most this share of dlib's time
TARGET = 1 / 3


def parse_scans(text: str, n_stages: int) -> list[int | None]:
    """``--k``'s scans: ``off`` (every grid window, None) or stage counts ``1..n_stages``."""
    out: list[int | None] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "off":
            out.append(None)
        elif part.isdigit() and 1 <= int(part) <= n_stages:
            out.append(int(part))
        else:
            raise ValueError(f"--k: expected 'off' or stage counts 1..{n_stages}, got {part!r}")
    if not out or len(set(out)) != len(out):
        raise ValueError(f"--k: expected distinct scans, got {text!r}")
    return out


def _label(k: int | None) -> str:
    return "off" if k is None else str(k)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--model", default="vjboost:frontalface", help="name or model file")
    ap.add_argument("--k", default="off,4,5,6,7",
                    help="comma list of coarse-to-fine stage counts, 'off' for every window")
    ap.add_argument("--repeats", type=int, default=None, help="timed passes (median; 3, quick 1)")
    ap.add_argument("--threads", type=int, default=1, help="the cascade's threads (dlib: one)")
    ap.add_argument("--quick", action="store_true", help="20 small images, 1 repeat (< 1 min)")
    args = ap.parse_args(argv)
    try:
        cascade = bp.Cascade("model", args.model, kind="vjboost")
        scans = parse_scans(args.k, cascade.model.n_stages)
        if args.repeats is not None and args.repeats < 1:
            raise ValueError(f"--repeats: expected >= 1, got {args.repeats}")
        if args.threads < 1:
            raise ValueError(f"--threads: expected >= 1, got {args.threads}")
        runs = {_label(k): cascade.timer(args.threads, coarse_to_fine=k) for k in scans}
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    repeats = args.repeats or (1 if args.quick else 3)
    _, images, _ = bp.load_cmu(args.quick)  # its ground truth is left unused
    mp = sum(g.size for g in images) / 1e6
    try:
        import dlib
    except ImportError:
        dlib = None
        print("dlib not installed (pip install dlib-bin): times only, no ratios")
    if dlib is not None:
        hog = dlib.get_frontal_face_detector()
        runs["dlib"] = lambda g: bp.dlib_run(hog, g, 2)
    for fn in runs.values():
        fn(images[0])  # load and compile before timing
    secs: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            t0 = time.process_time()
            for g in images:
                fn(g)
            secs[name].append(time.process_time() - t0)
    ms = {name: round(1000 * float(np.median(v)) / mp, 1) for name, v in secs.items()}
    ref = ms.get("dlib")
    ratio = {name: round(ms[name] / ref, 3) for name in ms if name != "dlib"} if ref else {}
    within = [name for name in ratio if ratio[name] <= TARGET]
    print(f"CMU-MIT (timing only): {len(images)} images, {mp:.2f} MP; {args.model}; "
          f"{args.threads} thread(s); CPU seconds, median of {repeats}")
    for name in ms:
        extra = "" if name == "dlib" or not ratio else (
            f"   {ratio[name]:.3f}x dlib" + ("  (within 1/3)" if name in within else ""))
        print(f"  {'coarse_to_fine=' + name if name != 'dlib' else 'dlib HOG up2':<18s} "
              f"{ms[name]:8.1f} ms/MP{extra}")
    stages = [int(n) for n in within if n != "off"]
    result = {"quick": args.quick, "images": len(images), "megapixels": round(mp, 2),
              "model": args.model, "threads": args.threads, "repeats": repeats, "clock": "cpu",
              "ms_per_mp": {n: v for n, v in ms.items() if n != "dlib"},
              "dlib_ms_per_mp": ref, "time_over_dlib": ratio or None,
              "within_target": within,
              "fewest_within_target": ("off" if "off" in within else
                                       (str(min(stages)) if stages else None))}
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
