"""The same build inputs give byte-identical artifacts in any checkout folder.

Each test copies the parts of the repository a build reads into two folders with different
names and path lengths, gives the copies' sources different mtimes (a fresh clone's mtimes are
its checkout time), builds both, and compares every output's sha256 and every key. A committed
run's sha256 can then be checked against anyone's build (document.run_analyses does).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gpurepro.building.artifacts import build_case
from gpurepro.case import load_case
from tests import pace
from tests.conftest import ROOT, toolchain_venv

_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "build")


def _checkouts(tmp_path: Path, parts: list[str]) -> list[Path]:
    """Two copies of ``parts`` of the repository, in folders of different names and depths."""
    roots = [tmp_path / "a", tmp_path / "a-checkout-with-a-much-longer-name" / "gpurepro-copy"]
    for i, root in enumerate(roots):
        for part in parts:
            shutil.copytree(ROOT / part, root / part, ignore=_IGNORE, copy_function=shutil.copy)
        (root / "cases").mkdir(exist_ok=True)  # what marks a repository root, with native/
        stamp = 1_000_000_000 + 86_400 * 365 * 10 * i
        for p in root.rglob("*"):
            os.utime(p, (stamp, stamp))
    return roots


def _compare(indexes: list[dict], roots: list[Path]) -> None:
    a, b = (ix["artifacts"] for ix in indexes)
    assert a and set(a) == set(b)
    for name in a:
        assert a[name]["key"] == b[name]["key"], f"{name}: key depends on the checkout folder"
        assert a[name]["outputs"] == b[name]["outputs"], f"{name}: outputs differ between checkouts"
    for root, arts in zip(roots, (a, b), strict=True):
        for name, entry in arts.items():
            for out in entry["outputs"]:
                data = (root / entry["dir"] / out).read_bytes()
                assert str(root).encode() not in data, f"{name}/{out} embeds its checkout path"


def test_fake_case_builds_identically_in_two_folders(tmp_path):
    roots = _checkouts(tmp_path, ["native", "tests/fixtures/fake_case"])
    indexes = []
    for root in roots:
        case = load_case(root / "tests" / "fixtures" / "fake_case" / "manifest.py", root)
        indexes.append(build_case(case, "host", root, Path("build")))
    _compare(indexes, roots)


@pytest.mark.toolchain
def test_tile_unload_race_sm90_builds_identically_in_two_folders(tmp_path):
    """Tile IR cubins (cuda.tile + tileiras), nvcc cubins and the g++ host programs."""
    venv = toolchain_venv("tile_unload_race", "sm_90")
    if venv is None:
        pytest.skip("no tile_unload_race sm_90 toolchain venv (nox -s tests makes it)")
    roots = _checkouts(tmp_path, ["native", "cases/tile_unload_race"])
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    indexes = []
    for root in roots:
        done = pace.run([str(venv / "bin" / "python"), "-m", "gpurepro", "build",
                         "tile_unload_race", "--arch", "sm_90", "--build-dir", "build"],
                        cwd=root, env=env, capture_output=True, text=True, startups=pace.BUILD)
        assert done.returncode == 0, done.stdout + done.stderr
        index = root / "build" / "tile_unload_race" / "sm_90" / "artifacts.json"
        indexes.append(json.loads(index.read_text()))
    assert {"tile_cubin", "tile_cubin_other", "cuda_cubin", "host"} <= set(indexes[0]["artifacts"])
    _compare(indexes, roots)
