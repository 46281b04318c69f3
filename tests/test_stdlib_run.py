"""The run stage works with the standard library alone (GPU nodes have no network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpurepro.run.journal import read

from .conftest import ROOT

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
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER, "run", "tests/fixtures/fake_case/manifest.py",
         "--arms", "ok,crash", "--trials", "2", "--duration", "0.2", "--journal", str(journal),
         "--build-dir", str(build_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    # Recording needs the analysis packages: it says so and points at `gpurepro record`.
    assert "gpurepro record" in done.stderr
    header, trials = read(journal).header, read(journal).trials
    assert {t["outcome"] for t in trials} == {"survived", "crashed"}
    json.dumps(header)
