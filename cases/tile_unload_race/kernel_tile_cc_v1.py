"""Variant of kernel_tile.py for cuda-tile 1.3 and 1.4: the cutile_python_v1 calling convention.

    python kernel_tile_cc_v1.py --kernel add --gpu-code sm_90 --out build/add_sm90.cubin

The toolchain matrix (matrix.py) exports with it where kernel_tile.py cannot run: those releases
have export_kernel but no CallingConvention.cutile_python_v2. Everything else (kernels, array
constraints, symbol) is kernel_tile.py's code unchanged; the only change is the calling
convention. For these kernels v1 and v2 give the same kernel parameters, so host.cc launches the
cubin unchanged. The kernels live in this file, not imported, for the same reason as there: the
build names a script's code reproducibly, but not the modules it imports.
"""

import argparse

import cuda.tile as ct
from cuda.tile.compilation import (
    ArrayConstraint,
    CallingConvention,
    KernelSignature,
    export_kernel,
)

# As filed (seed/export_kernel.py).
M = N = 128


@ct.kernel
def repro_kernel(a, b, c):
    ct.store(c, (0, 0), ct.load(a, (0, 0), (M, N)) + ct.load(b, (0, 0), (M, N)))


# The "other" kernel: another shape and body, same arguments.
OM, ON = 64, 128


@ct.kernel
def other_kernel(a, b, c):
    c_tile = ct.load(a, (0, 0), (OM, ON)) * ct.load(b, (0, 0), (OM, ON)) + 1.0
    ct.store(c, (0, 0), c_tile)


arr = lambda: ArrayConstraint(  # noqa: E731  (kept exactly as filed)
    ct.float32,
    2,
    index_dtype=ct.int32,
    stride_lower_bound_incl=0,
    alias_groups=[],
    may_alias_internally=False,
)

KERNELS = {"add": repro_kernel, "other": other_kernel}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=sorted(KERNELS), default="add")
    ap.add_argument("--gpu-code", default="sm_120", help="e.g. sm_90, sm_120 (seed: sm_120)")
    ap.add_argument("--out", required=True, help="cubin path to write")
    args = ap.parse_args()
    # Symbol "repro_kernel" for both: the host looks the kernel up by that name.
    # The variant's one change: cutile_python_v1 (kernel_tile.py: cutile_python_v2).
    sig = KernelSignature(
        [arr(), arr(), arr()], CallingConvention.cutile_python_v1(), symbol="repro_kernel"
    )
    export_kernel(
        KERNELS[args.kernel], [sig], args.out, gpu_code=args.gpu_code, output_format="cubin"
    )
    print("wrote", args.out)


if __name__ == "__main__":
    main()
