"""The run stage works with the standard library alone (GPU nodes have no network), and so
does importing any module of case/, run/ or env/."""

from __future__ import annotations

import json
import os
import sys

import pytest

from gpurepro.run.journal import read
from tests import pace
from tests.conftest import ROOT

BLOCKER = """
import sys, runpy
BLOCKED = {"scipy", "numpy", "jsonschema", "rich", "matplotlib", "pyperf", "elftools", "pynvml"}
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked for this test: {name}")
        return None
sys.meta_path.insert(0, Blocker())
sys.argv = ["gpurepro"] + sys.argv[1:]
runpy.run_module("gpurepro", run_name="__main__", alter_sys=True)
"""


def test_run_stage_needs_no_third_party_module(fake_build, tmp_path):
    build_dir, _ = fake_build
    journal = tmp_path / "j.jsonl"
    done = pace.run(
        [sys.executable, "-c", BLOCKER, "run", "tests/fixtures/fake_case/manifest.py",
         "--arms", "ok,crash", "--trials", "2", "--duration", "0.2", "--journal", str(journal),
         "--build-dir", str(build_dir)],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    # Recording needs the analysis packages: it says so and points at `gpurepro record`.
    assert "gpurepro record" in done.stderr
    header, trials = read(journal).header, read(journal).trials
    assert {t["outcome"] for t in trials} == {"survived", "crashed"}
    json.dumps(header)


def test_python_driver_trials_need_no_third_party_module(tmp_path):
    """The same for a case whose trials are Python drivers: the harness runs them under the
    blocker, and each driver imports the kit (gpurepro.case.driver) under one of its own
    (tests/fixtures/pydriver.py with GPUREPRO_BLOCK_THIRD_PARTY=1)."""
    from gpurepro.building.artifacts import build_case
    from gpurepro.case import load_case

    manifest = ROOT / "tests" / "fixtures" / "py_fake_case" / "manifest.py"
    build_dir = ROOT / "build" / "tests"
    build_case(load_case(manifest, ROOT), "host", ROOT, build_dir)
    journal = tmp_path / "j.jsonl"
    done = pace.run(
        [sys.executable, "-c", BLOCKER, "run", str(manifest.relative_to(ROOT)),
         "--arms", "ok,crash,noprogress", "--trials", "1", "--duration", "0.3",
         "--journal", str(journal), "--build-dir", str(build_dir)],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    trials = {t["arm"]: t for t in read(journal).trials}
    assert trials["ok"]["outcome"] == "survived"
    assert trials["crash"]["outcome"] == "crashed"
    files = {f["file"] for t in trials["crash"]["crash"]["python_frames"] for f in t["frames"]}
    assert "tests/fixtures/pydriver.py" in files  # the checkout's paths made relative
    assert not any(f.startswith(str(ROOT)) for f in files)
    # A blocked import would have made the driver itself fail (harness_error) before its start.
    assert trials["noprogress"]["outcome"] == "invalid"
    assert trials["ok"]["env"]["PYTHONPATH"] == "src"  # the checkout's own path, made relative


# Importing any module of these packages must need nothing outside the standard library: the
# model the stages share (model/), what a case imports (case/), the run stage (run/) and the
# fingerprint it takes on the node (env/).
STDLIB_PACKAGES = ("case", "env", "model", "run")

STRICT_BLOCKER = """
import importlib, sys
ALLOWED = set(sys.stdlib_module_names) | {"gpurepro"}
class Blocker:
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top not in ALLOWED and not top.startswith("_"):
            raise ImportError(f"not in the standard library: {name}")
        return None
sys.meta_path.insert(0, Blocker())
for name in sys.argv[1:]:
    importlib.import_module(name)
print("imported", len(sys.argv) - 1)
"""


def _modules(package: str) -> list[str]:
    folder = ROOT / "src" / "gpurepro" / package
    names = []
    for path in sorted(folder.rglob("*.py")):
        if "template" in path.relative_to(folder).parts:
            continue  # the `gpurepro new` scaffold's files: copied, never imported
        parts = path.relative_to(ROOT / "src").with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("package", STDLIB_PACKAGES)
def test_every_module_of_the_package_imports_with_the_standard_library_alone(package):
    modules = _modules(package)
    done = pace.run([sys.executable, "-c", STRICT_BLOCKER, *modules], cwd=ROOT,
                    capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"imported {len(modules)}" in done.stdout
