"""How a maintainer reruns a result: the clone, the commit, the nox command with its seed, and
the same without nox.

The command's arguments come from the document alone (its plan and options). The repository's
URL is the project's, not the run's (gpurepro.project: ``GPUREPRO_REPOSITORY_URL`` when set,
else the ``Repository`` entry of ``[project.urls]``). A placeholder there (a host under
``.invalid``) is never printed: the steps then say where the clone comes from in words.

Every line of the shell blocks is the harness's: each word from the document is shell-quoted
with its line breaks and other control characters made spaces (``shell_words``), and the block
is a fence no word can close (tables.fence).
"""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..cluster import merge
from ..model.builds import Toolchain
from ..model.design import DECISIVE, DEFAULT_SPENDING, DEFAULT_SUPPORTED_SHARE, DesignSpec
from ..model.plan import Plan, PlannedTrial, make_plan
from ..model.result import Result, as_result
from ..project import URL_VARIABLE
from ..run.rerun_of import VARIABLE as RERUN_OF
from .compare import design_numbers
from .tables import code, escape, fence

# What other modules use; the rest is this module's own.
__all__ = [
    "arms_as_given", "budget_arguments", "left_to_node", "NOX_IF_MISSING", "pins",
    "release_notes", "rerun_arguments", "rerun_section", "session_for", "shortest_rerun",
    "unpinned_bindings"
]

# Sessions by the name their users know, in every noxfile since the first; a case folder's own
# session (noxfile.py gives every case one) came later, and a commit before it has none.
SESSIONS = {"tcgen05_alloc_order": "tcgen05_ablation"}


def session_for(case: str) -> str:
    """The nox session that runs ``case`` at any commit: its alias where it has one, else the
    session of its folder's name."""
    return SESSIONS.get(case, case)


def shell_words(words: Sequence[object]) -> str:
    """Words as one shell command line: each quoted, none able to end the line (a line break
    or any other control character in a document's value is a space)."""
    return " ".join(shlex.quote(_one_line(w)) for w in words)


_CONTROL = {c: " " for c in (*range(32), 127, 0x85, 0x2028, 0x2029)}


def _one_line(value: object) -> str:
    return str(value).translate(_CONTROL)


def _arg(x: float) -> str:
    """A number as a command-line value: as short as it is exact (5, 0.2, 1e+06)."""
    return f"{x:g}"


def rerun_arguments(doc: Result | Mapping[str, Any]) -> list[str]:
    """The `gpurepro case` arguments that repeat this run's plan and options: where it ran, its
    arms (``scope_arguments``), its design (``design_arguments``), seed, budget, jobs, GPUs,
    named priors and redaction."""
    r = as_result(doc)
    opts = r.options
    # A cluster run reruns on its partitions, each with its own target.
    where = (merge.rerun_arguments(r.fields["cluster"]) if r.cluster
             else ["--arch", str(r.device.target)])
    args = [*where, *scope_arguments(r)]
    if not r.design.sequential:
        per_arm = set(r.plan.trials_per_arm.values())
        if per_arm:
            args += ["--trials", str(max(per_arm))]
    args += ["--seed", str(r.plan.seed)]
    args += budget_arguments(opts.budget)
    args += ["--jobs", str(opts.jobs)]
    if opts.gpus:
        args += ["--gpus", ",".join(map(str, opts.gpus))]
    if r.design.sequential:
        args += design_arguments(r.design)
    args += priors_arguments(r.design)
    if opts.redact:
        args.append("--redact")
    return args


def scope_arguments(r: Result) -> list[str]:
    """Which arms: the case's main question (``scope`` "main": `case`'s default, no flag),
    every arm (``"deep"``: ``--deep``), or the arms the plan names (``"arms"``, and every run
    recorded before runs had a scope)."""
    scope = r.options.scope
    if scope == "main":
        return []
    if scope == "deep":
        return ["--deep"]
    return ["--arms", ",".join(arms_as_given(r.plan))]


def _unshuffled(items: Sequence[Any], seed: int) -> list[Any]:
    """``items`` as they were before ``random.Random(seed).shuffle`` put them in this order
    (a shuffle's permutation depends on the seed and the length alone)."""
    where = list(range(len(items)))
    random.Random(seed).shuffle(where)
    out: list[Any] = [None] * len(items)
    for position, index in enumerate(where):
        out[index] = items[position]
    return out


def arms_as_given(plan: Plan | Mapping[str, Any]) -> list[str]:
    """The plan's arms in the order the run was given them. The order is an input of the
    seeded shuffle, and the journal keeps the arms by name, sorted: a rerun with the arms in
    that order would shuffle another plan. It is read back from the shuffle itself: the first
    of the randomized blocks (model/plan.py) holds one trial of every arm, and the first
    harness's plan (before 2026-11-30T03:30Z) was one shuffle of every arm's trials, arm after
    arm; each reading counts only where shuffling again gives the plan's order. Else the arms
    as the plan lists them."""
    if not isinstance(plan, Plan):
        plan = Plan.from_json(plan)
    order = [(str(t.arm), int(t.rep)) for t in plan.order]
    seed, counts = plan.seed, {str(k): int(v) for k, v in plan.trials_per_arm.items()}
    first = _unshuffled(order[:sum(1 for c in counts.values() if c > 0)], seed)
    in_blocks = [arm for arm, _ in first]
    if make_plan(str(plan.case), {a: {} for a in counts}, counts, seed, in_blocks).order \
            == tuple(PlannedTrial(i, a, r) for i, (a, r) in enumerate(order)):
        return in_blocks
    whole = list(dict.fromkeys(arm for arm, _ in _unshuffled(order, seed)))
    slots = [(a, r) for a in whole for r in range(counts.get(a, 0))]
    random.Random(seed).shuffle(slots)
    return whole if slots == order else list(plan.arms)


def design_arguments(design: DesignSpec) -> list[str]:
    """A sequential run's own design: the decisive design (``design`` "decisive": its looks
    and priors are fixed at the start from the same numbers) or the group-sequential one."""
    max_trials, step = design_numbers(design)
    if design.decisive:
        args = ["--decisive"]
        # The rerun checks out the run's own commit, whose defaults are the design it ran where
        # it journaled no spending or share (the commits before either existed); a journaled
        # one is named where it is not today's default.
        if design.spending is not None and design.spending != DEFAULT_SPENDING:
            args += ["--alpha-spending", str(design.spending)]
        share = design.supported_share
        if share is not None and share != DEFAULT_SUPPORTED_SHARE:
            args += ["--supported-share", _arg(share)]
        # A horizon chosen by rule ("auto", the default since horizons exist) comes again by the
        # same rule from the same commit's results; one given, or none asked for, is named.
        choice = design.described.get("horizon_choice")
        if design.described.get("rate_test") == "constant_rate":
            args += ["--horizon", "none"]
        elif isinstance(choice, dict) and choice.get("how") == "given with --horizon":
            args += ["--horizon", _arg(float(str(design.horizon)))]
    else:
        args = ["--until-decided"]
    if max_trials is not None:
        args += ["--max-trials", str(max_trials)]
    if step is not None and design.kind != DECISIVE:
        args += ["--look-every", str(step)]
    # A journaled design always has its alpha (model/design.py refuses one without).
    args += ["--alpha", _arg(design.alpha)]
    return args


def priors_arguments(design: DesignSpec) -> list[str]:
    """``--priors-from`` with the documents a run was given (``priors_named``); priors chosen by
    rule from the committed documents come again by the same rule at the same commit."""
    named = design.priors_from if design.described.get("priors_named") is True else None
    return ["--priors-from", *map(str, named)] if named else []


def budget_arguments(budget: Mapping[str, Any]) -> list[str]:
    """The trial budget as flags. A budget in the case's exposure counter of 0 (none) is
    written only for a run whose harness had the no-progress limit (``stall_s`` in its budget):
    before 2026-11-30 the flag was ``--max-cycles``, and a harness of then refuses
    ``--max-exposure`` (a nonzero budget of then keeps the name its record has)."""
    args = []
    if budget.get("duration_s") is not None:
        args += ["--duration", _arg(budget["duration_s"])]
    if budget.get("timeout_s") is not None:
        args += ["--timeout", _arg(budget["timeout_s"])]
    flag = "--max-cycles" if "max_cycles" in budget else "--max-exposure"
    exposure = budget.get("max_exposure", budget.get("max_cycles"))
    if exposure is not None and (exposure or "stall_s" in budget):
        args += [flag, str(int(exposure))]
    if budget.get("stall_s") is not None:
        args += ["--hang-after", _arg(budget["stall_s"])]
    return args


def pins(r: Result) -> list[str]:
    """The toolchain this run resolved, as exact requirements."""
    return [f"{name}=={version}" for name, version in sorted(r.toolchain.resolved.items())]


def runtime_python(r: Result) -> str | None:
    """The Python the run's runtime wheels are for (its trials import them), or None."""
    python = r.runtime.python if r.runtime else None
    return str(python) if python else None


_BINDINGS = re.compile(r"^cuda\.bindings ([0-9][0-9A-Za-z.+!-]*)$")


def left_to_node(doc: Result | Mapping[str, Any]) -> list[str]:
    """The requirements the run's runtime left to the GPU node (``Runtime.from_node``), as
    exact pins at the versions the node had."""
    r = as_result(doc)
    found: dict[str, str] = {}
    for arm in (r.runtime.arms if r.runtime else {}).values():
        for req in arm.from_node:
            if req.name and req.version:
                found[str(req.name)] = f"{req.name}=={req.version}"
    return [found[k] for k in sorted(found)]


def ran_python_drivers(r: Result) -> bool:
    """Whether a trial of the run was a Python driver (the interpreter, then a script)."""
    return any(len(t.command) > 1 and str(t.command[1]).endswith(".py") for t in r.trials)


def unpinned_bindings(doc: Result | Mapping[str, Any]) -> list[str]:
    """cuda-bindings as the GPU node had it installed (the fingerprint's cuda.bindings), where
    the run pinned it for no arm and ran a Python driver: that driver imported the node's."""
    r = as_result(doc)
    if not ran_python_drivers(r):
        return []
    pinned = {name for arm in (r.runtime.arms if r.runtime else {}).values()
              for name in arm.resolved}
    source = str(r.environment.cuda_python.source or "")
    m = _BINDINGS.match(source)
    return [f"cuda-bindings=={m.group(1)}"] if m and "cuda-bindings" not in pinned else []


def _clone_lines(url: str | None) -> list[str]:
    if url:
        return [f"git clone {shell_words([url])} gpurepro", "cd gpurepro"]
    return [f"# in a clone of gpurepro: no repository URL is configured where this was made "
            f"(set {URL_VARIABLE}, or [project.urls] Repository in pyproject.toml, and the "
            f"clone step is printed here)"]


def _checkout_lines(r: Result, url: str | None,
                    document: str | None = None) -> tuple[list[str], list[str]]:
    """(shell lines that get the exact tree, notes about it); with ``document`` (the document's
    path in the repository, where it is committed), its copy out of the clone first."""
    repo = r.environment.repository
    commit = repo.commit
    notes = []
    lines = [*_clone_lines(url), *_fetch_lines(document)]
    found_elsewhere = repo.manifest_found not in (None, "named")
    if commit:
        lines.append(f"git checkout {shell_words([commit])}")
        if repo.dirty and not found_elsewhere:  # else the tree that was dirty is another
            notes.append(f"The recording checkout had uncommitted changes on top of "
                         f"{code(commit)}: this commit is the nearest exact tree.")
    else:
        lines.append("# no commit to check out: the note below says why")
        if not repo.has_manifest:
            notes.append("The document names no commit (a tree copied without git and without "
                         "GPUREPRO_COMMIT): check out the release whose version it names.")
    if found_elsewhere:
        notes.append(f"The commit: {escape(repo.manifest_note or '')}.")
    return lines, notes


# Where no nox is on PATH, the one the Makefile installs from the commit's own lock (the README's
# set-up does the same), so that the block runs when pasted on a machine with only Python and g++.
NOX_IF_MISSING = ('command -v nox >/dev/null || { make .venv/bin/nox && '
                  'export PATH="$PWD/.venv/bin:$PATH"; }')


def _nox_line(r: Result, check: str = "") -> str:
    session = shell_words([session_for(r.case.name)])
    python = runtime_python(r)
    forced = f" --force-python {shell_words([python])}" if python else ""
    return f'{check}nox -s {session}{forced} -- "${{ARGS[@]}}"'


def _fetched(document: str) -> str:
    """Where the rerun block puts the document it checks itself against: beside the clone."""
    return f"../{Path(document).name}"


def _fetch_lines(document: str | None) -> list[str]:
    """The line that copies the committed document out of the clone's default branch before
    the checkout (the commit the run ran is older than the document)."""
    if document is None:
        return []
    return [f"git show {shell_words(['origin/HEAD:' + document])} > "
            f"{shell_words([_fetched(document)])}  # this document: the rerun checks itself "
            f"against it"]


def _check_prefix(document: str | None) -> str:
    """The variable that has the rerun compare its artifacts and verdict with the document
    (gpurepro.run.rerun_of; a commit from before it runs as it always did)."""
    if document is None:
        return ""
    return f"{RERUN_OF}={shell_words([_fetched(document)])} "


def _plain_lines(r: Result, check: str = "") -> list[str]:
    """The same without nox: an environment of the runtime's Python where the run carried
    wheels, the package with the resolved toolchain and the node's packages, the case."""
    case = shell_words([r.case.name])
    python = runtime_python(r)
    lines = []
    if python:
        venv = shell_words([f"python{python}"])
        lines.append(f"{venv} -m venv .venv-rerun && . .venv-rerun/bin/activate")
    extra = pins(r) + left_to_node(r) + unpinned_bindings(r)
    lines.append("python -m pip install -e '.[analysis]'" + (" " + shell_words(extra) if extra else ""))
    lines.append(f'{check}python -m gpurepro case {case} "${{ARGS[@]}}"')
    return lines


def _runtime_notes(r: Result) -> list[str]:
    notes = []
    python = runtime_python(r)
    if python:
        notes.append(f"The run's trials imported packages carried as wheels for Python "
                     f"{escape(python)} (the case's runtime pins): both commands run on that "
                     f"Python (`--force-python`, the environment above), so that the build "
                     f"downloads the same wheels again.")
    node = left_to_node(r)
    if node:
        notes.append(f"The case left {', '.join(code(p) for p in node)} to the GPU node's own "
                     f"installation, at these versions there: the steps without nox install "
                     f"them, nox only what the case pins.")
    bindings = unpinned_bindings(r)
    if bindings:
        notes.append(f"The GPU node had {code(bindings[0])} installed, which the case at this "
                     f"commit pins for no arm; a Python driver of the run imported that one: the "
                     f"steps without nox install it, nox only what the case pins.")
    return notes


def shortest_rerun(doc: Result | Mapping[str, Any], url: str | None = None) -> list[str]:
    """The fewest shell lines that rerun the document's design: the clone where a URL is known,
    the commit, and the nox command with the arguments written out (the comment's head; the
    "Rerun it" section has the same with the steps without nox)."""
    r = as_result(doc)
    commit = r.environment.repository.commit
    lines = _clone_lines(url) if url else []
    if commit:
        lines.append(f"git checkout {shell_words([commit])}")
    nox = _nox_line(r).replace('"${ARGS[@]}"', shell_words(rerun_arguments(r)))
    return [*lines, NOX_IF_MISSING, nox]


def rerun_section(doc: Result | Mapping[str, Any], url: str | None = None,
                  document: str | None = None) -> list[str]:
    """The "Rerun it" section: clone and checkout, the nox command, the same without nox. The
    arguments are written once, as a shell array both commands expand (bash and zsh alike)."""
    r = as_result(doc)
    args = shell_words(rerun_arguments(r))
    checkout, notes = _checkout_lines(r, url, document)
    check = _check_prefix(document)
    out = ["### Rerun it", "",
           *fence("\n".join([*checkout, NOX_IF_MISSING, f"ARGS=({args})",
                             _nox_line(r, check)]), "sh")]
    out += notes
    if document is not None:
        out.append(f"The rerun checks itself against this document ({code(RERUN_OF)}): after "
                   f"the build it prints how many artifacts are identical to the document's and "
                   f"each that differs, with both hashes, and it exits 0 when the verdict is "
                   f"reproduced, 6 when not, 125 when the trials could not run (`git bisect "
                   f"run` skips that commit); a commit from before this check ignores it.")
    out.append(f"The session installs the case's pinned toolchain for "
               f"{code(r.device.target)}. The same without nox, with the versions this "
               f"run resolved (Python 3.11+; recording, reports and the sequential designs need "
               f"the `analysis` extra):")
    out += fence("\n".join(_plain_lines(r, check)), "sh")
    out += [*_runtime_notes(r), *release_notes(r.case.name, r.toolchain), ""]
    return out


def release_notes(case: str, toolchain: Toolchain) -> list[str]:
    """The toolchain release each arm's artifacts were built with (``toolchain.arms``), which
    both ways of rerunning fetch again: the build downloads the wheels the case's lock names
    (locks/releases/<case>.json) and checks their sha256."""
    if not toolchain.releases:
        return []
    parts = []
    for arm, releases in toolchain.releases.items():
        for release in releases:
            parts.append(f"{code(arm)} {code(release.package + '==' + release.version)} "
                         f"(wheel sha256 {code(release.sha256[:12])})")
    lock = f"locks/releases/{case}.json"
    return [f"The arms compare toolchain releases; the build fetches each from the case's lock "
            f"{code(lock)} with pip and checks its sha256 before building with it: "
            f"{'; '.join(parts)}."]
