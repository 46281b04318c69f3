"""Watchdog: no trial outlives the harness, however the harness ends, and none outruns its
wall-clock limit while the harness is not looking.

Every process a harness starts carries ``GPUREPRO_RUN_ID=<tag>`` in its environment (trial
drivers and whatever they fork: the variable is inherited). The tag is the run id, ``/``, and a
token of that harness process's own (``harness_tag``): a run started and then resumed twice has
three harnesses, one after the other, each with its own tag. The harness starts this watchdog
once, in a session of its own so a Ctrl-C, a Ctrl-Z or a signal to the harness's process group
does not reach it, and holds the write end of its stdin. On that pipe the harness also names
every trial it starts (pid, start time, wall-clock deadline) and every orphan its containment
finds (contain.py: processes that left the trial's session, some with an empty environment).

- When the pipe closes (the harness exited, was killed with SIGKILL, or the OOM killer took it)
  the watchdog first ends the harness's trial cgroups it was named (``cgroup PATH``, where the
  kernel gives them: isolation.py), with ``cgroup.kill``; then it stops and kills every process
  carrying its harness's tag, every process it was
  named, and every untagged process with the command line of an orphan it was named, with
  whatever they forked (procs.kill_tree: stopped first, so a process that keeps forking cannot
  stay ahead), then exits.
- When a trial named to it is still running ``DEADLINE_GRACE_S`` past its deadline (the harness
  kills at the deadline itself, unless it is stopped or starved), the watchdog kills it and
  writes ``killed PID T`` on its stdout (T: the monotonic time of the kill), which the harness
  reads to record the trial as killed at its limit.

Why an environment tag as well as pids: the harness can die between starting a trial and
telling anyone about it; the tag is in place from the trial's first instruction.
PR_SET_PDEATHSIG alone would not do either: it reaches only the direct child.

Why a tag per harness, not per run: the watchdog of a killed harness sweeps for a while after
its harness is gone, and a resume of the run may start its trials meanwhile; with the run id
alone as the tag it would kill them. No watchdog matches another harness's tag, and a match
by command line (for escapees that cleared their environment) never takes a process that
carries any tag: a trial of another run, or of the same run's resume, with the same command
line is not an escapee. A resume, before its first trial, waits for the earlier harnesses'
watchdogs to finish and then kills what still carries any of the run's tags
(``end_earlier_harnesses``).

Standard library only; run as a script (``python -I watchdog.py TAG``) so it starts in a
few tens of milliseconds and imports nothing of the harness but procs.py.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# What other modules use; the rest is this module's own.
__all__ = [
    "DEADLINE_GRACE_S", "end_earlier_harnesses", "Escaped", "escapee_cmdline", "harness_tag",
    "main", "new_token", "RUN_ID_VARIABLE", "SWEEP_GRACE_S", "SWEEP_LIMIT_S", "Tag", "Watchdog",
    "watchdogs_of"
]

RUN_ID_VARIABLE = "GPUREPRO_RUN_ID"
_TAGGED = f"{RUN_ID_VARIABLE}=".encode()
HARNESS_SEPARATOR = "/"  # between the run id and a harness's token in a tag
DEADLINE_GRACE_S = 0.5
SWEEP_LIMIT_S = 10.0  # a sweep (kill_run) gives up after this long
# How long past its sweep's limit a resume waits for an earlier harness's watchdog to exit (it
# may have been starved) before it kills it.
SWEEP_GRACE_S = 5.0

if __package__:
    from . import isolation, procs
else:  # run as a script: procs.py and isolation.py beside this file, imported by their path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import isolation  # type: ignore[no-redef]
    import procs  # type: ignore[no-redef]


def new_token() -> str:
    """A harness process's own token (each start and each resume of a run makes one)."""
    return os.urandom(6).hex()


def harness_tag(run_id: str, token: str) -> str:
    """What one harness of a run puts in its trials' environment: ``<run id>/<token>``."""
    return f"{run_id}{HARNESS_SEPARATOR}{token}"


@dataclass(frozen=True)
class Tag:
    """Which ``GPUREPRO_RUN_ID`` values a sweep takes for its own: one harness's tag exactly (a
    watchdog's), or with ``every_harness`` any tag of the run ``value`` names (a resume's,
    before its first trial: every earlier harness of the run; the run id alone is the tag
    harnesses wrote before tags were per harness)."""

    value: str
    every_harness: bool = False

    def names(self, tag: str) -> bool:
        if tag == self.value:
            return True
        return self.every_harness and tag.startswith(self.value + HARNESS_SEPARATOR)

    def carried_by(self, environ: list[bytes]) -> bool:
        return any(e.startswith(_TAGGED) and self.names(e[len(_TAGGED):].decode(errors="replace"))
                   for e in environ)


@dataclass(frozen=True)
class Escaped:
    """What marks a process of the run that cleared its environment: the command line of one
    the harness found escaped (an orphan out of its trial's session), started since ``since``
    (clock ticks since boot: the watchdog's own start)."""

    cmdlines: frozenset[bytes] = frozenset()
    since: int = 0


def _of_run(pid: int, tag: Tag, like: Escaped | None, root: Path = Path("/proc")) -> bool:
    entry = root / str(pid)
    p = procs.proc(pid, root)
    if p is None or p.state == "Z":
        return False
    try:
        environ = (entry / "environ").read_bytes().split(b"\0")
        if tag.carried_by(environ):
            return True
        if any(e.startswith(_TAGGED) for e in environ):
            return False  # another harness's process: never taken for an escapee of ours
        if not (like and like.cmdlines and p.start >= like.since):
            return False
        cmdline = (entry / "cmdline").read_bytes()
        # An empty command line names no process: a process in the middle of an exec (a trial
        # of another run starting, its environment unreadable for that instant too) and one
        # exiting both read as empty.
        return bool(cmdline) and cmdline in like.cmdlines
    except OSError:
        return False  # gone meanwhile, or not ours to read


def escapee_cmdline(pid: int, root: Path = Path("/proc")) -> bytes | None:
    """The command line an orphan named to the watchdog is known by; None where it has none to
    read (gone, or exiting: a zombie's reads as empty, and an empty one would match any process
    caught in the middle of an exec, another run's trials among them)."""
    try:
        cmdline = (root / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    return cmdline or None


def processes_with(tag: Tag, proc: Path = Path("/proc"), like: Escaped | None = None) -> list[int]:
    """Pids (other than ours) whose initial environment carries a ``GPUREPRO_RUN_ID`` that
    ``tag`` names (or, untagged, that look like a process the run had escape, ``like``). Newest
    first: a process that forks and exits lives milliseconds, and the one alive now has one of
    the highest pids."""
    me = os.getpid()
    return [pid for pid in sorted((int(e.name) for e in proc.glob("[0-9]*")), reverse=True)
            if pid != me and _of_run(pid, tag, like, proc)]


def _last_pid() -> int | None:
    for path, field in (("/proc/sys/kernel/ns_last_pid", 0), ("/proc/loadavg", 4)):
        try:
            return int(Path(path).read_text().split()[field])
        except (OSError, ValueError, IndexError):
            continue
    return None


def newest_with(tag: Tag, span: int = 32, like: Escaped | None = None) -> set[int]:
    """Of the ``span`` most recently made pids, those that carry the tag: the one link alive
    of a chain that forks and exits (each lives milliseconds) is almost always among them,
    and reading a few /proc entries is quick enough to find it before it is gone."""
    last = _last_pid()
    if last is None:
        return set()
    me = os.getpid()
    return {pid for pid in range(last, max(1, last - span), -1)
            if pid != me and _of_run(pid, tag, like)}


def kill_run(tag: Tag, known: dict[int, int] | None = None, quiet_s: float = 0.3,
             limit_s: float = SWEEP_LIMIT_S, like: Escaped | None = None) -> int:
    """Stop, then SIGKILL, every process of the run (carrying a tag ``tag`` names, or named in
    ``known``: pid -> start time) with everything under it, until none has been seen for
    ``quiet_s`` (and a whole scan of /proc found none). A scan of /proc can take longer than a
    process that forks and exits lives: the newest pids are looked at between scans
    (``newest_with``)."""
    killed = 0
    known = dict(known or {})
    start = time.monotonic()
    last_seen = start
    last_scan = None
    while time.monotonic() - start < limit_s:
        pids = newest_with(tag, like=like)
        scanned = last_scan is None or time.monotonic() - last_scan > 0.1
        if scanned:
            pids |= set(processes_with(tag, like=like))
            pids |= {pid for pid, begun in known.items() if procs.alive(pid, begun)}
            last_scan = time.monotonic()
        if pids:
            killed += len(procs.kill_tree(pids, known))
            last_seen = time.monotonic()
        elif scanned and last_scan is not None and last_scan - last_seen > quiet_s:
            return killed
        time.sleep(0.002)
    return killed


def watchdogs_of(run_id: str, root: Path = Path("/proc")) -> dict[int, int]:
    """The live watchdogs of any harness of the run (pid -> start time), by their command
    line, ``python -I .../watchdog.py TAG``."""
    tag = Tag(run_id, every_harness=True)
    found: dict[int, int] = {}
    for entry in root.glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if len(argv) < 2 or os.path.basename(argv[-2]) != b"watchdog.py":
            continue
        if not tag.names(argv[-1].decode(errors="replace")):
            continue
        p = procs.proc(int(entry.name), root)
        if p is not None and p.state not in ("Z", "X") and p.pid != os.getpid():
            found[p.pid] = p.start
    return found


def end_earlier_harnesses(run_id: str, say: Callable[[str], None] | None = None,
                          wait_s: float = SWEEP_LIMIT_S + SWEEP_GRACE_S) -> int:
    """Before a resumed run's first trial: nothing of the run's earlier harnesses may act beside
    it. Their watchdogs (each sweeping once its harness is gone) are waited for, each up to
    ``wait_s`` (its sweep's limit and a grace), and one still there then is killed; then every
    process that still carries a tag of the run is killed. Returns how many processes that was.
    The caller holds the run's journal: every earlier harness of the run is gone."""
    say = say or (lambda _line: None)
    for pid, start in watchdogs_of(run_id).items():
        if procs.wait_gone(pid, start, wait_s):
            continue
        say(f"the interrupted run's watchdog (pid {pid}) had not finished its sweep within "
            f"{wait_s:g} s; killed it")
        procs.kill_tree([pid], {pid: start})
    # The trial cgroups of a harness whose watchdog was killed too (or stopped): the kernel's
    # kill, whatever is in them.
    in_cgroups = isolation.end_leftovers(run_id)
    return in_cgroups + kill_run(Tag(run_id, every_harness=True))


class Watchdog:
    """The harness side: start it, tell it the run's processes, let it go when the run ends (or
    die: same effect). ``tag``: this harness's tag (``harness_tag``), the one its trials carry."""

    def __init__(self, tag: str):
        self.tag = tag
        self.proc: subprocess.Popen[bytes] | None = None
        self.pidfd: int | None = None  # readable once the watchdog has exited
        self._said = b""

    def start(self, told: Sequence[str] = ()) -> Watchdog:
        """Start the watchdog; ``told``: lines it is to know before anyone can see it (a
        replacement's trials and orphans), written before its program has even started."""
        env = {k: v for k, v in os.environ.items() if k != RUN_ID_VARIABLE}
        self.proc = subprocess.Popen(
            [sys.executable, "-I", *(["-B"] if os.environ.get("PYTHONDONTWRITEBYTECODE") else []),
             str(Path(__file__).resolve()), self.tag],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, start_new_session=True, close_fds=True,
        )
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._close_pidfd()
        try:
            self.pidfd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            self.pidfd = None  # no pidfds here: the harness's poll sees its end instead
        for line in told:
            self.tell(line)
        self._until_exec_done()
        return self

    def _until_exec_done(self, limit_s: float = 10.0) -> None:
        """Popen returns in the middle of the exec, while the new program's command line still
        reads as empty; a resume finds earlier watchdogs by that command line
        (``watchdogs_of``), so this one is not started until it shows."""
        assert self.proc is not None
        cmdline = Path(f"/proc/{self.proc.pid}/cmdline")
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if cmdline.read_bytes():
                    return
            except OSError:
                return  # no /proc here: nothing to wait for
            time.sleep(0.001)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def healthy(self) -> bool:
        """Alive and not stopped: a watchdog stopped (SIGSTOP, by a trial or anyone) would never
        sweep, so it is killed here and counts as gone."""
        if not self.alive():
            return False
        assert self.proc is not None
        p = procs.proc(self.proc.pid)
        if p is not None and p.state in ("T", "t"):
            self.proc.kill()
            self.proc.wait()
            return False
        return True

    def _close_pidfd(self) -> None:
        if self.pidfd is not None:
            try:
                os.close(self.pidfd)
            except OSError:
                pass
            self.pidfd = None

    def restart(self, told: Sequence[str] = ()) -> None:
        """A new watchdog for the same run (the old one died: it is reaped), told ``told``
        first."""
        if self.proc is not None:
            self.proc.poll()
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass
        self.start(told)

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
        self._close_pidfd()
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
        print("usage: watchdog.py TAG", file=sys.stderr)
        return 2
    # Ignore the signals a terminal or a process-group kill would send: only the pipe counts.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    trials: dict[int, tuple[int, float]] = {}  # pid -> (start time, deadline)
    named: dict[int, int] = {}  # every process named to us: pid -> start time
    escaped: set[bytes] = set()  # the command lines of the orphans named to us
    cgroups: set[str] = set()  # the harness's trial cgroup folders
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
                        if (cmdline := escapee_cmdline(int(parts[1]))) is not None:
                            escaped.add(cmdline)
                    elif parts[0] == "cgroup" and len(parts) >= 2:
                        cgroups.add(line.decode(errors="replace").split(" ", 1)[1])
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
    for folder in cgroups:  # first: the kernel ends everything in them at once
        isolation.kill_cgroup(Path(folder))
    kill_run(Tag(argv[1]), known=named,
             like=Escaped(frozenset(escaped), me.start if me is not None else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
