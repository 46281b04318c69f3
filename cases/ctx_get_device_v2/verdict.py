"""The ctx_get_device_v2 verdict: measurements, and status/owner/next from decided claims.

This module computes no statistics: the comparisons are manifest.py's claims, decided by the
harness (gpurepro.analyze.claims), whose sentences the harness appends. Written here: measurements
(outcomes per arm as counted, where the crashes' PC lay, the numba versions that ran), and the
status, owner and next steps, each resting on decided claims.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from gpurepro.analyze.views import Analysis

REPRODUCED = "v2-one-arg-crashes"
# The driver answers correctly when cuCtxGetDevice_v2 is called with its own ABI.
ABI_RIGHT = ("v2-null-invalid-context", "v2-null-crashes-less")
V1 = ("v1-invalid-context", "v1-crashes-less")

# Driver branches with cuCtxGetDevice_v2 (CUDA 13.0 and later) that this run's machine did not
# have: each is a run of this case on a machine with that driver.
OTHER_BRANCHES = ("580 as filed (580.65.06)", "590 (CUDA 13.1)", "595 (CUDA 13.2)")
UPSTREAM = ("NVIDIA/numba-cuda issue 173 (binding picks `_v2` symbols by name) and PR 185 "
            "(numba-cuda 0.8.1), numba/numba PR 10237 (numba 0.63.0)")


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
    modules = Counter()
    for s in sites:
        modules[f"{s.pc_module}+{s.pc_offset}"] += s.count
    in_libcuda = all((s.pc_module or "").startswith("libcuda") for s in sites)
    where = ", ".join(f"{m} ({n})" for m, n in modules.most_common(4))
    arms = sorted({a for s in sites for a in s.arms})
    return (f"Crash records ({', '.join(arms)}): the faulting PC at {where}"
            + (", inside libcuda in every one." if in_libcuda else ".")), in_libcuda


def _numba(analysis: Analysis) -> list[str]:
    out = []
    for arm in ("numba-builtin", "numba-builtin-fixed", "numba-installed"):
        trials = list(analysis.trials_of(arm))
        if not trials:
            continue
        starts = [e for t in trials for e in [_start(t.record)] if e]
        versions = sorted({f"numba {c.get('numba')}, numba-cuda {c.get('numba_cuda')}, "
                           f"{c.get('implementation')} target, "
                           f"{'cuda.bindings' if c.get('nvidia_binding') else 'ctypes'} binding"
                           for c in starts})
        text = _outcomes(analysis, arm)
        if text:
            out.append(text + (f" ({'; '.join(versions)})" if versions else "")
                       + ": the numba of this machine, not a pinned release.")
    return out


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


def verdict(analysis: Analysis) -> dict[str, Any]:
    decision, supported = analysis.decision, analysis.supported
    device = analysis.device
    on = f" on {device.name}" if device.name else ""
    sentences = [s for s in (_outcomes(analysis, a) for a in analysis.arms) if s]
    sentences = [f"Outcomes per arm{on}: " + "; ".join(sentences) + "."] if sentences else []
    site, in_libcuda = _crash_site(analysis)
    if site:
        sentences.append(site)
    sentences += _numba(analysis)
    nxt = [f"Run this case on driver branch {b}; not runnable on this machine." for b in
           OTHER_BRANCHES]

    if decision(REPRODUCED) is None or not supported(REPRODUCED):
        return {"status": "not_reproduced", "owner": None, "owner_because": [],
                "sentences": sentences or ["No trial of the baseline ran."],
                "next": ["Check the driver: cuCtxGetDevice_v2 exists from CUDA 13.0 (driver 580) "
                         "on; an older driver makes the v2 arms unsupported.", *nxt],
                "hypotheses": []}

    abi_right = [n for n in ABI_RIGHT if decision(n) is not None]
    v1 = [n for n in V1 if decision(n) is not None]
    if abi_right and supported(*abi_right) and in_libcuda:
        because = [REPRODUCED, *abi_right, *(n for n in v1 if supported(n))]
        owner = ("the caller: cuCtxGetDevice_v2 is CUDA 13.0's (CUdevice *, CUcontext) entry "
                 "point, and a caller using cuCtxGetDevice's one-argument prototype (numba's "
                 "ctypes binding before 0.63.0, numba-cuda before 0.8.1, the six-line ctypes "
                 "program) leaves ctx to whatever the register holds; called with its own ABI "
                 "the driver returns CUDA_ERROR_INVALID_CONTEXT")
        nxt = ["numba users: numba 0.63.0 or numba-cuda 0.8.1 and later bind cuCtxGetDevice and "
               "cuCtxSynchronize by their exact names (" + UPSTREAM + ").",
               "Other ctypes users of libcuda: look symbols up by exact name and prototype, or "
               "through cuGetProcAddress at the CUDA version of the prototype they declare.",
               *nxt]
        return {"status": "reproduced", "owner": owner, "owner_because": because,
                "sentences": sentences, "next": nxt,
                "hypotheses": ["The fault address is the driver reading through the ctx it was "
                               "given (v2-bogus makes that ctx 0x10); the arms do not show which "
                               "register value the one-argument call passes."]}
    driver_fault = [n for n in ABI_RIGHT if decision(n) == "contradicted"]
    if driver_fault and in_libcuda:
        return {"status": "reproduced",
                "owner": ("the CUDA driver (branch 580): cuCtxGetDevice_v2 called with its own "
                          "ABI and ctx NULL, no context current, does not return "
                          "CUDA_ERROR_INVALID_CONTEXT"),
                "owner_because": [REPRODUCED, *driver_fault], "sentences": sentences,
                "next": ["Report to NVIDIA with the crash record (PC in libcuda) and the "
                         "v2-null arm's trials.", *nxt], "hypotheses": []}
    return {"status": "reproduced", "owner": None, "owner_because": [], "sentences": sentences,
            "next": ["Run more trials of v2-null: whether the two-argument call returns the "
                     "error decides whose fault the crash is.", *nxt], "hypotheses": []}
