"""Hard-negative mining: background windows that the current cascade still accepts.

Before each stage the trainer needs ``n`` negative windows that pass every stage trained so far.
:func:`mine_negatives` visits background images in a seeded order, scans each one on a pyramid of
scales with a regular grid of windows, keeps the windows the cascade accepts (all windows before
the first stage) and stops once ``n`` are collected. Scanning uses
:class:`~vjboost.cascade.detector.CascadeDetector` (the cascade runner's kernels, or the generic
family path) on the image's :class:`~vjboost.cascade.scan.Pyramid`, so a window is accepted
exactly when detection would accept it; accepted windows are cut out of the level the cascade ran
on (:meth:`~vjboost.cascade.scan.Pyramid.windows`).

The schedule is a pure function of ``(params, image list, seed, stage)``:

* pass ``p`` visits every image once, in an order drawn from ``(seed, stage, p)``;
* an image is scanned as the detector scans it (:func:`~vjboost.cascade.scan.opencv_scales`
  with ``params.scale_factor``, images shrunk by ``INTER_LINEAR_EXACT``), on a grid of step
  ``params.step`` pixels of the scaled image, after cropping the image at the pass's offset
  ``(p mod step, p div step mod step)`` — every pass scans new windows;
* at most ``params.max_per_image`` accepted windows are kept per image and pass (a seeded choice),
  so negatives come from many images rather than from the first few.

The acceptance ratio is ``accepted / scanned`` (windows accepted by the cascade over windows
scanned), an estimate of the cascade's false-alarm rate on background windows.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._memory import available_memory
from ..io import ImageReadError, read_image
from .detector import CascadeDetector
from .model import CascadeModel
from .scan import Pyramid

__all__ = ["ImageCache", "MiningParams", "MiningResult", "mine_negatives", "mining_summary"]


@dataclass(frozen=True)
class MiningParams:
    """How background images are scanned for negatives.

    Attributes
    ----------
    window : (height, width)
        Training window in pixels.
    scale_factor : float, default=1.25
        Ratio between successive scales of an image's pyramid (> 1).
    step : int, optional
        Grid step in pixels of the scaled images (default: a quarter of the smaller window side).
    max_per_image : int, optional
        Accepted windows kept per image and pass (default ``max(4, ceil(4 n / n_images))``).
    max_passes : int, optional
        Passes over the image list before the backgrounds count as exhausted (default ``step²``:
        every grid offset once).
    """

    window: tuple[int, int]
    scale_factor: float = 1.25
    step: int | None = None
    max_per_image: int | None = None
    max_passes: int | None = None

    def __post_init__(self) -> None:
        h, w = (int(v) for v in self.window)
        if h < 1 or w < 1:
            raise ValueError(f"window: expected positive (height, width), got {self.window}")
        object.__setattr__(self, "window", (h, w))
        if not (isinstance(self.scale_factor, int | float) and self.scale_factor > 1.0
                and math.isfinite(self.scale_factor)):
            raise ValueError(f"scale_factor: expected a number > 1, got {self.scale_factor!r}")
        if min(h, w) * (self.scale_factor - 1.0) < 1.5:
            raise ValueError(
                f"scale_factor: {self.scale_factor} is too close to 1 for a {w}x{h} window "
                f"(successive scales must change the window size; use >= "
                f"{1 + 1.5 / min(h, w):.3f})")
        for name in ("step", "max_per_image", "max_passes"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer)
                                  or v < 1):
                raise ValueError(f"{name}: expected a positive integer or None, got {v!r}")

    @property
    def grid_step(self) -> int:
        return int(self.step) if self.step is not None else max(1, min(self.window) // 4)

    @property
    def n_passes(self) -> int:
        return int(self.max_passes) if self.max_passes is not None else self.grid_step ** 2


@dataclass
class MiningResult:
    """Negatives mined for one stage.

    Attributes
    ----------
    windows : ndarray of uint8, shape (k, height, width)
        ``k <= n`` accepted windows, in the order they were found.
    n_scanned : int
        Windows the cascade was run on.
    n_accepted : int
        Windows the cascade accepted (before the per-image cap).
    n_images_visited : int
        Image visits (an image visited in two passes counts twice).
    passes : int
        Passes started over the image list.
    exhausted : bool
        Every pass was used up before ``n`` windows were found.
    target_reached : bool
        Stopped early because the acceptance ratio fell to ``stop_ratio`` over at least
        ``n / stop_ratio`` scanned windows (the cascade's false-alarm target is met).
    unreadable : list of str
        Images that could not be read (skipped).
    """

    windows: np.ndarray
    n_scanned: int = 0
    n_accepted: int = 0
    n_images_visited: int = 0
    passes: int = 0
    exhausted: bool = False
    target_reached: bool = False
    unreadable: list[str] = field(default_factory=list)

    @property
    def acceptance_ratio(self) -> float:
        """``n_accepted / n_scanned`` (1.0 when nothing was scanned)."""
        return self.n_accepted / self.n_scanned if self.n_scanned else 1.0


class ImageCache:
    """Decoded gray background images kept in memory up to a byte budget (LRU).

    Reading JPEGs costs more than scanning them with a strong cascade, so images are decoded once
    and kept while they fit. The cache never changes results, only speed.

    Parameters
    ----------
    budget : int, optional
        Bytes (default: a quarter of the available memory, at most 2 GiB).
    """

    def __init__(self, budget: int | None = None) -> None:
        if budget is None:
            budget = min(available_memory() // 4, 2 * 1024**3)
        self.budget = int(budget)
        self.nbytes = 0
        self._data: OrderedDict[str, np.ndarray | None] = OrderedDict()

    def get(self, path: str) -> np.ndarray | None:
        """The gray image, or ``None`` when it cannot be read."""
        if path in self._data:
            self._data.move_to_end(path)
            return self._data[path]
        try:
            img = read_image(path)
        except ImageReadError:
            img = None
        size = 0 if img is None else img.nbytes
        if size <= self.budget:
            self._data[path] = img
            self.nbytes += size
            while self.nbytes > self.budget and self._data:
                _, old = self._data.popitem(last=False)
                self.nbytes -= 0 if old is None else old.nbytes
        return img


def _scan_image(img: np.ndarray, det: CascadeDetector | None, params: MiningParams,
                per_image: int, rng: np.random.Generator) -> tuple[np.ndarray, int, int]:
    """Accepted windows of one image (at most ``per_image``), windows scanned, accepted."""
    size = (img.shape[1], img.shape[0])
    pyr = det.pyramid(size) if det is not None else Pyramid(
        params.window, size, scale_factor=params.scale_factor, mode="clean",
        step=params.grid_step)
    n_scan = pyr.n_windows
    if det is None:
        # every window is accepted: draw the kept ones among all grid windows
        n_acc = n_scan
        pos = pyr.positions(np.arange(n_scan) if n_scan <= per_image else np.sort(
            rng.choice(n_scan, per_image, replace=False)))
    else:
        _, _, pos = det.raw_windows(img, return_positions=True)
        n_acc = len(pos)
        if n_acc > per_image:
            pos = pos[np.sort(rng.choice(n_acc, per_image, replace=False))]
    return pyr.windows(img, pos), n_scan, n_acc


def mining_detector(model: CascadeModel | None, params: MiningParams) -> CascadeDetector | None:
    """The detector mining scans with (``None`` before the first stage)."""
    if model is None:
        return None
    # one small image per kernel call: threads do not pay (and suffer on a busy machine)
    return CascadeDetector(model, scale_factor=params.scale_factor, min_neighbors=0,
                           mode="clean", step=params.grid_step, skip_after_stage0=False,
                           grouping="none", threads=1)


def _schedule(n_images: int, params: MiningParams, seed: int, stage: int
              ) -> Iterator[tuple[int, int]]:
    """The visits ``(pass, image index)`` in mining order."""
    for p in range(params.n_passes):
        order = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(stage), p, 0x6E6567]
                                      ).permutation(n_images)
        for k in order:
            yield p, int(k)


def scan_visit(img: np.ndarray, p: int, k: int, det: CascadeDetector | None,
               params: MiningParams, seed: int, stage: int, per_image: int
               ) -> tuple[np.ndarray, int, int]:
    """One visit of the schedule: image ``k`` (decoded as ``img``) cropped at pass ``p``'s grid
    offset and scanned; a pure function of its arguments.

    Returns
    -------
    windows : ndarray of uint8, shape (m, height, width)
        At most ``per_image`` accepted windows.
    n_scanned, n_accepted : int
    """
    step = params.grid_step
    ox, oy = p % step, (p // step) % step
    pick_rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(stage), p, int(k)])
    return _scan_image(np.ascontiguousarray(img[oy:, ox:]), det, params, per_image, pick_rng)


def mine_negatives(
    model: CascadeModel | None,
    image_paths: Sequence[str | os.PathLike[str]],
    n: int,
    *,
    params: MiningParams,
    seed: int = 0,
    stage: int = 0,
    stop_ratio: float | None = None,
    cache: ImageCache | None = None,
    executor: Any = None,
) -> MiningResult:
    """Collect ``n`` background windows accepted by ``model``.

    Parameters
    ----------
    model : CascadeModel or None
        The cascade trained so far (``None``: every window is accepted).
    image_paths : sequence of path-like
        Background images (no object of the class). Unreadable ones are skipped and reported.
    n : int
        Negatives wanted.
    params : MiningParams
    seed, stage : int
        The visiting order and the per-image choices are drawn from ``(seed, stage, pass)``.
    stop_ratio : float, optional
        Stop early once at least ``n / stop_ratio`` windows were scanned (as many as a fill at
        that acceptance ratio needs) with an acceptance ratio ``<= stop_ratio``: the cascade's
        false-alarm target is met.
    cache : ImageCache, optional
        Decoded images shared between calls (speed only).
    executor : vjboost._parallel.Executor, optional
        Scan the images as tasks on this executor (threads or Dask workers, see
        :mod:`vjboost.cascade.tasks`); the visits are assembled in the schedule's order, so the
        result is the same as without it.

    Returns
    -------
    MiningResult
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    paths = [os.fspath(p) for p in image_paths]
    if not paths:
        raise ValueError("image_paths: no background image given")
    if model is not None and tuple(model.window_shape) != params.window:
        raise ValueError(f"model: window {model.window_shape} differs from the mining window "
                         f"{params.window}")
    cache = cache if cache is not None else ImageCache()
    h, w = params.window
    per_image = params.max_per_image or max(4, math.ceil(4 * n / len(paths)))
    det = mining_detector(model, params)
    out: list[np.ndarray] = []
    have = 0
    res = MiningResult(np.zeros((0, h, w), np.uint8))
    bad: set[str] = set()
    visits = _schedule(len(paths), params, seed, stage)
    if executor is None:
        results: Iterator[tuple[int, int, Any]] = (
            (p, k, None if (img := cache.get(paths[k])) is None
             else scan_visit(img, p, k, det, params, seed, stage, per_image))
            for p, k in visits)
    else:
        from .tasks import scan_visits

        results = scan_visits(executor, model, paths, visits, params=params, seed=seed,
                              stage=stage, per_image=per_image)
    with contextlib.closing(results):
        for p, k, found in results:
            res.passes = p + 1
            if found is None:
                bad.add(paths[k])
                continue
            res.n_images_visited += 1
            wins, n_scan, n_acc = found
            res.n_scanned += n_scan
            res.n_accepted += n_acc
            if len(wins):
                wins = wins[: n - have]
                out.append(wins)
                have += len(wins)
            if have >= n:
                break
            if (stop_ratio is not None and res.n_scanned * stop_ratio >= n
                    and res.n_accepted <= stop_ratio * res.n_scanned):
                res.target_reached = True
                break
        else:
            res.exhausted = have < n
    res.windows = (np.ascontiguousarray(np.concatenate(out)) if out
                   else np.zeros((0, h, w), np.uint8))
    res.unreadable = sorted(bad)
    if len(res.unreadable) == len(paths):
        res.exhausted = True
    return res


def mining_summary(res: MiningResult) -> dict[str, Any]:
    """JSON-friendly figures of a mining run."""
    return {
        "n_found": int(len(res.windows)),
        "n_scanned": int(res.n_scanned),
        "n_accepted": int(res.n_accepted),
        "acceptance_ratio": float(res.acceptance_ratio),
        "n_images_visited": int(res.n_images_visited),
        "passes": int(res.passes),
        "exhausted": bool(res.exhausted),
        "target_reached": bool(res.target_reached),
        "n_unreadable": len(res.unreadable),
    }
