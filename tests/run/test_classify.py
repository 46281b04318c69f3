"""Classification rules on synthetic observations (no processes)."""

from gpurepro.run.classify import Observed, classify, find_crash_record, parse_json_lines


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


def test_final_hung_is_hung_with_its_reason():
    obs = Observed(4, False, [{"event": "final", "status": "hung", "counters": {"launches": 3},
                               "reason": "1 of 2 worker threads still running 10 s after the stop"}])
    c = classify(obs, "launches")
    assert (c.outcome, c.detail, c.call) == ("hung", obs.events[0]["reason"], None)


def test_cuda_error_keeps_the_failing_call():
    obs = Observed(1, False, [{"event": "final", "status": "cuda_error", "counters": {"launches": 3},
                               "error": "CUDA_ERROR_ILLEGAL_ADDRESS", "call": "cuCtxSynchronize"}])
    c = classify(obs, "launches")
    assert (c.outcome, c.detail, c.call) == ("cuda_error", "CUDA_ERROR_ILLEGAL_ADDRESS",
                                             "cuCtxSynchronize")
    unsupported = Observed(3, False, [{"event": "final", "status": "unsupported",
                                       "reason": "no binary", "call": "cuModuleLoadData"}])
    assert classify(unsupported, "launches").call == "cuModuleLoadData"
    assert classify(Observed(0, False, [{"event": "final", "status": "ok",
                                         "counters": {"launches": 1}}]), "launches").call is None


def test_stdout_tail_is_bounded_and_keeps_every_kind_of_line():
    from gpurepro.run.classify import StdoutTail

    seen: list[str] = []
    tail = StdoutTail(limit=50)
    keep = tail.hook(seen.append)
    for i in range(100):
        keep(f'{{"event":"heartbeat","n":{i}}}\n')
    keep("not json\n")
    assert len(seen) == 101  # the callback it wraps still gets every line
    text = tail.text()
    assert len(text) <= 50 and text.endswith('"n":99}\nnot json\n')
    assert StdoutTail().text() == ""


def test_trial_record_stores_call_and_stdout_tail(fake_case, fake_build, root):
    import json

    import jsonschema

    from gpurepro.case import TrialBudget
    from gpurepro.model.plan import PlannedTrial
    from gpurepro.run.execute import RunOptions, execute_trial

    _, index = fake_build
    opts = RunOptions(budget=TrialBudget(duration_s=0.3, max_exposure=0, timeout_s=3.0))
    schema = json.loads((root / "schema" / "result.schema.json").read_text())
    trial_schema = {"$defs": schema["$defs"], "$ref": "#/$defs/trial"}
    records = {mode: execute_trial(fake_case, PlannedTrial(0, mode.replace("_", "-"), 0),
                                   {"mode": mode}, index, root, opts, gpu=None, worker=0)
               for mode in ("cuda_error", "garbage", "ok")}
    err = records["cuda_error"]
    assert (err["outcome"], err["detail"], err["call"]) == (
        "cuda_error", "CUDA_ERROR_LAUNCH_FAILED", "cuCtxSynchronize")
    last = json.loads(err["stdout_tail"].splitlines()[-1])
    assert last["event"] == "final" and last["call"] == "cuCtxSynchronize"
    assert "this is not JSON" in records["garbage"]["stdout_tail"]  # unparsed lines kept
    assert records["ok"]["call"] is None and len(records["ok"]["stdout_tail"]) <= 2000
    for rec in records.values():
        jsonschema.Draft202012Validator(trial_schema).validate(rec)
