"""The toolchain matrix (gpurepro.sweep) without a GPU and without installing its toolchains:
the schema on a document the CPU stage produced, journals into counts and rates, an install
failure's reason, the GPU stage without a GPU or past its budget, the README table."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import pytest
from scipy import stats as sps

from gpurepro.errors import UsageError
from gpurepro.model.files import sha256_file
from gpurepro.run.journal import Journal
from gpurepro.sweep import gpu as gpustage
from gpurepro.sweep.assemble import assemble, write_document
from gpurepro.sweep.cells import run_cell
from gpurepro.sweep.choose import Grid, Options
from gpurepro.sweep.collect import _runs, cpu_document
from gpurepro.sweep.matrix import cell_results
from gpurepro.sweep.model import GPU_FILE, GPU_SCHEMA, MATRIX, GpuRecord, read_document
from gpurepro.sweep.spec import load
from gpurepro.sweep.table import markdown
from gpurepro.sweep.validation import sweep_errors as validation_errors
from tests import pace
from tests.conftest import ROOT, toolchain_venv

SCRATCH = ROOT / "build" / "tests-matrix"  # inside the repository: paths are recorded relative to it
# What uv printed when a pin could not be resolved (uv 0.13, a real run).
UV_FAILURE = """Using Python 3.11.7 environment at: .nox/tile_matrix-1-7-0-13-5
error: No solution found when resolving dependencies
  cause: Because there is no version of nvidia-cuda-tileiras==13.0.0 and you require nvidia-cuda-tileiras==13.0.0, we can conclude that your requirements are unsatisfiable.
"""


def _committed() -> dict:
    """The newest committed matrix document of tile_unload_race: the real CPU stage's output."""
    docs = sorted((ROOT / "results" / "tile_unload_race").glob("matrix_*.json"))
    if not docs:
        pytest.skip("no committed matrix document under results/tile_unload_race")
    return json.loads(docs[-1].read_text())


def _subset(doc: dict, cells: list[str]) -> dict:
    """The document cut down to some cells (and the cubins and runs they use)."""
    sub = copy.deepcopy(doc)
    sub["cells"] = [c for c in sub["cells"] if c["id"] in cells]
    used = {b["sha256"] for c in sub["cells"] for b in [*c["exports"], c["control"]]
            if b and b["status"] == "ok"}
    sub["cubins"] = {sha: c for sha, c in sub["cubins"].items() if sha in used}
    for c in sub["cubins"].values():
        c["emitted_by"] = [b for b in c["emitted_by"] if b["cell"] in cells]
    sub["runs"] = _runs(load("tile_unload_race", ROOT), sub["cubins"])
    sub["results"] = cell_results(sub)
    return sub


SUBSET = ["1.0.0-13.5", "1.3.0-13.2", "1.4.0-13.3", "1.7.0-13.4", "1.7.0-13.5"]


def test_a_real_cpu_subset_validates_and_broken_ones_do_not():
    doc = _subset(_committed(), SUBSET)
    assert validation_errors(doc) == []
    assert {c["id"] for c in doc["cells"]} == set(SUBSET)

    missing = copy.deepcopy(doc)
    missing["cubins"].pop(next(iter(missing["cubins"])))
    assert any("a cubin listed under cubins expected" in e for e in validation_errors(missing))

    ran_without_trials = copy.deepcopy(doc)
    ran_without_trials["runs"][0].update(status="ran", reason=None)
    assert any(e.startswith("runs/0") for e in validation_errors(ran_without_trials))

    silent_failure = copy.deepcopy(doc)
    silent_failure["cells"][0]["install"] = {"status": "failed", "reason": None}
    assert any(e.startswith("cells/0/install") for e in validation_errors(silent_failure))


@pytest.mark.toolchain
def test_one_real_cell_reproduces_the_case_build_and_its_document_validates():
    """cuda-tile 1.5.0 with tileiras 13.3 (the case's own sm_90 pins), in the toolchain
    environment nox -s toolchain makes: the cell exports the very cubin the case builds."""
    venv = toolchain_venv("tile_unload_race", "sm_90")
    if venv is None:
        pytest.skip("no tile_unload_race sm_90 toolchain venv (nox -s tests makes it)")
    into = SCRATCH / "real"
    done = pace.run([str(venv / "bin" / "python"), "-m", "gpurepro", "matrix", "cell",
                     "tile_unload_race", "--release", "1.5.0", "--family", "13.3",
                     "--build-dir", str(into.relative_to(ROOT))],
                    cwd=ROOT, capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    doc = cpu_document(load("tile_unload_race", ROOT), ROOT, into=into)
    assert validation_errors(doc) == []
    (cell,) = doc["cells"]
    assert cell["resolved"]["cuda-tile"] == "1.5.0" and cell["install"]["status"] == "ok"
    (export,) = cell["exports"]
    assert export["status"] == "ok"
    committed = _committed()
    assert export["sha256"] in committed["cubins"]  # the same bytes as the full CPU stage's
    assert len(doc["missing_cells"]) == len(load("tile_unload_race", ROOT).cells()) - 1


def test_an_install_failure_records_the_installers_reason_and_nothing_is_built():
    spec = load("tile_unload_race", ROOT)
    into = SCRATCH / "install-failure"
    record = run_cell(spec, spec.cell("1.7.0", "13.5"), ROOT, install_failed=True,
                      install_log=UV_FAILURE, into=into)
    assert record["install"]["status"] == "failed"
    assert record["install"]["reason"].startswith("error: No solution found when resolving dependencies")
    assert "nvidia-cuda-tileiras==13.0.0" in record["install"]["reason"]
    assert "\n" not in record["install"]["reason"]
    assert record["exports"] == [] and record["control"] is None
    assert set(record["resolved"]) == {p.split("==")[0] for p in record["requested"]}

    doc = cpu_document(spec, ROOT, into=into)
    assert validation_errors(doc) == []
    (result,) = doc["results"]
    assert result["tile"][0]["status"] == "could not run"
    assert result["tile"][0]["reason"] == f"install failed: {record['install']['reason']}"
    assert result["control"]["status"] == "could not run"
    assert "install failed: error: No solution found" in markdown(doc)


def _journal(path: Path, run: dict, trials: list[tuple[str, str, str, int]]) -> None:
    """A journal as `gpurepro run --artifact ...` writes it, with the given (arm, outcome,
    detail, exposure) trials."""
    arms = dict.fromkeys(arm for arm, *_ in trials)
    header = {"case": "tile_unload_race", "run_id": "test", "started_at": "2026-11-30T06:00:00Z",
              "plan": {"arms": {a: {} for a in arms},
                       "order": [{"index": i, "arm": t[0]} for i, t in enumerate(trials)]},
              "artifacts": {a: dict(sub) for a, sub in run["substitutes"].items()},
              "environment": {"host": {"hostname": "redacted"}, "redacted": True},
              "device": {"name": "NVIDIA H200", "target": "sm_90"}}
    with Journal.create(path, header) as j:
        for i, (arm, outcome, detail, exposure) in enumerate(trials):
            j.append_trial({"index": i, "arm": arm, "outcome": outcome, "detail": detail,
                            "exposure": exposure, "duration_s": 1.0})


NEWEST_TRIALS = [("baseline", "crashed", "SIGSEGV", 10_000), ("control-cuda", "survived", "", 250_000),
                 ("baseline", "crashed", "SIGSEGV", 20_000), ("baseline", "crashed", "SIGSEGV", 30_000),
                 ("baseline", "survived", "", 100_000), ("control-cuda", "survived", "", 250_000),
                 ("baseline", "invalid", "", 0)]


def _gpu_out(tmp: Path, doc: dict) -> Path:
    """A GPU stage's folder: the first run (the newest Tile IR cubin and its family's plain
    cubin) ran, the second was past the budget, the rest never reached."""
    first, late = doc["runs"][0], doc["runs"][1]
    _journal(tmp / f"{first['id']}.journal.jsonl", first, NEWEST_TRIALS)
    entry = {"seed": 0, "exit": 0, "wall_s": 10.0, "arms": ["baseline", "control-cuda"]}
    record = {"schema": GPU_SCHEMA, "kind": MATRIX, "document_sha256": "0" * 64, "mode": "grid",
              "started_at": "2026-11-30T06:00:00Z", "options": {"trials": 5}, "status": "ran",
              "reason": None, "detail": None, "wall_s": 30.0,
              "device": {"name": "NVIDIA H200", "driver_version": "580.159.04"},
              "runs": [{**entry, "id": first["id"], "status": "ran", "reason": None,
                        "journal": f"{first['id']}.journal.jsonl"},
                       {**entry, "id": late["id"], "status": "not run", "exit": None,
                        "reason": "not run: the GPU stage's budget of 60 s would be exceeded",
                        "journal": None}]}
    (tmp / GPU_FILE).write_text(json.dumps(record))
    return tmp


def test_the_plan_runs_the_newest_cubin_first_with_its_familys_control():
    doc = _subset(_committed(), SUBSET)
    first = doc["runs"][0]
    assert first["newest"] and "1.7.0-13.5" in first["cells"]
    assert set(first["substitutes"]) == {"tile_cubin", "cuda_cubin"}
    assert first["arms"] == ["baseline", "control-cuda"]
    # Every distinct cubin is in exactly one run as what it is.
    planned = [(a, s["sha256"]) for r in doc["runs"] for a, s in r["substitutes"].items()]
    tiles = [sha for a, sha in planned if a == "tile_cubin"]
    controls = [sha for a, sha in planned if a == "cuda_cubin"]
    assert len(set(controls)) == len(controls)
    assert set(tiles) | set(controls) == set(doc["cubins"])
    # A family with no Tile IR cubin (13.2 here) runs its plain cubin beside the newest baseline.
    last = doc["runs"][-1]
    assert last["substitutes"]["tile_cubin"] == first["substitutes"]["tile_cubin"]
    assert "1.3.0-13.2" in last["cells"]


def test_assembly_turns_journals_into_counts_exposure_and_exact_poisson_rates(tmp_path):
    cpu = _subset(_committed(), SUBSET)
    gpu_out = _gpu_out(tmp_path, cpu)
    doc = assemble(cpu, GpuRecord.read(gpu_out, MATRIX), gpu_out, SCRATCH / "journals", ROOT)
    assert validation_errors(doc) == []
    first, late = doc["runs"][:2]
    tile_sha = first["substitutes"]["tile_cubin"]["sha256"]
    control_sha = first["substitutes"]["cuda_cubin"]["sha256"]

    base = doc["cubins"][tile_sha]["trials"]["arms"]["baseline"]
    assert set(doc["cubins"][tile_sha]["trials"]["arms"]) == {"baseline"}  # the control is not its
    assert base["n"] == 5 and base["n_valid"] == 4 and base["failures"] == 3
    assert base["outcomes"] == {"crashed": 3, "invalid": 1, "survived": 1}
    assert base["details"]["crashed"] == {"SIGSEGV": 3}
    assert base["exposure"]["total"] == 160_000  # the invalid trial is no exposure
    e = 160_000 / 1e6
    assert base["rate"]["estimate"] == pytest.approx(3 / e)
    low, high = base["rate"]["ci95"]
    assert low == pytest.approx(sps.chi2.ppf(0.025, 6) / 2 / e)
    assert high == pytest.approx(sps.chi2.ppf(0.975, 8) / 2 / e)
    assert first["summary"]["baseline"] == base

    ctl = doc["cubins"][control_sha]["trials"]["arms"]["control-cuda"]
    assert ctl["failures"] == 0 and ctl["n_valid"] == 2 and ctl["rate"]["estimate"] == 0
    assert ctl["rate"]["ci95"][1] == pytest.approx(sps.chi2.ppf(0.975, 2) / 2 / 0.5)

    assert late["status"] == "not run" and "budget" in late["reason"]
    assert all(r["status"] == "not run" for r in doc["runs"][2:])
    assert (ROOT / first["journal"]).is_file() and not first["journal"].startswith("/")

    results = {r["cell"]: r for r in doc["results"]}
    newest = results["1.7.0-13.5"]
    assert newest["tile"][0]["status"] == "ran" and newest["tile"][0]["arms"]["baseline"] == base
    assert newest["control"]["arms"]["control-cuda"] == ctl
    assert results["1.0.0-13.5"]["tile"][0]["status"] == "could not run"
    assert results["1.0.0-13.5"]["control"]["status"] == "ran"  # the same plain cubin as 1.7.0's
    assert "budget" in results["1.7.0-13.4"]["tile"][0]["reason"]

    table = markdown(doc)
    assert "3/4 crashed: **18.8** per 10^6 cycles (95% CI" in table
    assert "0/2 crashed in 500 000 cycles: < 7.38 per 10^6 (95% upper bound)" in table


def test_a_journal_of_another_cubin_is_refused(tmp_path):
    cpu = _subset(_committed(), SUBSET)
    gpu_out = _gpu_out(tmp_path, cpu)
    journal = gpu_out / f"{cpu['runs'][0]['id']}.journal.jsonl"
    journal.unlink()
    other = copy.deepcopy(cpu["runs"][0])
    other["substitutes"]["tile_cubin"]["sha256"] = "f" * 64
    _journal(journal, other, NEWEST_TRIALS)
    with pytest.raises(UsageError, match="not the run's cubin"):
        assemble(cpu, GpuRecord.read(gpu_out, MATRIX), gpu_out, SCRATCH / "journals-wrong", ROOT)


def _cpu_file(tmp_path: Path) -> Path:
    """The subset's CPU document with a file of its own in place of each cubin (the GPU stage
    checks every cubin it may run before anything runs): the committed cubins' sha256 and paths
    replaced by the stand-ins' throughout."""
    doc = _subset(_committed(), SUBSET)
    text = json.dumps(doc)
    folder = SCRATCH / "cubins" / tmp_path.name
    folder.mkdir(parents=True, exist_ok=True)
    for i, (sha, cubin) in enumerate(doc["cubins"].items()):
        stand_in = folder / f"{i}.cubin"
        stand_in.write_text(f"a stand-in for {sha}\n")
        text = text.replace(sha, sha256_file(stand_in)).replace(
            f'"{cubin["path"]}"', f'"{stand_in.relative_to(ROOT)}"')
    path = tmp_path / "matrix.cpu.json"
    path.write_text(text)
    return path


def _run_gpu_stage(document: Path, out: Path, opts: Options | None = None) -> int:
    opts = opts or Options()
    return gpustage.run_gpu_stage(document, out, ROOT, Grid(read_document(document, MATRIX), opts),
                                  seed=opts.seed)


def test_without_a_gpu_the_stage_exits_5_and_every_cell_says_not_run_no_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(gpustage.envmod, "gpus", lambda: {"available": False, "reason": "no driver", "gpus": []})
    out = tmp_path / "gpu"
    document = _cpu_file(tmp_path)
    assert _run_gpu_stage(document, out) == 5
    record = json.loads((out / GPU_FILE).read_text())
    assert record["status"] == "not run" and record["reason"] == "not run: no GPU"
    path = write_document(document, out, ROOT, tmp_path / "results")
    assert path.name.endswith("_no-gpu.json") and path.with_suffix(".md").is_file()
    doc = json.loads(path.read_text())
    assert validation_errors(doc) == []
    exported = [t for r in doc["results"] for t in r["tile"] if t.get("sha256")]
    assert exported and all(t["reason"] == "not run: no GPU" for t in exported)


def test_runs_that_would_not_fit_the_budget_are_not_started(tmp_path, monkeypatch):
    monkeypatch.setattr(gpustage.envmod, "gpus", lambda: {"available": True, "gpus": [{"name": "X"}]})
    started = []
    monkeypatch.setattr(gpustage, "_harness", lambda *a, **k: started.append(a) or 0)
    out = tmp_path / "gpu"
    assert _run_gpu_stage(_cpu_file(tmp_path), out, Options(budget_s=1)) == 0
    record = json.loads((out / GPU_FILE).read_text())
    assert started == [] and record["runs"]
    assert all(r["status"] == "not run" and "budget of 1 s" in r["reason"] for r in record["runs"])


def test_an_unknown_arm_is_refused_before_anything_runs(tmp_path):
    done = pace.run([sys.executable, "-m", "gpurepro", "matrix", "run", str(_cpu_file(tmp_path)),
                     "--out", str(tmp_path / "gpu"), "--newest-arms", "baseline,no-such-arm"],
                    cwd=ROOT, capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 2 and "no-such-arm" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "gpu").exists()


def test_the_gpu_stage_needs_no_third_party_module(tmp_path):
    """GPU nodes have the standard library only: the stage loads, checks and (here, without a
    GPU or with one) starts with every analysis package blocked."""
    from tests.run.test_stdlib_run import BLOCKER

    done = pace.run([sys.executable, "-c", BLOCKER, "matrix", "run", str(_cpu_file(tmp_path)),
                     "--out", str(tmp_path / "gpu"), "--budget-s", "1"],
                    cwd=ROOT, capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode in (0, 5), done.stderr
    assert "blocked for this test" not in done.stderr
    assert json.loads((tmp_path / "gpu" / GPU_FILE).read_text())["schema"] == GPU_SCHEMA


def test_a_matrix_document_is_indexed_as_a_matrix_and_refused_by_report(tmp_path):
    from gpurepro.report.index import render

    results = tmp_path / "results"
    (results / "tile_unload_race").mkdir(parents=True)
    (results / "tile_unload_race" / "matrix_20261130T060000Z_no-gpu.json").write_text(
        json.dumps(_subset(_committed(), SUBSET)))
    text = render(results)
    assert "## Toolchain matrices (1)" in text and "## Case results (0)" in text
    assert "| [matrix_20261130T060000Z_no-gpu](tile_unload_race/matrix_20261130T060000Z_no-gpu.json) |" in text
    done = pace.run([sys.executable, "-m", "gpurepro", "report",
                     str(results / "tile_unload_race" / "matrix_20261130T060000Z_no-gpu.json")],
                    cwd=ROOT, capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 2 and "gpurepro matrix table" in done.stderr
