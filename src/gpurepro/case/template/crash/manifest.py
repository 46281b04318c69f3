"""Case CASE_NAME: <one line: the bug, as its report states it>.

Report: <link to the issue>. Question: <what this case asks, and who could own the answer>.
"""

from __future__ import annotations

from gpurepro.case import (
    Arm,
    Artifact,
    Case,
    Claim,
    Defaults,
    Devices,
    Exposure,
    Factor,
    TrialCommand,
    TrialContext,
    kit,
    load_sibling,
)

_verdict = load_sibling(__file__, "verdict")

# A plain `nvcc -cubin` needs the compiler (nvcc), its front end (nvvm), the CUDA headers (crt)
# and the runtime headers (runtime), all of one release: pin the family together.
_CUDA = [
    "nvidia-cuda-nvcc==13.3.73",
    "nvidia-nvvm==13.3.73",
    "nvidia-cuda-crt==13.3.73",
    "nvidia-cuda-runtime==13.3.29",
]

ARTIFACTS = [
    kit.host_driver("host", "host.cc",
                    "host driver: loads the cubin, launches its kernel in a loop (native/ protocol)"),
    Artifact(
        name="kernel",
        description="the kernel under test, nvcc -cubin",
        command=("{nvcc}", "-arch={arch}", "-cubin", "-o", "{out}/kernel.cubin",
                 "{case}/kernel.cu"),
        outputs=("kernel.cubin",),
        sources=("kernel.cu",),
    ),
]


def trial_command(ctx: TrialContext) -> TrialCommand:
    f = ctx.factors
    return TrialCommand(argv=(str(ctx.artifacts["host"]), "--cubin", str(ctx.artifacts["kernel"]),
                              "--mode", f["mode"], "--seconds", str(ctx.budget.duration_s),
                              "--max-launches", str(ctx.budget.max_exposure)))


CASE = Case(
    name="CASE_NAME",
    question="<the question this case answers>",
    report_url="",
    toolchains={"sm_90": _CUDA, "sm_80": _CUDA, "sm_100": _CUDA, "sm_120": _CUDA},
    artifacts=ARTIFACTS,
    factors={"mode": Factor(("normal", "trap"), "normal",
                            "normal: the kernel as is; trap: the kernel executes a trap (a control "
                            "that must end as a CUDA error)")},
    arms=[
        Arm("baseline", {}, "the kernel as it is"),
        Arm("trap", {"mode": "trap"}, "control: the kernel traps"),
    ],
    baseline="baseline",
    claims=[
        Claim("trap-is-launch-failure", arm="trap", kind="outcome", outcome="cuda_error",
              supported="The trap control ends as a CUDA error in {count} of {n} trials: the "
                        "driver reports a faulting kernel here."),
    ],
    trial_command=trial_command,
    verdict=_verdict.verdict,
    devices=Devices(targets={"9.0": "sm_90", "8.0": "sm_80", "10.0": "sm_100", "12.0": "sm_120"}),
    exposure=Exposure(counter="launches", unit="launches"),
    # A short limit: an arm that hangs costs trial_timeout_s per trial.
    defaults=Defaults(trials_per_arm=5, duration_s=2.0, trial_timeout_s=10.0),
)
