"""ProperDocs (MkDocs) hook: the site's results section, generated from results/ at build time by
gpurepro.report.site (every committed document rendered, each case's page linking its runs), and
the built site checked as a reader meets it (gpurepro.report.sitecheck: no list rendered as a
paragraph, no page titled by a file name, nothing loaded from outside, no broken link): a problem
fails the build."""

from __future__ import annotations

from pathlib import Path

from properdocs.exceptions import Abort
from properdocs.structure.files import File, Files

from gpurepro.record.result import with_checkout_facts
from gpurepro.report.site import pages
from gpurepro.report.sitecheck import check_site, summary

ROOT = Path(__file__).resolve().parents[2]


def on_files(files: Files, config) -> Files:
    # A document recorded before it kept its case's targets reads them from this checkout.
    pages_of = pages(ROOT / "results", lambda doc: with_checkout_facts(doc, ROOT))
    for src_uri, content in pages_of.items():
        files.append(File.generated(config, src_uri, content=content))
    return files


def on_post_build(config) -> None:
    site = Path(config.site_dir)
    problems = check_site(site, ROOT, config.repo_url, config.site_name)
    if problems:
        raise Abort(summary(problems, len(list(site.rglob("*.html")))))
