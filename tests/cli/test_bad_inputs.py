"""Every bad input gets one line and its exit status before anything runs: no build step, no
trial, no journal. Harness errors exit 1 and name themselves; nothing shows a traceback."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests import invoke
from tests.conftest import ROOT

FAKE = "tests/fixtures/fake_case/manifest.py"
USAGE, ERROR = 2, 1


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return invoke.gpurepro(*args, cwd=cwd)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("flags, names", [
    (["--trials", "-3"], "--trials"),
    (["--trials", "0"], "--trials"),
    (["--jobs", "-2"], "--jobs"),
    (["--jobs", "0"], "--jobs"),
    (["--timeout", "-5"], "--timeout"),
    (["--max-exposure", "-1"], "--max-exposure"),
    (["--duration", "-1"], "--duration"),
    (["--duration", "0"], "--duration"),
    (["--duration", "nan"], "--duration"),
    (["--duration", "inf"], "--duration"),
    (["--duration", "2", "--timeout", "1"], "--timeout"),
    (["--until-decided", "--look-every", "0"], "--look-every"),
    (["--until-decided", "--look-every", "-1"], "--look-every"),
    (["--until-decided", "--look-every", "6", "--max-trials", "5"], "--look-every"),
    (["--until-decided", "--alpha", "5"], "--alpha"),
    (["--until-decided", "--trials", "4"], "--trials"),
    (["--look-every", "5"], "--look-every"),
    (["--arch", "sm_999"], "--arch"),
    (["--arch"], "--arch"),
    (["--arms", "nope"], "--arms"),
    (["--arms", "ok"], "--arms"),  # without the baseline
    (["--build-dir", "/tmp/elsewhere"], "--build-dir"),
    (["--seed", "-4"], "--seed"),
    (["--resume", ""], "--resume"),  # an unset variable: not a new run of every arm
])
def test_a_bad_flag_is_one_line_and_exit_2_before_anything_runs(flags, names, tmp_path, fake_build):
    _assert_refused_before_anything("run", flags, names, tmp_path)


@pytest.mark.parametrize("flags, names", [
    (["--duration", "0"], "--duration"),
    (["--arch", "sm_999"], "--arch"),
    (["--build-dir", "/tmp/elsewhere"], "--build-dir"),
    (["--until-decided", "--alpha", "5"], "--alpha"),
])
def test_case_refuses_a_bad_flag_before_building(flags, names, tmp_path, fake_build):
    _assert_refused_before_anything("case", flags, names, tmp_path)


def _assert_refused_before_anything(command: str, flags: list[str], names: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _cli(command, FAKE, "--out-dir", str(out), *flags)
    assert done.returncode == USAGE, done.stderr
    assert len(_lines(done.stderr)) == 1, done.stderr
    assert names in done.stderr and "Traceback" not in done.stderr
    assert "building" not in done.stderr and not out.exists()


def test_resume_of_a_folder_is_a_usage_error(tmp_path):
    done = _cli("run", FAKE, "--resume", str(tmp_path))
    assert done.returncode == USAGE and "is a folder" in done.stderr
    assert len(_lines(done.stderr)) == 1


def test_prepare_reads_arch_in_both_spellings_and_refuses_a_missing_value(tmp_path):
    """The nox sessions hand their arguments to `prepare`: ARGS="--arch=sm_120" builds sm_120."""
    out = tmp_path / "prepared.json"
    for spelling in (["--arch=sm_120"], ["--arch", "sm_120"]):
        done = _cli("prepare", "tile_unload_race", *spelling, "--prepare-out", str(out))
        assert done.returncode == 0, done.stderr
        prepared = json.loads(out.read_text())
        assert prepared["target"] == "sm_120" and "nvidia-cuda-tileiras==13.2.86" in prepared["pins"]
    done = _cli("prepare", "tile_unload_race", "--arch", "--prepare-out", str(out))
    assert done.returncode == USAGE and "--arch" in done.stderr and "Traceback" not in done.stderr


def _manifest(tmp_path: Path, folder: str, edit) -> Path:
    path = tmp_path / "cases" / folder / "manifest.py"
    path.parent.mkdir(parents=True)
    src = (ROOT / FAKE).read_text()
    src = re.sub(r"sources=\([^)]*\),", "", src)  # the copy lives outside the repository
    path.write_text(edit(src))
    return path


@pytest.mark.parametrize("folder, edit, field", [
    ("fake_case", lambda s: s.replace("duration_s=0.3", "duration_s=-1"), "defaults.duration_s"),
    ("fake_case", lambda s: s.replace("trial_timeout_s=3", "trial_timeout_s=0"), "defaults.trial_timeout_s"),
    ("fake_case", lambda s: s.replace('counter="cycles"', 'counter=""'), "exposure.counter"),
    ("fake_case", lambda s: s.replace('counter="cycles"', 'counter="cycles", per_trial_outcomes=("survived",)'),
     "exposure.per_trial_outcomes"),
    ("other_name", lambda s: s, "name"),
])
def test_a_bad_manifest_is_one_line_naming_the_field(tmp_path, folder, edit, field):
    path = _manifest(tmp_path, folder, edit)
    done = _cli("run", str(path), "--out-dir", str(tmp_path / "out"))
    assert done.returncode == ERROR, done.stderr
    assert f"manifest.py: {field}:" in done.stderr and "Traceback" not in done.stderr
    assert len(_lines(done.stderr)) == 1


def test_a_misspelled_exposure_counter_is_a_harness_error_naming_it(tmp_path, fake_build):
    build_dir, _ = fake_build
    path = _manifest(tmp_path, "fake_case", lambda s: s.replace('counter="cycles"', 'counter="cycels"'))
    done = _cli("run", str(path), "--arms", "ok,crash", "--trials", "1", "--duration", "0.1",
                "--out-dir", str(tmp_path / "out"), "--build-dir", str(build_dir), "--no-record")
    assert done.returncode == ERROR, done.stderr
    assert "exposure counter 'cycels' is not among the counters" in done.stderr


@pytest.fixture(scope="module")
def recorded(fake_build, tmp_path_factory):
    build_dir, _ = fake_build
    out = tmp_path_factory.mktemp("recorded")
    done = _cli("run", FAKE, "--arms", "ok,crash", "--trials", "1", "--duration", "0.1",
                "--out-dir", str(out), "--build-dir", str(build_dir), "--seed", "1")
    assert done.returncode == 0, done.stderr
    result = next(p for p in (out / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json"))
    return result, result.with_name(result.stem + ".journal.jsonl")


def test_record_never_replaces_a_result_without_force(recorded, tmp_path):
    result, journal = recorded
    before = result.read_bytes()
    done = _cli("record", str(journal))
    assert done.returncode == USAGE and "record never replaces a result" in done.stderr
    assert result.read_bytes() == before
    elsewhere = tmp_path / "copy.json"
    assert _cli("record", str(journal), "--out", str(elsewhere)).returncode == 0
    assert elsewhere.is_file()
    forced = _cli("record", str(journal), "--force")
    assert forced.returncode == 0, forced.stderr


@pytest.mark.parametrize("content, says", [
    (b'{"schema": "gpurepro/result/1", "trials": [', "not JSON"),  # truncated
    (b"hello", "not JSON"),
    (b"\x7fELF\x02\x01\x01\x00\xff\xfe", "not a text file"),
    (b"[1, 2]", "not a result document"),
])
@pytest.mark.parametrize("command", ["report", "record"])
def test_report_and_record_on_a_file_that_is_no_result_say_so_in_one_line(command, content, says, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    done = _cli(command, str(bad))
    assert done.returncode in (USAGE, ERROR) and "Traceback" not in done.stderr, done.stderr
    assert len(_lines(done.stderr)) == 1, done.stderr
    if command == "report":
        assert says in done.stderr


@pytest.mark.parametrize("command", ["report", "record"])
def test_report_and_record_on_a_folder_say_so(command, tmp_path):
    done = _cli(command, str(tmp_path))
    assert done.returncode in (USAGE, ERROR) and "folder" in done.stderr
    assert len(_lines(done.stderr)) == 1 and "Traceback" not in done.stderr


def test_report_on_a_benchmark_document_says_what_it_renders():
    bench = next((ROOT / "results" / "bench").glob("loop_rate_*[0-9]Z.json"))
    done = _cli("report", str(bench))
    assert done.returncode == USAGE and "benchmark document" in done.stderr


def test_a_gpu_model_no_committed_result_names_is_one_line_naming_those_that_do():
    """The horizon and the priors match --gpu-model by the exact name a document gives: 'H100'
    would have planned from every model's results without a word."""
    done = _cli("plan", "tile_unload_race", "--gpu-model", "H100")
    assert done.returncode == USAGE, done.stderr
    assert _lines(done.stderr) == [
        "gpurepro: usage error: --gpu-model 'H100': no committed result of tile_unload_race was "
        "run on it (the models they name: 'NVIDIA H100 80GB HBM3', 'NVIDIA H200')"]
    assert done.stdout == ""
