"""Files a trial uses, hashed again when it uses them: the build's artifacts against the sha256
the run's journal header holds for them. A file replaced after the build (or after the run
started) is refused before the trial starts, naming it, instead of running as is and being
journaled with the sha256 the build gave it. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..model.files import sha256_file


class ArtifactChanged(HarnessError):
    """A file the run's journal names by its sha256 holds other bytes now."""


def _files(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path, sha256) of every output an artifact's entry names (a built artifact: each of its
    outputs in its folder; an --artifact override: its one file)."""
    outputs, folder = entry.get("outputs"), entry.get("dir")
    if isinstance(outputs, Mapping) and isinstance(folder, str):
        return [(f"{folder}/{name}", sha) for name, sha in sorted(outputs.items())]
    return [(entry["path"], entry["sha256"])] if entry.get("sha256") and entry.get("path") else []


def verify_artifacts(artifacts: Mapping[str, Mapping[str, Any]], root: Path) -> None:
    """Every artifact's files hold the bytes the journal's header names; ArtifactChanged (one
    line) for the first that does not."""
    for name, entry in sorted(artifacts.items()):
        for rel, want in _files(entry):
            path = root / rel
            try:
                have = sha256_file(path)
            except OSError as exc:
                raise ArtifactChanged(f"artifact {name}: {rel} cannot be read "
                                      f"({exc.strerror or exc}); the run's trials use it") from None
            if have != want:
                raise ArtifactChanged(
                    f"artifact {name}: {rel} was replaced after it was built (sha256 "
                    f"{have[:12]}…, the run's journal names {want[:12]}…): no trial runs it. "
                    f"Build it again and start a new run, or give the file with --artifact "
                    f"{name}=PATH to a new run (recorded with its own sha256)")
