"""Where along a trial the module counts are near a power of two: the strata of the
`concentrated` claims (gpurepro.analyze.claims tests them; this file only does arithmetic).

A host.cc trial's counts move along a straight line in its cycles c (launches): with K modules
held by main (--preload; --prime loaded P first, so P modules had been loaded before the first
cycle) and the workers unloading a fraction u of what they load,

    live(c)  = K + c * (1 - u)          modules loaded at cycle c (loads - unloads)
    loads(c) = (P or K) + c * L / C     modules ever loaded by then, main's included

where C, L and u come from the trial's own final (or crash-time) counters. A stratum is the part
of the cycles [0, C] where a count lies within +-WINDOW in log2 of a power of two (at least
MIN_COUNT: below it every count is near one); a failure is inside it when the count at the
crash is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpurepro.case import Stratum

# +-0.01 in log2 (+-0.7%): the window the hypothesis came from (verdict.POW2_WINDOW).
WINDOW = 0.01
MIN_COUNT = 64


def near_power_of_two(x: float) -> bool:
    return x >= MIN_COUNT and abs(math.log2(x) - round(math.log2(x))) <= WINDOW


def cycles_near(start: float, slope: float, cycles: float) -> float:
    """How many of the cycles [0, cycles] the line start + slope * c spends near a power of two."""
    if cycles <= 0:
        return 0.0
    if slope <= 0:
        return float(cycles) if near_power_of_two(start) else 0.0
    end = start + slope * cycles
    total = 0.0
    j = max(int(math.log2(MIN_COUNT)), math.floor(math.log2(max(start, 1))) - 1)
    while 2.0 ** (j - WINDOW) <= end:
        lo, hi = max(2.0 ** (j - WINDOW), MIN_COUNT), 2.0 ** (j + WINDOW)
        c_lo, c_hi = (lo - start) / slope, (hi - start) / slope
        total += max(0.0, min(c_hi, cycles) - max(c_lo, 0.0))
        j += 1
    return total


def _line(record: Mapping[str, Any], factors: Mapping[str, Any]) -> tuple[dict[str, float], float] | None:
    c = record.get("counters") or {}
    if not all(k in c for k in ("loads", "launches", "unloads")) or not c["launches"]:
        return None  # the reporter's program prints no per-call counters
    held = float(factors.get("preload") or 0)
    primed = float(factors.get("prime") or 0) or held
    loads, cycles, unloads = float(c["loads"]), float(c["launches"]), float(c["unloads"])
    return {"held": held, "primed": primed, "loads": loads, "unloads": unloads}, cycles


def live_near_power_of_two(record: Mapping[str, Any], factors: Mapping[str, Any]) -> tuple[float, bool]:
    line = _line(record, factors)
    if line is None:
        return 0.0, False
    v, cycles = line
    slope = (v["loads"] - v["unloads"]) / cycles
    at_end = v["held"] + v["loads"] - v["unloads"]
    return cycles_near(v["held"], slope, cycles), near_power_of_two(at_end)


def loads_near_power_of_two(record: Mapping[str, Any], factors: Mapping[str, Any]) -> tuple[float, bool]:
    line = _line(record, factors)
    if line is None:
        return 0.0, False
    v, cycles = line
    at_end = v["primed"] + v["loads"]
    return cycles_near(v["primed"], v["loads"] / cycles, cycles), near_power_of_two(at_end)


STRATA: dict[str, Stratum] = {
    "live-near-pow2": live_near_power_of_two,
    "loads-near-pow2": loads_near_power_of_two,
}
