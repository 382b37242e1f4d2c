"""Cascade work as tasks: mining visits and batch detection on an executor.

The unit functions here are pure functions of picklable arguments, so that
:class:`vjboost._parallel.Executor` can run them in-process, on threads, or on Dask workers:

* :func:`mine_chunk` scans a chunk of mining visits ``(pass, image index, path)`` — the
  per-image work of :func:`~vjboost.cascade.negatives.mine_negatives`
  (:func:`~vjboost.cascade.negatives.scan_visit`); :func:`scan_visits` feeds it the schedule in
  chunks and yields the visits back in schedule order, so that ``mine_negatives(...,
  executor=...)`` assembles exactly what the serial loop would;
* :func:`detect_chunk` detects in a chunk of image files (read as ``vjdetect`` reads them);
  :func:`detect_many` maps it over a list of paths.

What travels: the model once per call as its JSON bytes (:func:`model_json`, sent to every
worker with :meth:`~vjboost._parallel.Executor.share`), images as paths (every worker must see
the same files, e.g. on a shared file system), mined windows and detections back. Each worker
process keeps the models it has parsed (by digest) and the background images it has decoded
(an :class:`~vjboost.cascade.negatives.ImageCache`), so later stages and later chunks skip that
work.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .._errors import LimitError
from .._limits import Limits
from .._parallel import Executor, SerialExecutor
from .detector import CascadeDetector, Detections
from .model import CascadeModel
from .model_io import model_from_dict, model_to_dict
from .negatives import ImageCache, MiningParams, mining_detector, scan_visit

__all__ = [
    "FileDetections",
    "detect_chunk",
    "detect_many",
    "mine_chunk",
    "model_json",
    "scan_visits",
]

# per-process state of a worker: parsed models and decoded backgrounds (speed only)
_LOCK = threading.Lock()
_MODELS: OrderedDict[tuple[str, str], Any] = OrderedDict()
_MAX_MODELS = 4
_IMAGES: ImageCache | None = None


def model_json(model: CascadeModel) -> bytes:
    """The model as compact JSON bytes (what is sent to workers)."""
    return json.dumps(model_to_dict(model), separators=(",", ":"), allow_nan=False).encode()


def _cached(data: bytes, key: str, build) -> Any:
    """``build(model)`` for the model in ``data``, kept per process by digest and ``key``."""
    k = (hashlib.sha1(data).hexdigest(), key)
    with _LOCK:
        if k in _MODELS:
            _MODELS.move_to_end(k)
            return _MODELS[k]
    value = build(model_from_dict(json.loads(data), source="<model bytes>"))
    with _LOCK:
        _MODELS[k] = value
        while len(_MODELS) > _MAX_MODELS:
            _MODELS.popitem(last=False)
    return value


def _image(path: str) -> np.ndarray | None:
    global _IMAGES
    with _LOCK:
        if _IMAGES is None:
            _IMAGES = ImageCache()
        return _IMAGES.get(path)


# ------------------------------------------------------------------------------------------------
# Mining
# ------------------------------------------------------------------------------------------------


def mine_chunk(visits: Sequence[tuple[int, int, str]], model: bytes | None,
               params: MiningParams, seed: int, stage: int, per_image: int
               ) -> list[tuple[int, int, tuple[np.ndarray, int, int] | None]]:
    """Scan a chunk of mining visits (the unit function of distributed mining).

    Parameters
    ----------
    visits : sequence of (pass, image index, path)
    model : bytes or None
        :func:`model_json` of the cascade so far (``None`` before the first stage).
    params, seed, stage, per_image
        As in :func:`~vjboost.cascade.negatives.scan_visit`.

    Returns
    -------
    list of (pass, image index, result)
        ``result`` is ``(windows, n_scanned, n_accepted)``, or ``None`` for an unreadable image.
    """
    det = None if model is None else _cached(model, repr(params),
                                             lambda m: mining_detector(m, params))
    out = []
    for p, k, path in visits:
        img = _image(path)
        out.append((p, k, None if img is None else
                    scan_visit(img, p, k, det, params, seed, stage, per_image)))
    return out


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


def scan_visits(executor: Executor, model: CascadeModel | None, paths: Sequence[str],
                visits: Iterable[tuple[int, int]], *, params: MiningParams, seed: int,
                stage: int, per_image: int, chunk: int = 8
                ) -> Iterator[tuple[int, int, tuple[np.ndarray, int, int] | None]]:
    """Mining visits computed on ``executor``, yielded in the order of ``visits``.

    Close the iterator to stop early (tasks not started are cancelled).

    Parameters
    ----------
    executor : Executor
        Runs :func:`mine_chunk` on chunks of visits (serial, threads or Dask).
    model : CascadeModel or None
        The cascade so far (``None`` before the first stage), shared once with the workers.
    paths : sequence of str
        The background images, indexed by the visits.
    visits : iterable of (int, int)
        ``(pass, image index)`` in the order wanted.
    params, seed, stage, per_image
        As in :func:`~vjboost.cascade.negatives.scan_visit`.
    chunk : int, default 8
        Largest number of visits per task (the first tasks hold 2, then 4, ...).

    Yields
    ------
    (int, int, result)
        ``(pass, image index, result)`` as :func:`mine_chunk` returns them.
    """
    data = executor.share(None if model is None else model_json(model))
    units = _chunks(((p, k, paths[k]) for p, k in visits), 2, chunk)
    for out in executor.imap(mine_chunk, units, data, params, int(seed), int(stage),
                             int(per_image)):
        yield from out


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
        :func:`model_json` of the cascade.
    params : dict
        :class:`~vjboost.cascade.detector.CascadeDetector` parameters.
    limits : Limits, optional
        Image size limits (default: from the worker's environment).

    Returns
    -------
    list of (path, detections, error, (width, height))
    """
    from ..io import ImageReadError, read_image

    det = _cached(model, repr(sorted(params.items())),
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
    >>> [(path == p, len(d)) for path, d, err, size in
    ...  detect_many(load_model("vjboost:frontalface"), [p], scale_factor=1.2)]
    [(True, 1)]
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
