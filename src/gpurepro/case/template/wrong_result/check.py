"""What the stock driver launches for CASE_NAME and the answer it expects (computed here, on the
CPU). gpurepro/case/cubin_check.py's docstring lists the argument kinds and dtypes."""

from __future__ import annotations

import random

from gpurepro.case.cubin_check import In, Launch, Out, Scalar

KERNEL = "kernel"  # its extern "C" name in kernel.cu
N = 1000
BLOCK = 128


def launch(seed: int) -> Launch:
    rng = random.Random(seed)
    values = [rng.randint(-1000, 1000) for _ in range(N)]
    return Launch(grid=((N + BLOCK - 1) // BLOCK,), block=(BLOCK,),
                  args=[In("int32", values), Out("int32", N), Scalar("int32", N)],
                  expected=[[abs(v) for v in values]])
