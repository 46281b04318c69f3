"""Fault injection from the outside: stops at random moments, damaged and foreign journals,
concurrent resumes, read-only and full output folders. The fake case's driver crashes, hangs
(forking a child into its group) and survives, so every kind of trial is in flight when the
fault comes. The fault table (docs/faults.md) quotes the counts this file asserts.
"""

from __future__ import annotations

import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gpurepro.run import procs
from gpurepro.run.journal import read
from gpurepro.run.watchdog import SWEEP_GRACE_S, SWEEP_LIMIT_S
from tests.conftest import ROOT

FAKE = "tests/fixtures/fake_case/manifest.py"
# Every kind of trial: survives (busy), crashes at once, hangs until the limit with a child.
DURATION_S = 0.15  # the shortest trial of RUN: a stop within it of a trial line lands mid-run
RUN = ["--arms", "ok,crash,hang", "--trials", "2", "--duration", str(DURATION_S), "--timeout",
       "0.8", "--seed", "11", "--no-record"]
STOPS = 24  # 8 each of SIGINT, SIGTERM, SIGKILL
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
# A wait that only a hang would not end is failed after this many times as long as this test saw
# a whole run of RUN take on this machine (however loaded it is now).
HANG_FACTOR = 10
# A watchdog ends its sweep within SWEEP_LIMIT_S (and exits): past this, it is stuck.
SWEEP_END_S = SWEEP_LIMIT_S + SWEEP_GRACE_S


def _env(tag: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "FAULT_TAG": tag}


def _cli(args: list[str], tag: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gpurepro", *args], cwd=ROOT, env=_env(tag),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)


def _run(args: list[str], tag: str | None = None, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpurepro", *args], cwd=ROOT,
                          env=_env(tag or uuid.uuid4().hex), capture_output=True, text=True,
                          timeout=timeout, **kw)


def tagged(tag: str) -> list[int]:
    """Live processes (zombies are dead) started under this FAULT_TAG: the harness, its
    watchdog, the trial drivers and what they forked all inherit the variable."""
    needle = f"FAULT_TAG={tag}".encode()
    live = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            live.append(int(entry.name))
    return live


def _settling(pid: int) -> bool:
    """A watchdog (its sweep not done), or a child of the harness between its fork and its exec
    (a watchdog or a trial about to start): what a run leaves only for as long as it takes."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"watchdog.py" in argv or b"-m\0gpurepro\0" in argv


def _settled(tag: str, limit_s: float = SWEEP_END_S) -> list[int]:
    """Once a harness has exited: wait for its watchdog to end its sweep (a pid's end), then the
    processes of this FAULT_TAG still alive, which are killed (never leaked into the rest of the
    suite). A watchdog still sweeping after ``limit_s`` counts as left."""
    deadline = time.monotonic() + limit_s
    while (settling := [p for p in tagged(tag) if _settling(p)]) and time.monotonic() < deadline:
        for pid in settling:
            found = procs.proc(pid)
            if found is not None:
                procs.wait_gone(pid, found.start, min(0.1, max(0.0, deadline - time.monotonic())))
    left = tagged(tag)
    for pid in left:
        procs.signal_quietly(pid, signal.SIGKILL)
    return left


def _wait_for_journal(proc: subprocess.Popen, journal: Path, trials: int = 0,
                      limit_s: float | None = None) -> None:
    """Until ``journal`` exists and holds ``trials`` trial lines, or the harness has exited (or
    ``limit_s`` has passed: a hang, which the waits that follow report)."""
    deadline = None if limit_s is None else time.monotonic() + limit_s
    while proc.poll() is None and not (journal.exists() and _trial_lines(journal) >= trials):
        if deadline is not None and time.monotonic() > deadline:
            return
        time.sleep(0.005)


def _trial_lines(journal: Path) -> int:
    try:
        return journal.read_bytes().count(b'"kind":"trial"')
    except OSError:
        return 0


def _pace(build_dir: Path, tmp: Path, limit_s: float) -> float:
    """Seconds a whole run of RUN (start-up, claims and every trial) takes here now."""
    began = time.monotonic()
    done = _run(["run", FAKE, *RUN, "--journal", str(tmp / "pace.journal.jsonl"),
                 "--build-dir", str(build_dir)], timeout=limit_s)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - began


def _planned_once(journal: Path) -> bool:
    contents = read(journal)
    planned = len(contents.header["plan"]["order"])
    lines = sum(1 for line in journal.read_text().splitlines() if '"kind":"trial"' in line)
    return sorted(t["index"] for t in contents.trials) == list(range(planned)) and lines == planned


def _one_stop(i: int, delay: float, sig: signal.Signals, jobs: int, build_dir: Path,
              tmp: Path, hang_s: float) -> dict:
    tag = uuid.uuid4().hex
    journal = tmp / f"stop{i}.journal.jsonl"
    proc = _cli(["run", FAKE, *RUN, "--jobs", str(jobs), "--journal", str(journal),
                 "--build-dir", str(build_dir)], tag)
    if i % 2:  # half the stops count from a journal line (trials running) ...
        # The header, or the first or second trial's line: at least 3 of the 6 trials are to
        # go, the shortest of them longer than the delay, so these stops land mid-run however
        # loaded the machine is.
        _wait_for_journal(proc, journal, trials=(i // 2) % 3, limit_s=hang_s)
        delay *= DURATION_S / 1.5
    time.sleep(delay)  # ... the other half from the start (imports, fingerprint, planning)
    proc.send_signal(sig)
    # A stop during planning is taken once the claims' simulation returns.
    _, err = proc.communicate(timeout=hang_s)
    left = _settled(tag, max(SWEEP_END_S, hang_s))
    result = {"signal": sig.name, "exit": proc.returncode, "left": left, "stderr": err,
              "journal": journal.exists(), "finished_before_stop": proc.returncode == 0}
    if journal.exists():
        read(journal)  # parses (a torn tail from SIGKILL is allowed: resume cuts it)
        resumed = _run(["run", FAKE, "--resume", str(journal), "--build-dir", str(build_dir),
                        "--no-record"], tag, timeout=hang_s)
        result["resume_exit"] = resumed.returncode
        result["resume_stderr"] = resumed.stderr
        result["exactly_once"] = _planned_once(journal)
        result["resume_left"] = _settled(tag, max(SWEEP_END_S, hang_s))
    return result


# 49 runs of the harness, each importing scipy for its claims: on two cores under four CPU hogs
# that is longer than the suite's limit for one test (300 s), so the test holds its own limits,
# each derived from the pace it measured first (the suite's limit guards that one run).
@pytest.mark.slow  # fault injection at volume
@pytest.mark.timeout(0)
def test_random_stops_leave_no_process_and_resume_runs_every_trial_once(fake_build, tmp_path,
                                                                        pytestconfig):
    build_dir, _ = fake_build
    rng = random.Random(20261130)
    stops = [(i, rng.uniform(0.0, 1.5), SIGNALS[i % 3], 1 + (i // 3) % 2) for i in range(STOPS)]
    hang_s = HANG_FACTOR * _pace(build_dir, tmp_path, float(pytestconfig.getini("timeout")))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: _one_stop(*s, build_dir, tmp_path, hang_s), stops))
    allowed = {"SIGINT": {0, 130}, "SIGTERM": {0, 143}, "SIGKILL": {0, -9}}
    for r in results:
        assert r["left"] == [] and r.get("resume_left", []) == [], r
        # Before the harness installs its handlers (Python still importing) SIGTERM ends it
        # the default way; nothing had started then, so there is nothing to clean.
        early = {-signal.Signals[r["signal"]].value} if not r["journal"] else set()
        assert r["exit"] in allowed[r["signal"]] | early, r
        assert "Traceback" not in r["stderr"], r["stderr"]
        if r["journal"]:
            assert r["resume_exit"] == 0, r["resume_stderr"]
            assert r["exactly_once"], r
    by_signal = Counter(r["signal"] for r in results)
    assert by_signal == {"SIGINT": 8, "SIGTERM": 8, "SIGKILL": 8}
    # Many stops must land while trials run, or the loop proves little: the 12 that wait for a
    # journal line land there, with at least 3 trials to go.
    mid_run = sum(1 for r in results if r["journal"] and not r["finished_before_stop"])
    assert mid_run >= 12, [(r["signal"], r["exit"], r["journal"]) for r in results]


def _finished_journal(build_dir: Path, tmp: Path, name: str = "done.journal.jsonl") -> Path:
    journal = tmp / name
    done = _run(["run", FAKE, "--arms", "ok,crash", "--trials", "2", "--duration", "0.1",
                 "--seed", "3", "--journal", str(journal), "--build-dir", str(build_dir),
                 "--no-record"])
    assert done.returncode == 0, done.stderr
    return journal




def _stderr_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.strip()]


def test_a_torn_last_line_is_cut_and_its_trial_reruns(fake_build, tmp_path):
    build_dir, _ = fake_build
    journal = _finished_journal(build_dir, tmp_path)
    from tests.record.test_tampering import reopened

    lines = journal.read_text().splitlines()
    # The last trial's line written half: a harness killed inside that write, before its end
    # record and the header's seal.
    assert '"kind":"end"' in lines[-1]
    lines = reopened(lines[:-1])
    journal.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    done = _run(["run", FAKE, "--resume", str(journal), "--build-dir", str(build_dir), "--no-record"])
    assert done.returncode == 0, done.stderr
    assert "torn last line" in done.stderr
    assert _planned_once(journal)


def test_foreign_journals_are_refused_and_left_byte_identical(fake_build, tmp_path):
    build_dir, _ = fake_build
    journal = _finished_journal(build_dir, tmp_path)
    before = journal.read_bytes()
    other_case = _run(["run", "tile_unload_race", "--resume", str(journal)])
    other_plan = _run(["run", FAKE, "--resume", str(journal), "--trials", "3"])
    for done in (other_case, other_plan):
        assert done.returncode == 2, done.stderr
        assert len(_stderr_lines(done)) == 1 and "Traceback" not in done.stderr
    assert "journal of case 'fake_case'" in other_case.stderr
    assert "--trials" in other_plan.stderr
    # A trial line from another plan pasted in: refused before anything is appended (the
    # line breaks the journal's hash chain, and names itself).
    pasted = tmp_path / "pasted.journal.jsonl"
    lines = before.decode().splitlines()
    foreign = re.sub(r'"index":\d+', '"index":99', lines[1], count=1)
    pasted.write_text("\n".join([*lines, foreign]) + "\n")
    pasted_before = pasted.read_bytes()
    done = _run(["run", FAKE, "--resume", str(pasted), "--build-dir", str(build_dir)])
    assert done.returncode == 2, done.stderr
    assert f"line {len(lines) + 1} (trial 99" in done.stderr and "hash chain" in done.stderr
    assert journal.read_bytes() == before and pasted.read_bytes() == pasted_before


def test_a_second_resume_of_one_journal_is_refused(fake_build, tmp_path):
    build_dir, _ = fake_build
    journal = tmp_path / "slow.journal.jsonl"
    tag = uuid.uuid4().hex
    first = _cli(["run", FAKE, "--arms", "crash,hang", "--trials", "3", "--duration", "0.1",
                  "--timeout", "0.6", "--seed", "5", "--journal", str(journal),
                  "--build-dir", str(build_dir), "--no-record"], tag)
    began = time.monotonic()
    _wait_for_journal(first, journal)
    hang_s = HANG_FACTOR * (time.monotonic() - began)  # its start-up, seen here
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=hang_s)
    resumes = [_cli(["run", FAKE, "--resume", str(journal), "--build-dir", str(build_dir),
                     "--no-record"], tag) for _ in range(2)]
    results = [(p.returncode, err) for p, (_, err) in ((p, p.communicate(timeout=hang_s)) for p in resumes)]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    refused = next(err for code, err in results if code == 1)
    assert "being written by another gpurepro run" in refused and "Traceback" not in refused
    assert _planned_once(journal)
    assert _settled(tag) == []


def _in_tmpfs(script_args: list[str], mount_opts: str, tmp: Path, tag: str) -> subprocess.CompletedProcess:
    """Run the CLI with --out-dir on a private tmpfs (a mount namespace of its own)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private tmpfs")
    mnt = tmp / "mnt"
    mnt.mkdir()
    cmd = (f'mount -t tmpfs -o {mount_opts} gpurepro-test "{mnt}" || exit 97; '
           f'"{sys.executable}" -m gpurepro "$@"; status=$?; '
           f'cp -r "{mnt}/." "{tmp}/saved" 2>/dev/null; exit $status')
    done = subprocess.run(["unshare", "-m", "sh", "-c", cmd, "sh", *script_args], cwd=ROOT,
                          env=_env(tag), capture_output=True, text=True, timeout=60)
    if done.returncode == 97:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    return done


def test_a_read_only_output_folder_fails_before_any_trial(fake_build, tmp_path):
    build_dir, _ = fake_build
    tag = uuid.uuid4().hex
    done = _in_tmpfs(["run", FAKE, "--arms", "ok,crash", "--trials", "1", "--duration", "0.1",
                      "--out-dir", str(tmp_path / "mnt"), "--build-dir", str(build_dir)],
                     "ro,size=64k", tmp_path, tag)
    assert done.returncode == 1, done.stderr
    assert "Read-only file system" in done.stderr and "Traceback" not in done.stderr
    assert len(_stderr_lines(done)) == 1
    assert "ok#0" not in done.stderr  # no trial ran


def test_a_full_disk_stops_the_run_with_whole_lines_and_resume_completes(fake_build, tmp_path):
    build_dir, _ = fake_build
    tag = uuid.uuid4().hex
    # Two pages: the header and a few trial lines fit, then the disk is full.
    done = _in_tmpfs(["run", FAKE, "--arms", "ok,crash", "--trials", "6", "--duration", "0.05",
                      "--seed", "2", "--journal", str(tmp_path / "mnt" / "j.journal.jsonl"),
                      "--build-dir", str(build_dir), "--no-record"], "size=8k", tmp_path, tag)
    assert done.returncode == 1, done.stderr
    assert "cannot write the journal" in done.stderr and "No space left on device" in done.stderr
    assert "Traceback" not in done.stderr
    assert _settled(tag) == []
    saved = tmp_path / "saved" / "j.journal.jsonl"
    assert saved.read_bytes().endswith(b"\n")  # whole lines only
    kept = len(read(saved).trials)
    assert 0 < kept < 12
    resumed = _run(["run", FAKE, "--resume", str(saved), "--build-dir", str(build_dir), "--no-record"])
    assert resumed.returncode == 0, resumed.stderr
    assert _planned_once(saved)


def test_a_file_size_limit_is_a_full_disk_too(fake_build, tmp_path):
    """Without privileges: RLIMIT_FSIZE cuts the journal write short, as a full disk would."""
    build_dir, _ = fake_build
    journal = tmp_path / "limited.journal.jsonl"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (12_000, 12_000))

    done = _run(["run", FAKE, "--arms", "ok,crash", "--trials", "8", "--duration", "0.05",
                 "--journal", str(journal), "--build-dir", str(build_dir), "--no-record"],
                preexec_fn=limit)
    assert done.returncode == 1, done.stderr
    assert "cannot write the journal" in done.stderr and "Traceback" not in done.stderr
    assert journal.read_bytes().endswith(b"\n")
    resumed = _run(["run", FAKE, "--resume", str(journal), "--build-dir", str(build_dir), "--no-record"])
    assert resumed.returncode == 0, resumed.stderr
    assert _planned_once(journal)
