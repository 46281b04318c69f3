"""Trial driver of fa3_wgmma_wait: time the attention kernel of a cubin, check its output.

    python driver.py --cubin kernel.cubin [--iters 512] [--ctas 0] [--warmups 5]
                     [--repeats 20] [--loops 20] [--seed 1243] [--check-rel R --check-abs A]

Inputs from a seeded numpy generator (Q per CTA, K and V shared, f16 in [-1, 1]); one launch
per CTA-count of SMs by default (--ctas 0), so each SM runs one warpgroup and nothing else hides
the wgmma latency. ``--warmups`` repetitions, then ``--repeats`` repetitions of ``--loops``
launches, each between two CUDA events (cuEventRecord / cuEventElapsedTime): a value is the
mean time of one launch over the loops (pyperf's convention), in seconds. The output of the
first and of the last launch is checked against numpy's attention of the same inputs (a
faster wrong kernel is a wrong_result, never a time). The final record's observations hold
``timing`` ({"unit": "s", "values", "warmups", "loops", "warmup_values"}) and ``conditions``:
the GPU's clocks, temperature and power read (never set) before and after, through pynvml where
it imports, else cuDeviceGetAttribute's nominal clock rates; ``output_sha256``, the last
launch's output bytes. No libcuda: ``no_driver``. A CUDA
error is named at its call (``cuda_error``); a cubin the device cannot load is ``unsupported``.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import math
import os
import sys
from pathlib import Path
from typing import Any

from gpurepro.case import driver as kit

M = D = BN = 64
KV_TILES = 2
DEFAULT_SEED = 1243  # flash-attention issue 1243
SCALE = 1 / math.sqrt(D)
FIRST_MISMATCHES = 8


class CudaFailed(Exception):
    """A call failed; the kit holds the final status (cuda_error or unsupported)."""


class Cuda:
    """cuda.bindings calls through the kit: results without the status; a failure decides the
    final record (``unsupported`` where its error is in ``unsupported``) and raises."""

    def __init__(self, cu: Any, d: kit.Driver):
        self.cu, self.d = cu, d

    def __call__(self, name: str, *args: Any, unsupported: frozenset[str] = frozenset()) -> Any:
        result = getattr(self.cu, name)(*args)
        err, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
        if self.d.failed(err, name, unsupported=unsupported):
            raise CudaFailed(name)
        return rest[0] if len(rest) == 1 else rest


def inputs(np: Any, ctas: int, seed: int) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, (ctas, M, D)).astype(np.float16)
    k = rng.uniform(-1, 1, (KV_TILES, BN, D)).astype(np.float16)
    v = rng.uniform(-1, 1, (KV_TILES, BN, D)).astype(np.float16)
    return q, k, v


def reference(np: Any, q: Any, k: Any, v: Any, iters: int) -> Any:
    """softmax(Q K^T / sqrt(D)) V over the key blocks the kernel visits (block i % KV_TILES for
    i < iters), in float64: each tile weighted by how often the loop visits it."""
    visits = np.array([len(range(t, iters, KV_TILES)) for t in range(KV_TILES)], dtype=np.float64)
    keys = k.astype(np.float64).reshape(KV_TILES * BN, D)
    vals = v.astype(np.float64).reshape(KV_TILES * BN, D)
    weight = np.repeat(visits, BN)
    s = q.astype(np.float64) @ keys.T * SCALE
    e = np.exp(s - s.max(axis=-1, keepdims=True)) * weight
    return (e @ vals) / e.sum(axis=-1, keepdims=True)


def conditions(cu: Cuda, attr: Any, dev: Any, bus_id: str) -> dict[str, Any]:
    """The GPU's clocks, temperature and power now: NVML where pynvml imports (each reading
    that fails is left out), else the driver's nominal clock rates (not the current ones)."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    except Exception as exc:  # pynvml missing, or NVML refusing: the driver's attributes
        return {"source": "cuDeviceGetAttribute", "why": f"{type(exc).__name__}: {exc}",
                "clock_rate_khz": cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev),
                "memory_clock_rate_khz": cu("cuDeviceGetAttribute",
                                            attr.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev)}
    out: dict[str, Any] = {"source": "nvml"}
    reads = {"sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
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
    except Exception:
        pass
    return out


def launch_params(*values: Any) -> tuple[Any, int]:
    """kernelParams: an array of pointers to each value (returned too, to keep it alive)."""
    ptrs = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    return ptrs, ctypes.addressof(ptrs)


def run(args: argparse.Namespace, d: kit.Driver, image: bytes) -> tuple[list[dict], dict]:
    checks: list[dict[str, Any]] = []
    obs: dict[str, Any] = {}
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        d.stop_with("no_driver", reason=str(exc))
        return checks, obs
    try:
        import numpy as np
        from cuda.bindings import driver as cu_module
    except ImportError as exc:
        print(f"driver.py: {exc}: the case's runtime packages (cuda-bindings, numpy) are not "
              f"importable by {sys.executable}", file=sys.stderr)
        raise SystemExit(kit.EXIT_USAGE) from exc
    cu = Cuda(cu_module, d)
    try:
        cu("cuInit", 0, unsupported=frozenset({"CUDA_ERROR_NO_DEVICE"}))
        _time_and_check(cu, cu_module, np, args, d, image, checks, obs)
    except CudaFailed:
        pass  # the kit has the status, the error and the call
    return checks, obs


def _time_and_check(cu: Cuda, cu_module: Any, np: Any, args: argparse.Namespace, d: kit.Driver,
                    image: bytes, checks: list[dict[str, Any]], obs: dict[str, Any]) -> None:
    attr = cu_module.CUdevice_attribute
    dev = cu("cuDeviceGet", 0)
    name = bytes(cu("cuDeviceGetName", 256, dev)).split(b"\0")[0].decode(errors="replace")
    bus_id = bytes(cu("cuDeviceGetPCIBusId", 32, dev)).split(b"\0")[0].decode()
    sms = cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    obs["device"] = {"name": name, "sms": sms, "compute_capability": "{}.{}".format(
        cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        cu("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))}
    obs["conditions"] = {"before": conditions(cu, attr, dev, bus_id)}
    ctx = cu("cuDevicePrimaryCtxRetain", dev)
    cu("cuCtxSetCurrent", ctx)
    module = cu("cuModuleLoadData", image, unsupported=kit.UNSUPPORTED_LOAD_ERRORS)
    func = cu("cuModuleGetFunction", module, b"attention")

    ctas = args.ctas or sms
    q, k, v = inputs(np, ctas, args.seed)
    expected = reference(np, q, k, v, args.iters).ravel().tolist()
    host_out = np.zeros(ctas * M * D, dtype=np.float32)
    buffers = {}
    for key, host in (("q", q), ("k", k), ("v", v), ("out", host_out)):
        buffers[key] = cu("cuMemAlloc", host.nbytes)
        if key != "out":
            cu("cuMemcpyHtoD", buffers[key], host.ctypes.data, host.nbytes)
    values = (*[ctypes.c_uint64(int(buffers[x])) for x in ("q", "k", "v", "out")],
              ctypes.c_int32(args.iters), ctypes.c_float(SCALE * math.log2(math.e)))
    _keep, params = launch_params(*values)
    start, end = cu("cuEventCreate", 0), cu("cuEventCreate", 0)

    def launch() -> None:
        cu("cuLaunchKernel", func, ctas, 1, 1, 128, 1, 1, 0, 0, params, 0)
        d.expose()

    def check() -> None:
        cu("cuCtxSynchronize")
        cu("cuMemcpyDtoH", host_out.ctypes.data, buffers["out"], host_out.nbytes)
        checks.append(kit.compare_as_declared(host_out.tolist(), expected, args, FIRST_MISMATCHES))
        d.counters["checked"].inc(host_out.size)

    def repetition() -> float:
        cu("cuEventRecord", start, 0)
        for _ in range(args.loops):
            launch()
        cu("cuEventRecord", end, 0)
        cu("cuEventSynchronize", end)
        d.heartbeat()
        return cu("cuEventElapsedTime", start, end) / 1000.0 / args.loops

    launch()
    check()
    warm = [repetition() for _ in range(args.warmups)]
    timed = [repetition() for _ in range(args.repeats)]
    check()
    obs["timing"] = {"unit": "s", "values": timed, "warmups": args.warmups, "loops": args.loops,
                     "warmup_values": warm}
    obs["conditions"]["after"] = conditions(cu, attr, dev, bus_id)
    got = host_out.astype(np.float64)
    obs["max_abs_error"] = float(np.max(np.abs(got - np.asarray(expected))))
    # The last launch's output bytes: arms whose digests agree computed the same bits, so a
    # time compared across releases is the time of one function (the verdict groups them).
    obs["output_sha256"] = hashlib.sha256(host_out.tobytes()).hexdigest()
    for buf in buffers.values():
        cu("cuMemFree", buf)
    cu("cuModuleUnload", module)
    cu("cuDevicePrimaryCtxRelease", dev)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cubin", type=Path, required=True)
    ap.add_argument("--iters", type=int, default=512, help="key blocks per launch (at least 2)")
    ap.add_argument("--ctas", type=int, default=0, help="CTAs per launch (0: one per SM)")
    ap.add_argument("--warmups", type=int, default=5, help="untimed-for-claims repetitions")
    ap.add_argument("--repeats", type=int, default=20, help="timed repetitions")
    ap.add_argument("--loops", type=int, default=20, help="launches per repetition")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    kit.add_check_arguments(ap)
    args = ap.parse_args(argv)
    if args.iters < 2 or args.ctas < 0 or args.warmups < 0 or args.repeats < 1 or args.loops < 1:
        ap.error("--iters at least 2, --ctas at least 0, --warmups at least 0, --repeats and "
                 "--loops at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        image = args.cubin.read_bytes()
    except OSError as exc:
        print(f"driver.py: cannot read --cubin: {exc}", file=sys.stderr)
        return kit.EXIT_USAGE
    d = kit.Driver("fa3_wgmma_wait", ("launches", "checked"), exposure="launches",
                   budget=kit.Budget(seconds=0, max_exposure=0, heartbeat_ms=1000, join_timeout_s=0))
    d.start({"cubin": args.cubin.name, "cubin_sha256": hashlib.sha256(image).hexdigest(),
             "iters": args.iters, "ctas": args.ctas, "warmups": args.warmups,
             "repeats": args.repeats, "loops": args.loops, "seed": args.seed})
    checks, obs = run(args, d, image)
    return d.finish(obs, kit.merge_checks(checks, FIRST_MISMATCHES) if checks else None)


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    os._exit(status)  # no interpreter teardown after the final record (gpurepro.case.driver)
