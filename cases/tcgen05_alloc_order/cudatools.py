"""Find the pinned CUDA tools inside the active interpreter's site-packages.

The NVIDIA wheels (``nvidia-cuda-nvcc``, ``nvidia-cuda-cuobjdump``, ...) unpack their programs
under ``site-packages/nvidia/<pkg>/bin`` (for CUDA 13: ``nvidia/cu13/bin``). We look there and
nowhere else by default: an nvcc found on PATH is whatever the machine happens to have, and a
result must name the exact tool that made it. Standard library only.
"""

from __future__ import annotations

import re
import site
import subprocess
import sys
from pathlib import Path


def site_dirs() -> list[Path]:
    """site-packages folders of this interpreter (venv first), existing ones only."""
    seen: list[Path] = []
    candidates = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    for entry in candidates:
        p = Path(entry)
        if p.name in ("site-packages", "dist-packages") and p.is_dir() and p not in seen:
            seen.append(p)
    return seen


def venv_site_dirs(venv: Path) -> list[Path]:
    """site-packages of another virtualenv (e.g. the toolchain venv nox made for a case)."""
    return sorted(p for p in Path(venv).glob("lib*/python3*/site-packages") if p.is_dir())


def find_tool(name: str, venv: Path | None = None) -> Path | None:
    """``site-packages/nvidia/*/bin/<name>`` (ptxas, nvcc, cuobjdump, nvdisasm) of this
    interpreter, or of ``venv`` when given; None if absent."""
    for sp in venv_site_dirs(venv) if venv else site_dirs():
        for cand in sorted((sp / "nvidia").glob(f"*/bin/{name}")):
            if cand.is_file():
                return cand
    return None


def nvcc_lib_dir(nvcc: Path) -> Path:
    """The wheel's lib folder (libcudart_static.a, libcudadevrt.a) next to nvcc's bin."""
    return nvcc.parent.parent / "lib"


_VERSION = re.compile(r"V(\d+\.\d+\.\d+)")


def tool_version(tool: Path) -> str:
    """``V13.0.88`` style version from ``tool --version``; the whole last line if no match."""
    out = subprocess.run([str(tool), "--version"], capture_output=True, text=True, check=False)
    text = out.stdout + out.stderr
    m = _VERSION.search(text)
    if m:
        return m.group(1)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown"


def missing(names: list[str], venv: Path | None = None) -> list[str]:
    return [n for n in names if find_tool(n, venv) is None]
