"""`gpurepro new`: a scaffolded case builds, exits with the no-GPU status here, and its host
driver speaks the protocol (run against tests/fake_libcuda.c)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from . import pace
from .conftest import ROOT, toolchain_venv


@pytest.fixture()
def repo_copy(tmp_path) -> Path:
    """A checkout without the existing cases: the scaffold must stand on its own."""
    for part in ("src", "native", "noxfile.py", "pyproject.toml", "README.md"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / part)
    (tmp_path / "cases").mkdir()
    return tmp_path


def _gpurepro(root: Path, *args: str, python: str = sys.executable) -> subprocess.CompletedProcess:
    return pace.run([python, "-m", "gpurepro", *args], cwd=root, capture_output=True,
                    text=True, env={**os.environ, "PYTHONPATH": str(root / "src")})


def test_new_writes_a_case_that_loads_and_refuses_bad_names(repo_copy):
    done = _gpurepro(repo_copy, "new", "demo_case")
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (repo_copy / "cases" / "demo_case").iterdir()} == {
        "manifest.py", "verdict.py", "kernel.cu", "host.cc", "README.md"}
    pins = _gpurepro(repo_copy, "pins", "demo_case", "--arch", "sm_90")
    assert pins.returncode == 0 and "nvidia-cuda-nvcc==13.3.73" in pins.stdout
    assert _gpurepro(repo_copy, "new", "demo_case").returncode == 2  # exists
    assert _gpurepro(repo_copy, "new", "Bad-Name").returncode == 2


@pytest.mark.toolchain
def test_new_case_builds_and_exits_with_the_no_gpu_status(repo_copy, native_programs, tmp_path):
    venv = toolchain_venv("tile_unload_race", "sm_90")  # the CUDA 13.3 family, as the scaffold pins
    if venv is None:
        pytest.skip("no sm_90 toolchain environment (nox -s tests makes it)")
    assert _gpurepro(repo_copy, "new", "demo_case").returncode == 0
    done = _gpurepro(repo_copy, "case", "demo_case", "--arch", "sm_90", "--out-dir", str(tmp_path / "out"),
                     python=str(venv / "bin" / "python"))
    if done.returncode != 5:
        pytest.skip(f"a CUDA driver is present (exit {done.returncode}): not this test's business")
    assert "no CUDA driver is present" in done.stderr, done.stderr
    index = json.loads((repo_copy / "build" / "demo_case" / "sm_90" / "artifacts.json").read_text())
    host = repo_copy / index["artifacts"]["host"]["path"]

    # The host driver against the fake libcuda: launches counted, final ok; a failing
    # synchronize is a cuda_error naming the call.
    fake = native_programs["fake_libcuda"].parent
    cubin = repo_copy / index["artifacts"]["kernel"]["path"]

    def run(**env: str) -> list[dict]:
        r = pace.run([str(host), "--cubin", str(cubin), "--seconds", "0.3"], capture_output=True,
                     text=True, env={"LD_LIBRARY_PATH": str(fake), **env})
        return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]

    final = run()[-1]
    assert final["event"] == "final" and final["status"] == "ok", final
    assert final["counters"]["launches"] > 0
    failed = run(FAKE_CUDA_FAIL="cuCtxSynchronize:719:3")[-1]
    assert failed["status"] == "cuda_error" and failed["call"] == "cuCtxSynchronize", failed
