"""Every string that goes into a report, an issue comment, compare's output or the results
index, escaped one way, and Markdown tables (GitHub-flavoured) written one way.

A string in a document may have come from anywhere: a trial's output (a driver's crash record,
its final record), a GPU's name, a case's verdict, an edited document. ``escape`` makes it say
only what it says, in the context it goes into, as GitHub renders it (GFM: tables, autolinks of
bare addresses, @mentions and issue references, fences of any length):

- ``"text"`` (headings, bullets, cells, link labels): no HTML (``<`` before a tag, a comment
  or an autolink, ``&`` before an entity, as entities), no link, picture or link definition
  (the brackets that would make one escaped), no code span or fence (backticks escaped), no
  heading, quote, list or fence at the start, no line break (one line, always). What GitHub
  would make live by itself (``LIVE``: an address with a scheme, ``www.``, ``mailto:``, an
  e-mail address, an @mention, ``owner/repo#N``, ``#N``, ``GH-N``) goes into a code span of
  its own, where GitHub links and mentions nothing (a backslash does not stop a mention).
  Emphasis characters and emoji shortcodes are left as they are: at worst they emphasise.
- ``"prose"`` (the sentences of a case's verdict and claims, which carry Markdown on purpose):
  as ``"text"``, but code spans (of any backtick run, as CommonMark pairs them) are kept as
  code spans, each written again with a fence no backtick run inside can close.
- ``"code"`` (an arm's name, a command, a signature): one code span, whose backtick fence is
  longer than any run of backticks inside it; nothing in a code span is markup.
- ``"html"`` (inside an HTML block, e.g. ``<summary>``): entities only, no backslash escapes
  (they would show), what would be live inside ``<code>`` (GitHub mentions and links nothing
  there), one line.
- ``"markdown"`` (Markdown a case's analysis wrote: its tables, lists and headings kept): parsed
  by markdown-it-py (CommonMark with GFM's tables), every code block (fenced with any number of
  backticks or tildes, closed or not, or indented) written again as a fence longer than any
  backtick run it holds, every other line as ``"prose"`` less its start-of-line escapes.

``link`` writes a link only to an http(s) address that is one plain token, and the address as
code otherwise; ``fence`` writes a fenced block no line of its content can close. In a table
``cell`` escapes ``|`` (even inside a code span, as GitHub's tables need) and line breaks.
An empty cell is written as one space (``| |``). report/gfm.py checks a whole rendering
afterwards, as GitHub would parse it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Escaped where they would be markup: a backslash, a backtick; "<" before what could be a tag,
# a comment or an autolink; "&" before what could be an entity; brackets where they would make
# a link, a picture or a link definition ("](", "][", "]:", "!["). A bracket or a "<-" in prose
# ("[claim x]", "a <- b") stays as written.
_MARKUP = re.compile(r"[\\`]|<(?=[A-Za-z/!?])|&(?=#?\w+;)|\](?=[(\[:])|(?<=!)\[")
# What GitHub makes live in text by itself: cmark-gfm's autolinks (an address with a scheme,
# "www.", an e-mail address, mailto:/xmpp:) and GitHub's own filters (an @mention or
# @org/team, a cross-repository reference owner/repo#N or owner/repo@sha, #N, GH-N). Wider
# than GitHub's rules on purpose (any scheme, "www." anywhere, any @ before a name character):
# a match is only written as code.
# The part before each one's mark (a scheme, an e-mail's local part, an owner/repo) is bounded
# (64, 64, 100 and 100 characters: longer than any scheme, local part, owner or repository
# GitHub knows), so that trying a position costs a bounded time; a longer run before a mark is
# matched from where the bound reaches, and the mark is still in the code span. ``live_spans``
# tries only positions near a mark (``_MARK``): escaping is linear in a string's length.
LIVE = re.compile(r"""
      [A-Za-z][A-Za-z0-9+.-]{0,63}://\S*
    | www\.\S*
    | (?:mailto|xmpp):\S+
    | [\w.+-]{0,64}@[A-Za-z0-9_-][\w./-]*
    | [\w.-]{1,100}/[\w.-]{1,100}\#\d+
    | \#\d+
    | GH-\d+
""", re.X | re.I)
# What every match of LIVE holds, and how far before it a match can start.
_MARK = re.compile(r"://|www\.|mailto:|xmpp:|@|\#|GH-", re.I)
_REACH = 210


def live_spans(s: str) -> list[tuple[int, int]]:
    """The (start, end) of each match of LIVE in ``s``, as ``LIVE.finditer`` finds them, in
    time linear in ``len(s)``: a match is looked for only within reach of a mark, and taken
    whole from where it starts."""
    low = s.lower()
    if not any(c in s for c in ":@#") and "www." not in low and "gh-" not in low:
        return []
    spans: list[tuple[int, int]] = []
    at = 0
    for mark in _MARK.finditer(s):
        if mark.start() < at:
            continue
        found = LIVE.search(s, max(at, mark.start() - _REACH), mark.end() + _REACH)
        if found is None:
            continue
        whole = LIVE.match(s, found.start())
        if whole is None:  # cannot be: what matched in part matches whole
            continue
        spans.append(whole.span())
        at = whole.end()
    return spans
# Three tildes after what may come before a fence on its line (spaces, quote and list markers).
_TILDE_FENCE = re.compile(r"^((?:[ \t>]|[*+-][ \t]|\d{1,9}[.)][ \t])*)~(?=~~)")
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(?::\d+)?(?:/[A-Za-z0-9._~%!$&'*+,;=:@/?#-]*)?$")


def _one_line(value: object) -> str:
    return _CONTROL.sub(" ", str(value))


def _plain(s: str, first: bool) -> str:
    def sub(m: re.Match[str]) -> str:
        c = m.group(0)
        return _HTML.get(c) or "\\" + c

    out = _MARKUP.sub(sub, s)
    # At the start of a line (a bullet's, a cell's): no heading, quote, fence or list marker.
    return re.sub(r"^(\s*)([#=~+>-])", r"\1\\\2", out) if first else out


def _pieces(s: str, first: bool = True) -> list[tuple[bool, str]]:
    """``s`` as "text" renders it, in pieces: (a code span, its Markdown)."""
    out, at = [], 0
    for start, end in live_spans(s):
        out += [(False, _plain(s[at:start], first and at == 0)), (True, _code(s[start:end]))]
        at = end
    out.append((False, _plain(s[at:], first and at == 0)))
    return out


def _join(pieces: Iterable[tuple[bool, str]]) -> str:
    """The pieces as one string; two code spans side by side get a space between them (their
    fences would run together into one backtick run and pair otherwise)."""
    out, last_code = [], False
    for is_code, text in pieces:
        if not text:
            continue
        if is_code and last_code:
            out.append(" ")
        out.append(text)
        last_code = is_code
    return "".join(out)


def _text(s: str, first: bool = True) -> str:
    return _join(_pieces(s, first))


def _code(s: str) -> str:
    runs = [len(r) for r in re.findall(r"`+", s)]
    fence = "`" * ((max(runs) + 1) if runs else 1)
    spaced = s.startswith(" ") and s.endswith(" ") and s.strip()
    pad = " " if s.startswith("`") or s.endswith("`") or spaced else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def code_spans(s: str) -> list[tuple[bool, str]]:
    """``s`` as (is a code span, text) pieces, code spans paired as CommonMark pairs them: a
    run of n backticks opens one that the next run of exactly n closes (a run with none to
    close it is text); a span's text as it shows (one space each side stripped when both are
    there and it is not all spaces). Every backtick run is found once and looked up by its
    length: linear in ``len(s)``."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", s)]
    by_length: dict[int, list[int]] = {}  # run length -> the runs of that length, in order
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    seen = dict.fromkeys(by_length, 0)  # per length: how far its list has been passed
    out: list[tuple[bool, str]] = []
    text_from = 0
    i = 0
    while i < len(runs):
        start, end = runs[i]
        same = by_length[end - start]
        while seen[end - start] < len(same) and same[seen[end - start]] <= i:
            seen[end - start] += 1
        if seen[end - start] == len(same):
            i += 1  # no run of n backticks after it: literal backticks
            continue
        j = same[seen[end - start]]
        close_start, close_end = runs[j]
        body = s[end:close_start].replace("\n", " ")
        if body.startswith(" ") and body.endswith(" ") and body.strip():
            body = body[1:-1]
        if start > text_from:
            out.append((False, s[text_from:start]))
        out.append((True, body))
        text_from = close_end
        i = j + 1
    if text_from < len(s):
        out.append((False, s[text_from:]))
    return out


def _prose(s: str, first: bool = True, table: bool = False) -> str:
    """``table``: a line of a GFM table, where a ``|`` inside a code span would end its cell
    (GitHub splits cells before it reads code spans): escaped there, as GitHub reads ``\\|``."""
    pieces: list[tuple[bool, str]] = []
    for i, (is_code, p) in enumerate(code_spans(s)):
        if is_code:
            span = _code(p)
            pieces.append((True, re.sub(r"(?<!\\)\|", r"\\|", span) if table else span))
        else:
            pieces += _pieces(p, first=first and i == 0)
    return _join(pieces)


def _markdown(s: str) -> str:
    """Markdown written by a case's analysis (tables, lists, headings, emphasis and code kept)
    with no HTML, picture, link, mention or reference GitHub would make live, whatever its
    fences: the block structure is markdown-it-py's (CommonMark, GFM's tables)."""
    from markdown_it import MarkdownIt

    lines = s.split("\n")
    blocks: dict[int, tuple[int, list[str]]] = {}  # first line -> (end line, our fence's lines)
    rows: set[int] = set()  # the lines of a table
    for t in MarkdownIt("commonmark").enable("table").parse(s):
        if t.type == "table_open" and t.map:
            rows.update(range(*t.map))
        if t.type in ("fence", "code_block") and t.map:
            start, end = t.map
            info = t.info.split()[0] if t.type == "fence" and t.info.strip() else ""
            body = t.content[:-1] if t.content.endswith("\n") else t.content
            blocks[start] = (end, fence(body, info))
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in blocks:
            end, fenced = blocks[i]
            out += fenced
            i = max(end, i + 1)
            continue
        # A line of text: no fence of tildes can open in it (a backtick one cannot: its
        # backticks are escaped or code spans), whatever comes before the tildes.
        out.append(_TILDE_FENCE.sub(r"\1\\~", _prose(lines[i], first=False, table=i in rows)))
        i += 1
    return "\n".join(out)


def _entities(s: str) -> str:
    return "".join(_HTML.get(c, c) for c in s)


def _html(s: str) -> str:
    out, at = [], 0
    for start, end in live_spans(s):
        out += [_entities(s[at:start]), f"<code>{_entities(s[start:end])}</code>"]
        at = end
    out.append(_entities(s[at:]))
    return "".join(out)


_CONTEXTS = {"text": _text, "prose": _prose, "code": _code, "html": _html}


def escape(value: object, context: str = "text") -> str:
    """``value`` as it may go into Markdown (or HTML) in ``context``: "text", "prose", "code",
    "html", or "markdown" (a case analysis's own Markdown, lines kept) (the module's docstring
    says what each keeps out)."""
    if context == "markdown":
        return _markdown(re.sub(r"[\x00-\x09\x0b-\x1f\x7f]+", " ", str(value)))
    return _CONTEXTS[context](_one_line(value))


def code(value: object) -> str:
    """``escape(value, "code")``: a code span."""
    return escape(value, "code")


def _plain_url(target: str) -> bool:
    return bool(_URL.match(target)) and not any(c in target for c in "()<>\"'`[] ")


def link(label: object, url: object) -> str:
    """A link with an escaped label to ``url`` if it is a plain http(s) address; else the label
    and the address as code (never a link, never a picture)."""
    target = _one_line(url).strip()
    if _plain_url(target):
        return f"[{escape(label)}]({target})"
    return f"{escape(label)} ({code(target)})"


def address(url: object) -> str:
    """An address as it stands (GitHub links a plain http(s) address by itself), or escaped
    text when it is anything else."""
    target = _one_line(url).strip()
    return target if _plain_url(target) else escape(target)


def fence(body: str, info: str = "") -> list[str]:
    """A fenced code block holding ``body`` as it is: its fence is longer than any run of
    backticks in it, so no line of the body can close it."""
    runs = [len(r) for r in re.findall(r"`{3,}", body)]
    marks = "`" * max(3, (max(runs) + 1) if runs else 3)
    return [marks + re.sub(r"[^A-Za-z0-9_+-]", "", info), *body.split("\n"), marks]


def cell(value: object) -> str:
    """``value`` (already Markdown: escaped where it came from) as text that stays inside one
    table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def row(cells: Sequence[object]) -> str:
    """One table line, every cell escaped."""
    return "|" + "|".join(f" {c} " if c else " " for c in map(cell, cells)) + "|"


def table(head: Sequence[object], rows: Iterable[Sequence[object]]) -> list[str]:
    """The table's lines: the header, the separator, a line per row."""
    return [row(head), "|" + "---|" * len(head), *(row(r) for r in rows)]

