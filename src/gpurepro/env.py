"""Environment fingerprint: what a maintainer triaging the issue needs, nothing private.

Standard library only, so the run stage can take it on a GPU node; NVML (nvidia-ml-py) is used
when importable, then `nvidia-smi`, then libcuda through ctypes. Every source may be missing:
the fingerprint then says so instead of failing.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

ENV_PREFIXES = ("CUDA_", "NVIDIA_", "CUTILE_", "TILEIR_", "NCCL_", "PTXAS_")
ENV_EXTRA = ("LD_PRELOAD",)


def _run(argv: list[str], timeout: float = 10.0) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _cuda_driver() -> dict[str, Any]:
    """CUDA driver API version and per-device compute capability, through libcuda itself."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return {"available": False, "reason": f"libcuda.so.1 not loadable: {exc}"}
    rc = lib.cuInit(0)
    version = ctypes.c_int(0)
    lib.cuDriverGetVersion(ctypes.byref(version))
    out: dict[str, Any] = {"available": rc == 0, "api_version": _api_version(version.value)}
    if rc != 0:
        out["reason"] = f"cuInit failed with CUresult {rc}"
        return out
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    devices = []
    for i in range(count.value):
        dev = ctypes.c_int(0)
        lib.cuDeviceGet(ctypes.byref(dev), i)
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
        lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(name, 256, dev)
        devices.append(
            {
                "index": i,
                "name": name.value.decode(errors="replace"),
                "compute_capability": f"{major.value}.{minor.value}",
            }
        )
    out["devices"] = devices
    return out


def _api_version(v: int) -> str | None:
    return f"{v // 1000}.{(v % 1000) // 10}" if v else None


def _nvml_gpus() -> list[dict[str, Any]] | None:
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        gpus = []
        driver = pynvml.nvmlSystemGetDriverVersion()
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            gpus.append(
                {
                    "index": i,
                    "name": _s(pynvml.nvmlDeviceGetName(h)),
                    "uuid": _s(pynvml.nvmlDeviceGetUUID(h)),
                    "compute_capability": f"{major}.{minor}",
                    "memory_mib": pynvml.nvmlDeviceGetMemoryInfo(h).total // 2**20,
                    "pci_bus_id": _s(pynvml.nvmlDeviceGetPciInfo(h).busId),
                    "driver_version": _s(driver),
                }
            )
        return gpus
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _smi_gpus() -> list[dict[str, Any]] | None:
    text = _run(
        [
            "nvidia-smi",
            "--query-gpu=index,name,uuid,compute_cap,memory.total,pci.bus_id,driver_version",
            "--format=csv,noheader,nounits",
        ]
    )
    if not text:
        return None
    gpus = []
    for line in text.strip().splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) < 7:
            continue
        gpus.append(
            {
                "index": int(f[0]),
                "name": f[1],
                "uuid": f[2],
                "compute_capability": f[3],
                "memory_mib": int(float(f[4])) if f[4].replace(".", "").isdigit() else None,
                "pci_bus_id": f[5],
                "driver_version": f[6],
            }
        )
    return gpus


def gpus() -> dict[str, Any]:
    """All GPUs with their facts, and the CUDA driver API version; `available` False if none."""
    driver = _cuda_driver()
    listed = _nvml_gpus() or _smi_gpus()
    if listed is None and driver.get("devices"):
        listed = driver["devices"]
    if not listed:
        return {
            "available": False,
            "reason": driver.get("reason") or "no NVIDIA GPU found",
            "cuda_driver_api": driver.get("api_version"),
            "gpus": [],
        }
    return {
        "available": bool(driver.get("available")),
        "reason": driver.get("reason"),
        "cuda_driver_api": driver.get("api_version"),
        "driver_version": listed[0].get("driver_version"),
        "gpus": listed,
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _os_release() -> str | None:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return None
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.M)
    return m.group(1) if m else None


def _git(root: Path) -> dict[str, Any]:
    commit = _run(["git", "-C", str(root), "rev-parse", "HEAD"])
    if commit is None:
        # A copied tree without .git (a GPU node): the caller may pass the commit along.
        return {"commit": os.environ.get("GPUREPRO_COMMIT"), "dirty": None}
    status = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit.strip(), "dirty": bool(status and status.strip())}


def environment_variables(environ: dict[str, str] | None = None) -> dict[str, str]:
    environ = dict(os.environ if environ is None else environ)
    return {
        k: v
        for k, v in sorted(environ.items())
        if k.startswith(ENV_PREFIXES) or k in ENV_EXTRA
    }


def fingerprint(root: Path | None = None, redact: bool = False,
                gpu_info: dict[str, Any] | None = None) -> dict[str, Any]:
    root = root or Path.cwd()
    libc = platform.libc_ver()
    fp: dict[str, Any] = {
        "host": {
            "hostname": socket.gethostname(),
            "os": _os_release() or platform.system(),
            "kernel": platform.release(),
            "glibc": libc[1] if libc[0] == "glibc" else None,
            "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
        },
        "gpu": gpu_info if gpu_info is not None else gpus(),
        "repository": _git(root),
        "environment": environment_variables(),
        "redacted": False,
    }
    return redact_fingerprint(fp) if redact else fp


_HOME = re.compile(r"(/home/[^/\s:]+|/Users/[^/\s:]+|/root)(?=/|\b)")


def redact_text(text: str) -> str:
    text = text.replace(socket.gethostname(), "<host>") if socket.gethostname() else text
    home = os.path.expanduser("~")
    if home and home != "/":
        text = text.replace(home, "~")
    return _HOME.sub("~", text)


def redact_fingerprint(fp: dict[str, Any]) -> dict[str, Any]:
    out = dict(fp)
    out["host"] = {**fp["host"], "hostname": "redacted"}
    out["environment"] = {k: redact_text(v) for k, v in fp.get("environment", {}).items()}
    out["redacted"] = True
    return out


def main() -> int:
    import json

    redact = "--redact" in sys.argv
    print(json.dumps(fingerprint(redact=redact), indent=2))
    return 0
