"""Case CASE_NAME: <one line: the wrong answer, as its report states it>.

Report: <link to the issue>. Question: <which build gives the wrong answer, and who owns it>.
"""

from __future__ import annotations

from gpurepro.case import (
    Arm,
    Artifact,
    Case,
    Claim,
    Conclusion,
    Defaults,
    Devices,
    Exposure,
    Factor,
    OutputCheck,
    Runtime,
    TrialCommand,
    TrialContext,
    kit,
)

# A plain `nvcc -cubin` needs the compiler (nvcc), its front end (nvvm), the CUDA headers (crt)
# and the runtime headers (runtime), all of one release: pin the family together.
_CUDA = [
    "nvidia-cuda-nvcc==13.3.73",
    "nvidia-nvvm==13.3.73",
    "nvidia-cuda-crt==13.3.73",
    "nvidia-cuda-runtime==13.3.29",
]
# What the stock driver imports on the GPU node, pinned like the toolchain (wheels for the
# Python that runs the trials are downloaded at build time).
RUNTIME = Runtime(packages={"*": ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1"]})
OPT = {"O3": "ptxas -O3, as the report builds it", "O0": "ptxas -O0: its optimizations off"}


def _cubin(opt: str) -> Artifact:
    return Artifact(name=f"kernel_{opt}", description=f"kernel.cu -> cubin, {OPT[opt]}",
                    command=("{nvcc}", "-arch={arch}", "-cubin", f"-Xptxas=-{opt}",
                             "-o", "{out}/kernel.cubin", "{case}/kernel.cu"),
                    outputs=("kernel.cubin",), sources=("kernel.cu",))


def _right(arm: str) -> Claim:
    return Claim(f"{arm}-right", arm=arm, kind="outcome", outcome="survived", share=0.5,
                 supported="{arm} returns the reference in {count} of {n} trials.")


def trial_command(ctx: TrialContext) -> TrialCommand:
    cubin = ctx.artifacts[f"kernel_{ctx.factors['opt']}"]
    return ctx.cubin_check(cubin, ctx.case_dir / "check.py",
                           preload=ctx.artifacts["crash_preload"])


CASE = Case(
    name="CASE_NAME",
    question="<the question this case answers>",
    report_url="",
    toolchains={"sm_90": _CUDA, "sm_80": _CUDA, "sm_100": _CUDA, "sm_120": _CUDA},
    artifacts=[kit.crash_preload(), *(_cubin(opt) for opt in OPT)],
    factors={"opt": Factor(tuple(OPT), "O3", "the ptxas optimization level")},
    arms=[Arm("as-filed", {}, OPT["O3"]), Arm("ptxas-o0", {"opt": "O0"}, OPT["O0"])],
    baseline="as-filed",
    claims=[
        Claim("as-filed-wrong", arm="as-filed", kind="outcome", outcome="wrong_result",
              share=0.5, supported="{arm} gives wrong results in {count} of {n} trials."),
        _right("ptxas-o0"),
    ],
    # Status, owner and workaround from the decided claims (no verdict.py needed).
    conclusion=Conclusion(reproduces=("as-filed-wrong",), workaround=("ptxas-o0-right",),
                          next=("Compare the two cubins' SASS (cuobjdump -sass).",)),
    trial_command=trial_command,
    devices=Devices(targets={"9.0": "sm_90", "8.0": "sm_80", "10.0": "sm_100", "12.0": "sm_120"}),
    exposure=Exposure(counter="launches", unit="launches", opportunity=False),
    check=OutputCheck("exact"),
    failure_outcomes=("wrong_result", "cuda_error", "crashed", "hung"),
    runtime=RUNTIME,
    defaults=Defaults(trials_per_arm=6, duration_s=10.0, trial_timeout_s=60.0),
)
