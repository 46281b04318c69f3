"""A timed axis: each point's class from a claim on its time ratio to the reference arm, and the
CPU stage's resource and message facts. Pure functions on synthetic trials and tool output."""

from __future__ import annotations

import pytest

from gpurepro.building.sass import facts, message_codes, parse_ptxas_verbose, parse_resource_usage
from gpurepro.sweep.timed import point_class

TIMED = {"reference": "ref", "slower": 0.05, "same": 0.02, "alpha": 0.05}
FAILURES = ("wrong_result", "crashed")


def _trials(arm: str, times: list[float], outcome: str = "survived") -> list[dict]:
    return [{"arm": arm, "outcome": outcome,
             "observations": {"timing": {"unit": "s", "values": [t, t * 1.001, t * 0.999]}}}
            for t in times]


REF = [1.000, 1.002, 0.998, 1.001]


def test_a_point_ten_percent_slower_fails():
    cls, rec = point_class(_trials("p", [1.10, 1.101, 1.099, 1.102]) + _trials("ref", REF),
                           TIMED, "p", FAILURES, n_points=20)
    assert cls == "fails" and rec["ratio"] == pytest.approx(1.10, abs=0.002)
    assert rec["alpha"] == pytest.approx(0.05 / 20) and rec["p_slower"] <= rec["alpha"]


def test_a_point_within_the_same_margin_passes():
    cls, rec = point_class(_trials("p", [0.995, 0.996, 0.994, 0.995]) + _trials("ref", REF),
                           TIMED, "p", FAILURES, n_points=20)
    assert cls == "passes" and rec["p_same"] <= rec["alpha"]


def test_a_point_between_the_margins_is_not_decided():
    cls, rec = point_class(_trials("p", [1.035, 1.034, 1.036, 1.035]) + _trials("ref", REF),
                           TIMED, "p", FAILURES, n_points=20)
    assert cls == "unknown" and rec["decided"].startswith("not decided")


def test_noise_too_wide_for_few_trials_is_not_decided():
    cls, _ = point_class(_trials("p", [1.2, 0.9]) + _trials("ref", [1.0, 1.1]), TIMED, "p",
                         FAILURES, n_points=20)
    assert cls == "unknown"


def test_a_wrong_output_fails_however_fast():
    trials = _trials("p", [0.5, 0.5, 0.5]) + _trials("p", [0.5], "wrong_result") + _trials("ref", REF)
    cls, rec = point_class(trials, TIMED, "p", FAILURES, n_points=3)
    assert cls == "fails" and "wrong_result" in rec["decided"]


def test_resource_usage_and_ptxas_verbose_are_read():
    res = parse_resource_usage("Resource usage:\n Common:\n  GLOBAL:0\n Function attention:\n"
                               "  REG:106 STACK:0 SHARED:41984 LOCAL:0 CONSTANT[0]:568 TEXTURE:0\n")
    assert res == {"attention": {"REG": 106, "STACK": 0, "SHARED": 41984, "LOCAL": 0,
                                 "CONSTANT[0]": 568, "TEXTURE": 0}}
    v = parse_ptxas_verbose("ptxas info    : Compiling entry function 'attention' for 'sm_90a'\n"
                            "ptxas info    : Function properties for attention\n"
                            "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
                            "ptxas info    : Used 106 registers\n")
    assert v == {"attention": {"STACK": 8, "SPILL_STORES": 4, "SPILL_LOADS": 4, "REG": 106}}
    text = ("ptxas info    : (C7517) warpgroup.wait is injected in around line 1141\n"
            "ptxas info    : (C7517) again\nptxas warning : (C7510) other\n")
    assert message_codes(text) == ["C7510", "C7517"]
    got = facts({"attention": []}, [("attention", "res:REG"), ("*", "msg:C7517"),
                                    ("*", "msg:C9999"), ("other", "res:REG")],
                {"attention": {"REG": 106}}, ["C7517"])
    assert got == {"attention:res:REG": 106, "*:msg:C7517": True, "*:msg:C9999": False,
                   "other:res:REG": None}


def test_an_artifact_built_per_release_is_substituted_by_its_release_name():
    from pathlib import Path

    from gpurepro.case.load import load_case
    from gpurepro.cli.args import checked_substitutes
    from gpurepro.errors import UsageError

    root = Path(__file__).resolve().parents[2]
    case = load_case("fa3_wgmma_wait", root)
    got = checked_substitutes(case, "sm_90a",
                              [("cubin_overlap_12.6.85", "cases/fa3_wgmma_wait/kernel.cu")], root)
    assert [name for name, _ in got] == ["cubin_overlap_12.6.85"]
    with pytest.raises(UsageError, match="no artifact 'cubin_overlap_9.9'"):
        checked_substitutes(case, "sm_90a", [("cubin_overlap_9.9", "cases/fa3_wgmma_wait/kernel.cu")], root)
