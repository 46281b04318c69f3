"""One driver query, the device of the current context, asked once per trial process.

    query.py --binding ctypes|cuda-bindings --entry v1|v2-one-arg|v2-null|v2-bogus
             --context none|current [--seconds S] [--heartbeat-ms MS]

--entry:
  v1          cuCtxGetDevice(CUdevice *), the CUDA 2.0 ABI
  v2-one-arg  the export cuCtxGetDevice_v2 called with cuCtxGetDevice's one-argument prototype,
              as the six-line ctypes program and numba's ctypes binding before 0.63.0 call it:
              its second parameter (CUcontext ctx, CUDA 13.0) is whatever the register holds
  v2-null     cuCtxGetDevice_v2(CUdevice *, CUcontext) with its own ABI and ctx = NULL
              (the current context)
  v2-bogus    the same with a handle that is no context (0x10, an unmapped address)
--binding ctypes: libcuda.so.1 through ctypes, the symbol by name (dlsym), as the reporter's
  program; cuda-bindings: cuda.bindings.driver's cuCtxGetDevice (cuGetProcAddress at CUDA 2.0:
  the one-argument ABI) or cuCtxGetDevice_v2 (at 13.0, two arguments); v2-one-arg cannot be
  written with it.
--context none: cuInit(0) only (no context is current); current: the primary context of
  device 0 retained and made current first.

A trial makes exactly one query (counter `calls`, counted before the call: a crash inside it
counts the call). Final record: ok (observations.device is the answer), cuda_error (the error
and the call), or the process dies of the signal with the crash record (the native handler
preloaded) and Python's frames below it. The driver's own setup failing is cuda_error at its
call, a machine without a device unsupported, without libcuda no_driver.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata

from gpurepro.case import driver as kit

ENTRIES = ("v1", "v2-one-arg", "v2-null", "v2-bogus")
BOGUS_CONTEXT = 0x10  # no context: an address nothing is mapped at
CALLS = ("setup", "cuCtxGetDevice", "cuCtxGetDevice_v2")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binding", choices=("ctypes", "cuda-bindings"), required=True)
    ap.add_argument("--entry", choices=ENTRIES, required=True)
    ap.add_argument("--context", choices=("none", "current"), required=True)
    kit.add_budget_arguments(ap)
    args = ap.parse_args()
    if args.binding == "cuda-bindings" and args.entry == "v2-one-arg":
        kit.usage_error(ap, "cuda.bindings has no one-argument cuCtxGetDevice_v2")
    return args


class Ctypes:
    """The calls through ctypes, each symbol by its export name."""

    def __init__(self, d: kit.Driver):
        self.d = d
        self.lib = d.libcuda()

    def setup(self, context: str) -> None:
        d, lib = self.d, self.lib
        if d.failed(lib.cuInit(0), "cuInit", unsupported=kit.UNSUPPORTED_SETUP_ERRORS):
            d.exit()
        version = ctypes.c_int()
        lib.cuDriverGetVersion(ctypes.byref(version))
        d.observations["cuda_driver_version"] = version.value
        if context == "current":
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            if (d.failed(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet",
                         unsupported=kit.UNSUPPORTED_SETUP_ERRORS)
                    or d.failed(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                                "cuDevicePrimaryCtxRetain")
                    or d.failed(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")):
                d.exit()
        current = ctypes.c_void_p()
        if d.failed(lib.cuCtxGetCurrent(ctypes.byref(current)), "cuCtxGetCurrent"):
            d.exit()
        d.observations["context_current"] = bool(current.value)

    def query(self, entry: str) -> tuple[int, int]:
        # On an error cuda.bindings returns no device (None) beside the code: -1 stands for it.
        dev = ctypes.c_int(-1)
        if entry == "v1":
            fn = self.lib.cuCtxGetDevice
            fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
            return fn(ctypes.byref(dev)), dev.value
        try:
            fn = self.lib.cuCtxGetDevice_v2
        except AttributeError:
            self.d.stop_with("unsupported", reason="this libcuda exports no cuCtxGetDevice_v2 "
                                                   "(CUDA 13.0 and later drivers do)")
            self.d.exit()
        if entry == "v2-one-arg":
            fn.argtypes = [ctypes.POINTER(ctypes.c_int)]  # cuCtxGetDevice's prototype
            return fn(ctypes.byref(dev)), dev.value
        fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p]
        ctx = None if entry == "v2-null" else BOGUS_CONTEXT
        return fn(ctypes.byref(dev), ctx), dev.value


class Bindings:
    """The calls through cuda.bindings.driver."""

    def __init__(self, d: kit.Driver):
        self.d = d
        d.libcuda()  # no driver: no_driver, as for ctypes; also the error names
        try:
            from cuda.bindings import driver as cu
        except ImportError as exc:
            d.stop_with("unsupported", reason=f"cuda.bindings is not importable: {exc}")
            d.exit()
        self.cu = cu

    def setup(self, context: str) -> None:
        d, cu = self.d, self.cu
        if d.failed(cu.cuInit(0), "cuInit", unsupported=kit.UNSUPPORTED_SETUP_ERRORS):
            d.exit()
        err, version = cu.cuDriverGetVersion()
        d.observations["cuda_driver_version"] = int(version)
        if context == "current":
            err, dev = cu.cuDeviceGet(0)
            if d.failed(err, "cuDeviceGet", unsupported=kit.UNSUPPORTED_SETUP_ERRORS):
                d.exit()
            err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
            if d.failed(err, "cuDevicePrimaryCtxRetain") or d.failed(cu.cuCtxSetCurrent(ctx),
                                                                    "cuCtxSetCurrent"):
                d.exit()
        err, current = cu.cuCtxGetCurrent()
        if d.failed(err, "cuCtxGetCurrent"):
            d.exit()
        try:  # int(handle) is deprecated from cuda-bindings 13.0 on
            from cuda.bindings.utils import get_cuda_native_handle as handle
        except ImportError:
            handle = int
        d.observations["context_current"] = bool(handle(current))

    def query(self, entry: str) -> tuple[int, int]:
        # On an error cuda.bindings returns no device (None) beside the code: -1 stands for it.
        cu = self.cu
        if entry == "v1":
            err, dev = cu.cuCtxGetDevice()
            return kit.result_code(err), _ordinal(dev)
        fn = getattr(cu, "cuCtxGetDevice_v2", None)
        if fn is None:
            self.d.stop_with("unsupported", reason=f"cuda-bindings {_version('cuda-bindings')} "
                                                   "has no cuCtxGetDevice_v2 (13.0 and later do)")
            self.d.exit()
        err, dev = fn(cu.CUcontext(0 if entry == "v2-null" else BOGUS_CONTEXT))
        return kit.result_code(err), _ordinal(dev)


def _ordinal(dev: object) -> int:
    """A CUdevice as its ordinal; -1 where cuda.bindings returned none (the call failed)."""
    return -1 if dev is None else int(dev)  # type: ignore[call-overload]


def main() -> None:
    args = parse()
    d = kit.Driver("ctx_get_device_v2", ("calls",), exposure="calls", budget=kit.Budget.of(args))
    d.start({"binding": args.binding, "entry": args.entry, "context": args.context,
             "cuda_bindings": _version("cuda-bindings")})
    api = Ctypes(d) if args.binding == "ctypes" else Bindings(d)
    phases = d.track_calls(CALLS, workers=1)
    slot = phases.slot(0)
    slot.enter(0)
    api.setup(args.context)
    slot.exit()
    call = "cuCtxGetDevice" if args.entry == "v1" else "cuCtxGetDevice_v2"
    d.exposure.inc()  # one query per trial, whatever the budget says
    slot.enter(phases.id(call))
    code, device = api.query(args.entry)
    slot.exit()
    d.observations["result"] = d.error_name(code) if code else "CUDA_SUCCESS"
    if not d.failed(code, call):
        d.observations["device"] = device
    d.exit()


if __name__ == "__main__":
    main()
