"""Every case's runtime packages on every Python that pyproject.toml supports.

A case's Python drivers import pinned packages (``Case.runtime``: cuda-bindings, numba with its
llvmlite and numpy, nvidia-ml-py), downloaded at build time as wheels for the Python that runs
the trials: the interpreter of the build, which `case` and the case sessions run the trials
with. The slow tests here download every case's wheels from PyPI for this interpreter, have the
run stage prepare every arm (no arm refused for its Python) and import each arm's packages from
its unpacked folder with this interpreter; `tests_py` (make test-slow) runs them on 3.11 and on
3.12.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gpurepro.building import runtime as build_runtime
from gpurepro.case.load import load_case
from gpurepro.run import runtime as run_runtime
from tests.conftest import ROOT

CASES = sorted(p.parent.name for p in (ROOT / "cases").glob("*/manifest.py"))
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"
# The module a trial imports from each distribution a case pins: a new pin needs its line here.
MODULES = {
    "cuda-bindings": "cuda.bindings.driver",
    "cuda-pathfinder": "cuda.pathfinder",
    "numba": "numba",
    "llvmlite": "llvmlite.binding",
    "numpy": "numpy",
    "nvidia-ml-py": "pynvml",
}


def _supported_pythons() -> list[str]:
    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    return [c.rsplit("::", 1)[1].strip() for c in classifiers
            if c.startswith("Programming Language :: Python :: 3.")]


def test_no_case_ties_its_runtime_packages_to_one_python():
    """Each case's wheels are for the Python that runs it, so every supported one runs it."""
    assert _supported_pythons() == ["3.11", "3.12"]
    tied = {name: case.runtime.python for name in CASES
            if (case := load_case(name, ROOT)).runtime is not None and case.runtime.python}
    assert tied == {}


def test_every_pinned_distribution_has_the_module_its_trials_import():
    pinned = {pin.split("==")[0] for name in CASES
              if (rt := load_case(name, ROOT).runtime) is not None
              for pins in rt.packages.values() for pin in pins}
    assert pinned and pinned <= set(MODULES), sorted(pinned - set(MODULES))


@pytest.mark.slow
@pytest.mark.parametrize("case_name", [c for c in CASES if load_case(c, ROOT).runtime])
def test_every_arm_of_a_case_imports_its_pinned_packages_on_this_python(case_name):
    case = load_case(case_name, ROOT)
    # One build folder per Python: the sessions of two Pythons may run side by side.
    build_dir = Path("build") / f"tests-runtimes-{HERE}"
    index = build_runtime.fetch(case, ROOT, build_dir)
    assert index is not None and index["python"] == HERE
    arms = [a.name for a in case.arms]
    # The run stage's preparation: no arm refused for its Python, every site unpacked.
    record = run_runtime.prepare(case, ROOT, build_dir, arms)
    assert record is not None and record["interpreter"].startswith(HERE + ".")
    checked: set[str] = set()
    for arm, entry in record["arms"].items():
        # Every requirement a pin declares is met inside the arm: nothing left to the node.
        assert entry["from_node"] == [], (arm, entry["from_node"])
        assert {n.lower() for n in entry["resolved"]} == \
            {p.split("==")[0].lower() for p in entry["requested"]}, arm
        if entry["site"] in checked:
            continue
        checked.add(entry["site"])
        modules = sorted({MODULES[p.split("==")[0]] for p in entry["requested"]})
        code = "import " + ", ".join(modules)
        # -S: no site-packages, so each module comes from the arm's folder and nowhere else.
        done = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True,
                              text=True, env={"PYTHONPATH": str(ROOT / entry["site"])})
        assert done.returncode == 0, f"{arm} on Python {HERE}: {code}\n{done.stderr[-2000:]}"
