"""A runtime package's releases as a factor's levels (Runtime.releases): each level an arm uses
stands for that release and its dependencies, each pinned to the newest release inside the
range the release's wheel declares, found by the build from the wheels and pip's release list
and locked; an arm's wheels come from its level.

The wheels are made here and served by pip's own settings (``PIP_NO_INDEX``,
``PIP_FIND_LINKS``): nothing is fetched from an index."""

from __future__ import annotations

import json

import pytest

from gpurepro.building import runtime as build_runtime
from gpurepro.building import runtime_releases
from gpurepro.case import load_case
from tests.building.test_runtime_pins import make_wheel
from tests.conftest import ROOT

MANIFEST = ROOT / "tests" / "fixtures" / "release_runtime_case" / "manifest.py"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release-wheels")
    make_wheel(folder, "gpurepro-probe", "1.0", ("gpurepro-dep<2", "pip>=1"))
    make_wheel(folder, "gpurepro-probe", "2.0", ("gpurepro-dep>=2", "pip>=1"))
    for version in ("1.0", "1.5", "2.0"):
        make_wheel(folder, "gpurepro-dep", version)
    mp = pytest.MonkeyPatch()
    mp.setenv("PIP_NO_INDEX", "1")
    mp.setenv("PIP_FIND_LINKS", str(folder))
    mp.setenv("PIP_CONFIG_FILE", "/dev/null")
    yield folder
    mp.undo()


@pytest.fixture(scope="module")
def built(served, tmp_path_factory):
    case = load_case(MANIFEST, ROOT)
    root = tmp_path_factory.mktemp("root")
    (root / "locks").mkdir()
    build_dir = ROOT / "build" / "tests-release-runtime"
    index = build_runtime.fetch(case, root, build_dir)
    return case, root, build_dir, index


def test_each_level_pins_its_release_and_the_newest_dependency_in_its_range(built):
    case, root, _, index = built
    assert index["arms"]["one"]["requested"] == ["gpurepro-probe==1.0", "gpurepro-dep==1.5"]
    assert index["arms"]["two"]["requested"] == ["gpurepro-probe==2.0", "gpurepro-dep==2.0"]
    assert "node" not in index["arms"]  # a level that is no release pins nothing
    assert index["arms"]["one"]["from_node"] == [{"requirement": "pip>=1",
                                                  "of": "gpurepro-probe==1.0"}]


def test_the_levels_are_locked_and_a_later_build_keeps_them(built, served):
    case, root, build_dir, _ = built
    lock = json.loads(runtime_releases.lock_path(root, case.name).read_text())
    assert lock["levels"] == {"gpurepro-probe==1.0": ["gpurepro-probe==1.0", "gpurepro-dep==1.5"],
                              "gpurepro-probe==2.0": ["gpurepro-probe==2.0", "gpurepro-dep==2.0"]}
    # A newer dependency inside the range is published: the locked pin stays.
    make_wheel(served, "gpurepro-dep", "1.9")
    try:
        again = build_runtime.fetch(case, root, build_dir)
    finally:
        (served / "gpurepro_dep-1.9-py3-none-any.whl").unlink()
    assert again["arms"]["one"]["requested"] == ["gpurepro-probe==1.0", "gpurepro-dep==1.5"]


def test_a_pack_of_one_level_carries_that_releases_wheels_alone(built):
    _, _, _, index = built
    _, paths = build_runtime.carried(index, ["two"])
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == [
        "gpurepro_dep-2.0-py3-none-any.whl", "gpurepro_probe-2.0-py3-none-any.whl"]


def test_a_release_factor_that_is_no_factor_names_its_field(tmp_path):
    from gpurepro.case import ManifestError

    text = MANIFEST.read_text().replace('releases={"probe": ', 'releases={"probes": ')
    path = tmp_path / "manifest.py"
    path.write_text(text)
    with pytest.raises(ManifestError, match=r"runtime\.releases\.probes.*not a factor"):
        load_case(path, ROOT)
