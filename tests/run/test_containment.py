"""Nothing of a trial outlives that trial, and no trial outruns its limit, however the trial
tries and whatever happens to the harness: trials that detach (double fork, setsid, an empty
environment), that keep forking and exiting, a watchdog killed and then its harness, a harness
stopped past its trials' limits, a trial that floods its output. The hostile case
(tests/fixtures/hostile.py) does each; the fault table (docs/faults.md) quotes these counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from gpurepro.run import procs
from gpurepro.run.journal import read
from tests import pace
from tests.conftest import ROOT

HOSTILE = "tests/fixtures/hostile_case/manifest.py"
ESCAPEE = b"gpurepro-escapee"


@pytest.fixture(scope="module")
def hostile_build():
    from gpurepro.building.artifacts import build_case
    from gpurepro.case.load import load_case

    build_dir = ROOT / "build" / "tests"
    build_case(load_case(ROOT / HOSTILE, ROOT), "host", ROOT, build_dir)
    return build_dir


def _env(tag: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "FAULT_TAG": tag, **extra}


def _start(args: list[str], tag: str, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gpurepro", *args], cwd=ROOT,
                            env=_env(tag, **extra), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def left(tag: str) -> list[int]:
    """Live processes of this test: with FAULT_TAG in their environment, or escapees that
    cleared it (the tag is in their command line)."""
    env_needle, cmd_needle = f"FAULT_TAG={tag}".encode(), ESCAPEE + b"\0" + tag.encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                continue
            if (env_needle in (entry / "environ").read_bytes().split(b"\0")
                    or cmd_needle in (entry / "cmdline").read_bytes()):
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def _cmdline(pid: int) -> bytes:
    """A process's command line; empty once it has gone (it may end between a scan and this)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _escapees(tag: str) -> list[int]:
    needle = ESCAPEE + b"\0" + tag.encode()
    out = []
    for pid in left(tag):
        try:
            if needle in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            pass
    return out


def _left_after_the_sweep(tag: str) -> list[int]:
    """Once the harness has exited: what of this test is alive after its run's watchdog has
    ended its sweep and exited. The watchdog's end is the event waited on (its pid), not a
    wall-clock guess: a loaded machine starves a sweep for seconds. Whatever is left is killed,
    never leaked into the rest of the suite."""
    watchdog = _watchdog_of(tag)
    found = procs.proc(watchdog) if watchdog is not None else None
    if found is not None:
        assert procs.wait_gone(watchdog, found.start, pace.limit_s()), "the watchdog never ended"
    left_over = left(tag)
    for pid in left_over:
        procs.signal_quietly(pid, signal.SIGKILL)
    return left_over


def _wait_for(predicate) -> bool:
    """Poll ``predicate`` until it holds, under pace's limit of a command."""
    return pace.until(predicate)


ENDS = ["normal", "SIGTERM", "SIGKILL"]


# One combination in the fast tier (a detached daemon, the harness SIGKILLed: the hardest end);
# the other eight at volume in the slow tier.
@pytest.mark.parametrize("end,mode", [
    pytest.param(end, mode, id=f"{end}-{mode}",
                 marks=() if (end, mode) == ("SIGKILL", "detach") else pytest.mark.slow)
    for end in ENDS for mode in ("detach", "forker", "forker-bare")])
def test_what_a_trial_leaves_dies_with_it_however_the_harness_ends(hostile_build, tmp_path, mode, end):
    tag = uuid.uuid4().hex
    beat = tmp_path / "beat"
    seconds = "0.4" if end == "normal" else "8"
    proc = _start(["run", HOSTILE, "--arms", f"ok,{mode}", "--trials", "1", "--duration", seconds,
                   "--timeout", "12", "--seed", "1", "--journal", str(tmp_path / "j.journal.jsonl"),
                   "--build-dir", str(hostile_build), "--no-record"], tag, HOSTILE_BEAT=str(beat))
    started = (lambda: beat.exists()) if mode.startswith("forker") else (lambda: _escapees(tag))
    if end != "normal":
        assert _wait_for(started), "the escapee never started"
        # The harness has seen it come back: it looks every 0.05 s, when it gets the CPU, which
        # a loaded machine gives it as late as it starts a Python (pace's start-up).
        time.sleep(max(0.4, pace.startup_s(fresh=True)))
        proc.send_signal(getattr(signal, end))
    _, err = pace.communicate(proc)
    assert proc.returncode == {"normal": 0, "SIGTERM": 143, "SIGKILL": -9}[end], err
    # After a SIGKILL the watchdog does it, between whole scans of /proc.
    assert _left_after_the_sweep(tag) == []
    if mode.startswith("forker"):
        assert beat.exists(), "the chain never started"
        assert _wait_for(lambda: _chain_stopped(beat)), "the chain still forks"


def _chain_stopped(beat: Path, seconds: float = 0.5) -> bool:
    """A chain's links live milliseconds, too short for a scan of /proc: it is gone when its
    beat file stops changing."""
    def state():
        try:
            return beat.stat().st_mtime_ns, beat.read_text()
        except OSError:
            return None
    before = state()
    time.sleep(seconds)
    return state() == before


def test_a_daemon_never_runs_beside_later_trials(hostile_build, tmp_path):
    """Under the subreaper (GPUREPRO_CONTAINMENT=subreaper): a trial in a PID namespace of its
    own would count nothing of the others whatever were alive (its /proc shows its own);
    tests/run/test_kernel_containment.py holds the kernel's containment."""
    tag = uuid.uuid4().hex
    journal = tmp_path / "j.journal.jsonl"
    proc = _start(["run", HOSTILE, "--arms", "ok,detach,forker,count", "--trials", "3",
                   "--duration", "0.3", "--seed", "2", "--journal", str(journal),
                   "--build-dir", str(hostile_build), "--no-record"], tag,
                  HOSTILE_BEAT=str(tmp_path / "beat"), GPUREPRO_CONTAINMENT="subreaper")
    _, err = pace.communicate(proc)
    assert proc.returncode == 0, err
    trials = read(journal).trials
    counts = [t["observations"]["escapees"] for t in trials if t["arm"] == "count"]
    assert counts == [0, 0, 0]
    assert _left_after_the_sweep(tag) == [] and _chain_stopped(tmp_path / "beat")


def _watchdog_of(tag: str) -> int | None:
    for pid in left(tag):
        try:
            if b"watchdog.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            pass
    return None


def test_a_killed_watchdog_is_replaced_so_killing_the_harness_then_leaves_nothing(hostile_build, tmp_path):
    tag = uuid.uuid4().hex
    proc = _start(["run", HOSTILE, "--arms", "ok,detach", "--trials", "2", "--duration", "8",
                   "--timeout", "12", "--seed", "3", "--journal", str(tmp_path / "j.journal.jsonl"),
                   "--build-dir", str(hostile_build), "--no-record"], tag)
    assert _wait_for(lambda: _watchdog_of(tag) is not None and _escapees(tag))
    first = _watchdog_of(tag)
    os.kill(first, signal.SIGKILL)
    assert _wait_for(lambda: _watchdog_of(tag) not in (None, first)), "no new watchdog"
    proc.send_signal(signal.SIGKILL)
    _, err = pace.communicate(proc)
    assert f"the watchdog (pid {first}) is gone; starting another" in err
    assert _left_after_the_sweep(tag) == []


def test_a_stopped_harness_still_holds_its_trials_to_their_limit(hostile_build, tmp_path):
    """Limit 2 s, the harness stopped for 6 s from 0.4 s in: the trial that would crash at 3 s
    is killed at its limit (hung), the 1 s survivor keeps its own duration."""
    tag = uuid.uuid4().hex
    journal = tmp_path / "j.journal.jsonl"
    proc = _start(["run", HOSTILE, "--arms", "ok,crash-at", "--trials", "1", "--duration", "1",
                   "--timeout", "2", "--jobs", "2", "--seed", "4", "--journal", str(journal),
                   "--build-dir", str(hostile_build), "--no-record"], tag)
    # The two drivers (not enter.py and the namespace's init before each, where the kernel holds
    # the trials: their command lines name the driver too).
    assert _wait_for(lambda: len([p for p in left(tag) if b"hostile.py" in _cmdline(p)
                                  and b"enter.py" not in _cmdline(p)]) == 2)
    time.sleep(0.4)
    os.kill(proc.pid, signal.SIGSTOP)
    time.sleep(6.0)
    os.kill(proc.pid, signal.SIGCONT)
    _, err = pace.communicate(proc)
    assert proc.returncode == 0, err
    by_arm = {t["arm"]: t for t in read(journal).trials}
    crash = by_arm["crash-at"]
    assert crash["outcome"] == "hung" and crash["exit"]["killed_by_harness"], crash
    assert crash["duration_s"] <= 2 + 1.0 and crash["duration_from"].startswith("killed at its limit")
    ok = by_arm["ok"]
    assert ok["outcome"] == "survived" and ok["duration_s"] <= 1.5, ok
    assert ok["duration_from"].startswith("the trial's own clock")
    assert _left_after_the_sweep(tag) == []


FLOOD_MB = 256


def test_a_flooding_trial_costs_the_harness_megabytes_and_the_record_counts_the_rest(hostile_build, tmp_path):
    tag = uuid.uuid4().hex
    journal = tmp_path / "j.journal.jsonl"
    measure = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:])\n"
               "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    done = pace.run([sys.executable, "-c", measure, sys.executable, "-m", "gpurepro", "run",
                     HOSTILE, "--arms", "ok,flood", "--trials", "1", "--duration", "0.2",
                     "--timeout", "60", "--journal", str(journal),
                     "--build-dir", str(hostile_build), "--no-record"],
                    cwd=ROOT, env=_env(tag, FLOOD_MB=str(FLOOD_MB)), capture_output=True,
                    text=True)
    status, max_rss_kib = map(int, done.stdout.splitlines()[-1].split())
    assert status == 0, done.stderr
    assert max_rss_kib < 200 * 1024, f"{max_rss_kib // 1024} MiB for {2 * FLOOD_MB} MiB of output"
    flood = next(t for t in read(journal).trials if t["arm"] == "flood")
    assert flood["outcome"] == "survived", flood["detail"]
    dropped = flood["output_dropped"]
    assert dropped["stdout_bytes"] > (FLOOD_MB - 3) << 20 and dropped["stdout_lines"] > 0
    assert dropped["stderr_bytes"] > (FLOOD_MB - 3) << 20
    assert _left_after_the_sweep(tag) == []


def test_the_watchdogs_kill_is_found_by_a_trial_while_the_poll_thread_is_reading_it():
    """After a stopped harness resumes, its poll thread and a trial's thread both drain the
    watchdog's lines. A trial that looks itself up while the poll thread holds the line it
    read ("killed PID T") but has not stored it yet must still find it: otherwise the kill at
    its limit reads as a SIGKILL from outside (a harness error, not the hang it was)."""
    import threading

    from gpurepro.run.contain import Containment

    reading = threading.Event()

    class SlowWatchdog:  # the first read takes the line, then is slow to hand it back
        lines = ["killed 4242 12.5"]

        def said(self):
            taken, self.lines = self.lines, []
            if taken:
                reading.set()
                time.sleep(0.3)
            return taken

    c = Containment(watchdog=SlowWatchdog())
    poll = threading.Thread(target=c._read_watchdog)
    poll.start()
    assert reading.wait(5)
    assert c.killed_at_limit(4242) == 12.5
    poll.join()
