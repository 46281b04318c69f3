"""tile_unload_race: manifest, trial commands, seed parser and verdict on synthetic trial sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpurepro import stats
from gpurepro.manifest import TrialBudget, TrialContext, load_case

from .conftest import ROOT


@pytest.fixture(scope="module")
def case():
    return load_case("tile_unload_race", ROOT)


def _crash(arm, exposure, site="libcuda.so.1"):
    return {"arm": arm, "outcome": "crashed", "detail": "SIGSEGV", "exposure": exposure,
            "duration_s": 2.0, "crash": {"signal": "SIGSEGV", "code_name": "SEGV_MAPERR",
                                         "pc_module": site, "pc_offset": "0x1234",
                                         "frames": [{"module": site, "offset": "0x1234"},
                                                    {"module": site, "offset": "0x99"}],
                                         "fault_in": {"module": "[unmapped]"}}}


def _survive(arm, exposure):
    return {"arm": arm, "outcome": "survived", "detail": "budget used up", "exposure": exposure,
            "duration_s": 20.0, "crash": None}


def _verdict(case, trials):
    analysis = stats.analyze(trials, case.resolved_arms(), "baseline", case.failure_outcomes,
                             "cycles")
    analysis["device"] = {"name": "Test GPU", "compute_capability": "9.0"}
    analysis["analyses"] = {}
    return case.verdict(analysis)


def _tile_only():
    t = [_crash("baseline", 4000 + 100 * i) for i in range(10)]
    for arm in ("control-cuda", "one-thread", "serialized", "never-unload"):
        t += [_survive(arm, 1_000_000)] * 10
    return t


def test_tile_only_crashes_name_the_driver(case):
    v = _verdict(case, _tile_only())
    text = " ".join(v["sentences"])
    assert v["status"] == "reproduced"
    assert "needs Tile IR modules" in text
    assert "two threads overlapping" in text
    assert "libcuda.so.1" in text
    assert v["owner"] and "driver" in v["owner"] and "not specific" not in v["owner"]


def test_both_crash_is_not_tile_specific(case):
    t = [_crash("baseline", 4000)] * 10 + [_crash("control-cuda", 9000)] * 10
    v = _verdict(case, t)
    assert "not specific to Tile IR" in " ".join(v["sentences"])
    assert "not specific to Tile IR" in v["owner"]


def test_nothing_crashes_is_not_reproduced(case):
    t = [_survive("baseline", 500_000)] * 10 + [_survive("control-cuda", 500_000)] * 10
    v = _verdict(case, t)
    assert v["status"] == "not_reproduced" and v["owner"] is None
    assert v["sentences"][0].startswith("Not reproduced")


def test_control_without_enough_exposure_is_inconclusive(case):
    t = [_crash("baseline", 400_000)] * 10 + [_survive("control-cuda", 100)] * 3
    v = _verdict(case, t)
    text = " ".join(v["sentences"])
    assert "too little exposure" in text and "needs Tile IR modules" not in text
    assert any("larger cycle budget" in s for s in v["next"])
    assert v["owner"] is None


def test_invalid_baseline_is_inconclusive(case):
    t = [{"arm": "baseline", "outcome": "invalid", "detail": "no progress", "exposure": 0,
          "duration_s": 20.0, "crash": None}] * 5
    v = _verdict(case, t)
    assert v["status"] == "inconclusive"


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
    assert "--serialize" in cmd("serialized").argv
    assert cmd("library-api").argv[cmd("library-api").argv.index("--api") + 1] == "library"


def test_seed_output_parser(case):
    lines = ["k.cubin (46632 bytes), 2 threads, nothing preloaded\n",
             "  launches=10 loads=12 unloads=7\n", "  launches=20 loads=22 unloads=15\n",
             "SURVIVED 2s\n"]
    events = case.parsers["seed"](lines)
    assert events[-1] == {"event": "final", "status": "ok", "t": 2.0,
                          "counters": {"launches": 20, "loads": 22, "unloads": 15}}
    # A crash leaves no SURVIVED line: no final event, the signal decides.
    assert all(e["event"] == "heartbeat" for e in case.parsers["seed"](lines[:3]))


def test_live_module_pattern_detects_power_of_two_clustering(case):
    from gpurepro.manifest import load_sibling

    verdict = load_sibling(case.path, "verdict")

    def crash(live):
        return {"outcome": "crashed", "counters": {"cycles": 1, "loads": live + 100, "unloads": 100}}

    clustered = [crash(v) for v in (512, 2048, 2049, 8190, 8192, 4096, 1023)]
    found = verdict.live_module_pattern(clustered)
    assert found["near_power_of_two"] == 7 and found["p_value"] < 1e-6
    spread = [crash(v) for v in (700, 1500, 3000, 5000, 6100, 11000, 12345)]
    assert verdict.live_module_pattern(spread)["near_power_of_two"] == 0
    # The seed's counters (no "cycles") are not used: its heartbeat lags the crash.
    assert verdict.live_module_pattern([{"outcome": "crashed", "counters": {"loads": 2148, "unloads": 100}}] * 6) is None
