"""How long a test may wait on what it started: a number of harness start-ups, each as long as
this machine takes, now, to start one.

A test waits on an event (a process's exit, a journal line, a pid gone); a limit on that wait is
there only to turn a hang into a failure. A constant limit (60 s) is a guess about the machine:
four CPU hogs beside the suite on two cores make a `record` take ten times what it takes alone,
and the guess fails tests that would have passed. So a limit here is a number of start-ups, a
start-up being the wall time of a fresh interpreter importing the harness's command line,
measured here the first time a test process needs it. A wait that reaches its limit measures the
start-up again and goes on while the machine has slowed since; it fails only when it has lasted
its number of start-ups as long as they are at its end.

    done = pace.run([sys.executable, "-m", "gpurepro", "validate", path], capture_output=True,
                    text=True)               # subprocess.run without a constant timeout
    out, err = pace.communicate(proc)        # Popen.communicate, the same
    pace.until(lambda: journal.exists())     # a condition polled under the same kind of limit
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROBE = [sys.executable, "-c", "import gpurepro.cli.main"]
# What one harness command may take before it counts as a hang: a `run` of the fake case, a
# `record` with its pictures, a `validate` of every committed document take 10 to 50 start-ups
# on an idle machine (a start-up there is about 0.3 s); the margin is for a machine that slows
# down during the wait more than a fresh measurement shows.
COMMAND = 300
# What a build with the real nvcc and tileiras, or a fresh clone installing its environments, may
# take: minutes of compilers on an idle machine.
BUILD = 10 * COMMAND
# A re-measured start-up must be this much longer than the last one for a wait to go on: the
# measurement's own noise does not extend a hang forever.
SLOWER = 1.2
POLL_S = 0.01

_startups: list[float] = []


def startup_s(fresh: bool = False) -> float:
    """Wall seconds this machine takes to start the harness's command line: measured at the first
    call of this process (and again when ``fresh``), the longest measurement kept."""
    if fresh or not _startups:
        began = time.monotonic()
        subprocess.run(PROBE, check=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        _startups.append(time.monotonic() - began)
    return max(_startups)


def limit_s(startups: float = COMMAND) -> float:
    """The limit, in seconds as this machine stands now, of a wait of ``startups`` start-ups."""
    return startups * startup_s()


def _slowed(pace: float) -> float | None:
    """The start-up measured again, where the machine has slowed since ``pace`` was taken."""
    fresh = startup_s(fresh=True)
    return fresh if fresh > SLOWER * pace else None


def communicate(proc: subprocess.Popen, startups: float = COMMAND) -> tuple[Any, Any]:
    """``proc.communicate()`` under a limit of ``startups`` start-ups; past it the process is
    killed (with what it started in its group, if it leads one) and TimeoutExpired raised."""
    began, pace = time.monotonic(), startup_s()
    while True:
        left = began + startups * pace - time.monotonic()
        try:
            return proc.communicate(timeout=max(left, 0.0))
        except subprocess.TimeoutExpired:
            slower = _slowed(pace)
            if slower is None:
                _kill(proc)
                raise subprocess.TimeoutExpired(proc.args, time.monotonic() - began) from None
            pace = slower


def wait(proc: subprocess.Popen, startups: float = COMMAND) -> int:
    """``proc.wait()`` under the same limit as ``communicate``."""
    began, pace = time.monotonic(), startup_s()
    while True:
        left = began + startups * pace - time.monotonic()
        try:
            return proc.wait(timeout=max(left, 0.0))
        except subprocess.TimeoutExpired:
            slower = _slowed(pace)
            if slower is None:
                _kill(proc)
                raise subprocess.TimeoutExpired(proc.args, time.monotonic() - began) from None
            pace = slower


def run(argv: Sequence[str | os.PathLike[str]], startups: float = COMMAND, *,
        capture_output: bool = False, check: bool = False,
        **popen: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, ...)`` with the limit of ``communicate`` in place of a timeout."""
    if capture_output:
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with subprocess.Popen(argv, **popen) as proc:
        out, err = communicate(proc, startups)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def until(condition: Callable[[], Any], startups: float = COMMAND) -> bool:
    """Poll ``condition`` until it holds (True) or ``startups`` start-ups have passed (False)."""
    began, pace = time.monotonic(), startup_s()
    while True:
        if condition():
            return True
        if time.monotonic() > began + startups * pace:
            slower = _slowed(pace)
            if slower is None:
                return bool(condition())
            pace = slower
        time.sleep(POLL_S)


def _kill(proc: subprocess.Popen) -> None:
    try:
        if os.getpgid(proc.pid) == proc.pid:  # started with start_new_session or its own group
            os.killpg(proc.pid, 9)
        else:
            proc.kill()
    except ProcessLookupError:
        pass
    proc.communicate() if proc.stdout or proc.stderr else proc.wait()
