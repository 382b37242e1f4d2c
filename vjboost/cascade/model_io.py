"""vjboost's own cascade file format, and loading of any supported model file.

The format is one JSON document (UTF-8), versioned and self-describing::

    {
      "format": "vjboost-cascade",
      "version": 1,
      "window_shape": [H, W],
      "feature_type": "HAAR" | "LBP" | "family",
      "family": {"family": name, "config": {...}}        # feature_type "family" only
      "features": [...],                                  # see below
      "stages": [{"threshold": t, "trees": [tree, ...]}, ...],
      "params": {...}                                     # free-form training information
    }

``features`` entries are ``{"rects": [[x, y, w, h, weight], ...], "tilted": bool}`` (HAAR),
``{"rect": [x, y, w, h]}`` (LBP) or integer feature ids of the family. A tree is
``{"left": [...], "right": [...], "feature": [...], "threshold": [...], "leaves": [...]}`` plus
``"subsets": [[8 uint32 words], ...]`` for categorical trees — the layout of
:class:`~vjboost.cascade.model.Tree`. Thresholds and leaf values are float32 numbers written as
the shortest decimal of their exact value, so a model loads back bit for bit.

Families are rebuilt with ``get_family_class(name).from_config(config)``; user-defined families
must be registered before loading.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write
from .model import CascadeModel, HaarFeature, LBPFeature, ModelError, Stage, Tree
from .opencv_xml import CascadeFormatError, read_opencv_xml, to_opencv_xml

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "load_model",
    "model_from_dict",
    "model_to_dict",
    "save_model",
]

FORMAT_NAME = "vjboost-cascade"
FORMAT_VERSION = 1


def model_to_dict(model: CascadeModel) -> dict[str, Any]:
    """The JSON-ready dict of a cascade (see the module docstring)."""
    model.validate()
    d: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "window_shape": list(model.window_shape),
        "feature_type": model.feature_type,
    }
    if model.feature_type == "family":
        from ..features.base import family_to_dict

        d["family"] = family_to_dict(model.family)
        d["features"] = [int(i) for i in model.features]
    else:
        d["features"] = [f.to_dict() for f in model.features]
    d["stages"] = [
        {"threshold": float(np.float32(s.threshold)), "trees": [t.to_dict() for t in s.trees]}
        for s in model.stages
    ]
    d["params"] = model.params
    return d


def model_from_dict(d: Any, source: str = "<dict>") -> CascadeModel:
    """Rebuild a cascade from :func:`model_to_dict` output.

    Raises
    ------
    CascadeFormatError
        If the document is not a vjboost cascade, has an unknown version or is inconsistent.
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
        raise CascadeFormatError(f"{source}: not a vjboost cascade file (missing "
                                 f"'format': '{FORMAT_NAME}')")
    ver = d.get("version")
    if not isinstance(ver, int) or ver > FORMAT_VERSION or ver < 1:
        raise CascadeFormatError(f"{source}: unsupported format version {ver!r} (this vjboost "
                                 f"reads versions 1..{FORMAT_VERSION})")
    try:
        ftype = d["feature_type"]
        family = None
        if ftype == "HAAR":
            feats = [HaarFeature(tuple(tuple(r) for r in f["rects"]), bool(f.get("tilted", False)))
                     for f in d["features"]]
        elif ftype == "LBP":
            feats = [LBPFeature(tuple(f["rect"])) for f in d["features"]]
        elif ftype == "family":
            from ..features.base import family_from_dict

            family = family_from_dict(d["family"])
            feats = [int(i) for i in d["features"]]
        else:
            raise CascadeFormatError(f"{source}: unknown feature_type {ftype!r}")
        stages = []
        for si, s in enumerate(d["stages"]):
            trees = []
            for ti, t in enumerate(s["trees"]):
                try:
                    trees.append(Tree(t["left"], t["right"], t["feature"], t["threshold"],
                                      t["leaves"], t.get("subsets")))
                except ModelError as exc:
                    raise CascadeFormatError(f"{source}: stages[{si}].trees[{ti}]: {exc}") from None
            stages.append(Stage(trees, s["threshold"]))
        return CascadeModel(tuple(d["window_shape"]), stages, feats, ftype, family,
                            d.get("params", {}))
    except CascadeFormatError:
        raise
    except KeyError as exc:
        raise CascadeFormatError(f"{source}: missing key {exc}") from None
    except (ModelError, TypeError, ValueError) as exc:
        raise CascadeFormatError(f"{source}: invalid cascade ({exc})") from None


def save_model(model: CascadeModel, path: str | os.PathLike[str]) -> None:
    """Save a cascade atomically: ``.xml`` → OpenCV XML (HAAR/LBP only), else vjboost JSON.

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


def _dumps_model(d: dict[str, Any]) -> str:
    """JSON with one feature and one tree per line: readable diffs, half the size of indenting
    every number (a 2,000-tree cascade is about 0.4 MB)."""

    def compact(v: Any) -> str:
        return json.dumps(v, separators=(", ", ": "), allow_nan=False)

    items = []
    for key, v in d.items():
        if key == "features" and isinstance(v, list) and v:
            body = ",\n".join("  " + compact(f) for f in v)
            items.append(f' "features": [\n{body}\n ]')
        elif key == "stages" and isinstance(v, list) and v:
            stages = []
            for st in v:
                head = {k: x for k, x in st.items() if k != "trees"}
                trees = ",\n".join("   " + compact(t) for t in st["trees"])
                stages.append("  " + compact(head)[:-1] + f', "trees": [\n{trees}\n  ]}}')
            items.append(' "stages": [\n' + ",\n".join(stages) + "\n ]")
        else:
            items.append(f" {json.dumps(key)}: " + json.dumps(v, indent=1, allow_nan=False)
                         .replace("\n", "\n "))
    return "{\n" + ",\n".join(items) + "\n}"


def load_model(path: str | os.PathLike[str], *, strict: bool = False) -> CascadeModel:
    """Load a cascade from an OpenCV XML file or a vjboost JSON file (detected by content).

    Raises
    ------
    CascadeFormatError
        Missing, unreadable or invalid file; the message names the file.
    """
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise CascadeFormatError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise CascadeFormatError(f"{name}: is a folder, not a model file") from None
    except OSError as exc:
        raise CascadeFormatError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    head = data.lstrip()[:1]
    if head == b"<":
        return read_opencv_xml(path, strict=strict)
    if head == b"{":
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CascadeFormatError(f"{name}: malformed or truncated JSON ({exc})") from None
        return model_from_dict(doc, name)
    raise CascadeFormatError(f"{name}: neither OpenCV XML nor a vjboost JSON model")
