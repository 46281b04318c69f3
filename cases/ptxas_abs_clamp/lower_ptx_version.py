"""Lower a PTX file's ``.version`` so that every ptxas under test accepts it.

    python lower_ptx_version.py IN.ptx OUT.ptx [--to 8.0]

Why: the PTX comes from one nvcc (13.3, which writes ``.version 9.3``) so that every ptxas
release compiles the same input; a ptxas refuses a ``.version`` newer than its own ISA
("Unsupported .version 9.3; current version is '8.5'"), and some old ones crash on it instead.

To what: PTX ISA 8.0, the ISA of CUDA 12.0, the oldest release of ``nvidia-cuda-nvcc-cu12``: every
ptxas from 12.0 on accepts it (newer ones accept any older ISA). ``.target sm_90`` needs ISA 7.8
or newer, so 8.0 is inside what the target allows.

A lower ``.version`` is only honest if the PTX uses nothing newer. This script checks that: every
instruction's opcode must be in ``INTRODUCED`` (the PTX ISA version that introduced it, from the
PTX ISA manual's "PTX ISA Notes" of each instruction) at or below the new version, and the
modifiers of ``LATE_MODIFIERS`` too; anything else is refused (exit status 2), so the table is
extended deliberately, never by accident. A guard for small kernels, not a PTX validator.
A PTX whose ``.version`` is already at or below the new one is copied unchanged.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

DEFAULT_TO = "8.0"

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


def _v(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def _body(ptx: str) -> str:
    """The PTX without comments, so commented-out text is not read as instructions."""
    ptx = re.sub(r"/\*.*?\*/", "", ptx, flags=re.S)
    return re.sub(r"//[^\n]*", "", ptx)


def requirements(ptx: str) -> dict[str, str]:
    """What the PTX uses -> the ISA version it needs (opcodes, late modifiers, the target).

    Raises Refused for an opcode this script has no version for."""
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


def lower(ptx: str, to: str = DEFAULT_TO) -> tuple[str, str, str]:
    """(the lowered PTX, the version it had, the version it has now)."""
    found = _VERSION.findall(ptx)
    if len(found) != 1:
        raise Refused(f"expected one .version line, found {len(found)}")
    old = f"{found[0][1]}.{found[0][2]}"
    if _v(old) <= _v(to):
        return ptx, old, old
    too_new = {what: v for what, v in requirements(ptx).items() if _v(v) > _v(to)}
    if too_new:
        listed = ", ".join(f"{w} (ISA {v})" for w, v in sorted(too_new.items()))
        raise Refused(f"cannot lower .version {old} to {to}: the PTX uses {listed}")
    return _VERSION.sub(lambda m: f"{m.group(1)}{to}{m.group(4)}", ptx), old, to


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--to", default=DEFAULT_TO, help=f"PTX ISA version to write (default {DEFAULT_TO})")
    args = ap.parse_args(argv)
    try:
        text, old, new = lower(args.src.read_text(), args.to)
    except Refused as exc:
        print(f"lower_ptx_version: {args.src}: {exc}", file=sys.stderr)
        return 2
    args.dst.write_text(text)
    print(f".version {old} -> {new}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
