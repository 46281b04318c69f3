"""Tests of native/ (loader, events, crash handler, preload, stub generator) and of the
tile_unload_race host driver, on a machine with no GPU: drivers are compiled with g++ into a
temporary folder and run against either no libcuda at all or tests/fake_libcuda.c."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from gpurepro.run.classify import Observed, classify
from gpurepro.run.trial import run_trial
from tests import pace
from tests.conftest import have_libcuda

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
CASE = ROOT / "cases" / "tile_unload_race"

pytestmark = pytest.mark.skipif(
    not (shutil.which("g++") and shutil.which("cc")), reason="needs g++ and cc"
)


@pytest.fixture(scope="module")
def bins(native_programs, tmp_path_factory) -> dict[str, Path]:
    """Every program the tests run (conftest's native_programs: built once per session), the fake
    libcuda's folder, and a file that is no cubin."""
    cubin = tmp_path_factory.mktemp("native") / "kernel.cubin"
    cubin.write_bytes(b"\x7fELF not really a cubin")
    return {
        "testdriver": native_programs["testdriver"],
        "preload": native_programs["preload"],
        "host": native_programs["host"],
        "fake": native_programs["fake_libcuda"].parent,
        "null": native_programs["null"],
        "ext": native_programs["ext"],
        "host_kit": native_programs["host_kit"],
        "cubin": cubin,
    }


def run(cmd, env=None) -> subprocess.CompletedProcess:
    return pace.run([str(c) for c in cmd], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def crash_record(stderr: str) -> dict:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("GPUREPRO_CRASH ")]
    assert len(lines) == 1, stderr
    return json.loads(lines[0].removeprefix("GPUREPRO_CRASH "))


# ---- testdriver: the protocol and the crash handler ----

def test_crash_record_sigsegv(bins):
    r = run([bins["testdriver"], "crash"])
    assert r.returncode == -signal.SIGSEGV
    assert events(r.stdout)[0]["event"] == "start"
    rec = crash_record(r.stderr)
    assert (rec["signal"], rec["signo"], rec["code_name"]) == ("SIGSEGV", 11, "SEGV_MAPERR")
    assert rec["addr"] == "0x10" and rec["addr_map"] is None
    assert rec["pc_map"]["path"] == str(bins["testdriver"].resolve())
    assert rec["pc_map"]["perms"].startswith("r-x")
    assert rec["frames"] and rec["frames"][0]["pc"] == rec["pc"]  # handler frames trimmed
    assert rec["counters"]["cycles"] > 0
    assert isinstance(rec["t"], float) and rec["tid"] > 0


def test_crash_record_threads_and_counters_are_the_snapshot_at_the_fault(bins):
    # Worker 1 holds still while worker 0 reads its slot and faults, then publishes calls again
    # 2 ms after the fault, while the handler scans a /proc/self/maps of 40000 mappings: the
    # record's threads and counters are what worker 0 saw just before the fault, and only the
    # late re-read sees worker 1 moved on.
    r = run([bins["testdriver"], "crash_other_runs", "--mappings", "20000"])
    assert r.returncode == -signal.SIGSEGV, r.stderr
    seen = next(e for e in events(r.stdout) if e["event"] == "before_fault")
    rec = crash_record(r.stderr)
    faulting, other = rec["threads"]
    assert (faulting["faulting"], faulting["call"], faulting["inside"], faulting["calls"]) == (
        True, "fake_launch", True, seen["launches"] + 1)
    assert {k: other[k] for k in ("call", "inside", "calls")} == seen["other"]
    assert rec["counters"]["unloads"] == seen["unloads"] == other["calls"]
    late_faulting, late_other = rec["threads_late"]
    assert late_faulting == faulting and late_other["calls"] > other["calls"]
    assert 0 < rec["snapshot_ns"] < rec["late_read_ns"]


def test_crash_record_sigabrt(bins):
    r = run([bins["testdriver"], "abort"])
    assert r.returncode == -signal.SIGABRT
    rec = crash_record(r.stderr)
    assert rec["signal"] == "SIGABRT" and rec["code_name"] == "SI_TKILL"
    assert rec["addr"] is None and rec["frames"]
    assert rec["sender_pid"] == events(r.stdout)[0]["pid"]
    assert rec["counters"]["loads"] > 0


def test_ok_heartbeats_and_final(bins):
    r = run([bins["testdriver"], "ok", "--seconds", "0.35", "--heartbeat-ms", "100"])
    assert r.returncode == 0, r.stderr
    ev = events(r.stdout)
    assert [e["event"] for e in ev][0] == "start" and ev[-1]["event"] == "final"
    beats = [e for e in ev if e["event"] == "heartbeat"]
    assert len(beats) >= 2
    assert ev[-1]["status"] == "ok" and ev[-1]["counters"]["cycles"] > 0
    assert ev[-1]["errors"] == {} and ev[-1]["t"] >= 0.35


# A budget in seconds no test waits out: a driver that ends before it ended for another reason
# (its cycles, an error), however slow the machine.
LONG_S = 600


def test_cycle_budget(bins):
    r = run([bins["testdriver"], "ok", "--seconds", str(LONG_S), "--cycles", "50"])
    final = events(r.stdout)[-1]
    assert final["status"] == "ok" and final["counters"]["cycles"] >= 50 and final["t"] < LONG_S


@pytest.mark.parametrize(
    "mode, rc, status",
    [("cuda_error", 1, "cuda_error"), ("unsupported", 3, "unsupported"),
     ("no_driver", 3, "no_driver"), ("noprogress", 0, "ok")],
)
def test_final_statuses(bins, mode, rc, status):
    r = run([bins["testdriver"], mode, "--seconds", "0.2"])
    assert r.returncode == rc
    final = events(r.stdout)[-1]
    assert final["event"] == "final" and final["status"] == status
    if mode == "cuda_error":
        assert final["error"] == "CUDA_ERROR_LAUNCH_FAILED" and final["call"]
        assert final["errors"] == {"CUDA_ERROR_LAUNCH_FAILED": 1}
    if mode in ("unsupported", "no_driver"):
        assert final["reason"]
    if mode == "noprogress":
        assert set(final["counters"].values()) == {0}


def test_silent_and_garbage(bins):
    assert run([bins["testdriver"], "silent"]).stdout == ""
    r = run([bins["testdriver"], "garbage"])
    assert r.returncode == 0 and r.stdout
    with pytest.raises(json.JSONDecodeError):
        events(r.stdout)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie nobody reaped (no init in a container) is dead


def test_hang_group_kill_leaves_no_orphan(bins):
    p = subprocess.Popen([bins["testdriver"], "hang"], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        start = json.loads(p.stdout.readline())
        child = start["config"]["child_pid"]
        assert start["event"] == "start" and _alive(child)
        os.killpg(p.pid, signal.SIGKILL)
        assert pace.wait(p) == -signal.SIGKILL
        assert pace.until(lambda: not _alive(child))
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.stdout.close()


def test_crash_preload_on_unmodified_program(bins):
    r = run([bins["null"]], env={"LD_PRELOAD": str(bins["preload"])})
    assert r.returncode == -signal.SIGSEGV
    rec = crash_record(r.stderr)
    assert rec["signal"] == "SIGSEGV" and rec["addr"] == "0x0"
    assert rec["pc_map"]["path"] == str(bins["null"].resolve())
    assert rec["counters"] == {} and rec["frames"]


def test_crash_preload_exports_no_libstdcxx(bins):
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("no nm")
    out = run([nm, "-D", "--defined-only", bins["preload"]]).stdout
    # Interposing a static libstdc++ on the reporter's program would change what it runs.
    assert "_ZNSs" not in out and "_ZNSt7__cxx11" not in out and "_ZSt" not in out, out


# ---- the libcuda link stub ----

def _stub_module():
    spec = importlib.util.spec_from_file_location("make_libcuda_stub", NATIVE / "make_libcuda_stub.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_stub_declarations_of_seed():
    names = _stub_module().declared_functions((CASE / "seed" / "repro.cc").read_text())
    assert names == ["cuInit", "cuDeviceGet", "cuCtxCreate_v2", "cuCtxSetCurrent",
                     "cuMemAlloc_v2", "cuModuleLoadData", "cuModuleGetFunction",
                     "cuModuleUnload", "cuCtxSynchronize", "cuLaunchKernel",
                     "cudaDeviceSynchronize"]


def test_stub_links_seed_repro(tmp_path):
    stub = tmp_path / "stub"
    r = run(["python3", NATIVE / "make_libcuda_stub.py", CASE / "seed" / "repro.cc", stub])
    assert r.returncode == 0, r.stderr
    assert (stub / "libcuda.so").is_file() and not (stub / "libcuda.so.1").exists()
    exe = tmp_path / "repro"
    r = run(["g++", "-O2", "-pthread", CASE / "seed" / "repro.cc", "-o", exe, f"-L{stub}",
             "-lcuda"])
    assert r.returncode == 0, r.stderr
    if shutil.which("readelf"):  # the executable wants the real driver's soname
        assert "[libcuda.so.1]" in run(["readelf", "-d", exe]).stdout


# ---- the tile_unload_race host driver ----

@pytest.mark.skipif(have_libcuda(), reason="a real libcuda.so.1 is installed here")
def test_host_without_driver(bins):
    r = run([bins["host"], "--cubin", bins["cubin"], "--seconds", "1"])
    assert r.returncode == 3, r.stderr
    ev = events(r.stdout)
    assert ev[0]["event"] == "start" and ev[0]["config"]["threads"] == 2
    assert ev[-1]["event"] == "final" and ev[-1]["status"] == "no_driver"
    assert "libcuda.so.1" in ev[-1]["reason"]


def test_host_usage_error(bins):
    assert run([bins["host"]]).returncode == 2
    assert run([bins["host"], "--cubin", bins["cubin"], "--unload", "sometimes"]).returncode == 2


def host_fake(bins, *args, **env) -> subprocess.CompletedProcess:
    return run([bins["host"], "--cubin", bins["cubin"], "--heartbeat-ms", "50", *args],
               env={"LD_LIBRARY_PATH": str(bins["fake"]), **env})


def test_host_fake_driver_ok_and_budget(bins):
    r = host_fake(bins, "--threads", "1", "--seconds", "0", "--max-cycles", "1000")
    assert r.returncode == 0, r.stderr
    final = events(r.stdout)[-1]
    c = final["counters"]
    assert final["status"] == "ok"
    # One thread: exactly the budget, and repro.cc's accounting (unload unless n % 4 == 0).
    assert c == {"cycles": 1000, "loads": 1000, "launches": 1000, "unloads": 750}
    # Every entry point came through cuGetProcAddress_v2 (the fake counts them).
    assert final["observations"]["device"]["cuda_driver_version"] == 28
    assert final["observations"]["device"]["compute_capability"] == "9.0"


def test_host_fake_driver_arms(bins):
    r = host_fake(bins, "--seconds", "0.2", "--api", "library", "--context", "per-thread",
                  "--cubin", bins["cubin"], "--threads", "3", "--unload", "always",
                  "--serialize", FAKE_CUDA_NO_GPA="1")
    assert r.returncode == 0, r.stderr
    ev = events(r.stdout)
    assert ev[0]["config"]["api"] == "library" and len(ev[0]["config"]["cubins"]) == 2
    c = ev[-1]["counters"]
    assert c["cycles"] > 0 and c["unloads"] >= c["cycles"]
    assert ev[-1]["observations"]["device"]["cuda_driver_version"] == 0  # dlsym fallback


@pytest.mark.parametrize(
    "fail, rc, status, error, call",
    [("cuLaunchKernel:719:20", 1, "cuda_error", "CUDA_ERROR_LAUNCH_FAILED", "cuLaunchKernel"),
     ("cuCtxSynchronize:700:5", 1, "cuda_error", "CUDA_ERROR_ILLEGAL_ADDRESS",
      "cuCtxSynchronize"),
     ("cuModuleLoadData:209:0", 3, "unsupported", "CUDA_ERROR_NO_BINARY_FOR_GPU",
      "cuModuleLoadData"),
     ("cuModuleLoadData:209:50", 1, "cuda_error", "CUDA_ERROR_NO_BINARY_FOR_GPU",
      "cuModuleLoadData"),
     ("cuModuleUnload:4242:3", 1, "cuda_error", "CUDA_ERROR_4242", "cuModuleUnload")],
)
def test_host_fake_driver_errors_are_terminal(bins, fail, rc, status, error, call):
    r = host_fake(bins, "--threads", "1", "--seconds", str(LONG_S), FAKE_CUDA_FAIL=fail)
    assert r.returncode == rc, r.stdout + r.stderr
    final = events(r.stdout)[-1]
    assert (final["status"], final["error"], final["call"]) == (status, error, call)
    assert final["errors"] == {error: 1} and final["t"] < LONG_S
    if status == "unsupported":
        assert "first load" in final["reason"]


def test_host_crash_inside_driver(bins):
    r = host_fake(bins, "--seconds", "5", FAKE_CUDA_CRASH="cuLaunchKernel:500")
    assert r.returncode == -signal.SIGSEGV
    rec = crash_record(r.stderr)
    assert rec["pc_map"]["path"] == str((bins["fake"] / "libcuda.so.1").resolve())
    assert any(f["path"] == str(bins["host"].resolve()) for f in rec["frames"])
    assert rec["counters"]["launches"] >= 500


def test_host_crash_record_names_every_threads_call(bins):
    # Each worker publishes the call it is in; the crash record carries all of them, the
    # faulting thread inside the call that crashed.
    r = host_fake(bins, "--seconds", "5", "--threads", "3", FAKE_CUDA_CRASH="cuModuleUnload:20000")
    assert r.returncode == -signal.SIGSEGV
    rec = crash_record(r.stderr)
    threads = rec["threads"]
    # The snapshot at the fault, and the same threads read again after the handler's slow part.
    assert rec["snapshot_ns"] < rec["late_read_ns"]
    assert [t["thread"] for t in rec["threads_late"]] == [0, 1, 2]
    assert [t["thread"] for t in threads] == [0, 1, 2]
    faulting = [t for t in threads if t["faulting"]]
    assert len(faulting) == 1
    assert faulting[0]["call"] == "cuModuleUnload" and faulting[0]["inside"] is True
    # A thread that had not reached its first call yet (the fake driver is fast) says so.
    assert all((t["calls"] > 0 and t["call"].startswith(("cu", "lock")))
               or (t["calls"] == 0 and t["call"] is None) for t in threads)


def test_host_crash_while_preloading_names_main(bins):
    r = host_fake(bins, "--seconds", "5", "--preload", "50", FAKE_CUDA_CRASH="cuLaunchKernel:20")
    assert r.returncode == -signal.SIGSEGV
    rec = crash_record(r.stderr)
    # Main's slot comes after the workers' (none started yet): index --threads.
    assert [(t["thread"], t["call"], t["faulting"]) for t in rec["threads"]] == [
        (0, None, False), (1, None, False), (2, "cuLaunchKernel", True)]
    assert rec["counters"]["launches"] == 0


@pytest.mark.parametrize("lock", ["none", "iteration", "unload-launch", "unload-load", "launch"])
def test_host_lock_levels_run(bins, lock):
    r = host_fake(bins, "--seconds", "0.2", "--lock", lock)
    assert r.returncode == 0, r.stderr
    ev = events(r.stdout)
    assert ev[0]["config"]["lock"] == lock
    assert ev[-1]["counters"]["cycles"] > 0


def test_host_preload_and_prime_load_before_the_workers(bins):
    # 30 primed, back down to 10 held: 30 loads and 20 unloads before any worker cycle.
    r = host_fake(bins, "--threads", "1", "--seconds", "0", "--max-cycles", "20",
                  "--preload", "10", "--prime", "30", FAKE_CUDA_FAIL="cuModuleLoadData:999:38")
    assert r.returncode == 1, r.stdout + r.stderr
    final = events(r.stdout)[-1]
    # The 39th load fails: 30 by main, then the worker's ninth (before its budget of 20).
    assert (final["call"], final["counters"]["loads"]) == ("cuModuleLoadData", 8)
    assert events(r.stdout)[0]["config"]["preload"] == 10
    assert events(r.stdout)[0]["config"]["prime"] == 30


def test_host_context_groups(bins):
    r = host_fake(bins, "--seconds", "0.2", "--threads", "4", "--contexts", "2")
    assert r.returncode == 0, r.stderr
    cfg = events(r.stdout)[0]["config"]
    assert (cfg["context"], cfg["contexts"], cfg["threads"]) == ("groups", 2, 4)


@pytest.mark.parametrize("args", [["--prime", "5", "--preload", "10"],
                                  ["--preload", "3", "--context", "per-thread"],
                                  ["--preload", "3", "--api", "library"],
                                  ["--contexts", "3"], ["--lock", "sometimes"]])
def test_host_rejects_inconsistent_options(bins, args):
    assert host_fake(bins, *args).returncode == 2


# ---- hangs: a worker that never returns is `hung`, never `ok` ----

def test_stuck_worker_without_deadline_runs_into_the_harness_limit(bins):
    # The worker blocks for ever after 20 cycles; main joins with no deadline, so no final
    # record is written and the harness kills the trial at its wall-clock limit.
    done = run_trial([str(bins["testdriver"]), "stuck", "--seconds", "0.2"], dict(os.environ),
                     ROOT, timeout_s=1.5)
    assert done.observed.timed_out
    assert not [e for e in done.observed.events if e["event"] == "final"]
    beats = [e for e in done.observed.events if e["event"] == "heartbeat"]
    assert len(beats) >= 5 and beats[-1]["t"] > 1.0  # heartbeats go on while it waits
    assert classify(done.observed, "cycles").outcome == "hung"


def test_stuck_worker_past_the_join_deadline_is_a_final_hung(bins):
    done = run_trial([str(bins["testdriver"]), "stuck", "--seconds", "0.2", "--join-timeout",
                      "0.3"], dict(os.environ), ROOT, timeout_s=10)
    assert not done.observed.timed_out and done.observed.returncode == 4
    final = done.observed.events[-1]
    assert final["status"] == "hung" and "still running" in final["reason"]
    c = classify(done.observed, "cycles")
    assert (c.outcome, c.counters["cycles"]) == ("hung", 40) and "still running" in c.detail


def test_ok_mode_joins_its_workers(bins):
    r = run([bins["testdriver"], "ok", "--seconds", "0.2", "--join-timeout", "5"])
    assert r.returncode == 0 and events(r.stdout)[-1]["status"] == "ok"


@pytest.mark.parametrize("join_timeout, timed_out", [("0", True), ("0.3", False)])
def test_host_kernel_that_never_returns_is_hung(bins, join_timeout, timed_out):
    # The fake libcuda blocks in the 101st cuCtxSynchronize (a kernel that never ends); the
    # other worker goes on until the stop, then finishes. The stop is the cycle budget, not a
    # time: a loaded machine may give the other worker no cycle in a fraction of a second. The
    # harness's limit is ten start-ups of this machine (about 3 s idle): the driver that gives
    # up joining after 0.3 s ends well inside it, the one that waits for ever is killed there.
    env = {**os.environ, "LD_LIBRARY_PATH": str(bins["fake"]),
           "FAKE_CUDA_BLOCK": "cuCtxSynchronize:100"}
    done = run_trial([str(bins["host"]), "--cubin", str(bins["cubin"]), "--seconds", "0",
                      "--max-cycles", "200", "--heartbeat-ms", "50", "--join-timeout",
                      join_timeout], env, ROOT, timeout_s=pace.limit_s(10))
    assert done.observed.timed_out is timed_out
    finals = [e for e in done.observed.events if e["event"] == "final"]
    assert [f["status"] for f in finals] == ([] if timed_out else ["hung"])
    c = classify(done.observed, "cycles")
    assert c.outcome == "hung" and c.counters["cycles"] > 100


def test_host_budget_stop_with_a_stuck_worker_is_hung_not_ok(bins):
    # One worker reaches the cycle budget (stop_with "ok") while the other is stuck: the join
    # deadline turns the decided "ok" into "hung".
    env = {**os.environ, "LD_LIBRARY_PATH": str(bins["fake"]),
           "FAKE_CUDA_BLOCK": "cuCtxSynchronize:100"}
    done = run_trial([str(bins["host"]), "--cubin", str(bins["cubin"]), "--seconds", "5",
                      "--max-cycles", "1000", "--threads", "2", "--join-timeout", "0.3"], env,
                     ROOT, timeout_s=10)
    assert done.observed.events[-1]["status"] == "hung", done.observed.events[-1]
    c = classify(done.observed, "cycles")
    assert c.outcome == "hung"
    # Where each worker is stuck, as a crash record would say: one inside the synchronize.
    threads = c.observations["threads"]
    assert [t["thread"] for t in threads] == [0, 1]
    assert {"call": "cuCtxSynchronize", "inside": True} in [
        {k: t[k] for k in ("call", "inside")} for t in threads]


def test_host_cuda_error_keeps_the_failing_call(bins):
    env = {**os.environ, "LD_LIBRARY_PATH": str(bins["fake"]),
           "FAKE_CUDA_FAIL": "cuCtxSynchronize:700:5"}
    done = run_trial([str(bins["host"]), "--cubin", str(bins["cubin"]), "--seconds", "5"], env,
                     ROOT, timeout_s=10)
    c = classify(done.observed, "cycles")
    assert (c.outcome, c.detail, c.call) == ("cuda_error", "CUDA_ERROR_ILLEGAL_ADDRESS",
                                             "cuCtxSynchronize")


# ---- entry points a case adds from its own folder ----

def test_case_extends_the_entry_point_table(bins):
    r = run([bins["ext"]], env={"LD_LIBRARY_PATH": str(bins["fake"])})
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout) == {"ok": 1, "roundtrip": 1, "event": 1, "missing_optional": 1,
                                    "typed": 1, "absent": 1}
    # The same through dlsym of the export, on a driver without cuGetProcAddress_v2.
    r = run([bins["ext"]], env={"LD_LIBRARY_PATH": str(bins["fake"]), "FAKE_CUDA_NO_GPA": "1"})
    assert json.loads(r.stdout)["ok"] == 1 and json.loads(r.stdout)["event"] == 1


def test_missing_required_case_entry_is_unsupported(bins):
    r = run([bins["ext"], "missing"], env={"LD_LIBRARY_PATH": str(bins["fake"])})
    assert r.returncode == 3
    final = events(r.stdout)[-1]
    assert final["status"] == "unsupported" and "cuNotInThisDriver" in final["reason"]
    c = classify(Observed(r.returncode, False, events(r.stdout)), "cycles")
    assert c.outcome == "unsupported"


# ---- native/host_kit.h: what host drivers share ----

def test_host_kit_setup_failure_without_a_device_is_unsupported(bins):
    r = run([bins["host_kit"], "setup"], env={"LD_LIBRARY_PATH": str(bins["fake"])})
    final = events(r.stdout)[-1]
    assert r.returncode == 3, r.stdout + r.stderr
    assert (final["status"], final["error"], final["call"]) == (
        "unsupported", "CUDA_ERROR_NO_DEVICE", "cuInit")
    assert final["errors"] == {"CUDA_ERROR_NO_DEVICE": 1}


def test_host_kit_a_load_the_device_cannot_run_is_unsupported_only_on_the_first(bins):
    env = {"LD_LIBRARY_PATH": str(bins["fake"])}
    first = events(run([bins["host_kit"], "first-load"], env=env).stdout)[-1]
    assert first["status"] == "unsupported"
    assert first["reason"] == "cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU on the first load"
    later = events(run([bins["host_kit"], "later-load"], env=env).stdout)[-1]
    assert (later["status"], later["call"]) == ("cuda_error", "cuModuleLoadData")


def test_host_kit_device_facts_go_into_the_final_observations(bins):
    r = run([bins["host_kit"], "device"], env={"LD_LIBRARY_PATH": str(bins["fake"])})
    assert r.returncode == 0, r.stdout + r.stderr
    device = events(r.stdout)[-1]["observations"]["device"]
    assert device["compute_capability"] == "9.0" and device["cuda_driver_version"] == 28
