"""The fingerprint's conditions: what changes a race's rate on the machine that ran it."""

from __future__ import annotations

import os

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


def test_gpu_modes_ecc_and_clocks_come_from_nvidia_smi():
    asked = []

    def smi(argv):
        asked.append(argv)
        return ("0, Enabled, Default, [N/A], Enabled, 1980, 3201, 1980, 700.00\n"
                "1, Disabled, Exclusive_Process, Disabled, [Not Supported], [N/A], [N/A], 1755, 350.00\n")

    gpus = conditions.gpu_conditions(smi)
    assert asked[0][0] == "nvidia-smi" and "persistence_mode" in asked[0][1]
    assert gpus[0] == {"index": 0, "persistence_mode": "Enabled", "compute_mode": "Default",
                       "mig_mode": None, "ecc_mode": "Enabled",
                       "application_clock_graphics_mhz": 1980, "application_clock_memory_mhz": 3201,
                       "max_clock_sm_mhz": 1980, "power_limit_w": 700.0}
    assert gpus[1]["compute_mode"] == "Exclusive_Process" and gpus[1]["ecc_mode"] is None
    assert conditions.gpu_conditions(lambda argv: None) is None


def test_redaction_drops_the_machine_product_name(root):
    fp = fingerprint(root)
    fp["conditions"]["virtualization"]["product"] = "Some Cloud c9.metal-7"
    from gpurepro.env.fingerprint import redact_fingerprint

    red = redact_fingerprint(fp)
    assert red["conditions"]["virtualization"]["product"] == "redacted"
    assert "c9.metal" not in str(red)
