"""One-line reasons from the logs of an install or a build that failed.

A matrix cell that cannot run says why in one line (the table shows it); the whole log stays in
build/ beside the cell. Standard library only.
"""

from __future__ import annotations

import re

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
