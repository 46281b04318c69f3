"""host.cc's loop through cuda-python: Python threads doing load -> get function -> launch ->
synchronize -> unload with cuda.bindings.driver, the path cuda-python (and cuda.core) users are
on; and the library/kernel-outliving-its-context scenarios of NVIDIA/cuda-python PR 1672.

Options and the --lifetime scenarios: README.md, "host_cuda_python.py options".
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import threading
from pathlib import Path

from gpurepro.case import driver as kit

M = 128  # as in repro.cc: three M x M float arrays
KERNEL = b"repro_kernel"
LOCKS = ("none", "iteration", "unload-launch", "unload-load", "launch")
LIFETIMES = ("none", "primary-reset", "primary-reset-kernel", "primary-reset-retain",
             "ctx-destroy", "ctx-destroy-kernel")
CALLS = ("start", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuCtxSynchronize",
         "cuModuleUnload", "cuLibraryLoadData", "cuLibraryGetKernel", "cuLibraryUnload",
         "lock-wait", "cuCtxCreate", "cuCtxDestroy", "cuDevicePrimaryCtxRetain",
         "cuDevicePrimaryCtxReset", "cuCtxSetCurrent", "cuKernelGetAttribute", "cuMemAlloc")
(START, MODULE_LOAD, MODULE_GET, LAUNCH, SYNC, MODULE_UNLOAD, LIBRARY_LOAD, LIBRARY_GET,
 LIBRARY_UNLOAD, LOCK_WAIT, CTX_CREATE, CTX_DESTROY, PRIMARY_RETAIN, PRIMARY_RESET, SET_CURRENT,
 KERNEL_ATTRIBUTE, MEM_ALLOC) = range(len(CALLS))


def parse() -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cubin", action="append", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--unload", choices=("never", "three-in-four", "always"), default="three-in-four")
    ap.add_argument("--lock", choices=LOCKS, default="none")
    ap.add_argument("--context", choices=("shared", "per-thread", "primary"), default="shared")
    ap.add_argument("--contexts", type=int, default=None, help="N contexts made by main")
    ap.add_argument("--api", choices=("module", "library"), default="module")
    ap.add_argument("--lifetime", choices=LIFETIMES, default="none")
    kit.add_budget_arguments(ap)
    args = ap.parse_args()
    if not 1 <= args.threads < kit.MAX_PHASE_THREADS:
        kit.usage_error(ap, "--threads must be 1..63")
    if args.contexts is not None and not 1 <= args.contexts <= args.threads:
        kit.usage_error(ap, "--contexts must be 1..threads")
    if args.lifetime != "none" and (args.threads != 1 or args.api != "library"
                                    or args.unload != "always" or args.lock != "none"):
        kit.usage_error(ap, "--lifetime needs --threads 1 --api library --unload always --lock none")
    return ap, args


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


class Buffers:
    """Three M x M float arrays and the 15 kernel parameters pointing at them (pointer, then
    shape0, shape1, stride0, stride1 as int32, per array), as host.cc passes them."""

    def __init__(self, ptrs: list[int]):
        self.ptrs = [ctypes.c_uint64(p) for p in ptrs]
        self.dims = (ctypes.c_int32 * 4)(M, M, M, 1)
        params = []
        for p in self.ptrs:
            params.append(ctypes.addressof(p))
            params += [ctypes.addressof(self.dims) + 4 * q for q in range(4)]
        self.params = (ctypes.c_void_p * 15)(*params)
        self.address = ctypes.addressof(self.params)


class Race:
    def __init__(self, d: kit.Driver, cu, args: argparse.Namespace, images: list[int]):
        self.d, self.cu, self.args, self.images = d, cu, args, images
        self.ok = cu.CUresult.CUDA_SUCCESS
        self.lock = threading.Lock()
        c = d.counters
        self.cycles, self.loads, self.launches = c["cycles"], c["loads"], c["launches"]
        self.unloads, self.overlaps, self.contexts = c["unloads"], c["overlaps"], c["contexts"]
        self.phases = d.track_calls(CALLS, args.threads)
        self.slots: list[kit.PhaseSlot] = []
        self.ready = threading.Barrier(args.threads)
        try:
            from cuda.bindings.utils import get_cuda_native_handle as handle
        except ImportError:  # before cuda-bindings 13.0: int() of the object
            handle = int
        self.handle = handle

    # -- setup --

    def fail(self, err, call: str, first_load: bool = False) -> None:
        self.d.failed(err, call, unsupported=kit.UNSUPPORTED_LOAD_ERRORS if first_load else ())

    def ctx_create(self, dev):
        """cuCtxCreate as this cuda-bindings spells it (13.x: params, flags, dev; 12.x: flags,
        dev); the new context is current."""
        try:
            return self.cu.cuCtxCreate(None, 0, dev)
        except TypeError:
            return self.cu.cuCtxCreate(0, dev)

    def buffers(self, ps: kit.PhaseSlot) -> Buffers | None:
        ptrs = []
        for _ in range(3):
            ps.enter(MEM_ALLOC)
            err, p = self.cu.cuMemAlloc(M * M * 4)
            ps.exit()
            if err != self.ok:
                self.fail(err, "cuMemAlloc")
                return None
            ptrs.append(int(p))
        return Buffers(ptrs)

    # -- the race: host.cc's loop --

    def worker(self, index: int, ctx, bufs: Buffers | None, image: int) -> None:
        cu = self.cu
        ps = self.phases.slot(index)
        self.slots.append(ps)
        if ctx is None:  # per-thread: this worker's own context and buffers
            ps.enter(CTX_CREATE)
            err, ctx = self.ctx_create(self.dev)
            ps.exit()
            if err != self.ok:
                self.fail(err, "cuCtxCreate")
                self.ready.abort()
                return
            bufs = self.buffers(ps)
            if bufs is None:
                self.ready.abort()
                return
        ps.enter(SET_CURRENT)
        (err,) = cu.cuCtxSetCurrent(ctx)
        ps.exit()
        if err != self.ok:
            self.fail(err, "cuCtxSetCurrent")
            self.ready.abort()
            return
        try:
            self.ready.wait()
        except threading.BrokenBarrierError:
            return
        others = [s for s in self.slots if s is not ps]
        self.loop(ps, others, bufs, image)

    def loop(self, ps: kit.PhaseSlot, others: list[kit.PhaseSlot], bufs: Buffers,
             image: int) -> None:
        cu, d, ok, args = self.cu, self.d, self.ok, self.args
        library = args.api == "library"
        lock, lock_kind = self.lock, args.lock
        lock_iteration = lock_kind == "iteration"
        lock_launch = lock_kind in ("unload-launch", "launch")
        lock_load = lock_kind == "unload-load"
        lock_unload = lock_kind in ("unload-launch", "unload-load")
        unload = args.unload
        params, handle = bufs.address, self.handle
        budget = d.budget.max_exposure or float("inf")
        n = 0
        while not d.stopping:
            if lock_iteration:
                ps.enter(LOCK_WAIT); lock.acquire(); ps.exit()  # noqa: E702
            try:
                if lock_load:
                    ps.enter(LOCK_WAIT); lock.acquire(); ps.exit()  # noqa: E702
                try:
                    if library:
                        ps.enter(LIBRARY_LOAD)
                        err, obj = cu.cuLibraryLoadData(image, [], [], 0, [], [], 0)
                    else:
                        ps.enter(MODULE_LOAD)
                        err, obj = cu.cuModuleLoadData(image)
                    ps.exit()
                finally:
                    if lock_load:
                        lock.release()
                if err != ok:
                    return self.fail(err, "cuLibraryLoadData" if library else "cuModuleLoadData",
                                     first_load=n == 0)
                self.loads.inc()
                if lock_launch:
                    ps.enter(LOCK_WAIT); lock.acquire(); ps.exit()  # noqa: E702
                try:
                    if library:
                        ps.enter(LIBRARY_GET)
                        err, k = cu.cuLibraryGetKernel(obj, KERNEL)
                        ps.exit()
                        if err != ok:
                            return self.fail(err, "cuLibraryGetKernel")
                        f = cu.CUfunction(handle(k))  # a CUkernel launches in the current context
                    else:
                        ps.enter(MODULE_GET)
                        err, f = cu.cuModuleGetFunction(obj, KERNEL)
                        ps.exit()
                        if err != ok:
                            return self.fail(err, "cuModuleGetFunction")
                    for o in others:
                        if o._w & 1:
                            self.overlaps.inc()
                            break
                    ps.enter(LAUNCH)
                    (err,) = cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, params, 0)
                    ps.exit()
                finally:
                    if lock_launch:
                        lock.release()
                if err != ok:
                    return self.fail(err, "cuLaunchKernel")
                self.launches.inc()
                ps.enter(SYNC)
                (err,) = cu.cuCtxSynchronize()
                ps.exit()
                if err != ok:
                    return self.fail(err, "cuCtxSynchronize")
                if unload == "always" or (unload == "three-in-four" and n & 3):
                    if lock_unload:
                        ps.enter(LOCK_WAIT); lock.acquire(); ps.exit()  # noqa: E702
                    try:
                        if library:
                            ps.enter(LIBRARY_UNLOAD)
                            (err,) = cu.cuLibraryUnload(obj)
                        else:
                            ps.enter(MODULE_UNLOAD)
                            (err,) = cu.cuModuleUnload(obj)
                        ps.exit()
                    finally:
                        if lock_unload:
                            lock.release()
                    if err != ok:
                        return self.fail(err, "cuLibraryUnload" if library else "cuModuleUnload")
                    self.unloads.inc()
            finally:
                if lock_iteration:
                    lock.release()
            if self.cycles.inc() >= budget:
                d.stop_with("ok")  # --max-cycles, counted as host.cc counts it
            n += 1

    # -- PR 1672: the library outlives its context --

    def lifetime(self, image: int) -> None:
        cu, d, ok, scenario = self.cu, self.d, self.ok, self.args.lifetime
        ps = self.phases.slot(0)
        primary = scenario.startswith("primary")
        attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK

        def call(phase: int, name: str, fn, *a):
            ps.enter(phase)
            out = fn(*a)
            ps.exit()
            err = out[0]
            if err != ok:
                self.fail(err, name, first_load=name == "cuLibraryLoadData" and self.loads.get() == 0)
                return None
            return out[1] if len(out) > 1 else True

        while not d.stopping:
            if primary:
                ctx = call(PRIMARY_RETAIN, "cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain,
                           self.dev)
                if ctx is None or call(SET_CURRENT, "cuCtxSetCurrent", cu.cuCtxSetCurrent, ctx) is None:
                    return
            else:
                ctx = call(CTX_CREATE, "cuCtxCreate", self.ctx_create, self.dev)
                if ctx is None:
                    return
            self.contexts.inc()
            bufs = self.buffers(ps)
            if bufs is None:
                return
            lib = call(LIBRARY_LOAD, "cuLibraryLoadData", cu.cuLibraryLoadData, image, [], [], 0,
                       [], [], 0)
            if lib is None:
                return
            self.loads.inc()
            k = call(LIBRARY_GET, "cuLibraryGetKernel", cu.cuLibraryGetKernel, lib, KERNEL)
            if k is None:
                return
            if call(LAUNCH, "cuLaunchKernel", cu.cuLaunchKernel, cu.CUfunction(self.handle(k)),
                    1, 1, 1, 1, 1, 1, 0, 0, bufs.address, 0) is None:
                return
            self.launches.inc()
            if call(SYNC, "cuCtxSynchronize", cu.cuCtxSynchronize) is None:
                return
            # The context goes first; the library (and its kernel) outlive it.
            if primary:
                if call(PRIMARY_RESET, "cuDevicePrimaryCtxReset", cu.cuDevicePrimaryCtxReset,
                        self.dev) is None:
                    return
            elif call(CTX_DESTROY, "cuCtxDestroy", cu.cuCtxDestroy, ctx) is None:
                return
            if scenario.endswith("-kernel"):
                if call(KERNEL_ATTRIBUTE, "cuKernelGetAttribute", cu.cuKernelGetAttribute, attr,
                        k, self.dev) is None:
                    return
            if scenario == "primary-reset-retain":
                again = call(PRIMARY_RETAIN, "cuDevicePrimaryCtxRetain",
                             cu.cuDevicePrimaryCtxRetain, self.dev)
                if again is None or call(SET_CURRENT, "cuCtxSetCurrent", cu.cuCtxSetCurrent,
                                         again) is None:
                    return
            if call(LIBRARY_UNLOAD, "cuLibraryUnload", cu.cuLibraryUnload, lib) is None:
                return
            self.unloads.inc()
            if self.cycles.inc() >= (d.budget.max_exposure or float("inf")):
                d.stop_with("ok")


def main() -> None:
    ap, args = parse()
    d = kit.Driver("host-cuda-python",
                   ("cycles", "loads", "launches", "unloads", "overlaps", "contexts"),
                   exposure="launches", budget=kit.Budget.of(args))
    images = []
    for path in args.cubin:
        try:
            images.append(Path(path).read_bytes())
        except OSError as exc:
            kit.usage_error(ap, f"cannot read {path}: {exc}")
    context = "groups" if args.contexts and args.contexts > 1 else args.context
    d.start({"cubins": [{"path": p, "bytes": len(b)} for p, b in zip(args.cubin, images, strict=True)],
             "threads": args.threads, "unload": args.unload, "lock": args.lock,
             "context": context, "contexts": args.contexts or (args.threads if context == "per-thread" else 1),
             "api": args.api, "lifetime": args.lifetime, "seconds": args.seconds,
             "max_cycles": args.max_exposure, "heartbeat_ms": args.heartbeat_ms,
             "join_timeout_s": args.join_timeout, "cuda_bindings": _version("cuda-bindings")})
    d.libcuda()  # no driver: final no_driver, exit 3 (and the error names)
    try:
        from cuda.bindings import driver as cu
    except ImportError as exc:
        d.stop_with("unsupported", reason=f"cuda.bindings is not importable: {exc}")
        d.exit()
    # The images stay where they are for the whole run: the driver is handed their addresses.
    held = [ctypes.create_string_buffer(b, len(b)) for b in images]
    addresses = [ctypes.addressof(h) for h in held]
    if d.failed(cu.cuInit(0), "cuInit", unsupported=kit.UNSUPPORTED_SETUP_ERRORS):
        d.exit()
    err, dev = cu.cuDeviceGet(0)
    if d.failed(err, "cuDeviceGet", unsupported=kit.UNSUPPORTED_SETUP_ERRORS):
        d.exit()
    if args.api == "library" and not hasattr(cu, "cuLibraryLoadData"):
        d.stop_with("unsupported", reason="cuda.bindings lacks cuLibraryLoadData (CUDA 12.0+)")
        d.exit()
    race = Race(d, cu, args, addresses)
    race.dev = dev

    if args.lifetime != "none":
        threads = [threading.Thread(target=race.lifetime, args=(addresses[0],), daemon=True)]
    else:
        # Contexts made by main (shared: one; --contexts N; primary: device 0's), each with its
        # own buffers; worker i uses context i % N. per-thread: each worker makes its own.
        contexts, bufs = [], []
        ps = race.phases.slot(args.threads)  # main's slot, after the workers'
        if args.context == "primary":
            err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
            if d.failed(err, "cuDevicePrimaryCtxRetain") or d.failed(cu.cuCtxSetCurrent(ctx),
                                                                    "cuCtxSetCurrent"):
                d.exit()
            contexts.append(ctx)
        elif args.context == "shared" or args.contexts:
            for _ in range(args.contexts or 1):
                err, ctx = race.ctx_create(dev)
                if d.failed(err, "cuCtxCreate"):
                    d.exit()
                contexts.append(ctx)
        for ctx in contexts:
            if d.failed(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"):
                d.exit()
            b = race.buffers(ps)
            if b is None:
                d.exit()
            bufs.append(b)
        threads = []
        for i in range(args.threads):
            ctx = contexts[i % len(contexts)] if contexts else None
            b = bufs[i % len(bufs)] if bufs else None
            threads.append(threading.Thread(target=race.worker,
                                            args=(i, ctx, b, addresses[i % len(addresses)]),
                                            daemon=True, name=f"worker-{i}"))
    for t in threads:
        t.start()
    d.run_until()
    stuck = d.join(threads)
    if stuck:
        d.exit()  # no more driver calls beside a stuck worker
    err, version = cu.cuDriverGetVersion()
    err, name = cu.cuDeviceGetName(256, dev)
    major = cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)[1]
    minor = cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)[1]
    d.exit({"device": {"name": bytes(name).split(b"\0", 1)[0].decode(errors="replace"),
                       "compute_capability": f"{major}.{minor}",
                       "cuda_driver_version": int(version)}})


if __name__ == "__main__":
    main()
