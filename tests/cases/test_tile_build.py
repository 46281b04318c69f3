"""tile_unload_race builds from the pinned wheels for sm_90 and sm_120 (no GPU).

The toolchains live in virtualenvs that `nox -s tests` makes (their pins conflict: tileiras
13.3 for Hopper, 13.2 as filed for sm_120); outside nox these tests skip with the reason.
"""

from __future__ import annotations

import pytest

from gpurepro.building import elf
from tests import pace
from tests.conftest import ROOT, toolchain_venv

pytestmark = pytest.mark.toolchain


def _build(target: str) -> dict:
    venv = toolchain_venv("tile_unload_race", target)
    if venv is None:
        pytest.skip(f"no tile_unload_race {target} toolchain venv (nox -s tests makes it)")
    build_dir = ROOT / "build" / "tests-toolchain"
    done = pace.run([str(venv / "bin" / "python"), "-m", "gpurepro", "build", "tile_unload_race",
                     "--arch", target, "--build-dir", str(build_dir)],
                    cwd=ROOT, capture_output=True, text=True, startups=pace.BUILD)
    assert done.returncode == 0, done.stderr
    import json

    return json.loads((build_dir / "tile_unload_race" / target / "artifacts.json").read_text())


@pytest.mark.parametrize("target", ["sm_90", "sm_120"])
def test_artifacts_build_from_pinned_wheels(target):
    index = _build(target)
    arts = index["artifacts"]
    expected = {"host", "crash_preload", "libcuda_stub", "seed_repro", "tile_cubin",
                "tile_cubin_other", "cuda_cubin", "cuda_cubin_globals", "tile_cubin_nodebug",
                "cuda_cubin_lineinfo"}
    if target == "sm_120":
        expected.add("tile_cubin_as_filed")  # seed/export_kernel.py runs unchanged for sm_120
    assert expected <= set(arts)
    resolved = index["toolchain"]["resolved"]
    assert resolved["cuda-tile"] == "1.5.0"
    family = "13.2." if target == "sm_120" else "13.3."
    assert resolved["nvidia-cuda-tileiras"].startswith(family)
    assert family.rstrip(".") in index["toolchain"]["tools"]["tileiras"]
    # What separates a Tile IR module from a plain one: the embedded host object.
    tile = elf.sections(ROOT / arts["tile_cubin"]["path"])
    plain = elf.sections(ROOT / arts["cuda_cubin"]["path"])
    assert tile["host_object"]["is_elf"] and tile["host_object"]["machine"] == "EM_X86_64"
    names = {s["name"] for s in tile["host_object"]["symbols"]}
    assert "__CUDA_TILEIR_ON_PRE_LOAD" in names
    assert plain["host_object"] is None
    assert ".nv.global.init" in elf.sections(ROOT / arts["cuda_cubin_globals"]["path"])["sections"]
    # tile-nodebug's cubin differs from the baseline's only in line tables: same code, same
    # .nv.host; the plain -lineinfo control gains them.
    full = elf.section_digests(ROOT / arts["tile_cubin"]["path"])
    nodebug = elf.section_digests(ROOT / arts["tile_cubin_nodebug"]["path"])
    for name in (".text.repro_kernel", ".nv.host"):
        assert full[name] == nodebug[name], name
    assert ".debug_line" in full and ".debug_line" not in nodebug
    assert ".debug_line" in elf.section_digests(ROOT / arts["cuda_cubin_lineinfo"]["path"])
    assert ".debug_line" not in elf.section_digests(ROOT / arts["cuda_cubin"]["path"])
    # Reproducible builds (test_build_reproducible.py builds sm_90 twice): no artifact, the
    # as-filed sm_120 export included, carries the checkout's absolute path.
    for name, entry in arts.items():
        for out in entry["outputs"]:
            data = (ROOT / entry["dir"] / out).read_bytes()
            assert str(ROOT).encode() not in data, f"{name}/{out} embeds {ROOT}"
