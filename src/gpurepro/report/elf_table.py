"""The ELF sections of several cubins side by side, as a GitHub table (gpurepro.building.elf
compares them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .tables import code, row


def sections_table(comparison: Mapping[str, Any], sizes: Mapping[str, Mapping[str, int | None]]
                   ) -> str:
    """A row per section kind, a column per module with its bytes of that kind ("–": none),
    the kinds only some modules carry marked; a section's or module's name (from a cubin, so
    from anywhere) one code span no backtick or pipe in it can break (tables.code)."""
    labels = list(comparison["modules"])
    lines = [row(["section", *(code(lb) for lb in labels)]), "|---|" + "---|" * len(labels)]
    for kind, by_label in sizes.items():
        cells = ["–" if by_label[lb] is None else f"{by_label[lb]} B" for lb in labels]
        mark = " **(differs)**" if kind in comparison["differences"] else ""
        lines.append(row([code(kind) + mark, *cells]))
    return "\n".join(lines)
