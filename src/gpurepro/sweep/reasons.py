"""One-line reasons from the logs of an install or a build that failed.

A matrix cell that cannot run says why in one line (the table shows it); the whole log stays in
build/ beside the cell. Standard library only.
"""

from __future__ import annotations

import re

# What other modules use; the rest is this module's own.
__all__ = ["build_reason", "explained", "install_reason", "machine_limit"]

MAX_CHARS = 400

# uv: "  × No solution found ...", "error: ..."; pip: "ERROR: ...".
_INSTALL_ERROR = re.compile(r"^\s*(?:×|error:|ERROR:)", re.IGNORECASE)
# The exception line a Python traceback ends with: "pkg.mod.SomeError: message".
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b(?::.*)?$")


def _one_line(lines: list[str]) -> str:
    text = " ".join(" ".join(ln.split()) for ln in lines if ln.strip())
    text = text.replace("╰─▶", "").replace("│", "").strip()
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return _one_line(lines[-1:]) if lines else "no output"


def install_reason(log: str) -> str:
    """The installer's error: its first error line and what follows it."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if _INSTALL_ERROR.match(line):
            return _one_line(lines[i:])
    return _last_line(log)


def build_reason(log: str) -> str:
    """Why a build step failed: the exception a Python traceback ends with (with the message
    lines after it, e.g. a compiler's stderr quoted in the message), else the last line."""
    lines = log.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if _EXCEPTION.match(lines[i]) and not lines[i].startswith(" "):
            return _one_line(lines[i:])
    return _last_line(log)


# Reasons that say more about the machine a cell ran on than about the release, each with what
# it means. cuda-tile 1.0.x loads libcuda when cuda.tile is imported, so exporting with it needs
# a driver; the matrix's CPU stage runs where there is none.
_MACHINE_LIMITS = (
    (re.compile(r"libcuda\.so(?:\.1)?: cannot open shared object file"),
     "a limit of exporting on a machine without a CUDA driver (this release imports libcuda "
     "to export), not a property of the release: export it on a GPU node to include it"),
)


def explained(reason: str) -> str:
    """``reason``, with what it means where it is a limit of the exporting machine."""
    for pattern, meaning in _MACHINE_LIMITS:
        if pattern.search(reason):
            return f"{reason} — {meaning}"
    return reason


def machine_limit(reason: str) -> bool:
    """Whether ``reason`` is a limit of the exporting machine rather than of the release."""
    return any(pattern.search(reason) for pattern, _ in _MACHINE_LIMITS)
