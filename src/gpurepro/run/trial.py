"""One trial: a subprocess in its own process group, under a wall-clock limit and, where the
case declares one, a no-progress limit.

Standard library only. The process group matters: a driver may fork (a debugger, a sanitizer,
a shell wrapper), and on timeout or after a crash the whole group is killed so nothing is left
running on the GPU between trials.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .classify import Observed, find_crash_record, parse_json_lines

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
        except ValueError:
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
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own session => own process group
        )
    except OSError as exc:
        obs = Observed(None, False, [], launch_error=f"cannot start {argv[0]}: {exc}")
        return Finished(obs, 0.0, None)

    out_lines: list[str] = []
    err_chunks: list[str] = []
    progress = Progress() if stall_s and parse is None else None

    def read_out() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", errors="replace")
            out_lines.append(line)
            if progress is not None:
                progress.saw(line)
            if on_line is not None:
                on_line(line)

    def read_err() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            err_chunks.append(raw.decode("utf-8", errors="replace"))
            # Keep memory bounded on chatty stderr: the crash record is the last thing
            # written, so the tail is what matters.
            if len(err_chunks) > 4000:
                del err_chunks[:2000]

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
            _signal(proc.pid, signal.SIGQUIT)
            deadline = min(deadline, now + QUIT_GRACE_S)
        if cancel is not None and cancel.is_set():
            break
    duration = time.monotonic() - started
    # The leader is gone (or the run is stopping); whatever it left behind in its group goes
    # too, which also closes the pipes the readers are waiting on.
    _kill_group(proc.pid)
    if cancel is not None and cancel.is_set():
        # Stopped from outside (Ctrl-C, SIGTERM): whatever the process did last, its end was
        # caused by the stop, not by the bug. Nothing of it is recorded.
        proc.wait()
        for r in readers:
            r.join(timeout=5)
        raise TrialCancelled(argv[0])
    for r in readers:
        r.join(timeout=5)

    stderr_text = "".join(err_chunks)
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
    return Finished(obs, duration, proc.pid)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
