"""One matrix cell on the CPU: one front-end release × one toolchain family, in its own
virtualenv (the nox session made it and installed the pins; this runs inside it).

What it records (``<build root>/cells/<cell>/cell.json``): the requested pins and the versions
resolved from this environment's installed metadata, the installer's outcome, the tool version
lines, and for each export variant and for the plain control cubin either the file (path,
sha256, the Tile IR bytecode the front-end handed to tileiras) or the reason it could not be
built. Builds go through the case's own artifact recipes (``gpurepro.building``: reproducible
flags, the script runner, a log per step), each artifact alone so that one failure does not
hide the next. Standard library only: the cell's environment holds the toolchain and nothing
else.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..building.artifacts import build_case
from ..case import toolchain
from ..case.load import load_case
from ..case.model import Artifact, Case
from ..errors import BuildError, ManifestError, ToolNotFound
from ..model.files import sha256_file, write_atomic
from . import reasons
from .spec import Cell, Spec, Variant, build_root

# What other modules use; the rest is this module's own.
__all__ = ["lineinfo_check", "read_cells", "run_cell"]

CELL_SCHEMA = "gpurepro/matrix-cell/1"
CELL_FILE = "cell.json"
# cuda.tile writes the Tile IR bytecode it compiles into this folder (a documented debug
# variable of every release with export_kernel); the line-info check recompiles it.
DUMP_VARIABLE = "CUDA_TILE_DUMP_BYTECODE"
BYTECODE_SUFFIX = ".tileirbc"
# cuda.tile's tileiras flags for an export (compile_cubin in cuda/tile/_compile.py, cache off):
# --gpu-name, its default -O3, and --lineinfo, which it always adds.
TILEIRAS_FLAGS = ("-O3",)


def cell_dir(spec: Spec, cell: Cell, root: Path, into: Path | None = None) -> Path:
    """Where a cell builds and keeps its record: ``into`` (inside the repository; default the
    matrix's build root) / cells / <cell>."""
    return (into or root / build_root(spec)) / "cells" / cell.id


def _rel(path: Path, root: Path) -> str:
    return str(path.resolve().relative_to(root.resolve()))


def variant_artifact(base: Artifact, variant: Variant, dump_dir: Path) -> Artifact:
    """The case's export artifact with the variant's script in place of its own, dumping the
    bytecode it compiles into ``dump_dir``."""
    script = base.sources[0]
    old, new = f"{{case}}/{script}", f"{{case}}/{variant.script}"
    if old not in base.command:
        raise ManifestError(base.name, "command", f"does not run {old}, so variant "
                            f"{variant.name!r} cannot replace it")
    return replace(base, command=tuple(new if part == old else part for part in base.command),
                   sources=(variant.script,), description=variant.description,
                   env={**base.env, DUMP_VARIABLE: str(dump_dir.resolve())})


def _build_one(case: Case, art: Artifact, spec: Spec, cell: Cell, root: Path,
               build_dir: Path) -> dict[str, Any]:
    """Build one artifact with the cell's pins: its file, or why not."""
    derived = replace(case, toolchains={spec.target: list(cell.pins)}, artifacts=[art])
    try:
        index = build_case(derived, spec.target, root, build_dir.resolve().relative_to(root.resolve()))
    except BuildError as exc:
        log = exc.log
        reason = reasons.build_reason(log.read_text(errors="replace")) if log and log.is_file() \
            else str(exc).splitlines()[0]
        return {"status": "failed", "reason": reason, "log": _rel(log, root) if log else None}
    except ToolNotFound as exc:
        return {"status": "failed", "reason": str(exc), "log": None}
    entry = index["artifacts"][art.name]
    path = root / entry["path"]
    return {"status": "ok", "reason": None, "path": entry["path"], "sha256": entry["sha256"],
            "size": path.stat().st_size, "log": str(Path(entry["dir"]) / "build.log")}


def _bytecode(dump_dir: Path, root: Path) -> dict[str, Any] | None:
    found = sorted(dump_dir.glob(f"*{BYTECODE_SUFFIX}")) if dump_dir.is_dir() else []
    if len(found) != 1:
        return None  # a release that did not dump (or dumped several kernels): nothing to check
    # cuda.tile names the dump with a random suffix; a fixed name keeps records comparable.
    fixed = dump_dir / f"kernel{BYTECODE_SUFFIX}"
    found[0].rename(fixed)
    return {"path": _rel(fixed, root), "sha256": sha256_file(fixed)}


def _export(case: Case, variant: Variant, spec: Spec, cell: Cell, root: Path, out: Path) -> dict[str, Any]:
    dump_dir = out / variant.name / "bytecode"
    art = variant_artifact(case.artifact(spec.tile_artifact), variant, dump_dir)
    result = {"variant": variant.name, **_build_one(case, art, spec, cell, root, out / variant.name)}
    result["bytecode"] = _bytecode(dump_dir, root) if result["status"] == "ok" else None
    return result


def _tool(name: str, case: Case) -> str | None:
    try:
        return toolchain.tool_version(name, case.tools)
    except ToolNotFound:
        return None


def declared_toolchain(front_end_pin: str) -> list[str] | None:
    """The front-end's requirements under its ``tileiras`` extra, from its installed metadata
    (None when it is not installed; [] when it declares none)."""
    name = front_end_pin.split("==")[0]
    try:
        requires = importlib.metadata.requires(name) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return [r.split(";")[0].strip() for r in requires if 'extra == "tileiras"' in r]


def lineinfo_check(case: Case, spec: Spec, export: dict[str, Any], root: Path, out: Path) -> dict[str, Any]:
    """tileiras on the exported bytecode, with --lineinfo (as cuda.tile runs it) and without:
    the two cubins, for `collect` to compare section by section."""
    if not export.get("bytecode"):
        return {"status": "failed", "reason": f"the {export['variant']} export left no bytecode to compile"}
    try:
        tileiras = toolchain.find_tool("tileiras", case.tools)
    except ToolNotFound as exc:
        return {"status": "failed", "reason": str(exc)}
    env = {**os.environ, "PATH": f"{tileiras.parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "SOURCE_DATE_EPOCH": "0"}
    check_dir = out / "lineinfo_check"
    check_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"status": "ok", "variant": export["variant"],
                              "bytecode": export["bytecode"], "export": export["sha256"],
                              "builds": {}}
    for name, extra in (("lineinfo", ("--lineinfo",)), ("no_lineinfo", ())):
        cubin = check_dir / f"{name}.cubin"
        args = [export["bytecode"]["path"], "-o", _rel(check_dir, root) + f"/{name}.cubin",
                "--gpu-name", spec.target, *TILEIRAS_FLAGS, *extra]
        done = subprocess.run([str(tileiras), *args], cwd=root, env=env, capture_output=True,
                              text=True, check=False)
        if done.returncode != 0 or not cubin.is_file():
            return {"status": "failed", "reason": f"tileiras {' '.join(args)}: "
                    f"{reasons.build_reason(done.stderr + done.stdout)}"}
        result["builds"][name] = {"tileiras_args": args, "path": _rel(cubin, root),
                                  "sha256": sha256_file(cubin)}
    return result


def run_cell(spec: Spec, cell: Cell, root: Path, install_failed: bool = False,
             install_log: str = "", into: Path | None = None) -> dict[str, Any]:
    """Everything one cell records; written to ``cells/<cell>/cell.json`` and returned."""
    root = root.resolve()
    out = cell_dir(spec, cell, root, into)
    # A fresh folder each time: the bytecode dumps and logs then belong to this run only.
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    record: dict[str, Any] = {
        "schema": CELL_SCHEMA, "cell": cell.id, "release": cell.release, "family": cell.family,
        "target": spec.target, "requested": list(cell.pins),
        "python": platform.python_version(),
        "install": {"status": "failed" if install_failed else "ok",
                    "reason": reasons.install_reason(install_log) if install_failed else None},
        # From this environment's installed metadata, never from an installer's printout.
        "resolved": toolchain.installed_versions(list(cell.pins)),
        # What the front-end's own [tileiras] extra would install beside it: whether its
        # release declares this family (the cell pins the family whatever it declares).
        "declared": declared_toolchain(cell.pins[0]),
        "tools": {}, "exports": [], "control": None, "lineinfo_check": None,
    }
    if not install_failed:
        case = load_case(spec.case, root)
        record["tools"] = {t: _tool(t, case) for t in ("tileiras", "nvcc")}
        record["exports"] = [_export(case, v, spec, cell, root, out)
                             for v in spec.variants if v.applies_to(cell.release)]
        record["control"] = _build_one(case, case.artifact(spec.control_artifact), spec, cell,
                                       root, out / "control")
        exported = [e for e in record["exports"] if e["status"] == "ok"]
        if cell == spec.newest() and exported:
            record["lineinfo_check"] = lineinfo_check(case, spec, exported[0], root, out)
    write_atomic(out / CELL_FILE, json.dumps(record, indent=1) + "\n")
    return record


def read_cells(spec: Spec, root: Path, into: Path | None = None) -> list[dict[str, Any]]:
    """Every cell record of the matrix that has one, in the spec's order."""
    records = []
    for cell in spec.cells():
        path = cell_dir(spec, cell, root, into) / CELL_FILE
        if path.is_file():
            records.append(json.loads(path.read_text()))
    return records
