"""`compare` refuses timed runs whose GPU conditions differ beyond the stated tolerances (a
lower clock or a hotter GPU slows a kernel for that reason alone), compares them with
--any-conditions and says so, and compares the committed FA3 runs, measured under the same
conditions, as before."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from gpurepro.errors import CompareError
from gpurepro.report.compare import compare, markdown
from gpurepro.report.gpu_conditions import run_conditions
from tests import pace

ROOT = Path(__file__).resolve().parents[2]
FA3 = sorted((ROOT / "results" / "fa3_wgmma_wait").glob("2026*_redacted.json"))


def _doc(path: Path) -> dict:
    return json.loads(path.read_text())


def _throttled(doc: dict, mhz: float) -> dict:
    slow = copy.deepcopy(doc)
    for t in slow["trials"]:
        after = ((t.get("observations") or {}).get("conditions") or {}).get("after")
        if after and "sm_clock_mhz" in after:
            after["sm_clock_mhz"] = mhz
    return slow


def test_the_committed_fa3_runs_are_within_tolerance_and_compare():
    docs = [_doc(p) for p in FA3[:2]]
    assert run_conditions(docs[0])["sm_clock_mhz"] > 0
    result = compare(docs, FA3[:2])
    assert result.beyond_tolerance == []
    assert {c["condition"] for c in result.conditions_compared} >= {"sm_clock_mhz"}
    assert "GPU conditions within tolerance" in markdown(result)


def test_a_run_at_a_lower_clock_is_refused_and_compared_only_when_asked(tmp_path):
    first = _doc(FA3[0])
    clock = run_conditions(first)["sm_clock_mhz"]
    slow = _throttled(first, clock * 0.9)
    with pytest.raises(CompareError, match="sm_clock_mhz"):
        compare([first, slow], ["a.json", "b.json"])
    # Within the tolerance: compared.
    assert compare([first, _throttled(first, clock * 0.99)], ["a.json", "b.json"])
    result = compare([first, slow], ["a.json", "b.json"], any_conditions=True)
    assert result.beyond_tolerance
    assert "GPU conditions differ beyond tolerance" in markdown(result)
    # The command line: a usage error naming the condition, no traceback; then --any-conditions.
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    paths[0].write_text(json.dumps(first))
    paths[1].write_text(json.dumps(slow))
    cmd = [sys.executable, "-m", "gpurepro", "compare", *map(str, paths)]
    refused = pace.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "sm_clock_mhz" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    anyway = pace.run([*cmd, "--any-conditions"], cwd=ROOT, capture_output=True, text=True)
    assert anyway.returncode == 0, anyway.stderr
    assert "differ beyond tolerance" in anyway.stdout


def test_untimed_runs_carry_no_conditions_and_compare_as_before():
    tile = sorted((ROOT / "results" / "tile_unload_race").glob("2026120*_redacted.json"))[:2]
    result = compare([_doc(p) for p in tile], tile)
    assert result.to_json()["gpu_conditions"] == {"compared": [], "beyond_tolerance": []}
    assert "GPU conditions" not in markdown(result)

