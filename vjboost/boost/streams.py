"""Sample streams: the ``Filter()`` of reservoir and filtering boosting.

A stream hands out labelled samples in batches, ``take(n) -> (samples, labels)``, and never holds
the whole set in memory: arrays are indexed lazily (pass an ``np.memmap`` or ``np.load(...,
mmap_mode="r")`` array and only the requested rows are read), image folders keep only the list of
file names, ``.vec`` files are memory-mapped record by record. Samples are drawn in epochs: each
epoch visits every sample once in a random order (``shuffle=True``, seeded) or in file order, and
a new epoch starts when one is exhausted, so a stream is an endless source of draws from the
underlying set.

Streams
-------
:class:`ArrayStream`
    Rows of any indexable array (ndarray, memmap) with a label array.
:class:`ImageFolderStream`
    Image files in folders, one label per folder (read with :func:`vjboost.io.read_image`).
:class:`VecStream`
    An OpenCV ``.vec`` file of positives (one label for all samples).
:class:`FunctionStream`
    Batches produced by a function ``fn(n, rng) -> (samples, labels)`` (e.g. negatives mined
    on the fly).
:class:`MixedStream`
    Several streams mixed in given proportions (e.g. positives and negatives).

Every stream has ``n_samples`` (``None`` if unbounded) and ``sample_shape``.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vjboost._validation import check_array, check_in_range, check_labels, check_random_state
from vjboost.io import IMAGE_SUFFIXES, ImageReadError, read_image
from vjboost.io.vec import decode_vec_pixels, vec_layout

__all__ = [
    "ArrayStream",
    "FunctionStream",
    "ImageFolderStream",
    "MixedStream",
    "SampleStream",
    "VecStream",
]

class SampleStream(abc.ABC):
    """A source of labelled samples drawn in batches (the ``Filter()`` of the learner).

    Attributes
    ----------
    n_samples : int or None
        Size of the underlying set (``None``: unbounded).
    sample_shape : tuple of int
        Shape of one sample (e.g. ``(H, W)`` for windows, ``(D,)`` for feature rows).
    """

    n_samples: int | None
    sample_shape: tuple[int, ...]

    @abc.abstractmethod
    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The next ``n`` samples and their labels: arrays (n, *sample_shape) and (n,)."""

    def _check_n(self, n: Any) -> int:
        return int(check_in_range(n, "n", low=1, integer=True))


class _EpochStream(SampleStream):
    """Streams over a finite indexed set: epochs of (shuffled) indices."""

    def __init__(self, n_samples: int, shuffle: bool, seed: Any) -> None:
        if n_samples <= 0:
            raise ValueError("the stream holds no samples")
        if not isinstance(shuffle, bool):
            raise TypeError(f"shuffle: expected a bool, got {shuffle!r}")
        self.n_samples = int(n_samples)
        self.shuffle = shuffle
        self._rng = check_random_state(seed)
        self._order = self._new_epoch()
        self._pos = 0
        self.epochs_ = 0

    def _new_epoch(self) -> np.ndarray:
        if self.shuffle:
            return self._rng.permutation(self.n_samples)
        return np.arange(self.n_samples)

    def next_ids(self, n: int) -> np.ndarray:
        """Indices (into the underlying set) of the next ``n`` draws."""
        n = self._check_n(n)
        out = np.empty(n, dtype=np.int64)
        filled = 0
        while filled < n:
            if self._pos == self.n_samples:
                self._order = self._new_epoch()
                self._pos = 0
                self.epochs_ += 1
            m = min(n - filled, self.n_samples - self._pos)
            out[filled : filled + m] = self._order[self._pos : self._pos + m]
            self._pos += m
            filled += m
        return out

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        ids = self.next_ids(n)
        return self._read(ids), self._labels(ids)

    @abc.abstractmethod
    def _read(self, ids: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _labels(self, ids: np.ndarray) -> np.ndarray: ...


def _check_labels(labels: Any, n: int, name: str = "labels") -> np.ndarray:
    """Labels of a stream: any class values (one class allowed), one per sample."""
    codes, classes = check_labels(labels, name, n_samples=n, min_classes=1)
    return classes[codes]


class ArrayStream(_EpochStream):
    """Rows of an indexable array, read only when drawn.

    Parameters
    ----------
    X : array-like of shape (N, ...)
        Any object with ``len`` and NumPy fancy indexing on the first axis: an ndarray, an
        ``np.memmap`` or an ``np.load(path, mmap_mode="r")`` array (nothing is read up front).
    y : array-like of shape (N,)
        Labels (held in memory: 8 bytes per sample at most).
    shuffle : bool, default=True
        Random order within each epoch.
    seed : int, Generator or None
    """

    def __init__(self, X: Any, y: Any, *, shuffle: bool = True, seed: Any = None) -> None:
        if not hasattr(X, "shape") or not hasattr(X, "__getitem__"):
            raise TypeError(f"X: expected an array-like with a shape, got {type(X).__name__}")
        if len(X.shape) < 1:
            raise ValueError("X: expected at least a 1-D array of samples")
        self.X = X
        self.y = _check_labels(y, int(X.shape[0]), "y")
        self.sample_shape = tuple(int(s) for s in X.shape[1:])
        super().__init__(int(X.shape[0]), shuffle, seed)

    @classmethod
    def from_npy(cls, path: str | os.PathLike[str], y: Any, **kwargs: Any) -> ArrayStream:
        """Stream the rows of a ``.npy`` file, memory-mapped (never loaded whole).

        Parameters
        ----------
        path : path-like
            The ``.npy`` file, shape (N, ...).
        y : array-like of shape (N,)
            Labels.
        **kwargs
            ``shuffle`` and ``seed``, as for the class.

        Returns
        -------
        ArrayStream
        """
        try:
            X = np.load(path, mmap_mode="r")
        except FileNotFoundError:
            raise ValueError(f"{path}: no such .npy file") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: cannot be memory-mapped as .npy ({exc})") from None
        return cls(X, y, **kwargs)

    def _read(self, ids: np.ndarray) -> np.ndarray:
        # sorted reads are sequential on a memmap; the draw order is restored afterwards
        order = np.argsort(ids, kind="stable")
        rows = np.asarray(self.X[ids[order]])
        out = np.empty_like(rows)
        out[order] = rows
        return out

    def _labels(self, ids: np.ndarray) -> np.ndarray:
        return self.y[ids]


class ImageFolderStream(_EpochStream):
    """Image files in folders, one label per folder, decoded only when drawn.

    Parameters
    ----------
    folders : mapping {folder: label} or path
        Folders and the label of their images. A single path means: its sub-folders, in sorted
        order, are the classes ``0, 1, ...``.
    window : (height, width), optional
        Required sample size (default: the size of the first image drawn). Images of another
        size are an error unless ``resize=True``.
    resize : bool, default=False
        Resize images to ``window`` (area interpolation).
    gray : bool, default=True
        Read as grayscale (H, W) uint8; otherwise RGB (H, W, 3).
    extensions : sequence of str
        File name endings considered images (case-insensitive).
    shuffle : bool, default=True
    seed : int, Generator or None
    """

    def __init__(
        self,
        folders: Mapping[str | os.PathLike[str], Any] | str | os.PathLike[str],
        *,
        window: tuple[int, int] | None = None,
        resize: bool = False,
        gray: bool = True,
        extensions: Sequence[str] = IMAGE_SUFFIXES,
        shuffle: bool = True,
        seed: Any = None,
    ) -> None:
        if isinstance(folders, (str, os.PathLike)):
            root = Path(folders)
            if not root.is_dir():
                raise ValueError(f"folders: {root} is not a folder")
            subs = sorted(p for p in root.iterdir() if p.is_dir())
            if not subs:
                raise ValueError(f"folders: {root} has no class sub-folders")
            folders = {p: i for i, p in enumerate(subs)}
        if not isinstance(folders, Mapping) or not folders:
            raise TypeError("folders: expected a non-empty mapping {folder: label} or a path")
        exts = tuple(e.lower() for e in extensions)
        paths: list[Path] = []
        labels: list[Any] = []
        for folder, label in folders.items():
            folder = Path(folder)
            if not folder.is_dir():
                raise ValueError(f"folders: {folder} is not a folder")
            files = sorted(p for p in folder.iterdir() if p.is_file()
                           and p.name.lower().endswith(exts))
            if not files:
                raise ValueError(f"folders: {folder} holds no image files ({', '.join(exts)})")
            paths.extend(files)
            labels.extend([label] * len(files))
        if window is not None:
            window = (int(check_in_range(window[0], "window[0]", low=1, integer=True)),
                      int(check_in_range(window[1], "window[1]", low=1, integer=True)))
        if resize and window is None:
            raise ValueError("resize: needs an explicit window (height, width)")
        self.paths = paths
        self.y = _check_labels(labels, len(paths))
        self.window = window
        self.resize = bool(resize)
        self.gray = bool(gray)
        super().__init__(len(paths), shuffle, seed)
        if window is None:
            first = self._load(0)
            self.window = (int(first.shape[0]), int(first.shape[1]))
        self.sample_shape = self.window if gray else (*self.window, 3)

    def _load(self, i: int) -> np.ndarray:
        img = read_image(self.paths[i], gray=self.gray)
        if self.window is not None and img.shape[:2] != tuple(self.window):
            if not self.resize:
                h, w = self.window
                raise ImageReadError(
                    f"{self.paths[i]}: image is {img.shape[1]}x{img.shape[0]}, expected "
                    f"{w}x{h} (pass resize=True to resize)"
                )
            import cv2

            img = cv2.resize(img, (self.window[1], self.window[0]), interpolation=cv2.INTER_AREA)
        return img

    def _read(self, ids: np.ndarray) -> np.ndarray:
        return np.stack([self._load(int(i)) for i in ids])

    def _labels(self, ids: np.ndarray) -> np.ndarray:
        return self.y[ids]


class VecStream(_EpochStream):
    """Samples of an OpenCV ``.vec`` file, memory-mapped and decoded only when drawn.

    Parameters
    ----------
    path : path-like
    window : (height, width), optional
        Sample size (default: square, as :func:`vjboost.io.read_vec`).
    label : int, default=1
        Label of every sample.
    shuffle : bool, default=True
    seed : int, Generator or None
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        window: tuple[int, int] | None = None,
        label: int = 1,
        shuffle: bool = True,
        seed: Any = None,
    ) -> None:
        layout = vec_layout(path, window)
        self.path = layout.path
        self.window = layout.window
        self.sample_shape = layout.window
        self.label = label
        self._layout = layout
        self._records = np.memmap(layout.path, dtype=layout.record_dtype, mode="r",
                                  offset=layout.offset, shape=(layout.n_samples,))
        n = layout.n_samples
        super().__init__(n, shuffle, seed)

    def _read(self, ids: np.ndarray) -> np.ndarray:
        order = np.argsort(ids, kind="stable")
        px = np.asarray(self._records["px"][ids[order]])
        out = np.empty((ids.size, *self.window), dtype=np.uint8)
        out[order] = decode_vec_pixels(px, self._layout)
        return out

    def _labels(self, ids: np.ndarray) -> np.ndarray:
        return np.full(ids.size, self.label)


class FunctionStream(SampleStream):
    """Batches from a function ``fn(n, rng) -> (samples (n, ...), labels (n,))``.

    Parameters
    ----------
    fn : callable
        Called with the batch size and a seeded ``numpy.random.Generator``.
    sample_shape : tuple of int
    n_samples : int, optional
        Size of the underlying set when bounded (``None``: unbounded).
    seed : int, Generator or None
    """

    def __init__(
        self,
        fn: Callable[[int, np.random.Generator], tuple[Any, Any]],
        sample_shape: tuple[int, ...],
        *,
        n_samples: int | None = None,
        seed: Any = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
        self.fn = fn
        self.sample_shape = tuple(int(s) for s in sample_shape)
        self.n_samples = (None if n_samples is None
                          else int(check_in_range(n_samples, "n_samples", low=1, integer=True)))
        self._rng = check_random_state(seed)

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        n = self._check_n(n)
        X, y = self.fn(n, self._rng)
        X = np.asarray(X)
        y = np.asarray(y)
        if X.shape != (n, *self.sample_shape) or y.shape != (n,):
            raise ValueError(
                f"fn: returned samples {X.shape} and labels {y.shape}, expected "
                f"{(n, *self.sample_shape)} and ({n},)"
            )
        return X, y


class MixedStream(SampleStream):
    """Several streams mixed: each draw comes from stream ``k`` with probability ``p_k``.

    Parameters
    ----------
    streams : sequence of SampleStream
        Streams of samples of the same shape.
    proportions : sequence of float, optional
        Mixing probabilities (normalised); default proportional to the streams' sizes (all
        streams must then be bounded).
    seed : int, Generator or None
        Seeds the split of each batch between the streams and the batch order.
    """

    def __init__(
        self,
        streams: Sequence[SampleStream],
        proportions: Sequence[float] | None = None,
        *,
        seed: Any = None,
    ) -> None:
        streams = list(streams)
        if not streams or not all(isinstance(s, SampleStream) for s in streams):
            raise TypeError("streams: expected a non-empty sequence of SampleStream objects")
        shapes = {s.sample_shape for s in streams}
        if len(shapes) > 1:
            raise ValueError(f"streams: samples have different shapes {sorted(shapes)}")
        sizes = [s.n_samples for s in streams]
        if proportions is None:
            if any(n is None for n in sizes):
                raise ValueError("proportions: required when a stream is unbounded")
            p = np.asarray(sizes, dtype=np.float64)
        else:
            p = check_array(proportions, "proportions", ndim=1, dtype=np.float64)
            if p.shape[0] != len(streams):
                raise ValueError(
                    f"proportions: has {p.shape[0]} entries for {len(streams)} streams"
                )
            if (p < 0).any() or not p.sum() > 0:
                raise ValueError("proportions: must be non-negative with a positive sum")
        self.streams = streams
        self.proportions = p / p.sum()
        self.sample_shape = streams[0].sample_shape
        self.n_samples = None if any(n is None for n in sizes) else int(sum(sizes))
        self._rng = check_random_state(seed)

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        n = self._check_n(n)
        counts = self._rng.multinomial(n, self.proportions)
        xs, ys = [], []
        for s, c in zip(self.streams, counts, strict=True):
            if c:
                X, y = s.take(int(c))
                xs.append(X)
                ys.append(y)
        X = np.concatenate(xs)
        y = np.concatenate(ys)
        perm = self._rng.permutation(n)
        return X[perm], y[perm]
