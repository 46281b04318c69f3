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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import conditions
from .privacy import is_secret_name, mask_env_value, portable_text, redact_identifier, redact_text

# The environment variables a record keeps: an explicit allow-list of names known to change how
# a GPU program behaves, or to say which stack it ran on, and whose values are not private.
# Kept by name, never by prefix: a prefix also catches NVIDIA_API_KEY or CUDA_TOKEN. Variables
# that only name a local directory (CUDA_CACHE_PATH, CUDA_TILE_DUMP_*, LD_LIBRARY_PATH,
# CUDA_MPS_PIPE_DIRECTORY) are left out: they say where, not what, and the facts they lead to
# (driver version, toolchain versions) are recorded directly.
ENV_ALLOWED = (
    # Which devices the process sees, and in which order: decide what "device 0" is.
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",  # the container runtime's view of the same
    "NVIDIA_DRIVER_CAPABILITIES",  # which driver libraries the container runtime mounted
    # Launch and module-loading behaviour: serialising launches or loading modules eagerly can
    # hide or expose a race (the load/launch/unload cases depend on both).
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "CUDA_MODULE_DATA_LOADING",
    "CUDA_DEVICE_MAX_CONNECTIONS",  # hardware work queues: how much really runs concurrently
    "CUDA_DEVICE_MAX_COPY_CONNECTIONS",
    "CUDA_SCALE_LAUNCH_QUEUES",  # launch queue depth
    # Which code runs: the JIT cache and forcing PTX JIT replace the SASS that was built.
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_MAXSIZE",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_FORCE_JIT",
    "CUDA_DISABLE_PTX_JIT",
    "CUDA_DISABLE_JIT",
    "CUDA_MANAGED_FORCE_DEVICE_ALLOC",  # unified-memory placement
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",  # changes what a device exception does to the process
    "NVIDIA_TF32_OVERRIDE",  # changes the arithmetic of float32 matmuls
    # The toolkit the container image or the user points at (a path under $HOME is redacted).
    "CUDA_VERSION",
    "CUDA_HOME",
    "CUDA_PATH",
    # cuda-tile (cuda.tile) switches that change the Tile IR it emits or how it compiles.
    # (CUDA_TILE_TESTING_DISABLE_TOKEN_ORDER matters too, but its name contains TOKEN and the
    # secret-name rule has no exceptions.)
    "CUDA_TILE_TESTING_DISABLE_DIV",
    "EXPERIMENTAL_CUDA_TILE_DEBUG_BUILD",  # tileiras at -O0
    "CUDA_TILE_COMPILER_TIMEOUT_SEC",
    "CUDA_TILE_ENABLE_CRASH_DUMP",
    "CUDA_TILE_LOGS",
    # NCCL, for multi-GPU cases: the transport and algorithm choices and the library version.
    "NCCL_VERSION",
    "NCCL_DEBUG",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_NVLS_ENABLE",
    "NCCL_CUMEM_ENABLE",
    # Interposed libraries run inside the process under test (crash handlers, sanitizers,
    # profilers injected through CUDA_INJECTION64_PATH): they change timing and symbols.
    "LD_PRELOAD",
    "CUDA_INJECTION64_PATH",
)


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


# cuModuleGetLoadingMode's CUmoduleLoadingMode, by the words of its enumerator names.
_LOADING_MODES = {"LAZY": "lazy", "EAGER": "eager"}


def cuda_python_facts(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Driver facts NVML does not give, through cuda-python's ``cuda.bindings`` where it is
    importable: the module loading mode the driver runs with (``cuModuleGetLoadingMode``: lazy
    or eager; a load/unload race may depend on it) and the driver API version
    (``cuDriverGetVersion``). Without it, the loading mode only as ``CUDA_MODULE_LOADING``
    requests it (unset: the driver's default) and the version as libcuda gives it through
    ctypes (``gpu.cuda_driver_api``). Imported here, inside the try: the run stage needs only
    the standard library."""
    environ = os.environ if environ is None else environ
    requested = environ.get("CUDA_MODULE_LOADING")
    out: dict[str, Any] = {"source": None, "module_loading": None,
                           "module_loading_requested": requested.lower() if requested else None,
                           "driver_api_version": None}
    try:
        from cuda.bindings import driver as cu  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        return {**out, "reason": f"cuda.bindings is not importable ({exc})"}
    try:
        import importlib.metadata

        out["source"] = f"cuda.bindings {importlib.metadata.version('cuda-bindings')}"
    except importlib.metadata.PackageNotFoundError:
        out["source"] = "cuda.bindings"
    try:
        (err,) = cu.cuInit(0)
        if int(err) != 0:
            return {**out, "reason": f"cuInit returned {getattr(err, 'name', err)}"}
        err, version = cu.cuDriverGetVersion()
        if int(err) == 0:
            out["driver_api_version"] = int(version)
        err, mode = cu.cuModuleGetLoadingMode()
        if int(err) == 0:
            name = str(getattr(mode, "name", mode)).upper()
            out["module_loading"] = next((v for k, v in _LOADING_MODES.items() if k in name), name)
        else:
            out["reason"] = f"cuModuleGetLoadingMode returned {getattr(err, 'name', err)}"
    except (RuntimeError, OSError, AttributeError, TypeError, ValueError) as exc:
        # A driver or bindings without the entry point, or libcuda not loadable.
        out["reason"] = f"{type(exc).__name__}: {exc}"
    return out


def _nvml_gpus() -> list[dict[str, Any]] | None:
    try:
        import pynvml  # type: ignore[import-not-found, unused-ignore]
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


def repository(root: Path) -> dict[str, Any]:
    """The commit the tree under ``root`` is, and whether it differs from it.

    GPUREPRO_COMMIT (with GPUREPRO_DIRTY, "0" or "1", beside it) wins whenever it is set: a tree
    copied to a GPU node is the commit its sender names, whatever git state the copy carries (a
    copy can hold an older .git, whose HEAD and status then describe something else). Without it,
    git is asked, and only about the project's own repository: a tree whose git root is another
    folder (copied inside another repository) has no commit of its own to report."""
    given = os.environ.get("GPUREPRO_COMMIT")
    if given:
        dirty = os.environ.get("GPUREPRO_DIRTY")
        return {"commit": given.strip(), "dirty": None if dirty is None else dirty.strip() == "1",
                "source": "GPUREPRO_COMMIT"}
    top = _run(["git", "-C", str(root), "rev-parse", "--show-toplevel"])
    if top is None:
        return {"commit": None, "dirty": None}  # a copied tree without .git, and no commit given
    if Path(top.strip()).resolve() != root.resolve():
        return {"commit": None, "dirty": None,
                "source": "not a repository of its own (its git root is another folder)"}
    commit = _run(["git", "-C", str(root), "rev-parse", "HEAD"])
    status = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit.strip() if commit else None, "dirty": bool(status and status.strip())}


def environment_variables(environ: Mapping[str, str] | None = None,
                          root: Path | None = None) -> dict[str, str]:
    """The allow-listed variables that are set, never one with a secret-looking name; values
    with paths made portable (see ``portable_text``) and secret-looking tokens masked."""
    environ = dict(os.environ if environ is None else environ)
    return {
        k: mask_env_value(portable_text(v, root))
        for k, v in sorted(environ.items())
        if k in ENV_ALLOWED and not is_secret_name(k)
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
        "cuda_python": cuda_python_facts(),
        "repository": repository(root),
        "environment": environment_variables(root=root),
        # What changes a race's rate: CPU affinity, usable cores, governor; GPU modes, ECC and
        # clocks; hypervisor and container (gpurepro.env.conditions).
        "conditions": conditions.collect(_run),
        "redacted": False,
    }
    return redact_fingerprint(fp) if redact else fp


def redact_fingerprint(fp: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint without the hostname anywhere (the GPUs' names and UUIDs, the driver,
    every variable, the conditions), nor a home path; the conditions' DMI product name dropped."""
    host = fp["host"].get("hostname")
    out: dict[str, Any] = redact_value(fp, host)
    out["host"] = {**out["host"], "hostname": "redacted"}
    out["environment"] = {k: v for k, v in out.get("environment", {}).items()
                          if not is_secret_name(k)}
    if "conditions" in out:
        out["conditions"] = conditions.redact(out["conditions"])
    out["redacted"] = True
    return out


def redact_value(value: Any, hostname: str | None, _key: str | None = None) -> Any:
    """``redact_text`` over every string of a JSON value (keys left alone); in a device's
    ``uuid`` and ``name`` also the hostname as one of its dash-separated parts (``GPU-vm-0000``,
    ``NVIDIA H200 vm-node``: a virtual machine's host names its devices), which the whole-word
    rule keeps elsewhere (``vm-2``)."""
    if isinstance(value, str):
        text = redact_text(value, hostname)
        return redact_identifier(text, hostname) if _key in ("uuid", "name") else text
    if isinstance(value, dict):
        return {k: redact_value(v, hostname, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, hostname) for v in value]
    return value
