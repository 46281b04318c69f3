"""Lock files: every environment a session installs, as exact versions with their hashes.

``locks/`` in the checkout holds one lock per environment:

- ``locks/toolchain/<case>-<target>.txt``: a case's toolchain for one build target, compiled
  from ``<case>-<target>.in``, which holds the manifest's pins for that target (written here,
  from the manifest, so a change of pins shows as a changed input);
- ``locks/analysis.txt``, ``locks/test.txt``, ``locks/lint.txt``, ``locks/docs.txt``: the
  package's extras, compiled from ``pyproject.toml``, for every Python the package supports;
- ``locks/nox.txt``: nox itself, for the Makefile, compiled from ``locks/nox.in``;
- ``locks/releases/<case>.json``: the toolchain releases a case's arms compare
  (``Factor.releases``), each the wheel pip resolves for the build machine with its sha256
  (gpurepro.building.releases), from the manifest's levels.

``nox -s lock`` (``make lock``) writes them with ``uv pip compile --generate-hashes``, each
only where its input changed: ``locks/inputs.json`` keeps the sha256 of what each lock was
compiled from (its ``.in``, or the dependencies of its extras in ``pyproject.toml``, and the
compile's arguments), and a lock whose input has that sha256 is current and not compiled again.
A compiled lock replaces the committed one only where its text differs, so an unchanged
``locks/nox.txt`` keeps its time and the Makefile does not reinstall ``.venv/``; the toolchain
locks of targets no case has any more (a scaffold's targets the author removed) are removed,
their ``.in`` with them; the release locks resolve only the releases they do not hold yet.
``nox -s lock -- --check`` (CI, through ``make lock-check``) compiles every lock again against
the committed ones, which uv keeps as its preferences, and fails when an input changed
without its lock or a lock no longer resolves as committed. Resolved versions are still recorded in each result (the toolchain's installed
metadata), so a document says what ran whether or not a lock was used. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..case.load import load_case
from . import releases

# What other modules use; the rest is this module's own.
__all__ = [
    "compile_locks", "EXTRAS", "jobs", "LOCKS", "main", "PYTHON", "recorded_digests",
    "stale_inputs", "toolchain_inputs", "toolchain_lock", "TOOLS", "USAGE"
]

LOCKS = "locks"
TOOLCHAIN = "toolchain"
# The environments that install the package's extras, each its own lock: name -> the extras
# it holds (lint type-checks the analysis code, so it holds both).
EXTRAS = {"analysis": ("analysis",), "test": ("test",), "lint": ("analysis", "lint"),
          "docs": ("docs",)}
# Tools installed from an input of their own, not from the package: nox, which the Makefile
# installs into .venv/ (locks/nox.in names its release, locks/nox.txt is that release locked).
TOOLS = ("nox",)
# The oldest Python the package supports: the locks resolve from it up, for every platform
# (uv's --universal), so one lock serves 3.11 and 3.12 alike.
PYTHON = "3.11"


def toolchain_inputs(root: Path) -> dict[str, list[str]]:
    """``toolchain/<case>-<target>`` -> the manifest's pins, for every case and every build
    target it has pins for."""
    out: dict[str, list[str]] = {}
    for manifest in sorted((root / "cases").glob("*/manifest.py")):
        case = load_case(manifest, root)
        for target in sorted(set(case.devices.targets.values())):
            pins = case.pins_for(target)
            if pins:
                out[f"{TOOLCHAIN}/{case.name}-{target}"] = list(pins)
    return out


def input_text(pins: list[str]) -> str:
    return ("# The case's pins for this target, from its manifest (nox -s lock writes this file;\n"
            "# edit the manifest, not this).\n" + "".join(f"{p}\n" for p in pins))


def prune_inputs(root: Path) -> list[str]:
    """Remove the toolchain .in and .txt of every target no case has any more (a scaffold's
    targets the author removed); returns what was removed (relative paths)."""
    expected = toolchain_inputs(root)
    folder = root / LOCKS / TOOLCHAIN
    gone = []
    for path in sorted(folder.glob("*.in")) + sorted(folder.glob("*.txt")) if folder.is_dir() else []:
        if f"{TOOLCHAIN}/{path.stem}" not in expected:
            path.unlink()
            gone.append(str(path.relative_to(root)))
    return gone


# What each lock was compiled from, by its sha256: locks/inputs.json.
DIGESTS = "inputs.json"


@dataclass(frozen=True)
class Job:
    """One lock to compile: ``argv`` (uv's arguments, ``-o`` the lock relative to the root) and
    the sha256 of its input."""

    output: str
    argv: tuple[str, ...]
    digest: str

    def to_json(self) -> dict[str, object]:
        return {"output": self.output, "argv": list(self.argv), "digest": self.digest}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Job:
        return cls(str(d["output"]), tuple(d["argv"]), str(d["digest"]))


def _digest(argv: list[str], material: object) -> str:
    return hashlib.sha256(json.dumps({"argv": argv, "input": material}, sort_keys=True)
                          .encode()).hexdigest()


def extras_input(root: Path, extras: tuple[str, ...]) -> dict[str, object]:
    """What a lock of the package's ``extras`` resolves from: pyproject.toml's dependencies,
    those of the extras (and of any extra they name) and requires-python."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    optional = project.get("optional-dependencies", {})
    return {"dependencies": project.get("dependencies", []),
            "requires-python": project.get("requires-python"),
            "extras": {e: optional.get(e, []) for e in extras}}


def jobs(root: Path) -> list[Job]:
    """Every lock's compile, in order: the toolchains' (their .in written first), the
    extras', the tools'."""
    out = []
    for name, source in write_inputs(root).items():
        argv = compile_argv(source, f"{LOCKS}/{name}.txt")
        out.append(Job(f"{LOCKS}/{name}.txt", tuple(argv), _digest(argv, (root / source).read_text())))
    for name, extras in EXTRAS.items():
        argv = compile_argv("pyproject.toml", f"{LOCKS}/{name}.txt", extras)
        out.append(Job(f"{LOCKS}/{name}.txt", tuple(argv), _digest(argv, extras_input(root, extras))))
    for tool in TOOLS:
        tool_input = root / LOCKS / f"{tool}.in"
        if tool_input.is_file():
            argv = compile_argv(f"{LOCKS}/{tool}.in", f"{LOCKS}/{tool}.txt")
            out.append(Job(f"{LOCKS}/{tool}.txt", tuple(argv),
                           _digest(argv, tool_input.read_text())))
    return out


def recorded_digests(root: Path) -> dict[str, str]:
    try:
        doc = json.loads((root / LOCKS / DIGESTS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` only where it differs from what is there (its time kept
    otherwise); True when written."""
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def compile_locks(root: Path, check: bool, uv: str = "uv",
                  say: Callable[[str], None] = print) -> list[str]:
    """``make lock``: compile the locks whose input changed (or that are missing), each into a
    copy of the committed one (uv keeps its versions where they still hold), replacing the
    committed lock only where the text differs; record their inputs' sha256. With ``check``:
    compile every lock and return those the compile changes."""
    if not check:
        for path in prune_inputs(root):
            say(f"{path}: removed (no case has this target any more)")
    recorded = recorded_digests(root)
    stale = []
    todo = jobs(root)
    with tempfile.TemporaryDirectory(prefix="gpurepro-locks-") as tmp:
        for job in todo:
            output = root / job.output
            if not check and output.is_file() and recorded.get(job.output) == job.digest:
                say(f"{job.output}: current (its input unchanged)")
                continue
            copy = Path(tmp) / job.output
            copy.parent.mkdir(parents=True, exist_ok=True)
            if output.is_file():
                shutil.copyfile(output, copy)
            argv = list(job.argv)
            argv[argv.index("-o") + 1] = str(copy)
            done = subprocess.run([uv, *argv], cwd=root, check=False)
            if done.returncode != 0:
                raise SystemExit(f"uv pip compile for {job.output} failed (exit {done.returncode})")
            text = copy.read_text()
            if check:
                if not output.is_file() or text != output.read_text():
                    stale.append(job.output)
                continue
            say(f"{job.output}: {'written' if write_if_changed(output, text) else 'unchanged'}")
            recorded[job.output] = job.digest
    if not check:
        known = {job.output for job in todo}
        write_if_changed(root / LOCKS / DIGESTS, json.dumps(
            {k: v for k, v in sorted(recorded.items()) if k in known}, indent=1) + "\n")
    return stale


def toolchain_lock(root: Path, case: str, target: str) -> Path | None:
    """The lock of a case's toolchain for ``target``, when one is committed."""
    path = root / LOCKS / TOOLCHAIN / f"{case}-{target}.txt"
    return path if path.is_file() else None


def extra_lock(root: Path, extra: str) -> Path | None:
    path = root / LOCKS / f"{extra}.txt"
    return path if path.is_file() else None


def compile_argv(source: str, output: str, extras: tuple[str, ...] = ()) -> list[str]:
    """The `uv pip compile` arguments that compile ``source`` (a .in file or pyproject.toml) to
    ``output``. Paths are relative to the checkout, as the lock's annotations then name them."""
    argv = ["pip", "compile", source, *(a for e in extras for a in ("--extra", e)),
            "--generate-hashes", "--universal", "--python-version", PYTHON,
            "--custom-compile-command", "nox -s lock", "--quiet", "-o", output]
    return argv


def write_inputs(root: Path) -> dict[str, str]:
    """Write every toolchain .in from the manifests; returns name -> the .in path (relative)."""
    written = {}
    for name, pins in toolchain_inputs(root).items():
        path = root / LOCKS / f"{name}.in"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = input_text(pins)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
        written[name] = str(path.relative_to(root))
    return written


def stale_inputs(root: Path) -> list[str]:
    """The toolchain .in files that differ from the manifests' pins (or are missing), and the
    committed ones no case has any more."""
    expected = toolchain_inputs(root)
    stale = [f"{LOCKS}/{name}.in" for name, pins in expected.items()
             if not (root / LOCKS / f"{name}.in").is_file()
             or (root / LOCKS / f"{name}.in").read_text() != input_text(pins)]
    folder = root / LOCKS / TOOLCHAIN
    for path in sorted(folder.glob("*.in")) if folder.is_dir() else []:
        if f"{TOOLCHAIN}/{path.stem}" not in expected:
            stale.append(f"{LOCKS}/{TOOLCHAIN}/{path.name} (no case has this target any more)")
    return stale


def release_locks(root: Path, check: bool) -> list[str]:
    """Write (or, with ``check``, compare) ``locks/releases/<case>.json`` for every case whose
    arms compare toolchain releases; the locks that differ (check) or that no case has."""
    stale = []
    expected = set()
    for manifest in sorted((root / "cases").glob("*/manifest.py")):
        case = load_case(manifest, root)
        path = releases.lock_path(root, case.name)
        try:  # a release locked already is not resolved again (make lock); --check resolves all
            held = {} if check else json.loads(path.read_text()).get("releases", {})
        except (OSError, ValueError):
            held = {}

        def resolve(package: str, version: str, held: dict[str, Any] = held) -> dict[str, Any]:
            entry = held.get(f"{package}=={version}")
            return entry if entry is not None else releases.resolve(package, version)

        doc = releases.lock_document(case, resolve)
        if doc is None:
            continue
        expected.add(path.name)
        text = releases.lock_text(doc)
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path.relative_to(root)))
        else:
            write_if_changed(path, text)
    folder = root / LOCKS / releases.FOLDER
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.name not in expected:
            if check:
                stale.append(f"{path.relative_to(root)} (no case compares releases under it)")
            else:
                path.unlink()
    return stale


USAGE = ("usage: python -m gpurepro.building.locks lock ROOT [--check] | stale ROOT | "
         "releases ROOT [--check] (for nox -s lock; the command line proper is gpurepro.cli's)")


def main(argv: list[str] | None = None) -> int:
    """For the nox session: ``lock ROOT [--check]`` compiles the locks (compile_locks; uv from
    PATH); ``stale ROOT`` says which inputs differ from the manifests; ``releases ROOT
    [--check]`` writes or compares the release locks. Exit 1 for anything stale."""
    args = list(sys.argv[1:] if argv is None else argv)
    if (len(args) not in (2, 3) or args[0] not in ("lock", "stale", "releases")
            or args[2:] not in ([], ["--check"]) or (args[0] == "stale" and len(args) != 2)):
        print(USAGE, file=sys.stderr)
        return 2
    root, check = Path(args[1]).resolve(), args[2:] == ["--check"]
    if args[0] == "releases":
        stale = release_locks(root, check=check)
        for line in stale:
            print(f"{line} is not what the manifest's releases resolve to: run nox -s lock",
                  file=sys.stderr)
        return 1 if stale else 0
    if args[0] == "stale":
        stale = stale_inputs(root)
        for line in stale:
            print(f"{line} is not what the manifest pins: run nox -s lock", file=sys.stderr)
        return 1 if stale else 0
    stale = compile_locks(root, check)
    if stale:
        print(f"not current: {', '.join(stale)}; run nox -s lock and commit locks/", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
