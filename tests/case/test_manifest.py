"""Manifests: bad ones fail naming file and field; the reporters' files stay as filed."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from gpurepro.case import Arm, Artifact, validate
from gpurepro.errors import ManifestError
from tests.conftest import ROOT

# sha256 of the reporters' files as cut from the reports; an edit of a seed file fails here.
SEEDS = {
    "cases/tile_unload_race/seed/repro.cc": "d859e773d332bf7a2cdc2c78b712a36121e7a5e0fb8cffb0e4f9fa124cfafd5a",
    "cases/tile_unload_race/seed/export_kernel.py": "b3e3fbb18cbacfaf58f213eb150160e0ad35383632d563a6a9f5f74334019152",
    "cases/tile_unload_race/seed/plain_kernel.cu": "9ed49b4c0d8e02d8879a383475083d8bef60b0c155ca6ad4e0bff9b0892788f5",
    "cases/tcgen05_alloc_order/seed/repro.cu": "3789be114f6ab402a1dbcbcc716d9055d8302c01915e21cf6034b3ab5b46d089",
}


@pytest.mark.parametrize("path", sorted(SEEDS))
def test_seed_files_are_exactly_as_filed(path):
    assert hashlib.sha256((ROOT / path).read_bytes()).hexdigest() == SEEDS[path]


def _bad(fake_case, **changes):
    with pytest.raises(ManifestError) as err:
        validate(replace(fake_case, **changes), fake_case.path)
    return str(err.value)


def test_unknown_factor(fake_case):
    msg = _bad(fake_case, arms=[*fake_case.arms, Arm("weird", {"colour": "red"})])
    assert f"manifest.py: arms[{len(fake_case.arms)}].factors.colour: unknown factor" in msg


def test_unknown_level(fake_case):
    msg = _bad(fake_case, arms=[*fake_case.arms, Arm("weird", {"mode": "explode"})])
    assert f"arms[{len(fake_case.arms)}].factors.mode" in msg and "'explode' is not one of" in msg


def test_duplicate_arm(fake_case):
    msg = _bad(fake_case, arms=[*fake_case.arms, Arm("ok", {"mode": "ok"})])
    assert f"arms[{len(fake_case.arms)}].name: duplicate arm 'ok'" in msg


def test_missing_artifact_dependency(fake_case):
    art = Artifact("x", ("{gxx}", "-L{artifact:nothere}"), ("x",))
    msg = _bad(fake_case, artifacts=[*fake_case.artifacts, art])
    assert "artifacts[1].command: refers to unknown artifact 'nothere'" in msg


def test_missing_source(fake_case):
    art = Artifact("y", ("{gxx}",), ("y",), sources=("nowhere.cc",))
    assert "artifacts[1].sources: source 'nowhere.cc' does not exist" in _bad(
        fake_case, artifacts=[*fake_case.artifacts, art])


def test_real_cases_load():
    from gpurepro.case import load_case

    for name in ("tile_unload_race",):
        case = load_case(name, ROOT)
        assert case.baseline in case.resolved_arms()


def test_a_case_with_a_check_counts_wrong_results_as_failures():
    import dataclasses
    from pathlib import Path

    import pytest

    from gpurepro.case.load import ManifestError, load_case, validate
    from gpurepro.case.model import OutputCheck

    root = Path(__file__).resolve().parents[2]
    fake = load_case(root / "tests" / "fixtures" / "fake_case" / "manifest.py", root)
    checked = dataclasses.replace(fake, check=OutputCheck("exact"),
                                  failure_outcomes=("crashed", "wrong_result"))
    validate(checked, "manifest.py")
    with pytest.raises(ManifestError, match="add 'wrong_result' to failure_outcomes"):
        validate(dataclasses.replace(checked, failure_outcomes=("crashed",)), "manifest.py")


def test_a_stop_that_lands_while_a_manifest_imports_stops_the_command(tmp_path):
    """The harness's SIGINT/SIGTERM handler raises Stopped wherever the main thread is; during
    the manifest's import that is a stop (exit 130/143), not a manifest that fails to import."""
    import signal

    from gpurepro.case import load_case
    from gpurepro.errors import Stopped

    folder = tmp_path / "cases" / "stopped_case"
    folder.mkdir(parents=True)
    (tmp_path / "native").mkdir()
    (folder / "manifest.py").write_text(
        "import signal\nfrom gpurepro.errors import Stopped\nraise Stopped(signal.SIGINT)\n")
    with pytest.raises(Stopped) as err:
        load_case(folder / "manifest.py", tmp_path)
    assert err.value.signum == signal.SIGINT
