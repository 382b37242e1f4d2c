"""Read and write OpenCV cascade XML files.

Reading accepts both layouts that ``cv2.CascadeClassifier`` loads:

* the traincascade ("new") layout — ``stageType``/``featureType``/``stages``/``features``; HAAR
  (stumps or trees, upright and tilted features) and LBP (256-category subsets);
* the old haartraining layout (``<size>``, ``trees`` of nodes with ``left_val``/``left_node``...),
  converted the way OpenCV converts it at load time (every node gets its own feature, leaves are
  numbered in file order, ``parent``/``next`` are ignored).

Parsing goes through :mod:`defusedxml` (no entity expansion, no external entities or DTDs). Any
problem raises :class:`CascadeFormatError` (a ``ValueError``) naming the file and the element.

Writing produces the traincascade layout for cascades of HAAR or LBP features (stumps or trees):
float32 values with 9 significant digits (exact round trip), full ``stageParams`` and
``featureParams``, stumps as ``0 -1``. Cascades over other vjboost feature families cannot be run
by OpenCV and are refused with an explanation; save them with :func:`vjboost.cascade.save_model`.
"""

from __future__ import annotations

import os
import re
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

import defusedxml
import defusedxml.ElementTree as DET
import numpy as np

from .._errors import InputError, LimitError
from .._io import atomic_write, read_bytes
from .._limits import FLOAT32_OVERFLOW, Limits, get_limits, limit_error, use_limits
from ..boost.tree import Tree, TreeError
from .model import CascadeModel, ModelError, Stage

__all__ = [
    "CascadeFormatError",
    "ExportError",
    "opencv_family",
    "read_opencv_xml",
    "to_opencv_xml",
    "write_opencv_xml",
]

_FLT_EPSILON = float(np.finfo(np.float32).eps)


class CascadeFormatError(InputError):
    """A model file is malformed, truncated or uses an unsupported feature type."""


class ExportError(InputError):
    """A cascade cannot be written as OpenCV XML (e.g. it uses a feature family OpenCV lacks)."""


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------


# strict number syntax (what OpenCV's FileStorage writes): Python's float() would also take
# "inf", "nan" and "1_9", and int(float(x)) would wrap or truncate
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,4})?$")
_INTEGER = re.compile(r"^[+-]?\d{1,20}$")
_INT32 = (-(2**31), 2**31 - 1)
_WORD = (-(2**31), 2**32 - 1)  # LBP subset words: OpenCV writes them as signed int32


class _Reader:
    """Helpers that remember the file name and element path for error messages.

    Their ``where`` argument is the path of the element at hand (``cascade/stages/_[3]``...),
    which errors name after the file; ``node`` is the element itself.
    """

    def __init__(self, source: str, limits: Limits | None = None) -> None:
        self.source = source
        self.limits = get_limits(limits)

    def check_window(self, h: int, w: int, where: str) -> None:
        """Refuse a window with a side over the ``max_window_side`` limit.

        Parameters
        ----------
        h, w : int
            The window's height and width in pixels.
        where : str
            The element's path (see the class).
        """
        cap = self.limits.max_window_side
        if max(h, w) > cap:
            raise limit_error(f"{self.source}: element <{where}>", f"window {w}x{h}: a side of "
                              f"{max(h, w)}", cap, "max_window_side", unit=" pixels")

    def check_features(self, n: int, where: str) -> None:
        """Refuse more features than the ``max_features`` limit.

        Parameters
        ----------
        n : int
            Features of the cascade.
        where : str
            The element's path (see the class).
        """
        self._check_count(n, where, what="features", field="max_features")

    def check_nodes(self, n: int, where: str) -> None:
        """Refuse more decision nodes than the ``max_model_nodes`` limit.

        Parameters
        ----------
        n : int
            Decision nodes of the cascade.
        where : str
            The element's path (see the class).
        """
        self._check_count(n, where, what="decision nodes", field="max_model_nodes")

    def _check_count(self, n: int, where: str, *, what: str, field: str) -> None:
        """Refuse ``n`` ``what`` over the ``field`` limit."""
        cap = getattr(self.limits, field)
        if n > cap:
            raise limit_error(f"{self.source}: element <{where}>", f"{n} {what}, which", cap,
                              field)

    def fail(self, where: str, what: str) -> CascadeFormatError:
        """The error naming the file, the element and what is wrong (for the caller to raise).

        Parameters
        ----------
        where : str
            The element's path (see the class).
        what : str
            What is wrong.

        Returns
        -------
        CascadeFormatError
        """
        return CascadeFormatError(f"{self.source}: element <{where}>: {what}")

    def child(self, node: ET.Element, tag: str, where: str, required: bool = True):
        """The first child ``<tag>`` of ``node``.

        Parameters
        ----------
        node : Element
            The XML element.
        tag : str
            The child's tag.
        where : str
            The element's path (see the class).
        required : bool, default True
            Raise when it is missing (else return None).

        Returns
        -------
        Element or None
        """
        c = node.find(tag)
        if c is None and required:
            raise self.fail(where, f"missing child <{tag}>")
        return c

    def seq(self, node: ET.Element, where: str) -> list[ET.Element]:
        """The ``<_>`` items of an OpenCV sequence element (any other child is an error).

        Parameters
        ----------
        node, where
            The element, and its path (see the class).

        Returns
        -------
        list of Element
        """
        items = list(node)
        for it in items:
            if it.tag != "_":
                raise self.fail(where, f"expected a sequence of <_> items, found <{it.tag}>")
        return items

    def text(self, node: ET.Element, where: str) -> str:
        """The element's stripped, non-empty text.

        Parameters
        ----------
        node, where
            The element, and its path (see the class).

        Returns
        -------
        str
        """
        t = (node.text or "").strip()
        if not t:
            raise self.fail(where, "empty value")
        return t

    def tokens(self, node: ET.Element, where: str) -> list[str]:
        """The whitespace-separated tokens of the element's (non-empty) text.

        Parameters
        ----------
        node, where
            The element, and its path (see the class).

        Returns
        -------
        list of str
        """
        return self.text(node, where).split()

    def number(self, token: str, where: str) -> float:
        """A strict float32 number: decimal notation only (no ``inf``, ``nan``, ``1_9``),
        finite within float32's range.

        Parameters
        ----------
        token : str
            One token of an element's text.
        where : str
            The element's path (see the class).

        Returns
        -------
        float
        """
        if not _NUMBER.match(token):
            raise self.fail(where, f"not a number: {token[:30]!r}")
        v = float(token)
        if not abs(v) < FLOAT32_OVERFLOW:
            raise self.fail(where, f"{token[:30]} is beyond float32's range (|x| < "
                            "3.4028236e+38)")
        return v

    def int_token(self, token: str, where: str, rng: tuple[int, int] = _INT32) -> int:
        """A strict integer within ``rng`` (no ``1.0``, ``1e3``, ``inf``, no wrap-around).

        Parameters
        ----------
        token : str
            One token of an element's text.
        where : str
            The element's path (see the class).
        rng : (int, int), default int32's range
            Smallest and largest value accepted.

        Returns
        -------
        int
        """
        if not _INTEGER.match(token):
            if not _NUMBER.match(token):
                raise self.fail(where, f"not a number: {token[:30]!r}")
            raise self.fail(where, f"expected an integer, got {token[:30]!r}")
        v = int(token)
        if not rng[0] <= v <= rng[1]:
            raise self.fail(where, f"{token[:30]} is outside {rng[0]}..{rng[1]}")
        return v

    def numbers(self, node: ET.Element, where: str) -> list[float]:
        """Every token of the element as a strict float32 number (:meth:`number`).

        Parameters
        ----------
        node, where
            The element, and its path (see the class).

        Returns
        -------
        list of float
        """
        return [self.number(t, where) for t in self.tokens(node, where)]

    def integer(self, node: ET.Element, where: str) -> int:
        """The element's single token as a strict int32 (:meth:`int_token`).

        Parameters
        ----------
        node, where
            The element, and its path (see the class).

        Returns
        -------
        int
        """
        vals = self.tokens(node, where)
        if len(vals) != 1:
            raise self.fail(where, f"expected one integer, got {len(vals)} values")
        return self.int_token(vals[0], where)

    def real(self, node: ET.Element, where: str) -> float:
        """The element's single token as a strict float32 number (:meth:`number`).

        Parameters
        ----------
        node, where
            The element, and its path (see the class).

        Returns
        -------
        float
        """
        vals = self.tokens(node, where)
        if len(vals) != 1:
            raise self.fail(where, f"expected one number, got {len(vals)}")
        return self.number(vals[0], where)

    def ints(self, node: ET.Element, where: str) -> list[int]:
        """Every token of the element as a strict int32 (:meth:`int_token`).

        Parameters
        ----------
        node, where
            The element, and its path (see the class).

        Returns
        -------
        list of int
        """
        return [self.int_token(t, where) for t in self.tokens(node, where)]




def _parse(data: bytes, source: str) -> ET.Element:
    try:
        root = DET.fromstring(data, forbid_dtd=True)
    except defusedxml.DefusedXmlException as exc:
        raise CascadeFormatError(
            f"{source}: refused unsafe XML ({type(exc).__name__}: {exc})"
        ) from None
    except ET.ParseError as exc:
        line, col = getattr(exc, "position", (None, None))
        raise CascadeFormatError(
            f"{source}: malformed or truncated XML at line {line}, column {col} ({exc})"
        ) from None
    return root


def read_opencv_xml(
    source: str | os.PathLike[str] | bytes, *, strict: bool = False, name: str | None = None,
    limits: Limits | None = None,
) -> CascadeModel:
    """Load an OpenCV cascade XML file (traincascade or old haartraining layout).

    Parameters
    ----------
    source : path-like or bytes
        File path, or the XML content itself.
    strict : bool, default=False
        OpenCV treats a file without ``featureParams`` as empty (scikit-image's copy of the LBP
        face cascade misspells that tag). By default such a file is read with ``maxCatCount``
        inferred from ``featureType`` and a warning; ``strict=True`` raises instead.
    name : str, optional
        The name messages give the source (default: the path, or ``<bytes>``).
    limits : Limits, optional
        Caps on the file size (checked before reading), window side, feature and node counts
        (default: :func:`vjboost._limits.get_limits`).

    Returns
    -------
    CascadeModel
        ``params`` holds ``"format"`` (``"opencv-traincascade"`` or ``"opencv-haartraining"``),
        ``"stageParams"`` and ``"featureParams"`` as read.

    Raises
    ------
    CascadeFormatError
        Missing/unreadable file, malformed or truncated XML, a missing or invalid element (the
        message names the file and the element path), a number its field cannot hold exactly
        (``inf``, ``1_9``, ``4294967315`` for a feature index), a HOG cascade (unsupported, as
        in OpenCV).
    LimitError
        A cap of ``limits`` was exceeded.

    Examples
    --------
    >>> from vjboost.cascade.model_io import load_model
    >>> xml = to_opencv_xml(load_model("vjboost:frontalface_haar"))   # a Haar-only cascade
    >>> model = read_opencv_xml(xml.encode(), name="face.xml")
    >>> model.window_shape, model.params["format"]
    ((20, 20), 'opencv-traincascade')
    """
    lim = get_limits(limits)
    if isinstance(source, bytes | bytearray):
        data = bytes(source)
        name = name or "<bytes>"
        if len(data) > lim.max_model_bytes:
            raise limit_error(name, f"cascade file of {len(data)}", lim.max_model_bytes,
                              "max_model_bytes", unit=" bytes")
    else:
        name = name or str(source)
        data = read_bytes(source, what="cascade file", error=CascadeFormatError,
                          max_bytes=lim.max_model_bytes)
    if not data.strip():
        raise CascadeFormatError(f"{name}: empty file")
    root = _parse(data, name)
    r = _Reader(name, lim)
    if root.tag != "opencv_storage":
        raise r.fail(root.tag, "root element must be <opencv_storage> (not an OpenCV file)")
    tops = list(root)
    if not tops:
        raise r.fail("opencv_storage", "no cascade inside")
    top = tops[0]
    try:
        if top.find("stageType") is not None:
            return _read_new(top, r, strict)
        if top.find("size") is not None:
            return _read_old(top, r)
    except ModelError as exc:
        raise CascadeFormatError(f"{name}: {exc}") from None
    raise r.fail(top.tag, "neither a traincascade cascade (no <stageType>) nor an old-layout "
                 "cascade (no <size>)")


def _read_new(top: ET.Element, r: _Reader, strict: bool) -> CascadeModel:
    base = top.tag
    stage_type = r.text(r.child(top, "stageType", base), f"{base}/stageType")
    if stage_type != "BOOST":
        raise r.fail(f"{base}/stageType", f"only BOOST cascades exist, got {stage_type!r}")
    ftype = r.text(r.child(top, "featureType", base), f"{base}/featureType")
    if ftype == "HOG":
        raise r.fail(f"{base}/featureType", "HOG cascades from opencv_traincascade are not "
                     "supported (OpenCV >= 3.0 refuses them too); train a vjboost HOG cascade")
    if ftype not in ("HAAR", "LBP"):
        raise r.fail(f"{base}/featureType", f"unknown feature type {ftype!r} (HAAR or LBP)")
    h = r.integer(r.child(top, "height", base), f"{base}/height")
    w = r.integer(r.child(top, "width", base), f"{base}/width")
    for v, tag in ((h, "height"), (w, "width")):
        if v <= 0:
            raise r.fail(f"{base}/{tag}", f"invalid window size {w}x{h}")
    r.check_window(h, w, f"{base}/width, height")

    def mapping(tag: str) -> dict[str, Any]:
        node = top.find(tag)
        if node is None:
            return {}
        out = {}
        for c in node:
            t = (c.text or "").strip()
            if _INTEGER.match(t):
                out[c.tag] = int(t)
            elif _NUMBER.match(t) and abs(float(t)) < FLOAT32_OVERFLOW:
                out[c.tag] = float(t)
            else:
                out[c.tag] = t[:200]
        return out

    stage_params = mapping("stageParams")
    fp_node = top.find("featureParams")
    if fp_node is None:
        if strict:
            raise r.fail(f"{base}/featureParams", "missing (OpenCV loads such a file as an empty "
                         "classifier)")
        warnings.warn(
            f"{r.source}: no <featureParams> element (OpenCV would load this file as an empty "
            f"classifier); assuming maxCatCount = {256 if ftype == 'LBP' else 0} for {ftype}",
            UserWarning, stacklevel=3,
        )
        feature_params: dict[str, Any] = {"maxCatCount": 256 if ftype == "LBP" else 0}
    else:
        feature_params = mapping("featureParams")
    ncat = feature_params.get("maxCatCount", 0)
    if not isinstance(ncat, int) or ncat < 0:
        raise r.fail(f"{base}/featureParams/maxCatCount", f"invalid value {ncat!r}")
    if (ftype == "LBP") != (ncat > 0):
        raise r.fail(f"{base}/featureParams/maxCatCount", f"{ncat} does not fit featureType "
                     f"{ftype} (LBP needs 256 categories, HAAR 0)")
    if ncat > 256:
        raise r.fail(f"{base}/featureParams/maxCatCount", f"{ncat} > 256 categories")
    subset_size = (ncat + 31) // 32
    node_step = 3 + (subset_size if ncat > 0 else 1)

    stages_node = r.child(top, "stages", base)
    stage_items = r.seq(stages_node, f"{base}/stages")
    if not stage_items:
        raise r.fail(f"{base}/stages", "no stages")
    stages = []
    n_nodes = 0
    for si, st in enumerate(stage_items):
        sw = f"{base}/stages/_[{si}]"
        thr = r.real(r.child(st, "stageThreshold", sw), f"{sw}/stageThreshold")
        wc = r.child(st, "weakClassifiers", sw)
        weak_items = r.seq(wc, f"{sw}/weakClassifiers")
        if not weak_items:
            raise r.fail(f"{sw}/weakClassifiers", "empty")
        trees = []
        for ti, wk in enumerate(weak_items):
            ww = f"{sw}/weakClassifiers/_[{ti}]"
            toks = r.tokens(r.child(wk, "internalNodes", ww), f"{ww}/internalNodes")
            leaves = r.numbers(r.child(wk, "leafValues", ww), f"{ww}/leafValues")
            if len(toks) % node_step:
                raise r.fail(f"{ww}/internalNodes", f"{len(toks)} numbers is not a multiple of "
                             f"{node_step} (left right feature {'subset x8' if ncat else 'thr'})")
            n_nodes += len(toks) // node_step
            r.check_nodes(n_nodes, ww)
            where = f"{ww}/internalNodes"
            ints = [r.int_token(t, where, _WORD if j % node_step >= 3 else
                                (0, _INT32[1]) if j % node_step == 2 else _INT32)
                    for j, t in enumerate(toks) if ncat or j % node_step < 3]
            rec = np.asarray(ints, dtype=np.int64).reshape(-1, node_step if ncat else 3)
            thr_n = (np.zeros(len(rec)) if ncat else
                     np.asarray([r.number(t, where) for t in toks[3::node_step]]))
            try:
                tree = Tree(rec[:, 2], threshold=thr_n, left=rec[:, 0], right=rec[:, 1],
                            leaves=leaves, subsets=rec[:, 3:] if ncat else None)
            except TreeError as exc:
                raise r.fail(ww, str(exc)) from None
            trees.append(tree)
        stages.append((trees, thr))

    feats_node = r.child(top, "features", base)
    feat_items = r.seq(feats_node, f"{base}/features")
    if not feat_items:
        raise r.fail(f"{base}/features", "no features")
    r.check_features(len(feat_items), f"{base}/features")
    features: list[Any] = []
    paths = []
    for fi, fn in enumerate(feat_items):
        fw = f"{base}/features/_[{fi}]"
        paths.append(f"{fw}/rects" if ftype == "HAAR" else f"{fw}/rect")
        if ftype == "HAAR":
            features.append(_read_haar_feature(fn, fw, r, (h, w)))
        else:
            vals = r.ints(r.child(fn, "rect", fw), f"{fw}/rect")
            if len(vals) != 4:
                raise r.fail(f"{fw}/rect", f"expected 'x y w h', got {len(vals)} numbers")
            x, y, bw, bh = vals
            if x < 0 or y < 0 or bw < 1 or bh < 1 or x + 3 * bw > w or y + 3 * bh > h:
                raise r.fail(f"{fw}/rect", f"LBP grid {tuple(vals)} (3x3 blocks) reaches outside "
                             f"the {w}x{h} window")
            features.append(tuple(vals))
    for si, (trees, _) in enumerate(stages):
        for ti, t in enumerate(trees):
            if t.feature.max() >= len(features):
                raise r.fail(f"{base}/stages/_[{si}]/weakClassifiers/_[{ti}]/internalNodes",
                             f"feature index {int(t.feature.max())} but only {len(features)} "
                             "features")
    params = {"format": "opencv-traincascade", "stageParams": stage_params,
              "featureParams": feature_params}
    return _model((h, w), ftype, features, paths, stages, params, r)


def _read_haar_feature(fn: ET.Element, fw: str, r: _Reader, window: tuple[int, int],
                       drop_tiny_third: bool = False) -> tuple[list[tuple], bool]:
    """``(rects, tilted)`` of a Haar feature element, ``rects`` as ``(x, y, w, h, weight)``."""
    rects_node = r.child(fn, "rects", fw)
    items = r.seq(rects_node, f"{fw}/rects")
    if not 1 <= len(items) <= 3:
        raise r.fail(f"{fw}/rects", f"expected 2 or 3 rectangles, got {len(items)}")
    rects = []
    for k, it in enumerate(items):
        toks = r.tokens(it, f"{fw}/rects/_[{k}]")
        if len(toks) != 5:
            raise r.fail(f"{fw}/rects/_[{k}]", "expected 'x y w h weight' (4 integers, 1 number)")
        x, y, ww, hh = (r.int_token(t, f"{fw}/rects/_[{k}]") for t in toks[:4])
        vals = [x, y, ww, hh, r.number(toks[4], f"{fw}/rects/_[{k}]")]
        if drop_tiny_third and k == 2 and abs(vals[4]) < _FLT_EPSILON:
            continue
        hw, wwin = window
        if x < 0 or y < 0 or ww < 0 or hh < 0 or x >= wwin or y >= hw or x + ww > wwin \
                or y + hh > hw:
            raise r.fail(f"{fw}/rects/_[{k}]", f"rectangle {(x, y, ww, hh)} outside the "
                         f"{wwin}x{hw} window")
        rects.append((x, y, ww, hh, vals[4]))
    tilted_node = fn.find("tilted")
    tilted = (tilted_node is not None
              and bool(r.int_token(r.text(tilted_node, f"{fw}/tilted"), f"{fw}/tilted", (0, 1))))
    return rects, tilted


def opencv_family(window_shape: tuple[int, int], kind: str, features: Sequence[Any]) -> Any:
    """The explicit-table family of a list of OpenCV features (import of XML and old models).

    Parameters
    ----------
    window_shape : (height, width)
    kind : {"HAAR", "LBP"}
    features : sequence
        HAAR: ``(rects, tilted)`` per feature, ``rects`` 1 to 3 ``(x, y, w, h, weight)``
        (OpenCV XML semantics, weights rounded to float32); LBP: ``(x, y, w, h)``, the top-left
        block of the 3x3 grid.

    Returns
    -------
    FeatureFamily
        ``HaarFamily.from_rects(..., normalize=True)`` or ``MBLBPFamily.from_blocks(...)``;
        feature ``i`` is ``features[i]``.
    """
    from ..features.haar import HaarFamily
    from ..features.mblbp import MBLBPFamily

    if kind == "LBP":
        blocks = np.asarray(features, dtype=np.int64).reshape(-1, 4)
        return MBLBPFamily.from_blocks(tuple(window_shape), blocks=blocks)
    if kind != "HAAR":
        raise ValueError(f"kind: expected 'HAAR' or 'LBP', got {kind!r}")
    n = len(features)
    rects = np.zeros((n, 3, 4), dtype=np.int64)
    weights = np.zeros((n, 3), dtype=np.float64)
    tilted = np.zeros(n, dtype=bool)
    for i, (rs, t) in enumerate(features):
        for k, (x, y, w, h, wt) in enumerate(rs):
            rects[i, k] = (x, y, w, h)
            weights[i, k] = float(np.float32(wt))
        tilted[i] = bool(t)
    return HaarFamily.from_rects(tuple(window_shape), rects=rects, weights=weights,
                                 tilted=tilted, normalize=True)


def _model(window: tuple[int, int], kind: str, features: list[Any], paths: list[str],
           stages: list[tuple[list[Tree], float]], params: dict[str, Any],
           r: _Reader) -> CascadeModel:
    """The cascade read from a file; errors name the feature element at fault."""
    try:
        with use_limits(r.limits):
            family = opencv_family(window, kind, features)
    except LimitError as exc:  # the family's own check: name the file
        raise LimitError(f"{r.source}: {exc}") from None
    except (InputError, ValueError) as exc:
        for f, where in zip(features, paths, strict=True):  # find the culprit (error path only)
            try:
                opencv_family(window, kind, [f])
            except (InputError, ValueError) as exc1:
                raise r.fail(where, str(exc1)) from None
        raise CascadeFormatError(f"{r.source}: {exc}") from None
    if all(t.is_stump for trees, _ in stages for t in trees):
        # OpenCV's stump path reads leaf 0 on the left whatever the child codes say
        stages = [([t if t.left[0] == 0 else Tree(t.feature, threshold=t.threshold, left=[0],
                                                  right=[-1], leaves=t.leaves,
                                                  categorical=t.categorical, subsets=t.subsets)
                    for t in trees], thr) for trees, thr in stages]
    try:
        return CascadeModel(window, stages=[Stage(t, threshold=thr) for t, thr in stages],
                            family=family, feature_ids=np.arange(len(features)), params=params)
    except ModelError as exc:
        raise CascadeFormatError(f"{r.source}: {exc}") from None


def _read_old(top: ET.Element, r: _Reader) -> CascadeModel:
    base = top.tag
    size = r.ints(r.child(top, "size", base), f"{base}/size")
    if len(size) != 2 or min(size) <= 0:
        raise r.fail(f"{base}/size", f"expected 'width height', got {size}")
    w, h = size
    r.check_window(h, w, f"{base}/size")
    stage_items = r.seq(r.child(top, "stages", base), f"{base}/stages")
    if not stage_items:
        raise r.fail(f"{base}/stages", "no stages")
    features: list[Any] = []
    paths: list[str] = []
    stages = []
    max_weak = 0
    for si, st in enumerate(stage_items):
        sw = f"{base}/stages/_[{si}]"
        thr = r.real(r.child(st, "stage_threshold", sw), f"{sw}/stage_threshold")
        tree_items = r.seq(r.child(st, "trees", sw), f"{sw}/trees")
        if not tree_items:
            raise r.fail(f"{sw}/trees", "empty")
        max_weak = max(max_weak, len(tree_items))
        trees = []
        for ti, tr in enumerate(tree_items):
            tw = f"{sw}/trees/_[{ti}]"
            node_items = r.seq(tr, tw)
            if not node_items:
                raise r.fail(tw, "a tree needs at least one node")
            left, right, feat, thr_n, leaves = [], [], [], [], []
            r.check_nodes(len(features) + len(node_items), tw)
            r.check_features(len(features) + len(node_items), tw)
            for ni, nd in enumerate(node_items):
                nw = f"{tw}/_[{ni}]"
                features.append(_read_haar_feature(r.child(nd, "feature", nw), f"{nw}/feature",
                                                   r, (h, w), drop_tiny_third=True))
                paths.append(f"{nw}/feature/rects")
                feat.append(len(features) - 1)
                thr_n.append(r.real(r.child(nd, "threshold", nw), f"{nw}/threshold"))
                for side, codes in (("left", left), ("right", right)):
                    val = nd.find(f"{side}_val")
                    if val is not None:
                        leaves.append(r.real(val, f"{nw}/{side}_val"))
                        codes.append(-(len(leaves) - 1))
                        continue
                    nxt = nd.find(f"{side}_node")
                    if nxt is None:
                        raise r.fail(nw, f"missing <{side}_val> or <{side}_node>")
                    k = r.integer(nxt, f"{nw}/{side}_node")
                    if not 0 < k < len(node_items):
                        raise r.fail(f"{nw}/{side}_node", f"node {k} does not exist in this tree")
                    codes.append(k)
            try:
                trees.append(Tree(feat, threshold=thr_n, left=left, right=right, leaves=leaves))
            except TreeError as exc:
                raise r.fail(tw, str(exc)) from None
        stages.append((trees, thr))
    params = {"format": "opencv-haartraining", "stageParams": {"maxWeakCount": max_weak},
              "featureParams": {"maxCatCount": 0}}
    return _model((h, w), "HAAR", features, paths, stages, params, r)


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------


def _f(v: float) -> str:
    """float32 value with enough digits (9 significant) to round-trip exactly."""
    s = format(float(np.float32(v)), ".9g")
    return s if any(c in s for c in ".eEn") else s + "."


def _opencv_features(model: CascadeModel) -> tuple[str, list[dict[str, Any]]]:
    """``(featureType, describe() of every feature)``, or :class:`ExportError` explaining why
    OpenCV cannot run the cascade."""
    fam = model.family
    otype = getattr(fam, "opencv_type", None)
    culprit, mixed = fam, False
    fams = getattr(fam, "families", None)
    if otype is None and fams is not None:
        # a pool: exportable when every feature read comes from one OpenCV-type family
        k = np.unique(fam.locate(model.feature_ids)[0])
        types = [getattr(fams[int(i)], "opencv_type", None) for i in k]
        if len(set(types)) == 1:
            otype = types[0]
        mixed = None not in types and len(set(types)) > 1
        culprit = next((fams[int(i)] for i, t in zip(k, types, strict=True) if t is None),
                       fams[int(k[0])])
    if otype in ("HAAR", "LBP"):
        return otype, [fam.describe(int(i)) for i in model.feature_ids]
    fname = getattr(culprit, "name", type(culprit).__name__)
    why = ("OpenCV refuses HOG cascades since 3.0" if fname == "hog" else
           "OpenCV has no such feature type")
    if mixed:
        why = "it mixes HAAR and LBP features"
    elif fname == "haar":
        why = ("its Haar features are not normalised by the window's standard deviation "
               "(normalize=False), unlike OpenCV's")
    raise ExportError(
        f"this cascade uses the vjboost feature family {fname!r}: {why}. OpenCV's "
        "CascadeClassifier only evaluates HAAR features (normalised as in traincascade) and "
        "LBP features, so the cascade cannot be written as OpenCV XML. Save it in vjboost's "
        "own format instead (vjboost.cascade.save_model(model, 'model.json')); vjboost's "
        "detector runs it"
    )


def to_opencv_xml(model: CascadeModel, *, name: str = "cascade") -> str:
    """The OpenCV traincascade XML text of a HAAR or LBP cascade.

    Parameters
    ----------
    model : CascadeModel
        A cascade whose family has an ``opencv_type`` (``HaarFamily`` with ``normalize=True``,
        ``MBLBPFamily``, their explicit-table forms).
    name : str, default="cascade"
        Tag of the top-level element.

    Returns
    -------
    str

    Raises
    ------
    ExportError
        If the cascade uses another feature family, or has early exits (OpenCV cannot run
        either).

    Examples
    --------
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> xml = to_opencv_xml(random_cascade(seed=0, window=(20, 20), n_stages=2))
    >>> print("\\n".join(xml.splitlines()[2:7]))
    <cascade>
      <stageType>BOOST</stageType>
      <featureType>HAAR</featureType>
      <height>20</height>
      <width>20</width>
    >>> xml.count("<!-- stage ")
    2
    """
    model.validate()
    if model.n_exits:
        raise ExportError(
            f"this cascade has {model.n_exits} early exits inside its stages, which OpenCV's "
            "CascadeClassifier cannot run; export model.without_exits() (the same stages "
            "without them: OpenCV then accepts a few more windows than vjboost's detector "
            "does with the exits)")
    ftype, feats = _opencv_features(model)
    lbp = ftype == "LBP"
    tilted = any(bool(d.get("tilted", False)) for d in feats)
    p = model.params
    sp = dict(p.get("stageParams", {}))
    fp = dict(p.get("featureParams", {}))
    depth = max(t.depth for s in model.stages for t in s.trees)
    max_weak = max(len(s.trees) for s in model.stages)
    boost = sp.get("boostType", "GAB")
    if boost not in ("DAB", "RAB", "LB", "GAB"):
        boost = "GAB"
    out = ['<?xml version="1.0"?>', "<opencv_storage>", f"<{name}>",
           "  <stageType>BOOST</stageType>",
           f"  <featureType>{ftype}</featureType>",
           f"  <height>{model.height}</height>", f"  <width>{model.width}</width>",
           "  <stageParams>",
           f"    <boostType>{boost}</boostType>",
           f"    <minHitRate>{_num(sp.get('minHitRate'), 0.995)}</minHitRate>",
           f"    <maxFalseAlarm>{_num(sp.get('maxFalseAlarm'), 0.5)}</maxFalseAlarm>",
           f"    <weightTrimRate>{_num(sp.get('weightTrimRate'), 0.95)}</weightTrimRate>",
           f"    <maxDepth>{depth}</maxDepth>",
           f"    <maxWeakCount>{max(max_weak, int(sp.get('maxWeakCount', 0) or 0))}"
           "</maxWeakCount></stageParams>",
           "  <featureParams>",
           f"    <maxCatCount>{256 if lbp else 0}</maxCatCount>",
           "    <featSize>1</featSize>"]
    if not lbp:
        mode = fp.get("mode")
        if mode not in ("BASIC", "CORE", "ALL") or tilted:
            mode = "ALL" if tilted else "BASIC"
        out.append(f"    <mode>{mode}</mode>")
    out[-1] += "</featureParams>"
    out += [f"  <stageNum>{model.n_stages}</stageNum>", "  <stages>"]
    for si, st in enumerate(model.stages):
        out += [f"    <!-- stage {si} -->", "    <_>",
                f"      <maxWeakCount>{len(st.trees)}</maxWeakCount>",
                f"      <stageThreshold>{_f(st.threshold)}</stageThreshold>",
                "      <weakClassifiers>"]
        for t in st.trees:
            left, right, leaves = t.left, t.right, t.leaves
            if t.is_stump and left[0] != 0:
                # OpenCV's stump fast path ignores child codes: leaf 0 must be the left one.
                left, right, leaves = np.array([0]), np.array([-1]), leaves[::-1]
            recs = []
            for k in range(t.n_nodes):
                head = f"{int(left[k])} {int(right[k])} {int(t.feature[k])}"
                if lbp:
                    words = t.subsets[k].astype(np.uint32).view(np.int32)
                    recs.append(head + " " + " ".join(str(int(v)) for v in words))
                else:
                    recs.append(f"{head} {_f(t.threshold[k])}")
            out += ["        <_>",
                    f"          <internalNodes>\n            {'  '.join(recs)}</internalNodes>",
                    "          <leafValues>\n            "
                    + " ".join(_f(v) for v in leaves) + "</leafValues></_>"]
        out += ["      </weakClassifiers></_>"]
    out += ["  </stages>", "  <features>"]
    for d in feats:
        if lbp:
            out.append("    <_>\n      <rect>" + " ".join(str(int(v)) for v in d["rect"])
                       + "</rect></_>")
        else:
            rects = "".join(
                f"\n        <_>{int(x)} {int(y)} {int(w)} {int(h)} {_f(wt)}</_>"
                for x, y, w, h, wt in d["rects"]
            )
            out.append(f"    <_>\n      <rects>{rects}</rects>\n"
                       f"      <tilted>{int(bool(d.get('tilted', False)))}</tilted></_>")
    out += ["  </features>", f"</{name}>", "</opencv_storage>", ""]
    return "\n".join(out)


def _num(v: Any, default: float) -> str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = default
    return repr(x) if np.isfinite(x) else repr(default)


def write_opencv_xml(
    model: CascadeModel, path: str | os.PathLike[str], *, name: str | None = None
) -> None:
    """Write a HAAR or LBP cascade as OpenCV traincascade XML (atomically).

    Parameters
    ----------
    model : CascadeModel
        A cascade whose family has an ``opencv_type`` (see :func:`to_opencv_xml`).
    path : path-like
        Destination file (``.xml``).
    name : str, optional
        Tag of the top-level element (default ``"cascade"``, as traincascade writes it).

    Raises
    ------
    ExportError
        If the cascade uses another feature family (OpenCV cannot run it).

    Examples
    --------
    >>> import tempfile, cv2
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> path = tempfile.mkdtemp() + "/cascade.xml"
    >>> write_opencv_xml(random_cascade(seed=0, window=(20, 20), n_stages=2), path)
    >>> classifier = cv2.CascadeClassifier(path)        # OpenCV's own reader
    >>> classifier.empty(), classifier.getOriginalWindowSize()
    (False, (20, 20))
    """
    atomic_write(path, to_opencv_xml(model, name=name or "cascade"))
