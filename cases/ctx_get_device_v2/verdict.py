"""ctx_get_device_v2's verdict, what a Conclusion cannot say: status ``explained`` (the owner
without the report's own call crashing here) and the measurements (README: Claims)."""

from __future__ import annotations

from typing import Any

from gpurepro.case import Analysis, measures

NULL_RIGHT, ONE_ARG = "v2-null-invalid-context", "v2-one-arg-as-null"
BOGUS = ("v2-bogus-crashes", "v2-bogus-current-crashes")  # a non-NULL handle crashes
# numba as a user runs it, and the decision that shows the fix: before it, the fix, after it.
NUMBA = (("numba-062-survives", "contradicted"), ("numba-062-fixed-survives", "supported"),
         ("numba-063-survives", "supported"))
NUMBA_ARMS = ("numba-062", "numba-062-fixed", "numba-063", "numba-builtin", "numba-installed")
DECLARED_LLVMLITE = {"0.62.1": "<0.46,>=0.45.0dev0", "0.63.0": "<0.47,>=0.46.0dev0"}
CALLER = ("the caller's binding, not the driver: cuCtxGetDevice_v2 is CUDA 13.0's (CUdevice *, "
          "CUcontext) entry point, and a caller that binds it with cuCtxGetDevice's one-argument "
          "prototype (numba before 0.63.0, whose ctypes binding looks each function up as NAME_v2 "
          "first, in Driver._find_api; numba-cuda before 0.8.1; the six-line ctypes program) "
          "passes whatever its second argument's register holds as ctx: undefined behaviour of the "
          "caller. Called with its declared ABI and ctx NULL the driver returns "
          "CUDA_ERROR_INVALID_CONTEXT; given a non-NULL handle that is no context it faults inside "
          "libcuda, as any API given a bad handle may")
DRIVER = ("the CUDA driver (branch 580): cuCtxGetDevice_v2 called with its declared ABI and ctx "
          "NULL, no context current, does not return CUDA_ERROR_INVALID_CONTEXT")
FOR_USERS = ("numba users: numba 0.63.0 or numba-cuda 0.8.1 and later bind cuCtxGetDevice and "
             "cuCtxSynchronize by their exact names (NVIDIA/numba-cuda issue 173 (binding picks "
             "`_v2` symbols by name) and PR 185 (numba-cuda 0.8.1), numba/numba PR 10237 (numba "
             "0.63.0)).", "Other ctypes users of libcuda: look symbols up by exact name and "
             "prototype, or through cuGetProcAddress at the CUDA version of the prototype they "
             "declare.")
HYPOTHESES = ("What the one-argument call leaves in the second argument's register depends on "
              "the code that ran before it in the caller (ctypes and libffi here, numba's call "
              "wrappers in the report): no arm sets it, which is why the report's crash is a "
              "matter of machine and build.", "The fault address of the bogus-handle arms is the "
              "driver reading through the handle (0x10) at an offset: read from the fault "
              "addresses above, not isolated by an arm.")


def _ran(c: dict[str, Any]) -> str:
    """What a numba trial's start event says it ran (without numba.cuda, what it found)."""
    parts = [f"{name} {c[name.replace('-', '_')]}" for name in ("numba", "llvmlite", "numba-cuda")
             if c.get(name.replace("-", "_"))]
    if c.get("implementation"):
        parts.append(f"{c['implementation']} target, "
                     f"{'cuda.bindings' if c.get('nvidia_binding') else 'ctypes'} binding")
    return ", ".join(parts + ["0.63.0's fix applied"] * bool(c.get("fix_applied"))) or "no numba"


def _numba(analysis: Analysis) -> tuple[list[str], list[str]]:
    """What each numba arm ran, and the releases that ran outside their declared llvmlite."""
    out, outside = [], []
    for arm in NUMBA_ARMS:
        if not (text := measures.outcomes(analysis, arm)):
            continue
        starts = [c for t in analysis.trials_of(arm) if (c := measures.start_config(t.record))]
        versions = f" ({'; '.join(sorted({_ran(c) for c in starts}))})" if starts else ""
        out.append(text + versions + (": the node's numba, not a pinned release" if arm in
                                      NUMBA_ARMS[3:] else ": a pinned release (runtime packages)")
                   + ".")
        for c in starts:
            declared = DECLARED_LLVMLITE.get(str(c.get("numba")))
            if declared and f"numba {c.get('numba')}" not in " ".join(outside):
                outside.append(f"numba {c.get('numba')} ran on llvmlite {c.get('llvmlite')}, "
                               f"outside the llvmlite{declared} it declares")
    return out, outside


def verdict(analysis: Analysis) -> dict[str, Any]:
    decision = analysis.decision
    crashes, in_libcuda = measures.crash_sites(analysis)
    numba, outside = _numba(analysis)
    sentences = measures.outcomes_per_arm(analysis) + crashes + numba
    nxt = [f"Run this case on driver branch {b}; not runnable on this machine." for b in
           ("580 as filed (580.65.06)", "590 (CUDA 13.1)", "595 (CUDA 13.2)")]
    nxt += ["; ".join(outside) + ": their own llvmlite wheels (56 MB each for cp312) are not "
            "carried to the GPU node; where they can be installed, pin them (Runtime) and rerun "
            "the numba arms."] * bool(outside)
    bogus = [n for n in BOGUS if analysis.supported(n)]
    numba_said = [n for n, shown in NUMBA if decision(n) == shown]
    one_arg, hypotheses = decision(ONE_ARG), []
    if decision(NULL_RIGHT) == "contradicted":
        status, owner, because = "reproduced", DRIVER, [NULL_RIGHT]
        nxt = ["Report to NVIDIA with the v2-null arm's trials and their crash records.", *nxt]
    elif not (analysis.supported(NULL_RIGHT) and bogus and in_libcuda):
        status, owner, because, sentences = "inconclusive", None, [], sentences or ["No trial ran."]
        nxt = ["Run more trials of v2-null and v2-bogus: whether the declared ABI returns the "
               "error with ctx NULL, and a non-NULL handle crashes inside libcuda, decides whose "
               "fault the crash is.", "Check the driver: cuCtxGetDevice_v2 exists from CUDA 13.0 "
               "(driver 580) on; an older driver makes the v2 arms unsupported.", *nxt]
    else:
        crashed = any(measures.mostly(analysis, arm, "crashed") and decision(c) == "contradicted"
                      for arm, c in (("v2-one-arg", ONE_ARG), ("numba-062", NUMBA[0][0])))
        status, owner, hypotheses = "reproduced" if crashed else "explained", CALLER, [*HYPOTHESES]
        because = [NULL_RIGHT, *bogus, *[ONE_ARG] * (one_arg in ("supported", "contradicted")),
                   *numba_said]
        sentences += ["The report's exact call did not crash on this machine: its second "
                      "argument's register held nothing the driver read through, so it answered "
                      "as the call with ctx NULL (v2-null); where that register holds a non-NULL "
                      "value, the call is v2-bogus."] * (one_arg == "supported")
        nxt = [*FOR_USERS, *nxt] + ["numba's own arms decided nothing here (numba not "
                                    "importable, or its trials split): their outcomes are "
                                    "above."] * (not numba_said)
    return {"status": status, "owner": owner, "owner_because": because, "sentences": sentences,
            "next": nxt, "hypotheses": hypotheses}
