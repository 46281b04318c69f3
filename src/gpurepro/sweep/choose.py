"""Which runs the GPU stage makes: the two ways a sweep chooses the releases it runs on a GPU.

- ``Bisection`` (a bisection document): the fewest distinct artifacts that pin every boundary
  (search.py): the ends of every segment, then the middle point between two runs that ended
  differently, until they are adjacent; each run's trials decide its point's class on the node
  (fails, passes, unknown), which decides the next round. ``exhaustive``: every point at once.
- ``Grid`` (a matrix document): every run the matrix's CPU stage planned (one per distinct
  cubin, newest first), with the matrix's arms or those asked for; nothing is decided on the
  node, the trials are counted at assembly.

Both give the GPU stage (gpu.py) the same things: the harness's settings, the artifacts it must
find, rounds of runs, what a finished run decides, and its words. Standard library only.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..case.axis import RUNTIME_SUBSTITUTE
from ..model.outcomes import EVIDENCE
from . import search, timed
from .bisection import axis_root
from .model import BISECTION, MATRIX, ArmCounts, GpuRecord, Run, Substitute

# What other modules use; the rest is this module's own.
__all__ = ["Bisection", "Choice", "Grid", "Harness", "Options"]

# Per trial beyond its duration (process start, module loads, teardown), and per run (the
# harness's start-up and fingerprint): what a budget counts on. In the committed H200 matrix run
# of 5 s trials (20261130T031305Z), survivors took at most 5.27 s; baseline trials mostly end
# sooner, by crashing.
TRIAL_OVERHEAD_S = 1.5
RUN_OVERHEAD_S = 5.0


@dataclass(frozen=True)
class Harness:
    """What every run of one sweep passes to ``gpurepro run`` beside its arms and artifacts."""

    case: str  # the case's name, or its manifest's path in the repository
    target: str
    trials: int
    duration_s: float
    timeout_s: float
    jobs: int
    build_dir: str | None = None

    def argv(self, run: Run, journal: Path) -> list[str]:
        argv = [sys.executable, "-m", "gpurepro", "run", self.case,
                *(["--build-dir", self.build_dir] if self.build_dir else []),
                "--arch", self.target, "--arms", ",".join(run.arms),
                "--trials", str(self.trials), "--duration", f"{self.duration_s:g}",
                "--timeout", f"{self.timeout_s:g}", "--jobs", str(self.jobs),
                "--seed", str(run.seed), "--no-record", "--redact", "--journal", str(journal)]
        for artifact, sub in run.substitutes.items():
            # A runtime axis's point is a runtime index, not an artifact (RuntimeAxis).
            argv += (["--runtime-index", sub.path] if artifact == RUNTIME_SUBSTITUTE
                     else ["--artifact", f"{artifact}={sub.path}"])
        return argv

    def seconds(self, run: Run) -> float:
        """About how long ``run`` takes: its trials one after the other, and the harness."""
        return len(run.arms) * self.trials * (self.duration_s + TRIAL_OVERHEAD_S) + RUN_OVERHEAD_S


class Bisection:
    """The search over a bisection document's points (the module's docstring)."""

    kind, name, options, budget_s = BISECTION, "bisect", None, None

    def __init__(self, doc: Mapping[str, Any], exhaustive: bool = False) -> None:
        self.doc, self.exhaustive = doc, exhaustive
        self.mode = "exhaustive" if exhaustive else "bisect"
        ax = doc["axis"]
        # A timed axis times its reference arm beside the point's, in the same run.
        self.arms = (*ax["arms"], *([ax["timed"]["reference"]] if ax.get("timed") else []))
        self.harness = Harness(case=doc["case"].get("manifest") or doc["case"]["name"],
                               target=doc["target"], trials=ax["trials"],
                               duration_s=ax["duration_s"], timeout_s=ax["timeout_s"],
                               jobs=ax.get("jobs", 1), build_dir=doc.get("case_build") or "build")
        self.carry = str(axis_root(doc["case"]["name"], ax["name"], doc["target"]))
        self.classes: dict[int, str] = {}

    def artifacts(self) -> dict[str, str]:
        return {sha: a["path"] for sha, a in self.doc["artifacts"].items()}

    def _run(self, i: int, why: str) -> Run:
        p = self.doc["points"][i]
        path = self.doc["artifacts"][p["sha256"]]["path"]
        return Run(id=f"point{i:03d}_{p['sha256'][:12]}", arms=self.arms, why=why,
                   substitutes={self.doc["axis"]["artifact"]: Substitute(p["sha256"], path)},
                   point=i, releases=tuple(p["releases"]))

    def first(self) -> list[Run]:
        segments: dict[int, list[int]] = {}
        for p in self.doc["points"]:
            segments.setdefault(p["segment"], []).append(p["index"])
        return [self._run(i, why) for i, why in
                search.first_round([segments[k] for k in sorted(segments)], self.exhaustive)]

    def next(self) -> list[Run]:
        if self.exhaustive:
            return []
        return [self._run(i, why) for i, why in
                search.next_round(len(self.doc["points"]), self.classes) if i not in self.classes]

    def done(self, run: Run) -> bool:
        return run.point in self.classes

    def decide(self, run: Run, trials: Sequence[Mapping[str, Any]] | None) -> None:
        """A run's trials as its point's counts and class (``unknown`` where none ran)."""
        run.klass = "unknown"
        if run.status != "ran" or trials is None:
            return
        outcomes = self.doc["case"]["failure_outcomes"]
        run.counts = ArmCounts.by_arm(trials, outcomes)
        if self.doc["axis"].get("timed"):
            run.klass, run.timing = timed.point_class(trials, self.doc["axis"]["timed"],
                                                      self.arms[0], outcomes, len(self.doc["points"]))
        else:
            run.klass = search.class_of(trials, outcomes, EVIDENCE)

    def settle(self, run: Run) -> None:
        assert run.point is not None
        self.classes[run.point] = run.klass if run.status == "ran" and run.klass else "unknown"

    def label(self, run: Run) -> str:
        return f"point {run.point} ({', '.join(run.releases)}): {run.why}"

    def summary(self, record: GpuRecord, document: Path, out: Path) -> str:
        ran = sum(1 for r in record.runs if r.status == "ran" and r.same_as is None)
        return (f"{ran} of {len(self.doc['points'])} distinct artifacts run in "
                f"{record.wall_s or 0:.0f} s")


@dataclass(frozen=True)
class Options:
    """A matrix's GPU stage as asked: arms for every Tile IR cubin (default: the matrix's),
    for the newest cell's (default: ``arms``), the wall-clock budget, the first run's seed."""

    arms: tuple[str, ...] | None = None
    newest_arms: tuple[str, ...] | None = None
    budget_s: float = 420.0
    seed: int = 0


class Grid:
    """Every run a matrix document planned, in its order (the module's docstring); a run whose
    trials would not fit the budget is not started, and says so."""

    kind, name, mode = MATRIX, "matrix", "grid"

    def __init__(self, doc: Mapping[str, Any], opts: Options) -> None:
        m, d = doc["matrix"], doc["matrix"]["gpu_defaults"]
        self.doc, self.budget_s = doc, opts.budget_s
        defaults = tuple(d["arms"])
        self.harness = Harness(case=doc["case"]["name"], target=m["target"], trials=d["trials"],
                               duration_s=d["duration_s"], timeout_s=d["trial_timeout_s"],
                               jobs=d["jobs"])
        self.carry = str(Path("build", "matrix", doc["case"]["name"], m["target"]))
        self.options = {"arms": list(opts.arms or defaults),
                        "newest_arms": list(opts.newest_arms or opts.arms or defaults),
                        "budget_s": opts.budget_s, "seed": opts.seed, **d}
        self.plan = []
        for r in doc["runs"]:
            arms = opts.arms or defaults
            if r["newest"]:
                arms = opts.newest_arms or arms
            # The control arm where the run carries a plain cubin.
            arms = (*arms, *(a for a in r["arms"] if a == m["control_arm"] and a not in arms))
            cells = ", ".join(r["cells"][:3]) + (", ..." if len(r["cells"]) > 3 else "")
            self.plan.append(Run(id=r["id"], arms=tuple(arms), why=f"the matrix's plan: {cells}",
                                 substitutes={a: Substitute.from_json(s)
                                              for a, s in r["substitutes"].items()}))

    def artifacts(self) -> dict[str, str]:
        return {s.sha256: s.path for r in self.plan for s in r.substitutes.values()}

    def first(self) -> list[Run]:
        return list(self.plan)

    def next(self) -> list[Run]:
        return []

    def done(self, run: Run) -> bool:
        return False

    def decide(self, run: Run, trials: Sequence[Mapping[str, Any]] | None) -> None:
        """Nothing: a matrix's trials are counted at assembly."""

    def settle(self, run: Run) -> None:
        """Nothing: every planned run runs."""

    def label(self, run: Run) -> str:
        return f"{run.id} ({run.why.split(': ', 1)[1]}): {', '.join(run.arms)}"

    def summary(self, record: GpuRecord, document: Path, out: Path) -> str:
        ran = sum(1 for r in record.runs if r.status == "ran")
        return (f"{ran} of {len(self.plan)} runs done in {record.wall_s or 0:.0f} s; next, where "
                f"the analysis packages are: python -m gpurepro matrix assemble {document} {out}")


Choice = Bisection | Grid
