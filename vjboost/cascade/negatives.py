"""Hard-negative mining: background windows that the current cascade still accepts.

Before each stage the trainer needs ``n`` negative windows that pass every stage trained so far.
A :class:`NegativePool` supplies them for the whole run, so that mining does not restart from zero
at every stage:

* **the pool** keeps the windows found so far that the cascade still accepts (the previous
  stage's negatives and any surplus). Before stage ``k`` it is re-checked against stage ``k - 1``
  only (:class:`~vjboost.cascade.runner.CascadeRunner` on the window stack, from
  ``first_stage=k - 1``): the earlier stages accepted those windows already;
* **fresh scanning** only tops the pool up to ``n``. The backgrounds are cut into *units*
  ``(image, pass)``; a per-image cursor (passes done, saved in checkpoints) moves forward only, so
  no window is scanned twice over the run;
* a pass ``p`` of an image is its **augmentation** ``p div step²`` (one of the 8 mirror / 90°
  rotations, optionally shrunk by ``sqrt(scale_factor)`` — an extra pyramid offset between the
  detector's scales — and a seeded gamma change) and its **grid offset** ``o = p mod step²``:
  the windows at columns ``x ≡ o mod step`` and rows ``y ≡ o div step`` (mod ``step``) of every
  level of the augmented image's :class:`~vjboost.cascade.scan.Pyramid`. The ``step²`` offsets
  of an augmentation cover each of its windows exactly once;
* a **unit** ``(image, p, g)`` scans the ``g`` consecutive passes ``p .. p + g - 1`` of one
  augmentation, ``g`` one of ``1``, ``step`` (one row offset, every column) or ``step²`` (every
  window): one pass while the cascade still accepts many windows, all of them in one scan once
  it accepts few, so that the image's pyramid and integral channels — most of a sparse scan's
  cost — are computed once for many windows. :func:`scan_unit` is a pure function of
  ``(model, image path, p, g, params, seed)`` and scans as the detector scans
  (:class:`~vjboost.cascade.detector.CascadeDetector`), so a window is accepted exactly when
  detection would accept it. At most ``per_image`` accepted windows are kept per unit (a seeded
  choice), so negatives come from many images rather than from the first few.

The schedule is a pure function of ``(params, image list, seed)`` and of the scans so far: pass
``p`` visits the images whose cursor is ``p`` in the order of a keyed hash of
``(seed, p, file name)`` (adding backgrounds on resume does not reorder the others; moving them
to another folder changes nothing). Units are scanned in batches of ``params.batch``; the first
batch of a stage scans single passes, and each later batch takes the largest ``g`` whose
expected accepted windows per unit (from the stage's acceptance so far) stay within twice
``per_image``. A batch is always consumed whole, in unit order, so the result does not depend on
how (or where, with an ``executor``) the units of a batch run, nor on the order they complete.

The acceptance ratio is ``accepted / scanned`` over the fresh windows scanned for a stage (an
estimate of the cascade's false-alarm rate on background windows); :meth:`NegativePool.supply`
estimates how many distinct windows the backgrounds can still supply.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .._io import atomic_open, read_npy
from .._memory import available_memory
from .._parallel import Executor, ThreadExecutor
from .._threads import resolve_threads
from ..io import ImageReadError, read_image
from .checkpoint import array_digest
from .detector import CascadeDetector
from .model import CascadeModel
from .model_io import built_from_model_json, model_json
from .runner import CascadeRunner
from .scan import Pyramid, check_min_std, check_scale_factor

__all__ = [
    "AUGMENTATIONS",
    "ImageCache",
    "MiningParams",
    "MiningProgress",
    "MiningResult",
    "NegativePool",
    "UnitScan",
    "UnitScanner",
    "mine_chunk",
    "mine_negatives",
    "mining_summary",
    "scan_unit",
    "scan_units",
    "unit_grid",
    "unit_groups",
]

#: background augmentations, one per block of ``step²`` passes: (mirror, quarter turns, shrunk by
#: sqrt(scale_factor)). The first is the plain image; gamma is drawn per unit for all the others.
AUGMENTATIONS: tuple[tuple[bool, int, bool], ...] = tuple(
    (m, r, s) for s in (False, True) for m in (False, True) for r in (0, 1, 3, 2))


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
        Accepted windows kept per unit (image and pass) (default ``max(4, ceil(4 n / n_images))``).
    max_passes : int, optional
        Passes over every image before the backgrounds count as exhausted (default: every grid
        offset of every augmentation, ``step² * len(AUGMENTATIONS)``, or ``step²`` without
        augmentation).
    augment : bool, default=True
        Use the augmented passes (:data:`AUGMENTATIONS`) once the plain grid offsets are used up.
    max_gamma : float, default=1.6
        Augmented passes change the grey levels by a gamma drawn log-uniformly in
        ``[1 / max_gamma, max_gamma]`` (1: no gamma change).
    batch : int, default=16
        Units scanned per batch (a batch is consumed whole; part of the schedule, so part of the
        result).
    min_std : float, optional
        The σ gate of the scan in grey levels: windows whose standard deviation is at most this
        are never negatives (default: the model's own, ``CascadeDetector(min_std="model")``:
        the gate it declares, else OpenCV's 10). Train with the gate the cascade will detect
        with.
    """

    window: tuple[int, int]
    scale_factor: float = 1.25
    step: int | None = None
    max_per_image: int | None = None
    max_passes: int | None = None
    augment: bool = True
    max_gamma: float = 1.6
    batch: int = 16
    min_std: float | None = None

    def __post_init__(self) -> None:
        h, w = (int(v) for v in self.window)
        if h < 1 or w < 1:
            raise ValueError(f"window: expected positive (height, width), got {self.window}")
        object.__setattr__(self, "window", (h, w))
        check_scale_factor(self.scale_factor)
        if min(h, w) * (self.scale_factor - 1.0) < 1.5:
            raise ValueError(
                f"scale_factor: {self.scale_factor} is too close to 1 for a {w}x{h} window "
                f"(successive scales must change the window size; use >= "
                f"{1 + 1.5 / min(h, w):.3f})")
        for name in ("step", "max_per_image", "max_passes", "batch"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer)
                                  or v < 1):
                raise ValueError(f"{name}: expected a positive integer or None, got {v!r}")
        if not (isinstance(self.max_gamma, int | float) and 1.0 <= self.max_gamma <= 4.0):
            raise ValueError(f"max_gamma: expected a number in [1, 4], got {self.max_gamma!r}")
        if self.min_std is not None:
            check_min_std(self.min_std)

    @property
    def grid_step(self) -> int:
        return int(self.step) if self.step is not None else max(1, min(self.window) // 4)

    @property
    def n_passes(self) -> int:
        if self.max_passes is not None:
            return int(self.max_passes)
        return self.grid_step ** 2 * (len(AUGMENTATIONS) if self.augment else 1)

    def per_image(self, n: int, n_images: int) -> int:
        """Accepted windows kept per unit when ``n`` negatives are wanted from ``n_images``.

        Parameters
        ----------
        n : int
            Negatives wanted.
        n_images : int
            Background images they come from.

        Returns
        -------
        int
            ``max_per_image`` when set, else ``max(4, ceil(4 n / n_images))``: negatives come
            from many images rather than from the first few.
        """
        return int(self.max_per_image or max(4, math.ceil(4 * n / max(1, n_images))))


# ------------------------------------------------------------------------------------------------
# One unit: (image, pass) -> accepted windows
# ------------------------------------------------------------------------------------------------


def _key(seed: int, p: int, path: str) -> int:
    """A 63-bit keyed hash of ``(seed, pass, file name)``: the visiting order and per-unit
    seeds. The file name, not the path: the same backgrounds in another folder give the same
    cascade."""
    name = os.path.basename(path)
    h = hashlib.blake2b(f"{int(seed)}\0{int(p)}\0{name}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1


def augment_image(img: np.ndarray, p: int, params: MiningParams, seed: int, path: str
                  ) -> np.ndarray:
    """The image pass ``p`` scans, augmented (:data:`AUGMENTATIONS`). Pure function of its
    arguments.

    Parameters
    ----------
    img : ndarray of uint8, shape (H, W)
        The gray background image.
    p : int
        Pass index: ``p div step²`` is the augmentation (``p mod step²`` the grid offset, see
        :func:`unit_grid`).
    params : MiningParams
        Grid step, scale factor and ``max_gamma``.
    seed : int
        Run seed (the gamma of an augmentation is drawn from ``(seed, its first pass, file
        name)``).
    path : str
        The image's path (only its file name enters the seed).

    Returns
    -------
    ndarray of uint8, shape (H', W'), C-contiguous
        Mirrored / rotated / shrunk / gamma-mapped as the pass says.
    """
    v = p // params.grid_step ** 2
    if v:
        mirror, turns, shrink = AUGMENTATIONS[v % len(AUGMENTATIONS)]
        if mirror:
            img = img[:, ::-1]
        if turns:
            img = np.rot90(img, turns)
        if shrink:
            s = math.sqrt(params.scale_factor)
            size = (max(1, round(img.shape[1] / s)), max(1, round(img.shape[0] / s)))
            img = cv2.resize(np.ascontiguousarray(img), size, interpolation=cv2.INTER_AREA)
        if params.max_gamma > 1.0:
            # one gamma per augmentation (drawn from its first pass), so that its passes are
            # grid offsets of one image
            rng = np.random.default_rng([_key(seed, v * params.grid_step ** 2, path), 0x67616D])
            g = float(np.exp(rng.uniform(-1.0, 1.0) * math.log(params.max_gamma)))
            lut = np.clip(np.round(255.0 * (np.arange(256) / 255.0) ** g), 0, 255)
            img = lut.astype(np.uint8)[img]
    return np.ascontiguousarray(img)


def unit_groups(step: int) -> tuple[int, ...]:
    """The pass counts a unit may scan at once, largest first: ``(step², step, 1)``."""
    return tuple(sorted({step * step, step, 1}, reverse=True))


def unit_grid(p: int, g: int, step: int) -> tuple[tuple[int, int], int, int]:
    """The window grid of the unit of passes ``p .. p + g - 1``: ``((x0, y0), step_x, step_y)``
    in every level of the pass's augmented image.

    Parameters
    ----------
    p : int
        First pass; its grid offset ``o = p mod step²`` is column ``o mod step``, row
        ``o div step``.
    g : int
        Passes in the unit: 1 (one offset), ``step`` (one row offset, every column; ``p`` a
        multiple of ``step``) or ``step²`` (every window; ``p`` a multiple of ``step²``).
    step : int
        The mining grid step.

    Returns
    -------
    (x0, y0), step_x, step_y

    Examples
    --------
    >>> unit_grid(7, 1, 5), unit_grid(5, 5, 5), unit_grid(25, 25, 5)
    (((2, 1), 5, 5), ((0, 1), 1, 5), ((0, 0), 1, 1))
    """
    o = p % (step * step)
    if g == 1:
        return (o % step, o // step), step, step
    if g == step and o % step == 0:
        return (0, o // step), 1, step
    if g == step * step and o == 0:
        return (0, 0), 1, 1
    raise ValueError(f"g: {g} passes from pass {p} do not form a unit of grid step {step}")


@dataclass
class UnitScan:
    """What scanning one unit gave: kept windows (uint8, (k, h, w)), windows scanned, accepted."""

    windows: np.ndarray
    n_scanned: int
    n_accepted: int
    readable: bool = True


def scan_unit(model: CascadeModel | None, path: str, p: int, *, params: MiningParams, seed: int,
              per_image: int, g: int = 1, image: np.ndarray | None = None,
              detector: CascadeDetector | None = None) -> UnitScan:
    """Scan passes ``p .. p + g - 1`` of one background image: the windows ``model`` accepts
    (pure function).

    Parameters
    ----------
    model : CascadeModel or None
        The cascade so far (``None``: every window is accepted).
    path : str
        The background image (read unless ``image`` is given).
    p : int
        The first pass (augmentation and grid offset, see the module docstring).
    params : MiningParams
    seed : int
    per_image : int
        Accepted windows kept at most (a seeded choice among them).
    g : int, default=1
        Passes scanned (:func:`unit_grid`).
    image : ndarray of uint8, shape (H, W), optional
        The decoded image of ``path`` (speed only).
    detector : CascadeDetector, optional
        ``model``'s mining detector (speed only; see :meth:`UnitScanner.detector`).

    Returns
    -------
    UnitScan
    """
    if image is None:
        try:
            image = read_image(path)
        except ImageReadError:
            return UnitScan(np.zeros((0, *params.window), np.uint8), 0, 0, readable=False)
    img = augment_image(image, p, params, seed, path)
    rng = np.random.default_rng([_key(seed, p, path), 0x6E6567, int(g)])
    offset, sx, sy = unit_grid(p, g, params.grid_step)
    pyr = Pyramid(params.window, (img.shape[1], img.shape[0]), scale_factor=params.scale_factor,
                  mode="clean", step=sx, offset=offset, row_step=sy)
    if model is None:
        n_scan = n_acc = pyr.n_windows
        # every window is accepted: draw the kept ones among all grid windows
        pos = pyr.positions(np.arange(n_scan) if n_scan <= per_image else np.sort(
            rng.choice(n_scan, per_image, replace=False)))
    else:
        det = detector if detector is not None else mining_detector(model, params)
        n_scan = pyr.n_windows
        _, _, pos = det.raw_windows(img, return_positions=True, pyramid=pyr)
        n_acc = len(pos)
        if n_acc > per_image:
            pos = pos[np.sort(rng.choice(n_acc, per_image, replace=False))]
    return UnitScan(pyr.windows(img, pos), int(n_scan), int(n_acc))


def mining_detector(model: CascadeModel | None, params: MiningParams) -> CascadeDetector | None:
    """The detector that scans backgrounds for ``model`` (every window, no grouping).

    Parameters
    ----------
    model : CascadeModel or None
        The cascade trained so far.
    params : MiningParams
        Scale factor, grid step and σ gate of the scan.

    Returns
    -------
    CascadeDetector or None
        A one-thread detector in ``clean`` mode; ``None`` before the first stage (every
        window is accepted).
    """
    if model is None:
        return None
    # one small image per kernel call: threads do not pay (and suffer on a busy machine)
    # every window of the grid (a model's declared coarse-to-fine scan would skip some)
    return CascadeDetector(model, scale_factor=params.scale_factor, min_neighbors=0,
                           mode="clean", step=params.grid_step, skip_after_stage0=False,
                           grouping="none", threads=1, coarse_to_fine=None,
                           min_std="model" if params.min_std is None else params.min_std)


class UnitScanner:
    """:func:`scan_unit` for one model, as a picklable callable ``scanner((path, p, g))``.

    The detector and the image cache are rebuilt where the scanner is unpickled (a worker), so
    only the model, the parameters and the seed travel.
    """

    def __init__(self, model: CascadeModel | None, *, params: MiningParams, seed: int,
                 per_image: int, cache: ImageCache | None = None) -> None:
        self.model, self.params, self.seed, self.per_image = model, params, int(seed), per_image
        self.cache = cache
        self._det: CascadeDetector | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "cache": None, "_det": None}

    def detector(self) -> CascadeDetector | None:
        if self._det is None and self.model is not None:
            self._det = mining_detector(self.model, self.params)
        return self._det

    def __call__(self, unit: tuple[str, int, int]) -> UnitScan:
        path, p, g = unit
        img = None
        if self.cache is not None:
            img = self.cache.get(path)
            if img is None:
                return UnitScan(np.zeros((0, *self.params.window), np.uint8), 0, 0, False)
        return scan_unit(self.model, path, int(p), params=self.params, seed=self.seed,
                         per_image=self.per_image, g=int(g), image=img,
                         detector=self.detector())


# ------------------------------------------------------------------------------------------------
# Results and progress
# ------------------------------------------------------------------------------------------------


@dataclass
class MiningResult:
    """Negatives mined for one stage.

    Attributes
    ----------
    windows : ndarray of uint8, shape (k, height, width)
        ``k <= n`` windows accepted by the cascade: survivors of the pool first, then fresh ones
        in the order they were found.
    n_scanned : int
        Fresh windows the cascade was run on for this stage.
    n_accepted : int
        Fresh windows the cascade accepted (before the per-unit cap).
    n_images_visited : int
        Units scanned (an image scanned in two passes counts twice).
    passes : int
        Highest pass reached (1-based).
    exhausted : bool
        Every unit of every image was used up before ``n`` windows were found.
    target_reached : bool
        Stopped early because the acceptance ratio fell to ``stop_ratio`` over at least
        ``n / stop_ratio`` scanned windows (the cascade's false-alarm target is met).
    budget_reached : bool
        Stopped with fewer than ``n`` windows because ``max_scanned`` fresh windows were
        scanned (the stage's mining budget).
    unreadable : list of str
        Images that could not be read (skipped).
    n_from_pool, pool_checked : int
        Windows carried from earlier stages that the new stage still accepts, of those checked.
    supply : int
        Estimated distinct windows the backgrounds can still supply (:meth:`NegativePool.supply`).
    seconds : float
        Wall time of the fill.
    """

    windows: np.ndarray
    n_scanned: int = 0
    n_accepted: int = 0
    n_images_visited: int = 0
    passes: int = 0
    exhausted: bool = False
    target_reached: bool = False
    budget_reached: bool = False
    unreadable: list[str] = field(default_factory=list)
    n_from_pool: int = 0
    pool_checked: int = 0
    supply: int = 0
    seconds: float = 0.0

    @property
    def acceptance_ratio(self) -> float:
        """``n_accepted / n_scanned`` over the fresh windows (1.0 when nothing was scanned)."""
        return self.n_accepted / self.n_scanned if self.n_scanned else 1.0

    def describe(self) -> str:
        """One line: found, carried, acceptance ratio, throughput, what is left."""
        rate = self.n_scanned / self.seconds if self.seconds > 0 else 0.0
        return (f"{len(self.windows)} ({self.n_from_pool} carried of {self.pool_checked}), "
                f"acceptance ratio {self.acceptance_ratio:.3g} ({self.n_scanned} new windows "
                f"scanned, {rate:.3g}/s, {self.seconds:.1f} s; about {self.supply:.3g} windows "
                "left in the backgrounds" + (f"; {self.shortfall})" if self.budget_reached
                                             else ")"))

    @property
    def shortfall(self) -> str:
        """Why a fill has fewer than ``n`` windows: its budget or the backgrounds ran out."""
        return "mining budget reached" if self.budget_reached else "backgrounds exhausted"


@dataclass(frozen=True)
class MiningProgress:
    """Where a fill stands, passed to ``progress`` callbacks after every batch.

    Attributes
    ----------
    stage, found, wanted : int
        The stage being mined for; negatives in hand (pool survivors included) and wanted.
    scanned, accepted : int
        Fresh windows scanned and accepted so far for this stage.
    seconds : float
        Since the fill started.
    supply : int
        Estimated distinct windows the backgrounds can still supply.
    max_scanned : int, optional
        The stage's mining budget in fresh windows (None: none).
    """

    stage: int
    found: int
    wanted: int
    scanned: int
    accepted: int
    seconds: float
    supply: int
    max_scanned: int | None = None

    @property
    def windows_per_second(self) -> float:
        return self.scanned / self.seconds if self.seconds > 0 else 0.0

    @property
    def acceptance_ratio(self) -> float:
        return self.accepted / self.scanned if self.scanned else 1.0

    @property
    def windows_needed(self) -> float:
        """Estimated windows still to scan for the stage (at the acceptance ratio so far, and
        no more than the budget leaves)."""
        missing = max(0, self.wanted - self.found)
        if missing == 0:
            return 0.0
        left = math.inf if self.max_scanned is None else max(0, self.max_scanned - self.scanned)
        if not self.accepted:
            return math.nan if math.isinf(left) else float(left)
        return float(min(missing / self.acceptance_ratio, left))

    @property
    def seconds_needed(self) -> float:
        """Estimated seconds still to spend on the stage's mining."""
        r = self.windows_per_second
        return self.windows_needed / r if r > 0 else math.nan


# ------------------------------------------------------------------------------------------------
# The pool
# ------------------------------------------------------------------------------------------------


class NegativePool:
    """Negatives carried from stage to stage, and where each background's scan stopped.

    Parameters
    ----------
    image_paths : sequence of path-like
        Background images (no object of the class).
    params : MiningParams
    seed : int
    n : int
        Negatives per stage (sets the per-unit cap, :meth:`MiningParams.per_image`).
    cache : ImageCache, optional
        Decoded images shared between fills (speed only).

    Attributes
    ----------
    windows : ndarray of uint8, shape (m, height, width)
        The pool: windows the cascade accepted when they were last checked.
    cursor : dict of str to int
        Passes done per image (``0`` for images not scanned yet).
    checked_stages : int
        Stages the pool's windows are known to pass.
    """

    def __init__(self, image_paths: Sequence[str | os.PathLike[str]], params: MiningParams, *,
                 seed: int = 0, n: int, cache: ImageCache | None = None) -> None:
        self.paths = [os.fspath(p) for p in image_paths]
        if not self.paths:
            raise ValueError("image_paths: no background image given")
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n: expected a positive integer, got {n!r}")
        self.params, self.seed, self.n = params, int(seed), int(n)
        self.cache = cache if cache is not None else ImageCache()
        self.windows = np.zeros((0, *params.window), np.uint8)
        self.cursor: dict[str, int] = {p: 0 for p in self.paths}
        self.unit_windows: dict[str, int] = {}  # windows of an image's last unit (supply estimate)
        self.unreadable: set[str] = set()
        self.checked_stages = 0
        self._order: dict[int, list[str]] = {}
        self._pos = 0

    # -- schedule -------------------------------------------------------------------------------

    def _next_units(self, count: int, g: int = 1) -> list[tuple[str, int, int]]:
        """The next ``count`` units ``(path, pass, passes)`` of the schedule, of ``g`` passes
        each where an image's cursor allows (fewer units when the backgrounds run dry)."""
        out: list[tuple[str, int, int]] = []
        n_passes = self.params.n_passes
        groups = [k for k in unit_groups(self.params.grid_step) if k <= g]
        while len(out) < count:
            live = [c for q, c in self.cursor.items() if q not in self.unreadable]
            p = min(live, default=n_passes)
            if p >= n_passes:
                break
            if p not in self._order:  # pass p's visiting order, computed once
                self._order = {p: sorted(self.paths, key=partial(_key, self.seed, p))}
                self._pos = 0
            order = self._order[p]
            while self._pos < len(order) and len(out) < count:
                q = order[self._pos]
                self._pos += 1
                if self.cursor[q] == p and q not in self.unreadable:
                    k = next(k for k in groups if p % k == 0 and p + k <= n_passes)
                    out.append((q, p, k))
                    self.cursor[q] = p + k
        return out

    def _group(self, n_scanned: int, n_accepted: int, n_passes: int, per_image: int) -> int:
        """Passes per unit for the next batch: the most whose expected accepted windows
        (``n_accepted / n_passes`` per pass so far this stage) stay within ``2 per_image``;
        one pass until this stage has scanned something."""
        if n_passes == 0 or n_scanned == 0:
            return 1
        per_pass = n_accepted / n_passes
        return next((k for k in unit_groups(self.params.grid_step)
                     if per_pass * k <= 2 * per_image), 1)

    def supply(self) -> int:
        """Estimated distinct windows the backgrounds can still supply (units not scanned yet,
        each counted as its image's last scanned unit, or the mean of those)."""
        n_passes = self.params.n_passes
        seen = self.unit_windows
        mean = float(np.mean(list(seen.values()))) if seen else 0.0
        return int(sum((n_passes - c) * seen.get(q, mean) for q, c in self.cursor.items()
                       if q not in self.unreadable))

    # -- filling --------------------------------------------------------------------------------

    def fill(self, model: CascadeModel | None, *, stage: int = 0,
             stop_ratio: float | None = None, max_scanned: int | None = None,
             progress: Callable[[MiningProgress], None] | None = None,
             executor: Any = None, threads: int | None = None) -> MiningResult:
        """The ``n`` negatives of stage ``stage`` (= ``model.n_stages``): the pool re-checked
        against the stages it has not seen, topped up by scanning new units.

        Parameters
        ----------
        model : CascadeModel or None
            The cascade trained so far (``None`` before the first stage).
        stage : int
            For progress reports.
        stop_ratio : float, optional
            Stop early once at least ``n / stop_ratio`` fresh windows were scanned with an
            acceptance ratio ``<= stop_ratio`` (the cascade's false-alarm target is met).
        max_scanned : int, optional
            The mining budget: stop, with fewer than ``n`` windows (``budget_reached``), after
            the batch in which the fresh windows scanned reach ``max_scanned``. A batch is
            consumed whole, so the budget is checked between batches and the result does not
            depend on how the units run.
        progress : callable, optional
            ``progress(MiningProgress)`` after the pool check and every batch.
        executor : vjboost._parallel.Executor, optional
            Runs the units of each batch as tasks (threads, Dask workers;
            :func:`scan_units`); a batch is consumed in unit order, so the
            result is the same as without it. Default: in this process, on ``threads``
            threads (one unit per thread at a time).
        threads : int, optional
            Threads of the pool re-check, and of the scan without an ``executor`` (default:
            every numba thread).

        Returns
        -------
        MiningResult
        """
        t0 = time.perf_counter()
        n, params = self.n, self.params
        n_stages = 0 if model is None else model.n_stages
        if model is not None and tuple(model.window_shape) != params.window:
            raise ValueError(f"model: window {model.window_shape} differs from the mining "
                             f"window {params.window}")
        per_image = params.per_image(n, len(self.paths))
        scanner = UnitScanner(model, params=params, seed=self.seed, per_image=per_image,
                              cache=self.cache if executor is None else None)
        res = MiningResult(self.windows[:0])
        res.pool_checked = len(self.windows)
        if len(self.windows) and n_stages > self.checked_stages:
            # with the detector's sigma gate: windows drawn before the first stage (every
            # window accepted) may be flat ones that detection never evaluates
            keep = CascadeRunner(model, first_stage=self.checked_stages, threads=threads
                                 ).accepts(self.windows, min_std=scanner.detector().min_std)
            self.windows = self.windows[keep]
        self.checked_stages = n_stages
        res.n_from_pool = len(self.windows)
        parts = [self.windows]
        have = len(self.windows)

        def report() -> None:
            if progress is not None:
                progress(MiningProgress(stage, min(have, n), n, res.n_scanned, res.n_accepted,
                                        time.perf_counter() - t0, self.supply(), max_scanned))

        report()
        own = None
        if executor is None and resolve_threads(threads) > 1:
            # units are independent and their kernels release the GIL: one per thread, with
            # this process's scanner (detector and image cache shared by the threads)
            executor = own = ThreadExecutor(resolve_threads(threads))
            scanner.detector()
        n_passes = 0
        try:
            while have < n:
                units = self._next_units(params.batch, self._group(res.n_scanned, res.n_accepted,
                                                                   n_passes, per_image))
                if not units:
                    res.exhausted = True
                    break
                if executor is None:
                    scans: Iterable[UnitScan] = map(scanner, units)
                elif executor is own:
                    scans = own.imap(scanner, units)
                else:
                    scans = scan_units(executor, model, units, params=params, seed=self.seed,
                                       per_image=per_image)
                for (path, p, g), sc in zip(units, scans, strict=True):
                    res.passes = max(res.passes, p + g)
                    if not sc.readable:
                        self.unreadable.add(path)
                        continue
                    res.n_images_visited += 1
                    n_passes += g
                    self.unit_windows[path] = sc.n_scanned // g
                    res.n_scanned += sc.n_scanned
                    res.n_accepted += sc.n_accepted
                    if len(sc.windows):
                        parts.append(sc.windows)
                        have += len(sc.windows)
                report()
                if (stop_ratio is not None and have < n and res.n_scanned * stop_ratio >= n
                        and res.n_accepted <= stop_ratio * res.n_scanned):
                    res.target_reached = True
                    break
                if max_scanned is not None and have < n and res.n_scanned >= max_scanned:
                    res.budget_reached = True
                    break
        finally:
            if own is not None:
                own.close()
        self.windows = np.ascontiguousarray(np.concatenate(parts))
        res.windows = self.windows[:n]
        res.unreadable = sorted(self.unreadable)
        if len(self.unreadable) == len(self.paths):
            res.exhausted = True
        res.supply = self.supply()
        res.seconds = time.perf_counter() - t0
        return res

    # -- checkpoints ----------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """JSON-friendly state but the windows (saved apart, see :meth:`from_state`)."""
        return {"cursor": dict(self.cursor), "unit_windows": dict(self.unit_windows),
                "unreadable": sorted(self.unreadable), "checked_stages": self.checked_stages,
                "n_windows": int(len(self.windows)), "digest": array_digest(self.windows)}

    def restore(self, state: dict[str, Any], windows: np.ndarray) -> None:
        """Continue from :meth:`state` and its windows (images added since start at pass 0).

        Parameters
        ----------
        state : dict
            A :meth:`state` record (cursors, counts, the windows' digest).
        windows : array-like of uint8, shape (k, height, width)
            The pool's windows saved with it.

        Raises
        ------
        ValueError
            The windows are not uint8 windows of the run's shape or do not match the state's
            digest.
        """
        windows = np.asarray(windows)
        if windows.dtype != np.uint8 or windows.ndim != 3 or \
                windows.shape[1:] != tuple(self.params.window):
            raise ValueError(f"the negative pool holds {windows.dtype} windows of shape "
                             f"{windows.shape[1:]}, not uint8 windows of shape "
                             f"{tuple(self.params.window)}")
        if array_digest(windows) != state["digest"]:
            raise ValueError("the saved negative pool does not match its checkpoint")
        self.windows = np.ascontiguousarray(windows)
        saved = {str(k): int(v) for k, v in state["cursor"].items()}
        self.cursor = {q: saved.get(q, 0) for q in self.paths}
        self.unit_windows = {str(k): int(v) for k, v in state.get("unit_windows", {}).items()}
        self.unreadable = set(state.get("unreadable", [])) & set(self.paths)
        self.checked_stages = int(state["checked_stages"])
        self._order, self._pos = {}, 0

    def save(self, folder: str | os.PathLike[str]) -> dict[str, Any]:
        """Write the windows to ``folder/negatives-<digest>.npy`` (atomically); returns the
        state to keep in the checkpoint (which names the file). Named by content, a file is
        never replaced by other windows: the checkpoint in place stays valid until the new one
        is written."""
        state = self.state()
        name = f"negatives-{state['digest']}.npy"
        with atomic_open(Path(folder) / name) as fh:
            np.save(fh, self.windows)
        return {**state, "file": name}

    def load(self, folder: str | os.PathLike[str], state: dict[str, Any]) -> None:
        """Continue from a state written by :meth:`save`.

        Parameters
        ----------
        folder : path-like
            The run's folder (where :meth:`save` wrote the windows).
        state : dict
            The state :meth:`save` returned (names the ``.npy`` file).

        Raises
        ------
        InputError
            The windows file cannot be read (the message names it).
        ValueError
            The windows do not match the state.
        """
        windows = read_npy(Path(folder) / state["file"], what="negative pool")
        self.restore(state, windows)


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
        self._lock = threading.Lock()  # units of a batch may read it from several threads

    def get(self, path: str) -> np.ndarray | None:
        """The gray image, or ``None`` when it cannot be read."""
        with self._lock:
            if path in self._data:
                self._data.move_to_end(path)
                return self._data[path]
        try:
            img = read_image(path)
        except ImageReadError:
            img = None
        size = 0 if img is None else img.nbytes
        with self._lock:
            if size <= self.budget and path not in self._data:
                self._data[path] = img
                self.nbytes += size
                while self.nbytes > self.budget and self._data:
                    _, old = self._data.popitem(last=False)
                    self.nbytes -= 0 if old is None else old.nbytes
        return img


def mine_negatives(
    model: CascadeModel | None,
    image_paths: Sequence[str | os.PathLike[str]],
    n: int,
    *,
    params: MiningParams,
    seed: int = 0,
    stop_ratio: float | None = None,
    cache: ImageCache | None = None,
    executor: Any = None,
) -> MiningResult:
    """Collect ``n`` background windows accepted by ``model``, from a fresh
    :class:`NegativePool` (no carried windows, every cursor at pass 0).

    Parameters
    ----------
    model : CascadeModel or None
        The cascade trained so far (``None``: every window is accepted).
    image_paths : sequence of path-like
        Background images (no object of the class). Unreadable ones are skipped and reported.
    n : int
        Negatives wanted.
    params : MiningParams
    seed : int
    stop_ratio : float, optional
        See :meth:`NegativePool.fill`.
    cache : ImageCache, optional
        Decoded images shared between calls (speed only).
    executor : vjboost._parallel.Executor, optional
        See :meth:`NegativePool.fill`.

    Returns
    -------
    MiningResult

    Examples
    --------
    >>> import numpy as np, cv2, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> path = os.path.join(d, "bg.png")
    >>> _ = cv2.imwrite(path, np.random.default_rng(0).integers(0, 256, (40, 50), np.uint8))
    >>> res = mine_negatives(None, [path], 30, params=MiningParams((12, 12)))
    >>> res.windows.shape, res.acceptance_ratio
    ((30, 12, 12), 1.0)
    """
    if model is not None and tuple(model.window_shape) != params.window:
        raise ValueError(f"model: window {model.window_shape} differs from the mining window "
                         f"{params.window}")
    pool = NegativePool(image_paths, params, seed=seed, n=n, cache=cache)
    return pool.fill(model, stage=0 if model is None else model.n_stages,
                     stop_ratio=stop_ratio, executor=executor)


# ------------------------------------------------------------------------------------------------
# Mining on an executor (in-process, threads or Dask workers)
# ------------------------------------------------------------------------------------------------

# the backgrounds a worker process has decoded (speed only)
_IMAGES_LOCK = threading.Lock()
_IMAGES: ImageCache | None = None


def _worker_image(path: str) -> np.ndarray | None:
    global _IMAGES
    with _IMAGES_LOCK:
        if _IMAGES is None:
            _IMAGES = ImageCache()
    return _IMAGES.get(path)


def mine_chunk(units: Sequence[tuple[str, int, int]], model: bytes | None, params: MiningParams,
               seed: int, per_image: int) -> list[UnitScan]:
    """Scan a chunk of mining units (the unit function of distributed mining).

    Parameters
    ----------
    units : sequence of (path, pass, passes)
    model : bytes or None
        :func:`~vjboost.cascade.model_io.model_json` of the cascade so far (``None`` before
        the first stage).
    params, seed, per_image
        As in :func:`scan_unit`.

    Returns
    -------
    list of UnitScan
        One per unit, in order (``readable`` False for an unreadable image).
    """
    det = None if model is None else built_from_model_json(
        model, repr(params), lambda m: mining_detector(m, params))
    out = []
    for path, p, g in units:
        img = _worker_image(path)
        out.append(UnitScan(np.zeros((0, *params.window), np.uint8), 0, 0, readable=False)
                   if img is None else
                   scan_unit(None if det is None else det.model, path, int(p), params=params,
                             seed=seed, per_image=per_image, g=int(g), image=img,
                             detector=det))
    return out


def scan_units(executor: Executor, model: CascadeModel | None,
               units: Sequence[tuple[str, int, int]], *, params: MiningParams, seed: int,
               per_image: int, chunk: int = 4) -> list[UnitScan]:
    """The scans of mining ``units`` computed on ``executor``, in the order of ``units``
    (what :meth:`NegativePool.fill` consumes batch by batch).

    Parameters
    ----------
    executor : Executor
        Runs :func:`mine_chunk` on chunks of units (serial, threads or Dask).
    model : CascadeModel or None
        The cascade so far (``None`` before the first stage), shared once with the workers.
    units : sequence of (str, int, int)
        ``(background path, first pass, passes)`` of each unit.
    params, seed, per_image
        As in :func:`scan_unit`.
    chunk : int, default 4
        Units per task.

    Returns
    -------
    list of UnitScan
        One per unit, in order.
    """
    data = executor.share(None if model is None else model_json(model))
    chunks = [list(units[i:i + chunk]) for i in range(0, len(units), chunk)]
    out: list[UnitScan] = []
    for part in executor.imap(mine_chunk, chunks, data, params, int(seed), int(per_image)):
        out.extend(part)
    return out


def mining_summary(res: MiningResult) -> dict[str, Any]:
    """JSON-friendly figures of a mining run."""
    return {
        "n_found": int(len(res.windows)),
        "n_from_pool": int(res.n_from_pool),
        "pool_checked": int(res.pool_checked),
        "n_scanned": int(res.n_scanned),
        "n_accepted": int(res.n_accepted),
        "acceptance_ratio": float(res.acceptance_ratio),
        "n_images_visited": int(res.n_images_visited),
        "passes": int(res.passes),
        "exhausted": bool(res.exhausted),
        "target_reached": bool(res.target_reached),
        "budget_reached": bool(res.budget_reached),
        "n_unreadable": len(res.unreadable),
        "supply": int(res.supply),
    }
