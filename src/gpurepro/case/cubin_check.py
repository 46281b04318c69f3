"""The stock wrong-result driver: load a cubin, launch one kernel as a case declares, check it.

    python cubin_check.py --cubin kernel.cubin --spec cases/<case>/check.py [--kernel NAME]
                          [--launches 3] [--seed 0] [--check-rel R --check-abs A]

A case declares the launch in a spec file of its folder (``TrialContext.cubin_check`` passes
it), which imports only this module's declarations and computes the reference on the CPU::

    from gpurepro.case.cubin_check import In, Launch, Out, Scalar

    KERNEL = "saxpy"                      # the kernel's name in the cubin (extern "C")

    def launch(seed: int) -> Launch:      # the inputs, the launch shape, the expected outputs
        x = [float(i) for i in range(256)]
        return Launch(grid=(2,), block=(128,),
                      args=[Scalar("float32", 2.0), In("float32", x), Out("float32", 256)],
                      expected=[[2.0 * v for v in x]])   # one list per Out or InOut, in order

A cubin whose kernels are launched alike (the kernel under test and its controls) is one spec:
it declares ``KERNELS`` (their names) in place of ``KERNEL`` and ``launch(seed, kernel)``, and
the trial names the kernel with ``--kernel``. A spec may also define ``observe(launch,
outputs)``: what the final record's observations add, from the launch and every launch's
outputs (``outputs[launch][output]``, a list per Out or InOut) once every launch is checked.

Each launch fills every output with a sentinel first, launches, synchronizes, copies the outputs
back and compares them with ``expected`` (exact, or within the case's tolerance: Case.check).
Every launch's comparison goes into the final record's ``check``, so a mismatch makes the trial
``wrong_result`` and a trial without the check is never a survival. The protocol, statuses and
exit codes are the Python driver kit's (gpurepro.case.driver): no libcuda is ``no_driver``; a
failed call is ``cuda_error`` at its call; a first load the device cannot run, ``unsupported``.
The observations name the device (its name, compute capability and driver API version) and the
bindings.
Standard library and cuda-python (``cuda.bindings.driver``, or ``cuda.cuda`` before 12.6) only;
the bindings are imported once libcuda is found, and without them the driver says so and exits
2 (the trial is the harness's error, not the bug's).
"""

from __future__ import annotations

import argparse
import array
import ctypes
import hashlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpurepro.case import driver as kit

# dtype -> (array typecode, ctypes scalar type); every one the kit's compare reads as numbers.
DTYPES: dict[str, tuple[str, Any]] = {
    "int32": ("i", ctypes.c_int32), "uint32": ("I", ctypes.c_uint32),
    "int64": ("q", ctypes.c_int64), "uint64": ("Q", ctypes.c_uint64),
    "float32": ("f", ctypes.c_float), "float64": ("d", ctypes.c_double),
}
SENTINEL = 0xDEADBEEF  # written over every output (as 32-bit words) before each launch
# A first load that fails with one of these: the device cannot run the cubin at all.
UNSUPPORTED_LOAD = kit.UNSUPPORTED_LOAD_ERRORS | {"CUDA_ERROR_INVALID_SOURCE"}
FIRST_MISMATCHES = 8  # kept in the final record's check


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
    per Out or InOut argument, in order)."""
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: Sequence[In | Out | InOut | Scalar]
    expected: Sequence[Sequence[Any]]
    shared_bytes: int = 0
    # What the case wants in the final record's observations beside the check.
    notes: dict[str, Any] = field(default_factory=dict)


def _dims(dims: tuple[int, ...], what: str) -> tuple[int, int, int]:
    if not 1 <= len(dims) <= 3 or any(int(d) < 1 for d in dims):
        raise ValueError(f"{what} {dims!r}: one to three positive sizes")
    return tuple(int(d) for d in (*dims, 1, 1)[:3])  # type: ignore[return-value]


def checked_launch(spec: Any, seed: int, kernel: str | None = None) -> tuple[str, Launch]:
    """The spec module's kernel name and launch, each part checked (a spec error is the
    case's, named on standard error, exit 2). ``kernel``: the --kernel of a spec that declares
    KERNELS."""
    kernels = getattr(spec, "KERNELS", None)
    if kernels is None:
        if kernel is not None:
            raise ValueError("--kernel: the spec declares one KERNEL, not KERNELS")
        name = getattr(spec, "KERNEL", None)
        if not isinstance(name, str) or not name:
            raise ValueError("KERNEL: the kernel's name in the cubin, a string (or KERNELS)")
        launch = spec.launch(seed)
    else:
        if (not isinstance(kernels, (tuple, list)) or not kernels
                or not all(isinstance(k, str) and k for k in kernels)):
            raise ValueError("KERNELS: the names of the cubin's kernels the spec launches, strings")
        if kernel is None or kernel not in kernels:
            raise ValueError(f"--kernel {kernel!r}: give one of the spec's KERNELS "
                             f"({', '.join(kernels)})")
        name = kernel
        launch = spec.launch(seed, kernel)
    if not isinstance(launch, Launch):
        raise ValueError("launch(seed) must return a gpurepro.case.cubin_check.Launch")
    _dims(launch.grid, "grid")
    _dims(launch.block, "block")
    outputs = [a for a in launch.args if isinstance(a, (Out, InOut))]
    if not outputs:
        raise ValueError("the launch has no Out or InOut argument: nothing to check")
    if len(launch.expected) != len(outputs):
        raise ValueError(f"expected holds {len(launch.expected)} lists for {len(outputs)} "
                         f"outputs (one per Out or InOut, in order)")
    for a in launch.args:
        if not isinstance(a, (In, Out, InOut, Scalar)):
            raise ValueError(f"{a!r}: an argument is In, Out, InOut or Scalar")
        if a.dtype not in DTYPES:
            raise ValueError(f"{a.dtype!r}: one of {', '.join(DTYPES)}")
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
    """The launch's device buffers and its kernelParams (pointers to each argument's value)."""

    def __init__(self, cu: Cuda, launch: Launch):
        self.host: list[array.array | None] = []
        self.device: list[Any] = []
        values: list[Any] = []
        for a in launch.args:
            code, scalar = DTYPES[a.dtype]
            if isinstance(a, Scalar):
                self.host.append(None)
                self.device.append(None)
                values.append(scalar(a.value))
                continue
            host = array.array(code, a.values if isinstance(a, (In, InOut)) else [0] * a.n)
            ptr = cu("cuMemAlloc", max(1, len(host) * host.itemsize))
            if isinstance(a, In):
                cu("cuMemcpyHtoD", ptr, host.buffer_info()[0], len(host) * host.itemsize)
            self.host.append(host)
            self.device.append(ptr)
            values.append(ctypes.c_uint64(int(ptr)))
        self._values = values  # kept alive as long as the pointers to them
        self._ptrs = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        self.params = ctypes.addressof(self._ptrs)


def _one_launch(cu: Cuda, func: Any, launch: Launch, bufs: _Buffers,
                args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """Sentinel, launch, synchronize, copy back: each output's comparison and values."""
    for a, host, ptr in zip(launch.args, bufs.host, bufs.device, strict=True):
        if isinstance(a, InOut) and host is not None:
            host[:] = array.array(host.typecode, a.values)
            cu("cuMemcpyHtoD", ptr, host.buffer_info()[0], len(host) * host.itemsize)
        elif isinstance(a, Out) and host is not None and len(host):
            cu("cuMemsetD32", ptr, SENTINEL, max(1, len(host) * host.itemsize // 4))
    cu("cuLaunchKernel", func, *_dims(launch.grid, "grid"), *_dims(launch.block, "block"),
       launch.shared_bytes, 0, bufs.params, 0)
    cu("cuCtxSynchronize")
    checks, got = [], []
    outputs = [(h, p) for a, h, p in zip(launch.args, bufs.host, bufs.device, strict=True)
               if isinstance(a, (Out, InOut))]
    for (host, ptr), expected in zip(outputs, launch.expected, strict=True):
        assert host is not None
        cu("cuMemcpyDtoH", host.buffer_info()[0], ptr, len(host) * host.itemsize)
        values = host.tolist()
        checks.append(kit.compare_as_declared(values, list(expected), args, FIRST_MISMATCHES))
        got.append(values)
    return checks, got


def _device(cu: Cuda, attr: Any, dev: Any) -> dict[str, Any]:
    """The device's name and compute capability, and the driver's API version."""
    major = cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    minor = cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    name = bytes(cu("cuDeviceGetName", 256, dev)).split(b"\0")[0].decode(errors="replace")
    return {"name": name, "compute_capability": f"{major}.{minor}",
            "driver_api": cu("cuDriverGetVersion")}


def run(args: argparse.Namespace, d: kit.Driver, image: bytes, kernel: str, launch: Launch,
        observe: Callable[[Launch, list[list[list[Any]]]], Mapping[str, Any]] | None = None
        ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every comparison and the observations (``observe``'s too, once every launch is
    checked); the kit holds the final status."""
    checks: list[dict[str, Any]] = []
    obs: dict[str, Any] = dict(launch.notes)
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
        obs["device"] = _device(cu, cu_module.CUdevice_attribute, dev)
        ctx = cu("cuDevicePrimaryCtxRetain", dev)
        cu("cuCtxSetCurrent", ctx)
        module = cu("cuModuleLoadData", image, unsupported=UNSUPPORTED_LOAD)
        func = cu("cuModuleGetFunction", module, kernel.encode())
        bufs = _Buffers(cu, launch)
        outputs: list[list[list[Any]]] = []
        for _ in range(args.launches):
            launch_checks, got = _one_launch(cu, func, launch, bufs, args)
            d.expose()
            checks.extend(launch_checks)
            d.counters["checked"].inc(sum(c["n"] for c in launch_checks))
            outputs.append(got)
            d.heartbeat()
        obs["launches_agree"] = all(o == outputs[0] for o in outputs)
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
    kit.add_check_arguments(ap)
    args = ap.parse_args(argv)
    if args.launches < 1:
        ap.error("--launches must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        image = args.cubin.read_bytes()
        spec = load_spec(args.spec)
        kernel, launch = checked_launch(spec, args.seed, args.kernel)
    except (OSError, ImportError, ValueError, TypeError, AttributeError) as exc:
        print(f"cubin_check: {exc}", file=sys.stderr)
        return kit.EXIT_USAGE
    d = kit.Driver("cubin_check", ("launches", "checked"), exposure="launches",
                   budget=kit.Budget(seconds=0, max_exposure=args.launches, heartbeat_ms=1000,
                                     join_timeout_s=0))
    d.start({"cubin": args.cubin.name, "cubin_sha256": hashlib.sha256(image).hexdigest(),
             "kernel": kernel, "launches": args.launches, "seed": args.seed,
             "grid": list(launch.grid), "block": list(launch.block)})
    checks, obs = run(args, d, image, kernel, launch, getattr(spec, "observe", None))
    return d.finish(obs, kit.merge_checks(checks, FIRST_MISMATCHES) if checks else None)


if __name__ == "__main__":
    # Run as a file, this is __main__; a spec's In, Out and Launch are gpurepro.case.cubin_check's,
    # so the checks run in that module, which is imported (once) under its own name.
    from gpurepro.case import cubin_check as _declared

    status = _declared.main()
    sys.stdout.flush()
    os._exit(status)  # no interpreter teardown after the final record (gpurepro.case.driver)
