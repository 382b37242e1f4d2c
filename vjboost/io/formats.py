"""Readers of the labelling tools' formats (COCO, Pascal VOC, YOLO, LabelMe, CVAT), and of all.

Each reader returns an :class:`~vjboost.io.annotations.AnnotationSet` (boxes and ignore regions
per image, absolute paths) and raises :class:`~vjboost.io.annotations.AnnotationError` naming the
file, the element or line, and what is wrong. XML is parsed with ``defusedxml`` (no entities, no
external references). Use them through :func:`read_annotations`, which reads every format
(these and the plain ones of :mod:`vjboost.io.annotations`); :func:`detect_format` tells them
apart.

COCO is read without pycocotools: the format is one JSON document, read here in a few lines with
errors that name the element at fault, while pycocotools prints to stdout, raises bare
``AssertionError``s and needs a compiled extension.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._io import check_regular
from .annotations import (
    _NAMES_FILES,
    MAX_COORD,
    AnnotationError,
    AnnotationSet,
    _image_base,
    _naming,
    _read_text,
    _resolve,
    read_boxes_csv,
    read_boxes_json,
    read_info_dat,
    read_json,
)
from .inputs import IMAGE_SUFFIXES, image_files

__all__ = ["FORMATS", "IGNORE_LABELS", "READERS", "detect_format", "read_annotations", "read_coco",
           "read_coco_results", "read_cvat", "read_labelme", "read_voc", "read_yolo"]

FORMATS = ("info", "csv", "json", "coco", "voc", "yolo", "labelme", "cvat")
"""Annotation formats :func:`read_annotations` reads (``format=`` names)."""

IGNORE_LABELS = frozenset({"ignore", "dontcare", "don't care", "crowd", "ignored"})
"""Labels that mark a box as an ignore region (VOC, YOLO names, LabelMe, CVAT)."""


# ------------------------------------------------------------------------------------------------
# shared helpers
# ------------------------------------------------------------------------------------------------


def _num(v: Any, where: str) -> float:
    """A finite number from JSON/XML content."""
    if isinstance(v, bool):
        raise AnnotationError(f"{where}: expected a number, got {v!r}")
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            raise AnnotationError(f"{where}: expected a number, got {v!r}") from None
    if not isinstance(v, int | float):
        raise AnnotationError(f"{where}: expected a number, got {type(v).__name__}")
    try:
        f = float(v)
    except OverflowError:
        raise AnnotationError(f"{where}: number out of range") from None
    if not math.isfinite(f) or abs(f) > MAX_COORD:
        raise AnnotationError(f"{where}: number {v!r} out of range (finite, up to {MAX_COORD})")
    return f


def _corners(x0: float, y0: float, x1: float, y1: float, where: str) -> list[int]:
    """``(x, y, w, h)`` from corners rounded to the pixel grid (at least 1 pixel)."""
    if x1 < x0 or y1 < y0:
        raise AnnotationError(f"{where}: box corners ({x0:g}, {y0:g}) - ({x1:g}, {y1:g}) are "
                              "reversed (negative width or height)")
    if x1 == x0 or y1 == y0:
        raise AnnotationError(f"{where}: box ({x0:g}, {y0:g}) - ({x1:g}, {y1:g}) has no area")
    x, y = round(x0), round(y0)
    return [x, y, max(1, round(x1) - x), max(1, round(y1) - y)]


class _Collector:
    """Boxes and ignore regions per image, with the category filter."""

    def __init__(self, path: Path, category: str | int | None, fmt: str) -> None:
        self.path = path
        self.category = None if category is None else str(category)
        self.fmt = fmt
        self.boxes: dict[str, list[list[int]]] = {}
        self.ignore: dict[str, list[list[int]]] = {}
        self.labels: dict[str, int] = {}
        self.image_ids: dict[str, str] = {}
        self.sizes: dict[str, tuple[int, int, str]] = {}

    def image(self, name: str) -> None:
        self.boxes.setdefault(name, [])

    def add(self, name: str, label: str, box: list[int], *, ignore: bool = False,
            aliases: tuple[str, ...] = ()) -> None:
        """Record one box of image ``name``.

        Labels named like ignore regions (``IGNORE_LABELS``) always become ignore regions;
        other labels are counted, and boxes outside the chosen category are left out.

        Parameters
        ----------
        name : str
            The image's resolved path.
        label : str
            The box's class label.
        box : list of 4 int
            ``(x, y, w, h)`` in pixels.
        ignore : bool, default False
            An ignore region of the chosen category (crowd, difficult, occluded...).
        aliases : tuple of str, default ()
            Other names of the label the category may be given as (e.g. a YOLO class id).
        """
        self.image(name)
        if label.strip().lower() in IGNORE_LABELS:
            self.ignore.setdefault(name, []).append(box)
            return
        self.labels[label] = self.labels.get(label, 0) + 1
        if self.category is not None and self.category not in (label, *aliases):
            return
        (self.ignore.setdefault(name, []) if ignore else self.boxes[name]).append(box)

    def result(self) -> AnnotationSet:
        if self.category is None and len(self.labels) > 1:
            names = ", ".join(f"{k} ({v})" for k, v in sorted(self.labels.items())[:12])
            raise AnnotationError(
                f"{self.path}: holds {len(self.labels)} categories ({names}); choose one "
                "(--category NAME or ID)")
        if self.category is not None and self.labels and not any(
                len(v) for v in self.boxes.values()) and self.category not in self.labels:
            raise AnnotationError(
                f"{self.path}: no object of category {self.category!r} (categories: "
                f"{', '.join(sorted(self.labels)[:12])})")
        out = AnnotationSet(self.boxes, self.ignore, source=str(self.path), format=self.fmt)
        out.image_ids = self.image_ids
        out.sizes = self.sizes
        return out


def _xml_root(path: Path, what: str):
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    text = _read_text(path, what)
    try:
        return fromstring(text)
    except ParseError as exc:
        line = getattr(exc, "position", (None,))[0]
        where = f", line {line}" if line else ""
        raise AnnotationError(f"{path}{where}: invalid XML ({exc})") from None
    except DefusedXmlException as exc:
        raise AnnotationError(f"{path}: refused XML ({type(exc).__name__})") from None
    except (RecursionError, ValueError) as exc:
        raise AnnotationError(f"{path}: invalid XML ({exc or type(exc).__name__})") from None


def _text(el, tag: str, where: str, *, required: bool = True) -> str | None:
    child = el.find(tag)
    if child is None or child.text is None or not child.text.strip():
        if required:
            raise AnnotationError(f"{where}: missing <{tag}>")
        return None
    return child.text.strip()


def _flag(v: str | None) -> bool:
    return v is not None and v.strip().lower() in ("1", "true", "yes")


def _image_root(path: Path, images: str | os.PathLike[str] | None) -> Path:
    """``images`` (which must exist), else the annotation folder or the file's folder."""
    if images is None and path.is_dir():
        return path.resolve()
    return _image_base(path, images)


# ------------------------------------------------------------------------------------------------
# COCO
# ------------------------------------------------------------------------------------------------


def read_coco(path: Path, *, category: str | int | None = None,
              images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """COCO object-detection JSON: ``images``, ``annotations`` (``bbox`` = x, y, w, h),
    ``categories``; ``iscrowd`` (or ``ignore``) annotations become ignore regions.

    ``category`` is a category name or id; image ``file_name`` s are relative to ``images``
    (default: the JSON file's folder).

    Parameters
    ----------
    path : Path
        The COCO JSON file.
    category : str or int, optional
        The object class to read (its name or COCO id); required when the file holds several.
        Boxes of other classes are left out.
    images : path-like, optional
        Folder the ``file_name`` s are relative to (default: the JSON file's folder).

    Returns
    -------
    AnnotationSet

    Raises
    ------
    AnnotationError
        Malformed content, naming the file and the element or line.
    """
    doc = read_json(path, "COCO JSON")
    if not isinstance(doc, dict):
        raise AnnotationError(f"{path}: a COCO file is a JSON object with 'images' and "
                              "'annotations'")
    for key in ("images", "annotations"):
        if not isinstance(doc.get(key), list):
            raise AnnotationError(f"{path}: '{key}' must be a list")
    cats = doc.get("categories", [])
    if not isinstance(cats, list):
        raise AnnotationError(f"{path}: 'categories' must be a list")
    names: dict[str, str] = {}
    for k, c in enumerate(cats):
        where = f"{path}: categories[{k}]"
        if not isinstance(c, dict) or "id" not in c:
            raise AnnotationError(f"{where}: expected an object with 'id' and 'name'")
        key = _key(c["id"], where)
        if key in names:  # which name its boxes have would depend on the order
            raise AnnotationError(f"{where}: id {c['id']!r} is already the id of category "
                                  f"{names[key]!r}")
        names[key] = str(c.get("name", c["id"]))
    root = _image_root(path, images)
    files: dict[str, str] = {}
    col = _Collector(path, None, "coco")
    for k, im in enumerate(doc["images"]):
        where = f"{path}: images[{k}]"
        if not isinstance(im, dict) or "id" not in im or not isinstance(im.get("file_name"),
                                                                         str):
            raise AnnotationError(f"{where}: expected an object with 'id' and 'file_name'")
        key = _key(im["id"], where)
        if key in files:  # the boxes of one would be laid on the other
            raise AnnotationError(f"{where}: id {im['id']!r} is already the id of "
                                  f"{files[key]}")
        img = files[key] = _resolve(root, im["file_name"])
        col.image(img)
        if "width" in im or "height" in im:  # optional; checked when the image is read
            col.sizes[img] = (*(_size(im.get(k), f"{where}.{k}") for k in ("width", "height")),
                              where)
    col.image_ids = dict(files)
    want = None if category is None else str(category)
    if want is not None and want not in names and want not in names.values():
        raise AnnotationError(f"{path}: no category {category!r} (categories: "
                              f"{', '.join(sorted(set(names.values()))[:12])})")
    col.category = want
    for k, a in enumerate(doc["annotations"]):
        where = f"{path}: annotations[{k}]"
        if not isinstance(a, dict):
            raise AnnotationError(f"{where}: expected an object")
        img = files.get(_key(a.get("image_id"), where))
        if img is None:
            raise AnnotationError(f"{where}: image_id {a.get('image_id')!r} is not in 'images'")
        x, y, w, h = _bbox(a, where)
        box = _corners(x, y, x + w, y + h, f"{where}.bbox")
        cid = _key(a.get("category_id"), where) if "category_id" in a else ""
        if names and cid not in names:  # (a file without categories labels boxes by id)
            raise AnnotationError(f"{where}: category_id {a.get('category_id')!r} is not in "
                                  "'categories'")
        crowd = _coco_flag(a, "iscrowd", where) or _coco_flag(a, "ignore", where)
        col.add(img, names.get(cid, cid), box, ignore=crowd, aliases=(cid,))
    return col.result()


def _bbox(entry: dict[str, Any], where: str) -> tuple[float, ...]:
    """``(x, y, w, h)`` of a COCO annotation's or result's ``bbox``."""
    bbox = entry.get("bbox")
    if not isinstance(bbox, list) or len(bbox) != 4:
        raise AnnotationError(f"{where}: 'bbox' must be [x, y, width, height]")
    return tuple(_num(v, f"{where}.bbox") for v in bbox)


def _size(v: Any, where: str) -> int:
    """A COCO image side: a positive integer."""
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= MAX_COORD:
        raise AnnotationError(f"{where}: expected a positive integer, got {v!r}")
    return v


def _coco_flag(a: dict[str, Any], key: str, where: str) -> bool:
    """COCO's ``iscrowd`` / ``ignore``: 0 or 1 (another value would silently turn an object
    into an ignore region, or the reverse)."""
    v = a.get(key, 0)
    if isinstance(v, str) or v not in (0, 1):  # (0.0 and 1.0, as some writers store them, pass)
        raise AnnotationError(f"{where}: '{key}' must be 0 or 1, got {v!r}")
    return bool(v)


def _key(v: Any, where: str) -> str:
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise AnnotationError(f"{where}: id {v!r} must be an integer or a string")
    return str(v)


# ------------------------------------------------------------------------------------------------
# Pascal VOC
# ------------------------------------------------------------------------------------------------


def read_voc(path: Path, *, category: str | int | None = None,
             images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """Pascal VOC XML: one ``<annotation>`` file per image, or a folder of them.

    Corners are VOC's 1-based inclusive pixel indices: ``x = xmin - 1``, ``w = xmax - xmin + 1``.
    ``<difficult>1</difficult>`` objects become ignore regions. Image files are looked up in
    ``images``, else a sibling ``JPEGImages`` folder, else the XML's folder.

    Parameters
    ----------
    path : Path
        One VOC XML file, a folder of them, or a dataset's root holding them in
        ``Annotations/`` (and the images in ``JPEGImages/``).
    category : str or int, optional
        The object class to read (its name); required when the file holds several.
        Boxes of other classes are left out.
    images : path-like, optional
        Folder of the image files (default: a sibling ``JPEGImages`` folder if there is one,
        else the XML's folder).

    Returns
    -------
    AnnotationSet

    Raises
    ------
    AnnotationError
        Malformed content, naming the file and the element or line.
    """
    if path.is_dir() and not any(path.glob("*.xml")):
        path = _voc_annotations(path) or path  # a dataset's root: its XML is in Annotations/
    files = sorted(path.glob("*.xml")) if path.is_dir() else [path]
    if not files:
        raise AnnotationError(f"{path}: no .xml annotation file in this folder")
    folder = path if path.is_dir() else path.parent
    if images is None and (folder.parent / "JPEGImages").is_dir():
        images = folder.parent / "JPEGImages"
    root = _image_root(folder, images)
    col = _Collector(path, category, "voc")
    for f in files:
        ann = _xml_root(f, "VOC XML")
        if ann.tag != "annotation":
            raise AnnotationError(f"{f}: root element <{ann.tag}>, expected <annotation>")
        name = _resolve(root, _text(ann, "filename", f"{f}: <annotation>"))
        col.image(name)
        for k, obj in enumerate(ann.findall("object")):
            where = f"{f}: <object> #{k + 1}"
            label = _text(obj, "name", where)
            bb = obj.find("bndbox")
            if bb is None:
                raise AnnotationError(f"{where}: missing <bndbox>")
            x0, y0, x1, y1 = (_num(_text(bb, t, f"{where} <bndbox>"), f"{where} <{t}>")
                              for t in ("xmin", "ymin", "xmax", "ymax"))
            box = _corners(x0 - 1, y0 - 1, x1, y1, f"{where} <bndbox>")
            col.add(name, label, box, ignore=_flag(_text(obj, "difficult", where,
                                                         required=False)))
    return col.result()


# ------------------------------------------------------------------------------------------------
# YOLO
# ------------------------------------------------------------------------------------------------


def _yolo_names(label_dir: Path) -> list[str] | None:
    for d in (label_dir, label_dir.parent):
        for n in _NAMES_FILES:
            f = d / n
            if f.is_file():
                return [ln.strip() for ln in _read_text(f, "class names").splitlines()
                        if ln.strip()]
    return None


def read_yolo(path: Path, *, category: str | int | None = None,
              images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """YOLO txt labels: per image ``<stem>.txt`` with lines ``class cx cy w h`` (fractions of
    the image size), with the images in ``images`` (default: a sibling ``images`` folder of a
    ``labels`` folder, else the label folder). Every image of that folder is listed (no label
    file: no object). Class names come from ``classes.txt``/``obj.names`` beside the labels.

    Parameters
    ----------
    path : Path
        The dataset folder (with a ``labels`` folder) or the folder of label files.
    category : str or int, optional
        The object class to read (its name from the class-name file, or the class id);
        required when the file holds several. Boxes of other classes are left out.
    images : path-like, optional
        Folder of the images (default: a sibling ``images`` folder of ``labels``, else the
        label folder).

    Returns
    -------
    AnnotationSet

    Raises
    ------
    AnnotationError
        Malformed content, naming the file and the element or line.
    """
    from .images import image_size

    label_dir = path / "labels" if (path / "labels").is_dir() else path
    if not label_dir.is_dir():
        raise AnnotationError(f"{path}: a YOLO dataset is a folder of .txt label files")
    if images is None:
        sib = label_dir.parent / "images"
        images = sib if label_dir.name == "labels" and sib.is_dir() else label_dir
    root = _image_root(label_dir, images)
    names = _yolo_names(label_dir)
    by_stem: dict[str, str] = {}
    for f in image_files(root):
        by_stem.setdefault(Path(f).stem, str(Path(f).resolve()))
    col = _Collector(path, category, "yolo")
    for img in by_stem.values():
        col.image(img)
    skip = {"classes.txt", "names.txt"}
    for f in sorted(label_dir.glob("*.txt")):
        if f.name.lower() in skip:
            continue
        img = by_stem.get(f.stem)
        if img is None:
            raise AnnotationError(f"{f}: no image named {f.stem}.* in {root} "
                                  f"({', '.join(IMAGE_SUFFIXES[:4])}...)")
        size = image_size(img)
        if size is None or size[0] <= 0:
            raise AnnotationError(f"{f}: the size of its image {img} cannot be read")
        iw, ih = size
        for lineno, line in enumerate(_read_text(f, "YOLO label").splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            where = f"{f}, line {lineno}"
            # a 6th field is a detection's score (vjdetect --format yolo writes one); more is
            # a segment or a misaligned line, not a box
            if len(parts) not in (5, 6):
                raise AnnotationError(f"{where}: expected 'class cx cy w h' (and optionally a "
                                      f"score), got {len(parts)} fields: {line.strip()[:80]!r} "
                                      "(segment and keypoint labels hold no box to read)")
            if len(parts) == 6:
                _num(parts[5], f"{where}: score")
            cls = parts[0]
            if not cls.isdigit():
                raise AnnotationError(f"{where}: class {cls!r} must be an integer index")
            cx, cy, w, h = (_num(v, where) for v in parts[1:5])
            if not (0 <= cx <= 1 and 0 <= cy <= 1 and 0 < w <= 1 and 0 < h <= 1):
                raise AnnotationError(f"{where}: cx, cy, w, h must be fractions of the image "
                                      f"size (0..1), got {' '.join(parts[1:5])}")
            label = names[int(cls)] if names and int(cls) < len(names) else cls
            box = _corners((cx - w / 2) * iw, (cy - h / 2) * ih, (cx + w / 2) * iw,
                           (cy + h / 2) * ih, where)
            col.add(img, label, box, aliases=(cls,))
    return col.result()


# ------------------------------------------------------------------------------------------------
# LabelMe
# ------------------------------------------------------------------------------------------------


def read_labelme(path: Path, *, category: str | int | None = None,
                 images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """LabelMe JSON (one file per image, or a folder of them): ``rectangle`` shapes; other
    shape types are not boxes and are left out. ``category`` filters by label.

    Parameters
    ----------
    path : Path
        One LabelMe JSON file or a folder of them.
    category : str or int, optional
        The object class to read (its name: a shape label); required when the file holds several.
        Boxes of other classes are left out.
    images : path-like, optional
        Folder the ``imagePath`` s are relative to (default: the JSON file's folder).

    Returns
    -------
    AnnotationSet

    Raises
    ------
    AnnotationError
        Malformed content, naming the file and the element or line.
    """
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise AnnotationError(f"{path}: no .json file in this folder")
    col = _Collector(path, category, "labelme")
    for f in files:
        doc = read_json(f, "LabelMe JSON")
        if not isinstance(doc, dict) or not isinstance(doc.get("shapes"), list):
            raise AnnotationError(f"{f}: a LabelMe file is an object with a 'shapes' list")
        if not isinstance(doc.get("imagePath"), str) or not doc["imagePath"].strip():
            raise AnnotationError(f"{f}: missing 'imagePath'")
        root = _image_root(f.parent, images)
        name = _resolve(root, doc["imagePath"].replace("\\", "/"))
        col.image(name)
        for k, sh in enumerate(doc["shapes"]):
            where = f"{f}: shapes[{k}]"
            if not isinstance(sh, dict):
                raise AnnotationError(f"{where}: expected an object")
            if sh.get("shape_type", "polygon") != "rectangle":
                continue
            pts = sh.get("points")
            if (not isinstance(pts, list) or len(pts) != 2
                    or not all(isinstance(p, list) and len(p) == 2 for p in pts)):
                raise AnnotationError(f"{where}: a rectangle has 'points' [[x1, y1], [x2, y2]]")
            (xa, ya), (xb, yb) = ([_num(v, f"{where}.points") for v in p] for p in pts)
            box = _corners(min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb), where)
            label = sh.get("label")
            if not isinstance(label, str):
                raise AnnotationError(f"{where}: 'label' must be a string")
            col.add(name, label, box)
    return col.result()


# ------------------------------------------------------------------------------------------------
# CVAT
# ------------------------------------------------------------------------------------------------


def read_cvat(path: Path, *, category: str | int | None = None,
              images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """CVAT XML for images (1.1): ``<image name=...>`` elements with ``<box label xtl ytl xbr
    ybr>``; ``occluded="1"`` or an ``<attribute name="ignore">true</attribute>`` makes a box an
    ignore region.

    Parameters
    ----------
    path : Path
        The CVAT XML file (not a folder).
    category : str or int, optional
        The object class to read (its name: a box label); required when the file holds several.
        Boxes of other classes are left out.
    images : path-like, optional
        Folder the image names are relative to (default: the XML file's folder).

    Returns
    -------
    AnnotationSet

    Raises
    ------
    AnnotationError
        Malformed content, naming the file and the element or line.
    """
    if path.is_dir():
        raise AnnotationError(f"{path}: is a folder; CVAT annotations are one XML file")
    ann = _xml_root(path, "CVAT XML")
    if ann.tag != "annotations":
        raise AnnotationError(f"{path}: root element <{ann.tag}>, expected <annotations>")
    if ann.find("track") is not None and ann.find("image") is None:
        raise AnnotationError(f"{path}: a CVAT video export (<track>); export 'CVAT for "
                              "images 1.1'")
    root = _image_root(path, images)
    col = _Collector(path, category, "cvat")
    for k, im in enumerate(ann.iter("image")):
        where = f"{path}: <image> #{k + 1}"
        raw = im.get("name")
        if not raw:
            raise AnnotationError(f"{where}: missing the 'name' attribute")
        name = _resolve(root, raw)
        col.image(name)
        for j, box in enumerate(im.findall("box")):
            bw = f"{where} ({raw}) <box> #{j + 1}"
            vals = []
            for a in ("xtl", "ytl", "xbr", "ybr"):
                v = box.get(a)
                if v is None:
                    raise AnnotationError(f"{bw}: missing the '{a}' attribute")
                vals.append(_num(v, f"{bw} {a}"))
            label = box.get("label")
            if not label:
                raise AnnotationError(f"{bw}: missing the 'label' attribute")
            ign = _flag(box.get("occluded")) or any(
                (at.get("name") or "").strip().lower() in IGNORE_LABELS and _flag(at.text)
                for at in box.findall("attribute"))
            col.add(name, label, _corners(*vals, bw), ignore=ign)
    return col.result()


def read_coco_results(path: str | os.PathLike[str], ground_truth: AnnotationSet, *,
                      category: str | int | None = None) -> dict[str, tuple[Any, Any]]:
    """Detections in COCO's results format, matched to the images of ``ground_truth``.

    Accepted: a results list ``[{"image_id", "bbox": [x, y, w, h], "score"[, "category_id"]},
    ...]`` (what COCO tools and ``vjdetect --format coco`` annotations hold), or a whole COCO
    document whose ``annotations`` carry ``score`` (``vjdetect --format coco`` output). An
    ``image_id`` is looked up among the ground truth's COCO ids, then as an image path or file
    name; detections of other categories than ``category`` are left out.

    Parameters
    ----------
    path : path-like
        The results JSON file.
    ground_truth : AnnotationSet
        The annotations the detections are matched to (its images and COCO ids).
    category : str or int, optional
        Keep only detections of this category (a name, or a COCO ``category_id``).

    Returns
    -------
    dict
        ``image path -> (boxes (n, 4) float64, scores (n,) float64)`` for every image of the
        ground truth (empty where there is no detection).

    Raises
    ------
    AnnotationError
        Malformed file, or an image that is not in the ground truth.
    """
    import numpy as np

    path = Path(path)
    doc = read_json(path, "COCO results")
    names: dict[str, str] = {}
    if isinstance(doc, dict):
        for k, im in enumerate(doc.get("images") or []):
            if isinstance(im, dict) and "id" in im and isinstance(im.get("file_name"), str):
                names[_key(im["id"], f"{path}: images[{k}]")] = im["file_name"]
        cats = {str(c.get("id")): str(c.get("name")) for c in doc.get("categories") or []
                if isinstance(c, dict)}
        doc = doc.get("annotations")
    else:
        cats = {}
    if not isinstance(doc, list):
        raise AnnotationError(f"{path}: expected a list of results or a COCO document with "
                              "'annotations'")
    gt_ids = getattr(ground_truth, "image_ids", {}) or {}
    by_name: dict[str, str] = {}
    for p in ground_truth:
        by_name.setdefault(Path(p).name, p)
    rows: dict[str, list[list[float]]] = {p: [] for p in ground_truth}
    want = None if category is None else str(category)
    for k, r in enumerate(doc):
        where = f"{path}: [{k}]"
        if not isinstance(r, dict) or "image_id" not in r:
            raise AnnotationError(f"{where}: expected an object with 'image_id', 'bbox', 'score'")
        iid = _key(r["image_id"], where)
        if want is not None and "category_id" in r:
            cid = _key(r["category_id"], where)
            if want not in (cid, cats.get(cid)):
                continue
        img = gt_ids.get(iid)
        if img is None:
            name = names.get(iid, iid)
            img = name if name in rows else by_name.get(Path(name).name)
        if img is None:
            raise AnnotationError(f"{where}: image_id {r['image_id']!r} is not an image of the "
                                  f"ground truth {ground_truth.source}")
        x, y, w, h = _bbox(r, where)
        if w <= 0 or h <= 0:
            raise AnnotationError(f"{where}: bbox {r['bbox']} has no area")
        rows[img].append([x, y, w, h, _num(r.get("score", 1.0), f"{where}.score")])
    out = {}
    for img, v in rows.items():
        a = np.asarray(v, dtype=np.float64).reshape(-1, 5)
        out[img] = (a[:, :4], a[:, 4])
    return out


READERS: dict[str, Callable[..., AnnotationSet]] = {
    "coco": read_coco, "voc": read_voc, "yolo": read_yolo, "labelme": read_labelme,
    "cvat": read_cvat,
}


# ------------------------------------------------------------------------------------------------
# Any format
# ------------------------------------------------------------------------------------------------


def detect_format(path: str | os.PathLike[str]) -> str | None:
    """The annotation format of a file or folder, from its name and first bytes.

    Returns
    -------
    str or None
        One of :data:`FORMATS`; None for a folder without annotation files (e.g. a folder of
        images) or a file of unknown kind.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ann.json"
    >>> _ = p.write_text('{"images": [], "annotations": [], "categories": []}')
    >>> detect_format(p)
    'coco'
    """
    p = Path(path)
    if p.is_dir():
        return _detect_folder(p)
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix == ".xml":
        head = _head(p)
        return "cvat" if "<annotations" in head else "voc"
    if suffix == ".json":
        head = _head(p, 1 << 16)
        if '"shapes"' in head:
            return "labelme"
        if '"annotations"' in head and '"images"' in head:
            return "coco"
        if '"annotations"' in head or '"categories"' in head:
            return "coco"
        return "json"
    if suffix in (".dat", ".txt", ".info", ".lst", ""):
        return "info"
    return None


def _head(p: Path, n: int = 4096) -> str:
    check_regular(p, what="annotation file", error=AnnotationError)  # a FIFO would block
    try:
        with open(p, "rb") as fh:
            return fh.read(n).decode("utf-8", "replace")
    except OSError:
        return ""


def _voc_annotations(root: Path) -> Path | None:
    """The ``Annotations`` folder of a Pascal VOC dataset's root, when it holds VOC XML."""
    sub = root / "Annotations"
    first = next(iter(sorted(sub.glob("*.xml"))), None) if sub.is_dir() else None
    return sub if first is not None and "<annotation" in _head(first) else None


def _detect_folder(p: Path) -> str | None:
    # strict: a folder of crops with a stray README.txt or notes.json must stay a folder of
    # crops, so each format is recognised by the content of its first file
    try:
        files = sorted(f for f in p.iterdir() if f.is_file())
    except OSError:
        return None
    xml = [f for f in files if f.suffix.lower() == ".xml"]
    if xml and "<annotation" in _head(xml[0]):
        return "voc"
    js = [f for f in files if f.suffix.lower() == ".json"]
    if js and '"shapes"' in _head(js[0], 1 << 16):
        return "labelme"
    if not xml and _voc_annotations(p) is not None:  # a VOC dataset's root
        return "voc"
    if (p / "labels").is_dir():
        return "yolo"
    txt = [f for f in files if f.suffix.lower() == ".txt" and f.name.lower() not in _NAMES_FILES]
    if txt and all(f.suffix.lower() in (".txt", ".names", ".yaml", ".yml") for f in files):
        first = next((ln.split() for ln in _head(txt[0]).splitlines() if ln.strip()), [])
        if len(first) >= 5 and first[0].isdigit():
            return "yolo"
    return None


def read_annotations(path: str | os.PathLike[str], *, format: str | None = None,
                     category: str | int | None = None,
                     images: str | os.PathLike[str] | None = None) -> AnnotationSet:
    """Read boxes from any supported annotation file or folder.

    Parameters
    ----------
    path : path-like
        The annotation file, or folder (Pascal VOC XML files, YOLO txt files, LabelMe JSON
        files).
    format : str, optional
        One of :data:`FORMATS`; default: :func:`detect_format`.
    category : str or int, optional
        The object class to read (name, or id for COCO and YOLO). Required when the file holds
        several; boxes of other classes are left out (neither objects nor ignore regions).
    images : path-like, optional
        Folder the image names are relative to; it must exist (default: info.dat, CSV, JSON,
        COCO and CVAT: the file's folder;
        VOC: a sibling ``JPEGImages`` folder if there is one, else the XML folder; YOLO: a
        sibling ``images`` folder of ``labels``, else the label folder; LabelMe: the JSON
        file's folder).

    Returns
    -------
    AnnotationSet

    Raises
    ------
    AnnotationError
        Malformed content: the message names the file, the line or element, and what is wrong.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "boxes.csv").write_text("image,x,y,w,h\\na.png,1,2,30,40\\n")
    >>> ann = read_annotations(d / "boxes.csv")
    >>> ann.format, [b.tolist() for b in ann.values()]
    ('csv', [[[1, 2, 30, 40]]])
    """
    p = Path(path)
    if not p.exists():
        raise AnnotationError(f"{p}: no such annotation file or folder")
    fmt = format or detect_format(p)
    if fmt is None:
        raise AnnotationError(
            f"{p}: not a known annotation format (give --format: {', '.join(FORMATS)})")
    if fmt not in FORMATS:
        raise AnnotationError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt in ("info", "csv", "json"):
        if p.is_dir():
            raise AnnotationError(f"{p}: is a folder; the {fmt} format is one file")
        reader = {"info": read_info_dat, "csv": read_boxes_csv, "json": read_boxes_json}[fmt]
        if category is not None:
            raise AnnotationError(f"{p}: the {fmt} format has no categories; drop the category")
        return _annotated(p, _naming(p, reader, p, images=images))
    out = _naming(p, READERS[fmt], p, category=category, images=images)
    return _annotated(p, out)


def _annotated(path: Path, ann: AnnotationSet) -> AnnotationSet:
    """``ann``, unless it lists no image at all (a header-only CSV, ``[]``, ``{}``): then
    nothing could be evaluated or cut, and later errors would blame the images."""
    if not len(ann):
        raise AnnotationError(f"{path}: no annotations (the file lists no image)")
    return ann
