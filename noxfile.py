"""nox sessions: one per case, plus tests, lint, lock, validate, report, env.

`make <target>` aliases these (see Makefile). Case sessions install the case's locked toolchain
(PyPI wheels, locks/toolchain/) into the session's virtualenv for the target architecture, build,
run, record and report; extra arguments after `--` go to `gpurepro case` (`nox -s <case> --
--help` lists them). The toolchain matrix's 45 cells are sessions of noxfile_matrix.py, run by
`nox -s tile_matrix`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nox

# The oldest nox this file runs under: `requires=` (the document sessions share one analysis
# environment) came in 2025.02.09. nox reads this before running the file, so an older nox
# stops with one line naming it instead of a TypeError from a decorator; the Makefile uses a nox
# on PATH only when it is at least this, else the locked one (locks/nox.txt) in .venv/.
nox.needs_version = ">=2025.2.9"

# uv where it is installed (the Makefile installs nox[uv]): environments and the ~1 GB of
# toolchain wheels install several times faster; virtualenv otherwise.
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]

ROOT = Path(__file__).parent
PYTHON = None  # the interpreter nox runs under (3.11+)
# Every Python the package supports, from pyproject.toml's classifiers: tests_py runs on each.
PYTHONS = [c.rsplit("::", 1)[1].strip() for c in
           tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
           if c.startswith("Programming Language :: Python :: 3.")]
LOCKS = ROOT / "locks"
UV = "uv==0.13.9"  # the lock session's compiler: one version, so the locks read alike


def _select_pyenv_pythons(versions: list[str]) -> None:
    """nox finds `python3.X` on PATH. Where pyenv's shims stand there, a version pyenv has
    installed but not selected answers "command not found": select the newest installed release
    of each wanted version beside the ones already selected (PYENV_VERSION), so nox and uv find
    it. nox started through pyenv's own shim already has PYENV_VERSION set (pyenv exec exports
    the version it chose), so that selection is extended, not taken as final. uv's own
    downloads of Python come from GitHub, which CI does not reach (docs/running.md, "Python versions");
    without pyenv nothing changes, and nox says which interpreter is missing."""
    if not shutil.which("pyenv"):
        return
    def out(*argv: str) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        return done.stdout if done.returncode == 0 else ""
    selected = [v for v in os.environ.get("PYENV_VERSION", "").split(":") if v]
    if not selected:
        current = out("pyenv", "version-name").strip()
        selected = [current] if current else []
    installed = out("pyenv", "versions", "--bare").split()
    chosen = list(selected)
    for version in versions:
        if out(f"python{version}", "--version"):
            continue
        releases = [v for v in installed if v.startswith(version + ".") and v[len(version) + 1:].isdigit()]
        if releases:
            chosen.append(max(releases, key=lambda v: int(v.rsplit(".", 1)[1])))
    if chosen != selected:
        os.environ["PYENV_VERSION"] = ":".join(chosen)


_select_pyenv_pythons(PYTHONS)

# Toolchains the tests build with, each in its own virtualenv (their pins conflict).
TEST_TOOLCHAINS = [
    ("tile_unload_race", "sm_90"),
    ("tile_unload_race", "sm_120"),
    ("tcgen05_alloc_order", "sm_103a"),
]


def _install_project(session: nox.Session, lock: str = "analysis") -> None:
    """The package (editable) with the environment's locked dependencies (locks/<lock>.txt:
    exact versions and hashes; `nox -s lock` writes it)."""
    # The test environments' bytecode is compiled at install, once (uv, in parallel; pip does it
    # by default): a suite starts four workers and hundreds of processes, and the first of them
    # would each compile scipy and matplotlib again, at the same time (3.4 CPU s each).
    compiled = {"UV_COMPILE_BYTECODE": "1"} if lock == "test" else {}
    session.install("-r", str(LOCKS / f"{lock}.txt"), env=compiled)
    session.install("-e", ".", "--no-deps")


def _install_pip(session: nox.Session) -> None:
    """pip, for the sessions that build: a case's build downloads its runtime wheels
    (Case.runtime) with `pip download`, and a bisection's CPU stage lists an axis's releases and
    fetches their wheels with pip (gpurepro.building.releases). uv's environments come without it."""
    session.install("pip")


def _install_toolchain(session: nox.Session, case: str, target: str, pins: list[str]) -> None:
    """A case's toolchain for one target: its lock where the lock is of these pins, else the
    pins as the manifest gives them (a case without a lock yet; `nox -s lock` makes one)."""
    if not pins:
        return
    lock = LOCKS / "toolchain" / f"{case}-{target}.txt"
    source = lock.with_suffix(".in")
    wanted = set(pins)
    given = {line.strip() for line in source.read_text().splitlines()
             if line.strip() and not line.startswith("#")} if source.is_file() else set()
    if lock.is_file() and given == wanted:
        session.install("-r", str(lock))
    else:
        session.log(f"no current lock for {case} {target} (nox -s lock writes it): "
                    f"installing the manifest's pins")
        session.install(*pins)


def _prepare(session: nox.Session, case: str, args: list[str]) -> dict:
    """Check the case's arguments exactly as the run will (a bad value stops here, before any
    install or build) and read the build target and pins from the file gpurepro writes."""
    out = Path(session.create_tmp()) / f"{case}.prepare.json"
    out.unlink(missing_ok=True)
    _run_gpurepro(session, "prepare", case, *args, "--prepare-out", str(out))
    return json.loads(out.read_text())


def _run_gpurepro(session: nox.Session, *args: str, python: str = "python",
                  env: dict[str, str] | None = None) -> None:
    """Run `python -m gpurepro ...`; its exit status becomes nox's (docs/running.md, its table of exit statuses).

    nox reduces every failure to 1 and uses 3 for an unknown session; a run that could not
    reach a GPU (5) or whose GPU cannot run the case (4) must not read as success, nor as
    each other, so the status is read from a file and nox exits with it."""
    status_file = Path(session.create_tmp()) / "exit-status"
    status_file.unlink(missing_ok=True)
    session.run(python, "-m", "gpurepro", *args, "--exit-status-file", str(status_file),
                success_codes=range(256), env=env or {}, external=True)
    status = int(status_file.read_text()) if status_file.is_file() else 1
    if status != 0:
        session.log(f"gpurepro exited with status {status}")
        raise SystemExit(status)


def _target(session: nox.Session, case: str) -> str:
    return str(_prepare(session, case, [])["target"])


def _pins(session: nox.Session, case: str, target: str) -> list[str]:
    return list(_prepare(session, case, ["--arch", target])["pins"])


def _install_pins(session: nox.Session, case: str, target: str) -> None:
    _install_toolchain(session, case, target, _pins(session, case, target))


def _run_case(session: nox.Session, case: str) -> None:
    _install_project(session)
    args = list(session.posargs)
    if "-h" in args or "--help" in args:  # the case command's help, not a run
        session.run("python", "-m", "gpurepro", "case", "--help")
        return
    prepared = _prepare(session, case, args)
    if "builds" in prepared:
        _run_cluster_case(session, case, args, prepared)
        return
    _install_pip(session)
    _install_toolchain(session, case, prepared["target"], prepared["pins"])
    if "--resume" not in args and not any(a == "--arch" or a.startswith("--arch=") for a in args):
        args += ["--arch", prepared["target"]]
    _run_gpurepro(session, "case", case, *args)


def _flag_value(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def _with_partitions(args: list[str], partitions: list[str]) -> list[str]:
    """``args`` with every --partition replaced by the prepared NAME=TARGET ones."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "--partition":
            skip = True
        elif not a.startswith("--partition="):
            out.append(a)
    for p in partitions:
        out += ["--partition", p]
    return out


def _run_cluster_case(session: nox.Session, case: str, args: list[str], prepared: dict) -> None:
    """A cluster run (--slurm): each partition's target built here with its own pins, one
    install after the other (pins of two targets may conflict), then `run --slurm` submits
    from the prebuilt build/ with the targets prepare resolved (probed at most once)."""
    build_dir = _flag_value(args, "--build-dir") or "build"
    for target, pins in prepared["builds"].items():
        _install_toolchain(session, case, target, pins)
        session.run("python", "-m", "gpurepro", "build", case, "--arch", target,
                    "--build-dir", build_dir)
    _run_gpurepro(session, "run", case, *_with_partitions(args, prepared["partitions"]))


@nox.session(python=PYTHON)
def tile_unload_race(session: nox.Session) -> None:
    """Case 1: host SIGSEGV with concurrent cuModuleUnload, Tile IR vs plain CUDA modules."""
    _run_case(session, "tile_unload_race")


@nox.session(python=PYTHON)
def tcgen05_ablation(session: nox.Session) -> None:
    """Case 2 under the name its users know: the same as `nox -s tcgen05_alloc_order`."""
    _run_case(session, "tcgen05_alloc_order")


def _case_session(case: str):
    def session_fn(session: nox.Session) -> None:
        _run_case(session, case)

    session_fn.__doc__ = f"Case {case}: build, run, record and report (cases/{case}/README.md)."
    return session_fn


# Every other case folder gets a session named after it: a new case (`python -m gpurepro new
# NAME`) needs no edit here, and `nox -s <case>` is the rerun command for any case.
for _manifest in sorted(ROOT.glob("cases/*/manifest.py")):
    _case = _manifest.parent.name
    if _case != "tile_unload_race":
        nox.session(python=PYTHON, name=_case)(_case_session(_case))


@nox.session(python=PYTHON)
def tcgen05_sass(session: nox.Session) -> None:
    """Case 2: PTX -> SASS table and tcgen05.alloc lowering from the pinned ptxas/nvdisasm (no GPU)."""
    _install_project(session)
    _install_pins(session, "tcgen05_alloc_order", "sm_103a")
    out = session.posargs[0] if session.posargs else "build/tcgen05_sass"
    session.run("python", "-m", "gpurepro.building.lowering", "--spec",
                "cases/tcgen05_alloc_order/lowering.py", "--name", "sass_analysis", "--arch",
                "sm_103a", "--arch", "sm_100a", "--out", out)


TOOLCHAIN_RECORDS = ROOT / ".nox" / "toolchains"


@nox.session(python=PYTHON)
@nox.parametrize(("case", "target"), TEST_TOOLCHAINS,
                 ids=[f"{case}-{target}" for case, target in TEST_TOOLCHAINS])
def toolchain(session: nox.Session, case: str, target: str) -> None:
    """A case's locked toolchain for one target, in an environment of its own (pins conflict)."""
    session.install("-e", ".", "--no-deps")  # the build runs gpurepro from inside this env
    _install_pip(session)  # as in the case's own session
    _install_pins(session, case, target)
    # The tests find this environment through a file, not through printed output.
    TOOLCHAIN_RECORDS.mkdir(parents=True, exist_ok=True)
    (TOOLCHAIN_RECORDS / f"{case}@{target}").write_text(str(session.virtualenv.location) + "\n")


# The toolchain matrix of tile_unload_race (cases/tile_unload_race/matrix.py): 45 cells, one
# per cuda-tile release x tileiras family, each a session of its own environment. They live in
# noxfile_matrix.py (`nox -f noxfile_matrix.py -l` lists them), so that `nox -l` here stays a
# list a person reads; this session runs them (all, or those named after --) and then collects.
@nox.session(python=False)
def tile_matrix(session: nox.Session) -> None:
    """Toolchain matrix, CPU stage: every cell (noxfile_matrix.py), then tile_matrix_collect.

    Each cell installs its pins in its own environment, exports the kernel for sm_90 and
    records what it emits; no GPU needed. `nox -s tile_matrix -- 1.7.0-13.5` runs one cell."""
    cells = [f"cell({c})" for c in session.posargs] if session.posargs else []
    session.run(sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile_matrix.py"),
                *(["-s", *cells] if cells else []), external=True)
    session.notify("tile_matrix_collect")


@nox.session(python=False, requires=["analysis"])
def tile_matrix_collect(session: nox.Session) -> None:
    """Toolchain matrix: the cells' records -> the CPU document the GPU stage reads.

    The cells' records and ELF facts become build/matrix/tile_unload_race/sm_90/matrix.cpu.json."""
    _analysis(session, "matrix", "collect", "tile_unload_race", *session.posargs)


@nox.session(python=False, requires=["analysis"])
def tile_matrix_assemble(session: nox.Session) -> None:
    """Toolchain matrix: the CPU document and the GPU stage's folder -> one matrix document.

    nox -s tile_matrix_assemble -- GPU_OUT [--force] writes
    results/tile_unload_race/matrix_<stamp>_<gpu>.json."""
    _analysis(session, "matrix", "assemble",
              "build/matrix/tile_unload_race/sm_90/matrix.cpu.json", *session.posargs)


@nox.session(python=PYTHON)
def bisect(session: nox.Session) -> None:
    """A case over every release of one toolchain axis (Case.axes), boundaries in one document.

    The CPU stage with the case's pins, the GPU stage where a GPU is, the document:
    nox -s bisect -- CASE --axis NAME [--stage cpu|gpu|assemble] [--exhaustive] [--gpu-out DIR]
    (python -m gpurepro bisect --help)."""
    if not session.posargs or session.posargs[0].startswith("-"):
        session.error("usage: nox -s bisect -- CASE --axis NAME [options]")
    case, args = session.posargs[0], list(session.posargs)
    _install_project(session)
    _install_pip(session)
    target = _flag_value(args, "--arch") or _target(session, case)
    _install_pins(session, case, target)
    _run_gpurepro(session, "bisect", *args)


@nox.session(python=False)
def new(session: nox.Session) -> None:
    """A new case folder from the scaffold of its kind, with nothing installed.

    nox -s new -- NAME [--kind K] (make new NAME=... KIND=...). The scaffold is the standard
    library's: it runs under nox's own Python with the checkout's src/ on its path, so a fresh
    clone needs no install."""
    if not session.posargs or session.posargs[0].startswith("-"):
        session.error("usage: nox -s new -- NAME [--kind crash|wrong-result|slowdown|python|"
                      "python-value] (make new NAME=... KIND=...)")
    _run_gpurepro(session, "new", *session.posargs, python=sys.executable,
                  env={"PYTHONPATH": str(ROOT / "src")})


@nox.session(python=False, requires=["analysis"])
def plan(session: nox.Session) -> None:
    """A case's trials and expected GPU time before any GPU is used; nothing built or run.

    Its arms, trials, design, the claims' chances and the expected GPU time (what a new case
    assumes without committed results). nox -s plan -- CASE [run flags] (make plan CASE=...
    ARGS=...)."""
    if not session.posargs or session.posargs[0].startswith("-"):
        session.error("usage: nox -s plan -- CASE [run flags] (make plan CASE=...)")
    _analysis(session, "plan", *session.posargs)


@nox.session(python=PYTHON)
def pack(session: nox.Session) -> None:
    """A case built and packed for an offline GPU node: one archive, run there by python3 run.py.

    nox -s pack -- CASE [--arch T] [--arms A,B | --deep] [--bisect AXIS] [--redact]
    (python -m gpurepro pack --help); the archive goes to build/packs/."""
    if not session.posargs or session.posargs[0].startswith("-"):
        session.error("usage: nox -s pack -- CASE [pack options]")
    case, args = session.posargs[0], list(session.posargs)
    _install_project(session)
    _install_pip(session)
    # The pack's own choice of target (its --arch, the case's only one, or its Hopper one), not
    # this machine's GPU: a pack is made where the toolchain installs, for another node.
    out = Path(session.create_tmp()) / f"{case}.pack-target.json"
    out.unlink(missing_ok=True)
    _run_gpurepro(session, "pack", *args, "--target-out", str(out))
    chosen = json.loads(out.read_text())
    _install_toolchain(session, case, chosen["target"], chosen["pins"])
    _run_gpurepro(session, "pack", *args)


# What every test session's pytest runs under. Where the environment sets PYTHONDONTWRITEBYTECODE,
# each of the suite's Python processes (hundreds: every `python -m gpurepro`, every Python trial
# driver) would compile what it imports from source again, matplotlib and scipy included: half of
# the CPU time of a `record`. The caches are written under .nox/ and into the checkout's
# __pycache__ folders, which git ignores.
TEST_ENV: dict[str, str | None] = {"PYTHONDONTWRITEBYTECODE": None}
# Four workers on two cores: most tests wait on subprocesses (trials, crashes, hangs, builds);
# a file's tests stay together, so a module's fixture is made once. The slow tier's groups are
# files too, but test_rerun_literal's are commits (tests/conftest.py): its 14 clones are most of
# that tier's time, and they spread over the workers.
WORKERS = ["-n", "4", "--dist", "loadfile"]
SLOW_WORKERS = ["-n", "4", "--dist", "loadgroup"]
# Each tier's JUnit report, which `python tests/durations.py` reads (the slowest tests, totals).
REPORTS = ROOT / "build" / "test-reports"


def _toolchain_env() -> dict[str, str]:
    """GPUREPRO_TOOLCHAINS: the environments the `toolchain` sessions made, for the build tests."""
    toolchains = [f"{record.name}={record.read_text().strip()}"
                  for record in sorted(TOOLCHAIN_RECORDS.glob("*@*"))
                  if Path(record.read_text().strip(), "bin", "python").exists()]
    return {"GPUREPRO_TOOLCHAINS": os.pathsep.join(toolchains)}


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The fast tier (make test): pytest -m "not slow", no GPU and no toolchain needed.

    GPU tests skip with the reason (docs: Testing). Arguments after -- replace -q and the
    workers (a -m of their own replaces the tier)."""
    _install_project(session, "test")
    session.run("pytest", "-m", "not slow", f"--junitxml={REPORTS / 'fast.xml'}",
                *(session.posargs or ["-q", *WORKERS]),
                env={**TEST_ENV, **_toolchain_env()})


@nox.session(python=PYTHON)
def tests_slow(session: nox.Session) -> None:
    """The slow tier's pytest (pytest -m "slow and not history"), as make test-slow runs it.

    make test-slow runs the `toolchain` sessions first, whose environments its build tests
    use, and tests_py and the cluster tests after: fault injection at volume, every committed
    document re-rendered, the newest document of each case's rerun steps executed as the issue
    comment prints them, the builds with real nvcc/tileiras, every case's default plan,
    packaging, a fresh clone's main job."""
    _pytest_with_nox(session, "slow and not history", "slow.xml", SLOW_WORKERS)


@nox.session(python=PYTHON)
def tests_history(session: nox.Session) -> None:
    """The history tier's pytest (pytest -m history), as make test-history runs it.

    CI runs it after make check: the rerun steps of every older committed document, one clone
    of each commit they name. Its time grows with the committed runs (about 25 s a commit on 2
    idle cores), which is why it is a tier of its own and not part of make check's budget."""
    _pytest_with_nox(session, "history", "history.xml", SLOW_WORKERS)


def _pytest_with_nox(session: nox.Session, marks: str, report: str, workers: list[str]) -> None:
    """pytest -m MARKS in the test environment; the rerun steps these tiers execute call nox:
    this one (GPUREPRO_NOX)."""
    _install_project(session, "test")
    here = Path(sys.executable).parent / "nox"
    session.run("pytest", "-m", marks, f"--junitxml={REPORTS / report}",
                *(session.posargs or ["-q", *workers]),
                env={**TEST_ENV, **_toolchain_env(),
                     **({"GPUREPRO_NOX": str(here)} if here.is_file() else {})})


@nox.session(python=PYTHON)
def slurm_test(session: nox.Session) -> None:
    """Cluster runs through a real Slurm: a one-node cluster on localhost, started and stopped.

    The tests install Debian's slurm-wlm and munge first when missing (as root), then run job
    arrays on two partitions, a task cancelled mid-run, --resume, --until-decided."""
    _install_project(session, "test")
    session.run("pytest", "-v", "-s", "tests/cluster/test_slurm.py", *session.posargs,
                env={**TEST_ENV, "GPUREPRO_SLURM_TEST": "1"})


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the harness, cases and tests; mypy --strict over src/.

    mypy reads its configuration from pyproject.toml ([tool.mypy]). The reporters' seed files
    are left as filed."""
    _install_project(session, "lint")
    session.run("ruff", "check", "src", "tests", "cases", "noxfile.py", "bench")
    session.run("mypy")


SITE = ROOT / "build" / "site"


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """The documentation site (make docs): ProperDocs, warnings as errors, into build/site.

    ProperDocs is the maintained continuation of MkDocs 1.x; it reads mkdocs.yml. Its results
    section is generated from results/ at build time (docs/hooks/results.py,
    gpurepro.report.site): every committed document rendered, each case's page linking its
    runs; the built HTML is then checked (gpurepro.report.sitecheck: lists, titles, nothing
    loaded from outside, every internal link) and a problem fails the build. Arguments after
    -- go to `properdocs build` (e.g. --site-dir DIR)."""
    _install_project(session, "docs")
    session.run("properdocs", "build", "-f", "mkdocs.yml", "--strict", "--clean",
                *(session.posargs or ["--site-dir", str(SITE)]))


# One analysis environment (gpurepro[analysis]: scipy, matplotlib, jsonschema, rich, pyperf,
# pyelftools) serves every session that reads or writes documents: `analysis` builds it and
# writes where it is; the others need it (`requires`), make no environment of their own, and
# run its interpreter.
ANALYSIS_RECORD = ROOT / ".nox" / "analysis.location"


@nox.session(python=PYTHON)
def analysis(session: nox.Session) -> None:
    """The one analysis environment (gpurepro[analysis]) the document sessions share.

    validate, calibrate, report, compare, issue, env, tile_matrix_collect and
    tile_matrix_assemble require it and run its interpreter."""
    _install_project(session)
    ANALYSIS_RECORD.write_text(str(Path(session.virtualenv.location).resolve()))


def _analysis(session: nox.Session, *args: str, status: bool = True) -> None:
    """Run `python -m gpurepro ARGS` in the shared analysis environment."""
    python = str(Path(ANALYSIS_RECORD.read_text().strip(), "bin", "python"))
    if status:
        _run_gpurepro(session, *args, python=python)
    else:
        session.run(python, "-m", "gpurepro", *args)


@nox.session(python=False, requires=["analysis"])
def validate(session: nox.Session) -> None:
    """Validate every result document under results/ against schema/."""
    _analysis(session, "validate", *(session.posargs or ["results"]), status=False)


@nox.session(python=False, requires=["analysis"])
def calibrate(session: nox.Session) -> None:
    """Simulate a case's claims on its design: nox -s calibrate -- tile_unload_race --runs 2000 --json"""
    if not session.posargs:
        session.error("give a case: nox -s calibrate -- <case> [--runs N --seed S --json ...]")
    _analysis(session, "calibrate", *session.posargs)


@nox.session(python=False, requires=["analysis"])
def report(session: nox.Session) -> None:
    """Regenerate a result's Markdown and plots: nox -s report -- results/<case>/<file>.json"""
    if not session.posargs:
        session.error("give a result document: nox -s report -- results/<case>/<file>.json")
    for path in session.posargs:
        _analysis(session, "report", path, status=False)


@nox.session(python=False, requires=["analysis"])
def compare(session: nox.Session) -> None:
    """Runs of one case side by side: nox -s compare -- A.json B.json [--json] [--fail-on-change]"""
    if len(session.posargs) < 2:
        session.error("give two or more result documents: nox -s compare -- A.json B.json")
    _analysis(session, "compare", *session.posargs)


@nox.session(python=False, requires=["analysis"])
def history(session: nox.Session) -> None:
    """A case's runs across drivers, GPUs and toolchains, with a regression check.

    nox -s history -- CASE [--plot FILE.png] [--fail-on-regression] [--format json|terminal]"""
    if not session.posargs:
        session.error("give a case: nox -s history -- tile_unload_race")
    _analysis(session, "history", *session.posargs)


@nox.session(python=False, requires=["analysis"])
def issue(session: nox.Session) -> None:
    """A GitHub comment for a result: nox -s issue -- RESULT.json [--out FILE] [--matrix M.json]"""
    if not session.posargs:
        session.error("give a result document: nox -s issue -- results/<case>/<file>.json")
    _analysis(session, "issue", *session.posargs)


@nox.session(python=False, requires=["analysis"])
def env(session: nox.Session) -> None:
    """Print the environment fingerprint (add -- --redact to drop hostname and home paths)."""
    _analysis(session, "env", *session.posargs, status=False)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks (ratios measured side by side) into results/bench/; GPU ones need a GPU."""
    _install_project(session)
    target = _target(session, "tile_unload_race")
    _install_pins(session, "tile_unload_race", target)
    session.run("python", "-m", "gpurepro", "build", "tile_unload_race", "--arch", target)
    session.run("python", "bench/harness_overhead.py")
    gpus = session.run("python", "-c",
                       "from gpurepro.env.fingerprint import gpus; g = gpus(); print(len(g['gpus']) if g['available'] else 0)",
                       silent=True)
    count = int(str(gpus).strip().splitlines()[-1])
    if count == 0:
        session.log("no GPU here: loop_rate and gpu_scaling skipped")
        return
    session.run("python", "bench/loop_rate.py", "--build-index",
                f"build/tile_unload_race/{target}/artifacts.json")
    if count >= 2:
        session.run("python", "bench/gpu_scaling.py", "--arch", target)


# The run stage and the record step on every Python the package supports (pyproject.toml's
# classifiers): the GPU nodes run the run stage on their own Python (3.12 on the H200 image).
# And every case's runtime packages (test_case_runtimes): downloaded as wheels for that Python,
# every arm prepared by the run stage and its packages imported on it.
TESTS_PY = ["tests/run/test_stdlib_run.py", "tests/e2e/test_run_resume.py",
            "tests/run/test_classify.py", "tests/model/test_plan.py", "tests/run/test_trials.py",
            "tests/building/test_case_runtimes.py"]


@nox.session(python=PYTHONS)
def tests_py(session: nox.Session) -> None:
    """The run stage and the record step on one supported Python, both tiers of their files.

    make test-slow runs them on every Python of pyproject.toml's classifiers."""
    # make test-slow sets this: on the interpreter nox runs under, `tests` (make test) and
    # `tests_slow` have run every test of these files already, so a third run repeats them.
    tiers_python = ".".join(map(str, sys.version_info[:2]))
    if os.environ.get("GPUREPRO_TIERS_RAN_HERE") == "1" and session.python == tiers_python:
        session.skip(f"the fast and slow tiers run these files on Python {tiers_python}, the "
                     "interpreter nox runs under")
    _install_project(session, "test")
    session.run("pytest", *(session.posargs or ["-q", *WORKERS, *TESTS_PY]), env=TEST_ENV)


@nox.session(python=PYTHON)
def lock(session: nox.Session) -> None:
    """Write locks/ (exact versions, hashes); `nox -s lock -- --check` says if one is stale.

    One lock per case and build target (locks/toolchain/<case>-<target>.txt, from the pins of
    its manifest, kept beside it as the .in) and one per environment of the package's extras
    (analysis, test, lint), each compiled by `uv pip compile --generate-hashes --universal`;
    one per case whose arms compare toolchain releases (locks/releases/<case>.json: each
    release's wheel for the build machine and its sha256, as pip resolves it).
    Only the locks whose input changed are compiled (locks/inputs.json keeps each input's
    sha256), a lock is rewritten only where its text changes (so .venv/ is not reinstalled for
    an unchanged locks/nox.txt), and the locks of targets no case has any more are removed.
    --check compiles every lock again into a copy that starts from the committed one (uv keeps
    a locked version that still satisfies its input), and fails where the copy differs: an
    input changed without its lock, or a lock that no longer resolves as committed."""
    session.install(UV)
    # pip: the toolchain releases' locks (locks/releases/) are resolved by pip's own resolver.
    session.install("pip")
    session.install("-e", ".", "--no-deps")
    check = "--check" in session.posargs
    if check:
        session.run("python", "-m", "gpurepro.building.locks", "stale", str(ROOT))
    session.run("python", "-m", "gpurepro.building.locks", "releases", str(ROOT),
                *(["--check"] if check else []))
    # Each lock compiled where its input changed (all of them under --check), into a copy; the
    # committed lock replaced only where the text differs (gpurepro.building.locks.compile_locks).
    session.run("python", "-m", "gpurepro.building.locks", "lock", str(ROOT),
                *(["--check"] if check else []))
