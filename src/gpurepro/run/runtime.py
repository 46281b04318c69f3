"""Run: a case's runtime packages on the GPU node, from the carried build/ and nothing else.

The build (gpurepro.building.runtime) left each pinned wheel and an index under
``build/<case>/runtime/``. Before the first trial, each arm's wheels are checked against their
recorded sha256 and unpacked (a wheel is a zip: its files, and its ``.data/purelib`` and
``platlib`` parts, go to one folder, as ``pip install --target`` lays them out) into
``build/<case>/runtime/sites/<key>/``, the key naming the arm's set of wheels, so arms with the
same pins share one folder and an unchanged set is unpacked once per node. A trial of the arm
gets that folder first on its PYTHONPATH (``TrialContext.runtime``). The record the journal
header keeps, per arm: the pins requested, the versions resolved (read from the unpacked
``*.dist-info``), each wheel's sha256, and each requirement left to the node with the node's
version and whether it meets the requirement. Standard library only.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import json
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from ..case.model import Case, normalized_name
from ..errors import BuildError
from ..model.files import sha256_file
from .rehash import ArtifactChanged

# What other modules use; the rest is this module's own.
__all__ = [
    "ensure", "load_index", "prepare", "python_mismatch", "resolved", "satisfies", "site_for",
    "unpack", "verify_site"
]

INDEX = Path("runtime") / "index.json"


def _rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def load_index(case: Case, root: Path, build_dir: Path) -> dict[str, Any]:
    path = root / build_dir / case.name / INDEX
    if not path.is_file():
        raise BuildError(f"{case.name} pins runtime packages, and there is no {path}: build the "
                         f"case first (python -m gpurepro build {case.name}), and carry "
                         f"{build_dir / case.name / 'runtime'} with build/ to the GPU node")
    index: dict[str, Any] = json.loads(path.read_text())
    return index


def prepare(case: Case, root: Path, build_dir: Path, arms: Iterable[str],
            index_file: Path | None = None) -> dict[str, Any] | None:
    """Unpack every arm's runtime packages here; the record the journal header keeps, or None
    for a case without runtime packages. ``index_file`` (relative to the repository): another
    index than the build's, such as one release of a runtime axis; the record names it with
    its sha256, which the sweep's assembly checks its journal against."""
    if case.runtime is None:
        return None
    if index_file is None:
        index = load_index(case, root, build_dir)
    else:
        index = json.loads((root / index_file).read_text())
    folder = build_dir / case.name / "runtime"
    wheels = {w["file"]: {"path": w["path"], "sha256": w["sha256"], "size": w["size"]}
              for w in index["wheels"].values()}
    out: dict[str, Any] = {}
    for arm in arms:
        entry = index["arms"].get(arm)
        if entry is None:
            continue  # an arm without pins runs on the node's own packages
        site = (root / folder / "sites" / entry["key"][:20]).resolve()
        out[arm] = {"requested": entry["requested"],
                    "wheels": {f: wheels[f]["sha256"] for f in entry["wheels"]},
                    "site": _rel(site, root.resolve()), "from_node": entry["from_node"]}
    if not out:
        return None  # no planned arm imports a pinned package: the node's Python is enough
    record = {"python": index["python"], "platforms": index["platforms"],
              "interpreter": ".".join(map(str, sys.version_info[:3])), "wheels": wheels,
              "arms": out}
    if index_file is not None:
        record["index"] = {"path": str(index_file), "sha256": sha256_file(root / index_file)}
    ensure(record, root, case.name)
    return record


def python_mismatch(python: str, arms: Iterable[str], case: str) -> str | None:
    """Why this interpreter cannot run the arms whose runtime wheels are for ``python`` (one
    line, saying how to run them), or None when it can."""
    here = ".".join(map(str, sys.version_info[:2]))
    if python == here:
        return None
    named = sorted(arms)
    which = ", ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
    return (f"{case}: arms {which} import packages carried as wheels for Python {python} "
            f"(Case.runtime); this interpreter is Python {here}, so their trials could not import "
            f"them: run with Python {python} (nox -s {case} --force-python {python} -- ..., or "
            f"python{python} -m gpurepro ...), or leave those arms out (--arms)")


def ensure(record: Mapping[str, Any], root: Path, case: str = "the case") -> None:
    """Every arm's folder unpacked (a resumed run on another node unpacks them again), and its
    resolved versions and the node's versions filled in. Refused, before any trial, where this
    interpreter is not the Python the wheels are for."""
    why = python_mismatch(record["python"], record["arms"], case)
    if why is not None:
        raise BuildError(why)
    for entry in record["arms"].values():
        site = root / entry["site"]
        unpack(site, {f: record["wheels"][f] for f in entry["wheels"]}, root)
        entry["resolved"] = resolved(site)
        entry["from_node"] = [{**r, **node_version(r["requirement"])} for r in entry["from_node"]]


def site_for(record: Mapping[str, Any] | None, arm: str, root: Path) -> Path | None:
    """The folder a trial of ``arm`` gets first on PYTHONPATH, or None."""
    entry = (record or {}).get("arms", {}).get(arm)
    return None if entry is None else root / entry["site"]


STAMP = ".site.json"


def site_files(site: Path) -> dict[str, str]:
    """Every file under ``site`` -> its sha256; its stamp and the bytecode caches that Python
    writes there as trials import (``__pycache__``) left out."""
    return {str(p.relative_to(site)): sha256_file(p) for p in sorted(site.rglob("*"))
            if (p.is_file() or p.is_symlink()) and p.name != STAMP
            and "__pycache__" not in p.relative_to(site).parts}


def site_problem(site: Path) -> str | None:
    """What differs between an unpacked site and the files its stamp lists (a file changed,
    missing or added after unpacking), or None when it holds exactly them."""
    try:
        listed = json.loads((site / STAMP).read_text()).get("files")
    except (OSError, ValueError):
        return "it has no readable stamp"
    if not isinstance(listed, dict):
        return "its stamp lists no files (unpacked by an older gpurepro)"
    try:
        found = site_files(site)
    except OSError as exc:
        return f"a file cannot be read ({exc.strerror or exc})"
    for name in sorted(set(listed) | set(found)):
        if listed.get(name) != found.get(name):
            how = ("is missing" if name not in found else "was added" if name not in listed
                   else "was changed")
            return f"{name} {how} after unpacking"
    return None


def verify_site(site: Path) -> None:
    """Before a trial imports from ``site``: every file as unpacked, or the trial is refused."""
    why = site_problem(site)
    if why is not None:
        raise ArtifactChanged(f"runtime site {site.name}: {why}; no trial runs with it. Resume "
                              f"the run: it unpacks the site again from its checked wheels")


def unpack(site: Path, wheels: Mapping[str, Mapping[str, Any]], root: Path) -> None:
    """``wheels`` (file -> path, sha256) unpacked into ``site``, once: a stamp names them and
    every file unpacked with its sha256; a site whose files are not those is unpacked again."""
    want = {f: w["sha256"] for f, w in sorted(wheels.items())}
    stamp = site / STAMP
    site.parent.mkdir(parents=True, exist_ok=True)
    with open(site.parent / f"{site.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and json.loads(stamp.read_text()).get("wheels") == want:
            why = site_problem(site)
            if why is None:
                return
            print(f"gpurepro: runtime site {site.name}: {why}; unpacking it again from its "
                  f"wheels", file=sys.stderr, flush=True)
        for w in wheels.values():
            path = root / w["path"]
            if not path.is_file():
                raise BuildError(f"runtime wheel {path} is missing: carry the build's runtime "
                                 f"folder with build/ (or rebuild it)")
            if sha256_file(path) != w["sha256"]:
                raise BuildError(f"runtime wheel {path} differs from its build index; rebuild it")
        with tempfile.TemporaryDirectory(prefix=f".{site.name}-", dir=site.parent) as tmp:
            staging = Path(tmp) / "site"
            staging.mkdir()
            for _, w in sorted(wheels.items()):
                _unzip_wheel(root / w["path"], staging)
            (staging / STAMP).write_text(json.dumps({"wheels": want,
                                                     "files": site_files(staging)}, indent=1))
            if site.exists():
                shutil.rmtree(site)
            staging.rename(site)


def _unzip_wheel(wheel: Path, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        z.extractall(dest)
    for data in dest.glob("*.data"):
        for part in ("purelib", "platlib"):
            lib = data / part
            if lib.is_dir():
                shutil.copytree(lib, dest, dirs_exist_ok=True)
        shutil.rmtree(data)  # scripts, headers and data files: no trial imports them


def resolved(site: Path) -> dict[str, str]:
    """Distribution name -> version, from the ``*.dist-info/METADATA`` unpacked in ``site``."""
    out: dict[str, str] = {}
    for meta in sorted(site.glob("*.dist-info/METADATA")):
        msg = HeaderParser().parsestr(meta.read_text(errors="replace"))
        out[msg["Name"]] = msg["Version"]
    return out


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def node_version(requirement: str) -> dict[str, Any]:
    """A requirement left to the node: its distribution, the version installed for this
    interpreter (None: not installed) and whether it meets the requirement (None: unknown)."""
    m = _REQ_NAME.match(requirement)
    name = m.group(1) if m else requirement
    try:
        version: str | None = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        version = None
    spec = requirement[m.end():].split(";")[0].strip() if m else ""
    met = None if version is None else satisfies(version, spec)
    return {"name": normalized_name(name), "version": version,
            "met": False if version is None else met}


_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?"
                      r"(?:[-_.]?(post|rev|r)[-_.]?(\d*))?(?:[-_.]?(dev)[-_.]?(\d*))?(?:\+.*)?$",
                      re.I)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def _key(version: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """A sort key for the PEP 440 versions requirements name (epochs and locals ignored)."""
    m = _VERSION.match(version.strip())
    if not m:
        return None
    release = tuple(int(x) for x in m.group(1).split("."))
    pre, post, dev = m.group(2), m.group(4), m.group(6)
    # X.devN < X.aN < X.bN < X.rcN < X < X.postN; a dev release precedes what it is the dev of.
    if pre:
        phase = (_PRE[pre.lower()], int(m.group(3) or 0))
    else:
        phase = (-1, 0) if dev and not post else (3, 0)
    tail = (*phase, 1 if post else 0, int(m.group(5) or 0) if post else 0,
            0 if dev else 1, int(m.group(7) or 0) if dev else 0)
    return release, tail


def _cmp(a: str, b: str) -> int | None:
    ka, kb = _key(a), _key(b)
    if ka is None or kb is None:
        return None
    n = max(len(ka[0]), len(kb[0]))
    ra, rb = ka[0] + (0,) * (n - len(ka[0])), kb[0] + (0,) * (n - len(kb[0]))
    left, right = (ra, ka[1]), (rb, kb[1])
    return (left > right) - (left < right)


def satisfies(version: str, specifier: str) -> bool | None:
    """Whether ``version`` meets ``specifier`` (``<0.46,>=0.45.0dev0``); None where a clause is
    beyond this small reading of PEP 440 (the record then says unknown)."""
    spec = specifier.strip().strip("()")
    if not spec:
        return True
    for clause in (c.strip() for c in spec.split(",")):
        m = re.match(r"^(~=|===|==|!=|<=|>=|<|>)\s*(\S+)$", clause)
        if not m:
            return None
        op, other = m.groups()
        if op in ("==", "!=") and other.endswith(".*"):
            prefix = other[:-2].split(".")
            mine = re.match(r"^(\d+(?:\.\d+)*)", version)
            if not mine:
                return None
            hit = mine.group(1).split(".")[:len(prefix)] == prefix
            if hit != (op == "=="):
                return False
            continue
        if op == "~=":
            parts = other.split(".")
            if len(parts) < 2 or not satisfies(version, f">={other}"):
                return False
            if not satisfies(version, "==" + ".".join(parts[:-1]) + ".*"):
                return False
            continue
        if op == "===":
            if version != other:
                return False
            continue
        c = _cmp(version, other)
        if c is None:
            return None
        ok = {"==": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]
        if not ok:
            return False
    return True
