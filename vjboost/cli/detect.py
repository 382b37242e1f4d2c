"""``vjdetect``: run a cascade on images, folders, globs, list files, videos and cameras.

Writes the detections as JSON lines (``source, frame, x, y, w, h, score, neighbors``) to stdout
or ``--save FILE``, or as COCO JSON, Pascal VOC XML or YOLO txt (``--format``), and with
``--output-dir`` annotated copies of the images and videos. Unreadable and oversized inputs are
skipped and counted; the exit status is 1 when nothing at all could be read, 3 when some inputs
were skipped or a video was cut short (the others were processed). Output paths are checked
before any detection runs.

Examples::

    vjdetect photo.jpg
    vjdetect --model cascade.xml --scale-factor 1.2 --min-size 40 photos/ -o annotated/
    vjdetect "shots/*.png" --save dets.jsonl
    vjdetect photos/ --format coco --save dets.json     # scored by vjeval --detections
    vjdetect photos/ --format voc --save voc_out/        # one XML per image
    vjdetect clip.avi -o out/            # annotated video out/clip_det.avi
    vjdetect 0 --max-frames 200          # camera 0
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import cv2
import numpy as np

from .._errors import InputError, LimitError, OutputError, VJBoostError
from .._io import atomic_path, atomic_write, check_output_path, check_outputs_apart
from .._jit import compile_notice
from .._limits import Limits, limit_error
from .._parallel import ExecutorError
from ..boxes import DETECTION_SCORES
from ..cascade.shipped import ModelNotFound, default_model, resolve_model
from ..io import (
    DETECTION_FORMATS,
    ImageReadError,
    Source,
    VideoFrames,
    expand_inputs,
    open_detection_writer,
    read_image,
)
from ._command import EXIT_SOME_SKIPPED, SCALE_FACTOR, Command, parse_size
from ._dask import dask_options, open_executor
from ._operating import (
    BORDER_CHOICES,
    parse_border,
    parse_border_margin,
    parse_min_neighbors,
    parse_min_score,
)

__all__ = ["EXIT_SOME_SKIPPED", "default_model_path", "main"]


@dataclass
class _Stats:
    read: int = 0
    frames: int = 0
    detections: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fail(self, source: str, exc: Exception | str) -> None:
        """Record a source that could not be processed.

        Parameters
        ----------
        source : str
            The input's name.
        exc : Exception or str
            The reason (a leading ``"<source>: "`` is dropped).
        """
        msg = str(exc)
        self.failed.append((source, msg.removeprefix(f"{source}: ")))


def default_model_path() -> str | None:
    """vjboost's shipped frontal-face cascade, else OpenCV's default one; None if neither."""
    return default_model()


def _min_max_size(min_size: str | None, max_size: str | None
                  ) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """``--min-size`` and ``--max-size`` parsed; a minimum above the maximum is refused (the
    detector, as OpenCV, would then scan the one scale nearest the minimum: objects larger than
    the maximum, or none, without a word)."""
    lo = None if min_size is None else parse_size(min_size, "--min-size")
    hi = None if max_size is None else parse_size(max_size, "--max-size")
    if lo is not None and hi is not None and min(hi) > 0 and (lo[0] > hi[0] or lo[1] > hi[1]):
        raise click.BadParameter(f"{min_size} is larger than --max-size {max_size}",
                                 param_hint="--min-size")
    return lo, hi


def _annotate(img_bgr: np.ndarray, det) -> np.ndarray:
    out = img_bgr.copy()
    thick = max(1, round(max(out.shape[:2]) / 400))
    for (x, y, w, h), s in zip(det.boxes, det.scores, strict=True):
        cv2.rectangle(out, (int(x), int(y)), (int(x + w - 1), int(y + h - 1)), (0, 255, 0), thick)
        cv2.putText(out, f"{s:.2f}", (int(x), max(int(y) - 3, 10)), cv2.FONT_HERSHEY_SIMPLEX,
                    0.4 * thick, (0, 255, 0), 1, cv2.LINE_AA)
    return out


def _out_path(out_dir: Path, source: str, suffix: str, used: set[str]) -> Path:
    stem = Path(source).stem if not source.isdigit() else f"camera{source}"
    name = f"{stem}_det{suffix}"
    k = 1
    while name in used:
        name = f"{stem}_det_{k}{suffix}"
        k += 1
    used.add(name)
    return out_dir / name


def _inputs_in(out_dir: Path, sources: list) -> set[str]:
    """The file names of the image and video ``sources`` that lie in ``out_dir``."""
    here = os.path.realpath(out_dir)
    return {os.path.basename(t) for s in sources if s.kind in ("image", "video")
            and os.path.dirname(t := os.path.realpath(s.target)) == here}


class _ParameterLimit(Exception):
    """A detection parameter hit a limit: every input would fail the same way."""


def _detect(detector, image: np.ndarray, name: str):
    try:
        return detector.detect(image)
    except LimitError as exc:
        raise _ParameterLimit(str(exc)) from None
    except ValueError as exc:
        raise ImageReadError(f"{name}: {exc}") from None


def _run_image(detector, src: Source, writer, out_dir, used, stats: _Stats,
               limits: Limits, batch=None) -> None:
    """Detect in one image (or take its result from ``batch``, the detections of the image
    sources in order computed on an executor) and record it."""
    path = str(src.target)
    bgr = None
    try:
        if batch is None:
            rgb = read_image(path, gray=False, limits=limits)
            bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
            det = _detect(detector, bgr, path)
            size = (bgr.shape[1], bgr.shape[0])
        else:
            done, det, error, size = next(batch)
            if det is None:
                raise ImageReadError(error)
    except ImageReadError as exc:
        stats.fail(path, exc)
        return
    stats.read += 1
    stats.frames += 1
    stats.detections += len(det)
    writer.add(path, det.boxes, det.scores, det.neighbors, image_size=size)
    if out_dir is not None:
        if bgr is None:  # detected elsewhere: read again to draw
            bgr = cv2.cvtColor(read_image(path, gray=False, limits=limits), cv2.COLOR_RGB2BGR)
        jpg = Path(path).suffix.lower() in (".jpg", ".jpeg")
        ok, buf = cv2.imencode(".jpg" if jpg else ".png", _annotate(bgr, det))
        atomic_write(_out_path(out_dir, path, ".jpg" if jpg else ".png", used), buf.tobytes())


def _run_video(detector, src: Source, writer, out_dir, used, stats: _Stats, max_frames,
               every: int, progress, limits: Limits) -> None:
    name = src.name if src.kind == "camera" else str(src.target)
    try:
        with contextlib.ExitStack() as stack:
            frames = stack.enter_context(VideoFrames(src.target, max_frames=max_frames))
            task = (progress.add_task(Path(name).name, total=frames.n_frames or None)
                    if progress else None)
            vw = None
            for k, frame in frames:
                h, w = frame.shape[:2]
                if k == 0 and h * w > limits.max_image_pixels:
                    raise ImageReadError(str(limit_error(
                        f"{name}: frames of", f"{w}x{h} = {w * h}", limits.max_image_pixels,
                        "max_image_pixels", unit=" pixels", option="--max-pixels")))
                if k % every == 0:
                    det = _detect(detector, frame, name)
                    stats.detections += len(det)
                    writer.add(str(src.target), det.boxes, det.scores, det.neighbors, frame=k,
                               image_size=(frame.shape[1], frame.shape[0]))
                    frame = _annotate(frame, det)
                if out_dir is not None:
                    if vw is None:  # written beside, renamed when the video is done
                        tmp = stack.enter_context(atomic_path(
                            _out_path(out_dir, str(src.target), ".avi", used)))
                        vw = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*"MJPG"),
                                             frames.fps, (frame.shape[1], frame.shape[0]))
                        stack.callback(vw.release)  # before the rename
                        if not vw.isOpened():
                            raise OutputError(f"{tmp}: OpenCV cannot write an MJPG video there")
                    vw.write(frame)
                if task is not None:
                    progress.advance(task)
            n_read = frames.n_read
            if frames.cut_short:
                stats.notes.append(frames.cut_short_note)
    except InputError as exc:  # VideoReadError, ImageReadError
        stats.fail(name, exc)
        return
    stats.read += 1
    stats.frames += n_read


@click.command(cls=Command, error_exit_code=1,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("inputs", nargs=-1, required=True)
@click.option("--model", "-m", "model_path", type=str,
              help="Cascade: OpenCV XML or vjboost JSON file, vjboost:NAME (shipped with "
                   "vjboost: frontalface, frontalface_haar, car_side, car_side_lbp) or "
                   "opencv:NAME (shipped with OpenCV 4). Default: vjboost:frontalface, "
                   "vjboost's frontal-face model.")
@click.option("--scale-factor", "-s", type=SCALE_FACTOR, default=1.1, show_default=True,
              help="Ratio between successive scales (> 1).")
@click.option("--min-neighbors", "-n", default="auto", show_default=True,
              help="Raw windows a detection needs (0: raw windows); auto: the model's default "
                   "operating point (1 for vjboost:frontalface), else OpenCV's 3.")
@click.option("--min-size", help="Smallest window scanned, N or WxH pixels (default: the "
              "cascade's window, e.g. 20x20). A model that declares an object box reports that "
              "share of each window (0.75 for vjboost:frontalface).")
@click.option("--max-size", help="Largest window scanned, N or WxH pixels (default: no limit).")
@click.option("--mode", type=click.Choice(["opencv", "clean"]), default="opencv",
              show_default=True,
              help="opencv: identical to cv2 detectMultiScale (its row cut-off included); "
                   "clean: every row of every scale is scanned.")
@click.option("--grouping", type=click.Choice(["opencv", "nms", "none"]), default="opencv",
              show_default=True,
              help="opencv: groupRectangles (windows averaged per cluster); nms: keep the "
                   "best-scored window of each overlapping set; none: raw windows.")
@click.option("--nms-iou", type=click.FloatRange(0.0, 1.0), default=None,
              help="With --grouping nms: windows overlapping a better one at more than this "
                   "IoU are suppressed, and -n counts the windows overlapping each one at more "
                   "than it (default: 0.3).")
@click.option("--score", type=click.Choice([*DETECTION_SCORES, "model", "auto"]),
              default="auto", show_default=True,
              help="Each detection's score: best (its best window's last-stage score), "
                   "neighbors (its window count), sum (of its windows' scores), margin (of "
                   "their margins over the last stage's threshold), verified (the margin "
                   "rescored by the model's HOG verifier), model (the ranking the model "
                   "declares: verified for the default face model) or auto (the model's "
                   "default operating point: verified for the default face model, else best).")
@click.option("--min-score", default="auto", show_default=True,
              help="Drop detections scored below this (an operating point of --score; the "
                   "model cards list the shipped face models'); none: keep every detection; "
                   "auto: with --score and --min-neighbors auto, the model's default "
                   "threshold (3.72 for vjboost:frontalface, two windows for "
                   "vjboost:car_side), else none.")
@click.option("--stages", type=click.IntRange(min=1), default=None,
              help="Use only the cascade's first N stages (more, weaker detections).")
@click.option("--coarse-to-fine", "coarse_to_fine", default="model", show_default=True,
              help="K: run each level's coarse grid (every second position) through the first K "
                   "stages and the whole cascade only around the coarse windows that pass them "
                   "(faster, nearly the same detections); off (or 0): every grid window; model: "
                   "what the model declares (5 for vjboost:frontalface, off for OpenCV's "
                   "cascades).")
@click.option("--min-std", "min_std", default="model", show_default=True,
              help="The σ gate in grey levels: windows whose standard deviation is at most this "
                   "are skipped (OpenCV: 10; 0: none); model: what the model declares (8 for "
                   "vjboost:frontalface, which finds low-contrast faces below OpenCV's 10), "
                   "else 10.")
@click.option("--suppress-inside", "suppress_inside", default="model", show_default=True,
              help="Drop a detection when at least this share of its area lies inside a "
                   "better-scored one (faces do not nest); off (or 0): keep them; model: what "
                   "the model declares (0.3 for vjboost:frontalface, off for OpenCV's "
                   "cascades).")
@click.option("--border", type=click.Choice(BORDER_CHOICES),
              default="model", show_default=True,
              help="Let windows extend past the image edge by --border-margin of their size "
                   "(the image padded by repeating or mirroring its edge: replicate, reflect), "
                   "to find objects the edge cuts; their boxes leave the image. none: OpenCV's "
                   "windows; model: what the model declares (reflect for vjboost:car_side, "
                   "none for the face models and OpenCV's cascades).")
@click.option("--border-margin", default="model", show_default=True,
              help="Share of a window's width and height that may lie past the edge (with "
                   "--border); model: what the model declares (0.3 for vjboost:car_side), "
                   "else 0.25.")
@click.option("--threads", "-j", type=click.IntRange(min=0), default=0, show_default=True,
              help="Threads (0: all).")
@dask_options("Detect in the images (not videos)")
@click.option("--output-dir", "-o", type=click.Path(file_okay=False),
              help="Write annotated images (<name>_det.png/jpg) and videos (<name>_det.avi).")
@click.option("--format", "fmt", type=click.Choice(DETECTION_FORMATS), default="jsonl",
              show_default=True,
              help="Detection output: JSON lines, one COCO JSON file (images, annotations with "
                   "scores), or one Pascal VOC XML / YOLO txt per image in a folder.")
@click.option("--save", "save_path", default=None,
              help="Where the detections go: a file for jsonl/coco ('-': stdout, the default), "
                   "a folder for voc/yolo (created if its parent exists).")
@click.option("--json", "json_path", default=None,
              help="Same as --format jsonl --save FILE.")
@click.option("--label", default="object", show_default=True,
              help="Category name written to coco/voc/yolo output.")
@click.option("--max-pixels", type=click.IntRange(min=1), default=None,
              help="Largest image or frame processed, in pixels, checked from the file header "
                   f"(default {Limits().max_image_pixels}, or VJBOOST_MAX_IMAGE_PIXELS); larger "
                   "ones are skipped.")
@click.option("--recursive", "-r", is_flag=True, help="Descend into sub-folders.")
@click.option("--max-frames", type=click.IntRange(min=1),
              help="Frames per video/camera (default: all; cameras: 300).")
@click.option("--every", type=click.IntRange(min=1), default=1, show_default=True,
              help="Detect on every N-th video frame.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: when stderr is a terminal).")
def main(inputs, model_path, scale_factor, min_neighbors, min_size, max_size, mode, grouping,
         nms_iou, score, min_score, stages, coarse_to_fine, min_std, suppress_inside, border,
         border_margin, threads, scheduler, workers, output_dir, fmt, save_path, json_path,
         label, max_pixels, recursive, max_frames, every, progress) -> None:
    """Detect objects in INPUTS: image files, folders, glob patterns, list files (.txt, one
    image per line), video files or camera indexes (0, 1, ...). Prints one JSON line per
    detection (or writes --format coco|voc|yolo)."""
    try:
        _main(inputs, model_path, scale_factor, min_neighbors, min_size, max_size, mode,
              grouping, nms_iou, score, min_score, stages, coarse_to_fine, min_std, suppress_inside,
              border, border_margin, threads, scheduler, workers, output_dir, fmt, save_path,
              json_path, label, max_pixels, recursive, max_frames, every, progress)
    except (OutputError, LimitError, _ParameterLimit, ExecutorError) as exc:
        raise click.ClickException(str(exc)) from None


def _min_std(value: str) -> float | str:
    """``--min-std`` as :class:`CascadeDetector`'s argument, checked by the detector's own
    check under the option's name."""
    from ..cascade.scan import check_min_std

    if value == "model":
        return value
    try:
        grey = float(value)
    except ValueError:
        raise click.UsageError(f"--min-std: expected grey levels (e.g. 10) or model, got "
                               f"{value!r}") from None
    try:
        return check_min_std(grey, "--min-std")
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def _suppress_inside(value: str) -> float | str | None:
    """``--suppress-inside`` as :class:`CascadeDetector`'s argument (checked there)."""
    if value in ("model", "off"):
        return None if value == "off" else value
    from ..cascade.detector import check_suppress_inside

    try:
        return check_suppress_inside(float(value), "--suppress-inside")
    except ValueError:
        raise click.UsageError(f"--suppress-inside: expected a share in (0, 1], off or model, "
                               f"got {value!r}") from None


def _coarse_to_fine(value: str) -> int | str | None:
    """``--coarse-to-fine`` as :class:`CascadeDetector`'s argument."""
    if value in ("model", "off"):
        return None if value == "off" else value
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"expected a stage count, off or model, got {value!r}",
                                 param_hint="--coarse-to-fine") from None


def _main(inputs, model_path, scale_factor, min_neighbors, min_size, max_size, mode, grouping,
          nms_iou, score, min_score, stages, coarse_to_fine, min_std, suppress_inside, border,
          border_margin, threads, scheduler, workers, output_dir, fmt, save_path, json_path,
          label, max_pixels, recursive, max_frames, every, progress) -> None:
    from ..cascade.detector import CascadeDetector
    from ..cascade.model_io import load_model
    from ..cascade.opencv_xml import CascadeFormatError

    if nms_iou is not None and grouping != "nms":
        # the other groupings never read it: a threshold given to them would change nothing
        raise click.UsageError(f"--nms-iou applies to --grouping nms, not --grouping {grouping}")
    if json_path is not None:
        if save_path is not None or fmt != "jsonl":
            raise click.UsageError("--json FILE is --format jsonl --save FILE; give one of them")
        save_path = json_path
    if save_path is None:
        if fmt in ("voc", "yolo"):
            raise click.UsageError(f"--format {fmt} writes one file per image: give a folder "
                                   "with --save")
        save_path = "-"
    limits = Limits.from_env()
    if max_pixels is not None:
        limits = Limits(**{**limits.__dict__, "max_image_pixels": max_pixels})
    # outputs first: a wrong path fails now, not after the whole batch
    out_dir = check_output_path(output_dir, "folder", what="--output-dir") if output_dir else None
    what = "--json" if json_path is not None else "--save"
    writer = open_detection_writer(save_path, format=fmt, label=label, what=what)
    try:
        if model_path is None:
            model_path = default_model_path()
            if model_path is None:
                raise click.UsageError("no --model given and neither vjboost's models folder "
                                       "nor OpenCV's frontal-face cascade is installed; pass "
                                       "--model")
        try:
            model_file = resolve_model(model_path)
        except ModelNotFound as exc:
            raise click.BadParameter(str(exc), param_hint="--model") from None
        expanded = expand_inputs(inputs, recursive=recursive)
        # the detections must not overwrite an image or the model they come from (the writer
        # has written nothing yet: a jsonl file goes to a temporary file, removed by abort)
        check_outputs_apart([(what, save_path)], inputs=[
            ("--model file", model_file),
            *((f"input {s.kind}", s.target) for s in expanded.sources
              if s.kind in ("image", "video")),
            *(("input file", raw) for raw in inputs)])  # a list of images (.txt) too
        try:
            model = load_model(model_file)
        except (ModelNotFound, CascadeFormatError, VJBoostError) as exc:
            raise click.BadParameter(str(exc), param_hint="--model") from None
        sizes = _min_max_size(min_size, max_size)
        params = dict(scale_factor=scale_factor, min_neighbors=parse_min_neighbors(min_neighbors),
                      min_size=sizes[0], max_size=sizes[1], mode=mode,
                      grouping=grouping, **({} if nms_iou is None else {"nms_iou": nms_iou}),
                      score=score, min_score=parse_min_score(min_score),
                      n_stages=stages,
                      coarse_to_fine=_coarse_to_fine(coarse_to_fine), min_std=_min_std(min_std),
                      suppress_inside=_suppress_inside(suppress_inside),
                      threads=threads or None,
                      border=parse_border(border),
                      border_margin=parse_border_margin(border_margin))
        try:
            detector = CascadeDetector(model, **params)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        stats = _Stats()
        for src, why in expanded.problems:
            stats.fail(src, why)
        single = len(inputs) == 1 and len(expanded.sources) <= 1
        executor = open_executor(scheduler, workers)
        try:
            batch = None
            if executor is not None:
                from ..cascade.tasks import detect_many

                # one kernel thread per task: the workers are the parallelism
                batch = detect_many(model, [str(s.target) for s in expanded.sources
                                            if s.kind == "image"], executor=executor,
                                    limits=limits, **{**params, "threads": 1})
            with compile_notice():
                _run_all(detector, expanded.sources, writer, out_dir, stats, max_frames,
                         every, progress, limits, batch)
        finally:
            if executor is not None:
                executor.close()
    except BaseException:
        writer.abort()
        raise
    writer.close()
    if single and stats.read == 0 and stats.failed:
        src, why = stats.failed[0]
        raise click.ClickException(f"{src}: {why}")
    for note in stats.notes:
        click.echo(f"vjdetect: warning: {note}", err=True)
    for src, why in stats.failed:
        click.echo(f"vjdetect: skipped {src}: {why}", err=True)
    click.echo(
        f"vjdetect: {stats.read} input(s) read ({stats.frames} frame(s)), "
        f"{stats.detections} detection(s), {len(stats.failed)} skipped", err=True)
    if stats.read == 0:
        sys.exit(1)
    if stats.failed or stats.notes:  # (notes: videos cut short, read only in part)
        sys.exit(EXIT_SOME_SKIPPED)


def _run_all(detector, sources, writer, out_dir, stats, max_frames, every, show,
             limits, batch=None) -> None:
    from ._progress import progress_line

    progress: Any = progress_line(show)
    # names an annotated copy never takes: those of the inputs in the output folder (``-o``
    # the input folder: a.png's copy must not replace an input a_det.png)
    used: set[str] = set() if out_dir is None else _inputs_in(out_dir, sources)
    if progress is not None:
        progress.start()
    try:
        images = [s for s in sources if s.kind == "image"]
        task = progress.add_task("images", total=len(images)) if progress and images else None
        for src in sources:
            if src.kind == "image":
                _run_image(detector, src, writer, out_dir, used, stats, limits, batch)
                if task is not None:
                    progress.advance(task)
            else:
                mf = max_frames if max_frames or src.kind == "video" else 300
                _run_video(detector, src, writer, out_dir, used, stats, mf, every, progress,
                           limits)
    finally:
        if progress is not None:
            progress.stop()


if __name__ == "__main__":
    main()
