"""Training checkpoints: the stages trained so far, written atomically after every stage.

A checkpoint is one JSON file holding the settings that determine the result (``config``), the
feature pool, every finished stage (weak learners with global feature ids and leaf values,
threshold, statistics) and, once training has ended, why it stopped. Resuming reloads the stages
and continues: every random choice of stage ``k`` is drawn from ``(seed, k)``, so the resumed run
trains exactly the cascade an uninterrupted run would.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._io import atomic_write

__all__ = [
    "CHECKPOINT_NAME",
    "CheckpointError",
    "config_differences",
    "load_checkpoint",
    "save_checkpoint",
]

CHECKPOINT_NAME = "checkpoint.json"
_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint is unreadable or was written with other settings."""


def save_checkpoint(folder: str | os.PathLike[str], state: dict[str, Any]) -> Path:
    """Write ``state`` to ``folder/checkpoint.json`` atomically; returns the path."""
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
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not a readable training checkpoint ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != _VERSION or "stages" not in data:
        raise CheckpointError(f"{path}: not a vjboost training checkpoint (version "
                              f"{data.get('version') if isinstance(data, dict) else None!r})")
    return data


def config_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Human-readable list of the settings that differ between two configs."""
    out = []
    for k in sorted(set(saved) | set(current)):
        a, b = saved.get(k), current.get(k)
        if a != b:
            out.append(f"{k}: checkpoint {a!r:.60} vs now {b!r:.60}")
    return out
