"""A plain (non-editable) install works outside the checkout: the schemas are package data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import pace
from tests.conftest import ROOT

# Each test builds or installs the package with pip into a folder of its own: the slow tier.
pytestmark = pytest.mark.slow


def test_the_built_wheel_validates_and_reports_from_another_folder(tmp_path):
    wheels = tmp_path / "wheels"
    built = pace.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                      "-q", "-w", str(wheels), str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    wheel = next(wheels.glob("gpurepro-*.whl"))
    site = tmp_path / "site"
    installed = pace.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                          str(site), str(wheel)], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The analysis packages come from this environment; gpurepro itself from the wheel only.
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import gpurepro; print(gpurepro.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True)
    assert Path(where.stdout.strip()).is_relative_to(site), where
    validate = pace.run([sys.executable, "-m", "gpurepro", "validate", str(ROOT / "results")],
                        cwd=elsewhere, env=env, capture_output=True, text=True)
    assert validate.returncode == 0, validate.stderr[-2000:]
    doc = next((ROOT / "results" / "tile_unload_race").glob("*Z_NVIDIA-H200_redacted.json"))
    copy = elsewhere / doc.name
    copy.write_bytes(doc.read_bytes())
    report = pace.run([sys.executable, "-m", "gpurepro", "report", str(copy)],
                      cwd=elsewhere, env=env, capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert copy.with_suffix(".md").is_file()


def _build(tmp_path: Path, *what: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return pace.run([sys.executable, "-m", "build", *what, "-o", str(tmp_path / "dist"),
                     str(ROOT)], capture_output=True, text=True, env=env,
                    cwd=tmp_path, startups=pace.BUILD)  # not the checkout: its build/ folder would shadow `build`


def test_python_m_build_makes_sdist_and_wheel_without_a_warning(tmp_path):
    """SPDX license with its file, bounded build requirements, nothing deprecated.
    (PYTHONDONTWRITEBYTECODE, where a shell sets it, makes setuptools say it skips
    byte-compiling: that is the caller's setting, not the package's.)"""
    done = _build(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    text = (done.stdout + done.stderr).lower()
    assert "warning" not in text and "deprecat" not in text, text[-3000:]
    wheel = next((tmp_path / "dist").glob("gpurepro-*.whl"))
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
        assert any(n.endswith("licenses/LICENSE") for n in z.namelist())
    assert "License-Expression: Apache-2.0" in meta
    assert "Project-URL: Repository, https://github.com/gpurepro/gpurepro" in meta
    assert "Classifier: Programming Language :: Python :: 3.12" in meta


def test_a_plain_install_says_in_one_line_which_extra_validate_needs(tmp_path):
    """`pip install .` (no extras) in a fresh venv, then `gpurepro validate results`: one line
    naming gpurepro[analysis] and the install command, exit 1, not "a bug in gpurepro"."""
    wheels = tmp_path / "wheels"
    built = pace.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                      str(wheels), str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    venv = tmp_path / "venv"
    # Nothing of this environment leaks in: a PYTHONPATH to the checkout's src/ would make pip
    # see gpurepro as installed already.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pace.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    installed = pace.run([str(venv / "bin" / "pip"), "install", "-q", "--no-index",
                          str(next(wheels.glob("gpurepro-*.whl")))],
                         capture_output=True, text=True, env=env)
    assert installed.returncode == 0, installed.stderr
    assert (venv / "bin" / "gpurepro").is_file(), installed.stdout + installed.stderr
    done = pace.run([str(venv / "bin" / "gpurepro"), "validate", "results"], cwd=ROOT,
                    env=env, capture_output=True, text=True)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and done.stdout == "", done.stderr
    assert ("validate needs gpurepro[analysis] (jsonschema is not installed): "
            "pip install '.[analysis]'") in lines[0]
    assert "bug in gpurepro" not in lines[0]
    # Outside a checkout the command names the repository, from the installed package's
    # metadata (there is no gpurepro on PyPI); the usage line its own name.
    elsewhere = pace.run([str(venv / "bin" / "gpurepro"), "report", "x.json"], cwd=tmp_path,
                         env=env, capture_output=True, text=True)
    assert "pip install 'gpurepro[analysis] @ git+https://github.com/gpurepro/gpurepro'" in \
        elsewhere.stderr
    usage = pace.run([str(venv / "bin" / "gpurepro"), "report"], cwd=tmp_path, env=env,
                     capture_output=True, text=True)
    assert "see gpurepro report --help" in usage.stderr
