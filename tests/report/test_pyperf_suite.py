"""A run's timed trials become a pyperf suite beside the document: `record` of a run of the timed
fixture (tests/fixtures/timed_case: a driver that times a CPU loop, as fa3_wgmma_wait's times a
kernel) writes <stem>.pyperf.json, one benchmark per arm and one run per trial with the trial's
own values, warm-ups and loops, and `python -m pyperf compare_to` of two such suites prints a
verdict with significance, not an error."""

from __future__ import annotations

import json
import sys

import pytest

from tests import pace
from tests.conftest import ROOT
from tests.invoke import gpurepro

TIMED = "tests/fixtures/timed_case/manifest.py"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    build = "build/tests-timed"
    done = gpurepro("build", TIMED, "--arch", "host", "--build-dir", build)
    assert done.returncode == 0, done.stderr
    out = []
    for name in ("a", "b"):
        journal = tmp_path_factory.mktemp(name) / "run.journal.jsonl"
        run = gpurepro("run", TIMED, "--arms", "fast,slow", "--trials", "2", "--seed", "1",
                       "--build-dir", build,
                       "--journal", str(journal), "--no-record")
        assert run.returncode == 0, run.stderr
        rec = gpurepro("record", str(journal))
        assert rec.returncode == 0, rec.stderr
        doc_path = next(p for p in journal.parent.glob("*.json") if not p.name.endswith(".pyperf.json"))
        out.append((doc_path, json.loads(doc_path.read_text())))
    return out


def test_record_writes_one_benchmark_per_arm_one_run_per_trial(two_runs):
    import pyperf

    doc_path, doc = two_runs[0]
    suite_path = doc_path.with_suffix(".pyperf.json")
    assert suite_path.is_file()
    suite = pyperf.BenchmarkSuite.load(str(suite_path))
    assert sorted(suite.get_benchmark_names()) == ["fast", "slow"]
    for bench in suite.get_benchmarks():
        trials = [t for t in doc["trials"] if t["arm"] == bench.get_name()]
        runs = bench.get_runs()
        assert len(runs) == len(trials) == 2
        for run, trial in zip(runs, trials, strict=True):
            timing = trial["observations"]["timing"]
            assert list(run.values) == timing["values"]
            assert run.get_loops() == timing["loops"]
            assert [v for _, v in run.warmups] == timing["warmup_values"]


def test_pyperf_compare_to_reads_two_runs_with_significance(two_runs):
    (a, _), (b, _) = two_runs
    done = pace.run([sys.executable, "-m", "pyperf", "compare_to", str(a.with_suffix(".pyperf.json")),
                     str(b.with_suffix(".pyperf.json"))], capture_output=True, text=True, cwd=ROOT)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "ERROR" not in out and "Traceback" not in out
    # Each arm is listed with its ratio or named among those hidden as not significant.
    for name in ("fast", "slow"):
        assert f"{name}:" in out or (name in out and "not significant" in out), out


def test_a_document_without_timed_trials_has_no_suite(tmp_path):
    from gpurepro.report.pyperf_suite import timed_suite, write_suite

    doc = json.loads((ROOT / "results" / "tile_unload_race" /
                      "20261201T120321Z_NVIDIA-H200_redacted.json").read_text())  # untimed
    stale = tmp_path / "r.pyperf.json"
    stale.write_text("{}")
    assert timed_suite(doc) is None and write_suite(doc, tmp_path / "r") is None
    assert not stale.exists()


def test_the_fa3_case_records_its_timed_claims_and_suite_on_a_fake_driver(tmp_path):
    """cases/fa3_wgmma_wait's arms, claims and verdict with a timed CPU loop for a driver
    (tests/fixtures/fa3_fake): the timed claims carry their ratio, serialized doing twice the
    work reads slower, and the suite holds one benchmark per arm. The driver's times are
    modelled (1 ns an iteration), so the ratio is the work's, whatever else runs here."""
    import pyperf

    fake = "tests/fixtures/fa3_fake/manifest.py"
    build = "build/tests-fa3-fake"
    assert gpurepro("build", fake, "--arch", "host", "--build-dir", build).returncode == 0
    journal = tmp_path / "run.journal.jsonl"
    run = gpurepro("run", fake, "--trials", "2", "--seed", "2", "--build-dir", build,
                   "--journal", str(journal), "--no-record")
    assert run.returncode == 0, run.stderr
    assert gpurepro("record", str(journal)).returncode == 0
    doc_path = next(p for p in tmp_path.glob("*.json") if not p.name.endswith(".pyperf.json"))
    doc = json.loads(doc_path.read_text())
    claims = {c["name"]: c for c in doc["claims"]}
    assert claims["serialized-slower"]["numbers"]["ratio"] == pytest.approx(2, rel=0.05)
    assert "ratio_ci" in claims["overlap-again-same"]["numbers"]
    assert doc["verdict"]["status"] in ("reproduced", "not_reproduced", "inconclusive")
    suite = pyperf.BenchmarkSuite.load(str(doc_path.with_suffix(".pyperf.json")))
    assert sorted(suite.get_benchmark_names()) == sorted(doc["summary"])
