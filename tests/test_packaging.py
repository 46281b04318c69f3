"""A plain (non-editable) install works outside the checkout: the schemas are package data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT


def test_the_built_wheel_validates_and_reports_from_another_folder(tmp_path):
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "-q", "-w", str(wheels), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    wheel = next(wheels.glob("gpurepro-*.whl"))
    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                                str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The analysis packages come from this environment; gpurepro itself from the wheel only.
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import gpurepro; print(gpurepro.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True)
    assert Path(where.stdout.strip()).is_relative_to(site), where
    validate = subprocess.run([sys.executable, "-m", "gpurepro", "validate", str(ROOT / "results")],
                              cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert validate.returncode == 0, validate.stderr[-2000:]
    doc = next((ROOT / "results" / "tile_unload_race").glob("*Z_NVIDIA-H200_redacted.json"))
    copy = elsewhere / doc.name
    copy.write_bytes(doc.read_bytes())
    report = subprocess.run([sys.executable, "-m", "gpurepro", "report", str(copy)],
                            cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert copy.with_suffix(".md").is_file()
