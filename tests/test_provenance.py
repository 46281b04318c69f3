"""Which commit a run records: GPUREPRO_COMMIT when its sender sets it, whatever git state a
copied tree carries; never the HEAD of another repository the tree sits in."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from gpurepro.env import fingerprint


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _repo(path: Path) -> str:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    (path / "f").write_text("x")
    _git(path, "add", "f")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "c")
    return _git(path, "rev-parse", "HEAD")


def test_gpurepro_commit_wins_over_a_copys_own_git(tmp_path, monkeypatch):
    old = _repo(tmp_path / "copy")  # a copy that carries an older .git
    (tmp_path / "copy" / "f").write_text("changed")
    monkeypatch.setenv("GPUREPRO_COMMIT", "6b42bfe")
    monkeypatch.setenv("GPUREPRO_DIRTY", "0")
    got = fingerprint._git(tmp_path / "copy")
    assert got == {"commit": "6b42bfe", "dirty": False, "source": "GPUREPRO_COMMIT"}
    assert old not in str(got)


def test_a_tree_inside_another_repository_reports_no_commit(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUREPRO_COMMIT", raising=False)
    _repo(tmp_path / "outer")
    inner = tmp_path / "outer" / "project"
    inner.mkdir()
    got = fingerprint._git(inner)
    assert got["commit"] is None and "another folder" in got["source"]


def test_the_checkouts_own_repository_is_read(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUREPRO_COMMIT", raising=False)
    head = _repo(tmp_path / "own")
    assert fingerprint._git(tmp_path / "own") == {"commit": head, "dirty": False}
    (tmp_path / "own" / "f").write_text("y")
    assert fingerprint._git(tmp_path / "own")["dirty"] is True


def test_a_copy_without_git_and_without_a_commit_says_none(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUREPRO_COMMIT", raising=False)
    if shutil.which("git") is None:
        return
    (tmp_path / "bare").mkdir()
    assert fingerprint._git(tmp_path / "bare")["commit"] is None
