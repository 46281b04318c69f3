"""Classify: one finished trial process -> exactly one outcome.

Standard library only (runs on GPU nodes). The inputs are what the run stage observed: the
exit status, whether we killed it at the wall-clock limit, the protocol events parsed from its
stdout, and the crash record found on its stderr.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import values

# What other modules use; the rest is this module's own.
__all__ = [
    "classify", "count", "COUNTER_MAX", "exit_description", "find_crash_record", "Observed",
    "parse_json_lines", "short_module", "signal_name", "StdoutTail"
]

CRASH_PREFIX = "GPUREPRO_CRASH "
STDOUT_TAIL = 2000  # characters of a trial's standard output kept in its record
CHECK_FIRST_KEPT = 16  # mismatches of a final record's check kept in the trial record


# Final statuses a driver may report (native/README.md) -> outcome.
_FINAL_STATUS = {
    "ok": "survived",
    "cuda_error": "cuda_error",
    "unsupported": "unsupported",
    "no_driver": "unsupported",
    "hung": "hung",  # native join_workers: a worker still running at its deadline
}


@dataclass
class Observed:
    """What the run stage saw of one trial process."""

    returncode: int | None  # negative: killed by that signal (subprocess convention)
    timed_out: bool
    events: list[dict[str, Any]]
    stderr_tail: str = ""
    crash: dict[str, Any] | None = None
    launch_error: str | None = None  # the process could not be started at all
    unparsed_lines: int = 0
    # The run stage could not hold the trial to its wall-clock limit (run/trial.py wall_clock):
    # whatever it did, it is no evidence.
    not_held: str | None = None
    # Stopped by the no-progress limit after its counters had not moved for this many seconds
    # (run.trial); its crash record, if any, is the SIGQUIT record of where the threads were.
    stalled_s: float | None = None


@dataclass
class Classified:
    outcome: str
    detail: str
    counters: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    observations: dict[str, Any] = field(default_factory=dict)
    call: str | None = None  # the API function that failed (final.call), when the driver says
    check: dict[str, Any] | None = None  # the final record's output check, as the driver made it


class StdoutTail:
    """The last ``limit`` characters of a trial's standard output, every line kept as written
    (protocol events and anything else), so a record can show what the driver said last.

    ``hook(on_line)`` returns a line callback for ``run_trial`` that keeps the tail and passes
    each line on."""

    def __init__(self, limit: int = STDOUT_TAIL):
        self.limit = limit
        self._lines: deque[str] = deque()
        self._chars = 0
        self._lock = threading.Lock()

    def add(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            self._chars += len(line)
            while len(self._lines) > 1 and self._chars - len(self._lines[0]) >= self.limit:
                self._chars -= len(self._lines.popleft())

    def hook(self, on_line: Callable[[str], None] | None = None) -> Callable[[str], None]:
        def keep(line: str) -> None:
            self.add(line)
            if on_line is not None:
                on_line(line)
        return keep

    def text(self) -> str:
        with self._lock:
            return "".join(self._lines)[-self.limit:]


def parse_json_lines(lines: Iterable[str]) -> tuple[list[dict[str, Any]], int]:
    """The native protocol: every line a JSON object with an "event" key.

    Returns the events and how many lines were not protocol events (kept as a diagnostic:
    a driver that prints garbage is not silently believed).
    """
    events, bad = [], 0
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            bad += 1
            continue
        if isinstance(obj, dict) and "event" in obj:
            events.append(_unicode(obj) if "\\ud" in line.lower() else obj)
        else:
            bad += 1
    return events, bad


def _unicode(value: Any) -> Any:
    """``value`` with every string made text UTF-8 can write: a lone surrogate (JSON's
    ``\\ud800`` escape parses to one) replaced, which a report's Markdown could not encode."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_unicode(k): _unicode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unicode(v) for v in value]
    return value


def find_crash_record(stderr_text: str) -> dict[str, Any] | None:
    """The last GPUREPRO_CRASH line on stderr, parsed; None if absent or unreadable. A Python
    driver's frames (faulthandler's dump, which follows the native record) come with it as
    ``python_frames``, alone when there was no native record."""
    found = None
    for line in stderr_text.splitlines():
        idx = line.find(CRASH_PREFIX)
        if idx < 0:
            continue
        try:
            found = json.loads(line[idx + len(CRASH_PREFIX) :])
        except (ValueError, RecursionError):
            found = {"unparsed": line[idx + len(CRASH_PREFIX) :][:2000]}
        if not isinstance(found, dict):
            found = {"unparsed": line[idx + len(CRASH_PREFIX) :][:2000]}
        elif "\\ud" in line.lower():
            found = _unicode(found)
        found.pop("python_frames", None)  # the harness's own reading of faulthandler's dump only
    frames = find_python_frames(stderr_text)
    if frames is not None:
        found = {**(found if isinstance(found, dict) else {}), "python_frames": frames}
    return found


# faulthandler's dump on a fatal signal (Python 3.11-3.13): "Fatal Python error: <signal>", then
# per thread "Current thread 0x... (most recent call first):" or "Thread 0x... (...):" and its
# frames, most recent first, '  File "f.py", line 12 in name'.
_FATAL = "Fatal Python error: "
_PY_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):\s*$")
_PY_FRAME = re.compile(r'^\s+File "(.*)", line (\d+|\?\?\?) in (.*?)\s*$')
PYTHON_THREADS = 16  # threads kept from one dump
PYTHON_FRAMES = 12  # frames kept per thread, the most recent ones


def find_python_frames(stderr_text: str) -> list[dict[str, Any]] | None:
    """Every thread's Python frames from the last faulthandler dump on stderr, the faulting
    (current) thread first: ``[{"current": bool, "frames": [{"file", "line", "function"}]}]``,
    most recent call first; None when there is no dump. Thread ids are left out (they differ
    every run)."""
    lines = stderr_text.splitlines()
    start = max((i for i, ln in enumerate(lines) if ln.startswith(_FATAL)), default=None)
    if start is None:
        return None
    threads: list[dict[str, Any]] = []
    for line in lines[start + 1 :]:
        m = _PY_THREAD.match(line)
        if m:
            threads.append({"current": m.group(1) == "Current thread", "frames": []})
            continue
        f = _PY_FRAME.match(line)
        if f and threads:
            frames = threads[-1]["frames"]
            if len(frames) < PYTHON_FRAMES:
                frames.append({"file": _portable_file(f.group(1)),
                               "line": int(f.group(2)) if f.group(2).isdigit() else None,
                               "function": f.group(3)})
        elif threads and line.strip() and not line.startswith(" "):
            break  # the dump is over ("Extension modules: ...", the shell's message)
    threads.sort(key=lambda t: not t["current"])
    return threads[:PYTHON_THREADS]


_STDLIB = re.compile(r"^.*/lib/(python3\.\d+t?/)")


def _portable_file(path: str) -> str:
    """A frame's file without the interpreter's prefix: from the package folder on for an
    installed package (numba/cuda/cudadrv/driver.py), from python3.X/ on for the standard
    library; a checkout's own paths are made relative with the rest of the record."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    return _STDLIB.sub(r"\1", path)


def _python_exception(stderr_tail: str) -> str | None:
    """The last line of the last Python traceback on stderr ("ValueError: ..."), if any."""
    lines = stderr_tail.splitlines()
    start = max((i for i, ln in enumerate(lines)
                 if ln.startswith("Traceback (most recent call last):")), default=None)
    if start is None:
        return None
    tail = [ln for ln in lines[start + 1 :] if ln.strip() and not ln.startswith((" ", "\t"))]
    return tail[0][:300] if tail else None


def signal_name(signo: int) -> str:
    try:
        return signal.Signals(signo).name
    except ValueError:
        return f"SIG{signo}"


# The event protocol's rule for a counter (native/events.h counts in 64 bits): an integer from
# 0 to 2^63 - 1. A value outside it (negative, not finite, not a whole number, larger) is the
# driver breaking the protocol: the trial is a harness_error that names it, and the value is
# left out of its counters, so the run stays recordable.
COUNTER_MAX = 2**63 - 1


def count(value: Any) -> int | None:
    """``value`` as a counter under the protocol's rule, or None where it breaks it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 0 <= value <= COUNTER_MAX else None


def _counts(mapping: Mapping[Any, Any]) -> dict[str, int]:
    return {str(k): n for k, v in mapping.items() if (n := count(v)) is not None}


def broken_count(events: list[dict[str, Any]], crash: Mapping[str, Any] | None) -> str | None:
    """The first counter (or error count) outside the protocol's rule, described."""
    sources = [ev for ev in events] + ([crash] if crash else [])
    for source in sources:
        for field_name in ("counters", "errors"):
            values = source.get(field_name)
            if not isinstance(values, Mapping):
                continue
            for key, value in values.items():
                if count(value) is None:
                    return f"{field_name[:-1]} {str(key)[:40]!r} = {str(value)[:40]}"
    return None


def last_counters(events: list[dict[str, Any]]) -> dict[str, int]:
    counters: dict[str, int] = {}
    for ev in events:
        if isinstance(ev.get("counters"), Mapping):
            counters = _counts(ev["counters"])
    return counters


def _errors(events: list[dict[str, Any]]) -> dict[str, int]:
    errors: dict[str, int] = {}
    for ev in events:
        if isinstance(ev.get("errors"), Mapping):
            errors = _counts(ev["errors"])
    return errors


def classify(obs: Observed, progress_counter: str, check: Any = None) -> Classified:
    """Exactly one outcome per trial; ``progress_counter`` names the counter that must be >0;
    ``check`` is the case's output check (``Case.check``, an OutputCheck), if it declares one.

    Order matters: a trial the run stage could not start, or could not hold to its wall-clock
    limit, is a `harness_error`; a process we killed is `hung` whatever it printed; a fatal signal is
    `crashed` whatever it printed before; only then is the driver's own final record believed:
    a CUDA error is that error even where the output it checked was wrong; an ``ok`` final is
    `invalid` without progress, `wrong_result` when its check found a mismatch, and
    `survived` only otherwise, and, for a case that checks its output, only with a check that
    compared something in the way the case declares (``check_outcome``).
    """
    if obs.launch_error is not None:
        return Classified("harness_error", obs.launch_error)
    if obs.not_held is not None:
        return Classified("harness_error", obs.not_held, last_counters(obs.events))

    counters = last_counters(obs.events)
    if obs.crash and isinstance(obs.crash.get("counters"), Mapping) and obs.crash["counters"]:
        # The crash record holds the exact counters at the fault; heartbeats lag by up to 1 s.
        counters = _counts(obs.crash["counters"]) or counters
    errors = _errors(obs.events)
    broken = broken_count(obs.events, obs.crash)
    if broken is not None:
        return Classified("harness_error", f"the driver broke the event protocol: {broken} (a "
                          f"count is an integer from 0 to 2^63-1; left out)", counters, errors)
    finals = [ev for ev in obs.events if ev.get("event") == "final"]
    final = finals[-1] if finals else None
    # The final record's values, checked before anything believes them (run/values.py): one a
    # document cannot hold is named, kept as text, and the trial is a harness_error.
    unfit = final_problem(final) if final else None
    observed = final.get("observations") if final else None
    observations = values.fitted(dict(observed)) if isinstance(observed, Mapping) else {}
    made_progress = counters.get(progress_counter, 0) > 0

    call = final.get("call") if final else None
    call = str(call) if call else None
    checked = final.get("check") if final else None
    if checked is not None and values.check_problem(checked) is not None:
        checked = None  # named by ``unfit``; no check the schema refuses goes into the record
    kept = values.kept_check(checked, CHECK_FIRST_KEPT) if checked is not None else None

    def out(outcome: str, detail: str) -> Classified:
        return Classified(outcome, detail, counters, errors, observations, call, kept)

    if obs.timed_out:
        return out("hung", "killed at the wall-clock limit")
    if obs.stalled_s is not None:
        # Where every thread was stuck: the SIGQUIT record's threads, copied on entry.
        threads = (obs.crash or {}).get("threads")
        if isinstance(threads, list):
            observations["threads"] = [{k: t.get(k) for k in ("thread", "call", "inside", "calls")}
                                       for t in threads]
        observations["stalled_s"] = obs.stalled_s
        return out("hung", f"no progress for {obs.stalled_s:g} s (counters unchanged): stopped "
                           f"at the case's no-progress limit")

    rc = obs.returncode
    if rc is not None and rc < 0:
        name = signal_name(-rc)
        if -rc in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT) and not obs.crash:
            # Killed from outside (OOM killer, a user): not a fault of the code under test.
            return out("harness_error", f"killed by {name} from outside the trial")
        return out("crashed", name)

    if final is not None:
        if unfit is not None:
            return out("harness_error", f"the driver's final record holds a value a result "
                                        f"cannot: {unfit}")
        status = str(final.get("status"))
        outcome = _FINAL_STATUS.get(status)
        if outcome == "unsupported":
            return out("unsupported", str(final.get("reason") or status))
        if outcome == "cuda_error":
            return out("cuda_error", str(final.get("error") or "unknown CUDA error"))
        if outcome == "hung":
            return out("hung", str(final.get("reason") or "a worker never finished"))
        if outcome == "survived":
            if rc not in (0, None):
                return out("harness_error", f"final record says ok but exit status is {rc}")
            if counters and progress_counter not in counters:
                # The manifest names a counter the driver never reports (a misspelling):
                # every trial would look like "no progress". The manifest's fault, not the bug's.
                return out("harness_error",
                           f"exposure counter {progress_counter!r} is not among the counters the "
                           f"driver reports ({', '.join(sorted(counters))}); check the manifest's "
                           f"exposure.counter")
            if not made_progress:
                return out("invalid", f"no progress: {progress_counter} = 0")
            return out(*check_outcome(kept, check))
        return out("harness_error", f"unknown final status {status!r}")

    # No final record and no signal: the driver broke the protocol. A Python driver that raised
    # says why on stderr: its exception is kept in the detail.
    raised = _python_exception(obs.stderr_tail)
    why = f": {raised}" if raised else ""
    if not obs.events:
        n = obs.unparsed_lines
        printed = (f", {n} line{' that is' if n == 1 else 's that are'} not protocol events"
                   if n else "")
        return out("harness_error", f"no protocol output (exit status {rc}{printed}){why}")
    return out("harness_error", f"exited with status {rc} without a final record{why}")


def final_problem(final: Mapping[str, Any]) -> str | None:
    """The first value of a final record that no result can hold or believe (run/values.py),
    described; None when every one fits."""
    observed = final.get("observations")
    if observed is not None and not isinstance(observed, Mapping):
        return f"observations is {type(observed).__name__}, not an object"
    observed = observed or {}
    found = values.unfit(observed, "observations")
    if found is None and "timing" in observed:
        found = values.timing_problem(observed["timing"])
    if found is None and final.get("check") is not None:
        found = values.check_problem(final["check"])
    if found is None:
        found = values.unfit({k: v for k, v in final.items()
                              if k not in ("observations", "check", "counters", "errors", "t")})
    return found


def check_outcome(checked: Any, declared: Any) -> tuple[str, str]:
    """(outcome, detail) of an ``ok`` final that made progress, from its ``check`` object and
    the case's declared check (None: the case declares none, and a check is optional)."""
    if checked is None:
        if declared is None:
            return "survived", "budget used up"
        return ("harness_error", f"the case checks its output ({declared.kind}), but the driver's "
                "final record carries no check")
    if declared is not None:
        why = declared.refuses(checked)
        if why:
            return "harness_error", f"output check: {why}"
    elif not isinstance(checked, Mapping) or not isinstance(checked.get("mismatches"), int) \
            or not isinstance(checked.get("n"), int):
        return "harness_error", "the final record's check is not {kind, n, mismatches, first}"
    n, bad = int(checked["n"]), int(checked["mismatches"])
    if bad > 0:
        return "wrong_result", mismatch_detail(checked)
    if n == 0:
        return "invalid", "no output checked: check.n = 0"
    return "survived", f"budget used up; {n} elements match the reference"


def mismatch_detail(checked: Mapping[str, Any]) -> str:
    """'K of N elements differ from the reference (exact); first: [i] got g, expected e; ...'."""
    first = [f"[{m[0]}] got {m[1]!r}, expected {m[2]!r}" for m in (checked.get("first") or [])[:3]
             if isinstance(m, list | tuple) and len(m) == 3]
    kind = str(checked.get("kind") or "exact")
    return (f"{checked['mismatches']} of {checked['n']} elements differ from the reference ({kind})"
            + (f"; first: {'; '.join(first)}" if first else ""))


def exit_description(returncode: int | None, timed_out: bool, stalled: bool = False) -> dict[str, Any]:
    if timed_out:
        return {"code": None, "signal": "SIGKILL", "killed_by_harness": True}
    if stalled:  # SIGQUIT for the thread record, then its group killed
        return {"code": None, "signal": "SIGQUIT", "killed_by_harness": True}
    if returncode is None:
        return {"code": None, "signal": None, "killed_by_harness": False}
    if returncode < 0:
        return {"code": None, "signal": signal_name(-returncode), "killed_by_harness": False}
    return {"code": returncode, "signal": None, "killed_by_harness": False}


def short_module(path: str | None) -> str:
    """Module basename for a mapping path; anonymous mappings are named as such."""
    if path is None:
        return "[unmapped]"
    if path == "":
        return "[anonymous]"
    if path.startswith("["):
        return path
    return os.path.basename(path)
