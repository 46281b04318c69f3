"""The run's conclusion: its claims decided, and the verdict composed from them.

The harness decides every claim of the run's family (claims.py); the case's verdict function
reads the result document through its typed views (views.py) and gives measurements, status,
owner, next steps and hypotheses; ``compose_verdict`` joins that with the decided claims'
sentences and refuses an owner resting on a claim that was not decided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..case.hypotheses import stated
from ..case.model import Case
from ..errors import RecordError
from ..model.design import DesignSpec
from ..model.journal import RunHeader
from ..model.outcomes import EVIDENCE
from ..model.result import Analysis, ClaimDecision, Completion, Result, Trial
from . import declared
from .claim_kinds import kind_of
from .claims import Wording, decider_for, sentence
from .processes import Observations, ProcessFitError, checks
from .shortcut import checked, disagreement, spent, usable

# What other modules use; the rest is this module's own.
__all__ = [
    "compose_verdict", "concluded", "decide_claims", "determinism_sentence", "model_sentence",
    "plan_sentence", "verdict_for"
]


def verdict_for(case: Case, result: Result) -> dict[str, Any]:
    """The verdict of a result document (every field but the verdict filled in)."""
    analysis = result.analysis
    given = case.verdict(analysis) if case.verdict is not None else concluded(case, analysis)
    verdict = compose_verdict(given, result.claims, exploratory_reasons(result))
    completion = result.completion
    if completion.complete is False:
        verdict["stopped"] = stopped_sentence(completion, result.claims)
        verdict["next"] = [f"Continue the run: {completion.resume}", *verdict["next"]]
    declared = result.options.deterministic
    if declared is not None and result.claims:
        verdict["sentences"].append(determinism_sentence(
            declared.declared, result.trials, result.claims, result.design))
    if result.known_rates_plan:
        verdict["sentences"].append(plan_sentence(result.known_rates_plan, result.claims))
    # A horizon the run decided with (a number); an unplanned design keeps the one asked for
    # ("auto"), never used.
    horizon = result.design.horizon
    if isinstance(horizon, (int, float)) and result.claims:
        verdict["sentences"].append(model_sentence(case, result.trials, float(horizon)))
    return verdict


def model_sentence(case: Case, trials: Sequence[Trial], horizon: float) -> str:
    """What a run with a horizon (analyze.horizon) says of the constant-rate model: its rate
    claims do not rest on it, and whether its own baseline trials reject it (likelihood-ratio
    tests of a Weibull and a gamma-frailty process against the exponential, fitted to the
    baseline's valid trials, survivors censored; analyze.processes)."""
    at = f"{int(horizon):,}" if horizon.is_integer() else f"{horizon:g}"
    unit = case.exposure.unit
    head = ("The rate claims do not assume a constant failure rate: "
            f"each was decided with trials as the unit, every trial of its arms run to at most "
            f"{at} {unit} (Boschloo's exact test on the trials that failed before it, which "
            f"assumes only that an arm's trials are independent and alike)")
    baseline = [t.record for t in trials if t.arm == case.baseline]
    obs = Observations.of(baseline, case.failure_outcomes, EVIDENCE)
    try:
        if obs.crashes < 2:
            raise ProcessFitError("fewer than two failures")
        found = checks(obs, names=("exponential", "weibull", "lomax"))
    except (ProcessFitError, ValueError) as exc:
        return (head + f". The baseline's {len(obs.exposure)} valid trials cannot test the "
                f"constant-rate model ({exc}).")
    tests = {x.model: x for x in found.lr}
    shown = []
    for name, label in (("weibull", "a Weibull"), ("lomax", "a gamma-frailty (Lomax)")):
        if name in tests and name in found.fits:
            shape = found.fits[name].describe().get("shape")
            # A Lomax shape this large is the exponential itself (no frailty left).
            of = ("" if not shape else " at its exponential limit" if shape > 1e4
                  else f" of shape {shape:.2g}")
            shown.append(f"{label} process{of}, likelihood-ratio p = {tests[name].p_value:.2g}")
    rejected = any(x.p_value <= 0.05 for x in tests.values())
    verdict = ("reject a constant rate per unit of exposure at the 5% level" if rejected else
               "do not reject a constant rate per unit of exposure at the 5% level")
    return (head + f". The baseline's own {found.n} valid trials ({found.failures} failed, the "
            f"rest censored) {verdict} (" + "; ".join(shown) + ")"
            + ("; the per-arm rates and their exact Poisson intervals in this document assume "
               "one, so read them as descriptions, not as tests." if rejected else "."))


def determinism_sentence(declared: Mapping[str, Any], trials: Sequence[Trial],
                         claims: Sequence[ClaimDecision], design: DesignSpec) -> str:
    """What a run's claims owe to the case's declaration that its outcomes are deterministic
    (gpurepro.analyze.claims, ``declared`` as the run journaled it): which were decided from
    it, or how the run's trials refuted it (its ``design`` names the claims withdrawn then)."""
    head = f"The case declares its outcomes deterministic ({declared['reason']})"
    if checked(declared):
        return _checked_sentence(head, declared, trials, claims, design)
    ends: dict[str, dict[str, int]] = {}
    for t in trials:
        if t.outcome in EVIDENCE:
            seen = ends.setdefault(t.arm, {})
            seen[t.outcome] = seen.get(t.outcome, 0) + 1
    split = next(((arm, e) for arm, e in ends.items() if len(e) > 1), None)
    if split is not None:
        withdrawn = _withdrawn(design)
        ended = " and ".join(f"{o} ({n})" for o, n in sorted(split[1].items()))
        return (f"{head}, but the valid trials of {split[0]} ended as {ended}: the declaration is "
                f"refuted, and every claim was decided by the run's design alone"
                + (f"; the claims decided from it before ({', '.join(withdrawn)}) were withdrawn"
                   if withdrawn else "") + ".")
    by = [c.name for c in claims if c.deterministic and c.decided]
    if not by:
        return f"{head}; no valid trials of an arm ended differently, and no claim was decided from it."
    others = any(c.name not in by and c.family != "exploratory" for c in claims)
    return (f"{head}, and no valid trials of an arm ended differently: {', '.join(by)} "
            f"{'was' if len(by) == 1 else 'were'} decided from {declared['trials']} or more agreeing "
            f"valid trials of each of {'its' if len(by) == 1 else 'their'} arms, which is exact if "
            f"the declaration holds and spends none of the family-wise alpha, and not otherwise"
            + ("; the other claims by the run's design." if others else "."))


def _withdrawn(design: DesignSpec) -> list[str]:
    """The claims a run decided from its case's declaration before its trials refuted it (its
    design's ``deterministic.refuted.withdrawn``, as the decider journaled them)."""
    deterministic = design.described.get("deterministic")
    refuted = deterministic.get("refuted") if isinstance(deterministic, Mapping) else None
    withdrawn = refuted.get("withdrawn") if isinstance(refuted, Mapping) else None
    return [str(name) for name in withdrawn] if isinstance(withdrawn, list) else []


def _checked_sentence(head: str, declared: Mapping[str, Any], trials: Sequence[Trial],
                      claims: Sequence[ClaimDecision], design: DesignSpec) -> str:
    """determinism_sentence for a run that journaled its declaration checked
    (gpurepro.analyze.shortcut): refuted by any two valid trials of an arm whose signatures
    differ; its decisions, their check trials, and the alpha it spent."""
    alpha = float(declared.get("alpha", 0.05))
    bound = spent(declared)
    rates = " and ".join(f"1/{round(1 / f)}" if f > 0 else "0"
                         for f in declared.get("flake_rates") or [])
    if not usable(declared):
        return (f"{head}, but no number of agreeing trials keeps its chance of a false decision, "
                f"were it false for one arm (flaky at {rates}), within its share of alpha: "
                f"every claim was decided by the run's design.")
    by_arm: dict[str, list[Mapping[str, Any]]] = {}
    for t in trials:
        if t.outcome in EVIDENCE:
            by_arm.setdefault(t.arm, []).append(t.record)
    cost = (f"it spends {bound:.3g} of the family-wise alpha {alpha:g} (its chance of a false "
            f"decision, were it false for one arm whose trials end the other way with chance "
            f"{rates}), and the design decides the other claims at {alpha - bound:.3g}")
    split = next((d for arm, rs in by_arm.items() if (d := disagreement(arm, rs)) is not None),
                 None)
    if split is not None:
        withdrawn = _withdrawn(design)
        return (f"{head}, but two valid trials of {split.arm} (trials {split.trials[0]} and "
                f"{split.trials[1]}) differ in {', '.join(split.fields)}: the declaration is "
                f"refuted, and every claim was decided by the run's design alone"
                + (f"; the claims decided from it before ({', '.join(withdrawn)}) were withdrawn"
                   if withdrawn else "") + f"; {cost}.")
    by = [c.name for c in claims if c.deterministic and c.decided]
    if not by:
        return (f"{head}, checked: no two valid trials of an arm differ in their signature, and "
                f"no claim was decided from it; {cost}.")
    return (f"{head}, checked: no two valid trials of an arm differ in their signature (their "
            f"outcome, launches' agreement, output sha256 and mismatches): {', '.join(by)} "
            f"{'was' if len(by) == 1 else 'were'} decided from {declared['trials']} agreeing "
            f"valid trials of each of {'its' if len(by) == 1 else 'their'} arms and "
            f"{declared.get('check', 1)} later check trial that agreed too; {cost}.")


def concluded(case: Case, analysis: Analysis) -> dict[str, Any]:
    """The verdict a case's Conclusion declares, from the run's decisions (model.Conclusion)."""
    c = case.conclusion
    assert c is not None, "load_case refuses a case with neither a verdict nor a conclusion"
    if c.declared is not None:
        return declared.conclude(case, analysis, c.declared)
    def decision(name: str) -> str | None:  # an exploratory decision establishes nothing here
        claim = analysis.claims.get(name)
        return claim.confirmatory_decision if claim else None

    shown = [decision(name) for name in c.reproduces]
    status = ("reproduced" if all(d == "supported" for d in shown) else
              "not_reproduced" if "contradicted" in shown else "inconclusive")
    owned = (status == "reproduced" and c.owner is not None
             and all(decision(name) == "supported" for name in c.owner_because))
    arms = {a.name: a for a in case.arms}
    claims = {cl.name: cl for cl in case.claims}
    workarounds = [f"Workaround (claim {name}): {arms[claims[name].arm].description or claims[name].arm}"
                   for name in c.workaround if decision(name) == "supported"]
    on = f" on {analysis.device.name}" if analysis.device.name else ""
    said = {"reproduced": f"The report's failure happened{on}",
            "not_reproduced": f"The report's failure did not happen{on}",
            "inconclusive": f"Whether the report's failure happens{on} is not decided"}[status]
    return {"status": status,
            "sentences": [f"{said} (claims {', '.join(c.reproduces)})."],
            "owner": c.owner if owned else None,
            "owner_because": list(c.owner_because) if owned else [],
            "next": [*workarounds, *c.next,
                     *(c.next_not_reproduced if status != "reproduced" else ())],
            "hypotheses": [s for h in c.hypotheses if (s := stated(h, decision))]}


def exploratory_reasons(result: Result) -> dict[str, str]:
    """Why each exploratory claim of a run was kept out of its confirmatory family, as the run
    journaled its families before the first trial (gpurepro.analyze.decidability)."""
    families = result.options.families
    main = set(families.main) if families else set()
    chance = families.chance if families else {}
    threshold = families.threshold if families else None
    out = {}
    for c in result.claims:
        if c.family != "exploratory":
            continue
        p = chance.get(c.name)
        if result.options.scope == "main" and main and c.name not in main:
            out[c.name] = "beside the main question"
        elif isinstance(p, (int, float)) and threshold is not None and p < threshold:
            out[c.name] = f"the plan was unlikely to decide it: chance {p:.2f}"
    return out


def stopped_sentence(completion: Completion, claims: Sequence[ClaimDecision]) -> str:
    """What a stopped run's document can say: how far it got and which claims it decided."""
    confirmatory = [c for c in claims if c.family != "exploratory"]
    decided = [c.name for c in confirmatory if c.decided]
    return (f"Partial result: the run was stopped after {completion.trials} of its "
            f"{completion.planned} planned trials (its journal has no end record). "
            + (f"Decided before the stop: {', '.join(decided)}; " if decided
               else "No claim was decided before the stop; ")
            + f"the other {len(confirmatory) - len(decided)} confirmatory claim(s) are open "
              f"and the run can be resumed: {completion.resume}.")


def plan_sentence(plan: Mapping[str, Any], claims: Sequence[ClaimDecision]) -> str:
    """How long the run took, against the known-rates design for its own rates
    (analyze.known_rates): the fewest trials with which a one-look design that knew them decides
    every claim in most simulated runs, that chance, and a ratio only where it decides them."""
    confirmatory = [c for c in claims if c.family != "exploratory"]
    decided = [c for c in confirmatory if c.decided]
    what = ("decided every confirmatory claim" if len(decided) == len(confirmatory)
            else f"decided {len(decided)} of its {len(confirmatory)} confirmatory claims")
    those = "them" if len(decided) == len(confirmatory) else "those it decided"
    chance = plan.get("chance") or {}
    if "expected_outcome" not in plan:  # a document from before the design that decides
        return _expected_outcome_sentence(plan, what, those, chance)
    n = sum(int(k) for k in (plan.get("trials") or {}).values())
    head = (f"Time to the verdict: the run {what} in {plan['run_seconds']:.3g} s of trials; a "
            f"one-look design that knew this run's rates (its own trials), with its budget and "
            f"at most its trials per arm (gpurepro.analyze.known_rates: what such a design "
            f"needs, not a proven lower bound)")
    target = float(chance.get("target", 0.9))
    if not plan.get("reached"):
        return (head + f" decides all of {those} in {chance['decides_every_claim']:.0%} of "
                f"{chance['runs']} simulated runs at most ({n} trials), short of "
                f"{target:.0%}, so the run's time is not set against it.")
    ratio = f": the run took {plan['ratio']:.2f}x that" if plan.get("ratio") else ""
    return (head + f" decides all of {those} in {chance['decides_every_claim']:.0%} of "
            f"{chance['runs']} simulated runs with {n} trials, {plan['seconds']:.3g} s{ratio}.")


def _expected_outcome_sentence(plan: Mapping[str, Any], what: str, those: str,
                               chance: Mapping[str, Any]) -> str:
    """The sentence of a document whose known-rates plan is the expected-outcome allocation
    alone (recorded before the design that decides)."""
    head = (f"Time to the verdict: the run {what} in {plan['run_seconds']:.3g} s of trials; a "
            f"plan that knew this run's rates (its own trials) and took one look at alpha, its "
            f"trials allocated as if each ended at its expected outcome (gpurepro.analyze."
            f"known_rates, an estimate, not a lower bound), ")
    odds = (f"; drawn at random from those rates, that plan decides all of them in "
            f"{chance['decides_every_claim']:.0%} of {chance['runs']} simulated runs"
            if "decides_every_claim" in chance else "")
    if not plan.get("reached", True):
        unreached = ", ".join(plan.get("unreached") or [])
        return (head + f"would not decide every one of {those} within the run's most trials per "
                f"arm" + (f" (not reached: {unreached})" if unreached else "")
                + f"{odds}, so the run's time is not set against it.")
    ratio = f" (the run took {plan['ratio']:.2f}x that)" if plan.get("ratio") else ""
    return head + f"needs {plan['seconds']:.3g} s for {those}{ratio}{odds}."


def decide_claims(case: Case, run: RunHeader,
                  trials: Sequence[Mapping[str, Any]], stopped: bool = False) -> list[dict[str, Any]]:
    """Every claim of the run's family with its decision: journaled by a sequential run, or
    taken now in the one look of a fixed-size run. A run that was ``stopped`` keeps the
    decisions it journaled before the stop, and its other claims stay open (not decided,
    ``open``): no look is taken for it that the run did not take, and resuming it continues
    the same design."""
    decider = decider_for(case, run)
    wording = Wording.of(run.options)
    if stopped:
        decider.stop_open(trials)
    elif decider.looks_taken < decider.design.looks or len(decider.decisions) < len(decider.claims):
        decider.final(trials)
    level = decider.design.alpha_per_look / max(1, len(decider.claims))
    exploratory_level = decider.design.alpha / max(1, len(decider.exploratory))
    out = []
    for c in [*decider.claims, *decider.exploratory]:
        rec = decider.decisions[c.name]
        ref = decider.reference(c)
        exploratory = rec.get("family") == "exploratory"
        out.append({"name": c.name, "kind": c.kind, "arm": c.arm, "reference": ref,
                    **kind_of(c).fields(c),
                    **({"failures": list(c.failures)} if c.failures else {}),
                    **({"bound": c.bound} if c.bound != "above" else {}),
                    **({"unit": c.unit} if c.unit != "exposure" else {}),
                    **rec, "alpha": decider.design.alpha, "looks": decider.design.looks,
                    "sentence": sentence(c, ref, rec, case.exposure.per, case.exposure.unit,
                                         exploratory_level if exploratory else level,
                                         decider.design.supported_share, wording)})
    return out


def compose_verdict(given: Mapping[str, Any], claims: Sequence[ClaimDecision],
                    why_exploratory: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The case's verdict (measurements, status, owner, next, hypotheses) joined with the
    sentences of its decided claims. An owner may rest only on decided claims (supported, or
    contradicted: "plain modules crash more" is a decision too) of the confirmatory family,
    never on undecided or exploratory ones. Exploratory claims' sentences are listed apart,
    labelled: they are not covered by the run's family-wise error rate (``why_exploratory``:
    why each was kept apart, where the run's families say)."""
    verdict = dict(given)
    exploratory = [c for c in claims if c.family == "exploratory"]
    claims = [c for c in claims if c.family != "exploratory"]
    decided = {c.name: c.decision for c in claims}
    because = list(verdict.get("owner_because") or [])
    if verdict.get("owner"):
        weak = [n for n in because if decided.get(n) not in ("supported", "contradicted")]
        if not because or weak:
            cited = ", ".join(f"{n} ({decided.get(n, 'not a claim of this run')})" for n in weak)
            raise RecordError(f"the verdict names an owner resting on {cited or 'no claim'}; "
                              f"an owner may cite only decided claims")
    verdict["owner_because"] = because
    verdict["sentences"] = list(verdict.get("sentences") or []) + [
        c.sentence for c in claims if c.decided]
    verdict["not_decided"] = [c.sentence for c in claims if c.decision == "not_decided"]
    if exploratory:
        why = why_exploratory or {}
        verdict["exploratory"] = [
            "Exploratory (outside the family-wise error rate"
            + (f"; {why[c.name]}" if c.name in why else "")
            + f"): {c.sentence}" for c in exploratory]
    verdict.setdefault("hypotheses", [])
    verdict.setdefault("next", [])
    if not verdict["sentences"]:
        verdict["sentences"] = ["No claim of this run was decided."]
    return verdict
