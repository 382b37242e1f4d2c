"""What a training run reports while it runs: events for callbacks, per-stage memory, the ETA.

The trainer reports through ``callback(event, info)`` (the command line draws progress bars from
these events; the library itself never prints):

* ``"stage"`` — a stage starts: ``stage``, ``n_stages``, ``cascade_false_alarm``;
* ``"mining"`` — after every mining batch: a :class:`~vjboost.cascade.negatives.MiningProgress`
  under ``progress`` (windows scanned per second, acceptance ratio, windows and seconds still
  needed for the stage, distinct windows the backgrounds can still supply) and the run's ``eta``;
* ``"round"`` — after every boosting round: ``round``, ``loss``, ``hit_rate``, ``false_alarm``;
* ``"log"`` — one line of text under ``message``;
* ``"stage_done"`` — a stage ends: ``stage``, ``seconds`` (per step), ``peak_rss`` (bytes, the
  stage's own peak where the system can tell), ``eta`` (seconds for the rest of the run).

:class:`RunClock` estimates the time left: a future stage costs the mean boosting time of the
stages so far plus the last stage's mining time multiplied by the growth of the windows mining
needs (each stage lets through about ``max_false_alarm`` of what the cascade accepted, so a stage
needs about ``1 / max_false_alarm`` times more scanned windows than the one before), and the run
ends at ``num_stages`` or, earlier, when the acceptance ratio reaches the cascade's target.
"""

from __future__ import annotations

import math
import resource
from collections.abc import Callable
from typing import Any

from .._memory import _proc_bytes

__all__ = ["RunClock", "mining_event", "peak_rss", "reset_peak_rss"]

Callback = Callable[[str, dict[str, Any]], None]


def reset_peak_rss() -> bool:
    """Reset the process's peak resident memory (Linux ``clear_refs`` 5); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    """Peak resident memory in bytes since the last :func:`reset_peak_rss` (since the start of
    the process where it cannot be reset)."""
    peak = _proc_bytes("/proc/self/status", field="VmHWM")
    if peak is not None:
        return peak
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


class RunClock:
    """Estimates the seconds a cascade run still needs from the stages trained so far.

    Parameters
    ----------
    num_stages : int
    max_false_alarm : float
        Per-stage false-alarm goal (sets how fast mining grows).
    required : float
        The cascade's target acceptance ratio (the run stops when mining measures it).
    max_scanned : int, optional
        The stages' mining budget in windows: a stage's mining is expected to grow up to the
        time of that many windows at the last stage's scan rate, and no further.

    Examples
    --------
    >>> clock = RunClock(10, 0.5, 0.5 ** 10)
    >>> clock.add(mining=1.0, other=4.0, acceptance_ratio=0.5)
    >>> round(clock.eta(1))  # 9 stages left: 9 * 4 s of boosting + 2 + 4 + ... + 512 s of mining
    1058
    >>> capped = RunClock(10, 0.5, 0.5 ** 10, max_scanned=4_000)
    >>> capped.add(mining=1.0, other=4.0, acceptance_ratio=0.5, scanned=1_000)
    >>> round(capped.eta(1))  # the budget is 4 s of mining: 2 + 4 + 7 * 4 s, and 36 s of boosting
    70
    """

    def __init__(self, num_stages: int, max_false_alarm: float, required: float, *,
                 max_scanned: int | None = None) -> None:
        self.num_stages, self.required = int(num_stages), float(required)
        self.growth = 1.0 / float(max_false_alarm)
        self.max_scanned = max_scanned
        self.mining: list[float] = []
        self.other: list[float] = []
        self.scanned: list[int] = []
        self.ratio = 1.0

    def add(self, *, mining: float, other: float, acceptance_ratio: float,
            scanned: int = 0) -> None:
        """Record a finished stage: seconds of mining, seconds of the rest, acceptance ratio
        and fresh windows scanned.

        Parameters
        ----------
        mining : float
            Seconds the stage's negative mining took.
        other : float
            Seconds of the rest of the stage (boosting, evaluation).
        acceptance_ratio : float
            The cascade's acceptance ratio measured by that mining.
        scanned : int, default 0
            Fresh windows that mining scanned (sets the scan rate the budget is timed at).
        """
        self.mining.append(float(mining))
        self.other.append(float(other))
        self.scanned.append(int(scanned))
        self.ratio = float(acceptance_ratio)

    def stages_left(self, done: int) -> int:
        """Stages still to train after ``done``: up to ``num_stages``, or fewer when the
        acceptance ratio will reach the target first."""
        left = self.num_stages - int(done)
        if 0 < self.required < self.ratio < 1.0:
            left = min(left, math.ceil(math.log(self.ratio / self.required)
                                       / math.log(self.growth)))
        return max(0, left)

    def eta(self, done: int, *, mining_now: float = 0.0) -> float:
        """Seconds still needed after ``done`` stages (plus ``mining_now`` seconds still
        expected for the stage being mined).

        Each stage left costs the mean of the other seconds so far plus the last mining time
        grown by ``1 / max_false_alarm`` per stage.

        Parameters
        ----------
        done : int
            Stages finished.
        mining_now : float, default 0.0
            Seconds still expected for the mining under way.

        Returns
        -------
        float
            NaN before the first stage is recorded.
        """
        if not self.mining:
            return math.nan
        other = sum(self.other) / len(self.other)
        last = self.mining[-1]
        cap = math.inf
        if self.max_scanned is not None and self.scanned[-1] > 0 and last > 0:
            cap = self.max_scanned * last / self.scanned[-1]  # the budget at the last scan rate
        total = mining_now
        for j in range(1, self.stages_left(done) + 1):
            total += other + min(last * self.growth ** j, cap)
        return total


def mining_event(emit: Callable[..., None], clock: RunClock, stage: int, progress: Any) -> None:
    """Forward a mining batch's progress, with the run's ETA, as a ``"mining"`` event.

    Parameters
    ----------
    emit : callable
        ``emit(kind, **fields)``, the training's event sink.
    clock : RunClock
        The run's stage times.
    stage : int
        Stages finished, as for :meth:`RunClock.eta`.
    progress : object
        The mining batch's progress; its ``seconds_needed`` (NaN: unknown) is the mining time
        still expected.
    """
    now = progress.seconds_needed
    emit("mining", progress=progress,
         eta=clock.eta(stage, mining_now=0.0 if math.isnan(now) else now))
