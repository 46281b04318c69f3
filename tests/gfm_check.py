"""A reading of a rendering as GitHub renders it, for the tests: markdown-it-py with HTML on,
GFM's tables and strikethrough, and linkify (linkify-it-py: GFM's autolinks of bare addresses,
``www.`` and e-mail addresses), independent of the renderer's own check (report/gfm.py).

``live`` lists what in a rendering does more than show text and was not the renderer's own: raw
HTML but its ``<details><summary>`` folds (a ``<code>`` in a summary), a picture from an
address, a link but those allowed, in text (outside code, where GitHub mentions and references)
an @mention as GitHub makes one or an ``owner/repo#N`` reference, and a table line with
more cells than its header (a pipe that broke out of its cell)."""

from __future__ import annotations

import html
import re
from collections.abc import Collection

import pytest

markdown_it = pytest.importorskip("markdown_it")
pytest.importorskip("linkify_it")

# GitHub's mention: an @ at the start or after a non-word character, then [A-Za-z0-9-].
MENTION = re.compile(r"(?:^|(?<=[^\w]))@[A-Za-z0-9-]")
REFERENCE = re.compile(r"[\w.-]+/[\w.-]+#\d+")
_SUMMARY = re.compile(r"<details><summary>(.*)</summary>")
_CODE = re.compile(r"<code>[^<]*</code>")


def parser():
    return markdown_it.MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(
        ["table", "strikethrough", "linkify"])


def tokens(text: str):
    stack = list(parser().parse(text))
    while stack:
        t = stack.pop(0)
        yield t
        stack[0:0] = list(t.children or [])


def github_autolink(shown: str) -> bool:
    """Whether GitHub links what linkify-it linked (it is fuzzier: "README.md" is an address
    under Moldova's domain to it): GFM's extended autolinks begin with "www." or a scheme, or
    are e-mail addresses."""
    return shown.lower().startswith("www.") or "://" in shown or "@" in shown


def _cells(line: str) -> int:
    """The cells of a GFM table line: split at every pipe not escaped (code spans too)."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return len(re.split(r"(?<!\\)\|", inner))


def live(text: str, links: Collection[str] = (), inline_html: Collection[str] = ()) -> list[str]:
    found = []
    lines = text.split("\n")
    every = list(tokens(text))
    for t, after in zip(every, [*every[1:], None], strict=True):
        if t.markup == "linkify" and not github_autolink(after.content if after else ""):
            continue
        if t.type == "html_block":
            for line in t.content.strip().splitlines():
                m = _SUMMARY.fullmatch(line)
                if line == "</details>":
                    continue
                if not m:
                    found.append(f"html_block {line!r}")
                    continue
                inner = _CODE.sub(" ", m.group(1))
                if "<" in inner or MENTION.search(html.unescape(inner)) or "://" in inner:
                    found.append(f"summary {m.group(1)!r}")
        elif t.type == "html_inline" and t.content not in inline_html:
            found.append(f"html_inline {t.content!r}")
        elif t.type == "image" and (":" in str(t.attrs.get("src")) or "/" in str(t.attrs.get("src"))):
            found.append(f"image {t.attrs.get('src')!r}")
        elif t.type == "link_open" and t.attrs.get("href") not in links:
            found.append(f"link {t.attrs.get('href')!r}")
        elif t.type == "text" and (MENTION.search(t.content) or REFERENCE.search(t.content)):
            found.append(f"text {t.content!r}")
        elif t.type == "table_open" and t.map:
            start, end = t.map
            want = _cells(lines[start])
            # More cells than the header: a pipe that broke out of its cell. (Fewer is a line
            # under the table that GFM reads as a short row: in an analysis's own Markdown, the
            # author's; a line break out of the renderer's own cells is test_gfm's to check.)
            found += [f"table line {lines[i]!r}" for i in range(start, end) if _cells(lines[i]) > want]
    return found
