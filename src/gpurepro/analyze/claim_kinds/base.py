"""What every claim kind shares: the ``ClaimKind`` protocol, the evidence a kind's test returns,
the trials it reads, and the exact binomial tail most kinds' tests use.

A claim kind holds in one object what the harness does with a claim of that kind: which arms
it is about, its test (trials -> one-sided p-values, ``evidence``), which trials decide it
(whole trials or exposure: ``on_trials``, ``on_exposure``), what the declared determinism can
decide of it (``settle``), its simulation model (the right decision under arm models,
``truth``; its null scenario, ``null_target``) and its wording (``values``, ``needed``,
``wording``). gpurepro.analyze.claim_kinds registers one per ``Claim.kind``."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from scipy.special import bdtr, bdtrc

from ...case.model import Claim, Stratum
from ..tally import evidence_of

if TYPE_CHECKING:  # the simulation's arm model; simulate imports the claims, not the reverse
    from ..arm_model import ArmModel
    from ..timing import TimedTest

# What other modules use; the rest is this module's own.
__all__ = [
    "ArmCounts", "arm_counts", "binom_p", "ClaimKind", "count_values", "direction",
    "EVEN_SHARE", "Evidence", "fmt", "Share", "Trials"
]

EVEN_SHARE = 0.5  # a claim's level split evenly between its two sides: a two-sided p


@dataclass
class Evidence:
    """One-sided p-values for 'supported' and 'contradicted', and what they came from;
    ``weight``: the share of the claim's level that 'supported' gets (the design's
    ``supported_share``), the rest going to 'contradicted'."""

    test: str
    p_supported: float
    p_contradicted: float
    numbers: dict[str, Any] = field(default_factory=dict)
    weight: float = EVEN_SHARE

    @property
    def p_value(self) -> float:
        if self.weight == EVEN_SHARE:
            return min(1.0, 2 * min(self.p_supported, self.p_contradicted))
        return min(1.0, self.p_supported / self.weight, self.p_contradicted / (1 - self.weight))

    @property
    def direction(self) -> str:
        if self.weight == EVEN_SHARE:
            return "supported" if self.p_supported <= self.p_contradicted else "contradicted"
        return ("supported" if self.p_supported / self.weight
                <= self.p_contradicted / (1 - self.weight) else "contradicted")


@dataclass(frozen=True)
class Trials:
    """What a kind's test reads: the run's trial records and how to count them.
    ``failure_outcomes``: what counts as a failure for the claim (its own ``failures`` where it
    names them); ``timed``: the run's journaled test of timed claims (None: Welch's);
    ``horizon_at``: the design's horizon (None: none journaled)."""

    records: Sequence[Mapping[str, Any]]
    failure_outcomes: Sequence[str]
    per: float
    strata: Mapping[str, Stratum] | None = None
    factors: Mapping[str, Mapping[str, Any]] | None = None
    timed: TimedTest | None = None
    horizon_at: float | None = None


@dataclass(frozen=True)
class ArmCounts:
    failures: int
    n_valid: int
    exposure: float
    outcome_counts: Mapping[str, int]


def arm_counts(records: Sequence[Mapping[str, Any]], arm: str, failure_outcomes: Sequence[str],
               claim: Claim | None = None) -> ArmCounts:
    k = n = 0
    exposure = 0.0
    matching = 0
    for r in evidence_of(records, arm):
        n += 1
        k += int(r["outcome"] in failure_outcomes)
        exposure += float(r.get("exposure") or 0)
        if claim is not None and r["outcome"] == claim.outcome and (
                not claim.detail or claim.detail in str(r.get("detail") or "")):
            matching += 1
    return ArmCounts(k, n, exposure, {"matching": matching})


@lru_cache(maxsize=1 << 16)
def binom_p(k: int, n: int, p: float, alternative: str) -> float:
    """The exact one-sided binomial p-value, what ``binomtest(k, n, p, alternative).pvalue``
    gives (its lower tail is binom.cdf(k), its upper binom.sf(k - 1)), from the binomial's
    distribution functions in scipy.special (``bdtr``: P(X <= k), ``bdtrc``: P(X > k)): the
    same numbers without scipy.stats' distribution machinery's milliseconds per call, which
    matters where the decisive design asks for thousands per trial it allocates. Cached: the
    allocation asks again for the same few counts at each trial it weighs."""
    if n == 0:
        return 1.0
    p = min(max(p, 0.0), 1.0)
    if alternative == "less":  # P(X <= k)
        if k >= n:
            return 1.0
        value = bdtr(k, n, p)
    else:  # P(X >= k) = P(X > k - 1)
        if k <= 0:
            return 1.0
        value = bdtrc(k - 1, n, p)
    return float(min(1.0, value))


def fmt(x: float | None) -> str:
    """A number in a claim's sentence. Not the report's rule (gpurepro.report.numbers.fmt, an
    exponent outside [1e-3, 1e5)): an exponent outside [1e-2, 1e4), because these sentences are
    recorded in result documents, whose committed verdicts read 2.00e+04 where a report table
    reads 2e+04; one rule for both would rewrite them."""
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-2:
        return f"{x:.2e}"
    return f"{x:.3g}"


def count_values(claim: Claim, numbers: Mapping[str, Any]) -> dict[str, Any]:
    """A sentence's numbers from a count of trials or failures: {count} of {n}, and where the
    numbers hold a share of exposure (a stratum's) that share and the exposure it is of."""
    values: dict[str, Any] = {"count": numbers.get("count"), "n": numbers.get("n")}
    if "share" in numbers:
        values.update(share=f"{numbers['share']:.1%}", exposure=fmt(numbers.get("exposure")),
                      exposure_inside=fmt(numbers.get("exposure_inside")),
                      stratum=claim.stratum or "")
    return values


def direction(x: float, y: float, claim_says_lower: bool) -> str | None:
    """supported or contradicted for "x is lower than y" (``claim_says_lower``) or higher; None
    where they are equal (the simulation model's right decision)."""
    if math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-15) or (math.isinf(x) and math.isinf(y)):
        return None
    return "supported" if (x < y) == claim_says_lower else "contradicted"


# The declared determinism's view of an arm (Decider.settle): the share (0.0 or 1.0) of its
# valid trials for which a test holds, once it has enough trials and all agree; else None.
Share = Callable[[str, Callable[[Mapping[str, Any]], bool]], float | None]


class ClaimKind(Protocol):
    """One kind of claim (``Claim.kind``), everything the harness does with it in one place."""

    # The ``Claim.kind`` values it decides (rate comparisons share one object).
    names: tuple[str, ...]
    # About one arm alone: no reference arm (an outcome share, a stratum).
    single_arm: bool
    # Decided on the times timed trials measured, not on failures.
    timed: bool
    # Whether a trial's prior (its chance to end each way) predicts its evidence, so that the
    # decisive design's allocation can weigh a next trial for it.
    allocates: bool
    # Whether its null can only be drawn with a constant hazard (where a failure falls along a
    # trial): under another crash process calibration leaves it out.
    constant_hazard_only: bool

    def fields(self, claim: Claim) -> dict[str, Any]:
        """What the result document's claim record says of the claim beyond its name, kind,
        arm and reference, in the schema's order."""

    def evidence(self, claim: Claim, reference: str, trials: Trials) -> Evidence:
        """The test: one-sided p-values for supported and contradicted from the trials."""

    def on_trials(self, claim: Claim) -> bool:
        """Decided on how whole trials ended (a share of trials): what the declared determinism
        can decide, and what the allocation counts per trial."""

    def on_exposure(self, claim: Claim) -> bool:
        """A rate compared on exposure: what a design's horizon decides with trials as the
        unit instead."""

    def settle(self, claim: Claim, reference: str, failures: Sequence[str],
               share: Share) -> tuple[str, list[str]] | None:
        """The decision the declared determinism makes from the arms' established shares, and
        the arms it rests on (None: not yet, or no direction)."""

    def truth(self, claim: Claim, reference: str | None, models: Mapping[str, ArmModel],
              mode: str, failure_outcomes: Sequence[str]) -> str | None:
        """The simulation model's right decision under ``models`` (None: neither is)."""

    def null_target(self, claim: Claim, baseline: str) -> tuple[str, str | None] | None:
        """The arm null calibration holds for the claim: (arm, the reference it is held to,
        or None: held at the claim's own null); None: none."""

    def margin_edge(self, claim: Claim) -> float | None:
        """The log ratio at the edge of a timed claim's margin (calibration's margin
        scenario); None for a kind without one."""

    def values(self, claim: Claim, numbers: Mapping[str, Any], per: float,
               unit: str) -> dict[str, Any]:
        """The numbers a sentence may name, from the evidence's ``numbers``."""

    def needed(self, claim: Claim, record: Mapping[str, Any], level: float,
               supported_share: float) -> str | None:
        """What an undecided claim would need to be decided, in words (None: not estimated)."""

    def wording(self, claim: Claim, decision: str) -> str:
        """The harness's sentence template for a decision where the case gives none."""
