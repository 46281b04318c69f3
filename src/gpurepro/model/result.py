"""A result document, typed: ``Result`` for the whole of it (what the report reads), and the
read-only views a case's verdict reads (``Analysis``).

``Analysis.of(doc)`` builds the views from the document's own fields (the per-arm ``summary``,
the decided ``claims``, ``crash_sites``, ``device``, the build's ``analyses`` and the
``trials``), so a verdict sees exactly what the document records, by name:
``analysis.arms["baseline"].failures``, ``analysis.decision("one-thread")``. ``Result.of(doc)``
adds the case, the plan and design, and the verdict, and keeps the document as recorded
(``Result.of(doc).to_json() == doc``). The views are frozen; the statistics in them are the
harness's (stats.py, claims.py), never a case's. Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from . import phases
from .builds import Runtime, Toolchain
from .design import DesignSpec
from .environment import Cluster, Environment
from .jsontypes import JSONObject
from .plan import Plan

# What other modules use; the rest is this module's own.
__all__ = [
    "Analysis", "ArmSummary", "Artifact", "as_result", "CaseFacts", "ClaimDecision", "ClaimFamilies",
    "Comparison", "Completion", "CrashSite", "Deeper", "Deterministic", "Device", "Estimate", "Exposure",
    "GpuCounts", "OutputCheck", "PlanOptions", "Probe", "Reported", "Result", "Resume", "ResumeDevice",
    "Survival", "Trial", "TrialCheck", "Verdict"
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value)) if value else _EMPTY


def _pair(value: Sequence[Any] | None) -> tuple[Any, Any] | None:
    return None if value is None else (value[0], value[1])


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% interval (``ci95`` None where there is no estimate)."""

    estimate: float | None
    ci95: tuple[float, float] | None
    method: str | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Estimate:
        d = d or {}
        return cls(d.get("estimate"), _pair(d.get("ci95")), d.get("method"))


@dataclass(frozen=True)
class Exposure:
    """An arm's exposure (the case's counter, summed over valid trials) and its failure rate
    per ``per`` units."""

    total: float
    unit: str | None
    per: float | None
    rate: Estimate
    min_survivor: float | None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Exposure:
        d = d or {}
        return cls(d.get("total", 0), d.get("unit"), d.get("per"), Estimate.of(d.get("rate")),
                   d.get("min_survivor"))


@dataclass(frozen=True)
class Survival:
    """A Kaplan-Meier median (None: not reached, or not computed, as ``method`` says)."""

    median: float | None
    median_ci95: tuple[float | None, float | None] | None
    method: str | None
    # The Kaplan-Meier curve's steps, (exposure, share not yet failed).
    curve: tuple[tuple[float, float], ...] = ()

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Survival | None:
        if d is None:
            return None  # no valid trial
        return cls(d.get("median"), _pair(d.get("median_ci95")), d.get("median_method"),
                   tuple((x, y) for x, y in d.get("curve") or ()))


@dataclass(frozen=True)
class TimeToFailure:
    """Kaplan-Meier medians of exposure and of seconds to failure (None: no valid trial)."""

    exposure: Survival | None
    seconds: Survival | None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> TimeToFailure:
        d = d or {}
        return cls(Survival.of(d.get("exposure")), Survival.of(d.get("seconds")))


@dataclass(frozen=True)
class ArmSummary:
    """One arm's counts and statistics (the document's ``summary/<arm>``)."""

    name: str
    factors: Mapping[str, Any]
    n: int
    n_valid: int
    failures: int
    outcomes: Mapping[str, int]
    proportion: Estimate
    exposure: Exposure
    time_to_failure: TimeToFailure
    errors: Mapping[str, int]  # CUDA error name -> trials
    observations: Mapping[str, Mapping[str, int]]  # observation -> "value" or "key:value" -> trials

    @property
    def valid(self) -> bool:
        return self.n_valid > 0

    @classmethod
    def of(cls, name: str, d: Mapping[str, Any]) -> ArmSummary:
        return cls(name=name, factors=_frozen(d.get("factors")), n=int(d.get("n", 0)),
                   n_valid=int(d.get("n_valid", 0)), failures=int(d.get("failures", 0)),
                   outcomes=_frozen(d.get("outcomes")), proportion=Estimate.of(d.get("proportion")),
                   exposure=Exposure.of(d.get("exposure")),
                   time_to_failure=TimeToFailure.of(d.get("time_to_failure")),
                   errors=_frozen(d.get("errors")),
                   observations=MappingProxyType({k: _frozen(v) for k, v in
                                                  (d.get("observations") or {}).items()}))


@dataclass(frozen=True)
class ClaimDecision:
    """A claim of the run and the harness's decision on it (the document's ``claims``)."""

    name: str
    decision: str  # one of gpurepro.model.outcomes.DECISIONS
    sentence: str
    kind: str | None = None
    arm: str | None = None
    reference: str | None = None
    look: int | None = None
    test: str | None = None
    p_value: float | None = None
    threshold: float | None = None
    family: str | None = None  # "exploratory": outside the run's family-wise error rate
    alpha: float | None = None  # the family-wise level the claim was decided under
    looks: int | None = None  # the design's looks
    margin: float | None = None  # a ratio claim's margin ("the same within ×margin")
    outcome: str | None = None  # an outcome claim's outcome, its detail, share and bound
    detail: str | None = None
    share: float | None = None
    bound: str | None = None
    stratum: str | None = None  # the stratum a claim is decided in
    deterministic: bool = False  # decided from the case's declared determinism
    # The evidence a claim was decided on (a timed claim's ratio and interval, ...), as the
    # decider wrote it: open-ended, its keys the claim kind's.
    numbers: JSONObject = field(default_factory=dict, compare=False)

    @property
    def decided(self) -> bool:
        return self.decision in ("supported", "contradicted")

    @property
    def confirmatory_decision(self) -> str:
        """The decision, where the run's family-wise error rate covers it; else not_decided."""
        return "not_decided" if self.family == "exploratory" else self.decision

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> ClaimDecision:
        return cls(name=d["name"], decision=d["decision"], sentence=d.get("sentence", ""),
                   kind=d.get("kind"), arm=d.get("arm"), reference=d.get("reference"),
                   look=d.get("look"), test=d.get("test"), p_value=d.get("p_value"),
                   threshold=d.get("threshold"), family=d.get("family"), alpha=d.get("alpha"),
                   looks=d.get("looks"), margin=d.get("margin"), outcome=d.get("outcome"),
                   detail=d.get("detail"), share=d.get("share"), bound=d.get("bound"),
                   stratum=d.get("stratum"), deterministic=bool(d.get("deterministic")),
                   numbers=dict(d.get("numbers") or {}))


@dataclass(frozen=True)
class Frame:
    module: str | None
    offset: str | None


@dataclass(frozen=True)
class CrashSite:
    """Crashed trials with one signature: the faulting PC (module + offset) and the first frames."""

    signature: str
    signal: str | None
    pc_module: str | None  # None: the trial died without a crash record
    pc_offset: str | None
    code_name: str | None
    fault_module: str | None  # the mapping the faulting address lies in
    frames: tuple[Frame, ...]
    count: int
    arms: Mapping[str, int]
    pc_perms: str | None = None  # the faulting PC's mapping's permissions

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> CrashSite:
        return cls(signature=d.get("signature", ""), signal=d.get("signal"),
                   pc_module=d.get("pc_module"), pc_offset=d.get("pc_offset"),
                   code_name=d.get("code_name"), fault_module=(d.get("fault_in") or {}).get("module"),
                   frames=tuple(Frame(f.get("module"), f.get("offset")) for f in d.get("frames") or []),
                   count=int(d.get("count", 0)), arms=_frozen(d.get("arms")),
                   pc_perms=d.get("pc_perms"))


@dataclass(frozen=True)
class Device:
    """The device the run's gate found (the document's ``device``)."""

    name: str | None = None
    compute_capability: str | None = None
    target: str | None = None
    supported: bool | None = None
    reason: str | None = None
    uuid: str | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Device:
        d = d or {}
        return cls(d.get("name"), d.get("compute_capability"), d.get("target"), d.get("supported"),
                   d.get("reason"), d.get("uuid"))


@dataclass(frozen=True)
class TrialCheck:
    """A trial's output checked against the host's reference: the elements compared, how many
    differ and the first few ``[index, got, expected]``, and how they were compared."""

    n: int | None
    mismatches: int | None
    first: tuple[Any, ...]
    kind: str | None

    @classmethod
    def of(cls, d: object) -> TrialCheck | None:
        if not isinstance(d, Mapping):
            return None  # the trial checked nothing
        return cls(d.get("n"), d.get("mismatches"), tuple(d.get("first") or ()), d.get("kind"))


@dataclass(frozen=True)
class OutputCheck:
    """How a case compares its drivers' output with the reference (``case.check``): exactly, or
    within a relative and an absolute tolerance."""

    kind: str | None
    rel: float | None
    abs: float | None
    declared: bool  # False: the case declares a check with nothing in it

    @classmethod
    def of(cls, d: object) -> OutputCheck | None:
        if not isinstance(d, Mapping):
            return None  # the case checks no output: its exposure is the unit
        return cls(d.get("kind"), d.get("rel"), d.get("abs"), bool(d))


@dataclass(frozen=True)
class Trial:
    """One classified trial, with the fields a verdict reads; ``record`` is the whole record."""

    arm: str
    outcome: str
    detail: str | None
    exposure: float | None
    counters: Mapping[str, Any]
    record: Mapping[str, Any] = field(repr=False, compare=False)
    call: str | None = None  # the driver call a cuda_error was returned by
    check: TrialCheck | None = None  # the trial's output against the reference, where checked
    command: tuple[Any, ...] = ()  # what ran: the driver, or the interpreter and its script
    index: int | None = None  # its place in the plan
    started_at: str | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Trial:
        return cls(arm=d.get("arm", ""), outcome=d.get("outcome", ""), detail=d.get("detail"),
                   exposure=d.get("exposure"), counters=_frozen(d.get("counters")), record=d,
                   call=d.get("call"), check=TrialCheck.of(d.get("check")), command=tuple(d.get("command") or ()),
                   index=d.get("index"), started_at=d.get("started_at"))


@dataclass(frozen=True)
class Analysis:
    case: str
    baseline: str
    device: Device
    arms: Mapping[str, ArmSummary]
    claims: Mapping[str, ClaimDecision]
    crash_sites: tuple[CrashSite, ...]
    # The case's analyses of its built artifacts (name -> what the case's function returned).
    analyses: Mapping[str, Mapping[str, Any]]
    trials: tuple[Trial, ...]

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> Analysis:
        """The views of a result document (the fields above; the verdict not yet among them)."""
        return cls(case=doc["case"]["name"], baseline=doc["case"]["baseline"],
                   device=Device.of(doc.get("device")),
                   arms=MappingProxyType({a: ArmSummary.of(a, s) for a, s in doc["summary"].items()}),
                   claims=MappingProxyType({c["name"]: ClaimDecision.of(c)
                                            for c in doc.get("claims") or []}),
                   crash_sites=tuple(CrashSite.of(s) for s in doc.get("crash_sites") or []),
                   analyses=MappingProxyType(dict(doc.get("analyses") or {})),
                   trials=tuple(Trial.of(t) for t in doc.get("trials") or []))

    def decision(self, name: str) -> str | None:
        """A claim's decision in this run (None: the claim is not in this run's family)."""
        claim = self.claims.get(name)
        return claim.decision if claim else None

    def supported(self, *names: str) -> bool:
        """Every named claim is in this run and supported."""
        return all(self.decision(n) == "supported" for n in names)

    def undecided(self) -> list[str]:
        """The claims of this run that ended not decided, in the document's order."""
        return [n for n, c in self.claims.items() if c.decision == "not_decided"]

    def trials_of(self, arm: str, outcome: str | None = None) -> Iterable[Trial]:
        return (t for t in self.trials if t.arm == arm and (outcome is None or t.outcome == outcome))

    def thread_phases(self, arm: str, at_fault: bool = True) -> tuple[Counter[str], int]:
        """Where the threads were at the arm's crashes (phases.by_arm): label -> crash records
        whose threads were read at the fault (at_fault False: only after the crash handler's
        slow work, records from before its snapshot), and how many crashed trials carried no
        threads."""
        return phases.by_arm((t.record for t in self.trials), read_at_fault=at_fault).get(
            arm, (Counter(), 0))


@dataclass(frozen=True)
class Reported:
    """What the reporter ran on (the case's ``reported``; each None where the report says not)."""

    gpu: str | None = None
    target: str | None = None
    driver: str | None = None
    toolchain: str | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Reported | None:
        if not d:
            return None
        return cls(d.get("gpu"), d.get("target"), d.get("driver"), d.get("toolchain"))


@dataclass(frozen=True)
class Deeper:
    """A main-question run's arms and claims beyond the main question (the case's ``deeper``)."""

    arms: tuple[str, ...]
    claims: tuple[str, ...]

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Deeper | None:
        d = d or {}
        if not d.get("arms"):
            return None  # the run ran every arm, or was recorded before runs had a scope
        return cls(tuple(str(a) for a in d["arms"]), tuple(str(c) for c in d.get("claims") or ()))


@dataclass(frozen=True)
class CaseFacts:
    """What the document keeps of its case (``case``): its question, baseline, the outcomes
    that count as failures, the unit of its exposure, what the reporter ran and the build
    targets of its manifest (None: a document recorded before they were kept)."""

    name: str
    question: str
    report_url: str
    baseline: str
    failure_outcomes: tuple[str, ...]
    exposure_unit: str | None
    exposure_per: float | None
    exposure_label: str | None
    exposure_counter: str | None
    check: OutputCheck | None  # None: the case checks no output
    reported: Reported | None
    targets: tuple[str, ...] | None
    manifest_sha256: str | None
    deeper: Deeper | None

    @property
    def exposure_words(self) -> str:
        """The exposure unit by what it counts ("load/launch/unload iterations") where the case
        says, else its name ("cycles")."""
        return str(self.exposure_label or self.exposure_unit)

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> CaseFacts:
        exposure = d.get("exposure") or {}
        targets = d.get("targets")
        return cls(name=str(d["name"]), question=str(d.get("question") or ""),
                   report_url=str(d.get("report_url") or ""), baseline=str(d["baseline"]),
                   failure_outcomes=tuple(str(o) for o in d.get("failure_outcomes") or ()),
                   exposure_unit=exposure.get("unit"), exposure_per=exposure.get("per"),
                   exposure_label=exposure.get("label"), exposure_counter=exposure.get("counter"),
                   check=OutputCheck.of(d.get("check")),
                   reported=Reported.of(d.get("reported")),
                   targets=None if targets is None else tuple(str(t) for t in targets),
                   manifest_sha256=d.get("manifest_sha256"), deeper=Deeper.of(d.get("deeper")))


@dataclass(frozen=True)
class Verdict:
    """The verdict written from the decided claims (``verdict``): its status, who owns the
    failure and why, the sentences, what to do next, the hypotheses and what is undecided."""

    status: str
    owner: str | None
    owner_because: tuple[str, ...] | None  # None: recorded before the harness decided claims
    sentences: tuple[str, ...]
    next: tuple[str, ...]
    hypotheses: tuple[str, ...]
    not_decided: tuple[str, ...]
    exploratory: tuple[str, ...] = ()
    stopped: str | None = None  # why a partial run stopped before its design ended it

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Verdict | None:
        if d is None:
            return None

        def texts(key: str) -> tuple[str, ...]:
            return tuple(str(x) for x in d.get(key) or ())

        because = d.get("owner_because")
        return cls(status=str(d.get("status")), owner=d.get("owner"),
                   owner_because=None if because is None else tuple(str(x) for x in because),
                   sentences=texts("sentences"), next=texts("next"),
                   hypotheses=texts("hypotheses"), not_decided=texts("not_decided"),
                   exploratory=texts("exploratory"), stopped=d.get("stopped") or None)


@dataclass(frozen=True)
class Comparison:
    """An arm against the baseline (the document's ``comparisons/<arm>``): the ratio of their
    failure rates with its exact test's p (None: not compared, or no ratio)."""

    rate_ratio: Estimate | None
    rate_ratio_p: float | None
    fisher_p: float | None = None  # Fisher's exact test on failed / valid trials
    odds_ratio: float | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Comparison:
        rr = (d or {}).get("rate_ratio") or {}
        fisher = (d or {}).get("fisher") or {}
        return cls(Estimate.of(rr) if rr else None, rr.get("p_value"), fisher.get("p_value"),
                   fisher.get("odds_ratio"))


@dataclass(frozen=True)
class Artifact:
    """A built artifact (the document's ``artifacts/<name>``): where it was and its sha256."""

    path: str | None
    sha256: str

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Artifact:
        return cls(d.get("path"), str(d.get("sha256")))


@dataclass(frozen=True)
class Probe:
    """What one trial command did where the case cannot run (the document's ``probe``)."""

    command: tuple[Any, ...]
    outcome: str | None
    detail: str | None
    stdout_tail: str | None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Probe | None:
        if not d:
            return None
        return cls(tuple(d.get("command", ())), d.get("outcome"), d.get("detail"),
                   d.get("stdout_tail"))


@dataclass(frozen=True)
class GpuCounts:
    """One arm's failed and valid trials on one GPU (the document's ``per_gpu``)."""

    failures: int
    valid: int


@dataclass(frozen=True)
class ResumeDevice:
    """The device a resume of the journal found."""

    name: str | None
    uuid: str | None
    driver_version: str | None


@dataclass(frozen=True)
class Resume:
    """A resume of the run's journal (the document's ``resumed``): when, the device it found,
    whether that was another device than the journal's and how it differed."""

    at: str
    device: ResumeDevice | None
    other_device: bool
    differs: tuple[str, ...]

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Resume:
        dev = d.get("device")
        return cls(str(d["at"]), None if dev is None else ResumeDevice(
            dev.get("name"), dev.get("uuid"), dev.get("driver_version")),
            bool(d.get("other_device")), tuple(str(x) for x in d.get("differs") or ()))


@dataclass(frozen=True)
class Completion:
    """How far the run got (the document's ``completion``; None fields: a document recorded
    before it kept them)."""

    trials: int | None = None
    planned: int | None = None
    complete: bool | None = None
    resume: str | None = None  # a stopped run's command that continues it

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Completion:
        d = d or {}
        planned = "planned" in d
        return cls(int(d["trials"]) if planned else None, int(d["planned"]) if planned else None,
                   d["complete"] if "complete" in d else None, d.get("resume"))


@dataclass(frozen=True)
class Deterministic:
    """A case's checked declaration of deterministic outcomes (``plan.options.deterministic``,
    gpurepro.analyze.shortcut): the alpha it spends (``bound``), from version 2 on, when usable."""

    version: int
    bound: float | None
    usable: bool
    # The declaration as journaled (its reason, trials, flake rates, ...: what
    # gpurepro.analyze.shortcut reads).
    declared: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Deterministic | None:
        if not d:
            return None
        return cls(int(d.get("version", 1)), d.get("bound"), bool(d.get("usable", True)),
                   _frozen(d))


@dataclass(frozen=True)
class ClaimFamilies:
    """How the run split its claims (``plan.options.families``, gpurepro.analyze.decidability):
    the main question's claims, each claim's simulated chance to be decided and the chance
    below which a claim is exploratory."""

    main: tuple[str, ...]
    chance: Mapping[str, float]
    threshold: float | None
    exploratory: tuple[str, ...] = ()  # the claims kept out of the confirmatory family

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> ClaimFamilies | None:
        if not d:
            return None
        return cls(tuple(d.get("main") or ()), _frozen(d.get("chance")), d.get("threshold"),
                   tuple(d.get("exploratory") or ()))


@dataclass(frozen=True)
class PlanOptions:
    """The options the run was given (the document's ``plan.options``), beside its design."""

    jobs: int = 1
    scope: str | None = None  # "main", "deep" or "arms"; None: recorded before runs had one
    budget: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    gpus: tuple[int, ...] | None = None
    redact: bool = False
    timing: JSONObject | None = None  # how timed claims are tested (analyze.timing.TimedTest)
    deterministic: Deterministic | None = None
    families: ClaimFamilies | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> PlanOptions:
        d = d or {}
        return cls(d.get("jobs", 1), d.get("scope"), _frozen(d.get("budget")),
                   tuple(d["gpus"]) if d.get("gpus") else None, bool(d.get("redact")),
                   dict(d["timing"]) if d.get("timing") else None,
                   Deterministic.of(d.get("deterministic")), ClaimFamilies.of(d.get("families")))


@dataclass(frozen=True)
class Result:
    """A whole result document, typed: what its report reads (gpurepro.report). ``of`` is the
    one place it is built, at the document's edge (json.loads of a recorded file, or the
    document `record` has just assembled); ``fields`` is the document as recorded, so
    ``Result.of(doc).to_json() == doc``. The typed parts: the case (``case``), the run's plan
    and design, its trials (``analysis.trials``, ``analysis.arms``, ``analysis.claims``, ...:
    the views a case's verdict reads) and the verdict (None: not written yet)."""

    schema: str
    gpurepro_version: str | None
    created_at: str | None
    case: CaseFacts
    plan: Plan
    design: DesignSpec
    analysis: Analysis
    verdict: Verdict | None
    fields: Mapping[str, Any] = field(repr=False, compare=False)
    options: PlanOptions = PlanOptions()
    environment: Environment = Environment.of(None)
    cluster: Cluster | None = None
    completion: Completion = Completion()
    comparisons: Mapping[str, Comparison] = field(default_factory=lambda: _EMPTY)
    artifacts: Mapping[str, Artifact] = field(default_factory=lambda: _EMPTY)
    claims_recorded: bool = True  # False: recorded before the harness decided claims
    claims: tuple[ClaimDecision, ...] = ()  # in the document's order, both families
    toolchain: Toolchain = Toolchain.of(None)
    runtime: Runtime | None = None
    probe: Probe | None = None
    per_gpu: Mapping[str, Mapping[str, GpuCounts]] = field(default_factory=lambda: _EMPTY)
    per_host: Mapping[str, Mapping[str, GpuCounts]] = field(default_factory=lambda: _EMPTY)
    resumed: tuple[Resume, ...] = ()
    started_at: str | None = None  # when the run's first trial started
    # The known-rates design for the run's own rates (analyze.known_rates: its trials, seconds,
    # chance and ratio), as recorded; None where the document has none.
    known_rates_plan: Mapping[str, Any] | None = None

    @property
    def trials(self) -> tuple[Trial, ...]:
        return self.analysis.trials

    @property
    def arms(self) -> Mapping[str, ArmSummary]:
        return self.analysis.arms

    @property
    def crash_sites(self) -> tuple[CrashSite, ...]:
        return self.analysis.crash_sites

    @property
    def device(self) -> Device:
        return self.analysis.device

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> Result:
        plan = doc["plan"]
        return cls(schema=str(doc.get("schema") or ""),
                   gpurepro_version=doc.get("gpurepro_version"),
                   created_at=doc.get("created_at"), case=CaseFacts.of(doc["case"]),
                   plan=Plan.from_json(plan),
                   design=DesignSpec.from_json((plan.get("options") or {}).get("stopping"),
                                               "plan.options.stopping"),
                   analysis=Analysis.of(doc), verdict=Verdict.of(doc.get("verdict")),
                   fields=doc, options=PlanOptions.of(plan.get("options")),
                   environment=Environment.of(doc.get("environment")),
                   cluster=Cluster.of(doc.get("cluster")),
                   completion=Completion.of(doc.get("completion")),
                   comparisons=MappingProxyType({a: Comparison.of(c) for a, c in
                                                 (doc.get("comparisons") or {}).items()}),
                   artifacts=MappingProxyType({n: Artifact.of(a) for n, a in
                                               (doc.get("artifacts") or {}).items()}),
                   claims_recorded="claims" in doc,
                   claims=tuple(ClaimDecision.of(c) for c in doc.get("claims") or ()),
                   toolchain=Toolchain.of(doc.get("toolchain")),
                   runtime=Runtime.of(doc.get("runtime")), probe=Probe.of(doc.get("probe")),
                   per_gpu=_counts(doc.get("per_gpu")), per_host=_counts(doc.get("per_host")),
                   resumed=tuple(Resume.of(x) for x in doc.get("resumed") or ()),
                   started_at=doc.get("started_at"),
                   known_rates_plan=doc.get("known_rates_plan") or None)

    def to_json(self) -> dict[str, Any]:
        return dict(self.fields)


def _counts(d: Mapping[str, Any] | None) -> Mapping[str, Mapping[str, GpuCounts]]:
    """GPU (or host) -> arm -> failed and valid trials there."""
    return MappingProxyType({
        str(where): MappingProxyType({str(a): GpuCounts(c.get("failures"), c.get("valid"))
                                      for a, c in cells.items()})
        for where, cells in (d or {}).items()})


def as_result(doc: Result | Mapping[str, Any]) -> Result:
    """A result, from a document as read where the caller has not typed it yet (the
    report's public functions take either)."""
    return doc if isinstance(doc, Result) else Result.of(doc)
