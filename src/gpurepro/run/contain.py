"""Containment: nothing of a trial outlives that trial, whatever the trial does to escape.

A trial leads its own session and process group, and carries the run's id in its environment
(watchdog.py). A driver can leave both: fork, ``setsid()`` and exec with an empty environment,
or fork and exit over and over. What it cannot leave is the process tree: while a run executes,
the harness is a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every process a trial
orphans is reparented to the harness instead of to init. The harness looks for such orphans
(its children that it did not start) every ``POLL_S``, attributes each to the trial whose
session it is in (or, for one that made a session of its own, to the trials running when it
came back), and when that trial ends stops the whole tree (SIGSTOP, so nothing in it forks
any more, walking the children until no new process appears), then kills it (SIGKILL) and
reaps what were its own children. A process orphaned while no trial runs is killed at once.

The harness also tells its watchdog every trial (pid, start time, wall-clock deadline) and every
orphan it finds, so that if the harness is killed the watchdog kills them too (by pid and start
time: those that cleared their environment carry no run id), and if the harness is stopped
(SIGSTOP, Ctrl-Z) the watchdog kills a trial at its deadline and says so. The harness checks
its watchdog is alive on every poll and starts another if it is not.

Where the kernel can hold the trials (isolation.py: a cgroup v2 of each trial's own, a PID
namespace of each trial's own, or both), each trial starts inside them (enter.py) and its end
is the kernel's: ``cgroup.kill`` of its cgroup, the end of its namespace's init. What is above
stays underneath as the fallback. The watchdog is watched on a pidfd, so its death is seen at
once, and looked at every poll, so a stopped one is replaced too.

Linux only (``/proc``, ``prctl``); elsewhere the containment is the process group and the
watchdog's sweep by run id, as before. Standard library only.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from . import isolation
from .procs import become_subreaper, children, kill_tree, proc
from .stops import start_thread
from .watchdog import RUN_ID_VARIABLE

POLL_S = 0.05


@dataclass
class _Trial:
    pid: int
    start: int
    deadline: float  # time.monotonic()
    orphans: dict[int, int] = field(default_factory=dict)  # pid -> start time
    cgroup: Path | None = None  # its own cgroup, where it has one


class Containment:
    """One run's containment: the harness a subreaper, the orphans it gets back swept with the
    trials they came from, the watchdog kept informed and alive (module docstring)."""

    def __init__(self, watchdog: Any | None = None, say: Callable[[str], None] | None = None):
        self.watchdog = watchdog
        self.say = say or (lambda _msg: None)
        self.subreaper = False
        self._lock = threading.RLock()
        self._trials: dict[int, _Trial] = {}
        self._orphans: dict[int, tuple[int, set[int]]] = {}  # pid -> (start, trials it may be of)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._session = os.getsid(0)
        self.killed_at_deadline: dict[int, float] = {}  # pid -> when the watchdog killed it
        # The poll thread and each trial's thread both drain the watchdog's lines: one may have
        # read "killed PID T" and not yet stored it when the other looks the trial up (both wake
        # at once when a stopped harness resumes), so draining and looking up take this lock.
        self._said_lock = threading.Lock()
        self.mechanism = isolation.SUBREAPER
        self._launched = 0

    # -- the run

    def start(self) -> Containment:
        self.subreaper = become_subreaper()
        tag = getattr(self.watchdog, "tag", None)
        if tag and sys.platform.startswith("linux"):
            try:
                self.mechanism, why = isolation.detect(tag)
            except ValueError as exc:  # GPUREPRO_CONTAINMENT misspelled

                if self.subreaper:
                    become_subreaper(False)
                raise UsageError(str(exc)) from None
            # Asked for by name and not given: said (each trial's record says what held it).
            if why and isolation.wanted() not in ("auto", "subreaper"):
                self.say(f"gpurepro: containment {self.mechanism.name} ({'; '.join(why)})")
            self._tell_mechanism()
        self._thread = threading.Thread(target=self._loop, name="containment", daemon=True)
        start_thread(self._thread)
        return self

    def stop(self) -> None:
        """The run is over: every orphan still here is killed, and the harness stops being a
        subreaper (what it already holds it reaps first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            self._scan()
            self._kill_orphans(set(self._orphans))
            if self.mechanism.cgroups is not None:
                isolation.kill_cgroup(self.mechanism.cgroups)
        if self.subreaper:
            become_subreaper(False)

    def _tell_mechanism(self) -> None:
        if self.mechanism.cgroups is not None:
            self._tell(f"cgroup {self.mechanism.cgroups}")

    # -- trials (called by run/trial.py)

    @contextmanager
    def launching(self, timeout_s: float) -> Iterator[Launch]:
        """Around the start of a trial process: the scan waits, so the new child is never taken
        for an orphan; ``launch.argv(argv)`` is what to start (the trial inside what the kernel
        gives), ``launch.register(pid)`` inside the block makes it a trial."""
        with self._lock:
            cgroup = None
            if self.mechanism.cgroups is not None:
                self._launched += 1
                cgroup = self.mechanism.cgroups / f"trial-{self._launched}"
                try:
                    cgroup.mkdir()
                except OSError as exc:
                    raise OSError(f"cannot make the trial's cgroup {cgroup}: "
                                  f"{exc.strerror or exc}") from exc

            def register(pid: int) -> None:
                p = proc(pid)
                start = p.start if p is not None else 0
                deadline = time.monotonic() + timeout_s
                self._trials[pid] = _Trial(pid, start, deadline, cgroup=cgroup)
                self._tell(f"trial {pid} {start} {deadline:.3f}")
            try:
                yield Launch(self.mechanism.prefix(cgroup), register, self.mechanism.name)
            except BaseException:
                if cgroup is not None:
                    isolation.kill_cgroup(cgroup)
                raise

    def trial_ended(self, pid: int) -> None:
        """The trial's leader is gone: what it left (its group, orphans in its session or that
        came back while it ran) is stopped and killed before the next trial can start."""
        with self._lock:
            trial = self._trials.get(pid)
            if trial is None:
                return
            if trial.cgroup is not None:
                # Every process of the trial, however it forked: the kernel's kill.
                isolation.kill_cgroup(trial.cgroup)
            deadline = time.monotonic() + 2.0
            while True:
                self._scan()
                mine = {o for o, (_s, owners) in self._orphans.items() if pid in owners}
                if mine:
                    self._kill_orphans(mine)
                group = _group_alive(pid)
                if (not group and not mine) or time.monotonic() > deadline:
                    break
                if group:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                time.sleep(0.005)
            del self._trials[pid]
            self._tell(f"ended {pid}")

    def killed_at_limit(self, pid: int) -> float | None:
        """When the watchdog killed this trial at its wall-clock deadline (monotonic), if it did."""
        with self._said_lock:
            self._drain_watchdog()
            return self.killed_at_deadline.get(pid)

    # -- the poll

    def _loop(self) -> None:
        while not self._stop.is_set():
            # A watchdog that dies is seen at once (its pidfd becomes readable), not at the
            # next poll; a stopped one at the next poll.
            fd = getattr(self.watchdog, "pidfd", None)
            try:
                select.select([fd] if fd is not None else [], [], [], POLL_S)
            except (OSError, ValueError):
                time.sleep(POLL_S)
            if self._stop.is_set():
                break
            with self._lock:
                self._check_watchdog()
                self._scan()
                loose = {o for o, (_s, owners) in self._orphans.items() if not owners}
                if loose:
                    self._kill_orphans(loose)
            self._read_watchdog()

    def _scan(self) -> None:
        """Children of the harness that it did not start: orphans of some trial."""
        me = os.getpid()
        ours = set(self._trials) | set(self._orphans) | self._watchdog_pids()
        for pid in children(me) - ours:
            p = proc(pid)
            if p is None:
                continue
            if p.state in ("Z", "X"):  # an orphan that died here: collect it
                if p.sid != self._session or _tagged(pid):
                    _reap(pid)
                continue
            if p.sid == self._session and not _tagged(pid):
                continue  # a process the harness itself started (not a trial's)
            if p.sid in self._trials:
                owners = {p.sid}
            else:
                owners = set(self._trials)
            self._orphans[pid] = (p.start, owners)
            self._tell(f"orphan {pid} {p.start}")

    def _kill_orphans(self, pids: set[int]) -> None:
        known = {pid: self._orphans[pid][0] for pid in pids if pid in self._orphans}
        kill_tree(known, known)
        for pid in pids:
            self._orphans.pop(pid, None)
            _reap(pid)
            self._tell(f"gone {pid}")
        for pid, (start, _owners) in list(self._orphans.items()):
            p = proc(pid)
            if p is None or p.start != start or p.state in ("Z", "X"):
                self._orphans.pop(pid)  # gone on its own (a link of a chain that exits)
                _reap(pid)
                self._tell(f"gone {pid}")
        # Their children were reparented here as they died: the next scan has them, with the
        # same owners (a process in the trial's session) or the running trials.

    # -- the watchdog

    def _watchdog_pids(self) -> set[int]:
        proc_ = getattr(self.watchdog, "proc", None)
        return {proc_.pid} if proc_ is not None else set()

    def _tell(self, line: str) -> None:
        if self.watchdog is not None:
            self.watchdog.tell(line)

    def _check_watchdog(self) -> None:
        """The watchdog is the backstop for a killed harness: one that died is replaced, and
        told every trial and orphan there is."""
        if self.watchdog is None or self.watchdog.healthy():
            return
        # Said before the new one starts: a harness killed the instant it appears has said it.
        self.say(f"gpurepro: the watchdog (pid {self.watchdog.pid}) is gone; starting another")
        # Told before it can be seen: a harness killed the instant the new one appears leaves
        # it knowing every trial and orphan there is.
        told = [f"trial {t.pid} {t.start} {t.deadline:.3f}" for t in self._trials.values()]
        told += [f"orphan {pid} {start}" for pid, (start, _o) in self._orphans.items()]
        if self.mechanism.cgroups is not None:
            told.insert(0, f"cgroup {self.mechanism.cgroups}")
        self.watchdog.restart(told)

    def _read_watchdog(self) -> None:
        with self._said_lock:
            self._drain_watchdog()

    def _drain_watchdog(self) -> None:
        if self.watchdog is None:
            return
        for line in self.watchdog.said():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "killed":
                try:
                    self.killed_at_deadline[int(parts[1])] = float(parts[2])
                except ValueError:
                    pass


def _group_alive(pgid: int) -> bool:
    """Whether any live (not zombie) process is in the group: zombies of the harness's own are
    reaped by the scan."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for entry in Path("/proc").glob("[0-9]*"):
        p = proc(int(entry.name))
        if p is not None and p.pgid == pgid and p.state not in ("Z", "X"):
            return True
    return False


def _tagged(pid: int) -> bool:
    try:
        return f"{RUN_ID_VARIABLE}=".encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def _reap(pid: int) -> None:
    """Collect an orphan that is the harness's child now (never a trial's Popen)."""
    for _ in range(200):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return
        if done:
            return
        time.sleep(0.005)


# The run's containment while one executes (run/trial.py reaches it through these).
_active: Containment | None = None


@contextmanager
def contained(watchdog: Any | None = None, say: Callable[[str], None] | None = None
              ) -> Iterator[Containment]:
    """The containment of one run, active for the trials started inside the block."""
    global _active
    c = Containment(watchdog, say).start()
    previous, _active = _active, c
    try:
        yield c
    finally:
        _active = previous
        c.stop()


@dataclass(frozen=True)
class Launch:
    """How run_trial starts one trial: ``prefix`` before its argv (enter.py, where the kernel
    holds it), ``register`` with its pid, and ``mechanism``, what holds it (None: no run)."""

    prefix: list[str]
    register: Callable[[int], None]
    mechanism: str | None

    def argv(self, argv: list[str]) -> list[str]:
        return [*self.prefix, *argv]


@contextmanager
def launching(timeout_s: float) -> Iterator[Launch]:
    """For run_trial: around the start of a trial process (a no-op with no active run)."""
    if _active is None:
        yield Launch([], lambda _pid: None, None)
        return
    with _active.launching(timeout_s) as register:
        yield register


def trial_ended(pid: int) -> None:
    if _active is not None:
        _active.trial_ended(pid)


def killed_at_limit(pid: int) -> float | None:
    return _active.killed_at_limit(pid) if _active is not None else None
