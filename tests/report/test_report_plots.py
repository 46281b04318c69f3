"""The report's pictures: the forest plot of the fake case, checked on the matplotlib figure."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import pytest

from gpurepro.report.forest import DECISION_STYLE, forest_figure, forest_headline, forest_rows
from gpurepro.report.per_gpu import facets, per_gpu_figure, per_gpu_headline
from gpurepro.report.survival import survival_headline
from tests import pace

FAKE = "tests/fixtures/fake_case/manifest.py"


@pytest.fixture(scope="module")
def fake_result(root, fake_build, tmp_path_factory) -> Path:
    build_dir, _ = fake_build
    out = tmp_path_factory.mktemp("forest")
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    proc = pace.run([sys.executable, "-m", "gpurepro", "run", FAKE,
                     "--arms", "crash,ok,abort,cuda-error", "--trials", "3", "--duration", "0.2",
                     "--seed", "3", "--out-dir", str(out), "--build-dir", str(build_dir)],
                    cwd=root, env=env, capture_output=True, text=True)
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
    # The survival plot is kept, SVG beside it, its alt text the headline in words.
    assert f"![{survival_headline(doc)}]({stem.name}.png)" in md
    assert b"<svg" in Path(f"{stem}.svg").read_bytes()[:2000]
    assert "the baseline crash 3/3 failed, median" in survival_headline(doc)
    assert "no failure (in the legend): ok" in survival_headline(doc)


@pytest.fixture(scope="module")
def two_gpu_result(root, fake_build, tmp_path_factory) -> Path:
    """The fake case on two GPUs (with no GPU here, any value is accepted: trials only carry
    it, and CUDA_VISIBLE_DEVICES)."""
    build_dir, _ = fake_build
    out = tmp_path_factory.mktemp("per-gpu")
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    proc = pace.run([sys.executable, "-m", "gpurepro", "run", FAKE, "--gpus", "0,1",
                     "--arms", "crash,ok,abort", "--trials", "4", "--duration", "0.2",
                     "--seed", "5", "--out-dir", str(out), "--build-dir", str(build_dir)],
                    cwd=root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return next(p for p in (out / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json"))


def test_two_gpu_forest_has_one_panel_per_gpu_with_rates_from_its_own_trials(two_gpu_result):
    from gpurepro.analyze.stats import poisson_rate
    from gpurepro.model.outcomes import EVIDENCE

    doc = json.loads(two_gpu_result.read_text())
    assert {t["gpu"] for t in doc["trials"]} == {"0", "1"}
    fig, panels = per_gpu_figure(doc)
    try:
        assert [p["label"] for p in panels] == ["GPU 0", "GPU 1"]
        assert len(fig.axes) == 2 and [p["ax"] for p in panels] == fig.axes
        assert panels[0]["ax"].get_xlim() == panels[1]["ax"].get_xlim()  # one x axis
        rows, _ = forest_rows(doc)
        case = doc["case"]
        for p in panels:
            gpu = p["label"].removeprefix("GPU ")
            counts = doc["per_gpu"][gpu]
            assert set(p["rows"]) == {r["arm"] for r in rows if counts.get(r["arm"], {}).get("valid")}
            for arm, cell in p["rows"].items():
                trials = [t for t in doc["trials"] if t["arm"] == arm and t["gpu"] == gpu
                          and t["outcome"] in EVIDENCE]
                assert (cell["failures"], cell["n_valid"]) == (counts[arm]["failures"], counts[arm]["valid"])
                rate = poisson_rate(cell["failures"], sum(t["exposure"] or 0 for t in trials),
                                    case["exposure"]["per"])
                assert [cell["lo"], cell["hi"]] == pytest.approx(rate["ci95"])
                assert cell["artist"] in p["ax"].lines
                x = cell["hi"] if cell["zero"] else cell["estimate"]
                assert list(cell["artist"].get_xdata()) == pytest.approx([x])
                assert cell["artist"].get_marker() == DECISION_STYLE[next(
                    r["decision"] for r in rows if r["arm"] == arm)]["marker"]
    finally:
        _close(fig)
    # Written beside the document, referenced from the per-GPU section with its headline.
    stem = two_gpu_result.with_suffix("")
    png, svg = Path(f"{stem}.forest-per-gpu.png"), Path(f"{stem}.forest-per-gpu.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg.read_bytes()[:2000]
    md = two_gpu_result.with_suffix(".md").read_text()
    headline = per_gpu_headline(doc)
    assert headline.startswith("Forest plot per GPU, one panel each (GPU 0, GPU 1)")
    section = md.split("### Per GPU", 1)[1]
    assert f"![{headline}]({png.name})" in section


def test_one_gpu_document_gets_no_faceted_plot(fake_result, two_gpu_result):
    # A run without --gpus: trials name no GPU.
    doc = json.loads(fake_result.read_text())
    assert per_gpu_figure(doc) is None and per_gpu_headline(doc) == ""
    stem = fake_result.with_suffix("")
    assert not Path(f"{stem}.forest-per-gpu.png").exists()
    assert not Path(f"{stem}.forest-per-gpu.svg").exists()
    assert "forest-per-gpu" not in fake_result.with_suffix(".md").read_text()
    # A run on one GPU named: no facet either.
    one = copy.deepcopy(json.loads(two_gpu_result.read_text()))
    for t in one["trials"]:
        t["gpu"] = "0"
    assert facets(one)[1] == {} and per_gpu_figure(one) is None


def test_facets_by_host_and_gpu(two_gpu_result):
    doc = copy.deepcopy(json.loads(two_gpu_result.read_text()))
    for i, t in enumerate(doc["trials"]):
        t["host"], t["gpu"] = f"node{i % 2 + 1}", str(i // 2 % 2)
    kind, groups = facets(doc)
    assert kind == "host · GPU"
    assert list(groups) == ["node1 · GPU 0", "node1 · GPU 1", "node2 · GPU 0", "node2 · GPU 1"]
    assert sum(len(ts) for ts in groups.values()) == len(doc["trials"])
    for t in doc["trials"]:
        t["gpu"] = "0"
    kind, groups = facets(doc)
    assert kind == "host" and list(groups) == ["node1", "node2"]
    fig, panels = per_gpu_figure(doc)
    try:
        assert [p["label"] for p in panels] == ["node1", "node2"]
    finally:
        _close(fig)


def test_no_forest_when_no_arm_has_valid_trials(fake_result):
    doc = copy.deepcopy(json.loads(fake_result.read_text()))
    for s in doc["summary"].values():
        s["n_valid"] = 0
    assert forest_figure(doc) is None


def test_compare_paired_forest_has_a_row_per_run_and_arm(root, tmp_path):
    from gpurepro.report.compare import RUN_STYLE, compare
    from gpurepro.report.compare import forest_figure as paired
    from gpurepro.report.compare import plot as paired_plot

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


def _cut_texts(fig) -> list[str]:
    """Every text of the figure that runs past its edges or was shortened with an ellipsis."""
    import matplotlib.text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    cut = []
    for t in fig.findobj(matplotlib.text.Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        box = t.get_window_extent(renderer)
        if box.x0 < -0.5 or box.x1 > width + 0.5 or box.y0 < -0.5 or box.y1 > height + 0.5 \
                or "…" in t.get_text():
            cut.append(t.get_text())
    return cut


# The committed runs with the longest texts: the baseline's two claims and the title's count of
# both families (the main job on an H100), 32 arms and a long note of arms not drawn (every arm
# on the H200), a case whose unit is a trial (ptxas_abs_clamp).
LONG_TEXTS = ["results/tile_unload_race/20261205T110123Z-c78027_NVIDIA-H100-80GB-HBM3_redacted.json",
              "results/tile_unload_race/20261201T120321Z_NVIDIA-H200_redacted.json",
              "results/ptxas_abs_clamp/20261205T110411Z-83b516_NVIDIA-H100-80GB-HBM3_redacted.json"]


@pytest.mark.parametrize("name", LONG_TEXTS, ids=lambda n: n.split("/")[1])
def test_no_text_of_a_forest_plot_is_cut_at_its_edge_or_with_an_ellipsis(root, name):
    doc = json.loads((root / name).read_text())
    fig, rows = forest_figure(doc)
    try:
        assert _cut_texts(fig) == []
        # Every claim is written whole in the right column.
        texts = {t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))}
        for claim in doc.get("claims") or []:
            if claim["arm"] in {r["arm"] for r in rows}:
                assert any(claim["decision"].replace("_", " ") in t for t in texts)
    finally:
        _close(fig)


def test_no_text_of_the_paired_plot_is_cut(root):
    from gpurepro.report.compare import compare
    from gpurepro.report.compare import forest_figure as paired

    paths = [root / "results/tile_unload_race/20261201T120321Z_NVIDIA-H200_redacted.json",
             root / "results/tile_unload_race/20261205T110123Z-c78027_NVIDIA-H100-80GB-HBM3_redacted.json"]
    result = compare([json.loads(p.read_text()) for p in paths], paths)
    fig, _ = paired(result)
    try:
        assert _cut_texts(fig) == []
    finally:
        _close(fig)
