"""Compiling a detection's later kernels ahead in a second process: the kernels named carry the
argument types detections pass them (checked against what detections compile), a cache filled by
the second process spares a detection those compilations and leaves its results as they are, a
detection waits for the second process rather than compile those kernels itself, and the second
process starts once, only when a block compiles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numba
import numpy as np
import pytest
from skimage import data

from vjboost import _jit
from vjboost.cascade import ahead
from vjboost.cascade.detector import CascadeDetector, to_gray
from vjboost.cascade.model_io import load_model
from vjboost.cascade.shipped import resolve_model


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    return to_gray(data.astronaut(), channel_order="rgb")


def _detector(name: str, **kw) -> CascadeDetector:
    return CascadeDetector(load_model(resolve_model(name)), **kw)


def test_detection_jobs_follow_the_model():
    default = ahead.detection_jobs(_detector("vjboost:frontalface"))
    assert default == ("tree_dense_rects", "tree_sparse_rects", "list_rects", "fhog",
                       "suppress_inside")
    haar = _detector("vjboost:frontalface_haar")
    # OpenCV's scan: no list pass; coarse to fine, or without OpenCV's skip rule: the list pass
    assert ahead.detection_jobs(haar) == ("tree_dense_haar", "tree_sparse_haar")
    for kw in ({"coarse_to_fine": 2}, {"mode": "clean", "skip_after_stage0": False}):
        assert ahead.detection_jobs(_detector("vjboost:frontalface_haar", **kw)) == (
            "tree_dense_haar", "tree_sparse_haar", "list_haar")
    # without grouping, no suppression; without the verifier's score, no HOG
    assert ahead.detection_jobs(_detector("vjboost:frontalface", min_neighbors=0,
                                          score="margin")) == default[:3]
    # cascades the row pass does not run (MB-LBP nodes, trees of three nodes): the window
    # kernel of their operations and tree shape
    car = _detector("vjboost:car_side")
    cc = car._runner.compiled
    assert ahead.detection_jobs(car) == (f"scan_{cc.ops}_{cc.shape}",)
    for name in default + ("list_haar", f"scan_{cc.ops}_{cc.shape}"):
        kernel, types = ahead.job(name)
        assert len(types) == kernel.py_func.__code__.co_argcount, name


@pytest.mark.parametrize("name", ["", "tree", "tree_dense", "tree_dense_lbp", "list_x",
                                  "scan_9_2", "scan_1_7", "scan_a_b", "fhog_rects"])
def test_job_refuses_unknown_names(name):
    with pytest.raises(KeyError, match="no kernel"):
        ahead.job(name)


_DETECT = """
import json, sys
from numba.core import event
compiled = []
class L(event.Listener):
    def on_start(self, ev):
        compiled.append([ev.data["dispatcher"].py_func.__qualname__, str(ev.data["args"])])
    def on_end(self, ev):
        pass
event.register("numba:compile", L())
from skimage import data
from vjboost.cascade.detector import CascadeDetector, to_gray
from vjboost.cascade.model_io import load_model
from vjboost.cascade.shipped import resolve_model
found = []
for name, c2f in json.loads(sys.argv[1]):
    det = CascadeDetector(load_model(resolve_model(name)), coarse_to_fine=c2f)
    d = det.detect(to_gray(data.astronaut(), channel_order="rgb"))
    found.append([d.boxes.tolist(), d.scores.tolist()])
print(json.dumps({"compiled": compiled, "found": found}))
"""

#: detections whose kernels the tests compile: the default model (its verifier and
#: suppression; coarse to fine, so the list pass too), the Haar one, coarse to fine, and a
#: cascade of the window kernel
_CASES = [["vjboost:frontalface", "model"], ["vjboost:frontalface_haar", 2],
          ["vjboost:car_side", "model"]]


def _detect_in_process(cache, cases, *, second: bool = False) -> dict:
    """Run :data:`_DETECT` on ``cases`` in a new process over the numba cache folder
    ``cache``, with a second process compiling ahead (``second``, two numba threads) or
    without."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), _jit.AHEAD_ENV: "1" if second else "0"}
    if second:
        env["NUMBA_NUM_THREADS"] = "2"
    done = subprocess.run([sys.executable, "-c", _DETECT, json.dumps(cases)], env=env,
                          check=True, capture_output=True, text=True, timeout=600)
    return json.loads(done.stdout)


def _jobs_of(case) -> tuple[str, ...]:
    return ahead.detection_jobs(_detector(case[0], coarse_to_fine=case[1]))


@pytest.mark.slow
def test_jobs_carry_the_types_detections_compile(tmp_path):
    # an empty cache: each detection compiles its kernels, with the types it passes them
    out = _detect_in_process(tmp_path / "cache", _CASES)
    compiled = {tuple(c) for c in out["compiled"]}
    for case in _CASES:
        jobs = {(k.py_func.__qualname__, str(t)) for k, t in map(ahead.job, _jobs_of(case))}
        assert jobs and jobs <= compiled, case
    # the faces' verifier and grouping ran
    assert len(out["found"][0][0]) >= 1 and len(out["found"][1][0]) >= 1


@pytest.mark.slow
def test_a_cache_filled_ahead_spares_the_detection_those_compilations(tmp_path, photo):
    cache = tmp_path / "cache"
    cases = [_CASES[0], _CASES[2]]
    names = [n for case in cases for n in _jobs_of(case)]
    # an empty cache: the second process first, to its end; then the detections alone
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), _jit.AHEAD_ENV: "0"}
    subprocess.run([sys.executable, "-m", ahead.__name__, *names], env=env, check=True,
                   timeout=600)
    out = _detect_in_process(cache, cases)
    compiled = {c[0] for c in out["compiled"]}
    assert "_gray_image" in compiled  # the cache held none of the detection's first kernels
    assert not {ahead.job(n)[0].py_func.__qualname__ for n in names} & compiled
    for (name, c2f), got in zip(cases, out["found"], strict=True):
        found = _detector(name, coarse_to_fine=c2f).detect(photo)
        assert got == [found.boxes.tolist(), found.scores.tolist()]


@pytest.mark.slow
def test_the_detection_waits_for_the_second_process(tmp_path, photo):
    # an empty cache, the second process started by the detection itself: whatever it has
    # not cached when the detection needs it, the detection waits for, compiling none of it
    for i, (name, c2f) in enumerate([_CASES[0], _CASES[2]]):
        out = _detect_in_process(tmp_path / f"cache{i}", [[name, c2f]], second=True)
        compiled = {c[0] for c in out["compiled"]}
        assert "_gray_image" in compiled
        names = _jobs_of([name, c2f])
        assert not {ahead.job(n)[0].py_func.__qualname__ for n in names} & compiled, name
        found = _detector(name, coarse_to_fine=c2f).detect(photo)
        assert out["found"] == [[found.boxes.tolist(), found.scores.tolist()]]


def _command(job: str) -> tuple[str, ...]:
    return (sys.executable, "-m", ahead.__name__, job)


def _fresh_kernel():
    # a kernel no process has compiled: calling it compiles (no cache)
    return numba.njit(lambda x: x + 1)


def test_compile_ahead_starts_once_when_the_block_compiles(monkeypatch):
    monkeypatch.delenv(_jit.AHEAD_ENV, raising=False)
    job = f"unknown_{uuid.uuid4().hex}"  # main() skips names it does not know
    with _jit.compile_ahead(ahead.__name__, lambda: [job]):
        pass  # nothing compiled: nothing started
    assert _command(job) not in _jit._AHEAD
    with _jit.compile_ahead(ahead.__name__, lambda: [job]):
        assert _fresh_kernel()(1) == 2
        assert _fresh_kernel()(2) == 3
    proc = _jit._AHEAD[_command(job)]
    assert proc.wait(timeout=120) == 0
    with _jit.compile_ahead(ahead.__name__, lambda: [job]):
        _fresh_kernel()(3)
    assert _jit._AHEAD[_command(job)] is proc  # once per process


@pytest.mark.parametrize("setting", [{"cpus": 1}, {"env": "0"}, {"jobs": []}])
def test_compile_ahead_stays_off(monkeypatch, setting):
    job = f"unknown_{uuid.uuid4().hex}"
    if "env" in setting:
        monkeypatch.setenv(_jit.AHEAD_ENV, setting["env"])
    else:
        monkeypatch.delenv(_jit.AHEAD_ENV, raising=False)
    jobs = setting.get("jobs", [job])
    with _jit.compile_ahead(ahead.__name__, lambda: jobs, cpus=setting.get("cpus", 2)):
        _fresh_kernel()(1)
    assert _command(job) not in _jit._AHEAD
    assert (sys.executable, "-m", ahead.__name__) not in _jit._AHEAD


def test_main_compiles_the_named_kernels_and_skips_unknown_names():
    # in a process of its own: this one must not compile the table's types itself (see
    # test_jobs_carry_the_types_detections_compile)
    code = ("import sys; from vjboost.cascade import ahead; "
            "assert ahead.main(['nothing', 'suppress_inside']) == 0; "
            "d, t = ahead.job('suppress_inside'); "
            "print([tuple(s) for s in d.signatures] == [t])")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True, timeout=300)
    assert done.stdout.strip() == "True"


class _Proc:
    """A stand-in for the second process: running until ``poll`` has been asked ``runs``
    times."""

    def __init__(self, runs: int) -> None:
        self.runs = runs

    def poll(self):
        self.runs -= 1
        return None if self.runs >= 0 else 0


def _loads(results):
    calls = []

    def load():
        calls.append(1)
        return results[min(len(calls), len(results)) - 1]

    return load, calls


def test_a_load_waits_for_the_second_process(monkeypatch):
    monkeypatch.setattr(_jit, "_POLL", 0.0)
    key = ("vjboost.x", "k", (1,))
    monkeypatch.setitem(_jit._PENDING, key, _Proc(runs=100))
    # cached by the second process at its fourth look
    load, calls = _loads([None, None, None, "kernel"])
    assert _jit._await_ahead(key, load) == "kernel"
    assert len(calls) == 4
    # a kernel no second process compiles: no wait, no load
    load, calls = _loads(["kernel"])
    assert _jit._await_ahead(("vjboost.x", "other", (1,)), load) is None
    assert calls == []
    # the process exits without caching it: one last look, then compiled here
    monkeypatch.setitem(_jit._PENDING, key, _Proc(runs=2))
    load, calls = _loads([None])
    assert _jit._await_ahead(key, load) is None
    assert 1 <= len(calls) <= 3
    # a process that never caches it: the wait ends after AHEAD_WAIT seconds, and the
    # process's other kernels are waited for no more
    monkeypatch.setattr(_jit, "AHEAD_WAIT", 0.05)
    monkeypatch.setattr(_jit, "_POLL", 0.005)
    stuck = _Proc(runs=10**9)
    other = ("vjboost.x", "k2", (1,))
    monkeypatch.setitem(_jit._PENDING, key, stuck)
    monkeypatch.setitem(_jit._PENDING, other, stuck)
    load, calls = _loads([None])
    assert _jit._await_ahead(key, load) is None
    assert len(calls) >= 2
    assert key not in _jit._PENDING and other not in _jit._PENDING
    load, calls = _loads([None])
    assert _jit._await_ahead(other, load) is None
    assert calls == []


def test_the_kernel_key_reads_signatures_and_tuples():
    def f(x):
        return x

    key = _jit._kernel_key(f, (numba.int64,))
    assert key == (__name__, "test_the_kernel_key_reads_signatures_and_tuples.<locals>.f",
                   (numba.int64,))
    assert _jit._kernel_key(f, numba.float64(numba.int64)) == key


def test_the_second_process_imports_this_package_and_finds_the_cache(monkeypatch, tmp_path):
    # -m imports from the working folder first: the second process starts where this
    # process's vjboost lives, with the cache folder as an absolute path
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", "relative-cache")
    cwd, env = _jit._ahead_place(ahead.__name__)
    assert (Path(cwd) / "vjboost" / "_jit.py").resolve() == Path(_jit.__file__).resolve()
    assert env["NUMBA_CACHE_DIR"] == str(tmp_path.resolve() / "relative-cache")
