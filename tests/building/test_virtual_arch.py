"""{virtual_arch}: the virtual architecture of the build's target, for nvcc's
``-gencode arch={virtual_arch},code={arch}`` (SASS only, as a report's build line often is)."""

from __future__ import annotations

import pytest

from gpurepro.building.artifacts import build_case
from gpurepro.case import load_case
from gpurepro.errors import BuildError

MANIFEST = '''\
from gpurepro.case import Arm, Artifact, Case, Devices, Exposure, TrialCommand

ECHO = "import sys; print(' '.join(sys.argv[1:]))"
CASE = Case(
    name="gencode", question="q", report_url="", toolchains={},
    artifacts=[Artifact(name="line", command=("{python}", "-c", ECHO, "-gencode",
                                              "arch={virtual_arch},code={arch}"),
                        outputs=("line.txt",), stdout="line.txt")],
    factors={}, arms=[Arm("baseline")], baseline="baseline",
    trial_command=lambda ctx: TrialCommand(argv=("true",)), verdict=lambda analysis: {},
    devices=Devices(targets=TARGETS, requires_gpu=False),
    exposure=Exposure(counter="runs", unit="runs"))
'''


def _case(tmp_path, targets):
    folder = tmp_path / "cases" / "gencode"
    folder.mkdir(parents=True)
    (tmp_path / "native").mkdir()
    (folder / "manifest.py").write_text(f"TARGETS = {targets!r}\n" + MANIFEST)
    return load_case("gencode", tmp_path)


@pytest.mark.parametrize(("target", "virtual"), [("sm_103a", "compute_103a"),
                                                 ("sm_90", "compute_90")])
def test_virtual_arch_is_the_targets_compute_architecture(tmp_path, target, virtual):
    case = _case(tmp_path, {"10.3": target})
    index = build_case(case, target, tmp_path, tmp_path / "build")
    line = (tmp_path / index["artifacts"]["line"]["path"]).read_text()
    assert line == f"-gencode arch={virtual},code={target}\n"


def test_virtual_arch_of_a_target_that_is_no_real_architecture_is_a_build_error(tmp_path):
    case = _case(tmp_path, {"0.0": "host"})
    with pytest.raises(BuildError, match=r"\{virtual_arch\}: target must look like sm_103a, not 'host'"):
        build_case(case, "host", tmp_path, tmp_path / "build")
