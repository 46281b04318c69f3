"""Python trial drivers on gpurepro.case.driver, on a machine with no GPU: the protocol, the
crash record of a SIGSEGV from Python (the native record first, Python's frames under it), how
the harness classifies them, and the two Python drivers of the cases (ctx_get_device_v2's
query.py, tile_unload_race's host_cuda_python.py) against tests/fake_libcuda.c and a stand-in
cuda.bindings (tests/fixtures/fake_cuda_bindings)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpurepro.case import TrialBudget, TrialContext, load_case
from gpurepro.run.classify import Observed, classify, find_crash_record
from gpurepro.run.execute import crash_summary
from gpurepro.run.trial import run_trial
from tests import pace
from tests.conftest import ROOT, have_libcuda

NATIVE = ROOT / "native"
PYDRIVER = ROOT / "tests" / "fixtures" / "pydriver.py"
FAKE_BINDINGS = ROOT / "tests" / "fixtures" / "fake_cuda_bindings"
# The fields of a native crash record (native/README.md), which a Python driver's must have too.
NATIVE_FIELDS = {"signal", "signo", "si_code", "code_name", "addr", "pc", "pc_map", "addr_map",
                 "frames", "t", "tid", "counters", "threads"}


@pytest.fixture(scope="module")
def bins(native_programs, tmp_path_factory) -> dict[str, Path]:
    """The crash object, the native test driver (for its record's fields) and the fake libcuda
    (conftest's native_programs: built once per session), and a file that is no cubin."""
    cubin = tmp_path_factory.mktemp("pydriver") / "kernel.cubin"
    cubin.write_bytes(b"\x7fELF not really a cubin")
    return {"preload": native_programs["preload"], "testdriver": native_programs["testdriver"],
            "fake": native_programs["fake_libcuda"].parent, "cubin": cubin}


def env_for(bins, preload=True, fake=False, bindings=False, **extra) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), *([str(FAKE_BINDINGS)] if bindings else [])])}
    if preload:
        env["LD_PRELOAD"] = str(bins["preload"])
    if fake:
        env["LD_LIBRARY_PATH"] = str(bins["fake"])
    env.update(extra)
    return env


def pydriver(bins, mode, *args, **kw) -> subprocess.CompletedProcess:
    return pace.run([sys.executable, str(PYDRIVER), mode, "--heartbeat-ms", "50", *args],
                    capture_output=True, text=True, env=env_for(bins, **kw))


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def native_record(stderr: str) -> dict:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("GPUREPRO_CRASH ")]
    assert len(lines) == 1, stderr
    return json.loads(lines[0].removeprefix("GPUREPRO_CRASH "))


def trial(argv, env, timeout=20, counter="cycles"):
    done = run_trial(argv, env, ROOT, timeout)
    return done, classify(done.observed, counter)


# ---- the crash record from a Python process ----

def test_sigsegv_from_python_leaves_the_native_record_then_python_frames(bins):
    r = pydriver(bins, "crash", "--seconds", "5")
    assert r.returncode == -signal.SIGSEGV  # still dies of the signal
    rec = native_record(r.stderr)
    native = native_record(pace.run([str(bins["testdriver"]), "crash"], capture_output=True,
                                    text=True).stderr)
    assert NATIVE_FIELDS - {"threads"} <= set(native) and set(native) - {"threads"} <= set(rec)
    assert NATIVE_FIELDS <= set(rec)
    # The fault's own siginfo and registers, not faulthandler's raise(): a real SEGV at 0.
    assert (rec["signal"], rec["code_name"], rec["addr"]) == ("SIGSEGV", "SEGV_MAPERR", "0x0")
    assert rec["pc_map"]["path"].endswith(".so.6") or "libc" in rec["pc_map"]["path"]
    assert rec["frames"] and rec["frames"][0]["pc"] == rec["pc"]
    # The kit's counters and thread phases live where the handler reads them.
    assert rec["counters"]["cycles"] >= 200 and set(rec["counters"]) == {"cycles", "launches"}
    faulting = [t for t in rec["threads"] if t["faulting"]]
    assert [(t["thread"], t["call"], t["inside"]) for t in faulting] == [(1, "crash", True)]
    # faulthandler's dump comes after the record, the faulting thread marked current.
    assert r.stderr.index("GPUREPRO_CRASH ") < r.stderr.index("Fatal Python error: Segmentation fault")
    frames = find_crash_record(r.stderr)["python_frames"]
    assert frames[0]["current"] and not any(t["current"] for t in frames[1:])
    top = frames[0]["frames"]
    assert top[0]["function"] == "string_at" and top[0]["file"].endswith("ctypes/__init__.py")
    assert not top[0]["file"].startswith("/")  # the interpreter's prefix is left out
    assert any(f["function"] == "worker" and f["file"].endswith("pydriver.py") and f["line"]
               for f in top)


def test_python_crash_classifies_with_its_frames_in_the_trial_record(bins):
    argv = [sys.executable, str(PYDRIVER), "crash", "--seconds", "5", "--heartbeat-ms", "50"]
    done, c = trial(argv, env_for(bins))
    assert (c.outcome, c.detail) == ("crashed", "SIGSEGV")
    assert c.counters["cycles"] >= 200  # the crash record's exact counters
    s = crash_summary(done.observed.crash)
    assert s["pc_module"].startswith("libc") and s["threads"][1]["call"] == "crash"
    assert s["python_frames"][0]["frames"][0]["function"] == "string_at"


def test_python_frames_alone_without_the_crash_object(bins):
    argv = [sys.executable, str(PYDRIVER), "crash", "--seconds", "5"]
    done, c = trial(argv, env_for(bins, preload=False))
    assert (c.outcome, c.detail) == ("crashed", "SIGSEGV")
    assert "signal" not in done.observed.crash  # no native record: faulthandler's frames only
    assert crash_summary(done.observed.crash) == {"python_frames": done.observed.crash["python_frames"]}


def test_crash_inside_libcuda_called_from_python(bins):
    argv = [sys.executable, str(PYDRIVER), "launch", "--seconds", "5"]
    done, c = trial(argv, env_for(bins, fake=True, FAKE_CUDA_CRASH="cuLaunchKernel:0"))
    assert (c.outcome, c.detail) == ("crashed", "SIGSEGV")
    s = crash_summary(done.observed.crash)
    assert s["pc_module"] == "libcuda.so.1" and s["fault_address"] == "0x18"
    assert [t["call"] for t in s["threads"] if t["faulting"]] == ["cuLaunchKernel"]
    assert any(m["module"] == "libffi.so.8" or m["module"].startswith("_ctypes") for m in s["frames"])


# ---- the protocol, and breaking it ----

def test_ok_heartbeats_budget_and_final(bins):
    r = pydriver(bins, "ok", "--seconds", "0.4")
    assert r.returncode == 0, r.stderr
    ev = events(r.stdout)
    assert ev[0]["event"] == "start" and ev[0]["config"]["mode"] == "ok"
    assert ev[0]["python"]["native_crash_record"] is True
    assert sum(e["event"] == "heartbeat" for e in ev) >= 3
    assert ev[-1]["event"] == "final" and ev[-1]["status"] == "ok" and ev[-1]["t"] >= 0.4
    r = pydriver(bins, "ok", "--seconds", "600", "--max-exposure", "500")  # seconds never reached
    final = events(r.stdout)[-1]
    assert final["status"] == "ok" and final["counters"]["cycles"] >= 500 and final["t"] < 600


def test_checked_output_in_the_final_record(bins):
    final = events(pydriver(bins, "check", "--seconds", "0.1").stdout)[-1]
    assert final["check"] == {"kind": "tolerance", "n": 4, "mismatches": 2,
                              "first": [[2, 3.5, 3.0], [3, 4, 5]], "rel": 1e-3, "abs": 0.0}


def test_a_nan_in_a_checked_output_is_a_wrong_result_not_a_lost_final_record(bins):
    """compare and finish carry a NaN (and an infinity) element by its name: the final record
    is written, JSON as the standard has it, and the harness calls the trial wrong_result."""
    r = pydriver(bins, "check-nan", "--seconds", "0.1")
    assert r.returncode == 0, r.stderr
    final = events(r.stdout)[-1]
    assert final["event"] == "final", r.stdout[-500:]
    assert final["check"]["first"] == [[1, "NaN", 2.0], [3, "Infinity", 4.0]], final
    assert final["observations"]["max_abs_error"] == "NaN"
    json.loads(r.stdout.splitlines()[-1], parse_constant=lambda c: pytest.fail(f"JSON with {c}"))
    _, result = trial([sys.executable, str(PYDRIVER), "check-nan", "--seconds", "0.1"],
                      env_for(bins))
    assert result.outcome == "wrong_result", result
    assert "2 of 4 elements differ" in result.detail and "got 'NaN'" in result.detail


def test_a_stuck_worker_is_hung_with_every_threads_call(bins):
    r = pydriver(bins, "stuck", "--seconds", "0.3", "--join-timeout", "0.3")
    assert r.returncode == 4
    final = events(r.stdout)[-1]
    assert final["status"] == "hung" and "1 of 2 worker threads" in final["reason"]
    threads = final["observations"]["threads"]
    assert [(t["thread"], t["call"], t["inside"]) for t in threads][1] == (1, "wait", True)


@pytest.mark.parametrize("mode, detail", [
    ("garbage", "no protocol output (exit status 0, 3 lines that are not protocol events)"),
    ("nofinal", "exited with status 0 without a final record"),
    ("raise", "exited with status 1 without a final record: ZeroDivisionError: the driver's own bug"),
    ("raise-main", "exited with status 1 without a final record: KeyError: \"main's own bug\""),
])
def test_a_python_driver_that_breaks_the_protocol_is_a_harness_error(bins, mode, detail):
    argv = [sys.executable, str(PYDRIVER), mode, "--seconds", "0.5", "--heartbeat-ms", "50"]
    done, c = trial(argv, env_for(bins))
    assert (c.outcome, c.detail) == ("harness_error", detail)


def test_sigterm_kills_a_python_driver_started_by_a_process_that_ignores_it(bins):
    """A starter that ignores SIGTERM (a process after the harness's main() ran in it, as
    test_calibrate does in this suite's workers, once did) passes it on through exec."""
    p = subprocess.Popen([sys.executable, str(PYDRIVER), "ok", "--seconds", "30"],
                         stdout=subprocess.PIPE, text=True, env=env_for(bins),
                         preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN))
    assert json.loads(p.stdout.readline())["event"] == "start"
    p.send_signal(signal.SIGTERM)
    assert pace.wait(p) == -signal.SIGTERM
    p.stdout.close()


def test_main_as_a_function_leaves_the_callers_signals_as_it_found_them():
    from gpurepro.cli.main import main

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    assert main(["target", "tests/fixtures/fake_case/manifest.py"]) == 0
    assert {s: signal.getsignal(s) for s in before} == before


def test_sigterm_kills_a_python_driver_as_a_native_one(bins):
    p = subprocess.Popen([sys.executable, str(PYDRIVER), "ok", "--seconds", "30"],
                         stdout=subprocess.PIPE, text=True, env=env_for(bins))
    assert json.loads(p.stdout.readline())["event"] == "start"
    p.send_signal(signal.SIGTERM)
    assert pace.wait(p) == -signal.SIGTERM
    p.stdout.close()
    c = classify(Observed(-signal.SIGTERM, False, [{"event": "start"}]), "cycles")
    assert (c.outcome, c.detail) == ("harness_error", "killed by SIGTERM from outside the trial")


@pytest.mark.skipif(have_libcuda(), reason="a real libcuda.so.1 is installed here")
def test_no_driver_is_unsupported(bins):
    argv = [sys.executable, str(PYDRIVER), "no_driver", "--seconds", "0.2"]
    done, c = trial(argv, env_for(bins))
    assert done.observed.returncode == 3
    assert c.outcome == "unsupported" and "libcuda.so.1" in c.detail


def test_cuda_errors_are_named_by_the_driver_itself(bins):
    r = pydriver(bins, "cuda_error", "--seconds", "0.2", fake=True)
    assert r.returncode == 1
    final = events(r.stdout)[-1]
    assert (final["status"], final["error"], final["call"]) == (
        "cuda_error", "CUDA_ERROR_LAUNCH_FAILED", "cuInit")
    assert final["errors"] == {"CUDA_ERROR_LAUNCH_FAILED": 1}


# ---- ctx_get_device_v2's drivers against the fake libcuda ----

def _case_trial(bins, case, arm, extra_artifacts=None, counter=None, **env):
    arts = {"crash_preload": bins["preload"], **(extra_artifacts or {})}
    ctx = TrialContext(arm, case.resolved_arms()[arm], arts, TrialBudget(1, 0, 30), NATIVE,
                       case.directory)
    cmd = case.trial_command(ctx)
    full = {**os.environ, **cmd.env, "LD_LIBRARY_PATH": str(bins["fake"]),
            "PYTHONPATH": os.pathsep.join([cmd.env["PYTHONPATH"], str(FAKE_BINDINGS)]), **env}
    return trial(cmd.argv, full, counter=counter or case.exposure.counter)


@pytest.mark.parametrize("arm, outcome, detail", [
    ("v1", "cuda_error", "CUDA_ERROR_INVALID_CONTEXT"),
    ("v2-null", "cuda_error", "CUDA_ERROR_INVALID_CONTEXT"),
    ("v1-current", "survived", "budget used up"),
    ("v2-null-current", "survived", "budget used up"),
    ("bindings-v1", "cuda_error", "CUDA_ERROR_INVALID_CONTEXT"),
    ("bindings-v2", "cuda_error", "CUDA_ERROR_INVALID_CONTEXT"),
    ("bindings-v2-current", "survived", "budget used up"),
])
def test_ctx_get_device_v2_arms_on_the_fake_driver(bins, arm, outcome, detail):
    case = load_case("ctx_get_device_v2", ROOT)
    done, c = _case_trial(bins, case, arm)
    assert (c.outcome, c.detail) == (outcome, detail), done.observed.stderr_tail
    assert c.counters == {"calls": 1}
    if outcome == "cuda_error":
        assert c.call == ("cuCtxGetDevice" if arm.endswith("v1") else "cuCtxGetDevice_v2")


@pytest.mark.parametrize("arm", ["v2-bogus", "v2-bogus-current"])
def test_ctx_get_device_v2_bogus_context_crashes_inside_libcuda(bins, arm):
    case = load_case("ctx_get_device_v2", ROOT)
    done, c = _case_trial(bins, case, arm)
    assert (c.outcome, c.detail) == ("crashed", "SIGSEGV")
    assert c.counters == {"calls": 1}  # counted before the call: the crash counts it
    s = crash_summary(done.observed.crash)
    assert (s["pc_module"], s["fault_address"]) == ("libcuda.so.1", "0x10")
    assert s["threads"] == [{"thread": 0, "call": "cuCtxGetDevice_v2", "inside": True, "calls": 2,
                             "faulting": True}]
    assert [f["function"] for f in s["python_frames"][0]["frames"][:3]] == ["query", "main", "<module>"]


def test_ctx_get_device_v2_numba_arms_without_numba_are_unsupported(bins):
    if any((Path(p) / "numba").is_dir() for p in sys.path if p):
        pytest.skip("numba is installed here")
    case = load_case("ctx_get_device_v2", ROOT)
    done, c = _case_trial(bins, case, "numba-builtin")
    assert c.outcome == "unsupported" and "numba.cuda is not importable" in c.detail


# numba 0.62.1 as far as numba_query.py reaches into it: its ctypes binding picks the `_v2`
# export with the one-argument prototype (a CudaAPIError at cuCtxSynchronize here, as numba-062
# ended on the H200), and Driver._find_api, which 0.63.0's fix replaces with exact names.
FAKE_NUMBA = {
    "numba/__init__.py": "__version__ = '0.62.1'\n",
    "numba-0.62.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: numba\nVersion: 0.62.1\n",
    "numba/cuda/cudadrv/__init__.py": "",
    "numba/cuda/cudadrv/driver.py": """
import ctypes

USE_NV_BINDING = False


class CudaAPIError(Exception):
    def __init__(self, code, msg):
        super().__init__(code, msg)
        self.code = code

    def __str__(self):
        return f"[{self.code}] {self.args[1]}"


class Driver:
    lib = ctypes.CDLL("libcuda.so.1")

    def _find_api(self, fname):
        def v2_with_one_argument():
            return 201  # CUDA_ERROR_INVALID_CONTEXT: the CUcontext it read was garbage
        return v2_with_one_argument

    def call(self, fname):
        code = self._find_api(fname)()
        if code:
            raise CudaAPIError(code, f"Call to {fname} results in CUDA_ERROR_INVALID_CONTEXT")
""",
    "numba/cuda/__init__.py": """
from numba.cuda.cudadrv.driver import Driver

implementation = "Built-in"


class _Device:
    name = b"Fake GPU"
    compute_capability = (9, 0)


def is_available():
    return True


def get_current_device():
    return _Device()


def synchronize():
    Driver().call("cuCtxSynchronize")
""",
}


@pytest.fixture(scope="module")
def fake_numba(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fake_numba")
    for name, text in FAKE_NUMBA.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("arm, outcome, detail, fixed", [
    ("numba-062", "cuda_error", "CUDA_ERROR_INVALID_CONTEXT", False),
    ("numba-062-fixed", "survived", "budget used up", True),
])
def test_ctx_get_device_v2_numba_arms_run_the_users_calls_on_the_stock_driver(
        bins, fake_numba, arm, outcome, detail, fixed):
    case = load_case("ctx_get_device_v2", ROOT)
    done, c = _case_trial(bins, case, arm, PYTHONPATH=os.pathsep.join(
        [str(fake_numba), str(ROOT / "src")]))
    assert (c.outcome, c.detail) == (outcome, detail), done.observed.stderr_tail
    assert c.counters == {"calls": 1}
    start = done.observed.events[0]
    assert start["event"] == "start" and start["config"]["program"] == "numba_query.py"
    assert {k: start["config"][k] for k in ("target", "numba", "fix_applied", "implementation",
                                            "nvidia_binding")} == {
        "target": "builtin-fixed" if fixed else "builtin", "numba": "0.62.1",
        "fix_applied": fixed, "implementation": "Built-in", "nvidia_binding": False}
    if outcome == "cuda_error":
        assert c.call == "cuCtxSynchronize" and c.errors == {detail: 1}
    else:
        assert c.observations == {"device": "Fake GPU", "compute_capability": "9.0"}


def test_ctx_get_device_v2_numba_arm_refuses_another_numba_than_it_pins(bins, fake_numba):
    case = load_case("ctx_get_device_v2", ROOT)
    done, c = _case_trial(bins, case, "numba-063", PYTHONPATH=os.pathsep.join(
        [str(fake_numba), str(ROOT / "src")]))
    assert c.outcome == "harness_error" and "imports numba 0.62.1; its arm pins 0.63.0" in c.detail


# ---- tile_unload_race's cuda-python driver against the fake libcuda ----

def _tile(bins):
    case = load_case("tile_unload_race", ROOT)
    return case, {"tile_cubin": bins["cubin"], "cuda_cubin": bins["cubin"]}


@pytest.mark.parametrize("arm", ["cuda-python", "cuda-python-library", "cuda-python-lock-unload-launch",
                                 "lifetime-primary-reset-retain", "lifetime-ctx-destroy-kernel"])
def test_tile_cuda_python_arms_run_on_the_fake_driver(bins, arm):
    case, arts = _tile(bins)
    done, c = _case_trial(bins, case, arm, arts)
    assert c.outcome == "survived", done.observed.stderr_tail
    counters = c.counters
    assert counters["launches"] > 0 and counters["cycles"] > 0
    if arm.startswith("lifetime"):
        assert counters["contexts"] == counters["unloads"] == counters["cycles"]
    else:
        # ctypes releases the GIL in the fake as cuda-bindings 13 does: the calls overlap.
        assert counters["overlaps"] > 0


def test_tile_cuda_python_crash_names_both_threads_calls(bins):
    case, arts = _tile(bins)
    done, c = _case_trial(bins, case, "cuda-python", arts, FAKE_CUDA_CRASH="cuModuleUnload:300")
    assert (c.outcome, c.detail) == ("crashed", "SIGSEGV")
    s = crash_summary(done.observed.crash)
    assert s["pc_module"] == "libcuda.so.1"
    faulting = [t for t in s["threads"] if t["faulting"]]
    assert len(faulting) == 1 and faulting[0]["call"] == "cuModuleUnload" and faulting[0]["inside"]
    assert [t["thread"] for t in s["threads"]] == [0, 1, 2]  # two workers, then main's slot
    # The faulting thread's Python stack ("Current thread" in faulthandler's dump) holds the
    # caller of cuModuleUnload. The dump lists threads newest first, not the faulting one first.
    current = [t for t in s["python_frames"] if t["current"]]
    assert len(current) == 1
    assert any(f["function"] == "loop" and f["file"].endswith("host_cuda_python.py")
               for f in current[0]["frames"])


def test_tile_cuda_python_errors_are_terminal_and_named(bins):
    case, arts = _tile(bins)
    done, c = _case_trial(bins, case, "cuda-python-library", arts,
                          FAKE_CUDA_FAIL="cuLibraryUnload:700:50")
    assert (c.outcome, c.detail, c.call) == ("cuda_error", "CUDA_ERROR_ILLEGAL_ADDRESS",
                                              "cuLibraryUnload")


def test_tile_cuda_python_first_load_refused_is_unsupported(bins):
    case, arts = _tile(bins)
    done, c = _case_trial(bins, case, "cuda-python", arts, FAKE_CUDA_FAIL="cuModuleLoadData:209:0")
    assert (c.outcome, c.call) == ("unsupported", "cuModuleLoadData")


def test_kit_run_until_returns_at_the_exposure_budget_quickly(bins):
    t0 = time.monotonic()
    r = pydriver(bins, "ok", "--seconds", "0", "--max-exposure", "50")
    # Quickly: within 30 of this machine's harness start-ups as they take now (9 s idle).
    assert events(r.stdout)[-1]["status"] == "ok" and time.monotonic() - t0 < pace.limit_s(30)


def test_a_native_driver_with_the_crash_object_preloaded_writes_one_record(bins):
    # install_crash_handler() replaces the preloaded handler without chaining to it: one
    # record, the driver's own (its counters), as before Python drivers existed.
    r = pace.run([str(bins["testdriver"]), "crash"], capture_output=True, text=True,
                 env={**os.environ, "LD_PRELOAD": str(bins["preload"])})
    assert r.returncode == -signal.SIGSEGV
    assert native_record(r.stderr)["counters"]["cycles"] > 0
