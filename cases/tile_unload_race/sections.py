"""Analysis: ELF sections of the Tile IR and plain CUDA cubins, side by side (pyelftools)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

MODULES = {
    "tile": "tile_cubin",
    "tile_other": "tile_cubin_other",
    "cuda": "cuda_cubin",
    "cuda_globals": "cuda_cubin_globals",
}


def analyze(artifacts: Mapping[str, Path]) -> dict[str, Any]:
    # Imported here: the manifest must load with the standard library alone (GPU nodes).
    from gpurepro.building import elf
    from gpurepro.report.elf_table import sections_table

    present = {label: artifacts[name] for label, name in MODULES.items() if name in artifacts}
    if not present:
        return {"error": "no cubin available to analyse"}
    comparison = elf.compare(present)
    host_symbols = {
        label: [s["name"] for s in (m["host_object"] or {}).get("symbols", [])]
        for label, m in comparison["modules"].items()
        if m["host_object"]
    }
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
    return {
        "differences": comparison["differences"],
        "host_symbols": host_symbols,
        "modules": {label: {"sections": sorted(m["sections"]), "host_object": m["host_object"]}
                    for label, m in comparison["modules"].items()},
        "markdown": "\n".join(md),
    }
