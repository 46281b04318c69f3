"""ctx_get_device_v2: manifest, trial commands, and the verdict from decided claims; and what the
tile case's verdict says to cuda.core from its cuda-python claims.

As in test_tile_case.py: synthetic trials -> the harness decides the claims -> the case's verdict
reads the decisions -> compose_verdict joins them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from gpurepro.analyze import stats
from gpurepro.analyze.verdict import compose_verdict, decide_claims
from gpurepro.case import TrialBudget, TrialContext, load_case
from gpurepro.model.result import Analysis, ClaimDecision
from tests.conftest import ROOT
from tests.headers import run_header


@pytest.fixture(scope="module")
def case():
    return load_case("ctx_get_device_v2", ROOT)


def _crash(arm, site="libcuda.so.1"):
    return {"arm": arm, "outcome": "crashed", "detail": "SIGSEGV", "exposure": 1, "duration_s": 0.4,
            "counters": {"calls": 1},
            "crash": {"signal": "SIGSEGV", "code_name": "SEGV_MAPERR", "pc_module": site,
                      "pc_offset": "0x31a708", "frames": [{"module": site, "offset": "0x31a708"}],
                      "fault_in": {"module": "[unmapped]"}}}


def _error(arm, name="CUDA_ERROR_INVALID_CONTEXT"):
    return {"arm": arm, "outcome": "cuda_error", "detail": name, "exposure": 1, "duration_s": 0.3,
            "counters": {"calls": 1}, "crash": None}


def _ok(arm):
    return {"arm": arm, "outcome": "survived", "detail": "budget used up", "exposure": 1,
            "duration_s": 0.3, "counters": {"calls": 1}, "crash": None}


def _verdict(case, trials, per=1):
    resolved = case.resolved_arms()
    arms = {a: resolved[a] for a in [case.baseline, *sorted({t["arm"] for t in trials})]}
    claims = decide_claims(case, run_header(arms), trials)
    s = stats.analyze(trials, arms, case.baseline, case.failure_outcomes, case.exposure.unit, per)
    doc = {"case": {"name": case.name, "baseline": case.baseline},
           "device": {"name": "Test GPU", "compute_capability": "9.0"},
           "summary": s["arms"], "crash_sites": s["crash_sites"], "analyses": {},
           "claims": claims, "trials": trials}
    analysis = Analysis.of(doc)
    return compose_verdict(case.verdict(analysis), [ClaimDecision.of(c) for c in claims]), analysis


def _decisions(analysis):
    return {n: c.decision for n, c in analysis.claims.items()}


def _numba_ok(arm, version="0.63.0", fixed=False, llvmlite="0.50.0"):
    start = {"event": "start", "config": {"numba": version, "llvmlite": llvmlite,
                                          "implementation": "Built-in", "nvidia_binding": False,
                                          "fix_applied": fixed}}
    return {**_ok(arm), "stdout_tail": json.dumps(start) + "\n"}


def _as_on_the_h200(v2_null=_error, one_arg=_error, numba_062=None, n=20):
    """The H200's measurement (numba 0.62.1 answering unless ``numba_062`` says otherwise)."""
    t = [one_arg("v2-one-arg") for _ in range(n)]
    t += [_error("v1") for _ in range(n)] + [v2_null("v2-null") for _ in range(n)]
    t += [_crash("v2-bogus") for _ in range(n)] + [_crash("v2-bogus-current") for _ in range(n)]
    for arm in ("v1-current", "v2-null-current", "v2-one-arg-current", "bindings-v2-current"):
        t += [_ok(arm) for _ in range(n)]
    t += [_error("bindings-v1") for _ in range(n)] + [_error("bindings-v2") for _ in range(n)]
    t += [(numba_062 or (lambda a: _numba_ok(a, "0.62.1")))("numba-062") for _ in range(n)]
    t += [_numba_ok("numba-062-fixed", "0.62.1", fixed=True) for _ in range(n)]
    t += [_numba_ok("numba-063") for _ in range(n)]
    t += [_numba_ok("numba-builtin", "0.68.0") for _ in range(n)]
    return t


def test_every_arm_is_in_a_claim_but_the_installed_numba_s(case):
    claimed = {c.arm for c in case.claims} | {c.reference or case.baseline for c in case.claims
                                              if c.kind == "lower"}
    assert claimed == {a.name for a in case.arms} - {"numba-installed"}
    assert all(c.supported and c.not_decided for c in case.claims)


def test_the_h200_measurement_decides_every_claim_with_the_default_trials(case):
    assert case.defaults.trials_per_arm == 20
    v, analysis = _verdict(case, _as_on_the_h200(n=case.defaults.trials_per_arm))
    d = _decisions(analysis)
    assert d.pop("numba-062-survives") == "supported"  # numba 0.62.1 answered here
    assert set(d.values()) == {"supported"}, d


def test_the_caller_owns_it_when_the_declared_abi_returns_the_error(case):
    v, analysis = _verdict(case, _as_on_the_h200())
    assert v["status"] == "explained" and v["owner"].startswith("the caller's binding, not the "
                                                                "driver")
    assert "numba before 0.63.0" in v["owner"] and "undefined behaviour" in v["owner"]
    assert set(v["owner_because"]) == {"v2-null-invalid-context", "v2-bogus-crashes",
                                       "v2-bogus-current-crashes", "v2-one-arg-as-null",
                                       "numba-062-fixed-survives", "numba-063-survives"}
    text = " ".join(v["sentences"])
    assert "libcuda.so.1+0x31a708" in text and "inside libcuda in every one" in text
    assert "did not crash on this machine" in text
    assert "numba 0.62.1, llvmlite 0.50.0" in text and "a pinned release" in text
    assert any("590" in n and "not runnable" in n for n in v["next"])
    assert any("numba 0.63.0" in n for n in v["next"])
    assert any("outside the llvmlite<0.46,>=0.45.0dev0" in n for n in v["next"])


def test_reproduced_when_numba_062_crashes_and_the_fix_answers(case):
    v, analysis = _verdict(case, _as_on_the_h200(numba_062=_crash))
    assert _decisions(analysis)["numba-062-survives"] == "contradicted"
    assert v["status"] == "reproduced" and v["owner"].startswith("the caller's binding")
    assert "numba-062-survives" in v["owner_because"]


def test_reproduced_when_the_one_argument_call_crashes(case):
    v, analysis = _verdict(case, _as_on_the_h200(one_arg=_crash))
    assert _decisions(analysis)["v2-one-arg-as-null"] == "contradicted"
    assert v["status"] == "reproduced" and "v2-one-arg-as-null" in v["owner_because"]


def test_the_driver_owns_it_when_the_declared_abi_crashes_too(case):
    v, analysis = _verdict(case, _as_on_the_h200(v2_null=_crash))
    assert _decisions(analysis)["v2-null-invalid-context"] == "contradicted"
    assert v["owner"].startswith("the CUDA driver (branch 580)")
    assert v["owner_because"] == ["v2-null-invalid-context"]


def test_no_owner_without_the_crash_in_libcuda(case):
    t = [_crash("v2-bogus", site="[unmapped]") for _ in range(20)]
    t += [_error("v2-null") for _ in range(20)]
    v, _ = _verdict(case, t)
    assert v["status"] == "inconclusive" and v["owner"] is None


def test_no_owner_from_six_trials_an_arm(case):
    """The exploratory run's six trials per arm leave the outcome claims undecided (p 0.031
    each against Holm's thresholds): no owner."""
    v, analysis = _verdict(case, _as_on_the_h200(n=6))
    assert _decisions(analysis)["v2-null-invalid-context"] == "not_decided"
    assert v["status"] == "inconclusive" and v["owner"] is None


def test_trial_commands(case):
    arms = case.resolved_arms()

    def cmd(arm, runtime=None):
        ctx = TrialContext(arm, arms[arm], {"crash_preload": Path("/b/libgpurepro_crash.so")},
                           TrialBudget(1, 0, 30), ROOT / "native", case.directory,
                           runtime=runtime)
        return case.trial_command(ctx)

    c = cmd("v2-one-arg")
    assert c.argv[0] == sys.executable and c.argv[1].endswith("ctx_get_device_v2/query.py")
    assert c.argv[2:8] == ("--binding", "ctypes", "--entry", "v2-one-arg", "--context", "none")
    assert c.env == {"PYTHONPATH": str(ROOT / "src"), "LD_PRELOAD": "/b/libgpurepro_crash.so"}
    assert cmd("v2-bogus-current").argv[2:8] == ("--binding", "ctypes", "--entry", "v2-bogus",
                                                 "--context", "current")
    assert cmd("bindings-v2-current").argv[2:8] == ("--binding", "cuda-bindings", "--entry",
                                                    "v2-null", "--context", "current")
    # The numba arms: a user's program on the stock driver, which names the numba it ran.
    stock = cmd("numba-builtin").argv
    assert stock[1] == str(ROOT / "src" / "gpurepro" / "case" / "python_program.py")
    assert stock[stock.index("--") + 1:] == (str(case.directory / "numba_query.py"), "--target",
                                             "builtin")
    assert "--instrumented" in stock and "numba,numba-cuda,llvmlite,cuda-bindings" in stock
    old = cmd("numba-062-fixed", runtime=Path("/site"))
    assert old.argv[old.argv.index("--") + 2:] == ("--target", "builtin-fixed", "--expect-numba",
                                                   "0.62.1")
    assert old.env == {"PYTHONPATH": os.pathsep.join(["/site", str(ROOT / "src")]),
                       "LD_PRELOAD": "/b/libgpurepro_crash.so"}
    with pytest.raises(ValueError):
        case.trial_command(TrialContext("x", {**arms["bindings-v1"], "entry": "v2-one-arg"},
                                        {"crash_preload": Path("/b")}, TrialBudget(1, 0, 30),
                                        ROOT / "native", case.directory))


def _levels(case):
    """The numba releases' pins as the committed lock holds them (Runtime.releases)."""
    from gpurepro.building import runtime_releases

    return json.loads(runtime_releases.lock_path(ROOT, case.name).read_text())["levels"]


def _pins(case, arm):
    from gpurepro.building import runtime_releases

    return runtime_releases.arm_pins(case, arm, _levels(case))


def test_runtime_pins_per_arm(case):
    """Each numba arm's pins come from its level of the numba factor: the release, and the
    llvmlite and numpy the build found inside the ranges it declares (locked)."""
    rt = case.runtime
    assert rt.releases == {"numba": "numba"}
    assert _pins(case, "v2-null") == ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1"]
    assert _pins(case, "numba-062") == ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1",
                                        "numba==0.62.1", "llvmlite==0.45.1", "numpy==2.3.5"]
    assert _pins(case, "numba-062-fixed") == _pins(case, "numba-062")
    assert _pins(case, "numba-063")[2:4] == ["numba==0.63.0", "llvmlite==0.46.0"]
    assert _pins(case, "numba-builtin") == _pins(case, "v2-null")  # the node's numba
    # The wheels are for the Python that runs the trials; nothing is left to the node.
    assert rt.python is None and rt.from_node == ()


# Requires-Dist of the wheels the case pins, as their METADATA declares them (PyPI, cp311 and
# cp312 alike).
REQUIRES = {
    "cuda-bindings==13.3.1": ["cuda-pathfinder>=1.4.2",
                              'cuda-toolkit==13.*; extra == "all"'],
    "cuda-pathfinder==1.9.1": [],
    "numba==0.62.1": ["llvmlite<0.46,>=0.45.0dev0", "numpy<2.4,>=1.22"],
    "numba==0.63.0": ["llvmlite<0.47,>=0.46.0dev0", "numpy<2.4,>=1.22"],
    "llvmlite==0.45.1": [],
    "llvmlite==0.46.0": [],
    "numpy==2.3.5": [],
}


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_each_arms_pins_resolve_inside_the_arm_with_nothing_left_to_the_node(case, python):
    """llvmlite beside numba, inside the range each release declares: the build resolves every
    arm's set against itself on every Python pyproject.toml supports."""
    from gpurepro.building import runtime as build_runtime

    wheels = {pin: {"pin": pin, "name": pin.split("==")[0], "version": pin.split("==")[1],
                    "requires": req, "sha256": pin, "file": pin, "size": 1}
              for pin, req in REQUIRES.items()}
    for arm in (a.name for a in case.arms):
        entry = build_runtime.resolve_arm(arm, _pins(case, arm), wheels, case.runtime, python)
        assert entry["from_node"] == [], arm


def test_a_numba_pinned_beside_an_llvmlite_outside_its_range_fails_the_build(case):
    from gpurepro.building import runtime as build_runtime
    from gpurepro.errors import BuildError

    wheels = {pin: {"pin": pin, "name": pin.split("==")[0], "version": pin.split("==")[1],
                    "requires": req, "sha256": pin, "file": pin, "size": 1}
              for pin, req in {**REQUIRES, "llvmlite==0.50.0": []}.items()}
    with pytest.raises(BuildError, match=r"numba==0\.63\.0 requires llvmlite<0\.47,>=0\.46\.0dev0; "
                                         r"the arm pins llvmlite==0\.50\.0"):
        build_runtime.resolve_arm("numba-063", ["numba==0.63.0", "llvmlite==0.50.0", "numpy==2.3.5"],
                               wheels, case.runtime, "3.11")


# ---- the tile case's cuda-python claims, read for cuda.core ----

def _tile_crash(arm, exposure):
    return {"arm": arm, "outcome": "crashed", "detail": "SIGSEGV", "exposure": exposure,
            "duration_s": 2.0, "counters": {"launches": exposure},
            "crash": {"signal": "SIGSEGV", "pc_module": "libcuda.so.1", "pc_offset": "0x1",
                      "frames": [], "fault_in": {"module": "[unmapped]"}}}


def _tile_ok(arm, exposure):
    return {"arm": arm, "outcome": "survived", "detail": "budget used up", "exposure": exposure,
            "duration_s": 20.0, "counters": {"launches": exposure}, "crash": None}


def test_tile_verdict_answers_cuda_core_from_the_cuda_python_claims():
    tile = load_case("tile_unload_race", ROOT)
    t = [_tile_crash("cuda-python-library", 2000) for _ in range(10)]
    t += [_tile_ok("cuda-python-library-cuda", 1_000_000) for _ in range(10)]
    t += [_tile_ok("cuda-python-library-lock", 1_000_000) for _ in range(10)]
    t += [_tile_ok("lifetime-ctx-destroy", 50_000) for _ in range(10)]
    t += [_tile_crash("baseline", 4000) for _ in range(10)]
    v, analysis = _verdict(tile, t, per=1e6)
    d = _decisions(analysis)
    assert {d[n] for n in ("cuda-python-library-crashes", "cuda-python-library-cuda",
                           "cuda-python-library-lock", "lifetime-ctx-destroy-survives")} == {"supported"}
    core = [n for n in v["next"] if n.startswith("For cuda.core")]
    assert len(core) == 1
    assert "crashes with Tile IR modules" in core[0] and "with plain cubins it crashes less" in core[0]
    assert "ran clean (lifetime-ctx-destroy-survives)" in core[0]


def test_tile_verdict_says_nothing_to_cuda_core_without_those_arms():
    tile = load_case("tile_unload_race", ROOT)
    v, _ = _verdict(tile, [_tile_crash("baseline", 4000) for _ in range(10)], per=1e6)
    assert not any(n.startswith("For cuda.core") for n in v["next"])


def test_a_run_of_the_numba_arms_alone_decides_their_claims_and_concludes(case):
    """Every claim is an outcome claim: a run of one numba release's arms, without the baseline
    (a pack of them alone, `--arms numba-063`), decides them and the verdict reads it."""
    from gpurepro.cli.args import checked_arms

    arms = checked_arms(case, "numba-062,numba-062-fixed")
    resolved = case.resolved_arms()
    plan_arms = {a: resolved[a] for a in arms}
    trials = [_numba_ok(a, "0.62.1", fixed=a.endswith("fixed")) for a in arms for _ in range(20)]
    claims = decide_claims(case, run_header(plan_arms), trials)
    assert sorted(c["name"] for c in claims) == ["numba-062-fixed-survives", "numba-062-survives"]
    s = stats.analyze(trials, plan_arms, case.baseline, case.failure_outcomes, case.exposure.unit, 1)
    doc = {"case": {"name": case.name, "baseline": case.baseline},
           "device": {"name": "Test GPU", "compute_capability": "9.0"},
           "summary": s["arms"], "crash_sites": s["crash_sites"], "analyses": {},
           "claims": claims, "trials": trials}
    analysis = Analysis.of(doc)
    assert {n: c.decision for n, c in analysis.claims.items()} == {
        "numba-062-fixed-survives": "supported", "numba-062-survives": "supported"}
    assert compose_verdict(case.verdict(analysis), [ClaimDecision.of(c) for c in claims])["status"]
