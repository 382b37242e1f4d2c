"""Mining cost: background windows scanned per CPU second, row pass on and off.

Late in training a mining unit scans every window of an augmented background image (all the
``step²`` grid offsets at once) with the cascade trained so far, and almost every window is
rejected by its first stages; early in training a unit scans one grid offset (``--passes 1``:
every ``step``-th column of every ``step``-th row, a strided row pass) and the cascade accepts
many more. This tool scans such units of ``--images`` training backgrounds
with a cascade (default ``vjboost:frontalface_haar``: the shipped Haar configuration's 19
stages, i.e. the cascade that mines stage 19) twice in the same run: window by window
(:func:`vjboost.cascade.kernels.scan`), and with the stages over whole rows
(:mod:`vjboost.cascade.prefilter`) — checking that both keep the same windows — and prints the
windows scanned per CPU second of each and their ratio, on one thread.

``--stages K`` keeps the first ``K`` stages (the cascade of an earlier mining stage);
``--passes`` chooses the units (1, ``step`` or ``step²`` grid passes).
The last line is ``RESULT {json}``; ``--quick`` scans 3 images (a few seconds).

Example::

    python tools/bench_mining.py --images 12
    python tools/bench_mining.py --stages 3 --passes 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import face_data as fd  # noqa: E402
from _cli import description  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--model", default="vjboost:frontalface_haar")
    ap.add_argument("--stages", type=int, default=0, help="first K stages only (0: all)")
    ap.add_argument("--backgrounds", default=None,
                    help="a list of background images, one path a line (default: the training "
                         "backgrounds of tools/face_data.py's build)")
    ap.add_argument("--images", type=int, default=12)
    ap.add_argument("--passes", type=int, default=0,
                    help="grid passes per unit: 1 (one grid offset: every step-th column and "
                         "row), step (every column of every step-th row) or 0 = step² (every "
                         "window)")
    ap.add_argument("--repeats", type=int, default=2, help="best of this many timings")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)

    from vjboost.cascade import prefilter
    from vjboost.cascade.model import CascadeModel
    from vjboost.cascade.model_io import load_model
    from vjboost.cascade.negatives import MiningParams, mining_detector, scan_unit, unit_groups
    from vjboost.io import read_image

    model = load_model(args.model)
    if 0 < args.stages < model.n_stages:
        model = CascadeModel(model.window_shape, stages=model.stages[:args.stages],
                             family=model.family, feature_ids=model.feature_ids,
                             params=model.params)
    if args.backgrounds is None:
        bg = fd.require_build(fd.DEFAULT_DATA, "backgrounds_train.txt") / "backgrounds_train.txt"
    else:
        bg = Path(args.backgrounds)
        if not bg.is_file():
            raise SystemExit(f"bench_mining.py: --backgrounds {bg}: no such list file")
    n_img = 3 if args.quick else args.images
    paths = bg.read_text().split()
    paths = paths[::max(1, len(paths) // n_img)][:n_img]
    images = {p: read_image(p) for p in paths}
    params = MiningParams(tuple(model.window_shape), scale_factor=1.1)
    g = args.passes or params.grid_step ** 2
    if g not in unit_groups(params.grid_step):
        ap.error(f"--passes: expected one of {unit_groups(params.grid_step)}, got {g}")
    units = [(p, k * g) for p in paths for k in range(1 if args.quick else 2)]
    applies = prefilter.applies
    cpu: dict[str, float] = {}
    kept: dict[str, list] = {}
    n_scanned = n_accepted = 0
    try:
        for _rep in range(max(1, args.repeats)):
            for mode in ("window", "rows"):
                prefilter.applies = applies if mode == "rows" else (lambda *a: False)
                det = mining_detector(model, params)
                # compile outside the timing
                scan_unit(model, paths[0], 0, params=params, seed=0, per_image=16, g=g,
                          image=images[paths[0]], detector=det)
                t0 = time.process_time()
                out = [scan_unit(model, p, q, params=params, seed=0, per_image=16, g=g,
                                 image=images[p], detector=det) for p, q in units]
                sec = time.process_time() - t0
                cpu[mode] = min(cpu.get(mode, float("inf")), sec)
                kept[mode] = [(u.n_accepted, u.windows.tobytes()) for u in out]
                n_scanned = sum(u.n_scanned for u in out)
                n_accepted = sum(u.n_accepted for u in out)
    finally:
        prefilter.applies = applies
    same = kept["window"] == kept["rows"]
    rate = {m: n_scanned / max(cpu[m], 1e-9) for m in cpu}
    print(f"{model.n_stages}-stage cascade, {len(units)} unit(s) of {g} pass(es) of "
          f"{len(paths)} image(s): {n_scanned:,} windows, {n_accepted} accepted")
    print("| scan | CPU s | windows / CPU s |")
    print("|---|---|---|")
    for m in ("window", "rows"):
        print(f"| {m} | {cpu[m]:.2f} | {rate[m]:.3g} |")
    print(f"rows / window: {rate['rows'] / rate['window']:.2f}x; same windows kept: {same}")
    print("RESULT " + json.dumps({
        "quick": args.quick, "model": args.model, "stages": model.n_stages, "passes": g,
        "windows": n_scanned, "accepted": n_accepted, "same_windows": same,
        "window_cpu_s": round(cpu["window"], 3), "rows_cpu_s": round(cpu["rows"], 3),
        "window_per_cpu_s": round(rate["window"]), "rows_per_cpu_s": round(rate["rows"]),
        "ratio": round(rate["rows"] / rate["window"], 3)}))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
