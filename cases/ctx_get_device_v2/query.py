"""One driver query, the device of the current context, asked once per trial process.

    query.py --binding ctypes|cuda-bindings --entry v1|v2-one-arg|v2-null|v2-bogus
             --context none|current [--seconds S] [--heartbeat-ms MS]

The arms are README.md's. A kit driver, not a program on the stock driver: the one-argument call
reads its second register as this process's earlier calls left it, as when the result was made.
"""

from __future__ import annotations

import argparse
import ctypes

from gpurepro.case import driver as kit
from gpurepro.case.python_program import installed_version

BOGUS_CONTEXT = 0x10  # no context: an address nothing is mapped at
CALLS = ("setup", "cuCtxGetDevice", "cuCtxGetDevice_v2")


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
        d.observations["cuda_driver_version"] = int(cu.cuDriverGetVersion()[1])
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
        from cuda.bindings.utils import get_cuda_native_handle  # int(handle): deprecated

        d.observations["context_current"] = bool(get_cuda_native_handle(current))

    def query(self, entry: str) -> tuple[int, int]:
        cu = self.cu
        if entry == "v1":
            err, dev = cu.cuCtxGetDevice()
        elif (fn := getattr(cu, "cuCtxGetDevice_v2", None)) is None:
            version = installed_version("cuda-bindings")
            self.d.stop_with("unsupported", reason=f"cuda-bindings {version} has no "
                                                   "cuCtxGetDevice_v2 (13.0 and later do)")
            self.d.exit()
        else:
            err, dev = fn(cu.CUcontext(0 if entry == "v2-null" else BOGUS_CONTEXT))
        # On an error cuda.bindings returns no device (None) beside the code: -1 stands for it.
        return kit.result_code(err), -1 if dev is None else int(dev)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binding", choices=("ctypes", "cuda-bindings"), required=True)
    ap.add_argument("--entry", choices=("v1", "v2-one-arg", "v2-null", "v2-bogus"), required=True)
    ap.add_argument("--context", choices=("none", "current"), required=True)
    kit.add_budget_arguments(ap)
    args = ap.parse_args()
    if args.binding == "cuda-bindings" and args.entry == "v2-one-arg":
        kit.usage_error(ap, "cuda.bindings has no one-argument cuCtxGetDevice_v2")
    d = kit.Driver("ctx_get_device_v2", ("calls",), exposure="calls", budget=kit.Budget.of(args))
    d.start({"binding": args.binding, "entry": args.entry, "context": args.context,
             "cuda_bindings": installed_version("cuda-bindings")})
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
