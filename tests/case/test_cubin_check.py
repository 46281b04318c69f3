"""The stock wrong-result driver (gpurepro/case/cubin_check.py) through the harness, against
tests/fake_libcuda.c (whose device memory gives back what was copied in: the identity), and the
verdict a Conclusion declares instead of a verdict.py; a spec of several kernels (KERNELS,
--kernel) with observations of its own (observe)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpurepro.case import Conclusion, load_case, validate
from gpurepro.errors import ManifestError
from tests import pace
from tests.conftest import ROOT
from tests.invoke import gpurepro

CASE = "tests/fixtures/cubin_check_case/manifest.py"
STOCK = ROOT / "src" / "gpurepro" / "case" / "cubin_check.py"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict:
    """The fixture case built into build/tests and run, every arm twice, then recorded."""
    out = tmp_path_factory.mktemp("cubin_check")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    built = pace.run([sys.executable, "-m", "gpurepro", "build", CASE, "--arch", "host",
                      "--build-dir", "build/tests"], cwd=ROOT, env=env, capture_output=True,
                     text=True)
    assert built.returncode == 0, built.stderr
    done = pace.run([sys.executable, "-m", "gpurepro", "run", CASE, "--arch", "host", "--fixed",
                     "--build-dir", "build/tests", "--out-dir", str(out), "--no-record"],
                    cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    journal = next(out.rglob("*.journal.jsonl"))
    doc = out / "doc.json"
    rec = gpurepro("record", str(journal), "--out", str(doc), cwd=ROOT)
    assert rec.returncode == 0, rec.stderr
    return json.loads(doc.read_text())


def test_each_spec_ends_as_its_outcome(recorded):
    by_arm = {}
    for t in recorded["trials"]:
        by_arm.setdefault(t["arm"], set()).add(t["outcome"])
    assert by_arm == {"right": {"survived"}, "wrong": {"wrong_result"},
                      "launch-fails": {"cuda_error"}}
    wrong = next(t for t in recorded["trials"] if t["arm"] == "wrong")
    assert "64 of 128 elements differ from the reference (exact)" in wrong["detail"]
    failed = next(t for t in recorded["trials"] if t["arm"] == "launch-fails")
    assert "CUDA_ERROR_LAUNCH_FAILED" in failed["detail"]


def test_the_verdict_follows_from_the_conclusion(recorded):
    verdict = recorded["verdict"]
    assert verdict["status"] == "reproduced"
    assert verdict["owner"] == "the wrong spec's reference"
    assert verdict["owner_because"] == ["wrong-is-wrong"]
    assert verdict["next"][0] == "Workaround (claim right-is-right): the right spec"
    assert verdict["next"][1:] == ["Read the check's first mismatches."]


def test_the_comment_shows_the_conclusions_owner_and_workaround(recorded, tmp_path):
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(recorded))
    body = gpurepro("issue", str(doc), cwd=ROOT).stdout
    assert "**Owner:** the wrong spec's reference" in body
    assert "**Workaround:** `right`: the right spec (claim `right-is-right` supported" in body


def _case():
    return load_case(ROOT / CASE, ROOT)


@pytest.mark.parametrize(("decisions", "status"), [
    ({"wrong-is-wrong": "supported"}, "reproduced"),
    ({"wrong-is-wrong": "contradicted"}, "not_reproduced"),
    ({"wrong-is-wrong": "not_decided"}, "inconclusive"),
])
def test_a_conclusion_gives_the_status_its_claims_decide(recorded, decisions, status):
    from gpurepro.analyze.verdict import verdict_for
    from gpurepro.model.result import Result

    doc = json.loads(json.dumps(recorded))
    for c in doc["claims"]:
        c["decision"] = decisions.get(c["name"], c["decision"])
    verdict = verdict_for(_case(), Result.of(doc))
    assert verdict["status"] == status
    assert (verdict["owner"] is not None) == (status == "reproduced")


def test_an_exploratory_decision_names_no_owner(recorded):
    from gpurepro.analyze.verdict import verdict_for
    from gpurepro.model.result import Result

    doc = json.loads(json.dumps(recorded))
    for c in doc["claims"]:
        if c["name"] == "wrong-is-wrong":
            c["family"] = "exploratory"
    verdict = verdict_for(_case(), Result.of(doc))
    assert verdict["status"] == "inconclusive" and verdict["owner"] is None


@pytest.mark.parametrize(("conclusion", "says"), [
    (None, "conclusion: give a Conclusion"),
    (Conclusion(reproduces=()), "conclusion.reproduces: names no claim"),
    (Conclusion(reproduces=("nope",)), "conclusion.reproduces[0]: 'nope' is not one of"),
    (Conclusion(reproduces=("wrong-is-wrong",), owner="x"), "conclusion.owner_because: an owner"),
    (Conclusion(reproduces=("wrong-is-wrong",), workaround=("right",)),
     "conclusion.workaround[0]: 'right' is not one of"),
])
def test_a_bad_conclusion_is_one_line_naming_its_field(conclusion, says):
    case = _case()
    with pytest.raises(ManifestError) as err:
        validate(replace(case, conclusion=conclusion), case.path)
    assert says in str(err.value)


def _stock(tmp_path: Path, spec: str, *, libcuda: bool,
           kernel: str | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "spec.py").write_text(spec)
    (tmp_path / "k.cubin").write_bytes(b"cubin")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if not libcuda:
        env["LD_LIBRARY_PATH"] = str(tmp_path)  # nothing named libcuda.so.1 there
    return pace.run([sys.executable, str(STOCK), "--cubin", str(tmp_path / "k.cubin"), "--spec",
                     str(tmp_path / "spec.py"), *(["--kernel", kernel] if kernel else [])],
                    capture_output=True, text=True, env=env)


def test_a_spec_that_declares_no_output_is_the_cases_error_in_one_line(tmp_path):
    done = _stock(tmp_path, "from gpurepro.case.cubin_check import In, Launch\nKERNEL = 'k'\n"
                  "def launch(seed):\n    return Launch(grid=(1,), block=(1,), "
                  "args=[In('int32', [1])], expected=[])\n", libcuda=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "cubin_check: the launch has no Out or InOut argument: nothing to check"


def test_without_libcuda_the_stock_driver_says_no_driver(tmp_path):
    try:
        import ctypes

        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a libcuda.so.1 is installed here")
    except OSError:
        pass
    done = _stock(tmp_path, (ROOT / "tests/fixtures/cubin_check_case/right.py").read_text(),
                  libcuda=False)
    final = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 3 and final["status"] == "no_driver"


# One cubin, two kernels launched alike, the second with a reference the identity does not meet;
# and what the spec adds to the observations from every launch's outputs.
KERNELS_SPEC = """\
from gpurepro.case.cubin_check import In, Launch, Out, Scalar

KERNELS = ("same", "off_by_one")


def launch(seed, kernel):
    values = [seed + i for i in range(64)]
    expected = values if kernel == "same" else [v + 1 for v in values]
    return Launch(grid=(1,), block=(64,), args=[In("int32", values), Out("int32", 64),
                                                Scalar("int32", 64)], expected=[expected])


def observe(launch, outputs):
    return {"launches_seen": len(outputs), "first_out": outputs[0][0][:2]}
"""


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fake_libcuda")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o",
                    str(folder / "libcuda.so.1"), str(ROOT / "tests" / "fake_libcuda.c")],
                   check=True)
    return folder


def _on_fake(tmp_path: Path, libcuda: Path, *argv: str) -> subprocess.CompletedProcess:
    (tmp_path / "spec.py").write_text(KERNELS_SPEC)
    (tmp_path / "k.cubin").write_bytes(b"cubin")
    env = {**os.environ, "LD_LIBRARY_PATH": str(libcuda), "FAKE_CUDA_PARAMS": "3",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                          str(ROOT / "tests" / "fixtures" / "fake_cuda_bindings")])}
    return pace.run([sys.executable, str(STOCK), "--cubin", str(tmp_path / "k.cubin"), "--spec",
                     str(tmp_path / "spec.py"), "--launches", "2", "--seed", "5", *argv],
                    capture_output=True, text=True, env=env)


@pytest.mark.parametrize(("kernel", "mismatches"), [("same", 0), ("off_by_one", 128)])
def test_a_spec_of_several_kernels_launches_the_one_the_trial_names(tmp_path, fake_libcuda,
                                                                     kernel, mismatches):
    done = _on_fake(tmp_path, fake_libcuda, "--kernel", kernel)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    start, final = events[0], events[-1]
    assert done.returncode == 0 and final["status"] == "ok", done.stderr
    assert start["config"]["kernel"] == kernel
    assert final["check"]["n"] == 128 and final["check"]["mismatches"] == mismatches
    obs = final["observations"]
    assert obs["launches_seen"] == 2 and obs["first_out"] == [5, 6]  # the spec's observe
    assert obs["device"]["name"] == "Fake GPU" and obs["device"]["compute_capability"] == "9.0"
    assert obs["launches_agree"] is True


def test_a_spec_of_several_kernels_needs_the_trial_to_name_one(tmp_path, fake_libcuda):
    done = _on_fake(tmp_path, fake_libcuda)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == ("cubin_check: --kernel None: give one of the spec's KERNELS "
                                   "(same, off_by_one)")
    done = _on_fake(tmp_path, fake_libcuda, "--kernel", "nosuch")
    assert done.returncode == 2 and "--kernel 'nosuch'" in done.stderr


def test_a_kernel_named_for_a_spec_of_one_kernel_is_a_usage_error(tmp_path):
    done = _stock(tmp_path, (ROOT / "tests/fixtures/cubin_check_case/right.py").read_text(),
                  libcuda=False, kernel="kernel")
    assert done.returncode == 2 and "the spec declares one KERNEL, not KERNELS" in done.stderr
