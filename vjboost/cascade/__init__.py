"""vjboost.cascade: cascade models, OpenCV XML and own model formats, and the detector.

Main entry points (imported lazily, so that importing a submodule stays cheap):

- :class:`CascadeModel`, :class:`Stage` — the model (``vjboost.cascade.model``; trees are
  :class:`vjboost.boost.tree.Tree`);
- :func:`read_opencv_xml`, :func:`write_opencv_xml` — OpenCV cascade XML
  (``vjboost.cascade.opencv_xml``);
- :func:`load_model`, :func:`save_model` — any model file; vjboost's JSON format
  (``vjboost.cascade.model_io``);
- :class:`CascadeDetector`, :func:`detect_multiscale`, :class:`Detections` — detection
  (``vjboost.cascade.detector``); :class:`Pyramid`, :func:`opencv_scales` — the scan geometry
  (``vjboost.cascade.scan``); :class:`CascadeRunner`, :func:`cascade_accepts` — every
  window-level evaluation (``vjboost.cascade.runner``); box maths (grouping, NMS, IoU) is in
  :mod:`vjboost.boxes`;
- :func:`detect_many` — batch detection over image files on an executor (in-process, threads or
  Dask workers, :func:`vjboost._parallel.make_executor`; ``vjboost.cascade.tasks``).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CascadeModel": "model",
    "ModelError": "model",
    "Stage": "model",
    "CascadeFormatError": "opencv_xml",
    "ExportError": "opencv_xml",
    "read_opencv_xml": "opencv_xml",
    "to_opencv_xml": "opencv_xml",
    "write_opencv_xml": "opencv_xml",
    "load_model": "model_io",
    "save_model": "model_io",
    "model_to_dict": "model_io",
    "model_from_dict": "model_io",
    "CascadeDetector": "detector",
    "Detections": "detector",
    "detect_multiscale": "detector",
    "detect_images": "detector",
    "detect_many": "tasks",
    "opencv_scales": "scan",
    "Pyramid": "scan",
    "CascadeRunner": "runner",
    "cascade_accepts": "runner",
    "resolve_model": "shipped",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'vjboost.cascade' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
