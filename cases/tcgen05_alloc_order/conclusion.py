"""The verdict, declared (gpurepro.case.declared): the classification (README.md,
"Classification") as a decision table over the claims, with the measurements, SASS readings,
documentation audit, practice and hypotheses. STATED_RULE: a rule the text read states against
either condition, which would make it a usage error (none).
"""
from __future__ import annotations

from gpurepro.case.declared import (
    Branch,
    Declared,
    Evidence,
    InstrumentMeasure,
    Measure,
    NotRun,
    Reading,
    StageMeasure,
)
from gpurepro.case.hypotheses import Hypothesis

ISA, PTXAS = "PTX ISA 9.1", "ptxas 13.0.88 (CUDA 13.0)"
CUTLASS = "CUTLASS 147f5673 (include/cute/arch/tmem_allocator_sm100.hpp)"
BASE, INSTR = "follower-baseline", "instr-follower-baseline"
PLACES = ("baseline", "barrier-before-alloc", "barrier-after-alloc", "barrier-before-dealloc")
BARRIERS = tuple(f"{p}-lower" for p in PLACES[1:])  # the claims that a barrier.cluster helps
CLASSIFY = ("linger-fails", "linger-lower", "control-arrive-fails")
CONDITION = {
    "exit": "a CTA of the pair exiting before the peer's tcgen05.alloc.cta_group::2 has completed",
    "dealloc": "a CTA of the pair deallocating, and staying resident, before the peer's "
               "tcgen05.alloc.cta_group::2 has completed"}
STATED_RULE: dict[str, str | None] = {"exit": None, "dealloc": None}
SASS_READING = ("reading of undocumented SASS opcodes by differential compilation against PTX with "
                "documented semantics, not documented semantics")
FILE = ("File with NVIDIA, attaching this result and sass_analysis.md, naming the owner below and "
        "the claims it rests on.")
NEEDS = ("instr-linger does not fail in most trials (claim linger-fails contradicted) and fails "
         f"less often than {INSTR} (claim linger-lower supported), so the failure needs "
         f"{CONDITION['exit']}")
DEFECT_OWNER = (
    "NVIDIA: the behaviour of tcgen05.alloc.cta_group::2 / tcgen05.dealloc.cta_group::2 on {target} "
    f"as lowered by {PTXAS}, or the hardware: instr-linger meets every precondition that {ISA} "
    f"sections 2.2.2, 9.7.16.5 (Tables 46 and 47) and 9.7.16.7.1 and {CUTLASS} "
    "Allocator2Sm::allocate()/free() @pre state, and still fails. If the ordering is intended, the "
    "requirement is new and belongs in those sections")
GAP_OWNER = (
    f"NVIDIA, the documentation: {ISA} section 9.7.16.7.1 (tcgen05.alloc, tcgen05.dealloc, "
    "tcgen05.relinquish_alloc_permit) and section 9.7.16.5 (Issue Granularity: Table 46, row "
    ".alloc/.dealloc/.relinquish_alloc_permit ::2; Table 47, 'Warps can immediately exit after "
    "deallocating Tensor Memory') do not say that tcgen05.alloc.cta_group::2 completes through an "
    "operation on the peer CTA's shared memory, to which the rule of section 2.2.2 (the peer CTA "
    f"must not have exited before the shared memory operation completes) would apply; {CUTLASS} "
    "Allocator2Sm::allocate()/free() @pre name no such precondition. If NVIDIA does not intend the "
    f"requirement, the behaviour (the tcgen05.alloc.cta_group::2 lowering in {PTXAS}, or the "
    "hardware) is the defect instead")


def _usage(condition: str, when: dict[str, str]) -> tuple[Branch, ...]:
    """The usage-error row, only while the text read states a rule against ``condition``."""
    rule = STATED_RULE[condition]
    return () if not rule else (Branch(
        "usage_error", when={"baseline-launch-failure": "supported", **when},
        any_supported=BARRIERS, because=("baseline-launch-failure", *BARRIERS, *when),
        owner="the program's author (the reproducer; CUTLASS users writing 2-SM kernels): "
              f"{CONDITION[condition]} breaks the rule {rule}; synchronise the CTA pair between "
              "tcgen05.alloc.cta_group::2 and the first CTA's dealloc and exit",
        sentence=f"Classification: usage error: {CONDITION[condition]}, which the documentation "
                 f"read forbids: {rule}.", next=FILE),)


def branches() -> tuple[Branch, ...]:
    ok, fails = {"baseline-launch-failure": "supported"}, {"linger-fails": "supported"}
    needs = {"linger-fails": "contradicted", "linger-lower": "supported"}
    decide = (f"Decide the claims that classify the failure ({', '.join(CLASSIFY)}): run "
              f"instr-linger, {INSTR} and control-arrive-after-exit with more trials ({{rerun}}).")
    return (
        Branch("not_reproduced", when={"baseline-launch-failure": "contradicted"},
               next=f"Compare device, driver and toolkit with the report: {BASE} did not end as "
                    "cudaErrorLaunchFailure in most trials."),
        Branch("inconclusive", when={"baseline-launch-failure": "!supported"}, open=True,
               next=f"Decide claim baseline-launch-failure: run {BASE} with more trials ({{rerun}})."),
        *_usage("dealloc", fails),
        Branch("defect", when={**ok, **fails}, any_supported=BARRIERS, owner=DEFECT_OWNER,
               because=("baseline-launch-failure", *BARRIERS, "linger-fails"), next=FILE,
               sentence="Classification: defect against the documentation as written: "
                        f"instr-linger (dealloc early, CTA exit late) meets every precondition "
                        f"{ISA} and {CUTLASS} state and still fails in most trials (claim "
                        "linger-fails supported)."),
        *_usage("exit", needs),
        Branch("documentation_gap", when={**ok, **needs, "control-arrive-fails": "supported"},
               any_supported=BARRIERS, owner=GAP_OWNER, next=FILE,
               because=("baseline-launch-failure", *BARRIERS, *CLASSIFY),
               sentence=f"Classification: documentation gap: {NEEDS}; a late remote mbarrier "
                        "arrive into an exited CTA, an operation the rule of "
                        f"{ISA} section 2.2.2 covers, faults by itself (claim control-arrive-fails "
                        f"supported); no section of {ISA} says that tcgen05.alloc.cta_group::2 "
                        "completes through such an operation."),
        Branch("class_not_decided", when={**ok, **needs}, any_supported=BARRIERS, open=True,
               next=decide,
               sentence=f"Classification not decided: {NEEDS}, but claim control-arrive-fails (a "
                        "late remote arrive into an exited CTA faults by itself) is "
                        "{decision[control-arrive-fails]}, so it is not shown that the rule of "
                        f"{ISA} section 2.2.2 covers it."),
        Branch("class_not_decided", when=ok, any_supported=BARRIERS, open=True, next=decide,
               sentence="Classification not decided: claim linger-fails is "
                        "{decision[linger-fails]} and claim linger-lower is "
                        "{decision[linger-lower]}; together they say whether the failure needs "
                        "the early exit (documentation gap) or happens with every stated "
                        "precondition met (defect)."),
        Branch("reproduced_not_ordering", when={**ok, **{b: "contradicted" for b in BARRIERS}},
               because=("baseline-launch-failure",),
               owner="NVIDIA: the driver, ptxas or hardware behind an unspecified launch failure "
                     "that no barrier.cluster placement removes",
               next="File with NVIDIA: the failure reproduces and no barrier.cluster placement "
                    "removes it."),
        Branch("reproduced_ordering_not_decided", when=ok, open=True,
               next=f"Decide the barrier claims ({', '.join(BARRIERS)}): run the "
                    "follower-barrier-* arms with more trials ({rerun})."),
    )


MEASURES = (
    Measure("Baseline {arm} (seed binary, follower CTA delayed 5000 x 1 us, no barrier): {prop}.", (BASE,)),
    Measure("Follower delayed, with a barrier.cluster (before alloc, after alloc, before dealloc)",
            tuple("follower-" + m for m in PLACES[1:])),
    Measure("Leader or neither CTA delayed",
            tuple(f"{d}-{m}" for d in ("leader", "neither") for m in PLACES)),
    Measure("Spin sweep (x 1 us; 5000 is the baseline)",
            (*(f"follower-spin-{s}" for s in (0, 10, 100, 1000)), "leader-spin-50000")),
    Measure("Instrumented build (progress markers)",
            (INSTR, "instr-leader-baseline", "instr-follower-barrier-before-dealloc",
             "instr-no-relinquish", "instr-no-dealloc", "instr-linger")),
    StageMeasure(INSTR, stuck=(
        "cta1", "before_alloc", f"In every trial of {INSTR}, CTA1 entered tcgen05.alloc and did "
        "not record its return.", "Hypothesis: the fault is raised inside CTA1's tcgen05.alloc, "
        "as the report says; the markers show only that CTA1 never recorded the alloc's return "
        "before the context died.")),
    InstrumentMeasure(("instr-coredump", "instr-compute-sanitizer", "instr-cuda-gdb",
                       "follower-coredump", "control-store-coredump", "control-store-cuda-gdb"),
                      {"coredump": "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
                       "compute-sanitizer": "compute-sanitizer (memcheck)",
                       "cuda-gdb": "cuda-gdb batch run"}),
    Measure("Controls without tcgen05 (the odd CTA touches the even CTA's shared memory 5000 x 1 us "
            "after the even CTA could exit)",
            ("control-arrive-after-exit", "control-store-after-exit",
             "control-store-barrier-before-exit")),
)

READINGS = (
    Reading("SASS analysis (ptxas {tools[ptxas]}): {verified} of {claims} of the report's claims "
            "about the tcgen05.alloc.cta_group::2 lowering are verified, as opcodes and memory "
            f"targets in the disassembly; what the opcodes do is a {SASS_READING} "
            "(sass_analysis.md)."),
    Reading(f"Reading of the SASS ({SASS_READING}): the leader's alloc returns without waiting for "
            "the follower's acknowledgement, and the follower's alloc ends with a remote operation "
            "on the leader's shared memory ({finding[follower_last_peer_access]}).",
            when={"leader_waits_after_signalling": False, "follower_last_peer_access": "*"}),
    Reading("In the SASS, tcgen05.dealloc.cta_group::2 has no cross-CTA access and no SYNCS "
            "instruction; read as: it never synchronises with the peer CTA.",
            when={"dealloc_synchronises_with_peer": False}),
)

# What the documentation read says (README.md, "Documentation audit"), with its version, and
# what practitioners do about the same ordering: evidence read outside the run, never a result.
EVIDENCE = (
    Evidence("Documentation audit (README.md)", (
        f"{ISA} and {CUTLASS} state no rule that one CTA of a pair must not deallocate, or exit, "
        "before the peer's tcgen05.alloc.cta_group::2 has completed. Section 2.2.2 (Cluster of "
        "Cooperative Thread Arrays) states that a peer CTA must not have exited before a "
        "shared-memory operation with it completes, and section 9.7.16.5 (Issue Granularity, "
        "Table 46) gives the rule 'the peer CTA should be active and should not have exited' to "
        ".mma/.cp/.shift/.commit only; no tcgen05 section says that the 2-CTA alloc performs a "
        "shared-memory operation on the peer CTA. Section 9.7.16.7.1 asks of a 2-CTA alloc only "
        "that the peer CTA be launched and its warps eventually participate, and Table 47 says "
        "that ensuring no concurrent Tensor Memory accesses from the peer 'suffices' before a "
        "2-CTA dealloc and that 'Warps can immediately exit after deallocating Tensor Memory' "
        "(the reproducer makes no Tensor Memory access). Allocator2Sm's @pre lists for "
        "allocate() and free() name no timing or ordering precondition. PTX ISA 9.1 is the text "
        "read (a copy of the 9.1 page; no copy of the 9.0 text was found). The report's "
        "toolchain, nvcc/ptxas 13.0.88, emits PTX ISA 9.0 (.version 9.0); the release notes of "
        "9.0 and 9.1 list one change to these sections, the 9.0 rule that all tcgen05 "
        "instructions of a kernel use the same .cta_group, so the 9.1 sentences are taken as "
        "9.0's.")),
    Evidence("Practice (evidence from documentation and code review, not from an arm)", (
        "programs that use the 2-CTA allocator synchronise the pair around it. Triton's NVIDIA "
        "backend waits for both CTAs before a 2-CTA deallocation (triton-lang/triton pull request "
        "8874, merged: \"This is required by the ISA\"), and pull request 9498 proposes a 2-CTA "
        "barrier before the 2-CTA deallocation in place of a cluster barrier; a fix to the CuTe "
        "Blackwell tutorials 04/05 (NVIDIA/cutlass pull request 3316, open) adds one around the "
        "2-SM allocation, quoting the PTX sentence \"the issuing warp must make sure that peer CTA "
        "is launched and its warps eventually participate in collective operations\" and a "
        "compute-sanitizer racecheck hazard in Allocator2Sm::allocate. This supports the reading "
        "that the ordering is a requirement programs are expected to meet (documented requirement, "
        "a usage error of the reproducer) over a defect, as practitioners read the ISA; but "
        "neither quotes a sentence that forbids a CTA to deallocate or exit before the peer's "
        "alloc has completed, and the quoted one is met by the reproducer (its peer is launched "
        "and participates). What a B300 (or B200) run still decides: whether the failure needs "
        "the early exit (instr-linger against the instrumented baseline, claims linger-fails and "
        "linger-lower) and whether a late remote arrive into an exited CTA faults by itself "
        "(control-arrive-fails), i.e. documentation gap against defect against the text as "
        "written (the report: NVIDIA/cutlass issue 3435)"),
        ("https://github.com/triton-lang/triton/pull/8874",
         "https://github.com/triton-lang/triton/pull/9498",
         "https://github.com/NVIDIA/cutlass/pull/3316",
         "https://github.com/NVIDIA/cutlass/issues/3435")),
)

HYPOTHESES = (
    Hypothesis(
        "the failure is the follower's remote mbarrier arrive at the end of its tcgen05.alloc "
        "landing in the leader CTA's shared memory after the leader has exited",
        label=f"from the SASS analysis of the build, sass_analysis.md, a {SASS_READING}; no arm "
              "removes the follower's acknowledgement alone",
        consistent=(({"linger-lower": "supported", "linger-fails": "!supported"},
                     "instr-linger shows that the early exit, not the early dealloc alone, is needed"),
                    ({"control-arrive-fails": "supported"}, "control-arrive-after-exit shows that "
                     "a late remote arrive into an exited CTA faults by itself")),
        against=(({"linger-fails": "supported"}, "instr-linger fails in most trials with the "
                  "leader CTA resident (claim linger-fails supported)"),)),
    Hypothesis(
        label="", text="the instruments hide the failure by changing its timing, as they hide the "
        "known exited-CTA fault of control-store-after-exit ({named}); their suppressing it is "
        "then no evidence against the failure",
        any_of=(("instr-coredump-lower", "instr-compute-sanitizer-lower", "instr-cuda-gdb-lower",
                 "seed-coredump-lower"), ("control-coredump-lower", "control-cuda-gdb-lower")),
        names=("control-coredump-lower", "control-cuda-gdb-lower")),
)

NOTHING = ("no failure proportion, barrier comparison, spin threshold, marker or instrument effect "
           "was measured, and none of the case's claims could be decided.")
NOT_RUN = NotRun(
    hardware="Why: the hardware. The runtime arms need a GPU with tcgen05, compute capability 10.3 "
             "(the sm_103a build, B300) or 10.0 (the sm_100a build, B200); on any other device "
             f"there is no kernel image, so {NOTHING}",
    otherwise=NOTHING[0].upper() + NOTHING[1:],
    sentences=(
        "So the classification (usage error, documentation gap or defect) is not decided either: "
        "it follows from claims baseline-launch-failure, the barrier claims, linger-fails, "
        "linger-lower and control-arrive-fails (README.md, \"Classification\"), none of which "
        "this run decided.",
        "What did run without such a GPU: the sm_103a and sm_100a builds from the pinned wheels, "
        "the PTX-to-SASS analysis (sass_analysis.md) and the documentation audit (README.md)."),
    next=("Run `make tcgen05-ablation` (nox -s tcgen05_ablation) on a B300 (compute capability "
          "10.3) or a B200 (10.0) and attach the result.",))

DECLARED = Declared(
    branches=branches(), measures=MEASURES, readings=READINGS, evidence=EVIDENCE,
    hypotheses=HYPOTHESES, not_run=NOT_RUN, target="sm_103a/sm_100a",
    next_on={"10.3": "Repeat on a B200 (compute capability 10.0, sm_100a build); the report covers "
                     "sm_103a only.",
             "10.0": "Repeat on a B300 (compute capability 10.3), the reporter's device."})
