"""Ranking rounds of a face cascade on the validation views: raw windows cached once, ranking
settings scored over them.

A ranking round (docs/ablation.md, rounds 11 to 25 and 28) compares settings that act after
the scan on the same raw windows of one cascade: the verifier (``--mirror``: reading each
detection and its mirror), the weight of its verdict, and the share of a detection lying
inside a better one that drops it. ``cache`` scans the three
validation views of ``tools/face_data.py`` (``--views`` adds the crowd and people views)
once and writes the windows to a folder. The scan covers every grid window at scale factor
1.1, behind the detector's default σ gate (OpenCV's 10), as the rounds were scored. ``score``
then groups the windows at minNeighbors 1, ranks the groups by the verified score (the margin
rescored by the verifier) and drops those inside better ones. It reads the rounds' score: the
mean over the cached views of the verified@1 curve's mean detection rate at the benchmark's
six false-positive budgets, counted at CMU-MIT's density (``train_face.scaled_budgets``).

::

    python tools/rank_rounds.py --data ../data/faces_ctx cache vjboost:frontalface \\
        --out runs/rank/ff17
    python tools/rank_rounds.py --data ../data/faces_ctx score runs/rank/ff17
    python tools/rank_rounds.py --data ../data/faces_ctx score runs/rank/ff17 --share 0.5
    python tools/rank_rounds.py --data ../data/faces_ctx score runs/rank/ff17 \\
        --refit part_per_face=10

``MODEL:K`` caches the cascade's first ``K`` stages. ``--refit KEY=VALUE`` fits the verifier
again, as ``train_face.py --ship`` fits it (``train_face.declare_verifier``), with the recipe's
options (``train_face.VERIFIER``) overridden. Without it, the model's declared verifier is used.
``cache --quick`` takes every tenth image of each view (under a minute), and ``score`` reads
what its cache holds. Each command ends with one ``RESULT {json}`` line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_peers as bp  # noqa: E402
import train_face as tf  # noqa: E402
from _cli import description  # noqa: E402

from vjboost._io import OutputError, atomic_open, atomic_write  # noqa: E402
from vjboost.cascade.detector import check_suppress_inside  # noqa: E402

#: the three validation views of the rounds (tools/face_data.py): clean, scanned, side-lit and
#: turned; ``cache --views`` may add the crowd, people and heads views (``det_crowd``,
#: ``det_people``, ``det_heads``)
VIEWS = ("det", "det_scan", "det_vary")
#: the σ gate the rounds' windows were scanned behind: the detector's default (OpenCV's)
SCAN_MIN_STD = 10.0
#: the grouping threshold of the ranked curve (the model's declared operating score)
MIN_NEIGHBORS = 1
MANIFEST = "manifest.json"


class RoundError(Exception):
    """A bad argument or cache folder, reported as one line."""


def _model(spec: str):
    """The cascade of ``MODEL`` or ``MODEL:K`` (its first K stages) and its window."""
    try:
        return tf.load_spec(spec)
    except ValueError as e:
        raise RoundError(str(e)) from None
    except OSError as e:
        raise RoundError(f"{spec}: {e}") from None


def _views(data: Path, quick: bool, view: str):
    """``train_face.load_validation`` of one view, or a one-line error naming what is missing."""
    try:
        return tf.load_validation(data, quick, view)
    except ValueError as e:
        raise RoundError(str(e)) from None


def cache(spec: str, out: Path, data: Path, *, quick: bool = False,
          threads: int | None = None, views: tuple[str, ...] = VIEWS) -> dict:
    """Scan the validation ``views`` (default the rounds' three) with ``spec`` and write its
    raw windows to ``out``.

    Each view is one ``<view>.npz``: ``boxes`` (N, 4) int32 and ``scores`` (N,) float64 of
    every image's windows in turn, ``offsets`` (n_images + 1,) int64 where each image's
    windows start, and ``paths``. ``manifest.json`` is written last, so a folder holding
    it is complete. ``out`` must not hold a cache already.
    """
    from vjboost.cascade import CascadeDetector

    model, window = _model(spec)
    bad = [v for v in views if v not in tf.SPLITS]
    if bad or not views:
        raise RoundError(f"--views: expected some of {', '.join(tf.SPLITS)}, got "
                         f"{','.join(bad) or 'none'}")
    if (out / MANIFEST).exists():
        raise RoundError(f"{out}: already holds a cache (give a new folder)")
    out.mkdir(parents=True, exist_ok=True)
    det = CascadeDetector(model, scale_factor=bp.SCALE_FACTOR, min_neighbors=0,
                          grouping="none", min_size=window, threads=threads,
                          coarse_to_fine=None, min_std=SCAN_MIN_STD)
    done = {}
    for view in views:
        paths, images, _ = _views(data, quick, view)
        t0 = time.perf_counter()
        raw = [det.raw_windows(g) for g in images]
        secs = time.perf_counter() - t0
        counts = np.array([len(b) for b, _ in raw], np.int64)
        boxes = (np.concatenate([b for b, _ in raw]) if len(raw) else np.zeros((0, 4)))
        scores = (np.concatenate([s for _, s in raw]) if len(raw) else np.zeros(0))
        offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)

        with atomic_open(out / f"{view}.npz") as f:
            np.savez(f, boxes=boxes.astype(np.int32), scores=scores.astype(np.float64),
                     offsets=offsets, paths=np.array(paths, dtype=str))
        done[view] = {"images": len(paths), "windows": int(offsets[-1]),
                      "seconds": round(secs, 1)}
    entry = {"kind": "cache", "model": spec, "stages": model.n_stages, "quick": bool(quick),
             "data": str(data), "scan": {"scale_factor": bp.SCALE_FACTOR,
                                         "min_std": SCAN_MIN_STD, "coarse_to_fine": None},
             "views": done}
    atomic_write(out / MANIFEST, json.dumps(entry, indent=1))
    return entry


def load_cache(folder: Path, view: str, paths) -> list[tuple[np.ndarray, np.ndarray]]:
    """The cached raw windows of ``view``, one ``(boxes, scores)`` per image of ``paths``
    (which must be the images the cache was made of, in order)."""
    z = np.load(folder / f"{view}.npz")
    if z["paths"].tolist() != list(paths):
        raise RoundError(f"{folder}: its {view} images are not the validation set's (was the "
                         "data folder or --quick different?)")
    b, s, o = z["boxes"], z["scores"], z["offsets"]
    return [(b[o[i]:o[i + 1]], s[o[i]:o[i + 1]]) for i in range(len(paths))]


def _manifest(folder: Path) -> dict:
    try:
        return json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        raise RoundError(f"{folder}: not a complete cache (no readable {MANIFEST}; run "
                         "cache first)") from None


def _share(value: str | None, model) -> float | None:
    """``--share``: a share in (0, 1], ``off``, or None (what the model declares)."""
    if value is None:
        return bp.declared_suppression(model)
    if value == "off":
        return None
    try:
        share = check_suppress_inside(float(value), "--share")
    except ValueError:
        share = None
    if share is None:  # 0 is the detector's "off"; here off is spelled out
        raise RoundError(f"--share: expected a share in (0, 1] or off, got {value!r}")
    return share


def score(folder: Path, data: Path, *, weight: float | None = None, share: str | None = None,
          refit: dict | None = None, recipe: str = "frontalface",
          mirror: bool | None = None) -> dict:
    """The rounds' score of one ranking setting over the cached windows of ``folder``.

    Parameters
    ----------
    folder : Path
        A :func:`cache` folder (its manifest names the cascade).
    data : Path
        ``tools/face_data.py``'s output (the views, and the training set for ``refit``).
    weight : float, optional
        The verdict's weight (default: the verifier's own).
    share : str, optional
        ``suppress_inside``: a share in (0, 1] or ``"off"`` (default: what the model declares).
    refit : dict, optional
        Fit the verifier again with these :data:`train_face.VERIFIER` options overridden
        (default: the model's declared verifier).
    recipe : str
        Whose training faces a refit uses.
    mirror : bool, optional
        Whether the verifier reads each detection and its mirror (default: the verifier's
        own setting).

    Returns
    -------
    dict
        ``views``: each cached view's rates at its budgets and their ``mean``; ``mean``: the
        mean of the views' means.
    """
    man = _manifest(folder)
    model, _ = _model(man["model"])
    if refit is not None:
        try:
            ver = tf.declare_verifier(model, recipe, data, options=refit)
        except (TypeError, ValueError) as e:
            raise RoundError(f"--refit: {e}") from None
    elif "verifier" in model.params:
        ver = bp.model_verifier(model)
    else:
        raise RoundError(f"{man['model']}: declares no verifier (give --refit)")
    if weight is not None:
        if not (math.isfinite(weight) and weight >= 0):
            raise RoundError(f"--weight: expected a finite number >= 0, got {weight}")
        ver.weight = float(weight)
    if mirror is not None:
        ver.mirror = bool(mirror)
    suppress = _share(share, model)
    views = {}
    for view in man["views"]:
        paths, images, gt = _views(data, man["quick"], view)
        raw = load_cache(folder, view, paths)
        mp = sum(g.size for g in images) / 1e6
        budgets = tf.scaled_budgets(mp, tf.CMU_MIT_MP)
        key = f"verified@{MIN_NEIGHBORS}"
        pts = bp.score_curves(raw, images, gt, paths, ranks=(), min_neighbors=(MIN_NEIGHBORS,),
                              last_threshold=model.stages[-1].threshold, verifier=ver,
                              suppress=suppress)[key]["points"]
        rates, mean = tf.budget_mean(pts, budgets)
        views[view] = {"rates": rates, "mean": round(mean, 5),
                       "curve_end": round(float(max(pts["detection_rate"], default=0.0)), 4)}
    return {"kind": "score", "cache": str(folder), "model": man["model"],
            "stages": man["stages"], "quick": man["quick"], "weight": ver.weight,
            "mirror": ver.mirror,
            "share": suppress, "refit": refit, "views": views,
            "mean": round(float(np.mean([v["mean"] for v in views.values()])), 5)}


def _refit_options(pairs: list[str]) -> dict | None:
    if not pairs:
        return None
    out = {}
    for kv in pairs:
        k, sep, v = kv.partition("=")
        if not sep or not k.strip():
            raise RoundError(f"--refit: expected KEY=VALUE, got {kv!r}")
        out[k.strip()] = tf._value(v.strip())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--data", type=Path, default=tf.DATA, help="tools/face_data.py's output")
    ap.add_argument("--quick", action="store_true",
                    help="cache every tenth image of each view (score reads the cache's choice)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cache", help="scan the views once and write the raw windows")
    c.add_argument("model", help="vjboost:NAME, a model file, or either with :K (first K stages)")
    c.add_argument("--out", type=Path, required=True, help="a new folder")
    c.add_argument("--threads", type=int, default=None)
    c.add_argument("--views", default=",".join(VIEWS),
                   help=f"comma-separated views (default the rounds' three; of {tf.SPLITS})")
    s = sub.add_parser("score", help="the rounds' score of a ranking setting on a cache")
    s.add_argument("cache", type=Path)
    s.add_argument("--weight", type=float, default=None,
                   help="the verdict's weight (default: the verifier's)")
    s.add_argument("--share", default=None,
                   help="drop detections this share inside a better one: (0, 1] or off "
                        "(default: the model's declared share)")
    s.add_argument("--refit", action="append", default=[], metavar="KEY=VALUE",
                   help="fit the verifier again with this train_face.VERIFIER option (repeatable)")
    s.add_argument("--recipe", choices=sorted(tf.VERIFIER), default="frontalface")
    s.add_argument("--mirror", action="store_true",
                   help="the verifier reads each detection and its mirror (the mean log-odds)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "cache":
            entry = cache(args.model, args.out, args.data, quick=args.quick,
                          threads=args.threads,
                          views=tuple(v for v in args.views.split(",") if v))
            for view, v in entry["views"].items():
                print(f"{view:<9s} {v['images']:>4d} images {v['windows']:>8d} windows "
                      f"{v['seconds']:>7.1f} s")
        else:
            entry = score(args.cache, args.data, weight=args.weight, share=args.share,
                          refit=_refit_options(args.refit), recipe=args.recipe,
                          mirror=True if args.mirror else None)
            for view, v in entry["views"].items():
                print(f"{view:<9s} " + " ".join(f"@{b} {r:.4f}" for b, r in v["rates"].items())
                      + f"   mean {v['mean']:.4f}   curve end {v['curve_end']:.4f}")
            print(f"mean of the {len(entry['views'])} views: {entry['mean']:.5f}")
    except (RoundError, OutputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("RESULT " + json.dumps(entry))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
