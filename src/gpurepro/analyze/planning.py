"""A new run's claim families and decisive design, planned by simulating its own plan against
the committed rates (numpy, scipy: gpurepro[analysis]).

``assess``: the run's plan is simulated (`gpurepro.analyze.simulate`: the plan's order and
design, the run's budget, arm models from the newest committed results at the same trials at
a time) and each claim's chance of ending supported or contradicted is counted; claims below
``decidability.THRESHOLD`` move to the exploratory family, and the rest are simulated again
without them until no claim moves (gpurepro.analyze.decidability says why, and words it).
``plan_decisive``: the decisive design of the run, its first look where the committed rates
predict the decisions and its arms' allocation priors from them, with the families of that
very design. gpurepro.analyze.designing calls these where a run has the analysis packages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..case.model import Case
from ..errors import UsageError
from ..model.design import DEFAULT_ALPHA, DesignSpec
from ..model.plan import Plan
from .allocate import ArmPrior, horizon_arms, rate_claims
from .calibrate import calibrate, family_of, load_models, priors_of
from .claim_kinds import kind_of, reference_of
from .claims import DecisiveDesign, Design
from .decidability import RUNS, THRESHOLD, beside_main, check_priors, main_claims, not_computed
from .horizon_design import PooledTrials, choose_horizon, pooled_trials
from .horizon_prior import prior_at
from .known_rates import design_that_decides, plan_for
from .recorded import design_kind
from .simulate import PRIOR_RULE

# What other modules use; the rest is this module's own.
__all__ = ["assess", "design_for", "plan_decisive"]


def assess(case: Case, plan: Plan, design: Any, sequential: bool, trials: int,
           budget: Mapping[str, Any], jobs: int, root: Path, runs: int = RUNS,
           threshold: float = THRESHOLD, workers: int = 1,
           fixed_exploratory: Sequence[str] | None = None, scope: str = "arms",
           priors_from: Sequence[Path] | None = None, models: Any = None,
           deterministic: Mapping[str, Any] | None | str = "case",
           pool: ProcessPoolExecutor | None = None) -> dict[str, Any]:
    """The families of a run of ``plan``: each claim's chance, the exploratory ones, and what
    the simulation expects the run to take. The main question's claims stay confirmatory
    whatever their chance (what the report asks is never dropped); in a main-question run the
    others are exploratory (``beside_main``). ``deterministic``: the declaration the run
    journals, with ``design`` already at the alpha it leaves ("case": the case's own at the
    design's alpha, calibrate's). Each arm at its committed rates, a rate of zero included:
    the chance of a decision at those rates (calibrate's power bounds it instead)."""
    if any(kind_of(c).timed for c in case.claims):
        return not_computed("not computed: the simulation models failures, and the case's "
                            "timed claims are decided on the times its trials measure",
                            beside_main(case, plan, scope))
    arms = list(plan.arms)
    family, _ = family_of(case, design, arms, ())
    if not family:
        return not_computed("the run's arms take part in no claim")
    if models is None:
        try:
            models = load_models(case, root, priors_from, arms, jobs, budget.get("duration_s"),
                                 budget.get("max_exposure"), kind=design_kind(design.describe()
                                                                              if sequential else None),
                                 flag="--priors-from")
        except UsageError as exc:
            if priors_from:
                raise  # the documents the run was given must be usable
            return not_computed(f"not computed: {exc}", beside_main(case, plan, scope))
    main = main_claims(case, plan)
    modeled = set(models.arms)
    order = [t for t in plan.order if t.arm in modeled]

    def reference(c: Any) -> str | None:
        return reference_of(c, case.baseline)

    unknown = {c.name for c in family
               if c.arm not in modeled or (reference(c) is not None and reference(c) not in modeled)}
    exploratory: list[str] = list(fixed_exploratory if fixed_exploratory is not None
                                  else beside_main(case, plan, scope))
    priors = (design_priors(models) if getattr(design, "first_look", None) is not None else None)
    while True:
        r = calibrate(case, models, runs,
                      plan.seed, design, sequential, trials, workers, scenarios=("observed",),
                      exploratory=exploratory, order=order, priors=priors, first=main,
                      deterministic=deterministic, bound_zero=False, pool=pool)
        observed = r["observed"]
        chance = {name: None if name in unknown else 1.0 - c["not_decided"]
                  for name, c in observed["claims"].items()}
        low = [n for n, p in chance.items() if n not in exploratory and n not in main
               and p is not None and p < threshold]
        if not low or fixed_exploratory is not None:
            break
        exploratory += low
    return {"computed": True, "threshold": threshold, "runs": runs, "seed": plan.seed,
            "rates_from": models.documents,
            "chance": chance, "exploratory": [c.name for c in family if c.name in exploratory],
            "main": main, "no_estimate": sorted(unknown),
            "expected": {"trials": observed["mean_trials"],
                         "seconds_median": observed["median_seconds"],
                         "arms_without_rates": sorted(set(arms) - modeled)}}


def design_for(spec: DesignSpec, declared: Mapping[str, Any] | None) -> Design:
    """The design a run's claims are decided under: its sequential design as journaled, or a
    fixed-size run's one look at the default alpha less what a checked declaration of
    deterministic outcomes spends."""
    if spec.sequential:
        return Design.of(spec)
    return Design(alpha=DEFAULT_ALPHA - float((declared or {}).get("bound", 0.0)))


def design_priors(models: Any) -> dict[str, dict[str, Any]]:
    return priors_of(models)


FIRST_LOOK_MARGIN = 1.15  # the first look this much past the known-rates plan's trials
# The first look is where a one-look design at the first look's share of alpha decides every
# confirmatory claim in at least FIRST_LOOK_DECIDES of its simulated runs (known_rates.
# design_that_decides, searched around the expected-outcome allocation). The expected-outcome
# allocation alone (at alpha, FIRST_LOOK_MARGIN past it) set a look at which no simulated run of
# the tile main job decided, spending half of alpha there; 0.9 (the known-rates design's own
# target) sets it where nearly every run stops but later than most need. The rule is alpha-free:
# the looks and their alphas are fixed before the first trial (docs/statistics.md, "Where the
# first look falls").
FIRST_LOOK_DECIDES = 0.75
FIRST_SHARE = DecisiveDesign.first_share
# The candidate first looks, as multiples of the expected-outcome look: they span the schedule's
# growth of 1.5 (where a look falls against the trials most runs need to decide moves the
# tile main job's simulated median by up to 70 s from one neighbouring look to the next) and a
# look skipped.
FIRST_LOOK_SPAN = (1.0, 1.2, 1.45, 1.75, 2.25)
FIRST_LOOK_RULE = (f"of the expected-outcome look ({FIRST_LOOK_MARGIN:g} times the "
                   f"expected-outcome allocation's trials) times "
                   f"{', '.join(f'{f:g}' for f in FIRST_LOOK_SPAN)}, and the fewest trials (never "
                   f"before the expected-outcome look) whose one-look design at the first look's "
                   f"share of alpha ({FIRST_SHARE:g}) decides every confirmatory claim in at "
                   f"least {FIRST_LOOK_DECIDES:.0%} of its simulated runs, the one whose "
                   f"design's simulated runs (the plan's seed: the same draws for each) have the "
                   f"shortest median time")


def plan_decisive(case: Case, plan: Plan, alpha: float, max_trials: int,
                  budget: Mapping[str, Any], jobs: int, root: Path, runs: int = RUNS,
                  threshold: float = THRESHOLD, workers: int = 1, scope: str = "arms",
                  priors_from: Sequence[Path] | None = None, spending: str = "even",
                  supported_share: float = 0.5,
                  horizon: float | str | None = None,
                  deterministic: Mapping[str, Any] | None | str = "case",
                  gpu: str | None = None,
                  ) -> tuple[DesignSpec, dict[str, Any]]:
    """The decisive design of a run of ``plan`` (its journaled form: kind, alpha, first look,
    total, the arms' priors) and its families. The priors are the committed rates' models of the
    plan's arms; the first look is where a one-look design at the first look's share of alpha
    decides in FIRST_LOOK_DECIDES of its simulated runs, and never before FIRST_LOOK_MARGIN past
    the trial count of the known-rates plan (the trials a design that knew those rates would
    plan, analyze.known_rates) for the claims of the confirmatory family; the families are
    assessed on this very design.

    ``horizon``: "auto" to decide the rate claims with trials as the unit, at the horizon whose
    known-rates plan is shortest (analyze.horizon_design; every trial of their arms then runs
    to at most it, and the arms' priors are their chances before it), a number for that
    horizon, None for the exact conditional test of constant rates. ``gpu``: the GPU model the
    run is on, whose committed trials an "auto" horizon is chosen from (pooled_trials; any
    model where None) and whose committed results the priors come from first (PRIOR_RULE)."""
    total = len(plan.order)
    try:
        models = load_models(case, root, priors_from, list(plan.arms), jobs,
                             budget.get("duration_s"), budget.get("max_exposure"),
                             kind="decisive", flag="--priors-from", gpu=gpu)
    except UsageError:
        if priors_from:
            raise  # the documents the run was given must be usable
        models = None
    priors = {a: ArmPrior.of_model(m) for a, m in (models.arms.items() if models else [])}
    check_priors(priors)

    at: float | None = None  # the horizon, once chosen
    choice: dict[str, Any] | None = None
    first_look_choice: dict[str, Any] = {}  # how the last first look was set, where simulated

    # The first look of each set of confirmatory claims, and how it was set where simulated:
    # the families' first guess and the final design often name the same claims (in every
    # committed case's default plan), and the one-look design behind a look is simulated anew
    # each time it is asked for (about 1.5 s for the tile main job).
    looks: dict[tuple[str, ...], tuple[int, dict[str, Any] | None]] = {}

    def first_look_for(claim_names: Sequence[str]) -> int:
        key = tuple(sorted(claim_names))
        if key not in looks:
            looks[key] = first_look_of(key)
        look, how = looks[key]
        if how is not None:
            first_look_choice.clear()
            first_look_choice.update(how)
        return look

    def first_look_of(claim_names: Sequence[str]) -> tuple[int, dict[str, Any] | None]:
        chosen = [c for c in case.claims if c.name in claim_names]
        if not priors or not chosen:
            return max(1, min(total, len(plan.arms))), None
        strata = {a: m.strata for a, m in models.arms.items()} if models else {}
        known = plan_for(case, chosen, priors, strata, alpha, max_trials, supported_share, horizon=at)
        if known.get("unreached"):  # what the plan cannot decide must not set the first look
            chosen = [c for c in chosen if c.name not in known["unreached"]]
            known = plan_for(case, chosen, priors, strata, alpha, max_trials, supported_share,
                             horizon=at)
        expected_trials = sum(known["trials"].values())
        expected = int(max(1, min(total, math.ceil(FIRST_LOOK_MARGIN * expected_trials))))
        # Times are not simulated by the one-look design: a case with timed claims keeps the
        # expected-outcome rule.
        if models is None or any(kind_of(c).timed for c in chosen):
            return expected, None
        found = design_that_decides(case, chosen, models, priors, known["trials"],
                                    alpha * FIRST_SHARE, max_trials, supported_share, horizon=at,
                                    decides=FIRST_LOOK_DECIDES)
        if not found["reached"]:  # no allocation decides that often: the expected-outcome look
            return expected, None
        one_look = sum(found["trials"].values())
        # Never before the expected-outcome look: on ctx_get_device_v2's committed rates the
        # one-look design's 134 trials stopped fewer simulated runs at the first look than 137.
        look = max(expected, int(max(1, min(total, one_look))))
        return look, {"rule": FIRST_LOOK_RULE, "first_look": look, "one_look_trials": one_look,
                      "chance": found["chance"], "expected_outcome_trials": expected_trials}

    in_plan = [c.name for c in case.claims if c.arm in plan.arms]
    beside = beside_main(case, plan, scope)
    if horizon is not None and horizon != "none" and models is not None:
        confirm = [c for c in case.claims if c.name in in_plan and c.name not in beside]
        pooled = (None if priors_from or horizon != "auto" else
                  pooled_trials(case, root, horizon_arms(confirm, case.baseline), jobs, gpu))
        picked = _horizon_for(case, confirm, models, priors, horizon, alpha, max_trials,
                              supported_share, float(budget.get("duration_s") or 0), pooled)
        if picked is not None:
            at, priors, choice = picked
    # One pool of worker processes for every design simulated below: each keeps its cache of
    # exact tests from one candidate design to the next (a pool per design started cold).
    with _simulation_pool(workers) as pool:
        # The families of a first guess of the design (every claim confirmatory but those beside
        # the main question), then the first look for the confirmatory ones, and the families of
        # that final design.
        design = DecisiveDesign(alpha=alpha, max_trials=max_trials,
                                first_look=first_look_for([n for n in in_plan if n not in beside]),
                                total=total, spending=spending, supported_share=supported_share,
                                horizon=at)
        families = assess(case, plan, design, True, max_trials, budget, jobs, root, runs,
                          threshold, workers, scope=scope, models=models,
                          deterministic=deterministic, pool=pool)
        confirmatory = [n for n in in_plan if n not in families.get("exploratory", beside)]
        guess = design
        design = DecisiveDesign(alpha=alpha, max_trials=max_trials,
                                first_look=first_look_for(confirmatory), total=total,
                                spending=spending, supported_share=supported_share, horizon=at)
        # A first look the one-look design set (simulated rates, no timed claim): the candidates
        # around it are simulated and the quickest is taken, with its families.
        if families.get("computed") and first_look_choice.get("first_look") == design.first_look:
            design, families = _quickest_first_look(
                design, guess, families, first_look_choice,
                lambda d: assess(case, plan, d, True, max_trials, budget, jobs, root, runs,
                                 threshold, workers, fixed_exploratory=families["exploratory"],
                                 scope=scope, models=models, deterministic=deterministic,
                                 pool=pool))
        # Where the first look stayed, the families are already those of the final design: the
        # guess's last simulation ran this very design with these exploratory claims.
        elif families.get("computed") and design != guess:
            families = assess(case, plan, design, True, max_trials, budget, jobs, root, runs,
                              threshold, workers, fixed_exploratory=families["exploratory"],
                              scope=scope, models=models, deterministic=deterministic, pool=pool)
    without = [a for a in plan.arms if a not in priors]
    stopping = {**design.describe(), "priors": {a: p.to_json() for a, p in priors.items()},
                "priors_from": models.documents if models else [],
                **({"priors_named": True} if priors_from else {"priors_rule": PRIOR_RULE}),
                "prior_default": (f"an arm without a prior is allocated as the baseline "
                                  f"({case.baseline}) would be" if case.baseline in priors else
                                  "no arm has a prior: trials follow the plan's order"),
                **({"arms_without_priors": without} if without else {}),
                "first": main_claims(case, plan),
                **({"horizon_choice": choice} if choice is not None else {}),
                **({"first_look_choice": dict(first_look_choice)}
                   if first_look_choice.get("first_look") == design.first_look else {}),
                # Asked for the constant-rate test (--horizon none): said, so that its rerun
                # asks for it too where a horizon is the default.
                **({"rate_test": "constant_rate"} if horizon == "none" else {})}
    _ = Design  # the base design is what a fixed-size run has
    return DesignSpec.from_json(stopping), families


def _quickest_first_look(design: DecisiveDesign, guess: DecisiveDesign, families: dict[str, Any],
                         choice: dict[str, Any],
                         assess_design: Callable[[DecisiveDesign], dict[str, Any]]
                         ) -> tuple[DecisiveDesign, dict[str, Any]]:
    """The design, among the first looks FIRST_LOOK_RULE names, whose simulated runs have the
    shortest median time, and its families; ``choice`` (the journaled first_look_choice) gets
    every candidate's median. Each candidate is simulated from the plan's seed, so all see the
    same draws and differ only by where their looks fall."""
    expected = max(1, min(design.total, math.ceil(FIRST_LOOK_MARGIN
                                                  * choice["expected_outcome_trials"])))
    looks = sorted({max(1, min(design.total, math.ceil(expected * f))) for f in FIRST_LOOK_SPAN}
                   | {int(choice["first_look"])})
    medians: dict[str, float] = {}
    best: tuple[float, int, DecisiveDesign, dict[str, Any]] | None = None
    for look in looks:
        candidate = replace(design, first_look=look)
        # The guess's families are this very design's where the guess had this look.
        got = families if candidate == guess else assess_design(candidate)
        median = float(got["expected"]["seconds_median"])
        medians[str(look)] = median
        if best is None or (median, look) < (best[0], best[1]):
            best = (median, look, candidate, got)
    assert best is not None
    choice.update({"rule": FIRST_LOOK_RULE, "first_look": best[1], "one_look_first_look":
                   int(choice["first_look"]), "simulated_median_s": medians})
    return best[2], best[3]


def _simulation_pool(workers: int) -> AbstractContextManager[ProcessPoolExecutor | None]:
    """Worker processes for the designs planning simulates; none where it runs in one."""
    return ProcessPoolExecutor(max_workers=workers) if workers > 1 else nullcontext()


def _horizon_for(case: Case, claims: Sequence[Any], models: Any, priors: Mapping[str, Any],
                 horizon: float | str, alpha: float, max_trials: int, supported_share: float,
                 duration_s: float, pooled: PooledTrials | None = None
                 ) -> tuple[float, dict[str, Any], dict[str, Any]] | None:
    """(horizon, the arms' priors at it, how it was chosen) for a run asking for one ("auto",
    or a number); None where its claims have no rate on exposure or no committed trials to set
    the priors from."""
    if not rate_claims(claims):
        return None
    if horizon == "auto":
        chosen = choose_horizon(case, claims, models.trials, priors, alpha, max_trials,
                                supported_share, duration_s, pooled)
        if chosen is None:
            return None
        choice, at_priors = chosen
        return choice.horizon, at_priors, choice.to_json()
    h = float(horizon)
    at_priors = dict(priors)
    fallback = priors.get(case.baseline)
    for a in horizon_arms(claims, case.baseline):
        if a in priors and a in models.trials:
            at_priors[a] = prior_at(models.trials[a], h, priors[a].speed, priors[a].overhead_s,
                                    fallback)
    return h, at_priors, {"horizon": h, "how": "given with --horizon"}
