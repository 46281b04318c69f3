"""A resume probes the device as a fresh run does: on a machine with no CUDA driver it exits 5
and leaves the journal byte-identical; on another GPU model, UUID or driver it is refused
unless --other-device, which the journal then records."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from gpurepro.errors import UsageError
from gpurepro.run import journal as journal_mod
from gpurepro.run import session
from tests import pace
from tests.conftest import ROOT

# A committed H200 journal of tile_unload_race, 18 trials (journal format 2, without the hash
# chain). Its manifest has changed since (a resume refuses that first), so the copy's header
# names today's manifest: the journal as this checkout would have started it on the H200.
COMMITTED = ROOT / "results" / "tile_unload_race" / "20261201T101933Z_NVIDIA-H200_redacted.journal.jsonl"
KEEP = 9  # trials kept: the other 9 are what a resume runs


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidiactl").exists()


@pytest.fixture
def partial(tmp_path) -> Path:
    lines = COMMITTED.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["manifest_sha256"] = hashlib.sha256(
        (ROOT / header["manifest"]).read_bytes()).hexdigest()
    path = tmp_path / "partial.journal.jsonl"
    path.write_text(json.dumps(header, sort_keys=True, separators=(",", ":")) + "\n"
                    + "".join(lines[1: 1 + KEEP]))
    return path


@pytest.mark.skipif(_has_gpu(), reason="this machine has a GPU: the no-driver half needs none")
def test_a_partial_h200_journal_resumed_without_a_driver_exits_5_untouched(partial):
    before = partial.read_bytes()
    done = pace.run([sys.executable, "-m", "gpurepro", "run", "tile_unload_race",
                     "--resume", str(partial), "--old-journal"], cwd=ROOT, capture_output=True,
                    text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 5, done.stderr
    assert "no CUDA driver is present" in done.stderr and "is unchanged" in done.stderr
    assert len([ln for ln in done.stderr.splitlines() if ln.strip()]) == 1, done.stderr
    assert partial.read_bytes() == before


def _machine(name: str, uuid: str, driver: str) -> dict:
    return {"available": True, "reason": None, "cuda_driver_api": "13.0", "driver_version": driver,
            "gpus": [{"index": 0, "name": name, "uuid": uuid, "compute_capability": "9.0",
                      "driver_version": driver}]}


def _recorded(partial: Path) -> tuple[str, str, str]:
    header = journal_mod.read(partial).header
    return (header["device"]["name"], header["device"]["uuid"],
            header["environment"]["gpu"]["driver_version"])


@pytest.mark.parametrize("which", ["name", "uuid", "driver"])
def test_a_resume_on_another_gpu_or_driver_is_refused_unless_told(partial, which):
    from gpurepro.case.load import load_case

    case = load_case("tile_unload_race", ROOT)
    name, uuid, driver = _recorded(partial)
    other = {"name": ("NVIDIA H100 80GB HBM3", uuid, driver), "uuid": (name, "GPU-0000", driver),
             "driver": (name, uuid, "575.51.03")}[which]
    before = partial.read_bytes()
    with pytest.raises(UsageError, match="ran on another device or driver.*--other-device"):
        session.resume(case, partial, _machine(*other))
    assert partial.read_bytes() == before
    started = session.resume(case, partial, _machine(*other), other_device=True)
    try:
        assert len(started.done) == KEEP
    finally:
        started.journal.close()
    last = json.loads(partial.read_text().splitlines()[-1])
    assert last["kind"] == "resumed" and last["other_device"] is True and last["differs"]
    assert journal_mod.read(partial).header["resumed"][0]["device"]["name"] == other[0]


def test_a_resume_on_the_journals_own_device_records_it_and_goes_on(partial):
    from gpurepro.case.load import load_case

    case = load_case("tile_unload_race", ROOT)
    started = session.resume(case, partial, _machine(*_recorded(partial)))
    started.journal.close()
    resumed = journal_mod.read(partial).header["resumed"]
    assert [r["other_device"] for r in resumed] == [False]


def test_other_device_without_resume_is_a_usage_error(tmp_path):
    done = pace.run([sys.executable, "-m", "gpurepro", "run", "tests/fixtures/fake_case/manifest.py",
                     "--other-device", "--out-dir", str(tmp_path / "out")], cwd=ROOT,
                    capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 2 and "--other-device goes with --resume" in done.stderr


@pytest.mark.parametrize("nulled", ["device", "driver"])
def test_a_journal_whose_gpu_facts_were_set_to_null_does_not_resume_on_another_gpu(partial, nulled):
    from gpurepro.case.load import load_case

    case = load_case("tile_unload_race", ROOT)
    lines = partial.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    if nulled == "device":
        header["device"].update(name=None, uuid=None)
    else:
        header["environment"]["gpu"]["driver_version"] = None
    partial.write_text(json.dumps(header, sort_keys=True, separators=(",", ":")) + "\n"
                       + "".join(lines[1:]))
    before = partial.read_bytes()
    with pytest.raises(UsageError, match=r"unknown \(journal\).*--other-device"):
        session.resume(case, partial, _machine("NVIDIA H100 80GB HBM3", "GPU-0000", "575.51.03"))
    assert partial.read_bytes() == before
