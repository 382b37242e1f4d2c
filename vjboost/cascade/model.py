"""The cascade model: stages of boosted trees over one feature family.

A :class:`CascadeModel` is what the detector runs and what every model format stores. Its layout
follows OpenCV's traincascade files so that conversion in both directions is a copy:

* ``stages``: a list of :class:`Stage` — ``Stage(trees, threshold)``; a window passes the stage iff
  the sum of the selected leaf values is ``>= float32(threshold) - 1e-5`` (float32 subtraction,
  as OpenCV does at load time).
* each tree is a :class:`Tree` of numpy arrays in OpenCV's layout: internal nodes in breadth-first
  order (root = node 0), child codes ``c > 0`` = internal node ``c``, ``c <= 0`` = leaf ``-c``;
  ordered splits go left iff ``value < threshold`` (float32); categorical splits (LBP codes) go
  left iff bit ``code`` of the node's 256-bit subset (8 uint32 words) is set. Leaves carry the
  boosting coefficient already (a stage score is the plain sum of leaf values). A stump is a
  one-node tree with ``left = 0, right = -1`` (leaf 0 left, leaf 1 right).
* ``features``: the features that the trees' ``feature`` fields index.

  - ``feature_type="HAAR"``: :class:`HaarFeature` (up to three weighted rectangles, upright or
    45°-tilted), evaluated as in OpenCV: weighted rectangle sums divided by ``A·σ`` of the window's
    inner area ``(1, 1, W-2, H-2)``.
  - ``feature_type="LBP"``: :class:`LBPFeature` (multi-block LBP: the top-left block of a 3×3 grid),
    categorical codes 0..255.
  - ``feature_type="family"``: integer feature ids into a vjboost
    :class:`~vjboost.features.base.FeatureFamily` (``family``), evaluated with
    ``family.prepare_image`` / ``family.evaluate_at``. Splits are categorical for the family's
    categorical features (``family.kinds()``), ordered otherwise.

Trainers build a model by creating one :class:`Tree` per weak learner (``Tree.stump`` for stumps),
grouping them in :class:`Stage` objects and choosing the feature list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "THRESHOLD_EPS",
    "CascadeModel",
    "HaarFeature",
    "LBPFeature",
    "ModelError",
    "Stage",
    "Tree",
    "subset_from_codes",
]

#: OpenCV's stage-threshold tolerance: reject iff ``score < float32(threshold) - THRESHOLD_EPS``.
THRESHOLD_EPS = np.float32(1e-5)

FEATURE_TYPES = ("HAAR", "LBP", "family")


class ModelError(ValueError):
    """A cascade model is inconsistent (bad tree layout, feature index, geometry...)."""


# ------------------------------------------------------------------------------------------------
# Features
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HaarFeature:
    """A Haar-like feature in OpenCV XML semantics.

    Attributes
    ----------
    rects : tuple of (x, y, w, h, weight)
        2 or 3 weighted rectangles in window pixels (``x, y, w, h`` int, ``weight`` float32).
        Upright: the pixels ``[x, x+w) × [y, y+h)``. Tilted: the 45° rectangle hanging from the
        corner ``(x, y)``, ``w`` along the down-right and ``h`` along the down-left diagonal.
    tilted : bool
        Whether the rectangles are 45°-rotated.
    """

    rects: tuple[tuple[int, int, int, int, float], ...]
    tilted: bool = False

    def __post_init__(self) -> None:
        rects = tuple(
            (int(r[0]), int(r[1]), int(r[2]), int(r[3]), float(np.float32(r[4])))
            for r in self.rects
        )
        if not 1 <= len(rects) <= 3:
            raise ModelError(f"HaarFeature: expected 1 to 3 rectangles, got {len(rects)}")
        object.__setattr__(self, "rects", rects)
        object.__setattr__(self, "tilted", bool(self.tilted))

    def footprint(self) -> tuple[int, int, int, int]:
        """Pixel bounds ``(x0, y0, x1, y1)`` (exclusive ends) of the integral-image corners read."""
        xs, ys = [], []
        for x, y, w, h, _ in self.rects:
            if self.tilted:
                xs += [x, x - h, x + w, x + w - h]
                ys += [y, y + h, y + w, y + w + h]
            else:
                xs += [x, x + w]
                ys += [y, y + h]
        return min(xs), min(ys), max(xs), max(ys)

    def check(self, window_shape: tuple[int, int], where: str = "feature") -> None:
        """Raise :class:`ModelError` unless every rectangle lies inside the window."""
        h_win, w_win = window_shape
        for x, y, w, h, _ in self.rects:
            if w < 0 or h < 0:
                raise ModelError(f"{where}: rectangle {(x, y, w, h)} has a negative size")
        x0, y0, x1, y1 = self.footprint()
        if x0 < 0 or y0 < 0 or x1 > w_win or y1 > h_win:
            raise ModelError(
                f"{where}: {'tilted ' if self.tilted else ''}rectangles {self.rects} reach outside "
                f"the {w_win}x{h_win} window"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"rects": [list(r) for r in self.rects], "tilted": self.tilted}


@dataclass(frozen=True)
class LBPFeature:
    """A multi-block LBP feature: 3×3 blocks of ``w×h`` pixels starting at ``(x, y)``.

    The code (0..255) compares the 8 outer block sums with the centre one (``>=``), clockwise from
    the top-left block, most significant bit first (OpenCV's convention).
    """

    rect: tuple[int, int, int, int]

    def __post_init__(self) -> None:
        if len(self.rect) != 4:
            raise ModelError(f"LBPFeature: rect must be (x, y, w, h), got {self.rect!r}")
        object.__setattr__(self, "rect", tuple(int(v) for v in self.rect))

    def check(self, window_shape: tuple[int, int], where: str = "feature") -> None:
        h_win, w_win = window_shape
        x, y, w, h = self.rect
        if x < 0 or y < 0 or w < 1 or h < 1 or x + 3 * w > w_win or y + 3 * h > h_win:
            raise ModelError(
                f"{where}: LBP grid {self.rect} (3x3 blocks) reaches outside the "
                f"{w_win}x{h_win} window"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"rect": list(self.rect)}


# ------------------------------------------------------------------------------------------------
# Trees and stages
# ------------------------------------------------------------------------------------------------


def subset_from_codes(codes: Sequence[int]) -> np.ndarray:
    """256-bit category subset (8 uint32 words) with the bits of ``codes`` set (they go left)."""
    words = np.zeros(8, dtype=np.uint32)
    for c in codes:
        c = int(c)
        if not 0 <= c < 256:
            raise ValueError(f"codes: category {c} outside 0..255")
        words[c >> 5] |= np.uint32(1 << (c & 31))
    return words


@dataclass
class Tree:
    """One weak learner: a full binary tree in OpenCV's breadth-first layout.

    Attributes
    ----------
    left, right : ndarray of int32, shape (n_nodes,)
        Child codes: ``> 0`` internal node index, ``<= 0`` leaf ``-code``.
    feature : ndarray of int32, shape (n_nodes,)
        Index into the model's ``features`` list.
    threshold : ndarray of float32, shape (n_nodes,)
        Ordered split: left iff ``value < threshold``. Ignored (0) for categorical nodes.
    leaves : ndarray of float32, shape (n_nodes + 1,)
        Leaf values (boosting weight folded in).
    subsets : ndarray of uint32, shape (n_nodes, 8), or None
        Categorical splits: left iff bit ``code`` is set. ``None`` for ordered trees.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    leaves: np.ndarray
    subsets: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.left = np.ascontiguousarray(self.left, dtype=np.int32).reshape(-1)
        self.right = np.ascontiguousarray(self.right, dtype=np.int32).reshape(-1)
        self.feature = np.ascontiguousarray(self.feature, dtype=np.int32).reshape(-1)
        self.threshold = np.ascontiguousarray(self.threshold, dtype=np.float32).reshape(-1)
        self.leaves = np.ascontiguousarray(self.leaves, dtype=np.float32).reshape(-1)
        if self.subsets is not None:
            sub = np.asarray(self.subsets)
            if sub.dtype.kind == "i":
                sub = sub.astype(np.int64) & 0xFFFFFFFF  # signed words as written by OpenCV
            self.subsets = np.ascontiguousarray(sub, dtype=np.uint32).reshape(-1, 8)
        self.validate()

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def stump(cls, feature: int, threshold: float, left_value: float, right_value: float) -> Tree:
        """Ordered stump: ``left_value`` if ``x < threshold`` else ``right_value``."""
        return cls([0], [-1], [feature], [threshold], [left_value, right_value])

    @classmethod
    def categorical_stump(
        cls, feature: int, subset: Sequence[int] | np.ndarray, left_value: float, right_value: float
    ) -> Tree:
        """Categorical stump: ``left_value`` if bit ``code`` of ``subset`` (8 words) is set."""
        return cls([0], [-1], [feature], [0.0], [left_value, right_value], np.asarray([subset]))

    # -- properties -----------------------------------------------------------------------------

    @property
    def n_nodes(self) -> int:
        return int(self.left.shape[0])

    @property
    def categorical(self) -> bool:
        return self.subsets is not None

    @property
    def is_stump(self) -> bool:
        return self.n_nodes == 1

    def validate(self, where: str = "tree") -> None:
        """Check the layout: equal lengths, valid child codes, a full binary tree."""
        n = self.n_nodes
        if n < 1:
            raise ModelError(f"{where}: a tree needs at least one internal node")
        for name in ("right", "feature", "threshold"):
            if getattr(self, name).shape[0] != n:
                raise ModelError(f"{where}: '{name}' has {getattr(self, name).shape[0]} entries, "
                                 f"expected {n} (one per internal node)")
        if self.leaves.shape[0] != n + 1:
            raise ModelError(f"{where}: {n} internal node(s) need {n + 1} leaf values, got "
                             f"{self.leaves.shape[0]} (trees must be full binary trees)")
        if self.subsets is not None and self.subsets.shape[0] != n:
            raise ModelError(f"{where}: {self.subsets.shape[0]} category subsets for {n} nodes")
        codes = np.concatenate([self.left, self.right])
        internal = codes[codes > 0]
        leaves = -codes[codes <= 0]
        if internal.size and internal.max() >= n:
            raise ModelError(f"{where}: child code {int(internal.max())} refers to a missing node")
        if leaves.size and leaves.max() > n:
            raise ModelError(f"{where}: leaf code {-int(leaves.max())} refers to a missing leaf")
        if not (np.array_equal(np.sort(internal), np.arange(1, n))
                and np.array_equal(np.sort(leaves), np.arange(n + 1))):
            raise ModelError(f"{where}: child codes {self.left.tolist()} / {self.right.tolist()} "
                             "do not form a tree (every node and leaf must be reached once)")
        if self.feature.min() < 0:
            raise ModelError(f"{where}: negative feature index {int(self.feature.min())}")
        if not np.isfinite(self.threshold).all() or not np.isfinite(self.leaves).all():
            raise ModelError(f"{where}: non-finite threshold or leaf value")

    def predict(self, values: np.ndarray) -> np.ndarray:
        """Leaf values for feature values ``values`` ``(n_features_of_model, N)`` → float32 (N,).

        A plain NumPy evaluation (used by the generic detection path and by tests).
        """
        values = np.asarray(values)
        n = values.shape[1]
        idx = np.zeros(n, dtype=np.int64)
        active = np.ones(n, dtype=bool)
        cols = np.arange(n)
        while active.any():
            node = idx[active]
            v = values[self.feature[node], cols[active]]
            if self.subsets is not None:
                c = v.astype(np.int64)
                bit = (self.subsets[node, c >> 5] >> (c & 31).astype(np.uint32)) & 1
                go_left = bit.astype(bool)
            else:
                go_left = v.astype(np.float32) < self.threshold[node]
            nxt = np.where(go_left, self.left[node], self.right[node])
            idx[active] = nxt
            active[active] = nxt > 0
        return self.leaves[-idx]

    def to_dict(self) -> dict[str, Any]:
        d = {
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "feature": self.feature.tolist(),
            "threshold": [float(t) for t in self.threshold],
            "leaves": [float(v) for v in self.leaves],
        }
        if self.subsets is not None:
            d["subsets"] = self.subsets.astype(np.int64).tolist()
        return d

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        same_sub = (self.subsets is None and other.subsets is None) or (
            self.subsets is not None
            and other.subsets is not None
            and np.array_equal(self.subsets, other.subsets)
        )
        return same_sub and all(
            np.array_equal(getattr(self, k), getattr(other, k))
            for k in ("left", "right", "feature", "threshold", "leaves")
        )


@dataclass
class Stage:
    """A boosted stage: ``trees`` and the ``threshold`` its summed leaf values must reach.

    Attributes
    ----------
    trees : list of Tree
    threshold : float
        Stored as float32; a window is rejected iff ``score < float32(threshold) - 1e-5``.
    """

    trees: list[Tree]
    threshold: float

    def __post_init__(self) -> None:
        self.trees = list(self.trees)
        if not isinstance(self.threshold, Real) or not np.isfinite(self.threshold):
            raise ModelError(f"stage threshold must be a finite number, got {self.threshold!r}")
        self.threshold = float(np.float32(self.threshold))
        if not self.trees:
            raise ModelError("a stage needs at least one tree")
        for t in self.trees:
            if not isinstance(t, Tree):
                raise ModelError(f"stage trees must be Tree objects, got {type(t).__name__}")

    @property
    def reject_threshold(self) -> np.float32:
        """``float32(threshold) - 1e-5`` in float32: scores below it are rejected."""
        return np.float32(np.float32(self.threshold) - THRESHOLD_EPS)

    def score(self, values: np.ndarray) -> np.ndarray:
        """Stage sums (float64, (N,)) for feature values ``(n_features, N)``."""
        out = np.zeros(np.asarray(values).shape[1], dtype=np.float64)
        for t in self.trees:
            out += t.predict(values).astype(np.float64)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stage):
            return NotImplemented
        return self.threshold == other.threshold and self.trees == other.trees


# ------------------------------------------------------------------------------------------------
# The cascade
# ------------------------------------------------------------------------------------------------


@dataclass
class CascadeModel:
    """A boosted cascade over one feature family.

    Parameters
    ----------
    window_shape : (height, width)
        Base window size in pixels.
    stages : list of Stage
    features : list
        ``HaarFeature`` (``feature_type="HAAR"``), ``LBPFeature`` (``"LBP"``) or integer feature
        ids of ``family`` (``"family"``). Tree ``feature`` fields index this list.
    feature_type : {"HAAR", "LBP", "family"}
    family : FeatureFamily, optional
        Required for ``feature_type="family"``.
    params : dict
        Free-form training information (OpenCV's ``stageParams``/``featureParams`` on import, the
        trainer's settings...). Saved with the model; not used for detection.
    """

    window_shape: tuple[int, int]
    stages: list[Stage]
    features: list[Any]
    feature_type: str = "HAAR"
    family: Any = None
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            h, w = self.window_shape
        except (TypeError, ValueError):
            raise ModelError(
                f"window_shape: expected (height, width), got {self.window_shape!r}"
            ) from None
        if not all(isinstance(v, Integral) and v > 0 for v in (h, w)):
            raise ModelError(f"window_shape: expected positive integers, got {self.window_shape!r}")
        self.window_shape = (int(h), int(w))
        self.stages = list(self.stages)
        self.features = list(self.features)
        self.params = dict(self.params)
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
    def max_nodes_per_tree(self) -> int:
        return max(t.n_nodes for s in self.stages for t in s.trees)

    @property
    def has_tilted(self) -> bool:
        return self.feature_type == "HAAR" and any(f.tilted for f in self.features)

    def truncated(self, n_stages: int) -> CascadeModel:
        """A copy that keeps only the first ``n_stages`` stages."""
        if not 1 <= n_stages <= self.n_stages:
            raise ValueError(f"n_stages: expected 1..{self.n_stages}, got {n_stages}")
        return CascadeModel(self.window_shape, self.stages[:n_stages], self.features,
                            self.feature_type, self.family, self.params)

    # -- validation -----------------------------------------------------------------------------

    def validate(self) -> None:
        """Raise :class:`ModelError` on any inconsistency (checked before detection kernels run)."""
        if self.feature_type not in FEATURE_TYPES:
            raise ModelError(f"feature_type: expected one of {FEATURE_TYPES}, got "
                             f"{self.feature_type!r}")
        if not self.stages:
            raise ModelError("a cascade needs at least one stage")
        if not self.features:
            raise ModelError("a cascade needs at least one feature")
        n_feat = len(self.features)
        categorical_ok = self.feature_type in ("LBP", "family")
        if self.feature_type == "family":
            fam = self.family
            if fam is None or not hasattr(fam, "evaluate_at"):
                raise ModelError("feature_type='family' needs a FeatureFamily in 'family'")
            if tuple(fam.window_shape) != self.window_shape:
                raise ModelError(f"family window {tuple(fam.window_shape)} differs from the "
                                 f"cascade window {self.window_shape}")
            ids = np.asarray(self.features)
            if ids.dtype.kind not in "iu" or ids.ndim != 1:
                raise ModelError("features: expected integer feature ids of the family")
            if ids.min() < 0 or ids.max() >= fam.n_features:
                raise ModelError(f"features: ids must lie in 0..{fam.n_features - 1}")
            self.features = [int(i) for i in ids]
            kinds = np.asarray(fam.kinds())[ids] if hasattr(fam, "kinds") else None
        else:
            cls = HaarFeature if self.feature_type == "HAAR" else LBPFeature
            for i, f in enumerate(self.features):
                if not isinstance(f, cls):
                    raise ModelError(f"features[{i}]: expected {cls.__name__} for feature_type "
                                     f"{self.feature_type!r}, got {type(f).__name__}")
                f.check(self.window_shape, where=f"features[{i}]")
            kinds = None
        for si, st in enumerate(self.stages):
            if not isinstance(st, Stage):
                raise ModelError(f"stages[{si}]: expected a Stage, got {type(st).__name__}")
            for ti, t in enumerate(st.trees):
                where = f"stage {si}, tree {ti}"
                if t.feature.max() >= n_feat:
                    raise ModelError(f"{where}: feature index {int(t.feature.max())} out of "
                                     f"range (the cascade has {n_feat} features)")
                if t.categorical and not categorical_ok:
                    raise ModelError(f"{where}: categorical split in a {self.feature_type} "
                                     "cascade")
                if self.feature_type == "LBP" and not t.categorical:
                    raise ModelError(f"{where}: LBP cascades need categorical (subset) splits")
                if kinds is not None:
                    cat = kinds[t.feature]
                    if cat.any() != cat.all() or bool(cat.all()) != t.categorical:
                        want = "categorical" if cat.all() else "ordered"
                        if cat.any() != cat.all():
                            want = "a mix of categorical and ordered"
                        raise ModelError(f"{where}: the family's features used here are {want}; "
                                         f"the tree's splits are "
                                         f"{'categorical' if t.categorical else 'ordered'}")

    # -- conversion -------------------------------------------------------------------------------

    def opencv_equivalent(self) -> CascadeModel | None:
        """The same cascade with OpenCV ``HAAR``/``LBP`` feature specs, or None if impossible.

        HAAR/LBP cascades are returned as they are. A cascade over vjboost's ``haar`` family
        (with ``normalize=True``: its values are OpenCV's normalised training values) or
        ``mblbp`` family (OpenCV's LBP codes) is converted through ``family.describe(i)``; any
        other family returns None.
        """
        if self.feature_type in ("HAAR", "LBP"):
            return self
        fam = self.family
        name = getattr(fam, "name", "")
        if name == "haar" and getattr(fam, "normalize", False):
            feats = []
            for i in self.features:
                d = fam.describe(int(i))
                feats.append(HaarFeature(tuple(tuple(r) for r in d["rects"]),
                                         bool(d.get("tilted", False))))
            ftype = "HAAR"
        elif name == "mblbp":
            feats = [LBPFeature(tuple(fam.describe(int(i))["rect"])) for i in self.features]
            ftype = "LBP"
        else:
            return None
        params = dict(self.params)
        params.setdefault("family", {"family": name, "config": fam.get_config()})
        return CascadeModel(self.window_shape, self.stages, feats, ftype, None, params)

    # -- plain evaluation (reference) -------------------------------------------------------------

    def stage_scores(self, values: np.ndarray) -> np.ndarray:
        """All stage sums for feature values ``(n_features, N)`` → float64 ``(n_stages, N)``."""
        return np.stack([st.score(values) for st in self.stages])

    def predict_values(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run the cascade on precomputed feature values ``(n_features, N)``.

        Returns
        -------
        n_passed : ndarray of int32, shape (N,)
            Stages passed (``n_stages`` = accepted).
        last_score : ndarray of float64, shape (N,)
            Score of the last stage evaluated.
        """
        values = np.asarray(values)
        n = values.shape[1]
        n_passed = np.zeros(n, dtype=np.int32)
        last = np.zeros(n, dtype=np.float64)
        alive = np.arange(n)
        for st in self.stages:
            if alive.size == 0:
                break
            s = st.score(values[:, alive])
            last[alive] = s
            ok = s >= st.reject_threshold
            n_passed[alive[ok]] += 1
            alive = alive[ok]
        return n_passed, last

    # -- comparison -----------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CascadeModel):
            return NotImplemented
        return (
            self.window_shape == other.window_shape
            and self.feature_type == other.feature_type
            and self.features == other.features
            and self.stages == other.stages
            and (self.family == other.family)
        )

    def summary(self) -> str:
        """One line: type, window, stages, trees, depth."""
        return (f"{self.feature_type} cascade, window {self.width}x{self.height}, "
                f"{self.n_stages} stages, {self.n_trees} trees (max {self.max_nodes_per_tree} "
                f"node(s) per tree), {len(self.features)} features")
