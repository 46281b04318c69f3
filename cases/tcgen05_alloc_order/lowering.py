"""What this case's SASS analysis (gpurepro.building.lowering, the artifact "sass") compiles and
checks: one kernel per instruction (mbarrier operations whose PTX semantics are public, to read
the undocumented tcgen05 lowering by; the 2-CTA tcgen05 allocation instructions alone and in the
reproducer's order, and .cta_group::1 alloc as a contrast), the report's claims about the
lowering, and the findings. Every kernel has k_empty's parameters, prelude and 2-CTA cluster, so
whatever is not in k_empty belongs to the instruction.
"""
from __future__ import annotations

PTX_VERSION = "9.0"  # CUDA 13.0's ptxas; sm_100a needs >= 8.6, sm_103a >= 8.8

_PRELUDE = """\
.visible .entry {name}(.param .u32 p_tx, .param .u32 p_par, .param .u32 p_rank)
.explicitcluster
.reqnctapercluster 2, 1, 1
{{
  .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<4>;
  ld.param.u32 %r1, [p_tx];
  ld.param.u32 %r2, [p_par];
  ld.param.u32 %r3, [p_rank];
  mov.u32 %r4, bar;
  mov.u32 %r6, dst;
{body}
  ret;
}}
"""

# (kernel, PTX shown in the table, body). %r1 = tx count, %r2 = parity, %r3 = target CTA rank,
# %r4 = this CTA's mbarrier, %r6 = this CTA's shared word for the TMEM address.
REFERENCE = [
    ("k_empty", "(nothing: reference kernel)", ""),
    ("k_arrive", "mbarrier.arrive.shared::cta.b64",
     "  mbarrier.arrive.shared::cta.b64 %rd1, [%r4];"),
    ("k_arrive_expect_tx", "mbarrier.arrive.expect_tx.shared::cta.b64",
     "  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r4], %r1;"),
    ("k_expect_tx", "mbarrier.expect_tx.relaxed.cta.shared::cta.b64",
     "  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r4], %r1;"),
    ("k_complete_tx", "mbarrier.complete_tx.relaxed.cta.shared::cta.b64",
     "  mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r4], %r1;"),
    ("k_try_wait_parity", "mbarrier.try_wait.parity.shared::cta.b64 (loop)",
     "WAIT:\n  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], %r2;\n  @!%p1 bra WAIT;"),
    ("k_arrive_remote", "mbarrier.arrive.release.cluster.shared::cluster.b64 (mapa to CTA %r3)",
     "  mapa.shared::cluster.u32 %r5, %r4, %r3;\n"
     "  mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];"),
    ("k_arrive_expect_tx_remote",
     "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 (mapa to CTA %r3)",
     "  mapa.shared::cluster.u32 %r5, %r4, %r3;\n"
     "  mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%r5], %r1;"),
]

_ALLOC2 = "  tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%r6], 512;"
_RELQ2 = "  tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;"
_DEALLOC2 = "  tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r7, 512;"

STUDIED = [
    ("k_alloc_cg2", "tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32", _ALLOC2),
    ("k_relinquish_cg2", "tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned", _RELQ2),
    ("k_dealloc_cg2", "tcgen05.dealloc.cta_group::2.sync.aligned.b32",
     "  mov.u32 %r7, %r1;\n" + _DEALLOC2),
    ("k_sequence_cg2", "alloc -> relinquish -> ld.shared -> dealloc (cta_group::2, the repro's order)",
     _ALLOC2 + "\n" + _RELQ2 + "\n  ld.shared.u32 %r7, [%r6];\n" + _DEALLOC2),
    ("k_alloc_cg1", "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 (contrast)",
     "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r6], 512;"),
]


def module(target: str, kernels: list[tuple[str, str, str]]) -> str:
    """A PTX module for ``target`` (e.g. sm_103a) holding the given kernels."""
    head = (f".version {PTX_VERSION}\n.target {target}\n.address_size 64\n\n"
            ".shared .align 8 .b64 bar;\n.shared .align 4 .b32 dst;\n\n")
    return head + "\n".join(_PRELUDE.format(name=k, body=body) for k, _, body in kernels)

PAIR = "k_alloc_cg2"  # the lowering whose leader/follower paths the report describes
REPRO = "repro"  # the kernel of the reporter's binary (seed/repro.cu)
TITLE = "tcgen05 alloc-order"

# The report's appendix, as claims to test (never as results): opcodes and memory targets are
# checked; in parentheses, the report's reading of what they do (the opcodes have no public
# semantics).
OPCODE_CLAIMS = {
    "k_arrive": "SYNCS.ARRIVE.TRANS64.A1T0",
    "k_arrive_expect_tx": "SYNCS.ARRIVE.TRANS64",
    "k_expect_tx": "SYNCS.ARRIVE.TRANS64.RED.A0TR",
    "k_complete_tx": "SYNCS.ARRIVE.TRANS64.RED.A0TX",
    "k_try_wait_parity": "SYNCS.PHASECHK.TRANS64.TRYWAIT",
}
PATH_CLAIMS = [
    ("leader", r"UTCATOMSWS\..*FIND_AND_SET.*", None,
     "leader: UTCATOMSWS.2CTA.FIND_AND_SET.ALIGN, retried with NANOSLEEP (allocates)"),
    ("leader", r"SYNCS\.ARRIVE\.TRANS64\.RED", "peer",
     "leader: SYNCS.ARRIVE.TRANS64.RED [peer], 4 (expect_tx(4) + arrive on the peer's barrier)"),
    ("leader", r"STAS", "peer", "leader: STAS [peer_smem], addr (async store of the TMEM address)"),
    ("follower", r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT", "own",
     "follower: SYNCS.PHASECHK.TRANS64.TRYWAIT [own+8] (waits on its own barrier)"),
    ("follower", r"LDS", "own", "follower: LDS [tmem_addr] (reads the address)"),
    ("follower", r"SYNCS\.ARRIVE\.TRANS64\.RED\.A1T0", "peer",
     "follower: SYNCS.ARRIVE.TRANS64.RED.A1T0 [peer] (plain ack)"),
]
# (id, kind of gpurepro.building.lowering.FINDING_KINDS, kernel, meaning; "read as": a reading)
FINDINGS = [
    ("leader_waits_before_signalling", "leader_waits_before_signal", PAIR,
     "Whether the leader's path has a SYNCS.PHASECHK...TRYWAIT before its first remote "
     "SYNCS/STAS; read as: it waits on its own mbarrier for the acknowledgement of the previous "
     "allocation."),
    ("leader_waits_after_signalling", "leader_waits_after_signal", PAIR,
     "Whether the leader's path has any SYNCS.PHASECHK after its first remote SYNCS/STAS (false, "
     "read as: its alloc returns without the follower's acknowledgement of this allocation)."),
    ("follower_last_peer_access", "follower_last_peer_access", PAIR,
     "The follower's last access to the peer CTA's shared memory; read as: its alloc ends with a "
     "remote operation on the leader's shared memory, which must still find the leader resident."),
    ("dealloc_synchronises_with_peer", "touches_peer", "k_dealloc_cg2",
     "Whether tcgen05.dealloc.cta_group::2 contains any cross-CTA access or SYNCS instruction "
     "(false, read as: it never waits for the peer)."),
    ("dealloc_splits_on_parity", "splits_on_parity", "k_dealloc_cg2",
     "Whether the dealloc lowering branches on CTA parity."),
    ("relinquish_synchronises_with_peer", "touches_peer", "k_relinquish_cg2",
     "Whether tcgen05.relinquish_alloc_permit.cta_group::2 touches the peer."),
    ("cta_group1_alloc_splits_on_parity", "splits_on_parity", "k_alloc_cg1",
     "Contrast: whether tcgen05.alloc.cta_group::1 has a leader/follower split."),
]
