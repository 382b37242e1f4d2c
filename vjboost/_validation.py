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
    "check_labels",
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


def check_labels(
    y: Any,
    name: str = "y",
    *,
    n_samples: int | None = None,
    signed: bool = False,
    negative: tuple[int, ...] = (0, -1),
    n_classes: int | None = None,
    min_classes: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """The one label checker: validate class labels and encode them.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (any sortable values, e.g. ints or strings; floats must be finite).
    name : str
        Argument name used in error messages.
    n_samples : int, optional
        Required number of labels.
    signed : bool, default=False
        Two-class convention of streams and margins: labels must be ``1`` (positive) or one
        of ``negative``; a batch may hold one class only. Returns ``y`` in {-1, +1}.
    negative : tuple of int, default=(0, -1)
        The accepted negative labels with ``signed``.
    n_classes : int, optional
        Required number of distinct labels (2 for two-class estimators).
    min_classes : int, default=2
        Smallest number of distinct labels accepted (ignored with ``signed``).

    Returns
    -------
    codes : ndarray of shape (n_samples,)
        ``signed``: float64 labels in {-1, +1}. Otherwise int64 class indices into ``classes``
        (with two classes, ``2 * codes - 1`` is the usual {-1, +1} coding).
    classes : ndarray
        The sorted distinct labels (``signed``: ``[-1, 1]`` or ``[0, 1]``, as given).

    Examples
    --------
    >>> codes, classes = check_labels(["b", "a", "b"])
    >>> codes.tolist(), classes.tolist()
    ([1, 0, 1], ['a', 'b'])
    >>> check_labels([1, 0, 1], signed=True)[0].tolist()
    [1.0, -1.0, 1.0]
    """
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of labels, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: empty label array")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(f"{name}: has {arr.shape[0]} labels but there are {n_samples} samples")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name}: labels contain NaN or infinite values")
    if signed:
        allowed = (1, *negative)
        ok = np.isin(arr, allowed) if arr.dtype.kind in "biuf" else np.zeros(arr.size, bool)
        if not ok.all():
            bad = np.unique(arr[~ok])[:5].tolist()
            neg = " or ".join(str(v) for v in negative)
            raise ValueError(f"{name}: labels must be 1 (positive) and {neg} (negative), "
                             f"got {bad}")
        classes = np.array([-1, 1]) if (arr.astype(np.float64) < 0).any() else np.array([0, 1])
        return np.where(arr.astype(np.float64) > 0, 1.0, -1.0), classes
    classes, codes = np.unique(arr, return_inverse=True)
    first = classes[0].item() if hasattr(classes[0], "item") else classes[0]
    if n_classes is not None and classes.size != n_classes:
        if classes.size == 1:
            raise ValueError(f"{name}: only one class present ({first!r}); "
                             f"boosting needs {n_classes} classes")
        raise ValueError(f"{name}: expected {'two' if n_classes == 2 else n_classes} classes, "
                         f"got {classes.size} "
                         f"({classes[:5]!r}...)" + ("; use a multi-class booster (AdaBoostMH, "
                                                    "LogitBoostClassifier) for more"
                                                    if n_classes == 2 else ""))
    if classes.size < min_classes:
        raise ValueError(f"{name}: only one class present ({first!r}); need at least "
                         f"{min_classes}")
    return codes.astype(np.int64).reshape(-1), classes


def check_binary_labels(y: Any, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Two class labels mapped to {-1, +1}: :func:`check_labels` with ``n_classes=2``.

    The larger label (or ``True``/1) is the positive class. Returns ``(y_pm float64, classes)``
    with the negative class first.
    """
    codes, classes = check_labels(y, name, n_classes=2)
    return 2.0 * codes - 1.0, classes


def check_sample_weight(
    sample_weight: Any, n_samples: int, name: str = "sample_weight", *,
    normalize: bool = True, positive: bool = False,
) -> np.ndarray:
    """The one sample-weight checker: non-negative weights with a positive sum.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
        ``None`` gives uniform weights.
    n_samples : int
    name : str
        Argument name used in error messages.
    normalize : bool, default=True
        Scale the weights to sum to one (else ``None`` gives ones).
    positive : bool, default=False
        Refuse zero weights too.

    Returns
    -------
    ndarray of shape (n_samples,), float64
    """
    if sample_weight is None:
        return np.full(n_samples, 1.0 / n_samples if normalize else 1.0)
    w = check_array(sample_weight, name, ndim=1, dtype=np.float64)
    if w.shape[0] != n_samples:
        raise ValueError(f"{name}: has {w.shape[0]} entries but there are {n_samples} samples")
    if positive and (w <= 0).any():
        raise ValueError(f"{name}: weights must be positive ({int((w <= 0).sum())} are not)")
    if (w < 0).any():
        raise ValueError(f"{name}: negative weights are not allowed ({int((w < 0).sum())} found)")
    total = w.sum()
    if not total > 0:
        raise ValueError(f"{name}: all weights are zero")
    return w / total if normalize else w


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
