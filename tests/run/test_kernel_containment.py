"""The kernel holds the trials where the machine allows it (run/isolation.py, run/enter.py): a
cgroup v2 of each trial's own, a PID namespace of each trial's own, or both, with the subreaper
and the watchdog underneath. The hostile driver (tests/fixtures/hostile.py) escapes by a chain
with an empty environment that execs a new command line on every hop, detaches a daemon with
an empty environment, and goes for its own watchdog and harness; the harness is SIGKILLed at
the moment each escape is seen. One run per mechanism is the fast tier; the counts in
docs/faults.md are the slow tier's (``slow``). A mechanism this machine does not give skips
with the reason."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from gpurepro.run import isolation, procs
from gpurepro.run.journal import read
from tests import pace
from tests.conftest import ROOT
from tests.run.test_containment import HOSTILE, _chain_stopped, _env, _left_after_the_sweep, _start


@pytest.fixture(scope="module")
def built():
    from gpurepro.building.artifacts import build_case
    from gpurepro.case.load import load_case

    build_dir = ROOT / "build" / "tests"
    build_case(load_case(ROOT / HOSTILE, ROOT), "host", ROOT, build_dir)
    return build_dir


MECHANISMS = {"cgroup": "cgroup", "pid_namespace": "pid_namespace", "auto": "cgroup+pid_namespace",
              "subreaper": "subreaper"}
_given: dict[str, tuple[str, list[str]]] = {}


def given(cap: str) -> tuple[str, list[str]]:
    """What ``GPUREPRO_CONTAINMENT=cap`` gives on this machine (its name, and why not more),
    as the harness detects it."""
    if cap not in _given:
        old = os.environ.get(isolation.VARIABLE)
        os.environ[isolation.VARIABLE] = cap
        try:
            mech, why = isolation.detect(f"probe-{uuid.uuid4().hex[:8]}/x")
        finally:
            if old is None:
                del os.environ[isolation.VARIABLE]
            else:
                os.environ[isolation.VARIABLE] = old
        if mech.cgroups is not None:
            isolation.kill_cgroup(mech.cgroups)
        _given[cap] = (mech.name, why)
    return _given[cap]


def needs(cap: str) -> None:
    name, why = given(cap)
    if name != MECHANISMS[cap]:
        pytest.skip(f"containment {MECHANISMS[cap]} is not given here: {'; '.join(why)}")


def _pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def _gone_by_pid(beat: Path, cap: str) -> None:
    """The pid last written to the beat file is not alive. (In a PID namespace it is the
    namespace's pid, which names nothing out here: there ``left`` alone, by command line.)"""
    if "pid_namespace" not in MECHANISMS[cap]:
        last = _pid_in(beat)
        assert last is not None and not procs.alive(last)


def _killed_and_gone(proc: subprocess.Popen, tag: str) -> list[int]:
    """SIGKILL the harness, wait for it, and return what of the test is alive once its
    watchdog (if one is left) has ended its sweep."""
    proc.send_signal(signal.SIGKILL)
    _, err = pace.communicate(proc)
    assert proc.returncode == -9, err
    return _left_after_the_sweep(tag)


def _rewriter_dies_with_the_harness(build: Path, tmp_path: Path, cap: str) -> None:
    tag = uuid.uuid4().hex
    beat = tmp_path / "beat"
    proc = _start(["run", HOSTILE, "--arms", "ok,rewriter", "--trials", "1", "--duration", "8",
                   "--timeout", "30", "--seed", "5", "--journal", str(tmp_path / "j.journal.jsonl"),
                   "--build-dir", str(build), "--no-record"], tag, GPUREPRO_CONTAINMENT=cap,
                  HOSTILE_BEAT=str(beat))
    # The event: the chain has made two hops (two pids in its beat file, each a new command
    # line), so it is running under whatever holds it when the harness is killed.
    seen: set[int] = set()

    def hopped() -> bool:
        pid = _pid_in(beat)
        if pid is not None:
            seen.add(pid)
        return len(seen) >= 2

    assert pace.until(hopped), "the chain never hopped"
    assert _killed_and_gone(proc, tag) == []
    _gone_by_pid(beat, cap)
    assert pace.until(lambda: _chain_stopped(beat)), "the chain still hops"


def _daemon_dies_with_the_harness(build: Path, tmp_path: Path, cap: str) -> None:
    tag = uuid.uuid4().hex
    beat = tmp_path / "beat"
    proc = _start(["run", HOSTILE, "--arms", "ok,detach", "--trials", "1", "--duration", "8",
                   "--timeout", "30", "--seed", "6", "--journal", str(tmp_path / "j.journal.jsonl"),
                   "--build-dir", str(build), "--no-record"], tag, GPUREPRO_CONTAINMENT=cap,
                  HOSTILE_BEAT=str(beat))
    # The instant the daemon (empty environment, a session of its own) has written its pid.
    assert pace.until(lambda: _pid_in(beat) is not None), "the daemon never started"
    assert _killed_and_gone(proc, tag) == []
    _gone_by_pid(beat, cap)


def _attack(build: Path, tmp_path: Path, cap: str, how: str) -> tuple[str, str]:
    """A trial that SIGKILLs or SIGSTOPs its watchdog and then SIGKILLs its harness (what it
    found and did, in the attack file), after detaching a daemon; the harness SIGKILLed by the
    test once the attack is done, where the trial could not do it. Then ``--resume``. Returns
    the attack's line and the resume's stderr."""
    tag = uuid.uuid4().hex
    beat, said = tmp_path / "beat", tmp_path / "attack"
    journal = tmp_path / "j.journal.jsonl"
    proc = _start(["run", HOSTILE, "--arms", f"ok,{how}", "--trials", "1", "--duration", "1",
                   "--timeout", "30", "--seed", "7", "--build-dir", str(build), "--no-record",
                   "--journal", str(journal)], tag,
                  GPUREPRO_CONTAINMENT=cap, HOSTILE_BEAT=str(beat), HOSTILE_ATTACK=str(said))
    assert pace.until(lambda: said.exists() or proc.poll() is not None), "no attack"
    line = said.read_text() if said.exists() else ""
    assert line, "the run ended before the attack"
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    _, err = pace.communicate(proc)
    assert proc.returncode == -9, err
    left_now = _left_after_the_sweep(tag) if cap != "cgroup" else []
    assert left_now == [], (line, left_now)
    # The resume: what an earlier harness left (in a cgroup of the run's) is killed first.
    said.unlink()
    # Where the trial could reach its harness, the resumed trial does not attack again (it
    # would end the resume as it ended the run).
    attack_again = {"HOSTILE_ATTACK": str(said)} if cap != "cgroup" else {}
    resumed = pace.run([sys.executable, "-m", "gpurepro", "run", HOSTILE, "--resume", str(journal),
                        "--no-record"], cwd=ROOT, capture_output=True, text=True,
                       env=_env(tag, GPUREPRO_CONTAINMENT=cap, HOSTILE_BEAT=str(beat), **attack_again))
    assert resumed.returncode == 0, resumed.stderr
    assert _left_after_the_sweep(tag) == []
    return line, resumed.stderr


# -- the fast tier: one run per mechanism


# The default mechanism (auto) in the fast tier; each forced one in the slow tier.
@pytest.mark.parametrize("cap", ["auto", pytest.param("cgroup", marks=pytest.mark.slow),
                                 pytest.param("pid_namespace", marks=pytest.mark.slow)])
def test_a_chain_that_rewrites_its_command_line_dies_with_a_killed_harness(built, tmp_path, cap):
    needs(cap)
    _rewriter_dies_with_the_harness(built, tmp_path, cap)


# Not "subreaper": there the daemon, orphaned before the harness's next look, is known to no
# watchdog when the harness dies at that instant (docs/faults.md says how often it survives).
@pytest.mark.parametrize("cap", ["auto", "cgroup", "pid_namespace"])
def test_a_daemon_dies_with_a_harness_killed_the_instant_it_appears(built, tmp_path, cap):
    needs(cap)
    _daemon_dies_with_the_harness(built, tmp_path, cap)


@pytest.mark.parametrize("how", ["attack-kill", "attack-stop"])
def test_a_trial_in_a_pid_namespace_cannot_reach_its_watchdog_or_harness(built, tmp_path, how):
    needs("auto")
    line, resumed = _attack(built, tmp_path, "auto", how)
    # Its own /proc shows neither: nothing found, nothing sent.
    assert "watchdogs 0 harnesses 0" in line, line
    assert "left running by the interrupted run" not in resumed, resumed


def test_a_cgroup_a_trial_left_when_it_killed_its_watchdog_and_harness_is_killed_by_the_resume(
        built, tmp_path):
    """Without a PID namespace the trial reaches both (same uid: root reaches every uid): the
    harness and its watchdog die at once (the trial stops both before it kills either, so
    neither sees the other die and kills the trial first); the trial's cgroup is what the resume
    kills first, and nothing is left."""
    needs("cgroup")
    line, resumed = _attack(built, tmp_path, "cgroup", "attack-kill")
    assert "watchdogs 1 harnesses 1" in line and line.count(":sent") == 2, line


@pytest.mark.parametrize("cap", ["auto", "cgroup", "pid_namespace", "subreaper"])
def test_each_trial_records_its_containment_and_its_end_passes_through(built, tmp_path, cap):
    """Exit status and signal of the trial's main process as without containment; under a PID
    namespace the trial is pid 2 with a /proc of its own and the same /dev."""
    needs(cap)
    tag = uuid.uuid4().hex
    journal = tmp_path / "j.journal.jsonl"
    proc = _start(["run", HOSTILE, "--arms", "ok,crash-at,where", "--trials", "1", "--duration",
                   "0.2", "--timeout", "30", "--seed", "8", "--journal", str(journal),
                   "--build-dir", str(built), "--no-record"], tag,
                  GPUREPRO_CONTAINMENT=cap, HOSTILE_CRASH_AT="0.2")
    _, err = pace.communicate(proc)
    assert proc.returncode == 0, err
    trials = {t["arm"]: t for t in read(journal).trials}
    assert {t["containment"] for t in trials.values()} == {MECHANISMS[cap]}
    assert trials["ok"]["outcome"] == "survived" and trials["ok"]["exit"]["code"] == 0
    crash = trials["crash-at"]
    assert crash["outcome"] == "crashed" and crash["exit"]["signal"] == "SIGSEGV", crash
    where = trials["where"]["observations"]
    assert where["dev_null"] is True
    if "pid_namespace" in MECHANISMS[cap]:
        assert where["pid"] == 2, where  # not 1: an init ignores SIGSEGV raised at itself
        assert where["proc_self"] == "2" and where["proc_pids"] <= 4, where
    else:
        assert where["pid"] > 2 and where["proc_self"] == str(where["pid"])
    assert _left_after_the_sweep(tag) == []
    assert not isolation.leftovers_of(read(journal).header["run_id"])


# -- the slow tier: the counts of docs/faults.md


@pytest.mark.slow
@pytest.mark.parametrize("n", range(16))
def test_slow_a_rewriting_chain_never_survives_a_killed_harness(built, tmp_path, n):
    needs("auto")
    _rewriter_dies_with_the_harness(built, tmp_path, "auto")


@pytest.mark.slow
@pytest.mark.parametrize("n", range(6))
def test_slow_a_trial_never_takes_its_watchdog_and_harness_down(built, tmp_path, n):
    needs("auto")
    line, resumed = _attack(built, tmp_path, "auto", ("attack-kill", "attack-stop")[n % 2])
    assert "watchdogs 0 harnesses 0" in line, line
    assert "left running by the interrupted run" not in resumed, resumed


@pytest.mark.slow
@pytest.mark.parametrize("n", range(8))
def test_slow_a_daemon_never_survives_a_harness_killed_the_instant_it_appears(built, tmp_path, n):
    needs("auto")
    _daemon_dies_with_the_harness(built, tmp_path, "auto")


def test_a_misspelled_containment_is_one_line_and_exit_2(built, tmp_path):
    tag = uuid.uuid4().hex
    proc = _start(["run", HOSTILE, "--arms", "ok", "--trials", "1", "--duration", "0.1",
                   "--journal", str(tmp_path / "j.journal.jsonl"), "--build-dir", str(built),
                   "--no-record"], tag, GPUREPRO_CONTAINMENT="cgroups")
    _, err = pace.communicate(proc)
    assert proc.returncode == 2 and "GPUREPRO_CONTAINMENT=cgroups" in err and "Traceback" not in err
    assert _left_after_the_sweep(tag) == []
