"""Build: a case's runtime packages (``Case.runtime``) as wheels for the Python that runs the
trials.

That Python is the interpreter running the build (`case` and the case sessions run the trials
with it, on any Python pyproject.toml supports), or the one `build --python` / `pack --python`
names for a GPU node with another, or the one a manifest fixes (``Runtime.python``):
``wheel_python``. Each pin (``numba==0.62.1``) is downloaded once, with ``pip download
--only-binary=:all: --no-deps`` for that interpreter (its version, ``Runtime.implementation``,
``platforms``), into ``build/<case>/runtime/wheels/<key>/``; the key is a hash of the pin, the
Python and those tags, so an unchanged pin reuses its wheel, two arms pinning the same release
share one file and the wheels of two Pythons sit side by side. Every
wheel's sha256 and size are recorded. Then each arm's requirement set is resolved against
itself: every requirement its wheels declare (``Requires-Dist``, markers evaluated for the
node) must be met by another pin of the same arm, or be named in ``Runtime.from_node``, left
to the node's own installation (its version there is recorded by each run: gpurepro.run.runtime).
The index ``build/<case>/runtime/index.json`` is what the run stage reads; it unpacks the
wheels on the node and installs nothing.

Needs pip (``python -m pip``) and ``packaging`` (pip's own copy serves), as the rest of the
build stage needs its toolchain; the run stage does not.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from ..case.model import Case, Runtime, normalized_name
from ..errors import BuildError, UsageError
from ..model.files import sha256_file, write_atomic
from . import releases, runtime_releases

# What other modules use; the rest is this module's own.
__all__ = [
    "carried", "download", "fetch", "INDEX_NAME", "resolve_arm", "index_path", "pip_download_argv", "RECIPE",
    "runtime_dir", "wheel_key", "wheel_python", "wheels_of"
]

INDEX_NAME = "index.json"
# Bump when the way wheels are fetched changes what a key names: part of every key.
RECIPE = "runtime-1"


def runtime_dir(build_dir: Path, case: Case) -> Path:
    return build_dir / case.name / "runtime"


def index_path(build_dir: Path, case: Case) -> Path:
    return runtime_dir(build_dir, case) / INDEX_NAME


def _rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def this_python() -> str:
    """The running interpreter's version, as X.Y."""
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def wheel_python(rt: Runtime, requested: str | None = None, case: str = "the case") -> str:
    """The Python the wheels are for: the manifest's where it fixes one (another one asked for
    is a usage error), else the one asked for (``--python``), else this interpreter's."""
    if rt.python is not None:
        if requested is not None and requested != rt.python:
            raise UsageError(f"--python {requested}: {case}'s runtime wheels are for Python "
                             f"{rt.python} alone (Case.runtime.python in its manifest)")
        return rt.python
    return requested or this_python()


def wheel_key(pin: str, rt: Runtime, python: str) -> str:
    material = {"pin": pin, "python": python, "implementation": rt.implementation,
                "platforms": list(rt.platforms), "recipe": RECIPE}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def pip_download_argv(pin: str, rt: Runtime, dest: Path, pip_args: Sequence[str] = (),
                      python: str | None = None) -> list[str]:
    """The one pip command that fetches ``pin``'s wheel for the trials' interpreter
    (``wheel_python``)."""
    platforms = [a for p in rt.platforms for a in ("--platform", p)]
    return [sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
            "--only-binary=:all:", "--no-deps", "--python-version", wheel_python(rt, python),
            "--implementation", rt.implementation, *platforms, "--dest", str(dest),
            *pip_args, pin]


def fetch(case: Case, root: Path, build_dir: Path, pip_args: Sequence[str] = (),
          on_event: Callable[[str, str], None] | None = None,
          python: str | None = None) -> dict[str, Any] | None:
    """Download every runtime pin of ``case`` for the trials' Python (``wheel_python``: this
    interpreter's unless ``python`` names another), resolve each arm's set, write and return
    the index; None for a case without runtime packages. ``pip_args``: extra pip options (an
    index or ``--no-index --find-links DIR``)."""
    rt = case.runtime
    if rt is None:
        return None
    python = wheel_python(rt, python, case.name)
    say = on_event or (lambda name, status: None)
    root = root.resolve()
    build_dir = build_dir if build_dir.is_absolute() else root / build_dir
    fetched: dict[str, dict[str, Any]] = {}

    def one(pin: str) -> dict[str, Any]:
        if pin not in fetched:
            fetched[pin] = download(pin, rt, python, root, runtime_dir(build_dir, case), pip_args,
                                  say)
        return fetched[pin]

    # A release factor's levels, each with its dependencies (Runtime.releases), from the lock
    # or found from the wheels' metadata.
    levels = runtime_releases.resolve_levels(case, root, python, one)
    pins = sorted({p for pins in [*rt.packages.values(), *levels.values()] for p in pins})
    wheels = {pin: one(pin) for pin in pins}
    arms = {}
    for arm in (a.name for a in case.arms):
        chosen = runtime_releases.arm_pins(case, arm, levels) if rt.releases else rt.pins_for(arm)
        if chosen:
            arms[arm] = resolve_arm(arm, chosen, wheels, rt, python)
    index = {"case": case.name, "python": python, "implementation": rt.implementation,
             "platforms": list(rt.platforms), "from_node": list(rt.from_node),
             "wheels": wheels, "arms": arms,
             "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_atomic(index_path(build_dir, case), json.dumps(index, indent=2, sort_keys=True))
    return index


def download(pin: str, rt: Runtime, python: str, root: Path, folder: Path,
             pip_args: Sequence[str], say: Callable[[str, str], None]) -> dict[str, Any]:
    """``pin``'s wheel for ``python`` under ``folder/wheels/<key>/`` (once: a kept wheel whose
    sha256 still matches is reused), and its entry: file, sha256, size, name, version and
    Requires-Dist, with its path relative to ``root``."""
    key = wheel_key(pin, rt, python)
    out = folder / "wheels" / key[:20]
    stamp = out / ".wheel.json"
    if stamp.is_file():
        entry = json.loads(stamp.read_text())
        if (out / entry["file"]).is_file() and sha256_file(out / entry["file"]) == entry["sha256"]:
            say(pin, "cached")
            return {**entry, "path": _rel(out / entry["file"], root)}
    say(pin, "downloading")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpurepro-wheel-", dir=out.parent) as tmp:
        done = subprocess.run(pip_download_argv(pin, rt, Path(tmp), pip_args, python), cwd=root,
                              capture_output=True, text=True, check=False,
                              stdin=subprocess.DEVNULL)
        got = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or len(got) != 1:
            why = (f"exit status {done.returncode}" if done.returncode
                   else f"{len(got)} wheels instead of one")
            tail = (done.stdout + done.stderr)[-2000:]
            raise BuildError(f"downloading {pin} for Python {python} "
                             f"({', '.join(rt.platforms)}) failed ({why}):\n{tail}")
        meta = wheel_metadata(got[0])
        if normalized_name(meta["name"]) != normalized_name(pin.split("==")[0]):
            raise BuildError(f"{pin}: pip fetched {got[0].name}, a wheel of {meta['name']}")
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        shutil.move(str(got[0]), out / got[0].name)
    wheel = out / got[0].name
    entry = {"pin": pin, "key": key, "file": wheel.name, "sha256": sha256_file(wheel),
             "size": wheel.stat().st_size, "name": meta["name"], "version": meta["version"],
             "requires": meta["requires"]}
    stamp.write_text(json.dumps(entry, indent=1, sort_keys=True))
    say(pin, "downloaded")
    return {**entry, "path": _rel(wheel, root)}


def wheel_metadata(wheel: Path) -> dict[str, Any]:
    """Name, Version and Requires-Dist of a wheel, from its ``*.dist-info/METADATA``."""
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist()
                 if n.count("/") == 1 and n.split("/")[0].endswith(".dist-info")
                 and n.endswith("/METADATA")]
        if len(names) != 1:
            raise BuildError(f"{wheel.name} has {len(names)} dist-info METADATA files, not one")
        text = z.read(names[0]).decode("utf-8", errors="replace")
    msg = HeaderParser().parsestr(text)
    return {"name": msg["Name"], "version": msg["Version"],
            "requires": list(msg.get_all("Requires-Dist") or [])}


def resolve_arm(arm: str, pins: Sequence[str], wheels: dict[str, dict[str, Any]],
             rt: Runtime, python: str) -> dict[str, Any]:
    """An arm's set: each wheel's requirements met inside it, or left to the node by name."""
    pk = releases._packaging()
    requirements, version = pk.requirements, pk.version
    markers = runtime_releases.node_markers(python)
    pinned = {normalized_name(wheels[p]["name"]): wheels[p] for p in pins}
    from_node = {normalized_name(n) for n in rt.from_node}
    left: list[dict[str, str]] = []
    for pin in pins:
        for text in wheels[pin]["requires"]:
            req = requirements.Requirement(text)
            if req.marker is not None and not req.marker.evaluate(markers):
                continue  # an extra, or another platform's
            name = normalized_name(req.name)
            have = pinned.get(name)
            if have is not None:
                if not req.specifier.contains(version.Version(have["version"]), prereleases=True):
                    raise BuildError(f"runtime of arm {arm}: {pin} requires {text}; the arm pins "
                                     f"{have['pin']}, which does not meet it")
            elif name in from_node:
                left.append({"requirement": str(req), "of": pin})
            else:
                raise BuildError(f"runtime of arm {arm}: {pin} requires {text}, which the arm "
                                 f"neither pins nor leaves to the node (Runtime.from_node)")
    files = sorted(wheels[p]["file"] for p in pins)
    key = hashlib.sha256(json.dumps([wheels[p]["sha256"] for p in sorted(pins)]).encode())
    return {"requested": list(pins), "wheels": files, "from_node": left,
            "key": key.hexdigest(), "size": sum(wheels[p]["size"] for p in pins)}


def wheels_of(index: Mapping[str, Any], arms: Iterable[str] | None = None
              ) -> dict[str, dict[str, Any]]:
    """Pin -> wheel entry of the index, for the wheels ``arms`` unpack (every wheel where None;
    an arm that pins nothing needs none): what a GPU node running those arms must carry."""
    wheels: dict[str, dict[str, Any]] = index["wheels"]
    if arms is None:
        return dict(wheels)
    files = {f for arm in arms for f in (index["arms"].get(arm) or {}).get("wheels", ())}
    return {pin: w for pin, w in wheels.items() if w["file"] in files}


def carried(index: dict[str, Any], arms: Iterable[str] | None = None) -> tuple[int, list[str]]:
    """Bytes of wheels a GPU node needs for this index (for ``arms``: every arm where None),
    and their paths."""
    wheels = wheels_of(index, arms).values()
    return sum(w["size"] for w in wheels), sorted({w["path"] for w in wheels})
