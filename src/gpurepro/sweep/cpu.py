"""The CPU stage: every release of an axis built, identical artifacts counted once, their SASS.

For each final release pip offers for the axis's packages in their ranges (oldest first,
family after family: gpurepro.building.releases, with pip's own index settings): the wheel pip
resolves for this machine (cached, pip checking its sha256 against the index's), the program
``bin/<tool>`` out of it, the version pip resolved and its ``--version``, then the axis's build command
with ``{tool}`` naming that program: its status (ok, failed with an exit status, crashed with a
signal, timeout), the first line it wrote to standard error, and the output's sha256. Every
distinct artifact is copied once to ``<root>/artifacts/`` (what the GPU stage carries) and
disassembled by the harness's finder (one disassembler for all where one reads them all), with
the watched facts that segment the search (search.py). Writes ``<root>/bisect.cpu.json``; needs
the case's own build (``gpurepro build``) for the artifacts the command names, and pip.

The document records what the builds were made from: the axis and the case as the stages read
them, the case's built artifacts the command reads (``inputs``, by sha256) and every file of the
checkout it reads directly (``sources``: the files its command names, such as a case's build
script, and the sources of the artifacts it reads). ``changed`` says what of it differs now, so
that a pack or a GPU stage refuses a CPU stage the manifest has moved away from.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..building import releases as releases_mod
from ..building import sass
from ..building.artifacts import load_index, reproducible_env
from ..case import toolchain
from ..case.axis import Axis
from ..case.model import PLACEHOLDER, Case, harness_import_root
from ..errors import BuildError, ToolNotFound, UsageError
from ..model.files import sha256_file, write_atomic
from . import search
from .bisection import CPU_FILE, SCHEMA_ID, axis_root, describe_axis, describe_case

# What other modules use; the rest is this module's own.
__all__ = [
    "axis_of", "changed", "check_current", "DISASSEMBLERS", "importlib", "json", "need_pip",
    "release_tool",
    "releases_mod", "run_cpu_stage", "signature", "tool_version"
]

BUILD_TIMEOUT_S = 300
DISASSEMBLERS = ("cuobjdump", "nvdisasm")


def axis_of(case: Case, name: str) -> Axis:
    """The toolchain axis ``name`` (a runtime axis is runtime_cpu's)."""
    if name not in case.axes:
        known = ", ".join(sorted(case.axes)) or "none"
        raise UsageError(f"{case.name} has no toolchain axis {name!r} (its axes: {known})")
    axis: Axis = case.axes[name]
    if not isinstance(axis, Axis):
        raise UsageError(f"{case.name}'s axis {name} is a runtime axis: its CPU stage is "
                         f"gpurepro.sweep.runtime_cpu")
    return axis


def _rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else path.name


# Placeholders of a build command that name a folder of the checkout.
_FOLDERS = ("case", "native")


def read_files(case: Case, axis: Axis, root: Path) -> dict[str, str]:
    """Every file of the checkout the axis's build reads directly, relative to the repository,
    with its sha256: each file its command names (``{case}/build.py``, ``--ptx={case}/k.ptx``,
    a path of the checkout), and the sources of the case's artifacts it reads
    (``{artifact:NAME}``), and of theirs. The artifacts' outputs are ``inputs``; build/ is not a
    source."""
    folders = {"case": _rel(case.directory.resolve(), root.resolve()), "native": "native"}
    named: set[Path] = set()
    for part in axis.build:
        for name, folder in folders.items():
            part = part.replace(f"{{{name}}}", folder)
        for word in re.split(r"[=,]", part):
            if word and "{" not in word and (root / word).is_file():
                named.add(root / word)
    todo, seen = list(axis.dependencies()), set()
    while todo:
        dep = todo.pop()
        if dep in seen or dep not in {a.name for a in case.artifacts}:
            continue  # a release's build of a per-level artifact: its output is an input
        seen.add(dep)
        art = case.artifact(dep)
        todo += art.dependencies()
        for src in art.sources:
            in_case = case.directory / src
            named.add(in_case if in_case.exists() else root / src)
    files = {p.resolve() for p in named if p.is_file()}
    build = (root / "build").resolve()
    return {_rel(p, root.resolve()): sha256_file(p) for p in sorted(files)
            if p.is_relative_to(root.resolve()) and not p.is_relative_to(build)}


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _said(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _field_changed(what: str, then: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    fields = [k for k in sorted({*then, *now}) if then.get(k) != now.get(k)]
    if not fields:
        return None
    k = fields[0]
    more = f" (and {len(fields) - 1} more field(s): {', '.join(fields[1:])})" if fields[1:] else ""
    return f"{what}'s {k} is {_said(now.get(k))} now, {_said(then.get(k))} then{more}"


def changed(doc: Mapping[str, Any], case: Case, root: Path) -> str | None:
    """What the CPU document ``doc`` was built from that differs now, in one line (None:
    nothing): the manifest's axis (its arms, its build, its range, its trials...), the case as
    the stages read it (its manifest's path, failure outcomes, exposure, output check), a file
    the build read directly, or an artifact of the case's build it read."""
    name = doc["axis"]["name"]
    if name not in case.axes:
        return f"the manifest has no axis {name} now (its axes: {', '.join(sorted(case.axes)) or 'none'})"
    ignore = ("manifest_sha256",)  # any edit of the manifest; what the stages read is compared
    said = (_field_changed(f"the manifest's axis {name}", doc["axis"],
                           _json(describe_axis(case, name)))
            or _field_changed("the case", {k: v for k, v in doc["case"].items() if k not in ignore},
                              {k: v for k, v in _json(describe_case(case, root)).items()
                               if k not in ignore}))
    if said:
        return said
    for rel, sha in (doc.get("sources") or {}).items():
        path = root / rel
        if not path.is_file():
            return f"{rel}, which the axis's build read, is missing"
        if sha256_file(path) != sha:
            return f"{rel}, which the axis's build read, changed (sha256 {sha[:12]} then)"
    index_file = root / str(doc.get("case_build") or "build") / case.name / doc["target"] / "artifacts.json"
    if index_file.is_file():
        built = json.loads(index_file.read_text()).get("artifacts") or {}
        for dep, rec in (doc.get("inputs") or {}).items():
            now = (built.get(dep) or {}).get("sha256")
            if now != rec["sha256"]:
                return (f"the case's build of {dep}, which the axis's build read, is "
                        f"{str(now)[:12]} now, {rec['sha256'][:12]} then")
    return None


def check_current(doc: Mapping[str, Any], case: Case, root: Path, where: str) -> None:
    """A one-line refusal of a CPU document ``changed`` finds stale (``where``: its path)."""
    said = changed(doc, case, root)
    if said:
        raise UsageError(f"{where} is stale: {said}; run its CPU stage again (python -m gpurepro "
                         f"bisect {case.name} --axis {doc['axis']['name']} --stage cpu)")


def need_pip() -> None:
    """pip lists and fetches the releases (build.releases): a one-line stop without it."""
    if importlib.util.find_spec("pip") is None:
        raise BuildError(f"the CPU stage lists and fetches each release with pip, which this "
                         f"Python ({sys.executable}) does not have: install pip into it (nox -s "
                         f"bisect does)")


def _first_line(text: str, *paths: Path) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    for p in paths:
        line = line.replace(str(p), p.name)
    return line[:300]


def release_tool(package: str, version: str, tool: str, cache: Path
                 ) -> tuple[Path, dict[str, Any]]:
    """One release's program out of the wheel pip resolves (and downloads once) for it."""
    entry = releases_mod.resolve(package, version)
    return releases_mod.program(releases_mod.fetch(entry, cache), tool, cache), entry


def tool_version(program: Path) -> str | None:
    """``--version``'s release (``12.6.77``), or its first line."""
    try:
        done = subprocess.run([str(program), "--version"], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout + done.stderr).strip()
    m = re.search(r"\bV(\d+\.\d+\.\d+)\b", text)
    return m.group(1) if m else (text.splitlines()[0][:120] if text else None)


def _values(case: Case, axis: Axis, target: str, root: Path, index: Mapping[str, Any],
            out: Path, program: Path) -> dict[str, str]:
    values = {"tool": str(program), "python": sys.executable,
              "case": str(case.directory.relative_to(root)), "arch": target,
              "out": _rel(out, root), "native": "native"}
    for dep in axis.dependencies():
        entry = index["artifacts"].get(dep)
        if entry is None:
            raise BuildError(f"axis build names {{artifact:{dep}}}, which the case's build for "
                             f"{target} does not have")
        values[f"artifact:{dep}"] = entry["dir"]
    for name in axis.placeholders() - set(values):
        if toolchain.is_tool(name, case.tools):
            values[name] = str(toolchain.find_tool(name, case.tools))
    unknown = axis.placeholders() - set(values)
    if unknown:
        raise BuildError(f"axis build: unknown placeholder(s) {sorted(unknown)}")
    return values


def build_release(case: Case, axis: Axis, target: str, root: Path, index: Mapping[str, Any],
                  out: Path, program: Path) -> dict[str, Any]:
    """The axis's build with one release's program: status, exit status or signal, the first
    line of its standard error, the output's sha256."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    values = _values(case, axis, target, root, index, out, program)
    argv = [PLACEHOLDER.sub(lambda m: values[m.group(1)], part) for part in axis.build]
    env = {k: v for k, v in os.environ.items() if k != "NVCC_PREPEND_FLAGS"}
    env.update(reproducible_env(root, out))
    # A case's build script may import the harness (its driver kit, its SASS parser).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(harness_import_root()),
                                                      os.environ.get("PYTHONPATH"))))
    t0 = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=env,
                              timeout=BUILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "exit_status": None, "signal": None,
                "stderr_first_line": f"killed after {BUILD_TIMEOUT_S} s", "seconds": BUILD_TIMEOUT_S}
    (out / "build.log").write_text("$ " + " ".join(argv) + "\n" + done.stdout + done.stderr)
    rc = done.returncode
    made = out / axis.output
    record: dict[str, Any] = {
        "exit_status": rc if rc >= 0 else None,
        "signal": signal.Signals(-rc).name if rc < 0 else None,
        "stderr_first_line": _first_line(done.stderr + done.stdout, program, out, root),
        "seconds": round(time.monotonic() - t0, 2)}
    codes = sass.message_codes(done.stderr + done.stdout)
    if codes:
        record["messages"] = codes
    verbose = sass.parse_ptxas_verbose(done.stderr + done.stdout)  # where the build passed -v
    if verbose:
        record["resources"] = verbose
    if rc < 0:
        record["status"] = "crashed"
    elif rc != 0 or not made.is_file():
        record["status"] = "failed"
    else:
        record.update(status="ok", sha256=sha256_file(made), size=made.stat().st_size)
    return record


def _cached_lister() -> Callable[[str], list[str]]:
    """``versions_of`` asked once per package (the listing and the range filter share it)."""
    seen: dict[str, list[str]] = {}

    def lister(package: str) -> list[str]:
        if package not in seen:
            seen[package] = releases_mod.versions_of(package)
        return seen[package]
    return lister


def _disassemblers(case: Case) -> dict[str, Path | None]:
    found: dict[str, Path | None] = {}
    for name in DISASSEMBLERS:
        try:
            found[name] = toolchain.find_tool(name, case.tools)
        except ToolNotFound:
            found[name] = None
    return found


def signature(axis: Axis, listing: Mapping[str, Any],
              resources: Mapping[str, Any] | None = None, messages: tuple[str, ...] = ()
              ) -> dict[str, Any]:
    """What segments the search: the watched (kernel, pattern) facts (sass.facts: an opcode's
    presence, an instruction with its operands, a count, a resource such as registers or
    spills, a ptxas message), or every kernel's opcode sequence where the axis watches nothing."""
    if axis.watch:
        return sass.facts(listing, axis.watch, resources, messages)
    return sass.opcodes(listing)


def run_cpu_stage(case: Case, axis_name: str, target: str, root: Path, build_dir: Path,
                  cache: Path, only: tuple[str, ...] = (),
                  say: Callable[[str], None] = lambda _m: None, into: Path | None = None) -> Path:
    """Build every release, write the CPU document; returns its path. ``into``: another folder
    than ``build/bisect/<case>/<axis>/<target>`` (inside the repository)."""
    axis = axis_of(case, axis_name)
    need_pip()
    index = load_index(build_dir, case, target)
    where = into or root / axis_root(case.name, axis_name, target)
    spans = axis.releases()
    lister = _cached_lister()
    listed, excluded = [], []
    for fam in spans.families:
        offered = lister(fam.package)
        listed += offered if len(spans.families) == 1 else [f"{fam.package}=={v}" for v in offered]
        for v in offered:
            if not releases_mod.in_range(v, fam.versions):
                excluded.append({"version": v, "reason": "outside the range",
                                 **({"package": fam.package} if axis.families else {})})
    considered_at = releases_mod.listed(spans, lister=lister)
    considered = [c["version"] for c in considered_at]
    unknown = [v for v in only if v not in considered]
    if unknown:
        raise UsageError(f"--only: {', '.join(unknown)} not among the {len(considered)} releases "
                         f"pip offers for {', '.join(f.package + f.versions for f in spans.families)}")
    releases = []
    for point in considered_at:
        version = point["version"]
        if only and version not in only:
            continue
        say(f"bisect: {point['package']} {version}")
        rec: dict[str, Any] = {"requested": version, "resolved": None,
                               **({"package": point["package"]} if axis.families else {})}
        try:
            program, entry = release_tool(point["package"], version, axis.tool, cache)
        except BuildError as exc:
            rec["build"] = {"status": "unavailable", "stderr_first_line": _first_line(str(exc))}
            releases.append(rec)
            continue
        rec.update(resolved=entry["version"], wheel={"filename": entry["file"], "sha256": entry["sha256"]},
                   tool_version=tool_version(program))
        rec["build"] = build_release(case, axis, target, root, index,
                                     where / "releases" / version, program)
        if rec["build"]["status"] == "ok":
            rec["sha256"] = rec["build"]["sha256"]
        releases.append(rec)

    artifacts_dir = where / "artifacts"
    if artifacts_dir.exists():
        shutil.rmtree(artifacts_dir)
    artifacts_dir.mkdir(parents=True)
    distinct: dict[str, dict[str, Any]] = {}
    for r in releases:
        sha = r.get("sha256")
        if not sha:
            continue
        if sha not in distinct:
            made = where / "releases" / r["requested"] / axis.output
            kept = artifacts_dir / f"{sha[:16]}{Path(axis.output).suffix}"
            shutil.copyfile(made, kept)
            distinct[sha] = {"path": _rel(kept, root), "size": kept.stat().st_size, "releases": []}
        distinct[sha]["releases"].append(r["requested"])
        if r["build"].get("resources"):
            distinct[sha].setdefault("ptxas_resources", r["build"]["resources"])
        if r["build"].get("messages"):
            distinct[sha]["messages"] = sorted({*distinct[sha].get("messages", ()),
                                                *r["build"]["messages"]})
    tools = _disassemblers(case)
    shas = list(distinct)
    listings, reader = sass.common_reader([root / distinct[s]["path"] for s in shas], tools)
    # Registers, stack and spills per kernel, where the axis watches them (res:...).
    res_watched = any(p.startswith("res:") for _k, p in axis.watch)
    for sha, d in zip(shas, listings, strict=True):
        distinct[sha]["sass"] = d.record()
        # cuobjdump's reading where it reads the cubin, completed by the build's ptxas -v
        # (spills; registers where cuobjdump finds no device code, as in 12.0-12.3 cubins).
        read = (sass.resource_usage(root / distinct[sha]["path"], tools.get("cuobjdump"))
                if res_watched else None)
        verbose = distinct[sha].pop("ptxas_resources", None) or {}
        resources = ({k: {**verbose.get(k, {}), **(read or {}).get(k, {})}
                      for k in sorted({*(read or {}), *verbose})} or None) if res_watched else None
        if res_watched:
            distinct[sha]["resources"] = resources
        distinct[sha]["signature"] = (signature(axis, d.listing, resources,
                                                tuple(distinct[sha].get("messages", ())))
                                      if d.read_by else None)
    points = search.points_of(releases)
    segments = search.segments_of(points, {s: a["signature"] for s, a in distinct.items()})
    for k, seg in enumerate(segments):
        for i in seg:
            points[i]["segment"] = k
    doc = {
        "schema": SCHEMA_ID,
        "stage": "cpu",
        "case": describe_case(case, root),
        "axis": describe_axis(case, axis_name),
        "target": target,
        "listing": {"index": "pip index versions (pip's own index settings; final releases "
                             "for this machine)", "listed": listed, "considered": considered,
                    "excluded": excluded, **({"only": list(only)} if only else {})},
        "case_build": _rel(build_dir, root),
        "inputs": {dep: {"path": index["artifacts"][dep]["path"],
                         "sha256": index["artifacts"][dep]["sha256"]} for dep in axis.dependencies()},
        "sources": read_files(case, axis, root),
        "disassemblers": {n: (tool_version(p) if p else None) for n, p in tools.items()},
        "common_reader": reader,
        "releases": releases,
        "artifacts": distinct,
        "points": points,
        "segments": len(segments),
        "search": {"assumption": search.ASSUMPTION},
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = where / CPU_FILE
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    return path
