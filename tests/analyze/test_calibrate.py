"""`gpurepro calibrate`: the whole decision pipeline simulated on a case's design holds alpha,
and a decider that does not split alpha over its looks is caught by the same simulation."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import statistics
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from gpurepro.analyze import calibrate as cal
from gpurepro.analyze import simulate as sim
from gpurepro.analyze.claims import DecisiveDesign, Design
from gpurepro.analyze.recorded import RecordedRun
from gpurepro.case import Claim, load_case
from gpurepro.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fixtures" / "fake_case" / "manifest.py"
RUNS = 200


def _trial(arm, failed, exposure, detail="SIGSEGV", outcome="crashed"):
    # 2000 units of exposure a second: a failing trial lasts as long as its exposure took.
    return {"arm": arm, "outcome": outcome if failed else "survived", "exposure": exposure,
            "detail": detail if failed else "budget used up",
            "duration_s": exposure / 2000 if failed else 1.0}


def _document(path: Path) -> Path:
    """A result document for the fake case's claim arms: crash fails in 8 of 10 trials, abort
    in 7, ok never; cuda-error ends as CUDA_ERROR_LAUNCH_FAILED in 9."""
    trials = []
    for i in range(10):
        trials += [_trial("crash", i < 8, 300 + 100 * i if i < 8 else 2000),
                   _trial("ok", False, 2000),
                   _trial("abort", i < 7, 400 + 100 * i if i < 7 else 2000, "SIGABRT"),
                   _trial("cuda-error", i < 9, 50 if i < 9 else 2000, "CUDA_ERROR_LAUNCH_FAILED",
                          "cuda_error")]
    path.write_text(json.dumps({"trials": trials,
                                "plan": {"options": {"budget": {"duration_s": 1.0, "max_exposure": 0}}}}))
    return path


def _limit(alpha: float, runs: int) -> float:
    return alpha + 2 * math.sqrt(alpha * (1 - alpha) / runs)


# The scenarios these tests look at: the global null at the run's own rates and the observed
# effects (the arm nulls, crash processes and margins are tests/analyze/test_calibrate_scenarios.py's).
SCENARIOS = ("--scenarios", "null,observed", "--processes", "poisson")


def _cli(*argv: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["calibrate", *argv, *SCENARIOS, "--json", "--workers", "1"]) == 0
    return json.loads(out.getvalue())


def test_fake_case_holds_alpha_and_prints_the_fields(tmp_path):
    doc = _document(tmp_path / "result.json")
    r = _cli(str(FAKE), "--from", str(doc), "--runs", str(RUNS), "--seed", "3",
             "--until-decided", "--max-trials", "10", "--look-every", "5")
    for key in ("runs", "alpha", "family_wise_false_claim_rate", "family_wise_false_claim_rate_se",
                "power", "design", "rates_from", "seed"):
        assert key in r
    assert (r["runs"], r["seed"], r["alpha"]) == (RUNS, 3, 0.05)
    assert r["design"]["looks"] == 2 and r["design"]["max_trials"] == 10
    assert r["family_wise_false_claim_rate"] <= _limit(0.05, RUNS) and r["holds_alpha"]
    assert set(r["power"]) == {"ok-survives", "cuda-error-named", "abort-like-crash", "abort-lower"}
    # ok never failed in its 10 trials (20000 units of exposure) against crash's 8 of 10: its
    # power is simulated at the one-sided 95% upper bound of its rate, 3.0 / 20000, not at 0
    # (where it was 1.00), and a tenth-of-the-run's maximum of 10 trials decides it less often.
    assert r["rates_from"]["arms"]["ok"]["ended"] == {}
    bounded = r["observed"]["bounded"]
    assert set(bounded) == {"ok"} and bounded["ok"]["n_valid"] == 10
    assert bounded["ok"]["rate"] == pytest.approx(-math.log(0.05) / 20000)
    assert bounded["ok"]["outcome"] == "crashed"
    assert 0.2 < r["power"]["ok-survives"] < 0.9
    assert r["observed"]["claims"]["ok-survives"]["true"] == "supported"
    assert r["null"]["mean_trials"] <= 40


def test_same_numbers_whatever_the_workers(tmp_path):
    case = load_case(FAKE, ROOT)
    rates = cal.load_models(case, ROOT, [_document(tmp_path / "result.json")], sim.claim_arms(case))
    design = Design(alpha=0.05, step=5, max_trials=10)
    one = cal.calibrate(case, rates, 60, 7, design, True, 10, workers=1)
    two = cal.calibrate(case, rates, 60, 7, design, True, 10, workers=2)
    assert one["null"] == two["null"] and one["observed"] == two["observed"]


class UnsplitDesign(Design):
    """Broken on purpose: every look at the whole alpha, not alpha / looks."""

    @property
    def alpha_per_look(self) -> float:
        return self.alpha


def test_a_decider_that_does_not_split_alpha_over_looks_is_caught(tmp_path):
    # One claim (no Holm to hide behind), twenty looks: every look at alpha repeats the test
    # twenty times on growing data and the false-claim rate climbs well above alpha.
    case = dataclasses.replace(load_case(FAKE, ROOT), claims=[Claim("ok-lower", arm="ok", kind="lower")])
    rates = cal.load_models(case, ROOT, [_document(tmp_path / "result.json")], sim.claim_arms(case))
    runs = 400

    def rate(design: Design) -> float:
        r = cal.calibrate(case, rates, runs, 1, design, True, 20, scenarios=("null",))
        return r["family_wise_false_claim_rate"]

    right = rate(Design(alpha=0.05, step=1, max_trials=20))
    broken = rate(UnsplitDesign(alpha=0.05, step=1, max_trials=20))
    assert right <= _limit(0.05, runs)
    assert broken > _limit(0.05, runs) + 0.02, (right, broken)


class UnsplitDecisive(DecisiveDesign):
    """A decisive design that spends all of alpha at every look (no Bonferroni over looks)."""

    def level_at(self, looks_taken: int, evidence_trials: int) -> float:
        return self.alpha


def test_the_decisive_design_that_halves_its_alpha_holds_it_and_an_unsplit_one_is_caught(tmp_path):
    # One claim, fourteen looks of the decisive design (its allocation and survivor caps), alpha
    # halved look by look after the first, 0.9 of the claim's level to its stated direction
    # (new runs' defaults): the family-wise rate stays at or below alpha; the same looks each at
    # alpha are caught.
    case = dataclasses.replace(load_case(FAKE, ROOT), claims=[Claim("ok-lower", arm="ok", kind="lower")])
    rates = cal.load_models(case, ROOT, [_document(tmp_path / "result.json")], sim.claim_arms(case))
    runs = 400

    def rate(cls: type[DecisiveDesign]) -> float:
        design = cls(alpha=0.05, max_trials=20, first_look=2, total=40, growth=1.2,
                     spending="halving", supported_share=0.9)
        assert design.looks == 14
        r = cal.calibrate(case, rates, runs, 1, design, True, 20, scenarios=("null",))
        return r["family_wise_false_claim_rate"]

    right, broken = rate(DecisiveDesign), rate(UnsplitDecisive)
    assert right <= _limit(0.05, runs)
    assert broken > _limit(0.05, runs) + 0.02, (right, broken)


# Each simulated run of the tile main job's design costs about 0.15 CPU seconds: the fast tier
# simulates 30 (the same assertions, at 30 runs' limit), the slow tier 200.
@pytest.mark.parametrize("runs", [30, pytest.param(RUNS, marks=pytest.mark.slow)])
def test_the_tile_main_job_with_new_defaults_holds_alpha_and_decides_the_main_question(runs):
    """The newest committed tile_unload_race main job's design (its looks, families, priors and
    rates), with alpha halved over its later looks and 0.9 of each claim's level to its stated
    direction: what a new run of it does by default."""
    doc = ROOT / "results" / "tile_unload_race" / "20261205T101709Z-3d06d7_NVIDIA-H100-80GB-HBM3_redacted.json"
    r = _cli("tile_unload_race", "--design-of", str(doc), "--alpha-spending", "halving",
             "--supported-share", "0.9", "--runs", str(runs), "--seed", "1")
    assert r["runs"] == runs
    assert r["design"]["spending"] == "halving" and sum(r["design"]["alpha_at_looks"]) <= 0.05 + 1e-12
    assert r["design"]["supported_share"] == 0.9
    assert r["family_wise_false_claim_rate"] <= _limit(0.05, runs)
    case = load_case("tile_unload_race", ROOT)
    bounded = set(r["observed"]["bounded"])
    # Its arms that never failed (one to three survivor trials each) are simulated at the upper
    # bound of their rates: their claims' power is what those few trials can promise.
    assert {"one-thread", "serialized", "never-unload", "lock-unload-launch"} <= bounded
    claims = {c.name: c for c in case.claims}
    rest = [n for n in case.main_question if claims[n].arm not in bounded]
    assert rest and all(r["power"][name] >= 0.9 for name in rest), r["power"]
    assert all(r["power"][n] < 0.95 for n in ("one-thread", "serialized", "never-unload"))


def _models(case, rate=1e-3):
    arm = sim.ArmModel((sim.Cause("crashed", "SIGSEGV", rate),), 2000.0, 1000.0, 2.0, 0.1)
    return sim.Models("exposure", {a: arm for a in sim.claim_arms(case)}, [], {})


def test_null_holds_outcome_claims_above_share_0_at_their_share():
    case = load_case(FAKE, ROOT)
    claim = next(c for c in case.claims if c.kind == "outcome")
    assert claim.share > 0
    models, left_out = cal.hold_outcome_claims(case, case.claims, sim.null_of(case, _models(case)),
                                               "exposure")
    assert not left_out
    assert cal.truth(claim, None, models, "exposure", case.failure_outcomes) is None  # at the share
    equivalent = next(c for c in case.claims if c.kind == "equivalent")
    assert cal.truth(equivalent, case.baseline, models, "exposure", case.failure_outcomes) == "supported"
    lower = next(c for c in case.claims if c.kind == "lower")
    assert cal.truth(lower, case.baseline, models, "exposure", case.failure_outcomes) is None


def test_an_outcome_claim_with_share_0_stays_active_under_the_null():
    # "It happens at all": true wherever its outcome occurs, so it is decided early and frees
    # Holm's thresholds for the others, as in a real run; never held at (never) its share.
    case = load_case(FAKE, ROOT)
    claim = Claim("crash-crashes", arm="crash", kind="outcome", outcome="crashed", share=0.0)
    models, left_out = cal.hold_outcome_claims(case, [claim], sim.null_of(case, _models(case)),
                                               "exposure")
    assert not left_out and cal.truth(claim, None, models, "exposure", case.failure_outcomes) == "supported"


def test_hang_claims_count_their_own_failures():
    # Hangs are a competing end: a claim about them counts hangs, the case's crash claims do not.
    crash_and_hang = sim.ArmModel((sim.Cause("crashed", "SIGSEGV", 1e-3), sim.Cause("hung", "", 1e-4)),
                                  2000.0, 1000.0, 2.0, 0.1)
    crash_only = sim.ArmModel((sim.Cause("crashed", "SIGSEGV", 1e-3),), 2000.0, 1000.0, 2.0, 0.1)
    models = {"crash": crash_only, "ok": crash_and_hang}
    hangs_more = Claim("ok-hangs-more", arm="ok", reference="crash", kind="higher", failures=("hung",))
    crashes_less = Claim("ok-crashes-less", arm="ok", reference="crash", kind="lower")
    assert cal.truth(hangs_more, "crash", models, "exposure", ("crashed",)) == "supported"
    assert cal.truth(crashes_less, "crash", models, "exposure", ("crashed",)) is None


def test_concentrated_claims_are_simulated_from_the_strata():
    # Failures that fall inside a stratum twice as often as its share of exposure: true under
    # the observed effects, no direction under the null, and decided by the simulated runs.
    case = dataclasses.replace(load_case(FAKE, ROOT),
                               strata={"early": lambda r, f: (0.0, False)},
                               claims=[Claim("crash-early", arm="crash", kind="concentrated",
                                             stratum="early")])
    arm = sim.ArmModel((sim.Cause("crashed", "SIGSEGV", 1e-3),), 4000.0, 1000.0, 4.0, 0.1,
                       {"early": (0.2, 0.6)})
    models = sim.Models("exposure", {"crash": arm}, [], {})
    assert cal.truth(case.claims[0], None, models.arms, "exposure", ("crashed",)) == "supported"
    assert cal.truth(case.claims[0], None, sim.null_of(case, models), "exposure", ("crashed",)) is None
    r = cal.calibrate(case, models, 100, 2, Design(alpha=0.05), False, 20)
    assert r["power"]["crash-early"] > 0.5
    assert r["null"]["claims"]["crash-early"]["false"] <= _limit(0.05, 100)


def test_tile_unload_race_holds_alpha():
    case = load_case("tile_unload_race", ROOT)
    if not case.claims:
        pytest.skip("tile_unload_race declares no claims yet")
    r = _cli("tile_unload_race", "--runs", str(RUNS), "--seed", "1")
    assert r["family_wise_false_claim_rate"] <= _limit(0.05, RUNS)
    # Power for every claim whose arms the committed documents measured (arms added since, such
    # as the cuda-python ones, have no observed rates yet and are not simulated).
    measured = set(r["design"]["arms"])
    expected = {c.name for c in case.claims
                if c.arm in measured and (c.kind in ("outcome", "concentrated")
                                          or (c.reference or case.baseline) in measured)}
    assert r["rates_from"]["documents"] and set(r["power"]) == expected
    assert "control-cuda" in expected and "lock-unload-launch" in expected


# ---------------------------------------------------------------- truth: every bound and outcome


def _per_trial_arm(*causes):
    # Chances per trial (a wrong result is found at a trial's end); 1000 units a surviving trial.
    return sim.ArmModel(tuple(sim.Cause(o, d, p) for o, d, p in causes), 1000.0, 500.0, 2.0, 0.0,
                        per_trial=True)


WRONG = Claim("x-wrong", arm="x", kind="outcome", outcome="wrong_result", share=0.5)
NEVER_WRONG = Claim("x-never-wrong", arm="x", kind="outcome", outcome="wrong_result", share=0.5,
                    bound="below")
RIGHT = Claim("x-right", arm="x", kind="outcome", outcome="survived", share=0.5)


def test_truth_of_an_outcome_claim_follows_its_bound():
    wrong_mostly = {"x": _per_trial_arm(("wrong_result", "differs", 0.9))}
    right_mostly = {"x": _per_trial_arm(("wrong_result", "differs", 0.1))}
    assert cal.truth(WRONG, None, wrong_mostly, "exposure", ("wrong_result",)) == "supported"
    # "Fewer than half wrong": false where 9 in 10 are wrong, true where 1 in 10 is.
    assert cal.truth(NEVER_WRONG, None, wrong_mostly, "exposure", ("wrong_result",)) == "contradicted"
    assert cal.truth(NEVER_WRONG, None, right_mostly, "exposure", ("wrong_result",)) == "supported"


def test_truth_of_a_survived_claim_counts_the_trials_that_ran_their_budget():
    # No cause is "survived": a survivor is a trial that no cause ended within its budget.
    right_mostly = {"x": _per_trial_arm(("wrong_result", "differs", 0.1))}
    wrong_mostly = {"x": _per_trial_arm(("wrong_result", "differs", 0.9))}
    assert cal.truth(RIGHT, None, right_mostly, "exposure", ("wrong_result",)) == "supported"
    assert cal.truth(RIGHT, None, wrong_mostly, "exposure", ("wrong_result",)) == "contradicted"
    # In exposure: a crash rate that ends 1 - exp(-0.2) = 18% of the trials within the budget.
    rare = sim.ArmModel((sim.Cause("crashed", "SIGSEGV", 1e-4),), 2000.0, 1000.0, 2.0, 0.1)
    assert cal.p_matching(RIGHT, rare, "exposure") == pytest.approx(math.exp(-0.2))
    assert cal.truth(RIGHT, None, {"x": rare}, "exposure", ("crashed",)) == "supported"


def _share_drawn(model, mode, claim, n=4000):
    import numpy as np

    from gpurepro.analyze.claims import arm_counts

    rng = np.random.Generator(np.random.PCG64(7))
    records = [sim.draw(model, mode, rng, "x") for _ in range(n)]
    return arm_counts(records, "x", ("crashed",), claim).outcome_counts["matching"] / n


@pytest.mark.parametrize("model", [
    _per_trial_arm(("wrong_result", "differs", 0.8)),
    sim.ArmModel((sim.Cause("crashed", "SIGSEGV", 1e-3),), 2000.0, 1000.0, 2.0, 0.1),
], ids=["per-trial", "exposure"])
def test_the_null_holds_a_survived_claim_at_its_share(model):
    # Held, the arm's trials survive in exactly half of them (drawn, within 4 standard errors):
    # a trial that runs its budget is the survival the claim counts, never a second way to it.
    case = load_case(FAKE, ROOT)
    held, left_out = cal.hold_outcome_claims(case, [RIGHT], {"x": model}, "exposure")
    assert not left_out
    assert cal.p_matching(RIGHT, held["x"], "exposure") == pytest.approx(0.5)
    assert cal.truth(RIGHT, None, held, "exposure", case.failure_outcomes) is None
    assert abs(_share_drawn(held["x"], "exposure", RIGHT) - 0.5) < 4 * math.sqrt(0.25 / 4000)


def test_the_null_holds_a_below_bound_claim_at_its_share_even_where_no_other_failure_exists():
    # Every trial wrong at the baseline's chances and no other failure outcome to split them
    # with: the claimed end takes half the trials and the rest survive.
    case = dataclasses.replace(load_case(FAKE, ROOT), failure_outcomes=("wrong_result",))
    model = _per_trial_arm(("wrong_result", "differs", 1.0))
    held, left_out = cal.hold_outcome_claims(case, [NEVER_WRONG], {"x": model}, "exposure")
    assert not left_out
    assert cal.truth(NEVER_WRONG, None, held, "exposure", case.failure_outcomes) is None
    assert abs(_share_drawn(held["x"], "exposure", NEVER_WRONG) - 0.5) < 4 * math.sqrt(0.25 / 4000)


def test_truth_of_a_per_trial_rate_claim_compares_shares_of_failing_trials():
    # x fails at half ref's rate per unit of exposure but runs 8 times the budget: it fails in
    # more of its trials. A claim with unit="trial" is about that share.
    x = sim.ArmModel((sim.Cause("crashed", "SIGSEGV", 1e-3),), 4000.0, 1000.0, 4.0, 0.1)
    ref = sim.ArmModel((sim.Cause("crashed", "SIGSEGV", 2e-3),), 500.0, 1000.0, 0.5, 0.1)
    models = {"x": x, "ref": ref}
    higher = Claim("x-higher", arm="x", reference="ref", kind="higher", unit="trial")
    per_exposure = Claim("x-higher-rate", arm="x", reference="ref", kind="higher")
    assert cal.truth(higher, "ref", models, "exposure", ("crashed",)) == "supported"
    assert cal.truth(per_exposure, "ref", models, "exposure", ("crashed",)) == "contradicted"


def test_design_of_a_run_from_before_claims_and_of_one_without_baseline_trials():
    # Its looks journaled as trial counts, no max_trials: the last look is its maximum.
    old = ROOT / "results" / "tile_unload_race" / "20261130T000116Z_NVIDIA-H200_redacted.json"
    r = _cli("tile_unload_race", "--design-of", str(old), "--runs", "20", "--seed", "1")
    assert r["design"]["max_trials"] == 10 and r["family_wise_false_claim_rate"] <= 0.05 + 0.1
    # No valid trial of the baseline (every trial of that run unsupported): its design with the
    # committed results' rates, named; a case with no valid baseline trial committed anywhere
    # (tcgen05_alloc_order: no B300 has run it) says so in one line.
    none = ROOT / "results" / "tile_unload_race" / "20261130T001134Z_NVIDIA-H200_redacted.json"
    r = _cli("tile_unload_race", "--design-of", str(none), "--runs", "20", "--seed", "1")
    assert str(none.relative_to(ROOT)) not in r["rates_from"]["documents"]
    assert r["rates_from"]["documents"] and r["design"]["trials_per_arm"] == 2
    tcgen05 = ROOT / "results" / "tcgen05_alloc_order" / "20261130T000018Z_NVIDIA-H200_redacted.json"
    err = io.StringIO()
    from contextlib import redirect_stderr
    with redirect_stderr(err):
        status = main(["calibrate", "tcgen05_alloc_order", "--design-of", str(tcgen05), "--json",
                       "--workers", "1", *SCENARIOS])
    assert status == 2 and "valid trials of its baseline" in err.getvalue()


@pytest.mark.parametrize("design", [[], ["--until-decided", "--max-trials", "10", "--look-every", "5"]])
def test_text_mode_prints_every_design_it_simulates(tmp_path, design):
    """Without --json (what the README shows): the design in words, the family-wise rate and
    the power of every claim, for a fixed plan and the sequential design alike."""
    doc = _document(tmp_path / "result.json")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["calibrate", str(FAKE), "--from", str(doc), "--runs", "20", "--seed", "3",
                     "--workers", "1", *SCENARIOS, *design]) == 0
    text = out.getvalue()
    assert ("looks every 5 up to 10 trials" if design else "trials per arm") in text
    assert "family-wise false-claim rate under the global null:" in text
    assert all(f"  {name}" in text for name in ("ok-survives", "abort-lower"))


def test_text_mode_of_a_decisive_run_names_its_looks():
    """--design-of a committed decisive run in text mode: its look schedule, then the rates."""
    doc = ROOT / "results" / "tile_unload_race" / "20261202T162712Z-86c9b2_NVIDIA-H200_redacted.json"
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["calibrate", "tile_unload_race", "--design-of", str(doc), "--runs", "4",
                     "--workers", "1", *SCENARIOS]) == 0
    first = out.getvalue().splitlines()[0]
    looks = json.loads(doc.read_text())["plan"]["options"]["stopping"]["look_at"]
    assert f"looks at {', '.join(map(str, looks))} valid trials" in first


# ---------------------------------------------------------------- timed claims


def _timed_arm(log_mean: float, log_sd: float = 0.002) -> sim.ArmModel:
    return sim.ArmModel((), 20.0, 10.0, 2.0, 0.0, per_trial=True, log_time=(log_mean, log_sd))


@pytest.mark.parametrize(("ratio", "kind", "right"), [
    (1.10, "slower", "supported"), (1.01, "slower", "contradicted"),
    (1.01, "same", "supported"), (1.10, "same", "contradicted"), (0.97, "same", "contradicted"),
    (0.90, "faster", "supported"), (0.99, "faster", "contradicted"),
])
def test_truth_of_a_timed_claim_follows_the_ratio_of_geometric_means(ratio, kind, right):
    models = {"ref": _timed_arm(math.log(1e-4)), "x": _timed_arm(math.log(1e-4 * ratio))}
    claim = Claim("x-timed", arm="x", reference="ref", kind=kind, margin=0.02 if kind == "same" else 0.05)
    assert cal.truth(claim, "ref", models, "per_trial", ("wrong_result",)) == right


def _timed_document(path: Path, ratios: dict[str, float]) -> Path:
    """Twelve timed trials per arm, each arm's times spread by 0.2% around its ratio to 0.1 ms."""
    trials = [{"arm": arm, "outcome": "survived", "exposure": 400, "duration_s": 2.0,
               "detail": "budget used up",
               "observations": {"timing": {"values": [1e-4 * r * (1 + 0.002 * ((i % 5) - 2))]}}}
              for arm, r in ratios.items() for i in range(12)]
    path.write_text(json.dumps({"trials": trials, "plan": {"options": {"budget": {
        "duration_s": 30.0, "max_exposure": 0}}}}))
    return path


def test_timed_claims_are_simulated_from_the_runs_own_times(tmp_path):
    """fa3_wgmma_wait's timed claims on times like its H200 run's: decided under the observed
    effects, and under the global null (every arm at the baseline's times) at most alpha."""
    case = load_case("fa3_wgmma_wait", ROOT)
    ratios = {"overlap": 1.0, "overlap-again": 1.0, "serialized": 1.09, "ptxas-12-4-131": 1.095,
              "ptxas-12-5-82": 1.095, "ptxas-12-6-20": 0.994, "ptxas-12-6-85": 1.0,
              # The control through each release at the pinned release's control.
              "serialized-12-4-131": 1.09, "serialized-12-5-82": 1.09,
              "serialized-12-6-20": 1.09, "serialized-12-6-85": 1.09}
    doc = _timed_document(tmp_path / "timed.json", ratios)
    r = _cli("fa3_wgmma_wait", "--from", str(doc), "--runs", "100", "--seed", "2")
    timed = [c.name for c in case.claims if c.kind in ("slower", "faster", "same")]
    assert timed and all(r["power"][name] > 0.9 for name in timed), r["power"]
    assert r["family_wise_false_claim_rate"] <= _limit(0.05, 100)


def test_a_survivor_that_ends_on_its_own_is_modelled_at_its_own_time_and_one_run_out_at_the_budget():
    """fa3_wgmma_wait's trials stop after a fixed number of launches, about a second into a 30 s
    duration: the model takes their own exposure and seconds. tile_unload_race's survivors run
    out the duration: modelled at the budget, as before. A survivor the decisive design capped
    ended at its cap, not on its own, and does not count."""
    fa3 = ROOT / "results" / "fa3_wgmma_wait" / "20261205T093214Z-379cb7_NVIDIA-H100-80GB-HBM3_redacted.json"
    doc = json.loads(fa3.read_text())
    arms = sorted({t["arm"] for t in doc["trials"]})
    models = sim.models_from(load_case("fa3_wgmma_wait", ROOT), [RecordedRun.of(fa3, doc)], ROOT, arms)
    for arm in arms:
        own = statistics.median(t["duration_s"] for t in doc["trials"] if t["arm"] == arm)
        m = models.arms[arm]
        assert m.overhead_s + m.seconds == pytest.approx(own, rel=0.05), arm
        assert "own end" in models.summary[arm]["budget_from"]
    trials = [_trial("ok", False, 2000 * 20) | {"duration_s": 20.0} for _ in range(4)]
    short = [t | {"exposure": 300, "duration_s": 0.2, "max_exposure": 300} for t in trials]
    case = load_case(FAKE, ROOT)
    for ts in (trials, [*trials[:1], *short]):  # a capped majority: still the budget
        one = {"trials": ts, "plan": {"options": {"budget": {"duration_s": 20.0, "max_exposure": 0}}}}
        m = sim.models_from(case, [RecordedRun.of(Path("x.json"), one)], ROOT, ["ok"]).arms["ok"]
        assert m.budget == pytest.approx(2000 * 20) and m.seconds == pytest.approx(20.0)


def test_calibrate_names_the_arms_a_run_stopped_at_their_most_trials_with_a_claim_open(tmp_path):
    """Where an arm's maximum binds (a claim of it still open when it has run its most trials),
    calibrate says how often: there a larger maximum could buy a decision. The tile main job's
    design under its observed effects, its arms that never failed at the upper bounds of their
    rates: those arms (and the baseline they are compared with) do."""
    doc = _document(tmp_path / "result.json")
    tight = _cli(str(FAKE), "--from", str(doc), "--until-decided", "--max-trials", "2",
                 "--look-every", "1", "--runs", "50", "--seed", "1")
    assert tight["observed"]["stopped_at_most_trials"], tight["observed"]
    assert all(0 < v <= 1 for v in tight["observed"]["stopped_at_most_trials"].values())
    tile = ROOT / "results" / "tile_unload_race" / "20261205T110123Z-c78027_NVIDIA-H100-80GB-HBM3_redacted.json"
    r = _cli("tile_unload_race", "--design-of", str(tile), "--runs", "15", "--seed", "1")
    at_most = r["observed"]["stopped_at_most_trials"]
    assert at_most and set(at_most) <= set(r["observed"]["bounded"]) | {"baseline"}
    assert all(0 < v <= 1 for v in at_most.values())
    assert r["observed"]["mean_capped_survivors"] > 0
