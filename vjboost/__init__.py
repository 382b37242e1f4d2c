"""vjboost: fast Viola-Jones style boosted cascades.

Subpackages
-----------
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

__version__ = "0.1.0"

__all__ = ["__version__"]
