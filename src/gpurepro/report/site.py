"""The documentation site's results pages, generated from results/ when the site is built.

``pages(results)`` gives every page and file the site's ``results/`` section holds, by its path
inside the site's docs folder:

- ``results/index.md``: the results index (results/README.md, as ``python -m gpurepro index``
  writes it) after a list of the cases, each linking its page;
- ``results/<case>/index.md``: the case's runs, newest first, each with its verdict and trial
  count and a link to its page, then its toolchain matrix and bisection documents;
- ``results/<case>/<stem>.md`` for each result document: its committed report (verdict,
  claims, plots: ``gpurepro report``'s Markdown, unchanged) with the issue comment the document
  gives (``gpurepro issue``), in a fence to copy;
- every other committed file under results/ (documents, journals, pictures, logs, matrix and
  bisection reports), as it is, so that every link of a report resolves inside the site.

The MkDocs hook (docs/hooks/results.py) adds these as generated files; nothing is written into
results/. Page text depends on the documents alone, in a fixed order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .comment import issue_body
from .index import _href
from .tables import code, escape, fence, table

# Files that stay out of the site: the folder's own index (the site's is generated) and the
# files git ignores there.
LEFT_OUT = {"README.md"}


def _documents(results: Path) -> list[tuple[Path, Mapping[str, Any]]]:
    out = []
    for path in sorted(results.glob("*/*.json")):
        if path.name.endswith(".pyperf.json"):
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, Mapping) and str(doc.get("schema", "")).startswith("gpurepro/"):
            out.append((path, doc))
    return out


def _kind(doc: Mapping[str, Any]) -> str:
    return str(doc.get("schema", "")).split("/")[1].split("@")[0].split("-")[0]


def run_page(path: Path, doc: Mapping[str, Any]) -> str:
    """A result's page: its committed report, then its issue comment."""
    report = path.with_suffix(".md")
    body = report.read_text() if report.is_file() else (
        f"# {escape(doc['case']['name'])}: {code(path.name)}\n\n"
        f"No report is committed beside this document.\n")
    comment = issue_body(doc, path, url="")
    return (body.rstrip() + "\n\n## The issue comment\n\n"
            f"What `python -m gpurepro issue {escape(path.name)}` prints for this document, "
            f"to paste into the issue (its head first, the rest in folds):\n\n"
            + "\n".join(fence(comment, "markdown")) + "\n\n"
            f"[The document]({_href(path.name)}) · [all runs of {escape(doc['case']['name'])}](index.md)\n")


def _status(doc: Mapping[str, Any]) -> str:
    return escape(str((doc.get("verdict") or {}).get("status") or "–").replace("_", " "))


def case_page(case: str, docs: list[tuple[Path, Mapping[str, Any]]]) -> str:
    results = [(p, d) for p, d in docs if _kind(d) == "result"]
    others = [(p, d) for p, d in docs if _kind(d) != "result"]
    out = [f"# {case}", "",
           f"Every committed run of [`{case}`](https://github.com/gpurepro/gpurepro/tree/main/"
           f"cases/{case}), newest first: each page holds the run's verdict, claims, plots and "
           f"the issue comment it gives.", ""]
    rows = []
    for path, doc in sorted(results, key=lambda pd: pd[0].name, reverse=True):
        gpus = (doc.get("environment") or {}).get("gpu", {}).get("gpus") or []
        gpu = ", ".join(sorted({escape(g.get("name")) for g in gpus})) or "no GPU"
        rows.append([f"[{escape(path.stem)}]({_href(path.stem + '.md')})", _status(doc), gpu,
                     str(len(doc.get("trials") or [])), str(len(doc.get("summary") or {}))])
    out += table(["run", "verdict", "GPU", "trials", "arms"], rows)
    if others:
        out += ["", "## Toolchain matrix and bisection documents", ""]
        for path, doc in others:
            report = path.with_suffix(".md")
            link = (f"[{escape(path.stem)}]({_href(report.name)})" if report.is_file()
                    else code(path.name))
            out.append(f"- {link} ({escape(_kind(doc))}; [the document]({_href(path.name)}))")
    return "\n".join(out) + "\n"


def index_page(results: Path, cases: list[str]) -> str:
    committed = (results / "README.md")
    index = committed.read_text() if committed.is_file() else ""
    # The committed index's first line is its title; the site's comes first.
    rest = index.split("\n", 1)[1] if index.startswith("# ") else index
    lines = ["# Results", "", "The runs of each case:", ""]
    lines += [f"- [{escape(c)}]({c}/index.md)" for c in cases]
    return "\n".join(lines) + "\n\n## Every result document\n" + rest.replace("\n## ", "\n### ")


def pages(results: Path) -> dict[str, str | bytes]:
    """Site path (under the docs folder) -> the page's text, or a file's bytes."""
    docs = _documents(results)
    by_case: dict[str, list[tuple[Path, Mapping[str, Any]]]] = {}
    for path, doc in docs:
        by_case.setdefault(path.parent.name, []).append((path, doc))
    out: dict[str, str | bytes] = {"results/index.md": index_page(results, sorted(by_case))}
    for case, case_docs in sorted(by_case.items()):
        out[f"results/{case}/index.md"] = case_page(case, case_docs)
        for path, doc in case_docs:
            if _kind(doc) == "result":
                out[f"results/{case}/{path.stem}.md"] = run_page(path, doc)
    for path in sorted(p for p in results.rglob("*") if p.is_file()):
        rel = f"results/{path.relative_to(results).as_posix()}"
        if path.name in LEFT_OUT or rel in out or "__pycache__" in path.parts:
            continue
        out[rel] = path.read_text() if path.suffix == ".md" else path.read_bytes()
    return out
