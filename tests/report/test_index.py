"""results/README.md: generated from the documents, current in the repository, refreshed by
`record`, checked by `validate`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gpurepro.cli.results import document_errors
from gpurepro.report.index import indexed_folder, is_current, render, write_index
from tests import invoke

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
FAKE = "tests/fixtures/fake_case/manifest.py"
STALE = "README.md is out of date: run python -m gpurepro index"


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return invoke.gpurepro(*args, cwd=cwd)


def _case_results(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.json") if not p.name.endswith(".pyperf.json")
                  and json.loads(p.read_text()).get("schema", "").startswith("gpurepro/result"))


def test_committed_index_is_current():
    assert (RESULTS / "README.md").read_text() == render(RESULTS), \
        "results/README.md is out of date: run python -m gpurepro index"


def test_every_result_document_has_one_row_with_working_links():
    text = render(RESULTS)
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    docs = _case_results(RESULTS)
    assert docs and len(rows) == len(docs)
    for path in docs:
        rel = path.relative_to(RESULTS).as_posix()
        [row] = [r for r in rows if f"[JSON]({rel})" in r]
        doc = json.loads(path.read_text())
        assert row.startswith(f"| `{doc['case']['name']}` |")
        assert doc["environment"]["gpu"]["driver_version"] in row
        if path.with_suffix(".md").is_file():
            assert f"[report]({path.with_suffix('.md').relative_to(RESULTS).as_posix()})" in row
    # Sorted: by case, then by file name (the UTC stamp).
    keys = [(r.split("`")[1], r.split("[JSON](")[1]) for r in rows]
    assert keys == sorted(keys)
    assert "bench/" not in "".join(rows)


def _folder(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "results"
    for name in names:
        src = RESULTS / "tile_unload_race" / name
        dest = folder / "tile_unload_race" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest)
    return folder


def test_validate_fails_on_a_stale_index_and_index_fixes_it(tmp_path):
    folder = _folder(tmp_path, ["20261130T031305Z_NVIDIA-H200_redacted.json"])
    path, changed = write_index(folder)
    assert changed and is_current(folder)
    assert write_index(folder) == (path, False)
    assert _cli("validate", str(folder)).returncode == 0
    # A new document the index does not list.
    shutil.copy(RESULTS / "tile_unload_race" / "20261130T033104Z_NVIDIA-H200_redacted.json",
                folder / "tile_unload_race" / "20261130T033104Z_NVIDIA-H200_redacted.json")
    done = _cli("validate", str(folder))
    assert done.returncode == 1
    assert f"{folder / 'README.md'} is out of date: run python -m gpurepro index {folder}" in done.stderr
    # Run from another folder, as after a plain install.
    done = _cli("index", str(folder), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _cli("validate", str(folder), cwd=tmp_path).returncode == 0
    assert "20261130T033104Z" in (folder / "README.md").read_text()


def test_validate_with_no_path_reads_the_results_folder_and_its_index(tmp_path):
    """`validate` with no path reads ./results and checks its index (here a folder holding one
    committed document; every committed document is checked by the test below, one a test)."""
    folder = _folder(tmp_path, ["20261130T031305Z_NVIDIA-H200_redacted.json"])
    write_index(folder)
    done = _cli("validate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert STALE not in done.stderr
    assert "1 of 1 documents valid" in done.stdout + done.stderr
    (folder / "README.md").write_text("stale\n")
    done = _cli("validate", cwd=tmp_path)
    assert done.returncode == 1 and "README.md is out of date" in done.stderr, done.stderr


# Every committed document, as `validate` of results/ checks it (the schema, nothing private,
# its claims, verdict and summaries recomputed from its trials, the files it names beside it).
# One test a document: together they are half a minute of CPU on an idle machine, and more
# with every committed run, so the fast tier holds the newest document of each folder and the
# slow tier the rest, where tests/record/test_rerecord.py also re-records every journal.
COMMITTED = sorted(p for p in RESULTS.rglob("*.json") if not p.name.endswith(".pyperf.json"))
NEWEST = {max((p for p in COMMITTED if p.parent == folder), key=lambda p: p.name)
          for folder in {p.parent for p in COMMITTED}}


@pytest.mark.parametrize("path", [pytest.param(p, marks=[] if p in NEWEST else [pytest.mark.slow])
                                  for p in COMMITTED],
                         ids=[p.relative_to(RESULTS).as_posix() for p in COMMITTED])
def test_every_committed_document_is_valid_in_meaning(path):
    errors, _ = document_errors(path, json.loads(path.read_text()), ROOT)
    assert errors == [], errors


def test_a_folder_without_an_index_is_not_checked(tmp_path):
    folder = _folder(tmp_path, ["20261130T031305Z_NVIDIA-H200_redacted.json"])
    assert _cli("validate", str(folder)).returncode == 0
    assert not (folder / "README.md").exists()
    assert indexed_folder(folder / "tile_unload_race" / "x.json", ROOT) is None
    assert indexed_folder(RESULTS / "tile_unload_race" / "x.json", ROOT) == RESULTS.resolve()


def test_render_is_deterministic(tmp_path):
    folder = _folder(tmp_path, ["20261130T033104Z_NVIDIA-H200_redacted.json",
                                "20261129T235221Z_NVIDIA-H200_redacted.json"])
    first = render(folder)
    assert first == render(folder)
    rows = [line for line in first.splitlines() if line.startswith("| `")]
    assert "20261129T235221Z" in rows[0] and "20261130T033104Z" in rows[1]
    (folder / "broken.json").write_text("{")
    assert "unreadable" in render(folder)


def test_record_refreshes_the_index(root, fake_build, tmp_path):
    """A run that records into a results folder with an index adds its row."""
    build_dir, _ = fake_build
    out = tmp_path / "results"
    out.mkdir()
    write_index(out)
    done = _cli("run", FAKE, "--arms", "crash,ok", "--trials", "2", "--duration", "0.2",
                "--seed", "1", "--out-dir", str(out), "--build-dir", str(build_dir))
    assert done.returncode == 0, done.stderr
    [doc] = _case_results(out)
    assert f"[JSON]({doc.relative_to(out).as_posix()})" in (out / "README.md").read_text()
    assert is_current(out)
    assert _cli("validate", str(out)).returncode == 0


def test_record_elsewhere_writes_no_index(root, fake_build, tmp_path):
    build_dir, _ = fake_build
    out = tmp_path / "elsewhere"
    done = _cli("run", FAKE, "--arms", "crash,ok", "--trials", "1", "--duration", "0.2",
                "--seed", "1", "--out-dir", str(out), "--build-dir", str(build_dir))
    assert done.returncode == 0, done.stderr
    assert not (out / "README.md").exists()
