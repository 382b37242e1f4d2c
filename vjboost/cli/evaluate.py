"""``vjeval``: evaluate one or more cascades on an annotated image set.

For every model the raw windows of every image are computed once; grouping them with each
``min_neighbors`` value gives the detection-rate / false-positive curve. Prints a table, writes
``eval.json`` and ``curve.png`` (all models on one plot) to the output folder.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from .._io import atomic_write, save_png
from ..cascade.shipped import ModelNotFound, resolve_model
from ..io import AnnotationError, ImageReadError, read_annotations, read_bg_list, read_image

__all__ = ["main", "resolve_model_path"]

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm", ".tif", ".tiff", ".webp")


def resolve_model_path(spec: str) -> str:
    """A model path, ``vjboost:NAME`` (shipped in ``models/``) or ``opencv:NAME`` (OpenCV's)."""
    try:
        return resolve_model(spec)
    except ModelNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="--model") from None


def _image_list(images: str | None, annotations: dict) -> list[str]:
    if images is None:
        return list(annotations)
    p = Path(images)
    if p.is_dir():
        files = sorted(
            str(f.resolve()) for f in p.rglob("*") if f.suffix.lower() in _IMAGE_SUFFIXES
        )
        if not files:
            raise click.BadParameter(f"{p}: no image files in this folder", param_hint="--images")
        return files
    try:
        return read_bg_list(p)
    except AnnotationError as exc:
        raise click.BadParameter(str(exc), param_hint="--images") from None


def _plot(curves: dict, path: Path, iou: float, mark: int, n_images: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..eval.plot import plot_neighbors_curves

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    plot_neighbors_curves(ax, curves, iou=iou, mark=mark, n_images=n_images)
    ax.set_title(f"min_neighbors sweep (circle: min_neighbors {mark})")
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("annotations", type=click.Path(dir_okay=False))
@click.option("--model", "-m", "models", multiple=True, required=True,
              help="Cascade: vjboost JSON or OpenCV XML, vjboost:NAME for a cascade shipped in "
                   "models/ (vjboost:frontalface), or opencv:NAME for one shipped with OpenCV "
                   "(e.g. opencv:haarcascade_frontalface_default). Repeatable.")
@click.option("--label", "labels", multiple=True, help="Legend name per --model (in order).")
@click.option("--images", help="Image list file (one path per line, relative to the list) or a "
                               "folder; default: the annotated images. Images without boxes "
                               "count: every detection there is a false positive.")
@click.option("--scale-factor", "-s", type=float, default=1.1, show_default=True)
@click.option("--min-size", type=click.IntRange(min=0), default=0, show_default=True,
              help="Smallest object side in pixels (0: the cascade's window).")
@click.option("--min-neighbors", "-n", type=click.IntRange(min=0), default=3, show_default=True,
              help="The operating point reported in the table.")
@click.option("--max-neighbors", type=click.IntRange(min=1), default=10, show_default=True,
              help="Sweep min_neighbors from 0 to this value for the curve.")
@click.option("--iou", type=click.FloatRange(0, 1, min_open=True), default=0.5, show_default=True,
              help="IoU for a detection to match a ground-truth box.")
@click.option("--threads", "-j", type=click.IntRange(min=0), default=0, show_default=True,
              help="Detector threads (0: all).")
@click.option("--output-dir", "-o", type=click.Path(file_okay=False), default="vjeval-out",
              show_default=True, help="Where eval.json and curve.png go (created).")
@click.option("--protocol", type=click.Choice(["boxes", "uiuc"]), default="boxes",
              show_default=True,
              help="boxes: ANNOTATIONS are boxes matched by IoU. uiuc: ANNOTATIONS is a UIUC car "
                   "trueLocations.txt (window corner in the 25 %% ellipse, one detection per car, "
                   "recall at the equal-error rate; detections ranked by group size) and "
                   "--images its TestImages folder.")
def main(annotations, models, labels, images, scale_factor, min_size, min_neighbors,
         max_neighbors, iou, threads, output_dir, protocol) -> None:
    """Evaluate cascades on ANNOTATIONS (info.dat, CSV with image,x,y,w,h, or JSON)."""
    if protocol == "uiuc":
        _main_uiuc(annotations, models, labels, images, scale_factor, min_size, min_neighbors,
                   threads, output_dir)
        return
    from ..cascade.detector import CascadeDetector, to_gray
    from ..cascade.model_io import load_model
    from ..cascade.opencv_xml import CascadeFormatError
    from ..eval.sweep import sweep_min_neighbors

    if labels and len(labels) != len(models):
        raise click.BadParameter(f"{len(labels)} labels for {len(models)} models",
                                 param_hint="--label")
    try:
        gt = read_annotations(annotations)
    except AnnotationError as exc:
        raise click.BadParameter(str(exc), param_hint="ANNOTATIONS") from None
    paths = _image_list(images, gt)
    loaded = []
    for k, spec in enumerate(models):
        try:
            model = load_model(resolve_model_path(spec))
            det = CascadeDetector(model, scale_factor=scale_factor, min_neighbors=0,
                                  grouping="none", min_size=min_size or None,
                                  threads=threads or None)
        except (CascadeFormatError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--model") from None
        loaded.append((labels[k] if labels else Path(spec.split(":")[-1]).stem, spec, det))

    grays, sizes, failed = {}, {}, []
    for p in paths:
        try:
            img = read_image(p)
        except ImageReadError as exc:
            failed.append(str(exc))
            continue
        grays[p] = to_gray(img)
        sizes[p] = (img.shape[1], img.shape[0])
    for msg in failed[:5]:
        click.echo(f"vjeval: skipped {msg}", err=True)
    if not grays:
        click.echo("vjeval: no image could be read", err=True)
        sys.exit(1)
    gt = {k: v for k, v in gt.items() if k in grays}
    n_gt = sum(len(v) for v in gt.values())
    click.echo(f"vjeval: {len(grays)} image(s), {n_gt} annotated object(s), "
               f"{len(failed)} unreadable", err=True)

    results, curves = [], {}
    for label, spec, det in loaded:
        t0 = time.perf_counter()
        raw = {p: det.raw_windows(g) for p, g in grays.items()}
        seconds = time.perf_counter() - t0
        curve = sweep_min_neighbors(raw, gt, thresholds=range(0, max_neighbors + 1),
                                    image_sizes=sizes, iou_threshold=iou)
        curves[label] = curve
        at = curve.at(min_neighbors) if min_neighbors <= max_neighbors else None
        if at is None:
            at = sweep_min_neighbors(raw, gt, thresholds=[min_neighbors], image_sizes=sizes,
                                     iou_threshold=iou).evaluations[0]
        results.append({
            "label": label, "model": spec, "detect_seconds": round(seconds, 3),
            "at_min_neighbors": {"min_neighbors": min_neighbors, **at.as_dict()},
            "curve": {"min_neighbors": curve.min_neighbors.tolist(),
                      "false_positives": curve.false_positives.tolist(),
                      "detection_rate": curve.detection_rate.tolist()},
        })
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = {"annotations": str(annotations), "n_images": len(grays), "n_objects": n_gt,
               "iou_threshold": iou, "scale_factor": scale_factor, "models": results}
    atomic_write(out / "eval.json", json.dumps(summary, indent=2))
    _plot(curves, out / "curve.png", iou, min_neighbors, len(grays))

    click.echo(f"{'model':<34} {'det.rate':>8} {'FP':>5} {'precision':>9} {'AP':>6} {'sec':>7}")
    for r in results:
        a = r["at_min_neighbors"]
        click.echo(f"{r['label'][:34]:<34} {a['detection_rate']:>8.3f} {a['false_positives']:>5d} "
                   f"{a['precision']:>9.3f} {a['average_precision']:>6.3f} "
                   f"{r['detect_seconds']:>7.2f}")
    click.echo(f"(min_neighbors {min_neighbors}, IoU >= {iou:g}); wrote {out / 'eval.json'} "
               f"and {out / 'curve.png'}")


def _main_uiuc(annotations, models, labels, images, scale_factor, min_size, min_neighbors,
               threads, output_dir) -> None:
    """``--protocol uiuc``: :func:`vjboost.eval.uiuc.run_uiuc` per model, a table, JSON, plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..cascade.model_io import load_model
    from ..cascade.opencv_xml import CascadeFormatError
    from ..eval.uiuc import plot_uiuc_curves, run_uiuc
    from ..io.uiuc import write_uiuc_locations

    if images is None:
        raise click.BadParameter("--protocol uiuc needs the test images (e.g. TestImages/)",
                                 param_hint="--images")
    paths = _image_list(images, {})
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    evs, rows = {}, []
    for k, spec in enumerate(models):
        label = labels[k] if labels else Path(spec.split(":")[-1]).stem
        try:
            model = load_model(resolve_model_path(spec))
            ev, info = run_uiuc(model, annotations, paths, scale_factor=scale_factor,
                                min_size=min_size or None, threads=threads or None)
        except (CascadeFormatError, AnnotationError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        evs[label] = ev
        op = ev.at_threshold(min_neighbors + 1)  # groups of more than min_neighbors windows
        rows.append({"label": label, "model": spec, **ev.as_dict(), "at_min_neighbors": {
            "min_neighbors": min_neighbors, **op}, "detect_seconds": info["detect_seconds"]})
        write_uiuc_locations(out / f"foundLocations-{label}.txt", info["locations"])
    atomic_write(out / "eval.json", json.dumps({"protocol": "uiuc", "truth": str(annotations),
                                                "scale_factor": scale_factor, "models": rows},
                                               indent=1))
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    plot_uiuc_curves(ax, evs, title="UIUC protocol: recall against false positives")
    fig.tight_layout()
    save_png(fig, out / "curve.png")
    plt.close(fig)
    click.echo(f"{'model':<28} {'EER recall':>10} {'recall':>7} {'precision':>9} {'F':>6} "
               f"{'FP':>5} {'sec':>7}")
    for r in rows:
        a = r["at_min_neighbors"]
        click.echo(f"{r['label'][:28]:<28} {r['eer_recall']:>10.3f} {a['recall']:>7.3f} "
                   f"{a['precision']:>9.3f} {a['f_measure']:>6.3f} {a['false_positives']:>5d} "
                   f"{r['detect_seconds']:>7.2f}")
    n = rows[0]["n_objects"] if rows else 0
    click.echo(f"({n} cars; recall/precision/F at min_neighbors {min_neighbors}; EER recall "
               f"over all group sizes); wrote {out / 'eval.json'} and {out / 'curve.png'}")


if __name__ == "__main__":
    main()
