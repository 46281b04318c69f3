"""The nox the project runs under: the noxfile says which it needs, the Makefile uses a nox on
PATH only when it is at least that (the locked one in .venv/ otherwise), and `nox -l` lists each
session with a description that is a whole sentence."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

NOXFILES = [ROOT / "noxfile.py", ROOT / "noxfile_matrix.py"]


def _needs_version() -> str:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and ast.unparse(node.targets[0]) == "nox.needs_version"):
            return ast.literal_eval(node.value)
    raise AssertionError("noxfile.py sets no nox.needs_version")


def test_the_noxfile_needs_the_nox_that_has_requires_and_the_lock_satisfies_it():
    needs = _needs_version()
    assert re.fullmatch(r">=\d{4}\.\d+\.\d+", needs), needs
    # `requires=` is what the oldest usable nox must have: the noxfile uses it.
    assert "requires=" in (ROOT / "noxfile.py").read_text()
    locked = re.search(r"^nox==(\S+)", (ROOT / "locks" / "nox.txt").read_text(), re.M).group(1)
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    assert as_tuple(locked) >= as_tuple(needs[2:])
    assert f"nox[uv]=={locked}" in (ROOT / "locks" / "nox.in").read_text()


def _session_docstrings(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and any(
                "nox.session" in ast.unparse(d) for d in node.decorator_list):
            yield node.name, ast.get_docstring(node, clean=False)


@pytest.mark.parametrize("path", NOXFILES, ids=lambda p: p.name)
def test_every_session_lists_a_whole_sentence(path):
    # nox -l prints a docstring's first line: the summary must be that line, whole (the next
    # line blank or none), so the listing never stops mid-sentence.
    docs = dict(_session_docstrings(path))
    assert docs and all(docs.values()), docs
    cut = {name: doc.strip().split("\n")[:2] for name, doc in docs.items()}
    unfinished = {name: lines[0] for name, lines in cut.items()
                  if len(lines) > 1 and lines[1].strip()}
    assert unfinished == {}


def _fake_nox(folder, version):
    folder.mkdir()
    nox = folder / "nox"
    nox.write_text(f"#!/bin/sh\necho {version}\n")
    nox.chmod(0o755)
    return nox


@pytest.mark.parametrize(("version", "used"), [("2023.4.22", False), ("2025.2.9", True),
                                               ("2026.10.20", True), (None, False)])
def test_the_makefile_uses_a_nox_on_path_only_when_it_is_new_enough(tmp_path, version, used):
    if not shutil.which("make"):
        pytest.skip("no make on this machine")
    bin_dir = tmp_path / "bin"
    fake = _fake_nox(bin_dir, version) if version else None
    if fake is None:
        bin_dir.mkdir()
    # Only the fake (or no nox at all) on PATH, beside what make and the shell need.
    path = os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "--no-print-directory",
                           "-f", "Makefile", "-f", "-", "which-nox"],
                          input="which-nox:\n\t@echo $(NOX)\n", capture_output=True, text=True,
                          env={**os.environ, "PATH": path}, check=True)
    assert done.stdout.strip() == (str(fake) if used else ".venv/bin/nox"), done.stdout
