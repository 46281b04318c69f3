"""Containment by the kernel, where the machine allows it: each trial in a cgroup v2 of its own
(ended with ``cgroup.kill``, whatever it forked and whatever its command line), in a PID
namespace of its own (ended with its init; from inside it nothing outside can be signalled,
the harness and its watchdog included), or both; the subreaper and the watchdog (contain.py,
watchdog.py) stay underneath either way, and are all there is where the machine gives
neither.

Which ran is decided once per harness (``detect``: a probe process tries each) and recorded in
every trial's journal record as ``containment``: ``cgroup+pid_namespace``, ``cgroup``,
``pid_namespace`` or ``subreaper``. ``GPUREPRO_CONTAINMENT`` narrows it: ``auto`` (the
default: each that the machine gives), ``cgroup`` or ``pid_namespace`` (that one alone, where
given), ``subreaper`` (neither).

A run's trial cgroups are under one folder of the harness's, named for its tag
(``gpurepro.<run id>.<token>``), beside the harness's own cgroup: the watchdog kills and removes
that folder when its harness is gone, and a resume kills and removes every folder of its run id
(``end_leftovers``). Standard library only; the cgroup helpers are imported by the watchdog by
path, like procs.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# What other modules use; the rest is this module's own.
__all__ = [
    "detect", "end_leftovers", "kill_cgroup", "leftovers_of", "Mechanism", "SUBREAPER",
    "VARIABLE", "wanted"
]

ENTER = Path(__file__).resolve().parent / "enter.py"
VARIABLE = "GPUREPRO_CONTAINMENT"
ORDER = ("cgroup", "pid_namespace", "subreaper")
PREFIX = "gpurepro."
KILL_WAIT_S = 10.0



def no_bytecode() -> list[str]:
    """``-B`` where the environment asks for no bytecode caches (PYTHONDONTWRITEBYTECODE, which
    ``-I`` would ignore): a pack's run writes none into its tree, which run.py checks."""
    return ["-B"] if os.environ.get("PYTHONDONTWRITEBYTECODE") else []


def _mountinfo() -> list[tuple[str, str]]:
    """The cgroup2 mounts: (root inside the hierarchy, mount point)."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if after and after[0] == "cgroup2" and len(fields) >= 5:
            found.append((fields[3], fields[4].replace("\\040", " ")))
    return found


def own_cgroup_dir() -> Path | None:
    """This process's cgroup v2 folder, where a cgroup2 file system shows it."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    path = next((line[3:] for line in lines if line.startswith("0::")), None)
    if path is None:
        return None
    for root, mount in _mountinfo():
        rel = os.path.relpath(path, root)
        if rel == ".":
            return Path(mount)
        if not rel.startswith(".."):
            return Path(mount) / rel
    return None


def run_folder_name(tag: str) -> str:
    """The folder of one harness's trial cgroups: ``gpurepro.<run id>.<token>``."""
    return PREFIX + tag.replace("/", ".")


def kill_cgroup(folder: Path, limit_s: float = KILL_WAIT_S) -> bool:
    """``cgroup.kill`` on a folder (every process in it and under it), wait until it is empty,
    and remove it with its sub-folders. Returns whether it is gone."""
    if not folder.is_dir():
        return True
    try:
        (folder / "cgroup.kill").write_text("1")
    except OSError:
        pass
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            if "populated 0" in (folder / "cgroup.events").read_text():
                break
        except OSError:
            break
        time.sleep(0.002)
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        try:
            sub.rmdir()
        except OSError:
            pass
    try:
        folder.rmdir()
    except OSError:
        return not folder.exists()
    return True


def leftovers_of(run_id: str, beside: Path | None = None) -> list[Path]:
    """The trial cgroup folders of any harness of the run still here."""
    base = beside if beside is not None else own_cgroup_dir()
    if base is None or not base.is_dir():
        return []
    try:
        mine = run_folder_name(run_id) + "."
        return [p for p in base.iterdir() if p.is_dir() and p.name.startswith(mine)]
    except OSError:
        return []


def end_leftovers(run_id: str) -> int:
    """Kill and remove the run's trial cgroups that earlier harnesses left (a harness and its
    watchdog both killed). Returns how many processes were in them."""
    count = 0
    for folder in leftovers_of(run_id):
        for procs_file in folder.rglob("cgroup.procs"):
            try:
                count += len(procs_file.read_text().split())
            except OSError:
                pass
        kill_cgroup(folder)
    return count


@dataclass(frozen=True)
class Mechanism:
    """What holds a harness's trials: its cgroup folder (None: no cgroup), whether each trial
    gets a PID namespace, and whether that namespace has a /proc of its own."""

    cgroups: Path | None = None
    pid_namespace: bool = False
    own_proc: bool = False

    @property
    def name(self) -> str:
        parts = (["cgroup"] if self.cgroups else []) + (["pid_namespace"] if self.pid_namespace else [])
        return "+".join(parts) or "subreaper"

    @property
    def wraps(self) -> bool:
        return self.cgroups is not None or self.pid_namespace

    def prefix(self, cgroup: Path | None) -> list[str]:
        """The trial's argv goes after this (nothing where no mechanism wraps it)."""
        if not self.wraps:
            return []
        out = [sys.executable, "-I", *no_bytecode(), "-S", str(ENTER)]
        if cgroup is not None:
            out += ["--cgroup", str(cgroup)]
        if self.pid_namespace:
            out.append("--pidns")
        return out + ["--"]


SUBREAPER = Mechanism()


def wanted() -> str:
    value = os.environ.get(VARIABLE, "auto").strip() or "auto"
    if value != "auto" and value not in ORDER:
        raise ValueError(f"{VARIABLE}={value}: expected auto, {', '.join(ORDER)}")
    return value


def _probe(args: Sequence[str]) -> dict[str, bool]:
    try:
        done = subprocess.run([sys.executable, "-I", *no_bytecode(), "-S", str(ENTER), "--probe",
                               *args], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        found: dict[str, bool] = json.loads(done.stdout or b"{}")
        return found
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def detect(tag: str) -> tuple[Mechanism, list[str]]:
    """What the kernel gives this harness, within ``GPUREPRO_CONTAINMENT``; the folder of its
    trial cgroups is made here. Returns it and the reasons for what it does not give."""
    if not sys.platform.startswith("linux"):
        return SUBREAPER, ["not Linux"]
    allowed = {"auto": ("cgroup", "pid_namespace"), "cgroup": ("cgroup",),
               "pid_namespace": ("pid_namespace",), "subreaper": ()}[wanted()]
    why: list[str] = []
    folder: Path | None = None
    if "cgroup" in allowed:
        base = own_cgroup_dir()
        if base is None:
            why.append("no cgroup v2 file system mounted")
        else:
            folder = base / run_folder_name(tag)
            try:
                folder.mkdir()
            except OSError as exc:
                why.append(f"cgroup v2 at {base} not writable here ({exc.strerror or exc})")
                folder = None
            if folder is not None and not (folder / "cgroup.kill").exists():
                why.append("the kernel has no cgroup.kill (Linux before 5.14)")
                kill_cgroup(folder)
                folder = None
    probe_args: list[str] = []
    if folder is not None:
        probe = folder / "probe"
        try:
            probe.mkdir()
            probe_args = ["--cgroup", str(probe)]
        except OSError:
            pass
    if "pid_namespace" in allowed:
        probe_args.append("--pidns")
    seen = _probe(probe_args) if probe_args else {}
    if folder is not None:
        kill_cgroup(folder / "probe")
        if not seen.get("cgroup"):
            why.append("a process cannot be moved into a cgroup here")
            kill_cgroup(folder)
            folder = None
    pidns = bool(seen.get("pid_namespace"))
    if "pid_namespace" in allowed and not pidns:
        why.append("no PID namespace may be made here (unshare: not permitted)")
    return Mechanism(folder, pidns, bool(seen.get("proc"))), why
