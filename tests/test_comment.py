"""`gpurepro issue`: the body of a GitHub comment from a result document, under GitHub's
65,536-character limit, with the exact command that reruns the experiment."""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro.report.comment import LIMIT, issue_body, rerun_arguments, session_for

ROOT = Path(__file__).resolve().parents[1]
TILE = ROOT / "results" / "tile_unload_race"
UNTIL = TILE / "20261130T033104Z_NVIDIA-H200_redacted.json"
OLD = TILE / "20261129T235221Z_NVIDIA-H200_redacted.json"


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "gpurepro", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def _results() -> list[Path]:
    return sorted(p for p in (ROOT / "results").rglob("*.json")
                  if not p.name.endswith(".pyperf.json")
                  and json.loads(p.read_text()).get("schema", "").startswith("gpurepro/result"))


def _largest() -> Path:
    return max(_results(), key=lambda p: (p.stat().st_size, p.name))


def _balanced(body: str) -> None:
    assert body.count("<details>") == body.count("</details>")
    fences = sum(1 for line in body.splitlines() if line.lstrip().startswith("```"))
    assert fences % 2 == 0


def test_largest_committed_document(tmp_path):
    path = _largest()
    doc = json.loads(path.read_text())
    out = tmp_path / "comment.md"
    done = _cli("issue", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    body = out.read_text()
    assert len(body) <= LIMIT
    assert "<details>" in body
    _balanced(body)
    command = f"nox -s {session_for(doc['case']['name'])} -- "
    assert command in body
    assert f"--seed {doc['plan']['seed']}" in body
    # Printed without --out: the same body.
    assert _cli("issue", str(path)).stdout == body


def test_tile_comment_has_what_a_maintainer_needs():
    doc = json.loads(UNTIL.read_text())
    body = issue_body(doc, UNTIL)
    head = body.split("<details>")[0]
    assert head.startswith("## gpurepro: `tile_unload_race` — reproduced")
    assert doc["verdict"]["owner"] in head
    for claim in doc["verdict"]["owner_because"]:
        assert f"`{claim}` (supported" in head
    assert "NVIDIA H200 × 1, compute capability 9.0; driver 580.159.04" in head
    assert "`cuda-tile==1.5.0`" in head and "`nvidia-cuda-tileiras==13.3.36`" in head
    assert "| `baseline` | 9 / 10 | 73.2 [33.5, 139]" in head
    assert doc["crash_sites"][0]["signature"] in head
    assert "https://github.com/NVIDIA/cuda-tile/issues/23" in head
    assert ("nox -s tile_unload_race -- --arch sm_90 --arms " in head
            and "--seed 3 --duration 5 --timeout 90 --max-exposure 0 --jobs 1 --until-decided "
                "--max-trials 10 --look-every 5 --alpha 0.05" in head)
    assert f"`{UNTIL.name}`" in head and f"`{UNTIL.with_suffix('.png').name}`" in head
    # The rest is folded away.
    decided = sum(1 for c in doc["claims"] if c["decision"] != "not_decided")
    for summary in (f"Claims ({decided} of {len(doc['claims'])} decided)",
                    f"Not decided ({len(doc['claims']) - decided})", "Hypotheses (",
                    "Full environment, toolchain and artifacts"):
        assert f"<details><summary>{summary}" in body
    _balanced(body)


def test_rerun_command_parses_as_the_case_command(root):
    """The command's arguments pass the same checks a run makes before anything is built."""
    from gpurepro.case import load_case
    from gpurepro.cli.args import check_arguments
    from gpurepro.cli.parser import parser

    for path in _results():
        doc = json.loads(path.read_text())
        args = rerun_arguments(doc)
        parsed = parser().parse_args(["case", doc["case"]["name"], *args])
        case = load_case(doc["case"]["name"], root)
        checked = check_arguments(case, parsed, root, gpu_info={"gpus": []})
        assert checked.target == doc["device"]["target"]
        assert set(checked.arms or ()) == set(doc["plan"]["arms"])
        assert parsed.seed == doc["plan"]["seed"]
        assert parsed.jobs == doc["plan"]["options"]["jobs"]
        assert bool(parsed.until_decided) == bool(doc["plan"]["options"].get("stopping"))


def test_document_from_before_claims():
    doc = json.loads(OLD.read_text())
    del doc["claims"]  # as recorded before the harness decided claims
    body = issue_body(doc, OLD)
    assert "recorded before the harness decided claims" in body
    assert "--trials 5" in body and "--until-decided" not in body


def test_sessions():
    assert session_for("tile_unload_race") == "tile_unload_race"
    assert session_for("tcgen05_alloc_order") == "tcgen05_alloc_order"
    assert session_for("my_case") == "my_case"


def test_an_oversized_document_is_cut_to_fit():
    doc = copy.deepcopy(json.loads(UNTIL.read_text()))
    doc["verdict"]["not_decided"] = [f"Sentence {i}: " + "x" * 300 for i in range(400)]
    doc["analyses"]["big"] = {"markdown": "```\n" + "\n".join("y" * 100 for _ in range(2000)) + "\n```"}
    body = issue_body(doc, UNTIL)
    assert len(body) <= LIMIT
    assert "(truncated)" in body and "Truncated at" in body
    assert "Left out for length:" in body
    assert "nox -s tile_unload_race -- " in body  # the head is never cut
    _balanced(body)


@pytest.mark.parametrize("limit", [30_000, 20_000])
def test_smaller_limits_hold(limit):
    body = issue_body(json.loads(UNTIL.read_text()), UNTIL, limit=limit)
    assert len(body) <= limit
    _balanced(body)


def test_not_a_case_result_is_one_line_and_exit_2(tmp_path):
    bench = sorted((ROOT / "results" / "bench").glob("*.json"))[0]
    done = _cli("issue", str(bench))
    assert done.returncode == 2 and "benchmark document" in done.stderr
    other = tmp_path / "x.json"
    other.write_text(json.dumps({"hello": 1}))
    done = _cli("issue", str(other))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_quoting_is_shell_safe():
    doc = json.loads(UNTIL.read_text())
    args = rerun_arguments(doc)
    assert shlex.split(" ".join(shlex.quote(a) for a in args)) == args


def test_issue_with_the_toolchain_matrix(tmp_path):
    matrices = sorted(TILE.glob("matrix_*.json"))
    if not matrices:
        pytest.skip("no committed toolchain matrix of tile_unload_race")
    # The largest tile result: the matrix block must fit beside its own blocks.
    path = max((p for p in _results() if p.parent == TILE), key=lambda p: p.stat().st_size)
    done = _cli("issue", str(path), "--matrix", str(matrices[-1]))
    assert done.returncode == 0, done.stderr
    body = done.stdout
    assert len(body) <= LIMIT and f"Toolchain matrix ({matrices[-1].name}" in body
    _balanced(body)
    # A matrix of another case, or a file that is not a matrix, is one line and exit 2.
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(matrices[-1].read_text()), "case": {"name": "x"}}))
    for bad in (other, UNTIL):
        done = _cli("issue", str(path), "--matrix", str(bad))
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
