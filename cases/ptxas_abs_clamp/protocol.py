"""The trial protocol of native/README.md, for a Python driver: JSON lines on standard output.

    {"event": "start", "driver": "python", "pid": ..., "config": {...}}
    {"event": "heartbeat", "t": ..., "counters": {...}, "errors": {}}
    {"event": "final", "status": "ok", "t": ..., "counters": {...}, "errors": {}, "check": {...}}

``final.status`` and the exit status follow the native drivers: ok (0), cuda_error with ``error``
and ``call`` (1), unsupported / no_driver with ``reason`` (3); 2 is a usage error, which prints
no final record. ``check`` is the output's comparison with the host's reference (``Check``).
Standard library only; nothing here knows the case.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

EXIT = {"ok": 0, "cuda_error": 1, "usage": 2, "unsupported": 3, "no_driver": 3}
FIRST_MISMATCHES = 8


@dataclass
class Check:
    """An output compared element by element with its reference: ``exact`` for integers.

    ``first`` keeps the first FIRST_MISMATCHES mismatches as [index, got, expected]."""

    kind: str = "exact"
    n: int = 0
    mismatches: int = 0
    first: list[list[Any]] = field(default_factory=list)

    def compare(self, got: Any, expected: Any, offset: int = 0) -> list[int]:
        """Compare two sequences of one length; returns the indices (plus ``offset``) that
        differ."""
        if len(got) != len(expected):
            raise ValueError(f"output has {len(got)} elements, the reference {len(expected)}")
        bad = [i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e]
        self.n += len(expected)
        self.mismatches += len(bad)
        for i in bad[: max(0, FIRST_MISMATCHES - len(self.first))]:
            self.first.append([i + offset, got[i], expected[i]])
        return [i + offset for i in bad]

    def record(self) -> dict[str, Any]:
        return {"kind": self.kind, "n": self.n, "mismatches": self.mismatches,
                "first": [list(x) for x in self.first]}


class Events:
    """Writes the protocol's lines; the first ``final`` wins, and ``finish`` returns the exit
    status that goes with it."""

    def __init__(self, stream: Any = None, driver: str = "python"):
        self.stream = stream if stream is not None else sys.stdout
        self.driver = driver
        self.t0 = time.monotonic()
        self.counters: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.final: dict[str, Any] | None = None

    def _emit(self, obj: dict[str, Any]) -> None:
        self.stream.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.stream.flush()

    def _t(self) -> float:
        return round(time.monotonic() - self.t0, 6)

    def start(self, config: dict[str, Any]) -> None:
        self._emit({"event": "start", "driver": self.driver, "pid": os.getpid(), "config": config})

    def count(self, name: str, by: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + by

    def heartbeat(self) -> None:
        self._emit({"event": "heartbeat", "t": self._t(), "counters": dict(self.counters),
                    "errors": dict(self.errors)})

    def stop(self, status: str, **fields: Any) -> None:
        """Decide the final status (the first call wins): ``error``/``call`` for cuda_error,
        ``reason`` for unsupported and no_driver."""
        if self.final is None:
            if status not in EXIT or status == "usage":
                raise ValueError(f"unknown final status {status!r}")
            if status == "cuda_error":
                name = str(fields.get("error"))
                self.errors[name] = self.errors.get(name, 0) + 1
            self.final = {"status": status, **{k: v for k, v in fields.items() if v is not None}}

    def finish(self, check: Check | None = None, observations: dict[str, Any] | None = None) -> int:
        """Write the final record (status ok unless ``stop`` said otherwise); the exit status."""
        final = self.final or {"status": "ok"}
        obj: dict[str, Any] = {"event": "final", **final, "t": self._t(),
                               "counters": dict(self.counters), "errors": dict(self.errors)}
        if check is not None:
            obj["check"] = check.record()
        if observations:
            obj["observations"] = observations
        self._emit(obj)
        return EXIT[final["status"]]
