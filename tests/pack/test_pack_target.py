"""Which target a pack is built for: --arch, the case's only one, or, of several, its Hopper one
(the GPU nodes packs go to); never the manifest's first nor this machine's GPU. The nox session
asks the pack command itself, then installs that target's pins."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpurepro.case import Devices, load_case
from gpurepro.cli.args import pack_target
from gpurepro.errors import UsageError
from tests.conftest import ROOT
from tests.e2e.test_nox_sessions import session_calls


def _case(targets: dict[str, str]):
    case = load_case("ctx_get_device_v2", ROOT)
    return replace(case, devices=Devices(targets=targets))


def test_of_several_targets_a_pack_is_for_hopper_not_the_first():
    target, why = pack_target(_case({"8.0": "sm_80", "9.0": "sm_90", "12.0": "sm_120"}), None)
    assert target == "sm_90"
    assert why.startswith("packing for sm_90: compute capability 9.0, Hopper (H100, H200)")
    assert "--arch names another node's" in why


def test_a_named_or_only_target_is_taken_as_it_is():
    assert pack_target(_case({"8.0": "sm_80", "9.0": "sm_90"}), "sm_80") == ("sm_80", None)
    assert pack_target(load_case("fa3_wgmma_wait", ROOT), None) == ("sm_90a", None)
    with pytest.raises(UsageError, match="--arch sm_75: ctx_get_device_v2 builds for sm_80, sm_90"):
        pack_target(_case({"8.0": "sm_80", "9.0": "sm_90"}), "sm_75")


def test_several_targets_and_none_for_hopper_need_arch():
    with pytest.raises(UsageError, match=r"builds for sm_120, sm_80 and none of them is for "
                                         r"Hopper \(H100, H200\), the default; name the node's"):
        pack_target(_case({"8.0": "sm_80", "12.0": "sm_120"}), None)


def test_the_pack_session_installs_the_pins_of_the_target_the_pack_chose():
    calls = session_calls("pack", "ctx_get_device_v2")
    runs = [c for c in calls if c[0] == "run"]
    assert not any("prepare" in c for c in runs)  # no target from this machine's GPU
    asked = next(i for i, c in enumerate(calls) if "--target-out" in c)
    installed = next(i for i, c in enumerate(calls) if c == ["install", "x==1"])
    packed = max(i for i, c in enumerate(calls) if c[0] == "run" and "pack" in c)
    assert asked < installed < packed and "--target-out" not in calls[packed]
