"""A Python driver's frames at the crash (crash.python_frames) in the Markdown report and in
the issue comment's details: the faulting thread's frames, file:line function, each cell
escaped through report/tables.py."""

from __future__ import annotations

import json
from pathlib import Path

from gpurepro.report.comment import detail_blocks, issue_body
from gpurepro.report.markdown import markdown, python_frames_table
from tests.conftest import ROOT

CUDA_PYTHON = ROOT / "results" / "tile_unload_race" / "20261201T101933Z_NVIDIA-H200_redacted.json"


def _crash(arm, frames, current=True):
    return {"arm": arm, "outcome": "crashed", "crash": {"signal": "SIGSEGV", "python_frames": [
        {"current": not current, "frames": [{"file": "other.py", "line": 1, "function": "idle"}]},
        {"current": current, "frames": frames}]}}


def test_the_faulting_threads_frames_per_arm_most_frequent_first():
    main = [{"file": "cases/x/query.py", "line": 12, "function": "query"},
            {"file": "cases/x/query.py", "line": 40, "function": "<module>"}]
    other = [{"file": "cases/x/query.py", "line": 13, "function": "query"}]
    trials = [_crash("a", main), _crash("a", other), _crash("a", main),
              {"arm": "b", "outcome": "survived", "crash": None}]
    rows = python_frames_table(trials)
    assert rows[2] == ("| `a` | `cases/x/query.py:12 query` ← `cases/x/query.py:40 <module>` "
                       "| 2 of 3 |")
    assert rows[3].endswith("| 1 of 3 |") and len(rows) == 4
    assert "other.py" not in "".join(rows)  # not the faulting thread


def test_a_frame_that_would_break_the_table_stays_in_its_cell():
    frames = [{"file": "odd|name.py", "line": None, "function": "f`g"}]
    (row,) = python_frames_table([_crash("a", frames)])[2:]
    assert row == "| `a` | ``odd\\|name.py:? f`g`` | 1 of 1 |"


def test_long_stacks_show_the_most_recent_frames():
    frames = [{"file": "f.py", "line": i, "function": f"f{i}"} for i in range(9)]
    (row,) = python_frames_table([_crash("a", frames)])[2:]
    assert "`f.py:5 f5` ← 3 more" in row and "f6" not in row


def test_the_cuda_python_documents_frames_in_report_and_comment():
    doc = json.loads(CUDA_PYTHON.read_text())
    assert "### Python frames at the crash" in markdown(doc)
    blocks = dict(detail_blocks(doc))
    body = blocks["Python frames at the crash (the faulting thread, most recent call first)"]
    assert "`cases/tile_unload_race/host_cuda_python.py:228 loop`" in body
    text = issue_body(doc, Path(CUDA_PYTHON.name))
    assert "<summary>Python frames at the crash" in text


def test_documents_without_python_frames_have_no_such_section():
    doc = json.loads((ROOT / "results" / "tile_unload_race" /
                      "20261130T062707Z_NVIDIA-H200_redacted.json").read_text())
    assert "Python frames" not in markdown(doc)
    assert not any(s.startswith("Python frames") for s, _ in detail_blocks(doc))
