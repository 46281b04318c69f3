"""TextOutput: a program's text output read as protocol events, one pattern per final line."""

from __future__ import annotations

from gpurepro.case import OutputLine, TextOutput

PARSE = TextOutput(
    OutputLine(r"n=(?P<n>\d+) => (?P<message>.*)", call="cudaDeviceSynchronize"),
    OutputLine(r"(?P<message>launch failed)", error="launch_unreported", call="cudaLaunchKernelEx",
               launches=0),
    counter="kernels")


def test_a_message_line_is_the_final_record_with_the_errors_name_and_its_groups():
    assert PARSE(["noise", "n=3 => an illegal memory access was encountered\n"]) == [
        {"event": "final", "status": "cuda_error", "error": "cudaErrorIllegalAddress",
         "call": "cudaDeviceSynchronize", "counters": {"kernels": 1},
         "errors": {"cudaErrorIllegalAddress": 1},
         "observations": {"n": 3, "message": "an illegal memory access was encountered"}}]


def test_no_error_is_ok_and_a_missing_kernel_image_is_unsupported_with_nothing_exposed():
    ok = PARSE(["n=1 => no error"])[-1]
    assert ok["status"] == "ok" and ok["errors"] == {} and ok["counters"] == {"kernels": 1}
    gone = PARSE(["n=1 => no kernel image is available for execution on the device"])[-1]
    assert gone["status"] == "unsupported" and gone["counters"] == {"kernels": 0}
    assert gone["reason"] == "cudaErrorNoKernelImageForDevice"


def test_a_line_that_prints_no_error_takes_the_declared_one():
    final = PARSE(["launch failed"])[-1]
    assert (final["status"], final["error"], final["call"], final["counters"]) == (
        "cuda_error", "launch_unreported", "cudaLaunchKernelEx", {"kernels": 0})


def test_the_whole_line_must_match():
    assert PARSE(["relaunch failed twice", "xn=1 => no error"]) == []


def test_json_events_are_kept_and_the_programs_final_wins_with_the_instrument_folded_in():
    wrapper_final = '{"event":"final","status":"unsupported","reason":"tool","errors":{}}'
    instrument = '{"event":"instrument","tool":"cuda-gdb","found":true}'
    events = PARSE([instrument, "n=2 => unspecified launch failure", wrapper_final])
    assert [e["event"] for e in events] == ["instrument", "final"]
    assert events[-1]["error"] == "cudaErrorLaunchFailure"
    assert events[-1]["observations"]["instrument"] == {"tool": "cuda-gdb", "found": True}
    # no line of the program's: the wrapper's final is all there is
    assert PARSE([instrument, wrapper_final])[-1]["status"] == "unsupported"
