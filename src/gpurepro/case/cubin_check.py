"""The stock cubin driver: load a cubin, launch one kernel as a case declares, check its outputs
and, for a timed arm, time its launches.

    python cubin_check.py --cubin kernel.cubin --spec cases/<case>/check.py [--kernel NAME]
                          [--launches 3] [--seed 0] [--check-rel R --check-abs A]
                          [--reference-cubin other.cubin [--reference-kernel NAME]]
                          [--repeats 20 --loops 20 --warmups 5]

A case declares the launch in a spec file of its folder (``TrialContext.cubin_check`` passes
it), which imports only this module's declarations and computes the reference on the CPU::

    from gpurepro.case.cubin_check import In, Launch, Out, Scalar

    KERNEL = "saxpy"                      # the kernel's name in the cubin (extern "C")

    def launch(seed: int) -> Launch:      # the inputs, the launch shape, the expected outputs
        x = [float(i) for i in range(256)]
        return Launch(grid=(2,), block=(128,),
                      args=[Scalar("float32", 2.0), In("float32", x), Out("float32", 256)],
                      expected=[[2.0 * v for v in x]])   # one list per Out or InOut, in order

Element and scalar types (``DTYPES``): int8, uint8, int16, uint16, int32, uint32, int64,
uint64, float16, bfloat16, float32, float64, or their CUDA spellings (``__half``,
``__nv_bfloat16``, ``unsigned short``, ... : ``ALIASES``). Buffers hold the values packed
little-endian at the type's own size, so a ``short *`` argument is ``In("int16", ...)``; an
expected float is rounded to its output's type before the comparison (what the kernel can
store: a float16 output is compared with the float16 nearest the reference).

A cubin whose kernels are launched alike (the kernel under test and its controls) is one spec:
it declares ``KERNELS`` (their names) in place of ``KERNEL`` and ``launch(seed, kernel)``, and
the trial names the kernel with ``--kernel``. A ``launch`` with a parameter named ``device``
is given the device (``{"name", "compute_capability", "sms"}``, sms the multiprocessor count):
a grid of one block per SM. A spec may also define ``observe(launch, outputs)``: what the final
record's observations add, from the launch and every launch's outputs (``outputs[launch]
[output]``, a list per Out or InOut) once every launch is checked.

Each checked launch fills every output with a sentinel first, launches, synchronizes, copies
the outputs back and compares them with ``expected`` (exact, or within the case's tolerance:
Case.check). With ``--reference-cubin`` (another arm's build, ``TrialContext.cubin_check(...,
reference=...)``) the spec's ``expected`` is None: before each checked launch the reference
cubin's kernel runs on the same inputs, and its outputs are the expected ones. Every launch's
comparison goes into the final record's ``check``, so a mismatch makes the trial
``wrong_result`` and a trial without the check is never a survival.

A timed arm (``--repeats R``, ``TrialContext.cubin_check(..., timing=Timing(...))``): after the
checked launches, ``--warmups`` repetitions and then ``R`` repetitions of ``--loops`` launches,
each between two CUDA events (cuEventRecord, cuEventElapsedTime); a value is the mean time of
one launch over the loops, in seconds (pyperf's convention), and the warm-up ones are kept
apart. Then one more checked launch: a kernel that turns wrong while it is timed is a
wrong_result, never a time. The observations hold ``timing`` (``{"unit": "s", "values",
"warmups", "loops", "warmup_values"}``, what gpurepro.analyze.timing reads) and ``conditions``,
the GPU's clocks, temperature and power read (never set) before and after the repetitions,
through pynvml where it imports, else cuDeviceGetAttribute's nominal clock rates.

The protocol, statuses and exit codes are the Python driver kit's (gpurepro.case.driver): no
libcuda is ``no_driver``; a failed call is ``cuda_error`` at its call; a first load the device
cannot run, ``unsupported``. The observations name the device (its name, compute capability
and driver API version), the bindings and ``output_sha256`` (the last checked launch's output
bytes: arms whose digests agree computed the same bits).
Standard library and cuda-python (``cuda.bindings.driver``, or ``cuda.cuda`` before 12.6) only;
the bindings are imported once libcuda is found, and without them the driver says so and exits
2 (the trial is the harness's error, not the bug's).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import hashlib
import importlib.metadata
import importlib.util
import inspect
import math
import os
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpurepro.case import driver as kit

# What other modules use; the rest is this module's own.
__all__ = [
    "checked_launch", "conditions", "Cuda", "CudaFailed", "dtype", "DTYPES", "FIRST_MISMATCHES",
    "import_bindings", "In", "InOut", "Launch", "libcuda_missing", "load_spec", "main", "Out",
    "parse_args", "run", "Scalar"
]

# Written over every output before each launch: as 32-bit words, 16-bit ones (0xBEEF) for a
# 2-byte type, bytes (0xEF) for a 1-byte one.
SENTINEL = 0xDEADBEEF
# A first load that fails with one of these: the device cannot run the cubin at all.
UNSUPPORTED_LOAD = kit.UNSUPPORTED_LOAD_ERRORS | {"CUDA_ERROR_INVALID_SOURCE"}
FIRST_MISMATCHES = 8  # kept in the final record's check


# ----------------------------------------------------------------------------- dtypes


@dataclass(frozen=True)
class Dtype:
    """One CUDA scalar type as the driver moves it: ``size`` bytes, little-endian, encoded with
    struct's ``code`` (``bf16``: bfloat16, the upper half of a float32, rounded to nearest
    even); ``float``: compared as floating point (an expected value is rounded to the type
    first, what the kernel can store)."""
    name: str
    size: int
    code: str
    float: bool = False

    def encode(self, values: Sequence[Any]) -> bytes:
        if self.code == "bf16":
            return b"".join(_bf16_bits(float(v)).to_bytes(2, "little") for v in values)
        return struct.pack(f"<{len(values)}{self.code}", *values)

    def decode(self, raw: bytes) -> list[Any]:
        if self.code == "bf16":
            return [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
        return list(struct.unpack(f"<{len(raw) // self.size}{self.code}", raw))

    def stored(self, values: Sequence[Any]) -> list[Any]:
        """``values`` as the type stores them: floats rounded to it, anything else as given
        (a missing element, None, stays None)."""
        if not self.float:
            return list(values)
        return [v if v is None else self.decode(self.encode([v]))[0] for v in values]


def _bf16_bits(x: float) -> int:
    """The bfloat16 nearest ``x`` (ties to even), as its 16 bits; NaN as the quiet NaN."""
    if math.isnan(x):
        return 0x7FC0
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return int(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)


# Every CUDA scalar type a kernel's argument or buffer element may be, by the names a spec
# uses (numpy's, and the CUDA spellings in ALIASES).
DTYPES: dict[str, Dtype] = {d.name: d for d in (
    Dtype("int8", 1, "b"), Dtype("uint8", 1, "B"), Dtype("int16", 2, "h"),
    Dtype("uint16", 2, "H"), Dtype("int32", 4, "i"), Dtype("uint32", 4, "I"),
    Dtype("int64", 8, "q"), Dtype("uint64", 8, "Q"), Dtype("float16", 2, "e", True),
    Dtype("bfloat16", 2, "bf16", True), Dtype("float32", 4, "f", True),
    Dtype("float64", 8, "d", True))}
ALIASES = {"char": "int8", "signed char": "int8", "unsigned char": "uint8", "bool": "uint8",
           "short": "int16", "unsigned short": "uint16", "int": "int32", "unsigned": "uint32",
           "unsigned int": "uint32", "long long": "int64", "unsigned long long": "uint64",
           "half": "float16", "__half": "float16", "__nv_bfloat16": "bfloat16",
           "nv_bfloat16": "bfloat16", "float": "float32", "double": "float64"}


def dtype(name: str) -> Dtype:
    """The Dtype a spec names (DTYPES, or a CUDA spelling of ALIASES); ValueError otherwise."""
    found = DTYPES.get(ALIASES.get(name, name)) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"{name!r}: one of {', '.join(DTYPES)} (or a CUDA spelling: "
                         f"{', '.join(ALIASES)})")
    return found


# ----------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class In:
    """An input buffer: copied to the device once, before the first launch."""
    dtype: str
    values: Sequence[Any]


@dataclass(frozen=True)
class Out:
    """An output buffer of ``n`` elements, checked after every launch."""
    dtype: str
    n: int


@dataclass(frozen=True)
class InOut:
    """A buffer copied in before every launch and checked after it."""
    dtype: str
    values: Sequence[Any]


@dataclass(frozen=True)
class Scalar:
    """A by-value kernel argument."""
    dtype: str
    value: Any


@dataclass(frozen=True)
class Launch:
    """One launch's shape, arguments in the kernel's order, and the expected outputs (one list
    per Out or InOut argument, in order; None where the trial compares with another cubin's
    outputs, --reference-cubin)."""
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: Sequence[In | Out | InOut | Scalar]
    expected: Sequence[Sequence[Any]] | None = None
    shared_bytes: int = 0
    # What the case wants in the final record's observations beside the check.
    notes: dict[str, Any] = field(default_factory=dict)


def _dims(dims: tuple[int, ...], what: str) -> tuple[int, int, int]:
    if not 1 <= len(dims) <= 3 or any(int(d) < 1 for d in dims):
        raise ValueError(f"{what} {dims!r}: one to three positive sizes")
    return tuple(int(d) for d in (*dims, 1, 1)[:3])  # type: ignore[return-value]


def kernel_name(spec: Any, kernel: str | None = None) -> str:
    """The kernel the trial launches: the spec's KERNEL, or the --kernel among its KERNELS."""
    kernels = getattr(spec, "KERNELS", None)
    if kernels is None:
        if kernel is not None:
            raise ValueError("--kernel: the spec declares one KERNEL, not KERNELS")
        name = getattr(spec, "KERNEL", None)
        if not isinstance(name, str) or not name:
            raise ValueError("KERNEL: the kernel's name in the cubin, a string (or KERNELS)")
        return name
    if (not isinstance(kernels, (tuple, list)) or not kernels
            or not all(isinstance(k, str) and k for k in kernels)):
        raise ValueError("KERNELS: the names of the cubin's kernels the spec launches, strings")
    if kernel is None or kernel not in kernels:
        raise ValueError(f"--kernel {kernel!r}: give one of the spec's KERNELS "
                         f"({', '.join(kernels)})")
    return kernel


def wants_device(spec: Any) -> bool:
    """Whether the spec's launch takes the device (a parameter named ``device``)."""
    try:
        return "device" in inspect.signature(spec.launch).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def checked_launch(spec: Any, seed: int, kernel: str | None = None,
                   device: Mapping[str, Any] | None = None,
                   reference: bool = False) -> tuple[str, Launch]:
    """The spec module's kernel name and launch, each part checked (a spec error is the
    case's, named on standard error, exit 2). ``kernel``: the --kernel of a spec that declares
    KERNELS; ``device``: what a launch(..., device) is given; ``reference``: the trial compares
    with a reference cubin's outputs, so ``expected`` must be None."""
    name = kernel_name(spec, kernel)
    extra = {"device": dict(device or {})} if wants_device(spec) else {}
    launch = (spec.launch(seed, **extra) if getattr(spec, "KERNELS", None) is None
              else spec.launch(seed, kernel, **extra))
    if not isinstance(launch, Launch):
        raise ValueError("launch(seed) must return a gpurepro.case.cubin_check.Launch")
    _dims(launch.grid, "grid")
    _dims(launch.block, "block")
    outputs = [a for a in launch.args if isinstance(a, (Out, InOut))]
    if not outputs:
        raise ValueError("the launch has no Out or InOut argument: nothing to check")
    if reference:
        if launch.expected is not None:
            raise ValueError("expected: the trial compares with --reference-cubin's outputs, so "
                             "the spec's launch gives expected=None")
    elif launch.expected is None:
        raise ValueError("expected is None: give one list per Out or InOut, or a reference "
                         "cubin (TrialContext.cubin_check(..., reference=...))")
    elif len(launch.expected) != len(outputs):
        raise ValueError(f"expected holds {len(launch.expected)} lists for {len(outputs)} "
                         f"outputs (one per Out or InOut, in order)")
    for a in launch.args:
        if not isinstance(a, (In, Out, InOut, Scalar)):
            raise ValueError(f"{a!r}: an argument is In, Out, InOut or Scalar")
        dt = dtype(a.dtype)
        try:
            dt.encode([a.value] if isinstance(a, Scalar) else
                      a.values if isinstance(a, (In, InOut)) else [])
        except (struct.error, OverflowError, TypeError) as exc:
            raise ValueError(f"a {a.dtype} argument holds a value the type cannot: {exc}") from None
    return name, launch


def load_spec(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"gpurepro_check_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- CUDA


def libcuda_missing() -> str | None:
    """Why libcuda.so.1 cannot be loaded, or None when it can."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return str(exc)
    return None


def import_bindings() -> tuple[Any, str, str | None]:
    """(the driver module, its layout, the installed distribution's version)."""
    try:
        from cuda.bindings import driver as cu  # cuda-bindings 12.6 and later
        layout = "cuda.bindings.driver"
    except ImportError:
        from cuda import cuda as cu  # cuda-python before 12.6
        layout = "cuda.cuda"
    version = None
    for dist in ("cuda-bindings", "cuda-python"):
        try:
            version = importlib.metadata.version(dist)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    return cu, layout, version


class CudaFailed(Exception):
    """A call failed; the kit has decided the final status (cuda_error or unsupported)."""


class Cuda:
    """cuda-python's calls through the kit: each returns its results without the status; a
    failed one decides the final record (``unsupported`` where its error is in
    ``unsupported``), then raises CudaFailed."""

    def __init__(self, cu: Any, d: kit.Driver):
        self.cu, self.d = cu, d

    def __call__(self, name: str, *args: Any,
                 unsupported: frozenset[str] | set[str] = frozenset()) -> Any:
        result = getattr(self.cu, name)(*args)
        err, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
        if self.d.failed(err, name, unsupported=unsupported):
            raise CudaFailed(name)
        return rest[0] if len(rest) == 1 else rest


class _Buffers:
    """The launch's device buffers, their host copies (the values packed at their type's
    size) and its kernelParams (pointers to each argument's value)."""

    def __init__(self, cu: Cuda, launch: Launch):
        self.host: list[Any] = []
        self.device: list[Any] = []
        values: list[Any] = []
        for a in launch.args:
            dt = dtype(a.dtype)
            if isinstance(a, Scalar):
                raw = dt.encode([a.value])
                self.host.append(None)
                self.device.append(None)
                values.append((ctypes.c_uint8 * dt.size).from_buffer_copy(raw))
                continue
            data = dt.encode(a.values) if isinstance(a, (In, InOut)) else bytes(dt.size * a.n)
            host = ctypes.create_string_buffer(data, max(1, len(data)))
            ptr = cu("cuMemAlloc", max(1, len(data)))
            if isinstance(a, In) and data:
                cu("cuMemcpyHtoD", ptr, ctypes.addressof(host), len(data))
            self.host.append((host, len(data)))
            self.device.append(ptr)
            values.append(ctypes.c_uint64(int(ptr)))
        self._values = values  # kept alive as long as the pointers to them
        self._ptrs = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        self.params = ctypes.addressof(self._ptrs)

    def outputs(self, launch: Launch) -> list[tuple[Dtype, Any, int, Any]]:
        """(type, host buffer, bytes, device pointer) of each Out and InOut, in order."""
        return [(dtype(a.dtype), h[0], h[1], p)
                for a, h, p in zip(launch.args, self.host, self.device, strict=True)
                if isinstance(a, (Out, InOut))]


def _sentinel(cu: Cuda, ptr: Any, dt: Dtype, nbytes: int) -> None:
    if dt.size == 1:
        cu("cuMemsetD8", ptr, SENTINEL & 0xFF, nbytes)
    elif dt.size == 2:
        cu("cuMemsetD16", ptr, SENTINEL & 0xFFFF, nbytes // 2)
    else:
        cu("cuMemsetD32", ptr, SENTINEL, max(1, nbytes // 4))


def _prepare(cu: Cuda, launch: Launch, bufs: _Buffers) -> None:
    """Before a checked launch: every InOut copied in again, every Out set to the sentinel."""
    for a, host, ptr in zip(launch.args, bufs.host, bufs.device, strict=True):
        if isinstance(a, InOut) and host is not None and host[1]:
            ctypes.memmove(host[0], dtype(a.dtype).encode(a.values), host[1])
            cu("cuMemcpyHtoD", ptr, ctypes.addressof(host[0]), host[1])
        elif isinstance(a, Out) and host is not None and host[1]:
            _sentinel(cu, ptr, dtype(a.dtype), host[1])


def _launch(cu: Cuda, func: Any, launch: Launch, bufs: _Buffers) -> None:
    cu("cuLaunchKernel", func, *_dims(launch.grid, "grid"), *_dims(launch.block, "block"),
       launch.shared_bytes, 0, bufs.params, 0)


def _read_back(cu: Cuda, launch: Launch, bufs: _Buffers) -> tuple[list[list[Any]], bytes]:
    """Every output's values, and all their bytes (for the digest)."""
    got, raw = [], b""
    for dt, host, nbytes, ptr in bufs.outputs(launch):
        if nbytes:
            cu("cuMemcpyDtoH", ctypes.addressof(host), ptr, nbytes)
        data = host.raw[:nbytes]
        got.append(dt.decode(data))
        raw += data
    return got, raw


def _one_launch(cu: Cuda, func: Any, launch: Launch, bufs: _Buffers, args: argparse.Namespace,
                expected: Sequence[Sequence[Any]]
                ) -> tuple[list[dict[str, Any]], list[list[Any]], bytes]:
    """Sentinel, launch, synchronize, copy back: each output's comparison, values and bytes."""
    _prepare(cu, launch, bufs)
    _launch(cu, func, launch, bufs)
    cu("cuCtxSynchronize")
    got, raw = _read_back(cu, launch, bufs)
    checks = [kit.compare_as_declared(values, dt.stored(want), args, FIRST_MISMATCHES)
              for (dt, *_), values, want in zip(bufs.outputs(launch), got, expected, strict=True)]
    return checks, got, raw


def _reference_outputs(cu: Cuda, func: Any, launch: Launch, bufs: _Buffers) -> list[list[Any]]:
    """The reference cubin's kernel run on the same inputs: its outputs, the expected ones."""
    _prepare(cu, launch, bufs)
    _launch(cu, func, launch, bufs)
    cu("cuCtxSynchronize")
    return _read_back(cu, launch, bufs)[0]


def _device(cu: Cuda, attr: Any, dev: Any, sms: bool) -> dict[str, Any]:
    """The device's name and compute capability, and the driver's API version (and, for a
    spec or a timed arm that needs it, its multiprocessor count)."""
    major = cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    minor = cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    name = bytes(cu("cuDeviceGetName", 256, dev)).split(b"\0")[0].decode(errors="replace")
    out = {"name": name, "compute_capability": f"{major}.{minor}",
           "driver_api": cu("cuDriverGetVersion")}
    if sms:
        out["sms"] = cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    return out


def conditions(cu_module: Any, dev: Any) -> dict[str, Any]:
    """The GPU's clocks, temperature and power now: NVML where pynvml imports (each reading
    that fails is left out), else the driver's nominal clock rates (not the current ones).
    Read, never set; a reading that fails is no trial's failure."""
    attr = cu_module.CUdevice_attribute

    def attribute(name: str) -> Any:
        result = cu_module.cuDeviceGetAttribute(getattr(attr, name), dev)
        return result[1] if kit.result_code(result) == 0 else None

    try:
        import pynvml

        err, bus = cu_module.cuDeviceGetPCIBusId(32, dev)
        if kit.result_code(err) != 0:
            raise RuntimeError("cuDeviceGetPCIBusId failed")
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByPciBusId(bytes(bus).split(b"\0")[0].decode())
    except Exception as exc:  # pynvml missing, or NVML refusing: the driver's attributes
        return {"source": "cuDeviceGetAttribute", "why": f"{type(exc).__name__}: {exc}",
                "clock_rate_khz": attribute("CU_DEVICE_ATTRIBUTE_CLOCK_RATE"),
                "memory_clock_rate_khz": attribute("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE")}
    out: dict[str, Any] = {"source": "nvml"}
    reads: dict[str, Callable[[], Any]] = {"sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
             "memory_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
             "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
             "power_w": lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
             "pstate": lambda: pynvml.nvmlDeviceGetPerformanceState(h),
             "clocks_event_reasons": lambda: pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)}
    for key, read in reads.items():
        try:
            out[key] = read()
        except Exception as exc:  # one reading an old driver lacks leaves the others
            out.setdefault("unread", {})[key] = type(exc).__name__
    try:
        pynvml.nvmlShutdown()
    except Exception:  # noqa: S110 (shutting NVML down is no measurement)
        pass
    return out


def _timed(cu: Cuda, func: Any, launch: Launch, bufs: _Buffers, d: kit.Driver,
           args: argparse.Namespace) -> dict[str, Any]:
    """``--warmups`` then ``--repeats`` repetitions of ``--loops`` launches between two
    events: each the mean seconds of one launch."""
    start, end = cu("cuEventCreate", 0), cu("cuEventCreate", 0)

    def repetition() -> float:
        cu("cuEventRecord", start, 0)
        for _ in range(args.loops):
            _launch(cu, func, launch, bufs)
            d.expose()
        cu("cuEventRecord", end, 0)
        cu("cuEventSynchronize", end)
        d.heartbeat()
        return float(cu("cuEventElapsedTime", start, end) / 1000.0 / args.loops)

    warm = [repetition() for _ in range(args.warmups)]
    values = [repetition() for _ in range(args.repeats)]
    for event in (start, end):
        cu("cuEventDestroy", event)
    return {"unit": "s", "values": values, "warmups": args.warmups, "loops": args.loops,
            "warmup_values": warm}


def run(args: argparse.Namespace, d: kit.Driver, image: bytes, kernel: str,
        launch: Launch | Callable[[Mapping[str, Any]], Launch],
        observe: Callable[[Launch, list[list[list[Any]]]], Mapping[str, Any]] | None = None,
        reference: bytes | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every comparison and the observations (``observe``'s too, once every launch is
    checked); the kit holds the final status. ``launch``: the spec's launch, or a function of
    the device that makes it; ``reference``: a reference cubin whose outputs are expected."""
    checks: list[dict[str, Any]] = []
    obs: dict[str, Any] = dict(launch.notes) if isinstance(launch, Launch) else {}
    missing = libcuda_missing()
    if missing is not None:
        d.stop_with("no_driver", reason=missing)
        return checks, obs
    try:
        cu_module, layout, version = import_bindings()
    except ImportError as exc:
        print(f"cubin_check: cuda-python is not importable ({exc}); pin cuda-bindings in the "
              f"case's Runtime for {sys.executable}", file=sys.stderr)
        raise SystemExit(kit.EXIT_USAGE) from exc
    obs["bindings"] = {"layout": layout, "version": version}
    cu = Cuda(cu_module, d)
    try:
        try:
            cu("cuInit", 0, unsupported={"CUDA_ERROR_NO_DEVICE"})
        except RuntimeError as exc:  # the bindings could not open libcuda after all
            d.stop_with("no_driver", reason=str(exc))
            return checks, obs
        dev = cu("cuDeviceGet", 0)
        obs["device"] = _device(cu, cu_module.CUdevice_attribute, dev,
                                sms=not isinstance(launch, Launch) or args.repeats > 0)
        if not isinstance(launch, Launch):
            launch = launch(obs["device"])
            obs.update(launch.notes)
        ctx = cu("cuDevicePrimaryCtxRetain", dev)
        cu("cuCtxSetCurrent", ctx)
        module = cu("cuModuleLoadData", image, unsupported=UNSUPPORTED_LOAD)
        func = cu("cuModuleGetFunction", module, kernel.encode())
        ref_func = None
        if reference is not None:
            ref_module = cu("cuModuleLoadData", reference, unsupported=UNSUPPORTED_LOAD)
            ref_func = cu("cuModuleGetFunction", ref_module,
                          (args.reference_kernel or kernel).encode())
        bufs = _Buffers(cu, launch)
        outputs: list[list[list[Any]]] = []
        raw = b""

        def checked() -> None:
            nonlocal raw
            expected = (launch.expected if ref_func is None
                        else _reference_outputs(cu, ref_func, launch, bufs))
            assert expected is not None
            launch_checks, got, raw = _one_launch(cu, func, launch, bufs, args, expected)
            d.expose()
            checks.extend(launch_checks)
            d.counters["checked"].inc(sum(c["n"] for c in launch_checks))
            outputs.append(got)
            d.heartbeat()

        for _ in range(args.launches):
            checked()
        if args.repeats:
            obs["conditions"] = {"before": conditions(cu_module, dev)}
            obs["timing"] = _timed(cu, func, launch, bufs, d, args)
            obs["conditions"]["after"] = conditions(cu_module, dev)
            checked()  # the kernel as it computes after its timed launches
        obs["launches_agree"] = all(o == outputs[0] for o in outputs)
        obs["output_sha256"] = hashlib.sha256(raw).hexdigest()
        if observe is not None:
            obs.update(observe(launch, outputs))
    except CudaFailed:
        pass  # the kit has the status, the error and the call
    return checks, obs


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cubin", type=Path, required=True)
    ap.add_argument("--spec", type=Path, required=True,
                    help="the case's spec file: KERNEL and launch(seed) (this module's docstring)")
    ap.add_argument("--kernel", help="which of the spec's KERNELS to launch")
    ap.add_argument("--launches", type=int, default=3, help="launches, each checked (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="passed to the spec's launch(seed)")
    ap.add_argument("--reference-cubin", type=Path,
                    help="a cubin whose kernel's outputs on the same inputs are the expected ones")
    ap.add_argument("--reference-kernel", help="its kernel's name (default: the same as --kernel's)")
    ap.add_argument("--repeats", type=int, default=0,
                    help="timed repetitions of --loops launches (default 0: not timed)")
    ap.add_argument("--loops", type=int, default=20, help="launches per timed repetition")
    ap.add_argument("--warmups", type=int, default=5, help="repetitions before the timed ones")
    kit.add_check_arguments(ap)
    args = ap.parse_args(argv)
    if args.launches < 1:
        ap.error("--launches must be at least 1")
    if args.repeats < 0 or args.loops < 1 or args.warmups < 0:
        ap.error("--repeats and --warmups at least 0, --loops at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        image = args.cubin.read_bytes()
        reference = args.reference_cubin.read_bytes() if args.reference_cubin else None
        spec = load_spec(args.spec)
        if wants_device(spec):  # checked once the device is known (in run)
            kernel = kernel_name(spec, args.kernel)
            launch: Launch | Callable[[Mapping[str, Any]], Launch] = functools.partial(
                _device_launch, spec, args, reference=reference is not None)
        else:
            kernel, launch = checked_launch(spec, args.seed, args.kernel,
                                            reference=reference is not None)
    except (OSError, ImportError, ValueError, TypeError, AttributeError) as exc:
        print(f"cubin_check: {exc}", file=sys.stderr)
        return kit.EXIT_USAGE
    d = kit.Driver("cubin_check", ("launches", "checked"), exposure="launches",
                   budget=kit.Budget(seconds=0, max_exposure=0 if args.repeats else args.launches,
                                     heartbeat_ms=1000, join_timeout_s=0))
    config: dict[str, Any] = {"cubin": args.cubin.name,
                              "cubin_sha256": hashlib.sha256(image).hexdigest(),
                              "kernel": kernel, "launches": args.launches, "seed": args.seed}
    if isinstance(launch, Launch):
        config.update(grid=list(launch.grid), block=list(launch.block))
    if reference is not None:
        config["reference"] = {"cubin": args.reference_cubin.name,
                               "cubin_sha256": hashlib.sha256(reference).hexdigest(),
                               "kernel": args.reference_kernel or kernel}
    if args.repeats:
        config["timing"] = {"warmups": args.warmups, "repeats": args.repeats, "loops": args.loops}
    d.start(config)
    checks, obs = run(args, d, image, kernel, launch, getattr(spec, "observe", None), reference)
    return d.finish(obs, kit.merge_checks(checks, FIRST_MISMATCHES) if checks else None)


def _device_launch(spec: Any, args: argparse.Namespace, device: Mapping[str, Any], *,
                   reference: bool) -> Launch:
    """A launch(seed, ..., device): checked as any other; a spec error exits 2 as before the
    start (the start event already written names no grid)."""
    try:
        return checked_launch(spec, args.seed, args.kernel, device, reference)[1]
    except (ValueError, TypeError, AttributeError) as exc:
        print(f"cubin_check: {exc}", file=sys.stderr)
        sys.stdout.flush()
        os._exit(kit.EXIT_USAGE)


if __name__ == "__main__":
    # Run as a file, this is __main__; a spec's In, Out and Launch are gpurepro.case.cubin_check's,
    # so the checks run in that module, which is imported (once) under its own name.
    from gpurepro.case import cubin_check as _declared

    status = _declared.main()
    sys.stdout.flush()
    os._exit(status)  # no interpreter teardown after the final record (gpurepro.case.driver)
