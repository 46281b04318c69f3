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
__all__ = [
    "Cluster", "CudaPython", "Environment", "Gpu", "GpuEnvironment", "Host", "Repository", "gpu_model"
]


@dataclass(frozen=True)
class Gpu:
    """One GPU the fingerprint lists (``environment.gpu.gpus``)."""

    name: str | None
    compute_capability: str | None
    memory_mib: int | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Gpu:
        return cls(d.get("name"), d.get("compute_capability"), d.get("memory_mib"), d.get("uuid"),
                   d.get("pci_bus_id"))


@dataclass(frozen=True)
class GpuEnvironment:
    """The GPUs found, the driver, and why none was found (``reason``)."""

    gpus: tuple[Gpu, ...]
    driver_version: str | None
    cuda_driver_api: str | None
    reason: str | None
    name: str | None = None  # a fingerprint that names one GPU for all

    @property
    def names(self) -> list[str]:
        """The GPUs' names, each once, sorted (a GPU without one is "None", as str() gives)."""
        return sorted({str(g.name) for g in self.gpus})

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> GpuEnvironment:
        d = d or {}
        return cls(tuple(Gpu.of(g) for g in d.get("gpus") or []), d.get("driver_version"),
                   d.get("cuda_driver_api"), d.get("reason"), d.get("name"))


@dataclass(frozen=True)
class Host:
    """The machine the trials ran on (``environment.host``; None where it was not found)."""

    os: str | None = None
    kernel: str | None = None
    glibc: str | None = None
    cpu: str | None = None
    cpu_count: int | None = None
    python: str | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Host:
        d = d or {}
        return cls(d.get("os"), d.get("kernel"), d.get("glibc"), d.get("cpu"), d.get("cpu_count"),
                   d.get("python"))


@dataclass(frozen=True)
class CudaPython:
    """What the driver says through cuda.bindings (``environment.cuda_python``; env/fingerprint)."""

    source: str | None = None
    module_loading: str | None = None
    driver_api_version: str | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> CudaPython:
        d = d or {}
        return cls(d.get("source"), d.get("module_loading"), d.get("driver_api_version"))


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
    host: Host
    variables: Mapping[str, str]
    cuda_python: CudaPython
    repository: Repository
    # What env/ found of the conditions that change a race's rate (None: an older document).
    conditions: JSONObject | None
    fingerprint: JSONObject = field(repr=False, compare=False)

    @property
    def host_python(self) -> str | None:
        return self.host.python

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Environment:
        d = d or {}
        conditions = d.get("conditions")
        return cls(gpu=GpuEnvironment.of(d.get("gpu")), host=Host.of(d.get("host")),
                   variables=MappingProxyType(dict(d.get("environment") or {})),
                   cuda_python=CudaPython.of(d.get("cuda_python")),
                   repository=Repository.of(d.get("repository")),
                   conditions=dict(conditions) if conditions else None, fingerprint=dict(d))


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


def gpu_model(doc: Mapping[str, Any]) -> str | None:
    """The GPU model a result document was run on (its first GPU's name), None where none."""
    gpus = ((doc.get("environment") or {}).get("gpu") or {}).get("gpus") or []
    return str(gpus[0].get("name")) if gpus and isinstance(gpus[0], Mapping) else None
