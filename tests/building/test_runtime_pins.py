"""Runtime packages as pins (Case.runtime): the build downloads each arm's wheels with pip,
records their sha256 and resolves their requirements; the run stage unpacks them with the
standard library alone, each trial imports its arm's release, and the record keeps requested
and resolved versions per arm.

The wheels are two releases of a small pure-Python distribution made here and served to
``pip download`` from a folder (``--no-index --find-links``): nothing is fetched from an index.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
import zipfile
from pathlib import Path

import pytest

from gpurepro.building import runtime as build_runtime
from gpurepro.building.artifacts import build_case
from gpurepro.case import Case, ManifestError, Runtime, load_case, validate
from gpurepro.errors import BuildError, UsageError
from gpurepro.run import runtime as run_runtime
from gpurepro.run.journal import read
from tests import pace
from tests.conftest import ROOT
from tests.run.test_stdlib_run import BLOCKER

MANIFEST = ROOT / "tests" / "fixtures" / "runtime_case" / "manifest.py"


def make_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel of ``name`` whose module says its version; the same bytes every time
    (the build keeps a downloaded wheel by its pin)."""
    module = name.replace("-", "_")
    dist = f"{module}-{version}"
    files = {
        f"{module}/__init__.py": f"__version__ = {version!r}\n",
        f"{dist}.dist-info/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: gpurepro-tests\n"
                                   "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0)), text)
    return wheel


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheels")
    make_wheel(folder, "gpurepro-probe", "1.0", ("pip>=1",))
    make_wheel(folder, "gpurepro-probe", "2.0", ("pip>=1", "colorama; sys_platform == 'win32'",
                                                 "rich; extra == 'fancy'"))
    return folder


@pytest.fixture(scope="module")
def case():
    return load_case(MANIFEST, ROOT)


@pytest.fixture(scope="module")
def built(case, index_dir):
    build_dir = ROOT / "build" / "tests-runtime"
    build_case(case, "host", ROOT, build_dir)
    events = []
    index = build_runtime.fetch(case, ROOT, build_dir, ("--no-index", "--find-links", str(index_dir)),
                                on_event=lambda name, status: events.append((name, status)))
    return build_dir, index, events


def test_the_build_downloads_each_pin_once_with_its_sha256(built, index_dir):
    build_dir, index, events = built
    assert set(index["wheels"]) == {"gpurepro-probe==1.0", "gpurepro-probe==2.0"}
    for pin, w in index["wheels"].items():
        path = ROOT / w["path"]
        assert not Path(w["path"]).is_absolute() and path.is_file()
        assert w["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert w["version"] == pin.split("==")[1] and w["size"] == path.stat().st_size
        assert path.read_bytes() == (index_dir / path.name).read_bytes()  # the file pip served
    assert {name for name, status in events if status == "downloaded"} <= set(index["wheels"])


def test_each_arm_resolves_its_requirements_inside_itself_or_from_the_node(built):
    _, index, _ = built
    assert set(index["arms"]) == {"one", "two"}  # `node` pins nothing
    two = index["arms"]["two"]
    assert two["requested"] == ["gpurepro-probe==2.0"]
    # The win32-only requirement and the extra's are not the node's: only pip is left to it.
    assert two["from_node"] == [{"requirement": "pip>=1", "of": "gpurepro-probe==2.0"}]
    assert index["arms"]["one"]["key"] != two["key"]


def test_a_second_build_reuses_the_downloaded_wheels(case, built, index_dir):
    build_dir, index, _ = built
    events = []
    again = build_runtime.fetch(case, ROOT, build_dir, ("--no-index", "--find-links", "/nonexistent"),
                                on_event=lambda name, status: events.append(status))
    assert set(events) == {"cached"}
    assert {p: w["sha256"] for p, w in again["wheels"].items()} == \
        {p: w["sha256"] for p, w in index["wheels"].items()}


def test_the_pip_command_asks_for_the_trials_interpreter_and_no_dependencies(tmp_path):
    rt = Runtime(packages={"*": ["numba==0.62.1"]})
    argv = build_runtime.pip_download_argv("numba==0.62.1", rt, tmp_path)
    assert argv[1:4] == ["-m", "pip", "download"]
    for flag in ("--only-binary=:all:", "--no-deps"):
        assert flag in argv
    # This interpreter's Python, which `case` runs the trials with, unless told another.
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert argv[argv.index("--python-version") + 1] == here
    other = build_runtime.pip_download_argv("numba==0.62.1", rt, tmp_path, python="3.99")
    assert other[other.index("--python-version") + 1] == "3.99"
    assert argv[argv.index("--implementation") + 1] == "cp"
    platforms = [argv[i + 1] for i, a in enumerate(argv) if a == "--platform"]
    assert "manylinux_2_28_x86_64" in platforms and "manylinux_2_17_x86_64" in platforms
    assert argv[-1] == "numba==0.62.1"


def test_the_wheels_are_for_this_interpreter_unless_another_is_named_or_the_manifest_fixes_one():
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    free = Runtime(packages={"*": ["numba==0.62.1"]})
    assert build_runtime.wheel_python(free) == here
    assert build_runtime.wheel_python(free, "3.11") == "3.11"
    fixed = Runtime(packages={"*": ["numba==0.62.1"]}, python="3.12")
    assert build_runtime.wheel_python(fixed) == "3.12"
    with pytest.raises(UsageError, match=r"--python 3\.11: c's runtime wheels are for Python "
                                         r"3\.12 alone"):
        build_runtime.wheel_python(fixed, "3.11", "c")
    # Each Python's wheels are kept under a key of their own: two builds do not overwrite them.
    assert build_runtime.wheel_key("numba==0.62.1", free, "3.11") != \
        build_runtime.wheel_key("numba==0.62.1", free, "3.12")


def test_a_case_of_the_interpreters_python_builds_and_runs_on_it_without_refusal(case, index_dir,
                                                                                 tmp_path):
    """A manifest that names no Python gets wheels for the one running the build, and the run
    stage on that interpreter refuses no arm (the case sessions build and run on one)."""
    free = Case(**{**case.__dict__, "runtime": Runtime(
        packages={"one": ["gpurepro-probe==1.0"]}, from_node=("pip",))})
    index = build_runtime.fetch(free, ROOT, tmp_path / "build",
                                ("--no-index", "--find-links", str(index_dir)))
    assert index["python"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert run_runtime.python_mismatch(index["python"], index["arms"], free.name) is None
    other = build_runtime.fetch(free, ROOT, tmp_path / "build",
                                ("--no-index", "--find-links", str(index_dir)), python="3.99")
    assert other["python"] == "3.99"  # a node's Python named with --python
    assert "Python 3.99" in run_runtime.python_mismatch(other["python"], other["arms"], "c")


def test_a_requirement_neither_pinned_nor_left_to_the_node_fails_the_build(case, index_dir):
    strict = Case(**{**case.__dict__, "runtime": Runtime(
        packages={"one": ["gpurepro-probe==1.0"]}, python=case.runtime.python)})
    with pytest.raises(BuildError, match=r"requires pip>=1, which the arm neither pins nor "
                                         r"leaves to the node"):
        build_runtime.fetch(strict, ROOT, ROOT / "build" / "tests-runtime",
                            ("--no-index", "--find-links", str(index_dir)))


def test_a_pin_that_pip_cannot_find_fails_the_build_with_its_output(case, index_dir):
    missing = Case(**{**case.__dict__, "runtime": Runtime(
        packages={"one": ["gpurepro-probe==9.0"]}, python=case.runtime.python)})
    with pytest.raises(BuildError, match=r"downloading gpurepro-probe==9\.0 for Python"):
        build_runtime.fetch(missing, ROOT, ROOT / "build" / "tests-runtime",
                            ("--no-index", "--find-links", str(index_dir)))


@pytest.mark.parametrize("runtime, field", [
    (Runtime(packages={"*": ["numba>=0.62"]}), "runtime.packages.*[0]"),
    (Runtime(packages={"nope": ["numba==0.62.1"]}), "runtime.packages.nope"),
    (Runtime(packages={"one": "numba==0.62.1"}), "runtime.packages.one"),
    (Runtime(packages={}, from_node=("llvm lite",)), "runtime.from_node[0]"),
    (Runtime(packages={}, python="312"), "runtime.python"),
])
def test_a_bad_runtime_names_its_field(case, runtime, field):
    with pytest.raises(ManifestError, match=re.escape(f": {field}: ")):
        validate(Case(**{**case.__dict__, "runtime": runtime}), MANIFEST)


def test_an_arm_gets_the_shared_pins_and_its_own_in_their_place():
    rt = Runtime(packages={"*": ["cuda-bindings==13.3.1", "numpy==2.3.5"],
                           "old": ["NumPy==2.2.0", "numba==0.62.1"]})
    assert rt.pins_for("old") == ["cuda-bindings==13.3.1", "NumPy==2.2.0", "numba==0.62.1"]
    assert rt.pins_for("new") == ["cuda-bindings==13.3.1", "numpy==2.3.5"]


@pytest.mark.parametrize("version, spec, met", [
    ("0.50.0", "<0.46,>=0.45.0dev0", False), ("0.45.1", "<0.46,>=0.45.0dev0", True),
    ("0.45.0rc1", ">=0.45.0dev0", True), ("2.3.5", "<2.4,>=1.22", True),
    ("13.3.1", "==13.*", True), ("1.5", "~=1.4", True), ("2.0", "~=1.4", False),
    ("1.0", "", True), ("1.0", "@ file:///x", None),
])
def test_the_nodes_version_is_checked_against_the_requirement(version, spec, met):
    assert run_runtime.satisfies(version, spec) is met


def test_trials_import_their_arms_release_with_the_standard_library_alone(built, tmp_path):
    build_dir, index, _ = built
    journal = tmp_path / "j.jsonl"
    done = pace.run(
        [sys.executable, "-c", BLOCKER, "run", str(MANIFEST.relative_to(ROOT)), "--trials", "1",
         "--journal", str(journal), "--build-dir", str(build_dir.relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    contents = read(journal)
    seen = {t["arm"]: t["observations"].get("probe") for t in contents.trials}
    assert seen == {"one": "1.0", "two": "2.0", "node": None}
    rt = contents.header["runtime"]
    assert set(rt["arms"]) == {"one", "two"}
    one = rt["arms"]["one"]
    assert one["requested"] == ["gpurepro-probe==1.0"]
    assert one["resolved"] == {"gpurepro-probe": "1.0"}
    assert one["wheels"] == {"gpurepro_probe-1.0-py3-none-any.whl":
                             index["wheels"]["gpurepro-probe==1.0"]["sha256"]}
    pip = one["from_node"][0]
    assert pip["name"] == "pip" and pip["version"] and pip["met"] is True
    assert not Path(one["site"]).is_absolute()
    # The trial's PYTHONPATH: the arm's unpacked folder first, then the harness's src/.
    env = {t["arm"]: t["env"]["PYTHONPATH"] for t in contents.trials}
    assert env["one"] == os.pathsep.join([one["site"], "src"]) and env["node"] == "src"


def test_the_document_records_the_runtime_per_arm_and_validates(built, case, tmp_path):
    from gpurepro.record.document import build_document
    from gpurepro.record.validation import validation_errors

    build_dir, _, _ = built
    journal = tmp_path / "j.jsonl"
    pace.run([sys.executable, "-m", "gpurepro", "run", str(MANIFEST.relative_to(ROOT)),
              "--trials", "1", "--arms", "one,two", "--journal", str(journal),
              "--build-dir", str(build_dir.relative_to(ROOT)), "--no-record"],
             cwd=ROOT, capture_output=True, text=True, check=True,
             env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    contents = read(journal)
    doc = build_document(case, contents.header, contents.trials, ROOT)
    assert validation_errors(doc) == []
    assert doc["runtime"]["arms"]["two"]["resolved"] == {"gpurepro-probe": "2.0"}
    from gpurepro.report.markdown import markdown

    text = markdown(doc)
    assert "| two | gpurepro-probe==2.0 | gpurepro-probe 2.0 |" in text


def test_a_changed_wheel_is_refused_before_any_trial(built, tmp_path):
    build_dir, index, _ = built
    wheel = tmp_path / "w.whl"
    wheel.write_bytes((ROOT / index["wheels"]["gpurepro-probe==1.0"]["path"]).read_bytes() + b"x")
    record = {"python": index["python"], "wheels": {"w.whl": {
        "path": str(wheel), "sha256": index["wheels"]["gpurepro-probe==1.0"]["sha256"]}},
        "arms": {"one": {"wheels": {"w.whl": "0"}, "site": str(tmp_path / "site"),
                         "from_node": []}}}
    with pytest.raises(BuildError, match="differs from its build index"):
        run_runtime.ensure(record, ROOT)


def test_wheels_for_another_python_are_refused_in_one_line_saying_how(built):
    """Before any trial: the arms that need the wheels' Python and the two ways to run them."""
    with pytest.raises(BuildError) as refused:
        run_runtime.ensure({"python": "2.7", "wheels": {}, "arms": {"one": {}, "two": {}}}, ROOT,
                           "runtime_case")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("runtime_case: arms one, two import packages carried as wheels for "
                              "Python 2.7")
    assert "nox -s runtime_case --force-python 2.7 -- ..." in message and "--arms" in message


def test_arms_without_runtime_packages_run_on_any_python(case, built, monkeypatch):
    """A plan of arms that pin nothing needs no particular Python (the main question of a case
    whose Python arms are deeper)."""
    build_dir, index, _ = built
    monkeypatch.setitem(index, "python", "2.7")
    monkeypatch.setattr(run_runtime, "load_index", lambda *_args: index)
    assert run_runtime.prepare(case, ROOT, build_dir.relative_to(ROOT), ["node"]) is None
    with pytest.raises(BuildError, match="arms one import"):
        run_runtime.prepare(case, ROOT, build_dir.relative_to(ROOT), ["node", "one"])


def test_the_index_says_what_a_gpu_node_must_carry(built):
    _, index, _ = built
    size, paths = build_runtime.carried(index)
    assert len(paths) == 2 and size == sum(w["size"] for w in index["wheels"].values())
    assert json.dumps(index)  # plain JSON


def test_a_pack_of_some_arms_carries_their_wheels_alone_and_runs_them(built, case, tmp_path):
    """`pack --arms two`: the wheel of release 2.0 only (the other arm's is not carried), and
    the unpacked pack runs that arm on its own from what it carries."""
    import tarfile

    from gpurepro.pack.archive import make_pack

    build_dir, index, _ = built
    out = tmp_path / "runtime.tar.gz"
    make_pack(case, "host", ROOT, build_dir.relative_to(ROOT), out, ["--arms", "two"], [], None,
              arms=["two"])
    with tarfile.open(out) as tar:
        tar.extractall(tmp_path, filter="data")
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    files = json.loads((folder / "pack.json").read_text())["files"]
    wheels = sorted(Path(f).name for f in files if f.endswith(".whl"))
    assert wheels == ["gpurepro_probe-2.0-py3-none-any.whl"]
    assert build_runtime.carried(index, ["two"])[0] == index["wheels"]["gpurepro-probe==2.0"]["size"]
    assert build_runtime.carried(index, ["node"]) == (0, [])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUREPRO_COMMIT")}
    done = pace.run([sys.executable, "run.py", "--trials", "1", "--duration", "0.2"], cwd=folder,
                    capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    journal = next((folder / "results" / "runtime_case").glob("*.journal.jsonl"))
    assert [t["observations"].get("probe") for t in read(journal).trials] == ["2.0"]
