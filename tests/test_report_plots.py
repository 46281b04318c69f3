"""The report's pictures: the forest plot of the fake case, checked on the matplotlib figure."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro.report import DECISION_STYLE, forest_figure, forest_headline, forest_rows

FAKE = "tests/fixtures/fake_case/manifest.py"


@pytest.fixture(scope="module")
def fake_result(root, fake_build, tmp_path_factory) -> Path:
    build_dir, _ = fake_build
    out = tmp_path_factory.mktemp("forest")
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    proc = subprocess.run([sys.executable, "-m", "gpurepro", "run", FAKE,
                           "--arms", "crash,ok,abort,cuda-error", "--trials", "3", "--duration", "0.2",
                           "--seed", "3", "--out-dir", str(out), "--build-dir", str(build_dir)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return next(p for p in (out / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json"))


def _close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_forest_has_one_row_per_arm_and_a_marker_per_decision(fake_result):
    doc = json.loads(fake_result.read_text())
    fig, rows = forest_figure(doc)
    try:
        with_valid = [a for a, s in doc["summary"].items() if s["n_valid"] > 0]
        assert sorted(r["arm"] for r in rows) == sorted(with_valid) == ["abort", "crash", "cuda-error", "ok"]
        assert len({r["y"] for r in rows}) == len(rows)  # one row each
        assert rows[0]["arm"] == doc["case"]["baseline"]  # the reference on top
        decisions = {r["arm"]: r["decision"] for r in rows}
        assert decisions == {"crash": "no_claim", "ok": "supported", "abort": "not_decided",
                             "cuda-error": "not_decided"}
        ax = fig.axes[0]
        for r in rows:
            marker = r["artist"]
            assert marker in ax.lines
            assert marker.get_marker() == DECISION_STYLE[r["decision"]]["marker"]
            assert list(marker.get_ydata()) == [r["y"]]
        # ok never failed: drawn at its upper bound, open.
        ok = next(r for r in rows if r["arm"] == "ok")
        assert ok["zero"] and list(ok["artist"].get_xdata()) == [ok["hi"]]
        assert ok["artist"].get_markerfacecolor() == "white"
        # The legend names each decision drawn.
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        for d in set(decisions.values()):
            assert DECISION_STYLE[d]["label"] in legend
    finally:
        _close(fig)


def test_forest_marks_contradicted_and_leaves_out_arms_without_valid_trials(fake_result):
    doc = copy.deepcopy(json.loads(fake_result.read_text()))
    next(c for c in doc["claims"] if c["name"] == "abort-lower")["decision"] = "contradicted"
    doc["summary"]["cuda-error"]["n_valid"] = 0
    fig, rows = forest_figure(doc)
    try:
        assert [r["arm"] for r in rows if r["arm"] == "cuda-error"] == []
        abort = next(r for r in rows if r["arm"] == "abort")
        assert abort["decision"] == "contradicted" and abort["artist"].get_marker() == "X"
        _, left_out = forest_rows(doc)
        assert left_out and left_out[0].startswith("cuda-error (no valid trial")
        assert any("Not drawn: cuda-error" in t.get_text() for t in fig.texts)
    finally:
        _close(fig)


def test_report_writes_forest_png_svg_and_references_it_with_a_headline(root, fake_result):
    stem = fake_result.with_suffix("")
    png, svg = Path(f"{stem}.forest.png"), Path(f"{stem}.forest.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg.read_bytes()[:2000]
    md = fake_result.with_suffix(".md").read_text()
    doc = json.loads(fake_result.read_text())
    assert f"![{forest_headline(doc)}]({png.name})" in md
    assert "1 of 4 claims decided" in forest_headline(doc)
    assert f"({stem.name}.png)" in md  # the survival plot is kept


def test_no_forest_when_no_arm_has_valid_trials(fake_result):
    doc = copy.deepcopy(json.loads(fake_result.read_text()))
    for s in doc["summary"].values():
        s["n_valid"] = 0
    assert forest_figure(doc) is None


def test_compare_paired_forest_has_a_row_per_run_and_arm(root, tmp_path):
    from gpurepro.compare import RUN_STYLE, compare
    from gpurepro.compare import forest_figure as paired
    from gpurepro.compare import plot as paired_plot

    paths = [root / "results/tile_unload_race/20261130T031305Z_NVIDIA-H200_redacted.json",
             root / "results/tile_unload_race/20261130T032141Z_NVIDIA-H200_redacted.json"]
    result = compare([json.loads(p.read_text()) for p in paths], paths)
    fig, rows = paired(result)
    try:
        drawn = {(r["arm"], r["run"]) for r in rows}
        # as-filed's counter is coarse in both runs: left out, the 12 other arms drawn twice.
        assert len(rows) == len(drawn) == 24 and not any(arm == "as-filed" for arm, _ in drawn)
        for r in rows:
            _, shape = RUN_STYLE["AB".index(r["run"])]
            assert r["artist"].get_marker() == shape
        # A run's rows of one arm sit together, A above B.
        by_arm: dict[str, dict[str, float]] = {}
        for r in rows:
            by_arm.setdefault(r["arm"], {})[r["run"]] = r["y"]
        assert all(0 < ys["B"] - ys["A"] < 1 for ys in by_arm.values())
        assert any("as-filed (A: coarse counter; B: coarse counter)" in t.get_text() for t in fig.texts)
    finally:
        _close(fig)
    assert paired_plot(result, tmp_path / "ab.png")
    assert (tmp_path / "ab.png").stat().st_size > 0 and (tmp_path / "ab.svg").stat().st_size > 0
