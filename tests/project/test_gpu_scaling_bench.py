"""bench/gpu_scaling.py on the CPU: any set of GPU counts, run with the fake case's trials.

With --fake-gpus the GPU ids are labels (no GPU is listed here, so gpurepro accepts them); the
numbers measure the harness's scheduling, and the document says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro.env import fingerprint as envmod
from tests import invoke, pace

ROOT = Path(__file__).resolve().parents[2]
FAKE = "tests/fixtures/fake_case/manifest.py"

pytestmark = pytest.mark.skipif(bool(envmod.gpus().get("gpus")),
                                reason="--fake-gpus is for machines with no GPU listed")


def _bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return pace.run([sys.executable, str(ROOT / "bench" / "gpu_scaling.py"), *args], cwd=ROOT,
                    env=env, capture_output=True, text=True, startups=6 * pace.COMMAND)


# Six harness runs (three GPU counts, two repetitions), each with its imports and its claims'
# simulation: several minutes on two loaded cores, the slow tier's.
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fake_gpu_counts_give_one_valid_document_with_a_list_per_count(fake_build, tmp_path):
    build_dir, _ = fake_build
    proc = _bench("--case", FAKE, "--arms", "crash,ok", "--fake-gpus", "4", "--counts", "1,2,4",
                  "--trials", "2", "--duration", "0.1", "--reps", "2",
                  "--build-dir", str(build_dir.relative_to(ROOT)), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    docs = [p for p in tmp_path.glob("gpu_scaling_*.json") if not p.name.endswith(".pyperf.json")]
    assert len(docs) == 1
    valid = invoke.gpurepro("validate", str(docs[0]))
    assert valid.returncode == 0, valid.stdout + valid.stderr
    doc = json.loads(docs[0].read_text())
    assert set(doc["samples"]) == {"1gpu", "2gpu", "4gpu"}
    assert all(len(v) == 2 and all(x > 0 for x in v) for v in doc["samples"].values())
    assert set(doc["ratios"]) == {"2gpu", "4gpu"}
    assert doc["ratios"]["2gpu"]["goal"] == 1.8 and doc["ratios"]["4gpu"]["goal"] == 3.6
    assert doc["goal"] == {"op": ">=", "value": 3.6}
    assert doc["ratio"]["value"] == doc["ratios"]["4gpu"]["value"]
    assert doc["met"] == all(r["met"] for r in doc["ratios"].values())
    assert doc["parameters"]["fake_gpus"] == 4
    assert doc["parameters"]["gpus"]["4gpu"] == ["0", "1", "2", "3"]
    assert doc["notes"][0].startswith("NOT A GPU MEASUREMENT")
    for key in ("1gpu", "2gpu", "4gpu"):
        w = doc["where_time_goes"][key]
        assert 0 < w["startup_s"] < w["wall_s"]
        assert w["trial_overhead_ms"] is not None  # the ok trials used their budget
        assert len(doc["runs"][key]) == 2 and all(r["trials"] == 4 for r in doc["runs"][key])


def test_fake_documents_are_refused_under_results(fake_build, tmp_path):
    build_dir, _ = fake_build
    proc = _bench("--case", FAKE, "--arms", "crash,ok", "--fake-gpus", "2",
                  "--build-dir", str(build_dir.relative_to(ROOT)), "--out", "results/bench")
    assert proc.returncode != 0
    assert "outside results/" in proc.stderr


@pytest.mark.parametrize("counts, message", [("2,4", "must include 1"), ("1", "at least one count"),
                                             ("1,8", "8 GPUs asked, 4 faked"), ("1,x", "like 1,2,4,8")])
def test_bad_counts_are_refused_before_any_run(fake_build, counts, message):
    build_dir, _ = fake_build
    proc = _bench("--case", FAKE, "--arms", "crash,ok", "--fake-gpus", "4", "--counts", counts,
                  "--build-dir", str(build_dir.relative_to(ROOT)), "--out", "/tmp/never-written")
    assert proc.returncode != 0
    assert message in proc.stderr
