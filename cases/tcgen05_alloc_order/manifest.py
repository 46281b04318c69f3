"""Case: tcgen05.alloc/dealloc.cta_group::2 ordering on sm_103a (reports/tcgen05-alloc-order.txt):
factors, arms and claims; the verdict is conclusion.py's, the SASS analysis the harness's on
lowering.py. Standard library + gpurepro only: imported on GPU nodes with no network.
"""
from __future__ import annotations

from typing import Any

from gpurepro import case
from gpurepro.building import lowering

TARGETS = ("sm_103a", "sm_100a")
# Exact pins, found by installing into an empty venv on a CPU-only machine (README.md).
# cuobjdump/nvdisasm exist on PyPI only from 13.2.51; one version is pinned so SASS text is stable.
PINS = ("nvidia-cuda-nvcc==13.0.88", "nvidia-cuda-crt==13.0.88", "nvidia-nvvm==13.0.88",
        "nvidia-cuda-runtime==13.0.96", "nvidia-cuda-cuobjdump==13.2.51",
        "nvidia-cuda-nvdisasm==13.2.51")
# Factor levels and what the programs take on their command line (DELAY SPIN MODE).
DELAY = {"leader": 0, "follower": 1, "neither": 2}  # which CTA of the pair sleeps first
MODE = {"baseline": 0, "barrier_before_alloc": 1, "barrier_after_alloc": 2,
        "barrier_before_dealloc": 6, "barrier_before_exit": 1}  # the last: the controls' mode 1
MODE_LABEL = {"baseline": "no barrier", "barrier_before_alloc": "barrier.cluster before alloc",
              "barrier_after_alloc": "barrier.cluster after alloc",
              "barrier_before_dealloc": "barrier.cluster immediately before dealloc"}
SPINS, BASE_SPIN = (0, 10, 100, 1000, 5000, 50000), 5000  # x __nanosleep(1000), about 1 us
OPS = {"arrive": 0, "store": 1}  # the control's late remote operation
VARIANTS = {"as_filed": "as filed", "no_relinquish": "without relinquish_alloc_permit",
            "no_dealloc": "without dealloc",
            "linger": "dealloc early, CTA exit late (linger after dealloc)"}
DEFINE = {"no_relinquish": "NO_RELINQUISH", "no_dealloc": "NO_DEALLOC",
          "linger": "LINGER_AFTER_DEALLOC"}
INSTRUMENT_LABEL = {"none": "no instrument", "coredump": "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
                    "compute-sanitizer": "compute-sanitizer (memcheck)",
                    "cuda-gdb": "cuda-gdb batch run"}
ARTIFACT = {("seed", "as_filed"): "repro", ("control", "as_filed"): "control_remote_after_exit",
            ("instrumented", "as_filed"): "repro_instrumented",
            **{("instrumented", v): f"repro_{v}" for v in DEFINE}}
BASELINE, INSTR_BASELINE = "follower-baseline", "instr-follower-baseline"


def _build(name: str, src: str, defines: tuple[str, ...], description: str) -> case.Artifact:
    """The report's build line for each target: -gencode builds SASS only, no PTX (nvcc rejects
    -arch=sm_103a -code=sm_103a); the wheel's lib folder holds cudart_static and cudadevrt. The
    case's own programs include native/'s CUDA-runtime headers; the seed is built as filed."""
    own = () if src.startswith("seed/") else ("cluster", "stage_markers", "cudart_events")
    command = ("{nvcc}", "-gencode", "arch={virtual_arch},code={arch}",
               *(("-I{native}",) if own else ()), *(f"-D{d}" for d in defines),
               "-L{nvcc_lib}", "-o", "{out}/" + name, "{case}/" + src)
    return case.Artifact(name=name, command=command, outputs=(name,), archs=TARGETS,
                         sources=(src, *(f"native/{h}.cuh" for h in own)), tools=("nvcc",),
                         description=description)


ARTIFACTS = [
    _build("repro", "seed/repro.cu", (),
           "the reporter's repro.cu as filed: nvcc -gencode arch=compute_XXXa,code=sm_XXXa"),
    *[_build(ARTIFACT[("instrumented", v)], "repro_instrumented.cu",
             (DEFINE[v],) if v in DEFINE else (), f"instrumented variant, {label}")
      for v, label in VARIANTS.items()],
    _build("control_remote_after_exit", "controls/remote_arrive_after_exit.cu", (),
           "control without tcgen05: late remote arrive/store into an exited peer CTA"),
    case.Artifact(
        name="sass",
        command=("{python}", "-m", "gpurepro.building.lowering", "--spec", "{case}/lowering.py",
                 "--name", "sass_analysis", "--out", "{out}", "--arch", "{arch}",
                 "--tool", "ptxas={ptxas}", "--tool", "cuobjdump={cuobjdump}",
                 "--repro", "{artifact:repro}/repro"),
        outputs=("sass_analysis.json", "sass_analysis.md"), sources=("lowering.py",),
        tools=("ptxas", "cuobjdump"), archs=TARGETS,
        description="PTX->SASS table and the leader/follower lowering of tcgen05.alloc.cta_group::2",
    ),
]


def arms() -> list[tuple[str, dict[str, Any], str]]:
    out = [(f"{d}-{m.replace('_', '-')}", {"delay": d, "mode": m}, f"seed; {d} delayed; {label}")
           for d in DELAY for m, label in MODE_LABEL.items()]  # the report's grid, spin 5000
    out += [(f"follower-spin-{s}", {"spin": s}, f"seed; follower delayed {s} x 1 us")
            for s in (0, 10, 100, 1000)]
    out.append(("leader-spin-50000", {"delay": "leader", "spin": 50000},
                "seed; leader delayed 50000 x 1 us"))
    ins = {"build": "instrumented"}
    out += [(INSTR_BASELINE, ins, "instrumented; follower delayed; no barrier (markers)"),
            ("instr-leader-baseline", {**ins, "delay": "leader"},
             "instrumented; leader delayed (markers)"),
            ("instr-follower-barrier-before-dealloc", {**ins, "mode": "barrier_before_dealloc"},
             "instrumented; follower delayed; barrier before dealloc (markers)")]
    out += [(f"instr-{v.replace('_', '-')}", {**ins, "variant": v},
             f"instrumented; follower delayed; {VARIANTS[v]}") for v in DEFINE]
    out += [(f"instr-{i}", {**ins, "instrument": i},
             f"instrumented; follower delayed; {INSTRUMENT_LABEL[i]}")
            for i in ("coredump", "compute-sanitizer", "cuda-gdb")]
    out.append(("follower-coredump", {"instrument": "coredump"},
                "seed; follower delayed; CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1"))
    # Controls without tcgen05: a late remote arrive (what the follower's alloc ends with) or store
    # into an exited CTA; a barrier before exit is the negative control.
    ctl = {"build": "control", "op": "store"}
    out += [("control-arrive-after-exit", {**ctl, "op": "arrive"},
             "control; late remote mbarrier arrive into an exited CTA"),
            ("control-store-after-exit", ctl,
             "control; late remote st.shared::cluster into an exited CTA"),
            ("control-store-barrier-before-exit", {**ctl, "mode": "barrier_before_exit"},
             "control; late remote store, barrier.cluster before exit")]
    out += [(f"control-store-{i}", {**ctl, "instrument": i},
             f"control; late remote store; {INSTRUMENT_LABEL[i]}") for i in ("coredump", "cuda-gdb")]
    return out


ARM_LABEL = {name: desc for name, _f, desc in arms()}
LAUNCH_FAILURE = "cudaErrorLaunchFailure"  # the report's "unspecified launch failure"
BARRIERS = tuple(f"{m.replace('_', '-')}-lower" for m in list(MODE_LABEL)[1:])
# The arms run under an instrument: the seed's and the instrumented build's, then the controls'.
INSTRUMENTED = (*(f"instr-{i}" for i in ("coredump", "compute-sanitizer", "cuda-gdb")),
                "follower-coredump", "control-store-coredump", "control-store-cuda-gdb")


def _claim(name: str, kind: str, arm: str, says: str, denies: str, **fields: Any) -> case.Claim:
    """A Claim whose sentences say ``says`` (or ``denies``) of the arm, named with its label,
    then the numbers; the harness fills the braces."""
    who, counts = "{arm} (" + ARM_LABEL[arm] + ")", "{count} of {n} trials failed"
    decided = f"{counts}, {{ratio_name}} {{ratio}} (95% CI {{ratio_ci}})."
    undecided = f"{counts}; deciding it needs {{needed}}."
    if kind == "outcome":
        decided = undecided = "{count} of {n}."
    return case.Claim(name, arm, kind, **fields, supported=f"{who} {says}: {decided}",
                 contradicted=f"{who} {denies}: {decided}",
                 not_decided=f"Whether {who} {says} is not decided: {undecided}")


def _outcome(name: str, arm: str, detail: str | None = LAUNCH_FAILURE) -> case.Claim:
    """Most valid trials of ``arm`` end as cuda_error: ``detail``, or any error when None."""
    ends = "cuda_error " + detail if detail else "a CUDA error"
    return _claim(name, "outcome", arm, f"ends as {ends} in most trials",
                  f"does not end as {ends} in most trials", outcome="cuda_error", detail=detail)


def _rate(name: str, arm: str, kind: str = "lower", reference: str | None = None) -> case.Claim:
    """``arm``'s failure rate is lower/higher than ``reference``'s, or "equivalent" (within 2x);
    the reference defaults to the baseline of the arm's build (one factor changed)."""
    reference = reference or {"instr": INSTR_BASELINE, "control": "control-store-after-exit"}.get(
        arm.split("-")[0], BASELINE)
    if kind == "equivalent":
        return _claim(name, kind, arm, "fails at a rate within 2x of {reference}'s",
                      "fails at a rate more than 2x away from {reference}'s", reference=reference)
    less, more = ("less", "more") if kind == "lower" else ("more", "less")
    return _claim(name, kind, arm, f"fails {less} often than {{reference}}",
                  f"fails {more} often than {{reference}}, not {less}", reference=reference)


CLAIMS = [
    _outcome("baseline-launch-failure", BASELINE),
    *[_rate(c, "follower-" + c.removesuffix("-lower")) for c in BARRIERS],
    _rate("leader-delay-lower", "leader-baseline"),
    _rate("no-delay-lower", "neither-baseline"),
    _rate("leader-spin-50000-lower", "leader-spin-50000"),
    _rate("spin-0-lower", "follower-spin-0"),
    _outcome("spin-10-launch-failure", "follower-spin-10"),
    _rate("markers-within-2x", INSTR_BASELINE, "equivalent", BASELINE),
    _rate("instr-leader-delay-lower", "instr-leader-baseline"),
    _rate("instr-barrier-before-dealloc-lower", "instr-follower-barrier-before-dealloc"),
    _outcome("no-relinquish-launch-failure", "instr-no-relinquish"),
    _rate("no-dealloc-lower", "instr-no-dealloc"),
    _rate("linger-lower", "instr-linger"),
    # instr-linger meets every precondition the cited documentation states: does it still fail?
    _outcome("linger-fails", "instr-linger"),
    *[_rate(a.replace("follower", "seed") + "-lower", a) for a in INSTRUMENTED[:4]],
    _rate("control-store-higher", "control-store-after-exit", "higher",
          "control-store-barrier-before-exit"),
    _outcome("control-arrive-fails", "control-arrive-after-exit", None),
    *[_rate(a.replace("-store", "") + "-lower", a) for a in INSTRUMENTED[4:]],
]


def program_command(ctx: case.TrialContext) -> case.TrialCommand:
    """The trial's program; the "instrument" factor's level is applied by the harness."""
    f = ctx.factors
    binary = str(ctx.artifacts[ARTIFACT[(f["build"], f["variant"])]])
    if f["build"] == "control":  # SPIN MODE OP
        argv = (binary, str(f["spin"]), str(MODE[f["mode"]]), str(OPS[f["op"]]))
    else:  # DELAY SPIN MODE, as the seed takes them
        argv = (binary, str(DELAY[f["delay"]]), str(f["spin"]), str(MODE[f["mode"]]))
    return case.TrialCommand(argv=argv, parser="seed" if f["build"] == "seed" else "jsonl")


CASE = case.Case(
    name="tcgen05_alloc_order",
    question=(
        "On sm_103a (and sm_100a), does one CTA of a cluster pair deallocating tensor memory "
        "before its peer's tcgen05.alloc.cta_group::2 has completed make the kernel fail "
        "(cudaErrorLaunchFailure), does a barrier.cluster between alloc and dealloc remove it, "
        "and is that ordering requirement documented (PTX ISA, CUTLASS Allocator2Sm)?"
    ),
    report_url="reports/tcgen05-alloc-order.txt",
    reported={"gpu": "NVIDIA B300 SXM6", "target": "sm_103a", "toolchain": "CUDA 13.0, nvcc V13.0.88"},
    toolchains={"*": PINS},
    artifacts=ARTIFACTS,
    factors={
        "build": case.Factor(("seed", "instrumented", "control"), "seed",
                        "the reporter's binary or the instrumented one"),
        "delay": case.Factor(tuple(DELAY), "follower", "which CTA sleeps before alloc"),
        "mode": case.Factor(tuple(MODE), "baseline", "where barrier.cluster is inserted"),
        "spin": case.Factor(SPINS, BASE_SPIN, "delay length, x __nanosleep(1000)"),
        "variant": case.Factor(tuple(VARIANTS), "as_filed",
                               "compile-time variant (instrumented only)"),
        "instrument": case.instruments.factor(*INSTRUMENT_LABEL,
                                              description="tool the trial runs under"),
        "op": case.Factor(tuple(OPS), "arrive", "controls only: the late remote operation"),
    },
    arms=[case.Arm(name, factors, desc) for name, factors, desc in arms()],
    baseline=BASELINE,
    trial_command=case.instruments.instrumented(program_command),
    conclusion=case.Conclusion(reproduces=("baseline-launch-failure",),
                          declared=case.load_sibling(__file__, "conclusion").DECLARED),
    devices=case.Devices(
        targets={"10.3": "sm_103a", "10.0": "sm_100a"},
        why="tcgen05 instructions exist only on the arch-specific sm_100a/sm_103a targets "
            "(B200 is compute capability 10.0, B300 10.3); anything else has no kernel image",
    ),
    exposure=case.Exposure(counter="launches", unit="launches"),
    defaults=case.Defaults(trials_per_arm=25, trial_timeout_s=120.0),
    failure_outcomes=("cuda_error", "hung", "crashed"),
    # The seed prints "delay_cta=1 spin=5000 mode=0 => <cudaGetErrorString of the sync>", or
    # "launch failed" with no error code when cudaLaunchKernelEx failed (exit 2): on a device
    # without sm_100a/sm_103a that is a missing kernel image, but the harness gates those devices
    # before spawning, so on a capable device it is a real launch error of unknown name.
    parsers={"seed": case.TextOutput(
        case.OutputLine(r"delay_cta=(?P<delay_cta>\d+) spin=(?P<spin>\d+) mode=(?P<mode>\d+) => "
                   r"(?P<message>.*)", call="cudaDeviceSynchronize"),
        case.OutputLine(r"(?P<message>launch failed)", error="launch_failed_unreported",
                   call="cudaLaunchKernelEx", launches=0))},
    analyses={"sass": lowering.analysis("sass")},
    claims=CLAIMS,
)
