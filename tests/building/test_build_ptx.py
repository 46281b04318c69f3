"""A PTX's .version lowered for older ptxas releases (gpurepro.building.ptx, a build step): only
the version line changes, and a PTX that uses an instruction, a modifier or a target newer than
the version asked for, or one the tables do not know, is refused. On the PTX nvcc 13.3.73 wrote
for ptxas_abs_clamp (tests/data/ptxas_abs_clamp/kernel.emitted.ptx)."""

from __future__ import annotations

import os
import subprocess
import sys

from gpurepro.building import ptx as lowering
from tests import pace
from tests.conftest import ROOT

EMITTED_PTX = ROOT / "tests" / "data" / "ptxas_abs_clamp" / "kernel.emitted.ptx"


def _lower(*args: str) -> subprocess.CompletedProcess:
    return pace.run([sys.executable, "-m", "gpurepro.building.ptx", *args], capture_output=True,
                    text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                    startups=pace.BUILD)


def test_lowering_rewrites_only_the_version_line(tmp_path):
    out = tmp_path / "kernel.ptx"
    done = _lower(str(EMITTED_PTX), str(out), "8.0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ".version 9.3 -> 8.0"
    before, after = EMITTED_PTX.read_text().splitlines(), out.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [(".version 9.3", ".version 8.0")]


def test_the_real_ptx_needs_nothing_newer_than_isa_8_0():
    needs = lowering.requirements(EMITTED_PTX.read_text())
    assert {"abs", "min", "max", "ld", "st", "cvta"} <= set(needs)
    assert needs[".target sm_90"] == "7.8"
    assert max(lowering.isa(v) for v in needs.values()) <= (8, 0)


def test_lowering_refuses_an_instruction_it_has_no_version_for(tmp_path):
    src = tmp_path / "k.ptx"
    src.write_text(EMITTED_PTX.read_text().replace("\tret;", "\tfence.proxy.async;\n\tret;", 1))
    done = _lower(str(src), str(tmp_path / "out.ptx"), "8.0")
    assert done.returncode == 2 and "fence" in done.stderr
    assert not (tmp_path / "out.ptx").exists()


def test_lowering_refuses_a_modifier_newer_than_the_target(tmp_path):
    src = tmp_path / "k.ptx"
    src.write_text(EMITTED_PTX.read_text().replace("max.s32", "max.relu.s32", 1))
    done = _lower(str(src), str(tmp_path / "out.ptx"), "7.8")
    assert done.returncode == 2 and "max.relu (ISA 8.0)" in done.stderr


def test_lowering_leaves_an_older_version_alone():
    old = EMITTED_PTX.read_text().replace(".version 9.3", ".version 7.8")
    assert lowering.lower(old, "8.0") == (old, "7.8", "7.8")


def test_lowering_without_a_version_to_lower_to_is_a_usage_error(tmp_path):
    done = _lower(str(EMITTED_PTX), str(tmp_path / "out.ptx"))
    assert done.returncode == 2 and done.stderr.startswith("usage: python -m gpurepro.building.ptx")
