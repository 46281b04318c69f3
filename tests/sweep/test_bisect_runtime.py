"""A runtime axis (``RuntimeAxis``) bisected like a toolchain: the releases of a runtime package
pip lists in the axis's range as points, each resolved with its own dependencies and its wheels
ready for the trials' Python (CPU stage), the arms run per release through the real harness with
that release's runtime index (GPU stage: the search, or every point), one bisection document.

The wheels are made here and served by pip's own settings (``PIP_NO_INDEX``,
``PIP_FIND_LINKS``): nothing is fetched from an index."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from gpurepro.building.artifacts import build_case
from gpurepro.case import ManifestError, load_case
from gpurepro.errors import UsageError
from gpurepro.sweep import cpu, gpu, model
from gpurepro.sweep.choose import Bisection
from gpurepro.sweep.runtime_cpu import run_runtime_cpu_stage
from tests.conftest import ROOT

MANIFEST = ROOT / "tests" / "fixtures" / "runtime_bisect_case" / "manifest.py"
BUILD = ROOT / "build" / "tests-runtime-bisect"
# release -> (broken, its requirements); 3.0 is outside the axis's range, 1.4's dependency
# has no release inside its range.
PROBES = {"1.0": (False, ("gpurepro-dep<2",)), "1.1": (False, ("gpurepro-dep<2",)),
          "1.2": (True, ("gpurepro-dep<2",)), "1.3": (True, ("gpurepro-dep<2",)),
          "1.4": (True, ("gpurepro-dep>=9",)), "2.0": (True, ("gpurepro-dep>=2",)),
          "3.0": (False, ())}


def _wheel(folder: Path, name: str, version: str, body: str, requires: tuple[str, ...]) -> None:
    module = name.replace("-", "_")
    dist = f"{module}-{version}"
    files = {f"{module}/__init__.py": body,
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: "
             f"{version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: gpurepro-tests\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(t.encode())}" for p, t in files.items()]
    files[f"{dist}.dist-info/RECORD"] = "\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as z:
        for path, text in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0)), text)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("probe-wheels")
    for version, (broken, requires) in PROBES.items():
        _wheel(folder, "gpurepro-probe", version,
               f"__version__ = {version!r}\nBROKEN = {broken}\n", requires)
    for version in ("1.0", "1.5", "2.0"):
        _wheel(folder, "gpurepro-dep", version, f"__version__ = {version!r}\n", ())
    mp = pytest.MonkeyPatch()
    mp.setenv("PIP_NO_INDEX", "1")
    mp.setenv("PIP_FIND_LINKS", str(folder))
    mp.setenv("PIP_CONFIG_FILE", "/dev/null")
    yield folder
    mp.undo()


@pytest.fixture(scope="module")
def case():
    found = load_case(MANIFEST, ROOT)
    build_case(found, "host", ROOT, BUILD)
    return found


@pytest.fixture(scope="module")
def cpu_document(served, case):
    return run_runtime_cpu_stage(case, "probe", "host", ROOT, BUILD)


def test_each_release_in_the_range_is_a_point_with_its_own_dependencies(cpu_document):
    doc = json.loads(cpu_document.read_text())
    assert cpu_document == ROOT / "build/bisect/runtime_bisect_case/probe/host/bisect.cpu.json"
    assert doc["axis"]["package"] == "gpurepro-probe" and doc["axis"]["runtime"] == {"factor": "probe"}
    assert doc["listing"]["considered"] == ["1.0", "1.1", "1.2", "1.3", "1.4", "2.0"]
    assert {"version": "3.0", "reason": "outside the range"} in doc["listing"]["excluded"]
    by = {r["requested"]: r for r in doc["releases"]}
    assert by["1.0"]["pins"] == ["gpurepro-probe==1.0", "gpurepro-dep==1.5"]
    assert by["2.0"]["pins"] == ["gpurepro-probe==2.0", "gpurepro-dep==2.0"]
    assert by["1.4"]["build"]["status"] == "failed" and "sha256" not in by["1.4"]
    assert "gpurepro-dep" in by["1.4"]["build"]["stderr_first_line"]
    assert [p["releases"] for p in doc["points"]] == [["1.0"], ["1.1"], ["1.2"], ["1.3"], ["2.0"]]
    # each point is one release's runtime index: the axis's arm with that release's wheels
    index = json.loads((ROOT / doc["artifacts"][by["1.2"]["sha256"]]["path"]).read_text())
    assert index["arms"]["probe"]["requested"] == ["gpurepro-probe==1.2", "gpurepro-dep==1.5"]
    assert all((ROOT / w["path"]).is_file() for w in index["wheels"].values())
    from gpurepro.sweep.validation import sweep_errors

    pytest.importorskip("jsonschema")
    assert sweep_errors(doc) == []


def _fake_gpu(monkeypatch):
    monkeypatch.setattr(gpu.envmod, "gpus", lambda: {
        "available": True, "driver_version": "580.159.04", "cuda_driver_api": 13000,
        "gpus": [{"name": "Fake H200", "compute_capability": "9.0"}]})


def test_the_search_runs_the_releases_through_the_harness_and_pins_the_boundary(
        cpu_document, tmp_path, monkeypatch):
    _fake_gpu(monkeypatch)
    out = tmp_path / "gpu"
    choice = Bisection(model.read_document(cpu_document, model.BISECTION))
    assert gpu.run_gpu_stage(cpu_document, out, ROOT, choice, say=lambda _m: None) == 0
    record = json.loads((out / model.GPU_FILE).read_text())
    # the ends, then the middle, then between the two that differ: 1.3 is not run
    assert [(r["point"], r["class"]) for r in record["runs"]] == [
        (0, "passes"), (4, "fails"), (2, "fails"), (1, "passes")]

    pytest.importorskip("scipy")
    from gpurepro.sweep.assemble import write_document
    from gpurepro.sweep.table import markdown

    path = write_document(cpu_document, out, ROOT, tmp_path / "results")
    doc = json.loads(path.read_text())
    assert path.name.startswith("bisect_probe_")
    assert [b["between"] for b in doc["boundaries"]["pinned"]] == [["1.1", "1.2"]]
    results = {r["release"]: r for r in doc["results"]}
    assert results["1.3"]["status"] == "inferred" and results["1.3"]["class"] == "fails"
    assert results["1.2"]["counts"]["probe"]["outcomes"] == {"crashed": 1}
    assert results["1.4"]["status"] == "not built"
    assert "| 1.1 → 1.2 | passes → fails |" in markdown(doc)
    journal = (ROOT / doc["runs"][0]["journal"]) if not doc["runs"][0]["journal"].startswith(
        "bisect_") else path.parent / doc["runs"][0]["journal"]
    header = json.loads(journal.read_text().splitlines()[0])
    assert header["runtime"]["arms"]["probe"]["resolved"]["gpurepro-probe"] == "1.0"


def _quick_harness(argv, root, log):
    """What `gpurepro run` journals, without running it: the runtime index it was handed, and
    a crash where that release is marked broken."""
    from gpurepro.run.journal import Journal

    assert "--artifact" not in argv
    index = root / argv[argv.index("--runtime-index") + 1]
    release = json.loads(index.read_text())["release"]["version"]
    header = {"case": "runtime_bisect_case", "run_id": "test",
              "plan": {"arms": {"probe": {}}, "order": []}, "artifacts": {},
              "runtime": {"index": {"path": str(index.relative_to(root)),
                                    "sha256": hashlib.sha256(index.read_bytes()).hexdigest()}}}
    with Journal.create(Path(argv[argv.index("--journal") + 1]), header) as j:
        j.append_trial({"index": 0, "arm": "probe", "exposure": 1,
                        "outcome": "crashed" if PROBES[release][0] else "survived"})
    log.write_text("")
    return 0


def test_every_release_runs_where_asked_and_gives_the_same_boundary(cpu_document, tmp_path,
                                                                     monkeypatch):
    _fake_gpu(monkeypatch)
    monkeypatch.setattr(gpu, "_harness", _quick_harness)
    out = tmp_path / "gpu-all"
    choice = Bisection(model.read_document(cpu_document, model.BISECTION), exhaustive=True)
    assert gpu.run_gpu_stage(cpu_document, out, ROOT, choice, say=lambda _m: None) == 0
    record = json.loads((out / model.GPU_FILE).read_text())
    assert record["mode"] == "exhaustive" and sorted(r["point"] for r in record["runs"]) == [0, 1, 2, 3, 4]
    pytest.importorskip("scipy")
    from gpurepro.sweep.assemble import write_document

    doc = json.loads(write_document(cpu_document, out, ROOT, tmp_path / "results").read_text())
    assert [b["between"] for b in doc["boundaries"]["pinned"]] == [["1.1", "1.2"]]
    assert all(r["status"] in ("ran", "not built") for r in doc["results"])


def test_a_pack_of_the_axis_carries_each_releases_wheels(cpu_document, case):
    from gpurepro.pack.archive import bisect_members

    names = {m.name.rsplit("/", 1)[-1] for m in bisect_members(case, ROOT, "probe", "host")}
    assert {"gpurepro_probe-1.0-py3-none-any.whl", "gpurepro_probe-2.0-py3-none-any.whl",
            "gpurepro_dep-1.5-py3-none-any.whl", "gpurepro_dep-2.0-py3-none-any.whl"} <= names
    assert "gpurepro_probe-1.4-py3-none-any.whl" not in names  # it did not resolve: no run


def test_the_cpu_stage_of_a_runtime_axis_is_current_until_the_axis_changes(cpu_document, case):
    doc = json.loads(cpu_document.read_text())
    assert cpu.changed(doc, case, ROOT) is None
    doc["axis"]["versions"] = ">=1.0,<2"
    assert "versions" in (cpu.changed(doc, case, ROOT) or "")


@pytest.mark.parametrize("edit, field", [
    ('factor="probe", arms', "axes.probe.factor"),  # replaced below with an unknown factor
    ('arms=("probe",)', "axes.probe.arms"),
])
def test_a_bad_runtime_axis_names_its_field(tmp_path, edit, field):
    text = MANIFEST.read_text()
    bad = {'factor="probe", arms': 'factor="nope", arms',
           'arms=("probe",)': 'arms=("other",)'}[edit]
    path = tmp_path / "manifest.py"
    path.write_text(text.replace(edit, bad))
    with pytest.raises(ManifestError, match=field.replace(".", r"\.")):
        load_case(path, ROOT)


def test_a_toolchain_stage_refuses_a_runtime_axis_in_one_line(case):
    with pytest.raises(UsageError, match="runtime axis"):
        cpu.axis_of(case, "probe")


def test_the_docs_show_a_runtime_axis_the_manifest_accepts_and_the_command_that_sweeps_it():
    """Every ``RuntimeAxis(...)`` the sweep page and the case contract write builds as written,
    and each page gives the bisect command over it."""
    import re

    from gpurepro import case as case_api

    for page in ("docs/toolchains.md", "docs/cases.md"):
        text = (ROOT / page).read_text()
        calls = re.findall(r"RuntimeAxis\((?:[^()]|\([^()]*\))*\)", text.replace("\n", " "))
        assert calls, page
        for call in calls:
            axis = eval(call.replace("case.RuntimeAxis", "RuntimeAxis"),  # noqa: S307
                        {"RuntimeAxis": case_api.RuntimeAxis})
            assert axis.describe()["runtime"]["factor"] == axis.factor
        assert re.search(r"gpurepro bisect my_bug\s+--axis \w+ --stage cpu", text), page
    assert "runtime-releases" in (ROOT / "docs/cases.md").read_text()
