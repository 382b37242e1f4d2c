"""The public face: ``import vjboost`` is cheap and lazy, every exported name imports, the
entry points' examples run, and a wheel carries the shipped models."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import vjboost

REPO = Path(__file__).resolve().parents[1]

PACKAGES = sorted(
    ["vjboost"] + [m.name for m in pkgutil.walk_packages(vjboost.__path__, "vjboost.")
                   if m.ispkg and not m.name.startswith("vjboost.models")])


def _run(code: str, **env: str) -> str:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **env}, check=True)
    return res.stdout.strip()


def test_import_vjboost_imports_nothing_heavy():
    out = _run("import sys, vjboost; print(sorted(m for m in ('numpy', 'numba', 'cv2', "
               "'skimage', 'matplotlib', 'rich', 'vjboost.cascade') if m in sys.modules))")
    assert out == "[]"


def test_subpackage_import_is_lazy():
    # importing one module of a package must not import the package's other modules
    out = _run("import sys, vjboost.boost.tree; print(sorted(m for m in sys.modules "
               "if m.startswith('vjboost.boost.')))")
    assert "vjboost.boost.ensemble" not in out and "vjboost.boost.tree" in out


def test_channel_kinds_of_families_resolve_before_their_module_is_imported():
    # a saved model names its channels ("ghist(4)#0", "lbp(...)"): loading it in a fresh
    # process must not depend on which family modules happened to be imported already
    out = _run("import sys; from vjboost.features.channels import parse_channel_key; "
               "assert 'vjboost.features.histogram' not in sys.modules; "
               "print(parse_channel_key('ghist(4)#2'), "
               "parse_channel_key('lbphist(8,1,uniform)#0')[0])")
    assert out == "('ghist', (4,), 2) lbphist"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_imports(package):
    mod = importlib.import_module(package)
    names = getattr(mod, "__all__", [])
    if package != "vjboost.cli":
        assert names, f"{package} exports nothing"
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(mod, name) is not None, f"{package}.{name}"
    assert set(names) <= set(dir(mod))
    with pytest.raises(AttributeError, match="no attribute"):
        mod.no_such_name  # noqa: B018


def test_top_level_names_are_the_library_objects():
    from vjboost.boost.ensemble import BoostedClassifier
    from vjboost.cascade.detector import CascadeDetector
    from vjboost.cascade.model_io import load_model
    from vjboost.features.haar import HaarFamily

    assert vjboost.load_model is load_model
    assert vjboost.CascadeDetector is CascadeDetector
    assert vjboost.BoostedClassifier is BoostedClassifier
    assert vjboost.HaarFamily is HaarFamily
    assert {"detect", "train", "save_model", "CascadeModel", "CascadeTrainer", "FeaturePool",
            "SAMPLERS", "make_sampler", "Laminating", "VJBoostError"} <= set(vjboost.__all__)


def test_detect_matches_the_detector(tmp_path):
    import cv2
    from skimage import data

    model = vjboost.load_model("vjboost:frontalface")
    rgb = data.astronaut()
    want = vjboost.CascadeDetector(model, channel_order="rgb").detect(rgb)
    got = vjboost.detect(rgb, "vjboost:frontalface", channel_order="rgb")
    path = tmp_path / "a.png"
    cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    from_file = vjboost.detect(path)  # default model, colour order taken care of
    assert len(want) >= 1
    for d in (got, from_file):
        np.testing.assert_array_equal(d.boxes, want.boxes)
        np.testing.assert_array_equal(d.neighbors, want.neighbors)


def test_lazy_exports_read_the_type_checking_block(tmp_path):
    from vjboost._lazy import exports

    init = tmp_path / "__init__.py"
    init.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    from .a import X, Y as Z\n    from pkg.b import w\n"
                    "    import pkg.c as c\nfrom .d import not_lazy\n")
    assert exports("pkg.sub", str(init)) == {
        "X": ("pkg.sub.a", "X"), "Z": ("pkg.sub.a", "Y"), "w": ("pkg.b", "w"),
        "c": ("pkg.c", "")}


def test_numba_cache_in_the_users_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", "import vjboost, os, numba; print(os.environ['NUMBA_CACHE_DIR']);"
         " print(numba.config.CACHE_DIR)"], capture_output=True, text=True, env=env,
        check=True).stdout.split()
    assert out == [str(tmp_path / "vjboost" / "numba")] * 2
    # a cache home that cannot hold the folder (here a file): numba's default stays
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    env["XDG_CACHE_HOME"] = str(blocker)
    out = subprocess.run([sys.executable, "-c", "import vjboost, os; "
                          "print(os.environ.get('NUMBA_CACHE_DIR', 'unset'))"],
                         capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert out == "unset"
    # a folder the user chose wins
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    out = subprocess.run([sys.executable, "-c", "import vjboost, numba; "
                          "print(numba.config.CACHE_DIR)"], capture_output=True, text=True,
                         env=env, check=True).stdout.strip()
    assert out == str(tmp_path / "mine")


@pytest.mark.slow
def test_detection_does_not_import_scipy_linalg_and_blas_still_works():
    """numba's first kernel load skips its SciPy BLAS probe; a kernel using BLAS compiled later
    in the same process still gets it (and agrees with NumPy)."""
    code = (
        "import sys, numpy as np, vjboost, numba\n"
        "vjboost.detect(np.zeros((40, 40), np.uint8), 'vjboost:frontalface')\n"
        "print('scipy.linalg' in sys.modules)\n"
        "from numba.np import arraymath, linalg\n"
        "print(bool(arraymath._HAVE_BLAS), linalg.ensure_blas.__module__)\n"
        "f = numba.njit(lambda a, b: np.dot(a, b))\n"
        "a, b = np.arange(5.0), np.linspace(0, 1, 5)\n"
        "m = np.arange(6.0).reshape(2, 3)\n"
        "print(f(a, b) == np.dot(a, b), np.allclose(f(m, m.T), m @ m.T))\n"
        "print('scipy.linalg' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:4] == ["False", "True numba.np.linalg", "True True", "True"]


def test_console_scripts_start_through_the_launcher(monkeypatch, capsys):
    """Every console script is a launcher function running its command; the launcher leaves
    the garbage collector as it found it."""
    import gc

    from vjboost.cli import _launch

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == set(_launch.__all__)
    assert all(v == f"vjboost.cli._launch:{k}" for k, v in scripts.items())
    monkeypatch.setattr(sys, "argv", ["vjdetect", "--help"])
    assert gc.isenabled()
    with pytest.raises(SystemExit) as info:
        _launch.vjdetect()
    assert info.value.code == 0 and "INPUTS" in capsys.readouterr().out
    assert gc.isenabled()
    gc.unfreeze()


def test_compile_notice_only_when_compiling():
    import io

    import numba

    from vjboost._jit import NOTE, compile_notice

    @numba.njit
    def _add(a, b):  # a new function: its first call compiles
        return a + b

    buf = io.StringIO()
    with compile_notice(buf):
        _add(1, 2)
        _add(3, 4)
    assert buf.getvalue().count("compiling kernels") == 1
    assert NOTE.split("(")[0] in buf.getvalue()
    buf = io.StringIO()
    with compile_notice(buf):
        _add(5, 6)  # compiled already
    assert buf.getvalue() == ""


@pytest.mark.slow
def test_wheel_ships_the_models_and_runs_outside_the_repository(tmp_path):
    """Build a wheel, check its contents, install it into a fresh venv (reusing this
    environment's packages) and detect from a folder outside the repository."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(wheels), str(REPO)], check=True, capture_output=True)
    (wheel,) = wheels.glob("vjboost-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for model in ("frontalface", "frontalface_haar", "car_side", "car_side_lbp"):
        assert f"vjboost/models/{model}.json" in names
    for model in ("frontalface_haar", "car_side_lbp"):  # the OpenCV-exportable ones
        assert f"vjboost/models/{model}.xml" in names
    assert not any(n.startswith(("tests/", "tools/")) for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = venv / "bin" / "python"
    # this environment's packages (numpy, numba, cv2...) are visible, vjboost itself is not
    site = subprocess.run([sys.executable, "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(subprocess.run([str(py), "-c", "import site; print(site.getsitepackages()[0])"],
                         capture_output=True, text=True, check=True).stdout.strip())
     / "parent.pth").write_text(site + "\n")
    subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--force-reinstall", "-q",
                    str(wheel)], check=True, capture_output=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    code = ("import vjboost, skimage.data as d; from vjboost.cascade.shipped import MODELS_DIR; "
            "print(MODELS_DIR); "
            "m = vjboost.load('vjboost:frontalface'); "
            "print(len(vjboost.detect(d.astronaut(), m, channel_order='rgb'))); "
            "print(vjboost.load_model('vjboost:car_side').window_shape); "
            "print(vjboost.load_model('vjboost:frontalface_haar').opencv_type)")
    out = subprocess.run([str(py), "-c", code], cwd=outside, capture_output=True, text=True,
                         env=env, check=True).stdout.split("\n")
    assert str(REPO) not in out[0] and "site-packages" in out[0]
    assert int(out[1]) >= 1
    assert out[2] == "(20, 50)"
    assert out[3] == "HAAR"
    import cv2
    from skimage import data

    photo = outside / "photo.png"
    cv2.imwrite(str(photo), cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR))
    det = subprocess.run([str(venv / "bin" / "vjdetect"), str(photo)], cwd=outside,
                         capture_output=True, text=True, env=env, check=True)
    assert len(det.stdout.splitlines()) == int(out[1])


#: the layers, lowest first: a module may import its own layer and the ones below it
LAYERS = ["_bottom", "io", "features", "boost", "cascade", "eval", "cli"]


def _layer(module: str) -> str | None:
    part = module.split(".")[1] if "." in module else None
    if part is None or part == "models":
        return None
    return part if part in LAYERS else "_bottom"  # _errors, _memory, boxes, _lazy ...


def test_layering_no_import_goes_up():
    """docs/architecture.md's rule, on every import statement (function-level ones too)."""
    import ast

    bad = []
    for path in (REPO / "vjboost").rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if module == "vjboost":
            continue  # the lazy top-level namespace names everything
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(max(node.level - 1, 0)):
                    base = base.rpartition(".")[0]
                targets = [".".join(p for p in (base if node.level else "", node.module or "")
                                    if p)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target == "vjboost":
                    bad.append(f"{module} imports the top-level package")
                elif target.startswith("vjboost."):
                    low, high = _layer(module), _layer(target)
                    if high and LAYERS.index(high) > LAYERS.index(low):
                        bad.append(f"{module} ({low}) imports {target} ({high})")
    assert not bad, "\n".join(sorted(set(bad)))


def _module_imports() -> dict[str, set[str]]:
    """Every vjboost module (not package) and the vjboost modules it imports, function-level
    imports included; an import of a package counts only for the modules it names."""
    import ast

    files = {}
    for path in (REPO / "vjboost").rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    packages = {m for m, p in files.items() if p.name == "__init__.py"}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        if module in packages:
            continue  # lazy exports only (names written under TYPE_CHECKING)
        package = module.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(max(node.level - 1, 0)):
                    base = base.rpartition(".")[0]
                target = ".".join(p for p in (base if node.level else "", node.module or "") if p)
                found.update(f"{target}.{a.name}" for a in node.names
                             if f"{target}.{a.name}" in files)
                found.add(target)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[module] = {t for t in found if t in files and t not in packages and t != module}
    return graph


def test_no_import_cycles_between_modules():
    """docs/architecture.md: data and imports flow one way, between modules too (function-level
    imports included): no module imports, directly or through others, a module that imports it."""
    graph = _module_imports()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert len(graph) > 80 and "vjboost.cascade.detector" in graph["vjboost.cascade.tasks"]
    assert not cycles, cycles
