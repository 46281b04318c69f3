"""The documentation site's HTML as a reader meets it: no list rendered as a paragraph, no page
titled by a file name, nothing loaded from outside, no broken internal link (issue 49's check).

The fast tests render every generated results page and every page of docs/ with the site's own
Markdown extensions (mkdocs.yml's list) and read the HTML with the site's checker
(gpurepro.report.sitecheck); the slow one builds the whole site with ProperDocs, as `make docs`
does, and checks every built page."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpurepro.report import sitecheck
from gpurepro.report.gfm_lists import blank_before_lists
from gpurepro.report.site import pages
from tests.conftest import ROOT


def _config() -> dict:
    # mkdocs.yml carries no YAML tags (!ENV, !relative): the plain loader reads it.
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def _markdown():
    import markdown

    names, configs = [], {}
    for entry in _config()["markdown_extensions"]:
        name, conf = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        names.append(name)
        if conf:
            configs[name] = conf
    # What every MkDocs-style build adds to the list (fenced code, tables, the toc).
    return markdown.Markdown(extensions=["fenced_code", *names], extension_configs=configs)


def _render(text: str) -> str:
    md = _markdown()
    return md.reset().convert(text)


# ---------------------------------------------------------------- lists where GitHub has them


def test_a_list_right_after_a_paragraph_line_is_a_list():
    html = _render("**Exploratory** (outside the family):\n- first\n- second\n")
    assert "<ul>" in html and "<li>first</li>" in html
    assert list(sitecheck.list_problems(sitecheck.read_page(html))) == []


def test_without_the_extension_python_markdown_runs_the_list_into_the_paragraph():
    import markdown

    html = markdown.markdown("**Exploratory** (outside the family):\n- first\n- second\n")
    assert "<ul>" not in html
    found = list(sitecheck.list_problems(sitecheck.read_page(html)))
    assert found == ["a list rendered as a paragraph: '- first'"]


@pytest.mark.parametrize("text", [
    "```\nsome code\n- not a list\n```\n",          # in a fence
    "a paragraph\n2. two is not a start\n",          # GitHub starts an ordered list at 1 only
    "    indented code\n    - still code\n",          # an indented code block
    "- one\n- two\n",                                # a list at the top already is one
    "a paragraph\n\n- after a blank line\n",         # already separated
])
def test_what_github_does_not_start_a_list_on_is_left_alone(text):
    assert blank_before_lists(text) == text


def test_ordered_lists_from_one_and_every_marker_start_after_a_paragraph():
    assert blank_before_lists("text\n1. one\n2. two\n") == "text\n\n1. one\n2. two\n"
    for marker in "-*+":
        assert blank_before_lists(f"text\n{marker} a\n") == f"text\n\n{marker} a\n"
    # Twice is once.
    once = blank_before_lists("a\n- b\nc\n- d\n")
    assert blank_before_lists(once) == once


@pytest.fixture(scope="module")
def site():
    return pages(ROOT / "results")


def test_every_results_page_and_every_docs_page_renders_its_lists_as_lists(site):
    texts = {name: page for name, page in site.items()
             if name.endswith(".md") and isinstance(page, str)}
    texts |= {f"{p.relative_to(ROOT / 'docs').as_posix()}": p.read_text()
              for p in sorted((ROOT / "docs").glob("*.md"))}
    md = _markdown()
    found, lists = [], 0
    for name, text in texts.items():
        page = sitecheck.read_page(md.reset().convert(text))
        lists += text.count("\n- ")
        found += [f"{name}: {p}" for p in sitecheck.list_problems(page)]
    assert found == []
    assert lists > 500  # the pages do hold lists: the check above had something to check


def _h1(html: str) -> str:
    """The first heading's text, without the permalink's mark (as the site titles the page)."""
    import html as html_module

    m = re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S)
    return html_module.unescape(re.sub(r"<[^>]+>", "", m.group(1))).replace("¶", "").strip() \
        if m else ""


def test_every_results_page_is_titled_by_what_it_is_not_by_its_file_name(site):
    md = _markdown()
    titles, found = {}, []
    for name, text in site.items():
        if not name.endswith(".md") or not isinstance(text, str):
            continue
        title = _h1(md.reset().convert(text))
        built = name[:-3] + ("/index.html" if not name.endswith("index.md") else ".html")
        page = sitecheck.Page(title=title)
        found += [f"{name}: {p}" for p in sitecheck.title_problems(page, built, None)]
        titles[name] = title
    assert found == []
    run = "results/tile_unload_race/20261205T110123Z-c78027_NVIDIA-H100-80GB-HBM3_redacted.md"
    assert titles[run] == "tile_unload_race on NVIDIA H100 80GB HBM3, 2026-12-05 11:01 UTC"
    matrix = "results/tile_unload_race/matrix_20261130T062124Z_NVIDIA-H200.md"
    assert titles[matrix] == "Toolchain matrix of tile_unload_race on NVIDIA H200, 2026-11-30 06:25 UTC"
    # Two runs that started in the same minute on one GPU are told apart.
    same = [t for n, t in titles.items() if "20261201T142454Z" in n]
    assert len(same) == 2 and len(set(same)) == 2


# ---------------------------------------------------------------- the checker can fail


def _write(folder: Path, rel: str, body: str, title: str = "A page") -> None:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><head><title>{title} - site</title></head><body>{body}</body></html>")


def test_the_checker_names_each_kind_of_problem(tmp_path):
    _write(tmp_path, "index.html", '<h1 id="top">Home</h1><a href="b/">b</a>'
                                   '<a href="b/#there">there</a><a href="c/">missing</a>'
                                   '<a href="b/#nowhere">no anchor</a>', title="Home")
    _write(tmp_path, "b/index.html", '<p id="there">Items:\n- one\n- two</p>'
           '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
           '<a href="https://example.org/x">outside links are fine</a>'
           '<a href="https://github.com/o/r/blob/main/docs/nothing.md">repo</a>'
           '<a href="https://github.com/o/r/blob/main/README.md">repo</a>',
           title="20261205T110123Z c78027 NVIDIA H100 redacted")
    (tmp_path / "style.css").write_text("@import url('https://cdn.example.net/font.css');")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "README.md").write_text("x")
    problems = sitecheck.check_site(tmp_path, tmp_path / "repo", "https://github.com/o/r", "site")
    text = "\n".join(problems)
    assert "index.html: links 'c/', which is not in the site" in text
    assert "index.html: links 'b/#nowhere', and b/index.html has no #nowhere" in text
    assert "b/index.html: a list rendered as a paragraph: '- one'" in text
    assert "b/index.html: titled by a file name" in text
    assert "b/index.html: loads 'https://fonts.googleapis.com/css?family=Roboto' from outside" in text
    assert "style.css: loads 'https://cdn.example.net/font.css' from outside the site" in text
    assert "docs/nothing.md is not in the repository" in text
    assert "README.md is not" not in text and "b/#there" not in text
    assert len(problems) == 7, problems
    assert sitecheck.summary(problems, 2).startswith("the built site (2 pages) has 7 problem(s):")


def test_a_page_titled_as_a_builder_titles_a_file_name_is_found():
    page = sitecheck.Page(title="Forest plots")
    assert list(sitecheck.title_problems(page, "results/forest_plots/index.html", None)) == []
    assert list(sitecheck.title_problems(page, "results/forest_plots.html", None)) != []
    named = sitecheck.Page(title="Toolchain matrix of x on NVIDIA H200, 2026-11-30 06:25 UTC")
    assert list(sitecheck.title_problems(named, "results/x/matrix_1/index.html", None)) == []


# ---------------------------------------------------------------- repository links


def test_every_repository_link_of_the_docs_readme_and_reports_names_a_path_in_the_repository():
    repo = _config()["repo_url"].rstrip("/")
    pattern = re.compile(re.escape(repo) + r"/(?:blob|tree)/main/([^)\s#\"'>`]+)")
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "cases").glob("*/README.md")), *sorted((ROOT / "results").glob("*/*.md"))]
    broken = [(str(f.relative_to(ROOT)), m.group(1)) for f in files
              for m in pattern.finditer(f.read_text()) if not (ROOT / m.group(1)).exists()]
    assert broken == []


# ---------------------------------------------------------------- the whole site, built


@pytest.mark.slow
def test_the_built_site_has_no_list_as_paragraph_no_file_name_title_nothing_from_outside(tmp_path):
    done = subprocess.run([sys.executable, "-m", "properdocs", "build", "-f", "mkdocs.yml",
                           "--strict", "--clean", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    # The build's own hook runs the checker and fails the build on a problem.
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = tmp_path / "site"
    config = _config()
    assert sitecheck.check_site(site, ROOT, config["repo_url"], config["site_name"]) == []
    html = "\n".join(p.read_text() for p in site.rglob("*.html"))
    assert "fonts.googleapis.com" not in html and "cdnjs" not in html
    assert "material" not in (site / "index.html").read_text().lower()
    run = (site / "results" / "tile_unload_race" /
           "20261205T110123Z-c78027_NVIDIA-H100-80GB-HBM3_redacted" / "index.html").read_text()
    assert "<title>tile_unload_race on NVIDIA H100 80GB HBM3, 2026-12-05 11:01 UTC - gpurepro" in run
    assert run.count("<ul>") >= 4
