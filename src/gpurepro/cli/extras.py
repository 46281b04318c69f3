"""What a command needs beyond the standard library, and the one line that says how to get it.

A plain `pip install .` has no dependencies: the run stage runs on GPU nodes with nothing but
Python. Recording, reports, validation, comparisons, calibration and the looks of
`--until-decided` need the `analysis` extra. A command that needs it and does not find it ends
with one line naming the extra and the install command (exit 1), before it does anything; a
module of the extra missing later (a code path no table lists) ends the same way, never as "a
bug in gpurepro".
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from .. import project

# What other modules use; the rest is this module's own.
__all__ = [
    "absent", "analysis_module", "importlib", "install_command", "missing_line", "what_needs_it"
]

# The import names of gpurepro[analysis] (pyproject.toml), in the order a command meets them.
ANALYSIS_MODULES = ("jsonschema", "numpy", "scipy", "matplotlib", "rich", "pyperf", "elftools",
                    "pynvml")

# The commands that need the extra before they start (each reads or writes documents), and the
# modules each cannot start without; a module of the extra that a command meets later (pyperf,
# pyelftools, NVML) is caught where it is imported.
_CORE = ("jsonschema", "numpy", "scipy")
NEEDS_ANALYSIS = {
    "record": (*_CORE, "matplotlib"),
    "report": (*_CORE, "matplotlib"),
    "validate": _CORE,
    "compare": _CORE,
    "history": _CORE,
    "issue": _CORE,
    "calibrate": _CORE,
}


def install_command(cwd: Path | None = None) -> str:
    """How to install the extra: from the checkout when the command runs inside one (the
    package is installed from there), from the repository's address otherwise (there is no
    gpurepro on PyPI: gpurepro.project)."""
    return project.install_command(cwd)


def missing_line(command: str, module: str, cwd: Path | None = None) -> str:
    """The one line for a command that needs a module of the extra that is not installed."""
    return (f"{command} needs gpurepro[analysis] ({module} is not installed): "
            f"{install_command(cwd)}")


def absent(modules: tuple[str, ...] = ANALYSIS_MODULES) -> str | None:
    """The first of ``modules`` that cannot be imported here, or None."""
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):  # a broken or half-installed package
            return name
    return None


def what_needs_it(args: argparse.Namespace) -> tuple[str, tuple[str, ...]] | None:
    """The command (as the user typed it) and the modules it cannot start without, when it
    needs the extra before it starts; else None.

    `case` and `run` need it only for --until-decided, whose looks decide claims as the trials
    run (recording at the end is caught where it happens: the journal then holds every trial)."""
    command = getattr(args, "command", None)
    if command in NEEDS_ANALYSIS:
        return command, NEEDS_ANALYSIS[command]
    if command in ("case", "run") and getattr(args, "until_decided", False):
        return f"{command} --until-decided", ("numpy", "scipy")
    return None


def analysis_module(exc: ModuleNotFoundError) -> str | None:
    """The extra's module that ``exc`` says is missing, or None for any other module."""
    top = (exc.name or "").split(".")[0]
    return top if top in ANALYSIS_MODULES else None
