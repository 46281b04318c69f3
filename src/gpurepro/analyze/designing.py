"""A new run's design, fixed before its first trial: what the flow hands the run stage.

The run stage (gpurepro.run.session) plans the trials and journals what it is handed here: the
design (``run_design``: the decisive design completed from the committed rates), the claim
families with each claim's chance of being decided (``claim_families``), the case's checked
declaration of deterministic outcomes (``run_declaration``) and the lines that say those
chances before the first trial. Standard library at import: the analysis packages (scipy)
are needed only where a design is computed from committed rates, and a run without them is
told so (``claim_families``) or refused with the command that installs them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..case.model import Case
from ..model.design import DEFAULT_ALPHA, DesignSpec, RunDesign
from ..model.plan import Plan
from ..project import install_requirement
from ..run.session import RunRequest
from .decidability import beside_main, lines, not_computed
from .shortcut import declaration

# What other modules use; the rest is this module's own.
__all__ = ["designer", "run_declaration", "run_design"]


def designer(case: Case, request: RunRequest, root: Path
             ) -> Callable[[Plan, bool, str | None], RunDesign]:
    """What the run stage calls once its plan is made (gpurepro.run.session.start): the run's
    design for that plan on the GPU model ``gpu``; on a device that cannot run the case
    (``supported`` False), the design asked for, with no families."""

    def design_for(plan: Plan, supported: bool, gpu: str | None = None) -> RunDesign:
        design, families = (run_design(case, plan, request, root, gpu) if supported
                            else (request.design, None))
        return RunDesign(design, families, run_declaration(case, request.design),
                         tuple(family_lines(case, plan, families)) if families is not None else ())

    return design_for


def family_lines(case: Case, plan: Plan, families: dict[str, Any]) -> list[str]:
    """What is said before the first trial: each claim's chance of being decided, and its
    family."""
    return lines(families, [c.name for c in case.claims if c.arm in plan.arms])


def run_design(case: Case, plan: Plan, request: RunRequest, root: Path, gpu: str | None = None
               ) -> tuple[DesignSpec, dict[str, Any] | None]:
    """The run's design as its journal keeps it, and its claim families, fixed before the first
    trial. The decisive design is completed here: its first look, the number of potential
    looks and the arms' allocation priors come from the committed rates
    (gpurepro.analyze.planning.plan_decisive)."""
    design = request.design
    # A checked declaration of deterministic outcomes spends its bound of the run's alpha; the
    # design spends the rest over its looks (gpurepro.analyze.shortcut).
    declared = run_declaration(case, design)
    spent = float((declared or {}).get("bound", 0.0))
    if not design.decisive:
        if design.sequential and spent:
            design = design.with_alpha(design.alpha - spent)
        return design, claim_families(case, plan, request, root, design)
    from .planning import plan_decisive  # numpy, scipy: the decisive design needs them

    return plan_decisive(case, plan, design.alpha - spent, int(design.max_trials or 0),
                         asdict(request.budget), request.jobs, root, workers=_cpus(),
                         spending=design.spending or "even",
                         supported_share=(0.5 if design.supported_share is None
                                          else design.supported_share),
                         horizon=design.horizon, gpu=gpu,
                         scope=request.scope, deterministic=declared,
                         priors_from=[root / p for p in request.priors_from] or None)


def run_declaration(case: Case, design: DesignSpec | None) -> dict[str, Any] | None:
    """The case's declaration of deterministic outcomes as a new run journals it: checked, its
    agreeing trials and bound set for the run's alpha (the one asked for, or the default)
    (gpurepro.analyze.shortcut, standard library only); None where it declares none."""
    if not case.claims or not case.determinism():
        return None
    return declaration(case, float(design.alpha if design is not None else DEFAULT_ALPHA))


def claim_families(case: Case, plan: Plan, request: RunRequest, root: Path,
                   design: DesignSpec | None = None) -> dict[str, Any] | None:
    """The run's confirmatory and exploratory claims, fixed before its first trial
    (gpurepro.analyze.decidability); None for a case without claims. ``design``: the
    design as the run journals it (its alpha less what a checked declaration spends)."""
    if not case.claims:
        return None
    try:
        from .planning import assess, design_for  # numpy, scipy
    except ImportError as exc:
        return not_computed(f"not computed: needs the analysis packages ({exc.name}); "
                            f"pip install '{install_requirement()}'",
                            beside_main(case, plan, request.scope))
    design = design if design is not None else request.design
    declared = run_declaration(case, request.design)
    return assess(case, plan, design_for(design, declared), design.sequential,
                  request.trials_per_arm,
                  asdict(request.budget), request.jobs, root, workers=_cpus(),
                  scope=request.scope, priors_from=[root / p for p in request.priors_from] or None,
                  deterministic=declared)


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1
