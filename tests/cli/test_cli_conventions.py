"""What a new user types: help for everything, results on stdout, one line for a missing
extra, a quiet end on a closed pipe, internal commands out of sight."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro.cli import extras, main
from gpurepro.cli.parser import parser, prog_name
from tests import pace

ROOT = Path(__file__).resolve().parents[2]
TILE = ROOT / "results" / "tile_unload_race"
NEWEST = TILE / "20261201T102114Z_NVIDIA-H200_redacted.json"
OTHER = TILE / "20261201T101933Z_NVIDIA-H200_redacted.json"


def _cli(*args: str, cwd: Path = ROOT, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return pace.run([sys.executable, "-m", "gpurepro", *args], cwd=cwd, env=env,
                    capture_output=True, text=True, **kw)


def _parsers(p: argparse.ArgumentParser, path: str = "gpurepro"):
    yield path, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_argument_of_every_command_has_help():
    missing = [f"{where}: {action.dest}" for where, p in _parsers(parser())
               for action in p._actions
               if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction,
                                          argparse._VersionAction))
               and not action.help]
    assert missing == []


def test_internal_commands_are_not_listed():
    listed = _cli("--help").stdout
    assert "prepare" not in listed and "slurm-task" not in listed
    assert "case" in listed and "issue" in listed
    assert _cli("prepare", "--help").returncode == 0  # still there for nox


@pytest.mark.parametrize("argv", [
    ["prepare", "tile_unload_race", "--bogus", "--prepare-out", "x.json"],  # nox -s <case> -- --bogus
    ["prepare", "tile_unload_race", "--trials", "0", "--prepare-out", "x.json"],
    ["slurm-task"],
    ["case", "tile_unload_race", "--bogus"],
])
def test_a_usage_hint_never_points_at_a_hidden_command(argv, tmp_path):
    top = parser()
    hidden = set(top.commands) - {a.dest for a in top._subparsers._group_actions[0]._choices_actions}
    assert hidden == {"prepare", "slurm-task"}
    done = _cli(*argv, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    hint = done.stderr.strip().splitlines()[-1]
    assert hint.startswith("gpurepro: usage error: ") and hint.endswith(" --help)"), hint
    named = hint.rsplit("(see python -m gpurepro ", 1)[1].split()[0]
    assert named in top.commands and named not in hidden, hint


def test_usage_lines_name_the_program_as_it_was_run():
    assert prog_name("/venv/bin/gpurepro") == "gpurepro"
    assert prog_name(str(ROOT / "src" / "gpurepro" / "__main__.py")) == "python -m gpurepro"
    assert parser("gpurepro").format_usage().startswith("usage: gpurepro ")


def test_results_go_to_stdout_and_notes_to_stderr(tmp_path):
    done = _cli("validate", str(NEWEST))
    assert done.returncode == 0 and f"ok      {NEWEST}" in done.stdout
    assert "1 of 1 documents valid" in done.stdout and "ok  " not in done.stderr


def test_record_prints_the_document_and_verdict_on_stdout_and_notes_on_stderr(fake_build, tmp_path):
    build_dir, _ = fake_build
    journal = tmp_path / "fake_case" / "run.journal.jsonl"
    run = _cli("run", "tests/fixtures/fake_case/manifest.py", "--arms", "ok,crash", "--trials", "1",
               "--duration", "0.05", "--seed", "1", "--journal", str(journal),
               "--build-dir", str(build_dir), "--no-record")
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"journal: {journal}\n"
    assert "ok#0" in run.stderr and "crash#0" in run.stderr  # the trial lines
    done = _cli("record", str(journal))
    assert done.returncode == 0, done.stderr
    result = next(p for p in journal.parent.glob("*.json") if not p.name.endswith(".pyperf.json"))
    shown = done.stdout.splitlines()
    assert shown[0] == f"result: {result}" and f"markdown: {result.with_suffix('.md')}" in shown
    assert any(line.startswith("verdict: ") for line in shown)
    assert "verdict" not in done.stderr and str(result) not in done.stderr


def test_report_writes_into_out_dir(tmp_path):
    done = _cli("report", str(NEWEST), "--out-dir", str(tmp_path / "rendered"))
    assert done.returncode == 0, done.stderr
    md = tmp_path / "rendered" / NEWEST.with_suffix(".md").name
    assert md.is_file() and f"markdown: {md}" in done.stdout
    assert not (tmp_path / "rendered" / (NEWEST.stem + ".pyperf.json")).exists()


def test_a_closed_pipe_ends_the_command_quietly():
    """`gpurepro compare A B | head -1`: once the reader has gone, no traceback and no "error:
    Broken pipe", and 141. The pipe's reading end is closed before the command starts, so its
    first write meets the closed pipe whatever the pipe's buffer would hold."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    read, write = os.pipe()
    os.close(read)
    try:
        done = pace.run([sys.executable, "-m", "gpurepro", "compare", str(NEWEST), str(OTHER)],
                        cwd=ROOT, env=env, stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert done.stderr == "" and done.returncode == 141


def test_new_refuses_outside_a_checkout(tmp_path):
    done = _cli("new", "my_bug", cwd=tmp_path)
    assert done.returncode == 2 and "not inside one" in done.stderr
    assert not (tmp_path / "cases").exists()


@pytest.mark.parametrize("argv", [["validate", "results"], ["report", str(NEWEST)],
                                  ["issue", str(NEWEST)], ["compare", str(NEWEST), str(OTHER)],
                                  ["calibrate", "tile_unload_race"],
                                  ["run", "tile_unload_race", "--until-decided"]])
def test_a_missing_extra_is_one_line_naming_it(argv, monkeypatch, capsys):
    real = extras.importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("jsonschema", "numpy", "scipy") else real(name, *a))
    monkeypatch.chdir(ROOT)
    assert main.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "needs gpurepro[analysis]" in err[0] and "pip install '.[analysis]'" in err[0]
    assert "bug in gpurepro" not in err[0]


def test_a_module_of_the_extra_missing_later_is_the_same_line(monkeypatch, capsys):
    """Where no table says a command needs the extra, its ImportError still names it."""
    import gpurepro.cli.index as index

    def fails(args):
        raise ModuleNotFoundError("No module named 'pyperf'", name="pyperf")

    monkeypatch.setattr(index, "cmd_index", fails)
    monkeypatch.chdir(ROOT)
    assert main.main(["index"]) == 1
    err = capsys.readouterr().err
    assert "index needs gpurepro[analysis] (pyperf is not installed)" in err
    # Outside a checkout: the repository itself (there is no gpurepro on PyPI).
    assert extras.install_command(Path("/")) == \
        "pip install 'gpurepro[analysis] @ git+https://github.com/gpurepro/gpurepro'"


def test_the_issue_command_prints_the_matrix_line_in_the_head():
    matrices = sorted(TILE.glob("matrix_*.json"))
    done = _cli("issue", str(NEWEST), "--matrix", str(matrices[-1]))
    assert done.returncode == 0, done.stderr
    head = done.stdout.split("<details>")[0]
    assert "- **Toolchain matrix**" in head and "for want of a CUDA driver" in head
    table = done.stdout[done.stdout.index("Toolchain matrix of"):]
    assert "a limit of exporting on a machine without a CUDA driver" in table
    assert json.loads(matrices[-1].read_text())["schema"].startswith("gpurepro/matrix")
