"""Case ptxas_abs_clamp: ptxas drops the abs() that feeds a clamp on sm_90 (NVIDIA bug 4826023).

Report: jax-ml/jax PR 24438, openxla/xla PR 19927, NVIDIA/JAX-Toolbox PR 1184/1185. One PTX
(kernel.cu, .version lowered to 8.0) compiled by each arm's ptxas release (the ``ptxas`` factor:
releases of nvidia-cuda-nvcc-cu12, then nvidia-cuda-nvcc; locked in locks/releases/), its SASS
beside each cubin; a trial is the stock driver on check.py. README.md says what each piece is.
"""

from __future__ import annotations

from pathlib import Path

from gpurepro.building import sass
from gpurepro.case import (
    Arm,
    Artifact,
    Axis,
    Case,
    Claim,
    Defaults,
    Devices,
    Exposure,
    Factor,
    Family,
    OutputCheck,
    Releases,
    Runtime,
    TrialCommand,
    TrialContext,
    kit,
    load_sibling,
)
from gpurepro.sweep import summary

_verdict = load_sibling(__file__, "verdict")

TARGET = "sm_90"
# nvcc 13.3.73 writes the PTX (its ptxas is the CUDA 13 arm); nvdisasm 13.2.51, the oldest on
# PyPI, reads every arm's cubin (cuobjdump 13.2.51 not those of ptxas 12.0.76 ... 12.3.52).
PINS = ("nvidia-cuda-nvcc==13.3.73", "nvidia-nvvm==13.3.73", "nvidia-cuda-crt==13.3.73",
        "nvidia-cuda-runtime==13.3.29", "nvidia-cuda-cuobjdump==13.2.51", "nvidia-cuda-nvdisasm==13.2.51")
CU12 = "nvidia-cuda-nvcc-cu12"
PTXAS = Releases("ptxas", (Family(CU12, ">=12.0,<13"), Family("nvidia-cuda-nvcc", ">=13")))
# ptxas release -> (arm, what releases.cpu.json measured there): the two boundaries, the ends.
RELEASES = {
    "12.4.131": ("last-good", "the last release with IABS before the clamp (CUDA 12.4.1)"),
    "12.5.40": ("first-bad", "the first release without it (CUDA 12.5.0)"),
    "12.6.77": ("last-bad", "the last release without it (CUDA 12.6.2), the report's reproduction"),
    "12.6.85": ("first-fixed", "the first release with it again (CUDA 12.6.3)"),
    "12.9.86": ("newest-12", "the newest nvidia-cuda-nvcc-cu12 release"),
    "13.3.73": ("cuda-13", "the ptxas of the pinned nvidia-cuda-nvcc 13.3.73"),
}
LAUNCHES = 3  # per trial, each checked; the budget's max_exposure overrides it
SEED = 24438  # of check.py's inputs: jax-ml/jax PR 24438


def ptxas(tool: str, ptx: str) -> tuple[str, ...]:
    """The arms' and the bisection's argv: -O3 is ptxas's default level, written out."""
    return (tool, "-arch={arch}", "-O3", f"{{artifact:{ptx}}}/kernel.ptx", "-o", "{out}/kernel.cubin")


ARTIFACTS = [
    kit.crash_preload(),
    Artifact(name="ptx", description="kernel.cu -> PTX with the pinned nvcc (.version 9.3)",
             command=("{nvcc}", "-arch={arch}", "-ptx", "-o", "{out}/kernel.ptx", "{case}/kernel.cu"),
             outputs=("kernel.ptx",), sources=("kernel.cu",), tools=("nvcc",)),
    Artifact(name="ptx_lowered",
             description="the PTX with .version 8.0, which every ptxas from CUDA 12.0 on accepts",
             command=("{python}", "-m", "gpurepro.building.ptx", "{artifact:ptx}/kernel.ptx",
                      "{out}/kernel.ptx", "8.0"),
             outputs=("kernel.ptx",), sources=("src/gpurepro/building/ptx.py",)),
    Artifact(name="cubin", per="ptxas",
             description=f"the arm's ptxas release, -arch={TARGET} -O3, on the lowered PTX; "
                         "nvdisasm's SASS beside it (sass.json)",
             command=("{python}", "-m", "gpurepro.building.sass", "{out}/kernel.cubin",
                      "nvdisasm={nvdisasm}", "--", *ptxas("{ptxas}", "ptx_lowered")),
             outputs=("kernel.cubin", "sass.json"), sources=("src/gpurepro/building/sass.py",),
             tools=("nvdisasm",)),
]

FACTORS = {
    "ptxas": Factor(tuple(RELEASES), "12.6.77", "the ptxas release that compiled the cubin",
                    releases=PTXAS),
    "kernel": Factor(("abs_clamp", "abs_only", "clamp_only"), "abs_clamp",
                     "abs_clamp (the report's index), abs_only (no clamp), clamp_only (no abs)"),
}
ARMS = [
    *[Arm(arm, {"ptxas": release}, f"ptxas {release}: {why}")
      for release, (arm, why) in RELEASES.items()],
    Arm("control-abs-only", {"kernel": "abs_only"},
        "ptxas 12.6.77, the kernel without the clamp: the abs alone"),
    Arm("control-clamp-only", {"kernel": "clamp_only"},
        "ptxas 12.6.77, the kernel without the abs: the clamp alone"),
]

# A trial is the unit of every claim (a wrong answer is a property of a trial). With 12 trials
# per arm, 12 of 12 gives p = 2 * 0.5^12 = 0.0005 against Holm's smallest threshold 0.005.
_COUNT = "{count} of {n} valid trials"
_CI = "(95% CI of the share {share_ci})."
# outcome claim -> (outcome, bound, what follows "<what> (<arm>) " if supported, contradicted,
# not decided)
OUTCOME = {
    "wrong": ("wrong_result", "above",
              f"miscompiles clamp(abs(m), 0, 5) for sm_90: wrong results in {_COUNT} {_CI}",
              f"does not give wrong results in most trials: {_COUNT} wrong.",
              f"gives wrong results in most trials is not decided: {_COUNT} wrong."),
    "never-wrong": ("wrong_result", "below",
                    f"compiles clamp(abs(m), 0, 5) right: wrong results in {_COUNT} {_CI}",
                    f"gives wrong results in {_COUNT}: not fewer than half.",
                    "gives wrong results in fewer than half of its trials is not decided: "
                    f"{_COUNT} wrong."),
    "right": ("survived", "above",
              f"returns the reference: every element right in {_COUNT} {_CI}",
              f"does not return the reference in most trials: right in {_COUNT}.",
              f"returns the reference is not decided: right in {_COUNT}."),
}


def _outcome(arm: str, claim: str, what: str) -> Claim:
    outcome, bound, supported, contradicted, undecided = OUTCOME[claim]
    return Claim(f"{arm}-{claim}", arm=arm, kind="outcome", outcome=outcome, bound=bound,
                 supported=f"{what} ({{arm}}) {supported}",
                 contradicted=f"{what} ({{arm}}) {contradicted}",
                 not_decided=f"Whether {what} ({{arm}}) {undecided}")


def _boundary(name: str, arm: str, reference: str, kind: str, sentence: str) -> Claim:
    counts = "{arm}: {count} of {n} trials failed; {reference}: {reference_count} of {reference_n}"
    return Claim(name, arm=arm, reference=reference, kind=kind, unit="trial",
                 supported=f"{sentence}: {counts}.",
                 contradicted=f"Contrary to the boundary the SASS shows: {counts}.",
                 not_decided=f"Whether {sentence[0].lower() + sentence[1:]} is not decided: {counts}.")


CLAIMS = [
    _outcome("first-bad", "wrong", "ptxas 12.5.40"),
    _outcome("last-bad", "wrong", "ptxas 12.6.77"),
    _outcome("last-good", "never-wrong", "ptxas 12.4.131"),
    _outcome("first-fixed", "never-wrong", "ptxas 12.6.85"),
    _outcome("newest-12", "right", "ptxas 12.9.86"),
    _outcome("cuda-13", "right", "ptxas 13.3.73"),
    _outcome("control-abs-only", "right", "The abs without the clamp, ptxas 12.6.77"),
    _outcome("control-clamp-only", "right", "The clamp without the abs, ptxas 12.6.77"),
    _boundary("breaks-at-12-5", "first-bad", "last-good", "higher",
              "ptxas 12.5.40 (first-bad) fails in more trials than 12.4.131 (last-good)"),
    _boundary("fixed-at-12-6-85", "first-fixed", "last-bad", "lower",
              "ptxas 12.6.85 (first-fixed) fails in fewer trials than 12.6.77 (last-bad)"),
]


# Every nvidia-cuda-nvcc-cu12 release's ptxas with the arms' argv, standing in for the last-bad
# arm's cubin; an IABS in abs_clamp segments the search. "ptxas-as-emitted": on the PTX as nvcc
# wrote it (.version 9.3), which every 12.x release refuses or crashes on.
def _axis(ptx: str, what: str) -> Axis:
    return Axis(package=CU12, versions=">=12.0,<13", tool="ptxas", build=ptxas("{tool}", ptx),
                output="kernel.cubin", artifact="cubin_12.6.77", arms=("last-bad",),
                watch=(("abs_clamp", "IABS"),), trials=3, jobs=3, duration_s=5.0, timeout_s=30.0,
                description=f"ptxas of every nvidia-cuda-nvcc-cu12 release on the {what}")


AXES = {"ptxas": _axis("ptx_lowered", "lowered PTX, -arch=sm_90 -O3: the abs_clamp kernel of "
                                      "the last-bad arm"),
        "ptxas-as-emitted": _axis("ptx", "PTX as emitted (.version 9.3), -arch=sm_90 -O3")}


def trial_command(ctx: TrialContext) -> TrialCommand:
    return ctx.cubin_check(ctx.artifacts["cubin"], ctx.case_dir / "check.py",
                           "--kernel", ctx.factors["kernel"], "--seed", str(SEED),
                           "--launches", str(ctx.budget.max_exposure or LAUNCHES),
                           preload=ctx.artifacts["crash_preload"])


CASE = Case(
    name="ptxas_abs_clamp",
    question="Does ptxas drop the abs() of a gather index clamp(abs(m), 0, 5) on sm_90, so that "
             "negative indices read element 0; in which nvidia-cuda-nvcc-cu12 releases; and do "
             "the releases on either side of each boundary, and the kernel without the clamp or "
             "without the abs, return the reference on a Hopper GPU?",
    report_url="https://github.com/jax-ml/jax/pull/24438",
    toolchains={TARGET: PINS},
    artifacts=ARTIFACTS, factors=FACTORS, arms=ARMS, baseline="last-bad", claims=CLAIMS, axes=AXES,
    trial_command=trial_command, verdict=_verdict.verdict,
    devices=Devices(targets={"9.0": TARGET},
                    why="the miscompile is reported for compute capability 9.0 (NVIDIA bug "
                        "4826023); the cubins hold sm_90 SASS, which only a 9.0 device runs"),
    exposure=Exposure(counter="launches", unit="launches"),
    # A trial is well under a second; a miscompile is no race: four trials at a time.
    defaults=Defaults(trials_per_arm=12, duration_s=5.0, trial_timeout_s=30.0,
                      max_exposure=LAUNCHES, jobs=4),
    failure_outcomes=("wrong_result", "cuda_error", "crashed", "hung"),
    check=OutputCheck("exact"),
    deterministic="one cubin per arm, inputs from a fixed seed, each thread writing its own output "
                  "element (no atomics, no shared state): every launch computes the same bits",
    analyses={"sass": sass.analysis("cubin", per="ptxas"),
              "bisection": summary.analysis(Path(__file__).parent, "ptxas", ("abs_clamp",))},
    # What the stock driver imports, as every committed trial reports it, carried as wheels.
    runtime=Runtime(packages={"*": ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1"]}),
)
