"""Calibration: the whole decision pipeline of a run's design, simulated (STATS.md).

`python -m gpurepro calibrate <case> --runs N --seed S` draws N runs of a design and decides
each with the code a real run uses (`gpurepro.analyze.simulate`), then counts the runs with at least one
false decided claim, and the share of runs that decide each claim the right way. With
`--design-of RESULT` the design is the one that run had: its arms, its trials (fixed or
`--until-decided` with its looks and maximum), its budget and its two families (the claims it
kept exploratory, `gpurepro.analyze.decidability`); rates come from that run's own trials unless
`--from` names others.

Two scenarios:
- the global null of the rate and stratum claims: every arm ends as the baseline's trials do,
  at the baseline's rates (its own speed, budget and strata), its failures falling inside a
  stratum as often as its exposure is spent there. Lower/higher and concentrated claims then
  have no true direction (any decision is false); an equivalence claim is true. An outcome claim
  with a share above 0 is held exactly at its share (its arm's matching ends take the chance that
  makes the share exact, the rest end as another failure) where that can be done: a decision
  either way is then false. An outcome claim with share 0 ("it happens at all") is left as the
  arms make it: true where its outcome occurs, decided early, which is what frees Holm's
  thresholds for the others, the configuration a real run has.
- the observed effects: every arm as observed (an end never seen at rate 0); each claim's true
  direction follows from those rates; power is the share of runs that decide it that way.
The family-wise rate counts the confirmatory family, the promise a run makes; the exploratory
family's false decisions are counted apart.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..case.model import SINGLE_ARM_KINDS, TIMED_KINDS, Case, Claim
from ..errors import UsageError
from ..run.classify import EVIDENCE
from ..run.plan import DEFAULT_ALPHA, PlannedTrial
from .simulate import (
    ArmModel,
    Cause,
    Models,
    RunSpec,
    SimulatedRun,
    choose_documents,
    claim_arms,
    models_from,
    null_of,
    simulate_run,
    streams,
)

OTHER_DETAIL = "simulated: not the claimed outcome"
DECISIONS = ("supported", "contradicted", "not_decided")


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable result document ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("trials"), list):
        raise UsageError(f"{path}: not a result document (no trials)")
    return doc


def load_models(case: Case, root: Path, paths: Sequence[str | Path] | None, arms: Sequence[str],
                jobs: int = 1, duration_s: float | None = None,
                max_exposure: int | None = None, kind: str | None = None,
                flag: str = "--from", times: bool = False) -> Models:
    """Arm models from ``paths`` (given with ``flag``; with --from every arm must have valid
    trials there, with a run's --priors-from an arm they lack gets the run's default prior), or
    by rule from the committed results (simulate.choose_documents: same ``jobs``, design
    ``kind`` first; arms none covers drop out, the baseline may not). ``times``: timed arms
    draw trial times too (simulate.models_from)."""
    if paths:
        docs = [(Path(p), _read(Path(p))) for p in paths]
        seen = {t["arm"] for _, d in docs for t in d["trials"] if t.get("outcome") in EVIDENCE}
        missing = [a for a in arms if a not in seen]
        if missing and (flag == "--from" or case.baseline in missing):
            raise UsageError(f"{flag}: no valid trial of arm(s) {', '.join(missing)} in "
                             f"{', '.join(str(p) for p, _ in docs)}; the claims need them")
    else:
        docs = choose_documents(case, root, arms, jobs, kind)
    models = models_from(case, docs, root, arms, duration_s, max_exposure, times=times)
    if case.baseline not in models.arms:
        raise UsageError(f"no committed result of {case.name} under results/{case.name}/ has "
                         f"valid trials of its baseline at --jobs {jobs}; give result documents "
                         f"with {flag}")
    return models


# ---------------------------------------------------------------- truth under a scenario


SURVIVED = "survived"
SURVIVOR_DETAIL = "budget used up"  # what run.classify gives a trial that ran its budget


def p_end(m: ArmModel, mode: str) -> float:
    """The chance that one of the arm's trials ends by one of its causes within its budget (the
    rest run their budget and survive)."""
    if mode == "per_trial" or m.per_trial:
        return min(1.0, sum(c.rate for c in m.causes))
    if any(math.isinf(c.rate) for c in m.causes):
        return 1.0
    total = sum(c.rate for c in m.causes)
    return -math.expm1(-total * m.budget) if total > 0 and m.budget > 0 else 0.0


def p_matching(claim: Claim, m: ArmModel, mode: str) -> float:
    """The chance that one of the arm's trials ends as the outcome claim says. A survivor is a
    trial that no cause ended within its budget: that is what ``survived`` counts (the model's
    causes are only ways of failing)."""
    if claim.outcome == SURVIVED:
        survives = 1.0 - p_end(m, mode)
        return survives if not claim.detail or claim.detail in SURVIVOR_DETAIL else 0.0
    match = [c for c in m.causes if _matches(claim, c.outcome, c.detail)]
    if mode == "per_trial" or m.per_trial:
        return sum(c.rate for c in match)
    total = sum(c.rate for c in m.causes)
    if total <= 0 or not match:
        return 0.0
    if math.isinf(total):
        inf = [c for c in m.causes if math.isinf(c.rate)]
        return sum(1 for c in match if math.isinf(c.rate)) / len(inf)
    return sum(c.rate for c in match) / total * p_end(m, mode)


def p_failing(m: ArmModel, failures: Sequence[str], mode: str) -> float:
    """The chance that one of the arm's trials ends as one of ``failures`` (a share of trials:
    what a claim with ``unit="trial"`` compares)."""
    if mode == "per_trial" or m.per_trial:
        return m.rate_of(failures)
    total = sum(c.rate for c in m.causes)
    if total <= 0:
        return 0.0
    if math.isinf(total):
        inf = [c for c in m.causes if math.isinf(c.rate)]
        return sum(1 for c in inf if c.outcome in failures) / len(inf)
    return m.rate_of(failures) / total * p_end(m, mode)


def _matches(claim: Claim, outcome: str, detail: str) -> bool:
    return outcome == claim.outcome and (not claim.detail or claim.detail in detail)


def _direction(x: float, y: float, claim_says_lower: bool) -> str | None:
    """supported or contradicted for "x is lower than y" (``claim_says_lower``) or higher; None
    where they are equal."""
    if math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-15) or (math.isinf(x) and math.isinf(y)):
        return None
    return "supported" if (x < y) == claim_says_lower else "contradicted"


def truth(claim: Claim, reference: str | None, models: Mapping[str, ArmModel], mode: str,
          failure_outcomes: Sequence[str]) -> str | None:
    """The decision that is right under ``models``: "supported", "contradicted", or None where
    neither is (no direction: a decision either way is false). Every kind and bound a claim can
    have: an outcome claim's share of trials above its ``share``, or below it with
    ``bound="below"``, whatever the outcome (``survived`` included: a trial that ran its
    budget); a rate claim's rates per unit of exposure, or with ``unit="trial"`` its shares of
    failing trials."""
    a = models[claim.arm]
    failures = claim.failures or failure_outcomes
    if claim.kind == "concentrated":
        share, inside = a.strata.get(claim.stratum or "", (0.0, 0.0))
        if a.rate_of(failures) == 0 or math.isclose(share, inside, rel_tol=1e-9, abs_tol=1e-12):
            return None
        return "supported" if inside > share else "contradicted"
    if claim.kind == "outcome":
        q = p_matching(claim, a, mode)
        if math.isclose(q, claim.share, rel_tol=1e-9, abs_tol=1e-12):
            return None
        return _direction(q, claim.share, claim.bound == "below")
    ref = models[reference or ""]
    if claim.kind in TIMED_KINDS:
        return _timed_truth(claim, a, ref)
    if claim.unit == "trial":  # Fisher's exact test on the trials: shares of failing trials
        x, y = p_failing(a, failures, mode), p_failing(ref, failures, mode)
    else:
        x, y = _rate(a, failures), _rate(ref, failures)
    if (x == 0 and y == 0) or (math.isinf(x) and math.isinf(y)):
        return None
    if claim.kind == "equivalent":
        ratio = math.inf if y == 0 else x / y
        lo, hi = 1 / claim.margin, claim.margin
        if lo < ratio < hi:
            return "supported"
        return None if ratio in (lo, hi) else "contradicted"
    return _direction(x, y, claim.kind == "lower")


def _timed_truth(claim: Claim, a: ArmModel, ref: ArmModel) -> str | None:
    """A timed claim's right decision from the two arms' log mean times (the ratio of their
    geometric means, as gpurepro.analyze.timing decides it); None at a margin's edge or where
    either arm has no times."""
    if a.log_time is None or ref.log_time is None:
        return None
    d, edge = a.log_time[0] - ref.log_time[0], math.log1p(claim.margin)
    if claim.kind == "same":
        inside, outside = abs(d) < edge, abs(d) > edge
    elif claim.kind == "slower":
        inside, outside = d > edge, d < edge
    else:  # faster
        inside, outside = d < -edge, d > -edge
    return "supported" if inside else "contradicted" if outside else None


def _rate(m: ArmModel, failures: Sequence[str]) -> float:
    """The arm's failure rate per unit of exposure; for an arm modelled per trial, the rate
    that gives its chance of failing within its budget (0 where it has no budget)."""
    if not m.per_trial:
        return m.rate_of(failures)
    p = m.rate_of(failures)
    if m.budget <= 0 or p <= 0:
        return 0.0
    return -math.log1p(-min(p, 1 - 1e-12)) / m.budget


def _other_failure(case: Case, claim: Claim) -> str | None:
    """A failure outcome that the claim does not count as its own (to end a held arm's other
    trials without matching it)."""
    return next((o for o in [claim.outcome, *case.failure_outcomes]
                 if o and o != SURVIVED and not _matches(claim, o, OTHER_DETAIL)), None)


def _ending(m: ArmModel, mode: str, p: float, causes: Sequence[Cause]) -> ArmModel | None:
    """The arm with ``causes`` (their proportions kept) scaled so that a trial ends by one of
    them with chance ``p``; None where that cannot be set (no budget to fail within)."""
    total = sum(c.rate for c in causes)
    if total <= 0 or any(math.isinf(c.rate) for c in causes):
        return None
    if mode == "per_trial" or m.per_trial:
        target = p
    elif m.budget > 0 and p < 1:
        target = -math.log1p(-p) / m.budget  # the total rate that ends p of the trials
    else:
        return None
    return replace(m, causes=tuple(Cause(c.outcome, c.detail, c.rate * target / total)
                                   for c in causes))


def hold_outcome_claims(case: Case, claims: Sequence[Claim], models: dict[str, ArmModel],
                        mode: str) -> tuple[dict[str, ArmModel], dict[str, str]]:
    """The null scenario's outcome claims with a share above 0, each held exactly at its share
    where that can be done (whichever its bound: at the share, a decision either way is
    false); the others (and why) are returned apart and not counted.

    - ``survived``: the arm's trials fail (its causes, in their proportions, or the case's
      first failure where it has none) in exactly 1 - share of its trials; the rest run their
      budget, and it is they that the claim counts;
    - another outcome: where the arm's trials end in at least ``share`` of its trials, the
      claimed end takes ``share`` of them and another failure the rest (the arm's failure rate
      unchanged); otherwise the claimed end alone, in ``share`` of them, the rest surviving."""
    left_out: dict[str, str] = {}
    done: dict[str, str] = {}
    for c in claims:
        if c.kind != "outcome" or c.share == 0:
            continue
        m = models[c.arm]
        if c.arm in done:
            left_out[c.name] = (f"{done[c.arm]} already sets how {c.arm}'s trials end; one outcome "
                                f"claim per arm can be held at its share")
            continue
        if c.share >= 1:
            left_out[c.name] = f"a share of {c.share:g} cannot be held below 1"
            continue
        other = _other_failure(case, c)
        held: ArmModel | None
        if c.outcome == SURVIVED:
            causes = list(m.causes) or ([Cause(other, OTHER_DETAIL, 1.0)] if other else [])
            held = _ending(m, mode, 1 - c.share, causes)
            why = f"{c.arm}'s trials cannot be made to fail in {1 - c.share:g} of them (no budget)"
        else:
            ends = p_end(m, mode)
            total = sum(x.rate for x in m.causes)
            if ends >= c.share and other is not None and math.isfinite(total) and total > 0:
                pm = c.share / ends
                held = replace(m, causes=(Cause(c.outcome or "", c.detail or "", total * pm),
                                          Cause(other, OTHER_DETAIL, total * (1 - pm))))
            else:
                held = _ending(m, mode, c.share, [Cause(c.outcome or "", c.detail or "", 1.0)])
            why = f"{c.arm}'s trials cannot be made to end as {c.outcome} in {c.share:g} of them"
        if held is None:
            left_out[c.name] = why
            continue
        models[c.arm] = held
        done[c.arm] = c.name
    return models, left_out


# ---------------------------------------------------------------- simulation


def _chunk(spec: RunSpec, models: Mapping[str, ArmModel], seed: int, scenario: int, start: int,
           stop: int) -> list[SimulatedRun]:
    return [simulate_run(spec, models, rng) for rng in streams(seed, scenario, range(start, stop))]


def simulate(spec: RunSpec, models: Mapping[str, ArmModel], seed: int, scenario: int, runs: int,
             workers: int) -> list[SimulatedRun]:
    if workers <= 1 or runs < 50:
        return _chunk(spec, models, seed, scenario, 0, runs)
    size = max(10, math.ceil(runs / (workers * 4)))
    bounds = [(s, min(runs, s + size)) for s in range(0, runs, size)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        parts = pool.map(_chunk, *zip(*[(spec, models, seed, scenario, s, e) for s, e in bounds],
                                      strict=True))
        return [r for part in parts for r in part]


def summarize(results: Sequence[SimulatedRun], claims: Sequence[Claim],
              exploratory: Sequence[str], truths: Mapping[str, str | None],
              left_out: Mapping[str, str]) -> dict[str, Any]:
    runs = len(results)
    any_false = any_false_exploratory = 0
    counts: dict[str, Counter[str]] = {c.name: Counter() for c in claims}
    false_by: Counter[str] = Counter()
    for decisions, *_ in results:
        wrong = wrong_exploratory = False
        for name, d in decisions.items():
            counts[name][d] += 1
            if name in left_out or d == "not_decided" or d == truths[name]:
                continue
            false_by[name] += 1
            if name in exploratory:
                wrong_exploratory = True
            else:
                wrong = True
        any_false += wrong
        any_false_exploratory += wrong_exploratory
    per_claim = {}
    for c in claims:
        n = counts[c.name]
        per_claim[c.name] = {"true": truths.get(c.name) if c.name not in left_out else "left out",
                             "family": "exploratory" if c.name in exploratory else "confirmatory",
                             **{d: n[d] / runs for d in DECISIONS},
                             "false": None if c.name in left_out else false_by[c.name] / runs}
    rate = any_false / runs
    trials = [r.trials for r in results]
    seconds = [r.seconds for r in results]
    return {"runs": runs, "false_claim_rate": rate,
            "false_claim_rate_se": math.sqrt(rate * (1 - rate) / runs),
            "exploratory_false_claim_rate": any_false_exploratory / runs,
            "mean_trials": statistics.fmean(trials), "max_trials_run": max(trials),
            "median_seconds": statistics.median(seconds),
            "refuted": sum(1 for r in results if r.refuted) / runs,
            # Where more trials of an arm could have bought a decision: the share of runs in
            # which it ran its most trials and a confirmatory claim of it was left not decided
            # (none: a larger maximum for it, the baseline's included, would change no run).
            "stopped_at_most_trials": {a: k / runs for a, k in sorted(
                Counter(a for r in results for a in r.stopped_at_most).items())},
            "mean_capped_survivors": statistics.fmean(r.capped for r in results),
            "claims": per_claim, "left_out": dict(left_out)}


def family_of(case: Case, design: Any, arms: Sequence[str], exploratory: Sequence[str],
              decider: Any = None) -> tuple[list[Claim], list[str]]:
    """The claims a run of ``arms`` decides (both families), and the exploratory names."""
    from .claims import Decider

    d = (decider or Decider)(case.claims, case.baseline, design, case.failure_outcomes,
                             case.exposure.per, arms, exploratory=exploratory)
    return [*d.claims, *d.exploratory], [c.name for c in d.exploratory]


def calibrate(case: Case, models: Models, runs: int, seed: int, design: Any, sequential: bool,
              trials: int, workers: int = 1, decider: Any = None,
              scenarios: Sequence[str] = ("null", "observed"), exploratory: Sequence[str] = (),
              order: Sequence[PlannedTrial] | None = None,
              priors: Mapping[str, Mapping[str, Any]] | None = None,
              first: Sequence[str] = (),
              deterministic: Mapping[str, Any] | None | str = "case") -> dict[str, Any]:
    """Simulate ``runs`` runs of the design over the models' arms under each scenario.

    ``design`` (a `gpurepro.analyze.claims.Design`) and ``decider`` (default: `gpurepro.analyze.claims.Decider`)
    may be replaced, e.g. by a deliberately broken one, to show that the simulation catches it.

    ``deterministic``: a declaration of deterministic outcomes as a run journals it ("case":
    the case's own, Case.determinism(); None: none). With one, the observed effects are
    simulated with its shortcut (as the run decides), the global null without it (the
    family-wise rate of the design the run falls back to, which decides every claim the
    declaration does not), and the global null again with it (``deterministic.null_if_false``:
    the outcome claims held at their share are not deterministic, so this is the false-claim
    rate if the declaration is wrong there, and how often the run's own trials refute it)."""
    arms = tuple(models.arms)
    family, exploratory = family_of(case, design, arms, exploratory, decider)
    null, left_out = hold_outcome_claims(case, family, null_of(case, models), models.mode)
    declared = case.determinism() if deterministic == "case" else deterministic
    assert declared is None or isinstance(declared, Mapping)
    spec = RunSpec(case=case.name, arms=arms, claims=tuple(family),
                   exploratory=tuple(exploratory), baseline=case.baseline,
                   failure_outcomes=tuple(case.failure_outcomes), per=case.exposure.per,
                   design=design, sequential=sequential, trials=trials, mode=models.mode,
                   strata=tuple(case.strata), order=tuple(order) if order else None,
                   decider=decider, priors=priors if priors is not None else priors_of(models),
                   first=tuple(first), deterministic=declared)

    def ref(c: Claim) -> str | None:
        return None if c.kind in SINGLE_ARM_KINDS else (c.reference or case.baseline)

    out: dict[str, Any] = {}
    for index, (name, scenario_models, skip, shortcut) in enumerate(
            (("null", null, left_out, False), ("observed", models.arms, {}, True),
             ("null_if_false", null, left_out, True))):
        if name not in scenarios and not (name == "null_if_false" and "null" in scenarios):
            continue
        if name == "null_if_false" and not declared:
            continue
        truths = {c.name: truth(c, ref(c), scenario_models, models.mode, case.failure_outcomes)
                  for c in family}
        out[name] = summarize(simulate(spec if shortcut else replace(spec, deterministic=None),
                                       scenario_models, seed, index, runs, workers),
                              family, exploratory, truths, skip)
        if not (declared and shortcut):
            out[name].pop("refuted")
    alpha = float(design.alpha)
    limit = alpha + 2 * math.sqrt(alpha * (1 - alpha) / runs)
    result: dict[str, Any] = {
        "case": case.name, "runs": runs, "seed": seed, "alpha": alpha,
        "alpha_plus_2_mc_se": limit,
        "design": {**design.describe(), "sequential": sequential,
                   "trials_per_arm": None if sequential else trials,
                   "plan": ("the run's own plan order" if order else
                            "gpurepro.plan.make_plan's randomized blocks of the arms, a new shuffle "
                            "each run")
                           + ", one trial at a time (--jobs 1); with --until-decided a trial is "
                             "skipped once its arm is not needed, as the run stage does",
                   "arms": list(arms), "claims": [c.name for c in family],
                   "exploratory": list(exploratory)},
        "rates_from": {"documents": models.documents, "mode": models.mode,
                       "model": ("competing ends, each a Poisson process in exposure; a survivor "
                                 "censored at its arm's budget" if models.mode == "exposure" else
                                 "no exposure recorded: per-trial chances"),
                       "null": ("every arm ends as the baseline's trials do, at its rates (its own "
                                "speed, budget and strata); failures fall in a stratum as often "
                                "as the exposure spent there; outcome claims with a share above 0 "
                                "held at their share"),
                       "arms": models.summary},
    }
    if "null" in out:
        fw = out["null"]["false_claim_rate"]
        result.update(family_wise_false_claim_rate=fw,
                      family_wise_false_claim_rate_se=out["null"]["false_claim_rate_se"],
                      holds_alpha=fw <= limit)
    if declared:
        result["deterministic"] = {
            "declared": dict(declared),
            "how": ("the observed effects simulated with the declaration's shortcut, as the run "
                    "decides; the global null without it (the design the run falls back to, "
                    "which decides every claim the declaration does not); null_if_false: the "
                    "global null with it, where the outcome claims held at their share are not "
                    "deterministic (the declaration is false there): its false-claim rate, and "
                    "the share of runs whose trials refuted it"),
            **({"null_if_false": {k: out["null_if_false"][k] for k in
                                  ("false_claim_rate", "false_claim_rate_se", "refuted",
                                   "mean_trials")}} if "null_if_false" in out else {})}
    power: dict[str, float | None] = {}
    for c in family if "observed" in out else ():
        d = out["observed"]["claims"][c.name]
        power[c.name] = None if d["true"] is None else d[d["true"]]
    result.update(power=power, null=out.get("null"), observed=out.get("observed"))
    return result


# ---------------------------------------------------------------- command line


def _workers(given: int | None) -> int:
    if given:
        return given
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def priors_of(models: Models) -> dict[str, dict[str, Any]]:
    """The decisive design's allocation priors (journaled form) from arm models."""
    from .allocate import ArmPrior

    return {a: ArmPrior.of_model(m).to_json() for a, m in models.arms.items()}


def design_of(document: Mapping[str, Any]) -> tuple[Any, bool, int, list[str], list[str], Mapping[str, Any]]:
    """(Design, sequential, trials per arm, arms, exploratory claims, budget) of a recorded run."""
    from .claims import Design

    plan = document["plan"]
    options = plan.get("options") or {}
    stopping = options.get("stopping")
    if stopping:
        design, sequential = Design.from_description(stopping), True
        # A run from before claims journaled its looks as trial counts, the last its maximum.
        trials = int(stopping.get("max_trials") or design.max_trials
                     or max(int(n) for n in plan["trials_per_arm"].values()))
    else:
        design, sequential = Design(alpha=DEFAULT_ALPHA), False
        trials = max(int(n) for n in plan["trials_per_arm"].values())
    families = options.get("families") or {}
    return (design, sequential, trials, list(plan["arms"]), list(families.get("exploratory") or ()),
            options.get("budget") or {})


def run_calibration(case: Case, root: Path, stopping: Mapping[str, Any] | None, trials: int,
                    alpha: float | None, rates_from: Sequence[str] | None, runs: int, seed: int,
                    workers: int | None, as_json: bool, design_of_result: str | None = None,
                    spending: str | None = None, supported_share: float | None = None) -> int:
    """`calibrate`: simulate the case's claims on the design asked for (``stopping``, the
    sequential design, or ``trials`` per arm at ``alpha``), or on the design of a recorded run
    (``design_of_result``: its arms, trials, looks, budget and exploratory claims, with rates from
    its own trials unless ``rates_from`` names others), and print the result. ``spending``:
    a decisive run's design with that alpha spending over its later looks in place of the one
    it journaled (the same looks, families and priors); ``supported_share``: likewise, each
    claim's share of its level for its stated direction."""
    from .claims import DecisiveDesign, Design

    exploratory: list[str] = []
    without: list[str] = []
    budget: Mapping[str, Any] = {}
    priors = None
    first: list[str] = []
    sources: list[str] | None
    deterministic: Mapping[str, Any] | None | str = "case"
    if design_of_result:
        recorded = _read(Path(design_of_result))
        design, sequential, trials, arms, exploratory, budget = design_of(recorded)
        if spending is not None or supported_share is not None:
            if not isinstance(design, DecisiveDesign):
                raise UsageError(f"--alpha-spending and --supported-share: {design_of_result} is "
                                 f"not a run of the decisive design")
            design = replace(design, spending=spending or design.spending,
                             supported_share=(design.supported_share if supported_share is None
                                              else supported_share))
        # The declaration that run journaled (none: it decided every claim by its design).
        deterministic = ((recorded.get("plan") or {}).get("options") or {}).get("deterministic")
        recorded_stopping = ((recorded.get("plan") or {}).get("options") or {}).get("stopping") or {}
        priors = recorded_stopping.get("priors")
        first = list(recorded_stopping.get("first") or ())
        sources = list(rates_from or [design_of_result])
        if not rates_from:
            # Rates from the run's own trials: an arm it has none of is not simulated (its claims
            # are not decided in any simulated run either), and the output says so.
            seen = {t.get("arm") for t in recorded["trials"] if t.get("outcome") in EVIDENCE}
            if case.baseline in seen:
                without = [a for a in arms if a not in seen]
                arms = [a for a in arms if a in seen]
            else:
                # No rates of its own to compare with (every baseline trial unsupported, or a
                # run without the baseline): its design with the committed results' rates, by
                # the rule a run without --from takes them; the output names the documents.
                sources = None
    else:
        design = Design.from_description(stopping) if stopping else Design(
            alpha=alpha if alpha is not None else DEFAULT_ALPHA)
        sequential = stopping is not None
        arms = claim_arms(case)
        sources = list(rates_from) if rates_from else None
    models = load_models(case, root, sources, arms, duration_s=budget.get("duration_s"),
                         max_exposure=budget.get("max_exposure"), times=True)
    started = time.monotonic()
    result = calibrate(case, models, runs, seed, design, sequential, trials, _workers(workers),
                       exploratory=exploratory, priors=priors, first=first,
                       deterministic=deterministic)
    result["wall_s"] = round(time.monotonic() - started, 2)
    if design_of_result:
        result["design"]["of"] = str(design_of_result)
        if without:
            result["design"]["arms_without_valid_trials"] = without
    print(json.dumps(result, indent=1) if as_json else text(result))
    sys.stdout.flush()
    return 0


def text(r: Mapping[str, Any]) -> str:
    d = r["design"]
    if d.get("design") == "decisive":
        alphas = d.get("alpha_at_looks") or [
            d["alpha_first_look"], *([d["alpha_later_looks"]] * (len(d["look_at"]) - 1))]
        what = (f"the decisive design, looks at {', '.join(map(str, d['look_at']))} valid trials, "
                f"alpha {', '.join(f'{a:.3g}' for a in alphas)} "
                f"({d.get('spending', 'even')} spending), at most {d['max_trials']} per arm, "
                f"{d.get('supported_share', 0.5):g} of each claim's level for its stated "
                f"direction")
    elif d["sequential"]:
        what = f"--until-decided, looks every {d['step']} up to {d['max_trials']} trials"
    else:
        what = f"{d['trials_per_arm']} trials per arm"
    lines = [f"{r['case']}: {r['runs']} simulated runs per scenario ({what}, {len(d['arms'])} arms, "
             f"alpha {r['alpha']:g}, seed {r['seed']}; rates from "
             f"{', '.join(r['rates_from']['documents'])})"]
    if r.get("null"):
        lines.append(f"family-wise false-claim rate under the global null: "
                     f"{r['family_wise_false_claim_rate']:.4f} +/- "
                     f"{r['family_wise_false_claim_rate_se']:.4f} "
                     f"({'holds' if r['holds_alpha'] else 'DOES NOT HOLD'} alpha); exploratory "
                     f"family: {r['null']['exploratory_false_claim_rate']:.4f}")
    det = r.get("deterministic")
    if det:
        lines.append(f"the case declares its outcomes deterministic ({det['declared']['reason']}): "
                     f"a claim on shares of trials is decided once {det['declared']['trials']} "
                     f"valid trials of each of its arms agree; the rate above is the design's "
                     f"without it, the observed effects below with it")
        f = det.get("null_if_false")
        if f:
            lines.append(f"  if the declaration is false (the global null's held shares): false-claim "
                         f"rate {f['false_claim_rate']:.4f} +/- {f['false_claim_rate_se']:.4f}, "
                         f"refuted by the run's trials in {f['refuted']:.1%} of runs")
    if r.get("observed"):
        o = r["observed"]
        lines.append(f"mean trials per run under the observed effects: "
                     f"{o['mean_trials']:.1f}; median GPU time {o['median_seconds']:.0f} s; "
                     f"capped survivors per run {o['mean_capped_survivors']:.1f}")
        at_most = o["stopped_at_most_trials"]
        lines.append("arms at their most trials with a claim left not decided: " + (
            ", ".join(f"{a} in {k:.1%} of runs" for a, k in at_most.items()) if at_most
            else "none (a larger maximum, the baseline's included, would change no run)"))
        lines.append("power under the observed effects:")
        for name, p in r["power"].items():
            c = r["observed"]["claims"][name]
            tag = " (exploratory)" if c["family"] == "exploratory" else ""
            lines.append(f"  {name}{tag}: " + ("no true direction" if p is None
                                               else f"{p:.3f} ({c['true']})"))
    if d.get("arms_without_valid_trials"):
        lines.append(f"  (not simulated: {', '.join(d['arms_without_valid_trials'])}, which had no "
                     f"valid trial in the run; their claims are left out)")
    for name, why in (r.get("null") or {}).get("left_out", {}).items():
        lines.append(f"  (null: {name} not counted: {why})")
    if "wall_s" in r:
        lines.append(f"{r['wall_s']} s")
    return "\n".join(lines)
