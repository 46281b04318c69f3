"""Escaping takes time linear in a string's length (report/tables.py: ``live_spans`` and
``code_spans``), and a document keeps at most STRING_MAX characters of any one string, the
journal the whole: a driver that dumps a 64 KiB word into its error, or a verdict of 50 MB,
is recorded and reported, not waited on for minutes."""

from __future__ import annotations

import json
import random
import re
import shutil
import uuid

import pytest

from gpurepro.record.document import STRING_MAX, capped
from gpurepro.report import tables
from tests import invoke
from tests.conftest import ROOT

# LIVE as it was before its prefixes were bounded: what live_spans must find, span for span,
# on strings whose prefixes are within the bounds.
UNBOUNDED = re.compile(r"""
      [A-Za-z][A-Za-z0-9+.-]*://\S*
    | www\.\S*
    | (?:mailto|xmpp):\S+
    | [\w.+-]*@[A-Za-z0-9_-][\w./-]*
    | [\w.-]+/[\w.-]+\#\d+
    | \#\d+
    | GH-\d+
""", re.X | re.I)
CONTEXTS = ("text", "prose", "code", "html", "markdown")


def _reference_code_spans(s: str) -> list[tuple[bool, str]]:
    """CommonMark's pairing of backtick runs, written the plain (quadratic) way."""
    out, at, text_from = [], 0, 0
    while (m := re.compile(r"`+").search(s, at)) is not None:
        n = len(m.group(0))
        close = next((c for c in re.finditer(r"`+", s[m.end():]) if len(c.group(0)) == n), None)
        if close is None:
            at = m.end()
            continue
        body = s[m.end(): m.end() + close.start()].replace("\n", " ")
        if body.startswith(" ") and body.endswith(" ") and body.strip():
            body = body[1:-1]
        if m.start() > text_from:
            out.append((False, s[text_from:m.start()]))
        out.append((True, body))
        at = text_from = m.end() + close.end()
    if text_from < len(s):
        out.append((False, s[text_from:]))
    return out


def test_live_spans_and_code_spans_find_what_the_plain_patterns_find():
    rng = random.Random(46)
    for _ in range(20000):
        s = "".join(rng.choice("aZ09.+-_/@#:wWGH \n`") for _ in range(rng.randrange(60)))
        assert tables.live_spans(s) == [m.span() for m in UNBOUNDED.finditer(s)], s
        assert tables.code_spans(s) == _reference_code_spans(s), s


@pytest.mark.parametrize("context", CONTEXTS)
def test_a_64_kib_word_is_escaped_whole_and_its_live_parts_made_code(context):
    for word in ("a" * 65536, "`a" * 32768, "x@y" * 21845, "ab/" * 21845 + "#1", "1a" * 32768 + "://x"):
        out = tables.escape(word, context)
        assert len(out) >= len(word) // 2
    assert "`x@y" in tables.escape("x@y" * 21845, "text")  # the mentions are code


def test_a_string_past_the_documents_limit_is_cut_and_counted():
    value = {"detail": "w" * (STRING_MAX + 10), "short": "ok", "n": [1, "x" * STRING_MAX]}
    out = capped(value)
    assert out["detail"] == "w" * (STRING_MAX - 40) + "… [50 more characters cut]"
    assert len(out["detail"]) <= STRING_MAX and capped(out) == out  # cut once only
    assert out["short"] == "ok" and out["n"] == [1, "x" * STRING_MAX]


@pytest.mark.slow
@pytest.mark.parametrize("context", ["text", "prose", "code", "html"])
def test_a_50_mb_one_word_sentence_is_escaped(context):
    word = "Reproduced" * 5_000_000
    assert tables.escape(word, context).count("Reproduced") == 5_000_000


@pytest.mark.slow
def test_a_driver_error_of_one_64_kib_word_records_reports_and_validates(tmp_path):
    """The hostile driver's long-word trial: its cuda_error's 64 KiB word is whole in the
    journal, cut at STRING_MAX in the document; record, report and validate finish."""
    from gpurepro.building.artifacts import build_case
    from gpurepro.case.load import load_case

    hostile = "tests/fixtures/hostile_case/manifest.py"
    build_dir = ROOT / "build" / "tests"
    build_case(load_case(ROOT / hostile, ROOT), "host", ROOT, build_dir)
    out = ROOT / "build" / f"tests-longword-{uuid.uuid4().hex[:8]}"
    try:
        done = invoke.gpurepro("run", hostile, "--arms", "ok,long-word", "--trials", "1",
                            "--duration", "0.1", "--seed", "1", "--out-dir", str(out),
                            "--build-dir", str(build_dir))
        assert done.returncode == 0, done.stderr[-2000:]
        [journal] = (out / "hostile_case").glob("*.journal.jsonl")
        [trial] = [json.loads(line) for line in journal.read_text().splitlines()
                   if '"long-word"' in line and '"kind":"trial"' in line]
        assert len(trial["detail"]) > 65536
        [doc] = [p for p in (out / "hostile_case").glob("*.json") if not p.name.endswith("pyperf.json")]
        kept = next(t for t in json.loads(doc.read_text())["trials"] if t["arm"] == "long-word")
        assert kept["outcome"] == "cuda_error" and kept["detail"].endswith("more characters cut]")
        assert invoke.gpurepro("validate", str(doc)).returncode == 0
        report = invoke.gpurepro("report", str(doc), "--out-dir", str(tmp_path))
        assert report.returncode == 0, report.stderr
        issue = invoke.gpurepro("issue", str(doc))
        assert issue.returncode == 0, issue.stderr
    finally:
        shutil.rmtree(out, ignore_errors=True)
