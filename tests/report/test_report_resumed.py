"""A resumed run says so: the report's Resumed section lists each resume with the device it found
and the trials that started after it, and the comment's environment line says when trials ran
on another device than the one it names (the H200 runs of bench/resume_on_gpu.sh)."""

from __future__ import annotations

import json

from gpurepro.report.comment import environment_line
from gpurepro.report.markdown import markdown, resumes
from tests.conftest import ROOT

RESULTS = ROOT / "results" / "tile_unload_race"
SAME = RESULTS / "20261201T203810Z-14453d_NVIDIA-H200_redacted.json"
OTHER = RESULTS / "20261201T142454Z-resumed_NVIDIA-H200_redacted.json"
NEVER = RESULTS / "20261201T102114Z_NVIDIA-H200_redacted.json"


def _doc(path):
    return json.loads(path.read_text())


def _section(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("### Resumed")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("#") or lines[i].startswith("!["))
    return lines[start:end]


def test_a_resume_on_the_journals_own_device():
    doc = _doc(SAME)
    [r] = resumes(doc)
    assert not r.resume.other_device and r.trials == [2, 3, 4, 5]
    section = _section(markdown(doc))
    assert any("| the journal's | 4: indices 2–5 |" in line for line in section)
    assert not any("--other-device" in line for line in section)
    assert "Resumed" not in environment_line(doc)


def test_a_resume_on_another_device_names_which_trials_ran_there():
    doc = _doc(OTHER)
    [r] = resumes(doc)
    assert r.resume.other_device and r.trials == [2, 3, 4, 5]
    assert r.resume.device is not None and r.resume.device.uuid != doc["device"]["uuid"]
    section = _section(markdown(doc))
    assert any("**another device**: uuid" in line and "4: indices 2–5" in line for line in section)
    assert any("ran on the device that resume found" in line for line in section)
    line = environment_line(doc)
    assert "Resumed with `--other-device`" in line and "4 trial(s)" in line and "whose uuid" in line
    assert r.resume.device.uuid not in line  # the comment names no machine


def test_two_resumes_split_the_trials_between_them():
    doc = _doc(OTHER)
    first = doc["resumed"][0]
    second = {**first, "at": doc["trials"][4]["started_at"], "other_device": False, "differs": []}
    doc["resumed"] = [first, second]
    assert [r.trials for r in resumes(doc)] == [[2, 3], [4, 5]]


def test_a_run_never_resumed_has_no_section():
    doc = _doc(NEVER)
    assert not doc.get("resumed") and resumes(doc) == []
    assert "### Resumed" not in markdown(doc)
