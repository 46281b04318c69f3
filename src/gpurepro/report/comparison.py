"""What ``gpurepro compare`` finds, typed: the runs side by side, each arm's rates and its later
runs against the first (A), the claims whose decision changed, the verdict's changes, and what
differs between the runs. ``compare.compare`` makes one from result documents; its Markdown,
its paired forest plot and ``--fail-on-change`` read it; ``to_json`` is what ``compare --json``
prints (the same keys, in the same order, as ever). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.jsontypes import JSONObject

# What other modules use; the rest is this module's own.
__all__ = [
    "AgainstA", "ArmRun", "ArmTest", "ChangedClaim", "ClaimChange", "ComparedArm",
    "ComparedClaims", "ComparedRun", "Factor", "RunComparison", "VerdictChange",
]


@dataclass(frozen=True)
class ComparedRun:
    """One document as the comparison lists it (A, B, ... in the order given)."""

    label: str
    path: str
    started_at: str | None
    created_at: str | None
    gpu: str  # names × count, or "none"
    compute_capability: str
    driver: str | None
    jobs: int
    design: str  # compare.design's sentence
    trials: int
    claims: int | None  # None: the document carries no claims
    exploratory_claims: int
    status: str | None  # the verdict's
    owner: str | None

    def to_json(self) -> JSONObject:
        return {"label": self.label, "path": self.path, "started_at": self.started_at,
                "created_at": self.created_at, "gpu": self.gpu,
                "compute_capability": self.compute_capability, "driver": self.driver,
                "jobs": self.jobs, "design": self.design, "trials": self.trials,
                "claims": self.claims, "exploratory_claims": self.exploratory_claims,
                "verdict": {"status": self.status, "owner": self.owner}}


@dataclass(frozen=True)
class ArmRun:
    """One run's arm: its trials, failures, exposure, and the rate and share of failing trials
    with their exact 95% intervals, as the document recorded them."""

    n: int
    n_valid: int
    failures: int
    exposure: float
    rate: float | None
    rate_ci95: tuple[float, float] | None
    proportion: float | None
    proportion_ci95: tuple[float, float] | None
    # Failures with no counter reading (a once-a-second printout): the exposure is no time
    # axis there, so the arm is compared per trial.
    coarse_failures: int
    per_trial: bool  # a case that checks its output: a trial is the unit, not exposure

    def to_json(self) -> JSONObject:
        return {"n": self.n, "n_valid": self.n_valid, "failures": self.failures,
                "exposure": self.exposure, "rate": self.rate,
                "rate_ci95": list(self.rate_ci95) if self.rate_ci95 is not None else None,
                "proportion": self.proportion,
                "proportion_ci95": (list(self.proportion_ci95)
                                    if self.proportion_ci95 is not None else None),
                "coarse_failures": self.coarse_failures,
                **({"per_trial": True} if self.per_trial else {})}


@dataclass(frozen=True)
class ArmTest:
    """A later run's arm against an earlier run's: the test (None where none could be made),
    its estimate (a rate ratio, or an odds ratio for Fisher's test), interval and p-value, and
    why there is none."""

    test: str | None
    estimate: float | None
    ci95: list[float] | None
    p_value: float | None
    note: str | None = None

    @property
    def odds(self) -> bool:
        """Fisher's exact test on failing trials: the estimate is an odds ratio of shares."""
        return str(self.test or "").startswith("odds")

    def to_json(self) -> JSONObject:
        return {**({"test": self.test} if self.test is not None else {}),
                "estimate": self.estimate,
                "ci95": list(self.ci95) if self.ci95 is not None else None,
                "p_value": self.p_value, **({"note": self.note} if self.note is not None else {})}


@dataclass(frozen=True)
class AgainstA:
    """Run ``run``'s arm against A's."""

    run: str
    test: ArmTest

    def to_json(self) -> JSONObject:
        return {"run": self.run, **self.test.to_json()}


@dataclass(frozen=True)
class ComparedArm:
    """One arm in every run (None: not run there), and each later run against A."""

    runs: list[ArmRun | None]
    against_A: list[AgainstA]  # noqa: N815 (the JSON's key)

    def to_json(self) -> JSONObject:
        return {"runs": [r.to_json() if r is not None else None for r in self.runs],
                "against_A": [a.to_json() for a in self.against_A]}


@dataclass(frozen=True)
class ClaimChange:
    """A claim's decision in run ``run`` against A's, and what kind of change that is."""

    run: str
    before: str | None  # A's decision
    after: str | None
    change: str  # flipped, newly decided, changed, new, not in this document, now <family>

    def to_json(self) -> JSONObject:
        return {"run": self.run, "from": self.before, "to": self.after, "change": self.change}


@dataclass(frozen=True)
class ChangedClaim:
    """A claim whose decision or family differs between the runs: per run label, its decision,
    p-value and family (None where the run does not carry it)."""

    claim: str
    decisions: dict[str, str | None]
    p_values: dict[str, float | None]
    families: dict[str, str | None]
    changes: list[ClaimChange]

    @property
    def flipped(self) -> bool:
        return any(c.change == "flipped" for c in self.changes)

    def to_json(self) -> JSONObject:
        return {"claim": self.claim, "decisions": dict(self.decisions),
                "p_values": dict(self.p_values), "families": dict(self.families),
                "changes": [c.to_json() for c in self.changes]}


@dataclass(frozen=True)
class ComparedClaims:
    """The runs without claims (labels), the claims that changed, how many did not, and one
    sentence per flip (a claim decided in A decided otherwise, or not, in a later run)."""

    without_claims: list[str]
    changed: list[ChangedClaim]
    unchanged: int
    flips: list[str]

    def to_json(self) -> JSONObject:
        return {"without_claims": list(self.without_claims),
                "changed": [c.to_json() for c in self.changed], "unchanged": self.unchanged,
                "flips": list(self.flips)}


@dataclass(frozen=True)
class VerdictChange:
    """The verdict's ``field`` (status or owner) in run ``run`` against A's."""

    run: str
    field: str
    before: str | None
    after: str | None

    def to_json(self) -> JSONObject:
        return {"run": self.run, "field": self.field, "from": self.before, "to": self.after}


@dataclass(frozen=True)
class Factor:
    """One recorded fact of the runs (a toolchain, the driver, an option), its value per run."""

    name: str
    values: list[str]

    def to_json(self) -> JSONObject:
        return {"name": self.name, "values": list(self.values)}


@dataclass(frozen=True)
class RunComparison:
    """The comparison of one case's result documents, A first."""

    case: str
    exposure_unit: str
    exposure_per: float
    baseline: str
    runs: list[ComparedRun]
    arms: dict[str, ComparedArm]  # in the order the documents first name them
    claims: ComparedClaims
    verdict_changes: list[VerdictChange]
    differs: list[Factor]  # the facts whose values differ between the runs
    same: list[str]  # the facts the same in every run, by name
    # Timed runs' GPU conditions (gpu_conditions.differences): rows, and a sentence per
    # condition beyond its tolerance (compared only where asked: --any-conditions).
    conditions_compared: list[JSONObject]
    beyond_tolerance: list[str]

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]

    @property
    def flipped(self) -> bool:
        """A decided claim flipped (what ``--fail-on-change`` exits 1 for)."""
        return bool(self.claims.flips)

    def to_json(self) -> JSONObject:
        return {"case": self.case, "exposure": {"unit": self.exposure_unit,
                                                "per": self.exposure_per},
                "baseline": self.baseline, "runs": [r.to_json() for r in self.runs],
                "arms": {name: a.to_json() for name, a in self.arms.items()},
                "claims": self.claims.to_json(),
                "verdict_changes": [v.to_json() for v in self.verdict_changes],
                "environment": {"differs": [f.to_json() for f in self.differs],
                                "same": list(self.same)},
                "gpu_conditions": {"compared": list(self.conditions_compared),
                                   "beyond_tolerance": list(self.beyond_tolerance)},
                "flipped": self.flipped}
