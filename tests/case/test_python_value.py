"""A Python program's value checked by the stock driver (gpurepro/case/python_program.py): the
reporter's unchanged program that prints a wrong value is a wrong_result, never a survival;
the value it prints or returns against an expected one or against the driver's own answer
(libcuda asked directly), through the harness's classification, on tests/fake_libcuda.c."""

from __future__ import annotations

import argparse
import os
import textwrap

import pytest

from gpurepro.case import OutputCheck, ProgramValue, TrialBudget, TrialContext
from gpurepro.case.python_program import as_expected, compare_value, printed_value
from gpurepro.run.classify import classify
from gpurepro.run.trial import run_trial
from tests.conftest import ROOT

EXACT = OutputCheck("exact")
# The fake libcuda answers one device; a cuda.bindings release that miscounts would print 2.
ANSWER = """\
import ctypes


def expected(libcuda):
    count = ctypes.c_int()
    assert libcuda.cuInit(0) == 0 and libcuda.cuDeviceGetCount(ctypes.byref(count)) == 0
    return count.value
"""


@pytest.fixture(scope="module")
def bins(native_programs):
    return {"preload": native_programs["preload"], "fake": native_programs["fake_libcuda"].parent}


def _trial(bins, tmp_path, source, value, check=EXACT):
    script = tmp_path / "seed" / "repro.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(textwrap.dedent(source))
    (tmp_path / "answer.py").write_text(ANSWER)
    ctx = TrialContext("as-filed", {}, {}, TrialBudget(1, 0, 30), ROOT / "native", tmp_path,
                       check=check)
    cmd = ctx.python_program(script, preload=bins["preload"], value=value)
    env = {**os.environ, **cmd.env, "LD_LIBRARY_PATH": str(bins["fake"])}
    done = run_trial(list(cmd.argv), env, ROOT, 30)
    return done, classify(done.observed, "runs", check)


PRINTS = """\
    print("querying the driver")
    print("device count: {n}")
"""


def test_a_program_that_prints_a_wrong_value_is_a_wrong_result(bins, tmp_path):
    value = ProgramValue(printed=r"device count: (\d+)", expected=1)
    done, c = _trial(bins, tmp_path, PRINTS.format(n=2), value)
    assert c.outcome == "wrong_result", done.observed.stderr_tail
    final = done.observed.events[-1]
    assert final["check"] == {"kind": "exact", "n": 1, "mismatches": 1, "first": [[0, 2, 1]]}
    assert final["observations"]["value"]["got"] == 2
    assert "device count: 2" in done.observed.stderr_tail  # what it printed, as before
    _, c = _trial(bins, tmp_path, PRINTS.format(n=1), value)
    assert c.outcome == "survived"


def test_the_same_program_without_a_value_check_exits_0_and_survives(bins, tmp_path):
    """What a case got before: the exit status alone, whatever the program printed."""
    _, c = _trial(bins, tmp_path, PRINTS.format(n=2), None, check=None)
    assert c.outcome == "survived"


def test_the_drivers_own_answer_is_the_expected_value(bins, tmp_path):
    value = ProgramValue(printed=r"device count: (\d+)", answer="answer.py")
    done, c = _trial(bins, tmp_path, PRINTS.format(n=2), value)
    assert c.outcome == "wrong_result"
    obs = done.observed.events[-1]["observations"]["value"]
    assert obs["expected"] == 1 and obs["expected_from"] == "answer.py"
    _, c = _trial(bins, tmp_path, PRINTS.format(n=1), value)
    assert c.outcome == "survived"


def test_a_returned_value_within_the_tolerance_survives(bins, tmp_path):
    source = "result = [0.1 + 0.2, 2.0]\n"
    check = OutputCheck("tolerance", rel=1e-9)
    _, c = _trial(bins, tmp_path, source, ProgramValue(returned="result", expected=[0.3, 2.0]),
                  check)
    assert c.outcome == "survived"
    _, c = _trial(bins, tmp_path, source, ProgramValue(returned="result", expected=[0.3, 2.5]),
                  check)
    assert c.outcome == "wrong_result"


def test_a_program_that_prints_no_value_is_a_mismatch_against_nothing(bins, tmp_path):
    done, c = _trial(bins, tmp_path, "print('nothing to see')\n",
                     ProgramValue(printed=r"count: (\d+)", expected=1))
    assert c.outcome == "wrong_result"
    assert done.observed.events[-1]["check"]["first"] == [[0, None, 1]]


def test_a_cuda_error_is_still_that_error_with_a_value_declared(bins, tmp_path):
    _, c = _trial(bins, tmp_path, "raise RuntimeError('cuInit failed: CUDA_ERROR_LAUNCH_FAILED')\n",
                  ProgramValue(expected=1))
    assert (c.outcome, c.detail) == ("cuda_error", "CUDA_ERROR_LAUNCH_FAILED")


def test_printed_values_are_read_as_the_expected_type():
    text = "count: 3\nnames: a, b\ncount: 4\n"
    assert printed_value(text, r"count: (\d+)") == "4"  # the last match
    assert printed_value(text, "") == "count: 4"  # the last line
    assert printed_value(text, r"absent: (\d+)") is None
    assert as_expected("4", 4) == 4 and as_expected("0x10", 16) == 16
    assert as_expected("[1, 2.5]", [1, 2]) == [1, 2.5] and as_expected("1 2 3", [0]) == [1, 2, 3]
    assert as_expected("4", "4") == "4" and as_expected("True", True) is True
    args = argparse.Namespace(check_rel=0.0, check_abs=0.0)
    assert compare_value("NVIDIA H100", "NVIDIA H100", args)["mismatches"] == 0
    assert compare_value([1, 2], [1, 2, 3], args) == {
        "kind": "exact", "n": 3, "mismatches": 1, "first": [[2, None, 3]]}


def test_the_trial_command_passes_the_value_and_the_tolerance(tmp_path):
    ctx = TrialContext("as-filed", {}, {}, TrialBudget(1, 0, 30), ROOT / "native", tmp_path,
                       check=OutputCheck("tolerance", rel=0.01))
    argv = list(ctx.python_program("repro.py", value=ProgramValue(
        printed="x=(.*)", answer="answer.py")).argv)
    assert argv[argv.index("--printed") + 1] == "x=(.*)"
    assert argv[argv.index("--expect-from") + 1] == str(tmp_path / "answer.py")
    assert argv[argv.index("--check-rel") + 1] == "0.01"
    assert argv.index("--") < argv.index("repro.py")
