"""Every rendering of a run's claims (report, issue comment, compare, results index, forest plot)
keeps the two families apart: the family-wise statement counts the confirmatory claims only and
states the design's alpha spending as the run journaled it, and an exploratory decision is
never shown as a plain one."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from gpurepro.model.result import Result
from gpurepro.report import families
from gpurepro.report.comment import issue_body
from gpurepro.report.compare import compare
from gpurepro.report.compare import markdown as compare_markdown
from gpurepro.report.forest import forest_headline
from gpurepro.report.markdown import claims_table, markdown

ROOT = Path(__file__).resolve().parents[2]
TILE = ROOT / "results" / "tile_unload_race"
# The main job's run: the decisive design, 8 confirmatory claims, baseline-crossings-live
# exploratory and supported.
MAIN = TILE / "20261202T063128Z-361562_NVIDIA-H200_redacted.json"
# A fixed run whose exploratory never-unload was supported, and its resumed run where it was not.
FIXED = TILE / "20261201T142454Z_NVIDIA-H200_redacted.json"
RESUMED = TILE / "20261201T142454Z-resumed_NVIDIA-H200_redacted.json"
UNTIL = TILE / "20261130T033104Z_NVIDIA-H200_redacted.json"  # --until-decided


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _exploratory_supported(doc: dict) -> str:
    return next(c["name"] for c in doc["claims"]
                if c.get("family") == "exploratory" and c["decision"] == "supported")


def test_the_claims_table_counts_only_confirmatory_claims_in_the_family_wise_statement():
    doc = _load(MAIN)
    n = len(families.confirmatory(Result.of(doc).claims))
    assert n == len(doc["claims"]) - 1
    table = claims_table(doc)
    statement = table.split("\n\n")[1]
    assert f"The {n} confirmatory claim(s) are decided under one family-wise error rate" in statement
    assert f"over {len(doc['claims'])} claims" not in table
    # The exploratory claim sits under its own heading and statement, labelled as such.
    confirmatory_part, exploratory_part = table.split("#### Exploratory claims")
    name = _exploratory_supported(doc)
    assert f"`{name}`" not in confirmatory_part
    row = next(line for line in exploratory_part.splitlines() if f"`{name}`" in line)
    assert "**supported (exploratory)** (end)" in row
    assert "outside the family-wise error rate above" in exploratory_part
    assert "beside the main question" in exploratory_part


def test_the_decisive_design_is_described_by_its_journaled_looks_and_alphas():
    doc = _load(MAIN)
    stopping = doc["plan"]["options"]["stopping"]
    statement = families.design_statement(doc)
    assert ", ".join(map(str, stopping["look_at"])) in statement
    assert f"{len(stopping['look_at'])} look(s)" in statement
    assert "alpha 0.025 at the first and 0.00357 at each later one" in statement
    assert (f"the run took {stopping['looks_taken']} of them, the last at "
            f"{stopping['last_look_at']} valid trials") in statement
    assert "per look" not in statement and "one look, at the end" not in statement


def test_a_decisive_design_that_halves_its_alpha_states_each_looks_alpha():
    from gpurepro.analyze.claims import DecisiveDesign

    doc = copy.deepcopy(_load(MAIN))
    stopping = doc["plan"]["options"]["stopping"]
    design = DecisiveDesign.from_description({**stopping, "spending": "halving",
                                              "supported_share": 0.9})
    stopping.update(design.describe())
    statement = families.design_statement(doc)
    assert "alpha 0.025, 0.0125, 0.00625, 0.00313, 0.00156, 7.81e-04, 3.91e-04, 3.91e-04 at them in turn" in statement
    assert "each later look half of the one before, the last what is left" in statement
    assert "at each later one" not in statement
    assert "each claim's level is split 0.9 to the direction it states and 0.1 to the opposite" in statement
    # A run that journaled neither is stated as it ran.
    assert "is split" not in families.design_statement(_load(MAIN))
    assert (f"the run took {stopping['looks_taken']} of them, the last at "
            f"{stopping['last_look_at']} valid trials") in statement


def test_other_designs_are_described_as_they_ran():
    until = families.design_statement(_load(UNTIL))
    assert re.search(r"2 look\(s\), when the slowest arm still needed reaches \d+ valid trials, "
                     r"and at the end, alpha / 2 = 0.025 at each", until)
    fixed = families.design_statement(_load(FIXED))
    assert "one look, at the end of the run, at alpha 0.05" in fixed


def test_the_report_lists_the_exploratory_sentences_apart_from_the_verdict():
    doc = _load(MAIN)
    text = markdown(doc)
    verdict = text.split("### Claims")[0]
    assert "**Exploratory** (outside the family-wise error rate" in verdict
    name = _exploratory_supported(doc)
    bullets = [line for line in verdict.splitlines() if f"claim {name}" in line]
    assert bullets and all("Exploratory (" in b and "exploratory, decided at the end" in b
                           for b in bullets)


def test_the_issue_comment_labels_exploratory_decisions():
    doc = _load(MAIN)
    body = issue_body(doc, MAIN)
    n = len(families.confirmatory(Result.of(doc).claims))
    assert f"Claims ({n} of {n} confirmatory claims decided; 1 of 1 exploratory)" in body
    assert "<summary>Exploratory (1; outside the family-wise error rate" in body
    assert "supported (exploratory)" in body


def test_compare_shows_an_exploratory_decision_as_exploratory():
    a, b = _load(FIXED), _load(RESUMED)
    name = _exploratory_supported(a)
    result = compare([a, b], [FIXED, RESUMED])
    changed = next(c for c in result.claims.changed if c.claim == name)
    assert changed.families == {"A": "exploratory", "B": "exploratory"}
    claims = compare_markdown(result).split("### Claims")[1]
    row = next(line for line in claims.splitlines() if line.startswith(f"| `{name}`"))
    assert "supported (exploratory)" in row
    assert any("(exploratory) in A" in f for f in result.claims.flips)
    # The same decision, moved from one family to the other, is a change too.
    c = copy.deepcopy(a)
    for claim in c["claims"]:
        if claim["name"] == name:
            claim.pop("family")
    moved = compare([a, c], [FIXED, FIXED])
    change = next(x for x in moved.claims.changed if x.claim == name)
    assert change.changes[0].change == "now confirmatory"


def test_the_forest_headline_counts_the_families_apart():
    doc = _load(MAIN)
    n = len(families.confirmatory(Result.of(doc).claims))
    assert f"{n} of {n} confirmatory claims decided; 1 of 1 exploratory" in forest_headline(doc)
