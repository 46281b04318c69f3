"""Per arm, the seconds to failure of its failed trials as a pyperf suite."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..run.atomic import atomic_path


def pyperf_suite(doc: Mapping[str, Any], path: Path) -> bool:
    """Per arm, the seconds to failure of its failed trials, as a pyperf suite
    (`python -m pyperf stats|compare_to` read it). Survivors are left out: their durations are
    the budget, not a measurement of the bug, and mixing the two is not one distribution."""
    import pyperf

    failure = set(doc["case"]["failure_outcomes"])
    benchmarks = []
    for arm in doc["summary"]:
        durations = [t["duration_s"] for t in doc["trials"]
                     if t["arm"] == arm and t["outcome"] in failure and t["duration_s"] > 0]
        if not durations:
            continue
        name = f"{doc['case']['name']}/{arm}/seconds-to-failure"
        runs = [pyperf.Run([d], metadata={"name": name, "unit": "second"}, collect_metadata=False)
                for d in durations]
        benchmarks.append(pyperf.Benchmark(runs))
    if not benchmarks:
        return False
    with atomic_path(path) as tmp:  # whole or not at all
        pyperf.BenchmarkSuite(benchmarks).dump(str(tmp))
    return True
