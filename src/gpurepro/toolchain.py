"""Find the pinned tools inside the current environment and read their exact versions.

nox installs the case's pins (``nvidia-cuda-nvcc``, ``nvidia-cuda-tileiras``, ...) into the
session's virtualenv; the binaries live in that environment's ``site-packages/nvidia/*/bin``.
We deliberately never fall back to an ``nvcc`` on PATH: a build must come from the pins it
records. Standard library only.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import sysconfig
from functools import cache
from pathlib import Path

# Wheel tools: name -> binary name inside site-packages/nvidia/<pkg>/bin.
WHEEL_TOOLS = {"nvcc": "nvcc", "tileiras": "tileiras", "cuobjdump": "cuobjdump",
               "nvdisasm": "nvdisasm", "ptxas": "ptxas"}
# Which PyPI package provides each wheel tool (for the error message).
WHEEL_PACKAGES = {"nvcc": "nvidia-cuda-nvcc", "tileiras": "nvidia-cuda-tileiras",
                  "cuobjdump": "nvidia-cuda-cuobjdump", "nvdisasm": "nvidia-cuda-nvdisasm",
                  "ptxas": "nvidia-cuda-nvcc"}


class ToolNotFound(RuntimeError):
    pass


def _nvidia_roots() -> list[Path]:
    roots = []
    for key in ("purelib", "platlib"):
        p = Path(sysconfig.get_paths()[key]) / "nvidia"
        if p.is_dir() and p not in roots:
            roots.append(p)
    return roots


@cache
def find_tool(name: str) -> Path:
    """Absolute path of a tool: wheel tools from this environment, host tools from PATH."""
    if name == "python":
        return Path(sys.executable)
    if name == "gxx":
        found = shutil.which("g++")
        if not found:
            raise ToolNotFound("g++ not found on PATH: install your distribution's g++")
        return Path(found)
    if name not in WHEEL_TOOLS:
        raise ToolNotFound(f"unknown tool {name!r}")
    for root in _nvidia_roots():
        for candidate in sorted(root.glob(f"*/bin/{WHEEL_TOOLS[name]}")):
            if candidate.is_file():
                return candidate
    raise ToolNotFound(
        f"{name} not found in this environment ({sys.prefix}); it comes from the PyPI "
        f"package {WHEEL_PACKAGES[name]}, which the case's nox session installs from its pins"
    )


def nvcc_lib_dir() -> Path:
    """The nvcc wheel's library folder (cudart_static, cudadevrt) for linking executables."""
    nvcc = find_tool("nvcc")
    lib = nvcc.parent.parent / "lib"
    return lib if lib.is_dir() else nvcc.parent


@cache
def tool_version(name: str) -> str:
    """One line that identifies the tool's exact build."""
    path = find_tool(name)
    if name == "python":
        return f"Python {sys.version.split()[0]}"
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = [ln.strip() for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    if name == "gxx":
        return lines[0] if lines else "unknown"
    # NVIDIA tools: the "Cuda compilation tools, release X, VX.Y.Z" line, plus the build line.
    release = [ln for ln in lines if "release" in ln or ln.startswith("Build")]
    return "; ".join(release) if release else (lines[-1] if lines else "unknown")


def installed_versions(requirements: list[str]) -> dict[str, str | None]:
    """Resolved version of each requirement's distribution in this environment."""
    out: dict[str, str | None] = {}
    for req in requirements:
        name = req.split(";")[0].split("[")[0]
        for sep in ("==", ">=", "<=", "~=", "!=", ">", "<"):
            name = name.split(sep)[0]
        name = name.strip()
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out
