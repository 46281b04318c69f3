"""Artifact.stdout: a command's standard output captured as one of its outputs, with no shell
(a checkout whose path has a space builds it), its standard error in the build log."""

from __future__ import annotations

import pytest

from gpurepro.building.artifacts import build_case
from gpurepro.case import load_case
from gpurepro.errors import ManifestError

MANIFEST = '''\
from gpurepro.case import Arm, Artifact, Case, Devices, Exposure, TrialCommand

PRINTS = "import sys; print('listing of', sys.argv[1]); print('a warning', file=sys.stderr)"
CASE = Case(
    name="printed", question="q", report_url="", toolchains={},
    artifacts=[Artifact(name="listing", command=("{python}", "-c", PRINTS, "{case}/input file.txt"),
                        outputs=(OUTPUT,), stdout="listing.txt", sources=("input file.txt",))],
    factors={}, arms=[Arm("baseline")], baseline="baseline",
    trial_command=lambda ctx: TrialCommand(argv=("true",)), verdict=lambda analysis: {},
    devices=Devices(targets={"0.0": "host"}, requires_gpu=False),
    exposure=Exposure(counter="runs", unit="runs"))
'''


def _repo(tmp_path, output: str):
    root = tmp_path / "a checkout with spaces"
    folder = root / "cases" / "printed"
    folder.mkdir(parents=True)
    (root / "native").mkdir()
    (folder / "input file.txt").write_text("x\n")
    (folder / "manifest.py").write_text(f"OUTPUT = {output!r}\n" + MANIFEST)
    return root


def test_a_commands_standard_output_is_its_output_file(tmp_path):
    root = _repo(tmp_path, "listing.txt")
    index = build_case(load_case("printed", root), "host", root, root / "build")
    entry = index["artifacts"]["listing"]
    assert (root / entry["path"]).read_text() == "listing of cases/printed/input file.txt\n"
    log = (root / entry["dir"] / "build.log").read_text()
    assert "a warning" in log and "# standard output to listing.txt" in log
    assert "listing of cases" not in log  # the command line is there, its output is not


def test_a_stdout_that_is_not_an_output_is_the_manifests_error(tmp_path):
    root = _repo(tmp_path, "other.txt")
    with pytest.raises(ManifestError, match=r"artifacts\[0\]\.stdout: 'listing.txt' is not one "
                                            r"of its outputs \(other.txt\)"):
        load_case("printed", root)
