"""Markdown tables (GitHub-flavoured), written one way for every report: the header, the
separator and the rows, every cell escaped.

Every string in a table may have come from a document or a trial: a ``|`` in it would end its
cell early and a line break its row, so ``cell`` escapes both. An empty cell is written as one
space (``| |``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def cell(value: object) -> str:
    """``value`` as text that stays inside one table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def row(cells: Sequence[object]) -> str:
    """One table line, every cell escaped."""
    return "|" + "|".join(f" {c} " if c else " " for c in map(cell, cells)) + "|"


def table(head: Sequence[object], rows: Iterable[Sequence[object]]) -> list[str]:
    """The table's lines: the header, the separator, a line per row."""
    return [row(head), "|" + "---|" * len(head), *(row(r) for r in rows)]
