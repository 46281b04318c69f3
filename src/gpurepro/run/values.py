"""What a trial reports, checked where it is read: every value a driver prints must be one a
result document can hold and a reader can believe.

A driver's final record carries values the harness keeps (its observations, its output check)
and numbers the analysis computes with (a timed arm's per-launch times). JSON as Python reads
it holds more than a document can: ``NaN`` and ``Infinity``, integers of any length, nesting of
any depth, ``true`` where a number is wanted. The rules, each applied by ``classify`` to the
final record before it is believed:

- any number: finite, an integer within 64 bits (-2^63 … 2^63-1); nesting at most
  ``DEPTH_MAX`` deep (``unfit``);
- a timed trial's ``observations.timing.values``: a list of numbers (not booleans) of seconds,
  each from ``TIME_MIN_S`` to ``TIME_MAX_S`` (``timing_problem``): a ratio of two trials' times
  then stays a number (1e308 against 5e-324 would not);
- an output ``check``: its kind one of ``CHECK_KINDS``, ``n`` and ``mismatches`` counts (at most
  n), each of ``first`` an [index, got, expected] triple, ``rel`` and ``abs`` finite and not
  negative (``check_problem``). An element of the output that is not a finite number (NaN, an
  infinity) is a mismatch like any other: it is written as its name (``"NaN"``), since a
  document cannot carry the number (``element``).

A record that breaks one is the driver breaking the protocol: the trial is a ``harness_error``
whose detail names the value, the value is kept as text (``fitted``), and the run goes on and
stays recordable. ``fitted`` is also the journal's last guard: a trial record is fitted before
it is written, whatever produced it.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# What other modules use; the rest is this module's own.
__all__ = [
    "CHECK_KINDS", "check_problem", "element", "fitted", "INT_MAX", "INT_MIN", "is_count",
    "kept_check", "number_problem", "TIME_MAX_S", "timing_problem", "unfit"
]

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
DEPTH_MAX = 32
# A timed trial's per-launch time in seconds: from a picosecond to a day.
TIME_MIN_S, TIME_MAX_S = 1e-12, 86400.0
CHECK_KINDS = ("exact", "tolerance")
SHOWN = 60  # characters of a bad value named in a detail


def _shown(value: Any) -> str:
    if isinstance(value, float):
        text = repr(value)
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        text = f"an integer of {len(str(abs(value)))} digits"
    else:
        text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _join(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def number_problem(value: Any) -> str | None:
    """Why a JSON number cannot go into a document (None: it can)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
        return "an integer outside 64 bits"
    return None


def unfit(value: Any, path: str = "", depth: int = 0) -> str | None:
    """The first value in ``value`` that no document can hold, described with where it is
    ("observations.ratio = nan: not a finite number"); None when every value fits."""
    if depth > DEPTH_MAX:
        where = path if len(path) <= SHOWN else path[: SHOWN - 1] + "…"
        return f"{where or 'the value'}: nested more than {DEPTH_MAX} deep"
    if isinstance(value, int | float):
        why = number_problem(value)
        return f"{path or 'the value'} = {_shown(value)}: {why}" if why else None
    if isinstance(value, Mapping):
        items: Any = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    elif value is None or isinstance(value, str):
        return None
    else:
        return f"{path or 'the value'} is a {type(value).__name__}, not JSON"
    for key, item in items:
        found = unfit(item, _join(path, key), depth + 1)
        if found:
            return found
    return None


def element(value: Any) -> Any:
    """One element of a checked output as a document holds it: a number that is not finite by
    its name (NaN, Infinity, -Infinity), an integer past 64 bits as its digits; else as it is."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and not isinstance(value, bool) and number_problem(value):
        return str(value)
    return value


def fitted(value: Any, depth: int = 0) -> Any:
    """``value`` with every value ``unfit`` names made text (a number by its name or digits,
    nesting past ``DEPTH_MAX`` as its beginning): what a document can hold."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return element(value)
    if depth >= DEPTH_MAX and isinstance(value, Mapping | list | tuple):
        return _shown(value)
    if isinstance(value, Mapping):
        return {str(k): fitted(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [fitted(v, depth + 1) for v in value]
    return _shown(value)


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT_MAX


def timing_problem(timing: Any) -> str | None:
    """Why a final record's ``observations.timing`` cannot be a timed trial's times (None: it
    can), naming the value."""
    where = "observations.timing"
    if not isinstance(timing, Mapping):
        return f"{where} is {_shown(timing)}, not an object"
    values = timing.get("values")
    if not isinstance(values, list):
        return f"{where}.values is {_shown(values)}, not a list of times"
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float):
            return f"{where}.values[{i}] = {_shown(v)}: not a number of seconds"
        if number_problem(v) or not TIME_MIN_S <= v <= TIME_MAX_S:
            return (f"{where}.values[{i}] = {_shown(v)}: a time is a finite number of seconds "
                    f"from {TIME_MIN_S:g} to {TIME_MAX_S:g}")
    for key in ("warmups", "loops"):
        if key in timing and not is_count(timing[key]):
            return f"{where}.{key} = {_shown(timing[key])}: not a count"
    if "unit" in timing and timing["unit"] != "s":
        return f"{where}.unit = {_shown(timing['unit'])}: times are in seconds (\"s\")"
    return None


def check_problem(check: Any) -> str | None:
    """Why a final record's ``check`` is not one (None: it is), naming the value."""
    if not isinstance(check, Mapping):
        return f"check is {_shown(check)}, not an object"
    if check.get("kind") not in CHECK_KINDS:
        return f"check.kind = {_shown(check.get('kind'))}: not one of {', '.join(CHECK_KINDS)}"
    for key in ("n", "mismatches"):
        if not is_count(check.get(key)):
            return f"check.{key} = {_shown(check.get(key))}: not a count"
    if check["mismatches"] > check["n"]:
        return f"check.mismatches = {check['mismatches']}: more than check.n = {check['n']}"
    first = check.get("first", [])
    if not isinstance(first, list):
        return f"check.first = {_shown(first)}: not a list"
    for i, entry in enumerate(first):
        if not isinstance(entry, list) or len(entry) != 3:
            return f"check.first[{i}] = {_shown(entry)}: not an [index, got, expected] triple"
        if not is_count(entry[0]):
            return f"check.first[{i}][0] = {_shown(entry[0])}: not an index"
        found = unfit([element(e) for e in entry[1:]], f"check.first[{i}]", 1)
        if found:
            return found
    for key in ("rel", "abs"):
        if key in check:
            v = check[key]
            if isinstance(v, bool) or not isinstance(v, int | float) or number_problem(v) or v < 0:
                return f"check.{key} = {_shown(v)}: not a finite tolerance of 0 or more"
    extra = {k: v for k, v in check.items() if k not in ("kind", "n", "mismatches", "first", "rel", "abs")}
    return unfit(extra, "check")


def kept_check(check: Mapping[str, Any], first: int) -> dict[str, Any]:
    """A check that passed ``check_problem`` as the record keeps it: its first ``first``
    mismatches, each element as a document holds it (``element``)."""
    kept = dict(check)
    kept["first"] = [[e[0], element(e[1]), element(e[2])] for e in check.get("first", [])[:first]]
    return kept
