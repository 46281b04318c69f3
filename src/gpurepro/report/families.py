"""The two families of a run's claims, as every rendering states them (report, issue comment,
compare, index, forest plot).

A run decides its confirmatory claims under one family-wise error rate, over all its looks
(gpurepro.analyze.claims); its exploratory claims (gpurepro.analyze.decidability: beside the
main question, or unlikely to be decided by the plan) are decided once, at the end, by a Holm
step-down of their own, outside that promise. A rendering that counts or shows a decision says
which family it is of: "supported" alone is a confirmatory decision.

The design's alpha spending is read from what the run journaled (``plan.options.stopping``,
with the looks it took), never restated from a rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model.design import DesignSpec
from ..model.jsontypes import JSONValue
from ..model.result import ClaimDecision, Result, as_result
from .numbers import fmt

# What other modules use; the rest is this module's own.
__all__ = [
    "confirmatory", "decided_count", "decision_text", "design_statement", "EXPLORATORY",
    "exploratory", "exploratory_statement", "is_exploratory"
]

EXPLORATORY = "exploratory"


def is_exploratory(claim: ClaimDecision) -> bool:
    return claim.family == EXPLORATORY


def confirmatory(claims: Sequence[ClaimDecision]) -> list[ClaimDecision]:
    return [c for c in claims if not is_exploratory(c)]


def exploratory(claims: Sequence[ClaimDecision]) -> list[ClaimDecision]:
    return [c for c in claims if is_exploratory(c)]


def decision_text(claim: ClaimDecision) -> str:
    """A claim's decision in words, its family named where it is not the confirmatory one."""
    text = str(claim.decision or "–").replace("_", " ")
    return f"{text} (exploratory)" if is_exploratory(claim) else text


def decided_count(claims: Sequence[ClaimDecision]) -> str:
    """'5 of 8 confirmatory claims decided; 1 of 2 exploratory' (the families apart)."""
    conf, expl = confirmatory(claims), exploratory(claims)

    def decided(cs: Sequence[ClaimDecision]) -> int:
        return sum(1 for c in cs if c.decision in ("supported", "contradicted"))

    out = f"{decided(conf)} of {len(conf)} {'confirmatory ' if expl else ''}claims decided"
    if expl:
        out += f"; {decided(expl)} of {len(expl)} exploratory"
    return out


def _n(x: Any) -> str:
    return fmt(float(x)) if isinstance(x, (int, float)) else "–"


def _whole_numbers(value: JSONValue) -> list[int]:
    """A journaled list of trial counts (anything else: none)."""
    return [int(x) for x in value if isinstance(x, (int, float))] if isinstance(value, list) else []


def _looks_taken(design: DesignSpec, claims: Sequence[ClaimDecision]) -> int | None:
    taken = design.described.get("looks_taken")
    if isinstance(taken, int):
        return int(taken)
    looks = [int(c.look) for c in confirmatory(claims) if isinstance(c.look, int)]
    return max(looks) if looks else None


def design_statement(doc: Result | Mapping[str, Any]) -> str:
    """How the run's confirmatory claims were decided, as its plan journaled it: how many, at
    which looks (the valid-trial counts), at what alpha each, and the looks the run took."""
    r = as_result(doc)
    claims = r.claims
    conf = confirmatory(claims)
    design, described = r.design, r.design.described
    alpha = float((conf or claims)[0].alpha or 0) if (conf or claims) else 0.05
    n = len(conf)
    head = (f"The {n} confirmatory claim(s) are decided under one family-wise error rate "
            f"alpha = {alpha:g} over all of them and all looks")
    declared = r.options.deterministic
    spent = (float(declared.bound or 0) if declared and declared.version >= 2
             and declared.usable else 0.0)
    if spent:  # a checked declaration of deterministic outcomes (gpurepro.analyze.shortcut)
        head = (f"The {n} confirmatory claim(s) are decided under one family-wise error rate "
                f"alpha = {_n(alpha + spent)} over all of them and all looks, of which the "
                f"case's declaration of deterministic outcomes spends {_n(spent)} and the "
                f"design {_n(alpha)}")
    holm = "Holm's step-down over the claims still open at each look"
    taken = _looks_taken(design, claims)
    if design.decisive:
        at = _whole_numbers(described.get("look_at"))
        first, later = described.get("alpha_first_look"), described.get("alpha_later_looks")
        spend = (f"alpha {_n(first)} at the first and {_n(later)} at each later one "
                 f"(Bonferroni over the looks)" if len(at) > 1 else f"alpha {_n(first)} at it")
        at_looks = described.get("alpha_at_looks")
        if design.spending == "halving" and isinstance(at_looks, list) and len(at) > 1:
            spend = (f"alpha {', '.join(_n(a) for a in at_looks)} at them in turn (the second half "
                     f"of what the first left, each later look half of the one before, the last "
                     f"what is left; Bonferroni over the looks)")
        last = described.get("last_look_at")
        ran = (f"; the run took {taken} of them" + (f", the last at {last} valid trials"
                                                   if isinstance(last, int) and taken else "")
               if taken is not None else "")
        share = design.supported_share
        tests = (f"; each claim's level is split {_n(share)} to the direction it states and "
                 f"{_n(1 - float(share))} to the opposite (its p-value the smaller of its one-sided "
                 f"p-values each over its share)" if isinstance(share, (int, float)) else "")
        return (f"{head}: {len(at)} look(s), at {', '.join(map(str, at))} valid trials of the "
                f"run (the last is the plan's end; a run that ends between two takes the next "
                f"one then), {spend}; {holm}{tests}{ran}.")
    if design.sequential:
        looks = int((conf or claims)[0].looks or 0) if (conf or claims) else 1
        thresholds = described.get("look_thresholds")
        recorded = described.get("looks")
        if thresholds is None and isinstance(recorded, list):
            thresholds = list(recorded)[:-1]  # recorded before claims: trial counts
        when = (f"when the slowest arm still needed reaches "
                f"{', '.join(map(str, thresholds))} valid trials, and at the end"
                if isinstance(thresholds, list) and thresholds else "at the end")
        ran = f"; the run took {taken} of them" if taken is not None else ""
        return (f"{head}: {looks} look(s), {when}, alpha / {looks} = {_n(alpha / looks)} at each "
                f"(Bonferroni over the looks); {holm}{ran}.")
    return f"{head}: one look, at the end of the run, at alpha {alpha:g}; Holm's step-down over them."


def exploratory_statement(doc: Result | Mapping[str, Any]) -> str | None:
    """Why the run's exploratory claims are apart and how they were decided; None without any."""
    r = as_result(doc)
    expl = exploratory(r.claims)
    if not expl:
        return None
    families = r.options.families
    why = []
    main = set(families.main) if families else set()
    if r.options.scope == "main" and main:
        why.append("beside the main question")
    chance = families.chance if families else {}
    threshold = families.threshold if families else None
    if any(isinstance(chance.get(c.name), (int, float)) and threshold is not None
           and chance[c.name] < threshold for c in expl):
        why.append(f"less likely than {threshold:g} to be decided by the plan (simulated before "
                   f"the first trial)")
    alpha = float(expl[0].alpha or 0)
    return (f"The {len(expl)} exploratory claim(s)"
            + (f" ({' or '.join(why)})" if why else "")
            + f" are decided once, at the end, by Holm's step-down at alpha = {alpha:g} over "
              f"them alone: outside the family-wise error rate above, and no owner rests on "
              f"them.")
