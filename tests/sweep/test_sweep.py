"""The release sweep (gpurepro.sweep) across its two kinds: the committed bisection and matrix
documents still validate and render as committed, both schemas share the sweep core, the typed
GPU record reads back what it wrote, and the record of a GPU stage from before the sweep was one
package (bisect-gpu.json) assembles into the same document as today's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpurepro.record.validation import load_schema
from gpurepro.sweep import model
from gpurepro.sweep.table import markdown
from gpurepro.sweep.validation import sweep_errors as validation_errors
from tests.conftest import ROOT

COMMITTED = sorted([*ROOT.glob("results/*/bisect_*.json"), *ROOT.glob("results/*/matrix_*.json")])


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_a_committed_sweep_document_validates_and_renders_its_committed_markdown(path):
    doc = json.loads(path.read_text())
    assert validation_errors(doc) == []
    assert markdown(doc) == path.with_suffix(".md").read_text()


def test_both_sweep_schemas_are_built_on_the_shared_core():
    core = load_schema("sweep.schema.json")
    for name in ("bisect.schema.json", "matrix.schema.json"):
        text = (ROOT / "schema" / name).read_text()
        for part in ("case", "gpu", "run", "armCounts", "rate", "sha256"):
            assert f'"sweep.schema.json#/$defs/{part}"' in text, (name, part)
            assert part in core["$defs"]
    # A field the core constrains is checked in either kind through it.
    doc = json.loads(COMMITTED[0].read_text())
    doc["gpu"]["started_at"] = "yesterday"
    assert any(e.startswith("gpu/started_at") for e in validation_errors(doc))


def test_a_version_2_bisection_needs_the_files_its_build_read():
    doc = json.loads(next(p for p in COMMITTED if p.name.startswith("bisect_")).read_text())
    assert doc["schema"] == "gpurepro/bisect/1" and "sources" not in doc  # valid as it is
    doc["schema"] = "gpurepro/bisect/2"
    assert "(document): 'sources' is a required property" in validation_errors(doc)
    doc["sources"] = {"cases/x/build.py": "0" * 64}
    assert validation_errors(doc) == []


def test_the_gpu_record_reads_back_what_it_wrote(tmp_path):
    run = model.Run(id="point003_abc", arms=("a",), why="an end of segment 1 of 2", seed=3,
                    substitutes={"cubin": model.Substitute("f" * 64, "build/x.cubin")},
                    status="ran", exit=0, wall_s=1.5, journal="j.jsonl", point=3,
                    releases=("1.0", "1.1"), klass="fails", timing={"ratio": 1.2},
                    counts={"a": model.ArmCounts(3, {"crashed": 2, "survived": 1},
                                                 {"crashed": {"SIGSEGV": 2}, "survived": {"": 1}},
                                                 3, 2, 30.0)})
    record = model.GpuRecord(kind=model.BISECTION, document_sha256="0" * 64, mode="bisect", seed=3,
                             status="ran", device={"name": "X"}, runs=[run])
    record.write(tmp_path)
    back = model.GpuRecord.read(tmp_path, model.BISECTION)
    # A bisection's counts carry no details (its documents never did).
    assert back.runs[0].counts["a"].details == {}
    assert back.to_json() == record.to_json()
    with pytest.raises(model.UsageError, match="not the record of a matrix's GPU stage"):
        model.GpuRecord.read(tmp_path, model.MATRIX)


def test_an_earlier_bisect_gpu_record_assembles_into_the_same_document(tmp_path, monkeypatch):
    """bisect-gpu.json, as GPU stages wrote it before the sweep (a pack made then, run now), is
    read and assembled as today's record of the same runs."""
    pytest.importorskip("scipy")
    from gpurepro.sweep.assemble import write_document
    from tests.sweep.test_bisect import _gpu_stage, _quick_harness

    monkeypatch.setattr("gpurepro.sweep.gpu._harness", _quick_harness)
    document = _cpu_document(tmp_path, monkeypatch)
    rc, out, record = _gpu_stage(document, tmp_path, monkeypatch)
    assert rc == 0
    old = tmp_path / "old"
    shutil.copytree(out, old)
    (old / model.GPU_FILE).unlink()
    keep = ("point", "why", "seed", "status", "reason", "journal", "exit", "wall_s", "counts",
            "class", "timing", "same_as_point")
    runs = [{**{k: r[k] for k in keep if k in r},
             "sha256": next(iter(r["substitutes"].values()))["sha256"], "releases": r["releases"]}
            for r in record["runs"]]
    (old / "bisect-gpu.json").write_text(json.dumps({
        "schema": "gpurepro/bisect-gpu/1", "document_sha256": record["document_sha256"],
        "started_at": record["started_at"], "mode": "bisect", "seed": 0, "status": "ran",
        "reason": None, "detail": None, "device": record["device"], "wall_s": 1.0, "runs": runs}))
    today = json.loads(write_document(document, out, ROOT, tmp_path / "today").read_text())
    before = json.loads(write_document(document, old, ROOT, tmp_path / "before").read_text())
    assert validation_errors(before) == []
    for key in ("results", "boundaries"):
        assert before[key] == today[key]
    strip = lambda runs: [{k: v for k, v in r.items() if k != "journal"} for r in runs]  # noqa: E731
    assert strip(before["runs"]) == strip(today["runs"])


def _cpu_document(tmp_path: Path, monkeypatch) -> Path:
    from gpurepro.building.artifacts import build_case
    from gpurepro.case import load_case
    from gpurepro.sweep import cpu
    from tests.sweep.test_bisect import FIXTURE, _fake_index

    case = load_case(FIXTURE, ROOT)
    build_case(case, "host", ROOT, ROOT / "build" / "tests")
    _fake_index(monkeypatch, tmp_path)
    return cpu.run_cpu_stage(case, "fakec", "host", ROOT, ROOT / "build" / "tests", tmp_path / "cache",
                             into=ROOT / "build" / "tests" / f"sweep-{tmp_path.name}")
