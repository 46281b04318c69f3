"""Faults from outside the run, round three: what the journal's chain, end record and seal name,
artifacts and tools replaced after they were built, manifests that exit or loop at import,
counters and clocks no trial can have, and records racing or killed. Each fault of docs/faults.md
that these tests hold names its test here. The slow tier: each runs real runs of the fake or the
hostile case."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from gpurepro.run import journal as journal_mod
from tests import invoke
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FAKE = "tests/fixtures/fake_case/manifest.py"
USAGE, ERROR = 2, 1


def _cli(*args: str, env: dict[str, str] | None = None, **kw):
    return invoke.gpurepro(*args, env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})},
                        **kw)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _compact(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


@pytest.fixture(scope="module")
def recorded(fake_build):
    """A complete run of the fake case recorded inside the repository (so `validate` finds its
    journal): (document, journal)."""
    build_dir, _ = fake_build
    out = ROOT / "build" / f"tests-integrity-{uuid.uuid4().hex[:8]}"
    done = _cli("run", FAKE, "--arms", "ok,crash", "--trials", "3", "--duration", "0.1",
                "--seed", "5", "--out-dir", str(out), "--build-dir", str(build_dir))
    assert done.returncode == 0, done.stderr
    [doc] = [p for p in (out / "fake_case").glob("*.json") if not p.name.endswith(".pyperf.json")]
    [journal] = (out / "fake_case").glob("*.journal.jsonl")
    yield doc, journal
    shutil.rmtree(out, ignore_errors=True)


def _copy_beside(journal: Path, tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "copy.journal.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------- the end record and the seal


def test_a_complete_journal_ends_with_its_trial_count_and_head_and_is_sealed(recorded):
    _, journal = recorded
    lines = journal.read_text().splitlines()
    end = json.loads(lines[-1])
    header = json.loads(lines[0])
    assert end["kind"] == "end" and end["trials"] == 6
    assert header["sealed"].split() == [str(end["trials"]), end["head"]]


def test_a_scrubbed_journal_keeps_its_end_record_and_seal_consistent(recorded, tmp_path):
    from gpurepro.record.scrub import scrub_file

    _, journal = recorded
    copy = tmp_path / "scrubbed.journal.jsonl"
    shutil.copy(journal, copy)
    assert scrub_file(copy, ROOT, redact=True)  # the hostname goes: lines change
    contents = journal_mod.read(copy)  # chain, end record and seal all hold
    assert "ended" in contents.header and len(contents.trials) == 6
    assert contents.header["sealed"].split()[1] == contents.header["ended"]["head"]


def _truncated(journal: Path, keep_trials: int) -> list[str]:
    """The journal with its last trial lines and its end record deleted (the header untouched)."""
    lines = journal.read_text().splitlines()
    trials = [i for i, line in enumerate(lines) if json.loads(line).get("kind") == "trial"]
    return lines[: trials[keep_trials - 1] + 1]


@pytest.mark.parametrize("command", ["record", "resume"])
def test_a_complete_journal_with_its_last_lines_deleted_is_named_not_resumed(recorded, tmp_path,
                                                                             command, fake_build):
    _, journal = recorded
    path = _copy_beside(journal, tmp_path, _truncated(journal, 4))
    before = path.read_bytes()
    if command == "record":
        done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    else:
        done = _cli("run", FAKE, "--resume", str(path), "--no-record",
                    "--build-dir", str(fake_build[0]))
    assert done.returncode == USAGE, done.stderr
    assert "ended with 6 trial(s)" in done.stderr and "last lines were removed" in done.stderr
    assert len(_lines(done.stderr)) == 1 and "Traceback" not in done.stderr
    assert path.read_bytes() == before and not (tmp_path / "doc.json").exists()


def test_validate_names_a_document_whose_journal_lost_its_last_lines(recorded):
    doc, journal = recorded
    ok = _cli("validate", str(doc))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    saved = journal.read_bytes()
    try:
        journal.write_text("\n".join(_truncated(journal, 4)) + "\n")
        bad = _cli("validate", str(doc))
        assert bad.returncode == ERROR, bad.stdout
        assert "last lines were removed" in bad.stdout, bad.stdout
        # The same cut from a journal without a seal (format 4): the document says complete.
        lines = _truncated(journal, 4)
        header = json.loads(lines[0])
        header.pop("sealed")
        header["journal_format"] = 4
        journal.write_text("\n".join([_compact(header), *rechained(lines[1:], _compact(header))])
                           + "\n")
        bad = _cli("validate", str(doc))
        assert bad.returncode == ERROR, bad.stdout
        assert "no end record" in bad.stdout and "says its run completed" in bad.stdout, bad.stdout
    finally:
        journal.write_bytes(saved)


def rechained(lines: list[str], header_line: str) -> list[str]:
    chain = journal_mod.chain_start((header_line + "\n").encode())
    out = []
    for line in lines:
        obj = json.loads(line)
        obj.pop("chain", None)
        chain = journal_mod.chain_next(chain, obj)
        out.append(_compact({**obj, "chain": chain}))
    return out


def test_trial_lines_deleted_before_the_end_record_are_named_by_its_count(recorded, tmp_path):
    _, journal = recorded
    lines = journal.read_text().splitlines()
    del lines[-2]  # the last trial, its end record kept
    # Rechained (the chain alone would name the end record's line as a break): the count names it.
    lines = [lines[0], *rechained(lines[1:], lines[0])]
    path = _copy_beside(journal, tmp_path, lines)
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    assert done.returncode == USAGE, done.stderr
    assert "the end record, says the run journaled 6 trial(s) before it, and 5 are there" in done.stderr


def test_an_edit_rechained_without_its_seal_is_named_by_the_seal(recorded, tmp_path):
    _, journal = recorded
    lines = journal.read_text().splitlines()
    first = json.loads(lines[1])
    first["outcome"] = "survived" if first["outcome"] != "survived" else "crashed"
    lines[1] = _compact(first)
    body = rechained(lines[1:], lines[0])
    end = json.loads(body[-1])
    # The end record made consistent too, as an editor who read the journal's code would.
    end.pop("chain")
    end["head"] = json.loads(body[-2])["chain"]
    body[-1] = rechained([_compact(end)], lines[0])[0]  # a chain value, wrong, recomputed below
    body = rechained(body, lines[0])
    path = _copy_beside(journal, tmp_path, [lines[0], *body])
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    assert done.returncode == USAGE, done.stderr
    assert "computed again" in done.stderr, done.stderr


def test_a_forgery_consistent_in_chain_end_and_seal_records(recorded, tmp_path):
    """What the chain does not protect against, shown: an editor who recomputes everything."""
    from tests.record.test_tampering import rechain

    _, journal = recorded
    lines = journal.read_text().splitlines()
    first = json.loads(lines[1])
    first["detail"] = "an edited detail"
    lines[1] = _compact(first)
    path = _copy_beside(journal, tmp_path, rechain(lines))
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    assert done.returncode == 0, done.stderr


def test_deleting_the_resumed_record_is_named(recorded, tmp_path, fake_build):
    _, journal = recorded
    from tests.record.test_tampering import reopened

    lines = reopened(_truncated(journal, 4))  # a run stopped after 4 trials
    path = _copy_beside(journal, tmp_path, lines)
    done = _cli("run", FAKE, "--resume", str(path), "--no-record", "--build-dir", str(fake_build[0]))
    assert done.returncode == 0, done.stderr
    resumed = path.read_text().splitlines()
    kinds = [json.loads(line).get("kind") for line in resumed]
    assert kinds.count("resumed") == 1 and kinds[-1] == "end"
    where = kinds.index("resumed")
    path.write_text("\n".join(resumed[:where] + resumed[where + 1:]) + "\n")
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    assert done.returncode == USAGE, done.stderr
    assert f"line {where + 1} (trial" in done.stderr and "hash chain" in done.stderr


# ---------------------------------------------------------------- files hashed again when used


def _stopped_after(path: Path, trials: int) -> None:
    """The journal as a run stopped after its first ``trials`` trials left it."""
    from tests.record.test_tampering import reopened

    lines = reopened(_truncated(path, trials))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def own_build(fake_case):
    """A build of the fake case of its own inside the repository, for one test to damage (the
    shared one, build/tests, serves every other test)."""
    from gpurepro.building.artifacts import build_case

    folder = ROOT / "build" / f"tests-integrity-build-{uuid.uuid4().hex[:8]}"
    build_case(fake_case, "host", ROOT, folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_artifact_replaced_after_the_build_is_refused_when_a_trial_uses_it(own_build, tmp_path):
    journal = tmp_path / "run.journal.jsonl"
    done = _cli("run", FAKE, "--arms", "ok,crash", "--trials", "2", "--duration", "0.1", "--seed", "1",
                "--journal", str(journal), "--build-dir", str(own_build), "--no-record")
    assert done.returncode == 0, done.stderr
    _stopped_after(journal, 2)
    [entry] = json.loads(journal.read_text().splitlines()[0])["artifacts"].values()
    driver = ROOT / entry["path"]
    assert driver.is_relative_to(own_build), driver  # never the shared build
    # A program that claims a survival, in the built driver's place.
    driver.unlink()
    driver.write_text('#!/bin/sh\necho \'{"event":"final","status":"ok","counters":{"launches":9}}\'\n')
    driver.chmod(0o755)
    done = _cli("run", FAKE, "--resume", str(journal), "--no-record", "--build-dir", str(own_build))
    assert done.returncode == ERROR, done.stderr
    assert "was replaced after it was built" in done.stderr and "artifact testdriver" in done.stderr
    contents = journal_mod.read(journal)
    assert len(contents.trials) == 2 and "ended" not in contents.header


def test_an_unpacked_runtime_site_edited_after_unpacking_is_checked_not_trusted(tmp_path, capfd):
    from gpurepro.run import runtime as run_runtime
    from gpurepro.run.rehash import ArtifactChanged
    from tests.building.test_runtime_pins import make_wheel

    wheel = make_wheel(tmp_path, "gpurepro-probe", "1.0")
    wheels = {wheel.name: {"path": str(wheel), "sha256": run_runtime.sha256_file(wheel)}}
    site = tmp_path / "sites" / "one"
    run_runtime.unpack(site, wheels, ROOT)
    run_runtime.verify_site(site)  # as unpacked
    module = site / "gpurepro_probe" / "__init__.py"
    module.write_text("__version__ = 'edited'\n")
    with pytest.raises(ArtifactChanged, match="gpurepro_probe/__init__.py was changed after unpacking"):
        run_runtime.verify_site(site)
    (site / "sitecustomize.py").write_text("print('planted')\n")
    module.write_text("__version__ = '1.0'\n")
    with pytest.raises(ArtifactChanged, match="sitecustomize.py was added after unpacking"):
        run_runtime.verify_site(site)
    # Its stamp still names the same wheels: unpacked again all the same, and said so.
    run_runtime.unpack(site, wheels, ROOT)
    assert "unpacking it again" in capfd.readouterr().err
    assert not (site / "sitecustomize.py").exists()
    run_runtime.verify_site(site)


def test_a_tool_replaced_in_the_bisection_cache_is_extracted_again(tmp_path):
    import zipfile

    from gpurepro.building import releases

    wheel = tmp_path / "nvidia_tool-1.0-py3-none-manylinux.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("nvidia/tool/bin/ptxas", "#!/bin/sh\necho the wheel's ptxas\n")
    tool = releases.program(wheel, "ptxas", tmp_path / "cache")
    good = tool.read_bytes()
    tool.write_text("#!/bin/sh\necho another program\n")
    again = releases.program(wheel, "ptxas", tmp_path / "cache")
    assert again == tool and again.read_bytes() == good


@pytest.mark.parametrize("sha256", ["none", "its own"])
def test_record_of_a_journal_without_manifest_sha256_imports_only_the_cases_manifest(recorded,
                                                                                       tmp_path,
                                                                                       sha256):
    """A header naming another .py file of the checkout as its manifest, without a sha256 or
    with that file's own sha256 (a sha256 holds a file to its bytes, not to being a case's
    manifest): refused in one line, the file not imported."""
    import hashlib

    _, journal = recorded
    marker = tmp_path / "imported"
    planted = ROOT / "build" / f"tests-integrity-planted-{uuid.uuid4().hex[:8]}.py"
    planted.write_text(f"open({str(marker)!r}, 'w').close()\n"
                       f"from tests.fixtures.fake_case.manifest import CASE\n")
    try:
        lines = journal.read_text().splitlines()
        header = json.loads(lines[0])
        header.pop("manifest_sha256")
        if sha256 == "its own":
            header["manifest_sha256"] = hashlib.sha256(planted.read_bytes()).hexdigest()
        header["manifest"] = str(planted.relative_to(ROOT))
        lines[0] = _compact(header)
        from tests.record.test_tampering import rechain

        path = _copy_beside(journal, tmp_path, rechain(lines))
        done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
        assert done.returncode == USAGE, done.stderr
        assert ("not a case's manifest.py" in done.stderr if sha256 == "none" else
                "not a manifest.py in a folder named 'fake_case'" in done.stderr), done.stderr
        assert len(_lines(done.stderr)) == 1 and not marker.exists()
    finally:
        planted.unlink()


# ---------------------------------------------------------------- manifests that exit or loop


BODIES = {"exits": "raise SystemExit(0)\n", "loops": "while True:\n    pass\n",
          "os-exits": "import os\nos._exit(0)\n"}


@pytest.fixture
def bad_manifest():
    """Make ``build/tests-integrity-*/fake_case/manifest.py`` with one of BODIES (a folder of
    the fake case's name, so that validate would take it for the case's manifest)."""
    made = []

    def make(kind: str) -> Path:
        folder = ROOT / "build" / f"tests-integrity-{kind}-{uuid.uuid4().hex[:8]}" / "fake_case"
        folder.mkdir(parents=True)
        (folder / "manifest.py").write_text(BODIES[kind])
        made.append(folder.parent)
        return folder / "manifest.py"

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def _import_limit_env(fake_case) -> dict[str, str]:
    """A manifest import limit derived from how long the fake case's manifest takes here."""
    import time

    from gpurepro.case.load import IMPORT_LIMIT_VARIABLE, load_case

    t0 = time.perf_counter()
    load_case(fake_case.path, ROOT)
    took = time.perf_counter() - t0
    return {IMPORT_LIMIT_VARIABLE: f"{max(1.0, 50 * took):.3f}"}


@pytest.mark.parametrize("kind", ["exits", "os-exits", "loops"])
@pytest.mark.parametrize("command", ["run", "record", "validate"])
def test_a_manifest_that_exits_or_loops_at_import_fails_the_command_in_one_line(
        bad_manifest, recorded, tmp_path, kind, command, fake_case):
    from tests.record.test_tampering import rechain

    manifest = bad_manifest(kind)
    rel = str(manifest.relative_to(ROOT))
    env = _import_limit_env(fake_case) if kind == "loops" else {}
    # As programs: pytest-timeout holds this process's real-time timer, which the limit uses.
    program = {"stdin": subprocess.DEVNULL}
    doc, journal = recorded
    if command == "run":
        done = _cli("run", rel, "--out-dir", str(tmp_path / "out"), env=env)
    elif command == "record":
        done = _cli("record", str(journal), "--case", rel, "--out", str(tmp_path / "doc.json"),
                    "--manifest-changed", env=env, **program)
    else:
        # The document's journal names the manifest (rechained, as a consistent edit would be).
        lines = journal.read_text().splitlines()
        header = json.loads(lines[0])
        header["manifest"] = rel
        lines[0] = _compact(header)
        copy = manifest.parent.parent / "edited.journal.jsonl"
        copy.write_text("\n".join(rechain(lines)) + "\n")
        edited = json.loads(doc.read_text())
        edited["journal"] = str(copy.relative_to(ROOT))
        target = manifest.parent.parent / "edited.json"
        target.write_text(json.dumps(edited, indent=1) + "\n")
        done = _cli("validate", str(target), env=env, **program)
    said = done.stdout + done.stderr if command == "validate" else done.stderr
    assert done.returncode != 0, said
    expected = {"exits": "exits at import (SystemExit(0))", "os-exits": "exits at import (os._exit(0))",
                "loops": "did not finish importing"}[kind]
    assert expected in said, said
    assert "Traceback" not in said
    if command != "validate":
        assert len(_lines(done.stderr)) == 1, done.stderr
    assert not (tmp_path / "doc.json").exists()


# ---------------------------------------------------------------- counters, clocks, timestamps

HOSTILE = "tests/fixtures/hostile_case/manifest.py"
BAD_COUNTERS = ("counter-negative", "counter-infinite", "counter-enormous", "counter-nan")
BAD_CLOCKS = ("clock-negative", "clock-infinite")
CRASH_CLOCK = "clock-crash"


@pytest.fixture(scope="module")
def hostile_counts(tmp_path_factory):
    """One run of the hostile case's bad-counter and bad-clock arms, recorded: (exit, document)."""
    from gpurepro.building.artifacts import build_case
    from gpurepro.case.load import load_case

    build_dir = ROOT / "build" / "tests"
    build_case(load_case(ROOT / HOSTILE, ROOT), "host", ROOT, build_dir)
    out = ROOT / "build" / f"tests-integrity-counts-{uuid.uuid4().hex[:8]}"
    done = _cli("run", HOSTILE, "--arms", ",".join(("ok", *BAD_COUNTERS, *BAD_CLOCKS, CRASH_CLOCK)),
                "--trials", "1", "--duration", "0.2", "--seed", "2", "--out-dir", str(out),
                "--build-dir", str(build_dir))
    docs = [p for p in (out / "hostile_case").glob("*.json") if not p.name.endswith(".pyperf.json")]
    yield done, docs
    shutil.rmtree(out, ignore_errors=True)


def test_counters_outside_the_protocol_are_harness_errors_and_the_run_records(hostile_counts):
    done, docs = hostile_counts
    assert done.returncode == ERROR, done.stderr  # a harness error in the run: exit 1
    assert len(docs) == 1, done.stderr  # recorded all the same
    doc = json.loads(docs[0].read_text())
    by_arm = {t["arm"]: t for t in doc["trials"]}
    for arm in BAD_COUNTERS:
        t = by_arm[arm]
        assert t["outcome"] == "harness_error", t
        assert "broke the event protocol" in t["detail"] and "'cycles'" in t["detail"], t
        assert t["counters"] == {} and t["exposure"] == 0
    assert by_arm["ok"]["outcome"] == "survived"
    assert _cli("validate", str(docs[0])).returncode == 0


def test_a_clock_that_cannot_be_one_is_not_believed(hostile_counts):
    _, docs = hostile_counts
    doc = json.loads(docs[0].read_text())
    for t in doc["trials"]:
        if t["arm"] in BAD_CLOCKS:
            assert t["outcome"] == "survived", t
            assert 0 <= t["duration_s"] < 60 and "duration_from" not in t, t
    [crashed] = [t for t in doc["trials"] if t["arm"] == CRASH_CLOCK]
    assert crashed["outcome"] == "crashed", crashed
    assert crashed["crash"]["t"] is None and "snapshot_ns" not in crashed["crash"], crashed["crash"]


@pytest.mark.parametrize("stamp", ["1970-01-01T00:00:00Z", "2099-06-01T00:00:00Z"])
@pytest.mark.parametrize("where", ["header", "trial"])
def test_a_journal_dated_1970_or_2099_is_refused_by_record(recorded, tmp_path, stamp, where):
    from tests.record.test_tampering import rechain

    _, journal = recorded
    lines = journal.read_text().splitlines()
    index = 0 if where == "header" else 2
    obj = json.loads(lines[index])
    obj["started_at"] = stamp
    lines[index] = _compact(obj)
    path = _copy_beside(journal, tmp_path, rechain(lines))
    done = _cli("record", str(path), "--out", str(tmp_path / "doc.json"))
    assert done.returncode != 0 and len(_lines(done.stderr)) == 1, done.stderr
    assert f"is {stamp}, outside 2020-01-01 to a day after this machine's clock" in done.stderr
    assert not (tmp_path / "doc.json").exists()


# ---------------------------------------------------------------- names, races, kills


def test_a_case_named_for_a_built_in_session_is_refused(tmp_path):
    done = _cli("new", "lint")
    assert done.returncode == USAGE, done.stderr
    assert "nox session" in done.stderr and len(_lines(done.stderr)) == 1
    assert not (ROOT / "cases" / "lint").exists()


def _journal_with_seed(build_dir: Path, tmp_path: Path, seed: int) -> Path:
    path = tmp_path / f"seed{seed}.journal.jsonl"
    done = _cli("run", FAKE, "--arms", "ok,crash", "--trials", "2", "--duration", "0.05",
                "--seed", str(seed), "--journal", str(path), "--build-dir", str(build_dir),
                "--no-record")
    assert done.returncode == 0, done.stderr
    return path


def test_two_concurrent_forced_records_to_one_output_leave_one_writers_pair(fake_build, tmp_path):
    import re
    from concurrent.futures import ThreadPoolExecutor

    build_dir, _ = fake_build
    journals = [_journal_with_seed(build_dir, tmp_path, seed) for seed in (11, 12)]
    out = tmp_path / "out" / "doc.json"
    program = {"stdin": subprocess.DEVNULL}  # each its own process: what races is two writers
    for _ in range(4):
        with ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(lambda j: _cli("record", str(j), "--out", str(out), "--force",
                                                **program), journals))
        assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
        seed = json.loads(out.read_text())["plan"]["seed"]
        shown = re.search(r"shuffled \(seed (\d+)\)", out.with_suffix(".md").read_text())
        assert shown and int(shown.group(1)) == seed


def test_a_record_killed_while_writing_leaves_nothing_the_index_lists_and_the_next_removes_it(
        recorded, tmp_path):
    import signal
    import sys

    from gpurepro.report.index import documents

    _, journal = recorded
    folder = tmp_path / "out"
    folder.mkdir()
    # A writer SIGKILLed inside an atomic write of a document: its temporary stays.
    killed = subprocess.run(
        [sys.executable, "-c",
         "import os, signal, sys\n"
         "from pathlib import Path\n"
         "from gpurepro.model.files import atomic_path\n"
         "with atomic_path(Path(sys.argv[1])) as tmp:\n"
         "    tmp.write_text('{')\n"
         "    os.kill(os.getpid(), signal.SIGKILL)\n", str(folder / "doc.json")],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert killed.returncode == -signal.SIGKILL
    [left] = list(folder.iterdir())
    assert left.name.startswith(".doc.") and not left.name.endswith(".json")
    assert documents(folder) == []
    done = _cli("record", str(journal), "--out", str(folder / "doc.json"))
    assert done.returncode == 0, done.stderr
    assert f"removed {left.name}" in done.stderr and not left.exists()
    assert [p.name for p in documents(folder)] == ["doc.json"]
