"""Case ctx_get_device_v2: numba's CUDA target segfaults with NVIDIA driver 580 in cuCtxGetDevice_v2
(numba/numba issue 10188). README.md has the arms, runtime packages, claims and the verdict."""

from __future__ import annotations

from gpurepro import case

FACTORS = {  # how Python reaches the driver, which entry point, a context current, which numba
    "binding": case.Factor(("ctypes", "cuda-bindings", "numba-builtin", "numba-builtin-fixed",
                       "numba-installed"), "ctypes"),
    "entry": case.Factor(("v2-one-arg", "v1", "v2-null", "v2-bogus", "user"), "v2-one-arg"),
    "context": case.Factor(("none", "current"), "none"),
    "numba": case.Factor(("node", "0.62.1", "0.63.0"), "node"),
}
ARMS = [case.Arm(name, dict(zip(FACTORS, levels.split(), strict=True)), about)
        for name, levels, about in (  # arm, its levels of FACTORS, what it calls (README: Arms)
    ("v2-one-arg", "ctypes v2-one-arg none node", "the call tried by hand, no context"),
    ("v1", "ctypes v1 none node", "cuCtxGetDevice, no context"),
    ("v2-null", "ctypes v2-null none node", "cuCtxGetDevice_v2, its own ABI, ctx NULL"),
    ("v2-bogus", "ctypes v2-bogus none node", "cuCtxGetDevice_v2, a ctx that is no context"),
    ("v2-bogus-current", "ctypes v2-bogus current node", "the same, a context current"),
    ("v1-current", "ctypes v1 current node", "cuCtxGetDevice, a context current"),
    ("v2-null-current", "ctypes v2-null current node", "ctx NULL, a context current"),
    ("v2-one-arg-current", "ctypes v2-one-arg current node", "numba's own path: a context current"),
    ("bindings-v1", "cuda-bindings v1 none node", "cuda.bindings' cuCtxGetDevice()"),
    ("bindings-v2", "cuda-bindings v2-null none node", "cuda.bindings' cuCtxGetDevice_v2(0)"),
    ("bindings-v2-current", "cuda-bindings v2-null current node", "the same, a context current"),
    ("numba-062", "numba-builtin user none 0.62.1", "numba 0.62.1, before the fix"),
    ("numba-062-fixed", "numba-builtin-fixed user none 0.62.1", "0.62.1 with 0.63.0's fix"),
    ("numba-063", "numba-builtin user none 0.63.0", "numba 0.63.0, the fix released"),
    ("numba-builtin", "numba-builtin user none node", "the node's numba, its own target"),
    ("numba-installed", "numba-installed user none node", "numba.cuda as the node has it"),
)]
# Wheels for the Python that runs the trials: the numba factor's levels are numba releases,
# each with the llvmlite and numpy inside the ranges it declares, found by the build and locked
# in locks/runtime/ctx_get_device_v2.json (README: Runtime packages).
RUNTIME = case.Runtime(packages={"*": ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1"]},
                       releases={"numba": "numba"})

_INVALID = "CUDA_ERROR_INVALID_CONTEXT"
# Outcome claims (more than half of an arm's valid trials): kind -> outcome, detail, sentences.
_SAYS = {
    "invalid-context": ("cuda_error", _INVALID, (
        f"WHAT ({{arm}}) returns {_INVALID}, as a query with no context current should: "
        "{count} of {n} valid trials.",
        f"WHAT ({{arm}}) does not return {_INVALID} in most trials: {{count}} of {{n}}.",
        f"Whether WHAT ({{arm}}) returns {_INVALID} is not decided: {{count}} of {{n}} "
        "trials did.")),
    "survives": ("survived", None, (
        "WHAT ({arm}) answers the device: {count} of {n} valid trials.",
        "WHAT ({arm}) does not answer in most trials: {count} of {n}.",
        "Whether WHAT ({arm}) answers is not decided: {count} of {n} trials did.")),
    "crashes": ("crashed", "SIGSEGV", (
        "WHAT ({arm}) ends in SIGSEGV: {count} of {n} valid trials.",
        "WHAT ({arm}) ended in SIGSEGV in only {count} of {n} valid trials.",
        "Whether WHAT ({arm}) ends in SIGSEGV is not decided: {count} of {n}.")),
}


def _claim(says: str, arm: str, what: str) -> case.Claim:
    outcome, detail, texts = _SAYS[says]
    yes, no, undecided = (t.replace("WHAT", what) for t in texts)
    return case.Claim(f"{arm}-{says}", arm=arm, kind="outcome", outcome=outcome, detail=detail,
                      share=0.5, supported=yes, contradicted=no, not_decided=undecided)


_V2, _NONE = "cuCtxGetDevice_v2", "no context current"
_BOGUS = f"{_V2} given a ctx that is no context (0x10)"
CLAIMS = [  # the owner's (v2-null, v2-bogus), the report's call's, the controls, numba's
    _claim("invalid-context", "v2-null", f"{_V2} with its own ABI and ctx NULL, {_NONE}"),
    _claim("crashes", "v2-bogus", f"{_BOGUS}, {_NONE}"),
    _claim("crashes", "v2-bogus-current", f"{_BOGUS}, a context current as numba calls it"),
    case.Claim("v2-one-arg-as-null", arm="v2-one-arg", kind="outcome", outcome="cuda_error",
               detail=_INVALID, share=0.5,
               supported=(f"The report's exact call, {_V2} through ctypes with one argument and "
                          f"no context current ({{arm}}), returned {_INVALID} in {{count}} of "
                          "{n} valid trials, as the call with ctx NULL does: here the second "
                          "argument's register held no non-NULL value the driver read through."),
               contradicted=(f"The report's exact call ({{arm}}) did not return {_INVALID} in "
                             "most trials ({count} of {n}): its second argument's register held "
                             "something else than NULL (its outcomes are above)."),
               not_decided=("Whether the report's exact call ({arm}) behaves as the call with "
                            f"ctx NULL is not decided: {{count}} of {{n}} returned {_INVALID}.")),
    _claim("invalid-context", "v1", f"cuCtxGetDevice, {_NONE}"),
    _claim("survives", "v1-current", "cuCtxGetDevice with a context current"),
    _claim("survives", "v2-null-current", f"{_V2} with its own ABI, ctx NULL, a context current"),
    _claim("survives", "v2-one-arg-current", f"{_V2} with one argument and a context current"),
    _claim("invalid-context", "bindings-v1", f"cuda.bindings' cuCtxGetDevice, {_NONE}"),
    _claim("invalid-context", "bindings-v2", f"cuda.bindings' {_V2}(CUcontext(0)), {_NONE}"),
    _claim("survives", "bindings-v2-current",
           f"cuda.bindings' {_V2}(CUcontext(0)) with a context current"),
    _claim("survives", "numba-062", "numba 0.62.1's own target (get_current_device, synchronize)"),
    _claim("survives", "numba-062-fixed", "numba 0.62.1 with 0.63.0's fix applied"),
    _claim("survives", "numba-063", "numba 0.63.0's own target"),
    _claim("survives", "numba-builtin", "the node's numba, its own target"),
]


def trial_command(ctx: case.TrialContext) -> case.TrialCommand:
    f, preload = ctx.factors, ctx.artifacts["crash_preload"]
    numba = f["binding"].startswith("numba-")
    if (numba != (f["entry"] == "user") or numba and f["context"] != "none"
            or not numba and f["numba"] != "node"
            or f["binding"] == "cuda-bindings" and f["entry"] == "v2-one-arg"):
        raise ValueError(f"no such trial: {dict(f)} (entry 'user' and a numba release are the "
                         "numba arms', with no context; cuda.bindings has no one-argument v2)")
    if numba:  # what a numba user runs, a program on the stock driver
        release = () if f["numba"] == "node" else ("--expect-numba", f["numba"])
        return ctx.python_program(
            ctx.case_dir / "numba_query.py", "--target", f["binding"].removeprefix("numba-"),
            *release, preload=preload, counter="calls", instrumented=True,
            calls=("get_current_device", "synchronize"),
            versions=("numba", "numba-cuda", "llvmlite", "cuda-bindings"))
    return ctx.python_driver(ctx.case_dir / "query.py", "--binding", f["binding"], "--entry",
                             f["entry"], "--context", f["context"], "--seconds",
                             str(ctx.budget.duration_s), preload=preload)


CASE = case.Case(
    name="ctx_get_device_v2",
    question=("numba's CUDA target segfaults with NVIDIA driver 580, in cuCtxGetDevice_v2: is that "
              "the driver's fault (no context current, it should return an error) or the "
              "caller's (CUDA 13.0's cuCtxGetDevice_v2 takes a CUcontext the caller leaves "
              "unset)?"),
    report_url="https://github.com/numba/numba/issues/10188",
    toolchains={},
    artifacts=[case.kit.crash_preload()],
    factors=FACTORS,
    arms=ARMS,
    baseline="v2-one-arg",
    trial_command=trial_command,
    verdict=case.load_sibling(__file__, "verdict").verdict,  # what a Conclusion cannot say
    devices=case.Devices(targets={cc: f"sm_{cc.replace('.', '')}" for cc in (
        "7.0", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1")},
        why="any CUDA device: the case asks the driver, it builds no device code"),
    exposure=case.Exposure(counter="calls", unit="calls", per=1, opportunity=False),  # 1 a trial
    failure_outcomes=("crashed",),
    defaults=case.Defaults(trials_per_arm=20, trial_timeout_s=30, duration_s=1, jobs=4),
    claims=CLAIMS,
    runtime=RUNTIME,
)
