"""The harness's SASS tooling (gpurepro.building.sass): both listings parsed alike, the
instruction facts and diff, the finder falling back to nvdisasm where cuobjdump cannot read a
cubin, and the build step that writes a cubin's SASS beside it. On the listings the pinned
13.2.51 disassemblers printed (tests/data)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from gpurepro.building import sass
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
NVDISASM_12_6_77 = DATA / "ptxas_abs_clamp" / "ptxas-12.6.77.nvdisasm.txt"
CUOBJDUMP_12_6_85 = DATA / "ptxas_abs_clamp" / "ptxas-12.6.85.cuobjdump-sass.txt"
TCGEN05 = DATA / "tcgen05" / "alloc_cg2_sm_103a.sass"


def test_both_listings_parse_alike():
    bad = sass.parse_listing(NVDISASM_12_6_77.read_text())
    good = sass.parse_listing(CUOBJDUMP_12_6_85.read_text())
    assert sorted(bad) == sorted(good) == ["abs_clamp", "abs_only", "clamp_only"]
    # nvdisasm's kernel ends at the next section: no .byte directive, no data, only code
    assert all(not i.opcode.startswith(".") for k in bad.values() for i in k)
    load = next(i for i in bad["abs_clamp"] if i.opcode == "LDG.E")
    assert load.operands == ["R2", "desc[UR4][R2.64]"]
    assert [i.text for i in bad["abs_clamp"] if i.opcode.startswith("VIMNMX")] == ["VIMNMX.RELU R0, R2, 0x5, PT"]
    assert sass.parse_listing(TCGEN05.read_text())["k_alloc_cg2"][0].opcode == "LDC"


def test_presence_is_the_measured_fact_a_verdict_states():
    bad = sass.parse_listing(NVDISASM_12_6_77.read_text())
    good = sass.parse_listing(CUOBJDUMP_12_6_85.read_text())
    watch = [("abs_clamp", "IABS"), ("abs_only", "IABS"), ("nosuch", "IABS")]
    assert sass.presence(bad, watch) == {"abs_clamp:IABS": False, "abs_only:IABS": True,
                                         "nosuch:IABS": None}
    assert sass.presence(good, watch)["abs_clamp:IABS"] is True
    assert sass.has_opcode(good["abs_clamp"], "VIMNMX")  # VIMNMX.RELU is a VIMNMX


def test_the_diff_names_the_instructions_that_changed():
    bad = sass.parse_listing(NVDISASM_12_6_77.read_text())
    good = sass.parse_listing(CUOBJDUMP_12_6_85.read_text())
    d = sass.diff(bad["abs_clamp"], good["abs_clamp"])
    assert not d["same"] and d["only_b"]["IABS"] == 1 and "IABS" not in d["only_a"]
    assert d["changes"][0] == {"a": ["VIMNMX.RELU R0, R2, 0x5, PT", "LEA R7, R0, R0, 0x1"],
                               "b": ["IABS R0, R2", "VIMNMX.RELU R0, R0, 0x5, PT",
                                     "IMAD R7, R0, 0x3, RZ"]}
    # The two disassemblers write a branch target differently: compare listings of one reader
    assert d["changes"][1] == {"a": ["BRA `(.L_x_2)"], "b": ["BRA 0x160"]}
    same = sass.diff(bad["abs_only"], bad["abs_only"])
    assert same == {"same": True, "only_a": {}, "only_b": {}, "changes": []}
    both = sass.diff_listings(bad, good)
    assert set(both) == {"abs_clamp", "abs_only", "clamp_only"}


def _tool(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_the_finder_falls_back_to_nvdisasm_and_says_why(tmp_path):
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(b"\x7fELF")
    cuobjdump = _tool(tmp_path / "cuobjdump",
                      'echo "cuobjdump info    : File \'$2\' does not contain device code" >&2\nexit 0\n')
    nvdisasm = _tool(tmp_path / "nvdisasm", f'cat "{NVDISASM_12_6_77}"\n')
    got = sass.disassemble(cubin, {"cuobjdump": cuobjdump, "nvdisasm": nvdisasm})
    assert got.read_by == "nvdisasm" and "abs_clamp" in got.listing
    assert got.attempts["cuobjdump"]["status"] == "unreadable"
    assert "does not contain device code" in got.attempts["cuobjdump"]["reason"]
    assert str(tmp_path) not in got.attempts["cuobjdump"]["reason"]  # the file name only
    none = sass.disassemble(cubin, {"cuobjdump": cuobjdump, "nvdisasm": None})
    assert none.read_by is None and none.attempts["nvdisasm"]["status"] == "missing"
    record = got.record()
    assert "BRA `(.L_x_2)" in record["kernels"]["abs_clamp"] and record["read_by"] == "nvdisasm"


def test_one_reader_for_listings_compared_with_each_other(tmp_path):
    old, new = tmp_path / "old.cubin", tmp_path / "new.cubin"
    old.write_bytes(b"old")
    new.write_bytes(b"new")
    # cuobjdump reads only the new cubin, nvdisasm both: both are read by nvdisasm.
    cuobjdump = _tool(tmp_path / "cuobjdump", f'case "$2" in *new*) cat "{CUOBJDUMP_12_6_85}";; *) exit 1;; esac\n')
    nvdisasm = _tool(tmp_path / "nvdisasm", f'cat "{NVDISASM_12_6_77}"\n')
    got, reader = sass.common_reader([old, new], {"cuobjdump": cuobjdump, "nvdisasm": nvdisasm})
    assert reader == "nvdisasm" and [d.read_by for d in got] == ["nvdisasm", "nvdisasm"]
    assert got[1].attempts["cuobjdump"]["status"] == "ok"  # tried first, and kept


def _run_step(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpurepro.building.sass", *argv], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})


def test_the_build_step_compiles_then_writes_the_sass_a_case_analysis_reads(tmp_path):
    """An artifact's command `python -m gpurepro.building.sass OUT TOOL=PATH -- COMPILER...`: the
    compiler's command, then sass.json beside its output, read back per release."""
    nvdisasm = _tool(tmp_path / "nvdisasm", 'if [ "$1" = --version ]; then\n'
                     'echo "Cuda compilation tools, release 13.2, V13.2.51"; exit 0; fi\n'
                     f'cat "{NVDISASM_12_6_77}"\n')
    ptx = tmp_path / "kernel.ptx"
    ptx.write_text("ptx")
    out = tmp_path / "cubin_12.6.77" / "kernel.cubin"
    out.parent.mkdir()
    done = _run_step(str(out), f"nvdisasm={nvdisasm}", "--", "cp", str(ptx), str(out))
    assert done.returncode == 0, done.stderr
    read = sass.read_builds({"cubin_12.6.77": out, "ptx": ptx}, "cubin")
    assert list(read) == ["12.6.77"] and read["12.6.77"]["version"] == "13.2.51"
    assert read["12.6.77"]["disassembler"] == "nvdisasm"
    assert "VIMNMX.RELU R0, R2, 0x5, PT" in read["12.6.77"]["listing"]["abs_clamp"]
    assert sass.analysis("cubin", per="ptxas")({"cubin_12.6.77": out}) == {
        "available": True, "by_ptxas": read}
    # a compiler that fails is the build's failure, with its exit status; nothing is written
    failed = tmp_path / "failed" / "kernel.cubin"
    failed.parent.mkdir()
    done = _run_step(str(failed), f"nvdisasm={nvdisasm}", "--", "sh", "-c", "exit 3")
    assert done.returncode == 3 and "without writing" in done.stderr
    assert not (failed.parent / "sass.json").exists()


def test_the_build_step_names_its_usage(tmp_path):
    for argv in ([str(tmp_path / "k.cubin"), "--", "true"],
                 [str(tmp_path / "k.cubin"), "objdump=/bin/true", "--", "true"],
                 [str(tmp_path / "k.cubin"), "nvdisasm=/bin/true"]):
        done = _run_step(*argv)
        assert done.returncode == 2 and done.stderr.startswith("usage: python -m gpurepro.building.sass")
