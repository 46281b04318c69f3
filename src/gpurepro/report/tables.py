"""Markdown tables (GitHub-flavoured), written one way for every report: the header, the
separator and the rows, every cell escaped.

Every string in a table may have come from a document or a trial: a ``|`` in it would end its
cell early and a line break its row, so ``cell`` escapes both. An empty cell is written as one
space (``| |``).
"""

from __future__ import annotations

import re
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


def code(value: object) -> str:
    """``value`` as one Markdown code span that no backtick inside it ends early (CommonMark:
    a fence longer than any run of backticks in the text, and a space inside the fence where
    the text starts or ends with one). In a table, ``cell`` still escapes its ``|``."""
    text = " ".join(str(value).split("\n"))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
