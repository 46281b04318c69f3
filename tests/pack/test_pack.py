"""`gpurepro pack`: one archive that runs a case on an offline node, its run.py standard library
only; what comes back records in the checkout as the commit the pack was made from."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests import pace
from tests.invoke import gpurepro

FAKE = "tests/fixtures/fake_case/manifest.py"


def _gpurepro(root: Path, *args: str) -> subprocess.CompletedProcess:
    return pace.run([sys.executable, "-m", "gpurepro", *args], cwd=root, capture_output=True,
                    text=True, env={**os.environ, "PYTHONPATH": str(root / "src")})


def _head(root: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def packed(tmp_path_factory, fake_build, root) -> Path:
    """The fake case packed (two of its arms) and unpacked into a folder of its own."""
    build_dir, _ = fake_build
    out = tmp_path_factory.mktemp("pack") / "fake.tar.gz"
    done = _gpurepro(root, "pack", FAKE, "--arch", "host", "--build-dir",
                     str(build_dir.relative_to(root)), "--arms", "ok,crash", "--out", str(out))
    assert done.returncode == 0, done.stderr
    node = tmp_path_factory.mktemp("node")
    with tarfile.open(out) as tar:
        tops = {m.name.split("/", 1)[0] for m in tar.getmembers()}
        assert len(tops) == 1, tops  # one folder, nothing beside it
        tar.extractall(node, filter="data")
    return node / tops.pop()


def _run_py(folder: Path, *args: str) -> subprocess.CompletedProcess:
    # The node's environment: no PYTHONPATH to this checkout, the pack's own harness only.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUREPRO_COMMIT")}
    return pace.run([sys.executable, "run.py", *args], cwd=folder, capture_output=True,
                    text=True, env=env)


def test_the_pack_names_its_commit_its_run_and_every_file_with_its_sha256(packed, root):
    meta = json.loads((packed / "pack.json").read_text())
    digest = hashlib.sha256((packed / "pack.json").read_bytes()).hexdigest()
    assert meta["commit"] == _head(root)
    assert packed.name == f"fake_case-host-{meta['commit'][:12]}-{digest[:12]}"
    assert meta["files"]["run.py"] == hashlib.sha256((packed / "run.py").read_bytes()).hexdigest()
    assert meta["run"] == ["--arch", "host", "--build-dir", "build/tests", "--arms", "ok,crash"]
    assert "tests/fixtures/fake_case/manifest.py" in meta["files"]
    assert "src/gpurepro/run/trial.py" in meta["files"]
    assert any(name.endswith("/testdriver") for name in meta["files"])
    assert not any("__pycache__" in name for name in meta["files"])


def test_run_py_runs_the_case_and_what_comes_back_records_as_the_packs_commit(packed, root,
                                                                              tmp_path):
    done = _run_py(packed, "--trials", "1", "--duration", "0.3", "--seed", "3")
    assert done.returncode == 0, done.stderr
    journals = sorted((packed / "results" / "fake_case").glob("*.journal.jsonl"))
    assert len(journals) == 1
    name = str(journals[0].relative_to(packed))
    assert f"bring back, to the same paths in the checkout of {_head(root)[:12]}: {name}" in done.stderr
    assert f"python -m gpurepro record {name}" in done.stderr

    # Back in the checkout: the record names the pack's commit as the run's.
    doc_path = tmp_path / "doc.json"
    recorded = gpurepro("record", str(journals[0]), "--case", FAKE, "--out", str(doc_path),
                        cwd=root)
    assert recorded.returncode == 0, recorded.stderr
    doc = json.loads(doc_path.read_text())
    repo = doc["environment"]["repository"]
    assert repo["commit"] == _head(root) and repo["source"] == "GPUREPRO_COMMIT"
    assert sorted(t["arm"] for t in doc["trials"]) == ["crash", "ok"]


def test_a_damaged_pack_is_named_and_nothing_runs(packed, tmp_path):
    copy = tmp_path / packed.name
    subprocess.run(["cp", "-a", str(packed), str(copy)], check=True)
    (copy / "native" / "events.cc").write_text("// edited on the way\n")
    before = set((copy / "results").rglob("*.journal.jsonl"))
    done = _run_py(copy)
    assert done.returncode == 1
    assert "native/events.cc differs from the sha256 pack.json records" in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1
    assert set((copy / "results").rglob("*.journal.jsonl")) == before


def test_a_pack_for_another_python_is_refused_with_the_python_to_use(fake_build, root, tmp_path):
    build_dir, _ = fake_build
    out = tmp_path / "fake.tar.gz"
    done = _gpurepro(root, "pack", FAKE, "--arch", "host", "--build-dir",
                     str(build_dir.relative_to(root)), "--python", "3.99", "--out", str(out))
    assert done.returncode == 0, done.stderr
    with tarfile.open(out) as tar:
        tar.extractall(tmp_path, filter="data")
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    refused = _run_py(folder)
    assert refused.returncode == 2
    assert "wheels are for Python 3.99" in refused.stderr and "python3.99" in refused.stderr


@pytest.mark.parametrize(("flags", "says"), [
    (["--arch", "sm_90"], "--arch sm_90: fake_case builds for host"),
    (["--arms", "ok"], "--arms must include the baseline arm"),
    (["--bisect", "ptxas"], "--bisect ptxas: fake_case declares no such axis"),
    (["--python", "twelve"], "a Python version as X.Y"),
])
def test_bad_pack_flags_are_one_line_before_anything_is_built(root, flags, says):
    done = _gpurepro(root, "pack", FAKE, *flags)
    assert done.returncode == 2
    assert says in done.stderr and "Traceback" not in done.stderr


def test_arms_with_outcome_claims_only_run_without_the_baseline(fake_case, root):
    """The baseline is needed where a claim of the case compares an arm with it (fake_case's
    ok, a rate claim), not where every claim is about one arm (ctx_get_device_v2's outcome
    claims)."""
    from gpurepro.case import load_case
    from gpurepro.cli.args import checked_arms
    from gpurepro.errors import UsageError

    assert checked_arms(fake_case, "crash,ok") == ("crash", "ok")
    with pytest.raises(UsageError) as refused:
        checked_arms(fake_case, "cuda-error")
    assert str(refused.value) == ("--arms must include the baseline arm 'crash': claim "
                                  "'ok-survives' compares ok with it (3 claims do)")
    ctx = load_case("ctx_get_device_v2", root)
    assert checked_arms(ctx, "numba-063,numba-builtin") == ("numba-063", "numba-builtin")


def test_every_output_of_an_artifact_is_packed_and_checked(tmp_path, monkeypatch):
    """A build step that writes two files (a cubin and the SASS read from it): the run stage
    checks both before the first trial, so the pack holds both, each against its sha256."""
    import hashlib
    from types import SimpleNamespace

    from gpurepro.building.artifacts import index_path
    from gpurepro.errors import BuildError
    from gpurepro.pack import archive

    case = SimpleNamespace(name="two_outputs", runtime=None)
    folder = tmp_path / "build" / "two_outputs" / "artifacts" / "cubin" / "k"
    folder.mkdir(parents=True)
    outputs = {"kernel.cubin": b"cubin", "sass.json": b"{}"}
    for name, data in outputs.items():
        (folder / name).write_bytes(data)
    digest = {n: hashlib.sha256(d).hexdigest() for n, d in outputs.items()}
    rel = folder.relative_to(tmp_path).as_posix()
    index = {"artifacts": {"cubin": {"dir": rel, "path": f"{rel}/kernel.cubin",
                                     "sha256": digest["kernel.cubin"], "outputs": digest}}}
    index_file = index_path(tmp_path / "build", case, "sm_90")
    index_file.parent.mkdir(parents=True, exist_ok=True)
    index_file.write_text(json.dumps(index))
    monkeypatch.setattr(archive, "load_build", lambda *a: index)
    members = archive.built_members(case, tmp_path, Path("build"), "sm_90")
    assert {m.name for m in members} >= {f"{rel}/kernel.cubin", f"{rel}/sass.json"}
    (folder / "sass.json").write_bytes(b"changed")  # a second output that is not what was built
    with pytest.raises(BuildError, match="sass.json"):
        archive.built_members(case, tmp_path, Path("build"), "sm_90")


# ---------------------------------------------------------------- what a pack holds, and its node


def _copy(packed: Path, tmp_path: Path, name: str | None = None) -> Path:
    copy = tmp_path / (name or packed.name)
    shutil.copytree(packed, copy, symlinks=True)
    return copy


def test_untracked_files_and_links_in_the_case_folder_are_not_packed_and_are_named(
        fake_build, root, tmp_path):
    """A file the commit does not track and a symbolic link out of the repository, put in the
    case's folder: neither is packed (nothing a link leads to is read), pack.json names both
    as uncommitted and says dirty."""
    build_dir, _ = fake_build
    folder = root / "tests" / "fixtures" / "fake_case"
    stray = folder / f"untracked-{os.getpid()}.txt"
    link = folder / f"leak-{os.getpid()}"
    secret = tmp_path / "outside.txt"
    secret.write_text("outside the repository\n")
    stray.write_text("not committed\n")
    link.symlink_to(secret)
    try:
        out = tmp_path / "fake.tar.gz"
        done = _gpurepro(root, "pack", FAKE, "--arch", "host", "--build-dir",
                         str(build_dir.relative_to(root)), "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert "differs from its commit" in done.stderr
        with tarfile.open(out) as tar:
            names = tar.getnames()
            meta = json.load(tar.extractfile(next(n for n in names if n.endswith("/pack.json"))))
    finally:
        stray.unlink()
        link.unlink()
    assert not any(stray.name in n or link.name in n for n in names), names
    assert meta["dirty"] is True
    assert {f"tests/fixtures/fake_case/{stray.name}", f"tests/fixtures/fake_case/{link.name}"} <= set(
        meta["uncommitted"])


MARKER = "import pathlib, os; pathlib.Path(os.environ['PACK_MARKER']).write_text('ran')\n"


@pytest.mark.parametrize("planted", ["json.py", "src/sitecustomize.py", "src/gpurepro/extra.py",
                                     "src/gpurepro/run/__pycache__/trial.cpython-311.pyc"])
def test_a_file_the_pack_does_not_list_is_refused_before_any_of_it_runs(packed, tmp_path, planted):
    """A json.py beside run.py, a sitecustomize.py in src/, any file pack.json does not list:
    run.py, which checks the tree alone and with its own folder off sys.path, refuses in one
    line, and the planted file never runs."""
    copy = _copy(packed, tmp_path)
    before = set((copy / "results").rglob("*.journal.jsonl"))
    target = copy / planted
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(MARKER)
    marker = tmp_path / "ran"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUREPRO_COMMIT")}
    done = pace.run([sys.executable, "run.py"], cwd=copy, capture_output=True, text=True,
                    env={**env, "PACK_MARKER": str(marker)})
    assert done.returncode == 1, done.stderr
    assert f"{planted} is not a file of the pack" in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1, done.stderr
    assert not marker.exists() and set((copy / "results").rglob("*.journal.jsonl")) == before


def test_an_edit_with_its_sha256_rewritten_in_pack_json_is_refused_by_the_packs_name(
        packed, tmp_path):
    """native/events.cc edited and its sha256 written into pack.json, and a run flag that would
    write outside the pack added there: pack.json is no longer the one the pack is named for;
    renamed to match (a forger's step), the run flag is refused all the same."""
    copy = _copy(packed, tmp_path)
    (copy / "native" / "events.cc").write_text("// edited\n")
    meta = json.loads((copy / "pack.json").read_text())
    meta["files"]["native/events.cc"] = hashlib.sha256(b"// edited\n").hexdigest()
    meta["run"] += ["--out-dir", str(tmp_path / "elsewhere")]
    data = (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode()
    (copy / "pack.json").write_bytes(data)
    done = _run_py(copy)
    assert done.returncode == 1 and "is not the one this pack is named for" in done.stderr
    renamed = copy.rename(copy.with_name(packed.name[:-12] + hashlib.sha256(data).hexdigest()[:12]))
    done = _run_py(renamed)
    assert done.returncode == 1 and "'--out-dir', which no pack writes" in done.stderr
    assert not (tmp_path / "elsewhere").exists()


def test_a_symlinked_results_folder_is_refused_and_nothing_is_written_outside(packed, tmp_path):
    copy = _copy(packed, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (copy / "results" / "fake_case").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(copy / "results" / "fake_case")
    (copy / "results" / "fake_case").symlink_to(outside)
    done = _run_py(copy, "--trials", "1", "--duration", "0.1")
    assert done.returncode == 1
    assert "results/fake_case is a symbolic link" in done.stderr
    assert list(outside.iterdir()) == []


def test_run_py_refuses_an_unsupported_python_in_one_line(packed):
    """Under Python 3.6 to 3.9 (here: run.py read with that grammar, and run with that
    version_info) run.py says in one line which Python it needs, no traceback."""
    import ast

    source = (packed / "run.py").read_text()
    for minor in (6, 7, 8, 9):
        ast.parse(source, feature_version=(3, minor))
    code = ("import sys; sys.version_info = (3, 9, 18, 'final', 0); "
            "exec(compile(open('run.py').read(), 'run.py', 'exec'), {'__file__': 'run.py'})")
    done = pace.run([sys.executable, "-c", code], cwd=packed, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith("pack: error: this pack runs on Python 3.11 or later;")
    assert "is Python 3.9" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize(("field", "value", "says"), [
    ("case", "../../outside", "is not a case's name"),
    ("case_argument", "../outside/manifest.py", "is not a manifest the pack holds"),
])
def test_a_case_in_pack_json_that_would_write_outside_is_refused(packed, tmp_path, field, value,
                                                                 says):
    """pack.json rewritten (and the folder renamed for it, as a forger would) so that the
    results folder or the manifest lies outside the pack: refused before anything runs."""
    copy = _copy(packed, tmp_path)
    meta = json.loads((copy / "pack.json").read_text())
    meta[field] = value
    data = (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode()
    (copy / "pack.json").write_bytes(data)
    renamed = copy.rename(copy.with_name(packed.name[:-12] + hashlib.sha256(data).hexdigest()[:12]))
    done = _run_py(renamed)
    assert done.returncode == 1 and says in done.stderr, done.stderr
    assert not (tmp_path.parent / "outside").exists()
