"""Background lists and box annotations: one result type for every format.

Every reader returns absolute paths: a relative path in a list file is resolved against the folder
of that list file (``opencv_traincascade`` resolved ``bg.txt`` entries against the working
directory, a classic cause of "Train dataset for temp stage can not be filled").

Boxes are ``(x, y, w, h)`` in pixels, top-left corner plus size, as int64 arrays of shape (k, 4);
coordinates given as floats (COCO, YOLO, LabelMe, CVAT) are rounded corner by corner. Every
reader returns an :class:`AnnotationSet`: a mapping image path -> object boxes, plus *ignore
regions* per image (COCO ``iscrowd``, VOC ``difficult``, CVAT ``occluded`` or an ``ignore``
attribute, boxes labelled ``ignore``/``dontcare``), which are neither positives nor negatives.

This module holds the result type, the background lists and the plain formats (OpenCV
``info.dat``, CSV ``image,x,y,w,h``, vjboost's JSON); the labelling tools' formats, and
:func:`~vjboost.io.formats.read_annotations`, which reads any format, are in
:mod:`vjboost.io.formats`.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from .._io import check_regular

__all__ = [
    "AnnotationError",
    "AnnotationSet",
    "read_bg_list",
    "read_boxes_csv",
    "read_boxes_json",
    "read_info_dat",
]

class AnnotationError(InputError):
    """A list or annotation file is malformed; the message names the file and line or element."""


def _empty() -> np.ndarray:
    return np.zeros((0, 4), dtype=np.int64)


class AnnotationSet(Mapping):
    """Boxes per image, and ignore regions: what every annotation reader returns.

    A read-only mapping ``image path -> boxes (k, 4) int64`` (``(x, y, w, h)``), listing every
    annotated image, also those with no object.

    Parameters
    ----------
    boxes : mapping str -> array (k, 4)
    ignore : mapping str -> array (k, 4), optional
        Ignore regions per image (crowds, ``difficult`` objects...).
    source : str
        The file or folder read.
    format : str
        One of :data:`FORMATS`.

    Examples
    --------
    >>> a = AnnotationSet({"a.png": [[1, 2, 3, 4]], "b.png": []}, {"a.png": [[0, 0, 9, 9]]})
    >>> len(a), a["a.png"].tolist(), a.ignore_for("b.png").shape, a.n_objects
    (2, [[1, 2, 3, 4]], (0, 4), 1)
    """

    def __init__(self, boxes: Mapping[str, object], ignore: Mapping[str, object] | None = None,
                 *, source: str = "", format: str = "") -> None:
        self._boxes = {k: np.asarray(v, dtype=np.int64).reshape(-1, 4) for k, v in boxes.items()}
        self.ignore = {k: np.asarray(v, dtype=np.int64).reshape(-1, 4)
                       for k, v in (ignore or {}).items() if len(v)}
        for k in self.ignore:
            self._boxes.setdefault(k, _empty())
        self.source = source
        self.format = format
        self.image_ids: dict[str, str] = {}  # COCO image id -> path (COCO files only)
        # path -> (width, height, where) the file declares (COCO images[].width/height),
        # compared with the image once it is read (check_image)
        self.sizes: dict[str, tuple[int, int, str]] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        return self._boxes[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._boxes)

    def __len__(self) -> int:
        return len(self._boxes)

    def __repr__(self) -> str:
        return (f"AnnotationSet({len(self)} images, {self.n_objects} objects, "
                f"{sum(len(v) for v in self.ignore.values())} ignore regions, "
                f"format={self.format!r})")

    @property
    def n_objects(self) -> int:
        """Object boxes over all images."""
        return int(sum(len(v) for v in self._boxes.values()))

    def ignore_for(self, image: str) -> np.ndarray:
        """Ignore regions of one image ((0, 4) when it has none)."""
        return self.ignore.get(image, _empty())

    def restrict(self, images: Iterable[str]) -> AnnotationSet:
        """The same annotations for the given images only."""
        keep = set(images)
        out = AnnotationSet({k: v for k, v in self._boxes.items() if k in keep},
                            {k: v for k, v in self.ignore.items() if k in keep},
                            source=self.source, format=self.format)
        out.image_ids = {i: p for i, p in self.image_ids.items() if p in keep}
        out.sizes = {p: v for p, v in self.sizes.items() if p in keep}
        return out

    def check_image(self, image: str, width: int, height: int) -> None:
        """Check the annotations of ``image`` against its real size, once it has been read:
        the size the file declares, if any, and that every box and ignore region overlaps the
        image (a box entirely outside can only count as a miss). A declared size that is the
        image's turned a quarter (a JPEG read upright by its EXIF orientation) passes, and its
        boxes are not checked.

        Parameters
        ----------
        image : str
            An annotated image's path.
        width, height : int
            Its size in pixels.

        Raises
        ------
        AnnotationError
            Naming the annotation file and the image (and the element that declares the size).

        Examples
        --------
        >>> a = AnnotationSet({"a.png": [[1, 2, 3, 4], [50, 50, 5, 5]]}, source="gt.csv")
        >>> try:
        ...     a.check_image("a.png", 40, 30)
        ... except AnnotationError as exc:
        ...     print(exc)
        gt.csv: a.png: box [50, 50, 5, 5] lies entirely outside the 40x30 image
        >>> a.sizes["a.png"] = (30, 40, "gt.csv: a.png")  # stored 30x40, read upright as 40x30
        >>> a.check_image("a.png", 40, 30)
        """
        declared = self.sizes.get(image)
        if declared is not None and declared[:2] == (height, width) != (width, height):
            # a photograph turned a quarter by its EXIF orientation when read: the file gives
            # the size as stored, and its boxes may be in either frame (tools differ)
            return
        if declared is not None and declared[:2] != (width, height):
            raise AnnotationError(
                f"{declared[2]}: width x height {declared[0]}x{declared[1]} contradicts the "
                f"image {image}, which is {width}x{height}")
        for kind, boxes in (("box", self._boxes.get(image, _empty())),
                            ("ignore region", self.ignore_for(image))):
            for x, y, w, h in boxes.tolist():
                if x >= width or y >= height or x + w <= 0 or y + h <= 0:
                    raise AnnotationError(
                        f"{self.source}: {image}: {kind} {[x, y, w, h]} lies entirely outside "
                        f"the {width}x{height} image")


def _resolve(base: Path, entry: str) -> str:
    if "\x00" in entry:  # the OS refuses such paths (ValueError deep in os.path)
        raise AnnotationError(f"image path {entry[:40]!r} holds a NUL character")
    p = Path(entry).expanduser()
    return str(p if p.is_absolute() else (base / p).resolve())


def _image_base(path: Path, images: str | os.PathLike[str] | None) -> Path:
    """The folder image names are relative to: ``images``, which must exist (a mistyped folder
    would otherwise fall back silently), else the annotation file's folder."""
    if images is None:
        return path.parent.resolve()
    if not Path(images).is_dir():
        raise AnnotationError(f"{images}: the image folder does not exist")
    return Path(images).resolve()


def _read_text(path: Path, what: str) -> str:
    check_regular(path, what=f"{what} file", error=AnnotationError)
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise AnnotationError(f"{path}: no such {what} file") from None
    except UnicodeDecodeError:
        raise AnnotationError(f"{path}: not a text file") from None
    except OSError as exc:
        raise AnnotationError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def read_bg_list(path: str | os.PathLike[str], *, what: str = "background list") -> list[str]:
    """Read a ``bg.txt`` list of background images (one path per line).

    Blank lines and lines starting with ``#`` are skipped (traincascade stopped reading at the
    first blank line, silently dropping the rest).

    Parameters
    ----------
    path : path-like
    what : str, default="background list"
        What the list is, in errors (``"image list"`` for the inputs of ``vjdetect``).

    Returns
    -------
    list of str
        The images' paths, relative ones resolved against the list's folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()).resolve()
    >>> _ = (d / "bg.txt").write_text("# street scenes\\nneg/a.png\\n\\nneg/b.jpg\\n")
    >>> [pathlib.Path(p).relative_to(d).as_posix() for p in read_bg_list(d / "bg.txt")]
    ['neg/a.png', 'neg/b.jpg']
    """
    path = Path(path)
    base = path.parent.resolve()
    out = [
        _naming(path, _resolve, base, line.strip())
        for line in _read_text(path, what).splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not out:
        raise AnnotationError(f"{path}: the {what} is empty")
    return out


_INT = re.compile(r"[+-]?[0-9]{1,10}")
MAX_COORD = 2**31 - 1
"""Largest coordinate or size accepted in a box (int32, as OpenCV's rectangles)."""


def _check_box(vals: list[str], where: str, *, outside: bool = False) -> list[int]:
    """The box of ``vals``; ``outside``: it may start left of or above the image (an object cut
    by the border, as COCO and VOC boxes may; OpenCV's ``info.dat`` may not)."""
    if not all(_INT.fullmatch(v) for v in vals):
        raise AnnotationError(f"{where}: box values must be integers, got {' '.join(vals)!r}")
    box = [int(v) for v in vals]
    if max(abs(v) for v in box) > MAX_COORD or box[0] + box[2] > MAX_COORD \
            or box[1] + box[3] > MAX_COORD:
        raise AnnotationError(f"{where}: box {box} out of range (coordinates up to {MAX_COORD})")
    if box[2] <= 0 or box[3] <= 0:
        raise AnnotationError(f"{where}: invalid box {box} (w, h must be > 0)")
    if not outside and (box[0] < 0 or box[1] < 0):
        raise AnnotationError(f"{where}: invalid box {box} (x, y must be >= 0 in this format)")
    return box


def _as_boxes(rows: list[list[int]]) -> np.ndarray:
    return np.asarray(rows, dtype=np.int64).reshape(-1, 4)


def read_info_dat(path: str | os.PathLike[str], *,
                  images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """Read an OpenCV ``info.dat``: ``image n x1 y1 w1 h1 ... xn yn wn hn`` per entry.

    Entries may wrap over lines (as OpenCV's reader allows); an image may appear with ``n = 0``.

    Parameters
    ----------
    path : path-like
    images : path-like, optional
        Folder the image names are relative to (default: the file's folder).

    Returns
    -------
    AnnotationSet

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "info.dat").write_text("pos/a.png 2 0 0 24 24\\n  30 10 24 24\\npos/b.png 0\\n")
    >>> ann = read_info_dat(d / "info.dat")
    >>> {pathlib.Path(k).name: v.tolist() for k, v in ann.items()}
    {'a.png': [[0, 0, 24, 24], [30, 10, 24, 24]], 'b.png': []}
    >>> ann.format, ann.n_objects
    ('info', 2)
    """
    path = Path(path)
    base = _image_base(path, images)
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
    return AnnotationSet({k: _as_boxes(v) for k, v in out.items()}, source=str(path),
                         format="info")


def csv_cells(row: list[str], n: int, where: str, error: type[Exception]) -> list[str]:
    """The ``n`` cells of a CSV row under an ``n``-column header: empty cells after the last
    column (a trailing comma) are dropped, and a row left with more or fewer cells is refused
    (a longer row is as misaligned as a shorter one).

    Parameters
    ----------
    row : list of str
    n : int
        Columns of the header.
    where : str
        The file and line, for messages.
    error : exception class
        Raised with a one-line message.

    Returns
    -------
    list of str

    Examples
    --------
    >>> csv_cells(["a.png", "1", "2", "3", "4", ""], 5, "gt.csv, line 2", ValueError)
    ['a.png', '1', '2', '3', '4']
    >>> csv_cells(["a.png", "1", "2", "3", "4", "9"], 5, "gt.csv, line 2", ValueError)
    Traceback (most recent call last):
    ...
    ValueError: gt.csv, line 2: expected 5 columns, got 6
    """
    while len(row) > n and not row[-1].strip():
        row = row[:-1]
    if len(row) != n:
        raise error(f"{where}: expected {n} columns, got {len(row)}")
    return row


def read_boxes_csv(path: str | os.PathLike[str], *,
                   images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """Read boxes from a CSV with a header naming ``image, x, y, w, h`` (any column order).

    Parameters
    ----------
    path : path-like
    images : path-like, optional
        Folder the image names are relative to (default: the file's folder).

    Returns
    -------
    AnnotationSet

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "boxes.csv").write_text("x,y,w,h,image\\n1,2,30,40,a.png\\n50,5,20,20,a.png\\n")
    >>> ann = read_boxes_csv(d / "boxes.csv")
    >>> {pathlib.Path(k).name: v.tolist() for k, v in ann.items()}
    {'a.png': [[1, 2, 30, 40], [50, 5, 20, 20]]}
    """
    path = Path(path)
    base = _image_base(path, images)
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
        row = csv_cells(row, len(cols), f"{path}, line {lineno}", AnnotationError)
        vals = [row[j].strip() for j in idx]
        out.setdefault(_resolve(base, vals[0]), []).append(
            _check_box(vals[1:], f"{path}, line {lineno}", outside=True)
        )
    return AnnotationSet({k: _as_boxes(v) for k, v in out.items()}, source=str(path),
                         format="csv")


def read_boxes_json(path: str | os.PathLike[str], *,
                    images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """Read boxes from JSON.

    Accepted shapes: ``{"image.png": [[x, y, w, h], ...], ...}`` or
    ``[{"image": "image.png", "boxes": [[x, y, w, h], ...]}, ...]``.

    Parameters
    ----------
    path : path-like
    images : path-like, optional
        Folder the image names are relative to (default: the file's folder).

    Returns
    -------
    AnnotationSet

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> doc = [{"image": "a.png", "boxes": [[4, 6, 20, 20]]}, {"image": "b.png", "boxes": []}]
    >>> _ = (d / "boxes.json").write_text(json.dumps(doc))
    >>> ann = read_boxes_json(d / "boxes.json")
    >>> {pathlib.Path(k).name: v.tolist() for k, v in ann.items()}
    {'a.png': [[4, 6, 20, 20]], 'b.png': []}
    """
    path = Path(path)
    base = _image_base(path, images)
    doc = read_json(path)
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
            rows.append(_check_box([_int_text(v) for v in b], f"{path}: entry {name!r}",
                                   outside=True))
    return AnnotationSet({k: _as_boxes(v) for k, v in out.items()}, source=str(path),
                         format="json")


def read_json(path: Path, what: str = "JSON"):
    """Parse a JSON file; errors name the file and line (also for absurd nesting).

    Parameters
    ----------
    path : Path
        The file (UTF-8 text, a byte-order mark allowed).
    what : str, default "JSON"
        What the file is, for errors (e.g. ``"COCO JSON"``).

    Returns
    -------
    object
        The parsed document.

    Raises
    ------
    AnnotationError
        Unreadable file or invalid JSON.
    """
    text = _read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnnotationError(f"{path}, line {exc.lineno}: invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise AnnotationError(f"{path}: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise AnnotationError(f"{path}: invalid JSON ({exc})") from None


def _int_text(v) -> str:
    # JSON numbers as the text _check_box parses: 3.0 -> "3"; bools and others stay invalid
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v) if not isinstance(v, bool) else repr(v)


#: the class-name files of a YOLO dataset, in the order they are looked for
_NAMES_FILES = ("classes.txt", "obj.names", "names.txt", "classes.names")


def _naming(path: Path, read: Any, *args: Any, **kwargs: Any) -> Any:
    """``read(*args, **kwargs)``; an :class:`AnnotationError` that does not name the file or
    folder gets ``path`` as its prefix."""
    try:
        return read(*args, **kwargs)
    except AnnotationError as exc:
        if str(path) in str(exc):
            raise
        raise AnnotationError(f"{path}: {exc}") from None
