"""Watchdog: no trial outlives the harness, however the harness ends.

Every process a run starts carries ``GPUREPRO_RUN_ID=<id>`` in its environment (trial drivers
and whatever they fork: the variable is inherited). The harness starts this watchdog once per
run, in a session of its own so a Ctrl-C or a signal to the harness's process group does not
reach it, and holds the write end of its stdin. When that pipe closes (the harness exited, was
killed with SIGKILL, or the machine's OOM killer took it) the watchdog kills every process
carrying the run id, and their process groups, then exits.

Why an environment tag rather than a list of process groups: the harness can die between
starting a trial and telling anyone about it; the tag is in place from the trial's first
instruction. PR_SET_PDEATHSIG alone would not do either: it reaches only the direct child,
not what that child forked.

Standard library only; run as a script (``python -I watchdog.py RUN_ID``) so it starts in a
few tens of milliseconds and imports nothing of the harness.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RUN_ID_VARIABLE = "GPUREPRO_RUN_ID"


def processes_with(run_id: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids (other than ours) whose initial environment carries ``GPUREPRO_RUN_ID=run_id``."""
    needle = f"{RUN_ID_VARIABLE}={run_id}".encode()
    me = os.getpid()
    found = []
    for entry in proc.glob("[0-9]*"):
        try:
            pid = int(entry.name)
            if pid == me:
                continue
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(pid)
    return found


def kill_run(run_id: str, rounds: int = 20) -> int:
    """SIGKILL every process (and its group) of the run; repeat until none is left."""
    killed = 0
    for _ in range(rounds):
        pids = processes_with(run_id)
        if not pids:
            return killed
        for pid in pids:
            try:
                pgid = os.getpgid(pid)
                if pgid != os.getpgid(0):
                    os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    return killed


class Watchdog:
    """The harness side: start it, let it go when the run ends (or die: same effect)."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Watchdog:
        env = {k: v for k, v in os.environ.items() if k != RUN_ID_VARIABLE}
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).resolve()), self.run_id],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env, start_new_session=True, close_fds=True,
        )
        return self

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
        self.proc = None

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: watchdog.py RUN_ID", file=sys.stderr)
        return 2
    # Ignore the signals a terminal or a process-group kill would send: only the pipe counts.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    kill_run(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
