"""Lists on the documentation site as GitHub shows them: a Python-Markdown extension.

GitHub's Markdown (CommonMark) starts a list on the line after a paragraph; Python-Markdown,
which MkDocs-style site builders use, needs a blank line before it, and without one the items
run into the paragraph above as one line of text. Reports are written for GitHub
("**Exploratory** (...):" with its bullets on the next line), so on the site every list that
GitHub would start where Python-Markdown would not gets the blank line it needs before it.

Where lists start is what markdown-it-py (CommonMark, GFM's tables) finds, not a pattern: a
line starting with "- " inside a fence, a code block or a paragraph's lazy continuation is
left alone, and an ordered list interrupts a paragraph only from "1.", as on GitHub. Only
top-level lists are touched (a nested one already follows its item's own rules).

``mkdocs.yml`` names it under ``markdown_extensions`` (``gpurepro.report.gfm_lists``); the
tests render pages with the same list (tests/report/test_site_html.py).
"""

from __future__ import annotations

from typing import Any

from markdown.extensions import Extension  # type: ignore[import-untyped]
from markdown.preprocessors import Preprocessor  # type: ignore[import-untyped]

# What other modules use; the rest is this module's own.
__all__ = ["blank_before_lists"]


def list_starts(text: str) -> list[int]:
    """The 0-based lines where GitHub starts a top-level list right after a non-blank line."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    lines = text.split("\n")
    starts = []
    for token in md.parse(text):
        if token.type in ("bullet_list_open", "ordered_list_open") and token.level == 0 \
                and token.map and token.map[0] > 0 and lines[token.map[0] - 1].strip():
            starts.append(token.map[0])
    return starts


def blank_before_lists(text: str) -> str:
    """``text`` with a blank line before each list that GitHub starts without one."""
    starts = set(list_starts(text))
    if not starts:
        return text
    return "\n".join(("\n" if i in starts else "") + line
                     for i, line in enumerate(text.split("\n")))


class _BlankBeforeLists(Preprocessor):  # type: ignore[misc]  # Python-Markdown is untyped
    def run(self, lines: list[str]) -> list[str]:
        return blank_before_lists("\n".join(lines)).split("\n")


class GitHubLists(Extension):  # type: ignore[misc]  # Python-Markdown is untyped
    """Lists start where GitHub starts them (``blank_before_lists``)."""

    def extendMarkdown(self, md: Any) -> None:  # noqa: N802 (Python-Markdown's name)
        # Before fenced code (25) and raw HTML (20) are set aside, after whitespace is
        # normalized (30): markdown-it-py sees the page as GitHub would.
        md.preprocessors.register(_BlankBeforeLists(md), "gfm_lists", 27)


def makeExtension(**kwargs: Any) -> GitHubLists:  # noqa: N802 (Python-Markdown's entry point)
    return GitHubLists(**kwargs)
