"""tcgen05_alloc_order: manifest, claims, trial commands, seed parser, instrument wrapper and verdict.

No GPU needed. The seed/driver output lines below are real: the report's own lines, and lines the
case's programs printed on an H200 (compute capability 9.0, driver 580.159.04), where tcgen05
cannot run. The builds from the pinned wheels are toolchain-marked.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro.analyze import stats
from gpurepro.analyze import verdict as verdicts
from gpurepro.case import TrialBudget, TrialContext, instruments, load_case, load_sibling, toolchain
from gpurepro.model.result import Analysis, ClaimDecision
from tests.conftest import ROOT, toolchain_venv
from tests.headers import run_header

CASE_DIR = ROOT / "cases" / "tcgen05_alloc_order"


@pytest.fixture(scope="module")
def case():
    return load_case("cases/tcgen05_alloc_order", ROOT)


@pytest.fixture(scope="module")
def parse(case):
    return case.parsers["seed"]


def _ctx(case, arm, **override):
    factors = {**case.resolved_arms()[arm], **override}
    artifacts = {a.name: Path("/build") / a.name / a.outputs[0] for a in case.artifacts}
    return TrialContext(arm=arm, factors=factors, artifacts=artifacts,
                        budget=TrialBudget(duration_s=0, max_exposure=0, timeout_s=120),
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
        else:  # the harness's wrapper, applying the level, then the same program
            assert cmd.argv[2] == str(Path(instruments.__file__).resolve()) and cmd.argv[3:5] == ("--name", f["instrument"])
            assert "--tool-path" in cmd.argv or "--not-found" in cmd.argv or f["instrument"] == "coredump"
            plain = case.trial_command(_ctx(case, arm, instrument="none"))
            assert cmd.argv[-len(plain.argv):] == plain.argv and cmd.argv[-len(plain.argv) - 1] == "--"
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
#
# gpurepro.case.instruments applies the "instrument" factor (tests/case/test_instruments.py covers it
# in general); here, with the case's own arms and output.


def _wrapper(case, arm, program):
    plain = case.trial_command(_ctx(case, arm, instrument="none"))
    cmd = case.trial_command(_ctx(case, arm))
    argv = cmd.argv[: len(cmd.argv) - len(plain.argv)] + tuple(program)
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_wrapper_reports_a_missing_tool(case, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(toolchain, "HOST_DEFAULT_ROOT", str(tmp_path))
    monkeypatch.setattr(toolchain, "_wheel_file", lambda tool, venv: None)
    toolchain.locate.cache_clear()
    try:
        proc = _wrapper(case, "instr-compute-sanitizer", ["/bin/true"])
    finally:
        toolchain.locate.cache_clear()
    assert proc.returncode == 3
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    assert events[0]["event"] == "instrument" and events[0]["found"] is False
    assert "nvidia-cuda-sanitizer-api" in events[0]["reason"]
    final = events[-1]
    assert final["status"] == "unsupported" and "tool not found" in final["reason"]
    assert final["observations"]["instrument"]["found"] is False


# What repro_instrumented printed on the H200 (tcgen05 cannot run there).
H200_INSTRUMENTED = [
    '{"event":"start","driver":"repro_instrumented","pid":774,"config":{"delay_cta":1,"spin":5000,'
    '"mode":0,"variant":"as_filed","relinquish":true,"dealloc":true,"linger":false}}',
    '{"event":"final","status":"unsupported","reason":"cudaErrorNoKernelImageForDevice: NVIDIA H200 '
    'is compute capability 9.0; this build is for sm_100a/sm_103a only","call":"cudaLaunchKernelEx",'
    '"t":0.240174,"counters":{"launches":0},"errors":{}}',
]


def test_wrapper_puts_findings_into_a_json_final(case, tmp_path, monkeypatch):
    monkeypatch.setattr(instruments, "_DRIVER_VERSION", tmp_path / "no-driver")
    script = tmp_path / "prog.py"
    script.write_text("import sys\nfor line in sys.argv[1:]:\n    print(line)\nsys.exit(3)\n")
    proc = _wrapper(case, "instr-coredump", [sys.executable, str(script), *H200_INSTRUMENTED])
    assert proc.returncode == 3
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [e["event"] for e in events] == ["start", "instrument", "final"]
    assert events[-1]["status"] == "unsupported"
    found = events[-1]["observations"]["instrument"]
    assert found["name"] == "coredump" and found["found"] is True and found["exit_code"] == 3
    assert found["coredumps"] == [] and "version" in found


def test_instrumented_output_is_protocol_json():
    start, final = (json.loads(x) for x in H200_INSTRUMENTED)
    assert start["event"] == "start" and final["event"] == "final"
    assert final["status"] in ("ok", "cuda_error", "unsupported", "no_driver")


# ----------------------------------------------------------------------------- claims and verdict
#
# Synthetic B300-like data: every arm as the report (and the SASS analysis) would have it. The
# harness decides the claims (gpurepro.analyze.verdict.decide_claims); the verdict only reads decisions.

FAILING = {"follower-baseline", "follower-spin-10", "follower-spin-100", "follower-spin-1000",
           "instr-follower-baseline", "instr-no-relinquish", "control-arrive-after-exit",
           "control-store-after-exit"}
MARKERS = {"stages": {"cta0": "end", "cta1": "before_alloc"}}


def _trial(arm, failed, error="cudaErrorLaunchFailure", observations=None, unsupported=False):
    if unsupported:
        return {"arm": arm, "outcome": "unsupported", "detail": "cudaErrorNoKernelImageForDevice",
                "exposure": 0, "duration_s": 0.2, "crash": None, "observations": observations or {}}
    return {"arm": arm, "outcome": "cuda_error" if failed else "survived",
            "detail": error if failed else "ok", "exposure": 1, "duration_s": 0.3, "crash": None,
            "observations": observations or {}}


def _arm(arm, k, n=25, **kw):
    return [_trial(arm, i < k, **kw) for i in range(n)]


def _b300_like(case):
    trials = []
    for arm in case.resolved_arms():
        obs = MARKERS if arm == "instr-follower-baseline" else None
        trials += _arm(arm, 25 if arm in FAILING else 0, observations=obs)
    return trials


def _decided(case, trials):
    return verdicts.decide_claims(case, run_header(case.resolved_arms()), trials)


def _analysis(case, trials, cc="10.3", name="NVIDIA B300 SXM6", decisions=None, sass=None,
              target=None):
    """The analysis the verdict gets; claims decided by the harness, or as given (name -> decision,
    every other claim supported)."""
    s = stats.analyze(trials, case.resolved_arms(), case.baseline, case.failure_outcomes,
                      "launches")
    supported = cc in ("10.3", "10.0")
    device = {"name": name, "compute_capability": cc, "supported": supported, "target": target,
              "reason": None if supported else f"{name} has compute capability {cc}; "
                                               "this case needs 10.3 (sm_103a), 10.0 (sm_100a)"}
    if decisions is None:
        claims = _decided(case, trials)
    else:
        claims = [{"name": c.name, "decision": decisions.get(c.name, "supported"), "sentence": c.name}
                  for c in case.claims]
    doc = {"case": {"name": case.name, "baseline": case.baseline}, "device": device,
           "summary": s["arms"], "crash_sites": s["crash_sites"],
           "analyses": {"sass": sass} if sass else {}, "claims": claims, "trials": trials}
    return Analysis.of(doc), claims


def _verdict(case, trials=None, **kw):
    analysis, claims = _analysis(case, trials if trials is not None else _b300_like(case), **kw)
    given = verdicts.concluded(case, analysis)
    return given, verdicts.compose_verdict(given, [ClaimDecision.of(c) for c in claims])


BARRIERS = ("barrier-before-alloc-lower", "barrier-after-alloc-lower", "barrier-before-dealloc-lower")
ORDERING = ["baseline-launch-failure", *BARRIERS]
# The claims that classify a reproduced ordering failure, decided as the SASS reading predicts:
# instr-linger (dealloc early, exit late) does not fail, so the failure needs the exit, and a late
# remote arrive into an exited CTA faults by itself.
EXIT_NEEDED = {"linger-fails": "contradicted", "linger-lower": "supported",
               "control-arrive-fails": "supported"}
# ... and as a defect would have them: instr-linger, which meets every stated precondition, fails.
LINGER_FAILS = {"linger-fails": "supported", "linger-lower": "contradicted"}


def test_every_comparison_is_a_declared_claim_between_arms_of_the_case(case):
    names = [c.name for c in case.claims]
    assert len(names) == len(set(names)) == 24
    arms = set(case.resolved_arms())
    for c in case.claims:
        assert c.arm in arms and (c.reference is None or c.reference in arms), c.name
    assert {"baseline-launch-failure", *BARRIERS, "markers-within-2x", "linger-lower",
            "linger-fails", "control-arrive-fails", "control-coredump-lower"} <= set(names)
    base = next(c for c in case.claims if c.name == "baseline-launch-failure")
    assert (base.kind, base.arm, base.outcome, base.detail) == (
        "outcome", "follower-baseline", "cuda_error", "cudaErrorLaunchFailure")
    linger = next(c for c in case.claims if c.name == "linger-fails")
    assert (linger.kind, linger.arm, linger.outcome, linger.detail) == (
        "outcome", "instr-linger", "cuda_error", "cudaErrorLaunchFailure")


def test_case_code_computes_no_statistics():
    assert not (CASE_DIR / "verdict.py").exists()  # the verdict is declared (conclusion.py)
    for name in ("conclusion.py", "manifest.py"):
        text = (CASE_DIR / name).read_text()
        for word in ("scipy", "fisher", "p_value", "ALPHA", "math.comb", "binom"):
            assert word not in text, f"{name} mentions {word!r}"


def test_harness_decides_every_claim_on_b300_like_data(case):
    decisions = {c["name"]: c["decision"] for c in _decided(case, _b300_like(case))}
    # instr-linger does not fail in the B300-like data: "it fails in most trials" is contradicted
    assert decisions.pop("linger-fails") == "contradicted"
    assert set(decisions.values()) == {"supported"}, decisions


def test_exit_needed_on_harness_decided_data_is_a_documentation_gap(case):
    given, v = _verdict(case)
    assert v["status"] == "documentation_gap"
    assert v["owner"].startswith("NVIDIA, the documentation: PTX ISA 9.1 section 9.7.16.7.1")
    assert "CUTLASS 147f5673" in v["owner"] and "section 2.2.2" in v["owner"]
    assert v["owner_because"] == [*ORDERING, "linger-fails", "linger-lower", "control-arrive-fails"]
    assert any(s.startswith("Classification: documentation gap: instr-linger does not fail")
               for s in given["sentences"])


# Each classification is the consequence of decided claims: flip them and it changes. The
# constant-based verdict (DOC_AUDIT["conclusion"] -> one status for every ordering failure) fails
# this test.
@pytest.mark.parametrize(("decisions", "status", "because", "owner"), [
    (EXIT_NEEDED, "documentation_gap",
     [*ORDERING, "linger-fails", "linger-lower", "control-arrive-fails"],
     "NVIDIA, the documentation: PTX ISA 9.1"),
    (LINGER_FAILS, "defect", [*ORDERING, "linger-fails"],
     "NVIDIA: the behaviour of tcgen05.alloc.cta_group::2 / tcgen05.dealloc.cta_group::2 on "
     "sm_103a as lowered by ptxas 13.0.88 (CUDA 13.0), or the hardware"),
    ({**EXIT_NEEDED, "control-arrive-fails": "not_decided"}, "class_not_decided", [], None),
    ({**EXIT_NEEDED, "control-arrive-fails": "contradicted"}, "class_not_decided", [], None),
    ({"linger-fails": "not_decided", "linger-lower": "supported"}, "class_not_decided", [], None),
    ({"linger-fails": "contradicted", "linger-lower": "not_decided"}, "class_not_decided", [], None),
    ({"linger-fails": "not_decided", "linger-lower": "not_decided"}, "class_not_decided", [], None),
], ids=["exit-needed", "linger-fails", "control-open", "control-contradicted", "linger-fails-open",
        "linger-lower-open", "both-open"])
def test_classification_follows_the_decided_claims(case, decisions, status, because, owner):
    given, v = _verdict(case, decisions=decisions, target="sm_103a")
    assert v["status"] == status
    assert v["owner_because"] == because
    if owner is None:
        assert v["owner"] is None
        assert "linger-fails" in v["next"][0] and "--until-decided" in v["next"][0]
        assert any(s.startswith("Classification not decided") for s in given["sentences"])
    else:
        assert v["owner"].startswith(owner)


def test_defect_names_the_preconditions_met_and_the_lowering(case):
    given, v = _verdict(case, decisions=LINGER_FAILS, target="sm_100a")
    assert v["status"] == "defect"
    for named in ("on sm_100a", "ptxas 13.0.88", "PTX ISA 9.1 sections 2.2.2, 9.7.16.5 (Tables 46 "
                  "and 47) and 9.7.16.7.1", "CUTLASS 147f5673", "Allocator2Sm::allocate()/free() @pre"):
        assert named in v["owner"], named
    assert any(s.startswith("Classification: defect against the documentation as written: "
                            "instr-linger") for s in given["sentences"])


STILL_ACTIVE = ("'When .cta_group::2 is specified, the issuing warp must make sure that peer CTA "
                "is launched and is still active' (tcgen05.alloc, a copy of unidentified version)")


def test_usage_error_when_the_text_states_a_rule_against_the_condition_the_claims_show(case,
                                                                                        monkeypatch):
    """Under a text that forbids the exit, the claims that show the exit is needed give a usage
    error; the same text with the claims showing a failure without the exit gives a defect."""
    conclusion = load_sibling(CASE_DIR / "manifest.py", "conclusion")
    monkeypatch.setitem(conclusion.STATED_RULE, "exit", STILL_ACTIVE)
    declared = dataclasses.replace(conclusion.DECLARED, branches=conclusion.branches())
    ruled = dataclasses.replace(case, conclusion=dataclasses.replace(case.conclusion,
                                                                     declared=declared))
    _, v = _verdict(ruled, decisions=EXIT_NEEDED)
    assert v["status"] == "usage_error"
    assert v["owner"].startswith("the program's author") and STILL_ACTIVE in v["owner"]
    assert v["owner_because"] == [*ORDERING, "linger-fails", "linger-lower"]
    _, v = _verdict(ruled, decisions=LINGER_FAILS)
    assert v["status"] == "defect"
    _, v = _verdict(ruled, decisions={**EXIT_NEEDED, "linger-lower": "not_decided"})
    assert v["status"] == "class_not_decided" and v["owner"] is None
    _, v = _verdict(case, decisions=EXIT_NEEDED)  # the text read states no such rule
    assert v["status"] == "documentation_gap"


def test_the_documentation_read_states_no_rule_against_either_condition(case):
    conclusion = load_sibling(CASE_DIR / "manifest.py", "conclusion")
    assert conclusion.STATED_RULE == {"exit": None, "dealloc": None}
    assert conclusion.ISA == "PTX ISA 9.1" and "147f5673" in conclusion.CUTLASS
    assert not any(b.status == "usage_error" for b in case.conclusion.declared.branches)


def test_practice_is_labelled_evidence_with_its_sources_and_says_what_a_run_decides(case):
    trials = [_trial(a, False, unsupported=True) for a in case.resolved_arms()]
    given, v = _verdict(case, trials, cc="9.0", name="NVIDIA H200")
    practice = next(s for s in given["sentences"] if s.startswith("Practice (evidence"))
    assert "not from an arm" in practice
    for source in ("triton-lang/triton/pull/9498", "NVIDIA/cutlass/pull/3316",
                   "NVIDIA/cutlass/issues/3435"):
        assert f"https://github.com/{source}" in practice
    assert "peer CTA is launched and its warps eventually participate" in practice
    assert "supports the reading that the ordering is a requirement" in practice
    assert "What a B300 (or B200) run still decides" in practice and "linger-fails" in practice
    assert v["status"] == "not_run" and v["owner"] is None  # evidence decides nothing


def test_baseline_contradicted_is_not_reproduced_and_names_no_owner(case):
    _, v = _verdict(case, decisions={"baseline-launch-failure": "contradicted"})
    assert v["status"] == "not_reproduced"
    assert v["owner"] is None and v["owner_because"] == []
    assert "Compare device, driver and toolkit" in v["next"][0]


def test_baseline_not_decided_is_inconclusive(case):
    _, v = _verdict(case, decisions={"baseline-launch-failure": "not_decided"})
    assert v["status"] == "inconclusive" and v["owner"] is None
    assert "baseline-launch-failure" in v["next"][0] and "--until-decided" in v["next"][0]


def test_barriers_not_decided_leave_the_ordering_open(case):
    _, v = _verdict(case, decisions={c: "not_decided" for c in BARRIERS})
    assert v["status"] == "reproduced_ordering_not_decided"
    assert v["owner"] is None
    assert all(c in v["next"][0] for c in BARRIERS)


def test_barriers_contradicted_is_a_failure_not_explained_by_ordering(case):
    _, v = _verdict(case, decisions={c: "contradicted" for c in BARRIERS})
    assert v["status"] == "reproduced_not_ordering"
    assert v["owner_because"] == ["baseline-launch-failure"]


def test_owner_rests_only_on_the_supported_barrier_claims(case):
    decisions = {BARRIERS[0]: "not_decided", BARRIERS[1]: "contradicted", **EXIT_NEEDED}
    _, v = _verdict(case, decisions=decisions)
    assert v["status"] == "documentation_gap"
    assert v["owner_because"] == ["baseline-launch-failure", BARRIERS[2], "linger-fails",
                                  "linger-lower", "control-arrive-fails"]


def test_sentences_are_measurements_naming_their_arms(case):
    given, v = _verdict(case)
    text = " ".join(given["sentences"])
    assert "Baseline follower-baseline (seed binary" in text and "25/25 failed (100%" in text
    assert "follower-barrier-before-alloc: 0/25 failed" in text
    assert "follower-spin-0: 0/25 failed" in text and "follower-spin-10: 25/25 failed" in text
    assert "cudaErrorLaunchFailure x25" in text
    assert "p =" not in text and "p=" not in text and "Fisher" not in text
    assert ("Documentation audit (README.md): PTX ISA 9.1 and CUTLASS 147f5673" in text
            and "Section 2.2.2 (Cluster of Cooperative Thread Arrays)" in text)
    assert "emits PTX ISA 9.0 (.version 9.0)" in text  # the version read, and why
    # the harness appends the decided claims' sentences after the case's own
    assert v["sentences"][: len(given["sentences"])] == given["sentences"]
    assert len(v["sentences"]) == len(given["sentences"]) + len(case.claims)


def test_what_no_arm_isolates_is_a_labelled_hypothesis(case):
    given, _ = _verdict(case)
    text = " ".join(given["sentences"])
    assert "CTA1 entered tcgen05.alloc and did not record its return" in text
    assert "inside CTA1" not in text and "the fault is" not in text
    hyps = given["hypotheses"]
    assert hyps and all(h.startswith("Hypothesis") for h in hyps)
    assert any("inside CTA1's tcgen05.alloc" in h for h in hyps)
    assert any("instr-linger" in h and "control-arrive-after-exit" in h for h in hyps)
    assert any("hide the failure" in h and "control-store-coredump" in h for h in hyps)


def test_linger_not_decided_drops_it_from_the_hypothesis(case):
    given, _ = _verdict(case, decisions={"linger-lower": "not_decided", "linger-fails": "not_decided"})
    assert not any("instr-linger" in h for h in given["hypotheses"])


def test_linger_failing_speaks_against_the_exit_hypothesis(case):
    given, _ = _verdict(case, decisions=LINGER_FAILS)
    hyp = next(h for h in given["hypotheses"] if "remote mbarrier arrive" in h)
    assert "against it, instr-linger fails in most trials" in hyp
    assert "early exit, not the early dealloc alone" not in hyp


def test_missing_instrument_is_reported_as_not_run(case):
    trials = [t for t in _b300_like(case) if t["arm"] != "instr-compute-sanitizer"]
    trials += [_trial("instr-compute-sanitizer", False, unsupported=True,
                      observations={"instrument": {"tool": "compute-sanitizer", "found": False}})] * 25
    given, v = _verdict(case, trials)
    text = " ".join(given["sentences"])
    assert ("Instrument compute-sanitizer (memcheck) on instr-compute-sanitizer: not run; 25 trials, "
            "the tool was not found") in text
    assert any("instr-compute-sanitizer" in s and "Install" in s for s in given["next"])
    assert any("instr-compute-sanitizer-lower" in s for s in v["not_decided"])
    assert v["status"] == "documentation_gap"


def test_all_unsupported_decides_nothing_and_says_why(case):
    trials = [_trial(a, False, unsupported=True) for a in case.resolved_arms() for _ in range(2)]
    given, v = _verdict(case, trials, cc="9.0", name="NVIDIA H200")
    assert v["status"] == "not_run"
    assert v["owner"] is None and v["owner_because"] == []
    text = " ".join(given["sentences"])
    assert text.startswith("Not run: none of the 32 arms ran a valid trial on NVIDIA H200 "
                           "(compute capability 9.0); all 64 trials were recorded as unsupported")
    assert "Why: the hardware" in text and "10.3" in text and "10.0" in text
    assert "the classification (usage error, documentation gap or defect) is not decided" in text
    assert "linger-fails, linger-lower and control-arrive-fails" in text
    assert len(v["not_decided"]) == len(case.claims)
    assert v["sentences"] == given["sentences"]  # no decided claim to append
    assert any("B300" in s for s in v["next"])


def test_not_run_cites_the_sass_analysis(case):
    trials = [_trial(a, False, unsupported=True) for a in case.resolved_arms()]
    sass = {"available": True, "tools": {"ptxas": "13.0.88"},
            "claims": [{"verified": True}, {"verified": False}],
            "findings": [{"id": "leader_waits_after_signalling", "value": False},
                         {"id": "follower_last_peer_access", "value": "SYNCS.X [peer]"},
                         {"id": "dealloc_synchronises_with_peer", "value": False}]}
    given, _ = _verdict(case, trials, cc="9.0", name="NVIDIA H200", sass=sass)
    text = " ".join(given["sentences"])
    assert "1 of 2 of the report's claims" in text
    # what undocumented opcodes do is a reading, and every sentence that uses one says so
    assert text.count("reading of undocumented SASS opcodes by differential compilation") == 2
    assert all("reading" in h for h in given["hypotheses"] if "SASS" in h)
    assert "returns without waiting for the follower's acknowledgement" in text
    assert "never synchronises with the peer CTA" in text


# ----------------------------------------------------------------------------- builds


def pinned_venv() -> Path | None:
    """The case's toolchain venv: conftest's lookup, else the nox path it is made at."""
    venv = toolchain_venv("tcgen05_alloc_order", "sm_103a")
    if venv is None:  # entries hold ':' themselves, so tolerate a pathsep-split variable
        m = re.search(r"tcgen05_alloc_order:sm_103a=([^:]+)", os.environ.get("GPUREPRO_TOOLCHAINS", ""))
        venv = Path(m.group(1)) if m else ROOT / ".nox" / "toolchains" / "tcgen05_alloc_order-sm_103a"
    return venv if venv.is_dir() else None


def _nvcc(case):
    for venv in (pinned_venv(), None):
        try:
            return toolchain.find_tool("nvcc", case.tools, venv), venv
        except toolchain.ToolNotFound:
            continue
    pytest.skip("pinned nvidia-cuda-nvcc==13.0.88 not installed (nox -s tests installs it; "
                "GPUREPRO_TOOLCHAINS names its venv)")


@pytest.mark.toolchain
@pytest.mark.parametrize("target", ["sm_103a", "sm_100a"])
def test_builds_from_pinned_wheels(case, tmp_path, target):
    """Each program's artifact command, as the harness expands it, builds with the pinned nvcc."""
    nvcc, venv = _nvcc(case)
    assert toolchain.release(toolchain.tool_version("nvcc", case.tools, venv)) == "13.0.88"
    values = {"nvcc": str(nvcc), "nvcc_lib": str(toolchain.nvcc_lib_dir(nvcc)), "arch": target,
              "virtual_arch": "compute_" + target[3:], "case": str(CASE_DIR), "out": str(tmp_path),
              "native": str(ROOT / "native")}
    for name in ("repro", "repro_instrumented", "repro_no_dealloc", "control_remote_after_exit"):
        art = next(a for a in case.artifacts if a.name == name)
        argv = [re.sub(r"\{(\w+)\}", lambda m: values[m[1]], part) for part in art.command]
        assert f"arch=compute_{target[3:]},code={target}" in argv
        proc = subprocess.run(argv, capture_output=True, text=True, check=False,
                              env={**os.environ, "PATH": f"{nvcc.parent}:{os.environ.get('PATH', '')}"})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out = tmp_path / name
        assert out.is_file() and target.encode() in out.read_bytes()
