"""What a result document's trials must say about their checked output (``validate``).

A trial recorded ``wrong_result`` carries the check that found the mismatch; in a case that
declares an output check (``case.check`` in the document), a ``survived`` trial carries a check
that compared something and found no mismatch, of the declared kind; no trial's check counts
more mismatches than elements. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def check_errors(doc: Mapping[str, Any]) -> list[str]:
    """'trials/<i>/check: expected ..., found ...' for every trial whose outcome and check
    disagree (empty when every one agrees)."""
    trials = doc.get("trials")
    case = doc.get("case")
    if not isinstance(trials, list) or not isinstance(case, Mapping):
        return []  # the schema reports it
    declared = case.get("check") if isinstance(case.get("check"), Mapping) else None
    out = []
    for i, t in enumerate(trials):
        if not isinstance(t, Mapping):
            continue
        check = t.get("check")
        outcome = t.get("outcome")
        where = f"trials/{i}/check"
        if check is not None and not isinstance(check, Mapping):
            continue  # the schema reports it
        if check is not None:
            n, bad = check.get("n"), check.get("mismatches")
            if isinstance(n, int) and isinstance(bad, int) and bad > n:
                out.append(f"{where}/mismatches: at most n ({n}) expected, found {bad}")
        if outcome == "wrong_result" and not (check and isinstance(check.get("mismatches"), int)
                                              and check["mismatches"] > 0):
            out.append(f"{where}: a check with at least one mismatch expected for a wrong_result "
                       f"trial, found {'none' if check is None else check.get('mismatches')!r}")
        if outcome == "survived" and declared is not None:
            if check is None:
                out.append(f"{where}: the case checks its output ({declared.get('kind')}): a "
                           f"check expected for a survived trial, found none")
            elif check.get("mismatches") != 0 or not check.get("n"):
                out.append(f"{where}: no mismatch in a non-empty check expected for a survived "
                           f"trial, found {check.get('mismatches')!r} of {check.get('n')!r}")
            elif check.get("kind") != declared.get("kind"):
                out.append(f"{where}/kind: {declared.get('kind')!r} (the case's) expected, found "
                           f"{check.get('kind')!r}")
    return out
