"""What a numba user does: ask numba.cuda for the current device, then synchronize.

    numba_query.py --target builtin|builtin-fixed|installed [--expect-numba VERSION]
                   [--seconds S] [--heartbeat-ms MS]

--target builtin: numba's own CUDA target with its ctypes binding (NUMBA_CUDA_USE_NVIDIA_BINDING=0;
  numba-cuda's redirection of `numba.cuda`, installed by its .pth file, is taken off first), the
  path of numba/numba issue 10188: before 0.63.0 its binding looks each function up as NAME_v2
  first, so on a CUDA 13 driver it calls cuCtxGetDevice_v2 and cuCtxSynchronize_v2 with the
  prototypes of cuCtxGetDevice and cuCtxSynchronize (one argument short);
--target builtin-fixed: the same with numba 0.63.0's fix applied to this numba (numba/numba PR
  10237: cuCtxGetDevice and cuCtxSynchronize looked up by their exact names), the one difference
  between the two releases on this path, without carrying a second numba and llvmlite;
--target installed: `numba.cuda` as this interpreter resolves it (numba-cuda's target where it
  is installed), with its default binding.
--expect-numba: the release the arm pins (carried as a runtime package, first on PYTHONPATH); a
  trial that imports another numba raises (harness_error) instead of measuring the wrong one.

One user action per trial (counter `calls`): numba.cuda.get_current_device() (numba creates and
pushes the primary context, then asks its device) and numba.cuda.synchronize(). The versions of
numba and numba-cuda, the target's implementation and binding go into the start event.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys

from gpurepro.case import driver as kit

CALLS = ("import", "get_current_device", "synchronize")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _builtin_target() -> None:
    """numba's own CUDA target, ctypes binding: before numba.cuda is first imported."""
    os.environ["NUMBA_CUDA_USE_NVIDIA_BINDING"] = "0"
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "NumbaCudaFinder"]


def _apply_the_063_fix(nbdriver) -> bool:
    """numba 0.63.0's change to Driver._find_api (PR 10237, from NVIDIA/numba-cuda PR 185): the
    two functions whose CUDA 13 `_v2` takes a CUcontext are bound by their exact names. False
    when this numba has no such method (nothing to fix)."""
    find = getattr(nbdriver.Driver, "_find_api", None)
    if find is None:
        return False

    def _find_api(self, fname):
        if fname in ("cuCtxGetDevice", "cuCtxSynchronize"):
            return getattr(self.lib, fname)
        return find(self, fname)

    nbdriver.Driver._find_api = _find_api
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=("builtin", "builtin-fixed", "installed"), required=True)
    ap.add_argument("--expect-numba", metavar="VERSION")
    kit.add_budget_arguments(ap)
    args = ap.parse_args()
    d = kit.Driver("ctx_get_device_v2-numba", ("calls",), exposure="calls",
                   budget=kit.Budget.of(args))
    if args.target.startswith("builtin"):
        _builtin_target()
    slot = d.track_calls(CALLS, workers=1).slot(0)
    slot.enter(0)
    try:
        from numba import cuda
        from numba.cuda.cudadrv import driver as nbdriver
    except ImportError as exc:
        d.start({"target": args.target, "numba": _version("numba"),
                 "numba_cuda": _version("numba-cuda")})
        d.stop_with("unsupported", reason=f"numba.cuda is not importable: {exc}")
        d.exit()
    slot.exit()
    imported = getattr(sys.modules.get("numba"), "__version__", None)
    if args.expect_numba and imported != args.expect_numba:
        raise RuntimeError(f"this trial imports numba {imported}; its arm pins "
                           f"{args.expect_numba} (a runtime package the run did not put first on "
                           f"PYTHONPATH)")
    fixed = _apply_the_063_fix(nbdriver) if args.target == "builtin-fixed" else False
    d.start({"target": args.target, "numba": _version("numba"), "fix_applied": fixed,
             "numba_cuda": _version("numba-cuda"), "llvmlite": _version("llvmlite"),
             "cuda_bindings": _version("cuda-bindings"),
             "implementation": getattr(cuda, "implementation", None),
             "nvidia_binding": bool(getattr(nbdriver, "USE_NV_BINDING", True))})
    d.libcuda()  # no driver: no_driver (numba would say so its own way); also the error names
    if not cuda.is_available():
        d.stop_with("unsupported", reason="numba.cuda.is_available() is False")
        d.exit()
    d.exposure.inc()
    try:
        slot.enter(1)
        dev = cuda.get_current_device()
        slot.exit()
        slot.enter(2)
        cuda.synchronize()
        slot.exit()
    except nbdriver.CudaAPIError as exc:  # a CUDA call failed: named, at the call numba made
        d.record_error(exc.code)
        call = str(exc).split(" results in ")[0].removeprefix("Call to ").strip() or CALLS[1]
        d.stop_with("cuda_error", d.error_name(exc.code), call)
        d.exit()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    d.exit({"device": name, "compute_capability": ".".join(map(str, dev.compute_capability))})


if __name__ == "__main__":
    main()
