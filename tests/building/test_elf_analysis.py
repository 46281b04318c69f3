"""gpurepro.building.elf_analysis: a case analysis of built ELF files' sections side by side,
declared in a manifest that loads without pyelftools."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpurepro.building.elf_analysis import sections_analysis

pytest.importorskip("elftools")


@pytest.fixture(scope="module")
def objects(tmp_path_factory) -> dict[str, Path]:
    if not shutil.which("cc"):
        pytest.skip("needs cc")
    out = tmp_path_factory.mktemp("elf")
    (out / "a.c").write_text("int a = 1;\nint f(void) { return a; }\n")
    (out / "b.c").write_text("int f(void) { return 2; }\n")
    for name in ("a", "b"):
        subprocess.run(["cc", "-c", str(out / f"{name}.c"), "-o", str(out / f"{name}.o")], check=True)
    return {"obj_a": out / "a.o", "obj_b": out / "b.o"}


def test_the_analysis_compares_the_artifacts_it_names_by_label(objects):
    analyze = sections_analysis({"with_data": "obj_a", "plain": "obj_b", "absent": "not_built"})
    found = analyze(objects)
    assert set(found["modules"]) == {"with_data", "plain"}
    assert ".data" in found["modules"]["with_data"]["sections"]
    assert found["differences"] and found["host_symbols"] == {}
    assert "with_data" in found["markdown"] and "plain" in found["markdown"]


def test_nothing_built_is_said_not_raised():
    assert sections_analysis({"x": "missing"})({}) == {"error": "no cubin available to analyse"}
