"""Claims decided under one family-wise error rate, over all claims and all looks.

Each claim is a pair of one-sided hypotheses: "supported" (the effect it states) and
"contradicted" (the opposite). The design's ``supported_share`` w splits a claim's level between
them: its p-value is min(p_supported / w, p_contradicted / (1 - w)), and the decision is the
side that gives it. With w = 1/2 (every journal that names no share) that is twice the smaller
one-sided p. A claim tested at level t is then falsely "supported" with probability at most
w t (only where the stated effect is false) and falsely "contradicted" with probability at most
(1 - w) t (only where the opposite is false), so at most t either way, also where both are
false (no effect at all): Holm's argument below holds as it does for w = 1/2. New decisive runs
take w = 0.9 (DIRECTIONAL_SHARE): a claim is supported at nine tenths of its level by the
one-sided test of the direction it states (1.8 times the level a two-sided p gives it), and
contradicted only at a tenth of it.

The design (recorded whole in the result document and the journal, and continued on resume):
- looks: after every ``step`` valid trials of the slowest arm still needed, and a final look
  at the end of the run; ``L`` looks at most (``len(thresholds) + 1``); a fixed-size run has
  one look, at the end;
- alpha split evenly over the looks (Bonferroni: alpha / L each), whatever the timing of the
  looks, so data-dependent stopping cannot raise the error rate;
- within a look, Holm's step-down over the claims still undecided at level alpha / L.
At a look, no false decision can be made unless the smallest p-value among the true null
claims is at most (alpha / L) / m0, so the chance of any false decision over the run is at
most L * (alpha / L) = alpha (STATS.md; checked by simulation in `gpurepro calibrate`).

Tests, with scipy.stats:
- rate claims with exposure: the exact conditional test, k_arm | k_arm + k_ref ~
  Binomial(k, e_arm r_arm / (e_arm r_arm + e_ref r_ref)), at ratio 1 (lower/higher) or at the
  margin's ratios (equivalence: two one-sided tests, both must reject);
- rate claims without exposure: Fisher's exact test on the trials, one-sided;
- outcome claims: the exact binomial test of the share of trials with that outcome, against
  ``share`` from above (more than it) or, with ``bound="below"``, from below (fewer than it);
- rate claims with ``unit="trial"``: Fisher's exact test on the trials whatever the exposure
  (a wrong result is a property of a trial, not an event per unit of exposure);
- concentrated claims: with a constant hazard per unit of exposure, each failure falls inside
  the stratum with probability (exposure inside) / (all exposure), summed along every trial's
  own trajectory; the exact binomial test of the failures that did.

The deterministic shortcut (``Case.deterministic``, journaled in the run's options): where a
case declares that every valid trial of an arm ends the same way, an arm's share of trials
ending as a claim says is 0 or 1, and it is known once the arm has ``trials`` valid trials that
all ended alike. A confirmatory claim on shares of trials (an outcome claim; a lower/higher
claim with ``unit="trial"``) whose arms are so established is decided from them
(``Decider.settle``, before every look and at the end): exactly right if the declaration
holds, so it spends no alpha, and Holm's thresholds at the looks are those of the claims left
(as if it had p = 0). The declaration is checked by every valid trial of every arm of the run:
two that end differently (outcome classes) refute it; the claims it decided are then withdrawn
(their arms run again) and everything is decided by the run's own design. The claim's record,
its sentence and the verdict say that it rests on the declaration. That is a journal from
before the check; a new run journals its declaration checked (gpurepro.analyze.shortcut): two
trials refute it when their signatures differ (what they record, not only their outcome
class), an arm it decided keeps a later check trial (its decision "checked" once it agrees;
until then it counts as open in Holm's number of claims at a look, and at the run's end it is
withdrawn and the design decides the claim), and the chance that it keeps a false decision, were
it false for one arm at a time, is spent from alpha: the design decides at alpha less it.

Timed claims of a run that journaled its timed test (gpurepro.analyze.timing.TimedTest) are
paired by block with their spread floored at the timer's resolution; and its sentences are
worded by ``Wording`` (one-trial decisions, intervals at a stopping look).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..case.model import Case, Claim, Stratum
from ..model.design import DEFAULT_ALPHA, DesignSpec
from ..model.journal import RunHeader
from ..model.outcomes import EVIDENCE
from . import shortcut, timing
from .claim_kinds import kind_of, reference_of
from .claim_kinds.base import EVEN_SHARE, ArmCounts, Evidence, Trials, arm_counts
from .claim_kinds.base import fmt as _f

# What other modules use; the rest is this module's own.
__all__ = [
    "arm_counts", "ArmCounts", "Decider", "decider_for", "DecisiveDesign", "Design", "Evidence",
    "evidence", "sentence", "UNADJUSTED", "Wording"
]

Strata = Mapping[str, Stratum]  # a case's strata by name


DIRECTIONAL_SHARE = 0.9  # new decisive runs: nine tenths to the direction a claim states


def evidence(claim: Claim, reference: str, records: Sequence[Mapping[str, Any]],
             failure_outcomes: Sequence[str], per: float, strata: Strata | None = None,
             factors: Mapping[str, Mapping[str, Any]] | None = None,
             timed: timing.TimedTest | None = None,
             horizon_at: float | None = None) -> Evidence:
    """A claim's evidence from the records. ``timed``: the run's journaled test of timed claims
    (None: Welch's, what journals naming none ran). ``horizon_at``: the design's horizon
    (analyze.horizon), where rate claims on exposure are decided with trials as the unit; None:
    by the exact conditional test of two constant rates (every design that journaled no
    horizon)."""
    # A claim about another kind of failure than the case's (its hangs, say) counts its own.
    return kind_of(claim).evidence(claim, reference, Trials(
        records, claim.failures or failure_outcomes, per, strata, factors, timed, horizon_at))


@dataclass
class Design:
    """The sequential design: alpha, the look thresholds, the most trials per arm."""

    alpha: float = 0.05
    step: int | None = None  # None: a fixed-size run, one look at the end
    max_trials: int | None = None
    # The share of each claim's level its stated direction gets (module docstring); journaled
    # only where it is not the even split that every older journal ran.
    supported_share: float = EVEN_SHARE
    # The exposure every trial of an arm in a rate claim runs to at most, and at which its rate
    # claims are decided with trials as the unit (analyze.horizon); None: the exact conditional
    # test of two constant rates, what every journal naming no horizon ran.
    horizon: float | None = None

    def tests(self) -> str:
        """How a claim's p-value is formed, in the words of the design's ``method``."""
        if self.supported_share == EVEN_SHARE:
            text = "a claim's p-value is twice its smaller one-sided p"
        else:
            w = self.supported_share
            text = (f"a claim's p-value is the smaller of its one-sided p for the direction it "
                    f"states over {w:g} and its one-sided p for the opposite over {1 - w:.3g} "
                    f"(supported_share of its level to the stated direction)")
        if self.horizon is not None:
            text += (f"; rate claims on exposure decided with trials as the unit: whether each "
                     f"trial failed before the horizon of {self.horizon:g}, to which every trial "
                     f"of their arms runs at most (Boschloo's exact test; no crash process assumed)")
        return text

    def _share(self) -> dict[str, Any]:
        out: dict[str, Any] = ({} if self.supported_share == EVEN_SHARE
                               else {"supported_share": self.supported_share})
        if self.horizon is not None:
            out.update(rate_test="trials_to_horizon", horizon=self.horizon)
        return out

    @property
    def thresholds(self) -> list[int]:
        if not self.step or not self.max_trials:
            return []
        return list(range(self.step, self.max_trials, self.step))

    @property
    def looks(self) -> int:
        return len(self.thresholds) + 1

    @property
    def alpha_per_look(self) -> float:
        return self.alpha / self.looks

    def describe(self) -> dict[str, Any]:
        return {"method": ("claims decided under one family-wise error rate: alpha split evenly "
                           "over the looks (Bonferroni), Holm's step-down over the undecided "
                           f"claims at each look; {self.tests()}"),
                "alpha": self.alpha, "step": self.step, "max_trials": self.max_trials,
                "look_thresholds": self.thresholds, "looks": self.looks,
                "alpha_per_look": self.alpha_per_look, **self._share()}

    def level_at(self, looks_taken: int, evidence_trials: int) -> float:
        """The alpha of the next look (each look of this design has the same)."""
        return self.alpha_per_look

    def due(self, decider: Decider, records: Sequence[Mapping[str, Any]]) -> bool:
        """A look is due when the slowest arm still needed reaches the next threshold."""
        thresholds = self.thresholds
        if decider.looks_taken >= len(thresholds):
            return False
        needed = decider.arms_needed()
        if not needed:
            return False
        slowest = min(arm_counts(records, a, decider.failure_outcomes).n_valid for a in needed)
        return slowest >= thresholds[decider.looks_taken]

    @classmethod
    def of(cls, spec: DesignSpec) -> Design:
        """The design a run journaled (a sequential one: until decided, or decisive)."""
        if spec.decisive:
            return DecisiveDesign.of(spec)
        looks = spec.described.get("looks")
        if "look_thresholds" not in spec.described and isinstance(looks, list) and looks:
            # Journals from before claims recorded their looks as a list of trial counts:
            # the same number of looks, so the same alpha per look.
            counts = [int(x) for x in looks if isinstance(x, int | float | str)]
            return cls(alpha=float(spec.alpha), step=counts[0] if len(counts) > 1 else None,
                       max_trials=counts[-1])
        return cls(alpha=float(spec.alpha), step=spec.step, max_trials=spec.max_trials,
                   supported_share=_share_of(spec), horizon=_horizon_of(spec))

    @classmethod
    def from_description(cls, d: Mapping[str, Any]) -> Design:
        """The design a journal or a document describes (``options.stopping``)."""
        return cls.of(DesignSpec.from_json(d))


def _share_of(spec: DesignSpec) -> float:
    return EVEN_SHARE if spec.supported_share is None else float(spec.supported_share)


def _horizon_of(spec: DesignSpec) -> float | None:
    """A journaled design's horizon (None: it named none)."""
    return None if spec.horizon is None else float(spec.horizon)


@dataclass
class DecisiveDesign(Design):
    """The decisive design: looks at trial counts fixed before the run, alpha spent mostly at
    the first, and the trials go where they bring a decision nearest (analyze.allocate).

    Looks are numbered by the run's valid trials: at ``first_look`` (the trial count at which
    the committed rates predict the decisions, gpurepro.analyze.known_rates), then each ``growth``
    times the one before, and at ``total`` (the plan's size). The first gets ``first_share`` of
    alpha; the rest is spent over the later looks by ``spending``:

    - ``"even"`` (what a journal without ``spending`` ran): an equal part of the rest at each;
    - ``"halving"`` (new runs' default): each later look half of what the one before it got
      (the second half of the rest, the third a quarter, ...), the last look what is left,
      which equals the look before it. Decisions come at the first few looks, where halving
      gives more than an even split over up to eight looks.

    Either way the looks' alphas sum to alpha (Bonferroni over looks, Holm within each),
    whatever the looks' timing or the trials' allocation: the schedule and the alphas are fixed
    before the first trial (calibrate checks it). A look is taken when its trial count is
    reached and a confirmatory claim is still open; a run that ends between two looks takes
    the next one then."""

    first_look: int = 1
    total: int = 1
    first_share: float = 0.5
    growth: float = 1.5
    spending: str = "even"

    @property
    def schedule(self) -> list[int]:
        out, j = [], max(1, self.first_look)
        while j < self.total:
            out.append(j)
            j = max(j + 1, math.ceil(j * self.growth))
        return [*out, max(1, self.total)]

    @property
    def looks(self) -> int:
        return len(self.schedule)

    @property
    def alpha_per_look(self) -> float:
        return self.level_at(0, 0)  # the first look's: what a decision needs at best

    def level_at(self, looks_taken: int, evidence_trials: int) -> float:
        if looks_taken == 0 or self.looks == 1:
            return self.alpha * (self.first_share if self.looks > 1 else 1.0)
        rest = self.alpha * (1 - self.first_share)
        if self.spending == "halving":
            later = self.looks - 1  # looks 1 .. later; the last takes what the others left
            i = min(looks_taken, later)
            return rest * 0.5 ** (min(i, later - 1) if later > 1 else 0)
        return rest / (self.looks - 1)

    @property
    def alphas(self) -> list[float]:
        """Each look's alpha, in the order of the schedule (they sum to alpha)."""
        return [self.level_at(i, 0) for i in range(self.looks)]

    def due(self, decider: Decider, records: Sequence[Mapping[str, Any]]) -> bool:
        schedule = self.schedule
        if decider.looks_taken >= len(schedule) or not decider.arms_needed():
            return False
        j = sum(1 for r in records if r.get("outcome") in EVIDENCE)
        return j >= schedule[decider.looks_taken]

    def describe(self) -> dict[str, Any]:
        spent = ("the rest split evenly over the others" if self.spending == "even" else
                 "half of the rest at the second, each later look half of the one before it, "
                 "the last what is left (alpha_at_looks)")
        return {"design": "decisive",
                "method": ("claims decided under one family-wise error rate: looks at the trial "
                           "counts look_at (the first where the committed rates predict the "
                           "decisions, then each growth times the last, and the plan's end), "
                           f"first_share of alpha at the first, {spent} "
                           "(Bonferroni over looks), Holm's step-down over the undecided "
                           "claims at each look; trials allocated where they bring a decision "
                           f"nearest; {self.tests()}"),
                "alpha": self.alpha, "max_trials": self.max_trials, "first_look": self.first_look,
                "growth": self.growth, "first_share": self.first_share, "total": self.total,
                "look_at": self.schedule, "looks": self.looks,
                "alpha_first_look": self.level_at(0, 0),
                "alpha_later_looks": self.level_at(1, 0) if self.looks > 1 else None,
                # The even split, the only one before spending was journaled, journals no name,
                # so the journals that ran it describe it as they did.
                **({} if self.spending == "even" else {
                    "spending": self.spending, "alpha_at_looks": self.alphas}),
                **self._share()}

    @classmethod
    def of(cls, spec: DesignSpec) -> DecisiveDesign:
        if spec.first_look is None or spec.total is None:
            raise ValueError("a decisive design names its first look and its total "
                             "(first_look, total)")
        return cls(alpha=float(spec.alpha), step=None, max_trials=spec.max_trials,
                   first_look=spec.first_look, total=spec.total,
                   first_share=0.5 if spec.first_share is None else float(spec.first_share),
                   growth=1.5 if spec.growth is None else float(spec.growth),
                   spending=spec.spending or "even",
                   supported_share=_share_of(spec), horizon=_horizon_of(spec))

    @classmethod
    def from_description(cls, d: Mapping[str, Any]) -> DecisiveDesign:
        return cls.of(DesignSpec.from_json(d))


class Decider:
    """Takes the looks of one run and decides its claims; journaled, and resumable.

    The claims whose arms are all in the run's plan form two families, fixed before the first
    trial (gpurepro.analyze.decidability): the confirmatory one (``claims``), decided under the run's
    family-wise alpha at its looks, and the exploratory one (``exploratory``: claims the plan is
    unlikely to decide), decided once, at the end, under an alpha of its own. An exploratory
    claim never keeps an arm running and never makes the confirmatory thresholds stricter; its
    sentence is labelled exploratory, and no owner may rest on it."""

    def __init__(self, claims: Sequence[Claim], baseline: str, design: Design,
                 failure_outcomes: Sequence[str], per: float, arms_in_plan: Sequence[str],
                 strata: Strata | None = None,
                 factors: Mapping[str, Mapping[str, Any]] | None = None,
                 exploratory: Sequence[str] = (),
                 deterministic: Mapping[str, Any] | None = None,
                 timed: timing.TimedTest | None = None):
        in_plan = [c for c in claims
                   if c.arm in arms_in_plan and reference_of(c, baseline) in (None, *arms_in_plan)]
        self.claims = [c for c in in_plan if c.name not in exploratory]
        self.exploratory = [c for c in in_plan if c.name in exploratory]
        self.strata = strata or {}
        self.factors = factors or {}
        # The timed test the run journaled (None: Welch's on the arms' trial times).
        self.timed = timed
        self.baseline = baseline
        self.design = design
        self.failure_outcomes = tuple(failure_outcomes)
        self.per = per
        self.looks_taken = 0
        self.last_look_at = 0  # the valid-trial count of the last look (the decisive design)
        self.decisions: dict[str, dict[str, Any]] = {}
        # The case's declaration of deterministic outcomes as the run journaled it (reason,
        # trials), and once an arm's trials disagreed, how (``refuted``). Journaled checked
        # (gpurepro.analyze.shortcut, version 2 on): trials agree by their signature, an arm
        # the shortcut decided keeps its check trials, and the shortcut spends its bound.
        self.deterministic = dict(deterministic) if deterministic else None
        self.refuted: dict[str, Any] | None = None
        self.checked = shortcut.checked(self.deterministic)
        self._signatures: dict[tuple[Any, ...], shortcut.Signature] = {}
        # The decisions a checked shortcut made that the run's end found still waiting for
        # their check trials: withdrawn, and decided by the design (``final``).
        self.unchecked: list[str] = []

    def reference(self, claim: Claim) -> str | None:
        return reference_of(claim, self.baseline)

    def arms_needed(self) -> set[str]:
        """The arms of the claims not yet decided (claim arms and their references), and those
        of decisions of the checked shortcut still waiting for their check trials."""
        needed: set[str] = set()
        for c in self.claims:
            if c.name not in self.decisions:
                needed.add(c.arm)
                ref = self.reference(c)
                if ref:
                    needed.add(ref)
        for name in self.pending():
            needed |= set(self.decisions[name]["deterministic"]["trials"])
        return needed

    def pending(self) -> list[str]:
        """The claims the checked shortcut decided whose arms still owe their check trials
        (none where the declaration is not checked)."""
        if not self.checked:
            return []
        return [n for n, d in self.decisions.items()
                if (d.get("deterministic") or {}).get("checked") is False]

    def look_due(self, records: Sequence[Mapping[str, Any]]) -> bool:
        return self.design.due(self, records)

    def next_level(self, records: Sequence[Mapping[str, Any]]) -> float:
        """The alpha of the look that would be taken now."""
        j = sum(1 for r in records if r.get("outcome") in EVIDENCE)
        return self.design.level_at(self.looks_taken, j)

    def evidence(self, claim: Claim, records: Sequence[Mapping[str, Any]]) -> Evidence:
        ev = evidence(claim, self.reference(claim) or "", records, self.failure_outcomes,
                      self.per, self.strata, self.factors, self.timed,
                      horizon_at=self.design.horizon)
        ev.weight = self.design.supported_share
        return ev

    # ---------------------------------------------------------- the deterministic shortcut

    def _ends(self, records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
        by_arm: dict[str, list[Mapping[str, Any]]] = {}
        for r in records:
            if r.get("outcome") in EVIDENCE:
                by_arm.setdefault(str(r.get("arm")), []).append(r)
        return by_arm

    def shortcut_applies(self, claim: Claim) -> bool:
        """Whether the declared determinism can decide ``claim``: a claim on shares of whole
        trials (an outcome claim, a lower/higher claim with unit="trial")."""
        return kind_of(claim).on_trials(claim)

    def _on(self) -> bool:
        """Whether the declaration may decide now: declared, not refuted, and (checked) usable."""
        return bool(self.deterministic) and not self.refuted and shortcut.usable(self.deterministic)

    def _agreeing(self) -> int:
        """The valid trials of an arm a decision of the shortcut stands on: its trials, and
        where checked its check trials after them."""
        assert self.deterministic is not None
        check = int(self.deterministic.get("check", 0)) if self.checked else 0
        return int(self.deterministic["trials"]) + check

    def establishing(self, records: Sequence[Mapping[str, Any]]) -> set[str]:
        """The arms whose next trials establish an outcome the declared determinism would decide
        an open confirmatory claim from: fewer than its trials valid so far (none where nothing
        is declared, or the declaration was refuted); where checked, also the arms of its
        decisions that still owe their check trials."""
        if not self._on():
            return set()
        assert self.deterministic is not None
        need = int(self.deterministic["trials"])
        ends = self._ends(records)
        out: set[str] = set()
        for c in self.claims:
            if c.name in self.decisions or not self.shortcut_applies(c):
                continue
            out |= {a for a in (c.arm, self.reference(c)) if a and len(ends.get(a, ())) < need}
        full = self._agreeing()
        for name in self.pending():
            out |= {a for a in self.decisions[name]["deterministic"]["trials"]
                    if len(ends.get(a, ())) < full}
        return out

    def settle(self, records: Sequence[Mapping[str, Any]]) -> list[str]:
        """What the declared determinism decides now (the newly decided claims): first the
        check that no arm's valid trials ended differently (else the declaration is refuted,
        and the claims it decided are withdrawn), then every open confirmatory claim it applies
        to whose arms have their trials, all alike."""
        if not self._on():
            return []
        ends = self._ends(records)
        for arm, rs in ends.items():
            seen = sorted({str(r["outcome"]) for r in rs})
            split = shortcut.disagreement(arm, rs, self._signature) if self.checked else None
            if len(seen) > 1 or split is not None:
                withdrawn = [n for n, d in self.decisions.items() if d.get("deterministic")]
                for n in withdrawn:
                    del self.decisions[n]
                self.refuted = {"arm": arm, "ended": {o: sum(1 for r in rs if r["outcome"] == o)
                                                      for o in seen},
                                "at": sum(len(x) for x in ends.values()), "withdrawn": withdrawn,
                                **({"differ": split.to_json()} if split is not None else {})}
                return []
        decided = []
        for c in self.claims:
            if c.name not in self.decisions and self.shortcut_applies(c):
                rec = self._deterministic_decision(c, records, ends)
                if rec is not None:
                    self.decisions[c.name] = rec
                    decided.append(c.name)
        full = self._agreeing() if self.checked else 0
        for name in self.pending():  # their check trials in: the decision stands
            arms = self.decisions[name]["deterministic"]["trials"]
            if all(len(ends.get(a, ())) >= full for a in arms):
                claim = next(c for c in self.claims if c.name == name)
                rec = self._deterministic_decision(claim, records, ends)
                assert rec is not None  # every trial agrees: the same decision
                self.decisions[name] = rec
        return decided

    def _signature(self, record: Mapping[str, Any]) -> shortcut.Signature:
        """A trial's signature, computed once per trial of the plan (settle reads every trial
        each time, and the allocation hands it copies)."""
        index = record.get("index")
        if index is None:
            return shortcut.signature(record)
        key = (index, record.get("arm"), record.get("outcome"), record.get("exposure"))
        kept = self._signatures.get(key)
        if kept is None:
            kept = self._signatures[key] = shortcut.signature(record)
        return kept

    def drop_unchecked(self) -> list[str]:
        """At the run's end (or its stop): the checked shortcut's decisions still waiting for
        their check trials are withdrawn (their bound assumes the check), and the design
        decides those claims."""
        dropped = self.pending()
        for name in dropped:
            del self.decisions[name]
        self.unchecked += dropped
        return dropped

    def _deterministic_decision(self, claim: Claim, records: Sequence[Mapping[str, Any]],
                                ends: Mapping[str, Sequence[Mapping[str, Any]]]
                                ) -> dict[str, Any] | None:
        """The claim's decision where its arms' trials establish it (None: not yet, or no
        direction: the shares it compares are equal)."""
        assert self.deterministic is not None
        need = int(self.deterministic["trials"])
        failures = claim.failures or self.failure_outcomes

        def share(arm: str, counts: Any) -> float | None:
            rs = ends.get(arm, ())
            if len(rs) < need:
                return None
            hits = {bool(counts(r)) for r in rs}
            return None if len(hits) > 1 else float(hits.pop())

        settled = kind_of(claim).settle(claim, self.reference(claim) or "", failures, share)
        if settled is None:
            return None
        decision, arms = settled
        ev = self.evidence(claim, records)
        if self.checked:
            return {**self._record(claim, ev, decision, None, records),
                    "test": ("the case's declared determinism, checked (every valid trial of an "
                             "arm has the same signature)"),
                    "deterministic": {"reason": self.deterministic["reason"],
                                      "trials": {a: len(ends[a]) for a in arms},
                                      "ended": {a: str(ends[a][0]["outcome"]) for a in arms},
                                      "signature": {a: shortcut.fingerprint(ends[a][0])
                                                    for a in arms},
                                      "checked": all(len(ends[a]) >= self._agreeing()
                                                     for a in arms),
                                      "bound": float(self.deterministic["bound"]),
                                      "test": ev.test}}
        return {**self._record(claim, ev, decision, None, records),
                "test": "the case's declared determinism (every valid trial of an arm ends alike)",
                "deterministic": {"reason": self.deterministic["reason"],
                                  "trials": {a: len(ends[a]) for a in arms},
                                  "ended": {a: str(ends[a][0]["outcome"]) for a in arms},
                                  "test": ev.test}}

    def look(self, records: Sequence[Mapping[str, Any]], final: bool = False) -> list[str]:
        """Take one look: Holm over the undecided claims at alpha / L. Returns the newly decided."""
        if self.looks_taken >= self.design.looks:
            return []
        level = self.next_level(records)
        self.looks_taken += 1
        self.last_look_at = sum(1 for r in records if r.get("outcome") in EVIDENCE)
        open_claims = [c for c in self.claims if c.name not in self.decisions]
        scored = sorted(((self.evidence(c, records), c)
                         for c in open_claims), key=lambda ec: ec[0].p_value)
        decided = []
        # A decision of the checked shortcut still waiting for its check counts as open here:
        # were the check to withdraw it, no threshold was looser for it (analyze.shortcut).
        m = len(scored) + len(self.pending())
        for rank, (ev, c) in enumerate(scored):
            threshold = level / (m - rank)
            if ev.p_value > threshold:
                break
            self.decisions[c.name] = self._record(c, ev, ev.direction, threshold, records)
            decided.append(c.name)
        if final:
            for ev, c in scored:
                if c.name not in self.decisions:
                    self.decisions[c.name] = self._record(c, ev, "not_decided", None, records)
        return decided

    def _record(self, claim: Claim, ev: Evidence, decision: str, threshold: float | None,
                records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {"decision": decision, "look": self.looks_taken, "test": ev.test,
                "p_value": ev.p_value, "p_supported": ev.p_supported,
                "p_contradicted": ev.p_contradicted, "threshold": threshold,
                "numbers": ev.numbers}

    def final(self, records: Sequence[Mapping[str, Any]]) -> None:
        """The last look (at the end of the run, or when recording a fixed-size run), and the
        exploratory family's one look; before it, what the declared determinism decides (a
        checked decision still waiting for its check trials is withdrawn)."""
        self.settle(records)
        self.drop_unchecked()
        if isinstance(self.design, DecisiveDesign):
            # A run that ended between two scheduled looks (every arm done or at its maximum)
            # takes the next one now, at that look's alpha: it was not spent before.
            j = sum(1 for r in records if r.get("outcome") in EVIDENCE)
            if self.looks_taken < self.design.looks and j > self.last_look_at:
                self.look(records, final=True)
            for c in self.claims:
                if c.name not in self.decisions:
                    ev = self.evidence(c, records)
                    self.decisions[c.name] = self._record(c, ev, "not_decided", None, records)
        elif self.looks_taken < self.design.looks:
            self.looks_taken = self.design.looks - 1
            self.look(records, final=True)
        else:
            for c in self.claims:  # every look spent: what is left stays undecided
                if c.name not in self.decisions:
                    ev = self.evidence(c, records)
                    self.decisions[c.name] = self._record(c, ev, "not_decided", None, records)
        self._decide_exploratory(records)

    def stop_open(self, records: Sequence[Mapping[str, Any]]) -> None:
        """A stopped run: every claim not decided at a look the run took stays open (not
        decided, ``open``); the exploratory family's one look, at the end, was not taken. A
        checked decision of the shortcut still waiting for its check trials is open too."""
        self.drop_unchecked()
        for c in [*self.claims, *self.exploratory]:
            if c.name not in self.decisions:
                ev = self.evidence(c, records)
                self.decisions[c.name] = {**self._record(c, ev, "not_decided", None, records),
                                          "open": True,
                                          **({"family": "exploratory"} if c in self.exploratory
                                             else {})}

    def _decide_exploratory(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Holm's step-down over the exploratory claims at the design's alpha, once."""
        open_claims = [c for c in self.exploratory if c.name not in self.decisions]
        scored = sorted(((self.evidence(c, records), c) for c in open_claims),
                        key=lambda ec: ec[0].p_value)
        stopped = False
        for rank, (ev, c) in enumerate(scored):
            threshold = self.design.alpha / (len(scored) - rank)
            stopped = stopped or ev.p_value > threshold
            decision = "not_decided" if stopped else ev.direction
            self.decisions[c.name] = {**self._record(c, ev, decision, None if stopped else threshold,
                                                     records), "family": "exploratory"}

    def to_json(self) -> dict[str, Any]:
        out = {**self.design.describe(), "family": [c.name for c in self.claims],
               "looks_taken": self.looks_taken, "decisions": dict(self.decisions)}
        if isinstance(self.design, DecisiveDesign):
            out["last_look_at"] = self.last_look_at
        if self.exploratory:
            out["exploratory"] = [c.name for c in self.exploratory]
        if self.deterministic:
            out["deterministic"] = {**self.deterministic, "refuted": self.refuted,
                                    **({"unchecked": list(self.unchecked)}
                                       if self.checked and self.unchecked else {})}
        return out

    def restore(self, journaled: Mapping[str, Any] | None) -> None:
        if journaled and "looks_taken" in journaled:
            self.looks_taken = int(journaled["looks_taken"])
            self.last_look_at = int(journaled.get("last_look_at") or 0)
            self.decisions.update(journaled.get("decisions") or {})
            if self.deterministic:
                self.refuted = (journaled.get("deterministic") or {}).get("refuted")
                self.unchecked = list((journaled.get("deterministic") or {}).get("unchecked") or [])


# ---------------------------------------------------------------- sentences


@dataclass(frozen=True)
class Wording:
    """How a run's claim sentences are worded, by what its journal holds (``options.analysis``,
    gpurepro.model.design.ANALYSIS_VERSION; a journal without it is worded as it was)."""

    # A decision that rests on one valid trial of an arm says so.
    one_trial: bool = False
    # The intervals of a sequential design's claims (the decisive design, --until-decided) are
    # computed where the run stopped, a point its data chose: they are labelled as not adjusted
    # for that look (the decisions are: alpha is split over the looks; the intervals are not).
    stopping_look: bool = False

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> Wording:
        """The wording of a run from its journaled options."""
        if int(options.get("analysis") or 1) < 2:
            return cls()
        return cls(one_trial=True, stopping_look=bool(options.get("stopping")))


UNADJUSTED = "not adjusted for the stopping look"


def _one_trial_arms(claim: Claim, reference: str | None, nums: Mapping[str, Any]) -> list[str]:
    """The arms of a claim's numbers with exactly one valid trial."""
    if "arm" in nums:
        return [name for name, c in ((claim.arm, nums["arm"]), (reference, nums["reference"]))
                if name and c.get("n") == 1]
    if "times" in nums:
        return [name for name, key in ((claim.arm, "arm"), (reference, "reference"))
                if name and nums["times"][key].get("n") == 1]
    return [claim.arm] if nums.get("n") == 1 else []


def sentence(claim: Claim, reference: str | None, record: Mapping[str, Any], per: float,
             unit: str, level: float, supported_share: float = EVEN_SHARE,
             wording: Wording = Wording()) -> str:
    """The verdict's sentence for a claim's decision: the case's wording, or the harness's."""
    nums = record.get("numbers") or {}
    values: dict[str, Any] = {"arm": claim.arm, "reference": reference or "", "p": _f(record["p_value"]),
                              "ratio_name": "rate ratio"}
    kind = kind_of(claim)
    values.update(kind.values(claim, nums, per, unit))
    needed = (kind.needed(claim, record, level, supported_share)
              if record["decision"] == "not_decided" else None)
    no_trials = [x for x, c in (("arm", nums.get("arm")), ("reference", nums.get("reference")))
                 if c is not None and c["n"] == 0] or (["arm"] if nums.get("n") == 0 else [])
    if no_trials:
        values["needed"] = (f"valid trials of {' and '.join(values[x] for x in no_trials)}, "
                            f"which had none in this run")
    elif needed:
        values["needed"] = needed
    else:
        values["needed"] = "far more exposure than this run had"
    if wording.stopping_look:
        for key in ("ratio_ci", "share_ci"):
            if key in values:
                values[key] = f"{values[key]}, {UNADJUSTED}"
    template = getattr(claim, record["decision"]) or kind.wording(claim, record["decision"])
    text = template.format_map(_Missing(values))
    # An exploratory claim is decided once, at the end, outside the design's looks.
    when = ("" if record["decision"] == "not_decided" else ", exploratory, decided at the end"
            if record.get("family") == "exploratory" else f", decided at look {record['look']}")
    single = (_one_trial_arms(claim, reference, nums)
              if wording.one_trial and record["decision"] != "not_decided" else [])
    alone = (f"; it rests on one valid trial of {' and of '.join(single)}" if single else "")
    det = record.get("deterministic")
    if det and record["decision"] != "not_decided" and "checked" in det:
        ended = "; ".join(f"{det['trials'][a]} of {det['trials'][a]} valid trials of {a} ended as "
                          f"{det['ended'][a]}, every one with the same signature"
                          for a in det["trials"])
        return (f"{text} [claim {claim.name}, decided by the case's declaration that its "
                f"outcomes are deterministic ({det['reason']}), checked: {ended}, the last a "
                f"later check; were the declaration false for one arm, its chance of a false "
                f"decision is at most {_f(det['bound'])}, spent from the run's alpha; "
                f"{det['test']} alone: p = {_f(record['p_value'])}]")
    if det and record["decision"] != "not_decided":
        ended = "; ".join(f"{det['trials'][a]} of {det['trials'][a]} valid trials of {a} ended as "
                          f"{det['ended'][a]}" for a in det["trials"])
        return (f"{text} [claim {claim.name}, decided by the case's declaration that its "
                f"outcomes are deterministic ({det['reason']}): {ended}; {det['test']} alone: "
                f"p = {_f(record['p_value'])}]")
    return (f"{text} [claim {claim.name}{when}: {record['test']}, p = {_f(record['p_value'])}"
            f"{alone}]")


class _Missing(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "–"


def decider_for(case: Case, run: RunHeader) -> Decider:
    """The decider of a run's claims: the design its journal recorded (one look at the default
    alpha for a fixed-size run), continued from the decisions it journaled."""
    spec = run.design
    declared = run.options.get("deterministic")
    # A fixed-size run's one look: the default alpha, less what a checked declaration of
    # deterministic outcomes spends (a sequential design journaled its own alpha so). A design
    # never planned, on a device that could not run the case, has no trial to look at: one
    # look at its alpha decides nothing.
    unplanned = not spec.planned and not run.device.get("supported", True)
    design = (Design(alpha=float(spec.alpha)) if unplanned else
              Design.of(spec) if spec.sequential else
              Design(alpha=shortcut.design_alpha(DEFAULT_ALPHA, declared)))
    families = run.options.get("families") or {}
    decider = Decider(case.claims, case.baseline, design, case.failure_outcomes, case.exposure.per,
                      list(run.plan.arms), case.strata, case.resolved_arms(),
                      exploratory=families.get("exploratory") or (),
                      deterministic=declared,
                      timed=timing.TimedTest.from_json(run.options.get("timing")))
    journaled = run.fields.get("stopping_result")
    decider.restore(journaled if isinstance(journaled, Mapping) else None)
    return decider
