"""User-defined feature families.

Two ways to add features of your own:

1. **Subclass** :class:`~vjboost.features.base.FeatureFamily` (set ``name``, implement
   ``describe``, ``get_config``, ``prepare``, ``evaluate``, ``prepare_image``, ``evaluate_at``) and
   decorate the class with :func:`~vjboost.features.base.register_family`.
2. **Hand a numba function for one window**: ``@numba.njit def f(window, out)`` that fills
   ``out`` (float32, one value per feature) from one ``(H, W)`` uint8 window (``(H, W, 3)`` with
   ``color=True``). Either

   * wrap it directly: ``WindowFunctionFamily(f, n_features=..., window_shape=(24, 24))``
     (saved as an import path ``"module:function"``, so ``f`` must be importable to reload), or
   * make a named, registered family class with :func:`function_family`, whose configuration is
     just the window shape (reloadable wherever the defining module has been imported).

   The generic kernel calls the function once per window, in parallel over windows (numba
   code without the GIL, on a thread pool of ``numba.get_num_threads()`` threads), and keeps the
   requested features. Cost: every evaluation computes all of the function's features for
   the requested windows, so keep one function's feature count moderate, or split it.

Registered families take part in pools (:class:`~vjboost.features.pool.FeaturePool`), sampling,
training, saving and loading like the built-in ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from vjboost._threads import run_tasks
from vjboost.features.base import (
    Channels,
    FeatureFamily,
    check_window_shape,
    get_family_class,
    register_family,
)

__all__ = ["WindowFunctionFamily", "function_family"]


# The kernels take the user's dispatcher as an argument, so each function gets its own compiled
# specialisation. Such specialisations cannot be cached on disk, and a `parallel=True` one takes
# seconds to compile; these kernels are therefore sequential and release the GIL, and
# `_run_threaded` runs them on chunks of windows in a thread pool.
@numba.njit(nogil=True)
def _eval_windows(  # pragma: no cover - numba
    func, windows, sample_ids, feature_ids, n_all, out, j0, j1
):
    buf = np.zeros(n_all, dtype=np.float32)
    for j in range(j0, j1):
        buf[:] = 0.0
        func(windows[sample_ids[j]], buf)
        for q in range(feature_ids.shape[0]):
            out[q, j] = buf[feature_ids[q]]


@numba.njit(nogil=True)
def _eval_positions(  # pragma: no cover - numba
    func, image, positions, h, w, feature_ids, n_all, out, j0, j1
):
    buf = np.zeros(n_all, dtype=np.float32)
    for j in range(j0, j1):
        buf[:] = 0.0
        y = positions[j, 0]
        x = positions[j, 1]
        func(np.ascontiguousarray(image[y : y + h, x : x + w]), buf)
        for q in range(feature_ids.shape[0]):
            out[q, j] = buf[feature_ids[q]]


def _run_threaded(kernel, args: tuple, n: int) -> None:
    """Call ``kernel(*args, j0, j1)`` on chunks of ``range(n)`` with numba's thread count."""
    n_thr = max(1, min(numba.get_num_threads(), n // 16 or 1))
    bounds = np.linspace(0, n, n_thr + 1).astype(np.int64)
    run_tasks(list(zip(bounds[:-1], bounds[1:], strict=True)),
              lambda ab: kernel(*args, ab[0], ab[1]),
              threads=n_thr)


def _check_func(func: Any) -> Any:
    if not isinstance(func, numba.core.registry.CPUDispatcher):
        raise TypeError(
            "func: expected a numba-compiled function (decorate it with @numba.njit) taking "
            f"(window, out), got {type(func).__name__}"
        )
    return func


def _func_path(func: Any) -> str:
    py = getattr(func, "py_func", func)
    return f"{py.__module__}:{py.__qualname__}"


def _import_func(path: str) -> Any:
    if not isinstance(path, str) or ":" not in path:
        raise ValueError(f"func: expected an import path 'module:function', got {path!r}")
    mod_name, qual = path.split(":", 1)
    try:
        obj: Any = importlib.import_module(mod_name)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"func: cannot import {path!r} ({exc}); the module that defines the feature function "
            "must be importable when the pool or model is loaded"
        ) from None
    return obj


class WindowFunctionFamily(FeatureFamily):
    """A family computed by a numba function of one window.

    Parameters
    ----------
    func : numba dispatcher ``f(window, out) -> None``
        ``window``: ``(H, W)`` uint8 (``(H, W, 3)`` if ``color``), C-contiguous; ``out``: float32
        ``(n_features,)`` zero-initialised, to fill. Must be thread-safe (no global state).
    n_features : int
        Number of values ``func`` writes.
    window_shape : (int, int)
    color : bool, default False
        ``func`` takes RGB windows.
    categorical : bool, default False
        Values are integer codes 0..255 (categorical splits) rather than ordered values.
    descriptions : list of str, optional
        Text of each feature for ``describe``.

    Examples
    --------
    >>> import numba
    >>> @numba.njit
    ... def row_means(window, out):
    ...     for y in range(window.shape[0]):
    ...         out[y] = window[y].mean()
    >>> fam = WindowFunctionFamily(row_means, n_features=4, window_shape=(4, 4),
    ...                            descriptions=[f"mean of row {y}" for y in range(4)])
    >>> fam.describe(2)["text"]
    'mean of row 2'
    >>> windows = np.zeros((2, 4, 4), np.uint8)
    >>> windows[1, 2:] = 100                        # the second window's bottom half bright
    >>> fam.compute(windows).tolist()               # rows: features; columns: windows
    [[0.0, 0.0], [0.0, 0.0], [0.0, 100.0], [0.0, 100.0]]
    """

    name = "window_function"

    def __init__(
        self,
        func: Any,
        *,
        n_features: int,
        window_shape: tuple[int, int] = (24, 24),
        color: bool = False,
        categorical: bool = False,
        descriptions: list[str] | None = None,
    ) -> None:
        if isinstance(func, str):
            func = _import_func(func)
        self.func = _check_func(func)
        if isinstance(n_features, bool) or not isinstance(n_features, int | np.integer):
            raise TypeError(f"n_features: expected an integer, got {n_features!r}")
        if n_features < 1:
            raise ValueError(f"n_features: expected >= 1, got {n_features}")
        self.n_features = int(n_features)
        self.window_shape = check_window_shape(window_shape)
        self.color = bool(color)  # type: ignore[misc]  # instance-level override of ClassVar
        self.categorical = bool(categorical)
        if categorical:
            self.n_categories = 256  # type: ignore[misc]
        if descriptions is not None:
            descriptions = [str(d) for d in descriptions]
            if len(descriptions) != self.n_features:
                raise ValueError(
                    f"descriptions: expected {self.n_features} entries, got {len(descriptions)}"
                )
        self.descriptions = descriptions

    def _extra_config(self) -> dict[str, Any]:
        return {
            "func": _func_path(self.func),
            "n_features": self.n_features,
        }

    def get_config(self) -> dict[str, Any]:
        cfg = self._extra_config()
        cfg.update(
            window_shape=list(self.window_shape),
            color=self.color,
            categorical=self.categorical,
            descriptions=self.descriptions,
        )
        return cfg

    @classmethod
    def from_config(cls, cfg: Any) -> FeatureFamily:
        cfg = dict(cfg)
        cfg["window_shape"] = tuple(cfg.get("window_shape", (24, 24)))
        return cls(**cfg)

    def describe(self, i: int) -> dict[str, Any]:
        i = self._check_index(i)
        text = (
            self.descriptions[i]
            if self.descriptions is not None
            else f"{self.name}[{i}] ({_func_path(self.func)})"
        )
        return {"family": self.name, "index": i, "text": text, "window_shape": self.window_shape}

    def kind(self, i: int) -> str:
        self._check_index(i)
        return "categorical" if self.categorical else "ordered"

    def kinds(self) -> np.ndarray:
        return np.full(self.n_features, self.categorical, dtype=bool)

    def channels_nbytes(self, n_samples: int) -> int:
        h, w = self.window_shape
        return int(n_samples) * h * w * (3 if self.color else 1)

    def _prepare(self, windows: np.ndarray) -> Channels:
        """The windows themselves (validated, uint8, C-contiguous): array ``"windows"``."""
        return Channels(self.name, "windows", self.window_shape, windows.shape[0],
                        {"windows": windows})

    def _prepare_image(self, image: np.ndarray) -> Channels:
        """The image itself: array ``"image"``."""
        return Channels(self.name, "image", image.shape[:2], 1, {"image": image})

    def _evaluate(self, channels: Channels, feature_ids: np.ndarray,
                  sample_ids: np.ndarray) -> np.ndarray:
        out = np.empty((feature_ids.shape[0], sample_ids.shape[0]), dtype=np.float32)
        _run_threaded(_eval_windows, (self.func, channels["windows"], sample_ids, feature_ids,
                                      self.n_features, out), sample_ids.size)
        return out

    def _evaluate_at(self, channels: Channels, feature_ids: np.ndarray,
                     positions: np.ndarray) -> np.ndarray:
        h, w = self.window_shape
        out = np.empty((feature_ids.shape[0], positions.shape[0]), dtype=np.float32)
        _run_threaded(_eval_positions, (self.func, channels["image"], positions, h, w,
                                        feature_ids, self.n_features, out), positions.shape[0])
        return out


register_family(WindowFunctionFamily)


def _registered_family(name: str, window_shape: list[int]) -> FeatureFamily:
    """The family ``name`` of the registry on ``window_shape`` (unpickling a family that
    :func:`function_family` made)."""
    return get_family_class(name)(tuple(window_shape))


def function_family(
    func: Any,
    *,
    name: str,
    n_features: int | Callable[[tuple[int, int]], int],
    color: bool = False,
    categorical: bool = False,
    describe: Callable[[int, tuple[int, int]], str] | None = None,
) -> type[FeatureFamily]:
    """Create and register a named family class from a per-window numba function.

    Parameters
    ----------
    func : numba dispatcher ``f(window, out)``
        See :class:`WindowFunctionFamily`.
    name : str
        Registry name (unique).
    n_features : int or callable ``window_shape -> int``
    color, categorical : bool
    describe : callable ``(i, window_shape) -> str``, optional
        Text of feature ``i``.

    Returns
    -------
    type
        A registered :class:`FeatureFamily` subclass whose only constructor argument is
        ``window_shape``: ``cls((24, 24))``. Its config is ``{"window_shape": [H, W]}``, so saved
        pools and models reload it by name once the defining module has run.

    Examples
    --------
    The function and its family live in a module of their own (here written to a temporary folder),
    which must be importable wherever a saved pool or model using the family is loaded:

    >>> import pathlib, sys, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = pathlib.Path(folder, "column_features.py").write_text('''
    ... import numba
    ... from vjboost.features import function_family
    ...
    ... @numba.njit
    ... def column_means(window, out):
    ...     for x in range(window.shape[1]):
    ...         out[x] = window[:, x].mean()
    ...
    ... ColumnMeans = function_family(column_means, name="column_means",
    ...                               n_features=lambda shape: shape[1],
    ...                               describe=lambda i, shape: f"mean of column {i}")
    ... ''')
    >>> sys.path.insert(0, folder)
    >>> from column_features import ColumnMeans
    >>> sys.path.remove(folder)                     # as before; the module stays imported
    >>> fam = ColumnMeans((3, 3))
    >>> ColumnMeans.__name__, fam.get_config(), fam.describe(2)["text"]
    ('ColumnMeansFamily', {'window_shape': [3, 3]}, 'mean of column 2')
    >>> fam.compute(np.arange(9, dtype=np.uint8).reshape(1, 3, 3)).ravel().tolist()
    [3.0, 4.0, 5.0]
    >>> from vjboost.features import get_family_class
    >>> get_family_class("column_means") is ColumnMeans   # what loading a saved pool or model does
    True
    """
    func = _check_func(func)
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, got {name!r}")

    def __init__(self: Any, window_shape: tuple[int, int] = (24, 24)) -> None:  # noqa: N807
        ws = check_window_shape(window_shape)
        n = n_features(ws) if callable(n_features) else n_features
        descs = [describe(i, ws) for i in range(int(n))] if describe is not None else None
        WindowFunctionFamily.__init__(
            self, func, n_features=int(n), window_shape=ws, color=color, categorical=categorical,
            descriptions=descs
        )

    def get_config(self: Any) -> dict[str, Any]:
        return {"window_shape": list(self.window_shape)}

    def __reduce__(self: Any) -> tuple[Any, ...]:  # noqa: N807
        # the class is made here, not importable by its name (the caller binds it to any
        # name): pickle finds it again by its registry name, as a saved pool does
        return _registered_family, (name, list(self.window_shape))

    cls = type(
        f"{name.title().replace('_', '').replace('-', '')}Family",
        (WindowFunctionFamily,),
        {
            "name": name,
            "__init__": __init__,
            "get_config": get_config,
            "__reduce__": __reduce__,
            "__module__": getattr(func.py_func, "__module__", __name__),
            "__doc__": f"Feature family {name!r} computed by {_func_path(func)}.",
        },
    )
    return register_family(cls)
