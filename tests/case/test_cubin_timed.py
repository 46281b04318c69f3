"""The stock cubin driver (gpurepro/case/cubin_check.py) beyond 32-bit integers: every CUDA
scalar type at its own size, a timed arm's per-launch values from CUDA events, and an output
checked against another cubin's outputs. Run against tests/fake_libcuda.c (device memory that
gives back what was copied in: the identity) or, where kernels must differ, against kernels
written here in Python on host memory."""

from __future__ import annotations

import ctypes
import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpurepro.analyze.timing import trial_time
from gpurepro.case import Timing, TrialBudget, TrialContext, cubin_check
from tests import pace
from tests.conftest import ROOT

STOCK = ROOT / "src" / "gpurepro" / "case" / "cubin_check.py"
FAKE_BINDINGS = ROOT / "tests" / "fixtures" / "fake_cuda_bindings"


# ---------------------------------------------------------------- the types


@pytest.mark.parametrize(("name", "size"), [
    ("int8", 1), ("uint8", 1), ("int16", 2), ("uint16", 2), ("float16", 2), ("bfloat16", 2),
    ("int32", 4), ("uint32", 4), ("float32", 4), ("int64", 8), ("uint64", 8), ("float64", 8),
])
def test_every_cuda_scalar_type_is_packed_at_its_own_size(name, size):
    dt = cubin_check.dtype(name)
    values = [1, 2, 3]
    assert dt.size == size and len(dt.encode(values)) == 3 * size
    assert dt.decode(dt.encode(values)) == values


@pytest.mark.parametrize(("cuda", "name"), [("__half", "float16"), ("__nv_bfloat16", "bfloat16"),
                                            ("short", "int16"), ("unsigned short", "uint16"),
                                            ("float", "float32"), ("unsigned char", "uint8")])
def test_the_cuda_spellings_name_the_same_types(cuda, name):
    assert cubin_check.dtype(cuda) is cubin_check.DTYPES[name]


def test_half_types_round_as_the_device_stores_them():
    half, bf16 = cubin_check.dtype("float16"), cubin_check.dtype("bfloat16")
    assert bf16.encode([1.0]) == bytes.fromhex("803f")  # the upper half of float32 1.0
    assert bf16.encode([1.00390625]) == bytes.fromhex("803f")  # a tie rounds to even
    assert half.stored([0.1]) == [0.0999755859375] and bf16.stored([0.1]) == [0.10009765625]
    assert math.isnan(bf16.decode(bf16.encode([math.nan]))[0])
    with pytest.raises(ValueError, match="'int12': one of int8, uint8, int16"):
        cubin_check.dtype("int12")


# ---------------------------------------------------------------- on the fake libcuda


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fake_libcuda")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o",
                    str(folder / "libcuda.so.1"), str(ROOT / "tests" / "fake_libcuda.c")],
                   check=True)
    return folder


SPEC = """\
from gpurepro.case.cubin_check import In, Launch, Out, Scalar

KERNEL = "identity"
VALUES = {values!r}


def launch(seed):
    return Launch(grid=(1,), block=(64,), args=[In({dtype!r}, VALUES), Out({dtype!r}, len(VALUES)),
                                                Scalar("int16", len(VALUES))],
                  expected=[{expected}])
"""


def _driver(tmp_path: Path, libcuda: Path, spec: str, *argv: str,
            **env: str) -> tuple[int, list[dict], str]:
    (tmp_path / "spec.py").write_text(spec)
    (tmp_path / "k.cubin").write_bytes(b"cubin")
    full = {**os.environ, "LD_LIBRARY_PATH": str(libcuda), "FAKE_CUDA_PARAMS": "3",
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(FAKE_BINDINGS)]), **env}
    done = pace.run([sys.executable, str(STOCK), "--cubin", str(tmp_path / "k.cubin"), "--spec",
                     str(tmp_path / "spec.py"), "--launches", "2", *argv],
                    capture_output=True, text=True, env=full)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


@pytest.mark.parametrize(("dtype", "values"), [
    ("int16", [-32768, -1, 0, 1, 32767]), ("uint16", [0, 1, 65535]),
    ("__half", [0.1, -2.5, 65504.0]), ("__nv_bfloat16", [0.1, -2.5, 3.0e38]),
    ("int8", [-128, 0, 127]),
])
def test_a_16_bit_or_half_buffer_reaches_the_device_at_its_size_and_checks(tmp_path, fake_libcuda,
                                                                          dtype, values):
    """The fake device gives back the input: every element right (floats compared with the
    reference rounded to the type); the reference off by one, every element wrong."""
    rc, events, err = _driver(tmp_path, fake_libcuda,
                              SPEC.format(dtype=dtype, values=values, expected="VALUES"))
    final = events[-1]
    assert rc == 0 and final["status"] == "ok", err
    assert final["check"] == {"kind": "exact", "n": 2 * len(values), "mismatches": 0, "first": []}
    wrong = "[v - 1 for v in VALUES]" if "int" in dtype else "[v * 0.5 for v in VALUES]"
    _, events, _ = _driver(tmp_path, fake_libcuda, SPEC.format(dtype=dtype, values=values,
                                                               expected=wrong))
    assert events[-1]["check"]["mismatches"] == 2 * len(values)


def test_a_value_a_type_cannot_hold_is_the_specs_error_in_one_line(tmp_path, fake_libcuda):
    rc, events, err = _driver(tmp_path, fake_libcuda, SPEC.format(
        dtype="int16", values=[40000], expected="VALUES"))
    assert rc == 2 and events == []
    assert err.startswith("cubin_check: a int16 argument holds a value the type cannot")
    assert len(err.strip().splitlines()) == 1


def test_a_timed_arm_records_per_launch_times_from_cuda_events(tmp_path, fake_libcuda):
    """The fake's events say 0.5 ms plus 1 us per launch between them: each value is that over
    the loops, in seconds; warm-ups apart; the output checked before and after the timing."""
    rc, events, err = _driver(tmp_path, fake_libcuda,
                              SPEC.format(dtype="int32", values=[1, 2, 3], expected="VALUES"),
                              *Timing(repeats=3, loops=4, warmups=2).arguments(),
                              FAKE_CUDA_EVENT_MS="0.5")
    start, final = events[0], events[-1]
    assert rc == 0 and final["status"] == "ok", err
    assert start["config"]["timing"] == {"warmups": 2, "repeats": 3, "loops": 4}
    timing = final["observations"]["timing"]
    assert (timing["unit"], timing["warmups"], timing["loops"]) == ("s", 2, 4)
    assert len(timing["values"]) == 3 and len(timing["warmup_values"]) == 2
    assert timing["values"] == pytest.approx([0.504e-3 / 4] * 3, rel=1e-6)
    assert trial_time(final) == pytest.approx(0.504e-3 / 4, rel=1e-6)  # what the claims read
    assert final["counters"]["launches"] == 2 + (2 + 3) * 4 + 1  # checked, timed, checked again
    assert final["check"]["n"] == 3 * 3  # two checked launches before the timing, one after
    conditions = final["observations"]["conditions"]
    assert conditions["before"]["clock_rate_khz"] == 1980000 and "after" in conditions
    assert final["observations"]["device"]["sms"] == 4


def test_a_launch_that_takes_the_device_gets_one_block_per_sm(tmp_path, fake_libcuda):
    spec = ("from gpurepro.case.cubin_check import In, Launch, Out\nKERNEL = 'k'\n"
            "def launch(seed, device):\n"
            "    return Launch(grid=(device['sms'],), block=(32,), args=[In('int32', [7]), "
            "Out('int32', 1), In('int32', [device['sms']])], expected=[[7]], "
            "notes={'grid_from': device['sms']})\n")
    rc, events, err = _driver(tmp_path, fake_libcuda, spec)
    assert rc == 0 and events[-1]["observations"]["grid_from"] == 4, err


# ---------------------------------------------------------------- another cubin as the reference


class Result(int):
    """A CUresult as cuda.bindings gives it: an int with a name."""

    def __new__(cls, value: int, name: str):
        obj = int.__new__(cls, value)
        obj.name = name
        return obj


OK = Result(0, "CUDA_SUCCESS")


class HostCuda:
    """Just enough of cuda.bindings.driver on host memory: each module's kernel is a Python
    function of (input, output, n) over int32 buffers; events count the launches between."""

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76

    def __init__(self, kernels: dict[bytes, object]):
        self.kernels, self.mem, self.loaded = kernels, {}, []

    def cuInit(self, flags): return (OK,)
    def cuDeviceGet(self, i): return (OK, 0)
    def cuDeviceGetAttribute(self, a, dev): return (OK, 9 if a == 75 else 0)
    def cuDeviceGetName(self, n, dev): return (OK, b"Host\0")
    def cuDriverGetVersion(self): return (OK, 13000)
    def cuDevicePrimaryCtxRetain(self, dev): return (OK, "ctx")
    def cuCtxSetCurrent(self, ctx): return (OK,)
    def cuCtxSynchronize(self): return (OK,)

    def cuModuleLoadData(self, image):
        self.loaded.append(image)
        return (OK, image)

    def cuModuleGetFunction(self, module, name): return (OK, self.kernels[module])

    def cuMemAlloc(self, n):
        buf = ctypes.create_string_buffer(n)
        self.mem[ctypes.addressof(buf)] = buf
        return (OK, ctypes.addressof(buf))

    def cuMemcpyHtoD(self, dst, src, n):
        ctypes.memmove(dst, src, n)
        return (OK,)

    cuMemcpyDtoH = cuMemcpyHtoD

    def cuMemsetD32(self, dst, value, n):
        (ctypes.c_uint32 * n).from_address(dst)[:] = [value] * n
        return (OK,)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        ptrs = (ctypes.c_void_p * 3).from_address(params)
        d_in, d_out = (ctypes.c_uint64.from_address(ptrs[i]).value for i in range(2))
        n = ctypes.c_int32.from_address(ptrs[2]).value
        src, out = (ctypes.c_int32 * n).from_address(d_in), (ctypes.c_int32 * n).from_address(d_out)
        out[:] = [f(x) for x in src]
        return (OK,)


REFERENCE_SPEC = """\
from gpurepro.case.cubin_check import In, Launch, Out, Scalar

KERNEL = "scale"


def launch(seed):
    x = list(range(-8, 8))
    return Launch(grid=(1,), block=(16,), args=[In("int32", x), Out("int32", 16),
                                                Scalar("int32", 16)])  # expected: the reference's
"""


@pytest.fixture
def drive(monkeypatch, capfd, tmp_path):
    """main() in this process on HostCuda; its events (written to file descriptor 1)."""
    hooks = (sys.excepthook, threading.excepthook)
    (tmp_path / "spec.py").write_text(REFERENCE_SPEC)
    (tmp_path / "under_test.cubin").write_bytes(b"under test")
    (tmp_path / "reference.cubin").write_bytes(b"reference")

    def run(under_test, reference, *argv):
        fake = HostCuda({b"under test": under_test, b"reference": reference})
        monkeypatch.setattr(cubin_check, "libcuda_missing", lambda: None)
        monkeypatch.setattr(cubin_check, "import_bindings", lambda: (fake, "host", "0"))
        capfd.readouterr()
        rc = cubin_check.main(["--cubin", str(tmp_path / "under_test.cubin"), "--spec",
                               str(tmp_path / "spec.py"), "--reference-cubin",
                               str(tmp_path / "reference.cubin"), *argv])
        monkeypatch.undo()
        return rc, [json.loads(line) for line in capfd.readouterr().out.splitlines()], fake

    yield run
    sys.excepthook, threading.excepthook = hooks  # the kit's Driver installs its own


def test_another_cubins_outputs_are_the_reference(drive):
    rc, events, fake = drive(lambda x: 2 * x, lambda x: x + x)
    final = events[-1]
    assert rc == 0 and final["status"] == "ok"
    assert final["check"]["n"] == 3 * 16 and final["check"]["mismatches"] == 0
    assert fake.loaded == [b"under test", b"reference"]
    assert events[0]["config"]["reference"]["cubin"] == "reference.cubin"
    rc, events, _ = drive(lambda x: 2 * abs(x), lambda x: 2 * x)  # wrong for every negative x
    assert events[-1]["check"]["mismatches"] == 3 * 8
    assert events[-1]["check"]["first"][0] == [0, 16, -16]


def test_a_spec_with_its_own_expected_and_a_reference_cubin_is_refused(tmp_path):
    (tmp_path / "spec.py").write_text(SPEC.format(dtype="int32", values=[1], expected="VALUES"))
    (tmp_path / "k.cubin").write_bytes(b"k")
    done = pace.run([sys.executable, str(STOCK), "--cubin", str(tmp_path / "k.cubin"), "--spec",
                     str(tmp_path / "spec.py"), "--reference-cubin", str(tmp_path / "k.cubin")],
                    capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 2 and done.stdout == ""
    assert "the spec's launch gives expected=None" in done.stderr


def test_the_trial_context_passes_the_reference_and_the_timing():
    ctx = TrialContext("slow", {}, {}, TrialBudget(1, 0, 10), ROOT / "native", ROOT)
    cmd = ctx.cubin_check("a.cubin", "check.py", reference="b.cubin",
                          timing=Timing(repeats=7, loops=3, warmups=1))
    argv = list(cmd.argv)
    assert argv[argv.index("--reference-cubin") + 1] == "b.cubin"
    assert argv[argv.index("--repeats"):argv.index("--repeats") + 6] == [
        "--repeats", "7", "--loops", "3", "--warmups", "1"]
