"""Processes as /proc shows them, and how to stop and kill a whole tree of them: what the
harness's containment (contain.py) and its watchdog (watchdog.py, run as a script, which
imports this file by path) both use. Linux; standard library only, no package imports."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# What other modules use; the rest is this module's own.
__all__ = [
    "alive", "become_subreaper", "children", "kill_tree", "PR_SET_CHILD_SUBREAPER", "proc",
    "signal_quietly", "wait_gone"
]

PR_SET_CHILD_SUBREAPER = 36
FREEZE_ROUNDS = 200  # walks of a stopped tree before it is killed as it stands


def become_subreaper(on: bool = True) -> bool:
    """Make this process a child subreaper (or stop being one); False where it cannot be."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: int  # clock ticks since boot: with the pid, names one process (pids are reused)


def proc(pid: int, root: Path = Path("/proc")) -> Proc | None:
    """A process's parent, group, session, state and start time; None when it is gone."""
    try:
        text = (root / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0], int(fields[19]))
    except (IndexError, ValueError):
        return None


def children(pid: int, root: Path = Path("/proc")) -> set[int]:
    """The pids of a process's children (every thread's); scans /proc where the kernel has no
    children files."""
    found: set[int] = set()
    tasks = list((root / str(pid) / "task").glob("*/children"))
    if tasks:
        for f in tasks:
            try:
                found.update(int(x) for x in f.read_text().split())
            except (OSError, ValueError):
                pass
        return found
    for entry in root.glob("[0-9]*"):
        p = proc(int(entry.name), root)
        if p is not None and p.ppid == pid:
            found.add(p.pid)
    return found


def alive(pid: int, start: int | None = None) -> bool:
    """The process is there (not a zombie) and, with ``start``, still the same one."""
    p = proc(pid)
    return p is not None and p.state not in ("Z", "X") and (start is None or p.start == start)


def wait_gone(pid: int, start: int, timeout_s: float) -> bool:
    """Wait until the process ``pid`` that started at ``start`` has ended (it need not be our
    child): on a pidfd, which becomes readable when it exits, where the kernel has them; by
    looking every 10 ms where it has not. Returns whether it ended within ``timeout_s``."""
    try:
        fd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfds here (Linux before 5.3), or already gone
        fd = None
    try:
        if not alive(pid, start):  # looked at after the pidfd opened: it names that process
            return True
        if fd is not None:
            select.select([fd], [], [], timeout_s)
            return not alive(pid, start)
        deadline = time.monotonic() + timeout_s
        while alive(pid, start):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True
    finally:
        if fd is not None:
            os.close(fd)


def signal_quietly(pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid``; a process already gone, or not ours, is left as it is."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_tree(roots: Iterable[int], known: dict[int, int] | None = None) -> dict[int, int]:
    """SIGSTOP every process of the trees under ``roots`` (and the groups they lead), walking
    children until a walk finds nothing new: a stopped process cannot fork, so the tree stands
    still. ``known`` maps pid -> start time to check a root is still that process (pids are
    reused). Returns every process stopped, pid -> start time."""
    me, my_group = os.getpid(), os.getpgid(0)
    stopped: dict[int, int] = {}
    frontier = set(roots)
    for _ in range(FREEZE_ROUNDS):
        new = set()
        for pid in frontier:
            if pid in stopped or pid == me:
                continue
            p = proc(pid)
            if p is None or p.state in ("Z", "X"):
                continue
            if known and pid in known and known[pid] != p.start:
                continue  # another process now has that pid
            signal_quietly(pid, signal.SIGSTOP)
            if p.pgid == pid and p.pgid != my_group:
                try:
                    os.killpg(p.pgid, signal.SIGSTOP)
                except (ProcessLookupError, PermissionError):
                    pass
            stopped[pid] = p.start
            new |= children(pid)
        frontier = new - set(stopped)
        if not frontier:
            break
    return stopped


def kill_tree(roots: Iterable[int], known: dict[int, int] | None = None) -> dict[int, int]:
    """Stop the trees under ``roots`` (``stop_tree``), then SIGKILL every process in them and
    the groups they lead. Returns what was killed, pid -> start time."""
    stopped = stop_tree(roots, known)
    my_group = os.getpgid(0)
    for pid, start in stopped.items():
        p = proc(pid)
        if p is None or p.start != start:
            continue
        if p.pgid == pid and p.pgid != my_group:
            try:
                os.killpg(p.pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        signal_quietly(pid, signal.SIGKILL)
    return stopped
