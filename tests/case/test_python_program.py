"""The stock Python-program driver (gpurepro/case/python_program.py) on a machine with no GPU:
a program's clean exit, crash, CUDA error surfaced as an exception, missing import and other
failure, each through the harness's classification, against tests/fake_libcuda.c."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from gpurepro.case import TrialBudget, TrialContext
from gpurepro.case.python_program import cuda_error
from gpurepro.run.classify import classify
from gpurepro.run.execute import crash_summary
from gpurepro.run.trial import run_trial
from tests.conftest import ROOT, have_libcuda


@pytest.fixture(scope="module")
def bins(native_programs) -> dict[str, Path]:
    return {"preload": native_programs["preload"], "fake": native_programs["fake_libcuda"].parent}


def _trial(bins, tmp_path, source, *args, fake=True, counter="runs", **options):
    script = tmp_path / "repro.py"
    script.write_text(textwrap.dedent(source))
    ctx = TrialContext("as-filed", {}, {}, TrialBudget(1, 0, 30), ROOT / "native", tmp_path)
    cmd = ctx.python_program(script, *args, preload=bins["preload"], counter=counter, **options)
    env = {**os.environ, **cmd.env, **({"LD_LIBRARY_PATH": str(bins["fake"])} if fake else {})}
    done = run_trial(list(cmd.argv), env, ROOT, 30)
    return done, classify(done.observed, counter)


def _events(done):
    return done.observed.events


def test_a_clean_exit_survives_and_the_start_event_names_the_program(bins, tmp_path):
    done, c = _trial(bins, tmp_path, """
        import sys
        print("the program's own output", sys.argv[1:])
        """, "--size", "3", versions=("pip", "not-installed-anywhere"))
    assert (c.outcome, c.detail, c.counters) == ("survived", "budget used up", {"runs": 1})
    start = _events(done)[0]
    assert start["event"] == "start" and start["driver"] == "python-program"
    assert start["config"]["program"] == "repro.py" and start["config"]["args"] == ["--size", "3"]
    assert start["config"]["not_installed_anywhere"] is None and start["config"]["pip"]
    assert done.observed.unparsed_lines == 0  # the program's prints went to standard error
    assert "the program's own output ['--size', '3']" in done.observed.stderr_tail


def test_a_segfault_is_a_crash_with_the_native_record_and_the_programs_frames(bins, tmp_path):
    done, c = _trial(bins, tmp_path, """
        import ctypes

        def query():
            return ctypes.string_at(0)

        query()
        """, counter="calls")
    assert (c.outcome, c.detail, c.counters) == ("crashed", "SIGSEGV", {"calls": 1})
    s = crash_summary(done.observed.crash)
    assert s["threads"][0]["call"] == "program" and s["threads"][0]["inside"]
    top = s["python_frames"][0]["frames"]
    assert any(f["function"] == "query" and f["file"].endswith("repro.py") for f in top)


@pytest.mark.parametrize("raised, name, call", [
    ('RuntimeError("cuCtxSynchronize failed: CUDA_ERROR_LAUNCH_FAILED")',
     "CUDA_ERROR_LAUNCH_FAILED", "cuCtxSynchronize"),
    # numba's CudaAPIError: a code, named by the driver (the fake's cuGetErrorName).
    ('type("CudaAPIError", (Exception,), {"code": 201})("[201] Call to cuCtxGetDevice results in '
     'UNKNOWN_CUDA_ERROR")', "CUDA_ERROR_INVALID_CONTEXT", "cuCtxGetDevice"),
])
def test_an_exception_carrying_a_cuda_error_is_that_error(bins, tmp_path, raised, name, call):
    done, c = _trial(bins, tmp_path, f"raise {raised}\n")
    assert (c.outcome, c.detail, c.call) == ("cuda_error", name, call), done.observed.stderr_tail
    assert c.errors == {name: 1} and c.counters == {"runs": 1}


def test_an_import_the_node_cannot_satisfy_is_unsupported(bins, tmp_path):
    done, c = _trial(bins, tmp_path, "import gpurepro_no_such_package\n")
    assert c.outcome == "unsupported" and "gpurepro_no_such_package" in c.detail


@pytest.mark.parametrize("source, said", [
    ("raise ValueError('not a CUDA error')\n", "ValueError: not a CUDA error"),
    ("import sys\nsys.exit(3)\n", "exit status 3"),
])
def test_another_failure_is_a_harness_error_or_with_exit_check_a_wrong_result(bins, tmp_path,
                                                                              source, said):
    done, c = _trial(bins, tmp_path, source)
    assert c.outcome == "harness_error"
    assert ("ValueError: not a CUDA error" in c.detail if "Value" in said
            else c.detail.startswith("exited with status 3 without a final record"))
    done, c = _trial(bins, tmp_path, source, exit_check=True)
    assert c.outcome == "wrong_result" and said in c.detail, c.detail
    done, c = _trial(bins, tmp_path, "pass\n", exit_check=True)
    assert c.outcome == "survived" and c.check == {"kind": "exact", "n": 1, "mismatches": 0,
                                                   "first": []}


def test_an_instrumented_variant_starts_the_trial_and_counts_its_exposure(bins, tmp_path):
    done, c = _trial(bins, tmp_path, """
        from gpurepro.case import python_program as trial

        trial.start(target="builtin", fix_applied=True)
        trial.expose()
        trial.observe(device="Fake GPU", ok=trial.error_name(201))
        """, instrumented=True, versions=("pip",), counter="calls")
    start = _events(done)[0]
    assert start["event"] == "start"
    assert start["config"]["target"] == "builtin" and start["config"]["fix_applied"] is True
    assert start["config"]["pip"] and start["config"]["program"] == "repro.py"
    assert (c.outcome, c.counters) == ("survived", {"calls": 1})
    assert c.observations == {"device": "Fake GPU", "ok": "CUDA_ERROR_INVALID_CONTEXT"}
    done, c = _trial(bins, tmp_path, """
        from gpurepro.case import python_program as trial

        raise trial.Unsupported("numba.cuda is not importable: no numba here")
        """, instrumented=True, counter="calls")
    assert (c.outcome, c.detail) == ("unsupported", "numba.cuda is not importable: no numba here")
    assert [e["event"] for e in _events(done)] == ["start", "final"]
    assert c.counters == {"calls": 0}  # it counted nothing


def test_a_crash_inside_a_named_call_names_it(bins, tmp_path):
    done, c = _trial(bins, tmp_path, """
        import ctypes
        from gpurepro.case import python_program as trial

        trial.expose()
        trial.enter("cuSetup")
        trial.leave()
        trial.enter("cuQuery")
        ctypes.string_at(0)
        """, instrumented=True, calls=("cuSetup", "cuQuery"), counter="calls")
    assert (c.outcome, c.counters) == ("crashed", {"calls": 1})
    assert crash_summary(done.observed.crash)["threads"] == [
        {"thread": 0, "call": "cuQuery", "inside": True, "calls": 3, "faulting": True}]


def test_an_error_that_means_no_device_is_unsupported(bins, tmp_path):
    done, c = _trial(bins, tmp_path, "raise RuntimeError('cuInit: CUDA_ERROR_NO_DEVICE')\n")
    assert (c.outcome, c.detail) == ("unsupported", "cuInit: CUDA_ERROR_NO_DEVICE")


@pytest.mark.skipif(have_libcuda(), reason="a real libcuda.so.1 is installed here")
def test_no_driver_is_unsupported_before_the_program_runs(bins, tmp_path):
    done, c = _trial(bins, tmp_path, "raise SystemExit('never reached')\n", fake=False)
    assert done.observed.returncode == 3 and c.outcome == "unsupported"


def test_cuda_errors_are_told_from_other_exceptions():
    def names(code):
        return {201: "CUDA_ERROR_INVALID_CONTEXT", 700: "CUDA_ERROR_ILLEGAL_ADDRESS"}[int(code)]

    def described(text):
        return "CUDA_ERROR_ILLEGAL_ADDRESS" if "illegal memory access" in text else None

    class CUresult(int):
        name = "CUDA_ERROR_INVALID_CONTEXT"

    torch = RuntimeError("CUDA error: an illegal memory access was encountered")
    assert cuda_error(torch, names, described) == ("CUDA_ERROR_ILLEGAL_ADDRESS", None)
    assert cuda_error(RuntimeError(CUresult(201), "cuCtxGetDevice"), names) == (
        "CUDA_ERROR_INVALID_CONTEXT", "cuCtxGetDevice")
    # A code on an exception that is not CUDA's, or a description without CUDA, is no error.
    assert cuda_error(type("HTTPError", (Exception,), {"code": 201})("gone"), names) is None
    assert cuda_error(ValueError("an illegal memory access was encountered"), names,
                      described) is None


def test_the_trial_command_names_the_stock_driver_and_the_program(tmp_path):
    ctx = TrialContext("as-filed", {}, {}, TrialBudget(1, 0, 30), ROOT / "native", tmp_path,
                       runtime=Path("/site"))
    cmd = ctx.python_program(tmp_path / "seed" / "repro.py", "--n", "1",
                             preload=Path("/b/libgpurepro_crash.so"), counter="calls",
                             versions=("numba", "llvmlite"), calls=("cuA", "cuB"),
                             instrumented=True)
    assert cmd.argv == (sys.executable, str(ROOT / "src/gpurepro/case/python_program.py"),
                        "--counter", "calls", "--versions", "numba,llvmlite", "--calls",
                        "cuA,cuB", "--instrumented",
                        "--", str(tmp_path / "seed" / "repro.py"), "--n", "1")
    assert cmd.env == {"PYTHONPATH": os.pathsep.join(["/site", str(ROOT / "src")]),
                       "LD_PRELOAD": "/b/libgpurepro_crash.so"}
    assert json.loads(json.dumps(cmd.env))  # plain strings
