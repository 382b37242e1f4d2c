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

A stage with early exits (:class:`~vjboost.cascade.model.Stage`) also has ``"exits": [e or
null, ...]``, one entry per tree (null: no exit after that tree).

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

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .._errors import LimitError
from .._io import atomic_write, parse_json, read_bytes
from .._limits import (
    Limits,
    check_count,
    check_float32,
    check_int,
    get_limits,
    limit_error,
    use_limits,
)
from .._memory import MemoryBudgetError
from .._parallel import worker_cached
from ..boost.tree import Tree, TreeError
from .model import CascadeModel, ModelError, Stage
from .opencv_xml import CascadeFormatError, opencv_family, read_opencv_xml, to_opencv_xml

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "built_from_model_json",
    "load_model",
    "model_from_bytes",
    "model_from_dict",
    "model_json",
    "model_to_dict",
    "save_model",
]

_T = TypeVar("_T")

FORMAT_NAME = "vjboost-cascade"
FORMAT_VERSION = 2


def _family_to_dict(family: Any) -> dict[str, Any]:
    from ..features.base import family_to_dict

    if hasattr(family, "families"):  # a FeaturePool
        return {"pool": family.get_config()}
    return family_to_dict(family)


def _family_from_dict(d: Any) -> Any:
    if isinstance(d, dict) and "pool" in d:
        from ..features.pool import FeaturePool

        return FeaturePool.from_config(d["pool"])
    from ..features.base import family_from_dict

    return family_from_dict(d)


def model_to_dict(model: CascadeModel) -> dict[str, Any]:
    """The JSON-ready dict of a cascade (see the module docstring).

    Parameters
    ----------
    model : CascadeModel

    Returns
    -------
    dict

    Examples
    --------
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> d = model_to_dict(random_cascade(seed=0, window=(20, 20), n_stages=2))
    >>> d["format"], d["version"], d["window_shape"], d["family"]["family"]
    ('vjboost-cascade', 2, [20, 20], 'haar')
    >>> len(d["stages"]), len(d["feature_ids"]), d["stages"][0]["threshold"]
    (2, 9, 0.0)
    """
    model.validate()
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "window_shape": list(model.window_shape),
        "family": _family_to_dict(model.family),
        "feature_ids": model.feature_ids.tolist(),
        "stages": [_stage_to_dict(s) for s in model.stages],
        "params": model.params,
    }


def _stage_to_dict(s: Stage) -> dict[str, Any]:
    d: dict[str, Any] = {"threshold": float(np.float32(s.threshold)),
                         "trees": [t.to_dict() for t in s.trees]}
    if s.exits is not None:  # JSON has no infinity: null where a tree has no exit
        d["exits"] = [float(e) if np.isfinite(e) else None for e in s.exits]
    return d


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


_INT32 = (-(2**31), 2**31 - 1)
_INDEX = (0, 2**31 - 1)
_WORD = (-(2**31), 2**32 - 1)  # LBP subset words: OpenCV writes them signed, vjboost unsigned


def _fail(where: str, what: str) -> CascadeFormatError:
    return CascadeFormatError(f"{where}: {what}")


def _list(v: Any, where: str) -> list[Any]:
    if not isinstance(v, list):
        raise _fail(where, f"expected a list, got {type(v).__name__}")
    return v


def _check_ints(v: Any, where: str, rng: tuple[int, int]) -> None:
    lo, hi = rng
    for i, x in enumerate(_list(v, where)):
        if type(x) is not int or not lo <= x <= hi:  # fast path for the valid case
            check_int(x, f"{where}[{i}]", lo=lo, hi=hi, error=CascadeFormatError)


def _check_floats(v: Any, where: str, *, nested: bool = False) -> None:
    for i, x in enumerate(_list(v, where)):
        if nested and isinstance(x, list):
            _check_floats(x, f"{where}[{i}]")
        elif type(x) is not float or not -3.4e38 < x < 3.4e38:
            check_float32(x, f"{where}[{i}]", error=CascadeFormatError)


def _check_tree(t: Any, where: str) -> int:
    """Strict numbers in a tree's dict (before numpy could wrap or round them); its nodes."""
    if not isinstance(t, dict):
        raise _fail(where, f"expected a mapping, got {type(t).__name__}")
    for key in ("feature", "left", "right", "threshold", "leaves"):
        if key not in t:
            raise _fail(where, f"missing key {key!r}")
    _check_ints(t["feature"], f"{where}.feature", _INDEX)
    _check_ints(t["left"], f"{where}.left", _INT32)
    _check_ints(t["right"], f"{where}.right", _INT32)
    _check_floats(t["threshold"], f"{where}.threshold")
    _check_floats(t["leaves"], f"{where}.leaves", nested=True)
    if t.get("node_scores") is not None:
        _check_floats(t["node_scores"], f"{where}.node_scores")
    if t.get("categorical") is not None:
        for i, c in enumerate(_list(t["categorical"], f"{where}.categorical")):
            if not isinstance(c, bool) and c not in (0, 1):
                raise _fail(f"{where}.categorical[{i}]", f"expected true or false, got {c!r}")
    if t.get("subsets") is not None:
        for i, row in enumerate(_list(t["subsets"], f"{where}.subsets")):
            _check_ints(row, f"{where}.subsets[{i}]", _WORD)
    return len(t["feature"])


def _check_document(d: dict[str, Any], source: str, lim: Limits) -> None:
    """The caps and strict numbers of a document, before anything is built."""
    window = _list(d.get("window_shape"), f"{source}: window_shape")
    if len(window) != 2:
        raise _fail(f"{source}: window_shape", f"expected [height, width], got {window!r:.40}")
    for i, v in enumerate(window):
        check_int(v, f"{source}: window_shape[{i}]", lo=1, error=CascadeFormatError)
        if v > lim.max_window_side:
            raise limit_error(f"{source}: window_shape", f"a side of {v}", lim.max_window_side,
                              "max_window_side", unit=" pixels")
    if "feature_ids" in d:
        ids = _list(d["feature_ids"], f"{source}: feature_ids")
        check_count(len(ids), f"{source}: feature_ids", "max_features", unit=" features",
                    limits=lim)
        _check_ints(ids, f"{source}: feature_ids", _INDEX)
    if isinstance(d.get("features"), list):  # version 1: an explicit HAAR/LBP feature list
        feats = d["features"]
        check_count(len(feats), f"{source}: features", "max_features", unit=" features",
                    limits=lim)
        for i, f in enumerate(feats):
            where = f"{source}: features[{i}]"
            if not isinstance(f, dict):
                if d.get("feature_type") == "family":
                    continue  # ids into a family, checked by _check_ints below
                raise _fail(where, f"expected a mapping, got {type(f).__name__}")
            if d.get("feature_type") == "LBP":
                rect = _list(f.get("rect"), f"{where}.rect")
                if len(rect) != 4:
                    raise _fail(f"{where}.rect", f"expected [x, y, w, h], got {len(rect)} values")
                _check_ints(rect, f"{where}.rect", _INT32)
                continue
            rects = _list(f.get("rects"), f"{where}.rects")
            if not 1 <= len(rects) <= 3:
                raise _fail(f"{where}.rects", f"expected 1 to 3 rectangles, got {len(rects)}")
            for k, rc in enumerate(rects):
                rc = _list(rc, f"{where}.rects[{k}]")
                if len(rc) != 5:
                    raise _fail(f"{where}.rects[{k}]", "expected [x, y, w, h, weight], got "
                                f"{len(rc)} values")
                _check_ints(rc[:4], f"{where}.rects[{k}]", _INT32)
                _check_floats(rc[4:], f"{where}.rects[{k}][4:]")
            if not isinstance(f.get("tilted", False), bool):
                raise _fail(f"{where}.tilted", f"expected true or false, got {f['tilted']!r:.30}")
        if d.get("feature_type") == "family":
            _check_ints(feats, f"{source}: features", _INDEX)
    nodes = 0
    for si, st in enumerate(_list(d.get("stages"), f"{source}: stages")):
        where = f"{source}: stages[{si}]"
        if not isinstance(st, dict):
            raise _fail(where, f"expected a mapping, got {type(st).__name__}")
        if "threshold" not in st or "trees" not in st:
            raise _fail(where, "missing key 'threshold' or 'trees'")
        check_float32(st["threshold"], f"{where}.threshold", error=CascadeFormatError)
        if st.get("exits") is not None:
            ex = _list(st["exits"], f"{where}.exits")
            if not isinstance(st["trees"], list) or len(ex) != len(st["trees"]):
                raise _fail(f"{where}.exits", "expected one entry per tree")
            for ei, e in enumerate(ex):
                if e is not None:
                    check_float32(e, f"{where}.exits[{ei}]", error=CascadeFormatError)
        for ti, t in enumerate(_list(st["trees"], f"{where}.trees")):
            nodes += _check_tree(t, f"{where}.trees[{ti}]")
        if nodes > lim.max_model_nodes:
            raise limit_error(source, f"more than {lim.max_model_nodes} decision nodes (stage "
                              f"{si}), which", lim.max_model_nodes, "max_model_nodes")


def model_from_dict(d: Any, source: str = "<dict>", *,
                    limits: Limits | None = None) -> CascadeModel:
    """Rebuild a cascade from :func:`model_to_dict` output (or a version-1 document).

    Parameters
    ----------
    d : dict
    source : str
        Named in error messages.
    limits : Limits, optional
        Caps on the window, feature count and node count (default:
        :func:`vjboost._limits.get_limits`).

    Returns
    -------
    CascadeModel

    Raises
    ------
    CascadeFormatError
        If the document is not a vjboost cascade, has an unknown version, is inconsistent or
        holds a number its field cannot hold exactly (an integer out of range or written as a
        float, a float beyond float32, a boolean for a number); the message names the field.
    LimitError
        A cap of ``limits`` is exceeded.

    Examples
    --------
    >>> import json
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> model = random_cascade(seed=0, window=(20, 20), n_stages=2)
    >>> text = json.dumps(model_to_dict(model))       # what a model file holds
    >>> back = model_from_dict(json.loads(text))
    >>> back == model, back.n_stages, back.n_trees
    (True, 2, 9)
    >>> model_from_dict({"format": "vjboost-cascade", "version": 9}, "m.json")
    Traceback (most recent call last):
    ...
    vjboost.cascade.opencv_xml.CascadeFormatError: m.json: unsupported format version 9 ...
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
        raise CascadeFormatError(f"{source}: not a vjboost cascade file (missing "
                                 f"'format': '{FORMAT_NAME}')")
    ver = d.get("version")
    if isinstance(ver, bool) or not isinstance(ver, int) or ver > FORMAT_VERSION or ver < 1:
        raise CascadeFormatError(f"{source}: unsupported format version {ver!r} (this vjboost "
                                 f"reads versions 1..{FORMAT_VERSION})")
    lim = get_limits(limits)
    _check_document(d, source, lim)
    try:
        with use_limits(lim):  # the family checks its window and feature count against these
            if ver == 1:
                family, ids = _v1_family(d, source)
            else:
                family, ids = _family_from_dict(d["family"]), d["feature_ids"]
        stages = []
        for si, s in enumerate(d["stages"]):
            trees = [Tree.from_dict(t, f"{source}: stages[{si}].trees[{ti}]")
                     for ti, t in enumerate(s["trees"])]
            ex = s.get("exits")
            if ex is not None:
                ex = [-np.inf if e is None else e for e in ex]
            stages.append(Stage(trees, threshold=s["threshold"], exits=ex))
        return CascadeModel(tuple(d["window_shape"]), stages=stages, family=family,
                            feature_ids=ids, params=d.get("params", {}))
    except CascadeFormatError:
        raise
    except (LimitError, MemoryBudgetError) as exc:  # a family's own check: name the file
        if str(exc).startswith(source):
            raise
        raise type(exc)(f"{source}: {exc}") from None
    except TreeError as exc:
        raise CascadeFormatError(str(exc)) from None
    except KeyError as exc:
        raise CascadeFormatError(f"{source}: missing key {exc}") from None
    except (ModelError, TypeError, ValueError, IndexError, OverflowError) as exc:
        # a family's config or a version-1 feature list of the wrong shape or range
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

    Examples
    --------
    >>> import os, tempfile
    >>> model = load_model("vjboost:frontalface_haar")   # Haar only: OpenCV XML can hold it
    >>> folder = tempfile.mkdtemp()
    >>> save_model(model, os.path.join(folder, "face.json"))   # vjboost JSON
    >>> save_model(model, os.path.join(folder, "face.xml"))    # OpenCV's cascade XML
    >>> load_model(os.path.join(folder, "face.xml")).n_stages == model.n_stages
    True
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


def load_model(spec: str | os.PathLike[str], *, strict: bool = False,
               limits: Limits | None = None) -> CascadeModel:
    """Load a cascade: a model name, an OpenCV XML file or a vjboost JSON file.

    Parameters
    ----------
    spec : str or path-like
        ``vjboost:NAME`` (a cascade shipped with vjboost), ``opencv:NAME`` (one shipped with
        the installed OpenCV) or a file path; the file format is detected by content.
    strict : bool, default=False
        See :func:`~vjboost.cascade.opencv_xml.read_opencv_xml`.
    limits : Limits, optional
        Caps on the file size (checked before it is read), JSON nesting, window side, feature
        and node counts (default: :func:`vjboost._limits.get_limits`; raise them with the
        ``VJBOOST_MAX_*`` environment variables, see ``docs/limits.md``).

    Returns
    -------
    CascadeModel

    Raises
    ------
    LimitError
        A cap was exceeded (the message names the file, the cap and how to raise it).
    CascadeFormatError
        Unknown name (:class:`~vjboost.cascade.shipped.ModelNotFound`), missing, unreadable or
        invalid file; the message names the file.

    Examples
    --------
    >>> load_model("vjboost:frontalface").window_shape
    (24, 24)
    """
    from .shipped import resolve_model

    path = resolve_model(spec) if isinstance(spec, str) else spec
    name = str(path)
    lim = get_limits(limits)
    data = read_bytes(path, what="model file", error=CascadeFormatError,
                      max_bytes=lim.max_model_bytes)
    return model_from_bytes(data, name, strict=strict, limits=lim)


def model_from_bytes(data: bytes, name: str = "<bytes>", *, strict: bool = False,
                     limits: Limits | None = None) -> CascadeModel:
    """A cascade from the content of a model file (OpenCV XML or vjboost JSON, told apart by
    the first character).

    Parameters
    ----------
    data : bytes
    name : str
        Named in messages (the file).
    strict : bool, default=False
        See :func:`~vjboost.cascade.opencv_xml.read_opencv_xml`.
    limits : Limits, optional
        Caps (default: :func:`vjboost._limits.get_limits`).

    Returns
    -------
    CascadeModel

    Raises
    ------
    CascadeFormatError, LimitError
        Any problem, in one line naming ``name`` (never another exception).

    Examples
    --------
    >>> model_from_bytes(b'{"format": "vjboost-cascade", "version": true}', "m.json")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vjboost.cascade.opencv_xml.CascadeFormatError: m.json: unsupported format version True ...
    """
    lim = get_limits(limits)
    if len(data) > lim.max_model_bytes:
        raise limit_error(name, f"model file of {len(data)}", lim.max_model_bytes,
                          "max_model_bytes", unit=" bytes")
    head = data.lstrip()[:1]
    if head == b"<":
        return read_opencv_xml(data, strict=strict, name=name, limits=lim)
    if head == b"{":
        doc = parse_json(data, name, error=CascadeFormatError, limits=lim, what="model file")
        return model_from_dict(doc, name, limits=lim)
    raise CascadeFormatError(f"{name}: neither OpenCV XML nor a vjboost JSON model")


def model_json(model: CascadeModel) -> bytes:
    """The model as compact JSON bytes: what a task sends to its workers once.

    Examples
    --------
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> model_json(random_cascade(seed=0))[:28]
    b'{"format":"vjboost-cascade",'
    """
    return json.dumps(model_to_dict(model), separators=(",", ":"), allow_nan=False).encode()


def built_from_model_json(data: bytes, key: str, build: Callable[[CascadeModel], _T]) -> _T:
    """``build(model)`` for the model in ``data`` (:func:`model_json`), built once per worker
    process for the model's digest and ``key`` (:func:`vjboost._parallel.worker_cached`).

    Parameters
    ----------
    data : bytes
        :func:`model_json` of the model.
    key : str
        What else ``build`` depends on (its parameters, as text).
    build : callable
        ``build(model)``, e.g. a detector of the model.

    Returns
    -------
    object

    Examples
    --------
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> data = model_json(random_cascade(seed=0))
    >>> a = built_from_model_json(data, "stages", lambda m: m.n_stages)
    >>> a == built_from_model_json(data, "stages", lambda m: -1)   # kept: not built again
    True
    """
    return worker_cached(
        (hashlib.sha1(data).hexdigest(), key),
        lambda: build(model_from_dict(json.loads(data), source="<model bytes>")))
