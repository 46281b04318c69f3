"""Journal headers for tests of what reads one (deciding claims, the allocation, progress)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpurepro.model.journal import RunHeader


def run_header(arms: Iterable[str] | Mapping[str, Any], options: Mapping[str, Any] | None = None,
               **fields: Any) -> RunHeader:
    """The header of a run of ``arms`` with ``options`` (a design, a declaration, families...),
    the rest what the smallest journal holds: a one-second budget, one job, an empty order."""
    arm_factors = dict(arms) if isinstance(arms, Mapping) else {a: {} for a in arms}
    return RunHeader.from_json({
        "case": "test",
        "plan": {"case": "test", "seed": 0, "arms": arm_factors, "trials_per_arm": {},
                 "order": []},
        "options": {"budget": {"duration_s": 1.0, "max_exposure": 0, "timeout_s": 10.0},
                    "jobs": 1, **(options or {})},
        **fields})
