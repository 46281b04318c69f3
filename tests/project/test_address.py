"""One address for the project: pyproject.toml's ``[project.urls] Repository``, used by the
README (its clone line and links), mkdocs.yml's ``repo_url``, every schema's ``$id``, the
issue comment's clone line and the install hint outside a checkout (there is no gpurepro on
PyPI). Every link to the project anywhere in the tree starts with it."""

from __future__ import annotations

import json
import os
import re
import tomllib

import pytest

from gpurepro import project
from tests import invoke
from tests.conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
ADDRESS = PROJECT["urls"]["Repository"]
# A link to the project, in any of the forms a link to a GitHub repository takes.
PROJECT_LINK = re.compile(r"https?://(?:www\.)?(?:raw\.)?github(?:usercontent)?\.com/gpurepro\b"
                          r"[^\s)\]\"'<>`]*")
# Where the tree names the project: prose, configuration, code and schemas. results/ holds what
# runs recorded (their own words), tests/ the stand-in addresses the tests give.
SCANNED = [ROOT / "README.md", ROOT / "mkdocs.yml", ROOT / "pyproject.toml", ROOT / "noxfile.py",
           ROOT / "Makefile", *sorted((ROOT / "docs").rglob("*.md")),
           *sorted((ROOT / "docs").rglob("*.py")), *sorted((ROOT / "cases").glob("*/README.md")),
           *sorted((ROOT / "cases").glob("*/*.py")), *sorted((ROOT / "schema").glob("*.json")),
           *sorted(p for p in (ROOT / "src").rglob("*") if p.suffix in (".py", ".json", ".md")
                   and "__pycache__" not in p.parts)]


def test_the_address_is_a_public_repository_and_the_issues_are_its():
    assert ADDRESS == "https://github.com/gpurepro/gpurepro"
    assert PROJECT["urls"]["Issues"] == f"{ADDRESS}/issues"
    assert project.configured_url() == ADDRESS


def test_the_readme_clones_from_the_address():
    readme = (ROOT / "README.md").read_text()
    assert f"git clone {ADDRESS} && cd gpurepro" in readme


def test_the_sites_repository_is_the_address():
    config = (ROOT / "mkdocs.yml").read_text()
    assert re.search(r"^repo_url: (\S+)$", config, re.M).group(1) == ADDRESS


@pytest.mark.parametrize("folder", ["schema", "src/gpurepro/schema"])
def test_every_schemas_id_is_its_file_at_the_address(folder):
    schemas = sorted((ROOT / folder).glob("*.schema.json"))
    assert len(schemas) >= 4
    for path in schemas:
        name = path.name.removesuffix(".schema.json")
        assert json.loads(path.read_text())["$id"] == \
            f"{ADDRESS}/blob/main/schema/{name}.schema.json" == project.schema_id(name, ADDRESS)


def test_every_link_to_the_project_in_the_tree_starts_with_the_address():
    found = 0
    wrong = []
    for path in SCANNED:
        for link in PROJECT_LINK.findall(path.read_text(errors="replace")):
            found += 1
            if not (link == ADDRESS or link.startswith(ADDRESS + "/")
                    or link.startswith(ADDRESS + ".git")):
                wrong.append(f"{path.relative_to(ROOT)}: {link}")
    assert found > 100 and not wrong, wrong[:10]


def test_no_placeholder_address_is_left_in_the_tree():
    hosts = re.compile(r"https?://[A-Za-z0-9.-]+\.invalid\b")
    left = [str(p.relative_to(ROOT)) for p in SCANNED if hosts.search(p.read_text(errors="replace"))]
    assert left == []


def test_the_issue_comment_clones_from_the_address():
    doc = max(p for p in (ROOT / "results" / "ctx_get_device_v2").glob("*.json")
              if json.loads(p.read_text()).get("schema") == "gpurepro/result/1")
    env = {k: v for k, v in os.environ.items() if k != project.URL_VARIABLE}
    done = invoke.gpurepro("issue", str(doc), env={**env, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    assert f"git clone {ADDRESS} gpurepro\ncd gpurepro\n" in done.stdout
    assert "no repository URL" not in done.stdout + done.stderr


def test_the_install_hint_outside_a_checkout_names_the_repository(tmp_path):
    """What a user can install: the repository by its address (pip's direct reference), not a
    package of the name on PyPI; inside a checkout, the checkout."""
    assert project.install_command(tmp_path) == \
        f"pip install 'gpurepro[analysis] @ git+{ADDRESS}'"
    assert project.install_command(ROOT) == "pip install '.[analysis]'"
    assert project.install_requirement(None) == f"gpurepro @ git+{ADDRESS}"
