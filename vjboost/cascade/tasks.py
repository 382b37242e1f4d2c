"""Batch detection as tasks on an executor.

:func:`detect_chunk` detects in a chunk of image files (read as ``vjdetect`` reads them), a pure
function of picklable arguments, so that :class:`vjboost._parallel.Executor` can run it
in-process, on threads, or on Dask workers; :func:`detect_many` maps it over a list of paths and
yields the results in input order. Mining runs on an executor the same way
(:func:`vjboost.cascade.negatives.mine_chunk`).

What travels: the model once per call as its JSON bytes
(:func:`~vjboost.cascade.model_io.model_json`, sent to every worker with
:meth:`~vjboost._parallel.Executor.share`), images as paths (every worker must see the same
files, e.g. on a shared file system), detections back. Each worker process keeps the detectors
it has built (by the model's digest and the parameters,
:func:`~vjboost.cascade.model_io.built_from_model_json`), so later chunks skip that work.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .._errors import LimitError
from .._limits import Limits
from .._parallel import Executor, SerialExecutor
from .detector import CascadeDetector, Detections
from .model import CascadeModel
from .model_io import built_from_model_json, model_json

__all__ = [
    "FileDetections",
    "detect_chunk",
    "detect_many",
]


def _chunks(items: Iterator[Any], first: int, largest: int) -> Iterator[list[Any]]:
    """Lists of growing size: small first chunks keep an early stop cheap, larger later ones
    keep the per-task overhead small."""
    size = first
    while True:
        chunk = [x for _, x in zip(range(size), items, strict=False)]
        if not chunk:
            return
        yield chunk
        size = min(2 * size, largest)


# ------------------------------------------------------------------------------------------------
# Batch detection
# ------------------------------------------------------------------------------------------------

FileDetections = tuple[str, Detections | None, str, tuple[int, int] | None]
"""``(path, detections, error, (width, height))``; detections None and error set when the
image could not be read."""


def detect_chunk(paths: Sequence[str], model: bytes, params: dict[str, Any],
                 limits: Limits | None = None) -> list[FileDetections]:
    """Detect in image files (the unit function of batch detection).

    Images are read in colour and handed to the detector as ``vjdetect`` does, so the output
    is the same as detecting in-process.

    Parameters
    ----------
    paths : sequence of str
    model : bytes
        :func:`~vjboost.cascade.model_io.model_json` of the cascade.
    params : dict
        :class:`~vjboost.cascade.detector.CascadeDetector` parameters.
    limits : Limits, optional
        Image size limits (default: from the worker's environment).

    Returns
    -------
    list of (path, detections, error, (width, height))
    """
    from ..io import ImageReadError, read_image

    det = built_from_model_json(
        model, repr(sorted(params.items())),
        lambda m: CascadeDetector(m, **{**params, "channel_order": "rgb"}))
    out: list[FileDetections] = []
    for path in paths:
        try:
            rgb = read_image(path, gray=False, limits=limits)
        except ImageReadError as exc:
            out.append((str(path), None, str(exc), None))
            continue
        try:
            found = det.detect(rgb)
        except LimitError:
            raise  # a detection parameter at a limit: every image would fail alike
        except (TypeError, ValueError) as exc:
            out.append((str(path), None, f"{path}: {exc}", None))
            continue
        out.append((str(path), found, "", (rgb.shape[1], rgb.shape[0])))
    return out


def detect_many(model: CascadeModel, paths: Iterable[str | os.PathLike[str]], *,
                executor: Executor | None = None, chunk: int = 8,
                limits: Limits | None = None, **params: Any) -> Iterator[FileDetections]:
    """Detect in many image files, on an executor; results in input order.

    Parameters
    ----------
    model : CascadeModel
    paths : iterable of path-like
        Image files (each worker must be able to read them).
    executor : Executor, optional
        Where the chunks run (default: in this process, one after the other).
    chunk : int, default=8
        Images per task.
    limits : Limits, optional
        Image size limits applied when reading.
    **params
        :class:`~vjboost.cascade.detector.CascadeDetector` parameters.

    Yields
    ------
    (path, detections, error, (width, height))
        ``detections`` is None and ``error`` says why when an image could not be read.

    Examples
    --------
    >>> import tempfile, cv2
    >>> from skimage import data
    >>> from vjboost.cascade import load_model
    >>> p = tempfile.mkdtemp() + "/a.png"
    >>> _ = cv2.imwrite(p, data.astronaut()[:, :, ::-1])
    >>> [(path == p, len(d) >= 1) for path, d, err, size in
    ...  detect_many(load_model("vjboost:frontalface"), [p], scale_factor=1.2)]
    [(True, True)]
    """
    if not isinstance(model, CascadeModel):
        raise TypeError(f"model: expected a CascadeModel, got {type(model).__name__}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk: expected a positive integer, got {chunk!r}")
    CascadeDetector(model, **params)  # bad parameters fail here, not on every worker
    executor = executor if executor is not None else SerialExecutor()
    data = executor.share(model_json(model))
    units = _chunks((os.fspath(p) for p in paths), chunk, chunk)
    for out in executor.imap(detect_chunk, units, data, dict(params), limits):
        yield from out
