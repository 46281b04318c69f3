"""The recorded runs the planning takes its rates from, each document read and typed in one place.

A committed result of the case (or one given with --from, --priors-from, --processes-from, or the
run being recorded) is, to the planning, a run at some trials at a time, on some GPU model, of
some design kind and budget, stopped or not, with its trials: ``RecordedRun``. The priors
(simulate.choose_documents), the horizon's pooled trials (horizon_design.pooled_trials), the
crash processes (calibrate.process_documents) and `plan --gpu-model` read the committed ones
through ``recorded_runs``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..env.commits import committed_results
from ..model.environment import gpu_model

# What other modules use; the rest is this module's own.
__all__ = ["RecordedRun", "design_kind", "recorded_runs"]


def design_kind(stopping: Mapping[str, Any] | None) -> str:
    """decisive, until-decided or fixed: what a run's journaled ``stopping`` describes."""
    if not stopping:
        return "fixed"
    return "decisive" if stopping.get("design") == "decisive" else "until-decided"


@dataclass(frozen=True)
class RecordedRun:
    """A recorded run as the planning reads it: where its document is, how many trials it ran
    at a time (concurrency changes a race's rates), whether it was stopped before its design
    ended it, the GPU model it ran on, its design kind, its trials' budget, and its trials."""

    path: Path
    jobs: int
    stopped: bool  # its completion says complete: false
    gpu: str | None  # the model of its first GPU; None where it names none
    kind: str  # design_kind of its design
    budget: Mapping[str, Any]  # plan.options.budget: duration_s, max_exposure, ...
    trials: Sequence[Mapping[str, Any]]

    @classmethod
    def of(cls, path: Path, doc: Mapping[str, Any]) -> RecordedRun:
        """The run of a result document (as read from ``path``)."""
        options = (doc.get("plan") or {}).get("options") or {}
        return cls(path=path, jobs=int(options.get("jobs") or 1),
                   stopped=(doc.get("completion") or {}).get("complete") is False,
                   gpu=gpu_model(doc), kind=design_kind(options.get("stopping")),
                   budget=options.get("budget") or {}, trials=doc.get("trials") or [])

    def only(self, arms: Collection[str]) -> RecordedRun:
        """The same run with the trials of ``arms`` alone."""
        return replace(self, trials=[t for t in self.trials if t.get("arm") in arms])


def recorded_runs(case_name: str, root: Path) -> list[RecordedRun]:
    """The case's committed results (env.commits.committed_results: newest first), each a
    RecordedRun; a file that is not a JSON object is left out."""
    out = []
    for f in committed_results(case_name, root):
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            out.append(RecordedRun.of(f, doc))
    return out
