"""SASS: the disassembler finder, the listing parser and the instruction diff, for any case.

- ``disassemble(cubin, tools)``: the cubin's SASS from the first disassembler that reads it
  (``cuobjdump -sass``, then ``nvdisasm``: a 13.x cuobjdump says "does not contain device code"
  for the cubins of ptxas 12.0 ... 12.3.52, which nvdisasm 13.2.51 reads), with every attempt
  and why it failed; ``common_reader`` picks one disassembler for a set of cubins, so that
  listings compared with each other come from the same one.
- ``parse_listing(text)``: kernel -> instructions, from either listing (``Function : NAME`` of
  cuobjdump, ``.text.NAME:`` of nvdisasm); for a kernel listed twice (an executable's fatbin can
  hold one function in more than one ELF image) the longer body wins.
- ``has_opcode``, ``presence``: whether an instruction (``IABS``: the opcode or any of its
  modified forms, ``IABS.*``) is in a kernel: the measured fact "present in release A, absent
  in release B" a verdict can state.
- ``diff(a, b)``: what changed between two kernels' instructions: the opcodes only one side
  has, and the changed runs of instructions (offsets and trailing NOPs left out).
- ``python -m gpurepro.building.sass OUT.cubin TOOL=PATH... -- COMMAND...``: a build step
  (``build_step``) for an artifact whose SASS a case reads: the compiler's command, then the
  SASS of the cubin it wrote, ``sass.json`` beside it, which ``read_builds`` reads back (and
  ``analysis``, a case's analysis of every per-release build of the artifact).

Pure text processing and subprocess, standard library only.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case.toolchain import release, version_of

# What other modules use; the rest is this module's own.
__all__ = [
    "analysis", "common_reader", "diff", "diff_listings", "disassemble", "DISASSEMBLERS",
    "facts", "has_opcode", "Instr", "json", "main", "matches", "message_codes", "opcodes",
    "parse_instr", "parse_listing", "parse_ptxas_verbose", "parse_resource_usage", "presence",
    "read_builds", "resource_usage", "watched"
]

# An instruction line of either disassembler: "/*0040*/  IMAD R9, R9, UR4, R0 ;" with
# cuobjdump's encoding comment "/* 0x... */" after it.
_LINE = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*(?:/\*\s*0x[0-9a-fA-F]+\s*\*/)?\s*$")
_CUOBJDUMP_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_NVDISASM_FUNC = re.compile(r"^\.text\.(\S+):\s*$")
_NVDISASM_SECTION = re.compile(r"^\s*(?://-+|\.section\b)")

# The disassemblers the finder tries, in order, with the arguments that print SASS.
DISASSEMBLERS: tuple[tuple[str, tuple[str, ...]], ...] = (("cuobjdump", ("-sass",)),
                                                         ("nvdisasm", ()))


@dataclass
class Instr:
    offset: int
    pred: str | None  # "@!P0", "@P1", "@UP0" ...
    opcode: str
    operands: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        ops = ", ".join(self.operands)
        return f"{self.pred + ' ' if self.pred else ''}{self.opcode}{' ' + ops if ops else ''}"

    def is_op(self, name: str) -> bool:
        """The opcode is ``name`` or a modified form of it (``IABS`` matches ``IABS.X``)."""
        return self.opcode == name or self.opcode.startswith(name + ".")


def _split_operands(rest: str) -> list[str]:
    """Operands split at the commas outside brackets (``desc[UR4][R2.64]``, ``c[0x0][0x28]``)."""
    parts, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_instr(offset: int, body: str) -> Instr:
    body = body.strip().rstrip(";").strip()
    pred = None
    if body.startswith("@"):
        pred, _, body = body.partition(" ")
        body = body.strip()
    opcode, _, rest = body.partition(" ")
    return Instr(offset, pred, opcode, _split_operands(rest.strip()))


def parse_listing(text: str) -> dict[str, list[Instr]]:
    """Kernel name -> its instructions, from a ``cuobjdump -sass`` or an ``nvdisasm`` listing.

    In nvdisasm's, a kernel's code ends at the next section; directives (``.byte``, labels)
    are not instructions. For a name seen twice the longer body wins."""
    funcs: dict[str, list[Instr]] = {}
    current: list[Instr] | None = None
    name: str | None = None
    sectioned = False

    def close() -> None:
        if name is not None and current is not None and len(current) > len(funcs.get(name, [])):
            funcs[name] = current

    for line in text.splitlines():
        m = _CUOBJDUMP_FUNC.match(line) or _NVDISASM_FUNC.match(line)
        if m:
            close()
            name, current, sectioned = m.group(1), [], m.re is _NVDISASM_FUNC
            continue
        if sectioned and _NVDISASM_SECTION.match(line):
            close()
            name, current, sectioned = None, None, False
            continue
        m = _LINE.match(line)
        if m and current is not None and not m.group(2).startswith("."):
            current.append(parse_instr(int(m.group(1), 16), m.group(2)))
    close()
    return {k: v for k, v in funcs.items() if v}


def opcodes(listing: Mapping[str, Sequence[Instr]]) -> dict[str, list[str]]:
    """Kernel -> its opcode sequence: what two disassemblers of one cubin must agree on."""
    return {name: [i.opcode for i in instrs] for name, instrs in sorted(listing.items())}


def has_opcode(instrs: Iterable[Instr], name: str) -> bool:
    return any(i.is_op(name) for i in instrs)


def presence(listing: Mapping[str, Sequence[Instr]],
             watch: Iterable[tuple[str, str]]) -> dict[str, bool | None]:
    """``"kernel:OPCODE"`` -> whether the kernel has that instruction (None: no such kernel)."""
    return {f"{k}:{op}": (has_opcode(listing[k], op) if k in listing else None) for k, op in watch}


def matches(instr: Instr, pattern: str) -> bool:
    """Whether one instruction is ``pattern``: an opcode alone (``IABS``, which ``IABS.X``
    also is), or an instruction with operands, with ``*`` and ``?`` as wildcards
    (``VIMNMX.RELU R0, R2, 0x5, PT``, ``VIMNMX* *, 0x5, *``: an immediate), matched against its
    text with and without its predicate."""
    if not any(c in pattern for c in " *?[,"):
        return instr.is_op(pattern)
    text = instr.text
    bare = text.split(" ", 1)[1] if instr.pred and " " in text else text
    return fnmatch.fnmatchcase(text, pattern) or fnmatch.fnmatchcase(bare, pattern)


def watched(listing: Mapping[str, Sequence[Instr]],
            watch: Iterable[tuple[str, str]]) -> dict[str, bool | int | None]:
    """``"kernel:PATTERN"`` -> what the kernel shows of it (None: no such kernel): for a
    pattern (``matches``), whether an instruction is it; for ``#PATTERN``, how many are (a fix
    that adds one more of the same instruction changes the count, not the presence). Plain
    opcodes give what ``presence`` gives."""
    out: dict[str, bool | int | None] = {}
    for k, pattern in watch:
        if k not in listing:
            out[f"{k}:{pattern}"] = None
        elif pattern.startswith("#"):
            out[f"{k}:{pattern}"] = sum(1 for i in listing[k] if matches(i, pattern[1:]))
        else:
            out[f"{k}:{pattern}"] = any(matches(i, pattern) for i in listing[k])
    return out


# What ``cuobjdump -res-usage`` prints per kernel: ``Function NAME:`` then ``KEY:VALUE`` pairs.
_RES_FUNCTION = re.compile(r"^\s*Function\s+([^\s:]+)\s*:\s*$")
_RES_PAIR = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")
# A ptxas diagnostic's code, as in "(C7517) warpgroup.wait is injected ...".
MESSAGE_CODE = re.compile(r"\((C\d{4})\)")


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """kernel -> {"REG": 168, "STACK": 0, "SHARED": 0, "LOCAL": 0, ...} from ``cuobjdump
    -res-usage``'s text (registers per thread, stack, shared and local (spill) bytes)."""
    out: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _RES_FUNCTION.match(line)
        if m:
            current = m.group(1)
            out[current] = {}
        elif current is not None and _RES_PAIR.search(line):
            out[current].update({k: int(v) for k, v in _RES_PAIR.findall(line)})
    return out


def resource_usage(cubin: Path, cuobjdump: Path | None) -> dict[str, dict[str, int]] | None:
    """``parse_resource_usage`` of the cubin, or None where no cuobjdump reads it."""
    if cuobjdump is None:
        return None
    try:
        done = subprocess.run([str(cuobjdump), "-res-usage", str(cubin)], capture_output=True,
                              text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_resource_usage(done.stdout) if done.returncode == 0 else None


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_BYTES = re.compile(r"(\d+) bytes (stack frame|spill stores|spill loads)")
_PTXAS_KEYS = {"stack frame": "STACK", "spill stores": "SPILL_STORES", "spill loads": "SPILL_LOADS"}


def parse_ptxas_verbose(text: str) -> dict[str, dict[str, int]]:
    """kernel -> {"REG": 106, "STACK": 0, "SPILL_STORES": 0, "SPILL_LOADS": 0} from ``ptxas
    -v``'s lines (``Compiling entry function 'K'`` then ``Used N registers`` and the bytes of
    stack frame and spills), for cubins ``cuobjdump -res-usage`` cannot read."""
    out: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            current = m.group(1)
            out.setdefault(current, {})
            continue
        if current is None:
            continue
        used = _PTXAS_USED.search(line)
        if used:
            out[current]["REG"] = int(used.group(1))
        for n, what in _PTXAS_BYTES.findall(line):
            out[current][_PTXAS_KEYS[what]] = int(n)
    return out


def message_codes(text: str) -> list[str]:
    """The diagnostic codes (``C7517``) a build's output names, sorted, once each."""
    return sorted(set(MESSAGE_CODE.findall(text)))


def facts(listing: Mapping[str, Sequence[Instr]], watch: Iterable[tuple[str, str]],
          resources: Mapping[str, Mapping[str, int]] | None, messages: Iterable[str]
          ) -> dict[str, bool | int | None]:
    """``watched`` with two more kinds of pattern: ``res:KEY`` (a kernel's resource usage,
    None where it was not read) and ``msg:CODE`` (whether the build's output named it; the
    kernel is ``*``)."""
    watch = list(watch)
    out = watched(listing, [w for w in watch if not w[1].startswith(("res:", "msg:"))])
    said = set(messages)
    for k, pattern in watch:
        if pattern.startswith("res:"):
            out[f"{k}:{pattern}"] = ((resources or {}).get(k) or {}).get(pattern[4:])
        elif pattern.startswith("msg:"):
            out[f"{k}:{pattern}"] = pattern[4:] in said
    return {f"{k}:{p}": out[f"{k}:{p}"] for k, p in watch}


# ---------------------------------------------------------------------------------- the diff


def _body(instrs: Sequence[Instr]) -> list[str]:
    """Instruction texts without offsets, the alignment NOPs after the last EXIT/BRA cut."""
    texts = [i.text for i in instrs]
    while texts and texts[-1] == "NOP":
        texts.pop()
    return texts


def diff(a: Sequence[Instr], b: Sequence[Instr]) -> dict[str, Any]:
    """How kernel ``b`` differs from kernel ``a``: ``only_a`` / ``only_b`` (opcodes one side
    has more often, with the count), ``changes`` (each run of instructions replaced, removed or
    added: ``{"a": [...], "b": [...]}``) and ``same`` (every instruction alike)."""
    ta, tb = _body(a), _body(b)
    ca, cb = Counter(i.opcode for i in a if i.opcode != "NOP"), Counter(i.opcode for i in b if i.opcode != "NOP")
    changes = [{"a": ta[i1:i2], "b": tb[j1:j2]}
               for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes()
               if tag != "equal"]
    return {"same": ta == tb,
            "only_a": dict(sorted((ca - cb).items())), "only_b": dict(sorted((cb - ca).items())),
            "changes": changes}


def diff_listings(a: Mapping[str, Sequence[Instr]], b: Mapping[str, Sequence[Instr]]
                  ) -> dict[str, dict[str, Any]]:
    """``diff`` of every kernel either listing has (a kernel on one side only: all of it)."""
    return {k: diff(a.get(k, []), b.get(k, [])) for k in sorted(set(a) | set(b))}


# ---------------------------------------------------------------------------------- the finder


@dataclass
class Disassembly:
    """A cubin's SASS: which disassembler read it (None: none could), its listing, and every
    attempt (``{"tool": {"status": "ok"|"unreadable"|"timeout"|"missing", ...}}``)."""

    read_by: str | None
    listing: dict[str, list[Instr]]
    attempts: dict[str, dict[str, Any]]

    def record(self) -> dict[str, Any]:
        """JSON: the reader, the attempts and per kernel its instruction texts."""
        return {"read_by": self.read_by, "attempts": self.attempts,
                "kernels": {k: [i.text for i in v] for k, v in sorted(self.listing.items())}}


def _first_line(text: str, cubin: Path) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line.replace(str(cubin), cubin.name)


def run_disassembler(tool: Path, args: Sequence[str], cubin: Path,
                     timeout: float = 120) -> tuple[dict[str, Any], dict[str, list[Instr]]]:
    """One disassembler on one cubin: the attempt's record and what it listed."""
    try:
        done = subprocess.run([str(tool), *args, str(cubin)], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "timeout_s": timeout}, {}
    except OSError as exc:
        return {"status": "missing", "reason": f"{type(exc).__name__}: {exc}"}, {}
    listing = parse_listing(done.stdout) if done.returncode == 0 else {}
    attempt: dict[str, Any] = {"status": "ok" if listing else "unreadable",
                               "exit_status": done.returncode}
    if not listing:
        attempt["reason"] = (_first_line(done.stderr + done.stdout, cubin)
                             or "no kernel in its listing")
    elif done.stderr.strip():
        attempt["warning"] = _first_line(done.stderr, cubin)
    return attempt, listing


def disassemble(cubin: Path, tools: Mapping[str, Path | None],
                order: Sequence[str] | None = None) -> Disassembly:
    """The cubin's SASS from the first of ``order`` (default: cuobjdump, nvdisasm) that reads
    it; ``tools`` maps a disassembler's name to its program (None: not installed)."""
    args = dict(DISASSEMBLERS)
    attempts: dict[str, dict[str, Any]] = {}
    for name in order or [n for n, _ in DISASSEMBLERS]:
        tool = tools.get(name)
        if tool is None:
            attempts[name] = {"status": "missing", "reason": f"{name} is not installed here"}
            continue
        attempt, listing = run_disassembler(Path(tool), args.get(name, ()), cubin)
        attempts[name] = attempt
        if listing:
            return Disassembly(name, listing, attempts)
    return Disassembly(None, {}, attempts)


def common_reader(cubins: Sequence[Path], tools: Mapping[str, Path | None]
                  ) -> tuple[list[Disassembly], str | None]:
    """Every cubin disassembled, by one disassembler where one reads them all (the first such
    of cuobjdump, nvdisasm: listings then compare instruction for instruction), else each by
    the first that reads it; and the common reader (None: there is none)."""
    firsts = [disassemble(c, tools) for c in cubins]
    if all(d.read_by == (firsts[0].read_by if firsts else None) for d in firsts):
        return firsts, firsts[0].read_by if firsts else None
    for name, _ in DISASSEMBLERS:
        if tools.get(name) is None:
            continue
        again = [d if d.read_by == name else disassemble(c, tools, order=(name,))
                 for c, d in zip(cubins, firsts, strict=True)]
        if all(d.read_by == name for d in again):
            for d, first in zip(again, firsts, strict=True):
                d.attempts = {**first.attempts, **d.attempts}
            return again, name
    return firsts, None


# ---------------------------------------------------------------------------------- a build step


def build_step(cubin: Path, tools: Mapping[str, Path], command: Sequence[str]) -> int:
    """Run ``command`` (a compiler that writes ``cubin``), then write ``sass.json`` beside it:
    the cubin's SASS by the first of ``tools`` (in their order) that reads it
    (``Disassembly.record``) and each tool's release (``versions``: ``{"nvdisasm":
    "13.2.51"}``). The exit status: the command's where it failed or wrote no cubin, else 0 (a
    cubin no disassembler reads is recorded so, ``read_by`` null)."""
    done = subprocess.run(list(command), check=False)
    if done.returncode != 0 or not cubin.is_file():
        print(f"gpurepro.building.sass: {command[0]} exited with status {done.returncode} "
              f"{'without writing' if not cubin.is_file() else 'after writing'} {cubin}",
              file=sys.stderr)
        return done.returncode or 1
    listed = disassemble(cubin, dict(tools), order=list(tools))
    record = {**listed.record(), "versions": {n: release(version_of(p)) for n, p in tools.items()}}
    (cubin.parent / "sass.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0


def read_builds(paths: Mapping[str, Path], artifact: str) -> dict[str, dict[str, Any]]:
    """The SASS ``build_step`` wrote beside each build of ``artifact``, an artifact built per
    release (``<artifact>_<level>`` in ``paths``, a case analysis's argument), by level:
    ``{"disassembler", "version", "listing": {kernel: [instruction, ...]}}``."""
    out = {}
    for name, path in sorted(paths.items()):
        written = Path(path).parent / "sass.json"
        if name.startswith(f"{artifact}_") and written.is_file():
            s = json.loads(written.read_text())
            out[name[len(artifact) + 1:]] = {"disassembler": s["read_by"], "listing": s["kernels"],
                                             "version": s["versions"].get(s["read_by"])}
    return out


def analysis(artifact: str, per: str) -> Callable[[Mapping[str, Path]], dict[str, Any]]:
    """A case analysis (``Case.analyses``) of ``artifact``, built per the factor ``per`` with
    ``build_step``: ``{"available": ..., "by_<per>": read_builds(...)}``."""
    def analyze(paths: Mapping[str, Path]) -> dict[str, Any]:
        by = read_builds(paths, artifact)
        return {"available": bool(by), f"by_{per}": by}
    return analyze


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cut = args.index("--") if "--" in args else len(args)
    head, command = args[:cut], args[cut + 1:]
    tools = dict(t.split("=", 1) for t in head[1:] if "=" in t)
    if (len(head) < 2 or len(tools) != len(head) - 1 or not command
            or not set(tools) <= {n for n, _ in DISASSEMBLERS}):
        print("usage: python -m gpurepro.building.sass OUT.cubin TOOL=PATH... -- COMMAND..."
              f" (TOOL: {', '.join(n for n, _ in DISASSEMBLERS)})", file=sys.stderr)
        return 2
    return build_step(Path(head[0]), {n: Path(p) for n, p in tools.items()}, command)


if __name__ == "__main__":
    sys.exit(main())
