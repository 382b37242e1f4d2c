"""Peak memory of cascade training with and without ``--reservoir`` as the data grows.

Trains the first stages of a Haar face cascade (Caltech WebFaces crops, ../shared/data/faces,
against the 3,019 background images of ../shared/data/negatives) with ``num_pos``/``num_neg``
multiplied by 1, 2, 4, ..., once with the full trainer (the stage's uint8 feature matrix of all
``num_pos + num_neg`` windows) and once with ``CascadeTrainer(reservoir=R)`` (``vjtrain
--reservoir R``). Every configuration runs in its own subprocess; its peak resident memory is the
``ru_maxrss`` that ``os.wait4`` reports for that child (a child that only imports vjboost and
loads the data gives the baseline). Each cascade is then checked on held-out data: the share of
held-out faces it accepts and its false-alarm rate on every window of held-out background images
(one scan at scale factor 1.25, grid step window/4), plus the stages' own hit rate / false alarm.

Last line: ``RESULT {json}``. Default: 20x20 window (78,460 Haar features), 4 stages of at most 40
stumps, 250/500 windows per stage at x1, R = 100, 60 held-out images. ``--quick`` (16x16
window, 2 stages, x1 and x2 of 150/300 windows, 15 held-out images) finishes in under a minute
on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared")) / "data"
FACES = SHARED / "faces" / "caltech_webfaces_36x36.npz"
NEGATIVES = SHARED / "negatives"
#: the face framing of the Caltech crops used for training (x, y, w, h fractions)
CROP = (0.157, 0.194, 0.667, 0.667)
N_HELD_FACES = 700
N_HELD_BACKGROUNDS = 150


def _data(window: int):
    """Training and held-out positives, training and held-out background paths."""
    import numpy as np

    from vjboost.cascade.positives import load_positives

    pos = load_positives(FACES, (window, window), crop=CROP).samples
    bgs = sorted(str(p) for p in NEGATIVES.iterdir() if p.suffix.lower() == ".jpg")
    # held-out sets: a fixed random choice, never seen by training
    rng = np.random.default_rng(0)
    order = rng.permutation(len(pos))
    held, train = pos[order[:N_HELD_FACES]], pos[order[N_HELD_FACES:]]
    border = rng.permutation(len(bgs))
    held_bg = [bgs[i] for i in sorted(border[:N_HELD_BACKGROUNDS])]
    train_bg = [bgs[i] for i in sorted(border[N_HELD_BACKGROUNDS:])]
    return train, held, train_bg, held_bg


def child(cfg: dict) -> dict:
    """One configuration (run in a subprocess): train, evaluate, report."""
    import numpy as np

    from vjboost.cascade.negatives import MiningParams, mine_negatives
    from vjboost.cascade.runner import CascadeRunner
    from vjboost.cascade.trainer import CascadeTrainer, build_cascade_model

    w = int(cfg["window"])
    train, held, train_bg, held_bg = _data(w)
    out: dict = {"mode": cfg["mode"], "scale": cfg.get("scale")}
    if cfg["mode"] == "baseline":
        return out
    t0 = time.perf_counter()
    tr = CascadeTrainer(
        # a long cascade of which exactly `stages` are trained: every configuration trains the
        # same number of stages (the false-alarm target of a short cascade would stop some early)
        window_shape=(w, w), features="haar", num_stages=20,
        num_pos=int(cfg["num_pos"]), num_neg=int(cfg["num_neg"]),
        max_weak_count=int(cfg["max_weak"]), min_hit_rate=0.995, max_false_alarm=0.5,
        seed=int(cfg["seed"]), threads=1,
        reservoir=int(cfg["reservoir"]) if cfg["mode"] == "reservoir" else None,
    )
    tr.fit(train, train_bg, max_new_stages=int(cfg["stages"]))
    out["fit_s"] = time.perf_counter() - t0
    out["train_peak_rss"] = max(int(s.info.get("peak_rss", 0)) for s in tr.stages_)
    out["n_features"] = int(tr.pool_.n_features)
    out["stages"] = [{
        "n_weak": len(s.learners), "hit_rate": round(s.hit_rate, 4),
        "false_alarm": round(s.false_alarm, 4), "mode": s.info.get("mode"),
        "feature_bytes": int(s.info.get("cache_bytes", 0)),
        "matrix_bytes": int(s.info.get("matrix_bytes", 0)),
        "seconds": round(s.seconds.get("total", 0.0), 2)} for s in tr.stages_]
    out["stop"] = tr.stop_["reason"]
    # held-out faces accepted by every stage (the cascade's hit rate)
    runner = CascadeRunner(build_cascade_model(tr.pool_, tr.stages_), threads=1)
    out["heldout_hit_rate"] = float(np.mean(runner.accepts(held)))
    # false alarms per window on held-out backgrounds (every window of one scan)
    res = mine_negatives(tr.model_, held_bg[: int(cfg["eval_backgrounds"])], 10**9,
                         params=MiningParams((w, w), max_per_image=1, max_passes=1), seed=0)
    out["heldout_windows"] = int(res.n_scanned)
    out["heldout_false_alarm"] = res.n_accepted / max(res.n_scanned, 1)
    out["eval_s"] = time.perf_counter() - t0 - out["fit_s"]
    return out


def _mib(b: float) -> str:
    return f"{b / 2**20:.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="16x16, 2 stages, x1 and x2 (< 1 min)")
    p.add_argument("--window", type=int, default=20, help="window side in pixels")
    p.add_argument("--stages", type=int, default=4)
    p.add_argument("--num-pos", type=int, default=250, help="positives per stage at x1")
    p.add_argument("--num-neg", type=int, default=500, help="negatives per stage at x1")
    p.add_argument("--scales", default="1,2,4", help="multipliers of num_pos and num_neg")
    p.add_argument("--reservoir", type=int, default=100, help="R of --reservoir")
    p.add_argument("--max-weak", type=int, default=40, help="weak learners per stage at most")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-backgrounds", type=int, default=60,
                   help=f"held-out background images scanned (at most {N_HELD_BACKGROUNDS})")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per configuration")
    p.add_argument("--json", help="also write the RESULT object to this file")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print("CHILD " + json.dumps(child(json.loads(args.child))), flush=True)
        return 0
    if not FACES.exists() or not NEGATIVES.is_dir():
        print(f"the shared data is missing ({FACES}, {NEGATIVES})", file=sys.stderr)
        return 2
    if args.quick:
        args.window, args.stages, args.num_pos, args.num_neg = 16, 2, 150, 300
        args.scales, args.reservoir, args.max_weak = "1,2", 50, 20
        args.eval_backgrounds = 15
    scales = [int(v) for v in args.scales.split(",")]
    base = {"window": args.window, "stages": args.stages, "max_weak": args.max_weak,
            "seed": args.seed, "reservoir": args.reservoir,
            "eval_backgrounds": min(args.eval_backgrounds, N_HELD_BACKGROUNDS)}
    t_start = time.perf_counter()
    rows = []
    # RUSAGE_CHILDREN's ru_maxrss is the largest child so far: each configuration's own peak is
    # read with os.wait4 on its process instead
    baseline = run_child({**base, "mode": "baseline"}, args.timeout)
    print(f"baseline (imports + data): peak RSS {_mib(baseline['peak_rss'])}", flush=True)
    for s in scales:
        for mode in ("full", "reservoir"):
            cfg = {**base, "mode": mode, "scale": s, "num_pos": args.num_pos * s,
                   "num_neg": args.num_neg * s}
            r = run_child(cfg, args.timeout)
            r["num_pos"], r["num_neg"] = cfg["num_pos"], cfg["num_neg"]
            rows.append(r)
            print(f"x{s} {mode:>9}: num_pos {cfg['num_pos']}, num_neg {cfg['num_neg']}: peak RSS "
                  f"{_mib(r['peak_rss'])}, fit {r['fit_s']:.1f} s, stages "
                  f"{[(st['n_weak'], st['false_alarm']) for st in r['stages']]}, held-out hit "
                  f"{r['heldout_hit_rate']:.3f}, held-out false alarm "
                  f"{r['heldout_false_alarm']:.2e}", flush=True)
    print(f"\n{args.stages}-stage Haar cascades, {args.window}x{args.window} window "
          f"({rows[0]['n_features']} features), R = {args.reservoir}; baseline RSS "
          f"{_mib(baseline['peak_rss'])}\n")
    print("| num_pos / num_neg | mode | peak RSS | feature memory (largest stage) | fit time | "
          "weak learners per stage | stage false alarms | held-out hit rate | held-out false "
          "alarm |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        feat = max(st["feature_bytes"] for st in r["stages"])
        fas = ", ".join(f"{st['false_alarm']:.3f}" for st in r["stages"])
        print(f"| {r['num_pos']} / {r['num_neg']} | {r['mode']} | {_mib(r['peak_rss'])} | "
              f"{_mib(feat)} | {r['fit_s']:.1f} s | "
              f"{', '.join(str(st['n_weak']) for st in r['stages'])} | "
              f"{fas} | "
              f"{r['heldout_hit_rate']:.3f} | {r['heldout_false_alarm']:.2e} |")
    summary = {
        "quick": bool(args.quick), "window": args.window, "n_features": rows[0]["n_features"],
        "stages": args.stages, "reservoir": args.reservoir, "max_weak": args.max_weak,
        "baseline_peak_mib": round(baseline["peak_rss"] / 2**20, 1),
        "runs": [{
            "mode": r["mode"], "num_pos": r["num_pos"], "num_neg": r["num_neg"],
            "peak_mib": round(r["peak_rss"] / 2**20, 1),
            "feature_mib": round(max(st["feature_bytes"] for st in r["stages"]) / 2**20, 1),
            "fit_s": round(r["fit_s"], 1),
            "n_weak": [st["n_weak"] for st in r["stages"]],
            "stage_false_alarm": [st["false_alarm"] for st in r["stages"]],
            "heldout_hit_rate": round(r["heldout_hit_rate"], 4),
            "heldout_false_alarm": float(f"{r['heldout_false_alarm']:.3e}"),
            "heldout_windows": r["heldout_windows"],
        } for r in rows],
        "wall_s": round(time.perf_counter() - t_start, 1),
    }
    for mode in ("full", "reservoir"):
        peaks = [x["peak_mib"] for x in summary["runs"] if x["mode"] == mode]
        summary[f"{mode}_peak_growth"] = round(peaks[-1] / peaks[0], 2)
    if args.json:
        from vjboost._io import atomic_write

        atomic_write(args.json, json.dumps(summary, indent=1))
    print("RESULT " + json.dumps(summary))
    return 0


def run_child(cfg: dict, timeout: float) -> dict:
    """Run a configuration in a subprocess and read its peak RSS with ``os.wait4``."""
    import signal

    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(cfg)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    output = []
    deadline = t0 + timeout
    for line in proc.stdout:  # the child writes little: reading to EOF cannot dead-lock
        output.append(line)
        if time.perf_counter() > deadline:
            os.kill(proc.pid, signal.SIGKILL)
            break
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    text = "".join(output)
    if proc.returncode != 0 or wall > timeout:
        raise SystemExit(f"configuration {cfg} failed (status {proc.returncode}, {wall:.0f} s):"
                         f"\n{text[-3000:]}")
    line = [x for x in text.splitlines() if x.startswith("CHILD ")][-1]
    res = json.loads(line[len("CHILD "):])
    res["wall_s"] = wall
    res["peak_rss"] = int(usage.ru_maxrss) * 1024  # Linux: KiB
    return res


if __name__ == "__main__":
    raise SystemExit(main())
