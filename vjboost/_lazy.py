"""Lazy exports of a package: one mechanism for ``vjboost`` and every sub-package.

A package lists what it exports as ordinary imports inside ``if TYPE_CHECKING:``, which IDEs and
type checkers read, and ends with::

    __getattr__, __dir__, __all__ = attach(__name__, __file__)

:func:`attach` reads that block once (from the package's own source, no import runs) and
imports a name's module on the first access to the name, so that ``import vjboost`` and
``import vjboost.cascade`` stay cheap while ``vjboost.CascadeDetector`` works.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["attach", "exports"]


def exports(package: str, file: str) -> dict[str, tuple[str, str]]:
    """The names a package exports: ``name -> (module, attribute)``.

    Read from the ``from ... import ...`` statements inside ``if TYPE_CHECKING:`` blocks at the
    top level of ``file`` (relative imports resolved against ``package``).

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    file : str
        Its ``__init__.py``.

    Returns
    -------
    dict
        Exported name (the ``as`` name when given) to (absolute module, attribute in it).

    Examples
    --------
    >>> import vjboost.cascade
    >>> exports("vjboost.cascade", vjboost.cascade.__file__)["CascadeModel"]
    ('vjboost.cascade.model', 'CascadeModel')
    """
    tree = ast.parse(Path(file).read_text(encoding="utf-8"), filename=file)
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.ImportFrom):
                base = package if stmt.level else ""
                for _ in range(max(stmt.level - 1, 0)):
                    base = base.rpartition(".")[0]
                module = ".".join(p for p in (base, stmt.module or "") if p)
                for alias in stmt.names:
                    out[alias.asname or alias.name] = (module, alias.name)
            elif isinstance(stmt, ast.Import):  # ``import x.y as z`` exports a module
                for alias in stmt.names:
                    if alias.asname:
                        out[alias.asname] = (alias.name, "")
    return out


def attach(package: str, file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]],
                                             list[str]]:
    """``(__getattr__, __dir__, __all__)`` for a package exporting lazily (module docstring).

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    file : str
        Its ``__init__.py`` (``__file__``).

    Returns
    -------
    tuple
        The module-level ``__getattr__`` (imports on first access, then keeps the value in the
        package's namespace), ``__dir__`` and the sorted ``__all__``.
    """
    table = exports(package, file)
    names = sorted(table)

    def __getattr__(name: str) -> Any:
        try:
            module, attr = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        mod = importlib.import_module(module)
        value = getattr(mod, attr) if attr else mod
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(names) | set(vars(importlib.import_module(package))))

    return __getattr__, __dir__, names
