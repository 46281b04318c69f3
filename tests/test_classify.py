"""Classification rules on synthetic observations (no processes)."""

from gpurepro.classify import Observed, classify, find_crash_record, parse_json_lines


def test_survival_without_progress_is_invalid():
    obs = Observed(0, False, [{"event": "final", "status": "ok", "counters": {"launches": 0}}])
    assert classify(obs, "launches").outcome == "invalid"


def test_survival_with_progress():
    obs = Observed(0, False, [{"event": "final", "status": "ok", "counters": {"launches": 7}}])
    c = classify(obs, "launches")
    assert (c.outcome, c.counters["launches"]) == ("survived", 7)


def test_timeout_wins_over_anything_printed():
    obs = Observed(None, True, [{"event": "final", "status": "ok", "counters": {"launches": 7}}])
    assert classify(obs, "launches").outcome == "hung"


def test_signal_wins_over_a_final_record():
    obs = Observed(-11, False, [{"event": "final", "status": "ok", "counters": {"launches": 7}}])
    assert classify(obs, "launches").outcome == "crashed"


def test_killed_from_outside_is_not_the_bugs_fault():
    assert classify(Observed(-9, False, []), "launches").outcome == "harness_error"


def test_ok_record_with_failing_exit_status_is_not_believed():
    obs = Observed(1, False, [{"event": "final", "status": "ok", "counters": {"launches": 1}}])
    assert classify(obs, "launches").outcome == "harness_error"


def test_parse_json_lines_counts_garbage():
    events, bad = parse_json_lines(['{"event":"heartbeat"}', "hello", "[1,2]", ""])
    assert len(events) == 1 and bad == 2


def test_crash_record_is_found_among_other_stderr():
    text = 'warning\nGPUREPRO_CRASH {"signal":"SIGSEGV","signo":11}\n'
    assert find_crash_record(text)["signo"] == 11
