"""Cases describe, the harness decides: no file under cases/ (the reporters' seed/ files aside)
imports scipy or computes a statistical test of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

CODE = {".py", ".cc", ".cu", ".cpp", ".h", ".hpp", ".sh"}

# (what, pattern); patterns for code files. Prose (README.md) may name scipy, not import it.
FORBIDDEN = [
    ("imports scipy", re.compile(r"^\s*(?:import\s+scipy|from\s+scipy\b)", re.M)),
    ("names scipy", re.compile(r"\bscipy\b")),
    ("imports statsmodels", re.compile(r"\bstatsmodels\b")),
    ("calls a test", re.compile(r"\b(?:binomtest|binom_test|fisher_exact|boschloo_exact|barnard_exact|"
                                r"chi2_contingency|mannwhitneyu|ttest_\w+|poisson_means_test)\s*\(")),
    ("compares a p-value", re.compile(r"\bp_?values?\b['\"]?\s*\]?\s*(?:\[[^\]]*\]\s*)?[<>]=?", re.I)),
    ("compares a p-value", re.compile(r"[<>]=?\s*(?:self\.)?\w*(?:ALPHA|alpha)\b")),
    ("defines an alpha", re.compile(r"\bALPHA\b")),
]


def case_files():
    out = []
    for p in sorted((ROOT / "cases").rglob("*")):
        rel = p.relative_to(ROOT / "cases")
        if p.is_file() and "seed" not in rel.parts[1:2] and "__pycache__" not in rel.parts:
            out.append(p)
    return out


def violations(path: Path, text: str) -> list[str]:
    code = path.suffix in CODE
    found = []
    for what, pattern in FORBIDDEN:
        if not code and what != "imports scipy":
            continue
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{path}:{line}: {what}: {m.group(0).strip()!r}")
    return found


def test_the_scan_sees_the_cases():
    files = case_files()
    names = {p.relative_to(ROOT / "cases").as_posix() for p in files}
    assert "tile_unload_race/verdict.py" in names and "tcgen05_alloc_order/conclusion.py" in names
    assert not any("/seed/" in f"/{n}" for n in names)


@pytest.mark.parametrize("snippet", [
    "from scipy import stats\n", "import scipy.stats as st\n", "p = stats.binomtest(3, 10).pvalue\n",
    "fisher_exact([[1, 2], [3, 4]])\n", "if c['p_value'] < 0.05:\n", "ok = p_value <= alpha\n",
    "ALPHA = 0.05\n", "if rr['p_value'] >= ALPHA:\n",
])
def test_the_scan_catches_a_test(snippet):
    assert violations(Path("x.py"), snippet)


@pytest.mark.parametrize("snippet", [
    'supported="... (rate ratio {ratio}, 95% CI {ratio_ci})"\n',
    "decision = claim.get('decision')\n",
    "# decided by the harness under one family-wise alpha\n",
])
def test_the_scan_lets_claims_through(snippet):
    assert not violations(Path("x.py"), snippet)


def test_no_case_file_imports_scipy_or_computes_a_test():
    found = []
    for p in case_files():
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file computes nothing
        found += violations(p.relative_to(ROOT), text)
    assert not found, "statistics belong to the harness (src/gpurepro/analyze/claims.py):\n" + "\n".join(found)
