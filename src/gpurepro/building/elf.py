"""ELF sections of CUDA modules (cubins) with pyelftools, side by side.

A cubin is an ELF file. Tile IR cubins carry a `.nv.host` section holding an embedded host
(x86-64) ELF object: callbacks the driver runs on the host at module load and at launch.
Comparing section sets, and listing that embedded object's symbols, shows what a Tile IR
module asks of the driver that a plain nvcc module does not.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

# What other modules use; the rest is this module's own.
__all__ = ["compare", "HOST_SECTION", "section_digests", "sections", "sizes_by_kind"]

HOST_SECTION = ".nv.host"


def _section_type(sec: Any) -> str:
    t = sec["sh_type"]
    return t if isinstance(t, str) else hex(t)


def embedded_object(data: bytes) -> dict[str, Any]:
    """The host object inside `.nv.host`: machine, sections and symbols."""
    try:
        obj = ELFFile(io.BytesIO(data))
    except Exception as exc:  # not an ELF: report what it is instead of failing
        return {"is_elf": False, "error": str(exc), "size": len(data)}
    symbols = []
    symtab = obj.get_section_by_name(".symtab")
    if isinstance(symtab, SymbolTableSection):
        for sym in symtab.iter_symbols():
            kind = sym["st_info"]["type"]
            if not sym.name or kind in ("STT_SECTION", "STT_FILE"):
                continue
            symbols.append({"name": sym.name, "type": kind.removeprefix("STT_"),
                            "bind": sym["st_info"]["bind"].removeprefix("STB_"),
                            "size": sym["st_size"]})
    relocs = sum(s.num_relocations() for s in obj.iter_sections()
                 if isinstance(s, RelocationSection) and s.name.startswith(".rela"))
    return {
        "is_elf": True,
        "machine": obj["e_machine"],
        "type": obj["e_type"],
        "sections": [s.name for s in obj.iter_sections() if s.name],
        "symbols": symbols,
        "relocations": relocs,
        "size": len(data),
    }


def sections(path: Path) -> dict[str, Any]:
    """Sections of one cubin (name -> type, size, flags) and its embedded host object, if any."""
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        out: dict[str, Any] = {"machine": elf["e_machine"], "sections": {}, "host_object": None}
        for sec in elf.iter_sections():
            if not sec.name:
                continue
            out["sections"][sec.name] = {"type": _section_type(sec), "size": sec["sh_size"],
                                         "flags": sec["sh_flags"]}
            if sec.name == HOST_SECTION:
                out["host_object"] = embedded_object(sec.data())
    return out


def section_digests(path: Path) -> dict[str, str]:
    """sha256 of each section's bytes (sections that occupy no file space left out): whether two
    cubins that differ as files carry the same code (``.text.*``) or host object (``.nv.host``)."""
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        return {sec.name: hashlib.sha256(sec.data()).hexdigest() for sec in elf.iter_sections()
                if sec.name and sec["sh_type"] != "SHT_NOBITS"}


def _kind(name: str) -> str:
    # Per-kernel sections carry the kernel name (".text.repro_kernel"); compare by kind.
    for prefix in (".text.", ".nv.info.", ".nv.constant0.", ".nv.shared.", ".rela.text."):
        if name.startswith(prefix):
            return prefix + "*"
    return name


def compare(modules: Mapping[str, Path]) -> dict[str, Any]:
    """Side-by-side section kinds of several cubins, and what only some of them carry."""
    per = {label: sections(p) for label, p in modules.items()}
    kinds = {label: {_kind(n) for n in s["sections"]} for label, s in per.items()}
    all_kinds = sorted(set().union(*kinds.values())) if kinds else []
    table = {k: {label: k in kinds[label] for label in per} for k in all_kinds}
    only_some = {k: [label for label, has in row.items() if has]
                 for k, row in table.items() if not all(row.values())}
    return {"modules": per, "table": table, "differences": only_some}


def sizes_by_kind(comparison: Mapping[str, Any]) -> dict[str, dict[str, int | None]]:
    """Each section kind of a comparison (``compare``): the bytes each module holds of it (None:
    the module has no section of that kind), for its table (gpurepro.report.elf_table)."""
    out: dict[str, dict[str, int | None]] = {}
    for kind, row in comparison["table"].items():
        out[kind] = {}
        for label in comparison["modules"]:
            secs = comparison["modules"][label]["sections"]
            out[kind][label] = (sum(v["size"] for n, v in secs.items() if _kind(n) == kind)
                                if row[label] else None)
    return out
