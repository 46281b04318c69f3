"""`gpurepro issue`: the body of a GitHub comment from a result document, under GitHub's
65,536-character limit, with the exact command that reruns the experiment."""

from __future__ import annotations

import copy
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from gpurepro.record.result import with_checkout_facts
from gpurepro.report.comment import LIMIT, issue_body, rerun_arguments, session_for
from gpurepro.report.compare import stopping_numbers
from tests import invoke, pace

ROOT = Path(__file__).resolve().parents[2]
TILE = ROOT / "results" / "tile_unload_race"
UNTIL = TILE / "20261130T033104Z_NVIDIA-H200_redacted.json"
OLD = TILE / "20261129T235221Z_NVIDIA-H200_redacted.json"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return invoke.gpurepro(*args)


def _results() -> list[Path]:
    return sorted(p for p in (ROOT / "results").rglob("*.json")
                  if not p.name.endswith(".pyperf.json")
                  and json.loads(p.read_text()).get("schema", "").startswith("gpurepro/result"))


def _largest() -> Path:
    return max(_results(), key=lambda p: (p.stat().st_size, p.name))


def _balanced(body: str) -> None:
    assert body.count("<details>") == body.count("</details>")
    fences = sum(1 for line in body.splitlines() if line.lstrip().startswith("```"))
    assert fences % 2 == 0


def test_largest_committed_document(tmp_path):
    path = _largest()
    doc = json.loads(path.read_text())
    out = tmp_path / "comment.md"
    done = _cli("issue", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    body = out.read_text()
    assert len(body) <= LIMIT
    assert "<details>" in body
    _balanced(body)
    command = f"nox -s {session_for(doc['case']['name'])} -- "
    assert command in body
    assert f"--seed {doc['plan']['seed']}" in body
    # Printed without --out: the same body.
    assert _cli("issue", str(path)).stdout == body


def test_tile_comment_has_what_a_maintainer_needs():
    doc = json.loads(UNTIL.read_text())
    body = issue_body(doc, UNTIL)
    head = body.split("<details>")[0]
    assert head.startswith("## gpurepro: `tile_unload_race` — reproduced\n")
    assert doc["verdict"]["owner"].split(":")[0] in head
    assert f"(rests on {len(doc['verdict']['owner_because'])} decided claims, below)" in head
    assert doc["crash_sites"][0]["signature"] in head
    # The upstream report is the issue this comment goes to: no link back to itself.
    assert "https://github.com/NVIDIA/cuda-tile/issues/23" not in body
    # The shortest rerun in the head, the full steps in a fold.
    assert ("nox -s tile_unload_race -- --arch sm_90 --arms " in head
            and "--seed 3 --duration 5 --timeout 90 --jobs 1 --until-decided "
                "--max-trials 10 --look-every 5 --alpha 0.05 --redact\n" in head)
    folds = body[len(head):]
    for claim in doc["verdict"]["owner_because"]:
        assert f"`{claim}` (supported" in folds
    assert "NVIDIA H200 × 1, compute capability 9.0; driver 580.159.04" in folds
    assert " cuda-tile==1.5.0 " in folds and " nvidia-cuda-tileiras==13.3.36" in folds
    assert "| `baseline` | 9 / 10 | 73.2 [33.5, 139]" in folds
    assert 'nox -s tile_unload_race -- "${ARGS[@]}"' in folds
    assert f"`{UNTIL.name}`" in folds and f"`{UNTIL.with_suffix('.png').name}`" in folds
    # The rest is folded away.
    decided = sum(1 for c in doc["claims"] if c["decision"] != "not_decided")
    for summary in (f"Claims ({decided} of {len(doc['claims'])} claims decided)",
                    f"Not decided ({len(doc['claims']) - decided})", "Hypotheses (",
                    "Full environment, toolchain and artifacts"):
        assert f"<details><summary>{summary}" in body
    _balanced(body)


def test_rerun_command_parses_as_the_case_command(root):
    """The command's arguments pass the same checks a run makes before anything is built."""
    from gpurepro.case import load_case
    from gpurepro.cli.args import check_arguments
    from gpurepro.cli.parser import parser

    for path in _results():
        doc = json.loads(path.read_text())
        args = rerun_arguments(doc)
        parsed = parser().parse_args(["case", doc["case"]["name"], *args])
        case = load_case(doc["case"]["name"], root)
        checked = check_arguments(case, parsed, root, gpu_info={"gpus": []})
        assert checked.target == doc["device"]["target"]
        # The arms the command plans: those it names, or none named, every arm (session.new_plan).
        # Where the manifest changed since the run (case.manifest_changed), today's manifest is
        # not the one the block checks out: the slow tier's test_rerun_literal plans it there.
        if not doc["case"].get("manifest_changed"):
            assert set(checked.arms or case.resolved_arms()) == set(doc["plan"]["arms"])
        assert parsed.seed == doc["plan"]["seed"]
        assert parsed.jobs == doc["plan"]["options"]["jobs"]
        stopping = doc["plan"]["options"].get("stopping") or {}
        decisive = stopping.get("design") == "decisive"
        assert (parsed.decisive, parsed.until_decided) == (decisive, bool(stopping) and not decisive)
        if stopping:
            assert checked.design.max_trials == stopping_numbers(stopping)[0]
            assert checked.design.alpha == stopping["alpha"]


def test_document_from_before_claims():
    doc = json.loads(OLD.read_text())
    del doc["claims"]  # as recorded before the harness decided claims
    body = issue_body(doc, OLD)
    assert "recorded before the harness decided claims" in body
    assert "--trials 5" in body and "--until-decided)" not in body and "--until-decided " not in body.split("ARGS=(")[1].split("\n")[0]


def test_sessions():
    assert session_for("tile_unload_race") == "tile_unload_race"
    assert session_for("tcgen05_alloc_order") == "tcgen05_ablation"  # in every noxfile
    assert session_for("my_case") == "my_case"


def test_an_oversized_document_is_cut_to_fit():
    doc = copy.deepcopy(json.loads(UNTIL.read_text()))
    doc["verdict"]["not_decided"] = [f"Sentence {i}: " + "x" * 300 for i in range(400)]
    doc["analyses"]["big"] = {"markdown": "```\n" + "\n".join("y" * 100 for _ in range(2000)) + "\n```"}
    body = issue_body(doc, UNTIL)
    assert len(body) <= LIMIT
    assert "(truncated)" in body and "Truncated at" in body
    assert "Left out for length:" in body
    assert "nox -s tile_unload_race -- " in body  # the head is never cut
    _balanced(body)


@pytest.mark.parametrize("limit", [30_000, 20_000])
def test_smaller_limits_hold(limit):
    body = issue_body(json.loads(UNTIL.read_text()), UNTIL, limit=limit)
    assert len(body) <= limit
    _balanced(body)


def test_not_a_case_result_is_one_line_and_exit_2(tmp_path):
    bench = sorted((ROOT / "results" / "bench").glob("*.json"))[0]
    done = _cli("issue", str(bench))
    assert done.returncode == 2 and "benchmark document" in done.stderr
    other = tmp_path / "x.json"
    other.write_text(json.dumps({"hello": 1}))
    done = _cli("issue", str(other))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_quoting_is_shell_safe():
    doc = json.loads(UNTIL.read_text())
    args = rerun_arguments(doc)
    assert shlex.split(" ".join(shlex.quote(a) for a in args)) == args


def test_issue_with_the_toolchain_matrix(tmp_path):
    matrices = sorted(TILE.glob("matrix_*.json"))
    if not matrices:
        pytest.skip("no committed toolchain matrix of tile_unload_race")
    # The largest tile result: the matrix block must fit beside its own blocks.
    path = max((p for p in _results() if p.parent == TILE), key=lambda p: p.stat().st_size)
    done = _cli("issue", str(path), "--matrix", str(matrices[-1]))
    assert done.returncode == 0, done.stderr
    body = done.stdout
    assert len(body) <= LIMIT and f"Toolchain matrix ({matrices[-1].name}" in body
    _balanced(body)
    # A matrix of another case, or a file that is not a matrix, is one line and exit 2 (beside
    # the smallest tile result: each issue validates its document first).
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(matrices[-1].read_text()), "case": {"name": "x"}}))
    small = min((p for p in _results() if p.parent == TILE), key=lambda p: p.stat().st_size)
    for bad in (other, UNTIL):
        done = _cli("issue", str(small), "--matrix", str(bad))
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


NEWEST = TILE / "20261201T102114Z_NVIDIA-H200_redacted.json"


def _visible(body: str) -> str:
    return body.split("<details>")[0]


def test_the_visible_part_holds_what_a_maintainer_acts_on():
    """Before any fold: verdict, as filed, owner, the workaround a decided claim supports,
    the crash, what was not run (the reporter's GPU, target and driver, what is undecided);
    in the first folds the same in full, the hypotheses and the arms. The document is read as
    `issue` reads it (one recorded before it kept its case's targets gets this checkout's)."""
    doc = with_checkout_facts(json.loads(NEWEST.read_text()), ROOT)
    full = issue_body(doc, NEWEST, url="")
    head = _visible(full)
    assert head.startswith("## gpurepro: `tile_unload_race` — reproduced")
    assert "> On NVIDIA H200 (compute capability 9.0), baseline" in head
    # This run had no as-filed arm: the head says so rather than yes or no.
    assert "- **Reproduced as filed:** the case has no arm of the reporter's program" in head
    assert "- **Owner:** none named" in head and "needs control-cuda decided" in head
    assert ("- **Workaround:** `lock-unload-launch`: one mutex around cuModuleUnload and around "
            "cuModuleGetFunction + cuLaunchKernel" in head)
    assert "(claim `lock-unload-launch` supported, p < 1e-12)" in head
    assert ("- **Not run:** the reporter's NVIDIA GeForce RTX 5090 (sm_120), driver 595.84"
            in head and "`nox -s tile_unload_race -- --arch sm_120` builds the as-filed" in head)
    assert "claim(s) left undecided (below)" in head
    folds = full[len(head):]
    assert "the racing pair is cuModuleUnload in one thread against cuModuleGetFunction" in folds
    assert "this run had NVIDIA H200 (sm_90), driver 580.159.04" in folds
    assert "- **Not decided:** `lock-launch`" in folds
    # The unit by what it counts; numbers plainly; no device identity or other noise.
    assert "failures per 10^6 load/launch/unload iterations (95% CI)" in folds
    assert '"cycles" counts load/launch/unload iterations' in folds
    assert "261,000 cycles in all" in head and "e+0" not in full
    for noise in (doc["environment"]["gpu"]["gpus"][0]["uuid"],
                  doc["environment"]["gpu"]["gpus"][0]["pci_bus_id"], "NCCL_VERSION",
                  "Upstream report"):
        assert noise not in full
    assert "| Python (ran the trials) | 3.12.3 |" in full
    assert "| python (built the artifacts) |" in full
    # The arm list once, in the order the run was given its arms (the shuffle's input).
    assert head.count("baseline,lock-launch,lock-unload-launch,lock-unload-load,always-unload,"
                      "library-api") == 1


def _shell_blocks(section: str) -> list[str]:
    blocks, inside = [], None
    for line in section.splitlines():
        if line.startswith("```sh"):
            inside = []
        elif line.startswith("```") and inside is not None:
            blocks.append("\n".join(inside))
            inside = None
        elif inside is not None:
            inside.append(line)
    return blocks


@pytest.mark.parametrize("url", ["https://example.org/gpurepro.git", None])
def test_the_rerun_steps_run_as_written(tmp_path, url, root):
    """Each shell block, run by bash with git, nox and python standing in as recorders, clones
    the URL given (none when only a placeholder is known), checks out the document's commit and
    passes exactly the run's arguments, which the case command accepts."""
    from gpurepro.case import load_case
    from gpurepro.cli.args import check_arguments
    from gpurepro.cli.parser import parser

    doc = json.loads(NEWEST.read_text())
    body = issue_body(doc, NEWEST, url=url or "")
    # The full steps, in their fold; the head's shortest rerun is the same nox command.
    section = body[body.index("<summary>Rerun it"):]
    section = section[:section.index("</details>")]
    nox_block, plain_block = _shell_blocks(section)
    log = tmp_path / "calls"
    stubs = "".join(f'{name}() {{ printf "{name}" >> {log}; printf " %s" "$@" >> {log}; echo >> {log}; }}\n'
                    for name in ("git", "nox", "python", "cd"))
    # In a folder of the test's own: `cd` is a stub, so the block's copy of the document to
    # ../ lands beside that folder, not beside the checkout.
    where = tmp_path / "gpurepro"
    where.mkdir()
    done = pace.run(["bash", "-c", stubs + nox_block + "\n" + plain_block], capture_output=True,
                    text=True, cwd=where)
    assert done.returncode == 0, done.stderr
    calls = [line.split() for line in log.read_text().splitlines()]
    commit = doc["environment"]["repository"]["commit"]
    # The committed document, copied out of the clone's default branch before the checkout:
    # the rerun checks itself against it (GPUREPRO_RERUN_OF on the nox line).
    committed = NEWEST.relative_to(ROOT).as_posix()
    expected = [["git", "show", f"origin/HEAD:{committed}"], ["git", "checkout", commit]]
    if url:
        expected = [["git", "clone", url, "gpurepro"], ["cd", "gpurepro"], *expected]
    args = rerun_arguments(doc)
    assert calls[:len(expected)] == expected
    assert calls[len(expected)] == ["nox", "-s", "tile_unload_race", "--", *args]
    assert f"GPUREPRO_RERUN_OF=../{NEWEST.name} nox -s tile_unload_race" in nox_block
    install, case = calls[len(expected) + 1:]
    assert install[:5] == ["python", "-m", "pip", "install", "-e"] and install[5] == ".[analysis]"
    assert sorted(install[6:]) == sorted(f"{k}=={v}" for k, v in doc["toolchain"]["resolved"].items())
    assert case == ["python", "-m", "gpurepro", "case", "tile_unload_race", *args]
    assert f"GPUREPRO_RERUN_OF=../{NEWEST.name} python -m gpurepro case" in plain_block
    parsed = parser().parse_args(["case", "tile_unload_race", *args])
    checked = check_arguments(load_case("tile_unload_race", root), parsed, root, gpu_info={"gpus": []})
    assert checked.target == "sm_90" and parsed.seed == doc["plan"]["seed"]


def test_the_repository_url_is_the_projects_unless_replaced_and_never_a_placeholder(monkeypatch):
    from gpurepro import project

    monkeypatch.delenv(project.URL_VARIABLE, raising=False)
    assert project.repository_url() == "https://github.com/gpurepro/gpurepro"  # pyproject.toml's
    monkeypatch.setenv(project.URL_VARIABLE, "https://git.example.org/gpu/gpurepro.git")
    assert project.repository_url() == "https://git.example.org/gpu/gpurepro.git"
    body = issue_body(json.loads(NEWEST.read_text()), NEWEST)
    assert "git clone https://git.example.org/gpu/gpurepro.git gpurepro" in body
    monkeypatch.setenv(project.URL_VARIABLE, "https://gpurepro.invalid/x.git")
    assert project.repository_url() is None


def test_no_document_string_reaches_the_comment_unescaped(monkeypatch):
    """Every string of the document goes through the reports' one escaping function
    (report.tables.escape, which code, link and address call) or into a fence no line can
    close (report.tables.fence) on its way into the comment: with both replaced by ones that
    mark what they were given, no marked document string appears outside a mark."""
    import gpurepro.report.comment as comment
    import gpurepro.report.markdown as markdown
    import gpurepro.report.rerun as rerun
    import gpurepro.report.tables as tables

    def mark(value: object, context: str = "text") -> str:
        return f"⟦{str(value).replace('|', '¦')}⟧"

    def marked_fence(body: str, info: str = "") -> list[str]:
        return ["```" + info, mark(body), "```"]

    for module in (tables, comment, markdown):
        monkeypatch.setattr(module, "escape", mark)
    for module in (tables, comment, markdown, rerun):
        monkeypatch.setattr(module, "fence", marked_fence, raising=False)
    doc = copy.deepcopy(json.loads(NEWEST.read_text()))
    verdict = doc["verdict"]
    verdict["sentences"][0] = "ZZSENT0 first"
    verdict["next"] = ["Owner not established: ZZOWNERWHY.",
                       "A workaround users can adopt (claim lock-unload-launch): ZZWORK. More."]
    verdict["hypotheses"] = ["Hypothesis (ZZQUAL): ZZHYPO: evidence."]
    doc["case"]["reported"] = {"gpu": "ZZGPU", "target": "ZZTARGET", "driver": "ZZDRIVER",
                               "toolchain": "ZZTOOL"}
    doc["case"]["exposure"]["label"] = "ZZLABEL"
    doc["environment"]["gpu"]["gpus"][0]["name"] = "ZZGPUNAME"
    doc["environment"]["gpu"]["driver_version"] = "ZZDRV"
    doc["environment"]["host"]["python"] = "ZZPY"
    doc["crash_sites"][0]["signature"] = "ZZSIG"
    body = issue_body(doc, NEWEST, url="")
    outside = re.sub(r"⟦[^⟧]*⟧", "", body)
    for sentinel in ("ZZSENT0", "ZZOWNERWHY", "ZZWORK", "ZZQUAL", "ZZHYPO", "ZZGPU", "ZZTARGET",
                     "ZZDRIVER", "ZZTOOL", "ZZLABEL", "ZZGPUNAME", "ZZDRV", "ZZPY", "ZZSIG"):
        assert sentinel in body, sentinel
        assert sentinel not in outside, sentinel
