"""Whether two timed runs measured under the same GPU conditions, within stated tolerances.

A time per launch depends on the clocks the GPU ran at and on how hot it was: a run on a GPU
held at a lower clock, or throttling, is slower for that reason alone, and a comparison of its
times with another run's would blame the toolchain. Each timed trial's driver reads the clocks,
temperature and power before and after its repetitions (``observations.conditions``; read, never
set). The reading *after* is the GPU under the trial's own load (the one before is often the
idle clock), so a run's conditions are the medians of its timed trials' readings after. Two runs
are comparable where each condition's medians differ by at most its tolerance below; power is
recorded but not compared (it follows the kernel as much as the GPU).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ..model.result import Result, as_result

# condition -> (tolerance, "relative" to the first run's median, or "absolute" in its unit).
# SM clock 3%: the H200's clock under these kernels read 1980 MHz in every timed trial of the
# committed FA3 runs, so 3% (about 60 MHz, four boost steps) is a different clock state, not
# noise. Memory clock 2%: fixed per memory type. Temperature 10 degrees C: the committed runs'
# medians lie within 5 of each other; beyond 10 the boost behaviour can change.
TOLERANCES: dict[str, tuple[float, str]] = {
    "sm_clock_mhz": (0.03, "relative"),
    "memory_clock_mhz": (0.02, "relative"),
    "temperature_c": (10.0, "absolute"),
}


def run_conditions(doc: Result | Mapping[str, Any]) -> dict[str, float]:
    """A run's GPU conditions: per condition, the median of its trials' readings after their
    repetitions (as the drivers' records observed them); empty for a run whose trials read
    none (an untimed case)."""
    read: dict[str, list[float]] = {}
    for trial in as_result(doc).trials:
        after = ((trial.record.get("observations") or {}).get("conditions") or {}).get("after") or {}
        for key in TOLERANCES:
            value = after.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                read.setdefault(key, []).append(float(value))
    return {key: statistics.median(values) for key, values in read.items()}


def differences(results: Sequence[Result], labels: Sequence[str]
                ) -> tuple[list[dict[str, Any]], list[str]]:
    """Each later run's conditions against the first's: rows (label, condition, first, later,
    tolerance, within), and one sentence per condition beyond its tolerance."""
    first = run_conditions(results[0])
    rows, beyond = [], []
    for label, r in zip(labels[1:], results[1:], strict=True):
        mine = run_conditions(r)
        for key, (tolerance, how) in TOLERANCES.items():
            if key not in first or key not in mine:
                continue
            gap = abs(mine[key] - first[key])
            allowed = tolerance * abs(first[key]) if how == "relative" else tolerance
            within = gap <= allowed
            rows.append({"run": label, "condition": key, "first": first[key], "later": mine[key],
                         "tolerance": tolerance, "tolerance_kind": how, "within": within})
            if not within:
                stated = f"{tolerance:.0%}" if how == "relative" else f"{tolerance:g}"
                beyond.append(f"run {label}'s {key} {mine[key]:g} against {labels[0]}'s "
                              f"{first[key]:g} (median of the trials' readings after their "
                              f"repetitions; tolerance {stated})")
    return rows, beyond
