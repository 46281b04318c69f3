"""What the stock driver launches and times for CASE_NAME. The expected outputs are the
reference build's (the trial names its cubin), so none are computed here;
gpurepro/case/cubin_check.py's docstring lists the argument kinds and dtypes."""

from __future__ import annotations

import random

from gpurepro.case.cubin_check import In, Launch, Out, Scalar

KERNEL = "kernel"  # its extern "C" name in kernel.cu
N = 1 << 16
BLOCK = 256
ITERS = 256  # work per element: long enough that a launch is not all overhead


def launch(seed: int) -> Launch:
    rng = random.Random(seed)
    values = [rng.getrandbits(32) for _ in range(N)]
    return Launch(grid=(N // BLOCK,), block=(BLOCK,),
                  args=[In("uint32", values), Out("uint32", N), Scalar("int32", N),
                        Scalar("int32", ITERS)])
