"""Which commit a run records: GPUREPRO_COMMIT when its sender sets it, whatever git state a
copied tree carries; never the HEAD of another repository the tree sits in. Which commit a
document names: one whose manifest is the one the run ran (record.provenance), found from the
history and kept beside the journal; GPUREPRO_COMMIT naming another manifest refused at the
start."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpurepro.cli import args
from gpurepro.env import commits, fingerprint
from gpurepro.errors import RecordError, UsageError
from gpurepro.model.journal import RunHeader
from gpurepro.record import provenance
from tests.headers import run_header


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _repo(path: Path) -> str:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    (path / "f").write_text("x")
    _git(path, "add", "f")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "c")
    return _git(path, "rev-parse", "HEAD")


def test_gpurepro_commit_wins_over_a_copys_own_git(tmp_path, monkeypatch):
    old = _repo(tmp_path / "copy")  # a copy that carries an older .git
    (tmp_path / "copy" / "f").write_text("changed")
    monkeypatch.setenv("GPUREPRO_COMMIT", "6b42bfe")
    monkeypatch.setenv("GPUREPRO_DIRTY", "0")
    got = fingerprint.repository(tmp_path / "copy")
    assert got == {"commit": "6b42bfe", "dirty": False, "source": "GPUREPRO_COMMIT"}
    assert old not in str(got)


def test_a_tree_inside_another_repository_reports_no_commit(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUREPRO_COMMIT", raising=False)
    _repo(tmp_path / "outer")
    inner = tmp_path / "outer" / "project"
    inner.mkdir()
    got = fingerprint.repository(inner)
    assert got["commit"] is None and "another folder" in got["source"]


def test_the_checkouts_own_repository_is_read(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUREPRO_COMMIT", raising=False)
    head = _repo(tmp_path / "own")
    assert fingerprint.repository(tmp_path / "own") == {"commit": head, "dirty": False}
    (tmp_path / "own" / "f").write_text("y")
    assert fingerprint.repository(tmp_path / "own")["dirty"] is True


def test_a_copy_without_git_and_without_a_commit_says_none(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUREPRO_COMMIT", raising=False)
    if shutil.which("git") is None:
        return
    (tmp_path / "bare").mkdir()
    assert fingerprint.repository(tmp_path / "bare")["commit"] is None


# ---------------------------------------------------------------- the commit record names

def _commit_at(path: Path, when: str, files: dict[str, str], message: str = "c") -> str:
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
        _git(path, "add", name)
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when,
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "-C", str(path), "commit", "-qm", message], check=True, env=env)
    return _git(path, "rev-parse", "HEAD")


MANIFEST = "cases/demo/manifest.py"
RAN = "ARMS = ['a', 'b']  # the manifest the run ran\n"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture()
def history(tmp_path):
    """A history in which the run's manifest is committed at 10:00 and changed at 12:00; a
    commit without the case at 09:00; the run started at 11:00."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    commits_made = {
        "no-case": _commit_at(repo, "2026-12-01T09:00:00Z", {"README": "x"}),
        "ran": _commit_at(repo, "2026-12-01T10:00:00Z", {MANIFEST: RAN}),
        "same": _commit_at(repo, "2026-12-01T10:30:00Z", {"other": "y"}),
        "changed": _commit_at(repo, "2026-12-01T12:00:00Z", {MANIFEST: "ARMS = ['a']\n"}),
    }
    return repo, commits_made


def _header(named: str | None, sha: str | None = _sha(RAN),
            started: str = "2026-12-01T11:00:00Z") -> RunHeader:
    return run_header([], case="demo", manifest=MANIFEST, started_at=started,
                      **({"manifest_sha256": sha} if sha else {}),
                      environment={"repository": {"commit": named, "dirty": False,
                                                  "source": "GPUREPRO_COMMIT"}})


def test_the_named_commit_is_kept_where_it_holds_the_runs_manifest(history, tmp_path):
    repo, made = history
    found = provenance.find(_header(made["ran"][:7]), repo, tmp_path / "r.journal.jsonl")
    assert (found.found, found.commit, found.named) == ("named", made["ran"], made["ran"][:7])


def test_a_named_commit_without_the_case_gives_way_to_the_newest_before_the_run(history, tmp_path):
    repo, made = history
    found = provenance.find(_header(made["no-case"]), repo, tmp_path / "r.journal.jsonl")
    assert (found.found, found.commit) == ("newest-before-run", made["same"])
    repo_field = provenance.repository(_header(made["no-case"]), found, MANIFEST)
    assert repo_field["commit"] == made["same"]
    assert repo_field["manifest"]["named_commit"] == made["no-case"]
    assert f"the run named {made['no-case'][:12]}, which does not hold the {MANIFEST} it ran" \
        in repo_field["manifest"]["note"]


def test_a_manifest_committed_after_the_run_started_is_found_there(history, tmp_path):
    repo, made = history
    found = provenance.find(_header(made["no-case"], started="2026-12-01T09:30:00Z"), repo,
                            tmp_path / "r.journal.jsonl")
    assert (found.found, found.commit) == ("first-after-run", made["ran"])


def test_no_commit_holding_the_manifest_is_said_and_none_named(history, tmp_path):
    repo, made = history
    found = provenance.find(_header(made["changed"], sha=_sha("edited, never committed\n")), repo,
                            tmp_path / "r.journal.jsonl")
    assert (found.found, found.commit) == ("none", None)
    assert "no commit of the history holds it" in provenance.note(found, MANIFEST)


def test_a_journal_without_a_manifest_hash_keeps_its_commit_unchecked(history, tmp_path):
    repo, made = history
    found = provenance.find(_header(made["no-case"], sha=None), repo, tmp_path / "r.journal.jsonl")
    assert (found.found, found.commit) == ("unrecorded", made["no-case"])


def test_without_git_history_the_commit_is_not_named(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUREPRO_COMMIT", raising=False)
    (tmp_path / "copy").mkdir()
    found = provenance.find(_header("6282a7f"), tmp_path / "copy", tmp_path / "r.journal.jsonl")
    assert (found.found, found.commit, found.named) == ("unchecked", None, "6282a7f")


def test_a_value_that_reads_as_an_option_is_never_passed_to_git(history):
    repo, _ = history
    assert commits.resolve(repo, "--all") is None and commits.resolve(repo, "HEAD") is None


def test_the_kept_record_gives_a_shallow_clone_the_same_commit(history, tmp_path):
    """record keeps what the history gave beside the journal; a clone of depth 1, which cannot
    search the history, names the same commit from it."""
    repo, made = history
    journal = repo / "results" / "r.journal.jsonl"
    journal.parent.mkdir()
    full = provenance.find(_header(made["no-case"]), repo, journal)
    pin = provenance.write_pin(full, journal)
    assert pin == repo / "results" / "r.commit" and provenance.write_pin(full, journal) is None
    _commit_at(repo, "2026-12-01T13:00:00Z", {"results/r.commit": pin.read_text()})
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)],
                   check=True)
    assert commits.shallow(shallow) and commits.resolve(shallow, made["same"]) is None
    again = provenance.find(_header(made["no-case"]), shallow, shallow / "results" / "r.journal.jsonl")
    assert (again.found, again.commit) == (full.found, full.commit)
    (shallow / "results" / "r.commit").unlink()
    unkept = provenance.find(_header(made["no-case"]), shallow, shallow / "results" / "r.journal.jsonl")
    assert (unkept.found, unkept.commit) == ("unchecked", None)


def test_a_kept_record_naming_another_manifests_commit_is_refused(history, tmp_path):
    repo, made = history
    journal = tmp_path / "r.journal.jsonl"
    provenance.pin_path(journal).write_text(json.dumps(
        {"commit": made["changed"], "found": "newest-before-run", "manifest_sha256": _sha(RAN),
         "named": made["no-case"]}))
    with pytest.raises(RecordError, match="not the manifest the run ran"):
        provenance.find(_header(made["no-case"]), repo, journal)
    provenance.pin_path(journal).write_text(json.dumps(
        {"commit": made["ran"], "found": "named", "manifest_sha256": _sha("x"), "named": "y"}))
    with pytest.raises(RecordError, match="another run's"):
        provenance.find(_header(made["no-case"]), repo, journal)


def test_gpurepro_commit_naming_another_manifest_is_a_usage_error_at_the_start(history):
    repo, made = history
    case = SimpleNamespace(path=repo / MANIFEST)
    (repo / MANIFEST).write_text(RAN)
    args.check_named_commit(case, repo, {"GPUREPRO_COMMIT": made["ran"]})  # holds it
    args.check_named_commit(case, repo, {"GPUREPRO_COMMIT": "0" * 40})  # unknown here: unchecked
    args.check_named_commit(case, repo, {})
    for other, says in ((made["no-case"], f"has no {MANIFEST}"), (made["changed"], "holds another")):
        with pytest.raises(UsageError, match=f"GPUREPRO_COMMIT={other}: that commit {says}"):
            args.check_named_commit(case, repo, {"GPUREPRO_COMMIT": other})
