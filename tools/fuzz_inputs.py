"""Fuzz vjboost's file readers: every input either loads or fails with vjboost's own error.

Readers: cascade models (vjboost JSON and OpenCV XML, HAAR and LBP), ``.vec`` sample files,
annotation files (COCO JSON, OpenCV ``info.dat``, CSV), ``bg.txt`` lists and images (PNG, and
PNG headers announcing huge images). Inputs: valid files from vjboost's own writers, then
seeded mutations of them — truncations, replaced bytes, inserted hostile tokens (``nan``,
``1e39``, ``4294967315``, ``1_9``, deep nesting...) and random bytes.

Every case is classified as *loaded*, *clean failure* (a :class:`vjboost._errors.VJBoostError`
whose message names the file) or *raw exception* (anything else: a bug). Each case also runs
under a time check (``--max-seconds``); a slower one counts as a raw exception too. The raw
exceptions are printed (reader, exception, how to reproduce: ``--seed`` and the case number).

Prints a table per reader and ends with one line ``RESULT {json}``. ``--quick`` runs in well
under a minute.

Usage::

    python tools/fuzz_inputs.py --quick
    python tools/fuzz_inputs.py --cases 3000 --seed 7
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from _cli import description

TOKENS = [b"0", b"-1", b"1e39", b"-1e39", b"nan", b"NaN", b"inf", b"Infinity", b"4294967315",
          b"4294967296", b"1.5", b"true", b"null", b"[]", b"{}", b'"x"', b"1_9", b"9" * 400,
          b"[" * 3000, b"<_>", b"</_>", b"]", b"}", b",", b"\x00", b"\xff\xfe", b"-0",
          b"99999999999999999999", b"1e300", b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"&a;"]


def _mutate(base: bytes, rng: random.Random) -> bytes:
    """One seeded mutation of ``base``."""
    kind = rng.randrange(5)
    i = rng.randrange(len(base) + 1)
    if kind == 0:  # truncated
        return base[:i]
    if kind == 1:  # bytes replaced
        n = rng.randint(1, 8)
        return base[:i] + bytes(rng.randrange(256) for _ in range(n)) + base[i + n:]
    if kind == 2:  # a hostile token replaces a few bytes
        return base[:i] + rng.choice(TOKENS) + base[i + rng.randint(0, 6):]
    if kind == 3:  # a number replaced by a hostile token
        digits = [k for k, c in enumerate(base) if 48 <= c <= 57]
        if digits:
            k = rng.choice(digits)
            j = k
            while j < len(base) and base[j] in b"0123456789.-e":
                j += 1
            return base[:k] + rng.choice(TOKENS) + base[j:]
        return base
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))  # random bytes


def _models(tmp: Path) -> dict[str, bytes]:
    from vjboost.cascade.model_io import _dumps_model, model_to_dict
    from vjboost.cascade.opencv_xml import to_opencv_xml
    from vjboost.cascade.synthetic import random_cascade

    haar = random_cascade(seed=1, window=(12, 12), n_stages=2, trees_per_stage=(1, 3),
                          max_nodes=2)
    lbp = random_cascade("LBP", seed=2, window=(12, 12), n_stages=2, trees_per_stage=(1, 3))
    return {"model json (haar)": _dumps_model(model_to_dict(haar)).encode(),
            "model json (lbp)": _dumps_model(model_to_dict(lbp)).encode(),
            "model xml (haar)": to_opencv_xml(haar).encode(),
            "model xml (lbp)": to_opencv_xml(lbp).encode()}


def _samples(tmp: Path) -> dict[str, bytes]:
    from vjboost.io import write_vec

    rng = np.random.default_rng(0)
    write_vec(tmp / "base.vec", rng.integers(0, 255, (3, 8, 8), dtype=np.uint8))
    ok, png = cv2.imencode(".png", rng.integers(0, 255, (12, 16), dtype=np.uint8))
    coco = {"images": [{"id": 1, "file_name": "a.png", "width": 16, "height": 12}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 5, 6]}],
            "categories": [{"id": 1, "name": "face"}]}
    return {"vec": (tmp / "base.vec").read_bytes(), "image png": png.tobytes(),
            "annotations coco": json.dumps(coco).encode(),
            "annotations info.dat": b"a.png 2 1 2 5 6 3 3 4 4\n",
            "annotations csv": b"image,x,y,w,h\na.png,1,2,5,6\n",
            "bg.txt": b"a.png\n# comment\n\na.png\n"}


def _readers(tmp: Path) -> dict[str, tuple[str, Callable[[Path], object]]]:
    """Reader name -> (file suffix, function reading a path)."""
    from vjboost.cascade.model_io import load_model
    from vjboost.io import read_annotations, read_bg_list, read_image, read_vec

    (tmp / "a.png").write_bytes(cv2.imencode(".png", np.zeros((12, 16), np.uint8))[1].tobytes())
    return {
        "model json (haar)": (".json", load_model), "model json (lbp)": (".json", load_model),
        "model xml (haar)": (".xml", load_model), "model xml (lbp)": (".xml", load_model),
        "vec": (".vec", read_vec), "image png": (".png", read_image),
        "annotations coco": (".json", lambda p: read_annotations(p, format="coco")),
        "annotations info.dat": (".dat", lambda p: read_annotations(p, format="info")),
        "annotations csv": (".csv", lambda p: read_annotations(p, format="csv")),
        "bg.txt": (".txt", read_bg_list),
    }


def run(n_cases: int, seed: int, max_seconds: float, tmp: Path,
        save_raw: Path | None = None) -> dict:
    from vjboost._errors import VJBoostError

    bases = {**_models(tmp), **_samples(tmp)}
    readers = _readers(tmp)
    rng = random.Random(seed)
    stats = {name: {"cases": 0, "loaded": 0, "clean_failures": 0, "raw_exceptions": 0,
                    "unnamed": 0, "max_seconds": 0.0} for name in readers}
    raw: list[dict] = []
    names = sorted(readers)
    for case in range(n_cases):
        name = names[case % len(names)]
        suffix, read = readers[name]
        base = bases[name]
        # the valid file first, then mutations (a few of two mutations in a row)
        data = base if case < len(names) else _mutate(base, rng)
        if case >= len(names) and rng.random() < 0.2:
            data = _mutate(data, rng)
        path = tmp / f"case{suffix}"
        path.write_bytes(data)
        s = stats[name]
        s["cases"] += 1
        t0 = time.perf_counter()
        try:
            read(path)
            outcome, detail = "loaded", ""
        except VJBoostError as exc:
            outcome, detail = "clean_failures", str(exc)
            if str(path) not in detail and path.name not in detail:
                s["unnamed"] += 1
        except Exception as exc:  # noqa: BLE001 - what this tool looks for
            outcome = "raw_exceptions"
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        dt = time.perf_counter() - t0
        s["max_seconds"] = max(s["max_seconds"], dt)
        if dt > max_seconds and outcome != "raw_exceptions":
            outcome, detail = "raw_exceptions", f"took {dt:.1f} s (over --max-seconds)"
        s[outcome] += 1
        if outcome == "raw_exceptions":
            raw.append({"case": case, "reader": name, "error": detail[:300],
                        "input": data[:120].decode("latin-1")})
            if save_raw is not None:
                save_raw.mkdir(parents=True, exist_ok=True)
                (save_raw / f"case{case}{suffix}").write_bytes(data)
    totals = {k: sum(s[k] for s in stats.values())
              for k in ("cases", "loaded", "clean_failures", "raw_exceptions", "unnamed")}
    return {"stats": stats, "totals": totals, "raw": raw}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--cases", type=int, default=3000, help="Cases in all (default 3000).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=10.0,
                    help="A case slower than this counts as a failure.")
    ap.add_argument("--quick", action="store_true", help="600 cases (well under a minute).")
    ap.add_argument("--save-raw", type=Path, help="Write the inputs of raw exceptions here "
                    "(case<N>.<suffix>) to reproduce them.")
    args = ap.parse_args(argv)
    n = 600 if args.quick else args.cases
    t0 = time.perf_counter()
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
    saved = os.dup(2)  # libpng prints its complaints about broken files on stderr
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            with tempfile.TemporaryDirectory() as d:
                out = run(n, args.seed, args.max_seconds, Path(d), args.save_raw)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    elapsed = time.perf_counter() - t0
    print(f"{'reader':22s} {'cases':>6s} {'loaded':>7s} {'clean':>6s} {'raw':>4s} "
          f"{'unnamed':>8s} {'max s':>6s}")
    for name, s in sorted(out["stats"].items()):
        print(f"{name:22s} {s['cases']:6d} {s['loaded']:7d} {s['clean_failures']:6d} "
              f"{s['raw_exceptions']:4d} {s['unnamed']:8d} {s['max_seconds']:6.2f}")
    for r in out["raw"][:20]:
        print(f"raw exception, case {r['case']} ({r['reader']}): {r['error']}", file=sys.stderr)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = {**out["totals"], "seed": args.seed, "seconds": round(elapsed, 1),
              "peak_rss_bytes": int(peak),
              "max_case_seconds": round(max(s["max_seconds"] for s in out["stats"].values()), 3),
              "raw_examples": out["raw"][:5]}
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[1]
                                                  / ".numba_cache"))
    sys.exit(main())
