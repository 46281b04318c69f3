"""Before the first trial: how likely the plan is to decide each claim, and the two families.

A trial ends at its first failure, so an arm's failure count is capped by its trial count, and a
claim that needs more failures than the plan can produce cannot be decided, whatever the truth;
in the confirmatory family it would only make Holm's thresholds stricter for the others and keep
its arms running to the maximum (STATS.md, "Decidability, allocation and the floor"). So, before
a run, its own plan is simulated (`gpurepro.analyze.simulate`: the plan's order and design, the run's
budget, arm models from the newest committed results at the same trials at a time) and each
claim's chance of ending supported or contradicted is counted. Claims below ``threshold`` move
to the exploratory family; the rest are simulated again without them (their chances can only
rise) until no claim moves. A claim whose arms have no committed trials has no estimate and
stays confirmatory (its arms still count in the family, undecided, as they would in the run).

The result is journaled in the run's header (``options.families``) and kept in its document;
resuming continues it, and recording reads it. The simulation is gpurepro.analyze.planning's
(numpy, scipy: gpurepro[analysis]); without them every claim stays confirmatory, and the header
says why (``not_computed``). What is here, the families beside the main question and the
lines that say each claim's chance, is standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..case.model import Case
from ..model.plan import Plan

THRESHOLD = 0.5  # a claim less likely than this to be decided within the plan is exploratory
RUNS = 200  # simulated runs per round: the chance is known to about +-0.035 near 0.5


def not_computed(reason: str, exploratory: Sequence[str] = ()) -> dict[str, Any]:
    return {"computed": False, "reason": reason, "exploratory": list(exploratory)}


def main_claims(case: Case, plan: Plan) -> list[str]:
    """The main question's claims among the plan's (Case.main_question)."""
    return [n for n in case.main_question if any(c.name == n and c.arm in plan.arms
                                                    for c in case.claims)]


def beside_main(case: Case, plan: Plan, scope: str) -> list[str]:
    """A main-question run's other claims (about arms it runs for the main question): decided
    once at the end, exploratory, so that they neither keep an arm running nor tighten the main
    question's thresholds."""
    if scope != "main" or not case.main_question:
        return []
    return [c.name for c in case.claims if c.arm in plan.arms and c.name not in case.main_question]


def lines(families: Mapping[str, Any], claims: Sequence[str]) -> list[str]:
    """What a run prints before its first trial."""
    if not families.get("computed"):
        return [f"claims' chances of being decided: {families.get('reason')}; every claim is "
                f"confirmatory"]
    chance, exploratory = families["chance"], set(families["exploratory"])
    main = set(families.get("main") or ())
    out = [f"chance that the plan decides each claim (simulated {families['runs']} times from "
           f"{', '.join(families['rates_from'])}); below {families['threshold']:g} a claim is "
           f"exploratory: outside the family-wise error rate, it keeps no arm running"
           + ("; the main question's claims stay confirmatory" if main else "")]
    for name in claims:
        p = chance.get(name)
        tag = ("exploratory" if name in exploratory
               else "confirmatory, main question" if name in main else "confirmatory")
        out.append(f"  {name}: " + ("no committed rates for its arms" if p is None else f"{p:.2f}")
                   + f"  ({tag})")
    exp = families["expected"]
    out.append(f"expected: about {exp['seconds_median']:.0f} s of trials ({exp['trials']:.0f} trials)"
               + (f", plus the arms without committed rates ({', '.join(exp['arms_without_rates'])})"
                  if exp["arms_without_rates"] else ""))
    return out


def check_priors(priors: Mapping[str, Any]) -> None:
    """Every prior a finite, non-negative number where a number is: a prior of infinity or NaN
    would be journaled as no JSON reader reads it, and allocate as nothing should."""
    for arm, p in priors.items():
        numbers = [p.budget, p.seconds, p.speed, p.overhead_s, *(r for _, _, r in p.causes)]
        if not all(math.isfinite(x) and x >= 0 for x in numbers):
            raise ValueError(f"the prior of arm {arm} is not finite ({p}); a bug in gpurepro")
