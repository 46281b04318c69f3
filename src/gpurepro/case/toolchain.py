"""The one tool finder: a case's tools from its pinned wheels (or the host), and their versions.

nox installs the case's pins (``nvidia-cuda-nvcc``, ``nvidia-cuda-tileiras``, ...) into the
session's virtualenv. A tool (``gpurepro.case.Tool``) names its binary and the PyPI
package that provides it; it is looked up among that distribution's installed files (for the
CUDA 13 wheels, ``site-packages/nvidia/cu13/bin/<binary>``) and nowhere else: a build must come
from the pins it records, so we never fall back to an ``nvcc`` on PATH. Tools without a package
(g++, cuda-gdb) are the host's; a tool marked ``host`` (compute-sanitizer, an instrument run on
a GPU node) falls back to the host when its wheel is absent.

The tool set is open: ``DEFAULT_TOOLS`` are the names most cases use, and a case adds or
replaces any of them in ``Case.tools``. ``venv`` points every lookup at another virtualenv (the
toolchain environments the tests and ``sass.py --venv`` use). Standard library only.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from ..errors import ToolNotFound as ToolNotFound  # raised here, and named through here
from .model import Tool

# What other modules use; the rest is this module's own.
__all__ = [
    "DEFAULT_TOOLS", "find_tool", "HOST_DEFAULT_ROOT", "installed_versions", "is_tool",
    "locate", "nvcc_lib_dir", "release", "spec", "tool_version", "ToolNotFound", "version_of"
]

DEFAULT_TOOLS: Mapping[str, Tool] = {
    "nvcc": Tool("nvcc", "nvidia-cuda-nvcc"),
    "ptxas": Tool("ptxas", "nvidia-cuda-nvcc"),
    "tileiras": Tool("tileiras", "nvidia-cuda-tileiras"),
    "cuobjdump": Tool("cuobjdump", "nvidia-cuda-cuobjdump"),
    "nvdisasm": Tool("nvdisasm", "nvidia-cuda-nvdisasm"),
    "compute-sanitizer": Tool("compute-sanitizer", "nvidia-cuda-sanitizer-api", host=True),
    "cuda-gdb": Tool("cuda-gdb"),
    "gxx": Tool("g++"),
}
# Where a host tool is looked for after PATH: these variables' bin/, then /usr/local/cuda/bin.
HOST_ROOTS = ("CUDA_HOME", "CUDA_PATH")
HOST_DEFAULT_ROOT = "/usr/local/cuda"


def catalog(tools: Mapping[str, Tool] | None = None) -> dict[str, Tool]:
    """Every tool name a case can use: the defaults, overlaid by the case's own table."""
    return {**DEFAULT_TOOLS, **(tools or {})}


def is_tool(name: str, tools: Mapping[str, Tool] | None = None) -> bool:
    return name == "python" or name in catalog(tools)


def spec(name: str, tools: Mapping[str, Tool] | None = None) -> Tool:
    table = catalog(tools)
    if name not in table:
        raise ToolNotFound(f"unknown tool {name!r} (known: {', '.join(sorted(table))}); "
                           "a case declares its own in Case.tools")
    return table[name]


def site_dirs(venv: Path | None = None) -> list[Path]:
    """site-packages folders of this interpreter, or of the virtualenv ``venv``."""
    if venv is not None:
        return sorted(p for p in Path(venv).glob("lib*/python3*/site-packages") if p.is_dir())
    out: list[Path] = []
    for key in ("purelib", "platlib"):
        p = Path(sysconfig.get_paths()[key])
        if p.is_dir() and p not in out:
            out.append(p)
    return out


def _distributions(name: str, venv: Path | None) -> list[importlib.metadata.Distribution]:
    """The installed distributions called ``name`` here, or in ``venv``."""
    if venv is None:
        return list(importlib.metadata.distributions(name=name))
    return list(importlib.metadata.distributions(name=name, path=[str(p) for p in site_dirs(venv)]))


def _wheel_file(tool: Tool, venv: Path | None) -> Path | None:
    """``tool.binary`` among the installed files of ``tool.package``."""
    for dist in _distributions(tool.package, venv):
        files = [f for f in (dist.files or []) if f.name == tool.binary]
        # bin/ first (a wheel may carry the name twice), then by path.
        for f in sorted(files, key=lambda f: (f.parent.name != "bin", str(f))):
            p = Path(str(dist.locate_file(f)))
            if p.is_file():
                return p
    return None


def host_program(binary: str) -> Path | None:
    """A host program: PATH, then $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin."""
    found = shutil.which(binary)
    if found:
        return Path(found)
    roots = [os.environ.get(v) for v in HOST_ROOTS] + [HOST_DEFAULT_ROOT]
    for root in roots:
        if root and (Path(root) / "bin" / binary).is_file():
            return Path(root) / "bin" / binary
    return None


@cache
def locate(tool: Tool, venv: Path | None = None) -> Path | None:
    """Where ``tool`` is, or None (see the module docstring for where that is looked)."""
    if tool.package:
        found = _wheel_file(tool, venv)
        if found is not None or not tool.host:
            return found
    return host_program(tool.binary)


def _python(venv: Path | None) -> Path:
    return Path(venv) / "bin" / "python" if venv is not None else Path(sys.executable)


def not_found_message(name: str, tool: Tool, venv: Path | None = None) -> str:
    where = venv or sys.prefix
    if tool.package:
        also = " nor on the host (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)" if tool.host else ""
        return (f"{name} ({tool.binary}) not found in this environment ({where}){also}; it "
                f"comes from the PyPI package {tool.package}: add it to the case's pins "
                "(toolchains), which the case's nox session installs")
    return f"{name} ({tool.binary}) not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin"


def find_tool(name: str, tools: Mapping[str, Tool] | None = None, venv: Path | None = None) -> Path:
    """Absolute path of the tool called ``name`` in the case's table (``tools``) or the defaults."""
    if name == "python":
        return _python(venv)
    tool = spec(name, tools)
    found = locate(tool, venv)
    if found is None:
        raise ToolNotFound(not_found_message(name, tool, venv))
    return found


def nvcc_lib_dir(nvcc: Path | None = None) -> Path:
    """The nvcc wheel's library folder (cudart_static, cudadevrt) for linking executables."""
    nvcc = nvcc or find_tool("nvcc")
    lib = nvcc.parent.parent / "lib"
    return lib if lib.is_dir() else nvcc.parent


def version_of(path: Path | str, first_line: bool = False) -> str:
    """One line that identifies a program's exact build, from ``PROGRAM --version``.

    NVIDIA tools: their "release" and "Build" lines (``Cuda compilation tools, release 13.0,
    V13.0.88; Build ...``, compute-sanitizer's ``Version ... (public-release)``); any other
    program, or with ``first_line``: the first line.
    """
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                              timeout=30, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = [ln.strip() for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    if not lines:
        return "unknown"
    release = [ln for ln in lines if "release" in ln or ln.startswith("Build")]
    return lines[0] if first_line or not release else "; ".join(release)


def tool_version(name: str, tools: Mapping[str, Tool] | None = None,
                 venv: Path | None = None) -> str:
    """One line that identifies the exact build of the tool called ``name``."""
    if name == "python":
        return _python_version(venv)
    return _version(spec(name, tools), venv, name == "gxx")


@cache
def _python_version(venv: Path | None) -> str:
    if venv is None:
        return f"Python {sys.version.split()[0]}"
    return version_of(_python(venv), first_line=True)


@cache
def _version(tool: Tool, venv: Path | None, first_line: bool) -> str:
    path = locate(tool, venv)
    if path is None:
        raise ToolNotFound(not_found_message(tool.binary, tool, venv))
    return version_of(path, first_line)


_RELEASE = re.compile(r"V(\d+\.\d+\.\d+)")


def release(version: str) -> str:
    """``13.0.88`` from an NVIDIA version line (``... release 13.0, V13.0.88; Build ...``)."""
    m = _RELEASE.search(version)
    return m.group(1) if m else version


def installed_versions(requirements: list[str], venv: Path | None = None) -> dict[str, str | None]:
    """Resolved version of each requirement's distribution in this environment (or ``venv``)."""
    out: dict[str, str | None] = {}
    for req in requirements:
        name = req.split(";")[0].split("[")[0]
        for sep in ("==", ">=", "<=", "~=", "!=", ">", "<"):
            name = name.split(sep)[0]
        name = name.strip()
        dists = _distributions(name, venv)
        out[name] = dists[0].version if dists else None
    return out
