"""Toolchain releases as a factor (Factor.releases, Artifact.per; gpurepro.building.releases).

The releases are wheels made here (tests/fixtures/release_case: ``gpurepro-fakecc-old`` 1.0.0,
1.5.0 and 1.9.0rc1, ``gpurepro-fakecc`` 2.0.0 and 3.0.0, each holding ``bin/fakecc``) served to
pip from a folder through pip's own settings (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``): nothing is
asked of an index. One slow test resolves a real release from PyPI.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import jsonschema
import pytest

from gpurepro.building import releases
from gpurepro.building.artifacts import build_case
from gpurepro.case import Family, ManifestError, Releases, load_case, validate
from gpurepro.case.model import Artifact, Case, TrialBudget
from gpurepro.errors import BuildError
from gpurepro.run.execute import _context
from tests.conftest import ROOT

MANIFEST = ROOT / "tests" / "fixtures" / "release_case" / "manifest.py"
SCRIPT = """#!/bin/sh
if [ "$1" = --version ]; then echo "fakecc: release {short}, V{version}"; exit 0; fi
echo "made by fakecc {version}" > "$1"
"""


def make_tool_wheel(folder: Path, name: str, version: str) -> Path:
    """A wheel of ``name`` holding ``<module>/bin/fakecc`` (executable when extracted)."""
    module = name.replace("-", "_")
    dist = f"{module}-{version}"
    files = {
        f"{module}/bin/fakecc": SCRIPT.format(version=version, short=version.rsplit(".", 1)[0]),
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: gpurepro-tests\n"
                                   "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    files[f"{dist}.dist-info/RECORD"] = "\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n"
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0)), text)
    return wheel


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release-wheels")
    for name, version in (("gpurepro-fakecc-old", "1.0.0"), ("gpurepro-fakecc-old", "1.5.0"),
                          ("gpurepro-fakecc-old", "1.9.0rc1"), ("gpurepro-fakecc-old", "2.5.0"),
                          ("gpurepro-fakecc", "2.0.0"), ("gpurepro-fakecc", "3.0.0")):
        make_tool_wheel(folder, name, version)
    return folder


@pytest.fixture(scope="module")
def local_pip(index_dir):
    """pip's own settings pointed at the folder, for every pip the harness starts."""
    mp = pytest.MonkeyPatch()
    mp.setenv("PIP_NO_INDEX", "1")
    mp.setenv("PIP_FIND_LINKS", str(index_dir))
    mp.setenv("PIP_CONFIG_FILE", "/dev/null")
    yield index_dir
    mp.undo()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A repository root holding the fixture case (as cases/release_case)."""
    top = tmp_path_factory.mktemp("release-root")
    shutil.copytree(MANIFEST.parent, top / "cases" / "release_case")
    return top


@pytest.fixture(scope="module")
def case(root):
    return load_case(root / "cases" / "release_case" / "manifest.py", root)


@pytest.fixture(scope="module")
def tree(root, case, local_pip):
    """The root with the lock the lock step writes for the fixture case."""
    doc = releases.lock_document(case)
    path = releases.lock_path(root, case.name)
    path.parent.mkdir(parents=True)
    path.write_text(releases.lock_text(doc))
    return root


@pytest.fixture(scope="module")
def built(tree, case):
    """The fixture case built once for the host (its artifacts.json), for the tests that read a
    build without testing it: each runs alone too, in any order."""
    return build_case(case, "host", tree, tree / "build")


def test_a_release_belongs_to_the_first_family_whose_range_holds_it(case):
    fam = case.factors["fakecc"].releases
    assert releases.family_of(fam, "1.5.0") == "gpurepro-fakecc-old"
    assert releases.family_of(fam, "2.0.0") == "gpurepro-fakecc"
    with pytest.raises(BuildError, match="in no family's range"):
        releases.family_of(Releases("x", (Family("a", "<1"),)), "2.0")


def test_an_axis_lists_every_final_release_family_after_family(local_pip, case):
    got = releases.listed(case.factors["fakecc"].releases)
    # 1.9.0rc1 is a pre-release, 2.5.0 of the old package lies outside its range.
    assert got == [{"package": "gpurepro-fakecc-old", "version": "1.0.0"},
                   {"package": "gpurepro-fakecc-old", "version": "1.5.0"},
                   {"package": "gpurepro-fakecc", "version": "2.0.0"},
                   {"package": "gpurepro-fakecc", "version": "3.0.0"}]


def test_the_lock_holds_each_release_an_arm_uses_with_the_served_files_sha256(tree, case, index_dir):
    lock = json.loads(releases.lock_path(tree, case.name).read_text())
    assert lock["factors"] == {"fakecc": ["gpurepro-fakecc-old==1.0.0", "gpurepro-fakecc-old==1.5.0",
                                          "gpurepro-fakecc==2.0.0"]}
    for entry in lock["releases"].values():
        served = index_dir / entry["file"]
        assert entry["sha256"] == hashlib.sha256(served.read_bytes()).hexdigest()
        assert entry["tags"] == ["py3-none-any"]


def test_each_arm_is_built_with_its_release_and_the_document_says_which(tree, case):
    build_dir = tree / "build"
    index = build_case(case, "host", tree, build_dir)
    names = sorted(index["artifacts"])
    assert names == ["made_1.0.0", "made_1.5.0", "made_2.0.0"]
    for version in ("1.0.0", "1.5.0", "2.0.0"):
        entry = index["artifacts"][f"made_{version}"]
        assert (tree / entry["path"]).read_text() == f"made by fakecc {version}\n"
        assert entry["tools"]["fakecc"].endswith(f"V{version}")
    arms = index["toolchain"]["arms"]
    assert {a: r["fakecc"]["version"] for a, r in arms.items()} == \
        {"old": "1.0.0", "mid": "1.5.0", "new": "2.0.0"}
    assert arms["new"]["fakecc"]["package"] == "gpurepro-fakecc"
    # The document's toolchain (the index's, as the run header carries it) meets the schema.
    schema = json.loads((ROOT / "schema" / "result.schema.json").read_text())
    jsonschema.validate(index["toolchain"], {"$defs": schema["$defs"],
                                             **schema["properties"]["toolchain"]})
    # A trial's ctx.artifacts["made"] is its arm's build.
    budget = TrialBudget(duration_s=1, max_exposure=0, timeout_s=5)
    for arm, factors in case.resolved_arms().items():
        ctx = _context(case, arm, factors, index, tree, budget)
        assert ctx.artifacts["made"].read_text().endswith(f"{factors['fakecc']}\n")


def test_a_second_build_needs_no_index_and_reuses_every_artifact(tree, case, monkeypatch):
    build_case(case, "host", tree, tree / "build")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tree / "nothing-here"))
    events = []
    build_case(case, "host", tree, tree / "build", on_event=lambda n, s: events.append(s))
    assert set(events) == {"cached"}


def test_a_wheel_that_is_not_the_locked_one_fails_the_build(tree, case, tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    make_tool_wheel(other, "gpurepro-fakecc", "2.0.0")
    (other / "gpurepro_fakecc-2.0.0-py3-none-any.whl").write_bytes(b"not the locked wheel")
    monkeypatch.setenv("PIP_FIND_LINKS", str(other))
    entry = json.loads(releases.lock_path(tree, case.name).read_text())["releases"][
        "gpurepro-fakecc==2.0.0"]
    with pytest.raises(BuildError, match="pip exited"):
        releases.fetch(entry, tmp_path / "cache")


def test_a_release_the_lock_lacks_is_a_clear_error(tree, case, tmp_path):
    shutil.copytree(tree / "locks", tmp_path / "locks")
    path = releases.lock_path(tmp_path, case.name)
    doc = json.loads(path.read_text())
    del doc["releases"]["gpurepro-fakecc==2.0.0"]
    path.write_text(json.dumps(doc))
    with pytest.raises(BuildError, match=r"does not lock gpurepro-fakecc==2.0.0.*make lock"):
        releases.read_lock(tmp_path, case)
    path.unlink()
    with pytest.raises(BuildError, match="has no lock"):
        releases.read_lock(tmp_path, case)


@pytest.mark.parametrize("change, field", [
    ({"artifacts": [Artifact("made", ("{fakecc}", "{out}/m"), ("m",), per="nope")]},
     "artifacts[0].per"),
    ({"artifacts": [Artifact("made", ("true", "{out}/m"), ("m",), per="fakecc")]},
     "artifacts[0].command"),
])
def test_a_bad_per_artifact_names_its_field(case, change, field):
    with pytest.raises(ManifestError, match=field.replace("[", r"\[").replace("]", r"\]")):
        validate(Case(**{**case.__dict__, **change}), MANIFEST)


def test_a_level_that_is_not_a_release_names_its_field(case):
    from gpurepro.case import Factor

    bad = Factor(("1.0.0", "newest"), "1.0.0", releases=case.factors["fakecc"].releases)
    with pytest.raises(ManifestError, match=r"factors\.fakecc\.levels"):
        validate(Case(**{**case.__dict__, "factors": {"fakecc": bad}}), MANIFEST)


@pytest.mark.slow
def test_a_real_release_resolves_from_pypi_to_its_wheel_and_sha256(monkeypatch):
    for name in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)  # this machine's own pip settings
    got = releases.resolve("nvidia-cuda-nvcc-cu12", "12.5.40")
    assert got["version"] == "12.5.40" and len(got["sha256"]) == 64
    assert got["file"].startswith("nvidia_cuda_nvcc_cu12-12.5.40-")


def test_the_rerun_names_each_arms_release_and_the_lock(built, case):
    from gpurepro.model.builds import Toolchain
    from gpurepro.report.rerun import release_notes

    index = built
    [note] = release_notes(case.name, Toolchain.of(index["toolchain"]))
    assert "`locks/releases/release_case.json`" in note
    for arm, version in (("old", "gpurepro-fakecc-old==1.0.0"), ("new", "gpurepro-fakecc==2.0.0")):
        assert f"`{arm}` `{version}`" in note
    assert release_notes("x", Toolchain.of({"requested": []})) == []
