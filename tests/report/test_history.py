"""`gpurepro history CASE`: every committed run of a case, oldest first, as tables and a plot,
with a regression check of the newest run whose exit status can fail CI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpurepro.errors import CompareError
from gpurepro.model.outcomes import EVIDENCE
from gpurepro.report.history import history, markdown
from tests import invoke

ROOT = Path(__file__).resolve().parents[2]
TILE = ROOT / "results" / "tile_unload_race"
JOBS1 = TILE / "20261129T235221Z_NVIDIA-H200_redacted.json"  # one trial at a time
JOBS2 = TILE / "20261130T001736Z_NVIDIA-H200_redacted.json"  # two at a time: the race crashes more
FA3 = sorted((ROOT / "results" / "fa3_wgmma_wait").glob("2026*_redacted.json"))


def _results(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.glob("*.json")) if not p.name.endswith(".pyperf.json")
            and json.loads(p.read_text()).get("schema", "").startswith("gpurepro/result")]


CASES = sorted(p.name for p in (ROOT / "results").iterdir() if p.is_dir() and len(_results(p)) >= 2)


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_cases_with_two_or_more_committed_documents_are_all_there():
    assert {"tile_unload_race", "ctx_get_device_v2", "fa3_wgmma_wait", "ptxas_abs_clamp"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_history_runs_on_every_case_with_two_or_more_documents(case, tmp_path):
    done = invoke.gpurepro("history", case, "--plot", str(tmp_path / "h.png"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    docs = _results(ROOT / "results" / case)
    assert f"## gpurepro history: `{case}` ({len(docs)} runs)" in out
    for path in docs:  # every run, each named by its document
        assert f"`{path.name}`" in out
    assert "### Failures per arm" in out and "### Claims" in out and "### Regression check" in out
    if any(t.get("outcome") in EVIDENCE for p in docs for t in _load(p)["trials"]):
        assert (tmp_path / "h.png").stat().st_size > 0 and (tmp_path / "h.svg").stat().st_size > 0
    else:  # every run on a GPU that could not run the case (tcgen05_alloc_order on Hopper)
        assert "plot: nothing to draw (no arm with a rate)" in done.stderr
        assert not (tmp_path / "h.png").exists()
    as_json = json.loads(invoke.gpurepro("history", case, "--format", "json").stdout)
    started = [r["started_at"] for r in as_json["runs"]]
    assert len(started) == len(docs) and started == sorted(started)  # oldest first


def test_the_timed_case_shows_its_time_ratios_run_by_run():
    h = history([_load(p) for p in FA3], FA3)
    assert "serialized / overlap" in h.pairs
    ratios = [t.ratio for t in h.times["serialized / overlap"] if t is not None]
    assert len(ratios) == len(FA3) and all(1.08 < r < 1.11 for r in ratios)
    assert "### Time ratios" in markdown(h)
    assert not h.regressions  # the committed runs agree


def test_a_case_with_one_document_is_one_line_and_exit_2(tmp_path):
    folder = tmp_path / "tcgen05_alloc_order"
    folder.mkdir()
    one = _results(ROOT / "results" / "tcgen05_alloc_order")[0]
    (folder / one.name).write_bytes(one.read_bytes())
    done = invoke.gpurepro("history", "tcgen05_alloc_order", "--results", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "two or more result documents" in done.stderr and "holds 1" in done.stderr
    assert invoke.gpurepro("history", "no_such_case").returncode == 2


def test_a_higher_failure_rate_in_the_newest_run_fails_with_fail_on_regression():
    done = invoke.gpurepro("history", str(JOBS2), str(JOBS1), "--fail-on-regression")
    assert done.returncode == 1, done.stderr
    assert "regression(s) in B: rate always-unload; rate distinct-cubins; rate other-tile-kernel" \
        in done.stderr
    assert "**regressed**" in done.stdout
    # Without the flag the same history exits 0; with a factor none reaches, nothing regressed.
    assert invoke.gpurepro("history", str(JOBS1), str(JOBS2)).returncode == 0
    done = invoke.gpurepro("history", str(JOBS1), str(JOBS2), "--fail-on-regression",
                        "--rate-factor", "100")
    assert done.returncode == 0 and "No regression." in done.stdout


def test_each_arm_is_set_against_the_run_before_it_the_first_or_the_same_gpu():
    paths = [TILE / "20261204T032713Z-569948_NVIDIA-H200_redacted.json",
             TILE / "20261205T101709Z-3d06d7_NVIDIA-H100-80GB-HBM3_redacted.json",
             TILE / "20261202T162712Z-86c9b2_NVIDIA-H200_redacted.json",
             TILE / "20261205T110123Z-c78027_NVIDIA-H100-80GB-HBM3_redacted.json"]
    docs = [_load(p) for p in paths]
    base = {a: next(c for c in history(docs, paths, against=a).checks if c.name == "baseline")
            for a in ("previous", "first", "same-gpu")}
    assert [r.started_at[:10] for r in history(docs, paths).runs] == \
        ["2026-12-02", "2026-12-04", "2026-12-05", "2026-12-05"]
    assert base["previous"].against == "C" and base["first"].against == "A"
    assert base["same-gpu"].against == "C"  # C is the H100 run before D


def _timed_copy(tmp_path: Path, factor: float) -> list[Path]:
    """The fa3 runs, the newest with serialized's trial times multiplied by ``factor``."""
    out = []
    for path in FA3:
        doc = _load(path)
        if path == FA3[-1]:
            for t in doc["trials"]:
                timing = (t.get("observations") or {}).get("timing")
                if t["arm"] == "serialized" and timing:
                    timing["values"] = [v * factor for v in timing["values"]]
        copy = tmp_path / path.name
        copy.write_text(json.dumps(doc))
        out.append(copy)
    return out


def test_an_arm_slower_against_its_reference_than_before_is_a_time_regression(tmp_path):
    paths = _timed_copy(tmp_path, 1.2)
    h = history([_load(p) for p in paths], paths)
    regressed = [c.name for c in h.regressions]
    assert regressed == ["serialized / overlap"]
    done = invoke.gpurepro("history", *map(str, paths), "--fail-on-regression")
    assert done.returncode == 1 and "time serialized / overlap" in done.stderr
    # 3% slower is within the default 5% tolerance; a 1% tolerance finds it.
    slightly = _timed_copy(tmp_path, 1.03)
    assert not history([_load(p) for p in slightly], slightly).regressions
    assert [c.name for c in history([_load(p) for p in slightly], slightly,
                                    time_factor=1.01).regressions] == ["serialized / overlap"]


def test_a_document_string_is_escaped_in_the_history(tmp_path):
    paths = []
    for path in (JOBS1, JOBS2):
        doc = _load(path)
        for gpu in doc["environment"]["gpu"]["gpus"]:
            gpu["name"] = "<img src=x onerror=alert(1)> @someone https://evil.example"
        paths.append(tmp_path / path.name)
        paths[-1].write_text(json.dumps(doc))
    out = markdown(history([_load(p) for p in paths], paths))
    assert "<img" not in out and "&lt;img" in out and "`@someone`" in out


def test_documents_of_two_cases_or_one_document_are_refused():
    other = ROOT / "results" / "ptxas_abs_clamp" / "20261201T142138Z_NVIDIA-H200_redacted.json"
    with pytest.raises(CompareError, match="one case"):
        history([_load(JOBS1), _load(other)], [JOBS1, other])
    with pytest.raises(CompareError, match="at least two"):
        history([_load(JOBS1)], [JOBS1])
