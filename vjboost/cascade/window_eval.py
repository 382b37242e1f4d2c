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
from .model import CascadeModel, Stage, Tree

__all__ = [
    "CascadeRunner",
    "WindowStack",
    "cascade_accepts",
    "cascade_pass",
    "model_feature_values",
    "stage_scores",
    "tree_votes",
]

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


def model_feature_values(
    model: CascadeModel, windows: np.ndarray, features: np.ndarray | None = None
) -> np.ndarray:
    """Values of the features of ``model`` on every window.

    Parameters
    ----------
    model : CascadeModel
    windows : ndarray of shape (S, H, W) uint8
        Windows of exactly the model's size (or (S, H, W, 3) for colour families).
    features : ndarray of int, optional
        Indices into ``model.features`` to evaluate (default: all of them).

    Returns
    -------
    ndarray of shape (n_features, S), float32
        Rows follow ``model.features`` (the index space of the trees' ``feature`` fields), or
        ``features`` when given.
    """
    idx = (np.arange(len(model.features)) if features is None
           else np.asarray(features, dtype=np.int64).reshape(-1))
    if model.feature_type == "family":
        fam = model.family
        w = check_windows(windows, fam.window_shape, color=getattr(fam, "color", False))
        ch = fam.prepare(w)
        ids = np.asarray(model.features, dtype=np.int64)[idx]
        return np.asarray(fam.evaluate(ch, ids), np.float32)
    w = check_windows(windows, model.window_shape)
    feats = [model.features[i] for i in idx.tolist()]
    if model.feature_type == "HAAR":
        stack = np.stack([integral_images(w, dtype=np.int64),
                          tilted_integral_images(w, dtype=np.int64)], axis=1)
        q = len(feats)
        rects = np.zeros((q, 3, 6), dtype=np.int64)
        weights = np.zeros((q, 3), dtype=np.float64)
        for i, f in enumerate(feats):
            for r, (x, y, rw, rh, wt) in enumerate(f.rects):
                rects[i, r] = (int(f.tilted), x, y, rw, rh, int(f.tilted))
                weights[i, r] = wt
        return weighted_rect_sums(stack, rects, weights, divisor=_inner_divisor(w))
    # LBP: the nine block sums of each feature, then OpenCV's code
    ii = integral_images(w, dtype=np.int64)[:, None]
    q = len(feats)
    rects = np.zeros((q * 9, 1, 6), dtype=np.int64)
    for i, f in enumerate(feats):
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


def _local_stage(stage: Stage) -> tuple[np.ndarray, Stage]:
    """The features a stage uses, and the stage with its trees indexing that short list."""
    used = np.unique(np.concatenate([t.feature for t in stage.trees]))
    trees = [Tree(t.left, t.right, np.searchsorted(used, t.feature), t.threshold, t.leaves,
                  t.subsets) for t in stage.trees]
    return used, Stage(trees, stage.threshold)


def _haar_table(model: CascadeModel, idx: np.ndarray, tilted_plane: bool):
    q = len(idx)
    rects = np.zeros((q, 3, 6), dtype=np.int64)
    weights = np.zeros((q, 3), dtype=np.float64)
    for i, fi in enumerate(idx.tolist()):
        f = model.features[fi]
        for r, (x, y, rw, rh, wt) in enumerate(f.rects):
            t = int(f.tilted)
            rects[i, r] = (t if tilted_plane else 0, x, y, rw, rh, t)
            weights[i, r] = wt
    return rects, weights


class CascadeRunner:
    """Stages ``first_stage .. last_stage - 1`` of a cascade, prepared for repeated use on windows.

    Each stage's features are looked up once; every call then runs the stages as the detector
    does (each stage only on the windows that passed the previous ones), chunk by chunk (the
    integral images of a chunk are built once for all stages), so that memory stays bounded
    and streams of mostly easy windows cost little.

    Parameters
    ----------
    model : CascadeModel
    first_stage : int, default=0
        The windows are known to pass the earlier stages.
    last_stage : int, optional
        Stop before this stage (default: run to the end).
    chunk : int, default=8192
        Windows per batch.
    """

    def __init__(self, model: CascadeModel, *, first_stage: int = 0,
                 last_stage: int | None = None, chunk: int = 8192) -> None:
        last = model.n_stages if last_stage is None else int(last_stage)
        if not 0 <= first_stage <= last <= model.n_stages:
            raise ValueError(f"first_stage/last_stage: expected 0 <= first <= last <= "
                             f"{model.n_stages}, got {first_stage}, {last_stage}")
        if chunk < 1:
            raise ValueError(f"chunk: expected a positive integer, got {chunk}")
        self.model, self.first_stage, self.last_stage = model, int(first_stage), last
        self.chunk = int(chunk)
        self._haar = model.feature_type == "HAAR"
        self._tilted = self._haar and model.has_tilted
        self._stages = [_local_stage(model.stages[k]) for k in range(first_stage, last)]
        self._tables = ([_haar_table(model, used, self._tilted) for used, _ in self._stages]
                        if self._haar else None)

    def __call__(self, windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run the stages on ``windows`` (S, H, W) uint8.

        Returns
        -------
        n_passed : ndarray of int64, shape (S,)
            Index of the first stage that rejects the window (``last_stage`` when none does).
        scores : ndarray of float64, shape (n_stages, S)
            Stage scores; NaN for stages a window did not reach or that were not run.
        """
        model = self.model
        n = len(windows)
        n_passed = np.full(n, self.last_stage, dtype=np.int64)
        scores = np.full((model.n_stages, n), np.nan)
        for a in range(0, n, self.chunk):
            w = check_windows(windows[a : a + self.chunk], model.window_shape) if self._haar \
                else windows[a : a + self.chunk]
            if self._haar:
                planes = [integral_images(w)] + ([tilted_integral_images(w)] if self._tilted
                                                 else [])
                stack = np.stack(planes, axis=1) if self._tilted else planes[0][:, None]
                div = _inner_divisor(w)
            alive = np.arange(len(w))
            for j, (used, stage) in enumerate(self._stages):
                if alive.size == 0:
                    break
                k = self.first_stage + j
                if self._haar:
                    vals = weighted_rect_sums(stack, *self._tables[j], sample_ids=alive,
                                              divisor=div[alive])
                else:
                    vals = model_feature_values(model, w[alive], used)
                sc = stage.score(vals)
                scores[k, a + alive] = sc
                ok = sc >= model.stages[k].reject_threshold
                n_passed[a + alive[~ok]] = k
                alive = alive[ok]
        return n_passed, scores


def cascade_pass(
    model: CascadeModel,
    windows: np.ndarray,
    *,
    first_stage: int = 0,
    chunk: int = 8192,
) -> tuple[np.ndarray, np.ndarray]:
    """Run the cascade on windows as the detector does: each stage only on its survivors.

    Unlike :func:`stage_scores`, which evaluates every feature on every window, this computes a
    stage's features only for the windows that reach it (see :class:`CascadeRunner`).

    Parameters
    ----------
    model : CascadeModel
    windows : ndarray of shape (S, H, W) uint8
    first_stage : int, default=0
        Start at this stage (the windows are known to pass the earlier ones).
    chunk : int, default=8192
        Windows per batch.

    Returns
    -------
    n_passed : ndarray of int64, shape (S,)
        Index of the first stage that rejects the window (``n_stages`` when accepted).
    scores : ndarray of float64, shape (n_stages, S)
        Stage scores; NaN for stages a window did not reach (and before ``first_stage``).
    """
    return CascadeRunner(model, first_stage=first_stage, chunk=chunk)(windows)


class WindowStack:
    """Windows prepared once for repeated stage evaluation (integral images kept in memory).

    Training-side tools that look at one stage at a time (adaptation, calibration) evaluate
    every stage on a changing subset of the same windows; this keeps the integral images
    (HAAR: upright, tilted when the cascade uses tilted features, and the normalisation
    divisor) so that each call only runs the stage's own features on the requested windows.

    Parameters
    ----------
    model : CascadeModel
    windows : ndarray of shape (S, H, W) uint8
    """

    def __init__(self, model: CascadeModel, windows: np.ndarray) -> None:
        self.model = model
        self._haar = model.feature_type == "HAAR"
        self._tilted = self._haar and model.has_tilted
        if self._haar:
            w = check_windows(windows, model.window_shape)
            planes = [integral_images(w)] + ([tilted_integral_images(w)] if self._tilted else [])
            self._stack = np.stack(planes, axis=1) if self._tilted else planes[0][:, None]
            self._div = _inner_divisor(w)
            self._windows = None
        else:
            self._windows = windows
        self.n_windows = len(windows)
        self._stages: dict[int, tuple[np.ndarray, Stage, tuple | None]] = {}

    def _stage(self, k: int):
        if k not in self._stages:
            used, stage = _local_stage(self.model.stages[k])
            table = _haar_table(self.model, used, self._tilted) if self._haar else None
            self._stages[k] = (used, stage, table)
        return self._stages[k]

    def tree_outputs(self, k: int, ids: np.ndarray) -> np.ndarray:
        """Leaf values of every tree of stage ``k`` on windows ``ids``, shape (n_trees, n).

        Parameters
        ----------
        k : int
            Stage index of ``model``.
        ids : ndarray of int
            Indices of the windows to evaluate.
        """
        used, stage, table = self._stage(k)
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size == 0:
            return np.zeros((len(stage.trees), 0))
        if self._haar:
            vals = weighted_rect_sums(self._stack, *table, sample_ids=ids, divisor=self._div[ids])
        else:
            vals = model_feature_values(self.model, self._windows[ids], used)
        return np.stack([t.predict(vals).astype(np.float64) for t in stage.trees])
