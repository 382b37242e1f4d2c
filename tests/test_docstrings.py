"""Every function of the public API taking two or more arguments documents them in a numpydoc
``Parameters`` section, and the docstring examples of the modules below run."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator

import pytest

import vjboost

PACKAGES = sorted(
    ["vjboost"] + [m.name for m in pkgutil.walk_packages(vjboost.__path__, "vjboost.")
                   if m.ispkg and not m.name.startswith("vjboost.models")])

# ``module:qualname`` of public functions whose Parameters section is still to be written
UNDOCUMENTED: set[str] = set()


def _n_arguments(func: Callable) -> int:
    """Positional and keyword arguments, ``self``/``cls`` and ``*args``/``**kwargs`` aside."""
    code = func.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return sum(n not in ("self", "cls") for n in names)


def _public_functions() -> Iterator[tuple[str, Callable, type | None]]:
    """``(exported name, function, exported class or None)`` of the names in the packages'
    ``__all__``, with the public methods (and ``__init__``) of exported classes, inherited ones
    included; only what vjboost defines."""
    for package in PACKAGES:
        mod = importlib.import_module(package)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                yield f"{package}.{name}", obj, None
            elif inspect.isclass(obj):
                seen: set[str] = set()
                for klass in obj.__mro__:
                    for attr, value in vars(klass).items():
                        if attr in seen:
                            continue
                        seen.add(attr)
                        if attr.startswith("_") and attr != "__init__":
                            continue
                        if isinstance(value, (staticmethod, classmethod)):
                            value = value.__func__
                        if inspect.isfunction(value):
                            yield f"{package}.{name}.{attr}", value, obj


def _documented(func: Callable, cls: type | None) -> bool:
    doc = inspect.getdoc(func) or ""
    if func.__name__ == "__init__" and cls is not None:
        # numpydoc documents a constructor's arguments in its class's docstring; a dataclass
        # (generated ``__init__``) may list its fields as Attributes
        cdoc = cls.__doc__ or ""
        generated = func.__code__.co_filename == "<string>"
        return "Parameters" in doc + cdoc or (generated and "Attributes" in cdoc)
    return "Parameters" in doc


def test_the_walk_finds_the_api():
    names = {label for label, _, _ in _public_functions()}
    assert {"vjboost.detect", "vjboost.CascadeDetector.__init__", "vjboost.Tree.stump",
            "vjboost.BoostedClassifier.fit", "vjboost.features.check_image"} <= names


def test_public_functions_document_their_parameters():
    missing = []
    for label, func, cls in _public_functions():
        func = inspect.unwrap(func)
        if not func.__module__.startswith("vjboost") or _n_arguments(func) < 2:
            continue
        key = f"{func.__module__}:{func.__qualname__}"
        if key not in UNDOCUMENTED and not _documented(func, cls):
            missing.append(f"{label} ({key})")
    assert not missing, "no Parameters section:\n" + "\n".join(sorted(set(missing)))


#: every module of the package (the shipped models' folder holds no code)
MODULES = sorted(m.name for m in pkgutil.walk_packages(vjboost.__path__, "vjboost.")
                 if not m.name.startswith("vjboost.models"))


def _api_items() -> Iterator[tuple[str, object]]:
    """``(exported name, object)`` of the functions and classes in the packages' ``__all__``
    that vjboost defines, each once; exceptions aside (their docstring says when they are
    raised)."""
    seen: set[tuple[str, str]] = set()
    for package in PACKAGES:
        mod = importlib.import_module(package)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                continue
            if not getattr(obj, "__module__", "").startswith("vjboost"):
                continue
            key = (obj.__module__, obj.__qualname__)
            if key not in seen:
                seen.add(key)
                yield f"{package}.{name}", obj


def test_every_public_function_and_class_shows_an_example():
    items = dict(_api_items())
    assert len(items) > 150 and "vjboost.detect" in items
    missing = sorted(label for label, obj in items.items() if ">>>" not in (obj.__doc__ or ""))
    assert not missing, "no Examples section:\n" + "\n".join(missing)


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0


def test_the_examples_walk_every_module():
    assert {"vjboost.boost.tree", "vjboost.cli._command", "vjboost._io",
            "vjboost.cascade.tasks", "vjboost.features.haar"} <= set(MODULES)
    assert len(MODULES) > 80


def test_public_functions_are_typed():
    import typing

    untyped = []
    for label, func, _ in _public_functions():
        func = inspect.unwrap(func)
        if not func.__module__.startswith("vjboost"):
            continue
        sig = inspect.signature(func)
        args = [p for name, p in sig.parameters.items() if name not in ("self", "cls")
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if any(p.annotation is inspect.Parameter.empty for p in args) or (
                func.__name__ != "__init__" and sig.return_annotation is inspect.Signature.empty):
            untyped.append(label)
        else:
            typing.get_type_hints(func)  # every annotation names something that exists
    assert not untyped, "untyped:\n" + "\n".join(sorted(set(untyped)))
