"""The face models' recipes: train them with ``vjtrain`` and choose them on the validation split.

Sub-commands:

* ``train NAME`` runs ``vjtrain`` with the recipe ``NAME`` of :data:`RECIPES` (the exact
  command of a shipped model; ``--set key=value`` overrides one setting for an experiment) on the
  data ``tools/face_data.py`` built in ``--data`` (default ``../data/faces``: the training
  positives of every source and the training backgrounds; never CMU-MIT), under ``nice``, and
  records its wall time and peak memory (the child's ``ru_maxrss``). ``--ship`` copies the model
  to ``vjboost/models/NAME.json`` (and ``.xml`` when the cascade is OpenCV-exportable, and its
  report) with its declared operating score (``params["operating_score"]``), coarse-to-fine
  scan (``params["coarse_to_fine"]``) and σ gate (``params["min_std"]``).
* ``validate MODEL...`` runs models on the validation detection set (``val/det``: held-out
  NRC-IIT frames, synthetic scenes of held-out faces in held-out backgrounds, face-free held-out
  backgrounds) and prints, at the false-positive budgets of ``tools/bench_peers.py``, the
  detection rate of the ``min_neighbors`` curve and of every operating score
  (``bench_peers.OPERATING_SCORES``) at grouping thresholds 1–3, with the detection time (one
  thread, ms per megapixel). This is where configurations and operating scores are chosen.
  ``--split det_scan`` uses the same images degraded as scans, ``--split det_vary`` the same
  images with faces lit from one side and turned in plane, ``--split det_crowd`` held-out
  faces standing in rows as in group photographs, ``--split det_people`` ``val/det`` with
  face-free images of people's bodies, ``--split det_heads`` the held-out persons' turned and
  tilted heads (``tools/face_data.py``). Each
  model's declared (else best) curve is also read on each kind of image — whole NRC-IIT frames
  and scenes with pasted faces — at its share of the budgets (:func:`image_parts`), since the
  two kinds can rank vjboost and dlib in opposite orders.
* ``robust MODEL...``: the share of the held-out face windows of each source a cascade accepts,
  clean and degraded as scans (:func:`robustness`).
* ``hard MODEL...``: each model's recall on the held-out NRC-IIT frames that only dlib finds a
  face in (turned, tilted heads), beside those both teachers agree on
  (:func:`dlib_only_recall`).
* ``declare NAME RUN --to FILE`` writes training run ``RUN``'s model as ``--ship`` would ship
  it under ``NAME`` (:func:`declared_model`: the shipped stages, the verifier fitted on the
  recipe's training data, the declared scan, gate and suppression), for validating a candidate
  exactly as it would be shipped.

Every run appends one JSON line to ``--log`` (default ``runs/face_log.jsonl``): the command,
seconds, peak memory, or the validation figures. The last line printed is ``RESULT {json}``;
``--quick`` trains 3 stages on a tenth of the data / validates on 60 images (under a minute
each, apart from numba's first compilation).

Examples::

    python tools/train_face.py train frontalface --out runs/frontalface --ship
    python tools/train_face.py train frontalface --set sampler=tasting_1q --out runs/t1
    python tools/train_face.py validate runs/t1/model.json vjboost:frontalface --peers
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import bench_peers as bp  # noqa: E402
import face_data as fd  # noqa: E402
from _cli import description  # noqa: E402

DATA = fd.DEFAULT_DATA
#: the area of the benchmark's image set (bench_peers: CMU-MIT, 107 images), whose
#: false-positive budgets ``validate --budget-mp`` reproduces per megapixel
CMU_MIT_MP = 25.64
LOG = REPO / "runs" / "face_log.jsonl"
GROUPING = (1, 2, 3)

#: shared by every face recipe: the positives of ``tools/face_data.py`` (32×32 windows, target box
#: at (4, 4, 24, 24)), mirrored, with jittered copies (rotation °, scale, shift, gamma)
COMMON = {
    "window": "20x20", "pos-crop": "0.125,0.125,0.75,0.75", "mirror": True,
    "jitter": 3, "jitter-range": "12,0.1,0.06,0.5", "shuffle-positives": True,
    "mining-scale-factor": 1.1, "seed": 0,
}
#: the stages each recipe's shipped model keeps of those a run trains (the recipe trains exactly
#: them; a round's run may train more): with a verifier ranking the detections, the fewest whose
#: validation score is within a quarter of a point of the best (a later stage that adds almost
#: nothing on validation still costs faces that it was not trained on;
#: vjboost/models/README.md)
SHIPPED_STAGES = {"frontalface": 17}
#: the recipes of the shipped face models (``vjtrain`` options; True = a flag)
RECIPES: dict[str, dict] = {
    # the default model: Haar and gradient channels in one pool, depth-2 trees whose features
    # family-stratified Laminating chooses (about a quarter of the nodes are channels), on the
    # WebFaces and NRC-IIT windows with one side-lit copy of each, 16,000 positives per stage
    # (docs/ablation.md, "The default face model"); a 24×24 window that keeps a sixth of the
    # face box of context on every side (the middle 32 px of face_data's 36-px windows, whose
    # face box is (6, 6, 24, 24)), reporting the face box inside it ("Context around the face");
    # the video frames include those one teacher vouches for (DATA_BUILDS), and of the recipe's
    # two trainings (seeds 0 and 1) the one with the higher six-view score ships (round 55)
    "frontalface": dict(COMMON, **{
        "seed": 1,
        "window": "24x24", "pos-crop": "0.0556,0.0556,0.8889,0.8889",
        "object-box": "0.125,0.125,0.75,0.75",
        "sources": "webfaces,nrc", "relight": 1,
        "features": "haar,channels", "haar-mode": "ALL", "sampler": "stratified_laminating",
        "weak-learner": "tree", "max-depth": 2, "num-pos": 16000, "num-neg": 10000,
        # the stages it ships: a run's first stages do not depend on how many follow, and the
        # two more that the rounds trained cost 7 minutes
        "stages": SHIPPED_STAGES["frontalface"], "min-hit-rate": 0.999, "max-false-alarm": 0.5,
    }),
    # the OpenCV-exportable one: Haar only, same windows; the CBCL windows, about a quarter of
    # whose detection window is edge-replicated pixels, lowered the detection rate that degraded
    # faces reach on both validation views; one side-lit copy of every window (side_light)
    # keeps faces lit from one side (docs/ablation.md)
    "frontalface_haar": dict(COMMON, **{
        "sources": "webfaces,nrc", "relight": 1,
        "features": "haar", "haar-mode": "ALL", "sampler": "laminating",
        "weak-learner": "tree", "max-depth": 2, "num-pos": 10000, "num-neg": 10000,
        "stages": 19, "min-hit-rate": 0.999, "max-false-alarm": 0.5,
    }),
}
#: the ``tools/face_data.py`` build each recipe's windows and framing are written for: window
#: side, target box side / window side, and the pasted scenes' feather (None: the whole margin)
DATA_BUILDS = {"frontalface": {"size": 36, "box_frac": 0.6667, "feather": 0.05,
                               "nrc_extra": ["low_score", "dlib_only"]},
               "frontalface_haar": {"size": 32, "box_frac": 0.75, "feather": None}}


def check_data(recipe: str, data: Path) -> None:
    """Exit with a one-line message unless ``data`` was built as ``recipe`` needs."""
    want = DATA_BUILDS.get(recipe)
    if want is None:
        return
    try:
        got = json.loads((data / "manifest.json").read_text())["params"]
    except (OSError, ValueError, KeyError):
        sys.exit(f"train_face: {data}/manifest.json not found or unreadable: run "
                 "tools/face_data.py first")
    if any(got.get(k) != v for k, v in want.items()):
        opts = " ".join(f"--{k.replace('_', '-')} "
                        + (",".join(v) if isinstance(v, list) else str(v))
                        for k, v in want.items() if v is not None)
        sys.exit(f"train_face: recipe {recipe} needs the windows of tools/face_data.py {opts}; "
                 f"{data} was built with " + ", ".join(f"{k}={got.get(k)}" for k in want))


#: the operating score each recipe's model declares (chosen on validation; a ``min_score`` is
#: the model's default threshold, what a detector left at ``score="auto"`` applies: round 35)
OPERATING = {"frontalface": {"min_neighbors": 1, "rank": "verified", "min_score": 3.72},
             "frontalface_haar": {"min_neighbors": 1, "rank": "margin"}}
#: the coarse-to-fine scan each recipe's model declares (``params["coarse_to_fine"]``): the
#: fewest coarse stages that meet the detection-time target (vjboost/models/README.md)
COARSE_TO_FINE = {"frontalface": 5}
#: the σ gate each recipe's model declares (``params["min_std"]``, grey levels): the gate with the
#: highest validation mean, a tie within 0.05 points going to the higher gate (OpenCV's 10
#: turned away low-contrast faces of scanned photographs; vjboost/models/README.md)
MIN_STD = {"frontalface": 8.0}
#: the share of a detection's area inside a better-scored one that drops it, each recipe's model
#: declares (``params["suppress_inside"]``; faces do not nest, and many of the best-ranked false
#: alarms on the views were parts of faces inside them; vjboost/models/README.md)
SUPPRESS_INSIDE = {"frontalface": 0.3}
#: the recipes whose model declares a detection verifier (``vjboost.cascade.verifier``), fitted
#: on the recipe's training faces and backgrounds when it is shipped or ``verify`` is run
VERIFIED = ("frontalface",)
#: each verified recipe's verifier: ``declare_verifier`` options over
#: ``vjboost.cascade.verifier_fit.DEFAULT_VERIFIER`` (which is this recipe's: Felzenszwalb's HOG of
#: the detection crop, round 36, with its cells and size, two linear components read on the
#: crop and its mirror, round 43, the verdict's weight), and among its negatives all the
#: false alarms on the training backgrounds of the cascade cut two stages short of the shipped
#: ones (``hard_stages``: its false alarms and the near misses around them; ``hard_per_image``
#: only caps them) and three per training face and factor of the whole cascade's false alarms on
#: the faces themselves (``part_per_face``: parts of a face found as a smaller face); chosen on
#: the validation views (vjboost/models/README.md, *Its verifier and its stages, chosen again*,
#: *The false alarms of a shorter cut*, *Parts of faces inside faces*, *Its description*,
#: *Two components*)
VERIFIER = {"frontalface": {"hard_stages": SHIPPED_STAGES["frontalface"] - 2,
                            "part_per_face": 3}}


def declare_verifier(model, recipe: str, data: Path, *, seed: int = 0,
                     options: dict | None = None):
    """Fit a face cascade's detection verifier — its recipe's training faces (the sources it
    trains on, jittered) against the windows its first stages accept on the training
    backgrounds and the whole cascade's false alarms there (``vjboost.cascade.verifier.
    fit_verifier`` with the recipe's :data:`VERIFIER` options) — and declare it in the model's
    params with the verified operating score; returns the verifier.

    The negatives are mined behind the detector's default σ gate, as the verifier was chosen:
    a gate the model declares is lifted for the fit and declared again after it, so that a
    shipped model's verifier is fitted again the same way (``verify``). ``options`` override
    the recipe's (``tools/rank_rounds.py --refit``); besides :func:`fit_verifier`'s, ``people``
    (bodies of people among the backgrounds) and ``relight`` (side-lit copies of every face,
    :func:`side_light`, as the recipe's cascade trains on)."""
    from vjboost.cascade.verifier_fit import declare_verifier as declare
    from vjboost.io import read_bg_list

    pos = np.load(data / "train" / "positives.npz")
    keep = np.isin(pos["source"], RECIPES[recipe]["sources"].split(","))
    opts = {**VERIFIER.get(recipe, {}), **(options or {})}
    backgrounds = list(read_bg_list(data / "backgrounds_train.txt"))
    if opts.pop("people", False):  # bodies of people, tiled as val/det_people tiles its own
        bodies = np.load(data / "train" / "people.npz")["images"]
        backgrounds += fd.people_tiles(bodies, np.random.default_rng([seed, 13]))
    faces = pos["images"][keep]
    n_lit = int(opts.pop("relight", 0) or 0)
    if n_lit:  # side-lit copies, as the recipe's cascade trains on (prepare_positives)
        faces = np.concatenate([faces, side_light(faces, n_lit, seed=seed + 1)])
    gate = model.params.pop("min_std", None)
    try:  # a declared default threshold (``min_score``) stays: the recipe's, not the verifier's
        ver = declare(model, faces, backgrounds, box=tuple(pos["box"]), seed=seed, **opts)
    finally:
        if gate is not None:
            model.params["min_std"] = gate
    model.params["verifier"] = model.params.pop("verifier")  # after the gate, as shipped
    return ver


def verify(spec: str, recipe: str, out: Path, data: Path) -> dict:
    """Fit the verifier of ``spec`` (as ``--ship`` does: :func:`declare_verifier`) and write
    the model with it declared to ``out``."""
    from vjboost.cascade import load_model, save_model

    model = load_model(spec)
    t0 = time.perf_counter()
    ver = declare_verifier(model, recipe, data)
    save_model(model, out)
    return {"kind": "verify", "model": spec, "recipe": recipe, "out": str(out),
            "positives": ver.n_positives_, "negatives": ver.n_negatives_,
            "hard_negatives": ver.n_hard_negatives_,
            "part_negatives": ver.n_part_negatives_,
            "seconds": round(time.perf_counter() - t0, 1)}


def _value(v: str):
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


def vjtrain_args(config: dict) -> list[str]:
    """``vjtrain`` options of a recipe (``True``: a flag; ``False``/``None``: left out)."""
    out = []
    for k, v in config.items():
        if v is True:
            out.append(f"--{k}")
        elif v is not False and v is not None:
            out += [f"--{k}", str(v)]
    return out


def log(entry: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


# ------------------------------------------------------------------------------------------------
# train
# ------------------------------------------------------------------------------------------------


#: recipe keys the tool handles itself (how the positives file is prepared), not vjtrain options
PREP_KEYS = ("sources", "degrade", "relight")


def degrade(images: np.ndarray, n: int, *, seed: int) -> np.ndarray:
    """``n`` degraded copies of every window, as a low-quality scan shows a face; each of these
    is applied to a copy with probability one half, drawn independently per copy (seeded):
    resolution lost (resampled down to 50–90 % of the window's size and back up), Gaussian blur
    (σ 0.4–1 px), contrast reduced to 50–90 % around the window's mean, Gaussian noise (σ 1–4 grey
    levels) and JPEG compression at quality 30–80. The ranges keep a face recognisable to the eye
    at the training window's size (20×20).

    Returns (n × len(images), S, S) uint8, copy-major.
    """
    import cv2

    rng = np.random.default_rng(seed)
    s = images.shape[1]
    out = []
    for _ in range(n):
        k = len(images)
        on = rng.random((5, k)) < 0.5
        size = np.where(on[0], np.rint(s * rng.uniform(0.5, 0.9, k)), s).astype(int)
        sig = np.where(on[1], rng.uniform(0.4, 1.0, k), 0.0)
        c = np.where(on[2], rng.uniform(0.5, 0.9, k), 1.0)
        noise = np.where(on[3], rng.uniform(1.0, 4.0, k), 0.0)
        quality = np.where(on[4], rng.integers(30, 81, k), 0)
        seeds = rng.integers(0, 2**31, k)
        copies = np.empty_like(images)
        for i, g in enumerate(images):
            r = np.random.default_rng(seeds[i])
            if size[i] < s:  # resolution lost, as a coarse scan or a small face upscaled
                g = cv2.resize(cv2.resize(g, (size[i], size[i]), interpolation=cv2.INTER_AREA),
                               (s, s), interpolation=cv2.INTER_LINEAR)
            if sig[i] > 0:
                g = cv2.GaussianBlur(g, (0, 0), sig[i])
            f = g.astype(np.float32)
            f = f.mean() + c[i] * (f - f.mean()) + r.normal(0.0, noise[i], f.shape)
            g = np.clip(np.rint(f), 0, 255).astype(np.uint8)
            if quality[i]:
                ok, buf = cv2.imencode(".jpg", g, [cv2.IMWRITE_JPEG_QUALITY, int(quality[i])])
                g = cv2.imdecode(buf, cv2.IMREAD_GRAYSCALE)
            copies[i] = g
        out.append(copies)
    return np.concatenate(out) if out else images[:0]


def side_light(images: np.ndarray, n: int, *, seed: int) -> np.ndarray:
    """``n`` copies of every window lit from one side: each multiplied by a planar field
    ``exp(a u)``, where ``u`` runs from −1 to 1 across the window along a random direction and
    ``a`` is 0.2–0.7 (one edge up to 2× brighter than the middle, the other down to 0.5×; bright
    pixels saturate). The detector's variance normalisation removes a change of gain and offset,
    not a gradient across the face.

    Returns (n × len(images), S, S) uint8, copy-major.

    >>> w = np.full((2, 32, 32), 100, np.uint8)
    >>> lit = side_light(w, 1, seed=0)
    >>> lit.shape, bool((lit[0].max() - lit[0].min()) > 20)
    ((2, 32, 32), True)
    """
    rng = np.random.default_rng(seed)
    k, s = len(images), images.shape[1]
    yy, xx = (np.mgrid[0:s, 0:s].astype(np.float32) - (s - 1) / 2) / ((s - 1) / 2)
    out = []
    for _ in range(n):
        ang, a = rng.uniform(0, 2 * np.pi, k), rng.uniform(0.2, 0.7, k)
        u = (np.cos(ang)[:, None, None] * xx + np.sin(ang)[:, None, None] * yy) / np.sqrt(2)
        field = np.exp(a[:, None, None] * u)
        out.append(np.clip(np.rint(images * field), 0, 255).astype(np.uint8))
    return np.concatenate(out) if out else images[:0]


def prepare_positives(pos: Path, config: dict, folder: Path) -> Path:
    """The positives file of a recipe: ``sources`` (comma list of webfaces, cbcl, nrc; default
    all), ``degrade`` (copies per window, :func:`degrade`) and ``relight`` (copies per window,
    :func:`side_light`) applied to ``tools/face_data.py``'s training windows; the file itself
    when none is set."""
    sources, n_deg = config.get("sources"), int(config.get("degrade") or 0)
    n_lit = int(config.get("relight") or 0)
    if not sources and not n_deg and not n_lit:
        return pos
    with np.load(pos) as z:
        images, src = z["images"], z["source"]
    if sources:
        images = images[np.isin(src, [s.strip() for s in str(sources).split(",")])]
    seed = int(config.get("seed", 0))
    clean = images
    if n_deg:
        images = np.concatenate([images, degrade(clean, n_deg, seed=seed)])
    if n_lit:
        images = np.concatenate([images, side_light(clean, n_lit, seed=seed + 1)])
    # shuffled here too, so that a stage's positives mix clean and degraded windows
    images = images[np.random.default_rng(seed).permutation(len(images))]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "positives.npz"
    np.savez(path, images=images)
    return path


def train(name: str, out: Path, *, overrides: dict, data: Path, quick: bool, nice: int,
          ship: bool, resume: bool = False) -> dict:
    """Run ``vjtrain`` with recipe ``name`` (and ``overrides``) into ``out``; ``resume``
    continues the checkpoint in ``out`` (e.g. with a larger ``stages``: the cascade is the one a
    run from scratch with that many stages trains)."""
    start = time.perf_counter()
    if not quick:
        check_data(name, data)
    config = dict(RECIPES[name], **overrides)
    pos, bg = data / "train" / "positives.npz", data / "backgrounds_train.txt"
    pos = prepare_positives(pos, config, out.with_name(out.name + "_data"))
    config_vj = {k: v for k, v in config.items() if k not in PREP_KEYS}
    if quick:
        out.mkdir(parents=True, exist_ok=True)
        pos, bg = _quick_data(pos, bg, out)
        config_vj.update({"stages": 3, "num-pos": 1000, "num-neg": 1000, "jitter": 1})
    vjbin = Path(sys.executable).parent / "vjtrain"
    cmd = [str(vjbin), str(pos), str(bg), "-o", str(out), *vjtrain_args(config_vj), "-q"]
    if resume:
        cmd.append("--resume")
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    print(" ".join(cmd), flush=True)
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(REPO / ".numba_cache"))
    t0 = time.perf_counter()
    rc = subprocess.call(cmd, env=env)
    wall = time.perf_counter() - t0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = kids.ru_maxrss * 1024
    rep = _report(out)
    entry = {"kind": "train", "recipe": name, "out": str(out), "overrides": overrides,
             "config": config, "quick": quick, "resume": resume, "rc": rc, "wall_s": round(wall, 1),
             "cpu_s": round(kids.ru_utime + kids.ru_stime, 1),
             "peak_rss_gib": round(peak / 2**30, 2),
             "training_seconds": rep.get("training_seconds"),
             "n_stages": len(rep.get("stages", [])) or None,
             "stop_reason": rep.get("stop_reason")}
    if rc == 0 and ship:
        t1 = time.perf_counter()
        entry["shipped"] = ship_model(name, out, data)
        # the shipped model's verifier is fitted here: part of the recipe's time
        entry["ship_s"] = round(time.perf_counter() - t1, 1)
        entry["total_s"] = round(time.perf_counter() - start, 1)  # positives' copies too
        # this process's peak (the verifier's descriptors), beside vjtrain's ``peak_rss_gib``
        entry["ship_peak_rss_gib"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    return entry


def _report(out: Path) -> dict:
    try:
        return json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        return {}


def _quick_data(pos: Path, bg: Path, out: Path) -> tuple[Path, Path]:
    """A tenth of the positives and 60 backgrounds, in ``out`` (for ``--quick``)."""
    with np.load(pos) as z:
        arrays = {k: z[k][::10] if z[k].ndim and len(z[k]) == len(z["images"]) else z[k]
                  for k in z.files}
    qp = out / "quick_positives.npz"
    np.savez(qp, **arrays)
    qb = out / "quick_bg.txt"
    qb.write_text("\n".join(bg.read_text().split()[::40][:60]) + "\n")
    return qp, qb


def declared_model(name: str, out: Path, data: Path = DATA):
    """The model of training run ``out`` as recipe ``name`` ships it: cut to its shipped
    stages, with its declared operating score, verifier, coarse-to-fine scan, σ gate and
    suppression of detections inside better ones (what a round's candidate is validated as)."""
    from vjboost.cascade import load_model

    check_data(name, data)
    model = load_model(out / "model.json")
    if name in SHIPPED_STAGES:
        model = model.truncated(SHIPPED_STAGES[name])
    model.params["operating_score"] = dict(OPERATING.get(name, bp.DEFAULT_OPERATING))
    if name in VERIFIED:
        declare_verifier(model, name, data)
    if name in COARSE_TO_FINE:
        model.params["coarse_to_fine"] = COARSE_TO_FINE[name]
    if name in MIN_STD:
        # the verifier's negatives are mined behind the detector's default gate whatever the
        # model declares (declare_verifier)
        model.params["min_std"] = MIN_STD[name]
    if name in SUPPRESS_INSIDE:
        model.params["suppress_inside"] = SUPPRESS_INSIDE[name]
    return model


def ship_model(name: str, out: Path, data: Path = DATA) -> list[str]:
    """Copy a trained model into the shipped models' folder under ``name``, as
    :func:`declared_model` declares it, with its report and OpenCV XML twin."""
    from vjboost.cascade import save_model
    from vjboost.cascade.shipped import MODELS_DIR

    t0 = time.perf_counter()
    model = declared_model(name, out, data)
    declare_s = time.perf_counter() - t0
    save_model(model, MODELS_DIR / f"{name}.json")
    shipped = [MODELS_DIR / f"{name}.json"]
    for src, suffix in (("cascade.xml", ".xml"), ("report.json", ".report.json")):
        if (out / src).is_file():
            if src == "report.json" and name in VERIFIED:
                # the verifier is part of the model's training: its fit's wall time in the
                # report's record of it, as ``vjtrain --verifier`` writes it (tools/bench_peers.py
                # counts it with vjtrain's)
                rep = json.loads((out / src).read_text())
                rep["verifier"] = {**rep.get("verifier", {}), "seconds": round(declare_s, 1)}
                (MODELS_DIR / f"{name}{suffix}").write_text(json.dumps(rep, indent=1) + "\n")
            else:
                shutil.copyfile(out / src, MODELS_DIR / f"{name}{suffix}")
            shipped.append(MODELS_DIR / f"{name}{suffix}")
        else:
            # a cascade OpenCV cannot run has no XML twin: a previous model's must not stay
            # behind under its name (vjboost:NAME.xml would resolve to it)
            (MODELS_DIR / f"{name}{suffix}").unlink(missing_ok=True)
    return [str(p.relative_to(REPO)) for p in shipped]


# ------------------------------------------------------------------------------------------------
# validate
# ------------------------------------------------------------------------------------------------


#: the validation detection sets of ``tools/face_data.py`` (folders of ``val/``)
SPLITS = ("det", "det_scan", "det_vary", "det_crowd", "det_people", "det_heads")
#: the five views rounds 25 to 54 were read on, which the tools read by default (the heads view,
#: added in round 55, only by name, so that every earlier table reproduces)
FIVE_VIEWS = SPLITS[:5]


def load_validation(data: Path, quick: bool, split: str = "det"):
    """Paths, grey images and boxes of a validation detection set (:data:`SPLITS`): ``val/det``,
    its copies ``val/det_scan`` (scanned) and ``val/det_vary`` (pose and lighting),
    ``val/det_crowd`` (faces in rows), ``val/det_people`` (``val/det`` and people's bodies) or
    ``val/det_heads`` (the held-out frames the teacher vouches for with less confidence: turned
    and tilted heads; ``tools/face_data.py``)."""
    from vjboost.io import read_annotations, read_bg_list, read_image

    det = data / "val" / split
    if not (det / "images.txt").is_file():
        raise ValueError(f"--data {data}: no validation view val/{split}/images.txt (build it "
                         "with tools/face_data.py)")
    paths = read_bg_list(det / "images.txt")
    if quick:  # every 10th image: NRC frames, scenes and face-free images alike
        paths = paths[::10]
    images = [read_image(p) for p in paths]
    ann = read_annotations(det / "boxes.csv")
    gt = {p: np.asarray(ann.get(p, np.zeros((0, 4))), np.float64).reshape(-1, 4) for p in paths}
    return paths, images, gt


def scaled_budgets(val_mp: float, target_mp: float | None) -> tuple[int, ...]:
    """The benchmark's false-positive budgets (``bench_peers.BUDGETS``, counted on its image
    set of ``target_mp`` megapixels) at the same density per megapixel on a validation set of
    ``val_mp``; ``target_mp`` None keeps them as counts.

    >>> scaled_budgets(80.1, 25.64)
    (6, 16, 31, 62, 94, 156)
    """
    if target_mp is None:
        return tuple(bp.BUDGETS)
    if not target_mp > 0:
        raise ValueError(f"--budget-mp: expected a positive area in megapixels, got {target_mp}")
    out = tuple(max(1, int(round(b * val_mp / target_mp))) for b in bp.BUDGETS)
    if out[-1] > MAX_CURVE_FP:
        raise ValueError(f"--budget-mp {target_mp}: the largest budget would be {out[-1]} false "
                         f"positives; the curves are kept up to {MAX_CURVE_FP}")
    return out


#: the score curves' envelope is kept up to this many false positives (bench_peers.curve_points)
MAX_CURVE_FP = 200


def rates_at(false_positives, detection_rate, budgets) -> dict[str, float]:
    """Best detection rate with at most ``b`` false positives, for each budget ``b``, from a
    curve's points (as ``DetectionEvaluation.detection_rate_at``)."""
    fp, dr = np.asarray(false_positives), np.asarray(detection_rate, np.float64)
    return {str(b): round(float(dr[fp <= b].max()), 4) if (fp <= b).any() else 0.0
            for b in budgets}


def budget_mean(points: dict, budgets) -> tuple[dict[str, float], float]:
    """A curve's rates at ``budgets`` (:func:`rates_at` of its envelope ``points``) and their
    mean: the score every round reads on a view."""
    rates = rates_at(points["false_positives"], points["detection_rate"], budgets)
    return rates, float(np.mean(list(rates.values())))


def image_parts(paths) -> dict[str, np.ndarray]:
    """Indices of a validation set's images by kind: the folder each image is in
    (``tools/face_data.py`` writes whole NRC-IIT frames to ``nrc/`` and the scenes with pasted
    faces to ``scenes/``).

    >>> {k: v.tolist() for k, v in image_parts(["a/nrc/1.png", "a/scenes/2.png",
    ...                                          "a/nrc/3.png"]).items()}
    {'nrc': [0, 2], 'scenes': [1]}
    """
    kinds = np.array([Path(p).parent.name for p in paths])
    return {k: np.flatnonzero(kinds == k) for k in sorted(set(kinds.tolist()))}


def part_budgets(budgets, part_mp: float, mp: float,
                 budget_mp: float | None) -> tuple[int, ...]:
    """The false-positive budgets of a part of ``part_mp`` megapixels of a validation set of
    ``mp``: at the benchmark's density with ``budget_mp`` (:func:`scaled_budgets`), else the
    set's counts scaled to the part's area.

    >>> part_budgets(None, 10.0, 80.0, 25.64), part_budgets((2, 50), 10.0, 80.0, None)
    ((1, 2, 4, 8, 12, 20), (1, 6))
    """
    if budget_mp is not None:
        return scaled_budgets(part_mp, budget_mp)
    return tuple(max(1, int(round(b * part_mp / mp))) for b in budgets)


def _by_part(paths, images, gt, budgets, budget_mp, rates_of) -> dict | None:
    """``rates_of(indices, budgets)`` for each kind of image that holds faces
    (:func:`image_parts`), with its counts; None when the set holds one such kind."""
    parts = {k: idx for k, idx in image_parts(paths).items()
             if any(len(gt[paths[i]]) for i in idx)}  # a face-free kind has no rate to read
    if len(parts) < 2:
        return None
    mp = sum(g.size for g in images) / 1e6
    out = {}
    for kind, idx in parts.items():
        part_mp = sum(images[i].size for i in idx) / 1e6
        b = part_budgets(budgets or bp.BUDGETS, part_mp, mp, budget_mp)
        out[kind] = {"images": len(idx), "faces": int(sum(len(gt[paths[i]]) for i in idx)),
                     "megapixels": round(part_mp, 2), "rates": rates_of(idx, b)}
    return out


def validate_one(spec: str, paths, images, gt, *, kind: str = "vjboost",
                 budgets: tuple[int, ...] | None = None,
                 budget_mp: float | None = None) -> dict:
    """Validation curves and detection time (one thread) of one cascade; ``spec`` may end in
    ``:K`` for the cascade's first ``K`` stages (what training with ``stages=K`` gives), and
    ``budgets`` replaces the benchmark's false-positive counts (:func:`scaled_budgets` of
    ``budget_mp``). ``parts`` holds the declared curve (else the best) on each kind of image
    (:func:`image_parts`): real frames and pasted scenes can disagree."""
    model, window = load_spec(spec)
    det = bp.vj_detector(model, window, threads=1, min_neighbors=0)
    det.raw_windows(images[0])  # compile before timing
    t0 = time.perf_counter()
    raw = [det.raw_windows(g) for g in images]
    secs = time.perf_counter() - t0
    mp = sum(g.size for g in images) / 1e6
    suppress = bp.declared_suppression(model)
    neigh, _ = bp.cascade_curves(raw, images, gt, paths, 1, suppress=suppress)
    verifier = bp.model_verifier(model) if "verifier" in model.params else None
    detections = bp.score_detections(raw, images, paths, min_neighbors=GROUPING,
                                     last_threshold=model.stages[-1].threshold,
                                     verifier=verifier, suppress=suppress)
    scores = bp.curves_of(detections, gt)
    declared = (bp.operating_score(model) if "operating_score" in model.params else None)
    rates = {k: v["rates"] for k, v in scores.items()}
    if budgets is not None and tuple(budgets) != tuple(bp.BUDGETS):
        pts = neigh["points"]
        neigh = dict(neigh, rates=rates_at(pts["false_positives"], pts["detection_rate"],
                                           budgets))
        rates = {k: rates_at(v["points"]["false_positives"], v["points"]["detection_rate"],
                             budgets) for k, v in scores.items()}
    declared_key = (f"{declared['rank']}@{declared['min_neighbors']}" if declared is not None
                    else None)
    ops = (operating_points(scores[declared_key]["points"], budgets or bp.BUDGETS, mp)
           if declared_key in scores else None)
    res = {"model": spec, "kind": kind, "window": list(window), "stages": model.n_stages,
           "ms_per_mp_1t": round(1000 * secs / mp, 1),
           "min_neighbors": neigh["rates"], "neighbors_points": neigh["points"],
           "scores": rates, "declared": declared, "operating_points": ops}
    # the curve read on each kind of image: the declared one, else the best
    key = declared_key if declared_key in scores else best_score(res)[0]

    def rates_of(idx, b):
        sub = [paths[i] for i in idx]
        if key == "min_neighbors":
            pts, _ = bp.cascade_curves([raw[i] for i in idx], [images[i] for i in idx],
                                       {p: gt[p] for p in sub}, sub, 1, suppress=suppress)
            pts = pts["points"]
        else:  # the kind's own detections, ranked (and verified) once above
            part = {key: {p: detections[key][p] for p in sub}}
            pts = bp.curves_of(part, {p: gt[p] for p in sub})[key]["points"]
        return rates_at(pts["false_positives"], pts["detection_rate"], b)

    parts = _by_part(paths, images, gt, budgets, budget_mp, rates_of)
    if parts is not None:
        res["parts"] = {"curve": key, **parts}
    return res


def operating_points(points: dict, budgets, megapixels: float) -> list[dict]:
    """The detector setting of each budget on a score curve: ``min_score`` (the detector's
    option) of the point with the best rate at no more than ``b`` false positives, with its
    rate, false positives and false positives per megapixel of the validation images.

    >>> pts = {"false_positives": [0, 3, 9], "detection_rate": [0.5, 0.8, 0.9],
    ...        "min_score": [7.0, 2.5, 0.25]}
    >>> [p["min_score"] for p in operating_points(pts, (1, 5, 50), 10.0)]
    [7.0, 2.5, 0.25]
    """
    fp = np.asarray(points["false_positives"])
    out = []
    for b in budgets:
        ok = np.flatnonzero(fp <= b)
        if not ok.size:
            continue
        i = int(ok[-1])  # the envelope is non-decreasing: its last point within the budget
        out.append({"budget": int(b), "min_score": round(float(points["min_score"][i]), 4),
                    "detection_rate": points["detection_rate"][i],
                    "false_positives": int(fp[i]),
                    "fp_per_mp": round(float(fp[i]) / megapixels, 3)})
    return out


def _split_spec(spec: str) -> tuple[str, int | None]:
    """``(MODEL, K)`` of a ``MODEL:K`` spec (the first K stages), else ``(spec, None)``."""
    head, sep, tail = spec.rpartition(":")
    return (head, int(tail)) if sep and head and tail.isdigit() else (spec, None)


def load_spec(spec: str):
    """The cascade of a ``MODEL`` or ``MODEL:K`` spec (its first ``K`` stages) and its window
    ``(w, h)``; ValueError when it has fewer than ``K`` stages."""
    path, k = _split_spec(spec)
    model, window, _ = bp.vj_load(path)
    if k is not None:
        if not 0 < k <= model.n_stages:
            raise ValueError(f"{spec}: the cascade has {model.n_stages} stages")
        model = model.truncated(k)
    return model, window


def _prefix(spec: str) -> int | None:
    """``K`` of a ``MODEL:K`` spec, else None."""
    return _split_spec(spec)[1]


def validate_dlib(paths, images, gt, *, upsample: int = 2,
                  budgets: tuple[int, ...] | None = None,
                  budget_mp: float | None = None) -> dict:
    """dlib's HOG frontal-face detector on the validation set (score swept; one thread), also
    on each kind of image (``parts``, as :func:`validate_one`)."""
    import dlib

    hog = dlib.get_frontal_face_detector()
    bp.dlib_run(hog, images[0], upsample)
    t0 = time.perf_counter()
    runs = [bp.dlib_run(hog, g, upsample) for g in images]
    secs = time.perf_counter() - t0
    mp = sum(g.size for g in images) / 1e6
    ev = bp.dlib_evaluation(paths, runs, gt)
    res = {"model": f"dlib HOG up{upsample}", "kind": "dlib", "window": None, "stages": None,
           "ms_per_mp_1t": round(1000 * secs / mp, 1),
           "min_neighbors": {str(b): round(ev.detection_rate_at(b), 4)
                             for b in (budgets or bp.BUDGETS)},
           "scores": {}, "declared": None}

    def rates_of(idx, b):
        sub = [paths[i] for i in idx]
        e = bp.dlib_evaluation(sub, [runs[i] for i in idx], {p: gt[p] for p in sub})
        return {str(x): round(e.detection_rate_at(x), 4) for x in b}

    parts = _by_part(paths, images, gt, budgets, budget_mp, rates_of)
    if parts is not None:
        res["parts"] = {"curve": "score", **parts}
    return res


def best_score(res: dict) -> tuple[str, dict]:
    """The operating score with the largest mean rate over the budgets (validation only)."""
    cands = dict(res["scores"], min_neighbors=res["min_neighbors"])
    key = max(cands, key=lambda k: np.mean(list(cands[k].values())))
    return key, cands[key]


def print_validation(results: list[dict]) -> None:
    budgets = list(results[0]["min_neighbors"]) if results else [str(b) for b in bp.BUDGETS]
    cols = " ".join(f"{'@' + b:>6s}" for b in budgets)
    print(f"\n{'model':<34s} {'curve':<14s} {cols}  {'mean':>6s} {'ms/MP':>7s}")
    for r in results:
        first = "score" if r["kind"] == "dlib" else "min_neighbors"
        rows = [(first, r["min_neighbors"])] + sorted(r["scores"].items())
        for i, (k, rt) in enumerate(rows):
            v = [rt[b] for b in budgets]
            tm = f"{r['ms_per_mp_1t']:7.0f}" if i == 0 else ""
            name, n_first = _split_spec(r["model"])
            if name.endswith("model.json"):  # runs/NAME/model.json[:K] is shown as NAME[:K]
                name = Path(name).parent.name
            if n_first is not None:
                name += f":{n_first}"
            print(f"{name[-34:] if i == 0 else '':<34s} {k:<14s} "
                  + " ".join(f"{x:6.3f}" for x in v) + f"  {np.mean(v):6.3f} {tm}")
        k, _ = best_score(r)
        print(f"{'':<34s} best curve on validation: {k}")
        if r.get("parts"):
            parts = {n: p for n, p in r["parts"].items() if n != "curve"}
            print(f"{'':<34s} {r['parts']['curve']} by image kind (mean of its budgets): "
                  + ", ".join(f"{n} ({p['images']} images, {p['faces']} faces) "
                              f"{np.mean(list(p['rates'].values())):.3f}"
                              for n, p in parts.items()))
        if r.get("operating_points"):
            d = r["declared"]
            print(f"{'':<34s} declared {d['rank']}@{d['min_neighbors']}: --min-score per budget "
                  + ", ".join(f"@{p['budget']} {p['min_score']:g} ({p['detection_rate']:.3f}, "
                              f"{p['fp_per_mp']:g} FP/MP)" for p in r["operating_points"]))


def dlib_only_recall(specs: list[str], data: Path, *, quick: bool = False,
                     min_score: float = 0.5) -> dict:
    """Recall of each model on the held-out NRC-IIT persons' frames that only dlib finds a face
    in: frames (every ``frame_step``-th of the build) where dlib's HOG detector fires at
    ``min_score`` or above and OpenCV's alt2 cascade does not — the faces an OpenCV-style
    cascade misses and dlib does not (turned, tilted, looking up or down), which the validation
    views, whose real faces both teachers agreed on, do not hold. The face box is dlib's,
    framed by the build's relation (``manifest.json``). Each model scans each frame three ways:
    its raw windows (minNeighbors 0), its groups at minNeighbors 1 ranked as declared, and its
    default operating point (nothing set); a frame counts when one detection overlaps the face
    at IoU ≥ 0.3. The frames where both teachers agree are counted alike, for contrast.
    ``quick``: the first 40 frames of each clip. Never CMU-MIT.

    Returns ``{"frames": {"dlib_only": n, "agreed": n}, "found": {model: {kind: {way: rate}}}}``.
    """
    from vjboost.boxes import iou_matrix
    from vjboost.cascade import CascadeDetector, load_model
    from vjboost.io import iter_frames

    models = {spec: load_model(spec) for spec in specs}  # a bad one before the minute of dlib
    man = json.loads((data / "manifest.json").read_text())
    rel = np.asarray(man["framing"]["rulers"]["dlib"]["target_rel_ruler"])
    step = int(man["params"]["frame_step"])
    rulers = fd.Rulers()
    frames: dict[str, list] = {"dlib_only": [], "agreed": []}
    for clip in sorted((fd.SHARED / "data" / "video").glob("*.avi")):
        if fd.person_of(clip.name) not in man["nrc"]["val_persons"]:
            continue
        for k, (_, fr) in enumerate(iter_frames(str(clip), every=step, gray=True)):
            if quick and k >= 40:
                break
            d, o = fd.teacher_reads(rulers, fr)
            if not len(d) or d[:, 4].max() < min_score:
                continue
            box = fd.apply_relation(rel, d[np.argmax(d[:, 4]), :4])
            kind = "agreed" if len(o) else "dlib_only"
            frames[kind].append((fr, box))
    found = {}
    for spec, model in models.items():
        ways = {"raw": CascadeDetector(model, min_neighbors=0, min_score=None),
                "groups": CascadeDetector(model, min_neighbors=1, score="model",
                                          min_score=None),
                "defaults": CascadeDetector(model)}
        per = {}
        for kind, items in frames.items():
            hits = dict.fromkeys(ways, 0)
            for fr, box in items:
                for way, det in ways.items():
                    b = det.detect(fr).boxes
                    hits[way] += bool(len(b) and iou_matrix(b.astype(float), box[None]).max()
                                      >= 0.3)
            per[kind] = {w: round(h / max(len(items), 1), 3) for w, h in hits.items()}
        found[spec] = per
    return {"frames": {k: len(v) for k, v in frames.items()}, "found": found}


def robustness(specs: list[str], data: Path, *, seed: int = 0, quick: bool = False) -> dict:
    """Share of the held-out validation face windows (``val/{webfaces,nrc,cbcl}.npz``) that each
    cascade accepts as one window (every stage passed): clean, degraded as a scan
    (``face_data.scan_like`` on the 32×32 window), lit from one side (``face_data.relight``)
    and turned in plane by 15° either way (about the target box's centre, edges replicated),
    each seeded per window: how much of its recall a cascade keeps on low-quality images, side
    lighting and tilted heads, without any detection set. A cascade sees the target box, or the
    window around it that its object box declares (``params["object_box"]``: the context it was
    trained with; edges replicated where that reaches past the stored windows).
    """
    import cv2

    from vjboost.cascade.model import object_box
    from vjboost.cascade.runner import cascade_accepts

    def crop(stack: np.ndarray, box: np.ndarray, model) -> np.ndarray:
        """Each window's region the cascade reads, resized to its window (height, width)."""
        fx, fy, fw, fh = object_box(model) or (0.0, 0.0, 1.0, 1.0)
        w, h = box[2] / fw, box[3] / fh
        x, y = (int(round(v)) for v in (box[0] - fx * w, box[1] - fy * h))
        w, h = int(round(w)), int(round(h))
        pad = max(0, -x, -y, x + w - stack.shape[2], y + h - stack.shape[1])
        shape = model.window_shape
        out = []
        for g in stack:
            g = cv2.copyMakeBorder(g, pad, pad, pad, pad, cv2.BORDER_REPLICATE) if pad else g
            out.append(cv2.resize(g[y + pad:y + pad + h, x + pad:x + pad + w], shape[::-1],
                                  interpolation=cv2.INTER_AREA))
        return np.stack(out)

    sets = {}
    for src in fd.SOURCES:
        with np.load(data / "val" / f"{src}.npz") as z:
            w = z["images"][::10] if quick else z["images"]
            box = z["box"]  # (x, y, w, h) of the target box in the windows
        centre = (float(box[0] + box[2] / 2), float(box[1] + box[3] / 2))
        turned = [fd.turn(x, centre, 15.0 * (1 - 2 * (i % 2))) for i, x in enumerate(w)]
        sets[src] = ({"clean": w,
                      "scan": np.stack([fd.scan_like(x, np.random.default_rng([seed, 9, i]))
                                        for i, x in enumerate(w)]),
                      "relit": np.stack([fd.relight(x, box, np.random.default_rng([seed, 10, i]))
                                         for i, x in enumerate(w)]),
                      "turned": np.stack(turned)}, box)
    out = {}
    for spec in specs:
        model, _, _ = bp.vj_load(spec)
        out[spec] = {src: {kind: round(float(cascade_accepts(
                               model, crop(stack, box, model))[0].mean()), 3)
                           for kind, stack in stacks.items()} | {"n": len(stacks["clean"])}
                     for src, (stacks, box) in sets.items()}
    return out


# ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--data", type=Path, default=DATA, help="tools/face_data.py's output")
    ap.add_argument("--log", type=Path, default=LOG, help="JSON-lines log of every run")
    ap.add_argument("--quick", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="run vjtrain with a recipe")
    t.add_argument("recipe", choices=sorted(RECIPES))
    t.add_argument("--out", type=Path, default=None, help="output folder (runs/<recipe>)")
    t.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a vjtrain option of the recipe (repeatable)")
    t.add_argument("--nice", type=int, default=5)
    t.add_argument("--ship", action="store_true", help="copy the model into vjboost/models/")
    t.add_argument("--resume", action="store_true",
                   help="continue the checkpoint in --out (to add stages: a larger stages=)")
    v = sub.add_parser("validate", help="curves on the validation detection set")
    v.add_argument("models", nargs="+")
    v.add_argument("--peers", action="store_true", help="also OpenCV's default and alt2")
    v.add_argument("--dlib", action="store_true",
                   help="also dlib's HOG detector (upsample 2; its score swept)")
    v.add_argument("--label", default=None, help="name of the configuration in the log")
    v.add_argument("--split", default="det", choices=SPLITS,
                   help="val/det, val/det_scan (the same images degraded as scans), "
                        "val/det_vary (faces lit from one side, images turned in plane) or "
                        "val/det_crowd (faces standing in rows, as in group photographs) or "
                        "val/det_people (val/det and face-free images of people's bodies) or "
                        "val/det_heads (turned and tilted heads of the held-out persons)")
    v.add_argument("--budget-mp", type=float, default=None, metavar="MP",
                   help="count the false-positive budgets at the density of an image set of "
                        f"MP megapixels (CMU-MIT, bench_peers' set: {CMU_MIT_MP}) instead of "
                        "as counts on the validation set")
    f = sub.add_parser("verify", help="fit a cascade's detection verifier and write the model "
                                      "with it declared")
    f.add_argument("model")
    f.add_argument("--recipe", choices=sorted(RECIPES), default="frontalface",
                   help="whose training faces (sources) to use")
    f.add_argument("--out", type=Path, required=True, help="model file to write")
    d = sub.add_parser("declare", help="write a training run's model as its recipe ships it "
                                       "(a round's candidate)")
    d.add_argument("recipe", choices=sorted(RECIPES))
    d.add_argument("run", type=Path, help="the training run's folder (its model.json)")
    d.add_argument("--to", type=Path, required=True, help="model file to write")
    r = sub.add_parser("robust", help="share of held-out face windows accepted, clean and "
                                      "degraded as scans")
    r.add_argument("models", nargs="+")
    h = sub.add_parser("hard", help="recall on held-out video frames only dlib finds a face in")
    h.add_argument("models", nargs="+")
    args = ap.parse_args(argv)

    if args.cmd == "hard":
        try:
            res = dlib_only_recall(args.models, args.data, quick=args.quick)
        except (OSError, ValueError, KeyError) as e:  # no build there, a model that will not load
            print(f"error: hard: {e}", file=sys.stderr)
            return 2
        print(f"frames: {res['frames']['dlib_only']} only dlib finds a face in, "
              f"{res['frames']['agreed']} both teachers agree on")
        for spec, per in res["found"].items():
            for kind, rates in per.items():
                print(f"{spec[-40:]:<40s} {kind:<10s} " + "  ".join(
                    f"{w} {r:.3f}" for w, r in rates.items()))
        log({"kind": "hard", "quick": args.quick, **res}, args.log)
        print("RESULT " + json.dumps({"quick": args.quick, **res}))
        return 0

    if args.cmd == "robust":
        res = robustness(args.models, args.data, quick=args.quick)
        kinds = ("clean", "scan", "relit", "turned")
        print(f"{'model':<40s} " + " ".join(f"{s + ' ' + '/'.join(kinds):>32s}"
                                            for s in fd.SOURCES))
        for spec, per in res.items():
            print(f"{spec[-40:]:<40s} " + " ".join(
                f"{'/'.join(f'{per[s][k]:.3f}' for k in kinds):>32s}" for s in per))
        log({"kind": "robust", "quick": args.quick, "results": res}, args.log)
        print("RESULT " + json.dumps({"quick": args.quick, "accepted": res}))
        return 0
    if args.cmd == "declare":
        from vjboost.cascade import save_model

        if not (args.run / "model.json").is_file():
            print(f"error: {args.run}: no model.json (a vjtrain output folder)", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        try:
            model = declared_model(args.recipe, args.run, args.data)
            save_model(model, args.to)
        except (ValueError, OSError) as e:  # over the memory budget, an unwritable --to
            print(f"error: {e}", file=sys.stderr)
            return 2
        entry = {"kind": "declare", "recipe": args.recipe, "run": str(args.run),
                 "out": str(args.to), "stages": model.n_stages,
                 "params": sorted(model.params), "seconds": round(time.perf_counter() - t0, 1),
                 "peak_rss_gib": round(
                     resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}
        log(entry, args.log)
        print("RESULT " + json.dumps(entry))
        return 0
    if args.cmd == "verify":
        try:
            entry = verify(args.model, args.recipe, args.out, args.data)
        except (ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        log(entry, args.log)
        print("RESULT " + json.dumps(entry))
        return 0
    if args.cmd == "train":
        overrides = {}
        for kv in args.set:
            k, _, val = kv.partition("=")
            overrides[k.strip().lstrip("-")] = _value(val.strip())
        out = args.out or REPO / "runs" / (args.recipe + ("_quick" if args.quick else ""))
        entry = train(args.recipe, out, overrides=overrides, data=args.data, quick=args.quick,
                      nice=args.nice, ship=args.ship, resume=args.resume)
        log(entry, args.log)
        print("RESULT " + json.dumps(entry))
        return 0 if entry["rc"] == 0 else 1

    try:
        paths, images, gt = load_validation(args.data, args.quick, args.split)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    n_faces = int(sum(len(v) for v in gt.values()))
    mp = sum(g.size for g in images) / 1e6
    try:
        budgets = scaled_budgets(mp, args.budget_mp)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"validation: {len(images)} images, {n_faces} faces, {mp:.1f} MP; IoU >= {bp.IOU}"
          + (f"; budgets {list(budgets)} (the density of {args.budget_mp} MP)"
             if args.budget_mp else ""))
    specs = [(m, "vjboost") for m in args.models]
    if args.peers:
        specs += [(s, "opencv") for s in bp.OPENCV.values()]
    results = [validate_one(s, paths, images, gt, kind=k, budgets=budgets,
                            budget_mp=args.budget_mp) for s, k in specs]
    if args.dlib:
        results.append(validate_dlib(paths, images, gt, upsample=2, budgets=budgets,
                                     budget_mp=args.budget_mp))
    for r in results:  # logged first: the figures outlive any printing problem
        # the detector's own kind is logged as "detector" ("kind" names the log entry)
        log({**{k: v for k, v in r.items() if k not in ("neighbors_points", "kind")},
             "kind": "validate", "detector": r["kind"], "label": args.label,
             "quick": args.quick, "split": args.split, "budget_mp": args.budget_mp}, args.log)
    print_validation(results)
    summary = {"quick": args.quick, "split": args.split, "images": len(images), "faces": n_faces,
               "budgets": list(budgets), "budget_mp": args.budget_mp,
               "models": {r["model"]: {"min_neighbors": r["min_neighbors"],
                                       "best_curve": best_score(r)[0],
                                       "best_rates": best_score(r)[1],
                                       "ms_per_mp_1t": r["ms_per_mp_1t"],
                                       **({"parts": r["parts"]} if r.get("parts") else {})}
                          for r in results}}
    print("RESULT " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
