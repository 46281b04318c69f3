"""A journal's lines as types: its header (``RunHeader``) and its trials (``TrialRecord``).

The journal (gpurepro.run.journal) is one of the two edges where JSON is read and written: a
line is parsed there and handed on as these types, which keep every field as journaled (a
field no version of gpurepro reads is kept too), so ``from_json(d).to_json() == d`` for every
committed journal's lines, key for key and in the same order. What the stages read of them is
typed here: the run's identity, plan, design and options; a trial's index, arm, outcome and
exposure. A line of the wrong shape is a JournalError naming the field. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import JournalError
from .design import DesignSpec
from .jsontypes import JSONObject, JSONValue
from .plan import Plan


@dataclass(frozen=True)
class Budget:
    """A trial's limits as the journal's options keep them (``options.budget``): its duration,
    its exposure budget (0: none), its wall-clock limit and its no-progress limit (None: only
    the wall-clock limit)."""

    duration_s: float
    max_exposure: int
    timeout_s: float
    stall_s: float | None = None


@dataclass(frozen=True)
class RunHeader:
    """A journal's first line: the run's identity (case, manifest and plan hashes, run id) and
    what continuing or recording it needs (its plan, design and options, the device, the
    artifacts). ``fields`` is the line as journaled; the typed attributes are read from it."""

    case: str
    plan: Plan
    design: DesignSpec
    budget: Budget
    jobs: int
    gpus: tuple[str, ...]
    redact: bool
    journal_format: int
    run_id: str | None
    manifest: str | None
    manifest_sha256: str | None
    plan_sha256: str | None
    started_at: str | None
    scope: str | None
    # The build targets the run's manifest has (absent from a journal from before they were kept).
    targets: tuple[str, ...] | None
    fields: Mapping[str, JSONValue] = field(repr=False, compare=False)

    @property
    def options(self) -> Mapping[str, Any]:
        """The options as journaled (the design, families, declaration, timed test, ...)."""
        options = self.fields.get("options")
        return options if isinstance(options, Mapping) else {}

    @property
    def device(self) -> Mapping[str, Any]:
        """The device gate the run started with (name, UUID, target, supported, reason)."""
        device = self.fields.get("device")
        return device if isinstance(device, Mapping) else {}

    @property
    def build_index(self) -> dict[str, Any]:
        """What the run's trials run from, as journaled: the build's artifacts and toolchain, and
        the arms' runtime packages (None: the case has none)."""
        runtime = self.fields.get("runtime")
        return {"artifacts": self.fields["artifacts"], "toolchain": self.fields["toolchain"],
                "runtime": runtime if isinstance(runtime, Mapping) else None}

    @property
    def cluster(self) -> Mapping[str, Any]:
        """A cluster run's section (scheduler, partitions, builds per target, options); empty
        for a run on one host."""
        cluster = self.fields.get("cluster")
        return cluster if isinstance(cluster, Mapping) else {}

    @property
    def environment(self) -> Mapping[str, Any]:
        """The machine the run was started on, as journaled (host, GPUs and driver, the
        repository, the environment variables kept)."""
        environment = self.fields.get("environment")
        return environment if isinstance(environment, Mapping) else {}

    @property
    def repository(self) -> Mapping[str, Any]:
        """The checkout the run was started from, as journaled (``environment.repository``:
        commit, dirty, how the commit was known)."""
        repository = self.environment.get("repository")
        return repository if isinstance(repository, Mapping) else {}

    def to_json(self) -> JSONObject:
        return dict(self.fields)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = "the journal's header") -> RunHeader:
        if not isinstance(d, Mapping):
            raise JournalError(f"{where}: a JSON object expected, found {type(d).__name__}")
        options = d.get("options")
        if not isinstance(options, Mapping):
            raise JournalError(f"{where}: options: an object expected, found {options!r}")
        budget = options.get("budget")
        if not isinstance(budget, Mapping):
            raise JournalError(f"{where}: options.budget: an object expected, found {budget!r}")
        plan = d.get("plan")
        if not isinstance(plan, Mapping):
            raise JournalError(f"{where}: plan: an object expected, found {plan!r}")
        try:
            read_plan = Plan.from_json(plan)
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(f"{where}: plan: a plan of arms and trials expected ({exc!r})"
                               ) from None
        gpus = options.get("gpus") or []
        targets = d.get("targets")
        return cls(
            case=_text(d, "case", where),
            plan=read_plan,
            design=DesignSpec.from_json(options.get("stopping")),
            budget=Budget(duration_s=_number(budget, "duration_s", f"{where}: options.budget"),
                          # The oldest journals named it after the first case's counter.
                          max_exposure=int(_number(budget, "max_exposure" if "max_exposure"
                                                   in budget else "max_cycles",
                                                   f"{where}: options.budget")),
                          timeout_s=_number(budget, "timeout_s", f"{where}: options.budget"),
                          stall_s=(None if budget.get("stall_s") is None else
                                   _number(budget, "stall_s", f"{where}: options.budget"))),
            jobs=int(_number(options, "jobs", f"{where}: options")),
            gpus=tuple(str(g) for g in gpus),
            redact=bool(options.get("redact", False)),
            journal_format=int(d.get("journal_format") or 1),
            run_id=_optional_text(d, "run_id", where),
            manifest=_optional_text(d, "manifest", where),
            manifest_sha256=_optional_text(d, "manifest_sha256", where),
            plan_sha256=_optional_text(d, "plan_sha256", where),
            started_at=_optional_text(d, "started_at", where),
            scope=_optional_text(options, "scope", f"{where}: options"),
            targets=None if targets is None else tuple(str(t) for t in targets),
            fields=dict(d))


@dataclass(frozen=True)
class TrialRecord:
    """One finished trial as the journal keeps it (a ``trial`` line, its chain value left out):
    its place in the plan, its outcome and what it measured. ``fields`` is the line as
    journaled (its command, counters, crash, output tails, ...)."""

    index: int
    arm: str
    rep: int
    outcome: str
    detail: str | None
    exposure: float | None
    duration_s: float | None
    fields: Mapping[str, JSONValue] = field(repr=False, compare=False)

    @property
    def counters(self) -> Mapping[str, Any]:
        counters = self.fields.get("counters")
        return counters if isinstance(counters, Mapping) else {}

    def to_json(self) -> JSONObject:
        return dict(self.fields)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = "a trial record") -> TrialRecord:
        if not isinstance(d, Mapping):
            raise JournalError(f"{where}: a JSON object expected, found {type(d).__name__}")
        index, rep = d.get("index"), d.get("rep")
        if not isinstance(index, int) or isinstance(index, bool):
            raise JournalError(f"{where}: index: a whole number expected, found {index!r}")
        if not isinstance(rep, int) or isinstance(rep, bool):
            raise JournalError(f"{where}: rep: a whole number expected, found {rep!r}")
        exposure, duration = d.get("exposure"), d.get("duration_s")
        return cls(index=index, arm=_text(d, "arm", where), rep=rep,
                   outcome=_text(d, "outcome", where),
                   detail=_optional_text(d, "detail", where),
                   exposure=None if exposure is None else _number(d, "exposure", where),
                   duration_s=None if duration is None else _number(d, "duration_s", where),
                   fields=dict(d))


def _text(d: Mapping[str, Any], key: str, where: str) -> str:
    x = d.get(key)
    if not isinstance(x, str):
        raise JournalError(f"{where}: {key}: a string expected, found {x!r}")
    return x


def _optional_text(d: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if d.get(key) is None else _text(d, key, where)


def _number(d: Mapping[str, Any], key: str, where: str) -> float:
    x = d.get(key)
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        raise JournalError(f"{where}: {key}: a finite number expected, found {x!r}")
    return x
