"""A ptxas_abs_clamp trial's launch, for the stock driver (gpurepro/case/cubin_check.py): m is
the report's six indices, then 4096 seeded values (abs_only, unclamped: in [-5, 5]; the others:
half in [-8, 8], half over the int32 range but INT_MIN, whose abs C leaves undefined); A[k] = k.
"""

from __future__ import annotations

import random
from typing import Any

from gpurepro.case.cubin_check import In, Launch, Out, Scalar

KERNELS = ("abs_clamp", "abs_only", "clamp_only")
REPORT_M = [-3, -2, -1, 0, 1, 2]
RANDOM = 4096  # seeded inputs after the report's six
INT_MAX = 2**31 - 1
TABLE = list(range(18))  # A: the gather table, 6 rows of 3
BLOCK = 128


def inputs(kernel: str, seed: int, n: int = RANDOM) -> list[int]:
    rng = random.Random(seed)
    if kernel == "abs_only":
        return REPORT_M + [rng.randint(-5, 5) for _ in range(n)]
    return (REPORT_M + [rng.randint(-8, 8) for _ in range(n // 2)]
            + [rng.randint(-INT_MAX, INT_MAX) for _ in range(n - n // 2)])


def reference(kernel: str, m: list[int]) -> list[int]:
    """Each element: 3 * the index the kernel should have used."""
    def index(x: int) -> int:
        j = x if kernel == "clamp_only" else abs(x)
        return j if kernel == "abs_only" else max(0, min(j, 5))
    return [TABLE[3 * index(x)] for x in m]


def launch(seed: int, kernel: str) -> Launch:
    m = inputs(kernel, seed)
    return Launch(grid=((len(m) + BLOCK - 1) // BLOCK,), block=(BLOCK,),
                  args=[In("int32", m), In("int32", TABLE), Out("int32", len(m)),
                        Scalar("int32", len(m))], expected=[reference(kernel, m)])


def observe(launch: Launch, outputs: list[list[list[Any]]]) -> dict[str, Any]:
    """The report's six values as the first launch returned them, every launch's mismatches by
    the sign of m, and the m of the first eight mismatches."""
    m, want = launch.args[0].values, launch.expected[0]  # type: ignore[union-attr]
    bad = [m[i] for (got,) in outputs for i, (g, e) in enumerate(zip(got, want, strict=True)) if g != e]
    return {"report_m": {"m": REPORT_M, "got": outputs[0][0][:6], "expected": list(want[:6])},
            "mismatches_by_sign": {"negative_m": sum(x < 0 for x in bad),
                                   "nonnegative_m": sum(x >= 0 for x in bad)},
            "first_m": bad[:8]}
