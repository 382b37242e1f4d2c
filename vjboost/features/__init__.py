"""Feature families, partitioned feature pools and user-defined features.

Names are exported lazily (:mod:`vjboost._lazy`): importing this package imports no family. The
registry (:func:`registered_families`, :func:`get_family_class`) imports the built-in family
modules, which register their families, the first time it is asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vjboost._lazy import attach

if TYPE_CHECKING:
    from vjboost.features.acf import ChannelFamily
    from vjboost.features.base import (
        Channels,
        FeatureFamily,
        check_channels,
        check_feature_ids,
        check_image,
        check_positions,
        check_sample_ids,
        check_windows,
        family_from_dict,
        family_to_dict,
        get_family_class,
        register_family,
        registered_families,
        window_stack,
    )
    from vjboost.features.custom import WindowFunctionFamily, function_family
    from vjboost.features.fourier import (
        FOURIER_SOURCES,
        FourierFamily,
        HaarWaveletFamily,
        haar_wavelet_bands,
    )
    from vjboost.features.haar import HAAR_TYPES, HaarFamily, haar_feature_table, haar_pool_size
    from vjboost.features.histogram import (
        COLOR_SPACES,
        ColorHistogramFamily,
        IntensityHistogramFamily,
        LabelHistogramFamily,
        color_labels,
        convert_color,
        grid_rects,
    )
    from vjboost.features.hog import (
        HOG_NORMS,
        HOGFamily,
        fhog_descriptor,
        fhog_length,
        hog_descriptor,
    )
    from vjboost.features.lbp import (
        LBP_METHODS,
        LBPCodeFamily,
        LBPHistogramFamily,
        lbp_code_count,
        lbp_offsets,
        local_binary_pattern,
    )
    from vjboost.features.mblbp import MBLBPFamily, mblbp_feature_table, mblbp_reference
    from vjboost.features.mbltp import (
        DEFAULT_TOLERANCES,
        DETRENDED_TOLERANCES,
        MBLTPDFamily,
        MBLTPFamily,
        mbltp_reference,
    )
    from vjboost.features.pixel import (
        GradientMagnitudeFamily,
        PatchSumFamily,
        PixelFamily,
        PixelRGBFamily,
        gather_columns,
        gradient_magnitude,
        pixel_program,
    )
    from vjboost.features.pool import FeaturePool, PoolChannels

__getattr__, __dir__, __all__ = attach(__name__, __file__)
