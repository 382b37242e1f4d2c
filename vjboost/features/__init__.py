"""Feature families, partitioned feature pools and user-defined features.

Importing this package registers every built-in family (see :func:`registered_families`).
"""

from __future__ import annotations

import importlib

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
)

__all__ = [
    "Channels",
    "FeatureFamily",
    "check_channels",
    "check_feature_ids",
    "check_image",
    "check_positions",
    "check_sample_ids",
    "check_windows",
    "family_from_dict",
    "family_to_dict",
    "get_family_class",
    "register_family",
    "registered_families",
]

# Family modules: importing one registers its families. Optional ones are skipped only when the
# module itself does not exist (an error inside a module still surfaces).
_FAMILY_MODULES = (
    "haar",
    "mblbp",
    "custom",
    "pool",
    "lbp",
    "hog",
    "histogram",
    "fourier",
    "pixel",
    "acf",
)

for _mod in _FAMILY_MODULES:
    _full = f"{__name__}.{_mod}"
    try:
        _m = importlib.import_module(_full)
    except ModuleNotFoundError as _exc:
        if _exc.name != _full:
            raise
        continue
    for _name in getattr(_m, "__all__", ()):
        globals()[_name] = getattr(_m, _name)
        __all__.append(_name)

del _mod, _full
