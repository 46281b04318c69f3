"""`gpurepro new <name>`: a case folder that builds, runs and is decided from its first minute.

The scaffold is a working case, not a template to fill before anything works (its files are
in template/, real files with CASE_NAME where the name goes): a plain CUDA
kernel built with the pinned nvcc wheels, a host driver on native/ that launches it in a loop,
heartbeats, joins its worker (so a kernel that never returns is `hung`, not `survived`) and
names the call that failed, two arms, a claim, and a README with the rules. The author then
replaces the kernel, the loop and the arms with the bug's.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UsageError

NAME = re.compile(r"^[a-z][a-z0-9_]*$")

# The case's files, as real files: CASE_NAME in them is replaced by the case's name.
TEMPLATE = Path(__file__).resolve().parent / "template"
TOKEN = "CASE_NAME"
FILES = ("manifest.py", "verdict.py", "kernel.cu", "host.cc", "README.md")


def create(name: str, root: Path) -> list[Path]:
    """Write cases/<name>/ (manifest, verdict, kernel, host driver, README); return the files."""
    if not NAME.match(name):
        raise UsageError(f"{name!r}: a case name is lower-case letters, digits and _ "
                         f"(it names the folder and the nox session)")
    folder = root / "cases" / name
    if folder.exists():
        raise UsageError(f"{folder} exists; choose another name")
    folder.mkdir(parents=True)
    written = []
    for filename in FILES:
        path = folder / filename
        path.write_text((TEMPLATE / filename).read_text().replace(TOKEN, name))
        written.append(path)
    return written
