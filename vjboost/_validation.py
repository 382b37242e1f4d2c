"""Input validation shared by every public entry point.

Kernels compiled with numba give unreadable errors on bad input, so every public function checks
its arguments here first and raises a ``ValueError``/``TypeError`` that names the argument.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "check_array",
    "check_binary_labels",
    "check_consistent_length",
    "check_in_range",
    "check_random_state",
    "check_sample_weight",
]


def check_array(
    x: Any,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    dtype: Any = None,
    allow_empty: bool = False,
    finite: bool = True,
) -> np.ndarray:
    """Convert ``x`` to an ndarray and check its shape and values.

    Parameters
    ----------
    x : array-like
        The input.
    name : str
        Argument name used in error messages.
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions.
    dtype : numpy dtype, optional
        Convert to this dtype (``None`` keeps the input dtype; non-numeric input is refused).
    allow_empty : bool, default=False
        Accept arrays with zero elements.
    finite : bool, default=True
        Refuse NaN and infinite values (floating inputs only).

    Returns
    -------
    ndarray
    """
    try:
        arr = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: cannot convert to a numeric array ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(f"{d}-D" for d in allowed)
            raise ValueError(f"{name}: expected a {want} array, got shape {arr.shape}")
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name}: empty array (shape {arr.shape})")
    if finite and arr.dtype.kind == "f" and arr.size and not np.isfinite(arr).all():
        n_bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name}: contains {n_bad} NaN or infinite value(s)")
    return arr


def check_consistent_length(**arrays: np.ndarray) -> int:
    """Check that all arrays have the same first dimension and return it."""
    lengths = {k: len(v) for k, v in arrays.items() if v is not None}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(f"inconsistent numbers of samples: {desc}")
    return next(iter(lengths.values()))


def check_binary_labels(y: Any, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Map binary labels to ±1.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Exactly two distinct values. The larger one (or ``True``/1) is the positive class.
    name : str
        Argument name used in error messages.

    Returns
    -------
    y_pm : ndarray of shape (n_samples,), float64
        Labels in {-1, +1}.
    classes : ndarray of shape (2,)
        The original labels, negative class first.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of labels, got shape {y.shape}")
    if y.size == 0:
        raise ValueError(f"{name}: empty label array")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{name}: labels contain NaN or infinite values")
    classes = np.unique(y)
    if classes.size == 1:
        raise ValueError(
            f"{name}: only one class present ({classes[0]!r}); boosting needs two classes"
        )
    if classes.size > 2:
        raise ValueError(
            f"{name}: expected two classes, got {classes.size} ({classes[:5]!r}...); "
            "use a multi-class booster (AdaBoost.MH) for more"
        )
    y_pm = np.where(y == classes[1], 1.0, -1.0)
    return y_pm, classes


def check_sample_weight(
    sample_weight: Any, n_samples: int, name: str = "sample_weight"
) -> np.ndarray:
    """Validate non-negative weights with a positive sum; ``None`` gives uniform weights.

    Returns float64 weights normalised to sum to one.
    """
    if sample_weight is None:
        return np.full(n_samples, 1.0 / n_samples)
    w = check_array(sample_weight, name, ndim=1, dtype=np.float64)
    if w.shape[0] != n_samples:
        raise ValueError(f"{name}: has {w.shape[0]} entries but there are {n_samples} samples")
    if (w < 0).any():
        raise ValueError(f"{name}: negative weights are not allowed ({int((w < 0).sum())} found)")
    total = w.sum()
    if not total > 0:
        raise ValueError(f"{name}: all weights are zero")
    return w / total


def check_in_range(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
    integer: bool = False,
) -> Any:
    """Check a scalar hyper-parameter against an interval and return it."""
    kind = Integral if integer else Real
    if isinstance(value, bool) or not isinstance(value, kind):
        what = "an integer" if integer else "a real number"
        raise TypeError(f"{name}: expected {what}, got {value!r}")
    ok = True
    if low is not None:
        ok &= value >= low if low_inclusive else value > low
    if high is not None:
        ok &= value <= high if high_inclusive else value < high
    if not ok or (not integer and not np.isfinite(value)):
        lo = "(-inf" if low is None else ("[" if low_inclusive else "(") + f"{low}"
        hi = "inf)" if high is None else f"{high}" + ("]" if high_inclusive else ")")
        raise ValueError(f"{name}: must be in the range {lo}, {hi}, got {value!r}")
    return value


def check_random_state(seed: Any) -> np.random.Generator:
    """Turn ``seed`` (None, int, Generator) into a ``numpy.random.Generator``."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, Integral) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ValueError(f"seed: must be non-negative, got {seed}")
        return np.random.default_rng(seed)
    raise TypeError(f"seed: expected None, an int or a numpy Generator, got {seed!r}")
