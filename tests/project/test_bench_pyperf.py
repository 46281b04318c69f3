"""bench/ records its timings as pyperf benchmarks with metadata: `pyperf compare_to` of two
bench suites sets each configuration side by side and tests the difference."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402

from tests import pace  # noqa: E402


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


def _pairs():
    docs = {}
    for path in sorted((ROOT / "results" / "bench").glob("*.json")):
        if not path.name.endswith(".pyperf.json"):
            docs.setdefault(json.loads(path.read_text())["name"], []).append(path)
    return [(a, b) for paths in docs.values() for i, a in enumerate(paths) for b in paths[i + 1:]]


def test_every_committed_suite_is_what_its_document_gives(tmp_path):
    # Written again from its JSON source, each committed suite is the same: what pyperf cannot
    # test in them comes from the measurements, not from how the suite was written.
    import pyperf

    for path in sorted((ROOT / "results" / "bench").glob("*.json")):
        if path.name.endswith(".pyperf.json"):
            continue
        again = tmp_path / f"{path.stem}.pyperf.json"
        common.pyperf_suite(json.loads(path.read_text())).dump(str(again), replace=True)
        committed = path.with_name(f"{path.stem}.pyperf.json")
        assert json.loads(again.read_text()) == json.loads(committed.read_text()), committed.name
        assert pyperf.BenchmarkSuite.load(str(committed)).get_benchmarks()


def test_every_pair_of_committed_bench_documents_compares_with_a_verdict_or_says_why():
    """pyperf's test needs the same number of values on both sides; the documents' own
    comparison (Welch's t on log values) takes any numbers, and says where one repetition
    leaves nothing to test."""
    pairs = _pairs()
    assert len(pairs) >= 10
    tested = 0
    for a, b in pairs:
        da, db = json.loads(a.read_text()), json.loads(b.read_text())
        lines = common.compare(da, db)
        common_configs = [k for k in da["samples"] if da["samples"][k] and db["samples"].get(k)]
        assert len([x for x in lines if not x.startswith("only in")]) == len(common_configs)
        for line in lines:
            if line.startswith("only in"):
                continue
            assert ("significant (Welch's t on log values, p = " in line) or \
                   ("one repetition on a side: no test" in line), line
            tested += "Welch" in line
    assert tested >= 4  # harness_overhead and loop_rate, both configurations of each
    loop = [(a, b) for a, b in pairs if a.name.startswith("loop_rate")]
    lines = common.compare(*(json.loads(p.read_text()) for p in loop[0]))
    assert lines[0].startswith("loop_rate/host: 44.5 us (5 reps) -> 52.2 us (3 reps): 1.174x slower; "
                               "significant")


def test_bench_compare_on_the_command_line_and_documents_of_two_benchmarks(tmp_path):
    bench = ROOT / "results" / "bench"
    done = pace.run([sys.executable, str(ROOT / "bench" / "common.py"), "compare",
                     str(bench / "loop_rate_20261129T235156Z.json"),
                     str(bench / "loop_rate_20261130T060150Z.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "loop_rate/seed" in done.stdout and "Welch" in done.stdout
    done = pace.run([sys.executable, str(ROOT / "bench" / "common.py"), "compare",
                     str(bench / "loop_rate_20261129T235156Z.json"),
                     str(bench / "gpu_scaling_20261130T000114Z.json")], capture_output=True, text=True)
    assert done.returncode == 2 and "two benchmarks" in done.stderr
