"""The decisive design's first look is where a one-look design at that look's share of alpha
decides (analyze.planning.FIRST_LOOK_DECIDES), never before the expected-outcome look; on the
tile main job's committed H100 rates its simulated run is quicker than with the expected-outcome
look alone, at which no simulated run stopped (docs/statistics.md, "Where the first look falls").
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace

import pytest

from gpurepro.analyze.claims import Design
from gpurepro.analyze.designing import run_declaration, run_design
from gpurepro.analyze.planning import FIRST_LOOK_DECIDES, FIRST_LOOK_MARGIN, assess
from gpurepro.case.load import load_case
from gpurepro.cli.args import check_arguments
from gpurepro.cli.parser import parser
from gpurepro.cli.plan import design_line
from gpurepro.run.session import new_plan
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # two simulations of 200 runs of the tile main job

H100 = "NVIDIA H100 80GB HBM3"


def test_the_tile_main_jobs_first_look_is_where_a_one_look_design_decides_and_its_run_is_quicker():
    # As `python -m gpurepro plan tile_unload_race --gpu-model H100 --seed 1` designs it.
    case = load_case("tile_unload_race", ROOT)
    args = parser().parse_args(["plan", case.name, "--gpu-model", H100, "--seed", "1"])
    request = check_arguments(case, args, ROOT, {"available": False, "gpus": []})
    plan = new_plan(case, request)
    spec, families = run_design(case, plan, request, ROOT, H100)
    assert families is not None
    choice = spec.described["first_look_choice"]
    expected = math.ceil(FIRST_LOOK_MARGIN * choice["expected_outcome_trials"])
    assert spec.first_look == max(expected, choice["one_look_trials"]) > expected
    assert choice["chance"] >= FIRST_LOOK_DECIDES
    # `plan` says how the look was set.
    assert (f"first look after {spec.first_look} trials: one look at half of alpha decides every "
            f"confirmatory claim in {choice['chance']:.0%}") in design_line(spec, plan)
    # The same design with the expected-outcome look: its simulated run takes longer.
    before = assess(case, plan, replace(Design.of(spec), first_look=expected), True,
                    int(spec.max_trials or 0), asdict(request.budget), request.jobs, ROOT,
                    workers=2, fixed_exploratory=families["exploratory"], scope=request.scope,
                    deterministic=run_declaration(case, request.design))
    assert families["expected"]["seconds_median"] < before["expected"]["seconds_median"]
