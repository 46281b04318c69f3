"""Progress: the wall time elapsed and the time left on every trial line, from the run's
expectation before its first trial and from the trials' own pace after; "unknown" where
nothing is known, never negative; on stderr, so stdout keeps a command's results."""

from __future__ import annotations

import io
import math
import subprocess
import sys
from types import SimpleNamespace

from gpurepro.model.plan import make_plan
from gpurepro.run.progress import Expectation, Progress, expectation_of, time_left
from gpurepro.run.schedule import trials_open
from tests.conftest import ROOT
from tests.headers import run_header

EXPECTED = Expectation(trials=196, seconds=1753)  # the tile case's decisive run, as journaled


def test_before_the_first_trial_the_expectation_is_shared_among_the_slots():
    one = time_left(0, 850, True, EXPECTED, slots=1, elapsed_s=0.0, ran_here=0)
    two = time_left(0, 850, True, EXPECTED, slots=2, elapsed_s=0.0, ran_here=0)
    assert one.seconds == 1753 and not one.at_most
    assert two.seconds == 1753 / 2


def test_after_trials_the_observed_pace_counts_the_trials_expected_to_remain():
    left = time_left(10, 840, True, EXPECTED, slots=1, elapsed_s=100.0, ran_here=10)
    assert left.seconds == 186 * 10.0 and not left.at_most


def test_a_run_past_its_expectation_gives_the_most_its_open_arms_may_still_take():
    left = time_left(200, 30, True, EXPECTED, slots=1, elapsed_s=1000.0, ran_here=200)
    assert left.seconds == 30 * 5.0 and left.at_most
    assert left.text() == "at most 0:02:30 left"


def test_nothing_known_is_unknown_and_nothing_left_is_zero():
    assert time_left(0, 6, False, None, 1, 0.0, 0).text() == "time left unknown"
    assert time_left(6, 0, False, None, 1, 3.0, 6).seconds == 0.0
    # A resumed run: its trials were timed by another harness; this one has timed none yet.
    assert time_left(4, 2, False, None, 1, 5.0, 0).seconds is None


def test_never_negative_or_infinite():
    for ran, to_run, elapsed, here in [(0, 5, 1e-300, 1), (3, 5, 1e308, 1), (500, 0, 10.0, 5)]:
        left = time_left(ran, to_run, True, EXPECTED, 1, elapsed, here)
        assert left.seconds is None or (math.isfinite(left.seconds) and left.seconds >= 0)


def test_only_a_computed_finite_expectation_is_read_from_the_header():
    def header(families):
        return run_header([], {"families": families})

    good = {"computed": True, "expected": {"trials": 196.0, "seconds_median": 1753.2}}
    assert expectation_of(header(good)) == Expectation(196.0, 1753.2)
    assert expectation_of(header({**good, "computed": False})) is None
    assert expectation_of(header({"computed": True, "expected": {"trials": 3, "seconds_median": math.inf}})) is None
    assert expectation_of(header({"computed": True, "expected": {"trials": 0, "seconds_median": 5}})) is None
    assert expectation_of(run_header([])) is None


def _record(index: int, arm: str, outcome: str = "survived") -> dict:
    return {"index": index, "arm": arm, "rep": 0, "outcome": outcome, "detail": "d",
            "duration_s": 1.0, "counters": {}}


def test_the_open_arms_trials_are_what_a_sequential_run_may_still_run(fake_case):
    plan = make_plan("fake_case", fake_case.resolved_arms(), 4, 1, ["ok", "crash", "abort"])
    decider = SimpleNamespace(arms_needed=lambda: {"ok", "crash"})  # abort's claims decided
    ran = [t for t in plan.order if t.arm == "ok"][:3]
    records = [_record(t.index, t.arm) for t in ran]
    # ok: 1 planned left (and 3 of its maximum of 4 used); crash: 4 planned, at most 4.
    assert trials_open(decider, plan.order, records, max_trials=4) == 1 + 4
    assert trials_open(decider, plan.order, records, max_trials=3) == 0 + 3


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_every_trial_line_says_the_time_elapsed_and_left(fake_case):
    plan = make_plan("fake_case", fake_case.resolved_arms(), 2, 1, ["ok", "crash"])
    out, clock = io.StringIO(), _Clock()
    progress = Progress(plan, [], stream=out, live=False, expected=Expectation(4, 40.0),
                        now=clock)
    with progress:
        clock.t += 12.0
        progress.finished(_record(0, "ok"))
    lines = out.getvalue().splitlines()
    assert lines[0] == "before the first trial: about 0:00:40 left (1 trial(s) at a time)"
    assert lines[1].startswith("[   1/4, 0:00:12 elapsed, about 0:00:36 left] ok#0: survived")


def test_trial_lines_go_to_stderr_and_the_journal_path_to_stdout(fake_build, tmp_path):
    build_dir, _ = fake_build
    journal = tmp_path / "j.journal.jsonl"
    done = subprocess.run([sys.executable, "-m", "gpurepro", "run", "tests/fixtures/fake_case/manifest.py",
                           "--arms", "ok,crash", "--trials", "1", "--duration", "0.05", "--seed", "1",
                           "--journal", str(journal), "--build-dir", str(build_dir), "--no-record"],
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"journal: {journal}\n"
    trial_lines = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert len(trial_lines) == 2 and all(" elapsed, " in line for line in trial_lines)
