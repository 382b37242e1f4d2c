"""Ablation at equal training time: feature families and samplers of a whole face detector.

Every configuration is trained by ``vjtrain`` on the same face data (``tools/face_data.py``'s
training positives of every source, its training backgrounds; never CMU-MIT) with the same
settings (:data:`BASE`: 20×20, depth-2 trees, ``--num-pos/--num-neg`` 2,000, at most 10 stages,
hit rate 0.998, false alarm 0.5) for the same wall-time budget (``--budget`` seconds): the run is
stopped when the budget is spent and the cascade is closed at the last finished stage
(``vjtrain --stages K --resume``). Rows:

* families, all with the Laminating sampler: Haar (OpenCV's ALL set) / + MB-LBP / + MB-LBP +
  gradient channels / all four (+ HOG);
* samplers over all four families: exhaustive search (``full``), Laminating, Tasting, M.A.S.

Each cascade is evaluated on the validation detection set (``val/det``, every ``--val-every``-th
image; IoU ≥ 0.3, scale 1.1, minimum size = window): detection rate at the false-positive budgets
:data:`ABL_BUDGETS` (10, 50, 200, 1000: cascades trained for minutes are shallow) of its
``min_neighbors`` curve (the best rate of any minNeighbors 0–30) and of its ``sum@1`` score
curve (groups of ≥ 1 window ranked by the sum of their last-stage scores), detection time with
one thread (ms per megapixel, and the ratio to ``cv2.CascadeClassifier`` with OpenCV's default
cascade timed on the same images), training time and stages. ``--cmu`` then evaluates every
trained row on CMU-MIT (107 images, 354 faces) once, at the end, for the table: nothing is
chosen on it.

Results go to ``--out`` (``results.jsonl``, one line per configuration, reused by later runs
unless ``--retrain``); ``--markdown`` prints the table of ``docs/ablation.md``. The last line is
``RESULT {json}``. ``--quick``: two configurations, 3 stages on a tenth of the data, 31
validation images and the 20-image CMU-MIT subset with ``--cmu`` (under a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import bench_peers as bp  # noqa: E402
import train_face as tf  # noqa: E402
from _cli import description  # noqa: E402

ALL = "haar,mblbp,hog,channels"
#: the settings every configuration shares (vjtrain options)
BASE = dict(tf.COMMON, **{
    "jitter": 1, "haar-mode": "ALL", "weak-learner": "tree", "max-depth": 2,
    "num-pos": 2000, "num-neg": 2000, "stages": 10, "min-hit-rate": 0.998,
    "max-false-alarm": 0.5,
})
#: (row name, what differs from BASE)
CONFIGS = [
    ("Haar", {"features": "haar", "sampler": "laminating"}),
    ("Haar + MB-LBP", {"features": "haar,mblbp", "sampler": "laminating"}),
    ("Haar + MB-LBP + channels", {"features": "haar,mblbp,channels", "sampler": "laminating"}),
    ("all four (Laminating)", {"features": ALL, "sampler": "laminating"}),
    ("all four, exhaustive", {"features": ALL, "sampler": "full"}),
    ("all four, Tasting", {"features": ALL, "sampler": "tasting_1q"}),
    ("all four, M.A.S.", {"features": ALL, "sampler": "mas_naive"}),
]
QUICK_CONFIGS = ["Haar", "all four (Laminating)"]


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")


def train_budgeted(config: dict, out: Path, pos: Path, bg: Path, budget: float,
                   nice: int) -> dict:
    """Train until ``budget`` seconds are spent, then close the cascade at the last stage."""
    vjbin = str(Path(sys.executable).parent / "vjtrain")
    args = [str(pos), str(bg), "-o", str(out), *tf.vjtrain_args(config), "-q"]
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(REPO / ".numba_cache"))
    out.mkdir(parents=True, exist_ok=True)
    logf = open(out / "train.log", "w")
    t0 = time.perf_counter()
    proc = subprocess.Popen(["nice", "-n", str(nice), vjbin, *args], env=env, stdout=logf,
                            stderr=subprocess.STDOUT, start_new_session=True)
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc.wait(timeout=budget)
        cut = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
        cut = True
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # the CPU time the row got: the machine's load decides how much of the budget that is
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    if not (out / "checkpoint.json").is_file():  # vjtrain refused its input: say why
        logf.close()
        lines = (out / "train.log").read_text().strip().splitlines()
        raise SystemExit(f"ablation: {out}: vjtrain ended with status {proc.returncode}"
                         + (f": {lines[-1]}" if lines else ""))
    ck = json.loads((out / "checkpoint.json").read_text())
    k = len(ck["stages"])
    if k == 0:
        raise SystemExit(f"ablation: {out}: no stage finished within {budget:.0f} s")
    if cut or not (out / "model.json").is_file():
        closed = dict(config, stages=k)
        subprocess.run([vjbin, *args[:4], *tf.vjtrain_args(closed), "--resume", "-q"], env=env,
                       stdout=logf, stderr=subprocess.STDOUT, check=True)
    logf.close()
    stage_s = [sum(v for kk, v in st["seconds"].items() if kk == "total")
               for st in ck["stages"]]
    peak = max((st.get("info", {}).get("peak_rss", 0) for st in ck["stages"]), default=0)
    return {"stages": k, "cut": cut, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "training_s": round(float(sum(stage_s)), 1),
            "weak_learners": int(sum(len(st["learners"]) for st in ck["stages"])),
            "peak_rss_gib": round(peak / 2**30, 2)}


#: false-positive budgets of the table: cascades trained for a few minutes are shallow, so their
#: curves are read further out than the shipped models' (``bench_peers.BUDGETS``)
ABL_BUDGETS = (10, 50, 200, 1000)
#: the score curve of the table: groups of >= 1 window ranked by the sum of their windows'
#: last-stage scores (chosen on validation: the best window's score ties among many background
#: windows when the last stage has only a few trees)
SCORE = "sum@1"


def _rates_at(fp: np.ndarray, dr: np.ndarray) -> dict[str, float]:
    return {str(b): round(float(dr[fp <= b].max()) if (fp <= b).any() else 0.0, 4)
            for b in ABL_BUDGETS}


def curves(raw, images, gt, paths) -> dict:
    """Detection rate at :data:`ABL_BUDGETS` false positives of the ``min_neighbors`` curve (the
    best of minNeighbors 0–30) and of the :data:`SCORE` curve."""
    neigh, _ = bp.cascade_curves(raw, images, gt, paths, 1)
    pts = neigh["points"]
    out = {"min_neighbors": _rates_at(np.asarray(pts["false_positives"]),
                                      np.asarray(pts["detection_rate"]))}
    dets = {}
    for p, g, (b, s) in zip(paths, images, raw, strict=True):
        gb, sc, _ = bp.vj_groups(b, s).select(1, (g.shape[1], g.shape[0]), score="sum")
        dets[p] = (gb, sc)
    ev = bp.evaluate_detections(dets, gt, iou_threshold=bp.IOU)
    out[SCORE] = _rates_at(ev.curve_false_positives, ev.curve_detection_rate)
    return out


def evaluate(model_path: Path, sets: dict, time_every: int = 4) -> dict:
    """Curves on each evaluation set, and detection time there: one thread, ms per megapixel on
    every ``time_every``-th image, with OpenCV's default cascade (``cv2.CascadeClassifier``)
    timed on the same images just after (the ratio holds on a machine whose load varies)."""
    model, window, _ = bp.vj_load(str(model_path))
    det = bp.vj_detector(model, window, threads=1, min_neighbors=0)
    out = {}
    for name, (paths, images, gt) in sets.items():
        raw = [det.raw_windows(g) for g in images]
        timed = images[::time_every]
        t0 = time.perf_counter()
        for g in timed:
            det.raw_windows(g)
        ms = 1000 * (time.perf_counter() - t0) / (sum(g.size for g in timed) / 1e6)
        ocv = opencv_default_ms(timed)
        out[name] = {**curves(raw, images, gt, paths), "ms_per_mp_1t": round(ms, 1),
                     "opencv_default_ms_per_mp_1t": round(ocv, 1),
                     "time_over_opencv_default": round(ms / ocv, 3)}
    return out


def opencv_default_ms(images: list[np.ndarray]) -> float:
    """``cv2.CascadeClassifier`` with OpenCV's default cascade, one thread, ms per megapixel."""
    _, window, path = bp.vj_load(bp.OPENCV["OpenCV default"])
    cc = cv2.CascadeClassifier(path)
    cv2.setNumThreads(1)
    cc.detectMultiScale(images[0], bp.SCALE_FACTOR, bp.OPERATING_NEIGHBORS, minSize=window)
    t0 = time.perf_counter()
    for g in images:
        cc.detectMultiScale(g, bp.SCALE_FACTOR, bp.OPERATING_NEIGHBORS, minSize=window)
    secs = time.perf_counter() - t0
    cv2.setNumThreads(-1)
    return 1000 * secs / (sum(g.size for g in images) / 1e6)


def _rates(e: dict, name: str) -> str:
    if name not in e:
        return "—"
    return " / ".join(f"{e[name][SCORE][str(x)]:.3f}" for x in ABL_BUDGETS)


def markdown(rows: list[dict]) -> str:
    b = " / ".join(f"@{x}" for x in ABL_BUDGETS)
    head = (f"| configuration | stages (trees) | training s | validation {b} | "
            f"validation ms/MP (× OpenCV default) | CMU-MIT {b} |")
    lines = [head, "|" + "---|" * 6]
    for r in rows:
        e, t = r["eval"], r["train"]
        v = e.get("val") or e.get("cmu")
        lines.append(f"| {r['name']} | {t['stages']} ({t['weak_learners']}) | "
                     f"{t['training_s']:.0f} | {_rates(e, 'val')} | "
                     f"{v['ms_per_mp_1t']:.0f} (×{v['time_over_opencv_default']:.2f}) | "
                     f"{_rates(e, 'cmu')} |")
    return "\n".join(lines)


def _load(path: Path) -> dict:
    done = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done[r["name"]] = r
    return done


def _save(path: Path, done: dict) -> None:
    path.write_text("".join(json.dumps(done[n]) + "\n" for n, _ in CONFIGS if n in done))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=180.0, help="training seconds per row")
    ap.add_argument("--data", type=Path, default=tf.DATA)
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "ablation")
    ap.add_argument("--only", action="append", default=None, help="row names to run")
    ap.add_argument("--retrain", action="store_true", help="ignore earlier results")
    ap.add_argument("--val-every", type=int, default=2,
                    help="validate on every N-th validation image")
    ap.add_argument("--cmu", action="store_true",
                    help="after training, evaluate every row on CMU-MIT (once, at the end)")
    ap.add_argument("--reeval", action="store_true",
                    help="evaluate the rows trained earlier again (their models are kept)")
    ap.add_argument("--nice", type=int, default=5)
    ap.add_argument("--markdown", action="store_true", help="print the docs table and exit")
    args = ap.parse_args(argv)
    tf.fd.require_build(args.data, "train/positives.npz")
    out = args.out.with_name(args.out.name + "_quick") if args.quick else args.out
    res_path = out / "results.jsonl"
    done = {} if args.retrain else _load(res_path)
    if args.markdown:
        print(markdown([done[n] for n, _ in CONFIGS if n in done]))
        return 0

    names = args.only or (QUICK_CONFIGS if args.quick else [n for n, _ in CONFIGS])
    configs = [(n, c) for n, c in CONFIGS if n in names]
    pos, bg = args.data / "train" / "positives.npz", args.data / "backgrounds_train.txt"
    budget = args.budget
    out.mkdir(parents=True, exist_ok=True)
    every = args.val_every
    quick_pos = 500
    if args.quick:
        pos, bg = tf._quick_data(pos, bg, out)
        budget, every = min(budget, 30.0), 20
        with np.load(pos) as z:  # a small build's tenth may hold fewer (stages replace rejects)
            quick_pos = min(quick_pos, int(0.9 * len(z["images"])))
    vp, vi, vg = tf.load_validation(args.data, False)
    vp, vi = vp[::every], vi[::every]
    val = {"val": (vp, vi, {p: vg[p] for p in vp})}
    print(f"validation: {len(vi)} images; budget {budget:.0f} s per configuration", flush=True)
    for name, delta in configs:
        if name in done:
            if args.reeval:
                done[name]["eval"] = evaluate(out / slug(name) / "model.json", val)
                _save(res_path, done)
            continue
        config = dict(BASE, **delta)
        if args.quick:
            config.update({"num-pos": quick_pos, "num-neg": 500, "stages": 3})
        folder = out / slug(name)
        if folder.exists():
            import shutil

            shutil.rmtree(folder)
        tr = train_budgeted(config, folder, pos, bg, budget, args.nice)
        ev = evaluate(folder / "model.json", val)
        done[name] = {"name": name, "config": config, "budget_s": budget, "train": tr, "eval": ev}
        _save(res_path, done)
        v = ev["val"]
        print(f"{name:<28s} stages {tr['stages']:2d} trees {tr['weak_learners']:4d} "
              f"train {tr['training_s']:5.0f} s  val {SCORE} "
              + " ".join(f"{v[SCORE][str(b)]:.3f}" for b in ABL_BUDGETS)
              + f" | {v['ms_per_mp_1t']:.0f} ms/MP (x{v['time_over_opencv_default']:.2f})",
              flush=True)
    rows = [done[n] for n, _ in configs if n in done]
    if args.cmu:  # the test set, once every configuration is trained: nothing is chosen on it
        paths, images, gt = bp.load_cmu(args.quick)
        cmu = {"cmu": (paths, images, gt)}
        for r in rows:
            r["eval"].update(evaluate(out / slug(r["name"]) / "model.json", cmu))
        _save(res_path, done)
    print()
    print(markdown(rows))
    summary = {"quick": args.quick, "budget_s": budget, "budgets": list(ABL_BUDGETS),
               "rows": {r["name"]: {"stages": r["train"]["stages"],
                                    "weak_learners": r["train"]["weak_learners"],
                                    "training_s": r["train"]["training_s"],
                                    **{f"{k}_{SCORE}": e[SCORE] for k, e in r["eval"].items()},
                                    **{f"{k}_ms_per_mp_1t": e["ms_per_mp_1t"]
                                       for k, e in r["eval"].items()}} for r in rows}}
    print("RESULT " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
