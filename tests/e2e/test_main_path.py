"""The main path, as a user walks it: a case's default plan (its main question, the decisive
design, priors chosen by rule from the committed results) is journaled, run and recorded into a
valid document whose comment renders; and a fresh clone's `make tile-unload-race` builds and ends
with the no-driver status.

The trials here run native/testdriver (the fake case's driver) in place of the case's own: each
arm crashes or runs its course as the committed results say it mostly does, so the decisive
design allocates, looks and stops on the priors it planned with. What is tested is everything
around the trials: the plan, the journal (which refuses NaN and infinity), the end record, the
record and the comment. Each default plan is planned by simulating it (minutes of CPU for
tile_unload_race's): the plans, and the fresh clone, are the slow tier's; what the path rests on
(the journal's refusals, below) the fast tier's.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests import pace

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p.parent.name for p in (ROOT / "cases").glob("*/manifest.py"))
# A fake GPU for each case: the compute capability of its first target.
DURATION_S = 0.3  # the fake driver's trials: short; the plan and its priors are the case's own


def _fails_mostly(prior: dict[str, Any]) -> bool:
    """Whether the committed results say an arm's trials mostly fail."""
    if prior.get("per_trial"):
        return sum(float(r) for _, _, r in prior["causes"]) > 0.5
    rate = sum(float(r) for _, _, r in prior["causes"])
    return -math.expm1(-rate * float(prior["budget"])) > 0.5


def run_default_plan(case_name: str, fake_build, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """The case's default plan (as `case` and `run` plan it with no flag), its trials through
    the fake driver, recorded. Returns the document and the journal."""
    from gpurepro.analyze.designing import run_declaration, run_design
    from gpurepro.case import TrialCommand
    from gpurepro.case.load import load_case
    from gpurepro.cli.args import check_arguments
    from gpurepro.cli.parser import parser
    from gpurepro.cli.run import steering
    from gpurepro.env import fingerprint as envmod
    from gpurepro.record.result import record_journals
    from gpurepro.run import session
    from gpurepro.run.execute import RunOptions
    from gpurepro.run.journal import read

    case = load_case(case_name, ROOT)
    capability = next(iter(case.devices.targets))
    gpu_info = {"available": True, "gpus": [{"index": 0, "name": "Fake GPU", "uuid": "GPU-fake",
                                             "compute_capability": capability}]}
    args = parser().parse_args(["run", case_name, "--out-dir", str(tmp_path)])
    request = check_arguments(case, args, ROOT, gpu_info)
    plan = session.new_plan(case, request)
    design, families = run_design(case, plan, request, ROOT)
    _, index = fake_build
    # A run id of its own: every process tagged with it is swept when the run's watchdog ends,
    # so a run id shared by two tests lets a late sweep of one kill the other's trials.
    opts = RunOptions(budget=request.budget, jobs=request.jobs, redact=True,
                      run_id=uuid.uuid4().hex)
    device = {"name": "Fake GPU", "compute_capability": capability, "uuid": "GPU-fake",
              "index": 0, "supported": True, "target": request.target, "reason": None}
    header = session.journal_header(case, ROOT, plan, opts, design,
                                    envmod.fingerprint(ROOT, redact=True, gpu_info=gpu_info),
                                    device, index, families, request.scope,
                                    deterministic=run_declaration(case, None))
    journal = session.create(tmp_path / f"{case_name}.journal.jsonl", header)
    priors = design.priors or {}
    driver = index["artifacts"]["testdriver"]["path"]

    def fake_command(ctx: Any) -> TrialCommand:
        # A survivor reaches the exposure the plan expects of the arm (or its cap) at once, as
        # a real trial would by its budget's end.
        prior = priors.get(ctx.arm, {"causes": [], "budget": 0})
        mode = "crash" if _fails_mostly(prior) else "ok"
        cycles = ctx.budget.max_exposure or round(float(prior["budget"])) or 1000
        return TrialCommand(argv=(str(ROOT / driver), mode, "--seconds", str(DURATION_S),
                                  "--cycles", str(cycles), "--nap-us", "0",
                                  "--heartbeat-ms", "50"))

    # The fake driver counts launches and checks no output: the case's own counter and check
    # are its drivers'.
    faked = dataclasses.replace(case, trial_command=fake_command, runtime=None, check=None,
                                exposure=dataclasses.replace(case.exposure, counter="launches"))
    started = session.Started(journal, read(journal.path).run, plan, opts, session.Gate(True, request.target,
                                                                          device, None), [])
    with journal:
        status = session.execute(faked, started, ROOT, case_name, *steering(faked, started))
    assert status == 0, status
    contents = read(journal.path)
    assert contents.header.get("ended"), "a finished run's journal ends with its end record"
    out, doc = record_journals(faked, [journal.path], ROOT, tmp_path / "result.json")
    return doc, journal


def check_document(doc: dict[str, Any], case_name: str) -> None:
    from gpurepro.case.load import load_case
    from gpurepro.record.validation import validation_errors
    from gpurepro.report.comment import issue_body

    assert validation_errors(doc) == []
    assert doc["completion"] == {"complete": True, "trials": len(doc["trials"]),
                                 "planned": len(doc["plan"]["order"])}
    case = load_case(case_name, ROOT)
    # The targets its run's manifest builds, kept for the comment's commands.
    assert doc["case"]["targets"] == sorted(set(case.devices.targets.values()))
    options = doc["plan"]["options"]
    assert options["scope"] == "main"
    assert options["stopping"]["design"] == "decisive"
    for prior in options["stopping"]["priors"].values():  # every prior a finite number
        json.dumps(prior, allow_nan=False)
    assert set(doc["plan"]["arms"]) == set(case.main_arms())
    main = set(case.main_question)
    family = {c["name"] for c in doc["claims"] if c.get("family") != "exploratory"}
    assert main <= family, f"the main question's claims are confirmatory: {sorted(main - family)}"
    assert issue_body(doc, Path("result.json"))


# Planning a case's decisive design simulates it (analyze.planning: 200 runs a round with
# Boschloo's tests over its claims): minutes of CPU for tile_unload_race's, so every case's default
# plan is the slow tier's; what the path rests on (below) is the fast tier's.
@pytest.mark.slow
@pytest.mark.parametrize("case_name", CASES)
def test_the_default_plan_of_every_case_runs_and_records(case_name, fake_build, tmp_path):
    doc, _ = run_default_plan(case_name, fake_build, tmp_path)
    from gpurepro.record.validation import validation_errors

    assert validation_errors(doc) == []
    assert doc["completion"]["complete"] is True
    if case_name != "tile_unload_race":
        return
    # The first case's main job: the report's arms, the reporter's own program included
    # (as-filed ran and its claim is confirmatory), priors chosen by rule, recorded.
    check_document(doc, "tile_unload_race")
    assert any(t["arm"] == "as-filed" for t in doc["trials"]), "seed/repro.cc as filed runs"
    stopping = doc["plan"]["options"]["stopping"]
    assert stopping["first"] == list(doc["case"].get("main_question", stopping["first"]))
    assert doc["case"]["deeper"]["arms"], "the comment can say what --deep would add"


@pytest.mark.slow
def test_a_fresh_clone_builds_the_main_job_and_stops_at_no_driver(tmp_path):
    """README's first command on a machine with nothing installed by hand (here: no GPU):
    `make tile-unload-race` installs nox, the toolchain, builds every artifact and says plainly
    that no CUDA driver is present (status 5, which make reports as its Error 5)."""
    if shutil.which("git") is None or shutil.which("make") is None:
        pytest.skip("needs git and make")
    clone = tmp_path / "gpurepro"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOX", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if ".nox" not in p and ".venv" not in p)
    done = pace.run(["make", "tile-unload-race", f"PYTHON={sys.executable}"], cwd=clone,
                    env=env, capture_output=True, text=True, startups=pace.BUILD)
    out = done.stdout + done.stderr
    said = "\n".join(line for line in out.splitlines() if not line.startswith("nox > "))
    assert "no CUDA driver is present" in out, said[-3000:]
    assert "Error 5" in out, out[-3000:]
    built = clone / "build" / "tile_unload_race"
    assert any(built.rglob("repro")) and any(built.rglob("kernel.cubin")), out[-3000:]


@pytest.mark.parametrize("case_name", CASES)
def test_the_default_plan_on_a_gpu_that_cannot_run_the_case_records_every_trial_unsupported(
        case_name, fake_build, tmp_path):
    """A main job on a GPU the case has no target for (tcgen05_alloc_order on a Hopper GPU)
    journals the design asked for, never planned (nothing is simulated for a device that runs
    no trial), records every trial as unsupported, and that journal records into a valid
    document whose comment renders: a decisive design without its looks once made the record
    stop at a harness error."""
    from gpurepro.analyze.designing import designer, run_declaration
    from gpurepro.case.load import load_case
    from gpurepro.cli.args import check_arguments
    from gpurepro.cli.parser import parser
    from gpurepro.env import fingerprint as envmod
    from gpurepro.errors import EXIT_UNSUPPORTED
    from gpurepro.record.recompute import recomputed_errors
    from gpurepro.record.result import record_journals
    from gpurepro.record.validation import validation_errors
    from gpurepro.report.comment import issue_body
    from gpurepro.run import session
    from gpurepro.run.execute import RunOptions
    from gpurepro.run.execute import gate as gate_of
    from gpurepro.run.journal import read

    case = load_case(case_name, ROOT)
    gpu_info = {"available": True, "gpus": [{"index": 0, "name": "Other GPU", "uuid": "GPU-other",
                                             "compute_capability": "1.0"}]}
    args = parser().parse_args(["run", case_name, "--out-dir", str(tmp_path)])
    request = check_arguments(case, args, ROOT, gpu_info)
    plan = session.new_plan(case, request)
    design = designer(case, request, ROOT)(plan, False, None)
    gate = gate_of(case, gpu_info, request.arch or request.target, [0])
    assert not gate.supported
    device = session.gate_json(gate)
    opts = RunOptions(budget=request.budget, jobs=request.jobs, redact=True,
                      run_id=uuid.uuid4().hex)
    _, index = fake_build
    header = session.journal_header(case, ROOT, plan, opts, design.design,
                                    envmod.fingerprint(ROOT, redact=True, gpu_info=gpu_info),
                                    device, index, design.families, request.scope,
                                    deterministic=run_declaration(case, None))
    journal = session.create(tmp_path / f"{case_name}.journal.jsonl", header)
    started = session.Started(journal, read(journal.path).run, plan, opts, gate, [])
    with journal:
        assert session.execute(case, started, ROOT, case_name) == EXIT_UNSUPPORTED
    _, doc = record_journals(case, [journal.path], ROOT, tmp_path / "result.json")
    assert validation_errors(doc) == []
    assert {t["outcome"] for t in doc["trials"]} == {"unsupported"}
    assert len(doc["trials"]) == len(plan.order)
    assert not [c["name"] for c in doc["claims"] if c.get("decided")]
    assert recomputed_errors(doc, ROOT)[0] == []  # what `gpurepro validate` recomputes
    assert issue_body(doc, Path("result.json"))


# ---------------------------------------------------------------- what the path rests on


def test_the_journal_refuses_nan_and_infinity_before_writing(tmp_path):
    """A NaN or an infinity is no JSON number: the journal names where it is and writes
    nothing, as the recorder refuses it (a prior of infinity once made a run unrecordable)."""
    from gpurepro.errors import JournalError
    from gpurepro.run.journal import Journal, read

    with pytest.raises(JournalError, match=r"options\.stopping\.priors\.as-filed\.causes\.0\.2"):
        Journal.create(tmp_path / "a.jsonl", {"case": "x", "options": {"stopping": {
            "priors": {"as-filed": {"causes": [["crashed", "SIGSEGV", math.inf]]}}}}})
    assert not (tmp_path / "a.jsonl").exists()
    journal = Journal.create(tmp_path / "b.jsonl", {"case": "x"})
    before = (tmp_path / "b.jsonl").read_bytes()
    with pytest.raises(JournalError, match=r"trial 3 .*exposure"):
        journal.append_trial({"index": 3, "arm": "a", "outcome": "survived", "exposure": math.nan})
    journal.close()
    assert (tmp_path / "b.jsonl").read_bytes() == before
    assert read(tmp_path / "b.jsonl").trials == []


def _trial(arm: str, outcome: str, exposure: float, seconds: float = 1.0) -> dict[str, Any]:
    return {"arm": arm, "outcome": outcome, "detail": "SIGSEGV" if outcome == "crashed" else "",
            "exposure": exposure, "duration_s": seconds}


def test_an_arm_whose_counter_cannot_time_its_failures_is_modelled_per_trial(root):
    """The reporter's program counts once a second and crashes within it: its failures at
    exposure 0 give a chance per trial, never a rate over no exposure (infinite)."""
    from gpurepro.analyze.allocate import ArmPrior
    from gpurepro.analyze.recorded import RecordedRun
    from gpurepro.analyze.simulate import models_from
    from gpurepro.case.load import load_case

    case = load_case("tile_unload_race", root)
    trials = ([_trial("baseline", "crashed", 9000.0)] * 4 + [_trial("baseline", "survived", 150000.0)]
              + [_trial("as-filed", "crashed", 0.0, 0.6)] * 3 + [_trial("as-filed", "survived", 39000.0, 5.2)])
    doc = {"plan": {"options": {"budget": {"duration_s": 20.0}}}, "trials": trials}
    models = models_from(case, [RecordedRun.of(root / "x.json", doc)], root, ["baseline", "as-filed"])
    filed = models.arms["as-filed"]
    assert filed.per_trial and [c.rate for c in filed.causes] == [0.75]
    assert not models.arms["baseline"].per_trial
    prior = ArmPrior.of_model(filed)
    json.dumps(prior.to_json(), allow_nan=False)
    ends = prior.ends()
    assert ends[0][:2] == (0.75, "crashed") and ends[-1][1] == "survived"
    assert ArmPrior.from_json(prior.to_json()) == prior


def test_a_counter_declared_without_opportunity_models_every_arm_per_trial(root):
    """ctx_get_device_v2 declares its one query per trial no opportunity (Exposure.opportunity
    False): its arms are modelled per trial, each end with its share of trials, even where the
    trials' counts differ (a rate per call would give a trial that always crashes a chance
    below 1); and a case's declared per-trial outcome is never a rate in the exposure."""
    import dataclasses

    from gpurepro.analyze.recorded import RecordedRun
    from gpurepro.analyze.simulate import models_from
    from gpurepro.case.load import load_case

    case = load_case("ctx_get_device_v2", root)
    assert case.exposure.opportunity is False
    arm = case.baseline
    trials = [_trial(arm, "crashed", 1.0)] * 9 + [_trial(arm, "survived", 2.0)]
    doc = {"plan": {"options": {"budget": {"duration_s": 5.0}}}, "trials": trials}
    model = models_from(case, [RecordedRun.of(root / "x.json", doc)], root, [arm]).arms[arm]
    assert model.per_trial and [c.rate for c in model.causes] == [0.9]
    # The same trials under a counter that does measure opportunity: a rate per call.
    counted = dataclasses.replace(case, exposure=dataclasses.replace(case.exposure, opportunity=True))
    assert not models_from(counted, [RecordedRun.of(root / "x.json", doc)], root, [arm]).arms[arm].per_trial

    tile = load_case("tile_unload_race", root)
    errors = ([_trial("baseline", "cuda_error", 5000.0 + i) for i in range(3)]
              + [_trial("baseline", "survived", 150000.0)])
    doc = {"plan": {"options": {"budget": {"duration_s": 20.0}}}, "trials": errors}
    assert not models_from(tile, [RecordedRun.of(root / "x.json", doc)], root, ["baseline"]).arms["baseline"].per_trial
    declared = dataclasses.replace(tile, exposure=dataclasses.replace(
        tile.exposure, per_trial_outcomes=("wrong_result", "cuda_error")))
    model = models_from(declared, [RecordedRun.of(root / "x.json", doc)], root, ["baseline"]).arms["baseline"]
    assert model.per_trial and [c.rate for c in model.causes] == [0.75]


def test_priors_come_only_from_documents_with_enough_trials_of_an_arm(root, tmp_path):
    """A document with one or two trials of an arm (a resume check) sets no rate for it."""
    from gpurepro.analyze.simulate import MIN_PRIOR_TRIALS, choose_documents
    from gpurepro.case.load import load_case

    case = load_case("tile_unload_race", root)
    folder = tmp_path / "results" / case.name
    folder.mkdir(parents=True)

    def write(name: str, arms: dict[str, int], complete: bool = True) -> None:
        trials = [_trial(a, "crashed", 100.0) for a, n in arms.items() for _ in range(n)]
        doc = {"plan": {"options": {"jobs": 1}}, "trials": trials,
               **({} if complete else {"completion": {"complete": False}})}
        (folder / name).write_text(json.dumps(doc))

    write("20300101T000000Z_new.json", {"baseline": 2, "as-filed": 1})  # newest, too few
    write("20290101T000000Z_stopped.json", {"baseline": 9, "as-filed": 9}, complete=False)
    write("20280101T000000Z_old.json", {"baseline": MIN_PRIOR_TRIALS, "as-filed": MIN_PRIOR_TRIALS})
    os.environ["GPUREPRO_COMMIT"] = "x"  # the folder is no git checkout: its files count
    try:
        docs = choose_documents(case, tmp_path, ["baseline", "as-filed"])
    finally:
        del os.environ["GPUREPRO_COMMIT"]
    assert [r.path.name for r in docs] == ["20280101T000000Z_old.json"]


def test_priors_come_from_the_runs_gpu_model_first(root, tmp_path):
    """A race's rates move from one GPU model to another (tile_unload_race's baseline crashed
    before its horizon in about half its trials on an H100, in 52 of 60 on an H200): a run on
    an H100 takes an arm's rates from the newest H100 result that has them, even where an
    H200 result is newer, and from another model's only where none of its own has them."""
    from gpurepro.analyze.simulate import MIN_PRIOR_TRIALS, PRIOR_RULE, choose_documents
    from gpurepro.case.load import load_case

    case = load_case("tile_unload_race", root)
    folder = tmp_path / "results" / case.name
    folder.mkdir(parents=True)

    def write(name: str, gpu: str, arms: dict[str, int]) -> None:
        trials = [_trial(a, "crashed", 100.0) for a, n in arms.items() for _ in range(n)]
        doc = {"plan": {"options": {"jobs": 1}}, "trials": trials,
               "environment": {"gpu": {"gpus": [{"name": gpu}]}}}
        (folder / name).write_text(json.dumps(doc))

    write("20300101T000000Z_h200.json", "NVIDIA H200",
          {"baseline": MIN_PRIOR_TRIALS, "as-filed": MIN_PRIOR_TRIALS})
    write("20290101T000000Z_h100.json", "NVIDIA H100 80GB HBM3", {"baseline": MIN_PRIOR_TRIALS})
    os.environ["GPUREPRO_COMMIT"] = "x"  # the folder is no git checkout: its files count
    try:
        on_h100 = choose_documents(case, tmp_path, ["baseline", "as-filed"],
                                   gpu="NVIDIA H100 80GB HBM3")
        on_h200 = choose_documents(case, tmp_path, ["baseline", "as-filed"], gpu="NVIDIA H200")
        anywhere = choose_documents(case, tmp_path, ["baseline", "as-filed"])
    finally:
        del os.environ["GPUREPRO_COMMIT"]
    arms = {r.path.name: sorted({t["arm"] for t in r.trials}) for r in on_h100}
    assert arms == {"20290101T000000Z_h100.json": ["baseline"],
                    "20300101T000000Z_h200.json": ["as-filed"]}
    assert [r.path.name for r in on_h200] == [r.path.name for r in anywhere] == \
        ["20300101T000000Z_h200.json"]
    assert "GPU model" in PRIOR_RULE


def test_a_stopped_run_records_as_a_partial_document_that_says_how_to_resume(fake_build, tmp_path):
    """No end record: the document says how far the run got, keeps the claims it decided
    at its looks, leaves the rest open and names the command that continues it."""
    from gpurepro.case.load import load_case
    from gpurepro.record.result import record_journals

    build_dir, _ = fake_build
    journal = tmp_path / "run.journal.jsonl"
    done = pace.run([sys.executable, "-m", "gpurepro", "run", "tests/fixtures/fake_case/manifest.py",
                     "--arms", "ok,crash", "--trials", "3", "--duration", "0.1", "--seed", "5",
                     "--journal", str(journal), "--build-dir", str(build_dir), "--no-record"],
                    cwd=ROOT, capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    lines = journal.read_text().splitlines()
    assert json.loads(lines[-1])["kind"] == "end"
    # Stopped: two trials, the end record and the header's seal unwritten.
    from tests.record.test_tampering import reopened

    journal.write_text("\n".join(reopened(lines[:-3])) + "\n")
    case = load_case(ROOT / "tests/fixtures/fake_case/manifest.py", ROOT)
    _, doc = record_journals(case, [journal], ROOT, tmp_path / "partial.json")
    assert doc["completion"]["complete"] is False and doc["completion"]["planned"] == 6
    assert doc["completion"]["trials"] == 4
    assert "--resume" in doc["completion"]["resume"]
    assert all(c["decision"] == "not_decided" and c["open"] for c in doc["claims"])
    assert "Partial result" in doc["verdict"]["stopped"] and "resumed" in doc["verdict"]["stopped"]
