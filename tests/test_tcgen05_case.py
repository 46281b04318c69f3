"""tcgen05_alloc_order: manifest, trial commands, seed parser, instrument wrapper and verdict.

No GPU needed. The seed/driver output lines below are real: the report's own lines, and lines the
case's programs printed on an H200 (compute capability 9.0, driver 580.159.04), where tcgen05
cannot run. The builds from the pinned wheels are toolchain-marked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro import stats
from gpurepro.manifest import TrialBudget, TrialContext, load_case

from .conftest import ROOT, toolchain_venv

CASE_DIR = ROOT / "cases" / "tcgen05_alloc_order"


@pytest.fixture(scope="module")
def case():
    return load_case("cases/tcgen05_alloc_order", ROOT)


@pytest.fixture(scope="module")
def parse(case):
    return case.parsers["seed"]


def _ctx(case, arm):
    factors = case.resolved_arms()[arm]
    artifacts = {a.name: Path("/build") / a.name / a.outputs[0] for a in case.artifacts}
    return TrialContext(arm=arm, factors=factors, artifacts=artifacts,
                        budget=TrialBudget(duration_s=0, max_cycles=0, timeout_s=120),
                        native=ROOT / "native", case_dir=CASE_DIR)


# ----------------------------------------------------------------------------- manifest


def test_manifest_loads_and_declares_the_design(case):
    assert case.name == "tcgen05_alloc_order"
    assert case.baseline == "follower-baseline"
    assert case.defaults.trials_per_arm == 25
    assert case.failure_outcomes == ("cuda_error", "hung", "crashed")
    assert case.exposure.counter == "launches"
    assert dict(case.devices.targets) == {"10.3": "sm_103a", "10.0": "sm_100a"}
    assert "nvidia-cuda-nvcc==13.0.88" in case.pins_for("sm_103a")
    assert case.pins_for("sm_103a") == case.pins_for("sm_100a")
    arms = case.resolved_arms()
    # the report's grid: 3 delayed CTAs x 4 barrier placements, at spin 5000
    grid = [a for a in arms if a.split("-")[0] in ("leader", "follower", "neither")
            and arms[a]["build"] == "seed" and arms[a]["instrument"] == "none"
            and arms[a]["spin"] == 5000]
    assert len(grid) == 12
    spins = sorted(f["spin"] for a, f in arms.items() if a.startswith("follower-spin-")
                   or a == "follower-baseline")
    assert spins == [0, 10, 100, 1000, 5000]
    assert {"instr-no-relinquish", "instr-no-dealloc", "instr-linger"} <= set(arms)
    instruments = {f["instrument"] for a, f in arms.items()
                   if f["delay"] == "follower" and f["mode"] == "baseline" and f["build"] != "control"}
    assert instruments == {"none", "coredump", "compute-sanitizer", "cuda-gdb"}


def test_every_arm_gets_a_command(case):
    for arm, f in case.resolved_arms().items():
        cmd = case.trial_command(_ctx(case, arm))
        assert cmd.argv, arm
        if f["instrument"] == "none":
            assert Path(cmd.argv[0]).parent.name in {a.name for a in case.artifacts}
        else:
            assert cmd.argv[1].endswith("instrument.py") and cmd.argv[3] == f["instrument"]
        assert cmd.parser == ("seed" if f["build"] == "seed" else "jsonl")


def test_seed_arm_argv_is_the_reporters(case):
    cmd = case.trial_command(_ctx(case, "follower-barrier-before-dealloc"))
    assert cmd.argv[-3:] == ("1", "5000", "6")
    assert Path(cmd.argv[0]).name == "repro"
    cmd = case.trial_command(_ctx(case, "instr-no-dealloc"))
    assert Path(cmd.argv[0]).name == "repro_no_dealloc" and cmd.argv[-3:] == ("1", "5000", "0")


# ----------------------------------------------------------------------------- seed parser


def test_seed_failure_line(parse):
    ev = parse(["delay_cta=1 spin=5000 mode=0 => unspecified launch failure"])
    assert ev == [{"event": "final", "status": "cuda_error", "error": "cudaErrorLaunchFailure",
                   "call": "cudaDeviceSynchronize", "counters": {"launches": 1},
                   "errors": {"cudaErrorLaunchFailure": 1},
                   "observations": {"delay_cta": 1, "spin": 5000, "mode": 0,
                                    "message": "unspecified launch failure"}}]


def test_seed_success_and_other_errors(parse):
    ok = parse(["delay_cta=0 spin=5000 mode=0 => no error\n"])[-1]
    assert ok["status"] == "ok" and ok["counters"] == {"launches": 1}
    for text, name in [("an illegal memory access was encountered", "cudaErrorIllegalAddress"),
                       ("operation not supported", "cudaErrorNotSupported"),
                       ("the launch timed out and was terminated", "cudaErrorLaunchTimeout"),
                       ("invalid argument", "cudaErrorInvalidValue"),
                       ("a kernel launch error has occurred due to cluster misconfiguration",
                        "cudaErrorInvalidClusterSize")]:
        ev = parse([f"delay_cta=1 spin=10 mode=2 => {text}"])[-1]
        assert ev["status"] == "cuda_error" and ev["error"] == name
    nk = parse(["delay_cta=1 spin=0 mode=0 => no kernel image is available for execution on the device"])
    assert nk[-1]["status"] == "unsupported"


def test_seed_launch_failed_as_printed_on_h200(parse):
    ev = parse(["launch failed"])[-1]
    assert ev["status"] == "cuda_error" and ev["call"] == "cudaLaunchKernelEx"
    assert ev["counters"] == {"launches": 0}


def test_seed_parser_folds_in_the_instrument(parse):
    lines = ["launch failed",
             '{"event":"instrument","tool":"cuda-gdb","found":true,"exit_code":1,"program_exit_code":2}']
    ev = parse(lines)
    assert ev[-1]["event"] == "final"
    assert ev[-1]["observations"]["instrument"]["tool"] == "cuda-gdb"
    # tool missing: the wrapper's own final is all there is
    missing = ['{"event":"instrument","tool":"compute-sanitizer","found":false}',
               '{"event":"final","status":"unsupported","reason":"tool not found: compute-sanitizer",'
               '"counters":{"launches":0},"errors":{}}']
    assert parse(missing)[-1]["status"] == "unsupported"
    assert parse(["garbage", ""]) == []


# ----------------------------------------------------------------------------- the wrapper


def _wrapper(tool, program, env=None):
    return subprocess.run([sys.executable, str(CASE_DIR / "instrument.py"), "--tool", tool, "--",
                           *program], capture_output=True, text=True, env=env, check=False)


def test_wrapper_reports_a_missing_tool(tmp_path):
    if any(Path(d, "compute-sanitizer").exists() for d in ("/usr/local/cuda/bin",)):
        pytest.skip("compute-sanitizer is installed in /usr/local/cuda here")
    env = {"PATH": str(tmp_path), "CUDA_HOME": str(tmp_path)}
    proc = _wrapper("compute-sanitizer", ["/bin/true"], env)
    assert proc.returncode == 3
    final = json.loads(proc.stdout.splitlines()[-1])
    assert final["status"] == "unsupported" and "tool not found" in final["reason"]


# What repro_instrumented printed on the H200 (tcgen05 cannot run there).
H200_INSTRUMENTED = [
    '{"event":"start","driver":"repro_instrumented","pid":774,"config":{"delay_cta":1,"spin":5000,'
    '"mode":0,"variant":"as_filed","relinquish":true,"dealloc":true,"linger":false}}',
    '{"event":"final","status":"unsupported","reason":"cudaErrorNoKernelImageForDevice: NVIDIA H200 '
    'is compute capability 9.0; this build is for sm_100a/sm_103a only","call":"cudaLaunchKernelEx",'
    '"t":0.240174,"counters":{"launches":0},"errors":{}}',
]


def test_wrapper_puts_findings_into_a_json_final(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys\nfor line in sys.argv[1:]:\n    print(line)\nsys.exit(3)\n")
    proc = _wrapper("coredump", [sys.executable, str(script), *H200_INSTRUMENTED])
    assert proc.returncode == 3
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [e["event"] for e in events] == ["start", "instrument", "final"]
    assert events[-1]["status"] == "unsupported"
    assert events[-1]["observations"]["instrument"] == {"tool": "coredump", "exit_code": 3,
                                                       "coredumps": [], "tool_tail": []}


def test_instrumented_output_is_protocol_json():
    start, final = (json.loads(x) for x in H200_INSTRUMENTED)
    assert start["event"] == "start" and final["event"] == "final"
    assert final["status"] in ("ok", "cuda_error", "unsupported", "no_driver")


# ----------------------------------------------------------------------------- verdict


def _trial(arm, failed, error="cudaErrorLaunchFailure", observations=None, unsupported=False):
    if unsupported:
        return {"arm": arm, "outcome": "unsupported", "detail": "cudaErrorNoKernelImageForDevice",
                "exposure": 0, "duration_s": 0.2, "crash": None, "observations": observations or {}}
    return {"arm": arm, "outcome": "cuda_error" if failed else "survived",
            "detail": error if failed else "ok", "exposure": 1, "duration_s": 0.3, "crash": None,
            "observations": observations or {}}


def _verdict(case, trials, cc="10.3", name="NVIDIA B300 SXM6"):
    analysis = stats.analyze(trials, case.resolved_arms(), case.baseline, case.failure_outcomes,
                             "launches")
    analysis["device"] = {"name": name, "compute_capability": cc, "supported": cc in ("10.3", "10.0"),
                          "reason": None if cc in ("10.3", "10.0") else "no tcgen05 on sm_90"}
    analysis["analyses"] = {}
    return case.verdict(analysis)


def _arm(arm, k, n=25, **kw):
    return [_trial(arm, i < k, **kw) for i in range(n)]


def _report_like():
    markers = {"stages": {"cta0": "end", "cta1": "before_alloc"}}
    t = _arm("follower-baseline", 25)
    for arm in ("follower-barrier-before-alloc", "follower-barrier-after-alloc",
                "follower-barrier-before-dealloc", "leader-baseline", "neither-baseline",
                "leader-spin-50000", "follower-spin-0"):
        t += _arm(arm, 0)
    for spin in (10, 100, 1000):
        t += _arm(f"follower-spin-{spin}", 25)
    t += _arm("instr-follower-baseline", 25, observations=markers)
    t += _arm("instr-no-relinquish", 25, observations=markers)
    t += _arm("instr-no-dealloc", 0)
    t += _arm("instr-coredump", 0) + _arm("instr-cuda-gdb", 0)
    t += [_trial("instr-compute-sanitizer", False, unsupported=True,
                 observations={"instrument": {"tool": "compute-sanitizer", "found": False}})] * 25
    return t


def test_verdict_all_unsupported_says_what_was_not_run(case):
    trials = [_trial(a, False, unsupported=True) for a in case.resolved_arms() for _ in range(2)]
    v = _verdict(case, trials, cc="9.0", name="NVIDIA H200")
    text = " ".join(v["sentences"])
    assert v["status"] == "not_run"
    assert text.startswith("Not run:") and "NVIDIA H200 (compute capability 9.0)" in text
    assert "10.3" in text and "10.0" in text and "SASS" in text
    assert "not measured" in text or "has been measured" in text
    assert any("B300" in s for s in v["next"])


def test_verdict_report_like_data(case):
    v = _verdict(case, _report_like())
    text = " ".join(v["sentences"])
    assert "25/25 failed (100%" in text
    assert text.count("fewer failures than the baseline") == 3
    assert "reduces the failure in 3 of 3 placements" in text
    assert "asymmetric" in text
    assert "failures first appear between spin=0 and spin=10" in text
    assert "the fault is inside CTA1's alloc" in text
    assert "without relinquish_alloc_permit: 25/25 failed" in text
    assert "without dealloc: 0/25 failed" in text and "removes or reduces" in text
    assert "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 (instrumented build): 0/25 failed" in text
    assert "suppresses the failure" in text
    assert "compute-sanitizer (memcheck) (instrumented build): not run" in text
    assert "tool was not found" in text
    assert v["status"] == "defect"
    assert "not documented" not in text or "absent" in text
    assert "NVIDIA" in v["owner"]
    assert any("B200" in s for s in v["next"])
    assert any("instr-compute-sanitizer" in s for s in v["next"])


def test_verdict_no_difference(case):
    t = _arm("follower-baseline", 0)
    for arm in ("follower-barrier-before-alloc", "follower-barrier-after-alloc",
                "follower-barrier-before-dealloc", "leader-baseline"):
        t += _arm(arm, 0)
    v = _verdict(case, t)
    assert v["status"] == "not_reproduced"
    text = " ".join(v["sentences"])
    assert "0/25 failed" in text and "not reproduced" in text
    assert "fewer failures" not in text


def test_verdict_failure_that_barriers_do_not_touch(case):
    t = _arm("follower-baseline", 12)
    for arm in ("follower-barrier-before-alloc", "follower-barrier-after-alloc",
                "follower-barrier-before-dealloc"):
        t += _arm(arm, 12)
    v = _verdict(case, t)
    assert v["status"] == "reproduced_not_ordering"
    assert "reduces the failure in 0 of 3 placements" in " ".join(v["sentences"])


def test_verdict_linger_and_controls(case):
    t = _report_like()
    t += _arm("instr-linger", 0)
    t += _arm("control-arrive-after-exit", 25) + _arm("control-store-after-exit", 25)
    t += _arm("control-store-barrier-before-exit", 0)
    t += _arm("control-store-coredump", 0) + _arm("control-store-cuda-gdb", 0)
    text = " ".join(_verdict(case, t)["sentences"])
    assert "trigger is a CTA *exiting*" in text
    assert "remote mbarrier arrive into an exited CTA faults too" in text
    assert "also suppresses this known exited-CTA fault" in text


# ----------------------------------------------------------------------------- builds


def pinned_venv() -> Path | None:
    """The case's toolchain venv: conftest's lookup, else the nox path it is made at."""
    venv = toolchain_venv("tcgen05_alloc_order", "sm_103a")
    if venv is None:  # entries hold ':' themselves, so tolerate a pathsep-split variable
        m = re.search(r"tcgen05_alloc_order:sm_103a=([^:]+)", os.environ.get("GPUREPRO_TOOLCHAINS", ""))
        venv = Path(m.group(1)) if m else ROOT / ".nox" / "toolchains" / "tcgen05_alloc_order-sm_103a"
    return venv if venv.is_dir() else None


def _nvcc(target):
    sys.path.insert(0, str(CASE_DIR))
    import cudatools

    nvcc = cudatools.find_tool("nvcc", pinned_venv()) or cudatools.find_tool("nvcc")
    if nvcc is None:
        pytest.skip("pinned nvidia-cuda-nvcc==13.0.88 not installed (nox -s tests installs it; "
                    "GPUREPRO_TOOLCHAINS names its venv)")
    return nvcc, cudatools


@pytest.mark.toolchain
@pytest.mark.parametrize("target", ["sm_103a", "sm_100a"])
def test_builds_from_pinned_wheels(tmp_path, target):
    nvcc, cudatools = _nvcc(target)
    assert cudatools.tool_version(nvcc) == "13.0.88"
    for src, defines in (("seed/repro.cu", []), ("repro_instrumented.cu", []),
                         ("repro_instrumented.cu", ["NO_DEALLOC"]),
                         ("controls/remote_arrive_after_exit.cu", [])):
        out = tmp_path / f"{Path(src).stem}_{'_'.join(defines)}_{target}"
        cmd = [sys.executable, str(CASE_DIR / "build.py"), "--nvcc", str(nvcc), "--nvcc-lib",
               str(cudatools.nvcc_lib_dir(nvcc)), "--arch", target, "--src", str(CASE_DIR / src),
               "--out", str(out)]
        for d in defines:
            cmd += ["-D", d]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              env={**os.environ, "PATH": os.environ.get("PATH", "")})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"arch=compute_{target[3:]},code={target}" in proc.stdout
        assert out.is_file() and target.encode() in out.read_bytes()


def test_verdict_cites_the_sass_analysis(case):
    trials = [_trial(a, False, unsupported=True) for a in case.resolved_arms()]
    analysis = stats.analyze(trials, case.resolved_arms(), case.baseline, case.failure_outcomes,
                             "launches")
    analysis["device"] = {"name": "NVIDIA H200", "compute_capability": "9.0", "supported": False,
                          "reason": "needs 10.3 or 10.0."}
    analysis["analyses"] = {"sass": {"available": True, "tools": {"ptxas": "13.0.88"},
                                     "claims": [{"verified": True}, {"verified": False}],
                                     "findings": [
                                         {"id": "leader_waits_after_signalling", "value": False},
                                         {"id": "follower_last_peer_access", "value": "SYNCS.X [peer]"},
                                         {"id": "dealloc_synchronises_with_peer", "value": False}]}}
    text = " ".join(case.verdict(analysis)["sentences"])
    assert "(needs 10.3 or 10.0)." in text
    assert "1 of 2 of the report's claims" in text
    assert "returns without waiting for the follower's acknowledgement" in text
    assert "never synchronises with the peer CTA" in text
