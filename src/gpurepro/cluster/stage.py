"""The tree a cluster run's array tasks run from: a copy of what the run stage needs, in a
folder every node sees.

Copied rather than pointed at the checkout: jobs may wait in the queue for hours, and a
checkout edited or rebuilt meanwhile must not change what a later task runs (the journal's
identity holds the manifest's and the plan's hashes; the artifacts' are checked here). The tree
holds the harness's modules (the run stage needs only the standard library), the case folder,
``native/`` and the built artifacts of every target at the paths the build index records, so
artifact paths stay relative to the repository root as everywhere else.

Standard library only.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..case.model import Case
from ..errors import StageError
from ..model.files import sha256_file

_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")


def stage(root: Path, dest: Path, case: Case, indexes: Mapping[str, Mapping[str, Any]]) -> Path:
    """Copy what the run stage needs into ``dest`` (created; must not exist yet)."""
    if dest.exists():
        raise StageError(f"{dest} exists; a run's tree is made once")
    package = Path(__file__).resolve().parents[1]  # the gpurepro package
    shutil.copytree(package, dest / "src" / "gpurepro", ignore=_SKIP)
    shutil.copytree(root / "native", dest / "native", ignore=_SKIP)
    (dest / "cases").mkdir(exist_ok=True)  # find_repo_root needs cases/ and native/
    case_dir = case.directory.resolve()
    if not case_dir.is_relative_to(root.resolve()):
        raise StageError(f"the case folder {case_dir} is outside the repository {root}")
    shutil.copytree(case_dir, dest / case_dir.relative_to(root.resolve()), ignore=_SKIP,
                    dirs_exist_ok=True)
    for target, index in indexes.items():
        for name, entry in index["artifacts"].items():
            source = root / entry["path"]
            if not source.is_file() or sha256_file(source) != entry["sha256"]:
                raise StageError(f"artifact {name} for {target} ({entry['path']}) is missing or "
                                 f"differs from its build index; rebuild it")
            copied = dest / entry["path"]
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copied)
    return dest
