"""bench/ records its timings as pyperf benchmarks with metadata: `pyperf compare_to` of two
bench suites sets each configuration side by side and tests the difference."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402

from . import pace  # noqa: E402


def _doc(created: str, values: dict[str, list[float]]) -> dict:
    return {"schema": "gpurepro/bench/1", "name": "harness_overhead", "created_at": created,
            "question": "What does the harness add to each trial?", "unit": "second",
            "parameters": {"seconds": 0.2, "reps": 6, "order": "interleaved ABAB"},
            "samples": values,
            "environment": {"host": {"hostname": "redacted", "os": "Debian GNU/Linux 12",
                                     "kernel": "6.1.0", "cpu": "Some CPU", "cpu_count": 2,
                                     "python": "3.12.3"},
                            "gpu": {"gpus": []}, "repository": {"commit": "abc123"}}}


def test_two_bench_suites_compare_benchmark_by_benchmark(tmp_path):
    a = _doc("2026-12-01T10:00:00Z", {"bare": [0.201, 0.202, 0.2, 0.203, 0.201, 0.202],
                                       "harness": [0.203, 0.204, 0.202, 0.205, 0.203, 0.204]})
    b = _doc("2026-12-02T10:00:00Z", {"bare": [0.201, 0.2, 0.202, 0.201, 0.203, 0.2],
                                       "harness": [0.25, 0.251, 0.249, 0.252, 0.25, 0.251]})
    paths = []
    for name, doc in (("a", a), ("b", b)):
        path = tmp_path / f"{name}.pyperf.json"
        common.pyperf_suite(doc).dump(str(path), replace=True)
        paths.append(str(path))
    done = pace.run([sys.executable, "-m", "pyperf", "compare_to", *paths, "--table"],
                    capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "harness_overhead/harness" in done.stdout and "slower" in done.stdout
    assert "ERROR" not in done.stdout
    meta = pace.run([sys.executable, "-m", "pyperf", "metadata", paths[0]],
                    capture_output=True, text=True)
    for line in ("python_version: 3.12.3", "cpu_count: 2", "hostname: redacted",
                 "gpurepro_commit: abc123", "param_reps: 6", "date: 2026-12-01 10:00:00"):
        assert line in meta.stdout, meta.stdout


def test_committed_bench_suites_carry_their_metadata():
    import pyperf

    for perf in sorted((ROOT / "results" / "bench").glob("*.pyperf.json")):
        doc = json.loads(perf.with_name(perf.name.replace(".pyperf.json", ".json")).read_text())
        suite = pyperf.BenchmarkSuite.load(str(perf))
        assert set(suite.get_benchmark_names()) == {
            f"{doc['name']}/{label}" for label, v in doc["samples"].items() if v}
        for bench in suite.get_benchmarks():
            meta = bench.get_metadata()
            assert meta["python_version"] == doc["environment"]["host"]["python"]
            assert meta["date"] == doc["created_at"].replace("T", " ").rstrip("Z")


def test_two_committed_suites_of_one_bench_compare_with_a_significance_verdict():
    """Two committed harness_overhead suites of 20 repetitions each (a GPU node and a CPU
    machine, both `--reps 20`): pyperf's t-test needs equal sample sizes (with 20 against 30
    it prints "ERROR when testing if values are significant")."""
    suites = sorted(str(p) for p in (ROOT / "results" / "bench").glob("harness_overhead_*.pyperf.json"))
    assert len(suites) >= 2
    done = pace.run([sys.executable, "-m", "pyperf", "compare_to", suites[0], suites[-1]],
                    capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "ERROR" not in done.stdout + done.stderr, done.stdout
    assert "harness_overhead/harness" in done.stdout
