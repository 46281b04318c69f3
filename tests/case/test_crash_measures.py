"""gpurepro.case.crash_measures: the measurement sentences a crash case's verdict states beside
its decided claims (exposure, rate and Kaplan-Meier median; crash site; threads at the fault;
hangs; trials without evidence; sections only one group of cubins carries)."""

from __future__ import annotations

from gpurepro.analyze import stats
from gpurepro.case import crash_measures as cm
from gpurepro.model.result import Analysis


def _crash(arm, exposure, site="libcuda.so.1", other="cuModuleUnload", at_fault=True):
    threads = [{"thread": 0, "call": "cuLaunchKernel", "inside": True, "calls": 9, "faulting": True},
               {"thread": 1, "call": other, "inside": True, "calls": 7, "faulting": False}]
    return {"arm": arm, "outcome": "crashed", "detail": "SIGSEGV", "exposure": exposure,
            "duration_s": 2.0, "counters": {"launches": exposure},
            "crash": {"signal": "SIGSEGV", "code_name": "SEGV_MAPERR", "pc_module": site,
                      "pc_offset": "0x1234", "threads": threads,
                      **({"snapshot_ns": 2100} if at_fault else {}),
                      "frames": [{"module": site, "offset": "0x1234"}, {"module": site, "offset": "0x99"}],
                      "fault_in": {"module": "[unmapped]"}}}


def _trial(arm, outcome, exposure=1_000_000, observations=None):
    return {"arm": arm, "outcome": outcome, "detail": "x", "exposure": exposure, "duration_s": 20.0,
            "counters": {"launches": exposure}, "crash": None,
            **({"observations": observations} if observations else {})}


def _analysis(trials, factors=None, analyses=None):
    arms = {a: (factors or {}).get(a, {}) for a in dict.fromkeys(t["arm"] for t in trials)}
    s = stats.analyze(trials, arms, "base", ("crashed",), "cycles")
    return Analysis.of({"case": {"name": "x", "baseline": "base"},
                        "device": {"name": "Test GPU", "compute_capability": "9.0"},
                        "summary": s["arms"], "crash_sites": s["crash_sites"],
                        "analyses": analyses or {}, "claims": [], "trials": trials})


def test_arm_sentence_gives_exposure_rate_and_which_median():
    a = _analysis([_crash("base", 4000 + 100 * i) for i in range(10)])
    text = cm.arm_sentence(a, "base", "the loop", "On Test GPU, ")
    assert text.startswith("On Test GPU, base (the loop): 10 of 10 valid trials crashed (SIGSEGV), "
                           "4.45e+04 cycles in all, ")
    assert "per 10^6 cycles (95% CI " in text
    assert text.endswith("Kaplan–Meier median 4.4e+03 cycles (2 s) to the crash (the first exposure "
                         "at which the survival estimate is 0.5 or below).")
    assert cm.arm_sentence(a, "absent", "nothing") is None


def test_a_coarse_arm_gets_no_rate_and_no_median():
    a = _analysis([_crash("base", 0)] * 3 + [_trial("seed", "survived", 300)])
    assert cm.arm_sentence(a, "base", "printed", coarse=True).endswith(
        "; no rate and no median for it: its cycle counts come from the program's once-a-second "
        "printout, so a crash within the first second shows 0 cycles.")
    assert cm.arm_sentence(a, "seed", "printed", coarse=True).endswith(
        ", 300 cycles counted up to each trial's last once-a-second printout (an undercount); no median.")


def test_median_not_reached_says_so():
    a = _analysis([_crash("base", 5000)] + [_trial("base", "survived")] * 5)
    assert cm.km_median(a.arms["base"]).startswith("Kaplan–Meier median not reached")


def test_site_sentence_names_the_signature_and_whether_every_pc_is_in_libcuda():
    a = _analysis([_crash("base", 4000)] * 3 + [_crash("other", 4000, site="libfoo.so")])
    text, in_libcuda = cm.site_sentence(a.crash_sites)
    assert not in_libcuda
    assert text.startswith("Crash site: 3 of 4 crashes (base 3) share one signature, SIGSEGV "
                           "(SEGV_MAPERR) with the PC inside the driver library libcuda.so.1 at "
                           "offset 0x1234")
    assert text.endswith(" 2 distinct signatures in all.")
    assert cm.site_sentence(()) == (None, False)


def test_phase_sentence_says_whether_the_threads_were_read_at_the_fault():
    at = cm.phase_sentence(_analysis([_crash("base", 4000)] * 2), "base")
    assert at == ("Where the threads were at the fault, base (2 crash records with every thread's "
                  "call; faulting thread | the others): in cuLaunchKernel | in cuModuleUnload in 2.")
    late = cm.phase_sentence(_analysis([_crash("base", 4000, at_fault=False)]), "base")
    assert late.startswith(f"Where the threads were {cm.READ_LATE}, base (1 crash records")


def test_hangs_and_trials_without_evidence_are_counted_per_arm():
    stuck = {"threads": [{"inside": True, "call": "cuModuleUnload"}]}
    a = _analysis([_crash("base", 4000), _trial("hold", "hung", observations=stuck),
                   _trial("hold", "survived"), _trial("never", "invalid", 0)])
    assert cm.hangs_sentence(a).endswith(": hold 1 of 2 (workers stuck inside cuModuleUnload 1x).")
    assert cm.no_evidence_sentence(a.arms).endswith(": never: invalid 1.")
    assert cm.crashes_by_arm(a, ("base",)) == "Crashed / valid trials, per arm: hold 0/2."


def test_sections_only_one_group_of_cubins_carries():
    sections = {"modules": {"tile": {}, "tile_b": {}, "cuda": {}},
                "differences": {".nv.host": ["tile", "tile_b"], ".rela.nv.host": ["tile", "tile_b"],
                                ".nv.info.x": ["cuda", "tile", "tile_b"]},
                "host_symbols": {"tile": ["cb_load"]}}
    found = cm.group_only_sections(_analysis([_crash("base", 1)], analyses={"sections": sections}))
    assert found["only"] == [".nv.host", ".rela.nv.host"] and found["shared"] == {".nv.info.x": ["cuda"]}
    text = cm.sections_sentence(found, lambda labels: ", ".join(labels))
    assert text == ("ELF sections (the sections analysis of the built cubins, by the arm that loads "
                    "each): only the Tile IR cubins tile, tile_b carry .nv.host (and the relocations "
                    ".rela.nv.host); the plain cubins cuda carry none of them. .nv.host holds an "
                    "embedded host object with the symbols cb_load. The Tile IR cubins share "
                    ".nv.info.x with cuda.")
    assert cm.group_only_sections(_analysis([_crash("base", 1)])) is None
