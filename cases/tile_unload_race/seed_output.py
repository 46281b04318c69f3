"""Read seed/repro.cc's text output as protocol events (it prints no JSON; it stays as filed).

repro.cc prints, once a second, "  launches=N loads=N unloads=N", and "SURVIVED Ns" when its
time is up. The counters therefore lag a crash by up to one second: exposure at a crash of
the as-filed arm is the last heartbeat's.
"""

from __future__ import annotations

import re
from typing import Any

_HEARTBEAT = re.compile(r"launches=(\d+)\s+loads=(\d+)\s+unloads=(\d+)")
_SURVIVED = re.compile(r"^SURVIVED (\d+)s")


def parse(lines: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    counters: dict[str, int] = {}
    for n, line in enumerate(lines):
        if m := _HEARTBEAT.search(line):
            counters = {"launches": int(m[1]), "loads": int(m[2]), "unloads": int(m[3])}
            events.append({"event": "heartbeat", "t": float(n), "counters": dict(counters)})
        elif m := _SURVIVED.match(line.strip()):
            events.append({"event": "final", "status": "ok", "t": float(m[1]), "counters": dict(counters)})
    return events
