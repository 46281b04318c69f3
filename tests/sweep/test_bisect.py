"""Bisection over toolchain releases (gpurepro.sweep): the search, the CPU stage on a made-up
compiler (releases that crash, fail and repeat an artifact), the GPU stage through the real
harness on a case that needs no GPU, the document and its checks, and the CPU stage on two real
nvidia-cuda-nvcc-cu12 releases (PyPI; skipped offline)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from gpurepro.building.artifacts import build_case
from gpurepro.case import load_case
from gpurepro.errors import BuildError, ManifestError, UsageError
from gpurepro.model.files import sha256_file
from gpurepro.sweep import bisection as document
from gpurepro.sweep import cpu, gpu, model, search
from gpurepro.sweep.choose import Bisection
from tests import pace
from tests.conftest import ROOT, toolchain_venv

FIXTURE = ROOT / "tests" / "fixtures" / "bisect_case" / "manifest.py"
PTXAS_CASE = ROOT / "cases" / "ptxas_abs_clamp"

# ------------------------------------------------------------------------------ the search


def test_points_group_releases_by_artifact_and_skip_the_unbuilt():
    releases = [{"requested": "1", "sha256": "a"}, {"requested": "2", "sha256": "a"},
                {"requested": "3"}, {"requested": "4", "sha256": "b"},
                {"requested": "5", "sha256": "a"}]
    assert search.points_of(releases) == [
        {"index": 0, "sha256": "a", "releases": ["1", "2"]},
        {"index": 1, "sha256": "b", "releases": ["4"]},
        {"index": 2, "sha256": "a", "releases": ["5"]}]


def test_the_ends_of_each_segment_then_the_middle_between_runs_that_differ():
    points = [{"index": i, "sha256": str(i)} for i in range(11)]
    sig = {str(i): ("iabs" if i < 6 or i > 7 else "no iabs") for i in range(11)}
    segments = search.segments_of(points, sig)
    assert segments == [[0, 1, 2, 3, 4, 5], [6, 7], [8, 9, 10]]
    first = [i for i, _ in search.first_round(segments)]
    assert first == [0, 5, 6, 7, 8, 10]
    # good-bad-good: every end runs, so both boundaries are found without a middle point
    classes = {0: "passes", 5: "passes", 6: "fails", 7: "fails", 8: "passes", 10: "passes"}
    assert search.next_round(11, classes) == []
    assert search.boundaries(points, classes) == ([(5, 6), (7, 8)], [])
    # inside a segment whose ends differ: binary search
    classes = {0: "passes", 5: "fails"}
    assert [i for i, _ in search.next_round(11, classes)] == [2]
    classes[2] = "fails"
    assert [i for i, _ in search.next_round(11, classes)] == [1]
    classes[1] = "passes"
    assert search.next_round(11, classes) == [] and search.boundaries(points, classes)[0] == [(1, 2)]
    # an unknown stops the search there and leaves the boundary open
    assert search.next_round(11, {0: "passes", 5: "unknown"}) == []
    assert search.boundaries(points, {0: "passes", 5: "unknown"}) == ([], [(0, 5)])
    assert len(search.first_round(segments, exhaustive=True)) == 11


# ------------------------------------------------------------------------------ a made-up compiler

IABS, BAD = "        /*0000*/                   IABS R0, R2 ;", "        /*0010*/                   IADD R9, R9, 0x1 ;"
RELU = "        /*0000*/                   VIMNMX.RELU R0, R2, 0x5, PT ;"
EXIT = "        /*0020*/                   EXIT ;"


def _listing(*lines: str, note: str = "") -> str:
    return "\n".join(["\t\tFunction : k", *lines, EXIT, f"// {note}" if note else "", ""])


# release -> what its fakec writes: a listing, or "crash" / "fail"
FAKEC = {
    "1.0.0": _listing(IABS),
    "1.0.1": _listing(IABS, BAD, note="BAD"),
    "1.0.2": _listing(IABS, BAD, note="BAD 2"),
    "1.0.3": _listing(IABS, BAD, note="BAD 3"),
    "1.0.4": _listing(IABS, BAD, note="BAD 4"),
    "1.0.5": _listing(IABS, BAD, note="BAD 4"),  # the same artifact as 1.0.4
    "1.1.0": _listing(RELU),
    "1.1.1": "crash",
    "1.1.2": _listing(RELU, note="other"),
    "1.2.0": _listing(IABS, note="fixed"),
    "1.2.1": "fail",
    "1.2.2": _listing(IABS, note="fixed again"),
}
LISTED = [*FAKEC, "1.0.3rc1", "2.0.0"]


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _fake_index(monkeypatch, tmp_path: Path) -> None:
    def versions_of(package):
        assert package == "fake-compiler"
        return [v for v in LISTED if "rc" not in v]  # pip index versions: final releases only

    def release_tool(package, version, binary, cache):
        what = FAKEC[version]
        listing = tmp_path / "listings" / f"{version}.sass"
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text(what)
        body = {"crash": 'kill -SEGV $$\n',
                "fail": 'echo "fakec: cannot read $1: .version 9.3 is newer than this release" >&2\nexit 3\n'
                }.get(what, f'echo "fakec {version}" > /dev/null\ncp "{listing}" "$2"\n')
        program = _script(cache / "tools" / f"{package}-{version}" / binary,
                          f'[ "$1" = --version ] && {{ echo "fakec V{version}"; exit 0; }}\n' + body)
        return program, {"version": version, "file": f"fake_compiler-{version}.whl", "sha256": "0" * 64}

    monkeypatch.setattr(cpu.releases_mod, "versions_of", versions_of)
    monkeypatch.setattr(cpu, "release_tool", release_tool)
    cuobjdump = _script(tmp_path / "bin" / "cuobjdump", 'cat "$2"\n')
    monkeypatch.setattr(cpu, "_disassemblers", lambda case: {"cuobjdump": cuobjdump, "nvdisasm": None})


@pytest.fixture(scope="module")
def fake_case():
    case = load_case(FIXTURE, ROOT)
    build_case(case, "host", ROOT, ROOT / "build" / "tests")
    return case


@pytest.fixture
def cpu_document(fake_case, tmp_path, monkeypatch):
    _fake_index(monkeypatch, tmp_path)
    path = cpu.run_cpu_stage(fake_case, "fakec", "host", ROOT, ROOT / "build" / "tests",
                             tmp_path / "cache")
    return path


def test_the_cpu_stage_builds_every_listed_release_and_counts_identical_artifacts_once(cpu_document):
    doc = json.loads(cpu_document.read_text())
    assert cpu_document == ROOT / "build" / "bisect" / "bisect_case" / "fakec" / "host" / "bisect.cpu.json"
    assert doc["listing"]["considered"] == list(FAKEC)  # oldest first, found, not typed in
    assert {"version": "2.0.0", "reason": "outside the range"} in doc["listing"]["excluded"]
    by = {r["requested"]: r for r in doc["releases"]}
    assert all(r["resolved"] == r["requested"] and r["tool_version"] == r["requested"] for r in by.values())
    assert by["1.1.1"]["build"]["status"] == "crashed" and by["1.1.1"]["build"]["signal"] == "SIGSEGV"
    failed = by["1.2.1"]["build"]
    assert (failed["status"], failed["exit_status"], failed["signal"]) == ("failed", 3, None)
    # the first line it wrote, with paths of the checkout relative to it
    assert failed["stderr_first_line"].startswith("fakec: cannot read build/tests/bisect_case/")
    assert failed["stderr_first_line"].endswith("input.txt: .version 9.3 is newer than this release")
    assert "sha256" not in by["1.1.1"] and by["1.0.4"]["sha256"] == by["1.0.5"]["sha256"]
    assert len(doc["artifacts"]) == 9 and len(doc["points"]) == 9
    assert doc["artifacts"][by["1.0.4"]["sha256"]]["releases"] == ["1.0.4", "1.0.5"]
    assert [p["segment"] for p in doc["points"]] == [0, 0, 0, 0, 0, 1, 1, 2, 2]
    assert doc["artifacts"][by["1.1.0"]["sha256"]]["signature"] == {"k:IABS": False}
    for a in doc["artifacts"].values():
        assert (ROOT / a["path"]).is_file() and a["sass"]["read_by"] == "cuobjdump"
    from gpurepro.sweep.validation import sweep_errors as validation_errors

    pytest.importorskip("jsonschema")
    assert validation_errors(doc) == []


def _run_gpu_stage(cpu_document, out, exhaustive=False, **kw):
    choice = Bisection(model.read_document(cpu_document, model.BISECTION), exhaustive)
    return gpu.run_gpu_stage(cpu_document, out, ROOT, choice, **kw)


def _gpu_stage(cpu_document, tmp_path, monkeypatch, exhaustive=False):
    monkeypatch.setattr(gpu.envmod, "gpus", lambda: {
        "available": True, "driver_version": "580.159.04", "cuda_driver_api": 13000,
        "gpus": [{"name": "Fake H200", "compute_capability": "9.0"}]})
    out = tmp_path / ("gpu-all" if exhaustive else "gpu")
    said: list[str] = []
    rc = _run_gpu_stage(cpu_document, out, exhaustive, say=said.append)
    return rc, out, json.loads((out / model.GPU_FILE).read_text())


def test_the_gpu_stage_runs_the_fewest_artifacts_that_pin_every_boundary(cpu_document, tmp_path,
                                                                          monkeypatch):
    rc, out, record = _gpu_stage(cpu_document, tmp_path, monkeypatch)
    assert rc == 0 and record["status"] == "ran" and record["mode"] == "bisect"
    ran = [r["point"] for r in record["runs"]]
    assert ran == [0, 4, 5, 6, 7, 8, 2, 1]  # the ends of each segment, then bisection: 3 not run
    classes = {r["point"]: r["class"] for r in record["runs"]}
    assert classes == {0: "passes", 1: "fails", 2: "fails", 4: "fails", 5: "fails", 6: "fails",
                       7: "passes", 8: "passes"}
    first = record["runs"][0]
    assert first["counts"]["baseline"]["outcomes"] == {"survived": 1}
    assert record["runs"][1]["counts"]["baseline"]["outcomes"] == {"wrong_result": 1}
    assert "bisect: point 0 passes, point 4 fails" in record["runs"][6]["why"]

    pytest.importorskip("scipy")
    from gpurepro.sweep.assemble import write_document
    from gpurepro.sweep.table import markdown
    from gpurepro.sweep.validation import sweep_errors as validation_errors

    path = write_document(cpu_document, out, ROOT, tmp_path / "results")
    doc = json.loads(path.read_text())
    assert path.name == f"{model.document_name('bisect_fakec', record['started_at'], 'Fake H200')}.json"
    assert validation_errors(doc) == []
    pinned = doc["boundaries"]["pinned"]
    assert [b["between"] for b in pinned] == [["1.0.0", "1.0.1"], ["1.1.2", "1.2.0"]]
    assert pinned[0]["classes"] == ["passes", "fails"] and pinned[0]["sass"]["watched"] == []
    assert pinned[0]["sass"]["kernels"]["k"]["changes"] == [{"a": [], "b": ["IADD R9, R9, 0x1"]}]
    assert pinned[1]["sass"]["watched"] == [{"fact": "k:IABS", "before": False, "after": True}]
    assert pinned[1]["sass"]["kernels"]["k"]["only_b"] == {"IABS": 1}
    assert doc["boundaries"]["open"] == []
    results = {r["release"]: r for r in doc["results"]}
    assert results["1.0.3"]["status"] == "inferred" and results["1.0.3"]["class"] == "fails"
    assert results["1.0.5"]["status"] == "ran" and results["1.0.5"]["counts"] == results["1.0.4"]["counts"]
    assert results["1.1.1"] == {"release": "1.1.1", "resolved": "1.1.1", "sha256": None, "point": None,
                                "status": "not built", "class": None, "counts": None,
                                "reason": "crashed (SIGSEGV)"}
    assert results["1.2.1"]["reason"].startswith("failed (exit status 3): fakec: cannot read")
    assert results["1.0.1"]["counts"]["baseline"]["proportion"]["ci95"][0] > 0
    md = markdown(doc)
    assert "| 1.1.2 → 1.2.0 | fails → passes | k IABS: absent → present |" in md
    assert "inferred, not run" in md
    # A document whose boundaries were edited is refused.
    doc["boundaries"]["pinned"].pop()
    assert any(e.startswith("boundaries:") for e in validation_errors(doc))
    with pytest.raises(UsageError, match="exists"):
        write_document(cpu_document, out, ROOT, tmp_path / "results")


def _quick_harness(argv, root, log):
    """What `gpurepro run` journals for the fixture's driver, without running it: the trial
    is right where the artifact's listing has an IABS and no BAD."""
    from gpurepro.run.journal import Journal

    path = argv[argv.index("--artifact") + 1].split("=", 1)[1]
    journal = Path(argv[argv.index("--journal") + 1])
    text = (root / path).read_text()
    outcome = "survived" if "IABS" in text and "BAD" not in text else "wrong_result"
    header = {"case": "bisect_case", "run_id": "test", "plan": {"arms": {"baseline": {}}, "order": []},
              "artifacts": {"kernel": {"sha256": sha256_file(root / path)}}}
    with Journal.create(journal, header) as j:
        j.append_trial({"index": 0, "arm": "baseline", "outcome": outcome, "exposure": 1})
    log.write_text("")
    return 0


def test_exhaustive_runs_every_artifact_and_finds_the_same_boundaries(cpu_document, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setattr(gpu, "_harness", _quick_harness)
    rc, out, record = _gpu_stage(cpu_document, tmp_path, monkeypatch, exhaustive=True)
    assert rc == 0 and sorted(r["point"] for r in record["runs"]) == list(range(9))
    assert record["mode"] == "exhaustive"
    doc = json.loads(cpu_document.read_text())
    doc.update(runs=[{**r, "status": "ran"} for r in record["runs"]])
    assert [b["between"] for b in document.boundaries(doc)["pinned"]] == [["1.0.0", "1.0.1"],
                                                                        ["1.1.2", "1.2.0"]]


def test_without_a_gpu_the_stage_exits_5_and_runs_nothing(cpu_document, tmp_path, monkeypatch):
    monkeypatch.setattr(gpu.envmod, "gpus", lambda: {"available": False, "reason": "no driver", "gpus": []})
    assert _run_gpu_stage(cpu_document, tmp_path / "g") == 5
    record = json.loads((tmp_path / "g" / model.GPU_FILE).read_text())
    assert record["status"] == "not run" and record["runs"] == []


def test_a_missing_artifact_is_refused_naming_what_to_carry(cpu_document, tmp_path):
    doc = json.loads(cpu_document.read_text())
    sha, art = next(iter(doc["artifacts"].items()))
    art["path"] = "build/bisect/bisect_case/fakec/host/artifacts/nosuch.cubin"
    other = tmp_path / "cpu.json"
    other.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="carry build/bisect/bisect_case/fakec/host"):
        _run_gpu_stage(other, tmp_path / "g")


def test_the_cpu_document_fingerprints_every_checkout_file_its_build_reads(tmp_path, monkeypatch):
    """A case file the axis's build names ({case}/flags.txt) and the sources of the artifact it
    reads ({artifact:source}, from make_source.py) are recorded with their sha256; an edit of
    either is then what `changed` names."""
    root = tmp_path / "repo"
    folder = root / "cases" / "bisect_case"
    shutil.copytree(FIXTURE.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "flags.txt").write_text("-O3\n")
    manifest = folder / "manifest.py"
    read = '"{artifact:source}/input.txt", "{out}/kernel.cubin"'
    manifest.write_text(manifest.read_text().replace(read, read + ', "--flags={case}/flags.txt"'))
    case = load_case(manifest, root)
    build_case(case, "host", root, root / "build")
    _fake_index(monkeypatch, tmp_path)
    doc = json.loads(cpu.run_cpu_stage(case, "fakec", "host", root, root / "build",
                                       tmp_path / "cache").read_text())
    assert doc["schema"] == "gpurepro/bisect/2"
    assert doc["sources"] == {"cases/bisect_case/flags.txt": sha256_file(folder / "flags.txt"),
                              "cases/bisect_case/make_source.py": sha256_file(folder / "make_source.py")}
    assert cpu.changed(doc, case, root) is None
    (folder / "flags.txt").write_text("-O0\n")
    assert cpu.changed(doc, case, root) == ("cases/bisect_case/flags.txt, which the axis's build "
                                            f"read, changed (sha256 {doc['sources']['cases/bisect_case/flags.txt'][:12]} then)")
    (folder / "flags.txt").unlink()
    assert cpu.changed(doc, case, root) == "cases/bisect_case/flags.txt, which the axis's build read, is missing"


def test_a_pack_refuses_a_cpu_stage_whose_axis_the_manifest_has_changed(cpu_document, fake_case):
    """The axis's arms changed after its CPU stage ran: every run on the node would have failed
    with unknown arms; the pack refuses in one line naming what changed, and so does a GPU stage."""
    from dataclasses import replace

    from gpurepro.case import Arm
    from gpurepro.pack.archive import bisect_members

    names = {m.name for m in bisect_members(fake_case, ROOT, "fakec", "host")}
    assert "tests/fixtures/bisect_case/make_source.py" in names  # the node checks what was read
    moved = replace(fake_case, arms=[*fake_case.arms, Arm("other", {})],
                    axes={"fakec": replace(fake_case.axes["fakec"], arms=("other",))})
    said = 'the manifest\'s axis fakec\'s arms is ["other"] now, ["baseline"] then'
    with pytest.raises(BuildError) as refused:
        bisect_members(moved, ROOT, "fakec", "host")
    assert said in str(refused.value) and "\n" not in str(refused.value)
    assert "--stage cpu` again" in str(refused.value)
    with pytest.raises(UsageError, match="is stale: " + said.replace("[", r"\[").replace("]", r"\]")):
        cpu.check_current(json.loads(cpu_document.read_text()), moved, ROOT, "bisect.cpu.json")
    # Anything else the stages read from the manifest counts too: its failure outcomes.
    other = replace(fake_case, failure_outcomes=("crashed",))
    assert cpu.changed(json.loads(cpu_document.read_text()), other, ROOT).startswith(
        "the case's failure_outcomes is")


def test_the_cpu_stage_without_pip_stops_in_one_line_before_anything(fake_case, monkeypatch):
    found = cpu.importlib.util.find_spec
    monkeypatch.setattr(cpu.importlib.util, "find_spec",
                        lambda name, *a: None if name == "pip" else found(name, *a))
    with pytest.raises(BuildError, match="lists and fetches each release with pip, which this Python"):
        cpu.run_cpu_stage(fake_case, "fakec", "host", ROOT, ROOT / "build" / "tests", ROOT / "build")


def test_a_bad_axis_names_the_manifest_field(fake_case):
    from dataclasses import replace

    from gpurepro.case.axis import check_axes

    ax = fake_case.axes["fakec"]
    for bad, field in ((replace(ax, build=("cp", "{out}/x")), "axes.fakec.build"),
                       (replace(ax, artifact="nosuch"), "axes.fakec.artifact"),
                       (replace(ax, arms=("nosuch",)), "axes.fakec.arms"),
                       (replace(ax, versions="~=1.0"), "axes.fakec.versions"),
                       (replace(ax, timeout_s=1), "axes.fakec.timeout_s")):
        with pytest.raises(ManifestError, match=field.replace(".", r"\.")):
            check_axes({"fakec": bad}, {"source", "kernel"}, {"baseline"}, "manifest.py")


def test_the_command_line_refuses_an_unknown_axis():
    done = pace.run([sys.executable, "-m", "gpurepro", "bisect", "ptxas_abs_clamp", "--axis", "nvcc"],
                    cwd=ROOT, capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 2 and "has no toolchain axis 'nvcc' (its axes: ptxas, ptxas-as-emitted)" in done.stderr


# ------------------------------------------------------------------------------ two real releases


def _online() -> bool:
    try:
        urllib.request.urlopen("https://pypi.org/pypi/nvidia-cuda-nvcc-cu12/json", timeout=10).close()
    except OSError:
        return False
    return True


@pytest.mark.toolchain
def test_the_cpu_stage_on_two_real_ptxas_releases(tmp_path, monkeypatch):
    """ptxas 12.6.77 and 12.6.85 from their wheels on the case's lowered PTX: two cubins, the
    IABS absent from the first and present in the second; disassembled by the pinned 13.2.51
    tools where a toolchain environment has them."""
    if not _online():
        pytest.skip("PyPI is not reachable: the wheels cannot be listed")
    case = load_case(PTXAS_CASE / "manifest.py", ROOT)
    # The axis reads the case's lowered PTX: the committed emitted PTX, lowered here, stands in
    # for the build (which needs nvcc).
    ptx_dir = tmp_path / "ptx_lowered"
    ptx_dir.mkdir()
    low = subprocess.run([sys.executable, "-m", "gpurepro.building.ptx",
                          str(ROOT / "tests" / "data" / "ptxas_abs_clamp" / "kernel.emitted.ptx"),
                          str(ptx_dir / "kernel.ptx"), "8.0"], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert "9.3 -> 8.0" in low.stdout
    rel = os.path.relpath(ptx_dir, ROOT)
    monkeypatch.setattr(cpu, "load_index", lambda *a: {"artifacts": {"ptx_lowered": {
        "dir": rel, "path": f"{rel}/kernel.ptx", "sha256": sha256_file(ptx_dir / "kernel.ptx")}}})
    venv = toolchain_venv("tcgen05_alloc_order", "sm_103a")
    tools = {n: (venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" /
                 "site-packages" / "nvidia" / "cu13" / "bin" / n) if venv else None
             for n in ("cuobjdump", "nvdisasm")}
    monkeypatch.setattr(cpu, "_disassemblers", lambda case: {n: p if p and p.is_file() else None
                                                             for n, p in tools.items()})
    path = cpu.run_cpu_stage(case, "ptxas", "sm_90", ROOT, ROOT / "build", ROOT / "build" / "releases",
                             only=("12.6.77", "12.6.85"),
                             into=ROOT / "build" / "tests" / "bisect-two-releases")
    doc = json.loads(path.read_text())
    assert doc["listing"]["only"] == ["12.6.77", "12.6.85"]
    assert len(doc["listing"]["considered"]) >= 22 and doc["listing"]["considered"][0] == "12.0.76"
    shas = [r["sha256"] for r in doc["releases"]]
    # the cubins releases.cpu.json lists for these two releases (the same PTX, the same flags)
    assert [s[:12] for s in shas] == ["4cbf1aabb220", "35475321026e"]
    if all(tools.values()) and all(p.is_file() for p in tools.values()):
        sigs = [doc["artifacts"][s]["signature"] for s in shas]
        assert sigs == [{"abs_clamp:IABS": False}, {"abs_clamp:IABS": True}]
        assert doc["common_reader"] == "cuobjdump"
    shutil.rmtree(path.parent)


def test_the_gpu_stage_needs_no_third_party_module():
    """What a GPU node with Python and the standard library runs: the GPU stage, the search,
    the document's derivations, the command, the SASS tooling (and the CPU stage too)."""
    from tests.run.test_stdlib_run import STRICT_BLOCKER

    modules = ["gpurepro.sweep.gpu", "gpurepro.sweep.choose", "gpurepro.sweep.model",
               "gpurepro.sweep.search", "gpurepro.sweep.bisection", "gpurepro.sweep.matrix",
               "gpurepro.sweep.cpu", "gpurepro.sweep.table", "gpurepro.cli.matrix",
               "gpurepro.building.sass", "gpurepro.cli.bisect", "gpurepro.case.axis"]
    done = pace.run([sys.executable, "-c", STRICT_BLOCKER, *modules], cwd=ROOT,
                    capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"imported {len(modules)}" in done.stdout
