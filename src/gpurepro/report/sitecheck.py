"""The built documentation site checked as a reader meets it: ``check_site(SITE_DIR)``. The
site's build hook (docs/hooks/results.py) runs it after every build, so `make docs` fails on a
problem; tests/report/test_site_html.py runs it on a site built in the test.

Each HTML page is read with the standard library's parser, and a problem is one line naming
the page:

- a list rendered as a paragraph: a ``<p>`` whose text has a line starting with a list marker
  ("- ", "* ", "+ ", "1. "), which is what Python-Markdown makes of a list with no blank line
  before it (GitHub shows a list there);
- a page titled by its file name: a ``<title>`` holding a run's time stamp (20261205T110123Z),
  "redacted", a file suffix, or the title a site builder derives from the file name when the
  page gives none;
- anything loaded from outside the site: a stylesheet, font, script, picture or frame from an
  address with a host (a web font, a CDN), or a stylesheet of the site that imports one;
- a broken internal link: an ``href``/``src`` inside the site whose file is not there, or whose
  ``#fragment`` names no element of the page it points to;
- with ``--root`` and ``--repo-url``: a link into the repository (``URL/blob/main/PATH``,
  ``URL/tree/main/PATH``) whose PATH is not in the checkout.

``summary`` says them in one message: each problem on its own line (at most ``LIMIT``, then
how many more).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

# What other modules use; the rest is this module's own.
__all__ = [
    "check_site", "LIMIT", "list_problems", "Page", "read_page", "summary", "title_problems"
]

# A line of a paragraph that a list would have started on GitHub.
LIST_LINE = re.compile(r"\n[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S[^\n]*")
# What a title made from a file name carries: a run's stamp, the redaction mark, a suffix.
FILE_NAME_TITLE = re.compile(r"\d{8}T\d{6}Z|redacted|\.(?:md|json|html|png|svg|jsonl)\b", re.I)
# Elements and attributes that make a browser load something for the page (not links to follow).
LOADS = {("link", "href"), ("script", "src"), ("img", "src"), ("source", "src"),
         ("iframe", "src"), ("audio", "src"), ("video", "src"), ("embed", "src"),
         ("object", "data")}
CSS_URL = re.compile(r"""@import\s+(?:url\()?\s*['"]?([^'")\s;]+)|url\(\s*['"]?([^'")\s]+)""")
LIMIT = 40


@dataclass
class Page:
    """What the checks need of one HTML page."""

    title: str = ""
    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)  # href/src to follow or to find
    loads: list[str] = field(default_factory=list)  # what the page loads (stylesheets, scripts, ...)
    paragraphs: list[str] = field(default_factory=list)  # each <p>'s text, code left out
    styles: list[str] = field(default_factory=list)  # <style> blocks and style="" attributes


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._in: list[str] = []
        self._paragraph: list[str] | None = None
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        for key in ("id", "name"):
            if values.get(key) and (key == "id" or tag == "a"):
                self.page.ids.add(values[key])
        for key in ("href", "src", "data"):
            if key in values:
                (self.page.loads if (tag, key) in LOADS else self.page.links).append(values[key])
        if values.get("style"):
            self.page.styles.append(values["style"])
        if tag == "p":
            self._paragraph = []
        elif tag in ("code", "pre") and self._paragraph is not None:
            self._code += 1
        if tag not in ("br", "img", "link", "meta", "input", "hr", "source"):
            self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self._paragraph is not None:
            self.page.paragraphs.append("".join(self._paragraph))
            self._paragraph = None
        elif tag in ("code", "pre") and self._code:
            self._code -= 1
        if tag in self._in:
            while self._in and self._in.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        where = self._in[-1] if self._in else ""
        if where == "title":
            self.page.title += data
        elif where == "style":
            self.page.styles.append(data)
        if self._paragraph is not None and not self._code:
            self._paragraph.append(data)


def read_page(text: str) -> Page:
    reader = _Reader()
    reader.feed(text)
    reader.close()
    return reader.page


def derived_title(path: str) -> str:
    """The title a MkDocs-style builder gives a page that names none, from its file name."""
    parts = path.split("/")
    stem = parts[-2] if parts[-1] == "index.html" and len(parts) > 1 else parts[-1]
    stem = stem.rsplit(".", 1)[0] if stem.endswith(".html") else stem
    title = stem.replace("-", " ").replace("_", " ")
    return title.capitalize() if title.lower() == title else title


def page_title(page: Page, site_name: str | None) -> str:
    title = " ".join(page.title.split())
    if site_name and title.endswith(f" - {site_name}"):
        title = title[: -len(site_name) - 3]
    return title


def _outside(url: str) -> bool:
    parts = urlsplit(url.strip())
    return bool(parts.netloc) or url.strip().startswith("//")


def list_problems(page: Page) -> Iterator[str]:
    for text in page.paragraphs:
        m = LIST_LINE.search(text)
        if m:
            line = m.group(0).strip()
            yield f"a list rendered as a paragraph: {line[:60]!r}"


def title_problems(page: Page, path: str, site_name: str | None) -> Iterator[str]:
    title = page_title(page, site_name)
    if not title:
        yield "no title"
    elif FILE_NAME_TITLE.search(title):
        yield f"titled by a file name ({title!r})"
    elif not path.endswith("index.html") and title == derived_title(path) and "/" in path:
        yield f"titled by its file name ({title!r})"


def load_problems(page: Page) -> Iterator[str]:
    for url in page.loads:
        if _outside(url):
            yield f"loads {url[:80]!r} from outside the site"
    for style in page.styles:
        for a, b in CSS_URL.findall(style):
            if _outside(a or b):
                yield f"its style loads {(a or b)[:80]!r} from outside the site"


def _resolve(site: Path, page_path: str, url: str) -> tuple[str | None, str]:
    """(the site file a relative link points to, or None when it leaves the folder; fragment)."""
    target, fragment = urldefrag(url)
    if not target:
        return page_path, fragment
    base = page_path.rsplit("/", 1)[0] if "/" in page_path else ""
    parts: list[str] = []
    for part in (f"{base}/{unquote(target)}" if base else unquote(target)).split("/"):
        if part == "..":
            if not parts:
                return None, fragment
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    rel = "/".join(parts)
    if not rel or (site / rel).is_dir() or target.endswith("/"):
        rel = f"{rel}/index.html" if rel else "index.html"
    return rel, fragment


def check_site(site: Path, root: Path | None = None, repo_url: str | None = None,
               site_name: str | None = None) -> list[str]:
    """Every problem of the built site at ``site``, one line each ("PAGE: what")."""
    problems: list[str] = []
    pages: dict[str, Page] = {}
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site).as_posix()
        pages[rel] = read_page(html.read_text(errors="replace"))
    for css in sorted(site.rglob("*.css")):
        for a, b in CSS_URL.findall(css.read_text(errors="replace")):
            if _outside(a or b):
                problems.append(f"{css.relative_to(site).as_posix()}: loads {(a or b)[:80]!r} "
                                f"from outside the site")
    repo = (repo_url or "").rstrip("/")
    for rel, page in pages.items():
        if rel == "404.html":  # the theme's page for a missing address: nothing links to it
            continue
        found = [*list_problems(page), *title_problems(page, rel, site_name), *load_problems(page)]
        for url in page.links + [u for u in page.loads if not _outside(u)]:
            if repo and root is not None and url.startswith(repo + "/"):
                m = re.match(r"(?:blob|tree)/main/([^#?]+)", url[len(repo) + 1:])
                if m and not (root / unquote(m.group(1))).exists():
                    found.append(f"links {url!r}, and {m.group(1)} is not in the repository")
                continue
            if _outside(url) or urlsplit(url).scheme:
                continue
            target, fragment = _resolve(site, rel, url)
            if target is None or not (site / target).is_file():
                found.append(f"links {url!r}, which is not in the site")
            elif fragment and target.endswith(".html") and target in pages \
                    and unquote(fragment) not in pages[target].ids:
                found.append(f"links {url!r}, and {target} has no #{fragment}")
        problems += [f"{rel}: {what}" for what in dict.fromkeys(found)]
    return problems


def summary(problems: list[str], pages: int) -> str:
    """The problems of a site of ``pages`` pages, one per line, at most LIMIT of them."""
    lines = problems[:LIMIT] + ([f"... and {len(problems) - LIMIT} more"]
                                if len(problems) > LIMIT else [])
    return (f"the built site ({pages} pages) has {len(problems)} problem(s):\n"
            + "\n".join(f"  {line}" for line in lines))
