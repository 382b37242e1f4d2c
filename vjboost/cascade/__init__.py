"""vjboost.cascade: cascade models, OpenCV XML and own model formats, and the detector.

Main entry points (imported lazily, so that importing a submodule stays cheap):

- :class:`CascadeModel`, :class:`Stage`, :class:`Tree`, :class:`HaarFeature`,
  :class:`LBPFeature` — the model (``vjboost.cascade.model``);
- :func:`read_opencv_xml`, :func:`write_opencv_xml` — OpenCV cascade XML
  (``vjboost.cascade.opencv_xml``);
- :func:`load_model`, :func:`save_model` — any model file; vjboost's JSON format
  (``vjboost.cascade.model_io``);
- :class:`CascadeDetector`, :func:`detect_multiscale`, :class:`Detections` — detection
  (``vjboost.cascade.detector``); box maths (grouping, NMS, IoU) is in :mod:`vjboost.boxes`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CascadeModel": "model",
    "HaarFeature": "model",
    "LBPFeature": "model",
    "ModelError": "model",
    "Stage": "model",
    "Tree": "model",
    "subset_from_codes": "model",
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
    "opencv_scales": "detector",
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
