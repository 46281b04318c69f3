"""Measurements a case's verdict function states beside its decided claims: what the trials
showed that no claim tests (how each arm's trials ended, where the crashes' PC and fault
address lay, what a trial's driver said it ran). Sentences from counts, no statistics; the
claims are the harness's (gpurepro.analyze.claims). Standard library only.

    from gpurepro.case import measures

    sentences = measures.outcomes_per_arm(analysis)     # "Outcomes per arm on <GPU>: ..."
    crashes, in_libcuda = measures.crash_sites(analysis)
    config = measures.start_config(trial.record)        # the driver's start event's config
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.result import Analysis

# Outcomes whose detail names what ended the trial (a signal, a CUDA error): counted apart.
NAMED = ("crashed", "cuda_error")


def outcomes(analysis: Analysis, arm: str, named: tuple[str, ...] = NAMED) -> str | None:
    """``arm: cuda_error (CUDA_ERROR_INVALID_CONTEXT) 12, survived 3``, the most frequent first
    (the ``named`` outcomes with their detail); None for an arm without trials."""
    a = analysis.arms.get(arm)
    if a is None or not a.n:
        return None
    counts = Counter(f"{t.outcome} ({t.detail})" if t.outcome in named else t.outcome
                     for t in analysis.trials_of(arm))
    return f"{arm}: " + ", ".join(f"{k} {v}" for k, v in counts.most_common())


def outcomes_per_arm(analysis: Analysis, named: tuple[str, ...] = NAMED) -> list[str]:
    """One sentence with every arm's ``outcomes``, on the run's device; none without trials."""
    per_arm = [s for s in (outcomes(analysis, a, named) for a in analysis.arms) if s]
    on = f" on {analysis.device.name}" if analysis.device.name else ""
    return [f"Outcomes per arm{on}: " + "; ".join(per_arm) + "."] if per_arm else []


def mostly(analysis: Analysis, arm: str, outcome: str) -> bool:
    """Whether more than half of the arm's trials (of any outcome) ended as ``outcome``."""
    a = analysis.arms.get(arm)
    return a is not None and a.n > 0 and 2 * sum(1 for _ in analysis.trials_of(arm, outcome)) > a.n


def crash_sites(analysis: Analysis) -> tuple[list[str], bool]:
    """Where the crash records put the faulting PC (module + offset, the four most frequent)
    and, per arm, the fault addresses (the three most frequent); and whether every record's PC
    lay inside libcuda (False without a record)."""
    sites = [s for s in analysis.crash_sites if s.pc_module]
    in_libcuda = bool(sites) and all(str(s.pc_module).startswith("libcuda") for s in sites)
    out = []
    if sites:
        pcs: Counter[str] = Counter()
        for s in sites:
            pcs[f"{s.pc_module}+{s.pc_offset}"] += s.count
        arms = ", ".join(sorted({a for s in sites for a in s.arms}))
        out.append(f"Crash records ({arms}): the faulting PC at "
                   + ", ".join(f"{m} ({n})" for m, n in pcs.most_common(4))
                   + (", inside libcuda in every one." if in_libcuda else "."))
    faults: dict[str, Counter[str]] = {}
    for t in analysis.trials:
        crash = t.record.get("crash") or {}
        if t.outcome == "crashed" and crash.get("fault_address"):
            faults.setdefault(t.arm, Counter())[str(crash["fault_address"])] += 1
    if faults:
        out.append("Fault addresses: " + "; ".join(
            f"{arm} " + ", ".join(f"{a} ({n})" for a, n in c.most_common(3))
            for arm, c in sorted(faults.items())) + ".")
    return out, in_libcuda


def start_config(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The config of the start event a trial's driver wrote (from its kept standard output);
    None where none was kept."""
    for line in str(record.get("stdout_tail") or "").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("event") == "start":
            return dict(ev.get("config") or {})
    return None
