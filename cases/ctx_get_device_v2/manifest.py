"""Case ctx_get_device_v2: numba's CUDA target segfaults with NVIDIA driver 580.

Report: numba/numba issue 10188 (driver 580.65.06, CUDA 13.0); numba 0.63.0 "Fix CUDA target
crash bug with NVIDIA driver version 580" (numba/numba PR 10237, a backport of NVIDIA/numba-cuda
PR 185). By hand on an H200 (driver 580.159.04), after cuInit(0): cuCtxGetDevice returns 201
(CUDA_ERROR_INVALID_CONTEXT), cuCtxGetDevice_v2 called the same way segfaults.
Question: is the SIGSEGV the driver's (no context current, it should return an error), or the
caller's (CUDA 13.0's cuCtxGetDevice_v2 takes a second argument, CUcontext ctx, that a caller
using cuCtxGetDevice's prototype leaves to whatever the register holds)?
What decides it: v2-null (the declared ABI, ctx NULL) and v2-bogus (a chosen non-NULL ctx that
is no context, through a two-argument prototype: the deterministic form of a register holding
garbage); v2-one-arg is the report's exact call, whose outcome is that of its register.
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
    Runtime,
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
    "numba": Factor(("node", "0.62.1", "0.63.0"), "node",
                    "which numba the trial imports: the GPU node's own, or a release carried as "
                    "runtime pins (RUNTIME below)"),
}

ARMS = [
    Arm("v2-one-arg", {}, "cuCtxGetDevice_v2 through ctypes with one argument, no context: the "
                          "call tried by hand; its second parameter is whatever the register "
                          "holds"),
    Arm("v1", {"entry": "v1"}, "cuCtxGetDevice through ctypes, no context"),
    Arm("v2-null", {"entry": "v2-null"},
        "cuCtxGetDevice_v2(&dev, NULL) through ctypes with its own ABI, no context"),
    Arm("v2-bogus", {"entry": "v2-bogus"},
        "cuCtxGetDevice_v2(&dev, 0x10) through a two-argument prototype: the second register "
        "holds a chosen non-NULL value that is no context"),
    Arm("v2-bogus-current", {"entry": "v2-bogus", "context": "current"},
        "the same with a context current, as numba calls it"),
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
    # What a user does: numba.cuda.get_current_device() + synchronize() on numba's own target.
    Arm("numba-062", {"binding": "numba-builtin", "entry": "user", "numba": "0.62.1"},
        "numba 0.62.1 (before the fix), its own target, ctypes binding"),
    Arm("numba-062-fixed", {"binding": "numba-builtin-fixed", "entry": "user", "numba": "0.62.1"},
        "numba 0.62.1 with numba 0.63.0's fix (exact-name lookup of cuCtxGetDevice and "
        "cuCtxSynchronize) applied in the trial: the one difference on this path"),
    Arm("numba-063", {"binding": "numba-builtin", "entry": "user", "numba": "0.63.0"},
        "numba 0.63.0 (the fix released), its own target, ctypes binding"),
    Arm("numba-builtin", {"binding": "numba-builtin", "entry": "user"},
        "the node's numba (its version in each trial's start event), its own target"),
    Arm("numba-installed", {"binding": "numba-installed", "entry": "user"},
        "numba.cuda as the node has it installed (numba-cuda's target where present)"),
]

# The packages the trials import, carried as wheels for the node's Python 3.12 (build/runtime).
# cuda-bindings as the H200 image has it, for every arm (the cuda.bindings arms call it; its
# version is then a recorded pin, not whatever a node has). The numba releases each with the
# numpy they accept (<2.4): their llvmlite (0.45.x, 0.46.x: 56 MB a wheel) is over what a run
# carries to the node, so both run on the node's llvmlite, outside their declared range (the
# record says so per arm); the crash path (the driver binding) does not reach LLVM.
_NUMPY = "numpy==2.3.5"
RUNTIME = Runtime(
    packages={"*": ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1"],
              "numba-062": ["numba==0.62.1", _NUMPY],
              "numba-062-fixed": ["numba==0.62.1", _NUMPY],
              "numba-063": ["numba==0.63.0", _NUMPY]},
    from_node=("llvmlite",),
)

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


def _crashes(arm: str, what: str) -> Claim:
    return Claim(
        f"{arm}-crashes", arm=arm, kind="outcome", outcome="crashed", detail="SIGSEGV", share=0.5,
        supported=f"{what} ({{arm}}) ends in SIGSEGV: {{count}} of {{n}} valid trials.",
        contradicted=f"{what} ({{arm}}) ended in SIGSEGV in only {{count}} of {{n}} valid trials.",
        not_decided=(f"Whether {what} ({{arm}}) ends in SIGSEGV is not decided: {{count}} of "
                     "{n}."))


CLAIMS = [
    # What decides the owner: the declared ABI with ctx NULL, and a non-NULL handle.
    _returns_invalid_context("v2-null", "cuCtxGetDevice_v2 with its own ABI and ctx NULL, no "
                                        "context current"),
    _crashes("v2-bogus", "cuCtxGetDevice_v2 given a ctx that is no context (0x10), no context "
                         "current"),
    _crashes("v2-bogus-current", "cuCtxGetDevice_v2 given a ctx that is no context (0x10), a "
                                 "context current as numba calls it"),
    # The report's exact call: its outcome is that of the value its second register holds.
    Claim("v2-one-arg-as-null", arm="v2-one-arg", kind="outcome", outcome="cuda_error",
          detail=_INVALID, share=0.5,
          supported=("The report's exact call, cuCtxGetDevice_v2 through ctypes with one "
                     "argument and no context current ({arm}), returned " + _INVALID + " in "
                     "{count} of {n} valid trials, as the call with ctx NULL does: here the "
                     "second argument's register held no non-NULL value the driver read "
                     "through."),
          contradicted=("The report's exact call ({arm}) did not return " + _INVALID + " in "
                        "most trials ({count} of {n}): its second argument's register held "
                        "something else than NULL (its outcomes are above)."),
          not_decided=("Whether the report's exact call ({arm}) behaves as the call with ctx "
                       "NULL is not decided: {count} of {n} returned " + _INVALID + ".")),
    _returns_invalid_context("v1", "cuCtxGetDevice, no context current"),
    _survives("v1-current", "cuCtxGetDevice with a context current"),
    _survives("v2-null-current", "cuCtxGetDevice_v2 with its own ABI, ctx NULL, a context current"),
    _survives("v2-one-arg-current", "cuCtxGetDevice_v2 with one argument and a context current"),
    _returns_invalid_context("bindings-v1", "cuda.bindings' cuCtxGetDevice, no context current"),
    _returns_invalid_context("bindings-v2", "cuda.bindings' cuCtxGetDevice_v2(CUcontext(0)), no "
                                            "context current"),
    _survives("bindings-v2-current", "cuda.bindings' cuCtxGetDevice_v2(CUcontext(0)) with a "
                                     "context current"),
    # numba as a user runs it: the releases before and after the fix, and the fix alone.
    _survives("numba-062", "numba 0.62.1's own target (get_current_device, synchronize)"),
    _survives("numba-062-fixed", "numba 0.62.1 with 0.63.0's fix applied"),
    _survives("numba-063", "numba 0.63.0's own target"),
    _survives("numba-builtin", "the node's numba, its own target"),
]


def trial_command(ctx: TrialContext) -> TrialCommand:
    f = ctx.factors
    preload = ctx.artifacts["crash_preload"]
    budget = ("--seconds", str(ctx.budget.duration_s))
    if f["binding"].startswith("numba-"):
        if f["entry"] != "user" or f["context"] != "none":
            raise ValueError("the numba arms make numba's own calls: entry 'user', context 'none'")
        target = f["binding"].removeprefix("numba-")
        release = () if f["numba"] == "node" else ("--expect-numba", f["numba"])
        return ctx.python_driver(ctx.case_dir / "numba_query.py", "--target", target, *release,
                                 *budget, preload=preload)
    if f["entry"] == "user" or f["numba"] != "node":
        raise ValueError("entry 'user' and a numba release are numba's: binding numba-*")
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
    # One query per trial: crashes per call. The count is the same in every trial, so it
    # measures no opportunity within one: every outcome is modelled per trial.
    exposure=Exposure(counter="calls", unit="calls", per=1, opportunity=False),
    failure_outcomes=("crashed",),
    # One query is a fraction of a second (a numba import about a second): 20 trials per arm,
    # four processes at a time (no two share anything but the GPU), decide every outcome claim
    # whose arm behaves one way, under Holm's thresholds for all of them.
    defaults=Defaults(trials_per_arm=20, trial_timeout_s=30, duration_s=1, jobs=4),
    claims=CLAIMS,
    runtime=RUNTIME,
)
