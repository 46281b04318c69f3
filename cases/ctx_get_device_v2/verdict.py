"""The ctx_get_device_v2 verdict: measurements, and status/owner/next from decided claims.

This module computes no statistics: the comparisons are manifest.py's claims, decided by the
harness (gpurepro.analyze.claims), whose sentences the harness appends. Written here: measurements
(outcomes per arm as counted, where the crashes' PC and fault address lay, the numba and llvmlite
versions that ran), and the status, owner and next steps, each resting on decided claims.

What decides the owner: ``v2-null`` (the declared two-argument ABI with ctx NULL: the driver must
return CUDA_ERROR_INVALID_CONTEXT with no context current) and ``v2-bogus`` (a non-NULL handle
that is no context: a crash inside libcuda is the driver reading through what its caller gave
it). The report's exact call, ``v2-one-arg``, passes whatever the second argument's register
holds, so its outcome is one of those two; ``v2-one-arg-as-null`` says which it was here.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from gpurepro.analyze.views import Analysis

NULL_RIGHT = "v2-null-invalid-context"  # the declared ABI with ctx NULL returns the error
BOGUS = ("v2-bogus-crashes", "v2-bogus-current-crashes")  # a non-NULL handle crashes
ONE_ARG = "v2-one-arg-as-null"  # the report's call, as the NULL call here
# numba as a user runs it: the release before the fix, the fix alone, the release with it.
NUMBA_BEFORE, NUMBA_FIX, NUMBA_AFTER = ("numba-062-survives", "numba-062-fixed-survives",
                                        "numba-063-survives")
NUMBA_ARMS = ("numba-062", "numba-062-fixed", "numba-063", "numba-builtin", "numba-installed")

# Driver branches with cuCtxGetDevice_v2 (CUDA 13.0 and later) that this run's machine did not
# have: each is a run of this case on a machine with that driver.
OTHER_BRANCHES = ("580 as filed (580.65.06)", "590 (CUDA 13.1)", "595 (CUDA 13.2)")
UPSTREAM = ("NVIDIA/numba-cuda issue 173 (binding picks `_v2` symbols by name) and PR 185 "
            "(numba-cuda 0.8.1), numba/numba PR 10237 (numba 0.63.0)")
# The llvmlite each numba release declares; its own wheels are not carried (README).
DECLARED_LLVMLITE = {"0.62.1": "<0.46,>=0.45.0dev0", "0.63.0": "<0.47,>=0.46.0dev0"}


def _outcomes(analysis: Analysis, arm: str) -> str | None:
    a = analysis.arms.get(arm)
    if a is None or not a.n:
        return None
    counts = Counter(f"{t.outcome} ({t.detail})" if t.outcome in ("crashed", "cuda_error")
                     else t.outcome for t in analysis.trials_of(arm))
    return f"{arm}: " + ", ".join(f"{k} {v}" for k, v in counts.most_common())


def _crash_site(analysis: Analysis) -> tuple[str | None, bool]:
    """Where the crashes' PC lay (a measurement), and whether every record put it in libcuda."""
    sites = [s for s in analysis.crash_sites if s.pc_module]
    if not sites:
        return None, False
    modules: Counter[str] = Counter()
    for s in sites:
        modules[f"{s.pc_module}+{s.pc_offset}"] += s.count
    in_libcuda = all((s.pc_module or "").startswith("libcuda") for s in sites)
    where = ", ".join(f"{m} ({n})" for m, n in modules.most_common(4))
    arms = sorted({a for s in sites for a in s.arms})
    return (f"Crash records ({', '.join(arms)}): the faulting PC at {where}"
            + (", inside libcuda in every one." if in_libcuda else ".")), in_libcuda


def _fault_addresses(analysis: Analysis) -> str | None:
    """The addresses the crashes faulted at, per arm (a measurement)."""
    per_arm: dict[str, Counter[str]] = {}
    for t in analysis.trials:
        crash = t.record.get("crash") or {}
        if t.outcome == "crashed" and crash.get("fault_address"):
            per_arm.setdefault(t.arm, Counter())[str(crash["fault_address"])] += 1
    if not per_arm:
        return None
    return "Fault addresses: " + "; ".join(
        f"{arm} " + ", ".join(f"{a} ({n})" for a, n in c.most_common(3))
        for arm, c in sorted(per_arm.items())) + "."


def _numba(analysis: Analysis) -> tuple[list[str], list[str]]:
    """What each numba arm ran (from its trials' start events), and the releases that ran on an
    llvmlite outside the range they declare."""
    out, outside = [], []
    for arm in NUMBA_ARMS:
        trials = list(analysis.trials_of(arm))
        text = _outcomes(analysis, arm)
        if not trials or not text:
            continue
        starts = [e for t in trials for e in [_start(t.record)] if e]
        versions = sorted({_ran(c) for c in starts})
        where = (": the node's numba, not a pinned release" if arm in ("numba-builtin",
                                                                       "numba-installed")
                 else ": a pinned release (runtime packages)")
        out.append(text + (f" ({'; '.join(versions)})" if versions else "") + where + ".")
        for c in starts:
            declared = DECLARED_LLVMLITE.get(str(c.get("numba")))
            if declared and f"numba {c.get('numba')}" not in " ".join(outside):
                outside.append(f"numba {c.get('numba')} ran on llvmlite {c.get('llvmlite')}, "
                               f"outside the llvmlite{declared} it declares")
    return out, outside


def _ran(c: dict[str, Any]) -> str:
    """What a numba trial's start event says it ran (a trial that could not import numba.cuda
    names only what it found)."""
    parts = [f"{name} {c[key]}" for name, key in (("numba", "numba"), ("llvmlite", "llvmlite"),
                                                   ("numba-cuda", "numba_cuda")) if c.get(key)]
    if c.get("implementation"):
        parts.append(f"{c['implementation']} target, "
                     f"{'cuda.bindings' if c.get('nvidia_binding') else 'ctypes'} binding")
    if c.get("fix_applied"):
        parts.append("0.63.0's fix applied")
    return ", ".join(parts) or "no numba"


def _start(record: Any) -> dict[str, Any] | None:
    """The driver's start config, from the trial's kept standard output."""
    for line in str(record.get("stdout_tail") or "").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("event") == "start":
            return ev.get("config") or {}
    return None


def _crashed_mostly(analysis: Analysis, arm: str) -> bool:
    a = analysis.arms.get(arm)
    crashed = sum(1 for _ in analysis.trials_of(arm, "crashed"))
    return a is not None and a.n > 0 and 2 * crashed > a.n


def verdict(analysis: Analysis) -> dict[str, Any]:
    decision, supported = analysis.decision, analysis.supported
    device = analysis.device
    on = f" on {device.name}" if device.name else ""
    sentences = [s for s in (_outcomes(analysis, a) for a in analysis.arms) if s]
    sentences = [f"Outcomes per arm{on}: " + "; ".join(sentences) + "."] if sentences else []
    site, in_libcuda = _crash_site(analysis)
    sentences += [s for s in (site, _fault_addresses(analysis)) if s]
    numba, outside = _numba(analysis)
    sentences += numba
    nxt = [f"Run this case on driver branch {b}; not runnable on this machine." for b in
           OTHER_BRANCHES]
    if outside:
        nxt.append("; ".join(outside) + ": their own llvmlite wheels (56 MB each for cp312) are "
                   "not carried to the GPU node; where they can be installed, pin them (Runtime) "
                   "and rerun the numba arms.")

    if decision(NULL_RIGHT) == "contradicted":
        return {"status": "reproduced",
                "owner": ("the CUDA driver (branch 580): cuCtxGetDevice_v2 called with its "
                          "declared ABI and ctx NULL, no context current, does not return "
                          "CUDA_ERROR_INVALID_CONTEXT"),
                "owner_because": [NULL_RIGHT], "sentences": sentences,
                "next": ["Report to NVIDIA with the v2-null arm's trials and their crash "
                         "records.", *nxt], "hypotheses": []}

    bogus = [n for n in BOGUS if supported(n)]
    if not (supported(NULL_RIGHT) and bogus and in_libcuda):
        return {"status": "inconclusive", "owner": None, "owner_because": [],
                "sentences": sentences or ["No trial ran."],
                "next": ["Run more trials of v2-null and v2-bogus: whether the declared ABI "
                         "returns the error with ctx NULL, and a non-NULL handle crashes inside "
                         "libcuda, decides whose fault the crash is.",
                         "Check the driver: cuCtxGetDevice_v2 exists from CUDA 13.0 (driver "
                         "580) on; an older driver makes the v2 arms unsupported.", *nxt],
                "hypotheses": []}

    because = [NULL_RIGHT, *bogus]
    if decision(ONE_ARG) in ("supported", "contradicted"):
        because.append(ONE_ARG)
    # numba as a user runs it, where this run decided it: the release before the fix crashing,
    # the fix alone and the release with it answering.
    numba_said = [n for n, want in ((NUMBA_BEFORE, "contradicted"), (NUMBA_FIX, "supported"),
                                    (NUMBA_AFTER, "supported")) if decision(n) == want]
    because += numba_said
    reproduced = (_crashed_mostly(analysis, "v2-one-arg") and decision(ONE_ARG) == "contradicted"
                  or _crashed_mostly(analysis, "numba-062")
                  and decision(NUMBA_BEFORE) == "contradicted")
    owner = ("the caller's binding, not the driver: cuCtxGetDevice_v2 is CUDA 13.0's "
             "(CUdevice *, CUcontext) entry point, and a caller that binds it with "
             "cuCtxGetDevice's one-argument prototype (numba before 0.63.0, whose ctypes binding "
             "looks each function up as NAME_v2 first, in Driver._find_api; numba-cuda before "
             "0.8.1; the six-line ctypes program) passes whatever its second argument's register "
             "holds as ctx: undefined behaviour of the caller. Called with its declared ABI and "
             "ctx NULL the driver returns CUDA_ERROR_INVALID_CONTEXT; given a non-NULL handle "
             "that is no context it faults inside libcuda, as any API given a bad handle may")
    if decision(ONE_ARG) == "supported":
        sentences.append("The report's exact call did not crash on this machine: its second "
                         "argument's register held nothing the driver read through, so it "
                         "answered as the call with ctx NULL (v2-null); where that register "
                         "holds a non-NULL value, the call is v2-bogus.")
    nxt = ["numba users: numba 0.63.0 or numba-cuda 0.8.1 and later bind cuCtxGetDevice and "
           "cuCtxSynchronize by their exact names (" + UPSTREAM + ").",
           "Other ctypes users of libcuda: look symbols up by exact name and prototype, or "
           "through cuGetProcAddress at the CUDA version of the prototype they declare.", *nxt]
    if not numba_said:
        nxt.append("numba's own arms decided nothing here (numba not importable, or its trials "
                   "split): their outcomes are above.")
    return {"status": "reproduced" if reproduced else "explained", "owner": owner,
            "owner_because": because, "sentences": sentences, "next": nxt,
            "hypotheses": ["What the one-argument call leaves in the second argument's register "
                           "depends on the code that ran before it in the caller (ctypes and "
                           "libffi here, numba's call wrappers in the report): no arm sets it, "
                           "which is why the report's crash is a matter of machine and build.",
                           "The fault address of the bogus-handle arms is the driver reading "
                           "through the handle (0x10) at an offset: read from the fault "
                           "addresses above, not isolated by an arm."]}
