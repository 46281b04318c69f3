"""Comments, reports, compare's table and `issue --matrix` as GitHub renders them (GFM: tables,
autolinks of bare addresses, @mentions, issue references, fences of any length): hostile
strings put into a copy of a committed document and of a committed matrix render as text only,
read by markdown-it-py with linkify (tests/gfm_check.py); and a rendering the escaping did not
hold is refused, one line and a non-zero status (report/gfm.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro.errors import NotInert
from gpurepro.report import gfm
from gpurepro.report.comment import issue_body
from gpurepro.report.compare import compare
from gpurepro.report.compare import markdown as compare_markdown
from gpurepro.report.markdown import markdown
from gpurepro.report.tables import code, escape, row
from tests import invoke
from tests.conftest import ROOT
from tests.gfm_check import live

COMMITTED = ROOT / "results" / "tile_unload_race" / "20261201T102114Z_NVIDIA-H200_redacted.json"
MATRIX = ROOT / "results" / "tile_unload_race" / "matrix_20261130T062124Z_NVIDIA-H200.json"


def fences(n: int) -> str:
    """Fences that do not match: n backticks opened, fewer (and tildes) to close."""
    return (f"{'`' * n}\n<img src=https://evil.example/f{n}.png>\n{'`' * (n - 1)}\n@someone\n"
            f"{'~' * n}\n<script>alert({n})</script>\n{'`' * 3}\n")


HOSTILE = [
    *(fences(n) for n in range(3, 9)),
    "<img src=https://evil.example/i.png>",
    "<script>alert(1)</script>",
    "@someone and @org/team",
    "see https://evil.example/x now",
    "www.x.com",
    "octo/repo#12 and #7 and GH-3",
    "mail me: someone@evil.example",
    "| pipes | in | a cell |",
    "NVIDIA H200\n| x | y |\n<b>row</b>",
    ".nv.evil`",
    "`` code ` with a tick `` then `@inside` then @outside",
    "[a link](https://evil.example/l) ![pic](https://evil.example/p.png) [x]: https://evil.example/d",
    "&lt;img src=x&gt; &#64;someone \\@someone",
    ":smile: :+1: emoji shortcodes",
]
ALL = " ".join(HOSTILE)
# A case's analysis: a table of section names as its generator writes one (build/elf.py: each
# name a code span, each row by tables.row), a row as the generator wrote it before (a name
# ending in a backtick in a single-backtick span), then every hostile string as raw lines.
ANALYSIS = "\n".join(["| section | `a` |", "|---|---|", *(row([code(h), escape(h)]) for h in HOSTILE),
                      "| `.nv.evil`` | 1 B |",
                      *HOSTILE, "    indented <img src=https://evil.example/ind.png> @indented",
                      "> ```", "> @quoted <img src=x>", "````", "unclosed @to-the-end <script>"])


def hostile_doc(tmp_path: Path) -> tuple[dict, Path]:
    """The committed document with the hostile strings in every free text the schema allows:
    GPU name (line breaks and pipes), driver, verdict, owner, next steps, crash signature and
    site, analyses' Markdown (a section name ending in a backtick among them)."""
    doc = json.loads(COMMITTED.read_text())
    doc["environment"]["gpu"]["gpus"][0]["name"] = "NVIDIA H200\n| x | y |\n" + ALL
    doc["environment"]["gpu"]["driver_version"] = "580 " + ALL
    doc["verdict"]["sentences"] = [*HOSTILE, *doc["verdict"]["sentences"]]
    doc["verdict"]["owner"] = "nobody " + ALL
    doc["verdict"].setdefault("next", []).extend(HOSTILE)
    doc["crash_sites"][0]["signature"] = ALL
    doc["crash_sites"][0]["code_name"] = ALL
    doc["case"]["question"] = ALL
    doc["analyses"]["sections"]["markdown"] = ANALYSIS
    doc["analyses"][".nv.evil` @someone www.x.com"] = {"markdown": ANALYSIS}
    path = tmp_path / COMMITTED.name
    path.write_text(json.dumps(doc, indent=1))
    return doc, path


def hostile_matrix(tmp_path: Path) -> Path:
    m = json.loads(MATRIX.read_text())
    m["gpu"]["device"]["name"] = "NVIDIA H200\n| x | y |\n" + ALL
    m["gpu"]["device"]["driver_version"] = ALL
    for c in m["cubins"].values():
        c["debug_sections"] = {".nv.evil`": 1, "| a | b |": 2, "@someone\n<b>x</b>": 3,
                               **c["debug_sections"]}
        for s in ((c["nv_host"].get("object") or {}).get("symbols") or []):
            s["name"] = s["name"] + "`` @someone"
    path = tmp_path / MATRIX.name
    path.write_text(json.dumps(m, indent=1))
    return path


def _links(doc: dict) -> set[str]:
    return {doc["case"]["report_url"]}


@pytest.mark.slow  # every committed document rendered: the slow tier's
def test_the_committed_documents_render_with_nothing_live():
    for path in sorted((ROOT / "results").glob("*/*_redacted.json")):
        doc = json.loads(path.read_text())
        links = {doc["case"]["report_url"]} if doc["case"].get("report_url") else set()
        assert live(issue_body(doc, path), links) == [], path.name
        assert live(markdown(doc, "s.png", "f.png", "g.png"), links) == [], path.name


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("context", ["text", "prose", "code", "html", "markdown"])
def test_each_hostile_string_escaped_in_each_context_is_text(value, context):
    if context == "html":
        rendered = f"<details><summary>{escape(value, 'html')}</summary>\n\nbody\n\n</details>\n"
    elif context == "markdown":
        rendered = escape(value, "markdown") + "\n"
    else:
        rendered = f"| a | b |\n|---|---|\n| {escape(value, context).replace('|', chr(92) + '|')} | x |\n"
    assert live(rendered) == []
    assert list(gfm.problems(rendered)) == []


def test_a_hostile_document_renders_inert_in_the_comment_the_report_and_compare(tmp_path):
    doc, path = hostile_doc(tmp_path)
    body = issue_body(doc, path)
    assert "someone" in body and "evil.example" in body  # there, as text
    assert live(body, _links(doc)) == []
    report = markdown(doc, "s.png", "f.png")
    assert live(report, _links(doc)) == []
    for text in (body, report):  # the GPU's name, line breaks and pipes in it, in one cell
        [gpu] = [line for line in text.splitlines() if line.startswith("| GPU | NVIDIA H200")]
        assert r"H200 \| x \| y \|" in gpu and "emoji shortcodes" in gpu
    committed = json.loads(COMMITTED.read_text())
    assert live(compare_markdown(compare([committed, doc], [str(COMMITTED), str(path)]))) == []


def test_issue_and_report_take_the_hostile_document_and_print_it_inert(tmp_path):
    """Its verdict edited, the document does not validate: `issue` refuses it, and with
    --allow-invalid renders it with its head saying so, every string inert (the problem it
    quotes too)."""
    doc, path = hostile_doc(tmp_path)
    refused = invoke.gpurepro("issue", str(path))
    assert refused.returncode == 1 and refused.stdout == ""
    assert "does not validate" in refused.stderr
    done = invoke.gpurepro("issue", str(path), "--matrix", str(hostile_matrix(tmp_path)),
                        "--allow-invalid")
    assert done.returncode == 0, done.stderr
    assert "**This document does not validate**" in done.stdout.split("<details>")[0]
    assert "Toolchain matrix" in done.stdout and ".nv.evil" in done.stdout
    assert live(done.stdout, _links(doc)) == []
    report = invoke.gpurepro("report", str(path))
    assert report.returncode == 0, report.stderr
    assert live(path.with_suffix(".md").read_text(), _links(doc)) == []


def test_a_hostile_matrix_table_keeps_its_rows(tmp_path):
    from gpurepro.sweep.table import matrix_markdown

    text = matrix_markdown(json.loads(hostile_matrix(tmp_path).read_text()))
    assert live(text) == []
    committed = MATRIX.with_suffix(".md").read_text()
    assert text.count("\n| ") == committed.count("\n| ")  # as many table lines as committed


@pytest.mark.parametrize("raw", ["<img src=https://evil.example/i.png>", "@someone", "www.x.com",
                                 "https://evil.example/x", "octo/repo#12", "[x](https://evil.example)",
                                 "<details><summary>@someone</summary>\n\nx\n\n</details>"])
def test_the_check_refuses_what_is_live(raw):
    with pytest.raises(NotInert, match="could not be made inert for GitHub"):
        gfm.check(f"text {raw} text\n", "a rendering")


def test_issue_refuses_a_document_when_the_escaping_does_not_hold(tmp_path):
    """With text escaping broken (HTML and brackets left as they are) (as a bug would leave it), `issue` prints nothing and says
    why in one line, exit 1: the check after rendering, not the escaping, is what refused."""
    _, path = hostile_doc(tmp_path)
    broken = ("import sys, gpurepro.report.tables as t; t._plain = lambda s, first: s; "
              "from gpurepro.cli.main import main; "
              "sys.exit(main(['issue', sys.argv[1], '--allow-invalid']))")
    done = subprocess.run([sys.executable, "-c", broken, str(path)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 1 and done.stdout == "", done.stderr
    # The notes that it does not validate (--allow-invalid), then the one line that refused it.
    [line] = [x for x in done.stderr.strip().splitlines() if not x.startswith("note: ")]
    assert "refused, a string of the document could not be made inert for GitHub" in line


FRAGMENTS = ["<img src=https://evil.example/r.png>", "<script>", "</details>", "<!--", "@someone",
             "@org/team", "x@evil.example", "https://evil.example/r", "www.x.com", "octo/repo#12",
             "#7", "GH-3", "|", "\n", "[l](https://evil.example)", "![p](https://evil.example/p)",
             "]: https://evil.example", "&#64;", "\\", ":smile:", "> ", "- ", "# ", "    ", "~~~", "<b>"]


def random_hostile(rng) -> str:
    """A string of hostile fragments, backtick runs (1 to 8) and tilde runs, in random order."""
    parts = [rng.choice(FRAGMENTS) if rng.random() < 0.7 else rng.choice("`~") * rng.randint(1, 8)
             for _ in range(rng.randint(3, 14))]
    return "".join(p + rng.choice(["", " ", "\n"]) for p in parts)


@pytest.mark.slow
def test_random_hostile_strings_in_documents_and_matrices_render_inert(tmp_path):
    """Volume: 150 documents, each with random hostile strings (fragments, backtick runs of 1 to
    8, line breaks) in its GPU name, verdict, owner, crash signature and analysis, rendered as
    the comment (with a hostile matrix), the report and compare; and 150 such strings in every
    context of the escape."""
    import random

    from gpurepro.sweep.table import matrix_markdown

    rng = random.Random(34)
    base, _ = hostile_doc(tmp_path)
    committed = json.loads(COMMITTED.read_text())
    matrix = json.loads(hostile_matrix(tmp_path).read_text())
    for i in range(150):
        s = [random_hostile(rng) for _ in range(6)]
        doc = json.loads(json.dumps(base))
        doc["environment"]["gpu"]["gpus"][0]["name"] = s[0]
        doc["verdict"]["sentences"][0] = s[1]
        doc["verdict"]["owner"] = s[2]
        doc["crash_sites"][0]["signature"] = s[3]
        # Apart from the analysis's table by blank lines: a line of its own right under a
        # table is a row of that table (the author's), with whatever cells it has.
        doc["analyses"]["sections"]["markdown"] = s[4] + "\n\n" + ANALYSIS + "\n\n" + s[5]
        matrix["gpu"]["device"]["name"] = s[5]
        table = matrix_markdown(matrix)
        body = issue_body(doc, tmp_path / "r.json", extra_blocks=[("Toolchain matrix", table)])
        assert live(body, _links(doc)) == [], (i, s)
        assert live(markdown(doc, "s.png"), _links(doc)) == [], (i, s)
        text = compare_markdown(compare([committed, doc], [str(COMMITTED), "r.json"]))
        assert live(text) == [], (i, s)
        for context in ("text", "prose", "code", "html", "markdown"):
            value = escape(s[i % 6], context)
            rendered = (f"<details><summary>{value}</summary>\n\nx\n\n</details>\n"
                        if context == "html" else value + "\n")
            assert live(rendered) == [], (i, context, s[i % 6])
