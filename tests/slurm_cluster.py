"""A one-node Slurm cluster on localhost, for the cluster-run tests: munged, slurmctld and slurmd
in the foreground, with their configuration, keys, sockets, state and logs in one temporary
folder, and two partitions on the one node (so every per-partition path is exercised).

Stopping ends exactly the three processes started here, by their pids; a Slurm or munge that
the machine runs for itself is never touched (this cluster has its own socket and ports).

    python tests/slurm_cluster.py available

installs Debian's slurm-wlm and munge when they are missing and this is root with apt-get,
then starts and stops a cluster once: exit 0 when the Slurm tests can run here, else 1 with one
line saying why (.ci/run prints it and goes on).

Standard library only.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__:
    from . import apt
else:  # run as a script: apt.py beside this file
    import apt  # type: ignore[no-redef]

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")
PACKAGES = ("slurm-wlm", "munge")
PARTITIONS = ("alpha", "beta")
NODE = "localnode"
# Four CPUs declared whatever the machine has (config_overrides): four one-CPU array tasks run
# at once; the fake case's trials barely use a CPU.
CPUS = 4


class StartError(RuntimeError):
    """The cluster did not come up; the message says which daemon and its last log line."""


def missing() -> list[str]:
    return [n for n in (*DAEMONS, *CLIENTS) if _which(n) is None]


def _which(name: str) -> str | None:
    # The daemons live in sbin, which a non-login PATH may leave out.
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def install() -> str | None:
    """Install the packages when they are missing; None on success, else why not."""
    return apt.install(PACKAGES, missing)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalCluster:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.conf = self.folder / "slurm.conf"
        self.munge_dir: Path | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment a Slurm client (and the jobs it submits) needs to find this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self, timeout_s: float = 60) -> LocalCluster:
        f = self.folder
        for sub in ("state", "spool", "log"):
            (f / sub).mkdir(parents=True, exist_ok=True)
        # munged wants every folder above its socket searchable by all (a test's temporary
        # folder is private), so its socket, key and seed get a folder of their own.
        self.munge_dir = Path(tempfile.mkdtemp(prefix="gpurepro-munge-"))
        self.munge_dir.chmod(0o755)
        key = self.munge_dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        sock = self.munge_dir / "munge.socket"
        self._spawn("munged", [str(_which("munged")), "--foreground", f"--socket={sock}",
                               f"--key-file={key}", f"--log-file={f / 'log' / 'munged.log'}",
                               f"--pid-file={self.munge_dir / 'munged.pid'}",
                               f"--seed-file={self.munge_dir / 'munged.seed'}"])
        self._wait(lambda: sock.exists(), "munged", timeout_s)
        self.conf.write_text(self._config(sock))
        self._spawn("slurmctld", [str(_which("slurmctld")), "-D", "-c", "-f", str(self.conf)])
        self._spawn("slurmd", [str(_which("slurmd")), "-D", "-N", NODE, "-f", str(self.conf)])
        self._wait(self._idle, "slurmd", timeout_s)
        return self

    def _config(self, sock: Path) -> str:
        f = self.folder
        host = socket.gethostname().split(".")[0]
        user = getpass.getuser()
        partitions = "\n".join(
            f"PartitionName={p} Nodes={NODE} MaxTime=INFINITE State=UP"
            + (" Default=YES" if i == 0 else "") for i, p in enumerate(PARTITIONS))
        return f"""\
ClusterName=gpureprotest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={f / 'state'}
SlurmdSpoolDir={f / 'spool'}
SlurmctldPidFile={f / 'slurmctld.pid'}
SlurmdPidFile={f / 'slurmd.pid'}
SlurmctldLogFile={f / 'log' / 'slurmctld.log'}
SlurmdLogFile={f / 'log' / 'slurmd.log'}
# No cgroups, accounting or backfill: what a container allows, and quick to schedule.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
MinJobAge=600
KillWait=5
NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 CPUs={CPUS} RealMemory=1000 State=UNKNOWN
{partitions}
"""

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.folder / "log" / f"{name}.stdout", "wb") as log:
            # A session of its own: a Ctrl-C meant for the tests does not reach the daemons
            # before stop() ends them in order.
            self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True,
                                                env={**os.environ, "SLURM_CONF": str(self.conf)})

    def _idle(self) -> bool:
        done = subprocess.run(["sinfo", "--noheader", "--format=%t"], env=self.env,
                              capture_output=True, text=True, check=False)
        return done.returncode == 0 and done.stdout.split() != [] and all(
            s.startswith(("idle", "mix", "alloc")) for s in done.stdout.split())

    def _wait(self, ready: Callable[[], bool], name: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise StartError(f"{dead[0]} exited with {self.procs[dead[0]].returncode}: "
                                 f"{self.log_tail(dead[0])}")
            if ready():
                return
            time.sleep(0.2)
        raise StartError(f"{name} not ready after {timeout_s:g} s: {self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 1) -> str:
        for path in (self.folder / "log" / f"{name}.log", self.folder / "log" / f"{name}.stdout"):
            try:
                text = path.read_text(errors="replace").strip().splitlines()
            except OSError:
                continue
            if text:
                return " | ".join(text[-lines:])
        return "(no log)"

    def stop(self) -> None:
        """End the daemons started here (slurmd, slurmctld, munged), by their pids."""
        for name in reversed(DAEMONS):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.munge_dir is not None:
            shutil.rmtree(self.munge_dir, ignore_errors=True)
            self.munge_dir = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def unavailable() -> str | None:
    """Why a cluster cannot run here (None: it can), after installing what is missing."""
    why = install()
    if why:
        return why
    with tempfile.TemporaryDirectory(prefix="gpurepro-slurm-") as folder:
        cluster = LocalCluster(Path(folder))
        try:
            cluster.start(timeout_s=45)
        except (StartError, OSError) as exc:
            return f"Slurm did not start: {exc}"
        finally:
            cluster.stop()
    return None


def main(argv: list[str]) -> int:
    if argv[1:] != ["available"]:
        print("usage: python tests/slurm_cluster.py available", file=sys.stderr)
        return 2
    why = unavailable()
    if why:
        print(f"Slurm cannot run here: {why}", flush=True)
        return 1
    print("Slurm can run here: munged, slurmctld and slurmd started and stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
