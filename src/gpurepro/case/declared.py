"""A verdict declared as data, for a case whose status has more than three values: the rows of
a decision table over the claims, the measurements, the readings of a build analysis, the
evidence from documentation and practice, and the hypotheses, each labelled. The harness
evaluates it (gpurepro.analyze.declared) from the run's decisions; nothing here is a result.

Texts are ``str.format`` templates. Every one may use ``{device}``, ``{target}`` (the device's
build target, else ``Declared.target``), ``{rerun}`` (the command that runs the case until its
claims are decided) and ``{decision[NAME]}`` (a claim's decision in words: "supported",
"contradicted", "not decided", "absent"). Conditions are those of the hypotheses
(gpurepro.case.hypotheses.Condition), whose ``Hypothesis`` a declared verdict states too.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .hypotheses import Condition, Decision, Hypothesis, holds

if TYPE_CHECKING:
    from ..model.result import Analysis

# What other modules use; the rest is this module's own.
__all__ = ["Branch", "Condition", "Declared", "Evidence", "InstrumentMeasure", "Measure",
           "MeasureFunction", "NotRun", "Reading", "StageMeasure", "Supported", "first_row"]

# A case's own reading of its trials' observations: (sentences, hypotheses), counts only.
MeasureFunction = Callable[["Analysis"], tuple[list[str], list[str]]]


@dataclass(frozen=True)
class Branch:
    """One row of the decision table; the first row whose conditions hold gives the status.

    ``when``: the decisions the row needs. ``any_supported``, and each group of ``any_of``: at
    least one of these claims must be supported; of them, only the supported ones stay in
    ``because``. ``facts``: the value each declared measurement must have (Declared.facts; a
    verdict function passes its own). ``owner`` (a template) is named only with ``because``, the
    claims it rests on (each must be decided). ``sentence``: why this status (a template,
    optional); ``next``: the next step, or steps. ``open``: the status itself asks for more
    trials, so no "claims not decided" step is added."""

    status: str
    when: Condition = field(default_factory=dict)
    any_supported: tuple[str, ...] = ()
    owner: str = ""
    because: tuple[str, ...] = ()
    sentence: str = ""
    next: str | tuple[str, ...] = ""
    open: bool = False
    any_of: tuple[tuple[str, ...], ...] = ()
    facts: Mapping[str, bool] = field(default_factory=dict)

    def groups(self) -> tuple[tuple[str, ...], ...]:
        return ((self.any_supported,) if self.any_supported else ()) + self.any_of

    def holds(self, decision: Decision, facts: Mapping[str, bool]) -> bool:
        """Its conditions hold for these decisions and measured facts."""
        return (holds(self.when, decision)
                and all(any(decision(c) == "supported" for c in g) for g in self.groups())
                and all(facts.get(k) == v for k, v in self.facts.items()))

    def rests_on(self, decision: Decision) -> list[str]:
        """``because`` in this run: of its groups' claims, only the supported ones."""
        grouped = {c for g in self.groups() for c in g}
        return [c for c in self.because if c not in grouped or decision(c) == "supported"]

    def steps(self) -> tuple[str, ...]:
        return (self.next,) if isinstance(self.next, str) and self.next else tuple(self.next)


def first_row(rows: tuple[Branch, ...], decision: Decision,
              facts: Mapping[str, bool] | None = None) -> Branch | None:
    """The first row whose conditions hold (a verdict function may call it too)."""
    return next((b for b in rows if b.holds(decision, facts or {})), None)


class Supported(dict[str, str]):
    """``{supported[a, b, c]}`` in a template: those of the claims supported in the run."""

    def __init__(self, decision: Decision) -> None:
        super().__init__()
        self.decision = decision

    def __missing__(self, names: str) -> str:
        return ", ".join(n for n in names.split(", ") if self.decision(n) == "supported")


@dataclass(frozen=True)
class Measure:
    """Counts of some arms in one sentence: ``label: arm: k/n failed (p%, 95% CI a-b%);
    errors; ...`` over the arms that ran a valid trial. A label with ``{prop}`` is a sentence
    per arm instead (``{arm}`` and ``{prop}`` filled in)."""

    label: str
    arms: tuple[str, ...]


@dataclass(frozen=True)
class InstrumentMeasure:
    """Arms run under an instrument (gpurepro.case.instruments): their counts, or that they did
    not run and why (the tool missing on the node adds a next step). ``labels``: instrument
    level -> how a sentence names it."""

    arms: tuple[str, ...]
    labels: Mapping[str, str]
    factor: str = "instrument"


@dataclass(frozen=True)
class StageMeasure:
    """The progress markers of ``arm`` (native/stage_markers.cuh; its trials' ``stages``
    observations, counted as "cta1:before_alloc" -> trials): each CTA's most common last stage.
    ``stuck``: (cta, stage, sentence, hypothesis), said when every valid trial failed and that
    CTA's last stage was ``stage`` in each."""

    arm: str
    stuck: tuple[str, str, str, str] | None = None


@dataclass(frozen=True)
class Reading:
    """A sentence from a build analysis's findings (``analyses[analysis]["findings"]``, as
    gpurepro.building.lowering writes them) when each finding of ``when`` has that value ("*":
    any true value). The text may name a finding's value as ``{finding[ID]}``."""

    text: str
    when: Mapping[str, object] = field(default_factory=dict)
    analysis: str = "sass"


@dataclass(frozen=True)
class Evidence:
    """What documentation or practice says, read outside the run: declared text, labelled as
    such, with the addresses it was read at. Never a result and never a condition of a row."""

    label: str
    text: str
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotRun:
    """What a run with no valid trial says after the harness's count of what it recorded:
    ``hardware`` when the device cannot run the case, ``otherwise`` else, then ``sentences``
    (what that leaves undecided, what ran without a GPU), and its next steps."""

    hardware: str
    otherwise: str
    sentences: tuple[str, ...] = ()
    next: tuple[str, ...] = ()


@dataclass(frozen=True)
class Declared:
    """The declared verdict (Conclusion.declared): ``measures`` then ``readings`` then
    ``evidence`` as sentences, the first matching ``branches`` row, ``hypotheses``;
    ``next_on``: a next step per compute capability of the device; ``not_run``: what a run
    without a valid trial says."""

    branches: tuple[Branch, ...]
    measures: tuple[Measure | InstrumentMeasure | StageMeasure | MeasureFunction, ...] = ()
    readings: tuple[Reading, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    hypotheses: tuple[Hypothesis, ...] = ()
    next_on: Mapping[str, str] = field(default_factory=dict)
    not_run: NotRun | None = None
    target: str = ""
    # Measurements the rows may need (Branch.facts): name -> its value in a run.
    facts: Mapping[str, Callable[[Analysis], bool]] = field(default_factory=dict)
