"""The package layout's promises: each old module name a case outside this repository may
import still works for one release, and says where its names went."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT

# Old module -> (its new home, a name imported through it).
SHIMS = {
    "gpurepro.manifest": ("gpurepro.case", "Case"),
    "gpurepro.toolchain": ("gpurepro.build.toolchain", "find_tool"),
    "gpurepro.elf": ("gpurepro.build.elf", "embedded_object"),
    "gpurepro.instruments": ("gpurepro.run.instruments", "wrap"),
    "gpurepro.analysis": ("gpurepro.analyze.views", "Analysis"),
}


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_an_old_module_name_still_imports_and_names_its_new_home(old):
    new, name = SHIMS[old]
    code = (f"import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            f"try:\n    import {old}\nexcept DeprecationWarning as w:\n    print(w)\n"
            f"warnings.simplefilter('ignore', DeprecationWarning)\n"
            f"import importlib; old = importlib.import_module({old!r}); "
            f"new = importlib.import_module({new!r})\n"
            f"assert getattr(old, {name!r}) is getattr(new, {name!r})\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    assert done.returncode == 0, done.stderr
    assert f"{old} is deprecated" in done.stdout and new in done.stdout
