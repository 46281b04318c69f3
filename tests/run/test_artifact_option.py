"""`--artifact NAME=PATH`: a prebuilt file in place of a built artifact, for every trial of the
run, recorded with its sha256; a bad value is one line and exit 2 before anything runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpurepro.model.files import sha256_file
from gpurepro.run.journal import read
from tests import invoke
from tests.conftest import ROOT

FAKE = "tests/fixtures/fake_case/manifest.py"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return invoke.gpurepro(*args)


def test_the_substitute_runs_and_the_journal_records_it(fake_build, tmp_path):
    build_dir, index = fake_build
    built = index["artifacts"]["testdriver"]
    substitute = ROOT / "build" / "tests-artifact" / "testdriver-copy"
    substitute.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / built["path"], substitute)
    with open(substitute, "ab") as fh:
        fh.write(b"\0substitute")  # another file than the build's, still the same program
    journal = tmp_path / "j.jsonl"
    done = _cli("run", FAKE, "--arms", "crash", "--trials", "2", "--duration", "0.2",
                "--build-dir", str(build_dir), "--journal", str(journal), "--no-record",
                "--artifact", f"testdriver={substitute.relative_to(ROOT)}")
    assert done.returncode == 0, done.stderr
    contents = read(journal)
    entry = contents.header["artifacts"]["testdriver"]
    assert entry["path"] == str(substitute.relative_to(ROOT))
    assert entry["sha256"] == sha256_file(substitute) != built["sha256"]
    assert entry["substituted"] == {"built_sha256": built["sha256"]}
    assert all(t["command"][0] == entry["path"] for t in contents.trials)
    assert {t["outcome"] for t in contents.trials} == {"crashed"}


@pytest.mark.parametrize("value, says", [
    ("nope=build/x", "has no artifact 'nope'"),
    ("testdriver=/tmp/elsewhere", "must be inside the repository"),
    ("testdriver=build/no-such-file", "no such file"),
    ("testdriver", "expected NAME=PATH"),
])
def test_a_bad_artifact_value_is_one_line_and_exit_2(value, says, tmp_path, fake_build):
    build_dir, _ = fake_build
    out = tmp_path / "out"
    done = _cli("run", FAKE, "--build-dir", str(build_dir), "--out-dir", str(out),
                "--artifact", value)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--artifact" in done.stderr
    assert says in done.stderr and not out.exists()


def test_resume_refuses_artifact(tmp_path):
    journal = Path(tmp_path / "j.jsonl")
    journal.write_text("")
    done = _cli("run", FAKE, "--resume", str(journal), "--artifact", "testdriver=build/x")
    assert done.returncode == 2 and "--artifact" in done.stderr
