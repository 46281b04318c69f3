"""Case ctx_get_device_v2: numba's CUDA target segfaults with NVIDIA driver 580.

Report: numba/numba issue 10188 (driver 580.65.06, CUDA 13.0); numba 0.63.0 "Fix CUDA target
crash bug with NVIDIA driver version 580" (numba/numba PR 10237, a backport of NVIDIA/numba-cuda
PR 185). By hand on an H200 (driver 580.159.04), after cuInit(0): cuCtxGetDevice returns 201
(CUDA_ERROR_INVALID_CONTEXT), cuCtxGetDevice_v2 called the same way segfaults.
Question: is the SIGSEGV the driver's (no context current, it should return an error), or the
caller's (CUDA 13.0's cuCtxGetDevice_v2 takes a second argument, CUcontext ctx, that a caller
using cuCtxGetDevice's prototype leaves to whatever the register holds)?
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
    load_sibling,
)

_verdict = load_sibling(__file__, "verdict")

_GXX = ("{gxx}", "-O2", "-pthread", "-std=c++17", "-fno-omit-frame-pointer",
        "-static-libstdc++", "-static-libgcc")
_CRASH_SOURCES = ("native/crash_preload.cc", "native/crash.cc", "native/events.cc",
                  "native/crash.h", "native/events.h", "native/cuda_types.h")

ARTIFACTS = [
    Artifact(
        name="crash_preload",
        description=("the crash handler as an LD_PRELOAD object: the Python drivers' native crash "
                     "record, written before faulthandler's Python frames"),
        command=(*_GXX, "-shared", "-fPIC", "-fvisibility=hidden", "-Wl,--exclude-libs,ALL",
                 "native/crash_preload.cc", "native/crash.cc", "native/events.cc",
                 "-o", "{out}/libgpurepro_crash.so", "-ldl"),
        outputs=("libgpurepro_crash.so",),
        sources=_CRASH_SOURCES,
        tools=("gxx",),
    ),
]

FACTORS = {
    "binding": Factor(("ctypes", "cuda-bindings", "numba-builtin", "numba-builtin-fixed",
                       "numba-installed"), "ctypes",
                      "how Python reaches the driver: ctypes by symbol name, cuda.bindings.driver, "
                      "numba's own CUDA target (ctypes binding; with numba 0.63.0's fix applied), "
                      "or numba.cuda as installed"),
    "entry": Factor(("v2-one-arg", "v1", "v2-null", "v2-bogus", "user"), "v2-one-arg",
                    "cuCtxGetDevice_v2 with one argument, cuCtxGetDevice, cuCtxGetDevice_v2 with "
                    "its own ABI and ctx NULL or a handle that is no context, or numba's own calls"),
    "context": Factor(("none", "current"), "none",
                      "no context current (cuInit only), or device 0's primary context current"),
}

ARMS = [
    Arm("v2-one-arg", {}, "cuCtxGetDevice_v2 through ctypes with one argument, no context: the "
                          "call tried by hand"),
    Arm("v1", {"entry": "v1"}, "cuCtxGetDevice through ctypes, no context"),
    Arm("v2-null", {"entry": "v2-null"},
        "cuCtxGetDevice_v2(&dev, NULL) through ctypes with its own ABI, no context"),
    Arm("v2-bogus", {"entry": "v2-bogus"},
        "cuCtxGetDevice_v2(&dev, 0x10): a handle that is no context"),
    Arm("v1-current", {"entry": "v1", "context": "current"}, "cuCtxGetDevice, a context current"),
    Arm("v2-null-current", {"entry": "v2-null", "context": "current"},
        "cuCtxGetDevice_v2(&dev, NULL), a context current"),
    Arm("v2-one-arg-current", {"context": "current"},
        "cuCtxGetDevice_v2 with one argument, a context current: numba's own path (it asks "
        "only when a context is current)"),
    Arm("bindings-v1", {"binding": "cuda-bindings", "entry": "v1"},
        "cuda.bindings.driver.cuCtxGetDevice(), no context"),
    Arm("bindings-v2", {"binding": "cuda-bindings", "entry": "v2-null"},
        "cuda.bindings.driver.cuCtxGetDevice_v2(CUcontext(0)), no context"),
    Arm("bindings-v2-current", {"binding": "cuda-bindings", "entry": "v2-null",
                                "context": "current"},
        "cuda.bindings.driver.cuCtxGetDevice_v2(CUcontext(0)), a context current"),
    # What a user does, with the numba this interpreter has (its version is in each trial's
    # start event; the runtime pins that would set it are not declared yet).
    Arm("numba-builtin", {"binding": "numba-builtin", "entry": "user"},
        "numba.cuda.get_current_device() + synchronize() on numba's own target, ctypes binding"),
    Arm("numba-builtin-fixed", {"binding": "numba-builtin-fixed", "entry": "user"},
        "the same with numba 0.63.0's fix (exact-name lookup of cuCtxGetDevice and "
        "cuCtxSynchronize) applied to this numba"),
    Arm("numba-installed", {"binding": "numba-installed", "entry": "user"},
        "the same on numba.cuda as installed (numba-cuda's target where present)"),
]

_INVALID = "CUDA_ERROR_INVALID_CONTEXT"


def _returns_invalid_context(arm: str, what: str) -> Claim:
    return Claim(
        f"{arm}-invalid-context", arm=arm, kind="outcome", outcome="cuda_error", detail=_INVALID,
        share=0.5,
        supported=(f"{what} ({{arm}}) returns {_INVALID}, as a query with no context current "
                   "should: {count} of {n} valid trials."),
        contradicted=(f"{what} ({{arm}}) does not return {_INVALID} in most trials: {{count}} of "
                      "{n}."),
        not_decided=(f"Whether {what} ({{arm}}) returns {_INVALID} is not decided: {{count}} of "
                     "{n} trials did."))


def _survives(arm: str, what: str) -> Claim:
    return Claim(
        f"{arm}-survives", arm=arm, kind="outcome", outcome="survived", share=0.5,
        supported=f"{what} ({{arm}}) answers the device: {{count}} of {{n}} valid trials.",
        contradicted=f"{what} ({{arm}}) does not answer in most trials: {{count}} of {{n}}.",
        not_decided=(f"Whether {what} ({{arm}}) answers is not decided: {{count}} of {{n}} "
                     "trials did."))


def _crashes_less(arm: str, what: str) -> Claim:
    return Claim(
        f"{arm}-crashes-less", arm=arm, kind="lower",
        supported=(f"{what} ({{arm}}) crashes less often than cuCtxGetDevice_v2 called with one "
                   "argument: {count} crashes in {exposure} calls against {reference_count} in "
                   "the baseline's."),
        contradicted=(f"{what} ({{arm}}) crashes more often than cuCtxGetDevice_v2 called with "
                      "one argument: {count} crashes in {exposure} calls."),
        not_decided=(f"Whether {what} ({{arm}}) crashes less often than the one-argument call is "
                     "not decided: {count} crashes in {exposure} calls; deciding it needs "
                     "{needed}."))


CLAIMS = [
    Claim("v2-one-arg-crashes", arm="v2-one-arg", kind="outcome", outcome="crashed",
          detail="SIGSEGV", share=0.5,
          supported=("Reproduced: cuCtxGetDevice_v2 called through ctypes with one argument, no "
                     "context current ({arm}), ended in SIGSEGV in {count} of {n} valid trials."),
          contradicted=("cuCtxGetDevice_v2 called with one argument ({arm}) ended in SIGSEGV in "
                        "only {count} of {n} valid trials."),
          not_decided=("Whether cuCtxGetDevice_v2 called with one argument ({arm}) segfaults is "
                       "not decided: {count} SIGSEGV in {n} valid trials.")),
    _returns_invalid_context("v1", "cuCtxGetDevice, no context current"),
    _crashes_less("v1", "cuCtxGetDevice, no context current"),
    _returns_invalid_context("v2-null", "cuCtxGetDevice_v2 with its own ABI and ctx NULL, no "
                                        "context current"),
    _crashes_less("v2-null", "cuCtxGetDevice_v2 with its own ABI and ctx NULL"),
    Claim("v2-bogus-crashes", arm="v2-bogus", kind="outcome", outcome="crashed",
          detail="SIGSEGV", share=0.5,
          supported=("A ctx argument that is no context makes cuCtxGetDevice_v2 segfault "
                     "({arm}, ctx 0x10): {count} of {n} valid trials."),
          contradicted=("cuCtxGetDevice_v2 with a ctx that is no context ({arm}) segfaulted in "
                        "only {count} of {n} valid trials."),
          not_decided=("Whether cuCtxGetDevice_v2 segfaults on a ctx that is no context ({arm}) "
                       "is not decided: {count} of {n}.")),
    _survives("v1-current", "cuCtxGetDevice with a context current"),
    _survives("v2-null-current", "cuCtxGetDevice_v2 with its own ABI, ctx NULL, a context current"),
    Claim("v2-one-arg-current-crashes", arm="v2-one-arg-current", kind="outcome",
          outcome="crashed", detail="SIGSEGV", share=0.0,
          supported=("With a context current too, cuCtxGetDevice_v2 called with one argument "
                     "({arm}, numba's own path) segfaults: {count} of {n} valid trials."),
          not_decided=("cuCtxGetDevice_v2 called with one argument and a context current ({arm}) "
                       "did not segfault in {n} valid trials.")),
    _returns_invalid_context("bindings-v1", "cuda.bindings' cuCtxGetDevice, no context current"),
    _returns_invalid_context("bindings-v2", "cuda.bindings' cuCtxGetDevice_v2(CUcontext(0)), no "
                                            "context current"),
    _survives("bindings-v2-current", "cuda.bindings' cuCtxGetDevice_v2(CUcontext(0)) with a "
                                     "context current"),
    # Decidable only where this machine's numba predates the fix (its version is recorded).
    Claim("numba-fix-crashes-less", arm="numba-builtin-fixed", reference="numba-builtin",
          kind="lower",
          supported=("numba 0.63.0's fix is what stops the crash: this numba's own target with the "
                     "fix applied ({arm}) crashes less often than without it: {count} crashes in "
                     "{exposure} calls against {reference_count}."),
          contradicted=("With numba 0.63.0's fix applied ({arm}) this numba crashes more often: "
                        "{count} crashes in {exposure} calls against {reference_count}."),
          not_decided=("Whether numba 0.63.0's fix changes this numba's crashes ({arm} against "
                       "numba-builtin) is not decided: {count} crashes in {exposure} calls against "
                       "{reference_count}; deciding it needs {needed}.")),
]


def trial_command(ctx: TrialContext) -> TrialCommand:
    f = ctx.factors
    preload = ctx.artifacts["crash_preload"]
    budget = ("--seconds", str(ctx.budget.duration_s))
    if f["binding"].startswith("numba-"):
        if f["entry"] != "user" or f["context"] != "none":
            raise ValueError("the numba arms make numba's own calls: entry 'user', context 'none'")
        target = f["binding"].removeprefix("numba-")
        return ctx.python_driver(ctx.case_dir / "numba_query.py", "--target", target, *budget,
                                 preload=preload)
    if f["entry"] == "user":
        raise ValueError("entry 'user' is numba's: binding numba-builtin or numba-installed")
    if f["binding"] == "cuda-bindings" and f["entry"] == "v2-one-arg":
        raise ValueError("cuda.bindings cannot call cuCtxGetDevice_v2 with one argument")
    return ctx.python_driver(ctx.case_dir / "query.py", "--binding", f["binding"],
                             "--entry", f["entry"], "--context", f["context"], *budget,
                             preload=preload)


CASE = Case(
    name="ctx_get_device_v2",
    question=("numba's CUDA target segfaults with NVIDIA driver 580, in cuCtxGetDevice_v2: is that "
              "the driver's fault (no context current, it should return an error) or the "
              "caller's (CUDA 13.0's cuCtxGetDevice_v2 takes a CUcontext the caller leaves "
              "unset)?"),
    report_url="https://github.com/numba/numba/issues/10188",
    toolchains={},
    artifacts=ARTIFACTS,
    factors=FACTORS,
    arms=ARMS,
    baseline="v2-one-arg",
    trial_command=trial_command,
    verdict=_verdict.verdict,
    devices=Devices(
        targets={cc: f"sm_{cc.replace('.', '')}" for cc in
                 ("7.0", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0",
                  "12.1")},
        why="any CUDA device: the case asks the driver, it builds no device code",
    ),
    # One query per trial: crashes per call.
    exposure=Exposure(counter="calls", unit="calls", per=1),
    failure_outcomes=("crashed",),
    defaults=Defaults(trials_per_arm=10, trial_timeout_s=30, duration_s=1),
    claims=CLAIMS,
)
