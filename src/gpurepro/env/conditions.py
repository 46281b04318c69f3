"""What changes a race's rate on this machine, beyond which GPU and driver it is.

A race between two host threads inside the driver crashes more or less often with how many cores
the process may use and how fast they run, with the GPU's persistence, compute and MIG modes,
ECC and its clocks, and under a hypervisor or in a container. Each is recorded as read, or None
where this machine does not say; nothing here fails a run. The CPU facts are read the way
pyperf's metadata collector reads them (``pyperf/_collect_metadata.py``: the affinity mask, the
cgroup CPU quota, ``cpufreq/scaling_governor``, ``isolated``, ``nohz_full``); each reader
catches only the error it expects (``OSError`` around a file that may be absent). The GPU's
modes are read through NVML (pynvml, as the fingerprint's GPU list is) where it is installed,
with nvidia-smi's text as the fallback: the run stage takes this module on a GPU node that may
have the standard library only.

Nothing private is recorded (no container id, cgroup path, serial number or hostname); under
``--redact`` the DMI product name, which can name a specific rented machine type, is dropped too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

# What other modules use; the rest is this module's own.
__all__ = [
    "cgroup_cpu_quota", "collect", "container", "cpu_list", "cpu_ranges", "gpu_conditions",
    "NVML_CLOCK_MEM", "NVML_CLOCK_SM", "redact", "smi_conditions", "usable_cores",
    "virtualization"
]

SYS_CPU = Path("/sys/devices/system/cpu")


def _read(path: Path | str) -> str | None:
    """The first line of a file, stripped; None when there is no such file or it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().strip()
    except OSError:
        return None


def cpu_list(text: str | None) -> list[int] | None:
    """A kernel CPU list ("0-3,8,10-11") as the CPUs it names; None for none or garbage."""
    if not text:
        return None
    cpus: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        cpus += range(int(lo), int(hi or lo) + 1)
    return cpus


def cpu_ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 3, 8] -> "0-3,8"."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def cpu_affinity() -> list[int] | None:
    """The CPUs this process may run on (its affinity mask), None where the OS has no mask."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return None


def cgroup_cpu_quota() -> float | None:
    """The cgroup's CPU bandwidth limit, in CPUs (cgroup v2 cpu.max, or v1 cfs quota/period),
    the smallest along the hierarchy; None without a limit."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        names = [n for n in path.strip("/").split("/") if n]
        if hierarchy == "0" and not controllers:  # v2: the cgroup and each of its parents
            for depth in range(len(names), -1, -1):
                fields = (_read(Path("/sys/fs/cgroup", *names[:depth], "cpu.max")) or "").split()
                if len(fields) == 2 and fields[0] != "max" and fields[0].isdigit() and fields[1].isdigit():
                    limits.append(int(fields[0]) / int(fields[1]))
        elif "cpu" in controllers.split(","):
            quota = _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
            period = _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
            if quota and period and quota.lstrip("-").isdigit() and period.isdigit() and int(quota) > 0:
                limits.append(int(quota) / int(period))
    return min(limits) if limits else None


def usable_cores(affinity: list[int] | None, quota: float | None) -> float | None:
    """How many CPUs the trials can use at once: the affinity mask, capped by the quota."""
    n = len(affinity) if affinity else os.cpu_count()
    if n is None:
        return None
    return min(float(n), quota) if quota is not None else float(n)


def governors(cpus: list[int]) -> dict[str, str]:
    """Frequency governor -> the CPUs (as a list) that run under it, over ``cpus``."""
    by: dict[str, list[int]] = {}
    for cpu in cpus:
        g = _read(SYS_CPU / f"cpu{cpu}" / "cpufreq" / "scaling_governor")
        if g:
            by.setdefault(g, []).append(cpu)
    return {g: cpu_ranges(c) for g, c in sorted(by.items())}


def cpu_conditions() -> dict[str, Any]:
    """The CPU side: affinity, usable cores, quota, governor, scaling driver and turbo,
    isolated and nohz_full CPUs, the idle driver."""
    affinity = cpu_affinity()
    quota = cgroup_cpu_quota()
    cpus = affinity or list(range(os.cpu_count() or 0))
    driver = _read(SYS_CPU / "cpu0" / "cpufreq" / "scaling_driver") if cpus else None
    no_turbo = _read(SYS_CPU / "intel_pstate" / "no_turbo") if driver == "intel_pstate" else None
    isolated = cpu_list(_read(SYS_CPU / "isolated"))
    nohz = cpu_list(_read(SYS_CPU / "nohz_full"))
    return {
        "affinity": cpu_ranges(affinity) if affinity else None,
        "usable_cores": usable_cores(affinity, quota),
        "cgroup_cpu_quota": quota,
        "governor": governors(cpus) or None,
        "scaling_driver": driver,
        "turbo": None if no_turbo is None else no_turbo == "0",
        "isolated": cpu_ranges(isolated) if isolated else None,
        "nohz_full": cpu_ranges(nohz) if nohz else None,
        "idle_driver": _read(SYS_CPU / "cpuidle" / "current_driver"),
    }


def _cpuinfo_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def container() -> str | None:
    """The kind of container this runs in (docker, podman, kubernetes, lxc, ...), or None."""
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if Path("/.dockerenv").exists():
        return "docker"
    if Path("/run/.containerenv").exists():
        return "podman"
    try:
        environ = Path("/proc/1/environ").read_bytes().split(b"\0")
    except OSError:
        environ = []
    for entry in environ:
        if entry.startswith(b"container="):
            return entry.split(b"=", 1)[1].decode(errors="replace") or "container"
    try:
        cgroup = Path("/proc/1/cgroup").read_text()
    except OSError:
        cgroup = ""
    m = re.search(r"/(docker|kubepods|lxc|containerd|crio)[/.-]", cgroup)
    return {"kubepods": "kubernetes", "crio": "cri-o"}.get(m.group(1), m.group(1)) if m else None


def virtualization() -> dict[str, Any]:
    """Whether a hypervisor is below this machine (the CPU's flag), whose (DMI vendor and
    product), and the container kind."""
    return {
        "hypervisor": "hypervisor" in _cpuinfo_flags(),
        "vendor": _read("/sys/class/dmi/id/sys_vendor"),
        "product": _read("/sys/class/dmi/id/product_name"),
        "container": container(),
    }


# nvidia-smi's names for the GPU facts that change a race's rate, and the record's names.
SMI_FIELDS = {
    "index": "index",
    "persistence_mode": "persistence_mode",
    "compute_mode": "compute_mode",
    "mig.mode.current": "mig_mode",
    "ecc.mode.current": "ecc_mode",
    "clocks.applications.graphics": "application_clock_graphics_mhz",
    "clocks.applications.memory": "application_clock_memory_mhz",
    "clocks.max.sm": "max_clock_sm_mhz",
    "power.limit": "power_limit_w",
}


def _smi_value(text: str) -> Any:
    text = text.strip()
    if not text or text.startswith("[") or text in ("N/A", "Not Supported"):
        return None  # "[N/A]", "[Not Supported]": the device does not say
    try:
        return int(text) if text.isdigit() else float(text)
    except ValueError:
        return text


def smi_conditions(run: Any) -> list[dict[str, Any]] | None:
    """Per GPU (by index), its persistence, compute and MIG modes, ECC, application and maximum
    clocks and power limit, from nvidia-smi (``run``: the fingerprint's command runner, None
    when the command is missing or fails); None where nvidia-smi says nothing."""
    text = run(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}",
                "--format=csv,noheader,nounits"])
    if not text:
        return None
    out = []
    for line in text.strip().splitlines():
        values = line.split(",")
        if len(values) != len(SMI_FIELDS):
            continue
        out.append({name: _smi_value(v) for name, v in zip(SMI_FIELDS.values(), values, strict=True)})
    return out or None


# NVML's enumerations in the words nvidia-smi prints for them, so a record reads the same
# whichever of the two read it (nvml.h: nvmlComputeMode_t, nvmlEnableState_t).
NVML_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
NVML_STATES = {0: "Disabled", 1: "Enabled"}
NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2


def _pynvml() -> Any:
    """pynvml (nvidia-ml-py, of gpurepro[analysis]) where it is installed; the run stage on a
    GPU node may have the standard library only."""
    try:
        import pynvml  # type: ignore[import-not-found, unused-ignore]  # NVML where installed
    except ImportError:
        return None
    return pynvml


def nvml_conditions(nvml: Any) -> list[dict[str, Any]] | None:
    """The same facts as ``smi_conditions``, read through NVML (``nvml``: the pynvml module);
    None where NVML does not start (no driver, no GPU). A query a device does not support
    (MIG on a GPU without it, application clocks on some boards) is None, as nvidia-smi's
    "[N/A]" is."""
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
    except nvml.NVMLError:
        return None

    def ask(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except nvml.NVMLError:
            return None

    def current(pair: Any) -> Any:  # MIG and ECC modes come as [current, pending]
        return pair[0] if pair is not None else None

    try:
        out = []
        for index in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(index)
            power_mw = ask(nvml.nvmlDeviceGetPowerManagementLimit, h)
            out.append({
                "index": index,
                "persistence_mode": NVML_STATES.get(ask(nvml.nvmlDeviceGetPersistenceMode, h)),
                "compute_mode": NVML_COMPUTE_MODES.get(ask(nvml.nvmlDeviceGetComputeMode, h)),
                "mig_mode": NVML_STATES.get(current(ask(nvml.nvmlDeviceGetMigMode, h))),
                "ecc_mode": NVML_STATES.get(current(ask(nvml.nvmlDeviceGetEccMode, h))),
                "application_clock_graphics_mhz": ask(nvml.nvmlDeviceGetApplicationsClock, h,
                                                      NVML_CLOCK_GRAPHICS),
                "application_clock_memory_mhz": ask(nvml.nvmlDeviceGetApplicationsClock, h,
                                                    NVML_CLOCK_MEM),
                "max_clock_sm_mhz": ask(nvml.nvmlDeviceGetMaxClockInfo, h, NVML_CLOCK_SM),
                "power_limit_w": power_mw / 1000 if power_mw is not None else None,
            })
        return out or None
    except nvml.NVMLError:  # the device list itself could not be read
        return None
    finally:
        ask(nvml.nvmlShutdown)


def gpu_conditions(run: Any) -> list[dict[str, Any]] | None:
    """Per GPU, its modes, ECC, clocks and power limit: through NVML where pynvml is installed
    and the driver answers it, else from nvidia-smi's text (``run``: the command runner)."""
    return nvml_conditions(_pynvml()) or smi_conditions(run)


def collect(run: Any) -> dict[str, Any]:
    """Every condition: CPU, virtualization, GPUs."""
    return {"cpu": cpu_conditions(), "virtualization": virtualization(),
            "gpus": gpu_conditions(run)}


def redact(conditions: dict[str, Any]) -> dict[str, Any]:
    """The conditions as a redacted record keeps them: the DMI product name dropped."""
    virt = dict(conditions.get("virtualization") or {})
    if virt.get("product") is not None:
        virt["product"] = "redacted"
    return {**conditions, "virtualization": virt}
