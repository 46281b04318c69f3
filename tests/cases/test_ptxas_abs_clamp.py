"""ptxas_abs_clamp on a machine with no GPU: its trials (the stock driver,
gpurepro/case/cubin_check.py, on check.py), the SASS facts, its cubin's build step with the
release the pins carry, the committed table, the claims, the analyses and the verdict (the
lowering of its PTX: tests/building/test_build_ptx.py).

tests/data/ptxas_abs_clamp/ holds what the pinned tools gave: kernel.emitted.ptx (nvcc 13.3.73,
``-arch=sm_90 -ptx`` on kernel.cu), nvdisasm 13.2.51 on the cubin of ptxas 12.6.77 and
cuobjdump 13.2.51 on that of 12.6.85. The toolchain-marked tests run the tools from the
environments `nox -s toolchain` makes, and one of them two 12.6 wheels from PyPI (42 MB, cached
under build/wheels/); each skips, saying why, where those are missing.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpurepro.building import sass
from gpurepro.case import cubin_check
from tests import pace
from tests.conftest import ROOT, toolchain_venv

CASE_DIR = ROOT / "cases" / "ptxas_abs_clamp"
DATA = ROOT / "tests" / "data" / "ptxas_abs_clamp"
EMITTED_PTX = DATA / "kernel.emitted.ptx"
SPEC = CASE_DIR / "check.py"
STOCK = ROOT / "src" / "gpurepro" / "case" / "cubin_check.py"
SEED = "24438"  # what the case's trials pass (manifest.SEED)


@pytest.fixture(scope="module")
def check():
    """The case's check.py, as the stock driver loads it."""
    return cubin_check.load_spec(SPEC)


def _run(*argv: str) -> subprocess.CompletedProcess:
    """``python ARGV...`` with this checkout's gpurepro importable."""
    return pace.run([sys.executable, *argv], capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, startups=pace.BUILD)


def _lower(*args: str) -> subprocess.CompletedProcess:
    return _run("-m", "gpurepro.building.ptx", *args)


def _has_libcuda() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


# ----------------------------------------------------------------------------- the trials


def _stock(cubin: Path, *argv: str) -> subprocess.CompletedProcess:
    """A trial's command, as the manifest's trial_command gives it (no preload)."""
    return _run(str(STOCK), "--cubin", str(cubin), "--spec", str(SPEC), *argv)


def test_a_trial_without_libcuda_reports_no_driver(tmp_path):
    if _has_libcuda():
        pytest.skip("this machine has a libcuda.so.1: no_driver cannot be shown here")
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"\x7fELF not really")
    done = _stock(cubin, "--kernel", "abs_clamp", "--seed", SEED)
    assert done.returncode == 3, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["event"] for e in events] == ["start", "final"]
    start, final = events
    assert start["driver"] == "cubin_check" and start["config"]["kernel"] == "abs_clamp"
    assert final["status"] == "no_driver" and "libcuda.so.1" in final["reason"]
    assert "check" not in final and final["counters"] == {"launches": 0, "checked": 0}


def test_a_no_driver_trial_classifies_as_unsupported(tmp_path):
    if _has_libcuda():
        pytest.skip("this machine has a libcuda.so.1")
    from gpurepro.run.classify import Observed, classify, parse_json_lines

    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"x")
    done = _stock(cubin, "--kernel", "clamp_only", "--seed", SEED)
    events, bad = parse_json_lines(done.stdout.splitlines())
    got = classify(Observed(done.returncode, False, events), "launches")
    assert bad == 0 and got.outcome == "unsupported" and "libcuda.so.1" in got.detail


def test_usage_errors_exit_2_without_a_final_record(tmp_path):
    done = _stock(tmp_path / "missing.cubin", "--kernel", "abs_clamp")
    assert done.returncode == 2 and done.stdout == ""
    done = _stock(EMITTED_PTX)  # check.py declares KERNELS: a trial names one
    assert done.returncode == 2 and done.stdout == "" and "--kernel None" in done.stderr


def test_reference_of_the_report_and_the_inputs(check):
    assert check.reference("abs_clamp", check.REPORT_M) == [9, 6, 3, 0, 3, 6]
    assert check.reference("clamp_only", check.REPORT_M) == [0, 0, 0, 0, 3, 6]
    assert check.reference("abs_only", check.REPORT_M) == [9, 6, 3, 0, 3, 6]
    m = check.inputs("abs_clamp", int(SEED))
    assert m[:6] == check.REPORT_M and m == check.inputs("abs_clamp", int(SEED))
    assert len(m) == 4102 and 1500 < sum(x < 0 for x in m) < 2600 and -(2**31) not in m
    assert max(abs(x) for x in check.inputs("abs_only", 1)) == 5


def test_the_launch_is_the_kernels_signature(check):
    launch = check.launch(int(SEED), "abs_clamp")
    assert [type(a).__name__ for a in launch.args] == ["In", "In", "Out", "Scalar"]
    assert launch.args[1].values == list(range(18)) and launch.args[3].value == 4102
    assert launch.grid == (33,) and launch.block == (128,)
    assert cubin_check.checked_launch(check, int(SEED), "abs_only")[0] == "abs_only"


class FakeResult(int):
    """A CUresult as the bindings return it: an int with a name."""

    def __new__(cls, value: int, name: str):
        obj = super().__new__(cls, value)
        obj.name = name
        return obj


OK = FakeResult(0, "CUDA_SUCCESS")


class FakeCuda:
    """Just enough of cuda.bindings.driver, on host memory: cuLaunchKernel runs the kernel
    here, dropping the abs when ``drop_abs`` (what ptxas 12.5.40 ... 12.6.77 compile)."""

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76

    def __init__(self, drop_abs: bool, fail: dict[str, str] | None = None):
        self.drop_abs, self.fail, self.mem, self.calls = drop_abs, fail or {}, {}, []

    def __getattribute__(self, name):
        attr = object.__getattribute__(self, name)
        if name.startswith("cu"):
            fail = object.__getattribute__(self, "fail")

            def call(*args):
                object.__getattribute__(self, "calls").append(name)
                if name in fail:
                    return (FakeResult(1, fail[name]),)
                return attr(*args)
            return call
        return attr

    def cuInit(self, flags): return (OK,)
    def cuDeviceGet(self, i): return (OK, 0)
    def cuDeviceGetAttribute(self, a, dev): return (OK, 9 if a == 75 else 0)
    def cuDeviceGetName(self, n, dev): return (OK, b"Fake H200\0\0")
    def cuDriverGetVersion(self): return (OK, 13000)
    def cuDevicePrimaryCtxRetain(self, dev): return (OK, "ctx")
    def cuCtxSetCurrent(self, ctx): return (OK,)
    def cuModuleLoadData(self, image): return (OK, "module")
    def cuModuleGetFunction(self, mod, name): return (OK, name.decode())
    def cuCtxSynchronize(self): return (OK,)
    def cuMemFree(self, d): return (OK,)
    def cuModuleUnload(self, m): return (OK,)
    def cuDevicePrimaryCtxRelease(self, d): return (OK,)

    def cuMemAlloc(self, n):
        buf = ctypes.create_string_buffer(n)
        self.mem[ctypes.addressof(buf)] = buf
        return (OK, ctypes.addressof(buf))

    def cuMemcpyHtoD(self, dst, src, n):
        ctypes.memmove(dst, src, n)
        return (OK,)

    def cuMemcpyDtoH(self, dst, src, n):
        ctypes.memmove(dst, src, n)
        return (OK,)

    def cuMemsetD32(self, dst, value, n):
        (ctypes.c_uint32 * n).from_address(dst)[:] = [value] * n
        return (OK,)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        ptrs = (ctypes.c_void_p * 4).from_address(params)
        d_m, d_a, d_out = (ctypes.c_uint64.from_address(ptrs[i]).value for i in range(3))
        n = ctypes.c_int32.from_address(ptrs[3]).value
        m = (ctypes.c_int32 * n).from_address(d_m)
        a = (ctypes.c_int32 * 18).from_address(d_a)
        out = (ctypes.c_int32 * n).from_address(d_out)
        for i in range(min(n, gx * bx)):
            x = m[i] if f == "clamp_only" or (self.drop_abs and f == "abs_clamp") else abs(m[i])
            out[i] = a[3 * x] if f == "abs_only" else a[3 * max(0, min(x, 5))]
        return (OK,)


@pytest.fixture
def drive(monkeypatch, capfd):
    """The stock driver's main() on check.py and fake bindings, in this process; its events
    (the kit writes them to file descriptor 1)."""
    hooks = (sys.excepthook, threading.excepthook)

    def run(fake, *argv):
        monkeypatch.setattr(cubin_check, "libcuda_missing", lambda: None)
        monkeypatch.setattr(cubin_check, "import_bindings", lambda: (fake, "fake", "0"))
        capfd.readouterr()
        argv = argv if "--kernel" in argv else ("--kernel", "abs_clamp", *argv)
        rc = cubin_check.main(["--cubin", str(EMITTED_PTX), "--spec", str(SPEC), "--seed", SEED,
                               *argv])
        monkeypatch.undo()
        events = [json.loads(line) for line in capfd.readouterr().out.splitlines()]
        return rc, events

    yield run
    sys.excepthook, threading.excepthook = hooks  # the kit's Driver installs its own


def test_a_trial_checks_every_element_and_reports_a_wrong_answer(check, drive):
    rc, events = drive(FakeCuda(drop_abs=True))
    final = events[-1]
    assert rc == 0 and final["status"] == "ok"
    m = check.inputs("abs_clamp", int(SEED))
    negative = sum(x < 0 for x in m)
    check = final["check"]
    assert check["kind"] == "exact" and check["n"] == 3 * len(m)
    assert check["mismatches"] == 3 * negative
    assert check["first"][0] == [0, 0, 9] and len(check["first"]) == 8
    obs = final["observations"]
    assert obs["report_m"] == {"m": [-3, -2, -1, 0, 1, 2], "got": [0, 0, 0, 0, 3, 6],
                               "expected": [9, 6, 3, 0, 3, 6]}
    assert obs["mismatches_by_sign"] == {"negative_m": 3 * negative, "nonnegative_m": 0}
    assert obs["launches_agree"] is True and obs["first_m"][:3] == [-3, -2, -1]
    assert obs["device"] == {"name": "Fake H200", "compute_capability": "9.0", "driver_api": 13000}
    assert final["counters"] == {"launches": 3, "checked": 3 * len(m)}
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "final" and kinds.count("heartbeat") >= 3


@pytest.mark.parametrize("kernel", ["abs_clamp", "abs_only", "clamp_only"])
def test_right_answers_have_no_mismatches(drive, kernel):
    rc, events = drive(FakeCuda(drop_abs=False), "--kernel", kernel)
    final = events[-1]
    assert rc == 0 and final["check"]["mismatches"] == 0 and final["check"]["first"] == []
    assert final["check"]["n"] == 3 * 4102


def test_a_trial_names_the_failing_call(drive):
    fake = FakeCuda(False, {"cuCtxSynchronize": "CUDA_ERROR_LAUNCH_FAILED"})
    rc, events = drive(fake)
    final = events[-1]
    assert rc == 1 and final["status"] == "cuda_error"
    assert (final["error"], final["call"]) == ("CUDA_ERROR_LAUNCH_FAILED", "cuCtxSynchronize")
    assert final["errors"] == {"CUDA_ERROR_LAUNCH_FAILED": 1} and "check" not in final


def test_a_cubin_the_device_cannot_load_is_unsupported(drive):
    fake = FakeCuda(False, {"cuModuleLoadData": "CUDA_ERROR_NO_BINARY_FOR_GPU"})
    rc, events = drive(fake)
    assert rc == 3 and events[-1]["status"] == "unsupported"
    assert "CUDA_ERROR_NO_BINARY_FOR_GPU" in events[-1]["reason"]


# ----------------------------------------------------------------------------- SASS facts


def test_sass_facts_of_the_two_sides_of_the_fix():
    """What the axis watches and the verdict states, by the harness's parser and diff."""
    bad = sass.parse_listing((DATA / "ptxas-12.6.77.nvdisasm.txt").read_text())
    good = sass.parse_listing((DATA / "ptxas-12.6.85.cuobjdump-sass.txt").read_text())
    assert set(bad) == set(good) == {"abs_clamp", "abs_only", "clamp_only"}
    watch = [(k, "IABS") for k in sorted(bad)] + [("abs_clamp", "VIMNMX.RELU R0, R2, 0x5, PT")]
    assert sass.watched(bad, watch) == {"abs_clamp:IABS": False, "abs_only:IABS": True,
                                        "clamp_only:IABS": False,
                                        "abs_clamp:VIMNMX.RELU R0, R2, 0x5, PT": True}
    assert sass.watched(good, watch)["abs_clamp:IABS"] is True
    assert sass.diff(bad["abs_clamp"], good["abs_clamp"])["changes"][0] == {
        "a": ["VIMNMX.RELU R0, R2, 0x5, PT", "LEA R7, R0, R0, 0x1"],
        "b": ["IABS R0, R2", "VIMNMX.RELU R0, R0, 0x5, PT", "IMAD R7, R0, 0x3, RZ"]}
    assert sass.opcodes(bad)["clamp_only"] == sass.opcodes(good)["clamp_only"]  # two readers


# ----------------------------------------------------------------------------- the committed facts


def _committed() -> dict:
    return json.loads((CASE_DIR / "releases.cpu.json").read_text())


def test_committed_document_counts_identical_cubins_once():
    doc = _committed()
    made = [r["compile"]["cubin_sha256"] for r in doc["releases"] if "compile" in r]
    assert sorted(c["sha256"] for c in doc["distinct_cubins"]) == sorted(set(made))
    assert sum(len(c["releases"]) for c in doc["distinct_cubins"]) == len(made)
    for r in doc["releases"]:
        assert r["requested"] and r["resolved"], r["label"]
    cu12 = doc["axes"][0]
    assert cu12["package"] == "nvidia-cuda-nvcc-cu12" and len(cu12["considered"]) >= 2


def test_arms_sit_on_the_committed_boundaries():
    from gpurepro.case import load_case

    case = load_case(CASE_DIR / "manifest.py", ROOT)
    arms = {a.name: case.resolved_arms()[a.name] for a in case.arms}
    doc = _committed()
    pairs = [tuple(b["between"]) for b in doc["boundaries"]]
    assert pairs == [(arms["last-good"]["ptxas"], arms["first-bad"]["ptxas"]),
                     (arms["last-bad"]["ptxas"], arms["first-fixed"]["ptxas"])]
    cu12 = [r["requested"] for r in doc["releases"] if r.get("package") == "nvidia-cuda-nvcc-cu12"]
    assert arms["newest-12"]["ptxas"] == cu12[-1]
    assert case.baseline == "last-bad" and arms["control-abs-only"]["kernel"] == "abs_only"


# ----------------------------------------------------------------------------- release facts


def _tools(venv: Path | None, *names: str) -> dict[str, Path]:
    if venv is None:
        pytest.skip("no toolchain environment (nox -s toolchain makes it)")
    found = {n: next(venv.glob(f"lib*/python3*/site-packages/nvidia/cu13/bin/{n}"), None)
             for n in names}
    if not all(found.values()):
        pytest.skip(f"{venv.name} lacks {[n for n, p in found.items() if p is None]}")
    return found


@pytest.mark.toolchain
def test_the_ptx_fixture_is_what_the_pinned_nvcc_emits(tmp_path):
    nvcc = _tools(toolchain_venv("tile_unload_race", "sm_90"), "nvcc")["nvcc"]
    out = tmp_path / "k.ptx"
    done = pace.run([str(nvcc), "-arch=sm_90", "-ptx", str(CASE_DIR / "kernel.cu"), "-o",
                     str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == EMITTED_PTX.read_text()


@pytest.mark.toolchain
def test_the_cubin_of_the_13_3_ptxas_is_the_committed_one(tmp_path):
    """The cubin artifact's command (gpurepro.building.sass's build step around the arms' ptxas
    argv) with the ptxas of nvidia-cuda-nvcc 13.3.73 (the cuda-13 arm's release, here the
    toolchain environment's copy of the same wheel) on the lowered PTX."""
    tile = _tools(toolchain_venv("tile_unload_race", "sm_90"), "ptxas")
    tc = _tools(toolchain_venv("tcgen05_alloc_order", "sm_103a"), "nvdisasm")
    lowered = tmp_path / "kernel.ptx"
    assert _lower(str(EMITTED_PTX), str(lowered), "8.0").returncode == 0
    out = tmp_path / "out" / "kernel.cubin"
    out.parent.mkdir()
    done = _run("-m", "gpurepro.building.sass", str(out), f"nvdisasm={tc['nvdisasm']}", "--",
                str(tile["ptxas"]), "-arch=sm_90", "-O3", str(lowered), "-o", str(out))
    assert done.returncode == 0, done.stderr
    committed = {r["requested"]: r["compile"]["cubin_sha256"] for r in _committed()["releases"]}
    assert hashlib.sha256(out.read_bytes()).hexdigest() == committed["13.3.73"]
    read = sass.read_builds({"cubin_13.3.73": out}, "cubin")["13.3.73"]
    assert read["disassembler"] == "nvdisasm" and read["version"] == "13.2.51"
    assert any(t.startswith("IABS") for t in read["listing"]["abs_clamp"])


# ----------------------------------------------------------------------------- claims and verdict


def _case():
    from gpurepro.case import load_case

    return load_case(CASE_DIR / "manifest.py", ROOT)


def test_the_case_checks_its_output_and_declares_its_claims_and_axes():
    case = _case()
    assert case.check is not None and case.check.kind == "exact"
    assert "wrong_result" in case.failure_outcomes
    assert len(case.claims) == 10 and case.defaults.trials_per_arm == 12
    assert {c.name: c.bound for c in case.claims if c.bound == "below"} == {
        "last-good-never-wrong": "below", "first-fixed-never-wrong": "below"}
    assert {c.name for c in case.claims if c.unit == "trial"} == {"breaks-at-12-5", "fixed-at-12-6-85"}
    ax = case.axes["ptxas"]
    assert (ax.package, ax.versions, ax.tool, ax.artifact, ax.arms) == (
        "nvidia-cuda-nvcc-cu12", ">=12.0,<13", "ptxas", "cubin_12.6.77", ("last-bad",))
    assert ax.watch == (("abs_clamp", "IABS"),)
    # the axis compiles with the arms' argv: the same cubins
    assert ax.build[:3] == ("{tool}", "-arch={arch}", "-O3")
    assert case.artifact("cubin").command[-6:] == ("{ptxas}", *ax.build[1:])
    assert case.axes["ptxas-as-emitted"].build[3] == "{artifact:ptx}/kernel.ptx"


def test_twelve_trials_per_arm_decide_every_claim():
    pytest.importorskip("scipy")
    from gpurepro.analyze.claims import Decider, Design

    case = _case()
    wrong = {"first-bad", "last-bad"}
    records = [{"arm": arm, "outcome": "wrong_result" if arm in wrong else "survived",
                "exposure": 3} for arm in case.resolved_arms() for _ in range(12)]
    decider = Decider(case.claims, case.baseline, Design(alpha=0.05), case.failure_outcomes,
                      case.exposure.per, list(case.resolved_arms()))
    decider.final(records)
    assert {n: d["decision"] for n, d in decider.decisions.items()} == {
        c.name: "supported" for c in case.claims}


def _bisection_doc(mode: str) -> dict:
    def b(before, after, classes, present):
        return {"between": [before, after], "not_built_between": [], "classes": classes,
                "sass": {"watched": [{"fact": "abs_clamp:IABS", "before": present, "after": not present}],
                         "kernels": {"abs_clamp": {"changes": [{"a": ["x"], "b": ["y"]}]}}}}
    return {"axis": {"package": "nvidia-cuda-nvcc-cu12", "versions": ">=12.0,<13"},
            "releases": [{"requested": str(i), "sha256": "s"} for i in range(22)],
            "artifacts": {str(i): {} for i in range(11)},
            "runs": [{"status": "ran"}] * (6 if mode == "bisect" else 11),
            "gpu": {"status": "ran", "mode": mode, "device": {"name": "NVIDIA H200"}},
            "boundaries": {"pinned": [b("12.4.131", "12.5.40", ["passes", "fails"], True),
                                      b("12.6.77", "12.6.85", ["fails", "passes"], False)],
                           "open": []}}


def _analysis(decision: str, bisections: list):
    from gpurepro.model.result import Analysis
    from gpurepro.sweep import summary

    case = _case()

    def listing(name):
        return {"version": "13.2.51", "listing": {k: [i.text for i in v] for k, v in
                                                  sass.parse_listing((DATA / name).read_text()).items()}}
    good, bad = listing("ptxas-12.6.85.cuobjdump-sass.txt"), listing("ptxas-12.6.77.nvdisasm.txt")
    by = {"12.4.131": good, "12.5.40": bad, "12.6.77": bad, "12.6.85": good, "12.9.86": good}
    doc = {"case": {"name": case.name, "baseline": case.baseline},
           "summary": {a: {"outcomes": {"wrong_result" if a in ("first-bad", "last-bad") else "survived": 12}}
                       for a in case.resolved_arms()},
           "claims": [{"name": c.name, "decision": decision} for c in case.claims],
           "analyses": {"sass": {"available": True, "by_ptxas": by},
                        "bisection": summary.summarize(bisections, ("abs_clamp",))}}
    return Analysis.of(doc)


def test_the_verdict_names_ptxas_and_the_boundaries_the_bisection_pins():
    from gpurepro.case import load_sibling

    verdict = load_sibling(CASE_DIR / "manifest.py", "verdict")
    docs = [("results/ptxas_abs_clamp/bisect_ptxas_1.json", _bisection_doc("bisect")),
            ("results/ptxas_abs_clamp/bisect_ptxas_2.json", _bisection_doc("exhaustive"))]
    v = verdict.verdict(_analysis("supported", docs))
    assert v["status"] == "reproduced" and v["owner"].startswith("NVIDIA ptxas")
    assert "the bisection pins the boundaries at 12.4.131 → 12.5.40 and 12.6.77 → 12.6.85" in v["owner"]
    assert len(v["owner_because"]) == 10
    text = "\n".join(v["sentences"])
    assert ("IABS present in ptxas 12.4.131 (last-good) and absent in ptxas 12.5.40 (first-bad); "
            "`IABS R0, R2` · `VIMNMX.RELU R0, R0, 0x5, PT`") in text
    assert "Bisection (results/ptxas_abs_clamp/bisect_ptxas_1.json)" in text  # the search's, not the exhaustive one
    assert "6 of them run on NVIDIA H200 (bisect); 2 boundaries" in text
    assert "pins the same boundaries" in text
    assert "Boundary 12.6.77 → 12.6.85 (adjacent releases): fails → passes on the GPU; abs_clamp IABS absent → present" in text
    undecided = verdict.verdict(_analysis("not_decided", []))
    assert undecided["status"] == "not_decided" and undecided["owner"] is None
    assert any("--trials" in n for n in undecided["next"]) and any("bisect" in n for n in undecided["next"])


def test_the_analyses_read_the_build_and_the_committed_bisections(tmp_path):
    """The SASS analysis reads the sass.json the build step wrote beside each arm's cubin; the
    bisection analysis, on the committed bisections, is what the newest committed run recorded."""
    case = _case()
    cubin = tmp_path / "cubin_12.6.77" / "kernel.cubin"
    cubin.parent.mkdir()
    cubin.write_bytes(b"")
    (cubin.parent / "sass.json").write_text(json.dumps({
        "read_by": "nvdisasm", "attempts": {}, "versions": {"nvdisasm": "13.2.51"},
        "kernels": {"abs_clamp": ["VIMNMX.RELU R0, R2, 0x5, PT"]}}))
    got = case.analyses["sass"]({"cubin_12.6.77": cubin, "crash_preload": tmp_path / "x.so"})
    assert got == {"available": True, "by_ptxas": {"12.6.77": {
        "disassembler": "nvdisasm", "version": "13.2.51",
        "listing": {"abs_clamp": ["VIMNMX.RELU R0, R2, 0x5, PT"]}}}}
    newest = json.loads(ROOT.joinpath(
        "results/ptxas_abs_clamp/20261204T032311Z-bed44c_NVIDIA-H200_redacted.json").read_text())
    assert case.analyses["bisection"]({}) == newest["analyses"]["bisection"]
