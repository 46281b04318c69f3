"""The driver's own answer to what the program asks, for CASE_NAME: libcuda asked directly,
through ctypes, in the trial's process before the program runs (ProgramValue.answer)."""

from __future__ import annotations

import ctypes


def expected(libcuda: ctypes.CDLL) -> int:
    count = ctypes.c_int()
    if libcuda.cuInit(0) != 0 or libcuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        raise RuntimeError("the driver itself cannot count its devices here")
    return count.value
