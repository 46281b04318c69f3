"""Which commits of the project's history hold a given manifest, by its sha256.

A run records the manifest it ran by sha256 (the journal header's ``manifest_sha256``) and a
commit (the checkout's HEAD, or ``GPUREPRO_COMMIT`` where a copied tree names its sender's).
The two can disagree: a tree with uncommitted changes, a hand-set ``GPUREPRO_COMMIT``. These
functions ask git (three processes whatever the history's length: the commits, the manifest's
blob at each, the blobs' contents) and answer in terms of commits a maintainer can check out.
Standard library only: the run stage checks ``GPUREPRO_COMMIT`` with them on a GPU node.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# What other modules use; the rest is this module's own.
__all__ = [
    "Commit", "commit_time", "committed_as_is", "committed_results", "history", "holders",
    "manifest_at", "named_commit_differs", "nearest_to", "own_repository", "resolve", "shallow"
]

TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Commit:
    sha: str
    time: int  # committer time, seconds since the epoch


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes | None:
    """git's stdout, or None where git is missing or the command fails."""
    if shutil.which("git") is None:
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True,
                              timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def own_repository(root: Path) -> bool:
    """Whether ``root`` is the top of a git work tree of its own (not a folder copied into
    another repository, whose history says nothing about this tree)."""
    top = _git(root, "rev-parse", "--show-toplevel")
    return top is not None and Path(top.decode().strip()).resolve() == root.resolve()


def shallow(root: Path) -> bool:
    """Whether the clone's history is cut short (``git clone --depth``)."""
    out = _git(root, "rev-parse", "--is-shallow-repository")
    return out is not None and out.decode().strip() == "true"


def resolve(root: Path, name: str) -> str | None:
    """The full sha of commit ``name`` (a full or short sha), or None if the history here lacks
    it or ``name`` is not a sha (a recorded value is never read as a git option or a ref)."""
    if not re.fullmatch(r"[0-9a-f]{4,64}", name or ""):
        return None
    out = _git(root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    return out.decode().strip() if out else None


def commit_time(root: Path, sha: str) -> int | None:
    """The committer time of commit ``sha`` (seconds since the epoch), or None where the history
    here lacks it."""
    out = _git(root, "show", "-s", "--format=%ct", sha) if resolve(root, sha) else None
    text = out.decode().strip() if out else ""
    return int(text) if text.isdigit() else None


def history(root: Path) -> list[Commit]:
    """Every commit HEAD reaches, newest first (by committer time)."""
    out = _git(root, "log", "--format=%H %ct", "HEAD")
    commits = []
    for line in (out or b"").decode().splitlines():
        sha, _, time = line.partition(" ")
        commits.append(Commit(sha, int(time)))
    return commits


def manifest_sha256s(root: Path, commits: list[str], path: str) -> dict[str, str | None]:
    """Commit -> sha256 of the file ``path`` (relative to the repository) at that commit, None
    where the commit has no such file."""
    if not commits:
        return {}
    query = "".join(f"{c}:{path}\n" for c in commits).encode()
    listed = (_git(root, "cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=query)
              or b"").decode().splitlines()
    blobs = {}
    for commit, line in zip(commits, listed, strict=False):
        oid, _, kind = line.partition(" ")
        blobs[commit] = oid if kind == "blob" else None
    contents = _blob_sha256s(root, sorted({b for b in blobs.values() if b}))
    return {c: contents.get(b) if b else None for c, b in blobs.items()}


def _blob_sha256s(root: Path, blobs: list[str]) -> dict[str, str]:
    """Blob id -> sha256 of its content, read in one `git cat-file --batch`."""
    if not blobs:
        return {}
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode())
    found: dict[str, str] = {}
    data = out or b""
    at = 0
    while at < len(data):
        end = data.index(b"\n", at)
        oid, kind, size = data[at:end].decode().split(" ")
        start = end + 1
        found[oid] = hashlib.sha256(data[start:start + int(size)]).hexdigest()
        at = start + int(size) + 1  # the content, then a line break
    return found


def manifest_at(root: Path, commit: str, path: str) -> str | None:
    """sha256 of ``path`` at ``commit`` (None: the commit has no such file)."""
    return manifest_sha256s(root, [commit], path).get(commit)


def holders(root: Path, path: str, sha256: str) -> list[Commit]:
    """The commits HEAD reaches whose ``path`` has this sha256, newest first."""
    commits = history(root)
    sums = manifest_sha256s(root, [c.sha for c in commits], path)
    return [c for c in commits if sums.get(c.sha) == sha256]


def nearest_to(found: list[Commit], started: int | None) -> Commit | None:
    """Of the commits that hold a run's manifest, the one to check out: the newest committed
    before the run started (the harness nearest to the one that ran it), else the oldest
    committed after it (a manifest the run had before it was committed). Commits made later
    never change the answer, so a document recorded again tomorrow names the same commit."""
    if not found:
        return None
    if started is not None:
        before = [c for c in found if c.time <= started]
        if before:
            return max(before, key=lambda c: c.time)
    return min(found, key=lambda c: c.time)


def named_commit_differs(root: Path, path: str, sha256: str, named: str) -> str | None:
    """Why ``named`` (``GPUREPRO_COMMIT``) cannot be the commit of a run of the manifest
    ``path`` with this sha256, in one line; None when it holds that manifest, or when the
    history here cannot say (no git of its own, a commit it does not have)."""
    if not own_repository(root):
        return None
    full = resolve(root, named)
    if full is None:
        return None
    at = manifest_at(root, full, path)
    if at == sha256:
        return None
    held = f"holds another {path} (sha256 {at[:12]}…)" if at else f"has no {path}"
    return (f"GPUREPRO_COMMIT={named}: that commit {held}, not the manifest this run uses "
            f"(sha256 {sha256[:12]}…), so a rerun of it would run something else; set it to the "
            f"commit this tree is (git rev-parse HEAD), or leave it unset")


def committed_results(case_name: str, root: Path) -> list[Path]:
    """A case's committed result documents, newest first (their names start with a stamp): the
    documents the decisive design takes its priors from (gpurepro.analyze.simulate)."""
    folder = root / "results" / case_name
    files = list(folder.glob("*.json"))
    if not os.environ.get("GPUREPRO_COMMIT"):
        # In a checkout, only what git tracks: a document recorded here and not committed is no
        # committed rate. A tree sent to a GPU node is its sender's commit (GPUREPRO_COMMIT), and
        # whatever .git it carries may describe another one: its files are the committed ones.
        try:
            out = subprocess.run(["git", "ls-files", "-z", "--", str(folder)], cwd=root,
                                 capture_output=True, text=True, check=True).stdout
            files = [root / f for f in out.split("\0") if f]
        except (OSError, subprocess.CalledProcessError):
            pass
    files = [f for f in files if f.suffix == ".json" and not f.name.endswith(".pyperf.json")
             and f.parent == folder and f.is_file() and not f.name.startswith("matrix_")]
    return sorted(files, key=lambda f: f.name, reverse=True)


def committed_as_is(path: Path) -> str | None:
    """``path``'s name in its repository where the repository's HEAD holds that file as it is
    (a committed document, not edited since), else None: the rerun block copies a committed
    document out of the clone to check itself against it."""
    folder = path.resolve().parent
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top is None:
        return None
    root = Path(top.decode().strip()).resolve()
    name = path.resolve().relative_to(root).as_posix()
    held = _git(root, "rev-parse", "--verify", "--quiet", f"HEAD:{name}")
    here = _git(root, "hash-object", "--", name)
    if held is None or here is None or held.strip() != here.strip():
        return None
    return name
