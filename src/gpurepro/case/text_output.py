"""A stock parser for a program that prints text, not the JSON-lines protocol (a reporter's
program, kept as filed): one regular expression per line it can end with.

    parsers={"seed": TextOutput(
        OutputLine(r"delay_cta=(?P<delay_cta>\\d+) .* => (?P<message>.*)", call="cudaDeviceSynchronize"),
        OutputLine(r"launch failed", error="launch_failed_unreported", call="cudaLaunchKernelEx",
                   launches=0))}

A line that matches (the whole line, stripped) is the program's final record. Its named groups
are observations (digits as integers); a group ``message`` is a ``cudaGetErrorString`` text,
mapped back to its ``cudaError_t`` name (gpurepro.case.cuda_errors), which makes the record
``ok``, ``unsupported`` (the device cannot run the build) or ``cuda_error``; ``error`` names the
error of a line that prints none. JSON event lines are kept as they are: the instrument wrapper
(gpurepro.case.instruments) interleaves them. Its ``instrument`` record is folded into the
program's final record, and the program's own final wins over one the wrapper synthesised.
Standard library only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .cuda_errors import UNSUPPORTED, error_name

# What other modules use; the rest is this module's own.
__all__ = ["OutputLine", "TextOutput"]


@dataclass(frozen=True)
class OutputLine:
    """One final line a program prints. ``launches``: the exposure counter's value when it is
    printed (``counter`` of the ``TextOutput``); ``call``: the CUDA call its status is of."""

    pattern: str
    call: str = ""
    error: str = ""
    launches: int = 1

    def final(self, m: re.Match[str], counter: str) -> dict[str, Any]:
        groups = {k: v.strip() for k, v in m.groupdict().items() if v is not None}
        observations: dict[str, Any] = {k: int(v) if v.isdigit() else v for k, v in groups.items()}
        name = self.error or error_name(groups.get("message", ""))
        final: dict[str, Any] = {"event": "final", "counters": {counter: self.launches},
                                 "observations": observations}
        if name == "cudaSuccess":
            return {**final, "status": "ok", "errors": {}}
        if name in UNSUPPORTED:  # no kernel ran: nothing was exposed
            return {**final, "status": "unsupported", "reason": name, "counters": {counter: 0}}
        return {**final, "status": "cuda_error", "error": name, "call": self.call,
                "errors": {name: 1}}


class TextOutput:
    """Protocol events for a trial's standard output lines, from its ``OutputLine`` patterns."""

    def __init__(self, *lines: OutputLine, counter: str = "launches") -> None:
        self.lines = tuple((re.compile(line.pattern), line) for line in lines)
        self.counter = counter

    def __call__(self, lines: list[str]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        instrument: dict[str, Any] | None = None
        own: dict[str, Any] | None = None
        for raw in lines:
            line = raw.strip()
            event = _json_event(line)
            if event is not None:
                if event["event"] == "instrument":
                    instrument = {k: v for k, v in event.items() if k != "event"}
                events.append(event)
                continue
            for pattern, spec in self.lines:
                if m := pattern.fullmatch(line):
                    own = spec.final(m, self.counter)
                    break
        if own is None:
            return events
        if instrument is not None:
            own["observations"]["instrument"] = instrument
        return [e for e in events if e["event"] != "final"] + [own]


def _json_event(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and "event" in obj else None
