"""What the SASS of each kernel holds: the IABS, the clamp, and what the clamp reads.

Reads the listings of ``cuobjdump -sass`` (``Function : NAME``) and ``nvdisasm``
(``.text.NAME:``) alike. Per kernel: the IABS instructions, the min/max instructions (IMNMX,
VIMNMX and their modifiers: the clamp), and which instruction wrote the register the first
clamp reads: ``IABS`` when the abs feeds the clamp, the load of m (``LDG.E``) when it does not.
Pure text processing, standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+([^/.][^;]*);")
_CUOBJDUMP_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_NVDISASM_FUNC = re.compile(r"^\.text\.(\S+):\s*$")
_SECTION = re.compile(r"^\s*(?://-+|\.section\b)")
_REG = re.compile(r"^U?R\d+$")

CLAMP_PREFIXES = ("IMNMX", "VIMNMX")


@dataclass
class Instr:
    offset: int
    pred: str | None
    opcode: str
    operands: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        ops = ", ".join(self.operands)
        return f"{self.pred + ' ' if self.pred else ''}{self.opcode}{' ' + ops if ops else ''}"


def parse_instr(offset: int, body: str) -> Instr:
    body = body.strip()
    pred = None
    if body.startswith("@"):
        pred, _, body = body.partition(" ")
    opcode, _, rest = body.strip().partition(" ")
    operands = [x.strip() for x in rest.split(",") if x.strip()] if rest.strip() else []
    return Instr(offset, pred, opcode, operands)


def parse(listing: str) -> dict[str, list[Instr]]:
    """Kernel name -> its instructions, from either disassembler's listing."""
    funcs: dict[str, list[Instr]] = {}
    current: list[Instr] | None = None
    for line in listing.splitlines():
        m = _CUOBJDUMP_FUNC.match(line) or _NVDISASM_FUNC.match(line)
        if m:
            current = funcs.setdefault(m.group(1), [])
            continue
        if _SECTION.match(line):  # nvdisasm: a new section ends the kernel's code
            current = None
            continue
        m = _INSTR.match(line)
        if m and current is not None:
            current.append(parse_instr(int(m.group(1), 16), m.group(2)))
    return {k: v for k, v in funcs.items() if v}


def _writer(instrs: list[Instr], idx: int, reg: str) -> Instr | None:
    """The nearest instruction before ``idx`` whose destination (first operand) is ``reg``."""
    for j in range(idx - 1, -1, -1):
        ops = instrs[j].operands
        if ops and ops[0] == reg and not instrs[j].opcode.startswith(("ST", "BRA", "EXIT")):
            return instrs[j]
    return None


def facts(instrs: list[Instr]) -> dict[str, Any]:
    """The IABS, the clamp and the clamp's input of one kernel."""
    iabs = [i.text for i in instrs if i.opcode.split(".")[0] == "IABS"]
    clamp_idx = [k for k, i in enumerate(instrs) if i.opcode.startswith(CLAMP_PREFIXES)]
    clamp_reads = None
    if clamp_idx:
        first = instrs[clamp_idx[0]]
        src = first.operands[1] if len(first.operands) > 1 else None
        writer = _writer(instrs, clamp_idx[0], src) if src and _REG.match(src) else None
        clamp_reads = writer.opcode if writer else None
    return {"iabs": iabs, "clamp": [instrs[k].text for k in clamp_idx],
            "clamp_reads": clamp_reads, "instructions": len(instrs)}


def kernel_facts(listing: str) -> dict[str, dict[str, Any]]:
    return {name: facts(instrs) for name, instrs in sorted(parse(listing).items())}


def opcodes(listing: str) -> dict[str, list[str]]:
    """Kernel -> its opcode sequence: what two disassemblers must agree on."""
    return {name: [i.opcode for i in instrs] for name, instrs in sorted(parse(listing).items())}
