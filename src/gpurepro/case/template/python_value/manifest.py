"""Case CASE_NAME: <one line: the wrong value the reporter's Python program prints, as filed>.

Report: <link to the issue>. Question: <which package release returns the wrong value>.
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
    OutputCheck,
    ProgramValue,
    Runtime,
    TrialCommand,
    TrialContext,
    kit,
)

# What the program imports, pinned as wheels for the GPU node's Python (downloaded at build
# time; `make lock` locks them): a release per arm, the report's and another one.
RELEASES = {"as-filed": "13.3.1", "other-release": "13.0.3"}
RUNTIME = Runtime(packages={"*": ["cuda-pathfinder==1.9.1"],
                            **{arm: [f"cuda-bindings=={v}"] for arm, v in RELEASES.items()}})
# The value the program prints, and what it should be: the driver's own answer (answer.py).
VALUE = ProgramValue(printed=r"device count: (\d+)", answer="answer.py")


def trial_command(ctx: TrialContext) -> TrialCommand:
    # The reporter's script as filed: a clean exit survives only when it printed the driver's
    # own answer, and is a wrong_result otherwise; a signal is a crash, an exception carrying a
    # CUDA error that cuda_error.
    return ctx.python_program(ctx.case_dir / "seed" / "repro.py", value=VALUE,
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
        Claim("as-filed-wrong", arm="as-filed", kind="outcome", outcome="wrong_result", share=0.5,
              supported="{arm} prints a value other than the driver's own in {count} of {n} "
                        "trials."),
        Claim("other-release-right", arm="other-release", kind="outcome", outcome="survived",
              share=0.5, supported="{arm} prints the driver's own value in {count} of {n} trials."),
    ],
    # Status, owner and workaround from the decided claims (no verdict.py needed).
    conclusion=Conclusion(reproduces=("as-filed-wrong",), workaround=("other-release-right",),
                          next=("Read the trials' observations.value: what each release printed.",)),
    trial_command=trial_command,
    devices=Devices(targets={"9.0": "sm_90", "8.0": "sm_80", "10.0": "sm_100", "12.0": "sm_120"},
                    why="any CUDA device: the program builds no device code"),
    # One run of the program per trial: every outcome is a share of trials.
    exposure=Exposure(counter="runs", unit="runs", per=1, opportunity=False),
    check=OutputCheck("exact"),
    failure_outcomes=("wrong_result", "cuda_error", "crashed", "hung"),
    runtime=RUNTIME,
    # One value per run, the same every time: three agreeing trials decide an arm's outcome.
    deterministic="one query of the driver per trial, nothing racing: a release that returns a "
                  "wrong value returns it every time",
    defaults=Defaults(trials_per_arm=10, duration_s=1.0, trial_timeout_s=60.0),
)
