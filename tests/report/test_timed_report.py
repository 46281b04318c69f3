"""A timed case's reports say what its claims on times found: the comment's head names the arms
decided slower and the same with their ratios, and the committed bisection's boundaries with
the SASS facts that changed there (a hypothesis where none did); the arms table carries the time
per launch and the ratio to the baseline; the times picture is drawn for a timed document and
for no other. Read from the committed FA3 document, and from a copy whose times are changed, so
that the words follow the data."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from gpurepro.report.comment import issue_body
from gpurepro.report.timed import bisection_bullet, head_bullet, is_timed, ratio_to_baseline
from gpurepro.report.times_plot import times_plot

ROOT = Path(__file__).resolve().parents[2]
FA3 = ROOT / "results" / "fa3_wgmma_wait" / "20261204T122215Z-32bea2_NVIDIA-H200_redacted.json"
TILE = ROOT / "results" / "tile_unload_race" / "20261202T123450Z-bc7d24_NVIDIA-H200_redacted.json"
H100 = ROOT / "results" / "fa3_wgmma_wait" / "20261205T093214Z-379cb7_NVIDIA-H100-80GB-HBM3_redacted.json"


def _doc(path: Path = FA3) -> dict:
    return json.loads(path.read_text())


def test_the_head_names_the_slower_and_the_same_arms_and_the_bisection_boundaries():
    doc = _doc()
    head = issue_body(doc, FA3, url="").split("<details>")[0]
    assert "**Times**" in head
    slower = [c for c in doc["claims"] if c["kind"] == "slower" and c["decision"] == "supported"]
    assert slower, "the committed FA3 run decides a slower arm"
    for c in slower:
        assert f"`{c['arm']}` {c['numbers']['ratio']:.3f}×" in head
    bisect = json.loads(next(FA3.parent.glob("bisect_*.json")).read_text())
    for boundary in bisect["boundaries"]["pinned"]:
        assert f"{boundary['between'][0]} → {boundary['between'][1]}" in head
    # No watched fact changed at the committed boundaries: the cause is labelled a hypothesis.
    assert "hypothesis" in bisection_bullet(doc, FA3)
    # A crash or wrong-result bullet only where a trial failed.
    assert "**Crash signature:**" not in head


def test_the_bullet_follows_the_claims_not_the_case():
    doc = _doc()
    changed = copy.deepcopy(doc)
    for c in changed["claims"]:
        if c["kind"] == "slower":
            c["decision"] = "not_decided"
    bullet = head_bullet(changed) or ""
    assert "slower than" not in bullet
    assert "slower than" in (head_bullet(doc) or "")


def test_the_ratio_is_computed_from_the_trials():
    doc = _doc()
    arm = next(a for a in doc["summary"] if a != doc["case"]["baseline"])
    before = ratio_to_baseline(doc, arm)["ratio"]
    doubled = copy.deepcopy(doc)
    for t in doubled["trials"]:
        if t["arm"] == arm:
            timing = (t.get("observations") or {}).get("timing") or {}
            timing["values"] = [v * 2 for v in timing.get("values") or []]
    after = ratio_to_baseline(doubled, arm)["ratio"]
    assert abs(after / before - 2) < 1e-6, (before, after)


def test_the_times_picture_is_drawn_for_a_timed_document_only(tmp_path):
    assert is_timed(_doc()) and not is_timed(_doc(TILE))
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    assert times_plot(_doc(), png, svg)
    assert png.read_bytes().startswith(b"\x89PNG") and b"<svg" in svg.read_bytes()[:400]
    assert not times_plot(_doc(TILE), tmp_path / "u.png", tmp_path / "u.svg")
    assert not (tmp_path / "u.png").exists()
    assert "**Times**" not in issue_body(_doc(TILE), TILE, url="")


def test_a_claim_against_another_arm_shows_its_own_ratio_in_the_arms_table():
    from gpurepro.report.timed import arms_rows

    control = ROOT / "results" / "fa3_wgmma_wait" / (
        "20261205T093214Z-379cb7_NVIDIA-H100-80GB-HBM3_redacted.json")
    doc = _doc(control)
    claims = {c["name"]: c for c in doc["claims"]}
    _, rows = arms_rows(doc, ["serialized", "serialized-12-4-131"])
    # Against the baseline: the claim alone, its ratio is the column beside it.
    assert rows[0][2] == f"`serialized-slower` {claims['serialized-slower']['decision']}"
    # Against `serialized`: the claim's own ratio and reference, not the baseline's.
    mine = claims["serialized-12-4-131-same"]
    assert rows[1][2] == (f"`serialized-12-4-131-same` {mine['decision']}: "
                          f"{mine['numbers']['ratio']:.3f}× ({mine['numbers']['ratio_ci'][0]:.3f}"
                          f"–{mine['numbers']['ratio_ci'][1]:.3f}) `serialized`")


def test_a_timed_report_says_its_clocks_were_read_not_set_and_how_to_lock_them():
    from gpurepro.report.markdown import markdown
    from gpurepro.report.timed import clocks_section

    doc = json.loads(H100.read_text())
    text = markdown(doc)
    section = text[text.index("### GPU clocks"):].split("\n### ")[0]
    assert "The GPU's clocks were read, not set: each of the 132 timed trials" in section
    assert "SM clock 1980 MHz after" in section and "memory clock 2619 MHz after" in section
    assert "Clock event reasons after the repetitions: none in 132." in section
    assert "`nvidia-smi --lock-gpu-clocks=F,F`" in section and "`nvidia-smi --reset-gpu-clocks`" in section
    # A throttled trial is named by its reasons; a run whose trials read nothing says so.
    throttled = copy.deepcopy(doc)
    first = next(t for t in throttled["trials"] if (t.get("observations") or {}).get("conditions"))
    first["observations"]["conditions"]["after"]["clocks_event_reasons"] = 0x4 | 0x20
    assert "software power cap in 1, software thermal slowdown in 1" in clocks_section(throttled)[1]
    bare = copy.deepcopy(doc)
    for t in bare["trials"]:
        (t.get("observations") or {}).pop("conditions", None)
    assert "neither set nor read" in clocks_section(bare)[1]
    # An untimed case's report has no such section.
    untimed = json.loads((ROOT / "results" / "tile_unload_race" /
                          "20261205T110123Z-c78027_NVIDIA-H100-80GB-HBM3_redacted.json").read_text())
    assert clocks_section(untimed) == [] and "### GPU clocks" not in markdown(untimed)
