"""A case analysis (``Case.analyses``) of built cubins' ELF sections side by side: which
sections each carries, which differ between them, and the host object an ``.nv.host`` section
embeds, with a Markdown table for the report. The manifest that declares it loads with the
standard library alone; pyelftools is imported when the analysis runs (at record time).

    analyses={"sections": elf_analysis.sections_analysis({"tile": "tile_cubin", "cuda": "cuda_cubin"})}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["sections_analysis"]


def sections_analysis(modules: Mapping[str, str]) -> Callable[[Mapping[str, Path]], dict[str, Any]]:
    """The analysis of the artifacts ``modules`` names (label -> artifact): ``differences``,
    ``host_symbols`` (label -> the embedded host object's symbol names), ``modules`` (label ->
    its sections and host object) and ``markdown``; an ``error`` where none was built."""
    def analyze(artifacts: Mapping[str, Path]) -> dict[str, Any]:
        # pyelftools: imported here, so that the manifest loads on a GPU node without it.
        from ..report.elf_table import sections_table
        from . import elf

        present = {label: artifacts[name] for label, name in modules.items() if name in artifacts}
        if not present:
            return {"error": "no cubin available to analyse"}
        comparison = elf.compare(present)
        host_symbols = {label: [s["name"] for s in (m["host_object"] or {}).get("symbols", [])]
                        for label, m in comparison["modules"].items() if m["host_object"]}
        md = [sections_table(comparison, elf.sizes_by_kind(comparison)), ""]
        for label, m in comparison["modules"].items():
            obj = m["host_object"]
            if not obj:
                continue
            md.append(f"`{label}`: `.nv.host` holds a {obj.get('machine')} {obj.get('type')} "
                      f"({obj.get('size')} B, {obj.get('relocations')} relocations) with symbols:")
            md += [f"- `{s['name']}` ({s['bind'].lower()} {s['type'].lower()}, {s['size']} B)"
                   for s in obj.get("symbols", [])]
            md.append("")
        return {"differences": comparison["differences"], "host_symbols": host_symbols,
                "modules": {label: {"sections": sorted(m["sections"]), "host_object": m["host_object"]}
                            for label, m in comparison["modules"].items()},
                "markdown": "\n".join(md)}
    return analyze
