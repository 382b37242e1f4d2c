"""vjboost's own cascade file format, and loading of any supported model file.

The format is one JSON document (UTF-8), versioned and self-describing (version 2)::

    {
      "format": "vjboost-cascade",
      "version": 2,
      "window_shape": [H, W],
      "family": {"family": name, "config": {...}}     # or {"pool": {"families": [...]}}
      "feature_ids": [...],                            # the family's features the trees read
      "stages": [{"threshold": t, "trees": [tree, ...]}, ...],
      "params": {...}                                  # free-form training information
    }

A tree is :meth:`vjboost.boost.tree.Tree.to_dict` (``feature`` indexes ``feature_ids`` by
position; ``categorical`` flags and ``subsets`` for categorical nodes). Thresholds and leaf values
are float32 numbers written as the shortest decimal of their exact value, so a model loads back
bit for bit. Families are rebuilt with ``get_family_class(name).from_config(config)`` (user
families must be registered before loading); OpenCV cascades store their explicit feature table in
the config of ``HaarFamily.from_rects`` / ``MBLBPFamily.from_blocks``.

Version 1 files (``"feature_type": "HAAR" | "LBP" | "family"`` and a ``features`` list) are still
read: their features are converted to the explicit-table families on load.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write, read_bytes
from ..boost.tree import Tree, TreeError
from .model import CascadeModel, ModelError, Stage
from .opencv_xml import CascadeFormatError, opencv_family, read_opencv_xml, to_opencv_xml

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "load_model",
    "model_from_dict",
    "model_to_dict",
    "save_model",
]

FORMAT_NAME = "vjboost-cascade"
FORMAT_VERSION = 2


def _family_to_dict(family: Any) -> dict[str, Any]:
    from ..features.base import family_to_dict

    if hasattr(family, "families"):  # a FeaturePool
        return {"pool": family.get_config()}
    return family_to_dict(family)


def _family_from_dict(d: Any) -> Any:
    from ..features.base import family_from_dict
    from ..features.pool import FeaturePool

    if isinstance(d, dict) and "pool" in d:
        return FeaturePool.from_config(d["pool"])
    return family_from_dict(d)


def model_to_dict(model: CascadeModel) -> dict[str, Any]:
    """The JSON-ready dict of a cascade (see the module docstring).

    Parameters
    ----------
    model : CascadeModel

    Returns
    -------
    dict
    """
    model.validate()
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "window_shape": list(model.window_shape),
        "family": _family_to_dict(model.family),
        "feature_ids": model.feature_ids.tolist(),
        "stages": [{"threshold": float(np.float32(s.threshold)),
                    "trees": [t.to_dict() for t in s.trees]} for s in model.stages],
        "params": model.params,
    }


def _v1_family(d: dict[str, Any], source: str) -> tuple[Any, list[int]]:
    """Family and feature ids of a version-1 document."""
    ftype = d["feature_type"]
    window = tuple(d["window_shape"])
    if ftype == "HAAR":
        feats = [([tuple(r) for r in f["rects"]], bool(f.get("tilted", False)))
                 for f in d["features"]]
    elif ftype == "LBP":
        feats = [tuple(f["rect"]) for f in d["features"]]
    elif ftype == "family":
        return _family_from_dict(d["family"]), [int(i) for i in d["features"]]
    else:
        raise CascadeFormatError(f"{source}: unknown feature_type {ftype!r}")
    return opencv_family(window, ftype, feats), list(range(len(feats)))


def model_from_dict(d: Any, source: str = "<dict>") -> CascadeModel:
    """Rebuild a cascade from :func:`model_to_dict` output (or a version-1 document).

    Parameters
    ----------
    d : dict
    source : str
        Named in error messages.

    Returns
    -------
    CascadeModel

    Raises
    ------
    CascadeFormatError
        If the document is not a vjboost cascade, has an unknown version or is inconsistent.
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
        raise CascadeFormatError(f"{source}: not a vjboost cascade file (missing "
                                 f"'format': '{FORMAT_NAME}')")
    ver = d.get("version")
    if isinstance(ver, bool) or not isinstance(ver, int) or ver > FORMAT_VERSION or ver < 1:
        raise CascadeFormatError(f"{source}: unsupported format version {ver!r} (this vjboost "
                                 f"reads versions 1..{FORMAT_VERSION})")
    try:
        if ver == 1:
            family, ids = _v1_family(d, source)
        else:
            family, ids = _family_from_dict(d["family"]), d["feature_ids"]
        stages = []
        for si, s in enumerate(d["stages"]):
            trees = [Tree.from_dict(t, f"{source}: stages[{si}].trees[{ti}]")
                     for ti, t in enumerate(s["trees"])]
            stages.append(Stage(trees, threshold=s["threshold"]))
        return CascadeModel(tuple(d["window_shape"]), stages=stages, family=family,
                            feature_ids=ids, params=d.get("params", {}))
    except CascadeFormatError:
        raise
    except TreeError as exc:
        raise CascadeFormatError(str(exc)) from None
    except KeyError as exc:
        raise CascadeFormatError(f"{source}: missing key {exc}") from None
    except (ModelError, TypeError, ValueError) as exc:
        raise CascadeFormatError(f"{source}: invalid cascade ({exc})") from None


def save_model(model: CascadeModel, path: str | os.PathLike[str]) -> None:
    """Save a cascade atomically: ``.xml`` → OpenCV XML (HAAR/LBP only), else vjboost JSON.

    Parameters
    ----------
    model : CascadeModel
    path : path-like

    Raises
    ------
    ExportError
        ``.xml`` requested for a cascade OpenCV cannot run.
    TypeError
        ``model.params`` holds values JSON cannot store.
    """
    if not isinstance(model, CascadeModel):
        raise TypeError(f"model: expected a CascadeModel, got {type(model).__name__}")
    if Path(path).suffix.lower() == ".xml":
        atomic_write(path, to_opencv_xml(model))
        return
    try:
        text = _dumps_model(model_to_dict(model))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"model.params: not JSON-serialisable ({exc})") from None
    atomic_write(path, text + "\n")


def _compact(v: Any) -> str:
    return json.dumps(v, separators=(", ", ": "), allow_nan=False)


def _dumps(v: Any, pad: str) -> str:
    """Dicts key by key, lists of lists or dicts one element per line, other lists on one line:
    readable diffs, and half the size of indenting every number."""
    if isinstance(v, dict) and v and len(_compact(v)) > 80:
        body = ",\n".join(f"{pad} {json.dumps(k)}: {_dumps(x, pad + ' ')}" for k, x in v.items())
        return "{\n" + body + "\n" + pad + "}"
    if isinstance(v, list) and v and isinstance(v[0], list | dict):
        return "[\n" + ",\n".join(pad + " " + _compact(x) for x in v) + "\n" + pad + "]"
    return _compact(v)


def _dumps_model(d: dict[str, Any]) -> str:
    """The model's JSON text: one tree per line (a 2,000-tree cascade is about 0.4 MB), an
    explicit feature table one feature per line."""
    items = []
    for key, v in d.items():
        if key == "stages":
            stages = []
            for st in v:
                head = {k: x for k, x in st.items() if k != "trees"}
                trees = ",\n".join("   " + _compact(t) for t in st["trees"])
                stages.append("  " + _compact(head)[:-1] + f', "trees": [\n{trees}\n  ]}}')
            items.append(' "stages": [\n' + ",\n".join(stages) + "\n ]")
        else:
            items.append(f" {json.dumps(key)}: {_dumps(v, ' ')}")
    return "{\n" + ",\n".join(items) + "\n}"


def load_model(spec: str | os.PathLike[str], *, strict: bool = False) -> CascadeModel:
    """Load a cascade: a model name, an OpenCV XML file or a vjboost JSON file.

    Parameters
    ----------
    spec : str or path-like
        ``vjboost:NAME`` (a cascade shipped with vjboost), ``opencv:NAME`` (one shipped with
        the installed OpenCV) or a file path; the file format is detected by content.
    strict : bool, default=False
        See :func:`~vjboost.cascade.opencv_xml.read_opencv_xml`.

    Returns
    -------
    CascadeModel

    Raises
    ------
    CascadeFormatError
        Unknown name (:class:`~vjboost.cascade.shipped.ModelNotFound`), missing, unreadable or
        invalid file; the message names the file.

    Examples
    --------
    >>> load_model("vjboost:frontalface").window_shape
    (20, 20)
    """
    from .shipped import resolve_model

    path = resolve_model(spec) if isinstance(spec, str) else spec
    name = str(path)
    data = read_bytes(path, what="model file", error=CascadeFormatError)
    head = data.lstrip()[:1]
    if head == b"<":
        return read_opencv_xml(data, strict=strict, name=name)
    if head == b"{":
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CascadeFormatError(f"{name}: malformed or truncated JSON ({exc})") from None
        return model_from_dict(doc, name)
    raise CascadeFormatError(f"{name}: neither OpenCV XML nor a vjboost JSON model")
