"""What a trial process runs first, where the kernel can hold the trial (isolation.py): it
joins the trial's cgroup, makes a PID namespace for it, or both, and then becomes the trial.

    python -I -S enter.py [--cgroup DIR] [--pidns] -- ARGV...
    python -I -S enter.py --probe [--cgroup DIR] [--pidns]

- ``--cgroup DIR``: this process writes itself into ``DIR/cgroup.procs`` before the trial's
  first instruction, so everything the trial forks is in that cgroup, however it forks and
  whatever its command line; the harness ends them all with ``cgroup.kill``. Without
  ``--pidns`` it then execs the trial: the trial is this process (its pid, its exit status,
  its signal).
- ``--pidns``: this process (the one the harness started) unshares a PID namespace (and a
  mount namespace, for a /proc of the trial's own) and forks its init, pid 1 there, which
  mounts that /proc and forks the trial, pid 2 (not pid 1: an init ignores the signals it has
  no handler for, so a trial that raised SIGSEGV at itself as pid 1 would not crash). When
  the trial's main process ends, init hands its wait status to this process and exits, and
  the kernel kills every other member of the namespace. This process then ends the same
  way: the same exit code, or the same signal (raised at itself, with no core file of its
  own: the trial's core and its crash record are the trial's). SIGQUIT, SIGTERM, SIGINT,
  SIGHUP, SIGUSR1 and SIGUSR2 sent to it are passed on to the trial. Init dies with this
  process (PR_SET_PDEATHSIG), and this one with the harness thread that started it, so a
  SIGKILLed harness takes the namespace with it at once. A trial in the namespace cannot
  signal anything outside it (the harness, its watchdog): their pids do not exist there.
- ``--probe``: do the same with no trial, and print what worked as one JSON object.

Standard library only, and nothing of the harness: it starts in milliseconds (``-I -S``).
"""

from __future__ import annotations

import os
import signal
import sys

# What other modules use; the rest is this module's own.
__all__ = ["main", "PR_SET_PDEATHSIG"]

TYPE_CHECKING = False  # typing is not imported: a trial starts as fast as the interpreter
if TYPE_CHECKING:
    from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_SET_PDEATHSIG = 1
FORWARDED = (signal.SIGQUIT, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1,
             signal.SIGUSR2)
EXIT_NOT_ENTERED = 125  # containment could not be set up: the trial never started

# ctypes (and nothing else slow to import) only where a namespace is made: a trial that only
# joins a cgroup starts as fast as the interpreter does.
_loaded: list[Any] = []


def _libc() -> Any:
    if not _loaded:
        import ctypes

        _loaded.append(ctypes.CDLL(None, use_errno=True))
    return _loaded[0]


def _json(fields: dict[str, bool]) -> bytes:
    """One JSON object of booleans, without importing json (and re)."""
    return ("{" + ", ".join(f'"{k}": {str(v).lower()}' for k, v in fields.items()) + "}\n").encode()


def _fail(what: str) -> None:
    import ctypes

    err = ctypes.get_errno()
    os.write(2, f"gpurepro enter: {what}: {os.strerror(err) if err else 'failed'}\n".encode())
    os._exit(EXIT_NOT_ENTERED)


def join_cgroup(directory: str) -> bool:
    try:
        fd = os.open(os.path.join(directory, "cgroup.procs"), os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
        return True
    except OSError:
        return False


def _mount(source: str, target: str, fstype: str | None, flags: int) -> bool:
    return bool(_libc().mount(source.encode(), target.encode(),
                              fstype.encode() if fstype else None, flags, None) == 0)


def unshare_pid() -> bool | None:
    """Unshare a PID namespace and, where allowed, a mount namespace made private (so the
    /proc init mounts is seen by the trial alone). None: no PID namespace; True/False: with
    or without the mount namespace."""
    if _libc().unshare(CLONE_NEWPID | CLONE_NEWNS) == 0:
        if _mount("none", "/", None, MS_REC | MS_PRIVATE):
            return True
        # A mount namespace whose mounts propagate back is no place to mount a /proc.
        return False
    return False if _libc().unshare(CLONE_NEWPID) == 0 else None


def _exec(argv: list[str]) -> None:
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"gpurepro enter: cannot start {argv[0]}: {exc}\n".encode())
        os._exit(127)


def _forward_signals() -> list[int]:
    """Pass the FORWARDED signals this process gets on to the child whose pid the caller puts
    in the returned list once it has forked (none is passed on before that)."""
    child = [0]

    def forward(signum: int, _frame: object) -> None:
        if child[0]:
            try:
                os.kill(child[0], signum)
            except OSError:
                pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    return child


def _as_init(argv: list[str] | None, status_fd: int, own_mounts: bool) -> None:
    """Pid 1 of the namespace: a /proc of its own, the trial as pid 2, every orphan reaped,
    and the trial's wait status handed out when it ends."""
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    proc_ok = own_mounts and _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if argv is None:
        os.write(status_fd, f"{os.getpid()} {int(bool(proc_ok))}".encode())
        os._exit(0)
    forwarded = _forward_signals()
    trial = forwarded[0] = os.fork()
    if trial == 0:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        os.close(status_fd)
        _exec(argv)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == trial:
            os.write(status_fd, str(status).encode())
            os._exit(0)  # and the kernel kills every other process of the namespace


def _end_as(status: int) -> None:
    """End this process as the trial's main process ended."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not end a process: said as a shell would
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else EXIT_NOT_ENTERED)


def in_namespace(argv: list[str] | None, probed: dict[str, bool]) -> None:
    own_mounts = unshare_pid()
    if own_mounts is None:
        if argv is None:
            os.write(1, _json({**probed, "pid_namespace": False}))
            os._exit(0)
        _fail("cannot make a PID namespace")
    read_end, write_end = os.pipe()
    forwarded = _forward_signals()
    init = forwarded[0] = os.fork()
    if init == 0:
        os.close(read_end)
        _as_init(argv, write_end, bool(own_mounts))
    os.close(write_end)
    said = b""
    while chunk := os.read(read_end, 256):
        said += chunk
    os.waitpid(init, 0)
    if argv is None:
        seen = said.split() or [b"0", b"0"]
        os.write(1, _json({**probed, "pid_namespace": seen[0] == b"1", "proc": seen[1] == b"1"}))
        os._exit(0)
    if not said:  # init was killed before the trial ended: so is this process
        os.kill(os.getpid(), signal.SIGKILL)
    _end_as(int(said))


def main(args: list[str]) -> None:
    argv: list[str] | None = None
    if "--" in args:
        argv = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    probe = "--probe" in args
    if not probe and not argv:
        os.write(2, b"usage: enter.py [--cgroup DIR] [--pidns] -- ARGV...\n")
        os._exit(2)
    probed: dict[str, bool] = {}
    if "--cgroup" in args:
        probed["cgroup"] = join_cgroup(args[args.index("--cgroup") + 1])
        if not probed["cgroup"] and not probe:
            _fail("cannot join the trial's cgroup")
    if probe and "--pidns" not in args:
        os.write(1, _json(probed))
        os._exit(0)
    if "--pidns" in args:
        # The harness thread that started this process is the one waiting on the trial: if
        # the harness dies, so does this process, and with it init and the namespace.
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        in_namespace(None if probe else argv, probed)
    assert argv is not None
    _exec(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
