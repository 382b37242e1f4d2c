"""``vjadapt``: adapt a trained cascade to a scene from a labelled stream of frames.

Examples::

    vjadapt cascade.xml clip.avi --boxes clip_boxes.csv -o adapted.json
    vjadapt model.json clip1.avi clip2.avi --self-label -o adapted.xml --every 2
    vjadapt cascade.xml frames/ --boxes info.dat -o adapted.json --order 5

The stream is one or more videos, image files or folders of images (sorted by name). Labels come
either from a box file (``--boxes``) or from the cascade itself (``--self-label``: its confident
detections are the objects). Each stage of the cascade is re-weighted with Online Coordinate
Boosting and re-calibrated (see :func:`vjboost.cascade.adapt.adapt_cascade`); the structure is
kept. Writes the adapted model atomically (``.json``: vjboost's format; ``.xml``: OpenCV's) and a
JSON report beside it (``--report``).

Box files:

* videos: a CSV with the header ``frame,x,y,w,h`` (``frame``: 0-based index in the video, every
  frame counted, also those ``--every`` skips). Several rows per frame for several objects; a row
  with ``w`` and ``h`` 0 marks a frame with no object; frames that are not listed are unlabelled
  and skipped. With several videos, add a ``source`` column naming each row's video (file name
  or path).
* images: ``info.dat``, a CSV ``image,x,y,w,h`` or a JSON file (as ``vjtrain`` reads them); images
  that are not listed are skipped.

Boxes must be framed like the cascade's own detections: positives are the candidate windows with
IoU >= ``--pos-iou`` (0.8) against a box.

Bad input ends with a message and exit status 2, never a traceback.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import numpy as np

from ._command import SCALE_FACTOR, SEED, Command

__all__ = ["main", "read_frame_boxes", "vjadapt"]

class InputError(click.ClickException):
    """Bad input: printed as ``Error: ...`` with exit status 2."""

    exit_code = 2


FrameBoxes = dict[str, dict[int, np.ndarray]]


def read_frame_boxes(path: str | os.PathLike[str]) -> FrameBoxes:
    """Read a video box file: CSV with the header ``frame,x,y,w,h`` (and optionally ``source``).

    Parameters
    ----------
    path : path-like

    Returns
    -------
    dict
        ``{source: {frame: boxes (k, 4) int64}}``; ``source`` is ``""`` without a ``source``
        column. A row with ``w = h = 0`` records a labelled frame with no object (empty boxes).

    Raises
    ------
    ValueError
        Missing or unreadable file, missing columns, non-integer or negative values; the
        message names the file and line.
    """
    from vjboost.io.annotations import _read_text, csv_cells

    path = Path(path)
    reader = csv.reader(_read_text(path, "box").splitlines())
    header = next(reader, None)
    if header is None:
        raise ValueError(f"{path}: empty box file")
    cols = [c.strip().lower() for c in header]
    need = ["frame", "x", "y", "w", "h"]
    missing = [c for c in need if c not in cols]
    if missing:
        raise ValueError(f"{path}, line 1: a video box file needs the columns "
                         f"{','.join(need)} (and optionally source); missing {missing}")
    idx = [cols.index(c) for c in need]
    src_col = cols.index("source") if "source" in cols else None
    rows: dict[str, dict[int, list[list[int]]]] = {}
    for lineno, row in enumerate(reader, 2):
        if not row or all(not c.strip() for c in row):
            continue
        row = csv_cells(row, len(cols), f"{path}, line {lineno}", ValueError)
        try:
            frame, x, y, w, h = (int(row[j].strip()) for j in idx)
        except ValueError:
            raise ValueError(f"{path}, line {lineno}: frame, x, y, w, h must be integers, got "
                             f"{[row[j] for j in idx]}") from None
        if frame < 0 or x < 0 or y < 0 or w < 0 or h < 0 or (w == 0) != (h == 0):
            raise ValueError(f"{path}, line {lineno}: invalid entry frame={frame} box="
                             f"{[x, y, w, h]} (values >= 0; w and h both 0 for 'no object')")
        src = row[src_col].strip() if src_col is not None else ""
        boxes = rows.setdefault(src, {}).setdefault(frame, [])
        if w > 0:
            boxes.append([x, y, w, h])
    if not rows:
        raise ValueError(f"{path}: no entries")
    return {s: {f: np.asarray(b, dtype=np.int64).reshape(-1, 4) for f, b in d.items()}
            for s, d in rows.items()}


def _sources(inputs: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(kind, path)`` for every input: videos, images, folders expanded to their images."""
    from vjboost.io import expand_inputs

    got = expand_inputs(inputs, kinds=("image", "video"), list_files=False)
    if got.problems:
        src, why = got.problems[0]
        raise InputError(f"{src}: {why}")
    return [(s.kind, str(s.target)) for s in got.sources]


def _video_frames(path: str, every: int, max_frames: int | None, echo
                  ) -> Iterator[tuple[int, np.ndarray]]:
    from vjboost.io import VideoFrames, VideoReadError

    try:
        with VideoFrames(path, every=every, max_frames=max_frames, gray=True) as frames:
            yield from frames
            if frames.cut_short:
                echo(f"warning: {frames.cut_short_note}")
    except VideoReadError as exc:
        raise InputError(str(exc)) from None


def _video_lookup(boxes: FrameBoxes, path: str, n_videos: int) -> dict[int, np.ndarray]:
    if set(boxes) == {""}:
        if n_videos > 1:
            raise InputError("--boxes: several videos are given; add a 'source' column naming "
                             "each row's video")
        return boxes[""]
    p = Path(path)
    for key in (path, str(p.resolve()), p.name):
        if key in boxes:
            return boxes[key]
    for key, d in boxes.items():
        if key and Path(key).resolve() == p.resolve():
            return d
    return {}


def _check_params(pos_iou: float, neg_iou: float, min_hit_rate: float | None, blend: float,
                  holdout: float) -> None:
    if not 0.0 < pos_iou <= 1.0:
        raise InputError(f"--pos-iou: must be in (0, 1], got {pos_iou}")
    if not 0.0 <= neg_iou < pos_iou:
        raise InputError(f"--neg-iou: must be in [0, --pos-iou), got {neg_iou}")
    if min_hit_rate is not None and not 0.0 < min_hit_rate <= 1.0:
        raise InputError(f"--min-hit-rate: must be in (0, 1], got {min_hit_rate}")
    if not 0.0 <= blend <= 1.0:
        raise InputError(f"--blend: must be in [0, 1], got {blend}")
    if not 0.0 <= holdout < 1.0:
        raise InputError(f"--holdout: must be in [0, 1), got {holdout}")


@click.command(cls=Command, error_exit_code=2,
               context_settings={"help_option_names": ["-h", "--help"],
                                 "max_content_width": 100})
@click.argument("model_path", metavar="MODEL")
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Adapted model: .json (vjboost) or .xml (OpenCV, HAAR/LBP cascades).")
@click.option("--boxes", "boxes_path", type=str,
              help="Object boxes: CSV frame,x,y,w,h[,source] for videos; for images any "
                   "annotation vjeval reads (info.dat, CSV image,x,y,w,h, JSON, COCO, a VOC / "
                   "YOLO / LabelMe folder, CVAT XML).")
@click.option("--boxes-format", type=click.Choice(["info", "csv", "json", "coco", "voc", "yolo",
                                                   "labelme", "cvat"]),
              help="Format of --boxes for images (default: detected).")
@click.option("--category", help="Object class to take from --boxes holding several.")
@click.option("--self-label", is_flag=True,
              help="No box file: the cascade's confident detections are the objects (frames "
                   "without one are skipped; every object of such a frame must be confidently "
                   "detected).")
@click.option("--confident-neighbors", type=click.IntRange(min=1), default=12, show_default=True,
              help="--self-label: raw windows a detection needs to count as confident.")
@click.option("--every", type=click.IntRange(min=1), default=1, show_default=True,
              help="Use every N-th video frame.")
@click.option("--max-frames", type=click.IntRange(min=1), help="Frames read per video.")
@click.option("--order", type=click.IntRange(min=0), default=5, show_default=True,
              help="Order K of Online Coordinate Boosting.")
@click.option("--min-hit-rate", type=float,
              help="Hit rate on the stream's positives each adapted stage keeps (default: the "
                   "original stage's).")
@click.option("--candidate-stages", type=click.IntRange(min=1), default=5, show_default=True,
              help="Windows accepted by this many first stages are the stream's windows; "
                   "these stages are kept as they are.")
@click.option("--pos-iou", type=float, default=0.8, show_default=True,
              help="Positives: candidate windows overlapping an object box by at least this.")
@click.option("--neg-iou", type=float, default=0.1, show_default=True,
              help="Negatives: candidate windows overlapping every object box by less.")
@click.option("--max-negatives", type=click.IntRange(min=0), default=100, show_default=True,
              help="Easy negatives kept per frame (those reaching deep stages are all kept).")
@click.option("--min-windows", type=click.IntRange(min=1), default=30, show_default=True,
              help="A stage is adapted only when this many positives and negatives reach it.")
@click.option("--blend", type=float, default=1.0, show_default=True,
              help="Weight of the learnt leaf multipliers (0: thresholds only).")
@click.option("--holdout", type=float, default=0.0, show_default=True,
              help="Safeguard: adapt a stage only if, fitted on the first 1-H of its windows, it "
                   "does no worse than the original on the last H.")
@click.option("--scale-factor", type=SCALE_FACTOR, default=1.1, show_default=True,
              help="Scale step of the window scan (as vjdetect).")
@click.option("--min-size", type=click.IntRange(min=0), default=0, show_default=True,
              help="Smallest object side in pixels (0: no limit).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the negative "
              "sampling.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              help="JSON report (default: OUTPUT with the suffix .report.json).")
@click.option("--quiet", "-q", is_flag=True, help="Only errors.")
def vjadapt(model_path: str, inputs: tuple[str, ...], output: str, boxes_path: str | None,
            boxes_format: str | None, category: str | None, self_label: bool,
            confident_neighbors: int, every: int, max_frames: int | None,
            order: int, min_hit_rate: float | None, candidate_stages: int, pos_iou: float,
            neg_iou: float, max_negatives: int, min_windows: int, blend: float, holdout: float,
            scale_factor: float, min_size: int, seed: int, report_path: str | None,
            quiet: bool) -> None:
    """Adapt the cascade MODEL (OpenCV XML or vjboost JSON, vjboost:NAME or opencv:NAME) to the
    stream INPUTS: videos, images or folders of images, labelled by --boxes or --self-label."""
    from vjboost._io import atomic_write, check_output_path, check_outputs_apart
    from vjboost.cascade.adapt import StreamCollector, adapt_cascade
    from vjboost.cascade.model_io import load_model, save_model
    from vjboost.cascade.opencv_xml import CascadeFormatError, ExportError
    from vjboost.cascade.shipped import ModelNotFound, resolve_model
    from vjboost.io import read_annotations
    from vjboost.io.images import ImageReadError, read_image

    echo = (lambda *a, **k: None) if quiet else click.echo
    warn = (lambda *a, **k: None) if quiet else (lambda m: click.echo(f"vjadapt: {m}", err=True))
    if (boxes_path is None) == (not self_label):
        raise InputError("label the stream with --boxes FILE or with --self-label (one of them)")
    _check_params(pos_iou, neg_iou, min_hit_rate, blend, holdout)
    out = Path(output)
    if out.suffix.lower() not in (".json", ".xml"):
        raise InputError(f"-o/--output: expected a .json or .xml file name, got {output!r}")
    # outputs first: a wrong path fails now, not after the stream was read
    check_output_path(out, what="-o/--output")
    if report_path is not None:
        check_output_path(report_path, what="--report")
    rep_path = Path(report_path) if report_path else out.with_suffix(".report.json")
    sources = _sources(inputs)
    try:
        model_file: str | None = resolve_model(model_path)
    except ModelNotFound:
        model_file = None  # load_model says why
    # neither output may overwrite the model, a frame, the box file or the other output
    check_outputs_apart(
        [("-o/--output", out), ("--report" if report_path else "the report", rep_path)],
        inputs=[("MODEL file", model_file), *((f"input {k}", path) for k, path in sources),
         ("--boxes file", boxes_path)])
    try:
        model = load_model(model_path)
    except CascadeFormatError as exc:
        raise InputError(str(exc)) from None
    if out.suffix.lower() == ".xml" and model.opencv_type is None:
        raise InputError("-o/--output: OpenCV XML holds only HAAR and LBP cascades; this one "
                         "uses a vjboost feature family, write .json")
    if candidate_stages >= model.n_stages:
        raise InputError(f"--candidate-stages: must be lower than the cascade's "
                         f"{model.n_stages} stages, got {candidate_stages}")
    n_videos = sum(1 for k, _ in sources if k == "video")
    frame_boxes: FrameBoxes = {}
    image_boxes: dict[str, np.ndarray] = {}
    if boxes_path is not None:
        if not Path(boxes_path).exists():
            raise InputError(f"--boxes: {boxes_path}: no such file or folder")
        if 0 < n_videos < len(sources):
            raise InputError("--boxes: give either videos or images, not both (a box file "
                             "describes frames of videos or image files)")
        try:
            if n_videos:
                frame_boxes = read_frame_boxes(boxes_path)
            if n_videos < len(sources):
                image_boxes = read_annotations(boxes_path, format=boxes_format,
                                               category=category)
        except ValueError as exc:
            raise InputError(f"--boxes: {exc}") from None
    col = StreamCollector(model, candidate_stages=candidate_stages, scale_factor=scale_factor,
                          min_size=min_size or None, pos_iou=pos_iou, neg_iou=neg_iou,
                          max_easy_negatives=max_negatives, seed=seed)

    def objects(gray: np.ndarray, given: np.ndarray | None) -> np.ndarray | None:
        """The objects of one frame: the given boxes, or with --self-label the confident
        detections.

        Parameters
        ----------
        gray : ndarray of uint8, shape (H, W)
            The frame.
        given : ndarray of shape (n, 4) or None
            Its boxes from --boxes, if any.

        Returns
        -------
        ndarray of shape (n, 4) or None
            None when the frame has no labelled object to learn from.
        """
        if self_label:
            conf = col.confident_objects(gray, confident_neighbors)
            return conf if len(conf) else None
        return given

    n_read = 0
    for kind, path in sources:
        if kind == "video":
            lookup = _video_lookup(frame_boxes, path, n_videos) if boxes_path else {}
            for k, gray in _video_frames(path, every, max_frames, warn):
                n_read += 1
                col.add_frame(gray, objects(gray, lookup.get(k)))
        else:
            try:
                gray = read_image(path, gray=True)
            except ImageReadError as exc:
                raise InputError(str(exc)) from None
            n_read += 1
            given = image_boxes.get(str(Path(path).resolve())) if boxes_path else None
            col.add_frame(gray, objects(gray, given))
    W, Y = col.windows_labels()
    how = "confident detection" if self_label else "box in --boxes"
    if col.n_frames == 0:
        raise InputError(f"no labelled frame among the {n_read} read: none has a {how}"
                         + ("" if self_label else " (check the frame numbers / image paths)"))
    if not (Y > 0).any():
        raise InputError(
            f"no positive window in {col.n_frames} labelled frame(s): no candidate window "
            f"overlaps an object by IoU >= {pos_iou}; boxes must be framed like the cascade's "
            "detections (or lower --pos-iou)")
    if not (Y < 0).any():
        raise InputError(f"no negative window in {col.n_frames} labelled frame(s): every "
                         "candidate window is near an object")
    echo(f"stream: {n_read} frame(s) read, {col.n_frames} labelled, {len(Y)} windows "
         f"({int((Y > 0).sum())} positive, {int((Y < 0).sum())} negative)")
    try:
        adapted, report = adapt_cascade(model, W, Y, order=order, min_hit_rate=min_hit_rate,
                                        first_stage=candidate_stages, min_windows=min_windows,
                                        blend=blend, holdout=holdout)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    try:
        save_model(adapted, out)
    except (ExportError, TypeError) as exc:
        raise InputError(f"-o/--output: {exc}") from None
    except OSError as exc:
        raise InputError(f"{out}: cannot be written ({exc.strerror or exc})") from None
    doc: dict[str, Any] = {
        "model": str(model_path), "output": str(out), "inputs": list(inputs),
        "labels": "self" if self_label else str(boxes_path),
        "frames_read": n_read, "frames_labelled": col.n_frames, "frames_skipped": col.n_skipped,
        "windows": int(len(Y)), "positives": int((Y > 0).sum()),
        "negatives": int((Y < 0).sum()),
        "settings": {"order": order, "min_hit_rate": min_hit_rate,
                     "candidate_stages": candidate_stages, "pos_iou": pos_iou,
                     "neg_iou": neg_iou, "max_negatives": max_negatives,
                     "min_windows": min_windows, "blend": blend, "holdout": holdout,
                     "every": every, "scale_factor": scale_factor, "min_size": min_size,
                     "seed": seed, "confident_neighbors": confident_neighbors},
        **report.as_dict(),
    }
    try:
        atomic_write(rep_path, json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        raise InputError(f"{rep_path}: cannot be written ({exc.strerror or exc})") from None
    echo(f"adapted {report.n_adapted} of {model.n_stages} stages; model: {out}; report: "
         f"{rep_path}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``vjadapt`` console script."""
    vjadapt.main(args=argv, prog_name="vjadapt")


if __name__ == "__main__":  # pragma: no cover
    main()
