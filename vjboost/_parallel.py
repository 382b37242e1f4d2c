"""Executors: run a pure function over units in-process, on local threads, or on Dask.

Every parallel job of the library (mining background images, batch detection) is written as a
*unit function* ``fn(unit, *shared)`` — a pure function of picklable arguments — and handed to an
:class:`Executor`. The executor only decides where the calls run; results always come back **in
unit order**, whatever order they complete in, so callers assemble them exactly as a serial loop
would and the outcome does not depend on the executor or the number of workers.

* :class:`SerialExecutor` — calls ``fn`` in the calling thread (the reference).
* :class:`ThreadExecutor` — a thread pool (the numba kernels release the GIL).
* :class:`DaskExecutor` — tasks on a ``dask.distributed`` cluster: an existing scheduler
  (``address="tcp://HOST:PORT"``) or a local cluster of ``n_workers`` processes. Large constant
  arguments (a model's JSON bytes) are sent to the workers once with :meth:`Executor.share`;
  units should be small (file paths, indices). Tasks whose worker dies are re-run elsewhere
  (Dask's ``allowed-failures``) and tasks that raise are retried ``retries`` times; a scheduler
  that cannot be reached or goes away raises :class:`ExecutorError` with one line of explanation.

``dask`` is imported only when a :class:`DaskExecutor` is created (the optional extra
``vjboost[dask]``).

Examples
--------
>>> with make_executor() as ex:
...     list(ex.imap(pow, [1, 2, 3], 2))
[1, 4, 9]
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, TypeVar

from ._errors import VJBoostError

__all__ = [
    "DaskExecutor",
    "Executor",
    "ExecutorError",
    "check_scheduler_address",
    "SerialExecutor",
    "ThreadExecutor",
    "make_executor",
    "worker_cached",
]

_T = TypeVar("_T")


class ExecutorError(VJBoostError, RuntimeError):
    """The cluster could not be reached, went away, or a task kept killing its workers."""


class Executor:
    """Runs a unit function over units; results in unit order.

    Subclasses implement :meth:`_submit` and :meth:`_result`; ``n_workers`` says how many units
    may usefully run at once (it sizes the look-ahead of :meth:`imap`).
    """

    n_workers: int = 1
    name: str = "serial"

    def share(self, value: Any) -> Any:
        """A handle on ``value`` to pass as a shared argument (sent to each worker once)."""
        return value

    def imap(self, fn: Callable[..., Any], units: Iterable[Any], *shared: Any,
             ahead: int | None = None) -> Iterator[Any]:
        """``fn(unit, *shared)`` for each unit, yielded in unit order.

        Units are submitted lazily, at most ``ahead`` (default ``2 * n_workers``) beyond the
        one being waited for, so a consumer that stops early (closes the iterator) wastes at
        most that many calls; pending ones are cancelled.

        Parameters
        ----------
        fn : callable
            Pure function ``fn(unit, *shared)``; must be importable by name on remote workers.
        units : iterable
            Picklable units.
        *shared
            Constant arguments (values or :meth:`share` handles).
        ahead : int, optional

        Yields
        ------
        Whatever ``fn`` returns, one per unit, in order.
        """
        ahead = max(1, int(ahead) if ahead is not None else 2 * self.n_workers)
        it = iter(units)
        pending: deque[Any] = deque()
        try:
            for unit in itertools.islice(it, ahead):
                pending.append(self._submit(fn, unit, shared))
            while pending:
                fut = pending.popleft()
                for unit in itertools.islice(it, 1):
                    pending.append(self._submit(fn, unit, shared))
                yield self._result(fut)
        finally:
            for fut in pending:
                self._cancel(fut)

    def map(self, fn: Callable[..., Any], units: Iterable[Any], *shared: Any) -> list[Any]:
        """``[fn(u, *shared) for u in units]``, computed by this executor."""
        return list(self.imap(fn, units, *shared))

    # -- backend hooks --------------------------------------------------------------------------

    def _submit(self, fn: Callable[..., Any], unit: Any, shared: tuple[Any, ...]) -> Any:
        return (fn, unit, shared)

    def _result(self, fut: Any) -> Any:
        fn, unit, shared = fut
        return fn(unit, *shared)

    def _cancel(self, fut: Any) -> None:
        pass

    def close(self) -> None:
        """Release workers (a no-op for in-process executors)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, n_workers={self.n_workers})"


class SerialExecutor(Executor):
    """Every unit in the calling thread, when its result is asked for."""


class ThreadExecutor(Executor):
    """A pool of ``n_workers`` threads in this process."""

    def __init__(self, n_workers: int) -> None:
        if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
            raise ValueError(f"n_workers: expected a positive integer, got {n_workers!r}")
        self.n_workers = n_workers
        self.name = f"{n_workers} threads"
        self._pool = cf.ThreadPoolExecutor(n_workers, thread_name_prefix="vjboost")

    def _submit(self, fn, unit, shared):
        return self._pool.submit(fn, unit, *shared)

    def _result(self, fut):
        return fut.result()

    def _cancel(self, fut):
        fut.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ExecutorError(
            "Dask is not installed: pip install 'vjboost[dask]' (dask.distributed) to use "
            "--scheduler/--workers") from None
    return distributed


#: address schemes whose location is HOST:PORT (the others, such as ``inproc``, have their own)
_HOST_PORT_SCHEMES = ("tcp", "tls", "ws", "wss")


def check_scheduler_address(address: str) -> str:
    """A Dask scheduler address, checked for its form before any connection is tried: a known
    scheme and, for ``tcp``/``tls``/``ws``/``wss`` (``tcp`` when none is given), a host and a
    port in 1..65535.

    Dask's client only finds a malformed address out once its connection timeout has passed,
    and then with two tracebacks.

    Parameters
    ----------
    address : str
        E.g. ``tcp://10.0.0.5:8786``.

    Returns
    -------
    str
        ``address``.

    Raises
    ------
    ExecutorError
        Naming ``--scheduler``, the address and what is wrong with it (also when Dask is not
        installed).

    Examples
    --------
    >>> check_scheduler_address("tcp://10.0.0.5:8786")
    'tcp://10.0.0.5:8786'
    >>> check_scheduler_address("garbage")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vjboost._parallel.ExecutorError: --scheduler 'garbage': not a Dask scheduler address \
(missing port number...); expected tcp://HOST:PORT
    """
    _import_distributed()
    from distributed.comm import addressing, registry

    try:
        if not isinstance(address, str) or not address.strip():
            raise ValueError("empty")
        scheme, location = addressing.parse_address(address)
        registry.get_backend(scheme)  # ValueError naming the known schemes
        if scheme in _HOST_PORT_SCHEMES:
            _, port = addressing.parse_host_port(location)
            if not 1 <= int(port) <= 65535:
                raise ValueError(f"port {port} is outside 1..65535")
    except (ValueError, TypeError) as exc:
        raise ExecutorError(f"--scheduler {address!r}: not a Dask scheduler address ({exc}); "
                            "expected tcp://HOST:PORT") from None
    return address


class DaskExecutor(Executor):
    """Tasks on a ``dask.distributed`` cluster.

    Parameters
    ----------
    address : str, optional
        Scheduler address (``tcp://HOST:PORT``) of a running cluster.
    n_workers : int, optional
        Without ``address``: start a ``LocalCluster`` of this many worker processes (one
        thread each, since every kernel call already uses the core it runs on).
    retries : int, default=2
        Re-runs of a task that raised (a worker that *dies* is handled by the scheduler, which
        re-runs its tasks elsewhere up to ``distributed.scheduler.allowed-failures`` times).
    timeout : float, default=10
        Seconds to wait for the scheduler when connecting.
    quiet : bool, default=False
        Silence Dask's own log messages below CRITICAL in this process (command-line tools:
        a lost scheduler is then reported by the one line of :class:`ExecutorError`).
    """

    def __init__(self, address: str | None = None, *, n_workers: int | None = None,
                 retries: int = 2, timeout: float = 10.0, quiet: bool = False) -> None:
        if (address is None) == (n_workers is None):
            raise ValueError("give exactly one of address (a running scheduler) and n_workers "
                             "(a local cluster)")
        if n_workers is not None and (isinstance(n_workers, bool)
                                      or not isinstance(n_workers, int) or n_workers < 1):
            raise ValueError(f"n_workers: expected a positive integer, got {n_workers!r}")
        distributed = _import_distributed()
        if address is not None:
            check_scheduler_address(address)
        if quiet:
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
        self.retries = int(retries)
        self.address = address
        self._cluster = None
        if address is None:
            # worker processes inherit the environment: the numba cache is shared with them
            import dask

            try:
                # the workers' statistical profiler interrupts the task every 10 ms to sample
                # its stack: a cost, and no insight into tasks that run compiled kernels
                with dask.config.set({"distributed.worker.profile.enabled": False}):
                    self._cluster = distributed.LocalCluster(
                        n_workers=n_workers, threads_per_worker=1, processes=True,
                        dashboard_address=":0", silence_logs=40)
            except (RuntimeError, OSError, TimeoutError) as exc:
                # e.g. a script without ``if __name__ == "__main__":`` (spawned workers
                # re-import it)
                raise ExecutorError(
                    f"--workers {n_workers}: could not start a local Dask cluster ({exc})"
                ) from None
            self.address = self._cluster.scheduler_address
        try:
            self.client = distributed.Client(self.address, timeout=timeout,
                                             set_as_default=False)
        except (OSError, TimeoutError) as exc:
            self._close_cluster()
            raise ExecutorError(
                f"--scheduler {self.address}: cannot reach the Dask scheduler within "
                f"{timeout:g} s ({type(exc).__name__}); is `dask scheduler` running there?"
            ) from None
        if n_workers is None:
            try:
                info = self.client.scheduler_info(n_workers=-1)
            except TypeError:  # distributed < 2025: every worker is listed anyway
                info = self.client.scheduler_info()
            self.n_workers = max(1, len(info["workers"]))
        else:
            self.n_workers = n_workers
        self.name = (f"local cluster, {n_workers} processes" if address is None
                     else f"scheduler {address}")

    def share(self, value: Any) -> Any:
        try:
            return self.client.scatter(value, broadcast=True, hash=False)
        except Exception as exc:
            if self.client.status == "running":
                raise
            raise self._lost(exc) from None

    def _submit(self, fn, unit, shared):
        try:
            return self.client.submit(fn, unit, *shared, pure=False, retries=self.retries)
        except Exception as exc:
            if self.client.status == "running":
                raise
            raise self._lost(exc) from None

    def _result(self, fut):
        distributed = _import_distributed()
        try:
            return fut.result()
        except distributed.KilledWorker as exc:
            raise ExecutorError(
                f"a task killed its Dask worker repeatedly and was given up ({exc}); see the "
                "workers' logs") from None
        except (cf.CancelledError, distributed.comm.CommClosedError, TimeoutError) as exc:
            raise self._lost(exc) from None
        except OSError as exc:
            if self.client.status != "running":
                raise self._lost(exc) from None
            raise

    def _cancel(self, fut):
        try:
            fut.cancel()
        except Exception:  # noqa: BLE001 - the cluster may already be gone
            pass

    def _lost(self, exc: BaseException) -> ExecutorError:
        return ExecutorError(
            f"lost the Dask scheduler at {self.address} ({type(exc).__name__}); work done "
            "before the last checkpoint is kept: rerun with --resume")

    def _close_cluster(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing after the scheduler died
                pass
        self._close_cluster()


def make_executor(*, scheduler: str | None = None, workers: int | None = None,
                  threads: int | None = None, retries: int = 2,
                  timeout: float = 10.0, quiet: bool = False) -> Executor:
    """The executor for command-line style options.

    Parameters
    ----------
    scheduler : str, optional
        ``tcp://HOST:PORT`` of a running Dask scheduler.
    workers : int, optional
        Local Dask cluster of this many processes (ignored with ``scheduler``; ``0``/``None``:
        no Dask).
    threads : int, optional
        Without Dask: a thread pool of this many threads (``None``/``1``: serial).
    retries : int, default=2
    timeout : float, default=10
        Seconds to wait for the scheduler.
    quiet : bool, default=False
        See :class:`DaskExecutor`.

    Returns
    -------
    Executor
        Close it (or use it as a context manager) to stop a local cluster.

    Examples
    --------
    >>> with make_executor(threads=2) as ex:
    ...     ex.map(abs, [-1, 2, -3])
    [1, 2, 3]
    """
    if scheduler:
        return DaskExecutor(scheduler, retries=retries, timeout=timeout, quiet=quiet)
    if workers:
        return DaskExecutor(n_workers=int(workers), retries=retries, timeout=timeout,
                            quiet=quiet)
    if threads is not None and threads > 1:
        return ThreadExecutor(int(threads))
    return SerialExecutor()


# per-process state of a worker (speed only): what a unit function builds once for many units
_WORKER_LOCK = threading.Lock()
_WORKER_CACHE: OrderedDict[Hashable, Any] = OrderedDict()
#: the latest built objects a process keeps (a run's models change stage by stage)
WORKER_CACHE_SIZE = 4


def worker_cached(key: Hashable, build: Callable[[], _T]) -> _T:
    """``build()``, kept by this process under ``key`` among the latest :data:`WORKER_CACHE_SIZE`.

    A unit function runs many times in one worker process (later chunks, later stages); what it
    builds from its shared arguments (a detector from a model's bytes) is built once. The key
    must identify everything ``build`` reads (e.g. the model's digest and the parameters); the
    cache changes no result, only speed. Two threads asking for a missing key may both build it.

    Parameters
    ----------
    key : hashable
    build : callable
        Called without arguments when ``key`` is not kept.

    Returns
    -------
    object
        What ``build`` returned, now or for an earlier call with the same key.

    Examples
    --------
    >>> worker_cached(("example", 1), lambda: [1, 2]) is worker_cached(("example", 1), list)
    True
    """
    with _WORKER_LOCK:
        if key in _WORKER_CACHE:
            _WORKER_CACHE.move_to_end(key)
            return _WORKER_CACHE[key]
    value = build()
    with _WORKER_LOCK:
        _WORKER_CACHE[key] = value
        while len(_WORKER_CACHE) > WORKER_CACHE_SIZE:
            _WORKER_CACHE.popitem(last=False)
    return value
