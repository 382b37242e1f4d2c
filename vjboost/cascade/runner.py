"""The cascade runner: every window-level evaluation of a cascade model goes through here.

Detection and hard-negative mining scan images (:meth:`CascadeRunner.scan`), the trainer filters
its positives and adaptation follows windows from stage to stage (:meth:`CascadeRunner.run`),
and adaptation re-weights the trees of one stage from their outputs
(:meth:`CascadeRunner.tree_outputs`). Two paths give the same decisions:

* **kernels** — when the family compiles its features (``family.program(feature_ids)``, every
  integral-channel family and pools of them): the numba kernels of
  :mod:`vjboost.cascade.kernels`, on integral planes of window stacks or of image levels packed
  by :class:`~vjboost.cascade.scan.Pyramid` batches, one pass for all the families of a pool;
  Haar cascades of trees of depth <= 2 scan images with the row pass of
  :mod:`vjboost.cascade.prefilter` (same decisions, stages run along rows);
* **generic** — other families (Fourier, user-written ones): per window stack
  ``family.prepare`` / ``family.evaluate``, per level ``family.prepare_image`` /
  ``family.evaluate_at``, stage by stage on the windows still alive.

Both sum a stage's tree outputs in float64, tree after tree (:func:`stage_sum`, the kernel's
order), of float32 leaf values, and reject a window iff its score is below
``float32(threshold) - 1e-5``. The detector's σ gate (OpenCV: windows whose inner-area standard
deviation is at most ``min_std = 10`` grey levels are rejected before the first stage) applies
only to cascades whose compiled features use OpenCV's variance normalisation.

Examples
--------
>>> import numpy as np
>>> from vjboost.cascade.synthetic import random_cascade
>>> model = random_cascade("LBP", window=(12, 12), seed=0)
>>> windows = np.random.default_rng(0).integers(0, 256, (5, 12, 12), dtype=np.uint8)
>>> n_passed, score = CascadeRunner(model).run(windows)
>>> n_passed.shape, bool((n_passed <= model.n_stages).all())
((5,), True)
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np
from numba import njit
from numba.core.errors import NumbaPerformanceWarning

from .._memory import check_memory
from .._threads import n_threads, resolve_threads, run_tasks
from ..boost.tree import Tree
from ..features.base import check_windows
from . import kernels, prefilter
from .model import CascadeModel, Stage
from .scan import KEEP_BYTES, Batch, Pyramid

__all__ = ["CascadeRunner", "cascade_accepts", "sigma_gate", "stage_sum"]


def sigma_gate(min_std: float | None) -> float:
    """The kernels' σ gate for a minimum grey-level standard deviation (None or 0: no gate).

    A window passes iff ``area · inv_var < gate``, i.e. ``σ > min_std``; OpenCV's ``0.1``.
    """
    if min_std is None or min_std <= 0:
        return np.inf
    return 1.0 / float(min_std)


def stage_sum(outputs: np.ndarray) -> np.ndarray:
    """Stage scores from tree outputs ``(n_trees, n)``: summed in float64, tree after tree, as
    the kernels sum them (so that every path compares the same numbers with a threshold)."""
    s = np.zeros(np.shape(outputs)[1], dtype=np.float64)
    for row in outputs:
        s += row
    return s


class _StageReads:
    """The features one stage reads, and the rows of each tree's ``features_`` among them."""

    def __init__(self, stage: Stage, feature_ids: np.ndarray) -> None:
        self.stage = stage
        self.trees: list[Tree] = stage.trees
        used = np.unique(np.concatenate([t.feature for t in stage.trees]))
        self.ids = feature_ids[used]
        self.rows = [np.searchsorted(used, t.features_) for t in stage.trees]

    def outputs(self, values: np.ndarray) -> np.ndarray:
        """Tree outputs ``(n_trees, n)`` from the values ``(len(ids), n)`` of ``ids``."""
        if values.shape[1] == 0:
            return np.zeros((len(self.trees), 0))
        return np.stack([t.predict(values[r]) for t, r in zip(self.trees, self.rows,
                                                             strict=True)])


#: Integral-plane buffers up to this size are kept per thread for every runner (small images
#: scanned by short-lived detectors, e.g. :func:`vjboost.cascade.api.detect`: the allocation
#: and its memory check cost as much as a pyramid level's scan).
_SHARED_BYTES = 8 << 20
_SCRATCH = threading.local()


def _planes_buffer(shape: tuple[int, int, int], own: threading.local) -> np.ndarray:
    """An uninitialised int32 buffer of ``shape`` (the kernels read only entries the channel
    fill wrote).

    Buffers are kept for the next scans of the thread: small ones for every runner, larger
    ones in ``own``, the runner's, up to :data:`~vjboost.cascade.scan.KEEP_BYTES` (batches
    are about :data:`~vjboost.cascade.scan.BATCH_BYTES`; a band of a very wide image may be
    larger), so only a buffer larger than that is allocated for each scan. A fresh buffer of
    tens of megabytes costs a page fault per 4 KiB page as it is first written: on CMU-MIT,
    about 60 of the 450 ms a megapixel took, all of it spent in the kernel.
    """
    n = int(np.prod(shape))
    for holder in (_SCRATCH, own):
        held = getattr(holder, "planes", None)
        if held is not None and held.size >= n:
            return held[:n].reshape(shape)
    check_memory(4 * n, "integral planes for detection",
                 advice="Use a larger minimum object size or a smaller image.")
    buf = np.empty(n, dtype=np.int32)
    if 4 * n <= _SHARED_BYTES:
        _SCRATCH.planes = buf
    elif 4 * n <= KEEP_BYTES:
        own.planes = buf
    return buf.reshape(shape)


class CascadeRunner:
    """Stages ``first_stage .. last_stage - 1`` of a cascade, compiled once for repeated use.

    Parameters
    ----------
    model : CascadeModel
    first_stage : int, default=0
        Windows given to :meth:`run` are known to pass the earlier stages.
    last_stage : int, optional
        Stop before this stage (default: run to the end).
    threads : int, optional
        numba threads (default all); results do not depend on it.

    Attributes
    ----------
    compiled : CompiledCascade or None
        The stages for the kernels; None when the family has no compiled features (generic
        path).

    Examples
    --------
    >>> import numpy as np
    >>> from vjboost.cascade.synthetic import random_cascade
    >>> model = random_cascade(seed=0, window=(20, 20))      # 3 stages
    >>> windows = np.random.default_rng(0).integers(0, 256, (6, 20, 20), dtype=np.uint8)
    >>> runner = CascadeRunner(model)
    >>> n_passed, score = runner.run(windows)
    >>> n_passed.tolist(), score.round(2).tolist()
    ([3, 1, 3, 3, 3, 0], [1.12, -0.29, 0.65, 1.12, 2.52, -0.01])
    >>> runner.accepts(windows).tolist(), runner.compiled is not None
    ([True, False, True, True, True, False], True)

    Windows already known to pass stage 0 start at stage 1:

    >>> CascadeRunner(model, first_stage=1).run(windows)[0].tolist()
    [3, 1, 3, 3, 3, 1]

    Scanning an image visits every window of a :class:`~vjboost.cascade.scan.Pyramid`:

    >>> from vjboost.cascade.scan import Pyramid
    >>> image = np.random.default_rng(1).integers(0, 256, (40, 48), dtype=np.uint8)
    >>> pyr = Pyramid(model.window_shape, (48, 40), scale_factor=1.5)
    >>> positions, scores = runner.scan(image, pyr)
    >>> pyr.n_windows, len(positions), positions[0].tolist(), pyr.boxes(positions[:1]).tolist()
    (178, 47, [0, 4, 0], [[4, 0, 20, 20]])
    """

    def __init__(self, model: CascadeModel, *, first_stage: int = 0,
                 last_stage: int | None = None, threads: int | None = None) -> None:
        if not isinstance(model, CascadeModel):
            raise TypeError(f"model: expected a CascadeModel, got {type(model).__name__}")
        last = model.n_stages if last_stage is None else int(last_stage)
        if not 0 <= first_stage < last <= model.n_stages:
            raise ValueError(f"first_stage/last_stage: expected 0 <= first < last <= "
                             f"{model.n_stages}, got {first_stage}, {last_stage}")
        self.model, self.first_stage, self.last_stage = model, int(first_stage), last
        self.threads = threads
        self._reads: dict[int, _StageReads] = {}
        self._scratch = threading.local()  # this runner's integral buffers, per thread
        self._parts: dict[tuple[int, int], Any] = {}  # parts of the stages, compiled
        program = self._program = model.program()
        self.compiled = None if program is None else kernels.compile_cascade(
            [(s.trees, s.threshold, s.exits) for s in model.stages[first_stage:last]], program)

    def _stage(self, k: int) -> _StageReads:
        if k not in self._reads:
            self._reads[k] = _StageReads(self.model.stages[k], self.model.feature_ids)
        return self._reads[k]

    def _gate(self, min_std: float | None) -> float:
        return sigma_gate(min_std) if self.compiled is not None else np.inf

    # -- window stacks --------------------------------------------------------------------------

    def run(self, windows: Any, *, min_std: float | None = None, chunk: int = 4096
            ) -> tuple[np.ndarray, np.ndarray]:
        """Run the stages on windows of the model's size, each stage only on its survivors.

        Parameters
        ----------
        windows : ndarray of uint8, shape (S, H, W) or (S, H, W, 3)
        min_std : float, optional
            The detector's σ gate in grey levels (10 in OpenCV's detector), for "would the
            detector accept this window"; None: no gate (training-side decisions).
        chunk : int, default=4096
            Windows per batch (memory stays bounded).

        Returns
        -------
        n_passed : ndarray of int64, shape (S,)
            Index of the first stage that rejects the window (``last_stage`` when none does).
        score : ndarray of float64, shape (S,)
            Score of the last stage evaluated (0 for windows refused by the σ gate).
        """
        if np.shape(windows)[:1] == (0,):
            return np.zeros(0, np.int64), np.zeros(0)
        wins = check_windows(windows, self.model.window_shape, color=self.model.color)
        if self.compiled is not None:
            passed, score = kernels.run_stack(self.compiled, wins, gate=self._gate(min_std),
                                              chunk=int(chunk), threads=self.threads)
            return self.first_stage + np.maximum(passed, 0).astype(np.int64), score
        n = len(wins)
        n_passed = np.full(n, self.last_stage, dtype=np.int64)
        score = np.zeros(n, dtype=np.float64)
        fam = self.model.family
        with n_threads(self.threads):
            for a in range(0, n, int(chunk)):
                ch = fam.prepare(wins[a:a + int(chunk)])
                alive = np.arange(min(int(chunk), n - a))
                for k in range(self.first_stage, self.last_stage):
                    if alive.size == 0:
                        break
                    st = self._stage(k)
                    rejected, s = st.stage.rejects(st.outputs(fam.evaluate(ch, st.ids, alive)))
                    score[a + alive] = s
                    ok = ~rejected
                    n_passed[a + alive[~ok]] = k
                    alive = alive[ok]
        return n_passed, score

    def accepts(self, windows: Any, *, min_std: float | None = None) -> np.ndarray:
        """Whether every stage accepts each window, shape (S,) bool (see :meth:`run`).

        Parameters
        ----------
        windows : ndarray of uint8, shape (S, H, W) or (S, H, W, 3)
            Windows of the model's size.
        min_std : float, optional
            The detector's σ gate in grey levels (10 in OpenCV's detector); None: no gate.

        Returns
        -------
        ndarray of bool, shape (S,)
        """
        return self.run(windows, min_std=min_std)[0] == self.last_stage

    def prepare(self, windows: Any) -> Any:
        """The family's prepared channels of ``windows``, for repeated :meth:`tree_outputs`."""
        wins = check_windows(windows, self.model.window_shape, color=self.model.color)
        with n_threads(self.threads):
            return self.model.family.prepare(wins)

    def tree_outputs(self, channels: Any, k: int, sample_ids: Any) -> np.ndarray:
        """Outputs of every tree of stage ``k`` on prepared windows ``sample_ids``.

        Parameters
        ----------
        channels : prepared windows (:meth:`prepare`)
        k : int
            Stage index of the model.
        sample_ids : array-like of int

        Returns
        -------
        ndarray of float64, shape (n_trees, len(sample_ids))
            ``stage_sum`` of it is the stage score, as the kernels compute it.
        """
        st = self._stage(int(k))
        ids = np.asarray(sample_ids, dtype=np.int64).reshape(-1)
        if ids.size == 0:
            return np.zeros((len(st.trees), 0))
        with n_threads(self.threads):
            return st.outputs(self.model.family.evaluate(channels, st.ids, ids))

    # -- images ---------------------------------------------------------------------------------

    def scan(self, image: np.ndarray, pyramid: Pyramid, *, min_std: float | None = None,
             skip0: bool = False, coarse_to_fine: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Every window of ``pyramid`` that all the stages accept (with ``coarse_to_fine``:
        of the windows a coarse-to-fine scan reaches).

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3)
            The image the pyramid was made for (RGB for colour families).
        pyramid : Pyramid
        min_std : float, optional
            σ gate in grey levels (see :meth:`run`).
        skip0 : bool, default=False
            Skip the position after a window rejected by the first stage (OpenCV's detector;
            not applied with ``coarse_to_fine``).
        coarse_to_fine : int, default=0
            ``K > 0``: scan each level's *coarse grid* (every second position of its grid, in
            rows and columns) with the first ``K`` stages only, then run the whole cascade on
            the grid positions within one grid step (rows, columns and diagonals) of the
            coarse windows that passed them: neighbouring windows' scores are correlated, so
            a face's windows are found around the coarse windows that pass its early stages,
            and about a third of the grid is evaluated instead of all of it. Compiled
            cascades only (:attr:`compiled`).

        Returns
        -------
        positions : ndarray of int64, shape (N, 3)
            ``(level index, x, y)`` of the accepted windows, by level, row, column.
        scores : ndarray of float64, shape (N,)
            The last stage's score of each.
        """
        k = self.check_coarse_to_fine(coarse_to_fine)
        parts_p, parts_s = [np.zeros((0, 3), np.int64)], [np.zeros(0)]
        with n_threads(self.threads):
            if k:
                self._scan_coarse_to_fine(image, pyramid, self._gate(min_std), k, parts_p,
                                          parts_s)
            elif self.compiled is not None:
                self._scan_kernels(image, pyramid, self._gate(min_std), skip0, parts_p, parts_s)
            else:
                self._scan_generic(image, pyramid, skip0, parts_p, parts_s)
        return np.concatenate(parts_p), np.concatenate(parts_s)

    def _scan_kernels(self, image, pyramid, gate, skip0, parts_p, parts_s) -> None:
        cc = self.compiled
        chans = cc.program.channels
        rows_fit = prefilter.suits(cc)

        def one(batch: Batch, threads: int) -> tuple[np.ndarray, np.ndarray]:
            items = batch.items()
            layout = {"row_stride": batch.cols, "plane_stride": batch.rows * batch.cols}
            if rows_fit and _rows_fit_memory(batch.n_out) and chans.fills_split:
                # a grid of step 2 is rows of consecutive windows once the planes hold the
                # even and the odd columns apart (grey planes are integrated that way at no
                # cost; gradient channels go through the strided row pass: copying their
                # columns apart cost more, 1.3 s against 0.6 s on CMU-MIT, than it saved)
                split = _split_layout(items, batch.rows, batch.cols)
                if split is not None:
                    items, layout = split
            buf = self._filled(image, pyramid, batch, layout, levels)
            hits, score = self._run_items(cc, buf.reshape(-1), items, layout, gate,
                                          batch.n_out, skip0, threads=threads)
            return batch.positions(hits), score

        levels: dict[int, np.ndarray] = {}

        self._over_batches(pyramid.batches(chans.n_planes), one, chans.n_planes, parts_p,
                           parts_s)

    def _over_batches(self, batches: list[Batch], one, n_planes: int, parts_p: list,
                      parts_s: list, *, split_rows: bool = True) -> None:
        """``one(batch, threads)`` of every batch, results appended in batch order.

        With several threads, batches run side by side, one thread each, largest first: each
        thread fills and scans its own batch in its own cache, and a batch of a few hundred
        rows is too small to split between threads (tens of tasks per pass cost more than
        they save: 270 against 202 ms/MP on CMU-MIT with two threads). With ``split_rows``, a
        batch holding more than a quarter of a thread's share of the image's planes splits
        its rows between all the threads instead, before the others (an image of two or
        three batches would otherwise leave a thread waiting on the largest: 129 against 99
        ms/MP for OpenCV's default cascade). Coarse-to-fine scans do not split a batch's rows:
        their passes over one batch gain next to nothing from a second thread (the default
        face model, two threads: 192 ms/MP with every batch split, 82 side by side). Results
        do not depend on the thread count: each batch's are the same whichever thread
        computes them.
        """
        n_t = resolve_threads(self.threads)
        out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(batches)
        if n_t > 1 and len(batches) > 1:
            # pixels held (a band holds part of its level)
            area = np.array([int(((b.held[:, 1] - b.held[:, 0])
                                  * [lv.width for lv in b.levels]).sum()) for b in batches],
                            dtype=np.int64)
            # a batch side by side with the others when it holds at most a quarter of a
            # thread's share: with a few large batches (OpenCV's cascades: one to three
            # planes, so a CMU-MIT image is two or three batches) the threads would wait
            # on the largest
            alone = (area * 4 * n_t > area.sum()) & split_rows
            shared = np.flatnonzero(~alone)
            for i in np.flatnonzero(alone):
                out[i] = one(batches[i], n_t)
            # largest first, so that the last tasks are short; the smallest goes before them
            # (run_tasks runs its first task alone, in this thread)
            order = [int(i) for i in shared[np.argsort(-area[shared], kind="stable")]]

            def task(i: int) -> None:
                with n_threads(1):
                    out[i] = one(batches[i], 1)

            run_tasks(order[-1:] + order[:-1], task, threads=n_t)
        else:
            for i, b in enumerate(batches):
                out[i] = one(b, n_t)
        for pos, score in out:
            parts_p.append(pos)
            parts_s.append(score)

    def check_coarse_to_fine(self, value: Any, name: str = "coarse_to_fine") -> int:
        """``value`` checked as :meth:`scan`'s ``coarse_to_fine``.

        Parameters
        ----------
        value : int or None
            Stages of the coarse pass, 0 to the runner's stage count (None or 0: off).
        name : str, default="coarse_to_fine"
            What a ValueError names.

        Returns
        -------
        int
            The stage count (0: off).

        Raises
        ------
        ValueError
            Not an integer in range, or ``> 0`` for a cascade without compiled features.

        Examples
        --------
        >>> from vjboost.cascade.model_io import load_model
        >>> CascadeRunner(load_model("vjboost:frontalface_haar")).check_coarse_to_fine(None)
        0
        """
        if value is None:
            return 0
        n = self.last_stage - self.first_stage
        if isinstance(value, bool) or not isinstance(value, int | np.integer) \
                or not 0 <= int(value) <= n:
            raise ValueError(f"{name}: expected 0..{n} stages (0: off), got {value!r}")
        if value and self.compiled is None:
            raise ValueError(f"{name}: needs a cascade of compiled features (this family runs "
                             "on the generic path)")
        return int(value)

    def _filled(self, image, pyramid, batch, layout: dict[str, int],
                levels: dict | None = None) -> np.ndarray:
        """This thread's buffer holding the integral planes of ``batch``'s levels (row stride
        ``layout["row_stride"]``, columns split when ``layout`` says so); ``levels`` keeps the
        resized images of levels cut into bands for the scan's other bands."""
        chans = self.compiled.program.channels
        buf = _planes_buffer((chans.n_planes, batch.rows, layout["row_stride"]), self._scratch)
        for lv, (y0, x0), (a, b) in zip(batch.levels, batch.origins, batch.held, strict=True):
            band = (a, b) != (0, lv.height)
            img = None if levels is None else levels.get(lv.index)
            if img is None:
                img = pyramid.level_image(image, lv)
                if band and levels is not None:
                    levels[lv.index] = img  # resized once for all the bands of the level
            if band:
                # its rows' planes, integrated from its first row (rectangle sums inside the
                # band's windows are the whole level's)
                img = img[a:b]
            chans.fill(img, buf, int(y0 + a), int(x0), split=layout.get("split", 0))
        return buf

    def _scan_rows(self, buf: np.ndarray, items: np.ndarray, layout: dict[str, int],
                   gate: float, skip0: bool, cc: kernels.CompiledCascade | None = None,
                   threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The accepted slots of a batch and their scores, row by row
        (:func:`vjboost.cascade.prefilter.scan_rows`: the first stage over whole rows, the
        next ones over each row's compacted survivors); ``cc`` defaults to :attr:`compiled`,
        ``threads`` to the runner's."""
        cc = self.compiled if cc is None else cc
        bound = cc.bind(**layout)
        gate = float(gate) if cc.variance else np.inf
        args = (bound.tab, bound.tabf, bound.pro, bound.prof, gate, bool(skip0),
                cc.stage_first, cc.stage_thr, cc.stage_carry, cc.tree_node0, cc.leaves,
                prefilter.SPARSE0)
        n_t = resolve_threads(self.threads if threads is None else threads)
        cuts = _task_cuts(len(items), n_t)
        tasks = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        found: list[tuple[np.ndarray, np.ndarray]] = [None] * len(tasks)

        def task(k: int) -> None:
            part = items[tasks[k][0]:tasks[k][1]]
            m = int(prefilter.item_windows(part).sum())
            slot, score = np.empty(m, np.int64), np.empty(m)
            n = prefilter.scan_rows(buf, part, *args, slot, score, ops=cc.ops)
            found[k] = (slot[:n].copy(), score[:n].copy())

        with warnings.catch_warnings():
            # compiled with parallel=True and no parallel loop, on purpose (see prefilter)
            warnings.simplefilter("ignore", NumbaPerformanceWarning)
            run_tasks(range(len(tasks)), task, threads=n_t)
        slots, scores = (np.concatenate(a) for a in zip(*found, strict=True))
        return slots, scores

    def _scan_list(self, buf: np.ndarray, items: np.ndarray, layout: dict[str, int],
                   gate: float, n_out: int, cc: kernels.CompiledCascade,
                   threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The accepted slots of short rows of windows and their scores, as one list of
        windows (:func:`vjboost.cascade.prefilter.scan_list`; the slots are numbered in item
        order, which keeps neighbours together)."""
        n = prefilter.item_windows(items)
        j = np.repeat(np.arange(len(items)), n)
        pos = items[j, 0] + (np.arange(n_out) - items[j, 3]) * items[j, 2]
        return self._scan_positions(buf, pos, layout, gate, cc, threads)

    def _scan_positions(self, buf: np.ndarray, pos: np.ndarray, layout: dict[str, int],
                        gate: float, cc: kernels.CompiledCascade,
                        threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The accepted entries of ``pos`` (windows' offsets in the planes) and their scores
        (:func:`vjboost.cascade.prefilter.scan_list`)."""
        bound = cc.bind(**layout)
        gate = float(gate) if cc.variance else np.inf
        n_out = len(pos)
        args = (bound.tab, bound.tabf, bound.pro, bound.prof, gate, cc.stage_first,
                cc.stage_thr, cc.stage_carry, cc.tree_node0, cc.leaves, prefilter.LIST_BLOCK)
        n_t = resolve_threads(self.threads if threads is None else threads)
        # a list too short for two blocks is not worth splitting
        cuts = _task_cuts(n_out, 1 if n_out < 2 * prefilter.LIST_BLOCK else n_t)
        found: list[tuple[np.ndarray, np.ndarray]] = [None] * (len(cuts) - 1)

        def task(k: int) -> None:
            a, b = int(cuts[k]), int(cuts[k + 1])
            slot, score = np.empty(b - a, np.int64), np.empty(b - a)
            m = prefilter.scan_list(buf, pos[a:b], *args, slot, score, ops=cc.ops)
            found[k] = (slot[:m] + a, score[:m].copy())

        run_tasks(range(len(found)), task, threads=n_t)
        slots, scores = (np.concatenate(a) for a in zip(*found, strict=True))
        return slots, scores

    def _run_items(self, cc, buf, items, layout, gate, n_out, skip0=False, *,
                   threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Accepted slots and scores of ``items`` under ``cc`` (the row pass where it applies,
        else the window kernel)."""
        if prefilter.applies(cc, items) and _rows_fit_memory(n_out):
            if not skip0 and n_out < prefilter.LIST_ROW * len(items):
                return self._scan_list(buf, items, layout, gate, n_out, cc, threads)
            return self._scan_rows(buf, items, layout, gate, skip0, cc, threads)
        passed, score = kernels.scan(cc, buf, items, n_out=n_out, gate=gate, skip0=skip0,
                                     threads=self.threads if threads is None else threads,
                                     **layout)
        hits = np.flatnonzero(passed == cc.n_stages)
        return hits, score[hits]

    def _run_list(self, cc, buf, pos, layout, gate, threads) -> tuple[np.ndarray, np.ndarray]:
        """Accepted entries of ``pos`` (windows' offsets in the planes) and their scores
        under ``cc`` (the list pass where it applies, else the window kernel)."""
        if len(pos) == 0:
            return np.zeros(0, np.int64), np.zeros(0)
        if prefilter.suits(cc) and _rows_fit_memory(len(pos)):
            return self._scan_positions(buf, pos, layout, gate, cc, threads)
        items = np.zeros((len(pos), 4), np.int64)
        items[:, 0] = pos
        items[:, 1:3] = 1
        items[:, 3] = np.arange(len(pos))
        return self._run_items(cc, buf, items, layout, gate, len(pos), threads=threads)

    def _compiled_part(self, a: int, b: int) -> kernels.CompiledCascade:
        """Stages ``a .. b - 1`` of the runner's stages compiled (cached: coarse-to-fine
        scanning runs the first ``K`` stages on the coarse grid and the others on the coarse
        windows that passed them)."""
        if (a, b) not in self._parts:
            stages = self.model.stages[self.first_stage + a:self.first_stage + b]
            self._parts[a, b] = kernels.compile_cascade(
                [(s.trees, s.threshold, s.exits) for s in stages], self._program)
        return self._parts[a, b]

    def _scan_coarse_to_fine(self, image, pyramid, gate, k, parts_p, parts_s) -> None:
        cc = self.compiled
        n = self.last_stage - self.first_stage
        head = self._compiled_part(0, k)
        tail = self._compiled_part(k, n) if k < n else None
        chans = cc.program.channels
        none = (np.zeros((0, 3), np.int64), np.zeros(0))

        def one(batch: Batch, threads: int) -> tuple[np.ndarray, np.ndarray]:
            layout = {"row_stride": batch.cols, "plane_stride": batch.rows * batch.cols}
            flat = self._filled(image, pyramid, batch, layout, levels).reshape(-1)
            t = batch._table
            # a band of a level owns its rows above own_ny; the next band's first coarse row
            # is scanned here too, for the fine windows between the two bands
            own = np.array([lv.ny if lv.own_ny is None else lv.own_ny
                            for lv in batch.levels], dtype=np.int64)
            # the coarse grid: every second row and column of each level's grid
            lvl, xs, ys, steps = _coarse_rows(t)
            items, n_out = _items(batch, lvl, xs, ys, t[lvl, 5] - xs, 2 * steps)
            # (with k = every stage, these scores are the final ones: no tail runs below)
            hits, score = self._run_items(head, flat, items, layout, gate, n_out,
                                          threads=threads)
            if not len(hits):
                return none
            # the grid windows around every coarse window that passed the first k stages:
            # the whole cascade; the coarse windows themselves: the stages after the k first
            fk, fx, fy, fpos, ck, cx, cy, cpos, mine = _fine_windows(
                t, batch.origins, batch.cols, batch.out_offsets, batch.n_out, own, items, lvl,
                xs, ys, 2 * steps, hits)
            score = score[mine]
            hits, score_f = self._run_list(cc, flat, fpos, layout, gate, threads)
            fk, fx, fy = fk[hits], fx[hits], fy[hits]
            if tail is not None and len(ck):
                hits, score = self._run_list(tail, flat, cpos, layout, gate, threads)
            else:
                hits = np.arange(len(ck))
            fk, fx, fy = (np.concatenate([f, c[hits]]) for f, c in ((fk, ck), (fx, cx),
                                                                    (fy, cy)))
            score = np.concatenate([score_f, score])
            order = np.lexsort((fx, fy, fk))
            return np.stack([t[fk, 0], fx, fy], axis=1)[order], score[order]

        levels: dict[int, np.ndarray] = {}
        self._over_batches(pyramid.batches(chans.n_planes, context=1), one, chans.n_planes,
                           parts_p, parts_s, split_rows=False)

    def _scan_generic(self, image, pyramid, skip0, parts_p, parts_s) -> None:
        fam = self.model.family
        for lv in pyramid.levels:
            ch = fam.prepare_image(pyramid.level_image(image, lv))
            ys, xs = np.meshgrid(np.arange(lv.y0, lv.ny, lv.row_step),
                                 np.arange(lv.x0, lv.nx, lv.step), indexing="ij")
            pos = np.stack([ys.ravel(), xs.ravel()], axis=1).astype(np.int64)
            alive = np.arange(len(pos))
            score = np.zeros(0)
            for k in range(self.first_stage, self.last_stage):
                if alive.size == 0:
                    break
                st = self._stage(k)
                out = st.outputs(fam.evaluate_at(ch, st.ids, pos[alive]))
                rejected, score = st.stage.rejects(out)
                ok = ~rejected
                if skip0 and k == self.first_stage:
                    first = _first_segment_rejects(st.stage, out, rejected)
                    ok &= _opencv_skip(first.reshape(lv.n_rows, lv.n_cols)).ravel()
                alive, score = alive[ok], score[ok]
            if alive.size:
                lvl = np.full(alive.size, lv.index, dtype=np.int64)
                parts_p.append(np.stack([lvl, pos[alive, 1], pos[alive, 0]], axis=1))
                parts_s.append(score)


def _task_cuts(n: int, threads: int) -> np.ndarray:
    """Bounds of the tasks that share ``n`` work items between ``threads``: one task for one
    thread; else 16 per thread (one per thread would leave a thread idle on the last,
    costliest items), never more than the items."""
    if threads == 1:
        return np.array([0, n])
    return np.linspace(0, n, min(n, 16 * threads) + 1).astype(int)


def _rows_fit_memory(n_out: int) -> bool:
    """Whether the row pass's per-window buffers for ``n_out`` result slots fit its budget."""
    return prefilter.BYTES_PER_WINDOW * n_out <= prefilter.MAX_BYTES


def _coarse_rows(t: np.ndarray) -> tuple[np.ndarray, ...]:
    """Rows of the coarse grids of a batch's levels (``t``: :func:`~vjboost.cascade.scan._table`):
    batch-local level, first column, row and grid step of each (every second grid row)."""
    n = (t[:, 7] + 1) // 2
    lvl = np.repeat(np.arange(len(t), dtype=np.int64), n)
    r = np.arange(lvl.size, dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    return lvl, t[lvl, 1].copy(), t[lvl, 2] + 2 * r * t[lvl, 4], t[lvl, 3].copy()


def _items(batch, lvl, xs, ys, extent, step) -> tuple[np.ndarray, int]:
    """Kernel work items for rows of windows of a batch's levels: window ``x = xs, xs + step,
    ... < xs + extent`` of row ``ys`` of batch-local level ``lvl``; slots numbered in order."""
    n = (extent + step - 1) // step
    items = np.empty((len(lvl), 4), dtype=np.int64)
    items[:, 0] = _offsets(batch.origins, batch.cols, lvl, xs, ys)
    items[:, 1] = extent
    items[:, 2] = step
    items[:, 3] = np.cumsum(n) - n
    return items, int(n.sum())


def _offsets(origins: np.ndarray, cols: int, lvl: np.ndarray, xs: np.ndarray,
             ys: np.ndarray) -> np.ndarray:
    """Offsets in a batch's planes (``Batch.origins``, ``Batch.cols``) of windows ``(lvl, xs,
    ys)`` (batch-local level, column, row): unique within the batch (its levels do not
    overlap)."""
    return (origins[lvl, 0] + ys) * cols + origins[lvl, 1] + xs


def _fine_windows(t, origins, cols, offsets, n_slots, own, items, lvl, xs, ys, steps, hits):
    """The windows a coarse-to-fine scan runs after its coarse pass, for one batch.

    ``hits`` are the ascending result slots of the coarse rows ``items`` (:func:`_items` of
    rows ``lvl``, ``xs``, ``ys``, ``steps``) that passed the first stages. Returns the grid
    windows within one grid step (rows, columns, diagonals) of those coarse windows, each once
    and none of the coarse windows themselves, level by level and row by row (neighbours
    together), and the coarse windows; both as batch-local level, column, row and offset in a
    plane (``origins``, ``cols``), and each only where its level's rows are this batch's
    (``own``: rows above it; a band also holds the next band's first coarse row). The last
    output says which coarse windows are kept. ``t``: the batch's level table
    (:func:`~vjboost.cascade.scan._table`); ``offsets``, ``n_slots``: its grid slots (every
    grid window of a level, row by row)."""
    # the kernels fill arrays allocated here: each array numba allocates in a kernel is one
    # more function to compile on a first detection
    coarse = np.empty((3, len(hits)), np.int64)
    mark = np.zeros(n_slots, np.uint8)
    _mark_fine(t, offsets, items, lvl, xs, ys, steps, hits, coarse, mark)
    fine = np.empty((3, int(mark.sum(dtype=np.int64))), np.int64)
    n = _list_fine(t, offsets, own, mark, fine)
    fk, fx, fy = fine[:, :n]
    ck, cx, cy = coarse
    keep = cy < own[ck]
    ck, cx, cy = ck[keep], cx[keep], cy[keep]
    return (fk, fx, fy, _offsets(origins, cols, fk, fx, fy), ck, cx, cy,
            _offsets(origins, cols, ck, cx, cy), keep)


@njit(cache=True, nogil=True)
def _mark_fine(t, offsets, items, lvl, xs, ys, steps, hits, coarse, mark
               ):  # pragma: no cover - numba
    """:func:`_fine_windows`' first part: the coarse windows of ``hits`` into ``coarse`` (3, M)
    (level, column, row), and ``mark`` (the batch's grid slots, zeros) set to 1 on their
    neighbourhoods and back to 0 on themselves."""
    m = hits.shape[0]
    ck, cx, cy = coarse[0], coarse[1], coarse[2]
    j = 0
    for i in range(m):
        while j + 1 < items.shape[0] and items[j + 1, 3] <= hits[i]:
            j += 1
        ck[i] = lvl[j]
        cx[i] = xs[j] + (hits[i] - items[j, 3]) * steps[j]
        cy[i] = ys[j]
    for rep in range(2):  # mark the neighbourhoods, then unmark the coarse windows
        for i in range(m):
            k = ck[i]
            s, rs, nc, nr = t[k, 3], t[k, 4], t[k, 6], t[k, 7]
            c = (cx[i] - t[k, 1]) // s
            r = (cy[i] - t[k, 2]) // rs
            if rep == 1:
                mark[offsets[k] + r * nc + c] = 0
                continue
            for rr in range(max(r - 1, 0), min(r + 2, nr)):
                for cc in range(max(c - 1, 0), min(c + 2, nc)):
                    mark[offsets[k] + rr * nc + cc] = 1


@njit(cache=True, nogil=True)
def _list_fine(t, offsets, own, mark, fine):  # pragma: no cover - numba
    """:func:`_fine_windows`' second part: the marked grid windows on this batch's rows of
    their levels (``own``), level by level and row by row, into ``fine`` (3, >= their count)
    (level, column, row); returns their count."""
    n = 0
    for k in range(t.shape[0]):
        nc = t[k, 6]
        for r in range(t[k, 7]):
            y = t[k, 2] + r * t[k, 4]
            if y >= own[k]:
                break
            base = offsets[k] + r * nc
            for c in range(nc):
                if mark[base + c]:
                    fine[0, n] = k
                    fine[1, n] = t[k, 1] + c * t[k, 3]
                    fine[2, n] = y
                    n += 1
    return n


def _split_layout(items: np.ndarray, rows: int, cols: int
                  ) -> tuple[np.ndarray, dict[str, int]] | None:
    """The items of a batch as rows of consecutive windows, and the batch's layout for
    :meth:`CompiledCascade.bind`, when its planes hold each row's even columns first and its
    odd columns after them; None unless every item is a grid of step 2 starting on columns of
    one parity.

    A window at column ``x`` then lies at ``x // 2`` (or ``split + x // 2``): the windows of a
    step-2 row are consecutive entries, and so are the corners each node reads, so the row
    pass reads memory in sequence. Outputs keep their slots: results do not depend on the
    layout.

    Parameters
    ----------
    items : ndarray of int64, shape (I, 4)
        :meth:`Batch.items`.
    rows, cols : int
        The batch's plane shape in the usual layout.

    Returns
    -------
    (items, layout) or None
        ``layout``: ``row_stride``, ``plane_stride``, ``split``, ``phase`` (the windows' column
        parity).
    """
    if len(items) == 0 or not (items[:, 2] == 2).all():
        return None
    r, c = np.divmod(items[:, 0], cols)
    phase = int(c[0] % 2)
    if not (c % 2 == phase).all():
        return None
    half = (cols + 1) // 2
    moved = items.copy()
    moved[:, 0] = r * 2 * half + phase * half + c // 2
    moved[:, 1] = (items[:, 1] + 1) // 2
    moved[:, 2] = 1
    return moved, {"row_stride": 2 * half, "plane_stride": rows * 2 * half, "split": half,
                   "phase": phase}


def _first_segment_rejects(stage: Stage, outputs: np.ndarray, rejected: np.ndarray
                           ) -> np.ndarray:
    """Which windows the stage's first segment (its trees up to its first early exit; all of
    them without exits) rejects: the windows that start OpenCV's skip rule, as in the
    kernels."""
    e = stage.exits
    cut = len(stage.trees) - 1 if e is None else int(np.argmax(np.isfinite(e)))
    if cut == len(stage.trees) - 1:
        return rejected
    return stage_sum(outputs[:cut + 1]) < e[cut]


def _opencv_skip(rejected: np.ndarray) -> np.ndarray:
    """Which grid windows OpenCV evaluates when it skips the position after every first-stage
    rejection along a row: ``(rows, cols)`` bool, from the first-stage rejections."""
    evaluated = np.ones_like(rejected)
    for c in range(1, rejected.shape[1]):
        evaluated[:, c] = ~(evaluated[:, c - 1] & rejected[:, c - 1])
    return evaluated


def cascade_accepts(model: CascadeModel, windows: Any, *, min_std: float | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Which windows pass every stage, and how many stages each passes.

    Parameters
    ----------
    model : CascadeModel
    windows : ndarray of uint8, shape (S, H, W) or (S, H, W, 3)
    min_std : float, optional
        σ gate in grey levels (10: as the detector decides), see :meth:`CascadeRunner.run`.

    Returns
    -------
    accepted : ndarray of bool, shape (S,)
    n_passed : ndarray of int64, shape (S,)

    Examples
    --------
    >>> from vjboost.cascade.model_io import load_model
    >>> model = load_model("vjboost:frontalface")
    >>> flat = np.full((2, *model.window_shape), 128, np.uint8)   # two featureless windows
    >>> accepted, n_passed = cascade_accepts(model, flat)
    >>> accepted.tolist(), bool((n_passed < model.n_stages).all())
    ([False, False], True)
    """
    n_passed, _ = CascadeRunner(model).run(windows, min_std=min_std)
    return n_passed == model.n_stages, n_passed
