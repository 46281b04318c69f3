"""Progress of a run: per-arm outcome counts as trials finish.

With rich and a terminal: a live table. Otherwise (a GPU node's log, CI, a pipe): one plain
line per finished trial, which is also what survives in a truncated log tail.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter, defaultdict
from typing import Any

from .plan import Plan, PlannedTrial

try:  # optional: the run stage must work with the standard library alone
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table
except ImportError:  # pragma: no cover - exercised on bare GPU nodes
    Console = Live = Table = None  # type: ignore[assignment,misc]


class Progress:
    def __init__(self, plan: Plan, done: list[dict[str, Any]], stream=None, live: bool | None = None):
        self.plan = plan
        self.total = len(plan.order)
        self.stream = stream or sys.stdout
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self.skips: Counter[str] = Counter()
        self.finished_n = 0
        for r in done:
            self.counts[r["arm"]][r["outcome"]] += 1
            self.finished_n += 1
        self.lock = threading.Lock()
        want_live = self.stream.isatty() if live is None else live
        self.live = None
        if want_live and Live is not None:
            self.live = Live(self._table(), console=Console(file=self.stream),
                             refresh_per_second=4, transient=False)

    def __enter__(self) -> Progress:
        if self.live is not None:
            self.live.__enter__()
        elif self.finished_n:
            self._say(f"resuming: {self.finished_n} of {self.total} trials already journaled")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def _say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _table(self):
        table = Table(title=f"{self.plan.case}: {self.finished_n}/{self.total} trials")
        table.add_column("arm")
        outcomes = sorted({o for c in self.counts.values() for o in c})
        for o in outcomes:
            table.add_column(o, justify="right")
        table.add_column("planned", justify="right")
        for arm, n in self.plan.trials_per_arm.items():
            row = [arm] + [str(self.counts[arm].get(o, 0)) for o in outcomes] + [str(n)]
            table.add_row(*row)
        return table

    def skipped(self, planned: PlannedTrial) -> None:
        with self.lock:
            self.skips[planned.arm] += 1
            self.finished_n += 1

    def finished(self, rec: dict[str, Any]) -> None:
        with self.lock:
            self.counts[rec["arm"]][rec["outcome"]] += 1
            self.finished_n += 1
            if self.live is not None:
                self.live.update(self._table())
                return
            counters = " ".join(f"{k}={v}" for k, v in sorted(rec.get("counters", {}).items()))
            gpu = f" gpu{rec['gpu']}" if rec.get("gpu") is not None else ""
            self._say(
                f"[{self.finished_n:>4}/{self.total}] {rec['arm']}#{rec['rep']}{gpu}: "
                f"{rec['outcome']} ({rec['detail']}) {rec['duration_s']:.1f}s {counters}".rstrip()
            )
