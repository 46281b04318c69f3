"""The claims' exact binomial p-values from scipy's public functions, and nothing private of
scipy imported anywhere in the harness (a private module moves between releases)."""

from __future__ import annotations

import ast
import itertools

import pytest
from scipy import stats as sps

from gpurepro.analyze.claim_kinds.base import binom_p as _binom_p
from tests.conftest import ROOT


@pytest.mark.parametrize(("n", "share"), list(itertools.product(
    [1, 2, 7, 12, 25, 60], [0.0, 0.05, 0.5, 0.9])))
def test_the_one_sided_binomial_p_values_are_binomtests(n, share):
    for k in range(n + 1):
        for alternative in ("greater", "less"):
            want = sps.binomtest(k, n, share, alternative=alternative).pvalue
            assert _binom_p(k, n, share, alternative) == pytest.approx(want, rel=1e-9, abs=1e-300)


def _private(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "scipy" and any(p.startswith("_") for p in parts[1:])


def test_no_module_of_the_harness_imports_a_private_scipy_module():
    found = []
    for path in sorted((ROOT / "src" / "gpurepro").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if _private(n)]
    assert found == []
    assert _private("scipy.special._ufuncs") and not _private("scipy.special")
