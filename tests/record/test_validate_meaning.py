"""`gpurepro validate` checks meaning, not only shape: the summary agrees with the trials, and
no document holds a secret, nor a redacted one a hostname, a home path or a checkout path."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from gpurepro.record.validation import meaning_errors, validation_errors
from tests import invoke

FAKE = "tests/fixtures/fake_case/manifest.py"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return invoke.gpurepro(*args, cwd=root)


@pytest.fixture(scope="module")
def doc(root, fake_build, tmp_path_factory):
    """A real, redacted document: 10 crashing and 2 surviving trials of the fake case."""
    build_dir, _ = fake_build
    out = tmp_path_factory.mktemp("results")
    done = _cli(root, "run", FAKE, "--arms", "crash,ok", "--trials", "10", "--duration", "0.2",
                "--jobs", "4", "--seed", "3", "--out-dir", str(out), "--build-dir", str(build_dir),
                "--redact")
    assert done.returncode == 0, done.stderr
    [path] = [p for p in (out / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json")]
    return json.loads(path.read_text())


def _invalid(root: Path, tmp_path: Path, doc: dict) -> str:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc, indent=1))
    done = _cli(root, "validate", str(path))
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert f"INVALID {path}" in text
    return text


def test_the_real_document_is_valid(root, doc, tmp_path):
    assert doc["summary"]["crash"]["failures"] == 10
    assert doc["environment"]["redacted"] is True
    assert validation_errors(doc) == []
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc, indent=1))
    done = _cli(root, "validate", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ok      {path}" in done.stdout + done.stderr


def test_summary_that_hides_the_crashes_is_invalid(root, doc, tmp_path):
    bad = copy.deepcopy(doc)
    bad["summary"]["crash"]["failures"] = 0  # schema-valid: an integer >= 0
    assert not [e for e in validation_errors(bad) if e not in meaning_errors(bad)]
    text = _invalid(root, tmp_path, bad)
    assert "summary/crash/failures: 0 recorded, 10 recomputed from trials" in text


def test_every_count_is_recomputed(doc):
    bad = copy.deepcopy(doc)
    arm = bad["summary"]["ok"]
    arm["n"] += 1
    arm["n_valid"] -= 1
    arm["outcomes"] = {"survived": 9}
    arm["exposure"]["total"] *= 2
    errors = meaning_errors(bad)
    for field in ("n", "n_valid", "outcomes", "exposure/total"):
        assert any(e.startswith(f"summary/ok/{field}: ") and "recomputed from trials" in e
                   for e in errors), (field, errors)
    # A trial whose outcome was changed after the summary was made is caught the same way.
    bad = copy.deepcopy(doc)
    next(t for t in bad["trials"] if t["outcome"] == "crashed")["outcome"] = "invalid"
    errors = meaning_errors(bad)
    assert "summary/crash/failures: 10 recorded, 9 recomputed from trials" in errors
    assert "summary/crash/n_valid: 10 recorded, 9 recomputed from trials" in errors


def test_redacted_document_with_a_real_hostname_is_invalid(root, doc, tmp_path):
    bad = copy.deepcopy(doc)
    bad["environment"]["host"]["hostname"] = "gpu-node-17.corp.example.com"
    text = _invalid(root, tmp_path, bad)
    assert ("environment/host/hostname: 'redacted' expected in a redacted document, "
            "found 'gpu-node-17.corp.example.com'") in text


def test_redacted_document_with_a_home_path_is_invalid(root, doc, tmp_path):
    bad = copy.deepcopy(doc)
    bad["trials"][0]["stderr_tail"] = "loaded /home/alice/cuda/lib64/libcudart.so.13"
    text = _invalid(root, tmp_path, bad)
    assert ("trials/0/stderr_tail: no home directory expected in a redacted document, "
            "found '/home/alice'") in text


def test_redacted_document_with_a_checkout_path_is_invalid(doc):
    bad = copy.deepcopy(doc)
    bad["trials"][3]["env"] = {"LD_PRELOAD": "/srv/ci/gpurepro/build/x/libgpurepro_crash.so"}
    assert meaning_errors(bad) == [
        "trials/3/env/LD_PRELOAD: no absolute checkout path expected in a redacted document, "
        "found '/srv/ci/gpurepro/build/…'"]
    # Not redacted: where the checkout was is not private, only not portable.
    bad["environment"]["redacted"] = False
    bad["trials"][0]["stderr_tail"] = "/home/alice/x"
    assert meaning_errors(bad) == []


def test_secret_named_variable_is_invalid_even_unredacted(root, doc, tmp_path):
    bad = copy.deepcopy(doc)
    bad["environment"]["redacted"] = False
    bad["environment"]["environment"]["NVIDIA_API_KEY"] = "not-a-key-shape"
    bad["trials"][1]["env"] = {"CUDA_TOKEN": "x"}
    text = _invalid(root, tmp_path, bad)
    assert ("environment/environment/NVIDIA_API_KEY: no variable with a secret-looking name "
            "expected, found one (value not shown)") in text
    assert "trials/1/env/CUDA_TOKEN: no variable with a secret-looking name expected" in text


@pytest.mark.parametrize("token", ["nvapi-" + "A1b2" * 10, "ghp_" + "a" * 36,
                                   "github_pat_" + "B" * 40, "AKIA" + "Q" * 16,
                                   "xoxb-" + "1234-" * 4, "sk-" + "proj-" + "z" * 40])
def test_secret_looking_value_anywhere_is_invalid(doc, token):
    bad = copy.deepcopy(doc)
    bad["environment"]["redacted"] = False
    bad["verdict"]["sentences"].append(f"reproduced with {token} set")
    errors = meaning_errors(bad)
    assert len(errors) == 1 and errors[0].startswith("verdict/sentences/")
    assert "no secret-looking value expected, found " + token[:6] in errors[0]
    assert token not in errors[0]  # the message does not repeat the secret


def test_bench_documents_get_no_meaning_checks():
    assert meaning_errors({"schema": "gpurepro/bench/1"}) == []
    bench = {"schema": "gpurepro/bench/1", "environment": {"environment": {"CUDA_TOKEN": "x"}}}
    assert not [e for e in validation_errors(bench) if "CUDA_TOKEN" in e]
