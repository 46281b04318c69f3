"""`gpurepro new`: a scaffolded case builds, exits with the no-GPU status here, and its driver
speaks the protocol (run against tests/fake_libcuda.c); each kind packs into a fresh folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro.case import TrialBudget, TrialContext, load_case
from gpurepro.run.classify import classify
from gpurepro.run.execute import crash_summary
from gpurepro.run.trial import run_trial
from tests import pace
from tests.conftest import ROOT, toolchain_venv

FAKE_BINDINGS = ROOT / "tests" / "fixtures" / "fake_cuda_bindings"


@pytest.fixture()
def repo_copy(tmp_path) -> Path:
    """A checkout without the existing cases: the scaffold must stand on its own."""
    for part in ("src", "native", "noxfile.py", "pyproject.toml", "README.md"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / part)
    (tmp_path / "cases").mkdir()
    return tmp_path


def _gpurepro(root: Path, *args: str, python: str = sys.executable,
              **env: str) -> subprocess.CompletedProcess:
    return pace.run([python, "-m", "gpurepro", *args], cwd=root, capture_output=True,
                    text=True, env={**os.environ, "PYTHONPATH": str(root / "src"), **env})


def _commit(root: Path) -> None:
    """The copy as a git repository with one commit: a pack names the commit it was made from."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m",
                    "the scaffold"], cwd=root, check=True)


def _unpacked(archive: Path, into: Path) -> tuple[list[str], Path]:
    """The pack's member names, and the one folder it unpacks into."""
    import tarfile

    with tarfile.open(archive) as tar:
        names = tar.getnames()
        tar.extractall(into, filter="data")
    return names, next(into.iterdir())


def test_new_writes_a_case_that_loads_and_refuses_bad_names(repo_copy):
    done = _gpurepro(repo_copy, "new", "demo_case")
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (repo_copy / "cases" / "demo_case").iterdir()} == {
        "manifest.py", "kernel.cu", "host.cc", "README.md"}  # a Conclusion, no verdict.py
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
                     text=True, env={"LD_LIBRARY_PATH": str(fake), "FAKE_CUDA_PARAMS": "2", **env})
        return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]

    final = run()[-1]
    assert final["event"] == "final" and final["status"] == "ok", final
    assert final["counters"]["launches"] > 0
    failed = run(FAKE_CUDA_FAIL="cuCtxSynchronize:719:3")[-1]
    assert failed["status"] == "cuda_error" and failed["call"] == "cuCtxSynchronize", failed


def test_new_wrong_result_writes_a_case_with_a_spec_and_a_conclusion(repo_copy):
    done = _gpurepro(repo_copy, "new", "demo_wrong", "--kind", "wrong-result")
    assert done.returncode == 0, done.stderr
    folder = repo_copy / "cases" / "demo_wrong"
    assert {p.name for p in folder.iterdir()} == {"manifest.py", "check.py", "kernel.cu",
                                                  "README.md"}
    pins = _gpurepro(repo_copy, "pins", "demo_wrong", "--arch", "sm_90")
    assert pins.returncode == 0 and "nvidia-cuda-nvcc==13.3.73" in pins.stdout
    bad = _gpurepro(repo_copy, "new", "other", "--kind", "slow")
    assert bad.returncode == 2 and "invalid choice: 'slow'" in bad.stderr


def test_new_python_writes_the_reporters_script_into_seed_and_a_conclusion(repo_copy):
    done = _gpurepro(repo_copy, "new", "demo_py", "--kind", "python")
    assert done.returncode == 0, done.stderr
    folder = repo_copy / "cases" / "demo_py"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "README.md", "manifest.py", "seed/repro.py"]
    case = load_case("demo_py", repo_copy)
    assert case.conclusion is not None and case.conclusion.reproduces == ("as-filed-crashes",)
    assert case.runtime.pins_for("other-release") == ["cuda-pathfinder==1.9.1",
                                                      "cuda-bindings==13.0.3"]
    assert [a.name for a in case.artifacts] == ["crash_preload"] and case.toolchains == {}


def _no_libcuda() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return True
    return False


@pytest.mark.toolchain
def test_the_wrong_result_scaffold_builds_checks_a_wrong_answer_and_packs(repo_copy, native_programs,
                                                                          tmp_path):
    venv = toolchain_venv("tile_unload_race", "sm_90")  # the CUDA 13.3 family, as the scaffold pins
    if venv is None:
        pytest.skip("no sm_90 toolchain environment (nox -s tests makes it)")
    if not _no_libcuda():
        pytest.skip("a CUDA driver is present: not this test's business")
    assert _gpurepro(repo_copy, "new", "demo_wrong", "--kind", "wrong-result").returncode == 0
    _commit(repo_copy)
    out = tmp_path / "demo.tar.gz"
    packed = _gpurepro(repo_copy, "pack", "demo_wrong", "--arch", "sm_90", "--out", str(out),
                       python=str(venv / "bin" / "python"))
    assert packed.returncode == 0, packed.stderr
    index = json.loads((repo_copy / "build" / "demo_wrong" / "sm_90" / "artifacts.json").read_text())

    # The stock driver on the built cubin against the fake libcuda (its device memory gives
    # back what was copied in): |x| differs from x for every negative input, a wrong result.
    fake = native_programs["fake_libcuda"].parent
    env = {"LD_LIBRARY_PATH": str(fake), "FAKE_CUDA_PARAMS": "3", "PYTHONPATH": os.pathsep.join(
        [str(repo_copy / "src"), str(ROOT / "tests" / "fixtures" / "fake_cuda_bindings")])}
    done = pace.run([sys.executable, str(repo_copy / "src/gpurepro/case/cubin_check.py"),
                     "--cubin", str(repo_copy / index["artifacts"]["kernel_O3"]["path"]),
                     "--spec", str(repo_copy / "cases/demo_wrong/check.py"), "--launches", "1"],
                    capture_output=True, text=True, env=env)
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["status"] == "ok" and final["check"]["mismatches"] > 0, done.stderr

    # The pack: the cubins, the crash object and the runtime wheels for the Python that built
    # it (this one), one folder; its run.py runs on that Python.
    names, folder = _unpacked(out, tmp_path / "node")
    assert any(n.endswith("kernel.cubin") for n in names)
    here = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert any(n.endswith(".whl") and "cuda_bindings" in n and here in n for n in names)
    node = pace.run([sys.executable, "run.py"], cwd=folder, capture_output=True, text=True,
                    env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert node.returncode == 5, node.stderr  # every file checked; no CUDA driver here


def test_the_python_scaffold_runs_the_reporters_script_and_packs(repo_copy, native_programs,
                                                                  tmp_path):
    """The python kind needs no CUDA toolchain: the crash object (g++) and the runtime wheels,
    served here to pip from a folder (stand-ins of the pinned releases), are its whole build."""
    if not _no_libcuda():
        pytest.skip("a CUDA driver is present: not this test's business")
    from tests.building.test_runtime_pins import make_wheel

    assert _gpurepro(repo_copy, "new", "demo_py", "--kind", "python").returncode == 0
    _commit(repo_copy)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name, version in (("cuda-bindings", "13.3.1"), ("cuda-bindings", "13.0.3"),
                          ("cuda-pathfinder", "1.9.1")):
        make_wheel(wheels, name, version)
    out = tmp_path / "demo_py.tar.gz"
    packed = _gpurepro(repo_copy, "pack", "demo_py", "--arch", "sm_90", "--out", str(out),
                       PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
    assert packed.returncode == 0, packed.stderr
    done = _gpurepro(repo_copy, "case", "demo_py", "--arch", "sm_90", "--out-dir",
                     str(tmp_path / "out"), PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
    assert done.returncode == 5 and "no CUDA driver is present" in done.stderr, done.stderr
    index = json.loads((repo_copy / "build" / "demo_py" / "sm_90" / "artifacts.json").read_text())

    # The scaffold's own trial command, the stock driver running seed/repro.py, against the fake
    # libcuda and a stand-in cuda.bindings: it survives, names a failed call's error, and a
    # fault inside libcuda is a crash with the native record and the program's frames.
    case = load_case("demo_py", repo_copy)
    ctx = TrialContext("as-filed", case.resolved_arms()["as-filed"],
                       {"crash_preload": repo_copy / index["artifacts"]["crash_preload"]["path"]},
                       TrialBudget(1, 0, 30), repo_copy / "native", case.directory,
                       pythonpath=repo_copy / "src")
    cmd = case.trial_command(ctx)
    fake = native_programs["fake_libcuda"].parent

    def trial(**env: str):
        full = {**os.environ, **cmd.env, "LD_LIBRARY_PATH": str(fake), **env,
                "PYTHONPATH": os.pathsep.join([cmd.env["PYTHONPATH"], str(FAKE_BINDINGS)])}
        done = run_trial(list(cmd.argv), full, repo_copy, 30)
        return done, classify(done.observed, case.exposure.counter)

    done, c = trial()
    assert (c.outcome, c.counters) == ("survived", {"runs": 1}), done.observed.stderr_tail
    assert "done" in done.observed.stderr_tail  # what the program printed
    _, c = trial(FAKE_CUDA_FAIL="cuCtxSynchronize:719:0")
    assert (c.outcome, c.detail, c.call) == ("cuda_error", "CUDA_ERROR_LAUNCH_FAILED",
                                              "cuCtxSynchronize")
    done, c = trial(FAKE_CUDA_CRASH="cuCtxSynchronize:0")
    assert (c.outcome, c.detail) == ("crashed", "SIGSEGV")
    crash = crash_summary(done.observed.crash)
    assert crash["pc_module"] == "libcuda.so.1"
    assert any(f["file"].endswith("seed/repro.py") for f in crash["python_frames"][0]["frames"])

    # The pack: the reporter's script byte for byte, the crash object and the runtime wheels
    # for the Python that built it (this one), one folder; its run.py runs on that Python.
    names, folder = _unpacked(out, tmp_path / "node")
    assert any(n.endswith("libgpurepro_crash.so") for n in names)
    assert sum(n.endswith(".whl") for n in names) == 3
    script = "cases/demo_py/seed/repro.py"
    assert (folder / script).read_bytes() == (repo_copy / script).read_bytes()
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert json.loads((folder / "pack.json").read_text())["python"] == here
    node = pace.run([sys.executable, "run.py"], cwd=folder, capture_output=True, text=True,
                    env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert node.returncode == 5, node.stderr  # every file checked; no CUDA driver here
