"""The README is a page (the package's long description: no relative link), the rest is the
documentation site (docs/, mkdocs.yml), and the site's results pages cover every committed
document, each case's page linking its runs."""

from __future__ import annotations

import json
import re

import pytest

from gpurepro.report.site import pages
from tests.conftest import ROOT

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


def _linked_result(text: str) -> dict:
    m = re.search(r"/blob/main/(results/tile_unload_race/[\w.-]+)\.md\)", text)
    assert m is not None, "no tile_unload_race result linked"
    return json.loads((ROOT / (m.group(1) + ".json")).read_text())


def _gpu_names(doc: dict) -> set[str]:
    return {g["name"] for g in doc["environment"]["gpu"]["gpus"]}


def test_the_readmes_main_job_and_worked_example_quote_the_document_they_link():
    text = (ROOT / "README.md").read_text()
    doc = _linked_result(text)
    main = re.search(r"On one (\S+) its run stage took \*\*[0-9.]+ s\*\* for (\d+) arms and (\d+) "
                     r"trials, and every one of\s+its (\d+) main-question claims was supported at "
                     r"the first look", text)
    assert main is not None
    gpu, arms, trials, claims = main.groups()
    assert any(name.endswith(gpu) for name in _gpu_names(doc))
    assert (int(arms), int(trials)) == (len(doc["summary"]), len(doc["trials"]))
    confirmatory = [c for c in doc["claims"] if c.get("family") != "exploratory"]
    assert int(claims) == len(confirmatory)
    assert all(c["decision"] == "supported" and c["look"] == 1 for c in confirmatory)
    # The comment's head as the worked example quotes it.
    block = text[text.index("```\n## gpurepro:"):]
    block = block[:block.index("\n```", 4)]
    assert block.split("\n")[1].endswith(f"— {doc['verdict']['status']}")
    assert f"on {', '.join(sorted(_gpu_names(doc)))}, not the reporter's GPU" in " ".join(block.split())
    rests = re.search(r"rests on (\d+) decided claims", block)
    assert rests is not None and int(rests.group(1)) == len(doc["verdict"]["owner_because"])
    crash = re.search(r"Crash signature: `([^`]+?)(?: <- \.\.\.)?` \((\d+) of (\d+) crashes", block)
    assert crash is not None
    site = doc["crash_sites"][0]
    assert site["signature"].startswith(crash.group(1))
    assert (int(crash.group(2)), int(crash.group(3))) == (
        site["count"], sum(s["count"] for s in doc["crash_sites"]))
    rerun = re.search(r"git checkout ([0-9a-f]{7,})\.\.\. .* --seed (\d+) ", block)
    assert rerun is not None
    assert doc["environment"]["repository"]["commit"].startswith(rerun.group(1))
    assert int(rerun.group(2)) == doc["plan"]["seed"]


def _fast_tier_record() -> tuple[str, int, int]:
    """The commit, test count and pytest wall seconds of the fast tier as docs/testing.md's
    durations block records them (the output of python tests/durations.py after a measured
    `make check` or `bash .ci/run`, whose commit the sentence before it names)."""
    text = (ROOT / "docs" / "testing.md").read_text()
    m = re.search(r"^fast tier \(make test\): (\d+) tests \([^)]*\), (\d+) s wall", text, re.M)
    commit = re.search(r"(?:`make check`|`bash \.ci/run`)[^.`]*? at ([0-9a-f]{7,})", text)
    assert m is not None and commit is not None
    return commit.group(1), int(m.group(1)), int(m.group(2))


def test_the_fast_tiers_test_count_is_quoted_only_where_it_is_generated():
    """The count and time come from a measured run's durations block (docs/testing.md), which
    `python tests/durations.py` writes; a page that quoted them by hand went stale with the
    next test, so none does."""
    assert _fast_tier_record()
    for page in ("README.md", "docs/index.md", "docs/testing.md"):
        text = (ROOT / page).read_text()
        quoted = re.findall(r"([\d,]+) tests at ([0-9a-f]{7,})[;,] pytest (\d+) s on 2 cores", text)
        assert quoted == [], f"{page} quotes the fast tier's count by hand: {quoted}"


def test_the_sites_home_page_quotes_the_main_job_it_links():
    text = (ROOT / "docs" / "index.md").read_text()
    m = re.search(r"on one (\S+), ([0-9.]+) s of run stage for its (\d+) arms\s+and (\d+) trials, "
                  r"every one of its (\d+) confirmatory claims supported at the first look\s*"
                  r"\(\[result\]\((results/tile_unload_race/[\w.-]+)\.md\),\s*\[log\]\([^)]*/blob/main/"
                  r"(results/bench/main_job_tile_unload_race_\w+\.log)\)", text)
    assert m is not None
    gpu, seconds, arms, trials, claims, result, log = m.groups()
    doc = json.loads((ROOT / (result + ".json")).read_text())
    assert any(name.endswith(gpu) for name in _gpu_names(doc))
    assert (int(arms), int(trials)) == (len(doc["summary"]), len(doc["trials"]))
    assert int(claims) == len([c for c in doc["claims"] if c.get("family") != "exploratory"])
    ran = re.search(r"^run: exit 0 in ([0-9.]+) s", (ROOT / log).read_text(), re.M)
    assert ran is not None and ran.group(1) == seconds
    # The cases table says the same of the same run.
    assert f"{claims} of {claims} main-question claims supported in {seconds} s of run stage" in text
