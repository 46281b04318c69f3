"""tcgen05_alloc_order SASS analysis (gpurepro.building.lowering on the case's lowering.py): the
derivation, on real compiler output.

The parser tests read a listing that cuobjdump 13.2.51 printed for ptxas 13.0.88's sm_103a
lowering of tcgen05.alloc.cta_group::2 (tests/data/tcgen05/). The toolchain-marked tests compile
and disassemble afresh with the pinned wheels and skip, naming the pins, when they are absent.
"""

from __future__ import annotations

import json

import pytest

from gpurepro.building import lowering, sass_pairs
from gpurepro.building.sass import parse_listing
from gpurepro.case import toolchain
from tests.cases.test_tcgen05_case import pinned_venv
from tests.conftest import ROOT

CASE_DIR = ROOT / "cases" / "tcgen05_alloc_order"
LISTING = ROOT / "tests" / "data" / "tcgen05" / "alloc_cg2_sm_103a.sass"


SPEC = lowering.load_spec(CASE_DIR / "lowering.py")


def _rows(instrs, indices):
    return [(instrs[i].opcode, sass_pairs.target(instrs, i)) for i in indices]


def test_listing_parses():
    funcs = parse_listing(LISTING.read_text())
    instrs = funcs["k_alloc_cg2"]
    assert instrs[0].offset == 0 and instrs[0].opcode == "LDC"
    bra = next(i for i in instrs if i.pred == "@!P0" and i.opcode == "BRA")
    assert bra.operands == ["0x320"]


def test_parity_split_on_recorded_lowering():
    instrs = parse_listing(LISTING.read_text())["k_alloc_cg2"]
    split = sass_pairs.parity_split(instrs)
    assert split is not None and split.predicate == "P0" and split.predicate_means_leader
    leader, follower = _rows(instrs, split.leader), _rows(instrs, split.follower)
    assert ("UTCATOMSWS.2CTA.FIND_AND_SET.ALIGN", None) in leader
    assert ("SYNCS.ARRIVE.TRANS64.RED", "peer") in leader
    assert ("STAS", "peer") in leader
    assert not any(op.startswith("UTCATOMSWS") for op, _ in follower)
    assert ("SYNCS.PHASECHK.TRANS64.TRYWAIT", "own") in follower
    assert ("SYNCS.ARRIVE.TRANS64.RED.A1T0", "peer") in follower
    # the follower's only access to the peer is its acknowledgement
    assert [op for op, where in follower if where == "peer"] == ["SYNCS.ARRIVE.TRANS64.RED.A1T0"]


def test_leader_does_not_wait_after_signalling():
    instrs = parse_listing(LISTING.read_text())["k_alloc_cg2"]
    split = sass_pairs.parity_split(instrs)
    signal = next(i for i in split.leader if instrs[i].opcode == "SYNCS.ARRIVE.TRANS64.RED")
    after = sass_pairs.reachable(instrs, signal, split.predicate, split.predicate_means_leader)
    assert not any(instrs[i].opcode.startswith("SYNCS.PHASECHK") for i in after & set(split.leader))
    assert sass_pairs.constant_operand(instrs, signal) == "R10=0x4"


def test_no_split_without_parity_branch():
    text = """
        Function : k
        /*0000*/                   LDC R1, c[0x0][0x37c] ;
        /*0010*/                   S2R R3, SR_CgaCtaId ;
        /*0020*/                   ISETP.NE.AND P0, PT, R3, RZ, PT ;
        /*0030*/              @!P0 BRA 0x50 ;
        /*0040*/                   NOP ;
        /*0050*/                   EXIT ;
    """
    assert sass_pairs.parity_split(parse_listing(text)["k"]) is None


# ----------------------------------------------------------------------------- real tools


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    for venv in (pinned_venv(), None):
        try:
            tools = {n: toolchain.find_tool(n, toolchain.DEFAULT_TOOLS, venv) for n in ("ptxas", "cuobjdump")}
            break
        except toolchain.ToolNotFound as exc:
            why = str(exc)
    else:
        pytest.skip(f"pinned CUDA tools not installed: {why}")
    out = tmp_path_factory.mktemp("sass")
    lowering.run(SPEC, out, ["sm_103a", "sm_100a"], tools, name="sass_analysis")
    return out, json.loads((out / "sass_analysis.json").read_text())


@pytest.mark.toolchain
def test_pinned_tool_versions(analysis):
    _, doc = analysis
    assert doc["tools"]["ptxas"] == "13.0.88" and doc["tools"]["cuobjdump"] == "13.2.51"


@pytest.mark.toolchain
def test_mbarrier_table_is_derived(analysis):
    _, doc = analysis
    for target in doc["targets"]:
        rows = {r["kernel"]: r for r in target["reference_table"]}
        assert all(r["claim_verified"] for r in rows.values() if r["report_claim"])
        assert [s["opcode"] for s in rows["k_arrive"]["sass"]] == ["SYNCS.ARRIVE.TRANS64.A1T0"]
        remote = [s for s in rows["k_arrive_remote"]["sass"] if s["opcode"].startswith("SYNCS")]
        assert remote[0]["opcode"] == "SYNCS.ARRIVE.TRANS64.RED.A1T0" and remote[0]["memory"] == "cluster"


@pytest.mark.toolchain
def test_alloc_lowering(analysis):
    out, doc = analysis
    for target in doc["targets"]:
        low = target["studied"]["k_alloc_cg2"]
        assert low["splits_on_parity"] and low["predicate_true_means"].startswith("leader")
        assert low["leader_waits_before_signal"] and not low["leader_waits_after_signal"]
        assert all(c["verified"] for c in target["claims"]), target["claims"]
        findings = {f["id"]: f["value"] for f in target["findings"]}
        assert findings["dealloc_synchronises_with_peer"] is False
        assert findings["relinquish_synchronises_with_peer"] is False
        assert findings["cta_group1_alloc_splits_on_parity"] is False
    assert "identical" in doc["across_targets"]
    md = (out / "sass_analysis.md").read_text()
    assert "UTCATOMSWS.2CTA.FIND_AND_SET.ALIGN" in md and "| peer" in md
