"""SASS data flow for a CTA pair: which instructions only the even (leader) or only the odd
(follower) CTA of a cluster pair executes, and whose shared memory each access touches.

For lowerings whose SASS is undocumented (the ``.cta_group::2`` tcgen05 instructions, say) these
are the facts a listing shows without reading any opcode's meaning: a branch on the CTA's rank
parity, the paths on either side, and the memory each access addresses. Pure text processing
on ``gpurepro.building.sass`` listings, standard library only.

* ``is_key(ins)``: an instruction that moves data or synchronises (``KEY_PREFIXES``), what a
  table about a lowering shows.
* ``parity_split(instrs)`` finds the branch on ``SR_CgaCtaId & 1`` (the CTA's parity in its
  pair: even = leader, odd = follower, PTX ISA "CTA Pair") and walks both sides
  path-sensitively (the parity predicate's value is known on each side until something
  redefines it) to list the instructions only the leader, or only the follower, executes.
* ``target(instrs, i)`` says whether a memory operand is this CTA's shared memory or the peer's:
  a shared::cluster address is built with ``PRMT Rd, Rrank, 0x654, Raddr`` (rank into bits
  24..31); when ``Rrank`` is ``SR_CgaCtaId ^ 1`` the address is the peer CTA's ("peer"), another
  rank "cluster", no such address "own".
* ``reachable(instrs, i, pred, value)``: what runs after ``i`` in program order (a retry loop
  outlined after the body is reached through its branch), the predicate's value known.
* ``constant_operand(instrs, i)``: the immediate a SYNCS.ARRIVE's count register was set from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .sass import Instr

# What other modules use; the rest is this module's own.
__all__ = ["constant_operand", "is_key", "KEY_PREFIXES", "parity_split", "reachable", "Split",
           "target"]

_REG = re.compile(r"\b(U?R\d+|U?P\d+)\b")

# Opcodes that move data or synchronise: what a table about a lowering should show.
KEY_PREFIXES = ("SYNCS", "UTC", "STAS", "LDS", "STS", "ATOMS", "ELECT", "NANOSLEEP", "BPT",
                "UCGABAR", "UVIRTCOUNT", "MEMBAR", "ERRBAR", "CGAERRBAR", "DEPBAR", "CCTL")


def is_key(ins: Instr) -> bool:
    return ins.opcode.startswith(KEY_PREFIXES)


# ----------------------------------------------------------------------------- data flow


def _dest(ins: Instr) -> list[str]:
    """Registers/predicates an instruction writes (first operand; both for *SETP/ELECT pairs)."""
    if not ins.operands or ins.opcode.startswith(("BRA", "CALL", "RET", "EXIT", "ST", "RED", "BAR",
                                                  "SYNCS.ARRIVE", "WARPSYNC", "BSSY", "BSYNC")):
        return []
    first = ins.operands[0]
    out = [first] if _REG.fullmatch(first) else []
    if "SETP" in ins.opcode and len(ins.operands) > 1 and _REG.fullmatch(ins.operands[1]):
        out.append(ins.operands[1])
    return out


def _def_before(instrs: list[Instr], idx: int, reg: str) -> Instr | None:
    """The nearest instruction before ``idx`` (in address order) that writes ``reg``."""
    for j in range(idx - 1, -1, -1):
        if reg in _dest(instrs[j]):
            return instrs[j]
    return None


def _is_cta_id(instrs: list[Instr], idx: int, reg: str, depth: int = 0) -> bool:
    d = _def_before(instrs, idx, reg)
    if d is None or depth > 4:
        return False
    if d.opcode in ("S2R", "S2UR", "CS2R") and "SR_CgaCtaId" in d.operands:
        return True
    if d.opcode in ("MOV", "UMOV", "IMAD.MOV.U32") and len(d.operands) >= 2:
        src = d.operands[-1]
        return bool(_REG.fullmatch(src)) and _is_cta_id(instrs, instrs.index(d), src, depth + 1)
    return False


def _lop_src(ins: Instr) -> str:
    return ins.operands[1].removesuffix(".reuse") if len(ins.operands) > 1 else ""


def _is_parity_of_cta(instrs: list[Instr], idx: int, reg: str) -> bool:
    """reg = SR_CgaCtaId & 1 (LOP3.LUT reg, cta, 0x1, RZ, 0xc0)."""
    d = _def_before(instrs, idx, reg)
    return (d is not None and d.opcode.startswith("LOP3") and len(d.operands) >= 5
            and d.operands[2] == "0x1" and d.operands[4] == "0xc0"
            and _is_cta_id(instrs, instrs.index(d), _lop_src(d)))


def _is_peer_rank(instrs: list[Instr], idx: int, reg: str) -> bool:
    """reg = SR_CgaCtaId ^ 1 (LOP3.LUT reg, cta, 0x1, RZ, 0x3c): the peer CTA's rank."""
    d = _def_before(instrs, idx, reg.removesuffix(".reuse"))
    return (d is not None and d.opcode.startswith("LOP3") and len(d.operands) >= 5
            and d.operands[2] == "0x1" and d.operands[4] == "0x3c"
            and _is_cta_id(instrs, instrs.index(d), _lop_src(d)))


def target(instrs: list[Instr], idx: int) -> str | None:
    """'peer' / 'cluster' / 'own' for the memory operand of instrs[idx]; None if it has none."""
    ins = instrs[idx]
    mem = next((o for o in ins.operands if o.startswith("[")), None)
    if mem is None:
        return None
    m = _REG.search(mem)
    if m is None:
        return "own"
    base = m.group(1)
    d = _def_before(instrs, idx, base)
    if d is not None and d.opcode in ("PRMT", "UPRMT") and len(d.operands) >= 4 and d.operands[2] == "0x654":
        j = instrs.index(d)
        return "peer" if _is_peer_rank(instrs, j, d.operands[1]) else "cluster"
    return "own"


# ----------------------------------------------------------------------------- the split


@dataclass
class Split:
    branch_offset: int
    predicate: str  # e.g. "P0"
    predicate_means_leader: bool
    leader: list[int]  # indices into the instruction list, address order
    follower: list[int]


def _parity_predicate(instrs: list[Instr]) -> tuple[int, str, bool] | None:
    """(index of ISETP, predicate, predicate-true-means-leader) for 'parity ==/!= 1 or 0'."""
    for i, ins in enumerate(instrs):
        if not ins.opcode.startswith("ISETP") or len(ins.operands) < 4:
            continue
        pred, a, b = ins.operands[0], ins.operands[2], ins.operands[3]
        if not _REG.fullmatch(pred) or not _is_parity_of_cta(instrs, i, a.removesuffix(".reuse")):
            continue
        if b not in ("0x1", "RZ"):
            continue
        ne = ".NE." in ins.opcode + "."
        eq = ".EQ." in ins.opcode + "."
        if not (ne or eq):
            continue
        # parity != 1 or parity == 0  -> even -> leader
        leader = (ne and b == "0x1") or (eq and b == "RZ")
        return i, pred, leader
    return None


def _branch_target(ins: Instr) -> int | None:
    for op in ins.operands:
        if re.fullmatch(r"0x[0-9a-fA-F]+", op):
            return int(op, 16)
    return None


def _walk(instrs: list[Instr], start: int, pred: str, value: bool) -> set[int]:
    """Indices reachable from ``start`` knowing ``pred == value`` until ``pred`` is redefined."""
    at = {ins.offset: i for i, ins in enumerate(instrs)}
    seen: set[tuple[int, bool | None]] = set()
    reached: set[int] = set()
    stack: list[tuple[int, bool | None]] = [(start, value)]
    while stack:
        i, known = stack.pop()
        if i >= len(instrs) or (i, known) in seen:
            continue
        seen.add((i, known))
        reached.add(i)
        ins = instrs[i]
        if known is not None and pred in _dest(ins):
            known = None  # e.g. ELECT P0 reuses the register
        op = ins.opcode
        cond = ins.pred
        taken = fall = True
        if cond is not None and known is not None and cond.lstrip("@!") == pred:
            holds = known if not cond.startswith("@!") else not known
            taken, fall = holds, not holds
        if op.startswith("BRA") and not any(o.startswith(("UP", "!UP")) for o in ins.operands):
            if cond is None:
                fall = False
            t = _branch_target(ins)
            if taken and t is not None and t in at:
                stack.append((at[t], known))
            if fall:
                stack.append((i + 1, known))
        elif op.startswith("BRA"):  # BRA.U UP0, target: uniform predicate, both ways
            t = _branch_target(ins)
            if t is not None and t in at:
                stack.append((at[t], known))
            stack.append((i + 1, known))
        elif op.startswith("CALL"):
            t = _branch_target(ins)
            if t is not None and t in at:
                stack.append((at[t], None))
            stack.append((i + 1, known))
        elif op.startswith(("EXIT", "RET")):
            if cond is not None and fall:
                stack.append((i + 1, known))
        else:
            stack.append((i + 1, known))
    return reached


def reachable(instrs: list[Instr], start: int, pred: str, value: bool) -> set[int]:
    """Instruction indices reachable from ``start`` in program order, ``pred`` known ``value``."""
    return _walk(instrs, start, pred, value)


def constant_operand(instrs: list[Instr], idx: int) -> str | None:
    """For a SYNCS.ARRIVE whose last operand is a register set from an immediate: 'R10=0x4'."""
    ins = instrs[idx]
    if not ins.opcode.startswith("SYNCS.ARRIVE") or not ins.operands:
        return None
    reg = ins.operands[-1]
    if not _REG.fullmatch(reg):
        return None
    d = _def_before(instrs, idx, reg)
    if d is not None and d.opcode in ("MOV", "UMOV", "IMAD.MOV.U32", "IMAD.MOV") and \
            re.fullmatch(r"-?0x[0-9a-fA-F]+", d.operands[-1]):
        return f"{reg}={d.operands[-1]}"
    return None


def parity_split(instrs: list[Instr]) -> Split | None:
    """The leader-only and follower-only instructions of the first branch on CTA parity."""
    found = _parity_predicate(instrs)
    if found is None:
        return None
    k, pred, pred_is_leader = found
    for b in range(k + 1, len(instrs)):
        ins = instrs[b]
        if ins.opcode.startswith("BRA") and ins.pred and ins.pred.lstrip("@!") == pred:
            t = _branch_target(ins)
            at = {x.offset: i for i, x in enumerate(instrs)}
            if t is None or t not in at:
                return None
            taken_when = not ins.pred.startswith("@!")  # branch taken when pred == taken_when
            taken_is_leader = taken_when == pred_is_leader
            leader_start, follower_start = (at[t], b + 1) if taken_is_leader else (b + 1, at[t])
            leader_value = pred_is_leader  # on the leader side, pred == pred_is_leader
            lead = _walk(instrs, leader_start, pred, leader_value)
            foll = _walk(instrs, follower_start, pred, not leader_value)
            return Split(ins.offset, pred, pred_is_leader,
                         sorted(lead - foll), sorted(foll - lead))
        if pred in _dest(ins):
            return None
    return None
