"""vjboost.cascade: cascade models, OpenCV XML and own model formats, and the detector.

Main entry points (exported lazily, :mod:`vjboost._lazy`):

- :class:`CascadeModel`, :class:`Stage` — the model (``vjboost.cascade.model``; trees are
  :class:`vjboost.boost.tree.Tree`);
- :func:`read_opencv_xml`, :func:`write_opencv_xml` — OpenCV cascade XML
  (``vjboost.cascade.opencv_xml``);
- :func:`load_model`, :func:`save_model` — any model file; vjboost's JSON format
  (``vjboost.cascade.model_io``);
- :func:`detect`, :func:`train` — one call each (``vjboost.cascade.api``);
- :class:`CascadeDetector`, :class:`Detections` — detection, and :func:`operating_score`,
  the ranking of detections a model declares, :func:`default_operating`, the settings a
  detector left unset runs it at, :func:`declared_suppression`, the share of a
  detection inside a better one that drops it, and :func:`declared_border`, the border the
  scan pads the image with (``vjboost.cascade.detector``);
  :class:`Pyramid`, :func:`opencv_scales` — the scan geometry (``vjboost.cascade.scan``);
  :class:`CascadeRunner`, :func:`cascade_accepts` — every window-level evaluation
  (``vjboost.cascade.runner``); box maths (grouping, NMS, IoU) is in :mod:`vjboost.boxes`;
- :func:`detect_many` — batch detection over image files on an executor (in-process, threads or
  Dask workers, :func:`vjboost._parallel.make_executor`; ``vjboost.cascade.tasks``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vjboost._lazy import attach

if TYPE_CHECKING:
    from vjboost.cascade.api import detect, train
    from vjboost.cascade.detector import (
        CascadeDetector,
        Detections,
        declared_border,
        declared_suppression,
        default_operating,
        detect_images,
        operating_score,
    )
    from vjboost.cascade.exits import early_exits
    from vjboost.cascade.model import CascadeModel, ModelError, Stage, object_box
    from vjboost.cascade.model_io import load_model, model_from_dict, model_to_dict, save_model
    from vjboost.cascade.opencv_xml import (
        CascadeFormatError,
        ExportError,
        read_opencv_xml,
        to_opencv_xml,
        write_opencv_xml,
    )
    from vjboost.cascade.runner import CascadeRunner, cascade_accepts
    from vjboost.cascade.scan import Pyramid, opencv_scales
    from vjboost.cascade.shipped import resolve_model
    from vjboost.cascade.tasks import detect_many
    from vjboost.cascade.verifier import DetectionVerifier
    from vjboost.cascade.verifier_fit import declare_verifier, fit_verifier

__getattr__, __dir__, __all__ = attach(__name__, __file__)
