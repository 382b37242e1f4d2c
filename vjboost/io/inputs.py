"""What a command's inputs name: image files, folders, globs, list files, videos, cameras.

One list of image and video suffixes, one expansion used by every tool (``vjdetect``,
``vjtrain``, ``vjeval``, ``vjadapt``) and by the library's folder readers. Problems (a missing
file, an empty folder, a pattern matching nothing, an impossible camera index) are collected
with the input they concern, so that a batch tool can skip and report them and a single-input
tool can stop with one line.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import InputError

__all__ = [
    "IMAGE_SUFFIXES",
    "LIST_SUFFIXES",
    "MAX_CAMERA_INDEX",
    "VIDEO_SUFFIXES",
    "ExpandedInputs",
    "Source",
    "expand_inputs",
    "image_files",
    "is_image_file",
    "is_video_file",
    "list_images",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".dib", ".pgm", ".ppm", ".pbm", ".pnm",
                  ".tif", ".tiff", ".webp", ".jp2", ".sr", ".ras")
"""File endings read as images (what OpenCV's ``imdecode`` decodes)."""

VIDEO_SUFFIXES = (".avi", ".mp4", ".mov", ".mkv", ".mpg", ".mpeg", ".wmv", ".webm", ".m4v",
                  ".flv", ".3gp")
"""File endings read as videos (through OpenCV's ``VideoCapture``)."""

LIST_SUFFIXES = (".txt", ".lst")
"""File endings of list files (one image path per line, relative to the list's folder)."""

MAX_CAMERA_INDEX = 9999
"""Largest camera index accepted (OpenCV's backends number devices far below this)."""


def is_image_file(path: str | os.PathLike[str]) -> bool:
    """Whether the name ends like an image (:data:`IMAGE_SUFFIXES`, any case).

    Examples
    --------
    >>> is_image_file("a/B.JPG"), is_image_file("clip.avi")
    (True, False)
    """
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def is_video_file(path: str | os.PathLike[str]) -> bool:
    """Whether the name ends like a video (:data:`VIDEO_SUFFIXES`, any case).

    Examples
    --------
    >>> is_video_file("clips/Run.MP4"), is_video_file("a.avi"), is_video_file("a.png")
    (True, True, False)
    """
    return Path(path).suffix.lower() in VIDEO_SUFFIXES


def image_files(folder: str | os.PathLike[str], *, recursive: bool = False,
                suffixes: Sequence[str] = IMAGE_SUFFIXES) -> list[str]:
    """The image files of a folder, sorted by path.

    Parameters
    ----------
    folder : path-like
    recursive : bool, default=False
        Also the images of sub-folders.
    suffixes : sequence of str
        File endings that count (case-insensitive).

    Returns
    -------
    list of str
        Possibly empty.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "sub").mkdir()
    >>> for n in ("b.png", "a.JPG", "notes.md", "sub/c.pgm"):
    ...     _ = (d / n).write_bytes(b"")
    >>> [pathlib.Path(p).relative_to(d).as_posix() for p in image_files(d)]
    ['a.JPG', 'b.png']
    >>> [pathlib.Path(p).relative_to(d).as_posix() for p in image_files(d, recursive=True)]
    ['a.JPG', 'b.png', 'sub/c.pgm']
    """
    root = Path(folder)
    ends = tuple(s.lower() for s in suffixes)
    it = root.rglob("*") if recursive else root.iterdir()
    return sorted(str(p) for p in it if p.name.lower().endswith(ends) and p.is_file())


@dataclass(frozen=True)
class Source:
    """One input: ``kind`` is ``"image"``, ``"video"`` or ``"camera"``; ``target`` a path or a
    camera index.

    Parameters
    ----------
    kind : {"image", "video", "camera"}
    target : str or int
        The file's path, or the camera's index.

    Examples
    --------
    >>> Source("camera", 0).name, Source("video", "clips/run.mp4").name
    ('camera 0', 'clips/run.mp4')
    """

    kind: str
    target: str | int

    @property
    def name(self) -> str:
        """Printable name (``camera 0`` for cameras)."""
        return f"camera {self.target}" if self.kind == "camera" else str(self.target)


@dataclass
class ExpandedInputs:
    """Result of :func:`expand_inputs`.

    Attributes
    ----------
    sources : list of Source
        In the order given, folders and patterns expanded in sorted order.
    problems : list of (input, reason)
        Inputs that named nothing usable.

    Examples
    --------
    >>> got = ExpandedInputs([Source("image", "a.png"), Source("video", "run.avi"),
    ...                       Source("image", "b.png")], [("c.png", "no such file")])
    >>> got.paths(), got.paths("video")
    (['a.png', 'b.png'], ['run.avi'])
    >>> got.raise_problems()
    Traceback (most recent call last):
    ...
    vjboost._errors.InputError: c.png: no such file
    """

    sources: list[Source] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def paths(self, kind: str = "image") -> list[str]:
        """The paths of one kind of source."""
        return [str(s.target) for s in self.sources if s.kind == kind]

    def raise_problems(self, what: str = "input") -> None:
        """Raise :class:`InputError` for the first problem (single-input tools)."""
        if self.problems:
            src, why = self.problems[0]
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            raise InputError(f"{src}: {why}{more}")


def _classify(path: str, kinds: Sequence[str]) -> Source | None:
    if "video" in kinds and is_video_file(path):
        return Source("video", path)
    if "image" in kinds:  # unknown endings too: the decoder decides, with a clear error
        return Source("image", path)
    return None


def _accepted(kinds: Sequence[str]) -> tuple[str, ...]:
    return (IMAGE_SUFFIXES if "image" in kinds else ()) + (
        VIDEO_SUFFIXES if "video" in kinds else ())


def expand_inputs(inputs: Iterable[str | os.PathLike[str]], *, recursive: bool = False,
                  kinds: Sequence[str] = ("image", "video", "camera"),
                  list_files: bool = True) -> ExpandedInputs:
    """Expand command-line inputs into image files, video files and cameras.

    Parameters
    ----------
    inputs : iterable of str or path
        Each one of: a file (an image, a video, or with ``list_files`` a ``.txt``/``.lst`` list
        of image paths relative to the list's folder), a folder (its images and videos, sorted;
        sub-folders too with ``recursive``), a glob pattern (``shots/*.png``, ``**`` descends),
        or a camera index (``0``, ``1``... when no file of that name exists).
    recursive : bool, default=False
    kinds : sequence of {"image", "video", "camera"}
        What the caller can use; other inputs are reported as problems.
    list_files : bool, default=True
        Read ``.txt``/``.lst`` files as lists of images.

    Returns
    -------
    ExpandedInputs

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for n in ("b.png", "a.JPG", "notes.md"):
    ...     _ = (d / n).write_bytes(b"")
    >>> got = expand_inputs([str(d), "0", str(d / "none.png")])
    >>> [s.kind for s in got.sources], [p.rsplit("/", 1)[-1] for p in got.paths()]
    (['image', 'image', 'camera'], ['a.JPG', 'b.png'])
    >>> got.problems[0][1]
    'no such file, folder or camera'
    """
    out = ExpandedInputs()
    ends = _accepted(kinds)
    for raw in inputs:
        raw = os.fspath(raw)
        try:
            _expand_one(raw, out, kinds, ends, recursive, list_files)
        except OSError as exc:  # a name longer than NAME_MAX, a symlink loop...: that input only
            out.problems.append((raw, exc.strerror or str(exc)))
    return out


def _expand_one(raw: str, out: ExpandedInputs, kinds: Sequence[str], ends: tuple[str, ...],
                recursive: bool, list_files: bool) -> None:
    """Add one input of :func:`expand_inputs` to ``out`` (its sources, or its problem)."""
    from .annotations import AnnotationError, read_bg_list

    p = Path(raw)
    if not raw.strip():  # Path("") is "." (the current folder): never what was meant
        out.problems.append((repr(raw), "an empty argument names no file"))
        return
    if raw.strip().isdigit() and not p.exists():
        if "camera" not in kinds:
            out.problems.append((raw, "no such file or folder"))
            return
        idx = int(raw)
        if idx > MAX_CAMERA_INDEX:
            out.problems.append((raw, f"not a camera index (0..{MAX_CAMERA_INDEX})"))
        else:
            out.sources.append(Source("camera", idx))
        return
    if p.is_dir():
        files = image_files(p, recursive=recursive, suffixes=ends)
        if not files:
            what = " or ".join(k + "s" for k in kinds if k != "camera")
            out.problems.append((raw, f"the folder holds no {what} ({', '.join(ends)})"))
        out.sources += [s for f in files if (s := _classify(f, kinds)) is not None]
    elif p.is_file():
        if list_files and p.suffix.lower() in LIST_SUFFIXES and "image" in kinds:
            try:
                out.sources += [Source("image", f)
                                for f in read_bg_list(p, what="image list")]
            except AnnotationError as exc:
                out.problems.append((raw, str(exc).removeprefix(f"{p}: ")))
            return
        s = _classify(raw, kinds)
        if s is None:
            out.problems.append((raw, f"not a supported file ({', '.join(ends)})"))
        else:
            out.sources.append(s)
    elif glob.has_magic(raw):
        files = sorted(f for f in glob.glob(raw, recursive=True) if os.path.isfile(f))
        if not files:
            out.problems.append((raw, "pattern matches no file"))
        out.sources += [s for f in files if (s := _classify(f, kinds)) is not None]
    elif p.exists():
        out.problems.append((raw, "not a regular file or folder"))
    else:
        what = "file, folder or camera" if "camera" in kinds else "file or folder"
        out.problems.append((raw, f"no such {what}"))


def list_images(source: str | os.PathLike[str], *, recursive: bool = False,
                what: str = "image source") -> list[str]:
    """The images one argument names: a folder, a list file (``bg.txt``) or one image file.

    Parameters
    ----------
    source : path-like
    recursive : bool, default=False
        For folders: descend into sub-folders.
    what : str
        How the source is called in error messages ("background source"...).

    Returns
    -------
    list of str
        Non-empty.

    Raises
    ------
    InputError
        Missing source, empty folder or list, a video, a file that is neither an image nor a
        list.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()).resolve()
    >>> (d / "neg").mkdir()
    >>> for n in ("neg/x.png", "neg/y.png"):
    ...     _ = (d / n).write_bytes(b"")
    >>> _ = (d / "bg.txt").write_text("neg/y.png\\n")
    >>> [pathlib.Path(p).relative_to(d).as_posix() for p in list_images(d / "neg")]
    ['neg/x.png', 'neg/y.png']
    >>> [pathlib.Path(p).relative_to(d).as_posix() for p in list_images(d / "bg.txt")]
    ['neg/y.png']
    """
    from .annotations import read_bg_list

    if not os.fspath(source).strip():  # Path("") is "." (the current folder)
        raise InputError(f"{what}: an empty path names no file or folder")
    p = Path(source)
    if not p.exists():
        raise InputError(f"{p}: {what} does not exist")
    if p.is_dir():
        files = image_files(p, recursive=recursive)
        if not files:
            raise InputError(f"{p}: the folder holds no image ({', '.join(IMAGE_SUFFIXES)})")
        return files
    if is_image_file(p):
        return [str(p)]
    if is_video_file(p):
        # read as a list it would fail as "not a text file", which says nothing of what to give
        raise InputError(f"{p}: a video is not a {what}; give a folder of images, a list of "
                         "image paths (bg.txt) or one image")
    return read_bg_list(p, what=what.replace("source", "list"))
