"""Calibration: simulate the whole decision pipeline of a case on its own design.

`python -m gpurepro calibrate <case> --runs N --seed S --json` draws N runs of the case's design
and decides each with the code a real run uses, then counts runs with at least one false
decision (STATS.md, "Calibration"):

- arms: the arms of the case's claims (claim arms and their references); the other arms of a
  plan never change a decision (their records are not counted and, with --until-decided, they
  are never needed), so they are left out of the simulated plan;
- the plan: `gpurepro.run.plan.make_plan`'s seeded shuffle of arms x trials; trials are taken in
  that order, one at a time (a run at --jobs 1), and with --until-decided a trial is skipped
  when its arm is no longer needed or has its maximum, with a look whenever one is due: exactly
  what `gpurepro.run.session.execute` does through `execute_plan`'s filter;
- decisions: `gpurepro.analyze.claims.Decider` (looks, Holm, the final look), the decisions the result
  document and the verdict's sentences are written from;
- trials: failures are a Poisson process in exposure. A trial has its arm's exposure budget
  (cycles a surviving trial reaches); it fails at an exponential time with its arm's rate, and
  survives (censored at the budget) when that time is past the budget. Rates and budgets come
  from committed result documents (see `load_rates`). Where no arm of the documents recorded
  any exposure, trials are per-trial Bernoulli draws instead (exposure 0; the Decider then
  uses Fisher's test).

Two scenarios:
- the global null: every arm at the baseline's rate (and failing as the baseline's failures
  are labelled), each with its own budget. Lower/higher claims have no true direction, so any
  decision is false; an equivalence claim is true (ratio 1 is inside any margin), so
  "supported" is right and "contradicted" false. An outcome claim is held exactly at its
  ``share`` (its arm's failures take the named outcome with the probability that makes the
  share exact), where a decision either way is false; where that cannot be done (the arm fails
  less often than the share, the outcome is not a failure outcome, a second outcome claim on
  the same arm) the claim stays in the family but its decisions are not counted, and the
  output says why.
- the observed effects: every arm at its own observed rate (an arm with no failure at rate 0,
  so it never fails in the simulation), failures labelled as that arm's observed failures
  were. The true direction of each claim follows from those rates; power is the share of runs
  that decide a claim in that direction.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..case.model import SINGLE_ARM_KINDS, Case, Claim
from ..errors import UsageError
from ..run.classify import EVIDENCE
from ..run.plan import DEFAULT_ALPHA, make_plan

OTHER_DETAIL = "simulated: not the claimed outcome"
DECISIONS = ("supported", "contradicted", "not_decided")


# ---------------------------------------------------------------- rates from result documents


@dataclass(frozen=True)
class ArmModel:
    """How one arm's trials are drawn."""

    rate: float  # failures per unit of exposure (0: never; inf: at once, exposure 0)
    budget: float  # the exposure a surviving trial reaches
    p_fail: float  # the chance that a trial fails (per-trial mode; else from rate and budget)
    labels: tuple[tuple[str, str, float], ...]  # a failure's (outcome, detail, probability)


@dataclass(frozen=True)
class Rates:
    mode: str  # "exposure" or "per_trial"
    observed: dict[str, ArmModel]
    documents: list[str]
    summary: dict[str, dict[str, Any]]  # per arm: what was counted and how the budget was set


def claim_arms(case: Case, claims: Sequence[Claim] | None = None) -> list[str]:
    """The arms the claims are about, claim arms and references, in the case's arm order."""
    claims = case.claims if claims is None else claims
    used = {c.arm for c in claims} | {c.reference or case.baseline for c in claims
                                      if c.kind not in SINGLE_ARM_KINDS}
    return [a for a in case.resolved_arms() if a in used]


def committed_results(case: Case, root: Path) -> list[Path]:
    """The case's committed result documents, newest first (their names start with a stamp)."""
    folder = root / "results" / case.name
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", str(folder)], cwd=root,
                             capture_output=True, text=True, check=True).stdout
        files = [root / f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = list(folder.glob("*.json"))
    files = [f for f in files if f.suffix == ".json" and not f.name.endswith(".pyperf.json")
             and f.parent == folder and f.is_file()]
    return sorted(files, key=lambda f: f.name, reverse=True)


def _valid_arms(doc: Mapping[str, Any]) -> set[str]:
    return {t["arm"] for t in doc.get("trials") or [] if t.get("outcome") in EVIDENCE}


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--from {path}: not a readable result document ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("trials"), list):
        raise UsageError(f"--from {path}: not a result document (no trials)")
    return doc


def _rel(path: Path, root: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(root.resolve())) if path.is_relative_to(root.resolve()) else str(path)


def load_rates(case: Case, root: Path, paths: Sequence[str | Path] | None = None,
               arms: Sequence[str] | None = None) -> Rates:
    """Per-arm rates and budgets, pooled over ``paths`` (default: the newest committed result
    of the case with valid trials in every arm of its claims).

    - rate: failures / total exposure of the arm's valid trials (no failure: 0; failures but
      no exposure at all: failing at once, with exposure 0, as a coarse counter records);
    - budget: the median exposure of the arm's survivors; an arm with none: its failures'
      exposure per second times the documents' trial duration; else the largest exposure seen;
      else the baseline's budget.
    """
    arms = list(arms if arms is not None else claim_arms(case))
    if paths:
        docs = [(Path(p), _read(Path(p))) for p in paths]
        seen: set[str] = set().union(*(_valid_arms(d) for _, d in docs))
        missing = [a for a in arms if a not in seen]
        if missing:
            raise UsageError(f"--from: no valid trial of arm(s) {', '.join(missing)} in "
                             f"{', '.join(str(p) for p, _ in docs)}; the claims need them")
    else:
        # The newest committed results, newest first, each taken only if it adds an arm the
        # ones before it lack (runs of new arms seldom repeat every old one); claims whose
        # arms no committed result has drop out of the simulated family.
        docs = []
        covered: set[str] = set()
        for f in committed_results(case, root):
            try:
                doc = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            adds = (_valid_arms(doc) & set(arms)) - covered
            if adds:
                docs.append((f, doc))
                covered |= adds
            if covered >= set(arms):
                break
        if case.baseline not in covered:
            raise UsageError(f"no committed result of {case.name} under results/{case.name}/ has "
                             f"valid trials of its baseline; give result documents with --from")
        arms = [a for a in arms if a in covered]
    trials = [t for _, d in docs for t in d["trials"] if t.get("outcome") in EVIDENCE]
    durations = [float(((d.get("plan") or {}).get("options") or {}).get("budget", {}).get("duration_s") or 0)
                 for _, d in docs]
    exposures = [int(((d.get("plan") or {}).get("options") or {}).get("budget", {}).get("max_exposure") or 0)
              for _, d in docs]
    duration = statistics.median(durations) if any(durations) else 0.0
    max_exposure = min((c for c in exposures if c > 0), default=0)
    failure = set(case.failure_outcomes)
    any_exposure = any(float(t.get("exposure") or 0) > 0 for t in trials if t["arm"] in arms)
    summary: dict[str, dict[str, Any]] = {}
    models: dict[str, ArmModel] = {}
    for arm in arms:
        ts = [t for t in trials if t["arm"] == arm]
        failed = [t for t in ts if t["outcome"] in failure]
        survived = [t for t in ts if t["outcome"] not in failure]
        exposure = float(sum(float(t.get("exposure") or 0) for t in ts))
        k, n = len(failed), len(ts)
        budget: float | None
        if survived:
            budget, how = float(statistics.median(float(t.get("exposure") or 0) for t in survived)), "median survivor exposure"
        else:
            speeds = [float(t["exposure"]) / float(t["duration_s"]) for t in failed
                      if (t.get("exposure") or 0) > 0 and (t.get("duration_s") or 0) > 0]
            if speeds and duration > 0:
                budget = statistics.median(speeds) * duration
                how = f"median exposure per second of its failures x {duration:g} s"
                if max_exposure:
                    budget, how = min(budget, max_exposure), how + f", at most {max_exposure}"
            elif exposure > 0:
                budget, how = max(float(t.get("exposure") or 0) for t in ts), "largest exposure seen"
            else:
                budget, how = None, "the baseline's"
        if any_exposure:
            rate = (k / exposure if exposure > 0 else math.inf) if k else 0.0
        else:
            rate = 0.0
        labels = Counter((t["outcome"], str(t.get("detail") or "")) for t in failed)
        models[arm] = ArmModel(rate=rate, budget=budget or 0.0, p_fail=k / n if n else 0.0,
                               labels=tuple((o, d, c / k) for (o, d), c in sorted(labels.items()))
                               or ((case.failure_outcomes[0], "", 1.0),))
        summary[arm] = {"n_valid": n, "failures": k, "exposure": exposure,
                        "rate": None if math.isinf(rate) else rate,
                        "p_fail": k / n if n else None, "budget": budget, "budget_from": how}
    base = models.get(case.baseline)
    fallback = (base.budget if base and base.budget else
                max((m.budget for m in models.values()), default=0.0)) or 1.0
    for arm, m in models.items():
        if not m.budget:
            models[arm] = ArmModel(m.rate, fallback, m.p_fail, m.labels)
            summary[arm]["budget"] = fallback
    return Rates(mode="exposure" if any_exposure else "per_trial", observed=models,
                 documents=[_rel(p, root) for p, _ in docs], summary=summary)


# ---------------------------------------------------------------- the two scenarios


def p_fail(m: ArmModel, mode: str) -> float:
    if mode == "per_trial":
        return m.p_fail
    if math.isinf(m.rate):
        return 1.0
    return -math.expm1(-m.rate * m.budget)


def _matches(claim: Claim, outcome: str, detail: str) -> bool:
    return outcome == claim.outcome and (not claim.detail or claim.detail in detail)


def _other_label(claim: Claim, failure_outcomes: Sequence[str]) -> tuple[str, str] | None:
    """A failure label that does not match the outcome claim."""
    for outcome in [claim.outcome, *failure_outcomes]:
        if outcome is not None and outcome in failure_outcomes and not _matches(claim, outcome, OTHER_DETAIL):
            return outcome, OTHER_DETAIL
    return None


def null_models(case: Case, claims: Sequence[Claim], rates: Rates
                ) -> tuple[dict[str, ArmModel], dict[str, str]]:
    """The global null: every arm at the baseline's rate (per-trial chance), failing as the
    baseline's failures are labelled; outcome claims held exactly at their share. Returns the
    models and the claims left out of the count, with the reason."""
    base = rates.observed[case.baseline]
    models = {a: ArmModel(base.rate, m.budget, base.p_fail, base.labels)
              for a, m in rates.observed.items()}
    left_out: dict[str, str] = {}
    done: dict[str, str] = {}
    for c in claims:
        if c.kind == "concentrated":
            left_out[c.name] = ("the simulation draws counts, not trajectories: where along a "
                                "trial a failure falls is not simulated (the claim stays in the "
                                "family, undecided, which only makes Holm stricter)")
            continue
        if c.kind != "outcome":
            continue
        m = models[c.arm]
        if c.arm in done:
            left_out[c.name] = (f"{done[c.arm]} already sets how {c.arm}'s trials end; one outcome "
                                f"claim per arm can be held at its share")
            continue
        if c.outcome not in case.failure_outcomes:
            left_out[c.name] = (f"{c.outcome} is not a failure outcome of the case; only failures "
                                f"are labelled in the simulation")
            continue
        pf = p_fail(m, rates.mode)
        other = _other_label(c, case.failure_outcomes)
        if c.share > 0 and pf < c.share:
            left_out[c.name] = (f"at the baseline's rate {c.arm} fails in {pf:.3g} of its trials, "
                                f"less than the share {c.share:g}: the share cannot be held at "
                                f"its null value")
            continue
        pm = c.share / pf if c.share > 0 else 0.0
        if pm < 1 and other is None:
            left_out[c.name] = "no failure outcome differs from the claimed one"
            continue
        labels = [(c.outcome or "", c.detail or "", pm)] + ([(*other, 1 - pm)] if other and pm < 1 else [])
        models[c.arm] = ArmModel(m.rate, m.budget, m.p_fail, tuple(labels))
        done[c.arm] = c.name
    return models, left_out


def truth(claim: Claim, reference: str | None, models: Mapping[str, ArmModel], mode: str
          ) -> str | None:
    """The decision that is right under ``models``: "supported", "contradicted", or None where
    neither is (no direction: a decision either way is false)."""
    a = models[claim.arm]
    if claim.kind == "concentrated":
        return None
    if claim.kind == "outcome":
        pf = p_fail(a, mode)
        q = pf * sum(p for o, d, p in a.labels if _matches(claim, o, d))
        if math.isclose(q, claim.share, rel_tol=1e-9, abs_tol=1e-12):
            return None
        return "supported" if q > claim.share else "contradicted"
    r = models[reference or ""]
    x, y = (a.rate, r.rate) if mode == "exposure" else (a.p_fail, r.p_fail)
    if (x == 0 and y == 0) or (math.isinf(x) and math.isinf(y)):
        return None
    ratio = math.inf if y == 0 else x / y
    if claim.kind == "equivalent":
        lo, hi = 1 / claim.margin, claim.margin
        if lo < ratio < hi:
            return "supported"
        return None if ratio in (lo, hi) else "contradicted"
    if ratio == 1:
        return None
    lower = ratio < 1
    return "supported" if lower == (claim.kind == "lower") else "contradicted"


# ---------------------------------------------------------------- simulation


@dataclass(frozen=True)
class Spec:
    """Everything one simulated run needs (picklable: sent to the worker processes)."""

    case: str
    arms: tuple[str, ...]
    claims: tuple[Claim, ...]
    baseline: str
    failure_outcomes: tuple[str, ...]
    per: float
    design: Any  # gpurepro.analyze.claims.Design, or a stand-in with the same interface
    sequential: bool
    trials: int  # per arm: the fixed size, or the maximum of the sequential design
    mode: str
    seed: int
    scenarios: dict[str, dict[str, ArmModel]] = field(default_factory=dict)
    decider: Any = None  # the Decider class (None: gpurepro.analyze.claims.Decider)


def _draw(m: ArmModel, n: int, mode: str, rng: Any, arm: str) -> list[dict[str, Any]]:
    """``n`` trials of one arm, in the order the arm would run them."""
    if mode == "per_trial":
        failed = rng.random(n) < m.p_fail
        exposure = np.zeros(n)
    elif m.rate == 0:
        failed, exposure = np.zeros(n, dtype=bool), np.full(n, m.budget)
    elif math.isinf(m.rate):
        failed, exposure = np.ones(n, dtype=bool), np.zeros(n)
    else:
        t = rng.exponential(1 / m.rate, n)
        failed = t < m.budget
        exposure = np.where(failed, t, m.budget)
    if len(m.labels) > 1:
        which = rng.choice(len(m.labels), size=n, p=[p for _, _, p in m.labels])
    else:
        which = np.zeros(n, dtype=int)
    out = []
    for f, e, w in zip(failed.tolist(), exposure.tolist(), which.tolist(), strict=True):
        outcome, detail = (m.labels[w][0], m.labels[w][1]) if f else ("survived", "budget used up")
        out.append({"arm": arm, "outcome": outcome, "detail": detail, "exposure": e})
    return out


def simulate_run(spec: Spec, models: Mapping[str, ArmModel], rng: Any) -> tuple[dict[str, str], int]:
    """One run: the shuffled plan, trials drawn as they are taken, the looks and the final look
    as `run.session.execute` takes them. Returns each claim's decision and the trials run."""
    from .claims import Decider

    decider_cls = spec.decider or Decider
    order = make_plan(spec.case, {a: {} for a in spec.arms}, spec.trials,
                      int(rng.integers(2**31)), list(spec.arms)).order
    draws = {a: _draw(models[a], spec.trials, spec.mode, rng, a) for a in spec.arms}
    decider = decider_cls(spec.claims, spec.baseline, spec.design, spec.failure_outcomes,
                          spec.per, spec.arms)
    records: list[dict[str, Any]] = []
    done = dict.fromkeys(spec.arms, 0)
    max_trials = spec.trials
    for planned in order:
        arm = planned.arm
        if spec.sequential:
            # run.session.execute's still_needed, called before each trial (every simulated outcome
            # is evidence, so `done` counts what it counts).
            if decider.look_due(records):
                decider.look(records)
            if not (arm in decider.arms_needed() and done[arm] < max_trials):
                continue
        records.append(draws[arm][done[arm]])
        done[arm] += 1
    decider.final(records)
    return {c.name: decider.decisions[c.name]["decision"] for c in decider.claims}, len(records)


def _chunk(spec: Spec, scenario: str, start: int, stop: int) -> list[tuple[dict[str, str], int]]:
    index = list(spec.scenarios).index(scenario)
    models = spec.scenarios[scenario]
    out = []
    for i in range(start, stop):
        # One stream per (scenario, run): the same numbers whatever the number of workers.
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(spec.seed, spawn_key=(index, i))))
        out.append(simulate_run(spec, models, rng))
    return out


def _simulate(spec: Spec, scenario: str, runs: int, workers: int) -> list[tuple[dict[str, str], int]]:
    if workers <= 1 or runs < 50:
        return _chunk(spec, scenario, 0, runs)
    size = max(10, math.ceil(runs / (workers * 4)))
    bounds = [(s, min(runs, s + size)) for s in range(0, runs, size)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        parts = pool.map(_chunk, *zip(*[(spec, scenario, s, e) for s, e in bounds], strict=True))
        return [r for part in parts for r in part]


def _summarize(results: Sequence[tuple[dict[str, str], int]], claims: Sequence[Claim],
               truths: Mapping[str, str | None], left_out: Mapping[str, str]) -> dict[str, Any]:
    runs = len(results)
    any_false = 0
    per_claim: dict[str, dict[str, Any]] = {}
    counts: dict[str, Counter[str]] = {c.name: Counter() for c in claims}
    false_by: Counter[str] = Counter()
    for decisions, _ in results:
        wrong = False
        for name, d in decisions.items():
            counts[name][d] += 1
            if name in left_out or d == "not_decided":
                continue
            if d != truths[name]:
                false_by[name] += 1
                wrong = True
        any_false += wrong
    for c in claims:
        n = counts[c.name]
        per_claim[c.name] = {"true": truths.get(c.name) if c.name not in left_out else "left out",
                             **{d: n[d] / runs for d in DECISIONS},
                             "false": None if c.name in left_out else false_by[c.name] / runs}
    rate = any_false / runs
    trials = [t for _, t in results]
    return {"runs": runs, "false_claim_rate": rate,
            "false_claim_rate_se": math.sqrt(rate * (1 - rate) / runs),
            "mean_trials": statistics.fmean(trials), "max_trials_run": max(trials),
            "claims": per_claim,
            "left_out": dict(left_out)}


def calibrate(case: Case, rates: Rates, runs: int, seed: int, design: Any, sequential: bool,
              trials: int, workers: int = 1, decider: Any = None,
              scenarios: Sequence[str] = ("null", "observed")) -> dict[str, Any]:
    """Simulate ``runs`` runs under the global null and under the observed effects.

    ``design`` (a `gpurepro.analyze.claims.Design`) and ``decider`` (default: `gpurepro.analyze.claims.Decider`)
    may be replaced, e.g. by a deliberately broken one, to show that the simulation catches it."""
    arms = tuple(rates.observed)
    from .claims import Decider

    family = (decider or Decider)(case.claims, case.baseline, design, case.failure_outcomes,
                                  case.exposure.per, arms).claims
    null, left_out = null_models(case, family, rates)
    spec = Spec(case=case.name, arms=arms, claims=tuple(family), baseline=case.baseline,
                failure_outcomes=tuple(case.failure_outcomes), per=case.exposure.per,
                design=design, sequential=sequential, trials=trials, mode=rates.mode, seed=seed,
                scenarios={"null": null, "observed": rates.observed}, decider=decider)

    def ref(c: Claim) -> str | None:
        return None if c.kind in SINGLE_ARM_KINDS else (c.reference or case.baseline)

    out: dict[str, Any] = {}
    for name, models, skip in (("null", null, left_out), ("observed", rates.observed, {})):
        if name not in scenarios:
            continue
        truths = {c.name: truth(c, ref(c), models, rates.mode) for c in family}
        out[name] = _summarize(_simulate(spec, name, runs, workers), family, truths, skip)
    alpha = float(design.alpha)
    fw = out["null"]["false_claim_rate"]
    limit = alpha + 2 * math.sqrt(alpha * (1 - alpha) / runs)
    power = {}
    for c in family if "observed" in out else ():
        d = out["observed"]["claims"][c.name]
        power[c.name] = None if d["true"] is None else d[d["true"]]
    return {
        "case": case.name,
        "runs": runs,
        "seed": seed,
        "alpha": alpha,
        "family_wise_false_claim_rate": fw,
        "family_wise_false_claim_rate_se": out["null"]["false_claim_rate_se"],
        "alpha_plus_2_mc_se": limit,
        "holds_alpha": fw <= limit,
        "power": power,
        "design": {**design.describe(), "sequential": sequential,
                   "trials_per_arm": None if sequential else trials,
                   "plan": "gpurepro.run.plan.make_plan's shuffle of the claims' arms, one trial at a "
                           "time (--jobs 1); with --until-decided a trial is skipped once its arm "
                           "is not needed, as run.session.execute does",
                   "arms": list(arms), "claims": [c.name for c in family]},
        "rates_from": {"documents": rates.documents, "mode": rates.mode,
                       "model": ("failures a Poisson process in exposure; a survivor censored at "
                                 "its arm's budget" if rates.mode == "exposure" else
                                 "no exposure recorded: per-trial Bernoulli failures"),
                       "zero_failure_arms": "rate 0 under the observed effects (never fail)",
                       "null": "every arm at the baseline's rate, each with its own budget; "
                               "outcome claims held exactly at their share",
                       "arms": rates.summary},
        "null": out["null"],
        "observed": out.get("observed"),
    }


# ---------------------------------------------------------------- command line


def _workers(given: int | None) -> int:
    if given:
        return given
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def run_calibration(case: Case, root: Path, stopping: Mapping[str, Any] | None, trials: int,
                    alpha: float | None, rates_from: Sequence[str] | None, runs: int, seed: int,
                    workers: int | None, as_json: bool) -> int:
    """`calibrate`: simulate the case's claims on the design asked for (``stopping``, the
    sequential design, or ``trials`` per arm at ``alpha``) and print the result."""
    from .claims import Design

    design = Design.from_description(stopping) if stopping else Design(
        alpha=alpha if alpha is not None else DEFAULT_ALPHA)
    rates = load_rates(case, root, rates_from)
    started = time.monotonic()
    result = calibrate(case, rates, runs, seed, design, stopping is not None, trials,
                       _workers(workers))
    result["wall_s"] = round(time.monotonic() - started, 2)
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        print(_text(result))
    sys.stdout.flush()
    return 0


def _text(r: Mapping[str, Any]) -> str:
    d = r["design"]
    what = (f"--until-decided, looks every {d['step']} up to {d['max_trials']} trials"
            if d["sequential"] else f"{d['trials_per_arm']} trials per arm")
    lines = [f"{r['case']}: {r['runs']} simulated runs per scenario ({what}, alpha {r['alpha']:g}, "
             f"seed {r['seed']}; rates from {', '.join(r['rates_from']['documents'])})",
             f"family-wise false-claim rate under the global null: "
             f"{r['family_wise_false_claim_rate']:.4f} +/- {r['family_wise_false_claim_rate_se']:.4f} "
             f"({'holds' if r['holds_alpha'] else 'DOES NOT HOLD'} alpha)",
             f"mean trials per run: null {r['null']['mean_trials']:.1f}, observed "
             f"{r['observed']['mean_trials']:.1f}",
             "power under the observed effects:"]
    for name, p in r["power"].items():
        true = r["observed"]["claims"][name]["true"]
        lines.append(f"  {name}: " + ("no true direction" if p is None else f"{p:.3f} ({true})"))
    for name, why in r["null"]["left_out"].items():
        lines.append(f"  (null: {name} not counted: {why})")
    lines.append(f"{r['wall_s']} s")
    return "\n".join(lines)
