"""The issue comment's head, before its first fold, fits one screen and holds what a maintainer
acts on; no cell reads as an error; a partial run says so; plots and advice follow what the run
is and what is committed beside it; every command the comment prints is one its case accepts."""

from __future__ import annotations

import copy
import json
import re
import shlex
from pathlib import Path

import pytest

from gpurepro.record.result import with_checkout_facts
from gpurepro.report.comment import HEAD_LIMIT, issue_body, session_for
from gpurepro.report.survival import draws_survival

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
TILE = RESULTS / "tile_unload_race" / "20261202T123450Z-bc7d24_NVIDIA-H200_redacted.json"
PTXAS = RESULTS / "ptxas_abs_clamp" / "20261202T063422Z-915b1b_NVIDIA-H200_redacted.json"
CTX = RESULTS / "ctx_get_device_v2" / "20261201T142253Z_NVIDIA-H200_redacted.json"
PARTIAL = RESULTS / "tile_unload_race" / "20261201T120321Z_NVIDIA-H200_redacted.json"
PTXAS_BEFORE_BISECTION = RESULTS / "ptxas_abs_clamp" / "20261201T142138Z_NVIDIA-H200_redacted.json"


def _results() -> list[Path]:
    return sorted(p for p in RESULTS.rglob("*.json") if not p.name.endswith(".pyperf.json")
                  and json.loads(p.read_text()).get("schema", "").startswith("gpurepro/result"))


def _comment(path: Path) -> tuple[dict, str, str]:
    doc = json.loads(path.read_text())
    body = issue_body(doc, path, url="")
    return doc, body, body.split("<details>")[0]


@pytest.mark.parametrize("path", [TILE, PTXAS, CTX], ids=lambda p: p.parent.name)
def test_the_head_fits_one_screen_with_what_a_maintainer_acts_on(path):
    doc, body, head = _comment(path)
    assert len(head) <= HEAD_LIMIT, len(head)
    status = doc["verdict"]["status"].replace("_", " ")
    assert head.startswith(f"## gpurepro: `{doc['case']['name']}` — {status}\n")
    for bullet in ("- **Reproduced as filed:** ", "- **Owner:** ", "- **Not run:** ", "**Rerun:**"):
        assert bullet in head, bullet
    if doc.get("crash_sites"):
        assert f"- **Crash signature:** `{doc['crash_sites'][0]['signature']}`" in head
    else:
        assert "- **Wrong results:** " in head
    # The arms table and the full rerun steps are folded.
    assert "| arm |" not in head and "| arm |" in body
    assert "ARGS=(" not in head and "ARGS=(" in body
    assert f"nox -s {session_for(doc['case']['name'])}" in head


@pytest.mark.parametrize("path", _results(), ids=lambda p: p.stem.split("_")[0])
def test_every_committed_head_fits_one_screen(path):
    assert len(_comment(path)[2]) <= HEAD_LIMIT


def test_the_tile_head_has_its_workaround_and_what_was_not_run():
    _, _, head = _comment(TILE)
    assert "- **Workaround:** `lock-unload-launch`: one mutex" in head
    assert "- **Reproduced as filed:** yes: the reporter's program unchanged (`as-filed`)" in head
    assert "the reporter's NVIDIA GeForce RTX 5090 (sm_120)" in head
    assert "(`nox -s tile_unload_race -- --deep`)" in head


# What reads as an error in a table cell or a heading: an empty parenthesis, a share with no
# noun, a power of ten that is one.
ERROR_LOOKING = [r"no valid trial \(\)", r"\b\d+(\.\d+)? of trials\b", r"per 10\^0\b", r"\(\)",
                 r"\bnan\b", r"\bNone\b"]


@pytest.mark.parametrize("path", _results(), ids=lambda p: p.stem.split("_")[0])
def test_no_cell_reads_as_an_error(path):
    _, body, _ = _comment(path)
    rows = [line for line in body.splitlines() if line.startswith("|")]
    for pattern in ERROR_LOOKING:
        bad = [row for row in rows if re.search(pattern, row)]
        assert bad == [], (pattern, bad[:3])


def test_a_partial_run_is_called_partial():
    doc, body, head = _comment(PARTIAL)
    assert "complete" not in (doc.get("completion") or {})  # recorded before the end record
    assert head.startswith("## gpurepro: `tile_unload_race` — reproduced (partial run)\n")
    assert "- **Partial run:** 153 of 340 planned trials ran" in head
    assert "stopped after 153 of 340 planned trials, before its design ended it" in body
    assert "stopped arm by arm once their claims were decided" not in body
    # A run its design ended is not.
    _, _, tile = _comment(TILE)
    assert "partial" not in tile.lower()


def test_survival_plots_only_where_a_failure_has_a_time_to_failure():
    wrong, crashes_at_once, crashes_later = (json.loads(p.read_text()) for p in (PTXAS, CTX, TILE))
    assert not draws_survival(wrong)  # wrong answers: a check per trial
    assert not draws_survival(crashes_at_once)  # every failure at the first call
    assert draws_survival(crashes_later)
    for path, drawn in ((PTXAS, False), (CTX, False), (TILE, True)):
        _, body, _ = _comment(path)
        assert ("Kaplan–Meier survival per arm" in body) is drawn, path.name
        assert (path.with_suffix(".png").is_file()) is drawn, path.name


def test_advice_names_only_what_was_not_done():
    doc = json.loads(PTXAS_BEFORE_BISECTION.read_text())
    assert any(str(s).startswith("Bisect") for s in doc["verdict"]["next"])
    _, body, _ = _comment(PTXAS_BEFORE_BISECTION)
    assert "Bisect the releases" not in body
    assert "A bisection is committed beside this document: bisect_ptxas" in body


def test_a_reported_target_the_case_does_not_build_prints_no_command():
    doc = copy.deepcopy(json.loads(TILE.read_text()))
    doc["case"]["reported"]["target"] = "sm_90a"
    # The targets a new document keeps from its run's manifest; an older one read as `issue`
    # reads it gets those of the case in this checkout (record.result.with_checkout_facts).
    assert "targets" not in doc["case"]
    for read in (with_checkout_facts(doc, ROOT),
                 {**doc, "case": {**doc["case"], "targets": ["sm_90", "sm_120"]}}):
        body = issue_body(read, TILE, url="")
        assert "--arch sm_90a" not in body
        assert "The case builds no `sm_90a` target" in body
    # The comment is the document's alone: without its targets it names no command.
    assert "this checkout has not the case" in issue_body(doc, TILE, url="")


NOX = re.compile(r"nox -s (?P<session>[A-Za-z0-9_]+)(?: --force-python \S+)? -- (?P<args>[^`\n]+)")


def _printed_commands(body: str) -> list[tuple[str, list[str]]]:
    return [(m["session"], shlex.split(m["args"])) for m in NOX.finditer(body)
            if '"${ARGS[@]}"' not in m["args"]]


@pytest.mark.parametrize("path", _results(), ids=lambda p: p.stem.split("_")[0])
def test_every_command_the_comment_prints_is_one_the_case_accepts(path, root):
    from gpurepro.case import load_case
    from gpurepro.cli.args import check_arguments
    from gpurepro.cli.parser import parser

    doc, body, _ = _comment(path)
    name = doc["case"]["name"]
    commands = _printed_commands(body)
    assert commands, "the head prints the shortest rerun"
    case = load_case(name, root)
    for session, args in commands:
        assert session == session_for(name)
        # The checks a run makes before anything is built (a bad --arch, arm or flag is a
        # usage error there, and here).
        parsed = parser().parse_args(["case", name, *args])
        check_arguments(case, parsed, root, gpu_info={"gpus": []})
