"""Simulated runs of a case's own design, decided by the code a real run uses.

Both `calibrate` (the family-wise false-claim rate and the power of a design) and the pre-run
check of which claims a plan can decide (`decidability`) draw runs from here:

- **arm models** from committed result documents (`models_from`): per arm, the rate of every
  way its trials end (crashed, hung, a CUDA error, each with its detail) per unit of exposure,
  as competing risks (a trial ends at the first of them; none within its budget: survived);
  the exposure a surviving trial reaches (its speed, exposure per second, times the run's
  duration, capped by the run's exposure budget); the seconds a trial costs; and, per stratum
  of the case (`Case.strata`), the share of the arm's exposure spent inside it and the share
  of its failures that fell there. A document without exposure gives per-trial chances instead.
- **a run** (`simulate_run`): the plan's order, trials drawn as they are taken, and with
  `--until-decided` the same skipping and looks as the run stage (`run.schedule.still_needed`, which
  the runner calls too), then the final look; concentrated claims see each simulated trial's share
  of exposure inside their stratum;
- **crash processes** (``ArmModel.process``, `gpurepro.analyze.processes`): an arm's exposure
  to its first failure drawn from a fitted process (Weibull, Lomax, the power-of-two crossing
  hazard, ...) in place of its causes' exponentials, the causes then saying which failure it
  is; `calibrate`'s null scenarios set them, a model from a document never has one.

numpy draws the trials; the decisions are `gpurepro.analyze.claims.Decider`'s.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..case.model import Case, Claim
from ..model.outcomes import EVIDENCE
from ..model.plan import PlannedTrial, make_plan
from ..run.schedule import still_needed
from .allocation import Allocation
from .arm_model import ArmModel, Cause
from .claim_kinds import reference_of
from .claims import Decider
from .recorded import RecordedRun, recorded_runs
from .timing import trial_time

# What other modules use; the rest is this module's own.
__all__ = [
    "ArmModel", "Cause", "causes_per_trial", "choose_documents", "claim_arms",
    "draw", "MIN_PRIOR_TRIALS", "MIN_SPEED_S", "Models", "models_from", "null_arm", "null_of",
    "PRIOR_RULE", "RunSpec", "simulate_run", "SimulatedRun", "streams", "untimed",
    "with_process"
]


@dataclass(frozen=True)
class Models:
    mode: str  # "exposure" or "per_trial"
    arms: dict[str, ArmModel]
    documents: list[str]
    summary: dict[str, dict[str, Any]]  # per arm: what was counted and how each number was set
    # Per arm, the valid trials its model was taken from (the horizon's priors read them:
    # analyze.horizon_design).
    trials: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def claim_arms(case: Case, claims: Sequence[Claim] | None = None) -> list[str]:
    """The arms the claims are about, claim arms and references, in the case's arm order."""
    claims = case.claims if claims is None else claims
    used = {c.arm for c in claims} | {r for c in claims
                                      if (r := reference_of(c, case.baseline)) is not None}
    return [a for a in case.resolved_arms() if a in used]


# An arm's rates are taken from a document only where it ran at least this many valid trials:
# one or two trials (a resume check, a first look) give a rate of 0 or of everything.
MIN_PRIOR_TRIALS = 5
PRIOR_RULE = (f"per arm, the newest committed result run on the run's GPU model (then any "
              f"other) and of the same design kind (then any other), at the same trials at a "
              f"time, complete, with at least {MIN_PRIOR_TRIALS} valid trials of that arm")


def choose_documents(case: Case, root: Path, arms: Sequence[str], jobs: int = 1,
                     kind: str | None = None, gpu: str | None = None) -> list[RecordedRun]:
    """The committed results an arm's rates come from, by rule (PRIOR_RULE): for each arm, the
    newest document run at ``jobs`` trials at a time (concurrency changes a race's rates) that
    is not a stopped run and holds at least MIN_PRIOR_TRIALS valid trials of it, those run on
    the GPU model ``gpu`` first (a race's rates move from one model to another: tile_unload_race's
    baseline crashed before 33,401 cycles in about half its trials on the H100s of 2026-12-07 and
    in 52 of 60 on an H200 the same day), then those of design ``kind``. Each document comes back
    with the trials of the arms taken from it alone, so no arm's model mixes in another
    document's few trials."""
    candidates = [r for r in recorded_runs(case.name, root) if r.jobs == jobs and not r.stopped]
    # Stable: newest first within each group.
    candidates.sort(key=lambda r: (gpu is not None and r.gpu != gpu,
                                   kind is not None and r.kind != kind))
    taken: dict[Path, set[str]] = {}
    for arm in arms:
        for r in candidates:
            n = sum(1 for t in r.trials if t.get("arm") == arm and t.get("outcome") in EVIDENCE)
            if n >= MIN_PRIOR_TRIALS:
                taken.setdefault(r.path, set()).add(arm)
                break
    return [r.only(taken[r.path]) for r in candidates if r.path in taken]


def _rel(path: Path, root: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(root.resolve())) if path.is_relative_to(root.resolve()) else str(path)


MIN_SPEED_S = 0.5  # trials shorter than this are mostly start-up: their speed is not counted


# Failures found only once a trial has run its course (its output checked at the end), where the
# case declares none of its own (Exposure.per_trial_outcomes): a property of the trial, never an
# event at some point of its exposure.
PER_TRIAL_OUTCOMES = ("wrong_result",)


def untimed(ts: Sequence[Mapping[str, Any]], exposure: Any = None) -> bool:
    """Whether an arm's failures cannot be placed in its exposure, so that its trials are
    modelled by how they ended (each way with its share of trials). First what the case
    declares (``exposure``, its Exposure): a counter that measures no opportunity
    (``opportunity=False``), or a failure of a per-trial outcome (``per_trial_outcomes``: a
    wrong result). Then what the trials show: no exposure at all; most of its failures at
    exposure 0 (a counter read too seldom to see them coming); or failures at the very
    exposure every other trial of the arm reached (a counter of the one call each trial makes:
    a rate per call would make a failure that every trial has a chance below 1)."""
    if exposure is not None and not getattr(exposure, "opportunity", True):
        return True
    if not any(float(t.get("exposure") or 0) > 0 for t in ts):
        return True
    per_trial = tuple(getattr(exposure, "per_trial_outcomes", PER_TRIAL_OUTCOMES))
    failed = [t for t in ts if t["outcome"] != "survived"]
    if failed and any(t["outcome"] in per_trial for t in failed):
        return True
    if failed and len(ts) > 1 and len({float(t.get("exposure") or 0) for t in ts}) == 1:
        return True
    at_zero = sum(1 for t in failed if float(t.get("exposure") or 0) <= 0)
    return bool(failed) and at_zero * 2 > len(failed)


def models_from(case: Case, runs: Sequence[RecordedRun], root: Path,
                arms: Sequence[str], duration_s: float | None = None,
                max_exposure: int | None = None, times: bool = False) -> Models:
    """Per-arm models pooled over the recorded ``runs`` for a run of ``duration_s`` seconds per trial and an
    exposure budget ``max_exposure`` (0: none); None: the documents' own.

    - rates: per (outcome, detail) of the arm's valid trials, their count over the arm's total
      exposure (competing risks: a trial ended by one is censored for the others); an outcome
      seen with no exposure at all: at once (a coarse counter records 0);
    - the budget (the exposure a survivor reaches): the arm's speed (the median exposure per
      second of its trials that ran at least MIN_SPEED_S) times the run's trial duration, at
      most the exposure budget; a trial's start and stop: the median of each trial's seconds
      beyond its exposure at that speed; where the arm's survivors end on their own well before
      the duration (``_ended_on_their_own``), their median exposure and seconds instead;
    - strata: the case's stratum functions over the arm's trials: exposure inside / exposure,
      and failures inside / failures;
    - with ``times``, a timed arm's trial times (``log_time``), which `calibrate` draws for its
      timed claims. The known-rates plan and the pre-run decidability do not model times yet
      (decidability says so): their designs for timed cases stay as recorded.
    """
    trials = [t for r in runs for t in r.trials if t.get("outcome") in EVIDENCE]
    durations = [float(r.budget.get("duration_s") or 0) for r in runs]
    doc_duration = statistics.median(durations) if any(durations) else 0.0
    duration = float(duration_s) if duration_s else doc_duration
    if max_exposure is None:
        caps = [int(r.budget.get("max_exposure") or 0) for r in runs]
        max_exposure = min((c for c in caps if c > 0), default=0)
    any_exposure = any(float(t.get("exposure") or 0) > 0 for t in trials if t["arm"] in arms)
    factors = case.resolved_arms()
    failure = set(case.failure_outcomes)
    models: dict[str, ArmModel] = {}
    summary: dict[str, dict[str, Any]] = {}
    for arm in arms:
        ts = [t for t in trials if t["arm"] == arm]
        if not ts:
            continue
        exposure = float(sum(float(t.get("exposure") or 0) for t in ts))
        ended = Counter((t["outcome"], str(t.get("detail") or "")) for t in ts
                        if t["outcome"] != "survived")
        per_trial = not any_exposure or untimed(ts, case.exposure)
        if per_trial:  # chances per trial (never a rate over no exposure: that is infinite)
            causes = tuple(Cause(o, d, k / len(ts)) for (o, d), k in sorted(ended.items()))
        else:
            causes = tuple(Cause(o, d, k / exposure) for (o, d), k in sorted(ended.items()))
        # Speed from every trial that ran long enough for its start-up not to dominate: a
        # crashing trial's exposure per second is as good a measure as a survivor's, and a
        # survivor that barely moved (a stall the trial did not report) must not set it alone.
        timed = [t for t in ts if (t.get("exposure") or 0) > 0 and (t.get("duration_s") or 0) > 0]
        longer = [t for t in timed if float(t["duration_s"]) >= MIN_SPEED_S] or timed
        speed = float(statistics.median(float(t["exposure"]) / float(t["duration_s"])
                                        for t in longer)) if longer else 0.0
        overheads = [float(t["duration_s"]) - float(t["exposure"]) / speed for t in timed] if speed else []
        overhead = max(0.0, float(statistics.median(overheads))) if overheads else 0.0
        if speed and duration:
            budget, how = speed * duration, f"median exposure per second x {duration:g} s"
        else:
            budget, how = 0.0, "none (no exposure recorded)"
        if max_exposure and (budget > max_exposure or not budget):
            budget, how = float(max_exposure), f"the exposure budget {max_exposure}"
        seconds = min(duration, budget / speed) if speed else duration
        ended_early = _ended_on_their_own(ts, duration)
        if ended_early and not per_trial and speed:
            budget, own_s = ended_early
            seconds = max(0.0, own_s - overhead)
            how = (f"its survivors' own end: median exposure {budget:g} in {own_s:.3g} s (they "
                   f"stop after a fixed amount of work, before the run's {duration:g} s)")
        if per_trial and any_exposure:
            # Its trials' own wall time: a failure's exposure says nothing of when it came.
            seconds = float(statistics.median(float(t.get("duration_s") or 0) for t in ts))
            overhead, how = 0.0, how + "; failures per trial (its counter cannot time them)"
        strata = {}
        failed = [t for t in ts if t["outcome"] in failure]
        for name, fn in case.strata.items():
            inside = [fn(t, factors.get(arm, {})) for t in ts]
            e_in = sum(float(x) for x, _ in inside)
            k_in = sum(1 for t, (_, f) in zip(ts, inside, strict=True) if f and t in failed)
            strata[name] = (e_in / exposure if exposure else 0.0,
                            k_in / len(failed) if failed else 0.0)
        log_time = _log_time(ts) if times else None
        models[arm] = ArmModel(causes, budget, speed, seconds, overhead, strata,
                               per_trial=per_trial and any_exposure, log_time=log_time,
                               loops=_loops(ts) if log_time else 1)
        summary[arm] = {"n_valid": len(ts), "exposure": exposure,
                        "from": [_rel(r.path, root) for r in runs
                                 if any(t.get("arm") == arm for t in r.trials)],
                        **({"per_trial": True} if per_trial and any_exposure else {}),
                        "ended": {f"{o}: {d}" if d else o: k for (o, d), k in sorted(ended.items())},
                        "speed": speed, "budget": budget, "budget_from": how,
                        "overhead_s": overhead,
                        **({"log_time": {"mean": log_time[0], "sd": log_time[1]}}
                           if log_time else {})}
    return Models(mode="exposure" if any_exposure else "per_trial", arms=models,
                  documents=[_rel(r.path, root) for r in runs], summary=summary,
                  trials={a: [dict(t) for t in trials if t["arm"] == a] for a in models})


def _ended_on_their_own(ts: Sequence[Mapping[str, Any]], duration: float) -> tuple[float, float] | None:
    """(exposure, seconds) at which an arm's survivors end, where they end on their own: the
    median survivor stopped in less than half the run's trial duration (a driver that does a
    fixed amount of work, fa3_wgmma_wait's timed launches, not a race run out to its budget).
    None where survivors run out the duration (a survivor is then modelled at the budget). A
    survivor the decisive design capped (its record's ``max_exposure``) ended at its cap, not on
    its own, and is not counted."""
    survivors = [t for t in ts if t.get("outcome") == "survived" and "max_exposure" not in t
                 and float(t.get("duration_s") or 0) > 0 and float(t.get("exposure") or 0) > 0]
    if not survivors or not duration:
        return None
    own_s = float(statistics.median(float(t["duration_s"]) for t in survivors))
    if own_s >= duration / 2:
        return None
    return float(statistics.median(float(t["exposure"]) for t in survivors)), own_s


def _log_time(ts: Sequence[Mapping[str, Any]]) -> tuple[float, float] | None:
    """The mean and standard deviation of the log times of an arm's valid timed trials; None
    for an arm with fewer than two (untimed, or too few to have a spread)."""
    times = [trial_time(t) for t in ts if t.get("outcome") in EVIDENCE]
    logs = [math.log(x) for x in times if x]
    if len(logs) < 2:
        return None
    return statistics.fmean(logs), statistics.stdev(logs)


def _loops(ts: Sequence[Mapping[str, Any]]) -> int:
    """The launches each timed value of an arm's trials is the mean of (the median over its
    trials; 1 where none records it)."""
    loops = [int(x) for t in ts
             if isinstance(x := ((t.get("observations") or {}).get("timing") or {}).get("loops"),
                           (int, float)) and x >= 1]
    return int(statistics.median(loops)) if loops else 1


def null_of(case: Case, models: Models) -> dict[str, ArmModel]:
    """The global null of the rate and stratum claims: every arm ends as the baseline's trials
    do, at the baseline's rates, keeping its own speed, budget and strata, with its failures
    falling inside each stratum exactly as often as its exposure is spent there. An arm
    modelled per trial gets the chance of each end that a baseline trial has; where the
    baseline is modelled per trial, every arm is, with the baseline's chances (never a chance
    read as a rate in another arm's exposure). A timed arm's trials take the baseline's times
    (their log mean and spread): every time ratio is 1."""
    base = models.arms[case.baseline]
    return {a: null_arm(m, base) for a, m in models.arms.items()}


def ends_as(m: ArmModel, ref: ArmModel) -> ArmModel:
    """Arm ``m`` ending as ``ref``'s trials do (its causes, or their chances per trial where
    either is modelled per trial), with ``ref``'s times where both are timed; its own speed,
    budget and strata."""
    log_time = ref.log_time if m.log_time and ref.log_time else m.log_time
    if ref.per_trial:
        return replace(m, causes=ref.causes, per_trial=True, log_time=log_time)
    return replace(m, causes=causes_per_trial(ref) if m.per_trial else ref.causes,
                   log_time=log_time)


def null_arm(m: ArmModel, ref: ArmModel) -> ArmModel:
    """The null of arm ``m`` against ``ref``: it ends as ``ref``'s trials do (``ends_as``), its
    failures falling inside each stratum exactly as often as its exposure is spent there."""
    return replace(ends_as(m, ref),
                   strata={s: (share, share) for s, (share, _) in m.strata.items()})


def with_process(m: ArmModel, process: Any) -> ArmModel:
    """Arm ``m`` with its exposure to a first failure drawn from ``process``; an arm modelled
    per trial instead gets the chance that the process fails within its budget, split over its
    causes in their proportions. An arm whose causes end it at once, or that has none, is
    left as it is."""
    total = sum(c.rate for c in m.causes)
    if total <= 0 or math.isinf(total):
        return m
    if m.per_trial:
        p = 1.0 - float(process.survival(m.budget))
        return replace(m, causes=tuple(Cause(c.outcome, c.detail, p * c.rate / total)
                                       for c in m.causes))
    return replace(m, process=process)


def causes_per_trial(m: ArmModel) -> tuple[Cause, ...]:
    """An exposure model's causes as the chance that one of its trials ends by each."""
    total = sum(c.rate for c in m.causes)
    if m.per_trial or total <= 0:
        return m.causes
    p_end = -math.expm1(-total * m.budget)
    return tuple(Cause(c.outcome, c.detail, p_end * c.rate / total) for c in m.causes)


# ---------------------------------------------------------------- one run


def draw(m: ArmModel, mode: str, rng: Any, arm: str, cap: float | None = None) -> dict[str, Any]:
    """One trial of an arm: the first of its competing ends within its budget (or ``cap``, the
    decisive design's exposure cap for this trial), or survival. Where the arm has a crash
    process (``ArmModel.process``), the exposure to its first failure is the process's draw
    and the causes say which failure it is; otherwise each cause is an exponential in
    exposure."""
    budget = m.budget if cap is None else min(m.budget, cap)
    outcome, detail, exposure = "survived", "budget used up", budget
    if mode == "per_trial" or m.per_trial:
        u = rng.random()
        for c in m.causes:
            if u < c.rate:
                outcome, detail = c.outcome, c.detail
                break
            u -= c.rate
        exposure = budget if m.per_trial and outcome == "survived" else 0.0
    elif m.process is not None and m.causes and not any(math.isinf(c.rate) for c in m.causes):
        t = float(m.process.sample(rng))  # inf: never fails
        if t < budget:
            outcome, detail = _which(m.causes, rng)
            exposure = t
    else:
        first = budget
        for c in m.causes:
            if c.rate <= 0:
                continue
            t = 0.0 if math.isinf(c.rate) else float(rng.exponential(1 / c.rate))
            if t < first:
                first, outcome, detail = t, c.outcome, c.detail
        exposure = first
    rec: dict[str, Any] = {"arm": arm, "outcome": outcome, "detail": detail, "exposure": exposure,
                           # as a run's record of a capped trial has it (run.execute)
                           **({"max_exposure": cap} if cap is not None else {})}
    if m.log_time is not None and outcome == "survived":  # its time, as timing.trial_time reads it
        mean, sd = m.log_time
        rec["observations"] = {"timing": {"values": [float(math.exp(rng.normal(mean, sd)))],
                                          "loops": m.loops}}
    if m.strata:
        ended = outcome != "survived"
        rec["_strata"] = {s: (share * exposure, bool(ended and rng.random() < inside))
                          for s, (share, inside) in m.strata.items()}
    rec["_seconds"] = m.seconds if m.per_trial else m.overhead_s + (
        exposure / m.speed if m.speed and (outcome != "survived" or cap is not None) else m.seconds)
    return rec


def _which(causes: Sequence[Cause], rng: Any) -> tuple[str, str]:
    """Which of the causes ended a trial, in proportion to their rates (one cause: no draw)."""
    live = [c for c in causes if c.rate > 0] or list(causes)
    if len(live) == 1:
        return live[0].outcome, live[0].detail
    u = float(rng.random()) * sum(c.rate for c in live)
    for c in live:
        if u < c.rate:
            return c.outcome, c.detail
        u -= c.rate
    return live[-1].outcome, live[-1].detail


@dataclass(frozen=True)
class RunSpec:
    """Everything one simulated run needs (picklable: sent to worker processes)."""

    case: str
    arms: tuple[str, ...]
    claims: tuple[Claim, ...]
    exploratory: tuple[str, ...]
    baseline: str
    failure_outcomes: tuple[str, ...]
    per: float
    design: Any  # gpurepro.analyze.claims.Design
    sequential: bool
    trials: int  # per arm: the fixed size, or the sequential maximum
    mode: str
    strata: tuple[str, ...]
    order: tuple[PlannedTrial, ...] | None = None  # the run's own plan; None: a new shuffle each run
    decider: Any = None  # the Decider class (None: gpurepro.analyze.claims.Decider)
    priors: Mapping[str, Mapping[str, Any]] | None = None  # the decisive design's (journaled form)
    first: tuple[str, ...] = ()  # the decisive design's main-question claims, served first
    # The case's declaration of deterministic outcomes as a run journals it: None, not declared
    # or not simulated.
    deterministic: Mapping[str, Any] | None = None
    timed: Any = None  # the run's timed test (gpurepro.analyze.timing.TimedTest; None: Welch's)
    # Stop a run once its trials refute the declaration of deterministic outcomes (what its
    # shortcut decides is then withdrawn; the design decides the rest, as calibrated apart).
    until_refuted: bool = False


class SimulatedRun(NamedTuple):
    """What one simulated run did."""

    decisions: dict[str, str]  # each claim's decision
    trials: int
    seconds: float
    refuted: bool  # its trials refuted a declaration of deterministic outcomes
    # The arms that ran their most trials in a run that left a confirmatory claim of theirs not
    # decided: where more trials of that arm could have bought a decision.
    stopped_at_most: tuple[str, ...]
    capped: int  # the survivors the decisive design capped
    # The claims the declaration of deterministic outcomes decided (and kept, to the run's end).
    by_declaration: tuple[str, ...] = ()


def simulate_run(spec: RunSpec, models: Mapping[str, ArmModel], rng: Any) -> SimulatedRun:
    """One run of the design, as the run stage would take it."""
    order = spec.order or make_plan(spec.case, {a: {} for a in spec.arms}, spec.trials,
                                    int(rng.integers(2**31)), list(spec.arms)).order
    strata = {name: (lambda r, _f, _n=name: tuple(r["_strata"][_n])) for name in spec.strata}
    extra: dict[str, Any] = {}
    if spec.deterministic:
        extra["deterministic"] = spec.deterministic
    if spec.timed:
        extra["timed"] = spec.timed
    decider = (spec.decider or Decider)(spec.claims, spec.baseline, spec.design,
                                        spec.failure_outcomes, spec.per, spec.arms, strata,
                                        exploratory=spec.exploratory, **extra)
    records: list[dict[str, Any]] = []
    if getattr(spec.design, "first_look", None) is not None:  # the decisive design
        allocation = Allocation(decider, spec.priors or {}, spec.trials, spec.baseline, spec.first)
        taken: set[int] = set()
        while True:
            picked = allocation.next(records, [t for t in order if t.index not in taken])
            if picked is None or (spec.until_refuted and decider.refuted is not None):
                break
            planned, cap = picked.trial, picked.max_exposure
            taken.add(planned.index)
            records.append(_placed(draw(models[planned.arm], spec.mode, rng, planned.arm, cap),
                                   planned))
    else:
        for planned in order:
            if spec.until_refuted and decider.refuted is not None:
                break
            if spec.sequential and not still_needed(decider, records, planned.arm, spec.trials):
                continue
            records.append(_placed(draw(models[planned.arm], spec.mode, rng, planned.arm),
                                   planned))
    if spec.until_refuted and decider.refuted is not None:  # its decisions withdrawn: none kept
        decider.decisions.clear()
    decider.final(records)
    decisions = {c.name: decider.decisions[c.name]["decision"]
                 for c in [*decider.claims, *decider.exploratory]}
    valid = Counter(r["arm"] for r in records if r["outcome"] in EVIDENCE)
    left_open = {a for c in decider.claims if decisions[c.name] == "not_decided"
                 for a in (c.arm, decider.reference(c)) if a}
    at_most = tuple(sorted(a for a in left_open if valid[a] >= spec.trials))
    by_declaration = tuple(sorted(n for n, d in decider.decisions.items()
                                  if d.get("deterministic") and d["decision"] != "not_decided"))
    return SimulatedRun(decisions, len(records), float(sum(r["_seconds"] for r in records)),
                        getattr(decider, "refuted", None) is not None, at_most,
                        sum(1 for r in records if "max_exposure" in r), by_declaration)


def _placed(record: dict[str, Any], planned: PlannedTrial) -> dict[str, Any]:
    """A drawn trial with its place in the plan, as a run's record has it: its index, and its
    replicate (its block: what a paired timed test pairs by)."""
    record["index"], record["rep"] = planned.index, planned.rep
    return record


def streams(seed: int, scenario: int, runs: range) -> Any:
    """One random stream per (scenario, run): the same numbers whatever the number of workers."""
    for i in runs:
        yield np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(scenario, i))))
