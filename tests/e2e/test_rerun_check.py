"""A rerun checks itself against the document it repeats (--rerun-of, GPUREPRO_RERUN_OF, which
the issue comment's rerun block sets): after the build it says how many artifacts are identical
to the document's and names each that differs with both hashes; its exit status says
reproduced (0), not reproduced (6) or could not run (125, git bisect run's skip), so that
`git bisect run` works on a case. And `issue` refuses a document `validate` calls invalid."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gpurepro.errors import EXIT_COULD_NOT_RUN, EXIT_NOT_REPRODUCED, EXIT_OK
from tests import invoke
from tests.conftest import ROOT

FAKE = "tests/fixtures/fake_case/manifest.py"
# The fake case's two arms that end the same way every time: a verdict a rerun reproduces.
RUN = ("--build-dir", "build/tests", "--arms", "ok,crash", "--fixed", "--trials", "3",
       "--duration", "0.1", "--seed", "3")
CTX = ROOT / "results" / "ctx_get_device_v2" / \
    "20261205T110438Z-7fee83_NVIDIA-H100-80GB-HBM3_redacted.json"


def _case(*args: str, env: dict[str, str] | None = None):
    environment = {k: v for k, v in os.environ.items() if k != "GPUREPRO_RERUN_OF"}
    return invoke.gpurepro("case", FAKE, *RUN, *args,
                        env={**environment, "PYTHONPATH": str(ROOT / "src"), **(env or {})})


@pytest.fixture(scope="module")
def recorded(fake_build, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("first")
    done = _case("--out-dir", str(out))
    assert done.returncode == 0, done.stderr
    [doc] = (out / "fake_case").glob("*.json")
    return doc


def _edited(doc: Path, tmp_path: Path, edit) -> Path:
    data = json.loads(doc.read_text())
    edit(data)
    path = tmp_path / doc.name
    path.write_text(json.dumps(data, indent=1))
    return path


def test_a_rerun_of_its_document_says_every_artifact_is_identical_and_exits_0(recorded, tmp_path):
    done = _case("--out-dir", str(tmp_path), "--rerun-of", str(recorded))
    assert done.returncode == EXIT_OK, done.stderr
    lines = done.stdout.splitlines()
    assert f"rerun check: 1 of 1 artifacts identical to {recorded.name}'s" in lines
    verdict = json.loads(recorded.read_text())["verdict"]["status"]
    assert any(line.startswith(f"rerun check: reproduced: verdict {verdict}, as {recorded.name}'s")
               for line in lines), done.stdout


def test_an_artifact_that_differs_is_named_with_both_hashes(recorded, tmp_path):
    """Through the variable the comment's rerun block sets, as through the flag."""

    def edit(doc):
        doc["artifacts"]["testdriver"]["sha256"] = "0" * 64
        doc["artifacts"]["gone"] = {"path": "x", "sha256": "1" * 64}

    expected = _edited(recorded, tmp_path, edit)
    built = json.loads(recorded.read_text())["artifacts"]["testdriver"]["sha256"]
    done = _case("--out-dir", str(tmp_path / "out"), env={"GPUREPRO_RERUN_OF": str(expected)})
    lines = done.stdout.splitlines()
    assert f"rerun check: 0 of 2 artifacts identical to {expected.name}'s" in lines
    assert f"  differs: testdriver: rebuilt sha256 {built}, the document's {'0' * 64}" in lines
    assert f"  not rebuilt: gone (the document's sha256 {'1' * 64})" in lines
    # The verdict is still the document's: reproduced, with the artifacts said not identical.
    assert done.returncode == EXIT_OK, done.stderr
    assert "(with 2 artifacts not identical to the document's: above)" in done.stdout


def test_a_verdict_or_a_decision_not_reproduced_exits_6(recorded, tmp_path):
    def edit(doc):
        doc["verdict"]["status"] = "not_reproduced"
        claim = next(c for c in doc["claims"] if c["decision"] == "supported")
        claim["decision"] = "contradicted"

    expected = _edited(recorded, tmp_path, edit)
    claim = next(c["name"] for c in json.loads(recorded.read_text())["claims"]
                 if c["decision"] == "supported")
    done = _case("--out-dir", str(tmp_path / "out"), "--rerun-of", str(expected))
    assert done.returncode == EXIT_NOT_REPRODUCED, done.stderr
    status = json.loads(recorded.read_text())["verdict"]["status"]
    assert (f"rerun check: not reproduced: verdict {status}, the document's not_reproduced; "
            f"{claim} supported here, contradicted there") in done.stdout


@pytest.mark.parametrize("flags, says", [
    (["--no-record"], "cannot go with --no-record"),
    (["--bogus-flag"], "unrecognized arguments: --bogus-flag"),  # a flag this commit lacks
])
def test_a_rerun_that_cannot_run_its_trials_exits_125_saying_why(recorded, tmp_path, flags, says):
    done = _case("--out-dir", str(tmp_path), "--rerun-of", str(recorded), *flags)
    assert done.returncode == EXIT_COULD_NOT_RUN, done.stderr
    assert says in done.stderr
    assert done.stderr.strip().splitlines()[-1] == \
        "gpurepro: rerun check: could not run (a usage error, above): exit 125"
    if "--bogus-flag" in flags:  # the same command without the check keeps its own status
        assert _case("--out-dir", str(tmp_path), *flags).returncode == 2


def test_no_gpu_here_is_could_not_run_and_so_is_a_document_of_another_case():
    """`run` of a GPU case on this machine without one: the artifact check says there is no
    build to compare, the trials could not run (125, not 5); the document of another case is
    named."""
    env = {**{k: v for k, v in os.environ.items() if k != "GPUREPRO_RERUN_OF"},
           "PYTHONPATH": str(ROOT / "src")}
    done = invoke.gpurepro("run", "ctx_get_device_v2", "--arch", "sm_90", "--build-dir",
                        "build/tests-no-such-build", "--rerun-of", str(CTX), cwd=ROOT, env=env)
    if "no CUDA driver" not in done.stderr:
        pytest.skip("a CUDA driver is present: not this test's business")
    assert done.returncode == EXIT_COULD_NOT_RUN, done.stderr
    assert "rerun check: no build of sm_90 to compare" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == \
        "gpurepro: rerun check: could not run (no CUDA driver or GPU here): exit 125"
    other = invoke.gpurepro("run", "tile_unload_race", "--arch", "sm_90", "--rerun-of", str(CTX),
                         cwd=ROOT, env=env)
    assert other.returncode == EXIT_COULD_NOT_RUN
    assert "a document of 'ctx_get_device_v2', not of 'tile_unload_race'" in other.stderr


@pytest.mark.parametrize("status, reason", [(5, "no CUDA driver or GPU here"),
                                            (4, "the GPU cannot run this case"),
                                            (1, "an error, above"), (2, "a usage error, above")])
def test_each_way_of_not_reaching_a_verdict_is_could_not_run(monkeypatch, capsys, status, reason):
    from gpurepro.cli import main

    monkeypatch.setenv("GPUREPRO_RERUN_OF", "doc.json")
    assert main._rerun_status(["case", "x"], status) == EXIT_COULD_NOT_RUN
    assert reason in capsys.readouterr().err
    assert main._rerun_status(["case", "x"], 0) == 0 and main._rerun_status(["case", "x"], 6) == 6
    assert main._rerun_status(["case", "x"], 130) == 130  # stopped: the signal's status
    assert main._rerun_status(["validate", "x"], 1) == 1  # not a rerun
    monkeypatch.delenv("GPUREPRO_RERUN_OF")
    assert main._rerun_status(["case", "x"], status) == status


# ---------------------------------------------------------------- issue and validation


def test_issue_refuses_a_document_whose_verdict_was_edited_in_one_line(tmp_path):
    tampered = _edited(CTX, tmp_path, lambda doc: doc["verdict"].update(status="reproduced"))
    done = invoke.gpurepro("issue", str(tampered))
    assert done.returncode == 1 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"gpurepro: error: {tampered} does not validate: verdict/status: "
                           f"'reproduced' recorded, 'explained' recomputed from the trials")
    assert invoke.gpurepro("validate", str(tampered)).returncode == 1  # as validate calls it
    flagged = invoke.gpurepro("issue", str(tampered), "--allow-invalid")
    assert flagged.returncode == 0, flagged.stderr
    title, blank, note = flagged.stdout.splitlines()[:3]
    assert title.startswith("## gpurepro: `ctx_get_device_v2`") and blank == ""
    assert note.startswith("**This document does not validate** (1 problem;")


def test_issue_takes_the_committed_document_as_it_is(tmp_path):
    copy = tmp_path / CTX.name
    shutil.copy(CTX, copy)
    done = invoke.gpurepro("issue", str(copy))
    assert done.returncode == 0, done.stderr
    assert "does not validate" not in done.stdout + done.stderr
