"""Shared fixtures: the repository root, the fake case and its built test driver."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def have_libcuda() -> bool:
    """Whether a real libcuda.so.1 loads here: the tests that need its absence skip where it does."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False
FAKE_CASE = ROOT / "tests" / "fixtures" / "fake_case" / "manifest.py"
NATIVE_PROGRAMS = ROOT / "tests" / "fixtures" / "native_programs" / "manifest.py"


# The slow tier (make check; docs/testing.md) is `pytest -m "slow and not history"`: the tests
# marked slow, and every test of a marker that always means minutes or a machine of its own: the
# builds with real nvcc/tileiras (toolchain) and the cluster runs (slurm). make test is
# `-m "not slow"`; make test-history is `-m history` (older documents' rerun blocks, also slow).
SLOW_MARKERS = ("toolchain", "slurm")


# First, so that `-m slow` / `-m "not slow"` (the mark plugin's deselection, run after this hook)
# sees the marker added here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(item.get_closest_marker(name) for name in SLOW_MARKERS):
            item.add_marker(pytest.mark.slow)
        # Under --dist loadgroup (the slow tier's) a file's tests stay on one worker, its module
        # fixtures made once, as under loadfile (the fast tier's); a test that names a group of
        # its own goes with that group (test_rerun_literal: the documents of one commit). A
        # file's group is its path under tests/, as two folders may hold files of one name.
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(TESTS).as_posix()))
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
    from gpurepro.building.artifacts import build_case

    build_dir = ROOT / "build" / "tests"
    return build_dir, build_case(fake_case, "host", ROOT, build_dir)


@pytest.fixture(scope="session")
def native_programs() -> dict[str, Path]:
    """The native programs the crash-record and driver tests run (tests/fixtures/native_programs:
    the test driver, the preloaded crash handler, tile_unload_race's host driver, the fake
    libcuda, ...), name -> file. Built as a case's artifacts are, into build/tests beside the fake
    case's: content-addressed, each under a lock, so one build serves every test process of the
    session, and the next session while the sources are unchanged."""
    from gpurepro.building.artifacts import build_case
    from gpurepro.case import load_case

    index = build_case(load_case(NATIVE_PROGRAMS, ROOT), "host", ROOT, ROOT / "build" / "tests")
    return {name: ROOT / entry["path"] for name, entry in index["artifacts"].items()}


def toolchain_venv(case: str, target: str) -> Path | None:
    """The toolchain virtualenv nox made for this case/target (GPUREPRO_TOOLCHAINS), if any."""
    for entry in filter(None, os.environ.get("GPUREPRO_TOOLCHAINS", "").split(os.pathsep)):
        key, _, path = entry.partition("=")
        if key == f"{case}@{target}":
            return Path(path)
    return None
