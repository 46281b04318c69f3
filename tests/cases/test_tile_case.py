"""tile_unload_race: manifest, trial commands, seed parser, claims and the verdict.

The verdict is exercised the way `record` runs it: synthetic trials -> the harness decides the
case's claims -> the case's verdict reads the decisions -> compose_verdict joins them (and
refuses an owner resting on a claim that is not supported).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpurepro.analyze import stats
from gpurepro.analyze import verdict as verdicts
from gpurepro.case import TrialBudget, TrialContext, load_case
from gpurepro.errors import RecordError
from gpurepro.model.result import Analysis, ClaimDecision
from gpurepro.record.document import build_document
from gpurepro.run import journal
from tests.conftest import ROOT
from tests.headers import run_header

RUN2 = ROOT / "results" / "tile_unload_race" / "20261130T000116Z_NVIDIA-H200_redacted"


@pytest.fixture(scope="module")
def case():
    return load_case("tile_unload_race", ROOT)


def _crash(arm, exposure, site="libcuda.so.1", live=None):
    loads = exposure + 2
    unloads = loads - (live if live is not None else 2)
    return {"arm": arm, "outcome": "crashed", "detail": "SIGSEGV", "exposure": exposure,
            "duration_s": 2.0,
            "counters": {"cycles": exposure, "launches": exposure, "loads": loads, "unloads": unloads},
            "crash": {"signal": "SIGSEGV", "code_name": "SEGV_MAPERR", "pc_module": site,
                      "pc_offset": "0x1234",
                      "frames": [{"module": site, "offset": "0x1234"}, {"module": site, "offset": "0x99"}],
                      "fault_in": {"module": "[unmapped]"}}}


def _survive(arm, exposure):
    return {"arm": arm, "outcome": "survived", "detail": "budget used up", "exposure": exposure,
            "duration_s": 20.0, "counters": {"launches": exposure}, "crash": None}


def _analysis(case, trials, sections=None):
    """What record hands the verdict: the typed views of a document with its statistics,
    decided claims and trials (no verdict yet)."""
    resolved = case.resolved_arms()
    arms = {a: resolved[a] for a in [case.baseline, *sorted({t["arm"] for t in trials})]}
    claims = verdicts.decide_claims(case, run_header(arms), trials)
    s = stats.analyze(trials, arms, case.baseline, case.failure_outcomes, "cycles")
    doc = {"case": {"name": case.name, "baseline": case.baseline},
           "device": {"name": "Test GPU", "compute_capability": "9.0"},
           "summary": s["arms"], "crash_sites": s["crash_sites"],
           "analyses": {"sections": sections} if sections else {}, "claims": claims, "trials": trials}
    return Analysis.of(doc), claims


def _typed(claims):
    return [ClaimDecision.of(c) for c in claims]


def _verdict(case, trials, sections=None):
    analysis, claims = _analysis(case, trials, sections)
    return verdicts.compose_verdict(case.verdict(analysis), _typed(claims)), analysis


def _decisions(analysis):
    return {n: c.decision for n, c in analysis.claims.items()}


def _tile_only(site="libcuda.so.1"):
    t = [_crash("baseline", 4000 + 100 * i, site) for i in range(10)]
    for arm in ("control-cuda", "one-thread", "serialized", "never-unload"):
        t += [_survive(arm, 1_000_000)] * 10
    return t


def _text(v):
    return " ".join([*v["sentences"], *v["not_decided"], *v["next"], *v["hypotheses"], v["owner"] or ""])


# ---------------------------------------------------------------- claims in the manifest


def test_every_arm_is_in_a_claim(case):
    claimed = {c.arm for c in case.claims} | {c.reference for c in case.claims if c.reference}
    assert claimed == {a.name for a in case.arms}
    kinds = {c.name: (c.kind, c.reference) for c in case.claims}
    for name in ("control-cuda", "as-filed-cuda", "cuda-module-globals", "one-thread", "serialized",
                 "context-per-thread", "never-unload", "lock-unload-launch", "lock-unload-load", "lock-launch",
                 "control-cuda-lineinfo"):
        assert kinds[name] == ("lower", None)  # against the baseline
    # Arms that vary something the crash might need: does it still crash at all (one SIGSEGV
    # decides it), not "within 4x of the baseline", which ten trials an arm cannot decide.
    for name in ("always-unload", "distinct-cubins", "other-tile-kernel", "library-api", "tile-nodebug"):
        assert kinds[f"{name}-crashes"] == ("outcome", None)
    # Hangs are a failure of their own, claimed for the arms that showed them.
    for name in ("always-unload", "hold-far"):
        claim = next(c for c in case.claims if c.name == f"{name}-hangs")
        assert (claim.kind, claim.outcome, claim.share) == ("outcome", "hung", 0.0)
    # The interventions compare with their own controls.
    assert kinds["hold-near-pow2"] == ("higher", "hold-far")
    assert kinds["primed-grow-from-2000"] == ("lower", "grow-from-2000")
    assert kinds["two-contexts-two-threads"] == ("higher", "context-per-thread")
    assert kinds["grow-crossings-live"] == ("concentrated", None)
    # The seed program's counters are coarse: no rate claim about as-filed, only that it crashes.
    assert kinds["as-filed-crashes"] == ("outcome", None)
    assert all(c.supported and c.not_decided for c in case.claims)


# ---------------------------------------------------------------- status and owner from claims


def test_tile_only_crashes_name_the_driver_from_supported_claims(case):
    v, analysis = _verdict(case, _tile_only())
    d = _decisions(analysis)
    assert {d[n] for n in ("baseline-crashes", "control-cuda", "one-thread", "serialized")} == {"supported"}
    assert v["status"] == "reproduced"
    assert v["owner"].startswith("NVIDIA CUDA driver (libcuda), in its handling of Tile IR modules")
    assert set(v["owner_because"]) == {"baseline-crashes", "control-cuda", "one-thread", "serialized"}
    text = " ".join(v["sentences"])
    assert "Tile IR modules raise the crash rate" in text  # control-cuda's supported sentence
    assert "[claim control-cuda" in text
    assert "libcuda.so.1" in text  # the crash site, a measurement
    assert any("claim serialized" in n for n in v["next"])


def test_owner_needs_the_crash_site_inside_libcuda(case):
    v, analysis = _verdict(case, _tile_only(site="[unmapped]"))
    assert _decisions(analysis)["control-cuda"] == "supported"
    assert v["status"] == "reproduced" and v["owner"] is None and v["owner_because"] == []
    assert any("PC inside libcuda" in n for n in v["next"])


def test_owner_needs_the_overlap_claims(case):
    t = [_crash("baseline", 4000)] * 10 + [_survive("control-cuda", 1_000_000)] * 10
    v, _ = _verdict(case, t)
    assert v["status"] == "reproduced" and v["owner"] is None
    assert any("one-thread and serialized" in n for n in v["next"])


def test_plain_modules_crashing_more_contradicts_control_cuda(case):
    t = [_crash("baseline", 4000)] * 3 + [_survive("baseline", 400_000)] * 7
    t += [_crash("control-cuda", 4000)] * 10
    for arm in ("one-thread", "serialized"):
        t += [_survive(arm, 100_000_000)] * 10
    v, analysis = _verdict(case, t)
    assert _decisions(analysis)["control-cuda"] == "contradicted"
    assert any(s.startswith("Not specific to Tile IR") for s in v["sentences"])
    # The owner rests only on supported claims; the contradicted one speaks for itself.
    assert v["owner"].startswith("NVIDIA CUDA driver (libcuda), when two threads")
    assert "control-cuda" not in v["owner_because"]


def test_an_owner_resting_on_an_undecided_claim_is_refused(case):
    analysis, claims = _analysis(case, _tile_only())
    given = case.verdict(analysis)
    weak = [{**c, "decision": "not_decided"} if c["name"] == "one-thread" else c for c in claims]
    with pytest.raises(RecordError, match="one-thread"):
        verdicts.compose_verdict(given, _typed(weak))


def test_nothing_crashes_is_not_reproduced(case):
    t = [_survive("baseline", 500_000)] * 10 + [_survive("control-cuda", 500_000)] * 10
    v, analysis = _verdict(case, t)
    assert _decisions(analysis)["baseline-crashes"] == "not_decided"
    assert v["status"] == "not_reproduced" and v["owner"] is None
    assert any("No SIGSEGV in the baseline's 10 valid trials" in s for s in v["not_decided"])


def test_control_without_enough_exposure_is_not_decided(case):
    t = [_crash("baseline", 400_000)] * 10 + [_survive("control-cuda", 100)] * 3
    v, analysis = _verdict(case, t)
    assert _decisions(analysis)["control-cuda"] == "not_decided"
    assert any("control-cuda" in s and "deciding it needs" in s for s in v["not_decided"])
    assert "raise the crash rate" not in " ".join(v["sentences"])
    assert v["owner"] is None
    assert any("control-cuda decided (not_decided)" in n for n in v["next"])


def test_invalid_baseline_is_inconclusive(case):
    t = [{"arm": "baseline", "outcome": "invalid", "detail": "no progress", "exposure": 0,
          "duration_s": 20.0, "crash": None}] * 5
    v, _ = _verdict(case, t)
    assert v["status"] == "inconclusive" and v["owner"] is None


# ---------------------------------------------------------------- what the sentences may say


def test_verdict_sentences_are_measurements_not_tests(case):
    analysis, _ = _analysis(case, _tile_only())
    own = case.verdict(analysis)  # before the harness appends the claims' sentences
    for s in own["sentences"]:
        assert not re.search(r"\bp\s*[=<]|rate ratio|Fisher|binomial|not distinguishable|significan", s), s


def test_an_arm_that_crashes_at_all_is_decided_with_little_data(case):
    t = _tile_only() + [_crash("library-api", 4000)] * 3 + [_survive("library-api", 4000)] * 2
    v, analysis = _verdict(case, t)
    assert _decisions(analysis)["library-api-crashes"] == "supported"
    assert "not distinguishable" not in _text(v)
    assert any("(library-api) crashes too: SIGSEGV in 3 of 5" in s for s in v["sentences"])
    # That it crashes at all is a measurement, named by its arm.
    assert any(s.startswith("library-api (") and "crashed in 3 of 5" in s for s in v["sentences"])


def test_hangs_are_reported_per_arm_with_where_the_workers_were_stuck(case):
    stuck = {"threads": [{"thread": 0, "call": "cuModuleUnload", "inside": True, "calls": 9},
                         {"thread": 1, "call": "cuLaunchKernel", "inside": True, "calls": 8}]}
    hung = {**_survive("always-unload", 3000), "outcome": "hung",
            "detail": "2 of 2 worker threads still running 10 s after the stop", "observations": stuck}
    t = _tile_only() + [hung] * 2 + [_survive("always-unload", 4000)] * 3
    v, analysis = _verdict(case, t)
    assert _decisions(analysis)["always-unload-hangs"] == "supported"
    [line] = [s for s in v["sentences"] if s.startswith("Hangs (")]
    assert "always-unload 2 of 5 (workers stuck inside cuModuleUnload 2x, cuLaunchKernel 2x)" in line


def test_medians_say_which_and_none_for_the_seed_program(case):
    t = [_crash("baseline", 4000)] * 3 + [_survive("baseline", 400_000)] * 7
    t += [_crash("as-filed", 0)] * 4 + [_survive("as-filed-cuda", 50_000)] * 4
    v, _ = _verdict(case, t)
    base = next(s for s in v["sentences"] if "baseline (" in s and "valid trials crashed" in s)
    assert "Kaplan–Meier median not reached" in base
    seed = [s for s in v["sentences"] if s.startswith(("as-filed (", "as-filed-cuda ("))]
    assert len(seed) == 2
    for s in seed:
        assert "Kaplan" not in s and "once-a-second printout" in s
    v, _ = _verdict(case, _tile_only())
    base = next(s for s in v["sentences"] if "baseline (" in s and "valid trials crashed" in s)
    assert "Kaplan–Meier median 4.4e+03 cycles" in base and "0.5 or below" in base


def test_sections_name_every_section_only_tile_ir_cubins_carry(case):
    sections = json.loads(RUN2.with_suffix(".json").read_text())["analyses"]["sections"]
    v, _ = _verdict(case, _tile_only(), sections)
    text = next(s for s in v["sentences"] if s.startswith("ELF sections"))
    for sec in (".nv.host", ".debug_line", ".nv_debug_line_sass", ".nv_debug_ptx_txt"):
        assert sec in text
    assert "cuda_globals (cuda-module-globals)" in text  # .nv.global.init is shared with it
    # .nv.host as the cause is a hypothesis, listing the other sections it is confounded with.
    assert "cause" not in " ".join(v["sentences"])
    host = [h for h in v["hypotheses"] if ".nv.host" in h]
    assert len(host) == 1 and ".nv_debug_ptx_txt" in host[0]


def test_sentences_no_arm_isolates_are_hypotheses(case):
    t = _tile_only() + [_survive("context-per-thread", 1_000_000)] * 10
    t += [_crash("baseline", 2048 + i, live=lv) for i, lv in enumerate((512, 1024, 2048, 4096, 700))]
    t += [_crash("always-unload", 5000, live=2)] * 3
    v, analysis = _verdict(case, t)
    assert _decisions(analysis)["context-per-thread"] == "supported"
    assert v["hypotheses"] and all(h.startswith("Hypothesis (") for h in v["hypotheses"])
    body = " ".join([*v["sentences"], *v["next"], v["owner"]])
    for gone in ("needs cuModuleUnload", "running concurrently with the other thread",
                 "Separate contexts per thread remove it", "track the", "serialise unloads"):
        assert gone not in body, gone
    hyp = " ".join(v["hypotheses"])
    assert "cuModuleUnload is the call that races" in hyp and "no arm serialises the unload alone" in hyp
    assert "serialising only unloads against launches" in hyp
    assert "one thread per context" in hyp  # the confound, said as such
    assert "power of two" in hyp and "always-unload crashed with at most 2 modules" in hyp
    # The count near powers of two is a plain measurement: no test.
    count = next(s for s in v["sentences"] if "power of two" in s)
    assert "4 of 5 crashes" in count and "no test is made" in count
    assert any("context-per-thread" in s and "does not separate" in s for s in v["sentences"])


# ---------------------------------------------------------------- a committed run, re-recorded


def test_committed_run_recorded_again_decides_the_owner_from_claims(case):
    header, trials = journal.merge([RUN2.with_suffix(".journal.jsonl")])
    doc = build_document(case, header, trials, ROOT)
    decided = {c["name"]: c["decision"] for c in doc["claims"]}
    for name in ("baseline-crashes", "as-filed-crashes", "control-cuda", "as-filed-cuda",
                 "cuda-module-globals", "one-thread", "serialized", "context-per-thread",
                 "never-unload"):
        assert decided[name] == "supported", name
    assert "contradicted" not in decided.values()
    v = doc["verdict"]
    assert v["status"] == "reproduced" and v["owner"].startswith("NVIDIA CUDA driver")
    assert any("all 51 crashes" in s and "libcuda.so.580.159.04" in s for s in v["sentences"])


# ---------------------------------------------------------------- trial commands, seed parser


def test_trial_commands(case):
    arts = {a.name: Path(f"/b/{a.name}") for a in case.artifacts if not a.archs}
    budget = TrialBudget(20, 500_000, 60)
    arms = case.resolved_arms()

    def cmd(arm):
        return case.trial_command(TrialContext(arm, arms[arm], arts, budget, ROOT / "native", case.directory))

    seed = cmd("as-filed")
    assert seed.argv == ("/b/seed_repro", "/b/tile_cubin", "20") and seed.parser == "seed"
    assert seed.env["LD_PRELOAD"] == "/b/crash_preload"
    # Where the reporter's own export ran (sm_120), the as-filed arm takes that cubin.
    arts["tile_cubin_as_filed"] = Path("/b/tile_cubin_as_filed")
    assert cmd("as-filed").argv[1] == "/b/tile_cubin_as_filed"
    distinct = cmd("distinct-cubins").argv
    assert distinct.count("--cubin") == 2
    def flag(arm: str, name: str) -> str:
        argv = cmd(arm).argv
        return argv[argv.index(name) + 1]

    assert flag("serialized", "--lock") == "iteration"
    assert flag("lock-unload-launch", "--lock") == "unload-launch"
    assert flag("library-api", "--api") == "library"
    assert (flag("hold-near-pow2", "--preload"), flag("hold-near-pow2", "--unload")) == ("4095", "always")
    assert (flag("primed-grow-from-2000", "--preload"), flag("primed-grow-from-2000", "--prime")) == (
        "2000", "9000")
    assert "--preload" not in cmd("baseline").argv and "--prime" not in cmd("grow-from-2000").argv
    assert (flag("two-contexts-two-threads", "--contexts"), flag("two-contexts-two-threads", "--threads")) == (
        "2", "4")
    # The seed program cannot take the new factors either.
    with pytest.raises(ValueError):
        case.trial_command(TrialContext("as-filed", {**arms["as-filed"], "preload": 4095}, arts,
                                        budget, ROOT / "native", case.directory))


def test_seed_output_parser(case):
    lines = ["k.cubin (46632 bytes), 2 threads, nothing preloaded\n",
             "  launches=10 loads=12 unloads=7\n", "  launches=20 loads=22 unloads=15\n",
             "SURVIVED 2s\n"]
    events = case.parsers["seed"](lines)
    assert events[-1] == {"event": "final", "status": "ok", "t": 2.0,
                          "counters": {"launches": 20, "loads": 22, "unloads": 15}}
    # A crash leaves no SURVIVED line: no final event, the signal decides.
    assert all(e["event"] == "heartbeat" for e in case.parsers["seed"](lines[:3]))


def test_crash_counters_leave_out_the_seed_program(case):
    from gpurepro.case import load_sibling

    mechanism = load_sibling(case.path, "mechanism")
    t = [_crash("baseline", 5000, live=lv) for lv in (512, 2049, 8190, 700, 3000)]
    # The seed's counters lag its crash by up to a second: never used.
    t += [{**_crash("as-filed", 0, live=4096), "counters": {"loads": 4196, "unloads": 100, "launches": 4190}}] * 6
    analysis, _ = _analysis(case, t)
    cc = mechanism.crash_counters(analysis)
    assert cc["records"] == 5 and cc["big"] == 5 and cc["near"] == 3 and cc["gaps"] == {2: 5}


def _with_threads(trial, other, at_fault=True):
    """A crash record naming both threads' calls; at_fault False: one from before the handler's
    snapshot at the fault (no snapshot_ns), whose threads were read after its slow work."""
    threads = [{"thread": 0, "call": "cuLaunchKernel", "inside": True, "calls": 9, "faulting": True},
               {"thread": 1, "call": other, "inside": True, "calls": 7, "faulting": False}]
    return {**trial, "crash": {**trial["crash"], **({"snapshot_ns": 2100} if at_fault else {}),
                               "threads": threads}}


def _lock_launch_run(other, at_fault):
    t = [_with_threads(x, "cuLaunchKernel", at_fault) if x["outcome"] == "crashed" else x
         for x in _tile_only()]
    t += [_survive("lock-unload-launch", 1_000_000)] * 10
    return t + [_with_threads(_crash("lock-launch", 4000 + 100 * i), other, at_fault)
                for i in range(10)]


def test_thread_sentences_say_the_threads_were_read_at_the_fault(case):
    text = _text(_verdict(case, _lock_launch_run("lock-wait", at_fault=True))[0])
    assert ("Where the threads were at the fault, baseline (10 crash records with every thread's "
            "call; faulting thread | the others): in cuLaunchKernel | in cuLaunchKernel in 10.") in text
    assert ("Under lock-launch the faulting thread was in cuLaunchKernel while the other was in "
            "lock-wait in 10 of 10 crash records: no other driver call was running at those "
            "faults") in text
    assert "Counters at the fault, as the crash handler copied them on entry, in each crash" in text
    # The other thread inside a driver call at the fault: nothing about calls that had returned.
    text = _text(_verdict(case, _lock_launch_run("cuModuleUnload", at_fault=True))[0])
    assert "the other was in cuModuleUnload in 10 of 10 crash records at the fault." in text
    assert "no other driver call was running" not in text


def test_thread_sentences_of_records_before_the_snapshot_say_they_were_read_late(case):
    text = _text(_verdict(case, _lock_launch_run("lock-wait", at_fault=False))[0])
    assert "Where the threads were at the fault" not in text
    assert ("Where the threads were as the crash handler read them after its backtrace and maps "
            "scan, not at the fault") in text
    assert "so they do not show what was running at the fault." in text
    assert "no other driver call was running" not in text
    assert "Counters at the last snapshot before each crash" in text
