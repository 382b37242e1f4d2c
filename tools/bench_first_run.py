"""Benchmark: the time to a first detection — ``vjdetect photo.png`` as a new user runs it.

Every figure is the wall time of a whole process (interpreter start, imports, model loading,
kernel compilation or cache loading, detection, output), measured here in one run:

* ``first``: ``vjdetect photo.png --model vjboost:frontalface_haar`` (``--model``: another
  shipped model, e.g. ``vjboost:frontalface``, the default one, whose channels, row pass of
  rectangle records and verifier need more kernels) with an empty numba cache (a fresh
  install: every kernel the detection needs is compiled, then cached, by two processes at
  once: ``vjboost.cascade.ahead``);
* ``alone``: the same first run compiled by one process (``VJBOOST_COMPILE_AHEAD=0``), each
  alternated with a ``first`` run;
* ``warm``: the same command again, kernels loaded from the cache;
* ``cv2``: a ``python`` process that imports ``cv2``, loads the shipped Haar cascade's XML
  twin (``vjboost/models/frontalface_haar.xml``, whatever ``--model`` is) into
  ``cv2.CascadeClassifier`` and detects on the same image with the same settings (scale 1.1,
  minNeighbors 3): the peer;
* CPU seconds (user + system) of the same processes, steadier than wall times when the
  machine is shared;
* parts: ``python -c pass`` (interpreter start), ``import vjboost.cli.detect``, and the first
  run's compile note (``compiling kernels``) checked on stderr;
* where a warm run's CPU time goes: a process of the same environment (warm cache) times each
  step of a detection with ``time.process_time`` — the imports (NumPy, numba, OpenCV, click,
  vjboost's command), loading the model, building the detector, reading the photo, the first
  detection (the kernel loaded from numba's cache, then run) and a second one (run only; the
  kernel load is the difference) — medians over the warm runs.

The photo is scikit-image's ``astronaut()`` (512×512) unless ``--image`` is given. The first
run is repeated with a new empty cache each time. The processes run in a user's environment:
``NUMBA_CACHE_DIR`` and ``PYTHONDONTWRITEBYTECODE`` are removed from it. ``--venv DIR`` times
the ``vjdetect`` of another environment (e.g. a fresh ``python -m venv`` with a wheel installed)
instead of this one's. Prints a table and ends with ``RESULT {json}``; ``--quick`` (one first
run, three warm) takes well under a minute.

Targets for the first detection: first run ≤ 5 s, warm ≤ 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _cli import description

#: the cascade both peers run: the shipped Haar one, which OpenCV loads from its XML twin (the
#: ``cv2`` process runs it whatever ``--model`` vjdetect runs)
MODEL = "vjboost:frontalface_haar"
CV2_SNIPPET = (
    "import sys, cv2; c = cv2.CascadeClassifier(sys.argv[1]); "
    "g = cv2.cvtColor(cv2.imread(sys.argv[2]), cv2.COLOR_BGR2GRAY); "
    "print(len(c.detectMultiScale(g, 1.1, 3, minSize=(20, 20))))"
)

#: a warm detection step by step, in one process: CPU seconds per step, as JSON (argv: model,
#: photo). The imports run with the collector paused, as the console scripts import them.
PHASES_SNIPPET = """
import gc, json, sys, time
steps, last = [], time.process_time()
def step(name):
    global last
    now = time.process_time()
    steps.append((name, round(now - last, 4)))
    last = now
gc.disable()
import numpy; step("import numpy")
import numba; step("import numba")
import cv2; step("import cv2")
import click; step("import click")
import vjboost.cli.detect
from vjboost.cascade.detector import CascadeDetector
from vjboost.cascade.model_io import load_model
from vjboost.cascade.shipped import resolve_model
from vjboost.io import read_image
step("import vjboost's command")
gc.freeze(); gc.enable()
model = load_model(resolve_model(sys.argv[1])); step("load the model")
detector = CascadeDetector(model); step("build the detector")
image = read_image(sys.argv[2], gray=False); step("read the photo")
detector.detect(image); step("detect (kernel from the cache + run)")
detector.detect(image); step("detect again (run only)")
print(json.dumps(steps))
"""

#: CPU seconds (user + system) of the finished child processes, per ``timed`` call
CPU: list[float] = []


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float,
                                                                   subprocess.CompletedProcess]:
    """Wall seconds of one process, and its result (stdout/stderr captured); its CPU seconds
    are appended to :data:`CPU` (on a loaded machine they move less than wall times)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=cwd)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if res.returncode != 0:
        # the command's last line says why (click prints its usage above it)
        why = (res.stderr.strip().splitlines() or [""])[-1]
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {why}")
    return dt, res


def write_photo(path: Path) -> None:
    import cv2
    from skimage import data

    cv2.imwrite(str(path), cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--image", type=Path, help="photo to detect on (default: astronaut())")
    ap.add_argument("--venv", type=Path,
                    help="environment whose python and vjdetect are timed (default: this one)")
    ap.add_argument("--first-runs", type=int, default=2,
                    help="first runs, each on a new empty cache (default: 2)")
    ap.add_argument("--warm-runs", type=int, default=5, help="warm runs (default: 5)")
    ap.add_argument("--model", default=MODEL,
                    help="shipped model vjdetect runs (default: %(default)s; the cv2 process "
                         "always runs that model's XML twin)")
    ap.add_argument("--quick", action="store_true", help="1 first run, 3 warm runs")
    args = ap.parse_args(argv)
    if args.quick:
        args.first_runs, args.warm_runs = 1, 3

    if args.venv is not None:
        python = str(args.venv / "bin" / "python")
    else:
        python = sys.executable
    vjdetect = str(Path(python).with_name("vjdetect"))
    if not Path(vjdetect).is_file():
        raise SystemExit(f"{vjdetect}: no vjdetect next to {python}; install vjboost there")

    with tempfile.TemporaryDirectory(prefix="vjfirst") as tmp:
        # every process runs in this folder, not in the repository, whose vjboost a
        # ``python -c`` process would import instead of the timed environment's
        tmp_path = Path(tmp)
        photo = args.image.resolve() if args.image else tmp_path / "photo.png"
        if args.image is None:
            write_photo(photo)
        # a user's environment: no cache folder chosen (nor the second process's switch), and
        # Python writes its bytecode caches (an installed wheel has them already;
        # PYTHONDONTWRITEBYTECODE would make every run of an editable install compile
        # vjboost's sources again)
        base_env = {k: v for k, v in os.environ.items()
                    if k not in ("NUMBA_CACHE_DIR", "PYTHONDONTWRITEBYTECODE",
                                 "VJBOOST_COMPILE_AHEAD")}
        xml = subprocess.run(
            [python, "-c", "from vjboost.cascade.shipped import MODELS_DIR; "
             f"print(MODELS_DIR / '{MODEL.split(':')[1]}.xml')"],
            env=base_env, capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip()

        first, first_cpu, notes, n_dets = [], [], [], None
        alone, alone_cpu = [], []
        cache = tmp_path / "cache-0"
        for k in range(args.first_runs):
            # alternated, so that a change of the machine's load shows in both
            for second in ((True, False) if k % 2 == 0 else (False, True)):
                cache = tmp_path / f"cache-{k}-{int(second)}"
                env = dict(base_env, NUMBA_CACHE_DIR=str(cache),
                           VJBOOST_COMPILE_AHEAD="1" if second else "0")
                dt, res = timed([vjdetect, str(photo), "--model", args.model], env, tmp_path)
                if not second:
                    alone.append(dt)
                    alone_cpu.append(CPU[-1])
                    continue
                first.append(dt)
                first_cpu.append(CPU[-1])
                notes.append("compiling kernels" in res.stderr)
                n_dets = len(res.stdout.splitlines())
        env = dict(base_env, NUMBA_CACHE_DIR=str(cache))
        warm, warm_cpu, warm_note = [], [], False
        for _ in range(args.warm_runs):
            dt, res = timed([vjdetect, str(photo), "--model", args.model], env, tmp_path)
            warm.append(dt)
            warm_cpu.append(CPU[-1])
            warm_note |= "compiling kernels" in res.stderr
        cv2_times, cv2_cpu = [], []
        cv2_dets = None
        for _ in range(max(args.warm_runs, 1)):
            dt, res = timed([python, "-c", CV2_SNIPPET, xml, str(photo)], base_env, tmp_path)
            cv2_times.append(dt)
            cv2_cpu.append(CPU[-1])
            cv2_dets = int(res.stdout.strip())
        phases = [json.loads(timed([python, "-c", PHASES_SNIPPET, args.model, str(photo)], env,
                                   tmp_path)[1].stdout) for _ in range(max(args.warm_runs, 1))]
        start = [timed([python, "-c", "pass"], base_env, tmp_path)[0] for _ in range(3)]
        imports = [timed([python, "-c", "import vjboost.cli.detect"], env, tmp_path)[0]
                   for _ in range(3)]

    med = statistics.median
    result = {
        "photo": str(args.image or "astronaut() 512x512"),
        "model": args.model,
        "python": python,
        "first_run_s": [round(t, 2) for t in first],
        "first_run_median_s": round(med(first), 2),
        "first_run_alone_s": [round(t, 2) for t in alone],
        "first_run_alone_median_s": round(med(alone), 2),
        "first_over_alone": round(med(first) / med(alone), 2),
        "warm_median_s": round(med(warm), 2),
        "warm_min_s": round(min(warm), 2),
        "cv2_median_s": round(med(cv2_times), 2),
        "first_over_cv2": round(med(first) / med(cv2_times), 1),
        "warm_over_cv2": round(med(warm) / med(cv2_times), 1),
        "compile_s": round(med(first) - med(warm), 2),
        "first_run_cpu_s": round(med(first_cpu), 2),
        "first_run_alone_cpu_s": round(med(alone_cpu), 2),
        "warm_cpu_s": round(med(warm_cpu), 2),
        "cv2_cpu_s": round(med(cv2_cpu), 2),
        "python_start_s": round(med(start), 3),
        "import_cli_s": round(med(imports), 2),
        "detections": n_dets,
        "cv2_detections": cv2_dets,
        "note_on_first_run": all(notes),
        "note_on_warm_run": warm_note,
        "targets": {"first_run_s": 5.0, "warm_s": 1.0},
        "warm_cpu_steps_s": {name: round(med(run[k][1] for run in phases), 3)
                             for k, (name, _) in enumerate(phases[0])},
        "load_avg": round(os.getloadavg()[0], 2),
    }
    print(f"vjdetect --model {args.model} on {result['photo']} ({python})")
    print(f"  first run (empty cache)  {result['first_run_median_s']:6.2f} s  "
          f"(runs: {result['first_run_s']}; target <= 5 s)")
    print(f"  first run, one process   {result['first_run_alone_median_s']:6.2f} s  "
          f"(runs: {result['first_run_alone_s']}; VJBOOST_COMPILE_AHEAD=0) -> "
          f"{result['first_over_alone']}x with two")
    print(f"  warm run                 {result['warm_median_s']:6.2f} s  (target <= 1 s)")
    print(f"  cv2 process, same XML    {result['cv2_median_s']:6.2f} s  "
          f"-> first {result['first_over_cv2']}x, warm {result['warm_over_cv2']}x cv2's time")
    print(f"  CPU seconds (user+sys): first {result['first_run_cpu_s']:.2f} (one process "
          f"{result['first_run_alone_cpu_s']:.2f}), warm "
          f"{result['warm_cpu_s']:.2f}, cv2 {result['cv2_cpu_s']:.2f}")
    print(f"  of which: python start {result['python_start_s']:.2f} s, import vjboost.cli.detect "
          f"{result['import_cli_s']:.2f} s, compilation ~{result['compile_s']:.2f} s")
    print("  a warm detection step by step (CPU s, in one process): " + ", ".join(
        f"{name} {t:.3f}" for name, t in result["warm_cpu_steps_s"].items()))
    print(f"  detections: vjdetect {n_dets}, cv2 {cv2_dets}; compile note on first run: "
          f"{result['note_on_first_run']}, on warm runs: {result['note_on_warm_run']}; "
          f"load average {result['load_avg']}")
    print("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    main()
