"""How a maintainer reruns a result: the clone, the commit, the nox command with its seed, and
the same without nox.

The command's arguments come from the document alone (its plan and options). The repository's
URL is the project's, not the run's: ``GPUREPRO_REPOSITORY_URL`` when set, else the
``Repository`` entry of ``[project.urls]`` (the installed package's metadata, or the checkout's
``pyproject.toml``). A placeholder there (a host under ``.invalid``, as the project ships until
its public URL is known) is never printed: the steps then say where the clone comes from in
words.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..cluster import merge
from .compare import stopping_numbers
from .tables import cell

URL_VARIABLE = "GPUREPRO_REPOSITORY_URL"
PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"  # in a checkout


def session_for(case: str) -> str:
    """Every case has a nox session of its own name (noxfile.py)."""
    return case


def _configured_url() -> str | None:
    """The Repository URL the package was built with, else the checkout's pyproject.toml."""
    try:
        for entry in metadata.metadata("gpurepro").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() == "repository":
                return url.strip()
    except metadata.PackageNotFoundError:
        pass
    try:
        project = tomllib.loads(PYPROJECT.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    url = (project.get("urls") or {}).get("Repository")
    return str(url) if url else None


def repository_url(environ: Mapping[str, str] | None = None) -> str | None:
    """The URL a maintainer clones gpurepro from, or None while only a placeholder is known."""
    environ = os.environ if environ is None else environ
    url = (environ.get(URL_VARIABLE) or "").strip() or _configured_url()
    if not url:
        return None
    host = urlparse(url).hostname or ""
    if host == "invalid" or host.endswith(".invalid"):
        return None
    return url


def _arg(x: float) -> str:
    """A number as a command-line value: as short as it is exact (5, 0.2, 1e+06)."""
    return f"{x:g}"


def rerun_arguments(doc: Mapping[str, Any]) -> list[str]:
    """The `gpurepro case` arguments that repeat this run's plan and options."""
    plan = doc["plan"]
    opts = plan.get("options") or {}
    budget = opts.get("budget") or {}
    # A cluster run reruns on its partitions, each with its own target.
    where = merge.rerun_arguments(doc) if doc.get("cluster") else ["--arch", str(doc["device"]["target"])]
    args = [*where, "--arms", ",".join(plan["arms"])]
    stopping = opts.get("stopping") or {}
    if not stopping:
        per_arm = set((plan.get("trials_per_arm") or {}).values())
        if per_arm:
            args += ["--trials", str(max(per_arm))]
    args += ["--seed", str(plan["seed"])]
    if budget.get("duration_s") is not None:
        args += ["--duration", _arg(budget["duration_s"])]
    if budget.get("timeout_s") is not None:
        args += ["--timeout", _arg(budget["timeout_s"])]
    exposure = budget.get("max_exposure")
    if exposure is not None:
        args += ["--max-exposure", str(int(exposure))]
    args += ["--jobs", str(opts.get("jobs", 1))]
    if opts.get("gpus"):
        args += ["--gpus", ",".join(map(str, opts["gpus"]))]
    if stopping:
        max_trials, step = stopping_numbers(stopping)
        args.append("--until-decided")
        if max_trials is not None:
            args += ["--max-trials", str(max_trials)]
        if step is not None:
            args += ["--look-every", str(step)]
        if stopping.get("alpha") is not None:
            args += ["--alpha", _arg(stopping["alpha"])]
    if opts.get("redact"):
        args.append("--redact")
    return args


def pins(doc: Mapping[str, Any]) -> list[str]:
    """The toolchain this run resolved, as exact requirements."""
    resolved = doc["toolchain"].get("resolved") or {}
    return [f"{name}=={version}" for name, version in sorted(resolved.items())]


def _checkout_lines(doc: Mapping[str, Any], url: str | None) -> tuple[list[str], list[str]]:
    """(shell lines that get the exact tree, notes about it)."""
    repo = doc["environment"].get("repository") or {}
    commit = repo.get("commit")
    notes = []
    if url:
        lines = [f"git clone {shlex.quote(url)} gpurepro", "cd gpurepro"]
    else:
        lines = ["# in a clone of gpurepro (the project's repository URL is not configured "
                 f"here: {URL_VARIABLE})"]
    if commit:
        lines.append(f"git checkout {shlex.quote(str(commit))}")
        if repo.get("dirty"):
            notes.append(f"The recording checkout had uncommitted changes on top of "
                         f"`{cell(commit)}`: this commit is the nearest exact tree.")
    else:
        notes.append("The document names no commit (a tree copied without git and without "
                     "GPUREPRO_COMMIT): check out the release whose version it names.")
    return lines, notes


def rerun_section(doc: Mapping[str, Any], url: str | None = None) -> list[str]:
    """The "Rerun it" section: clone and checkout, the nox command, the same without nox. The
    arguments are written once, as a shell array both commands expand (bash and zsh alike)."""
    case = doc["case"]["name"]
    args = " ".join(shlex.quote(a) for a in rerun_arguments(doc))
    checkout, notes = _checkout_lines(doc, url)
    out = ["### Rerun it", "", "```sh", *checkout, f"ARGS=({args})",
           f'nox -s {session_for(case)} -- "${{ARGS[@]}}"', "```"]
    exact = pins(doc)
    out.append(f"The session installs the case's pinned toolchain for "
               f"`{cell(doc['device']['target'])}`. The same without nox, with the versions this "
               f"run resolved (Python 3.11+; recording, reports and `--until-decided` need the "
               f"`analysis` extra):")
    install = "python -m pip install -e '.[analysis]'" + "".join(f" {shlex.quote(p)}" for p in exact)
    out += ["```sh", install, f'python -m gpurepro case {case} "${{ARGS[@]}}"', "```"]
    out += [*notes, ""]
    return [_one_line(line) for line in out]


def _one_line(line: str) -> str:
    """A line of the section as one line: a value with a line break in it cannot open or close
    a fence (shell quoting keeps the value itself whole)."""
    return line.replace("\r", " ").replace("\n", " ")
