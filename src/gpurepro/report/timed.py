"""What a timed case's comment says about times: the ratio of each arm to the baseline with
its interval, which arms the decided claims found slower, faster or the same and by how much,
and, where a bisection of the case is committed beside the document, its boundaries and the
CPU-side facts that changed at each.

Everything comes from the documents: the ratios from the trials' times (gpurepro.analyze.timing,
the numbers a timed claim is decided on), the decisions from the claims, the boundaries from the
bisection document. Strings from a document go through ``tables.escape`` or ``tables.code``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analyze.timing import TimedTest, arm_times, evidence_numbers, paired_evidence
from ..case.model import TIMED_KINDS
from ..model.result import ClaimDecision, Result, as_result
from .tables import code, escape

# What other modules use; the rest is this module's own.
__all__ = [
    "arms_rows", "bisection_bullet", "clocks_section", "head_bullet", "is_timed", "json",
    "ratio_to_baseline"
]

# Arms named in the head's timing bullet before the rest are counted ("and N more").
ARMS_IN_BULLET = 6


def is_timed(doc: Result | Mapping[str, Any]) -> bool:
    """Whether the run's claims are on times (a claim of a timed kind)."""
    if isinstance(doc, Result):
        return any(c.kind in TIMED_KINDS for c in doc.claims)
    return any(c.get("kind") in TIMED_KINDS for c in doc.get("claims") or [])


def _ratio(numbers: Mapping[str, Any]) -> str:
    lo, hi = numbers["ratio_ci"]
    return f"{numbers['ratio']:.3f}× ({lo:.3f}–{hi:.3f})"


def ratio_to_baseline(doc: Result | Mapping[str, Any], arm: str) -> Mapping[str, Any] | None:
    """The ratio of an arm's trial times to the baseline's (geometric means, Welch 95% CI; for
    a run that journaled its timed test, the blocks' paired ratio with its floored interval),
    None where either has fewer than two timed trials (blocks): the timing analysis's numbers."""
    r = as_result(doc)
    trials = [t.record for t in r.trials]  # the drivers' records, with their times
    test = TimedTest.from_json(r.options.timing)
    if test is not None:
        numbers = paired_evidence("same", 0.0, trials, arm, r.case.baseline, test)[3]
        return numbers if "ratio" in numbers else None
    mine, ref = arm_times(trials, arm), arm_times(trials, r.case.baseline)
    numbers = evidence_numbers("same", 0.0, mine, ref)[3]
    return numbers if "ratio" in numbers else None


def arms_rows(doc: Result | Mapping[str, Any], arms: Sequence[str]
              ) -> tuple[list[str], list[list[str]]]:
    """The arms table's timing columns: the median time per launch of the arm's trials, its
    ratio to the baseline, and the timed claim on the arm: the one against the baseline, else
    the first against another arm, with its ratio to that arm (a control against its own
    reference says what the baseline's ratio does not)."""
    r = as_result(doc)
    base = r.case.baseline
    on_arm: dict[str, ClaimDecision] = {}
    for c in r.claims:
        if c.kind in TIMED_KINDS and c.arm is not None and (c.arm not in on_arm
                                                            or c.reference == base):
            on_arm[c.arm] = c
    trials = [t.record for t in r.trials]
    rows = []
    for arm in arms:
        times = arm_times(trials, arm)
        median = f"{statistics.median(times) * 1e6:.1f} µs" if times else "–"
        numbers = ratio_to_baseline(r, arm) if arm != base else None
        ratio = "(baseline)" if arm == base else _ratio(numbers) if numbers else "–"
        rows.append([median, ratio, _claim_cell(on_arm.get(arm), base)])
    return (["time per launch (median of trials)", f"ratio to {code(base)} (95% CI)", "claim"],
            rows)


def _claim_cell(claim: ClaimDecision | None, base: str) -> str:
    if not claim:
        return "–"
    cell = f"{code(claim.name)} {escape(claim.decision)}"
    if claim.reference != base and "ratio" in claim.numbers:
        cell += f": {_ratio(claim.numbers)} {code(claim.reference)}"
    return cell


def head_bullet(doc: Result | Mapping[str, Any]) -> str | None:
    """The decided timed claims by kind, each arm with its ratio to its reference: which arms
    are slower, by how much, and which are the same within the margin."""
    groups: dict[tuple[str, str, float], list[str]] = {}
    for c in as_result(doc).claims:
        if c.kind not in TIMED_KINDS or c.decision != "supported":
            continue
        if "ratio" not in c.numbers:
            continue
        groups.setdefault((str(c.kind), str(c.reference), float(c.margin or 0)), []).append(
            f"{code(c.arm)} {_ratio(c.numbers)}")
    if not groups:
        return None
    words = {"slower": "slower than {ref} by more than {m}", "faster": "faster than {ref} by more "
             "than {m}", "same": "the same as {ref} within {m}"}
    parts = []
    for (kind, ref, margin), arms in groups.items():
        shown = arms[:ARMS_IN_BULLET] + ([f"and {len(arms) - ARMS_IN_BULLET} more"]
                                         if len(arms) > ARMS_IN_BULLET else [])
        parts.append(words[kind].format(ref=code(ref), m=f"{margin:.0%}") + ": " + ", ".join(shown))
    return ("**Times** (ratio of geometric means per launch, 95% CI, decided claims): "
            + "; ".join(parts) + ".")


def bisection_beside(case: str, path: Path) -> tuple[Path, Mapping[str, Any]] | None:
    """The newest bisection document of the case committed beside ``path`` whose GPU stage
    ran (a sweep document, as read)."""
    found = []
    for p in sorted(path.parent.glob("bisect_*.json")) if path.parent.is_dir() else []:
        try:
            b = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if (b.get("case") or {}).get("name") == case and (b.get("gpu") or {}).get(
                "status") == "ran" and b.get("boundaries"):
            found.append((str(b.get("created_at") or ""), p, b))
    if not found:
        return None
    _, p, b = max(found, key=lambda x: (x[0], x[1].name))
    return p, b


def _changes(sass: Mapping[str, Any]) -> int:
    return sum(len(d.get("changes") or []) for d in (sass.get("kernels") or {}).values())


def bisection_bullet(doc: Result | Mapping[str, Any], path: Path) -> str | None:
    """The committed bisection's boundaries, each with the watched SASS facts that changed
    there (the CPU-side cause where one did; where none did, the cause is not isolated)."""
    found = bisection_beside(as_result(doc).case.name, path)
    if found is None:
        return None
    p, b = found
    pinned = b["boundaries"].get("pinned") or []
    ran = sum(1 for r in b.get("runs") or [] if r.get("status") == "ran" and "same_as_point" not in r)
    parts = []
    for x in pinned:
        watched = x["sass"].get("watched") or []
        facts = "; ".join(f"{w['fact']} {w['before']} → {w['after']}" for w in watched)
        parts.append(escape(f"{x['between'][0]} → {x['between'][1]} ({x['classes'][0]} → "
                            f"{x['classes'][1]}; ") + (escape(f"watched SASS: {facts})") if facts else
                     escape(f"no watched SASS fact changed, {_changes(x['sass'])} instruction "
                            f"change(s))")))
    if not parts:
        return (f"**Bisection** ({code(p.name)}, {len(b['releases'])} releases, {ran} run): "
                "no boundary.")
    cause = ("" if all(x["sass"].get("watched") for x in pinned) else
             " Where no watched fact changed, what in the SASS makes the difference is a "
             "hypothesis no arm isolates.")
    return (f"**Bisection** ({code(p.name)}, {len(b['releases'])} releases, {ran} run on the "
            f"GPU): boundaries " + ", ".join(parts) + "." + cause)


# NVML's clock event ("throttle") reasons, the bits a driver read reports (nvmlClocksEventReasons).
CLOCK_REASONS = {0x1: "GPU idle", 0x2: "application clocks setting", 0x4: "software power cap",
                 0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal slowdown",
                 0x40: "hardware thermal slowdown", 0x80: "hardware power brake",
                 0x100: "display clock setting"}
# How to hold the clocks fixed, for a user with root on the GPU's host (docs/benchmarks.md).
LOCK_ADVICE = (
    "To hold them fixed where you can (root on the GPU's host, not in most containers or cloud "
    "instances): `nvidia-smi -pm 1`, then `nvidia-smi --lock-gpu-clocks=F,F` at a supported SM "
    "clock F at or below the one read here (`nvidia-smi -q -d SUPPORTED_CLOCKS` lists them; "
    "below the boost clock, power and heat are less likely to pull it down) and, where the GPU "
    "supports it, `--lock-memory-clocks=M,M`; run the case; then `nvidia-smi "
    "--reset-gpu-clocks` (and `--reset-memory-clocks`). A locked clock reads the same before and "
    "after every trial; `compare` refuses timed runs whose clocks differ beyond its tolerance.")


def _reasons(value: Any) -> list[str]:
    if not isinstance(value, int) or isinstance(value, bool):
        return []
    named = [name for bit, name in CLOCK_REASONS.items() if value & bit]
    rest = value & ~sum(CLOCK_REASONS)
    return named + ([f"0x{rest:x}"] if rest else [])


def _spread(values: list[float], unit: str) -> str:
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return (f"{med:g} {unit}" + ("" if lo == hi else f" (min–max {lo:g}–{hi:g})"))


def clocks_section(doc: Result | Mapping[str, Any]) -> list[str]:
    """A timed run's GPU clocks as its trials read them: read, never set; the medians before
    and after the repetitions, the clock event reasons after, the application clocks, and how
    to lock the clocks where a user can. Nothing for an untimed run or one that read none."""
    r = as_result(doc)
    if not is_timed(r):
        return []
    before: dict[str, list[float]] = {}
    after: dict[str, list[float]] = {}
    reasons: dict[str, int] = {}
    timed = 0
    for t in r.trials:
        # What the driver read of the GPU's conditions (its record's own observations).
        read = (t.record.get("observations") or {}).get("conditions") or {}
        if not read:
            continue
        timed += 1
        for when, into in (("before", before), ("after", after)):
            for key in ("sm_clock_mhz", "memory_clock_mhz", "temperature_c"):
                value = (read.get(when) or {}).get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    into.setdefault(key, []).append(float(value))
        for name in _reasons((read.get("after") or {}).get("clocks_event_reasons")) or ["none"]:
            reasons[name] = reasons.get(name, 0) + 1
    out = ["### GPU clocks\n"]
    if not timed:
        return out + ["The GPU's clocks were neither set nor read in this run's trials. "
                      + escape(LOCK_ADVICE, "prose") + "\n"]
    parts = []
    for key, what, unit in (("sm_clock_mhz", "SM clock", "MHz"),
                            ("memory_clock_mhz", "memory clock", "MHz"),
                            ("temperature_c", "temperature", "°C")):
        if key in after:
            parts.append(f"{what} {_spread(after[key], unit)} after"
                         + (f", {_spread(before[key], unit)} before" if key in before else ""))
    listed = (r.environment.conditions or {}).get("gpus")
    gpus = listed if isinstance(listed, list) else []
    app = [f"{g.get('application_clock_graphics_mhz')}/{g.get('application_clock_memory_mhz')} MHz"
           for g in gpus if isinstance(g, Mapping) and g.get("application_clock_graphics_mhz")]
    text = (f"The GPU's clocks were read, not set: each of the {timed} timed trials read them "
            f"before and after its repetitions (medians over the trials: "
            + "; ".join(parts) + "). Clock event reasons after the repetitions: "
            + ", ".join(f"{name} in {n}" for name, n in sorted(reasons.items())) + "."
            + (f" Application clocks (SM/memory) as the run began: {', '.join(app)}." if app else "")
            + " " + LOCK_ADVICE)
    return out + [escape(text, "prose") + "\n"]
