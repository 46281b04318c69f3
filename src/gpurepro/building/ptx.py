"""A PTX file's ``.version`` lowered so that every ptxas release under test reads it.

    python -m gpurepro.building.ptx IN.ptx OUT.ptx VERSION      (e.g. 8.0)

Why: a case that compares ptxas releases (``Factor.releases``) compiles one PTX, from one nvcc,
with each release; nvcc writes the newest ISA it knows (``.version 9.3`` from 13.3), and a ptxas
refuses a ``.version`` newer than its own ISA ("Unsupported .version 9.3; current version is
'8.5'"), some old ones crash on it instead. PTX ISA 8.0 is CUDA 12.0's, the oldest release of
``nvidia-cuda-nvcc-cu12``: every ptxas from 12.0 on accepts it.

A lower ``.version`` is only honest if the PTX uses nothing newer. ``lower`` checks that: every
instruction's opcode must be in ``INTRODUCED`` (the PTX ISA version that introduced it, from the
PTX ISA manual's "PTX ISA Notes" of each instruction) at or below the new version, the modifiers
of ``LATE_MODIFIERS`` and the targets of ``TARGET_NEEDS`` too; anything else is refused (exit
status 2, nothing written), so the tables are extended deliberately, never by accident. A guard
for small kernels, not a PTX validator. A PTX whose ``.version`` is already at or below the new
one is copied unchanged. Standard library only (a build step: an artifact's command).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# What other modules use; the rest is this module's own.
__all__ = ["isa", "lower", "main", "Refused", "requirements"]

# Opcode -> the PTX ISA version that introduced it (PTX ISA manual, each instruction's notes).
INTRODUCED = {
    "abs": "1.0", "add": "1.0", "and": "1.0", "bra": "1.0", "cvt": "1.0", "ld": "1.0",
    "mad": "1.0", "max": "1.0", "min": "1.0", "mov": "1.0", "mul": "1.0", "neg": "1.0",
    "or": "1.0", "ret": "1.0", "selp": "1.0", "setp": "1.0", "shl": "1.0", "shr": "1.0",
    "st": "1.0", "sub": "1.0", "xor": "1.0", "exit": "1.0",
    "cvta": "2.0",
}
# (opcode, modifier) -> the PTX ISA version that introduced the modifier on that opcode.
LATE_MODIFIERS = {("max", "relu"): "8.0", ("min", "relu"): "8.0"}
# Targets -> the PTX ISA version that introduced them.
TARGET_NEEDS = {"sm_90": "7.8", "sm_90a": "8.0"}

_VERSION = re.compile(r"^(\s*\.version\s+)(\d+)\.(\d+)(\s*)$", re.M)
_TARGET = re.compile(r"^\s*\.target\s+([\w,\s]+)$", re.M)
# An instruction line: optional predicate, an opcode with dotted modifiers, operands, ';'.
_INSTR = re.compile(r"^\s*(?:@!?%?\w+\s+)?([a-z][a-z0-9_]*)((?:\.[a-z0-9_:]+)*)\b[^;]*;", re.M)


class Refused(ValueError):
    """The PTX cannot be lowered honestly; the message says what it uses."""


def isa(text: str) -> tuple[int, int]:
    """``"8.0"`` -> ``(8, 0)``, for comparing ISA versions."""
    major, minor = text.split(".")
    return int(major), int(minor)


def _body(ptx: str) -> str:
    """The PTX without comments, so commented-out text is not read as instructions."""
    ptx = re.sub(r"/\*.*?\*/", "", ptx, flags=re.S)
    return re.sub(r"//[^\n]*", "", ptx)


def requirements(ptx: str) -> dict[str, str]:
    """What the PTX uses -> the ISA version it needs (opcodes, late modifiers, the target).

    Raises Refused for an opcode or a target the tables have no version for."""
    body = _body(ptx)
    needs: dict[str, str] = {}
    unknown: set[str] = set()
    for m in _INSTR.finditer(body):
        op, mods = m.group(1), [x for x in m.group(2).split(".") if x]
        if op not in INTRODUCED:
            unknown.add(op)
            continue
        needs[op] = INTRODUCED[op]
        for mod in mods:
            if (op, mod) in LATE_MODIFIERS:
                needs[f"{op}.{mod}"] = LATE_MODIFIERS[(op, mod)]
    if unknown:
        raise Refused(f"opcode(s) {', '.join(sorted(unknown))} are not in INTRODUCED: look up the "
                      "PTX ISA version that introduced each and add it before lowering")
    for t in _TARGET.finditer(body):
        for target in (x.strip() for x in t.group(1).split(",")):
            if target in TARGET_NEEDS:
                needs[f".target {target}"] = TARGET_NEEDS[target]
            elif target.startswith("sm_"):
                raise Refused(f".target {target} is not in TARGET_NEEDS")
    return needs


def lower(ptx: str, to: str) -> tuple[str, str, str]:
    """(the lowered PTX, the version it had, the version it has now)."""
    found = _VERSION.findall(ptx)
    if len(found) != 1:
        raise Refused(f"expected one .version line, found {len(found)}")
    old = f"{found[0][1]}.{found[0][2]}"
    if isa(old) <= isa(to):
        return ptx, old, old
    too_new = {what: v for what, v in requirements(ptx).items() if isa(v) > isa(to)}
    if too_new:
        listed = ", ".join(f"{w} (ISA {v})" for w, v in sorted(too_new.items()))
        raise Refused(f"cannot lower .version {old} to {to}: the PTX uses {listed}")
    return _VERSION.sub(lambda m: f"{m.group(1)}{to}{m.group(4)}", ptx), old, to


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or not re.fullmatch(r"\d+\.\d+", args[2]):
        print("usage: python -m gpurepro.building.ptx IN.ptx OUT.ptx VERSION (e.g. 8.0)",
              file=sys.stderr)
        return 2
    src, dst, to = Path(args[0]), Path(args[1]), args[2]
    try:
        text, old, new = lower(src.read_text(), to)
    except (OSError, Refused) as exc:
        print(f"gpurepro.building.ptx: {src}: {exc}", file=sys.stderr)
        return 2
    dst.write_text(text)
    print(f".version {old} -> {new}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
