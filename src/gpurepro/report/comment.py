"""A result document -> the body of a GitHub issue comment.

What a maintainer reads first, in this order: the verdict headline and its owner with the claims
it rests on, one environment line, a short arms table, the crash signature, the exact command
that reruns the experiment, the upstream report, and the attachments to add (the JSON document
and the plot); everything else (the verdict in full, claims, not decided, hypotheses, crash
sites, the full environment, analyses) folds into ``<details>`` blocks. GitHub refuses a comment
over 65,536 characters: the details are cut to fit, with a note, never the head.

Everything comes from the document alone, so a comment can be made from an attached JSON.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..cluster import merge
from ..errors import IssueError
from .compare import stopping_numbers
from .markdown import claims_table, environment_rows, threads_table
from .numbers import fmt, fmt_ci, fmt_p, per_label
from .tables import table
from .wrong import head_lines as wrong_head
from .wrong import per_trial

LIMIT = 65_536  # GitHub's limit on an issue comment, in characters
ARMS_IN_HEAD = 40  # more arms than this go to a <details> block

def session_for(case: str) -> str:
    """Every case has a nox session of its own name (noxfile.py)."""
    return case


# ---------------------------------------------------------------- the head


def _pins(doc: Mapping[str, Any]) -> list[str]:
    return [f"{name}=={version}" for name, version in sorted((doc["toolchain"].get("resolved") or {}).items())]


def environment_line(doc: Mapping[str, Any]) -> str:
    gpu = doc["environment"]["gpu"]
    gpus = gpu.get("gpus") or []
    if gpus:
        names = ", ".join(sorted({str(g.get("name")) for g in gpus}))
        ccs = ", ".join(sorted({str(g.get("compute_capability")) for g in gpus}))
        where = f"{names} × {len(gpus)}, compute capability {ccs}"
    else:
        where = f"no GPU ({gpu.get('reason') or 'none found'})"
    if doc.get("cluster"):
        c = doc["cluster"]
        where = (f"{len(c.get('nodes') or {})} Slurm node(s) in partition(s) "
                 f"{', '.join(c['partitions'])}: {where}")
    driver = gpu.get("driver_version") or "–"
    api = f" (CUDA driver API {gpu['cuda_driver_api']})" if gpu.get("cuda_driver_api") else ""
    pins = ", ".join(f"`{p}`" for p in _pins(doc)) or "none"
    return (f"**Environment:** {where}; driver {driver}{api}; target "
            f"`{doc['device'].get('target')}`; toolchain pins {pins}.")


def _owner_lines(doc: Mapping[str, Any]) -> list[str]:
    verdict = doc["verdict"]
    owner = verdict.get("owner")
    if not owner:
        return ["**Owner:** none named: no decided claim points to one."]
    because = verdict.get("owner_because")
    if because is None or "claims" not in doc:
        return [f"**Owner:** {owner}.",
                "(This document was recorded before the harness decided claims: the owner rests "
                "on the measurements above, not on recorded decisions.)"]
    decisions = {c["name"]: c for c in doc.get("claims") or []}
    rest = ", ".join(f"`{name}` ({decisions[name]['decision'].replace('_', ' ')}, "
                     f"p {fmt_p(decisions[name].get('p_value'))})" if name in decisions else f"`{name}`"
                     for name in because)
    return [f"**Owner:** {owner}.", f"It rests on the decided claims {rest}." if rest else
            "It rests on no decided claim."]


def _rate_cell(s: Mapping[str, Any], coarse: int, trials: bool = False) -> str:
    if s["n_valid"] == 0:
        return "–"
    if trials:  # a case that checks its output: the share of failing trials
        prop = s["proportion"]
        return f"{fmt(prop['estimate'])} {fmt_ci(prop['ci95'])}"
    if s["exposure"]["total"] <= 0 or coarse:
        prop = s["proportion"]
        why = "coarse counter" if coarse else "no exposure"
        return f"– ({why}; {fmt(prop['estimate'])} of trials {fmt_ci(prop['ci95'])})"
    rate = s["exposure"]["rate"]
    return f"{fmt(rate['estimate'])} {fmt_ci(rate['ci95'])}"


def _coarse(doc: Mapping[str, Any]) -> dict[str, int]:
    from ..analyze.stats import coarse_counter

    failures = doc["case"]["failure_outcomes"]
    out: dict[str, int] = {}
    for arm in doc["summary"]:
        failed = [t for t in doc.get("trials") or [] if t["arm"] == arm and t["outcome"] in failures]
        out[arm] = coarse_counter(failed)
    return out


def arms_table(doc: Mapping[str, Any], limit: int | None = ARMS_IN_HEAD) -> tuple[str, int]:
    """The short arms table (at most ``limit`` arms) and how many arms it left out."""
    case = doc["case"]
    unit, per = case["exposure"]["unit"], case["exposure"]["per"]
    summary = doc["summary"]
    if not any(s["n_valid"] for s in summary.values()):
        outcomes: Counter[str] = Counter()
        for s in summary.values():
            outcomes.update(s["outcomes"])
        what = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
        return (f"No arm ran a valid trial ({len(summary)} arms; {what}): nothing to measure "
                f"here.\n", 0)
    coarse = _coarse(doc)
    comparisons = doc.get("comparisons") or {}
    rows = []
    arms = list(summary)
    shown = arms if limit is None else arms[:limit]
    for arm in shown:
        s = summary[arm]
        rr = (comparisons.get(arm) or {}).get("rate_ratio") or {}
        meaningful = (not coarse[arm] and not coarse.get(case["baseline"]) and not per_trial(doc)
                      and rr.get("p_value") is not None)
        ratio = ([f"{fmt(rr.get('estimate'))} {fmt_ci(rr.get('ci95'))}", fmt_p(rr.get('p_value'))]
                 if meaningful else (["(baseline)", "–"] if arm == case["baseline"] else ["–", "–"]))
        valid = f"{s['failures']} / {s['n_valid']}" if s["n_valid"] else (
            "no valid trial (" + ", ".join(f"{k} {v}" for k, v in s["outcomes"].items()) + ")")
        rows.append([f"`{arm}`", valid, _rate_cell(s, coarse[arm], per_trial(doc)), *ratio])
    rate_head = ("share of failing trials (95% CI)" if per_trial(doc)
                 else f"failures per {per_label(per)} {unit} (95% CI)")
    lines = table(["arm", "failed / valid", rate_head,
                   f"rate ratio vs `{case['baseline']}` (95% CI)", "p"], rows)
    lines.append("")
    return "\n".join(lines), len(arms) - len(shown)


def crash_signature(doc: Mapping[str, Any]) -> list[str]:
    sites = doc.get("crash_sites") or []
    if not sites:
        errors: Counter[str] = Counter()
        for t in doc.get("trials") or []:
            if t.get("outcome") == "cuda_error":
                errors[f"{t.get('detail')}" + (f" at {t['call']}" if t.get("call") else "")] += 1
        if errors:
            top, n = errors.most_common(1)[0]
            return [f"No crash recorded; the most frequent CUDA error: `{top}` ({n} trials)."]
        return ["No crash recorded."]
    top = sites[0]
    crashes = sum(b["count"] for b in sites)
    fault = (top.get("fault_in") or {}).get("module")
    arms = ", ".join(f"`{a}` {n}" for a, n in sorted(top["arms"].items()))
    out = ["```", top["signature"], "```",
           f"{top['count']} of {crashes} crashes ({arms})"
           + (f"; signal code {top['code_name']}" if top.get("code_name") else "")
           + (f"; faulting address in {fault}" if fault else "")
           + (f"; {len(sites) - 1} other site(s) in the details below" if len(sites) > 1 else "")
           + "."]
    return out


def _arg(x: float) -> str:
    """A number as a command-line value: as short as it is exact (5, 0.2, 1e+06)."""
    return f"{x:g}"


def rerun_arguments(doc: Mapping[str, Any]) -> list[str]:
    """The `gpurepro case` arguments that repeat this run's plan and options."""
    plan = doc["plan"]
    opts = plan.get("options") or {}
    budget = opts.get("budget") or {}
    # A cluster run reruns on its partitions, each with its own target.
    where = merge.rerun_arguments(doc) if doc.get("cluster") else ["--arch", str(doc["device"]["target"])]
    args = [*where, "--arms", ",".join(plan["arms"])]
    stopping = opts.get("stopping") or {}
    if not stopping:
        per_arm = set((plan.get("trials_per_arm") or {}).values())
        if per_arm:
            args += ["--trials", str(max(per_arm))]
    args += ["--seed", str(plan["seed"])]
    if budget.get("duration_s") is not None:
        args += ["--duration", _arg(budget["duration_s"])]
    if budget.get("timeout_s") is not None:
        args += ["--timeout", _arg(budget["timeout_s"])]
    exposure = budget.get("max_exposure")
    if exposure is not None:
        args += ["--max-exposure", str(int(exposure))]
    args += ["--jobs", str(opts.get("jobs", 1))]
    if opts.get("gpus"):
        args += ["--gpus", ",".join(map(str, opts["gpus"]))]
    if stopping:
        max_trials, step = stopping_numbers(stopping)
        args.append("--until-decided")
        if max_trials is not None:
            args += ["--max-trials", str(max_trials)]
        if step is not None:
            args += ["--look-every", str(step)]
        if stopping.get("alpha") is not None:
            args += ["--alpha", _arg(stopping["alpha"])]
    if opts.get("redact"):
        args.append("--redact")
    return args


def rerun_section(doc: Mapping[str, Any]) -> list[str]:
    case = doc["case"]["name"]
    args = rerun_arguments(doc)
    quoted = " ".join(shlex.quote(a) for a in args)
    repo = doc["environment"].get("repository") or {}
    commit = repo.get("commit")
    pins = _pins(doc)
    out = ["### Rerun it\n", "```sh"]
    if commit:
        out.append(f"# gpurepro at commit {commit}"
                   + (" (the recording checkout had uncommitted changes)" if repo.get("dirty") else ""))
    out += [f"nox -s {session_for(case)} -- {quoted}", "```"]
    if pins:
        out.append(f"The session installs the case's pinned toolchain for "
                   f"`{doc['device']['target']}`; this run resolved "
                   + ", ".join(f"`{p}`" for p in pins) + ". The same without nox:")
        out += ["```sh",
                "python -m pip install -e . " + " ".join(shlex.quote(p) for p in pins),
                f"python -m gpurepro case {case} {quoted}", "```"]
    out.append("")
    return out


def has_plot(doc: Mapping[str, Any]) -> bool:
    """Whether `report` draws a plot for this document (the same condition as report.plot)."""
    curves = [a for a, s in doc["summary"].items() if (s.get("time_to_failure") or {}).get("exposure")]
    return bool(curves) and any(s["failures"] for s in doc["summary"].values())


def head(doc: Mapping[str, Any], path: Path) -> str:
    case, verdict = doc["case"], doc["verdict"]
    sentences = verdict.get("sentences") or []
    out = [f"## gpurepro: `{case['name']}` — {verdict['status'].replace('_', ' ')}\n"]
    if sentences:
        out.append(f"> {sentences[0]}\n")
    out += _owner_lines(doc) + [""]
    out += [environment_line(doc), ""]
    url = case.get("report_url")
    if url:
        link = url if url.startswith(("http://", "https://")) else f"`{url}` (the filed report)"
        out += [f"**Upstream report:** {link}", ""]
    out.append("### Arms\n")
    opts = doc["plan"].get("options") or {}
    out.append(f"{len(doc.get('trials') or [])} trials, shuffled (seed {doc['plan']['seed']}), "
               f"{opts.get('jobs', 1)} at a time{' per array task and GPU' if doc.get('cluster') else ''}; "
               + ("stopped arm by arm once their claims were decided."
                  if opts.get("stopping") else "a fixed number per arm.") + "\n")
    table, left_out = arms_table(doc)
    out.append(table)
    if left_out:
        out.append(f"({left_out} more arm(s) in the details below.)\n")
    out += wrong_head(doc) or ["### Crash signature\n"] + crash_signature(doc) + [""]
    out += rerun_section(doc)
    stem = path.with_suffix("")
    attach = [f"`{path.name}` (the result document; `python -m gpurepro report {path.name}` "
              f"regenerates the full report from it)"]
    if (path.parent / f"{stem.name}.forest.png").is_file():
        attach.append(f"`{stem.name}.forest.png` (failure rate per arm against the baseline, "
                      f"with each claim's decision)")
    if (path.parent / f"{stem.name}.forest-per-gpu.png").is_file():
        attach.append(f"`{stem.name}.forest-per-gpu.png` (the same, one panel per GPU)")
    if has_plot(doc):
        attach.append(f"`{stem.name}.png` (Kaplan–Meier survival per arm)")
    out += ["**Attachments:** " + " and ".join(attach) + ".", ""]
    return "\n".join(out)


# ---------------------------------------------------------------- the details


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {s}" for s in items)


def detail_blocks(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(summary, body) per <details> block, most useful first."""
    verdict = doc["verdict"]
    blocks: list[tuple[str, str]] = []
    if verdict.get("sentences"):
        blocks.append((f"Verdict in full ({len(verdict['sentences'])} sentences)",
                       _bullets(verdict["sentences"])))
    if doc.get("claims"):
        decided = sum(1 for c in doc["claims"] if c["decision"] != "not_decided")
        blocks.append((f"Claims ({decided} of {len(doc['claims'])} decided)", claims_table(doc)))
    elif "claims" not in doc:
        blocks.append(("Claims", "This document was recorded before the harness decided claims."))
    if verdict.get("not_decided"):
        blocks.append((f"Not decided ({len(verdict['not_decided'])})", _bullets(verdict["not_decided"])))
    if verdict.get("hypotheses"):
        blocks.append((f"Hypotheses ({len(verdict['hypotheses'])}; no arm of this run isolates them)",
                       _bullets(verdict["hypotheses"])))
    if verdict.get("next"):
        blocks.append(("Next steps", _bullets(verdict["next"])))
    every_arm, left_out = arms_table(doc, limit=None)
    if left_out == 0 and len(doc["summary"]) > ARMS_IN_HEAD:
        blocks.append((f"All {len(doc['summary'])} arms", every_arm))
    sites = doc.get("crash_sites") or []
    if len(sites) > 1:
        rows = table(["count", "signature", "fault address in", "arms"],
                     [[b['count'], f"`{b['signature']}`", (b.get('fault_in') or {}).get('module', '–'),
                       ", ".join(f"{a} {n}" for a, n in sorted(b["arms"].items()))] for b in sites])
        blocks.append((f"All crash sites ({len(sites)})", "\n".join(rows)))
    threads = threads_table(doc["trials"], doc["case"].get("failure_outcomes") or ("crashed",))
    if threads:
        blocks.append(("Threads at the crash (the driver call each worker was in, and whether it "
                       "was read at the fault)", "\n".join(threads)))
    env = table(["", ""], environment_rows(doc))
    env += ["", *table(["variable", "value"],
                       [[f"`{k}`", f"`{v}`"] for k, v in
                        sorted((doc["environment"].get("environment") or {}).items())])]
    env += ["", *table(["artifact", "sha256"],
                       [[f"`{name}`", f"`{a['sha256']}`"]
                        for name, a in sorted(doc["artifacts"].items())])]
    blocks.append(("Full environment, toolchain and artifacts", "\n".join(env)))
    for name, analysis in (doc.get("analyses") or {}).items():
        if isinstance(analysis, Mapping) and analysis.get("markdown"):
            blocks.append((f"Analysis: {name}", str(analysis["markdown"])))
    return blocks


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body.rstrip()}\n\n</details>\n"


def _cut(body: str, room: int) -> str:
    """The body cut at a line boundary to at most ``room`` characters, fences closed."""
    cut = body[: max(room, 0)]
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    if sum(1 for line in cut.splitlines() if line.lstrip().startswith("```")) % 2:
        cut += "\n```"
    return cut


def issue_body(doc: Mapping[str, Any], path: Path, limit: int = LIMIT,
               extra_blocks: Sequence[tuple[str, str]] = ()) -> str:
    if str(doc.get("schema", "")).startswith("gpurepro/bench"):
        raise IssueError(f"{path} is a benchmark document; `issue` takes a case result")
    for key in ("case", "verdict", "summary", "plan", "environment", "toolchain", "device"):
        if not isinstance(doc.get(key), Mapping):
            raise IssueError(f"{path} is not a gpurepro result document (no {key!r})")
    text = head(doc, path)
    footer = f"\n_Made by `python -m gpurepro issue {path.name}` (gpurepro {doc.get('gpurepro_version')})._\n"
    blocks = detail_blocks(doc)
    # Extra blocks (a toolchain matrix) go before the full environment, after the run's own.
    at = next((i for i, (summary, _) in enumerate(blocks) if summary.startswith("Full environment")),
              len(blocks))
    blocks[at:at] = list(extra_blocks)
    left: list[str] = []
    for i, (summary, body) in enumerate(blocks):
        block = _details(summary, body)
        room = limit - len(text) - len(footer)
        if len(block) <= room:
            text += "\n" + block
            continue
        note_room = 400  # the truncation note and the list of blocks left out
        fit = room - len(_details(summary, "")) - note_room
        if fit > 200:
            cut = _cut(body, fit)
            text += "\n" + _details(summary + " (truncated)", cut + (
                f"\n\n_Truncated at {len(cut):,} of {len(body):,} characters to keep this comment "
                f"under GitHub's {limit:,}-character limit; the attached JSON holds all of it._"))
            left = [s for s, _ in blocks[i + 1:]]
        else:
            left = [s for s, _ in blocks[i:]]
        break
    if left:
        text += (f"\n_Left out for length: {'; '.join(left)}. The attached JSON holds them "
                 f"(`python -m gpurepro report` renders them)._\n")
    text += footer
    if len(text) > limit:  # a head too long on its own (it never is for committed documents)
        note = "\n\n_Cut at GitHub's comment limit; the attached JSON holds the rest._\n"
        text = _cut(text, limit - len(note) - 4) + note
    return text
