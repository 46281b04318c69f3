"""Build: the releases of a runtime package as a factor's levels (``Runtime.releases``).

A level of such a factor (``0.62.1`` of ``numba``) stands for that release and the
dependencies its wheel declares: each ``Requires-Dist`` (markers evaluated for the trials'
Python) that no shared pin (``Runtime.packages["*"]``) meets and ``Runtime.from_node`` does not
name is pinned to the newest final release inside the declared range that pip lists, and its
own dependencies likewise. The wheels are read where runtime.py downloads them (one download,
one cache); the release lists come from ``pip index versions`` (gpurepro.building.releases).
What was found is written once to ``locks/runtime/<case>.json``, level -> pins, and read from
there on every later build, so that an arm resolves to the same pins after a newer dependency
is published; a level that the lock lacks is resolved and added.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..case.model import Case, normalized_name
from ..errors import BuildError
from . import releases

# What other modules use; the rest is this module's own.
__all__ = ["arm_pins", "dependencies", "level_pin", "lock_path", "node_markers", "resolve_levels"]

FOLDER = "runtime"  # locks/runtime/<case>.json
LOCK_SCHEMA = "gpurepro/runtime-lock/1"
# A wheel's Requires-Dist of one package: (pin) -> the wheel's entry (runtime.download's).
Fetch = Callable[[str], Mapping[str, Any]]


def lock_path(root: Path, case_name: str) -> Path:
    return root / releases.LOCKS / FOLDER / f"{case_name}.json"


def level_pin(package: str, level: Any) -> str | None:
    """The pin a level stands for (``numba==0.62.1``), or None for a level that is no release
    (``node``: the node's own installation)."""
    text = str(level)
    try:
        releases._packaging().version.Version(text)
    except ValueError:
        return None
    return f"{package}=={text}"


def used_levels(case: Case) -> dict[str, str]:
    """Every release pin an arm's level stands for -> its factor, in the factors' order."""
    rt = case.runtime
    out: dict[str, str] = {}
    if rt is None:
        return out
    used = {(f, v) for factors in case.resolved_arms().values() for f, v in factors.items()}
    for factor, package in rt.releases.items():
        for level in case.factors[factor].levels:
            pin = level_pin(package, level)
            if pin is not None and (factor, level) in used:
                out[pin] = factor
    return out


def _newest(name: str, spec: Any, lister: Callable[[str], list[str]]) -> str:
    version = releases._packaging().version.Version
    inside = [v for v in lister(name)
              if not version(v).is_prerelease and spec.contains(version(v), prereleases=False)]
    if not inside:
        raise BuildError(f"no release of {name} that pip lists is inside {spec or 'any'}")
    return max(inside, key=version)


def dependencies(pin: str, shared: Sequence[str], from_node: Sequence[str], python: str,
                 fetch: Fetch, lister: Callable[[str], list[str]]) -> list[str]:
    """``pin`` and the pins of its dependencies, in the order their wheels declare them."""
    pk = releases._packaging()
    requirements, version = pk.requirements, pk.version
    markers = node_markers(python)
    have = {normalized_name(p.split("==")[0]) for p in shared}
    node = {normalized_name(n) for n in from_node}
    out, queue = [pin], [pin]
    pinned = {normalized_name(pin.split("==")[0]): pin.split("==")[1]}
    while queue:
        for text in fetch(queue.pop(0))["requires"]:
            req = requirements.Requirement(text)
            if req.marker is not None and not req.marker.evaluate(markers):
                continue
            name = normalized_name(req.name)
            if name in have or name in node:
                continue  # the arm's resolution checks the shared pin against the range
            if name in pinned:
                if not req.specifier.contains(version.Version(pinned[name]), prereleases=True):
                    raise BuildError(f"{pin}: its dependencies ask for two ranges of {name}")
                continue
            chosen = f"{req.name}=={_newest(req.name, req.specifier, lister)}"
            pinned[name] = chosen.split("==")[1]
            out.append(chosen)
            queue.append(chosen)
    return out


def resolve_levels(case: Case, root: Path, python: str, fetch: Fetch,
                   lister: Callable[[str], list[str]] = releases.versions_of
                   ) -> dict[str, list[str]]:
    """Release pin -> the pins it stands for, for every level an arm uses: from the lock where
    it holds the level, else found and added to it. Empty for a case without such factors."""
    rt = case.runtime
    wanted = used_levels(case)
    if rt is None or not wanted:
        return {}
    path = lock_path(root, case.name)
    held: dict[str, list[str]] = {}
    if path.is_file():
        held = dict(json.loads(path.read_text()).get("levels") or {})
    levels = {pin: list(held[pin]) if pin in held else
              dependencies(pin, rt.packages.get("*", ()), rt.from_node, python, fetch, lister)
              for pin in wanted}
    if any(pin not in held for pin in wanted):
        doc = {"schema": LOCK_SCHEMA, "case": case.name, "levels": {**held, **levels}}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return levels


def arm_pins(case: Case, arm: str, levels: Mapping[str, Sequence[str]],
             at: Mapping[str, str] | None = None) -> list[str]:
    """The arm's pins: ``"*"``'s, then each release factor's at the arm's level (its
    dependencies beside it), then the arm's own, a later pin of a name taking an earlier's
    place (``Runtime.pins_for``, with the levels between). ``at``: factor -> a level in place
    of the arm's (a runtime axis's release)."""
    rt = case.runtime
    assert rt is not None
    factors = {**case.resolved_arms()[arm], **(at or {})}
    pins: dict[str, str] = {}
    groups: list[Sequence[str]] = [rt.packages.get("*", ())]
    for factor, package in rt.releases.items():
        pin = level_pin(package, factors[factor])
        if pin is not None:
            groups.append(levels[pin])
    groups.append(rt.packages.get(arm, ()))
    for group in groups:
        for p in group:
            pins[normalized_name(p.split("==")[0])] = p
    return list(pins.values())


def node_markers(python: str) -> dict[str, str]:
    """The marker environment of the trials' interpreter (Linux, x86-64, CPython ``python``)."""
    return {"python_version": python, "python_full_version": f"{python}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "implementation_version": f"{python}.0", "os_name": "posix",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "platform_release": "", "platform_version": "", "extra": ""}
