"""What the SASS of each kernel holds: the IABS, the clamp, and what the clamp reads.

Reads the listings of ``cuobjdump -sass`` (``Function : NAME``) and ``nvdisasm``
(``.text.NAME:``) alike, with the harness's parser (gpurepro.build.sass). Per kernel: the IABS
instructions, the min/max instructions (IMNMX, VIMNMX and their modifiers: the clamp), and which instruction wrote the register the first
clamp reads: ``IABS`` when the abs feeds the clamp, the load of m (``LDG.E``) when it does not.
Pure text processing, standard library and gpurepro only.
"""

from __future__ import annotations

import re
from typing import Any

from gpurepro.build import sass
from gpurepro.build.sass import Instr

_REG = re.compile(r"^U?R\d+$")

CLAMP_PREFIXES = ("IMNMX", "VIMNMX")


def parse(listing: str) -> dict[str, list[Instr]]:
    """Kernel name -> its instructions, from either disassembler's listing (the harness's
    parser, gpurepro.build.sass)."""
    return sass.parse_listing(listing)


def _writer(instrs: list[Instr], idx: int, reg: str) -> Instr | None:
    """The nearest instruction before ``idx`` whose destination (first operand) is ``reg``."""
    for j in range(idx - 1, -1, -1):
        ops = instrs[j].operands
        if ops and ops[0] == reg and not instrs[j].opcode.startswith(("ST", "BRA", "EXIT")):
            return instrs[j]
    return None


def facts(instrs: list[Instr]) -> dict[str, Any]:
    """The IABS, the clamp and the clamp's input of one kernel."""
    iabs = [i.text for i in instrs if i.is_op("IABS")]
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
    return sass.opcodes(parse(listing))
