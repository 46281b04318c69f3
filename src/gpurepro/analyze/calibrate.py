"""Calibration: the whole decision pipeline of a run's design, simulated (STATS.md).

`python -m gpurepro calibrate <case> --runs N --seed S` draws N runs of a design and decides
each with the code a real run uses (`gpurepro.analyze.simulate`), then counts the runs with at least one
false decided claim, and the share of runs that decide each claim the right way. With
`--design-of RESULT` the design is the one that run had: its arms, its trials (fixed or
`--until-decided` with its looks and maximum), its budget and its two families (the claims it
kept exploratory, `gpurepro.analyze.decidability`); rates come from that run's own trials unless
`--from` names others.

The scenarios (``--scenarios``; scenarios_of):
- the global null of the rate and stratum claims (``null``): every arm ends as the baseline's
  trials do, at the baseline's rates (its own speed, budget and strata), its failures falling
  inside a stratum as often as its exposure is spent there. Lower/higher and concentrated claims
  then have no true direction (any decision is false); an equivalence claim is true. An outcome
  claim with a share above 0 is held exactly at its share (its arm's matching ends take the
  chance that makes the share exact, the rest end as another failure) where that can be done: a
  decision either way is then false. An outcome claim with share 0 ("it happens at all") is left
  as the arms make it: true where its outcome occurs, decided early, which is what frees Holm's
  thresholds for the others, the configuration a real run has.
- each arm null in turn (``arm_null:<arm>``): that arm at its claims' reference's rates (its
  outcome claims above share 0 held, its strata at their null), every other arm as observed:
  the others' claims are decided early, so Holm gives the null arm's claim a look's whole alpha,
  where the global null rarely does;
- both under crash processes fitted to the committed baseline trials (``--processes``;
  gpurepro.analyze.processes): the null arms and the baseline draw their exposure to a first
  failure from the baseline's fitted exponential, Weibull, Lomax or power-of-two crossing
  process (``null@weibull``, ``arm_null:<arm>@lomax``, ...) rather than from the constant rate
  the rate claims' test assumes;
- timed claims at their margins (``margin:<claim>``): the arm's log mean time at the margin's
  edge, so that a decision either way is false;
- the observed effects: every arm as observed (an end never seen at rate 0); each claim's true
  direction follows from those rates; power is the share of runs that decide it that way.
The worst configuration (the highest family-wise false-claim rate of every scenario but the
observed effects) is reported first, with whether it holds alpha (at most alpha + 2 Monte-Carlo
standard errors).
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
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..case.model import Case, Claim
from ..errors import UsageError
from ..model.design import DEFAULT_ALPHA, DesignSpec
from ..model.outcomes import EVIDENCE
from ..model.plan import PlannedTrial
from ..model.result import Result
from . import processes as pr
from .allocate import ArmPrior
from .claim_kinds import kind_of, reference_of
from .claim_kinds.chances import SURVIVED, matches, p_end, p_matching
from .claims import Decider, DecisiveDesign, Design
from .recorded import RecordedRun, recorded_runs
from .shortcut import (
    FLAKE_RATES,
    checked,
    declaration,
    design_alpha,
    false_decision_chance,
    share_claims,
    spent,
)
from .simulate import (
    ArmModel,
    Cause,
    Models,
    RunSpec,
    SimulatedRun,
    causes_per_trial,
    choose_documents,
    claim_arms,
    models_from,
    null_arm,
    null_of,
    simulate_run,
    streams,
    with_process,
)
from .timing import TimedTest

# What other modules use; the rest is this module's own.
__all__ = [
    "bounded_observed", "calibrate", "DECISIONS", "design_of", "false_declaration", "family_of",
    "hold_outcome_claims", "load_models", "p_end", "p_matching", "priors_of",
    "process_documents", "run_calibration", "scenarios_of", "simulate",
    "summarize", "SURVIVED", "text", "truth"
]

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
                flag: str = "--from", times: bool = False, gpu: str | None = None) -> Models:
    """Arm models from ``paths`` (given with ``flag``; with --from every arm must have valid
    trials there, with a run's --priors-from an arm they lack gets the run's default prior), or
    by rule from the committed results (simulate.choose_documents: same ``jobs``, GPU model
    ``gpu`` first, then design ``kind``; arms none covers drop out, the baseline may not).
    ``times``: timed arms draw trial times too (simulate.models_from)."""
    if paths:
        runs = [RecordedRun.of(Path(p), _read(Path(p))) for p in paths]
        seen = {t["arm"] for r in runs for t in r.trials if t.get("outcome") in EVIDENCE}
        missing = [a for a in arms if a not in seen]
        if missing and (flag == "--from" or case.baseline in missing):
            raise UsageError(f"{flag}: no valid trial of arm(s) {', '.join(missing)} in "
                             f"{', '.join(str(r.path) for r in runs)}; the claims need them")
    else:
        runs = choose_documents(case, root, arms, jobs, kind, gpu)
    models = models_from(case, runs, root, arms, duration_s, max_exposure, times=times)
    if case.baseline not in models.arms:
        raise UsageError(f"no committed result of {case.name} under results/{case.name}/ has "
                         f"valid trials of its baseline at --jobs {jobs}; give result documents "
                         f"with {flag}")
    return models


# ---------------------------------------------------------------- truth under a scenario


def truth(claim: Claim, reference: str | None, models: Mapping[str, ArmModel], mode: str,
          failure_outcomes: Sequence[str]) -> str | None:
    """The decision that is right under ``models``: "supported", "contradicted", or None where
    neither is (no direction: a decision either way is false); each kind's own model
    (ClaimKind.truth)."""
    return kind_of(claim).truth(claim, reference, models, mode, failure_outcomes)


def _other_failure(case: Case, claim: Claim) -> str | None:
    """A failure outcome that the claim does not count as its own (to end a held arm's other
    trials without matching it)."""
    return next((o for o in [claim.outcome, *case.failure_outcomes]
                 if o and o != SURVIVED and not matches(claim, o, OTHER_DETAIL)), None)


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
             workers: int, pool: ProcessPoolExecutor | None = None) -> list[SimulatedRun]:
    """``runs`` runs of one scenario (its random stream ``scenario``), in chunks over ``pool``
    (or a pool of ``workers`` of its own): the same runs whatever the number of workers."""
    if workers <= 1 or runs < 50:
        return _chunk(spec, models, seed, scenario, 0, runs)
    size = max(10, math.ceil(runs / (workers * 4)))
    bounds = [(s, min(runs, s + size)) for s in range(0, runs, size)]
    args = [*zip(*[(spec, models, seed, scenario, s, e) for s, e in bounds], strict=True)]
    if pool is not None:
        return [r for part in pool.map(_chunk, *args) for r in part]
    with ProcessPoolExecutor(max_workers=workers) as own:
        return [r for part in own.map(_chunk, *args) for r in part]


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


BOUND_LEVEL = 0.95  # the one-sided upper bound of a rate observed at zero (bounded_observed)


def bounded_observed(case: Case, models: Models, declared: Mapping[str, Any] | None = None
                     ) -> tuple[dict[str, ArmModel], dict[str, dict[str, Any]]]:
    """The arms as the observed-effects scenario simulates them, and what was bounded: an arm
    observed with no failure at all is given the one-sided 95% upper bound of its failure rate
    (-ln(0.05) / its exposure per unit of exposure; 1 - 0.05^(1/n) per trial for an arm of n
    trials modelled per trial), ending as the baseline's most frequent failure does (the
    case's first failure outcome where the baseline has none), so that its claims' power is
    not that of a rate of exactly zero read from few trials. A case that declares its outcomes
    deterministic keeps its arms as observed here (the declaration says they end as they did;
    false_declaration simulates them flaky)."""
    if declared:
        return dict(models.arms), {}
    base = models.arms.get(case.baseline)
    like = (max(base.causes, key=lambda c: c.rate) if base and base.causes
            else Cause(case.failure_outcomes[0], "", 0.0))
    out: dict[str, ArmModel] = {}
    bounded: dict[str, dict[str, Any]] = {}
    for arm, m in models.arms.items():
        n = int(models.summary.get(arm, {}).get("n_valid") or 0)
        exposure = float(models.summary.get(arm, {}).get("exposure") or 0)
        if m.causes or n == 0:
            out[arm] = m
            continue
        if models.mode == "per_trial" or m.per_trial or exposure <= 0:
            rate, per = 1 - (1 - BOUND_LEVEL) ** (1 / n), "per trial"
            out[arm] = replace(m, causes=(Cause(like.outcome, like.detail, rate),),
                               per_trial=m.per_trial or models.mode != "per_trial")
        else:
            rate, per = -math.log(1 - BOUND_LEVEL) / exposure, "per unit of exposure"
            out[arm] = replace(m, causes=(Cause(like.outcome, like.detail, rate),))
        bounded[arm] = {"outcome": like.outcome, "rate": rate, "per": per, "n_valid": n,
                        "exposure": exposure}
    return out, bounded


def _flaky(case: Case, arm: str, m: ArmModel, mode: str, claims: Sequence[Claim],
           flake: float) -> ArmModel:
    """The arm with its trials ending the other way with chance ``flake``, per trial: an arm
    whose trials mostly fail (its causes, kept in their proportions) survives with that
    chance; one whose trials mostly survive fails with it, as the first failure its outcome
    claims name (the case's first failure outcome where they name none)."""
    ends = p_end(m, mode)
    if ends >= 0.5:
        causes = causes_per_trial(m) if not (mode == "per_trial" or m.per_trial) else m.causes
        if any(math.isinf(c.rate) for c in causes):
            inf = [c for c in causes if math.isinf(c.rate)]
            causes = tuple(Cause(c.outcome, c.detail, 1.0 / len(inf)) for c in inf)
        total = sum(c.rate for c in causes)
        return replace(m, causes=tuple(Cause(c.outcome, c.detail, (1 - flake) * c.rate / total)
                                       for c in causes), per_trial=True)
    named = next((c.outcome for c in claims
                  if c.kind == "outcome" and c.arm == arm and c.outcome and c.outcome != SURVIVED),
                 case.failure_outcomes[0])
    return replace(m, causes=(Cause(named, OTHER_DETAIL, flake),), per_trial=True)


def false_declaration(case: Case, models: Models, spec: RunSpec, family: Sequence[Claim],
                      exploratory: Sequence[str], seed: int, runs: int, workers: int,
                      flake_rates: Sequence[float] = FLAKE_RATES, full: bool = False
                      ) -> dict[str, Any]:
    """The declaration of deterministic outcomes false for one arm at a time: each arm that a
    claim on shares of trials is about has its trials end the other way with chance f (each f
    of ``flake_rates``; _flaky), every other arm as observed, and the run's design with its
    declaration (``spec.deterministic``) simulated ``runs`` times. Per arm and rate: the share of
    runs in which the shortcut kept a false decision (``shortcut_false``, what the bound of a
    checked declaration is about) and whose trials refuted the declaration; per rate, the worst
    arm. ``full``: each run to its end (the design deciding what the refuted declaration
    withdrew), with the share of runs that made any false confirmatory decision
    (``any_false``); otherwise a run stops where its trials refute the declaration (the design
    that decides the rest holds alpha less the bound, which the global null calibrates)."""
    declared = spec.deterministic or {}
    agreeing = int(declared.get("trials", 0)) + (int(declared.get("check", 0))
                                                 if checked(declared) else 0)
    applies = [c for c in family if c.name not in exploratory and kind_of(c).on_trials(c)]
    arms = [a for a in models.arms
            if any(a in (c.arm, reference_of(c, case.baseline)) for c in applies)]

    def ref(c: Claim) -> str | None:
        return reference_of(c, case.baseline)

    per_arm: dict[str, dict[str, Any]] = {}
    worst: dict[str, dict[str, Any]] = {}
    scenario = 100
    for arm in arms:
        for f in flake_rates:
            scenario += 1
            flaky = {**models.arms, arm: _flaky(case, arm, models.arms[arm], models.mode,
                                                 family, f)}
            truths = {c.name: truth(c, ref(c), flaky, models.mode, case.failure_outcomes)
                      for c in family}
            done = simulate(replace(spec, until_refuted=not full), flaky, seed, scenario, runs,
                            workers)
            short = sum(1 for r in done if any(
                r.decisions[n] != truths[n] for n in r.by_declaration)) / runs
            summary = summarize(done, family, exploratory, truths, {})
            row = {"shortcut_false": short,
                   "shortcut_false_se": math.sqrt(short * (1 - short) / runs),
                   **({"any_false": summary["false_claim_rate"]} if full else {}),
                   "refuted": summary["refuted"], "mean_trials": summary["mean_trials"],
                   "bound": false_decision_chance(
                       share_claims([c for c in applies if c.arm == arm]), f, agreeing)}
            per_arm.setdefault(arm, {})[str(f)] = row
            if str(f) not in worst or short > worst[str(f)]["shortcut_false"]:
                worst[str(f)] = {"arm": arm, **row}
    return {"flake_rates": list(flake_rates), "agreeing_trials": agreeing, "full": full,
            "checked": checked(declared), "bound": spent(declared) if checked(declared) else None,
            "worst": worst, "arms": per_arm}


def family_of(case: Case, design: Any, arms: Sequence[str], exploratory: Sequence[str],
              decider: Any = None) -> tuple[list[Claim], list[str]]:
    """The claims a run of ``arms`` decides (both families), and the exploratory names."""
    d = (decider or Decider)(case.claims, case.baseline, design, case.failure_outcomes,
                             case.exposure.per, arms, exploratory=exploratory)
    return [*d.claims, *d.exploratory], [c.name for c in d.exploratory]


# ---------------------------------------------------------------- scenarios


# The kinds of scenario (--scenarios), in the order they are simulated and listed.
SCENARIO_KINDS = ("null", "arm_null", "margin", "observed")
POISSON = "poisson"  # the design's own model: each end an exponential at the run's own rates
# The crash processes a null scenario can draw the baseline's failures from (--processes):
# POISSON, then those fitted to the committed baseline trials (gpurepro.analyze.processes).
PROCESS_CHOICES = (POISSON, "exponential", "weibull", "lomax", "crossing", "empirical")
DEFAULT_PROCESSES = (POISSON, "exponential", "weibull", "lomax", "crossing")
# Where a crash process other than a constant hazard draws the failures, a kind whose null
# needs one (ClaimKind.constant_hazard_only: a concentrated claim) is not counted there.
CONSTANT_HAZARD = (POISSON, "exponential")


@dataclass(frozen=True)
class Scenario:
    """One configuration of the arms under which a design's runs are simulated."""

    name: str  # "null", "null@weibull", "arm_null:one-thread@lomax", "margin:x-same", "observed"
    kind: str  # null, arm_null, margin, observed
    process: str  # POISSON or a fitted process's name ("" for margin and observed)
    arm: str | None  # the arm held at its null (arm_null) or at its margin (margin)
    reference: str | None  # what that arm is held to
    models: Mapping[str, ArmModel]
    left_out: Mapping[str, str]  # claims not counted, and why
    shortcut: bool  # simulated with the case's declared deterministic shortcut
    stream: int  # its random stream (simulate.streams)

    def describe(self) -> str:
        via = "" if not self.process else (
            " (each end an exponential at the run's rates)" if self.process == POISSON else
            f" (the baseline's failures drawn from its fitted {self.process} process)")
        if self.kind == "null":
            return "global null: every arm ends as the baseline" + via
        if self.kind == "arm_null":
            return (f"{self.arm} ends as {self.reference}, the other arms as observed" + via
                    if self.reference else f"{self.arm}'s outcome shares held at their claims' "
                                           f"share, the other arms as observed")
        if self.kind == "margin":
            return f"{self.arm}'s log mean time at the edge of {self.reference}'s margin"
        return "observed effects"


def _stream(name: str) -> int:
    """A scenario's random stream: the first three are the ones calibrate always had (so the
    global null's and the observed effects' numbers stay as documented), the others by name."""
    fixed = {"null": 0, "observed": 1}
    return fixed[name] if name in fixed else 16 + zlib.crc32(name.encode())


def _with_process(models: Mapping[str, ArmModel], arms: Sequence[str],
                  process: Any) -> dict[str, ArmModel]:
    out = dict(models)
    for a in arms:
        out[a] = with_process(out[a], process)
    return out


def _left_out_for(process: str, family: Sequence[Claim]) -> dict[str, str]:
    if process in CONSTANT_HAZARD:
        return {}
    return {c.name: (f"where a failure falls along a trial is drawn by the strata's shares, not "
                     f"by the {process} process") for c in family
            if kind_of(c).constant_hazard_only}


def arm_null_targets(case: Case, claims: Sequence[Claim]) -> list[tuple[str, str | None]]:
    """(arm, reference) of every arm null: each arm of a rate claim held to its reference's
    rates (one per reference), and an arm whose claims are only outcome shares above 0 or
    strata (held at their null), in the claims' order."""
    out: list[tuple[str, str | None]] = []
    for c in claims:
        key = kind_of(c).null_target(c, case.baseline)
        if key is not None and key not in out:
            out.append(key)
    with_ref = {a for a, r in out if r}
    return [(a, r) for a, r in out if r or a not in with_ref]


def scenarios_of(case: Case, models: Models, family: Sequence[Claim], exploratory: Sequence[str],
                 kinds: Sequence[str], processes: Mapping[str, Any],
                 declared: Mapping[str, Any] | None) -> tuple[list[Scenario], dict[str, str]]:
    """The scenarios of ``kinds`` (SCENARIO_KINDS) with the crash processes ``processes``
    (name -> fitted process; POISSON: the run's own rates, no process), and what was not
    simulated (and why).

    - null: the global null (null_of; outcome claims above share 0 held at it), once per
      process: under a fitted process every arm that ends as the baseline draws its exposure to
      failure from it;
    - arm_null: each arm of a confirmatory claim in turn (arm_null_targets) at its reference's
      rates, its outcome claims above share 0 held at their share and its strata at their null,
      every other arm as observed; against the baseline once per process, the arm and the
      baseline drawing from it;
    - margin: each confirmatory timed claim with its arm's log mean time at the edge of the
      margin (slower: ratio 1 + margin; faster: 1 / (1 + margin); same: 1 + margin, the other
      edge being its mirror image), so that a decision either way is false;
    - observed: the observed effects (the power of each claim).
    The global null, the arm nulls and the margins are simulated without the case's declared
    shortcut (the design it falls back to); the observed effects with it (a false declaration
    is calibrate's false_declaration)."""
    out: list[Scenario] = []
    skipped: dict[str, str] = {}
    confirmatory = [c for c in family if c.name not in exploratory]
    baseline_timed = not models.arms[case.baseline].per_trial and models.mode == "exposure"
    procs = {n: p for n, p in processes.items() if n == POISSON or baseline_timed}
    fitted = [n for n in processes if n != POISSON]
    if fitted and not baseline_timed:
        skipped["@" + ",@".join(fitted)] = ("the baseline's failures are modelled per trial (its "
                                            "counter cannot time them): no crash process in "
                                            "exposure")

    def add(name: str, kind: str, process: str, arm: str | None, ref: str | None,
            ms: Mapping[str, ArmModel], left: Mapping[str, str], shortcut: bool) -> None:
        out.append(Scenario(name, kind, process, arm, ref, ms, left, shortcut, _stream(name)))

    def held(before: Mapping[str, ArmModel], after: Mapping[str, ArmModel]) -> set[str]:
        return {a for a in after if after[a] is not before.get(a)}

    if "null" in kinds:
        pre = null_of(case, models)
        null, left = hold_outcome_claims(case, family, dict(pre), models.mode)
        kept = held(pre, null)
        for name, process in procs.items():
            if name == POISSON:
                add("null", "null", POISSON, None, None, null, left, False)
                continue
            ms = _with_process(null, [a for a in null if a not in kept], process)
            add(f"null@{name}", "null", name, None, None, ms,
                {**left, **_left_out_for(name, family)}, False)
    if "arm_null" in kinds:
        for arm, ref in arm_null_targets(case, confirmatory):
            if arm not in models.arms or (ref and ref not in models.arms):
                continue
            mine = [c for c in family if c.arm == arm]
            pre = dict(models.arms)
            pre[arm] = (null_arm(pre[arm], pre[ref]) if ref else
                        replace(pre[arm], strata={s: (x, x) for s, (x, _) in pre[arm].strata.items()}))
            ms, left = hold_outcome_claims(case, mine, dict(pre), models.mode)
            kept = held(pre, ms)
            base = f"arm_null:{arm}" + (f"~{ref}" if ref and ref != case.baseline else "")
            for name, process in procs.items():
                if name == POISSON:
                    add(base, "arm_null", POISSON, arm, ref, ms, left, False)
                elif ref == case.baseline:
                    add(f"{base}@{name}", "arm_null", name, arm, ref,
                        _with_process(ms, [a for a in (arm, ref) if a not in kept], process),
                        {**left, **_left_out_for(name, family)}, False)
    if "margin" in kinds:
        for c in confirmatory:
            edge = kind_of(c).margin_edge(c)
            if edge is None:
                continue
            ref = c.reference or case.baseline
            a, r = models.arms.get(c.arm), models.arms.get(ref)
            if a is None or r is None or a.log_time is None or r.log_time is None:
                skipped[f"margin:{c.name}"] = f"{c.arm} or {ref} has no trial times to move"
                continue
            ms = {**models.arms, c.arm: replace(a, log_time=(r.log_time[0] + edge, a.log_time[1]))}
            add(f"margin:{c.name}", "margin", "", c.arm, ref, ms, {}, False)
    if "observed" in kinds:
        add("observed", "observed", "", None, None, models.arms, {}, True)
    return out, skipped


def calibrate(case: Case, models: Models, runs: int, seed: int, design: Any, sequential: bool,
              trials: int, workers: int = 1, decider: Any = None,
              scenarios: Sequence[str] = ("null", "observed"), exploratory: Sequence[str] = (),
              order: Sequence[PlannedTrial] | None = None,
              priors: Mapping[str, Mapping[str, Any]] | None = None,
              first: Sequence[str] = (),
              deterministic: Mapping[str, Any] | None | str = "case",
              timed: Any = None, bound_zero: bool = True,
              processes: Mapping[str, Any] | None = None,
              pool: ProcessPoolExecutor | None = None) -> dict[str, Any]:
    """Simulate ``runs`` runs of the design over the models' arms under each scenario of
    ``scenarios`` (SCENARIO_KINDS; scenarios_of), with the crash processes ``processes`` (name
    -> fitted process, gpurepro.analyze.processes; None: POISSON alone, the run's own rates).

    ``design`` (a `gpurepro.analyze.claims.Design`) and ``decider`` (default: `gpurepro.analyze.claims.Decider`)
    may be replaced, e.g. by a deliberately broken one, to show that the simulation catches it.

    ``deterministic``: a declaration of deterministic outcomes as a run journals it ("case":
    the case's own as a new run journals it, checked, its bound spent from the design's alpha;
    None: none). With one, the observed effects are simulated with its shortcut (as the run
    decides), the null scenarios without it (the family-wise rate of the design the run falls
    back to, which decides every claim the declaration does not), and the declaration false
    for one arm at a time (``deterministic.false_declaration``, false_declaration); for a run
    that journaled it unchecked, also what a new run's checked shortcut would do
    (``false_declaration_checked``).

    ``timed``: the run's timed test (gpurepro.analyze.timing.TimedTest; None: Welch's test on
    the arms' trial times, what a journal without ``options.timing`` is decided by).

    ``bound_zero``: the observed effects with an arm that never failed at the upper bound of
    its rate (bounded_observed: power); False, at its rate of zero (the pre-run decidability's
    chance of a decision at the committed rates).

    The result names the worst scenario (the highest family-wise false-claim rate of every
    scenario but the observed effects) and whether it holds alpha: at most alpha plus two
    Monte-Carlo standard errors.

    ``pool``: the worker processes to simulate in, where the caller simulates several designs
    (planning's candidates): their caches of exact tests outlive one design's runs. None: a
    pool of ``workers`` of this call's own.
    """
    unknown = [k for k in scenarios if k not in SCENARIO_KINDS]
    if unknown:
        raise UsageError(f"unknown scenario kind(s) {', '.join(unknown)} (known: "
                         f"{', '.join(SCENARIO_KINDS)})")
    arms = tuple(models.arms)
    family, exploratory = family_of(case, design, arms, exploratory, decider)
    declared: Mapping[str, Any] | None
    if deterministic == "case":
        # As a new run journals it: checked, at the design's alpha, of which it spends its
        # bound (gpurepro.analyze.shortcut); the design decides the rest at what is left.
        declared = declaration(case, float(design.alpha))
        design = replace(design, alpha=design_alpha(float(design.alpha), declared))
    else:
        assert deterministic is None or isinstance(deterministic, Mapping)
        declared = deterministic
    spec = RunSpec(case=case.name, arms=arms, claims=tuple(family),
                   exploratory=tuple(exploratory), baseline=case.baseline,
                   failure_outcomes=tuple(case.failure_outcomes), per=case.exposure.per,
                   design=design, sequential=sequential, trials=trials, mode=models.mode,
                   strata=tuple(case.strata), order=tuple(order) if order else None,
                   decider=decider, priors=priors if priors is not None else priors_of(models),
                   first=tuple(first), deterministic=declared, timed=timed)

    def ref(c: Claim) -> str | None:
        return reference_of(c, case.baseline)

    planned, skipped = scenarios_of(case, models, family, exploratory, scenarios,
                                    processes if processes is not None else {POISSON: None},
                                    declared)
    # The observed effects: each claim's truth from the arms as observed; its power simulated
    # with an arm that never failed at the upper bound of its failure rate (bounded_observed).
    observed, bounded = (bounded_observed(case, models, declared) if bound_zero
                         else (dict(models.arms), {}))
    # The run's alpha: the design's, and what a checked declaration spent of it.
    alpha = (float(declared.get("alpha", float(design.alpha) + spent(declared)))
             if declared is not None and spent(declared) else float(design.alpha))
    limit = alpha + 2 * math.sqrt(alpha * (1 - alpha) / runs)
    out: dict[str, Any] = {}
    own_pool = (ProcessPoolExecutor(max_workers=workers) if pool is None and workers > 1
                and runs >= 50 and len(planned) > 1 else None)
    pool = pool or own_pool
    try:
        for sc in planned:
            drawn = observed if sc.kind == "observed" else sc.models
            truths = {c.name: truth(c, ref(c), sc.models, models.mode, case.failure_outcomes)
                      for c in family}
            shortcut = sc.shortcut and declared is not None
            summary = summarize(simulate(spec if shortcut else replace(spec, deterministic=None),
                                         drawn, seed, sc.stream, runs, workers, pool),
                                family, exploratory, truths, sc.left_out)
            if not shortcut:
                summary.pop("refuted")
            out[sc.name] = {"kind": sc.kind, "process": sc.process, "arm": sc.arm,
                            "reference": sc.reference, "what": sc.describe(),
                            **({"holds_alpha": summary["false_claim_rate"] <= limit}
                               if sc.kind != "observed" else {}),
                            **summary}
    finally:
        if own_pool is not None:
            own_pool.shutdown()
    if "observed" in out:
        out["observed"]["bounded"] = bounded
    false = (false_declaration(case, models, spec, family, exploratory, seed, runs, workers)
             if declared and "null" in scenarios else None)
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
    nulls = [n for n in out if out[n]["kind"] != "observed"]
    if nulls:
        worst = max(nulls, key=lambda n: out[n]["false_claim_rate"])  # the first of equals
        w = out[worst]
        result["worst"] = {"scenario": worst, "what": w["what"],
                           "false_claim_rate": w["false_claim_rate"],
                           "false_claim_rate_se": w["false_claim_rate_se"],
                           "holds_alpha": w["holds_alpha"]}
    result["scenarios"] = {n: {k: v for k, v in o.items() if k != "claims"} | {
        "false_by_claim": {c: d["false"] for c, d in o["claims"].items() if d["false"]}}
        for n, o in out.items()}
    if skipped:
        result["scenarios_not_simulated"] = skipped
    if declared:
        result["deterministic"] = {
            "declared": dict(declared),
            "how": ("the observed effects simulated with the declaration's shortcut, as the run "
                    "decides; the null scenarios without it (the design the run falls back to, "
                    "which decides every claim the declaration does not); false_declaration: "
                    "the declaration false for one arm at a time (its trials ending the other "
                    "way with each flake rate's chance), the chance that the shortcut keeps a "
                    "false decision, and that the run makes any"),
            **({"false_declaration": false} if false else {})}
        if declared is not None and not checked(declared) and false is not None:
            # A run from before the check: what a new run's checked shortcut does in its place.
            new = declaration(case, float(design.alpha))
            if new:
                checked_spec = replace(spec, deterministic=new, design=replace(
                    design, alpha=design_alpha(float(design.alpha), new)))
                result["deterministic"]["false_declaration_checked"] = false_declaration(
                    case, models, checked_spec, family, exploratory, seed, runs, workers)
    power: dict[str, float | None] = {}
    for c in family if "observed" in out else ():
        d = out["observed"]["claims"][c.name]
        power[c.name] = None if d["true"] is None else d[d["true"]]
    result.update(power=power, null=_plain(out.get("null")), observed=_plain(out.get("observed")))
    return result


def _plain(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A scenario's summary as calibrate has always reported it (without its scenario fields)."""
    if summary is None:
        return None
    return {k: v for k, v in summary.items()
            if k not in ("kind", "process", "arm", "reference", "what", "holds_alpha")}


# ---------------------------------------------------------------- crash processes


@dataclass(frozen=True)
class FittedProcesses:
    """The crash processes fitted to a case's committed baseline trials, and their checks."""

    processes: Mapping[str, Any]  # name -> gpurepro.analyze.processes process (POISSON: None)
    checks: Any  # gpurepro.analyze.processes.ModelChecks (None: nothing fitted)
    documents: tuple[str, ...]  # where the baseline trials came from
    rule: str
    not_fitted: Mapping[str, str]  # a process asked for that could not be fitted, and why

    def to_json(self) -> dict[str, Any]:
        return {"fitted_to": list(self.documents), "rule": self.rule,
                "simulated": [n for n in self.processes],
                **({"checks": self.checks.to_json()} if self.checks is not None else {}),
                **({"not_fitted": dict(self.not_fitted)} if self.not_fitted else {})}


PROCESS_RULE = ("the valid baseline trials of the committed results of the case run on the same "
                "GPU model at the same trials at a time, complete, with the design's own document")


def process_documents(case: Case, root: Path, reference: RecordedRun | None) -> list[RecordedRun]:
    """The documents whose baseline trials the crash processes are fitted to (PROCESS_RULE):
    ``reference`` (the design's document, or the one the baseline's rates came from) and every
    committed result of the case on its GPU model at its trials at a time, complete, with valid
    baseline trials."""
    if reference is None:
        return []
    out = [reference]
    if reference.gpu is None:
        return out
    for r in recorded_runs(case.name, root):
        if (r.path.resolve() == reference.path.resolve() or r.gpu != reference.gpu
                or r.jobs != reference.jobs or r.stopped):
            continue
        if any(t.get("arm") == case.baseline and t.get("outcome") in EVIDENCE for t in r.trials):
            out.append(r)
    return out


def fit_processes(case: Case, root: Path, runs: Sequence[RecordedRun],
                  names: Sequence[str], seed: int, rule: str = PROCESS_RULE) -> FittedProcesses:
    """The crash processes ``names`` (PROCESS_CHOICES) fitted to the valid baseline trials of
    the recorded ``runs``: a trial ending as one of the case's failure outcomes failed at its exposure, any
    other valid trial is censored at its own (processes.checks, its CV p-value drawn with
    ``seed``). POISSON needs no fit."""
    import numpy as np


    unknown = [n for n in names if n not in PROCESS_CHOICES]
    if unknown:
        raise UsageError(f"unknown crash process(es) {', '.join(unknown)} (known: "
                         f"{', '.join(PROCESS_CHOICES)})")
    fitted: dict[str, Any] = {n: None for n in names if n == POISSON}
    wanted = [n for n in names if n != POISSON]
    trials = [t for r in runs for t in r.trials
              if t.get("arm") == case.baseline and t.get("outcome") in EVIDENCE]
    rel = tuple(_rel_path(r.path, root) for r in runs)
    if not wanted:
        return FittedProcesses(fitted, None, rel, rule, {})
    if not trials:
        return FittedProcesses(fitted, None, rel, rule,
                               {n: "no valid baseline trial to fit it to" for n in wanted})
    obs = pr.Observations.of(trials, case.failure_outcomes)
    checks = pr.checks(obs, np.random.default_rng(seed), names=[*pr.PARAMETRIC, "empirical"])
    not_fitted = {n: checks.errors[n] for n in wanted if n in checks.errors}
    fitted.update({n: checks.fits[n] for n in wanted if n in checks.fits})
    return FittedProcesses({n: fitted[n] for n in names if n in fitted}, checks, rel, rule,
                           not_fitted)


def _rel_path(path: Path, root: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(root.resolve())) if path.is_relative_to(root.resolve()) else str(path)


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
    return {a: ArmPrior.of_model(m).to_json() for a, m in models.arms.items()}


def design_of(result: Result) -> tuple[Any, bool, int, list[str], list[str], Mapping[str, Any]]:
    """(Design, sequential, trials per arm, arms, exploratory claims, budget) of a recorded run."""
    most = max(result.plan.trials_per_arm.values())
    if result.design.sequential:
        design, sequential = Design.of(result.design), True
        # A run from before claims journaled its looks as trial counts, the last its maximum.
        trials = int(result.design.max_trials or design.max_trials or most)
    else:
        design, sequential = Design(alpha=DEFAULT_ALPHA), False
        trials = most
    families = result.options.families
    return (design, sequential, trials, list(result.plan.arms),
            list(families.exploratory) if families else [], result.options.budget)


def run_calibration(case: Case, root: Path, asked: DesignSpec, trials: int,
                    rates_from: Sequence[str] | None, runs: int, seed: int,
                    workers: int | None, as_json: bool, design_of_result: str | None = None,
                    spending: str | None = None, supported_share: float | None = None,
                    scenarios: Sequence[str] = SCENARIO_KINDS,
                    process_names: Sequence[str] = DEFAULT_PROCESSES,
                    processes_from: Sequence[str] | None = None) -> int:
    """`calibrate`: simulate the case's claims on the design asked for (``asked``: a sequential
    design, or a fixed one of ``trials`` per arm at its alpha), or on the design of a recorded run
    (``design_of_result``: its arms, trials, looks, budget and exploratory claims, with rates from
    its own trials unless ``rates_from`` names others), and print the result. ``spending``:
    a decisive run's design with that alpha spending over its later looks in place of the one
    it journaled (the same looks, families and priors); ``supported_share``: likewise, each
    claim's share of its level for its stated direction. ``scenarios`` (SCENARIO_KINDS) and
    ``process_names`` (PROCESS_CHOICES) choose what is simulated; the processes are fitted to
    the baseline trials of ``processes_from`` or, by default, by PROCESS_RULE."""
    exploratory: list[str] = []
    without: list[str] = []
    budget: Mapping[str, Any] = {}
    priors = None
    first: list[str] = []
    sources: list[str] | None
    deterministic: Mapping[str, Any] | None | str = "case"

    # A new run's timed test, for a case with timed claims (gpurepro.run.session journals it).
    timed = TimedTest() if any(kind_of(c).timed for c in case.claims) else None
    if design_of_result:
        recorded = Result.of(_read(Path(design_of_result)))
        design, sequential, trials, arms, exploratory, budget = design_of(recorded)
        if spending is not None or supported_share is not None:
            if not isinstance(design, DecisiveDesign):
                raise UsageError(f"--alpha-spending and --supported-share: {design_of_result} is "
                                 f"not a run of the decisive design")
            design = replace(design, spending=spending or design.spending,
                             supported_share=(design.supported_share if supported_share is None
                                              else supported_share))
        # The declaration that run journaled (none: it decided every claim by its design).
        declared = recorded.options.deterministic
        deterministic = dict(declared.declared) if declared is not None else None
        # The timed test it journaled (none: Welch's, as a journal from before it is decided).
        timed = TimedTest.from_json(recorded.options.timing)
        priors = recorded.design.priors
        first = list(recorded.design.first or ())
        sources = list(rates_from or [design_of_result])
        if not rates_from:
            # Rates from the run's own trials: an arm it has none of is not simulated (its claims
            # are not decided in any simulated run either), and the output says so.
            seen = {t.arm for t in recorded.trials if t.outcome in EVIDENCE}
            if case.baseline in seen:
                without = [a for a in arms if a not in seen]
                arms = [a for a in arms if a in seen]
            else:
                # No rates of its own to compare with (every baseline trial unsupported, or a
                # run without the baseline): its design with the committed results' rates, by
                # the rule a run without --from takes them; the output names the documents.
                sources = None
    else:
        design = Design.of(asked) if asked.sequential else Design(alpha=asked.alpha)
        sequential = asked.sequential
        arms = claim_arms(case)
        sources = list(rates_from) if rates_from else None
    models = load_models(case, root, sources, arms, duration_s=budget.get("duration_s"),
                         max_exposure=budget.get("max_exposure"), times=True)
    base = models.arms[case.baseline]
    if models.mode != "exposure" or base.per_trial:
        fitted = FittedProcesses({n: None for n in process_names if n == POISSON}, None, (),
                                 PROCESS_RULE, {n: "the baseline's failures are modelled per "
                                                   "trial: no crash process in exposure"
                                                for n in process_names if n != POISSON})
    elif processes_from:
        fitted = fit_processes(case, root, [RecordedRun.of(Path(p), _read(Path(p)))
                                            for p in processes_from],
                               process_names, seed, rule="the documents given (--processes-from)")
    else:
        reference: RecordedRun | None = None
        if design_of_result and sources == [design_of_result]:
            reference = RecordedRun.of(Path(design_of_result), recorded.fields)
        elif (models.summary.get(case.baseline) or {}).get("from"):
            first_doc = Path(models.summary[case.baseline]["from"][0])
            first_doc = first_doc if first_doc.is_absolute() else root / first_doc
            reference = RecordedRun.of(first_doc, _read(first_doc))
        fitted = fit_processes(case, root, process_documents(case, root, reference),
                               process_names, seed)
    started = time.monotonic()
    result = calibrate(case, models, runs, seed, design, sequential, trials, _workers(workers),
                       exploratory=exploratory, priors=priors, first=first,
                       deterministic=deterministic, timed=timed, scenarios=scenarios,
                       processes=fitted.processes)
    result["processes"] = fitted.to_json()
    result["wall_s"] = round(time.monotonic() - started, 2)
    if design_of_result:
        result["design"]["of"] = str(design_of_result)
        if without:
            result["design"]["arms_without_valid_trials"] = without
    print(json.dumps(result, indent=1) if as_json else text(result))
    sys.stdout.flush()
    return 0


def false_declaration_lines(f: Mapping[str, Any], label: str) -> list[str]:
    """What calibrate prints of the declaration false for one arm at a time."""
    how = (f"{f['agreeing_trials']} agreeing trials decide, the last a later check; the bound, "
           f"{f['bound']:.3g}, is spent from alpha" if f.get("checked") else
           f"{f['agreeing_trials']} agreeing outcome classes decide, no check, no alpha spent")
    out = [f"  if the declaration is false for one arm at a time ({label}: {how}):"]
    for rate in f["flake_rates"]:
        w = f["worst"].get(str(rate))
        if not w:
            continue
        rest = (f"; any false decision {w['any_false']:.4f}" if "any_false" in w else "")
        out.append(f"    flaky at {rate:g}: the shortcut keeps a false decision in at most "
                   f"{w['shortcut_false']:.4f} +/- {w['shortcut_false_se']:.4f} of runs ({w['arm']}; "
                   f"bound {w['bound']:.3g}){rest}; refuted in {w['refuted']:.1%}")
    return out


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
    worst = r.get("worst")
    if worst:
        lines.append(f"worst configuration: {worst['scenario']} ({worst['what']}): family-wise "
                     f"false-claim rate {worst['false_claim_rate']:.4f} +/- "
                     f"{worst['false_claim_rate_se']:.4f}: "
                     f"{'holds' if worst['holds_alpha'] else 'DOES NOT HOLD'} alpha "
                     f"{r['alpha']:g} (at most alpha + 2 MC s.e. = {r['alpha_plus_2_mc_se']:.4f})")
    scenarios = r.get("scenarios") or {}
    nulls = sorted((n for n, o in scenarios.items() if o["kind"] != "observed"),
                   key=lambda n: -scenarios[n]["false_claim_rate"])
    if len(nulls) > 1:
        lines.append("every scenario, worst first (family-wise false-claim rate +/- MC s.e.; "
                     "mean trials; the exploratory family's rate):")
        width = max(len(n) for n in nulls)
        for n in nulls:
            o = scenarios[n]
            lines.append(f"  {n:<{width}}  {o['false_claim_rate']:.4f} +/- "
                         f"{o['false_claim_rate_se']:.4f}  "
                         f"{'holds' if o['holds_alpha'] else 'DOES NOT HOLD'}  "
                         f"{o['mean_trials']:.1f} trials  exploratory "
                         f"{o['exploratory_false_claim_rate']:.4f}")
    for n, why in (r.get("scenarios_not_simulated") or {}).items():
        lines.append(f"  (not simulated: {n}: {why})")
    fits = r.get("processes") or {}
    checks = fits.get("checks")
    if checks and any(n != "empirical" and n in fits["simulated"] for n in checks["models"]):
        models = checks["models"]
        lr = {x["model"]: x["p_value"] for x in checks["likelihood_ratio"]}
        parts = []
        for name, m in models.items():
            if name == "exponential":
                parts.append(f"exponential rate {m['rate']:.3g}")
            elif name == "weibull":
                parts.append(f"Weibull shape {m['shape']:.3g} scale {m['scale']:.3g}")
            elif name == "lomax":
                parts.append(f"Lomax shape {m['shape']:.3g} scale {m['scale']:.3g}")
            elif name == "crossing":
                parts.append(f"crossing background {m['rate']:.3g}, chance {m['chance']:.3g} at "
                             f"each of 2^{m['powers'][0]}..2^{m['powers'][-1]}")
            else:
                continue
            if name in lr:
                parts[-1] += f" (LR p {lr[name]:.2g})"
            if "aic" in m:
                parts[-1] += f", AIC {m['aic']:.1f}"
        cv = "" if checks["cv"] is None else (
            f"; CV of the failure exposures {checks['cv']:.3g}" + (
                f" (P = {checks['cv_p_value']:.2g} under the exponential)"
                if checks["cv_p_value"] is not None else ""))
        lines.append(f"crash processes fitted to {checks['n']} baseline trials ({checks['failures']} "
                     f"failures) of {', '.join(fits['fitted_to'])}: " + "; ".join(parts) + cv)
    if fits.get("not_fitted"):
        # One reason shared by every process (the baseline modelled per trial) is said once.
        reasons = fits["not_fitted"]
        lines.append(f"  (crash processes not fitted ({', '.join(reasons)}): "
                     f"{next(iter(reasons.values()))})" if len(set(reasons.values())) == 1 else
                     "  (crash processes not fitted: " + "; ".join(reasons.values()) + ")")
    if r.get("null"):
        lines.append(f"family-wise false-claim rate under the global null: "
                     f"{r['family_wise_false_claim_rate']:.4f} +/- "
                     f"{r['family_wise_false_claim_rate_se']:.4f} "
                     f"({'holds' if r['holds_alpha'] else 'DOES NOT HOLD'} alpha); exploratory "
                     f"family: {r['null']['exploratory_false_claim_rate']:.4f}")
    det = r.get("deterministic")
    if det:
        d = det["declared"]
        agree = (f"{d['trials']} valid trials of each of its arms have one signature, and "
                 f"{d.get('check', 1)} later check trial agrees too; it spends {d['bound']:.3g} "
                 f"of alpha, the design the rest" if checked(d) else
                 f"{d['trials']} valid trials of each of its arms end alike")
        lines.append(f"the case declares its outcomes deterministic ({d['reason']}): a claim on "
                     f"shares of trials is decided once {agree}; the rate above is the design's "
                     f"without it, the observed effects below with it")
        for key, label in (("false_declaration", "as journaled"),
                           ("false_declaration_checked", "as a new run journals it, checked")):
            if det.get(key):
                lines += false_declaration_lines(det[key], label)
    if r.get("observed"):
        o = r["observed"]
        for arm, b in (o.get("bounded") or {}).items():
            lines.append(f"  (power: {arm} never failed in its {b['n_valid']} valid trials; simulated "
                         f"at the one-sided 95% upper bound of its rate, {b['rate']:.3g} "
                         f"{b['per']}, ending as {b['outcome']})")
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
