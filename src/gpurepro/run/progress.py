"""Progress of a run: per-arm outcome counts as trials finish, with the wall time elapsed and an
estimate of the time left.

With rich and a terminal: a live table. Otherwise (a GPU node's log, CI, a pipe): one plain
line per finished trial, which is also what survives in a truncated log tail. Progress goes to
stderr: stdout carries what a command produces (the journal's and the document's paths, the
verdict).

The time left is the trials still to run times the wall time one takes here (``time_left``).
The trials still to run: those of the plan not yet run, or, in a design that stops arms as
their claims are decided, those the arms still open may still run; fewer where the run's
expectation (its journal header's claim families, gpurepro.analyze.decidability) says fewer
will be needed. The wall time per trial: as observed since this harness began its trials, or,
before the first one ends, the expectation's seconds per trial shared among the worker slots.
Where neither is known the time left is "unknown"; it is never negative or infinite.
"""

from __future__ import annotations

import math
import re
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ..model.journal import RunHeader
from ..model.plan import Plan, PlannedTrial

# What other modules use; the rest is this module's own.
__all__ = [
    "clock", "Expectation", "expectation_of", "Left", "Progress", "terminal_safe", "time_left"
]

try:  # optional: the run stage must work with the standard library alone
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table
except ImportError:  # pragma: no cover - exercised on bare GPU nodes
    Console = Live = Table = None  # type: ignore[assignment,misc]

# The trials the arms still open may still run, given every record so far (a sequential design
# gives it: gpurepro.run.schedule.trials_open); without one, the plan's trials not yet run.
TrialsToRun = Callable[[Sequence[Mapping[str, Any]]], int]


@dataclass(frozen=True)
class Expectation:
    """What a run expects before its first trial: how many trials it will run, and their
    durations summed (the median of its simulations)."""

    trials: float
    seconds: float


def expectation_of(run: RunHeader) -> Expectation | None:
    """The expectation a journal header holds (``options.families.expected``), if its claim
    families were computed and it is a usable one."""
    families = run.options.get("families") or {}
    expected = families.get("expected") if families.get("computed") else None
    if not isinstance(expected, Mapping):
        return None
    trials, seconds = _positive(expected.get("trials")), _positive(expected.get("seconds_median"))
    return Expectation(trials, seconds) if trials is not None and seconds is not None else None


def _positive(x: Any) -> float | None:
    """A finite number above zero, or None."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) and x > 0 else None


@dataclass(frozen=True)
class Left:
    """An estimate of the time left: ``seconds`` (None: unknown), and whether it is the most
    the design may still take (``at_most``) rather than what it is expected to take."""

    seconds: float | None
    at_most: bool = False

    def text(self) -> str:
        if self.seconds is None:
            return "time left unknown"
        return f"{'at most' if self.at_most else 'about'} {clock(self.seconds)} left"


def time_left(ran: int, to_run: int, bounded: bool, expected: Expectation | None, slots: int,
              elapsed_s: float, ran_here: int) -> Left:
    """The time left of a run that has run ``ran`` trials (``ran_here`` of them in
    ``elapsed_s`` seconds of this harness), with at most ``to_run`` still to run (``bounded``:
    the design may stop before them), ``slots`` at a time."""
    trials, at_most = to_run, bounded
    if expected is not None and expected.trials - ran > 0:
        trials, at_most = min(to_run, math.ceil(expected.trials - ran)), False
    if trials <= 0:
        return Left(0.0)
    per_trial = None
    if ran_here > 0 and elapsed_s > 0:
        per_trial = elapsed_s / ran_here  # wall time, every slot at work
    elif expected is not None:
        per_trial = expected.seconds / expected.trials / max(1, slots)
    if per_trial is None:
        return Left(None)
    seconds = per_trial * trials
    return Left(seconds, at_most) if math.isfinite(seconds) and seconds >= 0 else Left(None)


def clock(seconds: float) -> str:
    """Seconds as h:mm:ss."""
    total = int(round(seconds))
    return f"{total // 3600}:{total // 60 % 60:02d}:{total % 60:02d}"


# What a terminal would act on rather than show: escape sequences (CSI, OSC, and any other
# ESC-led pair) and every other C0 or C1 control character, a line break included.
_TERMINAL_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?"
    r"|[\x00-\x1f\x7f-\x9f]")


def terminal_safe(text: str, lines: bool = False) -> str:
    """``text`` as a progress line may print it: a trial's detail comes from its driver, and a
    driver's escape sequences would move the cursor, retitle the window or clear the screen.
    ``lines``: line breaks kept (a diagnostic of several lines)."""
    if lines:
        return "\n".join(_TERMINAL_CONTROL.sub(" ", line) for line in text.split("\n"))
    return _TERMINAL_CONTROL.sub(" ", text)


class Progress:
    def __init__(self, plan: Plan, done: list[dict[str, Any]], stream: TextIO | None = None,
                 live: bool | None = None,
                 expected: Expectation | None = None, slots: int = 1,
                 to_run: TrialsToRun | None = None, now: Callable[[], float] = time.monotonic):
        self.plan = plan
        self.total = len(plan.order)
        self.stream = stream or sys.stderr
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self.skips: Counter[str] = Counter()
        self.finished_n = 0
        self.records: list[dict[str, Any]] = list(done)
        self.expected = expected
        self.slots = slots
        self.to_run = to_run
        self.now = now
        self.began = now()
        self.ran_here = 0  # trials this harness ran (the resumed ones are not timed here)
        for r in done:
            self.counts[r["arm"]][r["outcome"]] += 1
            self.finished_n += 1
        self.lock = threading.RLock()
        want_live = self.stream.isatty() if live is None else live
        self.live = None
        if want_live and Live is not None:
            self._shown = self._table()
            # Printing to stdout stays there (the command's results), not above the table.
            self.live = Live(console=Console(file=self.stream), get_renderable=self._current_table,
                             refresh_per_second=4, transient=False, redirect_stdout=False)

    def __enter__(self) -> Progress:
        self.began = self.now()
        if self.live is not None:
            self.live.__enter__()
            return self
        left = self.left()
        if self.finished_n:
            self._say(f"resuming: {self.finished_n} of {self.total} trials already journaled; "
                      f"{left.text()}")
        elif left.seconds is not None:
            self._say(f"before the first trial: {left.text()} ({self.slots} trial(s) at a time)")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def _say(self, text: str) -> None:
        print(terminal_safe(text), file=self.stream, flush=True)

    def left(self) -> Left:
        """The time left, as known now."""
        if self.to_run is not None:
            to_run, bounded = self.to_run(self.records), True
        else:
            to_run, bounded = self.total - self.finished_n, False
        return time_left(len(self.records), to_run, bounded, self.expected, self.slots,
                         self.now() - self.began, self.ran_here)

    def elapsed(self) -> str:
        return f"{clock(self.now() - self.began)} elapsed"

    def _current_table(self) -> Any:
        """For the live view's refresh, in its thread and under its lock: the table built now
        (the elapsed time moves between trials) unless a worker is changing the counts, then
        the last one. Never waiting for that worker: it may be waiting for the view's lock."""
        if self.lock.acquire(blocking=False):
            try:
                self._shown = self._table()
            finally:
                self.lock.release()
        return self._shown

    def _table(self) -> Any:
        table = Table(title=f"{self.plan.case}: {self.finished_n}/{self.total} trials, "
                            f"{self.elapsed()}, {self.left().text()}")
        table.add_column("arm")
        outcomes = sorted({o for c in self.counts.values() for o in c})
        for o in outcomes:
            table.add_column(o, justify="right")
        table.add_column("planned", justify="right")
        for arm, n in self.plan.trials_per_arm.items():
            row = [arm] + [str(self.counts[arm].get(o, 0)) for o in outcomes] + [str(n)]
            table.add_row(*row)
        return table

    def skipped(self, planned: PlannedTrial) -> None:
        with self.lock:
            self.skips[planned.arm] += 1
            self.finished_n += 1

    def finished(self, rec: dict[str, Any]) -> None:
        with self.lock:
            self.counts[rec["arm"]][rec["outcome"]] += 1
            self.finished_n += 1
            self.records.append(rec)
            self.ran_here += 1
            if self.live is not None:
                self._shown = self._table()
                return
            counters = " ".join(f"{k}={v}" for k, v in sorted(rec.get("counters", {}).items()))
            gpu = f" gpu{rec['gpu']}" if rec.get("gpu") is not None else ""
            self._say(
                f"[{self.finished_n:>4}/{self.total}, {self.elapsed()}, {self.left().text()}] "
                f"{rec['arm']}#{rec['rep']}{gpu}: {rec['outcome']} ({rec['detail']}) "
                f"{rec['duration_s']:.1f}s {counters}".rstrip()
            )
