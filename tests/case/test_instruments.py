"""Instruments as a harness factor, and the open tool set (gpurepro.case.instruments, gpurepro.case.toolchain).

The fake case's real trial processes run under instruments whose tools are stand-ins (``env``,
a fake compute-sanitizer script, plain gdb for cuda-gdb): the trial keeps its outcome, and the
instrument's findings and tool version land in the trial record. A case names tools outside
the defaults, and the build finds them among its pinned wheels' files (a fake wheel here; the
real nvcc wheel in the toolchain-marked test).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpurepro.building.artifacts import build_case
from gpurepro.case import Arm, Tool, TrialBudget, TrialCommand, instruments, load_case, toolchain
from gpurepro.errors import BuildError, ManifestError
from gpurepro.model.plan import PlannedTrial
from gpurepro.run.execute import RunOptions, execute_trial
from tests import pace
from tests.conftest import ROOT, toolchain_venv

BUDGET = TrialBudget(duration_s=0.3, max_exposure=0, timeout_s=5.0)


@pytest.fixture(autouse=True)
def _fresh_lookups():
    toolchain.locate.cache_clear()
    toolchain._version.cache_clear()
    yield
    toolchain.locate.cache_clear()
    toolchain._version.cache_clear()


def _instrumented_case(fake_case, name, inst=None, tools=None):
    """The fake case with an "instrument" factor and an arm per mode under ``name``."""
    extra = {name: inst} if inst is not None else None
    return replace(
        fake_case,
        factors={**fake_case.factors, "instrument": instruments.factor(name, extra=extra)},
        trial_command=instruments.instrumented(fake_case.trial_command, tools=tools, extra=extra),
        arms=[*fake_case.arms, *[Arm(f"{a.name}-{name}", {**a.factors, "instrument": name})
                                 for a in fake_case.arms]],
        tools=tools or {},
    )


def _trial(case, build, mode, instrument):
    _, index = build
    arm = f"{mode.replace('_', '-')}-{instrument}"
    return execute_trial(case, PlannedTrial(0, arm, 0), {"mode": mode, "instrument": instrument},
                         index, ROOT, RunOptions(budget=BUDGET), gpu=None, worker=0)


# ----------------------------------------------------------------------------- the factor


def test_factor_levels_name_instruments():
    f = instruments.factor("coredump", "compute-sanitizer", "cuda-gdb")
    assert f.levels == ("none", "coredump", "compute-sanitizer", "cuda-gdb") and f.default == "none"
    assert {"memcheck", "racecheck", "synccheck", "initcheck"} <= set(instruments.BUILTIN)
    with pytest.raises(instruments.UnknownInstrument, match="valgrind"):
        instruments.factor("valgrind")
    own = instruments.Instrument("valgrind", "prefix", "valgrind")
    assert instruments.factor("valgrind", extra={"valgrind": own}).levels == ("none", "valgrind")


def test_level_none_leaves_the_command_alone():
    cmd = TrialCommand(argv=("prog", "1"), env={"A": "1"}, parser="seed")
    assert instruments.wrap(cmd, "none") is cmd and instruments.wrap(cmd, None) is cmd
    wrapped = instruments.wrap(cmd, "coredump")
    assert wrapped.argv[-3:] == ("--", "prog", "1") and wrapped.parser == "seed"
    assert wrapped.env == {"A": "1"}
    assert wrapped.argv[:3] == (sys.executable, "-P", str(Path(instruments.__file__).resolve()))


# ----------------------------------------------------------------------------- real trials


def test_prefix_instrument_wraps_a_fake_case_trial_and_records_its_version(fake_case, fake_build):
    env_tool = shutil.which("env")
    assert env_tool
    inst = instruments.Instrument("env-wrap", "prefix", "env", ("-u", "GPUREPRO_NOT_SET"))
    case = _instrumented_case(fake_case, "env-wrap", inst, tools={"env": Tool("env")})
    version = toolchain.version_of(env_tool)
    ok = _trial(case, fake_build, "ok", "env-wrap")
    assert ok["outcome"] == "survived" and ok["exposure"] > 0
    found = ok["observations"]["instrument"]
    assert (found["name"], found["tool"], found["found"], found["version"]) == (
        "env-wrap", "env", True, version)
    assert found["path"] == env_tool and found["exit_code"] == 0
    cmd = ok["command"]
    assert cmd[cmd.index("--name") + 1] == "env-wrap" and cmd[cmd.index("--tool-version") + 1] == version
    assert cmd[cmd.index("--") + 1].endswith("testdriver")
    # The wrapper keeps what the trial is: its error, its crash (stderr passes through and the
    # wrapper dies of the program's signal) and its hang (the whole group is killed).
    err = _trial(case, fake_build, "cuda_error", "env-wrap")
    assert (err["outcome"], err["detail"]) == ("cuda_error", "CUDA_ERROR_LAUNCH_FAILED")
    assert err["observations"]["instrument"]["version"] == version
    crash = _trial(case, fake_build, "crash", "env-wrap")
    assert crash["outcome"] == "crashed" and crash["detail"] == "SIGSEGV"
    assert crash["crash"]["pc_module"] == "testdriver"
    hang = _trial(case, fake_build, "hang", "env-wrap")
    assert hang["outcome"] == "hung" and hang["duration_s"] < BUDGET.timeout_s + 2


FAKE_SANITIZER = """#!/bin/sh
# Stands in for compute-sanitizer: a version, a log file, then the program itself.
if [ "$1" = "--version" ]; then
  echo "NVIDIA (R) Compute Sanitizer"
  echo "Version 2099.1.0.0 (build 1) (public-release)"
  exit 0
fi
log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --log-file) log="$2"; shift 2 ;;
    --tool|--print-limit) shift 2 ;;
    *) break ;;
  esac
done
echo "========= COMPUTE-SANITIZER"
echo "========= ERROR SUMMARY: 0 errors" > "$log"
exec "$@"
"""


def test_sanitizer_instrument_with_a_stand_in_tool(fake_case, fake_build, tmp_path, monkeypatch):
    tool = tmp_path / "compute-sanitizer"
    tool.write_text(FAKE_SANITIZER)
    tool.chmod(0o755)
    # The builtin instrument; the case's table makes its tool the host's (this folder's).
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    case = _instrumented_case(fake_case, "racecheck",
                              tools={"compute-sanitizer": Tool("compute-sanitizer")})
    rec = _trial(case, fake_build, "ok", "racecheck")
    assert rec["outcome"] == "survived"
    found = rec["observations"]["instrument"]
    assert found["version"] == "Version 2099.1.0.0 (build 1) (public-release)"
    assert found["sanitizer_errors"] == 0 and found["path"] == str(tool)
    assert found["tool_tail"] == ["========= COMPUTE-SANITIZER"]  # not mixed into the protocol
    assert rec["command"][rec["command"].index("--arg=--tool") + 1] == "--arg=racecheck"


def test_missing_tool_is_not_run(fake_case, fake_build):
    case = _instrumented_case(fake_case, "cuda-gdb",
                              tools={"cuda-gdb": Tool("no-such-debugger-here")})
    rec = _trial(case, fake_build, "crash", "cuda-gdb")
    assert rec["outcome"] == "unsupported" and "tool not found" in rec["detail"]
    assert rec["observations"]["instrument"]["found"] is False


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_debugger_instrument_separates_program_and_debugger_output(fake_case, fake_build):
    case = _instrumented_case(fake_case, "cuda-gdb", tools={"cuda-gdb": Tool("gdb")})
    rec = _trial(case, fake_build, "cuda_error", "cuda-gdb")
    assert (rec["outcome"], rec["detail"]) == ("cuda_error", "CUDA_ERROR_LAUNCH_FAILED")
    assert rec["unparsed_lines"] == 0  # gdb's own lines never reach the protocol
    found = rec["observations"]["instrument"]
    assert found["version"].startswith("GNU gdb") and found["cuda_exception"] is None
    assert found["program_exit_code"] == rec["exit"]["code"] != 0


# ----------------------------------------------------------------------------- the open tool set

FAKE_TOOL = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "fakeit: Cuda compilation tools, release 9.9, V9.9.1"; exit 0; fi
echo "made by fakeit" > "$1"
"""


def _fake_wheel(site: Path) -> Path:
    """An installed distribution "fake-tools" 1.0 whose files include nvidia/fake/bin/fakeit."""
    tool = site / "nvidia" / "fake" / "bin" / "fakeit"
    tool.parent.mkdir(parents=True)
    tool.write_text(FAKE_TOOL)
    tool.chmod(0o755)
    info = site / "fake_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-tools\nVersion: 1.0\n")
    (info / "RECORD").write_text("nvidia/fake/bin/fakeit,,\nfake_tools-1.0.dist-info/METADATA,,\n"
                                 "fake_tools-1.0.dist-info/RECORD,,\n")
    return tool


MANIFEST = '''
from gpurepro.case import Arm, Artifact, Case, Devices, Exposure, Factor, Tool, TrialCommand

CASE = Case(
    name="toolcase", question="Does the build find a tool the harness has never heard of?",
    report_url="", toolchains={"*": ("fake-tools==1.0",)},
    tools={"fakeit": Tool("fakeit", "fake-tools")},
    artifacts=[Artifact(name="made", command=("{fakeit}", "{out}/made.txt"),
                        outputs=("made.txt",))],
    factors={"x": Factor((0,), 0)}, arms=[Arm("a")], baseline="a",
    trial_command=lambda ctx: TrialCommand(argv=("true",)), verdict=lambda a: {},
    devices=Devices(targets={"0.0": "host"}, requires_gpu=False),
    exposure=Exposure(counter="n", unit="n"),
)
'''


def _repo(tmp_path: Path, manifest: str) -> Path:
    root = tmp_path / "repo"
    (root / "native").mkdir(parents=True)
    (root / "cases" / "toolcase").mkdir(parents=True)
    (root / "cases" / "toolcase" / "manifest.py").write_text(manifest)
    return root


def test_case_names_a_tool_outside_the_defaults_and_the_build_finds_it_in_its_wheel(
        tmp_path, monkeypatch):
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    tool = _fake_wheel(site)
    monkeypatch.syspath_prepend(str(site))  # "installed" in this environment
    root = _repo(tmp_path, MANIFEST)
    case = load_case(root / "cases" / "toolcase" / "manifest.py", root)
    assert "fakeit" not in toolchain.DEFAULT_TOOLS
    index = build_case(case, "host", root, Path("build"))
    made = index["artifacts"]["made"]
    assert (root / made["path"]).read_text() == "made by fakeit\n"
    assert made["tools"]["fakeit"] == "fakeit: Cuda compilation tools, release 9.9, V9.9.1"
    assert index["toolchain"]["resolved"] == {"fake-tools": "1.0"}
    assert toolchain.find_tool("fakeit", case.tools) == tool
    # The same lookup against another virtualenv (how tests and sass.py --venv use it).
    monkeypatch.undo()
    toolchain.locate.cache_clear()
    assert toolchain.find_tool("fakeit", case.tools, tmp_path / "venv") == tool
    with pytest.raises(toolchain.ToolNotFound, match="PyPI package fake-tools"):
        toolchain.find_tool("fakeit", case.tools)


def test_a_tool_is_never_taken_from_path_when_a_wheel_is_named(tmp_path, monkeypatch):
    path_dir = tmp_path / "bin"
    path_dir.mkdir()
    (path_dir / "fakeit").write_text(FAKE_TOOL)
    (path_dir / "fakeit").chmod(0o755)
    monkeypatch.setenv("PATH", f"{path_dir}{os.pathsep}{os.environ['PATH']}")
    tools = {"fakeit": Tool("fakeit", "fake-tools")}
    with pytest.raises(toolchain.ToolNotFound, match="fake-tools"):
        toolchain.find_tool("fakeit", tools)
    # ... unless the tool allows the host's copy (an instrument's tool on a GPU node).
    assert toolchain.find_tool("fakeit", {"fakeit": Tool("fakeit", "fake-tools", host=True)}) \
        == path_dir / "fakeit"


def test_an_undeclared_tool_is_an_unknown_placeholder(tmp_path, monkeypatch):
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    _fake_wheel(site)
    monkeypatch.syspath_prepend(str(site))
    root = _repo(tmp_path, MANIFEST.replace('tools={"fakeit": Tool("fakeit", "fake-tools")},', ""))
    case = load_case(root / "cases" / "toolcase" / "manifest.py", root)
    with pytest.raises(BuildError, match=r"unknown placeholder\(s\) \['fakeit'\]"):
        build_case(case, "host", root, Path("build"))


@pytest.mark.parametrize("tools, field", [
    ('{"out": Tool("x")}', "tools.out"),
    ('{"fakeit": "fakeit"}', "tools.fakeit"),
    ('{"fakeit": Tool("bin/fakeit")}', "tools.fakeit.binary"),
])
def test_bad_tool_tables_name_the_field(tmp_path, tools, field):
    root = _repo(tmp_path, MANIFEST.replace('{"fakeit": Tool("fakeit", "fake-tools")}', tools))
    with pytest.raises(ManifestError) as err:
        load_case(root / "cases" / "toolcase" / "manifest.py", root)
    assert err.value.field == field


@pytest.mark.toolchain
def test_build_finds_a_tool_of_the_real_nvcc_wheel_outside_the_defaults(tmp_path):
    """bin2c ships in nvidia-cuda-nvcc and is in no default table: the case declares it."""
    venv = toolchain_venv("tcgen05_alloc_order", "sm_103a")
    if venv is None:
        pytest.skip("no tcgen05_alloc_order sm_103a toolchain venv (nox -s tests makes it)")
    manifest = (MANIFEST.replace('("fake-tools==1.0",)', '("nvidia-cuda-nvcc==13.0.88",)')
                .replace('Tool("fakeit", "fake-tools")', 'Tool("bin2c", "nvidia-cuda-nvcc")')
                .replace('("{fakeit}", "{out}/made.txt")',
                         '("{python}", "{case}/capture.py", "{out}/made.txt", "{fakeit}", '
                         '"--name", "blob", "{case}/manifest.py")'))
    root = _repo(tmp_path, manifest)
    (root / "cases" / "toolcase" / "capture.py").write_text(
        "import subprocess, sys\n"
        "open(sys.argv[1], 'w').write(subprocess.run(sys.argv[2:], capture_output=True, "
        "text=True, check=True).stdout)\n")
    done = pace.run([str(venv / "bin" / "python"), "-m", "gpurepro", "build", "toolcase",
                     "--arch", "host", "--build-dir", "build"], cwd=root,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                    capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    index = json.loads((root / "build" / "toolcase" / "host" / "artifacts.json").read_text())
    made = index["artifacts"]["made"]
    assert "blob" in (root / made["path"]).read_text()
    assert "V13.0.88" in made["tools"]["fakeit"]
    assert index["toolchain"]["resolved"] == {"nvidia-cuda-nvcc": "13.0.88"}


FAKE_CUDA_GDB = """#!/bin/sh
# Stands in for cuda-gdb stopping a program on a CUDA exception it never reports.
if [ "$1" = "--version" ]; then echo "NVIDIA (R) cuda-gdb"; echo "99.1 release"; exit 0; fi
echo 'Thread 1 "prog" received signal CUDA_EXCEPTION_14, Warp Illegal Address.'
echo '[Current focus set to CUDA kernel 0, grid 1, block (0,0,0), thread (0,0,0)]'
echo 'Program terminated with signal SIGKILL, Killed.'
"""


def test_debugger_stop_without_a_final_is_a_named_cuda_error(tmp_path, monkeypatch):
    tool = tmp_path / "cuda-gdb"
    tool.write_text(FAKE_CUDA_GDB)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    cmd = instruments.wrap(TrialCommand(argv=("prog",)), "cuda-gdb")
    done = subprocess.run(cmd.argv, capture_output=True, text=True, check=False)
    assert done.returncode == -9  # the program's signal, passed on
    instrument, final = (json.loads(x) for x in done.stdout.splitlines())
    assert instrument["version"] == "99.1 release" and instrument["program_signal"] == "SIGKILL"
    assert instrument["cuda_exception"] == "CUDA_EXCEPTION_14 (Warp Illegal Address)"
    assert (final["status"], final["error"], final["call"]) == ("cuda_error", "CUDA_EXCEPTION_14",
                                                                "cuda-gdb")
    assert final["observations"]["instrument"]["stop_context"][0].startswith("Thread 1")
