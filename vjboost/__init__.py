"""vjboost: fast Viola-Jones style boosted cascades.

The main API, flat::

    import vjboost
    model = vjboost.load("vjboost:frontalface")
    faces = vjboost.detect("photo.jpg", model)

* cascades: :func:`load` / :func:`load_model` (files and ``vjboost:``/``opencv:`` names),
  :func:`save` / :func:`save_model`, :func:`detect`, :func:`train`,
  :class:`CascadeModel`, :class:`Stage`, :class:`CascadeDetector`, :class:`Detections`,
  :class:`CascadeTrainer`;
* estimators: :class:`BoostedClassifier`, :class:`AdaBoostMH`, :class:`LogitBoostClassifier`,
  :class:`SampledBoostedClassifier`, :class:`ReservoirBooster`, :class:`SubsampleBooster`,
  :class:`OnlineCoordinateBoost`, and their weak learners' :class:`Tree`;
* feature families (:class:`HaarFamily`, :class:`MBLBPFamily`, :class:`HOGFamily`, ...) and
  :class:`FeaturePool`;
* samplers (:func:`make_sampler`, :data:`SAMPLERS`, :class:`Laminating`, ...);
* errors: :class:`VJBoostError` and its kinds.

Everything is imported on first use (:mod:`vjboost._lazy`), so ``import vjboost`` is quick.

Sub-packages
------------
io
    Images, videos, ``.vec``, annotation formats, detection writers, input expansion.
features
    Feature families over windows (Haar, LBP, HOG, histograms, ...) and partitioned pools.
boost
    Weak learners, boosting losses, samplers, online and reservoir boosting.
cascade
    Cascade training, detection and model formats (own format and OpenCV XML).
eval
    Detection evaluation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vjboost._jit import defer_blas_probe, light_cache_loads, use_user_cache
from vjboost._lazy import attach
from vjboost._version import __version__

if TYPE_CHECKING:
    from vjboost._errors import InputError, LimitError, OutputError, VJBoostError
    from vjboost.boost.ensemble import AdaBoostMH, BoostedClassifier, LogitBoostClassifier
    from vjboost.boost.online import OnlineCoordinateBoost
    from vjboost.boost.reservoir.baselines import SubsampleBooster
    from vjboost.boost.reservoir.learner import ReservoirBooster
    from vjboost.boost.sampling.bandits import UCB, EpsilonGreedy, Exp3P
    from vjboost.boost.sampling.base import Sampler
    from vjboost.boost.sampling.booster import SampledBoostedClassifier
    from vjboost.boost.sampling.laminating import Laminating, TastingLaminating
    from vjboost.boost.sampling.mas import MAS1Q, MASQ1, MASNaive
    from vjboost.boost.sampling.registry import SAMPLERS, make_sampler
    from vjboost.boost.sampling.tasting import Tasting1Q, TastingQ1
    from vjboost.boost.sampling.uniform import (
        BestFamily,
        Full,
        Uniform1Q,
        UniformNaive,
        UniformQ1,
    )
    from vjboost.boost.tree import Tree
    from vjboost.cascade.api import detect, train
    from vjboost.cascade.detector import CascadeDetector, Detections
    from vjboost.cascade.model import CascadeModel, Stage
    from vjboost.cascade.model_io import load_model, save_model

    # the short names of the two, for the flat API (``vjboost.load("vjboost:frontalface")``)
    from vjboost.cascade.model_io import load_model as load
    from vjboost.cascade.model_io import save_model as save
    from vjboost.cascade.trainer import CascadeTrainer
    from vjboost.features.acf import ChannelFamily
    from vjboost.features.base import FeatureFamily, register_family, registered_families
    from vjboost.features.custom import WindowFunctionFamily
    from vjboost.features.fourier import FourierFamily, HaarWaveletFamily
    from vjboost.features.haar import HaarFamily
    from vjboost.features.histogram import (
        ColorHistogramFamily,
        IntensityHistogramFamily,
        LabelHistogramFamily,
    )
    from vjboost.features.hog import HOGFamily
    from vjboost.features.lbp import LBPCodeFamily, LBPHistogramFamily
    from vjboost.features.mblbp import MBLBPFamily
    from vjboost.features.mbltp import MBLTPFamily
    from vjboost.features.pixel import (
        GradientMagnitudeFamily,
        PatchSumFamily,
        PixelFamily,
        PixelRGBFamily,
    )
    from vjboost.features.pool import FeaturePool

__getattr__, __dir__, __all__ = attach(__name__, __file__)
__all__ = ["__version__", *__all__]

# before numba is imported by any kernel module: compiled kernels go to a folder the user owns,
# and numba's first kernel load neither imports SciPy's linear algebra nor loads the registries
# only compilations use (vjboost._jit)
use_user_cache()
defer_blas_probe()
light_cache_loads()
