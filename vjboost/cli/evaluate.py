"""``vjeval``: evaluate cascades, or saved detections, on an annotated image set.

For every model the raw windows of every image are computed once and partitioned once into
OpenCV's groups; selecting the groups at each ``min_neighbors`` value gives the detection-rate /
false-positive curve (the detections ``vjdetect -n N`` would return). Saved detections in COCO's
results format (``--detections``) are scored the same way. Prints a table, writes ``eval.json``
and ``curve.png`` (all models on one plot) to the output folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .._errors import VJBoostError
from .._io import OutputFolder, atomic_write, check_outputs_apart
from .._jit import compile_notice
from .._limits import MAX_SWEEP_NEIGHBORS, Limits
from ..boxes import DETECTION_SCORES
from ..cascade.shipped import ModelNotFound, resolve_model
from ..io import (
    FORMATS,
    AnnotationError,
    read_annotations,
)
from ._command import EXIT_SOME_SKIPPED, MAX_SKIPPED_SHOWN, SCALE_FACTOR, Command, FiniteRange
from ._operating import (
    BORDER_CHOICES,
    operating_neighbors,
    parse_border,
    parse_border_margin,
    parse_min_neighbors,
    parse_min_score,
)

__all__ = ["main", "resolve_model_path"]


FRAMING_HELP = (
    "IoU for a detection to match a ground-truth box. Boxes of a detector are framed like its "
    "training crops: when they are framed differently from the annotation (e.g. a cascade "
    "trained on tight face crops against forehead-to-chin boxes), no IoU threshold is fair; "
    "train with vjtrain --pos-crop to frame positives like the test set, or compare at 0.3 "
    "(the README's figures) rather than PASCAL's 0.5.")


def resolve_model_path(spec: str) -> str:
    """A model path, ``vjboost:NAME`` (shipped with vjboost) or ``opencv:NAME`` (OpenCV's)."""
    try:
        return resolve_model(spec)
    except ModelNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="--model") from None


def _hold(output_dir: str) -> Path:
    """The output folder, held by this run (a lock file) until the command ends."""
    folder = OutputFolder(output_dir, what="evaluation").acquire()
    click.get_current_context().call_on_close(folder.release)
    return folder.path


def _check_apart(out: Path, names: list[str], annotations: str, models, paths,
                 detection_files=()) -> None:
    """Refuse, before any work, files of the output folder that are inputs (the annotations,
    a model, a --detections file, an image): writing them would destroy them."""
    check_outputs_apart([("-o/--output-dir", out / n) for n in names], inputs=[
        ("ANNOTATIONS file", annotations),
        *(("--model file", resolve_model_path(spec)) for spec in models),
        *(("--detections file", d) for d in detection_files),
        *(("input image", p) for p in paths)])


def _image_list(images: str | None, annotations) -> list[str]:
    from ..eval.run import evaluation_paths

    try:
        return evaluation_paths(annotations, images, what="--images source")
    except VJBoostError as exc:
        raise click.BadParameter(str(exc), param_hint="--images") from None


@click.command(cls=Command, error_exit_code=1,
               context_settings={"help_option_names": ["-h", "--help"],
                                 "max_content_width": 100})
@click.argument("annotations", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Annotation format (default: detected from the file or folder).")
@click.option("--category", default=None,
              help="Object class to evaluate (name, or id for COCO/YOLO); needed when the "
                   "annotations hold several.")
@click.option("--image-root", default=None, type=click.Path(exists=True, file_okay=False),
              help="Folder the annotation's image names are relative to (default: see "
                   "vjboost.io.read_annotations).")
@click.option("--model", "-m", "models", multiple=True,
              help="Cascade: vjboost JSON or OpenCV XML, vjboost:NAME for a cascade shipped "
                   "with vjboost (vjboost:frontalface), or opencv:NAME for one shipped with OpenCV "
                   "(e.g. opencv:haarcascade_frontalface_default). Repeatable.")
@click.option("--detections", "detection_files", multiple=True, type=click.Path(dir_okay=False),
              help="Saved detections to score instead of (or besides) running a model: COCO "
                   "results JSON ([{image_id, bbox, score}, ...]) or vjdetect --format coco "
                   "output. Repeatable.")
@click.option("--label", "labels", multiple=True,
              help="Legend name per --model, then per --detections (in order).")
@click.option("--images", help="Image list file (one path per line, relative to the list) or a "
                               "folder; default: the annotated images. Images without boxes "
                               "count: every detection there is a false positive.")
@click.option("--scale-factor", "-s", type=SCALE_FACTOR, default=1.1, show_default=True,
              help="Ratio between successive scales of the detection scan (> 1).")
@click.option("--min-size", type=click.IntRange(min=0), default=0, show_default=True,
              help="Smallest object side in pixels (0: the cascade's window).")
@click.option("--border", type=click.Choice(BORDER_CHOICES),
              default="model", show_default=True,
              help="Let the detection windows extend past the image edge by --border-margin of "
                   "their size (edge pixels repeated or mirrored: replicate, reflect), for "
                   "objects the edge cuts; none: inside the image; model: what each model "
                   "declares (reflect for vjboost:car_side).")
@click.option("--border-margin", default="model", show_default=True,
              help="Share of a window that may lie past the edge (with --border); model: what "
                   "each model declares, else 0.25.")
@click.option("--min-neighbors", "-n", default="auto", show_default=True,
              help="The operating point reported in the table; auto: each model's default "
                   "(as vjdetect runs it with nothing set: 1 for vjboost:frontalface, else "
                   "OpenCV's 3).")
@click.option("--score", type=click.Choice([*DETECTION_SCORES, "model", "auto"]),
              default="auto", show_default=True,
              help="How each model's detections are scored, hence ranked in the average "
                   "precision and in detection_rate_at_fp (as vjdetect --score; model: the "
                   "ranking the model declares; auto: each model's default, verified for "
                   "vjboost:frontalface, else best).")
@click.option("--min-score", default="auto", show_default=True,
              help="Drop each model's detections scored below this, at every point of the "
                   "curve (as vjdetect --min-score); none: keep them all (the whole curve); "
                   "auto: with --score auto, each model's default threshold (3.72 for "
                   "vjboost:frontalface), else none.")
@click.option("--max-neighbors", type=click.IntRange(1, MAX_SWEEP_NEIGHBORS), default=10,
              show_default=True,
              help=f"Sweep min_neighbors from 0 to this value for the curve (at most "
                   f"{MAX_SWEEP_NEIGHBORS}).")
@click.option("--iou", type=FiniteRange(0, 1, min_open=True), default=0.3, show_default=True,
              help=FRAMING_HELP)
@click.option("--threads", "-j", type=click.IntRange(min=0), default=0, show_default=True,
              help="Detector threads (0: all).")
@click.option("--max-pixels", type=click.IntRange(min=1), default=None,
              help="Largest image read, in pixels (default "
                   f"{Limits().max_image_pixels}, or VJBOOST_MAX_IMAGE_PIXELS); larger ones "
                   "are skipped.")
@click.option("--output-dir", "-o", type=click.Path(file_okay=False), default="vjeval-out",
              show_default=True, help="Where eval.json, curve.png and report.html go (created).")
@click.option("--progress/--no-progress", default=None,
              help="Progress line (default: when stderr is a terminal).")
@click.option("--report/--no-report", default=True, show_default=True,
              help="Also write report.html: the table, the curves and detections drawn on "
                   "sample images, in one self-contained page.")
@click.option("--report-samples", type=click.IntRange(min=0), default=6, show_default=True,
              help="Images whose detections the report draws, per model.")
@click.option("--protocol", type=click.Choice(["boxes", "uiuc"]), default="boxes",
              show_default=True,
              help="boxes: ANNOTATIONS are boxes matched by IoU. uiuc: ANNOTATIONS is a UIUC car "
                   "trueLocations.txt (window corner in the 25 % ellipse, one detection per car, "
                   "recall at the equal-error rate; detections ranked by group size, or with "
                   "--score by that score of the groups at min_neighbors) and --images its "
                   "TestImages folder.")
def main(annotations, fmt, category, image_root, models, detection_files, labels, images,
         scale_factor, min_size, border, border_margin, min_neighbors, score, min_score,
         max_neighbors, iou, threads, max_pixels, output_dir, progress, report, report_samples,
         protocol) -> None:
    """Evaluate cascades (--model) or saved detections (--detections) on ANNOTATIONS: an
    info.dat, CSV (image,x,y,w,h), JSON, COCO JSON, Pascal VOC XML file or folder, YOLO label
    folder, LabelMe JSON file or folder, or CVAT XML file. Ignore regions of the annotation
    (crowd, difficult, ignore) count neither as hits nor as false positives."""
    scan = {"border": parse_border(border), "border_margin": parse_border_margin(border_margin)}
    min_neighbors, min_score = parse_min_neighbors(min_neighbors), parse_min_score(min_score)
    with compile_notice():
        if protocol == "uiuc":
            if min_score not in ("auto", None):
                raise click.UsageError("--min-score: the UIUC protocol reads every threshold "
                                       "(recall at the equal-error rate); it applies to "
                                       "--protocol boxes")
            # the protocol's own ranking is the group size; any other --score ranks the
            # detector's groups at the reported min_neighbors
            scan["score"] = None if score in ("best", "auto") else score
            _main_uiuc(annotations, models, labels, images, scale_factor, min_size,
                       min_neighbors, threads, output_dir, scan)
            return
        scan["score"], scan["min_score"] = score, min_score
        try:
            _main(annotations, fmt, category, image_root, models, detection_files, labels,
                  images, scale_factor, min_size, min_neighbors, max_neighbors, iou, threads,
                  max_pixels, output_dir, progress, report, report_samples, scan)
        except VJBoostError as exc:
            raise click.ClickException(str(exc)) from None


def _run_names(models, detection_files, labels) -> list[str]:
    """Each model's and detection file's name in the results, the curves and the files they
    name: its ``--label``, else its file's stem; two runs of one name are refused (one would
    hide the other's results)."""
    n_runs = len(models) + len(detection_files)
    if labels and len(labels) != n_runs:
        raise click.BadParameter(f"{len(labels)} labels for {n_runs} models and detection "
                                 "files", param_hint="--label")
    names = list(labels) if labels else [Path(spec.split(":")[-1]).stem for spec in models] + [
        Path(path).stem for path in detection_files]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise click.BadParameter(f"two runs are named {twice[0]!r} (their results would be "
                                 "one): give each a --label", param_hint="--label")
    return names


def _main(annotations, fmt, category, image_root, models, detection_files, labels, images,
          scale_factor, min_size, min_neighbors, max_neighbors, iou, threads, max_pixels,
          output_dir, progress, report, report_samples, scan) -> None:
    from ..cascade.detector import CascadeDetector, default_operating
    from ..cascade.model_io import load_model
    from ..cascade.opencv_xml import CascadeFormatError
    from ..eval import evaluate_detections
    from ..eval.report import detection_samples, operating_points, write_evaluation_report
    from ..eval.run import (
        RATE_AT_FP,
        EvaluationSet,
        load_evaluation_set,
        sample_images,
        sweep_detector,
    )
    from ..io.formats import read_coco_results
    from ._progress import progress_line

    if not models and not detection_files:
        raise click.UsageError("give at least one --model or --detections")
    if not models and (scan["score"] != "auto" or scan["min_score"] != "auto"
                       or min_neighbors != "auto"):
        # detection files carry their own scores and are read whole: a model's settings given
        # without a model would otherwise be dropped without a word
        click.echo("vjeval: warning: --score, --min-score and -n apply to models (-m); "
                   "detection files are ranked by their own scores, every detection kept",
                   err=True)
    names = _run_names(models, detection_files, labels)
    out = _hold(output_dir)
    try:
        gt = read_annotations(annotations, format=fmt, category=category, images=image_root)
    except AnnotationError as exc:
        raise click.BadParameter(str(exc), param_hint="ANNOTATIONS") from None
    paths = _image_list(images, gt)
    _check_apart(out, ["eval.json", *(["curve.png"] if models else []),
                       *(["report.html"] if report else [])],
                 annotations, models, paths, detection_files)
    loaded = []
    for k, spec in enumerate(models):
        try:
            model = load_model(resolve_model_path(spec))  # its errors name the file
        except (CascadeFormatError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--model") from None
        try:
            kw = dict(scan)
            if kw["min_score"] == "auto":
                # the raw windows are grouped at every point of the curve: the model's default
                # threshold (with --score auto) applies at each, not only at its own grouping
                kw["min_score"] = default_operating(model)["min_score"] \
                    if kw["score"] == "auto" else None
            det = CascadeDetector(model, scale_factor=scale_factor, min_neighbors=0,
                                  grouping="none", min_size=min_size or None,
                                  threads=threads or None, **kw)
            at = operating_neighbors(model, min_neighbors)  # the table's operating point
        except (CascadeFormatError, ValueError) as exc:
            # several models may be given: say which one the settings do not fit
            raise click.BadParameter(f"{spec}: {exc}", param_hint="--model") from None
        loaded.append((names[k], spec, det, at))

    limits = Limits.from_env()
    if max_pixels is not None:
        limits = Limits(**{**limits.__dict__, "max_image_pixels": max_pixels})
    bar = progress_line(progress)
    if bar is not None:
        bar.start()
    try:
        if loaded:
            task = bar.add_task("reading images", total=len(paths)) if bar else None
            es = load_evaluation_set(gt, paths, limits=limits, progress=None if task is None
                                     else lambda p: bar.advance(task))
            if bar is not None:
                bar.remove_task(task)
        else:
            es = EvaluationSet(gt.restrict(paths), dict.fromkeys(paths), {})
        grays, failed = es.images, es.failed
        for msg in failed[:MAX_SKIPPED_SHOWN]:
            click.echo(f"vjeval: skipped {msg}", err=True)
        if len(failed) > MAX_SKIPPED_SHOWN:
            click.echo(f"vjeval: ... and {len(failed) - MAX_SKIPPED_SHOWN} more skipped "
                       "(listed in eval.json)", err=True)
        if not grays:
            click.echo("vjeval: no image could be read", err=True)
            sys.exit(1)
        lost = gt.n_objects - es.annotations.n_objects  # objects of the skipped images
        gt = es.annotations
        n_gt = gt.n_objects
        click.echo(f"vjeval: {len(grays)} image(s), {n_gt} annotated object(s), "
                   f"{len(failed)} unreadable", err=True)
        results, curves, samples = [], {}, {}
        drawn = sample_images(gt, list(grays), report_samples) if report else []
        for label, spec, det, at in loaded:
            task = bar.add_task(f"{label}: detecting and grouping", total=len(grays)) \
                if bar else None

            def advance(n_raw, label=label, task=task):
                """Advance the progress bar by one image.

                Parameters
                ----------
                n_raw : int
                    Raw windows found so far.
                label : str
                    The model's label.
                task : TaskID or None
                    The model's progress task (None: no bar).
                """
                if task is not None:
                    bar.update(task, advance=1, description=f"{label}: detecting and "
                               f"grouping ({n_raw} raw windows)")

            ts = sorted(set(range(0, max_neighbors + 1)) | {at})
            run = sweep_detector(det, es, thresholds=ts, iou_threshold=iou, keep=drawn,
                                 progress=advance)
            if task is not None:
                bar.remove_task(task)
            curve = run.curve
            # the sweep 0..--max-neighbors, and the operating point even past it (-n 12 with
            # the default sweep to 10), so that the plot circles what the table reports
            keep = (curve.min_neighbors <= max_neighbors) | (curve.min_neighbors == at)
            curves[label] = type(curve)(curve.min_neighbors[keep], curve.false_positives[keep],
                                        curve.detection_rate[keep],
                                        [e for e, k in zip(curve.evaluations, keep,
                                                           strict=True) if k])
            run.curve = curves[label]
            results.append({"label": label, "model": spec, "score": det.score,
                            "min_score": det.min_score, **run.as_dict(at)})
            if drawn:
                samples[label] = detection_samples(run, es, min_neighbors=at,
                                                   iou_threshold=iou)
        for k, path in enumerate(detection_files):
            label = names[len(models) + k]
            dets = read_coco_results(path, gt, category=category)
            dets = {p: dets.get(p, (None, None)) for p in grays}
            dets = {p: v if v[0] is not None else ([], []) for p, v in dets.items()}
            ev = evaluate_detections(dets, gt, iou_threshold=iou, ignore=gt.ignore)
            results.append({"label": label, "detections": str(path),
                            "all_detections": ev.as_dict(),
                            "detection_rate_at_fp": {str(f): ev.detection_rate_at(f)
                                                     for f in RATE_AT_FP}})
    finally:
        if bar is not None:
            bar.stop()
    summary = {**es.as_dict(), "skipped": failed, "annotations": str(annotations),
               "iou_threshold": iou,
               "scale_factor": scale_factor, "min_neighbors": min_neighbors,
               "score": scan["score"], "min_score": scan["min_score"],
               "models": results}
    atomic_write(out / "eval.json", json.dumps(summary, indent=2))
    wrote = [out / "eval.json"]
    png = None
    if curves:
        import matplotlib.pyplot as plt

        from .._html import figure_png
        from ..eval.plot import curve_figure

        fig = curve_figure(curves, iou=iou, mark=operating_points(results),
                           n_images=len(grays))
        png = figure_png(fig)
        plt.close(fig)
        wrote.append(out / "curve.png")
        atomic_write(wrote[-1], png)
    if report:
        wrote.append(write_evaluation_report(out, summary, curves, samples, curve_png=png))

    click.echo(f"{'model':<34} {'det.rate':>8} {'FP':>5} {'precision':>9} {'AP':>6} {'sec':>7}")
    for r in results:
        a = r.get("at_min_neighbors") or r["all_detections"]
        sec = f"{r['detect_seconds'] + r['sweep_seconds']:>7.2f}" if "model" in r else "      -"
        click.echo(f"{r['label'][:34]:<34} {a['detection_rate']:>8.3f} {a['false_positives']:>5d} "
                   f"{a['precision']:>9.3f} {a['average_precision']:>6.3f} {sec}")
    parts = ([("each model at its default operating point" if min_neighbors == "auto"
               else f"models at min_neighbors {min_neighbors}")] if models else [])
    parts += ["detection files with every detection"] if detection_files else []
    click.echo(f"({', '.join(parts)}; IoU >= {iou:g}); wrote "
               f"{', '.join(str(p) for p in wrote)}")
    if failed:
        # as vjdetect: the others were scored, but the score lacks the skipped images' objects
        click.echo(f"vjeval: {len(failed)} image(s) skipped, their {lost} annotated object(s) "
                   "left out of the score: fix or remove them (exit status "
                   f"{EXIT_SOME_SKIPPED})", err=True)
        sys.exit(EXIT_SOME_SKIPPED)


def _main_uiuc(annotations, models, labels, images, scale_factor, min_size, min_neighbors,
               threads, output_dir, scan) -> None:
    """``--protocol uiuc``: :func:`vjboost.eval.uiuc.run_uiuc` per model, a table, JSON, plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .._io import save_png
    from ..cascade.model_io import load_model
    from ..cascade.opencv_xml import CascadeFormatError
    from ..eval.uiuc import plot_uiuc_curves, run_uiuc
    from ..io.uiuc import write_uiuc_locations

    if images is None:
        raise click.BadParameter("--protocol uiuc needs the test images (e.g. TestImages/)",
                                 param_hint="--images")
    if not models:
        raise click.BadParameter("--protocol uiuc needs a cascade to run", param_hint="--model")
    names = _run_names(models, (), labels)
    paths = _image_list(images, {})
    out = _hold(output_dir)
    _check_apart(out, ["eval.json", "curve.png", *(f"foundLocations-{n}.txt" for n in names)],
                 annotations, models, paths)
    evs, rows = {}, []
    for k, spec in enumerate(models):
        label = names[k]
        try:
            model = load_model(resolve_model_path(spec))
            at = operating_neighbors(model, min_neighbors)
            ranked = {} if scan["score"] is None else {"min_neighbors": at}
            ev, info = run_uiuc(model, annotations, paths, scale_factor=scale_factor,
                                min_size=min_size or None, threads=threads or None, **scan,
                                **ranked)
        except (CascadeFormatError, AnnotationError, VJBoostError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        evs[label] = ev
        # ranked by group size: the groups of more than min_neighbors windows; by a score:
        # every group (the detector grouped them at min_neighbors)
        op = ev.at_threshold(at + 1 if scan["score"] is None else -float("inf"))
        rows.append({"label": label, "model": spec, **ev.as_dict(), "at_min_neighbors": {
            "min_neighbors": at, **op}, "detect_seconds": info["detect_seconds"]})
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
    where = "each model's default" if min_neighbors == "auto" else min_neighbors
    over = ("all group sizes" if scan["score"] is None
            else f"the {scan['score']} score of the groups at min_neighbors {where}")
    click.echo(f"({n} cars; recall/precision/F at min_neighbors {where}; EER recall "
               f"over {over}); wrote {out / 'eval.json'} and {out / 'curve.png'}")


if __name__ == "__main__":
    main()
