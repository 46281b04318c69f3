"""One trial: a subprocess in its own process group, under a wall-clock limit and, where the
case declares one, a no-progress limit.

Standard library only. The process group matters: a driver may fork (a debugger, a sanitizer,
a shell wrapper), and on timeout or after a crash the whole group is killed so nothing is left
running on the GPU between trials; what left the group comes back to the harness and is killed
with it (contain.py). Its output is kept within caps in bytes (output.py), and its wall time
is checked against its limit whatever the harness was doing meanwhile (``wall_clock``).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import contain, procs
from .classify import Observed, find_crash_record, parse_json_lines
from .output import CappedLines, CappedTail, pump_lines, pump_tail
from .values import TIME_MAX_S, number_problem

# What other modules use; the rest is this module's own.
__all__ = ["Progress", "run_trial", "TrialCancelled", "wall_clock"]

STDERR_TAIL = 4000
# After the no-progress limit: SIGQUIT asks the driver's crash handler (native/crash.cc) for its
# record of where every thread is; this long it has to write it before its group is killed.
QUIT_GRACE_S = 2.0


class Progress:
    """When the trial's counters last moved, from its JSON-lines events as they arrive: a hung
    race goes on heartbeating (its main thread is fine) while the workers stay stuck inside a
    driver call, so what stops is the counters, not the output. The clock starts at the first
    event that carries counters (a heartbeat): a driver's start-up and set-up before its loop
    (cuInit, a preload of thousands of modules) are not a hang."""

    def __init__(self) -> None:
        self.since: float | None = None
        self._counters: object = None

    def saw(self, line: str) -> None:
        if not line.startswith("{"):
            return
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            return
        if not isinstance(event, dict) or event.get("counters") is None:
            return
        counters = event["counters"]
        if self.since is None or counters != self._counters:
            self.since = time.monotonic()
        self._counters = counters

    def stalled_for(self, now: float) -> float:
        return 0.0 if self.since is None else now - self.since


class TrialCancelled(Exception):
    """The run is stopping: the trial was killed and must not be recorded (it reruns at resume)."""


@dataclass
class Finished:
    observed: Observed
    duration_s: float
    pid: int | None = None  # also the process group id (the trial led its own group)
    # What the caps left out: bytes of stdout (whole lines, and the rest of overlong ones) and
    # its lines, bytes of stderr (all 0 when nothing was).
    dropped: dict[str, int] | None = None
    timing: str | None = None  # how the duration was had, when not from the harness's own look
    containment: str | None = None  # what held it (isolation.Mechanism.name); None: no run's


# How late the harness may notice a trial's end before its own measure is not believed: a
# stopped or starved harness measures its own absence.
NOTICED_LATE_S = 1.0


def _own_clock(events: list[dict[str, Any]], crash: dict[str, Any] | None) -> float | None:
    """The trial's own clock at its last word: the largest ``t`` of its events and its crash
    record (seconds since the driver started; native/events.cc, case/driver.py)."""
    seen = [e.get("t") for e in events] + [(crash or {}).get("t")]
    # A clock that cannot be a time since the driver's start (negative, not finite) is not one.
    times = [float(t) for t in seen if isinstance(t, int | float) and not isinstance(t, bool)
             and number_problem(t) is None and 0 <= t <= TIME_MAX_S * 365]
    return max(times) if times else None


def wall_clock(observed: Observed, pid: int, started: float, noticed: float,
               timeout_s: float) -> tuple[float, str | None]:
    """The trial's wall time checked against its limit, whatever the harness was doing (a
    SIGSTOP, Ctrl-Z, a starved machine): returns its duration and how it was had, and marks
    ``observed`` honestly.

    - Killed by the watchdog at its deadline (the harness was not running): ``timed_out``,
      its duration up to that kill.
    - Killed by the harness, but well past its limit: the limit was not held (a harness
      error, not evidence).
    - Ended on its own, but noticed well past its limit: its own clock says when it ended; at
      or within its limit the outcome stands with that duration, past it (or with no clock)
      the limit was not held.
    """
    measured = noticed - started
    killed_at = contain.killed_at_limit(pid)
    if killed_at is not None and not observed.timed_out:
        observed.timed_out = True
        observed.returncode = None
        return max(0.0, killed_at - started), "killed at its limit by the watchdog"
    if measured <= timeout_s + NOTICED_LATE_S:
        return measured, None
    if observed.timed_out or observed.stalled_s is not None:
        observed.not_held = (f"killed {measured:.3g} s after its start against a limit of "
                             f"{timeout_s:g} s: the harness was not running at the limit")
        return measured, "measured by the harness, late"
    own = _own_clock(observed.events, observed.crash)
    if own is not None and own <= timeout_s:
        return own, f"the trial's own clock (the harness saw its end {measured:.3g} s after its start)"
    observed.not_held = (
        f"ended past its limit of {timeout_s:g} s ({'by its own clock at ' + format(own, '.3g') + ' s' if own is not None else 'at a time not known'}; "
        f"seen {measured:.3g} s after its start): the harness was not running to hold it")
    return measured, "measured by the harness, late"


def _startable(program: str, cwd: Path, env: Mapping[str, str]) -> None:
    """Raise the OSError that starting ``program`` directly would raise, if it would."""
    if os.sep in program:
        path = Path(program) if os.path.isabs(program) else cwd / program
        if not path.exists():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if path.is_dir() or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    elif shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_trial(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    parse: Callable[[list[str]], list[dict[str, Any]]] | None = None,
    on_line: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
    stall_s: float | None = None,
) -> Finished:
    """Run one trial process to completion (or to its limit) and collect what it said.

    ``stall_s``: the no-progress limit. A JSON-lines driver whose counters have not moved for
    that long is stopped then (SIGQUIT, then its group killed), not at the wall-clock limit,
    and observed as stalled (``Observed.stalled_s``)."""
    started = time.monotonic()
    try:
        with contain.launching(timeout_s) as launched:  # a trial of the run's containment
            if launched.prefix:
                # Started through enter.py: a program that is not there must still be the
                # launch error it is without it, not an exit status of enter.py's.
                _startable(argv[0], cwd, env)
            proc = subprocess.Popen(
                launched.argv(list(argv)),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # own session => own process group
            )
            launched.register(proc.pid)
    except OSError as exc:
        obs = Observed(None, False, [], launch_error=f"cannot start {argv[0]}: {exc}")
        return Finished(obs, 0.0, None)

    out = CappedLines()
    err = CappedTail()
    cut_lines = [0]
    progress = Progress() if stall_s and parse is None else None

    def read_out() -> None:
        assert proc.stdout is not None

        def keep(raw: bytes) -> None:
            out.add(raw)
            if progress is not None or on_line is not None:
                line = raw.decode("utf-8", errors="replace")
                if progress is not None:
                    progress.saw(line)
                if on_line is not None:
                    on_line(line)

        cut_lines[0] = pump_lines(proc.stdout.fileno(), keep)

    def read_err() -> None:
        assert proc.stderr is not None
        pump_tail(proc.stderr.fileno(), err)

    readers = [threading.Thread(target=read_out, daemon=True),
               threading.Thread(target=read_err, daemon=True)]
    for r in readers:
        r.start()

    timed_out = False
    stalled: float | None = None
    deadline = started + timeout_s
    while True:
        try:
            proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if now >= deadline:
            timed_out = stalled is None
            _kill_group(proc.pid)
            proc.wait()
            break
        if (progress is not None and stall_s and stalled is None
                and progress.stalled_for(now) >= stall_s):
            stalled = progress.stalled_for(now)
            procs.signal_quietly(proc.pid, signal.SIGQUIT)
            deadline = min(deadline, now + QUIT_GRACE_S)
        if cancel is not None and cancel.is_set():
            break
    noticed = time.monotonic()
    # The leader is gone (or the run is stopping); whatever it left behind in its group goes
    # too, which also closes the pipes the readers are waiting on; and so does what left the
    # group (contain.py).
    _kill_group(proc.pid)
    if cancel is not None and cancel.is_set():
        # Stopped from outside (Ctrl-C, SIGTERM): whatever the process did last, its end was
        # caused by the stop, not by the bug. Nothing of it is recorded.
        proc.wait()
        contain.trial_ended(proc.pid)
        for r in readers:
            r.join(timeout=5)
        raise TrialCancelled(argv[0])
    contain.trial_ended(proc.pid)
    for r in readers:
        r.join(timeout=5)

    stderr_text = err.text()
    out_lines = out.lines()
    if parse is None:
        events, unparsed = parse_json_lines(out_lines)
    else:
        events, unparsed = parse(out_lines), 0
    obs = Observed(
        returncode=None if timed_out or stalled is not None else proc.returncode,
        timed_out=timed_out,
        events=events,
        stderr_tail=stderr_text[-STDERR_TAIL:],
        crash=find_crash_record(stderr_text),
        unparsed_lines=unparsed,
        stalled_s=None if stalled is None else round(stalled, 3),
    )
    duration, timing = wall_clock(obs, proc.pid, started, noticed, timeout_s)
    dropped = {"stdout_bytes": out.dropped_bytes + cut_lines[0], "stdout_lines": out.dropped_lines,
               "stderr_bytes": err.dropped}
    return Finished(obs, duration, proc.pid, dropped, timing, launched.mechanism)
