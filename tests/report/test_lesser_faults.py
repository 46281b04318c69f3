"""Lesser faults of the fourth round: a result file named with HTML in the built site, a `|`
inside a code span of an analysis table, a driver's terminal control sequences on the progress
line, and files written whole (no empty temporary under any name)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from markdown_it import MarkdownIt

from gpurepro.model.files import create_atomic, write_bytes_atomic
from gpurepro.model.result import Result
from gpurepro.report import site
from gpurepro.report.tables import escape
from gpurepro.run.progress import Progress, terminal_safe
from tests.conftest import ROOT

HOSTILE_NAME = '20260101T000000Z_x"><img src=x onerror=alert(1)>_y'


def _links(markdown: str) -> list[str]:
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(markdown)
    found, html = [], []
    stack = list(tokens)
    while stack:
        t = stack.pop()
        stack += t.children or []
        if t.type == "link_open":
            found.append(t.attrs["href"])
        if t.type in ("html_inline", "html_block"):
            html.append(t.content)
    assert not html, html
    return found


def test_a_result_file_named_with_html_is_a_link_target_percent_encoded_in_the_site(tmp_path):
    committed = sorted((ROOT / "results" / "ptxas_abs_clamp").glob("*_redacted.json"))[-1]
    path = tmp_path / (HOSTILE_NAME + ".json")
    path.write_text(committed.read_text())
    doc = json.loads(committed.read_text())
    page = site.case_page("ptxas_abs_clamp", [(path, Result.of(doc))], [])
    targets = _links(page)
    assert targets and all("<" not in t and '"' not in t and " " not in t for t in targets), targets
    assert any("%3Cimg" in t for t in targets)
    run = site.run_page(path, Result.of(doc))
    assert "[The document](" + "20260101T000000Z_x%22%3E%3Cimg" in run


def test_a_pipe_inside_a_code_span_in_an_analysis_table_stays_in_its_cell():
    md = "| kernel | note |\n|---|---|\n| `a|b` | `c\\|d` and x |\n\ntext `p|q` stays"
    out = escape(md, "markdown")
    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    assert [t.type for t in tokens].count("td_open") == 2, out
    assert "`a\\|b`" in out and "`c\\|d`" in out and "`p|q`" in out


def test_a_drivers_terminal_control_sequences_never_reach_the_progress_line():
    detail = "boom\x1b[2J\x1b[H\x1b]0;owned\x07\r\x1b[31mred\x1b[0m\x9b1m\x08end"
    assert terminal_safe(detail) == "boom     red  1m end"
    from gpurepro.model.plan import make_plan

    plan = make_plan("fake_case", {"ok": {}}, 1, seed=1, selected=["ok"])
    stream = io.StringIO()
    progress = Progress(plan, [], stream=stream)
    progress.finished({"arm": "ok", "rep": 0, "outcome": "cuda_error", "detail": detail,
                       "duration_s": 0.1, "counters": {}})
    printed = stream.getvalue()
    assert "\x1b" not in printed and "\r" not in printed and "\x9b" not in printed
    assert printed.count("\n") == 1 and "boom" in printed and "end" in printed


def test_a_file_is_named_only_once_it_is_whole(tmp_path):
    write_bytes_atomic(tmp_path / "a.png", b"png bytes")
    write_bytes_atomic(tmp_path / "a.png", b"new png bytes")
    create_atomic(tmp_path / "d.json", "{}\n")
    assert sorted(os.listdir(tmp_path)) == ["a.png", "d.json"]
    assert (tmp_path / "a.png").read_bytes() == b"new png bytes"
    try:
        create_atomic(tmp_path / "d.json", "[]\n")
    except FileExistsError:
        pass
    else:
        raise AssertionError("create_atomic replaced a file")
    assert Path(tmp_path / "d.json").read_text() == "{}\n"


def test_a_documents_pictures_named_with_html_are_percent_encoded_in_its_report():
    from gpurepro.report.markdown import markdown

    committed = sorted((ROOT / "results" / "ptxas_abs_clamp").glob("*_redacted.json"))[-1]
    doc = json.loads(committed.read_text())
    text = markdown(doc, plot_name=HOSTILE_NAME + ".png", forest_name=HOSTILE_NAME + ".forest.png")
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(text)
    stack, sources = list(tokens), []
    while stack:
        t = stack.pop()
        stack += t.children or []
        assert t.type not in ("html_inline", "html_block"), t.content
        if t.type == "image":
            sources.append(t.attrs["src"])
    assert len(sources) == 2 and all("%3Cimg" in s and "<" not in s for s in sources), sources
