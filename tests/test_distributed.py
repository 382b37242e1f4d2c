"""Executors and cascade work as tasks: same results in-process, on threads and on Dask."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vjboost._parallel import (
    ExecutorError,
    SerialExecutor,
    ThreadExecutor,
    make_executor,
)
from vjboost.cascade import CascadeDetector, load_model
from vjboost.cascade.negatives import MiningParams, mine_negatives
from vjboost.cascade.tasks import detect_many
from vjboost.cascade.trainer import CascadeTrainer, stages_digest

WIN = (16, 16)


@pytest.fixture(scope="module")
def faces(small_face_set) -> np.ndarray:
    """The 100 small LFW faces and their mirror images."""
    out = np.load(small_face_set / "pos.npz")["images"]
    return np.concatenate([out, out[:, :, ::-1]])


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[str]:
    """Two photos with faces, a broken file and a missing one, in that order."""
    skd = pytest.importorskip("skimage.data")
    d = tmp_path_factory.mktemp("det")
    bgr = cv2.cvtColor(skd.astronaut(), cv2.COLOR_RGB2BGR)
    cv2.imwrite(str(d / "a.png"), bgr)
    cv2.imwrite(str(d / "b.jpg"), cv2.resize(bgr, (300, 300)))
    (d / "c.png").write_bytes(b"\x89PNG broken")
    return [str(d / "a.png"), str(d / "b.jpg"), str(d / "c.png"), str(d / "missing.png")]


def _train(faces, backgrounds, executor):
    tr = CascadeTrainer(window_shape=WIN, features="lbp", num_stages=3, num_pos=150,
                        num_neg=300, min_hit_rate=0.98, max_false_alarm=0.5, seed=1,
                        max_weak_count=20)
    tr.fit(faces, backgrounds, executor=executor)
    return tr


def _slow_square(x: int) -> int:
    time.sleep(0.002 * (5 - x % 5))  # later units finish first
    return x * x


# ------------------------------------------------------------------------------------------------
# executors
# ------------------------------------------------------------------------------------------------


def test_executors_keep_unit_order_and_stop_early():
    ref = [x * x for x in range(40)]
    assert SerialExecutor().map(_slow_square, range(40)) == ref
    with ThreadExecutor(3) as ex:
        assert ex.map(_slow_square, range(40)) == ref
        calls = []

        def f(x):
            calls.append(x)
            return x

        it = ex.imap(f, range(1000), ahead=4)
        assert [next(it) for _ in range(3)] == [0, 1, 2]
        it.close()
        time.sleep(0.05)
        assert len(calls) <= 3 + 4 + 1  # submitted lazily: no run-away over 1000 units
    with pytest.raises(ValueError, match="n_workers"):
        ThreadExecutor(0)


def test_plain_use_does_not_import_dask(tmp_path):
    code = (
        "import sys, numpy as np\n"
        "import vjboost\n"
        "from vjboost.cascade import CascadeDetector, load_model\n"
        "from vjboost.cascade.tasks import detect_many\n"
        "from vjboost.cli import detect, train\n"
        "m = load_model('vjboost:frontalface')\n"
        "CascadeDetector(m).detect(np.zeros((60, 60), np.uint8))\n"
        "bad = [k for k in sys.modules if k.split('.')[0] in ('dask', 'distributed')]\n"
        "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_mining_and_training_same_on_threads(faces, backgrounds):
    params = MiningParams(WIN, scale_factor=1.5, step=4)
    broken = backgrounds + [os.path.join(os.path.dirname(backgrounds[0]), "missing.png")]
    ref = mine_negatives(None, broken, 700, params=params, seed=3)
    with ThreadExecutor(2) as ex:
        got = mine_negatives(None, broken, 700, params=params, seed=3, executor=ex)
        assert np.array_equal(ref.windows, got.windows)
        assert (ref.n_scanned, ref.n_accepted, ref.passes, ref.unreadable) == (
            got.n_scanned, got.n_accepted, got.passes, got.unreadable)
        assert got.unreadable == [broken[-1]]
        # with a cascade, to exhaustion
        a = _train(faces, backgrounds, None)
        b = _train(faces, backgrounds, ex)
    assert len(a.stages_) >= 2
    assert stages_digest(a.stages_) == stages_digest(b.stages_)
    assert a.mining_ == [dict(m, seconds=ma["seconds"]) for m, ma in zip(b.mining_, a.mining_,
                                                                        strict=True)]


def test_resume_with_another_executor_gives_the_same_cascade(faces, backgrounds, tmp_path):
    ref = _train(faces, backgrounds, None)
    kw = dict(window_shape=WIN, features="lbp", num_stages=3, num_pos=150, num_neg=300,
              min_hit_rate=0.98, max_false_alarm=0.5, seed=1, max_weak_count=20)
    with ThreadExecutor(2) as ex:  # a run that stops after one stage (a lost cluster)
        CascadeTrainer(**kw).fit(faces, backgrounds, output_dir=tmp_path, executor=ex,
                                 max_new_stages=1)
    tr = CascadeTrainer(**kw).fit(faces, backgrounds, output_dir=tmp_path, resume=True)
    assert stages_digest(tr.stages_) == stages_digest(ref.stages_)


def test_detect_many_matches_in_process(images):
    model = load_model("vjboost:frontalface")
    det = CascadeDetector(model, scale_factor=1.2)
    with ThreadExecutor(2) as ex:
        got = list(detect_many(model, images, executor=ex, chunk=1, scale_factor=1.2))
    assert [g[0] for g in got] == images
    for path, found, err, _ in got[:2]:
        ref = det.detect(cv2.imread(path))
        assert err == "" and len(ref) > 0
        assert np.array_equal(found.boxes, ref.boxes)
        assert np.array_equal(found.scores, ref.scores)
    assert got[2][1] is None and "c.png" in got[2][2]
    assert got[3][1] is None and "missing.png" in got[3][2]
    with pytest.raises(ValueError, match="scale_factor"):
        list(detect_many(model, images, scale_factor=0.5))


# ------------------------------------------------------------------------------------------------
# Dask
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_cluster():
    """A local cluster of 2 worker processes for the module."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    yield cluster
    cluster.close()


def _die_once(x: int, marker: str) -> int:
    """Kills its own worker process the first time it sees unit 3."""
    if x == 3 and not os.path.exists(marker):
        with open(marker, "w"):
            pass
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


@pytest.mark.slow
def test_dask_two_workers_same_cascade(faces, backgrounds, dask_cluster):
    ref = _train(faces, backgrounds, None)
    with make_executor(scheduler=dask_cluster.scheduler_address) as ex:
        assert ex.n_workers == 2
        got = _train(faces, backgrounds, ex)
    assert stages_digest(ref.stages_) == stages_digest(got.stages_)
    assert [m["n_scanned"] for m in ref.mining_] == [m["n_scanned"] for m in got.mining_]


@pytest.mark.slow
def test_dask_killed_worker_is_retried(tmp_path, dask_cluster):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    marker = str(tmp_path / "died")
    with make_executor(scheduler=dask_cluster.scheduler_address) as ex:
        assert ex.map(_die_once, range(8), marker) == [x * x for x in range(8)]
    assert os.path.exists(marker)  # a worker did die on unit 3


@pytest.mark.slow
def test_vjdetect_on_dask_same_output(images, tmp_path, dask_cluster):
    outs = []
    for extra in ([], ["--scheduler", dask_cluster.scheduler_address]):
        r = CliRunner().invoke(__import__("vjboost.cli.detect", fromlist=["main"]).main,
                               [*images, "--no-progress", "-s", "1.2", *extra])
        assert r.exit_code == 3, r.output  # two inputs skipped, the others processed
        outs.append((r.stdout, r.stderr))
    assert outs[0] == outs[1]
    assert len([json.loads(s) for s in outs[0][0].splitlines()]) >= 2
    assert "2 input(s) read" in outs[0][1] and "2 skipped" in outs[0][1]


def test_unreachable_scheduler_is_one_clear_error(faces, backgrounds, tmp_path):
    pytest.importorskip("distributed")
    with pytest.raises(ExecutorError, match=r"tcp://127\.0\.0\.1:1: cannot reach"):
        make_executor(scheduler="tcp://127.0.0.1:1", timeout=0.5)


@pytest.mark.parametrize("address,why", [("garbage", "missing port"),
                                         ("tcp://host:99999", "outside 1..65535"),
                                         ("foo://host:1", "unknown address scheme")])
def test_malformed_scheduler_address_is_refused_at_once(tmp_path, address, why):
    pytest.importorskip("distributed")
    from vjboost.cli.detect import main as vjdetect
    from vjboost.cli.train import vjtrain

    t0 = time.monotonic()
    with pytest.raises(ExecutorError, match=f"--scheduler '{address}': .*{why}"):
        make_executor(scheduler=address, timeout=30)
    for cmd, args in ((vjdetect, ["img.png"]), (vjtrain, ["pos.npz", "neg", "-o",
                                                        str(tmp_path / "o")])):
        r = CliRunner().invoke(cmd, [*args, "--scheduler", address])
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        errors = [ln for ln in r.output.splitlines() if ln.startswith("Error")]
        assert len(errors) == 1 and "--scheduler" in errors[0] and why in errors[0], r.output
    assert time.monotonic() - t0 < 5  # not after Dask's connection timeout


@pytest.mark.slow
def test_vjtrain_unreachable_scheduler(tmp_path, backgrounds):
    from vjboost.cli.train import vjtrain

    np.savez(tmp_path / "pos.npz", images=np.zeros((300, 12, 12), np.uint8))
    r = CliRunner().invoke(vjtrain, [str(tmp_path / "pos.npz"), os.path.dirname(backgrounds[0]),
                                     "-o", str(tmp_path / "out"), "--window", "12x12",
                                     "--num-pos", "100", "--num-neg", "100", "--stages", "1",
                                     "--scheduler", "tcp://127.0.0.1:1"])
    assert r.exit_code != 0
    assert "cannot reach the Dask scheduler" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) <= 3


@pytest.mark.slow
def test_lost_scheduler_is_one_clear_error(dask_cluster):
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=50)
    ex = make_executor(scheduler=cluster.scheduler_address, timeout=5)
    try:
        assert ex.map(_slow_square, [1, 2]) == [1, 4]
        cluster.close()
        with pytest.raises(ExecutorError, match="lost the Dask scheduler.*--resume"):
            ex.map(_slow_square, range(4))
    finally:
        ex.close()


@pytest.mark.parametrize("edge_sample", [None, 50])
def test_precompute_blocks_on_threads_same_matrix(faces, edge_sample):
    from vjboost.boost.binning import precompute
    from vjboost.cascade.trainer import make_pool

    pool = make_pool("haar,lbp", WIN)
    ids = np.arange(0, pool.n_features, 7)
    kw = dict(feature_ids=ids, block_features=300, edge_sample_size=edge_sample, seed=4)
    ref = precompute(pool, faces, "uint8", **kw)
    with ThreadExecutor(2) as ex:
        got = precompute(pool, faces, "uint8", executor=ex, **kw)
    assert np.array_equal(ref.matrix, got.matrix)
    assert np.array_equal(ref.edges, got.edges)
    assert got.categorical.any() and not got.categorical.all()  # both kinds of blocks
