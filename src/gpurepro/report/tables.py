"""Every string that goes into a report, an issue comment, compare's output or the results
index, escaped one way, and Markdown tables (GitHub-flavoured) written one way.

A string in a document may have come from anywhere: a trial's output (a driver's crash record,
its final record), a GPU's name, a case's verdict, an edited document. ``escape`` makes it say
only what it says, in the context it goes into:

- ``"text"`` (headings, bullets, cells, link labels): no HTML (``<`` before a tag, a comment
  or an autolink, ``&`` before an entity, as entities), no link, picture or link definition
  (the brackets that would make one escaped), no code span or fence (backticks escaped), no
  @mention (a zero-width space after ``@``), no heading, quote, list or fence at the start, no
  line break (one line, always). Emphasis characters are left as they are: at worst they
  emphasise.
- ``"prose"`` (the sentences of a case's verdict and claims, which carry Markdown on purpose):
  as ``"text"``, but single-backtick code spans are kept as code spans.
- ``"code"`` (an arm's name, a command, a signature): one code span, whose backtick fence is
  longer than any run of backticks inside it; nothing in a code span is markup.
- ``"html"`` (inside an HTML block, e.g. ``<summary>``): entities only, no backslash escapes
  (they would show), no @mention, one line.
- ``"markdown"`` (Markdown a case's analysis wrote: its tables and code kept): no HTML, link,
  picture or @mention outside its code.

``link`` writes a link only to an http(s) address that is one plain token, and the address as
code otherwise; ``fence`` writes a fenced block no line of its content can close. In a table
``cell`` escapes ``|`` (even inside a code span, as GitHub's tables need) and line breaks.
An empty cell is written as one space (``| |``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Escaped where they would be markup: a backslash, a backtick, an @; "<" before what could be
# a tag, a comment or an autolink; "&" before what could be an entity; brackets where they
# would make a link, a picture or a link definition ("](", "][", "]:", "!["). A bracket or a
# "<-" in prose ("[claim x]", "a <- b") stays as written.
_MARKUP = re.compile(r"[\\`@]|<(?=[A-Za-z/!?])|&(?=#?\w+;)|\](?=[(\[:])|(?<=!)\[")
# A single-backtick code span in prose: kept (its content cannot be markup).
_SPAN = re.compile(r"`([^`]+)`")
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(?::\d+)?(?:/[A-Za-z0-9._~%!$&'*+,;=:@/?#-]*)?$")
ZWSP = "&#8203;"  # after an @: GitHub makes no mention of it


def _one_line(value: object) -> str:
    return _CONTROL.sub(" ", str(value))


def _text(s: str, first: bool = True) -> str:
    def sub(m: re.Match[str]) -> str:
        c = m.group(0)
        if c in _HTML:
            return _HTML[c]
        if c == "@":
            return "@" + ZWSP
        return "\\" + c

    out = _MARKUP.sub(sub, s)
    # At the start of a line (a bullet's, a cell's): no heading, quote, fence or list marker.
    return re.sub(r"^(\s*)([#=~+>-])", r"\1\\\2", out) if first else out


def _code(s: str) -> str:
    runs = [len(r) for r in re.findall(r"`+", s)]
    fence = "`" * ((max(runs) + 1) if runs else 1)
    spaced = s.startswith(" ") and s.endswith(" ") and s.strip()
    pad = " " if s.startswith("`") or s.endswith("`") or spaced else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _prose(s: str) -> str:
    out, at = [], 0
    for m in _SPAN.finditer(s):
        out += [_text(s[at:m.start()], first=at == 0), _code(m.group(1))]
        at = m.end()
    out.append(_text(s[at:], first=at == 0))
    return "".join(out)


def _markdown(s: str) -> str:
    """Markdown written by a case's analysis (tables, code, emphasis kept) without HTML, pictures,
    links or @mentions outside its code."""
    out, fenced = [], False
    for line in s.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            out.append(line)
            continue
        if fenced:
            out.append(line)
            continue
        parts = re.split(r"(`[^`]*`)", line)
        out.append("".join(p if p.startswith("`") and p.endswith("`") and len(p) > 1 else
                           p.replace("&", "&amp;").replace("<", "&lt;").replace("@", "@" + ZWSP)
                           .replace("[", "\\[").replace("]", "\\]") for p in parts))
    if fenced:
        out.append("```")
    return "\n".join(out)


def _html(s: str) -> str:
    return "".join(_HTML.get(c, c) for c in s).replace("@", "@" + ZWSP)


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

