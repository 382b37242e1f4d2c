"""Training checkpoints: the stages trained so far, written atomically after every stage.

A checkpoint is one JSON file holding the settings that determine the result (``config``), the
feature pool, every finished stage (weak learners with global feature ids and leaf values,
threshold, statistics) and, once training has ended, why it stopped. Resuming reloads the stages
and continues: every random choice of stage ``k`` is drawn from ``(seed, k)``, so the resumed run
trains exactly the cascade an uninterrupted run would.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from .._io import atomic_write, read_json

__all__ = [
    "CHECKPOINT_FILES",
    "CHECKPOINT_NAME",
    "CheckpointError",
    "array_digest",
    "check_resumable",
    "checkpoint_stages",
    "config_differences",
    "damaged_checkpoint",
    "load_checkpoint",
    "save_checkpoint",
]


def array_digest(arr: np.ndarray) -> str:
    """The short digest a checkpoint records of an array's bytes (its positives, its negative
    pool, its bin-edge sample), compared when a run is resumed.

    Parameters
    ----------
    arr : ndarray

    Returns
    -------
    str
        16 hexadecimal digits (of the SHA-1 of the array's bytes in C order).

    Examples
    --------
    >>> array_digest(np.zeros((2, 3), np.uint8))
    '7722745105e9e02e'
    """
    return hashlib.sha1(np.ascontiguousarray(arr).view(np.uint8).ravel()).hexdigest()[:16]

CHECKPOINT_NAME = "checkpoint.json"
_VERSION = 1


class CheckpointError(InputError):
    """A checkpoint is unreadable or was written with other settings."""


def damaged_checkpoint(path: str | os.PathLike[str], why: str) -> CheckpointError:
    """The error of a checkpoint file that cannot be resumed (``checkpoint.json`` or a file it
    names in the run's folder, such as the negative pool's ``.npy``).

    Parameters
    ----------
    path : path-like
        The damaged file (its folder is the run's folder).
    why : str
        What is wrong with it.

    Returns
    -------
    CheckpointError
        To raise: one line naming the file, what is wrong and what to do.
    """
    path = Path(path)
    return CheckpointError(
        f"{path}: damaged training checkpoint ({why}); it cannot be resumed: delete "
        f"{path.parent} to train again from scratch, or train into a new output folder")


def _is_count(v: Any) -> bool:
    """An ``int`` that is not a ``bool`` and not negative (JSON counts and cursors)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _plain_name(v: Any) -> bool:
    """A file name in the run's folder: no folder part, so a checkpoint cannot point outside."""
    return isinstance(v, str) and v not in ("", ".", "..") and "/" not in v and "\\" not in v \
        and "\0" not in v


def _state_problem(key: str, state: Any) -> str | None:
    """What is wrong with the ``negatives`` or ``bin_sample`` state of a checkpoint, or
    ``None``. The types are checked here, once, so that resuming never meets a value it cannot
    use (a string for the cursors, ``null`` for the state, a negative cursor...)."""
    if not isinstance(state, dict):
        return f"'{key}' is not a mapping but {type(state).__name__}"
    if not _plain_name(state.get("file")):
        return f"'{key}.file' is missing or not a file name in the run's folder"
    if not isinstance(state.get("digest"), str):
        return f"'{key}.digest' is missing or not a string"
    if key == "bin_sample":
        return None
    for field, required in (("cursor", True), ("unit_windows", False)):
        value = state.get(field, None if required else {})
        if not isinstance(value, dict) or not all(_is_count(v) for v in value.values()):
            return (f"'{key}.{field}' is missing or not a mapping of image paths to "
                    "non-negative integers")
    unreadable = state.get("unreadable", [])
    if not isinstance(unreadable, list) or not all(isinstance(v, str) for v in unreadable):
        return f"'{key}.unreadable' is not a list of image paths"
    for field in ("checked_stages", "n_windows"):
        if not _is_count(state.get(field)):
            return f"'{key}.{field}' is missing or not a non-negative integer"
    return None


def save_checkpoint(folder: str | os.PathLike[str], state: dict[str, Any]) -> Path:
    """Write ``state`` to ``folder/checkpoint.json`` atomically; returns the path.

    Parameters
    ----------
    folder : path-like
        The training's output folder (must exist).
    state : dict
        JSON-ready training state (``config``, ``stages``, ``mining``, ...); a ``version``
        key is added to the copy written.

    Returns
    -------
    Path

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = save_checkpoint(folder, {"config": {"n_stages": 3}, "stages": []})
    >>> load_checkpoint(folder)["config"]
    {'n_stages': 3}
    """
    path = Path(folder) / CHECKPOINT_NAME
    data = dict(state)
    data["version"] = _VERSION
    atomic_write(path, json.dumps(data, indent=1))
    return path


def load_checkpoint(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The checkpoint of ``folder``, or ``None`` when there is none.

    Raises
    ------
    CheckpointError
        If the file exists but is not a checkpoint of this version.
    """
    path = Path(folder) / CHECKPOINT_NAME
    if not path.exists():
        return None
    try:
        data = read_json(path, what="training checkpoint", error=CheckpointError)
    except InputError as exc:  # unreadable, truncated, not JSON, over a limit
        raise damaged_checkpoint(path, str(exc).removeprefix(f"{path}: ")) from None
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        version = data.get("version") if isinstance(data, dict) else None
        raise damaged_checkpoint(path, f"not a vjboost training checkpoint of version {_VERSION}: "
                       f"version {version!r}")
    for key, kind in (("config", dict), ("stages", list), ("mining", list)):
        if not isinstance(data.get(key, [] if key == "mining" else None), kind):
            raise damaged_checkpoint(path, f"'{key}' is missing or not a {kind.__name__}")
    for m in data.get("mining", []):
        if not isinstance(m, dict) or isinstance(m.get("stage"), bool) or not isinstance(
                m.get("stage"), int):
            raise damaged_checkpoint(path, "a 'mining' entry without an integer 'stage'")
    # the negative pool is saved with the first stage; the bin-edge sample only by some runs
    if data["stages"] and "negatives" not in data:
        raise damaged_checkpoint(path, "'negatives' is missing")
    for key in ("negatives", "bin_sample"):
        if key in data and (why := _state_problem(key, data[key])) is not None:
            raise damaged_checkpoint(path, why)
    return data


def checkpoint_stages(checkpoint: dict[str, Any], from_dict: Callable[[Any], Any],
                      folder: str | os.PathLike[str]) -> list[Any]:
    """The stages of a loaded checkpoint, rebuilt by ``from_dict``; a damaged stage raises the
    :class:`CheckpointError` that says what to do.

    Parameters
    ----------
    checkpoint : dict
        From :func:`load_checkpoint`.
    from_dict : callable
        Rebuilds one stage from its JSON form.
    folder : path-like
        The checkpoint's folder (named in errors).

    Returns
    -------
    list
        ``from_dict`` of every stage, in order.
    """
    out = []
    for k, d in enumerate(checkpoint["stages"]):
        try:
            out.append(from_dict(d))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            why = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise damaged_checkpoint(Path(folder) / CHECKPOINT_NAME, f"stage {k}: {why}") from None
    return out


#: the files a training writes beside its checkpoint (glob patterns): the negative pool and the
#: bin-edge sample, named by their content; older ones are deleted when a stage is saved
CHECKPOINT_FILES = (CHECKPOINT_NAME, "negatives-*.npy", "binsample-*.npy")


def check_resumable(folder: str | os.PathLike[str], *, resume: bool,
                    writes: Sequence[str] = ()) -> dict[str, Any] | None:
    """Check, before training starts, that ``folder``'s checkpoint fits ``resume``, and that a
    folder without one is not another program's: one training per output folder.

    Parameters
    ----------
    folder : path-like
        The training's output folder.
    resume : bool
        Whether the training is to continue a checkpoint.
    writes : sequence of str, optional
        The files the training writes into the folder besides :data:`CHECKPOINT_FILES` (glob
        patterns: ``model.json``, ``report.html``...). A folder that holds one of those, or of
        :data:`CHECKPOINT_FILES`, but no checkpoint is not a training of this one to continue
        (another program's files, or a run whose checkpoint was deleted): it is refused, so
        that nothing in it is overwritten.

    Returns
    -------
    dict or None
        The checkpoint (``None``: there is none).

    Raises
    ------
    CheckpointError
        A checkpoint exists and ``resume`` is false, it is damaged, or the folder holds files
        the training would overwrite but no checkpoint (the message says what to do).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> check_resumable(folder, resume=False, writes=["model.json"]) is None  # empty: fine
    True
    >>> _ = (folder / "model.json").write_text("mine")
    >>> check_resumable(folder, resume=False, writes=["model.json"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vjboost.cascade.checkpoint.CheckpointError: ...: holds model.json, which training would \
overwrite, but no training checkpoint: ...
    """
    ck = load_checkpoint(folder)
    if ck is not None and not resume:
        raise CheckpointError(f"{folder}: holds a training checkpoint already; add --resume to "
                              "continue it, or choose another output folder")
    if ck is None:
        patterns = (*CHECKPOINT_FILES, *writes)
        try:
            # a folder of such a name is not overwritten: writing there fails (and is checked)
            names = sorted(e.name for e in os.scandir(folder) if not e.is_dir()
                           and any(fnmatch.fnmatchcase(e.name, p) for p in patterns))
        except FileNotFoundError:
            names = []
        if names:
            shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4
                                            else "")
            raise CheckpointError(
                f"{folder}: holds {shown}, which training would overwrite, but no training "
                "checkpoint: it is not a training to continue; choose a new or empty output "
                "folder, or move those files away")
    return ck


def config_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Human-readable list of the settings that differ between two configs.

    Parameters
    ----------
    saved : dict
        The checkpoint's config.
    current : dict
        The config of this run.

    Returns
    -------
    list of str
        ``"key: checkpoint A vs now B"`` per differing key (values cut at 60 characters),
        sorted by key. Nested settings (the feature pool's families and their configuration)
        are compared item by item and named by their path, so that the message shows what
        differs rather than the common start of two long values.

    Examples
    --------
    >>> config_differences({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 0})
    ['b: checkpoint 2 vs now 3', 'c: checkpoint None vs now 0']
    >>> config_differences({"pool": {"families": [{"family": "haar"}]}},
    ...                    {"pool": {"families": [{"family": "haar"}, {"family": "mblbp"}]}})
    ["pool.families[1]: checkpoint family None vs now 'mblbp'"]
    """
    out: list[str] = []
    _differences(saved, current, "", out)
    return out


def _differences(a: Any, b: Any, path: str, out: list[str]) -> None:
    """Append the differences of ``a`` and ``b`` under ``path`` to ``out``."""
    if a == b:
        return
    n = len(out)
    fam_a, fam_b = (v.get("family") if isinstance(v, dict) else None for v in (a, b))
    if fam_a != fam_b:
        # another (or no) feature family: its configuration's keys would differ too, and say
        # nothing more
        out.append(f"{path}: checkpoint family {fam_a!r:.60} vs now {fam_b!r:.60}")
    elif isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            _differences(a.get(k), b.get(k), f"{path}.{k}" if path else str(k), out)
    elif (isinstance(a, list | tuple) and isinstance(b, list | tuple) and path
          and any(isinstance(v, dict | list | tuple) for v in (*a, *b))):
        # a list of settings (the pool's families): item by item, a missing one as None
        for i in range(max(len(a), len(b))):
            _differences(a[i] if i < len(a) else None, b[i] if i < len(b) else None,
                         f"{path}[{i}]", out)
    if len(out) == n:  # unequal as a whole (a tuple and a list): said as such
        out.append(f"{path}: checkpoint {a!r:.60} vs now {b!r:.60}")
