"""Families whose features are weighted rectangle sums over the gray integral image.

Subclasses set ``self._rects`` (Q, R, 6) and ``self._weights`` (Q, R) in the format of
:func:`vjboost.features.integral.weighted_rect_sums` (channel 0 = the gray integral image) and
get the training and detection paths from here.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from vjboost._memory import check_memory
from vjboost.features.base import (
    Channels,
    FeatureFamily,
    check_channels,
    check_feature_ids,
    check_image,
    check_sample_ids,
    check_windows,
)
from vjboost.features.integral import (
    integral_images,
    weighted_rect_sums,
    weighted_rect_sums_at,
)

__all__ = ["GrayRectSumFamily"]


class GrayRectSumFamily(FeatureFamily):
    """Base of families defined by a table of weighted rectangles on one gray integral image."""

    _rects: np.ndarray
    _weights: np.ndarray
    #: what the channels are, for memory-budget messages
    _channels_what: ClassVar[str] = "integral images"

    def channels_nbytes(self, n_samples: int) -> int:
        h, w = self.window_shape
        return int(n_samples) * (h + 1) * (w + 1) * 4

    def prepare(self, windows: Any) -> Channels:
        win = check_windows(windows, self.window_shape)
        check_memory(self.channels_nbytes(win.shape[0]), f"{self.name} {self._channels_what}")
        ii = integral_images(win)[:, None]
        return Channels(self.name, "windows", self.window_shape, win.shape[0], {"ii": ii})

    def evaluate(self, channels: Channels, feature_ids: Any = None,
                 sample_ids: Any = None) -> np.ndarray:
        ch = check_channels(channels, self, "windows")
        fids = check_feature_ids(feature_ids, self.n_features)
        sids = check_sample_ids(sample_ids, ch.n_samples)
        return weighted_rect_sums(ch["ii"], self._rects[fids], self._weights[fids], sids)

    def prepare_image(self, image: Any) -> Channels:
        img = check_image(image, self.window_shape)
        ii = integral_images(img[None], dtype=np.int64)[:, None]
        return Channels(self.name, "image", img.shape[:2], 1, {"ii": ii})

    def evaluate_at(self, channels: Channels, feature_ids: Any, positions: Any) -> np.ndarray:
        ch = check_channels(channels, self, "image")
        fids = check_feature_ids(feature_ids, self.n_features)
        return weighted_rect_sums_at(ch["ii"], self._rects[fids], self._weights[fids],
                                     positions, self.window_shape)
