"""Random cascades with a controlled firing rate, for tests, benchmarks and format checks.

The cascades are meaningless as detectors but exercise every part of a model format and of the
detector: Haar stumps and trees, tilted features, three-rectangle features, LBP subsets, random
tree shapes in OpenCV's breadth-first layout.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_random_state
from ..boost.tree import Tree
from .model import CascadeModel, Stage
from .opencv_xml import opencv_family

__all__ = ["random_cascade", "random_tree_layout"]


def random_tree_layout(n_nodes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Child codes of a random full binary tree with ``n_nodes`` internal nodes (BFS order).

    Parameters
    ----------
    n_nodes : int
        Internal nodes, >= 1.
    rng : numpy.random.Generator
        The source of randomness (a slot becomes a node with probability 0.6, or surely when
        nodes are still owed and no other slot is open).

    Returns
    -------
    left, right : ndarray of int32, shape (n_nodes,)
        OpenCV child codes: ``> 0`` internal node, ``<= 0`` leaf ``-code``; leaves are numbered
        in breadth-first order, left before right (as traincascade writes them).
    """
    # Grow breadth-first: each open slot becomes an internal node until n_nodes exist.
    children: list[list[bool]] = []
    remaining = n_nodes - 1
    queue = [0]
    n_made = 1
    while queue:
        node = queue.pop(0)
        kinds = []
        for _ in range(2):
            internal = remaining > 0 and (rng.random() < 0.6 or len(queue) == 0)
            if internal:
                remaining -= 1
                queue.append(n_made)
                n_made += 1
            kinds.append(internal)
        children.append(kinds)
        del node
    left = np.zeros(n_nodes, dtype=np.int32)
    right = np.zeros(n_nodes, dtype=np.int32)
    next_node, next_leaf = 1, 0
    for k in range(n_nodes):
        for side, arr in enumerate((left, right)):
            if children[k][side]:
                arr[k] = next_node
                next_node += 1
            else:
                arr[k] = -next_leaf
                next_leaf += 1
    return left, right


def _haar_feature(rng: np.random.Generator, W: int, H: int, tilted: bool  # noqa: N803
                  ) -> tuple[tuple, bool]:
    """``(rects, tilted)`` of a random Haar feature inside a ``W x H`` window."""
    while True:
        if tilted:
            w = int(rng.integers(1, max(2, W // 2)))
            h = int(rng.integers(1, max(2, W // 2)))
            if w + h > W or w + h > H:
                continue
            x = int(rng.integers(h, W - w + 1))
            y = int(rng.integers(0, H - w - h + 1))
            # two halves along the w direction
            half = max(1, w // 2)
            return ((x, y, w, h, -1.0), (x, y, half, h, 2.0)), True
        w = int(rng.integers(2, W + 1))
        h = int(rng.integers(2, H + 1))
        x = int(rng.integers(0, W - w + 1))
        y = int(rng.integers(0, H - h + 1))
        kind = int(rng.integers(0, 3))
        if kind == 0:
            return ((x, y, w, h, -1.0), (x, y, w // 2, h, 2.0)), False
        if kind == 1:
            return ((x, y, w, h, -1.0), (x, y + h // 3, w, max(1, h // 3), 3.0)), False
        hw, hh = max(1, w // 2), max(1, h // 2)
        return ((x, y, w, h, -1.0), (x, y, hw, hh, 2.0), (x + w - hw, y + h - hh, hw, hh,
                                                          2.0)), False


# depth-2 layouts (left, right child codes): children 1, 2 in BFS order, or swapped with the
# leaves numbered out of path order
_BALANCED = (
    (np.array([1, 0, -2]), np.array([2, -1, -3])),
    (np.array([2, -3, 0]), np.array([1, -2, -1])),
)


def random_cascade(
    kind: str = "HAAR",
    *,
    window: tuple[int, int] = (20, 20),
    n_stages: int = 3,
    trees_per_stage: tuple[int, int] = (2, 6),
    max_nodes: int = 1,
    balanced: bool = False,
    tilted_fraction: float = 0.0,
    pass_rate: float = 0.5,
    seed: int | np.random.Generator | None = None,
) -> CascadeModel:
    """A random HAAR or LBP cascade (explicit-table family, exportable to OpenCV XML).

    Parameters
    ----------
    kind : {"HAAR", "LBP"}
    window : (width, height)
    n_stages : int
    trees_per_stage : (low, high)
        Inclusive range of trees per stage.
    max_nodes : int
        Internal nodes per tree are drawn in ``1..max_nodes`` (1: stumps only).
    balanced : bool
        Every tree instead has three nodes, a root and two children with leaves (the trees of
        ``vjtrain --weak-learner tree --max-depth 2``), with the children and the leaf numbers in
        either order.
    tilted_fraction : float
        Share of tilted Haar features.
    pass_rate : float in (0, 1)
        Rough share of windows a stage lets through: leaves are ``±u`` and the stage threshold
        ``(1 - 2·pass_rate)·Σu``-ish, so a higher value makes a cascade fire more.
    seed : int or Generator, optional
    """
    rng = check_random_state(seed)
    W, H = window
    lbp = kind == "LBP"
    if kind not in ("HAAR", "LBP"):
        raise ValueError(f"kind: expected 'HAAR' or 'LBP', got {kind!r}")
    features: list = []
    stages = []
    for _ in range(n_stages):
        trees = []
        total = 0.0
        for _ in range(int(rng.integers(trees_per_stage[0], trees_per_stage[1] + 1))):
            if balanced:
                n = 3
                left, right = _BALANCED[int(rng.integers(0, len(_BALANCED)))]
            else:
                n = int(rng.integers(1, max_nodes + 1))
                left, right = random_tree_layout(n, rng) if n > 1 else (np.array([0]),
                                                                        np.array([-1]))
            feat = []
            for _ in range(n):
                if lbp:
                    bw = int(rng.integers(1, W // 3 + 1))
                    bh = int(rng.integers(1, H // 3 + 1))
                    features.append((int(rng.integers(0, W - 3 * bw + 1)),
                                     int(rng.integers(0, H - 3 * bh + 1)), bw, bh))
                else:
                    features.append(_haar_feature(rng, W, H, rng.random() < tilted_fraction))
                feat.append(len(features) - 1)
            u = rng.uniform(0.2, 1.0, size=n + 1) * rng.choice([-1.0, 1.0], size=n + 1)
            total += float(np.abs(u).max())
            if lbp:
                subsets = rng.integers(0, 2**32, size=(n, 8), dtype=np.uint64).astype(np.uint32)
                trees.append(Tree(feat, threshold=np.zeros(n), left=left, right=right,
                                  leaves=u, subsets=subsets))
            else:
                thr = rng.normal(0.0, 0.05, size=n)
                trees.append(Tree(feat, threshold=thr, left=left, right=right, leaves=u))
        stages.append(Stage(trees, threshold=(1.0 - 2.0 * pass_rate) * total))
    return CascadeModel((H, W), stages=stages, family=opencv_family((H, W), kind, features),
                        feature_ids=np.arange(len(features)),
                        params={"stageParams": {"boostType": "GAB"}})
