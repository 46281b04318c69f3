"""A reporter's program that prints its counters as text (``launches=812 loads=812``) instead
of the harness's JSON lines, read as protocol events (``Case.parsers``) so the program stays
exactly as filed. Standard library only.

    parsers={"seed": printed.counters_parser(r"launches=\\d+", r"^SURVIVED (\\d+)s")}

Every line that matches ``heartbeat`` is a heartbeat whose counters are the line's ``name=N``
pairs, in the order printed, at t = the line's number (such a program prints once a second, so
its counters lag a crash by up to a second); the first line that matches ``survived`` (stripped;
its first group the seconds it ran) is the final ``ok`` record with the last counters. A crash
leaves no such line: no final event, and the signal decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["counters_parser"]

_PAIR = re.compile(r"(\w+)=(\d+)")


def counters_parser(heartbeat: str, survived: str) -> Callable[[list[str]], list[dict[str, Any]]]:
    """The parser of such a program's output (see the module's docstring)."""
    beat, done = re.compile(heartbeat), re.compile(survived)

    def parse(lines: list[str]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        counters: dict[str, int] = {}
        for n, line in enumerate(lines):
            if beat.search(line):
                counters = {k: int(v) for k, v in _PAIR.findall(line)}
                events.append({"event": "heartbeat", "t": float(n), "counters": dict(counters)})
            elif m := done.match(line.strip()):
                events.append({"event": "final", "status": "ok", "t": float(m[1]),
                               "counters": dict(counters)})
        return events
    return parse
