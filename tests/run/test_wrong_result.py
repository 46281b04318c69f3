"""The wrong_result outcome: a trial whose checked output differs from the reference is never a
survival, in the taxonomy's order; a float check passes within the case's tolerance and fails
outside it; claims about every trial / no trial; validate's tallies and checks."""

from __future__ import annotations

import json
import os
import sys

import pytest

from gpurepro.case import OutputCheck, load_case
from gpurepro.case import driver as kit
from gpurepro.errors import ManifestError
from gpurepro.run.classify import Observed, classify
from gpurepro.run.journal import read
from tests import pace
from tests.conftest import ROOT

CHECKED = ROOT / "tests" / "fixtures" / "checked_case" / "manifest.py"
EXACT = OutputCheck("exact")


def _final(status="ok", check=None, **extra):
    ev = {"event": "final", "status": status, "counters": {"launches": 3}, "errors": {}, **extra}
    if check is not None:
        ev["check"] = check
    return ev


def _wrong(n=6, bad=4):
    return {"kind": "exact", "n": n, "mismatches": bad, "first": [[0, 0, 9], [1, 0, 6]]}


def test_a_mismatch_is_a_wrong_result_whether_or_not_the_case_declares_a_check():
    for declared in (None, EXACT):
        c = classify(Observed(0, False, [_final(check=_wrong())]), "launches", declared)
        assert c.outcome == "wrong_result"
        assert c.detail == ("4 of 6 elements differ from the reference (exact); first: "
                            "[0] got 0, expected 9; [1] got 0, expected 6")
        assert c.check["mismatches"] == 4 and c.check["first"][0] == [0, 0, 9]


def test_the_precedence_a_crash_a_cuda_error_and_a_hang_come_first():
    wrong = _wrong()
    crashed = Observed(-11, False, [_final(check=wrong)], crash={"signal": "SIGSEGV"})
    assert classify(crashed, "launches", EXACT).outcome == "crashed"
    error = _final("cuda_error", wrong, error="CUDA_ERROR_LAUNCH_FAILED", call="cuCtxSynchronize")
    c = classify(Observed(1, False, [error]), "launches", EXACT)
    assert (c.outcome, c.detail, c.call) == ("cuda_error", "CUDA_ERROR_LAUNCH_FAILED", "cuCtxSynchronize")
    assert c.check == wrong  # kept in the record all the same
    assert classify(Observed(None, True, [_final(check=wrong)]), "launches", EXACT).outcome == "hung"
    assert classify(Observed(4, False, [_final("hung", wrong)]), "launches", EXACT).outcome == "hung"


def test_a_case_that_checks_its_output_never_survives_without_a_check():
    right = {"kind": "exact", "n": 6, "mismatches": 0, "first": []}
    assert classify(Observed(0, False, [_final(check=right)]), "launches", EXACT).outcome == "survived"
    c = classify(Observed(0, False, [_final()]), "launches", EXACT)
    assert c.outcome == "harness_error" and "carries no check" in c.detail
    empty = {"kind": "exact", "n": 0, "mismatches": 0, "first": []}
    assert classify(Observed(0, False, [_final(check=empty)]), "launches", EXACT).outcome == "invalid"
    tol = {"kind": "tolerance", "n": 6, "mismatches": 0, "first": [], "rel": 1e-3, "abs": 0.0}
    c = classify(Observed(0, False, [_final(check=tol)]), "launches", EXACT)
    assert c.outcome == "harness_error" and "exact check" in c.detail
    c = classify(Observed(0, False, [_final(check=tol)]), "launches", OutputCheck("tolerance", rel=1e-6))
    assert c.outcome == "harness_error" and "looser" in c.detail
    broken = {"kind": "exact", "n": 2, "mismatches": 3, "first": []}
    assert classify(Observed(0, False, [_final(check=broken)]), "launches", EXACT).outcome == "harness_error"
    # No progress is still invalid first: a trial that launched nothing checked nothing.
    none = {"event": "final", "status": "ok", "counters": {"launches": 0}, "errors": {}}
    assert classify(Observed(0, False, [none]), "launches", EXACT).outcome == "invalid"


def test_a_float_check_passes_within_the_tolerance_and_fails_outside():
    expected = [1.0, 2.0, 3.0]
    assert kit.compare([1.0, 2.0 * (1 + 1e-9), 3.0], expected, rel=1e-6)["mismatches"] == 0
    outside = kit.compare([1.0, 2.0 * (1 + 1e-3), 3.0], expected, rel=1e-6)
    assert outside["mismatches"] == 1 and outside["first"] == [[1, 2.002, 2.0]]
    assert outside["kind"] == "tolerance" and outside["rel"] == 1e-6
    assert kit.compare([1.0, 2.0, 3.0001], expected, abs_tol=1e-3)["mismatches"] == 0
    assert kit.compare([1, 2], [1, 2, 3])["first"] == [[2, None, 3]]
    merged = kit.merge_checks([kit.compare([0, 1], [0, 2]), kit.compare([5, 1], [0, 2])])
    assert merged == {"kind": "exact", "n": 4, "mismatches": 3,
                      "first": [[1, 1, 2], [2, 5, 0], [3, 1, 2]]}


def test_the_manifest_field_is_checked():
    from gpurepro.case.load import _check_output_check

    class Fake:
        check = OutputCheck("exact", rel=1e-3)
    with pytest.raises(ManifestError, match="check"):
        _check_output_check(Fake, "manifest.py")
    Fake.check = OutputCheck("tolerance")
    with pytest.raises(ManifestError, match="rel or abs"):
        _check_output_check(Fake, "manifest.py")
    Fake.check = OutputCheck("fuzzy", rel=1.0)
    with pytest.raises(ManifestError, match="check.kind"):
        _check_output_check(Fake, "manifest.py")


@pytest.fixture(scope="module")
def checked_run(tmp_path_factory):
    """Every mode of the checked case, two trials each, through the harness's run stage."""
    from gpurepro.building.artifacts import build_case

    build_case(load_case(CHECKED, ROOT), "host", ROOT, ROOT / "build" / "tests")
    journal = tmp_path_factory.mktemp("checked") / "run.journal.jsonl"
    done = pace.run(
        [sys.executable, "-m", "gpurepro", "run", str(CHECKED.relative_to(ROOT)), "--trials", "2",
         "--journal", str(journal), "--no-record", "--build-dir", "build/tests"],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode in (0, 1), done.stderr  # 1: the loose and nocheck arms are harness errors
    return read(journal)


def test_every_mode_is_recorded_as_it_should(checked_run):
    by_arm: dict[str, set[str]] = {}
    for t in checked_run.trials:
        by_arm.setdefault(t["arm"], set()).add(t["outcome"])
    assert by_arm == {"right": {"survived"}, "within": {"survived"}, "outside": {"wrong_result"},
                      "nocheck": {"harness_error"}, "empty": {"invalid"},
                      "loose": {"harness_error"}, "error-and-wrong": {"cuda_error"}}
    wrong = next(t for t in checked_run.trials if t["arm"] == "outside")
    assert wrong["check"]["mismatches"] == 3 and wrong["check"]["n"] == 48
    assert [m[0] for m in wrong["check"]["first"]] == [5, 21, 37]  # one per launch, in order
    assert wrong["detail"].startswith("3 of 48 elements differ from the reference (tolerance)")


def test_the_document_tallies_decides_and_validates(checked_run, tmp_path):
    pytest.importorskip("scipy")
    from gpurepro.record.document import build_document
    from gpurepro.record.validation import validation_errors

    case = load_case(CHECKED, ROOT)
    doc = build_document(case, checked_run.header, checked_run.trials, ROOT)
    assert doc["case"]["check"] == {"kind": "tolerance", "rel": 1e-6, "abs": 0.0}
    assert validation_errors(doc) == []
    s = doc["summary"]
    assert s["outside"]["outcomes"] == {"wrong_result": 2} and s["outside"]["failures"] == 2
    assert s["outside"]["n_valid"] == 2 and s["right"]["failures"] == 0
    assert s["outside"]["proportion"]["method"] == "clopper-pearson"
    claims = {c["name"]: c for c in doc["claims"]}
    assert claims["right-never-wrong"]["bound"] == "below"
    assert claims["right-never-wrong"]["test"] == "binomial share (below)"
    assert claims["right-fails-less"]["unit"] == "trial"
    assert claims["right-fails-less"]["test"] == "Fisher's exact test on trials"
    assert "is not decided (0 of 2 trials)" in claims["right-never-wrong"]["sentence"]
    # Validation sees through a wrong_result without its check, and a survival without one.
    bad = json.loads(json.dumps(doc))
    t = next(t for t in bad["trials"] if t["outcome"] == "wrong_result")
    del t["check"]
    assert any("check" in e for e in validation_errors(bad))
    bad = json.loads(json.dumps(doc))
    t = next(t for t in bad["trials"] if t["outcome"] == "survived")
    t["check"]["mismatches"] = 1
    assert any("no mismatch in a non-empty check expected" in e for e in validation_errors(bad))


def test_every_trial_and_no_trial_are_decided_with_enough_trials():
    pytest.importorskip("scipy")
    from gpurepro.analyze.claims import evidence, sentence
    from gpurepro.case import Claim

    wrong = [{"arm": "bad", "outcome": "wrong_result", "exposure": 3}] * 12
    right = [{"arm": "good", "outcome": "survived", "exposure": 3}] * 12
    every = Claim("every", arm="bad", kind="outcome", outcome="wrong_result", share=0.5)
    none = Claim("none", arm="good", kind="outcome", outcome="wrong_result", share=0.5, bound="below")
    boundary = Claim("b", arm="bad", reference="good", kind="higher", unit="trial")
    failures = ("wrong_result",)
    e = evidence(every, "", wrong, failures, 1e6)
    assert e.direction == "supported" and e.p_value == pytest.approx(2 * 0.5 ** 12)
    e = evidence(none, "", right, failures, 1e6)
    assert e.direction == "supported" and e.p_value == pytest.approx(2 * 0.5 ** 12)
    record = {"decision": "supported", "look": 1, "test": e.test, "p_value": e.p_value,
              "numbers": e.numbers}
    assert sentence(none, None, record, 1e6, "launches", 0.01).startswith(
        "good ends as wrong_result in 0 of 12 trials (fewer than 50%; 95% CI of the share 0–0.265)")
    e = evidence(boundary, "good", wrong + right, failures, 1e6)
    assert e.direction == "supported" and e.test == "Fisher's exact test on trials"
    assert e.p_value < 1e-5  # 2 / C(24, 12)


def test_the_report_the_forest_plot_compare_and_the_issue_body(checked_run, tmp_path):
    pytest.importorskip("matplotlib")
    from gpurepro.record.document import build_document
    from gpurepro.report import compare as cmp
    from gpurepro.report.comment import issue_body
    from gpurepro.report.forest import forest_figure, forest_headline
    from gpurepro.report.markdown import markdown

    doc = build_document(load_case(CHECKED, ROOT), checked_run.header, checked_run.trials, ROOT)
    md = markdown(doc)
    assert "### Wrong results" in md
    assert "| `outside` | 2 / 2 |" in md and "[5] 10.01 ≠ 10;" in md
    assert forest_headline(doc).startswith("Forest plot: share of failing trials per arm")
    fig, rows = forest_figure(doc)
    by_arm = {r["arm"]: r for r in rows}
    assert by_arm["outside"]["estimate"] == 1.0 and by_arm["right"]["zero"]
    assert fig.axes[0].get_xscale() == "linear"
    body = issue_body(doc, tmp_path / "r.json")
    # The wrong answers in the head, in the place of a crash signature; no survival plot.
    head = body.split("<details>")[0]
    assert "- **Wrong results:** " in head and "Crash signature" not in body
    assert "Kaplan–Meier" not in body
    assert "share of failing trials (95% CI)" in body
    result = cmp.compare([doc, doc], ["a.json", "b.json"])
    assert "odds ratio of failing trials (Fisher exact; a trial is the unit)" in json.dumps(result.to_json())
