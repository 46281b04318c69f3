"""Export the case's Tile IR kernels to cubins with cuda.tile's export_kernel.

    python kernel_tile.py --kernel add --gpu-code sm_90 --out build/add_sm90.cubin

--kernel add    the reporter's kernel and signature, exactly as in seed/export_kernel.py
                (only the target architecture is a parameter: the seed hard-codes sm_120).
--kernel other  a different Tile IR kernel (c = a * b + 1 on a 64x128 tile) with the same
                argument ABI and symbol, so the same host driver launches either; used to ask
                whether the crash needs distinct modules in flight.

No GPU is needed: tileiras compiles ahead of time. It refuses to run when the nvcc/nvvm wheels
do not match its own version, so install the whole family at one version.
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
    sig = KernelSignature(
        [arr(), arr(), arr()], CallingConvention.cutile_python_v2(), symbol="repro_kernel"
    )
    export_kernel(
        KERNELS[args.kernel], [sig], args.out, gpu_code=args.gpu_code, output_format="cubin"
    )
    print("wrote", args.out)


if __name__ == "__main__":
    main()
