"""gpurepro.building.lowering and sass_pairs: a CTA-pair lowering read from SASS text alone (the
recorded tcgen05 listing and small made-up ones), without the CUDA tools."""

from __future__ import annotations

import json

from gpurepro.building import lowering, sass_pairs
from gpurepro.building.sass import parse_listing
from tests.conftest import ROOT

PAIR = parse_listing((ROOT / "tests" / "data" / "tcgen05" / "alloc_cg2_sm_103a.sass").read_text())
REFERENCE = parse_listing("""
        Function : k_empty
        /*0000*/                   LDC R1, c[0x0][0x37c] ;
        /*0010*/                   EXIT ;
        Function : k_arrive
        /*0000*/                   LDC R1, c[0x0][0x37c] ;
        /*0010*/                   SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR4], RZ ;
        /*0020*/                   EXIT ;
""")
LOCAL = parse_listing("""
        Function : k_local
        /*0000*/                   UTCATOMSWS.AND URZ, UR4 ;
        /*0010*/                   EXIT ;
""")["k_local"]


def test_pair_lowering_splits_the_recorded_alloc_into_leader_and_follower_paths():
    low = lowering.pair_lowering(PAIR["k_alloc_cg2"])
    assert low["splits_on_parity"] and low["predicate_true_means"] == "leader (even CTA)"
    assert low["leader_waits_before_signal"] and not low["leader_waits_after_signal"]
    assert [r["opcode"] for r in low["follower"] if r["memory"] == "peer"] == [
        "SYNCS.ARRIVE.TRANS64.RED.A1T0"]
    assert any(r.get("value") == "R10=0x4" for r in low["leader"])  # the arrive's tx count


def test_claims_are_checked_as_opcode_and_memory_target_on_a_side():
    low = lowering.pair_lowering(PAIR["k_alloc_cg2"])
    checked = lowering.check_claims(low, [
        ("leader", r"STAS", "peer", "leader stores into the peer"),
        ("follower", r"STAS", "peer", "follower stores into the peer"),
        ("leader", r"UTCATOMSWS\..*", "peer", "the allocation touches the peer")])
    assert [c["verified"] for c in checked] == [True, True, False, False]
    assert checked[2]["evidence"] == "no STAS on the follower path targeting peer memory"


def test_a_kernel_without_a_parity_branch_lists_every_key_instruction():
    low = lowering.pair_lowering(LOCAL)
    assert low == {"splits_on_parity": False, "all": [
        {"offset": "0x0000", "sass": "UTCATOMSWS.AND URZ, UR4", "opcode": "UTCATOMSWS.AND",
         "memory": None}]}
    assert sass_pairs.parity_split(LOCAL) is None


def test_reference_table_keeps_what_the_empty_kernel_lacks_and_checks_the_reported_opcode():
    kernels = [("k_empty", "(nothing)", ""), ("k_arrive", "mbarrier.arrive", "")]
    rows = lowering.reference_table(REFERENCE, kernels, {"k_arrive": "SYNCS.ARRIVE.TRANS64.RED"})
    assert [s["opcode"] for s in rows[0]["sass"]] == ["SYNCS.ARRIVE.TRANS64.A1T0"]
    assert rows[0]["claim_verified"] is False


def test_declared_findings_take_their_value_from_their_kind():
    funcs = {**PAIR, "k_local": LOCAL}
    found = {f["id"]: f["value"] for f in lowering.findings([
        ("waits", "leader_waits_after_signal", "k_alloc_cg2", ""),
        ("last", "follower_last_peer_access", "k_alloc_cg2", ""),
        ("local_touches", "touches_peer", "k_local", ""),
        ("local_splits", "splits_on_parity", "k_local", ""),
        ("local_waits", "leader_waits_after_signal", "k_local", "")], funcs)}
    assert found["waits"] is False and found["last"].startswith("SYNCS.ARRIVE.TRANS64.RED.A1T0")
    assert found["local_touches"] is False and found["local_splits"] is False
    assert "local_waits" not in found  # no leader path: no finding rather than a false one


def test_the_case_analysis_reads_the_record_or_says_why_not(tmp_path):
    read = lowering.analysis("sass")
    assert read({}) == {"available": False, "reason": "sass artifact not built"}
    record = tmp_path / "sass_analysis.json"
    record.write_text(json.dumps({"tools": {"ptxas": "13.0.88"}, "claims": [], "findings": [],
                                  "targets": []}))
    assert read({"sass": record}) == {"available": True, "tools": {"ptxas": "13.0.88"},
                                      "claims": [], "findings": []}


def test_the_command_line_names_what_it_needs():
    assert lowering.main(["--out", "x"]) == 2
    assert lowering.main(["--spec", "s.py", "--out", "x", "--arch", "sm_100a", "--arch",
                          "sm_103a", "--repro", "bin"]) == 2
