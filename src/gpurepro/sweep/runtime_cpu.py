"""The CPU stage of a runtime axis (``RuntimeAxis``): each release of a runtime package as a
point, its wheels ready for the Python that runs the trials.

The releases are those pip lists for the package (``pip index versions``, pip's own index
settings: an index, or ``--find-links``) inside the axis's range, oldest first, or the axis's
own list. Each release is resolved as a level of its factor is at build time
(gpurepro.building.runtime_releases: its wheel's dependencies pinned to the newest release
inside their declared ranges, shared pins and ``Runtime.from_node`` as for any arm), its wheels
downloaded once for the trials' Python under ``<root>/wheels/``, and every arm of the axis
resolved with that release in place of its level. What a run of the release needs is one
runtime index, ``<root>/releases/<version>/index.json`` (gpurepro.building.runtime's format,
without a time in it): its sha256 is the point's, the GPU stage hands it to ``gpurepro run
--runtime-index`` and assembly checks each journal against it. A release whose wheel pip does
not offer for that Python is ``unavailable``, one whose dependencies do not resolve ``failed``;
neither runs. Writes ``<root>/bisect.cpu.json``, the bisection document's CPU stage.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..building import releases as releases_mod
from ..building import runtime, runtime_releases
from ..case.axis import RuntimeAxis
from ..case.model import Case
from ..errors import BuildError, UsageError
from ..model.files import sha256_file, write_atomic
from . import search
from .bisection import CPU_FILE, SCHEMA_ID, axis_root, describe_axis, describe_case
from .cpu import need_pip

# What other modules use; the rest is this module's own.
__all__ = ["run_runtime_cpu_stage", "runtime_axis"]

# Nothing a runtime axis makes has SASS: every artifact's reading is empty, one segment.
NO_SASS: dict[str, Any] = {"read_by": None, "attempts": {}, "kernels": {}}
ASSUMPTION = ("between two releases that ran and ended alike, every release ends alike; the "
              "oldest and the newest release run, and between two runs that ended differently "
              "the middle release runs, until the two are adjacent")


def runtime_axis(case: Case, name: str) -> RuntimeAxis | None:
    """The runtime axis ``name``, or None where it is a toolchain axis (or no axis)."""
    axis = case.axes.get(name)
    return axis if isinstance(axis, RuntimeAxis) else None


def _rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else path.name


def _first_line(exc: Exception) -> str:
    return next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")[:300]


def _considered(axis: RuntimeAxis, listed: Sequence[str]) -> tuple[list[str], list[dict[str, str]]]:
    """The releases the sweep runs through, oldest first, and why each other listed is out."""
    version = releases_mod._packaging().version.Version
    if axis.releases:
        return (sorted(axis.releases, key=version),
                [{"version": v, "reason": "not in the axis's list"} for v in listed
                 if v not in axis.releases])
    inside = [v for v in listed if releases_mod.in_range(v, axis.versions)]
    return (sorted(inside, key=version),
            [{"version": v, "reason": "outside the range"} for v in listed if v not in inside])


def _release(case: Case, axis: RuntimeAxis, version: str, python: str,
             fetch: Callable[[str], dict[str, Any]],
             lister: Callable[[str], list[str]]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One release's record and its runtime index (None where it cannot run)."""
    rt = case.runtime
    assert rt is not None
    package = rt.releases[axis.factor]
    pin = f"{package}=={version}"
    rec: dict[str, Any] = {"requested": version, "resolved": None}
    try:
        entry = fetch(pin)
    except BuildError as exc:
        rec["build"] = {"status": "unavailable", "stderr_first_line": _first_line(exc)}
        return rec, None
    rec.update(resolved=entry["version"], wheel={"filename": entry["file"], "sha256": entry["sha256"]})
    t0 = time.monotonic()
    try:
        pins = runtime_releases.dependencies(pin, rt.packages.get("*", ()), rt.from_node,
                                             python, fetch, lister)
        arms = {arm: runtime_releases.arm_pins(case, arm, {pin: pins}, {axis.factor: version})
                for arm in axis.arms}
        wheels = {p: fetch(p) for p in sorted({p for chosen in arms.values() for p in chosen})}
        resolved = {arm: runtime.resolve_arm(arm, chosen, wheels, rt, python)
                    for arm, chosen in arms.items()}
    except BuildError as exc:
        rec["build"] = {"status": "failed", "exit_status": None, "signal": None,
                        "stderr_first_line": _first_line(exc),
                        "seconds": round(time.monotonic() - t0, 2)}
        return rec, None
    rec["pins"] = pins
    rec["build"] = {"status": "ok", "exit_status": 0, "signal": None, "stderr_first_line": "",
                    "seconds": round(time.monotonic() - t0, 2)}
    index = {"case": case.name, "python": python, "implementation": rt.implementation,
             "platforms": list(rt.platforms), "from_node": list(rt.from_node),
             "release": {"factor": axis.factor, "package": package, "version": version},
             "wheels": wheels, "arms": resolved}
    return rec, index


def run_runtime_cpu_stage(case: Case, axis_name: str, target: str, root: Path, build_dir: Path,
                          only: tuple[str, ...] = (), say: Callable[[str], None] = lambda _m: None,
                          into: Path | None = None, python: str | None = None,
                          pip_args: Sequence[str] = ()) -> Path:
    """Resolve every release of the axis, write the CPU document; returns its path. ``python``:
    the trials' Python where it is not this interpreter's (``runtime.wheel_python``)."""
    axis = runtime_axis(case, axis_name)
    if axis is None or case.runtime is None:
        raise UsageError(f"{case.name} has no runtime axis {axis_name!r}")
    need_pip()
    rt = case.runtime
    python = runtime.wheel_python(rt, python, case.name)
    package = rt.releases[axis.factor]
    root = root.resolve()
    where = into or root / axis_root(case.name, axis_name, target)
    seen: dict[str, list[str]] = {}

    def lister(name: str) -> list[str]:
        if name not in seen:
            seen[name] = releases_mod.versions_of(name)
        return seen[name]

    fetched: dict[str, dict[str, Any]] = {}

    def fetch(pin: str) -> dict[str, Any]:
        if pin not in fetched:
            fetched[pin] = runtime.download(pin, rt, python, root, where, pip_args,
                                            lambda _p, _s: None)
        return fetched[pin]

    listed = lister(package)
    considered, excluded = _considered(axis, listed)
    unknown = [v for v in only if v not in considered]
    if unknown:
        raise UsageError(f"--only: {', '.join(unknown)} not among the {len(considered)} releases "
                         f"of {package} the axis runs through")
    releases: list[dict[str, Any]] = []
    distinct: dict[str, dict[str, Any]] = {}
    for version in considered:
        if only and version not in only:
            continue
        say(f"bisect: {package} {version}")
        rec, index = _release(case, axis, version, python, fetch, lister)
        if index is not None:
            path = where / "releases" / version / runtime.INDEX_NAME
            write_atomic(path, json.dumps(index, indent=1, sort_keys=True) + "\n")
            rec["sha256"] = sha = sha256_file(path)
            rec["build"]["sha256"] = sha
            distinct[sha] = {"path": _rel(path, root), "size": path.stat().st_size,
                             "releases": [version], "sass": NO_SASS, "signature": None,
                             "wheels": sorted({w["file"] for w in index["wheels"].values()})}
        releases.append(rec)
    points = search.points_of(releases)
    for p in points:
        p["segment"] = 0
    doc = {
        "schema": SCHEMA_ID,
        "stage": "cpu",
        "case": describe_case(case, root),
        "axis": describe_axis(case, axis_name),
        "target": target,
        "python": python,
        "listing": {"index": "pip index versions (pip's own index settings; final releases)",
                    "listed": listed, "considered": considered, "excluded": excluded,
                    **({"only": list(only)} if only else {})},
        "case_build": _rel(build_dir, root),
        "inputs": {},
        "sources": {},
        "disassemblers": {},
        "common_reader": None,
        "releases": releases,
        "artifacts": distinct,
        "points": points,
        "segments": 1 if points else 0,
        "search": {"assumption": ASSUMPTION},
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = where / CPU_FILE
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    return path
