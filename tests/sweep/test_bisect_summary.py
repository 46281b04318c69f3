"""A case's committed bisections, summarized for its analyses and worded for its verdict
(gpurepro.sweep.summary): the newest search whose GPU stage ran, its boundaries with the SASS
facts and the first change of each watched kernel, and what the newest exhaustive one adds."""

from __future__ import annotations

import json
from pathlib import Path

from gpurepro.sweep import summary


def _doc(mode: str | None, runs: int) -> dict:
    def boundary(before: str, after: str, classes: list[str], present: bool) -> dict:
        return {"between": [before, after], "not_built_between": [], "classes": classes,
                "sass": {"watched": [{"fact": "k:IABS", "before": present, "after": not present}],
                         "kernels": {"k": {"changes": [{"a": ["IABS R0, R2"], "b": []},
                                                       {"a": ["X"], "b": ["Y"]}]},
                                     "other": {"changes": [{"a": ["Z"], "b": ["W"]}]}}}}
    return {"axis": {"package": "pkg", "versions": ">=1,<2"},
            "releases": [{"requested": f"1.{i}", **({"sha256": "s"} if i else {})}
                         for i in range(5)],
            "artifacts": {"a": {}, "b": {}},
            "runs": [{"status": "ran"}] * runs + [{"status": "ran", "same_as_point": 0}],
            "gpu": ({"status": "ran", "mode": mode, "device": {"name": "GPU X"}} if mode
                    else {"status": "not_run"}),
            "boundaries": {"pinned": [boundary("1.1", "1.2", ["passes", "fails"], True)],
                           "open": []}}


def _commit(root: Path, name: str, doc: dict) -> None:
    folder = root / "results" / "case"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(doc))


def test_the_newest_search_that_ran_with_what_the_exhaustive_one_adds(tmp_path):
    _commit(tmp_path, "bisect_ax_20260101T000000Z_GPU.json", _doc("bisect", 2))
    _commit(tmp_path, "bisect_ax_20260102T000000Z_GPU.json", _doc("exhaustive", 4))
    _commit(tmp_path, "bisect_ax_20260103T000000Z_GPU.json", _doc(None, 0))  # not run on a GPU
    _commit(tmp_path, "bisect_ax-other_20260104T000000Z_GPU.json", _doc("bisect", 9))  # another axis
    got = summary.committed(tmp_path, "case", "ax", ("k",))
    assert got["document"] == "results/case/bisect_ax_20260101T000000Z_GPU.json"
    assert (got["releases"], got["built"], got["distinct"], got["runs"]) == (5, 4, 2, 2)
    assert got["boundaries"][0]["k_changes"] == [{"a": ["IABS R0, R2"], "b": []}]
    assert "other_changes" not in got["boundaries"][0]
    assert got["exhaustive"] == {"document": "results/case/bisect_ax_20260102T000000Z_GPU.json",
                                 "same_boundaries": True, "runs": 4}
    sentences, named = summary.sentences(got)
    assert sentences == [
        "Bisection (results/case/bisect_ax_20260101T000000Z_GPU.json): every pkg release PyPI "
        "lists in >=1,<2 (5, 4 built, 2 distinct cubins), 2 of them run on GPU X (bisect); "
        "1 boundary.",
        "An exhaustive bisection (results/case/bisect_ax_20260102T000000Z_GPU.json, every "
        "distinct cubin, 4 runs) pins the same boundaries.",
        "Boundary 1.1 → 1.2 (adjacent releases): passes → fails on the GPU; k IABS present → "
        "absent; `IABS R0, R2` became nothing."]
    assert named == ["1.1 → 1.2"]
    case_dir = tmp_path / "cases" / "case"
    case_dir.mkdir(parents=True)
    assert summary.analysis(case_dir, "ax", ("k",))({}) == got


def test_without_a_bisection_that_ran_there_is_nothing_to_say(tmp_path):
    _commit(tmp_path, "bisect_ax_20260103T000000Z_GPU.json", _doc(None, 0))
    got = summary.committed(tmp_path, "case", "ax", ("k",))
    assert got == {"available": False,
                   "reason": "no bisection document under results/case/ whose GPU stage ran"}
    assert summary.sentences(got) == ([], [])
