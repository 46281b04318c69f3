"""A whole run through the CLI: journal as it goes, Ctrl-C, --resume, record, validate."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpurepro.run.journal import read

FAKE = "tests/fixtures/fake_case/manifest.py"


def _cli(root: Path, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.Popen([sys.executable, "-m", "gpurepro", *args], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _trial_lines(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if '"kind":"trial"' in line)


# A wait that only a hang would not end is failed after this many times as long as the run took
# to journal the trials it was stopped after (its start-up on this machine, however loaded).
HANG_FACTOR = 10


def _stop_after_trials(proc: subprocess.Popen, journal: Path, trials: int) -> float:
    """SIGINT once the journal holds ``trials`` trial lines (or the run has exited); returns
    how long that took, the scale of the waits that follow."""
    began = time.monotonic()
    while proc.poll() is None and _trial_lines(journal) < trials:
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    return time.monotonic() - began


def test_interrupted_run_resumes_without_losing_or_repeating_trials(root, fake_build, tmp_path):
    build_dir, _ = fake_build
    journal = tmp_path / "run.journal.jsonl"
    args = ["run", FAKE, "--arms", "ok,crash", "--trials", "4", "--duration", "0.4",
            "--seed", "7", "--journal", str(journal), "--build-dir", str(build_dir), "--no-record"]
    proc = _cli(root, *args)
    hang_s = HANG_FACTOR * _stop_after_trials(proc, journal, 2)
    _, err = proc.communicate(timeout=hang_s)
    assert proc.returncode == 130, err
    assert "--resume" in err
    header, done = read(journal).header, read(journal).trials
    assert 2 <= len(done) < 8
    assert header["plan"]["seed"] == 7

    resumed = _cli(root, "run", FAKE, "--resume", str(journal), "--build-dir", str(build_dir),
                   "--no-record")
    _, err = resumed.communicate(timeout=hang_s)
    assert resumed.returncode == 0, err
    _, trials = read(journal).header, read(journal).trials
    assert sorted(t["index"] for t in trials) == list(range(8))
    # Trials finished before the interruption are kept as they were.
    before = {t["index"]: t["started_at"] for t in done}
    assert all(t["started_at"] == before[t["index"]] for t in trials if t["index"] in before)
    # One journal line per trial: nothing ran twice.
    assert _trial_lines(journal) == 8


def test_run_records_a_valid_document_and_report(root, fake_build, tmp_path):
    build_dir, _ = fake_build
    proc = _cli(root, "run", FAKE, "--arms", "crash,ok,noprogress", "--trials", "3",
                "--duration", "0.3", "--out-dir", str(tmp_path), "--build-dir", str(build_dir),
                "--redact")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    docs = [p for p in (tmp_path / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json")]
    assert len(docs) == 1
    doc = json.loads(docs[0].read_text())
    assert doc["summary"]["crash"]["failures"] == 3
    assert doc["summary"]["noprogress"]["outcomes"] == {"invalid": 3}
    assert doc["summary"]["noprogress"]["n_valid"] == 0
    assert doc["environment"]["host"]["hostname"] == "redacted"
    assert doc["crash_sites"][0]["count"] == 3 and doc["crash_sites"][0]["pc_module"] == "testdriver"
    assert docs[0].with_suffix(".md").is_file()
    # No pyperf suite of trial times: a crash race's trial durations are no benchmark.
    assert not docs[0].with_name(docs[0].stem + ".pyperf.json").exists()
    check = _cli(root, "validate", str(docs[0]))
    _, err = check.communicate(timeout=60)
    assert check.returncode == 0, err


def test_gpu_case_without_driver_says_so_plainly(root, tmp_path):
    proc = _cli(root, "run", "tile_unload_race", "--build-dir", "build/never-built", "--arch", "sm_90",
                "--out-dir", str(tmp_path))
    out, err = proc.communicate(timeout=60)
    if proc.returncode != 5:  # a GPU machine: not this test's business
        import pytest

        pytest.skip("a CUDA driver is present")
    assert "no CUDA driver is present" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing was journaled


def test_bad_manifest_names_file_and_field(root, tmp_path):
    bad = tmp_path / "cases" / "bad" / "manifest.py"
    bad.parent.mkdir(parents=True)
    src = (root / FAKE).read_text().replace('baseline="crash"', 'baseline="nope"')
    src = re.sub(r"sources=\([^)]*\),", "", src)  # the copy lives outside the repository
    bad.write_text(src)
    proc = _cli(root, "pins", str(bad))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "manifest.py: baseline: 'nope' is not an arm" in err and "Traceback" not in err


def test_until_decided_records_its_design_and_claim_decisions(root, fake_build, tmp_path):
    build_dir, _ = fake_build
    # The baseline (crash) always fails; "ok" never does: decided at the first look.
    proc = _cli(root, "run", FAKE, "--arms", "crash,ok", "--until-decided", "--max-trials", "10",
                "--look-every", "5", "--duration", "0.2", "--out-dir", str(tmp_path),
                "--build-dir", str(build_dir), "--seed", "4")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    doc_path = next(p for p in (tmp_path / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json"))
    doc = json.loads(doc_path.read_text())
    stopping = doc["plan"]["options"]["stopping"]
    assert stopping["look_thresholds"] == [5] and stopping["looks"] == 2
    assert stopping["alpha_per_look"] == 0.025 and stopping["max_trials"] == 10
    claim = next(c for c in doc["claims"] if c["name"] == "ok-survives")
    assert claim["decision"] == "supported" and claim["look"] == 1
    assert doc["summary"]["ok"]["n"] < 10  # stopped early
    assert doc["verdict"]["owner_because"] == ["ok-survives"]
    assert "### Claims" in doc_path.with_suffix(".md").read_text()


def test_until_decided_runs_undecidable_arms_to_max_trials(root, fake_build, tmp_path):
    """crash and abort fail alike at once: neither 'abort is lower' nor (with so few trials)
    'abort is within 2x' can be decided, so both arms run to --max-trials, 12, not 10."""
    build_dir, _ = fake_build
    proc = _cli(root, "run", FAKE, "--arms", "crash,abort", "--until-decided", "--max-trials", "12",
                "--look-every", "5", "--duration", "0.2", "--out-dir", str(tmp_path),
                "--build-dir", str(build_dir), "--seed", "6", "--jobs", "2")
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    doc_path = next(p for p in (tmp_path / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json"))
    doc = json.loads(doc_path.read_text())
    assert doc["summary"]["crash"]["n"] == 12 and doc["summary"]["abort"]["n"] == 12
    decisions = {c["name"]: c["decision"] for c in doc["claims"]}
    assert decisions == {"abort-like-crash": "not_decided", "abort-lower": "not_decided"}
    assert doc["verdict"]["not_decided"] and doc["verdict"]["owner"] is None


def test_until_decided_resumes_the_same_design(root, fake_build, tmp_path):
    build_dir, _ = fake_build
    journal = tmp_path / "seq.journal.jsonl"
    args = ["run", FAKE, "--arms", "crash,ok,abort", "--until-decided", "--max-trials", "6",
            "--look-every", "3", "--duration", "0.2", "--seed", "9", "--journal", str(journal),
            "--build-dir", str(build_dir), "--no-record"]
    proc = _cli(root, *args)
    hang_s = HANG_FACTOR * _stop_after_trials(proc, journal, 4)
    _, err = proc.communicate(timeout=hang_s)
    assert proc.returncode == 130, err
    resumed = _cli(root, "run", FAKE, "--resume", str(journal), "--build-dir", str(build_dir))
    _, err = resumed.communicate(timeout=hang_s)
    assert resumed.returncode == 0, err
    doc = json.loads(next(p for p in tmp_path.glob("*.json") if not p.name.endswith(".pyperf.json")).read_text())
    assert doc["plan"]["options"]["stopping"]["look_thresholds"] == [3]
    assert {c["name"]: c["decision"] for c in doc["claims"]}["ok-survives"] == "supported"
    assert doc["summary"]["abort"]["n"] == 6  # undecidable: ran to the maximum
    assert max(c["look"] for c in doc["claims"]) <= 2
