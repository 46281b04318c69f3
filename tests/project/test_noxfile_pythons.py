"""The noxfile's pyenv selection, against a fake pyenv on PATH: nox started through pyenv's shim
has PYENV_VERSION set to the one version pyenv chose, and the selection must still add 3.12
(CI failed with "Python interpreter 3.12 not found" while pyenv had 3.12 installed)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

NOXFILE = Path(__file__).resolve().parents[2] / "noxfile.py"


def _selector():
    """The noxfile's _select_pyenv_pythons alone (importing the noxfile needs nox itself)."""
    tree = ast.parse(NOXFILE.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_select_pyenv_pythons")
    namespace = {"os": os, "shutil": shutil, "subprocess": subprocess}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(NOXFILE), "exec"), namespace)
    return namespace["_select_pyenv_pythons"]


def _fake_bin(tmp_path: Path, *, pyenv: bool, answering: tuple[str, ...] = ()) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if pyenv:
        (bin_dir / "pyenv").write_text(
            "#!/bin/sh\n"
            'case "$1" in\n'
            "  version-name) echo 3.11.7 ;;\n"
            "  versions) printf '3.10.13\\n3.11.7\\n3.12.1\\n3.12.10\\n3.12.4-dev\\n3.13.0\\n' ;;\n"
            "esac\n")
    for version in ("3.11", "3.12"):
        answer = f"echo Python {version}.0" if version in answering else "exit 127"
        (bin_dir / f"python{version}").write_text(f"#!/bin/sh\n{answer}\n")
    for path in bin_dir.iterdir():
        path.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("already", [None, "3.11.7"])
def test_adds_the_newest_installed_release(tmp_path, monkeypatch, already):
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path, pyenv=True, answering=("3.11",))))
    if already is None:
        monkeypatch.delenv("PYENV_VERSION", raising=False)
    else:
        monkeypatch.setenv("PYENV_VERSION", already)
    _selector()(["3.11", "3.12"])
    assert os.environ["PYENV_VERSION"] == "3.11.7:3.12.10"


def test_leaves_a_selection_that_already_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path, pyenv=True, answering=("3.11", "3.12"))))
    monkeypatch.setenv("PYENV_VERSION", "3.11.7:3.12.1")
    _selector()(["3.11", "3.12"])
    assert os.environ["PYENV_VERSION"] == "3.11.7:3.12.1"


def test_without_pyenv_nothing_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path, pyenv=False)))
    monkeypatch.delenv("PYENV_VERSION", raising=False)
    _selector()(["3.11", "3.12"])
    assert "PYENV_VERSION" not in os.environ
