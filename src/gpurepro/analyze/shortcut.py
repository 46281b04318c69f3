"""The deterministic shortcut, checked (standard library only: the run stage journals it).

A case that declares its outcomes deterministic (``Case.deterministic``) has a confirmatory
claim on shares of whole trials decided once each of its arms has ``trials`` valid trials that
agree (gpurepro.analyze.claims: ``Decider.settle``). A run journals the declaration as
``declaration`` writes it; what a journal holds decides how its claims are decided, so a
journal from before the check (no ``version``) is decided as it was:

- **version 1** (no ``version``): ``trials`` agreeing trials decide, "agree" meaning the same
  outcome class; the shortcut spends no alpha.
- **version 2** (``declaration``): trials agree when their ``signature`` is the same, not only
  their outcome class; an arm decided by the shortcut keeps ``check`` later trials (the decision
  stands once they agree too, and is withdrawn with every other the declaration made if any
  differs); the number of agreeing trials is the fewest whose chance of a false decision, were
  the declaration false for one arm at a time (that arm's trials ending the other way with
  chance f, for each f of ``flake_rates``), is at most ``share`` of the run's alpha; that
  chance (``bound``) is spent from the run's alpha: the design decides the other claims at
  alpha - bound.

Why the bound is what a run spends. Let E be the event that the shortcut ever keeps a false
decision (checked). Outside E every decision it keeps is right, so the claims it removes from
Holm's step-down at a look are claims whose hypothesis is false, and the design's looks hold
their alphas (Holm's argument needs only that every true hypothesis is still open). A decision
waiting for its check is counted in Holm's number of claims as if open (claims.Decider.look),
so a decision the check withdraws never loosened a threshold. The family-wise error rate is
then at most P(E) + (alpha - bound) <= alpha, with P(E) <= bound where the declaration fails
for one arm at a flake rate of ``flake_rates`` (for j such arms at once, j times it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

# What other modules use; the rest is this module's own.
__all__ = [
    "checked", "declaration", "design", "design_alpha", "disagreement", "false_decision_chance",
    "fingerprint", "FLAKE_RATES", "MACHINE_OBSERVATIONS", "MOST_AGREEING", "share_claims",
    "Signature", "signature", "SIGNATURE_FIELDS", "spent", "usable", "VERSION"
]

VERSION = 2  # a declaration journaled with it is checked (module docstring)
FLAKE_RATES = (0.5, 0.1)  # a false declaration: one arm's trials end the other way this often
SHARE_OF_ALPHA = 0.5  # the most of the run's alpha the shortcut may spend
CHECK_TRIALS = 1  # later trials of an arm the shortcut decided, which must agree too
MOST_AGREEING = 64  # past this many agreeing trials the shortcut is not used at all

# What a trial's signature reads (``signature``), by where it is in the trial's record:
SIGNATURE_FIELDS = {
    # compared between any two valid trials of an arm:
    "outcome": "the outcome class",
    "exit.signal": "the fatal signal that ended it, if any",
    "errors": "the names of the CUDA errors it recorded",
    "observations.launches_agree": "whether its launches computed the same output",
    "observations.output_sha256": "the sha256 of its output (fa3_wgmma_wait's driver records one)",
    "check.kind": "how its output was checked",
    "check.mismatches / check.n": "the share of checked elements that differ from the reference",
    # compared between trials that did the same work (the same exposure and check.n):
    "check.mismatches": "how many checked elements differ",
    "check.first": "the first mismatches, [index, got, expected]: their positions and values",
    "observations.*": ("every other observation the driver recorded (ptxas_abs_clamp's "
                       "mismatches by sign and report_m, fa3_wgmma_wait's max_abs_error), but "
                       "those of MACHINE_OBSERVATIONS"),
}
# Observations that describe the machine or are measurements, which differ between trials of a
# deterministic arm: left out of the signature.
MACHINE_OBSERVATIONS = ("device", "bindings", "conditions", "timing", "compute_capability",
                        "cuda_driver_version", "threads")
_IN_COMMON = ("launches_agree", "output_sha256")


@dataclass(frozen=True)
class Signature:
    """A trial reduced to what a deterministic trial repeats exactly: ``common`` is compared
    between any two valid trials of an arm, ``counts`` only between trials of the same
    ``work`` (a trial the decisive design capped checks fewer elements, so fewer of them can
    differ, and its first mismatches may stop short)."""

    common: tuple[Any, ...]
    work: tuple[Any, ...]
    counts: tuple[Any, ...]


def _get(record: Mapping[str, Any], *path: str) -> Any:
    value: Any = record
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _frozen(value: Any) -> Any:
    """A JSON value as something hashable and comparable."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def signature(record: Mapping[str, Any]) -> Signature:
    """A trial record's signature: the fields of SIGNATURE_FIELDS, each None where the trial
    has none (an untimed case's trial has no sha256, a crash no check)."""
    check = record.get("check")
    check = check if isinstance(check, dict) else {}
    mismatches, n = check.get("mismatches"), check.get("n")
    share = (str(Fraction(int(mismatches), int(n))) if isinstance(mismatches, int)
             and isinstance(n, int) and n > 0 else None)
    errors = record.get("errors")
    common = (record.get("outcome"), _get(record, "exit", "signal"),
              tuple(sorted(errors)) if isinstance(errors, dict) else None,
              _get(record, "observations", "launches_agree"),
              _get(record, "observations", "output_sha256"), check.get("kind"), share)
    work = (record.get("exposure"), n)
    observations = record.get("observations")
    rest = ({k: v for k, v in observations.items()
             if k not in MACHINE_OBSERVATIONS and k not in _IN_COMMON}
            if isinstance(observations, dict) else {})
    return Signature(common, work, (mismatches, _frozen(check.get("first")), _frozen(rest)))


COMMON_NAMES = ("outcome", "exit.signal", "errors", "observations.launches_agree",
                "observations.output_sha256", "check.kind", "check.mismatches / check.n")
COUNT_NAMES = ("check.mismatches", "check.first", "observations.*")


@dataclass(frozen=True)
class Disagreement:
    """Two valid trials of one arm whose signatures differ, and in what."""

    arm: str
    trials: tuple[Any, Any]  # their indices in the plan
    fields: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"trials": list(self.trials), "fields": list(self.fields)}


def disagreement(arm: str, records: Sequence[Mapping[str, Any]],
                 of: Callable[[Mapping[str, Any]], Signature] | None = None) -> Disagreement | None:
    """The first of an arm's valid trials (in the order given) whose signature differs from an
    earlier one's: in a common field from the first trial's, or in a count from the first
    trial's of the same work (all agree pairwise exactly when all agree with those); None
    where all agree."""
    first: tuple[Mapping[str, Any], Signature] | None = None
    by_work: dict[Any, tuple[Mapping[str, Any], Signature]] = {}
    for r in records:
        s = (of or signature)(r)
        if first is None:
            first = (r, s)
        elif s.common != first[1].common:
            return Disagreement(arm, (first[0].get("index"), r.get("index")), tuple(
                name for name, a, b in zip(COMMON_NAMES, s.common, first[1].common, strict=True)
                if a != b))
        same = by_work.setdefault(s.work, (r, s))
        if same[1].counts != s.counts:
            return Disagreement(arm, (same[0].get("index"), r.get("index")), tuple(
                name for name, a, b in zip(COUNT_NAMES, s.counts, same[1].counts, strict=True)
                if a != b))
    return None


def fingerprint(record: Mapping[str, Any]) -> str:
    """A short, stable name of a trial's signature (its common part), for a claim's record."""
    import hashlib
    import json

    text = json.dumps(signature(record).common, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# ---------------------------------------------------------------- the bound


@dataclass(frozen=True)
class ShareClaim:
    """What the bound needs of a claim on one arm's share of trials: the share it is tested
    against and which side of it the claim states (an outcome claim)."""

    arm: str
    share: float
    below: bool


def _decision(q: float, claim: ShareClaim) -> str | None:
    """What the shortcut decides from an established share ``q`` (0 or 1): as
    claims.Decider._deterministic_decision does."""
    if q == claim.share:
        return None
    return "supported" if (q < claim.share) == claim.below else "contradicted"


def _truth(q: float, claim: ShareClaim) -> str | None:
    """The right decision where the arm's true share is ``q`` (None: at the claim's share,
    where any decision is false)."""
    if math.isclose(q, claim.share, rel_tol=1e-12, abs_tol=1e-12):
        return None
    return "supported" if (q < claim.share) == claim.below else "contradicted"


def false_decision_chance(claims: Iterable[ShareClaim], flake: float, agreeing: int) -> float:
    """The chance that ``agreeing`` valid trials of one arm flaky at rate ``flake`` (each ends
    its usual way with chance 1 - flake, the other way with chance flake) all agree and the
    shortcut then decides one of the arm's ``claims`` falsely.

    Each claim sees a trial as counting (1) or not (0). The worst case for each: its usual end
    counts (u = 1) or not (u = 0), the other way the opposite; its true share is then
    (1 - flake) u + flake (1 - u). All trials usual (chance (1 - flake)^k) establishes u, all
    the other way (chance flake^k) 1 - u; the chance is the sum over the two of those where
    some claim, for some u, is decided against its truth. A claim on shares of two arms'
    trials (lower/higher with unit="trial") is never decided falsely while one of its arms is
    flaky: the other's share is 0 or 1, the flaky one's strictly between, and an established
    0 or 1 that differs from the other's lies on the same side as the true share; it adds
    nothing."""
    claims = list(claims)

    def wrong(established_usual: bool) -> bool:
        for c in claims:
            for u in (0.0, 1.0):
                true_share = (1 - flake) * u + flake * (1 - u)
                q = u if established_usual else 1 - u
                d = _decision(q, c)
                if d is not None and d != _truth(true_share, c):
                    return True
        return False

    k = agreeing
    return ((1 - flake) ** k if wrong(True) else 0.0) + (flake ** k if wrong(False) else 0.0)


@dataclass(frozen=True)
class ShortcutDesign:
    """The checked shortcut of one run, as its journal's declaration holds it (``to_json``)."""

    reason: str
    trials: int  # agreeing valid trials of an arm that decide its claims
    check: int  # later trials of a decided arm that must agree too
    flake_rates: tuple[float, ...]
    alpha: float  # the run's family-wise alpha
    share: float  # the most of it the shortcut may spend
    bound: float  # what it spends: its chance of a false decision, one flaky arm at a time
    worst: tuple[str, float] | None  # the arm and flake rate of that chance
    usable: bool  # False: no number of agreeing trials keeps the bound within its share
    at_rates: tuple[float, ...] = ()  # the chance at each of flake_rates (the worst arm's)

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "trials": self.trials, "version": VERSION,
                "check": self.check, "flake_rates": list(self.flake_rates),
                "alpha": self.alpha, "share": self.share, "bound": self.bound,
                "worst": ({"arm": self.worst[0], "flake_rate": self.worst[1]}
                          if self.worst else None),
                "at_rates": list(self.at_rates), "usable": self.usable,
                "signature": list(SIGNATURE_FIELDS)}


def share_claims(claims: Iterable[Any]) -> list[ShareClaim]:
    """The claims (gpurepro.case.Claim) the bound depends on: outcome claims (claims on two
    arms' shares of trials add nothing: false_decision_chance)."""
    return [ShareClaim(c.arm, float(c.share), c.bound == "below") for c in claims
            if c.kind == "outcome"]


def bound_for(claims: Sequence[ShareClaim], agreeing: int,
              flake_rates: Sequence[float] = FLAKE_RATES) -> tuple[float, tuple[str, float] | None]:
    """The largest chance of a false decision over the arms (one flaky at a time) and the flake
    rates, and where it is (None: no claim can be decided falsely)."""
    worst, where = 0.0, None
    for arm in sorted({c.arm for c in claims}):
        mine = [c for c in claims if c.arm == arm]
        for f in flake_rates:
            p = false_decision_chance(mine, f, agreeing)
            if p > worst:
                worst, where = p, (arm, f)
    return worst, where


def design(reason: str, claims: Iterable[Any], alpha: float, least: int,
           flake_rates: Sequence[float] = FLAKE_RATES, share: float = SHARE_OF_ALPHA,
           check: int = CHECK_TRIALS) -> ShortcutDesign:
    """The checked shortcut for a case's ``claims`` at the run's ``alpha``: the fewest
    agreeing trials (at least ``least``, then ``check`` more) whose bound is within ``share``
    of alpha."""
    chosen = share_claims(claims)
    for trials in range(max(1, least), MOST_AGREEING + 1):
        bound, where = bound_for(chosen, trials + check, flake_rates)
        if bound <= share * alpha:
            at = tuple(bound_for(chosen, trials + check, (f,))[0] for f in flake_rates)
            return ShortcutDesign(reason, trials, check, tuple(flake_rates), alpha, share,
                                  bound, where, True, at)
    return ShortcutDesign(reason, MOST_AGREEING, check, tuple(flake_rates), alpha, share, 0.0,
                          where, False)


def declaration(case: Any, alpha: float) -> dict[str, Any] | None:
    """A case's declaration of deterministic outcomes as a new run journals it, checked, for
    a run at ``alpha`` (None where the case declares none)."""
    declared = case.determinism()
    if not declared or not case.claims:
        return None
    return design(declared["reason"], case.claims, alpha, int(declared["trials"])).to_json()


def checked(declared: Mapping[str, Any] | None) -> bool:
    """Whether a journaled declaration is checked (version 2 on): its signature, check trials
    and bound apply."""
    return declared is not None and bool(declared) and int(declared.get("version", 1)) >= VERSION


def usable(declared: Mapping[str, Any] | None) -> bool:
    """Whether a journaled declaration may decide claims at all: one from before the check
    always, a checked one where some number of agreeing trials kept its bound within its
    share of alpha."""
    if not declared:
        return False
    return not checked(declared) or bool(declared.get("usable", True))


def spent(declared: Mapping[str, Any] | None) -> float:
    """The alpha a journaled declaration spends (0 for one from before the check, or one the
    run cannot use)."""
    if declared is None or not (checked(declared) and usable(declared)):
        return 0.0
    return float(declared.get("bound", 0.0))


def design_alpha(alpha: float, declared: Mapping[str, Any] | None) -> float:
    """The alpha the run's design spends over its looks: the run's, less the shortcut's."""
    return alpha - spent(declared)
