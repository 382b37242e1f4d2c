"""The console scripts (``vjtrain``, ``vjdetect``, ...): each imports its command with the
garbage collector paused, then runs it.

Starting a tool imports some 100,000 long-lived Python objects (NumPy, numba, OpenCV, click and
vjboost's modules). With the collector running, the imports trigger several full collections
that traverse all of them, and the interpreter traverses them again at exit: about a tenth of
a second of a warm ``vjdetect``. Imports make next to no cyclic garbage, so the collector is
off while they run; :func:`gc.freeze` then moves what they made out of every later collection
(the objects live until the process ends anyway) and the collector runs as usual for the
command itself.
"""

from __future__ import annotations

import gc
import importlib
from typing import Any

__all__ = ["vjadapt", "vjdemo", "vjdetect", "vjeval", "vjtrain"]


def _run(module: str) -> Any:
    enabled = gc.isenabled()
    gc.disable()
    try:
        main = importlib.import_module(f"vjboost.cli.{module}").main
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
    return main()


def vjtrain() -> Any:
    """``vjtrain``: :func:`vjboost.cli.train.main`."""
    return _run("train")


def vjdetect() -> Any:
    """``vjdetect``: :func:`vjboost.cli.detect.main`."""
    return _run("detect")


def vjeval() -> Any:
    """``vjeval``: :func:`vjboost.cli.evaluate.main`."""
    return _run("evaluate")


def vjdemo() -> Any:
    """``vjdemo``: :func:`vjboost.cli.demo.main`."""
    return _run("demo")


def vjadapt() -> Any:
    """``vjadapt``: :func:`vjboost.cli.adapt.main`."""
    return _run("adapt")
