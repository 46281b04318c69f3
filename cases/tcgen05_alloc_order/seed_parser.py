"""Turn the reporter's text output (seed/repro.cu) into native/README.md protocol events.

The seed prints one of two lines:
    delay_cta=1 spin=5000 mode=0 => unspecified launch failure     (cudaGetErrorString of the sync)
    launch failed                                                  (cudaLaunchKernelEx failed; exit 2)
The harness classifies by cudaError_t *names*: the message is mapped back to its name
(gpurepro.case.cuda_errors). The instrument wrapper (gpurepro.case.instruments) may interleave JSON
lines ({"event": "instrument", ...} and, when the tool is missing or the debugger saw a CUDA
exception, a "final"); those are kept, an instrument record is folded into the final record's
observations, and the seed's own line wins over a wrapper's final. Standard library only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gpurepro.case.cuda_errors import UNSUPPORTED, error_name

# What "launch failed" becomes: the seed discards the cudaLaunchKernelEx status.
LAUNCH_FAILED = "launch_failed_unreported"

_RESULT = re.compile(r"^delay_cta=(\d+) spin=(\d+) mode=(\d+) => (.*)$")


def _json_event(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and "event" in obj else None


def parse(lines: list[str]) -> list[dict[str, Any]]:
    """Protocol events for one trial's stdout lines (see module docstring)."""
    events: list[dict[str, Any]] = []
    instrument: dict[str, Any] | None = None
    seed_final: dict[str, Any] | None = None
    for raw in lines:
        line = raw.rstrip("\r\n").strip()
        ev = _json_event(line)
        if ev is not None:
            if ev.get("event") == "instrument":
                instrument = {k: v for k, v in ev.items() if k != "event"}
            events.append(ev)
            continue
        m = _RESULT.match(line)
        if m:
            dc, sp, md, message = int(m[1]), int(m[2]), int(m[3]), m[4].strip()
            name = error_name(message)
            final: dict[str, Any] = {
                "event": "final",
                "counters": {"launches": 1},
                "observations": {"delay_cta": dc, "spin": sp, "mode": md, "message": message},
            }
            if name == "cudaSuccess":
                final.update(status="ok", errors={})
            elif name in UNSUPPORTED:
                final.update(status="unsupported", reason=name, counters={"launches": 0})
            else:
                final.update(status="cuda_error", error=name, call="cudaDeviceSynchronize",
                             errors={name: 1})
            seed_final = final
        elif line == "launch failed":
            # The seed prints no error code here. On a device without sm_100a/sm_103a this is
            # cudaErrorNoKernelImageForDevice, but the harness gates those devices before
            # spawning; on a capable device it is a real launch error of unknown name.
            seed_final = {
                "event": "final", "status": "cuda_error", "error": LAUNCH_FAILED,
                "call": "cudaLaunchKernelEx", "counters": {"launches": 0},
                "errors": {LAUNCH_FAILED: 1},
                "observations": {"message": "launch failed"},
            }
    if seed_final is not None:
        if instrument is not None:
            seed_final["observations"]["instrument"] = instrument
        # The program's own verdict wins over any final a wrapper synthesised.
        events = [e for e in events if e.get("event") != "final"] + [seed_final]
    return events
