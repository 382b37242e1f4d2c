"""Cascade work as tasks: mining visits and batch detection on an executor.

The unit functions here are pure functions of picklable arguments, so that
:class:`vjboost._parallel.Executor` can run them in-process, on threads, or on Dask workers:

* :func:`mine_chunk` scans a chunk of mining units ``(path, pass)`` — the per-unit work of
  :class:`~vjboost.cascade.negatives.NegativePool` (:func:`~vjboost.cascade.negatives.scan_unit`);
  :func:`scan_units` feeds it a batch in chunks and returns the scans in unit order, so that
  ``NegativePool.fill(..., executor=...)`` (and ``mine_negatives``) assemble exactly what the
  serial loop would;
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
from .negatives import ImageCache, MiningParams, UnitScan, mining_detector, scan_unit

__all__ = [
    "FileDetections",
    "detect_chunk",
    "detect_many",
    "mine_chunk",
    "model_json",
    "scan_units",
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


def mine_chunk(units: Sequence[tuple[str, int, int]], model: bytes | None, params: MiningParams,
               seed: int, per_image: int) -> list[UnitScan]:
    """Scan a chunk of mining units (the unit function of distributed mining).

    Parameters
    ----------
    units : sequence of (path, pass, passes)
    model : bytes or None
        :func:`model_json` of the cascade so far (``None`` before the first stage).
    params, seed, per_image
        As in :func:`~vjboost.cascade.negatives.scan_unit`.

    Returns
    -------
    list of UnitScan
        One per unit, in order (``readable`` False for an unreadable image).
    """
    det = None if model is None else _cached(model, repr(params),
                                             lambda m: mining_detector(m, params))
    out = []
    for path, p, g in units:
        img = _image(path)
        out.append(UnitScan(np.zeros((0, *params.window), np.uint8), 0, 0, readable=False)
                   if img is None else
                   scan_unit(None if det is None else det.model, path, int(p), params=params,
                             seed=seed, per_image=per_image, g=int(g), image=img,
                             detector=det))
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


def scan_units(executor: Executor, model: CascadeModel | None,
               units: Sequence[tuple[str, int, int]], *, params: MiningParams, seed: int,
               per_image: int, chunk: int = 4) -> list[UnitScan]:
    """The scans of mining ``units`` computed on ``executor``, in the order of ``units``
    (what :meth:`~vjboost.cascade.negatives.NegativePool.fill` consumes batch by batch).

    Parameters
    ----------
    executor : Executor
        Runs :func:`mine_chunk` on chunks of units (serial, threads or Dask).
    model : CascadeModel or None
        The cascade so far (``None`` before the first stage), shared once with the workers.
    units : sequence of (str, int, int)
        ``(background path, first pass, passes)`` of each unit.
    params, seed, per_image
        As in :func:`~vjboost.cascade.negatives.scan_unit`.
    chunk : int, default 4
        Units per task.

    Returns
    -------
    list of UnitScan
        One per unit, in order.
    """
    data = executor.share(None if model is None else model_json(model))
    chunks = [list(units[i:i + chunk]) for i in range(0, len(units), chunk)]
    out: list[UnitScan] = []
    for part in executor.imap(mine_chunk, chunks, data, params, int(seed), int(per_image)):
        out.extend(part)
    return out


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
