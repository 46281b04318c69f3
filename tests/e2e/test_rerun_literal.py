"""Every committed case document's "Rerun it" block, executed as written, recreates its run.

For each case document under results/, `python -m gpurepro issue DOC` renders the comment with
the repository URL set to this checkout (a file:// URL); the first shell block of its "Rerun
it" section is run by bash, line by line as printed (``bash -e``), in a temporary folder, on
this machine without a GPU. It must end at the no-driver exit of the commit it checks out
("no CUDA driver is present", the harness's status through nox), not at "Sessions not found"
(nox's 3: a commit without the case) or a usage error (a flag that commit does not know); and
the plan that commit's own code makes from the block's arguments (its parser, its manifest, its
plan module, run in the clone: the run stops at the driver before it plans) must be the
document's, by sha256.

Each distinct commit is one clone, whose nox session installs its toolchain (from uv's or pip's
warm cache) and builds the case: about 25 s on an idle 2-core machine. The documents that name
one commit share its clone: the first runs the whole block, the others every line after the
clone line, which is the same for all of them. The newest document of each case (the one a user
pastes from now) is in the slow tier; the older ones, whose number grows with every committed
run, are the history tier (`history`: make test-history, which CI runs after make check).

An older document's block is executed again only where what its execution reads changed: the
document (its commit, fixed in git, and its plan), the block as this checkout renders it, and
the nox and Python that run it. A full pass of a history document writes that key to
tests/e2e/history_verified/ (committed); a later run that finds the same key there checks the
block (its clone and checkout lines, its arguments) without cloning. What the key cannot cover,
a wheel withdrawn from the package index or another system compiler, is what
``make test-history FULL=1`` (GPUREPRO_HISTORY_FULL=1) checks: every block executed again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpurepro.report.compare import stopping_numbers
from gpurepro.run.journal import plan_sha256
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

URL = f"file://{ROOT}"
DOCS = sorted(p for p in ROOT.glob("results/*/*.json")
              if json.loads(p.read_text()).get("schema") == "gpurepro/result/1")
# The newest document of each case by its stamp (the file name starts with it); the rest are
# history.
NEWEST = {max((p for p in DOCS if p.parent == folder), key=lambda p: p.name)
          for folder in {p.parent for p in DOCS}}
NO_DRIVER = "no CUDA driver is present"
VERIFIED = Path(__file__).parent / "history_verified"

# Run in the clone with its own code: the plan its command line makes of the block's arguments.
# The functions moved between packages over the history; each is looked up where it was.
PLAN_PROBE = r'''
import importlib, json, sys
from pathlib import Path

def first(*places):
    for module, name in places:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return None

parser = first(("gpurepro.cli.parser", "parser"), ("gpurepro.cli.main", "parser"),
               ("gpurepro.cli", "parser"))
load_case = first(("gpurepro.case.load", "load_case"), ("gpurepro.case.model", "load_case"),
                  ("gpurepro.manifest", "load_case"))
make_plan = first(("gpurepro.model.plan", "make_plan"), ("gpurepro.run.plan", "make_plan"),
                  ("gpurepro.plan", "make_plan"))
check = first(("gpurepro.cli.args", "check_arguments"), ("gpurepro.run.session", "check_arguments"),
              ("gpurepro.runner", "check_arguments"))
new_plan = first(("gpurepro.run.session", "new_plan"))
name, *args = sys.argv[1:]
ns = parser().parse_args(["case", name, *args])
root = Path.cwd()
case = load_case(name, root)
if check is None:  # the oldest command line read the design itself
    trials = ns.trials or (ns.max_trials if ns.until_decided else None) or case.defaults.trials_per_arm
    arms = ns.arms.split(",") if ns.arms else None
    plan = make_plan(case.name, case.resolved_arms(), trials, ns.seed, arms)
    stopping = {"max_trials": trials, "alpha": ns.alpha} if ns.until_decided else None
else:
    request = check(case, ns, root, {"gpus": []})
    if new_plan is not None:
        plan = new_plan(case, request)
    else:
        plan = make_plan(case.name, case.resolved_arms(), request.trials_per_arm, ns.seed,
                         list(request.arms) if request.arms else None)
    # The design as the journal keeps it (a RunRequest's DesignSpec; before it, its dict).
    design = getattr(request, "design", None)
    stopping = design.to_json() if design is not None else request.stopping
print(json.dumps({"plan": plan.to_json(), "stopping": stopping}))
'''


def _nox_dir() -> Path:
    """Where the `nox` the block calls is: GPUREPRO_NOX, PATH, or the Makefile's .venv/bin."""
    for candidate in (os.environ.get("GPUREPRO_NOX"), shutil.which("nox"),
                      str(ROOT / ".venv" / "bin" / "nox")):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve().parent
    pytest.fail("no nox to run the rerun blocks with: make .venv/bin/nox, or set GPUREPRO_NOX")


def _block_environment() -> dict[str, str]:
    """This machine's environment, less what would point the clone at this checkout (its
    PYTHONPATH) or name a commit for it; nox first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "GPUREPRO_COMMIT", "GPUREPRO_DIRTY", "VIRTUAL_ENV")}
    env["PATH"] = f"{_nox_dir()}{os.pathsep}{env.get('PATH', '')}"
    return env


def rerun_block(doc: Path) -> list[str]:
    """The lines of the first shell block of the comment's "Rerun it" section."""
    done = subprocess.run([sys.executable, "-m", "gpurepro", "issue", str(doc)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GPUREPRO_REPOSITORY_URL": URL,
                               "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    section = done.stdout[done.stdout.index("### Rerun it"):].splitlines()
    start = next(i for i, line in enumerate(section) if line.startswith("```sh"))
    end = next(i for i in range(start + 1, len(section)) if section[i].startswith("```"))
    return section[start + 1:end]


def block_arguments(block: list[str]) -> list[str]:
    """The words of the block's ARGS=(...) line, as bash reads them."""
    line = next(x for x in block if x.startswith("ARGS=("))
    done = subprocess.run(["bash", "-c", f'{line}\nprintf "%s\\0" "${{ARGS[@]}}"'],
                          capture_output=True, text=True, check=True)
    return done.stdout.split("\0")[:-1]


def _harness_no_driver_status(clone: Path, checks_itself: bool = False) -> int:
    """The no-driver exit status of the harness at the clone's commit (3 before it was 5); a
    rerun that checks itself (GPUREPRO_RERUN_OF, ``--rerun-of``) says it could not run
    (EXIT_COULD_NOT_RUN, 125) where the clone's harness has that check, else the block's
    variable is one the harness does not read."""
    sources = [p.read_text() for p in sorted((clone / "src" / "gpurepro").rglob("*.py"))]
    for name in (("EXIT_COULD_NOT_RUN",) if checks_itself else ()) + ("EXIT_NO_DRIVER",):
        for text in sources:
            m = re.search(rf"^{name} = (\d+)", text, re.M)
            if m:
                return int(m.group(1))
    raise AssertionError(f"{clone}: no EXIT_NO_DRIVER in its harness")


def _nox_status_for(clone: Path, harness_status: int) -> int:
    """What nox exits with when the session's gpurepro exits ``harness_status``: the status
    itself where the noxfile passes it on, else 0 (the first noxfiles counted the no-driver
    exit, then 3, as a session that succeeded)."""
    return harness_status if "exit-status-file" in (clone / "noxfile.py").read_text() else 0


def clone_plan(clone: Path, case: str, args: list[str]) -> dict:
    """The plan, and the design, that the clone's own code makes of ``args``."""
    done = subprocess.run([sys.executable, "-c", PLAN_PROBE, case, *args], cwd=clone,
                          capture_output=True, text=True, timeout=300,
                          env={**_block_environment(), "PYTHONPATH": str(clone / "src")})
    assert done.returncode == 0, f"the clone's code could not plan {args}: {done.stderr[-2000:]}"
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    """Commit -> the folder its clone was made in (one clone per distinct commit)."""
    shallow = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True, check=False).stdout.strip()
    if shallow == "true":
        pytest.skip("this clone's history is shallow: the commits the documents name are not in "
                    "it (git fetch --unshallow, or clone without --depth)")
    return {}


@functools.cache
def _nox_version() -> str:
    """The nox that runs the blocks, as it names itself (asked once per worker)."""
    done = subprocess.run([str(_nox_dir() / "nox"), "--version"], capture_output=True, text=True,
                          check=True)
    return (done.stdout + done.stderr).strip()


def execution_key(doc: Path, block: list[str]) -> str:
    """What a history document's block executes from, as one sha256: the document, the block
    (the address it clones from left out: this checkout's, wherever it is), the nox and the
    Python that run it."""
    h = hashlib.sha256()
    text = "\n".join(block).replace(URL, "REPOSITORY")
    for part in (doc.read_bytes(), text.encode(), _nox_version().encode(),
                 platform.python_version().encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def _verified(doc: Path) -> Path:
    return VERIFIED / f"{doc.stem}.sha256"


def _run(block: list[str], where: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(["bash", "-e", "-c", "\n".join(block)], cwd=where, capture_output=True,
                          text=True, timeout=3000, env=_block_environment(),
                          stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.mark.timeout(3600)
# The documents of one commit on one worker (the slow tier's --dist loadgroup), which makes
# that commit's clone once; the commits spread over the workers.
@pytest.mark.parametrize("doc", [pytest.param(p, marks=[pytest.mark.xdist_group(
    json.loads(p.read_text())["environment"]["repository"]["commit"]),
    *([] if p in NEWEST else [pytest.mark.history])]) for p in DOCS],
    ids=[p.name.split("_")[0] for p in DOCS])
def test_the_rerun_block_reaches_the_no_driver_exit_with_the_documents_plan(doc, clones,
                                                                            tmp_path_factory):
    record = json.loads(doc.read_text())
    block = rerun_block(doc)
    assert block[:2] == [f"git clone {shlex.quote(URL)} gpurepro", "cd gpurepro"], block[:2]
    checkout = [line for line in block if line.startswith("git checkout ")]
    assert checkout, f"{doc.name}: the block checks out no commit: {block}"
    commit = shlex.split(checkout[0])[2]
    assert commit == record["environment"]["repository"]["commit"]
    history = doc not in NEWEST
    key = execution_key(doc, block) if history else None
    if (history and not os.environ.get("GPUREPRO_HISTORY_FULL")
            and _verified(doc).is_file() and _verified(doc).read_text().strip() == key):
        # Executed with these very inputs before: it still runs a case's session with
        # arguments bash reads.
        assert block_arguments(block), block
        assert any(re.search(r'\bnox -s \S+ (.* )?-- "\$\{ARGS\[@\]\}"', line) for line in block), block
        return
    if commit in clones:
        where, lines = clones[commit], block[1:]  # its clone line ran for an earlier document
    else:
        where = clones[commit] = tmp_path_factory.mktemp(f"rerun-{commit[:12]}")
        lines = block
    status, output, seconds = _run(lines, where)
    print(f"{doc.name}: {commit[:12]}: exit {status} in {seconds:.0f} s")
    tail = output[-3000:]
    assert "Sessions not found" not in output, tail
    assert "gpurepro: usage error" not in output, tail
    assert NO_DRIVER in output, tail
    clone = where / "gpurepro"
    checks_itself = any("GPUREPRO_RERUN_OF=" in line for line in block)
    assert status == _nox_status_for(clone, _harness_no_driver_status(clone, checks_itself)), tail
    planned = clone_plan(clone, record["case"]["name"], block_arguments(block))
    ran = {k: v for k, v in record["plan"].items() if k != "options"}
    got = planned["plan"]
    assert (got["seed"], sorted(got["arms"]), len(got["order"])) == \
        (ran["seed"], sorted(ran["arms"]), len(ran["order"]))
    assert plan_sha256(got) == plan_sha256(ran)
    assert design(planned["stopping"]) == design(record["plan"]["options"].get("stopping"))
    if key is not None:
        VERIFIED.mkdir(exist_ok=True)
        _verified(doc).write_text(key + "\n")


def design(stopping: dict | None) -> tuple:
    """A run's design as its numbers: (decisive, most trials per arm, alpha), or None for a
    fixed plan; the looks of the first sequential design as the design recorded them."""
    if not stopping:
        return None
    return (stopping.get("design") == "decisive", stopping_numbers(stopping)[0],
            stopping.get("alpha"))
