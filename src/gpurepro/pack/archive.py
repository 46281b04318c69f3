"""Write a pack: what the run stage needs on an offline GPU node, in one archive.

The archive holds one folder, ``<case>-<target>-<commit12>/``, laid out as the repository is
(artifact paths in build indexes are relative to the repository root, so they hold there too):

- ``src/gpurepro/`` and ``native/`` (the harness; the run stage needs only the standard library),
- ``cases/<case>/`` (the manifest the journal's identity hashes),
- ``build/<case>/<target>/artifacts.json`` and every artifact it names, each checked against the
  sha256 the index records,
- ``build/<case>/runtime/`` where the case pins runtime packages: the index and the wheels it
  names for the node's Python, each checked likewise,
- ``results/<case>/*.json``, the committed result documents the decisive design takes its
  priors from, so that the node plans what ``make <case>`` would plan,
- ``build/bisect/<case>/<axis>/<target>/`` for each ``--bisect`` axis (its CPU document and the
  distinct artifacts it names),
- ``pack.json`` (case, target, commit, the run's arguments, every file with its sha256) and
  ``run.py``, which gpurepro.pack.node runs.

Entries are sorted, with owners and times fixed (the commit's time) and gzip without a name or
a time, so two packs of one commit differ only where their files do (a build index records when
it was written).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..build import runtime as build_runtime
from ..build.artifacts import index_path, sha256_file
from ..case.model import Case
from ..env.commits import commit_time, committed_results
from ..env.fingerprint import repository
from ..errors import BuildError, UsageError
from ..run.session import load_build

FORMAT = 1
PACK_FILE = "pack.json"
RUN_FILE = "run.py"
# The pack's own program: the node runs `python3 run.py [run flags]` in the unpacked folder.
RUN_PY = '''\
#!/usr/bin/env python3
"""Run this pack on a GPU node: python3 run.py [flags of `gpurepro run`] (see pack.json)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "src"))
from gpurepro.pack.node import main  # noqa: E402  (the pack's own harness, standard library)

sys.exit(main(HERE, sys.argv[1:]))
'''
_SKIP_PARTS = {"__pycache__"}


@dataclass(frozen=True)
class Member:
    """One file of the pack: its path in the pack, where it comes from, its sha256."""
    name: str
    source: Path
    sha256: str


def _tree(root: Path, folder: Path) -> list[Member]:
    """Every file under ``folder`` (inside ``root``), caches and hidden files left out."""
    members = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(root)
        if (not path.is_file() or _SKIP_PARTS & set(rel.parts) or path.suffix == ".pyc"
                or any(p.startswith(".") for p in rel.parts)):
            continue
        members.append(Member(rel.as_posix(), path, sha256_file(path)))
    return members


def _checked(root: Path, rel: str, sha256: str, what: str) -> Member:
    """A built file, refused where it is missing or no longer what its index recorded."""
    path = root / rel
    if not path.is_file():
        raise BuildError(f"{what} ({rel}) is missing; build the case again")
    found = sha256_file(path)
    if found != sha256:
        raise BuildError(f"{what} ({rel}) differs from the sha256 its index recorded "
                         f"({found[:12]} against {sha256[:12]}); build the case again")
    return Member(rel, path, sha256)


def _index_member(root: Path, path: Path) -> Member:
    return Member(path.relative_to(root).as_posix(), path, sha256_file(path))


def built_members(case: Case, root: Path, build_dir: Path, target: str) -> list[Member]:
    """The build index of ``target`` and its artifacts; the runtime index and its wheels."""
    index = load_build(case, root, build_dir, target)
    index_file = index_path(root / build_dir, case, target)
    members = [_index_member(root, index_file)]
    for name, entry in sorted(index["artifacts"].items()):
        members.append(_checked(root, entry["path"], entry["sha256"], f"artifact {name}"))
        # Every other output the build wrote beside it (a cubin's sass.json): the run stage
        # checks each against the index before the first trial, as it does the first.
        for output, sha256 in sorted((entry.get("outputs") or {}).items()):
            rel = f"{entry['dir']}/{output}"
            if rel != entry["path"]:
                members.append(_checked(root, rel, sha256, f"artifact {name} ({output})"))
    if case.runtime is not None:
        runtime_index = build_runtime.index_path(root / build_dir, case)
        if not runtime_index.is_file():
            raise BuildError(f"{case.name} pins runtime packages but "
                             f"{runtime_index.relative_to(root)} is missing; build the case again")
        wheels = json.loads(runtime_index.read_text())
        members.append(_index_member(root, runtime_index))
        for pin, entry in sorted(wheels["wheels"].items()):
            members.append(_checked(root, entry["path"], entry["sha256"], f"runtime wheel {pin}"))
    return members


def bisect_members(case: Case, root: Path, axis: str, target: str) -> list[Member]:
    """An axis's CPU stage for the GPU stage on the node: its document and the distinct
    artifacts it names."""
    from ..bisect.document import CPU_FILE, axis_root

    folder = root / axis_root(case.name, axis, target)
    document = folder / CPU_FILE
    if not document.is_file():
        raise BuildError(f"--bisect {axis}: {document.relative_to(root)} is missing; run "
                         f"`python -m gpurepro bisect {case.name} --axis {axis} --stage cpu` first")
    members = [_index_member(root, document)]
    cpu = json.loads(document.read_text())
    for sha, entry in sorted((cpu.get("artifacts") or {}).items()):
        members.append(_checked(root, entry["path"], sha, f"bisect artifact of {axis}"))
    return members


def committed_documents(case: Case, root: Path) -> list[Member]:
    """The case's committed result documents: the decisive design's priors (by the rule the
    run stage applies, gpurepro.env.commits.committed_results)."""
    return [_index_member(root, path) for path in sorted(committed_results(case.name, root))]


def case_argument(case: Case, root: Path) -> str:
    """How the node's commands name the case: its name where it is cases/<name>/, else the
    manifest's path in the repository (a test fixture, a case kept elsewhere)."""
    folder = case.directory.resolve()
    if folder == root / "cases" / case.name or case.path is None:
        return case.name
    return case.path.resolve().relative_to(root).as_posix()


def commit_of(root: Path) -> tuple[str, bool, int]:
    """The commit the tree is and whether tracked files differ from it, as a run's fingerprint
    records them (env.fingerprint.repository), and its committer time (the archive's file
    times; 0 where only GPUREPRO_COMMIT names it)."""
    repo = repository(root)
    if not repo.get("commit"):
        raise UsageError(f"{root} is not a git checkout with a commit: a pack names the commit "
                         f"its rerun checks out")
    return repo["commit"], bool(repo.get("dirty")), commit_time(root, repo["commit"]) or 0


def _tarinfo(name: str, size: int, mtime: int, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, mtime, mode
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_archive(path: Path, top: str, members: Sequence[Member],
                  extra: Sequence[tuple[str, bytes]], mtime: int) -> None:
    """The tar.gz at ``path`` (written beside it, then moved into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="",
                                                mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        # cases/ beside native/ is how the harness finds the repository root (case.load), also
        # where the packed case is kept elsewhere (a test fixture).
        folder = _tarinfo(f"{top}/cases", 0, mtime, 0o755)
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        entries = [(m.name, m.source, None) for m in members] + [(n, None, b) for n, b in extra]
        for name, source, data in sorted(entries, key=lambda e: e[0]):
            if source is not None:
                mode = 0o755 if source.stat().st_mode & 0o111 else 0o644
                with open(source, "rb") as fh:
                    tar.addfile(_tarinfo(f"{top}/{name}", source.stat().st_size, mtime, mode), fh)
            else:
                assert data is not None
                mode = 0o755 if name == RUN_FILE else 0o644
                tar.addfile(_tarinfo(f"{top}/{name}", len(data), mtime, mode), io.BytesIO(data))
    tmp.replace(path)


def make_pack(case: Case, target: str, root: Path, build_dir: Path, out: Path | None,
              run_args: Sequence[str], bisect: Sequence[str], python: str | None,
              say: Callable[[str], None] = lambda line: None) -> tuple[Path, str]:
    """Write the pack of ``case`` for ``target`` from its build; return the archive's path and
    the folder it unpacks into.
    ``run_args``: the flags of `gpurepro run` the node uses (--arms, --deep, --redact)."""
    root = root.resolve()
    commit, dirty, mtime = commit_of(root)
    node_python = python
    runtime_index = build_runtime.index_path(root / build_dir, case)
    if case.runtime is not None and runtime_index.is_file():
        # The Python the build downloaded the runtime wheels for: the node's.
        node_python = json.loads(runtime_index.read_text())["python"]
        if python and python != node_python:
            raise UsageError(f"--python {python}: {case.name}'s runtime wheels in {build_dir} "
                             f"are for Python {node_python}; build them for {python} first "
                             f"(python -m gpurepro build {case.name} --python {python})")
    members = [*_tree(root, root / "src" / "gpurepro"), *_tree(root, root / "native"),
               *_tree(root, case.directory.resolve()),
               *built_members(case, root, build_dir, target),
               *committed_documents(case, root)]
    for axis in bisect:
        members += bisect_members(case, root, axis, target)
    seen: dict[str, Member] = {}
    for m in members:
        seen.setdefault(m.name, m)
    members = sorted(seen.values(), key=lambda m: m.name)
    top = f"{case.name}-{target}-{commit[:12]}"
    where = ["--build-dir", build_dir.as_posix()] if build_dir != Path("build") else []
    meta: dict[str, Any] = {
        "format": FORMAT, "case": case.name, "case_argument": case_argument(case, root),
        "target": target, "commit": commit, "dirty": dirty, "python": node_python,
        "run": ["--arch", target, *where, *run_args], "bisect": list(bisect),
        "files": {m.name: m.sha256 for m in members},
    }
    extra = [(PACK_FILE, (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode()),
             (RUN_FILE, RUN_PY.encode())]
    path = out or root / "build" / "packs" / f"{top}.tar.gz"
    write_archive(path, top, members, extra, mtime)
    size = sum(m.source.stat().st_size for m in members)
    say(f"pack: {len(members)} files, {size / 1e6:.1f} MB before compression"
        + (" (the tree differs from its commit: the record will say dirty)" if dirty else ""))
    return path, top
