"""``vjdetect``: run a cascade on images, folders, globs, videos and cameras.

Writes one JSON line per detection (``source, frame, x, y, w, h, score, neighbors``) to stdout or
``--json FILE``, and with ``--output-dir`` annotated copies of the images and videos. Unreadable
inputs are skipped and counted; the exit status is 1 when nothing at all could be read.

Examples::

    vjdetect photo.jpg
    vjdetect --model cascade.xml --scale-factor 1.2 --min-size 40 photos/ -o annotated/
    vjdetect "shots/*.png" --json dets.jsonl
    vjdetect clip.avi -o out/            # annotated video out/clip_det.avi
    vjdetect 0 --max-frames 200          # camera 0
"""

from __future__ import annotations

import glob
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import click
import cv2
import numpy as np

from ..cascade.shipped import ModelNotFound, default_model, resolve_model

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm", ".pbm", ".tif", ".tiff",
                  ".webp", ".jp2", ".sr", ".ras")
VIDEO_SUFFIXES = (".avi", ".mp4", ".mov", ".mkv", ".mpg", ".mpeg", ".wmv", ".webm", ".m4v",
                  ".flv", ".3gp")


@dataclass
class _Source:
    kind: str  # "image" | "video" | "camera"
    target: str | int


@dataclass
class _Stats:
    read: int = 0
    frames: int = 0
    detections: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)


def default_model_path() -> str | None:
    """vjboost's shipped frontal-face cascade, else OpenCV's default one; None if neither."""
    return default_model()


def _parse_size(value: str | None, name: str) -> tuple[int, int] | None:
    if value is None:
        return None
    v = value.lower().replace("x", ",").split(",")
    try:
        nums = [int(s) for s in v if s.strip()]
    except ValueError:
        raise click.BadParameter(f"expected N or WxH, got {value!r}", param_hint=name) from None
    if len(nums) == 1:
        nums = nums * 2
    if len(nums) != 2 or min(nums) < 0:
        raise click.BadParameter(f"expected N or WxH with N >= 0, got {value!r}",
                                 param_hint=name)
    return nums[0], nums[1]


def _expand(inputs: tuple[str, ...], recursive: bool, stats: _Stats) -> list[_Source]:
    out: list[_Source] = []
    for raw in inputs:
        if raw.isdigit() and not os.path.exists(raw):
            out.append(_Source("camera", int(raw)))
            continue
        p = Path(raw)
        if p.is_dir():
            pattern = "**/*" if recursive else "*"
            files = sorted(f for f in p.glob(pattern)
                           if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES + VIDEO_SUFFIXES)
            if not files:
                stats.failed.append((raw, "folder holds no images or videos"))
            out += [_classify(str(f)) for f in files]
        elif p.exists():
            out.append(_classify(raw))
        elif glob.has_magic(raw):
            files = sorted(f for f in glob.glob(raw, recursive=True) if os.path.isfile(f))
            if not files:
                stats.failed.append((raw, "pattern matches no file"))
            out += [_classify(f) for f in files]
        else:
            stats.failed.append((raw, "no such file, folder or camera"))
    return out


def _classify(path: str) -> _Source:
    return _Source("video" if Path(path).suffix.lower() in VIDEO_SUFFIXES else "image", path)


def _annotate(img_bgr: np.ndarray, det) -> np.ndarray:
    out = img_bgr.copy()
    thick = max(1, round(max(out.shape[:2]) / 400))
    for (x, y, w, h), s in zip(det.boxes, det.scores, strict=True):
        cv2.rectangle(out, (int(x), int(y)), (int(x + w - 1), int(y + h - 1)), (0, 255, 0), thick)
        cv2.putText(out, f"{s:.2f}", (int(x), max(int(y) - 3, 10)), cv2.FONT_HERSHEY_SIMPLEX,
                    0.4 * thick, (0, 255, 0), 1, cv2.LINE_AA)
    return out


def _emit(fh: IO[str], det, source: str, frame: int) -> int:
    for rec in det.records(source, frame):
        rec["score"] = round(rec["score"], 6)
        fh.write(json.dumps(rec) + "\n")
    return len(det)


def _out_path(out_dir: Path, source: str, suffix: str, used: set[str]) -> Path:
    stem = Path(source).stem if not source.isdigit() else f"camera{source}"
    name = f"{stem}_det{suffix}"
    k = 1
    while name in used:
        name = f"{stem}_det_{k}{suffix}"
        k += 1
    used.add(name)
    return out_dir / name


def _run_image(detector, src: _Source, fh, out_dir, used, stats: _Stats) -> None:
    from ..io.images import ImageReadError, read_image

    path = str(src.target)
    try:
        rgb = read_image(path, gray=False)
    except ImageReadError as exc:
        stats.failed.append((path, str(exc)))
        return
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    try:
        det = detector.detect(bgr)
    except ValueError as exc:
        stats.failed.append((path, str(exc)))
        return
    stats.read += 1
    stats.frames += 1
    stats.detections += _emit(fh, det, path, 0)
    if out_dir is not None:
        ok, buf = cv2.imencode(".png" if Path(path).suffix.lower() not in (".jpg", ".jpeg")
                               else ".jpg", _annotate(bgr, det))
        suffix = ".jpg" if Path(path).suffix.lower() in (".jpg", ".jpeg") else ".png"
        from .._io import atomic_write

        atomic_write(_out_path(out_dir, path, suffix, used), buf.tobytes())


def _run_video(detector, src: _Source, fh, out_dir, used, stats: _Stats, max_frames,
               every: int, progress) -> None:
    cap = cv2.VideoCapture(src.target)
    name = str(src.target)
    if not cap.isOpened():
        what = "camera" if src.kind == "camera" else "video"
        stats.failed.append((name, f"cannot open {what}"))
        return
    n_total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) if src.kind == "video" else 0
    if max_frames:
        n_total = min(n_total, max_frames) if n_total > 0 else max_frames
    fps = cap.get(cv2.CAP_PROP_FPS) or 25.0
    writer = None
    task = progress.add_task(Path(name).name, total=n_total or None) if progress else None
    frame_idx = 0
    n_read = 0
    try:
        while max_frames is None or frame_idx < max_frames:
            ok, frame = cap.read()
            if not ok or frame is None:
                break
            if frame_idx % every == 0:
                det = detector.detect(frame)
                stats.detections += _emit(fh, det, name, frame_idx)
                frame = _annotate(frame, det)
            n_read += 1
            if out_dir is not None:
                if writer is None:
                    path = _out_path(out_dir, name, ".avi", used)
                    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps,
                                             (frame.shape[1], frame.shape[0]))
                writer.write(frame)
            frame_idx += 1
            if task is not None:
                progress.advance(task)
    finally:
        cap.release()
        if writer is not None:
            writer.release()
    if n_read == 0:
        stats.failed.append((name, "no frame could be read"))
        return
    stats.read += 1
    stats.frames += n_read


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("inputs", nargs=-1, required=True)
@click.option("--model", "-m", "model_path", type=str,
              help="Cascade: OpenCV XML or vjboost JSON, vjboost:NAME (shipped in models/) or "
                   "opencv:NAME (shipped with OpenCV). Default: vjboost:frontalface, vjboost's "
                   "frontal-face cascade (see models/README.md).")
@click.option("--scale-factor", "-s", type=float, default=1.1, show_default=True,
              help="Ratio between successive scales (> 1).")
@click.option("--min-neighbors", "-n", type=click.IntRange(min=0), default=3, show_default=True,
              help="Raw windows a detection needs (0: raw windows).")
@click.option("--min-size", help="Smallest object, N or WxH pixels.")
@click.option("--max-size", help="Largest object, N or WxH pixels.")
@click.option("--mode", type=click.Choice(["opencv", "clean"]), default="opencv",
              show_default=True, help="opencv: identical to cv2 detectMultiScale.")
@click.option("--grouping", type=click.Choice(["opencv", "nms", "none"]), default="opencv",
              show_default=True)
@click.option("--threads", "-j", type=click.IntRange(min=0), default=0, show_default=True,
              help="Threads (0: all).")
@click.option("--output-dir", "-o", type=click.Path(file_okay=False),
              help="Write annotated images (<name>_det.png/jpg) and videos (<name>_det.avi).")
@click.option("--json", "json_path", default="-", show_default=True,
              help="JSON-lines destination ('-' for stdout).")
@click.option("--recursive", "-r", is_flag=True, help="Descend into sub-folders.")
@click.option("--max-frames", type=click.IntRange(min=1),
              help="Frames per video/camera (default: all; cameras: 300).")
@click.option("--every", type=click.IntRange(min=1), default=1, show_default=True,
              help="Detect on every N-th video frame.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: when stderr is a terminal).")
def main(inputs, model_path, scale_factor, min_neighbors, min_size, max_size, mode, grouping,
         threads, output_dir, json_path, recursive, max_frames, every, progress) -> None:
    """Detect objects in INPUTS: image files, folders, glob patterns, video files or camera
    indexes (0, 1, ...). Prints one JSON line per detection."""
    from ..cascade.detector import CascadeDetector
    from ..cascade.model_io import load_model
    from ..cascade.opencv_xml import CascadeFormatError

    if model_path is None:
        model_path = default_model_path()
        if model_path is None:
            raise click.UsageError("no --model given and neither vjboost's models/ folder nor "
                                   "OpenCV's frontal-face cascade is installed; pass --model")
    try:
        model = load_model(resolve_model(model_path))
    except (ModelNotFound, CascadeFormatError) as exc:
        raise click.BadParameter(str(exc), param_hint="--model") from None
    try:
        detector = CascadeDetector(
            model, scale_factor=scale_factor, min_neighbors=min_neighbors,
            min_size=_parse_size(min_size, "--min-size"),
            max_size=_parse_size(max_size, "--max-size"), mode=mode, grouping=grouping,
            threads=threads or None,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    stats = _Stats()
    sources = _expand(inputs, recursive, stats)
    out_dir = Path(output_dir) if output_dir else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    show = sys.stderr.isatty() if progress is None else progress
    fh = sys.stdout if json_path == "-" else open(json_path, "w", encoding="utf-8")  # noqa: SIM115
    try:
        _run_all(detector, sources, fh, out_dir, used, stats, max_frames, every, show)
    finally:
        if fh is not sys.stdout:
            fh.close()
        else:
            fh.flush()
    for src, why in stats.failed:
        click.echo(f"vjdetect: skipped {src}: {why}", err=True)
    click.echo(
        f"vjdetect: {stats.read} input(s) read ({stats.frames} frame(s)), "
        f"{stats.detections} detection(s), {len(stats.failed)} skipped", err=True)
    if stats.read == 0:
        sys.exit(1)


def _run_all(detector, sources, fh, out_dir, used, stats, max_frames, every, show) -> None:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    progress: Any = None
    if show:
        progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeRemainingColumn(), console=Console(stderr=True), transient=True)
        progress.start()
    try:
        images = [s for s in sources if s.kind == "image"]
        task = progress.add_task("images", total=len(images)) if progress and images else None
        for src in sources:
            if src.kind == "image":
                _run_image(detector, src, fh, out_dir, used, stats)
                if task is not None:
                    progress.advance(task)
            else:
                mf = max_frames if max_frames or src.kind == "video" else 300
                _run_video(detector, src, fh, out_dir, used, stats, mf, every, progress)
    finally:
        if progress is not None:
            progress.stop()


if __name__ == "__main__":
    main()
