"""Rate claims decided with trials as the unit, at a horizon fixed before the run: the test's
size holds whatever the crash process, its unresolved trials never help it, the design journals
the horizon, caps its arms' trials at it and chooses it from the committed trials."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from gpurepro.analyze import horizon
from gpurepro.analyze.allocate import ArmPrior, horizon_arms, rate_claims, time_limit
from gpurepro.analyze.allocation import Allocation
from gpurepro.analyze.claims import Decider, DecisiveDesign, Design, evidence, sentence
from gpurepro.analyze.horizon_design import candidates
from gpurepro.analyze.horizon_prior import prior_at
from gpurepro.case import Claim
from gpurepro.model.plan import PlannedTrial
from gpurepro.model.result import Trial

LOWER = Claim("ok-lower", arm="ok", kind="lower")
H = 1000.0


def _rec(arm: str, outcome: str, exposure: float) -> dict:
    return {"arm": arm, "outcome": outcome, "exposure": exposure,
            "detail": "SIGSEGV" if outcome == "crashed" else "budget used up"}


def test_each_trial_is_failed_reached_or_unresolved_against_the_horizon():
    records = [_rec("a", "crashed", 10), _rec("a", "crashed", H), _rec("a", "crashed", 5 * H),
               _rec("a", "survived", H), _rec("a", "survived", 3 * H), _rec("a", "hung", 20),
               _rec("a", "survived", 999), _rec("a", "invalid", 0), _rec("b", "crashed", 1)]
    c = horizon.counts(records, "a", ("crashed",), H)
    # A failure past the horizon reached it; a hang and a short survivor are unresolved; an
    # invalid trial is no evidence.
    assert (c.failed, c.reached, c.unresolved, c.n, c.failures) == (2, 3, 2, 7, 3)


def _dense_sup(x1: int, n1: int, x2: int, n2: int) -> float:
    """Boschloo's one-sided p by brute force: the Fisher p of every table as the statistic, its
    tail's probability maximized over a fine grid of the common share."""
    def fisher(a: int, b: int) -> float:
        return float(sps.hypergeom.cdf(a, n1 + n2, a + b, n1))
    t_obs = fisher(x1, x2)
    tail = np.array([[fisher(a, b) <= t_obs * (1 + 1e-9) for b in range(n2 + 1)]
                     for a in range(n1 + 1)], dtype=float)
    grid = np.linspace(0, 1, 4001)
    p1 = sps.binom.pmf(np.arange(n1 + 1)[:, None], n1, grid[None, :])
    p2 = sps.binom.pmf(np.arange(n2 + 1)[:, None], n2, grid[None, :])
    return float(np.einsum("ag,bg,ab->g", p1, p2, tail).max())



def test_records_with_one_more_trial_count_as_the_same_list_copied():
    """The allocation weighs a trial to come as the records with it appended (tally.WithTrial,
    not copied): each arm's evidence and counts equal those of the copied list, for a trial of
    the arm, of another arm and one that is no evidence, and after the records grew."""
    from gpurepro.analyze.tally import WithTrial, evidence_of

    records = [_rec("a", "crashed", 10), _rec("b", "survived", H), _rec("a", "survived", 0.1),
               _rec("a", "invalid", 0)]
    for trial in (_rec("a", "crashed", 0.3), _rec("b", "crashed", 2 * H), _rec("a", "invalid", 0),
                  _rec("a", "survived", H)):
        viewed, copied = WithTrial(records, trial), [*records, trial]
        assert list(viewed) == copied and len(viewed) == len(copied)
        assert viewed[-1] is trial and viewed[1] is records[1] and viewed[1:3] == copied[1:3]
        for arm in ("a", "b", "c"):
            assert list(evidence_of(viewed, arm)) == list(evidence_of(copied, arm))
            assert (horizon.counts(viewed, arm, ("crashed",), H)
                    == horizon.counts(copied, arm, ("crashed",), H))
        records.append(trial)  # the same list, longer: counted anew
        assert horizon.counts(records, "a", ("crashed",), H) == horizon.counts(
            list(records), "a", ("crashed",), H)

@pytest.mark.parametrize("x1,n1,x2,n2", [(0, 3, 12, 12), (0, 3, 11, 12), (1, 4, 9, 10), (0, 2, 5, 6)])
def test_scipys_boschloo_p_is_the_supremum_over_the_common_share(x1, n1, x2, n2):
    got = horizon.p_lower(horizon.HorizonCounts(x1, n1 - x1, 0, x1, 0.0),
                          horizon.HorizonCounts(x2, n2 - x2, 0, x2, 0.0))
    assert got == pytest.approx(_dense_sup(x1, n1, x2, n2), rel=1e-3)


@pytest.mark.parametrize("n1,n2", [(3, 12), (5, 8), (4, 16)])
def test_the_tests_size_holds_at_every_common_share(n1, n2):
    # Exact: under any crash process the trials' answers are Bernoulli with one share q per arm;
    # at q equal in both arms the chance of p <= level is at most the level, for every q.
    level = 0.01
    rejects = [(a, b) for a in range(n1 + 1) for b in range(n2 + 1)
               if horizon.p_lower(horizon.HorizonCounts(a, n1 - a, 0, a, 0.0),
                                  horizon.HorizonCounts(b, n2 - b, 0, b, 0.0)) <= level]
    assert rejects, "the test can reject"
    q = np.linspace(0.001, 0.999, 200)
    size = sum(sps.binom.pmf(a, n1, q) * sps.binom.pmf(b, n2, q) for a, b in rejects)
    assert np.all(size <= level * (1 + 1e-6))


def test_unresolved_trials_count_against_the_side_tested():
    ref = horizon.HorizonCounts(10, 0, 0, 10, 0.0)
    clean = horizon.HorizonCounts(0, 3, 0, 0, 0.0)
    short = horizon.HorizonCounts(0, 3, 1, 0, 0.0)  # one more trial, stopped short of the horizon
    assert horizon.p_lower(short, ref) > horizon.p_lower(clean, ref)
    # ... and a reference trial stopped short is counted as having reached the horizon.
    ref_short = horizon.HorizonCounts(10, 0, 1, 10, 0.0)
    assert horizon.p_lower(clean, ref_short) > horizon.p_lower(clean, ref)


def test_the_size_holds_under_a_heavy_tailed_process_where_the_constant_rate_test_does_not():
    # Both arms crash as one Lomax (gamma-frailty) process: the constant-rate test of one long
    # survivor against many short crashes decides falsely far above its level; the horizon
    # test does not.
    rng = np.random.default_rng(7)
    level, runs, n_ref, n_arm = 0.01, 1000, 12, 2
    false_horizon = false_rate = 0
    for _ in range(runs):
        ref = sps.lomax.rvs(0.7, scale=1000, size=n_ref, random_state=rng)
        arm = sps.lomax.rvs(0.7, scale=1000, size=n_arm, random_state=rng)
        recs = ([_rec("baseline", "crashed", x) if x <= 20 * H else _rec("baseline", "survived", 20 * H) for x in ref]
                + [_rec("ok", "crashed", x) if x <= 20 * H else _rec("ok", "survived", 20 * H) for x in arm])
        capped = ([_rec("baseline", "crashed", x) if x <= H else _rec("baseline", "survived", H) for x in ref]
                  + [_rec("ok", "crashed", x) if x <= H else _rec("ok", "survived", H) for x in arm])
        false_rate += evidence(LOWER, "baseline", recs, ("crashed",), 1.0).p_supported <= level
        false_horizon += evidence(LOWER, "baseline", capped, ("crashed",), 1.0,
                                  horizon_at=H).p_supported <= level
    se = math.sqrt(level * (1 - level) / runs)
    assert false_horizon / runs <= level + 3 * se
    assert false_rate / runs > level + 3 * se


def test_equivalence_is_decided_only_with_many_trials_and_never_from_few():
    few = horizon.equivalence_ps(horizon.HorizonCounts(2, 2, 0, 2, 0.0),
                                 horizon.HorizonCounts(2, 2, 0, 2, 0.0), 4.0)
    many = horizon.equivalence_ps(horizon.HorizonCounts(100, 100, 0, 100, 0.0),
                                  horizon.HorizonCounts(100, 100, 0, 100, 0.0), 4.0)
    assert few[0] > 0.05 and many[0] < 1e-6
    apart = horizon.equivalence_ps(horizon.HorizonCounts(2, 198, 0, 2, 0.0),
                                   horizon.HorizonCounts(180, 20, 0, 180, 0.0), 4.0)
    assert apart[1] < 1e-6 and apart[0] == 1.0


def test_a_design_journals_its_horizon_and_one_without_it_decides_as_before():
    d = DecisiveDesign(alpha=0.05, max_trials=25, first_look=20, total=100, spending="halving",
                       supported_share=0.9, horizon=33402.0)
    described = d.describe()
    assert described["rate_test"] == "trials_to_horizon" and described["horizon"] == 33402.0
    assert "horizon of 33402" in described["method"]
    assert Design.from_description(described) == d
    old = DecisiveDesign(alpha=0.05, max_trials=25, first_look=20, total=100)
    assert "horizon" not in old.describe() and "rate_test" not in old.describe()
    assert Design.from_description(old.describe()).horizon is None


def _decided(design: Design, records: list[dict]) -> dict:
    decider = Decider([LOWER], "baseline", design, ("crashed",), 1e6, ["baseline", "ok"])
    decider.final(records)
    return decider.decisions["ok-lower"]


def test_the_decider_takes_the_horizon_test_where_the_design_has_one():
    records = ([_rec("baseline", "crashed", 500.0) for _ in range(12)]
               + [_rec("ok", "survived", H) for _ in range(3)])
    with_h = _decided(Design(alpha=0.05, horizon=H), records)
    assert with_h["test"] == horizon.TEST and with_h["decision"] == "supported"
    assert with_h["numbers"]["arm"]["reached"] == 3
    without = _decided(Design(alpha=0.05), records)
    assert without["test"] == "exact conditional rate test"


def test_the_sentence_names_shares_before_the_horizon_not_rates():
    records = ([_rec("baseline", "crashed", 500.0) for _ in range(11)] + [_rec("baseline", "survived", 33402.0)]
               + [_rec("ok", "survived", 33402.0) for _ in range(3)])
    rec = _decided(Design(alpha=0.05, horizon=33402.0), records)
    claim = Claim("ok-lower", arm="ok", kind="lower",
                  supported="{arm}: {rate} against {reference_rate} ({ratio_name} {ratio}, 95% CI {ratio_ci}).")
    text = sentence(claim, "baseline", rec, 1e6, "cycles", 0.05)
    assert "0 of 3 trials failed before 33,402 cycles against 11 of 12 trials failed before 33,402 cycles" in text
    assert "ratio of the shares failing before 33,402 cycles 0" in text
    assert "rate ratio" not in text and horizon.TEST in text


def test_an_undecided_horizon_claim_says_how_many_more_trials_would_decide_it():
    records = ([_rec("baseline", "crashed", 500.0) for _ in range(4)]
               + [_rec("ok", "survived", H)])
    decider = Decider([LOWER], "baseline", Design(alpha=0.05, horizon=H), ("crashed",), 1e6,
                      ["baseline", "ok"])
    decider.final(records)
    rec = decider.decisions["ok-lower"]
    assert rec["decision"] == "not_decided"
    text = sentence(LOWER, "baseline", rec, 1e6, "cycles", 0.05)
    assert "the present trials of both arms" in text


def _trials(exposures: list[float], survivors: list[float] = ()) -> list[dict]:
    return ([_rec("x", "crashed", x) for x in exposures]
            + [_rec("x", "survived", x) for x in survivors])


def test_a_prior_at_the_horizon_is_the_kaplan_meier_chance_and_the_capped_time():
    trials = _trials([100, 200, 300, 400], survivors=[1000, 1000, 1000, 1000])
    p = prior_at(trials, 250.0, speed=100.0, overhead_s=0.5)
    assert p.per_trial and p.budget == 250.0
    assert p.causes == (("crashed", "SIGSEGV", pytest.approx(0.25)),)
    # Mean exposure reached: 100 at survival 1, 100 at 7/8, 50 at 6/8.
    assert p.seconds == pytest.approx(0.5 + (100 + 100 * 7 / 8 + 50 * 6 / 8) / 100)
    never = prior_at(_trials([], survivors=[5000, 5000]), 250.0, speed=50.0, overhead_s=0.2)
    assert never.causes == () and never.seconds == pytest.approx(0.2 + 5.0)


def test_candidates_lie_just_past_each_failure_and_within_reach():
    hs = candidates(_trials([2040, 4090, 4090, 16370, 90000]), 50_000, ("crashed",))
    assert hs == [math.ceil(2040 * 1.02), math.ceil(4090 * 1.02), math.ceil(16370 * 1.02)]


def test_the_horizon_arms_are_those_of_rate_claims_on_exposure():
    claims = [Claim("a", arm="a", kind="lower"), Claim("b", arm="b", kind="higher", reference="c"),
              Claim("t", arm="t", kind="lower", unit="trial"),
              Claim("o", arm="o", kind="outcome", outcome="crashed")]
    assert [c.name for c in rate_claims(claims)] == ["a", "b"]
    assert horizon_arms(claims, "base") == ["a", "base", "b", "c"]


def test_the_allocation_caps_every_trial_of_a_horizon_arm_with_a_time_limit():
    claims = [LOWER, Claim("as-filed-crashes", arm="as-filed", kind="outcome", outcome="crashed")]
    decider = Decider(claims, "baseline", DecisiveDesign(alpha=0.05, max_trials=5, first_look=4,
                                                         total=15, horizon=H),
                      ("crashed",), 1e6, ["baseline", "ok", "as-filed"])
    prior = ArmPrior((("crashed", "SIGSEGV", 0.9),), H, 1.0, 500.0, 0.2, per_trial=True)
    priors = {a: prior.to_json() for a in ("baseline", "ok", "as-filed")}
    alloc = Allocation(decider, priors, 5, "baseline", duration_s=20.0)
    order = [PlannedTrial(i, a, r) for i, (a, r) in enumerate(
        [(a, r) for r in range(5) for a in ("baseline", "ok", "as-filed")])]
    seen = {}
    records: list[dict] = []
    for _ in range(6):
        pick = alloc.next(records, [t for t in order if t.index not in {r["index"] for r in records}])
        assert pick is not None
        seen[pick.trial.arm] = pick
        records.append({**_rec(pick.trial.arm, "survived", H), "index": pick.trial.index})
    for arm in ("baseline", "ok"):
        if arm in seen:
            assert seen[arm].max_exposure == 1000
            assert seen[arm].max_seconds == time_limit(1000, prior, 20.0) == math.ceil(1.5 * 2 + 0.2 + 1)
    if "as-filed" in seen:
        assert seen["as-filed"].max_exposure is None and seen["as-filed"].max_seconds is None


def _doc(exposures: list[float], horizon_at: float) -> list[Trial]:
    """The baseline trials of a run with a horizon: a failure at each exposure up to it, and a
    survivor at the horizon for each beyond it."""
    return [Trial.of(_rec("baseline", "crashed", x) if x <= horizon_at
                     else _rec("baseline", "survived", horizon_at)) for x in exposures]


def test_the_verdict_of_a_run_with_a_horizon_says_whether_its_baseline_rejects_a_constant_rate():
    from gpurepro.analyze.verdict import model_sentence
    from gpurepro.case import load_case
    from tests.conftest import ROOT

    case = load_case("tile_unload_race", ROOT)
    rng = np.random.default_rng(3)
    heavy = model_sentence(case, _doc(list(sps.weibull_min.rvs(0.5, scale=5000, size=60,
                                                                random_state=rng)), 40000.0), 40000.0)
    flat = model_sentence(case, _doc(list(rng.exponential(5000, size=60)), 40000.0), 40000.0)
    for text in (heavy, flat):
        assert text.startswith("The rate claims do not assume a constant failure rate")
        assert "at most 40,000 cycles" in text
    assert "reject a constant rate" in heavy and "do not reject" not in heavy
    assert "descriptions, not as tests" in heavy
    assert "do not reject a constant rate" in flat
    few = model_sentence(case, _doc([100.0], 40000.0), 40000.0)
    assert "cannot test the constant-rate model" in few


def _gpu_doc(gpu: str, jobs: int, complete: bool, trials: list[dict]) -> dict:
    return {"environment": {"gpu": {"gpus": [{"name": gpu}]}},
            "plan": {"options": {"jobs": jobs}}, "completion": {"complete": complete},
            "trials": trials}


def test_a_horizon_is_chosen_from_the_trials_of_every_complete_run_on_the_same_gpu_model(
        tmp_path, monkeypatch):
    """Issue 45: the baseline's chance of failing before a horizon moves between machines, so
    the horizon's estimate pools the complete runs on the run's GPU model at its concurrency,
    not the newest document alone."""
    import json
    import types

    from gpurepro.analyze.horizon_design import HorizonChoice, pooled_trials

    monkeypatch.setenv("GPUREPRO_COMMIT", "0" * 40)  # the files are the committed ones
    folder = tmp_path / "results" / "race"
    folder.mkdir(parents=True)
    base = [_rec("baseline", "crashed", 100.0), _rec("baseline", "survived", 900.0),
            _rec("baseline", "harness_error", 5.0), _rec("fix", "survived", 900.0)]
    docs = {"20261205T000000Z-a_h100.json": _gpu_doc("H100", 1, True, base),
            "20261206T000000Z-b_h100.json": _gpu_doc("H100", 1, True, base[:1]),
            "20261206T000000Z-c_h100_two.json": _gpu_doc("H100", 2, True, base),
            "20261206T000000Z-d_h100_stopped.json": _gpu_doc("H100", 1, False, base),
            "20261207T000000Z-e_h200.json": _gpu_doc("H200", 1, True, base)}
    for name, doc in docs.items():
        (folder / name).write_text(json.dumps(doc))
    case = types.SimpleNamespace(name="race")
    pooled = pooled_trials(case, tmp_path, ["baseline", "fix"], 1, "H100")
    assert pooled.documents == ("results/race/20261206T000000Z-b_h100.json",
                                "results/race/20261205T000000Z-a_h100.json")
    assert [t["outcome"] for t in pooled.trials["baseline"]] == ["crashed", "crashed", "survived"]
    assert len(pooled.trials["fix"]) == 1
    anywhere = pooled_trials(case, tmp_path, ["baseline"], 1, None)
    assert len(anywhere.documents) == 3 and len(anywhere.trials["baseline"]) == 5
    said = HorizonChoice(101.0, 3.0, ((101.0, 3.0, True),), pooled).to_json()
    assert said["trials_from"] == list(pooled.documents) and said["gpu"] == "H100"


def test_a_horizon_leaves_half_of_an_arms_trials_to_chance():
    """Issue 45: a horizon whose plan at expected outcomes needs nearly all of an arm's trials
    decides in about half of its runs (the first H100 horizon planned 60 s and took 519 s); the
    one chosen gives no arm more than HEADROOM of them, and the fastest that does not is kept
    only where none does."""
    import json

    from gpurepro.analyze.horizon_design import HEADROOM, PooledTrials, choose_horizon
    from gpurepro.analyze.known_rates import plan_for
    from gpurepro.case.load import load_case

    root = Path(__file__).resolve().parents[2]
    case = load_case("tile_unload_race", root)
    claims = [c for c in case.claims if c.name == "one-thread"]
    folder = root / "results" / "tile_unload_race"
    docs = ["20261205T101709Z-3d06d7_NVIDIA-H100-80GB-HBM3_redacted.json",
            "20261207T095746Z-f669e3_NVIDIA-H100-80GB-HBM3_redacted.json"]
    trials: dict[str, list[dict]] = {"baseline": [], "one-thread": []}
    for name in docs:
        for t in json.loads((folder / name).read_text())["trials"]:
            if t["arm"] in trials and t["outcome"] in ("crashed", "survived"):
                trials[t["arm"]].append(t)
    prior = ArmPrior((("crashed", "SIGSEGV", 0.5),), 20000.0, 2.0, 10000.0, 0.5, per_trial=True)
    priors = {"baseline": prior, "one-thread": prior}
    pooled = PooledTrials(trials, tuple(docs), "NVIDIA H100 80GB HBM3")
    chosen = {}
    for cap in (25,):
        picked = choose_horizon(case, claims, trials, priors, 0.05, cap, 0.5, 20.0, pooled)
        assert picked is not None
        choice, at = picked
        plan = plan_for(case, claims, at, {}, 0.05, cap, 0.5, horizon=choice.horizon)
        roomy = [h for h, _, r in choice.tried if r]
        most = max(plan["trials"].values())
        assert (most <= HEADROOM * cap) == bool(roomy)
        assert plan["reached"] and choice.horizon in (roomy or [choice.horizon])
        chosen[cap] = choice
    assert chosen[25].to_json()["trials_from"] == docs
    # a faster horizon (one just past the 4,096-module cluster) needs nearly every trial
    assert any(s < chosen[25].seconds for _, s, r in chosen[25].tried if not r)


def test_the_plan_names_the_horizon_its_rate_claims_are_decided_at():
    from gpurepro.cli.plan import design_line
    from gpurepro.model.design import DesignSpec
    plan = None  # a sequential design's line names no trial of the plan
    spec = DesignSpec.from_json({"design": "decisive", "alpha": 0.05, "max_trials": 25,
                                 "horizon": 33402.0, "first_look": 26})
    line = design_line(spec, plan)
    assert "before 33,402" in line and "first look after 26" in line
    assert "before" not in design_line(DesignSpec.from_json(
        {"design": "decisive", "alpha": 0.05, "max_trials": 25, "first_look": 26}), plan)
