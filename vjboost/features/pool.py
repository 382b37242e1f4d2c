"""Partitioned feature pools: several families behind one global feature numbering.

A :class:`FeaturePool` concatenates families: global feature id ``g`` belongs to family ``k`` with
``offsets[k] <= g < offsets[k + 1]`` and local id ``g - offsets[k]``. The partition (one slice per
family) is what adaptive samplers draw from. The pool evaluates any set of global ids lazily
(grouped per family, each family's kernel running in parallel over windows). Whole
feature-major matrices (float32, or uint8 bins with per-feature edges) are made by
:func:`vjboost.boost.binning.precompute`, the one pool-to-matrix path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vjboost._memory import check_memory
from vjboost._threads import n_threads
from vjboost.features.base import (
    Channels,
    FeatureFamily,
    check_feature_ids,
    check_image,
    check_positions,
    check_sample_ids,
    check_windows,
    family_from_dict,
    family_to_dict,
)
from vjboost.features.channels import gray_of
from vjboost.features.program import Program, evaluate_positions, evaluate_program

__all__ = ["FeaturePool", "PoolChannels"]

@dataclass(frozen=True)
class PoolChannels:
    """Prepared channels of a pool (``prepare`` / ``prepare_image`` output).

    Attributes
    ----------
    channels : tuple of (Channels or None)
        Per family: its own channels (families without a program), None for program families.
    kind : {"windows", "image"}
    n_samples : int
    shape : tuple of int
        Window shape (windows) or image shape (image).
    names : tuple of str
        The families' names (to recognise channels prepared by another pool).
    planes : ndarray of int32 or None
        The integral planes of every program family, computed once for all of them:
        ``(S, P, H + 1, W + 1)`` (windows) or ``(P, H + 1, W + 1)`` (image).

    Examples
    --------
    >>> from vjboost.features import FourierFamily, PixelFamily
    >>> pool = FeaturePool([PixelFamily((8, 8)), FourierFamily((8, 8), size=2)])
    >>> ch = pool.prepare(np.zeros((3, 8, 8), np.uint8))
    >>> ch.kind, ch.n_samples, ch.shape, ch.names
    ('windows', 3, (8, 8), ('pixel', 'fourier'))
    >>> ch.planes.shape, [c is None for c in ch.channels]   # Fourier keeps channels of its own
    ((3, 1, 9, 9), [True, False])
    """

    channels: tuple[Channels | None, ...]
    kind: str
    n_samples: int
    shape: tuple[int, ...]
    names: tuple[str, ...] = ()
    planes: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        own = sum(c.nbytes for c in self.channels if c is not None)
        return int(own + (0 if self.planes is None else self.planes.nbytes))


class FeaturePool:
    """Several feature families under one global numbering.

    Parameters
    ----------
    families : sequence of FeatureFamily
        All with the same ``window_shape``. Colour families (``color = True``) get the RGB
        windows; gray families get them converted to gray (``cv2.COLOR_RGB2GRAY``) when the input
        is RGB.

    Attributes
    ----------
    families : tuple of FeatureFamily
    offsets : ndarray (n_families + 1,) int64
        Global id of each family's first feature; ``offsets[-1] == n_features``.
    n_features : int
    window_shape : (int, int)

    Examples
    --------
    >>> from vjboost.features import HaarFamily, MBLBPFamily
    >>> pool = FeaturePool([HaarFamily((12, 12)), MBLBPFamily((12, 12))])
    >>> pool.n_features, pool.family_sizes().tolist()
    (10828, [10344, 484])
    >>> windows = np.random.default_rng(0).integers(0, 256, (5, 12, 12), dtype=np.uint8)
    >>> pool.evaluate(pool.prepare(windows), [0, 10827]).shape   # a Haar and an MB-LBP feature
    (2, 5)
    """

    def __init__(self, families: Sequence[FeatureFamily] | FeatureFamily) -> None:
        if isinstance(families, FeatureFamily):
            families = [families]
        if isinstance(families, str | bytes) or not isinstance(families, Sequence):
            raise TypeError(
                f"families: expected a list of FeatureFamily objects, got {type(families).__name__}"
            )
        families = tuple(families)
        if not families:
            raise ValueError("families: a pool needs at least one family")
        for k, f in enumerate(families):
            if not isinstance(f, FeatureFamily):
                raise TypeError(f"families[{k}]: expected a FeatureFamily, got {type(f).__name__}")
            if int(f.n_features) < 1:
                raise ValueError(f"families[{k}] ({f.name}): has no features")
        shapes = {tuple(f.window_shape) for f in families}
        if len(shapes) != 1:
            raise ValueError(
                "families: all families of a pool must use the same window_shape, got "
                + ", ".join(f"{f.name}: {tuple(f.window_shape)}" for f in families)
            )
        self.families = families
        self.window_shape: tuple[int, int] = shapes.pop()
        sizes = np.array([int(f.n_features) for f in families], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_features = int(self.offsets[-1])
        self.color = any(bool(f.color) for f in families)
        self._kinds: np.ndarray | None = None
        self._union: tuple[Program | None, np.ndarray] | None = None

    # -- numbering ----------------------------------------------------------------------------

    @property
    def n_families(self) -> int:
        return len(self.families)

    def __len__(self) -> int:
        return self.n_features

    def __repr__(self) -> str:
        parts = ", ".join(f"{f.name}: {f.n_features}" for f in self.families)
        return f"FeaturePool({self.n_features} features; {parts})"

    def partition(self) -> list[slice]:
        """One slice of global ids per family, in family order."""
        return [
            slice(int(a), int(b)) for a, b in zip(self.offsets[:-1], self.offsets[1:], strict=True)
        ]

    def family_sizes(self) -> np.ndarray:
        """Number of features of each family, (n_families,) int64."""
        return np.diff(self.offsets)

    def locate(self, feature_ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """Map global ids to ``(family index, local id)`` arrays of the same length."""
        gids = check_feature_ids(feature_ids, self.n_features)
        fam = np.searchsorted(self.offsets, gids, side="right") - 1
        return fam.astype(np.int64), gids - self.offsets[fam]

    def global_ids(self, family: int | str, local_ids: Any = None) -> np.ndarray:
        """Global ids of ``local_ids`` (default all) of ``family`` (index or name).

        Parameters
        ----------
        family : int or str
            Index of the family in the pool, or its name (which must be unique in the pool).
        local_ids : array-like of int, optional
            Feature ids within that family (default all).

        Returns
        -------
        ndarray of int64
            ``local_ids + offsets[family]``.

        Examples
        --------
        >>> from vjboost.features import HaarFamily, MBLBPFamily
        >>> pool = FeaturePool([HaarFamily((8, 8)), MBLBPFamily((8, 8))])
        >>> int(pool.global_ids("mblbp", [0])[0]) == pool.families[0].n_features
        True
        """
        k = self._family_index(family)
        lids = check_feature_ids(local_ids, self.families[k].n_features, "local_ids")
        return lids + self.offsets[k]

    def _family_index(self, family: int | str) -> int:
        if isinstance(family, str):
            names = [f.name for f in self.families]
            if names.count(family) != 1:
                raise ValueError(
                    f"family: {family!r} names {names.count(family)} families of this pool "
                    f"({names}); use the family index"
                )
            return names.index(family)
        if isinstance(family, bool) or not isinstance(family, int | np.integer):
            raise TypeError(f"family: expected an index or a name, got {family!r}")
        if not 0 <= int(family) < self.n_families:
            raise ValueError(f"family: index {family} out of range 0..{self.n_families - 1}")
        return int(family)

    def describe(self, feature_id: int) -> dict[str, Any]:
        """The family's description of a global feature, plus ``global_index``/``family_index``."""
        fam, loc = self.locate([feature_id])
        d = dict(self.families[int(fam[0])].describe(int(loc[0])))
        d["global_index"] = int(feature_id)
        d["family_index"] = int(fam[0])
        d["local_index"] = int(loc[0])
        return d

    @property
    def opencv_type(self) -> str | None:
        """The family's ``opencv_type`` for a one-family pool, else None."""
        return self.families[0].opencv_type if self.n_families == 1 else None

    def _program_part(self) -> tuple[Program | None, np.ndarray]:
        """The program families' features as one program (their channels united), and per
        family the row of its first feature in it (-1: no program)."""
        if self._union is None:
            progs = [f.program() for f in self.families]
            first = np.full(self.n_families, -1, dtype=np.int64)
            have = [p for p in progs if p is not None]
            sizes = np.cumsum([0] + [p.n_features for p in have])
            k = 0
            for i, p in enumerate(progs):
                if p is not None:
                    first[i] = sizes[k]
                    k += 1
            self._union = (Program.concat(have) if have else None, first)
        return self._union

    def _program_rows(self, gids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``gids`` belong to program families, and their rows in the union program."""
        fam = np.searchsorted(self.offsets, gids, side="right") - 1
        first = self._program_part()[1]
        sel = first[fam] >= 0
        return sel, first[fam[sel]] + (gids[sel] - self.offsets[fam[sel]])

    def program(self, feature_ids: Any = None) -> Program | None:
        """Global ``feature_ids`` (default all) as one compiled program (in that order), or
        None when some family has no program.

        With ``feature_ids`` the program reads only the channel planes those features need.
        """
        gids = check_feature_ids(feature_ids, self.n_features)
        if feature_ids is not None and self._union is None:
            return self._program_of(gids)
        union, first = self._program_part()
        if (first < 0).any():
            return None
        if feature_ids is None:
            return union
        return union.take(self._program_rows(gids)[1]).compact()

    def _program_of(self, gids: np.ndarray) -> Program | None:
        """:meth:`program` of ``gids`` without the union of the families' whole programs: each
        family's program of its own features (families with large pools build only those,
        see ``FeatureFamily._build_program_of``), united, in the order of ``gids``."""
        fam, local = self.locate(gids)
        parts, rows, n = [], np.empty(len(gids), dtype=np.int64), 0
        for k, f in enumerate(self.families):
            sel = np.flatnonzero(fam == k)
            # a family none of whose features is used must still say whether it has a program
            # (the model runs the generic path if not): ask for its first feature, which is
            # cheap, as an empty set of ids is not a valid request
            part = f.program(local[sel] if sel.size else np.zeros(1, dtype=np.int64))
            if part is None:
                return None
            if sel.size:
                parts.append(part)
                rows[sel] = n + np.arange(sel.size)
                n += sel.size
        return Program.concat(parts).take(rows).compact() if parts else None

    def kinds(self) -> np.ndarray:
        """(n_features,) bool: True where the feature is categorical."""
        if self._kinds is None:
            self._kinds = np.concatenate([np.asarray(f.kinds(), dtype=bool) for f in self.families])
        return self._kinds

    # -- persistence --------------------------------------------------------------------------

    def get_config(self) -> dict[str, Any]:
        """JSON-serialisable description: ``{"families": [{"family": name, "config": {...}}]}``."""
        return {"families": [family_to_dict(f) for f in self.families]}

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> FeaturePool:
        """Rebuild a pool (families must be registered, see ``register_family``)."""
        if not isinstance(cfg, dict) or not isinstance(cfg.get("families"), list):
            raise ValueError("pool config: expected a mapping with a 'families' list")
        return cls([family_from_dict(d) for d in cfg["families"]])

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`get_config` as JSON (atomically)."""
        from vjboost._io import atomic_write

        atomic_write(path, json.dumps(self.get_config(), indent=2))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FeaturePool:
        """Read a pool written by :meth:`save`."""
        with open(path, encoding="utf-8") as fh:
            try:
                cfg = json.load(fh)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: not a valid pool JSON file ({exc})") from None
        return cls.from_config(cfg)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeaturePool) and self.get_config() == other.get_config()

    __hash__ = None  # type: ignore[assignment]

    # -- preparation --------------------------------------------------------------------------

    def _inputs(self, windows: Any) -> tuple[np.ndarray | None, np.ndarray | None, int]:
        """Validated (gray, rgb) stacks as the families need them (gray None when no family
        reads gray pixels itself)."""
        arr = np.asarray(windows)
        h, w = self.window_shape
        is_rgb = arr.ndim in (3, 4) and arr.shape[-1] == 3 and arr.shape[-3:-1] == (h, w)
        if arr.ndim == 3 and arr.shape[1:] == (h, w):
            is_rgb = False
        if self.color and not is_rgb:
            names = [f.name for f in self.families if f.color]
            raise ValueError(
                f"windows: families {names} need RGB windows (S, {h}, {w}, 3), got shape "
                f"{arr.shape}"
            )
        if not is_rgb:
            gray = check_windows(arr, self.window_shape)
            return gray, None, gray.shape[0]
        rgb = check_windows(arr, self.window_shape, color=True)
        gray = gray_of(rgb) if any(not f.color for f in self.families) else None
        return gray, rgb, rgb.shape[0]

    def channels_nbytes(self, n_samples: int) -> int:
        """Estimated bytes of :meth:`prepare` output for ``n_samples`` windows."""
        union, first = self._program_part()
        h, w = self.window_shape
        total = 0 if union is None else union.channels.nbytes(int(n_samples), h, w)
        return int(total + sum(f.channels_nbytes(n_samples)
                               for f, k in zip(self.families, first, strict=True) if k < 0))

    def prepare(self, windows: Any, *, threads: int | None = None) -> PoolChannels:
        """Prepare every family's channels for a stack of windows.

        The integral planes of all program families are computed once, for the union of their
        channels; other families prepare their own channels.

        Parameters
        ----------
        windows : uint8 (S, H, W) gray or (S, H, W, 3) RGB
        threads : int, optional
            numba threads (default all).
        """
        gray, rgb, n = self._inputs(windows)
        check_memory(
            self.channels_nbytes(n),
            f"prepared channels of {n} windows for {self.n_families} families",
            advice="Prepare and evaluate the windows in batches, or use fewer families.",
        )
        union, first = self._program_part()
        with n_threads(threads):
            planes = None if union is None else union.channels.windows(
                rgb if rgb is not None else gray)
            chans = tuple(None if k >= 0 else f.prepare(rgb if f.color else gray)
                          for f, k in zip(self.families, first, strict=True))
        return PoolChannels(chans, "windows", n, tuple(self.window_shape),
                            tuple(f.name for f in self.families), planes)

    def prepare_image(self, image: Any, *, threads: int | None = None) -> PoolChannels:
        """Prepare every family's channels for one whole image (detection).

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W) or (H, W, 3)
            At least as large as the window; RGB when the pool has colour families (gray
            families then read its gray conversion).
        threads : int, optional
            numba threads (``None``: all).

        Returns
        -------
        PoolChannels
            For :meth:`evaluate_at`.
        """
        img = np.asarray(image)
        gray, rgb = img, None
        if img.ndim == 3 and img.shape[-1] == 3:
            rgb = check_image(img, self.window_shape, color=True)
            if any(not f.color for f in self.families):
                gray = gray_of(rgb[None])[0]
        elif self.color:
            raise ValueError(
                f"image: the pool's colour families need an RGB image, got {img.shape}"
            )
        else:
            gray = check_image(img, self.window_shape)
        union, first = self._program_part()
        with n_threads(threads):
            planes = None if union is None else union.channels.image(
                rgb if rgb is not None else gray)
            chans = tuple(None if k >= 0 else f.prepare_image(rgb if f.color else gray)
                          for f, k in zip(self.families, first, strict=True))
        return PoolChannels(chans, "image", 1, tuple(gray.shape[:2]),
                            tuple(f.name for f in self.families), planes)

    # -- evaluation ---------------------------------------------------------------------------

    def _as_prepared(self, data: Any, threads: int | None, kind: str = "windows"
                     ) -> PoolChannels:
        if isinstance(data, PoolChannels):
            if data.kind != kind:
                raise ValueError(f"windows: got {data.kind} channels; use "
                                 f"{'evaluate_at' if data.kind == 'image' else 'evaluate'}")
            if data.names != tuple(f.name for f in self.families):
                raise ValueError("windows: channels were prepared by a different pool")
            return data
        return self.prepare(data, threads=threads)

    def _evaluate_groups(self, gids: np.ndarray, out: np.ndarray, program_part: Any,
                         family_part: Any) -> None:
        """Fill ``out`` rows: program features in one call, the others family by family."""
        sel, rows = self._program_rows(gids)
        if sel.any():
            out[sel] = program_part(rows)
        fam = np.searchsorted(self.offsets, gids, side="right") - 1
        for k in np.unique(fam[~sel]):
            idx = np.flatnonzero(fam == k)
            out[idx] = family_part(int(k), gids[idx] - self.offsets[k])

    def evaluate(
        self,
        windows: Any,
        feature_ids: Any = None,
        sample_ids: Any = None,
        *,
        threads: int | None = None,
    ) -> np.ndarray:
        """Values of global ``feature_ids`` on ``sample_ids``, float32 (Q, S').

        Parameters
        ----------
        windows : raw windows or :class:`PoolChannels` from :meth:`prepare`
            Pass prepared channels when evaluating repeatedly (lazy, sampled training).
        feature_ids : int array (Q,), optional
            Global ids in any order (default all); rows follow this order.
        sample_ids : int array (S',), optional
            Windows to evaluate (default all).
        threads : int, optional
        """
        gids = check_feature_ids(feature_ids, self.n_features)
        if isinstance(windows, PoolChannels):
            prep = self._as_prepared(windows, threads)
            n = prep.n_samples
        else:
            # raw windows: prepare only the planes, families and windows that are asked for
            prep = None
            gray, rgb, n = self._inputs(windows)
        sids = check_sample_ids(sample_ids, n)
        check_memory(
            gids.shape[0] * sids.shape[0] * 4,
            f"feature values ({gids.shape[0]} features x {sids.shape[0]} windows float32)",
            advice="Evaluate fewer features or windows at a time.",
        )
        out = np.empty((gids.shape[0], sids.shape[0]), dtype=np.float32)
        union = self._program_part()[0]

        def data(color: bool) -> np.ndarray:
            d = rgb if (color and rgb is not None) else gray
            return d if sample_ids is None else d[sids]

        if prep is not None:
            def program_part(rows):
                return evaluate_program(union, planes=prep.planes, feature_ids=rows,
                                        sample_ids=sids)

            def family_part(k, local):
                """Family ``k``'s features ``local`` from its prepared channels.

                Parameters
                ----------
                k : int
                    The family's index in the pool.
                local : ndarray of int64
                    Its local feature ids.

                Returns
                -------
                ndarray of float32, shape (len(local), S)
                """
                return self.families[k].evaluate(prep.channels[k], local, sids)
        else:
            def program_part(rows):
                prog = union.take(rows).compact()
                return evaluate_program(prog, data(prog.channels.color or rgb is not None))

            def family_part(k, local):
                """Family ``k``'s features ``local``, its channels prepared from the windows.

                Parameters
                ----------
                k : int
                    The family's index in the pool.
                local : ndarray of int64
                    Its local feature ids.

                Returns
                -------
                ndarray of float32, shape (len(local), S)
                """
                f = self.families[k]
                return f.evaluate(f.prepare(data(f.color)), local)

        with n_threads(threads):
            sel, rows = self._program_rows(gids)
            if sel.all():  # one program call gives every row: no copy into ``out``
                return program_part(rows)
            self._evaluate_groups(gids, out, program_part, family_part)
        return out

    def evaluate_at(
        self,
        prepared_image: PoolChannels,
        feature_ids: Any,
        positions: Any,
        *,
        threads: int | None = None,
    ) -> np.ndarray:
        """Values of global ``feature_ids`` for windows at ``positions`` (P, 2) ``(y, x)``.

        Parameters
        ----------
        prepared_image : PoolChannels
            From :meth:`prepare_image`.
        feature_ids : array-like of int or None
            Global feature ids (``None``: all).
        positions : array-like of int, shape (P, 2)
            Top-left ``(y, x)`` of each window in pixels; every window must lie inside the
            image.
        threads : int, optional
            numba threads (``None``: all).

        Returns
        -------
        ndarray of float32, shape (Q, P)
        """
        if not isinstance(prepared_image, PoolChannels) or prepared_image.kind != "image":
            raise TypeError("prepared_image: expected the output of FeaturePool.prepare_image")
        prep = self._as_prepared(prepared_image, threads, "image")
        gids = check_feature_ids(feature_ids, self.n_features)
        pos = check_positions(positions, prep.shape, self.window_shape)
        out = np.empty((gids.shape[0], pos.shape[0]), dtype=np.float32)
        union = self._program_part()[0]
        with n_threads(threads):
            self._evaluate_groups(
                gids, out,
                lambda rows: evaluate_positions(union, prep.planes, pos, feature_ids=rows),
                lambda k, local: self.families[k].evaluate_at(prep.channels[k], local, pos))
        return out
