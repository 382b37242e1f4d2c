"""Mining throughput in-process vs on local Dask workers, and the same-model check.

Mining is measured as a training stage deep in the cascade sees it: vjboost's shipped
frontal-face cascade cut to ``--stages`` stages scans one pass over ``--images`` background
images of ``../shared/data/negatives`` (``max_passes=1``, no early stop, so every mode does the
same work), in four modes run one after the other in the same process:

* ``inprocess`` — ``mine_negatives`` as training runs it without options (one core: one small
  image per kernel call);
* ``threads2`` — the same visits on a pool of 2 threads in this process;
* ``dask1`` / ``dask2`` — tasks on a local Dask cluster of 1 / 2 worker processes.

Each mode runs twice: the first (cold) run decodes the JPEGs and loads the compiled kernels in
every worker, the second (warm) run is what every later stage of a training sees; the figure is
the warm one. Throughput is windows rejected per second; ratios are against ``inprocess``. All
modes must mine the identical negatives (``same_negatives``).

Feature precomputation (``precompute`` of one stage's uint8 matrix: 19x19 Haar features on
CBCL faces) in-process with 2 threads against blocks on the 2 Dask workers; the matrices must be
equal.

``dask_same_model``: a small cascade (3 LBP stages on scikit-image's faces and pictures) trained
in-process and on the 2-worker cluster must be identical.

The machine has 2 cores shared with other work: 2 workers can at best double the in-process
figure, and only when nothing else runs. Last line: ``RESULT {json}``. ``--quick``: 60 images,
8 stages.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _cli import description

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from vjboost._parallel import SerialExecutor, ThreadExecutor, make_executor  # noqa: E402
from vjboost.cascade import load_model  # noqa: E402
from vjboost.cascade.negatives import ImageCache, MiningParams, mine_negatives  # noqa: E402
from vjboost.cascade.trainer import CascadeTrainer, stages_digest  # noqa: E402

SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared")) / "data"


def small_training_set(folder: Path) -> tuple[np.ndarray, list[str]]:
    """100 LFW faces at 12x12 (and their mirror images), 8 scikit-image pictures as PNG."""
    import skimage.data as d

    imgs = (d.lfw_subset()[:100] * 255).round().astype(np.uint8)
    faces = np.stack([cv2.resize(im, (12, 12), interpolation=cv2.INTER_AREA) for im in imgs])
    folder.mkdir(parents=True, exist_ok=True)
    bgs = []
    for name in ("camera", "coins", "moon", "page", "text", "brick", "grass", "clock"):
        im = getattr(d, name)()
        im = cv2.resize(im, (im.shape[1] // 3, im.shape[0] // 3), interpolation=cv2.INTER_AREA)
        cv2.imwrite(str(folder / f"{name}.png"), im)
        bgs.append(str(folder / f"{name}.png"))
    return np.concatenate([faces, faces[:, :, ::-1]]), bgs


def train_small(faces, bgs, executor) -> str:
    tr = CascadeTrainer(window_shape=(12, 12), features="lbp", num_stages=3, num_pos=150,
                        num_neg=300, min_hit_rate=0.98, max_false_alarm=0.5, seed=1,
                        max_weak_count=20)
    tr.fit(faces, bgs, executor=executor)
    return stages_digest(tr.stages_)


def same_model(tmp: Path, executor=None) -> bool:
    """Whether the small cascade of :func:`train_small` trained in-process and on a 2-worker
    Dask cluster (``executor``, or a local one started here) is the same cascade."""
    faces, bgs = small_training_set(Path(tmp) / "small")
    ref = train_small(faces, bgs, None)
    if executor is not None:
        return ref == train_small(faces, bgs, executor)
    with make_executor(workers=2) as ex:
        return ref == train_small(faces, bgs, ex)


def mine(model, bgs, executor, cache) -> tuple[float, object]:
    params = MiningParams(model.window_shape, max_passes=1)
    t = time.perf_counter()
    res = mine_negatives(model, bgs, 10**9, params=params, seed=0, cache=cache,
                         executor=None if isinstance(executor, SerialExecutor) else executor)
    return time.perf_counter() - t, res


def precompute_times(executors: dict, n_windows: int, n_features: int) -> dict:
    """Seconds of one stage's feature precomputation (19x19 Haar, CBCL faces) per executor,
    after a warm-up, and whether every matrix equals the in-process one."""
    from vjboost.boost.binning import precompute
    from vjboost.cascade.trainer import make_pool

    faces = np.load(SHARED / "faces" / "cbcl_train.npz")["images"][:n_windows]
    pool = make_pool("haar", (19, 19))
    ids = np.linspace(0, pool.n_features - 1, min(n_features, pool.n_features)).astype(int)
    out, ref = {}, None
    for name, ex in executors.items():
        kw = dict(feature_ids=ids, edge_sample_size=1024, seed=0, threads=2,
                  executor=None if isinstance(ex, SerialExecutor) else ex)
        precompute(pool, faces[:64], "uint8", **{**kw, "feature_ids": ids[:512]})
        t = time.perf_counter()
        m = precompute(pool, faces, "uint8", **kw)
        out[name] = time.perf_counter() - t
        ref = m.matrix if ref is None else ref
        out[name + "_same"] = bool(np.array_equal(ref, m.matrix))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--images", type=int, default=None, help="background images (default 400)")
    ap.add_argument("--stages", type=int, default=None, help="cascade stages (default 12)")
    ap.add_argument("--tmp", default="runs/bench_dask", help="scratch folder")
    a = ap.parse_args()
    n_img = a.images or (60 if a.quick else 400)
    n_st = a.stages or (8 if a.quick else 12)
    bgs = sorted(str(p) for p in (SHARED / "negatives").glob("*.jpg"))[:n_img]
    if not bgs:
        sys.exit(f"no background images in {SHARED / 'negatives'}")
    model = load_model("vjboost:frontalface_haar").truncated(n_st)
    print(f"mining one pass over {len(bgs)} images with the {n_st}-stage frontal-face cascade")
    rows, ref, started, pre = {}, None, {}, {}
    for mode in ("inprocess", "threads2", "dask1", "dask2"):
        t0 = time.perf_counter()
        ex = (SerialExecutor() if mode == "inprocess" else ThreadExecutor(2)
              if mode == "threads2" else make_executor(workers=int(mode[-1])))
        started[mode] = time.perf_counter() - t0
        with ex:
            cache = ImageCache()
            cold, _ = mine(model, bgs, ex, cache)
            warm, res = mine(model, bgs, ex, cache)
            if mode in ("inprocess", "dask2"):
                pre.update(precompute_times({mode: ex}, 500 if a.quick else 2000,
                                            8000 if a.quick else 64000))
            if mode == "dask2":
                same_cascade = same_model(Path(a.tmp), ex)
        rejected = res.n_scanned - res.n_accepted
        same = ref is None or (np.array_equal(ref.windows, res.windows)
                               and ref.n_scanned == res.n_scanned)
        ref = ref or res
        rows[mode] = {"cold_s": round(cold, 2), "warm_s": round(warm, 2),
                      "rejected_per_s": round(rejected / warm), "same": bool(same),
                      "startup_s": round(started[mode], 1)}
        print(f"  {mode:9s} startup {started[mode]:5.1f} s  cold {cold:6.2f} s  warm "
              f"{warm:6.2f} s  {rejected / warm / 1e6:6.2f} M windows rejected/s  "
              f"same negatives: {same}")
    base = rows["inprocess"]["rejected_per_s"]
    ratios = {f"{m}_vs_inprocess": round(rows[m]["rejected_per_s"] / base, 2)
              for m in ("threads2", "dask1", "dask2")}
    ratios["dask2_vs_dask1"] = round(rows["dask2"]["rejected_per_s"]
                                     / rows["dask1"]["rejected_per_s"], 2)
    print("ratios (windows rejected per second):",
          ", ".join(f"{k} {v}" for k, v in ratios.items()))
    pre_ratio = round(pre["inprocess"] / pre["dask2"], 2)
    print(f"feature precomputation ({'8,000' if a.quick else 'all 63,960'} Haar features x "
          f"{500 if a.quick else 2000} windows, uint8): in-process (2 threads) "
          f"{pre['inprocess']:.2f} s, 2 Dask workers {pre['dask2']:.2f} s, speed ratio "
          f"{pre_ratio}, same matrix: {pre['dask2_same']}")
    print(f"dask_same_model: {same_cascade}")
    result = {"images": len(bgs), "stages": n_st, "windows_scanned": int(ref.n_scanned),
              "windows_accepted": int(ref.n_accepted), "modes": rows, **ratios,
              "same_negatives": all(r["same"] for r in rows.values()),
              "precompute_inprocess_s": round(pre["inprocess"], 2),
              "precompute_dask2_s": round(pre["dask2"], 2),
              "precompute_dask2_vs_inprocess": pre_ratio,
              "precompute_same": pre["dask2_same"],
              "dask_same_model": bool(same_cascade), "quick": bool(a.quick)}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
