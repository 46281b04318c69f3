"""Trial driver of ptxas_abs_clamp: load a cubin, launch one of its kernels, check every element.

    python driver.py --cubin kernel.cubin [--kernel abs_clamp] [--launches 3] [--random 4096]
                     [--seed 24438] [--block 128]

The input is m = -3..2 (the report's six indices) followed by ``--random`` values drawn from a
seeded generator, half of them negative: for abs_clamp and clamp_only, half in [-8, 8] and half
over the whole int32 range (INT_MIN left out: abs of it is undefined in C); for abs_only, whose
index is not clamped, in [-5, 5]. Each launch writes a sentinel over the output first, launches,
synchronizes, copies the output back and compares it with the reference computed here (A[k] = k,
so each element is 3 * the index the kernel should have used). The comparison of every launch
goes into the final record's ``check``; ``observations`` adds the report's six
values, how the mismatches split by the sign of m, and whether launches disagreed.

The protocol is the harness's Python driver kit's (gpurepro.case.driver, native/README.md):
start, heartbeats, a final record with ``check`` (the kit's ``compare`` per launch, merged)
and the exit status of its status. No libcuda: a ``no_driver`` final record, exit status 3.
cuda-python's bindings, new layout (``cuda.bindings.driver``) or old (``cuda.cuda``), are
imported only once libcuda is found; without them the driver says so on standard error and
exits 2 without a final record (the trial is the harness's error, not the bug's). A CUDA error
is named by the bindings' CUresult and ends the trial as ``cuda_error`` at its call; a first
load the device cannot run is ``unsupported``. Standard library, gpurepro and cuda-python only.
"""

from __future__ import annotations

import argparse
import array
import ctypes
import hashlib
import importlib.metadata
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpurepro.case import driver as kit

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
TABLE = list(range(18))  # A[k] = k: the gather table, 6 rows of 3
SENTINEL = 0xDEADBEEF  # written over the output before each launch (-559038737 as int32)
REPORT_M = [-3, -2, -1, 0, 1, 2]
DEFAULT_SEED = 24438  # jax-ml/jax PR 24438
# A first load that fails with one of these means the device cannot run the cubin at all.
UNSUPPORTED_LOAD = kit.UNSUPPORTED_LOAD_ERRORS | {"CUDA_ERROR_INVALID_SOURCE"}
FIRST_MISMATCHES = 8  # kept in the final record's check


def abs32(x: int) -> int:
    """PTX abs.s32: |x|, with abs(INT_MIN) = INT_MIN (two's complement)."""
    return x if x >= 0 or x == INT_MIN else -x


def clamp(x: int, lo: int, hi: int) -> int:
    return max(lo, min(x, hi))


@dataclass(frozen=True)
class Kernel:
    reference: Callable[[int], int]
    wide: bool  # inputs over the whole int32 range (the index is clamped) or within [-5, 5]


KERNELS = {
    "abs_clamp": Kernel(lambda m: TABLE[3 * clamp(abs32(m), 0, 5)], wide=True),
    "abs_only": Kernel(lambda m: TABLE[3 * abs32(m)], wide=False),
    "clamp_only": Kernel(lambda m: TABLE[3 * clamp(m, 0, 5)], wide=True),
}


def inputs(kernel: str, n_random: int, seed: int) -> list[int]:
    """REPORT_M, then ``n_random`` seeded values (half of them negative, on average)."""
    rng = random.Random(seed)
    if not KERNELS[kernel].wide:
        return REPORT_M + [rng.randint(-5, 5) for _ in range(n_random)]
    small = n_random // 2
    return (REPORT_M + [rng.randint(-8, 8) for _ in range(small)]
            + [rng.randint(-INT_MAX, INT_MAX) for _ in range(n_random - small)])


def reference(kernel: str, m: list[int]) -> list[int]:
    ref = KERNELS[kernel].reference
    return [ref(x) for x in m]


def int32_array(values: list[int]) -> array.array:
    out = array.array("i", values)
    if out.itemsize != 4:
        raise RuntimeError(f"C int is {out.itemsize} bytes here; the kernel's int is 4")
    return out


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

    def __init__(self, call: str):
        super().__init__(call)
        self.call = call


class Cuda:
    """cuda-python's calls through the kit: each returns its results without the status; a
    failed one is counted and decides the final record (``unsupported`` where its error is in
    ``unsupported``), then raises CudaFailed."""

    def __init__(self, cu: Any, d: kit.Driver):
        self.cu, self.d = cu, d

    def __call__(self, name: str, *args: Any, unsupported: frozenset[str] | set[str] = frozenset()) -> Any:
        result = getattr(self.cu, name)(*args)
        err, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
        if self.d.failed(err, name, unsupported=unsupported):
            raise CudaFailed(name)
        return rest[0] if len(rest) == 1 else rest


def launch_params(*values: ctypes._SimpleCData) -> tuple[Any, int]:
    """kernelParams as cuLaunchKernel takes them: an array of pointers to each value. The
    array is returned too, so it lives as long as the caller keeps it."""
    ptrs = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    return ptrs, ctypes.addressof(ptrs)


def run(args: argparse.Namespace, d: kit.Driver, image: bytes) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every launch's check and the observations; the kit holds the final status."""
    checks: list[dict[str, Any]] = []
    obs: dict[str, Any] = {}
    missing = libcuda_missing()
    if missing is not None:
        d.stop_with("no_driver", reason=missing)
        return checks, obs
    try:
        cu_module, layout, version = import_bindings()
    except ImportError as exc:
        print(f"driver.py: cuda-python is not importable ({exc}); install cuda-bindings for "
              f"{sys.executable}", file=sys.stderr)
        raise SystemExit(kit.EXIT_USAGE) from exc
    obs["bindings"] = {"layout": layout, "version": version}
    cu = Cuda(cu_module, d)
    try:
        try:
            cu("cuInit", 0, unsupported={"CUDA_ERROR_NO_DEVICE"})
        except RuntimeError as exc:  # the bindings could not open libcuda after all
            d.stop_with("no_driver", reason=str(exc))
            return checks, obs
        _launch_and_check(cu, cu_module, args, d, image, checks, obs)
    except CudaFailed:
        pass  # the kit has the status, the error and the call
    return checks, obs


def _launch_and_check(cu: Cuda, cu_module: Any, args: argparse.Namespace, d: kit.Driver,
                      image: bytes, checks: list[dict[str, Any]], obs: dict[str, Any]) -> None:
    attr = cu_module.CUdevice_attribute
    dev = cu("cuDeviceGet", 0)
    major = cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    minor = cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    name = cu("cuDeviceGetName", 256, dev)
    obs["device"] = {"name": bytes(name).split(b"\0")[0].decode(errors="replace"),
                     "compute_capability": f"{major}.{minor}",
                     "driver_api": cu("cuDriverGetVersion")}
    ctx = cu("cuDevicePrimaryCtxRetain", dev)
    cu("cuCtxSetCurrent", ctx)
    module = cu("cuModuleLoadData", image, unsupported=UNSUPPORTED_LOAD)
    func = cu("cuModuleGetFunction", module, args.kernel.encode())

    m = inputs(args.kernel, args.random, args.seed)
    expected = reference(args.kernel, m)
    n = len(m)
    host_m, host_a, host_out = int32_array(m), int32_array(TABLE), int32_array([0] * n)
    d_m = cu("cuMemAlloc", 4 * n)
    d_a = cu("cuMemAlloc", 4 * len(TABLE))
    d_out = cu("cuMemAlloc", 4 * n)
    cu("cuMemcpyHtoD", d_m, host_m.buffer_info()[0], 4 * n)
    cu("cuMemcpyHtoD", d_a, host_a.buffer_info()[0], 4 * len(TABLE))
    values = (ctypes.c_uint64(int(d_m)), ctypes.c_uint64(int(d_a)), ctypes.c_uint64(int(d_out)),
              ctypes.c_int32(n))
    _keep, params = launch_params(*values)
    grid = (n + args.block - 1) // args.block

    sign = {"negative_m": 0, "nonnegative_m": 0}
    outputs: list[list[int]] = []
    for _ in range(args.launches):
        cu("cuMemsetD32", d_out, SENTINEL, n)
        cu("cuLaunchKernel", func, grid, 1, 1, args.block, 1, 1, 0, 0, params, 0)
        cu("cuCtxSynchronize")
        d.expose()
        cu("cuMemcpyDtoH", host_out.buffer_info()[0], d_out, 4 * n)
        got = host_out.tolist()
        check = kit.compare(got, expected, first=FIRST_MISMATCHES)
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            if g != e:
                sign["negative_m" if m[i] < 0 else "nonnegative_m"] += 1
        checks.append(check)
        d.counters["checked"].inc(n)
        outputs.append(got)
        d.heartbeat()

    obs["report_m"] = {"m": REPORT_M, "got": outputs[0][: len(REPORT_M)] if outputs else None,
                       "expected": expected[: len(REPORT_M)]}
    obs["mismatches_by_sign"] = sign
    obs["launches_agree"] = all(o == outputs[0] for o in outputs)
    # The first mismatches' inputs, in the order of the check's first mismatches.
    merged = kit.merge_checks(checks, FIRST_MISMATCHES)
    obs["first_m"] = [m[idx % n] for idx, _got, _exp in merged["first"]]
    for buf in (d_m, d_a, d_out):
        cu("cuMemFree", buf)
    cu("cuModuleUnload", module)
    cu("cuDevicePrimaryCtxRelease", dev)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cubin", type=Path, required=True)
    ap.add_argument("--kernel", choices=sorted(KERNELS), default="abs_clamp")
    ap.add_argument("--launches", type=int, default=3, help="launches, each checked (default 3)")
    ap.add_argument("--random", type=int, default=4096,
                    help="seeded random inputs after the report's six (default 4096)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--block", type=int, default=128)
    args = ap.parse_args(argv)
    if args.launches < 1 or args.random < 0 or not 1 <= args.block <= 1024:
        ap.error("--launches must be at least 1, --random at least 0, --block in 1..1024")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        image = args.cubin.read_bytes()
    except OSError as exc:
        print(f"driver.py: cannot read --cubin: {exc}", file=sys.stderr)
        return kit.EXIT_USAGE
    d = kit.Driver("ptxas_abs_clamp", ("launches", "checked"), exposure="launches",
                   budget=kit.Budget(seconds=0, max_exposure=args.launches, heartbeat_ms=1000,
                                     join_timeout_s=0))
    d.start({"cubin": args.cubin.name, "cubin_sha256": hashlib.sha256(image).hexdigest(),
             "kernel": args.kernel, "launches": args.launches, "random": args.random,
             "seed": args.seed, "block": args.block, "n": len(REPORT_M) + args.random})
    checks, obs = run(args, d, image)
    return d.finish(obs, kit.merge_checks(checks, FIRST_MISMATCHES) if checks else None)


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    os._exit(status)  # no interpreter teardown after the final record (gpurepro.case.driver)
