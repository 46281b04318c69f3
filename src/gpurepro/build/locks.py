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
  (gpurepro.build.releases), from the manifest's levels.

``nox -s lock`` writes them with ``uv pip compile --generate-hashes``; ``nox -s lock -- --check``
(CI, through ``make test``) compiles them again against the committed locks, which uv keeps as
its preferences, and fails when an input changed without its lock or a lock no longer resolves
as committed. Resolved versions are still recorded in each result (the toolchain's installed
metadata), so a document says what ran whether or not a lock was used. Standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..case.load import load_case

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
    from . import releases

    stale = []
    expected = set()
    for manifest in sorted((root / "cases").glob("*/manifest.py")):
        case = load_case(manifest, root)
        doc = releases.lock_document(case)
        if doc is None:
            continue
        path = releases.lock_path(root, case.name)
        expected.add(path.name)
        text = releases.lock_text(doc)
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path.relative_to(root)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    folder = root / LOCKS / releases.FOLDER
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.name not in expected:
            if check:
                stale.append(f"{path.relative_to(root)} (no case compares releases under it)")
            else:
                path.unlink()
    return stale


USAGE = ("usage: python -m gpurepro.build.locks inputs ROOT OUT.json | stale ROOT | "
         "releases ROOT [--check] (for nox -s lock; the command line proper is gpurepro.cli's)")


def main(argv: list[str] | None = None) -> int:
    """For the nox session: ``inputs ROOT OUT.json`` writes the toolchain .in files and lists
    in OUT.json the `uv` arguments that compile each lock; ``stale ROOT`` says which inputs
    differ from the manifests (exit 1 if any)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["releases"] and len(args) in (2, 3) and args[2:] in ([], ["--check"]):
        stale = release_locks(Path(args[1]).resolve(), check=args[2:] == ["--check"])
        for line in stale:
            print(f"{line} is not what the manifest's releases resolve to: run nox -s lock",
                  file=sys.stderr)
        return 1 if stale else 0
    if len(args) not in (2, 3) or args[0] not in ("inputs", "stale") or (
            (args[0] == "inputs") != (len(args) == 3)):
        print(USAGE, file=sys.stderr)
        return 2
    root = Path(args[1]).resolve()
    if args[0] == "stale":
        stale = stale_inputs(root)
        for line in stale:
            print(f"{line} is not what the manifest pins: run nox -s lock", file=sys.stderr)
        return 1 if stale else 0
    jobs = [compile_argv(source, f"{LOCKS}/{name}.txt") for name, source in write_inputs(root).items()]
    jobs += [compile_argv("pyproject.toml", f"{LOCKS}/{name}.txt", extras)
             for name, extras in EXTRAS.items()]
    jobs += [compile_argv(f"{LOCKS}/{tool}.in", f"{LOCKS}/{tool}.txt") for tool in TOOLS
             if (root / LOCKS / f"{tool}.in").is_file()]
    Path(args[2]).write_text(json.dumps(jobs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
