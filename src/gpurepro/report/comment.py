"""A result document -> the body of a GitHub issue comment.

What a maintainer acts on comes first, before any fold: the verdict headline, the owner with the
claims it rests on, the workaround where a decided claim supports one, the hypotheses (the
racing pair) as far as the run bounds them, the toolchain matrix in one line (``--matrix``),
what was not run (the reporter's GPU, target and driver, where this run had others) and the
claims not decided; then one environment line, a short arms table, the crash signature, the
exact rerun (clone, checkout, the nox command with its seed, the same without nox:
gpurepro.report.rerun) and the attachments. Everything else (the verdict in full, claims,
hypotheses in full, crash sites, threads, the environment, analyses) folds into ``<details>``
blocks, and what only restates the run (the GPU's UUID and PCI bus id, NCCL variables of a
one-GPU run, the upstream link back to the issue itself) is left out. Numbers are written
plainly (131,000, not 1.31e+05: numbers.plain), and the exposure unit by what it counts where
the case says (``Exposure.label``). GitHub refuses a comment over 65,536 characters: the details
are cut to fit, with a note, never the head.

Every string that comes from the document goes through ``tables.escape``, the one escaping
function of the reports, in the context it goes into (text, the verdict's prose, a code span,
the HTML of a ``<summary>``, an analysis's Markdown), whether in a table, a bullet or a
sentence; the crash signature is a fence no line of it can close, and the rerun block's lines
are all the harness's, each document word shell-quoted on one line. Everything comes from the
document alone, so a comment can be made from an attached JSON; only the repository's URL is
the project's (gpurepro.report.rerun).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import IssueError
from . import families
from .markdown import (
    claims_table,
    environment_rows,
    python_frames_table,
    resumes,
    runtime_rows,
    threads_table,
)
from .numbers import fmt_ci, fmt_p, per_label, plain, plain_text
from .rerun import repository_url, rerun_arguments, rerun_section, session_for
from .tables import code, escape, fence, table
from .wrong import head_lines as wrong_head
from .wrong import per_trial

__all__ = ["LIMIT", "issue_body", "rerun_arguments", "session_for"]

LIMIT = 65_536  # GitHub's limit on an issue comment, in characters
ARMS_IN_HEAD = 40  # more arms than this go to a <details> block

# ---------------------------------------------------------------- the head


def _code(value: object) -> str:
    """A document string as one code span (tables.escape's "code")."""
    return code(value)


def _text(value: object) -> str:
    """A document string of the verdict's prose (its code spans kept), its large numbers
    written plainly, escaped (tables.escape's "prose")."""
    return escape(plain_text(str(value)), "prose")


def exposure_unit(doc: Mapping[str, Any]) -> str:
    """The exposure unit by what it counts ("load/launch/unload iterations") where the case
    says, else its name ("cycles")."""
    exposure = doc["case"]["exposure"]
    return str(exposure.get("label") or exposure["unit"])


def unit_note(doc: Mapping[str, Any]) -> list[str]:
    """A line saying what the verdict's unit counts, where the case names it in words."""
    exposure = doc["case"]["exposure"]
    label, unit = exposure.get("label"), str(exposure["unit"])
    if not label or label == unit:
        return []
    clock = ", not clock cycles" if "cycle" in unit.lower() else ""
    return [f"_In the sentences quoted here, \"{escape(unit)}\" counts {escape(label)} (the case's "
            f"{_code(exposure['counter'])} counter){clock}._", ""]


def environment_line(doc: Mapping[str, Any]) -> str:
    gpu = doc["environment"]["gpu"]
    gpus = gpu.get("gpus") or []
    if gpus:
        names = ", ".join(sorted({escape(g.get("name")) for g in gpus}))
        ccs = ", ".join(sorted({escape(g.get("compute_capability")) for g in gpus}))
        where = f"{names} × {len(gpus)}, compute capability {ccs}"
    else:
        where = f"no GPU ({escape(gpu.get('reason') or 'none found')})"
    if doc.get("cluster"):
        c = doc["cluster"]
        where = (f"{len(c.get('nodes') or {})} Slurm node(s) in partition(s) "
                 f"{', '.join(escape(p) for p in c['partitions'])}: {where}")
    driver = escape(gpu.get("driver_version") or "–")
    api = f" (CUDA driver API {escape(gpu['cuda_driver_api'])})" if gpu.get("cuda_driver_api") else ""
    host = doc["environment"].get("host") or {}
    python = f"; Python {escape(host['python'])} ran the trials" if host.get("python") else ""
    line = (f"**Environment:** {where}; driver {driver}{api}; target "
            f"{_code(doc['device'].get('target'))}{python}.")
    # The journal's device, as the document names it: what a resume compared the device it
    # found against (run/session.resume_device).
    was = {"name": doc["device"].get("name"), "uuid": doc["device"].get("uuid"),
           "driver_version": gpu.get("driver_version")}
    for r in (r for r in resumes(doc) if r.get("other_device")):
        # Trials that ran elsewhere than the device named above; not its UUID: the comment
        # names no machine (the report's Resumed section does).
        d = r.get("device") or {}
        what = [key.replace("_", " ") for key, value in was.items()
                if value is not None and d.get(key) != value]
        line += (f" Resumed with `--other-device` at {escape(r['at'])}: {len(r['trials'])} trial(s) "
                 f"ran on {escape(d.get('name'))}, driver {escape(d.get('driver_version'))}, "
                 f"whose {escape(', '.join(what) or 'device')} differ(s) from the journal's.")
    return line


def _decisions(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c["name"]: c for c in doc.get("claims") or []}


def _claim_refs(doc: Mapping[str, Any], names: Sequence[str]) -> str:
    decisions = _decisions(doc)
    return ", ".join(f"{_code(name)} ({escape(families.decision_text(decisions[name]))}, "
                     f"p {fmt_p(decisions[name].get('p_value'))})" if name in decisions else _code(name)
                     for name in names)


def owner_bullet(doc: Mapping[str, Any]) -> str:
    verdict = doc["verdict"]
    owner = verdict.get("owner")
    if not owner:
        why = next((s for s in verdict.get("next") or [] if "owner" in str(s).lower()), None)
        return ("**Owner:** none named: no decided claim points to one"
                + (f". {_text(why)}" if why else "."))
    because = verdict.get("owner_because")
    if because is None or "claims" not in doc:
        return (f"**Owner:** {_text(owner)}. (This document was recorded before the harness "
                f"decided claims: the owner rests on the measurements, not on recorded decisions.)")
    rest = _claim_refs(doc, because)
    return (f"**Owner:** {_text(owner)}. "
            + (f"It rests on the decided claims {rest}." if rest else "It rests on no decided claim."))


_CLAIM_IN = re.compile(r"\(claim ([A-Za-z0-9_.-]+)\)")


def workaround_bullet(doc: Mapping[str, Any]) -> str | None:
    """The verdict's workaround, where a decided confirmatory claim supports it: a next step that offers a
    workaround and names its claim, "(claim NAME)", with that claim supported."""
    decisions = _decisions(doc)
    for step in doc["verdict"].get("next") or []:
        text = str(step)
        named = _CLAIM_IN.search(text)
        if "workaround" not in text.lower() or not named:
            continue
        claim = decisions.get(named.group(1))
        if not claim or claim.get("decision") != "supported" or families.is_exploratory(claim):
            continue  # a workaround rests on a confirmatory decision
        what = text[named.end():].lstrip(": ") or text
        first = what[: what.index(". ") + 1] if ". " in what else what  # the rest: Next steps
        return (f"**Workaround:** {_code(claim['arm'])}: {_text(first)} (claim "
                f"{_code(claim['name'])} supported, p {fmt_p(claim.get('p_value'))})")
    return None


_HYPOTHESIS = re.compile(r"^Hypothesis \(([^)]*)\):\s*(.*)$", re.S)


def hypothesis_gist(text: str) -> str:
    """A hypothesis in one clause: its statement up to where the evidence for it begins, with
    the qualifier it carries (how far the run bounds it)."""
    m = _HYPOTHESIS.match(text.strip())
    qualifier, rest = (m.group(1), m.group(2)) if m else (None, text.strip())
    ends = [i for i in (rest.find(": "), rest.find(". ")) if i > 0]
    gist = rest[: min(ends)] if ends else rest.rstrip(".")
    return _text(gist) + (f" ({_text(qualifier)})" if qualifier else "")


def hypotheses_bullet(doc: Mapping[str, Any]) -> str | None:
    hypotheses = doc["verdict"].get("hypotheses") or []
    if not hypotheses:
        return None
    gists = "".join(f"\n  - {hypothesis_gist(str(h))}" for h in hypotheses)
    return f"**Hypotheses** (no arm of this run isolates them; in full below):{gists}"


def _machine(facts: Mapping[str, str]) -> str:
    """"GPU (target), driver D, toolchain" from what is known of them."""
    text = escape(facts.get("gpu") or "a GPU")
    if facts.get("target"):
        text += f" ({escape(facts['target'])})"
    if facts.get("driver"):
        text += f", driver {escape(facts['driver'])}"
    if facts.get("toolchain"):
        text += f", {escape(facts['toolchain'])}"
    return text


def not_run_bullet(doc: Mapping[str, Any]) -> str | None:
    """What the reporter ran on that this run did not: GPU, target, driver."""
    reported = doc["case"].get("reported") or {}
    if not reported:
        return None
    gpu = doc["environment"]["gpu"]
    names = sorted({str(g.get("name")) for g in gpu.get("gpus") or []})
    here = {"gpu": ", ".join(names) or "no GPU", "target": str(doc["device"].get("target")),
            "driver": str(gpu.get("driver_version") or "–")}
    same = {"gpu": reported.get("gpu") in names,
            "target": reported.get("target") == here["target"],
            "driver": here["driver"].startswith(str(reported.get("driver")))}
    differs = [k for k in ("gpu", "target", "driver") if reported.get(k) and not same[k]]
    if not differs:
        return "**Not run:** nothing the reporter ran on: this run had their GPU, target and driver."
    line = (f"**Not run:** on what the report was filed from, {_machine(reported)}: this run "
            f"had {_machine(here)}.")
    if "target" in differs and reported.get("target"):
        command = f"nox -s {session_for(doc['case']['name'])} -- --arch {reported['target']}"
        line += f" {_code(command)} builds the as-filed artifacts for a rerun there."
    return line


def deeper_bullet(doc: Mapping[str, Any]) -> str | None:
    """A main-question run: the arms and claims beyond it, and the command that runs them."""
    deeper = doc["case"].get("deeper") or {}
    if not deeper.get("arms"):
        return None
    claims = deeper.get("claims") or []
    command = f"nox -s {session_for(doc['case']['name'])} -- --deep"
    return (f"**Beyond the main question:** this run answered the report's own questions; "
            f"{len(deeper['arms'])} more arm(s) ({', '.join(_code(a) for a in deeper['arms'])}) "
            f"would decide {len(claims)} more claim(s) of mechanism and detail"
            + (f" ({', '.join(_code(c) for c in claims)})" if claims else "")
            + f": {_code(command)} runs every arm, the main question's first.")


def partial_bullet(doc: Mapping[str, Any]) -> str | None:
    stopped = (doc.get("verdict") or {}).get("stopped")
    return f"**Partial result:** {_text(stopped)}" if stopped else None


def not_decided_bullet(doc: Mapping[str, Any]) -> str | None:
    # The confirmatory family's: an exploratory claim left undecided is listed with its family.
    undecided = [c["name"] for c in families.confirmatory(doc.get("claims") or [])
                 if c["decision"] == "not_decided"]
    if not undecided:
        return None
    return (f"**Not decided:** {', '.join(_code(n) for n in undecided)} (each says below how "
            f"much more exposure would decide it).")


def _rate_cell(s: Mapping[str, Any], coarse: int, trials: bool = False) -> str:
    if s["n_valid"] == 0:
        return "–"
    if trials:  # a case that checks its output: the share of failing trials
        prop = s["proportion"]
        return f"{plain(prop['estimate'])} {_ci(prop['ci95'])}"
    if s["exposure"]["total"] <= 0 or coarse:
        prop = s["proportion"]
        why = "coarse counter" if coarse else "no exposure"
        return f"– ({why}; {plain(prop['estimate'])} of trials {_ci(prop['ci95'])})"
    rate = s["exposure"]["rate"]
    return f"{plain(rate['estimate'])} {_ci(rate['ci95'])}"


def _ci(ci: list[float | None] | None) -> str:
    if not ci:
        return fmt_ci(ci)
    lo, hi = ci
    return f"[{plain(lo)}, {plain(hi) if hi is not None else '∞'}]"


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
    per = case["exposure"]["per"]
    summary = doc["summary"]
    if not any(s["n_valid"] for s in summary.values()):
        outcomes: Counter[str] = Counter()
        for s in summary.values():
            outcomes.update(s["outcomes"])
        what = ", ".join(f"{n} {escape(k)}" for k, n in sorted(outcomes.items()))
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
        ratio = ([f"{plain(rr.get('estimate'))} {_ci(rr.get('ci95'))}", fmt_p(rr.get('p_value'))]
                 if meaningful else (["(baseline)", "–"] if arm == case["baseline"] else ["–", "–"]))
        valid = f"{s['failures']} / {s['n_valid']}" if s["n_valid"] else (
            "no valid trial (" + escape(", ".join(f"{k} {v}" for k, v in s["outcomes"].items())) + ")")
        rows.append([_code(arm), valid, _rate_cell(s, coarse[arm], per_trial(doc)), *ratio])
    rate_head = ("share of failing trials (95% CI)" if per_trial(doc)
                 else f"failures per {escape(per_label(per))} {escape(exposure_unit(doc))} (95% CI)")
    lines = table(["arm", "failed / valid", rate_head,
                   f"rate ratio vs {_code(case['baseline'])} (95% CI)", "p"], rows)
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
            return [f"No crash recorded; the most frequent CUDA error: {_code(top)} ({n} trials)."]
        return ["No crash recorded."]
    top = sites[0]
    crashes = sum(b["count"] for b in sites)
    fault = (top.get("fault_in") or {}).get("module")
    arms = ", ".join(f"{_code(a)} {n}" for a, n in sorted(top["arms"].items()))
    # The signature is the crash record's, which a driver writes: a fence it cannot close.
    out = [*fence(" ".join(str(top["signature"]).splitlines())),
           f"{top['count']} of {crashes} crashes ({arms})"
           + (f"; signal code {escape(top['code_name'])}" if top.get("code_name") else "")
           + (f"; faulting address in {escape(fault)}" if fault else "")
           + (f"; {len(sites) - 1} other site(s) in the details below" if len(sites) > 1 else "")
           + "."]
    return out


def has_plot(doc: Mapping[str, Any]) -> bool:
    """Whether `report` draws a plot for this document (the same condition as report.plot)."""
    curves = [a for a, s in doc["summary"].items() if (s.get("time_to_failure") or {}).get("exposure")]
    return bool(curves) and any(s["failures"] for s in doc["summary"].values())


def act_on(doc: Mapping[str, Any], extra: Sequence[str] = ()) -> list[str]:
    """The bullets a maintainer acts on, in order; ``extra`` (the toolchain matrix's line) goes
    after the hypotheses."""
    bullets = [partial_bullet(doc), owner_bullet(doc), workaround_bullet(doc),
               hypotheses_bullet(doc), *extra, not_run_bullet(doc), deeper_bullet(doc),
               not_decided_bullet(doc)]
    return [f"- {b}" for b in bullets if b]


def _attachable(picture: Path) -> bool:
    """A picture to attach: there, and not empty (a report cut short leaves none, but a copy
    may)."""
    return picture.is_file() and picture.stat().st_size > 0


def attachments(doc: Mapping[str, Any], path: Path) -> str:
    stem = path.with_suffix("")
    attach = [f"{_code(path.name)} (the result document; {_code('gpurepro report ' + path.name)} "
              f"regenerates the full report from it)"]
    if _attachable(path.parent / f"{stem.name}.forest.png"):
        attach.append(f"{_code(stem.name + '.forest.png')} (failure rate per arm against the "
                      f"baseline, with each claim's decision)")
    if _attachable(path.parent / f"{stem.name}.forest-per-gpu.png"):
        attach.append(f"{_code(stem.name + '.forest-per-gpu.png')} (the same, one panel per GPU)")
    if has_plot(doc):
        attach.append(f"{_code(stem.name + '.png')} (Kaplan–Meier survival per arm)")
    return "**Attachments:** " + " and ".join(attach) + "."


def how_it_ended(doc: Mapping[str, Any]) -> str:
    """How the run's trials came to an end: its design, or a stop before it."""
    completion = doc.get("completion") or {}
    if completion.get("complete") is False:
        return (f"stopped after {escape(completion['trials'])} of {escape(completion['planned'])} "
                f"planned trials, before its design ended it (a partial result).")
    if (doc["plan"].get("options") or {}).get("stopping"):
        return "stopped arm by arm once their claims were decided."
    return "a fixed number per arm."


def head(doc: Mapping[str, Any], path: Path, extra: Sequence[str] = (),
         url: str | None = None) -> str:
    case, verdict = doc["case"], doc["verdict"]
    sentences = verdict.get("sentences") or []
    out = [f"## gpurepro: {_code(case['name'])} — {escape(str(verdict['status']).replace('_', ' '))}", ""]
    if sentences:
        out += [f"> {_text(sentences[0])}", ""]
    out += [*act_on(doc, extra), ""]
    out += unit_note(doc)
    out += [environment_line(doc), ""]
    out += ["### Arms", ""]
    opts = doc["plan"].get("options") or {}
    out.append(f"{len(doc.get('trials') or [])} trials, shuffled (seed {escape(doc['plan']['seed'])}), "
               f"{escape(opts.get('jobs', 1))} at a time{' per array task and GPU' if doc.get('cluster') else ''}; "
               + how_it_ended(doc) + "\n")
    arms, left_out = arms_table(doc)
    out.append(arms)
    if left_out:
        out.append(f"({left_out} more arm(s) in the details below.)\n")
    out += wrong_head(doc) or ["### Crash signature", ""] + crash_signature(doc) + [""]
    out += rerun_section(doc, url)
    out += [attachments(doc, path), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- the details


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {_text(s)}" for s in items)


# Rows of the report's environment table the comment leaves out: they name this machine's
# device, not a condition of the run (the GPU's model, memory and driver are kept).
_ROWS_LEFT_OUT = ("GPU UUID / PCI",)
# Labels for the two Pythons the table lists: the trials' interpreter (the fingerprint's) and
# the build's (a toolchain tool).
_ROW_LABELS = {"Python": "Python (ran the trials)", "python": "python (built the artifacts)"}


def environment_table(doc: Mapping[str, Any]) -> list[str]:
    """The environment, toolchain and artifacts, less what only restates this machine."""
    rows = [(_ROW_LABELS.get(label, label), value) for label, value in environment_rows(doc)
            if label not in _ROWS_LEFT_OUT]
    gpus = len(doc["environment"]["gpu"].get("gpus") or [])
    variables = [(k, v) for k, v in sorted((doc["environment"].get("environment") or {}).items())
                 if gpus > 1 or not k.startswith("NCCL_")]  # NCCL matters across GPUs only
    env = table(["", ""], rows)
    if variables:
        env += ["", *table(["variable", "value"], [[_code(k), _code(v)] for k, v in variables])]
    env += ["", *table(["artifact", "sha256"],
                       [[_code(name), _code(a['sha256'])]
                        for name, a in sorted(doc["artifacts"].items())])]
    runtime = runtime_rows(doc)
    if runtime:
        env += ["", *table(["arm", "runtime packages requested", "resolved", "left to the node"],
                           runtime)]
    return env


def detail_blocks(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(summary, body) per <details> block, most useful first."""
    verdict = doc["verdict"]
    blocks: list[tuple[str, str]] = []
    if verdict.get("sentences"):
        blocks.append((f"Verdict in full ({len(verdict['sentences'])} sentences)",
                       _bullets(verdict["sentences"])))
    if doc.get("claims"):
        blocks.append((f"Claims ({families.decided_count(doc['claims'])})", claims_table(doc)))
    elif "claims" not in doc:
        blocks.append(("Claims", "This document was recorded before the harness decided claims."))
    if verdict.get("not_decided"):
        blocks.append((f"Not decided ({len(verdict['not_decided'])})", _bullets(verdict["not_decided"])))
    if verdict.get("exploratory"):
        blocks.append((f"Exploratory ({len(verdict['exploratory'])}; outside the family-wise "
                       f"error rate, no owner rests on them)", _bullets(verdict["exploratory"])))
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
                     [[b['count'], _code(b['signature']), escape((b.get('fault_in') or {}).get('module', '–')),
                       escape(", ".join(f"{a} {n}" for a, n in sorted(b["arms"].items())))] for b in sites])
        blocks.append((f"All crash sites ({len(sites)})", "\n".join(rows)))
    threads = threads_table(doc["trials"], doc["case"].get("failure_outcomes") or ("crashed",))
    if threads:
        blocks.append(("Threads at the crash (the driver call each worker was in, and whether it "
                       "was read at the fault)", "\n".join(threads)))
    python = python_frames_table(doc["trials"], doc["case"].get("failure_outcomes") or ("crashed",))
    if python:
        blocks.append(("Python frames at the crash (the faulting thread, most recent call first)",
                       "\n".join(python)))
    blocks.append(("Full environment, toolchain and artifacts", "\n".join(environment_table(doc))))
    for name, analysis in (doc.get("analyses") or {}).items():
        if isinstance(analysis, Mapping) and analysis.get("markdown"):
            blocks.append((f"Analysis: {name}", escape(analysis["markdown"], "markdown")))
    return blocks


def _details(summary: str, body: str) -> str:
    # The summary is inside an HTML block: entities, never Markdown escapes.
    return f"<details><summary>{escape(summary, 'html')}</summary>\n\n{body.rstrip()}\n\n</details>\n"


def _cut(body: str, room: int) -> str:
    """The body cut at a line boundary to at most ``room`` characters, fences closed."""
    cut = body[: max(room, 0)]
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    if sum(1 for line in cut.splitlines() if line.lstrip().startswith("```")) % 2:
        cut += "\n```"
    return cut


def issue_body(doc: Mapping[str, Any], path: Path, limit: int = LIMIT,
               extra_blocks: Sequence[tuple[str, str]] = (), extra_head: Sequence[str] = (),
               url: str | None = None) -> str:
    """The comment: the head (``extra_head``: lines for the maintainer's bullets, such as the
    toolchain matrix's), then the <details> blocks (``extra_blocks`` before the environment's)
    as far as ``limit`` allows. ``url``: the repository to clone (default: the project's,
    gpurepro.report.rerun.repository_url)."""
    if str(doc.get("schema", "")).startswith("gpurepro/bench"):
        raise IssueError(f"{path} is a benchmark document; `issue` takes a case result")
    for key in ("case", "verdict", "summary", "plan", "environment", "toolchain", "device"):
        if not isinstance(doc.get(key), Mapping):
            raise IssueError(f"{path} is not a gpurepro result document (no {key!r})")
    text = head(doc, path, extra_head, repository_url() if url is None else url)
    footer = (f"\n_Made by {_code('gpurepro issue ' + path.name)} "
              f"(gpurepro {escape(doc.get('gpurepro_version'))})._\n")
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
        text += (f"\n_Left out for length: {'; '.join(escape(s) for s in left)}. The attached JSON holds them "
                 f"(`gpurepro report` renders them)._\n")
    text += footer
    if len(text) > limit:  # a head too long on its own (it never is for committed documents)
        note = "\n\n_Cut at GitHub's comment limit; the attached JSON holds the rest._\n"
        text = _cut(text, limit - len(note) - 4) + note
    return text
