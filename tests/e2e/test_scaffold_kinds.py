"""`gpurepro new --kind K` for every kind the project has, in a checkout without the existing
cases: each case loads, is short, and plans its trials and GPU time before any GPU is used
(`plan`, nothing built); the slowdown and python-value scaffolds' own trial commands run on the
fake libcuda; a fresh clone scaffolds through `make new` / `nox -s new` without installing the
package, and every case folder is a make target of its own."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro.case import TrialBudget, TrialContext, load_case
from gpurepro.run.classify import classify
from gpurepro.run.trial import run_trial
from tests import pace
from tests.conftest import ROOT

KINDS = ("crash", "wrong-result", "slowdown", "python", "python-value", "runtime-releases")
FAKE_BINDINGS = ROOT / "tests" / "fixtures" / "fake_cuda_bindings"


@pytest.fixture()
def repo_copy(tmp_path) -> Path:
    """A checkout without the existing cases: the scaffold must stand on its own."""
    for part in ("src", "native", "noxfile.py", "pyproject.toml", "README.md", "Makefile", "locks"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / part)
    (tmp_path / "cases").mkdir()
    return tmp_path


def _gpurepro(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return pace.run([sys.executable, "-m", "gpurepro", *args], cwd=root, capture_output=True,
                    text=True, env={**os.environ, "PYTHONPATH": str(root / "src"), **env})


def _case_code_lines(folder: Path) -> int:
    """Non-blank lines of a case's own code: everything but its README and seed/."""
    return sum(1 for p in folder.rglob("*") if p.suffix in (".py", ".cu", ".cc", ".h")
               and not {"seed", "__pycache__"} & set(p.relative_to(folder).parts)
               for line in p.read_text().splitlines() if line.strip())


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_scaffolds_a_short_case_that_plans_before_any_gpu(repo_copy, kind):
    name = "demo_" + kind.replace("-", "_")
    done = _gpurepro(repo_copy, "new", name, "--kind", kind)
    assert done.returncode == 0, done.stderr
    assert f"make plan CASE={name}" in done.stderr
    folder = repo_copy / "cases" / name
    case = load_case(name, repo_copy)
    assert case.conclusion is not None and case.verdict is None or kind == "crash"
    assert _case_code_lines(folder) <= 120
    plan = _gpurepro(repo_copy, "plan", name)
    assert plan.returncode == 0, plan.stderr
    out = plan.stdout
    assert out.startswith(f"plan of {name} for sm_90: nothing built, no GPU used\n")
    trials = sum(int(n) for n in re.findall(r"\((\d+)\)", out.splitlines()[2]))
    assert re.search(rf"^expected GPU time: about \d+ s for {trials} trials", out, re.M), out
    assert "assumed, with no committed trial of" in out  # a new case has no results
    assert not (repo_copy / "build").exists()  # nothing built


def test_the_runtime_releases_scaffold_declares_an_axis_bisect_runs(repo_copy):
    """Its release factor's levels are releases of the package, and its runtime axis runs the
    report's arm release by release between the good release and the report's."""
    from gpurepro.case import RuntimeAxis
    from gpurepro.sweep.bisection import describe_axis

    assert _gpurepro(repo_copy, "new", "demo_rel", "--kind", "runtime-releases").returncode == 0
    case = load_case("demo_rel", repo_copy)
    assert case.runtime is not None and case.runtime.releases == {"release": "cuda-bindings"}
    axis = case.axes["release"]
    assert isinstance(axis, RuntimeAxis) and axis.arms == ("as-filed",)
    assert describe_axis(case, "release")["versions"] == ">=13.0.3,<=13.3.1"
    assert describe_axis(case, "release")["package"] == "cuda-bindings"
    # nothing to fetch before it is asked: plan needs neither the network nor a build
    assert not (repo_copy / "locks" / "runtime" / "demo_rel.json").exists()


def test_a_new_cases_plan_names_the_flag_that_gives_it_rates(repo_copy):
    assert _gpurepro(repo_copy, "new", "demo_case").returncode == 0
    out = _gpurepro(repo_copy, "plan", "demo_case").stdout
    assert "give result documents with --priors-from" in out
    assert "with --from" not in out


def test_the_python_value_scaffold_fails_a_release_that_prints_a_wrong_value(repo_copy,
                                                                            native_programs):
    """Its own trial command: the reporter's stand-in program unchanged, run by the stock
    driver; the value it prints against the driver's own answer (the fake libcuda: 1 device)."""
    assert _gpurepro(repo_copy, "new", "demo_value", "--kind", "python-value").returncode == 0
    case = load_case("demo_value", repo_copy)
    ctx = TrialContext("as-filed", case.resolved_arms()["as-filed"],
                       {"crash_preload": native_programs["preload"]}, TrialBudget(1, 0, 30),
                       repo_copy / "native", case.directory, pythonpath=repo_copy / "src",
                       check=case.check)
    cmd = case.trial_command(ctx)
    fake = native_programs["fake_libcuda"].parent

    def trial(**env: str):
        full = {**os.environ, **cmd.env, "LD_LIBRARY_PATH": str(fake), **env,
                "PYTHONPATH": os.pathsep.join([cmd.env["PYTHONPATH"], str(FAKE_BINDINGS)])}
        done = run_trial(list(cmd.argv), full, repo_copy, 30)
        return done, classify(done.observed, case.exposure.counter, case.check)

    done, c = trial()
    assert c.outcome == "survived", done.observed.stderr_tail
    done, c = trial(FAKE_BINDINGS_DEVICE_COUNT="2")  # a release that miscounts
    assert c.outcome == "wrong_result"
    assert done.observed.events[-1]["observations"]["value"]["got"] == 2
    assert (repo_copy / "cases/demo_value/seed/repro.py").read_text().count("print(") == 1


def test_the_slowdown_scaffold_times_its_arm_and_checks_it_against_the_reference_build(
        repo_copy, native_programs, tmp_path):
    assert _gpurepro(repo_copy, "new", "demo_slow", "--kind", "slowdown").returncode == 0
    case = load_case("demo_slow", repo_copy)
    cubins = {}
    for name in ("kernel_O0", "kernel_O3"):
        cubins[name] = tmp_path / f"{name}.cubin"
        cubins[name].write_bytes(name.encode())  # the fake libcuda loads anything
    ctx = TrialContext("as-filed", case.resolved_arms()["as-filed"],
                       {"crash_preload": native_programs["preload"], **cubins},
                       TrialBudget(30, 0, 120), repo_copy / "native", case.directory,
                       pythonpath=repo_copy / "src", check=case.check)
    cmd = case.trial_command(ctx)
    env = {**os.environ, **cmd.env, "LD_LIBRARY_PATH": str(native_programs["fake_libcuda"].parent),
           "FAKE_CUDA_PARAMS": "4",
           "PYTHONPATH": os.pathsep.join([cmd.env["PYTHONPATH"], str(FAKE_BINDINGS)])}
    done = run_trial(list(cmd.argv), env, repo_copy, 120)
    c = classify(done.observed, case.exposure.counter, case.check)
    assert c.outcome == "survived", done.observed.stderr_tail
    final = done.observed.events[-1]
    assert final["observations"]["timing"]["loops"] == 50
    assert len(final["observations"]["timing"]["values"]) == 20
    assert events_config(done)["reference"]["cubin"] == "kernel_O3.cubin"


def events_config(done) -> dict:
    return done.observed.events[0]["config"]


def _base_python() -> str:
    """An interpreter without this package installed: what a fresh clone has."""
    return getattr(sys, "_base_executable", sys.executable)


def test_a_fresh_clone_scaffolds_through_the_nox_session_without_an_install(repo_copy):
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    gone = subprocess.run([_base_python(), "-m", "gpurepro", "new", "x"], cwd=repo_copy,
                          capture_output=True, text=True, env=bare, check=False)
    if gone.returncode == 0:
        pytest.skip("gpurepro is installed for the base interpreter: no fresh clone to stand for")
    assert "No module named gpurepro" in gone.stderr  # why a plain `python -m gpurepro` fails
    done = subprocess.run([_base_python(), "-c", RUN_SESSION, str(repo_copy / "noxfile.py"),
                           "new", "demo_clone", "--kind", "python-value"], cwd=repo_copy,
                          capture_output=True, text=True, env=bare, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert (repo_copy / "cases/demo_clone/answer.py").is_file()


# The noxfile's session run for real, under a stand-in `nox` (the test environment has none):
# session.run runs its command with the environment it is given.
RUN_SESSION = r'''
import os, runpy, subprocess, sys, tempfile, types
sessions = {}
nox = types.ModuleType("nox")
nox.options = types.SimpleNamespace()
nox.Session = object
def session(*args, **kw):
    def keep(fn):
        sessions[kw.get("name") or fn.__name__] = fn
        return fn
    return keep(args[0]) if args and callable(args[0]) else keep
nox.session = session
nox.parametrize = lambda *a, **k: (lambda fn: fn)
sys.modules["nox"] = nox
class Session:
    def __init__(self, posargs):
        self.posargs, self.tmp = posargs, tempfile.mkdtemp()
    def create_tmp(self):
        return self.tmp
    def run(self, *args, env=None, **kw):
        subprocess.run(list(args), env={**os.environ, **(env or {})}, check=False)
    def log(self, *args):
        pass
    def error(self, message):
        raise SystemExit(message)
runpy.run_path(sys.argv[1])
s = Session(sys.argv[3:])
try:
    sessions[sys.argv[2]](s)
except SystemExit as exc:
    raise SystemExit(exc.code)
'''


def test_every_case_folder_is_a_make_target_and_new_and_plan_are_too(repo_copy):
    for name in ("demo_case", "other"):
        (repo_copy / "cases" / name).mkdir()
        (repo_copy / "cases" / name / "manifest.py").write_text("")

    def dry(*argv: str) -> str:
        done = subprocess.run(["make", "-n", *argv], cwd=repo_copy, capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert re.search(r"nox -s demo_case -- --deep$", dry("demo-case", "ARGS=--deep"), re.M)
    assert re.search(r"nox -s other -- $", dry("other"), re.M)
    assert re.search(r"nox -s new -- my_bug --kind python-value$",
                     dry("new", "NAME=my_bug", "KIND=python-value"), re.M)
    assert re.search(r"nox -s new -- my_bug --kind crash$", dry("new", "NAME=my_bug"), re.M)
    assert re.search(r"nox -s plan -- demo_case $", dry("plan", "CASE=demo_case"), re.M)
    assert json.loads(json.dumps(dry("demo-case")))  # plain text
