"""Write a pack: what the run stage needs on an offline GPU node, in one archive.

The archive holds one folder, ``<case>-<target>-<commit12>/``, laid out as the repository is
(artifact paths in build indexes are relative to the repository root, so they hold there too):

- ``src/gpurepro/`` and ``native/`` (the harness; the run stage needs only the standard library),
- ``cases/<case>/`` (the manifest the journal's identity hashes),
- ``build/<case>/<target>/artifacts.json`` and every artifact it names, each checked against the
  sha256 the index records,
- ``build/<case>/runtime/`` where the case pins runtime packages: the index and, for the node's
  Python, the wheels of the arms the pack runs (``--arms``; every arm's without it: the node may
  be asked for ``--deep``), each checked likewise; a wheel two arms share is carried once,
- ``results/<case>/*.json``, the committed result documents the decisive design takes its
  priors from, so that the node plans what ``make <case>`` would plan,
- ``build/bisect/<case>/<axis>/<target>/`` for each ``--bisect`` axis (its CPU document and the
  distinct artifacts it names),
- ``pack.json`` (case, target, commit, the run's arguments, every file with its sha256, run.py's
  too, and what the tree held that its commit does not) and ``run.py``, which checks the whole
  unpacked tree by itself before it imports gpurepro.pack.node.

Only files the commit tracks are packed (a tree that differs is named in pack.json), and no
symbolic link is followed; the pack's folder and archive are named for pack.json's sha256.

Entries are sorted, with owners and times fixed (the commit's time) and gzip without a name or
a time, so two packs of one commit differ only where their files do (a build index records when
it was written).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..building import runtime as build_runtime
from ..building.artifacts import index_path
from ..case.model import Case
from ..env.commits import commit_time, committed_results
from ..env.fingerprint import repository
from ..errors import BuildError, UsageError
from ..model.files import atomic_path, sha256_file
from ..run.session import load_build
from ..sweep.bisection import CPU_FILE, axis_root
from ..sweep.cpu import changed

# What other modules use; the rest is this module's own.
__all__ = [
    "bisect_members", "built_members", "case_argument", "FORMAT", "make_pack", "uncommitted"
]

FORMAT = 1
PACK_FILE = "pack.json"
RUN_FILE = "run.py"
# The pack's own program: the node runs `python3 run.py [run flags]` in the unpacked folder. It
# checks the whole pack before anything of the pack is imported, alone and with the standard
# library (its folder taken off sys.path first, so no json.py beside it is imported), and parses
# under any Python 3 (an unsupported one gets one line, not a traceback).
RUN_PY = """\
#!/usr/bin/env python3
\"\"\"Run this pack on a GPU node: python3 run.py [flags of `gpurepro run`] (see pack.json).

This file alone, with the standard library, checks the pack before anything of it is imported:
pack.json's sha256 against the pack's name (the archive's, which `gpurepro pack` printed with
the whole digest), every file against the sha256 pack.json records, no other file (outside
results/ and the runtime sites the run unpacks), no symbolic link anywhere, and the run flags
pack.json holds.\"\"\"
import sys

if sys.version_info < (3, 11):
    sys.stderr.write("pack: error: this pack runs on Python 3.11 or later; %s is Python %d.%d: "
                     "run it with python3.11 or python3.12\\n"
                     % (sys.executable, sys.version_info[0], sys.version_info[1]))
    sys.exit(2)

import os  # noqa: E402  (the interpreter's own, loaded before this file: never one beside it)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.dont_write_bytecode = True

import hashlib  # noqa: E402
import json  # noqa: E402

# The flags `gpurepro pack` writes into pack.json's run, and which of them take a value.
PACK_FLAGS = {"--arch": True, "--build-dir": True, "--arms": True, "--deep": False,
              "--redact": False}


def refuse(why):
    sys.stderr.write("pack: error: " + why + "; nothing was run\\n")
    sys.exit(1)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checked_flags(run):
    build_dir, i = "build", 0
    while i < len(run):
        flag = run[i]
        if flag not in PACK_FLAGS:
            refuse("pack.json's run flags hold %r, which no pack writes" % flag)
        if PACK_FLAGS[flag]:
            if i + 1 >= len(run):
                refuse("pack.json's run flag %s has no value" % flag)
            if flag == "--build-dir":
                build_dir = run[i + 1]
                inside = os.path.realpath(os.path.join(HERE, build_dir))
                if os.path.isabs(build_dir) or not inside.startswith(HERE + os.sep):
                    refuse("pack.json's --build-dir %r is not a folder inside the pack" % build_dir)
            i += 1
        i += 1
    return build_dir.strip("/")


def check():
    try:
        with open(os.path.join(HERE, "pack.json"), "rb") as fh:
            data = fh.read()
        meta = json.loads(data)
        files, case, run = dict(meta["files"]), str(meta["case"]), list(meta["run"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        refuse("%s is not a pack's pack.json (%s); unpack the archive whole"
               % (os.path.join(HERE, "pack.json"), exc))
    digest = hashlib.sha256(data).hexdigest()
    if not os.path.basename(HERE).endswith("-" + digest[:12]):
        refuse("pack.json (sha256 %s) is not the one this pack is named for (the folder's and "
               "the archive's name end in its first 12 characters): pack.json was edited, or "
               "the folder renamed" % digest)
    named = str(meta.get("case_argument") or case)
    if not case.replace("_", "").replace("-", "").isalnum():
        refuse("pack.json's case %r is not a case's name" % case)
    if named != case and (os.path.isabs(named) or ".." in named.split("/")
                          or not named.endswith("/manifest.py") or named not in files):
        refuse("pack.json's case_argument %r is not a manifest the pack holds" % named)
    outputs = ("results/", checked_flags(run) + "/" + case + "/runtime/sites/")
    seen = set()
    for top, folders, names in os.walk(HERE):
        for name in folders + names:
            full = os.path.join(top, name)
            rel = os.path.relpath(full, HERE).replace(os.sep, "/")
            if os.path.islink(full):
                refuse("%s is a symbolic link: a pack holds files only, and writes inside "
                       "itself" % rel)
            if name in folders:
                continue
            if rel == "pack.json":
                continue
            if rel in files:
                if sha256(full) != files[rel]:
                    refuse("%s differs from the sha256 pack.json records; copy the archive "
                           "again and unpack it whole" % rel)
                seen.add(rel)
            elif not rel.startswith(outputs):
                refuse("%s is not a file of the pack (pack.json lists every one); unpack the "
                       "archive into a folder of its own" % rel)
    missing = sorted(set(files) - seen)
    if missing:
        refuse("%d of the pack's files are missing (first: %s); copy the archive again and "
               "unpack it whole" % (len(missing), missing[0]))
    sys.stderr.write("pack: checked %d files against pack.json, sha256 %s (what `gpurepro "
                     "pack` printed)\\n" % (len(files), digest))


check()
sys.path.insert(0, os.path.join(HERE, "src"))
from gpurepro.pack.node import main  # noqa: E402  (the pack's own harness, standard library)

sys.exit(main(HERE, sys.argv[1:]))
"""


@dataclass(frozen=True)
class Member:
    """One file of the pack: its path in the pack, where it comes from, its sha256."""
    name: str
    source: Path
    sha256: str


def _git(root: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise UsageError(f"git {args[0]} failed in {root}: a pack holds the files its commit "
                         f"tracks ({exc})") from None


def _inside(root: Path, path: Path, what: str) -> Path:
    """``path``, refused where it or a folder on its way is a symbolic link, or where it is
    not inside ``root``: a pack follows no link out of the tree."""
    rel = path.relative_to(root)
    for i in range(1, len(rel.parts) + 1):
        if (root / Path(*rel.parts[:i])).is_symlink():
            raise UsageError(f"{what} {Path(*rel.parts[:i]).as_posix()} is a symbolic link: a "
                             f"pack holds files of the tree and follows no link")
    if not path.resolve().is_relative_to(root.resolve()):
        raise UsageError(f"{what} {rel.as_posix()} is outside the repository")
    return path


def _tree(root: Path, folder: Path) -> list[Member]:
    """Every file under ``folder`` that the commit tracks (git ls-files): untracked files are
    never packed, nor is anything a symbolic link leads to."""
    rel = folder.relative_to(root).as_posix()
    members = []
    for name in sorted(n for n in _git(root, "ls-files", "-z", "--", rel).split("\0") if n):
        path = _inside(root, root / name, "tracked file")
        if not path.is_file():
            raise UsageError(f"{name} is tracked but missing from the tree; restore it or "
                             f"commit its removal before packing")
        members.append(Member(name, path, sha256_file(path)))
    return members


def uncommitted(root: Path, folders: Sequence[Path]) -> list[str]:
    """The files under ``folders`` that differ from the commit or that it does not track (git
    status): what a pack of this tree holds that its commit does not say, or leaves out."""
    rels = [f.relative_to(root).as_posix() for f in folders]
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *rels)
    names = []
    for entry in (e for e in out.split("\0") if e):
        if len(entry) > 3 and entry[2] == " ":
            names.append(entry[3:])
    return sorted(set(names))


def _checked(root: Path, rel: str, sha256: str, what: str) -> Member:
    """A built file, refused where it is missing or no longer what its index recorded."""
    path = _inside(root, root / rel, what)
    if not path.is_file():
        raise BuildError(f"{what} ({rel}) is missing; build the case again")
    found = sha256_file(path)
    if found != sha256:
        raise BuildError(f"{what} ({rel}) differs from the sha256 its index recorded "
                         f"({found[:12]} against {sha256[:12]}); build the case again")
    return Member(rel, path, sha256)


def _index_member(root: Path, path: Path) -> Member:
    _inside(root, path, "file")
    return Member(path.relative_to(root).as_posix(), path, sha256_file(path))


def built_members(case: Case, root: Path, build_dir: Path, target: str,
                  arms: Sequence[str] | None = None) -> list[Member]:
    """The build index of ``target`` and its artifacts; the runtime index and the wheels of
    ``arms`` (every arm's where None): the run stage unpacks and checks only the wheels of the
    arms it plans (gpurepro.run.runtime.prepare), so a pack of some arms carries theirs."""
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
        for pin, entry in sorted(build_runtime.wheels_of(wheels, arms).items()):
            members.append(_checked(root, entry["path"], entry["sha256"], f"runtime wheel {pin}"))
    return members


def bisect_members(case: Case, root: Path, axis: str, target: str) -> list[Member]:
    """An axis's CPU stage for the GPU stage on the node: its document, the distinct artifacts
    it names (a runtime axis's: each release's runtime index and its wheels) and the checkout
    files its builds read; refused where the manifest's axis, or
    anything else the CPU stage was built from, has changed since (gpurepro.sweep.cpu.changed:
    on the node every run of an arm the manifest dropped would fail)."""
    folder = root / axis_root(case.name, axis, target)
    document = folder / CPU_FILE
    if not document.is_file():
        raise BuildError(f"--bisect {axis}: {document.relative_to(root)} is missing; run "
                         f"`python -m gpurepro bisect {case.name} --axis {axis} --stage cpu` first")
    members = [_index_member(root, document)]
    cpu = json.loads(document.read_text())
    stale = changed(cpu, case, root)
    if stale:
        raise BuildError(f"--bisect {axis}: {document.relative_to(root)} is stale: {stale}; run "
                         f"`python -m gpurepro bisect {case.name} --axis {axis} --stage cpu` again")
    wheels: dict[str, str] = {}
    for sha, entry in sorted((cpu.get("artifacts") or {}).items()):
        members.append(_checked(root, entry["path"], sha, f"bisect artifact of {axis}"))
        if "runtime" in cpu["axis"]:  # a release's runtime index: its wheels travel with it
            index = json.loads((root / entry["path"]).read_text())
            wheels.update({w["path"]: w["sha256"] for w in index["wheels"].values()})
    for rel, sha in sorted(wheels.items()):
        members.append(_checked(root, rel, sha, f"a runtime wheel of {axis}"))
    for rel, sha in sorted((cpu.get("sources") or {}).items()):
        members.append(_checked(root, rel, sha, f"a file the {axis} builds read"))
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
    """The tar.gz at ``path`` (written beside it, synced, then moved into place)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as gz, \
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


def make_pack(case: Case, target: str, root: Path, build_dir: Path, out: Path | None,
              run_args: Sequence[str], bisect: Sequence[str], python: str | None,
              say: Callable[[str], None] = lambda line: None,
              arms: Sequence[str] | None = None) -> tuple[Path, str]:
    """Write the pack of ``case`` for ``target`` from its build; return the archive's path and
    the folder it unpacks into.
    ``run_args``: the flags of `gpurepro run` the node uses (--arms, --deep, --redact);
    ``arms``: the arms of its --arms, whose runtime wheels alone are carried (None: every arm's)."""
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
    folder = case.directory.resolve()
    if case.path is None or not _git(root, "ls-files", "--", case.path.resolve().relative_to(root).as_posix()):
        raise UsageError(f"{case.name}'s manifest is not in the commit: commit the case first "
                         f"(a pack names the commit its rerun checks out)")
    sources = [root / "src" / "gpurepro", root / "native", folder]
    differs = uncommitted(root, sources)
    dirty = dirty or bool(differs)
    members = [*_tree(root, root / "src" / "gpurepro"), *_tree(root, root / "native"),
               *_tree(root, folder),
               *built_members(case, root, build_dir, target, arms),
               *committed_documents(case, root)]
    for axis in bisect:
        members += bisect_members(case, root, axis, target)
    seen: dict[str, Member] = {}
    for m in members:
        seen.setdefault(m.name, m)
    members = sorted(seen.values(), key=lambda m: m.name)
    where = ["--build-dir", build_dir.as_posix()] if build_dir != Path("build") else []
    run_py = RUN_PY.encode()
    meta: dict[str, Any] = {
        "format": FORMAT, "case": case.name, "case_argument": case_argument(case, root),
        "target": target, "commit": commit, "dirty": dirty, "python": node_python,
        # What the tree held that the commit does not (changed or untracked): not packed where
        # untracked, and named here.
        **({"uncommitted": differs} if differs else {}),
        "run": ["--arch", target, *where, *run_args], "bisect": list(bisect),
        "files": {**{m.name: m.sha256 for m in members},
                  RUN_FILE: hashlib.sha256(run_py).hexdigest()},
    }
    pack_json = (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode()
    digest = hashlib.sha256(pack_json).hexdigest()
    # The pack's name ends in pack.json's digest: run.py refuses a pack.json that is not the
    # one its folder (the archive) is named for.
    top = f"{case.name}-{target}-{commit[:12]}-{digest[:12]}"
    path = out or root / "build" / "packs" / f"{top}.tar.gz"
    write_archive(path, top, members, [(PACK_FILE, pack_json), (RUN_FILE, run_py)], mtime)
    size = sum(m.source.stat().st_size for m in members)
    say(f"pack: {len(members)} files, {size / 1e6:.1f} MB before compression; pack.json sha256 "
        f"{digest} (run.py prints it on the node: compare)"
        + (f" (the tree differs from its commit in {len(differs)} file(s), first "
           f"{differs[0]}: pack.json names them, untracked ones are not packed, and the record "
           f"will say dirty)" if differs else
           " (the tree differs from its commit: the record will say dirty)" if dirty else ""))
    return path, top
