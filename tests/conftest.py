"""Shared fixtures: the repository root, the fake case and its built test driver."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKE_CASE = ROOT / "tests" / "fixtures" / "fake_case" / "manifest.py"


def pytest_collection_modifyitems(config, items):
    has_gpu = shutil.which("nvidia-smi") is not None or any(
        Path(p).exists() for p in ("/dev/nvidia0", "/dev/nvidiactl"))
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU and driver; none on this machine")
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def fake_case():
    from gpurepro.case import load_case

    return load_case(FAKE_CASE, ROOT)


@pytest.fixture(scope="session")
def fake_build(fake_case):
    """The fake case built once per session (g++ compiles native/testdriver.cc) into build/,
    where a real build goes, so recorded paths stay relative to the repository."""
    from gpurepro.build.artifacts import build_case

    build_dir = ROOT / "build" / "tests"
    return build_dir, build_case(fake_case, "host", ROOT, build_dir)


def toolchain_venv(case: str, target: str) -> Path | None:
    """The toolchain virtualenv nox made for this case/target (GPUREPRO_TOOLCHAINS), if any."""
    for entry in filter(None, os.environ.get("GPUREPRO_TOOLCHAINS", "").split(os.pathsep)):
        key, _, path = entry.partition("=")
        if key == f"{case}@{target}":
            return Path(path)
    return None
