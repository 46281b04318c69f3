"""Case CASE_NAME: <one line: how the reporter's Python program fails, as filed>.

Report: <link to the issue>. Question: <which package release, or the driver, owns the failure>.
"""

from __future__ import annotations

from gpurepro.case import (
    Arm,
    Case,
    Claim,
    Conclusion,
    Defaults,
    Devices,
    Exposure,
    Factor,
    Runtime,
    TrialCommand,
    TrialContext,
    kit,
)

# What the program imports, pinned as wheels for the Python that runs the trials (downloaded
# at build time): a release per arm, the report's and another one.
RELEASES = {"as-filed": "13.3.1", "other-release": "13.0.3"}
RUNTIME = Runtime(packages={"*": ["cuda-pathfinder==1.9.1"],
                            **{arm: [f"cuda-bindings=={v}"] for arm, v in RELEASES.items()}})


def trial_command(ctx: TrialContext) -> TrialCommand:
    # The reporter's script as filed, once per trial, on the stock Python-program driver: a
    # clean exit survives, a signal is a crash (the native record, then Python's frames), an
    # exception carrying a CUDA error is that cuda_error.
    return ctx.python_program(ctx.case_dir / "seed" / "repro.py",
                              preload=ctx.artifacts["crash_preload"])


CASE = Case(
    name="CASE_NAME",
    question="<the question this case answers>",
    report_url="",
    toolchains={},  # the program builds nothing
    artifacts=[kit.crash_preload()],
    factors={"bindings": Factor(tuple(RELEASES.values()), RELEASES["as-filed"],
                                "the cuda-bindings release the program imports")},
    arms=[Arm("as-filed", {}, "the report's program with the report's release"),
          Arm("other-release", {"bindings": RELEASES["other-release"]},
              "the same program with another release")],
    baseline="as-filed",
    claims=[
        Claim("as-filed-crashes", arm="as-filed", kind="outcome", outcome="crashed", share=0.5,
              supported="{arm} crashes in {count} of {n} trials."),
        Claim("other-release-survives", arm="other-release", kind="outcome", outcome="survived",
              share=0.5, supported="{arm} runs to its end in {count} of {n} trials."),
    ],
    # Status, owner and workaround from the decided claims (no verdict.py needed).
    conclusion=Conclusion(reproduces=("as-filed-crashes",), workaround=("other-release-survives",),
                          next=("Read the crash records' Python frames: the call it was in.",)),
    trial_command=trial_command,
    devices=Devices(targets={"9.0": "sm_90", "8.0": "sm_80", "10.0": "sm_100", "12.0": "sm_120"},
                    why="any CUDA device: the program builds no device code"),
    # One run of the program per trial: every outcome is a share of trials.
    exposure=Exposure(counter="runs", unit="runs", per=1, opportunity=False),
    runtime=RUNTIME,
    defaults=Defaults(trials_per_arm=10, duration_s=1.0, trial_timeout_s=60.0),
)
