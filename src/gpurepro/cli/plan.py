"""`python -m gpurepro plan CASE [run flags]`: what a run would do, before any GPU is used.

The run's flags are checked as `case` and `run` check them; the plan is made as a run makes it
(the arms, their trials in randomized blocks, the design and its claim families); then it is
printed with the GPU time it is expected to take, and nothing is built, probed or run. The
time comes from the committed results of the case where it has some (the simulated run's
median, or each arm's median trial time); a new case has none, and the plan says what it
assumes instead: every trial runs its whole duration budget, and at most its wall-clock limit.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..analyze.decidability import lines as chance_lines
from ..analyze.designing import run_design
from ..analyze.recorded import recorded_runs
from ..case.load import load_case
from ..case.model import Case
from ..errors import EXIT_OK, UsageError
from ..model.design import DesignSpec
from ..model.plan import Plan
from ..run.session import new_plan
from .args import check_arguments, repository_root, show

# What other modules use; the rest is this module's own.
__all__ = ["arm_times", "cmd", "lines", "Plan"]


@dataclass(frozen=True)
class ArmTime:
    """One arm's expected seconds per trial, and where the number comes from: ``committed``
    (the median of that many committed trials) or ``assumed`` (the duration budget)."""

    arm: str
    trials: int
    seconds: float
    source: str
    committed_trials: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ArmTime:
        return cls(str(d["arm"]), int(d["trials"]), float(d["seconds"]), str(d["source"]),
                   int(d.get("committed_trials", 0)))


def committed_times(case: Case, root: Path) -> dict[str, list[float]]:
    """Arm -> the wall times of its committed trials (results/<case>/*.json)."""
    out: dict[str, list[float]] = {}
    for path in sorted((root / "results" / case.name).glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or (doc.get("case") or {}).get("name") != case.name:
            continue
        for t in doc.get("trials") or []:
            d = t.get("duration_s") if isinstance(t, dict) else None
            if isinstance(d, (int, float)) and not isinstance(d, bool) and d > 0:
                out.setdefault(str(t.get("arm")), []).append(float(d))
    return out


def arm_times(case: Case, plan: Plan, duration_s: float, root: Path) -> list[ArmTime]:
    """Each planned arm's trials and expected seconds per trial."""
    seen = committed_times(case, root)
    out = []
    for arm, n in plan.trials_per_arm.items():
        times = seen.get(arm, [])
        if times:
            out.append(ArmTime(arm, n, statistics.median(times), "committed", len(times)))
        else:
            out.append(ArmTime(arm, n, duration_s, "assumed"))
    return out


def design_line(design: DesignSpec, plan: Plan) -> str:
    if not design.sequential:
        return f"design: fixed, every arm's trials run ({len(plan.order)} trials)"
    kind = "decisive" if design.decisive else "until-decided"
    first = design.first_look
    horizon = design.horizon if isinstance(design.horizon, (int, float)) else None
    choice = design.described.get("first_look_choice")
    why = ""
    chance = choice.get("chance") if isinstance(choice, dict) else None
    if isinstance(choice, dict) and choice.get("first_look") == first and isinstance(
            chance, int | float):
        # How the look was set (analyze.planning.FIRST_LOOK_RULE), numbers from the journal.
        one_look = (f"one look at half of alpha decides every confirmatory claim in {chance:.0%} "
                    f"of simulated runs at {choice.get('one_look_trials')} trials, the expected "
                    f"outcomes alone at {choice.get('expected_outcome_trials')}")
        medians = choice.get("simulated_median_s")
        if isinstance(medians, dict):  # the candidates compared (a journal before had none)
            tried = ", ".join(f"{look} {m:.0f} s" for look, m in medians.items()
                              if isinstance(m, int | float))
            why = f": the quickest simulated median of the first looks tried ({tried}); {one_look}"
        else:
            why = f": {one_look}"
    return (f"design: {kind}, alpha {design.alpha}: at most {design.max_trials} trials per arm, "
            f"stopping once the claims are decided"
            + (f" (first look after {first} trials{why})" if first else "")
            + (f"; rate claims decided on whether each trial failed before {horizon:,.0f} "
               f"(the horizon every trial of their arms runs to at most)"
               if horizon is not None else ""))


def lines(case: Case, plan: Plan, request: Any, design: DesignSpec,
          families: Mapping[str, Any] | None, times: list[ArmTime]) -> list[str]:
    """What `plan` prints."""
    b = request.budget
    out = [f"plan of {case.name} for {request.target}: nothing built, no GPU used",
           design_line(design, plan),
           f"arms: {', '.join(f'{t.arm} ({t.trials})' for t in times)}; {request.jobs} trial(s) "
           f"at a time",
           f"per trial: a {b.duration_s:g} s budget"
           + (f" or {b.max_exposure} {case.exposure.unit}" if b.max_exposure else "")
           + f", killed at {b.timeout_s:g} s"
           + (f", or after {b.stall_s:g} s without progress" if b.stall_s else "")]
    if families is not None:
        out += chance_lines(dict(families), [c.name for c in case.claims if c.arm in plan.arms])
    worst = sum(t.trials for t in times) * b.timeout_s / max(1, request.jobs)
    simulated = (families or {}).get("expected") if (families or {}).get("computed") else None
    if simulated:  # the decidability lines above said it: the simulated run's median
        out.append(f"expected GPU time: about {simulated['seconds_median']:.0f} s, the simulated "
                   f"run's median ({simulated['trials']:.0f} trials, with the committed rates); "
                   f"at most {worst:.0f} s if all {len(plan.order)} trials ran to their limit")
        return out
    total = sum(t.trials * t.seconds for t in times) / max(1, request.jobs)
    assumed = [t.arm for t in times if t.source == "assumed"]
    committed = [t for t in times if t.source == "committed"]
    out.append(f"expected GPU time: about {total:.0f} s for {len(plan.order)} trials"
               + (" (at most: the design stops arms once their claims are decided)"
                  if design.sequential else "")
               + f"; at most {worst:.0f} s if every trial ran to its limit")
    if committed:
        out.append("  from the committed trials (median wall time per trial): " + ", ".join(
            f"{t.arm} {t.seconds:.2f} s of {t.committed_trials}" for t in committed))
    if assumed:
        out.append(f"  assumed, with no committed trial of {', '.join(assumed)}: each trial runs "
                   f"its whole {b.duration_s:g} s budget (a trial that ends sooner, on a failure "
                   f"or a smaller exposure budget, takes less; one that hangs, {b.timeout_s:g} s)")
    return out


def check_gpu_model(case: Case, name: str, root: Path) -> None:
    """A --gpu-model some committed result of the case was run on: the horizon and the priors
    are matched by the exact name, so a name no document has ('H100' for 'NVIDIA H100 80GB
    HBM3') would plan from every model's results without a word."""
    models = {r.gpu for r in recorded_runs(case.name, root) if r.gpu is not None}
    if name not in models:
        known = ", ".join(repr(m) for m in sorted(models)) or "none"
        raise UsageError(f"--gpu-model {name!r}: no committed result of {case.name} was run on "
                         f"it (the models they name: {known})")


def cmd(args: argparse.Namespace) -> int:

    if args.resume or args.slurm:
        raise UsageError("plan shows a new run on this machine: --resume and --slurm have "
                         "their own plans (the journal's, the partitions')")
    root = repository_root()
    case = load_case(args.case, root)
    request = check_arguments(case, args, root, {"available": False, "gpus": []})
    if args.gpu_model is not None:
        check_gpu_model(case, args.gpu_model, root)
    plan = new_plan(case, request)
    design, families = run_design(case, plan, request, root, args.gpu_model)
    times = arm_times(case, plan, request.budget.duration_s, root)
    for line in lines(case, plan, request, design, families, times):
        show(line)
    return EXIT_OK


