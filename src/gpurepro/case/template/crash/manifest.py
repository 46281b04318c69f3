"""Case CASE_NAME: <one line: the bug, as its report states it>. Report: <link to the issue>.
Question: <what this case asks, and who could own the answer>."""

from __future__ import annotations

from gpurepro import case

# A plain `nvcc -cubin` needs the compiler, its front end, the CUDA headers and the runtime
# headers, all of one release: pin the family together.
_CUDA = ["nvidia-cuda-nvcc==13.3.73", "nvidia-nvvm==13.3.73", "nvidia-cuda-crt==13.3.73",
         "nvidia-cuda-runtime==13.3.29"]
ARTIFACTS = [
    case.kit.host_driver("host", "host.cc", "host driver: loads the cubin, launches its kernel "
                                            "in a loop (native/ protocol)"),
    case.Artifact(name="kernel", description="the kernel under test, nvcc -cubin",
                  command=("{nvcc}", "-arch={arch}", "-cubin", "-o", "{out}/kernel.cubin",
                           "{case}/kernel.cu"), outputs=("kernel.cubin",), sources=("kernel.cu",)),
]


def trial_command(ctx: case.TrialContext) -> case.TrialCommand:
    return case.TrialCommand(argv=(str(ctx.artifacts["host"]), "--cubin", str(ctx.artifacts["kernel"]),
                                   "--mode", ctx.factors["mode"], "--seconds", str(ctx.budget.duration_s),
                                   "--max-launches", str(ctx.budget.max_exposure)))


CASE = case.Case(
    name="CASE_NAME",
    question="<the question this case answers>",
    report_url="",
    toolchains={"sm_90": _CUDA, "sm_80": _CUDA, "sm_100": _CUDA, "sm_120": _CUDA},
    artifacts=ARTIFACTS,
    factors={"mode": case.Factor(("normal", "trap"), "normal", "normal: the kernel as is; trap: "
                                 "it traps (a control that must end as a CUDA error)")},
    arms=[case.Arm("baseline", {}, "the kernel as it is"),
          case.Arm("trap", {"mode": "trap"}, "control: the kernel traps")],
    baseline="baseline",
    claims=[
        # The report's failure: `crashed`, `cuda_error` (detail=its name) or `hung`.
        case.Claim("baseline-fails", arm="baseline", kind="outcome", outcome="crashed",
                   share=0.5, supported="{arm} crashes in {count} of {n} trials."),
        case.Claim("trap-is-launch-failure", arm="trap", kind="outcome", outcome="cuda_error",
                   supported="The trap control ends as a CUDA error in {count} of {n} trials: "
                             "the driver reports a faulting kernel here."),
    ],
    # Status, owner and next steps from the decided claims (no verdict.py needed).
    conclusion=case.Conclusion(reproduces=("baseline-fails",), next=("Read the crash records.",)),
    trial_command=trial_command,
    devices=case.Devices(targets={"9.0": "sm_90", "8.0": "sm_80", "10.0": "sm_100",
                                  "12.0": "sm_120"}),
    exposure=case.Exposure(counter="launches", unit="launches"),
    # A short limit: an arm that hangs costs trial_timeout_s per trial.
    defaults=case.Defaults(trials_per_arm=5, duration_s=2.0, trial_timeout_s=10.0),
)
