"""Wrong results in a report: which arms returned wrong answers, and the first mismatches.

A case that checks its drivers' output (``case.check`` in the document) counts its trials, not
its exposure: a wrong answer is a property of a trial. The report's arms table already has the
share of failing trials with its exact (Clopper-Pearson) interval; this section adds, per arm
whose trials carry a check, the elements compared, the mismatches and the first few
``[index] got, expected`` of its first wrong trial; the issue comment's head shows the first
wrong arm's in place of a crash signature. Everything comes from the document alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model.result import Result, Trial, TrialCheck, as_result
from .numbers import fmt, fmt_ci
from .tables import code, escape, table

# What other modules use; the rest is this module's own.
__all__ = ["head_lines", "per_trial", "rows", "section"]

FIRST_SHOWN = 4  # mismatches of an arm's first wrong trial in a table cell


def per_trial(doc: Result | Mapping[str, Any]) -> bool:
    """Whether the document's case checks its output: its trials, not its exposure, are the
    unit of its proportions and comparisons."""
    if isinstance(doc, Result):
        return doc.case.check is not None
    return isinstance((doc.get("case") or {}).get("check"), Mapping)


def _checked(r: Result) -> dict[str, list[Trial]]:
    by_arm: dict[str, list[Trial]] = {}
    for t in r.trials:
        if t.check is not None or t.outcome == "wrong_result":
            by_arm.setdefault(t.arm, []).append(t)
    return by_arm


def _value(v: Any) -> str:
    """An element as a table shows it: a float to 9 significant digits, anything else as JSON
    would write it (None: a missing element)."""
    if isinstance(v, float):
        return f"{v:.9g}"
    return "missing" if v is None else str(v)


def _g(v: Any) -> str:
    """A tolerance as ``%g`` writes it; anything that is not a number, escaped."""
    return f"{v:g}" if isinstance(v, int | float) else escape(v)


def first_mismatches(check: TrialCheck, shown: int = FIRST_SHOWN) -> str:
    first = [m for m in check.first if isinstance(m, list) and len(m) == 3]
    text = "; ".join(f"[{i}] {_value(g)} ≠ {_value(e)}" for i, g, e in first[:shown])
    mismatches = check.mismatches
    more = (mismatches if isinstance(mismatches, int) else 0) - min(len(first), shown)
    return escape(text + (f"; … {more} more" if text and more > 0 else ""))


def rows(r: Result) -> list[list[str]]:
    out = []
    for arm, trials in _checked(r).items():
        checks = [t.check for t in trials if t.check is not None]
        wrong = [t for t in trials if t.outcome == "wrong_result"]
        s = r.arms.get(arm)
        prop = s.proportion if s else None
        n = sum(int(c.n or 0) for c in checks)
        bad = sum(int(c.mismatches or 0) for c in checks)
        first_check = wrong[0].check if wrong else None
        first = first_mismatches(first_check) if first_check else "–"
        out.append([code(arm), f"{len(wrong)} / {s.n_valid if s else len(trials)}",
                    f"{fmt(prop.estimate)} {fmt_ci(prop.ci95)}" if prop and prop.ci95 else "–",
                    fmt(n), fmt(bad), first])
    return out


def section(doc: Result | Mapping[str, Any]) -> list[str]:
    """The report's "Wrong results" section; no lines when no trial checked its output."""
    r = as_result(doc)
    body = rows(r)
    if not body:
        return []
    kind = r.case.check
    how = ("exact comparison" if kind and kind.kind == "exact" else
           f"within rel {_g(kind.rel)}, abs {_g(kind.abs)}" if kind and kind.declared
           else "as each driver compared")
    return ["### Wrong results\n",
            f"Each trial's output against the host's reference ({how}); a trial is the unit: "
            f"failing trials over valid ones with the exact (Clopper-Pearson) 95% interval of the "
            f"share. First mismatches as [index] got ≠ expected.\n",
            *table(["arm", "wrong / valid trials", "share failing (95% CI)", "elements compared",
                    "elements wrong", "first mismatches (first wrong trial)"], body), ""]


def head_lines(doc: Result | Mapping[str, Any]) -> list[str]:
    """The comment head's wrong-answer signature: the arm with the most wrong trials, its first
    mismatches, and how many arms returned wrong answers; no lines without a wrong result."""
    r = as_result(doc)
    checked = _checked(r)
    wrong = {arm: [t for t in ts if t.outcome == "wrong_result"] for arm, ts in checked.items()}
    wrong = {a: ts for a, ts in wrong.items() if ts}
    if not wrong:
        return []
    arm, ts = max(wrong.items(), key=lambda kv: len(kv[1]))
    check = ts[0].check
    assert check is not None, "a wrong result carries its check"
    total = sum(len(v) for v in wrong.values())
    arms: Sequence[str] = list(wrong)
    return ["### Wrong results", "",
            f"{total} trial(s) returned wrong results, in {', '.join(code(a) for a in arms)}. "
            f"{code(arm)}, first wrong trial: {escape(check.mismatches)} of "
            f"{escape(check.n)} elements differ ({escape(check.kind)}); first: "
            f"{first_mismatches(check)}.", ""]
