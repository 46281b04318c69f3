"""The last check of a rendering for GitHub (the issue comment, the report): parsed as GitHub
parses it, does anything in it do more than show text?

tables.escape makes every document string inert by construction; this reads the whole
rendering afterwards with markdown-it-py (CommonMark with GFM's tables and strikethrough, HTML
on) and finds what GitHub would make live: HTML but the renderer's own ``<details>`` blocks
(and the inline tags named), a picture but the renderer's own (a file beside it), a link but
the ones named, and in text (outside code, where GitHub's autolinks, mentions and references
work) a bare address, ``www.``, an e-mail address, an @mention or an issue reference. What it
finds is a document string the escaping did not hold: the rendering is refused (NotInert),
never posted as it is.
"""

from __future__ import annotations

import html
import re
from collections import deque
from collections.abc import Collection, Iterator
from typing import Any

from ..errors import NotInert
from .tables import live_spans

# The HTML the renderer writes itself: a fold's first and last lines, a <code> in a summary.
_SUMMARY = re.compile(r"<details><summary>(.*)</summary>")
_OWN_CODE = re.compile(r"<code>[^<]*</code>")
# GitHub's mention: an @ not after a word character, then a name.
MENTION = re.compile(r"(?<![A-Za-z0-9_`])@[A-Za-z0-9]")


def _tokens(text: str) -> Iterator[Any]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    stack = deque(md.parse(text))
    while stack:
        t = stack.popleft()
        yield t
        stack.extendleft(reversed(t.children or []))


def _live_text(text: str, links: Collection[str]) -> str | None:
    """What in a run of text GitHub would link, mention or reference (``links``: addresses the
    renderer wrote bare on purpose)."""
    for start, end in live_spans(text):
        if text[start:end] not in links:
            return text[start:end]
    mention = MENTION.search(text)
    return mention.group(0) if mention else None


def problems(text: str, links: Collection[str] = (), inline_html: Collection[str] = ()) -> Iterator[str]:
    """Each thing in ``text`` that GitHub would render as more than text and that the renderer
    did not put there, in words."""
    for t in _tokens(text):
        if t.type == "html_block":
            for line in t.content.strip().splitlines():
                summary = _SUMMARY.fullmatch(line)
                if line == "</details>":
                    continue
                if summary is None:
                    yield f"HTML {line[:60]!r}"
                    continue
                inner = _OWN_CODE.sub(" ", summary.group(1))
                if "<" in inner:
                    yield f"HTML in a summary {summary.group(1)[:60]!r}"
                found = _live_text(html.unescape(inner), links)
                if found:
                    yield f"{found[:60]!r} live in a summary"
        elif t.type == "html_inline" and t.content not in inline_html:
            yield f"inline HTML {t.content[:60]!r}"
        elif t.type == "image":
            src = str(t.attrs.get("src"))
            if ":" in src or "/" in src:
                yield f"a picture from {src[:60]!r}"
        elif t.type == "link_open" and t.attrs.get("href") not in links:
            yield f"a link to {str(t.attrs.get('href'))[:60]!r}"
        elif t.type == "text":
            found = _live_text(t.content, links)
            if found:
                yield f"{found[:60]!r} live in text"


def check(text: str, what: str, links: Collection[str] = (),
          inline_html: Collection[str] = ()) -> str:
    """``text`` if nothing in it is live (``problems``); else NotInert, one line naming the
    first thing found and how many there are."""
    found = list(problems(text, links, inline_html))
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise NotInert(f"{what}: refused, a string of the document could not be made inert for "
                       f"GitHub: {found[0]}{more}")
    return text
