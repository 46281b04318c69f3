"""`gpurepro new <name> [--kind K]`: a case folder that builds, runs and is decided from its
first minute.

The scaffold is a working case, not a template to fill before anything works (its files are
in template/<kind>/, real files with CASE_NAME where the name goes), one kind per common shape:

- ``crash``: a plain CUDA kernel built with the pinned nvcc wheels, a host driver on native/
  that launches it in a loop, heartbeats, joins its worker (so a kernel that never returns is
  `hung`, not `survived`) and names the call that failed, two arms, claims and a Conclusion;
- ``wrong-result``: a kernel built per arm into cubins, a check.py that declares its launch and
  computes the reference on the CPU, the stock driver (gpurepro/case/cubin_check.py) that
  compares every output, claims and a Conclusion in place of a verdict.py;
- ``slowdown``: a kernel built two ways into cubins, timed by the stock driver with CUDA
  events (gpurepro/case/cubin_check.py, ``Timing``), every arm's outputs checked against the
  reference build's on the same inputs; slower/same claims and a Conclusion;
- ``python``: the reporter's Python script in seed/ (a stand-in on cuda.bindings until the
  author puts theirs there), run as filed by the stock driver (gpurepro/case/python_program.py)
  under a runtime package pinned per arm (the report's release and another), its exit,
  exception or crash classified; claims and a Conclusion;
- ``python-value``: the same, across releases of the runtime package, with the value the
  program prints checked against the driver's own answer (answer.py, ``ProgramValue``): a
  wrong value is a wrong_result without a wrapper around the reporter's program;
- ``runtime-releases``: the reporter's script under a factor whose levels are releases of a
  runtime package (``Runtime.releases``: each release with its own dependencies, locked), the
  report's release and a good one, and a runtime axis (``RuntimeAxis``) between them that
  ``gpurepro bisect`` runs release by release to pin which release broke it.

The author then replaces the kernel, the launch and the arms with the bug's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..errors import UsageError

# What other modules use; the rest is this module's own.
__all__ = ["create", "KINDS", "NAME", "TOKEN"]

NAME = re.compile(r"^[a-z][a-z0-9_]*$")

# The case's files, as real files: CASE_NAME in them is replaced by the case's name.
TEMPLATE = Path(__file__).resolve().parent / "template"
TOKEN = "CASE_NAME"
# Kind -> its template folder and the case's files; a file in a subfolder of the case
# (seed/repro.py) is the template folder's file of the same name (repro.py).
KINDS = {
    "crash": ("crash", ("manifest.py", "kernel.cu", "host.cc", "README.md")),
    "wrong-result": ("wrong_result", ("manifest.py", "check.py", "kernel.cu", "README.md")),
    "slowdown": ("slowdown", ("manifest.py", "check.py", "kernel.cu", "README.md")),
    "python": ("python", ("manifest.py", "seed/repro.py", "README.md")),
    "python-value": ("python_value", ("manifest.py", "answer.py", "seed/repro.py", "README.md")),
    "runtime-releases": ("runtime_releases", ("manifest.py", "seed/repro.py", "README.md")),
}


def reserved_names(root: Path) -> dict[str, str]:
    """Names a case cannot take: the sessions the repository's noxfiles define themselves (read
    from their source, not imported) and the Makefile's targets (``tile-unload-race`` is the
    case ``tile_unload_race``), each -> what it is."""
    names: dict[str, str] = {}
    for noxfile in sorted(root.glob("noxfile*.py")):
        try:
            tree = ast.parse(noxfile.read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                    "session" in ast.unparse(d) for d in node.decorator_list):
                names[node.name] = f"nox session ({noxfile.name})"
    try:
        makefile = (root / "Makefile").read_text(encoding="utf-8")
    except OSError:
        makefile = ""
    for target in re.findall(r"^([a-z][a-z0-9-]*):", makefile, re.M):
        names.setdefault(target.replace("-", "_"), "make target (Makefile)")
    return names


def create(name: str, root: Path, kind: str = "crash") -> list[Path]:
    """Write cases/<name>/ from the ``kind``'s template (KINDS); return the files."""
    if kind not in KINDS:
        raise UsageError(f"--kind {kind}: one of {', '.join(KINDS)}")
    if not NAME.match(name):
        raise UsageError(f"{name!r}: a case name is lower-case letters, digits and _ "
                         f"(it names the folder and the nox session)")
    folder = root / "cases" / name
    if folder.exists():
        raise UsageError(f"{folder} exists; choose another name")
    taken = reserved_names(root)
    if name in taken:
        raise UsageError(f"{name!r} is the name of the repository's own {taken[name]}: a case "
                         f"names a nox session of its own; choose another name")
    folder.mkdir(parents=True)
    written = []
    template, files = KINDS[kind]
    for filename in files:
        path = folder / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        source = TEMPLATE / template / Path(filename).name
        path.write_text(source.read_text().replace(TOKEN, name))
        written.append(path)
    return written
