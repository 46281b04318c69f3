"""A result's timed trials as a pyperf suite, beside the document (``<stem>.pyperf.json``).

One pyperf Benchmark per timed arm (named after the arm), one pyperf Run per valid trial that
measured times: the trial's own values (seconds per launch, the mean over ``loops`` launches),
its warm-up values with their loops, and as metadata the loops, the GPU's name and driver, and
the clocks, temperature and power the driver read before and after. So ``python -m pyperf
compare_to A.pyperf.json B.pyperf.json`` compares two runs of a case arm by arm with pyperf's
own significance test, which needs as many values on both sides (equal trials and repetitions).
A document without timed trials gets no suite. The claims on times are the harness's
(analyze/timing.py); the suite is for reading a run the way a pyperf user does.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..model.files import write_atomic
from ..model.outcomes import EVIDENCE
from ..model.result import Result, Trial, as_result

# What other modules use; the rest is this module's own.
__all__ = ["timed_suite", "write_suite"]

SUFFIX = ".pyperf.json"
# Conditions the driver read (observations.conditions.before/after) copied into the metadata.
CONDITIONS = ("sm_clock_mhz", "memory_clock_mhz", "temperature_c", "power_w", "pstate",
              "clock_rate_khz", "memory_clock_rate_khz")


def _positive(values: Any) -> list[float]:
    return [float(v) for v in values or [] if isinstance(v, (int, float))
            and not isinstance(v, bool) and v > 0 and math.isfinite(v)]


def _run_metadata(r: Result, trial: Trial, loops: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": str(trial.arm), "loops": loops, "unit": "second"}
    gpu = r.device.name or r.environment.gpu.name
    if gpu:
        meta["gpu"] = str(gpu)
    driver = r.environment.gpu.driver_version
    if driver:
        meta["gpu_driver"] = str(driver)
    meta["gpurepro_trial"] = int(trial.index or 0)
    # What the driver read of the GPU's conditions (its record's own observations).
    conditions = (trial.record.get("observations") or {}).get("conditions") or {}
    for when in ("before", "after"):
        read = conditions.get(when) or {}
        for key in CONDITIONS:
            value = read.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                meta[f"gpu_{key}_{when}"] = value
    return meta


def timed_suite(doc: Result | Mapping[str, Any]) -> Any | None:
    """The document's timed trials as a pyperf BenchmarkSuite; None where none measured."""
    import pyperf

    r = as_result(doc)
    runs: dict[str, list[Any]] = {}
    for trial in r.trials:
        timing = (trial.record.get("observations") or {}).get("timing")
        if trial.outcome not in EVIDENCE or not isinstance(timing, Mapping):
            continue
        values = _positive(timing.get("values"))
        if not values:
            continue
        loops = int(timing.get("loops") or 1)
        warmups = [(loops, v) for v in _positive(timing.get("warmup_values"))]
        runs.setdefault(str(trial.arm), []).append(pyperf.Run(
            values, warmups=warmups or None, metadata=_run_metadata(r, trial, loops),
            collect_metadata=False))
    if not runs:
        return None
    return pyperf.BenchmarkSuite([pyperf.Benchmark(r) for r in runs.values()])


def write_suite(doc: Result | Mapping[str, Any], stem: Path) -> Path | None:
    """``<stem>.pyperf.json`` from the document's timed trials (replacing any earlier one), or
    no file (and none left from an earlier rendering) where the document has none."""
    path = Path(str(stem) + SUFFIX)
    suite = timed_suite(doc)
    if suite is None:
        path.unlink(missing_ok=True)
        return None
    text = io.StringIO()
    suite.dump(text)
    write_atomic(path, text.getvalue())
    return path
