"""What a numba user does, a program for the stock driver (gpurepro/case/python_program.py):
numba.cuda.get_current_device(), then synchronize() (README: Arms).

    numba_query.py --target builtin|builtin-fixed|installed [--expect-numba VERSION]
"""

from __future__ import annotations

import argparse
import os
import sys

from gpurepro.case import python_program as trial


def _apply_the_063_fix(nbdriver) -> bool:
    """numba 0.63.0's Driver._find_api (PR 10237): cuCtxGetDevice, cuCtxSynchronize by name."""
    find = getattr(nbdriver.Driver, "_find_api", None)
    if find is not None:
        nbdriver.Driver._find_api = lambda self, fname: (
            getattr(self.lib, fname) if fname in ("cuCtxGetDevice", "cuCtxSynchronize")
            else find(self, fname))
    return find is not None


ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--target", choices=("builtin", "builtin-fixed", "installed"), required=True)
ap.add_argument("--expect-numba", metavar="VERSION")
args = ap.parse_args()
if args.target.startswith("builtin"):  # no numba-cuda redirection (its .pth), ctypes binding
    os.environ["NUMBA_CUDA_USE_NVIDIA_BINDING"] = "0"
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "NumbaCudaFinder"]
try:
    from numba import cuda
    from numba.cuda.cudadrv import driver as nbdriver
except ImportError as exc:
    raise trial.Unsupported(f"numba.cuda is not importable: {exc}") from None
imported = getattr(sys.modules.get("numba"), "__version__", None)
if args.expect_numba and imported != args.expect_numba:
    raise RuntimeError(f"this trial imports numba {imported}; its arm pins {args.expect_numba} "
                       f"(a runtime package the run did not put first on PYTHONPATH)")
trial.start(target=args.target,
            fix_applied=_apply_the_063_fix(nbdriver) if args.target == "builtin-fixed" else False,
            implementation=getattr(cuda, "implementation", None),
            nvidia_binding=bool(getattr(nbdriver, "USE_NV_BINDING", True)))
if not cuda.is_available():
    raise trial.Unsupported("numba.cuda.is_available() is False")
trial.expose()  # one user action per trial, counted before it
trial.enter("get_current_device")
dev = cuda.get_current_device()
trial.leave()
trial.enter("synchronize")
cuda.synchronize()
trial.observe(device=dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
              compute_capability=".".join(map(str, dev.compute_capability)))
