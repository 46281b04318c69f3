"""The documentation site's results pages, generated from results/ when the site is built.

``pages(results)`` gives every page and file the site's ``results/`` section holds, by its path
inside the site's docs folder:

- ``results/index.md``: the results index (results/README.md, as ``python -m gpurepro index``
  writes it) after a list of the cases, each linking its page;
- ``results/<case>/index.md``: the case's runs, newest first, each with its date, GPU, verdict
  and trial count and a link to its page, then its toolchain matrix and bisection documents;
- ``results/<case>/<stem>.md`` for each result document: a title that says what the run is
  (the case, the GPU, when it started: ``run_title``), its committed report (verdict, claims,
  plots: ``gpurepro report``'s Markdown, unchanged) and the issue comment the document gives
  (``gpurepro issue``), in a fence to copy;
- a toolchain matrix's or bisection's committed report under a title of the same kind
  (``other_title``);
- every other committed file under results/ (documents, journals, pictures, logs), as it is,
  so that every link of a report resolves inside the site.

Reports are written for GitHub; the site shows their lists as GitHub does through the Markdown
extension mkdocs.yml names (``gpurepro.report.gfm_lists``).

The MkDocs hook (docs/hooks/results.py) adds these as generated files; nothing is written into
results/. Page text depends on the documents alone, in a fixed order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from ..model.jsontypes import JSONObject
from ..model.result import Result
from .comment import issue_body
from .index import _href
from .tables import code, escape, fence, table

# What other modules use; the rest is this module's own.
__all__ = ["case_page", "json", "LEFT_OUT", "pages", "run_page"]

# Files that stay out of the site: the folder's own index (the site's is generated) and the
# files git ignores there.
LEFT_OUT = {"README.md"}


def _documents(results: Path) -> list[tuple[Path, JSONObject]]:
    """Every committed document of any kind (result, matrix, bisection, benchmark), as read."""
    out = []
    for path in sorted(results.glob("*/*.json")):
        if path.name.endswith(".pyperf.json"):
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and str(doc.get("schema", "")).startswith("gpurepro/"):
            out.append((path, cast(JSONObject, doc)))
    return out


def _kind(doc: JSONObject) -> str:
    return str(doc.get("schema", "")).split("/")[1].split("@")[0].split("-")[0]


def _gpu_names(doc: Result | JSONObject) -> str:
    """The GPUs a document's trials ran on, by name ("no GPU" where it names none)."""
    if isinstance(doc, Result):
        return ", ".join(sorted({str(g.name) for g in doc.environment.gpu.gpus if g.name})) or "no GPU"
    env = doc.get("environment") if isinstance(doc.get("environment"), Mapping) else {}
    gpus = ((cast(Mapping[str, Any], env) or {}).get("gpu") or {}).get("gpus") or []
    gpu = doc.get("gpu")
    if not gpus and isinstance(gpu, Mapping):  # matrix and bisection documents: their GPU stage
        device = gpu.get("device")
        gpus = [device] if isinstance(device, Mapping) else []
    names = sorted({str(g.get("name")) for g in gpus if isinstance(g, Mapping) and g.get("name")})
    return ", ".join(names) or "no GPU"


def _when(doc: Result | JSONObject) -> str:
    """When a run started (a result) or was assembled (a matrix, a bisection): "2026-12-05
    11:01 UTC", from the document's own ISO time."""
    stamp = (str(doc.started_at or doc.created_at or "") if isinstance(doc, Result)
             else str(doc.get("started_at") or doc.get("created_at") or ""))
    if len(stamp) >= 16 and stamp[10] == "T":
        return f"{stamp[:10]} {stamp[11:16]} UTC"
    return stamp or "no date recorded"


def run_title(r: Result) -> str:
    """What a result's page is titled (unescaped): the case, the GPU, when the run started."""
    return f"{r.case.name} on {_gpu_names(r)}, {_when(r)}"


def other_title(doc: JSONObject) -> str:
    """A toolchain matrix's or bisection's page title (unescaped)."""
    facts = doc.get("case")
    case = facts.get("name") if isinstance(facts, dict) else None
    if _kind(doc) == "matrix":
        what = "Toolchain matrix"
    else:
        axis = doc.get("axis")
        what = (f"Bisection over {(axis.get('name') if isinstance(axis, dict) else None) or 'a toolchain axis'}")
    return f"{what} of {case or 'a case'} on {_gpu_names(doc)}, {_when(doc)}"


def run_page(path: Path, r: Result, title: str | None = None) -> str:
    """A result's page: its title, its committed report, then its issue comment."""
    report = path.with_suffix(".md")
    body = report.read_text() if report.is_file() else (
        f"No report is committed beside this document ({code(path.name)}).\n")
    comment = issue_body(r, path, url="")
    return (f"# {escape(title or run_title(r))}\n\n" + body.rstrip()
            + "\n\n## The issue comment\n\n"
            f"What `python -m gpurepro issue {escape(path.name)}` prints for this document, "
            f"to paste into the issue (its head first, the rest in folds):\n\n"
            + "\n".join(fence(comment, "markdown")) + "\n\n"
            f"[The document]({_href(path.name)}) · [all runs of {escape(r.case.name)}](index.md)\n")


def _status(r: Result) -> str:
    return escape(str((r.verdict.status if r.verdict else None) or "–").replace("_", " "))


def case_page(case: str, results: list[tuple[Path, Result]],
              others: list[tuple[Path, JSONObject]]) -> str:
    out = [f"# {case}", "",
           f"Every committed run of [`{case}`](https://github.com/gpurepro/gpurepro/tree/main/"
           f"cases/{case}), newest first: each page holds the run's verdict, claims, plots and "
           f"the issue comment it gives.", ""]
    rows = []
    for path, r in sorted(results, key=lambda pr: pr[0].name, reverse=True):
        rows.append([f"[{escape(_when(r))}]({_href(path.stem + '.md')})", escape(_gpu_names(r)),
                     _status(r), str(len(r.trials)), str(len(r.arms)),
                     f"[{code(path.name)}]({_href(path.name)})"])
    out += table(["run (started)", "GPU", "verdict", "trials", "arms", "document"], rows)
    if others:
        out += ["", "## Toolchain matrix and bisection documents", ""]
        for path, doc in others:
            report = path.with_suffix(".md")
            title = escape(other_title(doc))
            link = f"[{title}]({_href(report.name)})" if report.is_file() else title
            out.append(f"- {link} ([the document]({_href(path.name)}))")
    return "\n".join(out) + "\n"


def bench_page(docs: list[tuple[Path, JSONObject]]) -> str:
    """results/bench/: each benchmark document with its question, when it was measured, whether
    it met its goal, its pyperf suite, newest first (docs/benchmarks.md reads them)."""
    out = ["# Benchmark documents", "",
           "Every committed benchmark document, newest first, with its pyperf suite "
           "(`python -m pyperf compare_to A.pyperf.json B.pyperf.json` sets two side by side); "
           "what each measures and its goal: [Benchmarks](../../benchmarks.md).", ""]
    rows = []
    for path, doc in sorted(docs, key=lambda pd: str(pd[1].get("created_at") or ""), reverse=True):
        suite = path.with_name(path.stem + ".pyperf.json")
        met = doc.get("met")
        rows.append([escape(str(doc.get("name") or path.stem)), escape(_when(doc)),
                     escape(str(doc.get("question") or "–")),
                     "–" if met is None else ("met" if met else "**not met**"),
                     f"[{code(path.name)}]({_href(path.name)})"
                     + (f", [pyperf suite]({_href(suite.name)})" if suite.is_file() else "")])
    out += table(["benchmark", "measured", "question", "goal", "documents"], rows)
    return "\n".join(out) + "\n"


def index_page(results: Path, cases: list[str], bench: bool = False) -> str:
    committed = (results / "README.md")
    index = committed.read_text() if committed.is_file() else ""
    # The committed index's first line is its title; the site's comes first.
    rest = index.split("\n", 1)[1] if index.startswith("# ") else index
    lines = ["# Results", "", "The runs of each case:", ""]
    lines += [f"- [{escape(c)}]({c}/index.md)" for c in cases]
    if bench:
        lines += ["", "The harness's own benchmarks: [the benchmark documents](bench/index.md)."]
    return "\n".join(lines) + "\n\n## Every result document\n" + rest.replace("\n## ", "\n### ")


def _titles(results: list[tuple[Path, Result]], others: list[tuple[Path, JSONObject]]
            ) -> dict[Path, str]:
    """Each document's page title; two runs of a case that started in the same minute on the
    same GPU are told apart by their order ("second document", ...)."""
    titles = {p: run_title(r) for p, r in results} | {p: other_title(d) for p, d in others}
    seen: dict[str, int] = {}
    for path in sorted(titles):
        n = seen[titles[path]] = seen.get(titles[path], 0) + 1
        if n > 1:
            titles[path] += f" ({ORDINALS.get(n, str(n) + 'th')} document)"
    return titles


ORDINALS = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}


def pages(results: Path, read_as: Callable[[Mapping[str, Any]], Mapping[str, Any]] = lambda d: d
          ) -> dict[str, str | bytes]:
    """Site path (under the docs folder) -> the page's text, or a file's bytes. ``read_as``:
    each document as its pages read it (the docs' hook completes one recorded before it kept
    its case's targets from the checkout: gpurepro.record.result.with_checkout_facts)."""
    by_case: dict[str, list[tuple[Path, JSONObject]]] = {}
    for path, doc in _documents(results):
        by_case.setdefault(path.parent.name, []).append((path, doc))
    cases = sorted(c for c, ds in by_case.items() if not all(_kind(d) == "bench" for _, d in ds))
    out: dict[str, str | bytes] = {"results/index.md": index_page(results, cases,
                                                                  len(cases) < len(by_case))}
    for case, case_docs in sorted(by_case.items()):
        if all(_kind(d) == "bench" for _, d in case_docs):
            out[f"results/{case}/index.md"] = bench_page(case_docs)
            continue
        # A result is read once, as its pages read it; the other kinds' documents as they are.
        runs = [(p, Result.of(read_as(d))) for p, d in case_docs if _kind(d) == "result"]
        others = [(p, d) for p, d in case_docs if _kind(d) != "result"]
        out[f"results/{case}/index.md"] = case_page(case, runs, others)
        titles = _titles(runs, others)
        typed = dict(runs)
        for path, _ in case_docs:
            if path in typed:
                out[f"results/{case}/{path.stem}.md"] = run_page(path, typed[path], titles[path])
            elif path.with_suffix(".md").is_file():
                out[f"results/{case}/{path.stem}.md"] = (
                    f"# {escape(titles[path])}\n\n" + path.with_suffix(".md").read_text())
    for path in sorted(p for p in results.rglob("*") if p.is_file()):
        rel = f"results/{path.relative_to(results).as_posix()}"
        if path.name in LEFT_OUT or rel in out or "__pycache__" in path.parts:
            continue
        out[rel] = path.read_text() if path.suffix == ".md" else path.read_bytes()
    return out
