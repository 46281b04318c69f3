"""Case CASE_NAME: <one line: the slowdown, as its report states it>.

Report: <link to the issue>. Question: <which build is slower, by how much, and who owns it>.
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
    Timing,
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
RUNTIME = Runtime(packages={"*": ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1"]})
BUILDS = {"O0": "ptxas -O0: the build the report says is slow (a stand-in for the report's)",
          "O3": "ptxas -O3: the build it is compared with"}
# CUDA events around 50 launches, 20 times, after 5 discarded: each value one launch's time.
TIMING = Timing(repeats=20, loops=50, warmups=5)


def _cubin(opt: str) -> Artifact:
    return Artifact(name=f"kernel_{opt}", description=f"kernel.cu -> cubin, {BUILDS[opt]}",
                    command=("{nvcc}", "-arch={arch}", "-cubin", f"-Xptxas=-{opt}",
                             "-o", "{out}/kernel.cubin", "{case}/kernel.cu"),
                    outputs=("kernel.cubin",), sources=("kernel.cu",))


def trial_command(ctx: TrialContext) -> TrialCommand:
    # Every arm's outputs are checked against the reference build's on the same inputs (a
    # faster wrong kernel is a wrong_result, never a time), then its launches are timed.
    return ctx.cubin_check(ctx.artifacts[f"kernel_{ctx.factors['build']}"],
                           ctx.case_dir / "check.py", "--launches", "1",
                           reference=ctx.artifacts["kernel_O3"], timing=TIMING,
                           preload=ctx.artifacts["crash_preload"])


CASE = Case(
    name="CASE_NAME",
    question="<the question this case answers>",
    report_url="",
    toolchains={"sm_90": _CUDA, "sm_80": _CUDA, "sm_100": _CUDA, "sm_120": _CUDA},
    artifacts=[kit.crash_preload(), *(_cubin(opt) for opt in BUILDS)],
    factors={"build": Factor(tuple(BUILDS), "O3", "how the kernel was built")},
    arms=[Arm("as-filed", {"build": "O0"}, BUILDS["O0"]),
          Arm("reference", {}, BUILDS["O3"]),
          Arm("reference-again", {}, "the reference cubin timed as a second arm: the noise "
                                     "between trials of one cubin")],
    baseline="reference",
    claims=[
        # Margins are fractions: slower by more than 5%, the same within 2%.
        Claim("as-filed-slower", arm="as-filed", reference="reference", kind="slower",
              margin=0.05),
        Claim("reference-again-same", arm="reference-again", reference="reference", kind="same",
              margin=0.02),
        Claim("as-filed-right", arm="as-filed", kind="outcome", outcome="survived", share=0.5,
              supported="{arm} returns the reference build's outputs in {count} of {n} trials."),
    ],
    # Status, owner and workaround from the decided claims (no verdict.py needed).
    conclusion=Conclusion(reproduces=("as-filed-slower",),
                          next=("Compare the two cubins' SASS (cuobjdump -sass).",)),
    trial_command=trial_command,
    devices=Devices(targets={"9.0": "sm_90", "8.0": "sm_80", "10.0": "sm_100", "12.0": "sm_120"}),
    exposure=Exposure(counter="launches", unit="launches", opportunity=False),
    check=OutputCheck("exact"),
    failure_outcomes=("wrong_result", "cuda_error", "crashed", "hung"),
    runtime=RUNTIME,
    # Timed trials one at a time (two would share the GPU).
    defaults=Defaults(trials_per_arm=8, duration_s=30.0, trial_timeout_s=120.0, jobs=1),
)
