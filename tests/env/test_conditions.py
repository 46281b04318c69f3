"""The fingerprint's conditions: what changes a race's rate on the machine that ran it."""

from __future__ import annotations

import os
import sys
import types

from gpurepro.env import conditions
from gpurepro.env.fingerprint import fingerprint


def test_cpu_lists_read_and_write_as_the_kernel_writes_them():
    assert conditions.cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert conditions.cpu_ranges([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert conditions.cpu_list("") is None and conditions.cpu_list("x-1") is None


def test_the_fingerprint_records_affinity_usable_cores_and_virtualization(root):
    fp = fingerprint(root)
    cpu, virt = fp["conditions"]["cpu"], fp["conditions"]["virtualization"]
    assert conditions.cpu_list(cpu["affinity"]) == sorted(os.sched_getaffinity(0))
    assert 0 < cpu["usable_cores"] <= len(os.sched_getaffinity(0))
    assert set(cpu) >= {"governor", "scaling_driver", "turbo", "isolated", "nohz_full",
                        "cgroup_cpu_quota", "idle_driver"}
    assert isinstance(virt["hypervisor"], bool) and "container" in virt
    assert "gpus" in fp["conditions"]  # None without nvidia-smi


def test_usable_cores_are_capped_by_the_cgroup_quota():
    assert conditions.usable_cores([0, 1, 2, 3], 1.5) == 1.5
    assert conditions.usable_cores([0, 1], None) == 2.0


def test_gpu_modes_ecc_and_clocks_read_from_nvidia_smi_text():
    asked = []

    def smi(argv):
        asked.append(argv)
        return ("0, Enabled, Default, [N/A], Enabled, 1980, 3201, 1980, 700.00\n"
                "1, Disabled, Exclusive_Process, Disabled, [Not Supported], [N/A], [N/A], 1755, 350.00\n")

    gpus = conditions.smi_conditions(smi)
    assert asked[0][0] == "nvidia-smi" and "persistence_mode" in asked[0][1]
    assert gpus[0] == {"index": 0, "persistence_mode": "Enabled", "compute_mode": "Default",
                       "mig_mode": None, "ecc_mode": "Enabled",
                       "application_clock_graphics_mhz": 1980, "application_clock_memory_mhz": 3201,
                       "max_clock_sm_mhz": 1980, "power_limit_w": 700.0}
    assert gpus[1]["compute_mode"] == "Exclusive_Process" and gpus[1]["ecc_mode"] is None
    assert conditions.smi_conditions(lambda argv: None) is None


class FakeNVMLError(Exception):
    pass


class FakePynvml(types.ModuleType):
    """pynvml as nvidia-ml-py names it, over two devices: an H200 in persistence mode with
    MIG off, and a board that supports neither MIG nor application clocks."""

    NVMLError = FakeNVMLError

    def __init__(self, starts=True):
        super().__init__("pynvml")
        self.starts, self.calls = starts, []

    def nvmlInit(self):
        self.calls.append("init")
        if not self.starts:
            raise FakeNVMLError("Driver Not Loaded")

    def nvmlShutdown(self):
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetPersistenceMode(self, h):
        return 1 if h == 0 else 0

    def nvmlDeviceGetComputeMode(self, h):
        return 0 if h == 0 else 3

    def nvmlDeviceGetMigMode(self, h):
        if h == 1:
            raise FakeNVMLError("Not Supported")
        return [0, 0]

    def nvmlDeviceGetEccMode(self, h):
        return [1, 1]

    def nvmlDeviceGetApplicationsClock(self, h, clock):
        if h == 1:
            raise FakeNVMLError("Not Supported")
        return {0: 1980, 2: 3201}[clock]

    def nvmlDeviceGetMaxClockInfo(self, h, clock):
        assert clock == 1  # NVML_CLOCK_SM
        return 1980 if h == 0 else 1755

    def nvmlDeviceGetPowerManagementLimit(self, h):
        return 700000 if h == 0 else 350000


def test_gpu_modes_are_read_through_pynvml_where_it_answers(monkeypatch):
    fake = FakePynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)

    def smi(argv):
        raise AssertionError(f"nvidia-smi asked although NVML answered: {argv}")

    gpus = conditions.gpu_conditions(smi)
    assert gpus[0] == {"index": 0, "persistence_mode": "Enabled", "compute_mode": "Default",
                       "mig_mode": "Disabled", "ecc_mode": "Enabled",
                       "application_clock_graphics_mhz": 1980, "application_clock_memory_mhz": 3201,
                       "max_clock_sm_mhz": 1980, "power_limit_w": 700.0}
    # What the device does not support reads as nvidia-smi's [N/A] does: None.
    assert gpus[1] == {"index": 1, "persistence_mode": "Disabled",
                       "compute_mode": "Exclusive_Process", "mig_mode": None, "ecc_mode": "Enabled",
                       "application_clock_graphics_mhz": None, "application_clock_memory_mhz": None,
                       "max_clock_sm_mhz": 1755, "power_limit_w": 350.0}
    assert fake.calls == ["init", "shutdown"]


def test_nvidia_smi_is_the_fallback_where_nvml_does_not_start_or_pynvml_is_missing(monkeypatch):
    line = "0, Disabled, Default, Disabled, Enabled, 1410, 1593, 1410, 400.00\n"
    asked = []

    def smi(argv):
        asked.append(argv)
        return line

    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml(starts=False))
    assert conditions.gpu_conditions(smi)[0]["max_clock_sm_mhz"] == 1410
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    assert conditions.gpu_conditions(smi)[0]["power_limit_w"] == 400.0
    assert len(asked) == 2


def test_redaction_drops_the_machine_product_name(root):
    fp = fingerprint(root)
    fp["conditions"]["virtualization"]["product"] = "Some Cloud c9.metal-7"
    from gpurepro.env.fingerprint import redact_fingerprint

    red = redact_fingerprint(fp)
    assert red["conditions"]["virtualization"]["product"] == "redacted"
    assert "c9.metal" not in str(red)
