"""Case CASE_NAME: <one line: how the reporter's Python program fails on some releases of a
package, as filed>.

Report: <link to the issue>. Question: <which release of the package broke it, which fixed it>.
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
    RuntimeAxis,
    TrialCommand,
    TrialContext,
    kit,
)

PACKAGE = "cuda-bindings"  # the package whose releases the program fails on
# The factor's levels are releases of PACKAGE: each stands for that release with its own
# dependencies, found from its wheel by the first build and locked in
# locks/runtime/CASE_NAME.json (commit it). The report's release, and one it does not fail on.
RELEASES = {"as-filed": "13.3.1", "last-good": "13.0.3"}
RUNTIME = Runtime(packages={}, releases={"release": PACKAGE})


def trial_command(ctx: TrialContext) -> TrialCommand:
    # The reporter's script as filed, once per trial, on the stock Python-program driver: a
    # clean exit survives, a signal is a crash, an exception carrying a CUDA error that
    # cuda_error.
    return ctx.python_program(ctx.case_dir / "seed" / "repro.py",
                              preload=ctx.artifacts["crash_preload"])


CASE = Case(
    name="CASE_NAME",
    question="<the question this case answers>",
    report_url="",
    toolchains={},  # the program builds nothing
    artifacts=[kit.crash_preload()],
    factors={"release": Factor(tuple(RELEASES.values()), RELEASES["as-filed"],
                               f"the {PACKAGE} release the program imports")},
    arms=[Arm("as-filed", {}, "the report's program with the report's release"),
          Arm("last-good", {"release": RELEASES["last-good"]},
              "the same program with a release it does not fail on")],
    baseline="as-filed",
    claims=[
        Claim("as-filed-crashes", arm="as-filed", kind="outcome", outcome="crashed", share=0.5,
              supported="{arm} crashes in {count} of {n} trials."),
        Claim("last-good-survives", arm="last-good", kind="outcome", outcome="survived",
              share=0.5, supported="{arm} runs to its end in {count} of {n} trials."),
    ],
    conclusion=Conclusion(reproduces=("as-filed-crashes",), workaround=("last-good-survives",),
                          next=(f"Bisect the {PACKAGE} releases between them: python -m "
                                "gpurepro bisect CASE_NAME --axis release.",)),
    trial_command=trial_command,
    devices=Devices(targets={"9.0": "sm_90", "8.0": "sm_80", "10.0": "sm_100", "12.0": "sm_120"},
                    why="any CUDA device: the program builds no device code"),
    exposure=Exposure(counter="runs", unit="runs", per=1, opportunity=False),
    runtime=RUNTIME,
    # Every release pip lists between the two, each with its own dependencies, as a
    # bisection's points: the as-filed arm runs with each release in place of its own.
    axes={"release": RuntimeAxis(factor="release", arms=("as-filed",),
                                 versions=f">={RELEASES['last-good']},<={RELEASES['as-filed']}",
                                 trials=3, duration_s=1.0, timeout_s=60.0)},
    defaults=Defaults(trials_per_arm=10, duration_s=1.0, trial_timeout_s=60.0),
)
