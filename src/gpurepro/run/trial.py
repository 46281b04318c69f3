"""One trial: a subprocess in its own process group, under a wall-clock limit.

Standard library only. The process group matters: a driver may fork (a debugger, a sanitizer,
a shell wrapper), and on timeout or after a crash the whole group is killed so nothing is left
running on the GPU between trials.
"""

from __future__ import annotations

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
) -> Finished:
    """Run one trial process to completion (or to its limit) and collect what it said."""
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

    def read_out() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", errors="replace")
            out_lines.append(line)
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
    deadline = started + timeout_s
    while True:
        try:
            proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            timed_out = True
            _kill_group(proc.pid)
            proc.wait()
            break
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
        returncode=None if timed_out else proc.returncode,
        timed_out=timed_out,
        events=events,
        stderr_tail=stderr_text[-STDERR_TAIL:],
        crash=find_crash_record(stderr_text),
        unparsed_lines=unparsed,
    )
    return Finished(obs, duration, proc.pid)
