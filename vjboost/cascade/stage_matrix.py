"""The exhaustive search's binned feature matrix, carried from stage to stage.

From one stage to the next most training windows stay: the positives still accepted by the
cascade (nearly all of them) and the negatives the negative pool carries. Their feature values
do not change, so :class:`StageMatrix` keeps the uint8 matrix of the last stage and computes
only the columns of the windows it has not seen (matched by their pixels), then moves the kept
columns into place row by row (:func:`vjboost.boost.binning.carry_columns`, no second matrix).

This needs bins that do not change between stages: the edges are placed once per run, on a
seeded sample of the first stage's windows (exactly the edges that stage has always had); the
sample itself (``edge_sample_size`` windows) is what a checkpoint keeps, so that a resumed run
places the same edges and trains the cascade an uninterrupted run trains. When carrying the
matrix does not fit the memory budget, the stage's matrix is computed afresh with the same
edges (the same matrix, more time).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_open, read_npy
from ..boost.binning import carry_columns, edge_sample, precompute, precompute_nbytes
from ..boost.source import MatrixSource
from .checkpoint import array_digest

__all__ = ["StageMatrix"]


class StageMatrix:
    """Binned feature matrices of a run's stages, with bin edges fixed for the run.

    Parameters
    ----------
    pool : FeaturePool
    n_bins : int, default 256
        Bins per ordered feature.
    edge_sample_size : int, default 1024
        Windows of the first stage the edges are placed on.
    threads : int, optional
    carry : bool, default True
        Keep the last matrix and compute only new windows' columns (``False``: every stage's
        matrix afresh, with the same edges; the same matrices).

    Attributes
    ----------
    sample_ : ndarray of uint8, shape (S, height, width) or None
        The windows the edges were placed on (None before the first stage).
    edges_ : ndarray of float32, shape (n_features, E) or None

    Examples
    --------
    >>> from vjboost.features.haar import HaarFamily
    >>> from vjboost.features.pool import FeaturePool
    >>> pool = FeaturePool([HaarFamily((8, 8))])
    >>> w = np.random.default_rng(0).integers(0, 256, (50, 8, 8), dtype=np.uint8)
    >>> sm = StageMatrix(pool, edge_sample_size=20)
    >>> a, how = sm.matrix(w[:40], seed=0)
    >>> b, how = sm.matrix(w[10:], seed=1)          # 30 columns kept, 10 computed
    >>> how, bool((b.matrix == precompute(pool, w[10:], edges=sm.edges_).matrix).all())
    ('carried 30 of 40 windows', True)
    """

    def __init__(self, pool: Any, *, n_bins: int = 256, edge_sample_size: int = 1024,
                 threads: int | None = None, carry: bool = True) -> None:
        self.pool = pool
        self.n_bins = int(n_bins)
        self.edge_sample_size = int(edge_sample_size)
        self.threads = threads
        self.carry = bool(carry)
        self.sample_: np.ndarray | None = None
        self.edges_: np.ndarray | None = None
        self._source: MatrixSource | None = None
        self._windows: np.ndarray | None = None
        self._matched: tuple[np.ndarray, np.ndarray] | None = None

    # -- memory ---------------------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Bytes held between stages (the carried matrix and the edges)."""
        held = 0 if self._source is None else self._source.matrix.nbytes
        return held + (0 if self.edges_ is None else self.edges_.nbytes)

    def nbytes_needed(self, windows: np.ndarray) -> int:
        """Peak bytes of :meth:`matrix` on ``windows``, besides what :attr:`nbytes` holds."""
        n = len(windows)
        if self._source is None or not self.carry:
            return precompute_nbytes(self.pool, n, dtype="uint8")
        m = int(np.count_nonzero(self._match(windows) < 0))
        q = self.pool.n_features
        extra = 0 if self._source.matrix.shape[1] == n else q * n
        return extra + precompute_nbytes(self.pool, m, dtype="uint8")

    def drop(self) -> None:
        """Forget the carried matrix (the edges stay)."""
        self._source = self._windows = self._matched = None

    # -- the matrices ---------------------------------------------------------------------------

    def _match(self, windows: np.ndarray) -> np.ndarray:
        """Column of the carried matrix holding each window, or -1 (kept for the last windows
        asked: a stage's memory check and :meth:`matrix` ask it for the same windows)."""
        if self._windows is None:
            return np.full(len(windows), -1, dtype=np.int64)
        if self._matched is not None and self._matched[0] is windows:
            return self._matched[1]
        size = int(np.prod(windows.shape[1:]))
        old = self._windows.reshape(len(self._windows), size)
        # a dict of the windows' bytes: faster here than sorting them as byte strings
        where: dict[bytes, int] = {}
        for j in range(len(old) - 1, -1, -1):  # the first of equal windows wins
            where[old[j].tobytes()] = j
        new = np.ascontiguousarray(windows).reshape(len(windows), size)
        at = np.array([where.get(new[i].tobytes(), -1) for i in range(len(new))],
                      dtype=np.int64)
        self._matched = (windows, at)
        return at

    def matrix(self, windows: np.ndarray, *, seed: Any = 0, budget: int | None = None,
               executor: Any = None) -> tuple[MatrixSource, str]:
        """The binned matrix of a stage's windows.

        Parameters
        ----------
        windows : ndarray of uint8, shape (N, height, width)
        seed : int
            The stage's seed (places the edges on the first stage; unused afterwards).
        budget : int, optional
            Memory budget of the feature caches (bytes).
        executor : vjboost._parallel.Executor, optional
            Evaluate the new columns as tasks.

        Returns
        -------
        matrix : MatrixSource
            Rows = the pool's features, columns = ``windows``; kept until the next call.
        how : str
            ``"edges placed"``, ``"carried K of N windows"`` or ``"computed"``.
        """
        windows = np.ascontiguousarray(windows)
        if self.edges_ is None and self.sample_ is not None:
            self.edges_ = precompute(self.pool, self.sample_, "uint8", n_bins=self.n_bins,
                                     threads=self.threads, executor=executor).edges
        if self.edges_ is None:
            src = precompute(self.pool, windows, "uint8", n_bins=self.n_bins,
                             edge_sample_size=min(self.edge_sample_size, len(windows)),
                             seed=seed, budget=budget, threads=self.threads, executor=executor)
            sub = edge_sample(len(windows), self.edge_sample_size, seed)
            self.sample_ = windows if sub is None else windows[sub]
            self.edges_, how = src.edges, "edges placed"
        elif self._source is not None and self.carry:
            at = self._match(windows)
            todo = np.flatnonzero(at < 0)
            old = self._source
            fresh = (precompute(self.pool, windows[todo], "uint8", edges=self.edges_,
                                budget=budget, threads=self.threads, executor=executor).matrix
                     if todo.size else np.empty((old.n_features, 0), dtype=np.uint8))
            same = old.matrix.shape[1] == len(windows)
            values = carry_columns(old.matrix, at, fresh,
                                   out=old.matrix if same else None, threads=self.threads)
            del fresh
            src = MatrixSource(values, edges=self.edges_, categorical=old.categorical,
                               families=old.partition, feature_ids=old._feature_ids)
            how = f"carried {len(windows) - len(todo)} of {len(windows)} windows"
        else:
            self.drop()
            src = precompute(self.pool, windows, "uint8", edges=self.edges_, budget=budget,
                             threads=self.threads, executor=executor)
            how = "computed"
        if self.carry:
            self._source, self._windows, self._matched = src, windows, None
        return src, how

    # -- checkpoints ----------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike[str]) -> dict[str, Any] | None:
        """Write :attr:`sample_` to ``folder/binsample-<digest>.npy`` (atomically); returns the
        state for the checkpoint, or None before the first stage."""
        if self.sample_ is None:
            return None
        digest = array_digest(self.sample_)
        name = f"binsample-{digest}.npy"
        path = Path(folder) / name
        if not path.exists():
            with atomic_open(path) as fh:
                np.save(fh, self.sample_)
        return {"file": name, "digest": digest}

    def load(self, folder: str | os.PathLike[str], state: dict[str, Any]) -> None:
        """Restore the edge sample :meth:`save` wrote (the edges are placed again from it).

        Raises
        ------
        InputError
            The file cannot be read (the message names it).
        ValueError
            The sample does not match the state.
        """
        sample = read_npy(Path(folder) / state["file"], what="bin-edge sample")
        if sample.dtype != np.uint8 or array_digest(sample) != state["digest"]:
            raise ValueError("the bin-edge sample does not match its checkpoint")
        self.sample_, self.edges_ = sample, None
        self.drop()
