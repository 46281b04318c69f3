"""Every value a trial reports is checked where it is read (run/values.py): what no document can
hold (NaN, infinities, integers past 64 bits, nesting past 32, booleans for times, an unknown
check kind, a mismatch entry that is no triple) makes that trial a harness_error naming the
value; a NaN in a checked output is a wrong result; a worker that dies stops the run without
its end record. The hostile driver's value-* modes run end to end (run, record, validate,
resume) in the slow tier."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from gpurepro.case import TrialBudget
from gpurepro.errors import HarnessError
from gpurepro.model.plan import make_plan
from gpurepro.run import execute as runmod
from gpurepro.run import values
from gpurepro.run.classify import Observed, classify, parse_json_lines
from gpurepro.run.execute import RunOptions, crash_summary, execute_plan
from gpurepro.run.journal import Journal, read
from tests import invoke
from tests.conftest import ROOT
from tests.run.test_scheduler import _header

HOSTILE = "tests/fixtures/hostile_case/manifest.py"
_spec = importlib.util.spec_from_file_location("hostile", ROOT / "tests" / "fixtures" / "hostile.py")
hostile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hostile)
BAD_FINALS = hostile.BAD_FINALS
# What each value-* mode's trial is, and what its detail names.
EXPECTED = {
    "value-nan-timing": ("harness_error", "observations.timing.values[0] = nan"),
    "value-inf-timing": ("harness_error", "observations.timing.values[0] = inf"),
    "value-range-timing": ("harness_error", "observations.timing.values[0] = 1e+308"),
    "value-bigint-timing": ("harness_error", "an integer of 401 digits"),
    "value-bool-timing": ("harness_error", "observations.timing.values[0] = True: not a number"),
    "value-nan-observation": ("harness_error", "observations.ratio = nan"),
    "value-check-kind": ("harness_error", "check.kind = 'approximate'"),
    "value-check-entry": ("harness_error", "check.first[0] = [1, 2]"),
    "value-deep": ("harness_error", "nested more than 32 deep"),
    "value-nan-output": ("wrong_result", "got 'NaN', expected 1.5"),
}


def _read_as_printed(final: dict) -> Observed:
    """The final record as the harness reads it: printed by Python's json (NaN and Infinity
    as JSON's extensions), parsed back by the harness's own reader."""
    lines = [json.dumps({"event": "heartbeat", "counters": {"cycles": 2}}),
             json.dumps({"event": "final", "status": "ok", "counters": {"cycles": 2}, **final})]
    events, bad = parse_json_lines(lines)
    assert bad == 0
    return Observed(0, False, events)


@pytest.mark.parametrize("mode", sorted(BAD_FINALS))
def test_a_value_no_document_can_hold_is_named_and_kept_as_text(mode):
    outcome, named = EXPECTED[mode]
    c = classify(_read_as_printed(BAD_FINALS[mode]), "cycles")
    assert c.outcome == outcome and named in c.detail, c
    assert values.unfit({"observations": c.observations, "check": c.check}, depth=-1) is None, c
    if outcome == "harness_error":
        assert c.detail.startswith("the driver's final record holds a value a result cannot")
        assert c.check is None or values.check_problem(c.check) is None


def test_bad_times_anywhere_in_range_or_type_are_refused_and_good_ones_pass():
    good = {"unit": "s", "values": [2.2e-4, 1e-12, 86400.0, 3], "warmups": 5, "loops": 20}
    assert values.timing_problem(good) is None
    assert values.timing_problem({"values": []}) is None  # a trial that measured nothing
    for bad in ([0.0], [-1e-3], [1e-13], [86401.0], [False], ["1e-3"], [None], [[1e-3]]):
        assert values.timing_problem({"values": bad}) is not None, bad
    assert "not a count" in values.timing_problem({"values": [1e-3], "loops": True})
    assert "seconds" in values.timing_problem({"values": [1e-3], "unit": "ms"})


def test_a_check_of_the_wrong_shape_is_named_each_way():
    ok = {"kind": "tolerance", "n": 3, "mismatches": 1, "first": [[0, 1.5, 1.0]], "rel": 1e-3,
          "abs": 0.0}
    assert values.check_problem(ok) is None
    for change, named in (({"kind": True}, "check.kind"), ({"n": -1}, "check.n"),
                          ({"mismatches": 4}, "more than check.n"), ({"first": {}}, "check.first"),
                          ({"first": [[0, 1, 2, 3]]}, "check.first[0]"),
                          ({"first": [["a", 1, 2]]}, "not an index"),
                          ({"rel": float("nan")}, "check.rel"), ({"abs": -1}, "check.abs"),
                          ({"extra": float("inf")}, "check.extra")):
        assert named in values.check_problem({**ok, **change}), change


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(12 if depth < 40 else 8)
    return [lambda: float("nan"), lambda: float("inf"), lambda: -float("inf"),
            lambda: 10 ** rng.randrange(15, 500), lambda: rng.choice([True, False, None]),
            lambda: rng.uniform(-1e308, 1e308), lambda: 5e-324, lambda: "x" * rng.randrange(5),
            lambda: [_random_value(rng, depth + 1) for _ in range(rng.randrange(3))],
            lambda: {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(3))},
            lambda: [_random_value(rng, depth + 1)],
            lambda: [[[_random_value(rng, depth + 3)]]]][kind]()


def test_random_final_records_always_classify_into_a_record_the_journal_can_write(tmp_path):
    """300 final records of random values in random places (observations, timing, check and
    its entries, a crash record): classify never raises, and what it keeps fits a document."""
    from gpurepro.run.journal import _line

    rng = random.Random(46)
    for _ in range(300):
        final = {"observations": {"timing": {"values": [_random_value(rng) for _ in range(2)]},
                                  "x": _random_value(rng)},
                 "check": rng.choice([_random_value(rng), {
                     "kind": rng.choice(["exact", "tolerance", _random_value(rng)]),
                     "n": rng.choice([4, _random_value(rng)]), "mismatches": 1,
                     "first": [[0, _random_value(rng), _random_value(rng)],
                               rng.choice([[1, 2, 3], _random_value(rng)])]}]),
                 "error": _random_value(rng)}
        c = classify(_read_as_printed(final), "cycles")
        crash = crash_summary({"signal": _random_value(rng), "si_code": _random_value(rng),
                               "addr": _random_value(rng), "frames": _random_value(rng),
                               "pc_map": _random_value(rng), "t": _random_value(rng),
                               "threads": [_random_value(rng), {"thread": 1, "call": 5,
                                                                 "inside": True, "calls": 2,
                                                                 "faulting": False}]})
        record = {"kind": "trial", "outcome": c.outcome, "detail": c.detail,
                  "observations": c.observations, "crash": crash,
                  **({"check": c.check} if c.check is not None else {})}
        assert values.unfit(record, depth=-1) is None, (final, record)
        _line(record)  # JSON as the standard has it: no NaN, no infinity
        if c.check is not None:
            assert values.check_problem(c.check) is None


def test_a_lone_surrogate_in_a_drivers_strings_becomes_text_a_report_can_write():
    """JSON's \\ud800 escape parses to a lone surrogate, which no UTF-8 file (a report's
    Markdown) can hold: replaced where the event is read."""
    line = '{"event": "final", "status": "cuda_error", "error": "E\\ud800", "counters": {"c": 1}}'
    events, bad = parse_json_lines([line])
    c = classify(Observed(1, False, events), "c")
    assert c.outcome == "cuda_error" and c.detail == "E?"
    c.detail.encode("utf-8")


def test_a_line_nested_past_the_parsers_depth_is_an_unparsed_line_not_a_dead_thread():
    events, bad = parse_json_lines(["[" * 100_000, '{"event": "start"}'])
    assert (len(events), bad) == (1, 1)


def test_a_worker_that_dies_stops_the_run_without_its_end_record(fake_case, fake_build, tmp_path,
                                                                 monkeypatch):
    """A worker that raises something no `except Exception` catches (SystemExit, as a manifest's
    trial_command calling sys.exit would): the run raises HarnessError naming it, every other
    trial is journaled, and the journal has no end record and no seal: a stopped run that
    --resume continues, never a complete one."""
    _, index = fake_build
    plan = make_plan("fake_case", fake_case.resolved_arms(), 2, seed=5, selected=["ok", "crash"])
    opts = RunOptions(budget=TrialBudget(0.1, 0, 3.0), jobs=1)
    real = runmod.execute_trial

    def dies(case, planned, *a, **kw):
        if planned.index == 1:
            raise SystemExit(0)
        return real(case, planned, *a, **kw)

    monkeypatch.setattr(runmod, "execute_trial", dies)
    journal = Journal.create(tmp_path / "j.jsonl", _header(plan, index, opts))
    with pytest.raises(HarnessError, match="trial worker 0 stopped: SystemExit"):
        execute_plan(fake_case, plan, index, ROOT, journal, opts)
    journal.close()
    contents = read(journal.path)
    assert "ended" not in contents.header and contents.header["sealed"].startswith("open ")
    assert [t["index"] for t in contents.trials] == [0]


def test_a_record_the_journal_cannot_write_stops_the_run_and_says_so(fake_case, fake_build,
                                                                     tmp_path, monkeypatch):
    """The journal's own refusal (a NaN that reached it past every check) is a failed worker:
    the run raises HarnessError naming the trial, and seals nothing."""
    _, index = fake_build
    plan = make_plan("fake_case", fake_case.resolved_arms(), 1, seed=5, selected=["ok"])
    opts = RunOptions(budget=TrialBudget(0.1, 0, 3.0), jobs=1)
    real = runmod.execute_trial
    monkeypatch.setattr(runmod, "execute_trial",
                        lambda *a, **kw: {**real(*a, **kw), "duration_s": math.nan})
    journal = Journal.create(tmp_path / "j.jsonl", _header(plan, index, opts))
    with pytest.raises(HarnessError, match=r"trial 0 \(ok\).*NaN or infinity"):
        execute_plan(fake_case, plan, index, ROOT, journal, opts)
    journal.close()
    assert read(journal.path).trials == [] and "ended" not in read(journal.path).header


# ---------------------------------------------------------------- end to end (slow tier)


def _running(needle: bytes) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if needle in fh.read():
                        return True
            except OSError:
                continue
    return False


@pytest.mark.slow
def test_a_run_of_every_bad_value_goes_on_exits_1_records_validates_and_resumes(tmp_path):
    """The hostile case's value-* arms and a survivor in one run: every trial journaled (the
    bad ones harness errors naming their value, the NaN output a wrong result), exit 1 (a
    harness error), the document recorded and valid. The same arms and a trial that waits
    (crash-at) in a run stopped by SIGINT while it waits: --resume runs what is left, the bad
    values again harness errors, and exits 1 with the journal's end record."""
    from gpurepro.building.artifacts import build_case
    from gpurepro.case.load import load_case

    build_dir = ROOT / "build" / "tests"
    build_case(load_case(ROOT / HOSTILE, ROOT), "host", ROOT, build_dir)
    out = ROOT / "build" / f"tests-values-{uuid.uuid4().hex[:8]}"
    arms = ["ok", *sorted(BAD_FINALS)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        done = invoke.gpurepro("run", HOSTILE, "--arms", ",".join(arms), "--trials", "1",
                            "--duration", "0.1", "--seed", "3", "--out-dir", str(out),
                            "--build-dir", str(build_dir), env=env)
        assert done.returncode == 1, done.stderr
        [doc_path] = [p for p in (out / "hostile_case").glob("*.json")
                      if not p.name.endswith(".pyperf.json")]
        doc = json.loads(doc_path.read_text())
        by_arm = {t["arm"]: t for t in doc["trials"]}
        assert by_arm["ok"]["outcome"] == "survived"
        for mode, (outcome, named) in EXPECTED.items():
            assert by_arm[mode]["outcome"] == outcome and named in by_arm[mode]["detail"], by_arm[mode]
        assert invoke.gpurepro("validate", str(doc_path)).returncode == 0

        journal = tmp_path / "stopped.journal.jsonl"
        tag = uuid.uuid4().hex
        waiting = {**env, "HOSTILE_CRASH_AT": "60", "FAULT_TAG": tag}
        argv = [sys.executable, "-m", "gpurepro", "run", HOSTILE, "--arms",
                ",".join([*arms, "crash-at"]), "--trials", "1", "--duration", "0.1", "--seed",
                "4", "--timeout", "90", "--journal", str(journal), "--build-dir", str(build_dir),
                "--no-record"]
        with subprocess.Popen(argv, cwd=ROOT, env=waiting, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) as harness:
            while not _running(b"hostile.py\0crash-at"):
                assert harness.poll() is None, harness.communicate()
                time.sleep(0.05)
            harness.send_signal(signal.SIGINT)
            _, stderr = harness.communicate(timeout=60)
        assert harness.returncode == 130, stderr
        assert "ended" not in read(journal).header
        resumed = invoke.gpurepro("run", HOSTILE, "--resume", str(journal), "--no-record",
                               "--build-dir", str(build_dir),
                               env={**env, "HOSTILE_CRASH_AT": "0"})
        assert resumed.returncode == 1, resumed.stderr
        contents = read(journal)
        again = {t["arm"]: t["outcome"] for t in contents.trials}
        assert again == {**{arm: t["outcome"] for arm, t in by_arm.items()}, "crash-at": "crashed"}
        assert contents.header["ended"]["trials"] == len(arms) + 1
    finally:
        shutil.rmtree(out, ignore_errors=True)
