"""Evaluating a cascade model on a stack of windows (not a whole image).

The detector scans images; training-side tools (adaptation, hit-rate checks on positives) need the
feature values, stage scores and decisions of a :class:`CascadeModel` on windows already cut to
the model's size. Haar values are normalised as OpenCV's training does (weighted rectangle sums
divided by ``sqrt(A·q − s²)`` over the inner area), LBP values are the 8-bit multi-block codes, and
family features come from the family's own kernels.
"""

from __future__ import annotations

import numpy as np

from ..features.base import check_windows
from ..features.integral import (
    integral_images,
    squared_integral_images,
    tilted_integral_images,
    weighted_rect_sums,
)
from .model import CascadeModel

__all__ = ["cascade_accepts", "model_feature_values", "stage_scores", "tree_votes"]

# bit weight of each 3x3 block (row-major, 4 = centre) in OpenCV's MB-LBP code
_LBP_BITS = np.array([128, 64, 32, 1, 0, 16, 2, 4, 8], dtype=np.int64)


def _inner_divisor(windows: np.ndarray) -> np.ndarray:
    s_ii = integral_images(windows, dtype=np.int64)
    q_ii = squared_integral_images(windows, dtype=np.int64)
    _, hp, wp = s_ii.shape
    h, w = hp - 1, wp - 1

    def inner(ii):
        return ii[:, h - 1, w - 1] - ii[:, 1, w - 1] - ii[:, h - 1, 1] + ii[:, 1, 1]

    area = (w - 2) * (h - 2)
    nf = area * inner(q_ii).astype(np.float64) - inner(s_ii).astype(np.float64) ** 2
    return np.where(nf > 0, np.sqrt(np.maximum(nf, 0)), 0).astype(np.float32)


def model_feature_values(model: CascadeModel, windows: np.ndarray) -> np.ndarray:
    """Values of every feature of ``model`` on every window.

    Parameters
    ----------
    model : CascadeModel
    windows : ndarray of shape (S, H, W) uint8
        Windows of exactly the model's size (or (S, H, W, 3) for colour families).

    Returns
    -------
    ndarray of shape (n_features, S), float32
        Rows follow ``model.features`` (the index space of the trees' ``feature`` fields).
    """
    if model.feature_type == "family":
        fam = model.family
        w = check_windows(windows, fam.window_shape, color=getattr(fam, "color", False))
        ch = fam.prepare(w)
        return np.asarray(fam.evaluate(ch, np.asarray(model.features, dtype=np.int64)), np.float32)
    w = check_windows(windows, model.window_shape)
    if model.feature_type == "HAAR":
        stack = np.stack([integral_images(w, dtype=np.int64),
                          tilted_integral_images(w, dtype=np.int64)], axis=1)
        q = len(model.features)
        rects = np.zeros((q, 3, 6), dtype=np.int64)
        weights = np.zeros((q, 3), dtype=np.float64)
        for i, f in enumerate(model.features):
            for r, (x, y, rw, rh, wt) in enumerate(f.rects):
                rects[i, r] = (int(f.tilted), x, y, rw, rh, int(f.tilted))
                weights[i, r] = wt
        return weighted_rect_sums(stack, rects, weights, divisor=_inner_divisor(w))
    # LBP: the nine block sums of each feature, then OpenCV's code
    ii = integral_images(w, dtype=np.int64)[:, None]
    q = len(model.features)
    rects = np.zeros((q * 9, 1, 6), dtype=np.int64)
    for i, f in enumerate(model.features):
        x, y, bw, bh = f.rect
        for b in range(9):
            rects[i * 9 + b, 0] = (0, x + (b % 3) * bw, y + (b // 3) * bh, bw, bh, 0)
    sums = weighted_rect_sums(ii, rects, np.ones((q * 9, 1))).reshape(q, 9, -1)
    ge = sums >= sums[:, 4:5, :]
    return np.tensordot(_LBP_BITS, ge, axes=([0], [1])).astype(np.float32)


def tree_votes(model: CascadeModel, values: np.ndarray, stage: int) -> np.ndarray:
    """Outputs (leaf values) of every tree of one stage, shape (n_trees, S), float64."""
    return np.stack([t.predict(values).astype(np.float64) for t in model.stages[stage].trees])


def stage_scores(model: CascadeModel, windows: np.ndarray) -> np.ndarray:
    """Score of every stage on every window, shape (n_stages, S), float64."""
    v = model_feature_values(model, windows)
    return np.stack([s.score(v) for s in model.stages])


def cascade_accepts(model: CascadeModel, windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which windows pass every stage, and how many stages each passes.

    Returns
    -------
    accepted : ndarray of bool, shape (S,)
    n_passed : ndarray of int, shape (S,)
        Stages passed before the first rejection (``n_stages`` when accepted).
    """
    sc = stage_scores(model, windows)
    thr = np.array([s.reject_threshold for s in model.stages], dtype=np.float64)[:, None]
    ok = sc >= thr  # double sum against the float32 threshold, as the detector compares
    n_passed = np.where(ok.all(0), len(model.stages), np.argmin(ok, axis=0))
    return ok.all(0), n_passed
