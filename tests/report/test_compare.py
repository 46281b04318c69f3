"""`gpurepro compare`: committed tile_unload_race documents side by side, claims that flipped,
what differs, and one line with exit 2 for documents that cannot be compared."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from gpurepro.analyze import stats
from gpurepro.errors import CompareError
from gpurepro.report.compare import compare, markdown
from tests import invoke

ROOT = Path(__file__).resolve().parents[2]
TILE = ROOT / "results" / "tile_unload_race"
JOBS1 = TILE / "20261129T235221Z_NVIDIA-H200_redacted.json"  # --jobs 1 (claims re-recorded later)
JOBS2 = TILE / "20261130T001736Z_NVIDIA-H200_redacted.json"  # --jobs 2 (claims re-recorded later)
FIXED = TILE / "20261130T031305Z_NVIDIA-H200_redacted.json"  # claims, fixed design
UNTIL = TILE / "20261130T033104Z_NVIDIA-H200_redacted.json"  # claims, --until-decided
TCGEN = ROOT / "results" / "tcgen05_alloc_order" / "20261130T000018Z_NVIDIA-H200_redacted.json"
BENCH = sorted((ROOT / "results" / "bench").glob("loop_rate_*.json"))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return invoke.gpurepro(*args)


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_jobs_1_against_jobs_2_prints_every_arm_and_the_rate_ratio():
    done = _cli("compare", str(JOBS1), str(JOBS2))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    a, b = _load(JOBS1), _load(JOBS2)
    for arm in a["summary"]:
        assert f"| `{arm}` |" in out
    # The baseline's ratio is the harness's own exact conditional test, B over A.
    sa, sb = a["summary"]["baseline"], b["summary"]["baseline"]
    rr = stats.rate_ratio(sb["failures"], sb["exposure"]["total"], sa["failures"], sa["exposure"]["total"])
    result = compare([a, b], [str(JOBS1), str(JOBS2)])
    got = result.arms["baseline"].against_A[0].test
    assert got.estimate == pytest.approx(rr["estimate"])
    assert got.p_value == pytest.approx(rr["p_value"])
    assert got.ci95 == pytest.approx(rr["ci95"])
    assert got.estimate is not None and 3 < got.estimate < 5  # 53 vs 225 per 10^6 cycles
    # What could explain it: --jobs, among the recorded differences.
    differs = {d.name: d.values for d in result.differs}
    assert differs["jobs (trials at a time per GPU)"] == ["1", "2"]
    assert "driver" not in differs and "driver" in result.same
    assert "| jobs (trials at a time per GPU) | 1 | 2 |" in out
    # Both runs decide the same claims the same way where both decided them.
    assert not result.flipped


def _without_claims(doc: dict) -> dict:
    """A document as recorded before the harness decided claims (it has no `claims`)."""
    doc = copy.deepcopy(doc)
    del doc["claims"]
    return doc


def test_documents_without_claims_are_named_and_nothing_flips():
    a, b = _without_claims(_load(JOBS1)), _without_claims(_load(JOBS2))
    result = compare([a, b], ["a", "b"])
    assert result.claims.without_claims == ["A", "B"]
    assert "carries no claims" in markdown(result)
    assert not result.flipped


def test_the_json_is_the_typed_comparison_written_out_with_its_keys_in_order():
    """`compare --json` prints RunComparison.to_json: the keys scripts read, in a fixed order."""
    done = _cli("compare", str(JOBS1), str(JOBS2), "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == compare([_load(JOBS1), _load(JOBS2)], [str(JOBS1), str(JOBS2)]).to_json()
    assert list(printed) == ["case", "exposure", "baseline", "runs", "arms", "claims",
                             "verdict_changes", "environment", "gpu_conditions", "flipped"]
    baseline = printed["arms"]["baseline"]
    assert list(baseline["runs"][0]) == ["n", "n_valid", "failures", "exposure", "rate",
                                         "rate_ci95", "proportion", "proportion_ci95",
                                         "coarse_failures"]
    assert list(baseline["against_A"][0]) == ["run", "test", "estimate", "ci95", "p_value"]
    assert list(printed["runs"][0])[-1] == "verdict"


def test_coarse_counter_arm_is_compared_per_trial():
    result = compare([_load(JOBS1), _load(JOBS2)], ["a", "b"])
    as_filed = result.arms["as-filed"]
    first = as_filed.runs[0]
    assert first is not None and first.coarse_failures > 0
    assert str(as_filed.against_A[0].test.test).startswith("odds ratio of failing trials")


def test_newest_two_show_the_flipped_claim_and_fail_on_change():
    done = _cli("compare", str(FIXED), str(UNTIL))
    assert done.returncode == 0, done.stderr
    assert "| `other-tile-kernel-crashes` | supported" in done.stdout
    assert "flipped" in done.stdout
    gated = _cli("compare", str(FIXED), str(UNTIL), "--fail-on-change")
    assert gated.returncode == 1
    assert gated.stdout == done.stdout
    as_json = _cli("compare", str(FIXED), str(UNTIL), "--json")
    assert as_json.returncode == 0
    parsed = json.loads(as_json.stdout)
    assert parsed["flipped"] is True
    # The sequential run (B) spent its looks on the claims of its day; the claims added since
    # cannot be decided on it afterwards, while the fixed-size run (A) decides them at its one look.
    assert parsed["claims"]["flips"] == [
        f"{name}: supported in A, not_decided in B"
        for name in ("always-unload-crashes", "distinct-cubins-crashes", "other-tile-kernel-crashes",
                     "library-api-crashes", "baseline-crossings-live")]
    # Re-recorded, each document names the commit its manifest was found at: two commits.
    assert [d["name"] for d in parsed["environment"]["differs"]] == ["GPU UUID", "design",
                                                                     "gpurepro commit"]


def test_a_document_against_itself_changes_nothing():
    doc = _load(UNTIL)
    result = compare([doc, copy.deepcopy(doc)], ["a", "b"])
    assert not result.flipped and not result.claims.changed
    assert result.claims.unchanged == len(doc["claims"])
    assert result.differs == []
    assert not result.verdict_changes
    assert "No claim changed its decision" in markdown(result)


@pytest.mark.parametrize("before,after,change,flip", [
    ("supported", "contradicted", "flipped", True),
    ("contradicted", "supported", "flipped", True),
    ("supported", "not_decided", "flipped", True),
    ("not_decided", "supported", "newly decided", False),
])
def test_what_counts_as_a_flip(before, after, change, flip):
    a = _load(UNTIL)
    b = copy.deepcopy(a)
    a["claims"][0]["decision"] = before
    b["claims"][0]["decision"] = after
    b["verdict"]["status"] = "not_reproduced"
    result = compare([a, b], ["a", "b"])
    [changed] = result.claims.changed
    assert changed.claim == a["claims"][0]["name"]
    assert changed.changes[0].change == change
    assert result.flipped is flip
    # As compare --json writes it.
    assert ({"run": "B", "field": "status", "from": "reproduced", "to": "not_reproduced"}
            in result.to_json()["verdict_changes"])


def test_three_documents_each_against_the_first():
    docs = [_without_claims(_load(JOBS1)), _without_claims(_load(JOBS2)), _load(UNTIL)]
    result = compare(docs, ["a", "b", "c"])
    assert [c.run for c in result.arms["baseline"].against_A] == ["B", "C"]
    assert result.claims.without_claims == ["A", "B"]
    text = markdown(result)
    assert "C vs A" in text


def test_output_is_deterministic():
    first = _cli("compare", str(FIXED), str(UNTIL), "--json").stdout
    assert first == _cli("compare", str(FIXED), str(UNTIL), "--json").stdout


@pytest.mark.parametrize("paths,needle", [
    ((FIXED, TCGEN), "documents of one case"),
    ((FIXED,), "at least two"),
    ((FIXED, *BENCH[:1]), "benchmark document"),
])
def test_documents_that_cannot_be_compared_are_one_line_and_exit_2(paths, needle):
    done = _cli("compare", *map(str, paths))
    assert done.returncode == 2
    assert needle in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_compare_error_for_another_case():
    with pytest.raises(CompareError):
        compare([_load(FIXED), _load(TCGEN)], ["a", "b"])


def test_each_design_is_named_as_it_ran_never_with_a_missing_number():
    from gpurepro.report.compare import design

    decisive = TILE / "20261205T110123Z-c78027_NVIDIA-H100-80GB-HBM3_redacted.json"
    assert design(_load(decisive)) == ("decisive (max 25 per arm, looks at 12, 18, 27, ..., 200 "
                                       "valid trials, alpha 0.05)")
    assert design(_load(UNTIL)) == "until decided (max 10, look every 5, alpha 0.05)"
    assert design(_load(FIXED)).startswith("fixed, ")
    out = markdown(compare([_load(UNTIL), _load(decisive)], [UNTIL, decisive]))
    assert "None" not in out and "decisive (max 25 per arm" in out
