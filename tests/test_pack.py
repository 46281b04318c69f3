"""`gpurepro pack`: one archive that runs a case on an offline node, its run.py standard library
only; what comes back records in the checkout as the commit the pack was made from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from . import pace
from .cli import gpurepro

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
    assert meta["commit"] == _head(root) and packed.name.endswith(meta["commit"][:12])
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
    assert "missing or differ from pack.json (first: native/events.cc)" in done.stderr
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


def test_every_output_of_an_artifact_is_packed_and_checked(tmp_path, monkeypatch):
    """A build step that writes two files (a cubin and the SASS read from it): the run stage
    checks both before the first trial, so the pack holds both, each against its sha256."""
    import hashlib
    from types import SimpleNamespace

    from gpurepro.build.artifacts import index_path
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
