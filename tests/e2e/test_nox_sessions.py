"""What the noxfile's sessions install before they run gpurepro, read by running each session
function against a recording stand-in for nox (the test environment has no nox): every session
whose command builds gets pip, which a case's build (`pip download` of its runtime wheels) and a
bisection's CPU stage (the releases listed and fetched with pip) need, and which uv's
environments lack."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# Imports noxfile.py under a stand-in `nox` module, runs one session function with a session
# object that records its installs and runs (answering `gpurepro prepare` and the exit-status
# file as gpurepro would), and prints the calls.
RECORDER = r'''
import json, runpy, sys, tempfile, types
from pathlib import Path

sessions = {}
nox = types.ModuleType("nox")
nox.options = types.SimpleNamespace()
nox.Session = object
def session(*args, **kw):
    def keep(fn):
        sessions[kw.get("name") or fn.__name__] = fn
        return fn
    return keep(args[0]) if args and callable(args[0]) else keep
nox.session = session
nox.parametrize = lambda *a, **k: (lambda fn: fn)
command = types.ModuleType("nox.command")
command.CommandFailed = RuntimeError
sys.modules.update({"nox": nox, "nox.command": command})

class Session:
    def __init__(self, posargs):
        self.posargs, self.calls, self.tmp = posargs, [], tempfile.mkdtemp()
        self.virtualenv = types.SimpleNamespace(location=self.tmp)
    def create_tmp(self):
        return self.tmp
    def install(self, *args, **kw):
        self.calls.append(["install", *args])
    def run(self, *args, **kw):
        self.calls.append(["run", *args])
        args = list(args)
        for flag, text in (("--prepare-out", json.dumps({"target": "sm_90", "pins": []})),
                           ("--target-out", json.dumps({"target": "sm_90", "pins": ["x==1"]})),
                           ("--exit-status-file", "0")):
            if flag in args:
                Path(args[args.index(flag) + 1]).write_text(text)
    def log(self, *args):
        pass
    def error(self, message):
        raise SystemExit(message)
    def notify(self, *args):
        pass

runpy.run_path(sys.argv[1])
name, posargs = sys.argv[2], sys.argv[3:]
s = Session(posargs)
sessions[name](s)
print(json.dumps(s.calls))
'''


def session_calls(name: str, *posargs: str) -> list[list[str]]:
    """The installs and runs of the noxfile's session ``name`` given ``posargs``, in order."""
    done = subprocess.run([sys.executable, "-c", RECORDER, str(ROOT / "noxfile.py"), name, *posargs],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(("session", "posargs", "command"), [
    ("bisect", ("ptxas_abs_clamp", "--axis", "ptxas", "--stage", "cpu"), "bisect"),
    ("pack", ("ptxas_abs_clamp", "--bisect", "ptxas"), "pack"),
    ("ptxas_abs_clamp", (), "case"),
])
def test_a_session_that_builds_installs_pip_before_its_command(session, posargs, command):
    calls = session_calls(session, *posargs)
    ran = next(i for i, c in enumerate(calls) if c[0] == "run" and c[2:5] == ["-m", "gpurepro", command])
    installed = [c[1:] for c in calls[:ran] if c[0] == "install"]
    assert ["pip"] in installed, f"nox -s {session} runs `gpurepro {command}` without pip: {installed}"
