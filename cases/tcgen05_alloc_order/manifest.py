"""Case: tcgen05.alloc/dealloc.cta_group::2 ordering on sm_103a (reports/tcgen05-alloc-order.txt).

The experiment's design (factors, arms, the comparisons the claims make) lives in design.py; the
reporter's text output is parsed by seed_parser.py; instruments are the harness's
(gpurepro.case.instruments: the "instrument" factor's levels); the verdict (status, owner, measurement
sentences; no statistics) is in verdict.py; the SASS analysis in sass.py. This file wires them into
a gpurepro Case, words the claims, and writes the pins and the tools taken from them (sass.py
reads both from here). Standard library + gpurepro only: it is imported on GPU nodes with no
network.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpurepro.case import (
    Arm,
    Artifact,
    Case,
    Claim,
    Defaults,
    Devices,
    Exposure,
    Factor,
    Tool,
    TrialCommand,
    TrialContext,
    instruments,
    load_sibling,
)

HERE = Path(__file__).resolve().parent


design = load_sibling(__file__, "design")
seed_parser = load_sibling(__file__, "seed_parser")
verdict_mod = load_sibling(__file__, "verdict")

TARGETS = ("sm_103a", "sm_100a")

# Exact pins, found by installing into an empty venv on a CPU-only machine. nvcc 13.0.88 is the
# report's "V13.0.88"; crt/nvvm carry nvcc's headers and cicc; nvidia-cuda-runtime 13.0.96 is
# what cuda-toolkit[nvcc,cudart]==13.0.* (13.0.3.0) resolves to and carries cudart headers plus
# libcudart_static.a/libcudadevrt.a in nvidia/cu13/lib. cuobjdump/nvdisasm exist on PyPI only
# from 13.2.51; newer disassemblers read 13.0 cubins, and one exact version is pinned so the SASS
# text is stable.
PINS = (
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cuobjdump==13.2.51",
    "nvidia-cuda-nvdisasm==13.2.51",
)
# The tools the case uses, and the pinned wheel each comes from: nvcc builds the programs,
# ptxas/cuobjdump (and nvdisasm) make the SASS analysis. The instruments' tools are on the GPU
# node: compute-sanitizer from its wheel if installed there, else the host's; cuda-gdb has no
# wheel.
TOOLS = {
    "nvcc": Tool("nvcc", "nvidia-cuda-nvcc"),
    "ptxas": Tool("ptxas", "nvidia-cuda-nvcc"),
    "cuobjdump": Tool("cuobjdump", "nvidia-cuda-cuobjdump"),
    "nvdisasm": Tool("nvdisasm", "nvidia-cuda-nvdisasm"),
    "compute-sanitizer": Tool("compute-sanitizer", "nvidia-cuda-sanitizer-api", host=True),
    "cuda-gdb": Tool("cuda-gdb"),
}


def _build(name: str, src: str, defines: list[str], description: str) -> Artifact:
    cmd = ["{python}", "{case}/build.py", "--nvcc", "{nvcc}", "--nvcc-lib", "{nvcc_lib}",
           "--arch", "{arch}", "--src", "{case}/" + src, "--out", "{out}/" + name]
    for d in defines:
        cmd += ["-D", d]
    return Artifact(name=name, command=tuple(cmd), outputs=(name,), sources=(src, "build.py"),
                    tools=("nvcc",), archs=TARGETS, description=description)


ARTIFACTS = [
    _build("repro", "seed/repro.cu", [],
           "the reporter's repro.cu as filed: nvcc -gencode arch=compute_XXXa,code=sm_XXXa"),
    *[
        _build(design.ARTIFACT[("instrumented", v)], "repro_instrumented.cu", design.DEFINE[v],
               f"instrumented variant, {design.VARIANT_LABEL[v]}")
        for v in design.VARIANTS
    ],
    _build("control_remote_after_exit", "controls/remote_arrive_after_exit.cu", [],
           "control without tcgen05: late remote arrive/store into an exited peer CTA"),
    Artifact(
        name="sass",
        command=("{python}", "{case}/sass.py", "--out", "{out}", "--arch", "{arch}",
                 "--repro", "{artifact:repro}/repro"),
        outputs=("sass_analysis.json", "sass_analysis.md"),
        sources=("sass.py", "sass_parse.py", "snippets.py"),
        tools=("ptxas", "cuobjdump"),
        archs=TARGETS,
        description="PTX->SASS table and the leader/follower lowering of tcgen05.alloc.cta_group::2",
    ),
]


ARM_LABEL = {name: desc for name, _factors, desc in design.arms()}


def _claim(name: str, kind: str, arm: str, reference: str | None, detail: str | None) -> Claim:
    """One row of design.COMPARISONS as a Claim, with its three sentences.

    The harness fills {arm}, {reference}, {count}, {n}, {ratio_name}, {ratio}, {ratio_ci} and {needed} and
    appends the test and its p-value; one launch per trial, so counts read better than rates.
    """
    who = "{arm} (" + ARM_LABEL[arm] + ")"
    counts = "{count} of {n} trials failed"
    if kind == "outcome":
        ends = "cuda_error " + detail if detail else "a CUDA error"
        return Claim(
            name, arm, kind, outcome="cuda_error", detail=detail, share=0.5,
            supported=f"{who} ends as {ends} in most trials: {{count}} of {{n}}.",
            contradicted=f"{who} does not end as {ends} in most trials: {{count}} of {{n}}.",
            not_decided=f"Whether {who} ends as {ends} in most trials is not decided: "
                        "{count} of {n}.")
    if kind == "equivalent":
        return Claim(
            name, arm, kind, reference=reference, margin=2.0,
            supported=f"{who} fails at a rate within 2x of {{reference}}'s: {counts}, {{ratio_name}} "
                      "{ratio} (95% CI {ratio_ci}).",
            contradicted=f"{who} fails at a rate more than 2x away from {{reference}}'s: {counts}, "
                         "{ratio_name} {ratio} (95% CI {ratio_ci}).",
            not_decided=f"Whether {who} fails at a rate within 2x of {{reference}}'s is not "
                        f"decided: {counts}; deciding it needs {{needed}}.")
    less, more = ("less", "more") if kind == "lower" else ("more", "less")
    return Claim(
        name, arm, kind, reference=reference,
        supported=f"{who} fails {less} often than {{reference}}: {counts}, {{ratio_name}} {{ratio}} "
                  "(95% CI {ratio_ci}).",
        contradicted=f"{who} fails {more} often than {{reference}}, not {less}: {counts}, "
                     "{ratio_name} {ratio} (95% CI {ratio_ci}).",
        not_decided=f"Whether {who} fails {less} often than {{reference}} is not decided: "
                    f"{counts}; deciding it needs {{needed}}.")


CLAIMS = [_claim(*row) for row in design.COMPARISONS]


def program_command(ctx: TrialContext) -> TrialCommand:
    """The trial's program; the "instrument" factor's level is applied by the harness."""
    f = ctx.factors
    artifact = design.ARTIFACT[(f["build"], f["variant"])]
    if f["build"] == "control":  # SPIN MODE OP
        program = [str(ctx.artifacts[artifact]), str(f["spin"]), str(design.MODE[f["mode"]]),
                   str(design.OPS[f["op"]])]
    else:  # DELAY SPIN MODE, as the seed takes them
        program = [str(ctx.artifacts[artifact]), str(design.DELAY[f["delay"]]), str(f["spin"]),
                   str(design.MODE[f["mode"]])]
    return TrialCommand(argv=tuple(program), parser="seed" if f["build"] == "seed" else "jsonl")


trial_command = instruments.instrumented(program_command, "instrument", tools=TOOLS)


def _sass_analysis(paths: Mapping[str, Path]) -> Mapping[str, Any]:
    """The build's SASS findings, carried into the result (verdict sentences cite them)."""
    import json

    p = paths.get("sass")
    if p is None or not Path(p).is_file():
        return {"available": False, "reason": "sass artifact not built"}
    data = json.loads(Path(p).read_text())
    return {"available": True, **{k: data[k] for k in ("tools", "claims", "findings") if k in data}}


CASE = Case(
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
    tools=TOOLS,
    artifacts=ARTIFACTS,
    factors={
        "build": Factor(design.BUILDS, "seed", "the reporter's binary or the instrumented one"),
        "delay": Factor(tuple(design.DELAY), "follower", "which CTA sleeps before alloc"),
        "mode": Factor(tuple(design.MODE), "baseline", "where barrier.cluster is inserted"),
        "spin": Factor(design.SPINS, design.BASE_SPIN, "delay length, x __nanosleep(1000)"),
        "variant": Factor(design.VARIANTS, "as_filed", "compile-time variant (instrumented only)"),
        "instrument": instruments.factor(*design.INSTRUMENTS, description="tool the trial runs under"),
        "op": Factor(tuple(design.OPS), "arrive", "controls only: the late remote operation"),
    },
    arms=[Arm(name, factors, desc) for name, factors, desc in design.arms()],
    baseline=design.BASELINE,
    trial_command=trial_command,
    verdict=verdict_mod.verdict,
    devices=Devices(
        targets={"10.3": "sm_103a", "10.0": "sm_100a"},
        why="tcgen05 instructions exist only on the arch-specific sm_100a/sm_103a targets "
            "(B200 is compute capability 10.0, B300 10.3); anything else has no kernel image",
    ),
    exposure=Exposure(counter="launches", unit="launches"),
    defaults=Defaults(trials_per_arm=25, trial_timeout_s=120.0),
    failure_outcomes=("cuda_error", "hung", "crashed"),
    parsers={"seed": seed_parser.parse},
    analyses={"sass": _sass_analysis},
    claims=CLAIMS,
)
