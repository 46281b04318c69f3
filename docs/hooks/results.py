"""MkDocs hook: the site's results section, generated from results/ at build time by
gpurepro.report.site (every committed document rendered, each case's page linking its runs)."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

from gpurepro.report.site import pages

ROOT = Path(__file__).resolve().parents[2]


def on_files(files: Files, config) -> Files:
    for src_uri, content in pages(ROOT / "results").items():
        files.append(File.generated(config, src_uri, content=content))
    return files
