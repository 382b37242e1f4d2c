"""Writing detections: JSON lines, COCO, Pascal VOC and YOLO, atomically.

A :class:`DetectionWriter` is opened once per run (:func:`open_detection_writer`), receives the
detections of every image or frame, and writes its files on :meth:`~DetectionWriter.close`, each
through a temporary file renamed into place, so that a failed run leaves no half-written file.
:func:`vjboost._io.check_output_path` refuses an output that cannot be written before any work
starts.

Formats
-------
``jsonl``
    One JSON object per detection: ``source, frame, x, y, w, h, score, neighbors``.
``coco``
    One COCO JSON document: ``images`` (``file_name``, ``width``, ``height``), ``annotations``
    with ``bbox`` and ``score``, one category; readable by :func:`vjboost.io.read_annotations`
    and scored by ``vjeval --detections``.
``voc``
    A folder with one Pascal VOC XML per image (1-based inclusive corners).
``yolo``
    A folder with one ``<stem>.txt`` per image: ``class cx cy w h score`` (fractions of the
    image size), and ``classes.txt``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import ArrayLike

from .._errors import OutputError
from .._io import atomic_open, atomic_write, check_output_path, output_error

__all__ = ["DETECTION_FORMATS", "DetectionWriter", "open_detection_writer"]

DETECTION_FORMATS = ("jsonl", "coco", "voc", "yolo")
"""Output formats of :func:`open_detection_writer`."""


@dataclass
class _Image:
    name: str
    frame: int | None  # None: a still image
    width: int
    height: int
    boxes: np.ndarray
    scores: np.ndarray
    neighbors: np.ndarray


@dataclass
class DetectionWriter:
    """Collects detections and writes them in one format (see :func:`open_detection_writer`).

    Attributes
    ----------
    format : str
    path : str
        File (jsonl, coco; ``"-"``: stdout) or folder (voc, yolo).
    label : str
        Category name written to coco/voc/yolo.
    n_detections : int

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp() + "/labels"
    >>> with open_detection_writer(d, format="yolo", label="face") as w:
    ...     w.add("shots/a.png", [[10, 20, 40, 40]], [2.5], image_size=(100, 80))
    ...     w.add("shots/b.png", [], [], image_size=(100, 80))
    >>> w.format, w.n_detections, sorted(os.listdir(d))
    ('yolo', 1, ['a.txt', 'b.txt', 'classes.txt'])
    >>> print(open(d + "/a.txt").read().strip())
    0 0.300000 0.500000 0.400000 0.500000 2.500000
    """

    format: str
    path: str
    label: str = "object"
    n_detections: int = 0
    _images: list[_Image] = field(default_factory=list)
    _fh: IO[str] | None = None
    _ctx: Any = None

    def add(self, source: str, boxes: ArrayLike, scores: ArrayLike,
            neighbors: ArrayLike | None = None, *, frame: int | None = None,
            image_size: tuple[int, int] = (0, 0)) -> None:
        """Record one image's (or frame's) detections.

        Parameters
        ----------
        source : str
            Image path (or video path; frames are told apart by ``frame``).
        boxes : array-like (n, 4)
        scores : array-like (n,)
        neighbors : array-like (n,), optional
        frame : int, optional
            The frame's index in a video or camera stream; None (the default) for a still image.
            COCO's ``images`` entries and VOC / YOLO file names carry it for every frame, the
            first one (0) included; JSON lines give still images frame 0.
        image_size : (width, height)
            Needed by coco, voc and yolo.
        """
        b = np.asarray(boxes, dtype=np.int64).reshape(-1, 4)
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        nb = (np.ones(len(b), dtype=np.int64) if neighbors is None
              else np.asarray(neighbors, dtype=np.int64).reshape(-1))
        self.n_detections += len(b)
        if self.format == "jsonl":
            assert self._fh is not None
            try:
                for (x, y, w, h), sc, n in zip(b.tolist(), s.tolist(), nb.tolist(),
                                               strict=True):
                    self._fh.write(json.dumps({"source": source, "frame": int(frame or 0), "x": x,
                                               "y": y, "w": w, "h": h, "score": round(sc, 6),
                                               "neighbors": n}) + "\n")
            except OSError as exc:  # a full disk: the temporary file goes on abort()
                raise output_error(self.path, exc) from None
            return
        self._images.append(_Image(source, None if frame is None else int(frame),
                                   int(image_size[0]), int(image_size[1]),
                                   b, s, nb))

    def close(self) -> None:
        """Write the files (atomically) and release the output."""
        try:
            if self.format == "jsonl":
                if self._ctx is not None:
                    self._ctx.__exit__(None, None, None)
                elif self._fh is not None:
                    self._fh.flush()
            elif self.format == "coco":
                self._write_coco()
            elif self.format == "voc":
                self._write_voc()
            elif self.format == "yolo":
                self._write_yolo()
        except OSError as exc:
            raise output_error(self.path, exc) from None
        finally:
            self._fh = self._ctx = None

    def abort(self) -> None:
        """Drop what was collected (a jsonl temporary file is removed)."""
        if self._ctx is not None:
            import contextlib

            with contextlib.suppress(Exception):
                self._ctx.__exit__(RuntimeError, RuntimeError("aborted"), None)
        self._fh = self._ctx = None

    def __enter__(self) -> DetectionWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _stem(self, im: _Image, used: set[str]) -> str:
        # every frame of a video, the first included, is numbered (frame 0 was named as the
        # still image would be, apart from frame 1's "_000001")
        stem = Path(im.name).stem + (f"_{im.frame:06d}" if im.frame is not None else "")
        name, k = stem, 1
        while name in used:
            name = f"{stem}_{k}"
            k += 1
        used.add(name)
        return name

    def _write_coco(self) -> None:
        images, anns = [], []
        for i, im in enumerate(self._images, 1):
            entry = {"id": i, "file_name": im.name, "width": im.width, "height": im.height}
            if im.frame is not None:  # frame 0 too: a reader maps every image id to its frame
                entry["frame"] = im.frame
            images.append(entry)
            for (x, y, w, h), sc, n in zip(im.boxes.tolist(), im.scores.tolist(),
                                           im.neighbors.tolist(), strict=True):
                anns.append({"id": len(anns) + 1, "image_id": i, "category_id": 1,
                             "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0,
                             "score": round(sc, 6), "neighbors": n})
        doc = {"images": images, "annotations": anns,
               "categories": [{"id": 1, "name": self.label}]}
        text = json.dumps(doc, indent=1) + "\n"
        if self.path == "-":
            sys.stdout.write(text)
        else:
            atomic_write(self.path, text)

    def _write_voc(self) -> None:
        from xml.sax.saxutils import escape  # here: it imports urllib (and ssl) with it

        used: set[str] = set()
        for im in self._images:
            objs = "".join(
                f"  <object>\n    <name>{escape(self.label)}</name>\n    <score>{sc:.6f}</score>\n"
                f"    <difficult>0</difficult>\n    <bndbox><xmin>{x + 1}</xmin><ymin>{y + 1}"
                f"</ymin><xmax>{x + w}</xmax><ymax>{y + h}</ymax></bndbox>\n  </object>\n"
                for (x, y, w, h), sc in zip(im.boxes.tolist(), im.scores.tolist(), strict=True))
            # a file name that is not UTF-8 (its bytes kept as surrogates) cannot be XML text:
            # its undecodable bytes are written as \xNN (the .xml file itself keeps the name)
            name = os.fsencode(im.name).decode("utf-8", "backslashreplace")
            xml = (f"<annotation>\n  <filename>{escape(Path(name).name)}</filename>\n"
                   f"  <path>{escape(name)}</path>\n  <size><width>{im.width}</width>"
                   f"<height>{im.height}</height><depth>3</depth></size>\n{objs}</annotation>\n")
            atomic_write(Path(self.path) / f"{self._stem(im, used)}.xml", xml)

    def _write_yolo(self) -> None:
        used: set[str] = set()
        for im in self._images:
            if im.width <= 0 or im.height <= 0:
                raise OutputError(f"{im.name}: the image size is unknown; YOLO labels need it")
            lines = "".join(
                f"0 {(x + w / 2) / im.width:.6f} {(y + h / 2) / im.height:.6f} "
                f"{w / im.width:.6f} {h / im.height:.6f} {sc:.6f}\n"
                for (x, y, w, h), sc in zip(im.boxes.tolist(), im.scores.tolist(), strict=True))
            atomic_write(Path(self.path) / f"{self._stem(im, used)}.txt", lines)
        atomic_write(Path(self.path) / "classes.txt", self.label + "\n")


def open_detection_writer(path: str | os.PathLike[str], *, format: str = "jsonl",
                          label: str = "object", what: str = "output") -> DetectionWriter:
    """Check the output and open a writer (use as a context manager).

    Parameters
    ----------
    path : path-like or "-"
        jsonl and coco: a file (``"-"``: standard output); voc and yolo: a folder (created
        when its parent exists).
    format : {"jsonl", "coco", "voc", "yolo"}
    label : str
        Category name of the detections.
    what : str
        How the output is called in messages (an option such as ``--save``).

    Raises
    ------
    OutputError
        When the output cannot be written (checked now, before any detection runs).

    Examples
    --------
    >>> import tempfile, json
    >>> p = tempfile.mkdtemp() + "/d.json"
    >>> with open_detection_writer(p, format="coco", label="face") as w:
    ...     w.add("a.png", [[1, 2, 30, 30]], [0.9], image_size=(64, 48))
    >>> json.load(open(p))["annotations"][0]["bbox"]
    [1, 2, 30, 30]
    """
    if format not in DETECTION_FORMATS:
        raise ValueError(f"format: expected one of {', '.join(DETECTION_FORMATS)}, got "
                         f"{format!r}")
    path = os.fspath(path)
    w = DetectionWriter(format, path, label)
    if format in ("voc", "yolo"):
        if path == "-":
            raise OutputError(f"--format {format} writes one file per image: give a folder")
        check_output_path(path, "folder", what=what)
    elif path != "-":
        check_output_path(path, what=what)
    elif sys.stdout is None:  # started with stdout closed (``>&-``)
        raise OutputError(f"{what}: standard output is closed; give a file to write the "
                          "detections to")
    if format == "jsonl":
        if path == "-":
            w._fh = sys.stdout
        else:
            w._ctx = atomic_open(path, "w")
            try:
                w._fh = w._ctx.__enter__()
            except OSError as exc:
                raise output_error(path, exc) from None
    return w
