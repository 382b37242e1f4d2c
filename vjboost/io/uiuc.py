"""The location files of the UIUC car benchmark (``trueLocations.txt`` and its kin).

One line per test image: ``N: (i1,j1) (i2,j2) ...`` where ``N`` is the image number (the image is
``test-N.pgm``) and ``(i, j)`` the row and column of the top-left corner of the object's 100×40
window; the multi-scale files (``trueLocations_Scale.txt``) give ``(i, j, w)`` with the window's
width ``w``. Coordinates may be negative (a car cut by the image border). An image may have no
entry or an empty one (``N:``): no object. The dataset's evaluator reads the detections of a
method from a file of the same format (``foundLocations.txt``), which
:func:`write_uiuc_locations` writes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .._io import atomic_write
from .annotations import AnnotationError, _read_text

__all__ = ["OBJECT_SHAPE", "location_window", "read_uiuc_locations", "uiuc_image_number",
           "write_uiuc_locations"]

#: (height, width) of the benchmark's object window
OBJECT_SHAPE = (40, 100)

_LINE = re.compile(r"^\s*(\d+)\s*:(.*)$")
_TUPLE = re.compile(r"\(([^()]*)\)")
_NUMBER = re.compile(r"(\d+)(?!.*\d)")


def location_window(loc: list[int]) -> tuple[int, int]:
    """``(height, width)`` of the window at a location ``(i, j)`` (the benchmark's 100×40) or
    ``(i, j, w)`` (width ``w``, the benchmark's aspect ratio).

    Parameters
    ----------
    loc : list of int
        A location as the benchmark's files write it.

    Returns
    -------
    (int, int)
        The window's height and width in pixels.

    Examples
    --------
    >>> location_window([48, 26]), location_window([48, 26, 50])
    ((40, 100), (20, 50))
    """
    if len(loc) < 3:
        return OBJECT_SHAPE
    w = int(loc[2])
    return max(1, round(w * OBJECT_SHAPE[0] / OBJECT_SHAPE[1])), w


def read_uiuc_locations(path: str | os.PathLike[str]) -> dict[int, np.ndarray]:
    """Read a UIUC location file.

    Parameters
    ----------
    path : path-like
        ``trueLocations.txt`` (single scale: ``(i,j)`` tuples) or ``trueLocations_Scale.txt``
        (``(i,j,w)``); every tuple of a file must have the same length.

    Returns
    -------
    dict of int -> ndarray of int64, shape (k, 2) or (k, 3)
        Per image number, the ``(row, column[, width])`` of its objects in file order; images
        listed without objects map to an empty array.

    Raises
    ------
    AnnotationError
        A malformed line, a repeated image number or mixed tuple lengths; the message names the
        file and line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "trueLocations.txt"
    >>> _ = p.write_text("0: (48,26)\\n1: (61,20) (63,140)\\n6: (56,-10)\\n")
    >>> locs = read_uiuc_locations(p)
    >>> locs[1].tolist(), locs[6].tolist()
    ([[61, 20], [63, 140]], [[56, -10]])
    """
    path = Path(path)
    text = _read_text(path, "location")
    out: dict[int, np.ndarray] = {}
    width = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        m = _LINE.match(line)
        if m is None:
            raise AnnotationError(f"{where}: expected 'N: (i,j) (i,j) ...', got {line.strip()!r}")
        n = int(m.group(1))
        if n in out:
            raise AnnotationError(f"{where}: image {n} is listed twice")
        rest = m.group(2)
        rows = []
        for t in _TUPLE.findall(rest):
            try:
                vals = [int(v) for v in t.split(",")]
            except ValueError:
                raise AnnotationError(f"{where}: expected integers in ({t}), e.g. (48,26)"
                                      ) from None
            if len(vals) not in (2, 3):
                raise AnnotationError(f"{where}: expected (i,j) or (i,j,w), got ({t})")
            if width is None:
                width = len(vals)
            elif len(vals) != width:
                raise AnnotationError(f"{where}: ({t}) has {len(vals)} values where the file's "
                                      f"earlier tuples have {width}")
            if len(vals) == 3 and vals[2] <= 0:
                raise AnnotationError(f"{where}: width must be positive in ({t})")
            h, w = location_window(vals)
            if vals[0] <= -h or vals[1] <= -w:  # (the real file has corners a few pixels out)
                raise AnnotationError(f"{where}: ({t}) puts the {w}x{h} window entirely "
                                      "outside the image")
            rows.append(vals)
        if _TUPLE.sub("", rest).strip():
            raise AnnotationError(f"{where}: unexpected text {_TUPLE.sub('', rest).strip()!r} "
                                  "(expected only (i,j) tuples)")
        out[n] = np.asarray(rows, dtype=np.int64).reshape(len(rows), width or 2)
    if not out:
        raise AnnotationError(f"{path}: the location file lists no image")
    if width == 3:
        out = {k: v.reshape(len(v), 3) for k, v in out.items()}
    return out


def write_uiuc_locations(path: str | os.PathLike[str], locations: Mapping[int, np.ndarray]
                         ) -> None:
    """Write locations in the format of ``trueLocations.txt`` (atomically).

    Parameters
    ----------
    path : path-like
    locations : mapping int -> array-like of shape (k, 2) or (k, 3)
        Per image number, ``(row, column[, width])``; values are rounded to integers, as the
        format holds integers. Images are written in increasing order.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "foundLocations.txt"
    >>> write_uiuc_locations(p, {1: [[61, 20], [63, 140]], 0: [[48.4, 26]]})
    >>> print(p.read_text(), end="")
    0: (48,26)
    1: (61,20) (63,140)
    """
    lines = []
    for n in sorted(locations):
        arr = np.rint(np.asarray(locations[n], dtype=np.float64)).astype(np.int64)
        arr = arr.reshape(len(arr), -1) if arr.size else arr.reshape(0, 2)
        if arr.shape[1] not in (2, 3):
            raise ValueError(f"locations[{n}]: expected (k, 2) or (k, 3) values, got "
                             f"{arr.shape}")
        tuples = " ".join("(" + ",".join(str(int(v)) for v in row) + ")" for row in arr)
        lines.append(f"{int(n)}: {tuples}".rstrip())
    atomic_write(Path(path), "\n".join(lines) + "\n")


def uiuc_image_number(path: str | os.PathLike[str]) -> int | None:
    """The image number of a UIUC file name (``test-17.pgm`` → 17), or None without one.

    Examples
    --------
    >>> uiuc_image_number("TestImages/test-17.pgm"), uiuc_image_number("street.jpg")
    (17, None)
    """
    m = _NUMBER.search(Path(path).stem)
    return int(m.group(1)) if m else None
