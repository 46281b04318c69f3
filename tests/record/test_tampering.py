"""Faults from outside the run, round two: journals and documents edited after the fact, a
journal that names a manifest it should not, two writers of one name, a killed `report`, a
full disk under a build, a file system without flock. Each is refused with one line naming
what is wrong, or leaves only whole files. The fault table (docs/faults.md) quotes these counts."""

from __future__ import annotations

import copy
import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gpurepro.errors import BuildError, JournalError
from gpurepro.run import journal as journal_mod
from tests import invoke
from tests.conftest import ROOT

FAKE = "tests/fixtures/fake_case/manifest.py"
USAGE, ERROR = 2, 1


def _cli(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    return invoke.gpurepro(*args, env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})},
                        **kw)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def rechain(lines: list[str]) -> list[str]:
    """A journal's lines with every chain value computed again: a consistent forgery, which a
    checksum without a secret cannot tell (the manifest and plan checks still can)."""
    out = [lines[0]]
    chain = journal_mod.chain_start((lines[0] + "\n").encode())
    indices: set[int] = set()
    for line in lines[1:]:
        obj = json.loads(line)
        if obj.get("kind") == "trial":
            indices.add(obj["index"])
        if obj.get("kind") == "end":  # its count and head as the edited lines give them
            obj.update(trials=len(indices), head=chain)
            end = journal_mod.seal_text(len(indices), chain)
        chain = journal_mod.chain_next(chain, obj)
        out.append(json.dumps({**obj, "chain": chain}, sort_keys=True, separators=(",", ":")))
    header = json.loads(out[0])
    sealed = header.get("sealed", "")
    if sealed.strip() and not sealed.startswith(journal_mod.OPEN_PREFIX):
        header["sealed"] = end  # the seal too, as the writer's last step
        out[0] = json.dumps(header, sort_keys=True, separators=(",", ":"))
    return out


def reopened(lines: list[str]) -> list[str]:
    """``lines`` (a complete journal's header and the lines kept of it, its end record among
    those removed) as its run would have left them had it stopped there: the header's seal
    slot holding an open token (a new one: the run's own was destroyed by its seal), the
    token's lock and every chain value computed again. Only an edit that computes hashes can
    do this (docs/faults.md: what the chain does not protect against)."""
    header = json.loads(lines[0])
    token = os.urandom(32).hex()
    header[journal_mod.LOCK_KEY] = journal_mod.lock_of(token)
    header[journal_mod.SEAL_KEY] = journal_mod.open_slot(token)
    return rechain([json.dumps(header, sort_keys=True, separators=(",", ":")), *lines[1:]])


@pytest.fixture(scope="module")
def finished(fake_build, tmp_path_factory) -> Path:
    """A complete journal of the fake case: 2 crashing and 2 surviving trials."""
    build_dir, _ = fake_build
    path = tmp_path_factory.mktemp("finished") / "done.journal.jsonl"
    done = _cli("run", FAKE, "--arms", "ok,crash", "--trials", "2", "--duration", "0.1",
                "--seed", "3", "--journal", str(path), "--build-dir", str(build_dir), "--no-record")
    assert done.returncode == 0, done.stderr
    return path


def _copy(journal: Path, tmp_path: Path, lines: list[str] | None = None) -> Path:
    copy_ = tmp_path / "copy.journal.jsonl"
    if lines is None:
        shutil.copy(journal, copy_)
    else:
        copy_.write_text("\n".join(lines) + "\n")
    return copy_


# ---------------------------------------------------------------- the journal's hash chain


def test_new_journal_lines_carry_the_hash_chain(finished):
    contents = journal_mod.read(finished)
    assert contents.chained and contents.header["journal_format"] == journal_mod.FORMAT
    assert all("chain" not in t for t in contents.trials)  # checked, then left out


@pytest.mark.parametrize("tamper, named", [
    ("flip", "line 2 (trial"),       # a crashed trial rewritten as survived
    ("duplicate", "line 7 (trial"),  # a trial line repeated at the end, after the end record
    ("drop", "line 3 (trial"),       # a trial line removed: the next one is named
    ("header", "line 2 (trial"),     # the header's plan hash edited
])
@pytest.mark.parametrize("command", ["record", "resume"])
def test_an_edited_journal_is_named_by_record_and_resume(finished, tmp_path, tamper, named, command):
    lines = finished.read_text().splitlines()
    if tamper == "flip":
        first = json.loads(lines[1])
        first.update(outcome="survived" if first["outcome"] != "survived" else "crashed")
        lines[1] = json.dumps(first, sort_keys=True, separators=(",", ":"))
    elif tamper == "duplicate":
        lines.append(lines[1])
    elif tamper == "drop":
        del lines[2]
    else:
        header = json.loads(lines[0])
        header["manifest_sha256"] = "0" * 64
        lines[0] = json.dumps(header, sort_keys=True, separators=(",", ":"))
    path = _copy(finished, tmp_path, lines)
    before = path.read_bytes()
    if command == "record":
        done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    else:
        done = _cli("run", FAKE, "--resume", str(path), "--no-record")
    assert done.returncode == USAGE, done.stderr
    assert named in done.stderr and "hash chain" in done.stderr, done.stderr
    assert len(_lines(done.stderr)) == 1 and "Traceback" not in done.stderr
    assert path.read_bytes() == before and not (tmp_path / "doc.json").exists()


def _cut_and_blanked(finished: Path, blank: str) -> list[str]:
    """A complete journal cut back to its header and first two trial lines, the seal's slot
    overwritten with ``blank``: two edits that compute no hash."""
    lines = finished.read_text().splitlines()[:3]
    header = lines[0]
    at = header.index('"sealed":"') + len('"sealed":"')
    lines[0] = header[:at] + blank.ljust(journal_mod.SEAL_WIDTH) + header[at + journal_mod.SEAL_WIDTH:]
    return lines


@pytest.mark.parametrize("blank, named", [
    ("", "seal slot is blank"),
    ("open " + "0" * 64, "holds another token than the run's own"),
])
@pytest.mark.parametrize("command", ["record", "resume"])
def test_a_complete_journal_cut_back_with_its_seal_blanked_is_refused_not_rerolled(
        finished, tmp_path, command, blank, named):
    """The seal's slot of a new journal holds its open run's token until the seal replaces it
    (the header holds the token's sha256, under the chain): a completed run whose last trial
    lines were cut and whose seal was overwritten with spaces, or with a token made up, is
    refused by record and by --resume (nothing re-run), the file byte-identical."""
    path = _copy(finished, tmp_path, _cut_and_blanked(finished, blank))
    before = path.read_bytes()
    if command == "record":
        done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    else:
        done = _cli("run", FAKE, "--resume", str(path), "--no-record")
    assert done.returncode == USAGE, done.stderr
    assert named in done.stderr and len(_lines(done.stderr)) == 1, done.stderr
    assert path.read_bytes() == before and not (tmp_path / "doc.json").exists()


def test_a_stopped_new_journal_keeps_its_open_token_and_resumes(finished, tmp_path):
    """A new journal's header holds the token's lock and its slot the token until the run
    ends; a journal stopped with them (made here as only its writer could) records as a
    partial run and resumes to a sealed one."""
    header = json.loads(finished.read_text().splitlines()[0])
    assert header["journal_format"] == journal_mod.FORMAT == 6
    assert len(header[journal_mod.LOCK_KEY]) == 64 and header["sealed"].split()[0] == "4"
    path = _copy(finished, tmp_path, reopened(finished.read_text().splitlines()[:3]))
    contents = journal_mod.read(path)
    assert "ended" not in contents.header and len(contents.trials) == 2
    done = _cli("run", FAKE, "--resume", str(path), "--no-record")
    assert done.returncode == 0, done.stderr
    sealed = journal_mod.read(path).header
    assert sealed["sealed"].split()[0] == "4" and sealed["ended"]["trials"] == 4


def test_a_format_5_journal_cut_back_with_its_seal_blanked_still_reads_as_stopped(finished,
                                                                                   tmp_path):
    """Journals written before the token (format 5: a blank slot is a run that has not ended)
    are read as they were: the same two edits give a stopped run there, which is the limit
    docs/faults.md states for them."""
    lines = finished.read_text().splitlines()
    header = json.loads(lines[0])
    header.pop(journal_mod.LOCK_KEY)
    header.update(journal_format=5, sealed=journal_mod.UNSEALED)
    path = _copy(finished, tmp_path, rechain([json.dumps(header, sort_keys=True,
                                                        separators=(",", ":")), *lines[1:3]]))
    contents = journal_mod.read(path)
    assert len(contents.trials) == 2 and "ended" not in contents.header


@pytest.mark.parametrize("tail", [b"\0" * 4096, b"\0" * 4096 + b"\n", b"\0\0\n\0" * 700])
@pytest.mark.parametrize("command", ["record", "resume"])
def test_a_tail_of_nul_bytes_is_a_torn_tail_for_record_and_resume(finished, tmp_path, tail,
                                                                   command):
    """A crash on some file systems leaves the last write's blocks allocated and never written:
    NUL bytes (line breaks among them, or after a line begun) where the journal's end was.
    `record` covers the complete lines before them and says the tail is torn; --resume cuts
    it and runs the rest."""
    lines = reopened(finished.read_text().splitlines()[:4])
    data = ("\n".join(lines[:3]) + "\n").encode() + lines[3][:40].encode() + tail
    path = tmp_path / "nul.journal.jsonl"
    path.write_bytes(data)
    if command == "record":
        done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
        assert done.returncode == 0, done.stderr
        assert "torn" in done.stderr
        assert json.loads((tmp_path / "doc.json").read_text())["completion"]["trials"] == 2
    else:
        done = _cli("run", FAKE, "--resume", str(path), "--no-record")
        assert done.returncode == 0, done.stderr
        assert b"\0" not in path.read_bytes()
        assert len(journal_mod.read(path).trials) == 4


def _unchained(finished: Path) -> list[str]:
    """The journal as a gpurepro from before the chain wrote it (format 2)."""
    lines = []
    for i, line in enumerate(finished.read_text().splitlines()):
        obj = json.loads(line)
        obj.pop("chain", None)
        if i == 0:
            obj["journal_format"] = 2
        lines.append(json.dumps(obj, sort_keys=True, separators=(",", ":")))
    return lines


def _lowered(finished: Path) -> list[str]:
    """The journal with its header's format lowered to 2, its lines and chain left as written."""
    lines = finished.read_text().splitlines()
    header = json.loads(lines[0])
    header["journal_format"] = 2
    lines[0] = json.dumps(header, sort_keys=True, separators=(",", ":"))
    return lines


def test_a_journal_from_before_the_chain_is_refused_unless_asked_for_and_then_says_so(finished,
                                                                                       tmp_path):
    path = _copy(finished, tmp_path, _unchained(finished))
    refused = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    assert refused.returncode == USAGE and len(_lines(refused.stderr)) == 1, refused.stderr
    assert "format 2, from before the hash chain" in refused.stderr and "--old-journal" in refused.stderr
    assert not (tmp_path / "doc.json").exists()
    resumed = _cli("run", FAKE, "--resume", str(path), "--no-record")
    assert resumed.returncode == USAGE and "--old-journal" in resumed.stderr, resumed.stderr
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"), "--old-journal")
    assert done.returncode == 0, done.stderr
    assert "predates the journal's hash chain" in done.stderr


@pytest.mark.parametrize("command", ["record", "record --old-journal", "resume --old-journal"])
def test_a_journal_whose_format_was_lowered_is_refused_even_when_old_ones_are_asked_for(
        finished, tmp_path, command):
    path = _copy(finished, tmp_path, _lowered(finished))
    before = path.read_bytes()
    extra = ["--old-journal"] if "old-journal" in command else []
    if command.startswith("record"):
        done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"), *extra)
    else:
        done = _cli("run", FAKE, "--resume", str(path), "--no-record", *extra)
    assert done.returncode == USAGE, done.stderr
    assert len(_lines(done.stderr)) == 1 and "Traceback" not in done.stderr
    assert ("line 2 carries the hash chain" in done.stderr or "format 2" in done.stderr), done.stderr
    if extra:  # asked for old journals: the lowered format itself is named
        assert "format was lowered" in done.stderr, done.stderr
    assert path.read_bytes() == before and not (tmp_path / "doc.json").exists()


def test_a_repeated_contradicting_line_without_the_chain_is_refused_not_dropped(finished, tmp_path):
    lines = _unchained(finished)
    repeat = json.loads(lines[1])
    repeat["outcome"] = "survived" if repeat["outcome"] != "survived" else "crashed"
    path = _copy(finished, tmp_path, [*lines, json.dumps(repeat, sort_keys=True)])
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"), "--old-journal")
    assert done.returncode == ERROR, done.stderr
    assert f"line {len(lines) + 1} repeats trial {repeat['index']}" in done.stderr
    assert not (tmp_path / "doc.json").exists()
    same = _copy(finished, tmp_path, [*lines, lines[1]])
    done = _cli("record", str(same), "--out", str(tmp_path / "same.json"), "--old-journal")
    assert done.returncode == 0, done.stderr
    assert f"repeats trial {repeat['index']} (the same record)" in done.stderr


# ---------------------------------------------------------------- the manifest record imports


def _hostile_manifest(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "imported"
    manifest = tmp_path / "elsewhere" / "fake_case" / "manifest.py"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(f"open({str(marker)!r}, 'w').write('ran')\n" + (ROOT / FAKE).read_text())
    return manifest, marker


@pytest.mark.parametrize("spelling", ["absolute", "dotdot"])
def test_record_never_imports_a_manifest_outside_the_repository(finished, tmp_path, spelling):
    manifest, marker = _hostile_manifest(tmp_path)
    lines = finished.read_text().splitlines()
    header = json.loads(lines[0])
    header["manifest"] = (str(manifest) if spelling == "absolute"
                          else os.path.relpath(manifest, ROOT))
    lines[0] = json.dumps(header, sort_keys=True, separators=(",", ":"))
    path = _copy(finished, tmp_path, rechain(lines))
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    assert done.returncode == USAGE, done.stderr
    assert "not a file inside the repository" in done.stderr and len(_lines(done.stderr)) == 1
    assert not marker.exists(), "the manifest was imported"


def test_record_refuses_a_manifest_whose_sha256_is_not_the_runs_unless_told(finished, tmp_path):
    lines = finished.read_text().splitlines()
    header = json.loads(lines[0])
    header["manifest_sha256"] = "ab" * 32
    lines[0] = json.dumps(header, sort_keys=True, separators=(",", ":"))
    path = _copy(finished, tmp_path, rechain(lines))
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    assert done.returncode == USAGE, done.stderr
    assert "is not the manifest this run used" in done.stderr and "--manifest-changed" in done.stderr
    assert len(_lines(done.stderr)) == 1 and not (tmp_path / "doc.json").exists()
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"), "--manifest-changed")
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "doc.json").read_text())
    assert doc["case"]["manifest_changed"] == {"run_manifest_sha256": "ab" * 32,
                                               "recorded_with": FAKE}


# ---------------------------------------------------------------- validate: recomputed


@pytest.fixture(scope="module")
def in_repo(fake_build):
    """A recorded document inside the repository (so its journal and manifest are found)."""
    build_dir, _ = fake_build
    out = ROOT / "build" / f"tests-tamper-{uuid.uuid4().hex[:8]}"
    done = _cli("run", FAKE, "--arms", "ok,crash,abort,cuda-error", "--trials", "3",
                "--duration", "0.1", "--seed", "4", "--out-dir", str(out),
                "--build-dir", str(build_dir))
    assert done.returncode == 0, done.stderr
    [path] = [p for p in (out / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json")]
    yield path
    shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="module")
def valid_in_repo(in_repo) -> bytes:
    """The recorded document's bytes, validated once (the edits below are each of a copy)."""
    ok = _cli("validate", str(in_repo))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    return in_repo.read_bytes()


def _flip_claim(doc):
    claim = doc["claims"][0]
    claim["decision"] = "contradicted" if claim["decision"] != "contradicted" else "supported"
    return "claims/0/decision"


def _rewrite_verdict(doc):
    doc["verdict"]["owner"] = "the CUDA driver"
    return "verdict/owner"


def _change_p(doc):
    doc["claims"][0]["p_value"] = 1e-9
    return "claims/0/p_value"


def _change_rate(doc):
    doc["summary"]["ok"]["exposure"]["rate"]["estimate"] = 123.0
    return "summary/ok/exposure/rate/estimate"


def _change_outcome_and_summary(doc):
    t = next(t for t in doc["trials"] if t["arm"] == "crash")
    t.update(outcome="survived", crash=None)
    s = doc["summary"]["crash"]
    s["failures"] -= 1
    s["outcomes"] = {**s["outcomes"], "crashed": s["outcomes"]["crashed"] - 1, "survived": 1}
    return "summary/crash/"


def _duplicate_index(doc):
    doc["trials"].append(copy.deepcopy(doc["trials"][0]))
    return "trials/"


def _duration(doc):
    doc["trials"][0]["duration_s"] = 1e6
    return "trials/0/duration_s"


@pytest.mark.parametrize("tamper", [_flip_claim, _rewrite_verdict, _change_p, _change_rate,
                                    _change_outcome_and_summary, _duplicate_index, _duration],
                         ids=lambda f: f.__name__.strip("_"))
def test_validate_names_a_document_that_its_trials_do_not_give(in_repo, valid_in_repo, tamper):
    assert in_repo.read_bytes() == valid_in_repo  # what validated, untouched by the tests before
    doc = json.loads(in_repo.read_text())
    where = tamper(doc)
    edited = in_repo.with_name("edited.json")
    try:
        edited.write_text(json.dumps(doc, indent=1))
        done = _cli("validate", str(edited))
    finally:
        edited.unlink()
    text = done.stdout + done.stderr
    assert done.returncode == ERROR and f"INVALID {edited}" in text, text
    assert f"  {where}" in text, text


def test_validate_fails_a_document_whose_journal_names_a_decoy_manifest(in_repo, tmp_path):
    """A doctored document whose `journal` points (../) at a decoy header naming a manifest that
    cannot load: validate used to say ok (nothing recomputed); the claims are recomputed from
    the case's own manifest or the document fails."""
    doc = json.loads(in_repo.read_text())
    _flip_claim(doc)
    decoy = in_repo.parent / "decoy" / "fake_case"
    decoy.mkdir(parents=True)
    (decoy / "manifest.py").write_text("raise RuntimeError('decoy')\n")
    header = in_repo.parent / "decoy" / "decoy.journal.jsonl"
    manifest = (decoy / "manifest.py").relative_to(ROOT)
    header.write_text(json.dumps({"manifest": str(manifest)}) + "\n")
    edited = in_repo.with_name("decoyed.json")
    try:
        doc["journal"] = str(Path("build", "..", header.relative_to(ROOT)))
        edited.write_text(json.dumps(doc, indent=1))
        done = _cli("validate", str(edited))
    finally:
        edited.unlink()
        shutil.rmtree(decoy.parent)
    text = done.stdout + done.stderr
    assert done.returncode == ERROR and f"INVALID {edited}" in text, text
    assert "not recomputed: case 'fake_case' does not load" in text, text


def test_validate_says_what_it_could_not_recompute_and_schema_only_recomputes_nothing(in_repo):
    doc = json.loads(in_repo.read_text())
    doc["case"]["name"] = "no_such_case"
    doc["journal"] = None  # its header would name the fake case's manifest
    edited = in_repo.with_name("elsewhere.json")
    try:
        edited.write_text(json.dumps(doc, indent=1))
        done = _cli("validate", str(edited))
        schema_only = _cli("validate", "--schema-only", str(edited))
    finally:
        edited.unlink()
    assert "not recomputed: case 'no_such_case' is not in this checkout" in done.stdout, done.stdout
    assert schema_only.returncode == 0, schema_only.stdout + schema_only.stderr
    assert "(schema only: claims and verdict not recomputed)" in schema_only.stdout


# ---------------------------------------------------------------- whole files only


def test_validate_and_issue_name_an_empty_picture_or_suite(in_repo, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(in_repo.parent, folder)
    doc_path = folder / in_repo.name
    doc = json.loads(doc_path.read_text())
    doc["journal"] = None  # the copy is outside the repository
    doc_path.write_text(json.dumps(doc, indent=1))
    stem = doc_path.name[: -len(".json")]
    forest = folder / f"{stem}.forest.png"
    assert forest.stat().st_size > 0
    forest.write_bytes(b"")
    (folder / f"{stem}.pyperf.json").write_bytes(b"")
    done = _cli("validate", str(doc_path))
    text = done.stdout + done.stderr
    assert done.returncode == ERROR, text
    assert f"names {forest.name}, which is empty" in text and f"{stem}.pyperf.json: an empty" in text
    body = _cli("issue", str(doc_path)).stdout
    assert "forest.png" not in body.split("**Attachments:**", 1)[1].split("\n", 1)[0]


KILLS = 6


@pytest.mark.slow  # fault injection at volume: six kills, each after up to 4 s of rendering
def test_a_report_killed_at_a_random_moment_leaves_no_empty_or_torn_file(in_repo, tmp_path):
    rng = random.Random(20261202)
    for i in range(KILLS):
        folder = tmp_path / f"kill{i}"
        folder.mkdir()
        doc = folder / in_repo.name
        shutil.copy(in_repo, doc)
        proc = subprocess.Popen([sys.executable, "-m", "gpurepro", "report", str(doc)], cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 4.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # Every file, a writer's hidden temporary too: each is written without a name and
        # named only once whole (O_TMPFILE), so none is empty (a 0-byte .tmp.png was) or torn.
        for f in folder.iterdir():
            assert f.stat().st_size > 0, f"{f.name} is empty after a kill"
            if f.suffix == ".png":
                assert f.read_bytes().endswith(b"IEND\xaeB`\x82"), f"{f.name} is torn"


# ---------------------------------------------------------------- two writers of one name


PAIRS = 4


@pytest.mark.slow  # at volume: four races of two records, each rendering its report
def test_two_records_to_one_out_one_wins_and_the_other_refuses(finished, fake_build, tmp_path):
    build_dir, _ = fake_build
    other = tmp_path / "other.journal.jsonl"
    done = _cli("run", FAKE, "--arms", "ok,crash", "--trials", "3", "--duration", "0.1",
                "--seed", "9", "--journal", str(other), "--build-dir", str(build_dir), "--no-record")
    assert done.returncode == 0, done.stderr
    from gpurepro.report.markdown import markdown

    for i in range(PAIRS):
        out = tmp_path / f"race{i}" / "result.json"
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(lambda j, out=out: _cli("record", str(j), "--out", str(out)),
                                 [finished, other] if i % 2 else [other, finished]))
        codes = sorted(r.returncode for r in runs)
        assert codes == [0, USAGE], [r.stderr for r in runs]
        loser = next(r for r in runs if r.returncode == USAGE)
        assert "record never replaces a result" in loser.stderr
        doc = json.loads(out.read_text())
        md = out.with_suffix(".md").read_text()
        pictures = {kind: None for kind in ("plot", "forest", "forest_per_gpu")}
        stem = out.with_suffix("")
        pictures["forest"] = f"{stem.name}.forest.png" if Path(f"{stem}.forest.png").exists() else None
        pictures["plot"] = f"{stem.name}.png" if Path(f"{stem}.png").exists() else None
        assert md == markdown(doc, pictures["plot"], pictures["forest"], None), \
            "the Markdown is not the document's"


def test_two_runs_started_in_one_second_get_two_journals(fake_build, tmp_path):
    build_dir, _ = fake_build
    header = {"started_at": "2026-12-01T10:21:14Z", "device": {"name": "NVIDIA H200"},
              "environment": {"redacted": True}}
    names = {journal_mod.result_name({**header, "name_suffix": s}) for s in ("a1b2c3", "d4e5f6")}
    assert len(names) == 2
    out = tmp_path / "out"
    args = ["run", FAKE, "--arms", "ok,crash", "--trials", "1", "--duration", "0.1",
            "--out-dir", str(out), "--build-dir", str(build_dir), "--no-record"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda _: _cli(*args), range(2)))
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert len(list((out / "fake_case").glob("*.journal.jsonl"))) == 2


# ---------------------------------------------------------------- builds and locks


@pytest.fixture
def stamp_build(fake_case):
    build_dir = ROOT / "build" / f"tests-stamp-{uuid.uuid4().hex[:8]}"
    yield build_dir
    shutil.rmtree(build_dir, ignore_errors=True)


def test_a_cached_artifact_whose_output_changed_is_built_again(fake_case, stamp_build):
    from gpurepro.building.artifacts import build_case

    events: list[tuple[str, str]] = []
    first = build_case(fake_case, "host", ROOT, stamp_build, lambda *e: events.append(e))
    entry = first["artifacts"]["testdriver"]
    stamp = json.loads((ROOT / entry["dir"] / ".artifact.json").read_text())
    assert stamp["outputs"] == {"testdriver": entry["sha256"]}
    binary = ROOT / entry["path"]
    data = binary.read_bytes()
    binary.write_bytes(data[: len(data) // 2])  # what a full disk under g++ left
    events.clear()
    again = build_case(fake_case, "host", ROOT, stamp_build, lambda *e: events.append(e))
    assert ("testdriver", "built") in events and ("testdriver", "cached") not in events
    assert again["artifacts"]["testdriver"]["sha256"] == entry["sha256"]
    (ROOT / entry["dir"] / ".artifact.json").write_bytes(b"")  # a stamp write cut short
    events.clear()
    build_case(fake_case, "host", ROOT, stamp_build, lambda *e: events.append(e))
    assert ("testdriver", "built") in events


def test_a_failed_stamp_write_names_the_stamp_and_leaves_none(fake_case, stamp_build, monkeypatch):
    from gpurepro.building import artifacts

    def full(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(artifacts, "write_atomic", full)
    with pytest.raises(BuildError, match=r"cannot write the build stamp .*\.artifact\.json: No space"):
        artifacts.build_case(fake_case, "host", ROOT, stamp_build)
    assert not list(stamp_build.rglob(".artifact.json"))


def test_a_lock_failure_names_the_journal_and_leaves_nothing(tmp_path, monkeypatch):
    import fcntl

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_flock)
    path = tmp_path / "j.journal.jsonl"
    with pytest.raises(JournalError, match=r"j\.journal\.jsonl: cannot lock the journal \(No locks"):
        journal_mod.Journal.create(path, {"case": "c"})
    assert list(tmp_path.iterdir()) == []


def test_a_run_on_a_file_system_without_flock_names_the_journal_and_leaves_nothing(fake_build, tmp_path):
    build_dir, _ = fake_build
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import errno, fcntl, os\n"
        "def _flock(fd, op):\n"
        "    raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))\n"
        "fcntl.flock = _flock\n")
    folder = tmp_path / "out"
    done = _cli("run", FAKE, "--arms", "ok,crash", "--trials", "1", "--duration", "0.1",
                "--journal", str(folder / "j.journal.jsonl"), "--build-dir", str(build_dir),
                "--no-record", env={"PYTHONPATH": f"{site}{os.pathsep}{ROOT / 'src'}"})
    assert done.returncode == ERROR, done.stderr
    assert "j.journal.jsonl: cannot lock the journal" in done.stderr
    assert len(_lines(done.stderr)) == 1 and "Traceback" not in done.stderr
    assert not folder.exists() or list(folder.iterdir()) == []
