"""Early exits: reject windows inside a stage, as soon as no accepted positive would be lost.

A stage sums its trees and compares the sum with its threshold once, after the last tree. Most
windows a scene offers are far below any face long before that: an exit after tree ``i``
rejects every window whose partial sum is below the lowest partial sum that any of a set of
positives *accepted by the whole cascade* reached there (Zhang & Viola's direct backward
pruning, 2007). No such positive is lost, so on them the cascade decides exactly as before;
other windows leave earlier, and the stages' ends reject more of them (an exit after a stage's
last tree is the lowest final score of those positives, which is at least the stage's
threshold). The kernels evaluate a stage with exits as a chain of segments that carry the sum
(:func:`vjboost.cascade.kernels.compile_cascade`), compacting the surviving windows at each
exit as they do at a stage's end.

``vjtrain --early-exits`` sets them at the end of training from its positives without their
``--jitter`` copies (:class:`~vjboost.cascade.trainer.CascadeTrainer`'s ``exit_positives``).
OpenCV cannot run exits: only :meth:`~vjboost.cascade.model.CascadeModel.without_exits` of
such a cascade can be exported. Measured on the default face model in ``docs/detection.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InputError
from .model import CascadeModel, Stage
from .runner import CascadeRunner

__all__ = ["early_exits"]


def _floor32(v: float) -> np.float32:
    """The largest float32 value ``<= v``."""
    f = np.float32(v)
    # compared in float64: against a Python float, numpy would compare in float32
    return np.nextafter(f, np.float32(-np.inf)) if np.float64(f) > np.float64(v) else f


def early_exits(model: CascadeModel, positives: Any, *, every: int = 1, loss: float = 0.0,
                threads: int | None = None) -> CascadeModel:
    """The cascade with early exits that keep every positive it accepts.

    Parameters
    ----------
    model : CascadeModel
        The cascade (exits it already has are replaced).
    positives : ndarray of uint8, shape (P, height, width) or (P, height, width, 3)
        Windows of the model's size, e.g. its training positives. Those the cascade accepts
        set the exits: after a tree, the lowest partial sum any of them reaches (rounded down
        to float32), so that none of them is rejected by an exit.
    every : int, default=1
        An exit after every ``every``-th tree of a stage (and after its last one).
    loss : float in [0, 1), default=0
        Share of the accepted positives the exits may reject, spread evenly over the exits
        (0: none; each exit is then the lowest partial sum of the positives, as above).
    threads : int, optional

    Returns
    -------
    CascadeModel
        The same stages with exits where one rejects anything (an exit below the lowest sum
        the trees can reach there is left out); ``params["early_exits"]`` records how many
        positives set them.

    Raises
    ------
    InputError
        If the cascade accepts none of ``positives``, ``every`` is not a positive integer or
        ``loss`` not a share.

    Examples
    --------
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> model = random_cascade("HAAR", balanced=True, pass_rate=0.7, seed=0)
    >>> windows = np.random.default_rng(0).integers(0, 256, (500, 20, 20), dtype=np.uint8)
    >>> fast = early_exits(model, windows)
    >>> kept = CascadeRunner(model).accepts(windows)
    >>> bool(CascadeRunner(fast).accepts(windows)[kept].all()), fast.n_exits > 0
    (True, True)
    """
    if isinstance(every, bool) or not isinstance(every, int | np.integer) or every < 1:
        raise InputError(f"every: expected a positive integer, got {every!r}")
    if isinstance(loss, bool) or not isinstance(loss, int | float) or not 0 <= loss < 1:
        raise InputError(f"loss: expected a share in [0, 1), got {loss!r}")
    base = model.without_exits()
    runner = CascadeRunner(base, threads=threads)
    accepted = np.flatnonzero(runner.accepts(positives))
    if accepted.size == 0:
        raise InputError(f"positives: the cascade accepts none of the {len(positives)} "
                         f"positives, so no early exit can be set from them")
    ch = runner.prepare(np.asarray(positives)[accepted])
    ids = np.arange(accepted.size)
    n_exits = sum(-(-len(st.trees) // every) for st in base.stages)
    # the positives the exits may drop, spread evenly over the exits
    quota = loss * accepted.size / n_exits
    alive = np.ones(accepted.size, dtype=bool)
    dropped, seen = 0, 0
    stages = []
    for k, st in enumerate(base.stages):
        out = runner.tree_outputs(ch, k, ids)
        # the partial sums as the kernels form them: float64, tree after tree
        part = np.cumsum(out, axis=0)
        # the lowest partial sum a window can have after each tree: below it an exit is idle
        floor = np.cumsum([float(t.leaves.min()) for t in st.trees])
        n = len(st.trees)
        exits = np.full(n, -np.inf)
        for i in range(n):
            if (i + 1) % every and i < n - 1:
                continue
            seen += 1
            live = np.sort(part[i][alive])
            j = min(int(quota * seen) - dropped, live.size - 1)
            e = _floor32(float(live[max(j, 0)]))
            if i == n - 1 and e <= st.reject_threshold:
                continue  # the threshold decides alone
            if e > floor[i]:
                exits[i] = e
                gone = alive & (part[i] < e)
                dropped += int(gone.sum())
                alive &= ~gone
        stages.append(Stage(st.trees, threshold=st.threshold, exits=exits))
    params = dict(model.params)
    params["early_exits"] = {"positives": int(len(positives)), "accepted": int(accepted.size),
                             "every": int(every), "loss": float(loss),
                             "dropped": int(dropped)}
    return base.with_stages(stages, params)
