"""gpurepro.case.printed: a reporter's program that prints its counters as text, read as
protocol events so it stays as filed."""

from __future__ import annotations

from gpurepro.case.printed import counters_parser

PARSE = counters_parser(r"calls=\d+", r"^DONE after (\d+)s")


def test_heartbeats_carry_the_printed_counters_in_order_and_the_survival_line_ends_ok():
    events = PARSE(["starting, 2 threads\n", "  calls=10 errors=0\n", "  calls=20 errors=1\n",
                    "DONE after 2s\n"])
    assert events == [
        {"event": "heartbeat", "t": 1.0, "counters": {"calls": 10, "errors": 0}},
        {"event": "heartbeat", "t": 2.0, "counters": {"calls": 20, "errors": 1}},
        {"event": "final", "status": "ok", "t": 2.0, "counters": {"calls": 20, "errors": 1}}]
    assert list(events[0]["counters"]) == ["calls", "errors"]


def test_a_crash_leaves_no_final_event():
    assert [e["event"] for e in PARSE(["  calls=10 errors=0\n"])] == ["heartbeat"]
    assert PARSE(["nothing to read\n"]) == []
