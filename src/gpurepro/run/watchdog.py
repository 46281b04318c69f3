"""Watchdog: no trial outlives the harness, however the harness ends, and none outruns its
wall-clock limit while the harness is not looking.

Every process a run starts carries ``GPUREPRO_RUN_ID=<id>`` in its environment (trial drivers
and whatever they fork: the variable is inherited). The harness starts this watchdog once per
run, in a session of its own so a Ctrl-C, a Ctrl-Z or a signal to the harness's process group
does not reach it, and holds the write end of its stdin. On that pipe the harness also names
every trial it starts (pid, start time, wall-clock deadline) and every orphan its containment
finds (contain.py: processes that left the trial's session, some with an empty environment).

- When the pipe closes (the harness exited, was killed with SIGKILL, or the OOM killer took it)
  the watchdog stops and kills every process carrying the run id and every process it was
  named, with whatever they forked (procs.kill_tree: stopped first, so a process that keeps
  forking cannot stay ahead), then exits.
- When a trial named to it is still running ``DEADLINE_GRACE_S`` past its deadline (the harness
  kills at the deadline itself, unless it is stopped or starved), the watchdog kills it and
  writes ``killed PID T`` on its stdout (T: the monotonic time of the kill), which the harness
  reads to record the trial as killed at its limit.

Why an environment tag as well as pids: the harness can die between starting a trial and
telling anyone about it; the tag is in place from the trial's first instruction.
PR_SET_PDEATHSIG alone would not do either: it reaches only the direct child.

Standard library only; run as a script (``python -I watchdog.py RUN_ID``) so it starts in a
few tens of milliseconds and imports nothing of the harness but procs.py.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RUN_ID_VARIABLE = "GPUREPRO_RUN_ID"
DEADLINE_GRACE_S = 0.5

if __package__:
    from . import procs
else:  # run as a script: procs.py beside this file, imported by its path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import procs  # type: ignore[no-redef]


@dataclass(frozen=True)
class Escaped:
    """What marks a process of the run that cleared its environment: the command line of one
    the harness found escaped (an orphan out of its trial's session), started since ``since``
    (clock ticks since boot: the watchdog's own start)."""

    cmdlines: frozenset[bytes] = frozenset()
    since: int = 0


def _of_run(pid: int, needle: bytes, like: Escaped | None, root: Path = Path("/proc")) -> bool:
    entry = root / str(pid)
    p = procs.proc(pid, root)
    if p is None or p.state == "Z":
        return False
    try:
        if needle in (entry / "environ").read_bytes().split(b"\0"):
            return True
        return bool(like and like.cmdlines and p.start >= like.since
                    and (entry / "cmdline").read_bytes() in like.cmdlines)
    except OSError:
        return False  # gone meanwhile, or not ours to read


def processes_with(run_id: str, proc: Path = Path("/proc"), like: Escaped | None = None) -> list[int]:
    """Pids (other than ours) whose initial environment carries ``GPUREPRO_RUN_ID=run_id`` (or
    that look like a process the run had escape, ``like``). Newest first: a process that forks
    and exits lives milliseconds, and the one alive now has one of the highest pids."""
    needle = f"{RUN_ID_VARIABLE}={run_id}".encode()
    me = os.getpid()
    return [pid for pid in sorted((int(e.name) for e in proc.glob("[0-9]*")), reverse=True)
            if pid != me and _of_run(pid, needle, like, proc)]


def _last_pid() -> int | None:
    for path, field in (("/proc/sys/kernel/ns_last_pid", 0), ("/proc/loadavg", 4)):
        try:
            return int(Path(path).read_text().split()[field])
        except (OSError, ValueError, IndexError):
            continue
    return None


def newest_with(run_id: str, span: int = 32, like: Escaped | None = None) -> set[int]:
    """Of the ``span`` most recently made pids, those that carry the run id: the one link alive
    of a chain that forks and exits (each lives milliseconds) is almost always among them,
    and reading a few /proc entries is quick enough to find it before it is gone."""
    last = _last_pid()
    if last is None:
        return set()
    needle = f"{RUN_ID_VARIABLE}={run_id}".encode()
    me = os.getpid()
    return {pid for pid in range(last, max(1, last - span), -1)
            if pid != me and _of_run(pid, needle, like)}


def kill_run(run_id: str, known: dict[int, int] | None = None, quiet_s: float = 0.3,
             limit_s: float = 10.0, like: Escaped | None = None) -> int:
    """Stop, then SIGKILL, every process of the run (tagged with its id, or named in ``known``:
    pid -> start time) with everything under it, until none has been seen for ``quiet_s`` (and
    a whole scan of /proc found none). A scan of /proc can take longer than a process that forks
    and exits lives: the newest pids are looked at between scans (``newest_with``)."""
    killed = 0
    known = dict(known or {})
    start = time.monotonic()
    last_seen = start
    last_scan = None
    while time.monotonic() - start < limit_s:
        pids = newest_with(run_id, like=like)
        scanned = last_scan is None or time.monotonic() - last_scan > 0.1
        if scanned:
            pids |= set(processes_with(run_id, like=like))
            pids |= {pid for pid, begun in known.items() if procs.alive(pid, begun)}
            last_scan = time.monotonic()
        if pids:
            killed += len(procs.kill_tree(pids, known))
            last_seen = time.monotonic()
        elif scanned and last_scan is not None and last_scan - last_seen > quiet_s:
            return killed
        time.sleep(0.002)
    return killed


class Watchdog:
    """The harness side: start it, tell it the run's processes, let it go when the run ends (or
    die: same effect)."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.proc: subprocess.Popen[bytes] | None = None
        self._said = b""

    def start(self) -> Watchdog:
        env = {k: v for k, v in os.environ.items() if k != RUN_ID_VARIABLE}
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).resolve()), self.run_id],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, start_new_session=True, close_fds=True,
        )
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def restart(self) -> None:
        """A new watchdog for the same run (the old one died: it is reaped)."""
        if self.proc is not None:
            self.proc.poll()
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass
        self.start()

    def tell(self, line: str) -> None:
        """One line to the watchdog (a trial, an orphan, a trial ended); lost if it is gone (the
        harness starts another and tells it everything again)."""
        if self.proc is None or self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass

    def said(self) -> list[str]:
        """The complete lines the watchdog wrote since the last call (never blocks)."""
        if self.proc is None or self.proc.stdout is None:
            return []
        try:
            while chunk := os.read(self.proc.stdout.fileno(), 65536):
                self._said += chunk
        except (BlockingIOError, OSError, ValueError):
            pass
        *lines, self._said = self._said.split(b"\n")
        return [line.decode(errors="replace") for line in lines]

    def stop(self, timeout: float = 5.0) -> None:
        """Close the pipe: the watchdog sweeps (nothing should be left) and exits."""
        if self.proc is None:
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kill_at_deadline(pid: int, start: int) -> bool:
    if not procs.alive(pid, start):
        return False
    procs.kill_tree([pid], {pid: start})
    return True


def _say(line: str) -> None:
    try:
        os.write(1, line.encode() + b"\n")
    except OSError:
        pass  # the harness is gone; the sweep follows


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: watchdog.py RUN_ID", file=sys.stderr)
        return 2
    # Ignore the signals a terminal or a process-group kill would send: only the pipe counts.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    trials: dict[int, tuple[int, float]] = {}  # pid -> (start time, deadline)
    named: dict[int, int] = {}  # every process named to us: pid -> start time
    escaped: set[bytes] = set()  # the command lines of the orphans named to us
    me = procs.proc(os.getpid())
    pending = b""
    while True:
        now = time.monotonic()
        waits = [deadline + DEADLINE_GRACE_S - now for _s, deadline in trials.values()]
        timeout = max(0.0, min([1.0, *waits]))
        try:
            ready, _, _ = select.select([0], [], [], timeout)
        except InterruptedError:
            continue
        if ready:
            try:
                chunk = os.read(0, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break  # the harness is gone
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                parts = line.decode(errors="replace").split()
                try:
                    if parts[0] == "trial" and len(parts) == 4:
                        trials[int(parts[1])] = (int(parts[2]), float(parts[3]))
                        named[int(parts[1])] = int(parts[2])
                    elif parts[0] == "orphan" and len(parts) == 3:
                        named[int(parts[1])] = int(parts[2])
                        try:
                            escaped.add(Path(f"/proc/{int(parts[1])}/cmdline").read_bytes())
                        except OSError:
                            pass
                    elif parts[0] in ("ended", "gone") and len(parts) == 2:
                        trials.pop(int(parts[1]), None)
                        named.pop(int(parts[1]), None)
                except (IndexError, ValueError):
                    continue
        now = time.monotonic()
        for pid, (start, deadline) in list(trials.items()):
            if now >= deadline + DEADLINE_GRACE_S:
                del trials[pid]
                if _kill_at_deadline(pid, start):
                    _say(f"killed {pid} {time.monotonic():.3f}")
    kill_run(argv[1], known=named,
             like=Escaped(frozenset(escaped), me.start if me is not None else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
