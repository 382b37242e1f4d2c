"""Viola–Jones cascade training: boosted stages, hard-negative mining, checkpoints.

:class:`CascadeTrainer` trains a cascade stage by stage, as ``opencv_traincascade`` does:

1. **Positives.** The first ``num_pos`` positives of the pool that every stage trained so far
   accepts (positives rejected by earlier stages are replaced by the next ones of the pool).
2. **Negatives.** ``num_neg`` background windows the cascade still accepts: the negative pool
   carried from the previous stage, re-checked against that stage only, topped up by scanning
   backgrounds where their scan stopped (:class:`vjboost.cascade.negatives.NegativePool`).
   Training stops when the acceptance ratio of the new windows is at most
   ``max_false_alarm ** num_stages / max_depth`` (the cascade's false-alarm target,
   traincascade's "required leaf false alarm rate") or when the backgrounds run dry.
3. **Stage.** Boosting (Gentle AdaBoost with stumps by default; any loss of
   :mod:`vjboost.boost.losses`, small trees, or a feature sampler of
   :mod:`vjboost.boost.sampling`) adds one weak learner per round; after each round the stage
   threshold is set from the positives' scores (:func:`stage_threshold`, OpenCV's
   ``isErrDesired``) and the stage ends once its false-alarm rate on the negatives is at most
   ``max_false_alarm`` or it has ``max_weak_count`` learners.
4. **Checkpoint** (atomic) after every stage; ``resume=True`` continues from it.

Every random choice of stage ``k`` is drawn from ``(seed, k)`` (mining: from ``seed`` and the
negative pool saved in the checkpoint), so a resumed run yields the same cascade as an
uninterrupted one. Memory is bounded by ``memory_budget`` (default :data:`DEFAULT_MEMORY` or 75 %
of the available memory if less): a fifth of it for decoded background images, the rest, less the
positives and the negative pool, for the stage's feature cache. Feature values of a stage are
precomputed as uint8 bins when the matrix fits (bin edges placed once per run and the matrix
carried from stage to stage, so that only the windows new to a stage are evaluated:
:mod:`vjboost.cascade.stage_matrix`), else streamed in blocks every round; a sampler evaluates
only the features it samples.

With ``reservoir=R`` (``vjtrain --reservoir R``) a stage never builds the feature matrix of its
``num_pos + num_neg`` windows: reservoir boosting (:mod:`vjboost.boost.reservoir`, Lefakis &
Fleuret 2013) draws ``R`` fresh windows per round from streams over the stage's positives and
mined negatives, keeps ``R`` of the ``2 R`` (GEEM by default) and fits the round's weak learner
on them; the stage threshold and false alarm are computed, as above, on all the stage's positives
and negatives, whose scores are updated with the features of each new learner only. Feature
memory is ``O(R × n_features)`` whatever ``num_pos`` and ``num_neg``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from .._limits import MAX_STAGES
from .._memory import check_memory, format_bytes, memory_budget
from .._threads import n_threads
from .._validation import check_in_range
from ..boost.binning import precompute, precompute_nbytes
from ..boost.losses import LOSSES
from ..boost.search import MatrixSearch, SampledSearch, StreamedSearch
from ..boost.source import PoolSource
from ..boost.weak import TreeShape
from ..features.base import FeatureFamily, get_family_class
from ..features.pool import FeaturePool
from .budget import check_training_memory
from .checkpoint import (
    CHECKPOINT_NAME,
    array_digest,
    checkpoint_stages,
    config_differences,
    damaged_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from .model import CascadeModel, Stage
from .negatives import ImageCache, MiningParams, MiningResult, NegativePool, mining_summary
from .progress import Callback, RunClock, mining_event, peak_rss, reset_peak_rss
from .runner import CascadeRunner
from .scan import OPENCV_MIN_STD
from .stage import StageResult, stage_false_alarm, stage_threshold, train_stage
from .stage_matrix import StageMatrix

__all__ = [
    "BOOST_TYPES",
    "CascadeTrainer",
    "StageResult",
    "TrainingError",
    "build_cascade_model",
    "make_pool",
    "stage_false_alarm",
    "stage_threshold",
    "train_stage",
]

#: OpenCV names of the losses (``stageParams/boostType``)
BOOST_TYPES = {"gentle": "GAB", "discrete": "DAB", "real": "RAB", "logit": "LB"}
#: family aliases accepted by ``features=``
FAMILY_ALIASES = {"lbp": "mblbp", "mb-lbp": "mblbp", "mb_lbp": "mblbp"}
#: settings that may change when resuming (the stop rule is re-evaluated with the new ones; the
#: mining budget and ``min_neg`` apply to the stages still to train, e.g. to go on past a stage
#: whose negatives ran out)
RESUMABLE_CHANGES = ("num_stages", "backgrounds", "mining_budget", "min_neg")
#: losses reservoir stages support (a least-squares weak learner on the reservoir)
RESERVOIR_LOSSES = ("gentle", "logit")
#: decoded background images kept by a reservoir run (bounded memory; speed only: the full
#: trainer keeps up to a quarter of the memory, which grows with the images mining visits)
RESERVOIR_IMAGE_CACHE = 64 * 1024**2
#: windows evaluated per call when a reservoir run scores all its positives / negatives
RESERVOIR_CHUNK = 4096
#: memory a run may use by default (``memory_budget``, ``vjtrain --memory``)
DEFAULT_MEMORY = 4 * 1024**3
#: bytes per feature evaluation a sampler's round may hold at its peak: its example draws
#: (int64, as many as the evaluations when one feature is left) and the block of feature values
#: (float32) with the edges' temporaries
_ROUND_BYTES = 16
#: share of the budget for decoded background images (speed only), and what the process itself
#: holds besides the caches (interpreter, numba, OpenCV)
IMAGE_CACHE_SHARE, BASE_MEMORY = 0.2, 512 * 1024**2


class TrainingError(InputError):
    """Training cannot start or continue (bad settings or data); the message says why."""


# ------------------------------------------------------------------------------------------------
# Pools and models
# ------------------------------------------------------------------------------------------------


def make_pool(features: Any, window_shape: tuple[int, int], *, haar_mode: str = "BASIC"
              ) -> FeaturePool:
    """A :class:`FeaturePool` from family names (``"haar,lbp,hog"``), families or a pool.

    ``"lbp"`` means multi-block LBP (``mblbp``, the family OpenCV's LBP cascades use).

    Parameters
    ----------
    features : str, FeatureFamily, sequence of them, or FeaturePool
        Comma-separated registered family names, family instances, or a ready pool (whose
        window must be ``window_shape``).
    window_shape : (height, width)
        Training window in pixels.
    haar_mode : {"BASIC", "CORE", "ALL"}, default="BASIC"
        OpenCV's Haar feature set, for a ``haar`` family built from its name.

    Returns
    -------
    FeaturePool

    Raises
    ------
    TrainingError
        An unknown family name, a pool for another window, or a family that reads colour
        windows (a cascade is trained on grey images).

    Examples
    --------
    >>> make_pool("haar,mblbp", (12, 12)).n_features > 0
    True
    >>> make_pool("color_hist", (12, 12))
    Traceback (most recent call last):
    ...
    vjboost.cascade.trainer.TrainingError: features: color_hist read colour windows, ...
    """
    if isinstance(features, FeaturePool):
        if tuple(features.window_shape) != tuple(window_shape):
            raise TrainingError(f"features: the pool's window {features.window_shape} differs "
                                f"from the training window {tuple(window_shape)}")
        return _grey_pool(features)
    if isinstance(features, FeatureFamily):
        features = [features]
    if isinstance(features, str):
        features = [s.strip() for s in features.split(",") if s.strip()]
    fams = []
    for f in features:
        if isinstance(f, FeatureFamily):
            fams.append(f)
            continue
        name = FAMILY_ALIASES.get(str(f).lower(), str(f).lower())
        try:
            cls = get_family_class(name)
        except (KeyError, ValueError) as exc:
            raise TrainingError(f"features: {exc}") from None
        try:
            fams.append(cls(tuple(window_shape), mode=haar_mode) if name == "haar"
                        else cls(tuple(window_shape)))
        except (TypeError, ValueError) as exc:
            raise TrainingError(f"features: family {name!r} cannot be built for the "
                                f"{window_shape[1]}x{window_shape[0]} window: {exc}") from None
    if not fams:
        raise TrainingError("features: no feature family given")
    try:
        pool = FeaturePool(fams)
    except (TypeError, ValueError) as exc:
        raise TrainingError(f"features: {exc}") from None
    return _grey_pool(pool)


def _grey_pool(pool: FeaturePool) -> FeaturePool:
    """``pool`` unless a family reads colour windows: positives, backgrounds and mining are
    read as grey images."""
    colour = [f.name for f in pool.families if f.color]
    if colour:
        raise TrainingError(f"features: {', '.join(colour)} read colour windows, and a cascade "
                            "is trained on grey positives and backgrounds; use grey families "
                            "(the channels family without color=True, haar, lbp, hog...), or "
                            "colour ones with the boosting estimators (fit_pool)")
    return pool




def build_cascade_model(
    pool: FeaturePool,
    stages: Sequence[StageResult],
    *,
    params: dict[str, Any] | None = None,
) -> CascadeModel:
    """The :class:`CascadeModel` of trained stages.

    Parameters
    ----------
    pool : FeaturePool
        The pool the stages' learners index (global ids).
    stages : sequence of StageResult
    params : dict, optional

    Returns
    -------
    CascadeModel
        Over the pool's single family (a Haar family with ``normalize=True`` or an MB-LBP
        family gives an OpenCV-exportable cascade), or over the pool for several families; the
        features are those the learners read, in increasing id order.
    """
    used = sorted({int(g) for st in stages for lr in st.learners for g in lr.feature})
    index = {g: i for i, g in enumerate(used)}
    # learners index the pool; cascade trees index the model's features by position
    model_stages = [Stage([lr.remap(index) for lr in st.learners], threshold=st.threshold)
                    for st in stages]
    params = dict(params or {})
    family = pool.families[0] if pool.n_families == 1 else pool
    if getattr(family, "opencv_type", None) == "HAAR":
        params.setdefault("featureParams", {})["mode"] = getattr(family, "mode", "BASIC")
    return CascadeModel(pool.window_shape, stages=model_stages, family=family,
                        feature_ids=used, params=params)


# ------------------------------------------------------------------------------------------------
# The trainer
# ------------------------------------------------------------------------------------------------


def positives_needed(num_pos: int, num_stages: int, min_hit_rate: float) -> int:
    """Positives a run of ``num_stages`` stages may consume: each stage loses up to
    ``1 - min_hit_rate`` of its ``num_pos`` positives, replaced from the pool.

    Parameters
    ----------
    num_pos : int
        Positives per stage.
    num_stages : int
        Stages planned.
    min_hit_rate : float
        Share of its positives each stage keeps.

    Returns
    -------
    int
        ``ceil(num_pos (1 + (num_stages - 1)(1 - min_hit_rate)))``.

    Examples
    --------
    >>> positives_needed(1000, 11, 0.995)
    1050
    """
    return int(math.ceil(num_pos * (1 + max(num_stages - 1, 0) * (1 - min_hit_rate))))


class CascadeTrainer:
    """Train a boosted cascade of stages (Viola–Jones, as ``opencv_traincascade``).

    Parameters
    ----------
    window_shape : (height, width), default=(24, 24)
    features : str, sequence or FeaturePool, default="haar"
        Family names (``"haar,lbp,hog"``), FeatureFamily objects or a ready pool.
    haar_mode : {"BASIC", "CORE", "ALL"}, default="BASIC"
    num_stages : int, default=20
        Stages to train at most; training stops earlier once the acceptance ratio of the
        fresh background windows is at most ``max_false_alarm ** num_stages`` (divided by
        ``max_depth`` with trees, as traincascade).
    min_hit_rate : float, default=0.995
        Per stage, share of its positives kept.
    max_false_alarm : float, default=0.5
        Per stage, largest share of its negatives accepted.
    num_pos, num_neg : int, default=2000, 4000
        Positives and negatives per stage.
    mining_budget : int, optional
        Fresh background windows a stage's mining may scan (checked between batches of units,
        so the result does not depend on threads or workers). A stage whose budget runs out
        first trains on the negatives found, if there are at least ``min_neg``. Late stages of
        a deep cascade need about twice as many windows as the stage before; the budget bounds
        their time and trains them on fewer negatives instead (None: no budget).
    min_neg : int, optional
        Fewest negatives a stage trains on when the budget runs out or the backgrounds are
        exhausted (default ``num_neg``: training stops instead, with the reason).
    max_weak_count : int, default=100
        Weak learners per stage at most.
    loss : {"gentle", "discrete", "real", "logit"}, default="gentle"
    weak_learner : {"stump", "tree"}, default="stump"
    max_depth : int, default=2
        Depth of trees (``weak_learner="tree"``).
    weight_trim_rate : float, default=0.95
    balanced_init : bool, default=False
    sampler : str, optional
        A sampler of :data:`vjboost.boost.sampling.SAMPLERS` (e.g. ``"laminating"``): features
        are evaluated lazily on sampled blocks instead of exhaustively (``None`` or ``"full"``:
        exhaustive search over the precomputed matrix).
    sampler_budget : int, optional
        Feature evaluations per round of the sampler (default: 1 % of ``n_features * N``, at
        least ``10 N``).
    n_bins : int, default=256
        Quantile bins of the precomputed features (thresholds stay raw values).
    edge_sample_size : int, default=1024
        Windows used to place the bin edges.
    bin_edges : {"run", "stage"}, default="run"
        Exhaustive search: place the bin edges once per run, on the first stage's windows, and
        carry the feature matrix from stage to stage (only the windows new to a stage are
        evaluated; :class:`~vjboost.cascade.stage_matrix.StageMatrix`), or place them again
        on every stage's windows and precompute every stage's matrix afresh (slower; the
        binning of runs before ``"run"`` existed).
    mining : dict, optional
        :class:`~vjboost.cascade.negatives.MiningParams` fields (``scale_factor``, ``step``,
        ``max_per_image``, ``max_passes``, ``min_std``). A ``min_std`` (the σ gate of the scan)
        is also declared by the trained model (``params["min_std"]``), so that it detects
        with the gate it was trained with.
    mirror : bool, default=False
        Add the horizontally mirrored positives to the pool.
    seed : int, default=0
    threads : int, optional
    memory_budget : int, optional
        Bytes the run may use (default: :data:`DEFAULT_MEMORY`, or 75 % of the available memory
        if less); caches are sized from it, and a stage that cannot fit is refused.
    callback : callable, optional
        ``callback(event, info)`` while training runs (stage starts and ends, mining batches,
        boosting rounds, log lines, the run's ETA; see :mod:`vjboost.cascade.progress`).
    reservoir : int, optional
        Train every stage by reservoir boosting with ``R`` windows kept and ``R`` fresh windows
        drawn per round (see the module docstring): feature memory ``O(R n_features)``, flat in
        ``num_pos`` and ``num_neg`` (and at most 64 MiB of decoded background images are
        cached for mining). Needs ``loss`` "gentle" or "logit" and no ``sampler``;
        ``weight_trim_rate`` is not used (the reservoir plays its part). Positives and negatives
        are drawn in the proportion ``num_pos : num_neg`` (half and half with
        ``balanced_init``).
    early_exits : bool, default=False
        At the end of training, add early exits to the stages
        (:func:`vjboost.cascade.exits.early_exits`): the cascade rejects most windows of a scene
        before its stages' last trees, and none of the exit positives it accepts is lost
        beyond ``exit_loss``. Training (stages, mining) is unchanged.
    exit_every : int, default=2
        An exit after every ``exit_every``-th tree of a stage.
    exit_loss : float, default=0.01
        Share of the accepted exit positives the exits may reject.
    reservoir_strategy : {"geem", "wsam", "max", "rand"}, default="geem"
        How the reservoir keeps ``R`` of its ``2 R`` windows.
    object_box : (x, y, w, h), optional
        Where the object lies in the training window, as fractions of its width and height,
        when the positives keep context around it: declared by the model
        (``params["object_box"]``), so that its detector reports object boxes, not windows
        (:func:`vjboost.cascade.model.object_box`). Training does not use it.

    Attributes
    ----------
    model_ : CascadeModel
    stages_ : list of StageResult
    stop_reason_ : str
    report_ : dict
    samples_ : TrainingSamples
        Windows kept for the report (hardest negatives, rejected positives).

    Examples
    --------
    One stage on a handful of synthetic windows: a dark bar on light ground against noise.

    >>> import tempfile, cv2, numpy as np
    >>> rng = np.random.default_rng(0)
    >>> pos = np.full((20, 12, 12), 200, np.uint8)
    >>> pos[:, 3:6, 2:10] = 40
    >>> pos = (pos + rng.integers(0, 20, pos.shape)).astype(np.uint8)
    >>> bg = [tempfile.mkdtemp() + f"/bg{k}.png" for k in range(2)]
    >>> for p in bg:
    ...     _ = cv2.imwrite(p, rng.integers(0, 256, (48, 48), dtype=np.uint8))
    >>> trainer = CascadeTrainer(window_shape=(12, 12), num_stages=1, num_pos=20, num_neg=40,
    ...                          max_weak_count=3).fit(pos, bg)
    >>> trainer.model_.n_stages, trainer.model_.window_shape, trainer.stop_reason_
    (1, (12, 12), 'all 1 stages trained')
    >>> trainer.stages_[0].hit_rate, trainer.stages_[0].false_alarm
    (1.0, 0.0)
    """

    def __init__(
        self,
        *,
        window_shape: tuple[int, int] = (24, 24),
        features: Any = "haar",
        haar_mode: str = "BASIC",
        num_stages: int = 20,
        min_hit_rate: float = 0.995,
        max_false_alarm: float = 0.5,
        num_pos: int = 2000,
        num_neg: int = 4000,
        mining_budget: int | None = None,
        min_neg: int | None = None,
        max_weak_count: int = 100,
        loss: str = "gentle",
        weak_learner: str = "stump",
        max_depth: int = 2,
        weight_trim_rate: float = 0.95,
        balanced_init: bool = False,
        sampler: str | None = None,
        sampler_budget: int | None = None,
        n_bins: int = 256,
        edge_sample_size: int = 1024,
        bin_edges: str = "run",
        mining: dict[str, Any] | None = None,
        mirror: bool = False,
        seed: int = 0,
        threads: int | None = None,
        memory_budget: int | None = None,
        callback: Callback | None = None,
        reservoir: int | None = None,
        reservoir_strategy: str = "geem",
        early_exits: bool = False,
        exit_every: int = 2,
        exit_loss: float = 0.01,
        object_box: Sequence[float] | None = None,
    ) -> None:
        self.window_shape = window_shape
        self.features = features
        self.haar_mode = haar_mode
        self.num_stages = num_stages
        self.min_hit_rate = min_hit_rate
        self.max_false_alarm = max_false_alarm
        self.num_pos = num_pos
        self.num_neg = num_neg
        self.mining_budget = mining_budget
        self.min_neg = min_neg
        self.max_weak_count = max_weak_count
        self.loss = loss
        self.weak_learner = weak_learner
        self.max_depth = max_depth
        self.weight_trim_rate = weight_trim_rate
        self.balanced_init = balanced_init
        self.sampler = sampler
        self.sampler_budget = sampler_budget
        self.n_bins = n_bins
        self.edge_sample_size = edge_sample_size
        self.bin_edges = bin_edges
        self.mining = mining
        self.mirror = mirror
        self.seed = seed
        self.threads = threads
        self.memory_budget = memory_budget
        self.callback = callback
        self.reservoir = reservoir
        self.reservoir_strategy = reservoir_strategy
        self.early_exits = early_exits
        self.exit_every = exit_every
        self.exit_loss = exit_loss
        self.object_box = object_box

    # -- validation -----------------------------------------------------------------------------

    def _check_params(self) -> None:
        try:
            h, w = (int(v) for v in self.window_shape)
        except (TypeError, ValueError):
            raise TrainingError(f"window_shape: expected (height, width), got "
                                f"{self.window_shape!r}") from None
        if h < 3 or w < 3:
            raise TrainingError(f"window_shape: at least 3x3 pixels, got {w}x{h}")
        self.window_shape = (h, w)
        try:
            check_in_range(self.num_stages, "num_stages", low=1, high=MAX_STAGES, integer=True)
            check_in_range(self.num_pos, "num_pos", low=1, integer=True)
            check_in_range(self.num_neg, "num_neg", low=1, integer=True)
            if self.mining_budget is not None:
                check_in_range(self.mining_budget, "mining_budget", low=1, integer=True)
            if self.min_neg is not None:
                check_in_range(self.min_neg, "min_neg", low=1, high=self.num_neg, integer=True)
            check_in_range(self.max_weak_count, "max_weak_count", low=1, integer=True)
            check_in_range(self.max_depth, "max_depth", low=1, high=8, integer=True)
            check_in_range(self.n_bins, "n_bins", low=2, high=256, integer=True)
            check_in_range(self.edge_sample_size, "edge_sample_size", low=2, integer=True)
            check_in_range(self.weight_trim_rate, "weight_trim_rate", low=0.0, high=1.0,
                           low_inclusive=False)
            check_in_range(self.exit_every, "exit_every", low=1, integer=True)
            check_in_range(self.exit_loss, "exit_loss", low=0.0, high=1.0,
                           high_inclusive=False)
        except (TypeError, ValueError) as exc:
            raise TrainingError(str(exc)) from None
        if not 0.0 < float(self.min_hit_rate) <= 1.0:
            raise TrainingError(f"min_hit_rate: must be in (0, 1], got {self.min_hit_rate}")
        if not 0.0 < float(self.max_false_alarm) < 1.0:
            raise TrainingError(
                f"max_false_alarm: must be in (0, 1) (a stage accepting every negative never "
                f"ends), got {self.max_false_alarm}")
        if self.loss not in LOSSES:
            raise TrainingError(f"loss: expected one of {sorted(LOSSES)}, got {self.loss!r}")
        if self.weak_learner not in ("stump", "tree"):
            raise TrainingError(f"weak_learner: expected 'stump' or 'tree', got "
                                f"{self.weak_learner!r}")
        if self.bin_edges not in ("run", "stage"):
            raise TrainingError(f"bin_edges: expected 'run' or 'stage', got {self.bin_edges!r}")
        if self.sampler not in (None, "full"):
            from ..boost.sampling import SAMPLERS

            if self.sampler not in SAMPLERS:
                raise TrainingError(f"sampler: expected one of {sorted(SAMPLERS)}, got "
                                    f"{self.sampler!r}")
        try:
            MiningParams(self.window_shape, **(self.mining or {}))
        except TypeError as exc:
            raise TrainingError(f"mining: {exc}") from None
        self._object_box = None  # the checked box the model declares (None: the window)
        if self.object_box is not None:
            from .model import check_object_box

            try:  # the detector's own check
                self._object_box = check_object_box(self.object_box, inside=True)
            except ValueError as exc:
                raise TrainingError(str(exc)) from None
        self._check_reservoir()

    def _check_reservoir(self) -> None:
        if self.reservoir is None:
            return
        from ..boost.reservoir import STRATEGIES

        r = self.reservoir
        if isinstance(r, bool) or not isinstance(r, int | np.integer) or r < 1:
            raise TrainingError(f"reservoir: expected a positive number of windows, got {r!r}")
        if 2 * int(r) > int(self.num_pos) + int(self.num_neg):
            raise TrainingError(
                f"reservoir: R = {r} keeps R windows and draws R fresh ones per round, more than "
                f"the stage's num_pos + num_neg = {int(self.num_pos) + int(self.num_neg)} "
                f"windows; use R <= {(int(self.num_pos) + int(self.num_neg)) // 2}")
        if self.reservoir_strategy not in STRATEGIES:
            raise TrainingError(f"reservoir_strategy: expected one of {list(STRATEGIES)}, got "
                                f"{self.reservoir_strategy!r}")
        if self.sampler not in (None, "full"):
            raise TrainingError(
                f"reservoir: cannot be combined with sampler {self.sampler!r} (the reservoir "
                "already bounds the examples a round looks at); use one or the other")
        if self.loss not in RESERVOIR_LOSSES:
            raise TrainingError(
                f"reservoir: supports loss {' or '.join(RESERVOIR_LOSSES)} (least-squares weak "
                f"learners on the reservoir), got {self.loss!r}")

    def config(self, pos_digest: str, bg_digest: str) -> dict[str, Any]:
        """The settings that determine the trained cascade (checked on resume).

        Parameters
        ----------
        pos_digest, bg_digest : str
            Digests of the positive windows and of the background list (the data in use).

        Returns
        -------
        dict
            JSON-friendly settings (window, pool configuration, stage targets, learner,
            sampler, mining parameters, seed and the two digests).
        """
        pool = self.pool_
        return {
            "window_shape": list(self.window_shape),
            "pool": pool.get_config(),
            "num_stages": int(self.num_stages),
            "min_hit_rate": float(self.min_hit_rate),
            "max_false_alarm": float(self.max_false_alarm),
            "num_pos": int(self.num_pos),
            "num_neg": int(self.num_neg),
            "mining_budget": None if self.mining_budget is None else int(self.mining_budget),
            "min_neg": self._min_neg,
            "max_weak_count": int(self.max_weak_count),
            "loss": self.loss,
            "weak_learner": self.weak_learner,
            "max_depth": int(self.max_depth),
            "weight_trim_rate": float(self.weight_trim_rate),
            "balanced_init": bool(self.balanced_init),
            "sampler": self.sampler,
            "sampler_budget": self.sampler_budget,
            "n_bins": int(self.n_bins),
            "edge_sample_size": int(self.edge_sample_size),
            **({"bin_edges": self.bin_edges} if self._exhaustive else {}),
            "mining": dict(self.mining or {}),
            "mirror": bool(self.mirror),
            "seed": int(self.seed),
            # 2: negatives carried between stages, one cursor per image; 3: units of several
            # grid offsets once the cascade accepts few windows
            "mining_schedule": 3,
            **({} if self.reservoir is None else {
                "reservoir": int(self.reservoir),
                "reservoir_strategy": self.reservoir_strategy}),
            "positives": pos_digest,
            "backgrounds": bg_digest,
        }

    # -- helpers --------------------------------------------------------------------------------

    def _model(self, stages: list[StageResult]) -> CascadeModel | None:
        return build_cascade_model(self.pool_, stages) if stages else None

    @property
    def _min_neg(self) -> int:
        """Fewest negatives a stage trains on."""
        return int(self.num_neg if self.min_neg is None else self.min_neg)

    @property
    def _exhaustive(self) -> bool:
        """Stages boosted by the exhaustive search over a precomputed matrix (when it fits)."""
        return self.sampler in (None, "full") and self.reservoir is None

    def _stage_seed(self, k: int) -> int:
        return int(np.random.default_rng([int(self.seed) & 0xFFFFFFFF, k]).integers(2**31))

    def _make_search(self, windows: np.ndarray, k: int, log, executor: Any = None
                     ) -> tuple[Any, dict[str, Any]]:
        pool = self.pool_
        n = windows.shape[0]
        budget = self._feature_budget
        info: dict[str, Any] = {"memory_budget": budget}
        sampled = self.sampler not in (None, "full")
        need = precompute_nbytes(pool, n, dtype="uint8")
        left = check_training_memory(pool, n, budget=budget)  # after the program and channels
        info["matrix_bytes"] = int(pool.n_features) * n
        if sampled:
            from ..boost.sampling import make_sampler

            source = PoolSource(pool, windows, threads=self.threads)
            sb = self.sampler_budget or max(10 * n, int(0.01 * pool.n_features * n))
            # a round holds its example draws (int64) and the block of feature values (float32)
            # of at most the budget's evaluations, with their temporaries
            check_memory(_ROUND_BYTES * int(sb), f"sampler_budget: rounds of {int(sb)} feature "
                         "evaluations", budget=left,
                         advice="Lower the budget (--sampler-budget).")
            sampler = make_sampler(self.sampler, random_state=self._stage_seed(k))
            info.update(mode=f"sampler {self.sampler}", sampler_budget=int(sb),
                        cache_bytes=int(source.channels.nbytes))
            return SampledSearch(sampler, source, sb, threads=self.threads), info
        sm = self._stage_matrix
        if sm is not None:
            fits = sm.nbytes + sm.nbytes_needed(windows) <= left
            if not fits:
                sm.drop()  # then computed afresh (the same matrix) if that fits
                fits = sm.nbytes + sm.nbytes_needed(windows) <= left
            if fits:
                matrix, how = sm.matrix(windows, seed=self._stage_seed(k), budget=budget,
                                        executor=executor)
                info.update(mode=f"precomputed uint8, {how}",
                            cache_bytes=int(matrix.matrix.nbytes))
                return MatrixSearch(matrix, threads=self.threads), info
            sm.drop()
        elif need - pool.channels_nbytes(n) <= left:
            matrix = precompute(pool, windows, "uint8", n_bins=int(self.n_bins),
                                edge_sample_size=min(int(self.edge_sample_size), n),
                                seed=self._stage_seed(k), budget=budget, threads=self.threads,
                                executor=executor)
            info.update(mode="precomputed uint8", cache_bytes=int(matrix.matrix.nbytes))
            return MatrixSearch(matrix, threads=self.threads), info
        source = PoolSource(pool, windows, threads=self.threads)
        block = max(1, min(pool.n_features, left // max(1, 8 * n)))
        info.update(mode=f"streamed in blocks of {block} features", cache_bytes=int(
            source.channels.nbytes + 4 * block * n))
        log(f"  feature matrix ({format_bytes(need)}) over the memory budget "
            f"({format_bytes(budget)}): features are recomputed every round in blocks of {block}")
        return StreamedSearch(source, block=block, threads=self.threads), info

    def _shape(self) -> TreeShape:
        return TreeShape.of(self.weak_learner, max_depth=int(self.max_depth))

    def _reservoir_stage(self, pw: np.ndarray, nw: np.ndarray, k: int, on_round
                         ) -> tuple[StageResult, dict[str, Any]]:
        """Stage ``k`` by reservoir boosting from streams over its positives and negatives."""
        from ..boost.reservoir import WindowScores, train_reservoir_stage
        from ..boost.streams import ArrayStream

        pool = self.pool_
        r = int(self.reservoir)
        seed = self._stage_seed(k)
        s_pos, s_neg, s_mix = np.random.SeedSequence([seed, 0x726573]).spawn(3)
        pos_stream = ArrayStream(pw, np.ones(len(pw), np.int64), seed=np.random.default_rng(s_pos))
        neg_stream = ArrayStream(nw, np.zeros(len(nw), np.int64),
                                 seed=np.random.default_rng(s_neg))
        frac = 0.5 if self.balanced_init else len(pw) / (len(pw) + len(nw))
        pos_sc = WindowScores(pool, pw, chunk=RESERVOIR_CHUNK, threads=self.threads)
        neg_sc = WindowScores(pool, nw, chunk=RESERVOIR_CHUNK, threads=self.threads)
        st = StageResult([], 0.0, 1.0, 1.0)
        min_hit, max_fa = float(self.min_hit_rate), float(self.max_false_alarm)

        def stop(booster: Any, t: int) -> bool:
            if len(booster.estimators_) == len(st.learners):
                return False  # no feature split the reservoir this round
            # the pool's features are the booster's features: ids are global already
            h = booster.estimators_[-1]
            thr, hit = stage_threshold(pos_sc.add(h), min_hit)
            fa = stage_false_alarm(neg_sc.add(h), thr)
            st.learners.append(h)
            st.threshold, st.hit_rate, st.false_alarm = thr, hit, fa
            st.losses.append(float(booster.history_["loss"][-1]))
            st.hit_rates.append(hit)
            st.false_alarms.append(fa)
            on_round(t, st.losses[-1], hit, fa)
            return fa <= max_fa

        _, booster = train_reservoir_stage(
            pool, pos_stream, neg_stream, n_weak=int(self.max_weak_count), reservoir_size=r,
            strategy=self.reservoir_strategy, pos_fraction=frac, weak_learner=self.weak_learner,
            max_depth=int(self.max_depth), loss=self.loss, float32_leaves=True, stop=stop,
            memory_budget=self.memory_budget, random_state=np.random.default_rng(s_mix),
            threads=self.threads)
        if not st.learners:
            raise TrainingError(
                f"reservoir: stage {k} found no feature separating its reservoir of {r} windows "
                "in any round; use a larger reservoir")
        st.scores = np.concatenate([pos_sc.scores, neg_sc.scores])  # for the report's samples
        buf = 0 if booster._flat is None else int(booster._flat.nbytes)
        info = {"mode": f"reservoir {r} ({self.reservoir_strategy})", "cache_bytes": buf,
                "matrix_bytes": int(pool.n_features) * (len(pw) + len(nw)),
                "reservoir": {"size": r, "strategy": self.reservoir_strategy,
                              "rounds": len(booster.history_["loss"]),
                              "windows_drawn": int(booster.n_seen_),
                              "positive_share": float(frac)}}
        return st, info

    # -- training -------------------------------------------------------------------------------

    def fit(
        self,
        positives: np.ndarray,
        backgrounds: Sequence[str | os.PathLike[str]],
        *,
        output_dir: str | os.PathLike[str] | None = None,
        resume: bool = False,
        log: Callable[[str], None] | None = None,
        max_new_stages: int | None = None,
        executor: Any = None,
        run: dict[str, Any] | None = None,
        exit_positives: np.ndarray | None = None,
    ) -> CascadeTrainer:
        """Train the cascade.

        Parameters
        ----------
        positives : ndarray of uint8, shape (P, height, width)
            The positive pool, in the order it is consumed (see
            :func:`vjboost.cascade.positives.load_positives`).
        backgrounds : sequence of path-like
            Background images (no object), e.g. :func:`vjboost.io.read_bg_list` output.
        output_dir : path-like, optional
            Where the checkpoint is written after every stage (created if missing).
        resume : bool, default=False
            Continue from ``output_dir``'s checkpoint (same settings and data required).
        log : callable, optional
            Receives one line per event (default: silent).
        max_new_stages : int, optional
            Train at most this many stages in this call (the rest on a later ``resume``).
        executor : vjboost._parallel.Executor, optional
            Mine negatives and precompute feature blocks as tasks on this executor (e.g. Dask
            workers); the cascade is the same as without it. Not part of the checkpoint's
            settings: a run may be resumed with another executor or none.
        run : dict, optional
            How this call was started (e.g. the command line, vjboost's version and every
            option as given), written into each checkpoint as ``"run"``; informative only, so a
            run may be resumed by another command line.
        exit_positives : ndarray of uint8, shape (Q, height, width), optional
            With ``early_exits``: the positives that set the exits (mirrored too with
            ``mirror``); default ``positives``. ``vjtrain`` gives the positives without their
            jittered copies: a face in a scan offers windows near its centred crop, and the
            copies turned and shifted as far as the jitter goes would hold every exit low.

        Returns
        -------
        self
        """
        log = log or (lambda msg: None)
        self._run = dict(run) if run is not None else None
        self._check_params()
        h, w = self.window_shape
        pos = np.asarray(positives)
        if pos.ndim != 3 or pos.shape[1:] != (h, w) or pos.dtype != np.uint8:
            raise TrainingError(f"positives: expected uint8 windows (P, {h}, {w}), got "
                                f"{pos.shape} {pos.dtype}")
        if self.mirror:
            pos = np.concatenate([pos, pos[:, :, ::-1]])
        pos = np.ascontiguousarray(pos)
        if isinstance(backgrounds, str | bytes | os.PathLike):
            raise TrainingError(f"backgrounds: expected a sequence of image paths, got one path "
                                f"({os.fsdecode(backgrounds)!r}); vjboost.train also reads a "
                                "folder or a bg.txt list")
        bgs = []
        for k, b in enumerate(backgrounds):
            if not isinstance(b, str | bytes | os.PathLike):
                # mining visits each background by path, pass after pass, and may re-read it
                # (checkpoints record paths): images in memory have no such identity
                raise TrainingError(f"backgrounds[{k}]: expected an image path, got "
                                    f"{type(b).__name__}; write the background images to "
                                    "files and give their paths (a list, a folder or bg.txt)")
            bgs.append(os.fsdecode(b))
        if not bgs:
            raise TrainingError("backgrounds: no background image given")
        if len(pos) < self.num_pos:
            raise TrainingError(f"positives: {len(pos)} given but num_pos is {self.num_pos}")
        self.pool_ = make_pool(self.features, self.window_shape, haar_mode=self.haar_mode)
        self._plan_memory(pos.nbytes)
        self._stage_matrix = (StageMatrix(self.pool_, n_bins=int(self.n_bins),
                                          edge_sample_size=int(self.edge_sample_size),
                                          threads=self.threads)
                              if self._exhaustive and self.bin_edges == "run" else None)
        check_training_memory(self.pool_, self.num_pos + self.num_neg if self.reservoir is None
                              else 2 * self.reservoir, budget=self._feature_budget)
        cfg = self.config(array_digest(pos), hashlib.sha1("\n".join(bgs).encode()).hexdigest()[:16])
        out = None if output_dir is None else Path(output_dir)
        stages: list[StageResult] = []
        mining_log: list[dict[str, Any]] = []
        stop = ck = pending = None
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            ck = load_checkpoint(out)
            if ck is not None and not resume:
                raise TrainingError(
                    f"{out}: holds a training checkpoint already; resume it (resume=True / "
                    "--resume) or choose another output folder")
            if ck is not None:
                # more stages or more backgrounds may be asked for when resuming; an exhaustive
                # run of a version before ``bin_edges`` placed the edges on every stage
                saved = dict(ck["config"])
                if "bin_edges" in cfg:
                    saved.setdefault("bin_edges", "stage")
                diff = config_differences(
                    {k: v for k, v in saved.items() if k not in RESUMABLE_CHANGES},
                    {k: v for k, v in cfg.items() if k not in RESUMABLE_CHANGES})
                if diff:
                    raise TrainingError(
                        f"{out}: the checkpoint was made with other settings or data ("
                        + "; ".join(diff[:4]) + "); use the same ones to resume, or another "
                        "output folder")
                stages = checkpoint_stages(ck, self._checkpoint_stage, out)
                if stages and self._stage_matrix is not None:
                    if "bin_sample" not in ck:
                        raise damaged_checkpoint(out / CHECKPOINT_NAME,
                                                 "'bin_sample' is missing")
                    path = out / ck["bin_sample"]["file"]
                    try:
                        self._stage_matrix.load(out, ck["bin_sample"])
                    except ValueError as exc:
                        raise damaged_checkpoint(
                            path, str(exc).removeprefix(f"{path}: ")) from None
                mining_log = [m for m in ck.get("mining", []) if m["stage"] < len(stages)]
                # a run that stopped after mining a stage saved that stage's pool and mining
                pending = next((m for m in ck.get("mining", []) if m["stage"] == len(stages)),
                               None)
                if len(stages) > self.num_stages:
                    raise TrainingError(
                        f"{out}: the checkpoint has {len(stages)} stages, more than num_stages "
                        f"= {self.num_stages}")
                log(f"resuming after stage {len(stages) - 1} ({len(stages)} stage(s) in the "
                    "checkpoint)")
                if ck.get("stop") is not None and not config_differences(saved, cfg):
                    # a finished run resumed with its settings and data: it would stop where it
                    # did (a mining budget, say, would otherwise be spent a second time)
                    stop = dict(ck["stop"])
                    mining_log = list(ck.get("mining", []))
                    log(f"the checkpoint's run is finished ({stop['message']}); nothing to "
                        "train with the same settings")
        self.config_ = cfg
        t_start = time.perf_counter()
        required = self._false_alarm_target()[0]
        negatives = self._negative_pool(bgs, out, ck, len(stages))
        from .report import TrainingSamples

        self.samples_ = TrainingSamples()  # bounded windows for the report
        emit = self._emitter(log)
        clock = RunClock(self.num_stages, self.max_false_alarm, required,
                         max_scanned=self.mining_budget)
        for st, m in zip(stages, mining_log, strict=False):  # the ETA of a resumed run
            clock.add(mining=m["seconds"], other=st.seconds.get("total", 0.0) - m["seconds"],
                      acceptance_ratio=m["acceptance_ratio"], scanned=m["n_scanned"])
        new = 0
        with n_threads(self.threads):
            while stop is None and len(stages) < self.num_stages:
                if max_new_stages is not None and new >= max_new_stages:
                    break
                k = len(stages)
                emit("stage", stage=k, n_stages=int(self.num_stages),
                     cascade_false_alarm=self._cascade_fa(stages))
                reset_peak_rss()
                t0 = time.perf_counter()
                # 1. positives still accepted by the cascade, in pool order
                model = self._model(stages)
                pw, pos_used, stop = self._stage_positives(pos, model, k)
                if stop is not None:
                    break
                t1 = time.perf_counter()
                # 2. negatives: the pool re-checked against the last stage, topped up by mining
                res = negatives.fill(
                    model, stage=k, stop_ratio=required if k > 0 else None, threads=self.threads,
                    max_scanned=self.mining_budget, executor=executor,
                    progress=partial(mining_event, emit, clock, k))
                t2 = time.perf_counter()
                if pending is not None and pending["stage"] == k and res.n_scanned == 0:
                    # resumed with a setting changed after a stop at this stage: the saved pool
                    # already holds its windows and nothing new was scanned, so the mining that
                    # filled it judges the false-alarm target (met, the run stops again; with
                    # more stages asked for, the target is lower and training may go on)
                    res.n_scanned, res.n_accepted = pending["n_scanned"], pending["n_accepted"]
                    res.target_reached = pending["target_reached"]
                mining_log.append({**mining_summary(res), "stage": k, "seconds": t2 - t1})
                emit("log", message=f"stage {k}: positives {self.num_pos} (pool consumed "
                     f"{pos_used}/{len(pos)}), negatives {res.describe()}")
                stop = self._mining_stop(res, k, len(bgs))
                if stop is not None:
                    break
                if k == 0:
                    self._check_not_flat(res.windows)
                if len(res.windows) < self.num_neg:
                    emit("log", message=(f"stage {k}: trains on {len(res.windows)} of the "
                                         f"{self.num_neg} negatives ({res.shortfall}; min_neg "
                                         f"{self._min_neg})"))
                # 3. features and boosting
                st, finfo, t3 = self._boost_stage(pw, res.windows, k, emit, log, executor)
                t4 = time.perf_counter()
                st.seconds = {"positives": t1 - t0, "negatives": t2 - t1,
                              "features": t3 - t2, "boosting": t4 - t3, "total": t4 - t0}
                finfo["peak_rss"] = peak_rss()
                st.info.update(finfo, positives_consumed=pos_used,
                               acceptance_ratio=res.acceptance_ratio)
                # report samples from the sums boosting left (then dropped)
                self.samples_.add_stage(k, pw, res.windows, st.scores, st.threshold)
                st.scores = None
                stages.append(st)
                new += 1
                clock.add(mining=t2 - t1, other=t4 - t0 - (t2 - t1),
                          acceptance_ratio=res.acceptance_ratio, scanned=res.n_scanned)
                emit("log", message=(
                    f"stage {k}: {len(st.learners)} weak learner(s), hit rate {st.hit_rate:.4f}, "
                    f"false alarm {st.false_alarm:.4f}, {t4 - t0:.1f} s (features {t3 - t2:.1f} s "
                    f"[{finfo['mode']}, {format_bytes(finfo['cache_bytes'])}], boosting "
                    f"{t4 - t3:.1f} s), peak memory {format_bytes(finfo['peak_rss'])}"))
                emit("stage_done", stage=k, seconds=st.seconds, peak_rss=finfo["peak_rss"],
                     eta=clock.eta(k + 1))
                # 4. checkpoint
                if out is not None:
                    self._save(out, cfg, stages, mining_log, None, negatives)
            if stop is None and len(stages) >= self.num_stages:
                stop = {"reason": "num_stages", "message": f"all {self.num_stages} stages trained"}
        if stop is None:
            stop = {"reason": "paused", "message": (
                f"{len(stages)} stage(s) trained so far; call again with resume to continue")}
        elif out is not None:
            self._save(out, cfg, stages, mining_log, stop, negatives)
        self.stages_ = stages
        self.mining_ = mining_log
        self.stop_ = stop
        self.stop_reason_ = stop["message"]
        self.fit_time_ = time.perf_counter() - t_start
        self.model_ = (build_cascade_model(self.pool_, stages, params=self._model_params())
                       if stages else None)
        if self.model_ is not None and self.early_exits:
            self.model_ = self._with_exits(self.model_, pos if exit_positives is None
                                           else exit_positives, log)
        from .report import training_report

        self.report_ = training_report(self)
        return self

    def _with_exits(self, model: CascadeModel, exit_pos: Any, log) -> CascadeModel:
        from .exits import early_exits

        h, w = self.window_shape
        q = np.asarray(exit_pos)
        if q.ndim != 3 or q.shape[1:] != (h, w) or q.dtype != np.uint8:
            raise TrainingError(f"exit_positives: expected uint8 windows (Q, {h}, {w}), got "
                                f"{q.shape} {q.dtype}")
        if self.mirror and exit_pos is not None:
            q = np.concatenate([q, q[:, :, ::-1]])
        t0 = time.perf_counter()
        try:
            with n_threads(self.threads):
                out = early_exits(model, q, every=int(self.exit_every),
                                  loss=float(self.exit_loss), threads=self.threads)
        except InputError as exc:
            raise TrainingError(f"early exits: {exc}") from None
        info = out.params["early_exits"]
        log(f"early exits: {out.n_exits} set from {info['accepted']} accepted positives "
            f"({info['dropped']} rejected by them), {time.perf_counter() - t0:.1f} s")
        return out

    # -- the steps of a stage -------------------------------------------------------------------

    def _emitter(self, log: Callable[[str], None]) -> Callable[..., None]:
        """``emit(event, **info)``: to the callback, and log lines to ``log`` as well."""
        cb = self.callback

        def emit(event: str, **info: Any) -> None:
            if event == "log":
                log(info["message"])
            if cb is not None:
                cb(event, info)

        return emit

    def _plan_memory(self, pos_nbytes: int) -> None:
        """Split the memory budget: the decoded images' share, and the feature caches' share
        (the rest, less the positives, the negative pool and the process)."""
        budget = (memory_budget(self.memory_budget) if self.memory_budget is not None
                  else min(memory_budget(), DEFAULT_MEMORY))
        images = int(IMAGE_CACHE_SHARE * budget)
        # the pool holds at most num_neg windows plus one batch's surplus, and a stage's copy
        pool = 3 * int(self.num_neg) * int(np.prod(self.window_shape))
        held = BASE_MEMORY + 2 * pos_nbytes + pool
        self._feature_budget = budget - images - held
        if self._feature_budget <= 0:
            raise TrainingError(
                f"memory budget: {format_bytes(budget)} leaves nothing for feature caches (the "
                f"process, the positives and the negative pool hold {format_bytes(held)}, "
                f"decoded backgrounds {format_bytes(images)}); raise it (memory_budget, vjtrain "
                "--memory)")
        self._image_budget = images

    def _negative_pool(self, bgs: list[str], out: Path | None, ck: dict[str, Any] | None,
                       n_stages: int) -> NegativePool:
        """The run's negative pool (restored from the checkpoint when resuming), its image
        cache sized by :meth:`_plan_memory`."""
        images = self._image_budget
        cache = ImageCache(images if self.reservoir is None else min(images,
                                                                    RESERVOIR_IMAGE_CACHE))
        pool = NegativePool(bgs, MiningParams(self.window_shape, **(self.mining or {})),
                            seed=int(self.seed), n=int(self.num_neg), cache=cache)
        if ck is not None and n_stages:
            path = out / ck["negatives"]["file"]  # (load_checkpoint checked the types)
            try:
                pool.load(out, ck["negatives"])
            except ValueError as exc:
                raise damaged_checkpoint(path, str(exc).removeprefix(f"{path}: ")) from None
        return pool

    def _checkpoint_stage(self, d: Any) -> StageResult:
        """A stage of the checkpoint resumed, its feature ids checked against this run's pool
        (a damaged id would otherwise surface later, naming neither file nor stage)."""
        st = StageResult.from_dict(d)
        n = self.pool_.n_features
        for i, lr in enumerate(st.learners):
            bad = [int(g) for g in lr.features_ if not 0 <= g < n]  # (sorted ids)
            if bad:
                raise ValueError(f"learners[{i}]: feature id {bad[-1]} out of range (the pool "
                                 f"has {n} features)")
        return st

    def _stage_positives(self, pos: np.ndarray, model: CascadeModel | None, k: int):
        """The stage's ``num_pos`` positives (the first of the pool the cascade accepts), the
        share of the pool consumed, or why training stops."""
        keep = (np.arange(len(pos)) if model is None else np.flatnonzero(
            CascadeRunner(model, threads=self.threads).accepts(pos)))
        if len(keep) < self.num_pos:
            return None, 0, {"reason": "positives_used_up", "message": (
                f"positives used up: only {len(keep)} of the {len(pos)} positives pass the {k} "
                f"stage(s) trained, {self.num_pos} are needed per stage")}
        return pos[keep[: self.num_pos]], int(keep[self.num_pos - 1]) + 1, None

    def _false_alarm_target(self) -> tuple[float, str]:
        """The acceptance ratio at which training stops, and how it is computed: with trees,
        traincascade's "required leaf false alarm rate" divides the cascade's target by the
        depth, so the message must say so (with ``--stages 4`` and depth 2 the run stops at
        0.0312, not at 0.5 ** 4)."""
        depth = self.max_depth if self.weak_learner == "tree" else 1
        formula = "max_false_alarm^num_stages" + (" / max_depth" if depth > 1 else "")
        return self.max_false_alarm ** self.num_stages / depth, formula

    def _mining_stop(self, res: MiningResult, k: int, n_bgs: int) -> dict[str, str] | None:
        """Why training stops after mining stage ``k``'s negatives, or None."""
        required, formula = self._false_alarm_target()
        if k > 0 and res.n_scanned and (res.target_reached or (
                len(res.windows) == self.num_neg and res.acceptance_ratio <= required)):
            return {"reason": "false_alarm_target", "message": (
                f"the cascade's false-alarm target is reached: acceptance ratio "
                f"{res.acceptance_ratio:.3g} <= {required:.3g} ({formula}) "
                f"after scanning {res.n_scanned} background windows")}
        found = len(res.windows)
        if found >= self._min_neg:
            return None
        floor = (f"; a stage trains on at least min_neg = {self._min_neg}"
                 if self._min_neg < self.num_neg else "")
        if res.budget_reached:
            return {"reason": "mining_budget", "message": (
                f"mining budget reached: {found} of the {self.num_neg} negatives found in the "
                f"{res.n_scanned} windows scanned (mining_budget {self.mining_budget}, "
                f"acceptance ratio {res.acceptance_ratio:.3g}){floor}")}
        why = ""
        if res.n_scanned == 0:  # not a cascade rejecting everything: nothing to scan at all
            n_bad = len(res.unreadable)
            h, w = self.window_shape
            why = ("; none of the background images could be read" if n_bad == n_bgs else
                   f"; {n_bad} of the {n_bgs} background images could not be read, the other "
                   f"{n_bgs - n_bad} yield no {w}x{h} window (smaller than the window at "
                   "every mining scale)")
        return {"reason": "negatives_exhausted", "message": (
            f"negatives exhausted: {found} of the {self.num_neg} negatives found "
            f"after scanning {res.n_scanned} windows of {n_bgs} background images "
            f"({res.passes} passes, {len(res.unreadable)} unreadable){why}{floor}")}

    def _boost_stage(self, pw: np.ndarray, nw: np.ndarray, k: int, emit, log, executor
                     ) -> tuple[StageResult, dict[str, Any], float]:
        """Stage ``k`` from its positives and negatives; also when its features were ready."""

        def on_round(t: int, loss: float, hit: float, fa: float) -> None:
            emit("round", round=t, loss=loss, hit_rate=hit, false_alarm=fa)

        if self.reservoir is not None:
            t3 = time.perf_counter()
            st, finfo = self._reservoir_stage(pw, nw, k, on_round)
            return st, finfo, t3
        windows = np.concatenate([pw, nw])
        y = np.r_[np.ones(len(pw)), -np.ones(len(nw))]
        search, finfo = self._make_search(windows, k, log, executor)
        t3 = time.perf_counter()
        st = train_stage(search, y, loss=self.loss, shape=self._shape(),
                         min_hit_rate=float(self.min_hit_rate),
                         max_false_alarm=float(self.max_false_alarm),
                         max_weak_count=int(self.max_weak_count),
                         weight_trim_rate=float(self.weight_trim_rate),
                         balanced_init=bool(self.balanced_init), callback=on_round)
        return st, finfo, t3

    def _check_not_flat(self, windows: np.ndarray) -> None:
        """Refuse stage 0's negatives when not one passes the σ gate the cascade detects with.

        Stage 0 draws its windows before there is a cascade, so flat ones too; the detector
        never evaluates a window whose grey-level σ is at most its gate, so from uniform
        backgrounds stage 1 would find no negative, and training would stop as if the cascade
        had met its false-alarm target, with a model that learnt nothing. The σ is that of the
        window without its 1-pixel border (where OpenCV measures it).
        """
        gate = (self.mining or {}).get("min_std")
        gate = OPENCV_MIN_STD if gate is None else float(gate)
        if gate <= 0 or len(windows) == 0:
            return
        inner = windows[:, 1:-1, 1:-1] if min(windows.shape[1:3]) > 2 else windows
        top = 0.0
        for a in range(0, len(inner), 256):  # a chunk at a time: no float copy of them all
            sigma = inner[a:a + 256].reshape(min(256, len(inner) - a), -1).std(axis=1)
            top = max(top, float(sigma.max()))
            if top > gate:
                return
        raise TrainingError(
            f"backgrounds: none of the {len(windows)} negatives of stage 0 has a grey-level "
            f"standard deviation above the σ gate of {gate:g} (max {top:.3g}); the detector "
            "never evaluates such flat windows, so nothing can be learnt from them: give "
            "textured backgrounds or a lower --min-std")

    def _cascade_fa(self, stages: list[StageResult]) -> float:
        return float(np.prod([s.false_alarm for s in stages])) if stages else 1.0

    def _model_params(self) -> dict[str, Any]:
        gate = (self.mining or {}).get("min_std")
        box = self._object_box
        return {
            # the model detects with the σ gate its negatives were mined with
            **({} if gate is None else {"min_std": float(gate)}),
            # and reports the object inside its window
            **({} if box is None else {"object_box": list(box)}),
            "stageParams": {
                "boostType": BOOST_TYPES[self.loss],
                "minHitRate": float(self.min_hit_rate),
                "maxFalseAlarm": float(self.max_false_alarm),
                "weightTrimRate": float(self.weight_trim_rate),
                "maxDepth": int(self.max_depth if self.weak_learner == "tree" else 1),
                "maxWeakCount": int(self.max_weak_count),
            },
            "trainer": {k: v for k, v in self.config_.items() if k != "pool"},
        }

    def _save(self, out: Path, cfg, stages, mining_log, stop, negatives: NegativePool) -> None:
        # the pool's file first (named by its content): the checkpoint never names a missing
        # or replaced file
        state = negatives.save(out)
        sample = None if self._stage_matrix is None else self._stage_matrix.save(out)
        save_checkpoint(out, {
            "config": cfg,
            "stages": [s.to_dict() for s in stages],
            "mining": mining_log,
            "negatives": state,
            **({"bin_sample": sample} if sample is not None else {}),
            "stop": stop,
            **({"run": self._run} if getattr(self, "_run", None) is not None else {}),
        })
        for old in out.glob("negatives-*.npy"):
            if old.name != state["file"]:
                old.unlink(missing_ok=True)
        for old in out.glob("binsample-*.npy"):
            if sample is None or old.name != sample["file"]:
                old.unlink(missing_ok=True)


def stages_digest(stages: Sequence[StageResult]) -> str:
    """A digest of trained stages (equal digests = identical cascades)."""
    data = json.dumps([{"learners": [lr.to_dict() for lr in s.learners],
                        "threshold": s.threshold} for s in stages], sort_keys=True)
    return hashlib.sha1(data.encode()).hexdigest()
