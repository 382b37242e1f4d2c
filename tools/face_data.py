"""Face training data: every face source of ../shared, framed alike, and a validation split.

Sources (``../shared/data`` only; CMU-MIT is never read):

* Caltech WebFaces crops (``faces/caltech_webfaces_36x36.npz``). The target box — the box
  convention of the shipped Haar cascade ``vjboost:frontalface_haar`` — is its
  ``--pos-crop 0.175,0.19,0.667,0.667`` of the 36×36 crop (``vjboost/models/README.md``,
  ``tools/face_framing.py``).
* MIT CBCL training faces (``faces/cbcl_train.npz``, label 1), 19×19 tight crops.
* NRC-IIT clips (``video/*.avi``), labelled by a teacher: dlib's HOG detector and OpenCV's alt2
  cascade must both find the face, confidently, at the same place; near-duplicate frames of a
  clip (correlated at ``--dup-corr`` with a frame kept before) are skipped. ``--nrc-extra``
  also keeps, for the training persons only, the frames where both agree but dlib's score is
  low (``low_score``) and those only dlib finds (``dlib_only``: turned and tilted heads, which
  alt2 misses); the held-out persons' frames, and so every validation view, stay the same.

One framing. Two rulers, dlib's detector and OpenCV's alt2, are run on upscaled, edge-padded
*training* crops (several upscale factors, so that the detectors' scale grids average out). On
the WebFaces crops we measure where the target box lies relative to each ruler's box; on CBCL
crops, where each ruler's box lies in the crop; composing the two gives the target box in CBCL
crop coordinates. For the video frames the teacher's own boxes are the rulers: each is mapped to
the target box and the two mapped boxes are averaged. Where the target box (or the window around
it) reaches past a source's crop, the missing pixels are replicated from the edge and the
replicated share is stored per window (``padded``).

Outputs in ``--out`` (outside the repository):

* ``train/{webfaces,cbcl,nrc}.npz``, ``val/{...}.npz`` and ``train/positives.npz`` (all sources):
  ``images`` (n, S, S) uint8 windows with the target box at ``box`` (pixels) and a margin around
  it, ``source``, ``group`` (near-duplicate cluster for the crops, person for the clips),
  ``index`` (crop index or frame number), ``padded``; train with ``--pos-crop`` from the
  manifest.
* The validation split is held out by group: about ``--val-frac`` of the WebFaces and CBCL
  groups, and whole NRC-IIT persons (``--val-persons``).
* ``val/det/``: a validation detection set — held-out NRC-IIT frames with teacher boxes, synthetic
  scenes (held-out faces pasted at 20–120 px into held-out background images, each window
  blended into the scene over ``--feather`` of its side at each border, by default over the
  whole margin around the face's box) and face-free
  held-out backgrounds; ``val/det/boxes.csv`` (``image,x,y,w,h``, target-box convention, read by
  ``vjeval``) and ``val/det/images.txt`` (every image, face-free ones included).
* ``val/det_scan/``: the same images and boxes as ``val/det``, each degraded as a photograph
  printed and scanned, or stored small, looks (:func:`scan_like`): resolution lost, a halftone
  screen, compressed contrast, grain, strong JPEG. Training never sees these operations in this
  form; a detector that holds its rate here holds it on old scanned test photographs too.
  ``--scan-only`` (re)writes it from an existing ``val/det``.
* ``val/det_vary/``: the same images with their faces varied in pose and lighting
  (:func:`vary_like`): each face lit from one side, each image turned in plane by 5–18°, boxes
  moved with their centres. Training's jitter turns faces by up to 12° and changes their gamma,
  but never lights one side of a face; a detector that holds its rate here is less tied to the
  evenly lit, upright crops it learned from. ``--vary-only`` (re)writes it.
* ``val/det_crowd/``: held-out faces standing in rows as in group photographs
  (:func:`crowd_scene`) on held-out backgrounds, with ``val/det``'s face-free images. The other
  views never let two pasted windows overlap, so no face there has another face in the context
  around it, and no two faces stand close. ``--crowd-only`` (re)writes it from an existing build.
* ``val/det_heads/``: the held-out persons' frames that the teacher does not vouch for
  confidently — both agree at a low dlib score, or only dlib finds the face (turned, tilted,
  looking down; :data:`HEADS`) — with the teacher's box, and ``val/det``'s face-free images. The
  other views' real faces are the frames both teachers agree on; this one holds the heads a
  cascade misses and dlib does not. ``--heads-only`` (re)writes it in an existing build.
* ``train/people.npz``, ``val/people.npz``: the bodies of the INRIA person crops (below the
  chin, and mirrored; split by photograph), negatives the face-free backgrounds lack.
  ``val/det_people/``: ``val/det`` and face-free images of the held-out bodies
  (:func:`people_tiles`). ``--people-only`` (re)writes both.
* ``backgrounds_train.txt`` / ``backgrounds_val.txt``: the background images left for mining
  and those held out (by blocks of consecutive file names, which are often near-duplicates).
* ``manifest.json``: parameters, seed, counts per source and split, the measured mappings, the
  teacher's agreement statistics, timings.

Everything is seeded and deterministic. The last line is ``RESULT {json}``; ``--quick`` builds a
small version (subsets of every source) in well under a minute.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))
#: where the tools read a build from unless given ``--data``: ``$VJBOOST_FACE_DATA``, else
#: ``data/faces`` beside the repository (next to ``../shared``: a build holds shared data, so it
#: never goes inside the repository)
DEFAULT_DATA = Path(os.environ.get("VJBOOST_FACE_DATA", REPO.parent / "data" / "faces"))


def require_build(data: Path, need: str | None = None) -> Path:
    """``data`` if it is a folder (holding ``need``, when given), else exit with one line
    saying how to build one (a tool's parts that read a build name any file missing in it).

    >>> require_build(Path("/nonexistent"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    SystemExit: ... no face data build at /nonexistent (no such folder); ...
    """
    data = Path(data)
    missing = ("no such folder" if not data.is_dir()
               else f"missing {need}" if need is not None and not (data / need).exists()
               else None)
    if missing is not None:
        raise SystemExit(f"{Path(sys.argv[0]).name}: no face data build at {data} ({missing}); "
                         f"build one with `python tools/face_data.py --out {data}` (--quick: a "
                         "small one in about a minute), or give --data or VJBOOST_FACE_DATA")
    return data

# The shipped model's box inside a 36x36 WebFaces crop, as fractions (vjboost/models/README.md).
WEBFACES_POS_CROP = (0.175, 0.19, 0.667, 0.667)
SOURCES = ("webfaces", "cbcl", "nrc")


# ------------------------------------------------------------------------------------------------
# boxes, mappings and windows
# ------------------------------------------------------------------------------------------------


def relation(target, ruler) -> np.ndarray:
    """Where ``target`` lies relative to ``ruler`` (both (..., 4) boxes ``x, y, w, h``).

    Returns ``((tx - rx) / rw, (ty - ry) / rh, tw / rw, th / rh)``: the target in units of the
    ruler's box, so that :func:`apply_relation` puts it back on any other ruler box.

    >>> relation([10, 20, 30, 30], [0, 0, 20, 20]).tolist()
    [0.5, 1.0, 1.5, 1.5]
    """
    t = np.asarray(target, np.float64)
    r = np.asarray(ruler, np.float64)
    return np.stack([(t[..., 0] - r[..., 0]) / r[..., 2], (t[..., 1] - r[..., 1]) / r[..., 3],
                     t[..., 2] / r[..., 2], t[..., 3] / r[..., 3]], axis=-1)


def apply_relation(rel, ruler) -> np.ndarray:
    """The box ``rel`` (from :func:`relation`) relative to ``ruler`` boxes (..., 4).

    >>> apply_relation([0.5, 1.0, 1.5, 1.5], [0, 0, 20, 20]).tolist()
    [10.0, 20.0, 30.0, 30.0]
    """
    q = np.asarray(rel, np.float64)
    r = np.asarray(ruler, np.float64)
    return np.stack([r[..., 0] + q[..., 0] * r[..., 2], r[..., 1] + q[..., 1] * r[..., 3],
                     q[..., 2] * r[..., 2], q[..., 3] * r[..., 3]], axis=-1)


def box_iou(a, b) -> float:
    """IoU of two ``(x, y, w, h)`` boxes (floats)."""
    ax, ay, aw, ah = (float(v) for v in a)
    bx, by, bw, bh = (float(v) for v in b)
    iw = max(0.0, min(ax + aw, bx + bw) - max(ax, bx))
    ih = max(0.0, min(ay + ah, by + bh) - max(ay, by))
    inter = iw * ih
    return inter / (aw * ah + bw * bh - inter)


def window_of(box, box_frac: float) -> np.ndarray:
    """The square window centred on ``box`` whose side is ``max(w, h) / box_frac``."""
    x, y, w, h = (float(v) for v in box)
    side = max(w, h) / box_frac
    return np.array([x + w / 2 - side / 2, y + h / 2 - side / 2, side, side])


def outside_share(rect, shape: tuple[int, int]) -> float:
    """Share of ``rect`` (x, y, w, h) lying outside an image of ``shape`` (h, w)."""
    x, y, w, h = (float(v) for v in rect)
    iw = max(0.0, min(x + w, shape[1]) - max(x, 0.0))
    ih = max(0.0, min(y + h, shape[0]) - max(y, 0.0))
    return 1.0 - iw * ih / (w * h)


def cut_window(img: np.ndarray, rect, size: int) -> np.ndarray:
    """Resample the square ``rect`` (x, y, side, side; float pixels) of ``img`` to ``size``².

    Bilinear, with pixels past the border replicated from the edge, and a Gaussian pre-blur when
    shrinking (anti-aliasing). Pixel ``i`` covers ``[i, i + 1)``: an integer-aligned rect of side
    ``size`` returns exactly that slice.

    >>> a = np.arange(64, dtype=np.uint8).reshape(8, 8)
    >>> bool((cut_window(a, (2, 3, 4, 4), 4) == a[3:7, 2:6]).all())
    True
    """
    x, y, side = float(rect[0]), float(rect[1]), float(rect[2])
    k = side / size  # source pixels per output pixel
    src = img
    if k > 1.0:
        src = cv2.GaussianBlur(img, (0, 0), sigmaX=0.45 * np.sqrt(k * k - 1.0))
    m = np.array([[k, 0.0, x - 0.5 + 0.5 * k], [0.0, k, y - 0.5 + 0.5 * k]])
    return cv2.warpAffine(src, m, (size, size), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_REPLICATE)


# ------------------------------------------------------------------------------------------------
# groups and splits
# ------------------------------------------------------------------------------------------------


def unit_rows(images: np.ndarray) -> np.ndarray:
    """Images (n, ...) as rows of zero mean and unit norm: dot products are correlations."""
    z = images.reshape(images.shape[0], -1).astype(np.float32)
    z -= z.mean(axis=1, keepdims=True)
    z /= np.linalg.norm(z, axis=1, keepdims=True) + 1e-6
    return z


def near_duplicate_groups(images: np.ndarray, min_corr: float) -> np.ndarray:
    """Cluster ids (0..k-1, in order of first appearance): images whose normalised correlation
    reaches ``min_corr`` are linked, clusters are the connected components.

    Parameters
    ----------
    images : ndarray of shape (n, h, w)
    min_corr : float

    Returns
    -------
    ndarray of int64, shape (n,)

    >>> a = np.random.default_rng(0).integers(0, 255, (3, 4, 4)).astype(np.uint8)
    >>> near_duplicate_groups(np.stack([a[0], a[1], a[0], a[2]]), 0.95).tolist()
    [0, 1, 0, 2]
    """
    n = images.shape[0]
    z = unit_rows(images)
    parent = np.arange(n)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for start in range(0, n, 2048):  # blocks keep the correlation matrix small
        c = z[start:start + 2048] @ z.T
        ii, jj = np.nonzero(c >= min_corr)
        for i, j in zip((ii + start).tolist(), jj.tolist(), strict=True):
            if i < j:
                ri, rj = find(i), find(j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([find(i) for i in range(n)])
    _, first, inv = np.unique(roots, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inv].astype(np.int64)


def split_groups(groups: np.ndarray, frac: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of the items held out: whole groups, in a seeded order, until at least
    ``frac`` of the items are held out.

    >>> g = np.array([0, 0, 1, 2, 2, 2, 3, 4])
    >>> m = split_groups(g, 0.25, np.random.default_rng(0))
    >>> set(g[m]).isdisjoint(g[~m]), int(m.sum()) >= 2
    (True, True)
    """
    ids = np.unique(groups)
    order = rng.permutation(ids)
    sizes = np.bincount(np.searchsorted(ids, groups), minlength=ids.size)[np.searchsorted(ids,
                                                                                           order)]
    need = frac * groups.size
    n_held = int(np.searchsorted(np.cumsum(sizes), need) + 1) if need > 0 else 0
    return np.isin(groups, order[:n_held])


# ------------------------------------------------------------------------------------------------
# rulers: dlib's HOG detector and OpenCV's alt2 cascade
# ------------------------------------------------------------------------------------------------


class Rulers:
    """dlib's HOG face detector and OpenCV's alt2 cascade, returning ``(x, y, w, h, score)``."""

    names = ("dlib", "alt2")

    def __init__(self) -> None:
        try:
            import dlib
        except ImportError:
            sys.exit("face_data: dlib is needed (pip install dlib-bin, in the dev extra)")
        self.hog = dlib.get_frontal_face_detector()
        xml = Path(cv2.data.haarcascades) / "haarcascade_frontalface_alt2.xml"
        self.alt2 = cv2.CascadeClassifier(str(xml))
        if self.alt2.empty():
            sys.exit(f"face_data: OpenCV could not load {xml}")

    def dlib(self, gray: np.ndarray, upsample: int, min_score: float = 0.0) -> np.ndarray:
        # dlib misreads a strided view's memory (tools/bench_peers.py, dlib_run)
        rects, scores, _ = self.hog.run(np.ascontiguousarray(gray), upsample, min_score)
        return np.array([[r.left(), r.top(), r.right() - r.left() + 1, r.bottom() - r.top() + 1,
                          s] for r, s in zip(rects, scores, strict=True)],
                        np.float64).reshape(-1, 5)

    def opencv(self, gray: np.ndarray, min_size: int, max_size: int = 0,
               scale: float = 1.05, neighbors: int = 3) -> np.ndarray:
        d, _, w = self.alt2.detectMultiScale3(gray, scale, neighbors, minSize=(min_size, min_size),
                                              maxSize=(max_size, max_size),
                                              outputRejectLevels=True)
        d = np.asarray(d, np.float64).reshape(-1, 4)
        return np.c_[d, np.asarray(w, np.float64).reshape(-1)[: len(d)]]

    def on_crops(self, crops: np.ndarray, factors: tuple[float, ...]) -> dict[str, np.ndarray]:
        """Per ruler, (n, len(factors), 4) boxes in crop pixels (NaN where not exactly one face).

        Each crop is upscaled by each factor and padded by half its size (edge replication).
        """
        n, side = crops.shape[0], crops.shape[1]
        out = {k: np.full((n, len(factors), 4), np.nan) for k in self.names}
        for i, c in enumerate(crops):
            for j, f in enumerate(factors):
                s = int(round(side * f))
                pad = s // 2
                big = cv2.copyMakeBorder(cv2.resize(c, (s, s), interpolation=cv2.INTER_LINEAR),
                                         pad, pad, pad, pad, cv2.BORDER_REPLICATE)
                scale = s / side
                d = self.dlib(big, 0)
                if len(d) == 1:
                    out["dlib"][i, j] = [(d[0, 0] - pad) / scale, (d[0, 1] - pad) / scale,
                                         d[0, 2] / scale, d[0, 3] / scale]
                o = self.opencv(big, s // 2, 2 * s, 1.1)
                if len(o) == 1:
                    out["alt2"][i, j] = [(o[0, 0] - pad) / scale, (o[0, 1] - pad) / scale,
                                         o[0, 2] / scale, o[0, 3] / scale]
        return out


# dlib scans a pyramid in steps of 5/6; upscale factors spread over one such step average its
# scale grid out (a crop at one fixed size would always land on the same pyramid level).
RULER_FACTORS = tuple(4.0 * (1.2 ** (k / 4)) for k in range(4))


def measure_framing(rulers: Rulers, web: np.ndarray, cbcl: np.ndarray, *,
                    min_found: float) -> dict:
    """Target box relative to each ruler (on WebFaces), and in CBCL crops (via each ruler)."""
    target = np.array(WEBFACES_POS_CROP) * web.shape[1]
    rw = rulers.on_crops(web, RULER_FACTORS)
    rc = rulers.on_crops(cbcl, RULER_FACTORS)
    out: dict = {"rulers": {}, "factors": [round(f, 3) for f in RULER_FACTORS],
                 "n_webfaces": int(web.shape[0]), "n_cbcl": int(cbcl.shape[0])}
    cb_est = []
    for k in rulers.names:
        w = rw[k].reshape(-1, 4)
        w = w[~np.isnan(w[:, 0])]
        rel = np.median(relation(target, w), axis=0)
        c = rc[k].reshape(-1, 4)
        c = c[~np.isnan(c[:, 0])]
        found_c = c.shape[0] / rc[k][..., 0].size
        t_cb = np.median(apply_relation(rel, c), axis=0) / cbcl.shape[1] if len(c) else None
        spread = (np.percentile(relation(target, w), 75, axis=0)
                  - np.percentile(relation(target, w), 25, axis=0))
        out["rulers"][k] = {
            "found_webfaces": round(w.shape[0] / rw[k][..., 0].size, 3),
            "ruler_in_webfaces": np.round(np.median(w, axis=0) / web.shape[1], 4).tolist(),
            "target_rel_ruler": np.round(rel, 4).tolist(),
            "target_rel_ruler_iqr": np.round(spread, 4).tolist(),
            "found_cbcl": round(found_c, 3),
            "ruler_in_cbcl": (np.round(np.median(c, axis=0) / cbcl.shape[1], 4).tolist()
                              if len(c) else None),
            "target_in_cbcl": None if t_cb is None else np.round(t_cb, 4).tolist(),
            "used_for_cbcl": bool(t_cb is not None and found_c >= min_found),
        }
        if t_cb is not None and found_c >= min_found:
            cb_est.append(t_cb)
    out["target_in_cbcl"] = (np.round(np.mean(cb_est, axis=0), 4).tolist() if cb_est else None)
    out["rule"] = (f"CBCL: mean of the rulers that find exactly one face in >= {min_found:.0%} "
                   "of the upscaled crops")
    return out


def model_check(windows: np.ndarray, box, spec: str = "vjboost:frontalface_haar") -> dict:
    """Where a vjboost model puts its box on the windows, relative to the target box.

    The shipped Haar model (the convention's origin) reports boxes in the target convention;
    run on windows framed by the mappings above (upscaled 3x, edge-padded), its best-overlapping
    detection should sit on the target box. Returns the share found at IoU >= 0.5 and the median of
    :func:`relation` (detection | target box): ``(0, 0, 1, 1)`` is a perfect agreement.
    """
    from vjboost.cascade import CascadeDetector, load_model
    from vjboost.cascade.shipped import resolve_model

    model = load_model(resolve_model(spec))
    det = CascadeDetector(model, scale_factor=1.1, min_neighbors=1, score="best",
                          min_size=(int(model.width), int(model.height)))
    up, pad = 3, windows.shape[1] * 3 // 2
    t = np.asarray(box, np.float64) * up + [pad, pad, 0, 0]
    rel, found = [], 0
    for w in windows:
        big = cv2.copyMakeBorder(cv2.resize(w, None, fx=up, fy=up, interpolation=cv2.INTER_LINEAR),
                                 pad, pad, pad, pad, cv2.BORDER_REPLICATE)
        b = det.detect(big).boxes
        if not len(b):
            continue
        ious = [box_iou(t, q) for q in b]
        j = int(np.argmax(ious))
        if ious[j] >= 0.5:
            found += 1
            rel.append(relation(b[j], t))
    med = np.median(rel, axis=0) if rel else None
    share = found / max(1, len(windows))
    return {"model": spec, "n": int(len(windows)), "found_iou50": round(share, 3),
            "detection_rel_target": None if med is None else np.round(med, 3).tolist()}


# ------------------------------------------------------------------------------------------------
# NRC-IIT: teacher labels
# ------------------------------------------------------------------------------------------------


def person_of(clip: str) -> str:
    """``05s-1.avi`` -> ``05``: the ``s`` clips show the same person as ``05-*``."""
    return clip.split("-")[0].rstrip("s")


def teacher_upsample(gray: np.ndarray) -> int:
    """Times dlib's detector upsamples a frame when teaching: once for the 160×120 clips, so
    that it finds their faces of about 40 px, never for larger frames."""
    return 1 if gray.shape[1] <= 200 else 0


def teacher_reads(rulers: Rulers, gray: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The teacher's two readings of a frame, (n, 5) ``x, y, w, h, score`` each: dlib's
    detections at every score (upsampled by :func:`teacher_upsample`) and alt2's (faces of
    24 px or more, scale factor 1.1, minNeighbors 3)."""
    return rulers.dlib(gray, teacher_upsample(gray), 0.0), rulers.opencv(gray, 24, 0, 1.1, 3)


#: the teacher outcomes :attr:`Params.nrc_extra` may add to the training positives
NRC_EXTRA = {"low_score", "dlib_only"}


def check_nrc_extra(extra) -> None:
    """Exit with one line naming ``--nrc-extra`` unless every outcome is one of
    :data:`NRC_EXTRA`."""
    unknown = set(extra) - NRC_EXTRA
    if unknown:
        sys.exit(f"face_data: --nrc-extra: unknown outcome {sorted(unknown)[0]!r} "
                 f"(expected some of {', '.join(sorted(NRC_EXTRA))})")


@dataclass
class Teacher:
    rulers: Rulers
    rel: dict[str, np.ndarray]  # target relative to each ruler's box
    min_score: float
    min_iou: float

    def label(self, gray: np.ndarray) -> tuple[str, np.ndarray | None, np.ndarray | None]:
        """(outcome, target box, dlib's mapped box relative to alt2's when both fire and agree).

        Outcomes: agreed, low_score (agreed, dlib's score below ``min_score``), disagree,
        dlib_only, alt2_only, none. The target box is the mean of the two mapped boxes when
        both agree (at any dlib score), dlib's best mapped box when only dlib fires (at any
        score: in these one-person clips even its weakest detections alone are faces, turned,
        tilted or looking down), else None; which outcomes become positives is the caller's
        choice (:attr:`Params.nrc_extra`).
        """
        d, o = teacher_reads(self.rulers, gray)
        if not len(d) and not len(o):
            return "none", None, None
        if not len(d):
            return "alt2_only", None, None
        best = d[np.argmax(d[:, 4])]
        td = apply_relation(self.rel["dlib"], best[:4])
        if not len(o):
            return "dlib_only", td, None
        to = apply_relation(self.rel["alt2"], o[:, :4])
        ious = [box_iou(td, t) for t in to]
        j = int(np.argmax(ious))
        if ious[j] < self.min_iou:
            return "disagree", None, None
        pair = relation(td, to[j])
        return ("low_score" if best[4] < self.min_score else "agreed"), (td + to[j]) / 2, pair


# ------------------------------------------------------------------------------------------------
# the builder
# ------------------------------------------------------------------------------------------------


@dataclass
class Params:
    out: Path
    seed: int = 0
    size: int = 32
    box_frac: float = 0.75
    #: share of a pasted window's side blended into the scene at each border; None blends the
    #: whole margin around the target box (then a detector that reads context around the face
    #: sees the face's own surroundings fade into the background)
    feather: float | None = None
    val_frac: float = 0.12
    val_persons: int = 2
    bg_val_frac: float = 0.15
    bg_block: int = 10
    dup_corr: float = 0.9
    ruler_sample: int = 500
    ruler_min_found: float = 0.5
    frame_step: int = 2
    teacher_min_score: float = 0.5
    teacher_min_iou: float = 0.5
    #: teacher outcomes besides ``agreed`` whose frames become training positives, for the
    #: training persons only (held-out persons keep ``agreed`` alone, so the validation views
    #: do not change): ``low_score`` (both agree, dlib below ``teacher_min_score``) and
    #: ``dlib_only`` (dlib alone, at any score: turned and tilted heads)
    nrc_extra: tuple[str, ...] = ()
    scenes: int = 300
    empty_scenes: int = 150
    crowd_scenes: int = 150
    faces_per_scene: tuple[int, int] = (1, 4)
    face_px: tuple[int, int] = (20, 120)
    scene_max_side: int = 640
    model_check_n: int = 400
    # subsets (None: everything), for --quick and the tests
    n_webfaces: int | None = None
    n_cbcl: int | None = None
    n_persons: int | None = None
    clips_per_person: int | None = None
    n_backgrounds: int | None = None

    @classmethod
    def quick(cls, out: Path, **kw) -> Params:
        """A small build of every part (under a minute)."""
        base = dict(n_webfaces=800, n_cbcl=400, n_persons=3, clips_per_person=1, frame_step=6,
                    n_backgrounds=300, ruler_sample=60, model_check_n=40, scenes=40,
                    empty_scenes=15, crowd_scenes=10)
        return cls(out=out, **{**base, **kw})

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["out"] = str(self.out)
        return d


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def _save_npz(path: Path, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _windows(images: list[np.ndarray] | np.ndarray, boxes: np.ndarray, p: Params
             ) -> tuple[np.ndarray, np.ndarray]:
    """Windows (n, S, S) around each target box, and the replicated share of each."""
    wins, pad = [], []
    for img, b in zip(images, boxes, strict=True):
        r = window_of(b, p.box_frac)
        wins.append(cut_window(img, r, p.size))
        pad.append(outside_share(r, img.shape[:2]))
    return (np.stack(wins) if wins else np.zeros((0, p.size, p.size), np.uint8),
            np.round(np.asarray(pad, np.float32), 4))


#: the teacher outcomes of the held-out persons' frames that ``val/det_heads`` holds: the heads
#: ``--nrc-extra`` can add to training, which the other views (frames both teachers agree on,
#: confidently) do not hold
HEADS = ("low_score", "dlib_only")


def _nrc(p: Params, teacher: Teacher, rng: np.random.Generator, log, *,
         val_persons: list[str] | None = None, heads_only: bool = False) -> dict:
    """Label the NRC-IIT clips with ``teacher``: the kept frames (``agreed`` and, for the
    training persons, ``p.nrc_extra``) and, apart, the held-out persons' frames of :data:`HEADS`
    (``heads``), each list after the near-duplicate rule within its clip. ``val_persons`` given
    (an existing build's) replaces the seeded draw; ``heads_only`` labels only their clips."""
    check_nrc_extra(p.nrc_extra)
    clips = sorted((SHARED / "data" / "video").glob("*.avi"))
    persons = sorted({person_of(c.name) for c in clips})
    if p.n_persons is not None:
        persons = persons[:p.n_persons]
    clips = [c for c in clips if person_of(c.name) in persons]
    if p.clips_per_person is not None:
        clips = [c for c in clips
                 if [q for q in clips if person_of(q.name) == person_of(c.name)].index(c)
                 < p.clips_per_person]
    if val_persons is None:
        val_persons = sorted(rng.choice(persons, size=min(p.val_persons, len(persons) - 1),
                                        replace=False).tolist())
    keep = {True: {"agreed"}, False: {"agreed", *p.nrc_extra}}  # by: is a held-out person
    if heads_only:  # the held-out persons' clips, for their heads alone
        clips = [c for c in clips if person_of(c.name) in val_persons]
        keep = {True: set(), False: set()}
    stats: dict[str, int] = {}
    kept_frames, kept_boxes, meta, pairs, outcomes = [], [], [], [], []
    heads: dict[str, list] = {"frames": [], "boxes": [], "meta": []}
    from vjboost.io import iter_frames

    def fresh(kept: list[np.ndarray], frame: np.ndarray, box: np.ndarray) -> bool:
        """Whether the frame's window is not a near-duplicate of one kept from this clip (the
        crops' rule); a fresh one joins ``kept``."""
        z = unit_rows(cut_window(frame, window_of(box, p.box_frac), p.size)[None])[0]
        if kept and float(np.max(np.stack(kept) @ z)) >= p.dup_corr:
            return False
        kept.append(z)
        return True

    for clip in clips:
        kept: list[np.ndarray] = []  # unit rows of the clip's kept windows
        kept_heads: list[np.ndarray] = []
        n_read = 0
        held_out = person_of(clip.name) in val_persons
        for fi, frame in iter_frames(str(clip), every=p.frame_step, gray=True):
            n_read += 1
            outcome, box, pair = teacher.label(frame)
            stats[outcome] = stats.get(outcome, 0) + 1
            if pair is not None:
                pairs.append(pair)
            if box is None:
                continue
            if held_out and outcome in HEADS:
                if fresh(kept_heads, frame, box):
                    heads["frames"].append(frame)
                    heads["boxes"].append(box)
                    heads["meta"].append((clip.name, fi, person_of(clip.name)))
                continue
            if outcome not in keep[held_out]:
                continue
            if not fresh(kept, frame, box):
                stats["near_duplicate"] = stats.get("near_duplicate", 0) + 1
                continue
            kept_frames.append(frame)
            kept_boxes.append(box)
            meta.append((clip.name, fi, person_of(clip.name)))
            outcomes.append(outcome)
        log(f"  {clip.name}: {n_read} frames labelled, {len(kept)} kept"
            + (f", {len(kept_heads)} for val/det_heads" if held_out else ""))
    labelled = sum(v for k, v in stats.items() if k != "near_duplicate")
    heads["boxes"] = np.asarray(heads["boxes"]).reshape(-1, 4)
    return {"frames": kept_frames, "boxes": np.asarray(kept_boxes).reshape(-1, 4), "meta": meta,
            "outcomes": np.asarray(outcomes, dtype="U12"), "heads": heads,
            "val_persons": val_persons, "persons": persons, "stats": stats,
            "frames_labelled": labelled, "clips": [c.name for c in clips],
            "dlib_rel_alt2": (np.round(np.median(pairs, axis=0), 4).tolist() if pairs else None)}


def blend_share(feather: float | None, box_frac: float) -> float:
    """The share of a pasted window's side blended into the scene at each border: ``feather``,
    or (None) the whole margin around the target box.

    >>> blend_share(None, 0.75), blend_share(0.05, 0.75)
    (0.125, 0.05)
    """
    return (1 - box_frac) / 2 if feather is None else feather


def _paste(scene: np.ndarray, face: np.ndarray, rect, feather: float,
           protect: list[np.ndarray] | tuple = ()) -> None:
    """Alpha-blend a square window ``face`` (side n) into ``scene`` at integer ``rect``,
    leaving the pixels inside each box (x, y, w, h) of ``protect`` as they are."""
    x, y, n = int(rect[0]), int(rect[1]), face.shape[0]
    u = (np.arange(n) + 0.5) / n
    edge = np.minimum(u, 1 - u) / feather  # 0 at the border, 1 inside the margin's inner edge
    ramp = np.clip(edge, 0, 1)
    a = np.minimum(ramp[:, None], ramp[None, :])
    a = 0.5 - 0.5 * np.cos(np.pi * a)
    for bx, by, bw, bh in protect:
        x0, y0 = max(int(np.floor(bx)) - x, 0), max(int(np.floor(by)) - y, 0)
        x1, y1 = min(int(np.ceil(bx + bw)) - x, n), min(int(np.ceil(by + bh)) - y, n)
        if x1 > x0 and y1 > y0:
            a[y0:y1, x0:x1] = 0.0
    sub = scene[y:y + n, x:x + n].astype(np.float32)
    scene[y:y + n, x:x + n] = np.rint(a * face + (1 - a) * sub).astype(np.uint8)


def _scenes(p: Params, faces: list[tuple[np.ndarray, np.ndarray]], bgs: list[str],
            rng: np.random.Generator, folder: Path) -> tuple[list[str], list[list[float]],
                                                             list[str]]:
    """Synthetic scenes and face-free scenes from held-out backgrounds."""
    from vjboost.io import read_image

    names, rows, empty = [], [], []
    order = rng.permutation(len(faces))
    fi = 0
    bg_order = rng.permutation(len(bgs))
    n_sc = min(p.scenes, len(bgs))
    n_empty = min(p.empty_scenes, len(bgs) - n_sc)
    folder.mkdir(parents=True, exist_ok=True)
    lo, hi = np.log(p.face_px[0]), np.log(p.face_px[1])
    margin = blend_share(p.feather, p.box_frac)
    for k, bi in enumerate(bg_order[: n_sc + n_empty].tolist()):
        img = read_image(bgs[bi])
        s = p.scene_max_side / max(img.shape)
        if s < 1:
            img = cv2.resize(img, (round(img.shape[1] * s), round(img.shape[0] * s)),
                             interpolation=cv2.INTER_AREA)
        name = f"{'scene' if k < n_sc else 'empty'}_{k:04d}.png"
        if k < n_sc:
            placed: list[np.ndarray] = []
            for _ in range(int(rng.integers(p.faces_per_scene[0], p.faces_per_scene[1] + 1))):
                src, box = faces[order[fi % len(order)]]
                for _try in range(30):
                    side = float(np.exp(rng.uniform(lo, hi)))
                    n = int(round(side / p.box_frac))
                    if n + 2 > min(img.shape):
                        continue
                    x = int(rng.integers(0, img.shape[1] - n + 1))
                    y = int(rng.integers(0, img.shape[0] - n + 1))
                    r = np.array([x, y, n, n], np.float64)
                    if all(box_iou(r, q) == 0 for q in placed):
                        break
                else:
                    continue
                fi += 1
                win = cut_window(src, window_of(box, p.box_frac), n)
                _paste(img, win.astype(np.float32), r, feather=margin)
                placed.append(r)
                b = n * p.box_frac
                rows.append([name, x + (n - b) / 2, y + (n - b) / 2, b, b])
        cv2.imwrite(str(folder / name), img)
        (names if k < n_sc else empty).append(name)
    return names, rows, empty


def build(p: Params, log=print) -> dict:
    t0 = time.perf_counter()
    faces_dir = SHARED / "data" / "faces"
    if not faces_dir.is_dir():
        sys.exit(f"face_data: {faces_dir} not found (set VJBOOST_SHARED)")
    web = np.load(faces_dir / "caltech_webfaces_36x36.npz")["images"]
    cb = np.load(faces_dir / "cbcl_train.npz")
    cbcl = cb["images"][cb["labels"] == 1]
    cbcl_idx = np.flatnonzero(cb["labels"] == 1)
    web = web[:p.n_webfaces]
    cbcl, cbcl_idx = cbcl[:p.n_cbcl], cbcl_idx[:p.n_cbcl]
    timing = {}

    # groups and the split of the crops
    t = time.perf_counter()
    g_web = near_duplicate_groups(web, p.dup_corr)
    g_cb = near_duplicate_groups(cbcl, p.dup_corr)
    val_web = split_groups(g_web, p.val_frac, np.random.default_rng([p.seed, 1]))
    val_cb = split_groups(g_cb, p.val_frac, np.random.default_rng([p.seed, 2]))
    timing["groups_s"] = round(time.perf_counter() - t, 1)

    # framing, on training crops only
    t = time.perf_counter()
    rulers = Rulers()
    n_r = p.ruler_sample
    sw = np.sort(np.random.default_rng([p.seed, 3]).choice(np.flatnonzero(~val_web),
                                                            min(n_r, int((~val_web).sum())),
                                                            replace=False))
    sc = np.sort(np.random.default_rng([p.seed, 4]).choice(np.flatnonzero(~val_cb),
                                                           min(n_r, int((~val_cb).sum())),
                                                           replace=False))
    framing = measure_framing(rulers, web[sw], cbcl[sc], min_found=p.ruler_min_found)
    timing["framing_s"] = round(time.perf_counter() - t, 1)
    log(f"framing: target in CBCL crop {framing['target_in_cbcl']} "
        "(" + ", ".join(f"{k}: {v['target_in_cbcl']}" for k, v in framing["rulers"].items())
        + ")")
    if framing["target_in_cbcl"] is None:
        sys.exit("face_data: no ruler found the CBCL faces; cannot frame them")

    # windows of the crops
    t_web = np.array(WEBFACES_POS_CROP) * web.shape[1]
    t_cb = np.array(framing["target_in_cbcl"]) * cbcl.shape[1]
    w_web, pad_web = _windows(web, np.repeat(t_web[None], len(web), 0), p)
    w_cb, pad_cb = _windows(cbcl, np.repeat(t_cb[None], len(cbcl), 0), p)

    # NRC-IIT by the teacher
    t = time.perf_counter()
    rel = {k: np.array(v["target_rel_ruler"]) for k, v in framing["rulers"].items()}
    teacher = Teacher(rulers, rel, p.teacher_min_score, p.teacher_min_iou)
    nrc = _nrc(p, teacher, np.random.default_rng([p.seed, 5]), log)
    timing["teacher_s"] = round(time.perf_counter() - t, 1)
    w_nrc, pad_nrc = _windows(nrc["frames"], nrc["boxes"], p)
    person = np.array([m[2] for m in nrc["meta"]], dtype="U8")
    val_nrc = np.isin(person, nrc["val_persons"])

    # positives per source and split
    box = [(1 - p.box_frac) / 2 * p.size] * 2 + [p.box_frac * p.size] * 2
    pos_crop = [round((1 - p.box_frac) / 2, 6)] * 2 + [round(p.box_frac, 6)] * 2
    per = {
        "webfaces": dict(images=w_web, group=np.char.add("web", g_web.astype("U6")),
                         index=np.arange(len(web)), padded=pad_web, val=val_web),
        "cbcl": dict(images=w_cb, group=np.char.add("cbcl", g_cb.astype("U6")),
                     index=cbcl_idx, padded=pad_cb, val=val_cb),
        "nrc": dict(images=w_nrc, group=np.char.add("nrc", person),
                    index=np.array([m[1] for m in nrc["meta"]], np.int64), padded=pad_nrc,
                    val=val_nrc, clip=np.array([m[0] for m in nrc["meta"]], dtype="U16"),
                    teacher=nrc["outcomes"]),
    }
    counts: dict = {}
    hashes: dict = {}
    train_parts = []
    for src, d in per.items():
        for split in ("train", "val"):
            m = d["val"] if split == "val" else ~d["val"]
            arrays = {k: v[m] for k, v in d.items() if k != "val"}
            arrays["source"] = np.full(int(m.sum()), src, dtype="U8")
            arrays["box"] = np.array(box, np.float32)
            _save_npz(p.out / split / f"{src}.npz", **arrays)
            counts.setdefault(src, {})[split] = int(m.sum())
            counts[src][f"{split}_groups"] = int(np.unique(arrays["group"]).size)
            hashes[f"{split}/{src}"] = _sha(arrays["images"])
            if split == "train":
                train_parts.append(arrays)
    allp = {k: np.concatenate([a[k] for a in train_parts])
            for k in ("images", "source", "group", "index", "padded")}
    allp["box"] = np.array(box, np.float32)
    _save_npz(p.out / "train" / "positives.npz", **allp)
    hashes["train/positives"] = _sha(allp["images"])

    # the shipped model as a third ruler, on a sample of each source's training windows
    t = time.perf_counter()
    check = {}
    for src, d in per.items():
        idx = np.flatnonzero(~d["val"])
        pick = np.sort(np.random.default_rng([p.seed, 8]).choice(
            idx, min(len(idx), p.model_check_n), replace=False)) if len(idx) else idx
        check[src] = model_check(d["images"][pick], box)
    timing["model_check_s"] = round(time.perf_counter() - t, 1)
    log("shipped model on the windows: " + "; ".join(
        f"{k} found {v['found_iou50']}, box/target {v['detection_rel_target']}"
        for k, v in check.items()))

    # backgrounds: hold out blocks of consecutive names
    bg_all = sorted(str(q) for q in (SHARED / "data" / "negatives").glob("*.jpg"))
    bg_all = bg_all[:p.n_backgrounds]
    blocks = np.arange(len(bg_all)) // p.bg_block
    bg_val = split_groups(blocks, p.bg_val_frac, np.random.default_rng([p.seed, 6]))
    bgs_train = [b for b, v in zip(bg_all, bg_val, strict=True) if not v]
    bgs_val = [b for b, v in zip(bg_all, bg_val, strict=True) if v]
    _write_text(p.out / "backgrounds_train.txt", "\n".join(bgs_train) + "\n")
    _write_text(p.out / "backgrounds_val.txt", "\n".join(bgs_val) + "\n")

    # validation detection set
    t = time.perf_counter()
    det = p.out / "val" / "det"
    rows: list[list] = []
    nrc_names = []
    (det / "nrc").mkdir(parents=True, exist_ok=True)
    for (clip, fi, _), frame, b in zip(nrc["meta"], nrc["frames"], nrc["boxes"], strict=True):
        if person_of(clip) not in nrc["val_persons"]:
            continue
        name = f"nrc/{clip[:-4]}_{fi:04d}.png"
        cv2.imwrite(str(det / name), frame)
        nrc_names.append(name)
        rows.append([name, *b.tolist()])
    # pasted faces: held-out WebFaces crops and NRC-IIT frames (native resolution); not CBCL,
    # whose windows are about half edge-replicated pixels (see the manifest's padded_mean)
    sources = ([(web[i], t_web) for i in np.flatnonzero(val_web)]
               + [(f, b) for f, b, v in zip(nrc["frames"], nrc["boxes"], val_nrc, strict=True)
                  if v])
    sc_names, sc_rows, empty = _scenes(p, sources, bgs_val,
                                       np.random.default_rng([p.seed, 7]), det / "scenes")
    sc_names = [f"scenes/{n}" for n in sc_names]
    empty = [f"scenes/{n}" for n in empty]
    rows += [[f"scenes/{r[0]}", *r[1:]] for r in sc_rows]
    lines = box_lines(det, rows)
    n_boxes = len(lines) - 1
    _write_text(det / "boxes.csv", "\n".join(lines) + "\n")
    hashes["val/det/boxes.csv"] = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    _write_text(det / "images.txt", "\n".join(nrc_names + sc_names + empty) + "\n")
    for part, lst in (("nrc", nrc_names), ("scenes", sc_names), ("empty", empty)):
        _write_text(det / f"{part}.txt", "\n".join(lst) + "\n")
    timing["val_det_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    hashes["val/det_scan"] = scan_copy(det, p.out / "val" / "det_scan", seed=p.seed)
    timing["val_det_scan_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    hashes["val/det_vary"] = vary_copy(det, p.out / "val" / "det_vary", seed=p.seed)
    timing["val_det_vary_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    hashes["val/det_crowd"] = crowd_copy(p.out, p.out / "val" / "det_crowd", seed=p.seed,
                                         scenes=p.crowd_scenes,
                                         scene_max_side=p.scene_max_side,
                                         feather=blend_share(p.feather, p.box_frac))
    timing["val_det_crowd_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    hashes["val/det_heads"] = heads_copy(det, p.out / "val" / "det_heads", nrc["heads"])
    timing["val_det_heads_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    if (SHARED / "data" / "inria").is_dir():
        counts["people"] = people(p.out, seed=p.seed)
        hashes["val/det_people"] = people_copy(p.out, p.out / "val" / "det_people",
                                               seed=p.seed)
    else:
        log(f"no {SHARED / 'data' / 'inria'}: no bodies, no val/det_people")
    timing["val_det_people_s"] = round(time.perf_counter() - t, 1)
    timing["total_s"] = round(time.perf_counter() - t0, 1)

    st = nrc["stats"]
    labelled = max(1, nrc["frames_labelled"])
    both = st.get("agreed", 0) + st.get("disagree", 0) + st.get("low_score", 0)
    manifest = {
        "params": p.as_dict(),
        "seed": p.seed,
        "pos_crop": pos_crop,
        "window": [p.size, p.size],
        "box_in_window": box,
        "target_box": {"webfaces_pos_crop": list(WEBFACES_POS_CROP),
                       "cbcl_crop_fractions": framing["target_in_cbcl"]},
        "framing": framing,
        "model_check": check,
        "counts": counts,
        "padded_mean": {"webfaces": round(float(pad_web.mean()), 4),
                        "cbcl": round(float(pad_cb.mean()), 4),
                        "nrc": round(float(pad_nrc.mean()), 4) if len(pad_nrc) else None},
        "nrc": {"clips": nrc["clips"], "persons": nrc["persons"],
                "val_persons": nrc["val_persons"], "frames_labelled": nrc["frames_labelled"],
                "dlib_mapped_rel_alt2_mapped": nrc["dlib_rel_alt2"],
                "teacher": st,
                "extra": list(p.nrc_extra),
                "train_kept": {k: int(np.sum((nrc["outcomes"] == k) & ~val_nrc))
                               for k in ("agreed", *p.nrc_extra)},
                "agreed_share": round(st.get("agreed", 0) / labelled, 3),
                "disagree_share_when_both_fire": round(st.get("disagree", 0) / max(1, both), 3)},
        "backgrounds": {"train": len(bgs_train), "val": len(bgs_val), "block": p.bg_block},
        "val_det": {"images": len(nrc_names) + len(sc_names) + len(empty),
                    "nrc_frames": len(nrc_names), "scenes": len(sc_names),
                    "face_free": len(empty), "boxes": n_boxes,
                    "heads_frames": len(nrc["heads"]["frames"]),
                    "annotations": "val/det/boxes.csv", "images_list": "val/det/images.txt"},
        "hashes": hashes,
        "timing": timing,
    }
    _write_text(p.out / "manifest.json", json.dumps(manifest, indent=1))
    return manifest


def box_lines(folder: Path, rows, *, shapes: dict | None = None) -> list[str]:
    """``boxes.csv`` lines (header first) of ``rows`` (``name, x, y, w, h``, float pixels) of the
    images in ``folder``: boxes rounded to whole pixels (``vjeval``'s CSV) and clipped to their
    image; a box left under 4 px on a side is dropped. ``shapes``: the images' (height, width)
    by name, when the caller has them (else each image is read back from ``folder``)."""
    lines = ["image,x,y,w,h"]
    for name, x, y, w, h in rows:
        x0, y0 = int(round(x)), int(round(y))
        x1, y1 = int(round(x + w)), int(round(y + h))
        img_h, img_w = (shapes[name] if shapes and name in shapes
                        else cv2.imread(str(folder / name), cv2.IMREAD_GRAYSCALE).shape)[:2]
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, img_w), min(y1, img_h)
        if x1 - x0 >= 4 and y1 - y0 >= 4:
            lines.append(f"{name},{x0},{y0},{x1 - x0},{y1 - y0}")
    return lines


def heads_copy(det: Path, out: Path, heads: dict) -> str:
    """Write ``out`` (``val/det_heads``): the held-out persons' frames of :data:`HEADS`
    (``heads`` of :func:`_nrc`: ``frames``, their teacher ``boxes`` (n, 4) and ``meta``) as
    ``heads/<clip>_<frame>.png``, and the face-free images of the detection set ``det`` as they
    are, so that false alarms are counted at the other views' density; its ``boxes.csv`` and
    image lists. Returns a hash of the written images and boxes."""
    (out / "heads").mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    names, rows, shapes = [], [], {}
    for (clip, fi, _), frame, b in zip(heads["meta"], heads["frames"], heads["boxes"],
                                       strict=True):
        name = f"heads/{clip[:-4]}_{fi:04d}.png"
        cv2.imwrite(str(out / name), frame)
        digest.update(np.ascontiguousarray(frame).tobytes())
        names.append(name)
        rows.append([name, *np.asarray(b, np.float64).tolist()])
        shapes[name] = frame.shape  # the frames are at hand: not read back for their sizes
    return _finish_view(det, out, "heads", names, box_lines(out, rows, shapes=shapes), digest)


def _finish_view(det: Path, out: Path, part: str, names: list[str], lines: list[str],
                 digest) -> str:
    """Complete a view ``out`` whose own images ``names`` (listed in ``<part>.txt``) and box
    lines are written: the face-free images of the detection set ``det`` copied as they are,
    ``boxes.csv``, ``empty.txt`` and ``images.txt``. Returns the view's hash (``digest`` of its
    images, updated with the box lines)."""
    empty = (det / "empty.txt").read_text().split() if (det / "empty.txt").is_file() else []
    _copy_images(det, out, empty)
    digest.update("\n".join(lines).encode())
    _write_text(out / "boxes.csv", "\n".join(lines) + "\n")
    _write_text(out / f"{part}.txt", "\n".join(names) + "\n")
    _write_text(out / "empty.txt", "\n".join(empty) + "\n")
    _write_text(out / "images.txt", "\n".join(names + empty) + "\n")
    return digest.hexdigest()[:16]


def heads_view(data: Path, log=print) -> tuple[str, int]:
    """(Re)write ``val/det_heads`` of the existing build ``data``: its held-out persons' clips
    labelled again by the build's teacher (its rulers' measured framing and its settings).
    Returns the view's hash and its number of frames."""
    try:
        man = json.loads((data / "manifest.json").read_text())
        prm, framing, val_persons = man["params"], man["framing"], man["nrc"]["val_persons"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"face_data: --heads-only: {data / 'manifest.json'} missing or incomplete ({e})")
    fields = Params.__dataclass_fields__
    p = Params(**{k: tuple(v) if isinstance(v, list) else v for k, v in prm.items()
                  if k in fields and k != "out"}, out=data)
    rel = {k: np.array(v["target_rel_ruler"]) for k, v in framing["rulers"].items()}
    teacher = Teacher(Rulers(), rel, p.teacher_min_score, p.teacher_min_iou)
    nrc = _nrc(p, teacher, np.random.default_rng(0), log, val_persons=val_persons,
               heads_only=True)
    h = heads_copy(data / "val" / "det", data / "val" / "det_heads", nrc["heads"])
    return h, len(nrc["heads"]["frames"])


def summary_line(m: dict) -> str:
    c = m["counts"]
    parts = ", ".join(f"{s} {c[s]['train']}/{c[s]['val']}" for s in SOURCES)
    v = m["val_det"]
    return (f"faces train/val: {parts}; val detection set: {v['nrc_frames']} NRC frames, "
            f"{v['scenes']} scenes, {v['face_free']} face-free, {v['boxes']} boxes; backgrounds "
            f"{m['backgrounds']['train']} train / {m['backgrounds']['val']} val; "
            f"{m['timing']['total_s']} s")


def scan_like(gray: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``gray`` (H, W) uint8 degraded as an old photograph printed and scanned, or stored small,
    looks; the image keeps its size, so boxes stay valid. Each operation is drawn independently
    (at least one applied): resolution lost (down to 50–80 % by area averaging, back up by cubic
    interpolation), a halftone screen (a 3–4 px periodic pattern of 5–12 grey levels, then a
    0.6–0.9 px blur, as a scanner sees a printed page), contrast compressed to 40–85 % with the
    brightness moved by up to ±30, grain (Gaussian, σ 2–6) and JPEG at quality 15–50.

    >>> g = np.full((40, 60), 128, np.uint8)
    >>> scan_like(g, np.random.default_rng(0)).shape
    (40, 60)
    """
    h, w = gray.shape
    on = rng.random(5) < np.array([0.6, 0.3, 0.6, 0.5, 0.6])
    if not on.any():
        on[rng.integers(5)] = True
    g = gray
    if on[0]:
        f = rng.uniform(0.5, 0.8)
        small = cv2.resize(g, (max(1, round(w * f)), max(1, round(h * f))),
                           interpolation=cv2.INTER_AREA)
        g = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    x = g.astype(np.float32)
    if on[1]:
        period, amp, ang = rng.uniform(3.0, 4.0), rng.uniform(5.0, 12.0), rng.uniform(0, np.pi)
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        u = xx * np.cos(ang) + yy * np.sin(ang)
        v = -xx * np.sin(ang) + yy * np.cos(ang)
        x = x + amp * np.sin(2 * np.pi * u / period) * np.sin(2 * np.pi * v / period)
        x = cv2.GaussianBlur(x, (0, 0), rng.uniform(0.6, 0.9))
    if on[2]:
        m = float(x.mean())
        x = m + rng.uniform(0.4, 0.85) * (x - m) + rng.uniform(-30, 30)
    if on[3]:
        x = x + rng.normal(0.0, rng.uniform(2.0, 6.0), x.shape).astype(np.float32)
    g = np.clip(np.rint(x), 0, 255).astype(np.uint8)
    if on[4]:
        _, buf = cv2.imencode(".jpg", g, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(15, 51))])
        g = cv2.imdecode(buf, cv2.IMREAD_GRAYSCALE)
    return g


def _copy_images(det: Path, out: Path, names: list[str]) -> None:
    """Copy the image files ``names`` (relative to ``det``) to the same names in ``out``."""
    import shutil

    for name in names:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(det / name, out / name)


def crowd_scene(background: np.ndarray, windows: np.ndarray, box, rng: np.random.Generator,
                *, face_px: tuple[float, float] = (20.0, 56.0), feather: float = 0.05
                ) -> tuple[np.ndarray, np.ndarray]:
    """Faces standing in rows, as in a group photograph, pasted into ``background``.

    Two to four rows, the back row pasted first; the base face side is log-uniform in
    ``face_px`` and each row further back is 0.92 of the one in front of it. Along a row, 3 to
    10 faces stand 1.1–1.5 sides apart (centre to centre), each 0.9–1.1 of its row's side and
    up to 0.08 of it above or below the row; rows stand 1.15–1.5 sides apart. So a face's
    context holds its neighbours' hair, cheeks and faces. Each face is a window of
    ``windows`` (drawn at random, mirrored half of the time) resampled to its size and blended
    over ``feather`` of its side at each border, but never over an earlier face's box: the
    labelled faces keep all their pixels. A face whose window would leave the image, or whose
    box would touch another face's box, is left out.

    Parameters
    ----------
    background : ndarray of uint8, shape (H, W)
        The scene; it is not modified.
    windows : ndarray of uint8, shape (n, S, S)
        Face windows with the face at ``box``.
    box : sequence of 4 floats
        The face box (x, y, w, h) inside a window, in pixels, centred.
    rng : numpy.random.Generator
        Every choice.
    face_px : (float, float)
        Range of the base face side, pixels.
    feather : float
        Share of a window's side blended into the scene at each border.

    Returns
    -------
    scene : ndarray of uint8, shape (H, W)
    boxes : ndarray of float64, shape (k, 4)
        The face boxes (x, y, w, h), pixels.

    Examples
    --------
    >>> wins = np.full((3, 36, 36), 90, np.uint8)
    >>> scene, boxes = crowd_scene(np.full((300, 400), 128, np.uint8), wins, (6, 6, 24, 24),
    ...                            np.random.default_rng(0))
    >>> scene.shape, boxes.shape[1], len(boxes) >= 3
    ((300, 400), 4, True)
    """
    img = background.copy()
    h, w = img.shape
    box_frac = float(box[2]) / windows.shape[1]
    base = float(np.exp(rng.uniform(np.log(face_px[0]), np.log(face_px[1]))))
    n_rows = int(rng.integers(2, 5))
    sides = base * 0.92 ** np.arange(n_rows)[::-1]  # back row first
    gaps = rng.uniform(1.15, 1.5, n_rows - 1) * (sides[:-1] + sides[1:]) / 2
    reach = 0.5 / box_frac * 1.1 + 0.08  # a window's half side and its shift, in face sides
    while n_rows > 1 and gaps[:n_rows - 1].sum() + reach * (sides[0] + sides[n_rows - 1]) > h:
        n_rows -= 1  # drop front rows until the crowd fits the height
    sides = sides[:n_rows]
    top = reach * sides[0]
    room = h - reach * sides[-1] - gaps[:n_rows - 1].sum() - top
    cy = top + rng.uniform(0, max(room, 0.0))
    placed: list[np.ndarray] = []
    for r, s in enumerate(sides):
        k = int(rng.integers(3, 11))
        step = rng.uniform(1.1, 1.5, k - 1) * s
        while k > 1 and step[:k - 1].sum() + 2 * reach * s > w:
            k -= 1
        span = step[:k - 1].sum()
        x_first = reach * s + rng.uniform(0, max(w - 2 * reach * s - span, 0.0))
        for cx in x_first + np.r_[0.0, np.cumsum(step[:k - 1])]:
            side = s * rng.uniform(0.9, 1.1)
            n = int(round(side / box_frac))
            x = int(round(cx - n / 2))
            y = int(round(cy + rng.uniform(-0.08, 0.08) * s - n / 2))
            b = n * box_frac
            fb = np.array([x + (n - b) / 2, y + (n - b) / 2, b, b])
            win = windows[int(rng.integers(len(windows)))]
            if rng.random() < 0.5:
                win = win[:, ::-1]
            if x < 0 or y < 0 or x + n > w or y + n > h or any(
                    min(fb[0] + b, q[0] + q[2]) > max(fb[0], q[0])
                    and min(fb[1] + b, q[1] + q[3]) > max(fb[1], q[1]) for q in placed):
                continue
            face = cut_window(win, (0, 0, win.shape[0], win.shape[0]), n)
            _paste(img, face.astype(np.float32), (x, y, n, n), feather, protect=placed)
            placed.append(fb)
        if r < n_rows - 1:
            cy += gaps[r]
    return img, np.array(placed, np.float64).reshape(-1, 4)


def crowd_copy(data: Path, out: Path, *, seed: int, scenes: int = 150,
               scene_max_side: int = 640, feather: float = 0.05) -> str:
    """Write ``out`` (``val/det_crowd``): ``scenes`` crowd scenes (:func:`crowd_scene`) of the
    held-out faces (``val/webfaces.npz`` and ``val/nrc.npz`` of ``data``) on held-out
    backgrounds (``backgrounds_val.txt``, shrunk to ``scene_max_side``), as
    ``crowds/crowd_NNNN.png``, and the face-free images of ``val/det`` as they are; its
    ``boxes.csv`` and image lists. Returns a hash of the written images and boxes."""
    from vjboost.io import read_bg_list, read_image

    parts = [np.load(data / "val" / f"{src}.npz") for src in ("webfaces", "nrc")]
    windows = np.concatenate([z["images"] for z in parts if len(z["images"])])
    box = parts[0]["box"]
    bgs = read_bg_list(data / "backgrounds_val.txt")
    rng = np.random.default_rng([seed, 10])
    digest = hashlib.sha256()
    lines, names = ["image,x,y,w,h"], []
    (out / "crowds").mkdir(parents=True, exist_ok=True)
    for k, bi in enumerate(rng.permutation(len(bgs))[:scenes].tolist()):
        img = read_image(bgs[bi])
        f = scene_max_side / max(img.shape)
        if f < 1:
            img = cv2.resize(img, (round(img.shape[1] * f), round(img.shape[0] * f)),
                             interpolation=cv2.INTER_AREA)
        scene, boxes = crowd_scene(img, windows, box, np.random.default_rng([seed, 10, k]),
                                   feather=feather)
        name = f"crowds/crowd_{k:04d}.png"
        cv2.imwrite(str(out / name), scene)
        names.append(name)
        digest.update(scene.tobytes())
        for x, y, bw, bh in np.rint(boxes).astype(np.int64).tolist():
            lines.append(f"{name},{x},{y},{bw},{bh}")
    return _finish_view(data / "val" / "det", out, "crowds", names, lines, digest)


#: rows of an INRIA person crop (128×64) below its person's chin: the body, not the head
BODY_ROWS = (36, 128)


def people(data_out: Path, *, seed: int, val_frac: float = 0.15) -> dict:
    """Write ``train/people.npz`` and ``val/people.npz`` in ``data_out``: the bodies of the INRIA
    person crops (``../shared/data/inria``), rows :data:`BODY_ROWS` of each grey crop and its
    mirror, split by photograph (the crop name without its letter; ``val_frac`` of the
    photographs held out). ``images`` (n, 92, 64) uint8 and ``group``. The backgrounds hold no
    people; these are the clothes, arms and legs of photographs of people, with the main
    person's head cut off (smaller people behind may keep theirs). Returns the counts."""
    z = np.load(SHARED / "data" / "inria" / "inria_train_pos_64x128.npz")
    grey = np.array([cv2.cvtColor(im, cv2.COLOR_RGB2GRAY) for im in z["images"]])
    body = grey[:, BODY_ROWS[0]:BODY_ROWS[1]]
    photo = np.array([str(n)[:-5] for n in z["names"]])
    _, group = np.unique(photo, return_inverse=True)
    val = split_groups(group, val_frac, np.random.default_rng([seed, 11]))
    counts = {}
    for split, m in (("train", ~val), ("val", val)):
        images = np.concatenate([body[m], body[m][:, :, ::-1]])
        _save_npz(data_out / split / "people.npz", images=images,
                  group=np.tile(photo[m], 2))
        counts[split] = len(images)
    return counts


def people_tiles(bodies: np.ndarray, rng: np.random.Generator, *,
                 max_side: tuple[int, int] = (480, 640),
                 scale: tuple[float, float] = (1.5, 3.5)) -> list[np.ndarray]:
    """Face-free images of people's bodies: ``bodies`` (n, h, w) uint8 in turn, tiled in a grid
    at one scale per image drawn in ``scale``, each image at most ``max_side`` (height,
    width), until every body is used.

    >>> tiles = people_tiles(np.zeros((7, 92, 64), np.uint8), np.random.default_rng(0))
    >>> all(t.shape[0] <= 480 and t.shape[1] <= 640 for t in tiles), len(tiles) >= 1
    (True, True)
    """
    out, i = [], 0
    h, w = bodies.shape[1:]
    while i < len(bodies):
        f = rng.uniform(*scale)
        th, tw = int(round(h * f)), int(round(w * f))
        rows, cols = max(1, max_side[0] // th), max(1, max_side[1] // tw)
        take = bodies[i:i + rows * cols]
        i += len(take)
        img = np.zeros((rows * th, cols * tw), np.uint8)
        for k, b in enumerate(take):
            r, c = divmod(k, cols)
            img[r * th:(r + 1) * th, c * tw:(c + 1) * tw] = cv2.resize(
                b, (tw, th), interpolation=cv2.INTER_LINEAR)
        used = -(-len(take) // cols)  # rows holding a body
        out.append(img[:used * th, :min(len(take), cols) * tw])
    return out


def people_copy(data: Path, out: Path, *, seed: int) -> str:
    """Write ``out`` (``val/det_people``): the images and boxes of ``val/det`` as they are, and
    face-free images of the held-out bodies (``val/people.npz``; :func:`people_tiles`) as
    ``people/people_NNNN.png``; its image lists. Returns a hash of the written tiles."""
    det = data / "val" / "det"
    names = (det / "images.txt").read_text().split()
    _copy_images(det, out, names)
    bodies = np.load(data / "val" / "people.npz")["images"]
    digest = hashlib.sha256()
    added = []
    (out / "people").mkdir(parents=True, exist_ok=True)
    for k, img in enumerate(people_tiles(bodies, np.random.default_rng([seed, 12]))):
        name = f"people/people_{k:04d}.png"
        cv2.imwrite(str(out / name), img)
        digest.update(img.tobytes())
        added.append(name)
    for lst in ("boxes.csv", "nrc.txt", "scenes.txt", "empty.txt"):
        if (det / lst).is_file():
            _write_text(out / lst, (det / lst).read_text())
    _write_text(out / "people.txt", "\n".join(added) + "\n")
    _write_text(out / "images.txt", "\n".join(names + added) + "\n")
    return digest.hexdigest()[:16]


def _view_copy(det: Path, out: Path, change, *, seed: int, tag: int, moves_boxes: bool) -> str:
    """Write ``out``: every image of the detection set ``det`` through ``change(gray, boxes,
    rng) -> (gray, boxes)`` (seeded per image by ``[seed, tag, index]``) and ``det``'s image
    lists; its boxes as moved by ``change`` when ``moves_boxes``, else ``det``'s file as it is.
    Returns a hash of the written images (and moved boxes)."""
    names = (det / "images.txt").read_text().split()
    by_image: dict[str, list[list[int]]] = {}
    for r in (det / "boxes.csv").read_text().split()[1:]:
        name, *box = r.split(",")
        by_image.setdefault(name, []).append([int(v) for v in box[:4]])
    digest = hashlib.sha256()
    lines = ["image,x,y,w,h"]
    for i, name in enumerate(names):
        g = cv2.imread(str(det / name), cv2.IMREAD_GRAYSCALE)
        boxes = np.array(by_image.get(name, []), np.int64).reshape(-1, 4)
        d, moved = change(g, boxes, np.random.default_rng([seed, tag, i]))
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(out / name), d)
        digest.update(d.tobytes())
        if moves_boxes:
            lines += [f"{name},{x},{y},{bw},{bh}" for x, y, bw, bh in moved.tolist()]
            digest.update(moved.tobytes())
    lists = ["images.txt", "nrc.txt", "scenes.txt", "empty.txt"]
    if moves_boxes:
        _write_text(out / "boxes.csv", "\n".join(lines) + "\n")
    else:
        lists.append("boxes.csv")
    for lst in lists:
        if (det / lst).is_file():
            _write_text(out / lst, (det / lst).read_text())
    return digest.hexdigest()[:16]


def scan_copy(det: Path, out: Path, *, seed: int) -> str:
    """Write ``out`` (``val/det_scan``): every image of the detection set ``det`` through
    :func:`scan_like` (seeded per image by its index), with ``det``'s lists and boxes. Returns
    a hash of the written images."""
    return _view_copy(det, out, lambda g, b, rng: (scan_like(g, rng), b), seed=seed, tag=8,
                      moves_boxes=False)


def relight(gray: np.ndarray, box, rng: np.random.Generator) -> np.ndarray:
    """``gray`` (H, W) uint8 with the face at ``box`` (x, y, w, h) lit from one side: a
    multiplicative field ``exp(a * tanh(2 u) * g)`` where ``u`` runs across the face along a
    random direction (in box sides), ``g`` is a Gaussian bump of 1.2 box sides around the face,
    so the light fades into the scene, and ``a`` is 0.35–0.8 (one side up to 2.2× brighter, the
    other down to 0.45×; bright skin saturates as it does in photographs).

    >>> g = np.full((40, 40), 100, np.uint8)
    >>> lit = relight(g, (10, 10, 20, 20), np.random.default_rng(0))
    >>> bool(lit[20, 10:30].std() > 5)
    True
    """
    h, w = gray.shape
    x0, y0, bw, bh = (float(v) for v in box)
    side = max(bw, bh)
    cx, cy = x0 + bw / 2, y0 + bh / 2
    ang, a = rng.uniform(0, 2 * np.pi), rng.uniform(0.35, 0.8)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    dx, dy = (xx - cx) / side, (yy - cy) / side
    u = dx * np.cos(ang) + dy * np.sin(ang)
    bump = np.exp(-(dx * dx + dy * dy) / (2 * 1.2 ** 2))
    field = np.exp(a * np.tanh(2 * u) * bump)
    return np.clip(np.rint(gray.astype(np.float32) * field), 0, 255).astype(np.uint8)


def turn(gray: np.ndarray, centre: tuple[float, float], angle: float) -> np.ndarray:
    """``gray`` (H, W) uint8 turned in plane by ``angle`` degrees (counter-clockwise) about
    ``centre`` (x, y), same size, edges replicated (no mirrored copy of a face at the border).

    >>> turn(np.full((8, 10), 7, np.uint8), (5.0, 4.0), 15.0).shape
    (8, 10)
    """
    rot = cv2.getRotationMatrix2D(centre, angle, 1.0)
    return cv2.warpAffine(gray, rot, gray.shape[::-1], flags=cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REPLICATE)


def vary_like(gray: np.ndarray, boxes: np.ndarray, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray]:
    """``gray`` (H, W) uint8 and its face ``boxes`` (n, 4) varied in pose and lighting as faces in
    other photographs are: each face lit from one side (:func:`relight`, probability 0.7), then
    the whole image turned in plane by 5–18° (probability 0.7; edges replicated; the angle halved
    until every turned box stays inside the image). Boxes keep their size and follow their
    centres, as upright ground-truth boxes of tilted faces do. Returns the image and its boxes.

    >>> g = np.full((60, 80), 128, np.uint8)
    >>> out, b = vary_like(g, np.array([[20, 15, 30, 30]]), np.random.default_rng(1))
    >>> out.shape, b.shape
    ((60, 80), (1, 4))
    """
    h, w = gray.shape
    g = gray
    for box in boxes:
        if rng.random() < 0.7:
            g = relight(g, box, rng)
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    if rng.random() < 0.7:
        angle = rng.uniform(5.0, 18.0) * rng.choice([-1.0, 1.0])
        centres = boxes[:, :2] + boxes[:, 2:] / 2
        for _ in range(6):
            rot = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0)
            moved = centres @ rot[:, :2].T + rot[:, 2]
            new = np.column_stack([moved - boxes[:, 2:] / 2, boxes[:, 2:]])
            inside = ((new[:, 0] >= 0) & (new[:, 1] >= 0) & (new[:, 0] + new[:, 2] <= w)
                      & (new[:, 1] + new[:, 3] <= h))
            if inside.all():
                g = turn(g, (w / 2, h / 2), angle)
                boxes = new
                break
            angle /= 2
    return g, np.rint(boxes).astype(np.int64)


def vary_copy(det: Path, out: Path, *, seed: int) -> str:
    """Write ``out`` (``val/det_vary``): every image of the detection set ``det`` through
    :func:`vary_like` (seeded per image by its index) with its moved boxes, and ``det``'s image
    lists. Returns a hash of the written images and boxes."""
    return _view_copy(det, out, vary_like, seed=seed, tag=9, moves_boxes=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--out", default=str(DEFAULT_DATA),
                    help="output folder (outside the repository; default: $VJBOOST_FACE_DATA or "
                         "data/faces beside the repository)")
    ap.add_argument("--quick", action="store_true", help="subsets of every source (< 1 min)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", type=int, default=32, help="window side in pixels")
    ap.add_argument("--box-frac", type=float, default=0.75, help="target box side / window side")
    ap.add_argument("--feather", type=float, default=None,
                    help="share of a pasted window's side blended into the scene at each border "
                         "(default: the whole margin around the target box)")
    ap.add_argument("--val-frac", type=float, default=0.12, help="held-out share of crop groups")
    ap.add_argument("--val-persons", type=int, default=2, help="NRC-IIT persons held out")
    ap.add_argument("--bg-val-frac", type=float, default=0.15, help="held-out backgrounds")
    ap.add_argument("--scenes", type=int, default=300, help="synthetic validation scenes")
    ap.add_argument("--empty-scenes", type=int, default=150, help="face-free validation scenes")
    ap.add_argument("--crowd-scenes", type=int, default=150,
                    help="validation scenes of faces in rows (val/det_crowd)")
    ap.add_argument("--frame-step", type=int, default=2, help="teacher runs on every k-th frame")
    ap.add_argument("--teacher-min-score", type=float, default=0.5, help="dlib score to keep")
    ap.add_argument("--nrc-extra", default="",
                    help="teacher outcomes besides agreed kept as training positives "
                         "(training persons only): low_score,dlib_only")
    ap.add_argument("--dup-corr", type=float, default=0.9,
                    help="near-duplicates: crops / frames of a clip correlated at least this much")
    ap.add_argument("--scan-only", action="store_true",
                    help="only (re)write val/det_scan from an existing val/det")
    ap.add_argument("--vary-only", action="store_true",
                    help="only (re)write val/det_vary from an existing val/det")
    ap.add_argument("--crowd-only", action="store_true",
                    help="only (re)write val/det_crowd from an existing build")
    ap.add_argument("--people-only", action="store_true",
                    help="only (re)write the INRIA bodies and val/det_people in an existing build")
    ap.add_argument("--heads-only", action="store_true",
                    help="only (re)write val/det_heads in an existing build (its teacher again)")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    if REPO in out.parents or out == REPO:
        sys.exit(f"face_data: --out {out} is inside the repository; write data elsewhere")
    only = [k for k in ("scan", "vary", "crowd", "people", "heads")
            if getattr(args, f"{k}_only")]
    if only:  # one view (re)written in an existing build
        flag, det, dst = f"--{only[0]}-only", out / "val" / "det", out / "val" / f"det_{only[0]}"
        if not (det / "images.txt").is_file():
            sys.exit(f"face_data: {flag} needs {det} (run face_data.py first)")
        extra = {}
        if only[0] == "scan":
            h = scan_copy(det, dst, seed=args.seed)
        elif only[0] == "vary":
            h = vary_copy(det, dst, seed=args.seed)
        elif only[0] == "crowd":  # blended as the build's scenes were
            built = json.loads((out / "manifest.json").read_text())["params"]
            h = crowd_copy(out, dst, seed=args.seed, scenes=args.crowd_scenes,
                           scene_max_side=built["scene_max_side"],
                           feather=blend_share(built["feather"], built["box_frac"]))
        elif only[0] == "heads":
            h, extra["frames"] = heads_view(out)
        else:
            if not (SHARED / "data" / "inria").is_dir():
                sys.exit(f"face_data: {flag} needs {SHARED / 'data' / 'inria'}")
            extra["people"] = people(out, seed=args.seed)
            h = people_copy(out, dst, seed=args.seed)
        print("RESULT " + json.dumps({"out": str(dst), "hash": h, **extra}))
        return 0
    if args.feather is not None and not 0 < args.feather <= (1 - args.box_frac) / 2:
        sys.exit(f"face_data: --feather {args.feather} must lie in (0, (1 - box_frac) / 2]")
    extra = tuple(x for x in args.nrc_extra.split(",") if x)
    check_nrc_extra(extra)  # before the build's first minute, not after it
    kw = dict(seed=args.seed, size=args.size, box_frac=args.box_frac, feather=args.feather,
              val_frac=args.val_frac,
              val_persons=args.val_persons, bg_val_frac=args.bg_val_frac,
              teacher_min_score=args.teacher_min_score, dup_corr=args.dup_corr,
              nrc_extra=extra)
    if args.quick:
        p = Params.quick(out, **kw)
    else:
        p = Params(out=out, scenes=args.scenes, empty_scenes=args.empty_scenes,
                   crowd_scenes=args.crowd_scenes, frame_step=args.frame_step, **kw)
    m = build(p)
    print(summary_line(m))
    print(f"manifest: {out / 'manifest.json'}; train with --pos-crop "
          + ",".join(f"{v:g}" for v in m["pos_crop"]))
    print("RESULT " + json.dumps({
        "quick": args.quick, "out": str(out), "counts": m["counts"],
        "target_in_cbcl": m["target_box"]["cbcl_crop_fractions"],
        "target_rel_ruler": {k: v["target_rel_ruler"] for k, v in m["framing"]["rulers"].items()},
        "model_check": m["model_check"], "padded_mean": m["padded_mean"],
        "teacher": m["nrc"]["teacher"], "val_det": m["val_det"],
        "backgrounds": m["backgrounds"], "timing": m["timing"], "hashes": m["hashes"]}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
