"""What a run was built and run with, typed: the toolchain the build resolved (``toolchain``:
exact versions, the tools' own version strings, each arm's toolchain release) and the runtime
packages its Python trials imported (``runtime``: per arm what was requested, what resolved
and what was left to the GPU node). Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

# What other modules use; the rest is this module's own.
__all__ = ["NodePackage", "Release", "Runtime", "RuntimeArm", "Toolchain"]


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value or {}))


@dataclass(frozen=True)
class Release:
    """A toolchain release an arm's artifacts were built with (a wheel, by its sha256)."""

    package: str
    version: str
    sha256: str

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Release:
        return cls(str(d.get("package")), str(d.get("version")), str(d.get("sha256")))


@dataclass(frozen=True)
class Toolchain:
    """The document's ``toolchain``: package -> the version resolved, tool -> its version
    string, and arm -> the releases of its toolchain factors (empty: no arm compares
    releases)."""

    resolved: Mapping[str, Any]
    tools: Mapping[str, Any]
    releases: Mapping[str, tuple[Release, ...]]

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Toolchain:
        d = d or {}
        return cls(_frozen(d.get("resolved")), _frozen(d.get("tools")),
                   MappingProxyType({str(arm): tuple(Release.of(r) for r in factors.values())
                                     for arm, factors in (d.get("arms") or {}).items()}))


@dataclass(frozen=True)
class NodePackage:
    """A requirement the case left to the GPU node, and what the node had."""

    name: str | None
    version: str | None
    requirement: str | None
    of: str | None  # the package that needs it
    met: bool | None  # None: not known

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> NodePackage:
        return cls(d.get("name"), d.get("version"), d.get("requirement"), d.get("of"),
                   d.get("met"))


@dataclass(frozen=True)
class RuntimeArm:
    """One arm's runtime packages: the requirements, the versions resolved, the node's."""

    requested: tuple[str, ...]
    resolved: Mapping[str, Any]
    from_node: tuple[NodePackage, ...]

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> RuntimeArm:
        return cls(tuple(str(x) for x in d.get("requested") or ()), _frozen(d.get("resolved")),
                   tuple(NodePackage.read(n) for n in d.get("from_node") or ()))


@dataclass(frozen=True)
class Runtime:
    """The document's ``runtime`` (None: the run carried no runtime packages): the Python its
    wheels are for and each arm's packages."""

    python: str | None
    arms: Mapping[str, RuntimeArm]

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Runtime | None:
        if d is None:
            return None
        return cls(d.get("python"), MappingProxyType({str(a): RuntimeArm.of(r) for a, r in
                                                      (d.get("arms") or {}).items()}))
