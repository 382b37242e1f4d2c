"""Benchmark: vjboost's cascade detector against cv2.CascadeClassifier (same XML, same images).

Images: the CMU+MIT frontal face test set in ../shared/data/cmu-mit when present (test + newtest),
else a handful of scikit-image sample images. Cascades: OpenCV's haarcascade_frontalface_default /
alt / alt2, scikit-image's LBP face cascade (its misspelled ``featureParams`` tag fixed for
OpenCV) and vjboost's shipped Haar cascade ``vjboost/models/frontalface_haar.xml`` (depth-2
trees). Settings as in
docs/anchors.md: minSize = the cascade window, minNeighbors 3.

For every cascade, scale factor and thread count (1 and 2) both detectors run on the whole image
set in the same process, interleaved, ``--repeats`` times; the median time is reported as
milliseconds per megapixel, with the ratio ours / OpenCV (< 1 means faster). Also checked: the
share of images whose detections are identical (as multisets). scikit-image's
``skimage.feature.Cascade`` is timed on the LBP cascade for reference.

The time to a first detection (``vjdetect`` with an empty numba cache, then warm, next to a
``cv2`` process) is ``tools/bench_first_run.py``.

Prints a table and ends with one line ``RESULT {json}``. ``--quick`` runs in well under a minute
(once the kernels are cached).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
from _cli import description

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))


def load_images(quick: bool) -> tuple[list[np.ndarray], str]:
    folder = SHARED / "data" / "cmu-mit"
    files = sorted((folder / "test").glob("*.png")) + sorted((folder / "newtest").glob("*.png"))
    if files:
        if quick:
            files = files[::8]
        imgs = [cv2.imread(str(f), cv2.IMREAD_GRAYSCALE) for f in files]
        return [i for i in imgs if i is not None], f"CMU-MIT ({folder})"
    import skimage.data as skd

    names = ["astronaut", "camera", "coffee", "chelsea", "rocket", "immunohistochemistry",
             "page", "coins", "text", "motorcycle_left"]
    if quick:
        names = names[:4]
    imgs = []
    for n in names:
        try:
            im = getattr(skd, n)()
        except Exception:  # some samples need a download
            continue
        if im.ndim == 3:
            im = cv2.cvtColor(im[:, :, :3], cv2.COLOR_RGB2GRAY)
        imgs.append(np.ascontiguousarray(im))
    return imgs, "scikit-image sample images"


def cascades(tmpdir: Path) -> list[tuple[str, Path]]:
    out = []
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if base:
        for n in ("haarcascade_frontalface_default", "haarcascade_frontalface_alt",
                  "haarcascade_frontalface_alt2"):
            p = Path(base) / f"{n}.xml"
            if p.is_file():
                out.append((n, p))
    import skimage.data as skd

    src = Path(skd.lbp_frontal_face_cascade_filename()).read_text()
    lbp = tmpdir / "lbpcascade_frontalface.xml"
    lbp.write_text(src.replace("featuhreParams", "featureParams"))
    out.append(("lbpcascade_frontalface(skimage)", lbp))
    from vjboost.cascade.shipped import MODELS_DIR

    # the shipped Haar cascade: depth-2 trees, the detector's branch-free tree kernel
    out.append(("vjboost frontalface_haar (trees)", MODELS_DIR / "frontalface_haar.xml"))
    return out


def _ms(b) -> Counter:
    return Counter(map(tuple, np.asarray(b).reshape(-1, 4).tolist()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--quick", action="store_true", help="subset of images and settings (< 1 min)")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats (median)")
    ap.add_argument("--scale-factors", default=None, help="comma list, default 1.1,1.2")
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts")
    ap.add_argument("--no-skimage", action="store_true", help="skip skimage.feature.Cascade")
    args = ap.parse_args(argv)

    if not hasattr(cv2, "CascadeClassifier"):
        print("cv2 lacks CascadeClassifier: nothing to compare with")
        print("RESULT " + json.dumps({"error": "cv2.CascadeClassifier missing"}))
        return 1
    import numba

    from vjboost.cascade import CascadeDetector, read_opencv_xml

    repeats = args.repeats or (1 if args.quick else 3)
    sfs = [float(s) for s in (args.scale_factors or ("1.2" if args.quick else "1.1,1.2"))
           .split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    threads = [t for t in threads if t <= numba.config.NUMBA_NUM_THREADS]
    imgs, source = load_images(args.quick)
    mp = sum(i.size for i in imgs) / 1e6
    print(f"{len(imgs)} images, {mp:.2f} MP, from {source}; repeats={repeats}; "
          f"cv2 {cv2.__version__}, numba {numba.__version__}")
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="vjbench"))
    casc = cascades(tmp)
    if args.quick:
        casc = [c for c in casc if "default" in c[0] or "lbp" in c[0] or "vjboost" in c[0]]
    print(f"{'cascade':34s} {'sf':>4s} {'thr':>3s} {'ours ms/MP':>11s} {'cv2 ms/MP':>10s} "
          f"{'ratio':>6s} {'identical':>9s}")
    for name, path in casc:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = read_opencv_xml(path)
        cc = cv2.CascadeClassifier(str(path))
        win = (model.width, model.height)
        for sf in sfs:
            for th in threads:
                det = CascadeDetector(model, scale_factor=sf, min_neighbors=3, min_size=win,
                                      threads=th)
                det.detect(imgs[0])  # compile / load the kernels before timing
                cv2.setNumThreads(th)
                t_ours, t_cv = [], []
                same = 0
                for rep in range(repeats):
                    t0 = time.perf_counter()
                    ours = [det.detect(im) for im in imgs]
                    t_ours.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    ref = [cc.detectMultiScale(im, sf, 3, minSize=win) for im in imgs]
                    t_cv.append(time.perf_counter() - t0)
                    if rep == 0:
                        same = sum(_ms(a.boxes) == _ms(b) for a, b in zip(ours, ref,
                                                                         strict=True))
                a = 1000 * float(np.median(t_ours)) / mp
                b = 1000 * float(np.median(t_cv)) / mp
                rows.append({"cascade": name, "scale_factor": sf, "threads": th,
                             "ours_ms_per_mp": round(a, 1), "opencv_ms_per_mp": round(b, 1),
                             "ratio": round(a / b, 3),
                             "identical_images": f"{same}/{len(imgs)}"})
                print(f"{name:34s} {sf:4.2f} {th:3d} {a:11.1f} {b:10.1f} {a / b:6.2f} "
                      f"{same:4d}/{len(imgs)}")
    cv2.setNumThreads(-1)
    sk = None
    if not args.no_skimage:
        from skimage.feature import Cascade

        lbp = next(p for n, p in casc if "lbp" in n)
        sk_imgs = imgs[: max(2, len(imgs) // (8 if args.quick else 4))]
        sk_mp = sum(i.size for i in sk_imgs) / 1e6
        skc = Cascade(str(lbp))
        cc = cv2.CascadeClassifier(str(lbp))
        sf = sfs[0]
        t0 = time.perf_counter()
        for im in sk_imgs:
            skc.detect_multi_scale(im, scale_factor=sf, step_ratio=1, min_size=(24, 24),
                                   max_size=im.shape[::-1])
        t_sk = time.perf_counter() - t0
        cv2.setNumThreads(1)
        t0 = time.perf_counter()
        for im in sk_imgs:
            cc.detectMultiScale(im, sf, 3, minSize=(24, 24))
        t_cv = time.perf_counter() - t0
        cv2.setNumThreads(-1)
        sk = {"images": len(sk_imgs), "scale_factor": sf,
              "skimage_ms_per_mp": round(1000 * t_sk / sk_mp, 1),
              "opencv_1t_ms_per_mp": round(1000 * t_cv / sk_mp, 1),
              "skimage_over_opencv": round(t_sk / t_cv, 2)}
        ours_lbp = [r for r in rows if "lbp" in r["cascade"] and r["threads"] == 1
                    and r["scale_factor"] == sf]
        if ours_lbp:
            sk["ours_1t_ms_per_mp"] = ours_lbp[0]["ours_ms_per_mp"]
        print(f"skimage.feature.Cascade (LBP, step_ratio=1, {len(sk_imgs)} images): "
              f"{sk['skimage_ms_per_mp']:.1f} ms/MP = {sk['skimage_over_opencv']:.1f}x OpenCV "
              "single-threaded")
    ratios = [r["ratio"] for r in rows]
    result = {
        "images": len(imgs), "megapixels": round(mp, 2), "source": source,
        "repeats": repeats, "rows": rows,
        "median_ratio": round(float(np.median(ratios)), 3) if ratios else None,
        "max_ratio": round(float(np.max(ratios)), 3) if ratios else None,
        "all_identical": all(r["identical_images"].split("/")[0]
                             == r["identical_images"].split("/")[1] for r in rows),
        "skimage": sk,
    }
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
