"""Where a run ran, typed: the GPUs, driver and host the environment fingerprint names, and the
Slurm cluster a cluster run spread over. The fingerprint itself stays open-ended JSON
(``Environment.fingerprint``: what env/ collected, allow-listed variables included); these are
the facts of it that the report reads by name. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .jsontypes import JSONObject

# What other modules use; the rest is this module's own.
__all__ = ["Cluster", "Environment", "Gpu", "GpuEnvironment", "Repository"]


@dataclass(frozen=True)
class Gpu:
    """One GPU the fingerprint lists (``environment.gpu.gpus``)."""

    name: str | None
    compute_capability: str | None

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Gpu:
        return cls(d.get("name"), d.get("compute_capability"))


@dataclass(frozen=True)
class GpuEnvironment:
    """The GPUs found, the driver, and why none was found (``reason``)."""

    gpus: tuple[Gpu, ...]
    driver_version: str | None
    cuda_driver_api: str | None
    reason: str | None

    @property
    def names(self) -> list[str]:
        """The GPUs' names, each once, sorted (a GPU without one is "None", as str() gives)."""
        return sorted({str(g.name) for g in self.gpus})

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> GpuEnvironment:
        d = d or {}
        return cls(tuple(Gpu.of(g) for g in d.get("gpus") or []), d.get("driver_version"),
                   d.get("cuda_driver_api"), d.get("reason"))


@dataclass(frozen=True)
class Repository:
    """The checkout the run ran from (``environment.repository``): its commit (None: a tree
    copied without git), whether it was dirty, and how record/provenance found the commit
    (``manifest_found``: "named" where the run named it, else how; ``manifest_note`` in words)."""

    commit: str | None = None
    dirty: bool = False
    has_manifest: bool = False
    manifest_found: str | None = None
    manifest_note: str | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Repository:
        d = d or {}
        manifest = d.get("manifest") or {}
        return cls(d.get("commit"), bool(d.get("dirty")), bool(manifest), manifest.get("found"),
                   manifest.get("note"))


@dataclass(frozen=True)
class Environment:
    """The document's ``environment``: the GPU facts and the Python that ran the trials by
    name; ``variables`` the allow-listed environment variables; ``fingerprint`` the whole of
    it as recorded (open-ended: what the collectors found on that machine)."""

    gpu: GpuEnvironment
    host_python: str | None
    variables: Mapping[str, str]
    cuda_python_source: str | None
    repository: Repository
    fingerprint: JSONObject = field(repr=False, compare=False)

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Environment:
        d = d or {}
        host = d.get("host") or {}
        return cls(gpu=GpuEnvironment.of(d.get("gpu")), host_python=host.get("python"),
                   variables=MappingProxyType(dict(d.get("environment") or {})),
                   cuda_python_source=(d.get("cuda_python") or {}).get("source"),
                   repository=Repository.of(d.get("repository")), fingerprint=dict(d))


@dataclass(frozen=True)
class Cluster:
    """A cluster run's Slurm facts (the document's ``cluster``): its nodes and partitions;
    ``fields`` the record as written (gpurepro.cluster.merge reads the rest)."""

    nodes: int
    partitions: tuple[str, ...]
    fields: JSONObject = field(repr=False, compare=False)

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Cluster | None:
        if not d:
            return None  # not a cluster run
        return cls(len(d.get("nodes") or {}), tuple(str(p) for p in d.get("partitions") or ()),
                   dict(d))
