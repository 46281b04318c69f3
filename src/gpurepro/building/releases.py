"""Build: toolchain releases as a factor's levels (``Factor.releases``) and an axis's points.

A release is one version of one package of a family (``nvidia-cuda-nvcc-cu12`` up to 12.x,
``nvidia-cuda-nvcc`` from 13 on: ``Releases.families``, in release order). Everything that
talks to an index is pip, with pip's own settings (``pip.conf``, ``PIP_INDEX_URL``,
``PIP_FIND_LINKS``; ``--no-index --find-links DIR`` in the tests): no index client here.

- ``listed(families)``: every final release ``pip index versions`` offers for this machine,
  within each family's range, oldest first, family after family (``packaging`` orders them).
- ``resolve(package, version)``: the wheel pip would install for this machine
  (``pip install --dry-run --report``, which reads the index's metadata and downloads nothing):
  its file name, sha256 and wheel tags. What ``locks/releases/<case>.json`` holds per release.
- ``fetch(entry, cache)``: that wheel, downloaded once by ``pip download --no-deps
  --require-hashes`` against the locked sha256 into ``cache``; ``program(wheel, tool, cache)``:
  ``<...>/bin/<tool>`` out of it, checked against the wheel each time it is used.

The build (artifacts.py) and the bisection (gpurepro.sweep.cpu) use these; the run stage never
does: GPU nodes get the built artifacts, not the wheels. Needs pip and ``packaging`` (pip's own
copy serves), as runtime.py does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..case.model import Case, Releases
from ..errors import BuildError
from ..model.files import atomic_path, sha256_file

# What other modules use; the rest is this module's own.
__all__ = [
    "family_of", "fetch", "FOLDER", "in_range", "listed", "lock_document", "lock_path",
    "lock_text", "LOCKS", "program", "read_lock", "record", "resolve", "tools_for",
    "versions_of", "wanted"
]

LOCKS = "locks"
FOLDER = "releases"  # locks/releases/<case>.json
LOCK_SCHEMA = "gpurepro/release-lock/1"
CACHE = Path("build") / "releases"  # wheels and programs, shared by every case and the bisection
_AVAILABLE = re.compile(r"^Available versions:\s*(.*)$", re.M)
PIP = (sys.executable, "-m", "pip")
PIP_QUIET = ("--disable-pip-version-check", "--quiet")


def _pip(args: Sequence[str], what: str, cwd: Path | None = None) -> str:
    done = subprocess.run([*PIP, *args], capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, cwd=cwd)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip()[-1500:]
        raise BuildError(f"{what}: pip exited with status {done.returncode}:\n{tail}")
    return done.stdout


def _packaging() -> Any:
    """``packaging`` (its requirements, specifiers, utils and version modules), or pip's vendored
    copy."""
    try:
        import packaging.requirements
        import packaging.specifiers
        import packaging.utils
        import packaging.version
        return packaging
    except ImportError:
        try:
            import pip._vendor.packaging.requirements  # noqa: F401
            import pip._vendor.packaging.specifiers  # noqa: F401
            import pip._vendor.packaging.utils  # noqa: F401
            import pip._vendor.packaging.version  # noqa: F401
            from pip._vendor import packaging as vendored  # type: ignore[no-redef, unused-ignore]
            return vendored
        except ImportError as exc:
            raise BuildError("toolchain releases and runtime packages need 'packaging' (or "
                             "pip's copy of it) in the build environment") from exc


def in_range(version: str, spec: str) -> bool:
    """``version`` within ``spec`` (``>=12.0,<13``; empty: any); never a pre-release."""
    pk = _packaging()
    v = pk.version.Version(version)
    return not (v.is_prerelease or v.is_devrelease) and v in pk.specifiers.SpecifierSet(spec)


def versions_of(package: str) -> list[str]:
    """The versions ``pip index versions`` offers for this machine (final releases only)."""
    out = _pip(["index", "versions", "--disable-pip-version-check", package], f"listing the releases of {package}")
    m = _AVAILABLE.search(out)
    return [v.strip() for v in m.group(1).split(",") if v.strip()] if m else []


def listed(releases: Releases, lister: Callable[[str], list[str]] = versions_of
           ) -> list[dict[str, str]]:
    """Every release of the families, in release order: ``{"package", "version"}``."""
    version = _packaging().version.Version
    out: list[dict[str, str]] = []
    for fam in releases.families:
        found = [v for v in lister(fam.package) if in_range(v, fam.versions)]
        out += [{"package": fam.package, "version": v}
                for v in sorted(found, key=version)]
    return out


def family_of(releases: Releases, version: str) -> str:
    """The package of the first family whose range holds ``version``."""
    for fam in releases.families:
        if in_range(version, fam.versions):
            return fam.package
    ranges = ", ".join(f"{f.package}{f.versions or ' (any)'}" for f in releases.families)
    raise BuildError(f"release {version} is in no family's range ({ranges})")


def resolve(package: str, version: str) -> dict[str, Any]:
    """The wheel pip picks for ``package==version`` on this machine, without downloading it."""
    with tempfile.TemporaryDirectory(prefix="gpurepro-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        _pip(["install", "--dry-run", "--no-deps", "--ignore-installed", "--only-binary=:all:",
              *PIP_QUIET, "--report", str(report), f"{package}=={version}"],
             f"resolving {package}=={version}", cwd=Path(tmp))
        found = json.loads(report.read_text()).get("install") or []
    if len(found) != 1:
        raise BuildError(f"resolving {package}=={version}: pip chose {len(found)} wheels, not one")
    info = found[0]["download_info"]
    filename = info["url"].rsplit("/", 1)[-1].split("#")[0]
    sha = (info.get("archive_info") or {}).get("hashes", {}).get("sha256")
    if not sha:
        raise BuildError(f"resolving {package}=={version}: the index lists no sha256 for {filename}")
    _name, _ver, _build, tags = _packaging().utils.parse_wheel_filename(filename)
    return {"package": package, "version": found[0]["metadata"]["version"], "requested": version,
            "file": filename, "sha256": sha, "tags": sorted(str(t) for t in tags)}


# ----------------------------------------------------------------------------- the lock


def lock_path(root: Path, case_name: str) -> Path:
    return root / LOCKS / FOLDER / f"{case_name}.json"


def wanted(case: Case) -> dict[str, list[dict[str, str]]]:
    """Factor name -> the releases its arms use (package and version), in the factor's order."""
    used: dict[str, set[Any]] = {}
    for factors in case.resolved_arms().values():
        for name, level in factors.items():
            used.setdefault(name, set()).add(level)
    out = {}
    for name, f in case.factors.items():
        if f.releases is not None:
            out[name] = [{"package": family_of(f.releases, str(v)), "version": str(v)}
                         for v in f.levels if v in used.get(name, ())]
    return out


def lock_document(case: Case, resolver: Callable[[str, str], dict[str, Any]] = resolve
                  ) -> dict[str, Any] | None:
    """What ``locks/releases/<case>.json`` holds: every release an arm uses, resolved."""
    releases = wanted(case)
    if not releases:
        return None
    entries: dict[str, dict[str, Any]] = {}
    for items in releases.values():
        for item in items:
            key = f"{item['package']}=={item['version']}"
            if key not in entries:
                entries[key] = resolver(item["package"], item["version"])
    return {"schema": LOCK_SCHEMA, "case": case.name,
            "factors": {name: [f"{i['package']}=={i['version']}" for i in items]
                        for name, items in releases.items()},
            "releases": dict(sorted(entries.items()))}


def lock_text(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def read_lock(root: Path, case: Case) -> dict[str, Any]:
    """The committed lock, checked to hold every release the arms use."""
    path = lock_path(root, case.name)
    if not path.is_file():
        raise BuildError(f"{case.name} compares toolchain releases and has no lock "
                         f"{path.relative_to(root)}: run make lock (nox -s lock)")
    doc = json.loads(path.read_text())
    missing = [f"{i['package']}=={i['version']}" for items in wanted(case).values()
               for i in items if f"{i['package']}=={i['version']}" not in doc.get("releases", {})]
    if missing:
        raise BuildError(f"{path.relative_to(root)} does not lock {', '.join(missing)}, which "
                         "the arms use: run make lock (nox -s lock)")
    return dict(doc)


# ----------------------------------------------------------------------------- wheels


def fetch(entry: Mapping[str, Any], cache: Path) -> Path:
    """The locked wheel in ``cache/wheels/``: kept when its sha256 is the lock's, else
    downloaded by pip, which checks the hash itself (``--require-hashes``)."""
    dest: Path = cache / "wheels" / entry["file"]
    if dest.is_file() and sha256_file(dest) == entry["sha256"]:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpurepro-release-", dir=dest.parent) as tmp:
        req = Path(tmp) / "requirement.txt"
        req.write_text(f"{entry['package']}=={entry['version']} --hash=sha256:{entry['sha256']}\n")
        _pip(["download", "--no-deps", "--only-binary=:all:", "--require-hashes", *PIP_QUIET,
              "--dest", tmp, "-r", str(req)],
             f"downloading {entry['package']}=={entry['version']} ({entry['file']})")
        got = Path(tmp) / entry["file"]
        if not got.is_file():
            raise BuildError(f"pip downloaded no {entry['file']} for {entry['package']}=="
                             f"{entry['version']} (this machine may need another wheel than "
                             "the lock's: its tags are " + ", ".join(entry.get("tags", [])) + ")")
        with atomic_path(dest) as moved:  # synced, then put in place
            os.replace(got, moved)
    return dest


def _member(z: zipfile.ZipFile, wheel: Path, tool: str) -> str:
    members = sorted(n for n in z.namelist() if n.endswith(f"/bin/{tool}"))
    if not members:
        raise BuildError(f"{wheel.name} holds no bin/{tool}")
    return members[0]


def program(wheel: Path, tool: str, cache: Path) -> Path:
    """``bin/<tool>`` out of ``wheel``, executable; extracted again when the cached copy is not
    the wheel's (a program replaced in the cache is never run)."""
    dest = cache / "tools" / wheel.name.removesuffix(".whl") / tool
    with zipfile.ZipFile(wheel) as z:
        name = _member(z, wheel, tool)
        h = hashlib.sha256()
        with z.open(name) as src:
            for block in iter(lambda: src.read(1 << 20), b""):
                h.update(block)
        if dest.is_file() and sha256_file(dest) == h.hexdigest():
            return dest
        with atomic_path(dest) as tmp, z.open(name) as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out)
            os.fchmod(out.fileno(), 0o755)
    return dest


def tools_for(case: Case, root: Path, cache: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(factor, level) -> the locked release and its program, for every level an arm uses."""
    lock = read_lock(root, case)
    out = {}
    for factor, items in wanted(case).items():
        tool = case.factors[factor].releases.tool  # type: ignore[union-attr]
        for item in items:
            entry = lock["releases"][f"{item['package']}=={item['version']}"]
            path = program(fetch(entry, cache), tool, cache)
            out[(factor, item["version"])] = {"entry": entry, "tool": tool, "program": path}
    return out


def record(entry: Mapping[str, Any], tool: str, version_line: str) -> dict[str, Any]:
    """What the build index and the document say of one arm's release."""
    return {"package": entry["package"], "version": entry["version"], "tool": tool,
            "wheel": entry["file"], "sha256": entry["sha256"], "tool_version": version_line}
