"""Background lists and box annotations.

Every reader returns absolute paths: a relative path in a list file is resolved against the folder
of that list file (``opencv_traincascade`` resolved ``bg.txt`` entries against the working
directory, a classic cause of "Train dataset for temp stage can not be filled").

Boxes are ``(x, y, w, h)`` in pixels, top-left corner plus size, as int arrays of shape (k, 4).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np

__all__ = [
    "AnnotationError",
    "read_annotations",
    "read_bg_list",
    "read_boxes_csv",
    "read_boxes_json",
    "read_info_dat",
]

Annotations = dict[str, np.ndarray]


class AnnotationError(ValueError):
    """A list or annotation file is malformed; the message names the file and line."""


def _resolve(base: Path, entry: str) -> str:
    p = Path(entry).expanduser()
    return str(p if p.is_absolute() else (base / p).resolve())


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise AnnotationError(f"{path}: no such {what} file") from None
    except UnicodeDecodeError:
        raise AnnotationError(f"{path}: not a text file") from None
    except OSError as exc:
        raise AnnotationError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def read_bg_list(path: str | os.PathLike[str]) -> list[str]:
    """Read a ``bg.txt`` list of background images (one path per line).

    Blank lines and lines starting with ``#`` are skipped (traincascade stopped reading at the
    first blank line, silently dropping the rest).
    """
    path = Path(path)
    base = path.parent.resolve()
    out = [
        _resolve(base, line.strip())
        for line in _read_text(path, "background list").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not out:
        raise AnnotationError(f"{path}: the background list is empty")
    return out


def _check_box(vals: list[str], where: str) -> list[int]:
    try:
        box = [int(v) for v in vals]
    except ValueError:
        raise AnnotationError(
            f"{where}: box values must be integers, got {' '.join(vals)!r}"
        ) from None
    if box[2] <= 0 or box[3] <= 0 or box[0] < 0 or box[1] < 0:
        raise AnnotationError(f"{where}: invalid box {box} (x, y must be >= 0 and w, h > 0)")
    return box


def _as_boxes(rows: list[list[int]]) -> np.ndarray:
    return np.asarray(rows, dtype=np.int64).reshape(-1, 4)


def read_info_dat(path: str | os.PathLike[str]) -> Annotations:
    """Read an OpenCV ``info.dat``: ``image n x1 y1 w1 h1 ... xn yn wn hn`` per entry.

    Entries may wrap over lines (as OpenCV's reader allows); an image may appear with ``n = 0``.
    """
    path = Path(path)
    base = path.parent.resolve()
    tokens: list[tuple[str, int]] = []
    for lineno, line in enumerate(_read_text(path, "info.dat").splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        tokens.extend((tok, lineno) for tok in line.split())
    out: dict[str, list[list[int]]] = {}
    i = 0
    while i < len(tokens):
        name, lineno = tokens[i]
        if i + 1 >= len(tokens):
            raise AnnotationError(f"{path}, line {lineno}: {name!r} has no box count")
        count_tok, lineno = tokens[i + 1]
        try:
            n = int(count_tok)
        except ValueError:
            raise AnnotationError(
                f"{path}, line {lineno}: expected the number of boxes after {name!r}, "
                f"got {count_tok!r} (paths cannot contain spaces)"
            ) from None
        if n < 0:
            raise AnnotationError(f"{path}, line {lineno}: negative box count {n}")
        vals = tokens[i + 2 : i + 2 + 4 * n]
        if len(vals) < 4 * n:
            raise AnnotationError(
                f"{path}, line {lineno}: {name!r} announces {n} boxes but only "
                f"{len(vals) // 4} follow"
            )
        rows = out.setdefault(_resolve(base, name), [])
        for k in range(n):
            chunk = vals[4 * k : 4 * k + 4]
            rows.append(_check_box([t for t, _ in chunk], f"{path}, line {chunk[-1][1]}"))
        i += 2 + 4 * n
    if not out:
        raise AnnotationError(f"{path}: no entries")
    return {k: _as_boxes(v) for k, v in out.items()}


def read_boxes_csv(path: str | os.PathLike[str]) -> Annotations:
    """Read boxes from a CSV with a header naming ``image, x, y, w, h`` (any column order)."""
    path = Path(path)
    base = path.parent.resolve()
    text = _read_text(path, "CSV")
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    need = ["image", "x", "y", "w", "h"]
    if header is None:
        raise AnnotationError(f"{path}: empty CSV file")
    cols = [c.strip().lower() for c in header]
    missing = [c for c in need if c not in cols]
    if missing:
        raise AnnotationError(
            f"{path}, line 1: header must name the columns {need}, missing {missing}"
        )
    idx = [cols.index(c) for c in need]
    out: dict[str, list[list[int]]] = {}
    for lineno, row in enumerate(reader, 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < len(cols):
            raise AnnotationError(
                f"{path}, line {lineno}: expected {len(cols)} columns, got {len(row)}"
            )
        vals = [row[j].strip() for j in idx]
        out.setdefault(_resolve(base, vals[0]), []).append(
            _check_box(vals[1:], f"{path}, line {lineno}")
        )
    return {k: _as_boxes(v) for k, v in out.items()}


def read_boxes_json(path: str | os.PathLike[str]) -> Annotations:
    """Read boxes from JSON.

    Accepted shapes: ``{"image.png": [[x, y, w, h], ...], ...}`` or
    ``[{"image": "image.png", "boxes": [[x, y, w, h], ...]}, ...]``.
    """
    path = Path(path)
    base = path.parent.resolve()
    try:
        doc = json.loads(_read_text(path, "JSON"))
    except json.JSONDecodeError as exc:
        raise AnnotationError(f"{path}, line {exc.lineno}: invalid JSON ({exc.msg})") from None
    if isinstance(doc, dict):
        items = list(doc.items())
    elif isinstance(doc, list):
        items = []
        for k, entry in enumerate(doc):
            if not isinstance(entry, dict) or "image" not in entry or "boxes" not in entry:
                raise AnnotationError(
                    f"{path}: entry {k} must be an object with 'image' and 'boxes'"
                )
            items.append((entry["image"], entry["boxes"]))
    else:
        raise AnnotationError(f"{path}: expected a JSON object or list at the top level")
    out: dict[str, list[list[int]]] = {}
    for name, boxes in items:
        if not isinstance(name, str) or not isinstance(boxes, list):
            raise AnnotationError(f"{path}: entry {name!r}: expected a list of boxes")
        rows = out.setdefault(_resolve(base, name), [])
        for b in boxes:
            if not isinstance(b, list | tuple) or len(b) != 4:
                raise AnnotationError(f"{path}: entry {name!r}: box {b!r} is not [x, y, w, h]")
            rows.append(_check_box([str(v) for v in b], f"{path}: entry {name!r}"))
    return {k: _as_boxes(v) for k, v in out.items()}


def read_annotations(path: str | os.PathLike[str]) -> Annotations:
    """Read boxes from ``info.dat`` / ``.txt`` / ``.dat``, ``.csv`` or ``.json`` by extension."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return read_boxes_csv(path)
    if suffix == ".json":
        return read_boxes_json(path)
    return read_info_dat(path)
