"""The decisive design's first look is, of the candidates FIRST_LOOK_RULE names (multiples of
the expected-outcome look spanning the schedule's growth, and where a one-look design at the
first look's share of alpha decides), the one whose simulated runs have the shortest median
time; each candidate's median is journaled, and recomputing one gives the same number
(docs/statistics.md, "Where the first look falls").
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace

import pytest

from gpurepro.analyze.calibrate import load_models
from gpurepro.analyze.claims import Design
from gpurepro.analyze.designing import run_declaration, run_design
from gpurepro.analyze.planning import FIRST_LOOK_DECIDES, FIRST_LOOK_MARGIN, FIRST_LOOK_SPAN, assess
from gpurepro.case.load import load_case
from gpurepro.cli.args import check_arguments
from gpurepro.cli.parser import parser
from gpurepro.cli.plan import design_line
from gpurepro.run.session import new_plan
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # the tile main job's design, and one more simulation of it

H100 = "NVIDIA H100 80GB HBM3"


def test_the_tile_main_jobs_first_look_is_the_candidate_whose_simulated_runs_are_quickest():
    # As `python -m gpurepro plan tile_unload_race --gpu-model "NVIDIA H100 80GB HBM3" --seed 1`
    # designs it.
    case = load_case("tile_unload_race", ROOT)
    args = parser().parse_args(["plan", case.name, "--gpu-model", H100, "--seed", "1"])
    request = check_arguments(case, args, ROOT, {"available": False, "gpus": []})
    plan = new_plan(case, request)
    spec, families = run_design(case, plan, request, ROOT, H100)
    assert families is not None
    choice = spec.described["first_look_choice"]
    medians = {int(k): v for k, v in choice["simulated_median_s"].items()}
    expected = math.ceil(FIRST_LOOK_MARGIN * choice["expected_outcome_trials"])
    one_look = choice["one_look_first_look"]
    assert one_look == max(expected, choice["one_look_trials"])
    assert choice["chance"] >= FIRST_LOOK_DECIDES
    assert set(medians) == {math.ceil(expected * f) for f in FIRST_LOOK_SPAN} | {one_look}
    assert spec.first_look == choice["first_look"] == min(medians, key=lambda k: (medians[k], k))
    assert families["expected"]["seconds_median"] == medians[spec.first_look]
    # `plan` says how the look was set.
    assert (f"first look after {spec.first_look} trials: the quickest simulated median of the "
            f"first looks tried") in design_line(spec, plan)
    # The expected-outcome look's median, simulated again here on the same GPU model's rates,
    # is the one journaled.
    models = load_models(case, ROOT, None, list(plan.arms), request.jobs,
                         request.budget.duration_s, request.budget.max_exposure,
                         kind="decisive", gpu=H100)
    again = assess(case, plan, replace(Design.of(spec), first_look=expected), True,
                   int(spec.max_trials or 0), asdict(request.budget), request.jobs, ROOT,
                   workers=2, fixed_exploratory=families["exploratory"], scope=request.scope,
                   models=models, deterministic=run_declaration(case, request.design))
    assert again["expected"]["seconds_median"] == medians[expected]
