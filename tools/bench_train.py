"""Training speed and memory: the traincascade reference run, the shipped model's configuration,
per-stage mining cost, and the samplers on the face validation split.

1. **Reference run** (``--ref``): the inputs and parameters of the opencv_traincascade run recorded
   in ../shared/docs/anchors.md: ``cbcl_pos_19x19.vec`` (2,428 CBCL faces) and ``bg.txt`` (3,019
   background images), numPos 2000, numNeg 4000, 15 stages, 19×19, HAAR BASIC, Gentle AdaBoost
   stumps, minHitRate 0.995, maxFalseAlarmRate 0.5, weight trimming 0.95, 2 threads; trained with
   the exhaustive search (``--sampler full``) and with a sampler. opencv_traincascade cannot run
   here (no pip wheel builds it), so its figures are the recorded ones: 893 s wall time, CMU-MIT
   recall 0.466 with 50 false positives (IoU ≥ 0.5) and 0.480 / 45 (IoU ≥ 0.3) at scaleFactor
   1.1, minNeighbors 3. Ratios of wall time to 893 s are printed.
2. **Shipped configuration** (``--shipped-stages N``): the recipe of a shipped face model
   (``--shipped-recipe``, default ``frontalface``, the default model; ``frontalface_haar``,
   the OpenCV-exportable one), as ``tools/train_face.py train`` runs it (the command of
   ``vjboost/models/README.md``, on the data of ``tools/face_data.py``), for its first ``N``
   stages; wall time, CPU time and peak memory (the child process's maximum resident set) are
   measured. When ``N`` is less than the recipe's stages, the full time is extrapolated (and
   flagged as such, see :func:`extrapolate`) from the shipped model's own training report.
   ``--shipped-from DIR`` prints the figures of a run made earlier (e.g. by
   ``tools/train_face.py train``); of a run deeper than the recipe (``--set stages=25 --set
   mining-budget=800M --set min-neg=500``: late stages on the negatives a bounded mining finds)
   also ``deep_stages``, ``deep_config_s`` and ``deep_min_negatives``.
3. **Mining per stage**: for every run, mining seconds, windows scanned, windows carried in the
   negative pool and the growth of mining time from one stage to the next.
4. **Samplers** (``--samplers a,b,...``): a small face cascade (the data of
   ``tools/face_data.py``: ``VJBOOST_FACE_DATA`` or ``../data/faces``; never CMU-MIT) per
   sampler, its training time and its detection rate at false-positive budgets on the
   validation detection set ``val/det``.

The last line is ``RESULT {json}`` with ``shipped_config_s``, ``shipped_config_peak_gib``,
``ref_run_ratio_sampler``, ``ref_run_ratio_exhaustive``, ``dask_same_model`` (the same-model
check of ``tools/bench_dask.py``: a small cascade trained in-process and on 2 local Dask workers;
null with ``--no-dask`` or without the ``dask`` extra), the mining table and the sampler table.
``--quick`` (under a minute): a 5-stage reference run of 300/600 windows with each search and
the same-model check, no shipped configuration, no face comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import train_face as tf  # noqa: E402
from _cli import description  # noqa: E402

from vjboost.cascade.detector import CascadeDetector  # noqa: E402
from vjboost.cascade.trainer import CascadeTrainer  # noqa: E402
from vjboost.eval import evaluate_detections  # noqa: E402
from vjboost.io import read_annotations, read_bg_list, read_image, read_vec  # noqa: E402

SHARED = next((p for p in (Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared")),
                           REPO.parent.parent / "shared") if p.is_dir()),
              REPO.parent / "shared") / "data"
FACES = tf.DATA
ANCHOR = {"seconds": 893.0, "recall_iou50": 0.466, "fp_iou50": 50, "recall_iou30": 0.480,
          "fp_iou30": 45, "stages": 13, "weak": 90}
#: what the first shipped face model's run took (before this benchmark: the baseline of its targets)
SHIPPED_BEFORE = {"seconds": 4247.0, "peak_gib": 12.3}


def _cpu() -> float:
    """CPU seconds of this process (user + system): on a shared machine, wall time also counts
    the waits for the other processes' turns, CPU time does not."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def evaluate_cmu(model, n_images: int | None) -> dict:
    """CMU-MIT detection rate at minNeighbors 3 (a test set: reported, never used to choose)."""
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


def mining_table(stages: list[dict], mining: list[dict]) -> list[dict]:
    """Per stage: mining seconds, windows scanned / carried, negatives found (fewer than asked
    when a mining budget ran out), windows scanned per second of mining, growth over the
    previous stage."""
    rows, prev = [], None
    for m in mining:
        k = int(m["stage"])
        st = stages[k] if k < len(stages) else {}
        sec = float(m.get("seconds", 0.0))
        rows.append({"stage": k, "mining_s": round(sec, 2), "scanned": int(m["n_scanned"]),
                     "carried": int(m.get("n_from_pool", 0)),
                     "negatives": int(m.get("n_found", 0)),
                     "acceptance": float(m["acceptance_ratio"]),
                     "windows_per_s": round(int(m["n_scanned"]) / sec) if sec > 0 else None,
                     "growth": None if not prev else round(sec / prev, 2),
                     "stage_s": round(float(st.get("total", 0.0)), 1)})
        prev = sec if sec > 0 else None
    return rows


def print_mining(title: str, rows: list[dict]) -> None:
    print(f"\nmining per stage ({title})")
    print("| stage | mining s | x previous | windows scanned | windows/s | carried from pool "
          "| negatives | acceptance | stage s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        g = "" if r["growth"] is None else f"{r['growth']:.2f}"
        rate = "" if r.get("windows_per_s") is None else f"{r['windows_per_s']:.3g}"
        print(f"| {r['stage']} | {r['mining_s']:.2f} | {g} | {r['scanned']:.3g} | {rate} | "
              f"{r['carried']} | {r['negatives']} | {r['acceptance']:.3g} | "
              f"{r['stage_s']} |")


def ref_run(args, sampler: str | None) -> dict:
    anchor = SHARED / "traincascade-anchor"
    pos = read_vec(anchor / "cbcl_pos_19x19.vec", (19, 19))
    bg = read_bg_list(anchor / "bg.txt")
    stages, num_pos, num_neg = (5, 300, 600) if args.quick else (15, 2000, 4000)
    trainer = CascadeTrainer(window_shape=(19, 19), features="haar", haar_mode="BASIC",
                             num_stages=stages, num_pos=num_pos, num_neg=num_neg,
                             min_hit_rate=0.995, max_false_alarm=0.5, loss="gentle",
                             weak_learner="stump", weight_trim_rate=0.95, max_weak_count=100,
                             sampler=sampler, seed=0, threads=args.threads)
    name = sampler or "full"
    print(f"\n== reference run, --sampler {name} ({stages} stages, {num_pos}/{num_neg})",
          flush=True)
    t0, c0 = time.perf_counter(), _cpu()
    trainer.fit(pos, bg, log=lambda m: print(m, flush=True))
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    model = trainer.model_
    print(f"trained {model.n_stages} stages, {model.n_trees} weak classifiers in {wall:.0f} s "
          f"({trainer.stop_reason_})")
    secs = [s.seconds for s in trainer.stages_]
    rows = mining_table(secs, trainer.mining_)
    print_mining(f"reference run, {name}", rows)
    ev = None if args.quick else evaluate_cmu(model, None)
    if ev is not None:
        print(f"CMU-MIT ({ev['images']} images, {ev['faces']} faces), scale 1.1, minNeighbors "
              f"3: recall {ev['recall_iou50']} at {ev['fp_iou50']} FP (IoU >= 0.5), "
              f"{ev['recall_iou30']} at {ev['fp_iou30']} FP (IoU >= 0.3); traincascade: "
              f"{ANCHOR['recall_iou50']} / {ANCHOR['fp_iou50']} and {ANCHOR['recall_iou30']} / "
              f"{ANCHOR['fp_iou30']}")
        print(f"wall time {wall:.0f} s vs traincascade {ANCHOR['seconds']:.0f} s: "
              f"{wall / ANCHOR['seconds']:.3f} of its time")
    return {"sampler": name, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "load_average": round(os.getloadavg()[0], 1),
            "ratio_vs_traincascade": round(wall / ANCHOR["seconds"], 3),
            "stages": model.n_stages, "weak": model.n_trees, "stop": trainer.stop_reason_,
            "peak_gib": round(max(s.info.get("peak_rss", 0) for s in trainer.stages_) / 2**30, 2),
            "mining": rows, "cmu_mit": ev}


def shipped_run(args, n_stages: int) -> dict:
    """The shipped recipe ``args.shipped_recipe`` for ``n_stages`` stages, as
    ``tools/train_face.py train`` runs it (``vjtrain`` in a child process)."""
    out = Path(args.output) / f"{args.shipped_recipe}_{n_stages}"
    if out.exists():
        import shutil

        shutil.rmtree(out)
    print(f"\n== shipped configuration ({args.shipped_recipe}), {n_stages} stage(s)", flush=True)
    run = tf.train(args.shipped_recipe, out, overrides={"stages": n_stages,
                                                         "threads": args.threads},
                   data=FACES, quick=False, nice=0, ship=False)
    if run["rc"] != 0:
        raise SystemExit(f"the shipped configuration's vjtrain failed (exit status {run['rc']})")
    rep = json.loads((out / "report.json").read_text())
    stages = rep["stages"]
    rows = mining_table([s["seconds"] for s in stages], rep["mining"])
    print_mining(f"shipped configuration, {n_stages} stages", rows)
    res = {"recipe": args.shipped_recipe, "stages_run": len(stages), "wall_s": run["wall_s"],
           "cpu_s": run["cpu_s"], "peak_gib": run["peak_rss_gib"],
           "stage_peak_gib": [round(s.get("peak_rss_bytes", 0) / 2**30, 2) for s in stages],
           "mining": rows, "sampler": rep["config"].get("sampler") or "full"}
    if (len(stages) < _recipe_stages(args.shipped_recipe)
            and rep["stop"]["reason"] == "num_stages"):
        res["extrapolated_s"] = round(extrapolate(run["wall_s"], stages, args.shipped_recipe), 0)
    return res


def _recipe_stages(recipe: str) -> int:
    return int(tf.RECIPES[recipe]["stages"])


def extrapolate(wall: float, stages: list[dict], recipe: str = "frontalface") -> float:
    """The recipe's full wall time from its first stages: later stages' boosting at the measured
    seconds per weak learner times the shipped model's weak learners of those stages; their
    mining at the shipped run's mining time of the same stage times the measured ratio of mining
    times (this run / the shipped run) over the stages run after the first."""
    report = REPO / "vjboost" / "models" / f"{recipe}.report.json"
    shipped = json.loads(report.read_text())["stages"]
    n = len(stages)
    boost = sum(s["seconds"]["total"] - s["seconds"]["negatives"] for s in stages)
    # report stages count "n_weak", checkpoint stages list their "learners"
    per_weak = boost / max(1, sum(s.get("n_weak", len(s.get("learners", []))) for s in stages))
    common = range(1, n) if n > 1 else range(0, 1)
    ratio = (sum(stages[j]["seconds"]["negatives"] for j in common)
             / max(1e-9, sum(shipped[j]["seconds"]["negatives"] for j in common)))
    rest = sum(per_weak * shipped[j]["n_weak"] + ratio * shipped[j]["seconds"]["negatives"]
               for j in range(n, min(_recipe_stages(recipe), len(shipped))))
    return wall + rest


def from_checkpoint(folder: Path, recipe: str = "frontalface") -> dict:
    """Figures of a shipped-configuration run (from its checkpoint; extrapolated when it
    stopped early)."""
    ck = json.loads((folder / "checkpoint.json").read_text())
    stages = ck["stages"]
    wall = sum(s["seconds"]["total"] for s in stages)
    res = {"stages_run": len(stages), "wall_s": round(wall, 1),
           "stage_peak_gib": [round(s["info"].get("peak_rss", 0) / 2**30, 2) for s in stages],
           "mining": mining_table([s["seconds"] for s in stages], ck["mining"])}
    if len(stages) < _recipe_stages(recipe):
        res["extrapolated_s"] = round(extrapolate(wall, stages, recipe), 0)
    return res


def compare_samplers(args, samplers: list[str]) -> list[dict]:
    """One small face cascade per sampler; detection rate at FP budgets on ``val/det``."""
    from vjboost.cascade.positives import load_positives
    from vjboost.eval.run import evaluation_paths, load_evaluation_set, sweep_detector

    manifest = json.loads((FACES / "manifest.json").read_text())
    win = (20, 20)
    pos = load_positives(FACES / "train" / "positives.npz", win, mirror=True,
                         crop=tuple(manifest["pos_crop"])).samples
    pos = pos[np.random.default_rng(0).permutation(len(pos))]
    bg = read_bg_list(FACES / "backgrounds_train.txt")
    gt = read_annotations(FACES / "val" / "det" / "boxes.csv")
    es = load_evaluation_set(gt, evaluation_paths(gt, str(FACES / "val" / "det" / "images.txt")))
    stages, num_pos, num_neg = args.sampler_run
    rows = []
    for s in samplers:
        tr = CascadeTrainer(window_shape=win, features="haar", num_stages=stages,
                            num_pos=num_pos, num_neg=num_neg, sampler=s, seed=0,
                            threads=args.threads)
        t0 = time.perf_counter()
        tr.fit(pos, bg)
        wall = time.perf_counter() - t0
        det = CascadeDetector(tr.model_, scale_factor=1.1, min_neighbors=0, grouping="none")
        c = sweep_detector(det, es, thresholds=range(0, 11), iou_threshold=0.3).curve
        at = {b: float(c.detection_rate[c.false_positives <= b].max(initial=0.0))
              for b in (30, 100, 300, 1000)}
        sec = [st.seconds for st in tr.stages_]
        rows.append({"sampler": s, "seconds": round(wall, 1),
                     "features_s": round(sum(x["features"] for x in sec), 1),
                     "boosting_s": round(sum(x["boosting"] for x in sec), 1),
                     "stages": tr.model_.n_stages, "weak": tr.model_.n_trees,
                     "dr_at_fp": at, "stop": tr.stop_["reason"]})
        print("sampler " + json.dumps(rows[-1]), flush=True)
    print("\n| sampler | train s | features s | boosting s | stages | weak | DR @30 FP | @100 | "
          "@300 | @1000 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        d = r["dr_at_fp"]
        print(f"| {r['sampler']} | {r['seconds']} | {r['features_s']} | {r['boosting_s']} | "
              f"{r['stages']} | {r['weak']} | {d[30]:.3f} | {d[100]:.3f} | {d[300]:.3f} | "
              f"{d[1000]:.3f} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--output", default="runs/bench_train", help="folder of the shipped runs")
    ap.add_argument("--ref", default="full,laminating",
                    help="searches of the reference run (comma-separated; '' for none)")
    ap.add_argument("--shipped-stages", type=int, default=0,
                    help="run the shipped configuration for this many stages (0: skip)")
    ap.add_argument("--shipped-recipe", default="frontalface", choices=sorted(tf.RECIPES),
                    help="the shipped model whose recipe --shipped-stages runs (tools/"
                         "train_face.py)")
    ap.add_argument("--shipped-from", metavar="DIR",
                    help="only print the figures of a shipped-configuration run made earlier "
                         "(its output folder)")
    ap.add_argument("--samplers", default="",
                    help="compare these samplers on the face validation split, e.g. "
                         "full,laminating,tasting_1q")
    ap.add_argument("--sampler-run", default="14,1000,2000",
                    help="stages,num_pos,num_neg of the sampler comparison")
    ap.add_argument("--no-dask", action="store_true",
                    help="skip the same-model check on 2 local Dask workers")
    args = ap.parse_args()
    args.sampler_run = tuple(int(v) for v in args.sampler_run.split(","))
    if args.shipped_from:
        sh = from_checkpoint(Path(args.shipped_from), args.shipped_recipe)
        print_mining(f"shipped configuration, {sh['stages_run']} stages", sh["mining"])
        out = {"shipped_config_s": sh.get("extrapolated_s", sh["wall_s"]),
               "shipped_config_extrapolated": "extrapolated_s" in sh,
               "shipped_config_peak_gib": max(sh["stage_peak_gib"]), "shipped": sh}
        n = _recipe_stages(args.shipped_recipe)
        if sh["stages_run"] > n:
            # the recipe taken deeper (e.g. --set stages=25 --set mining-budget=800M): its first
            # stages are the recipe's own run
            out.update(shipped_config_s=round(sum(r["stage_s"] for r in sh["mining"][:n]), 1),
                       shipped_config_peak_gib=max(sh["stage_peak_gib"][:n]),
                       deep_stages=sh["stages_run"], deep_config_s=sh["wall_s"],
                       deep_config_peak_gib=max(sh["stage_peak_gib"]),
                       deep_min_negatives=min(r["negatives"] for r in sh["mining"]))
            print(f"\n{sh['stages_run']} stages in {sh['wall_s']:.0f} s "
                  f"({sh['wall_s'] / 60:.1f} min), peak {max(sh['stage_peak_gib'])} GiB")
        print("RESULT " + json.dumps(out))
        return
    if not (SHARED / "traincascade-anchor").is_dir():
        print(f"needs {SHARED / 'traincascade-anchor'}")
        print("RESULT " + json.dumps({"skipped": True}))
        return
    result: dict = {"quick": args.quick, "dask_same_model": None}
    refs = {}
    for s in [v for v in args.ref.split(",") if v]:
        refs[s] = ref_run(args, None if s == "full" else s)
    result["ref_runs"] = refs
    result["ref_run_ratio_exhaustive"] = refs["full"]["ratio_vs_traincascade"] if (
        "full" in refs) else None
    sampled = [r for k, r in refs.items() if k != "full"]
    result["ref_run_ratio_sampler"] = sampled[0]["ratio_vs_traincascade"] if sampled else None
    shipped = args.shipped_stages and not args.quick
    if shipped and not (FACES / "manifest.json").is_file():
        print(f"the shipped configuration needs tools/face_data.py's output in {FACES} "
              "(VJBOOST_FACE_DATA): skipped")
        shipped = False
    if shipped:
        sh = shipped_run(args, args.shipped_stages)
        result["shipped"] = sh
        result["shipped_config_s"] = sh.get("extrapolated_s", sh["wall_s"])
        result["shipped_config_extrapolated"] = "extrapolated_s" in sh
        result["shipped_config_peak_gib"] = sh["peak_gib"]
        print(f"\nshipped configuration: {sh['stages_run']} stage(s) in {sh['wall_s']:.0f} s, "
              f"peak {sh['peak_gib']} GiB; {_recipe_stages(args.shipped_recipe)} stages "
              + (f"extrapolated to {sh['extrapolated_s']:.0f} s" if "extrapolated_s" in sh
                 else f"measured {sh['wall_s']:.0f} s")
              + f" (before: {SHIPPED_BEFORE['seconds']:.0f} s, {SHIPPED_BEFORE['peak_gib']} GiB)")
    else:
        result["shipped_config_s"] = result["shipped_config_peak_gib"] = None
    if args.samplers and not args.quick:
        result["samplers"] = compare_samplers(args, args.samplers.split(","))
    if not args.no_dask:
        result["dask_same_model"] = dask_same_model(Path(args.output))
    print("RESULT " + json.dumps(result))


def dask_same_model(tmp: Path) -> bool | None:
    """``tools/bench_dask.py``'s same-model check (2 local Dask workers against one process);
    ``None`` when the ``dask`` extra is not installed."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("dask_same_model: skipped (the dask extra is not installed)")
        return None
    sys.path.insert(0, str(REPO / "tools"))
    from bench_dask import same_model

    t = time.perf_counter()
    same = same_model(tmp)
    print(f"dask_same_model: {same} (a 3-stage cascade in-process and on 2 Dask workers, "
          f"{time.perf_counter() - t:.0f} s)")
    return bool(same)


if __name__ == "__main__":
    main()
