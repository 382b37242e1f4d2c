"""The cascade model: stages of boosted trees over the features of a family or a pool.

A cascade is always ``CascadeModel(window_shape, stages=, family=, feature_ids=, params=)``:

* ``family``: a :class:`~vjboost.features.base.FeatureFamily` or a
  :class:`~vjboost.features.pool.FeaturePool` (several families under one numbering). OpenCV's
  HAAR and LBP cascades are explicit-table families (``HaarFamily.from_rects``,
  ``MBLBPFamily.from_blocks``), so they are cascades like any other; a model can be written as
  OpenCV XML exactly when ``family.opencv_type`` is set.
* ``feature_ids``: the family's features the cascade reads. Trees index this array *by
  position* (``tree.feature`` 0 is ``feature_ids[0]``).
* ``stages``: :class:`Stage` objects, ``Stage(trees, threshold=t)`` of
  :class:`vjboost.boost.tree.Tree`. A window passes a stage iff the sum of its trees' outputs
  is ``>= float32(t) - 1e-5`` (float32 subtraction, as OpenCV does at load time); stage scores
  are summed in float64, tree after tree, of float32 leaf values. A stage may also have *early
  exits* (``Stage(trees, threshold=t, exits=e)``): after tree ``i`` a window whose partial sum is
  below ``float32(e[i])`` is rejected at once (:func:`vjboost.cascade.exits.early_exits` sets
  them so that no training positive the cascade accepts is lost; OpenCV cannot run them). Nodes
  split ordered features
  by threshold and categorical ones (MB-LBP codes) by 256-bit subsets, as the family's
  ``kinds()`` says; one tree may mix both.
* ``params``: free-form training information, saved with the model.

Every window-level evaluation of a model (detection, mining, positive filtering, adaptation)
goes through :mod:`vjboost.cascade.runner`.

Examples
--------
>>> import numpy as np
>>> from vjboost.boost.tree import Tree
>>> from vjboost.features.mblbp import MBLBPFamily
>>> fam = MBLBPFamily((12, 12))
>>> tree = Tree.categorical_stump(0, subset=np.full(8, 0xFFFF0000, np.uint32),
...                               left_value=-1.0, right_value=1.0)
>>> model = CascadeModel((12, 12), stages=[Stage([tree], threshold=0.0)], family=fam,
...                      feature_ids=[5])
>>> model.summary()
'mblbp cascade, window 12x12, 1 stages, 1 trees (max 1 node(s) per tree), 1 features'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from .._errors import InputError
from ..boost.tree import Tree
from .kernels import reject_threshold

__all__ = ["CascadeModel", "ModelError", "Stage", "check_object_box", "object_box"]


class ModelError(InputError):
    """A cascade model is inconsistent (tree layout, feature index, family, geometry...)."""


def _cascade_tree(t: Tree, where: str) -> Tree:
    """The tree as a cascade stores it: scalar float32 leaves, structure only."""
    if not isinstance(t, Tree):
        raise ModelError(f"{where}: expected a vjboost.boost.tree.Tree, got {type(t).__name__}")
    if t.leaves.ndim != 1:
        raise ModelError(f"{where}: cascade trees need scalar leaves, got shape "
                         f"{t.leaves.shape}")
    leaves = t.leaves.astype(np.float32).astype(np.float64)
    if not np.isfinite(leaves).all():
        raise ModelError(f"{where}: leaf value outside the float32 range")
    if np.array_equal(leaves, t.leaves) and t.split_bins is None and not t.node_scores.any():
        return t
    return Tree(t.feature, threshold=t.threshold, left=t.left, right=t.right, leaves=leaves,
                categorical=t.categorical, subsets=t.subsets)


class Stage:
    """A boosted stage: ``trees`` and the ``threshold`` their summed outputs must reach.

    Parameters
    ----------
    trees : sequence of Tree
        Scalar leaves (rounded to float32 values on construction).
    threshold : float
        Stored as a float32 value; a window is rejected iff ``score < float32(threshold) -
        1e-5``.
    exits : sequence of float, optional
        Early exits, one per tree (``-inf``: none after that tree): a window whose sum of the
        first ``i + 1`` trees is below ``float32(exits[i])`` is rejected there, without the
        remaining trees. Stored as float32 values, ``None`` when there are none.

    Examples
    --------
    >>> from vjboost.boost.tree import Tree
    >>> trees = [Tree.stump(0, threshold=0.5, left_value=-1.0, right_value=1.0)] * 3
    >>> Stage(trees, threshold=0.5, exits=[-0.5, float("-inf"), float("-inf")]).n_exits
    1
    """

    def __init__(self, trees: Sequence[Tree], *, threshold: float,
                 exits: Sequence[float] | None = None) -> None:
        trees = list(trees)
        if not trees:
            raise ModelError("a stage needs at least one tree")
        if isinstance(threshold, bool) or not isinstance(threshold, Real) \
                or not np.isfinite(threshold):
            raise ModelError(f"stage threshold must be a finite number, got {threshold!r}")
        self.trees = [_cascade_tree(t, f"tree {i}") for i, t in enumerate(trees)]
        self.threshold = float(np.float32(threshold))
        self.exits: np.ndarray | None = None
        if exits is not None:
            e = np.asarray(exits, dtype=np.float64).reshape(-1)
            if e.shape != (len(self.trees),):
                raise ModelError(f"stage exits: expected one per tree ({len(self.trees)}), got "
                                 f"{e.size}")
            if np.isnan(e).any() or (e == np.inf).any() or (np.abs(e[np.isfinite(e)])
                                                          > np.finfo(np.float32).max).any():
                raise ModelError("stage exits: expected float32 numbers or -inf (no exit)")
            e = e.astype(np.float32)
            if np.isfinite(e).any():
                e.setflags(write=False)
                self.exits = e

    @property
    def n_exits(self) -> int:
        """How many trees have an early exit after them."""
        return 0 if self.exits is None else int(np.isfinite(self.exits).sum())

    def without_exits(self) -> Stage:
        """The same stage with no early exits (what OpenCV can run)."""
        return self if self.exits is None else Stage(self.trees, threshold=self.threshold)

    def rejects(self, outputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which windows the stage rejects from its trees' outputs, and their scores.

        Parameters
        ----------
        outputs : ndarray of float64, shape (n_trees, n)
            Every tree's leaf value per window.

        Returns
        -------
        rejected : ndarray of bool, shape (n,)
            By an early exit or by the threshold.
        score : ndarray of float64, shape (n,)
            The sum of the trees up to where the window left (the stage score when it ran
            them all), summed in float64 tree after tree as the kernels sum them.
        """
        out = np.asarray(outputs, dtype=np.float64)
        score = np.zeros(out.shape[1], dtype=np.float64)
        rejected = np.zeros(out.shape[1], dtype=bool)
        for i, row in enumerate(out):
            score[~rejected] += row[~rejected]
            if self.exits is not None and np.isfinite(self.exits[i]):
                rejected |= score < self.exits[i]
        rejected |= score < self.reject_threshold
        return rejected, score

    @property
    def reject_threshold(self) -> np.float32:
        """``float32(threshold) - 1e-5`` in float32: scores below it are rejected."""
        return reject_threshold(self.threshold)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stage):
            return NotImplemented
        same_exits = (self.exits is None and other.exits is None) or (
            self.exits is not None and other.exits is not None
            and np.array_equal(self.exits, other.exits))
        return self.threshold == other.threshold and self.trees == other.trees and same_exits

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        ex = f", {self.n_exits} early exits" if self.exits is not None else ""
        return f"Stage({len(self.trees)} trees, threshold={self.threshold!r}{ex})"


def _family_kinds(family: Any) -> np.ndarray:
    return np.asarray(family.kinds(), dtype=bool)


class CascadeModel:
    """A boosted cascade over the features of a family or pool.

    Parameters
    ----------
    window_shape : (height, width)
        Base window in pixels (the family's).
    stages : sequence of Stage
    family : FeatureFamily or FeaturePool
    feature_ids : array-like of int, shape (F,)
        Features of ``family`` the trees read; tree node ``feature`` values index this array.
    params : dict, optional
        Free-form training information (OpenCV's ``stageParams``/``featureParams`` on import,
        the trainer's settings...). Saved with the model; not used for detection.

    Raises
    ------
    ModelError
        On any inconsistency (see :meth:`validate`).

    Examples
    --------
    >>> from vjboost import HaarFamily, Tree
    >>> a = Tree.stump(0, threshold=0.0, left_value=-1.0, right_value=1.0)
    >>> b = Tree.stump(1, threshold=0.1, left_value=-0.5, right_value=0.8)
    >>> model = CascadeModel((12, 12), stages=[Stage([a], threshold=-0.5),
    ...                                        Stage([a, b], threshold=0.0)],
    ...                      family=HaarFamily((12, 12)), feature_ids=[3, 40])
    >>> model.n_stages, model.n_trees, model.n_features, model.opencv_type
    (2, 3, 2, 'HAAR')
    >>> model.summary()
    'haar cascade, window 12x12, 2 stages, 3 trees (max 1 node(s) per tree), 2 features'
    >>> model.truncated(1).n_stages, model.truncated(1).n_trees
    (1, 1)
    """

    def __init__(self, window_shape: Sequence[int], *, stages: Sequence[Stage], family: Any,
                 feature_ids: Any, params: dict[str, Any] | None = None) -> None:
        try:
            h, w = window_shape
        except (TypeError, ValueError):
            raise ModelError(f"window_shape: expected (height, width), got "
                             f"{window_shape!r}") from None
        if not all(isinstance(v, Integral | np.integer) and v > 0 for v in (h, w)):
            raise ModelError(f"window_shape: expected positive integers, got {window_shape!r}")
        self.window_shape = (int(h), int(w))
        self.stages = list(stages)
        self.family = family
        ids = np.asarray(feature_ids)
        if ids.size and (ids.dtype.kind not in "iu" or ids.ndim != 1):
            raise ModelError("feature_ids: expected a 1-D array of integer feature ids")
        self.feature_ids = np.ascontiguousarray(ids.reshape(-1), dtype=np.int64)
        self.params = dict(params or {})
        self.validate()

    # -- basic properties -----------------------------------------------------------------------

    @property
    def width(self) -> int:
        return self.window_shape[1]

    @property
    def height(self) -> int:
        return self.window_shape[0]

    @property
    def n_stages(self) -> int:
        return len(self.stages)

    @property
    def n_trees(self) -> int:
        return sum(len(s.trees) for s in self.stages)

    @property
    def n_features(self) -> int:
        return int(self.feature_ids.size)

    @property
    def max_nodes_per_tree(self) -> int:
        return max(t.n_nodes for s in self.stages for t in s.trees)

    @property
    def color(self) -> bool:
        """The family needs RGB input."""
        return bool(getattr(self.family, "color", False))

    @property
    def n_exits(self) -> int:
        """Early exits of all stages (:class:`Stage`)."""
        return sum(s.n_exits for s in self.stages)

    @property
    def opencv_type(self) -> str | None:
        """``"HAAR"`` or ``"LBP"`` when OpenCV can run the cascade (XML export), else None
        (also for cascades with early exits: :meth:`without_exits` can be exported)."""
        return None if self.n_exits else getattr(self.family, "opencv_type", None)

    def without_exits(self) -> CascadeModel:
        """The same cascade without early exits (it accepts every window this one accepts,
        and more)."""
        if not self.n_exits:
            return self
        return self.with_stages([s.without_exits() for s in self.stages])

    def program(self) -> Any:
        """The compiled features (a :class:`~vjboost.features.program.Program`, in
        ``feature_ids`` order) that the fast kernels run, or None for families without one."""
        make = getattr(self.family, "program", None)
        return make(self.feature_ids) if callable(make) else None

    def truncated(self, n_stages: int) -> CascadeModel:
        """A copy that keeps only the first ``n_stages`` stages, and the features they read.

        The copy is the model a training run of ``n_stages`` stages writes (its features in
        increasing id order, as :func:`~vjboost.cascade.trainer.build_cascade_model` keeps
        them). A declared coarse-to-fine scan (``params["coarse_to_fine"]``, see
        :class:`~vjboost.cascade.detector.CascadeDetector`) of more stages than the copy keeps
        becomes one of all its stages.

        Parameters
        ----------
        n_stages : int
            1 to :attr:`n_stages`.

        Returns
        -------
        CascadeModel

        Examples
        --------
        >>> from vjboost.cascade.model_io import load_model
        >>> m = load_model("vjboost:frontalface").truncated(3)
        >>> m.params["coarse_to_fine"], len(m.feature_ids)
        (3, 69)
        """
        if not 1 <= n_stages <= self.n_stages:
            raise ValueError(f"n_stages: expected 1..{self.n_stages}, got {n_stages}")
        params = dict(self.params)
        k = params.get("coarse_to_fine")
        if isinstance(k, int) and not isinstance(k, bool) and k > n_stages:
            params["coarse_to_fine"] = int(n_stages)
        stages = self.stages[:n_stages]
        used = np.unique(np.concatenate([t.feature for s in stages for t in s.trees]))
        position = np.full(len(self.feature_ids), -1, np.int64)
        position[used] = np.arange(len(used))
        kept = [Stage([t.remap(position) for t in s.trees], threshold=s.threshold, exits=s.exits)
                for s in stages]
        return CascadeModel(self.window_shape, stages=kept, family=self.family,
                            feature_ids=np.asarray(self.feature_ids)[used], params=params)

    def with_stages(self, stages: Sequence[Stage], params: dict[str, Any] | None = None
                    ) -> CascadeModel:
        """The same features with other stages (and ``params``, default this model's).

        Parameters
        ----------
        stages : sequence of Stage
            The new stages; their trees index this model's ``feature_ids`` by position.
        params : dict, optional
            Training parameters recorded in the model (default this model's).

        Returns
        -------
        CascadeModel
            A new model (validated); this one is unchanged.
        """
        return CascadeModel(self.window_shape, stages=stages, family=self.family,
                            feature_ids=self.feature_ids,
                            params=self.params if params is None else params)

    # -- validation -----------------------------------------------------------------------------

    def validate(self) -> None:
        """Raise :class:`ModelError` on any inconsistency.

        Checks the family (window, feature ids in range), that every stage is a :class:`Stage`
        of valid trees reading features ``0 .. F - 1``, and that every node splits its feature
        the way the family defines it (categorical codes by subsets, others by thresholds).
        """
        fam = self.family
        if fam is None or not all(hasattr(fam, a) for a in ("evaluate", "kinds",
                                                              "n_features")):
            raise ModelError(f"family: expected a FeatureFamily or FeaturePool, got "
                             f"{type(fam).__name__}")
        if tuple(fam.window_shape) != self.window_shape:
            raise ModelError(f"family window {tuple(fam.window_shape)} differs from the "
                             f"cascade window {self.window_shape}")
        if not self.stages:
            raise ModelError("a cascade needs at least one stage")
        n_feat = self.n_features
        if n_feat == 0:
            raise ModelError("a cascade needs at least one feature")
        ids = self.feature_ids
        if ids.min() < 0 or ids.max() >= fam.n_features:
            raise ModelError(f"feature_ids: ids must lie in 0..{fam.n_features - 1}, got "
                             f"{int(ids.min())}..{int(ids.max())}")
        kinds = _family_kinds(fam)[ids]
        for si, st in enumerate(self.stages):
            if not isinstance(st, Stage):
                raise ModelError(f"stages[{si}]: expected a Stage, got {type(st).__name__}")
            for ti, t in enumerate(st.trees):
                where = f"stage {si}, tree {ti}"  # (trees validate their layout themselves)
                if t.feature.max() >= n_feat:
                    raise ModelError(f"{where}: feature index {int(t.feature.max())} out of "
                                     f"range (the cascade has {n_feat} features)")
                bad = np.flatnonzero(kinds[t.feature] != t.categorical)
                if bad.size:
                    n = int(bad[0])
                    want = "categorical" if kinds[t.feature[n]] else "ordered"
                    raise ModelError(f"{where}: node {n} splits feature {int(t.feature[n])} "
                                     f"{'categorically' if t.categorical[n] else 'by threshold'}"
                                     f", but the family's feature {int(ids[t.feature[n]])} is "
                                     f"{want}")

    # -- comparison and description -------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CascadeModel):
            return NotImplemented
        return (self.window_shape == other.window_shape
                and np.array_equal(self.feature_ids, other.feature_ids)
                and self.stages == other.stages and self.family == other.family)

    __hash__ = None  # type: ignore[assignment]

    def family_name(self) -> str:
        """``"haar"``, ``"mblbp"``... or ``"pool of haar+hog"`` for pools."""
        fams = getattr(self.family, "families", None)
        if fams is not None:
            return "pool of " + "+".join(f.name for f in fams)
        return str(getattr(self.family, "name", type(self.family).__name__))

    def summary(self) -> str:
        """One line: family, window, stages, trees, depth."""
        return (f"{self.family_name()} cascade, window {self.width}x{self.height}, "
                f"{self.n_stages} stages, {self.n_trees} trees (max {self.max_nodes_per_tree} "
                f"node(s) per tree), {self.n_features} features"
                + (f", {self.n_exits} early exits" if self.n_exits else "")
                + self._object_box_note())

    def _object_box_note(self) -> str:
        try:
            box = object_box(self)
        except ValueError:
            return ", object_box unreadable"
        return "" if box is None else (", reports the object box ("
                                       + ", ".join(f"{v:g}" for v in box) + ") of each window")

    def __repr__(self) -> str:
        return f"CascadeModel({self.summary()})"


def object_box(model: CascadeModel) -> tuple[float, float, float, float] | None:
    """Where a model's objects lie in its window (``params["object_box"]``), checked.

    A cascade trained with context around its objects (``vjtrain --pos-crop`` wider than the
    object, ``--object-box`` for the object inside it) declares its object's box as fractions
    ``(x, y, w, h)`` of the window; its detector then reports object boxes, not windows.

    Returns
    -------
    tuple of 4 float, or None
        None when the model declares none (or the whole window): boxes are the windows.

    Examples
    --------
    >>> from vjboost.cascade import load_model
    >>> object_box(load_model("vjboost:frontalface"))  # a 24×24 window, the face 18×18 in it
    (0.125, 0.125, 0.75, 0.75)
    >>> object_box(load_model("vjboost:frontalface_haar")) is None
    True
    """
    v = dict(getattr(model, "params", {}) or {}).get("object_box")
    if v is None:
        return None
    return check_object_box(v, "the model's params['object_box']")


def check_object_box(value: Any, name: str = "object_box", *,
                     inside: bool = False) -> tuple[float, float, float, float] | None:
    """``value`` as an object box ``(x, y, w, h)`` in fractions of the window, checked.

    Parameters
    ----------
    value : sequence of 4 numbers
        Four finite numbers with ``0 < w, h <= 4`` and a corner within ``[-2, 2]``.
    name : str
        What the error message calls it (an option, or a model's param).
    inside : bool, default=False
        Also require the box to lie inside the window (``x, y >= 0``, ``x + w <= 1``,
        ``y + h <= 1``), as ``--pos-crop`` lies inside the sample: what a training declares
        (``CascadeTrainer(object_box=...)``, ``vjtrain --object-box``). A model file may hold
        the wider range.

    Returns
    -------
    tuple of 4 float, or None
        None for the whole window ``(0, 0, 1, 1)``.

    Raises
    ------
    ValueError
        Naming ``name`` and the limits.

    Examples
    --------
    >>> check_object_box(["0.125", "0.125", "0.75", "0.75"], "--object-box")
    (0.125, 0.125, 0.75, 0.75)
    >>> check_object_box([0, 0, 1, 1]) is None
    True
    >>> check_object_box([0, 0, 2, 2], "--object-box", inside=True)
    Traceback (most recent call last):
    ...
    ValueError: --object-box: (x, y, w, h) = (0.0, 0.0, 2.0, 2.0) must lie inside the window: \
x, y >= 0, w, h > 0, x + w <= 1 and y + h <= 1 (fractions of its width and height)
    """
    try:
        box = tuple(float(x) for x in value)
    except (TypeError, ValueError):
        box = ()
    if (len(box) != 4 or not all(math.isfinite(x) for x in box)
            or not (0 < box[2] <= 4 and 0 < box[3] <= 4) or not all(-2 <= x <= 2 for x in box[:2])):
        raise ValueError(f"{name}: expected X,Y,W,H, fractions of the window with 0 < W, H <= 4 "
                         f"and -2 <= X, Y <= 2, got {value!r}")
    if inside and (box[0] < 0 or box[1] < 0 or box[0] + box[2] > 1 + 1e-9
                   or box[1] + box[3] > 1 + 1e-9):
        raise ValueError(f"{name}: (x, y, w, h) = {box} must lie inside the window: x, y >= 0, "
                         "w, h > 0, x + w <= 1 and y + h <= 1 (fractions of its width and "
                         "height)")
    return None if box == (0.0, 0.0, 1.0, 1.0) else box  # type: ignore[return-value]
