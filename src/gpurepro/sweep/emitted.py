"""What a cubin carries, from its ELF sections (pyelftools, through gpurepro.building.elf): size, sections,
a digest of its code, the embedded host object of a Tile IR module (`.nv.host`) with its
symbols, and its debug sections. And the line-info check: two tileiras builds of one bytecode
compared section by section.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..building import elf

# What other modules use; the rest is this module's own.
__all__ = ["code_sha256", "facts", "lineinfo_comparison"]

DEBUG_PREFIXES = (".debug_", ".nv_debug", ".nv.tileir.debug")


def is_debug(name: str) -> bool:
    """A debug section itself (its relocation section, `.rela.debug_*`, comes with it): DWARF
    (`.debug_*`), NVIDIA's (`.nv_debug*`), and tileiras' own Tile IR line tables and source text
    (`.nv.tileir.debug_line`, `.nv.tileir.debug_txt.<id>`, from 13.4 on)."""
    return name.startswith(DEBUG_PREFIXES)


def code_sha256(digests: Mapping[str, str]) -> str | None:
    """One digest over the code sections (`.text.<kernel>`): equal for two cubins whose machine
    code is byte-identical, whatever else (debug lines, notes) differs."""
    text = sorted((n, d) for n, d in digests.items() if n.startswith(".text"))
    if not text:
        return None
    return hashlib.sha256("".join(f"{n}\0{d}\0" for n, d in text).encode()).hexdigest()


def facts(path: Path) -> dict[str, Any]:
    """What one cubin emits."""
    secs = elf.sections(path)
    digests = elf.section_digests(path)
    host = secs["host_object"]
    host_section = secs["sections"].get(elf.HOST_SECTION)
    return {
        "size": path.stat().st_size,
        "sections": {n: v["size"] for n, v in secs["sections"].items()},
        "code_sha256": code_sha256(digests),
        "nv_host": {
            "present": host_section is not None,
            "size": host_section["size"] if host_section else None,
            "sha256": digests.get(elf.HOST_SECTION),
            "object": None if host is None else {
                k: host.get(k) for k in ("is_elf", "machine", "type", "size", "relocations", "symbols")
            },
        },
        "debug_sections": {n: v["size"] for n, v in secs["sections"].items() if is_debug(n)},
    }


def lineinfo_comparison(check: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The cell's two tileiras builds (with and without --lineinfo) section by section: whether
    `.text` and `.nv.host` are byte-identical, which sections only one has or that differ, and
    whether the --lineinfo build is the exported cubin itself (the invocation is cuda.tile's)."""
    builds = check["builds"]
    with_li, without = (root / builds["lineinfo"]["path"], root / builds["no_lineinfo"]["path"])
    a, b = elf.section_digests(with_li), elf.section_digests(without)
    text_a = {n: d for n, d in a.items() if n.startswith(".text")}
    text_b = {n: d for n, d in b.items() if n.startswith(".text")}
    return {
        "variant": check["variant"],
        "bytecode_sha256": check["bytecode"]["sha256"],
        "tileiras_args": {k: v["tileiras_args"] for k, v in builds.items()},
        "lineinfo_sha256": builds["lineinfo"]["sha256"],
        "no_lineinfo_sha256": builds["no_lineinfo"]["sha256"],
        "lineinfo_is_export": builds["lineinfo"]["sha256"] == check["export"],
        "text_identical": bool(text_a) and text_a == text_b,
        "nv_host_identical": elf.HOST_SECTION in a and a.get(elf.HOST_SECTION) == b.get(elf.HOST_SECTION),
        "only_with_lineinfo": sorted(set(a) - set(b)),
        "only_without_lineinfo": sorted(set(b) - set(a)),
        "differing": sorted(n for n in set(a) & set(b) if a[n] != b[n]),
        "debug_sections": {"lineinfo": sorted(n for n in a if is_debug(n)),
                           "no_lineinfo": sorted(n for n in b if is_debug(n))},
    }
