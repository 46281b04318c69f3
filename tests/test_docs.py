"""The README is a page (the package's long description: no relative link), the rest is the
documentation site (docs/, mkdocs.yml), and the site's results pages cover every committed
document, each case's page linking its runs."""

from __future__ import annotations

import json
import re

import pytest

from gpurepro.report.site import pages

from .conftest import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)|<(?:a|img)\b[^>]*(?:href|src)=\"([^\"]+)\"")


def test_the_readme_is_a_page_with_absolute_links_only():
    text = (ROOT / "README.md").read_text()
    assert len(text) <= 8000, len(text)
    links = [a or b for a, b in LINK.findall(text)]
    assert links and [u for u in links if not u.startswith("https://")] == []
    for needed in ("make tile-unload-race", "make test", "## Cases", "## A worked example"):
        assert needed in text
    # The main job's GPU time is the run stage of the committed log the README links.
    log = re.search(r"/blob/main/(results/bench/main_job_tile_unload_race_\w+\.log)", text)
    assert log is not None
    seconds = re.search(r"^run: exit 0 in ([0-9.]+) s", (ROOT / log.group(1)).read_text(), re.M)
    assert seconds is not None and f"**{seconds.group(1)} s**" in text


def _nav_pages() -> list[str]:
    return re.findall(r"^\s+- [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)


def test_every_page_of_the_nav_is_there_and_the_fault_table_has_its_own():
    nav = _nav_pages()
    assert "faults.md" in nav and "results/index.md" in nav
    missing = [p for p in nav if not p.startswith("results/") and not (ROOT / "docs" / p).is_file()]
    assert missing == []
    assert "| fault injected | what happens | measured |" in (ROOT / "docs" / "faults.md").read_text()


def test_make_docs_is_part_of_make_check():
    makefile = (ROOT / "Makefile").read_text()
    check = re.search(r"^check: (.*)$", makefile, re.M).group(1).split()
    assert "docs" in check
    assert re.search(r"^docs: .*\n\t\$\(NOX\) -s docs", makefile, re.M)
    assert "\"properdocs\", \"build\", \"-f\", \"mkdocs.yml\", \"--strict\"" in (ROOT / "noxfile.py").read_text()


@pytest.fixture(scope="module")
def site():
    return pages(ROOT / "results")


def test_every_committed_document_has_a_page_its_case_page_links(site):
    results = [p for p in sorted((ROOT / "results").glob("*/*.json"))
               if json.loads(p.read_text()).get("schema", "").startswith("gpurepro/result")]
    assert results
    for path in results:
        page = site[f"results/{path.parent.name}/{path.stem}.md"]
        assert isinstance(page, str) and "## The issue comment" in page
        assert f"]({path.stem}.md)" in site[f"results/{path.parent.name}/index.md"]
    for case in {p.parent.name for p in results}:
        assert f"]({case}/index.md)" in site["results/index.md"]


def test_every_relative_link_of_a_results_page_is_in_the_site(site):
    broken = []
    for name, page in site.items():
        if not name.endswith(".md") or not isinstance(page, str):
            continue
        folder = name.rsplit("/", 1)[0]
        for a, b in LINK.findall(page):
            target = (a or b).split("#")[0]
            if not target or "://" in target or target.startswith("mailto:"):
                continue
            parts = []
            for part in f"{folder}/{target}".split("/"):
                if part == "..":
                    parts.pop()
                elif part not in ("", "."):
                    parts.append(part)
            if "/".join(parts) not in site and not (ROOT / "docs" / "/".join(parts)).is_file():
                broken.append((name, target))
    assert broken == []


def test_the_statistics_page_is_in_sections_with_subheadings():
    text = (ROOT / "docs" / "statistics.md").read_text()
    headings = re.findall(r"^(#{2,3}) (.+)$", text, re.M)
    assert len([h for h in headings if h[0] == "##"]) >= 6
    assert len([h for h in headings if h[0] == "###"]) >= 15
    # No stretch of the page runs on without a heading for more than a screenful or three.
    stretches = re.split(r"^#{1,4} .*$", text, flags=re.M)
    assert max(map(len, stretches)) <= 6000, sorted(map(len, stretches))[-3:]
